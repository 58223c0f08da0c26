/*
 * clone.c - making clones and listing children, as librbd 16.2's
 * librbd::clone + image::CloneRequest (with AttachParentRequest,
 * AttachChildRequest and deep_copy::MetadataCopyRequest) and
 * api::Image::list_descendants do it.
 *
 * A clone is a format-2 image created by CreateRequest with the parent's
 * features, order and striping unless the options say otherwise, whose
 * header names its parent (parent_attach: pool, namespace, image id,
 * snapshot id, overlap = the parent's size at the snapshot), and which
 * the parent knows of: clone v1 in rbd_children of the clone's pool
 * (add_child; the parent snapshot must be protected), clone v2 on the
 * parent's header (child_attach, which also counts the snapshot's
 * children and sets the parent's clone-parent op feature; the child gets
 * the clone-child op feature).  The parent's image metadata is copied.
 *
 * Threading: synchronous and self-contained: private I/O contexts, no
 * open image changed; any number of threads.  Ownership: the caller's
 * I/O contexts and options are only read.
 */
#include "config.h"

#include "clone.h"
#include "pool.h"

#include "core/internal.h"
#include "image/conf.h"
#include "image/load.h"
#include "image/refresh.h"
#include "image/state.h"
#include "proto/cls_rbd.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "proto/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/features.h"
#include "rbd/librbd.h"

#define IN_MAX (3 * RBDL_OID_MAX + 64)
#define CEPH_RELEASE_MIMIC 13
#define METADATA_PAGE 128		/* MetadataCopyRequest's batch */

/* ---- options ---------------------------------------------------------- */

/* A deep copy of an option set (librbd's CloneRequest works on a copy). */
static int opts_copy(struct rbdl_opts *dst, const struct rbdl_opts *src)
{
	rbdl_opts_init(dst);
	for (int i = 0; i < RBDL_OPT_COUNT; i++) {
		const char *s;
		uint64_t v;
		int r = 0;

		if (rbdl_opts_get_u64(src, i, &v) == 0)
			r = rbdl_opts_set_u64(dst, i, v);
		else if (rbdl_opts_get_str(src, i, &s) == 0)
			r = rbdl_opts_set_str(dst, i, s);
		if (r < 0) {
			rbdl_opts_clear(dst);
			return r;
		}
	}
	return 0;
}

/* ---- the parent at its snapshot (what CloneRequest's open gives) ---------- */

struct parent_snap {
	rados_ioctx_t io;	/* the parent's pool and namespace */
	char *ns;
	char *id;
	char oid[RBDL_OID_MAX];
	struct rbdl_header h;
	uint64_t snap_id;
	uint64_t size;		/* at the snapshot */
	uint64_t su, sc;
};

static void parent_snap_free(struct parent_snap *p)
{
	rbdl_header_free(&p->h);
	if (p->io)
		rados_ioctx_destroy(p->io);
	free(p->ns);
	free(p->id);
}

/* get_protection_status of snapshot snap_id: *prot true if PROTECTED. */
static int snap_protected(rados_ioctx_t io, const char *oid, uint64_t snap_id,
			  bool *prot)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read_arg_u64(io, oid, "get_protection_status", snap_id,
				      &out, &outlen);

	if (r < 0)
		return r;
	if (outlen < 1) {
		rados_buffer_free(out);
		return -EBADMSG;
	}
	*prot = (uint8_t)out[0] == 2;	/* RBD_PROTECTION_STATUS_PROTECTED */
	rados_buffer_free(out);
	return 0;
}

/* Open (in librbd's terms) image id of io at the user snapshot snap_name,
 * or (snap_name NULL) at snapshot snap_id of any namespace. */
