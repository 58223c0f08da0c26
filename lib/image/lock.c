/*
 * lock.c - the RBD exclusive lock (see lock.h for the state machine).
 *
 * Protocol (rbd-protocol.md section 5, librbd ManagedLock / krbd):
 *   acquire: lock.lock(rbd_lock, EXCLUSIVE, "auto <handle>", "internal");
 *            on EBUSY read the owner (lock.get_info), send REQUEST_LOCK and
 *            look for the owner among the notify acks and timeouts: alive
 *            -> wait for RELEASED_LOCK (or retry after 10 s); dead -> add
 *            its address to the OSD blocklist, break its lock, retry.
 *            Then refresh the header, load the object map, and announce
 *            ACQUIRED_LOCK.
 *   release: stop new writes, drain the in-flight ones, unlock the object
 *            map, unlock the header, announce RELEASED_LOCK.
 *   notifications: REQUEST_LOCK while owner -> ack 0 and release
 *            (once rbd_lock_acquire was called: ack -EROFS, and writes
 *            without the lock fail with -EROFS instead of taking it, as
 *            with librbd's StandardPolicy); maintenance requests while
 *            owner -> ack -EOPNOTSUPP, so the requester takes the lock and
 *            does the work itself; everything else -> empty ack.
 */
/*
 * Memory ordering.  lk->state and lk->writes are the only fields read
 * outside lk->mu.  Every store of state happens with lk->mu held (the
 * lock's task, maintenance, init/shutdown before and after the task
 * runs), so stores are ordered among themselves by the mutex.  The write
 * gate and its releasers form a Dekker pair: a writer increments writes
 * then loads state, a releaser stores RELEASING (or MAINT) then loads
 * writes; both sides are seq_cst so that at least one sees the other (the
 * writer parks, or the releaser waits for it).  The default (seq_cst)
 * accessors below are used for that reason, and for the waits on writes
 * reaching 0, which pair with write_end's seq_cst decrement.  The two
 * relaxed loads of state are the DISABLED fast paths: DISABLED is set
 * before the image is shared and never changes while writes run.
 */
#include "config.h"

#include "core/ctl.h"
#include "proto/rados.h"
#include "lock.h"
#include "proto/cls_lock.h"
#include "proto/notify.h"
#include "refresh.h"
#include "state.h"
#include "watch.h"
#include "core/internal.h"
#include "objmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rbd/librbd.h"

#define LOCK_NAME "rbd_lock"
#define LOCK_TAG "internal"
#define NOTIFY_TIMEOUT_MS 5000
#define RETRY_WAIT_S 10

/* The lock's state; DISABLED for an image that has no lock (a backing
 * image, or an open that failed before the lock was set up). */
static int lock_state(const struct rbdl_image *img)
{
	return img->lk ? atomic_load(&img->lk->state) : RBDL_LOCK_DISABLED;
}

/* ---- notifications ------------------------------------------------------ */

static int send_notify(struct rbdl_image *img, uint32_t op, char **reply,
		       size_t *rlen)
{
	uint8_t buf[64];
	long n = rbdl_encode_notify(buf, sizeof(buf), op, img->lk->gid,
				    img->watch_cookie, false);
	char *rb = NULL;
	size_t rl = 0;
	int r;

	if (n < 0)
		return (int)n;
	r = rados_notify2(img->md_io, img->header_oid, (const char *)buf,
			  (int)n, NOTIFY_TIMEOUT_MS, &rb, &rl);
	if (reply) {
		*reply = rb;
		*rlen = rl;
	} else if (rb) {
		rados_buffer_free(rb);
	}
	return r;
}

/*
 * ACQUIRED_LOCK and RELEASED_LOCK, sent without waiting for the watchers'
 * acks (librbd sends them asynchronously too): a dead watcher would
 * otherwise hold every acquisition up for the 5 s notify timeout.
 * lk->notifies counts those in flight; rbdl_lock_shutdown waits for them
 * before the image's I/O context goes.
 */
struct anotify {
	struct rbdl_lock *lk;
	rados_completion_t c;
	char *reply;
	size_t rlen;
};

static void anotify_done(rados_completion_t c, void *arg)
{
	struct anotify *a = arg;
	struct rbdl_lock *lk = a->lk;

	if (a->reply)
		rados_buffer_free(a->reply);
	/* Safe in the callback: librados holds a reference while it runs. */
	rados_aio_release(c);
	free(a);
	pthread_mutex_lock(&lk->mu);
	if (--lk->notifies == 0)
		pthread_cond_broadcast(&lk->cv);
	pthread_mutex_unlock(&lk->mu);
}

static void send_notify_async(struct rbdl_image *img, uint32_t op)
{
	struct rbdl_lock *lk = img->lk;
	uint8_t buf[64];
	long n = rbdl_encode_notify(buf, sizeof(buf), op, lk->gid,
				    img->watch_cookie, false);
	struct anotify *a = n < 0 ? NULL : calloc(1, sizeof(*a));
	int r = -ENOMEM;

	if (a) {
		a->lk = lk;
		r = rados_aio_create_completion2(a, anotify_done, &a->c);
	}
	if (r == 0) {
		pthread_mutex_lock(&lk->mu);
		lk->notifies++;
		pthread_mutex_unlock(&lk->mu);
		r = rados_aio_notify(img->md_io, img->header_oid, a->c,
				     (const char *)buf, (int)n,
				     NOTIFY_TIMEOUT_MS, &a->reply, &a->rlen);
		if (r == 0)
			return;
		pthread_mutex_lock(&lk->mu);
		lk->notifies--;
		pthread_mutex_unlock(&lk->mu);
		rados_aio_release(a->c);
	}
	free(a);
	/* Peers then learn of it by their retry timer, as after a lost
	 * notification. */
	rbdl_err("image %s: cannot send lock notification %u (%d)", img->name,
		 op, r);
}

