/*
 * image.h - an open RBD image: metadata, I/O contexts, header watch.
 *
 * Role: open a format-2 image the way librbd does (id lookup, the cls "rbd"
 * metadata calls, striping, data pool, namespace, snapshot), decide what
 * librbdlite may safely do with it (read, write, or refuse), keep the
 * metadata current when another client changes the header, and close it.
 *
 * Threading: the fields marked "immutable" never change after open.  The
 * mutable metadata the I/O path needs (size, the write I/O context carrying
 * the snapshot context) is published through atomics and changed only by a
 * refresh, which runs under refresh_lock on whichever thread first notices
 * that a refresh is due (an I/O submitter, or a control call).  The header
 * watch callback only acks notifications and bumps refresh_seq; it never
 * blocks.
 *
 * Ownership: the application owns the rados_ioctx_t it passed to rbd_open;
 * the image owns private duplicates (md_io for the header, data_io for data
 * objects), so later changes to the caller's ioctx do not matter, as in
 * librbd.  An rbd_image_t is a pointer to a struct rbdl_handle that is never
 * freed or reused, so a closed or bogus handle is detected, never followed.
 */
#ifndef RBDL_IMAGE_H
#define RBDL_IMAGE_H

#include <pthread.h>
#include <rados/librados.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/completion.h"
#include "lock.h"
#include "objmap.h"
#include "parent.h"
#include "core/striper.h"
#include "updwatch.h"

/* Features whose state a writer must maintain and librbdlite cannot yet
 * (writes and maintenance operations fail with -EROFS). */
#define RBDL_WRITE_UNSUPPORTED                                               \
	(RBD_FEATURE_JOURNALING | RBD_FEATURE_NON_PRIMARY |                  \
	 RBD_FEATURE_MIGRATING | RBD_FEATURE_DIRTY_CACHE)

#define RBDL_HANDLE_OPEN 0x52424449u	/* "RBDI" */
#define RBDL_HANDLE_CLOSED 0x52424458u

struct rbdl_image;

struct rbdl_handle {
	_Atomic uint32_t magic;
	struct rbdl_image *img;
	struct rbdl_handle *next;	/* registry of all handles ever made */
};

/* A retired write I/O context, destroyed at close. */
struct rbdl_retired_io {
	struct rbdl_retired_io *next;
	rados_ioctx_t io;
};

/*
 * Flush barrier state: operations are counted per generation parity; a
 * flush bumps the generation and waits for the previous parity to drain.
 */
struct rbdl_flushq {
	_Atomic uint64_t gen;
	atomic_long count[2];
	atomic_bool active;
	pthread_mutex_t lock;
	struct rbdl_comp *waiting;	/* flushes waiting for the drain */
	struct rbdl_comp *queued;	/* flushes that arrived meanwhile */
};

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
	pthread_mutex_t maint_mu;	/* serializes maintenance ops */
	atomic_int write_error;		/* 0, or why writes are refused */

	/* mutable, published for the I/O path */
	/* rbd_discard_granularity_bytes, 0 when discards are exact
	 * (rbd_skip_partial_discard off); set at open and refresh from the
	 * configuration and its pool/image overrides.  Relaxed: a policy
	 * value, each request reads it once and either value is valid. */
	_Atomic uint64_t discard_granularity;
	_Atomic uint64_t size;
	_Atomic(rados_ioctx_t) wr_io;	/* data writes, carries the snapc */
	atomic_uint wr_nsnaps;		/* snapshots in wr_io's snapc */
	_Atomic uint64_t features;
	_Atomic uint64_t flags;
	atomic_uint refresh_seq;	/* bumped by header notifications */
	atomic_uint applied_seq;	/* refresh_seq the metadata reflects */

	/* refresh state, under refresh_lock */
	pthread_mutex_t refresh_lock;
	uint64_t snap_seq;
	uint64_t *snaps;		/* descending */
	uint32_t nsnaps;
	struct rbdl_retired_io *retired;

	/* header watch (read-write HEAD opens only) */
	bool watching;
	uint64_t watch_cookie;
	atomic_bool watch_broken;

	rados_ioctx_t defer_io;		/* never writes: async completion */

	struct rbdl_flushq fq;
	struct rbdl_delivery dl;
	struct rbdl_lock lk;		/* exclusive lock (lock.h) */
	struct rbdl_objmap om;		/* HEAD object map (objmap.h) */
	struct rbdl_updwatch uw;	/* rbd_update_watch (updwatch.h) */

	/* backing image of a clone or migration (parent.h) */
	_Atomic(struct rbdl_pview *) pview;	/* current view */
	struct rbdl_pview *pviews;	/* all views, under refresh_lock */
	struct rbdl_backing *backings;	/* opened, under refresh_lock */
	unsigned depth;			/* 0 for a user's image (immutable) */
};

