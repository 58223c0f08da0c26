/*
 * request.h - private to the data path: an image request and its object
 * requests, shared by the three files that are parts of one state
 * machine: request.c (submission, the striping fan-out, completion),
 * objreq.c (each object request's life) and backing.c (reading through to
 * the backing image of a clone and fetching copy-up data).
 *
 * Threading: a request is built on the submitting thread (or, when it
 * waited for a header refresh, by the image's refresh task on the control
 * context); its object requests then advance on whichever thread
 * completes their current step (librados' callback threads, or the lock's
 * task when a write waited for the exclusive lock).  One object request
 * is only ever advanced by one thread at a time: each step has exactly
 * one completion.
 * The request's pending count (acq_rel) orders every object's results
 * before the request completes.
 *
 * Memory: requests come from a slab; a request touching up to
 * RBDL_REQ_INLINE_OBJS objects and RBDL_REQ_INLINE_SEGS buffer segments
 * needs no other memory.
 *
 * Write data: the segments point into the caller's buffer while every
 * step that reads them runs inside the submit call (the data op handed to
 * librados, which copies it).  Before a step that may read them later
 * starts (parking for the lock, an object map update, a copy-up, a
 * guarded op that a copy-up may follow), rbdl_obj_keep_data copies the
 * object's segments into memory of the request's own, on the submitting
 * thread: each object owns its copy, so no other object's thread ever
 * sees its segments change.  A write-same pattern is copied when the
 * request is built (every object's op reads it).  Requests that waited in
 * the image's queue carry a copy made there (io.h: owned).  All copies
 * are freed with the request.  A write the scheduler holds (sched.h) has
 * its data copied into its run's buffer, which the scheduler owns.
 */
#ifndef RBDL_IO_REQUEST_H
#define RBDL_IO_REQUEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/join.h"
#include "image/lock.h"
#include "image/objmap.h"
#include "image/parent.h"
#include "io.h"
#include "plan.h"
#include "proto/oid.h"

#define RBDL_REQ_INLINE_OBJS 4

/* The op flags a data op passes on to librados. */
#define RBDL_FADVISE_MASK                                                    \
	(LIBRADOS_OP_FLAG_FADVISE_RANDOM |                                   \
	 LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL |                               \
	 LIBRADOS_OP_FLAG_FADVISE_WILLNEED |                                 \
	 LIBRADOS_OP_FLAG_FADVISE_DONTNEED | LIBRADOS_OP_FLAG_FADVISE_NOCACHE)
#define RBDL_REQ_INLINE_SEGS 8

/*
 * The life of an object request (objreq.c, rbdl_obj_advance).  Each state
 * names the step that is in flight; its completion advances the request:
 *
 *            +-------------------------------+
 *            v                               | map updated
 *   START --(object map gate)--> MAP_PRE ----+
 *     |  \  \
 *     |   \  +--(read, map says absent, backed)--------+
 *     |    +--(guarded write, map says absent)--+      |
 *     v                                         v      v
 *   DATA --(ENOENT, guarded write)--> COPYUP_FETCH   READ_PARENT
 *     |  \                               | \  \          |
 *     |   +--(ENOENT, read, backed)--+   |  \  +--(plain write: prepend
 *     |                              |   |   \   the copy-up) --> DATA
 *     |                              v   |    +--(deep, object map)-->
 *     |                      READ_PARENT |           COPYUP_MAPS
 *     |                                  v               |
 *     |        DATA (unguarded) <---- COPYUP <-----------+
 *     +--(remove under the map)--> MAP_POST
 *     v                               |
 *   DONE <----------------------------+   (and from every step on error)
 */
