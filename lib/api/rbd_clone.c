/*
 * rbd_clone.c - the exported layering entry points: rbd_clone,
 * rbd_clone2, rbd_clone3, rbd_flatten, rbd_flatten_with_progress and the
 * children listings (rbd_list_children, _children2, _children3,
 * rbd_list_descendants and their cleanups).  Each checks its arguments as
 * librbd 16.2 does (NULL pointers librbd would dereference give -EINVAL
 * here) and hands off to ops/clone.h.
 *
 * Threading: synchronous, any thread.  Ownership: strings handed out in
 * the listings are malloc'ed and belong to the caller (freed by the
 * matching cleanup).  Nothing here calls another exported rbd_* function.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/entry.h"
#include "api/whole.h"
#include "api/journaled.h"
#include "core/internal.h"
#include "image/refresh.h"
#include "image/state.h"
#include "ops/clone.h"
#include "ops/copy.h"
#include "ops/options.h"

#include "rbd/librbd.h"

/* ---- clones ------------------------------------------------------------------ */

/* librbd::clone(..., features, c_order, stripe_unit, stripe_count): the
 * options FEATURES, ORDER (*c_order), STRIPE_UNIT and STRIPE_COUNT set
 * explicitly (0 selects the configured default, not the parent's), and
 * *c_order left as it was given. */
static int clone_legacy(rados_ioctx_t p_io, const char *p_name,
			const char *p_snap, rados_ioctx_t c_io,
			const char *c_name, uint64_t features, int *c_order,
			uint64_t su, uint64_t sc, bool *need_real)
{
	struct rbdl_opts o;
	int r;

	if (!c_order)
		return -EINVAL;
	rbdl_opts_init(&o);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_FEATURES, features);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_ORDER,
			  (uint64_t)(int64_t)*c_order);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_UNIT, su);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_COUNT, sc);
	r = rbdl_op_clone(p_io, p_name, p_snap, c_io, c_name, &o, need_real);
	rbdl_opts_clear(&o);
	return r;
}

/*
 * Clone p_name@p_snapname into c_name (in c_ioctx's pool and namespace)
 * with the given features and order (*c_order 0: rbd_default_order) and
 * the default striping.  Errors: -EINVAL (NULL snapshot or argument,
 * clone v1 of an unprotected snapshot), -ENOENT (no such parent or
 * snapshot), -ENOSYS (no layering in the parent or in features, unknown
 * feature bits), -EEXIST (c_name taken), -EXDEV (clone v1 into another
 * namespace), the CreateRequest errnos of rbd_create4.  A child with
 * journaling is made by the system's librbd, as rbd_create4 makes such an
 * image (-EOPNOTSUPP without one).
 */
RBDL_API int rbd_clone(rados_ioctx_t p_ioctx, const char *p_name,
		       const char *p_snapname, rados_ioctx_t c_ioctx,
		       const char *c_name, uint64_t features, int *c_order)
{
	bool need_real = false;
	int r = clone_legacy(p_ioctx, p_name, p_snapname, c_ioctx, c_name,
			     features, c_order, 0, 0, &need_real);

	if (!need_real)
		return r;
	RBDL_FORWARD(rbd_clone, p_ioctx, p_name, p_snapname, c_ioctx, c_name,
		     features, c_order);
}

/* As rbd_clone with a stripe unit and count (0/0: the defaults). */
RBDL_API int rbd_clone2(rados_ioctx_t p_ioctx, const char *p_name,
			const char *p_snapname, rados_ioctx_t c_ioctx,
			const char *c_name, uint64_t features, int *c_order,
			uint64_t stripe_unit, int stripe_count)
{
	bool need_real = false;
	int r = clone_legacy(p_ioctx, p_name, p_snapname, c_ioctx, c_name,
			     features, c_order, stripe_unit,
			     (uint64_t)(int64_t)stripe_count, &need_real);

	if (!need_real)
		return r;
	RBDL_FORWARD(rbd_clone2, p_ioctx, p_name, p_snapname, c_ioctx, c_name,
		     features, c_order, stripe_unit, stripe_count);
}

/*
 * Clone with an option set: what is not set comes from the parent
 * (features, order, striping) or the configuration (data pool, clone
 * format).  RBD_IMAGE_OPTION_FLATTEN: -EINVAL; FORMAT 1: -EINVAL.  The
 * option set is not changed.  A child with journaling or a mirror image
 * mode is made by the system's librbd (-EOPNOTSUPP without one).
 */
