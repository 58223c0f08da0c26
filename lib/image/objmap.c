/*
 * objmap.c - HEAD object map maintenance (see objmap.h).
 *
 * Every update is one write op on rbd_object_map.<id>:
 *   lock.assert_locked("rbd_lock", EXCLUSIVE, cookie "", tag "")
 *   rbd.object_map_update(objno, objno + 1, state, current_state?)
 * so a client that lost the map lock can never change it.  On failure the
 * map is flagged invalid in the header (rbd.set_flags) before the waiting
 * data operations go ahead.
 */
/*
 * Memory ordering.  loaded and invalid are read lock-free by the data
 * path (objmap.h's predicates); bits bytes are read relaxed.  loaded is
 * stored seq_cst after the bits and nobjs were set up under mu, so a
 * reader that sees it true (acquire, or stronger) sees the array; the
 * lock's release drains every write before unload clears it, so no
 * request uses a map being replaced (old arrays are kept until destroy
 * in any case).  invalid only goes false -> true, stored seq_cst before
 * the header flag is written or the data the failed update guarded goes
 * out; a reader that still sees false only skips work for an object whose
 * state it read from a map that was valid when the transition began.
 */
#include "config.h"

#include "proto/oid.h"
#include "proto/rados.h"
#include "objmap.h"
#include "proto/wire.h"
#include "proto/cls_rbd.h"
#include "proto/cls_lock.h"
#include "proto/objmap_wire.h"
#include "load.h"
#include "state.h"
#include "core/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

struct rbdl_om_update {
	struct rbdl_om_update *next;
	struct rbdl_image *img;
	uint64_t objno;
	uint8_t target;
	bool has_cur;
	uint8_t cur;
	struct rbdl_omwaiter *wh, *wt;	/* FIFO of waiters */
	bool draining;			/* done, its waiters being released */
	rados_completion_t rc;
	rados_write_op_t op;
	int assert_prval, update_prval;
};

struct rbdl_om_retired {
	struct rbdl_om_retired *next;
	uint8_t *bits;
};

int rbdl_objmap_init(struct rbdl_image *img)
{
	struct rbdl_objmap *om = calloc(1, sizeof(*om));
	size_t n = strlen(img->id) + sizeof("rbd_object_map.");

	if (!om)
		return -ENOMEM;
	img->om = om;
	atomic_init(&om->loaded, false);
	atomic_init(&om->invalid, false);
	atomic_init(&om->transitions, 0);
	om->nobjs = 0;
	om->bits = NULL;
	om->recs = NULL;
	om->old = NULL;
	om->oid = malloc(n);
	if (!om->oid)
		return -ENOMEM;
	rbdl_oid_object_map(om->oid, n, img->id, RBDL_NOSNAP);
	pthread_mutex_init(&om->mu, NULL);
	return 0;
}

void rbdl_objmap_destroy(struct rbdl_image *img)
{
	struct rbdl_objmap *om = img->om;

	if (!om)
		return;
	img->om = NULL;
	if (!om->oid) {
		free(om);
		return;
	}
	free(om->bits);
	while (om->old) {
		struct rbdl_om_retired *o = om->old;

		om->old = o->next;
		free(o->bits);
		free(o);
	}
	free(om->oid);
	pthread_mutex_destroy(&om->mu);
	free(om);
}

static void set_state_locked(struct rbdl_objmap *om, uint64_t objno,
			     uint8_t st)
{
	uint8_t b = om->bits[objno / 4];

	/* Writers hold om->mu; readers load the byte lock-free.  Release:
	 * pairs with rbdl_objmap_get's acquire (rbdl_objmap_settled). */
	rbdl_om_set_state(&b, objno % 4, st);
	__atomic_store_n(&om->bits[objno / 4], b, __ATOMIC_RELEASE);
}

/* rbd.set_flags input raising OBJECT_MAP_INVALID | FAST_DIFF_INVALID on
 * HEAD (object_map/InvalidateRequest); returns its length. */
