/*
 * create.c - image creation as librbd 16.2's librbd::create and
 * image::CreateRequest do it: name checks in both formats, the option and
 * configuration defaults (pool overrides included), feature, order,
 * striping and data pool validation, then the cls "rbd" calls that create
 * the id object, the directory entry, the header and the object map, with
 * cleanup of what was made when a later step fails.
 *
 * Threading: synchronous and self-contained: its own duplicate I/O
 * contexts, no open image touched, no global state.
 */
#include "config.h"

#include "pool.h"

#include "core/internal.h"
#include "core/striper.h"
#include "image/conf.h"
#include "ops/options.h"
#include "proto/cls_rbd.h"
#include "proto/notify.h"
#include "proto/objmap_wire.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "proto/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rados/librados.h>

#include "rbd/features.h"
#include "rbd/librbd.h"

#define MAX_IMAGE_ID_LENGTH 14		/* librbd RBD_MAX_IMAGE_ID_LENGTH */
#define MAX_PREFIX_LENGTH 43		/* RBD_MAX_BLOCK_NAME_PREFIX_LENGTH */
#define MAX_OBJECT_MAP_OBJECTS 256000000ULL
/* cls inputs holding up to two names */
#define IN_MAX (2 * RBDL_OID_MAX + 64)


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

/* The value librbd takes from a features setting: whatever
 * rbd_features_from_string understood, errors or not. */
static uint64_t features_from_string(const char *s)
{
	uint64_t f = 0;

	(void)rbdl_features_parse(s, &f);
	return f;
}

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
	r = rados_read(io, RBDL_OID_INFO, buf, sizeof(buf), 0);
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
		wr = rados_write_op_operate(op, io, RBDL_OID_INFO, NULL, 0);
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
	r = rados_write(io, RBDL_OID_INFO, validated, strlen(validated), 0);
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

/* Undo directory entry / id object / header / object map, best effort,
 * in librbd's order; returns saved. */
static int create_cleanup(struct create_req *c, int saved, int stage)
{
	char oid[RBDL_OID_MAX];
	uint8_t in[IN_MAX];
	long n;

	if (stage >= 4) {
		rbdl_oid_object_map(oid, sizeof(oid), c->id, RBDL_NOSNAP);
		rbdl_remove_if_exists(c->io, oid);
	}
	if (stage >= 3) {
		rbdl_oid_header(oid, sizeof(oid), c->id);
		rbdl_remove_if_exists(c->io, oid);
	}
	if (stage >= 2) {
		rbdl_oid_id(oid, sizeof(oid), c->name);
		rbdl_remove_if_exists(c->io, oid);
	}
	n = rbdl_encode_dir_entry(in, sizeof(in), c->name, c->id);
	if (n > 0)
		rbdl_cls_write(c->io, RBDL_OID_DIRECTORY, "rbd", "dir_remove_image",
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
	r = write_op(c->io, RBDL_OID_DIRECTORY, false, "dir_add_image", in,
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

		r = rbdl_cls_read(c->io, RBDL_OID_DIRECTORY, "rbd",
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
			RBDL_OBJ_NONEXISTENT);
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
			  const char *ns, const char *id, bool *need_real)
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
	if (id)
		snprintf(c.id, sizeof(c.id), "%s", id);
	else
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
	/* Not implemented by librbdlite: a journal, forced mirroring (the
	 * caller may have the system's librbd make the image). */
	if ((c.features & RBD_FEATURE_JOURNALING) ||
	    rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_MIRROR_IMAGE_MODE,
			      &v) == 0) {
		if (need_real)
			*need_real = true;
		else
			rbdl_log("creating image %s: journaling and mirroring "
				 "are not supported by librbdlite", name);
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
int rbdl_op_create(rados_ioctx_t io, const char *name, uint64_t size,
		   struct rbdl_opts *opts, bool *need_real)
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

	r = rbdl_ioctx_clone(io, &cio, &ns);
	if (r < 0)
		goto out;

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
		 * (without storing the order back); with it, the system's
		 * librbd makes the image (librbdlite writes no format 1
		 * headers). */
		r = -EINVAL;
		if (getenv("RBD_FORCE_ALLOW_V1")) {
			r = -EOPNOTSUPP;
			if (need_real)
				*need_real = true;
		}
		goto out_io;
	}
	r = create_request(cio, name, size, opts, &cf, ns, NULL, need_real);
	rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_ORDER, order);
out_io:
	rados_ioctx_destroy(cio);
	free(ns);
out:
	rbdl_conf_free(&cf);
	return r;
}

/* Create with *order as RBD_IMAGE_OPTION_ORDER (0: the default) and store
 * the order used back into *order; consumes o. */
int rbdl_op_create_order(rados_ioctx_t io, const char *name, uint64_t size,
			 struct rbdl_opts *o, int *order, bool *need_real)
{
	uint64_t ord;
	int r;

	rbdl_opts_set_u64(o, RBD_IMAGE_OPTION_ORDER, (uint64_t)(int64_t)*order);
	r = rbdl_op_create(io, name, size, o, need_real);
	if (rbdl_opts_get_u64(o, RBD_IMAGE_OPTION_ORDER, &ord) == 0)
		*order = (int)ord;
	rbdl_opts_clear(o);
	return r;
}

/* librbd::create(io, name, size, old_format = false, features, order,
 * stripe_unit, stripe_count): explicit format 2, features and layout. */
int rbdl_op_create_explicit(rados_ioctx_t io, const char *name, uint64_t size,
			    uint64_t features, int *order, uint64_t su,
			    uint64_t sc, bool *need_real)
{
	struct rbdl_opts o;

	if (!order)
		return -EINVAL;
	rbdl_opts_init(&o);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_FORMAT, 2);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_FEATURES, features);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_UNIT, su);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_COUNT, sc);
	return rbdl_op_create_order(io, name, size, &o, order, need_real);
}

/* util::generate_image_id for the cluster of io, into id (cap bytes). */
void rbdl_op_generate_id(rados_ioctx_t io, char *id, size_t cap)
{
	generate_id(rados_ioctx_get_cluster(io), id, cap);
}

/* image::CreateRequest alone (no name checks of librbd::create, no
 * format handling), as CloneRequest runs it: image id (at most 14
 * characters) chosen by the caller, cf the configuration with io's pool
 * overrides. */
int rbdl_op_create_request(rados_ioctx_t io, const char *name, const char *id,
			   uint64_t size, const struct rbdl_opts *opts,
			   const struct rbdl_conf *cf, bool *need_real)
{
	char *ns;
	int r = rbdl_ioctx_namespace(io, &ns);

	if (r < 0)
		return r;
	r = create_request(io, name, size, opts, cf, ns, id, need_real);
	free(ns);
	return r;
}
