/*
 * diff.c - rbd_diff_iterate2: which parts of an image changed since a
 * snapshot (or since the image was created).
 *
 * Role: report changed extents as librbd 16.2's DiffIterate does: the
 * requested range is walked one stripe period at a time; inside a period
 * the changed pieces of every object are mapped back to image offsets,
 * sorted, adjacent extents of the same kind merged, and the callback is
 * called once per extent (exists = 1 for data, 0 for a range that became
 * a hole).  Two ways to find the changes:
 *
 *   fast diff (whole_object only): the object maps of the from-snapshot,
 *     every snapshot in between and the end version (rbd_object_map.<id>
 *     and rbd_object_map.<id>.<snapid>), combined as librbd's
 *     object_map::DiffRequest does for diff-iterate.  Used when fast-diff
 *     is enabled and every map involved is valid (no FAST_DIFF_INVALID
 *     flag), present and large enough; otherwise:
 *
 *   per-object inspection: librbd uses the OSD's list_snaps (clone
 *     overlaps), which the librados C API does not offer.  librbdlite stats
 *     each object at the from-snapshot and at the end version through
 *     private I/O contexts reading at those snapshots.  An object is
 *     unchanged exactly when it resolves to the same object version (user
 *     version, which every write bumps) at both; whole-object mode then
 *     reports what librbd reports.  Exact mode also stats the object at
 *     every snapshot in between (librbd's extents reach up to the largest
 *     size the object had), so exact mode without a from-snapshot matches
 *     librbd too.  Exact mode from a snapshot compares the contents of a
 *     changed object at both versions in 512-byte blocks and reports the
 *     blocks that differ, plus growth (data) and truncation (hole): every
 *     changed byte is covered, but where data was rewritten with identical
 *     bytes, or a hole was discarded again (zeroed ranges of a striped
 *     image, say), librbd reports the range and librbdlite does not.  That
 *     is the one mode whose output can differ from librbd's.
 *
 * Parents (include_parent, and only for a diff since creation): what the
 * parent (or a migration source) shows through the view's overlap counts
 * as data wherever the clone has nothing of its own, as in librbd:
 *   - fast diff: objects the maps show as holes report the parent's own
 *     whole-object diff (recursively through its parents), clipped to the
 *     overlap;
 *   - per-object inspection: objects missing at the end version, or
 *     present but empty, report the parent's diff in the same mode
 *     (whole-object or exact).
 * An empty object that hides the parent (left by a discard) is thus still
 * reported with the parent's extents in exact mode, as librbd does.
 *
 * Threading: runs entirely on the caller's thread (the stats and reads are
 * asynchronous rados calls waited for here); the callback is called on the
 * caller's thread, with no librbdlite lock held.
 *
 * Ownership: everything allocated here (maps, extent lists, the private
 * read I/O contexts, completions) is freed before rbdl_diff_iterate
 * returns; nothing is cached between calls.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/parent.h"
#include "image/load.h"
#include "image/refresh.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "rbd/librbd.h"

#include "proto/cls_rbd.h"
#include "proto/objmap_wire.h"
#include "diff.h"
#include "diff_int.h"
#include "image/state.h"
#include "core/internal.h"
#include "io/crypt.h"
#include "io/io.h"
#include "image/objmap.h"
#include "core/striper.h"

/* object_map::DiffRequest states */
#define DIFF_HOLE 0
#define DIFF_DATA 1
#define DIFF_HOLE_UPDATED 2
#define DIFF_DATA_UPDATED 3







/* ---- snapshots ----------------------------------------------------------- */

/* All snapshots, ascending, with their sizes; *from_id set when from_name
 * names a user snapshot (-ENOENT otherwise). */
static int load_snaps(struct rbdl_image *img, const char *from_name,
		      struct snapent **out, uint32_t *nout, uint64_t *from_id)
{
	uint64_t seq, *ids = NULL;
	uint32_t n = 0, k = 0;
	struct snapent *v = NULL;
	bool found = !from_name;
	int r = rbdl_read_snapcontext(img->md_io, img->header_oid, &seq, &ids,
				      &n);

