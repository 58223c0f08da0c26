/*
 * snapinfo.c - snapshot lookups, namespaces, limit, protection, rename and
 * the read view by id (snapinfo.h), as librbd 16.2 does them:
 *   protect:   set_protection_status(PROTECTED), notify
 *   unprotect: set_protection_status(UNPROTECTING); look for clone v1
 *              children (cls get_children on rbd_children) in every pool
 *              whose base tier is itself; any -> PROTECTED again and
 *              -EBUSY, none -> UNPROTECTED; notify
 *   rename:    snapshot_rename(id, new name), notify
 *   limit:     snapshot_set_limit as lock owner; snapshot_get_limit
 * Clone v2 children do not block an unprotect (live librbd 16.2.15 lets
 * it through; such a snapshot goes to the trash namespace on removal).
 *
 * Threading: synchronous; changes hold img->maint_mu.  Ownership: see
 * snapinfo.h.
 */
#include "config.h"

#include "snapinfo.h"
#include "maint.h"
#include "maint_int.h"

#include "core/internal.h"
#include "image/load.h"
#include "image/lock.h"
#include "image/refresh.h"
#include "io/io.h"
#include "proto/cls_rbd.h"
#include "proto/rados.h"
#include "proto/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

#define PROT_UNPROTECTED 0
#define PROT_UNPROTECTING 1
#define PROT_PROTECTED 2

/* ---- decoding -------------------------------------------------------------- */

static void ns_free(struct rbdl_snap_ns *ns)
{
	free(ns->group_id);
	free(ns->group_snap_id);
	free(ns->trash_name);
	for (uint32_t i = 0; i < ns->npeers; i++)
		free(ns->peers[i]);
	free(ns->peers);
	free(ns->primary_uuid);
	memset(ns, 0, sizeof(*ns));
}

void rbdl_snapq_free(struct rbdl_snapq *q)
{
	free(q->name);
	ns_free(&q->ns);
	memset(q, 0, sizeof(*q));
}

/* SnapshotNamespace body by type (cls_rbd_types.cc). */
static void decode_ns(struct rbdl_dec *d, struct rbdl_snap_ns *ns)
{
	ns->type = rbdl_dec_u32(d);
	switch (ns->type) {
	case 1:	/* group: s64 pool, string group id, string group snap id */
		ns->group_pool = rbdl_to_s64(rbdl_dec_u64(d));
		ns->group_id = rbdl_dec_strdup(d);
		ns->group_snap_id = rbdl_dec_strdup(d);
		break;
	case 2:	/* trash: string original name, u32 original type */
		ns->trash_name = rbdl_dec_strdup(d);
		ns->trash_type = rbdl_dec_u32(d);
		break;
	case 3:	/* mirror: u8 state, bool complete, set<string> peers,
		 * string primary uuid, u64 primary snap id, u64 last copied
		 * object number, map snap_seqs (not needed) */
		ns->mirror_state = rbdl_dec_u8(d);
		ns->mirror_complete = rbdl_dec_u8(d) != 0;
		{
			uint32_t n = rbdl_dec_u32(d);

			if (n > rbdl_dec_left(d) / 4) {
				d->err = -EBADMSG;
				break;
			}
			ns->peers = calloc(n ? n : 1, sizeof(char *));
			if (!ns->peers) {
				d->err = -ENOMEM;
				break;
			}
			for (uint32_t i = 0; i < n && !d->err; i++) {
				ns->peers[i] = rbdl_dec_strdup(d);
				ns->npeers = i + 1;
			}
		}
		ns->primary_uuid = rbdl_dec_strdup(d);
		ns->primary_snap_id = rbdl_dec_u64(d);
		ns->last_copied = rbdl_dec_u64(d);
		break;
	default:
		break;
	}
}

