/*
 * info.c - image information read from the header (timestamps, operation
 * features, group), metadata listing and removal, rbd_rename and the
 * whole-image read walk, as librbd 16.2 does them (info.h).
 *
 * Threading: synchronous on the caller's thread.  Values are read from
 * the OSD at each call (librbd answers from its last refresh, which a
 * header notification keeps current); metadata removal and rename run as
 * maintenance operations (maint_int.h: serialized, as exclusive-lock
 * owner on images with the feature, HEADER_UPDATE sent afterwards).
 *
 * Ownership: see info.h; nothing here outlives a call.
 */
#include "config.h"

#include "info.h"
#include "maint_int.h"

#include "image/open.h"
#include "image/refresh.h"
#include "io/crypt.h"
#include "io/io.h"
#include "proto/cls_rbd.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "proto/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/features.h"

#define MD_CHUNK 64			/* pairs per metadata_list call */
#define GROUP_DIRECTORY "rbd_group_directory"

/* ---- header values -------------------------------------------------------- */

int rbdl_info_timestamp(struct rbdl_image *img, enum rbdl_ts_kind kind,
			struct timespec *ts)
{
	static const char *const methods[] = {
		[RBDL_TS_CREATE] = "get_create_timestamp",
		[RBDL_TS_ACCESS] = "get_access_timestamp",
		[RBDL_TS_MODIFY] = "get_modify_timestamp",
	};
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	r = rbdl_read_utimes(img->md_io, img->header_oid, &methods[kind], 1,
			     ts);
	/* OSDs older than the access/modify timestamps: librbd reports the
	 * creation time for both. */
	if (r == -EOPNOTSUPP && kind != RBDL_TS_CREATE)
		r = rbdl_read_utimes(img->md_io, img->header_oid,
				     &methods[RBDL_TS_CREATE], 1, ts);
	return r;
}

int rbdl_info_op_features(struct rbdl_image *img, uint64_t *op_features)
{
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	*op_features = 0;
	if (!(atomic_load(&img->features) & RBD_FEATURE_OPERATIONS))
		return 0;
	r = rbdl_cls_read_u64(img->md_io, img->header_oid, "op_features_get",
			      NULL, 0, op_features);
	/* librbd treats an OSD without the method as no op features. */
	if (r == -EOPNOTSUPP) {
		*op_features = 0;
		r = 0;
	}
	return r;
}

int rbdl_info_group(struct rbdl_image *img, int64_t *pool, char **name)
{
	char *out = NULL, *gid = NULL;
	size_t outlen;
	struct rbdl_dec d;
	const uint8_t *outer;
	int64_t gpool;
	int r = rbdl_image_maybe_refresh(img);

	*name = NULL;
	if (r < 0)
		return r;
	r = rbdl_cls_read(img->md_io, img->header_oid, "rbd",
			  "image_group_get", NULL, 0, &out, &outlen);
	if (r == -EOPNOTSUPP)
		goto none;	/* an OSD without groups */
	if (r < 0)
		return r;
	rbdl_dec_init(&d, out, outlen);
	rbdl_dec_enter(&d, 1, &outer);
	gpool = rbdl_to_s64(rbdl_dec_u64(&d));
	gid = rbdl_dec_strdup(&d);
	rbdl_dec_leave(&d, outer);
	rados_buffer_free(out);
	if (d.err) {
		free(gid);
		return d.err;
	}
	if (gpool == -1 || !gid[0]) {
		free(gid);
		goto none;
	}
	/* The group's name from the group directory of its pool, in the
	 * image's namespace. */
	{
		rados_ioctx_t gio;
		char *ns = NULL, *gname = NULL;
		uint8_t in[256];
		long n = rbdl_encode_string(in, sizeof(in), gid);

		free(gid);
		if (n < 0)
			return (int)n;
		r = rbdl_ioctx_namespace(img->md_io, &ns);
		if (r < 0)
			return r;
		r = rbdl_ioctx_dup(img->cluster, gpool, ns, &gio);
		free(ns);
		if (r < 0)
			return r;
		r = rbdl_cls_read(gio, GROUP_DIRECTORY, "rbd", "dir_get_name",
				  in, (size_t)n, &out, &outlen);
		rados_ioctx_destroy(gio);
		if (r < 0)
			return r;
		r = rbdl_decode_string(out, outlen, &gname);
		rados_buffer_free(out);
		if (r < 0)
			return r;
		*pool = gpool;
		*name = gname;
		return 0;
	}
none:
	*pool = -1;
	*name = strdup("");
	return *name ? 0 : -ENOMEM;
}

/* ---- metadata ----------------------------------------------------------- */

