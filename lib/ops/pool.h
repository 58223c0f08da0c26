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

/*
 * rbd_create4: create from an option set; RBD_IMAGE_OPTION_ORDER is
 * written back once the order was validated.  An image librbdlite cannot
 * make (journaling, a mirror image mode) is -EOPNOTSUPP; with need_real
 * not NULL, *need_real is then set (the system's librbd can make it) and
 * nothing is logged.
 */
int rbdl_op_create(rados_ioctx_t io, const char *name, uint64_t size,
		   struct rbdl_opts *opts, bool *need_real);
/* Create with *order as RBD_IMAGE_OPTION_ORDER (0: the default) and store
 * the order used back into *order; consumes (clears) o. */
int rbdl_op_create_order(rados_ioctx_t io, const char *name, uint64_t size,
			 struct rbdl_opts *o, int *order, bool *need_real);
/* librbd::create(io, name, size, old_format = false, features, order,
 * stripe_unit, stripe_count): explicit format 2, features and layout. */
int rbdl_op_create_explicit(rados_ioctx_t io, const char *name, uint64_t size,
			    uint64_t features, int *order, uint64_t su,
			    uint64_t sc, bool *need_real);

struct rbdl_conf;
/* A new image id (util::generate_image_id), NUL-terminated in id. */
void rbdl_op_generate_id(rados_ioctx_t io, char *id, size_t cap);
/* image::CreateRequest alone, as CloneRequest runs it: the caller's id
 * and configuration (cf: with io's pool overrides); io is used as is.
 * need_real as rbd_create4's (NULL: -EOPNOTSUPP logged). */
int rbdl_op_create_request(rados_ioctx_t io, const char *name, const char *id,
			   uint64_t size, const struct rbdl_opts *opts,
			   const struct rbdl_conf *cf, bool *need_real);

/* rbd_remove of image name (io and name checked by the caller). */
int rbdl_op_remove(rados_ioctx_t io, const char *name);
/* rbd_remove_with_progress: fn(object, object count, arg) once per data
 * object of the trim, in order; its negative return ends the removal
 * with that value (the image stays, partly trimmed, as librbd's).  A
 * journaled or mirrored image is -EOPNOTSUPP before anything is deleted
 * (librbd's removal cleans up their journal and mirroring state); with
 * need_real not NULL, *need_real is then set and nothing is logged. */
int rbdl_op_remove_prog(rados_ioctx_t io, const char *name,
			int (*fn)(uint64_t, uint64_t, void *), void *arg,
			bool *need_real);

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
/* The same with every entry (trash: all of rbd_trash). */
int rbdl_list_dir_all(rados_ioctx_t io, bool trash, struct rbdl_img_list *l);
void rbdl_img_list_free(struct rbdl_img_list *l);

/* Namespace::exists (the ioctx's own namespace does not matter). */
int rbdl_op_namespace_exists(rados_ioctx_t io, const char *namespace_name,
			     bool *exists);

#endif /* RBDL_OPS_POOL_H */
