/*
 * check_plan.c - unit tests for lib/io/plan.c, the pure request-planning
 * rules, with librbd 16.2's rules as vectors:
 *   - discard pruning: ImageDiscardRequest::prune_object_extents (round the
 *     start up and the end down to the granularity, which is at most the
 *     object size; a whole-object granularity keeps tail truncations);
 *   - the thick write-zeroes split: ImageWriteZeroesRequest splits a
 *     request longer than 512 bytes into head / 512-aligned middle / tail
 *     and clips each, so a piece starting at or past the end fails;
 *   - buffer segments per striper piece, for flat buffers and iovecs;
 *   - write-same pattern phases and the all-zero test (librbd turns an
 *     all-zero write-same into a discard of the range).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/plan.h"

#define KiB (1024ULL)
#define MiB (1024ULL * 1024)

static struct rbdl_objext ext(uint64_t objno, uint64_t off, uint64_t len)
{
	struct rbdl_objext e = { objno, off, len, 0, 1 };

	return e;
}

START_TEST(test_prune_granularity)
{
	struct rbdl_objext v[] = {
		ext(0, 1000, 200000),		/* -> [64K, 192K) */
		ext(1, 0, 1000),		/* less than a unit: dropped */
		ext(2, 4 * MiB - 1000, 1000),	/* tail, g < object: dropped */
		ext(3, 64 * KiB, 128 * KiB),	/* aligned: unchanged */
		ext(4, 0, 4 * MiB),		/* whole object: unchanged */
	};
	size_t n = rbdl_plan_prune_discard(4 * MiB, 64 * KiB, v, 5);

	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(v[0].objno, 0);
	ck_assert_uint_eq(v[0].obj_off, 64 * KiB);
	ck_assert_uint_eq(v[0].len, 128 * KiB);
	ck_assert_uint_eq(v[1].objno, 3);
	ck_assert_uint_eq(v[1].obj_off, 64 * KiB);
	ck_assert_uint_eq(v[1].len, 128 * KiB);
	ck_assert_uint_eq(v[2].objno, 4);
	ck_assert_uint_eq(v[2].obj_off, 0);
	ck_assert_uint_eq(v[2].len, 4 * MiB);
}
END_TEST

START_TEST(test_prune_whole_object)
{
	/* Granularity of (more than) a whole object: an extent reaching the
	 * object's end is a tail truncation and is kept as it is; others
	 * round to nothing. */
	struct rbdl_objext v[] = {
		ext(0, 1 * MiB, 3 * MiB),	/* tail: kept */
		ext(1, 0, 1 * MiB),		/* head: dropped */
		ext(2, 1, 4 * MiB - 1),		/* tail: kept */
	};
	size_t n = rbdl_plan_prune_discard(4 * MiB, 32 * MiB, v, 3);

	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(v[0].objno, 0);
	ck_assert_uint_eq(v[0].obj_off, 1 * MiB);
	ck_assert_uint_eq(v[0].len, 3 * MiB);
	ck_assert_uint_eq(v[1].objno, 2);
	ck_assert_uint_eq(v[1].obj_off, 1);
	ck_assert_uint_eq(v[1].len, 4 * MiB - 1);
}
END_TEST

START_TEST(test_thick_split)
{
	/* A single write (<= 512 bytes) is never split. */
	ck_assert_int_eq(rbdl_plan_thick_split_error(4000, 96, 4096), 0);
	ck_assert_int_eq(rbdl_plan_thick_split_error(4000, 512, 4096), 0);
	/* Everything inside the image. */
	ck_assert_int_eq(rbdl_plan_thick_split_error(0, 4096, 4096), 0);
	ck_assert_int_eq(rbdl_plan_thick_split_error(100, 3000, 4096), 0);
	/* The tail starts past the end. */
	ck_assert_int_eq(rbdl_plan_thick_split_error(100, 8000, 4096),
			 -EINVAL);
	/* The middle starts at the end. */
	ck_assert_int_eq(rbdl_plan_thick_split_error(3900, 1000, 4096),
			 -EINVAL);
	/* Aligned start, tail beyond: the middle [0, 4096) is fine, the
	 * tail [4096, 4100) starts at the end. */
	ck_assert_int_eq(rbdl_plan_thick_split_error(0, 4100, 4096), -EINVAL);
	/* Offset overflow clamps the end, never wraps. */
	ck_assert_int_eq(rbdl_plan_thick_split_error(1, UINT64_MAX, 4096),
			 -EINVAL);
}
END_TEST

