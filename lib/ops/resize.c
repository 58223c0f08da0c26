/*
 * resize.c - rbd_resize, rbd_resize2 and rbd_resize_with_progress as
 * librbd 16.2's operation::ResizeRequest and TrimRequest do them (the
 * sequence is in maint.c's comment): trim the objects past the new end
 * with the object map transitions librbd makes, copying up what a clone's
 * snapshots still need; check the stored map before the header takes the
 * new size; resize the map.  A progress callback is called per object of
 * the copy-up and removal phases as librbd's AsyncObjectThrottle calls it;
 * its negative return stops the trim where librbd's stops (the header
 * keeps its size, the map its PENDING entries) and is the result.
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

#define OBJ_WINDOW 16			/* concurrent object removals */
#define MAX_OBJECT_MAP_OBJECTS 256000000ULL	/* cls_rbd's limit */

/* A caller's progress callback (rbd_resize2, rbd_resize_with_progress):
 * called as librbd's AsyncObjectThrottle calls it, once per object of the
 * trim, in object order; a negative return stops the trim with that value. */
struct progress {
	int (*fn)(uint64_t, uint64_t, void *);
	void *arg;
};

static int report(const struct progress *p, uint64_t o, uint64_t total)
{
	return p && p->fn ? p->fn(o, total, p->arg) : 0;
}

/* Remove whole object objno, with the object map transitions librbd makes
 * (PENDING before, NONEXISTENT after).  Synchronous. */
static int remove_one(struct rbdl_image *img, rados_ioctx_t io,
		      uint64_t objno, bool known)
{
	char oid[RBDL_OID_MAX];
	int r;

	/* known: the object may exist whatever the in-memory map says (it
	 * was just copied up, or the on-disk map records it). */
	if (!known && !rbdl_maint_may_exist(img, objno))
		return 0;
	if (rbdl_objmap_usable(img->om)) {
		r = rbdl_objmap_update_sync(img, objno, objno + 1, RBDL_OBJ_PENDING,
			      RBDL_OBJ_EXISTS);
		if (r < 0)
			return r;
	}
	rbdl_oid_data(oid, sizeof(oid), img->object_prefix, objno);
	r = rados_remove(io, oid);
	if (r < 0 && r != -ENOENT)
		return r;
	if (rbdl_objmap_usable(img->om))
		return rbdl_objmap_update_sync(img, objno, objno + 1, RBDL_OBJ_NONEXISTENT,
				 RBDL_OBJ_PENDING);
	return 0;
}

/* A clone with snapshots, before object o (which still shows parent data)
 * goes: its parent data is copied up, so that the snapshots keep it (the
 * discard librbd sends is guarded and copies up first). */
static int copyup_for_remove(struct rbdl_image *img, uint64_t o)
{
	int r = 0;

	/* The map records the object before its data can exist. */
	if (rbdl_objmap_usable(img->om) && !rbdl_maint_may_exist(img, o))
		r = rbdl_objmap_update_sync(img, o, o + 1, RBDL_OBJ_EXISTS, RBDL_OM_ANY_STATE);
	if (r == 0)
		r = rbdl_io_copyup_sync(img, o, false);
	return r;
}

/*
 * The progress callback stopped the trim in its copy-up phase, after
 * objects [start, done) were copied up.  librbd's TrimRequest has by then
 * marked [start, nobjs) PENDING in the object map (its PRE_TRIM step comes
 * first) and each of those objects' copy-up op has also removed the HEAD
 * object (the snapshots keep the data); the rest is untouched.  The same
 * state here, then the callback's value.
 */
