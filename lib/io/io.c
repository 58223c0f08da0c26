/*
 * io.c - image requests: clip, stripe, and issue object operations.
 *
 * Life of a request (see io.h for the contract):
 *
 *   submitter thread                         librados callback thread
 *   ----------------                         ------------------------
 *   arm completion, refresh if due
 *   clip (librbd's rules) -- early result ---> deferred completion
 *   map onto objects (striper)
 *   pending = nobjs + 1 (the submit guard)
 *   for each object: build and send op  ---> obj_done(): record result,
 *   drop the guard                              zero-fill holes, put
 *            \_____ last put ______________/
 *                          |
 *                   req_finish(): rval, flush bookkeeping,
 *                   rbdl_comp_complete() -> callbacks and events
 *
 * If the submitter's guard drop happens to be the last put (every object
 * op already finished), the completion is deferred to a librados thread so
 * that a callback never runs inside the submitting call.
 *
 * Deferred completions use rados_aio_flush_async() on an I/O context that
 * never writes: librados then completes at once from its finisher thread.
 *
 * Flush: operations are counted per generation parity; a flush bumps the
 * generation and completes when the previous parity drains (struct
 * rbdl_flushq in image.h).  Flushes arriving while one is draining are
 * batched behind it.
 */
#include "config.h"

#include "proto/oid.h"
#include "io.h"
#include "core/internal.h"
#include "image/lock.h"
#include "image/objmap.h"
#include "image/parent.h"
#include "core/slab.h"
#include "core/stats.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

#define RBDL_REQ_INLINE_OBJS 4
#define RBDL_REQ_INLINE_SEGS 8
#define RBDL_MAX_ERRNO 4095
#define RBDL_FADVISE_MASK                                                    \
	(LIBRADOS_OP_FLAG_FADVISE_RANDOM |                                   \
	 LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL |                               \
	 LIBRADOS_OP_FLAG_FADVISE_WILLNEED |                                 \
	 LIBRADOS_OP_FLAG_FADVISE_DONTNEED | LIBRADOS_OP_FLAG_FADVISE_NOCACHE)

/* A contiguous run of one object backed by one contiguous buffer. */
struct rbdl_seg {
	char *ptr;
	uint64_t obj_off;
	uint64_t len;
	size_t bytes_read;	/* read ops */
	int prval;		/* read ops */
};

struct rbdl_req;

struct rbdl_objreq {
	struct rbdl_req *req;
	rados_completion_t rc;
	rados_read_op_t rop;
	rados_write_op_t wop;
	uint64_t objno;
	uint64_t obj_off;	/* span in the object */
	uint64_t len;
	uint32_t first_seg;
	uint32_t nsegs;
	uint32_t first_piece;	/* write-same only */
	uint32_t npieces;
	int cmp_prval;		/* compare-and-write */
	bool removes;		/* whole-object discard: rados remove */
	bool hides;		/* whole-object discard of a backed object:
				 * create + truncate(0), parent hidden */
	bool guarded;		/* asserts the object exists: copy-up on
				 * ENOENT (a clone's object in the overlap) */
	bool absent;		/* guarded, and the map says it is absent */
	bool post_map;		/* remove sent with the map at PENDING */
	struct rbdl_pxfer *cu;	/* copy-up data to prepend to the op */
	char *heap;		/* expanded write-same data */
	struct rbdl_omwaiter omw;	/* waiting for an object map update */
	char oid[RBDL_DATA_OID_MAX];
};

struct rbdl_req {
	struct rbdl_image *img;
	struct rbdl_comp *comp;
	enum rbdl_op op;
	int op_flags;
	atomic_int pending;
	atomic_long result;	/* first error wins */
	unsigned gen_parity;
	uint64_t off;
	uint64_t len;		/* after clipping */
	const char *pattern;	/* write-same */
	size_t data_len;
	bool thick;		/* write-zeroes with THICK_PROVISION */
	uint64_t *mismatch_off;
	const void *cmp;	/* compare-and-write: compare buffer */
	uint64_t cmp_len;	/* compare length: NOT clipped (librbd) */
	bool holds_lock;	/* counted in the exclusive lock's writes */
	const struct rbdl_pview *pv;	/* what backs the image (parent.h) */
	uint32_t nsnaps;	/* snapshots in io's context (writes) */
	bool track_data;	/* a backing read: maintain data_end */
	_Atomic uint64_t data_end;	/* see struct rbdl_comp */
	struct rbdl_lkwaiter lkw;	/* parked until the lock is ours */
	rados_ioctx_t io;
	struct rbdl_objreq *objs;
	uint32_t nobjs;
	struct rbdl_seg *segs;
	uint32_t nsegs;
	struct rbdl_piece *pieces;	/* write-same only */
	struct rbdl_objreq objs_inline[RBDL_REQ_INLINE_OBJS];
	struct rbdl_seg segs_inline[RBDL_REQ_INLINE_SEGS];
};

static struct rbdl_slab req_slab =
	RBDL_SLAB_INIT("request", sizeof(struct rbdl_req));
static pthread_once_t req_once = PTHREAD_ONCE_INIT;

static void req_init_once(void)
{
	rbdl_slab_init(&req_slab);
}

static bool op_writes(enum rbdl_op op)
{
	return op != RBDL_OP_READ && op != RBDL_OP_FLUSH;
}

static bool all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* *p = max(*p, v).  Relaxed: the result is read after the request's (or
 * transfer's) last reference drop, an acq_rel that orders it. */
static void atomic_max_u64(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);

	while (cur < v && !atomic_compare_exchange_weak_explicit(
				  p, &cur, v, memory_order_relaxed,
				  memory_order_relaxed))
		;
}

/* ---- deferred completion ------------------------------------------------ */

static void defer_done(rados_completion_t rc, void *arg)
{
	struct rbdl_comp *c = arg;

	rados_aio_release(rc);
	rbdl_comp_complete(c, c->rval);
}

/* Complete c with rval from a librados thread, never inline. */
static void complete_deferred(struct rbdl_image *img, struct rbdl_comp *c,
			      ssize_t rval)
{
	rados_completion_t rc;

	c->rval = rval;
	if (rados_aio_create_completion2(c, defer_done, &rc) == 0) {
		if (rados_aio_flush_async(img->defer_io, rc) == 0)
			return;
		rados_aio_release(rc);
	}
	/* Out of memory in librados: completing inline is the lesser evil. */
	rbdl_log("cannot defer a completion; completing inline");
	rbdl_comp_complete(c, rval);
}

