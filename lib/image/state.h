/*
 * state.h - the state of an open RBD image, shared by the image layer's
 * modules (load, watch, refresh, parent, lock, objmap, updwatch, open)
 * and read by the data path.
 *
 * Role: one struct, no code.  The subsystems with state of their own
 * (exclusive lock, object map, update watchers) hang off it as pointers
 * to structs their modules define, so this header depends on none of
 * them; an image that has no use for one (a backing image has no lock, no
 * object map and no watchers) leaves it NULL, and every predicate of those
 * modules accepts NULL.
 *
 * Threading: the fields marked "immutable" never change after open.  The
 * mutable metadata the I/O path needs (size, the write I/O context carrying
 * the snapshot context) is published through atomics and changed only by a
 * refresh (refresh.h), which runs under refresh_lock on whichever thread
 * first needs it: a control call, the lock's acquisition, or the image's
 * refresh task on the control context for I/O (an I/O submitter never
 * refreshes: its request waits in the image's queue, io/request.c).  The header watch callback (watch.h) only acks notifications and
 * bumps refresh_seq; it never blocks.
 *
 * Ownership: the application owns the rados_ioctx_t it passed to rbd_open;
 * the image owns private duplicates (md_io for the header, data I/O
 * contexts for data objects), so later changes to the caller's ioctx do
 * not matter, as in librbd.  An rbd_image_t is a pointer to a struct
 * rbdl_handle that is never freed or reused, so a closed or bogus handle
 * is detected, never followed.
 */
#ifndef RBDL_IMAGE_STATE_H
#define RBDL_IMAGE_STATE_H

#include <pthread.h>
#include <rados/librados.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/avl.h"
#include "core/completion.h"
#include "core/ctl.h"
#include "core/striper.h"
#include "proto/cls_lock.h"
#include "rbd/features.h"

/* Features whose state a writer must maintain and librbdlite cannot yet
 * (writes and maintenance operations fail with -EROFS; a journaled
 * image's are run by the system's librbd instead, journal.h). */
#define RBDL_WRITE_UNSUPPORTED                                               \
	(RBD_FEATURE_JOURNALING | RBD_FEATURE_NON_PRIMARY |                  \
	 RBD_FEATURE_MIGRATING | RBD_FEATURE_DIRTY_CACHE)

#define RBDL_HANDLE_OPEN 0x52424449u	/* "RBDI" */
#define RBDL_HANDLE_CLOSED 0x52424458u
/* A handle whose image the system's librbd serves whole (api/whole.h). */
#define RBDL_HANDLE_WHOLE 0x52424457u	/* "RBDW" */

struct rbdl_image;
struct rbdl_lock;		/* lock.h */
struct rbdl_objmap;		/* objmap.h */
struct rbdl_updwatch;		/* updwatch.h */
struct rbdl_pview;		/* parent.h */
struct rbdl_backing;		/* parent.c */
struct rbdl_watch_listener;	/* watch.h */
struct rbdl_quiesce;		/* quiesce.h */

struct rbdl_whole;		/* api/whole.h */

struct rbdl_handle {
	_Atomic uint32_t magic;
	struct rbdl_image *img;		/* RBDL_HANDLE_OPEN */
	struct rbdl_whole *whole;	/* RBDL_HANDLE_WHOLE */
	struct rbdl_handle *next;	/* registry of all handles ever made */
};

/* A retired write I/O context, destroyed at close. */
struct rbdl_retired_io {
	struct rbdl_retired_io *next;
	rados_ioctx_t io;
};

/*
 * Flush barrier state (its logic is io/flush.c): operations are counted
 * per generation parity; a flush bumps the generation and waits for the
 * previous parity to drain.
 */
struct rbdl_flushq {
	_Atomic uint64_t gen;
	atomic_long count[2];
	/* The first error of a write acknowledged early (io/writearound.c),
	 * by the parity of the generation it counted in: taken by the
	 * application's flush that drains that parity (flush.c). */
	atomic_long error[2];
	/* The first such error ever: sticky, every later application flush
	 * reports it (the data it acknowledged is gone for good). */
	atomic_long lost;
	atomic_bool active;
	pthread_mutex_t lock;
	struct rbdl_comp *waiting;	/* flushes waiting for the drain */
	struct rbdl_comp *queued;	/* flushes that arrived meanwhile */
};

/*
 * Write-around acknowledgement (io/writearound.c): the policy, set from
 * the configuration at open and at every refresh (image/refresh.c), and
 * the requests it tracks.  Policy fields are relaxed atomics (each
 * request reads them once; either value is valid); the rest is under mu,
 * except tracked, which readers load first (see writearound.c).
 */
struct rbdl_req;

