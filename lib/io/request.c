/*
 * request.c - image requests: validate and clip them the way librbd 16.2
 * does, map them onto objects with the striper, and start one object
 * request per object (objreq.c) from the submitting thread: no queue, no
 * hand-off to a thread of ours, except while a header refresh is due
 * (then the request waits for it on the control context, below).
 *
 * Life of a request (see io.h for the contract):
 *
 *   submitter thread                         librados callback thread
 *   ----------------                         ------------------------
 *   arm completion; refresh due: queue it (the refresh task resubmits)
 *   clip (librbd's rules) -- early result ---> deferred completion
 *   map onto objects (striper)
 *   pending = nobjs + 1 (the submit guard)
 *   writes: the exclusive lock's gate (may park the request)
 *   each object: rbdl_obj_advance() ---------> object steps complete,
 *   drop the guard                              each object ends with a put
 *            \_____ last put ______________/
 *                          |
 *                   req_finish(): rval, flush bookkeeping,
 *                   completion -> callbacks and events (core/completion)
 *
 * If the submitter's guard drop happens to be the last put (every object
 * op already finished), the completion is deferred to a librados thread so
 * that a callback never runs inside the submitting call.
 *
 * A journaled image's requests take none of these steps: once its real
 * librbd handle exists (or a write or flush finds journaling on), the
 * armed completion goes to the journal hook (image/journal.h), one
 * pointer load on the path of every other image.  Its first write or
 * flush waits in the queue while the refresh task opens that handle.
 *
 * Threading and memory: see request.h.
 */
#include "config.h"

#include "request.h"

#include "core/ctl.h"
#include "core/internal.h"
#include "core/slab.h"
#include "core/stats.h"
#include "core/wbuf.h"
#include "crypt.h"
#include "flush.h"
#include "image/stamps.h"
#include "image/journal.h"
#include "image/refresh.h"
#include "image/state.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

static struct rbdl_slab req_slab =
	RBDL_SLAB_INIT("request", sizeof(struct rbdl_req));
static pthread_once_t req_once = PTHREAD_ONCE_INIT;

static void req_init_once(void)
{
	rbdl_slab_init(&req_slab);
}

static inline void req_free(struct rbdl_req *req)
{
	if (__builtin_expect(atomic_load_explicit(&req->kept,
						  memory_order_relaxed), 0))
		for (uint32_t i = 0; i < req->nobjs; i++)
			rbdl_wbuf_free(req->objs[i].owned);
	if (req->owned)
		rbdl_wbuf_free(req->owned);
	if (req->objs != req->objs_inline)
		free(req->objs);
	if (req->segs != req->segs_inline)
		free(req->segs);
	if (req->pieces)
		free(req->pieces);
	rbdl_slab_free(&req_slab, req);
}

static void req_finish(struct rbdl_req *req, bool from_submitter)
{
	struct rbdl_image *img = req->img;
	struct rbdl_comp *c = req->comp;
	long res = atomic_load_explicit(&req->result, memory_order_relaxed);
	ssize_t rval = res < 0 ? res
			       : (req->op == RBDL_OP_READ ? (ssize_t)req->len
							  : 0);
	unsigned parity = req->gen_parity;
	bool held = req->holds_lock;
	bool acked = req->wa_acked;

	if (req->track_data)
		c->data_end = atomic_load_explicit(&req->data_end,
						   memory_order_relaxed);
	if (req->wa_tracked)
		rbdl_wa_end(req, rval, from_submitter);
	req_free(req);
	if (held && rval == -ESHUTDOWN)
		rbdl_lock_note_blocklisted(img);
	if (held)
		rbdl_lock_write_end(img);
	/* Keep the image alive across completion and flush bookkeeping (the
	 * operation's own count may be dropped by the delivery). */
	rbdl_delivery_get(&img->dl);
	/* If every object op finished before the submitter dropped its guard,
	 * deliver from a librados thread: never run a callback inside the
	 * submitting call.  The flush count drops only after the completion
	 * is queued, so a flush submitted later completes after it. */
	if (!acked) {	/* else completed when it was started (write-around) */
		if (from_submitter)
			rbdl_comp_complete_deferred(c, rval, img->defer_io);
		else
			rbdl_comp_complete(c, rval);
	}
	rbdl_flush_op_end(img, parity, from_submitter);
	rbdl_delivery_put(&img->dl);
	if (acked)
		rbdl_delivery_put(&img->dl);	/* the early ack's (req_go) */
}

