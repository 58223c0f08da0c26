/*
 * features.c - rbd_update_features and rbd_rebuild_object_map (see
 * features.h), as librbd 16.2.15 does them.
 *
 * update_features (Operations::update_features, EnableFeaturesRequest,
 * DisableFeaturesRequest):
 *   checks: read-only or snapshot open -EROFS; only mutable features (and
 *   deep-flatten, disable only; never the internal non-primary and
 *   dirty-cache) else -EINVAL; object-map and fast-diff go together; none
 *   left, or one already in the wanted state: -EINVAL;
 *   enable:  object-map needs exclusive-lock (-EINVAL); flag the maps
 *            invalid (HEAD and every snapshot), set the features, create
 *            the maps (every object NONEXISTENT: librbd 16.2.15 leaves them
 *            invalid until rbd_rebuild_object_map), HEADER_UPDATE;
 *   disable: exclusive-lock needs object-map off (-EINVAL); remove the
 *            maps, set the features, clear the flags, HEADER_UPDATE, and
 *            release the lock.
 *   Journaling is refused with -EOPNOTSUPP and *need_real: librbdlite's
 *   data path writes no journal, so it can neither start one nor retire
 *   one consistently; the system's librbd does (and runs a journaled
 *   image's I/O and changes, api/journaled.c).
 *   Our own open follows: the lock is set up or torn down, the HEAD map
 *   loaded or unloaded.
 *
 * rebuild_object_map (RebuildObjectMapRequest + ObjectMapIterateRequest):
 *   the map of the opened view (HEAD, or the snapshot the image is at)
 *   gets each object's state from RADOS: NONEXISTENT, EXISTS, or with
 *   fast-diff EXISTS_CLEAN when the object is the same version as at the
 *   previous snapshot (librbd reads list_snaps; the C API has none, so
 *   the object's version is compared at both snapshots).  On HEAD a map
 *   EXISTS is never lowered to NONEXISTENT (librbd: a write may be in
 *   flight).  A map of another length first takes the view's (one longer
 *   loses its tail, whatever it says, as librbd's loaded map).  Then the
 *   view's invalid flags are cleared.
 *
 * Threading: the caller's thread, with maint_mu held (maint.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "features.h"
#include "maint_int.h"

#include "core/internal.h"
#include "image/load.h"
#include "image/lock.h"
#include "image/objmap.h"
#include "image/refresh.h"
#include "image/state.h"
#include "proto/objmap_wire.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "proto/wire.h"
#include "rbd/features.h"
#include "rbd/librbd.h"

#define OM_FLAGS (RBD_FLAG_OBJECT_MAP_INVALID | RBD_FLAG_FAST_DIFF_INVALID)

/* The snapshot ids of our current view of the header (malloc'ed). */
static int snap_ids(struct rbdl_image *img, uint64_t **ids, uint32_t *n)
{
	*ids = rbdl_image_snap_ids(img, n);
	return *ids ? 0 : -ENOMEM;
}

/* rbd.set_flags(flags, mask) on one snapshot (NOSNAP: HEAD). */
static int set_flags(struct rbdl_image *img, uint64_t snap, uint64_t flags,
		     uint64_t mask)
{
	uint8_t in[24];
	struct rbdl_enc e;

	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_u64(&e, flags);
	rbdl_enc_u64(&e, mask);
	rbdl_enc_u64(&e, snap);
	return rbdl_maint_hdr_write(img, "set_flags", in, (size_t)e.len);
}

/* image::SetFlagsRequest: every snapshot, then HEAD. */
static int set_flags_all(struct rbdl_image *img, const uint64_t *snaps,
			 uint32_t n, uint64_t flags, uint64_t mask)
{
	int r = 0;

	for (uint32_t i = 0; i < n && r == 0; i++)
		r = set_flags(img, snaps[i], flags, mask);
	if (r == 0)
		r = set_flags(img, RBDL_NOSNAP, flags, mask);
	return r;
}

