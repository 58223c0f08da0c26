/*
 * parent.h - the image that backs a clone or a migration destination.
 *
 * Role: a clone reads what it has not written itself from its parent image
 * at the parent snapshot, within the parent overlap; the destination of a
 * prepared (not yet fully executed) migration reads from its source image
 * the same way.  This module finds that backing image for the image's
 * current view (parent_get / parent_overlap_get, or migration_get), opens
 * it read-only as an internal image (recursively: a parent may itself be a
 * clone), and publishes the view's (backing image, overlap) pair for the
 * I/O path.  io.c reads through it (reads of missing objects, copy-up).
 *
 * Threading: a view is an immutable struct published through the image's
 * pview pointer and replaced only by a refresh, which holds the image's
 * refresh_lock (or by the open, before the image is shared).  Requests load
 * the pointer once (acquire) and keep using that view: views and backing
 * images are never freed before the image itself is closed, after its I/O
 * drained, so a request can finish with a view a refresh has replaced.
 *
 * Ownership: the image owns every backing image it opened (closed by
 * rbdl_parent_close) and every view it published.
 */
#ifndef RBDL_PARENT_H
#define RBDL_PARENT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/cls_rbd.h"

struct rbdl_image;

/* Nesting limit for clones of clones (krbd's RBD_MAX_PARENT_CHAIN_LEN). */
#define RBDL_MAX_PARENT_DEPTH 16

struct rbdl_pview {
	struct rbdl_image *parent;	/* NULL: nothing backs this view */
	uint64_t overlap;		/* image bytes [0, overlap) read through */
	bool migration;			/* the parent is a migration source */
	struct rbdl_pview *next;	/* every view published (freed at close) */
};

/* One opened backing image (internal to parent.c; listed in the image). */
struct rbdl_backing;

/*
 * Find what backs the image's current view (snap_id, of size view_size,
 * with the header's features) and publish it, opening the backing image
 * if it is not open yet.
 * Called by open and refresh with refresh_lock held (or before the image
 * is shared).  0, or a negative errno: -ENOSYS for a migration librbdlite
 * cannot read (being prepared or aborted, or imported from a non-RBD
 * source), or the backing image's open error.
 */
int rbdl_parent_update(struct rbdl_image *img, uint64_t snap_id,
		       uint64_t view_size, uint64_t features);

/* Close every backing image and free every view (image close, after the
 * image's own I/O drained). */
void rbdl_parent_close(struct rbdl_image *img);

/*
 * migration_get on the image header, decoded.  0, -ENOENT (no migration)
 * or a negative errno.  Free with rbdl_migration_spec_free.
 */
int rbdl_migration_get(struct rbdl_image *img, struct rbdl_migration_spec *m);

/*
 * The parent of the image's current view, as librbd reports it: pool id,
 * namespace, image id and snapshot id (malloc'ed strings in *spec, free
 * with rbdl_parent_spec_free), and the overlap.  -ENOENT when the view
 * has no parent (never a clone, flattened, or its overlap is gone).  A
 * migration source is not a parent here.
 */
int rbdl_parent_spec(struct rbdl_image *img, struct rbdl_parent_spec *spec,
		     uint64_t *overlap);

/* What librbd reports about a parent (rbd_get_parent and friends). */
struct rbdl_parent_desc {
	int64_t pool_id;
	char *pool_name;	/* every string malloc'ed */
	char *pool_namespace;
	char *image_id;
	char *image_name;	/* the trash name if trash */
	bool trash;
	uint64_t snap_id;
	uint32_t snap_ns_type;	/* 0 user, 1 group, 2 trash, 3 mirror */
	char *snap_name;
};

/*
 * Describe the parent of the image's current view: for a clone its
 * parent; for a migration destination the parent of the source (librbd
 * answers so).  -ENOENT when there is none, or another negative errno.
 * Free with rbdl_parent_desc_free (also safe after a failure).
 */
int rbdl_parent_describe(struct rbdl_image *img, struct rbdl_parent_desc *d);
void rbdl_parent_desc_free(struct rbdl_parent_desc *d);

#endif /* RBDL_PARENT_H */