/* ---- flush bookkeeping -------------------------------------------------- */

/*
 * Complete every waiting flush whose generation drained.  deferred: the
 * caller is inside a submit call, so completions go through a librados
 * thread instead of running callbacks here.
 */
static void flush_check(struct rbdl_image *img, bool deferred)
{
	struct rbdl_flushq *fq = &img->fq;

	pthread_mutex_lock(&fq->lock);
	while (atomic_load(&fq->active)) {
		unsigned p = (unsigned)((atomic_load(&fq->gen) - 1) & 1);

		if (atomic_load(&fq->count[p]) != 0)
			break;
		struct rbdl_comp *list = fq->waiting;

		fq->waiting = NULL;
		if (fq->queued) {
			fq->waiting = fq->queued;
			fq->queued = NULL;
			atomic_fetch_add(&fq->gen, 1);
		} else {
			atomic_store(&fq->active, false);
		}
		pthread_mutex_unlock(&fq->lock);
		while (list) {
			struct rbdl_comp *n = list->dnext;

			if (deferred)
				complete_deferred(img, list, 0);
			else
				rbdl_comp_complete(list, 0);
			list = n;
		}
		pthread_mutex_lock(&fq->lock);
	}
	pthread_mutex_unlock(&fq->lock);
}

static unsigned flush_op_start(struct rbdl_image *img)
{
	struct rbdl_flushq *fq = &img->fq;

	for (;;) {
		uint64_t g = atomic_load(&fq->gen);

		/* seq_cst add then re-load of gen, against flush_submit's
		 * seq_cst gen bump then load of the count: either the flush
		 * sees this operation or the operation sees the new gen. */
		atomic_fetch_add(&fq->count[g & 1], 1);
		if (atomic_load(&fq->gen) == g)
			return (unsigned)(g & 1);
		if (atomic_fetch_sub(&fq->count[g & 1], 1) == 1 &&
		    atomic_load(&fq->active))
			flush_check(img, true);
	}
}

static void flush_op_end(struct rbdl_image *img, unsigned parity,
			 bool from_submitter)
{
	struct rbdl_flushq *fq = &img->fq;

	/* seq_cst: pairs with flush_submit's store of active then load of
	 * the count. */
	if (atomic_fetch_sub(&fq->count[parity], 1) == 1 &&
	    atomic_load(&fq->active))
		flush_check(img, from_submitter);
}

static void flush_submit(struct rbdl_image *img, struct rbdl_comp *c)
{
	struct rbdl_flushq *fq = &img->fq;

	pthread_mutex_lock(&fq->lock);
	if (atomic_load(&fq->active)) {
		/* Batched behind the flush that is draining now. */
		c->dnext = fq->queued;
		fq->queued = c;
		pthread_mutex_unlock(&fq->lock);
		return;
	}
	c->dnext = NULL;
	fq->waiting = c;
	atomic_store(&fq->active, true);
	atomic_fetch_add(&fq->gen, 1);
	pthread_mutex_unlock(&fq->lock);
	/* Nothing in flight: the flush is done already (deferred, since we
	 * are inside the submit call). */
	flush_check(img, true);
}

/* ---- request completion ------------------------------------------------- */

static void req_set_error(struct rbdl_req *req, long r)
{
	long zero = 0;

	/* First error wins (librbd's error_rval compare-exchange). */
	atomic_compare_exchange_strong_explicit(&req->result, &zero, r,
						memory_order_relaxed,
						memory_order_relaxed);
}

static void req_free(struct rbdl_req *req)
{
	if (req->objs != req->objs_inline)
		free(req->objs);
	if (req->segs != req->segs_inline)
		free(req->segs);
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

	if (req->track_data)
		c->data_end = atomic_load_explicit(&req->data_end,
						   memory_order_relaxed);

	req_free(req);
	if (held)
		rbdl_lock_write_end(img);
	/* Keep the image alive across completion and flush bookkeeping (the
	 * operation's own count may be dropped by the delivery). */
	rbdl_delivery_get(&img->dl);
	/* If every object op finished before the submitter dropped its guard,
	 * deliver from a librados thread: never run a callback inside the
	 * submitting call.  The flush count drops only after the completion
	 * is queued, so a flush submitted later completes after it. */
	if (from_submitter)
		complete_deferred(img, c, rval);
	else
		rbdl_comp_complete(c, rval);
	flush_op_end(img, parity, from_submitter);
	rbdl_delivery_put(&img->dl);
}

static void req_put(struct rbdl_req *req, bool from_submitter)
{
	/* acq_rel: the last putter sees every object op's results. */
	if (atomic_fetch_sub_explicit(&req->pending, 1,
				      memory_order_acq_rel) == 1)
		req_finish(req, from_submitter);
}

