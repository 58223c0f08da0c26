/*
 * maint.h - image maintenance: resize, snapshot create / remove /
 * rollback, switching the read view (rbd_snap_set), and metadata_set.
 *
 * Role: the librbd 16.2 operations (operation/ResizeRequest + TrimRequest,
 * SnapshotCreateRequest, SnapshotRemoveRequest, SnapshotRollbackRequest and
 * their object_map counterparts) over cls "rbd" and librados, so images
 * changed by librbdlite stay exactly what librbd, krbd and `rbd` expect:
 * object map, fast-diff flags, snapshot object maps and the OSD snapshot
 * context.
 *
 * Threading: each entry point is synchronous and runs on the caller's
 * thread.  Operations on one image are serialized by img->maint_mu.  On an
 * image with the exclusive-lock feature an operation holds the lock in the
 * MAINT state (lock.h) for its whole duration: in-flight writes are drained
 * first and new writes wait; other images' and other clients' work is
 * unaffected.  Without the feature, the caller's in-flight I/O is flushed
 * first (librbd blocks writes for the same purpose).  After a change the
 * header watchers are notified (HEADER_UPDATE) and our own image refreshes
 * before the call returns, so every write submitted afterwards carries the
 * new snapshot context and sees the new size.
 *
 * Each function returns 0 or a negative errno, with librbd's errnos.
 */
#ifndef RBDL_MAINT_H
#define RBDL_MAINT_H

#include <stdbool.h>
#include <stdint.h>

#include <rados/librados.h>

struct rbdl_image;

int rbdl_maint_resize(struct rbdl_image *img, uint64_t size);
/* rbd_resize2: allow_shrink false refuses a shrink (-EINVAL); cb (may be
 * NULL) is called once per object the trim goes through, as librbd's
 * TrimRequest reports progress; its negative return ends the trim with
 * that value (the size is kept). */
int rbdl_maint_resize2(struct rbdl_image *img, uint64_t size,
		       bool allow_shrink,
		       int (*cb)(uint64_t, uint64_t, void *), void *arg);
int rbdl_maint_snap_create(struct rbdl_image *img, const char *name);
int rbdl_maint_snap_remove(struct rbdl_image *img, const char *name);
int rbdl_maint_snap_rollback(struct rbdl_image *img, const char *name);
int rbdl_maint_snap_set(struct rbdl_image *img, const char *name);
/* rbd_metadata_set: validated like librbd ("conf_" keys), written as lock
 * owner, HEADER_UPDATE sent.  -EROFS on read-only and snapshot opens. */
int rbdl_maint_metadata_set(struct rbdl_image *img, const char *key,
			    const char *value);

/* A progress callback: librbd_progress_fn_t (offset, total, arg). */
typedef int (*rbdl_progress_fn)(uint64_t offset, uint64_t total, void *arg);
/* rbd_snap_create2: flags are RBD_SNAP_CREATE_* (-EINVAL for others);
 * unless told to skip, the watchers are asked to quiesce first (cb, if
 * not NULL, is called after each QUIESCE attempt: attempt, attempts). */
int rbdl_maint_snap_create2(struct rbdl_image *img, const char *name,
			    uint32_t flags, rbdl_progress_fn cb, void *arg);
/* Remove snapshot snap_id of any namespace (rbd_snap_remove_by_id). */
int rbdl_maint_snap_remove_id(struct rbdl_image *img, uint64_t snap_id);
/* rbd_snap_rollback_with_progress: cb (if not NULL) after each object
 * (objno, objects); a negative return stops and is the result. */
int rbdl_maint_snap_rollback2(struct rbdl_image *img, const char *name,
			      rbdl_progress_fn cb, void *arg);

/*
 * DetachChildRequest's clone v2 epilogue: if snapshot psnap of parent image
 * pid (in pio) sits in the trash namespace without children, remove it, as
 * its owner would.  Best effort, as in librbd: a failure is logged.
 */
void rbdl_maint_remove_trashed_parent_snap(rados_ioctx_t pio, const char *pid,
					   uint64_t psnap);

/*
 * PreRemoveRequest's pruning: remove the n trash-namespace snapshots ids
 * of image id (in io) before the image goes.  0, -ECHILD if a clone v2
 * child still holds one (the others are removed), or the first other
 * error.
 */
int rbdl_maint_prune_trash_snaps(rados_ioctx_t io, const char *id,
				 const uint64_t *ids, uint32_t n);

#endif /* RBDL_MAINT_H */
