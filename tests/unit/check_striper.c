/*
 * check_striper.c - unit tests for lib/striper.c.
 *
 * Golden data: the striping test vector of rbd-protocol.md section 3 and
 * the worked table in the kernel's net/ceph/striper.c.  The property test
 * checks rbdl_striper_map() against an independent geometric reference
 * (object set -> row -> column) for random layouts and ranges, and checks
 * that rbdl_striper_obj_to_image() inverts it.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/striper.h"

#define KiB (1024ULL)
#define MiB (1024ULL * 1024)

#define MAXO 4096
#define MAXP 65536

/*
 * Check's ck_assert_*() records a mark point on every call, which costs a
 * write to the parent in fork mode; the property tests make millions of
 * comparisons, so they use these, which only call into Check on failure.
 */
#define EXPECT(c)							\
	do {								\
		if (!(c))						\
			ck_abort_msg("expected %s", #c);		\
	} while (0)
#define EXPECT_EQ(a, b)							\
	do {								\
		uint64_t a_ = (a), b_ = (b);				\
		if (a_ != b_)						\
			ck_abort_msg("expected %s == %s: %llu != %llu",	\
				     #a, #b, (unsigned long long)a_,	\
				     (unsigned long long)b_);		\
	} while (0)

static struct rbdl_objext objs[MAXO];
static struct rbdl_piece pieces[MAXP];

static void layout(struct rbdl_layout *l, uint8_t order, uint64_t su,
		   uint64_t sc)
{
	ck_assert_int_eq(rbdl_layout_init(l, order, su, sc), 0);
}

/* Map and check that rbdl_striper_count() predicted the result exactly. */
static void map(const struct rbdl_layout *l, uint64_t off, uint64_t len,
		size_t *no, size_t *np)
{
	size_t co, cp;

	rbdl_striper_count(l, off, len, &co, &cp);
	EXPECT(co <= MAXO);
	EXPECT(cp <= MAXP);
	EXPECT_EQ(rbdl_striper_map(l, off, len, objs, MAXO, pieces, MAXP, no,
				   np), 0);
	EXPECT_EQ(*no, co);
	EXPECT_EQ(*np, cp);
}

static void expect_piece(uint32_t i, uint64_t obj_off, uint64_t len,
			 uint64_t buf_off)
{
	ck_assert_uint_eq(pieces[i].obj_off, obj_off);
	ck_assert_uint_eq(pieces[i].len, len);
	ck_assert_uint_eq(pieces[i].buf_off, buf_off);
}

/* ---- layout ------------------------------------------------------------- */

START_TEST(test_layout_init)
{
	struct rbdl_layout l;

	layout(&l, 22, 0, 0);
	ck_assert_uint_eq(l.object_size, 4 * MiB);
	ck_assert_uint_eq(l.stripe_unit, 4 * MiB);
	ck_assert_uint_eq(l.stripe_count, 1);
	ck_assert_uint_eq(l.order, 22);

	/* su or sc unset: not striped. */
	layout(&l, 22, 64 * KiB, 0);
	ck_assert_uint_eq(l.stripe_unit, 4 * MiB);
	ck_assert_uint_eq(l.stripe_count, 1);
	layout(&l, 22, 0, 4);
	ck_assert_uint_eq(l.stripe_unit, 4 * MiB);
	ck_assert_uint_eq(l.stripe_count, 1);

	/* sc == 1 forces su = object_size. */
	layout(&l, 22, 64 * KiB, 1);
	ck_assert_uint_eq(l.stripe_unit, 4 * MiB);
	ck_assert_uint_eq(l.stripe_count, 1);

	layout(&l, 22, 64 * KiB, 4);
	ck_assert_uint_eq(l.stripe_unit, 64 * KiB);
	ck_assert_uint_eq(l.stripe_count, 4);

	/* Any divisor of object_size, even a tiny one. */
	layout(&l, 12, 1, 3);
	ck_assert_uint_eq(l.stripe_unit, 1);
	layout(&l, 25, 32 * MiB, 2);
	layout(&l, 12, 4096, 2);

	ck_assert_int_eq(rbdl_layout_init(&l, 11, 0, 0), -EINVAL);
	ck_assert_int_eq(rbdl_layout_init(&l, 26, 0, 0), -EINVAL);
	ck_assert_int_eq(rbdl_layout_init(&l, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(rbdl_layout_init(&l, 255, 0, 0), -EINVAL);
	ck_assert_int_eq(rbdl_layout_init(&l, 22, 3 * KiB, 4), -EINVAL);
	ck_assert_int_eq(rbdl_layout_init(&l, 22, 8 * MiB, 2), -EINVAL);
	ck_assert_int_eq(rbdl_layout_init(&l, 22, 3, 1), -EINVAL);
	ck_assert_int_eq(rbdl_layout_init(&l, 22, 64 * KiB,
					  (uint64_t)UINT32_MAX + 1), -EINVAL);
	layout(&l, 22, 64 * KiB, UINT32_MAX);
}
END_TEST

/* ---- golden vectors ----------------------------------------------------- */

/*
 * rbd-protocol.md section 3: su 64 KiB, sc 4, 4 MiB objects; image blocks
 * A..I (64 KiB each) land as obj0 = [A,E,I], obj1 = [B,F], obj2 = [C,G],
 * obj3 = [D,H] at 64 KiB steps.
 */
START_TEST(test_doc_vector)
{
	struct rbdl_layout l;
	struct rbdl_img_range r[8];
	size_t no, np;
	uint32_t i, k;

	layout(&l, 22, 64 * KiB, 4);
	map(&l, 0, 576 * KiB, &no, &np);
	ck_assert_uint_eq(no, 4);
	ck_assert_uint_eq(np, 9);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(objs[i].objno, i);
		ck_assert_uint_eq(objs[i].obj_off, 0);
		ck_assert_uint_eq(objs[i].npieces, i == 0 ? 3 : 2);
		ck_assert_uint_eq(objs[i].len, objs[i].npieces * 64 * KiB);
		for (k = 0; k < objs[i].npieces; k++) {
			/* block letter = i + 4k */
			expect_piece(objs[i].first_piece + k, k * 64 * KiB,
				     64 * KiB, (i + 4 * k) * 64 * KiB);
		}
	}
	ck_assert_uint_eq(objs[0].first_piece, 0);
	ck_assert_uint_eq(objs[1].first_piece, 3);
	ck_assert_uint_eq(objs[2].first_piece, 5);
	ck_assert_uint_eq(objs[3].first_piece, 7);

	/* Reverse: obj0's first 192 KiB are A, E, I. */
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 0, 0, 192 * KiB, r, 8),
			 3);
	ck_assert_uint_eq(r[0].img_off, 0);
	ck_assert_uint_eq(r[1].img_off, 256 * KiB);
	ck_assert_uint_eq(r[2].img_off, 512 * KiB);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(r[i].len, 64 * KiB);
	/* obj3 from 64 KiB: H (block 7). */
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 3, 64 * KiB, 64 * KiB,
						   r, 8), 1);
	ck_assert_uint_eq(r[0].img_off, 7 * 64 * KiB);

	/* A 64 MiB image has 16 objects. */
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 64 * MiB), 16);
}
END_TEST

