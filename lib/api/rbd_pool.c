/*
 * api_create.c - pool-level image management: image options, create,
 * remove, list, namespace_exists.
 *
 * Role: the exported rbd_image_options_*, rbd_create*, rbd_remove,
 * rbd_list, rbd_list2 and rbd_namespace_exists entry points, following
 * librbd 16.2's librbd::create / image::CreateRequest, image::RemoveRequest
 * (preceded by PreRemoveRequest's checks), api::Image::list_images and
 * api::Namespace::exists step by step, with the same cls "rbd" calls, the
 * same configuration lookups (pool overrides included) and the same errnos.
 *
 * Threading: every call here is synchronous and self-contained: it makes
 * its own duplicate I/O contexts, never touches open images, keeps no
 * global state, and may run concurrently from any number of threads.
 *
 * Ownership: the caller keeps its rados_ioctx_t (only read: pool, namespace,
 * cluster handle).  An rbd_image_options_t is a struct rbdl_opts (options.h)
 * owned by the caller between rbd_image_options_create() and _destroy().
 * Nothing here calls another exported rbd_* function (under LD_PRELOAD it
 * could bind to the real librbd).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rados/librados.h>

#include "proto/oid.h"
#include "proto/rados.h"
#include "rbd/librbd.h"
#include "rbd/features.h"

#include "proto/wire.h"
#include "proto/cls_rbd.h"
#include "proto/notify.h"
#include "proto/objmap_wire.h"
#include "image/conf.h"
#include "image/image.h"
#include "core/internal.h"
#include "ops/options.h"
#include "core/striper.h"

#define RBD_DIRECTORY "rbd_directory"
#define RBD_TRASH "rbd_trash"
#define RBD_INFO "rbd_info"
#define MAX_IMAGE_ID_LENGTH 14		/* librbd RBD_MAX_IMAGE_ID_LENGTH */
#define MAX_PREFIX_LENGTH 43		/* RBD_MAX_BLOCK_NAME_PREFIX_LENGTH */
#define MAX_OBJECT_MAP_OBJECTS 256000000ULL
#define LIST_PAGE 1024
#define TRASH_SOURCE_REMOVING 3
#define OBJECT_NONEXISTENT 0
/* Object names: RADOS refuses names over osd_max_object_name_len (2048). */
/* cls inputs holding up to two names */
#define IN_MAX (2 * RBDL_OID_MAX + 64)

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

/* ---- small rados helpers ------------------------------------------------------- */

/* Remove an object; ENOENT is success. */
static int remove_obj(rados_ioctx_t io, const char *oid)
{
	int r = rados_remove(io, oid);

	return r == -ENOENT ? 0 : r;
}

static const struct {
	const char *name;
	uint64_t bit;
} feature_names[] = {
	{ RBD_FEATURE_NAME_LAYERING, RBD_FEATURE_LAYERING },
	{ RBD_FEATURE_NAME_STRIPINGV2, RBD_FEATURE_STRIPINGV2 },
	{ RBD_FEATURE_NAME_EXCLUSIVE_LOCK, RBD_FEATURE_EXCLUSIVE_LOCK },
	{ RBD_FEATURE_NAME_OBJECT_MAP, RBD_FEATURE_OBJECT_MAP },
	{ RBD_FEATURE_NAME_FAST_DIFF, RBD_FEATURE_FAST_DIFF },
	{ RBD_FEATURE_NAME_DEEP_FLATTEN, RBD_FEATURE_DEEP_FLATTEN },
	{ RBD_FEATURE_NAME_JOURNALING, RBD_FEATURE_JOURNALING },
	{ RBD_FEATURE_NAME_DATA_POOL, RBD_FEATURE_DATA_POOL },
	{ RBD_FEATURE_NAME_OPERATIONS, RBD_FEATURE_OPERATIONS },
	{ RBD_FEATURE_NAME_MIGRATING, RBD_FEATURE_MIGRATING },
	{ RBD_FEATURE_NAME_NON_PRIMARY, RBD_FEATURE_NON_PRIMARY },
	{ RBD_FEATURE_NAME_DIRTY_CACHE, RBD_FEATURE_DIRTY_CACHE },
};

/* librbd::rbd_features_from_string: a number, or comma-separated names
 * (unknown names ignored). */
static uint64_t features_from_string(const char *s)
{
	char *end, *dup, *tok, *save = NULL;
	unsigned long long v;
	uint64_t f = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!errno && end != s && *end == '\0')
		return v;
	dup = strdup(s);
	if (!dup)
		return 0;
	for (tok = strtok_r(dup, ", ", &save); tok;
	     tok = strtok_r(NULL, ", ", &save)) {
		for (size_t i = 0; i < RBDL_ARRAY_SIZE(feature_names); i++)
			if (!strcmp(tok, feature_names[i].name))
				f |= feature_names[i].bit;
	}
	free(dup);
	return f;
}

/* ---- create ---------------------------------------------------------------------- */

/* util::generate_image_id: hex instance id then 32 random bits, keeping
 * the last 14 characters. */
static void generate_id(rados_t cl, char *id, size_t len)
{
	static _Thread_local unsigned seed;
	char buf[48];
	size_t n;

	if (!seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (unsigned)ts.tv_nsec ^ (unsigned)ts.tv_sec ^
		       (unsigned)(uintptr_t)&ts;
	}
	uint32_t extra = ((uint32_t)rand_r(&seed) << 16) ^
			 (uint32_t)rand_r(&seed);

	snprintf(buf, sizeof(buf), "%" PRIx64 "%" PRIx32,
		 rados_get_instance_id(cl), extra);
	n = strlen(buf);
	if (n > MAX_IMAGE_ID_LENGTH) {
		memmove(buf, buf + n - MAX_IMAGE_ID_LENGTH,
			MAX_IMAGE_ID_LENGTH + 1);
		n = MAX_IMAGE_ID_LENGTH;
	}
	if (n >= len)
		n = len - 1;
	memcpy(id, buf, n);
	id[n] = '\0';
}

