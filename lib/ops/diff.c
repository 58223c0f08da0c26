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
#include "image/state.h"
#include "core/internal.h"
#include "io/io.h"
#include "image/objmap.h"
#include "core/striper.h"

/* object_map::DiffRequest states */
#define DIFF_HOLE 0
#define DIFF_DATA 1
#define DIFF_HOLE_UPDATED 2
#define DIFF_DATA_UPDATED 3

#define DIFF_WINDOW 64		/* objects inspected concurrently */
#define DIFF_BLOCK 512		/* content comparison granularity */

typedef int (*diff_cb_t)(uint64_t, size_t, int, void *);

struct snapent {
	uint64_t id;
	uint64_t size;
};

struct ext {
	uint64_t off, len;
	int exists;
};

/* A growable list of image extents for one period. */
struct extlist {
	struct ext *v;
	size_t n, cap;
};

static int ext_add(struct extlist *l, uint64_t off, uint64_t len, int exists)
{
	if (!len)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct ext *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct ext){ off, len, exists };
	return 0;
}

static int ext_cmp(const void *a, const void *b)
{
	const struct ext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Sort, merge adjacent extents of the same kind, call back; empties l. */
static int ext_flush(struct extlist *l, diff_cb_t cb, void *arg)
{
	size_t i = 0;
	int r = 0;

	if (l->n > 1)	/* l->v is NULL while nothing was added */
		qsort(l->v, l->n, sizeof(*l->v), ext_cmp);
	while (i < l->n && r >= 0) {
		struct ext e = l->v[i++];

		while (i < l->n && l->v[i].off == e.off + e.len &&
		       l->v[i].exists == e.exists)
			e.len += l->v[i++].len;
		r = cb(e.off, (size_t)e.len, e.exists, arg);
	}
	l->n = 0;
	return r < 0 ? r : 0;
}

/*
 * Report the part of object range [ooff, ooff + olen) that the pieces of
 * this object (in a period starting at image offset base) cover.
 */
static int add_obj_range(struct extlist *l, uint64_t base,
			 const struct rbdl_piece *p, uint32_t np, uint64_t ooff,
			 uint64_t olen, int exists)
{
	uint64_t oend = ooff + olen;

	for (uint32_t i = 0; i < np; i++) {
		uint64_t s = p[i].obj_off > ooff ? p[i].obj_off : ooff;
		uint64_t e = p[i].obj_off + p[i].len < oend
				     ? p[i].obj_off + p[i].len
				     : oend;

		if (s >= e)
			continue;
		int r = ext_add(l, base + p[i].buf_off + (s - p[i].obj_off),
				e - s, exists);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Sorted, disjoint image extents (the parent's diff). */
struct extset {
	struct extlist l;
};

static int collect_cb(uint64_t off, size_t len, int exists, void *arg)
{
	struct extset *ps = arg;

	if (!exists)
		return 0;
	/* Callbacks come in ascending order: merge with the last one. */
	if (ps->l.n && ps->l.v[ps->l.n - 1].off + ps->l.v[ps->l.n - 1].len ==
			       off) {
		ps->l.v[ps->l.n - 1].len += len;
		return 0;
	}
	return ext_add(&ps->l, off, len, 1);
}

/* Add the part of the object's pieces (at image base) that ps covers. */
static int add_parent_range(struct extlist *l, const struct extset *ps,
			    uint64_t base, const struct rbdl_piece *p,
			    uint32_t np)
{
	for (uint32_t i = 0; i < np; i++) {
		uint64_t s = base + p[i].buf_off, e = s + p[i].len;
		size_t lo = 0, hi = ps->l.n;

		/* first extent ending after s */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			const struct ext *x = &ps->l.v[mid];

			if (x->off + x->len <= s)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < ps->l.n && ps->l.v[k].off < e; k++) {
			const struct ext *x = &ps->l.v[k];
			uint64_t a = x->off > s ? x->off : s;
			uint64_t b = x->off + x->len < e ? x->off + x->len : e;
			int r = ext_add(l, a, b - a, 1);

			if (r < 0)
				return r;
		}
	}
	return 0;
}

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

static int load_map(struct rbdl_image *img, uint64_t snap, uint8_t **bits,
		    uint64_t *n)
{
	char oid[RBDL_OID_MAX], *buf;
	size_t len;
	int r;

	if (snap == RBDL_NOSNAP)
		rbdl_oid_object_map(oid, sizeof(oid), img->id, RBDL_NOSNAP);
	else
		rbdl_oid_object_map(oid, sizeof(oid), img->id, snap);
	r = rbdl_cls_read(img->md_io, oid, "rbd", "object_map_load", NULL, 0,
			  &buf, &len);
	if (r < 0)
		return r;
	r = rbdl_decode_object_map(buf, len, bits, n);
	rados_buffer_free(buf);
	return r;
}

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
		r = load_map(img, id, &bits, &n);
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

struct objinfo {
	rados_completion_t c[2];	/* [0] at from, [1] at end */
	uint64_t size[2];
	time_t mtime[2];
	uint64_t ver[2];
	int r[2];
	/* exact mode: the object at every snapshot in between */
	rados_completion_t *mc;
	uint64_t *msize;
	time_t *mmtime;
	uint64_t maxsize;		/* largest size in (from, end] */
};

struct inspect {
	struct rbdl_image *img;
	rados_ioctx_t io[2];		/* reads at from (if any) and end */
	rados_ioctx_t *mid;		/* exact mode: snapshots between */
	uint32_t nmid;
	bool has_from;
	bool whole;
	const struct extset *ps;	/* the parent's diff, or NULL */
	char *oid;
	size_t oidcap;
};

static void obj_name(struct inspect *in, uint64_t objno)
{
	rbdl_oid_data(in->oid, in->oidcap, in->img->object_prefix, objno);
}

static int stat_start(struct inspect *in, uint64_t objno, struct objinfo *oi)
{
	obj_name(in, objno);
	for (int k = in->has_from ? 0 : 1; k < 2; k++) {
		int r = rados_aio_create_completion2(NULL, NULL, &oi->c[k]);

		if (r < 0)
			return r;
		r = rados_aio_stat(in->io[k], in->oid, oi->c[k], &oi->size[k],
				   &oi->mtime[k]);
		if (r < 0) {
			rados_aio_release(oi->c[k]);
			oi->c[k] = NULL;
			return r;
		}
	}
	for (uint32_t k = 0; k < in->nmid; k++) {
		int r = rados_aio_create_completion2(NULL, NULL, &oi->mc[k]);

		if (r < 0)
			return r;
		r = rados_aio_stat(in->mid[k], in->oid, oi->mc[k],
				   &oi->msize[k], &oi->mmtime[k]);
		if (r < 0) {
			rados_aio_release(oi->mc[k]);
			oi->mc[k] = NULL;
			return r;
		}
	}
	return 0;
}

static int stat_finish(struct objinfo *oi, uint32_t nmid)
{
	int ret = 0;

	oi->maxsize = 0;
	for (uint32_t k = 0; oi->mc && k < nmid; k++) {
		if (!oi->mc[k])
			continue;
		rados_aio_wait_for_complete(oi->mc[k]);
		int r = rados_aio_get_return_value(oi->mc[k]);

		rados_aio_release(oi->mc[k]);
		oi->mc[k] = NULL;
		if (r == 0 && oi->msize[k] > oi->maxsize)
			oi->maxsize = oi->msize[k];
		else if (r < 0 && r != -ENOENT && !ret)
			ret = r;
	}

	for (int k = 0; k < 2; k++) {
		if (!oi->c[k]) {
			oi->r[k] = -ENOENT;
			continue;
		}
		rados_aio_wait_for_complete(oi->c[k]);
		oi->r[k] = rados_aio_get_return_value(oi->c[k]);
		oi->ver[k] = rados_aio_get_version(oi->c[k]);
		rados_aio_release(oi->c[k]);
		oi->c[k] = NULL;
		if (oi->r[k] < 0 && oi->r[k] != -ENOENT && !ret)
			ret = oi->r[k];
	}
	if (oi->r[1] == 0 && oi->size[1] > oi->maxsize)
		oi->maxsize = oi->size[1];
	return ret;
}

static int read_at(rados_ioctx_t io, const char *oid, char *buf, uint64_t off,
		   uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		size_t chunk = len - done > (64u << 20) ? (64u << 20)
							: (size_t)(len - done);
		int r = rados_read(io, oid, buf + done, chunk, off + done);

		if (r < 0)
			return r;
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	memset(buf + done, 0, len - done);
	return 0;
}

/*
 * Changed ranges of one object whose versions differ, exact mode from a
 * snapshot: blocks of [lo, hi) whose content differs at the two versions.
 */
static int content_diff(struct inspect *in, uint64_t objno, uint64_t lo,
			uint64_t hi, struct extlist *l, uint64_t base,
			const struct rbdl_piece *p, uint32_t np)
{
	uint64_t a = lo - lo % DIFF_BLOCK;
	uint64_t len = hi - a;
	char *x = malloc(len ? len : 1), *y = malloc(len ? len : 1);
	int r = -ENOMEM;

	if (!x || !y)
		goto out;
	obj_name(in, objno);
	r = read_at(in->io[0], in->oid, x, a, len);
	if (r == 0)
		r = read_at(in->io[1], in->oid, y, a, len);
	for (uint64_t o = 0; r == 0 && o < len;) {
		uint64_t b = len - o < DIFF_BLOCK ? len - o : DIFF_BLOCK;

		if (memcmp(x + o, y + o, b)) {
			uint64_t s = a + o > lo ? a + o : lo;
			uint64_t e = a + o + b;

			/* extend while the next blocks differ too */
			o += b;
			while (o < len) {
				b = len - o < DIFF_BLOCK ? len - o : DIFF_BLOCK;
				if (!memcmp(x + o, y + o, b))
					break;
				o += b;
				e += b;
			}
			r = add_obj_range(l, base, p, np, s, e - s, 1);
		} else {
			o += b;
		}
	}
out:
	free(x);
	free(y);
	return r;
}

/* Add the changes of one inspected object to l. */
static int inspect_report(struct inspect *in, uint64_t objno,
			  const struct objinfo *oi, struct extlist *l,
			  uint64_t base, const struct rbdl_piece *p,
			  uint32_t np)
{
	uint64_t osz = in->img->layout.object_size;
	bool ex0 = in->has_from && oi->r[0] == 0, ex1 = oi->r[1] == 0;
	uint64_t s0 = ex0 ? oi->size[0] : 0, s1 = ex1 ? oi->size[1] : 0;
	uint64_t lo = p[0].obj_off, hi = p[np - 1].obj_off + p[np - 1].len;

	if (!ex0 && !ex1)
		return 0;
	uint64_t smax = oi->maxsize;	/* >= s1 */

	if (!in->has_from) {
		/* From the beginning of time: everything the object held up
		 * to the end version (librbd: up to its largest size). */
		if (!ex1 || !smax)
			return 0;
		return add_obj_range(l, base, p, np, 0, in->whole ? osz : smax,
				     1);
	}
	if (ex0 && ex1 && oi->ver[0] == oi->ver[1])
		return 0;	/* the same object version: unchanged */
	if (!ex1) {
		/* removed since: a hole */
		if (!s0)
			return 0;
		return add_obj_range(l, base, p, np, 0, in->whole ? osz : s0,
				     0);
	}
	uint64_t zlo = s1, zhi = s1 < s0 ? s0 : s1;	/* truncated part */
	int r;

	if (in->whole) {
		if (!ex0 && !smax)
			return 0;
		r = add_obj_range(l, base, p, np, 0, zlo, 1);
		if (r == 0)
			r = add_obj_range(l, base, p, np, zlo, zhi - zlo, 0);
		if (r == 0)
			r = add_obj_range(l, base, p, np, zhi, osz - zhi, 1);
		return r;
	}
	/* exact: differing content below the smaller size, the grown part
	 * as data, the truncated part as a hole */
	uint64_t mn = s0 < s1 ? s0 : s1;

	r = 0;
	if (lo < mn)
		r = content_diff(in, objno, lo, hi < mn ? hi : mn, l, base, p,
				 np);
	if (r == 0 && s1 < s0)
		r = add_obj_range(l, base, p, np, s1, s0 - s1, 0);
	if (r == 0 && smax > s0)
		r = add_obj_range(l, base, p, np, s0, smax - s0, 1);
	return r;
}

/* ---- the walk ------------------------------------------------------------ */

struct period {
	uint64_t off, len;
	size_t nobjs, npieces;
	struct rbdl_objext *objs;
	struct rbdl_piece *pieces;
	struct objinfo *info;
	rados_completion_t *mc;		/* nobjs x nmid */
	uint64_t *msize;
	time_t *mmtime;
};

static void period_free(struct period *pd)
{
	free(pd->objs);
	free(pd->pieces);
	free(pd->info);
	free(pd->mc);
	free(pd->msize);
	free(pd->mmtime);
	memset(pd, 0, sizeof(*pd));
}

static int period_map(struct rbdl_image *img, struct period *pd, uint64_t off,
		      uint64_t len, bool with_info, uint32_t nmid)
{
	size_t no, np, nm;

	pd->off = off;
	pd->len = len;
	rbdl_striper_count(&img->layout, off, len, &no, &np);
	nm = no * nmid;
	pd->objs = calloc(no ? no : 1, sizeof(*pd->objs));
	pd->pieces = calloc(np ? np : 1, sizeof(*pd->pieces));
	if (!pd->objs || !pd->pieces)
		return -ENOMEM;
	if (with_info) {
		pd->info = calloc(no ? no : 1, sizeof(*pd->info));
		pd->mc = calloc(nm ? nm : 1, sizeof(*pd->mc));
		pd->msize = calloc(nm ? nm : 1, sizeof(*pd->msize));
		pd->mmtime = calloc(nm ? nm : 1, sizeof(*pd->mmtime));
		if (!pd->info || !pd->mc || !pd->msize || !pd->mmtime)
			return -ENOMEM;
		for (size_t i = 0; i < no; i++) {
			pd->info[i].mc = pd->mc + i * nmid;
			pd->info[i].msize = pd->msize + i * nmid;
			pd->info[i].mmtime = pd->mmtime + i * nmid;
		}
	}
	return rbdl_striper_map(&img->layout, off, len, pd->objs, no,
				pd->pieces, np, &pd->nobjs, &pd->npieces);
}

static int walk_fast(struct rbdl_image *img, uint64_t off, uint64_t left,
		     const uint8_t *st, uint64_t nst, const struct extset *ps,
		     diff_cb_t cb, void *arg)
{
	uint64_t period = img->layout.object_size * img->layout.stripe_count;
	struct extlist l = { 0 };
	int r = 0;

	while (left > 0 && r == 0) {
		uint64_t len = period - off % period;
		struct period pd = { 0 };

		if (len > left)
			len = left;
		r = period_map(img, &pd, off, len, false, 0);
		for (size_t i = 0; r == 0 && i < pd.nobjs; i++) {
			struct rbdl_objext *o = &pd.objs[i];
			uint8_t s = o->objno < nst ? st[o->objno] : DIFF_HOLE;

			if (s == DIFF_HOLE && ps) {
				r = add_parent_range(
					&l, ps, off,
					&pd.pieces[o->first_piece],
					o->npieces);
				continue;
			}
			if (s != DIFF_HOLE_UPDATED && s != DIFF_DATA_UPDATED)
				continue;
			r = add_obj_range(&l, off, &pd.pieces[o->first_piece],
					  o->npieces, 0,
					  img->layout.object_size,
					  s == DIFF_DATA_UPDATED);
		}
		period_free(&pd);
		if (r == 0)
			r = ext_flush(&l, cb, arg);
		off += len;
		left -= len;
	}
	free(l.v);
	return r;
}

static int walk_objects(struct inspect *in, uint64_t off, uint64_t left,
			diff_cb_t cb, void *arg)
{
	struct rbdl_image *img = in->img;
	uint64_t period = img->layout.object_size * img->layout.stripe_count;
	struct period win[DIFF_WINDOW];
	struct extlist l = { 0 };
	int r = 0;

	while (left > 0 && r == 0) {
		size_t np = 0, nobj = 0;

		/* Start the stats of a window of periods. */
		while (left > 0 && np < DIFF_WINDOW && nobj < DIFF_WINDOW &&
		       r == 0) {
			uint64_t len = period - off % period;
			struct period *pd = &win[np++];

			if (len > left)
				len = left;
			memset(pd, 0, sizeof(*pd));
			r = period_map(img, pd, off, len, true, in->nmid);
			for (size_t i = 0; r == 0 && i < pd->nobjs; i++)
				r = stat_start(in, pd->objs[i].objno,
					       &pd->info[i]);
			nobj += pd->nobjs;
			off += len;
			left -= len;
		}
		/* Reap them all (also after an error), then report. */
		for (size_t k = 0; k < np; k++) {
			struct period *pd = &win[k];

			for (size_t i = 0; pd->info && i < pd->nobjs; i++) {
				int e = stat_finish(&pd->info[i], in->nmid);

				if (e < 0 && r == 0)
					r = e;
			}
		}
		for (size_t k = 0; k < np && r == 0; k++) {
			struct period *pd = &win[k];

			for (size_t i = 0; r == 0 && i < pd->nobjs; i++) {
				struct rbdl_objext *o = &pd->objs[i];

				size_t before = l.n;

				r = inspect_report(in, o->objno, &pd->info[i],
						   &l, pd->off,
						   &pd->pieces[o->first_piece],
						   o->npieces);
				/* Nothing of its own: the parent shows. */
				if (r == 0 && in->ps && l.n == before)
					r = add_parent_range(
						&l, in->ps, pd->off,
						&pd->pieces[o->first_piece],
						o->npieces);
			}
			if (r == 0)
				r = ext_flush(&l, cb, arg);
		}
		for (size_t k = 0; k < np; k++)
			period_free(&win[k]);
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
		       struct extset *ps)
{
	const struct rbdl_pview *pv = rbdl_parent_view(img);

	if (!pv->parent || !pv->overlap)
		return 0;
	return rbdl_diff_iterate(pv->parent, NULL, 0, pv->overlap,
				 whole_object, true, collect_cb, ps);
}

int rbdl_diff_iterate(struct rbdl_image *img, const char *fromsnapname,
		      uint64_t ofs, uint64_t len, bool whole_object,
		      bool include_parent, diff_cb_t cb, void *arg)
{
	struct extset ps = { { 0 } };
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
	r = rbdl_image_maybe_refresh(img);
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
		r = walk_objects(&in, ofs, len, cb, arg);
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