/*
 * net/ceph/striper.c, su = 1 MiB, sc = 3, 4 MiB objects
 * (stripes_per_object = 4):
 *   blockno 0 3 6 9 -> objno 0; 1 4 7 10 -> 1; 2 5 8 11 -> 2;
 *   12 15 18 21 -> 3; 13 16 19 22 -> 4; 14 17 20 23 -> 5.
 */
START_TEST(test_kernel_table)
{
	static const uint64_t table[6][4] = {
		{ 0, 3, 6, 9 },	    { 1, 4, 7, 10 },   { 2, 5, 8, 11 },
		{ 12, 15, 18, 21 }, { 13, 16, 19, 22 }, { 14, 17, 20, 23 },
	};
	struct rbdl_layout l;
	struct rbdl_img_range r[8];
	size_t no, np;
	uint64_t objno, k;

	layout(&l, 22, 1 * MiB, 3);
	for (objno = 0; objno < 6; objno++) {
		for (k = 0; k < 4; k++) {
			uint64_t b = table[objno][k];

			/* One block: one piece in the expected object. */
			map(&l, b * MiB, MiB, &no, &np);
			ck_assert_uint_eq(no, 1);
			ck_assert_uint_eq(np, 1);
			ck_assert_uint_eq(objs[0].objno, objno);
			expect_piece(0, k * MiB, MiB, 0);
		}
		/* The whole object maps back to the four blocks in order. */
		ck_assert_int_eq(rbdl_striper_obj_to_image(&l, objno, 0,
							   4 * MiB, r, 8), 4);
		for (k = 0; k < 4; k++) {
			ck_assert_uint_eq(r[k].img_off, table[objno][k] * MiB);
			ck_assert_uint_eq(r[k].len, MiB);
		}
	}

	/* All 24 blocks at once: objects 0..5, four pieces each. */
	map(&l, 0, 24 * MiB, &no, &np);
	ck_assert_uint_eq(no, 6);
	ck_assert_uint_eq(np, 24);
	for (objno = 0; objno < 6; objno++) {
		ck_assert_uint_eq(objs[objno].objno, objno);
		ck_assert_uint_eq(objs[objno].npieces, 4);
		ck_assert_uint_eq(objs[objno].len, 4 * MiB);
		for (k = 0; k < 4; k++)
			ck_assert_uint_eq(
				pieces[objs[objno].first_piece + k].buf_off,
				table[objno][k] * MiB);
	}
	/* Object count: block 12 opens object 3, 13 object 4, ... */
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 12 * MiB), 3);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 12 * MiB + 1), 4);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 13 * MiB), 4);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 13 * MiB + 1), 5);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 14 * MiB + 1), 6);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 24 * MiB), 6);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 24 * MiB + 1), 7);
}
END_TEST