static void zero_tail(struct rbdl_seg *s, size_t have)
{
	if (have < s->len)
		memset(s->ptr + have, 0, s->len - have);
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

/* The object is done (data op and any object map follow-up). */
static void obj_finish(struct rbdl_objreq *o, bool in_submit)
{
	req_put(o->req, in_submit);
}

static void obj_fail(struct rbdl_objreq *o, int err, bool in_submit)
{
	req_set_error(o->req, err);
	obj_release_ops(o);
	obj_finish(o, in_submit);
}

/* After a whole-object remove: map PENDING -> NONEXISTENT. */
static void post_map_done(struct rbdl_omwaiter *w, int err)
{
	struct rbdl_objreq *o = container_of(w, struct rbdl_objreq, omw);

	if (err < 0)
		req_set_error(o->req, err);
	obj_finish(o, false);
}

/* A tracked read got n bytes of object data into segment s. */
static void note_data(struct rbdl_req *req, const struct rbdl_seg *s,
		      uint64_t n)
{
	atomic_max_u64(&req->data_end,
		       (uint64_t)(s->ptr - req->pattern) + n);
}

/* ---- reading through to the backing image (parent.h) -------------------- */

/*
 * A transfer from the backing image for one object: parent reads either
 * into the request's own read buffers (read-through of an object the clone
 * has not written) or into a private buffer with the object's parent data
 * (copy-up before the first write to it).  It happens once per object a
 * clone has not written yet, so it allocates.  Parent reads are ordinary
 * internal requests on the backing image: a parent that is a clone itself
 * reads through to its own parent the same way.
 */
struct rbdl_pxfer {
	struct rbdl_objreq *o;
	atomic_int pending;	/* parent reads in flight + the issuer's guard */
	atomic_int err;		/* first error */
	void (*done)(struct rbdl_pxfer *px, bool in_submit);
	void *ctx;		/* synchronous use: the waiter */
	_Atomic uint64_t data_end;	/* copy-up: bytes the parent holds */
	uint64_t len;		/* copy-up: bytes of parent data */
	char data[];		/* copy-up: one object's worth */
};

static void pxfer_put(struct rbdl_pxfer *px, bool in_submit)
{
	/* acq_rel: the last putter sees every parent read's data and
	 * error. */
	if (atomic_fetch_sub_explicit(&px->pending, 1, memory_order_acq_rel) ==
	    1)
		px->done(px, in_submit);
}

static void pxfer_error(struct rbdl_pxfer *px, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong_explicit(&px->err, &zero, err,
						memory_order_relaxed,
						memory_order_relaxed);
}

static void pxfer_cb(rbdl_user_comp_t uc, void *arg)
{
	struct rbdl_comp *c = uc;
	struct rbdl_pxfer *px = arg;

	if (c->rval < 0) {
		pxfer_error(px, (int)c->rval);
	} else if (c->data_end && (!px->o || px->o->req->op != RBDL_OP_READ)) {
		/* Copy-up: where the parent really had data (librbd copies
		 * up the parent's allocated extents). */
		atomic_max_u64(&px->data_end, c->data_base + c->data_end);
	}
	rbdl_comp_release(c);
	pxfer_put(px, false);
}

/* Read [off, off + len) of the backing image into dst, as part of px. */
static int pxfer_read(struct rbdl_pxfer *px, struct rbdl_image *parent,
		      uint64_t off, uint64_t len, char *dst, const char *base)
{
	struct rbdl_io_args a = {
		.op = RBDL_OP_READ, .off = off, .len = len, .buf = dst,
	};
	struct rbdl_comp *c;
	int r = rbdl_comp_create(px, pxfer_cb, &c);

	if (r < 0)
		return r;
	c->internal = true;
	/* base NULL: the caller reads into an iovec; nothing to track. */
	c->track_data = base != NULL;
	c->data_base = base ? (uint64_t)(dst - base) : 0;
	atomic_fetch_add_explicit(&px->pending, 1, memory_order_relaxed);
	r = rbdl_io_submit(parent, c, &a);
	if (r < 0) {
		atomic_fetch_sub_explicit(&px->pending, 1,
					  memory_order_relaxed);
		rbdl_comp_release(c);
	}
	return r;
}

/*
 * Fill dst with [obj_off, obj_off + len) of object objno as the backing
 * image sees it: parent reads for the image ranges below the overlap (and
 * the parent's size), zeros beyond.  Returns the end, relative to obj_off,
 * of the part that lies below the overlap (the backed part of an object is
 * a prefix: image offsets grow with object offsets), or a negative errno.
 */
static int64_t pxfer_extent(struct rbdl_pxfer *px, const struct rbdl_pview *pv,
			    const struct rbdl_layout *l, uint64_t objno,
			    uint64_t obj_off, uint64_t len, char *dst,
			    const char *base)
{
	struct rbdl_img_range stack[8], *rs = stack;
	uint64_t limit = pv->overlap, pos = 0, backed = 0;
	uint64_t psize = atomic_load_explicit(&pv->parent->size,
					      memory_order_acquire);
	int n;

	if (psize < limit)
		limit = psize;
	n = rbdl_striper_obj_to_image(l, objno, obj_off, len, rs,
				      RBDL_ARRAY_SIZE(stack));
	if (n == -ERANGE) {
		size_t max = len / l->stripe_unit + 2;

		rs = malloc(max * sizeof(*rs));
		if (!rs)
			return -ENOMEM;
		n = rbdl_striper_obj_to_image(l, objno, obj_off, len, rs, max);
	}
	for (int i = 0; i < n; i++) {
		uint64_t in = rs[i].img_off >= limit ? 0 : limit - rs[i].img_off;

		if (in > rs[i].len)
			in = rs[i].len;
		if (in) {
			int r = pxfer_read(px, pv->parent, rs[i].img_off, in,
					   dst + pos, base);

			if (r < 0) {
				n = r;
				break;
			}
			backed = pos + in;
		}
		if (in < rs[i].len)
			memset(dst + pos + in, 0, rs[i].len - in);
		pos += rs[i].len;
	}
	if (rs != stack)
		free(rs);
	return n < 0 ? n : (int64_t)backed;
}

/*
 * A transfer for object o (NULL when used synchronously, ctx then names
 * the waiter) with data_bytes of buffer; done runs once every parent read
 * issued through it has finished and the issuer dropped its count.  NULL
 * when out of memory.
 */
static struct rbdl_pxfer *pxfer_new(struct rbdl_objreq *o, size_t data_bytes,
				    void (*done)(struct rbdl_pxfer *, bool),
				    void *ctx)
{
	struct rbdl_pxfer *px = malloc(sizeof(*px) + data_bytes);

	if (!px)
		return NULL;
	px->o = o;
	px->ctx = ctx;
	px->done = done;
	px->len = 0;
	atomic_init(&px->pending, 1);	/* the issuer's count */
	atomic_init(&px->err, 0);
	atomic_init(&px->data_end, 0);
	return px;
}

/* Copy-up source: read the parent's data of the whole object objno into
 * px->data (px->len: the part below the overlap). */
static void pxfer_object(struct rbdl_pxfer *px, const struct rbdl_pview *pv,
			 const struct rbdl_layout *l, uint64_t objno)
{
	int64_t r = pxfer_extent(px, pv, l, objno, 0, l->object_size,
				 px->data, px->data);

	if (r < 0)
		pxfer_error(px, (int)r);
	else
		px->len = (uint64_t)r;
}

/* Does any byte of object objno lie below the view's overlap? */
static bool obj_backed(const struct rbdl_pview *pv, const struct rbdl_layout *l,
		       uint64_t objno)
{
	struct rbdl_img_range first;

	if (!pv->parent)
		return false;
	/* The object's first byte has its lowest image offset. */
	return rbdl_striper_obj_to_image(l, objno, 0, 1, &first, 1) == 1 &&
	       first.img_off < pv->overlap;
}

static void read_through_done(struct rbdl_pxfer *px, bool in_submit)
{
	struct rbdl_objreq *o = px->o;
	int err = atomic_load_explicit(&px->err, memory_order_relaxed);

	free(px);
	if (err < 0)
		req_set_error(o->req, err);
	obj_finish(o, in_submit);
}

/* The object is missing in the image: its segments come from the backing
 * image (zeros beyond the overlap). */
static void read_through(struct rbdl_objreq *o, bool in_submit)
{
	struct rbdl_req *req = o->req;
	struct rbdl_pxfer *px = pxfer_new(o, 0, read_through_done, NULL);

	if (!px) {
		req_set_error(req, -ENOMEM);
		obj_finish(o, in_submit);
		return;
	}
	for (uint32_t i = 0; i < o->nsegs; i++) {
		struct rbdl_seg *sg = &req->segs[o->first_seg + i];
		int64_t r = pxfer_extent(px, req->pv, &req->img->layout,
					 o->objno, sg->obj_off, sg->len,
					 sg->ptr, req->pattern);

		if (r < 0) {
			pxfer_error(px, (int)r);
			break;
		}
		/* A backing image's read through to its own parent counts
		 * as data over the whole range below the overlap (librbd's
		 * read_parent result is not sparse). */
		if (req->track_data && r > 0)
			note_data(req, sg, (uint64_t)r);
	}
	pxfer_put(px, in_submit);
}

/* ---- copy-up ------------------------------------------------------------- */

/*
 * The parent data to copy up: up to where the parent's objects really
 * held data (librbd copies the parent's allocated extents: the objects'
 * sizes, zeros inside included), within the part below the overlap; data
 * that is all zeros copies nothing.
 */
static void copyup_trim(struct rbdl_pxfer *px)
{
	uint64_t end = atomic_load_explicit(&px->data_end,
					    memory_order_relaxed);

	if (end < px->len)
		px->len = end;
	if (all_zero(px->data, px->len))
		px->len = 0;
}

/*
 * The first write to an object of a clone that the clone does not have yet
 * (rbd-protocol.md section 7, librbd's CopyupRequest): the write went out
 * guarded by assert_exists and came back ENOENT.  Read the object's parent
 * data P (the part below the overlap), then
 *   - P all zeros: no data is copied (a zero copy-up equals "absent");
 *   - the clone has snapshots and P is not zero (deep copy-up): copy P up
 *     alone with an empty snapshot context, so that the OSD keeps it in
 *     every snapshot, then send the write with the current context;
 *   - compare-and-write: copy up alone, then compare and write;
 *   - otherwise one op: rbd.copyup(P) followed by the write.
 * rbd.copyup does nothing when the object exists, so two requests racing
 * to copy up the same object both end up applying their writes on top of
 * the same parent data.
 */
static void obj_send(struct rbdl_objreq *o, bool in_submit);
static void copyup_snap_maps(struct rbdl_pxfer *px, bool in_submit);
static void copyup_deep_send(struct rbdl_pxfer *px, bool in_submit);

/* The copy-up alone finished: now the request's own op, unguarded. */
static void copyup_done(rados_completion_t rc, void *arg)
{
	struct rbdl_objreq *o = arg;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	obj_release_ops(o);
	if (r < 0) {
		obj_fail(o, r, false);
		return;
	}
	o->guarded = false;
	obj_send(o, false);
}

static int copyup_alone(struct rbdl_objreq *o, struct rbdl_pxfer *px,
			bool deep)
{
	struct rbdl_req *req = o->req;
	int r = rados_aio_create_completion2(o, copyup_done, &o->rc);

	if (r < 0)
		return r;
	o->wop = rados_create_write_op();
	if (!o->wop) {
		rados_aio_release(o->rc);
		return -ENOMEM;
	}
	rados_write_op_exec(o->wop, "rbd", "copyup", px->data, px->len, NULL);
	/* rd_io carries no snapshot context (a HEAD view: writes only
	 * happen there). */
	r = rados_aio_write_op_operate(o->wop, deep ? req->img->rd_io : req->io,
				       o->rc, o->oid, NULL, 0);
	if (r < 0)
		rados_aio_release(o->rc);
	return r;
}

/* Send the copy-up alone (deep copy-up, or compare-and-write). */
static void copyup_deep_send(struct rbdl_pxfer *px, bool in_submit)
{
	struct rbdl_objreq *o = px->o;
	int r = atomic_load_explicit(&px->err, memory_order_relaxed);

	if (r == 0)
		r = copyup_alone(o, px, px->len && o->req->nsnaps);
	free(px);	/* the op holds its own copy of the data */
	if (r < 0)
		obj_fail(o, r, in_submit);
}

static void copyup_map_done(rados_completion_t rc, void *arg)
{
	struct rbdl_pxfer *px = arg;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	/* A snapshot without a map object is fine (librbd ignores it). */
	if (r < 0 && r != -ENOENT)
		pxfer_error(px, r);
	pxfer_put(px, false);
}

/*
 * Deep copy-up with an object map: the object now exists in every
 * snapshot of the clone, so each snapshot's map records it before the
 * data goes out (librbd CopyupRequest::update_object_maps): the oldest
 * snapshot EXISTS, newer ones EXISTS_CLEAN with fast-diff (unchanged since
 * the previous snapshot), else EXISTS.  Snapshot maps are not locked.
 * Sends the updates as parent of px (one count each); errors go to px.
 */
static void snap_maps_send(struct rbdl_pxfer *px, struct rbdl_image *img,
			   uint64_t objno)
{
	bool fast = atomic_load_explicit(&img->features, memory_order_relaxed) &
		    RBD_FEATURE_FAST_DIFF;
	uint64_t *snaps;
	uint32_t n;

	pthread_mutex_lock(&img->refresh_lock);
	n = img->nsnaps;
	snaps = malloc((n ? n : 1) * sizeof(*snaps));
	if (snaps)
		memcpy(snaps, img->snaps, n * sizeof(*snaps));
	pthread_mutex_unlock(&img->refresh_lock);
	if (!snaps) {
		pxfer_error(px, -ENOMEM);
		return;
	}
	/* snaps is newest first: the oldest is the last. */
	for (uint32_t i = 0; i < n; i++) {
		uint8_t in[64];
		char oid[RBDL_OID_MAX];
		rados_completion_t rc;
		uint8_t st = i + 1 < n && fast ? RBDL_OBJ_EXISTS_CLEAN
					       : RBDL_OBJ_EXISTS;
		long len = rbdl_encode_object_map_update(in, sizeof(in), objno,
							 objno + 1, st, false,
							 0);
		rados_write_op_t op = rados_create_write_op();
		int r = len < 0 ? (int)len : !op ? -ENOMEM : 0;

		rbdl_oid_object_map(oid, sizeof(oid), img->id, snaps[i]);
		if (r == 0)
			r = rados_aio_create_completion2(px, copyup_map_done,
							 &rc);
		if (r == 0) {
			rados_write_op_exec(op, "rbd", "object_map_update",
					    (const char *)in, (size_t)len,
					    NULL);
			atomic_fetch_add_explicit(&px->pending, 1,
						  memory_order_relaxed);
			r = rados_aio_write_op_operate(op, img->md_io, rc, oid,
						       NULL, 0);
			if (r < 0) {
				atomic_fetch_sub_explicit(&px->pending, 1,
							  memory_order_relaxed);
				rados_aio_release(rc);
			}
		}
		/* The submitted op owns its ops and data now. */
		if (op)
			rados_release_write_op(op);
		if (r < 0) {
			pxfer_error(px, r);
			break;
		}
	}
	free(snaps);
}

static void copyup_snap_maps(struct rbdl_pxfer *px, bool in_submit)
{
	px->done = copyup_deep_send;
	atomic_store_explicit(&px->pending, 1, memory_order_relaxed);
	snap_maps_send(px, px->o->req->img, px->o->objno);
	pxfer_put(px, in_submit);
}

static void copyup_read_done(struct rbdl_pxfer *px, bool in_submit)
{
	struct rbdl_objreq *o = px->o;
	struct rbdl_req *req = o->req;
	int r = atomic_load_explicit(&px->err, memory_order_relaxed);

	if (r < 0)
		goto fail;
	copyup_trim(px);
	bool deep = px->len && req->nsnaps;

	if (!deep && req->op != RBDL_OP_CAW) {
		/* One op: obj_send prepends the copy-up (and frees px). */
		o->cu = px;
		o->guarded = false;
		obj_send(o, in_submit);
		return;
	}
	if (deep && atomic_load_explicit(&req->img->om.loaded,
					 memory_order_acquire)) {
		copyup_snap_maps(px, in_submit);
		return;
	}
	copyup_deep_send(px, in_submit);
	return;
fail:
	free(px);
	obj_fail(o, r, in_submit);
}

/* ---- synchronous copy-up (maintenance) ---- */

struct syncwait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void pxfer_sync_done(struct rbdl_pxfer *px, bool in_submit)
{
	struct syncwait *w = px->ctx;
	(void)in_submit;

	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Drop the issuer's count of px and wait until everything finished. */
static int pxfer_wait(struct rbdl_pxfer *px)
{
	struct syncwait *w = px->ctx;

	pxfer_put(px, false);
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	w->done = false;
	pthread_mutex_unlock(&w->mu);
	atomic_store_explicit(&px->pending, 1, memory_order_relaxed);
	return atomic_load_explicit(&px->err, memory_order_relaxed);
}

int rbdl_io_copyup_sync(struct rbdl_image *img, uint64_t objno,
			bool create_if_zero)
{
	const struct rbdl_pview *pv = rbdl_parent_view(img);
	uint32_t nsnaps = atomic_load(&img->wr_nsnaps);
	struct syncwait w = { PTHREAD_MUTEX_INITIALIZER,
			      PTHREAD_COND_INITIALIZER, false };
	struct rbdl_pxfer *px;
	char oid[RBDL_OID_MAX];
	uint64_t psize;
	time_t pmtime;
	int r;

	if (!obj_backed(pv, &img->layout, objno))
		return 0;
	rbdl_oid_data(oid, sizeof(oid), img->object_prefix, objno);
	r = rados_stat(img->rd_io, oid, &psize, &pmtime);
	if (r != -ENOENT)
		return r;	/* exists (0): its own data already */
	px = pxfer_new(NULL, img->layout.object_size, pxfer_sync_done, &w);
	if (!px)
		return -ENOMEM;
	pxfer_object(px, pv, &img->layout, objno);
	r = pxfer_wait(px);
	copyup_trim(px);
	if (r == 0 && !px->len && !create_if_zero)
		r = 1;	/* nothing to keep */
	bool deep = px->len && nsnaps;

	if (r == 0 && deep &&
	    atomic_load_explicit(&img->om.loaded, memory_order_acquire)) {
		snap_maps_send(px, img, objno);
		r = pxfer_wait(px);
	}
	if (r == 0) {
		rados_write_op_t op = rados_create_write_op();

		if (!op) {
			r = -ENOMEM;
		} else {
			rados_write_op_exec(op, "rbd", "copyup", px->data,
					    px->len, NULL);
			r = rados_write_op_operate(
				op, deep ? img->rd_io
					 : atomic_load(&img->wr_io),
				oid, NULL, 0);
			rados_release_write_op(op);
		}
	}
	free(px);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
	return r == 1 ? 0 : r;
}

/* A guarded write found no object (or the map says there is none):
 * fetch its parent data and copy up. */
static void copyup_start(struct rbdl_objreq *o, bool in_submit)
{
	struct rbdl_req *req = o->req;
	struct rbdl_pxfer *px = pxfer_new(o, req->img->layout.object_size,
					  copyup_read_done, NULL);

	if (!px) {
		obj_fail(o, -ENOMEM, in_submit);
		return;
	}
	pxfer_object(px, req->pv, &req->img->layout, o->objno);
	pxfer_put(px, in_submit);
}

static void obj_result(struct rbdl_objreq *o, int r)
{
	struct rbdl_req *req = o->req;

	switch (req->op) {
	case RBDL_OP_READ:
		if (r == -ENOENT) {
			for (uint32_t i = 0; i < o->nsegs; i++)
				zero_tail(&req->segs[o->first_seg + i], 0);
		} else if (r < 0) {
			req_set_error(req, r);
		} else if (!o->rop) {
			zero_tail(&req->segs[o->first_seg], (size_t)r);
			if (req->track_data && r > 0)
				note_data(req, &req->segs[o->first_seg],
					  (uint64_t)r);
		} else {
			for (uint32_t i = 0; i < o->nsegs; i++) {
				struct rbdl_seg *s =
					&req->segs[o->first_seg + i];

				if (s->prval < 0 && s->prval != -ENOENT)
					req_set_error(req, s->prval);
				else
					zero_tail(s, s->prval < 0
							     ? 0
							     : s->bytes_read);
				if (req->track_data && s->prval >= 0 &&
				    s->bytes_read)
					note_data(req, s, s->bytes_read);
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
			req_set_error(req, -EILSEQ);
		} else if (r < 0) {
			req_set_error(req, r);
		}
		break;
	}
	case RBDL_OP_DISCARD:
	case RBDL_OP_WRITE_ZEROES:
		/* remove or guarded truncate/zero of a missing object */
		if (r < 0 && r != -ENOENT)
			req_set_error(req, r);
		break;
	default:
		if (r < 0 && r != -EEXIST)
			req_set_error(req, r);
		break;
	}
}

static void obj_done(rados_completion_t rc, void *arg)
{
	struct rbdl_objreq *o = arg;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	if (r == -ENOENT) {
		struct rbdl_req *req = o->req;

		if (req->op == RBDL_OP_READ &&
		    obj_backed(req->pv, &req->img->layout, o->objno)) {
			obj_release_ops(o);
			read_through(o, false);
			return;
		}
		if (o->guarded) {
			obj_release_ops(o);
			copyup_start(o, false);
			return;
		}
	}
	obj_result(o, r);
	obj_release_ops(o);
	if (o->post_map && (r == 0 || r == -ENOENT)) {
		o->omw.go = post_map_done;
		int m = rbdl_objmap_prepare(o->req->img, o->objno,
					    RBDL_OBJ_NONEXISTENT, true,
					    RBDL_OBJ_PENDING, &o->omw);

		if (m == 1)
			return;
		if (m < 0)
			req_set_error(o->req, m);
	}
	obj_finish(o, false);
}

/* ---- building object operations ----------------------------------------- */

/*
 * Split the request's buffer into segments for every piece of every
 * object, in object order.  With count_only, only counts.
 */
struct bufdesc {
	char *buf;
	const struct iovec *iov;
	int iovcnt;
};

static uint32_t piece_segs(const struct bufdesc *b, const struct rbdl_piece *p,
			   struct rbdl_seg *out)
{
	if (b->buf) {
		if (out) {
			out->ptr = b->buf + p->buf_off;
			out->obj_off = p->obj_off;
			out->len = p->len;
		}
		return 1;
	}
	/* Find the iovec holding p->buf_off, then walk. */
	uint64_t base = 0, off = p->buf_off, left = p->len, oo = p->obj_off;
	uint32_t n = 0;
	int i = 0;

	while (i < b->iovcnt && base + b->iov[i].iov_len <= off)
		base += b->iov[i++].iov_len;
	while (left && i < b->iovcnt) {
		uint64_t in = off - base;
		uint64_t take = b->iov[i].iov_len - in;

		if (take > left)
			take = left;
		if (take) {
			if (out) {
				out[n].ptr = (char *)b->iov[i].iov_base + in;
				out[n].obj_off = oo;
				out[n].len = take;
			}
			n++;
		}
		off += take;
		oo += take;
		left -= take;
		base += b->iov[i++].iov_len;
	}
	return n;
}

static void build_oid(struct rbdl_req *req, struct rbdl_objreq *o)
{
	rbdl_oid_data(o->oid, sizeof(o->oid), req->img->object_prefix, o->objno);
}

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
 * parent data) or its guard (assert_exists: a missing object must be
 * copied up first).  NULL when out of memory.
 */
static rados_write_op_t obj_wop(struct rbdl_objreq *o)
{
	o->wop = rados_create_write_op();
	if (!o->wop)
		return NULL;
	if (o->cu)
		rados_write_op_exec(o->wop, "rbd", "copyup", o->cu->data,
				    o->cu->len, NULL);
	else if (o->guarded)
		rados_write_op_assert_exists(o->wop);
	return o->wop;
}

static int send_write(struct rbdl_req *req, struct rbdl_objreq *o)
{
	int flags = req->op_flags & RBDL_FADVISE_MASK;

	if (o->nsegs == 1 && !flags && !o->guarded && !o->cu) {
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

	if (o->removes)
		return rados_aio_remove(req->io, o->oid, o->rc);
	if (!obj_wop(o))
		return -ENOMEM;
	if (o->hides) {
		/* The whole object of a clone without snapshots: an empty
		 * object hides the parent data (librbd REMOVE_TRUNCATE). */
		rados_write_op_create(o->wop, LIBRADOS_CREATE_IDEMPOTENT, NULL);
		rados_write_op_truncate(o->wop, 0);
		return rados_aio_write_op_operate(o->wop, req->io, o->rc,
						  o->oid, NULL, 0);
	}
	/* Never create an object just to zero it (a clone's object is
	 * guarded or copied up already). */
	if (!o->guarded && !o->cu)
		rados_write_op_assert_exists(o->wop);
	if (o->obj_off + o->len == objsz)
		rados_write_op_truncate(o->wop, o->obj_off);
	else
		rados_write_op_zero(o->wop, o->obj_off, o->len);
	return rados_aio_write_op_operate(o->wop, req->io, o->rc, o->oid, NULL,
					  0);
}

/* Pattern byte for request byte i. */
static void fill_pattern(char *dst, uint64_t len, uint64_t req_off,
			 const char *pat, size_t plen)
{
	uint64_t phase = req_off % plen;

	while (len) {
		uint64_t take = plen - phase;

		if (take > len)
			take = len;
		memcpy(dst, pat + phase, take);
		dst += take;
		len -= take;
		phase = 0;
	}
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

			fill_pattern(o->heap + (p->obj_off - o->obj_off),
				     p->len, p->buf_off, req->pattern,
				     req->data_len);
		}
		rados_write_op_write(o->wop, o->heap, o->len, o->obj_off);
	}
	return rados_aio_write_op_operate(o->wop, req->io, o->rc, o->oid, NULL,
					  0);
}

