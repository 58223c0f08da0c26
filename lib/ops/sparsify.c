/*
 * sparsify.c - rbd_sparsify / rbd_sparsify_with_progress (features.h), as
 * librbd 16.2.15's operation/SparsifyRequest.
 *
 * sparse_size must be a power of two from 4096 to the object size
 * (-EINVAL).  As lock owner with our writes drained, every HEAD object in
 * turn: skipped when the object map says it does not exist; otherwise the
 * OSD does the work (cls "rbd" sparsify: zeroed runs of whole sparse_size
 * blocks become holes, a zeroed tail is truncated, and an object left
 * empty is removed unless its data may show a clone's parent through,
 * i.e. it lies within the parent overlap).  The write carries the
 * image's snapshot context, so snapshots keep their data.  With the object
 * map, an object the map records EXISTS (or EXISTS_CLEAN) goes PENDING, and afterwards
 * EXISTS or NONEXISTENT as a stat finds it (librbd's order).  Progress:
 * cb(object number, objects) after each object; a negative return stops
 * the walk and is the result (librbd 16.2.15 returns the callback's value).
 *
 * Threading: the caller's thread, with maint_mu held (maint.h).
 */
#include "config.h"

#include <errno.h>

#include "features.h"
#include "maint_int.h"

#include "image/lock.h"
#include "image/objmap.h"
#include "image/parent.h"
#include "image/state.h"
#include "proto/objmap_wire.h"
#include "proto/oid.h"
#include "proto/wire.h"
#include "rbd/features.h"

/* One object, as C_SparsifyObject. */
static int sparsify_object(struct rbdl_image *img, rados_ioctx_t io,
			   uint64_t objno, size_t sparse_size,
			   bool remove_empty)
{
	char oid[RBDL_OID_MAX];
	uint8_t in[16];
	struct rbdl_enc e;
	rados_write_op_t op;
	int prv = 0, r = rbdl_oid_data(oid, sizeof(oid), img->object_prefix,
				       objno);

	if (r < 0)
		return r;
	if (!rbdl_maint_may_exist(img, objno))
		return 0;
	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_u64(&e, sparse_size);
	rbdl_enc_u8(&e, remove_empty ? 1 : 0);
	op = rados_create_write_op();
	if (!op)
		return -ENOMEM;
	rados_write_op_exec(op, "rbd", "sparsify", (const char *)in,
			    (size_t)e.len, &prv);
	r = rados_write_op_operate(op, io, oid, NULL, 0);
	rados_release_write_op(op);
	if (r >= 0 && prv < 0)
		r = prv;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (!remove_empty ||
	    !(atomic_load(&img->features) & RBD_FEATURE_OBJECT_MAP) ||
	    !rbdl_objmap_usable(img->om))
		return 0;
	/* Only an object the map says EXISTS (or EXISTS_CLEAN, which an
	 * update from EXISTS also matches) is updated: librbd's aio_update
	 * with current state EXISTS. */
	uint8_t st = objno < rbdl_objmap_count(img->om)
			     ? rbdl_objmap_get(img->om, objno)
			     : RBDL_OBJ_NONEXISTENT;

	if (st != RBDL_OBJ_EXISTS && st != RBDL_OBJ_EXISTS_CLEAN)
		return 0;
	r = rbdl_objmap_update_sync(img, objno, objno + 1, RBDL_OBJ_PENDING,
				    RBDL_OBJ_EXISTS);
	if (r < 0)
		return r;
	uint64_t size;
	time_t mtime;

	r = rados_stat(io, oid, &size, &mtime);
	if (r < 0 && r != -ENOENT)
		return r;
	return rbdl_objmap_update_sync(img, objno, objno + 1,
				       r == 0 ? RBDL_OBJ_EXISTS
					      : RBDL_OBJ_NONEXISTENT,
				       RBDL_OBJ_PENDING);
}

int rbdl_sparsify(struct rbdl_image *img, size_t sparse_size,
		  rbdl_progress_fn cb, void *arg)
{
	uint64_t nobjs, overlap_objs = 0;
	int r;

	if (sparse_size < 4096 || sparse_size > img->layout.object_size ||
	    (sparse_size & (sparse_size - 1)) != 0)
		return -EINVAL;
	if (img->read_only)
		return -EROFS;
	r = rbdl_maint_begin(img, true);
	if (r < 0)
		return r;
	const struct rbdl_pview *pv = rbdl_parent_view(img);

	if (pv->parent && pv->overlap)
		overlap_objs = rbdl_layout_num_objects(&img->layout,
						       pv->overlap);
	nobjs = rbdl_layout_num_objects(&img->layout, atomic_load(&img->size));
	/* The write context: removals and truncations keep snapshots. */
	rados_ioctx_t io = atomic_load(&img->wr_io);

	for (uint64_t o = 0; o < nobjs && r == 0; o++) {
		r = sparsify_object(img, io, o, sparse_size, o >= overlap_objs);
		if (r == 0 && cb) {
			int cr = cb(o, nobjs, arg);

			if (cr < 0)
				r = cr;
		}
	}
	/* No header change to announce; our map copy is reloaded. */
	int rr = rbdl_maint_refresh(img);

	if (r == 0)
		r = rr;
	rbdl_maint_end(img);
	return r;
}
