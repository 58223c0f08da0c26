/*
 * snap.c - rbd_snap_create(2), rbd_snap_remove(_by_id) and
 * rbd_snap_rollback(_with_progress) as
 * librbd 16.2's SnapshotCreateRequest, SnapshotRemoveRequest and
 * SnapshotRollbackRequest (with their object_map counterparts) do them;
 * the sequences are in maint.c's comment.  A snapshot is created between
 * a QUIESCE and an UNQUIESCE notification to the header's watchers, as
 * librbd does unless told to skip it.
 *
 * Threading: synchronous, inside rbdl_maint_begin/end (maint_int.h).
 */
#include "config.h"

#include "maint.h"
#include "maint_int.h"

#include "core/internal.h"
#include "image/load.h"
#include "image/lock.h"
#include "image/objmap.h"
#include "image/open.h"
#include "image/parent.h"
#include "image/refresh.h"
#include "io/io.h"
#include "proto/cls_lock.h"
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

#include "rbd/librbd.h"

#define SNAP_ID_RETRIES 10
#define QUIESCE_TIMEOUT_MS 5000
/* Internal create flags (librbd's SNAP_CREATE_FLAG_*), above the API's. */
#define SNAP_NOTIFY (1u << 30)
#define SNAP_IGNORE_ERR (1u << 29)

/* An ack of a quiesce notification: a ResponseMessage other than
 * -EOPNOTSUPP is the watcher's verdict (empty acks count as success). */
static int quiesce_ack(uint64_t gid, uint64_t cookie, bool timed_out,
		       const uint8_t *payload, uint32_t len, void *arg)
{
	int32_t *res = arg, v;

	(void)gid;
	(void)cookie;
	if (timed_out || len == 0)
		return 0;
	if (rbdl_decode_notify_response(payload, len, &v) < 0)
		v = -EINVAL;
	if (v == -EOPNOTSUPP || v >= 0)
		return 0;
	*res = v;
	return v;
}

/* object_map SnapshotCreateRequest: HEAD's map becomes the snapshot's;
 * with fast-diff HEAD's EXISTS turn EXISTS_CLEAN. */
static int snap_create_map(struct rbdl_image *img, uint64_t snap_id)
{
	char oid[RBDL_OID_MAX], *buf;
	size_t len;
	int r = rbdl_read_object(img->md_io, rbdl_objmap_oid(img->om), &buf, &len);

	if (r < 0)
		return r;
	rbdl_oid_object_map(oid, sizeof(oid), img->id, snap_id);
	r = rados_write_full(img->md_io, oid, buf, len);
	free(buf);
	if (r < 0)
		return r;
	if (!(atomic_load(&img->features) & RBD_FEATURE_FAST_DIFF))
		return 0;
	return rbdl_objmap_write(img, rbdl_objmap_oid(img->om), true, "object_map_snap_add", NULL, 0);
}

/* ---- quiesce notifications ------------------------------------------------ */

/* librbd's util::reserve_async_request_id: one counter per process. */
static _Atomic uint64_t async_request_ids;

/* QUIESCE or UNQUIESCE (NotifyMessage v7 with an AsyncRequestId: ClientId
 * {gid, watch handle}, request id) to every watcher of the header. */
static int quiesce_send(struct rbdl_image *img, uint32_t op, uint64_t req,
			int32_t *acked)
{
	uint8_t buf[64];
	struct rbdl_enc e;
	size_t tok;
	char *reply = NULL;
	size_t rlen = 0;
	int r;

	rbdl_enc_init(&e, buf, sizeof(buf));
	tok = rbdl_enc_struct_start(&e, 7, 1);
	rbdl_enc_u32(&e, op);
	rbdl_enc_u64(&e, rados_get_instance_id(img->cluster));
	rbdl_enc_u64(&e, img->watching ? img->watch_cookie : 0);
	rbdl_enc_u64(&e, req);
	rbdl_enc_struct_end(&e, tok);
	if (e.err)
		return e.err;
	r = rados_notify2(img->md_io, img->header_oid, (const char *)buf,
			  (int)e.len, QUIESCE_TIMEOUT_MS, &reply, &rlen);
	*acked = 0;
	if (r == 0 && reply)
		r = rbdl_walk_notify_reply(reply, rlen, quiesce_ack, acked);
	if (reply)
		rados_buffer_free(reply);
	return r < 0 ? r : *acked;
}

