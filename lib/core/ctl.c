/*
 * ctl.c - the process-wide control context (see ctl.h for the model).
 *
 * Each lane has a mutex, a FIFO run queue, an unsorted timer list (few
 * timers are ever armed: a lock retry, a quiesce deadline) and normally
 * one worker.  A worker pops a task, marks it running, runs it without the
 * mutex, and re-queues it if it was kicked meanwhile.  Workers are struct
 * worker objects with a stop flag of their own: the last rbdl_ctl_put()
 * detaches the current worker from its lane and stops it, so a new user
 * arriving during the join gets a fresh worker instead of reviving the
 * old one.  Several workers of one lane can therefore overlap briefly;
 * that is safe because a task is never queued while it runs.
 *
 * Lock order: a lane's mutex is taken with no other lock of ours held by
 * the context itself; callers may hold their own locks when they kick
 * (tasks run with no context lock held, so they may take those locks).
 * users_mu is never held while a lane's mutex is waited on for long.
 */
#include "config.h"

#include "ctl.h"
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct worker {
	pthread_t thread;
	struct lane *lane;
	bool stop;		/* lane mutex */
	bool self_free;		/* detached by its own last put */
};

struct lane {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* work, timers, and retire's waiters */
	struct rbdl_ctl_task *head, *tail;
	struct rbdl_ctl_task *timers;
	struct worker *cur;	/* the worker new work goes to, or NULL */
	/* Workers waiting for work on cv: a kick signals only then, and
	 * after dropping mu (signalled under mu, a worker would wake only
	 * to block on mu, and need a second wake-up when it is dropped). */
	unsigned idle;
	const char *name;
	int index;
};

static struct lane lanes[RBDL_CTL_NLANES] = {
	[RBDL_CTL_INTERNAL] = { .mu = PTHREAD_MUTEX_INITIALIZER,
				.name = "rbdl-ctl", .index = 0 },
	[RBDL_CTL_CALLBACK] = { .mu = PTHREAD_MUTEX_INITIALIZER,
				.name = "rbdl-cb", .index = 1 },
};
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned users;
/* Live workers; relaxed: a statistic for tests, read without ordering. */
static atomic_int nthreads;
static _Thread_local int my_lane = -1;
static _Thread_local struct worker *my_worker;

static void cv_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	for (int i = 0; i < RBDL_CTL_NLANES; i++)
		pthread_cond_init(&lanes[i].cv, &a);
	pthread_condattr_destroy(&a);
}

uint64_t rbdl_ctl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void enqueue_locked(struct lane *l, struct rbdl_ctl_task *t)
{
	t->queued = true;
	t->next = NULL;
	if (l->tail)
		l->tail->next = t;
	else
		l->head = t;
	l->tail = t;
}

static void unqueue_locked(struct lane *l, struct rbdl_ctl_task *t)
{
	struct rbdl_ctl_task **pp = &l->head, *prev = NULL;

	for (; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			if (l->tail == t)
				l->tail = prev;
			break;
		}
	}
	t->queued = false;
}

static void untime_locked(struct lane *l, struct rbdl_ctl_task *t)
{
	for (struct rbdl_ctl_task **pp = &l->timers; *pp; pp = &(*pp)->tnext) {
		if (*pp == t) {
			*pp = t->tnext;
			break;
		}
	}
	t->timed = false;
	t->due_ns = 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct lane *l = w->lane;

	my_lane = l->index;
	my_worker = w;
	pthread_mutex_lock(&l->mu);
	while (!w->stop) {
		struct rbdl_ctl_task *t = l->head;

		if (t) {
			l->head = t->next;
			if (!l->head)
				l->tail = NULL;
			t->queued = false;
			if (t->oneshot) {
				/* Forgotten before it runs: run() may free it. */
				pthread_mutex_unlock(&l->mu);
				t->run(t);
				pthread_mutex_lock(&l->mu);
				continue;
			}
			t->running = true;
			t->runner = pthread_self();
			pthread_mutex_unlock(&l->mu);
			t->run(t);
			pthread_mutex_lock(&l->mu);
			t->running = false;
			if (t->again && !t->retired && !t->queued)
				enqueue_locked(l, t);
			t->again = false;
			pthread_cond_broadcast(&l->cv);	/* retire waits */
			continue;
		}
		uint64_t now = rbdl_ctl_now_ns(), next = 0;
		bool fired = false;

		for (struct rbdl_ctl_task **pp = &l->timers; *pp;) {
			struct rbdl_ctl_task *x = *pp;

			if (x->due_ns <= now) {
				*pp = x->tnext;
				x->timed = false;
				x->due_ns = 0;
				fired = true;
				if (x->running)
					x->again = true;
				else if (!x->queued)
					enqueue_locked(l, x);
				continue;
			}
			if (!next || x->due_ns < next)
				next = x->due_ns;
			pp = &x->tnext;
		}
		if (fired)
			continue;
		if (next) {
			struct timespec ts = {
				.tv_sec = (time_t)(next / 1000000000u),
				.tv_nsec = (long)(next % 1000000000u),
			};

			l->idle++;
			pthread_cond_timedwait(&l->cv, &l->mu, &ts);
			l->idle--;
		} else {
			l->idle++;
			pthread_cond_wait(&l->cv, &l->mu);
			l->idle--;
		}
	}
	bool self_free = w->self_free;

	pthread_mutex_unlock(&l->mu);
	atomic_fetch_sub_explicit(&nthreads, 1, memory_order_relaxed);
	if (self_free) {
		pthread_detach(pthread_self());
		free(w);
	}
	return NULL;
}

