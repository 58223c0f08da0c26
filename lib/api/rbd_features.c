/*
 * rbd_features.c - the exported entry points of feature updates, object
 * map rebuild, sparsify and quiesce watchers: argument checks as librbd
 * 16.2's C API does them, then the work in ops/features.c,
 * ops/sparsify.c and image/quiesce.c.
 *
 * Threading: synchronous on the caller's thread (the quiesce callbacks run
 * on the image's quiesce thread, image/quiesce.h).  Nothing here keeps
 * state or calls another exported rbd_* function.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>

#include "api/entry.h"
#include "api/whole.h"
#include "api/journaled.h"
#include "core/internal.h"
#include "image/open.h"
#include "image/quiesce.h"
#include "image/state.h"
#include "ops/features.h"
#include "rbd/librbd.h"
#include "real.h"

/* ---- quiesce watchers ------------------------------------------------------ */

/*
 * rbd_quiesce_watch: register callbacks run when another client quiesces
 * the image before a snapshot.  librbd registers on any open and checks
 * nothing; a NULL handle is -EINVAL here (librbd would crash), a NULL
 * callback is simply not called.
 */
RBDL_API int rbd_quiesce_watch(rbd_image_t image,
			       rbd_update_callback_t quiesce_cb,
			       rbd_update_callback_t unquiesce_cb, void *arg,
			       uint64_t *handle)
{
	if (!handle && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_quiesce_watch, image, quiesce_cb, unquiesce_cb, arg,
		    handle);
	GET_IMAGE(img, image);
	if (!handle)
		return -EINVAL;
	return rbdl_quiesce_register(img, quiesce_cb, unquiesce_cb, arg,
				     handle);
}

/* rbd_quiesce_unwatch: -ENOENT for a handle not registered. */
RBDL_API int rbd_quiesce_unwatch(rbd_image_t image, uint64_t handle)
{
	RBDL_ON_WHOLE(rbd_quiesce_unwatch, image, handle);
	GET_IMAGE(img, image);
	return rbdl_quiesce_unregister(img, handle);
}

/*
 * rbd_quiesce_complete: answer one quiesce callback with r (negative: the
 * quiesce failed).  Without a quiesce in progress librbd aborts; here the
 * call is ignored with a diagnostic.
 */
RBDL_API void rbd_quiesce_complete(rbd_image_t image, uint64_t handle, int r)
{
	RBDL_ON_WHOLE_VOID(rbd_quiesce_complete, image, handle, r);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img) {
		rbdl_log("rbd_quiesce_complete: invalid image handle");
		return;
	}
	rbdl_quiesce_complete(img, handle, r);
}

/* ---- feature updates, object map, sparsify ------------------------------- */

/*
 * rbd_update_features: enable (enabled != 0) or disable the features in
 * features, with librbd 16.2's rules (ops/features.c).  Journaling is
 * switched by the system's librbd (-EOPNOTSUPP without one), and so is
 * every feature of a journaled image (journaled.h): librbdlite writes no
 * journal.
 */
RBDL_API int rbd_update_features(rbd_image_t image, uint64_t features,
				 uint8_t enabled)
{
	RBDL_ON_WHOLE(rbd_update_features, image, features, enabled);
	bool need_real = false;
	int r;

	GET_IMAGE(img, image);
	/* journaled (on or off now): the real handle's, journaled as ops */
	RBDL_ON_JOURNAL(rbd_update_features, img, features, enabled);
	r = rbdl_update_features(img, features, enabled != 0, &need_real);
	if (!need_real)
		return r;
	/* journaling: on a short-lived real handle, the lock handed over */
	RBDL_FORWARD_IMAGE(rbd_update_features, image, features, enabled);
}

/* rbd_rebuild_object_map: rebuild HEAD's and every snapshot's object map
 * from the data objects; cb (may be NULL) reports progress. */
RBDL_API int rbd_rebuild_object_map(rbd_image_t image, librbd_progress_fn_t cb,
				    void *cbdata)
{
	RBDL_ON_WHOLE(rbd_rebuild_object_map, image, RBDL_REAL_PROGRESS(cb),
		    cbdata);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_rebuild_object_map, img, RBDL_REAL_PROGRESS(cb),
			cbdata);
	return rbdl_rebuild_object_map(img, cb, cbdata);
}

/* rbd_sparsify: turn zeroed runs of sparse_size (a power of two, at least
 * 4096) into holes. */
RBDL_API int rbd_sparsify(rbd_image_t image, size_t sparse_size)
{
	RBDL_ON_WHOLE(rbd_sparsify, image, sparse_size);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_sparsify, img, sparse_size);
	return rbdl_sparsify(img, sparse_size, NULL, NULL);
}

/* rbd_sparsify_with_progress: rbd_sparsify with a progress callback. */
RBDL_API int rbd_sparsify_with_progress(rbd_image_t image, size_t sparse_size,
					librbd_progress_fn_t cb, void *cbdata)
{
	RBDL_ON_WHOLE(rbd_sparsify_with_progress, image, sparse_size,
		    RBDL_REAL_PROGRESS(cb), cbdata);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_sparsify_with_progress, img, sparse_size,
			RBDL_REAL_PROGRESS(cb),
			cbdata);
	return rbdl_sparsify(img, sparse_size, cb, cbdata);
}