/* ---- non-striped -------------------------------------------------------- */

START_TEST(test_nonstriped)
{
	struct rbdl_layout l;
	struct rbdl_img_range r[4];
	size_t no, np;

	layout(&l, 22, 0, 0);
	/* Unaligned range crossing two object boundaries. */
	map(&l, 4 * MiB - 100, 4 * MiB + 200, &no, &np);
	ck_assert_uint_eq(no, 3);
	ck_assert_uint_eq(np, 3);
	ck_assert_uint_eq(objs[0].objno, 0);
	ck_assert_uint_eq(objs[1].objno, 1);
	ck_assert_uint_eq(objs[2].objno, 2);
	expect_piece(0, 4 * MiB - 100, 100, 0);
	expect_piece(1, 0, 4 * MiB, 100);
	expect_piece(2, 0, 100, 4 * MiB + 100);
	ck_assert_uint_eq(objs[1].obj_off, 0);
	ck_assert_uint_eq(objs[1].len, 4 * MiB);
	ck_assert_uint_eq(objs[2].first_piece, 2);

	/* Inside one object. */
	map(&l, 9 * MiB + 5, 1000, &no, &np);
	ck_assert_uint_eq(no, 1);
	ck_assert_uint_eq(objs[0].objno, 2);
	expect_piece(0, MiB + 5, 1000, 0);

	/* A hand-built layout with sc == 1 but a small su still uses whole
	 * objects, as Striper::file_to_extents does. */
	l.stripe_unit = 64 * KiB;
	map(&l, 0, 8 * MiB, &no, &np);
	ck_assert_uint_eq(no, 2);
	ck_assert_uint_eq(np, 2);
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 1, 0, 4 * MiB, r, 1),
			 1);
	ck_assert_uint_eq(r[0].img_off, 4 * MiB);
	ck_assert_uint_eq(r[0].len, 4 * MiB);
}
END_TEST