void rbdl_req_put(struct rbdl_req *req, bool from_submitter)
{
	/* acq_rel: the last putter sees every object op's results. */
	if (atomic_fetch_sub_explicit(&req->pending, 1,
				      memory_order_acq_rel) == 1)
		req_finish(req, from_submitter);
}

/*
 * How a write treats an object of a clone below the overlap (librbd's
 * AbstractObjectWriteRequest and ObjectDiscardRequest): never remove it
 * (the parent would show through); a write or discard of the whole object
 * in a clone without snapshots needs no parent data (a discard leaves an
 * empty object); anything else is guarded and copies up on ENOENT.
 */
static void plan_backed(struct rbdl_req *req, struct rbdl_objreq *o)
{
	bool full = o->obj_off == 0 && o->len == req->img->layout.object_size;
	bool discard = rbdl_op_discards(req->op);

	if (!rbdl_obj_backed(req->pv, &req->img->layout, o->objno))
		return;
	if (full && !req->nsnaps && req->op != RBDL_OP_CAW)
		o->kind = discard ? RBDL_KIND_HIDE : RBDL_KIND_PLAIN;
	else
		o->kind = RBDL_KIND_GUARDED;
}

/* Fail a request none of whose objects was started. */
static void req_fail_unsent(struct rbdl_req *req, int err, bool in_submit)
{
	rbdl_req_set_error(req, err);
	/* Every object counts as done; the guard drop finishes. */
	atomic_fetch_sub(&req->pending, (int)req->nobjs);
	rbdl_req_put(req, in_submit);
}

/* Send every object op of a request (under the lock when it writes),
 * acknowledge it now if write-around lets it (its data is in librados
 * or kept, request.h), then drop the submit guard. */
static void req_go(struct rbdl_req *req, bool in_submit)
{
	/* The write context is read only now, once the request may write
	 * (after a lock acquisition the snapshot context may be new). */
	if (rbdl_op_writes(req->op)) {
		struct rbdl_image *img = req->img;

		req->io = atomic_load_explicit(&img->wr_io,
					       memory_order_acquire);
		/* Relaxed: published before wr_io (release), loaded after
		 * it (acquire). */
		req->nsnaps = atomic_load_explicit(&img->wr_nsnaps,
						   memory_order_relaxed);
		req->pv = rbdl_parent_view(img);
		if (req->pv->parent)
			for (uint32_t i = 0; i < req->nobjs; i++)
				plan_backed(req, &req->objs[i]);
	}
	for (uint32_t i = 0; i < req->nobjs; i++)
		rbdl_obj_advance(&req->objs[i], 0, in_submit);
	/* Not one whose error is known already (librbd reports those from
	 * above its write-around layer). */
	if (req->wa_early &&
	    !atomic_load_explicit(&req->result, memory_order_relaxed)) {
		struct rbdl_image *img = req->img;

		/* The image stays open until the objects finished (close
		 * waits for the delivery to be idle): req_finish drops it. */
		rbdl_delivery_get(&img->dl);
		req->wa_acked = true;
		rbdl_wa_ack(req, in_submit);
	}
	rbdl_req_put(req, in_submit);
}

void rbdl_req_wa_go(struct rbdl_req *req, bool in_submit)
{
	req_go(req, in_submit);
}

/* Admit the request to write-around (it may wait there for overlapping
 * requests), then send it. */
