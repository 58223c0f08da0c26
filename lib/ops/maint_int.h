/*
 * maint_int.h - private to the maintenance operations: maint.c (the
 * shared steps, metadata_set, snap_set), resize.c and snap.c are parts of
 * one sequence (begin, change the header and objects, notify, refresh,
 * end) and share these helpers.
 *
 * Threading: every function runs on the caller's thread; those taking an
 * image expect rbdl_maint_begin to have succeeded (maint_mu held, our
 * writes quiesced), except rbdl_maint_begin and rbdl_maint_lookup_snap.
 */
#ifndef RBDL_OPS_MAINT_INT_H
#define RBDL_OPS_MAINT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/state.h"
#include "proto/cls_rbd.h"
#include "window.h"

/*
 * Serialize, refresh, check the image may be changed, then quiesce our
 * writes: with the exclusive lock (need_lock), hold it with writes
 * drained (MAINT); without it, flush.  On success the caller must call
 * rbdl_maint_end().  -EROFS for read-only, snapshot and refused images.
 */
int rbdl_maint_begin(struct rbdl_image *img, bool need_lock);
enum {
	RBDL_MAINT_AT_SNAP = 1,		/* a handle at a snapshot may */
	RBDL_MAINT_TRY_LOCK = 2,	/* never ask the lock's owner */
};
int rbdl_maint_begin2(struct rbdl_image *img, bool need_lock, unsigned flags);
void rbdl_maint_end(struct rbdl_image *img);

/* A cls "rbd" write op on the header, guarded by our exclusive lock
 * (lock.assert_locked with our cookie) when we hold it. */
int rbdl_maint_hdr_write(struct rbdl_image *img, const char *method,
			 const void *in, size_t inlen);
/* HEADER_UPDATE to every watcher (a silent watcher is not an error). */
void rbdl_maint_notify(struct rbdl_image *img);
/* Refresh our own view now (size, snapshot context, write context) and
 * reload the HEAD object map if we changed it under the lock. */
int rbdl_maint_refresh(struct rbdl_image *img);
/* Id (and size, if size is not NULL) of the user snapshot called name,
 * with the header brought up to date first: 0, -EINVAL (NULL name),
 * -ENOENT or a read error. */
int rbdl_maint_lookup_snap(struct rbdl_image *img, const char *name,
			   uint64_t *id, uint64_t *size);
/* The user snapshot called name in the header's current snapshot context
 * (free *out with rbdl_snap_info_free): 0, -ENOENT or a read error. */
int rbdl_maint_find_snap(struct rbdl_image *img, const char *name,
			 struct rbdl_snap_info *out);
/* Resize the image (trim or grow, header and object map) with no
 * notification and no refresh: resize.c, shared with rollback. */
int rbdl_maint_do_resize(struct rbdl_image *img, uint64_t size);
/* The snapshot id right after snap_id (the next newer map), or NOSNAP. */
uint64_t rbdl_maint_next_snap(struct rbdl_image *img, uint64_t snap_id);
/* Could HEAD object objno exist (false only if a valid map says no)? */
bool rbdl_maint_may_exist(struct rbdl_image *img, uint64_t objno);

#endif /* RBDL_OPS_MAINT_INT_H */
