/*
 * completion.h - rbd_completion_t objects and per-image completion delivery.
 *
 * Role: the object behind rbd_completion_t, and the machinery that turns
 * "this request finished" into librbd's observable sequence
 *
 *     callback -> pushed to the poll queue -> eventfd/pipe written -> COMPLETE
 *
 * with callbacks never run inside the submitting call and serialized per
 * image, as librbd 16.2 does.
 *
 * Delivery is combining, not handing off: whichever thread finishes a
 * request (normally librados' callback thread) pushes the completion onto
 * the image's lock-free "done" stack and, if no other thread is currently
 * delivering for that image, becomes the deliverer and drains the stack in
 * batches.  A batch runs each callback in submission-completion order,
 * appends the batch to the poll queue under one lock, writes the eventfd
 * once with the batch count (pipe: one byte per completion), then marks the
 * completions COMPLETE and wakes waiters only if someone waits (futex on the
 * state word).  No thread of librbdlite's own is involved.
 *
 * Lifetime: a completion is refcounted.  The user holds one reference from
 * rbd_aio_create_completion() to rbd_aio_release(); an armed operation holds
 * one until delivery is finished; the poll queue holds one while the
 * completion sits in it.  So rbd_aio_release() is safe inside the callback
 * (qemu) or right after polling (fio).  Objects come from a slab and are
 * reused; the handle carries the object's generation, so a double release
 * is detected (and ignored with a diagnostic) also after the memory went
 * to a newer completion.
 */
#ifndef RBDL_COMPLETION_H
#define RBDL_COMPLETION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rados/librados.h>

/* A callback receives the completion's handle (rbdl_comp_handle), never
 * the object's address: the user's callbacks pass it back to the API,
 * the library's own take the object with rbdl_comp_untag. */
typedef void *rbdl_user_comp_t;
typedef void (*rbdl_callback_t)(rbdl_user_comp_t c, void *arg);

enum rbdl_comp_state {
	RBDL_COMP_FREE = 0,	/* in the slab */
	RBDL_COMP_IDLE,		/* created, no operation armed yet */
	RBDL_COMP_PENDING,	/* an operation is in flight */
	RBDL_COMP_CALLBACK,	/* done; the callback is running or queued */
	RBDL_COMP_COMPLETE,	/* callback returned, event posted */
};

#define RBDL_COMP_MAGIC 0x52424443u	/* "RBDC" */

struct rbdl_delivery;

struct rbdl_comp {
	uint32_t magic;
	_Atomic uint32_t state;		/* enum rbdl_comp_state; futex word */
	/* Bumped by every rbdl_comp_create() of this memory and carried in
	 * the user's handle (rbdl_comp_handle), so a handle kept past its
	 * rbd_aio_release() does not name the completion that reuses the
	 * slot.  Never touched by the slab (which links through word 0). */
	uint16_t gen;
	atomic_uint refs;
	atomic_uint waiters;		/* threads in rbd_aio_wait_for_complete */
	atomic_bool released;		/* user reference dropped */
	bool notify;			/* queue for rbd_poll_io_events */
	bool internal;			/* used by a synchronous rbd_* call */
	bool user_flush;		/* armed for an application's flush */
	ssize_t rval;
	/* Internal reads from a backing image (io.c): track_data asks the
	 * read to report in data_end how many bytes from the start of its
	 * buffer the objects really held (the rest was zero-filled);
	 * data_base is the caller's note of where that buffer sits. */
	bool track_data;
	uint64_t data_base;
	uint64_t data_end;
	rbdl_callback_t cb;
	void *arg;
	struct rbdl_delivery *dl;	/* set when armed */
	struct rbdl_comp *dnext;	/* link in the image's done stack */
	struct rbdl_comp *pnext;	/* link in the image's poll queue */
};

/* Per-image delivery state (embedded in the image it delivers for). */
struct rbdl_delivery {
	_Atomic(struct rbdl_comp *) done;	/* LIFO of finished requests */
	atomic_int running;			/* a thread is delivering */
	pthread_mutex_t poll_lock;		/* protects the poll queue */
	struct rbdl_comp *poll_head, *poll_tail;
	int event_fd;				/* -1 when not registered */
	int event_type;				/* EVENT_TYPE_PIPE / _EVENTFD */
	atomic_bool event_set;
	/*
	 * Operations armed on this image and not yet delivered, plus threads
	 * currently inside rbdl_comp_complete() for it.  rbd_close waits for
	 * zero (futex word); nothing touches the image after its decrement.
	 */
	_Atomic uint32_t ops;
	atomic_bool closing;
};

int rbdl_delivery_init(struct rbdl_delivery *d);
void rbdl_delivery_destroy(struct rbdl_delivery *d);

