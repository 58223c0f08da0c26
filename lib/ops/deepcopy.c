/*
 * deepcopy.c - rbd_deep_copy* as librbd 16.2's api::Image::deep_copy and
 * DeepCopyRequest do it, through librbdlite's own data path.
 *
 * The destination is created like librbd creates it: rbd_create4 with the
 * source's features, order and striping where the options leave them
 * unset (the options are updated in place), or -- unless the flatten
 * option is set -- a clone of the parent of the source's oldest snapshot
 * (of HEAD without snapshots), made as CloneRequest makes it.  Then the
 * source's history is replayed, oldest first: for every user snapshot up
 * to the source's view (the open snapshot, or HEAD), and then for the view
 * itself, the destination is brought to that state's size and parent
 * overlap (a shrink to the new overlap first when it went down, as the
 * source's own shrink did), the state's changes since the previous state
 * (rbd_diff_iterate2 from the previous user snapshot, whole objects for a
 * clone) are read from the source at that state and written to the
 * destination (data as data; holes as zeroes where they read as zeros,
 * so nothing of the previous state or of the parent shows through), and a
 * user snapshot gets its twin (same name; protected afterwards if the
 * source's is).  Snapshots of other namespaces (group, trash, mirror) are
 * not copied, as librbd's SnapshotCopyRequest skips them; their data
 * belongs to the next state.  The source's image metadata is copied last
 * (a clone already has its parent's, as librbd's clone has).
 *
 * The content of every snapshot and of HEAD, the snapshots' names, sizes,
 * protection and parent overlaps, the parent link, the metadata and the
 * object maps (kept by the ordinary write path) are librbd's; which RADOS
 * objects hold zeros may differ (librbd copies object extents, this copy
 * rewrites changed ranges).
 *
 * Progress: librbd 16.2.15's ImageCopyRequest reports (n, objects) for
 * n = 1 .. objects as the objects are copied in order, objects = the
 * destination's object count for the largest size the source has at any
 * snapshot or HEAD (objects that never existed included).  The same calls
 * are made, after the data is copied; their return value is ignored, as
 * librbd ignores it.
 *
 * Threading: the caller's thread.  A private read-only handle of the
 * source walks its snapshots (the caller's handle keeps its view); the
 * destination is opened read-write and written as any writer writes, so
 * its exclusive lock and object map are kept.  Ownership: the options are
 * the caller's (updated in place as librbd's shared option set is).
 */
#include "config.h"

#include "clone.h"
#include "copy.h"
#include "diff.h"
#include "maint.h"
#include "pool.h"
#include "snapinfo.h"

#include "core/internal.h"
#include "image/load.h"
#include "image/open.h"
#include "image/parent.h"
#include "image/refresh.h"
#include "image/state.h"
#include "io/io.h"
#include "io/plan.h"
#include "proto/cls_rbd.h"
#include "proto/rados.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/features.h"
#include "rbd/librbd.h"

#define ZERO_RUN 4096		/* granularity of the zero runs */

/* One state of the source to reproduce: a user snapshot or the view. */
struct dc_state {
	uint64_t id;		/* snapshot id, or RBDL_NOSNAP */
	char *name;		/* user snapshot name (NULL for the view) */
	bool snap;		/* a user snapshot: the destination gets one */
	bool prot;		/* ... protected */
};

struct dc_copy {
	struct rbdl_image *src;	/* the private handle, at the state */
	struct rbdl_image *dest;
	uint64_t size;		/* the state's size */
	char *buf;
	size_t buflen;
	int r;
};

/* rbd_diff_iterate2 callback: copy one changed extent, read from the
 * source at the state.  Data (zeros included) is written as data, as
 * librbd copies object extents; a hole is written as zeroes where it
 * reads as zeros (what a clone's parent shows through is data). */
static int copy_extent(uint64_t off, size_t len, int exists, void *arg)
{
	struct dc_copy *c = arg;

	if (off >= c->size)
		return 0;
	if (len > c->size - off)
		len = (size_t)(c->size - off);
	while (len) {
		size_t n = len < c->buflen ? len : c->buflen;
		struct rbdl_io_args a = {
			.op = RBDL_OP_READ,
			.off = off,
			.len = n,
			.buf = c->buf,
			.op_flags = LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL |
				    LIBRADOS_OP_FLAG_FADVISE_NOCACHE,
		};
		ssize_t got = rbdl_io_sync(c->src, &a);

		if (got < 0 || (size_t)got != n) {
			c->r = got < 0 ? (int)got : -EIO;
			return c->r;
		}
		if (exists) {
			struct rbdl_io_args w = {
				.op = RBDL_OP_WRITE,
				.off = off,
				.len = n,
				.buf = c->buf,
				.op_flags = LIBRADOS_OP_FLAG_FADVISE_DONTNEED,
			};

			got = rbdl_io_sync(c->dest, &w);
			c->r = got < 0 ? (int)got : 0;
		} else {
			c->r = rbdl_op_write_runs(c->dest, off, c->buf, n,
						  ZERO_RUN, true);
		}
		if (c->r < 0)
			return c->r;
		off += n;
		len -= n;
	}
	return 0;
}

