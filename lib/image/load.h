/*
 * load.h - building the state of an image from its header (load.c),
 * shared by the open of a user's image (open.h) and of a backing image
 * (parent.h).
 *
 * Threading: control path, synchronous; before the image is shared,
 * except where noted.  Each int function returns 0 or a negative errno.
 */
#ifndef RBDL_IMAGE_LOAD_H
#define RBDL_IMAGE_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/cls_rbd.h"
#include "state.h"

/* Incompatible features a reader understands.  dirty-cache: librbd 16.2
 * without a persistent-cache plugin opens such an image and reads RADOS;
 * librbdlite reads it the same way but refuses writes (write gate). */
#define RBDL_READ_SUPPORTED                                                  \
	(RBD_FEATURE_LAYERING | RBD_FEATURE_STRIPINGV2 |                     \
	 RBD_FEATURE_DATA_POOL | RBD_FEATURE_DIRTY_CACHE)

/* A zeroed image with its locks, counters and delivery set up; NULL with
 * *err set on failure.  Free with rbdl_image_free. */
struct rbdl_image *rbdl_image_alloc(bool read_only, int *err);

/*
 * Fill img from the header of the image name (or, with name NULL, id) in
 * io's pool and namespace: private I/O contexts, metadata, layout,
 * snapshot context, and the read view: the user snapshot snap_name, or
 * (snap_name NULL) snapshot snap_id, RBDL_NOSNAP for HEAD.  Sets size,
 * flags, features and the write gate.  -ENOENT (no such image or
 * snapshot), -EOPNOTSUPP (format 1), -ENOSYS (unsupported features),
 * -EBADMSG (a header librbdlite cannot use).
 */
int rbdl_image_load(struct rbdl_image *img, rados_ioctx_t io,
		    const char *name, const char *id, const char *snap_name,
		    uint64_t snap_id);

/* A copy of the image's snapshot ids as the last refresh saw them (newest
 * first; *n of them), taken under refresh_lock; malloc'ed, NULL when out
 * of memory. */
uint64_t *rbdl_image_snap_ids(struct rbdl_image *img, uint32_t *n);

/* Free what rbdl_image_alloc and rbdl_image_load set up. */
void rbdl_image_free(struct rbdl_image *img);

/* The user snapshot called name among snapshot ids[0..n) of header oid
 * (free *out with rbdl_snap_info_free).  -ENOENT if there is none. */
int rbdl_find_user_snap(rados_ioctx_t io, const char *oid, const uint64_t *ids,
			uint32_t n, const char *name, struct rbdl_snap_info *out);
/* Find a user snapshot by name: its id and size (refresh_lock held once
 * the image is shared).  -ENOENT if there is none. */
int rbdl_image_find_snap(struct rbdl_image *img, const char *snap_name,
			 uint64_t *snap_id, uint64_t *size);

/* Why writes must be refused with these features and nsnaps snapshots,
 * migration_dest telling whether the image is a migration's destination
 * (0 if they are fine: load.c), and the one-line diagnostic when a
 * feature is the reason (log it only when the gate refuses). */
int rbdl_image_write_gate(const struct rbdl_image *img, uint64_t features,
			  uint32_t nsnaps, bool migration_dest);
void rbdl_image_log_write_refusal(const struct rbdl_image *img,
				  uint64_t features);

/* A new ioctx on the image's data objects (data pool or metadata pool, in
 * the image's namespace), with no snapshot context and reading HEAD. */
int rbdl_image_data_ioctx(struct rbdl_image *img, rados_ioctx_t *out);
/* The same with the write snapshot context (seq, snaps[n]) set. */
int rbdl_image_write_ioctx(struct rbdl_image *img, uint64_t seq,
			   uint64_t *snaps, uint32_t n, rados_ioctx_t *out);

#endif /* RBDL_IMAGE_LOAD_H */
