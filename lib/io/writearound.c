/*
 * writearound.c - librbd 16.2's write-around acknowledgement
 * (cache/WriteAroundObjectDispatch.cc), a part of the data path's state
 * machine (its entry points are declared in request.h): with
 * rbd_cache=true and rbd_cache_policy=writearound (both defaults) an aio
 * write, discard, write-zeroes or write-same is completed to the caller
 * as soon as all its object operations are handed to librados (or hold
 * their data: request.h), while the bytes acknowledged early and still in
 * flight stay within rbd_cache_max_dirty; from the application's first
 * flush on, when rbd_cache_writethrough_until_flush (the default).
 *
 * Each tracked request has a kind (fixed when it is built):
 *   WRITE  a write, discard, write-zeroes or write-same, not FUA (also
 *          a synchronous one, which returns early as in librbd: its data
 *          is copied where kept, request.h): it may be acknowledged
 *          early, and others wait for it;
 *   WAIT   a read, a compare-and-write or a FUA write: never acknowledged
 *          early, but waits for the tracked requests it overlaps (so
 *          read-after-write stays exact);
 *   TRACK  the inner write of an encrypted write that was acknowledged
 *          early already (crypt.c, rbdl_wa_early_begin: its bytes are
 *          counted there): tracked in flight like a WRITE, so others wait
 *          for it, but never acknowledged nor counted again;
 *   NONE   nothing to do (write-around off, or write-through until the
 *          first flush: then every request is NONE, and tracking costs one
 *          relaxed load at submission).
 *
 * The life of a tracked request (rbdl_wa_begin in request.c's req_send,
 * rbdl_wa_end when its last object finished):
 *
 *               overlaps a tracked request        no overlap (WRITE)
 *   begin ---------------------------------> BLOCKED  ------+
 *     |  \                                     | released   |
 *     |   +-- no overlap (WAIT): GO, untracked |  when no   v
 *     |                                        |  overlap  IN FLIGHT
 *     +--------- no overlap (WRITE) -----------+----------> (early ack
 *                                                            if within
 *                                                            max_dirty)
 *   IN FLIGHT --(all objects done)--> end: untracked; an early-acked
 *                 error is kept for the next flush; blocked requests
 *                 that no longer overlap anything are released (in order)
 *
 * Overlap is by object extent, per object, as in librbd.  A request that
 * overlaps a blocked one waits behind it, so overlapping requests are
 * started in submission order.  Flushes need nothing from here: an
 * early-acknowledged request keeps its flush count (flush.h), its hold on
 * the exclusive lock and its reference on the image's delivery (close
 * waits for it) until its objects finished; its error is kept by the
 * generation of the flush barrier it counts in (rbdl_flush_op_error), and
 * the application's flush that waits for that generation reports it, so
 * every flush after a failed write acknowledged early reports an error
 * (flush.c).  Callbacks: a flush's comes after those of the writes
 * acknowledged before it, also when the callback lane is still
 * delivering them (rbdl_wa_flushes_complete).
 *
 * Threading: rbdl_wa_begin runs on the submitter (or the thread that
 * resumed the request), rbdl_wa_end on the thread that finished it; both
 * take img->wa.mu.  A released request is started by rbdl_wa_end's
 * caller's thread, after mu is dropped; when that thread is inside a
 * submit call (a request that finished there, an object-map skip or an
 * error), the released request's callbacks go through the deferred
 * paths, so no callback of another request runs inside that call.
 */

/*
 * How it is kept: tracked requests live in two places, both under
 * img->wa.mu: the object extents of requests in flight, in an AVL tree
 * (core/avl.h) by (object number, offset) -- they are disjoint, so an
 * extent overlaps one in flight exactly when it overlaps the last one
 * starting before its end, an O(log n) search -- and the FIFO of blocked
 * requests (no longer than the requests the application has outstanding:
 * a blocked request is not acknowledged).  wa.tracked counts the requests
 * in either; a WAIT request that finds it 0 (acquire) goes without the
 * lock: every WRITE that was acknowledged before it was submitted
 * incremented it under mu before its acknowledgement was delivered.
 *
 * Requests are owned by request.c; this file only links them.
 */
#include "config.h"

#include "flush.h"
#include "request.h"

#include "core/ctl.h"
#include "core/internal.h"

#include <errno.h>

#include "rbd/librbd.h"