static int send_caw(struct rbdl_req *req, struct rbdl_objreq *o,
		    const void *cmp)
{
	struct rbdl_seg *s = &req->segs[o->first_seg];

	if (!obj_wop(o))
		return -ENOMEM;
	o->cmp_prval = 0;
	/* librbd 16.2 clips the write at the image end but not the
	 * compare: compare bytes past the end are compared with zeros. */
	rados_write_op_cmpext(o->wop, cmp, req->cmp_len, s->obj_off,
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
		return send_caw(req, o, req->cmp);
	default:
		return -EINVAL;
	}
}

/* Issue the object's data op now. */
static void obj_send(struct rbdl_objreq *o, bool in_submit)
{
	struct rbdl_req *req = o->req;
	int r = rados_aio_create_completion2(o, obj_done, &o->rc);

	if (r == 0) {
		r = send_obj(req, o);
		/* The op copied the copy-up data when it was built. */
		free(o->cu);
		o->cu = NULL;
		if (r == 0)
			return;
		rados_aio_release(o->rc);
	}
	free(o->cu);
	o->cu = NULL;
	/* Synchronous failure: record it, count the object as done. */
	obj_fail(o, r, in_submit);
}

static void obj_start(struct rbdl_objreq *o, bool in_submit);

static void obj_map_ready(struct rbdl_omwaiter *w, int err)
{
	struct rbdl_objreq *o = container_of(w, struct rbdl_objreq, omw);

	if (err < 0)
		obj_fail(o, err, false);
	else
		obj_start(o, false);	/* re-check: the map moved on */
}

