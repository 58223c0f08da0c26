/*
 * maint.c - resize, snapshot and metadata operations (see maint.h).
 *
 * Sequences (librbd 16.2):
 *   resize, shrink: trim (object map [start, n) -> PENDING, remove the
 *            whole objects past the last object set still in use, ->
 *            NONEXISTENT; discard the boundary extents of [new size, end
 *            of that set): one starting at object offset 0 removes its
 *            object, the others truncate or zero), set_size,
 *            object_map_resize (a failure flags the map invalid); the
 *            on-disk map is checked before set_size (see
 *            shrink_map_ready)
 *   resize, grow:   object_map_resize (new objects NONEXISTENT), set_size
 *   snap create:    selfmanaged snap id from the data pool, snapshot_add
 *            (-ESTALE: retry with a new id; -EEXIST: release the id), copy
 *            the HEAD object map to rbd_object_map.<id>.<snapid>, and with
 *            fast-diff object_map_snap_add (HEAD EXISTS -> EXISTS_CLEAN)
 *   snap remove:    snapshot_trash_add, snapshot_get (clones keep it in the
 *            trash), with fast-diff object_map_snap_remove into the next
 *            newer map (or HEAD), remove the snapshot's map object,
 *            snapshot_remove, release the selfmanaged snap id
 *   rollback:       resize to the snapshot's size, HEAD object map := the
 *            snapshot's, every object rolled back (the OSD removes those
 *            that did not exist at the snapshot)
 * Header writes carry lock.assert_locked with our cookie and object map
 * writes assert the map lock, as librbd's, when the image has the lock.
 *
 * Threading and ownership: see maint.h.  All calls are synchronous rados
 * calls; object removals are issued with a window of asynchronous ops.
 */
#include "config.h"

#include "image/parent.h"
#include "image/open.h"
#include "image/refresh.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "maint.h"
#include "proto/wire.h"
#include "proto/cls_rbd.h"
#include "proto/cls_lock.h"
#include "proto/notify.h"
#include "proto/objmap_wire.h"
#include "image/state.h"
#include "core/internal.h"
#include "io/io.h"
#include "image/lock.h"
#include "image/objmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

#define NOTIFY_TIMEOUT_MS 5000
#define OBJ_WINDOW 16			/* concurrent object removals */
#define MAX_OBJECT_MAP_OBJECTS 256000000ULL	/* cls_rbd's limit */
#define SNAP_ID_RETRIES 10
#define ANY_STATE 0xff			/* om_update: no current-state guard */

/* ---- small helpers -------------------------------------------------------- */

/* A write op on the header, guarded by our exclusive lock if any. */
static int hdr_write(struct rbdl_image *img, const char *method,
		     const void *in, size_t inlen)
{
	rados_write_op_t op = rados_create_write_op();
	uint8_t ain[128];
	int prv = 0, r;

	if (!op)
		return -ENOMEM;
	if (rbdl_lock_in_maint(img)) {
		char cookie[RBDL_LOCK_COOKIE_MAX];
		long n;

		rbdl_lock_cookie(img, cookie, sizeof(cookie));
		n = rbdl_encode_lock_assert(ain, sizeof(ain), "rbd_lock",
					    RBDL_LOCK_EXCLUSIVE, cookie,
					    "internal");
		if (n < 0) {
			rados_release_write_op(op);
			return (int)n;
		}
		rados_write_op_exec(op, "lock", "assert_locked",
				    (const char *)ain, (size_t)n, NULL);
	}
	rados_write_op_exec(op, "rbd", method, in, inlen, &prv);
	r = rados_write_op_operate(op, img->md_io, img->header_oid, NULL, 0);
	rados_release_write_op(op);
	if (r >= 0 && prv < 0)
		r = prv;
	return r < 0 ? r : 0;
}

