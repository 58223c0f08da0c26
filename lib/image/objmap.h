/*
 * objmap.h - the HEAD object map of an image we hold the exclusive lock of.
 *
 * Role: keep rbd_object_map.<id> true for librbd and krbd readers.  Before
 * the first write to an object that the map does not already record as
 * EXISTS, the map is updated (EXISTS) and only then is the data sent; a
 * whole-object discard goes PENDING -> remove -> NONEXISTENT, exactly like
 * librbd (rbd-protocol.md section 6.4).  If an update fails, the map is
 * flagged invalid (OBJECT_MAP_INVALID | FAST_DIFF_INVALID) before the data
 * is written, so a valid-looking map is never wrong.
 *
 * In-memory copy: 2 bits per object, MSB first (the on-disk BitVector
 * layout), read lock-free on the I/O path with relaxed byte loads: a write
 * to an object already EXISTS costs one load.  Transitions are serialized
 * per object: a request that needs a transition either starts it (an async
 * rados op on the map object, guarded by lock.assert_locked) or queues
 * behind the one in flight; queued requests re-check when it completes.
 *
 * Threading: rbdl_objmap_load/unload run in the lock's task (control
 * context) while no write is in flight; rbdl_objmap_prepare may run on any thread;
 * completions run on librados' callback thread.  mu protects recs and all
 * stores to bits.
 */
#ifndef RBDL_OBJMAP_H
#define RBDL_OBJMAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rados/librados.h>

#include "core/join.h"
#include "proto/objmap_wire.h"

struct rbdl_image;

/* Something waiting for a transition: go() runs once it committed (err 0)
 * or definitively failed (err < 0), on librados' callback thread -- or,
 * with in_submit, in rbdl_objmap_prepare when its op could not be sent:
 * maybe inside a submission. */
struct rbdl_omwaiter {
	struct rbdl_omwaiter *next;
	/* in_submit: called where a submission may be in progress (a
	 * request it finishes must not complete inside that call). */
	void (*go)(struct rbdl_omwaiter *w, int err, bool in_submit);
	/* Set when a finished transition released w (go(w, 0)): w goes
	 * ahead of writes that queued on that transition after it. */
	bool passed;
};

struct rbdl_om_update;
struct rbdl_om_retired;

struct rbdl_objmap {
	atomic_bool loaded;	/* bits valid (lock held, map loaded) */
	atomic_bool invalid;	/* OBJECT_MAP_INVALID: never skip on it */
	/* nobjs and bits: written under mu with release stores (bits
	 * before a larger nobjs, a smaller nobjs before the bytes change),
	 * read lock-free with acquire loads (nobjs first): a reader that sees
	 * an object number below nobjs finds its byte in the array it loads
	 * next.  A reload writes into the same array when it fits (cap
	 * bytes), else publishes a larger one and retires the old. */
	uint64_t nobjs;
	uint8_t *bits;
	size_t cap;		/* bytes of bits */
	char *oid;		/* rbd_object_map.<id> */
	pthread_mutex_t mu;
	struct rbdl_om_update *recs;	/* transitions in flight */
	/* Transitions in recs, in flight or releasing their waiters
	 * (incremented under mu when one starts, decremented once its
	 * waiters all went); read lock-free by rbdl_objmap_settled. */
	atomic_uint transitions;
	struct rbdl_om_retired *old;	/* outgrown bit arrays, freed at
				 * destroy: a reader may still hold one */
};

/* Allocate img->om (a user's image; a backing image has none). */
int rbdl_objmap_init(struct rbdl_image *img);
/* Free img->om (NULL: nothing). */
void rbdl_objmap_destroy(struct rbdl_image *img);

/*
 * Predicates for the data path and maintenance (om may be NULL):
 * ready: the map is loaded (we hold the lock) and its bits are usable;
 * trusted: ready and not flagged invalid, so NONEXISTENT is the truth;
 * count: objects the loaded map covers.
 */
static inline bool rbdl_objmap_ready(const struct rbdl_objmap *om)
{
	/* Acquire: pairs with the release store of loaded after the bits
	 * were set up (rbdl_objmap_load). */
	return om && atomic_load_explicit(&om->loaded, memory_order_acquire);
}
static inline bool rbdl_objmap_trusted(const struct rbdl_objmap *om)
{
	/* seq_cst, like every access to invalid: it goes false -> true
	 * only while we hold the lock, before the data it protects is
	 * written (rbdl_objmap_invalidate). */
	return rbdl_objmap_ready(om) && !atomic_load(&om->invalid);
}
static inline uint64_t rbdl_objmap_count(const struct rbdl_objmap *om)
{
	return rbdl_objmap_ready(om)
		       ? __atomic_load_n(&om->nobjs, __ATOMIC_ACQUIRE)
		       : 0;
}
/* ready, and the map holds at least one object's state. */
static inline bool rbdl_objmap_usable(const struct rbdl_objmap *om)
{
	return rbdl_objmap_ready(om) &&
	       __atomic_load_n(&om->bits, __ATOMIC_ACQUIRE);
}
/* The HEAD map's object name (rbd_object_map.<id>). */
static inline const char *rbdl_objmap_oid(const struct rbdl_objmap *om)
{
	return om->oid;
}