static int parent_open(struct parent_snap *p, const char *snap_name,
		       uint64_t snap_id)
{
	struct rbdl_snap_info si;
	int r;

	rbdl_oid_header(p->oid, sizeof(p->oid), p->id);
	r = rbdl_read_header(p->io, p->oid, true, &p->h);
	if (r < 0)
		return r;
	if (p->h.incompat & ~(uint64_t)RBD_FEATURES_ALL)
		return -ENOSYS;
	if (snap_name ? !snap_name[0] : snap_id == RBDL_NOSNAP) {
		/* "" opens HEAD, which validate_parent refuses */
		p->snap_id = RBDL_NOSNAP;
		return 0;
	}
	if (snap_name)
		r = rbdl_find_user_snap(p->io, p->oid, p->h.snaps, p->h.nsnaps,
					snap_name, &si);
	else
		r = rbdl_read_snapshot_info(p->io, p->oid, snap_id, &si);
	if (r < 0)
		return r;
	p->snap_id = si.id;
	p->size = si.image_size;
	rbdl_snap_info_free(&si);
	p->su = p->h.su;
	p->sc = p->h.sc;
	if (!p->su || !p->sc) {
		p->su = 1ULL << p->h.order;
		p->sc = 1;
	}
	return 0;
}

/* ImageCtx::operations_disabled: op features librbd does not know. */
static int parent_ops_disabled(struct parent_snap *p, bool *disabled)
{
	uint64_t opf = 0;
	int r;

	*disabled = false;
	if (!(p->h.features & RBD_FEATURE_OPERATIONS))
		return 0;
	r = rbdl_cls_read_u64(p->io, p->oid, "op_features_get", NULL, 0, &opf);
	if (r < 0)
		return r;
	*disabled = (opf & ~(uint64_t)RBD_OPERATION_FEATURES_ALL) != 0;
	return 0;
}

/* ---- the child's links ------------------------------------------------------ */

/* parent_attach on the child's header: ParentImageSpec, overlap,
 * reattach = false. */
static int attach_parent(rados_ioctx_t cio, const char *coid,
			 const struct parent_snap *p)
{
	uint8_t in[IN_MAX];
	struct rbdl_enc e;
	size_t t;

	rbdl_enc_init(&e, in, sizeof(in));
	t = rbdl_enc_struct_start(&e, 1, 1);
	rbdl_enc_u64(&e, (uint64_t)rados_ioctx_get_id(p->io));
	rbdl_enc_str(&e, p->ns);
	rbdl_enc_str(&e, p->id);
	rbdl_enc_u64(&e, p->snap_id);
	rbdl_enc_struct_end(&e, t);
	rbdl_enc_u64(&e, p->size);
	rbdl_enc_u8(&e, 0);
	if (rbdl_enc_len(&e) < 0)
		return (int)rbdl_enc_len(&e);
	return rbdl_cls_write(cio, coid, "rbd", "parent_attach", in,
			      (size_t)rbdl_enc_len(&e));
}

/* AttachChildRequest. */
static int attach_child(rados_ioctx_t cio, const char *coid, const char *cid,
			const char *cns, struct parent_snap *p, int format)
{
	uint8_t in[IN_MAX];
	long n;
	int r;

	if (format == 1) {
		bool prot = false;

		/* add_child has the layout of remove_child */
		n = rbdl_encode_remove_child(in, sizeof(in),
					     rados_ioctx_get_id(p->io), p->id,
					     p->snap_id, cid);
		if (n < 0)
			return (int)n;
		r = rbdl_cls_write(cio, RBDL_OID_CHILDREN, "rbd", "add_child",
				   in, (size_t)n);
		if (r < 0)
			return r;
		/* v1_refresh: the snapshot must still be protected */
		r = snap_protected(p->io, p->oid, p->snap_id, &prot);
		if (r < 0 || !prot)
			return -EINVAL;
		return 0;
	}
	rbdl_put_le64(in, RBD_OPERATION_FEATURE_CLONE_CHILD);
	rbdl_put_le64(in + 8, RBD_OPERATION_FEATURE_CLONE_CHILD);
	r = rbdl_cls_write(cio, coid, "rbd", "op_features_set", in, 16);
	if (r < 0)
		return r;
	n = rbdl_encode_child_detach(in, sizeof(in), p->snap_id,
				     rados_ioctx_get_id(cio), cid, cns);
	if (n < 0)
		return (int)n;
	return rbdl_cls_write(p->io, p->oid, "rbd", "child_attach", in,
			      (size_t)n);
}

