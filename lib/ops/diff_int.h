/*
 * diff_int.h - private to rbd_diff_iterate2: diff.c (snapshots, fast
 * diff, the walk, the entry point), diff_objects.c (per-object
 * inspection) and extents.c (extent lists) are parts of one algorithm and
 * share these types.
 *
 * Threading: everything runs on the caller's thread.
 */
#ifndef RBDL_OPS_DIFF_INT_H
#define RBDL_OPS_DIFF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <rados/librados.h>

#include "core/striper.h"
#include "image/state.h"

#define DIFF_WINDOW 64		/* objects inspected concurrently */
#define DIFF_BLOCK 512		/* content comparison granularity */

typedef int (*rbdl_diff_cb_t)(uint64_t, size_t, int, void *);

struct snapent {
	uint64_t id;
	uint64_t size;
};

struct rbdl_ext {
	uint64_t off, len;
	int exists;
};

/* A growable list of image extents for one period. */
struct rbdl_extlist {
	struct rbdl_ext *v;
	size_t n, cap;
};

/* Sorted, disjoint image extents (the parent's diff). */
struct rbdl_extset {
	struct rbdl_extlist l;
};

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
	const struct rbdl_extset *ps;	/* the parent's diff, or NULL */
	char *oid;
	size_t oidcap;
};

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

/* extents.c */
int rbdl_ext_add(struct rbdl_extlist *l, uint64_t off, uint64_t len,
		 int exists);
/* Sort, merge adjacent extents of the same kind, call back; empties l. */
int rbdl_ext_flush(struct rbdl_extlist *l, rbdl_diff_cb_t cb, void *arg);
/* Report the part of object range [ooff, ooff + olen) that the pieces of
 * this object (in a period starting at image offset base) cover. */
int rbdl_ext_add_obj_range(struct rbdl_extlist *l, uint64_t base,
			   const struct rbdl_piece *p, uint32_t np,
			   uint64_t ooff, uint64_t olen, int exists);
/* A diff callback that collects data extents (ascending) into a set. */
int rbdl_ext_collect_cb(uint64_t off, size_t len, int exists, void *arg);
/* Add the part of the object's pieces (at image base) that ps covers. */
int rbdl_ext_add_parent(struct rbdl_extlist *l, const struct rbdl_extset *ps,
			uint64_t base, const struct rbdl_piece *p,
			uint32_t np);

/* diff_objects.c */
/* Map [off, off + len) (one period) onto objects; with_info: room for
 * the stat results of nmid snapshots in between.  Free with
 * rbdl_diff_period_free, also after a failure. */
int rbdl_diff_period_map(struct rbdl_image *img, struct period *pd,
			 uint64_t off, uint64_t len, bool with_info,
			 uint32_t nmid);
void rbdl_diff_period_free(struct period *pd);
/* Report the changes in [off, off + left) by per-object inspection. */
int rbdl_diff_walk_objects(struct inspect *in, uint64_t off, uint64_t left,
			   rbdl_diff_cb_t cb, void *arg);

#endif /* RBDL_OPS_DIFF_INT_H */
