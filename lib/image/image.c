/*
 * image.c - open, refresh and close format-2 RBD images.
 *
 * Open follows librbd's OpenRequest/RefreshRequest sequence with the cls
 * "rbd" methods (rbd-protocol.md section 2): get_id, then get_size,
 * get_object_prefix, get_features, get_stripe_unit_count, get_data_pool,
 * get_flags, get_snapcontext, parent_get/parent_overlap_get and, for a
 * snapshot open, snapshot_get for each snapshot id.
 *
 * What librbdlite does with the image is decided here, once, and refreshed
 * when the header changes:
 *   - incompatible features it does not understand: open fails with
 *     -ENOSYS (librbd's errno);
 *   - a clone, or the destination of a migration, reads through to the
 *     image backing it (parent.c decides which, and refuses migrations it
 *     cannot read: being prepared or aborted, or from non-RBD sources);
 *   - format 1 images: open fails with -EOPNOTSUPP;
 *   - features whose on-disk state it does not maintain (journaling,
 *     non-primary, migrating, dirty-cache): open succeeds, reads work,
 *     every write-type request completes with -EROFS;
 *   - read-only and snapshot opens: write-type requests complete with
 *     -EROFS, as in librbd; rbd_snap_set moves a read-write open to a
 *     snapshot (read-only then) and back (rbdl_image_set_snap).
 *
 * Threading and ownership: see image.h.  Control-path calls here are
 * synchronous rados calls; none runs inside a librados callback.
 */
#include "config.h"

#include "proto/oid.h"
#include "image.h"
#include "proto/rados.h"
#include "proto/wire.h"
#include "proto/cls_rbd.h"
#include "proto/notify.h"
#include "conf.h"
#include "core/internal.h"
#include "core/slab.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

/* Incompatible features a reader understands.  dirty-cache: librbd 16.2
 * without a persistent-cache plugin opens such an image and reads RADOS;
 * librbdlite reads it the same way but refuses writes (write_gate). */
#define RBDL_READ_SUPPORTED                                                  \
	(RBD_FEATURE_LAYERING | RBD_FEATURE_STRIPINGV2 |                     \
	 RBD_FEATURE_DATA_POOL | RBD_FEATURE_DIRTY_CACHE)

/* Resolve name -> id (or id -> name) in the image's pool and namespace. */
static int lookup_id(struct rbdl_image *img, const char *name, const char *id)
{
	char *out;
	size_t outlen;
	int r;

	if (name) {
		/* librbd opens names of any length RADOS accepts
		 * (osd_max_object_name_len, 2048). */
		char oid[RBDL_OID_MAX];

		if (strlen(name) > RBDL_NAME_MAX)
			return -ENOENT;
		rbdl_oid_id(oid, sizeof(oid), name);
		r = rbdl_cls_read(img->md_io, oid, "rbd", "get_id", NULL, 0, &out,
			     &outlen);
		if (r == -ENOENT) {
			/* A format 1 image has "<name>.rbd" instead. */
			uint64_t psize;
			time_t pmtime;

			rbdl_oid_v1_header(oid, sizeof(oid), name);
			if (rados_stat(img->md_io, oid, &psize, &pmtime) == 0) {
				rbdl_log("image %s is format 1, which "
					 "librbdlite does not support", name);
				return -EOPNOTSUPP;
			}
			return -ENOENT;
		}
		if (r < 0)
			return r;
		r = rbdl_decode_string(out, outlen, &img->id);
		rados_buffer_free(out);
		if (r < 0)
			return r;
		img->name = strdup(name);
	} else {
		struct rbdl_enc e;
		uint8_t in[256];

		if (strlen(id) > 200)
			return -EINVAL;
		rbdl_enc_init(&e, in, sizeof(in));
		rbdl_enc_str(&e, id);
		r = rbdl_cls_read(img->md_io, "rbd_directory", "rbd",
			     "dir_get_name", in, e.len, &out, &outlen);
		if (r == -ENOENT) {
			/* Not listed: in the trash (a parent removed while
			 * clones remain, a migration source), or gone --
			 * the header read below tells.  librbd opens it. */
			img->name = strdup(id);
		} else if (r < 0) {
			return r;
		} else {
			r = rbdl_decode_string(out, outlen, &img->name);
			rados_buffer_free(out);
			if (r < 0)
				return r;
		}
		img->id = strdup(id);
	}
	if (!img->name || !img->id)
		return -ENOMEM;
	if (strlen(img->id) == 0)
		return -ENOENT;
	size_t n = strlen(img->id) + sizeof("rbd_header.");

	img->header_oid = malloc(n);
	if (!img->header_oid)
		return -ENOMEM;
	rbdl_oid_header(img->header_oid, n, img->id);
	return 0;
}

