/*
 * check_options.c - unit tests for lib/options.c (rbd_image_options_t):
 * the key -> type table of librbd 16.2, round trips, and every errno of
 * set/get/unset as the real librbd returns them.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"
#include "options.h"

/* librbd's IMAGE_OPTIONS_TYPE_MAPPING: ids 7 and 10 are strings, the
 * other ids 0..13 uint64, anything else unknown. */
static int expected_type(int id)
{
	if (id == RBD_IMAGE_OPTION_JOURNAL_POOL ||
	    id == RBD_IMAGE_OPTION_DATA_POOL)
		return RBDL_OPT_STR;
	if (id >= 0 && id <= RBD_IMAGE_OPTION_MIRROR_IMAGE_MODE)
		return RBDL_OPT_U64;
	return RBDL_OPT_NONE;
}

START_TEST(test_types)
{
	struct rbdl_opts *o = rbdl_opts_new();

	ck_assert_ptr_nonnull(o);
	for (int id = -3; id < 40; id++) {
		int t = expected_type(id);
		int su = rbdl_opts_set_u64(o, id, 7);
		int ss = rbdl_opts_set_str(o, id, "x");
		uint64_t u = 0;
		const char *s = NULL;

		ck_assert_int_eq(rbdl_opt_type(id), t);
		ck_assert_int_eq(su, t == RBDL_OPT_U64 ? 0 : -EINVAL);
		ck_assert_int_eq(ss, t == RBDL_OPT_STR ? 0 : -EINVAL);
		ck_assert_int_eq(rbdl_opts_get_u64(o, id, &u),
				 t == RBDL_OPT_U64 ? 0 : -EINVAL);
		ck_assert_int_eq(rbdl_opts_get_str(o, id, &s),
				 t == RBDL_OPT_STR ? 0 : -EINVAL);
		if (t == RBDL_OPT_U64)
			ck_assert_uint_eq(u, 7);
		if (t == RBDL_OPT_STR)
			ck_assert_str_eq(s, "x");
	}
	rbdl_opts_free(o);
}
END_TEST

START_TEST(test_round_trip)
{
	struct rbdl_opts *o = rbdl_opts_new();
	uint64_t u;
	char buf[8];

	ck_assert_int_eq(rbdl_opts_is_empty(o), 1);
	ck_assert_int_eq(rbdl_opts_get_u64(o, RBD_IMAGE_OPTION_ORDER, &u),
			 -ENOENT);
	ck_assert_int_eq(rbdl_opts_copy_str(o, RBD_IMAGE_OPTION_DATA_POOL,
					    buf, sizeof(buf)),
			 -ENOENT);
	ck_assert_int_eq(rbdl_opts_set_u64(o, RBD_IMAGE_OPTION_ORDER, 20), 0);
	ck_assert_int_eq(rbdl_opts_set_u64(o, RBD_IMAGE_OPTION_ORDER,
					   UINT64_MAX), 0);
	ck_assert_int_eq(rbdl_opts_get_u64(o, RBD_IMAGE_OPTION_ORDER, &u), 0);
	ck_assert_uint_eq(u, UINT64_MAX);
	ck_assert_int_eq(rbdl_opts_is_empty(o), 0);

	ck_assert_int_eq(rbdl_opts_set_str(o, RBD_IMAGE_OPTION_DATA_POOL,
					   "first"), 0);
	ck_assert_int_eq(rbdl_opts_set_str(o, RBD_IMAGE_OPTION_DATA_POOL,
					   "abcdef"), 0);
	/* value + NUL must fit: 7 bytes ok, 6 -E2BIG, 0 -E2BIG */
	ck_assert_int_eq(rbdl_opts_copy_str(o, RBD_IMAGE_OPTION_DATA_POOL,
					    buf, 7), 0);
	ck_assert_str_eq(buf, "abcdef");
	ck_assert_int_eq(rbdl_opts_copy_str(o, RBD_IMAGE_OPTION_DATA_POOL,
					    buf, 6), -E2BIG);
	ck_assert_int_eq(rbdl_opts_copy_str(o, RBD_IMAGE_OPTION_DATA_POOL,
					    buf, 0), -E2BIG);
	/* the empty string is a value */
	ck_assert_int_eq(rbdl_opts_set_str(o, RBD_IMAGE_OPTION_JOURNAL_POOL,
					   ""), 0);
	ck_assert_int_eq(rbdl_opts_copy_str(o, RBD_IMAGE_OPTION_JOURNAL_POOL,
					    buf, 1), 0);
	ck_assert_str_eq(buf, "");

	ck_assert_int_eq(rbdl_opts_unset(o, RBD_IMAGE_OPTION_ORDER), 0);
	ck_assert_int_eq(rbdl_opts_unset(o, RBD_IMAGE_OPTION_ORDER), -ENOENT);
	ck_assert_int_eq(rbdl_opts_unset(o, 99), -EINVAL);
	ck_assert_int_eq(rbdl_opts_unset(o, -1), -EINVAL);
	ck_assert_int_eq(rbdl_opts_get_u64(o, RBD_IMAGE_OPTION_ORDER, &u),
			 -ENOENT);
	ck_assert_int_eq(rbdl_opts_unset(o, RBD_IMAGE_OPTION_DATA_POOL), 0);
	ck_assert_int_eq(rbdl_opts_unset(o, RBD_IMAGE_OPTION_JOURNAL_POOL), 0);
	ck_assert_int_eq(rbdl_opts_is_empty(o), 1);

	rbdl_opts_set_u64(o, RBD_IMAGE_OPTION_FEATURES, 1);
	rbdl_opts_set_str(o, RBD_IMAGE_OPTION_DATA_POOL, "p");
	rbdl_opts_clear(o);
	ck_assert_int_eq(rbdl_opts_is_empty(o), 1);
	ck_assert_int_eq(rbdl_opts_get_u64(o, RBD_IMAGE_OPTION_FEATURES, &u),
			 -ENOENT);
	rbdl_opts_free(o);
	rbdl_opts_free(NULL);
}
END_TEST

START_TEST(test_stack_instance)
{
	struct rbdl_opts o;
	uint64_t u = 0;

	rbdl_opts_init(&o);
	ck_assert_int_eq(rbdl_opts_is_empty(&o), 1);
	ck_assert_int_eq(rbdl_opts_set_u64(&o, RBD_IMAGE_OPTION_STRIPE_COUNT,
					   4), 0);
	ck_assert_int_eq(rbdl_opts_get_u64(&o, RBD_IMAGE_OPTION_STRIPE_COUNT,
					   &u), 0);
	ck_assert_uint_eq(u, 4);
	ck_assert_int_eq(rbdl_opts_set_str(&o, RBD_IMAGE_OPTION_DATA_POOL,
					   NULL), -EINVAL);
	rbdl_opts_clear(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("Options");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_types);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_stack_instance);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