static int set_features(struct rbdl_image *img, uint64_t features,
			uint64_t mask)
{
	uint8_t in[16];
	struct rbdl_enc e;

	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_u64(&e, features);
	rbdl_enc_u64(&e, mask);
	return rbdl_maint_hdr_write(img, "set_features", in, (size_t)e.len);
}

/* The image size at snapshot snap (NOSNAP: HEAD). */
static int view_size(struct rbdl_image *img, uint64_t snap, uint64_t *size)
{
	struct rbdl_snap_info si;
	int r;

	uint8_t order;

	if (snap == RBDL_NOSNAP)
		return rbdl_read_size(img->md_io, img->header_oid, RBDL_NOSNAP,
				      &order, size);
	r = rbdl_read_snapshot_info(img->md_io, img->header_oid, snap, &si);
	if (r < 0)
		return r;
	*size = si.image_size;
	rbdl_snap_info_free(&si);
	return 0;
}

/* object_map::CreateRequest: each map sized for its view, all
 * NONEXISTENT. */
static int create_map(struct rbdl_image *img, uint64_t snap)
{
	char oid[RBDL_OID_MAX];
	uint8_t in[16];
	uint64_t size;
	long n;
	int r = view_size(img, snap, &size);

	if (r == 0)
		r = rbdl_oid_object_map(oid, sizeof(oid), img->id, snap);
	if (r < 0)
		return r;
	n = rbdl_encode_object_map_resize(
		in, sizeof(in), rbdl_layout_num_objects(&img->layout, size),
		RBDL_OBJ_NONEXISTENT);
	if (n < 0)
		return (int)n;
	return rbdl_cls_write(img->md_io, oid, "rbd", "object_map_resize", in,
			      (size_t)n);
}

/* object_map::RemoveRequest: every snapshot's map and HEAD's. */
static int remove_maps(struct rbdl_image *img, const uint64_t *snaps,
		       uint32_t n)
{
	char oid[RBDL_OID_MAX];
	int r = 0;

	for (uint32_t i = 0; i <= n && r == 0; i++) {
		r = rbdl_oid_object_map(oid, sizeof(oid), img->id,
					i < n ? snaps[i] : RBDL_NOSNAP);
		if (r == 0)
			r = rbdl_remove_if_exists(img->md_io, oid);
	}
	return r;
}

static int enable_features(struct rbdl_image *img, uint64_t features)
{
	uint64_t cur = atomic_load(&img->features), *snaps = NULL;
	uint64_t m = features & ~cur, newf, mask, eflags = 0;
	uint32_t n = 0;
	int r;

	/* EnableFeaturesRequest interlocks the two again. */
	if (m & (RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_FAST_DIFF))
		m |= RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_FAST_DIFF;
	newf = cur | m;
	mask = m;
	if (m & RBD_FEATURE_OBJECT_MAP) {
		if (!(newf & RBD_FEATURE_EXCLUSIVE_LOCK))
			return -EINVAL;
		eflags |= RBD_FLAG_OBJECT_MAP_INVALID;
		mask |= RBD_FEATURE_EXCLUSIVE_LOCK | RBD_FEATURE_FAST_DIFF;
	}
	if (m & RBD_FEATURE_FAST_DIFF) {
		eflags |= RBD_FLAG_FAST_DIFF_INVALID;
		mask |= RBD_FEATURE_EXCLUSIVE_LOCK | RBD_FEATURE_OBJECT_MAP;
	}
	r = snap_ids(img, &snaps, &n);
	if (r == 0 && eflags)
		r = set_flags_all(img, snaps, n, eflags, eflags);
	if (r == 0)
		r = set_features(img, newf, mask);
	if (r == 0 && !(cur & RBD_FEATURE_OBJECT_MAP) &&
	    (m & RBD_FEATURE_OBJECT_MAP)) {
		for (uint32_t i = 0; i < n && r == 0; i++)
			r = create_map(img, snaps[i]);
		if (r == 0)
			r = create_map(img, RBDL_NOSNAP);
	}
	free(snaps);
	if (r < 0)
		return r;
	rbdl_maint_notify(img);
	r = rbdl_maint_refresh(img);
	/* Our open follows: a lock to take from the next write on, or the
	 * map to keep under the lock we hold now. */
	if (r == 0 && (m & RBD_FEATURE_EXCLUSIVE_LOCK))
		r = rbdl_lock_feature_on(img);
	if (r == 0 && (m & RBD_FEATURE_OBJECT_MAP) && rbdl_lock_in_maint(img) &&
	    !rbdl_objmap_ready(img->om))
		r = rbdl_objmap_load(img, atomic_load(&img->size));
	return r;
}

