/*
 * features.h - rbd_update_features and rbd_rebuild_object_map
 * (features.c), rbd_sparsify (sparsify.c).
 *
 * Role: librbd 16.2's operation/EnableFeaturesRequest,
 * DisableFeaturesRequest, object_map/RebuildRequest and SparsifyRequest
 * over cls "rbd" and librados, run as lock owner with our writes drained
 * (maint.h); the open image's lock and object-map state follow the change.
 *
 * Threading: synchronous on the caller's thread, serialized with the other
 * maintenance operations by img->maint_mu.  Each returns 0 or a negative
 * errno (librbd's).  Progress callbacks are called as librbd calls them;
 * a negative return cancels the operation with -ECANCELED.
 */
#ifndef RBDL_OPS_FEATURES_H
#define RBDL_OPS_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rbdl_image;

#include "maint.h"	/* rbdl_progress_fn */

/* rbd_update_features: enable (enabled) or disable features.  -EROFS on
 * read-only and snapshot opens, -EINVAL as librbd (immutable features,
 * dependencies, already in that state), -EOPNOTSUPP for journaling (its
 * journal is not librbdlite's to create or replay), when *need_real is
 * set: the system's librbd can do it. */
int rbdl_update_features(struct rbdl_image *img, uint64_t features,
			 bool enabled, bool *need_real);
/* rbd_rebuild_object_map: the map of the opened view (HEAD, or the
 * snapshot the image is at), then its invalid flags cleared.  -EROFS on
 * read-only opens, -EINVAL without the object-map feature; cb may be
 * NULL. */
int rbdl_rebuild_object_map(struct rbdl_image *img, rbdl_progress_fn cb,
			    void *arg);
/* rbd_sparsify(_with_progress): -EINVAL unless sparse_size is a power of
 * two from 4096 to the object size, -EROFS on read-only and snapshot
 * opens; cb may be NULL. */
int rbdl_sparsify(struct rbdl_image *img, size_t sparse_size,
		  rbdl_progress_fn cb, void *arg);

#endif /* RBDL_OPS_FEATURES_H */
