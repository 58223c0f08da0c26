/*
 * objreq.c - the life of one object request (the state diagram is in
 * request.h): the object map gate, the data op, read-through and copy-up
 * for clones, and the map update after a remove.
 *
 * One advance function, rbdl_obj_advance(), drives every object request,
 * as the kernel client's rbd_obj_advance_read/write do: each state names
 * the step in flight, every step's completion (librados, the object map,
 * the backing image) calls rbdl_obj_advance() with the step's result, and
 * the function decides the next state and starts its step.  A step that
 * finishes without I/O is handled in the same call.
 *
 * Threading: see request.h.  The data path costs, for a write to an
 * object the map already records as EXISTS, one byte load in the gate and
 * one rados op.
 */
#include "config.h"

#include "request.h"

#include "core/internal.h"
#include "core/wbuf.h"
#include "image/state.h"
#include "sched.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

#define RBDL_MAX_ERRNO 4095

/* What starting a state's step gave (obj_step). */
enum { STEP_WAIT = 1, STEP_DONE = 0 };

void rbdl_seg_zero_tail(struct rbdl_seg *s, size_t have)
{
	if (have < s->len)
		memset(s->ptr + have, 0, s->len - have);
}

static void obj_zero_segs(struct rbdl_objreq *o)
{
	for (uint32_t i = 0; i < o->nsegs; i++)
		rbdl_seg_zero_tail(&o->req->segs[o->first_seg + i], 0);
}

static void obj_release_ops(struct rbdl_objreq *o)
{
	if (o->rop)
		rados_release_read_op(o->rop);
	if (o->wop)
		rados_release_write_op(o->wop);
	free(o->heap);
	o->rop = NULL;
	o->wop = NULL;
	o->heap = NULL;
}

static void obj_drop_copyup(struct rbdl_objreq *o)
{
	rbdl_fetch_free(o->cu);
	o->cu = NULL;
}

int rbdl_obj_keep_data(struct rbdl_objreq *o)
{
	struct rbdl_req *req = o->req;
	bool caw = req->op == RBDL_OP_CAW;
	uint64_t total = caw ? req->cmp_len : 0;
	char *p;

	if (!req->copy || o->owned ||
	    (req->op != RBDL_OP_WRITE && !caw))
		return 0;
	for (uint32_t i = 0; i < o->nsegs; i++)
		total += req->segs[o->first_seg + i].len;
	if (!total)
		return 0;
	p = rbdl_wbuf_alloc(total);
	if (!p)
		return -ENOMEM;
	o->owned = p;
	/* req_free frees the objects' copies (relaxed: request.h) */
	atomic_store_explicit(&req->kept, true, memory_order_relaxed);
	for (uint32_t i = 0; i < o->nsegs; i++) {
		struct rbdl_seg *s = &req->segs[o->first_seg + i];

		memcpy(p, s->ptr, s->len);
		s->ptr = p;
		p += s->len;
	}
	if (caw) {
		/* The request's only object: its compare buffer too. */
		memcpy(p, req->cmp, req->cmp_len);
		req->cmp = p;
	}
	return 0;
}

/* ---- step completions ------------------------------------------------------ */

static void obj_rados_done(rados_completion_t rc, void *arg)
{
	struct rbdl_objreq *o = arg;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	rbdl_obj_advance(o, r, false);
}

static void obj_map_done(struct rbdl_omwaiter *w, int err, bool in_submit)
{
	rbdl_obj_advance(container_of(w, struct rbdl_objreq, omw), err,
			 in_submit);
}

/* COPYUP_MAPS: drop one count of the snapshot map updates (or the
 * issuer's guard); the last one advances with their first error. */
static void obj_sub_put(struct rbdl_objreq *o, bool in_submit)
{
	if (rbdl_join_put(&o->sub))
		rbdl_obj_advance(o, rbdl_join_result(&o->sub), in_submit);
}

static void obj_snapmap_done(void *arg, int r)
{
	struct rbdl_objreq *o = arg;

	if (r < 0)
		rbdl_join_error(&o->sub, r);
	obj_sub_put(o, false);
}

/* ---- the data op ------------------------------------------------------------ */