/* CreateRequest::validate_features */
static int validate_features(uint64_t f)
{
	if (f & ~(uint64_t)RBD_FEATURES_ALL)
		return -ENOSYS;
	if (f & RBD_FEATURES_INTERNAL)
		return -EINVAL;
	if ((f & RBD_FEATURE_FAST_DIFF) && !(f & RBD_FEATURE_OBJECT_MAP))
		return -EINVAL;
	if ((f & RBD_FEATURE_OBJECT_MAP) && !(f & RBD_FEATURE_EXCLUSIVE_LOCK))
		return -EINVAL;
	if ((f & RBD_FEATURE_JOURNALING) && !(f & RBD_FEATURE_EXCLUSIVE_LOCK))
		return -EINVAL;
	return 0;
}

/* CreateRequest::validate_order: -EDOM outside [12, 25]. */
static int validate_order(uint8_t order)
{
	return (order < 12 || order > 25) ? -EDOM : 0;
}

/* CreateRequest::validate_striping */
static int validate_striping(uint64_t order, uint64_t su, uint64_t sc)
{
	if ((su && !sc) || (!su && sc))
		return -EINVAL;
	if (su && (((1ULL << order) % su) || su > (1ULL << order)))
		return -EINVAL;
	if (su && su < 512)
		return -EINVAL;
	return 0;
}

/* ValidatePoolRequest, on the data pool's default namespace: make sure
 * the pool is in self-managed snapshot mode and supports overwrites. */
static int validate_pool(rados_t cl, int64_t pool)
{
	static const char validated[] = "overwrite validated";
	static const char validate[] = "validate";
	rados_ioctx_t io;
	char buf[32];
	int r;

	r = rbdl_ioctx_dup(cl, pool, "", &io);
	if (r < 0)
		return r;
	r = rados_read(io, RBD_INFO, buf, sizeof(buf), 0);
	if (r == (int)strlen(validated) &&
	    !memcmp(buf, validated, strlen(validated))) {
		r = 0;
		goto out;
	}
	if (r < 0 && r != -ENOENT)
		goto out;
	if (!(r == (int)strlen(validate) &&
	      !memcmp(buf, validate, strlen(validate)))) {
		rados_snap_t snap;
		rados_write_op_t op;
		int wr;

		r = rados_ioctx_selfmanaged_snap_create(io, &snap);
		if (r < 0)
			goto out;	/* -EINVAL: pool snapshots in use */
		op = rados_create_write_op();
		if (!op) {
			r = -ENOMEM;
			goto out;
		}
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		rados_write_op_write(op, validate, strlen(validate), 0);
		wr = rados_write_op_operate(op, io, RBD_INFO, NULL, 0);
		rados_release_write_op(op);
		rados_ioctx_selfmanaged_snap_remove(io, snap);
		if (wr == -EOPNOTSUPP) {
			r = -EINVAL;
			goto out;
		}
		if (wr < 0 && wr != -EEXIST) {
			r = wr;
			goto out;
		}
	}
	r = rados_write(io, RBD_INFO, validated, strlen(validated), 0);
	if (r == -EOPNOTSUPP)
		r = -EINVAL;
out:
	rados_ioctx_destroy(io);
	return r < 0 ? r : 0;
}

/* One write op: create (exclusive) and/or one cls rbd call. */
static int write_op(rados_ioctx_t io, const char *oid, bool create,
		    const char *method, const void *in, size_t inlen,
		    const void *in2, size_t in2len, const char *method2)
{
	rados_write_op_t op = rados_create_write_op();
	int pr1 = 0, pr2 = 0, r;

	if (!op)
		return -ENOMEM;
	if (create)
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	if (method2)	/* an assertion that runs first */
		rados_write_op_exec(op, "rbd", method2, in2, in2len, &pr2);
	if (method)
		rados_write_op_exec(op, "rbd", method, in, inlen, &pr1);
	r = rados_write_op_operate(op, io, oid, NULL, 0);
	rados_release_write_op(op);
	if (r >= 0 && pr2 < 0)
		r = pr2;
	if (r >= 0 && pr1 < 0)
		r = pr1;
	return r < 0 ? r : 0;
}

/* Everything CreateRequest needs, resolved. */
struct create_req {
	rados_ioctx_t io;		/* image pool + namespace */
	const char *name;
	char id[MAX_IMAGE_ID_LENGTH + 1];
	const char *ns;
	uint64_t size;
	uint64_t features;
	bool negotiate;
	uint64_t order;
	uint64_t su, sc;
	struct rbdl_layout layout;
	const char *data_pool;		/* NULL: none */
	int64_t data_pool_id;
	char data_pool_buf[256];
};

/* Undo directory entry / id object / header / object map, best effort,
 * in librbd's order; returns saved. */
static int create_cleanup(struct create_req *c, int saved, int stage)
{
	char oid[RBDL_OID_MAX];
	uint8_t in[IN_MAX];
	long n;

	if (stage >= 4) {
		rbdl_oid_object_map(oid, sizeof(oid), c->id, RBDL_NOSNAP);
		remove_obj(c->io, oid);
	}
	if (stage >= 3) {
		rbdl_oid_header(oid, sizeof(oid), c->id);
		remove_obj(c->io, oid);
	}
	if (stage >= 2) {
		rbdl_oid_id(oid, sizeof(oid), c->name);
		remove_obj(c->io, oid);
	}
	n = rbdl_encode_dir_entry(in, sizeof(in), c->name, c->id);
	if (n > 0)
		rbdl_cls_write(c->io, RBD_DIRECTORY, "rbd", "dir_remove_image",
			       in, (size_t)n);
	return saved;
}