/* A write op on an object map object; HEAD's asserts the map lock. */
static int om_write(struct rbdl_image *img, const char *oid, bool head,
		    const char *method, const void *in, size_t inlen)
{
	rados_write_op_t op = rados_create_write_op();
	uint8_t ain[64];
	int prv = 0, r;

	if (!op)
		return -ENOMEM;
	if (head) {
		long n = rbdl_encode_lock_assert(ain, sizeof(ain), "rbd_lock",
						 RBDL_LOCK_EXCLUSIVE, "", "");

		rados_write_op_exec(op, "lock", "assert_locked",
				    (const char *)ain, (size_t)n, NULL);
	}
	rados_write_op_exec(op, "rbd", method, in, inlen, &prv);
	r = rados_write_op_operate(op, img->md_io, oid, NULL, 0);
	rados_release_write_op(op);
	if (r >= 0 && prv < 0)
		r = prv;
	return r < 0 ? r : 0;
}

static int om_update(struct rbdl_image *img, uint64_t start, uint64_t end,
		     uint8_t state, uint8_t cur)
{
	uint8_t in[32];
	long n = rbdl_encode_object_map_update(in, sizeof(in), start, end,
					       state, cur != ANY_STATE, cur);

	if (n < 0)
		return (int)n;
	return om_write(img, rbdl_objmap_oid(img->om), true, "object_map_update", in,
			(size_t)n);
}

static int om_resize(struct rbdl_image *img, uint64_t nobjs)
{
	uint8_t in[16];
	struct rbdl_enc e;

	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_u64(&e, nobjs);
	rbdl_enc_u8(&e, RBDL_OBJ_NONEXISTENT);
	return om_write(img, rbdl_objmap_oid(img->om), true, "object_map_resize", in,
			e.len);
}

