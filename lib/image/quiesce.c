/*
 * quiesce.c - quiesce watchers (see quiesce.h for role and threading).
 *
 * librbd 16.2 (ImageWatcher QUIESCE/UNQUIESCE handling, ImageState's
 * QuiesceWatchers):
 *   - a QUIESCE names its request by an AsyncRequestId; a new one is queued
 *     and run when no quiesce or unquiesce round is in progress; a known
 *     one only moves the pending answer to the new notification (or, when
 *     it finished, is answered again with its result);
 *   - a quiesce round calls every watcher's quiesce callback and ends when
 *     as many rbd_quiesce_complete calls arrived as watchers were called;
 *     a negative r becomes the round's result (a later 0 does not undo
 *     it); the answer is a ResponseMessage with the result;
 *   - UNQUIESCE of a finished request (or 10 s after it finished without
 *     one) runs an unquiesce round: every watcher's unquiesce callback,
 *     those that failed the quiesce included (librbd 16.2.15 does).
 *
 * Everything below is protected by qw->mu; callbacks and notify acks run
 * with it released.  The header watch callback (qw_on_notify) only looks
 * up and records requests.
 */
#include "config.h"

#include "quiesce.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "core/ctl.h"
#include "core/internal.h"
#include "proto/notify.h"
#include "state.h"
#include "watch.h"

/* librbd: 2 * the notify timeout (5 s) without UNQUIESCE unquiesces. */
#define UNQUIESCE_TIMEOUT_S 10
/* librbd remembers finished requests for 600 s (retries, UNQUIESCE). */
#define FORGET_AFTER_S 600

enum { PHASE_IDLE, PHASE_QUIESCING, PHASE_UNQUIESCING };
enum { REQ_QUEUED, REQ_RUNNING, REQ_DONE };

struct qw_ent {
	struct qw_ent *next;
	uint64_t handle;
	void (*quiesce_cb)(void *);
	void (*unquiesce_cb)(void *);
	void *arg;
};

struct qreq {
	struct qreq *next;
	uint64_t gid, chandle, reqid;	/* AsyncRequestId */
	int st;
	bool has_ack;			/* a notification waits for us */
	uint64_t notify_id, notify_handle;
	int result;
	bool unquiesce_due;		/* UNQUIESCE came or timer expired */
	bool unquiesced;
	time_t deadline;		/* DONE: unquiesce at (monotonic s) */
	time_t forget;			/* DONE: drop at */
};

struct rbdl_quiesce {
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* unwatchers */
	struct rbdl_ctl_task task;	/* quiesce_task, callback lane */
	struct rbdl_image *img;
	bool stop;
	struct qw_ent *list;		/* ascending handles */
	uint64_t next_handle;
	struct qreq *reqs;		/* arrival order */
	int phase;
	struct qreq *cur;		/* PHASE_QUIESCING: its request */
	unsigned remaining;		/* completions still expected */
	int result;			/* of the current round */
	uint64_t unq_gen;		/* unquiesce rounds finished */
};

static const struct rbdl_watch_listener qw_listener;

/* Wake the unwatchers and the task (mu held). */
static void wake_locked(struct rbdl_quiesce *qw)
{
	pthread_cond_broadcast(&qw->cv);
	if (!qw->stop)
		rbdl_ctl_kick(&qw->task);
}

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Answer a QUIESCE notification with a ResponseMessage (no lock held). */
static void ack_result(struct rbdl_image *img, uint64_t notify_id,
		       uint64_t handle, int result)
{
	uint8_t buf[16];
	long n = rbdl_encode_notify_response(buf, sizeof(buf), result);

	rados_notify_ack(img->md_io, img->header_oid, notify_id, handle,
			 n > 0 ? (const char *)buf : NULL, n > 0 ? (int)n : 0);
}