static size_t encode_invalidate(uint8_t in[24])
{
	const uint64_t f = RBD_FLAG_OBJECT_MAP_INVALID |
			   RBD_FLAG_FAST_DIFF_INVALID;
	struct rbdl_enc e;

	rbdl_enc_init(&e, in, 24);
	rbdl_enc_u64(&e, f);		/* flags */
	rbdl_enc_u64(&e, f);		/* mask */
	rbdl_enc_u64(&e, RBDL_NOSNAP);	/* snap id */
	return e.len;
}

/* Stop trusting the map, in the handle's flags too (as the header's are
 * being written): a reload before the next refresh (a lock
 * re-acquisition) must not trust it again. */
static void mark_invalid(struct rbdl_image *img)
{
	atomic_store(&img->om->invalid, true);
	atomic_fetch_or(&img->flags, (uint64_t)(RBD_FLAG_OBJECT_MAP_INVALID |
						RBD_FLAG_FAST_DIFF_INVALID));
}

/* Flag the map invalid in the header (synchronous; the lock's task). */
void rbdl_objmap_invalidate(struct rbdl_image *img, const char *why)
{
	uint8_t in[24];
	size_t n = encode_invalidate(in);

	rbdl_err("image %s: object map %s; flagging it invalid", img->name,
		 why);
	int r = rbdl_cls_write(img->md_io, img->header_oid, "rbd", "set_flags",
			       in, n);

	if (r < 0)
		rbdl_err("image %s: flagging the object map invalid failed "
			 "(%d)", img->name, r);
	mark_invalid(img);
}

/*
 * Make bits (n objects, decoded: ours to free; NULL: unusable) the map.
 * A reload (a lock acquisition, a resize or snapshot op) runs while reads
 * may look at the map: the bytes are written into the array in place when
 * they fit, so no array is kept per reload; a larger one is published
 * instead, and the old one retired until destroy (a reader may still
 * hold it).  Orders: see struct rbdl_objmap.
 */
static void publish(struct rbdl_objmap *om, uint8_t *bits, uint64_t n)
{
	size_t bytes = (size_t)((n + 3) / 4);

	pthread_mutex_lock(&om->mu);
	if (bits && om->bits && bytes <= om->cap) {
		/* A smaller count first: no reader then looks past it. */
		if (n < om->nobjs)
			__atomic_store_n(&om->nobjs, n, __ATOMIC_RELEASE);
		for (size_t i = 0; i < bytes; i++)
			__atomic_store_n(&om->bits[i], bits[i],
					 __ATOMIC_RELAXED);
		__atomic_store_n(&om->nobjs, n, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&om->mu);
		free(bits);
		return;
	}
	if (om->bits) {
		struct rbdl_om_retired *old = malloc(sizeof(*old));

		/* (Without memory for the note the array is left allocated:
		 * a reader may still hold it.) */
		if (old) {
			old->bits = om->bits;
			old->next = om->old;
			om->old = old;
		}
	}
	if (bits) {
		/* A first or larger array: the array, then its count. */
		__atomic_store_n(&om->bits, bits, __ATOMIC_RELEASE);
		om->cap = bytes;
		__atomic_store_n(&om->nobjs, n, __ATOMIC_RELEASE);
	} else {
		/* Unusable: no count, then no array (rbdl_objmap_get checks
		 * both). */
		__atomic_store_n(&om->nobjs, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&om->bits, NULL, __ATOMIC_RELEASE);
		om->cap = 0;
	}
	pthread_mutex_unlock(&om->mu);
}

