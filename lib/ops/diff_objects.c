/*
 * diff_objects.c - the per-object inspection of rbd_diff_iterate2 (the
 * method is described in diff.c): stat each object at the from-snapshot,
 * every snapshot in between (exact mode) and the end version, a window of
 * objects at a time, and report what changed; in exact mode from a
 * snapshot, compare the contents of changed objects in 512-byte blocks.
 *
 * Threading: synchronous on the caller's thread (asynchronous stats are
 * waited for here).  Ownership: periods and stat results are freed before
 * rbdl_diff_walk_objects returns.
 */
#include "config.h"

#include "diff_int.h"

#include "image/load.h"
#include "proto/oid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>

void rbdl_diff_period_free(struct period *pd)
{
	free(pd->objs);
	free(pd->pieces);
	free(pd->info);
	free(pd->mc);
	free(pd->msize);
	free(pd->mmtime);
	memset(pd, 0, sizeof(*pd));
}

int rbdl_diff_period_map(struct rbdl_image *img, struct period *pd, uint64_t off,
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
			uint64_t hi, struct rbdl_extlist *l, uint64_t base,
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
			r = rbdl_ext_add_obj_range(l, base, p, np, s, e - s, 1);
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
			  const struct objinfo *oi, struct rbdl_extlist *l,
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
		return rbdl_ext_add_obj_range(l, base, p, np, 0, in->whole ? osz : smax,
				     1);
	}
	if (ex0 && ex1 && oi->ver[0] == oi->ver[1])
		return 0;	/* the same object version: unchanged */
	if (!ex1) {
		/* removed since: a hole */
		if (!s0)
			return 0;
		return rbdl_ext_add_obj_range(l, base, p, np, 0, in->whole ? osz : s0,
				     0);
	}
	uint64_t zlo = s1, zhi = s1 < s0 ? s0 : s1;	/* truncated part */
	int r;

	if (in->whole) {
		if (!ex0 && !smax)
			return 0;
		r = rbdl_ext_add_obj_range(l, base, p, np, 0, zlo, 1);
		if (r == 0)
			r = rbdl_ext_add_obj_range(l, base, p, np, zlo, zhi - zlo, 0);
		if (r == 0)
			r = rbdl_ext_add_obj_range(l, base, p, np, zhi, osz - zhi, 1);
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
		r = rbdl_ext_add_obj_range(l, base, p, np, s1, s0 - s1, 0);
	if (r == 0 && smax > s0)
		r = rbdl_ext_add_obj_range(l, base, p, np, s0, smax - s0, 1);
	return r;
}

int rbdl_diff_walk_objects(struct inspect *in, uint64_t off, uint64_t left,
			rbdl_diff_cb_t cb, void *arg)
{
	struct rbdl_image *img = in->img;
	uint64_t period = img->layout.object_size * img->layout.stripe_count;
	struct period win[DIFF_WINDOW];
	struct rbdl_extlist l = { 0 };
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
			r = rbdl_diff_period_map(img, pd, off, len, true, in->nmid);
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
					r = rbdl_ext_add_parent(
						&l, in->ps, pd->off,
						&pd->pieces[o->first_piece],
						o->npieces);
			}
			if (r == 0)
				r = rbdl_ext_flush(&l, cb, arg);
		}
		for (size_t k = 0; k < np; k++)
			rbdl_diff_period_free(&win[k]);
	}
	free(l.v);
	return r;
}