struct probe {
	uint64_t gid, handle;
	bool alive;
	bool has_resp;
	int32_t resp;
};

static int probe_reply(uint64_t gid, uint64_t cookie, bool timed_out,
		       const uint8_t *payload, uint32_t len, void *arg)
{
	struct probe *p = arg;

	if (gid != p->gid || cookie != p->handle)
		return 0;
	p->alive = true;
	if (!timed_out && len &&
	    rbdl_decode_notify_response(payload, len, &p->resp) == 0)
		p->has_resp = true;
	return 0;
}

/* ---- acquire / release (the lock's task) --------------------------------- */

static int parse_cookie(const char *c, uint64_t *handle)
{
	char *end;

	if (strncmp(c, "auto ", 5))
		return -EINVAL;
	errno = 0;
	*handle = strtoull(c + 5, &end, 10);
	return (errno || *end || end == c + 5) ? -EINVAL : 0;
}

/* "v2:127.0.0.1:0/123" -> "127.0.0.1:0/123", the form librbd blocklists. */
static void blocklist_owner(struct rbdl_image *img, const char *addr)
{
	const char *a = strchr(addr, ':');
	char buf[160];

	if (!strncmp(addr, "v1:", 3) || !strncmp(addr, "v2:", 3) ||
	    !strncmp(addr, "any:", 4))
		addr = a + 1;
	snprintf(buf, sizeof(buf), "%s", addr);
	rbdl_log("image %s: lock owner %s is gone; blocklisting it and "
		 "breaking its lock", img->name, buf);
	int r = rados_blocklist_add(img->cluster, buf, 0);

	if (r < 0)
		rbdl_err("image %s: blocklisting %s failed (%d)", img->name,
			 buf, r);
}

static int post_acquire(struct rbdl_image *img, bool broke)
{
	int r;

	/* Header changes while we did not hold the lock were notified and
	 * made a refresh due (librbd's PostAcquireRequest refreshes only
	 * then).  A lock broken from a dead owner may hide a change whose
	 * notification died with it: refresh then regardless.  seq_cst
	 * (includes the release maybe_refresh's acquire pairs with). */
	if (broke)
		atomic_fetch_add(&img->refresh_seq, 1);
	r = rbdl_image_maybe_refresh(img);
	if (r == 0 && (atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP))
		r = rbdl_objmap_load(img, atomic_load(&img->size));
	if (r < 0) {
		rbdl_lockobj_unlock(img->md_io, img->header_oid, img->lk->cookie);
		return r;
	}
	send_notify_async(img, RBDL_NOTIFY_ACQUIRED_LOCK);
	return 0;
}

/* 0: acquired; -EAGAIN: a live owner was asked to release; else error
 * (try_only: -EBUSY when anyone holds it, nobody asked). */
static int do_acquire(struct rbdl_image *img, bool try_only)
{
	struct rbdl_lock *lk = img->lk;
	bool broke = false;

	for (int tries = 0; tries < 16; tries++) {
		struct rbdl_lock_info li;
		uint64_t h;
		int r = rbdl_lockobj_lock(img->md_io, img->header_oid,
					  lk->cookie, LOCK_TAG);

		if (r == 0 || r == -EEXIST)
			return post_acquire(img, broke);
		if (r != -EBUSY || try_only)
			return r;
		r = rbdl_lockobj_info(img->md_io, img->header_oid, &li);
		if (r < 0)
			return r;
		if (li.n_lockers == 0) {
			rbdl_lock_info_free(&li);
			continue;
		}
		struct rbdl_locker *l = &li.lockers[0];

		if (strcmp(li.tag ? li.tag : "", LOCK_TAG) ||
		    li.lock_type != RBDL_LOCK_EXCLUSIVE ||
		    parse_cookie(l->cookie, &h) < 0) {
			rbdl_log("image %s is locked by an external mechanism "
				 "(tag \"%s\", cookie \"%s\")", img->name,
				 li.tag ? li.tag : "", l->cookie);
			rbdl_lock_info_free(&li);
			return -EBUSY;
		}
		struct probe p = { (uint64_t)l->entity_num, h, false, false,
				   0 };
		char *reply = NULL;
		size_t rlen = 0;

		/* The owner may release (and say so) before our notify even
		 * returns: remember which ownership change we wait past. */
		pthread_mutex_lock(&lk->mu);
		lk->request_seq = lk->owner_seq;
		pthread_mutex_unlock(&lk->mu);
		send_notify(img, RBDL_NOTIFY_REQUEST_LOCK, &reply, &rlen);
		if (reply) {
			rbdl_walk_notify_reply(reply, rlen, probe_reply, &p);
			rados_buffer_free(reply);
		}
		if (p.alive) {
			rbdl_lock_info_free(&li);
			if (p.has_resp && p.resp == -EROFS)
				return -EROFS;	/* its policy refuses */
			return -EAGAIN;
		}
		blocklist_owner(img, l->addr);
		r = rbdl_lockobj_break(img->md_io, img->header_oid, l);
		rbdl_lock_info_free(&li);
		if (r < 0)
			return r;
		broke = true;
	}
	return -EBUSY;
}