/* CreateRequest::send and its continuation. */
static int create_v2(struct create_req *c)
{
	char oid[RBDL_OID_MAX], prefix[RBDL_OID_MAX];
	uint8_t in[IN_MAX], st[1];
	long n;
	int r;

	/* add_image_to_directory (asserting the namespace exists) */
	st[0] = 0;	/* DIRECTORY_STATE_READY */
	n = rbdl_encode_dir_entry(in, sizeof(in), c->name, c->id);
	if (n < 0)
		return (int)n;
	r = write_op(c->io, RBD_DIRECTORY, false, "dir_add_image", in,
		     (size_t)n, st, 1, c->ns[0] ? "dir_state_assert" : NULL);
	if (r < 0)
		return r;

	/* create_id_object */
	rbdl_oid_id(oid, sizeof(oid), c->name);
	n = rbdl_encode_string(in, sizeof(in), c->id);
	r = n < 0 ? (int)n
		  : write_op(c->io, oid, true, "set_id", in, (size_t)n, NULL,
			     0, NULL);
	if (r < 0)
		return create_cleanup(c, r, 1);

	/* negotiate_features: only the configured defaults are narrowed to
	 * what the OSDs support. */
	if (c->negotiate) {
		char *out;
		size_t outlen;
		uint64_t all;

		r = rbdl_cls_read(c->io, RBD_DIRECTORY, "rbd",
				  "get_all_features", NULL, 0, &out, &outlen);
		if (r == 0) {
			r = rbdl_decode_u64(out, outlen, &all);
			rados_buffer_free(out);
			if (r == 0)
				c->features &= all;
		}
	}

	/* create_image */
	rbdl_oid_data_prefix(prefix, sizeof(prefix),
			     c->data_pool_id != -1 ? rados_ioctx_get_id(c->io)
						   : -1,
			     c->id);
	if (strlen(prefix) > MAX_PREFIX_LENGTH)
		return create_cleanup(c, -EINVAL, 2);
	rbdl_oid_header(oid, sizeof(oid), c->id);
	n = rbdl_encode_create_image(in, sizeof(in), c->size,
				     (uint8_t)c->order, c->features, prefix,
				     c->data_pool_id);
	if (n < 0)
		return create_cleanup(c, (int)n, 2);
	r = write_op(c->io, oid, true, "create", in, (size_t)n, NULL, 0, NULL);
	if (r == -EEXIST)
		return -EBADF;	/* image id in use: librbd leaves it all */
	if (r < 0)
		return create_cleanup(c, r, 2);

	/* set_stripe_unit_count, only for a non-default layout */
	if (!((!c->su && !c->sc) ||
	      (c->sc == 1 && c->su == (1ULL << c->order)))) {
		n = rbdl_encode_stripe(in, sizeof(in), c->su, c->sc);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(c->io, oid, "rbd",
					   "set_stripe_unit_count", in,
					   (size_t)n);
		if (r < 0)
			return create_cleanup(c, r, 3);
	}

	/* object_map_resize: the HEAD object map, every object nonexistent */
	if (c->features & RBD_FEATURE_OBJECT_MAP) {
		rbdl_oid_object_map(oid, sizeof(oid), c->id, RBDL_NOSNAP);
		n = rbdl_encode_object_map_resize(
			in, sizeof(in),
			rbdl_layout_num_objects(&c->layout, c->size),
			OBJECT_NONEXISTENT);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(c->io, oid, "rbd",
					   "object_map_resize", in, (size_t)n);
		if (r < 0)
			return create_cleanup(c, r, 4);
	}
	return 0;
}

/*
 * CreateRequest's constructor and send(): resolve features, layout and
 * data pool from the options and the (pool-overridden) configuration,
 * validate, then create.
 */
static int create_request(rados_ioctx_t io, const char *name, uint64_t size,
			  const struct rbdl_opts *opts, const struct rbdl_conf *cf,
			  const char *ns)
{
	struct create_req c;
	uint64_t v, fset = 0, fclear = 0, conflict;
	const char *s;
	char buf[256], pool_name[256];
	rados_t cl = rados_ioctx_get_cluster(io);
	int r;

	memset(&c, 0, sizeof(c));
	c.io = io;
	c.name = name;
	c.ns = ns;
	c.size = size;
	c.data_pool_id = -1;
	generate_id(cl, c.id, sizeof(c.id));

	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FEATURES, &c.features)) {
		rbdl_conf_get(cf, true, "rbd_default_features", buf, sizeof(buf));
		c.features = features_from_string(buf);
		c.negotiate = true;
	}
	rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FEATURES_CLEAR, &fclear);
	rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FEATURES_SET, &fset);
	conflict = fclear & fset;
	fclear &= ~conflict;
	fset &= ~conflict;
	c.features |= fset;
	c.features &= ~fclear;
	c.features &= ~(uint64_t)RBD_FEATURES_IMPLICIT_ENABLE;
	if (c.features & RBD_FEATURE_OBJECT_MAP)
		c.features |= RBD_FEATURE_FAST_DIFF;

	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_STRIPE_UNIT, &c.su) ||
	    !c.su)
		c.su = rbdl_conf_size(cf, true, "rbd_default_stripe_unit", 0);
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_STRIPE_COUNT, &c.sc) ||
	    !c.sc)
		c.sc = rbdl_conf_uint(cf, true, "rbd_default_stripe_count", 0);
	/* get_image_option() narrows the order to a u8 */
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_ORDER, &v) ||
	    !(uint8_t)v)
		v = rbdl_conf_uint(cf, true, "rbd_default_order", 22);
	c.order = (uint8_t)v;
	if (rbdl_opts_get_str(opts, RBD_IMAGE_OPTION_DATA_POOL, &s) == 0) {
		snprintf(c.data_pool_buf, sizeof(c.data_pool_buf), "%s", s);
	} else {
		rbdl_conf_get(cf, true, "rbd_default_data_pool", c.data_pool_buf,
			 sizeof(c.data_pool_buf));
	}

	pool_name[0] = '\0';
	rados_ioctx_get_pool_name(io, pool_name, sizeof(pool_name));
	if (c.data_pool_buf[0] && strcmp(c.data_pool_buf, pool_name)) {
		c.features |= RBD_FEATURE_DATA_POOL;
		c.data_pool = c.data_pool_buf;
	} else {
		c.features &= ~(uint64_t)RBD_FEATURE_DATA_POOL;
	}
	if ((c.su && c.su != (1ULL << c.order)) || (c.sc && c.sc != 1))
		c.features |= RBD_FEATURE_STRIPINGV2;
	else
		c.features &= ~(uint64_t)RBD_FEATURE_STRIPINGV2;

	/* send() */
	r = validate_features(c.features);
	if (r < 0)
		return r;
	r = validate_order((uint8_t)c.order);
	if (r < 0)
		return r;
	r = validate_striping(c.order, c.su, c.sc);
	if (r < 0)
		return r;
	r = rbdl_layout_init(&c.layout, (uint8_t)c.order,
			     (c.su && c.sc) ? c.su : (1ULL << c.order),
			     (c.su && c.sc) ? c.sc : 1);
	if (r < 0)
		return -EINVAL;
	if ((c.features & RBD_FEATURE_OBJECT_MAP) &&
	    rbdl_layout_num_objects(&c.layout, size) > MAX_OBJECT_MAP_OBJECTS)
		return -EINVAL;
	/* Not implemented by librbdlite: a journal, forced mirroring. */
	if ((c.features & RBD_FEATURE_JOURNALING) ||
	    rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_MIRROR_IMAGE_MODE,
			      &v) == 0) {
		rbdl_log("creating image %s: journaling and mirroring are not "
			 "supported by librbdlite", name);
		return -EOPNOTSUPP;
	}

	/* validate_data_pool */
	if (c.data_pool) {
		rados_ioctx_t dio;

		r = rados_ioctx_create(cl, c.data_pool, &dio);
		if (r < 0)
			return r;
		c.data_pool_id = rados_ioctx_get_id(dio);
		rados_ioctx_destroy(dio);
	}
	if (rbdl_conf_bool(cf, true, "rbd_validate_pool", true)) {
		r = validate_pool(cl, c.data_pool ? c.data_pool_id
						  : rados_ioctx_get_id(io));
		if (r < 0)
			return r;
	}
	return create_v2(&c);
}