/* MetadataCopyRequest: metadata_list pages of the parent's header go to
 * the child's header as metadata_set (both are map<string, bufferlist>,
 * so a page is passed on as it came). */
int rbdl_op_copy_metadata(rados_ioctx_t sio, const char *soid,
			  rados_ioctx_t dio, const char *doid)
{
	char *last = strdup("");
	int r = 0;

	if (!last)
		return -ENOMEM;
	for (;;) {
		uint8_t in[RBDL_OID_MAX + 32];
		struct rbdl_dir_entry *v;
		uint32_t cnt;
		char *out;
		size_t outlen;
		long n = rbdl_encode_list_start(in, sizeof(in), last,
						METADATA_PAGE);

		if (n < 0) {
			r = (int)n;
			break;
		}
		r = rbdl_cls_read(sio, soid, "rbd", "metadata_list", in,
				  (size_t)n, &out, &outlen);
		if (r < 0)
			break;
		r = rbdl_decode_dir_list(out, outlen, &v, &cnt);
		if (r < 0) {
			rados_buffer_free(out);
			break;
		}
		if (cnt == 0) {
			free(v);
			rados_buffer_free(out);
			break;
		}
		free(last);
		last = strdup(v[cnt - 1].name);
		rbdl_dir_entries_free(v, cnt);
		r = rbdl_cls_write(dio, doid, "rbd", "metadata_set", out,
				   outlen);
		rados_buffer_free(out);
		if (r < 0 || cnt < METADATA_PAGE)
			break;
		if (!last) {
			r = -ENOMEM;
			break;
		}
	}
	free(last);
	return r;
}

/* ---- CloneRequest -------------------------------------------------------------- */

/* validate_options: the clone format (CLONE_FORMAT option, else
 * rbd_default_clone_format: "1", "auto" -> v2 when the cluster requires
 * Mimic clients or newer, anything else 2). */
static int clone_format(const struct rbdl_opts *o, const struct rbdl_conf *cf,
			rados_ioctx_t cio, uint64_t *fmt)
{
	char buf[32];

	*fmt = 2;
	if (rbdl_opts_get_u64(o, RBD_IMAGE_OPTION_CLONE_FORMAT, fmt) == 0)
		return 0;
	rbdl_conf_get(cf, true, "rbd_default_clone_format", buf, sizeof(buf));
	if (!strcmp(buf, "1")) {
		*fmt = 1;
	} else if (!strcmp(buf, "auto")) {
		int8_t min = 0, req = 0;
		int r = rados_get_min_compatible_client(
			rados_ioctx_get_cluster(cio), &min, &req);

		if (r < 0)
			return r;
		if ((min > req ? min : req) < CEPH_RELEASE_MIMIC)
			*fmt = 1;
	}
	return 0;
}

/* CloneRequest from parent p (io, ns and id set; freed here) at user
 * snapshot p_snap, or (p_snap NULL) at snapshot p_snap_id. */
