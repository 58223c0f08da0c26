/*
 * rados.c - synchronous RADOS calls of the control path (rados.h).
 *
 * Threading and ownership: see rados.h.  Nothing here keeps state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rados.h"
#include "wire.h"

#include "rbd/features.h"

/* The lock librbd and krbd take on a header and on an object map. */
#define RBDL_LOCK_NAME "rbd_lock"

/* ---- cls method calls ---------------------------------------------------- */

int rbdl_cls_write(rados_ioctx_t io, const char *oid, const char *cls,
		   const char *method, const void *in, size_t inlen)
{
	rados_write_op_t op = rados_create_write_op();
	int prval = 0, r;

	if (!op)
		return -ENOMEM;
	rados_write_op_exec(op, cls, method, in, inlen, &prval);
	r = rados_write_op_operate(op, io, oid, NULL, 0);
	rados_release_write_op(op);
	if (r >= 0 && prval < 0)
		r = prval;
	return r < 0 ? r : 0;
}

int rbdl_cls_read(rados_ioctx_t io, const char *oid, const char *cls,
		  const char *method, const void *in, size_t inlen, char **out,
		  size_t *outlen)
{
	rados_read_op_t op = rados_create_read_op();
	int prval = 0, r;

	if (!op)
		return -ENOMEM;
	*out = NULL;
	*outlen = 0;
	rados_read_op_exec(op, cls, method, in, inlen, out, outlen, &prval);
	r = rados_read_op_operate(op, io, oid, 0);
	rados_release_read_op(op);
	if (r >= 0 && prval < 0)
		r = prval;
	if (r < 0 && *out) {
		rados_buffer_free(*out);
		*out = NULL;
	}
	return r < 0 ? r : 0;
}

int rbdl_cls_read_arg_u64(rados_ioctx_t io, const char *oid,
			  const char *method, uint64_t arg, char **out,
			  size_t *outlen)
{
	uint8_t in[8];

	rbdl_put_le64(in, arg);
	return rbdl_cls_read(io, oid, "rbd", method, in, sizeof(in), out, outlen);
}

int rbdl_ioctx_dup(rados_t cluster, int64_t pool, const char *ns,
		   rados_ioctx_t *out)
{
	int r = rados_ioctx_create2(cluster, pool, out);

	if (r < 0)
		return r;
	rados_ioctx_set_namespace(*out, ns);
	return 0;
}

int rbdl_ioctx_namespace(rados_ioctx_t io, char **out)
{
	size_t cap = 128;

	for (;;) {
		char *buf = malloc(cap);

		if (!buf)
			return -ENOMEM;
		int r = rados_ioctx_get_namespace(io, buf, cap);

		if (r >= 0 && (size_t)r < cap) {
			buf[r] = '\0';
			*out = buf;
			return 0;
		}
		free(buf);
		if (r != -ERANGE && r < 0)
			return r;
		cap *= 4;
		if (cap > 1 << 20)
			return -ERANGE;
	}
}

/* The snapshot context, sorted as the OSD wants it (descending). */
int rbdl_read_snapcontext(rados_ioctx_t io, const char *oid, uint64_t *seq,
			  uint64_t **snaps, uint32_t *n)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read(io, oid, "rbd", "get_snapcontext", NULL, 0, &out,
			 &outlen);

	if (r < 0)
		return r;
	r = rbdl_decode_snapcontext(out, outlen, seq, snaps, n);
	rados_buffer_free(out);
	return r;
}

int rbdl_cls_read_u64(rados_ioctx_t io, const char *oid, const char *method,
		      const void *in, size_t inlen, uint64_t *v)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read(io, oid, "rbd", method, in, inlen, &out,
			      &outlen);

	if (r < 0)
		return r;
	r = rbdl_decode_u64(out, outlen, v);
	rados_buffer_free(out);
	return r;
}

int rbdl_read_stripe(rados_ioctx_t io, const char *oid, uint64_t features,
		     uint64_t *su, uint64_t *sc)
{
	char *out;
	size_t outlen;
	int r;

	if (!(features & RBD_FEATURE_STRIPINGV2))
		return 0;
	r = rbdl_cls_read(io, oid, "rbd", "get_stripe_unit_count", NULL, 0,
			  &out, &outlen);
	if (r == -ENOEXEC || r == -EINVAL)	/* old OSD: default layout */
		return 0;
	if (r < 0)
		return r;
	r = rbdl_decode_stripe(out, outlen, su, sc);
	rados_buffer_free(out);
	return r;
}

int rbdl_read_snapshot_info(rados_ioctx_t io, const char *oid, uint64_t id,
			    struct rbdl_snap_info *si)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read_arg_u64(io, oid, "snapshot_get", id, &out,
				      &outlen);

	if (r < 0)
		return r;
	r = rbdl_decode_snapshot_info(out, outlen, si);
	rados_buffer_free(out);
	return r;
}

int rbdl_read_children(rados_ioctx_t io, const char *oid, uint64_t snap_id,
		       struct rbdl_child_spec **v, uint32_t *n)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read_arg_u64(io, oid, "children_list", snap_id, &out,
				      &outlen);

	*v = NULL;
	*n = 0;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = rbdl_decode_child_specs(out, outlen, v, n);
	rados_buffer_free(out);
	return r;
}