/* The release proper, once the writes in flight drained (RELEASING). */
static void finish_release(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;

	rbdl_objmap_unload(img);
	int r = rbdl_lockobj_unlock(img->md_io, img->header_oid, lk->cookie);

	/* A blocklisted client's lock was broken by whoever blocklisted it:
	 * nothing to report (librbd says nothing either). */
	if (r == -ESHUTDOWN)
		rbdl_log("image %s: unlock: this client is blocklisted",
			 img->name);
	else if (r < 0 && r != -ENOENT)
		rbdl_err("image %s: unlock failed (%d)", img->name, r);
	send_notify_async(img, RBDL_NOTIFY_RELEASED_LOCK);
}

static struct rbdl_lkwaiter *take_parked_locked(struct rbdl_lock *lk)
{
	struct rbdl_lkwaiter *w = lk->parked_head;

	lk->parked_head = lk->parked_tail = NULL;
	return w;
}

static void resume_all(struct rbdl_lkwaiter *w, int err)
{
	while (w) {
		struct rbdl_lkwaiter *n = w->next;

		w->resume(w, err);
		w = n;
	}
}

/* mu held: the lock is ours.  If writes are parked, writes that come now
 * park behind them until resume_owner_locked ran them (resuming is
 * stored before OWNER, both seq_cst: a gate that sees OWNER sees it). */
static void set_owner_locked(struct rbdl_lock *lk)
{
	if (lk->parked_head)
		atomic_store(&lk->resuming, true);
	atomic_store(&lk->state, RBDL_LOCK_OWNER);
}

/* mu held (dropped while resuming): resume the parked writes in order,
 * and those that parked behind them meanwhile, while the lock stays ours;
 * then writes pass the gate again.  What is left parked when the lock
 * is no longer ours is the state machine's.  One loop at a time (the
 * lock's task, or rbdl_lock_maint_end on an application thread): a
 * second caller leaves the parked writes to the loop running, which
 * looks at the list under mu before it ends. */
static void resume_owner_locked(struct rbdl_lock *lk)
{
	struct rbdl_lkwaiter *w;

	if (lk->resume_active)
		return;
	lk->resume_active = true;
	while (atomic_load(&lk->state) == RBDL_LOCK_OWNER &&
	       (w = take_parked_locked(lk))) {
		pthread_mutex_unlock(&lk->mu);
		resume_all(w, 0);
		pthread_mutex_lock(&lk->mu);
	}
	lk->resume_active = false;
	atomic_store(&lk->resuming, false);
}

/* Wake whoever waits for the lock's state (mu held): threads in
 * maint_begin / acquire_user / release_and_wait, and the lock's task. */
static void wake_locked(struct rbdl_lock *lk)
{
	pthread_cond_broadcast(&lk->cv);
	if (lk->task_live)
		rbdl_ctl_kick(&lk->task);
}

/*
 * The lock's state machine: does what is due and returns when it would
 * have to wait.  Runs on the control context's internal lane (lock_task),
 * and once more on the closing thread after the task was retired
 * (rbdl_lock_shutdown, may_wait: the drain is waited for there, since no
 * kick will come).  What it waits for kicks it again:
 *   - RELEASING with writes in flight: the last write_end;
 *   - a live owner asked to release: its RELEASED_LOCK or a new owner's
 *     ACQUIRED_LOCK (lock_notify), or the RETRY_WAIT_S timer;
 *   - new work: parked writes, want_acquire, want_release, stop.
 */