START_TEST(test_one_byte)
{
	struct rbdl_layout l;
	size_t no, np;

	layout(&l, 16, 4 * KiB, 5);	/* 64 KiB objects, 16 blocks each */
	/* Last byte of block 0, first byte of block 1, last byte of the
	 * first object set, first byte of the second. */
	map(&l, 4 * KiB - 1, 1, &no, &np);
	ck_assert_uint_eq(objs[0].objno, 0);
	expect_piece(0, 4 * KiB - 1, 1, 0);

	map(&l, 4 * KiB, 1, &no, &np);
	ck_assert_uint_eq(objs[0].objno, 1);
	expect_piece(0, 0, 1, 0);

	map(&l, 5 * 64 * KiB - 1, 1, &no, &np);
	ck_assert_uint_eq(no, 1);
	ck_assert_uint_eq(objs[0].objno, 4);
	expect_piece(0, 64 * KiB - 1, 1, 0);

	map(&l, 5 * 64 * KiB, 1, &no, &np);
	ck_assert_uint_eq(objs[0].objno, 5);
	expect_piece(0, 0, 1, 0);

	/* Two bytes straddling a block boundary: two objects. */
	map(&l, 8 * KiB - 1, 2, &no, &np);
	ck_assert_uint_eq(no, 2);
	ck_assert_uint_eq(objs[0].objno, 1);
	ck_assert_uint_eq(objs[1].objno, 2);
	expect_piece(0, 4 * KiB - 1, 1, 0);
	expect_piece(1, 0, 1, 1);
}
END_TEST

/*
 * su 64 KiB, sc 4, 256 KiB objects: 4 blocks per object, 16 per object
 * set.  A range starting in the middle of a stripe lists objects in the
 * order of their first byte, wrapping round the stripe.
 */
START_TEST(test_unaligned_and_sets)
{
	struct rbdl_layout l;
	size_t no, np;

	layout(&l, 18, 64 * KiB, 4);

	/* Blocks 2..9 with a partial first and last block. */
	map(&l, 2 * 64 * KiB + 10, 8 * 64 * KiB - 20, &no, &np);
	ck_assert_uint_eq(no, 4);
	ck_assert_uint_eq(np, 8);
	ck_assert_uint_eq(objs[0].objno, 2);
	ck_assert_uint_eq(objs[1].objno, 3);
	ck_assert_uint_eq(objs[2].objno, 0);
	ck_assert_uint_eq(objs[3].objno, 1);
	/* obj2: block 2 (from +10) and block 6 (stripe 1). */
	ck_assert_uint_eq(objs[0].obj_off, 10);
	ck_assert_uint_eq(objs[0].len, 2 * 64 * KiB - 10);
	expect_piece(0, 10, 64 * KiB - 10, 0);
	expect_piece(1, 64 * KiB, 64 * KiB, 4 * 64 * KiB - 10);
	/* obj0: blocks 4 and 8 (stripes 1, 2). */
	ck_assert_uint_eq(objs[2].obj_off, 64 * KiB);
	expect_piece(objs[2].first_piece, 64 * KiB, 64 * KiB,
		     2 * 64 * KiB - 10);
	expect_piece(objs[2].first_piece + 1, 2 * 64 * KiB, 64 * KiB,
		     6 * 64 * KiB - 10);
	/* obj1: block 5, then block 9 up to the end of the request. */
	expect_piece(objs[3].first_piece + 1, 2 * 64 * KiB, 64 * KiB - 10,
		     7 * 64 * KiB - 10);

	/* Blocks 14..18 cross into object set 1 (objects 4..7). */
	map(&l, 14 * 64 * KiB, 5 * 64 * KiB, &no, &np);
	ck_assert_uint_eq(no, 5);
	ck_assert_uint_eq(objs[0].objno, 2);
	ck_assert_uint_eq(objs[1].objno, 3);
	ck_assert_uint_eq(objs[2].objno, 4);
	ck_assert_uint_eq(objs[3].objno, 5);
	ck_assert_uint_eq(objs[4].objno, 6);
	expect_piece(0, 3 * 64 * KiB, 64 * KiB, 0);
	expect_piece(2, 0, 64 * KiB, 2 * 64 * KiB);

	/* Three whole object sets plus a bit: 12 + 1 objects. */
	map(&l, 16 * 64 * KiB + 1, 3 * MiB, &no, &np);
	ck_assert_uint_eq(no, 13);
	ck_assert_uint_eq(np, 49);
	ck_assert_uint_eq(objs[0].objno, 4);
	ck_assert_uint_eq(objs[12].objno, 16);
}
END_TEST