static int disable_features(struct rbdl_image *img, uint64_t features)
{
	uint64_t cur = atomic_load(&img->features), *snaps = NULL;
	uint64_t m = features & cur, newf = cur & ~m, mask = m, dflags = 0;
	uint32_t n = 0;
	int r;

	if (m & RBD_FEATURE_EXCLUSIVE_LOCK) {
		if (newf & (RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_JOURNALING))
			return -EINVAL;
		mask |= RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_JOURNALING;
	}
	if (m & RBD_FEATURE_FAST_DIFF)
		dflags |= RBD_FLAG_FAST_DIFF_INVALID;
	if (m & RBD_FEATURE_OBJECT_MAP) {
		if (newf & RBD_FEATURE_FAST_DIFF)
			return -EINVAL;
		dflags |= RBD_FLAG_OBJECT_MAP_INVALID;
	}
	r = snap_ids(img, &snaps, &n);
	if (r == 0 && (m & RBD_FEATURE_OBJECT_MAP)) {
		/* Stop keeping the map (writes are drained) before it goes. */
		rbdl_objmap_unload(img);
		r = remove_maps(img, snaps, n);
	}
	if (r == 0)
		r = set_features(img, newf, mask);
	if (r == 0 && dflags)
		r = set_flags_all(img, snaps, n, 0, dflags);
	free(snaps);
	if (r < 0)
		return r;
	rbdl_maint_notify(img);
	r = rbdl_maint_refresh(img);
	if (m & RBD_FEATURE_EXCLUSIVE_LOCK)
		rbdl_lock_feature_off(img);
	return r;
}

int rbdl_update_features(struct rbdl_image *img, uint64_t features,
			 bool enabled, bool *need_real)
{
	const uint64_t om_fd = RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_FAST_DIFF;
	uint64_t cur;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	/* librbd's order: a read-only open, the features asked for, then a
	 * handle at a snapshot (refused when the update starts). */
	if (img->open_ro)
		return -EROFS;
	if ((enabled && (features & RBD_FEATURES_MUTABLE) != features) ||
	    (!enabled && (features & (RBD_FEATURES_MUTABLE |
				      RBD_FEATURES_DISABLE_ONLY)) != features) ||
	    (features & RBD_FEATURES_MUTABLE_INTERNAL))
		return -EINVAL;
	cur = atomic_load(&img->features);
	/* librbd 16.2.15: object-map and fast-diff are enabled together when
	 * either is missing, and disabled together. */
	if (enabled) {
		if (((features & RBD_FEATURE_OBJECT_MAP) &&
		     !(cur & RBD_FEATURE_FAST_DIFF)) ||
		    ((features & RBD_FEATURE_FAST_DIFF) &&
		     !(cur & RBD_FEATURE_OBJECT_MAP)))
			features |= om_fd;
	} else {
		if (((features & RBD_FEATURE_OBJECT_MAP) &&
		     (cur & RBD_FEATURE_FAST_DIFF)) ||
		    ((features & RBD_FEATURE_FAST_DIFF) &&
		     (cur & RBD_FEATURE_OBJECT_MAP)))
			features |= om_fd;
	}
	if (features == 0)
		return -EINVAL;
	if (enabled && (features & cur))
		return -EINVAL;
	if (!enabled && (features & ~cur))
		return -EINVAL;
	if (img->read_only)
		return -EROFS;
	/* No journal is written by librbdlite's data path: enabling
	 * journaling creates one for librbd to append to (the image's I/O is
	 * then librbd's, image/journal.h), disabling it needs the journal
	 * replayed: the system's librbd does both. */
	if (features & RBD_FEATURE_JOURNALING) {
		*need_real = true;
		return -EOPNOTSUPP;
	}
	r = rbdl_maint_begin(img, true);
	if (r < 0)
		return r;
	r = enabled ? enable_features(img, features)
		    : disable_features(img, features);
	rbdl_maint_end(img);
	return r;
}

