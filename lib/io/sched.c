/*
 * sched.c - the simple I/O scheduler (sched.h).
 *
 * Entries (one per object with an op registered in flight) come from a
 * slab and live in img->sched's buckets, under img->sched.mu; so do the
 * held runs, linked through their object requests' sched_next in offset
 * order.  sched.nobjs counts the entries: an op that finds it 0 (relaxed;
 * see rbdl_sched_barrier) has nothing to wait for.
 *
 * A merged op is built on the run's first object request (its rc and
 * wop); when it finishes, every request of the run is advanced with its
 * result, after the entry's bookkeeping.
 *
 * Threading and ownership: see sched.h.  Object requests are owned by
 * their image request (request.c).
 */
#include "config.h"

#include "sched.h"

#include "core/internal.h"
#include "core/slab.h"
#include "request.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "rbd/librbd.h"

struct rbdl_sched_obj {
	struct rbdl_sched_obj *next;
	uint64_t objno;
	unsigned inflight;		/* registered ops */
	struct rbdl_objreq *held;	/* the run, by offset */
	struct rbdl_objreq *held_tail;
	uint64_t off, end;		/* its extent in the object */
};

static struct rbdl_slab ent_slab =
	RBDL_SLAB_INIT("sched", sizeof(struct rbdl_sched_obj));
static pthread_once_t ent_once = PTHREAD_ONCE_INIT;

static void ent_init_once(void)
{
	rbdl_slab_init(&ent_slab);
}

static struct rbdl_sched_obj **slot(struct rbdl_sched *s, uint64_t objno)
{
	struct rbdl_sched_obj **pp = &s->b[objno % RBDL_SCHED_BUCKETS];

	while (*pp && (*pp)->objno != objno)
		pp = &(*pp)->next;
	return pp;
}

static void group_done(rados_completion_t rc, void *arg);

/*
 * Send e's held run as one op (under mu), registered.  A run that cannot
 * be sent is returned through *failed (advance each with the error
 * outside mu).
 */
static void send_run(struct rbdl_sched_obj *e, struct rbdl_objreq **failed)
{
	struct rbdl_objreq *h = e->held;
	struct rbdl_req *req = h->req;
	int flags = req->op_flags & RBDL_FADVISE_MASK;
	int r;

	e->held = e->held_tail = NULL;
	/* Set before the op can finish (its completion reads it). */
	h->sched_reg = true;
	if (!h->sched_next) {
		/* A run of one: its own op. */
		r = rbdl_obj_send_op(h);
	} else {
		r = -ENOMEM;
		h->wop = rados_create_write_op();
		if (h->wop &&
		    rados_aio_create_completion2(h, group_done, &h->rc) == 0) {
			for (struct rbdl_objreq *o = h; o; o = o->sched_next)
				for (uint32_t i = 0; i < o->nsegs; i++) {
					struct rbdl_seg *sg =
						&o->req->segs[o->first_seg + i];

					rados_write_op_write(h->wop, sg->ptr,
							     sg->len,
							     sg->obj_off);
				}
			if (flags)
				rados_write_op_set_flags(h->wop, flags);
			r = rados_aio_write_op_operate(h->wop, req->io, h->rc,
						       h->oid, NULL, 0);
			if (r < 0)
				rados_aio_release(h->rc);
		}
	}
	if (r < 0) {
		h->sched_reg = false;
		h->sched_err = r;
		h->sched_fail = *failed;
		*failed = h;
		return;
	}
	e->inflight++;
}

/* Advance the requests of runs that could not be sent (outside mu). */
static void fail_runs(struct rbdl_objreq *f)
{
	while (f) {
		struct rbdl_objreq *nf = f->sched_fail;
		int err = f->sched_err;

		for (struct rbdl_objreq *o = f, *n; o; o = n) {
			n = o->sched_next;
			o->sched_next = NULL;
			rbdl_obj_advance(o, err, false);
		}
		f = nf;
	}
}

/* Drop a registered op's count; send the held run; forget an idle entry.
 * Called with mu held. */
static void op_done_locked(struct rbdl_sched *s, uint64_t objno,
			   struct rbdl_objreq **failed)
{
	struct rbdl_sched_obj **pp = slot(s, objno), *e = *pp;

	if (!e)
		return;
	e->inflight--;
	if (e->held)
		send_run(e, failed);
	if (!e->inflight && !e->held) {
		*pp = e->next;
		atomic_fetch_sub_explicit(&s->nobjs, 1, memory_order_relaxed);
		rbdl_slab_free(&ent_slab, e);
	}
}