enum rbdl_obj_state {
	RBDL_ST_START,		/* not started: apply the object map gate */
	RBDL_ST_MAP_PRE,	/* map transition before the data op */
	RBDL_ST_DATA,		/* the data op */
	RBDL_ST_READ_PARENT,	/* the object's data from the backing image */
	RBDL_ST_COPYUP_FETCH,	/* the parent data to copy up */
	RBDL_ST_COPYUP_MAPS,	/* snapshot maps record the copy-up */
	RBDL_ST_COPYUP,	/* the copy-up alone (deep, or before CAW) */
	RBDL_ST_MAP_POST,	/* PENDING -> NONEXISTENT after a remove */
	RBDL_ST_DONE,
};

/* How the data op treats the object (fixed when the request is planned,
 * except that a copy-up turns GUARDED into PLAIN). */
enum rbdl_obj_kind {
	RBDL_KIND_PLAIN,		/* as the request says */
	RBDL_KIND_REMOVE,	/* whole-object discard: rados remove */
	RBDL_KIND_HIDE,		/* whole-object discard of a backed object:
				 * create + truncate(0), parent hidden */
	RBDL_KIND_GUARDED,	/* asserts the object exists: copy-up on
				 * ENOENT (a clone's object in the overlap) */
};

struct rbdl_req;
struct rbdl_fetch;

struct rbdl_objreq {
	struct rbdl_req *req;
	enum rbdl_obj_state state;
	enum rbdl_obj_kind kind;
	/* Decided by the map gate: the map says the object is absent, so a
	 * guarded write copies up without sending its doomed data op; the
	 * map was moved to PENDING, so a remove ends with MAP_POST. */
	bool copyup_first;
	bool map_pending;
	rados_completion_t rc;
	rados_read_op_t rop;
	rados_write_op_t wop;
	uint64_t objno;
	uint64_t obj_off;	/* span in the object */
	uint64_t len;
	uint32_t first_seg;
	uint32_t nsegs;
	uint32_t first_piece;	/* write-same only */
	uint32_t npieces;
	int cmp_prval;		/* compare-and-write */
	struct rbdl_fetch *cu;	/* fetched copy-up data (COPYUP_FETCH on) */
	struct rbdl_join sub;	/* COPYUP_MAPS: the snapshot map updates */
	char *heap;		/* expanded write-same data */
	char *owned;		/* copy of the segments' data (wbuf) */
	struct rbdl_omwaiter omw;	/* waiting for an object map update */
	struct rbdl_avl_node wal;	/* in flight for write-around */
	/* the scheduler (sched.h): its op is registered there; the next
	 * request of a held run; a run that could not be sent (its error,
	 * the next such run) */
	bool sched_reg;
	struct rbdl_objreq *sched_next;
	int sched_err;
	struct rbdl_objreq *sched_fail;
	char oid[RBDL_DATA_OID_MAX];
};

struct rbdl_req {
	struct rbdl_image *img;
	struct rbdl_comp *comp;
	enum rbdl_op op;
	int op_flags;
	atomic_int pending;	/* objects not done + the submit guard */
	atomic_long result;	/* first error wins */
	unsigned gen_parity;
	uint64_t off;
	uint64_t len;		/* after clipping */
	const char *pattern;	/* write-same; reads: the caller's buffer */
	size_t data_len;
	bool thick;		/* write-zeroes with THICK_PROVISION */
	uint64_t *mismatch_off;
	const void *cmp;	/* compare-and-write: compare buffer */
	uint64_t cmp_len;	/* compare length: NOT clipped (librbd) */
	bool holds_lock;	/* counted in the exclusive lock's writes */
	/* Copy write data before keeping it past the submit call
	 * (rbdl_obj_keep_data): an aio write of caller memory on an image
	 * with copy_writes. */
	bool copy;
	char *owned;		/* data copied for the request (wbuf) */
	/* An object request holds a copy (owned).  Relaxed: set by objects
	 * possibly on different threads, read by req_free after the last
	 * pending decrement (acq_rel). */
	atomic_bool kept;
	/* write-around (writearound.c): the kind; acknowledged at once when
	 * started (early), and done (acked); in flight there (tracked);
	 * the link of the blocked FIFO */
	uint8_t wa_kind;
	bool wa_early;
	bool wa_acked;
	bool wa_tracked;
	struct rbdl_req *wa_next;
	const struct rbdl_pview *pv;	/* what backs the image (parent.h) */
	uint32_t nsnaps;	/* snapshots in io's context (writes) */
	bool track_data;	/* a backing read: maintain data_end */
	_Atomic uint64_t data_end;	/* see struct rbdl_comp */
	struct rbdl_lkwaiter lkw;	/* parked until the lock is ours */
	rados_ioctx_t io;
	struct rbdl_objreq *objs;
	uint32_t nobjs;
	struct rbdl_seg *segs;
	uint32_t nsegs;
	struct rbdl_piece *pieces;	/* write-same only */
	struct rbdl_objreq objs_inline[RBDL_REQ_INLINE_OBJS];
	struct rbdl_seg segs_inline[RBDL_REQ_INLINE_SEGS];
};

