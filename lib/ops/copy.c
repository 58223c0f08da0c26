/*
 * copy.c - rbd_copy* as librbd 16.2's librbd::copy does it: a new image
 * created like rbd_create4 with the source's features, order and
 * striping unless the options say otherwise (the options are updated in
 * place, as librbd's shared option set is), then the source's image
 * metadata and its data, read through librbdlite's own data path (HEAD
 * or the open snapshot; a clone's parent data included) one stripe period
 * at a time and written to the destination in runs of non-zero
 * sparse_size chunks (0: the destination's object size), zero chunks
 * skipped.  With an object map at hand (a snapshot open, or HEAD while
 * we own the lock) periods whose objects cannot exist are not read at
 * all, as librbd skips them -- the parent data of a clone's snapshot
 * included, which librbd 16.2 leaves out of the copy too.
 *
 * Progress: cb(offset of each period read, source size), then (size,
 * size) at the end; as in librbd its return value is ignored.
 *
 * Threading: the caller's thread; the destination image is opened
 * (rbd_copy*) or given (rbd_copy2) and written through the ordinary
 * write path, so its exclusive lock and object map are kept as any
 * writer keeps them.
 */
#include "config.h"

#include "copy.h"
#include "clone.h"
#include "pool.h"

#include "core/internal.h"
#include "image/objmap.h"
#include "image/open.h"
#include "image/refresh.h"
#include "image/state.h"
#include "io/io.h"
#include "io/plan.h"
#include "proto/cls_rbd.h"
#include "proto/objmap_wire.h"
#include "proto/rados.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/features.h"
#include "rbd/librbd.h"

/* The objects of the source view that may exist, or NULL for "all may"
 * (what librbd's src->object_map answers; see the file comment). */
struct may_map {
	uint8_t *bits;	/* stored map (malloc'ed), or NULL */
	uint64_t n;
	bool mem;	/* use the loaded HEAD map */
};

static void may_map_load(struct rbdl_image *src, struct may_map *m)
{
	uint64_t flags = 0;

	memset(m, 0, sizeof(*m));
	if (!(atomic_load(&src->features) & RBD_FEATURE_OBJECT_MAP))
		return;
	/* RefreshRequest opens HEAD's map only for a read-write lock
	 * owner, a snapshot's always */
	if (src->snap_id == RBDL_NOSNAP) {
		m->mem = !src->read_only && rbdl_objmap_trusted(src->om);
		return;
	}
	if (rbdl_cls_read_u64_at(src->md_io, src->header_oid, "get_flags",
				 src->snap_id, &flags) < 0 ||
	    (flags & RBD_FLAG_OBJECT_MAP_INVALID))
		return;
	if (rbdl_objmap_read(src->md_io, src->id, src->snap_id, &m->bits,
			     &m->n) < 0) {
		m->bits = NULL;
		m->n = 0;
	}
}

/* ObjectMap::object_may_exist, with objects past the map "absent". */
static bool may_exist(struct rbdl_image *src, const struct may_map *m,
		      uint64_t objno)
{
	if (m->mem)
		return objno < rbdl_objmap_count(src->om) &&
		       rbdl_objmap_get(src->om, objno) != RBDL_OBJ_NONEXISTENT;
	return objno < m->n && rbdl_om_state(m->bits, objno) !=
				       RBDL_OBJ_NONEXISTENT;
}

static bool all_zero(const char *p, size_t n)
{
	return rbdl_plan_all_zero(p, n);
}

int rbdl_op_write_runs(struct rbdl_image *dest, uint64_t off, char *buf,
		       size_t len, size_t gran, bool zero_holes)
{
	size_t pos = 0;

	while (pos < len) {
		size_t ext = len - pos < gran ? len - pos : gran;
		bool zero = all_zero(buf + pos, ext);
		size_t end = pos + ext;

		while (end < len) {
			size_t e = len - end < gran ? len - end : gran;

			if (all_zero(buf + end, e) != zero)
				break;
			end += e;
		}
		if (!zero || zero_holes) {
			struct rbdl_io_args a = {
				.op = zero ? RBDL_OP_WRITE_ZEROES : RBDL_OP_WRITE,
				.off = off + pos,
				.len = end - pos,
				.buf = zero ? NULL : buf + pos,
				.op_flags = zero ? 0
						 : LIBRADOS_OP_FLAG_FADVISE_DONTNEED,
			};
			ssize_t r = rbdl_io_sync(dest, &a);

			if (r < 0)
				return (int)r;
		}
		pos = end;
	}
	return 0;
}