START_TEST(test_num_objects)
{
	struct rbdl_layout l;

	layout(&l, 22, 0, 0);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 0), 0);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 1), 1);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 4 * MiB), 1);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 4 * MiB + 1), 2);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 1024 * MiB), 256);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, UINT64_MAX),
			  (UINT64_MAX >> 22) + 1);

	/* su 64 KiB, sc 4: period 16 MiB. */
	layout(&l, 22, 64 * KiB, 4);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 0), 0);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 1), 1);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 64 * KiB), 1);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 64 * KiB + 1), 2);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 192 * KiB), 3);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 256 * KiB - 1), 4);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 256 * KiB), 4);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 1 * MiB), 4);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 16 * MiB), 4);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 16 * MiB + 1), 5);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 16 * MiB + 200 * KiB), 8);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 32 * MiB), 8);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 64 * MiB), 16);
	ck_assert_uint_eq(rbdl_layout_num_objects(&l, 1024 * MiB), 256);
}
END_TEST

START_TEST(test_limits)
{
	struct rbdl_layout l;
	struct rbdl_img_range r[4];
	size_t no = 7, np = 7;

	layout(&l, 22, 64 * KiB, 4);

	/* Empty range. */
	rbdl_striper_count(&l, 123, 0, &no, &np);
	ck_assert_uint_eq(no, 0);
	ck_assert_uint_eq(np, 0);
	no = np = 7;
	ck_assert_int_eq(rbdl_striper_map(&l, 123, 0, NULL, 0, NULL, 0, &no,
					  &np), 0);
	ck_assert_uint_eq(no, 0);
	ck_assert_uint_eq(np, 0);

	/* Arrays too small. */
	ck_assert_int_eq(rbdl_striper_map(&l, 0, 576 * KiB, objs, 3, pieces,
					  MAXP, &no, &np), -ERANGE);
	ck_assert_int_eq(rbdl_striper_map(&l, 0, 576 * KiB, objs, 4, pieces,
					  8, &no, &np), -ERANGE);
	ck_assert_int_eq(rbdl_striper_map(&l, 0, 576 * KiB, objs, 4, pieces,
					  9, &no, &np), 0);

	/* Ranges that wrap past 2^64. */
	rbdl_striper_count(&l, UINT64_MAX, 2, &no, &np);
	ck_assert_uint_eq(no, 0);
	ck_assert_uint_eq(np, 0);
	ck_assert_int_eq(rbdl_striper_map(&l, UINT64_MAX, 2, objs, MAXO,
					  pieces, MAXP, &no, &np), -EINVAL);

	/* The very last byte of the address space is fine. */
	map(&l, UINT64_MAX - 1, 1, &no, &np);
	ck_assert_uint_eq(no, 1);
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, objs[0].objno,
						   pieces[0].obj_off, 1, r, 4),
			 1);
	ck_assert_uint_eq(r[0].img_off, UINT64_MAX - 1);

	/* Reverse mapping limits. */
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 0, 0, 0, r, 0), 0);
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 0, 0, 4 * MiB + 1, r,
						   4), -EINVAL);
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 0, 4 * MiB, 1, r, 4),
			 -EINVAL);
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 0, UINT64_MAX, 2, r,
						   4), -EINVAL);
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, 0, 0, 4 * MiB, r, 4),
			 -ERANGE);
	ck_assert_int_eq(rbdl_striper_obj_to_image(&l, UINT64_MAX, 0, 1, r,
						   4), -EINVAL);
}
END_TEST

