/*
 * lock.h - the RBD exclusive lock, interoperating with librbd and krbd.
 *
 * Role: for images with the exclusive-lock feature, writes happen only
 * while librbdlite owns "rbd_lock" on the header (cls lock, tag
 * "internal", cookie "auto <watch handle>"), as librbd does.  The lock is
 * taken lazily by the first write, handed over when another client asks for
 * it (REQUEST_LOCK), and taken over from a dead owner only after
 * blocklisting it (rbd-protocol.md section 5).
 *
 * States (state, an atomic read by the write path):
 *
 *   DISABLED   feature off: writes need no lock
 *   UNLOCKED --first write--> ACQUIRING --ok--> OWNER
 *      ^                          |               | REQUEST_LOCK / close /
 *      |                          v error         v rbd_lock_release
 *      +----------------- queued writes fail   RELEASING (drain writes,
 *      +-----------------------------------------  unlock, RELEASED_LOCK)
 *   OWNER <--> MAINT (ops/: resize/snapshot ops; writes park, peers'
 *                     release requests wait until the op ends)
 *
 * Threading: the slow work (cls lock calls, notifies that wait up to 5 s,
 * header refresh, object map load) runs in the lock's task on the
 * process-wide control context's internal lane (core/ctl.h), shared by
 * every open image; it is a state machine that returns instead of
 * waiting (for a drain, a peer's release, the retry timer) and is kicked
 * again by what it waits for.  It never runs on the I/O path: a write
 * while OWNER costs two atomic operations (the in-flight count and the
 * state check).  A write that finds the lock not held is parked
 * (parked_head/parked_tail, FIFO) and resumed by the task after it
 * acquired the lock; the task resumes a whole batch before it honours
 * the next release request, so two writers ping-ponging the lock both
 * make progress.  Header notifications reach the lock through its
 * subscription to the header watch (watch.h); the callback only records
 * requests and kicks the task; it never blocks.
 *
 * Ownership: struct rbdl_lock is allocated by rbdl_lock_init and freed by
 * rbdl_lock_free at close; the image's lk pointer is NULL without it.
 */
#ifndef RBDL_LOCK_H
#define RBDL_LOCK_H

#include <pthread.h>
#include <rados/librados.h>

#include "core/ctl.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>


/* "auto " and a u64 in decimal, NUL. */
#define RBDL_LOCK_COOKIE_MAX 32

enum rbdl_lock_state {
	RBDL_LOCK_DISABLED = 0,
	RBDL_LOCK_UNLOCKED,
	RBDL_LOCK_ACQUIRING,
	RBDL_LOCK_OWNER,
	RBDL_LOCK_RELEASING,
	RBDL_LOCK_MAINT,	/* owner, a maintenance op runs: writes park */
};

struct rbdl_image;

/* A parked write; resume(w, 0) re-runs the lock gate, resume(w, err)
 * fails it.  Called from the lock's task. */
struct rbdl_lkwaiter {
	struct rbdl_lkwaiter *next;
	void (*resume)(struct rbdl_lkwaiter *w, int err);
};

struct rbdl_lock {
	_Atomic int state;		/* enum rbdl_lock_state */
	atomic_long writes;		/* writes in flight under the lock */
	pthread_mutex_t mu;		/* protects everything below */
	pthread_cond_t cv;		/* waiters for the state */
	struct rbdl_ctl_task task;	/* lock_run on the internal lane */
	struct rbdl_image *img;
	bool inited;			/* mu and cv exist */
	bool task_live;			/* task set up, not retired */
	bool stop;
	bool want_release;		/* a peer asked for the lock */
	bool want_acquire;		/* rbd_lock_acquire or parked writes */
	bool user_held;			/* rbd_lock_acquire: refuse requests */
	/* rbd_lock_acquire was called on this open: librbd's policy is
	 * then the application's for good (StandardPolicy): writes no
	 * longer take the lock by themselves (-EROFS without it) and peers'
	 * requests are refused while we own it.  Kept across
	 * rbdl_lock_init (rbd_snap_set). */
	bool manual;
	/* The acquisition asked for must not ask a live owner to release
	 * (librbd's try_acquire_lock: snapshot rollback). */
	bool try_only;
	int last_error;			/* outcome of the last acquisition */
	unsigned acquire_gen;		/* bumped after every attempt */
	unsigned owner_seq;		/* RELEASED/ACQUIRED_LOCK from peers */
	unsigned request_seq;		/* owner_seq when we last asked */
	uint64_t retry_due;		/* asked a live owner: retry at (ns) */
	unsigned notifies;		/* lock notifications in flight */
	atomic_bool blocklisted;	/* a write under the lock got -ESHUTDOWN */
	struct rbdl_lkwaiter *parked_head, *parked_tail;	/* parked writes (FIFO) */
	/* OWNER, and the writes parked before are being resumed: new writes
	 * park behind them (seq_cst; set before OWNER is stored, cleared
	 * once none is left parked), so none overtakes a parked one. */
	atomic_bool resuming;
	bool resume_active;		/* a resume_owner_locked loop runs */
	uint64_t gid;			/* our client id */
	char cookie[RBDL_LOCK_COOKIE_MAX];	/* "auto <watch handle>" */
};