static int decode_snapq(const void *buf, size_t len, struct rbdl_snapq *q)
{
	struct rbdl_dec d;
	const uint8_t *outer, *ns_outer;

	rbdl_dec_init(&d, buf, len);
	rbdl_dec_enter(&d, 1, &outer);
	q->id = rbdl_dec_u64(&d);
	rbdl_dec_enter(&d, 1, &ns_outer);
	decode_ns(&d, &q->ns);
	rbdl_dec_leave(&d, ns_outer);
	q->name = rbdl_dec_strdup(&d);
	q->size = rbdl_dec_u64(&d);
	q->ts_sec = rbdl_dec_u32(&d);
	q->ts_nsec = rbdl_dec_u32(&d);
	q->child_count = rbdl_dec_u32(&d);
	rbdl_dec_leave(&d, outer);
	return d.err;
}

/* ---- lookups ---------------------------------------------------------------- */

static bool in_snapc(struct rbdl_image *img, uint64_t id)
{
	bool found = false;

	pthread_mutex_lock(&img->refresh_lock);
	for (uint32_t i = 0; i < img->nsnaps && !found; i++)
		found = img->snaps[i] == id;
	pthread_mutex_unlock(&img->refresh_lock);
	return found;
}

int rbdl_snapq_get(struct rbdl_image *img, uint64_t id,
		   struct rbdl_snapq *out)
{
	char *buf;
	size_t len;
	int r;

	memset(out, 0, sizeof(*out));
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	if (id == RBDL_NOSNAP || !in_snapc(img, id))
		return -ENOENT;
	r = rbdl_cls_read_arg_u64(img->md_io, img->header_oid, "snapshot_get",
				  id, &buf, &len);
	if (r < 0)
		return r;
	r = decode_snapq(buf, len, out);
	rados_buffer_free(buf);
	if (r < 0)
		rbdl_snapq_free(out);
	return r;
}

int rbdl_op_snap_get_id(struct rbdl_image *img, const char *name,
			uint64_t *id)
{
	struct rbdl_snap_info si;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	pthread_mutex_lock(&img->refresh_lock);
	r = rbdl_find_user_snap(img->md_io, img->header_oid, img->snaps,
				img->nsnaps, name, &si);
	pthread_mutex_unlock(&img->refresh_lock);
	if (r == -ENOENT)
		*id = RBDL_NOSNAP;
	if (r < 0)
		return r;
	*id = si.id;
	rbdl_snap_info_free(&si);
	return 0;
}

/* The protection status of a user snapshot looked up by name. */
static int user_snap_status(struct rbdl_image *img, const char *name,
			    uint64_t *id, uint8_t *st)
{
	char *buf;
	size_t len;
	int r = rbdl_op_snap_get_id(img, name, id);

	if (r < 0)
		return r;
	r = rbdl_cls_read_arg_u64(img->md_io, img->header_oid,
				  "get_protection_status", *id, &buf, &len);
	if (r < 0)
		return r;
	*st = len >= 1 ? (uint8_t)buf[0] : 0;
	rados_buffer_free(buf);
	return len >= 1 ? 0 : -EBADMSG;
}

int rbdl_op_snap_is_protected(struct rbdl_image *img, const char *name,
			      bool *prot)
{
	uint64_t id;
	uint8_t st = 0;
	int r = user_snap_status(img, name, &id, &st);

	if (r == 0)
		*prot = st != PROT_UNPROTECTED;
	return r;
}