static int send_read(struct rbdl_req *req, struct rbdl_objreq *o)
{
	int flags = req->op_flags & RBDL_FADVISE_MASK;

	if (o->nsegs == 1 && !flags) {
		struct rbdl_seg *s = &req->segs[o->first_seg];

		return rados_aio_read(req->io, o->oid, o->rc, s->ptr, s->len,
				      s->obj_off);
	}
	o->rop = rados_create_read_op();
	if (!o->rop)
		return -ENOMEM;
	for (uint32_t i = 0; i < o->nsegs; i++) {
		struct rbdl_seg *s = &req->segs[o->first_seg + i];

		s->bytes_read = 0;
		s->prval = 0;
		rados_read_op_read(o->rop, s->obj_off, s->len, s->ptr,
				   &s->bytes_read, &s->prval);
		if (flags)
			rados_read_op_set_flags(o->rop, flags);
	}
	return rados_aio_read_op_operate(o->rop, req->io, o->rc, o->oid, 0);
}

/*
 * A write op for the object, starting with its copy-up (rbd.copyup of the
 * fetched parent data) or its guard (assert_exists: a missing object must
 * be copied up first).  NULL when out of memory.
 */
static rados_write_op_t obj_wop(struct rbdl_objreq *o)
{
	o->wop = rados_create_write_op();
	if (!o->wop)
		return NULL;
	if (o->cu) {
		uint64_t len;
		const char *data = rbdl_fetch_data(o->cu, &len);

		/* The op copies the data: the fetch can go now, before the
		 * op is sent (after that, o may complete on another thread
		 * and must not be touched). */
		rados_write_op_exec(o->wop, "rbd", "copyup", data, len, NULL);
		obj_drop_copyup(o);
	} else if (o->kind == RBDL_KIND_GUARDED) {
		rados_write_op_assert_exists(o->wop);
	}
	return o->wop;
}

static int send_write(struct rbdl_req *req, struct rbdl_objreq *o)
{
	int flags = req->op_flags & RBDL_FADVISE_MASK;

	if (o->nsegs == 1 && !flags && o->kind != RBDL_KIND_GUARDED &&
	    !o->cu) {
		struct rbdl_seg *s = &req->segs[o->first_seg];

		return rados_aio_write(req->io, o->oid, o->rc, s->ptr, s->len,
				       s->obj_off);
	}
	if (!obj_wop(o))
		return -ENOMEM;
	for (uint32_t i = 0; i < o->nsegs; i++) {
		struct rbdl_seg *s = &req->segs[o->first_seg + i];

		rados_write_op_write(o->wop, s->ptr, s->len, s->obj_off);
		if (flags)
			rados_write_op_set_flags(o->wop, flags);
	}
	return rados_aio_write_op_operate(o->wop, req->io, o->rc, o->oid, NULL,
					  0);
}

static int send_discard(struct rbdl_req *req, struct rbdl_objreq *o)
{
	uint64_t objsz = req->img->layout.object_size;

	bool copyup = o->cu != NULL;	/* obj_wop consumes it */

	if (o->kind == RBDL_KIND_REMOVE)
		return rados_aio_remove(req->io, o->oid, o->rc);
	if (!obj_wop(o))
		return -ENOMEM;
	if (o->kind == RBDL_KIND_HIDE) {
		/* The whole object of a clone without snapshots: an empty
		 * object hides the parent data (librbd REMOVE_TRUNCATE). */
		rados_write_op_create(o->wop, LIBRADOS_CREATE_IDEMPOTENT, NULL);
		rados_write_op_truncate(o->wop, 0);
		return rados_aio_write_op_operate(o->wop, req->io, o->rc,
						  o->oid, NULL, 0);
	}
	/* Never create an object just to zero it (a clone's object is
	 * guarded or copied up already). */
	if (o->kind != RBDL_KIND_GUARDED && !copyup)
		rados_write_op_assert_exists(o->wop);
	if (o->obj_off + o->len == objsz)
		rados_write_op_truncate(o->wop, o->obj_off);
	else
		rados_write_op_zero(o->wop, o->obj_off, o->len);
	return rados_aio_write_op_operate(o->wop, req->io, o->rc, o->oid, NULL,
					  0);
}

