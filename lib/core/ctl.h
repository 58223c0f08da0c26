/*
 * ctl.h - the process-wide control context: every open image's background
 * work on at most two threads (ctl.c).
 *
 * Role: the slow, rare work of open images (exclusive lock acquisition and
 * hand-over, update-watch and quiesce callbacks, rbd_aio_open/close) runs
 * here instead of on threads of each image's own.  Work is a task: a
 * function that does what is due now and returns; what must wait (a drain,
 * a peer's answer, a deadline) returns early and is run again by a kick or
 * a timer.  Nothing ever waits inside a task for another task.
 *
 * Lanes.  Two lanes, one thread each, so that the threads added by any
 * number of open images are at most two:
 *   RBDL_CTL_INTERNAL  librbdlite's own state machines (the lock); tasks
 *                      may make RADOS round trips but never wait for the
 *                      application;
 *   RBDL_CTL_CALLBACK  the application's callbacks and the aio open/close
 *                      jobs, which may call any rbd_* function, including
 *                      synchronous ones that wait for the internal lane.
 * Keeping the two apart is what makes that safe: the internal lane never
 * waits for the callback lane, and a callback blocked on a synchronous call
 * still lets the internal lane do the work it waits for.
 *
 * Threads are created lazily, on the first task queued to a lane, and are
 * joined when the last user (rbdl_ctl_get/put: an open image, a pending aio
 * job) goes away, so a process with no open image has none of ours.
 *
 * Threading: every function may be called from any thread, also from a
 * librados callback (kick and kick_at never block beyond a short mutex).
 * A task runs on one thread at a time; a kick while it runs makes it run
 * once more afterwards; kicks while queued coalesce.
 *
 * Ownership: struct rbdl_ctl_task is embedded in its owner's object; the
 * owner must rbdl_ctl_task_retire() it before freeing it (except one-shot
 * tasks, which the context forgets before running them).
 */
#ifndef RBDL_CORE_CTL_H
#define RBDL_CORE_CTL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum rbdl_ctl_lane {
	RBDL_CTL_INTERNAL = 0,
	RBDL_CTL_CALLBACK,
	RBDL_CTL_NLANES
};

struct rbdl_ctl_task {
	void (*run)(struct rbdl_ctl_task *t);
	/* Everything below belongs to the context (its lane's mutex). */
	struct rbdl_ctl_task *next;	/* in the lane's run queue */
	struct rbdl_ctl_task *tnext;	/* in the lane's timer list */
	uint64_t due_ns;		/* timer: CLOCK_MONOTONIC, 0 = none */
	pthread_t runner;		/* while running */
	unsigned char lane;
	bool queued, timed, running, again, retired, oneshot;
};

/* Set a task up on a lane (again after a retire, too). */
void rbdl_ctl_task_init(struct rbdl_ctl_task *t, enum rbdl_ctl_lane lane,
			void (*run)(struct rbdl_ctl_task *t));

/* Run t soon on its lane's thread (starting the thread if needed).
 * Ignored for a retired task.  0, or -EAGAIN when no thread could be
 * started (the task is then left queued for the next start). */
int rbdl_ctl_kick(struct rbdl_ctl_task *t);
/* Run t at due_ns (CLOCK_MONOTONIC) or earlier if kicked; an earlier
 * deadline already set wins. */
int rbdl_ctl_kick_at(struct rbdl_ctl_task *t, uint64_t due_ns);
/* Queue a one-shot task: run once, then forgotten by the context before
 * run() is called, so run() may free it. */
int rbdl_ctl_submit_once(struct rbdl_ctl_task *t, enum rbdl_ctl_lane lane,
			 void (*run)(struct rbdl_ctl_task *t));

/* Stop t: dequeue it, drop its timer, wait until it is not running
 * (unless the caller is t itself), and ignore later kicks.  Afterwards
 * the owner may run t->run(t) on its own thread to finish its work, and
 * free it. */
void rbdl_ctl_task_retire(struct rbdl_ctl_task *t);

/* Users keep the threads alive: an open image holds one from open to
 * close.  The last put joins the lanes' threads (a lane thread putting
 * the last reference detaches itself and ends after its task). */
void rbdl_ctl_get(void);
void rbdl_ctl_put(void);

/* Is the calling thread a lane's thread? */
bool rbdl_ctl_on_lane(enum rbdl_ctl_lane lane);
/* Threads the context runs now (tests and the many-images benchmark). */
int rbdl_ctl_threads(void);

uint64_t rbdl_ctl_now_ns(void);

#endif /* RBDL_CORE_CTL_H */
