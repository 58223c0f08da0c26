/*
 * snap.c - rbd_snap_create, rbd_snap_remove and rbd_snap_rollback as
 * librbd 16.2's SnapshotCreateRequest, SnapshotRemoveRequest and
 * SnapshotRollbackRequest (with their object_map counterparts) do them;
 * the sequences are in maint.c's comment.
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

int rbdl_maint_snap_create(struct rbdl_image *img, const char *name)
{
	struct rbdl_snap_info si;
	uint64_t snap_id = 0;
	int r;

	if (!name)
		return -EINVAL;
	if (img->open_ro)
		return -EROFS;
	r = rbdl_maint_begin(img, true);
	if (r < 0)
		return r;
	r = rbdl_maint_find_snap(img, name, &si);
	if (r == 0) {
		rbdl_snap_info_free(&si);
		r = -EEXIST;
		goto out;
	}
	if (r != -ENOENT)
		goto out;
	for (int tries = 0;; tries++) {
		uint8_t in[512];
		struct rbdl_enc e;
		size_t tok;

		/* Snapshot ids come from the pool holding the data. */
		r = rados_ioctx_selfmanaged_snap_create(img->rd_io, &snap_id);
		if (r < 0)
			goto out;
		rbdl_enc_init(&e, in, sizeof(in));
		rbdl_enc_str(&e, name);
		rbdl_enc_u64(&e, snap_id);
		tok = rbdl_enc_struct_start(&e, 1, 1);	/* SnapshotNamespace */
		rbdl_enc_u32(&e, 0);			/* user */
		rbdl_enc_struct_end(&e, tok);
		r = e.err ? -ENAMETOOLONG
			  : rbdl_maint_hdr_write(img, "snapshot_add", in, e.len);
		if (r == 0)
			break;
		rados_ioctx_selfmanaged_snap_remove(img->rd_io, snap_id);
		if (r != -ESTALE || tries >= SNAP_ID_RETRIES)
			goto out;
	}
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
	return r;
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

int rbdl_maint_snap_remove(struct rbdl_image *img, const char *name)
{
	struct rbdl_snap_info si;
	uint8_t in[8], prot = 0;
	int r;

	uint64_t snap_id;

	r = rbdl_maint_lookup_snap(img, name, &snap_id, NULL);
	if (r < 0)
		return r;
	if (img->open_ro)
		return -EROFS;
	r = protection_status(img, snap_id, &prot);
	if (r < 0 && r != -EOPNOTSUPP)
		return r;
	if (prot != 0)	/* protected or unprotecting */
		return -EBUSY;
	/* librbd proxies to (or takes) the lock only with fast-diff. */
	r = rbdl_maint_begin(img, (atomic_load(&img->features) &
			      RBD_FEATURE_FAST_DIFF) != 0);
	if (r < 0)
		return r;
	rbdl_put_le64(in, snap_id);
	r = rbdl_maint_hdr_write(img, "snapshot_trash_add", in, sizeof(in));
	if (r < 0 && r != -EOPNOTSUPP)
		goto out;
	r = rbdl_read_snapshot_info(img->md_io, img->header_oid, snap_id, &si);
	if (r < 0)
		goto out;
	uint32_t children = si.child_count;

	rbdl_snap_info_free(&si);
	if (children == 0) {
		/* Without clones it goes for good. */
		if (atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP) {
			r = snap_remove_map(img, snap_id);
			if (r < 0)
				goto out;
		}
		r = rbdl_maint_hdr_write(img, "snapshot_remove", in, sizeof(in));
		if (r < 0)
			goto out;
		r = rados_ioctx_selfmanaged_snap_remove(img->rd_io, snap_id);
		if (r == -ENOENT)
			r = 0;
		if (r < 0)
			goto out;
	}
	r = rbdl_maint_refresh(img);
	rbdl_maint_notify(img);
out:
	rbdl_maint_end(img);
	return r;
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
		rbdl_log("image %s: object map rollback failed (%d)", img->name,
			 r);
		rbdl_objmap_invalidate(img, "rollback failed");
	}
	return 0;
}

int rbdl_maint_snap_rollback(struct rbdl_image *img, const char *name)
{
	uint8_t *snap_bits = NULL;
	uint64_t snap_n = 0;
	int r;

	uint64_t snap_id, snap_size;

	r = rbdl_maint_lookup_snap(img, name, &snap_id, &snap_size);
	if (r < 0)
		return r;
	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	r = rbdl_maint_begin(img, true);
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
		if (map && snap_bits && o < snap_n && !rbdl_maint_may_exist(img, o) &&
		    rbdl_om_state(snap_bits, o) ==
			    RBDL_OBJ_NONEXISTENT)
			continue;
		rbdl_oid_data(oid, sizeof(oid), img->object_prefix, o);
		q = rados_ioctx_selfmanaged_snap_rollback(io, oid, snap_id);
		if (q < 0 && q != -ENOENT) {
			r = q;
			break;
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
