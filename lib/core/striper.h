/*
 * striper.h - pure image-extent <-> object-extent mapping (RBD striping v2).
 *
 * Role: translate a byte range of an RBD image into the RADOS objects that
 * hold it, and back.  This is the arithmetic of Ceph's Striper
 * (file_to_extents / extent_to_file / get_num_objects) and of the kernel's
 * net/ceph/striper.c, restated for librbdlite.
 *
 * Threading and ownership: every function is pure.  Nothing here allocates,
 * locks or talks to RADOS; callers own every array passed in.  A layout is
 * immutable once initialised and may be shared between threads freely.
 *
 * Vocabulary (all offsets in bytes):
 *   object_size  = 1 << order
 *   su           = stripe unit, divides object_size
 *   sc           = stripe count (objects in an object set)
 *   piece        = a run of the request that maps to one object and does not
 *                  cross a stripe-unit boundary (after merging, see below)
 *   objext       = all pieces of one request that fall into one object
 */
#ifndef RBDL_STRIPER_H
#define RBDL_STRIPER_H

#include <stddef.h>
#include <stdint.h>

struct rbdl_layout {
	uint64_t object_size;	/* 1 << order */
	uint64_t stripe_unit;	/* su; equals object_size when sc == 1 */
	uint64_t stripe_count;	/* sc >= 1 */
	uint8_t order;
};

/*
 * Initialise a layout.  su == 0 or sc == 0 mean "not striped" (su =
 * object_size, sc = 1), as ImageCtx::init_layout does.  When sc == 1 the
 * stripe unit is forced to object_size (Striper::file_to_extents does the
 * same), so non-striped images take the O(1) path.
 * Returns 0, or -EINVAL if order is outside 12..25, su does not divide
 * object_size (any su >= 1 that divides object_size is accepted, as the cls
 * method accepts it) or sc exceeds UINT32_MAX (file_layout_t holds 32 bits).
 */
int rbdl_layout_init(struct rbdl_layout *l, uint8_t order, uint64_t su,
		     uint64_t sc);

/*
 * Number of objects an image of image_size bytes spans (the object-map
 * length): Striper::get_num_objects.
 */
uint64_t rbdl_layout_num_objects(const struct rbdl_layout *l,
				 uint64_t image_size);

/* One piece of a request inside one object. */
struct rbdl_piece {
	uint64_t obj_off;	/* offset inside the object */
	uint64_t len;		/* bytes */
	uint64_t buf_off;	/* offset relative to the start of the request */
};

/* All pieces of a request inside one object. */
struct rbdl_objext {
	uint64_t objno;		/* object number */
	uint64_t obj_off;	/* start of the covered span in the object */
	uint64_t len;		/* length of the span (== sum of piece lens) */
	uint32_t first_piece;	/* index into the pieces array */
	uint32_t npieces;	/* >= 1 */
};

/*
 * Count the objexts and pieces rbdl_striper_map() would produce for the
 * image range [off, off + len).  len == 0, or a range that wraps past
 * 2^64, gives 0 and 0.
 */
void rbdl_striper_count(const struct rbdl_layout *l, uint64_t off,
			uint64_t len, size_t *nobjs, size_t *npieces);

/*
 * Map the image range [off, off + len) onto objects.
 *
 * Output order: objexts in the order their first byte appears in the image
 * range; the pieces of one objext are consecutive in `pieces`
 * (first_piece .. first_piece + npieces - 1), sorted by obj_off, and their
 * object ranges are contiguous (the span has no holes).  Two pieces are
 * merged into one when they are contiguous both in the object and in the
 * request buffer (always the case for sc == 1, so a non-striped request has
 * exactly one piece per object).
 *
 * Returns 0 and sets *nobjs / *npieces, or -ERANGE if max_objs or max_pieces
 * is too small (use rbdl_striper_count() to size the arrays; it is exact) or
 * the request needs more than UINT32_MAX pieces, or -EINVAL if
 * off + len wraps past 2^64.
 */
int rbdl_striper_map(const struct rbdl_layout *l, uint64_t off, uint64_t len,
		     struct rbdl_objext *objs, size_t max_objs,
		     struct rbdl_piece *pieces, size_t max_pieces,
		     size_t *nobjs, size_t *npieces);

/* An image range produced by the reverse mapping. */
struct rbdl_img_range {
	uint64_t img_off;
	uint64_t len;
};

/*
 * Reverse mapping (Striper::extent_to_file): the image ranges that hold
 * [obj_off, obj_off + len) of object objno, in object order, with ranges
 * that are adjacent in the image merged.  Returns the number of ranges
 * written (at most max), or -ERANGE if max is too small, or -EINVAL if
 * obj_off + len exceeds object_size or objno lies beyond 2^64 image bytes.
 */
int rbdl_striper_obj_to_image(const struct rbdl_layout *l, uint64_t objno,
			      uint64_t obj_off, uint64_t len,
			      struct rbdl_img_range *out, size_t max);

#endif /* RBDL_STRIPER_H */