static inline bool rbdl_op_writes(enum rbdl_op op)
{
	return op != RBDL_OP_READ && op != RBDL_OP_FLUSH;
}

static inline bool rbdl_op_discards(enum rbdl_op op)
{
	return op == RBDL_OP_DISCARD || op == RBDL_OP_WRITE_ZEROES;
}

/* Record an error for the request: the first one wins (librbd's
 * error_rval compare-exchange). */
static inline void rbdl_req_set_error(struct rbdl_req *req, long r)
{
	long zero = 0;

	/* Relaxed: read after the last pending decrement (acq_rel). */
	atomic_compare_exchange_strong_explicit(&req->result, &zero, r,
						memory_order_relaxed,
						memory_order_relaxed);
}

/* *p = max(*p, v).  Relaxed: the result is read after the request's (or
 * fetch's) last reference drop, an acq_rel that orders it. */
static inline void rbdl_atomic_max_u64(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);

	while (cur < v && !atomic_compare_exchange_weak_explicit(
				  p, &cur, v, memory_order_relaxed,
				  memory_order_relaxed))
		;
}

/* A tracked read got n bytes of object data into segment s. */
static inline void rbdl_req_note_data(struct rbdl_req *req,
				      const struct rbdl_seg *s, uint64_t n)
{
	rbdl_atomic_max_u64(&req->data_end,
			    (uint64_t)(s->ptr - req->pattern) + n);
}

/* request.c: one object is done; the last one completes the request.
 * in_submit: still inside the submit call (defer the completion). */
void rbdl_req_put(struct rbdl_req *req, bool in_submit);

/* objreq.c: send o's data op to librados now (state DATA): 0 (its
 * completion advances o) or a negative errno (nothing sent). */
int rbdl_obj_send_op(struct rbdl_objreq *o);
/* objreq.c: copy o's write data out of the caller's memory before a
 * step that may read it after the submit call returned (nothing to do if
 * the request does not copy, or already did).  0 or -ENOMEM. */
int rbdl_obj_keep_data(struct rbdl_objreq *o);
/* ---- writearound.c: write-around acknowledgement (see there) ---- */

enum rbdl_wa_kind {
	RBDL_WA_NONE,
	RBDL_WA_WRITE,
	RBDL_WA_WAIT,
	RBDL_WA_TRACK,
};

/* What rbdl_wa_begin decided. */
enum {
	RBDL_WA_GO = 0,		/* start the request now */
	RBDL_WA_PARKED = 1,	/* blocked: rbdl_req_wa_go starts it later */
};

/* Is write-around on now: a write-around policy (max_dirty set), and past
 * the first flush if it waits for one?  The policy fields are relaxed
 * (each request reads them once; either value is valid). */
static inline bool rbdl_wa_on(struct rbdl_image *img)
{
	struct rbdl_wa *wa = &img->wa;

	if (!atomic_load_explicit(&wa->max_dirty, memory_order_relaxed))
		return false;
	/* write-through until the flush */
	return !atomic_load_explicit(&wa->wtuf, memory_order_relaxed) ||
	       atomic_load_explicit(&wa->user_flushed, memory_order_relaxed);
}