static int clone_from(struct parent_snap *p_, const char *p_snap,
		      uint64_t p_snap_id, rados_ioctx_t c_io,
		      const char *c_name, const struct rbdl_opts *opts,
		      bool *need_real)
{
	struct parent_snap p = *p_;
	struct rbdl_opts o;
	struct rbdl_conf cf;
	char cid[32], coid[RBDL_OID_MAX], oid[RBDL_OID_MAX];
	char *cns = NULL;
	uint64_t v, format = 0, features = 0, fmt;
	bool use_p_features = true, disabled, prot = false;
	rados_ioctx_t cio = NULL;
	int r;

	r = rbdl_ioctx_clone(c_io, &cio, &cns);
	if (r < 0) {
		parent_snap_free(&p);
		return r;
	}
	rbdl_op_generate_id(cio, cid, sizeof(cid));
	rbdl_conf_load(&cf, cio, NULL);
	r = opts_copy(&o, opts);
	if (r < 0)
		goto out_conf;
	if (rbdl_opts_get_u64(&o, RBD_IMAGE_OPTION_FORMAT, &format))
		rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_FORMAT, format = 2);

	/* validate_options */
	if (format < 2) {
		r = -EINVAL;
		goto out;
	}
	if (rbdl_opts_get_u64(&o, RBD_IMAGE_OPTION_FEATURES, &features) == 0) {
		if (features & ~(uint64_t)RBD_FEATURES_ALL) {
			r = -ENOSYS;
			goto out;
		}
		use_p_features = false;
	}
	r = clone_format(&o, &cf, cio, &fmt);
	if (r < 0)
		goto out;
	if (fmt == 1 && strcmp(p.ns, cns)) {
		r = -EXDEV;
		goto out;
	}

	/* open_parent, validate_parent */
	r = parent_open(&p, p_snap, p_snap_id);
	if (r < 0)
		goto out;
	r = parent_ops_disabled(&p, &disabled);
	if (r == 0 && disabled)
		r = -EROFS;
	if (r == 0 && p.snap_id == RBDL_NOSNAP)
		r = -EINVAL;	/* image to be cloned must be a snapshot */
	if (r < 0)
		goto out;
	if (!(p.h.features & RBD_FEATURE_LAYERING)) {
		r = -ENOSYS;
		goto out;
	}
	if (use_p_features)
		features = p.h.features & ~(uint64_t)RBD_FEATURES_IMPLICIT_ENABLE;
	r = snap_protected(p.io, p.oid, p.snap_id, &prot);
	if (r < 0)
		goto out;
	if (fmt == 1 && !prot) {
		r = -EINVAL;
		goto out;
	}

	/* validate_child */
	if (!(features & RBD_FEATURE_LAYERING)) {
		r = -ENOSYS;
		goto out;
	}
	{
		uint64_t psize;
		time_t pmtime;

		rbdl_oid_v1_header(oid, sizeof(oid), c_name);
		r = rados_stat(cio, oid, &psize, &pmtime);
		if (r != -ENOENT)
			goto out;	/* librbd: a format-1 name gives 0 too */
	}

	/* create_child */
	if (rbdl_opts_get_u64(&o, RBD_IMAGE_OPTION_ORDER, &v))
		rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_ORDER, p.h.order);
	rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_FEATURES, features);
	if (rbdl_opts_get_u64(&o, RBD_IMAGE_OPTION_STRIPE_UNIT, &v))
		rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_UNIT, p.su);
	if (rbdl_opts_get_u64(&o, RBD_IMAGE_OPTION_STRIPE_COUNT, &v))
		rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_COUNT, p.sc);
	r = rbdl_op_create_request(cio, c_name, cid, p.size, &o, &cf,
				   need_real);
	if (r < 0)
		goto out;

	/* attach_parent, attach_child, copy_metadata; undo on failure */
	rbdl_oid_header(coid, sizeof(coid), cid);
	r = attach_parent(cio, coid, &p);
	if (r == 0)
		r = attach_child(cio, coid, cid, cns, &p, (int)fmt);
	if (r == 0)
		r = rbdl_op_copy_metadata(p.io, p.oid, cio, coid);
	if (r < 0) {
		int q = rbdl_op_remove(cio, c_name);

		if (q < 0)
			rbdl_err("clone %s: removing the failed clone: %d",
				 c_name, q);
	}
out:
	rbdl_opts_clear(&o);
out_conf:
	rbdl_conf_free(&cf);
	rados_ioctx_destroy(cio);
	free(cns);
	parent_snap_free(&p);
	return r;
}