/*
 * ImageWatcher::notify_quiesce: up to rbd_quiesce_notification_attempts
 * notifications while watchers time out; the progress callback learns
 * each attempt (its return value is ignored, as librbd ignores it).  A
 * watcher answering with an error (other than -EOPNOTSUPP) fails it.
 */
static int quiesce(struct rbdl_image *img, uint64_t req,
		   rbdl_progress_fn cb, void *arg)
{
	char val[32];
	uint64_t total = 10, left;
	int32_t acked;
	int r;

	if (rados_conf_get(img->cluster, "rbd_quiesce_notification_attempts",
			   val, sizeof(val)) == 0)
		total = strtoull(val, NULL, 10);
	if (total == 0)
		total = 1;
	for (left = total;;) {
		left--;
		r = quiesce_send(img, RBDL_NOTIFY_QUIESCE, req, &acked);
		if (cb)
			cb(total - left, total, arg);
		if (r != -ETIMEDOUT || left == 0)
			break;
	}
	return r;
}

/*
 * librbd also creates a snapshot (of HEAD) from a read-write handle whose
 * view is a snapshot.  Ours does it on a private handle of the same image
 * at HEAD, which quiesces, takes the exclusive lock through the normal
 * protocol and notifies as any creator does; then this handle re-reads
 * the header.
 */
static int snap_create_from_snap(struct rbdl_image *img, const char *name,
				 uint32_t flags, rbdl_progress_fn cb, void *arg)
{
	struct rbdl_handle *h;
	int q, r = rbdl_image_open(img->md_io, NULL, img->id, NULL, false, &h);

	if (r < 0)
		return r;
	r = rbdl_maint_snap_create2(h->img, name, flags, cb, arg);
	q = rbdl_image_close(h);
	if (r == 0 && q < 0)
		r = q;
	/* Release: pairs with the acquire in rbdl_image_maybe_refresh. */
	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
	q = rbdl_image_maybe_refresh(img);
	return r < 0 ? r : q;
}

/*
 * A new snapshot id, and the snapshot added to the header under it
 * (snapshot_add); -ESTALE (the header's snapshot context moved on): a
 * new id, up to SNAP_ID_RETRIES times.  A failed id is given back.  Any
 * name length, as librbd (the input is the name and 26 bytes more).
 */
static int snap_add(struct rbdl_image *img, const char *name,
		    uint64_t *snap_id)
{
	size_t cap = strlen(name) + 64;
	uint8_t *in = malloc(cap);
	int r = -ENOMEM;

	for (int tries = 0; in; tries++) {
		struct rbdl_enc e;
		size_t tok;

		/* Snapshot ids come from the pool holding the data. */
		r = rados_ioctx_selfmanaged_snap_create(img->rd_io, snap_id);
		if (r < 0)
			break;
		rbdl_enc_init(&e, in, cap);
		rbdl_enc_str(&e, name);
		rbdl_enc_u64(&e, *snap_id);
		tok = rbdl_enc_struct_start(&e, 1, 1);	/* SnapshotNamespace */
		rbdl_enc_u32(&e, 0);			/* user */
		rbdl_enc_struct_end(&e, tok);
		r = e.err ? -ENAMETOOLONG
			  : rbdl_maint_hdr_write(img, "snapshot_add", in, e.len);
		if (r == 0)
			break;
		rados_ioctx_selfmanaged_snap_remove(img->rd_io, *snap_id);
		if (r != -ESTALE || tries >= SNAP_ID_RETRIES)
			break;
	}
	free(in);
	return r;
}

