/*
 * load.c - the part of opening an image that every image shares, a
 * user's and a backing one: I/O contexts, id and name, the header's
 * metadata, the snapshot to read, and what librbdlite may do with it.
 *
 * What is decided here, once, and again by every refresh (refresh.c):
 *   - incompatible features librbdlite does not understand: the open
 *     fails with -ENOSYS (librbd's errno);
 *   - format 1 images: the open fails with -EOPNOTSUPP (the API layer
 *     then has the system's librbd serve them whole, api/whole.h);
 *   - features whose on-disk state librbdlite does not maintain
 *     (journaling, non-primary, migrating, dirty-cache): the open
 *     succeeds, reads work, every write-type request completes with
 *     -EROFS (rbdl_image_write_gate; a migration destination without
 *     snapshots is written, with copy-ups from its source; a journaled
 *     image's requests go to the system's librbd instead, journal.h);
 *   - read-only and snapshot opens: write-type requests complete with
 *     -EROFS, as in librbd.
 * What backs a clone or a migration destination is parent.c's; the write
 * context, header watch, object map and lock of a user's image are
 * open.c's.
 *
 * Threading and ownership: synchronous rados calls on the caller's
 * thread, before the image is shared (find_snap also later, under
 * refresh_lock).  See state.h for the image's fields.
 */
#include "config.h"

#include "load.h"

#include "core/internal.h"
#include "stamps.h"
#include "journal.h"
#include "proto/cls_rbd.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "proto/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

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
int rbdl_find_user_snap(rados_ioctx_t io, const char *oid, const uint64_t *ids,
			uint32_t n, const char *name, struct rbdl_snap_info *out)
{
	for (uint32_t i = 0; i < n; i++) {
		struct rbdl_snap_info si;
		int r = rbdl_read_snapshot_info(io, oid, ids[i], &si);

		if (r == -ENOENT)
			continue;	/* removed meanwhile */
		if (r < 0)
			return r;
		if (si.ns_type == 0 && strcmp(si.name, name) == 0) {
			*out = si;
			return 0;
		}
		rbdl_snap_info_free(&si);
	}
	return -ENOENT;
}

int rbdl_image_find_snap(struct rbdl_image *img, const char *snap_name,
			 uint64_t *snap_id, uint64_t *size)
{
	struct rbdl_snap_info si;
	int r = rbdl_find_user_snap(img->md_io, img->header_oid, img->snaps,
				    img->nsnaps, snap_name, &si);

	if (r == 0) {
		*snap_id = si.id;
		*size = si.image_size;
		rbdl_snap_info_free(&si);
	}
	return r;
}

/*
 * Why writes must be refused for these features (0 if they are fine).
 * The destination of a migration is written as librbd writes it -- an
 * object it has not got yet is copied up from the source first, as a
 * clone's from its parent -- while it has no snapshots: with snapshots,
 * librbd's copy-up also fills in the object's snapshot history, which
 * librbdlite's does not.
 */
int rbdl_image_write_gate(const struct rbdl_image *img, uint64_t features,
			  uint32_t nsnaps, bool migration_dest)
{
	if (img->read_only)
		return -EROFS;
	if ((features & RBD_FEATURE_MIGRATING) && migration_dest && nsnaps == 0)
		features &= ~(uint64_t)RBD_FEATURE_MIGRATING;
	if (features & RBDL_WRITE_UNSUPPORTED)
		return -EROFS;
	return 0;
}