/* ---- property test ------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so failures reproduce. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/*
 * Reference mapping of one image byte, derived from the picture rather
 * than from the Striper formulas: an object set is a grid of
 * stripes_per_object rows by sc columns of su-sized cells, filled row by
 * row; column c is object (set * sc + c), row r is bytes [r*su, (r+1)*su)
 * of that object.
 */
static void ref_map(const struct rbdl_layout *l, uint64_t off, uint64_t *objno,
		    uint64_t *obj_off)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count;
	uint64_t set_bytes = l->object_size * sc;
	uint64_t row_bytes = su * sc;
	uint64_t set = off / set_bytes, in_set = off % set_bytes;
	uint64_t row = in_set / row_bytes, col = in_set % row_bytes / su;

	*objno = set * sc + col;
	*obj_off = row * su + off % su;
}

static int cmp_buf_off(const void *a, const void *b)
{
	const struct rbdl_piece *x = a, *y = b;

	return x->buf_off < y->buf_off ? -1 : x->buf_off > y->buf_off;
}

static void check_one(const struct rbdl_layout *l, uint64_t off, uint64_t len)
{
	static struct rbdl_img_range r[MAXP];
	static struct rbdl_piece sorted[MAXP];
	size_t no, np, i;
	uint64_t next;
	uint32_t k;

	map(l, off, len, &no, &np);
	EXPECT(no >= 1);

	for (i = 0; i < no; i++) {
		const struct rbdl_objext *o = &objs[i];
		const struct rbdl_piece *first = &pieces[o->first_piece];
		uint64_t span = 0;
		int n;

		/* Objects are distinct, listed by first appearance, and own
		 * consecutive runs of the pieces array. */
		if (i > 0) {
			EXPECT(o->objno != objs[i - 1].objno);
			EXPECT(first->buf_off >
			       pieces[objs[i - 1].first_piece].buf_off);
		}
		EXPECT(o->npieces >= 1);
		EXPECT(o->first_piece + (uint64_t)o->npieces <= np);
		if (i + 1 < no)
			EXPECT_EQ(o->first_piece + o->npieces,
				  objs[i + 1].first_piece);
		else
			EXPECT_EQ(o->first_piece + o->npieces, np);
		EXPECT_EQ(o->obj_off, first->obj_off);

		for (k = 0; k < o->npieces; k++) {
			const struct rbdl_piece *p = first + k;
			uint64_t ref_obj, ref_off, b, x;

			EXPECT(p->len > 0);
			EXPECT(p->obj_off + p->len <= l->object_size);
			EXPECT(p->buf_off + p->len <= len);
			EXPECT(p->buf_off >= first->buf_off);
			/* Sorted by obj_off, contiguous span in the object. */
			EXPECT_EQ(p->obj_off, o->obj_off + span);
			span += p->len;
			/* Fully merged: never contiguous in both. */
			if (k > 0)
				EXPECT(p[-1].buf_off + p[-1].len != p->buf_off);
			/* A piece never crosses a stripe unit. */
			EXPECT_EQ((off + p->buf_off) / l->stripe_unit,
				  (off + p->buf_off + p->len - 1) /
					  l->stripe_unit);

			/* (b) first, last and a random byte vs reference. */
			for (b = 0; b < 3; b++) {
				x = b == 0 ? 0 :
				    b == 1 ? p->len - 1 : rnd_below(p->len);
				ref_map(l, off + p->buf_off + x, &ref_obj,
					&ref_off);
				EXPECT_EQ(ref_obj, o->objno);
				EXPECT_EQ(ref_off, p->obj_off + x);
			}
			/* (b) every byte, for short requests. */
			if (len > 8192)
				continue;
			for (x = 0; x < p->len; x++) {
				ref_map(l, off + p->buf_off + x, &ref_obj,
					&ref_off);
				EXPECT_EQ(ref_obj, o->objno);
				EXPECT_EQ(ref_off, p->obj_off + x);
			}
		}
		EXPECT_EQ(span, o->len);

		/* (c) the reverse mapping gives back exactly the pieces. */
		n = rbdl_striper_obj_to_image(l, o->objno, o->obj_off, o->len,
					      r, MAXP);
		EXPECT_EQ(n, o->npieces);
		for (k = 0; k < o->npieces; k++) {
			EXPECT_EQ(r[k].img_off, off + first[k].buf_off);
			EXPECT_EQ(r[k].len, first[k].len);
		}
	}

	/* (a) the pieces tile [0, len): every byte exactly once. */
	memcpy(sorted, pieces, np * sizeof(*sorted));
	qsort(sorted, np, sizeof(*sorted), cmp_buf_off);
	for (i = 0, next = 0; i < np; i++) {
		EXPECT_EQ(sorted[i].buf_off, next);
		next += sorted[i].len;
	}
	EXPECT_EQ(next, len);
}