/* Allocate an IDLE completion with one user reference.  -ENOMEM. */
int rbdl_comp_create(void *arg, rbdl_callback_t cb, struct rbdl_comp **out);

/*
 * The user's rbd_completion_t for c: c's address with its generation in
 * bits 48-62 (on 64-bit systems; 32-bit ones get the bare address).
 * What rbd_aio_create_completion() returns, what a callback receives and
 * what rbd_poll_io_events() hands out; opaque to callers, who only pass
 * it back.  Linux places user memory below 2^47 on x86-64 and arm64
 * unless mmap is asked for more, which the slab never does.
 */
#if UINTPTR_MAX > 0xffffffffu
#define RBDL_COMP_ADDR_MASK (((uintptr_t)1 << 48) - 1)
#define RBDL_COMP_GEN_BITS(g) ((uintptr_t)(g) << 48)
#define RBDL_COMP_GEN_OF(h) ((uintptr_t)(h) >> 48)
#define RBDL_COMP_GEN_MASK 0x7fffu
#else	/* no spare bits in a 32-bit address: the handle is the address */
#define RBDL_COMP_ADDR_MASK UINTPTR_MAX
#define RBDL_COMP_GEN_BITS(g) ((uintptr_t)0)
#define RBDL_COMP_GEN_OF(h) ((uintptr_t)0)
#define RBDL_COMP_GEN_MASK 0u
#endif

static inline void *rbdl_comp_handle(const struct rbdl_comp *c)
{
	return (void *)((uintptr_t)c | RBDL_COMP_GEN_BITS(c->gen));
}

/* The completion behind a handle known to be live: what an internal
 * callback (one given to rbdl_comp_create by the library) does with the
 * handle it receives. */
static inline struct rbdl_comp *rbdl_comp_untag(void *h)
{
	return (struct rbdl_comp *)((uintptr_t)h & RBDL_COMP_ADDR_MASK);
}

/* Validate a user handle: NULL if it is not a live completion, including
 * a stale handle whose memory a newer completion now uses. */
struct rbdl_comp *rbdl_comp_from_user(void *c);

/*
 * Arm c for an operation delivered through d (the image's delivery).
 * Returns 0, or -EINVAL if c is not IDLE (already used: completions are
 * single-shot, as in librbd).  notify says whether the completion goes to
 * the poll queue when an event fd is set.
 */
int rbdl_comp_arm(struct rbdl_comp *c, struct rbdl_delivery *d, bool notify);
/* Undo rbdl_comp_arm for an operation refused before c was handed to
 * anything that could complete it: c is IDLE (reusable) again. */
void rbdl_comp_disarm(struct rbdl_comp *c);

/* The armed operation finished with rval: deliver it (any thread). */
void rbdl_comp_complete(struct rbdl_comp *c, ssize_t rval);

/*
 * Complete c with rval from a librados thread, never inline: librbd
 * reports even early errors through the completion, and a callback must
 * never run inside the submitting call.  rados_aio_flush_async() on
 * defer_io (an I/O context that never writes) completes at once from
 * librados' finisher thread.  Out of memory in librados: completes inline,
 * the lesser evil, with a diagnostic.
 */
void rbdl_comp_complete_deferred(struct rbdl_comp *c, ssize_t rval,
				 rados_ioctx_t defer_io);

/* Drop the user reference (rbd_aio_release). */
void rbdl_comp_release(struct rbdl_comp *c);

/* Block until COMPLETE.  Returns 0. */
int rbdl_comp_wait(struct rbdl_comp *c);

static inline bool rbdl_comp_is_complete(struct rbdl_comp *c)
{
	/* Acquire: pairs with the release store of CALLBACK, so rval is
	 * visible once this returns true. */
	return atomic_load_explicit(&c->state, memory_order_acquire) >=
	       RBDL_COMP_CALLBACK;
}

/* rbd_set_image_notification / rbd_poll_io_events */
int rbdl_delivery_set_notification(struct rbdl_delivery *d, int fd, int type);
int rbdl_delivery_poll(struct rbdl_delivery *d, void **out, int max);

/*
 * Hold / drop an extra count on the image's operations, keeping the image
 * alive across work after a completion was handed over.  get is only legal
 * while the caller already holds a count (an armed operation).
 */
static inline void rbdl_delivery_get(struct rbdl_delivery *d)
{
	atomic_fetch_add_explicit(&d->ops, 1, memory_order_relaxed);
}
void rbdl_delivery_put(struct rbdl_delivery *d);

/* Wait until no armed operation remains on the image (close). */
void rbdl_delivery_wait_idle(struct rbdl_delivery *d);

#endif /* RBDL_COMPLETION_H */
