/*
 * striper.c - image extent <-> object extent arithmetic (RBD striping v2).
 *
 * Role: the pure arithmetic of Ceph's Striper (file_to_extents,
 * extent_to_file, get_num_objects), written for one image range at a time.
 * rbd-protocol.md section 3 gives the formulas; the kernel's
 * net/ceph/striper.c is the model for the shape of the code.
 *
 * Threading and ownership: every function is reentrant.  There is no global
 * state, no allocation and no locking; callers own the layout and every
 * output array, and nothing is kept after a call returns.
 *
 * Geometry.  Image bytes are cut into stripe units (blocks) of su bytes.
 * Consecutive blocks go round-robin to the sc objects of an object set; once
 * every object of the set holds stripes_per_object = object_size / su blocks
 * the next object set starts.  With su = 1 MiB, sc = 3 and 4 MiB objects
 * (stripes_per_object = 4):
 *
 *   blockno  |  0  3  6  9 |  1  4  7 10 |  2  5  8 11 | 12 15 18 21 | 13 ..
 *   objno    |      0      |      1      |      2      |      3      |  4
 *   objsetno |                     0                   |        1
 *
 * When sc == 1 the stripe unit is object_size (file_to_extents resets it),
 * so a non-striped image has exactly one block per object.
 *
 * Merging.  The header promises that pieces contiguous both in the object
 * and in the request are merged.  With the geometry above that never has to
 * be done explicitly: two blocks of one object are sc * su bytes apart in
 * the image, so for sc >= 2 their pieces are never contiguous in the
 * request, and for sc == 1 a block is a whole object.  Hence every piece is
 * exactly the part of one block that the request covers, and the piece and
 * object counts have closed forms (rbdl_striper_count() is O(1)).  The same
 * argument makes the reverse mapping return one range per block.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "striper.h"

/*
 * The effective geometry of a layout.  rbdl_layout_init() already
 * normalises su and sc; doing it again here keeps the arithmetic safe (no
 * division by zero, no su that does not divide object_size) for a layout a
 * caller filled in by hand.  object_size itself must be a power of two
 * >= 4096, as rbdl_layout_init() guarantees.
 */
struct geom {
	uint64_t osz;		/* object size */
	uint64_t su;		/* stripe unit */
	uint64_t sc;		/* stripe count */
	uint64_t spo;		/* stripes (blocks) per object */
	uint64_t bps;		/* blocks per object set = sc * spo */
};

