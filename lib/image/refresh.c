/*
 * refresh.c - bring an open image's metadata up to date after its header
 * changed (another client's or our own HEADER_UPDATE, or a lost watch),
 * as librbd's RefreshRequest does: size, features, flags, what backs the
 * view (parent.h), the snapshot context of writes, the write gate, and
 * the settings the data path applies.
 *
 * Threading: under refresh_lock, on whichever thread finds the refresh due
 * (a control call, the lock's acquisition, the refresh task that I/O
 * waiting for it queued behind, io/request.c).  Values the
 * I/O path reads are published with release stores after everything they
 * depend on; an old write context stays valid for requests already using
 * it and is destroyed at close.
 */
#include "config.h"

#include "refresh.h"
#include "stamps.h"

#include "conf.h"
#include "core/internal.h"
#include "load.h"
#include "parent.h"
#include "proto/cls_rbd.h"
#include "proto/rados.h"
#include "watch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

/*
 * librbd 16.2 (ImageCtx::apply_metadata, run at open and every refresh):
 * with rbd_skip_partial_discard (default true) rbd_discard/rbd_aio_discard
 * shrink each object's range to whole rbd_discard_granularity_bytes units
 * (default 64 KiB) and skip what is left; write-zeroes is never pruned.
 * Both settings may be overridden per pool and per image ("conf_"
 * metadata).  A granularity override librbd's option would refuse (not a
 * power of two in 4 KiB..32 MiB) is ignored, as librbd ignores it.
 * rbd_disable_zero_copy_writes (default true) decides whether write data
 * kept past an aio call is copied (state.h: copy_writes).  The write-around
 * policy (io/writearound.c): rbd_cache (default true) with rbd_cache_policy
 * writearound (the default) or writeback (served as write-around)
 * acknowledges writes early within rbd_cache_max_dirty (default 24 MiB),
 * from the application's first flush on while
 * rbd_cache_writethrough_until_flush (default true); writethrough, or
 * rbd_cache=false, never does.  An unknown policy counts as write-around
 * (librbd refuses to set one).  rbd_io_scheduler=simple (the default;
 * none turns it off) merges adjacent writes (io/sched.h).
 * rbd_discard_on_zeroed_write_same (default true; the client's value
 * only) turns a writesame of zeroes into a zeroing discard, as librbd's C
 * API does (state.h).
 * QoS limits (rbd_qos_*) are not enforced; an open that finds one says so
 * in the debug log (RBDLITE_DEBUG=1).
 */
void rbdl_image_apply_settings(struct rbdl_image *img, bool at_open)
{
	static const char *const qos[] = {
		"rbd_qos_iops_limit", "rbd_qos_bps_limit",
		"rbd_qos_read_iops_limit", "rbd_qos_write_iops_limit",
		"rbd_qos_read_bps_limit", "rbd_qos_write_bps_limit",
	};
	struct rbdl_conf c;
	uint64_t g = 0, max_dirty = 0;
	bool copy, wtuf, sched, wsz;

	rbdl_conf_load(&c, img->md_io, img->header_oid);
	if (rbdl_conf_bool(&c, true, "rbd_skip_partial_discard", true)) {
		g = rbdl_conf_uint(&c, true, "rbd_discard_granularity_bytes",
				   65536);
		if (g < 4096 || g > (32u << 20) || (g & (g - 1)))
			g = rbdl_conf_uint(&c, false,
					   "rbd_discard_granularity_bytes",
					   65536);
	}
	/* librbd throttles to these; librbdlite does not: say so. */
	for (size_t i = 0; at_open && i < RBDL_ARRAY_SIZE(qos); i++) {
		if (rbdl_conf_uint(&c, true, qos[i], 0)) {
			rbdl_log("image %s: %s is set, but librbdlite does "
				 "not throttle I/O", img->name, qos[i]);
			break;
		}
	}
	if (rbdl_conf_bool(&c, true, "rbd_cache", true)) {
		char pol[32];

		if (rbdl_conf_get(&c, true, "rbd_cache_policy", pol,
				  sizeof(pol)) < 0 ||
		    strcmp(pol, "writethrough") != 0)
			max_dirty = rbdl_conf_size(&c, true,
						   "rbd_cache_max_dirty",
						   24u << 20);
	}
	wtuf = rbdl_conf_bool(&c, true, "rbd_cache_writethrough_until_flush",
			      true);
	{
		char sch[16];

		sched = rbdl_conf_get(&c, true, "rbd_io_scheduler", sch,
				      sizeof(sch)) < 0 ||
			strcmp(sch, "none") != 0;
	}
	/* librbd: a write-around cache forces copying (its early
	 * acknowledgement would otherwise return buffers still in use). */
	copy = rbdl_conf_bool(&c, true, "rbd_disable_zero_copy_writes", true) ||
	       max_dirty;
	/* Not an option librbd takes from pool or image metadata. */
	wsz = rbdl_conf_bool(&c, false, "rbd_discard_on_zeroed_write_same",
			     true);
	rbdl_stamps_settings(img, &c);
	rbdl_conf_free(&c);
	atomic_store_explicit(&img->ws_zero_discards, wsz,
			      memory_order_relaxed);
	atomic_store_explicit(&img->wa.max_dirty, max_dirty,
			      memory_order_relaxed);
	atomic_store_explicit(&img->wa.wtuf, wtuf, memory_order_relaxed);
	atomic_store_explicit(&img->sched.on, sched && !img->read_only,
			      memory_order_relaxed);
	atomic_store_explicit(&img->discard_granularity, g,
			      memory_order_relaxed);
	atomic_store_explicit(&img->copy_writes, copy, memory_order_relaxed);
}