/* Set up (allocating img->lk and subscribing to the header watch the
 * first time); sets the lock's task up when the image needs one. */
int rbdl_lock_init(struct rbdl_image *img);
/* Release the lock if held and retire the lock's task (close, and
 * rbd_snap_set before setting it up again).  NULL lock: nothing. */
void rbdl_lock_shutdown(struct rbdl_image *img);
/* Free img->lk, after shutdown and once the watch is gone (close). */
void rbdl_lock_free(struct rbdl_image *img);

/* Is the lock in use on this open (feature on, read-write HEAD)?  Is a
 * maintenance operation holding it (rbdl_lock_maint_begin)?  Both false
 * for an image without a lock. */
bool rbdl_lock_enabled(const struct rbdl_image *img);
bool rbdl_lock_in_maint(const struct rbdl_image *img);

/*
 * Write gate.  Returns true when the write may proceed now (the caller
 * must call rbdl_lock_write_end() when it finishes), false when w was
 * parked (resume() will run later, from the lock's task).
 */
bool rbdl_lock_write_begin(struct rbdl_image *img, struct rbdl_lkwaiter *w);
/* The gate again for w, resumed by the lock's owner: as
 * rbdl_lock_write_begin, but it does not park behind the other parked
 * writes being resumed (it is one of them). */
bool rbdl_lock_write_resumed(struct rbdl_image *img, struct rbdl_lkwaiter *w);
/*
 * The gate's fast path alone: true (counted, as by rbdl_lock_write_begin)
 * when the write may proceed now, false when it would have to wait (then
 * nothing is counted and nothing parked; rbdl_lock_write_begin decides).
 */
bool rbdl_lock_write_try(struct rbdl_image *img);
void rbdl_lock_write_end(struct rbdl_image *img);
/* One more write, counted without the gate: only while the caller holds
 * a count (so a release or maintenance waits for both); ended with
 * rbdl_lock_write_end. */
void rbdl_lock_write_nest(struct rbdl_image *img);

/* rbd_lock_acquire / rbd_lock_release / rbd_is_exclusive_lock_owner. */
int rbdl_lock_acquire_user(struct rbdl_image *img);
int rbdl_lock_release_user(struct rbdl_image *img);
bool rbdl_lock_is_owner(struct rbdl_image *img);
/* rbd_is_exclusive_lock_owner: *is_owner as our state says, confirmed
 * with the OSD (lock.assert_locked) as librbd does.  0, or the OSD's
 * error: -ESHUTDOWN when this client was blocklisted. */
int rbdl_lock_check_owner(struct rbdl_image *img, int *is_owner);
/* A write under the lock failed with -ESHUTDOWN (this client is
 * blocklisted): from now on rbdl_lock_check_owner says so, as librbd
 * does, even before every OSD has the new map. */
void rbdl_lock_note_blocklisted(struct rbdl_image *img);

/*
 * rbd_lock_get_owners / rbd_lock_break: the owner is the locker's address
 * as librbd reports it ("ip:port/nonce").  get_owner: 0, -ENOENT (not
 * locked), -EBUSY (locked by something else), -EINVAL (no managed lock on
 * this open: feature off or read-only).  break_owner: -EROFS, -EINVAL,
 * -EBUSY (we own it, or owner does not match), -ENOENT (not locked); on
 * success the owner is blocklisted and its lock broken.
 */
int rbdl_lock_get_owner(struct rbdl_image *img, char *owner, size_t cap);
int rbdl_lock_break_owner(struct rbdl_image *img, const char *owner);

/*
 * Maintenance operations (maint.c): rbdl_lock_maint_begin() takes the lock
 * like a write would (asking a live owner to release it), then moves
 * OWNER -> MAINT and waits until no write is in flight; new writes park
 * until rbdl_lock_maint_end() (MAINT -> OWNER, parked writes resumed, a
 * release a peer asked for meanwhile is honoured then).  Returns 0 (also
 * when the feature is off: nothing to hold) or the acquisition error
 * (-EROFS when the lock is held by something that will not release it).
 * try_only: take the lock only if nobody holds it (-EROFS if someone
 * does), as librbd's snapshot rollback does.
 * rbdl_lock_cookie() copies our current lock cookie (for assert_locked).
 */
int rbdl_lock_maint_begin(struct rbdl_image *img, bool try_only);
void rbdl_lock_maint_end(struct rbdl_image *img);
void rbdl_lock_cookie(struct rbdl_image *img, char *buf, size_t len);
/* Release the lock if we own it and wait until it is released (switching
 * the open image to a snapshot, as librbd's SetSnapRequest does). */
void rbdl_lock_drop(struct rbdl_image *img);

/*
 * rbd_update_features (ops/features.c), with maint_mu held and our writes
 * drained.  feature_off: the exclusive-lock feature was removed from the
 * header: retire the lock's task, let parked writes through, and if we
 * held the lock (MAINT), release it (object map, header lock,
 * RELEASED_LOCK).  The state is DISABLED afterwards.  feature_on: the
 * feature was added (the lock was DISABLED): set the lock up again from
 * img->features (UNLOCKED, taken by the next write).  0 or -errno.
 */
void rbdl_lock_feature_off(struct rbdl_image *img);
int rbdl_lock_feature_on(struct rbdl_image *img);

#endif /* RBDL_LOCK_H */
