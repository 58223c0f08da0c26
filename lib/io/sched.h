/*
 * sched.h - librbd 16.2's simple I/O scheduler (io/SimpleSchedulerObject
 * Dispatch.cc), private to the data path: with rbd_io_scheduler=simple
 * (the default), while a write to an object is in flight, later plain
 * writes to that object are held (delayed), those that touch end to end
 * are merged into one run with one contiguous buffer, and the object's
 * runs go to librados as one op (a write per run) when the op in flight
 * finishes.  Each held
 * write keeps its own object request, advanced with its run's result, so
 * every caller's completion carries its own result.
 *
 * What librbd does, and so this does:
 *   - every write-type data op (write, discard, write-same,
 *     compare-and-write) is registered in flight on its object when it is
 *     sent, and unregistered when it finishes;
 *   - a plain write (same snapshot context and op flags as the runs held
 *     for the object, not overlapping any of them) to an object with an
 *     op registered is held: merged front or back into a run it touches
 *     (joining two runs it bridges), or a run of its own;
 *   - any other write-type op to such an object sends the object's runs
 *     first, then goes itself (registered); a read overlapping a run
 *     sends the object's runs first; a flush sends every run;
 *   - the runs go when the registered op finishes (the last one sent,
 *     when a write that could not be held was registered after it), not
 *     registered themselves: the next write to the object goes at once;
 *   - nothing is held until ten registered ops have finished (librbd
 *     waits for ten latency samples).
 * The differences: librbd sends each run as an op of its own; here an
 * object's runs go as one op with a write per run, which spares the OSD
 * the other ops (all or none of the writes applied, as with any op).
 * librbd also sends runs when a timer fires (its delay
 * derives from the latency of the last ten writes); here held writes wait
 * for the op in flight (or a flush, or an overlapping op), never longer.
 *
 * Held data: a small write is copied into its run's buffer (merging needs
 * it contiguous; the run is copied once more into the op when it goes); a
 * large one (sched.c: SOLO_MIN) goes straight into the object's pending
 * op, which librados copies as librbd copies every write: one copy.
 *
 * States of an object (objno % RBDL_SCHED_SLOTS names its slot):
 *
 *            write-type op sent (count + 1)
 *   IDLE ---------------------------------------> BUSY (count > 0)
 *    ^  ^                                          |  |  plain write:
 *    |  |         last registered op done          |  +--> HELD: count > 0,
 *    |  +------------------------------------------+       runs of writes
 *    |                                                     (slot flag)
 *    +--- a registered op done, or a barrier: the runs go, --+
 *         unregistered; BUSY while others are in flight
 *
 * Threading and the slot word: each slot is one atomic word, the count of
 * registered ops of its objects and a HELD flag.  A write-type op adds one
 * (relaxed); if the word was 0 nothing can be held for its object and the
 * op goes at once, without the mutex: the fast path.  Everything else
 * takes img->sched.mu, under which the runs live and HELD is set and
 * cleared.  A write that is held sets HELD, joins a run, then drops its
 * own count; if that leaves the count 0, nothing in flight would send the
 * run, so the writer sends it itself.  A registered op that finishes drops
 * its count, and if that leaves it 0 with HELD set, sends the slot's runs
 * under the mutex.
 * Whichever of the two RMWs comes second in the word's modification order
 * sees the other's effect, so no run is ever stranded (relaxed suffices:
 * the runs themselves are handed over by the mutex).  Objects sharing a
 * slot make each other's runs wait for all their registered ops.
 *
 * Held data is copied into the run's buffer (core/wbuf) on the submitting
 * thread, so the caller's buffer is never read after the call; the run's
 * op is one write of that buffer, which librados copies on submission.
 */
#ifndef RBDL_IO_SCHED_H
#define RBDL_IO_SCHED_H

#include <stdbool.h>

#include "request.h"

enum {
	RBDL_SCHED_SENT = 0,	/* the op went to librados */
	RBDL_SCHED_HELD = 1,	/* held: advanced when its run's op ends */
	RBDL_SCHED_PASS = 2,	/* the scheduler is off: send it yourself */
};

/* An op to o's object that the scheduler does not register (a copy-up
 * alone, or any op while the scheduler is off) is due: the object's runs
 * go first. */
void rbdl_sched_barrier(struct rbdl_objreq *o);

/* The slow half of rbdl_sched_write: o's count is in its slot, which
 * held something already. */
int rbdl_sched_write_busy(struct rbdl_objreq *o);
/* A registered op is done and runs are held in its slot: they go. */
void rbdl_sched_send_held(struct rbdl_objreq *o);

static inline _Atomic uint32_t *rbdl_sched_slot(const struct rbdl_objreq *o)
{
	return &o->req->img->sched.slot[o->objno % RBDL_SCHED_SLOTS];
}

/* o's registered op (o->sched_reg) finished (or was never sent). */
static inline void rbdl_sched_done(struct rbdl_objreq *o)
{
	struct rbdl_sched *s = &o->req->img->sched;

	o->sched_reg = false;
	if (__builtin_expect(atomic_load_explicit(&s->ready,
						  memory_order_relaxed) < RBDL_SCHED_READY,
			     0))
		atomic_fetch_add_explicit(&s->ready, 1, memory_order_relaxed);
	/* Relaxed: see the protocol above.  The runs go with the last
	 * registered op: ops to one object finish in the order they were
	 * sent, so that is librbd's "the latest op sent". */
	if (atomic_fetch_sub_explicit(rbdl_sched_slot(o), 1,
				      memory_order_relaxed) ==
	    (RBDL_SCHED_HELD_FLAG | 1))
		rbdl_sched_send_held(o);
}

/*
 * The data op of write-type object request o (state DATA) is due: SENT
 * (registered: rbdl_sched_done when it finishes), HELD, PASS, or a
 * negative errno (nothing sent).
 */
static inline int rbdl_sched_write(struct rbdl_objreq *o)
{
	int r;

	if (!atomic_load_explicit(&o->req->img->sched.on,
				  memory_order_relaxed)) {
		/* Runs held before a refresh turned the scheduler off go
		 * first: o must not overtake them. */
		rbdl_sched_barrier(o);
		return RBDL_SCHED_PASS;
	}
	/* Relaxed: see the protocol above (the mutex hands runs over). */
	if (atomic_fetch_add_explicit(rbdl_sched_slot(o), 1,
				      memory_order_relaxed))
		return rbdl_sched_write_busy(o);
	/* Nothing registered or held in the slot: go now. */
	o->sched_reg = true;	/* before the op can finish */
	r = rbdl_obj_send_op(o);
	if (r < 0)
		rbdl_sched_done(o);
	return r < 0 ? r : RBDL_SCHED_SENT;
}

/* The slow half of rbdl_sched_read (runs are held in o's slot). */
void rbdl_sched_read_held(struct rbdl_objreq *o);

/* A read of o's extent is due: runs it overlaps go first.  Relaxed: a
 * run made by another thread concurrently holds a write this read is not
 * ordered after anyway. */
static inline void rbdl_sched_read(struct rbdl_objreq *o)
{
	struct rbdl_sched *s = &o->req->img->sched;

	if (__builtin_expect(atomic_load_explicit(
				     &s->slot[o->objno % RBDL_SCHED_SLOTS],
				     memory_order_relaxed) &
				     RBDL_SCHED_HELD_FLAG,
			     0))
		rbdl_sched_read_held(o);
}


/* rbdl_sched_flush: in request.h (request.c calls it). */

#endif /* RBDL_IO_SCHED_H */