RBDL_API int rbd_clone3(rados_ioctx_t p_ioctx, const char *p_name,
			const char *p_snapname, rados_ioctx_t c_ioctx,
			const char *c_name, rbd_image_options_t c_opts)
{
	bool need_real = false;
	int r;

	if (!c_opts)
		return -EINVAL;
	r = rbdl_op_clone(p_ioctx, p_name, p_snapname, c_ioctx, c_name, c_opts,
			  &need_real);
	if (!need_real)
		return r;
	RBDL_FORWARD_OPTS(rbd_clone3, c_opts, p_ioctx, p_name, p_snapname,
			  c_ioctx, c_name, real_opts_);
}

/* ---- flatten ------------------------------------------------------------------ */

/* Copy the parent's data into the clone and detach it.  -EROFS on a
 * read-only open, -EINVAL when the image has no parent, -EROFS on a
 * handle at a snapshot (librbd's order). */
RBDL_API int rbd_flatten(rbd_image_t image)
{
	RBDL_ON_WHOLE(rbd_flatten, image);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_flatten, img);
	return rbdl_op_flatten(img, NULL, NULL);
}

/* rbd_flatten reporting cb(object number, overlap objects, cbdata) for
 * each object; a negative return stops the flatten and is returned. */
RBDL_API int rbd_flatten_with_progress(rbd_image_t image,
				       librbd_progress_fn_t cb, void *cbdata)
{
	RBDL_ON_WHOLE(rbd_flatten_with_progress, image, RBDL_REAL_PROGRESS(cb),
		    cbdata);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_flatten_with_progress, img, RBDL_REAL_PROGRESS(cb),
			cbdata);
	return rbdl_op_flatten(img, cb, cbdata);
}

/* ---- children ------------------------------------------------------------------ */

static int list(struct rbdl_image *img, int level, struct rbdl_child_list *l)
{
	memset(l, 0, sizeof(*l));
	int r = rbdl_op_list_descendants(img, level, l);

	if (r < 0)
		rbdl_child_list_free(l);
	return r;
}

/*
 * The children (not in the trash) as two NUL-separated lists of pool and
 * image names, sorted by (pool, image) with duplicates merged.  Both
 * lengths are stored; -ERANGE when either buffer is too short.  Returns
 * the number of children.
 */
RBDL_API ssize_t rbd_list_children(rbd_image_t image, char *pools,
				   size_t *pools_len, char *images,
				   size_t *images_len)
{
	if (rbdl_whole_from_user(image) &&
	    (!pools_len || !images_len))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_list_children, image, pools, pools_len, images,
		    images_len);
	struct rbdl_child_list l;
	size_t ptotal = 0, itotal = 0, n = 0;
	char **pv, **iv;
	int r;

	GET_IMAGE(img, image);
	if (!pools_len || !images_len)
		return -EINVAL;
	r = list(img, 1, &l);
	if (r < 0)
		return r;
	/* std::set<pair<pool name, image name>>: sort and merge */
	pv = calloc(l.n ? l.n : 1, sizeof(*pv));
	iv = calloc(l.n ? l.n : 1, sizeof(*iv));
	if (!pv || !iv) {
		free(pv);
		free(iv);
		rbdl_child_list_free(&l);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l.n; i++) {
		size_t j;

		if (l.v[i].trash)
			continue;
		/* insertion into the sorted, unique array */
		for (j = 0; j < n; j++) {
			int c = strcmp(l.v[i].pool_name, pv[j]);

			if (!c)
				c = strcmp(l.v[i].image_name, iv[j]);
			if (c <= 0) {
				if (c == 0)
					j = SIZE_MAX;
				break;
			}
		}
		if (j == SIZE_MAX)
			continue;
		memmove(pv + j + 1, pv + j, (n - j) * sizeof(*pv));
		memmove(iv + j + 1, iv + j, (n - j) * sizeof(*iv));
		pv[j] = l.v[i].pool_name;
		iv[j] = l.v[i].image_name;
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		ptotal += strlen(pv[i]) + 1;
		itotal += strlen(iv[i]) + 1;
	}
	bool short_buf = ptotal > *pools_len || itotal > *images_len;

	*pools_len = ptotal;
	*images_len = itotal;
	if (short_buf || ((!pools || !images) && n)) {
		r = short_buf ? -ERANGE : -EINVAL;
	} else {
		char *pp = pools, *ip = images;

		for (size_t i = 0; i < n; i++) {
			size_t a = strlen(pv[i]) + 1, b = strlen(iv[i]) + 1;

			memcpy(pp, pv[i], a);
			memcpy(ip, iv[i], b);
			pp += a;
			ip += b;
		}
		r = (int)n;
	}
	free(pv);
	free(iv);
	rbdl_child_list_free(&l);
	return r;
}

