/*
 * refresh.h - keeping an open image's metadata current (refresh.c).
 *
 * Threading: rbdl_image_refresh_due is the data path's check (two atomic
 * loads when nothing changed; a due refresh queues the request, see
 * io/request.c); rbdl_image_maybe_refresh refreshes synchronously, for
 * control calls and the refresh task, serialized by refresh_lock.
 */
#ifndef RBDL_IMAGE_REFRESH_H
#define RBDL_IMAGE_REFRESH_H

#include <stdbool.h>

#include "state.h"

#include <errno.h>

/* Bring metadata up to date if a header notification arrived (or the
 * watch broke).  0 or a negative errno (the image keeps its old view). */
int rbdl_image_refresh_slow(struct rbdl_image *img);

/* Is a refresh due?  The data path's check (see maybe_refresh). */
static inline bool rbdl_image_refresh_due(struct rbdl_image *img)
{
	return atomic_load_explicit(&img->refresh_seq, memory_order_acquire) !=
	       atomic_load_explicit(&img->applied_seq, memory_order_relaxed);
}

static inline int rbdl_image_maybe_refresh(struct rbdl_image *img);

/* Is the view a snapshot that is gone (state.h: snap_gone)? */
static inline bool rbdl_image_snap_gone(struct rbdl_image *img)
{
	return atomic_load_explicit(&img->snap_gone, memory_order_relaxed) &&
	       atomic_load_explicit(&img->at_snap, memory_order_relaxed);
}

/* rbdl_image_maybe_refresh, then -ENOENT if the view's snapshot is gone:
 * what librbd's queries of the view answer then. */
static inline int rbdl_image_refresh_view(struct rbdl_image *img)
{
	int r = rbdl_image_maybe_refresh(img);

	return r < 0 ? r : rbdl_image_snap_gone(img) ? -ENOENT : 0;
}

static inline int rbdl_image_maybe_refresh(struct rbdl_image *img)
{
	/* Acquire: pairs with the watch callback's release increment; the
	 * relaxed load of applied_seq is ordered by refresh_lock for the
	 * refresher and only compared here. */
	if (__builtin_expect(
		    atomic_load_explicit(&img->refresh_seq,
					 memory_order_acquire) ==
			    atomic_load_explicit(&img->applied_seq,
						 memory_order_relaxed),
		    1))
		return 0;
	return rbdl_image_refresh_slow(img);
}

/*
 * librbd 16.2 (ImageCtx::apply_metadata, run at open and every refresh):
 * the discard granularity from rbd_skip_partial_discard and
 * rbd_discard_granularity_bytes, with their pool and image overrides; at
 * open, a one-line notice if a QoS limit is set (not enforced here).
 */
void rbdl_image_apply_settings(struct rbdl_image *img, bool at_open);

#endif /* RBDL_IMAGE_REFRESH_H */