int rbdl_op_snap_group_ns(struct rbdl_image *img, uint64_t id,
			  int64_t *pool, char **group_name, char **snap_name)
{
	struct rbdl_snapq q;
	rados_ioctx_t gio = NULL;
	char *ns = NULL, *buf = NULL, oid[256];
	size_t len;
	long n;
	uint8_t in[512];
	int r = rbdl_snapq_get(img, id, &q);

	*group_name = *snap_name = NULL;
	if (r < 0)
		return r;
	if (q.ns.type != 1) {
		r = -EINVAL;
		goto out;
	}
	/* The group's pool, in the image's namespace (util::create_ioctx). */
	r = rbdl_ioctx_namespace(img->md_io, &ns);
	if (r == 0)
		r = rbdl_ioctx_dup(img->cluster, q.ns.group_pool, ns, &gio);
	if (r < 0)
		goto out;
	n = rbdl_encode_string(in, sizeof(in), q.ns.group_id);
	r = n < 0 ? (int)n
		  : rbdl_cls_read(gio, "rbd_group_directory", "rbd",
				  "dir_get_name", in, (size_t)n, &buf, &len);
	if (r < 0)
		goto out;
	r = rbdl_decode_string(buf, len, group_name);
	rados_buffer_free(buf);
	buf = NULL;
	if (r < 0)
		goto out;
	snprintf(oid, sizeof(oid), "rbd_group_header.%s", q.ns.group_id);
	n = rbdl_encode_string(in, sizeof(in), q.ns.group_snap_id);
	r = n < 0 ? (int)n
		  : rbdl_cls_read(gio, oid, "rbd", "group_snap_get_by_id", in,
				  (size_t)n, &buf, &len);
	if (r < 0)
		goto out;
	{
		/* GroupSnapshot: ENCODE_START(1,1){string id, string name,
		 * u8 state, vector<ImageSnapshotSpec>} */
		struct rbdl_dec d;
		const uint8_t *outer;
		uint32_t idlen;

		rbdl_dec_init(&d, buf, len);
		rbdl_dec_enter(&d, 1, &outer);
		rbdl_dec_bytes(&d, &idlen);
		*snap_name = rbdl_dec_strdup(&d);
		rbdl_dec_leave(&d, outer);
		r = d.err;
	}
	if (r == 0)
		*pool = rados_ioctx_get_id(gio);
out:
	if (buf)
		rados_buffer_free(buf);
	if (gio)
		rados_ioctx_destroy(gio);
	free(ns);
	rbdl_snapq_free(&q);
	if (r < 0) {
		free(*group_name);
		free(*snap_name);
		*group_name = *snap_name = NULL;
	}
	return r;
}

int rbdl_op_snap_get_limit(struct rbdl_image *img, uint64_t *limit)
{
	int r = rbdl_cls_read_u64(img->md_io, img->header_oid,
				  "snapshot_get_limit", NULL, 0, limit);

	if (r == -EOPNOTSUPP) {
		*limit = UINT64_MAX;
		r = 0;
	}
	return r;
}

/* ---- changes ------------------------------------------------------------------ */

/*
 * Serialize with the other maintenance operations and check the image may
 * be relabelled: librbd refuses read-only opens only (a handle at a
 * snapshot may protect, rename and set the limit).  Features whose state
 * librbdlite cannot keep (journaling, ...) are refused with -EROFS (the
 * api layer has the system's librbd change a journaled image first,
 * api/journaled.h).
 */
static int change_begin(struct rbdl_image *img)
{
	int r;

	if (img->open_ro)
		return -EROFS;
	pthread_mutex_lock(&img->maint_mu);
	r = rbdl_image_maybe_refresh(img);
	if (r == 0 && (atomic_load(&img->features) & RBDL_WRITE_UNSUPPORTED))
		r = -EROFS;
	if (r < 0)
		pthread_mutex_unlock(&img->maint_mu);
	return r;
}

/* Tell the watchers, bring our view up to date, release maint_mu. */
static void change_end(struct rbdl_image *img, bool changed)
{
	if (changed) {
		rbdl_maint_notify(img);
		atomic_fetch_add_explicit(&img->refresh_seq, 1,
					  memory_order_release);
		rbdl_image_refresh_slow(img);
	}
	pthread_mutex_unlock(&img->maint_mu);
}