void rbdl_info_metadata_free(struct rbdl_md_pair *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].key);
		free(v[i].value);
	}
	free(v);
}

/* Append the pairs of one metadata_list reply (map<string, bufferlist>);
 * *last is the last key seen (owned by the array). */
static int md_decode(const char *buf, size_t len, struct rbdl_md_pair **v,
		     size_t *n, size_t *cap, uint32_t *got)
{
	struct rbdl_dec d;
	uint32_t cnt;

	rbdl_dec_init(&d, buf, len);
	cnt = rbdl_dec_u32(&d);
	if (d.err)
		return d.err;
	*got = cnt;
	for (uint32_t i = 0; i < cnt; i++) {
		char *key = rbdl_dec_strdup(&d);
		uint32_t vlen = 0;
		const uint8_t *val = rbdl_dec_bytes(&d, &vlen);

		if (d.err) {
			free(key);
			return d.err;
		}
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 16;
			struct rbdl_md_pair *nv = realloc(*v, nc * sizeof(*nv));

			if (!nv) {
				free(key);
				return -ENOMEM;
			}
			*v = nv;
			*cap = nc;
		}
		char *value = malloc((size_t)vlen + 1);

		if (!value) {
			free(key);
			return -ENOMEM;
		}
		memcpy(value, val, vlen);
		value[vlen] = '\0';
		(*v)[*n].key = key;
		(*v)[*n].value = value;
		(*v)[*n].vlen = vlen;
		(*n)++;
	}
	return 0;
}

int rbdl_info_metadata_list(struct rbdl_image *img, const char *start,
			    uint64_t max, struct rbdl_md_pair **out,
			    size_t *count)
{
	struct rbdl_md_pair *v = NULL;
	size_t n = 0, cap = 0;
	char *after = strdup(start ? start : "");
	int r = after ? rbdl_image_maybe_refresh(img) : -ENOMEM;

	/* librbd's GetMetadataRequest: chunks until a short one or max. */
	while (r == 0) {
		uint64_t want = MD_CHUNK;
		size_t inlen = strlen(after) + 16, outlen;
		uint8_t *in = malloc(inlen);
		uint32_t got = 0;
		char *rep;
		long len;

		if (max && max - n < want)
			want = max - n;
		if (!in) {
			r = -ENOMEM;
			break;
		}
		len = rbdl_encode_list_start(in, inlen, after, want);
		r = len < 0 ? (int)len
			    : rbdl_cls_read(img->md_io, img->header_oid, "rbd",
					    "metadata_list", in, (size_t)len,
					    &rep, &outlen);
		free(in);
		if (r < 0)
			break;
		size_t before = n;

		r = md_decode(rep, outlen, &v, &n, &cap, &got);
		rados_buffer_free(rep);
		if (r < 0 || n == before)
			break;
		free(after);
		after = strdup(v[n - 1].key);
		if (!after) {
			r = -ENOMEM;
			break;
		}
		if (got < want || (max && n >= max))
			break;
	}
	free(after);
	if (r < 0) {
		rbdl_info_metadata_free(v, n);
		return r;
	}
	*out = v;
	*count = n;
	return 0;
}

int rbdl_info_metadata_remove(struct rbdl_image *img, const char *key)
{
	uint8_t *in;
	char *out;
	size_t outlen;
	long n;
	int r;

	if (img->open_ro)
		return -EROFS;
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	n = rbdl_encode_string_alloc(key, &in);
	if (n < 0)
		return (int)n;
	/* librbd looks the key up first: -ENOENT wins over -EROFS. */
	r = rbdl_cls_read(img->md_io, img->header_oid, "rbd", "metadata_get",
			  in, (size_t)n, &out, &outlen);
	if (r == 0) {
		rados_buffer_free(out);
		if (atomic_load(&img->at_snap))
			r = -EROFS;
	}
	if (r == 0)
		r = rbdl_maint_begin(img, true);
	if (r == 0) {
		r = rbdl_maint_hdr_write(img, "metadata_remove", in, (size_t)n);
		if (r == 0)
			rbdl_maint_notify(img);
		rbdl_maint_end(img);
	}
	free(in);
	return r;
}

/* ---- rename ---------------------------------------------------------------- */

/* librbd's detect_format: 0 if an image (either format) called name
 * exists, -ENOENT if not. */
static int name_exists(rados_ioctx_t io, const char *name)
{
	char oid[RBDL_OID_MAX];
	uint64_t size;
	time_t mtime;
	int r;

	if (rbdl_oid_v1_header(oid, sizeof(oid), name) < 0)
		return -ENOENT;
	r = rados_stat(io, oid, &size, &mtime);
	if (r != -ENOENT)
		return r;
	if (rbdl_oid_id(oid, sizeof(oid), name) < 0)
		return -ENOENT;
	return rados_stat(io, oid, &size, &mtime);
}