/*
 * The children (trash ones flagged) in children[0..n), terminated by an
 * entry of NULL strings: -ERANGE with *max_children = n + 1 if it is too
 * small.  Returns n; free the strings with rbd_list_children_cleanup.
 */
RBDL_API int rbd_list_children2(rbd_image_t image, rbd_child_info_t *children,
				int *max_children)
{
	if (!max_children && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_list_children2, image, children, max_children);
	struct rbdl_child_list l;
	int r;

	GET_IMAGE(img, image);
	if (!max_children || (!children && *max_children > 0))
		return -EINVAL;
	if (*max_children > 0)
		memset(children, 0, sizeof(*children) * (size_t)*max_children);
	r = list(img, 1, &l);
	if (r < 0)
		return r;
	if (*max_children < (int)l.n + 1) {
		*max_children = (int)l.n + 1;
		rbdl_child_list_free(&l);
		return -ERANGE;
	}
	for (size_t i = 0; i < l.n; i++) {
		children[i].pool_name = l.v[i].pool_name;
		children[i].image_name = l.v[i].image_name;
		children[i].image_id = l.v[i].image_id;
		children[i].trash = l.v[i].trash;
		l.v[i].pool_name = l.v[i].image_name = l.v[i].image_id = NULL;
	}
	children[l.n].pool_name = NULL;
	children[l.n].image_name = NULL;
	children[l.n].image_id = NULL;
	r = (int)l.n;
	rbdl_child_list_free(&l);
	return r;
}

static void child_info_free(rbd_child_info_t *child)
{
	free((void *)child->pool_name);
	free((void *)child->image_name);
	free((void *)child->image_id);
}

/* Free the strings of one rbd_list_children2 entry. */
RBDL_API void rbd_list_child_cleanup(rbd_child_info_t *child)
{
	if (child)
		child_info_free(child);
}

/* Free the strings of num_children rbd_list_children2 entries. */
RBDL_API void rbd_list_children_cleanup(rbd_child_info_t *children,
					size_t num_children)
{
	if (!children)
		return;
	for (size_t i = 0; i < num_children; i++)
		child_info_free(&children[i]);
}

/* rbd_list_children3 / rbd_list_descendants: the listing into images. */
static int list_specs(rbd_image_t image, int level,
		      rbd_linked_image_spec_t *images, size_t *max_images)
{
	struct rbdl_child_list l;
	int r;

	GET_IMAGE(img, image);
	if (!max_images || (!images && *max_images > 0))
		return -EINVAL;
	/* Cleared first, as rbd_lock_get_owners' (python3-rbd cleans its
	 * whole array up after an error); not a count whose size would
	 * wrap, which no array has. */
	if (*max_images > 0 && *max_images <= SIZE_MAX / sizeof(*images))
		memset(images, 0, sizeof(*images) * *max_images);
	r = list(img, level, &l);
	if (r < 0)
		return r;
	if (*max_images < l.n) {
		*max_images = l.n;
		rbdl_child_list_free(&l);
		return -ERANGE;
	}
	*max_images = l.n;
	for (size_t i = 0; i < l.n; i++) {
		images[i].pool_id = l.v[i].pool_id;
		images[i].pool_name = l.v[i].pool_name;
		images[i].pool_namespace = l.v[i].pool_namespace;
		images[i].image_id = l.v[i].image_id;
		images[i].image_name = l.v[i].image_name;
		images[i].trash = l.v[i].trash;
		memset(&l.v[i], 0, sizeof(l.v[i]));
	}
	rbdl_child_list_free(&l);
	return 0;
}