static int set_protection(struct rbdl_image *img, uint64_t id, uint8_t st)
{
	uint8_t in[9];

	rbdl_put_le64(in, id);
	in[8] = st;
	return rbdl_cls_write(img->md_io, img->header_oid, "rbd",
			      "set_protection_status", in, sizeof(in));
}

int rbdl_op_snap_set_limit(struct rbdl_image *img, uint64_t limit)
{
	uint8_t in[8];
	int r;

	rbdl_put_le64(in, limit);
	if (img->open_ro)
		return -EROFS;
	/* librbd sets it as lock owner (prepare_image_update); a handle at a
	 * snapshot has no lock and writes it directly, as librbd's. */
	if (atomic_load(&img->wr_io) && !atomic_load(&img->at_snap)) {
		r = rbdl_maint_begin(img, true);
		if (r < 0)
			return r;
		r = rbdl_maint_hdr_write(img, "snapshot_set_limit", in,
					 sizeof(in));
		rbdl_maint_end(img);
		return r;
	}
	r = change_begin(img);
	if (r < 0)
		return r;
	r = rbdl_cls_write(img->md_io, img->header_oid, "rbd",
			   "snapshot_set_limit", in, sizeof(in));
	change_end(img, false);
	return r;
}

int rbdl_op_snap_protect(struct rbdl_image *img, const char *name)
{
	uint64_t id;
	uint8_t st = 0;
	int r;

	if (img->open_ro)
		return -EROFS;
	if (!(atomic_load(&img->features) & RBD_FEATURE_LAYERING))
		return -ENOSYS;
	r = change_begin(img);
	if (r < 0)
		return r;
	r = user_snap_status(img, name, &id, &st);
	if (r == 0 && st == PROT_PROTECTED)
		r = -EBUSY;
	if (r == 0)
		r = set_protection(img, id, PROT_PROTECTED);
	change_end(img, r == 0);
	return r;
}

/* Clone v1 children of (our pool, image id, snapshot id) registered in
 * rbd_children of any pool: 0 (none), -EBUSY, or an error. */
static int scan_v1_children(struct rbdl_image *img, uint64_t snap_id)
{
	char *names = NULL;
	uint8_t in[512];
	struct rbdl_enc e;
	int len = 4096, r;

	rados_wait_for_latest_osdmap(img->cluster);
	for (;;) {
		char *nb = realloc(names, (size_t)len);

		if (!nb) {
			free(names);
			return -ENOMEM;
		}
		names = nb;
		r = rados_pool_list(img->cluster, names, (size_t)len);
		if (r < 0 || r <= len)
			break;
		len = r;
	}
	if (r < 0) {
		free(names);
		return r;
	}
	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_u64(&e, (uint64_t)img->md_pool_id);
	rbdl_enc_str(&e, img->id);
	rbdl_enc_u64(&e, snap_id);
	/* Clone v1 children are registered in the default namespace of
	 * their pool (v1 clones cannot live in a namespace). */
	r = e.err;
	for (const char *p = names; r == 0 && *p; p += strlen(p) + 1) {
		int64_t pool = rados_pool_lookup(img->cluster, p), base;
		rados_ioctx_t pio;
		char *out;
		size_t olen;

		if (pool < 0)
			continue;	/* gone meanwhile */
		r = rados_pool_get_base_tier(img->cluster, pool, &base);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r < 0 || base != pool)
			continue;	/* a cache tier */
		if (rbdl_ioctx_dup(img->cluster, pool, "", &pio) < 0)
			continue;
		r = rbdl_cls_read(pio, "rbd_children", "rbd", "get_children",
				  in, e.len, &out, &olen);
		rados_ioctx_destroy(pio);
		if (r == 0) {
			rados_buffer_free(out);
			rbdl_log("image %s: cannot unprotect: children in "
				 "pool %s", img->name, p);
			r = -EBUSY;
		} else if (r == -ENOENT) {
			r = 0;
		}
	}
	free(names);
	return r;
}