int rbdl_maint_snap_create2(struct rbdl_image *img, const char *name,
			    uint32_t flags, rbdl_progress_fn cb, void *arg)
{
	struct rbdl_snap_info si;
	uint64_t snap_id = 0, req = 0;
	const uint32_t api_flags = flags;
	bool quiesced = false;
	int r;

	if (!name)
		return -EINVAL;
	/* util::snap_create_flags_api_to_internal: SKIP wins; anything
	 * left over is invalid (both flags together included). */
	uint32_t internal = 0;

	if (flags & RBD_SNAP_CREATE_SKIP_QUIESCE) {
		flags &= ~(uint32_t)RBD_SNAP_CREATE_SKIP_QUIESCE;
	} else if (flags & RBD_SNAP_CREATE_IGNORE_QUIESCE_ERROR) {
		flags &= ~(uint32_t)RBD_SNAP_CREATE_IGNORE_QUIESCE_ERROR;
		internal = SNAP_NOTIFY | SNAP_IGNORE_ERR;
	} else {
		internal = SNAP_NOTIFY;
	}
	if (flags)
		return -EINVAL;
	flags = internal;
	/* Read-only and snapshot opens fail first (rbdl_maint_begin checks
	 * again under maint_mu), then a name already taken. */
	if (img->open_ro)
		return -EROFS;
	if (atomic_load(&img->at_snap))
		return snap_create_from_snap(img, name, api_flags, cb, arg);
	if (img->read_only)
		return -EROFS;
	r = rbdl_maint_find_snap(img, name, &si);
	if (r == 0) {
		rbdl_snap_info_free(&si);
		return -EEXIST;
	}
	if (r != -ENOENT)
		return r;
	/* Quiesce before our writes are parked, as librbd does: a quiesce
	 * callback (ours included, when this image watches for them) may
	 * write and wait for its writes before it completes. */
	if (flags & SNAP_NOTIFY) {
		req = atomic_fetch_add(&async_request_ids, 1) + 1;
		quiesced = true;
		r = quiesce(img, req, cb, arg);
		if (r < 0 && !(flags & SNAP_IGNORE_ERR)) {
			rbdl_log("image %s: quiesce before snapshot %s "
				 "failed (%d)", img->name, name, r);
			goto unquiesce;
		}
	}
	r = rbdl_maint_begin(img, true);
	if (r < 0)
		goto unquiesce;
	r = rbdl_maint_find_snap(img, name, &si);
	if (r == 0) {
		rbdl_snap_info_free(&si);
		r = -EEXIST;
		goto out;
	}
	if (r != -ENOENT)
		goto out;
	r = snap_add(img, name, &snap_id);
	if (r < 0)
		goto out;
	if (rbdl_objmap_usable(img->om)) {
		int q = snap_create_map(img, snap_id);

		if (q < 0) {
			rbdl_log("image %s: object map of snapshot %s not "
				 "created (%d)", img->name, name, q);
			rbdl_objmap_invalidate(img, "snapshot copy failed");
		}
	}
	r = rbdl_maint_refresh(img);
	rbdl_maint_notify(img);
out:
	rbdl_maint_end(img);
unquiesce:
	if (quiesced) {
		int32_t acked;

		quiesce_send(img, RBDL_NOTIFY_UNQUIESCE, req, &acked);
	}
	return r;
}

int rbdl_maint_snap_create(struct rbdl_image *img, const char *name)
{
	char mode[32] = "required";
	uint32_t flags = 0;

	/* util::get_default_snap_create_flags */
	rados_conf_get(img->cluster, "rbd_default_snapshot_quiesce_mode", mode,
		       sizeof(mode));
	if (!strcmp(mode, "skip"))
		flags = RBD_SNAP_CREATE_SKIP_QUIESCE;
	else if (!strcmp(mode, "ignore-error"))
		flags = RBD_SNAP_CREATE_IGNORE_QUIESCE_ERROR;
	return rbdl_maint_snap_create2(img, name, flags, NULL, NULL);
}

static int protection_status(struct rbdl_image *img, uint64_t snap_id,
			     uint8_t *st)
{
	uint8_t in[8];
	char *buf;
	size_t len;
	int r;

	rbdl_put_le64(in, snap_id);
	r = rbdl_cls_read(img->md_io, img->header_oid, "rbd", "get_protection_status", in, sizeof(in), &buf,
			   &len);
	if (r < 0)
		return r;
	*st = len >= 1 ? (uint8_t)buf[0] : 0;
	rados_buffer_free(buf);
	return len >= 1 ? 0 : -EBADMSG;
}