/*
 * The children of the image (of every snapshot at HEAD, of the open
 * snapshot otherwise) in every pool and namespace, sorted by pool name,
 * namespace and image name: -ERANGE with *max_images = the count if it
 * is too small.  Free each entry with rbd_linked_image_spec_list_cleanup.
 */
RBDL_API int rbd_list_children3(rbd_image_t image,
				rbd_linked_image_spec_t *images,
				size_t *max_images)
{
	if (!max_images && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_list_children3, image, images, max_images);
	return list_specs(image, 1, images, max_images);
}

/* As rbd_list_children3 with the children's children, all generations. */
RBDL_API int rbd_list_descendants(rbd_image_t image,
				  rbd_linked_image_spec_t *images,
				  size_t *max_images)
{
	if (!max_images && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_list_descendants, image, images, max_images);
	return list_specs(image, -1, images, max_images);
}

/* ---- copies ------------------------------------------------------------------ */

/*
 * A copy whose destination has journaling or a mirror image mode
 * (rbdl_op_copy_dest_journaled): librbdlite does not make such an image,
 * so the system's librbd runs the whole copy, on a real handle of src at
 * src's view (-EOPNOTSUPP without one).  opts is filled in first as
 * librbd fills it (the flatten option of a deep copy consumed), so that
 * the caller sees what librbd's own copy leaves.
 */
static int copy_real(struct rbdl_image *src, rados_ioctx_t dest_io,
		     const char *destname, struct rbdl_opts *opts, bool deep,
		     size_t sparse, librbd_progress_fn_t cb, void *arg)
{
	__typeof__(&rbd_copy_with_progress4) copy_fn =
		RBDL_REAL_FN(rbd_copy_with_progress4);
	__typeof__(&rbd_deep_copy_with_progress) deep_fn =
		RBDL_REAL_FN(rbd_deep_copy_with_progress);
	rbd_image_options_t ropts;
	rbd_image_t h;
	uint64_t order;
	bool shared;
	int r;

	if (!copy_fn || !deep_fn)
		return -EOPNOTSUPP;
	r = rbdl_op_copy_opts(src, opts, deep, &order);
	if (r == 0)
		r = rbdl_real_opts_copy(opts, "rbd_copy", &ropts);
	if (r < 0)
		return r;
	if (deep)
		rbdl_opts_unset(opts, RBD_IMAGE_OPTION_FLATTEN);
	r = rbdl_real_image_get(src, deep ? "rbd_deep_copy" : "rbd_copy", &h,
				&shared);
	if (r == 0) {
		r = deep ? deep_fn(h, dest_io, destname, ropts,
				   RBDL_REAL_PROGRESS(cb), arg)
			 : copy_fn(h, dest_io, destname, ropts,
				   RBDL_REAL_PROGRESS(cb), arg, sparse);
		rbdl_real_image_put(src, h, shared);
	}
	rbdl_real_opts_free(ropts);
	return r;
}

/* librbd::copy(src, io, name, opts, prog_ctx, sparse_size); opts NULL: a
 * private empty option set (rbd_copy, rbd_copy_with_progress). */
static int copy_new(rbd_image_t image, rados_ioctx_t dest_io,
		    const char *destname, rbd_image_options_t opts,
		    size_t sparse, librbd_progress_fn_t cb, void *arg)
{
	struct rbdl_opts tmp, *o = opts;
	int r;

	GET_IMAGE(src, image);
	if (!dest_io || !destname)
		return -EINVAL;
	if (!o) {
		rbdl_opts_init(&tmp);
		o = &tmp;
	}
	r = rbdl_image_maybe_refresh(src);
	if (r == 0 && rbdl_op_copy_dest_journaled(src, o))
		r = copy_real(src, dest_io, destname, o, false, sparse, cb,
			      arg);
	else if (r == 0)
		r = rbdl_op_copy(src, dest_io, destname, o, sparse, cb, arg);
	if (o == &tmp)
		rbdl_opts_clear(&tmp);
	return r;
}

/* api::Image::deep_copy (ops/deepcopy.c); the options are required, as
 * librbd dereferences them. */
