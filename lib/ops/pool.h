/*
 * pool.h - pool-level image operations: create (create.c), remove
 * (remove.c), list and namespace lookup (list.c).
 *
 * Threading: synchronous and self-contained; any number of threads.
 * Each int function returns 0 (or a count where said) or a negative errno
 * exactly where librbd 16.2 gives one; the errnos are listed at the
 * entry points (api/rbd_pool.c).
 */
#ifndef RBDL_OPS_POOL_H
#define RBDL_OPS_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>

#include "ops/options.h"
#include "proto/cls_rbd.h"

/* rbd_create4: create from an option set; RBD_IMAGE_OPTION_ORDER is
 * written back once the order was validated. */
int rbdl_op_create(rados_ioctx_t io, const char *name, uint64_t size,
		   struct rbdl_opts *opts);
/* Create with *order as RBD_IMAGE_OPTION_ORDER (0: the default) and store
 * the order used back into *order; consumes (clears) o. */
int rbdl_op_create_order(rados_ioctx_t io, const char *name, uint64_t size,
			 struct rbdl_opts *o, int *order);
/* librbd::create(io, name, size, old_format = false, features, order,
 * stripe_unit, stripe_count): explicit format 2, features and layout. */
int rbdl_op_create_explicit(rados_ioctx_t io, const char *name, uint64_t size,
			    uint64_t features, int *order, uint64_t su,
			    uint64_t sc);

/* rbd_remove of image name (io and name checked by the caller). */
int rbdl_op_remove(rados_ioctx_t io, const char *name);

/* Images found by a listing, in listing order (strings malloc'ed). */
struct rbdl_img_list {
	struct rbdl_dir_entry *v;
	size_t n, cap;
};
/* api::Image::list_images into *l (zeroed by the caller; free with
 * rbdl_img_list_free, also after a failure). */
int rbdl_op_list(rados_ioctx_t io, struct rbdl_img_list *l);
/* One format-2 listing (trash: entries of interrupted removals only). */
int rbdl_list_dir(rados_ioctx_t io, bool trash, struct rbdl_img_list *l);
void rbdl_img_list_free(struct rbdl_img_list *l);

/* Namespace::exists (the ioctx's own namespace does not matter). */
int rbdl_op_namespace_exists(rados_ioctx_t io, const char *namespace_name,
			     bool *exists);

#endif /* RBDL_OPS_POOL_H */