/*
 * librbd::create(io, name, id = "", size, opts): the shared body of every
 * rbd_create* variant.  The resolved order is stored back into opts (as
 * RBD_IMAGE_OPTION_ORDER) once the order was validated, whatever the
 * outcome of the creation itself.
 */
static int create_image(rados_ioctx_t io, const char *name, uint64_t size,
			struct rbdl_opts *opts)
{
	struct rbdl_conf cf;
	uint64_t v, format, order = 0;
	char oid[RBDL_OID_MAX];
	rados_ioctx_t cio;
	char *ns;
	int r;

	if (!io || !name || !opts)
		return -EINVAL;
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FLATTEN, &v) == 0 ||
	    rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_CLONE_FORMAT, &v) == 0)
		return -EINVAL;
	if (strlen(name) > RBDL_OID_MAX - 16)
		return -ENAMETOOLONG;	/* RADOS would refuse the names */

	rbdl_conf_load(&cf, io, NULL);
	/* librbd::create reads these from the global configuration. */
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FORMAT, &format))
		format = rbdl_conf_uint(&cf, false, "rbd_default_format", 2);

	r = rbdl_ioctx_namespace(io, &ns);
	if (r < 0)
		goto out;
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io), rados_ioctx_get_id(io),
		       ns, &cio);
	if (r < 0)
		goto out_ns;

	/* detect_format: is the name taken, in either format? */
	{
		uint64_t psize;
		time_t pmtime;

		rbdl_oid_v1_header(oid, sizeof(oid), name);
		r = rados_stat(cio, oid, &psize, &pmtime);
		if (r == -ENOENT) {
			rbdl_oid_id(oid, sizeof(oid), name);
			r = rados_stat(cio, oid, &psize, &pmtime);
		}
		if (r == 0)
			r = -EEXIST;
		if (r != -ENOENT)
			goto out_io;
	}

	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_ORDER, &order) ||
	    order == 0)
		order = rbdl_conf_uint(&cf, false, "rbd_default_order", 22);
	/* librbd's validate_order() takes a u8: 278 passes as 22. */
	r = validate_order((uint8_t)order);
	if (r < 0)
		goto out_io;

	if (format == 1) {
		/* librbd refuses format 1 unless RBD_FORCE_ALLOW_V1 is set
		 * (without storing the order back); librbdlite cannot make
		 * format 1 images at all. */
		r = getenv("RBD_FORCE_ALLOW_V1") ? -EOPNOTSUPP : -EINVAL;
		goto out_io;
	}
	r = create_request(cio, name, size, opts, &cf, ns);
	rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_ORDER, order);
out_io:
	rados_ioctx_destroy(cio);
out_ns:
	free(ns);
out:
	rbdl_conf_free(&cf);
	return r;
}

/* Create with *order as RBD_IMAGE_OPTION_ORDER (0: the default) and store
 * the order used back into *order; consumes o. */
static int create_order_inout(rados_ioctx_t io, const char *name,
			      uint64_t size, struct rbdl_opts *o, int *order)
{
	uint64_t ord;
	int r;

	rbdl_opts_set_u64(o, RBD_IMAGE_OPTION_ORDER, (uint64_t)(int64_t)*order);
	r = create_image(io, name, size, o);
	if (rbdl_opts_get_u64(o, RBD_IMAGE_OPTION_ORDER, &ord) == 0)
		*order = (int)ord;
	rbdl_opts_clear(o);
	return r;
}

/* librbd::create(io, name, size, old_format = false, features, order,
 * stripe_unit, stripe_count): explicit format 2, features and layout. */
static int create_explicit(rados_ioctx_t io, const char *name, uint64_t size,
			   uint64_t features, int *order, uint64_t su,
			   uint64_t sc)
{
	struct rbdl_opts o;

	if (!order)
		return -EINVAL;
	rbdl_opts_init(&o);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_FORMAT, 2);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_FEATURES, features);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_UNIT, su);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_COUNT, sc);
	return create_order_inout(io, name, size, &o, order);
}

/*
 * Create a format-2 image (format from rbd_default_format) with the
 * configured default features, layout and data pool.  *order: 0 selects
 * rbd_default_order; the order used is stored back.  Errors: -EEXIST
 * (name taken), -EDOM (order outside [12, 25]), -EINVAL (bad layout,
 * format 1), -ENOENT (namespace or data pool missing), -EOPNOTSUPP
 * (journaling in the defaults: not supported by librbdlite).
 */
