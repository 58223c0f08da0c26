/*
 * open.h - a user's open image: rbd_open, rbd_close, rbd_snap_set
 * (open.c).
 *
 * Threading: synchronous on the caller's thread.  Each function returns 0
 * or a negative errno.
 */
#ifndef RBDL_IMAGE_OPEN_H
#define RBDL_IMAGE_OPEN_H

#include <stdbool.h>

#include "state.h"

/* Open; on success *out is a new handle. */
int rbdl_image_open(rados_ioctx_t io, const char *name, const char *id,
		    const char *snap_name, bool read_only,
		    struct rbdl_handle **out);

/* Close: waits for in-flight I/O, releases the lock, unwatches, frees.
 * The handle is marked closed and stays allocated.  -EINVAL if it was
 * closed already. */
int rbdl_image_close(struct rbdl_handle *h);

/*
 * A handle for an image the system's librbd serves whole (api/whole.h):
 * registered like any other, with magic RBDL_HANDLE_WHOLE.  -ENOMEM.
 * rbdl_handle_close_whole marks it closed and returns its whole, or NULL
 * if it was not an open one (closed already: only one closer wins).
 */
int rbdl_handle_make_whole(struct rbdl_whole *w, struct rbdl_handle **out);
struct rbdl_whole *rbdl_handle_close_whole(struct rbdl_handle *h);

/*
 * Whether p is a handle rbd_open*() made (open or closed), by address: no
 * memory behind p is read.  The delegation (api/real.c) tells librbdlite's
 * handles from the real librbd's with it.
 */
bool rbdl_image_handle_known(const void *p);

/*
 * rbd_snap_set: switch the read view to snapshot snap_name (NULL: back to
 * HEAD).  In-flight I/O is drained first (caller holds maint_mu).  At a
 * snapshot, writes fail with -EROFS and the size is the snapshot's; the
 * exclusive lock is released as librbd does.  Back at HEAD a non-read-only
 * open is writable again (an image opened at a snapshot gets its write
 * context, header watch and lock machinery now).  -ENOENT: no such user
 * snapshot.
 */
int rbdl_image_set_snap(struct rbdl_image *img, const char *snap_name);

#endif /* RBDL_IMAGE_OPEN_H */