static void req_send(struct rbdl_req *req, bool in_submit)
{
	if (req->wa_kind != RBDL_WA_NONE) {
		int w = rbdl_wa_begin(req, in_submit);

		if (w == RBDL_WA_PARKED)
			return;	/* rbdl_wa_end starts it */
		if (w < 0) {
			req_fail_unsent(req, w, in_submit);
			return;
		}
	}
	req_go(req, in_submit);
}

/* The exclusive lock is ours now (err 0), or cannot be had. */
static void req_lock_resume(struct rbdl_lkwaiter *w, int err)
{
	struct rbdl_req *req = container_of(w, struct rbdl_req, lkw);

	if (err == 0 && !rbdl_lock_write_resumed(req->img, &req->lkw))
		return;		/* lost it again: parked once more */
	if (err < 0) {
		req_fail_unsent(req, err, false);
		return;
	}
	req->holds_lock = true;
	req_send(req, false);
}

/* Does a request of this op carry caller data?  Writes,
 * compare-and-writes, and write-sames with a pattern (buf; a thick
 * write-same has none, and a vector write's data is in iov, buf NULL). */
static bool data_op(enum rbdl_op op, const void *buf)
{
	return op == RBDL_OP_WRITE || op == RBDL_OP_CAW ||
	       (op == RBDL_OP_WRITESAME && buf);
}

/* And is it copied when kept (rbd_disable_zero_copy_writes)? */
static bool carries_data(struct rbdl_image *img, enum rbdl_op op,
			 const void *buf)
{
	return data_op(op, buf) &&
	       atomic_load_explicit(&img->copy_writes, memory_order_relaxed);
}

/* Does a request of op with buf carry caller data it may keep past the
 * call: always when write-around may acknowledge it early (whatever a
 * refresh is doing to copy_writes meanwhile: the two settings are
 * separate words), else as carries_data. */
static bool keeps_data(struct rbdl_image *img, enum rbdl_op op,
		       const void *buf, uint8_t wa_kind)
{
	return wa_kind == RBDL_WA_WRITE ? data_op(op, buf)
					: carries_data(img, op, buf);
}