int rbdl_op_copy_to(struct rbdl_image *src, struct rbdl_image *dest,
		    size_t sparse, rbdl_progress_fn cb, void *arg)
{
	struct rbdl_io_args fl = { .op = RBDL_OP_FLUSH };
	const struct rbdl_layout *l = &src->layout;
	uint64_t src_size, dest_size, period, objno = 0;
	struct may_map m;
	char *buf;
	int r = rbdl_image_maybe_refresh(src);

	if (r == 0)
		r = rbdl_image_maybe_refresh(dest);
	if (r < 0)
		return r;
	src_size = atomic_load(&src->size);
	dest_size = atomic_load(&dest->size);
	if (dest_size < src_size)
		return -EINVAL;
	r = (int)rbdl_io_sync(src, &fl);
	if (r < 0)
		return r;
	r = rbdl_op_copy_metadata(src->md_io, src->header_oid, dest->md_io,
				  dest->header_oid);
	if (r < 0)
		return r;

	if (!sparse)
		sparse = dest->layout.object_size;
	period = l->object_size * l->stripe_count;
	buf = malloc(period);
	if (!buf)
		return -ENOMEM;
	may_map_load(src, &m);
	for (uint64_t off = 0; off < src_size && r == 0; off += period) {
		uint64_t len = src_size - off < period ? src_size - off : period;

		if (m.mem || m.bits) {
			bool skip = true;

			for (uint64_t i = 0; i < l->stripe_count; i++, objno++)
				if (may_exist(src, &m, objno))
					skip = false;
			if (skip)
				continue;
		}
		struct rbdl_io_args a = {
			.op = RBDL_OP_READ,
			.off = off,
			.len = len,
			.buf = buf,
			.op_flags = LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL |
				    LIBRADOS_OP_FLAG_FADVISE_NOCACHE,
		};
		ssize_t n = rbdl_io_sync(src, &a);

		if (cb)
			cb(off, src_size, arg);
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (!all_zero(buf, (size_t)n))
			r = rbdl_op_write_runs(dest, off, buf, (size_t)n,
					       sparse, false);
	}
	free(buf);
	free(m.bits);
	if (r == 0) {
		r = (int)rbdl_io_sync(dest, &fl);
		if (r == 0 && cb)
			cb(src_size, src_size, arg);
	}
	return r;
}

int rbdl_op_copy_opts(struct rbdl_image *src, struct rbdl_opts *opts,
		      bool deep, uint64_t *order)
{
	uint64_t v, features = atomic_load(&src->features), su, sc, format;

	su = src->stripe_unit ? src->stripe_unit : src->layout.object_size;
	sc = src->layout.stripe_count;
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FORMAT, &format))
		rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_FORMAT, format = 2);
	if (deep && format == 1)
		return -EINVAL;	/* old format not supported for destination */
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_STRIPE_UNIT, &v))
		rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_STRIPE_UNIT, su);
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_STRIPE_COUNT, &v))
		rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_STRIPE_COUNT, sc);
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_ORDER, order)) {
		*order = src->layout.order;
		rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_ORDER, *order);
	}
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FEATURES, &features))
		rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_FEATURES, features);
	if (features & ~(uint64_t)RBD_FEATURES_ALL)
		return -ENOSYS;
	return 0;
}

bool rbdl_op_copy_dest_journaled(struct rbdl_image *src,
				 const struct rbdl_opts *opts)
{
	uint64_t features = atomic_load(&src->features), v;

	rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FEATURES, &features);
	return (features & RBD_FEATURE_JOURNALING) ||
	       rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_MIRROR_IMAGE_MODE,
				 &v) == 0;
}

int rbdl_op_copy(struct rbdl_image *src, rados_ioctx_t dest_io,
		 const char *destname, struct rbdl_opts *opts, size_t sparse,
		 rbdl_progress_fn cb, void *arg)
{
	struct rbdl_handle *h;
	uint64_t v, order;
	int r;

	if (!dest_io || !destname || !opts)
		return -EINVAL;
	if (rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_FLATTEN, &v) == 0 ||
	    rbdl_opts_get_u64(opts, RBD_IMAGE_OPTION_CLONE_FORMAT, &v) == 0)
		return -EINVAL;
	r = rbdl_image_maybe_refresh(src);
	if (r == 0)
		r = rbdl_op_copy_opts(src, opts, false, &order);
	if (r < 0)
		return r;

	r = rbdl_op_create(dest_io, destname, atomic_load(&src->size), opts,
			   NULL);
	if (r < 0)
		return r;
	rbdl_opts_set_u64(opts, RBD_IMAGE_OPTION_ORDER, order);

	r = rbdl_image_open(dest_io, destname, NULL, NULL, false, &h);
	if (r < 0)
		return r;
	r = rbdl_op_copy_to(src, h->img, sparse, cb, arg);
	{
		int q = rbdl_image_close(h);

		if (r == 0 && q < 0)
			r = q;
	}
	return r;
}