struct rbdl_wa {
	/* rbd_cache_max_dirty if rbd_cache and a write-around policy, else
	 * 0 (nothing is acknowledged early). */
	_Atomic uint64_t max_dirty;
	atomic_bool wtuf;		/* rbd_cache_writethrough_until_flush */
	atomic_bool user_flushed;	/* the application flushed once */
	atomic_uint tracked;		/* requests in flight or blocked */
	pthread_mutex_t mu;
	uint64_t bytes;			/* acknowledged early, in flight */
	/* object extents in flight, by (object, offset); disjoint */
	struct rbdl_avl flight;
	struct rbdl_req *blocked, *blocked_tail;	/* FIFO */
	/* Acknowledgements made inside a submit call, delivered by ack_task
	 * on the control context's callback lane (a stack through dnext). */
	_Atomic(struct rbdl_comp *) acks;
	struct rbdl_ctl_task ack_task;
	atomic_bool ack_live;	/* set (release) under mu once ack_task is */
	/* ack_task runs holding acknowledgements it took from acks and has
	 * not yet completed (seq_cst, writearound.c's flush order). */
	atomic_uint ack_busy;
};

/*
 * librbd's access and modify timestamps (image/stamps.h).  due holds the
 * RBDL_STAMP_* bits of the updates that are due: an I/O of that kind
 * loads it (relaxed), and the one that clears a bit stamps the header.
 * The intervals are set from the settings (relaxed); last_ns, the
 * CLOCK_MONOTONIC time of each kind's last stamp, is under mu.
 */
struct rbdl_stamps {
	atomic_uint due;
	_Atomic uint32_t interval[2];	/* seconds; 0: never updated */
	pthread_mutex_t mu;
	int64_t last_ns[2];
	struct rbdl_ctl_task task;	/* sets the bits when due */
	bool live;			/* task set up (user images) */
};

/*
 * The simple I/O scheduler (io/sched.h): on when rbd_io_scheduler=simple
 * (set at open and refresh, relaxed).  slot: per object slot (object
 * number % RBDL_SCHED_SLOTS), the write-type ops registered in flight and
 * RBDL_SCHED_HELD_FLAG when writes are held (relaxed RMWs, the protocol
 * is in sched.h); ready: registered ops finished, counted up to 10.  The
 * held runs, by slot, under mu; nobjs counts their objects (relaxed).
 */
#define RBDL_SCHED_SLOTS 256
#define RBDL_SCHED_HELD_FLAG (1u << 31)
#define RBDL_SCHED_READY 10	/* registered ops done before holding */

struct rbdl_sched_obj;

struct rbdl_sched {
	atomic_bool on;
	atomic_uint ready;
	atomic_uint nobjs;
	_Atomic uint32_t slot[RBDL_SCHED_SLOTS];
	pthread_mutex_t mu;
	struct rbdl_sched_obj *b[RBDL_SCHED_SLOTS];
};

/* Header notification subscribers (watch.h): the lock, the update
 * watchers and the quiesce watchers. */
#define RBDL_WATCH_LISTENERS 3

struct rbdl_crypt;

struct rbdl_image {
	/* immutable after open */
	rados_t cluster;
	rados_ioctx_t md_io;		/* header, id, directory; no snapc */
	rados_ioctx_t rd_io;		/* data reads (snap_set_read if snap) */
	char *name;
	char *id;
	char *header_oid;
	char *object_prefix;
	char *snap_name;		/* NULL for HEAD (*) */
	uint32_t snap_ns;		/* its namespace type (*) */
	uint64_t snap_id;		/* RBDL_NOSNAP for HEAD (*) */
	struct rbdl_layout layout;
	uint64_t stripe_unit;		/* as stored (layout may normalise) */
	int64_t data_pool_id;		/* -1: data in the metadata pool */
	int64_t md_pool_id;
	bool read_only;			/* open_ro or at a snapshot (*) */
	bool open_ro;			/* rbd_open_read_only */
	/* (*) changed only by rbd_snap_set, under refresh_lock and
	 * maint_mu; at_snap mirrors snap_id != NOSNAP for the I/O path
	 * (relaxed: reads racing with rbd_snap_set are unordered anyway). */
	atomic_bool at_snap;
	/* At a snapshot that a refresh found removed (or replaced by
	 * another of its name: librbd's !snap_exists): I/O submitted from
	 * then on and most queries fail with -ENOENT, the size reads 0,
	 * until rbd_snap_set moves the handle.  Set under refresh_lock,
	 * read relaxed (a hint of the view, like at_snap). */
	atomic_bool snap_gone;
	pthread_mutex_t maint_mu;	/* serializes maintenance ops */
	atomic_int write_error;		/* 0, or why writes are refused */