/* Find a user snapshot by name: its id and size. */
static int find_snap(struct rbdl_image *img, const char *snap_name,
		     uint64_t *snap_id, uint64_t *size)
{
	for (uint32_t i = 0; i < img->nsnaps; i++) {
		struct rbdl_snap_info si;
		int r = rbdl_read_snapshot_info(img->md_io, img->header_oid,
						img->snaps[i], &si);

		if (r == -ENOENT)
			continue;	/* removed meanwhile */
		if (r < 0)
			return r;
		bool match = si.ns_type == 0 && strcmp(si.name, snap_name) == 0;

		if (match) {
			*snap_id = si.id;
			*size = si.image_size;
		}
		rbdl_snap_info_free(&si);
		if (match)
			return 0;
	}
	return -ENOENT;
}

/* Why writes must be refused for these features (0 if they are fine). */
static int write_gate(struct rbdl_image *img, uint64_t features)
{
	if (img->read_only)
		return -EROFS;
	if (features & RBDL_WRITE_UNSUPPORTED)
		return -EROFS;
	return 0;
}

static void log_write_refusal(struct rbdl_image *img, uint64_t features)
{
	if (img->read_only || !(features & RBDL_WRITE_UNSUPPORTED))
		return;
	rbdl_log("image %s: features 0x%" PRIx64 " (journaling, mirroring "
		 "non-primary, migration or a dirty cache) need state that "
		 "librbdlite does not maintain; it is opened for reading and "
		 "writes will fail with EROFS",
		 img->name, (uint64_t)(features & RBDL_WRITE_UNSUPPORTED));
}

int rbdl_image_data_ioctx(struct rbdl_image *img, rados_ioctx_t *out)
{
	char *ns;
	int r = rbdl_ioctx_namespace(img->md_io, &ns);

	if (r < 0)
		return r;
	r = rbdl_ioctx_dup(img->cluster,
			   img->data_pool_id >= 0 ? img->data_pool_id
						  : img->md_pool_id,
			   ns, out);
	free(ns);
	return r;
}

static int make_write_io(struct rbdl_image *img, uint64_t seq,
			 uint64_t *snaps, uint32_t n, rados_ioctx_t *out)
{
	rados_ioctx_t io;
	int r = rbdl_image_data_ioctx(img, &io);

	if (r < 0)
		return r;
	r = rados_ioctx_selfmanaged_snap_set_write_ctx(
		io, seq, (rados_snap_t *)snaps, (int)n);
	if (r < 0) {
		rados_ioctx_destroy(io);
		return r;
	}
	*out = io;
	return 0;
}

static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle,
		     uint64_t notifier_id, void *data, size_t data_len)
{
	struct rbdl_image *img = arg;
	struct rbdl_notify_msg m;
	(void)notifier_id;

	/* Mark the header stale BEFORE acking a HEADER_UPDATE: the notifier
	 * (rbd snap create, rbd resize) returns once every watcher acked, and
	 * a write submitted after that must already see the refresh due.
	 * Release: pairs with the acquire in maybe_refresh. */
	bool ok = rbdl_decode_notify(data, data_len, &m) == 0;

	if (!ok || m.op == RBDL_NOTIFY_HEADER_UPDATE) {
		atomic_fetch_add_explicit(&img->refresh_seq, 1,
					  memory_order_release);
		rbdl_updw_notify(img);	/* rbd_update_watch callbacks */
	}
	/* Ack promptly, whatever it is: a peer waits for every watcher.
	 * With the exclusive lock, the lock code decides the reply. */
	if (ok && atomic_load(&img->lk.state) != RBDL_LOCK_DISABLED)
		rbdl_lock_notify(img, notify_id, handle, &m);
	else
		rados_notify_ack(img->md_io, img->header_oid, notify_id,
				 handle, NULL, 0);
}