static int send_writesame(struct rbdl_req *req, struct rbdl_objreq *o)
{
	bool aligned = !req->thick;

	for (uint32_t i = 0; i < o->npieces && aligned; i++) {
		struct rbdl_piece *p = &req->pieces[o->first_piece + i];

		aligned = p->buf_off % req->data_len == 0 &&
			  p->len % req->data_len == 0;
	}
	if (!obj_wop(o))
		return -ENOMEM;
	if (aligned) {
		for (uint32_t i = 0; i < o->npieces; i++) {
			struct rbdl_piece *p = &req->pieces[o->first_piece + i];

			rados_write_op_writesame(o->wop, req->pattern,
						 req->data_len, p->len,
						 p->obj_off);
		}
	} else {
		/* Expand the span (pieces are contiguous in the object). */
		o->heap = req->thick ? calloc(1, o->len) : malloc(o->len);
		if (!o->heap)
			return -ENOMEM;
		for (uint32_t i = 0; i < o->npieces && !req->thick; i++) {
			struct rbdl_piece *p = &req->pieces[o->first_piece + i];

			rbdl_plan_fill_pattern(o->heap + (p->obj_off - o->obj_off),
					       p->len, p->buf_off,
					       req->pattern, req->data_len);
		}
		rados_write_op_write(o->wop, o->heap, o->len, o->obj_off);
	}
	return rados_aio_write_op_operate(o->wop, req->io, o->rc, o->oid, NULL,
					  0);
}

static int send_caw(struct rbdl_req *req, struct rbdl_objreq *o)
{
	struct rbdl_seg *s = &req->segs[o->first_seg];

	if (!obj_wop(o))
		return -ENOMEM;
	o->cmp_prval = 0;
	/* librbd 16.2 clips the write at the image end but not the
	 * compare: compare bytes past the end are compared with zeros. */
	rados_write_op_cmpext(o->wop, req->cmp, req->cmp_len, s->obj_off,
			      &o->cmp_prval);
	rados_write_op_write(o->wop, s->ptr, s->len, s->obj_off);
	return rados_aio_write_op_operate(o->wop, req->io, o->rc, o->oid, NULL,
					  0);
}

static int send_obj(struct rbdl_req *req, struct rbdl_objreq *o)
{
	switch (req->op) {
	case RBDL_OP_READ:
		return send_read(req, o);
	case RBDL_OP_WRITE:
		return send_write(req, o);
	case RBDL_OP_DISCARD:
	case RBDL_OP_WRITE_ZEROES:
		return send_discard(req, o);
	case RBDL_OP_WRITESAME:
		return send_writesame(req, o);
	case RBDL_OP_CAW:
		return send_caw(req, o);
	default:
		return -EINVAL;
	}
}

/*
 * DATA: issue the object's data op (a copy-up prepended, if fetched).
 * Once the op is sent, its completion may advance o on another thread at
 * any moment: nothing here touches o after a successful send.
 */
static int obj_send(struct rbdl_objreq *o)
{
	int r;

	/* A guarded op that finds no object is sent again after its
	 * copy-up, from another thread. */
	if (o->kind == RBDL_KIND_GUARDED) {
		r = rbdl_obj_keep_data(o);
		if (r < 0)
			return r;
	}
	/* Writes go through the scheduler (it may hold and merge them);
	 * a read first sends held writes it overlaps. */
	if (o->req->op != RBDL_OP_READ) {
		r = rbdl_sched_write(o);
		if (r != RBDL_SCHED_PASS)
			return r < 0 ? r : 0;
	} else {
		rbdl_sched_read(o);
	}
	return rbdl_obj_send_op(o);
}

int rbdl_obj_send_op(struct rbdl_objreq *o)
{
	int r = rados_aio_create_completion2(o, obj_rados_done, &o->rc);

	if (r == 0) {
		r = send_obj(o->req, o);
		if (r < 0)
			rados_aio_release(o->rc);
	}
	return r;
}

/* COPYUP: the copy-up alone, before the request's own op (deep copy-up:
 * with an empty snapshot context, so that the OSD keeps the data in
 * every snapshot; compare-and-write: compare on the copied-up data). */
static int obj_send_copyup(struct rbdl_objreq *o)
{
	struct rbdl_req *req = o->req;
	uint64_t len;
	const char *data = rbdl_fetch_data(o->cu, &len);
	bool deep = len && req->nsnaps;
	int r;

	rbdl_sched_barrier(o);
	r = rados_aio_create_completion2(o, obj_rados_done, &o->rc);

	if (r < 0)
		return r;
	o->wop = rados_create_write_op();
	if (!o->wop) {
		rados_aio_release(o->rc);
		return -ENOMEM;
	}
	rados_write_op_exec(o->wop, "rbd", "copyup", data, len, NULL);
	obj_drop_copyup(o);	/* the op holds its own copy of the data */
	/* rd_io carries no snapshot context (a HEAD view: writes only
	 * happen there).  Nothing touches o once the op is sent. */
	r = rados_aio_write_op_operate(o->wop, deep ? req->img->rd_io : req->io,
				       o->rc, o->oid, NULL, 0);
	if (r < 0)
		rados_aio_release(o->rc);
	return r;
}