RBDL_API int rbd_create(rados_ioctx_t io, const char *name, uint64_t size,
			int *order)
{
	struct rbdl_opts o;

	if (!order)
		return -EINVAL;
	rbdl_opts_init(&o);
	return create_order_inout(io, name, size, &o, order);
}

/*
 * As rbd_create with an explicit feature mask (format 2, default layout).
 * Extra errors: -ENOSYS (unknown feature bits), -EINVAL (internal or
 * inconsistent features, e.g. object-map without exclusive-lock).
 */
RBDL_API int rbd_create2(rados_ioctx_t io, const char *name, uint64_t size,
			 uint64_t features, int *order)
{
	return create_explicit(io, name, size, features, order, 0, 0);
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
	return create_explicit(io, name, size, features, order, stripe_unit,
			       stripe_count);
}

/*
 * Create from an option set (format, features, features_set/clear, order,
 * stripe unit/count, data pool); unset options take the configured
 * defaults.  RBD_IMAGE_OPTION_ORDER is written back into opts.  Errors as
 * rbd_create2/3, plus -EINVAL for the flatten and clone_format options.
 */
RBDL_API int rbd_create4(rados_ioctx_t io, const char *name, uint64_t size,
			 rbd_image_options_t opts)
{
	if (!opts)
		return -EINVAL;
	return create_image(io, name, size, opts);
}

/* ---- remove ---------------------------------------------------------------------- */

/* Images found by a listing (list_images), in listing order. */
struct img_list {
	struct rbdl_dir_entry *v;
	size_t n, cap;
};

struct rm_image {
	rados_ioctx_t io;		/* metadata pool + namespace */
	rados_ioctx_t dio;		/* data objects */
	const char *name;
	char *id;
	char header[RBDL_OID_MAX];
	char *prefix;
	uint64_t size, features, flags;
	struct rbdl_layout layout;
	int64_t data_pool;
};

/* Header fields the removal needs, and PreRemoveRequest's checks. */
static int rm_load(struct rm_image *m)
{
	struct rbdl_header h;
	int r = rbdl_read_header(m->io, m->header, false, &h);

	if (r < 0)
		return r;
	m->size = h.size;
	m->features = h.features;
	m->prefix = h.object_prefix;
	h.object_prefix = NULL;
	if (rbdl_layout_init(&m->layout, h.order,
			     h.su ? h.su : (1ULL << h.order),
			     h.sc ? h.sc : 1) < 0)
		r = -EBADMSG;
	m->data_pool = h.data_pool;
	if (r == 0)
		r = rbdl_cls_read_u64_at(m->io, m->header, "get_flags",
					 RBDL_NOSNAP, &m->flags);
	/* PreRemoveRequest: migration, snapshots, group, watchers. */
	if (r == 0 && (m->features & RBD_FEATURE_MIGRATING))
		r = -EBUSY;
	if (r == 0 && h.nsnaps)
		r = -ENOTEMPTY;
	rbdl_header_free(&h);
	return r;
}

struct watchers {
	uint64_t self;
	int others;
};

static int count_watcher(uint64_t gid, uint64_t cookie, bool timed_out,
			 const uint8_t *payload, uint32_t len, void *arg)
{
	struct watchers *w = arg;

	(void)cookie;
	(void)timed_out;
	(void)payload;
	(void)len;
	if (gid != w->self)	/* LIST_WATCHERS_FILTER_OUT_MY_INSTANCE */
		w->others++;
	return 0;
}

/*
 * Does any other client watch the header?  librados' C API cannot list
 * watchers, so notify them with an empty payload (a header update to a
 * librbd watcher): every watcher appears in the reply, as an ack or, if
 * it did not answer in time, as a timeout.
 */
static int other_watchers(struct rm_image *m, bool *busy)
{
	struct watchers w = {
		.self = rados_get_instance_id(rados_ioctx_get_cluster(m->io)),
	};
	char *reply = NULL;
	size_t rlen = 0;
	int r;

	r = rados_notify2(m->io, m->header, NULL, 0, 1000, &reply, &rlen);
	if (r < 0 && r != -ETIMEDOUT) {
		if (reply)
			rados_buffer_free(reply);
		return r;
	}
	if (reply) {
		r = rbdl_walk_notify_reply(reply, rlen, count_watcher, &w);
		rados_buffer_free(reply);
		if (r < 0)
			return r;
	}
	*busy = w.others > 0;
	return 0;
}

/* In a group?  (PreRemoveRequest::check_group: -EMLINK) */
static int check_group(struct rm_image *m)
{
	char *out;
	size_t outlen;
	bool in_group = false;
	int r = rbdl_cls_read(m->io, m->header, "rbd", "image_group_get",
			      NULL, 0, &out, &outlen);

	if (r == -EOPNOTSUPP)
		return 0;
	if (r < 0)
		return r;
	r = rbdl_decode_group_spec(out, outlen, &in_group);
	rados_buffer_free(out);
	if (r < 0)
		return r;
	return in_group ? -EMLINK : 0;
}

/*
 * What librbd's removal also cleans up and librbdlite does not: a journal,
 * mirroring state.  Refuse those images (-EOPNOTSUPP) before anything is
 * deleted.
 */
