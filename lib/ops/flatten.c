/*
 * flatten.c - rbd_flatten as librbd 16.2's Operations::flatten and
 * operation::FlattenRequest do it: every object the parent still backs
 * (objects [0, objects of the HEAD overlap)) is copied up through the
 * data path's copy-up (io.h: the parent's data, a deep copy-up when the
 * clone has snapshots), with the HEAD object map recording each object
 * before its data exists; then the clone leaves its parent's children
 * (DetachChildRequest: v2 child_detach on the parent's header -- and a
 * parent snapshot waiting in the trash namespace for its last child to
 * go is removed --, v1 remove_child on rbd_children; skipped when
 * snapshots without deep-flatten still need the parent) and its header drops the parent
 * (parent_detach).  Watchers are notified and our view refreshed.
 *
 * Progress: after each object, cb(object number, overlap objects, arg),
 * as librbd's AsyncObjectThrottle reports the objects it starts; a
 * negative return stops the walk and is the call's result.
 *
 * Threading: the caller's thread, as a maintenance operation
 * (maint_int.h): lock owner with our writes drained for its whole run.
 */
#include "config.h"

#include "clone.h"
#include "maint.h"
#include "maint_int.h"

#include "core/internal.h"
#include "image/load.h"
#include "image/objmap.h"
#include "image/open.h"
#include "image/refresh.h"
#include "image/state.h"
#include "io/io.h"
#include "proto/cls_rbd.h"
#include "proto/oid.h"
#include "proto/rados.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rbd/features.h"
#include "rbd/librbd.h"

#define IN_MAX (2 * RBDL_OID_MAX + 64)

/* The HEAD parent link (parent_get, parent_overlap_get): pool_id -1 if
 * there is none. */
static int head_parent(struct rbdl_image *img, struct rbdl_parent_spec *ps,
		       uint64_t *overlap)
{
	char *out;
	size_t outlen;
	bool has = false;
	int r = rbdl_cls_read(img->md_io, img->header_oid, "rbd", "parent_get",
			      NULL, 0, &out, &outlen);

	memset(ps, 0, sizeof(*ps));
	ps->pool_id = -1;
	*overlap = 0;
	if (r < 0)
		return r;
	r = rbdl_decode_parent_spec(out, outlen, ps);
	rados_buffer_free(out);
	if (r < 0 || ps->pool_id < 0)
		return r;
	r = rbdl_cls_read_arg_u64(img->md_io, img->header_oid,
				  "parent_overlap_get", RBDL_NOSNAP, &out,
				  &outlen);
	if (r < 0)
		return r;
	r = rbdl_decode_parent_overlap(out, outlen, &has, overlap);
	rados_buffer_free(out);
	if (r == 0 && !has)
		ps->pool_id = -1;	/* HEAD no longer has a parent */
	return r;
}

static bool object_exists(struct rbdl_image *img, uint64_t objno)
{
	char oid[RBDL_DATA_OID_MAX];
	uint64_t size;
	time_t mtime;

	if (rbdl_oid_data(oid, sizeof(oid), img->object_prefix, objno) < 0)
		return true;
	return rados_stat(img->rd_io, oid, &size, &mtime) != -ENOENT;
}

/* C_FlattenObject: one object, copied up unless it is there already. */
static int flatten_object(struct rbdl_image *img, uint64_t objno)
{
	bool om = rbdl_objmap_usable(img->om) &&
		  objno < rbdl_objmap_count(img->om);
	bool marked = false;
	int r;

	if (om && rbdl_objmap_trusted(img->om)) {
		uint8_t st = rbdl_objmap_get(img->om, objno);

		/* object_may_not_exist() is false: nothing to do */
		if (st == RBDL_OBJ_EXISTS || st == RBDL_OBJ_EXISTS_CLEAN)
			return 0;
	}
	if (object_exists(img, objno))
		return 0;	/* its own data (copyup would be a no-op) */
	if (om && rbdl_objmap_get(img->om, objno) != RBDL_OBJ_EXISTS) {
		/* the map records the object before its data exists */
		r = rbdl_objmap_update_sync(img, objno, objno + 1,
					    RBDL_OBJ_EXISTS, RBDL_OM_ANY_STATE);
		if (r < 0)
			return r;
		marked = true;
	}
	r = rbdl_io_copyup_sync(img, objno, false);
	if (r == 0 && marked && !object_exists(img, objno)) {
		/* the parent held only zeros there: librbd copies nothing up
		 * and leaves the map as it was */
		r = rbdl_objmap_update_sync(img, objno, objno + 1,
					    RBDL_OBJ_NONEXISTENT,
					    RBDL_OBJ_EXISTS);
	}
	return r;
}