static void geom_of(const struct rbdl_layout *l, struct geom *g)
{
	g->osz = l->object_size;
	g->su = l->stripe_unit;
	g->sc = l->stripe_count;
	if (g->sc <= 1 || g->su == 0 || g->su > g->osz || g->osz % g->su) {
		g->su = g->osz;
		g->sc = 1;
	}
	g->spo = g->osz / g->su;
	g->bps = g->sc * g->spo;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int rbdl_layout_init(struct rbdl_layout *l, uint8_t order, uint64_t su,
		     uint64_t sc)
{
	uint64_t osz;

	if (order < 12 || order > 25)
		return -EINVAL;
	osz = 1ULL << order;
	/* ImageCtx::init_layout: either field unset means "not striped". */
	if (su == 0 || sc == 0) {
		su = osz;
		sc = 1;
	}
	if (su > osz || osz % su)
		return -EINVAL;
	/* file_layout_t keeps the stripe count in 32 bits. */
	if (sc > UINT32_MAX)
		return -EINVAL;
	if (sc == 1)
		su = osz;

	l->object_size = osz;
	l->stripe_unit = su;
	l->stripe_count = sc;
	l->order = order;
	return 0;
}

uint64_t rbdl_layout_num_objects(const struct rbdl_layout *l,
				 uint64_t image_size)
{
	struct geom g;
	uint64_t period, nperiods, rem, rem_objs = 0;

	geom_of(l, &g);
	if (image_size == 0)
		return 0;
	period = g.sc * g.osz;	/* <= 2^32 * 2^25, no overflow */
	nperiods = image_size / period + (image_size % period != 0);
	rem = image_size % period;
	/*
	 * A partial last period whose bytes do not reach every object of the
	 * set leaves the untouched objects out.  (With sc == 1, rem < su
	 * gives 1 - 1 = 0 objects left out.)
	 */
	if (rem > 0 && rem < g.sc * g.su)
		rem_objs = g.sc - (rem / g.su + (rem % g.su != 0));
	return nperiods * g.sc - rem_objs;
}

void rbdl_striper_count(const struct rbdl_layout *l, uint64_t off,
			uint64_t len, size_t *nobjs, size_t *npieces)
{
	struct geom g;
	uint64_t b0, b1, os0, os1, n;

	*nobjs = 0;
	*npieces = 0;
	if (len == 0 || len > UINT64_MAX - off)
		return;
	geom_of(l, &g);
	b0 = off / g.su;
	b1 = (off + len - 1) / g.su;
	os0 = b0 / g.bps;
	os1 = b1 / g.bps;

	/* One piece per block touched (see "Merging" above). */
	*npieces = (size_t)(b1 - b0 + 1);

	/*
	 * Objects: inside one object set, k consecutive blocks touch
	 * min(k, sc) objects; every object set strictly between the first
	 * and the last one is touched entirely.
	 */
	if (os0 == os1) {
		n = min_u64(g.sc, b1 - b0 + 1);
	} else {
		n = min_u64(g.sc, (os0 + 1) * g.bps - b0);
		n += (os1 - os0 - 1) * g.sc;
		n += min_u64(g.sc, b1 - os1 * g.bps + 1);
	}
	*nobjs = (size_t)n;
}

int rbdl_striper_map(const struct rbdl_layout *l, uint64_t off, uint64_t len,
		     struct rbdl_objext *objs, size_t max_objs,
		     struct rbdl_piece *pieces, size_t max_pieces,
		     size_t *nobjs, size_t *npieces)
{
	struct geom g;
	uint64_t end, b0, b1, os, os1;
	size_t no = 0, np = 0;

	*nobjs = 0;
	*npieces = 0;
	if (len == 0)
		return 0;
	if (len > UINT64_MAX - off)
		return -EINVAL;
	geom_of(l, &g);
	end = off + len;
	b0 = off / g.su;
	b1 = (end - 1) / g.su;
	os1 = b1 / g.bps;

	for (os = b0 / g.bps;; os++) {
		/* Blocks [lo, hi] of the request inside object set os. */
		uint64_t set_first = os * g.bps;
		uint64_t lo = b0 > set_first ? b0 : set_first;
		uint64_t hi = b1 - set_first < g.bps ? b1 :
						       set_first + g.bps - 1;
		uint64_t nobj_set = min_u64(g.sc, hi - lo + 1);
		uint64_t i;

		/*
		 * Block lo + i is the first block of its object, so this
		 * order is the order in which objects first appear.
		 */
		for (i = 0; i < nobj_set; i++) {
			struct rbdl_objext *o;
			uint64_t b = lo + i;

			if (no == max_objs)
				return -ERANGE;
			o = &objs[no++];
			o->objno = os * g.sc + b % g.sc;
			o->len = 0;
			o->first_piece = (uint32_t)np;
			o->npieces = 0;

			/* The object's blocks: every sc-th one up to hi. */
			for (;;) {
				uint64_t bstart = b * g.su;
				uint64_t pstart = bstart > off ? bstart : off;
				uint64_t pend = end - bstart <= g.su ?
						end : bstart + g.su;
				struct rbdl_piece *p;

				if (np == max_pieces || np >= UINT32_MAX)
					return -ERANGE;
				p = &pieces[np++];
				p->obj_off = (b / g.sc % g.spo) * g.su +
					     (pstart - bstart);
				p->len = pend - pstart;
				p->buf_off = pstart - off;
				if (o->npieces == 0)
					o->obj_off = p->obj_off;
				o->npieces++;
				o->len += p->len;

				if (hi - b < g.sc)
					break;
				b += g.sc;
			}
		}
		if (os == os1)
			break;
	}
	*nobjs = no;
	*npieces = np;
	return 0;
}

int rbdl_striper_obj_to_image(const struct rbdl_layout *l, uint64_t objno,
			      uint64_t obj_off, uint64_t len,
			      struct rbdl_img_range *out, size_t max)
{
	struct geom g;
	uint64_t setno, pos, end, o;
	size_t n = 0;

	geom_of(l, &g);
	if (obj_off > g.osz || len > g.osz - obj_off)
		return -EINVAL;
	if (len == 0)
		return 0;
	setno = objno / g.sc;
	pos = objno % g.sc;
	end = obj_off + len;

	for (o = obj_off; o < end;) {
		uint64_t in_su = o % g.su;
		uint64_t run = min_u64(g.su - in_su, end - o);
		uint64_t stripeno, blockno, img;

		/*
		 * Striper::extent_to_file.  Only a huge objno can overflow;
		 * such an object has no image offset.
		 */
		if (__builtin_mul_overflow(setno, g.spo, &stripeno) ||
		    __builtin_add_overflow(stripeno, o / g.su, &stripeno) ||
		    __builtin_mul_overflow(stripeno, g.sc, &blockno) ||
		    __builtin_add_overflow(blockno, pos, &blockno) ||
		    __builtin_mul_overflow(blockno, g.su, &img) ||
		    __builtin_add_overflow(img, in_su, &img) ||
		    run - 1 > UINT64_MAX - img)
			return -EINVAL;

		if (n == max)
			return -ERANGE;
		out[n].img_off = img;
		out[n].len = run;
		n++;
		o += run;
	}
	return (int)n;
}
