/*
 * sched.h - librbd 16.2's simple I/O scheduler (io/SimpleSchedulerObject
 * Dispatch.cc), private to the data path: with rbd_io_scheduler=simple
 * (the default), while a write to an object is in flight, later plain
 * writes to that object are held, and the held writes that touch end to
 * end are sent as one RADOS op when the write in flight finishes.  Each
 * held write keeps its own object request, advanced with the merged op's
 * result, so every caller's completion carries its own result.
 *
 * Per object with writes in flight (an entry, hashed by object number):
 *
 *                    write, nothing in flight
 *   (no entry) -------------------------------> SENT (registered, 1 op)
 *       ^                                          |  \  later plain write:
 *       | last op done,                            |   +-> HELD run
 *       | nothing held                             |       (contiguous, same
 *       +------------------------------------------+        snapshot context
 *                          an op in flight done:   |        and flags:
 *                          the held run goes as    |        merged; any
 *                          one op (registered) <---+        other: the run
 *                                                           goes now, and
 *                                                           a new run starts)
 *
 * A write that is not plain (copy-up, guarded, FUA flags differ), a
 * discard, write-same or compare-and-write to an object with held writes
 * sends them first (rbdl_sched_barrier), so ops reach librados in
 * submission order for each object.  Held writes never wait for more than
 * the op in flight (no timer): the delay librbd derives from the measured
 * latency is the op's own latency here.
 *
 * Held writes' data is kept (request.h) before they are held.  Every op to
 * a registered object is sent under the scheduler's mutex, so no later op
 * to it can overtake one held or being sent.
 *
 * Threading: any thread; one mutex per image (img->sched.mu), not taken
 * by reads, nor by any request while the scheduler tracks no object.
 */
#ifndef RBDL_IO_SCHED_H
#define RBDL_IO_SCHED_H

#include <stdbool.h>

struct rbdl_objreq;

enum {
	RBDL_SCHED_SENT = 0,	/* the op went to librados */
	RBDL_SCHED_HELD = 1,	/* held: advanced when its merged op ends */
	RBDL_SCHED_PASS = 2,	/* not the scheduler's: send it yourself */
};

/*
 * The data op of object request o (a write, state DATA) is due: SENT (by
 * rbdl_obj_send_op, registered: rbdl_sched_done when it finishes), HELD,
 * PASS (not a plain write, or the scheduler is off: any held writes to
 * the object were sent first), or a negative errno (nothing sent).
 */
int rbdl_sched_write(struct rbdl_objreq *o, bool in_submit);

/* Another op to o's object is due (not a read): held writes go first. */
void rbdl_sched_barrier(struct rbdl_objreq *o);

/* o's registered op (o->sched_reg) finished: send what it held back. */
void rbdl_sched_done(struct rbdl_objreq *o);

#endif /* RBDL_IO_SCHED_H */