	if (r < 0)
		return r;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		free(ids);
		return -ENOMEM;
	}
	for (uint32_t i = n; i-- > 0;) {	/* ids are descending */
		struct rbdl_snap_info si;

		r = rbdl_read_snapshot_info(img->md_io, img->header_oid, ids[i],
					    &si);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			goto fail;
		v[k].id = si.id;
		v[k].size = si.image_size;
		k++;
		if (from_name && !found && si.ns_type == 0 &&
		    !strcmp(si.name, from_name)) {
			found = true;
			*from_id = si.id;
		}
		rbdl_snap_info_free(&si);
	}
	free(ids);
	if (!found) {
		free(v);
		return -ENOENT;
	}
	*out = v;
	*nout = k;
	return 0;
fail:
	free(ids);
	free(v);
	return r;
}

static const struct snapent *snap_find(const struct snapent *v, uint32_t n,
				       uint64_t id)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i].id == id)
			return &v[i];
	return NULL;
}

/* ---- fast diff ----------------------------------------------------------- */

/*
 * librbd's object_map::DiffRequest in diff-iterate mode.  On success
 * *state (one byte per object, *nstate objects) holds DIFF_* values.
 * Any failure means "no fast diff" to the caller.
 */
static int fast_diff(struct rbdl_image *img, const struct snapent *snaps,
		     uint32_t nsnaps, uint64_t from, uint64_t end,
		     uint64_t end_size, uint8_t **state, uint64_t *nstate)
{
	uint64_t features = atomic_load(&img->features);
	uint64_t *ids, nids = 0, cur = 0;	/* cur: objects in state */
	uint8_t *st = NULL;
	int r = 0;

	if (!(features & RBD_FEATURE_FAST_DIFF))
		return -EINVAL;
	ids = malloc((nsnaps + 2) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	if (from != 0) {
		ids[nids++] = from;
		for (uint32_t i = 0; i < nsnaps; i++)
			if (snaps[i].id > from && snaps[i].id < end)
				ids[nids++] = snaps[i].id;
	}
	ids[nids++] = end;
	for (uint64_t k = 0; k < nids; k++) {
		uint64_t id = ids[k], size, flags, n, want;
		bool ends = id == from || id == end;
		uint8_t *bits;

		if (id == RBDL_NOSNAP) {
			size = end_size;
		} else {
			const struct snapent *s = snap_find(snaps, nsnaps, id);

			if (!s) {
				if (ends) {
					r = -ENOENT;
					goto out;
				}
				continue;
			}
			size = s->size;
		}
		r = rbdl_cls_read_u64_at(img->md_io, img->header_oid, "get_flags", id, &flags);
		if (r < 0)
			goto out;
		if (flags & RBD_FLAG_FAST_DIFF_INVALID) {
			r = -EINVAL;
			goto out;
		}
		r = rbdl_objmap_read(img->md_io, img->id, id, &bits, &n);
		if (r == -ENOENT && !ends)
			continue;
		if (r < 0)
			goto out;
		want = rbdl_layout_num_objects(&img->layout, size);
		if (n < want) {
			free(bits);
			r = -EINVAL;
			goto out;
		}
		uint8_t *ns = realloc(st, want ? want : 1);

		if (!ns) {
			free(bits);
			r = -ENOMEM;
			goto out;
		}
		st = ns;
		for (uint64_t i = 0; i < want; i++) {
			uint8_t m = rbdl_om_state(bits, i);

			if (i < cur) {
				switch (st[i]) {
				case DIFF_HOLE:
					if (m != RBDL_OBJ_NONEXISTENT &&
					    id == end)
						st[i] = DIFF_DATA_UPDATED;
					break;
				case DIFF_DATA:
					if (m == RBDL_OBJ_NONEXISTENT)
						st[i] = DIFF_HOLE_UPDATED;
					else if (m != RBDL_OBJ_EXISTS_CLEAN)
						st[i] = DIFF_DATA_UPDATED;
					break;
				case DIFF_HOLE_UPDATED:
					if (m != RBDL_OBJ_NONEXISTENT)
						st[i] = DIFF_DATA_UPDATED;
					break;
				default:
					if (m == RBDL_OBJ_NONEXISTENT)
						st[i] = DIFF_HOLE_UPDATED;
					break;
				}
			} else if (m == RBDL_OBJ_NONEXISTENT) {
				st[i] = DIFF_HOLE;
			} else if (id != from) {
				/* implicit HOLE before; intermediate
				 * snapshots stay HOLE */
				st[i] = id == end ? DIFF_DATA_UPDATED
						  : DIFF_HOLE;
			} else {
				st[i] = m == RBDL_OBJ_PENDING
						? DIFF_DATA_UPDATED
						: DIFF_DATA;
			}
		}
		cur = want;
		free(bits);
	}
	*state = st;
	*nstate = cur;
	st = NULL;
	r = 0;
out:
	free(st);
	free(ids);
	return r;
}

/* ---- per-object inspection ----------------------------------------------- */



/* ---- the walk ------------------------------------------------------------ */


static int walk_fast(struct rbdl_image *img, uint64_t off, uint64_t left,
		     const uint8_t *st, uint64_t nst, const struct rbdl_extset *ps,
		     rbdl_diff_cb_t cb, void *arg)
{
	uint64_t period = img->layout.object_size * img->layout.stripe_count;
	struct rbdl_extlist l = { 0 };
	int r = 0;

	while (left > 0 && r == 0) {
		uint64_t len = period - off % period;
		struct period pd = { 0 };

		if (len > left)
			len = left;
		r = rbdl_diff_period_map(img, &pd, off, len, false, 0);
		for (size_t i = 0; r == 0 && i < pd.nobjs; i++) {
			struct rbdl_objext *o = &pd.objs[i];
			uint8_t s = o->objno < nst ? st[o->objno] : DIFF_HOLE;

			if (s == DIFF_HOLE && ps) {
				r = rbdl_ext_add_parent(
					&l, ps, off,
					&pd.pieces[o->first_piece],
					o->npieces);
				continue;
			}
			if (s != DIFF_HOLE_UPDATED && s != DIFF_DATA_UPDATED)
				continue;
			r = rbdl_ext_add_obj_range(&l, off, &pd.pieces[o->first_piece],
					  o->npieces, 0,
					  img->layout.object_size,
					  s == DIFF_DATA_UPDATED);
		}
		rbdl_diff_period_free(&pd);
		if (r == 0)
			r = rbdl_ext_flush(&l, cb, arg);
		off += len;
		left -= len;
	}
	free(l.v);
	return r;
}

static int make_read_io(struct rbdl_image *img, uint64_t snap,
			rados_ioctx_t *out)
{
	int r = rbdl_image_data_ioctx(img, out);

	if (r < 0)
		return r;
	rados_ioctx_snap_set_read(*out, snap == RBDL_NOSNAP ? LIBRADOS_SNAP_HEAD
							   : snap);
	return 0;
}

/*
 * rbd_diff_iterate2 for an open image: see the file comment and
 * librbd.h.  Errors: -EINVAL for a range starting at or past the end
 * (len > 0; a range running past the end is clipped, as is one whose end
 * wraps past 2^64) or a from-snapshot newer than the open snapshot,
 * -ENOENT for an unknown from-snapshot, the callback's negative return,
 * or a rados error.  len == 0 reports nothing (librbd 16.2.15 aborts on
 * some of those calls).
 */
/*
 * With include_parent and no from-snapshot: the parent's own diff over the
 * view's overlap, in *ps (left empty when nothing backs the view).
 */
static int parent_diff(struct rbdl_image *img, bool whole_object,
		       struct rbdl_extset *ps)
{
	const struct rbdl_pview *pv = rbdl_parent_view(img);

	if (!pv->parent || !pv->overlap)
		return 0;
	return rbdl_diff_iterate(pv->parent, NULL, 0, pv->overlap,
				 whole_object, true, rbdl_ext_collect_cb, ps);
}

static int diff_iterate(struct rbdl_image *img, const char *fromsnapname,
			uint64_t ofs, uint64_t len, bool whole_object,
			bool include_parent, rbdl_diff_cb_t cb, void *arg);

/* A walk of an image with encryption loaded reports data-area offsets
 * (librbd 16.2 remaps them too): the header's extents are left out. */
struct crypt_walk {
	rbdl_diff_cb_t cb;
	void *arg;
	uint64_t data_off;
};

static int crypt_walk_cb(uint64_t off, size_t len, int exists, void *arg)
{
	struct crypt_walk *w = arg;

	if (off + len <= w->data_off)
		return 0;
	if (off < w->data_off) {
		len -= (size_t)(w->data_off - off);
		off = w->data_off;
	}
	return w->cb(off - w->data_off, len, exists, w->arg);
}

int rbdl_diff_iterate(struct rbdl_image *img, const char *fromsnapname,
		      uint64_t ofs, uint64_t len, bool whole_object,
		      bool include_parent, rbdl_diff_cb_t cb, void *arg)
{
	struct rbdl_crypt *k = atomic_load_explicit(&img->crypt,
						    memory_order_acquire);

	if (!k || !cb)
		return diff_iterate(img, fromsnapname, ofs, len, whole_object,
				    include_parent, cb, arg);
	struct crypt_walk w = { cb, arg, k->data_off };
	uint64_t size = rbdl_image_size(img);

	if (len) {
		if (ofs >= size)
			return -EINVAL;
		if (len > size - ofs)
			len = size - ofs;
	}
	return diff_iterate(img, fromsnapname, ofs + k->data_off, len,
			    whole_object, include_parent, crypt_walk_cb, &w);
}

static int diff_iterate(struct rbdl_image *img, const char *fromsnapname,
			uint64_t ofs, uint64_t len, bool whole_object,
			bool include_parent, rbdl_diff_cb_t cb, void *arg)
{
	struct rbdl_extset ps = { { 0 } };
	bool with_parent;
	struct rbdl_io_args fl = { .op = RBDL_OP_FLUSH };
	struct snapent *snaps = NULL;
	uint32_t nsnaps = 0;
	uint64_t from = 0, end = img->snap_id, size;
	uint8_t *st = NULL;
	uint64_t nst = 0;
	int r;

	if (!cb)
		return -EINVAL;
	/* Make our own writes visible, then pick up header changes. */
	r = (int)rbdl_io_sync(img, &fl);
	if (r < 0)
		return r;
	r = rbdl_image_refresh_view(img);
	if (r < 0)
		return r;
	size = atomic_load_explicit(&img->size, memory_order_acquire);
	if (len) {
		if (ofs >= size)
			return -EINVAL;
		if (len > size - ofs)
			len = size - ofs;
	}
	/* qemu's block status (whole objects of HEAD since creation) needs
	 * no snapshot metadata: spare it the cls calls. */
	if (fromsnapname || end != RBDL_NOSNAP || !whole_object) {
		r = load_snaps(img, fromsnapname, &snaps, &nsnaps, &from);
		if (r < 0)
			return r;
	}
	if (from == end)
		goto out;
	if (from > end) {
		r = -EINVAL;
		goto out;
	}
	if (len == 0)
		goto out;
	with_parent = include_parent && from == 0;
	if (whole_object && fast_diff(img, snaps, nsnaps, from, end, size,
				      &st, &nst) == 0) {
		if (with_parent)
			r = parent_diff(img, true, &ps);
		if (r == 0)
			r = walk_fast(img, ofs, len, st, nst,
				      with_parent ? &ps : NULL, cb, arg);
		goto out;
	}
	if (with_parent) {
		r = parent_diff(img, whole_object, &ps);
		if (r < 0)
			goto out;
	}

	struct inspect in = { .img = img, .has_from = from != 0,
			      .whole = whole_object,
			      .ps = with_parent ? &ps : NULL };

	in.oidcap = strlen(img->object_prefix) + 32;
	in.oid = malloc(in.oidcap);
	if (!in.oid) {
		r = -ENOMEM;
		goto out;
	}
	r = make_read_io(img, end, &in.io[1]);
	if (r == 0 && in.has_from) {
		r = make_read_io(img, from, &in.io[0]);
		if (r < 0) {
			rados_ioctx_destroy(in.io[1]);
			in.io[1] = NULL;
		}
	}
	/* Exact mode: the sizes at the snapshots in between matter too. */
	if (r == 0 && !whole_object && nsnaps) {
		in.mid = calloc(nsnaps, sizeof(*in.mid));
		if (!in.mid)
			r = -ENOMEM;
		for (uint32_t i = 0; r == 0 && i < nsnaps; i++) {
			if (snaps[i].id <= from || snaps[i].id >= end)
				continue;
			r = make_read_io(img, snaps[i].id, &in.mid[in.nmid]);
			if (r == 0)
				in.nmid++;
		}
	}
	if (r == 0)
		r = rbdl_diff_walk_objects(&in, ofs, len, cb, arg);
	for (int k = 0; k < 2; k++)
		if (in.io[k])
			rados_ioctx_destroy(in.io[k]);
	for (uint32_t k = 0; k < in.nmid; k++)
		rados_ioctx_destroy(in.mid[k]);
	free(in.mid);
	free(in.oid);
out:
	free(ps.l.v);
	free(st);
	free(snaps);
	return r;
}