static int deep_copy(rbd_image_t image, rados_ioctx_t dest_io,
		     const char *destname, rbd_image_options_t opts,
		     librbd_progress_fn_t cb, void *arg)
{
	int r;

	GET_IMAGE(src, image);
	if (!dest_io || !destname || !opts)
		return -EINVAL;
	r = rbdl_image_maybe_refresh(src);
	if (r < 0)
		return r;
	if (rbdl_op_copy_dest_journaled(src, opts))
		return copy_real(src, dest_io, destname, opts, true, 0, cb,
				 arg);
	return rbdl_op_deep_copy(src, dest_io, destname,
				 (struct rbdl_opts *)opts, cb, arg);
}

/**
 * rbd_deep_copy: a new image destname in dest_io_ctx with the open image's
 * snapshots (user snapshots up to the open view: names, sizes, protection,
 * data), its view as HEAD and its image metadata; a clone stays a clone
 * of the same parent unless dest_opts has RBD_IMAGE_OPTION_FLATTEN
 * (consumed).  Unset options (format, features, order, striping) take
 * the source's and are set in dest_opts.  0, or -EINVAL (bad arguments,
 * format 1), -ENOSYS (unknown features), -EBUSY (migrating source),
 * -EEXIST, or the creation's and the copy's errnos; a copy that fails
 * after the creation leaves the new image behind, as librbd does.
 */
RBDL_API int rbd_deep_copy(rbd_image_t src, rados_ioctx_t dest_io_ctx,
			   const char *destname, rbd_image_options_t dest_opts)
{
	RBDL_ON_WHOLE_OPTS(rbd_deep_copy, src, dest_opts, dest_io_ctx,
		    destname, real_opts_);
	return deep_copy(src, dest_io_ctx, destname, dest_opts, NULL, NULL);
}

/**
 * rbd_deep_copy_with_progress: rbd_deep_copy, calling cb(n, objects,
 * cbdata) as librbd reports its object copies (objects: the destination's
 * object count for the source's largest size); cb's return is ignored.
 */
RBDL_API int rbd_deep_copy_with_progress(rbd_image_t image,
					 rados_ioctx_t dest_io_ctx,
					 const char *destname,
					 rbd_image_options_t dest_opts,
					 librbd_progress_fn_t cb, void *cbdata)
{
	RBDL_ON_WHOLE_OPTS(rbd_deep_copy_with_progress, image, dest_opts,
		    dest_io_ctx, destname, real_opts_, RBDL_REAL_PROGRESS(cb),
		    cbdata);
	return deep_copy(image, dest_io_ctx, destname, dest_opts, cb, cbdata);
}

/* The real handle for a copy's side: a whole handle's own, or a
 * short-lived one of our image (*ours set, rbdl_real_image_close). */
static int copy_side(rbd_image_t p, rbd_image_t *real, struct rbdl_image **ours)
{
	struct rbdl_whole *w = rbdl_whole_from_user(p);

	*ours = NULL;
	if (w) {
		*real = w->real;
		return 0;
	}
	*ours = rbdl_image_from_user(p);
	if (!*ours)
		return -EINVAL;
	return rbdl_real_image_open(*ours, "rbd_copy_with_progress2", real);
}

/* A copy with a side the system's librbd serves whole (api/whole.h): the
 * real librbd's copy, on a real handle of the other side too. */
static int copy_into_real(rbd_image_t srcp, rbd_image_t destp,
			  librbd_progress_fn_t cb, void *arg)
{
	__typeof__(&rbd_copy_with_progress2) real =
		RBDL_REAL_FN(rbd_copy_with_progress2);
	struct rbdl_image *s_img, *d_img;
	rbd_image_t s, d;
	int r;

	if (!real)
		return -EOPNOTSUPP;
	r = copy_side(srcp, &s, &s_img);
	if (r < 0)
		return r;
	r = copy_side(destp, &d, &d_img);
	if (r == 0) {
		r = real(s, d, RBDL_REAL_PROGRESS(cb), arg);
		if (d_img)
			rbdl_real_image_close(d_img, d);
	}
	if (s_img)
		rbdl_real_image_close(s_img, s);
	return r;
}

static int copy_into(rbd_image_t srcp, rbd_image_t destp,
		     librbd_progress_fn_t cb, void *arg)
{
	if (rbdl_whole_from_user(srcp) || rbdl_whole_from_user(destp))
		return copy_into_real(srcp, destp, cb, arg);
	GET_IMAGE(src, srcp);
	GET_IMAGE(dest, destp);
	return rbdl_op_copy_to(src, dest, 0, cb, arg);
}