static void watch_err_cb(void *arg, uint64_t cookie, int err)
{
	struct rbdl_image *img = arg;
	(void)cookie;
	(void)err;

	/* Notifications may have been missed: re-watch and refresh on the
	 * next request (never block in this librados thread). */
	atomic_store_explicit(&img->watch_broken, true, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
}

/*
 * librbd 16.2 (ImageCtx::apply_metadata, run at open and every refresh):
 * with rbd_skip_partial_discard (default true) rbd_discard/rbd_aio_discard
 * shrink each object's range to whole rbd_discard_granularity_bytes units
 * (default 64 KiB) and skip what is left; write-zeroes is never pruned.
 * Both settings may be overridden per pool and per image ("conf_"
 * metadata).  A granularity override librbd's option would refuse (not a
 * power of two in 4 KiB..32 MiB) is ignored, as librbd ignores it.
 * QoS limits (rbd_qos_*) are not enforced; an open that finds one says so
 * on stderr.
 */
static void apply_settings(struct rbdl_image *img, bool at_open)
{
	static const char *const qos[] = {
		"rbd_qos_iops_limit", "rbd_qos_bps_limit",
		"rbd_qos_read_iops_limit", "rbd_qos_write_iops_limit",
		"rbd_qos_read_bps_limit", "rbd_qos_write_bps_limit",
	};
	struct rbdl_conf c;
	uint64_t g = 0;

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
	rbdl_conf_free(&c);
	atomic_store_explicit(&img->discard_granularity, g,
			      memory_order_relaxed);
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
	if (atomic_exchange_explicit(&img->watch_broken, false,
				     memory_order_relaxed) && img->watching) {
		uint64_t cookie;

		rados_unwatch2(img->md_io, img->watch_cookie);
		img->watching = false;
		r = rados_watch2(img->md_io, img->header_oid, &cookie, watch_cb,
				 watch_err_cb, img);
		if (r < 0) {
			atomic_store(&img->watch_broken, true);
			goto out;
		}
		rbdl_lock_rewatched(img, cookie);
		img->watching = true;
		/* Updates may have been missed while unwatched. */
		rbdl_updw_notify(img);
	}
	r = rbdl_read_size(img->md_io, img->header_oid, RBDL_NOSNAP, &order, &size);
	if (r < 0)
		goto out;
	if (img->snap_id != RBDL_NOSNAP) {
		/* rbd_snap_set: the size is the snapshot's (kept if the
		 * snapshot was removed meanwhile, as librbd keeps reading). */
		uint64_t ssize;

		if (rbdl_read_size(img->md_io, img->header_oid, img->snap_id, &order, &ssize) == 0)
			size = ssize;
		else
			size = atomic_load(&img->size);
	}
	r = rbdl_read_features(img->md_io, img->header_oid, true, &features, &incompat);
	if (r < 0)
		goto out;
	/* A flatten, a shrink or a finished migration changes what backs
	 * the view; a new view applies to requests started from now on. */
	r = rbdl_parent_update(img, img->snap_id, size, features);
	if (r < 0)
		goto out;
	r = rbdl_cls_read_u64_at(img->md_io, img->header_oid, "get_flags", RBDL_NOSNAP, &flags);
	if (r < 0)
		goto out;
	r = rbdl_read_snapcontext(img->md_io, img->header_oid, &seq,
				  &snaps, &n);
	if (r < 0)
		goto out;
	/* Only an executed migration's destination opens (image_load);
	 * its writes stay refused by write_gate. */
	incompat &= ~(uint64_t)RBD_FEATURE_MIGRATING;
	if (incompat & ~(uint64_t)RBDL_READ_SUPPORTED) {
		rbdl_log("image %s gained unsupported features 0x%" PRIx64
			 "; refusing further writes", img->name, incompat);
		atomic_store(&img->write_error, -EROFS);
	} else {
		if (write_gate(img, features) &&
		    !atomic_load(&img->write_error))
			log_write_refusal(img, features);
		atomic_store(&img->write_error, write_gate(img, features));
	}
	if (seq != img->snap_seq || n != img->nsnaps ||
	    (n && memcmp(snaps, img->snaps, n * sizeof(*snaps)))) {
		rados_ioctx_t io;
		struct rbdl_retired_io *ri = malloc(sizeof(*ri));

		if (!ri) {
			r = -ENOMEM;
			goto out;
		}
		r = make_write_io(img, seq, snaps, n, &io);
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
	apply_settings(img, false);
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

/* An image opened at a snapshot comes back to HEAD writable (librbd):
 * give it what a read-write open has.  Called with maint_mu held. */
static int become_writable(struct rbdl_image *img)
{
	rados_ioctx_t wio;
	int r;

	pthread_mutex_lock(&img->refresh_lock);
	r = make_write_io(img, img->snap_seq, img->snaps, img->nsnaps, &wio);
	if (r == 0)
		atomic_store_explicit(&img->wr_io, wio, memory_order_release);
	pthread_mutex_unlock(&img->refresh_lock);
	if (r < 0)
		return r;
	if (!img->watching) {
		r = rados_watch2(img->md_io, img->header_oid,
				 &img->watch_cookie, watch_cb, watch_err_cb,
				 img);
		if (r < 0)
			return r;
		img->watching = true;
	}
	pthread_mutex_lock(&img->refresh_lock);
	img->read_only = false;
	pthread_mutex_unlock(&img->refresh_lock);
	/* The lock was set up disabled (read-only then); no thread ran and
	 * the watch callback only looks at the DISABLED state. */
	rbdl_lock_shutdown(img);
	return rbdl_lock_init(img);
}

int rbdl_image_set_snap(struct rbdl_image *img, const char *snap_name)
{
	uint64_t id = RBDL_NOSNAP, size = 0;
	char *name = NULL;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	if (snap_name) {
		pthread_mutex_lock(&img->refresh_lock);
		r = find_snap(img, snap_name, &id, &size);
		pthread_mutex_unlock(&img->refresh_lock);
		if (r < 0)
			return r;
		name = strdup(snap_name);
		if (!name)
			return -ENOMEM;
		/* librbd shuts the exclusive lock down at a snapshot; the
		 * HEAD object map must not answer snapshot reads either. */
		rbdl_lock_drop(img);
	} else if (!img->open_ro && !atomic_load(&img->wr_io)) {
		r = become_writable(img);
		if (r < 0)
			return r;
	}
	pthread_mutex_lock(&img->refresh_lock);
	free(img->snap_name);
	img->snap_name = name;
	img->snap_id = id;
	img->read_only = img->open_ro || id != RBDL_NOSNAP;
	rados_ioctx_snap_set_read(img->rd_io, id == RBDL_NOSNAP
						  ? LIBRADOS_SNAP_HEAD
						  : id);
	atomic_store_explicit(&img->at_snap, id != RBDL_NOSNAP,
			      memory_order_relaxed);
	if (id != RBDL_NOSNAP)
		atomic_store_explicit(&img->size, size, memory_order_release);
	pthread_mutex_unlock(&img->refresh_lock);
	/* Size and write gate follow from the new view. */
	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
	return rbdl_image_refresh_slow(img);
}

static void image_free(struct rbdl_image *img)
{
	rbdl_lock_shutdown(img);	/* releases the lock if we hold it */
	if (img->watching) {
		rados_unwatch2(img->md_io, img->watch_cookie);
		/* No watch callback may still run with img. */
		rados_watch_flush(img->cluster);
	}
	rbdl_updw_shutdown(img);
	rbdl_parent_close(img);
	rados_ioctx_t wr = atomic_load(&img->wr_io);

	if (wr)
		rados_ioctx_destroy(wr);
	while (img->retired) {
		struct rbdl_retired_io *ri = img->retired;

		img->retired = ri->next;
		rados_ioctx_destroy(ri->io);
		free(ri);
	}
	if (img->rd_io)
		rados_ioctx_destroy(img->rd_io);
	if (img->defer_io)
		rados_ioctx_destroy(img->defer_io);
	if (img->md_io)
		rados_ioctx_destroy(img->md_io);
	rbdl_objmap_destroy(img);
	rbdl_delivery_destroy(&img->dl);
	pthread_mutex_destroy(&img->fq.lock);
	pthread_mutex_destroy(&img->refresh_lock);
	pthread_mutex_destroy(&img->maint_mu);
	free(img->snaps);
	free(img->name);
	free(img->id);
	free(img->header_oid);
	free(img->object_prefix);
	free(img->snap_name);
	free(img);
}

static int image_load(struct rbdl_image *img, rados_ioctx_t io,
		      const char *name, const char *id, const char *snap_name,
		      uint64_t snap_id)
{
	uint64_t features, incompat, size, flags = 0;
	struct rbdl_header h;
	uint8_t order;
	char *ns = NULL;
	int r;

	img->cluster = rados_ioctx_get_cluster(io);
	img->md_pool_id = rados_ioctx_get_id(io);
	r = rbdl_ioctx_namespace(io, &ns);
	if (r < 0)
		return r;
	r = rbdl_ioctx_dup(img->cluster, img->md_pool_id, ns, &img->md_io);
	if (r < 0)
		goto out;
	r = rbdl_ioctx_dup(img->cluster, img->md_pool_id, ns, &img->defer_io);
	if (r < 0)
		goto out;
	r = lookup_id(img, name, id);
	if (r < 0)
		goto out;

	r = rbdl_read_header(img->md_io, img->header_oid, true, &h);
	if (r < 0)
		goto out;
	order = h.order;
	size = h.size;
	features = h.features;
	/* The image owns what the header loader allocated. */
	img->object_prefix = h.object_prefix;
	img->snaps = h.snaps;
	img->snap_seq = h.snap_seq;
	img->nsnaps = h.nsnaps;
	if (strlen(img->object_prefix) > RBDL_OID_PREFIX_MAX) {
		r = -EBADMSG;
		goto out;
	}
	/* Whether a migrating image can be read is decided with its
	 * backing image (rbdl_parent_update); it is never written. */
	incompat = h.incompat & ~(uint64_t)RBD_FEATURE_MIGRATING;
	atomic_init(&img->features, features);
	if (incompat & ~(uint64_t)RBDL_READ_SUPPORTED) {
		rbdl_log("image %s has features 0x%" PRIx64
			 " that librbdlite does not support",
			 img->name, features);
		r = -ENOSYS;
		goto out;
	}
	r = rbdl_layout_init(&img->layout, order, h.su, h.sc);
	/* rbd_get_stripe_unit reports the stored unit even when a stripe
	 * count of 1 makes it irrelevant to the mapping (ImageCtx keeps it). */
	img->stripe_unit = h.su && h.sc ? h.su : img->layout.object_size;
	if (r < 0) {
		rbdl_log("image %s has an invalid layout (order %u, stripe "
			 "unit %" PRIu64 ", count %" PRIu64 ")",
			 img->name, order, h.su, h.sc);
		r = -EBADMSG;
		goto out;
	}
	img->data_pool_id = h.data_pool;
	atomic_init(&img->wr_nsnaps, img->nsnaps);
	img->snap_id = RBDL_NOSNAP;
	if (!snap_name && snap_id != RBDL_NOSNAP) {
		/* A backing image at its snapshot (by id). */
		r = rbdl_read_size(img->md_io, img->header_oid, snap_id, &order, &size);
		if (r < 0)
			goto out;
		img->snap_id = snap_id;
		img->read_only = true;
		atomic_store(&img->at_snap, true);
	} else if (snap_name) {
		r = find_snap(img, snap_name, &img->snap_id, &size);
		if (r < 0)
			goto out;
		img->snap_name = strdup(snap_name);
		if (!img->snap_name) {
			r = -ENOMEM;
			goto out;
		}
		img->read_only = true;
		atomic_store(&img->at_snap, true);
	}
	r = rbdl_cls_read_u64_at(img->md_io, img->header_oid, "get_flags", img->snap_id, &flags);
	if (r < 0)
		goto out;
	r = rbdl_parent_update(img, img->snap_id, size, features);
	if (r < 0)
		goto out;

	r = rbdl_image_data_ioctx(img, &img->rd_io);
	if (r < 0)
		goto out;
	if (img->snap_id != RBDL_NOSNAP)
		rados_ioctx_snap_set_read(img->rd_io, img->snap_id);

	atomic_init(&img->size, size);
	atomic_init(&img->flags, flags);
	atomic_init(&img->write_error, write_gate(img, features));
	log_write_refusal(img, features);
	if (!img->read_only) {
		rados_ioctx_t wio;

		r = make_write_io(img, img->snap_seq, img->snaps, img->nsnaps,
				  &wio);
		if (r < 0)
			goto out;
		atomic_init(&img->wr_io, wio);
		/* librbd watches the header of every read-write open. */
		r = rados_watch2(img->md_io, img->header_oid,
				 &img->watch_cookie, watch_cb, watch_err_cb,
				 img);
		if (r < 0)
			goto out;
		img->watching = true;
	}
	r = rbdl_objmap_init(img);
	if (r < 0)
		goto out;
	r = rbdl_lock_init(img);
	if (r < 0)
		goto out;
	r = 0;
out:
	free(ns);
	return r;
}

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rbdl_handle *handles;

/* A zeroed image with its locks, counters and delivery set up. */
static struct rbdl_image *image_alloc(bool read_only, int *err)
{
	struct rbdl_image *img = calloc(1, sizeof(*img));
	int r;

	if (!img) {
		*err = -ENOMEM;
		return NULL;
	}
	img->read_only = read_only;
	rbdl_updw_init(img);
	img->open_ro = read_only;
	atomic_init(&img->at_snap, false);
	pthread_mutex_init(&img->maint_mu, NULL);
	pthread_mutex_init(&img->refresh_lock, NULL);
	pthread_mutex_init(&img->fq.lock, NULL);
	atomic_init(&img->wr_io, NULL);
	atomic_init(&img->pview, NULL);
	atomic_init(&img->refresh_seq, 0);
	atomic_init(&img->applied_seq, 0);
	atomic_init(&img->watch_broken, false);
	atomic_init(&img->fq.gen, 0);
	atomic_init(&img->fq.count[0], 0);
	atomic_init(&img->fq.count[1], 0);
	atomic_init(&img->fq.active, false);
	r = rbdl_delivery_init(&img->dl);
	if (r < 0) {
		pthread_mutex_destroy(&img->fq.lock);
		pthread_mutex_destroy(&img->refresh_lock);
		rbdl_updw_shutdown(img);
		pthread_mutex_destroy(&img->maint_mu);
		free(img);
		*err = r;
		return NULL;
	}
	return img;
}

int rbdl_image_open(rados_ioctx_t io, const char *name, const char *id,
		    const char *snap_name, bool read_only,
		    struct rbdl_handle **out)
{
	struct rbdl_handle *h;
	int r;
	struct rbdl_image *img = image_alloc(read_only, &r);

	if (!img)
		return r;
	r = image_load(img, io, name, id, snap_name, RBDL_NOSNAP);
	if (r < 0)
		goto fail;
	/* The caller's images only: a backing image never discards. */
	apply_settings(img, true);
	h = malloc(sizeof(*h));
	if (!h) {
		r = -ENOMEM;
		goto fail;
	}
	h->img = img;
	/* Handles are never freed; keep them reachable. */
	pthread_mutex_lock(&handles_lock);
	h->next = handles;
	handles = h;
	pthread_mutex_unlock(&handles_lock);
	atomic_store_explicit(&h->magic, RBDL_HANDLE_OPEN, memory_order_release);
	*out = h;
	return 0;
fail:
	image_free(img);
	return r;
}

int rbdl_image_open_backing(rados_t cluster, int64_t pool, const char *ns,
			    const char *id, uint64_t snap_id, unsigned depth,
			    struct rbdl_image **out)
{
	rados_ioctx_t io;
	int r = rbdl_ioctx_dup(cluster, pool, ns, &io);

	if (r < 0)
		return r;

	struct rbdl_image *img = image_alloc(true, &r);

	if (img) {
		img->depth = depth;
		r = image_load(img, io, NULL, id, NULL, snap_id);
		if (r < 0)
			image_free(img);
		else
			*out = img;
	}
	rados_ioctx_destroy(io);
	return r;
}

void rbdl_image_close_backing(struct rbdl_image *img)
{
	rbdl_delivery_wait_idle(&img->dl);
	image_free(img);
}

int rbdl_image_close(struct rbdl_handle *h)
{
	uint32_t open = RBDL_HANDLE_OPEN;

	/* Only one closer wins; later calls see a closed handle. */
	if (!atomic_compare_exchange_strong(&h->magic, &open,
					    RBDL_HANDLE_CLOSED))
		return -EINVAL;
	struct rbdl_image *img = h->img;

	rbdl_delivery_wait_idle(&img->dl);
	image_free(img);
	/* Give slab memory back to the kernel if nothing uses it any more. */
	rbdl_slab_trim();
	/* The handle itself is never freed: a stale rbd_image_t must keep
	 * reading "closed" rather than whatever reuses the memory. */
	h->img = NULL;
	return 0;
}