static void states_free(struct dc_state *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The source's oldest snapshot of any namespace (*oldest, RBDL_NOSNAP
 * without snapshots), the largest size at any snapshot or HEAD
 * (*max_size), and the states to reproduce up to view end (*states,
 * *nstates: the user snapshots <= end, then the view unless it is a user
 * snapshot itself).
 */
static int load_states(struct rbdl_image *h, uint64_t end, uint64_t *oldest,
		       uint64_t *max_size, struct dc_state **states,
		       size_t *nstates)
{
	uint32_t n;
	uint64_t *ids;
	struct dc_state *v;
	size_t k = 0;
	bool end_is_user = false;
	int r = 0;

	ids = rbdl_image_snap_ids(h, &n);
	v = calloc((size_t)n + 1, sizeof(*v));
	if (!ids || !v) {
		free(ids);
		free(v);
		return -ENOMEM;
	}
	qsort(ids, n, sizeof(*ids), cmp_u64);
	*max_size = atomic_load(&h->size);
	for (uint32_t i = 0; i < n && r == 0; i++) {
		struct rbdl_snapq q;

		r = rbdl_snapq_get(h, ids[i], &q);
		if (r == -ENOENT) {	/* removed meanwhile */
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		if (q.size > *max_size)
			*max_size = q.size;
		if (q.ns.type == 0 && ids[i] <= end) {
			bool prot = false;

			r = rbdl_op_snap_is_protected(h, q.name, &prot);
			v[k].id = ids[i];
			v[k].name = q.name;
			q.name = NULL;
			v[k].snap = true;
			v[k].prot = prot;
			k++;
			end_is_user = end_is_user || ids[i] == end;
		}
		rbdl_snapq_free(&q);
	}
	if (r == 0 && !end_is_user)
		v[k++].id = end;
	*oldest = n ? ids[0] : RBDL_NOSNAP;
	free(ids);
	if (r < 0) {
		states_free(v, k);
		return r;
	}
	*states = v;
	*nstates = k;
	return 0;
}

/* The parent link of h's view: spec (pool_id -1: none) and overlap. */
static void view_parent(struct rbdl_image *h, struct rbdl_parent_spec *s,
			uint64_t *overlap)
{
	if (rbdl_parent_spec(h, s, overlap) < 0) {
		memset(s, 0, sizeof(*s));
		s->pool_id = -1;
		*overlap = 0;
	}
}

/* Create the destination (CloneRequest from the parent spec, or the
 * create of rbd_create4). */
static int create_dest(struct rbdl_image *src, const struct rbdl_parent_spec *ps,
		       uint64_t size, rados_ioctx_t dest_io,
		       const char *destname, struct rbdl_opts *opts)
{
	rados_ioctx_t pio;
	int r;

	if (ps->pool_id < 0)
		return rbdl_op_create(dest_io, destname, size, opts, NULL);
	r = rbdl_ioctx_dup(src->cluster, ps->pool_id, ps->pool_namespace, &pio);
	if (r < 0)
		return r;
	r = rbdl_op_clone_id(pio, ps->image_id, ps->snap_id, dest_io, destname,
			     opts);
	rados_ioctx_destroy(pio);
	return r;
}

/* Reproduce the states on dest (see the file comment). */
static int replay(struct rbdl_image *h, struct rbdl_image *dest,
		  const struct dc_state *st, size_t nst, bool flatten,
		  bool clone)
{
	struct dc_copy c = { .src = h, .dest = dest };
	uint64_t prev_overlap = UINT64_MAX;
	const char *prev = NULL;
	int r = 0;

	if (clone)
		prev_overlap = atomic_load(&dest->size);
	c.buflen = (size_t)dest->layout.object_size;
	if (c.buflen < h->layout.object_size)
		c.buflen = (size_t)h->layout.object_size;
	c.buf = malloc(c.buflen);
	if (!c.buf)
		return -ENOMEM;
	for (size_t i = 0; i < nst && r == 0; i++) {
		struct rbdl_parent_spec ps;
		uint64_t ov, cur;

		r = rbdl_op_snap_set_by_id(h, st[i].id);
		if (r < 0)
			break;
		c.size = atomic_load(&h->size);
		view_parent(h, &ps, &ov);
		rbdl_parent_spec_free(&ps);
		if (i == 0 && !clone)
			prev_overlap = ov;	/* no link to keep */
		cur = atomic_load(&dest->size);
		if (ov < prev_overlap && cur > ov)
			r = rbdl_maint_resize2(dest, ov, true, NULL, NULL);
		if (r == 0 && atomic_load(&dest->size) != c.size)
			r = rbdl_maint_resize2(dest, c.size, true, NULL, NULL);
		if (r == 0 && c.size) {
			r = rbdl_diff_iterate(h, prev, 0, c.size, clone,
					      flatten && i == 0, copy_extent,
					      &c);
			if (c.r < 0)
				r = c.r;
		}
		if (r == 0 && st[i].snap)
			r = rbdl_maint_snap_create2(dest, st[i].name,
						    RBD_SNAP_CREATE_SKIP_QUIESCE,
						    NULL, NULL);
		if (st[i].snap)
			prev = st[i].name;
		prev_overlap = ov;
	}
	for (size_t i = 0; i < nst && r == 0; i++)
		if (st[i].snap && st[i].prot)
			r = rbdl_op_snap_protect(dest, st[i].name);
	if (r == 0) {
		struct rbdl_io_args fl = { .op = RBDL_OP_FLUSH };

		r = (int)rbdl_io_sync(dest, &fl);
	}
	free(c.buf);
	return r;
}

int rbdl_op_deep_copy(struct rbdl_image *src, rados_ioctx_t dest_io,
		      const char *destname, struct rbdl_opts *opts,
		      rbdl_progress_fn cb, void *arg)
{
	struct rbdl_io_args fl = { .op = RBDL_OP_FLUSH };
	struct rbdl_migration_spec mig;
	struct rbdl_parent_spec ps;
	struct rbdl_handle *hh = NULL, *dh = NULL;
	struct dc_state *st = NULL;
	size_t nst = 0;
	uint64_t order, flatten = 0, oldest = RBDL_NOSNAP;
	uint64_t size, max_size = 0, end, ov, objects;
	int r;

	if (!dest_io || !destname || !opts)
		return -EINVAL;
	r = rbdl_image_maybe_refresh(src);
	if (r < 0)
		return r;
	if (rbdl_migration_get(src, &mig) == 0) {
		rbdl_migration_spec_free(&mig);
		return -EBUSY;	/* cannot deep copy migrating image */
	}
	size = atomic_load(&src->size);
	end = src->snap_id;
	r = rbdl_op_copy_opts(src, opts, true, &order);
	if (r < 0)
		return r;
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FLATTEN, &flatten) == 0)
		rbdl_opts_unset(opts, RBD_IMAGE_OPTION_FLATTEN);

	/* the walker: the source by id, read-only, at HEAD */
	r = (int)rbdl_io_sync(src, &fl);
	if (r == 0)
		r = rbdl_image_open(src->md_io, NULL, src->id, NULL, true, &hh);
	if (r == 0)
		r = load_states(hh->img, end, &oldest, &max_size, &st, &nst);
	if (r < 0)
		goto out;

	/* the parent spec of the oldest snapshot, or of HEAD */
	memset(&ps, 0, sizeof(ps));
	ps.pool_id = -1;
	if (!flatten) {
		r = rbdl_op_snap_set_by_id(hh->img, oldest);
		if (r < 0)
			goto out;
		view_parent(hh->img, &ps, &ov);
	}
	r = create_dest(src, &ps, size, dest_io, destname, opts);
	rbdl_parent_spec_free(&ps);
	if (r < 0)
		goto out;
	rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_ORDER, order);
	r = rbdl_image_open(dest_io, destname, NULL, NULL, false, &dh);
	if (r < 0)
		goto out;

	{
		bool clone = !flatten && rbdl_parent_view(dh->img)->parent;

		r = replay(hh->img, dh->img, st, nst, flatten != 0, clone);
	}
	if (r == 0) {
		objects = rbdl_layout_num_objects(&dh->img->layout, max_size);
		for (uint64_t k = 0; cb && k < objects; k++)
			cb(k + 1, objects, arg);
		r = rbdl_op_copy_metadata(src->md_io, src->header_oid,
					  dh->img->md_io, dh->img->header_oid);
	}
out:
	if (dh) {
		int q = rbdl_image_close(dh);

		if (r == 0 && q < 0)
			r = q;
	}
	if (hh)
		rbdl_image_close(hh);
	states_free(st, nst);
	return r;
}