/* A worker for the lane if it has none (lane mutex held).  Signals are
 * blocked in it, as in librados' threads: they belong to the program. */
static int ensure_worker_locked(struct lane *l)
{
	sigset_t all, old;
	struct worker *w;
	int e;

	if (l->cur)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->lane = l;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&w->thread, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		free(w);
		rbdl_err("cannot start the %s thread (%d)", l->name, e);
		return -EAGAIN;
	}
	pthread_setname_np(w->thread, l->name);
	atomic_fetch_add_explicit(&nthreads, 1, memory_order_relaxed);
	l->cur = w;
	return 0;
}

void rbdl_ctl_task_init(struct rbdl_ctl_task *t, enum rbdl_ctl_lane lane,
			void (*run)(struct rbdl_ctl_task *t))
{
	struct lane *l = &lanes[lane];

	pthread_once(&cv_once, cv_init);
	pthread_mutex_lock(&l->mu);
	memset(t, 0, sizeof(*t));
	t->run = run;
	t->lane = (unsigned char)lane;
	pthread_mutex_unlock(&l->mu);
}

/* Drop l's mutex, then wake its idle workers if wake (see lane.idle; a
 * worker that stops waiting meanwhile only wakes once more for nothing:
 * it checks its queue under mu before every wait). */
static void unlock_wake(struct lane *l, bool wake)
{
	pthread_mutex_unlock(&l->mu);
	if (wake)
		pthread_cond_broadcast(&l->cv);
}

int rbdl_ctl_kick(struct rbdl_ctl_task *t)
{
	struct lane *l = &lanes[t->lane];
	bool wake = false;
	int r = 0;

	pthread_mutex_lock(&l->mu);
	if (!t->retired) {
		if (t->running)
			t->again = true;
		else if (!t->queued)
			enqueue_locked(l, t);
		r = ensure_worker_locked(l);
		wake = l->idle > 0;
	}
	unlock_wake(l, wake);
	return r;
}

int rbdl_ctl_kick_at(struct rbdl_ctl_task *t, uint64_t due_ns)
{
	struct lane *l = &lanes[t->lane];
	bool wake = false;
	int r = 0;

	pthread_mutex_lock(&l->mu);
	if (!t->retired && !(t->timed && t->due_ns <= due_ns)) {
		if (!t->timed) {
			t->tnext = l->timers;
			l->timers = t;
			t->timed = true;
		}
		t->due_ns = due_ns ? due_ns : 1;
		r = ensure_worker_locked(l);
		wake = l->idle > 0;
	}
	unlock_wake(l, wake);
	return r;
}

int rbdl_ctl_submit_once(struct rbdl_ctl_task *t, enum rbdl_ctl_lane lane,
			 void (*run)(struct rbdl_ctl_task *t))
{
	struct lane *l = &lanes[lane];
	int r;

	rbdl_ctl_task_init(t, lane, run);
	pthread_mutex_lock(&l->mu);
	t->oneshot = true;
	r = ensure_worker_locked(l);
	if (r == 0)
		enqueue_locked(l, t);
	unlock_wake(l, r == 0 && l->idle > 0);
	return r;
}

void rbdl_ctl_task_retire(struct rbdl_ctl_task *t)
{
	struct lane *l = &lanes[t->lane];

	pthread_mutex_lock(&l->mu);
	t->retired = true;
	t->again = false;
	if (t->queued)
		unqueue_locked(l, t);
	if (t->timed)
		untime_locked(l, t);
	while (t->running && !pthread_equal(t->runner, pthread_self()))
		pthread_cond_wait(&l->cv, &l->mu);
	pthread_mutex_unlock(&l->mu);
}

void rbdl_ctl_get(void)
{
	pthread_once(&cv_once, cv_init);
	pthread_mutex_lock(&users_mu);
	users++;
	pthread_mutex_unlock(&users_mu);
}

void rbdl_ctl_put(void)
{
	struct worker *w[RBDL_CTL_NLANES] = { NULL };

	pthread_mutex_lock(&users_mu);
	if (users == 0 || --users > 0) {
		pthread_mutex_unlock(&users_mu);
		return;
	}
	for (int i = 0; i < RBDL_CTL_NLANES; i++) {
		struct lane *l = &lanes[i];

		pthread_mutex_lock(&l->mu);
		w[i] = l->cur;
		l->cur = NULL;
		if (w[i]) {
			w[i]->stop = true;
			/* A lane thread cannot join itself: it frees itself
			 * when its task returns. */
			if (w[i] == my_worker)
				w[i]->self_free = true;
			pthread_cond_broadcast(&l->cv);
		}
		pthread_mutex_unlock(&l->mu);
	}
	pthread_mutex_unlock(&users_mu);
	for (int i = 0; i < RBDL_CTL_NLANES; i++) {
		if (!w[i] || w[i] == my_worker)
			continue;
		pthread_join(w[i]->thread, NULL);
		free(w[i]);
	}
}

bool rbdl_ctl_on_lane(enum rbdl_ctl_lane lane)
{
	return my_lane == (int)lane;
}

int rbdl_ctl_threads(void)
{
	return atomic_load_explicit(&nthreads, memory_order_relaxed);
}