int rbdl_objmap_load(struct rbdl_image *img, uint64_t image_size)
{
	struct rbdl_objmap *om = img->om;
	uint64_t want = rbdl_layout_num_objects(&img->layout, image_size);
	uint64_t flags = atomic_load(&img->flags);
	uint8_t *bits = NULL;
	uint64_t n = 0;
	char *out;
	size_t outlen;
	int r;

	r = rbdl_lockobj_lock(img->md_io, om->oid, "", "");
	if (r == -EBUSY) {
		/* The previous owner is gone (we hold the header lock):
		 * break its map lock, as librbd's object_map/LockRequest. */
		rbdl_lockobj_break_all(img->md_io, om->oid);
		r = rbdl_lockobj_lock(img->md_io, om->oid, "", "");
	}
	if (r < 0 && r != -EEXIST)
		return r;
	r = rbdl_cls_read(img->md_io, om->oid, "rbd", "object_map_load", NULL,
			  0, &out, &outlen);
	if (r == 0) {
		r = rbdl_decode_object_map(out, outlen, &bits, &n);
		rados_buffer_free(out);
	}
	atomic_store(&om->invalid, (flags & RBD_FLAG_OBJECT_MAP_INVALID) != 0);
	if (r < 0 || n < want) {
		/* librbd: invalidate, then resize to the expected length. */
		uint8_t in[16];
		struct rbdl_enc e;

		free(bits);
		bits = NULL;
		rbdl_objmap_invalidate(img, r < 0 ? "cannot be decoded"
					   : "is smaller than the image");
		rbdl_enc_init(&e, in, sizeof(in));
		rbdl_enc_u64(&e, want);
		rbdl_enc_u8(&e, RBDL_OBJ_NONEXISTENT);
		rbdl_cls_write(img->md_io, om->oid, "rbd", "object_map_resize",
			       in, e.len);
		r = rbdl_cls_read(img->md_io, om->oid, "rbd",
				  "object_map_load", NULL, 0, &out, &outlen);
		if (r == 0) {
			r = rbdl_decode_object_map(out, outlen, &bits, &n);
			rados_buffer_free(out);
		}
		if (r < 0) {
			/* Unusable: every update would fail; stay invalid and
			 * track nothing (updates are then skipped). */
			free(bits);
			bits = NULL;
			n = 0;
		}
	}
	publish(om, bits, n);
	atomic_store(&om->loaded, true);
	return 0;
}

void rbdl_objmap_unload(struct rbdl_image *img)
{
	struct rbdl_objmap *om = img->om;

	if (!atomic_exchange(&om->loaded, false))
		return;
	rbdl_lockobj_unlock(img->md_io, om->oid, "");
}

static bool update_needed(uint8_t state, uint8_t target, bool has_cur,
			  uint8_t cur)
{
	if (has_cur && state != cur &&
	    !(cur == RBDL_OBJ_EXISTS && state == RBDL_OBJ_EXISTS_CLEAN))
		return false;	/* the OSD would not apply it either */
	if (state == target)
		return false;
	if (target == RBDL_OBJ_PENDING && state == RBDL_OBJ_NONEXISTENT)
		return false;
	if (target == RBDL_OBJ_NONEXISTENT && state != RBDL_OBJ_PENDING)
		return false;
	return true;
}

/* The transition of objno to wait for: one in flight, else (unless
 * passed) one releasing its waiters. */
static struct rbdl_om_update *find_locked(struct rbdl_objmap *om,
					  uint64_t objno, bool passed)
{
	struct rbdl_om_update *draining = NULL;

	for (struct rbdl_om_update *r = om->recs; r; r = r->next)
		if (r->objno == objno) {
			if (!r->draining)
				return r;
			draining = r;
		}
	return passed ? NULL : draining;
}

bool rbdl_objmap_pending(struct rbdl_objmap *om, uint64_t objno, bool passed)
{
	bool r;

	pthread_mutex_lock(&om->mu);
	r = find_locked(om, objno, passed) != NULL;
	pthread_mutex_unlock(&om->mu);
	return r;
}

/* Take rec out of om->recs (mu held). */
static void unlink_locked(struct rbdl_objmap *om, struct rbdl_om_update *rec)
{
	for (struct rbdl_om_update **pp = &om->recs; *pp; pp = &(*pp)->next)
		if (*pp == rec) {
			*pp = rec->next;
			atomic_fetch_sub_explicit(&om->transitions, 1,
						  memory_order_relaxed);
			return;
		}
}

