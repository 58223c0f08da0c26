/*
 * sched.c - the simple I/O scheduler (sched.h).
 *
 * Under img->sched.mu: per object with held writes, an entry (from a
 * slab, in bucket objno % RBDL_SCHED_SLOTS, so a slot's entries are one
 * list) with its runs, sorted by offset, disjoint, and touching only
 * where one is solo (a large write alone; two other runs that come to
 * touch are joined).  A run owns a buffer (core/wbuf) holding its data
 * contiguously and the chain of its object requests (through
 * sched_next); the first request of the first run carries the object's
 * op.
 *
 * Threading and ownership: see sched.h.  Object requests are owned by
 * their image request (request.c); a held one is only linked here until
 * its run's op finishes.
 */
#include "config.h"

#include "sched.h"

#include "core/internal.h"
#include "core/slab.h"
#include "core/stats.h"
#include "core/wbuf.h"
#include "request.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

#define HELD RBDL_SCHED_HELD_FLAG
#define READY RBDL_SCHED_READY
#define ENT_RUNS 4	/* runs an entry holds without an array of its own */

/*
 * Writes of this size or more are solo: held without a buffer of ours,
 * as writes of the object's pending op (librados copies their data into
 * it as they are held, the one copy librbd makes too), and never merged.
 * Smaller ones are merged into runs whose buffers become writes of the op
 * when it is sent (one copy more, but of small data, and the OSD gets one
 * write per run instead of one per request).
 */
#define SOLO_MIN (32u << 10)

struct run {
	uint64_t off, len;	/* extent in the object */
	char *buf;		/* wbuf; the data at buf + head (NULL: solo) */
	size_t head, cap;
	struct rbdl_objreq *first, *last;
	bool solo;		/* one write, in the pending op already */
};

struct rbdl_sched_obj {
	struct rbdl_sched_obj *next;
	uint64_t objno;
	rados_ioctx_t io;	/* snapshot context of every run */
	int op_flags;		/* and op flags */
	rados_write_op_t wop;	/* the pending op (solo writes), or NULL */
	uint32_t n, cap;
	struct run *runs;
	struct run inl[ENT_RUNS];
};

static struct rbdl_slab ent_slab =
	RBDL_SLAB_INIT("sched", sizeof(struct rbdl_sched_obj));
static pthread_once_t ent_once = PTHREAD_ONCE_INIT;

static void ent_init_once(void)
{
	rbdl_slab_init(&ent_slab);
}

static _Atomic uint32_t *slot_of(struct rbdl_sched *s, uint64_t objno)
{
	return &s->slot[objno % RBDL_SCHED_SLOTS];
}

static struct rbdl_sched_obj **ent_find(struct rbdl_sched *s, uint64_t objno)
{
	struct rbdl_sched_obj **pp = &s->b[objno % RBDL_SCHED_SLOTS];

	while (*pp && (*pp)->objno != objno)
		pp = &(*pp)->next;
	return pp;
}

static void ent_free(struct rbdl_sched *s, struct rbdl_sched_obj **pp)
{
	struct rbdl_sched_obj *e = *pp;

	*pp = e->next;
	if (e->wop)
		rados_release_write_op(e->wop);
	if (e->runs != e->inl)
		free(e->runs);
	rbdl_slab_free(&ent_slab, e);
	atomic_fetch_sub_explicit(&s->nobjs, 1, memory_order_relaxed);
}

static void group_done(rados_completion_t rc, void *arg);

/*
 * Send every run of the entry at *pp as one op (under mu), unregistered:
 * the pending op with the solo writes in it already, and one write per
 * other run (librados copies each buffer, which is freed here); the runs'
 * requests chained after the first run's; and forget the entry.  A held
 * object's runs always go together, so one op spares the OSD an op per
 * run (librbd sends one op per run).  If the op cannot be sent, its chain
 * goes to *failed, the error in the first request (fail_runs advances
 * each with it, outside mu).
 */
static void send_ent(struct rbdl_sched *s, struct rbdl_sched_obj **pp,
		     struct rbdl_objreq **failed)
{
	struct rbdl_sched_obj *e = *pp;
	struct run *r = e->runs;
	struct rbdl_objreq *h = r->first;
	int flags = e->op_flags & RBDL_FADVISE_MASK;
	int err;