/* The current quiesce round ended (mu held; released around the ack). */
static void finish_round_locked(struct rbdl_image *img)
{
	struct rbdl_quiesce *qw = img->qw;
	struct qreq *q = qw->cur;
	bool ack = q->has_ack;
	uint64_t nid = q->notify_id, nh = q->notify_handle;
	int r = qw->result;

	qw->phase = PHASE_IDLE;
	qw->cur = NULL;
	q->st = REQ_DONE;
	q->result = r;
	q->has_ack = false;
	q->deadline = now_s() + UNQUIESCE_TIMEOUT_S;
	q->forget = now_s() + FORGET_AFTER_S;
	wake_locked(qw);
	if (ack) {
		pthread_mutex_unlock(&qw->mu);
		ack_result(img, nid, nh, r);
		pthread_mutex_lock(&qw->mu);
	}
}

/* Call one kind of callback of every watcher registered when the round
 * started (mu held, released around each call).  A watcher unregistered
 * before its turn is skipped; during a quiesce round it then counts as
 * answered. */
static void run_round_locked(struct rbdl_image *img, bool quiesce)
{
	struct rbdl_quiesce *qw = img->qw;
	uint64_t last = 0, n = 0, end;	/* handles start at 1 */

	for (struct qw_ent *e = qw->list; e; e = e->next)
		n++;
	end = qw->next_handle;	/* later registrations are not called */
	if (quiesce) {
		qw->remaining = (unsigned)n;
		qw->result = 0;
		if (n == 0) {
			finish_round_locked(img);
			return;
		}
	}
	for (;;) {
		struct qw_ent *e = qw->list;

		while (e && e->handle <= last)
			e = e->next;
		if (!e || e->handle >= end || qw->stop)
			break;
		last = e->handle;
		n--;
		void (*cb)(void *) = quiesce ? e->quiesce_cb : e->unquiesce_cb;
		void *arg = e->arg;

		if (cb) {
			pthread_mutex_unlock(&qw->mu);
			cb(arg);
			pthread_mutex_lock(&qw->mu);
		} else if (quiesce && qw->phase == PHASE_QUIESCING) {
			/* No callback to answer: count it as done. */
			if (--qw->remaining == 0)
				finish_round_locked(img);
		}
	}
	/* Watchers that went away before their turn will not answer. */
	if (quiesce && qw->phase == PHASE_QUIESCING && n > 0) {
		qw->remaining = qw->remaining > n ? qw->remaining - (unsigned)n
						  : 0;
		if (qw->remaining == 0)
			finish_round_locked(img);
	}
}

/* The rounds and timers; runs on the callback lane until nothing is due
 * now, arming its timer for the next deadline. */
static void quiesce_task(struct rbdl_ctl_task *t)
{
	struct rbdl_quiesce *qw = container_of(t, struct rbdl_quiesce, task);
	struct rbdl_image *img = qw->img;

	pthread_mutex_lock(&qw->mu);
	while (!qw->stop) {
		time_t now = now_s(), next = 0;
		struct qreq **pp = &qw->reqs, *q, *unq = NULL, *queued = NULL;

		while ((q = *pp)) {
			if (q->st == REQ_DONE && !q->unquiesced &&
			    q->deadline <= now)
				q->unquiesce_due = true;
			if (q->st == REQ_DONE && q->unquiesced &&
			    q->forget <= now) {
				*pp = q->next;
				free(q);
				continue;
			}
			if (q->st == REQ_DONE && !q->unquiesced) {
				if (q->unquiesce_due && !unq)
					unq = q;
				else if (!next || q->deadline < next)
					next = q->deadline;
			} else if (q->st == REQ_DONE &&
				   (!next || q->forget < next)) {
				next = q->forget;
			}
			if (q->st == REQ_QUEUED && !queued)
				queued = q;
			pp = &q->next;
		}
		if (qw->phase == PHASE_IDLE && unq) {
			unq->unquiesced = true;
			qw->phase = PHASE_UNQUIESCING;
			run_round_locked(img, false);
			qw->phase = PHASE_IDLE;
			qw->unq_gen++;
			pthread_cond_broadcast(&qw->cv);	/* unwatchers */
			continue;
		}
		if (qw->phase == PHASE_IDLE && queued) {
			queued->st = REQ_RUNNING;
			qw->cur = queued;
			qw->phase = PHASE_QUIESCING;
			run_round_locked(img, true);
			continue;
		}
		if (next)
			rbdl_ctl_kick_at(&qw->task, (uint64_t)(next > now
								? next
								: now + 1) *
							    1000000000ull);
		break;
	}
	pthread_mutex_unlock(&qw->mu);
}