static int check_unsupported(struct rm_image *m)
{
	char *out;
	size_t outlen;
	uint8_t in[RBDL_OID_MAX + 8];
	long n;
	int r;

	if (m->features & RBD_FEATURE_JOURNALING) {
		rbdl_log("removing image %s: journaled images are not "
			 "supported by librbdlite", m->name);
		return -EOPNOTSUPP;
	}
	n = rbdl_encode_string(in, sizeof(in), m->id);
	if (n < 0)
		return (int)n;
	r = rbdl_cls_read(m->io, "rbd_mirroring", "rbd", "mirror_image_get",
			  in, (size_t)n, &out, &outlen);
	if (r == 0) {
		rados_buffer_free(out);
		rbdl_log("removing image %s: mirrored images are not supported "
			 "by librbdlite", m->name);
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * DetachChildRequest: a clone leaves its parent's list of children --
 * clone v2 (op feature CLONE_CHILD): child_detach on the parent's header;
 * clone v1: remove_child on rbd_children in the clone's pool.  Already
 * detached (ENOENT) is fine.  Not done: librbd also removes the parent's
 * snapshot when it sits in the trash and this was its last child.
 */
static int detach_child(struct rm_image *m, const char *ns)
{
	struct rbdl_parent_spec ps;
	uint64_t opf = 0;
	rados_ioctx_t pio;
	uint8_t in[IN_MAX];
	char oid[RBDL_OID_MAX], *out;
	size_t outlen;
	long n;
	int r = rbdl_cls_read(m->io, m->header, "rbd", "parent_get", NULL, 0,
			      &out, &outlen);

	if (r == -EOPNOTSUPP)
		return 0;	/* a pre-Nautilus OSD: no such parents */
	if (r < 0)
		return r;
	r = rbdl_decode_parent_spec(out, outlen, &ps);
	rados_buffer_free(out);
	if (r < 0)
		return r;
	if (ps.pool_id < 0)
		goto out;
	r = rbdl_cls_read_u64(m->io, m->header, "op_features_get", NULL, 0,
			      &opf);
	if (r < 0 && r != -EOPNOTSUPP)
		goto out;
	if (opf & RBD_OPERATION_FEATURE_CLONE_CHILD) {
		r = rbdl_ioctx_dup(rados_ioctx_get_cluster(m->io), ps.pool_id,
				   ps.pool_namespace, &pio);
		if (r < 0)
			goto out;
		rbdl_oid_header(oid, sizeof(oid), ps.image_id);
		n = rbdl_encode_child_detach(in, sizeof(in), ps.snap_id,
					     rados_ioctx_get_id(m->io), m->id,
					     ns);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(pio, oid, "rbd", "child_detach", in,
					   (size_t)n);
	} else {
		/* A v1 clone was registered in its own pool's
		 * rbd_children (librbd: the child's md_ctx). */
		r = rbdl_ioctx_dup(rados_ioctx_get_cluster(m->io),
				   rados_ioctx_get_id(m->io), "", &pio);
		if (r < 0)
			goto out;
		n = rbdl_encode_remove_child(in, sizeof(in), ps.pool_id,
					     ps.image_id, ps.snap_id, m->id);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(pio, "rbd_children", "rbd",
					   "remove_child", in, (size_t)n);
	}
	rados_ioctx_destroy(pio);
	if (r == -ENOENT)
		r = 0;
out:
	rbdl_parent_spec_free(&ps);
	return r;
}

/*
 * TrimRequest to size 0: remove every data object that may exist (all of
 * them, or only those the object map, when valid, does not mark
 * nonexistent), rbd_concurrent_management_ops at a time.
 */
static int trim_data(struct rm_image *m, uint64_t window)
{
	uint64_t nobjs = rbdl_layout_num_objects(&m->layout, m->size);
	uint8_t *bits = NULL;
	rados_completion_t *comps;
	int r = 0;

	if ((m->features & RBD_FEATURE_OBJECT_MAP) &&
	    !(m->flags & RBD_FLAG_OBJECT_MAP_INVALID)) {
		char oid[RBDL_OID_MAX], *out;
		size_t outlen;
		uint64_t n;

		rbdl_oid_object_map(oid, sizeof(oid), m->id, RBDL_NOSNAP);
		if (rbdl_cls_read(m->io, oid, "rbd", "object_map_load", NULL, 0,
				  &out, &outlen) == 0) {
			if (rbdl_decode_object_map(out, outlen, &bits, &n) < 0 ||
			    n != nobjs) {
				free(bits);
				bits = NULL;
			}
			rados_buffer_free(out);
		}
	}
	if (window < 1)
		window = 1;
	if (window > 256)
		window = 256;
	comps = calloc(window, sizeof(*comps));
	if (!comps) {
		free(bits);
		return -ENOMEM;
	}
	for (uint64_t o = 0; o < nobjs && r == 0;) {
		uint64_t k = 0;

		for (; k < window && o < nobjs; o++) {
			char oid[RBDL_OID_MAX];
			int e;

			if (bits && rbdl_om_state(bits, o) ==
					    OBJECT_NONEXISTENT)
				continue;
			rbdl_oid_data(oid, sizeof(oid), m->prefix, o);
			e = rados_aio_create_completion2(NULL, NULL, &comps[k]);
			if (e < 0) {
				r = e;
				break;
			}
			e = rados_aio_remove(m->dio, oid, comps[k]);
			if (e < 0) {
				rados_aio_release(comps[k]);
				r = e;
				break;
			}
			k++;
		}
		for (uint64_t i = 0; i < k; i++) {
			int e;

			rados_aio_wait_for_complete(comps[i]);
			e = rados_aio_get_return_value(comps[i]);
			rados_aio_release(comps[i]);
			if (e < 0 && e != -ENOENT && r == 0)
				r = e;
		}
	}
	free(comps);
	free(bits);
	return r;
}

/* Remove an image whose id is known; in_dir: it has a directory entry. */
static int remove_by_id(rados_ioctx_t io, const char *name, char *id,
			bool in_dir, const char *ns)
{
	struct rm_image m;
	struct rbdl_conf cf;
	char oid[RBDL_OID_MAX];
	uint8_t in[IN_MAX];
	bool busy = false;
	long n;
	int r;

	memset(&m, 0, sizeof(m));
	m.io = io;
	m.name = name;
	m.id = id;
	rbdl_oid_header(m.header, sizeof(m.header), id);
	r = rm_load(&m);
	if (r == -ENOENT || r == -EIO) {
		uint64_t psize;
		time_t pmtime;

		/* The cls reports a missing header as EIO. */
		if (rados_stat(io, m.header, &psize, &pmtime) != -ENOENT)
			goto out;
		/* No header: only the id object and the entry are left. */
		r = 0;
		goto drop_names;
	}
	if (r < 0)
		goto out;
	/* PreRemoveRequest's order: watchers, then the group. */
	r = other_watchers(&m, &busy);
	if (r < 0)
		goto out;
	if (busy) {
		r = -EBUSY;
		goto out;
	}
	r = check_group(&m);
	if (r < 0)
		goto out;
	r = check_unsupported(&m);
	if (r < 0)
		goto out;
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io),
		       m.data_pool >= 0 ? m.data_pool : rados_ioctx_get_id(io),
		       ns, &m.dio);
	if (r < 0)
		goto out;
	rbdl_conf_load(&cf, io, NULL);
	r = trim_data(&m, rbdl_conf_uint(&cf, true,
					 "rbd_concurrent_management_ops", 10));
	rbdl_conf_free(&cf);
	rados_ioctx_destroy(m.dio);
	if (r == 0)
		r = detach_child(&m, ns);
	if (r < 0)
		goto out;
	r = remove_obj(io, m.header);
	if (r < 0)
		goto out;
	rbdl_oid_object_map(oid, sizeof(oid), id, RBDL_NOSNAP);
	r = remove_obj(io, oid);
	if (r < 0)
		goto out;
drop_names:
	/* The id object, unless the name now belongs to another image. */
	rbdl_oid_id(oid, sizeof(oid), name);
	{
		char *out, *cur = NULL;
		size_t outlen;

		r = rbdl_cls_read(io, oid, "rbd", "get_id", NULL, 0, &out,
				  &outlen);
		if (r == 0) {
			r = rbdl_decode_string(out, outlen, &cur);
			rados_buffer_free(out);
			if (r == 0 && !strcmp(cur, id))
				r = remove_obj(io, oid);
			free(cur);
		} else if (r == -ENOENT) {
			r = 0;
		}
		if (r < 0)
			goto out;
	}
	if (in_dir) {
		n = rbdl_encode_dir_entry(in, sizeof(in), name, id);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(io, RBD_DIRECTORY, "rbd",
					   "dir_remove_image", in, (size_t)n);
		if (r == -ENOENT)
			r = 0;
	}
out:
	free(m.prefix);
	return r;
}