static void lock_run(struct rbdl_image *img, bool may_wait)
{
	struct rbdl_lock *lk = img->lk;

	pthread_mutex_lock(&lk->mu);
	for (;;) {
		int st = atomic_load(&lk->state);

		if (st == RBDL_LOCK_RELEASING) {
			/* New writes park; drain the running ones (seq_cst
			 * load: pairs with write_end's decrement, which
			 * wakes us at 0). */
			if (atomic_load(&lk->writes) != 0) {
				if (!may_wait)
					break;
				pthread_cond_wait(&lk->cv, &lk->mu);
				continue;
			}
			pthread_mutex_unlock(&lk->mu);
			finish_release(img);
			pthread_mutex_lock(&lk->mu);
			atomic_store(&lk->state, RBDL_LOCK_UNLOCKED);
			pthread_cond_broadcast(&lk->cv);
			continue;
		}
		if (st == RBDL_LOCK_OWNER &&
		    (lk->stop || (lk->want_release && !lk->user_held))) {
			/* seq_cst store: pairs with the write gate's
			 * increment-then-load of state. */
			atomic_store(&lk->state, RBDL_LOCK_RELEASING);
			lk->want_release = false;
			continue;
		}
		if (lk->stop) {
			struct rbdl_lkwaiter *w = take_parked_locked(lk);

			pthread_mutex_unlock(&lk->mu);
			resume_all(w, -ESHUTDOWN);
			return;
		}
		/* A release asked for during a maintenance op is honoured
		 * once it ends (MAINT -> OWNER). */
		if (st != RBDL_LOCK_MAINT)
			lk->want_release = false;
		if (st != RBDL_LOCK_UNLOCKED ||
		    !(lk->parked_head || lk->want_acquire))
			break;
		if (lk->manual && !lk->want_acquire) {
			/* The application manages the lock: parked writes
			 * do not take it (librbd: -EROFS). */
			struct rbdl_lkwaiter *w = take_parked_locked(lk);

			pthread_mutex_unlock(&lk->mu);
			resume_all(w, -EROFS);
			pthread_mutex_lock(&lk->mu);
			continue;
		}
		if (lk->retry_due) {
			/* Waiting for the owner we asked to release. */
			if (lk->request_seq == lk->owner_seq &&
			    rbdl_ctl_now_ns() < lk->retry_due) {
				rbdl_ctl_kick_at(&lk->task, lk->retry_due);
				break;
			}
			lk->retry_due = 0;
		}
		atomic_store(&lk->state, RBDL_LOCK_ACQUIRING);
		bool try_only = lk->try_only;

		lk->try_only = false;
		pthread_mutex_unlock(&lk->mu);
		int r = do_acquire(img, try_only);

		pthread_mutex_lock(&lk->mu);
		if (r == -EBUSY && try_only && lk->parked_head &&
		    !lk->manual && !lk->stop) {
			/* The try failed for the maintenance op that asked;
			 * the parked writes take the lock the usual way. */
			atomic_store(&lk->state, RBDL_LOCK_UNLOCKED);
			lk->want_acquire = false;
			lk->last_error = r;
			lk->acquire_gen++;
			pthread_cond_broadcast(&lk->cv);
			continue;
		}
		if (r == -EAGAIN && !lk->stop) {
			/* Wait for the owner's RELEASED_LOCK (or a new owner's
			 * ACQUIRED_LOCK), at most RETRY_WAIT_S, then try
			 * again. */
			atomic_store(&lk->state, RBDL_LOCK_UNLOCKED);
			lk->retry_due = rbdl_ctl_now_ns() +
					RETRY_WAIT_S * 1000000000ull;
			continue;
		}
		if (r == 0)
			set_owner_locked(lk);
		else
			atomic_store(&lk->state, RBDL_LOCK_UNLOCKED);
		lk->want_acquire = false;
		lk->last_error = r == -EAGAIN ? -ESHUTDOWN : r;
		lk->acquire_gen++;
		pthread_cond_broadcast(&lk->cv);
		/* Resume the parked writes before honouring any release
		 * request, so every acquisition makes progress. */
		if (r == 0) {
			resume_owner_locked(lk);
			continue;
		}
		struct rbdl_lkwaiter *w = take_parked_locked(lk);

		pthread_mutex_unlock(&lk->mu);
		rbdl_log("image %s: cannot acquire the exclusive lock (%d)",
			 img->name, r);
		resume_all(w, r == -EBUSY ? -EROFS : r);
		pthread_mutex_lock(&lk->mu);
	}
	pthread_mutex_unlock(&lk->mu);
}

static void lock_task(struct rbdl_ctl_task *t)
{
	struct rbdl_lock *lk = container_of(t, struct rbdl_lock, task);

	lock_run(lk->img, false);
}

/* ---- public entry points ------------------------------------------------ */

static const struct rbdl_watch_listener lock_listener;

int rbdl_lock_init(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;
	uint64_t features = atomic_load(&img->features);

	/* rbd_snap_set sets the lock up again on the same struct: the watch
	 * callback may be reading it (it sees DISABLED until the end). */
	if (!lk) {
		lk = calloc(1, sizeof(*lk));
		if (!lk)
			return -ENOMEM;
		atomic_init(&lk->state, RBDL_LOCK_DISABLED);
		img->lk = lk;
		rbdl_watch_listen(img, RBDL_WATCH_SLOT_LOCK, &lock_listener);
	}

	atomic_init(&lk->writes, 0);
	atomic_init(&lk->resuming, false);
	lk->resume_active = false;
	lk->img = img;
	lk->notifies = 0;
	atomic_store_explicit(&lk->blocklisted, false, memory_order_relaxed);
	lk->parked_head = lk->parked_tail = NULL;
	lk->task_live = lk->stop = lk->want_release = lk->want_acquire = false;
	lk->retry_due = 0;
	lk->user_held = false;
	lk->last_error = 0;
	lk->acquire_gen = lk->owner_seq = 0;
	pthread_mutex_init(&lk->mu, NULL);
	pthread_cond_init(&lk->cv, NULL);
	lk->inited = true;
	if (img->read_only || !(features & RBD_FEATURE_EXCLUSIVE_LOCK)) {
		atomic_init(&lk->state, RBDL_LOCK_DISABLED);
		return 0;
	}
	lk->gid = rados_get_instance_id(img->cluster);
	snprintf(lk->cookie, sizeof(lk->cookie), "auto %" PRIu64,
		 img->watch_cookie);
	/* The watch callback may already read state: store, not init. */
	rbdl_ctl_task_init(&lk->task, RBDL_CTL_INTERNAL, lock_task);
	lk->task_live = true;
	atomic_store(&lk->state, RBDL_LOCK_UNLOCKED);
	return 0;
}