static struct qreq *find_req(struct rbdl_quiesce *qw,
			     const struct rbdl_notify_msg *m)
{
	for (struct qreq *q = qw->reqs; q; q = q->next)
		if (q->gid == m->async_gid && q->chandle == m->async_handle &&
		    q->reqid == m->async_request_id)
			return q;
	return NULL;
}

/* A header notification (watch.h, librados' watch thread). */
static bool qw_on_notify(struct rbdl_image *img, uint64_t notify_id,
			 uint64_t handle, const struct rbdl_notify_msg *m)
{
	struct rbdl_quiesce *qw = img->qw;
	struct qreq *q;

	if (!m || !m->has_async_id || !qw ||
	    (m->op != RBDL_NOTIFY_QUIESCE && m->op != RBDL_NOTIFY_UNQUIESCE))
		return false;
	pthread_mutex_lock(&qw->mu);
	q = find_req(qw, m);
	if (m->op == RBDL_NOTIFY_UNQUIESCE) {
		/* Acked empty by the watch; a request not finished yet is
		 * unquiesced by its timer (librbd). */
		if (q && q->st == REQ_DONE && !q->unquiesced) {
			q->unquiesce_due = true;
			q->forget = now_s() + FORGET_AFTER_S;
			wake_locked(qw);
		}
		pthread_mutex_unlock(&qw->mu);
		return false;
	}
	if (q && q->st != REQ_DONE) {
		/* A retry of a request in progress: answer this one. */
		q->has_ack = true;
		q->notify_id = notify_id;
		q->notify_handle = handle;
		pthread_mutex_unlock(&qw->mu);
		return true;
	}
	if (q) {
		int r = q->result;

		q->deadline = now_s() + UNQUIESCE_TIMEOUT_S;
		q->forget = now_s() + FORGET_AFTER_S;
		wake_locked(qw);
		pthread_mutex_unlock(&qw->mu);
		ack_result(img, notify_id, handle, r);
		return true;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		pthread_mutex_unlock(&qw->mu);
		return false;	/* acked empty: the snapshot proceeds */
	}
	q->gid = m->async_gid;
	q->chandle = m->async_handle;
	q->reqid = m->async_request_id;
	q->st = REQ_QUEUED;
	q->has_ack = true;
	q->notify_id = notify_id;
	q->notify_handle = handle;
	struct qreq **pp = &qw->reqs;

	while (*pp)
		pp = &(*pp)->next;
	*pp = q;
	wake_locked(qw);
	pthread_mutex_unlock(&qw->mu);
	return true;
}

static const struct rbdl_watch_listener qw_listener = {
	.notify = qw_on_notify,
	.rewatched = NULL,
};

/* Allocate img->qw and set its task up (first registration; callers
 * serialize through maint_mu). */
static int qw_setup(struct rbdl_image *img)
{
	struct rbdl_quiesce *qw = calloc(1, sizeof(*qw));
	pthread_condattr_t ca;

	if (!qw)
		return -ENOMEM;
	pthread_mutex_init(&qw->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&qw->cv, &ca);
	pthread_condattr_destroy(&ca);
	qw->phase = PHASE_IDLE;
	qw->next_handle = 1;	/* opaque; librbd's are never 0 either */
	qw->img = img;
	rbdl_ctl_task_init(&qw->task, RBDL_CTL_CALLBACK, quiesce_task);
	img->qw = qw;
	/* Release: the watch callback sees qw set up. */
	rbdl_watch_listen(img, RBDL_WATCH_SLOT_QUIESCE, &qw_listener);
	return 0;
}