/* What the data op's result means for the request. */
static void obj_result(struct rbdl_objreq *o, int r)
{
	struct rbdl_req *req = o->req;

	switch (req->op) {
	case RBDL_OP_READ:
		if (r == -ENOENT) {
			obj_zero_segs(o);
		} else if (r < 0) {
			rbdl_req_set_error(req, r);
		} else if (!o->rop) {
			rbdl_seg_zero_tail(&req->segs[o->first_seg], (size_t)r);
			if (req->track_data && r > 0)
				rbdl_req_note_data(req,
						   &req->segs[o->first_seg],
						   (uint64_t)r);
		} else {
			for (uint32_t i = 0; i < o->nsegs; i++) {
				struct rbdl_seg *s =
					&req->segs[o->first_seg + i];

				if (s->prval < 0 && s->prval != -ENOENT)
					rbdl_req_set_error(req, s->prval);
				else
					rbdl_seg_zero_tail(
						s, s->prval < 0 ? 0
								: s->bytes_read);
				if (req->track_data && s->prval >= 0 &&
				    s->bytes_read)
					rbdl_req_note_data(req, s,
							   s->bytes_read);
			}
		}
		break;
	case RBDL_OP_CAW: {
		int m = o->cmp_prval <= -RBDL_MAX_ERRNO ? o->cmp_prval
			: r <= -RBDL_MAX_ERRNO		? r
							: 0;

		if (m) {
			/* librbd 16.2.15 reports the image offset of the
			 * object's first byte plus the mismatch position
			 * within the compared range (not the absolute offset
			 * its header documents); match it. */
			struct rbdl_img_range base = { 0, 0 };

			rbdl_striper_obj_to_image(&req->img->layout, o->objno,
						  0, 1, &base, 1);
			if (req->mismatch_off)
				*req->mismatch_off =
					base.img_off +
					(uint64_t)(-(int64_t)m - RBDL_MAX_ERRNO);
			rbdl_req_set_error(req, -EILSEQ);
		} else if (r < 0) {
			rbdl_req_set_error(req, r);
		}
		break;
	}
	case RBDL_OP_DISCARD:
	case RBDL_OP_WRITE_ZEROES:
		/* remove or guarded truncate/zero of a missing object */
		if (r < 0 && r != -ENOENT)
			rbdl_req_set_error(req, r);
		break;
	default:
		if (r < 0 && r != -EEXIST)
			rbdl_req_set_error(req, r);
		break;
	}
}

/* ---- decisions ------------------------------------------------------------ */

/* Where a write goes once the map allows it. */
static enum rbdl_obj_state obj_send_state(const struct rbdl_objreq *o)
{
	return o->copyup_first ? RBDL_ST_COPYUP_FETCH : RBDL_ST_DATA;
}

/*
 * START: the object map rules before the data op (rbd-protocol.md 6.4):
 * writes need EXISTS; a whole-object remove needs PENDING and is followed
 * by NONEXISTENT; a discard of an object the (valid) map says does not
 * exist is skipped, and a read of it returns zeros (or the parent's data)
 * without I/O.  Returns the next state (MAP_PRE: a transition was
 * started), or a negative errno.
 */