/* The kind of request req (its op and flags; nested: the inner write of
 * a write acknowledged early already, io.h), for req->wa_kind. */
static inline enum rbdl_wa_kind rbdl_wa_classify(struct rbdl_image *img,
						 const struct rbdl_req *req,
						 bool nested)
{
	if (!rbdl_wa_on(img)) {
		/* Write-around turned off (a refresh) while requests it
		 * tracks are in flight or blocked: wait for those this one
		 * overlaps, never overtake them.  Acquire: as rbdl_wa_begin's
		 * load of tracked. */
		if (__builtin_expect(atomic_load_explicit(&img->wa.tracked,
							  memory_order_acquire),
				     0))
			return RBDL_WA_WAIT;
		return RBDL_WA_NONE;
	}
	if (req->op == RBDL_OP_READ || req->op == RBDL_OP_CAW ||
	    (req->op_flags & LIBRADOS_OP_FLAG_FADVISE_FUA))
		return RBDL_WA_WAIT;
	return nested ? RBDL_WA_TRACK : RBDL_WA_WRITE;
}

/*
 * Admit req (wa_kind not NONE) before its objects are started: GO, PARKED
 * (its write data kept first when in_submit: request.h), or -ENOMEM.  For
 * a WRITE, sets req->wa_early when it may be acknowledged at once.
 */
int rbdl_wa_begin(struct rbdl_req *req, bool in_submit);

/* req, admitted by rbdl_wa_begin as GO (tracked) or released, finished
 * with rval: stop tracking it and start what it held back (in_submit:
 * req finished inside a submit call, so what is started delivers its
 * callbacks from elsewhere, as that call's own requests do). */
void rbdl_wa_end(struct rbdl_req *req, ssize_t rval, bool in_submit);

/* Complete req's completion now, acknowledged early; in_submit: inside
 * the submit call, so through the control context's callback lane (a
 * callback never runs inside the submitting call). */
void rbdl_wa_ack(struct rbdl_req *req, bool in_submit);

/* The application flushes (rbd_flush, rbd_aio_flush): write-around is on
 * from now, if it waited for the first flush. */
void rbdl_wa_user_flush(struct rbdl_image *img);

/* request.c: start a request that write-around held back (on the thread
 * that released it; in_submit: inside a submit call). */
void rbdl_req_wa_go(struct rbdl_req *req, bool in_submit);
/* objreq.c: advance o with the result r of the step that finished (0
 * for START). */
void rbdl_obj_advance(struct rbdl_objreq *o, int r, bool in_submit);
/* Zero-fill segment s past the have bytes a read returned. */
void rbdl_seg_zero_tail(struct rbdl_seg *s, size_t have);

/* sched.c (the rest of the scheduler is in sched.h): a flush is due,
 * every held write goes now. */
void rbdl_sched_flush(struct rbdl_image *img);

/* backing.c */
/* Does any byte of object objno lie below the view's overlap? */
bool rbdl_obj_backed(const struct rbdl_pview *pv, const struct rbdl_layout *l,
		     uint64_t objno);
/* READ_PARENT: read o's segments through to the backing image (zeros
 * beyond the overlap); rbdl_obj_advance(o, err) runs when done. */
void rbdl_backing_read(struct rbdl_objreq *o, bool in_submit);
/* COPYUP_FETCH: fetch o's parent data into o->cu; rbdl_obj_advance(o,
 * err) runs when done. */
void rbdl_backing_fetch(struct rbdl_objreq *o, bool in_submit);
/* The fetched data (trimmed to what the parent really holds; 0 bytes:
 * a zero copy-up, nothing to copy), and its release. */
const char *rbdl_fetch_data(const struct rbdl_fetch *f, uint64_t *len);
void rbdl_fetch_free(struct rbdl_fetch *f);

#endif /* RBDL_IO_REQUEST_H */
