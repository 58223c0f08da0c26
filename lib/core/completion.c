/*
 * completion.c - rbd_completion_t objects and per-image batched delivery.
 *
 * See completion.h for the model.  Every atomic below carries the name of
 * the operation it pairs with.
 */
#include "config.h"

#include "completion.h"
#include "internal.h"
#include "slab.h"
#include "stats.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* librbd's enum values (EVENT_TYPE_PIPE / EVENT_TYPE_EVENTFD). */
#define RBDL_EVENT_PIPE 1
#define RBDL_EVENT_EVENTFD 2

static struct rbdl_slab comp_slab =
	RBDL_SLAB_INIT_KEEP("completion", sizeof(struct rbdl_comp));
static pthread_once_t comp_once = PTHREAD_ONCE_INIT;

static void comp_init_once(void)
{
	rbdl_slab_init(&comp_slab);
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL,
		NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
}

int rbdl_comp_create(void *arg, rbdl_callback_t cb, struct rbdl_comp **out)
{
	pthread_once(&comp_once, comp_init_once);
	struct rbdl_comp *c = rbdl_slab_alloc(&comp_slab);

	if (!c)
		return -ENOMEM;
	/* See rbdl_comp_handle(): the address must leave the generation's
	 * bits free. */
	if ((uintptr_t)c & ~RBDL_COMP_ADDR_MASK) {
		rbdl_err("completion memory at %p is above 2^48", (void *)c);
		rbdl_slab_free(&comp_slab, c);
		return -ENOMEM;
	}
	/* A new generation for this memory (15 bits: the handle stays a
	 * positive address-sized value).  The old value is whatever the
	 * last user left, or the fresh memory's content: either will do. */
	c->gen = (uint16_t)((c->gen + 1) & RBDL_COMP_GEN_MASK);
	c->magic = RBDL_COMP_MAGIC;
	atomic_init(&c->refs, 1);
	atomic_init(&c->waiters, 0);
	atomic_init(&c->released, false);
	c->notify = false;
	c->internal = false;
	c->rval = 0;
	c->track_data = false;
	c->data_end = 0;
	c->cb = cb;
	c->arg = arg;
	c->dl = NULL;
	c->dnext = c->pnext = NULL;
	/* Relaxed is enough: the handle reaches other threads only through
	 * a later submission, which publishes it with release semantics. */
	atomic_store_explicit(&c->state, RBDL_COMP_IDLE, memory_order_relaxed);
	*out = c;
	return 0;
}

struct rbdl_comp *rbdl_comp_from_user(void *p)
{
	uintptr_t h = (uintptr_t)p;
	struct rbdl_comp *c = rbdl_comp_untag(p);

	if (!c || c->magic != RBDL_COMP_MAGIC || c->gen != RBDL_COMP_GEN_OF(h) ||
	    atomic_load_explicit(&c->state, memory_order_relaxed) ==
		    RBDL_COMP_FREE)
		return NULL;
	return c;
}

static void comp_put(struct rbdl_comp *c)
{
	/* acq_rel: the last dropper must see every other holder's writes
	 * before the object is recycled. */
	if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	atomic_store_explicit(&c->state, RBDL_COMP_FREE, memory_order_relaxed);
	rbdl_slab_free(&comp_slab, c);
}

