/*
 * extents.c - lists of image extents as diff reporting builds them
 * (diff_int.h): collect, sort, merge adjacent extents of the same kind,
 * report; clip an object's pieces to object ranges or to a parent's diff.
 *
 * Threading: none; a list belongs to one caller.
 */
#include "config.h"

#include "diff_int.h"

#include <errno.h>
#include <stdlib.h>

int rbdl_ext_add(struct rbdl_extlist *l, uint64_t off, uint64_t len, int exists)
{
	if (!len)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct rbdl_ext *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct rbdl_ext){ off, len, exists };
	return 0;
}

static int ext_cmp(const void *a, const void *b)
{
	const struct rbdl_ext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Sort, merge adjacent extents of the same kind, call back; empties l. */
int rbdl_ext_flush(struct rbdl_extlist *l, rbdl_diff_cb_t cb, void *arg)
{
	size_t i = 0;
	int r = 0;

	if (l->n > 1)	/* l->v is NULL while nothing was added */
		qsort(l->v, l->n, sizeof(*l->v), ext_cmp);
	while (i < l->n && r >= 0) {
		struct rbdl_ext e = l->v[i++];

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
int rbdl_ext_add_obj_range(struct rbdl_extlist *l, uint64_t base,
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
		int r = rbdl_ext_add(l, base + p[i].buf_off + (s - p[i].obj_off),
				e - s, exists);

		if (r < 0)
			return r;
	}
	return 0;
}

int rbdl_ext_collect_cb(uint64_t off, size_t len, int exists, void *arg)
{
	struct rbdl_extset *ps = arg;

	if (!exists)
		return 0;
	/* Callbacks come in ascending order: merge with the last one. */
	if (ps->l.n && ps->l.v[ps->l.n - 1].off + ps->l.v[ps->l.n - 1].len ==
			       off) {
		ps->l.v[ps->l.n - 1].len += len;
		return 0;
	}
	return rbdl_ext_add(&ps->l, off, len, 1);
}

/* Add the part of the object's pieces (at image base) that ps covers. */
int rbdl_ext_add_parent(struct rbdl_extlist *l, const struct rbdl_extset *ps,
			    uint64_t base, const struct rbdl_piece *p,
			    uint32_t np)
{
	for (uint32_t i = 0; i < np; i++) {
		uint64_t s = base + p[i].buf_off, e = s + p[i].len;
		size_t lo = 0, hi = ps->l.n;

		/* first extent ending after s */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			const struct rbdl_ext *x = &ps->l.v[mid];

			if (x->off + x->len <= s)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < ps->l.n && ps->l.v[k].off < e; k++) {
			const struct rbdl_ext *x = &ps->l.v[k];
			uint64_t a = x->off > s ? x->off : s;
			uint64_t b = x->off + x->len < e ? x->off + x->len : e;
			int r = rbdl_ext_add(l, a, b - a, 1);

			if (r < 0)
				return r;
		}
	}
	return 0;
}