void rbdl_lock_shutdown(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;

	if (!lk || !lk->inited)
		return;
	if (lk->task_live) {
		pthread_mutex_lock(&lk->mu);
		lk->stop = true;
		lk->task_live = false;	/* no kicks from here on */
		pthread_cond_broadcast(&lk->cv);
		pthread_mutex_unlock(&lk->mu);
		/* No more runs on the lane; the last one, here, releases the
		 * lock if we own it and fails the parked writes. */
		rbdl_ctl_task_retire(&lk->task);
		lock_run(img, true);
	}
	/* The notifications still in flight use the image's I/O context. */
	pthread_mutex_lock(&lk->mu);
	while (lk->notifies)
		pthread_cond_wait(&lk->cv, &lk->mu);
	pthread_mutex_unlock(&lk->mu);
	atomic_store(&lk->state, RBDL_LOCK_DISABLED);
	pthread_cond_destroy(&lk->cv);
	pthread_mutex_destroy(&lk->mu);
	lk->inited = false;
}

static void lock_rewatched(struct rbdl_image *img, uint64_t new_handle)
{
	struct rbdl_lock *lk = img->lk;
	char cookie[sizeof(lk->cookie)];

	if (!lk->inited)
		return;
	pthread_mutex_lock(&lk->mu);
	snprintf(cookie, sizeof(cookie), "auto %" PRIu64, new_handle);
	if (rbdl_lock_is_owner(img)) {	/* OWNER or MAINT */
		uint8_t in[256];
		long n = rbdl_encode_lock_set_cookie(in, sizeof(in), LOCK_NAME,
						     RBDL_LOCK_EXCLUSIVE,
						     lk->cookie, LOCK_TAG,
						     cookie);
		int r = n < 0 ? (int)n
			      : rbdl_cls_write(img->md_io, img->header_oid,
					       "lock", "set_cookie", in,
					       (size_t)n);

		if (r < 0) {
			/* librbd: release and re-acquire later. */
			rbdl_err("image %s: cannot move the lock to the new "
				 "watch (%d); releasing it", img->name, r);
			lk->want_release = true;
			wake_locked(lk);
			pthread_mutex_unlock(&lk->mu);
			return;
		}
	}
	snprintf(lk->cookie, sizeof(lk->cookie), "%s", cookie);
	pthread_mutex_unlock(&lk->mu);
}

static bool write_try(struct rbdl_image *img, bool resumed)
{
	struct rbdl_lock *lk = img->lk;

	if (atomic_load_explicit(&lk->state, memory_order_relaxed) ==
	    RBDL_LOCK_DISABLED)
		return true;
	/* seq_cst increment then load: pairs with the lock task's
	 * store of RELEASING then load of writes (Dekker): either the
	 * releaser waits for us, or we see RELEASING and park.  resuming
	 * is loaded after state (set_owner_locked). */
	atomic_fetch_add(&lk->writes, 1);
	if (atomic_load(&lk->state) == RBDL_LOCK_OWNER &&
	    (resumed || !atomic_load(&lk->resuming)))
		return true;
	rbdl_lock_write_end(img);
	return false;
}

bool rbdl_lock_write_try(struct rbdl_image *img)
{
	return write_try(img, false);
}

static bool write_begin(struct rbdl_image *img, struct rbdl_lkwaiter *w,
			bool resumed)
{
	struct rbdl_lock *lk = img->lk;

	if (write_try(img, resumed))
		return true;
	pthread_mutex_lock(&lk->mu);
	if (atomic_load(&lk->state) == RBDL_LOCK_DISABLED) {
		/* The feature was just disabled (rbdl_lock_feature_off). */
		pthread_mutex_unlock(&lk->mu);
		return true;
	}
	if (atomic_load(&lk->state) == RBDL_LOCK_OWNER &&
	    (resumed || !atomic_load(&lk->resuming))) {
		/* Acquired meanwhile; the releaser needs mu to start, so
		 * the count is visible to it. */
		atomic_fetch_add(&lk->writes, 1);
		pthread_mutex_unlock(&lk->mu);
		return true;
	}
	w->next = NULL;
	if (lk->parked_tail)
		lk->parked_tail->next = w;
	else
		lk->parked_head = w;
	lk->parked_tail = w;
	wake_locked(lk);
	pthread_mutex_unlock(&lk->mu);
	return false;
}

bool rbdl_lock_write_begin(struct rbdl_image *img, struct rbdl_lkwaiter *w)
{
	return write_begin(img, w, false);
}

bool rbdl_lock_write_resumed(struct rbdl_image *img, struct rbdl_lkwaiter *w)
{
	return write_begin(img, w, true);
}

void rbdl_lock_write_nest(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;

	if (atomic_load_explicit(&lk->state, memory_order_relaxed) ==
	    RBDL_LOCK_DISABLED)
		return;
	/* seq_cst as the gate's: the count the caller holds keeps the
	 * releaser waiting, so no Dekker check is needed. */
	atomic_fetch_add(&lk->writes, 1);
}