int rbdl_comp_arm(struct rbdl_comp *c, struct rbdl_delivery *d, bool notify)
{
	uint32_t idle = RBDL_COMP_IDLE;

	/* Only one operation per completion, even with racing submitters. */
	if (!atomic_compare_exchange_strong_explicit(&c->state, &idle,
						     RBDL_COMP_PENDING,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return -EINVAL;
	atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
	c->dl = d;
	c->notify = notify;
	atomic_fetch_add_explicit(&d->ops, 1, memory_order_relaxed);
	return 0;
}

void rbdl_comp_disarm(struct rbdl_comp *c)
{
	struct rbdl_delivery *d = c->dl;

	/* Nobody else has seen c since it was armed: relaxed, as arm. */
	c->dl = NULL;
	atomic_fetch_sub_explicit(&c->refs, 1, memory_order_relaxed);
	atomic_store_explicit(&c->state, RBDL_COMP_IDLE, memory_order_relaxed);
	rbdl_delivery_put(d);
}

/*
 * One fewer operation (or deliverer) on the image.  The decrement is the
 * last access to the image's memory: closing is read before it, and the
 * wake-up is a syscall on the address, harmless even if rbd_close has
 * already freed the image.  If closing is set between our load and the
 * decrement, rbd_close notices zero on its next timed re-check.
 */
void rbdl_delivery_put(struct rbdl_delivery *d)
{
	bool closing = atomic_load(&d->closing);

	if (atomic_fetch_sub(&d->ops, 1) == 1 && closing)
		syscall(SYS_futex, (uint32_t *)&d->ops, FUTEX_WAKE_PRIVATE,
			INT_MAX, NULL, NULL, 0);
}

static void post_events(struct rbdl_delivery *d, unsigned n)
{
	if (d->event_type == RBDL_EVENT_EVENTFD) {
		uint64_t v = n;
		ssize_t w = write(d->event_fd, &v, sizeof(v));

		(void)w;	/* errors are ignored, as librbd does */
	} else {
		char buf[256];

		memset(buf, 'i', sizeof(buf));
		while (n) {
			unsigned k = n < sizeof(buf) ? n : sizeof(buf);
			ssize_t w = write(d->event_fd, buf, k);

			if (w <= 0)
				break;
			n -= (unsigned)w;
		}
	}
	rbdl_stat_inc(RBDL_STAT_EVENTFD_WRITES, 1);
}

/*
 * Deliver one batch (FIFO list linked through dnext).  Runs on the single
 * thread that owns d->running, with no librbdlite lock held while user
 * callbacks run.
 */
static void deliver_batch(struct rbdl_delivery *d, struct rbdl_comp *head)
{
	struct rbdl_comp *ph = NULL, *pt = NULL, *c;
	unsigned nev = 0, ncb = 0;
	bool have_fd = atomic_load_explicit(&d->event_set,
					    memory_order_acquire);

	for (c = head; c; c = c->dnext) {
		/* Release: rbd_aio_is_complete() (acquire) then sees rval. */
		atomic_store_explicit(&c->state, RBDL_COMP_CALLBACK,
				      memory_order_release);
		if (c->cb) {
			c->cb(rbdl_comp_handle(c), c->arg);
			ncb++;
		}
		if (c->notify && have_fd) {
			atomic_fetch_add_explicit(&c->refs, 1,
						  memory_order_relaxed);
			c->pnext = NULL;
			if (pt)
				pt->pnext = c;
			else
				ph = c;
			pt = c;
			nev++;
		}
	}
	if (nev) {
		pthread_mutex_lock(&d->poll_lock);
		if (d->poll_tail)
			d->poll_tail->pnext = ph;
		else
			d->poll_head = ph;
		d->poll_tail = pt;
		pthread_mutex_unlock(&d->poll_lock);
		post_events(d, nev);
	}
	rbdl_stat_inc(RBDL_STAT_CALLBACK_BATCHES, 1);
	rbdl_stat_inc(RBDL_STAT_CALLBACKS_RUN, ncb);
	for (c = head; c;) {
		struct rbdl_comp *next = c->dnext;

		/* seq_cst store, then seq_cst load of waiters: pairs with the
		 * waiter's increment-then-load in rbdl_comp_wait(). */
		atomic_store(&c->state, RBDL_COMP_COMPLETE);
		if (atomic_load(&c->waiters))
			futex_wake_all(&c->state);
		comp_put(c);
		rbdl_delivery_put(d);
		rbdl_stat_inc(RBDL_STAT_IOS_COMPLETED, 1);
		c = next;
	}
}

void rbdl_comp_complete(struct rbdl_comp *c, ssize_t rval)
{
	struct rbdl_delivery *d = c->dl;
	struct rbdl_comp *old;

	c->rval = rval;
	/* Count ourselves as an operation while we may touch the image: the
	 * operation being completed still holds its count, so the image is
	 * alive here. */
	atomic_fetch_add_explicit(&d->ops, 1, memory_order_relaxed);
	/* Push onto the done stack.  Release: the deliverer's acquire
	 * exchange sees rval and everything the request wrote (read data). */
	old = atomic_load_explicit(&d->done, memory_order_relaxed);
	do {
		c->dnext = old;
	} while (!atomic_compare_exchange_weak_explicit(
		&d->done, &old, c, memory_order_seq_cst, memory_order_relaxed));

	for (;;) {
		/* Become the deliverer, or leave the work to the current one.
		 * seq_cst: pairs with the deliverer's store of 0 followed by
		 * its re-check of done below (no lost completion). */
		if (atomic_exchange(&d->running, 1))
			break;
		for (;;) {
			struct rbdl_comp *list =
				atomic_exchange(&d->done, NULL), *fifo = NULL;

			if (!list)
				break;
			while (list) {	/* LIFO -> FIFO */
				struct rbdl_comp *n = list->dnext;

				list->dnext = fifo;
				fifo = list;
				list = n;
			}
			deliver_batch(d, fifo);
		}
		atomic_store(&d->running, 0);
		if (!atomic_load(&d->done))
			break;
	}
	rbdl_delivery_put(d);
}

void rbdl_comp_release(struct rbdl_comp *c)
{
	if (atomic_exchange_explicit(&c->released, true,
				     memory_order_relaxed)) {
		rbdl_err("rbd_aio_release: completion %p released twice; "
			 "ignoring the second release", (void *)c);
		return;
	}
	comp_put(c);
}

int rbdl_comp_wait(struct rbdl_comp *c)
{
	for (;;) {
		uint32_t s = atomic_load(&c->state);

		if (s == RBDL_COMP_COMPLETE || s == RBDL_COMP_IDLE)
			return 0;
		atomic_fetch_add(&c->waiters, 1);
		s = atomic_load(&c->state);
		if (s != RBDL_COMP_COMPLETE && s != RBDL_COMP_IDLE)
			futex_wait(&c->state, s);
		atomic_fetch_sub(&c->waiters, 1);
	}
}

int rbdl_delivery_init(struct rbdl_delivery *d)
{
	atomic_init(&d->done, NULL);
	atomic_init(&d->running, 0);
	atomic_init(&d->event_set, false);
	atomic_init(&d->ops, 0);
	atomic_init(&d->closing, false);
	d->poll_head = d->poll_tail = NULL;
	d->event_fd = -1;
	d->event_type = 0;
	if (pthread_mutex_init(&d->poll_lock, NULL))
		return -ENOMEM;
	return 0;
}

void rbdl_delivery_destroy(struct rbdl_delivery *d)
{
	/* Completions still queued for polling lose their poll reference:
	 * the application never reaped them (librbd leaks them). */
	struct rbdl_comp *c = d->poll_head;

	while (c) {
		struct rbdl_comp *n = c->pnext;

		comp_put(c);
		c = n;
	}
	d->poll_head = d->poll_tail = NULL;
	pthread_mutex_destroy(&d->poll_lock);
}

int rbdl_delivery_set_notification(struct rbdl_delivery *d, int fd, int type)
{
	if (type != RBDL_EVENT_PIPE && type != RBDL_EVENT_EVENTFD)
		return -EINVAL;
	pthread_mutex_lock(&d->poll_lock);
	if (atomic_load_explicit(&d->event_set, memory_order_relaxed)) {
		pthread_mutex_unlock(&d->poll_lock);
		return -EINVAL;
	}
	d->event_fd = fd;
	d->event_type = type;
	/* Release: a submitter that sees event_set also sees fd and type. */
	atomic_store_explicit(&d->event_set, true, memory_order_release);
	pthread_mutex_unlock(&d->poll_lock);
	return 0;
}

int rbdl_delivery_poll(struct rbdl_delivery *d, void **out, int max)
{
	struct rbdl_comp *c;
	int n = 0;

	if (max <= 0)
		return -EINVAL;
	pthread_mutex_lock(&d->poll_lock);
	while (n < max && (c = d->poll_head)) {
		d->poll_head = c->pnext;
		if (!d->poll_head)
			d->poll_tail = NULL;
		out[n++] = c;
	}
	pthread_mutex_unlock(&d->poll_lock);
	/* The poll reference passes to nobody: the caller owns the user
	 * reference and releases it with rbd_aio_release().  The handle is
	 * taken while the poll reference still holds the object. */
	for (int i = 0; i < n; i++) {
		c = out[i];
		out[i] = rbdl_comp_handle(c);
		comp_put(c);
	}
	return n;
}

void rbdl_delivery_wait_idle(struct rbdl_delivery *d)
{
	/* seq_cst: pairs with rbdl_delivery_put()'s load-then-decrement. */
	atomic_store(&d->closing, true);
	for (;;) {
		uint32_t v = atomic_load(&d->ops);
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		if (!v)
			return;
		syscall(SYS_futex, (uint32_t *)&d->ops, FUTEX_WAIT_PRIVATE, v,
			&ts, NULL, 0);
	}
}

/* ---- deferred completion ------------------------------------------------ */

static void defer_done(rados_completion_t rc, void *arg)
{
	struct rbdl_comp *c = arg;

	rados_aio_release(rc);
	rbdl_comp_complete(c, c->rval);
}

void rbdl_comp_complete_deferred(struct rbdl_comp *c, ssize_t rval,
				 rados_ioctx_t defer_io)
{
	rados_completion_t rc;

	c->rval = rval;
	if (rados_aio_create_completion2(c, defer_done, &rc) == 0) {
		if (rados_aio_flush_async(defer_io, rc) == 0)
			return;
		rados_aio_release(rc);
	}
	/* Out of memory in librados: completing inline is the lesser evil. */
	rbdl_err("cannot defer a completion; completing inline");
	rbdl_comp_complete(c, rval);
}