/* Lock rbd_object_map.<id> (breaking stale lockers) and load it.  Called
 * with the header lock held.  A map that is too small or undecodable is
 * flagged invalid (and resized), as librbd does; returns 0 then too. */
int rbdl_objmap_load(struct rbdl_image *img, uint64_t image_size);

/* Flag the HEAD map invalid in the header (synchronous, control path). */
void rbdl_objmap_invalidate(struct rbdl_image *img, const char *why);

/* Forget the map and unlock the map object (lock release). */
void rbdl_objmap_unload(struct rbdl_image *img);

static inline uint8_t rbdl_objmap_get(const struct rbdl_objmap *om,
				      uint64_t objno)
{
	/* Acquire, nobjs then bits: see struct rbdl_objmap. */
	if (objno >= __atomic_load_n(&om->nobjs, __ATOMIC_ACQUIRE))
		return RBDL_OBJ_NONEXISTENT;
	const uint8_t *bits = __atomic_load_n(&om->bits, __ATOMIC_ACQUIRE);

	if (!bits)	/* made unusable meanwhile */
		return RBDL_OBJ_NONEXISTENT;
	/* Acquire: pairs with set_state_locked's release store, so a reader
	 * that sees a transition's new state sees it counted in
	 * transitions (rbdl_objmap_settled).  A stale value is harmless:
	 * a transition in flight is counted there already. */
	uint8_t b = __atomic_load_n(&bits[objno / 4], __ATOMIC_ACQUIRE);

	return rbdl_om_state(&b, objno % 4);
}

/*
 * Make object objno reach state target (optionally only from state cur)
 * before w->go runs.  Returns 0 if nothing is needed (proceed now), 1 if
 * w->go will be called once the transition it waits for completes (always
 * from librados' callback thread, never from inside this call), or a
 * negative errno.  A transition that finished but is still releasing its
 * waiters counts as in flight, unless passed (the caller is one of them).
 */
int rbdl_objmap_prepare(struct rbdl_image *img, uint64_t objno, uint8_t target,
			bool has_cur, uint8_t cur, struct rbdl_omwaiter *w,
			bool passed);

/* Is a transition of objno in flight, or releasing its waiters (unless
 * passed)?  Takes mu. */
bool rbdl_objmap_pending(struct rbdl_objmap *om, uint64_t objno,
			 bool passed);

/*
 * May the data path act on objno's state as read (rbdl_objmap_get)
 * without the map's lock: no transition of it in flight, nor one still
 * releasing the writes that waited for it (they go first)?  Lock-free
 * while no transition is in flight at all.  Relaxed: the state was read
 * with acquire (rbdl_objmap_get), which orders this load after it, and a
 * transition is counted before its new state is stored.
 */
static inline bool rbdl_objmap_settled(struct rbdl_objmap *om,
				       uint64_t objno, bool passed)
{
	if (!atomic_load_explicit(&om->transitions, memory_order_relaxed))
		return true;
	return !rbdl_objmap_pending(om, objno, passed);
}

/*
 * A deep copy-up of object objno of a clone keeps the parent data in every
 * snapshot, so each snapshot's map records it before the data goes out
 * (librbd CopyupRequest::update_object_maps): the oldest snapshot EXISTS,
 * newer ones EXISTS_CLEAN with fast-diff (unchanged since the previous
 * snapshot), else EXISTS.  Snapshot maps are not locked.  Sends one
 * update per snapshot, adding a member to join before each; done(arg, r)
 * runs once per update sent, on librados' callback thread (a snapshot
 * without a map counts as success).  Returns 0, or the error that stopped
 * sending (updates sent before it still call done).
 */
int rbdl_objmap_mark_in_snaps(struct rbdl_image *img, uint64_t objno,
			      struct rbdl_join *join,
			      void (*done)(void *arg, int r), void *arg);

/* Read the stored map of image image_id at snap (RBDL_NOSNAP: HEAD) with
 * object_map_load: *bits malloc'ed (free), *n objects.  Any image, open or
 * not; 0 or a negative errno (-EBADMSG: undecodable). */
int rbdl_objmap_read(rados_ioctx_t io, const char *image_id, uint64_t snap,
		     uint8_t **bits, uint64_t *n);

/*
 * Synchronous writes for maintenance, which holds the lock with writes
 * drained: rbdl_objmap_write runs cls "rbd" method on map object oid
 * (head: HEAD's, guarded by the map lock, lock.assert_locked as librbd
 * does); update_sync sets [start, end) to state (only where it is cur,
 * unless cur is RBDL_OM_ANY_STATE); resize_sync resizes HEAD's map to
 * nobjs (new objects NONEXISTENT).  They change the stored map only:
 * maintenance reloads the in-memory copy when it ends.  0 or a negative
 * errno.
 */
#define RBDL_OM_ANY_STATE 0xff
int rbdl_objmap_write(struct rbdl_image *img, const char *oid, bool head,
		      const char *method, const void *in, size_t inlen);
int rbdl_objmap_update_sync(struct rbdl_image *img, uint64_t start,
			    uint64_t end, uint8_t state, uint8_t cur);
int rbdl_objmap_resize_sync(struct rbdl_image *img, uint64_t nobjs);

#endif /* RBDL_OBJMAP_H */