int rbdl_cls_read_u64_at(rados_ioctx_t io, const char *oid,
			 const char *method, uint64_t snap, uint64_t *v)
{
	uint8_t in[8];

	rbdl_put_le64(in, snap);
	return rbdl_cls_read_u64(io, oid, method, in, sizeof(in), v);
}

int rbdl_read_size(rados_ioctx_t io, const char *oid, uint64_t snap,
		   uint8_t *order, uint64_t *size)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read_arg_u64(io, oid, "get_size", snap, &out, &outlen);

	if (r < 0)
		return r;
	r = rbdl_decode_get_size(out, outlen, order, size);
	rados_buffer_free(out);
	return r;
}

int rbdl_read_features(rados_ioctx_t io, const char *oid, bool read_only,
		       uint64_t *features, uint64_t *incompat)
{
	uint8_t in[9];
	char *out;
	size_t outlen;
	int r;

	rbdl_put_le64(in, RBDL_NOSNAP);
	in[8] = read_only;
	r = rbdl_cls_read(io, oid, "rbd", "get_features", in, sizeof(in), &out,
			  &outlen);
	if (r < 0)
		return r;
	r = rbdl_decode_get_features(out, outlen, features, incompat);
	rados_buffer_free(out);
	return r;
}

int rbdl_read_header(rados_ioctx_t io, const char *oid, bool read_only,
		     struct rbdl_header *h)
{
	char *out;
	size_t outlen;
	uint64_t dp;
	int r;

	memset(h, 0, sizeof(*h));
	h->data_pool = -1;
	r = rbdl_read_size(io, oid, RBDL_NOSNAP, &h->order, &h->size);
	if (r < 0) {
		uint64_t psize;
		time_t pmtime;

		/* The cls reports a missing header as EIO; librbd says
		 * ENOENT, the image is not there. */
		if (rados_stat(io, oid, &psize, &pmtime) == -ENOENT)
			r = -ENOENT;
		return r;
	}
	r = rbdl_cls_read(io, oid, "rbd", "get_object_prefix", NULL, 0, &out,
			  &outlen);
	if (r < 0)
		return r;
	r = rbdl_decode_string(out, outlen, &h->object_prefix);
	rados_buffer_free(out);
	if (r == 0)
		r = rbdl_read_features(io, oid, read_only, &h->features,
				       &h->incompat);
	if (r == 0)
		r = rbdl_read_stripe(io, oid, h->features, &h->su, &h->sc);
	if (r == 0) {
		r = rbdl_cls_read_u64(io, oid, "get_data_pool", NULL, 0, &dp);
		/* EOPNOTSUPP: an old OSD, so no data pool. */
		if (r == 0)
			h->data_pool = (int64_t)dp;
		else if (r == -EOPNOTSUPP)
			r = 0;
	}
	if (r == 0)
		r = rbdl_read_snapcontext(io, oid, &h->snap_seq, &h->snaps,
					  &h->nsnaps);
	if (r < 0)
		rbdl_header_free(h);
	return r;
}

void rbdl_header_free(struct rbdl_header *h)
{
	free(h->object_prefix);
	free(h->snaps);
	h->object_prefix = NULL;
	h->snaps = NULL;
}

/* ---- cls "lock" on any object -------------------------------------------- */

int rbdl_lockobj_lock(rados_ioctx_t io, const char *oid, const char *cookie,
		      const char *tag)
{
	uint8_t in[256];
	long n = rbdl_encode_lock_lock(in, sizeof(in), RBDL_LOCK_NAME,
				       RBDL_LOCK_EXCLUSIVE, cookie, tag, "", 0,
				       0, 0);

	if (n < 0)
		return (int)n;
	return rbdl_cls_write(io, oid, "lock", "lock", in, (size_t)n);
}

int rbdl_lockobj_unlock(rados_ioctx_t io, const char *oid, const char *cookie)
{
	uint8_t in[128];
	long n = rbdl_encode_lock_unlock(in, sizeof(in), RBDL_LOCK_NAME, cookie);

	if (n < 0)
		return (int)n;
	return rbdl_cls_write(io, oid, "lock", "unlock", in, (size_t)n);
}

int rbdl_lockobj_info(rados_ioctx_t io, const char *oid,
		      struct rbdl_lock_info *li)
{
	uint8_t in[64];
	long n = rbdl_encode_lock_get_info(in, sizeof(in), RBDL_LOCK_NAME);
	char *out;
	size_t outlen;
	int r;

	if (n < 0)
		return (int)n;
	r = rbdl_cls_read(io, oid, "lock", "get_info", in, (size_t)n, &out,
			  &outlen);
	if (r < 0)
		return r;
	r = rbdl_decode_lock_info(out, outlen, li);
	rados_buffer_free(out);
	return r;
}