/* ---- rbd_rebuild_object_map ------------------------------------------------ */

/* Size and user version of data object oid at snapshot snap (the read
 * snapshot of io is changed): 0, -ENOENT, or an error. */
static int stat_at(rados_ioctx_t io, const char *oid, uint64_t snap,
		   uint64_t *ver)
{
	uint64_t size;
	time_t mtime;
	int r;

	rados_ioctx_snap_set_read(io, snap == RBDL_NOSNAP ? LIBRADOS_SNAP_HEAD
							  : snap);
	r = rados_stat(io, oid, &size, &mtime);
	if (r == 0)
		*ver = rados_get_last_version(io);
	return r;
}

/* The state object objno should have in the map of view snap (prev: the
 * snapshot before it, or 0), as ObjectMapIterateRequest computes it. */
static int object_state(struct rbdl_image *img, rados_ioctx_t io,
			uint64_t objno, uint64_t snap, uint64_t prev,
			bool fast_diff, uint8_t *state)
{
	char oid[RBDL_OID_MAX];
	uint64_t v = 0, pv = 0;
	int r = rbdl_oid_data(oid, sizeof(oid), img->object_prefix, objno);

	if (r < 0)
		return r;
	r = stat_at(io, oid, snap, &v);
	if (r == -ENOENT) {
		*state = RBDL_OBJ_NONEXISTENT;
		return 0;
	}
	if (r < 0)
		return r;
	*state = RBDL_OBJ_EXISTS;
	if (fast_diff && prev) {
		r = stat_at(io, oid, prev, &pv);
		if (r == 0 && pv == v)
			*state = RBDL_OBJ_EXISTS_CLEAN;
		else if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

int rbdl_rebuild_object_map(struct rbdl_image *img, rbdl_progress_fn cb,
			    void *arg)
{
	uint64_t snap, prev = 0, size = 0, nobjs, *snaps = NULL, mapn = 0;
	uint8_t *bits = NULL;
	rados_ioctx_t io = NULL;
	char oid[RBDL_OID_MAX];
	bool head, fast_diff;
	uint32_t n = 0;
	int r;

	pthread_mutex_lock(&img->maint_mu);
	r = rbdl_image_maybe_refresh(img);
	snap = img->snap_id;
	head = snap == RBDL_NOSNAP;
	pthread_mutex_unlock(&img->maint_mu);
	if (r < 0)
		return r;
	/* librbd: read-only opens (and HEAD without a write context) may
	 * not; a snapshot of a read-write open may. */
	if (img->open_ro || (head && img->read_only))
		return -EROFS;
	if (!(atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP))
		return -EINVAL;
	if (head) {
		r = rbdl_maint_begin(img, true);
		if (r < 0)
			return r;
	} else {
		pthread_mutex_lock(&img->maint_mu);
	}
	fast_diff = atomic_load(&img->features) & RBD_FEATURE_FAST_DIFF;
	r = snap_ids(img, &snaps, &n);
	for (uint32_t i = 0; r == 0 && i < n; i++)
		if (snaps[i] < snap && snaps[i] > prev)
			prev = snaps[i];
	if (r == 0)
		r = view_size(img, snap, &size);
	if (r == 0)
		r = rbdl_oid_object_map(oid, sizeof(oid), img->id, snap);
	nobjs = rbdl_layout_num_objects(&img->layout, size);
	/* The map first has the view's length. */
	if (r == 0) {
		r = rbdl_objmap_read(img->md_io, img->id, snap, &bits, &mapn);
		if (r < 0 || mapn != nobjs) {
			uint8_t in[32];
			long l;

			free(bits);
			bits = NULL;
			if (r == 0 && mapn > nobjs) {
				/* librbd's map of the view is cut to the
				 * view's objects when loaded and saved so:
				 * the entries past the end go, whatever they
				 * say (their objects are left alone), where
				 * object_map_resize would refuse (-ESTALE). */
				l = rbdl_encode_object_map_update(
					in, sizeof(in), nobjs, mapn,
					RBDL_OBJ_NONEXISTENT, false, 0);
				r = l < 0 ? (int)l
					  : rbdl_objmap_write(
						    img, oid, head,
						    "object_map_update", in,
						    (size_t)l);
			} else {
				r = 0;	/* unreadable or short: resized */
			}
			l = rbdl_encode_object_map_resize(
				in, sizeof(in), nobjs, RBDL_OBJ_NONEXISTENT);
			if (r == 0)
				r = l < 0 ? (int)l
					  : rbdl_objmap_write(
						    img, oid, head,
						    "object_map_resize", in,
						    (size_t)l);
			if (r == 0)
				r = rbdl_objmap_read(img->md_io, img->id, snap,
						     &bits, &mapn);
		}
	}
	if (r == 0) {
		char *ns = NULL;

		r = rbdl_ioctx_clone(img->rd_io, &io, &ns);
		free(ns);
	}
	/* Verify every object (progress after each), then save: a cancelled
	 * rebuild leaves the stored map as it was (librbd saves the map it
	 * rebuilt in memory only at the end). */
	uint8_t *want = r == 0 ? calloc(nobjs ? nobjs : 1, 1) : NULL;

	if (r == 0 && !want)
		r = -ENOMEM;
	for (uint64_t o = 0; r == 0 && o < nobjs; o++) {
		uint8_t cur = o < mapn ? rbdl_om_state(bits, o)
				       : RBDL_OBJ_NONEXISTENT;

		r = object_state(img, io, o, snap, prev, fast_diff, &want[o]);
		if (r < 0)
			break;
		/* A write may be creating it right now (librbd). */
		if (head && cur == RBDL_OBJ_EXISTS &&
		    want[o] == RBDL_OBJ_NONEXISTENT)
			want[o] = cur;
		if (cb) {
			int cr = cb(o, nobjs, arg);

			if (cr < 0)
				r = cr;
		}
	}
	/* Save: one object_map_update per run of changed objects that take
	 * the same state. */
	for (uint64_t o = 0; r == 0 && o < nobjs;) {
		uint64_t e = o;

		while (e < nobjs && want[e] == want[o] &&
		       (e < mapn ? rbdl_om_state(bits, e)
				 : RBDL_OBJ_NONEXISTENT) != want[e])
			e++;
		if (e == o) {
			o++;
			continue;
		}
		uint8_t in[32];
		long l = rbdl_encode_object_map_update(in, sizeof(in), o, e,
						       want[o], false, 0);

		r = l < 0 ? (int)l
			  : rbdl_objmap_write(img, oid, head,
					      "object_map_update", in,
					      (size_t)l);
		o = e;
	}
	free(want);
	if (io)
		rados_ioctx_destroy(io);
	free(bits);
	free(snaps);
	/* RebuildObjectMapRequest::send_update_header: the view's flags. */
	if (r == 0)
		r = set_flags(img, snap, 0, OM_FLAGS);
	if (r == 0) {
		rbdl_maint_notify(img);
		r = rbdl_maint_refresh(img);
	}
	if (head) {
		rbdl_maint_end(img);
	} else {
		pthread_mutex_unlock(&img->maint_mu);
	}
	return r;
}