static int cancel_in_copyup(struct rbdl_image *img, rados_ioctx_t io,
			    uint64_t start, uint64_t done, uint64_t nobjs,
			    int why)
{
	int r = 0;

	if (rbdl_objmap_usable(img->om))
		r = rbdl_objmap_update_sync(img, start, nobjs, RBDL_OBJ_PENDING,
					    RBDL_OBJ_EXISTS);
	for (uint64_t o = start; r == 0 && o < done; o++) {
		char oid[RBDL_OID_MAX];

		rbdl_oid_data(oid, sizeof(oid), img->object_prefix, o);
		r = rados_remove(io, oid);
		if (r == -ENOENT)
			r = 0;
	}
	return r < 0 ? r : why;
}

/*
 * TrimRequest: drop the data in [new_size, old_size).  librbd 16.2: the
 * objects from the first object set wholly past new_size on are removed
 * (object map PENDING, remove, NONEXISTENT; a clone with snapshots copies
 * up those still showing parent data first); then the boundary
 * [new_size, end of its object set or old_size) is discarded object by
 * object, and an object whose part of it starts at object offset 0 lies
 * wholly past new_size: it is removed like the others, however short that
 * part (the old end may lie inside the set).  Only the objects keeping
 * data below new_size are truncated (part reaching the object end) or
 * zeroed.
 */