	/* mutable, published for the I/O path */
	/* rbd_discard_granularity_bytes, 0 when discards are exact
	 * (rbd_skip_partial_discard off); set at open and refresh from the
	 * configuration and its pool/image overrides.  Relaxed: a policy
	 * value, each request reads it once and either value is valid. */
	_Atomic uint64_t discard_granularity;
	/* rbd_disable_zero_copy_writes (default true): write data the data
	 * path keeps past an aio submit call is copied first (io/request.h);
	 * false: the caller keeps its buffers until completion, as with
	 * librbd's zero-copy writes.  Set and read like the granularity. */
	atomic_bool copy_writes;
	/* rbd_discard_on_zeroed_write_same (default true): a writesame of
	 * an all-zero pattern zeroes as a discard does (objects wholly
	 * covered are removed); false: it writes the zeroes, allocating
	 * (thick provisioning relies on it).  Set and read like the
	 * granularity. */
	atomic_bool ws_zero_discards;
	/* The loaded LUKS encryption (core/cipher.h), NULL when none: set
	 * by rbd_encryption_format/_load (release), read by each I/O
	 * (acquire: the state it points to is complete); freed at close. */
	_Atomic(struct rbdl_crypt *) crypt;
	_Atomic uint64_t size;
	_Atomic(rados_ioctx_t) wr_io;	/* data writes, carries the snapc */
	atomic_uint wr_nsnaps;		/* snapshots in wr_io's snapc */
	_Atomic uint64_t features;
	_Atomic uint64_t flags;
	atomic_uint refresh_seq;	/* bumped by header notifications */
	atomic_uint applied_seq;	/* refresh_seq the metadata reflects */
	/* Submissions waiting for a refresh (io/request.c): while
	 * io_queued, rbd_aio_* calls append to the queue and return; the
	 * image's refresh task (control context, internal lane) refreshes
	 * and submits them in order.  The queue and ioq_live under ioq_mu. */
	atomic_bool io_queued;
	pthread_mutex_t ioq_mu;
	struct rbdl_ioq_ent *ioq_head, *ioq_tail;
	struct rbdl_ctl_task ioq_task;
	bool ioq_live;			/* ioq_task set up */

	/* refresh state, under refresh_lock */
	pthread_mutex_t refresh_lock;
	uint64_t snap_seq;
	uint64_t *snaps;		/* descending */
	uint32_t nsnaps;
	struct rbdl_retired_io *retired;
	/* the header's lockers as of the last refresh (librbd's
	 * ImageCtx::lockers, what rbd_list_lockers answers); valid if
	 * lockers_ok */
	struct rbdl_lock_info lockers;
	bool lockers_ok;

	/* header watch (read-write HEAD opens only; watch.h) */
	bool watching;
	uint64_t watch_cookie;
	atomic_bool watch_broken;
	/* Set before the watch is registered (or, for the lock set up
	 * again by rbd_snap_set, with release ordering), read by the watch
	 * callback with acquire. */
	_Atomic(const struct rbdl_watch_listener *) listeners[RBDL_WATCH_LISTENERS];

	rados_ioctx_t defer_io;		/* never writes: async completion */
	/* a journaled image's real librbd handle (journal.h), or NULL */
	_Atomic(void *) journal_h;

	struct rbdl_flushq fq;
	struct rbdl_wa wa;
	struct rbdl_sched sched;
	struct rbdl_stamps stamps;
	struct rbdl_delivery dl;
	struct rbdl_lock *lk;		/* exclusive lock, or NULL (lock.h) */
	struct rbdl_objmap *om;		/* HEAD object map, or NULL */
	struct rbdl_updwatch *uw;	/* rbd_update_watch, or NULL */
	struct rbdl_quiesce *qw;	/* rbd_quiesce_watch, or NULL */

	/* backing image of a clone or migration (parent.h) */
	_Atomic(struct rbdl_pview *) pview;	/* current view */
	struct rbdl_pview *pviews;	/* all views, under refresh_lock */
	struct rbdl_backing *backings;	/* opened, under refresh_lock */
	unsigned depth;			/* 0 for a user's image (immutable) */
};

/* The user handle p if it is one with magic (open of that kind), else
 * NULL.  Acquire: pairs with the release store of the magic, so the
 * handle's fields are visible. */
static inline struct rbdl_handle *rbdl_handle_if(void *p, uint32_t magic)
{
	struct rbdl_handle *h = p;

	if (!h || atomic_load_explicit(&h->magic, memory_order_acquire) !=
			  magic)
		return NULL;
	return h;
}

/* Resolve a user handle: NULL unless it is an open image. */
static inline struct rbdl_image *rbdl_image_from_user(void *p)
{
	struct rbdl_handle *h = rbdl_handle_if(p, RBDL_HANDLE_OPEN);

	return h ? h->img : NULL;
}

/* Resolve a user handle served whole by the system's librbd: NULL unless
 * it is one (open). */
static inline struct rbdl_whole *rbdl_whole_from_user(void *p)
{
	struct rbdl_handle *h = rbdl_handle_if(p, RBDL_HANDLE_WHOLE);

	return h ? h->whole : NULL;
}

/* The current backing view (parent.h); never NULL once the image is open. */
static inline const struct rbdl_pview *rbdl_parent_view(struct rbdl_image *img)
{
	/* Acquire: pairs with the release store in rbdl_parent_update, so
	 * the view's fields and the backing image it names are visible. */
	return atomic_load_explicit(&img->pview, memory_order_acquire);
}

#endif /* RBDL_IMAGE_STATE_H */