int rbdl_read_flags_lockers(rados_ioctx_t io, const char *oid, uint64_t snap,
			    uint64_t *flags, struct rbdl_lock_info *li,
			    bool *li_ok)
{
	rados_read_op_t op = rados_create_read_op();
	uint8_t fin[8], lin[64];
	long ln = rbdl_encode_lock_get_info(lin, sizeof(lin), RBDL_LOCK_NAME);
	char *fout = NULL, *lout = NULL;
	size_t foutlen = 0, loutlen = 0;
	int fr = 0, lr = 0, r;

	*li_ok = false;
	memset(li, 0, sizeof(*li));
	if (!op)
		return -ENOMEM;
	if (ln < 0) {
		rados_release_read_op(op);
		return (int)ln;
	}
	rbdl_put_le64(fin, snap);
	rados_read_op_exec(op, "rbd", "get_flags", (const char *)fin,
			   sizeof(fin), &fout, &foutlen, &fr);
	rados_read_op_exec(op, "lock", "get_info", (const char *)lin,
			   (size_t)ln, &lout, &loutlen, &lr);
	/* the lockers are extra: their failure must not fail the flags */
	rados_read_op_set_flags(op, LIBRADOS_OP_FLAG_FAILOK);
	r = rados_read_op_operate(op, io, oid, 0);
	rados_release_read_op(op);
	if (r >= 0 && fr < 0)
		r = fr;
	if (r >= 0)
		r = rbdl_decode_u64(fout, foutlen, flags);
	if (r >= 0 && lr >= 0 && lout &&
	    rbdl_decode_lock_info(lout, loutlen, li) == 0)
		*li_ok = true;
	if (fout)
		rados_buffer_free(fout);
	if (lout)
		rados_buffer_free(lout);
	return r < 0 ? r : 0;
}

int rbdl_lockobj_break(rados_ioctx_t io, const char *oid,
		       const struct rbdl_locker *l)
{
	uint8_t in[256];
	long n = rbdl_encode_lock_break(in, sizeof(in), RBDL_LOCK_NAME,
					l->entity_type, l->entity_num,
					l->cookie);
	int r;

	if (n < 0)
		return (int)n;
	r = rbdl_cls_write(io, oid, "lock", "break_lock", in, (size_t)n);
	return r == -ENOENT ? 0 : r;
}

void rbdl_lockobj_break_all(rados_ioctx_t io, const char *oid)
{
	struct rbdl_lock_info li;

	if (rbdl_lockobj_info(io, oid, &li) < 0)
		return;
	for (uint32_t i = 0; i < li.n_lockers; i++)
		rbdl_lockobj_break(io, oid, &li.lockers[i]);
	rbdl_lock_info_free(&li);
}

int rbdl_remove_if_exists(rados_ioctx_t io, const char *oid)
{
	int r = rados_remove(io, oid);

	return r == -ENOENT ? 0 : r;
}

int rbdl_ioctx_clone(rados_ioctx_t io, rados_ioctx_t *out, char **ns)
{
	char *n;
	int r = rbdl_ioctx_namespace(io, &n);

	if (r < 0)
		return r;
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io), rados_ioctx_get_id(io),
			   n, out);
	if (r == 0 && ns)
		*ns = n;
	else
		free(n);
	return r;
}

int rbdl_read_object(rados_ioctx_t io, const char *oid, char **buf,
		     size_t *len)
{
	uint64_t size;
	time_t mtime;
	int r = rados_stat(io, oid, &size, &mtime);

	if (r < 0)
		return r;
	*buf = malloc(size ? size : 1);
	if (!*buf)
		return -ENOMEM;
	r = size ? rados_read(io, oid, *buf, size, 0) : 0;
	if (r < 0) {
		free(*buf);
		return r;
	}
	*len = (size_t)r;
	return 0;
}

int rbdl_read_utimes(rados_ioctx_t io, const char *oid,
		     const char *const *methods, int n, struct timespec *ts)
{
	char *out[RBDL_UTIMES_MAX] = { NULL };
	size_t outlen[RBDL_UTIMES_MAX] = { 0 };
	int rv[RBDL_UTIMES_MAX] = { 0 }, r;
	struct timespec got[RBDL_UTIMES_MAX];
	rados_read_op_t op;

	if (n < 1 || n > RBDL_UTIMES_MAX)
		return -EINVAL;
	op = rados_create_read_op();
	if (!op)
		return -ENOMEM;
	for (int k = 0; k < n; k++)
		rados_read_op_exec(op, "rbd", methods[k], NULL, 0, &out[k],
				   &outlen[k], &rv[k]);
	r = rados_read_op_operate(op, io, oid, 0);
	rados_release_read_op(op);
	for (int k = 0; k < n; k++) {
		struct rbdl_dec d;

		if (r >= 0 && rv[k] < 0)
			r = rv[k];
		rbdl_dec_init(&d, out[k], outlen[k]);
		got[k].tv_sec = rbdl_dec_u32(&d);	/* utime_t: sec, nsec */
		got[k].tv_nsec = rbdl_dec_u32(&d);
		if (r >= 0 && d.err)
			r = d.err;
		if (out[k])
			rados_buffer_free(out[k]);
	}
	if (r < 0)
		return r;	/* ts untouched */
	memcpy(ts, got, sizeof(*ts) * (size_t)n);
	return 0;
}