START_TEST(test_piece_segs_flat)
{
	char buf[64];
	struct rbdl_bufdesc b = { buf, NULL, 0 };
	struct rbdl_piece p = { 100, 20, 30 };
	struct rbdl_seg s;

	ck_assert_uint_eq(rbdl_plan_piece_segs(&b, &p, NULL), 1);
	ck_assert_uint_eq(rbdl_plan_piece_segs(&b, &p, &s), 1);
	ck_assert_ptr_eq(s.ptr, buf + 30);
	ck_assert_uint_eq(s.obj_off, 100);
	ck_assert_uint_eq(s.len, 20);
}
END_TEST

START_TEST(test_piece_segs_iovec)
{
	char a[10], b[1], c[30];
	struct iovec iov[] = { { a, 10 }, { b, 0 }, { c, 30 } };
	struct rbdl_bufdesc d = { NULL, iov, 3 };
	/* Request bytes [5, 25): 5 from a, nothing from the empty iovec,
	 * 15 from c. */
	struct rbdl_piece p = { 1000, 20, 5 };
	struct rbdl_seg s[4];

	ck_assert_uint_eq(rbdl_plan_piece_segs(&d, &p, NULL), 2);
	ck_assert_uint_eq(rbdl_plan_piece_segs(&d, &p, s), 2);
	ck_assert_ptr_eq(s[0].ptr, a + 5);
	ck_assert_uint_eq(s[0].obj_off, 1000);
	ck_assert_uint_eq(s[0].len, 5);
	ck_assert_ptr_eq(s[1].ptr, c);
	ck_assert_uint_eq(s[1].obj_off, 1005);
	ck_assert_uint_eq(s[1].len, 15);
	/* A piece entirely inside the last iovec. */
	struct rbdl_piece q = { 0, 10, 20 };

	ck_assert_uint_eq(rbdl_plan_piece_segs(&d, &q, s), 1);
	ck_assert_ptr_eq(s[0].ptr, c + 10);
	ck_assert_uint_eq(s[0].len, 10);
}
END_TEST

START_TEST(test_pattern_and_zero)
{
	char out[10];
	const char pat[] = "abcd";

	/* Request byte 6 of pattern "abcd" is 'c'. */
	rbdl_plan_fill_pattern(out, 10, 6, pat, 4);
	ck_assert_int_eq(memcmp(out, "cdabcdabcd", 10), 0);
	rbdl_plan_fill_pattern(out, 3, 0, pat, 4);
	ck_assert_int_eq(memcmp(out, "abc", 3), 0);

	char z[512] = { 0 };

	ck_assert(rbdl_plan_all_zero(z, sizeof(z)));
	ck_assert(rbdl_plan_all_zero(z, 0));
	z[511] = 1;
	ck_assert(!rbdl_plan_all_zero(z, sizeof(z)));
	ck_assert(rbdl_plan_all_zero(z, 511));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("Plan");
	TCase *tc = tcase_create("rules");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_prune_granularity);
	tcase_add_test(tc, test_prune_whole_object);
	tcase_add_test(tc, test_thick_split);
	tcase_add_test(tc, test_piece_segs_flat);
	tcase_add_test(tc, test_piece_segs_iovec);
	tcase_add_test(tc, test_pattern_and_zero);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
