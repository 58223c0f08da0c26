/*
 * flush.c - the flush barrier (flush.h).
 *
 * Threading: see flush.h.  Completions of flushes found drained inside a
 * submit call go through a librados thread (rbdl_comp_complete_deferred),
 * so a callback never runs inside the submitting call.
 */
#include "config.h"

#include "flush.h"

#include <pthread.h>
#include <stdatomic.h>

/* Keep r as parity p's error unless it has one (the first is kept),
 * and as the image's sticky one unless it has one. */
static void error_note(struct rbdl_flushq *fq, unsigned p, long r)
{
	long none = 0;

	/* Relaxed: published by the count's decrement (rbdl_flush_op_error)
	 * or fq->lock (the other callers), see flush_check. */
	atomic_compare_exchange_strong_explicit(&fq->error[p], &none, r,
						memory_order_relaxed,
						memory_order_relaxed);
	none = 0;
	atomic_compare_exchange_strong_explicit(&fq->lost, &none, r,
						memory_order_relaxed,
						memory_order_relaxed);
}

/*
 * The error the flushes of list report, taken from drained parity p under
 * fq->lock (before the generation moves on, so no later request's error
 * is taken for them): the first application flush of list reports it.
 * With none in list, it moves to the other parity, whose flush comes
 * next: a flush never completes with 0 while a write acknowledged early
 * before it failed.
 */
static long error_take(struct rbdl_flushq *fq, unsigned p,
		       const struct rbdl_comp *list)
{
	/* Relaxed: every request of parity p counted out (the load of
	 * count[p] that saw 0 acquired their decrements, each after its
	 * request's error_note), or noted under fq->lock. */
	long r = atomic_exchange_explicit(&fq->error[p], 0,
					  memory_order_relaxed);

	for (; r && list; list = list->dnext)
		if (list->user_flush)
			return r;
	if (r)
		error_note(fq, p ^ 1, r);
	return 0;
}

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
		long err = error_take(fq, p, list);
		/* Once a write acknowledged early failed, every flush after
		 * it covers a write that is lost: none reports success. */
		long lost = atomic_load_explicit(&fq->lost,
						 memory_order_relaxed);

		fq->waiting = NULL;
		if (fq->queued) {
			fq->waiting = fq->queued;
			fq->queued = NULL;
			atomic_fetch_add(&fq->gen, 1);
		} else {
			atomic_store(&fq->active, false);
		}
		pthread_mutex_unlock(&fq->lock);
		/* An application's flush reports what the writes
		 * acknowledged early before it met (writearound.c). */
		for (struct rbdl_comp *c = list; c; c = c->dnext) {
			c->rval = 0;
			if (c->user_flush) {
				c->rval = err ? err : lost;
				err = 0;
			}
		}
		if (list)
			rbdl_wa_flushes_complete(img, list, deferred);
		pthread_mutex_lock(&fq->lock);
	}
	pthread_mutex_unlock(&fq->lock);
}

unsigned rbdl_flush_op_start(struct rbdl_image *img)
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

void rbdl_flush_op_end(struct rbdl_image *img, unsigned parity,
		       bool from_submitter)
{
	struct rbdl_flushq *fq = &img->fq;

	/* seq_cst: pairs with flush_submit's store of active then load of
	 * the count. */
	if (atomic_fetch_sub(&fq->count[parity], 1) == 1 &&
	    atomic_load(&fq->active))
		flush_check(img, from_submitter);
}

void rbdl_flush_op_error(struct rbdl_image *img, unsigned parity, long r)
{
	error_note(&img->fq, parity, r);
}

void rbdl_flush_late_error(struct rbdl_image *img, long r)
{
	struct rbdl_flushq *fq = &img->fq;

	/* Under the lock: the generation cannot move on between its load
	 * and the note, so the next flush submitted drains this parity. */
	pthread_mutex_lock(&fq->lock);
	error_note(fq, (unsigned)(atomic_load(&fq->gen) & 1), r);
	pthread_mutex_unlock(&fq->lock);
}

void rbdl_flush_submit(struct rbdl_image *img, struct rbdl_comp *c)
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
