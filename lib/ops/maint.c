/*
 * maint.c - what the maintenance operations (maint.h) share: begin and
 * end (serialize, quiesce, hold the lock), guarded header writes, the
 * HEADER_UPDATE notification, our own refresh, snapshot lookup; and
 * rbd_metadata_set and rbd_snap_set.  Resize is resize.c, snapshot
 * create / remove / rollback snap.c.
 *
 * Sequences (librbd 16.2):
 *   resize, shrink: trim (object map [start, n) -> PENDING, remove the
 *            whole objects past the last object set still in use, ->
 *            NONEXISTENT; discard the boundary extents of [new size, end
 *            of that set): one starting at object offset 0 removes its
 *            object, the others truncate or zero), set_size,
 *            object_map_resize (a failure flags the map invalid); the
 *            on-disk map is checked before set_size (see
 *            shrink_map_ready)
 *   resize, grow:   object_map_resize (new objects NONEXISTENT), set_size
 *   snap create:    selfmanaged snap id from the data pool, snapshot_add
 *            (-ESTALE: retry with a new id; -EEXIST: release the id), copy
 *            the HEAD object map to rbd_object_map.<id>.<snapid>, and with
 *            fast-diff object_map_snap_add (HEAD EXISTS -> EXISTS_CLEAN)
 *   snap remove:    snapshot_trash_add, snapshot_get (clones keep it in the
 *            trash), with fast-diff object_map_snap_remove into the next
 *            newer map (or HEAD), remove the snapshot's map object,
 *            release the selfmanaged snap id, snapshot_remove (librbd's
 *            order; ops/snap.c); the last snapshot of a flattened clone
 *            going detaches it from its parent
 *   rollback:       resize to the snapshot's size, HEAD object map := the
 *            snapshot's, every object rolled back (the OSD removes those
 *            that did not exist at the snapshot)
 * Header writes carry lock.assert_locked with our cookie and object map
 * writes assert the map lock, as librbd's, when the image has the lock.
 *
 * Threading and ownership: see maint.h.  All calls are synchronous rados
 * calls; object removals are issued with a window of asynchronous ops
 * (window.h).  Memory ordering: everything here runs under maint_mu with
 * our writes drained (the lock in MAINT, or flushed); the image fields it
 * reads lock-free (size, features, wr_io, at_snap) are seq_cst loads of
 * values only a refresh changes, and a refresh it needs it runs itself.
 */
#include "config.h"

#include "maint.h"
#include "maint_int.h"

#include "core/internal.h"
#include "image/load.h"
#include "image/lock.h"
#include "image/objmap.h"
#include "image/open.h"
#include "image/parent.h"
#include "image/refresh.h"
#include "io/io.h"
#include "proto/cls_lock.h"
#include "proto/cls_rbd.h"
#include "proto/notify.h"
#include "proto/objmap_wire.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "proto/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

#define NOTIFY_TIMEOUT_MS 5000

/* ---- small helpers -------------------------------------------------------- */

/* A write op on the header, guarded by our exclusive lock if any. */
int rbdl_maint_hdr_write(struct rbdl_image *img, const char *method,
		     const void *in, size_t inlen)
{
	rados_write_op_t op = rados_create_write_op();
	uint8_t ain[128];
	int prv = 0, r;

	if (!op)
		return -ENOMEM;
	if (rbdl_lock_in_maint(img)) {
		char cookie[RBDL_LOCK_COOKIE_MAX];
		long n;

		rbdl_lock_cookie(img, cookie, sizeof(cookie));
		n = rbdl_encode_lock_assert(ain, sizeof(ain), "rbd_lock",
					    RBDL_LOCK_EXCLUSIVE, cookie,
					    "internal");
		if (n < 0) {
			rados_release_write_op(op);
			return (int)n;
		}
		rados_write_op_exec(op, "lock", "assert_locked",
				    (const char *)ain, (size_t)n, NULL);
	}
	rados_write_op_exec(op, "rbd", method, in, inlen, &prv);
	r = rados_write_op_operate(op, img->md_io, img->header_oid, NULL, 0);
	rados_release_write_op(op);
	if (r >= 0 && prv < 0)
		r = prv;
	return r < 0 ? r : 0;
}