int rbdl_quiesce_register(struct rbdl_image *img, void (*quiesce_cb)(void *),
			  void (*unquiesce_cb)(void *), void *arg,
			  uint64_t *handle)
{
	struct qw_ent *e = calloc(1, sizeof(*e)), **pp;
	int r;

	if (!e)
		return -ENOMEM;
	pthread_mutex_lock(&img->maint_mu);
	r = img->qw ? 0 : qw_setup(img);
	pthread_mutex_unlock(&img->maint_mu);
	if (r < 0) {
		free(e);
		return r;
	}
	struct rbdl_quiesce *qw = img->qw;

	e->quiesce_cb = quiesce_cb;
	e->unquiesce_cb = unquiesce_cb;
	e->arg = arg;
	pthread_mutex_lock(&qw->mu);
	e->handle = qw->next_handle++;
	for (pp = &qw->list; *pp; pp = &(*pp)->next)
		;
	*pp = e;
	*handle = e->handle;
	pthread_mutex_unlock(&qw->mu);
	return 0;
}

int rbdl_quiesce_unregister(struct rbdl_image *img, uint64_t handle)
{
	struct rbdl_quiesce *qw = img->qw;
	struct qw_ent **pp, *e = NULL;

	if (!qw)
		return -ENOENT;
	pthread_mutex_lock(&qw->mu);
	for (pp = &qw->list; *pp; pp = &(*pp)->next) {
		if ((*pp)->handle == handle) {
			e = *pp;
			*pp = e->next;
			break;
		}
	}
	/* librbd completes an unregistration made during a round once the
	 * unquiesce that ends it has run (never on the callback lane, which
	 * runs the rounds: a callback unwatching would wait for itself). */
	if (e && qw->phase != PHASE_IDLE &&
	    !rbdl_ctl_on_lane(RBDL_CTL_CALLBACK)) {
		uint64_t gen = qw->unq_gen;

		while (gen == qw->unq_gen && !qw->stop)
			pthread_cond_wait(&qw->cv, &qw->mu);
	}
	pthread_mutex_unlock(&qw->mu);
	if (!e)
		return -ENOENT;
	free(e);
	return 0;
}

void rbdl_quiesce_complete(struct rbdl_image *img, uint64_t handle, int r)
{
	struct rbdl_quiesce *qw = img->qw;

	if (!qw) {
		rbdl_log("rbd_quiesce_complete: no quiesce in progress "
			 "(ignored)");
		return;
	}
	pthread_mutex_lock(&qw->mu);
	if (qw->phase != PHASE_QUIESCING || qw->remaining == 0) {
		pthread_mutex_unlock(&qw->mu);
		rbdl_log("rbd_quiesce_complete: no quiesce in progress "
			 "(ignored)");
		return;
	}
	(void)handle;	/* librbd counts answers, whoever gives them */
	if (r < 0)
		qw->result = r;
	if (--qw->remaining == 0)
		finish_round_locked(img);
	pthread_mutex_unlock(&qw->mu);
}

void rbdl_quiesce_shutdown(struct rbdl_image *img)
{
	struct rbdl_quiesce *qw = img->qw;

	if (!qw)
		return;
	pthread_mutex_lock(&qw->mu);
	qw->stop = true;	/* no kicks from here on */
	pthread_cond_broadcast(&qw->cv);
	pthread_mutex_unlock(&qw->mu);
	rbdl_ctl_task_retire(&qw->task);	/* waits for a running round */
	while (qw->list) {
		struct qw_ent *e = qw->list;

		qw->list = e->next;
		free(e);
	}
	while (qw->reqs) {
		struct qreq *q = qw->reqs;

		qw->reqs = q->next;
		free(q);
	}
	pthread_cond_destroy(&qw->cv);
	pthread_mutex_destroy(&qw->mu);
	/* The header watch stopped before (close): no listener call left. */
	rbdl_watch_listen(img, RBDL_WATCH_SLOT_QUIESCE, NULL);
	img->qw = NULL;
	free(qw);
}