/*
 * Object map rules before the data op (rbd-protocol.md 6.4): writes need
 * EXISTS; a whole-object remove needs PENDING and is followed by
 * NONEXISTENT; a discard of an object the (valid) map says does not exist
 * is skipped, and a read of it returns zeros without I/O.  A write to an
 * object already EXISTS costs one byte load.
 */
static void obj_start(struct rbdl_objreq *o, bool in_submit)
{
	struct rbdl_req *req = o->req;
	struct rbdl_objmap *om = &req->img->om;

	if (req->op == RBDL_OP_READ) {
		/* While we own the lock nobody else writes: an object the
		 * valid map says does not exist reads as zeros, no I/O. */
		if (atomic_load_explicit(&om->loaded, memory_order_acquire) &&
		    !atomic_load_explicit(&req->img->at_snap,
					  memory_order_relaxed) &&
		    !atomic_load(&om->invalid) &&
		    rbdl_objmap_get(om, o->objno) == RBDL_OBJ_NONEXISTENT &&
		    o->objno < om->nobjs) {
			if (obj_backed(req->pv, &req->img->layout, o->objno)) {
				read_through(o, in_submit);
				return;
			}
			for (uint32_t i = 0; i < o->nsegs; i++)
				zero_tail(&req->segs[o->first_seg + i], 0);
			obj_finish(o, in_submit);
			return;
		}
	} else if (atomic_load_explicit(&om->loaded, memory_order_acquire)) {
		uint8_t st = rbdl_objmap_get(om, o->objno), target;
		bool discard = req->op == RBDL_OP_DISCARD ||
			       req->op == RBDL_OP_WRITE_ZEROES;

		if (!discard && st == RBDL_OBJ_EXISTS)
			goto send;
		if (discard && st == RBDL_OBJ_NONEXISTENT && !o->guarded &&
		    !o->hides && !atomic_load(&om->invalid)) {
			obj_finish(o, in_submit);	/* nothing to discard */
			return;
		}
		/* Under our lock a valid map's NONEXISTENT is the truth: a
		 * guarded op would only come back ENOENT, so copy up at once
		 * (librbd does too). */
		if (o->guarded && st == RBDL_OBJ_NONEXISTENT &&
		    !atomic_load(&om->invalid))
			o->absent = true;
		target = discard && o->removes ? RBDL_OBJ_PENDING
					       : RBDL_OBJ_EXISTS;
		o->omw.go = obj_map_ready;
		int r = rbdl_objmap_prepare(req->img, o->objno, target, false,
					    0, &o->omw);

		if (r == 1)
			return;
		if (r < 0) {
			obj_fail(o, r, in_submit);
			return;
		}
		o->post_map = discard && o->removes;
	}
send:
	if (o->absent) {
		copyup_start(o, in_submit);
		return;
	}
	obj_send(o, in_submit);
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
	bool discard = req->op == RBDL_OP_DISCARD ||
		       req->op == RBDL_OP_WRITE_ZEROES;

	if (!obj_backed(req->pv, &req->img->layout, o->objno))
		return;
	o->removes = false;
	if (full && !req->nsnaps && req->op != RBDL_OP_CAW)
		o->hides = discard;
	else
		o->guarded = true;
}

