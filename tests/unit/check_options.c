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
#include "image/conf.h"
#include "ops/options.h"

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

/* Setting values as Ceph's option parser reads them (conf.c). */
struct num_case {
	const char *s;
	bool ok;
	uint64_t v;
};

static void check_nums(bool (*parse)(const char *, uint64_t *),
		       const struct num_case *t, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 12345;

		ck_assert_msg(parse(t[i].s, &v) == t[i].ok, "%s \"%s\"", what,
			      t[i].s);
		ck_assert_msg(v == (t[i].ok ? t[i].v : 12345),
			      "%s \"%s\" = %llu", what, t[i].s,
			      (unsigned long long)v);
	}
}

START_TEST(test_parse_settings)
{
	/* type UINT: SI suffixes, powers of 1000 */
	static const struct num_case uints[] = {
		{ "65536", true, 65536 }, { "64K", true, 64000 },
		{ "4M", true, 4000000 }, { "2E", true, 2000000000000000000ull },
		{ "010", true, 10 },	/* decimal, not octal */
		{ "0", true, 0 }, { "+5", true, 5 },
		{ "", false, 0 }, { "-1", false, 0 }, { "64k", false, 0 },
		{ "64KB", false, 0 }, { "64Ki", false, 0 }, { "K", false, 0 },
		{ "0x10", false, 0 }, { "64B", false, 0 }, { "1 ", false, 0 },
		{ "9223372036854775807", true, INT64_MAX },
		{ "9223372036854775808", false, 0 },
		{ "10E", false, 0 },	/* over INT64_MAX */
	};
	/* type SIZE: IEC prefixes, powers of 1024 */
	static const struct num_case sizes[] = {
		{ "65536", true, 65536 }, { "64K", true, 65536 },
		{ "64Ki", true, 65536 }, { "64KB", true, 65536 },
		{ "4M", true, 4u << 20 }, { "1G", true, 1ull << 30 },
		{ "2T", true, 2ull << 40 }, { "3P", true, 3ull << 50 },
		{ "7E", true, 7ull << 60 }, { "512B", true, 512 },
		{ "0", true, 0 }, { "010", true, 10 },
		{ "", false, 0 }, { "-1", false, 0 }, { "64k", false, 0 },
		{ "64KiB", false, 0 }, { "64Bi", false, 0 }, { "64X", false, 0 },
		{ "K", false, 0 }, { "0x10", false, 0 }, { "8E", false, 0 },
		{ "9223372036854775807", true, INT64_MAX },
		{ "18446744073709551615", false, 0 },
	};
	static const struct {
		const char *s;
		bool ok, v;
	} bools[] = {
		{ "true", true, true }, { "TRUE", true, true },
		{ "1", true, true }, { "7", true, true }, { "-1", true, true },
		{ "false", true, false }, { "False", true, false },
		{ "0", true, false }, { "", false, false }, { "yes", false, false },
		{ "no", false, false }, { "maybe", false, false },
		{ "1x", false, false }, { "99999999999", false, false },
	};

	check_nums(rbdl_parse_uint, uints, sizeof(uints) / sizeof(uints[0]),
		   "uint");
	check_nums(rbdl_parse_size, sizes, sizeof(sizes) / sizeof(sizes[0]),
		   "size");
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		bool v = false;

		ck_assert_msg(rbdl_parse_bool(bools[i].s, &v) == bools[i].ok,
			      "bool \"%s\"", bools[i].s);
		if (bools[i].ok)
			ck_assert(v == bools[i].v);
	}
}
END_TEST

/* Feature names as librbd 16.2.15 formats and parses them (values read off
 * the real library). */
START_TEST(test_feature_strings)
{
	static const struct {
		const char *s;
		int r;
		uint64_t f;
	} parse[] = {
		{ "", 0, 61 },
		{ "  ", 0, 61 },
		{ "layering", 0, 1 },
		{ "layering, exclusive-lock", 0, 5 },
		{ " layering", 0, 1 },
		{ "\tlayering\n", 0, 1 },
		{ "layering,layering", 0, 2 },	/* summed, as librbd */
		{ "bogus", -EINVAL, 0 },
		{ "layering,,striping", -EINVAL, 3 },
		{ "layering,", -EINVAL, 1 },
		{ "LAYERING", -EINVAL, 0 },
		{ "layering exclusive-lock", -EINVAL, 0 },
		{ "dirty-cache", 0, 2048 },
		{ "1", 0, 1 },
		{ "+1", 0, 1 },
		{ "05", 0, 5 },
		{ "1 ", 0, 1 },
		{ "0", 0, 0 },
		{ "0x5", -EINVAL, 0 },
		{ "256", -EINVAL, 0 },		/* internal bits dropped */
		{ "4095", -EINVAL, 255 },
		{ "-1", -EINVAL, 255 },
	};
	char buf[256];
	size_t sz;

	for (size_t i = 0; i < sizeof(parse) / sizeof(parse[0]); i++) {
		uint64_t f = 77;

		ck_assert_msg(rbdl_features_parse(parse[i].s, &f) == parse[i].r,
			      "parse \"%s\" result", parse[i].s);
		ck_assert_msg(f == parse[i].f, "parse \"%s\": %llu", parse[i].s,
			      (unsigned long long)f);
	}
	sz = sizeof(buf);
	ck_assert_int_eq(rbdl_features_format(61, buf, &sz), 0);
	ck_assert_str_eq(buf, "deep-flatten,exclusive-lock,fast-diff,layering,"
			      "object-map");
	ck_assert_uint_eq(sz, 58);
	sz = sizeof(buf);
	ck_assert_int_eq(rbdl_features_format(0, buf, &sz), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_uint_eq(sz, 1);
	sz = 3;
	ck_assert_int_eq(rbdl_features_format(61, buf, &sz), -ERANGE);
	ck_assert_uint_eq(sz, 58);
	sz = 0;
	ck_assert_int_eq(rbdl_features_format(0, buf, &sz), -ERANGE);
	ck_assert_uint_eq(sz, 1);
	sz = sizeof(buf);
	ck_assert_int_eq(rbdl_features_format(1ULL << 40, buf, &sz), -EINVAL);
	ck_assert_uint_eq(sz, sizeof(buf));
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
	tcase_add_test(tc, test_parse_settings);
	tcase_add_test(tc, test_feature_strings);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