/* in_submit: the caller may be inside a submission (omwaiter). */
static void release_waiters(struct rbdl_omwaiter *w, int err, bool in_submit)
{
	while (w) {
		struct rbdl_omwaiter *n = w->next;

		w->passed = err == 0;
		w->go(w, err, in_submit);
		w = n;
	}
}

/*
 * rec finished and its new state is set (mu held, dropped while
 * releasing): release its waiters in order, then those that queued on it
 * meanwhile (a write that saw the new state while the earlier ones were
 * still going), then forget it.  Until then it counts as in flight for
 * every write but those it released, so none overtakes them.
 */
static void drain_locked(struct rbdl_objmap *om, struct rbdl_om_update *rec)
{
	rec->draining = true;
	for (;;) {
		struct rbdl_omwaiter *w = rec->wh;

		rec->wh = rec->wt = NULL;
		if (!w)
			break;
		pthread_mutex_unlock(&om->mu);
		release_waiters(w, 0, false);
		pthread_mutex_lock(&om->mu);
	}
	unlink_locked(om, rec);
}

static void invalidated_cb(rados_completion_t rc, void *arg)
{
	struct rbdl_om_update *rec = arg;
	struct rbdl_omwaiter *w = rec->wh;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	rados_release_write_op(rec->op);
	free(rec);
	/* The map is flagged invalid now: the data may go ahead.  If the
	 * flag could not be written either, nothing would record the
	 * write: it fails, as librbd's does. */
	release_waiters(w, r < 0 ? r : 0, false);
}

static void update_cb(rados_completion_t rc, void *arg)
{
	struct rbdl_om_update *rec = arg;
	struct rbdl_image *img = rec->img;
	struct rbdl_objmap *om = img->om;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	rados_release_write_op(rec->op);
	pthread_mutex_lock(&om->mu);
	if (r == 0) {
		if (om->bits && rec->objno < om->nobjs) {
			uint8_t st = rbdl_objmap_get(om, rec->objno);

			if (!rec->has_cur || st == rec->cur ||
			    (rec->cur == RBDL_OBJ_EXISTS &&
			     st == RBDL_OBJ_EXISTS_CLEAN))
				set_state_locked(om, rec->objno, rec->target);
		}
		drain_locked(om, rec);
		pthread_mutex_unlock(&om->mu);
		free(rec);
		return;
	}
	unlink_locked(om, rec);
	pthread_mutex_unlock(&om->mu);
	if (r == -EBUSY) {
		/* We lost the map lock: never write behind its back. */
		release_waiters(rec->wh, -EROFS, false);
		free(rec);
		return;
	}
	if (r < 0) {
		/* librbd: invalidate the map, then carry on -- at once when
		 * the image is flagged invalid already: librbd's invalidation
		 * finds its in-memory flag set and writes nothing, so after
		 * a first one whose flag could not be written (that write
		 * failed) the next writes go ahead. */
		uint8_t in[24];
		size_t n = encode_invalidate(in);
		bool flagged = atomic_load(&img->flags) &
			       RBD_FLAG_OBJECT_MAP_INVALID;

		rbdl_err("image %s: object map update of object %" PRIu64
			 " failed (%d); %s",
			 img->name, rec->objno, r,
			 flagged ? "the map is flagged invalid already"
				 : "flagging the map invalid");
		mark_invalid(img);
		if (flagged) {
			release_waiters(rec->wh, 0, false);
			free(rec);
			return;
		}
		rec->op = rados_create_write_op();
		if (rec->op &&
		    rados_aio_create_completion2(rec, invalidated_cb, &rec->rc) ==
			    0) {
			rados_write_op_exec(rec->op, "rbd", "set_flags",
					    (const char *)in, n, NULL);
			if (rados_aio_write_op_operate(rec->op, img->md_io,
						       rec->rc,
						       img->header_oid, NULL,
						       0) == 0)
				return;
			rados_aio_release(rec->rc);
		}
		if (rec->op)
			rados_release_write_op(rec->op);
		release_waiters(rec->wh, -EIO, false);
		free(rec);
		return;
	}
}