/* operation::RenameRequest for format 2: copy the id object to the new
 * name, rename the directory entry, remove the old id object. */
static int rename_v2(struct rbdl_image *img, const char *dst)
{
	char src_oid[RBDL_OID_MAX], dst_oid[RBDL_OID_MAX];
	char *data = NULL;
	size_t len = 0;
	long n;
	int r;

	if (rbdl_oid_id(src_oid, sizeof(src_oid), img->name) < 0 ||
	    rbdl_oid_id(dst_oid, sizeof(dst_oid), dst) < 0)
		return -ENAMETOOLONG;
	r = rbdl_read_object(img->md_io, src_oid, &data, &len);
	if (r < 0)
		return r;
	rados_write_op_t op = rados_create_write_op();

	if (!op) {
		free(data);
		return -ENOMEM;
	}
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_write_full(op, data, len);
	r = rados_write_op_operate(op, img->md_io, dst_oid, NULL, 0);
	rados_release_write_op(op);
	free(data);
	if (r < 0)
		return r;

	size_t cap = strlen(img->name) + strlen(dst) + strlen(img->id) + 32;
	uint8_t *in = malloc(cap);
	struct rbdl_enc e;

	if (!in)
		return -ENOMEM;
	rbdl_enc_init(&e, in, cap);
	rbdl_enc_str(&e, img->name);
	rbdl_enc_str(&e, dst);
	rbdl_enc_str(&e, img->id);
	n = rbdl_enc_len(&e);
	r = n < 0 ? (int)n
		  : rbdl_cls_write(img->md_io, RBDL_OID_DIRECTORY, "rbd",
				   "dir_rename_image", in, (size_t)n);
	free(in);
	if (r < 0)
		return r;
	return rbdl_remove_if_exists(img->md_io, src_oid);
}

int rbdl_op_rename(rados_ioctx_t io, const char *srcname, const char *dstname,
		   bool *need_real)
{
	struct rbdl_handle *h;
	int r = rbdl_image_open(io, srcname, NULL, NULL, false, &h);

	if (r == -EOPNOTSUPP || r == -ENOSYS)
		*need_real = true;	/* format 1, an import's destination */
	if (r < 0)
		return r;
	struct rbdl_image *img = h->img;

	if (atomic_load(&img->features) & RBD_FEATURE_JOURNALING) {
		/* librbd journals the rename: its call, not ours */
		rbdl_image_close(h);
		*need_real = true;
		return -EOPNOTSUPP;
	}
	r = name_exists(img->md_io, dstname);
	if (r == 0)
		r = -EEXIST;
	else if (r == -ENOENT)
		r = 0;
	if (r == 0)
		r = rbdl_maint_begin(img, true);
	if (r == 0) {
		r = rename_v2(img, dstname);
		rbdl_maint_end(img);
		if (r == 0)
			rbdl_maint_notify(img);
	}
	rbdl_image_close(h);
	return r;
}

/* ---- read_iterate ---------------------------------------------------------- */

int64_t rbdl_info_read_iterate(struct rbdl_image *img, uint64_t ofs,
			       uint64_t len,
			       int (*cb)(uint64_t, size_t, const char *,
					 void *),
			       void *arg)
{
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	/* The data area's size when encryption is loaded: the reads below
	 * go through it. */
	uint64_t size = rbdl_image_size(img);

	/* librbd's clip_io: len 0 is always valid; no start past the end. */
	if (len == 0)
		return 0;
	if (ofs >= size)
		return -EINVAL;
	if (len > size - ofs)
		len = size - ofs;

	/* One stripe period (a whole object set) per read, as librbd. */
	uint64_t period = img->layout.object_size * img->layout.stripe_count;
	char *buf = malloc(period);
	int64_t total = 0;

	if (!buf)
		return -ENOMEM;
	while (len > 0) {
		uint64_t chunk = ofs - ofs % period + period - ofs;

		if (chunk > len)
			chunk = len;
		struct rbdl_io_args a = {
			.op = RBDL_OP_READ, .off = ofs, .len = chunk, .buf = buf,
		};
		ssize_t got = rbdl_io_sync(img, &a);

		if (got < 0) {
			total = got;
			break;
		}
		/* librbd passes the offset relative to the walk's start. */
		r = cb((uint64_t)total, (size_t)got, buf, arg);
		if (r < 0) {
			total = r;
			break;
		}
		if (got == 0)
			break;
		total += got;
		len -= (uint64_t)got;
		ofs += (uint64_t)got;
	}
	free(buf);
	return total;
}