#define WAL(n) container_of(n, struct rbdl_objreq, wal)

/* Does object request o overlap an object extent in flight?  The last
 * extent starting before o's end is the only candidate. */
static bool obj_in_flight(const struct rbdl_wa *wa,
			  const struct rbdl_objreq *o)
{
	const struct rbdl_avl_node *n = wa->flight.root, *best = NULL;
	uint64_t end = o->obj_off + o->len;

	while (n) {
		const struct rbdl_objreq *f = WAL(n);

		if (f->objno < o->objno ||
		    (f->objno == o->objno && f->obj_off < end)) {
			best = n;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	if (!best)
		return false;
	const struct rbdl_objreq *f = WAL(best);

	return f->objno == o->objno && f->obj_off + f->len > o->obj_off;
}

/* Put o's extent in flight (it overlaps none there). */
static void flight_insert(struct rbdl_wa *wa, struct rbdl_objreq *o)
{
	struct rbdl_avl_node **link = &wa->flight.root, *parent = NULL;

	while (*link) {
		const struct rbdl_objreq *f = WAL(*link);

		parent = *link;
		link = o->objno < f->objno ||
				       (o->objno == f->objno &&
					o->obj_off < f->obj_off)
			       ? &parent->left
			       : &parent->right;
	}
	rbdl_avl_insert(&wa->flight, &o->wal, parent, link);
}

/* Do two requests touch a common byte of the image? */
static bool reqs_overlap(const struct rbdl_req *a, const struct rbdl_req *b)
{
	return a->off < b->off + b->len && b->off < a->off + a->len;
}

/* Must req wait: does it overlap a request in flight, or a blocked one
 * before `before` (NULL: any blocked request)? */
static bool must_wait(struct rbdl_wa *wa, const struct rbdl_req *req,
		      const struct rbdl_req *before)
{
	for (const struct rbdl_req *b = wa->blocked; b && b != before;
	     b = b->wa_next)
		if (reqs_overlap(b, req))
			return true;
	for (uint32_t i = 0; i < req->nobjs; i++)
		if (obj_in_flight(wa, &req->objs[i]))
			return true;
	return false;
}

/* May len more bytes be acknowledged early: within max_dirty, or nothing
 * else early in flight (librbd's can_dispatch_io)?  If so they are
 * counted.  Under wa->mu. */
static bool dirty_admit(struct rbdl_wa *wa, uint64_t len)
{
	uint64_t max = atomic_load_explicit(&wa->max_dirty,
					    memory_order_relaxed);
	/* (bytes <= max in the second test, so max - bytes cannot wrap;
	 * bytes + len could, for lengths near 2^64.) */
	bool ok = wa->bytes == 0 || (wa->bytes <= max && len <= max - wa->bytes);

	if (ok)
		wa->bytes += len;
	return ok;
}

/* Put a WRITE or TRACK in flight (its object extents in the tree) and
 * decide a WRITE's early acknowledgement (dirty_admit). */
static void go_in_flight(struct rbdl_wa *wa, struct rbdl_req *req)
{
	for (uint32_t i = 0; i < req->nobjs; i++)
		flight_insert(wa, &req->objs[i]);
	req->wa_tracked = true;
	req->wa_early = req->wa_kind == RBDL_WA_WRITE &&
			dirty_admit(wa, req->len);
}

int rbdl_wa_begin(struct rbdl_req *req, bool in_submit)
{
	struct rbdl_wa *wa = &req->img->wa;
	bool write = req->wa_kind != RBDL_WA_WAIT;	/* WRITE, TRACK */

	req->wa_early = false;
	req->wa_tracked = false;
	/* Acquire: pairs with the increment under mu (see the top). */
	if (!write && !atomic_load_explicit(&wa->tracked, memory_order_acquire))
		return RBDL_WA_GO;
	pthread_mutex_lock(&wa->mu);
	if (must_wait(wa, req, NULL)) {
		/* Its objects start later, on another thread. */
		for (uint32_t i = 0; in_submit && i < req->nobjs; i++) {
			int r = rbdl_obj_keep_data(&req->objs[i]);

			if (r < 0) {
				pthread_mutex_unlock(&wa->mu);
				return r;
			}
		}
		req->wa_next = NULL;
		if (wa->blocked_tail)
			wa->blocked_tail->wa_next = req;
		else
			wa->blocked = req;
		wa->blocked_tail = req;
		atomic_fetch_add_explicit(&wa->tracked, 1, memory_order_relaxed);
		pthread_mutex_unlock(&wa->mu);
		return RBDL_WA_PARKED;
	}
	if (write) {
		go_in_flight(wa, req);
		atomic_fetch_add_explicit(&wa->tracked, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&wa->mu);
	return RBDL_WA_GO;
}

void rbdl_wa_end(struct rbdl_req *req, ssize_t rval, bool in_submit)
{
	struct rbdl_wa *wa = &req->img->wa;
	struct rbdl_req *go = NULL, **go_tail = &go, *prev = NULL;

	pthread_mutex_lock(&wa->mu);
	for (uint32_t i = 0; i < req->nobjs; i++)
		rbdl_avl_erase(&wa->flight, &req->objs[i].wal);
	if (req->wa_early)
		wa->bytes -= req->len;
	if (req->wa_acked && rval < 0)
		rbdl_flush_op_error(req->img, req->gen_parity, rval);
	atomic_fetch_sub_explicit(&wa->tracked, 1, memory_order_relaxed);
	/* Only a blocked request that overlaps req can have waited for it:
	 * with none, nothing changed for any of them. */
	struct rbdl_req *b = wa->blocked;

	while (b && !reqs_overlap(b, req))
		b = b->wa_next;
	if (b)
		b = wa->blocked;
	/* Release, in order, what overlaps nothing in flight any more nor
	 * a request still blocked before it. */
	for (struct rbdl_req *next; b; b = next) {
		next = b->wa_next;
		if (must_wait(wa, b, b)) {
			prev = b;
			continue;
		}
		if (prev)
			prev->wa_next = next;
		else
			wa->blocked = next;
		if (wa->blocked_tail == b)
			wa->blocked_tail = prev;
		if (b->wa_kind != RBDL_WA_WAIT)
			go_in_flight(wa, b);	/* still counted in tracked */
		else
			atomic_fetch_sub_explicit(&wa->tracked, 1,
						  memory_order_relaxed);
		b->wa_next = NULL;
		*go_tail = b;
		go_tail = &b->wa_next;
	}
	pthread_mutex_unlock(&wa->mu);
	while (go) {
		struct rbdl_req *n = go->wa_next;

		rbdl_req_wa_go(go, in_submit);
		go = n;
	}
}

/* Take what is stacked on wa->acks, oldest first (NULL: nothing). */
static struct rbdl_comp *acks_take(struct rbdl_wa *wa)
{
	/* seq_cst (acquire would do for the pushes' release, each
	 * completion's armed state): ordered against ack_busy, see
	 * rbdl_wa_flushes_complete. */
	struct rbdl_comp *c = atomic_exchange(&wa->acks, NULL);
	struct rbdl_comp *fifo = NULL;

	while (c) {	/* the stack is newest first */
		struct rbdl_comp *next = c->dnext;

		c->dnext = fifo;
		fifo = c;
		c = next;
	}
	return fifo;
}

/* Complete a list of acks_take, each with its rval (0 for an
 * acknowledgement, a flush's result): here, or through librados'
 * finisher when defer_io is set (inside a submit call). */
static void acks_complete(struct rbdl_comp *fifo, rados_ioctx_t defer_io)
{
	while (fifo) {
		struct rbdl_comp *next = fifo->dnext;

		if (defer_io)
			rbdl_comp_complete_deferred(fifo, fifo->rval, defer_io);
		else
			rbdl_comp_complete(fifo, fifo->rval);
		fifo = next;
	}
}

/* Push c onto wa->acks (armed, rval set): true if the stack was empty
 * (the pusher kicks the task). */
static bool acks_push(struct rbdl_wa *wa, struct rbdl_comp *c)
{
	/* Release: the task sees the completion as armed (acks_take). */
	struct rbdl_comp *head = atomic_load_explicit(&wa->acks,
						      memory_order_relaxed);

	do
		c->dnext = head;
	while (!atomic_compare_exchange_weak_explicit(
		&wa->acks, &head, c, memory_order_release,
		memory_order_relaxed));
	return !head;
}

/* Kick the task after a push onto an empty stack.  Only the push onto an
 * empty stack kicks: a non-empty one was pushed onto empty by a kicker
 * whose task has not taken it yet (ack_run takes the whole stack, so a
 * later push finds it empty and kicks again).  If no lane thread can
 * run, librados' threads deliver what is stacked (a later run of the
 * task finds less). */
static void acks_kick(struct rbdl_image *img)
{
	if (rbdl_ctl_kick(&img->wa.ack_task) < 0)
		acks_complete(acks_take(&img->wa), img->defer_io);
}

/*
 * Flush order: a flush completes after every acknowledgement made before
 * it.  Those wait on the stack or are being completed by ack_run, which
 * counts itself in ack_busy before it takes the stack (both seq_cst).
 * The flush looks at the stack, then at ack_busy (seq_cst): if the task
 * took the acknowledgements before the flush looked, the flush sees it
 * busy (or done with them: they are in the image's delivery order
 * already); otherwise it sees them on the stack.  Either way it goes on
 * the stack behind them and the lane delivers it after them; only when
 * neither holds anything does it complete here.
 */
void rbdl_wa_flushes_complete(struct rbdl_image *img, struct rbdl_comp *list,
			      bool deferred)
{
	struct rbdl_wa *wa = &img->wa;

	if (atomic_load(&wa->acks) || atomic_load(&wa->ack_busy)) {
		bool kick = false;

		/* Both imply the lane task is set up (rbdl_wa_ack_comp). */
		while (list) {
			struct rbdl_comp *n = list->dnext;

			kick |= acks_push(wa, list);
			list = n;
		}
		if (kick)
			acks_kick(img);
		return;
	}
	acks_complete(list, deferred ? img->defer_io : NULL);
}

/* The callback lane's task: deliver the acknowledgements pushed. */
static void ack_run(struct rbdl_ctl_task *t)
{
	struct rbdl_wa *wa = container_of(t, struct rbdl_wa, ack_task);

	/* seq_cst, before the take: see rbdl_wa_flushes_complete. */
	atomic_fetch_add(&wa->ack_busy, 1);
	acks_complete(acks_take(wa), NULL);
	atomic_fetch_sub(&wa->ack_busy, 1);
}

void rbdl_wa_ack(struct rbdl_req *req, bool in_submit)
{
	rbdl_wa_ack_comp(req->img, req->comp, in_submit);
}

bool rbdl_wa_early_begin(struct rbdl_image *img, uint64_t len, int op_flags)
{
	struct rbdl_wa *wa = &img->wa;
	bool ok;

	if (!rbdl_wa_on(img) || (op_flags & LIBRADOS_OP_FLAG_FADVISE_FUA))
		return false;
	if (!rbdl_lock_write_try(img))
		return false;	/* not owned now: acknowledged when done */
	pthread_mutex_lock(&wa->mu);
	ok = dirty_admit(wa, len);
	pthread_mutex_unlock(&wa->mu);
	if (!ok)
		rbdl_lock_write_end(img);
	return ok;
}

void rbdl_wa_early_end(struct rbdl_image *img, uint64_t len, ssize_t r)
{
	struct rbdl_wa *wa = &img->wa;

	pthread_mutex_lock(&wa->mu);
	wa->bytes -= len;
	pthread_mutex_unlock(&wa->mu);
	if (r < 0)
		rbdl_flush_late_error(img, r);
	rbdl_lock_write_end(img);
}

void rbdl_wa_ack_comp(struct rbdl_image *img, struct rbdl_comp *c,
		      bool in_submit)
{
	struct rbdl_wa *wa = &img->wa;

	if (!in_submit) {
		rbdl_comp_complete(c, 0);
		return;
	}
	/* Acquire: pairs with the release below, for the task's set-up. */
	if (!atomic_load_explicit(&wa->ack_live, memory_order_acquire)) {
		pthread_mutex_lock(&wa->mu);
		if (!atomic_load_explicit(&wa->ack_live, memory_order_relaxed)) {
			rbdl_ctl_task_init(&wa->ack_task, RBDL_CTL_CALLBACK,
					   ack_run);
			atomic_store_explicit(&wa->ack_live, true,
					      memory_order_release);
		}
		pthread_mutex_unlock(&wa->mu);
	}
	c->rval = 0;
	if (acks_push(wa, c))
		acks_kick(img);
}

void rbdl_wa_user_flush(struct rbdl_image *img)
{
	if (!atomic_load_explicit(&img->wa.user_flushed, memory_order_relaxed))
		atomic_store_explicit(&img->wa.user_flushed, true,
				      memory_order_relaxed);
}