/* Open; on success *out is a new handle.  Negative errno on failure. */
int rbdl_image_open(rados_ioctx_t io, const char *name, const char *id,
		    const char *snap_name, bool read_only,
		    struct rbdl_handle **out);

/* Close: waits for in-flight I/O, unwatches, frees.  The handle is marked
 * closed and stays allocated. */
int rbdl_image_close(struct rbdl_handle *h);

/*
 * Open the image with id in pool/namespace ns read-only at snapshot snap_id
 * (RBDL_NOSNAP: HEAD) as the backing image of another one (parent.h); it
 * has no handle.  depth counts the images it backs.  Close with
 * rbdl_image_close_backing once nothing reads from it any more.
 */
int rbdl_image_open_backing(rados_t cluster, int64_t pool, const char *ns,
			    const char *id, uint64_t snap_id, unsigned depth,
			    struct rbdl_image **out);
void rbdl_image_close_backing(struct rbdl_image *img);

/* Resolve a user handle: NULL unless it is an open image. */
static inline struct rbdl_image *rbdl_image_from_user(void *p)
{
	struct rbdl_handle *h = p;

	if (!h || atomic_load_explicit(&h->magic, memory_order_acquire) !=
			  RBDL_HANDLE_OPEN)
		return NULL;
	return h->img;
}

/* A new ioctx on the image's data objects (data pool or metadata pool, in
 * the image's namespace), with no snapshot context and reading HEAD. */
int rbdl_image_data_ioctx(struct rbdl_image *img, rados_ioctx_t *out);
/*
 * rbd_snap_set: switch the read view to snapshot snap_name (NULL: back to
 * HEAD).  In-flight I/O is drained first (caller holds maint_mu).  At a
 * snapshot, writes fail with -EROFS and the size is the snapshot's; the
 * exclusive lock is released as librbd does.  Back at HEAD a non-read-only
 * open is writable again (an image opened at a snapshot gets its write
 * context, header watch and lock machinery now).  -ENOENT: no such user
 * snapshot.
 */
int rbdl_image_set_snap(struct rbdl_image *img, const char *snap_name);

/* Bring metadata up to date if a header notification arrived. */
int rbdl_image_refresh_slow(struct rbdl_image *img);
static inline int rbdl_image_maybe_refresh(struct rbdl_image *img)
{
	/* Acquire: pairs with the watch callback's release increment; the
	 * relaxed load of applied_seq is ordered by refresh_lock for the
	 * refresher and only compared here. */
	if (__builtin_expect(
		    atomic_load_explicit(&img->refresh_seq,
					 memory_order_acquire) ==
			    atomic_load_explicit(&img->applied_seq,
						 memory_order_relaxed),
		    1))
		return 0;
	return rbdl_image_refresh_slow(img);
}

/* The current backing view (parent.h); never NULL once the image is open. */
static inline const struct rbdl_pview *rbdl_parent_view(struct rbdl_image *img)
{
	/* Acquire: pairs with the release store in rbdl_parent_update, so
	 * the view's fields and the backing image it names are visible. */
	return atomic_load_explicit(&img->pview, memory_order_acquire);
}

#endif /* RBDL_IMAGE_H */