START_TEST(test_property)
{
	struct rbdl_layout l;
	unsigned int iter;

	for (iter = 0; iter < 3000; iter++) {
		/* order 12..22, su = object_size >> (0..6), sc 1..8 */
		uint8_t order = (uint8_t)(12 + rnd_below(11));
		unsigned int k = (unsigned int)rnd_below(7);
		uint64_t sc = 1 + rnd_below(8);
		uint64_t set_bytes, off, len;

		layout(&l, order, (1ULL << order) >> k, sc);
		set_bytes = l.object_size * l.stripe_count;
		off = rnd_below(5 * set_bytes);
		switch (rnd_below(4)) {
		case 0:		/* tiny */
			len = 1 + rnd_below(16);
			break;
		case 1:		/* around a stripe unit */
			len = 1 + rnd_below(3 * l.stripe_unit);
			break;
		case 2:		/* short, checked byte by byte */
			len = 1 + rnd_below(8192);
			break;
		default:	/* up to 2.5 object sets */
			len = 1 + rnd_below(5 * set_bytes / 2);
			break;
		}
		if (rnd_below(4) == 0)	/* stripe-unit aligned start */
			off -= off % l.stripe_unit;
		check_one(&l, off, len);
	}
}
END_TEST

/* Reverse mapping alone: every range maps forward to where it came from. */
START_TEST(test_reverse_random)
{
	static struct rbdl_img_range r[MAXP];
	struct rbdl_layout l;
	unsigned int iter;

	for (iter = 0; iter < 2000; iter++) {
		uint8_t order = (uint8_t)(12 + rnd_below(11));
		unsigned int k = (unsigned int)rnd_below(7);
		uint64_t sc = 1 + rnd_below(8);
		uint64_t objno = rnd_below(1000), obj_off, len, pos = 0;
		int n, i;

		layout(&l, order, (1ULL << order) >> k, sc);
		obj_off = rnd_below(l.object_size);
		len = 1 + rnd_below(l.object_size - obj_off);
		n = rbdl_striper_obj_to_image(&l, objno, obj_off, len, r,
					      MAXP);
		EXPECT(n > 0);
		for (i = 0; i < n; i++) {
			uint64_t ro, rf;

			ref_map(&l, r[i].img_off, &ro, &rf);
			EXPECT_EQ(ro, objno);
			EXPECT_EQ(rf, obj_off + pos);
			ref_map(&l, r[i].img_off + r[i].len - 1, &ro, &rf);
			EXPECT_EQ(ro, objno);
			EXPECT_EQ(rf, obj_off + pos + r[i].len - 1);
			pos += r[i].len;
		}
		EXPECT_EQ(pos, len);
	}
}
END_TEST

static Suite *striper_suite(void)
{
	Suite *s = suite_create("Striper");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_layout_init);
	tcase_add_test(tc, test_doc_vector);
	tcase_add_test(tc, test_kernel_table);
	tcase_add_test(tc, test_nonstriped);
	tcase_add_test(tc, test_one_byte);
	tcase_add_test(tc, test_unaligned_and_sets);
	tcase_add_test(tc, test_num_objects);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_property);
	tcase_add_test(tc, test_reverse_random);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(striper_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