/* Map and send.  Called with the completion armed and the range clipped. */
static int req_start(struct rbdl_image *img, struct rbdl_comp *c,
		     const struct rbdl_io_args *a, enum rbdl_op op,
		     uint64_t len, int initial_error)
{
	struct rbdl_objext objs_stack[RBDL_REQ_INLINE_OBJS];
	struct rbdl_piece pieces_stack[RBDL_REQ_INLINE_SEGS];
	struct rbdl_objext *objs = objs_stack;
	struct rbdl_piece *pieces = pieces_stack;
	size_t nobjs, npieces;
	struct rbdl_bufdesc bd = { a->buf, a->iov, a->iovcnt };
	struct rbdl_req *req;
	int r;

	pthread_once(&req_once, req_init_once);
	r = rbdl_striper_map(&img->layout, a->off, len, objs,
			     RBDL_ARRAY_SIZE(objs_stack), pieces,
			     RBDL_ARRAY_SIZE(pieces_stack), &nobjs, &npieces);
	if (r == -ERANGE) {
		rbdl_striper_count(&img->layout, a->off, len, &nobjs, &npieces);
		objs = malloc(nobjs * sizeof(*objs));
		pieces = malloc(npieces * sizeof(*pieces));
		if (!objs || !pieces) {
			r = -ENOMEM;
			goto out_map;
		}
		r = rbdl_striper_map(&img->layout, a->off, len, objs, nobjs,
				     pieces, npieces, &nobjs, &npieces);
	}
	if (r < 0)
		goto out_map;
	if (op == RBDL_OP_CAW && (nobjs != 1 || npieces != 1)) {
		r = -EINVAL;
		goto out_map;
	}
	if (op == RBDL_OP_DISCARD) {
		uint64_t g = atomic_load_explicit(&img->discard_granularity,
						  memory_order_relaxed);

		if (g)
			nobjs = rbdl_plan_prune_discard(img->layout.object_size,
							g, objs, nobjs);
	}

	req = rbdl_slab_alloc(&req_slab);
	if (!req) {
		r = -ENOMEM;
		goto out_map;
	}
	req->img = img;
	req->comp = c;
	req->op = op;
	req->op_flags = a->op_flags;
	req->off = a->off;
	req->len = len;
	req->pattern = a->buf;
	req->data_len = a->data_len;
	req->thick = op == RBDL_OP_WRITESAME && !a->buf;
	req->mismatch_off = a->mismatch_off;
	req->cmp = a->cmp;
	req->cmp_len = a->len;
	req->holds_lock = false;
	req->wa_early = false;
	req->wa_acked = false;
	req->wa_tracked = false;
	req->wa_kind = (uint8_t)rbdl_wa_classify(img, req, a->nested);
	/* Synchronous calls wait (unless write-around may complete them
	 * early), and a queued request's data is a copy already (io.h:
	 * owned). */
	req->copy = (!c->internal || req->wa_kind == RBDL_WA_WRITE) &&
		    !a->owned && keeps_data(img, op, a->buf, req->wa_kind);
	req->owned = NULL;
	atomic_init(&req->kept, false);
	req->pv = rbdl_parent_view(img);
	req->nsnaps = 0;
	req->track_data = c->track_data && op == RBDL_OP_READ && a->buf;
	atomic_init(&req->data_end, 0);
	req->pieces = NULL;
	atomic_init(&req->result, initial_error);
	req->io = img->rd_io;

	/* Segments: one per (piece x iovec run); none for discard. */
	uint32_t nsegs = 0;
	bool has_data = op == RBDL_OP_READ || op == RBDL_OP_WRITE ||
			op == RBDL_OP_CAW;

	if (has_data)
		for (size_t i = 0; i < npieces; i++)
			nsegs += rbdl_plan_piece_segs(&bd, &pieces[i], NULL);
	req->objs = nobjs <= RBDL_REQ_INLINE_OBJS
			    ? req->objs_inline
			    : malloc(nobjs * sizeof(*req->objs));
	req->segs = nsegs <= RBDL_REQ_INLINE_SEGS
			    ? req->segs_inline
			    : malloc(nsegs * sizeof(*req->segs));
	if (op == RBDL_OP_WRITESAME) {
		req->pieces = malloc(npieces * sizeof(*pieces));
		if (req->pieces)
			memcpy(req->pieces, pieces, npieces * sizeof(*pieces));
	}
	if (op == RBDL_OP_WRITESAME && req->copy) {
		/* Every object's op reads the pattern, some maybe later. */
		req->owned = rbdl_wbuf_alloc(req->data_len);
		if (req->owned) {
			memcpy(req->owned, req->pattern, req->data_len);
			req->pattern = req->owned;
		}
	}
	req->nobjs = 0;	/* no object's copy to free yet (req_free) */
	if (!req->objs || !req->segs ||
	    (op == RBDL_OP_WRITESAME && !req->pieces) ||
	    (op == RBDL_OP_WRITESAME && req->copy && !req->owned)) {
		if (!req->objs)
			req->objs = req->objs_inline;
		if (!req->segs)
			req->segs = req->segs_inline;
		req_free(req);
		r = -ENOMEM;
		goto out_map;
	}
	req->nobjs = (uint32_t)nobjs;
	req->nsegs = nsegs;
	if (nsegs > RBDL_REQ_INLINE_SEGS || nobjs > RBDL_REQ_INLINE_OBJS)
		rbdl_stat_inc(RBDL_STAT_MALLOCS_HOT_PATH, 1);

	uint32_t si = 0;

	for (size_t i = 0; i < nobjs; i++) {
		struct rbdl_objreq *o = &req->objs[i];

		o->req = req;
		o->objno = objs[i].objno;
		o->obj_off = objs[i].obj_off;
		o->len = objs[i].len;
		o->first_piece = objs[i].first_piece;
		o->npieces = objs[i].npieces;
		o->rop = NULL;
		o->wop = NULL;
		o->heap = NULL;
		o->owned = NULL;
		o->sched_reg = false;
		o->sched_next = NULL;
		o->cu = NULL;
		o->state = RBDL_ST_START;
		o->copyup_first = false;
		o->map_pending = false;
		o->omw.passed = false;
		/* A whole-object discard removes the object (the backing
		 * plan may change that, plan_backed). */
		o->kind = rbdl_op_discards(op) && o->obj_off == 0 &&
				  o->len == img->layout.object_size
			  ? RBDL_KIND_REMOVE
			  : RBDL_KIND_PLAIN;
		o->first_seg = si;
		if (has_data)
			for (uint32_t k = 0; k < objs[i].npieces; k++)
				si += rbdl_plan_piece_segs(
					&bd, &pieces[objs[i].first_piece + k],
					&req->segs[si]);
		o->nsegs = si - o->first_seg;
		rbdl_oid_data(o->oid, sizeof(o->oid), img->object_prefix,
			      o->objno);
	}

	req->gen_parity = rbdl_flush_op_start(img);
	atomic_init(&req->pending, (int)nobjs + 1);
	if (a->owned)
		req->owned = a->owned;	/* the request's now (io.h) */
	if (rbdl_op_writes(op)) {
		req->lkw.resume = req_lock_resume;
		if (a->nested) {
			rbdl_lock_write_nest(img);
		} else if (!rbdl_lock_write_try(img)) {
			/* The lock's task sends the objects later. */
			for (size_t i = 0; i < nobjs && r >= 0; i++)
				r = rbdl_obj_keep_data(&req->objs[i]);
			if (r < 0) {
				req_fail_unsent(req, r, true);
				goto out_parked;
			}
			if (!rbdl_lock_write_begin(img, &req->lkw))
				goto out_parked; /* resumed by the lock's task */
		}
		req->holds_lock = true;
	}
	req_send(req, true);
out_parked:
	r = 0;
out_map:
	if (objs != objs_stack)
		free(objs);
	if (pieces != pieces_stack)
		free(pieces);
	return r;
}

