/*
 * rbd_pool.c - the exported pool-level entry points: image options
 * (rbd_image_options_*), rbd_create*, rbd_remove, rbd_list, rbd_list2 and
 * rbd_namespace_exists.  Each validates its arguments as librbd 16.2 does
 * and hands off to ops/ (create.c, remove.c, list.c) or to the option set
 * (options.h).
 *
 * Threading: every call is synchronous and self-contained, and may run
 * concurrently from any number of threads.  Ownership: the caller keeps
 * its rados_ioctx_t (only read: pool, namespace, cluster handle).  An
 * rbd_image_options_t is a struct rbdl_opts owned by the caller between
 * rbd_image_options_create() and _destroy().  Nothing here calls another
 * exported rbd_* function (under LD_PRELOAD it could bind to the real
 * librbd).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ops/options.h"
#include "ops/pool.h"
#include "real.h"

#include "rbd/librbd.h"

/* ---- image options ------------------------------------------------------------ */

/* Allocate an empty option set into *opts (free with _destroy). */
RBDL_API void rbd_image_options_create(rbd_image_options_t *opts)
{
	/* librbd cannot fail here; on ENOMEM we hand out NULL, which every
	 * other call refuses with -EINVAL. */
	if (opts)
		*opts = rbdl_opts_new();
}

/* Free an option set and its string values (NULL: no-op). */
RBDL_API void rbd_image_options_destroy(rbd_image_options_t opts)
{
	rbdl_opts_free(opts);
}

/* Returns 0; -EINVAL if optname is not a string option (or opts NULL). */
RBDL_API int rbd_image_options_set_string(rbd_image_options_t opts,
					  int optname, const char *optval)
{
	if (!opts)
		return -EINVAL;
	return rbdl_opts_set_str(opts, optname, optval);
}

/* Returns 0; -EINVAL if optname is not a uint64 option. */
RBDL_API int rbd_image_options_set_uint64(rbd_image_options_t opts,
					  int optname, uint64_t optval)
{
	if (!opts)
		return -EINVAL;
	return rbdl_opts_set_u64(opts, optname, optval);
}

/* Returns 0; -EINVAL (not a string option), -ENOENT (unset), -E2BIG when
 * the value and its NUL do not fit in maxlen bytes. */
RBDL_API int rbd_image_options_get_string(rbd_image_options_t opts,
					  int optname, char *optval,
					  size_t maxlen)
{
	if (!opts)
		return -EINVAL;
	return rbdl_opts_copy_str(opts, optname, optval, maxlen);
}

/* Returns 0; -EINVAL (not a uint64 option), -ENOENT (unset). */
RBDL_API int rbd_image_options_get_uint64(rbd_image_options_t opts,
					  int optname, uint64_t *optval)
{
	if (!opts || !optval)
		return -EINVAL;
	return rbdl_opts_get_u64(opts, optname, optval);
}

/* Returns 0; -EINVAL (unknown option), -ENOENT (not set). */
RBDL_API int rbd_image_options_unset(rbd_image_options_t opts, int optname)
{
	if (!opts)
		return -EINVAL;
	return rbdl_opts_unset(opts, optname);
}

/* Unset every option. */
RBDL_API void rbd_image_options_clear(rbd_image_options_t opts)
{
	if (opts)
		rbdl_opts_clear(opts);
}

/* 1 if no option is set (or opts is NULL), else 0. */
RBDL_API int rbd_image_options_is_empty(rbd_image_options_t opts)
{
	return opts ? rbdl_opts_is_empty(opts) : 1;
}

/*
 * *is_set = whether option optname has a value.  -EINVAL (*is_set left
 * alone) for an option librbd does not know or a NULL argument.
 */
RBDL_API int rbd_image_options_is_set(rbd_image_options_t opts, int optname,
				      bool *is_set)
{
	const struct rbdl_opts *o = opts;

	if (!o || !is_set || rbdl_opt_type(optname) == RBDL_OPT_NONE)
		return -EINVAL;
	*is_set = (o->set >> optname) & 1;
	return 0;
}

/* ---- feature names --------------------------------------------------------- */

/*
 * The comma-separated names of features (no spaces, alphabetical), NUL
 * terminated, into str_features of *size bytes; *size becomes the length
 * needed (with the NUL).  -ERANGE when *size is too small, -EINVAL for a
 * bit librbd has no name for (nothing written) or a NULL pointer.
 */
RBDL_API int rbd_features_to_string(uint64_t features, char *str_features,
				    size_t *size)
{
	return rbdl_features_format(features, str_features, size);
}

/*
 * Parse a feature list as librbd does: surrounding white space ignored;
 * empty means RBD_FEATURES_DEFAULT; a decimal number is a mask (bits
 * without a name, and the internal ones, are dropped: -EINVAL with the
 * rest in *features); otherwise comma-separated names, each trimmed, their
 * bits summed (a name twice counts twice, as in librbd), and any unknown
 * or empty name gives -EINVAL with the sum of the known ones in *features.
 */