void rbdl_lock_write_end(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;

	if (atomic_load_explicit(&lk->state, memory_order_relaxed) ==
	    RBDL_LOCK_DISABLED)
		return;
	int st;

	/* The releaser and a maintenance op both wait for the drain.
	 * seq_cst decrement then load of state: the other half of the
	 * Dekker pair with the releaser's store then load of writes. */
	if (atomic_fetch_sub(&lk->writes, 1) == 1 &&
	    ((st = atomic_load(&lk->state)) == RBDL_LOCK_RELEASING ||
	     st == RBDL_LOCK_MAINT)) {
		pthread_mutex_lock(&lk->mu);
		wake_locked(lk);
		pthread_mutex_unlock(&lk->mu);
	}
}

static void lock_notify(struct rbdl_image *img, uint64_t notify_id,
			uint64_t handle, const struct rbdl_notify_msg *m)
{
	struct rbdl_lock *lk = img->lk;
	/* A snapshot of the state for the reply; a change racing with it is
	 * decided again under mu below where it matters. */
	int st = atomic_load(&lk->state);
	bool mine = m->has_client && m->client_gid == lk->gid &&
		    m->client_handle == img->watch_cookie;
	uint8_t resp[16];
	long rl = 0;

	switch (m->op) {
	case RBDL_NOTIFY_ACQUIRED_LOCK:
		/* A new owner.  A REQUEST_LOCK that reached librbd while it
		 * was still finishing its acquisition is answered but
		 * dropped, so a waiting acquisition asks the new owner
		 * again now (librbd does the same on ACQUIRED_LOCK). */
		if (!mine) {
			pthread_mutex_lock(&lk->mu);
			lk->owner_seq++;
			wake_locked(lk);
			pthread_mutex_unlock(&lk->mu);
		}
		break;
	case RBDL_NOTIFY_HEADER_UPDATE:
	case RBDL_NOTIFY_ASYNC_PROGRESS:
	case RBDL_NOTIFY_ASYNC_COMPLETE:
	case RBDL_NOTIFY_QUIESCE:
	case RBDL_NOTIFY_UNQUIESCE:
		break;
	case RBDL_NOTIFY_RELEASED_LOCK:
		pthread_mutex_lock(&lk->mu);
		lk->owner_seq++;
		wake_locked(lk);
		pthread_mutex_unlock(&lk->mu);
		break;
	case RBDL_NOTIFY_REQUEST_LOCK:
		if (mine || (st != RBDL_LOCK_OWNER && st != RBDL_LOCK_MAINT))
			break;
		pthread_mutex_lock(&lk->mu);
		if (lk->user_held || lk->manual) {
			rl = rbdl_encode_notify_response(resp, sizeof(resp),
							 -EROFS);
		} else {
			rl = rbdl_encode_notify_response(resp, sizeof(resp), 0);
			lk->want_release = true;
			wake_locked(lk);
		}
		pthread_mutex_unlock(&lk->mu);
		break;
	default:
		/* Maintenance requests (resize, snapshot create, ...) go to
		 * the lock owner: decline, the requester then takes the lock
		 * and does the work itself (during one of our own maintenance
		 * ops too: it then asks for the lock, which is released when
		 * our op ends). */
		if (st == RBDL_LOCK_OWNER || st == RBDL_LOCK_MAINT)
			rl = rbdl_encode_notify_response(resp, sizeof(resp),
							 -EOPNOTSUPP);
		break;
	}
	rados_notify_ack(img->md_io, img->header_oid, notify_id, handle,
			 rl > 0 ? (const char *)resp : NULL,
			 rl > 0 ? (int)rl : 0);
}

/* A header notification (watch.h): ours to answer while the lock is in
 * use on this image. */
static bool lock_on_notify(struct rbdl_image *img, uint64_t notify_id,
			   uint64_t handle, const struct rbdl_notify_msg *m)
{
	if (!m || lock_state(img) == RBDL_LOCK_DISABLED)
		return false;
	/* QUIESCE / UNQUIESCE are the quiesce watchers' (quiesce.h) to
	 * answer, lock or no lock. */
	if (m->op == RBDL_NOTIFY_QUIESCE || m->op == RBDL_NOTIFY_UNQUIESCE)
		return false;
	lock_notify(img, notify_id, handle, m);
	return true;
}

static const struct rbdl_watch_listener lock_listener = {
	.notify = lock_on_notify,
	.rewatched = lock_rewatched,
};

void rbdl_lock_free(struct rbdl_image *img)
{
	free(img->lk);
	img->lk = NULL;
}

bool rbdl_lock_enabled(const struct rbdl_image *img)
{
	return lock_state(img) != RBDL_LOCK_DISABLED;
}

bool rbdl_lock_in_maint(const struct rbdl_image *img)
{
	return lock_state(img) == RBDL_LOCK_MAINT;
}

bool rbdl_lock_is_owner(struct rbdl_image *img)
{
	int st = lock_state(img);

	return st == RBDL_LOCK_OWNER || st == RBDL_LOCK_MAINT;
}