static int trim(struct rbdl_image *img, uint64_t old_size, uint64_t new_size,
		const struct progress *prog)
{
	const struct rbdl_layout *l = &img->layout;
	rados_ioctx_t io = atomic_load_explicit(&img->wr_io,
						memory_order_acquire);
	/* librbd's "stripe period" is a whole object set. */
	uint64_t period = l->object_size * l->stripe_count;
	uint64_t periods = new_size / period + (new_size % period != 0);
	uint64_t delete_off = periods * period;
	uint64_t start = periods * l->stripe_count;
	uint64_t nobjs = rbdl_layout_num_objects(l, old_size);
	struct rbdl_win w;
	int r;

	if (!io)
		return -EROFS;
	rbdl_win_init(&w, OBJ_WINDOW);
	if (delete_off > old_size)
		delete_off = old_size;
	/* A clone with snapshots: the objects about to go keep their parent
	 * data in the snapshots (librbd's COPYUP_OBJECTS step). */
	const struct rbdl_pview *pv = rbdl_parent_view(img);
	uint64_t backed = rbdl_layout_num_objects(l, pv->overlap);
	/* Objects [start, copied) may have been copied up just now (the
	 * in-memory map, read by rbdl_maint_may_exist, is not updated until the
	 * maintenance ends): remove them whatever the map said. */
	uint64_t copied = atomic_load(&img->wr_nsnaps) ? backed : 0;
	/* librbd's COPYUP_OBJECTS reports [start, copyup end) against the
	 * copy-up end, REMOVE_OBJECTS the rest against the object count. */
	uint64_t copy_end = copied < nobjs ? copied : nobjs;

	for (uint64_t o = start; o < copy_end; o++) {
		r = copyup_for_remove(img, o);
		if (r < 0)
			return r;
		r = report(prog, o, copy_end);
		if (r < 0)
			return cancel_in_copyup(img, io, start, o + 1, nobjs, r);
	}
	if (start < nobjs) {
		/* Which objects may exist is decided before the map moves
		 * them to PENDING (the map is not reloaded meanwhile). */
		if (rbdl_objmap_usable(img->om)) {
			r = rbdl_objmap_update_sync(img, start, nobjs, RBDL_OBJ_PENDING,
				      RBDL_OBJ_EXISTS);
			if (r < 0)
				return r;
		}
		int stop = 0;

		for (uint64_t o = start; o < nobjs; o++) {
			char oid[RBDL_OID_MAX];
			rados_write_op_t op;

			if (rbdl_maint_may_exist(img, o) || o < copied) {
				op = rados_create_write_op();
				if (!op) {
					rbdl_win_fail(&w, -ENOMEM);
					break;
				}
				rados_write_op_remove(op);
				rbdl_oid_data(oid, sizeof(oid),
					      img->object_prefix, o);
				rbdl_win_submit(&w, io, oid, op);
			}
			if (o >= copy_end) {
				stop = report(prog, o, nobjs);
				if (stop < 0)
					break;
			}
		}
		r = rbdl_win_drain(&w);
		/* A cancelled trim ends here, as librbd's: the objects sent
		 * are gone, the map keeps them PENDING, the size is kept. */
		if (stop < 0)
			return stop;
		if (r < 0)
			return r;
		if (rbdl_objmap_usable(img->om)) {
			r = rbdl_objmap_update_sync(img, start, nobjs, RBDL_OBJ_NONEXISTENT,
				      RBDL_OBJ_PENDING);
			if (r < 0)
				return r;
		}
	}
	if (delete_off <= new_size)
		return 0;

	/* The boundary: the rest of the last object set still in use. */
	size_t no, np;

	rbdl_striper_count(l, new_size, delete_off - new_size, &no, &np);
	struct rbdl_objext *objs = malloc(no * sizeof(*objs));
	struct rbdl_piece *pieces = malloc(np * sizeof(*pieces));

	if (!objs || !pieces) {
		free(objs);
		free(pieces);
		return -ENOMEM;
	}
	r = rbdl_striper_map(l, new_size, delete_off - new_size, objs, no,
			     pieces, np, &no, &np);
	for (size_t i = 0; r == 0 && i < no; i++) {
		struct rbdl_objext *x = &objs[i];
		char oid[RBDL_OID_MAX];
		rados_write_op_t op;

		if (x->obj_off == 0) {
			/* Wholly past new_size: a whole-object delete. */
			bool up = x->objno < copied;

			r = up ? copyup_for_remove(img, x->objno) : 0;
			if (r == 0)
				r = remove_one(img, io, x->objno, up);
			continue;
		}
		/* A cut object of a clone gets its parent data first. */
		bool in_parent = x->objno < backed;

		if (!in_parent && !rbdl_maint_may_exist(img, x->objno))
			continue;
		/* A cut object has changed since the last snapshot (an
		 * EXISTS_CLEAN one becomes EXISTS, as for any discard). */
		if (rbdl_objmap_usable(img->om) && x->objno < rbdl_objmap_count(img->om) &&
		    rbdl_objmap_get(img->om, x->objno) != RBDL_OBJ_EXISTS) {
			r = rbdl_objmap_update_sync(img, x->objno, x->objno + 1,
				      RBDL_OBJ_EXISTS, RBDL_OM_ANY_STATE);
			if (r < 0)
				break;
		}
		if (in_parent)
			r = rbdl_io_copyup_sync(img, x->objno, true);
		if (r < 0)
			break;
		op = rados_create_write_op();
		if (!op) {
			r = -ENOMEM;
			break;
		}
		/* Never create an object just to cut it. */
		rados_write_op_assert_exists(op);
		if (x->obj_off + x->len == l->object_size)
			rados_write_op_truncate(op, x->obj_off);
		else
			rados_write_op_zero(op, x->obj_off, x->len);
		rbdl_oid_data(oid, sizeof(oid), img->object_prefix, x->objno);
		r = rados_write_op_operate(op, io, oid, NULL, 0);
		rados_release_write_op(op);
		if (r == -ENOENT)
			r = 0;
	}
	free(objs);
	free(pieces);
	return r;
}

static int set_size(struct rbdl_image *img, uint64_t size)
{
	uint8_t in[8];

	rbdl_put_le64(in, size);
	return rbdl_maint_hdr_write(img, "set_size", in, sizeof(in));
}

/*
 * Before the header takes a smaller size.  cls object_map_resize refuses
 * (-ESTALE) to drop an object the on-disk map does not record as
 * NONEXISTENT; failing only after set_size would leave a header and a map
 * that disagree.  So the map is checked first: an object past the new end
 * that it still records (the trim removed every one it knew of, so only
 * after an earlier change was cut short) is removed now, with the usual
 * transitions.  A failure here leaves the old size.
 */