static int obj_gate(struct rbdl_objreq *o)
{
	struct rbdl_req *req = o->req;
	struct rbdl_objmap *om = req->img->om;

	if (req->op == RBDL_OP_READ) {
		/* While we own the lock nobody else writes: an object the
		 * valid map says does not exist reads without I/O. */
		if (rbdl_objmap_trusted(om) &&
		    !atomic_load_explicit(&req->img->at_snap,
					  memory_order_relaxed) &&
		    rbdl_objmap_get(om, o->objno) == RBDL_OBJ_NONEXISTENT &&
		    o->objno < rbdl_objmap_count(om)) {
			if (rbdl_obj_backed(req->pv, &req->img->layout,
					    o->objno))
				return RBDL_ST_READ_PARENT;
			obj_zero_segs(o);
			return RBDL_ST_DONE;
		}
		return RBDL_ST_DATA;
	}
	if (!rbdl_objmap_ready(om))
		return obj_send_state(o);

	uint8_t st = rbdl_objmap_get(om, o->objno), target;
	bool discard = rbdl_op_discards(req->op);
	bool remove = discard && o->kind == RBDL_KIND_REMOVE;
	/* Released by the transition it waited for: it goes ahead of the
	 * writes that queued on it later (once). */
	bool passed = o->omw.passed;

	o->omw.passed = false;
	/* The state as read decides only when no transition of the object
	 * is in flight or still releasing earlier writes; else this goes
	 * behind them (prepare queues it). */
	if (!discard && st == RBDL_OBJ_EXISTS &&
	    rbdl_objmap_settled(om, o->objno, passed))
		return obj_send_state(o);
	if (discard && st == RBDL_OBJ_NONEXISTENT &&
	    o->kind != RBDL_KIND_GUARDED && o->kind != RBDL_KIND_HIDE &&
	    rbdl_objmap_trusted(om) &&
	    rbdl_objmap_settled(om, o->objno, passed))
		return RBDL_ST_DONE;	/* nothing to discard */
	/* Under our lock a valid map's NONEXISTENT is the truth: a guarded
	 * op would only come back ENOENT, so copy up at once (librbd does
	 * too). */
	if (o->kind == RBDL_KIND_GUARDED && st == RBDL_OBJ_NONEXISTENT &&
	    rbdl_objmap_trusted(om))
		o->copyup_first = true;
	target = remove ? RBDL_OBJ_PENDING : RBDL_OBJ_EXISTS;
	/* The data op (or copy-up) may follow the map update on another
	 * thread, after the submit call returned. */
	int k = rbdl_obj_keep_data(o);

	if (k < 0)
		return k;
	o->omw.go = obj_map_done;
	/* The transition may complete (and advance o) on another thread
	 * before prepare returns: be in MAP_PRE first. */
	o->state = RBDL_ST_MAP_PRE;
	int r = rbdl_objmap_prepare(req->img, o->objno, target, false, 0,
				    &o->omw, passed);

	if (r == 1)
		return RBDL_ST_MAP_PRE;
	o->state = RBDL_ST_START;
	if (r < 0)
		return r;
	o->map_pending = remove;
	return obj_send_state(o);
}

/* DATA finished with r. */
static enum rbdl_obj_state obj_data_done(struct rbdl_objreq *o, int r)
{
	struct rbdl_req *req = o->req;

	if (o->sched_reg)
		rbdl_sched_done(o);	/* what it held back goes now */

	if (r == -ENOENT) {
		if (req->op == RBDL_OP_READ &&
		    rbdl_obj_backed(req->pv, &req->img->layout, o->objno)) {
			obj_release_ops(o);
			return RBDL_ST_READ_PARENT;
		}
		if (o->kind == RBDL_KIND_GUARDED) {
			obj_release_ops(o);
			return RBDL_ST_COPYUP_FETCH;
		}
	}
	obj_result(o, r);
	obj_release_ops(o);
	if (o->map_pending && (r == 0 || r == -ENOENT))
		return RBDL_ST_MAP_POST;
	return RBDL_ST_DONE;
}

/*
 * COPYUP_FETCH finished: the first write to an object of a clone that the
 * clone does not have yet (rbd-protocol.md section 7, librbd's
 * CopyupRequest).  With the parent data P (the part below the overlap):
 *   - P all zeros: no data is copied (a zero copy-up equals "absent");
 *   - the clone has snapshots and P is not zero (deep copy-up): the
 *     snapshot maps record the object, then P is copied up alone with an
 *     empty snapshot context, then the write goes with the current one;
 *   - compare-and-write: copy up alone, then compare and write;
 *   - otherwise one op: rbd.copyup(P) followed by the write.
 * rbd.copyup does nothing when the object exists, so two requests racing
 * to copy up the same object both end up applying their writes on top of
 * the same parent data.
 */
static enum rbdl_obj_state obj_copyup_plan(struct rbdl_objreq *o)
{
	struct rbdl_req *req = o->req;
	uint64_t len;
	bool deep;

	rbdl_fetch_data(o->cu, &len);
	deep = len && req->nsnaps;
	if (!deep && req->op != RBDL_OP_CAW) {
		o->kind = RBDL_KIND_PLAIN;	/* the op carries the copy-up */
		return RBDL_ST_DATA;
	}
	if (deep && rbdl_objmap_ready(req->img->om))
		return RBDL_ST_COPYUP_MAPS;
	return RBDL_ST_COPYUP;
}

/*
 * Start the step of o's (new) state.  STEP_WAIT: it is in flight (its
 * completion advances o, possibly before this returns); STEP_DONE: it
 * finished at once with result *r; or a negative errno: it could not
 * start.
 */