int rbdl_op_clone(rados_ioctx_t p_io, const char *p_name, const char *p_snap,
		  rados_ioctx_t c_io, const char *c_name,
		  const struct rbdl_opts *opts, bool *need_real)
{
	struct parent_snap p;
	char *out;
	size_t outlen;
	uint64_t v;
	int r;

	if (!p_io || !p_name || !c_io || !c_name || !opts)
		return -EINVAL;
	if (!p_snap)
		return -EINVAL;
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FLATTEN, &v) == 0)
		return -EINVAL;
	if (strlen(p_name) > RBDL_NAME_MAX || strlen(c_name) > RBDL_NAME_MAX)
		return -ENAMETOOLONG;

	memset(&p, 0, sizeof(p));
	r = rbdl_ioctx_clone(p_io, &p.io, &p.ns);
	if (r < 0)
		return r;
	{
		uint8_t in[RBDL_OID_MAX];
		long n = rbdl_encode_string(in, sizeof(in), p_name);

		r = n < 0 ? (int)n
			  : rbdl_cls_read(p.io, RBDL_OID_DIRECTORY, "rbd",
					  "dir_get_id", in, (size_t)n, &out,
					  &outlen);
		if (r == 0) {
			r = rbdl_decode_string(out, outlen, &p.id);
			rados_buffer_free(out);
		}
		if (r < 0) {
			parent_snap_free(&p);
			return r;
		}
	}
	return clone_from(&p, p_snap, 0, c_io, c_name, opts, need_real);
}

int rbdl_op_clone_id(rados_ioctx_t p_io, const char *p_id, uint64_t p_snap_id,
		     rados_ioctx_t c_io, const char *c_name,
		     const struct rbdl_opts *opts)
{
	struct parent_snap p;
	int r;

	if (!p_io || !p_id || !c_io || !c_name || !opts)
		return -EINVAL;
	if (strlen(c_name) > RBDL_NAME_MAX)
		return -ENAMETOOLONG;
	memset(&p, 0, sizeof(p));
	r = rbdl_ioctx_clone(p_io, &p.io, &p.ns);
	if (r < 0)
		return r;
	p.id = strdup(p_id);
	if (!p.id) {
		parent_snap_free(&p);
		return -ENOMEM;
	}
	return clone_from(&p, NULL, p_snap_id, c_io, c_name, opts, NULL);
}

/* ---- children and descendants ------------------------------------------------ */