/* object_map SnapshotRemoveRequest. */
static int snap_remove_map(struct rbdl_image *img, uint64_t snap_id)
{
	char oid[RBDL_OID_MAX], noid[RBDL_OID_MAX], *buf = NULL;
	size_t len;
	int r = 0;

	rbdl_oid_object_map(oid, sizeof(oid), img->id, snap_id);
	if (atomic_load(&img->features) & RBD_FEATURE_FAST_DIFF) {
		/* What changed before this snapshot now counts as changed
		 * since the previous one: fold its map into the next. */
		uint64_t next = rbdl_maint_next_snap(img, snap_id);

		r = rbdl_read_object(img->md_io, oid, &buf, &len);
		if (r == 0) {
			if (next == RBDL_NOSNAP)
				snprintf(noid, sizeof(noid), "%s", rbdl_objmap_oid(img->om));
			else
				rbdl_oid_object_map(noid, sizeof(noid), img->id, next);
			r = rbdl_objmap_write(img, noid, next == RBDL_NOSNAP,
				     "object_map_snap_remove", buf, len);
			free(buf);
		}
		if (r < 0 && r != -ENOENT) {
			rbdl_log("image %s: merging the object map of snapshot "
				 "%" PRIu64 " failed (%d)", img->name, snap_id,
				 r);
			if (next == RBDL_NOSNAP)
				rbdl_objmap_invalidate(img, "merge failed");
		}
	}
	r = rados_remove(img->md_io, oid);
	return r == -ENOENT ? 0 : r;
}

/* Does snapshot snap (RBDL_NOSNAP: HEAD) of img reference a parent
 * (parent_overlap_get has a value)? */
static int refs_parent(struct rbdl_image *img, uint64_t snap, bool *has)
{
	char *buf;
	size_t len;
	uint64_t ov;
	int r = rbdl_cls_read_arg_u64(img->md_io, img->header_oid,
				      "parent_overlap_get", snap, &buf, &len);

	*has = false;
	if (r == -EOPNOTSUPP)
		return 0;
	if (r < 0)
		return r;
	r = rbdl_decode_parent_overlap(buf, len, has, &ov);
	rados_buffer_free(buf);
	return r;
}

/* DetachChildRequest's clone v2 epilogue (maint.h). */
void rbdl_maint_remove_trashed_parent_snap(rados_ioctx_t pio, const char *pid,
					   uint64_t psnap)
{
	struct rbdl_snap_info si;
	struct rbdl_handle *h;
	char oid[RBDL_OID_MAX];
	int r;

	rbdl_oid_header(oid, sizeof(oid), pid);
	if (rbdl_read_snapshot_info(pio, oid, psnap, &si) < 0)
		return;
	bool gone = si.ns_type == 2 && si.child_count == 0;

	rbdl_snap_info_free(&si);
	if (!gone)
		return;
	r = rbdl_image_open(pio, NULL, pid, NULL, false, &h);
	if (r == 0) {
		r = rbdl_maint_snap_remove_id(h->img, psnap);
		rbdl_image_close(h);
	}
	if (r < 0 && r != -ENOENT)
		rbdl_log("parent image %s: trashed snapshot %" PRIu64
			 " not removed (%d)", pid, psnap, r);
}

int rbdl_maint_prune_trash_snaps(rados_ioctx_t io, const char *id,
				 const uint64_t *ids, uint32_t n)
{
	struct rbdl_handle *h;
	int ret = 0, r = rbdl_image_open(io, NULL, id, NULL, false, &h);

	if (r < 0)
		return r;
	for (uint32_t i = 0; i < n; i++) {
		r = rbdl_maint_snap_remove_id(h->img, ids[i]);
		if (r == -EBUSY) {
			ret = -ECHILD;	/* an attached child: skipped */
		} else if (r < 0 && r != -ENOENT) {
			ret = r;
			break;
		}
	}
	rbdl_image_close(h);
	return ret;
}

/*
 * SnapshotRemoveRequest::detach_child: a snapshot of a clone whose HEAD no
 * longer has the parent (flattened without deep-flatten) and which is the
 * last snapshot referencing it takes the image off the parent's children
 * (clone v2: child_detach on the parent header, then a trashed parent
 * snapshot without children goes; v1: remove_child on rbd_children of our
 * pool).  Already detached (-ENOENT) is fine.
 */
