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

#include <stdint.h>

struct rbdl_image;

int rbdl_maint_resize(struct rbdl_image *img, uint64_t size);
int rbdl_maint_snap_create(struct rbdl_image *img, const char *name);
int rbdl_maint_snap_remove(struct rbdl_image *img, const char *name);
int rbdl_maint_snap_rollback(struct rbdl_image *img, const char *name);
int rbdl_maint_snap_set(struct rbdl_image *img, const char *name);
/* rbd_metadata_set: validated like librbd ("conf_" keys), written as lock
 * owner, HEADER_UPDATE sent.  -EROFS on read-only and snapshot opens. */
int rbdl_maint_metadata_set(struct rbdl_image *img, const char *key,
			    const char *value);

#endif /* RBDL_MAINT_H */