	for (uint32_t i = 1; i < e->n; i++) {
		e->runs[i - 1].last->sched_next = e->runs[i].first;
		e->runs[i].last->sched_next = NULL;	/* (already) */
	}
	h->sched_reg = false;
	h->wop = e->wop;	/* released with h (obj_release_ops) */
	e->wop = NULL;
	rbdl_stat_inc(RBDL_STAT_SCHED_RUNS, 1);
	err = rados_aio_create_completion2(h, group_done, &h->rc);
	if (err == 0) {
		if (e->n == 1 && !flags && !h->wop) {
			err = rados_aio_write(e->io, h->oid, h->rc,
					      r->buf + r->head, r->len, r->off);
		} else {
			if (!h->wop)
				h->wop = rados_create_write_op();
			err = -ENOMEM;
			if (h->wop) {
				for (uint32_t i = 0; i < e->n; i++)
					if (!r[i].solo)
						rados_write_op_write(
							h->wop,
							r[i].buf + r[i].head,
							r[i].len, r[i].off);
				if (flags)
					rados_write_op_set_flags(h->wop,
								 flags);
				err = rados_aio_write_op_operate(
					h->wop, e->io, h->rc, h->oid, NULL, 0);
			}
		}
		if (err < 0)
			rados_aio_release(h->rc);
	}
	for (uint32_t i = 0; i < e->n; i++)
		rbdl_wbuf_free(r[i].buf);
	if (err < 0) {
		h->sched_err = err;
		h->sched_fail = *failed;
		*failed = h;
	}
	ent_free(s, pp);
}

/* Every run of the slot goes (under mu); HELD is cleared. */
static void send_slot(struct rbdl_sched *s, uint64_t objno,
		      struct rbdl_objreq **failed)
{
	struct rbdl_sched_obj **pp = &s->b[objno % RBDL_SCHED_SLOTS];

	while (*pp)
		send_ent(s, pp, failed);
	atomic_fetch_and_explicit(slot_of(s, objno), ~(uint32_t)HELD,
				  memory_order_relaxed);
}

/* The runs of objno's entry go, if it has one (under mu); HELD stays
 * while other objects of the slot hold runs. */
static void send_obj(struct rbdl_sched *s, uint64_t objno,
		     struct rbdl_objreq **failed)
{
	struct rbdl_sched_obj **pp = ent_find(s, objno);

	if (*pp)
		send_ent(s, pp, failed);
	if (!s->b[objno % RBDL_SCHED_SLOTS])
		atomic_fetch_and_explicit(slot_of(s, objno), ~(uint32_t)HELD,
					  memory_order_relaxed);
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
			/* in_submit: the caller may be a submitter, and a
			 * failed request of another caller must not complete
			 * inside its call (deferred: request.c). */
			rbdl_obj_advance(o, err, true);
		}
		f = nf;
	}
}

static void group_done(rados_completion_t rc, void *arg)
{
	struct rbdl_objreq *h = arg;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	for (struct rbdl_objreq *o = h, *n; o; o = n) {
		n = o->sched_next;
		o->sched_next = NULL;
		rbdl_obj_advance(o, r, false);
	}
}

/* ---- runs ----------------------------------------------------------------- */

/* Copy o's data (its segments, contiguous in the object) to p. */
static void copy_data(const struct rbdl_objreq *o, char *p)
{
	const struct rbdl_req *req = o->req;

	for (uint32_t i = 0; i < o->nsegs; i++) {
		const struct rbdl_seg *sg = &req->segs[o->first_seg + i];

		memcpy(p, sg->ptr, sg->len);
		p += sg->len;
	}
}

/* A buffer for at least need bytes: a wbuf size class, or at least
 * twice the old capacity above them (appends stay linear). */
static size_t buf_cap(size_t need, size_t old)
{
	if (need <= RBDL_WBUF_SMALL)
		return RBDL_WBUF_SMALL;
	if (need <= RBDL_WBUF_LARGE)
		return RBDL_WBUF_LARGE;
	return need > 2 * old ? need : 2 * old;
}

/*
 * Make room in r for len more bytes in front (front) or at the back.  A
 * new buffer puts the data at its back for a front merge, at its front
 * otherwise.  0 or -ENOMEM (r unchanged).
 */
static int run_room(struct run *r, size_t len, bool front)
{
	size_t need = r->len + len, cap, head;
	char *p;

	if (front ? r->head >= len : r->head + r->len + len <= r->cap)
		return 0;
	cap = buf_cap(need, r->cap);
	p = rbdl_wbuf_alloc(cap);
	if (!p)
		return -ENOMEM;
	head = front ? cap - r->len : 0;
	if (r->len)
		memcpy(p + head, r->buf + r->head, r->len);
	rbdl_wbuf_free(r->buf);
	r->buf = p;
	r->cap = cap;
	r->head = head;
	return 0;
}

/* Append b (which starts where a ends) to a; b's buffer is freed. */
static int run_join(struct run *a, struct run *b)
{
	if (run_room(a, b->len, false) < 0)
		return -ENOMEM;
	memcpy(a->buf + a->head + a->len, b->buf + b->head, b->len);
	a->len += b->len;
	a->last->sched_next = b->first;
	a->last = b->last;
	rbdl_wbuf_free(b->buf);
	return 0;
}