static int detach_last_ref(struct rbdl_image *img, uint64_t snap_id)
{
	struct rbdl_parent_spec ps;
	char *buf, *ns = NULL, oid[RBDL_OID_MAX];
	uint64_t *ids = NULL, opf = 0;
	uint32_t n = 0;
	uint8_t in[1024];
	rados_ioctx_t pio = NULL;
	size_t len;
	bool has;
	long m;
	int r = refs_parent(img, snap_id, &has);

	if (r < 0 || !has)
		return r;
	r = refs_parent(img, RBDL_NOSNAP, &has);
	if (r < 0 || has)
		return r;	/* HEAD keeps the same parent */
	ids = rbdl_image_snap_ids(img, &n);
	if (!ids)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && r == 0 && !has; i++)
		if (ids[i] != snap_id)
			r = refs_parent(img, ids[i], &has);
	free(ids);
	if (r < 0 || has)
		return r;	/* another snapshot still references it */
	r = rbdl_cls_read(img->md_io, img->header_oid, "rbd", "parent_get",
			  NULL, 0, &buf, &len);
	if (r < 0)
		return r;
	r = rbdl_decode_parent_spec(buf, len, &ps);
	rados_buffer_free(buf);
	if (r < 0)
		return r;
	if (ps.pool_id < 0)
		goto out;
	r = rbdl_cls_read_u64(img->md_io, img->header_oid, "op_features_get",
			      NULL, 0, &opf);
	if (r < 0 && r != -EOPNOTSUPP)
		goto out;
	if (opf & RBD_OPERATION_FEATURE_CLONE_CHILD) {
		r = rbdl_ioctx_namespace(img->md_io, &ns);
		if (r == 0)
			r = rbdl_ioctx_dup(img->cluster, ps.pool_id,
					   ps.pool_namespace, &pio);
		if (r < 0)
			goto out;
		rbdl_oid_header(oid, sizeof(oid), ps.image_id);
		m = rbdl_encode_child_detach(in, sizeof(in), ps.snap_id,
					     img->md_pool_id, img->id, ns);
		r = m < 0 ? (int)m
			  : rbdl_cls_write(pio, oid, "rbd", "child_detach", in,
					   (size_t)m);
		if (r == -ENOENT)
			r = 0;
		if (r == 0)
			rbdl_maint_remove_trashed_parent_snap(pio, ps.image_id, ps.snap_id);
	} else {
		r = rbdl_ioctx_dup(img->cluster, img->md_pool_id, "", &pio);
		if (r < 0)
			goto out;
		m = rbdl_encode_remove_child(in, sizeof(in), ps.pool_id,
					     ps.image_id, ps.snap_id, img->id);
		r = m < 0 ? (int)m
			  : rbdl_cls_write(pio, "rbd_children", "rbd",
					   "remove_child", in, (size_t)m);
		if (r == -ENOENT)
			r = 0;
	}
out:
	if (pio)
		rados_ioctx_destroy(pio);
	free(ns);
	rbdl_parent_spec_free(&ps);
	return r;
}

/*
 * SnapshotRemoveRequest::detach_stale_child: clone v2 children of the
 * snapshot whose pool no longer exists are detached from it; *children is
 * what is left attached.
 */
static int detach_stale_children(struct rbdl_image *img, uint64_t snap_id,
				 uint32_t *children)
{
	struct rbdl_child_spec *v;
	uint32_t n, left = 0;
	uint8_t in[1024];
	long m;
	int r = rbdl_read_children(img->md_io, img->header_oid, snap_id, &v,
				   &n);

	if (r < 0)
		return r;
	for (uint32_t i = 0; i < n && r == 0; i++) {
		rados_ioctx_t cio;

		r = rbdl_ioctx_dup(img->cluster, v[i].pool_id, v[i].pool_ns,
				   &cio);
		if (r == 0) {
			rados_ioctx_destroy(cio);
			left++;
			continue;
		}
		if (r != -ENOENT)
			break;
		m = rbdl_encode_child_detach(in, sizeof(in), snap_id,
					     v[i].pool_id, v[i].image_id,
					     v[i].pool_ns);
		r = m < 0 ? (int)m
			  : rbdl_maint_hdr_write(img, "child_detach", in,
						 (size_t)m);
		if (r == -ENOENT)
			r = 0;
	}
	rbdl_child_specs_free(v, n);
	if (r == 0)
		*children = left;
	return r;
}