/* DetachChildRequest. */
static int detach_child(struct rbdl_image *img,
			const struct rbdl_parent_spec *ps)
{
	uint8_t in[IN_MAX];
	uint64_t opf = 0;
	char oid[RBDL_OID_MAX], *ns = NULL;
	rados_ioctx_t pio;
	long n;
	int r = rbdl_cls_read_u64(img->md_io, img->header_oid, "op_features_get",
				  NULL, 0, &opf);

	if (r < 0 && r != -EOPNOTSUPP)
		return r;
	if (opf & RBD_OPERATION_FEATURE_CLONE_CHILD) {
		r = rbdl_ioctx_namespace(img->md_io, &ns);
		if (r < 0)
			return r;
		r = rbdl_ioctx_dup(img->cluster, ps->pool_id, ps->pool_namespace,
				   &pio);
		if (r < 0) {
			free(ns);
			return r;
		}
		rbdl_oid_header(oid, sizeof(oid), ps->image_id);
		n = rbdl_encode_child_detach(in, sizeof(in), ps->snap_id,
					     img->md_pool_id, img->id, ns);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(pio, oid, "rbd", "child_detach", in,
					   (size_t)n);
		if (r == 0 || r == -ENOENT)
			rbdl_maint_remove_trashed_parent_snap(
				pio, ps->image_id, ps->snap_id);
		rados_ioctx_destroy(pio);
		free(ns);
	} else {
		n = rbdl_encode_remove_child(in, sizeof(in), ps->pool_id,
					     ps->image_id, ps->snap_id, img->id);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(img->md_io, RBDL_OID_CHILDREN, "rbd",
					   "remove_child", in, (size_t)n);
	}
	return r == -ENOENT ? 0 : r;
}

int rbdl_op_flatten(struct rbdl_image *img, rbdl_progress_fn cb, void *arg)
{
	struct rbdl_parent_spec ps;
	uint64_t overlap, nobjs;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	/* librbd's order: a read-only open, no parent, then a handle at a
	 * snapshot (refused when the flatten starts). */
	if (img->open_ro)
		return -EROFS;
	r = head_parent(img, &ps, &overlap);
	if (r == 0 && ps.pool_id < 0)
		r = -EINVAL;	/* image has no parent */
	rbdl_parent_spec_free(&ps);
	if (r < 0)
		return r;
	if (img->read_only)
		return -EROFS;

	r = rbdl_maint_begin(img, true);
	if (r < 0)
		return r;
	/* execute_flatten, as lock owner */
	r = head_parent(img, &ps, &overlap);
	if (r == 0 && ps.pool_id < 0) {
		r = 0;	/* flattened meanwhile: librbd's -EINVAL becomes 0 */
		goto out;
	}
	if (r < 0)
		goto out;
	if (overlap > atomic_load(&img->size))
		overlap = atomic_load(&img->size);
	nobjs = rbdl_layout_num_objects(&img->layout, overlap);
	for (uint64_t o = 0; o < nobjs; o++) {
		r = flatten_object(img, o);
		if (r < 0)
			break;
		if (cb) {
			int q = cb(o, nobjs, arg);

			if (q < 0) {
				r = q;
				break;
			}
		}
	}
	if (r == 0) {
		uint64_t features = atomic_load(&img->features);

		pthread_mutex_lock(&img->refresh_lock);
		bool snaps = img->nsnaps > 0;

		pthread_mutex_unlock(&img->refresh_lock);
		if ((features & RBD_FEATURE_DEEP_FLATTEN) || !snaps)
			r = detach_child(img, &ps);
	}
	if (r == 0) {
		r = rbdl_maint_hdr_write(img, "parent_detach", NULL, 0);
		if (r == -ENOENT)
			r = 0;	/* already flattened */
	}
	{
		int q = rbdl_maint_refresh(img);

		rbdl_maint_notify(img);
		if (r == 0)
			r = q;
	}
out:
	rbdl_parent_spec_free(&ps);
	rbdl_maint_end(img);
	if (r == -EINVAL)
		r = 0;	/* Operations::flatten: r < 0 && r != -EINVAL */
	return r;
}

int rbdl_op_flatten_children(struct rbdl_image *img, const char *snap_name,
			     rbdl_progress_fn cb, void *arg)
{
	struct rbdl_child_list l = { 0 };
	uint64_t snap_id, size;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	pthread_mutex_lock(&img->refresh_lock);
	r = rbdl_image_find_snap(img, snap_name, &snap_id, &size);
	pthread_mutex_unlock(&img->refresh_lock);
	if (r == -ENOENT)
		return 0;	/* the removal reports it */
	if (r < 0)
		return r;
	r = rbdl_op_list_snap_children(img, snap_id, &l);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		const struct rbdl_child *c = &l.v[i];
		struct rbdl_handle *h;
		rados_ioctx_t io;

		r = rbdl_ioctx_dup(img->cluster, c->pool_id, c->pool_namespace,
				   &io);
		if (r < 0)
			break;
		r = rbdl_image_open(io, NULL, c->image_id, NULL, false, &h);
		rados_ioctx_destroy(io);	/* the image has its own */
		if (r < 0) {
			rbdl_log("flatten children of %s@%s: cannot open %s/%s "
				 "(%d)", img->name, snap_name, c->pool_name,
				 c->image_name ? c->image_name : c->image_id, r);
			break;
		}
		struct rbdl_image *ci = h->img;
		bool snaps;

		pthread_mutex_lock(&ci->refresh_lock);
		snaps = ci->nsnaps > 0;
		pthread_mutex_unlock(&ci->refresh_lock);
		if (!(atomic_load(&ci->features) & RBD_FEATURE_DEEP_FLATTEN) &&
		    snaps) {
			rbdl_log("snapshot %s@%s is in use by %s/%s, which has "
				 "snapshots and no deep-flatten", img->name,
				 snap_name, c->pool_name, ci->name);
			r = -EBUSY;
		} else {
			r = rbdl_op_flatten(ci, NULL, NULL);
		}
		int rc = rbdl_image_close(h);

		if (r == 0)
			r = rc;
		if (r == 0 && cb)
			cb(i + 1, l.n, arg);	/* librbd ignores its return */
	}
	rbdl_child_list_free(&l);
	return r;
}