static int shrink_map_ready(struct rbdl_image *img, uint64_t nobjs)
{
	rados_ioctx_t io = atomic_load_explicit(&img->wr_io,
						memory_order_acquire);
	uint8_t *bits = NULL;
	uint64_t n = 0;
	size_t outlen;
	char *out;
	int r = rbdl_cls_read(img->md_io, rbdl_objmap_oid(img->om), "rbd",
			      "object_map_load", NULL, 0, &out, &outlen);

	if (r == -ENOENT)
		return 0;	/* no map object: nothing to drop */
	if (r < 0)
		return r;
	r = rbdl_decode_object_map(out, outlen, &bits, &n);
	rados_buffer_free(out);
	if (r < 0)
		return 0;	/* undecodable: object_map_resize decides */
	for (uint64_t o = nobjs; r == 0 && o < n; o++) {
		if (rbdl_om_state(bits, o) == RBDL_OBJ_NONEXISTENT)
			continue;
		rbdl_log("image %s: object %" PRIu64 " past the new end is "
			 "still in the object map; removing it", img->name, o);
		r = remove_one(img, io, o, true);
	}
	free(bits);
	return r;
}

/* ResizeRequest without the notification. */
static int do_resize(struct rbdl_image *img, uint64_t size,
		     const struct progress *prog)
{
	uint64_t old = atomic_load(&img->size);
	uint64_t nobjs = rbdl_layout_num_objects(&img->layout, size);
	int r;

	if (size == old)
		return 0;
	if (size < old) {
		r = trim(img, old, size, prog);
		if (r == 0 && rbdl_objmap_usable(img->om))
			r = shrink_map_ready(img, nobjs);
		if (r == 0)
			r = set_size(img, size);
		if (r == 0 && rbdl_objmap_usable(img->om)) {
			r = rbdl_objmap_resize_sync(img, nobjs);
			/* As librbd's object map requests: a map that cannot
			 * follow is flagged invalid (a rebuild repairs it) and
			 * the resize stands; the error is returned only if
			 * the map already was invalid. */
			if (r < 0 && rbdl_objmap_trusted(img->om)) {
				rbdl_err("image %s: object map resize failed "
					 "(%d)", img->name, r);
				rbdl_objmap_invalidate(img, "was not resized");
				r = 0;
			}
		}
	} else {
		r = rbdl_objmap_usable(img->om) ? rbdl_objmap_resize_sync(img, nobjs) : 0;
		if (r == 0)
			r = set_size(img, size);
	}
	return r;
}

int rbdl_maint_do_resize(struct rbdl_image *img, uint64_t size)
{
	return do_resize(img, size, NULL);
}

int rbdl_maint_resize(struct rbdl_image *img, uint64_t size)
{
	return rbdl_maint_resize2(img, size, true, NULL, NULL);
}

int rbdl_maint_resize2(struct rbdl_image *img, uint64_t size,
		       bool allow_shrink,
		       int (*cb)(uint64_t, uint64_t, void *), void *arg)
{
	struct progress prog = { cb, arg };
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	/* librbd's order: the object map limit (Operations::resize), then
	 * read-only (execute_resize), then the shrink permission (once the
	 * request runs, as lock owner). */
	if ((atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP) &&
	    rbdl_layout_num_objects(&img->layout, size) >
		    MAX_OBJECT_MAP_OBJECTS)
		return -EINVAL;
	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	r = rbdl_maint_begin(img, true);
	if (r < 0)
		return r;
	uint64_t old = atomic_load(&img->size);

	if (size < old && !allow_shrink) {
		rbdl_maint_end(img);
		return -EINVAL;
	}
	r = do_resize(img, size, &prog);
	if (size != old) {
		int q = rbdl_maint_refresh(img);

		rbdl_maint_notify(img);
		if (r == 0)
			r = q;
	} else if (r == 0) {
		/* librbd notifies a resize to the current size too: every
		 * update watcher gets its callback. */
		rbdl_maint_notify(img);
	}
	rbdl_maint_end(img);
	return r;
}