int rbdl_image_refresh_slow(struct rbdl_image *img)
{
	uint64_t features, incompat, size, seq, *snaps = NULL, flags = 0;
	uint32_t n = 0;
	uint8_t order;
	int r = 0;

	pthread_mutex_lock(&img->refresh_lock);
	unsigned target = atomic_load_explicit(&img->refresh_seq,
					       memory_order_acquire);

	if (target == atomic_load_explicit(&img->applied_seq,
					   memory_order_relaxed))
		goto out;
	r = rbdl_watch_repair(img);
	if (r < 0)
		goto out;
	r = rbdl_read_size(img->md_io, img->header_oid, RBDL_NOSNAP, &order,
			   &size);
	if (r < 0)
		goto out;
	if (img->snap_id != RBDL_NOSNAP) {
		/* rbd_snap_set: the size is the snapshot's (kept if the
		 * snapshot was removed meanwhile, as librbd keeps reading). */
		uint64_t ssize;

		if (rbdl_read_size(img->md_io, img->header_oid, img->snap_id,
				   &order, &ssize) == 0)
			size = ssize;
		else
			size = atomic_load(&img->size);
	}
	r = rbdl_read_features(img->md_io, img->header_oid, true, &features,
			       &incompat);
	if (r < 0)
		goto out;
	/* A flatten, a shrink or a finished migration changes what backs
	 * the view; a new view applies to requests started from now on. */
	r = rbdl_parent_update(img, img->snap_id, size, features);
	if (r < 0)
		goto out;
	/* The flags of the view: HEAD's, or the snapshot's (kept if the
	 * snapshot was removed meanwhile, as the size above). */
	{
		struct rbdl_lock_info li;
		bool ok;

		r = rbdl_read_flags_lockers(img->md_io, img->header_oid,
					    img->snap_id, &flags, &li, &ok);
		if (ok) {
			rbdl_lock_info_free(&img->lockers);
			img->lockers = li;
		}
		img->lockers_ok = ok;
	}
	if (r == -ENOENT && img->snap_id != RBDL_NOSNAP) {
		flags = atomic_load_explicit(&img->flags, memory_order_relaxed);
		r = 0;
	}
	if (r < 0)
		goto out;
	r = rbdl_read_snapcontext(img->md_io, img->header_oid, &seq,
				  &snaps, &n);
	if (r < 0)
		goto out;
	/* A migration's destination opens (image_load); write_gate says
	 * whether it may be written. */
	incompat &= ~(uint64_t)RBD_FEATURE_MIGRATING;
	if (incompat & ~(uint64_t)RBDL_READ_SUPPORTED) {
		rbdl_log("image %s gained unsupported features 0x%" PRIx64
			 "; refusing further writes", img->name, incompat);
		atomic_store(&img->write_error, -EROFS);
	} else {
		int g = rbdl_image_write_gate(img, features, n,
					      rbdl_parent_view(img)->migration);

		if (g && !atomic_load(&img->write_error))
			rbdl_image_log_write_refusal(img, features);
		atomic_store(&img->write_error, g);
	}
	if (seq != img->snap_seq || n != img->nsnaps ||
	    (n && memcmp(snaps, img->snaps, n * sizeof(*snaps)))) {
		rados_ioctx_t io;
		struct rbdl_retired_io *ri = malloc(sizeof(*ri));

		if (!ri) {
			r = -ENOMEM;
			goto out;
		}
		r = rbdl_image_write_ioctx(img, seq, snaps, n, &io);
		if (r < 0) {
			free(ri);
			goto out;
		}
		/* Relaxed: only a hint that copy-up must keep snapshots
		 * right, ordered with the context by the release below. */
		atomic_store_explicit(&img->wr_nsnaps, n, memory_order_relaxed);
		/* Release: a submitter that loads the new context (acquire)
		 * sees it fully set up.  The old one stays valid for requests
		 * already using it and is destroyed at close. */
		ri->io = atomic_exchange_explicit(&img->wr_io, io,
						  memory_order_acq_rel);
		ri->next = img->retired;
		img->retired = ri;
		free(img->snaps);
		img->snaps = snaps;
		img->snap_seq = seq;
		img->nsnaps = n;
		snaps = NULL;
	}
	/* The snapshot of the view still there, by id, namespace and name
	 * (librbd looks it up by name; a snapshot moved to the trash
	 * namespace is gone for it too)? */
	if (img->snap_id != RBDL_NOSNAP && img->snap_name &&
	    !atomic_load_explicit(&img->snap_gone, memory_order_relaxed)) {
		struct rbdl_snap_info si;
		int q = rbdl_read_snapshot_info(img->md_io, img->header_oid,
						img->snap_id, &si);

		if (q == -ENOENT || q == -EINVAL ||
		    (q == 0 && (si.ns_type != img->snap_ns || !si.name ||
				strcmp(si.name, img->snap_name))))
			atomic_store_explicit(&img->snap_gone, true,
					      memory_order_relaxed);
		if (q == 0)
			rbdl_snap_info_free(&si);
	}
	rbdl_image_apply_settings(img, false);
	atomic_store_explicit(&img->size, size, memory_order_release);
	atomic_store_explicit(&img->features, features, memory_order_relaxed);
	atomic_store_explicit(&img->flags, flags, memory_order_relaxed);
	/* Release: pairs with maybe_refresh's loads. */
	atomic_store_explicit(&img->applied_seq, target, memory_order_release);
out:
	free(snaps);
	pthread_mutex_unlock(&img->refresh_lock);
	return r;
}