RBDL_API int rbd_features_from_string(const char *str_features,
				      uint64_t *features)
{
	if (!str_features || !features)
		return -EINVAL;
	return rbdl_features_parse(str_features, features);
}

/* ---- create ------------------------------------------------------------ */

/*
 * Creation with journaling or a mirror image mode: librbdlite cannot make
 * such an image (its data path writes no journal: a journaled image's I/O
 * is the system's librbd's); the system's librbd can, so these calls go there
 * with the caller's arguments as given ("Forwarded calls" in the README;
 * -EOPNOTSUPP without one).
 */

/*
 * Create a format-2 image (format from rbd_default_format) with the
 * configured default features, layout and data pool.  *order: 0 selects
 * rbd_default_order; the order used is stored back.  Errors: -EEXIST
 * (name taken), -EDOM (order outside [12, 25]), -EINVAL (bad layout;
 * format 1 without RBD_FORCE_ALLOW_V1, as librbd), -ENOENT (namespace or
 * data pool missing).  Journaling in the defaults, or format 1 with
 * RBD_FORCE_ALLOW_V1: made by the system's librbd (-EOPNOTSUPP without
 * one).
 */
RBDL_API int rbd_create(rados_ioctx_t io, const char *name, uint64_t size,
			int *order)
{
	struct rbdl_opts o;
	bool need_real = false;
	int order0, r;

	if (!order)
		return -EINVAL;
	order0 = *order;
	rbdl_opts_init(&o);
	r = rbdl_op_create_order(io, name, size, &o, order, &need_real);
	if (!need_real)
		return r;
	*order = order0;
	RBDL_FORWARD(rbd_create, io, name, size, order);
}

/*
 * As rbd_create with an explicit feature mask (format 2, default layout).
 * Extra errors: -ENOSYS (unknown feature bits), -EINVAL (internal or
 * inconsistent features, e.g. object-map without exclusive-lock).
 */
RBDL_API int rbd_create2(rados_ioctx_t io, const char *name, uint64_t size,
			 uint64_t features, int *order)
{
	int order0 = order ? *order : 0, r;
	bool need_real = false;

	r = rbdl_op_create_explicit(io, name, size, features, order, 0, 0,
				    &need_real);
	if (!need_real)
		return r;
	*order = order0;
	RBDL_FORWARD(rbd_create2, io, name, size, features, order);
}

/*
 * As rbd_create2 with a stripe unit and count (0/0: default layout; both
 * or neither must be set; the unit must divide the object size and be at
 * least 512).  A non-default layout sets RBD_FEATURE_STRIPINGV2.
 */
RBDL_API int rbd_create3(rados_ioctx_t io, const char *name, uint64_t size,
			 uint64_t features, int *order, uint64_t stripe_unit,
			 uint64_t stripe_count)
{
	int order0 = order ? *order : 0, r;
	bool need_real = false;

	r = rbdl_op_create_explicit(io, name, size, features, order,
				    stripe_unit, stripe_count, &need_real);
	if (!need_real)
		return r;
	*order = order0;
	RBDL_FORWARD(rbd_create3, io, name, size, features, order, stripe_unit,
		     stripe_count);
}

/*
 * Create from an option set (format, features, features_set/clear, order,
 * stripe unit/count, data pool); unset options take the configured
 * defaults.  RBD_IMAGE_OPTION_ORDER is written back into opts.  Errors as
 * rbd_create2/3, plus -EINVAL for the flatten and clone_format options.
 * With journaling or a mirror image mode the system's librbd makes the
 * image (see above).
 */
RBDL_API int rbd_create4(rados_ioctx_t io, const char *name, uint64_t size,
			 rbd_image_options_t opts)
{
	bool need_real = false;
	int r;

	if (!opts)
		return -EINVAL;
	r = rbdl_op_create(io, name, size, opts, &need_real);
	if (!need_real)
		return r;
	RBDL_FORWARD_OPTS(rbd_create4, opts, io, name, size, real_opts_);
}

/* ---- remove ---------------------------------------------------------------------- */





/*
 * Delete an image (format 2) and everything it owns: data objects (data
 * pool and striping aware), object map, header, id object, directory
 * entry.  Trash-namespace snapshots go first (as librbd's pre-remove
 * step), mirror snapshots are ignored.  Errors: -ENOENT (no such image),
 * -ENOTEMPTY (it has user or group snapshots, or a trash snapshot a clone
 * still uses), -EBUSY (another client watches it, i.e. has it open, or it
 * is being migrated), -EMLINK (member of a group).  A journaled, mirrored
 * or format 1 image, whose removal also cleans up what librbdlite does
 * not keep, is removed by the system's librbd (-EOPNOTSUPP without one).
 * Unlike librbd 16.2 it does not pass through the trash on the way (the
 * end state is the same), and an exclusive lock left by a client that no
 * longer watches the header is dropped with the header instead of being
 * broken with a blocklisting first.
 */