/* The raw contents of an object (an encoded object map). */
static int read_whole(rados_ioctx_t io, const char *oid, char **buf,
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

static void notify_update(struct rbdl_image *img)
{
	uint8_t buf[64];
	long n = rbdl_encode_notify(buf, sizeof(buf), RBDL_NOTIFY_HEADER_UPDATE,
				    0, 0, false);
	char *reply = NULL;
	size_t rlen = 0;

	if (n < 0)
		return;
	/* Like librbd, a watcher that does not answer is not an error. */
	rados_notify2(img->md_io, img->header_oid, (const char *)buf, (int)n,
		      NOTIFY_TIMEOUT_MS, &reply, &rlen);
	if (reply)
		rados_buffer_free(reply);
}

/* Our own view: refresh now (size, snapshot context, write context) and
 * reload the HEAD object map if we changed it, i.e. we hold the lock with
 * writes drained (a reload under running writes could lose a transition
 * they are making). */
static int refresh_now(struct rbdl_image *img)
{
	int r;

	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
	r = rbdl_image_refresh_slow(img);
	if (r == 0 && rbdl_lock_in_maint(img) && rbdl_objmap_ready(img->om))
		r = rbdl_objmap_load(img, atomic_load(&img->size));
	return r;
}

/* A user snapshot by name. */
static int find_snap(struct rbdl_image *img, const char *name,
		     struct rbdl_snap_info *out)
{
	uint64_t seq, *ids = NULL;
	uint32_t n = 0;
	int r = rbdl_read_snapcontext(img->md_io, img->header_oid, &seq, &ids,
				      &n);

	if (r < 0)
		return r;
	r = -ENOENT;
	for (uint32_t i = 0; i < n; i++) {
		struct rbdl_snap_info si;
		int q = rbdl_read_snapshot_info(img->md_io, img->header_oid,
						ids[i], &si);

		if (q == -ENOENT)
			continue;
		if (q < 0) {
			r = q;
			break;
		}
		if (si.ns_type == 0 && !strcmp(si.name, name)) {
			*out = si;
			r = 0;
			break;
		}
		rbdl_snap_info_free(&si);
	}
	free(ids);
	return r;
}

/* Id and size of the user snapshot called name, with the header brought up
 * to date first: 0, -EINVAL (NULL name), -ENOENT or a read error. */
static int lookup_snap(struct rbdl_image *img, const char *name,
		       uint64_t *id, uint64_t *size)
{
	struct rbdl_snap_info si;
	int r;

	if (!name)
		return -EINVAL;
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	r = find_snap(img, name, &si);
	if (r < 0)
		return r;
	*id = si.id;
	if (size)
		*size = si.image_size;
	rbdl_snap_info_free(&si);
	return 0;
}

/* The snapshot id right after snap_id (the next newer map), or NOSNAP. */
static uint64_t next_snap(struct rbdl_image *img, uint64_t snap_id)
{
	uint64_t next = RBDL_NOSNAP;

	pthread_mutex_lock(&img->refresh_lock);
	for (uint32_t i = 0; i < img->nsnaps; i++)
		if (img->snaps[i] > snap_id && img->snaps[i] < next)
			next = img->snaps[i];
	pthread_mutex_unlock(&img->refresh_lock);
	return next;
}

/* Could the HEAD object objno exist (false only if a valid map says no)? */
static bool may_exist(struct rbdl_image *img, uint64_t objno)
{
	if (!rbdl_objmap_usable(img->om) || !rbdl_objmap_trusted(img->om) ||
	    objno >= rbdl_objmap_count(img->om))
		return true;
	return rbdl_objmap_get(img->om, objno) != RBDL_OBJ_NONEXISTENT;
}

/* ---- a window of asynchronous object writes -------------------------------- */

struct win {
	rados_completion_t c[OBJ_WINDOW];
	rados_write_op_t op[OBJ_WINDOW];
	int head, n, err;
};

static void win_reap(struct win *w)
{
	int i = w->head, r;

	rados_aio_wait_for_complete(w->c[i]);
	r = rados_aio_get_return_value(w->c[i]);
	rados_aio_release(w->c[i]);
	rados_release_write_op(w->op[i]);
	/* A missing object is what we wanted (or, guarded, left alone). */
	if (r < 0 && r != -ENOENT && !w->err)
		w->err = r;
	w->head = (w->head + 1) % OBJ_WINDOW;
	w->n--;
}

/* Takes op (released when it completes). */
static void win_submit(struct win *w, rados_ioctx_t io, const char *oid,
		       rados_write_op_t op)
{
	int i, r;

	if (w->n == OBJ_WINDOW)
		win_reap(w);
	i = (w->head + w->n) % OBJ_WINDOW;
	r = rados_aio_create_completion2(NULL, NULL, &w->c[i]);
	if (r < 0) {
		rados_release_write_op(op);
		if (!w->err)
			w->err = r;
		return;
	}
	r = rados_aio_write_op_operate(op, io, w->c[i], oid, NULL, 0);
	if (r < 0) {
		rados_aio_release(w->c[i]);
		rados_release_write_op(op);
		if (!w->err)
			w->err = r;
		return;
	}
	w->op[i] = op;
	w->n++;
}

static int win_drain(struct win *w)
{
	while (w->n)
		win_reap(w);
	return w->err;
}

/* ---- resize --------------------------------------------------------------- */

/* Remove whole object objno, with the object map transitions librbd makes
 * (PENDING before, NONEXISTENT after).  Synchronous. */
static int remove_one(struct rbdl_image *img, rados_ioctx_t io,
		      uint64_t objno, bool known)
{
	char oid[RBDL_OID_MAX];
	int r;

	/* known: the object may exist whatever the in-memory map says (it
	 * was just copied up, or the on-disk map records it). */
	if (!known && !may_exist(img, objno))
		return 0;
	if (rbdl_objmap_usable(img->om)) {
		r = om_update(img, objno, objno + 1, RBDL_OBJ_PENDING,
			      RBDL_OBJ_EXISTS);
		if (r < 0)
			return r;
	}
	rbdl_oid_data(oid, sizeof(oid), img->object_prefix, objno);
	r = rados_remove(io, oid);
	if (r < 0 && r != -ENOENT)
		return r;
	if (rbdl_objmap_usable(img->om))
		return om_update(img, objno, objno + 1, RBDL_OBJ_NONEXISTENT,
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
	if (rbdl_objmap_usable(img->om) && !may_exist(img, o))
		r = om_update(img, o, o + 1, RBDL_OBJ_EXISTS, ANY_STATE);
	if (r == 0)
		r = rbdl_io_copyup_sync(img, o, false);
	return r;
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
static int trim(struct rbdl_image *img, uint64_t old_size, uint64_t new_size)
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
	struct win w = { .head = 0, .n = 0, .err = 0 };
	int r;

	if (!io)
		return -EROFS;
	if (delete_off > old_size)
		delete_off = old_size;
	/* A clone with snapshots: the objects about to go keep their parent
	 * data in the snapshots (librbd's COPYUP_OBJECTS step). */
	const struct rbdl_pview *pv = rbdl_parent_view(img);
	uint64_t backed = rbdl_layout_num_objects(l, pv->overlap);
	/* Objects [start, copied) may have been copied up just now (the
	 * in-memory map, read by may_exist, is not updated until the
	 * maintenance ends): remove them whatever the map said. */
	uint64_t copied = atomic_load(&img->wr_nsnaps) ? backed : 0;

	for (uint64_t o = start; o < nobjs && o < copied; o++) {
		r = copyup_for_remove(img, o);
		if (r < 0)
			return r;
	}
	if (start < nobjs) {
		/* Which objects may exist is decided before the map moves
		 * them to PENDING (the map is not reloaded meanwhile). */
		if (rbdl_objmap_usable(img->om)) {
			r = om_update(img, start, nobjs, RBDL_OBJ_PENDING,
				      RBDL_OBJ_EXISTS);
			if (r < 0)
				return r;
		}
		for (uint64_t o = start; o < nobjs; o++) {
			char oid[RBDL_OID_MAX];
			rados_write_op_t op;

			if (!may_exist(img, o) && o >= copied)
				continue;
			op = rados_create_write_op();
			if (!op) {
				w.err = -ENOMEM;
				break;
			}
			rados_write_op_remove(op);
			rbdl_oid_data(oid, sizeof(oid), img->object_prefix, o);
			win_submit(&w, io, oid, op);
		}
		r = win_drain(&w);
		if (r < 0)
			return r;
		if (rbdl_objmap_usable(img->om)) {
			r = om_update(img, start, nobjs, RBDL_OBJ_NONEXISTENT,
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

		if (!in_parent && !may_exist(img, x->objno))
			continue;
		/* A cut object has changed since the last snapshot (an
		 * EXISTS_CLEAN one becomes EXISTS, as for any discard). */
		if (rbdl_objmap_usable(img->om) && x->objno < rbdl_objmap_count(img->om) &&
		    rbdl_objmap_get(img->om, x->objno) != RBDL_OBJ_EXISTS) {
			r = om_update(img, x->objno, x->objno + 1,
				      RBDL_OBJ_EXISTS, ANY_STATE);
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
	return hdr_write(img, "set_size", in, sizeof(in));
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
static int do_resize(struct rbdl_image *img, uint64_t size)
{
	uint64_t old = atomic_load(&img->size);
	uint64_t nobjs = rbdl_layout_num_objects(&img->layout, size);
	int r;

	if (size == old)
		return 0;
	if (size < old) {
		r = trim(img, old, size);
		if (r == 0 && rbdl_objmap_usable(img->om))
			r = shrink_map_ready(img, nobjs);
		if (r == 0)
			r = set_size(img, size);
		if (r == 0 && rbdl_objmap_usable(img->om)) {
			r = om_resize(img, nobjs);
			/* As librbd's object map requests: a map that cannot
			 * follow is flagged invalid (a rebuild repairs it) and
			 * the resize stands; the error is returned only if
			 * the map already was invalid. */
			if (r < 0 && rbdl_objmap_trusted(img->om)) {
				rbdl_log("image %s: object map resize failed "
					 "(%d)", img->name, r);
				rbdl_objmap_invalidate(img, "was not resized");
				r = 0;
			}
		}
	} else {
		r = rbdl_objmap_usable(img->om) ? om_resize(img, nobjs) : 0;
		if (r == 0)
			r = set_size(img, size);
	}
	return r;
}

/* ---- begin / end ------------------------------------------------------------ */

/*
 * Serialize, refresh, check the image may be changed, then quiesce our
 * writes: with the exclusive lock, hold it with writes drained (MAINT);
 * without it, flush.  On success the caller must call maint_end().
 */
static int maint_begin(struct rbdl_image *img, bool need_lock)
{
	int r;

	pthread_mutex_lock(&img->maint_mu);
	r = rbdl_image_maybe_refresh(img);
	if (r == 0 && (img->open_ro || !atomic_load(&img->wr_io) ||
		       (atomic_load(&img->features) & RBDL_WRITE_UNSUPPORTED)))
		r = -EROFS;
	if (r == 0) {
		struct rbdl_io_args a = { .op = RBDL_OP_FLUSH };

		r = (int)rbdl_io_sync(img, &a);
	}
	if (r == 0 && need_lock)
		r = rbdl_lock_maint_begin(img);
	if (r == 0 && need_lock && rbdl_lock_enabled(img) &&
	    (atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP) &&
	    !rbdl_objmap_ready(img->om))
		r = -EROFS;	/* never change data under an unloaded map */
	if (r < 0) {
		if (need_lock)
			rbdl_lock_maint_end(img);
		pthread_mutex_unlock(&img->maint_mu);
	}
	return r;
}

static void maint_end(struct rbdl_image *img)
{
	rbdl_lock_maint_end(img);
	/* librbd holds no lock while the image is set to a snapshot. */
	if (atomic_load(&img->at_snap))
		rbdl_lock_drop(img);
	pthread_mutex_unlock(&img->maint_mu);
}

/* ---- entry points ------------------------------------------------------------ */

int rbdl_maint_resize(struct rbdl_image *img, uint64_t size)
{
	int r;

	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	if ((atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP) &&
	    rbdl_layout_num_objects(&img->layout, size) >
		    MAX_OBJECT_MAP_OBJECTS)
		return -EINVAL;
	r = maint_begin(img, true);
	if (r < 0)
		return r;
	uint64_t old = atomic_load(&img->size);

	r = do_resize(img, size);
	if (size != old) {
		int q = refresh_now(img);

		notify_update(img);
		if (r == 0)
			r = q;
	}
	maint_end(img);
	return r;
}

/* object_map SnapshotCreateRequest: HEAD's map becomes the snapshot's;
 * with fast-diff HEAD's EXISTS turn EXISTS_CLEAN. */
static int snap_create_map(struct rbdl_image *img, uint64_t snap_id)
{
	char oid[RBDL_OID_MAX], *buf;
	size_t len;
	int r = read_whole(img->md_io, rbdl_objmap_oid(img->om), &buf, &len);

	if (r < 0)
		return r;
	rbdl_oid_object_map(oid, sizeof(oid), img->id, snap_id);
	r = rados_write_full(img->md_io, oid, buf, len);
	free(buf);
	if (r < 0)
		return r;
	if (!(atomic_load(&img->features) & RBD_FEATURE_FAST_DIFF))
		return 0;
	return om_write(img, rbdl_objmap_oid(img->om), true, "object_map_snap_add", NULL, 0);
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
	r = maint_begin(img, true);
	if (r < 0)
		return r;
	r = find_snap(img, name, &si);
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
			  : hdr_write(img, "snapshot_add", in, e.len);
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
	r = refresh_now(img);
	notify_update(img);
out:
	maint_end(img);
	return r;
}

/*
 * A "conf_<option>" metadata key overrides a client option for this image:
 * librbd accepts only rbd_* options (not rbd_mirror_*) of the
 * configuration schema, with a value the option can take.  The value is
 * checked on a scratch configuration, never the live one.
 */
static int check_conf_override(struct rbdl_image *img, const char *opt,
			       const char *value)
{
	char buf[256];
	rados_t tmp;
	int r;

	if (strncmp(opt, "rbd_", 4) || !strncmp(opt, "rbd_mirror_", 11) ||
	    rados_conf_get(img->cluster, opt, buf, sizeof(buf)) < 0)
		return -EINVAL;
	r = rados_create(&tmp, NULL);
	if (r < 0)
		return r;
	r = rados_conf_set(tmp, opt, value);
	rados_shutdown(tmp);
	return r < 0 ? -EINVAL : 0;
}

int rbdl_maint_metadata_set(struct rbdl_image *img, const char *key,
			    const char *value)
{
	struct rbdl_enc e;
	uint8_t *in;
	size_t cap;
	int r;

	if (!key || !value)
		return -EINVAL;
	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	if (!strncmp(key, "conf_", 5)) {
		r = check_conf_override(img, key + 5, value);
		if (r < 0)
			return r;
	}
	/* metadata_set: map<string, bufferlist> with the one pair. */
	cap = strlen(key) + strlen(value) + 16;
	in = malloc(cap);
	if (!in)
		return -ENOMEM;
	rbdl_enc_init(&e, in, cap);
	rbdl_enc_u32(&e, 1);
	rbdl_enc_str(&e, key);
	rbdl_enc_bytes(&e, value, strlen(value));
	r = maint_begin(img, true);
	if (r == 0) {
		r = e.err ? e.err : hdr_write(img, "metadata_set", in, e.len);
		if (r == 0)
			notify_update(img);
		maint_end(img);
	}
	free(in);
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
		uint64_t next = next_snap(img, snap_id);

		r = read_whole(img->md_io, oid, &buf, &len);
		if (r == 0) {
			if (next == RBDL_NOSNAP)
				snprintf(noid, sizeof(noid), "%s", rbdl_objmap_oid(img->om));
			else
				rbdl_oid_object_map(noid, sizeof(noid), img->id, next);
			r = om_write(img, noid, next == RBDL_NOSNAP,
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

	r = lookup_snap(img, name, &snap_id, NULL);
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
	r = maint_begin(img, (atomic_load(&img->features) &
			      RBD_FEATURE_FAST_DIFF) != 0);
	if (r < 0)
		return r;
	rbdl_put_le64(in, snap_id);
	r = hdr_write(img, "snapshot_trash_add", in, sizeof(in));
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
		r = hdr_write(img, "snapshot_remove", in, sizeof(in));
		if (r < 0)
			goto out;
		r = rados_ioctx_selfmanaged_snap_remove(img->rd_io, snap_id);
		if (r == -ENOENT)
			r = 0;
		if (r < 0)
			goto out;
	}
	r = refresh_now(img);
	notify_update(img);
out:
	maint_end(img);
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
	r = read_whole(img->md_io, oid, &buf, &len);
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

	r = lookup_snap(img, name, &snap_id, &snap_size);
	if (r < 0)
		return r;
	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	r = maint_begin(img, true);
	if (r < 0)
		return r;
	r = do_resize(img, snap_size);
	if (r < 0)
		goto done;
	r = refresh_now(img);	/* size (and the map's length) */
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
		if (map && snap_bits && o < snap_n && !may_exist(img, o) &&
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
		r = refresh_now(img);
	else
		refresh_now(img);
done:
	notify_update(img);
	maint_end(img);
	return r;
}

int rbdl_maint_snap_set(struct rbdl_image *img, const char *name)
{
	struct rbdl_io_args a = { .op = RBDL_OP_FLUSH };
	int r;

	pthread_mutex_lock(&img->maint_mu);
	/* In-flight reads finish on the view they started with. */
	r = (int)rbdl_io_sync(img, &a);
	if (r == 0)
		r = rbdl_image_set_snap(img, name);
	pthread_mutex_unlock(&img->maint_mu);
	return r;
}