static int list_v2(rados_ioctx_t io, bool trash, struct img_list *l);
static void list_free(struct img_list *l);

/*
 * An image a removal left in the trash (source REMOVING) under this name,
 * which librbd's rbd_remove finishes removing: remove it by id, then its
 * trash entry.  -ENOENT if there is none.
 */
static int finish_trashed(rados_ioctx_t io, const char *name, const char *ns)
{
	struct img_list l = { 0 };
	uint8_t in[IN_MAX];
	char *id = NULL;
	long n;
	int r = list_v2(io, true, &l);

	if (r < 0)
		return r;
	for (size_t i = 0; i < l.n && !id; i++)
		if (!strcmp(l.v[i].name, name))
			id = strdup(l.v[i].id);
	list_free(&l);
	if (!id)
		return -ENOENT;
	r = remove_by_id(io, name, id, false, ns);
	if (r == 0) {
		n = rbdl_encode_string(in, sizeof(in), id);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(io, RBD_TRASH, "rbd", "trash_remove",
					   in, (size_t)n);
		if (r == -ENOENT)
			r = 0;
	}
	free(id);
	return r;
}

/*
 * Delete an image (format 2) and everything it owns: data objects (data
 * pool and striping aware), object map, header, id object, directory
 * entry.  Errors: -ENOENT (no such image), -ENOTEMPTY (it has snapshots,
 * of any kind: librbd would delete trash and mirror snapshots itself),
 * -EBUSY (another client watches it, i.e. has it open, or it is being
 * migrated), -EMLINK (member of a group), -EOPNOTSUPP (format 1, clones,
 * journaled or mirrored images, whose removal also has to update other
 * objects).
 * Unlike librbd 16.2 it does not pass through the trash on the way (the
 * end state is the same), and an exclusive lock left by a client that no
 * longer watches the header is dropped with the header instead of being
 * broken with a blocklisting first.
 */
RBDL_API int rbd_remove(rados_ioctx_t io, const char *name)
{
	rados_ioctx_t mio;
	char oid[RBDL_OID_MAX], *ns, *id = NULL, *out;
	uint8_t in[IN_MAX];
	size_t outlen;
	bool in_dir = true;
	long n;
	int r;

	if (!io || !name)
		return -EINVAL;
	if (strlen(name) > RBDL_OID_MAX - 16)
		return -ENOENT;	/* no such object can exist */
	r = rbdl_ioctx_namespace(io, &ns);
	if (r < 0)
		return r;
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io), rados_ioctx_get_id(io), ns,
		       &mio);
	if (r < 0) {
		free(ns);
		return r;
	}
	n = rbdl_encode_string(in, sizeof(in), name);
	r = rbdl_cls_read(mio, RBD_DIRECTORY, "rbd", "dir_get_id", in,
			  (size_t)n, &out, &outlen);
	if (r == -ENOENT) {
		/* Not in the directory: an interrupted removal in the trash,
		 * a leftover id object, or format 1. */
		in_dir = false;
		r = finish_trashed(mio, name, ns);
		if (r != -ENOENT)
			goto out;
		rbdl_oid_id(oid, sizeof(oid), name);
		r = rbdl_cls_read(mio, oid, "rbd", "get_id", NULL, 0, &out,
				  &outlen);
		if (r == -ENOENT) {
			uint64_t psize;
			time_t pmtime;

			rbdl_oid_v1_header(oid, sizeof(oid), name);
			if (rados_stat(mio, oid, &psize, &pmtime) == 0)
				r = -EOPNOTSUPP;
			goto out;
		}
	}
	if (r < 0)
		goto out;
	r = rbdl_decode_string(out, outlen, &id);
	rados_buffer_free(out);
	if (r < 0)
		goto out;
	if (!id[0]) {
		r = -ENOENT;
		goto out;
	}
	r = remove_by_id(mio, name, id, in_dir, ns);
out:
	free(id);
	rados_ioctx_destroy(mio);
	free(ns);
	return r;
}

/* ---- list -------------------------------------------------------------------------- */