/* Start an armed request now: refresh first if due (on this thread),
 * clip, map, send.  Errors arrive through c. */
static void submit_now(struct rbdl_image *img, struct rbdl_comp *c,
		       const struct rbdl_io_args *a)
{
	enum rbdl_op op = a->op;
	uint64_t len = a->len, size;
	int r;

	if (op == RBDL_OP_FLUSH) {
		/* librbd journals flushes too */
		if (__builtin_expect(rbdl_journal_handle(img) != NULL ||
					     rbdl_journal_wanted(img),
				     0) &&
		    !a->own)
			goto journaled;
		/* Held writes go now, not after the op they wait for. */
		rbdl_sched_flush(img);
		rbdl_flush_submit(img, c);
		return;
	}
	/* The view's snapshot is gone (image/state.h): as librbd, checked
	 * before this request's own refresh, which may find it gone only
	 * for the requests after it. */
	if (__builtin_expect(rbdl_image_snap_gone(img), 0)) {
		r = -ENOENT;
		goto late;
	}
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		goto late;
	/* After the refresh, as for every request: the hook clips with the
	 * size it gives. */
	if (__builtin_expect(rbdl_journal_handle(img) != NULL, 0) ||
	    (rbdl_op_writes(op) &&
	     __builtin_expect(atomic_load_explicit(&img->write_error,
						   memory_order_relaxed) < 0,
			      0) &&
	     rbdl_journal_wanted(img)))
		goto journaled;
	if (op == RBDL_OP_WRITE_ZEROES &&
	    (a->zero_flags & ~RBD_WRITE_ZEROES_FLAG_THICK_PROVISION)) {
		r = -EINVAL;
		goto late;
	}
	if (len == 0) {
		/* librbd 16.2: a zero-length write on a read-only or snapshot
		 * open still reports -EROFS; anything else completes with 0. */
		r = rbdl_op_writes(op) ? atomic_load_explicit(&img->write_error,
							 memory_order_relaxed)
				  : 0;
		goto late;
	}
	size = atomic_load_explicit(&img->size, memory_order_acquire);
	if (a->off >= size) {
		r = -EINVAL;
		goto late;
	}
	if (len > size - a->off)
		len = size - a->off;
	if (rbdl_op_writes(op)) {
		r = atomic_load_explicit(&img->write_error,
					 memory_order_relaxed);
		if (r < 0)
			goto late;
	}
	if (op == RBDL_OP_CAW && (a->off % 512) + len > 512) {
		r = -EINVAL;
		goto late;
	}
	if (op == RBDL_OP_WRITESAME &&
	    atomic_load_explicit(&img->ws_zero_discards,
				 memory_order_relaxed) &&
	    rbdl_plan_all_zero(a->buf, a->data_len))
		op = RBDL_OP_WRITE_ZEROES;	/* as librbd's C API does */
	if (op == RBDL_OP_WRITE_ZEROES &&
	    (a->zero_flags & RBD_WRITE_ZEROES_FLAG_THICK_PROVISION)) {
		struct rbdl_io_args t = *a;

		t.buf = NULL;	/* thick: writes of zeros */
		t.data_len = 512;
		r = req_start(img, c, &t, RBDL_OP_WRITESAME, len,
			      c->internal ? 0
					  : rbdl_plan_thick_split_error(
						    a->off, a->len, size));
	} else {
		r = req_start(img, c, a, op, len, 0);
	}
	if (r < 0)
		goto late;
	return;
late:
	/* librbd reports these through the completion, never inline. */
	rbdl_wbuf_free(a->owned);
	rbdl_comp_complete_deferred(c, r, img->defer_io);
	return;
journaled:
	/* The system's librbd runs a journaled image's I/O (journal.h); it
	 * copies write data when it takes it, as librbdlite would. */
	rbdl_journal_io->submit(img, c, a);
	rbdl_wbuf_free(a->owned);
}