/*
 * Copy the image's data (HEAD or the open snapshot, parent data
 * included) and metadata into a new image destname in dest_io_ctx, with
 * the source's features, order and striping.  Errors: rbd_create4's
 * (-EEXIST ...), read and write errors.
 */
RBDL_API int rbd_copy(rbd_image_t image, rados_ioctx_t dest_io_ctx,
		      const char *destname)
{
	RBDL_ON_WHOLE(rbd_copy, image, dest_io_ctx, destname);
	return copy_new(image, dest_io_ctx, destname, NULL, 0, NULL, NULL);
}

/* Copy into the open image dest (at least as large: else -EINVAL);
 * only the source's non-zero data is written. */
RBDL_API int rbd_copy2(rbd_image_t src, rbd_image_t dest)
{
	return copy_into(src, dest, NULL, NULL);
}

/* rbd_copy with creation options (FLATTEN, CLONE_FORMAT: -EINVAL); the
 * options left unset are filled in with the source's values. */
RBDL_API int rbd_copy3(rbd_image_t src, rados_ioctx_t dest_io_ctx,
		       const char *destname, rbd_image_options_t dest_opts)
{
	RBDL_ON_WHOLE_OPTS(rbd_copy3, src, dest_opts, dest_io_ctx, destname,
		    real_opts_);
	if (!dest_opts)
		return -EINVAL;
	return copy_new(src, dest_io_ctx, destname, dest_opts, 0, NULL, NULL);
}

/* rbd_copy3 writing runs of non-zero sparse_size chunks (0: the
 * destination's object size). */
RBDL_API int rbd_copy4(rbd_image_t src, rados_ioctx_t dest_io_ctx,
		       const char *destname, rbd_image_options_t dest_opts,
		       size_t sparse_size)
{
	RBDL_ON_WHOLE_OPTS(rbd_copy4, src, dest_opts, dest_io_ctx, destname,
		    real_opts_, sparse_size);
	if (!dest_opts)
		return -EINVAL;
	return copy_new(src, dest_io_ctx, destname, dest_opts, sparse_size,
			NULL, NULL);
}

/* rbd_copy reporting cb(offset, size, cbdata) per stripe period read and
 * (size, size) at the end; the callback's return value is ignored, as
 * librbd ignores it. */
RBDL_API int rbd_copy_with_progress(rbd_image_t image, rados_ioctx_t dest_p,
				    const char *destname,
				    librbd_progress_fn_t cb, void *cbdata)
{
	RBDL_ON_WHOLE(rbd_copy_with_progress, image, dest_p, destname,
		    RBDL_REAL_PROGRESS(cb), cbdata);
	return copy_new(image, dest_p, destname, NULL, 0, cb, cbdata);
}

/* rbd_copy2 with progress. */
RBDL_API int rbd_copy_with_progress2(rbd_image_t src, rbd_image_t dest,
				     librbd_progress_fn_t cb, void *cbdata)
{
	return copy_into(src, dest, cb, cbdata);
}

/* rbd_copy3 with progress. */
RBDL_API int rbd_copy_with_progress3(rbd_image_t image, rados_ioctx_t dest_p,
				     const char *destname,
				     rbd_image_options_t dest_opts,
				     librbd_progress_fn_t cb, void *cbdata)
{
	RBDL_ON_WHOLE_OPTS(rbd_copy_with_progress3, image, dest_opts, dest_p,
		    destname, real_opts_, RBDL_REAL_PROGRESS(cb), cbdata);
	if (!dest_opts)
		return -EINVAL;
	return copy_new(image, dest_p, destname, dest_opts, 0, cb, cbdata);
}

/* rbd_copy4 with progress. */
RBDL_API int rbd_copy_with_progress4(rbd_image_t image, rados_ioctx_t dest_p,
				     const char *destname,
				     rbd_image_options_t dest_opts,
				     librbd_progress_fn_t cb, void *cbdata,
				     size_t sparse_size)
{
	RBDL_ON_WHOLE_OPTS(rbd_copy_with_progress4, image, dest_opts, dest_p,
		    destname, real_opts_, RBDL_REAL_PROGRESS(cb), cbdata,
		    sparse_size);
	if (!dest_opts)
		return -EINVAL;
	return copy_new(image, dest_p, destname, dest_opts, sparse_size, cb,
			cbdata);
}