void rbdl_image_log_write_refusal(const struct rbdl_image *img,
				  uint64_t features)
{
	features &= RBDL_WRITE_UNSUPPORTED;
	/* journaling alone: the system's librbd writes it (journal.h) */
	if (rbdl_journal_io)
		features &= ~(uint64_t)RBD_FEATURE_JOURNALING;
	if (img->read_only || !features)
		return;
	rbdl_log("image %s: features 0x%" PRIx64 " (journaling, mirroring "
		 "non-primary, migration or a dirty cache) need state that "
		 "librbdlite does not maintain; it is opened for reading and "
		 "writes will fail with EROFS",
		 img->name, features);
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

int rbdl_image_write_ioctx(struct rbdl_image *img, uint64_t seq,
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

/* A zeroed image with its locks, counters and delivery set up. */
struct rbdl_image *rbdl_image_alloc(bool read_only, int *err)
{
	struct rbdl_image *img = calloc(1, sizeof(*img));
	int r;

	if (!img) {
		*err = -ENOMEM;
		return NULL;
	}
	img->read_only = read_only;
	img->open_ro = read_only;
	atomic_init(&img->at_snap, false);
	atomic_init(&img->snap_gone, false);
	pthread_mutex_init(&img->maint_mu, NULL);
	pthread_mutex_init(&img->refresh_lock, NULL);
	pthread_mutex_init(&img->ioq_mu, NULL);
	atomic_init(&img->io_queued, false);
	pthread_mutex_init(&img->fq.lock, NULL);
	pthread_mutex_init(&img->wa.mu, NULL);
	pthread_mutex_init(&img->sched.mu, NULL);
	atomic_init(&img->sched.on, false);
	atomic_init(&img->sched.nobjs, 0);
	atomic_init(&img->sched.ready, 0);
	for (int i = 0; i < RBDL_SCHED_SLOTS; i++)
		atomic_init(&img->sched.slot[i], 0);
	atomic_init(&img->wa.max_dirty, 0);
	atomic_init(&img->wa.wtuf, true);
	atomic_init(&img->wa.user_flushed, false);
	atomic_init(&img->wa.tracked, 0);
	atomic_init(&img->wa.acks, NULL);
	atomic_init(&img->wa.ack_live, false);
	atomic_init(&img->wa.ack_busy, 0);
	rbdl_stamps_init(img);
	atomic_init(&img->wr_io, NULL);
	atomic_init(&img->pview, NULL);
	atomic_init(&img->journal_h, NULL);
	atomic_init(&img->refresh_seq, 0);
	atomic_init(&img->applied_seq, 0);
	atomic_init(&img->watch_broken, false);
	atomic_init(&img->fq.gen, 0);
	atomic_init(&img->fq.count[0], 0);
	atomic_init(&img->fq.count[1], 0);
	atomic_init(&img->fq.error[0], 0);
	atomic_init(&img->fq.error[1], 0);
	atomic_init(&img->fq.lost, 0);
	atomic_init(&img->fq.active, false);
	r = rbdl_delivery_init(&img->dl);
	if (r < 0) {
		pthread_mutex_destroy(&img->sched.mu);
		pthread_mutex_destroy(&img->wa.mu);
		pthread_mutex_destroy(&img->fq.lock);
		pthread_mutex_destroy(&img->ioq_mu);
		pthread_mutex_destroy(&img->refresh_lock);
		pthread_mutex_destroy(&img->maint_mu);
		free(img);
		*err = r;
		return NULL;
	}
	return img;
}

uint64_t *rbdl_image_snap_ids(struct rbdl_image *img, uint32_t *n)
{
	uint64_t *ids;

	pthread_mutex_lock(&img->refresh_lock);
	*n = img->nsnaps;
	ids = malloc(sizeof(*ids) * (*n ? *n : 1));
	if (ids && *n)	/* snaps is NULL without snapshots */
		memcpy(ids, img->snaps, sizeof(*ids) * *n);
	pthread_mutex_unlock(&img->refresh_lock);
	return ids;
}

/* Everything rbdl_image_alloc and rbdl_image_load set up; the owner has
 * shut down what it added (lock, watch, backing images) before. */
void rbdl_image_free(struct rbdl_image *img)
{
	rados_ioctx_t wr = atomic_load(&img->wr_io);

	/* Its I/O drained (the owner waited): the refresh task is idle. */
	if (img->ioq_live)
		rbdl_ctl_task_retire(&img->ioq_task);
	if (img->wa.ack_live)	/* idle: every acknowledgement delivered */
		rbdl_ctl_task_retire(&img->wa.ack_task);
	rbdl_stamps_stop(img);
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
	rbdl_delivery_destroy(&img->dl);
	pthread_mutex_destroy(&img->sched.mu);
	pthread_mutex_destroy(&img->wa.mu);
	pthread_mutex_destroy(&img->fq.lock);
	pthread_mutex_destroy(&img->ioq_mu);
	pthread_mutex_destroy(&img->refresh_lock);
	pthread_mutex_destroy(&img->maint_mu);
	rbdl_lock_info_free(&img->lockers);
	free(img->snaps);
	free(img->name);
	free(img->id);
	free(img->header_oid);
	free(img->object_prefix);
	free(img->snap_name);
	free(img);
}

int rbdl_image_load(struct rbdl_image *img, rados_ioctx_t io,
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
		r = rbdl_image_find_snap(img, snap_name, &img->snap_id, &size);
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
	r = rbdl_read_flags_lockers(img->md_io, img->header_oid, img->snap_id,
				    &flags, &img->lockers, &img->lockers_ok);
	if (r < 0)
		goto out;
	r = rbdl_image_data_ioctx(img, &img->rd_io);
	if (r < 0)
		goto out;
	if (img->snap_id != RBDL_NOSNAP)
		rados_ioctx_snap_set_read(img->rd_io, img->snap_id);

	atomic_init(&img->size, size);
	atomic_init(&img->flags, flags);
	/* open.c decides again once the backing view is known */
	atomic_init(&img->write_error,
		    rbdl_image_write_gate(img, features, img->nsnaps, false));
	r = 0;
out:
	free(ns);
	return r;
}