/* Send every object op of a request (under the lock when it writes),
 * then drop the submit guard. */
static void req_send(struct rbdl_req *req, bool in_submit)
{
	/* The write context is read only now, once the request may write
	 * (after a lock acquisition the snapshot context may be new). */
	if (op_writes(req->op)) {
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
		obj_start(&req->objs[i], in_submit);
	req_put(req, in_submit);
}

/* The exclusive lock is ours now (err 0), or cannot be had. */
static void req_lock_resume(struct rbdl_lkwaiter *w, int err)
{
	struct rbdl_req *req = container_of(w, struct rbdl_req, lkw);

	if (err == 0 && !rbdl_lock_write_begin(req->img, &req->lkw))
		return;		/* lost it again: parked once more */
	if (err < 0) {
		req_set_error(req, err);
		/* Every object counts as done; the guard drop finishes. */
		atomic_fetch_sub(&req->pending, (int)req->nobjs);
		req_put(req, false);
		return;
	}
	req->holds_lock = true;
	req_send(req, false);
}

/*
 * librbd 16.2 splits an aio thick write-zeroes longer than 512 bytes into
 * a 512-unaligned head, a 512-aligned middle and a tail, and clips each
 * piece separately: a
 * piece that starts at or past the image end fails with -EINVAL (the
 * others are still written).  Reproduce that answer.
 */
static int thick_split_error(const struct rbdl_io_args *a, uint64_t size)
{
	uint64_t off = a->off, end = a->off + a->len;

	if (a->len <= 512)
		return 0;	/* a single write, never split */
	if (end < off)
		end = UINT64_MAX;
	uint64_t head_end = (off + 511) / 512 * 512, mid_end = end / 512 * 512;

	if (head_end > end)
		head_end = end;
	if (mid_end < head_end)
		mid_end = head_end;
	/* head [off, head_end), middle [head_end, mid_end), tail [mid_end,
	 * end): off < size here, so only the middle and tail can fail. */
	if ((mid_end > head_end && head_end >= size) ||
	    (end > mid_end && mid_end >= size))
		return -EINVAL;
	return 0;
}

/* ---- submission ---------------------------------------------------------- */

/*
 * librbd's ImageDiscardRequest::prune_object_extents: shrink each object
 * extent to whole granularity units (at most the object size) and drop
 * the extents left empty; with a granularity of a whole object, an extent
 * reaching the object's end (a tail truncation) is kept as it is.  Returns
 * the number of extents kept (compacted in place).
 */
static size_t prune_discard(struct rbdl_image *img, uint64_t g,
			    struct rbdl_objext *objs, size_t nobjs)
{
	uint64_t osz = img->layout.object_size;
	size_t kept = 0;

	if (g > osz)
		g = osz;

	for (size_t i = 0; i < nobjs; i++) {
		uint64_t off = objs[i].obj_off, end = off + objs[i].len;

		if (g < osz || end < osz) {
			off = (off + g - 1) / g * g;
			end = end / g * g;
			if (off >= end)
				continue;
		}
		objs[kept] = objs[i];
		objs[kept].obj_off = off;
		objs[kept].len = end - off;
		kept++;
	}
	return kept;
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
	struct bufdesc bd = { a->buf, a->iov, a->iovcnt };
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
			nobjs = prune_discard(img, g, objs, nobjs);
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
			nsegs += piece_segs(&bd, &pieces[i], NULL);
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
	if (!req->objs || !req->segs ||
	    (op == RBDL_OP_WRITESAME && !req->pieces)) {
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
		o->post_map = false;
		o->guarded = false;
		o->absent = false;
		o->hides = false;
		o->cu = NULL;
		o->removes = (op == RBDL_OP_DISCARD ||
			      op == RBDL_OP_WRITE_ZEROES) &&
			     o->obj_off == 0 &&
			     o->len == img->layout.object_size;
		o->first_seg = si;
		if (has_data)
			for (uint32_t k = 0; k < objs[i].npieces; k++)
				si += piece_segs(
					&bd, &pieces[objs[i].first_piece + k],
					&req->segs[si]);
		o->nsegs = si - o->first_seg;
		build_oid(req, o);
	}

	req->gen_parity = flush_op_start(img);
	atomic_init(&req->pending, (int)nobjs + 1);
	if (op_writes(op)) {
		req->lkw.resume = req_lock_resume;
		if (!rbdl_lock_write_begin(img, &req->lkw))
			goto out_parked;	/* resumed by the lock thread */
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

int rbdl_io_submit(struct rbdl_image *img, struct rbdl_comp *c,
		   const struct rbdl_io_args *a)
{
	enum rbdl_op op = a->op;
	uint64_t len = a->len, size;
	int r;

	/* Only aio submissions post events; synchronous calls and CAW (as in
	 * Pacific) never do. */
	r = rbdl_comp_arm(c, &img->dl, op != RBDL_OP_CAW && !c->internal);
	if (r < 0)
		return r;
	rbdl_stat_inc(RBDL_STAT_IOS_SUBMITTED, 1);
	if (op == RBDL_OP_FLUSH) {
		flush_submit(img, c);
		return 0;
	}
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		goto late;
	if (op == RBDL_OP_WRITE_ZEROES &&
	    (a->zero_flags & ~RBD_WRITE_ZEROES_FLAG_THICK_PROVISION)) {
		r = -EINVAL;
		goto late;
	}
	if (len == 0) {
		/* librbd 16.2: a zero-length write on a read-only or snapshot
		 * open still reports -EROFS; anything else completes with 0. */
		r = op_writes(op) ? atomic_load_explicit(&img->write_error,
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
	if (op_writes(op)) {
		r = atomic_load_explicit(&img->write_error,
					 memory_order_relaxed);
		if (r < 0)
			goto late;
	}
	if (op == RBDL_OP_CAW && (a->off % 512) + len > 512) {
		r = -EINVAL;
		goto late;
	}
	if (op == RBDL_OP_WRITESAME && all_zero(a->buf, a->data_len))
		op = RBDL_OP_WRITE_ZEROES;	/* rbd_discard_on_zeroed_write_same */
	if (op == RBDL_OP_WRITE_ZEROES &&
	    (a->zero_flags & RBD_WRITE_ZEROES_FLAG_THICK_PROVISION)) {
		struct rbdl_io_args t = *a;

		t.buf = NULL;	/* thick: writes of zeros */
		t.data_len = 512;
		r = req_start(img, c, &t, RBDL_OP_WRITESAME, len,
			      c->internal ? 0 : thick_split_error(a, size));
	} else {
		r = req_start(img, c, a, op, len, 0);
	}
	if (r < 0)
		goto late;
	return 0;
late:
	/* librbd reports these through the completion, never inline. */
	complete_deferred(img, c, r);
	return 0;
}

ssize_t rbdl_io_sync(struct rbdl_image *img, const struct rbdl_io_args *a)
{
	struct rbdl_comp *c;
	uint64_t size = atomic_load_explicit(&img->size, memory_order_acquire);
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