void rbdl_child_list_free(struct rbdl_child_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].pool_name);
		free(l->v[i].pool_namespace);
		free(l->v[i].image_id);
		free(l->v[i].image_name);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int child_add(struct rbdl_child_list *l, int64_t pool, const char *ns,
		     const char *id)
{
	struct rbdl_child *c;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct rbdl_child *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	c = &l->v[l->n];
	memset(c, 0, sizeof(*c));
	c->pool_id = pool;
	c->pool_namespace = strdup(ns);
	c->image_id = strdup(id);
	if (!c->pool_namespace || !c->image_id) {
		free(c->pool_namespace);
		free(c->image_id);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

/* The image whose children are listed: its pool, namespace, id, layering
 * and snapshots. */
struct lparent {
	rados_ioctx_t io;
	const char *ns;
	const char *id;
	uint64_t features;
};

static int list_spec(rados_t cl, const struct lparent *ip, uint64_t snap_id,
		     int level, struct rbdl_child_list *l);

/* list_descendants(io_ctx, image_id, ...): the image opened read-only at
 * HEAD, every snapshot of it.  A missing image lists nothing. */
static int list_image(rados_t cl, int64_t pool, const char *ns,
		      const char *id, int level, struct rbdl_child_list *l)
{
	struct rbdl_header h;
	struct lparent ip;
	char oid[RBDL_OID_MAX];
	rados_ioctx_t io;
	int r = rbdl_ioctx_dup(cl, pool, ns, &io);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	rbdl_oid_header(oid, sizeof(oid), id);
	r = rbdl_read_header(io, oid, true, &h);
	if (r == 0) {
		ip.io = io;
		ip.ns = ns;
		ip.id = id;
		ip.features = h.features;
		for (uint32_t i = 0; i < h.nsnaps && r == 0; i++)
			r = list_spec(cl, &ip, h.snaps[i], level, l);
	} else if (r == -ENOENT) {
		r = 0;
	}
	rbdl_header_free(&h);
	rados_ioctx_destroy(io);
	return r;
}

/* get_children reply: set<string>. */
static int decode_id_set(const void *buf, size_t len, char ***ids,
			 uint32_t *n)
{
	struct rbdl_dec d;
	uint32_t cnt;

	rbdl_dec_init(&d, buf, len);
	cnt = rbdl_dec_u32(&d);
	*ids = NULL;
	*n = 0;
	if (d.err)
		return -EBADMSG;
	if (cnt > len)
		return -EBADMSG;
	*ids = calloc(cnt ? cnt : 1, sizeof(char *));
	if (!*ids)
		return -ENOMEM;
	for (uint32_t i = 0; i < cnt; i++) {
		(*ids)[i] = rbdl_dec_strdup(&d);
		if (!(*ids)[i])
			break;
		*n = i + 1;
	}
	return d.err ? -EBADMSG : 0;
}

static void free_ids(char **ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

/* v1 children of (parent pool, id, snap) in one pool's rbd_children. */
static int list_v1_pool(rados_t cl, const struct lparent *ip, int64_t pool,
			uint64_t snap_id, int level, struct rbdl_child_list *l)
{
	uint8_t in[IN_MAX];
	struct rbdl_enc e;
	rados_ioctx_t io;
	char *out, **ids = NULL;
	size_t outlen;
	uint32_t n = 0;
	int r = rbdl_ioctx_dup(cl, pool, ip->ns, &io);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_u64(&e, (uint64_t)rados_ioctx_get_id(ip->io));
	rbdl_enc_str(&e, ip->id);
	rbdl_enc_u64(&e, snap_id);
	r = rbdl_enc_len(&e) < 0
		    ? (int)rbdl_enc_len(&e)
		    : rbdl_cls_read(io, RBDL_OID_CHILDREN, "rbd", "get_children",
				    in, (size_t)rbdl_enc_len(&e), &out,
				    &outlen);
	rados_ioctx_destroy(io);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = decode_id_set(out, outlen, &ids, &n);
	rados_buffer_free(out);
	for (uint32_t i = 0; i < n && r == 0; i++) {
		r = child_add(l, pool, ip->ns, ids[i]);
		if (r == 0)
			r = list_image(cl, pool, ip->ns, ids[i], level, l);
	}
	free_ids(ids, n);
	return r;
}

/* children_list reply: set<ChildImageSpec>. */
static int list_v2(rados_t cl, const struct lparent *ip, uint64_t snap_id,
		   int level, struct rbdl_child_list *l)
{
	char oid[RBDL_OID_MAX];
	struct rbdl_child_spec *v;
	uint32_t cnt;
	int r;

	rbdl_oid_header(oid, sizeof(oid), ip->id);
	r = rbdl_read_children(ip->io, oid, snap_id, &v, &cnt);
	if (r == -EOPNOTSUPP)
		return 0;	/* an OSD without clone v2 */
	for (uint32_t i = 0; i < cnt && r == 0; i++) {
		r = child_add(l, v[i].pool_id, v[i].pool_ns, v[i].image_id);
		if (r == 0 && level != 0)
			r = list_image(cl, v[i].pool_id, v[i].pool_ns,
				       v[i].image_id, level, l);
	}
	rbdl_child_specs_free(v, cnt);
	return r;
}

/* list_descendants(ictx, parent_spec, max_level): level -1 means no
 * limit, else the generations still to list (1: children only); the
 * v1 and v2 helpers get the level of the children's own children. */
static int list_spec(rados_t cl, const struct lparent *ip, uint64_t snap_id,
		     int level, struct rbdl_child_list *l)
{
	char *names = NULL;
	size_t cap = 4096;
	int r;

	if (level == 0)
		return 0;
	if (level > 0)
		level--;
	if (!(ip->features & RBD_FEATURE_LAYERING))
		return 0;
	/* rados_pool_list: NUL-separated names */
	for (;;) {
		names = malloc(cap);
		if (!names)
			return -ENOMEM;
		r = rados_pool_list(cl, names, cap);
		if (r < 0) {
			free(names);
			return r;
		}
		if ((size_t)r <= cap)
			break;
		cap = (size_t)r;
		free(names);
	}
	for (const char *nm = names; *nm && r >= 0; nm += strlen(nm) + 1) {
		int64_t pool = rados_pool_lookup(cl, nm), base;

		if (pool < 0)
			continue;	/* no longer exists */
		r = rados_pool_get_base_tier(cl, pool, &base);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		if (base != pool)
			continue;	/* a cache tier */
		r = list_v1_pool(cl, ip, pool, snap_id, level, l);
	}
	free(names);
	if (r < 0)
		return r;
	return list_v2(cl, ip, snap_id, level, l);
}

/* One pool + namespace's id -> (name, trash) map: the directory, then
 * the trash (source REMOVING: not "in the trash" for the user). */
struct name_map {
	struct rbdl_dir_entry *dir, *trash;
	uint32_t ndir, ntrash;
};

static void name_map_free(struct name_map *m)
{
	for (uint32_t i = 0; i < m->ndir; i++) {
		free(m->dir[i].name);
		free(m->dir[i].id);
	}
	free(m->dir);
	for (uint32_t i = 0; i < m->ntrash; i++) {
		free(m->trash[i].name);
		free(m->trash[i].id);
	}
	free(m->trash);
	memset(m, 0, sizeof(*m));
}

/* All pages of dir_list (trash false) or trash_list (true) into *v. */
static int list_all(rados_ioctx_t io, bool trash, struct rbdl_dir_entry **v,
		    uint32_t *n)
{
	struct rbdl_img_list l = { 0 };
	int r = rbdl_list_dir_all(io, trash, &l);

	/* On failure too: the caller frees what was listed. */
	*v = l.v;
	*n = (uint32_t)l.n;
	return r;
}

static int name_map_load(rados_ioctx_t io, struct name_map *m)
{
	int r = list_all(io, false, &m->dir, &m->ndir);

	if (r == 0)
		r = list_all(io, true, &m->trash, &m->ntrash);
	return r;
}

/* The directory wins over the trash (std::map::insert keeps the first). */
static int name_map_find(const struct name_map *m, const char *id,
			 const char **name, bool *trash)
{
	for (uint32_t i = 0; i < m->ndir; i++)
		if (!strcmp(m->dir[i].id, id)) {
			*name = m->dir[i].name;
			*trash = false;
			return 0;
		}
	for (uint32_t i = 0; i < m->ntrash; i++)
		if (!strcmp(m->trash[i].id, id)) {
			*name = m->trash[i].name;
			*trash = m->trash[i].source != 3; /* REMOVING */
			return 0;
		}
	return -ENOENT;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_by_pool(const void *pa, const void *pb)
{
	const struct rbdl_child *a = pa, *b = pb;

	if (a->pool_id != b->pool_id)
		return a->pool_id < b->pool_id ? -1 : 1;
	return cmp_str(a->pool_namespace, b->pool_namespace);
}

static int cmp_final(const void *pa, const void *pb)
{
	const struct rbdl_child *a = pa, *b = pb;
	int c = cmp_str(a->pool_name, b->pool_name);

	if (c)
		return c;
	if (a->pool_id != b->pool_id)
		return a->pool_id < b->pool_id ? -1 : 1;
	c = cmp_str(a->pool_namespace, b->pool_namespace);
	if (c)
		return c;
	c = cmp_str(a->image_name, b->image_name);
	if (c)
		return c;
	return cmp_str(a->image_id, b->image_id);
}

/* Names of every listed image, batched by pool and namespace. */
static int resolve_names(rados_t cl, struct rbdl_child_list *l)
{
	struct name_map m = { 0 };
	rados_ioctx_t io = NULL;
	int64_t cur_pool = -1;
	const char *cur_ns = NULL;
	char pname[256];
	int r = 0;

	if (l->n > 1)	/* l->v is NULL while nothing was listed */
		qsort(l->v, l->n, sizeof(*l->v), cmp_by_pool);
	for (size_t i = 0; i < l->n && r == 0; i++) {
		struct rbdl_child *c = &l->v[i];
		const char *name;
		bool trash;

		if (!io || cur_pool != c->pool_id ||
		    strcmp(cur_ns, c->pool_namespace)) {
			if (io)
				rados_ioctx_destroy(io);
			io = NULL;
			name_map_free(&m);
			r = rbdl_ioctx_dup(cl, c->pool_id, c->pool_namespace,
					   &io);
			if (r == -ENOENT) {
				io = NULL;
				r = 0;
				c->pool_name = strdup("");
				c->image_name = strdup("");
				continue;
			}
			if (r < 0)
				break;
			cur_pool = c->pool_id;
			cur_ns = c->pool_namespace;
			r = name_map_load(io, &m);
			if (r < 0)
				break;
			pname[0] = '\0';
			rados_ioctx_get_pool_name(io, pname, sizeof(pname));
		}
		r = name_map_find(&m, c->image_id, &name, &trash);
		if (r < 0)
			break;
		c->pool_name = strdup(pname);
		c->image_name = strdup(name);
		c->trash = trash;
		if (!c->pool_name || !c->image_name)
			r = -ENOMEM;
	}
	name_map_free(&m);
	if (io)
		rados_ioctx_destroy(io);
	if (r == 0 && l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_final);
	return r;
}

/* The descendants of snapshots snaps[0..n) of img, names resolved. */
static int list_snaps(struct rbdl_image *img, const uint64_t *snaps,
		      uint32_t n, int max_level, struct rbdl_child_list *l)
{
	struct lparent ip;
	char *ns;
	int r = rbdl_ioctx_namespace(img->md_io, &ns);

	if (r < 0)
		return r;
	ip.io = img->md_io;
	ip.ns = ns;
	ip.id = img->id;
	ip.features = atomic_load(&img->features);
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = list_spec(img->cluster, &ip, snaps[i], max_level, l);
	free(ns);
	if (r == 0)
		r = resolve_names(img->cluster, l);
	return r;
}

int rbdl_op_list_snap_children(struct rbdl_image *img, uint64_t snap_id,
			       struct rbdl_child_list *l)
{
	int r = rbdl_image_maybe_refresh(img);

	return r < 0 ? r : list_snaps(img, &snap_id, 1, 1, l);
}

int rbdl_op_list_descendants(struct rbdl_image *img, int max_level,
			     struct rbdl_child_list *l)
{
	uint64_t *snaps = NULL;
	uint32_t n;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	pthread_mutex_lock(&img->refresh_lock);
	if (img->snap_id != RBDL_NOSNAP) {
		n = 1;
		snaps = malloc(sizeof(*snaps));
		if (snaps)
			snaps[0] = img->snap_id;
		pthread_mutex_unlock(&img->refresh_lock);
	} else {
		pthread_mutex_unlock(&img->refresh_lock);
		snaps = rbdl_image_snap_ids(img, &n);
	}
	if (!snaps)
		return -ENOMEM;
	r = list_snaps(img, snaps, n, max_level, l);
	free(snaps);
	return r;
}