/*
 * Whether request a must wait in the queue below rather than start on the
 * submitter's thread: a refresh is due (flushes excepted), or it is the
 * first aio write or flush of a journaled image, which opens the image's
 * real librbd handle first (image/journal.h: a few round trips; a
 * synchronous call blocks its caller anyway and opens it there).
 */
static inline bool must_queue(struct rbdl_image *img,
			      const struct rbdl_comp *c,
			      const struct rbdl_io_args *a)
{
	if (a->op != RBDL_OP_FLUSH && rbdl_image_refresh_due(img))
		return true;
	return __builtin_expect(rbdl_journal_wanted(img), 0) && !a->own &&
	       !c->internal &&
	       (rbdl_op_writes(a->op) || a->op == RBDL_OP_FLUSH) &&
	       !atomic_load_explicit(&img->journal_h, memory_order_relaxed);
}

/*
 * Requests waiting for a refresh, or for a journaled image's real handle
 * (must_queue).  A submission that finds a refresh due
 * (or requests already waiting, which it must not overtake) is copied
 * here with its iovec array (the caller's array may go when the call
 * returns; the buffers stay the caller's until completion, as in
 * librbd), and the image's refresh task refreshes on the control
 * context's internal lane and starts the requests in order.  io_queued
 * stays set until the queue is empty after the last one was started, so
 * a submitter that finds it clear (acquire, pairing with the task's
 * release store) comes after every queued request.
 */
struct rbdl_ioq_ent {
	struct rbdl_ioq_ent *next;
	struct rbdl_comp *c;
	struct rbdl_io_args a;
	struct iovec iov[];
};