/*
 * SnapshotRemoveRequest for snapshot snap_id of any namespace: protected
 * (not merely unprotecting) -> -EBUSY; snapshot_trash_add (skipped for a
 * trash snapshot); clone v2 children in pools that are gone are detached;
 * the last reference to a parent the HEAD no longer has
 * detaches the image from it (detach_last_ref); with clone v2 children attached it stays in the trash
 * namespace (success if we put it there, -EBUSY if it was there already);
 * otherwise its object map goes (fast-diff: folded into the next), the
 * snapshot id is released and snapshot_remove drops it from the header.
 */
int rbdl_maint_snap_remove_id(struct rbdl_image *img, uint64_t snap_id)
{
	struct rbdl_snap_info si;
	uint8_t in[8], prot = 0;
	bool trashed = false;
	int r;

	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	r = rbdl_read_snapshot_info(img->md_io, img->header_oid, snap_id, &si);
	if (r == -EINVAL)
		r = -ENOENT;	/* CEPH_NOSNAP */
	if (r < 0)
		return r;
	if (img->open_ro) {
		rbdl_snap_info_free(&si);
		return -EROFS;
	}
	uint32_t ns_type = si.ns_type;

	rbdl_snap_info_free(&si);
	r = protection_status(img, snap_id, &prot);
	if (r < 0 && r != -EOPNOTSUPP)
		return r;
	if (prot == 2)	/* RBD_PROTECTION_STATUS_PROTECTED */
		return -EBUSY;
	/* librbd proxies to (or takes) the lock only with fast-diff. */
	r = rbdl_maint_begin2(img, (atomic_load(&img->features) &
			       RBD_FEATURE_FAST_DIFF) != 0, RBDL_MAINT_AT_SNAP);
	if (r < 0)
		return r;
	rbdl_put_le64(in, snap_id);
	if (ns_type != 2) {
		r = rbdl_maint_hdr_write(img, "snapshot_trash_add", in,
					 sizeof(in));
		if (r < 0 && r != -EOPNOTSUPP && r != -EEXIST)
			goto out;
		trashed = r != -EOPNOTSUPP;
	}
	r = rbdl_read_snapshot_info(img->md_io, img->header_oid, snap_id, &si);
	if (r < 0)
		goto out;
	uint32_t children = si.child_count;

	rbdl_snap_info_free(&si);
	if (children) {
		r = detach_stale_children(img, snap_id, &children);
		if (r < 0)
			goto out;
	}
	r = detach_last_ref(img, snap_id);
	if (r < 0)
		goto out;
	if (children == 0) {
		/* Without clones it goes for good. */
		if (atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP) {
			r = snap_remove_map(img, snap_id);
			if (r < 0)
				goto out;
		}
		r = rados_ioctx_selfmanaged_snap_remove(img->rd_io, snap_id);
		if (r < 0 && r != -ENOENT)
			goto out;
		r = rbdl_maint_hdr_write(img, "snapshot_remove", in, sizeof(in));
		if (r < 0)
			goto out;
	} else if (!trashed) {
		r = -EBUSY;	/* a clone v2 child still uses it */
	}
	if (r == 0)
		r = rbdl_maint_refresh(img);
	else
		rbdl_maint_refresh(img);
	rbdl_maint_notify(img);
out:
	rbdl_maint_end(img);
	return r;
}

int rbdl_maint_snap_remove(struct rbdl_image *img, const char *name)
{
	uint64_t snap_id;
	int r = rbdl_maint_lookup_snap(img, name, &snap_id, NULL);

	if (r < 0)
		return r;
	if (img->open_ro)
		return -EROFS;
	return rbdl_maint_snap_remove_id(img, snap_id);
}