void rbdl_maint_notify(struct rbdl_image *img)
{
	uint8_t buf[64];
	long n = rbdl_encode_notify(buf, sizeof(buf), RBDL_NOTIFY_HEADER_UPDATE,
				    0, 0, false);
	char *reply = NULL;
	size_t rlen = 0;

	if (n < 0)
		return;
	/* Like librbd, a watcher that does not answer is not an error. */
	rados_notify2(img->md_io, img->header_oid, (const char *)buf, (int)n,
		      NOTIFY_TIMEOUT_MS, &reply, &rlen);
	if (reply)
		rados_buffer_free(reply);
}

/* Our own view: refresh now (size, snapshot context, write context) and
 * reload the HEAD object map if we changed it, i.e. we hold the lock with
 * writes drained (a reload under running writes could lose a transition
 * they are making). */
int rbdl_maint_refresh(struct rbdl_image *img)
{
	int r;

	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
	r = rbdl_image_refresh_slow(img);
	if (r == 0 && rbdl_lock_in_maint(img) && rbdl_objmap_ready(img->om))
		r = rbdl_objmap_load(img, atomic_load(&img->size));
	return r;
}

/* A user snapshot by name, from the header's current snapshot context
 * (not only what this open has seen). */
int rbdl_maint_find_snap(struct rbdl_image *img, const char *name,
			 struct rbdl_snap_info *out)
{
	uint64_t seq, *ids = NULL;
	uint32_t n = 0;
	int r = rbdl_read_snapcontext(img->md_io, img->header_oid, &seq, &ids,
				      &n);

	if (r < 0)
		return r;
	r = rbdl_find_user_snap(img->md_io, img->header_oid, ids, n, name,
				out);
	free(ids);
	return r;
}

/* Id and size of the user snapshot called name, with the header brought up
 * to date first: 0, -EINVAL (NULL name), -ENOENT or a read error. */
int rbdl_maint_lookup_snap(struct rbdl_image *img, const char *name,
		       uint64_t *id, uint64_t *size)
{
	struct rbdl_snap_info si;
	int r;

	if (!name)
		return -EINVAL;
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	r = rbdl_maint_find_snap(img, name, &si);
	if (r < 0)
		return r;
	*id = si.id;
	if (size)
		*size = si.image_size;
	rbdl_snap_info_free(&si);
	return 0;
}

/* The snapshot id right after snap_id (the next newer map), or NOSNAP. */
uint64_t rbdl_maint_next_snap(struct rbdl_image *img, uint64_t snap_id)
{
	uint64_t next = RBDL_NOSNAP;

	pthread_mutex_lock(&img->refresh_lock);
	for (uint32_t i = 0; i < img->nsnaps; i++)
		if (img->snaps[i] > snap_id && img->snaps[i] < next)
			next = img->snaps[i];
	pthread_mutex_unlock(&img->refresh_lock);
	return next;
}

/* Could the HEAD object objno exist (false only if a valid map says no)? */
bool rbdl_maint_may_exist(struct rbdl_image *img, uint64_t objno)
{
	if (!rbdl_objmap_usable(img->om) || !rbdl_objmap_trusted(img->om) ||
	    objno >= rbdl_objmap_count(img->om))
		return true;
	return rbdl_objmap_get(img->om, objno) != RBDL_OBJ_NONEXISTENT;
}


/* ---- begin / end ------------------------------------------------------------ */

/*
 * Serialize, refresh, check the image may be changed, then quiesce our
 * writes: with the exclusive lock, hold it with writes drained (MAINT);
 * without it, flush.  On success the caller must call rbdl_maint_end().
 * flags: RBDL_MAINT_AT_SNAP, a handle at a snapshot (opened there: no
 * write context) may run the operation (librbd removes snapshots from
 * such a handle); RBDL_MAINT_TRY_LOCK, take the lock only if nobody holds
 * it (-EROFS otherwise), as librbd's rollback.
 */