/* Remove run i of e (its buffer already gone). */
static void runs_remove(struct rbdl_sched_obj *e, uint32_t i)
{
	memmove(&e->runs[i], &e->runs[i + 1], (e->n - i - 1) * sizeof(*e->runs));
	e->n--;
}

/* Insert an empty run at index i of e.  NULL when out of memory. */
static struct run *runs_insert(struct rbdl_sched_obj *e, uint32_t i)
{
	if (e->n == e->cap) {
		uint32_t cap = 2 * e->cap;
		struct run *a = malloc(cap * sizeof(*a));

		if (!a)
			return NULL;
		memcpy(a, e->runs, e->n * sizeof(*a));
		if (e->runs != e->inl)
			free(e->runs);
		e->runs = a;
		e->cap = cap;
	}
	memmove(&e->runs[i + 1], &e->runs[i], (e->n - i) * sizeof(*e->runs));
	e->n++;
	memset(&e->runs[i], 0, sizeof(e->runs[i]));
	return &e->runs[i];
}

/* The index of the first run of e that starts after off. */
static uint32_t runs_after(const struct rbdl_sched_obj *e, uint64_t off)
{
	uint32_t lo = 0, hi = e->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (e->runs[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Does [off, off + len) overlap a run of e? */
static bool runs_overlap(const struct rbdl_sched_obj *e, uint64_t off,
			 uint64_t len)
{
	uint32_t i = runs_after(e, off);

	return (i > 0 && e->runs[i - 1].off + e->runs[i - 1].len > off) ||
	       (i < e->n && e->runs[i].off < off + len);
}

/*
 * Hold o in e (under mu): merge it into the run it touches (back or
 * front; a run it bridges to the next is joined), or a run of its own;
 * its data is copied into the run.  A write of SOLO_MIN or more is a solo
 * run: its data goes into the entry's pending op as a write, and solo
 * runs take no other.  0, or -ENOMEM with nothing changed but a buffer's
 * size.
 */
static int hold(struct rbdl_sched_obj *e, struct rbdl_objreq *o)
{
	uint32_t i = runs_after(e, o->obj_off);
	bool solo = o->len >= SOLO_MIN;
	struct run *prev = i > 0 && !solo && !e->runs[i - 1].solo
				   ? &e->runs[i - 1]
				   : NULL;
	struct run *next = i < e->n && !solo && !e->runs[i].solo
				   ? &e->runs[i]
				   : NULL;
	uint64_t end = o->obj_off + o->len;

	o->sched_next = NULL;
	if (prev && prev->off + prev->len == o->obj_off) {
		if (run_room(prev, o->len, false) < 0)
			return -ENOMEM;
		copy_data(o, prev->buf + prev->head + prev->len);
		prev->len += o->len;
		prev->last->sched_next = o;
		prev->last = o;
		if (next && next->off == end && run_join(prev, next) == 0)
			runs_remove(e, i);
		return 0;
	}
	if (next && next->off == end) {
		if (run_room(next, o->len, true) < 0)
			return -ENOMEM;
		next->head -= o->len;
		copy_data(o, next->buf + next->head);
		next->off = o->obj_off;
		next->len += o->len;
		o->sched_next = next->first;
		next->first = o;
		return 0;
	}
	if (solo && !e->wop && !(e->wop = rados_create_write_op()))
		return -ENOMEM;
	struct run *r = runs_insert(e, i);

	if (!r)
		return -ENOMEM;
	if (solo) {
		/* librados copies the data into the op now. */
		for (uint32_t k = 0; k < o->nsegs; k++) {
			const struct rbdl_seg *sg =
				&o->req->segs[o->first_seg + k];

			rados_write_op_write(e->wop, sg->ptr, sg->len,
					     sg->obj_off);
		}
	} else if (run_room(r, o->len, false) < 0) {
		runs_remove(e, i);
		return -ENOMEM;
	} else {
		copy_data(o, r->buf);
	}
	r->off = o->obj_off;
	r->len = o->len;
	r->first = r->last = o;
	r->solo = solo;
	return 0;
}

/* The entry of o's object, made if needed, if o may join its runs (same
 * snapshot context and flags, no overlap); NULL otherwise. */
static struct rbdl_sched_obj *ent_for(struct rbdl_sched *s,
				      const struct rbdl_objreq *o)
{
	const struct rbdl_req *req = o->req;
	struct rbdl_sched_obj **pp = ent_find(s, o->objno), *e = *pp;

	if (e)
		return e->io == req->io && e->op_flags == req->op_flags &&
				       !runs_overlap(e, o->obj_off, o->len)
			       ? e
			       : NULL;
	pthread_once(&ent_once, ent_init_once);
	e = rbdl_slab_alloc(&ent_slab);
	if (!e)
		return NULL;
	e->next = NULL;
	e->objno = o->objno;
	e->io = req->io;
	e->op_flags = req->op_flags;
	e->wop = NULL;
	e->n = 0;
	e->cap = ENT_RUNS;
	e->runs = e->inl;
	*pp = e;
	atomic_fetch_add_explicit(&s->nobjs, 1, memory_order_relaxed);
	return e;
}

/* ---- entry points ----------------------------------------------------------- */

/* Send o registered (its count is in the slot already), under mu.  On
 * failure the count is dropped again, and the slot's runs, if any, go
 * (those that cannot are chained to *failed): 0 or a negative errno. */
static int send_registered(struct rbdl_sched *s, struct rbdl_objreq *o,
			   struct rbdl_objreq **failed)
{
	int r;

	o->sched_reg = true;	/* before the op can finish */
	r = rbdl_obj_send_op(o);
	if (r < 0) {
		o->sched_reg = false;
		if (atomic_fetch_sub_explicit(slot_of(s, o->objno), 1,
					      memory_order_relaxed) ==
		    (HELD | 1))
			send_slot(s, o->objno, failed);
	}
	return r;
}

int rbdl_sched_write_busy(struct rbdl_objreq *o)
{
	struct rbdl_req *req = o->req;
	struct rbdl_sched *s = &req->img->sched;
	_Atomic uint32_t *slot = slot_of(s, o->objno);
	struct rbdl_objreq *failed = NULL;
	struct rbdl_sched_obj **pp, *e;
	uint32_t v;
	int r;

	pthread_mutex_lock(&s->mu);
	v = atomic_load_explicit(slot, memory_order_relaxed);
	if (req->op == RBDL_OP_WRITE && o->kind == RBDL_KIND_PLAIN && !o->cu &&
	    o->len &&
	    (v & ~(uint32_t)HELD) > 1 &&
	    atomic_load_explicit(&s->ready, memory_order_relaxed) >= READY &&
	    (e = ent_for(s, o)) != NULL) {
		if (hold(e, o) == 0) {
			rbdl_stat_inc(RBDL_STAT_SCHED_HELD, 1);
			atomic_fetch_or_explicit(slot, HELD,
						 memory_order_relaxed);
			/* Its own count goes: the registered op in flight
			 * sends the run, or, if none is left, this does. */
			v = atomic_fetch_sub_explicit(slot, 1,
						      memory_order_relaxed);
			if ((v & ~(uint32_t)HELD) == 1)
				send_slot(s, o->objno, &failed);
			pthread_mutex_unlock(&s->mu);
			fail_runs(failed);
			return RBDL_SCHED_HELD;
		}
		pp = ent_find(s, o->objno);
		if (!(*pp)->n)
			ent_free(s, pp);	/* made for o */
	}
	/* Not held: the object's runs go first, then o, registered (under
	 * mu: no later op to the object overtakes them). */
	send_obj(s, o->objno, &failed);
	r = send_registered(s, o, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
	return r < 0 ? r : RBDL_SCHED_SENT;
}

void rbdl_sched_send_held(struct rbdl_objreq *o)
{
	struct rbdl_sched *s = &o->req->img->sched;
	struct rbdl_objreq *failed = NULL;

	pthread_mutex_lock(&s->mu);
	send_slot(s, o->objno, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
}

void rbdl_sched_barrier(struct rbdl_objreq *o)
{
	struct rbdl_sched *s = &o->req->img->sched;
	struct rbdl_objreq *failed = NULL;

	/* Relaxed: a run made by another thread concurrently holds a write
	 * this op is not ordered after anyway. */
	if (!(atomic_load_explicit(slot_of(s, o->objno),
				   memory_order_relaxed) & HELD))
		return;
	pthread_mutex_lock(&s->mu);
	send_obj(s, o->objno, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
}

void rbdl_sched_read_held(struct rbdl_objreq *o)
{
	struct rbdl_sched *s = &o->req->img->sched;
	struct rbdl_objreq *failed = NULL;
	struct rbdl_sched_obj *e;

	pthread_mutex_lock(&s->mu);
	e = *ent_find(s, o->objno);
	if (e && runs_overlap(e, o->obj_off, o->len))
		send_obj(s, o->objno, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
}

void rbdl_sched_flush(struct rbdl_image *img)
{
	struct rbdl_sched *s = &img->sched;
	struct rbdl_objreq *failed = NULL;

	if (!atomic_load_explicit(&s->nobjs, memory_order_relaxed))
		return;
	pthread_mutex_lock(&s->mu);
	for (uint64_t i = 0; i < RBDL_SCHED_SLOTS; i++)
		if (s->b[i])
			send_slot(s, i, &failed);
	pthread_mutex_unlock(&s->mu);
	fail_runs(failed);
}