int rbdl_op_snap_unprotect(struct rbdl_image *img, const char *name)
{
	uint64_t id;
	uint8_t st = 0;
	int r, q;

	if (img->open_ro)
		return -EROFS;
	r = change_begin(img);
	if (r < 0)
		return r;
	r = user_snap_status(img, name, &id, &st);
	if (r == 0 && st == PROT_UNPROTECTED)
		r = -EINVAL;
	if (r == 0 && !(atomic_load(&img->features) & RBD_FEATURE_LAYERING))
		r = -ENOSYS;
	if (r < 0) {
		change_end(img, false);
		return r;
	}
	r = set_protection(img, id, PROT_UNPROTECTING);
	if (r == 0) {
		r = scan_v1_children(img, id);
		q = set_protection(img, id, r == 0 ? PROT_UNPROTECTED
						   : PROT_PROTECTED);
		if (r == 0)
			r = q;
	}
	change_end(img, true);
	return r;
}

int rbdl_op_snap_rename(struct rbdl_image *img, const char *src,
			const char *dst)
{
	uint64_t id, other;
	uint8_t in[1024];
	struct rbdl_enc e;
	int r;

	if (img->open_ro)
		return -EROFS;
	r = change_begin(img);
	if (r < 0)
		return r;
	r = rbdl_op_snap_get_id(img, src, &id);
	if (r == 0) {
		r = rbdl_op_snap_get_id(img, dst, &other);
		r = r == 0 ? -EEXIST : r == -ENOENT ? 0 : r;
	}
	if (r == 0) {
		rbdl_enc_init(&e, in, sizeof(in));
		rbdl_enc_u64(&e, id);
		rbdl_enc_str(&e, dst);
		r = e.err ? -ENAMETOOLONG
			  : rbdl_cls_write(img->md_io, img->header_oid, "rbd",
					   "snapshot_rename", in, e.len);
	}
	change_end(img, r == 0);
	return r;
}

int rbdl_op_snap_set_by_id(struct rbdl_image *img, uint64_t id)
{
	struct rbdl_snapq q;
	struct rbdl_io_args a = { .op = RBDL_OP_FLUSH };
	char *name;
	int r;

	/* librbd ignores a failed refresh here (the view may be at a
	 * snapshot that is gone and the caller is fixing that). */
	rbdl_image_maybe_refresh(img);
	if (id == RBDL_NOSNAP)
		return rbdl_maint_snap_set(img, NULL);
	r = rbdl_snapq_get(img, id, &q);
	if (r < 0)
		return r;
	if (q.ns.type == 0) {
		r = rbdl_maint_snap_set(img, q.name);
		rbdl_snapq_free(&q);
		return r;
	}
	/* Any other namespace: there is no user name to look up, switch the
	 * view by id the way rbdl_image_set_snap does by name. */
	name = q.name;
	q.name = NULL;
	pthread_mutex_lock(&img->maint_mu);
	r = (int)rbdl_io_sync(img, &a);
	if (r == 0) {
		rbdl_lock_drop(img);
		pthread_mutex_lock(&img->refresh_lock);
		free(img->snap_name);
		img->snap_name = name;
		name = NULL;
		img->snap_id = id;
		img->snap_ns = q.ns.type;
		img->read_only = true;
		rados_ioctx_snap_set_read(img->rd_io, id);
		atomic_store_explicit(&img->at_snap, true,
				      memory_order_relaxed);
		atomic_store_explicit(&img->snap_gone, false,
				      memory_order_relaxed);
		atomic_store_explicit(&img->size, q.size,
				      memory_order_release);
		pthread_mutex_unlock(&img->refresh_lock);
		atomic_fetch_add_explicit(&img->refresh_seq, 1,
					  memory_order_release);
		r = rbdl_image_refresh_slow(img);
	}
	pthread_mutex_unlock(&img->maint_mu);
	free(name);
	rbdl_snapq_free(&q);
	return r;
}
