/*
 * clone.h - layering operations: making a clone (clone.c), listing a
 * parent's children and descendants (clone.c) and flattening a clone
 * (flatten.c), as librbd 16.2 does them.
 *
 * Threading: every function is synchronous and runs on the caller's
 * thread; the pool-level ones are self-contained (their own I/O
 * contexts), the image-level ones take the image's maintenance path
 * (maint_int.h) where they change it.  Each int function returns 0 (or a
 * count where said) or a negative errno exactly where librbd gives one.
 */
#ifndef RBDL_OPS_CLONE_H
#define RBDL_OPS_CLONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>

#include "ops/maint.h"		/* rbdl_progress_fn */
#include "ops/options.h"

struct rbdl_image;

/*
 * librbd::clone(p_ioctx, p_name, p_snap_name, c_ioctx, c_name, c_opts):
 * CloneRequest (validate options, open the parent snapshot, create the
 * child with CreateRequest, attach parent and child, copy the parent's
 * metadata; a failed step after the creation removes the child).  opts is
 * not changed (librbd works on a copy).  A child with journaling or a
 * mirror image mode is not made here: -EOPNOTSUPP before anything is
 * created, with *need_real set (the system's librbd makes it).
 */
int rbdl_op_clone(rados_ioctx_t p_io, const char *p_name, const char *p_snap,
		  rados_ioctx_t c_io, const char *c_name,
		  const struct rbdl_opts *opts, bool *need_real);

/* The same from parent image p_id of p_io (its pool and namespace) at
 * snapshot p_snap_id of any namespace, as deep copy's CloneRequest makes
 * a clone of a clone's parent (the flatten option is not looked at). */
int rbdl_op_clone_id(rados_ioctx_t p_io, const char *p_id, uint64_t p_snap_id,
		     rados_ioctx_t c_io, const char *c_name,
		     const struct rbdl_opts *opts);

/* deep_copy::MetadataCopyRequest: every image metadata key of header
 * soid (in sio) set on header doid (in dio), 128 keys at a time. */
int rbdl_op_copy_metadata(rados_ioctx_t sio, const char *soid,
			  rados_ioctx_t dio, const char *doid);

/* One image of a children / descendants listing (linked_image_spec_t);
 * strings malloc'ed. */
struct rbdl_child {
	int64_t pool_id;
	char *pool_name;
	char *pool_namespace;
	char *image_id;
	char *image_name;
	bool trash;
};
struct rbdl_child_list {
	struct rbdl_child *v;
	size_t n, cap;
};
void rbdl_child_list_free(struct rbdl_child_list *l);

/* The direct children (clone v1 and v2, trashed ones included) of
 * snapshot snap_id of img, as rbdl_op_list_descendants lists them. */
int rbdl_op_list_snap_children(struct rbdl_image *img, uint64_t snap_id,
			       struct rbdl_child_list *l);

/*
 * api::Image::list_descendants of the open image (every snapshot at HEAD,
 * the open snapshot otherwise): clone v1 children from rbd_children of
 * every pool, v2 children from the parent's children_list, down
 * max_level generations (-1: no limit), names resolved from the
 * directories and trash of their pools, sorted by pool name, pool id,
 * namespace, image name and id.  *l zeroed by the caller; free it with
 * rbdl_child_list_free, also after a failure.
 */
int rbdl_op_list_descendants(struct rbdl_image *img, int max_level,
			     struct rbdl_child_list *l);

/*
 * Operations::flatten: copy every object the parent still backs up into
 * the clone (object map kept exact, as lock owner), then detach the
 * clone from its parent (v1 remove_child, v2 child_detach) and clear the
 * parent link.  Progress: (objects done, overlap objects) per object.
 * -EROFS (read-only, snapshot open), -EINVAL: no parent.
 */
int rbdl_op_flatten(struct rbdl_image *img, rbdl_progress_fn cb, void *arg);

/*
 * librbd's Image::flatten_children, the first step of rbd_snap_remove2
 * with RBD_SNAP_REMOVE_FLATTEN: open every child of user snapshot
 * snap_name (none if there is no such snapshot) by id, refuse (-EBUSY) a
 * child without deep-flatten that has snapshots, flatten it, close it,
 * and report cb(children done, children) after each (its return value is
 * ignored, as by librbd).  Stops at the first error.
 */
int rbdl_op_flatten_children(struct rbdl_image *img, const char *snap_name,
			     rbdl_progress_fn cb, void *arg);

#endif /* RBDL_OPS_CLONE_H */