int rbdl_maint_begin2(struct rbdl_image *img, bool need_lock, unsigned flags)
{
	bool at_snap_ok = flags & RBDL_MAINT_AT_SNAP;
	int r;

	pthread_mutex_lock(&img->maint_mu);
	r = rbdl_image_maybe_refresh(img);
	if (r == 0 &&
	    (img->open_ro ||
	     (!atomic_load(&img->wr_io) &&
	      !(at_snap_ok && atomic_load(&img->at_snap))) ||
	     (atomic_load(&img->features) & RBDL_WRITE_UNSUPPORTED)))
		r = -EROFS;
	if (r == 0) {
		struct rbdl_io_args a = { .op = RBDL_OP_FLUSH };

		r = (int)rbdl_io_sync(img, &a);
	}
	if (r == 0 && need_lock)
		r = rbdl_lock_maint_begin(img, flags & RBDL_MAINT_TRY_LOCK);
	if (r == 0 && need_lock && rbdl_lock_enabled(img) &&
	    (atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP) &&
	    !rbdl_objmap_ready(img->om))
		r = -EROFS;	/* never change data under an unloaded map */
	if (r < 0) {
		if (need_lock)
			rbdl_lock_maint_end(img);
		pthread_mutex_unlock(&img->maint_mu);
	}
	return r;
}

int rbdl_maint_begin(struct rbdl_image *img, bool need_lock)
{
	return rbdl_maint_begin2(img, need_lock, 0);
}

void rbdl_maint_end(struct rbdl_image *img)
{
	rbdl_lock_maint_end(img);
	/* librbd holds no lock while the image is set to a snapshot. */
	if (atomic_load(&img->at_snap))
		rbdl_lock_drop(img);
	pthread_mutex_unlock(&img->maint_mu);
}

/* ---- entry points ------------------------------------------------------------ */

/*
 * A "conf_<option>" metadata key overrides a client option for this image:
 * librbd accepts only rbd_* options (not rbd_mirror_*) of the
 * configuration schema, with a value the option can take.  The value is
 * checked on a scratch configuration, never the live one.
 */
static int check_conf_override(struct rbdl_image *img, const char *opt,
			       const char *value)
{
	char buf[256];
	rados_t tmp;
	int r;

	if (strncmp(opt, "rbd_", 4) || !strncmp(opt, "rbd_mirror_", 11) ||
	    rados_conf_get(img->cluster, opt, buf, sizeof(buf)) < 0)
		return -EINVAL;
	r = rados_create(&tmp, NULL);
	if (r < 0)
		return r;
	r = rados_conf_set(tmp, opt, value);
	rados_shutdown(tmp);
	return r < 0 ? -EINVAL : 0;
}

int rbdl_maint_metadata_set(struct rbdl_image *img, const char *key,
			    const char *value)
{
	struct rbdl_enc e;
	uint8_t *in;
	size_t cap;
	int r;

	if (!key || !value)
		return -EINVAL;
	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	if (!strncmp(key, "conf_", 5)) {
		r = check_conf_override(img, key + 5, value);
		if (r < 0)
			return r;
	}
	/* metadata_set: map<string, bufferlist> with the one pair. */
	cap = strlen(key) + strlen(value) + 16;
	in = malloc(cap);
	if (!in)
		return -ENOMEM;
	rbdl_enc_init(&e, in, cap);
	rbdl_enc_u32(&e, 1);
	rbdl_enc_str(&e, key);
	rbdl_enc_bytes(&e, value, strlen(value));
	r = rbdl_maint_begin(img, true);
	if (r == 0) {
		r = e.err ? e.err : rbdl_maint_hdr_write(img, "metadata_set", in, e.len);
		if (r == 0)
			rbdl_maint_notify(img);
		rbdl_maint_end(img);
	}
	free(in);
	return r;
}

int rbdl_maint_snap_set(struct rbdl_image *img, const char *name)
{
	struct rbdl_io_args a = { .op = RBDL_OP_FLUSH, .own = true };
	int r;

	pthread_mutex_lock(&img->maint_mu);
	/* In-flight reads finish on the view they started with.  Our own
	 * requests only: a journaled image's real handle keeps its view,
	 * HEAD (and a flush there would be journaled, or fail with -EROFS
	 * after rbd_lock_release; librbd's snap_set does neither). */
	r = (int)rbdl_io_sync(img, &a);
	if (r == 0)
		r = rbdl_image_set_snap(img, name);
	pthread_mutex_unlock(&img->maint_mu);
	return r;
}