static void group_done(rados_completion_t rc, void *arg)
{
	struct rbdl_objreq *h = arg, *failed = NULL;
	struct rbdl_sched *s = &h->req->img->sched;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	pthread_mutex_lock(&s->mu);
	h->sched_reg = false;
	op_done_locked(s, h->objno, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
	for (struct rbdl_objreq *o = h, *n; o; o = n) {
		n = o->sched_next;
		o->sched_next = NULL;
		rbdl_obj_advance(o, r, false);
	}
}

void rbdl_sched_done(struct rbdl_objreq *o)
{
	struct rbdl_sched *s = &o->req->img->sched;
	struct rbdl_objreq *failed = NULL;

	o->sched_reg = false;
	pthread_mutex_lock(&s->mu);
	op_done_locked(s, o->objno, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
}

/* Can o join e's run? */
static bool joins(const struct rbdl_sched_obj *e, const struct rbdl_objreq *o)
{
	const struct rbdl_req *a = e->held->req, *b = o->req;

	return a->io == b->io &&
	       (a->op_flags & RBDL_FADVISE_MASK) ==
		       (b->op_flags & RBDL_FADVISE_MASK) &&
	       (o->obj_off == e->end || o->obj_off + o->len == e->off);
}

int rbdl_sched_write(struct rbdl_objreq *o, bool in_submit)
{
	struct rbdl_req *req = o->req;
	struct rbdl_sched *s = &req->img->sched;
	struct rbdl_sched_obj **pp, *e;
	struct rbdl_objreq *failed = NULL;
	int r;

	if (!atomic_load_explicit(&s->on, memory_order_relaxed))
		return RBDL_SCHED_PASS;
	if (req->op != RBDL_OP_WRITE || o->kind != RBDL_KIND_PLAIN || o->cu ||
	    !o->len) {
		rbdl_sched_barrier(o);
		return RBDL_SCHED_PASS;
	}
	pthread_once(&ent_once, ent_init_once);
	pthread_mutex_lock(&s->mu);
	pp = slot(s, o->objno);
	e = *pp;
	if (!e) {
		/* Nothing in flight: send it now, registered. */
		e = rbdl_slab_alloc(&ent_slab);
		if (!e) {
			pthread_mutex_unlock(&s->mu);
			return RBDL_SCHED_PASS;
		}
		o->sched_reg = true;	/* before the op can finish */
		r = rbdl_obj_send_op(o);
		if (r < 0) {
			o->sched_reg = false;
			pthread_mutex_unlock(&s->mu);
			rbdl_slab_free(&ent_slab, e);
			return r;
		}
		e->next = NULL;
		e->objno = o->objno;
		e->inflight = 1;
		e->held = e->held_tail = NULL;
		*pp = e;
		atomic_fetch_add_explicit(&s->nobjs, 1, memory_order_relaxed);
		pthread_mutex_unlock(&s->mu);
		return RBDL_SCHED_SENT;
	}
	/* Held: sent later, from another thread. */
	r = in_submit ? rbdl_obj_keep_data(o) : 0;
	if (r < 0) {
		pthread_mutex_unlock(&s->mu);
		return r;
	}
	if (e->held && !joins(e, o))
		send_run(e, &failed);	/* the run goes first, in order */
	o->sched_next = NULL;
	if (!e->held) {
		e->held = e->held_tail = o;
		e->off = o->obj_off;
		e->end = o->obj_off + o->len;
	} else if (o->obj_off == e->end) {
		e->held_tail->sched_next = o;
		e->held_tail = o;
		e->end += o->len;
	} else {
		o->sched_next = e->held;
		e->held = o;
		e->off = o->obj_off;
	}
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
	return RBDL_SCHED_HELD;
}

void rbdl_sched_barrier(struct rbdl_objreq *o)
{
	struct rbdl_sched *s = &o->req->img->sched;
	struct rbdl_objreq *failed = NULL;
	struct rbdl_sched_obj *e;

	/* Relaxed: an entry made by another thread concurrently belongs to
	 * an op this one is not ordered after anyway. */
	if (!atomic_load_explicit(&s->nobjs, memory_order_relaxed))
		return;
	pthread_mutex_lock(&s->mu);
	e = *slot(s, o->objno);
	if (e && e->held)
		send_run(e, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
}