static int obj_step(struct rbdl_objreq *o, int *r, bool in_submit)
{
	struct rbdl_req *req = o->req;

	*r = 0;
	switch (o->state) {
	case RBDL_ST_START:
	case RBDL_ST_DONE:
		return STEP_DONE;
	case RBDL_ST_MAP_PRE:
		return STEP_WAIT;	/* never reached: obj_gate starts it */
	case RBDL_ST_DATA:
		*r = obj_send(o);
		return *r < 0 ? *r : STEP_WAIT;
	case RBDL_ST_READ_PARENT:
		rbdl_backing_read(o, in_submit);
		return STEP_WAIT;
	case RBDL_ST_COPYUP_FETCH:
		rbdl_backing_fetch(o, in_submit);
		return STEP_WAIT;
	case RBDL_ST_COPYUP_MAPS: {
		int e;

		/* The issuer's guard keeps the updates from finishing the
		 * step before all are sent. */
		rbdl_join_start(&o->sub, 1);
		e = rbdl_objmap_mark_in_snaps(req->img, o->objno, &o->sub,
					      obj_snapmap_done, o);
		if (e < 0)
			rbdl_join_error(&o->sub, e);
		obj_sub_put(o, in_submit);
		return STEP_WAIT;
	}
	case RBDL_ST_COPYUP:
		*r = obj_send_copyup(o);
		return *r < 0 ? *r : STEP_WAIT;
	case RBDL_ST_MAP_POST: {
		int m;

		o->omw.go = obj_map_done;	/* o is in MAP_POST already */
		/* passed: as before the waiters of a finished transition
		 * were released in order, it waits only for one in
		 * flight. */
		m = rbdl_objmap_prepare(req->img, o->objno,
					RBDL_OBJ_NONEXISTENT, true,
					RBDL_OBJ_PENDING, &o->omw, true);
		if (m == 1)
			return STEP_WAIT;
		*r = m;
		return STEP_DONE;
	}
	}
	return -EINVAL;
}

/* A step failed (or could not start): the request reports err and this
 * object is done. */
static enum rbdl_obj_state obj_failed(struct rbdl_objreq *o, int err)
{
	rbdl_req_set_error(o->req, err);
	obj_release_ops(o);
	obj_drop_copyup(o);
	return RBDL_ST_DONE;
}

void rbdl_obj_advance(struct rbdl_objreq *o, int r, bool in_submit)
{
	struct rbdl_req *req = o->req;
	int next;

	for (;;) {
		switch (o->state) {
		case RBDL_ST_START:
			next = obj_gate(o);
			/* The gate started a map transition and set MAP_PRE
			 * itself: its completion may already be advancing o
			 * on another thread. */
			if (next == RBDL_ST_MAP_PRE)
				return;
			break;
		case RBDL_ST_MAP_PRE:
			/* Re-check: the map moved on.  Unless the update
			 * failed and the map was flagged invalid instead
			 * (librbd carries on with the data then): the
			 * state it would see is the one that could not be
			 * recorded, and a second try fails again. */
			if (r == 0 && rbdl_objmap_ready(req->img->om) &&
			    !rbdl_objmap_trusted(req->img->om))
				next = obj_send_state(o);
			else
				next = r < 0 ? r : RBDL_ST_START;
			break;
		case RBDL_ST_DATA:
			next = obj_data_done(o, r);
			break;
		case RBDL_ST_READ_PARENT:
		case RBDL_ST_MAP_POST:
			if (r < 0)
				rbdl_req_set_error(req, r);
			next = RBDL_ST_DONE;
			break;
		case RBDL_ST_COPYUP_FETCH:
			next = r < 0 ? r : (int)obj_copyup_plan(o);
			break;
		case RBDL_ST_COPYUP_MAPS:
			next = r < 0 ? r : RBDL_ST_COPYUP;
			break;
		case RBDL_ST_COPYUP:
			if (r == 0)
				o->kind = RBDL_KIND_PLAIN;
			obj_release_ops(o);
			next = r < 0 ? r : RBDL_ST_DATA;
			break;
		case RBDL_ST_DONE:
		default:
			rbdl_req_put(req, in_submit);
			return;
		}
		if (next < 0)
			next = obj_failed(o, next);
		o->state = (enum rbdl_obj_state)next;
		next = obj_step(o, &r, in_submit);
		if (next == STEP_WAIT)
			return;
		if (next < 0) {
			o->state = obj_failed(o, next);
			r = 0;
		}
	}
}