static int list_push(struct img_list *l, struct rbdl_dir_entry *e)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 16;
		struct rbdl_dir_entry *nv = realloc(l->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = *e;
	return 0;
}

static void list_free(struct img_list *l)
{
	rbdl_dir_entries_free(l->v, (uint32_t)l->n);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* Take all entries of v (freeing the array) into l; keep only those with
 * source == REMOVING when trash. */
static int list_take(struct img_list *l, struct rbdl_dir_entry *v,
		     uint32_t cnt, bool trash)
{
	int r = 0;

	for (uint32_t i = 0; i < cnt; i++) {
		if (r == 0 && (!trash || v[i].source == TRASH_SOURCE_REMOVING)) {
			r = list_push(l, &v[i]);
			if (r == 0)
				continue;
		}
		free(v[i].name);
		free(v[i].id);
	}
	free(v);
	return r;
}

/* Page through dir_list (trash: trash_list on rbd_trash). */
static int list_v2(rados_ioctx_t io, bool trash, struct img_list *l)
{
	char *last = NULL;
	int r = 0;

	for (;;) {
		uint8_t in[IN_MAX];
		struct rbdl_dir_entry *v;
		uint32_t cnt;
		char *out;
		size_t outlen;
		long n = rbdl_encode_list_start(in, sizeof(in),
						last ? last : "", LIST_PAGE);

		if (n < 0) {
			r = (int)n;
			break;
		}
		r = rbdl_cls_read(io, trash ? RBD_TRASH : RBD_DIRECTORY, "rbd",
				  trash ? "trash_list" : "dir_list", in,
				  (size_t)n, &out, &outlen);
		if (r == -ENOENT || (trash && r == -EOPNOTSUPP)) {
			r = 0;
			break;
		}
		if (r < 0)
			break;
		r = trash ? rbdl_decode_trash_list(out, outlen, &v, &cnt)
			  : rbdl_decode_dir_list(out, outlen, &v, &cnt);
		rados_buffer_free(out);
		if (r < 0)
			break;
		free(last);
		/* the paging key: the name (dir_list) or id (trash_list) */
		last = cnt ? strdup(trash ? v[cnt - 1].id : v[cnt - 1].name)
			   : NULL;
		r = list_take(l, v, cnt, trash);
		if (r < 0 || cnt < LIST_PAGE)
			break;
		if (!last) {
			r = -ENOMEM;
			break;
		}
	}
	free(last);
	return r;
}

/* Format 1 names: the tmap in rbd_directory's data (default namespace). */
static int list_v1(rados_ioctx_t io, struct img_list *l)
{
	uint64_t size;
	time_t mtime;
	struct rbdl_dec d;
	struct rbdl_dir_entry *v;
	uint32_t hlen, cnt;
	char *buf;
	int r = rados_stat(io, RBD_DIRECTORY, &size, &mtime);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (size == 0)
		return 0;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	r = rados_read(io, RBD_DIRECTORY, buf, size, 0);
	if (r < 0)
		goto out;
	rbdl_dec_init(&d, buf, (size_t)r);
	rbdl_dec_bytes(&d, &hlen);	/* tmap header */
	if (d.err) {
		r = d.err;
		goto out;
	}
	r = rbdl_decode_dir_list(d.p, (size_t)(d.end - d.p), &v, &cnt);
	if (r < 0)
		goto out;
	for (uint32_t i = 0; i < cnt; i++) {
		free(v[i].id);	/* the value is not an id */
		v[i].id = strdup("");
	}
	r = list_take(l, v, cnt, false);
out:
	free(buf);
	return r;
}

/* api::Image::list_images: format 1 (default namespace only), format 2
 * from the directory, then images left in the trash by an interrupted
 * removal. */
static int list_images(rados_ioctx_t io, struct img_list *l)
{
	rados_ioctx_t mio;
	char *ns;
	int r = rbdl_ioctx_namespace(io, &ns);

	if (r < 0)
		return r;
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io), rados_ioctx_get_id(io), ns,
		       &mio);
	if (r < 0) {
		free(ns);
		return r;
	}
	if (!ns[0]) {
		r = list_v1(mio, l);
		if (r < 0)
			goto out;
	}
	r = list_v2(mio, false, l);
	if (r < 0)
		goto out;
	r = list_v2(mio, true, l);
out:
	if (r < 0)
		list_free(l);
	rados_ioctx_destroy(mio);
	free(ns);
	return r;
}

/*
 * Copy every image name, NUL-terminated, back to back into names.
 * Returns the bytes used; -ERANGE with *size set to the bytes needed when
 * *size is too small (checked before names, so a NULL buffer sizes it);
 * -EINVAL if names is NULL and the buffer would be big enough.  *size is
 * left alone on success, as librbd does.
 */
RBDL_API int rbd_list(rados_ioctx_t io, char *names, size_t *size)
{
	struct img_list l = { 0 };
	size_t need = 0;
	int r;

	if (!io || !size)
		return -EINVAL;
	r = list_images(io, &l);
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
	list_free(&l);
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
	struct img_list l = { 0 };
	int r;

	if (!io || !max_images)
		return -EINVAL;
	if (images && *max_images)
		memset(images, 0, sizeof(*images) * *max_images);
	r = list_images(io, &l);
	if (r < 0)
		return r;
	if (*max_images < l.n) {
		*max_images = l.n;
		list_free(&l);
		return -ERANGE;
	}
	if (!images && l.n) {	/* librbd would write through NULL */
		list_free(&l);
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
	rados_ioctx_t nio;
	uint8_t st = 0;	/* DIRECTORY_STATE_READY */
	int r;

	if (!exists)
		return -EINVAL;
	*exists = false;
	if (!io || !namespace_name || !namespace_name[0])
		return -EINVAL;
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io), rados_ioctx_get_id(io),
		       namespace_name, &nio);
	if (r < 0)
		return r;
	r = rbdl_cls_write(nio, RBD_DIRECTORY, "rbd", "dir_state_assert", &st,
			   1);
	rados_ioctx_destroy(nio);
	if (r == 0)
		*exists = true;
	else if (r != -ENOENT)
		return r;
	return 0;
}