static void ioq_run(struct rbdl_ctl_task *t)
{
	struct rbdl_image *img = container_of(t, struct rbdl_image, ioq_task);

	for (;;) {
		pthread_mutex_lock(&img->ioq_mu);
		struct rbdl_ioq_ent *e = img->ioq_head;

		if (!e) {
			atomic_store_explicit(&img->io_queued, false,
					      memory_order_release);
			pthread_mutex_unlock(&img->ioq_mu);
			return;
		}
		img->ioq_head = e->next;
		if (!img->ioq_head)
			img->ioq_tail = NULL;
		pthread_mutex_unlock(&img->ioq_mu);
		/* Refreshes first when due (also again, when another
		 * notification came meanwhile). */
		submit_now(img, e->c, &e->a);
		free(e);
	}
}

/*
 * The data of an aio write that waits in the queue, copied (wbuf.h) into
 * t->owned with t->buf (and t->cmp) pointing into it, when the image
 * copies write data (state.h: copy_writes).  The image's size is not
 * known until the refresh: a write from inside the size known now is cut
 * at it (its data past it is not copied), one from at or past it (it may
 * be for the size the refresh brings) is copied whole, as librbd copies
 * every write before clipping it.  A compare-and-write longer than a
 * sector, which only an image end inside the sector could make valid, is
 * answered now with librbd's -EINVAL.  Returns 0, or an errno to complete
 * the request with now.
 */
static int ioq_keep_data(struct rbdl_image *img, const struct rbdl_comp *c,
			 struct rbdl_io_args *t)
{
	uint64_t size = atomic_load_explicit(&img->size, memory_order_acquire);
	uint64_t keep = 0, n;
	bool caw = t->op == RBDL_OP_CAW;
	char *p;

	if (c->internal || !t->len || !carries_data(img, t->op, t->buf))
		return 0;
	if (t->op == RBDL_OP_WRITESAME) {
		keep = t->data_len;
	} else {
		if (caw && t->len > 512)
			return -EINVAL;
		keep = t->off >= size || t->len < size - t->off
			       ? t->len
			       : size - t->off;
		t->len = keep;
	}
	n = keep + (caw ? keep : 0);
	if (n > SIZE_MAX || !(p = rbdl_wbuf_alloc((size_t)n)))
		return -ENOMEM;
	if (t->iov) {
		char *q = p;

		for (int i = 0; i < t->iovcnt && q < p + keep; i++) {
			size_t l = t->iov[i].iov_len;

			if (l > (size_t)(p + keep - q))
				l = (size_t)(p + keep - q);
			memcpy(q, t->iov[i].iov_base, l);
			q += l;
		}
		t->iov = NULL;
		t->iovcnt = 0;
	} else {
		memcpy(p, t->buf, keep);
	}
	if (caw) {
		memcpy(p + keep, t->cmp, keep);
		t->cmp = p + keep;
	}
	t->buf = p;
	t->owned = p;
	return 0;
}

/* Queue an armed request behind the refresh; false: submit it now (the
 * refresh finished meanwhile, or no memory or thread for the queue). */
static bool ioq_add(struct rbdl_image *img, struct rbdl_comp *c,
		    const struct rbdl_io_args *a)
{
	size_t niov = a->iov ? (size_t)a->iovcnt : 0;
	struct rbdl_ioq_ent *e = malloc(sizeof(*e) + niov * sizeof(e->iov[0]));
	int r;

	if (!e)
		return false;
	e->next = NULL;
	e->c = c;
	e->a = *a;
	if (niov) {
		memcpy(e->iov, a->iov, niov * sizeof(e->iov[0]));
		e->a.iov = e->iov;
	}
	pthread_mutex_lock(&img->ioq_mu);
	if (!atomic_load_explicit(&img->io_queued, memory_order_relaxed) &&
	    !must_queue(img, c, a)) {
		pthread_mutex_unlock(&img->ioq_mu);
		free(e);
		return false;
	}
	r = ioq_keep_data(img, c, &e->a);
	if (r < 0) {
		/* Answered now, as a late error (never inline). */
		pthread_mutex_unlock(&img->ioq_mu);
		free(e);
		rbdl_comp_complete_deferred(c, r, img->defer_io);
		return true;
	}
	if (!img->ioq_live) {
		rbdl_ctl_task_init(&img->ioq_task, RBDL_CTL_INTERNAL, ioq_run);
		img->ioq_live = true;
	}
	if (img->ioq_tail)
		img->ioq_tail->next = e;
	else
		img->ioq_head = e;
	img->ioq_tail = e;
	atomic_store_explicit(&img->io_queued, true, memory_order_relaxed);
	if (rbdl_ctl_kick(&img->ioq_task) < 0 && img->ioq_head == e) {
		/* No thread to run the queue: start it on this thread. */
		img->ioq_head = img->ioq_tail = NULL;
		atomic_store_explicit(&img->io_queued, false,
				      memory_order_relaxed);
		pthread_mutex_unlock(&img->ioq_mu);
		if (e->a.owned != a->owned)	/* the copy ioq_keep_data made */
			rbdl_wbuf_free(e->a.owned);
		free(e);
		return false;
	}
	pthread_mutex_unlock(&img->ioq_mu);
	return true;
}