int rbdl_lock_check_owner(struct rbdl_image *img, int *is_owner)
{
	char cookie[RBDL_LOCK_COOKIE_MAX], *out = NULL;
	size_t outlen = 0;
	uint8_t in[256];
	long n;
	int r;

	*is_owner = 0;
	if (!rbdl_lock_is_owner(img))
		return 0;
	/* Relaxed: a flag with nothing published through it. */
	if (atomic_load_explicit(&img->lk->blocklisted, memory_order_relaxed))
		return -ESHUTDOWN;
	rbdl_lock_cookie(img, cookie, sizeof(cookie));
	n = rbdl_encode_lock_assert(in, sizeof(in), LOCK_NAME,
				    RBDL_LOCK_EXCLUSIVE, cookie, LOCK_TAG);
	if (n < 0)
		return (int)n;
	/* librbd (is_exclusive_lock_owner) pings the OSD: a peer may have
	 * broken our lock and blocklisted us (-ESHUTDOWN then). */
	r = rbdl_cls_read(img->md_io, img->header_oid, "lock", "assert_locked",
			  in, (size_t)n, &out, &outlen);
	if (r == 0 && out)
		rados_buffer_free(out);
	if (r == -EBUSY || r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	*is_owner = 1;
	return 0;
}

void rbdl_lock_note_blocklisted(struct rbdl_image *img)
{
	if (img->lk)
		atomic_store_explicit(&img->lk->blocklisted, true,
				      memory_order_relaxed);
}

int rbdl_lock_maint_begin(struct rbdl_image *img, bool try_only)
{
	struct rbdl_lock *lk = img->lk;
	int r;

	if (atomic_load(&lk->state) == RBDL_LOCK_DISABLED)
		return 0;
	pthread_mutex_lock(&lk->mu);
	while (atomic_load(&lk->state) != RBDL_LOCK_OWNER) {
		unsigned gen = lk->acquire_gen;

		if (lk->stop) {
			pthread_mutex_unlock(&lk->mu);
			return -ESHUTDOWN;
		}
		lk->want_acquire = true;
		lk->try_only = try_only;
		wake_locked(lk);
		while (gen == lk->acquire_gen && !lk->stop)
			pthread_cond_wait(&lk->cv, &lk->mu);
		if (atomic_load(&lk->state) != RBDL_LOCK_OWNER &&
		    lk->last_error < 0) {
			r = lk->last_error;
			pthread_mutex_unlock(&lk->mu);
			/* Locked by something that does not hand it over:
			 * librbd refuses the op as for writes. */
			return r == -EBUSY ? -EROFS : r;
		}
	}
	/* Under mu the lock's task cannot start a release; seq_cst
	 * store pairs with the write gate's increment-then-load (as for
	 * RELEASING): a write either is counted here or parks. */
	atomic_store(&lk->state, RBDL_LOCK_MAINT);
	while (atomic_load(&lk->writes) != 0)
		pthread_cond_wait(&lk->cv, &lk->mu);
	pthread_mutex_unlock(&lk->mu);
	return 0;
}

void rbdl_lock_maint_end(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;

	if (atomic_load(&lk->state) != RBDL_LOCK_MAINT)
		return;
	pthread_mutex_lock(&lk->mu);
	set_owner_locked(lk);
	wake_locked(lk);	/* a release asked for meanwhile */
	resume_owner_locked(lk);
	pthread_mutex_unlock(&lk->mu);
}

void rbdl_lock_cookie(struct rbdl_image *img, char *buf, size_t len)
{
	struct rbdl_lock *lk = img->lk;

	pthread_mutex_lock(&lk->mu);
	snprintf(buf, len, "%s", lk->cookie);
	pthread_mutex_unlock(&lk->mu);
}

/* Ask the lock's task to release the lock we own and wait until it
 * is released (lk->mu held; even a user-held lock goes). */
static void release_and_wait_locked(struct rbdl_lock *lk)
{
	lk->user_held = false;
	lk->want_release = true;
	wake_locked(lk);
	while (atomic_load(&lk->state) == RBDL_LOCK_OWNER ||
	       atomic_load(&lk->state) == RBDL_LOCK_RELEASING)
		pthread_cond_wait(&lk->cv, &lk->mu);
}

void rbdl_lock_drop(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;

	if (atomic_load(&lk->state) == RBDL_LOCK_DISABLED)
		return;
	pthread_mutex_lock(&lk->mu);
	if (atomic_load(&lk->state) == RBDL_LOCK_OWNER)
		release_and_wait_locked(lk);
	pthread_mutex_unlock(&lk->mu);
}

/* Whether the open has a managed lock the application may use: librbd
 * has none (-EINVAL) without the feature, on read-only opens and while
 * the handle is at a snapshot (its refresh drops the lock there). */
static bool user_lock(struct rbdl_image *img)
{
	return lock_state(img) != RBDL_LOCK_DISABLED &&
	       !atomic_load(&img->at_snap);
}

int rbdl_lock_acquire_user(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;
	int r;

	if (!user_lock(img))
		return -EINVAL;
	pthread_mutex_lock(&lk->mu);
	lk->user_held = true;
	lk->manual = true;	/* for good, as librbd's policy */
	while (atomic_load(&lk->state) != RBDL_LOCK_OWNER) {
		unsigned gen = lk->acquire_gen;

		lk->want_acquire = true;
		wake_locked(lk);
		while (gen == lk->acquire_gen)
			pthread_cond_wait(&lk->cv, &lk->mu);
		if (atomic_load(&lk->state) != RBDL_LOCK_OWNER &&
		    lk->last_error < 0) {
			r = lk->last_error;
			lk->user_held = false;
			pthread_mutex_unlock(&lk->mu);
			return r;
		}
	}
	pthread_mutex_unlock(&lk->mu);
	return 0;
}

int rbdl_lock_release_user(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;

	if (!user_lock(img))
		return -EINVAL;
	pthread_mutex_lock(&lk->mu);
	if (atomic_load(&lk->state) != RBDL_LOCK_OWNER) {
		pthread_mutex_unlock(&lk->mu);
		return -EINVAL;
	}
	release_and_wait_locked(lk);
	pthread_mutex_unlock(&lk->mu);
	return 0;
}

/* ---- owner queries (rbd_lock_get_owners / rbd_lock_break) --------------- */

/*
 * The managed lock's current owner, as librbd's GetLockerRequest sees it:
 * 0 and *li filled (free with rbdl_lock_info_free), -ENOENT when nobody
 * holds it, -EBUSY when it is held by something that is not a managed
 * exclusive lock (foreign tag, shared, unknown cookie).
 */
static int get_locker(struct rbdl_image *img, struct rbdl_lock_info *li)
{
	uint64_t h;
	int r = rbdl_lockobj_info(img->md_io, img->header_oid, li);

	if (r < 0)
		return r;
	if (li->n_lockers == 0) {
		rbdl_lock_info_free(li);
		return -ENOENT;
	}
	if (strcmp(li->tag ? li->tag : "", LOCK_TAG) ||
	    li->lock_type != RBDL_LOCK_EXCLUSIVE || li->n_lockers != 1 ||
	    parse_cookie(li->lockers[0].cookie, &h) < 0) {
		rbdl_lock_info_free(li);
		return -EBUSY;
	}
	return 0;
}

/* "v2:1.2.3.4:0/5" -> "1.2.3.4:0/5" (entity_addr_t::get_legacy_str). */
static const char *legacy_addr(const char *addr)
{
	if (!strncmp(addr, "v1:", 3) || !strncmp(addr, "v2:", 3))
		return addr + 3;
	if (!strncmp(addr, "any:", 4))
		return addr + 4;
	return addr;
}

int rbdl_lock_get_owner(struct rbdl_image *img, char *owner, size_t cap)
{
	struct rbdl_lock_info li;
	int r;

	if (!user_lock(img))
		return -EINVAL;
	r = get_locker(img, &li);
	if (r < 0)
		return r;
	snprintf(owner, cap, "%s", legacy_addr(li.lockers[0].addr));
	rbdl_lock_info_free(&li);
	return 0;
}

int rbdl_lock_break_owner(struct rbdl_image *img, const char *owner)
{
	struct rbdl_lock_info li;
	int r;

	if (img->open_ro)
		return -EROFS;
	if (!user_lock(img))
		return -EINVAL;
	if (rbdl_lock_is_owner(img))
		return -EBUSY;
	r = get_locker(img, &li);
	if (r < 0)
		return r;
	const char *addr = legacy_addr(li.lockers[0].addr);

	if (strcmp(addr, owner)) {
		rbdl_lock_info_free(&li);
		return -EBUSY;
	}
	/* librbd (rbd_blocklist_on_break_lock): fence the owner first, so it
	 * cannot write after its lock is gone. */
	r = rados_blocklist_add(img->cluster, (char *)addr, 0);
	if (r < 0) {
		rbdl_err("image %s: cannot blocklist lock owner %s (%d)",
			 img->name, addr, r);
	} else {
		r = rbdl_lockobj_break(img->md_io, img->header_oid, &li.lockers[0]);
	}
	rbdl_lock_info_free(&li);
	return r;
}

/* ---- the feature turned off or on (rbd_update_features) ----------------- */

void rbdl_lock_feature_off(struct rbdl_image *img)
{
	struct rbdl_lock *lk = img->lk;
	struct rbdl_lkwaiter *w;
	bool held;

	if (!lk || !lk->inited || atomic_load(&lk->state) == RBDL_LOCK_DISABLED)
		return;
	pthread_mutex_lock(&lk->mu);
	held = rbdl_lock_is_owner(img);
	/* Writes pass the gate from now on; parked ones go ahead (their
	 * resume re-runs the gate, which sees DISABLED).  mu and cv stay:
	 * a write may still be on its way through the slow path. */
	atomic_store(&lk->state, RBDL_LOCK_DISABLED);
	lk->stop = true;
	w = take_parked_locked(lk);
	bool live = lk->task_live;

	lk->task_live = false;
	pthread_cond_broadcast(&lk->cv);
	pthread_mutex_unlock(&lk->mu);
	if (live)
		rbdl_ctl_task_retire(&lk->task);
	if (held)
		finish_release(img);	/* writes were drained by the caller */
	resume_all(w, 0);
}

int rbdl_lock_feature_on(struct rbdl_image *img)
{
	/* As rbd_snap_set back to HEAD: the lock was set up disabled (no
	 * task), so it can be set up again from the new features. */
	rbdl_lock_shutdown(img);
	return rbdl_lock_init(img);
}