int rbdl_objmap_prepare(struct rbdl_image *img, uint64_t objno, uint8_t target,
			bool has_cur, uint8_t cur, struct rbdl_omwaiter *w,
			bool passed)
{
	struct rbdl_objmap *om = img->om;
	struct rbdl_om_update *rec;
	uint8_t in[32];
	long inlen;

	w->next = NULL;
	w->passed = false;
	pthread_mutex_lock(&om->mu);
	rec = find_locked(om, objno, passed);
	if (rec) {
		/* Queue behind the transition in flight; re-check after. */
		if (rec->wt)
			rec->wt->next = w;
		else
			rec->wh = w;
		rec->wt = w;
		pthread_mutex_unlock(&om->mu);
		return 1;
	}
	if (!om->bits || objno >= om->nobjs ||
	    !update_needed(rbdl_objmap_get(om, objno), target, has_cur, cur)) {
		pthread_mutex_unlock(&om->mu);
		return 0;
	}
	rec = calloc(1, sizeof(*rec));
	if (!rec) {
		pthread_mutex_unlock(&om->mu);
		return -ENOMEM;
	}
	rec->img = img;
	rec->objno = objno;
	rec->target = target;
	rec->has_cur = has_cur;
	rec->cur = cur;
	rec->wh = rec->wt = w;
	inlen = rbdl_encode_object_map_update(in, sizeof(in), objno, objno + 1,
					      target, has_cur, cur);
	rec->op = rados_create_write_op();
	if (inlen < 0 || !rec->op ||
	    rados_aio_create_completion2(rec, update_cb, &rec->rc) < 0) {
		if (rec->op)
			rados_release_write_op(rec->op);
		free(rec);
		pthread_mutex_unlock(&om->mu);
		return -ENOMEM;
	}
	rec->next = om->recs;
	om->recs = rec;
	atomic_fetch_add_explicit(&om->transitions, 1, memory_order_relaxed);
	pthread_mutex_unlock(&om->mu);

	uint8_t ain[64];
	long alen = rbdl_encode_lock_assert(ain, sizeof(ain), "rbd_lock",
					    RBDL_LOCK_EXCLUSIVE, "", "");

	rados_write_op_exec(rec->op, "lock", "assert_locked", (const char *)ain,
			    (size_t)alen, &rec->assert_prval);
	rados_write_op_exec(rec->op, "rbd", "object_map_update",
			    (const char *)in, (size_t)inlen, &rec->update_prval);
	if (rados_aio_write_op_operate(rec->op, img->md_io, rec->rc, om->oid,
				       NULL, 0) < 0) {
		/* Complete through the normal path with the error. */
		rados_aio_release(rec->rc);
		pthread_mutex_lock(&om->mu);
		unlink_locked(om, rec);
		pthread_mutex_unlock(&om->mu);
		rados_release_write_op(rec->op);
		/* w (always the first waiter) gets the error as our return
		 * value; requests that queued behind it meanwhile get it
		 * through their go(). */
		release_waiters(w->next, -EIO, true);
		free(rec);
		return -EIO;
	}
	return 1;
}

/* ---- snapshot object maps of a deep copy-up ------------------------------ */

struct snapmark {
	void (*done)(void *arg, int r);
	void *arg;
};

static void snapmark_cb(rados_completion_t rc, void *p)
{
	struct snapmark *m = p;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	/* A snapshot without a map object is fine (librbd ignores it). */
	m->done(m->arg, r == -ENOENT ? 0 : r);
	free(m);
}