int rbdl_io_submit(struct rbdl_image *img, struct rbdl_comp *c,
		   const struct rbdl_io_args *a)
{
	/* Acquire: a loaded encryption's state is complete (luks.c). */
	struct rbdl_crypt *k = atomic_load_explicit(&img->crypt,
						    memory_order_acquire);
	int r;

	if (!a->raw) {	/* an image request (not an encryption's inner one) */
		/* librbd stamps every image request as it starts */
		rbdl_stamps_io(img, a->op == RBDL_OP_READ ? RBDL_STAMP_ACCESS
							  : RBDL_STAMP_MODIFY);
		if (__builtin_expect(k != NULL, 0))
			return rbdl_crypt_submit(img, k, c, a);
	}

	/* Only aio submissions post events; synchronous calls and CAW (as in
	 * Pacific) never do. */
	r = rbdl_comp_arm(c, &img->dl, a->op != RBDL_OP_CAW && !c->internal);
	if (r < 0)
		return r;
	rbdl_stat_inc(RBDL_STAT_IOS_SUBMITTED, 1);
	c->user_flush = a->op == RBDL_OP_FLUSH && a->user;
	if (c->user_flush)
		rbdl_wa_user_flush(img);
	/* A refresh that is due never runs on the submitter's thread (it
	 * would be about 8 round trips on qemu's event loop), nor does the
	 * opening of a journaled image's real handle: the request waits in
	 * the queue (must_queue).  Flushes only keep their place behind
	 * queued requests.  The internal lane (the refresh task itself)
	 * refreshes inline. */
	if (__builtin_expect(atomic_load_explicit(&img->io_queued,
						  memory_order_acquire) ||
				     must_queue(img, c, a),
			     0) &&
	    !rbdl_ctl_on_lane(RBDL_CTL_INTERNAL) && ioq_add(img, c, a))
		return 0;
	submit_now(img, c, a);
	return 0;
}

ssize_t rbdl_io_sync(struct rbdl_image *img, const struct rbdl_io_args *a)
{
	struct rbdl_comp *c;
	/* Through a loaded encryption (rbdl_io_submit), the data area's. */
	uint64_t size = a->raw ? atomic_load_explicit(&img->size,
						      memory_order_acquire)
			       : rbdl_image_size(img);
	ssize_t r;

	r = rbdl_comp_create(NULL, NULL, &c);
	if (r < 0)
		return r;
	c->internal = true;
	r = rbdl_io_submit(img, c, a);
	if (r == 0) {
		rbdl_comp_wait(c);
		r = c->rval;
	}
	rbdl_comp_release(c);
	if (r < 0 || a->op == RBDL_OP_READ || a->op == RBDL_OP_FLUSH)
		return r;
	/* librbd's synchronous writes report the clipped length. */
	if (a->off >= size)
		return 0;
	return (ssize_t)(a->len < size - a->off ? a->len : size - a->off);
}