RBDL_API int rbd_remove(rados_ioctx_t io, const char *name)
{
	bool need_real = false;
	int r;

	if (!io || !name)
		return -EINVAL;
	r = rbdl_op_remove_prog(io, name, NULL, NULL, &need_real);
	if (!need_real)
		return r;
	RBDL_FORWARD(rbd_remove, io, name);
}

/* ---- list -------------------------------------------------------------------------- */


/*
 * Copy every image name, NUL-terminated, back to back into names.
 * Returns the bytes used; -ERANGE with *size set to the bytes needed when
 * *size is too small (checked before names, so a NULL buffer sizes it);
 * -EINVAL if names is NULL and the buffer would be big enough.  *size is
 * left alone on success, as librbd does.
 */
RBDL_API int rbd_list(rados_ioctx_t io, char *names, size_t *size)
{
	struct rbdl_img_list l = { 0 };
	size_t need = 0;
	int r;

	if (!io || !size)
		return -EINVAL;
	r = rbdl_op_list(io, &l);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l.n; i++)
		need += strlen(l.v[i].name) + 1;
	if (*size < need) {
		*size = need;
		r = -ERANGE;
	} else if (!names) {
		r = -EINVAL;
	} else {
		for (size_t i = 0; i < l.n; i++) {
			size_t k = strlen(l.v[i].name) + 1;

			memcpy(names, l.v[i].name, k);
			names += k;
		}
		r = (int)need;
	}
	rbdl_img_list_free(&l);
	return r;
}

/*
 * Fill images[0..*max_images) with malloc'ed id/name pairs (free with
 * rbd_image_spec_list_cleanup) and set *max_images to the count.  The
 * array is zeroed first.  -ERANGE with *max_images set to the count when
 * it is too small.
 */
RBDL_API int rbd_list2(rados_ioctx_t io, rbd_image_spec_t *images,
		       size_t *max_images)
{
	struct rbdl_img_list l = { 0 };
	int r;

	if (!io || !max_images)
		return -EINVAL;
	if (images && *max_images)
		memset(images, 0, sizeof(*images) * *max_images);
	r = rbdl_op_list(io, &l);
	if (r < 0)
		return r;
	if (*max_images < l.n) {
		*max_images = l.n;
		rbdl_img_list_free(&l);
		return -ERANGE;
	}
	if (!images && l.n) {	/* librbd would write through NULL */
		rbdl_img_list_free(&l);
		return -EINVAL;
	}
	*max_images = l.n;
	for (size_t i = 0; i < l.n; i++) {
		/* hand the strings over */
		images[i].id = l.v[i].id;
		images[i].name = l.v[i].name;
	}
	free(l.v);
	return 0;
}

/* Free the id and name strings of num_images entries filled by rbd_list2
 * (and NULL them, so a second cleanup is harmless). */
RBDL_API void rbd_image_spec_list_cleanup(rbd_image_spec_t *images,
					  size_t num_images)
{
	for (size_t i = 0; images && i < num_images; i++) {
		free(images[i].id);
		free(images[i].name);
		images[i].id = images[i].name = NULL;
	}
}

/* Free the id and name of one spec (and NULL them). */
RBDL_API void rbd_image_spec_cleanup(rbd_image_spec_t *image)
{
	if (!image)
		return;
	free(image->id);
	free(image->name);
	image->id = image->name = NULL;
}

/* rbd_linked_image_spec_cleanup() of num_images entries; the array itself
 * is the caller's, as in librbd. */
RBDL_API void rbd_linked_image_spec_list_cleanup(rbd_linked_image_spec_t *images,
						 size_t num_images)
{
	for (size_t i = 0; images && i < num_images; i++) {
		free(images[i].pool_name);
		free(images[i].pool_namespace);
		free(images[i].image_id);
		free(images[i].image_name);
		images[i].pool_name = images[i].pool_namespace = NULL;
		images[i].image_id = images[i].image_name = NULL;
	}
}

/* Free the name rbd_get_group() filled in.  -ERANGE when group_info_size
 * is not this struct's size, as librbd. */
RBDL_API int rbd_group_info_cleanup(rbd_group_info_t *group_info,
				    size_t group_info_size)
{
	if (group_info_size != sizeof(rbd_group_info_t))
		return -ERANGE;
	if (!group_info)
		return -EINVAL;
	free(group_info->name);
	group_info->name = NULL;
	return 0;
}

/* ---- namespaces ---------------------------------------------------------------------- */

/*
 * Namespace::exists: *exists = whether rbd_directory in that namespace of
 * the ioctx's pool exists and is ready (dir_state_assert READY).  The
 * ioctx's own namespace does not matter.  -EINVAL (after *exists = false)
 * for the empty name.
 */
RBDL_API int rbd_namespace_exists(rados_ioctx_t io,
				  const char *namespace_name, bool *exists)
{
	return rbdl_op_namespace_exists(io, namespace_name, exists);
}