/* object_map SnapshotRollbackRequest: HEAD's map := the snapshot's.
 * *snap_bits (malloc'ed, may stay NULL) is the snapshot map. */
static int rollback_map(struct rbdl_image *img, uint64_t snap_id,
			uint8_t **snap_bits, uint64_t *snap_n)
{
	char oid[RBDL_OID_MAX], *buf;
	size_t len;
	int r;

	rbdl_oid_object_map(oid, sizeof(oid), img->id, snap_id);
	r = rbdl_read_object(img->md_io, oid, &buf, &len);
	if (r == 0) {
		if (rbdl_decode_object_map(buf, len, snap_bits, snap_n) < 0)
			*snap_bits = NULL;
		rados_write_op_t op = rados_create_write_op();
		uint8_t ain[64];
		long n = rbdl_encode_lock_assert(ain, sizeof(ain), "rbd_lock",
						 RBDL_LOCK_EXCLUSIVE, "", "");

		if (!op) {
			free(buf);
			return -ENOMEM;
		}
		rados_write_op_exec(op, "lock", "assert_locked",
				    (const char *)ain, (size_t)n, NULL);
		rados_write_op_write_full(op, buf, len);
		r = rados_write_op_operate(op, img->md_io, rbdl_objmap_oid(img->om), NULL, 0);
		rados_release_write_op(op);
		free(buf);
	}
	if (r < 0) {
		rbdl_err("image %s: object map rollback failed (%d)", img->name,
			 r);
		rbdl_objmap_invalidate(img, "rollback failed");
	}
	return 0;
}

int rbdl_maint_snap_rollback2(struct rbdl_image *img, const char *name,
			      rbdl_progress_fn cb, void *arg)
{
	uint8_t *snap_bits = NULL;
	uint64_t snap_n = 0;
	int r;

	uint64_t snap_id, snap_size;

	r = rbdl_maint_lookup_snap(img, name, &snap_id, &snap_size);
	if (r < 0)
		return r;
	if (rbdl_image_snap_gone(img))
		return -ENOENT;	/* librbd: checked before read-only */
	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	/* librbd only tries the lock for a rollback: it never asks the
	 * owner (-EROFS while another client holds it). */
	r = rbdl_maint_begin2(img, true, RBDL_MAINT_TRY_LOCK);
	if (r < 0)
		return r;
	r = rbdl_maint_do_resize(img, snap_size);
	if (r < 0)
		goto done;
	r = rbdl_maint_refresh(img);	/* size (and the map's length) */
	if (r < 0)
		goto done;
	bool map = rbdl_objmap_usable(img->om);

	if (map)
		rollback_map(img, snap_id, &snap_bits, &snap_n);

	rados_ioctx_t io = atomic_load_explicit(&img->wr_io,
						memory_order_acquire);
	uint64_t nobjs = rbdl_layout_num_objects(&img->layout, snap_size);

	for (uint64_t o = 0; o < nobjs; o++) {
		char oid[RBDL_OID_MAX];
		int q;

		/* Skip only what neither HEAD nor the snapshot has. */
		if (!(map && snap_bits && o < snap_n &&
		      !rbdl_maint_may_exist(img, o) &&
		      rbdl_om_state(snap_bits, o) == RBDL_OBJ_NONEXISTENT)) {
			rbdl_oid_data(oid, sizeof(oid), img->object_prefix, o);
			q = rados_ioctx_selfmanaged_snap_rollback(io, oid,
								  snap_id);
			if (q < 0 && q != -ENOENT) {
				r = q;
				break;
			}
		}
		/* AsyncObjectThrottle: progress after each object, skipped
		 * ones included; a negative answer stops the rollback and is
		 * its result. */
		if (cb) {
			q = cb(o, nobjs, arg);
			if (q < 0) {
				r = q;
				break;
			}
		}
	}
	free(snap_bits);
	if (r == 0)
		r = rbdl_maint_refresh(img);
	else
		rbdl_maint_refresh(img);
done:
	rbdl_maint_notify(img);
	rbdl_maint_end(img);
	return r;
}

int rbdl_maint_snap_rollback(struct rbdl_image *img, const char *name)
{
	return rbdl_maint_snap_rollback2(img, name, NULL, NULL);
}