int rbdl_objmap_mark_in_snaps(struct rbdl_image *img, uint64_t objno,
			      struct rbdl_join *join,
			      void (*done)(void *arg, int r), void *arg)
{
	bool fast = atomic_load_explicit(&img->features, memory_order_relaxed) &
		    RBD_FEATURE_FAST_DIFF;
	uint64_t *snaps;
	uint32_t n;
	int r = 0;

	snaps = rbdl_image_snap_ids(img, &n);
	if (!snaps)
		return -ENOMEM;
	/* snaps is newest first: the oldest is the last. */
	for (uint32_t i = 0; i < n && r == 0; i++) {
		uint8_t in[64];
		char oid[RBDL_OID_MAX];
		rados_completion_t rc;
		uint8_t st = i + 1 < n && fast ? RBDL_OBJ_EXISTS_CLEAN
					       : RBDL_OBJ_EXISTS;
		long len = rbdl_encode_object_map_update(in, sizeof(in), objno,
							 objno + 1, st, false,
							 0);
		struct snapmark *m = malloc(sizeof(*m));
		rados_write_op_t op = rados_create_write_op();

		r = len < 0 ? (int)len : !op || !m ? -ENOMEM : 0;
		if (r == 0)
			r = rbdl_oid_object_map(oid, sizeof(oid), img->id,
						snaps[i]);
		if (r == 0) {
			m->done = done;
			m->arg = arg;
			r = rados_aio_create_completion2(m, snapmark_cb, &rc);
		}
		if (r == 0) {
			rados_write_op_exec(op, "rbd", "object_map_update",
					    (const char *)in, (size_t)len,
					    NULL);
			rbdl_join_add(join);
			r = rados_aio_write_op_operate(op, img->md_io, rc, oid,
						       NULL, 0);
			if (r < 0) {
				rbdl_join_unsent(join, 0);	/* r: ours */
				rados_aio_release(rc);
			} else {
				m = NULL;	/* the callback frees it */
			}
		}
		free(m);
		/* The submitted op owns its ops and data now. */
		if (op)
			rados_release_write_op(op);
	}
	free(snaps);
	return r;
}

/* ---- reading a stored map ------------------------------------------------- */

int rbdl_objmap_read(rados_ioctx_t io, const char *image_id, uint64_t snap,
		     uint8_t **bits, uint64_t *n)
{
	char oid[RBDL_OID_MAX], *buf;
	size_t len;
	int r = rbdl_oid_object_map(oid, sizeof(oid), image_id, snap);

	if (r == 0)
		r = rbdl_cls_read(io, oid, "rbd", "object_map_load", NULL, 0,
				  &buf, &len);
	if (r < 0)
		return r;
	r = rbdl_decode_object_map(buf, len, bits, n);
	rados_buffer_free(buf);
	return r;
}

/* ---- synchronous updates (maintenance) ------------------------------------ */

int rbdl_objmap_write(struct rbdl_image *img, const char *oid, bool head,
		      const char *method, const void *in, size_t inlen)
{
	rados_write_op_t op = rados_create_write_op();
	uint8_t ain[64];
	int prv = 0, r;

	if (!op)
		return -ENOMEM;
	if (head) {
		long n = rbdl_encode_lock_assert(ain, sizeof(ain), "rbd_lock",
						 RBDL_LOCK_EXCLUSIVE, "", "");

		rados_write_op_exec(op, "lock", "assert_locked",
				    (const char *)ain, (size_t)n, NULL);
	}
	rados_write_op_exec(op, "rbd", method, in, inlen, &prv);
	r = rados_write_op_operate(op, img->md_io, oid, NULL, 0);
	rados_release_write_op(op);
	if (r >= 0 && prv < 0)
		r = prv;
	return r < 0 ? r : 0;
}

int rbdl_objmap_update_sync(struct rbdl_image *img, uint64_t start,
			    uint64_t end, uint8_t state, uint8_t cur)
{
	uint8_t in[32];
	long n = rbdl_encode_object_map_update(in, sizeof(in), start, end,
					       state, cur != RBDL_OM_ANY_STATE, cur);

	if (n < 0)
		return (int)n;
	return rbdl_objmap_write(img, img->om->oid, true, "object_map_update", in,
			(size_t)n);
}

int rbdl_objmap_resize_sync(struct rbdl_image *img, uint64_t nobjs)
{
	uint8_t in[16];
	struct rbdl_enc e;

	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_u64(&e, nobjs);
	rbdl_enc_u8(&e, RBDL_OBJ_NONEXISTENT);
	return rbdl_objmap_write(img, img->om->oid, true, "object_map_resize", in,
			e.len);
}
