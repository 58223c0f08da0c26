/*
 * createcases.c - image options, create, remove, list and namespace
 * cases, built twice from this one source: against librbdlite
 * (createcases-lite) and against the real librbd (createcases-librbd).
 * tests/cluster/test-create.sh runs both and compares their output.
 *
 *   createcases table POOL DATAPOOL NS
 *       the differential table: option round trips and errors, every
 *       rbd_create variant and its validation errors (with the resulting
 *       header read back through rbd_open), rbd_list/rbd_list2 and their
 *       -ERANGE behaviour, rbd_remove errors, rbd_namespace_exists.  All
 *       images are made in namespace NS (which must exist and be empty)
 *       and removed again at the end, so the output is deterministic.
 *   createcases make POOL NS NAME VARIANT [DATAPOOL]
 *       create one image with a variant (plain, features, nofeatures,
 *       striping, count1, order, datapool, stripedpool); prints
 *       "ret=<r> order=<o>"
 *   createcases rm POOL NS NAME        rbd_remove; prints "ret=<r>"
 *   createcases trash-removing POOL NS NAME ID
 *                                      move the image to the trash as an
 *                                      interrupted librbd removal leaves
 *                                      it (plain librados; no rbd_* call)
 *   createcases ls POOL NS             rbd_list then rbd_list2, one name
 *                                      per line ("list <name>", "list2
 *                                      <name> <id-or-empty-flag>")
 *   NS "-" is the default namespace.
 *
 * Output lines are "<case>: ret=<value> [extra]"; nothing depends on ids,
 * addresses or timing.  Exit status 0 when the table ran to its end, 2 on
 * set-up errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

static rados_t cluster;
static const char *data_pool;

static void out(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void out(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static rados_ioctx_t ioctx(const char *pool, const char *ns)
{
	rados_ioctx_t io;

	if (rados_ioctx_create(cluster, pool, &io) < 0) {
		fprintf(stderr, "cannot open pool %s\n", pool);
		exit(2);
	}
	if (ns && strcmp(ns, "-"))
		rados_ioctx_set_namespace(io, ns);
	return io;
}

/* Describe an image as read back through rbd_open: features, order,
 * layout, data pool (as same/other), size. */
static void describe(rados_ioctx_t io, const char *name, char *buf,
		     size_t len)
{
	rbd_image_t img;
	uint64_t f = 0, su = 0, sc = 0, size = 0;
	rbd_image_info_t info;
	int r = rbd_open(io, name, &img, NULL);

	if (r < 0) {
		snprintf(buf, len, "open=%d", r);
		return;
	}
	rbd_get_features(img, &f);
	rbd_get_stripe_unit(img, &su);
	rbd_get_stripe_count(img, &sc);
	rbd_get_size(img, &size);
	memset(&info, 0, sizeof(info));
	rbd_stat(img, &info, sizeof(info));
	int64_t dp = rbd_get_data_pool_id(img);

	snprintf(buf, len,
		 "features=0x%" PRIx64 " size=%" PRIu64 " order=%d su=%" PRIu64
		 " sc=%" PRIu64 " objs=%" PRIu64 " datapool=%s prefix_dp=%d",
		 f, size, info.order, su, sc, info.num_objs,
		 dp == rados_ioctx_get_id(io) ? "same" : "other",
		 /* "rbd_data.<pool>.<id>" has two dots */
		 strchr(info.block_name_prefix + 9, '.') != NULL);
	rbd_close(img);
}

/* Create with a variant; returns rbd_create*'s value. */
static int make(rados_ioctx_t io, const char *name, const char *variant,
		int *order)
{
	uint64_t deflt = RBD_FEATURE_LAYERING | RBD_FEATURE_EXCLUSIVE_LOCK |
			 RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_FAST_DIFF |
			 RBD_FEATURE_DEEP_FLATTEN;

	if (!strcmp(variant, "plain"))
		return rbd_create(io, name, 1ULL << 30, order);
	if (!strcmp(variant, "features"))
		return rbd_create2(io, name, 1ULL << 30,
				   RBD_FEATURE_LAYERING |
					   RBD_FEATURE_EXCLUSIVE_LOCK,
				   order);
	if (!strcmp(variant, "nofeatures"))
		return rbd_create2(io, name, 1ULL << 30, 0, order);
	if (!strcmp(variant, "striping"))
		return rbd_create3(io, name, 1ULL << 30, deflt, order, 65536,
				   8);
	if (!strcmp(variant, "count1"))
		return rbd_create3(io, name, 1ULL << 30, RBD_FEATURE_LAYERING,
				   order, 1 << 20, 1);
	if (!strcmp(variant, "order"))
		return rbd_create2(io, name, 100ULL << 20, deflt, order);
	if (!strcmp(variant, "datapool") || !strcmp(variant, "stripedpool")) {
		rbd_image_options_t o;
		int r;

		rbd_image_options_create(&o);
		rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL,
					     data_pool);
		rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER,
					     (uint64_t)*order);
		if (!strcmp(variant, "stripedpool")) {
			rbd_image_options_set_uint64(
				o, RBD_IMAGE_OPTION_STRIPE_UNIT, 1 << 20);
			rbd_image_options_set_uint64(
				o, RBD_IMAGE_OPTION_STRIPE_COUNT, 3);
			rbd_image_options_set_uint64(
				o, RBD_IMAGE_OPTION_FEATURES,
				RBD_FEATURE_LAYERING);
		}
		r = rbd_create4(io, name, 1ULL << 30, o);
		uint64_t v = 0;

		rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &v);
		*order = (int)v;
		rbd_image_options_destroy(o);
		return r;
	}
	fprintf(stderr, "unknown variant %s\n", variant);
	exit(2);
}

/* ---- the table ------------------------------------------------------------- */

static void options_cases(void)
{
	rbd_image_options_t o;
	uint64_t u;
	char s[16];

	rbd_image_options_create(&o);
	out("opt-empty-new", "ret=%d", rbd_image_options_is_empty(o));
	for (int id = -1; id <= 15; id++) {
		char n[32];
		int su, ss, gu, gs;

		snprintf(n, sizeof(n), "opt-types-%d", id);
		su = rbd_image_options_set_uint64(o, id, 1000 + id);
		ss = rbd_image_options_set_string(o, id, "val");
		u = 0;
		gu = rbd_image_options_get_uint64(o, id, &u);
		memset(s, 0, sizeof(s));
		gs = rbd_image_options_get_string(o, id, s, sizeof(s));
		out(n, "set_u64=%d set_str=%d get_u64=%d(%" PRIu64
		       ") get_str=%d(%s)",
		    su, ss, gu, u, gs, s);
	}
	out("opt-empty-full", "ret=%d", rbd_image_options_is_empty(o));
	rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL, "abcdef");
	out("opt-getstr-exact", "ret=%d",
	    rbd_image_options_get_string(o, RBD_IMAGE_OPTION_DATA_POOL, s, 7));
	out("opt-getstr-short", "ret=%d",
	    rbd_image_options_get_string(o, RBD_IMAGE_OPTION_DATA_POOL, s, 6));
	out("opt-getstr-zero", "ret=%d",
	    rbd_image_options_get_string(o, RBD_IMAGE_OPTION_DATA_POOL, s, 0));
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER, 5);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER, 7);
	rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &u);
	out("opt-overwrite", "ret=%" PRIu64, u);
	out("opt-unset", "ret=%d",
	    rbd_image_options_unset(o, RBD_IMAGE_OPTION_ORDER));
	out("opt-unset-again", "ret=%d",
	    rbd_image_options_unset(o, RBD_IMAGE_OPTION_ORDER));
	out("opt-unset-unknown", "ret=%d", rbd_image_options_unset(o, 99));
	out("opt-get-unset", "ret=%d",
	    rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &u));
	rbd_image_options_clear(o);
	out("opt-empty-cleared", "ret=%d", rbd_image_options_is_empty(o));
	out("opt-get-cleared", "ret=%d",
	    rbd_image_options_get_string(o, RBD_IMAGE_OPTION_DATA_POOL, s,
					 sizeof(s)));
	rbd_image_options_destroy(o);
}

static void create_case(rados_ioctx_t io, const char *cname, int r, int order,
			const char *image)
{
	char d[256] = "";

	if (r == 0)
		describe(io, image, d, sizeof(d));
	out(cname, "ret=%d order=%d %s", r, order, d);
}

#define F_DEFAULT                                                        \
	(RBD_FEATURE_LAYERING | RBD_FEATURE_EXCLUSIVE_LOCK |              \
	 RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_FAST_DIFF |                  \
	 RBD_FEATURE_DEEP_FLATTEN)

static void create_cases(rados_ioctx_t io, const char *pool)
{
	int order, r;

	/* every variant */
	static const char *variants[] = { "plain", "features", "nofeatures",
					  "striping", "datapool",
					  "stripedpool" };
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		char n[64], img[64];

		snprintf(img, sizeof(img), "v-%s", variants[i]);
		snprintf(n, sizeof(n), "create-%s", variants[i]);
		order = 0;
		r = make(io, img, variants[i], &order);
		create_case(io, n, r, order, img);
	}
	order = 20;
	r = make(io, "v-order", "order", &order);
	create_case(io, "create-order20", r, order, "v-order");

	/* the name is taken, in rbd_create and rbd_create4 */
	order = 0;
	out("create-exists", "ret=%d order=%d",
	    rbd_create(io, "v-plain", 1 << 20, &order), order);
	order = 13;
	out("create2-exists", "ret=%d order=%d",
	    rbd_create2(io, "v-plain", 1 << 20, 1, &order), order);

	/* orders */
	static const int orders[] = { 11, 12, 25, 26, -1, 64, 256 + 22 };
	for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++) {
		char n[64], img[64];

		snprintf(img, sizeof(img), "o-%zu", i);
		snprintf(n, sizeof(n), "create2-order-%d", orders[i]);
		order = orders[i];
		r = rbd_create2(io, img, 1 << 24, RBD_FEATURE_LAYERING,
				&order);
		create_case(io, n, r, order, img);
	}

	/* features */
	static const struct {
		const char *n;
		uint64_t f;
	} feats[] = {
		{ "unknown-bit", 1ULL << 20 },
		{ "objmap-no-exlock", RBD_FEATURE_OBJECT_MAP },
		{ "fastdiff-no-objmap", RBD_FEATURE_FAST_DIFF |
						RBD_FEATURE_EXCLUSIVE_LOCK },
		{ "objmap-no-fastdiff", RBD_FEATURE_OBJECT_MAP |
						RBD_FEATURE_EXCLUSIVE_LOCK },
		{ "journal-no-exlock", RBD_FEATURE_JOURNALING },
		/* made by the system's librbd when librbdlite is asked */
		{ "journaling", RBD_FEATURE_JOURNALING |
					RBD_FEATURE_EXCLUSIVE_LOCK },
		{ "operations", RBD_FEATURE_OPERATIONS |
					RBD_FEATURE_LAYERING },
		{ "migrating", RBD_FEATURE_MIGRATING },
		{ "non-primary", RBD_FEATURE_NON_PRIMARY },
		{ "striping-bit", RBD_FEATURE_STRIPINGV2 },
		{ "datapool-bit", RBD_FEATURE_DATA_POOL },
		{ "deep-flatten", RBD_FEATURE_DEEP_FLATTEN },
	};
	for (size_t i = 0; i < sizeof(feats) / sizeof(feats[0]); i++) {
		char n[64], img[64];

		snprintf(img, sizeof(img), "f-%zu", i);
		snprintf(n, sizeof(n), "create2-features-%s", feats[i].n);
		order = 0;
		r = rbd_create2(io, img, 1 << 24, feats[i].f, &order);
		create_case(io, n, r, order, img);
	}

	/* striping */
	static const struct {
		const char *n;
		int order;
		uint64_t su, sc;
	} stripes[] = {
		{ "unit-only", 0, 65536, 0 },
		{ "count-only", 0, 0, 4 },
		{ "not-factor", 0, 3 << 16, 2 },
		{ "too-small", 0, 256, 16 },
		{ "min-unit", 0, 512, 2 },
		{ "unit-gt-object", 16, 1 << 17, 2 },
		{ "default-explicit", 0, 1 << 22, 1 },
		{ "default-order16", 16, 1 << 16, 1 },
		{ "count1-small-unit", 0, 1 << 20, 1 },
		{ "unit-equal-count4", 0, 1 << 22, 4 },
	};
	for (size_t i = 0; i < sizeof(stripes) / sizeof(stripes[0]); i++) {
		char n[64], img[64];

		snprintf(img, sizeof(img), "s-%zu", i);
		snprintf(n, sizeof(n), "create3-%s", stripes[i].n);
		order = stripes[i].order;
		r = rbd_create3(io, img, 1 << 24, RBD_FEATURE_LAYERING, &order,
				stripes[i].su, stripes[i].sc);
		create_case(io, n, r, order, img);
	}

	/* object map size limit: 256000000 objects */
	order = 12;
	r = rbd_create2(io, "big-objmap", (256000000ULL + 1) << 12, F_DEFAULT,
			&order);
	create_case(io, "create2-objmap-too-big", r, order, "big-objmap");

	/* rbd_create4 options */
	rbd_image_options_t o;
	uint64_t v;

	rbd_image_options_create(&o);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FLATTEN, 1);
	out("create4-flatten", "ret=%d",
	    rbd_create4(io, "c4-flatten", 1 << 24, o));
	rbd_image_options_clear(o);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_CLONE_FORMAT, 2);
	out("create4-clone-format", "ret=%d",
	    rbd_create4(io, "c4-cf", 1 << 24, o));
	rbd_image_options_clear(o);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FORMAT, 1);
	r = rbd_create4(io, "c4-format1", 1 << 24, o);
	v = 0;
	rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &v);
	out("create4-format1", "ret=%d order=%" PRIu64, r, v);
	rbd_image_options_clear(o);
	rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL,
				     "no-such-pool-xyz");
	r = rbd_create4(io, "c4-nopool", 1 << 24, o);
	v = 0;
	rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &v);
	out("create4-missing-datapool", "ret=%d order=%" PRIu64, r, v);
	rbd_image_options_clear(o);
	rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL, pool);
	r = rbd_create4(io, "c4-samepool", 1 << 24, o);
	v = 0;
	rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &v);
	create_case(io, "create4-datapool-is-pool", r, (int)v, "c4-samepool");
	rbd_image_options_clear(o);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FEATURES_SET,
				     RBD_FEATURE_DEEP_FLATTEN |
					     RBD_FEATURE_EXCLUSIVE_LOCK);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FEATURES_CLEAR,
				     RBD_FEATURE_OBJECT_MAP |
					     RBD_FEATURE_DEEP_FLATTEN);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER, 0);
	r = rbd_create4(io, "c4-setclear", 1 << 24, o);
	v = 0;
	rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &v);
	create_case(io, "create4-features-set-clear", r, (int)v,
		    "c4-setclear");
	rbd_image_options_clear(o);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FEATURES,
				     RBD_FEATURE_LAYERING);
	rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_STRIPE_UNIT, 8192);
	r = rbd_create4(io, "c4-unit-only", 1 << 24, o);
	v = 0;
	rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &v);
	create_case(io, "create4-stripe-unit-only", r, (int)v, "c4-unit-only");
	rbd_image_options_destroy(o);

	/* names: empty, odd characters, long */
	static char longname[400];
	memset(longname, 'n', sizeof(longname) - 1);
	const char *names[] = { "", "a/b", "a@b", "sp ace", longname };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char n[64];

		snprintf(n, sizeof(n), "create2-name-%zu", i);
		order = 0;
		r = rbd_create2(io, names[i], 1 << 22, RBD_FEATURE_LAYERING,
				&order);
		create_case(io, n, r, order, names[i]);
	}

	/* size 0 is fine */
	order = 0;
	r = rbd_create2(io, "zero-size", 0, F_DEFAULT, &order);
	create_case(io, "create2-size0", r, order, "zero-size");

	/* a namespace that does not exist */
	rados_ioctx_t nio = ioctx(pool, "no-such-namespace-xyz");

	order = 0;
	out("create-missing-namespace", "ret=%d order=%d",
	    rbd_create2(nio, "x", 1 << 24, 1, &order), order);
	rados_ioctx_destroy(nio);
}

static void list_cases(rados_ioctx_t io, const char *tag)
{
	char n[64], big[65536];
	size_t size = 0, need;
	int r;

	snprintf(n, sizeof(n), "%s-list-size0", tag);
	r = rbd_list(io, NULL, &size);
	need = size;
	out(n, "ret=%d size=%zu", r, size);
	if (need > 0) {
		snprintf(n, sizeof(n), "%s-list-short", tag);
		size = need - 1;
		r = rbd_list(io, big, &size);
		out(n, "ret=%d size=%zu", r, size);
	}
	snprintf(n, sizeof(n), "%s-list-null-names", tag);
	size = sizeof(big);
	r = rbd_list(io, NULL, &size);
	out(n, "ret=%d size=%zu", r, size);
	snprintf(n, sizeof(n), "%s-list-exact", tag);
	size = need;
	memset(big, 'x', sizeof(big));
	r = rbd_list(io, big, &size);
	out(n, "ret=%d size=%zu byte_after=%d", r, size,
	    r >= 0 ? big[r] : -1);
	for (int off = 0; r > 0 && off < r; off += (int)strlen(big + off) + 1) {
		snprintf(n, sizeof(n), "%s-list-name-%d", tag, off);
		out(n, "ret=%s", big + off);
	}

	rbd_image_spec_t specs[64];
	size_t max = 0;

	snprintf(n, sizeof(n), "%s-list2-max0", tag);
	r = rbd_list2(io, specs, &max);
	out(n, "ret=%d max=%zu", r, max);
	size_t cnt = max;

	if (cnt > 0) {
		snprintf(n, sizeof(n), "%s-list2-short", tag);
		max = cnt - 1;
		r = rbd_list2(io, specs, &max);
		out(n, "ret=%d max=%zu", r, max);
	}
	snprintf(n, sizeof(n), "%s-list2-big", tag);
	max = 64;
	r = rbd_list2(io, specs, &max);
	out(n, "ret=%d max=%zu", r, max);
	for (size_t i = 0; r == 0 && i < max; i++) {
		snprintf(n, sizeof(n), "%s-list2-entry-%zu", tag, i);
		out(n, "ret=%s has_id=%d", specs[i].name,
		    specs[i].id[0] != '\0');
	}
	if (r == 0)
		rbd_image_spec_list_cleanup(specs, max);
}

static void remove_cases(rados_ioctx_t io)
{
	out("remove-missing", "ret=%d", rbd_remove(io, "no-such-image"));
	out("remove-plain", "ret=%d", rbd_remove(io, "v-plain"));
	out("remove-again", "ret=%d", rbd_remove(io, "v-plain"));
	char d[256];

	describe(io, "v-plain", d, sizeof(d));
	out("remove-open-after", "ret=%s", d);
}

/* rbd_metadata_get/set on a new image: values, -ENOENT, -ERANGE and the
 * size needed, "conf_" overrides (valid, unknown option, bad value), a
 * key of 2000 bytes, -EROFS on a read-only open. */
static void metadata_cases(rados_ioctx_t io)
{
	static const char *sets[][2] = {
		{ "k1", "v1" },
		{ "k1", "value-two" },
		{ "conf_rbd_cache", "false" },
		{ "conf_rbd_no_such_option", "1" },
		{ "conf_rbd_cache", "maybe" },
		{ "conf_rbd_mirror_journal_max_fetch_bytes", "1024" },
		{ "conf_osd_max_object_size", "1024" },
		{ "", "empty-key" },
	};
	static const char *gets[] = { "k1", "conf_rbd_cache", "missing", "" };
	rbd_image_t img;
	char v[64];
	size_t len;
	int order = 22, r;

	r = rbd_create(io, "v-meta", 4 << 20, &order);
	out("meta-create", "ret=%d", r);
	if (r < 0 || rbd_open(io, "v-meta", &img, NULL) < 0)
		return;
	len = sizeof(v);
	out("meta-get-unset", "ret=%d", rbd_metadata_get(img, "k1", v, &len));
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		char n[96];

		snprintf(n, sizeof(n), "meta-set-%s=%s", sets[i][0], sets[i][1]);
		out(n, "ret=%d", rbd_metadata_set(img, sets[i][0], sets[i][1]));
	}
	for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++) {
		char n[96];

		len = sizeof(v);
		memset(v, 0, sizeof(v));
		r = rbd_metadata_get(img, gets[i], v, &len);
		snprintf(n, sizeof(n), "meta-get-%s", gets[i]);
		out(n, "ret=%d value=%s len=%zu", r, r == 0 ? v : "-", len);
		len = 3;
		r = rbd_metadata_get(img, gets[i], v, &len);
		snprintf(n, sizeof(n), "meta-get-short-%s", gets[i]);
		out(n, "ret=%d len=%zu", r, len);
	}
	/* A key of 2000 bytes: set, read back, removed. */
	{
		char key[2001];

		memset(key, 'k', sizeof(key) - 1);
		key[sizeof(key) - 1] = '\0';
		out("meta-set-long-key", "ret=%d",
		    rbd_metadata_set(img, key, "long"));
		len = sizeof(v);
		memset(v, 0, sizeof(v));
		r = rbd_metadata_get(img, key, v, &len);
		out("meta-get-long-key", "ret=%d value=%s len=%zu", r,
		    r == 0 ? v : "-", len);
		out("meta-remove-long-key", "ret=%d",
		    rbd_metadata_remove(img, key));
	}
	rbd_close(img);
	if (rbd_open_read_only(io, "v-meta", &img, NULL) == 0) {
		out("meta-set-read-only", "ret=%d",
		    rbd_metadata_set(img, "k2", "v2"));
		len = sizeof(v);
		r = rbd_metadata_get(img, "k1", v, &len);
		out("meta-get-read-only", "ret=%d value=%s", r,
		    r == 0 ? v : "-");
		rbd_close(img);
	}
}

/* Remove everything in the namespace through the library under test. */
static void remove_all(rados_ioctx_t io)
{
	rbd_image_spec_t specs[128];
	size_t max = 128;
	int r = rbd_list2(io, specs, &max);

	out("cleanup-list", "ret=%d count=%zu", r, r == 0 ? max : 0);
	for (size_t i = 0; r == 0 && i < max; i++) {
		char n[96];

		snprintf(n, sizeof(n), "cleanup-remove-%s", specs[i].name);
		out(n, "ret=%d", rbd_remove(io, specs[i].name));
	}
	if (r == 0)
		rbd_image_spec_list_cleanup(specs, max);
}

static void namespace_cases(rados_ioctx_t io, const char *ns)
{
	bool e = true;
	int r;

	r = rbd_namespace_exists(io, "", &e);
	out("ns-empty", "ret=%d exists=%d", r, e);
	e = false;
	r = rbd_namespace_exists(io, ns, &e);
	out("ns-exists", "ret=%d exists=%d", r, e);
	e = true;
	r = rbd_namespace_exists(io, "no-such-namespace-xyz", &e);
	out("ns-missing", "ret=%d exists=%d", r, e);
}

/* ---- an interrupted removal, as librbd leaves it ---------------------------- */

static size_t put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return 4;
}

static size_t putstr(uint8_t *p, const char *s)
{
	size_t n = strlen(s);

	put32(p, (uint32_t)n);
	memcpy(p + 4, s, n);
	return 4 + n;
}

static int exec_write(rados_ioctx_t io, const char *oid, const char *method,
		      const uint8_t *in, size_t len)
{
	rados_write_op_t op = rados_create_write_op();
	int pr = 0, r;

	rados_write_op_exec(op, "rbd", method, (const char *)in, len, &pr);
	r = rados_write_op_operate(op, io, oid, NULL, 0);
	rados_release_write_op(op);
	return r < 0 ? r : pr;
}

/*
 * Move image NAME (id ID) from the directory to the trash with source
 * REMOVING, as librbd 16.2's rbd_remove does first (Trash::move): an
 * image whose removal was interrupted right after that step.
 */
static int trash_removing(rados_ioctx_t io, const char *name, const char *id)
{
	uint8_t in[1024];
	size_t n = 0, start;
	int r;

	n += putstr(in + n, name);
	n += putstr(in + n, id);
	r = exec_write(io, "rbd_directory", "dir_remove_image", in, n);
	if (r < 0)
		return r;
	n = putstr(in, id);
	in[n++] = 2;	/* TrashImageSpec v2, compat 1 */
	in[n++] = 1;
	start = n;
	n += 4;
	in[n++] = 3;	/* TRASH_IMAGE_SOURCE_REMOVING */
	n += putstr(in + n, name);
	memset(in + n, 0, 16);	/* deletion and deferment end times */
	n += 16;
	in[n++] = 0;	/* TRASH_IMAGE_STATE_NORMAL */
	put32(in + start, (uint32_t)(n - start - 4));
	return exec_write(io, "rbd_trash", "trash_add", in, n);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: see the comment at the top\n");
		return 2;
	}
	if (rados_create(&cluster, NULL) < 0 ||
	    rados_conf_read_file(cluster, NULL) < 0 ||
	    rados_conf_parse_env(cluster, NULL) < 0 ||
	    rados_connect(cluster) < 0) {
		fprintf(stderr, "cannot connect to the cluster\n");
		return 2;
	}
	const char *mode = argv[1], *pool = argv[2];
	int rc = 0;

	if (!strcmp(mode, "table") && argc == 5) {
		data_pool = argv[3];
		rados_ioctx_t io = ioctx(pool, argv[4]);
		rados_ioctx_t dio = ioctx(pool, NULL);

		options_cases();
		namespace_cases(dio, argv[4]);
		list_cases(io, "empty");
		create_cases(io, pool);
		list_cases(io, "full");
		remove_cases(io);
		metadata_cases(io);
		remove_all(io);
		list_cases(io, "after");
		rados_ioctx_destroy(dio);
		rados_ioctx_destroy(io);
	} else if (!strcmp(mode, "make") && argc >= 6) {
		rados_ioctx_t io = ioctx(pool, argv[3]);
		int order = 0;

		data_pool = argc > 6 ? argv[6] : "";
		if (!strcmp(argv[5], "order"))
			order = 20;
		int r = make(io, argv[4], argv[5], &order);

		printf("ret=%d order=%d\n", r, order);
		rc = r < 0;
		rados_ioctx_destroy(io);
	} else if (!strcmp(mode, "trash-removing") && argc == 6) {
		rados_ioctx_t io = ioctx(pool, argv[3]);

		printf("ret=%d\n", trash_removing(io, argv[4], argv[5]));
		rados_ioctx_destroy(io);
	} else if (!strcmp(mode, "rm") && argc == 5) {
		rados_ioctx_t io = ioctx(pool, argv[3]);

		printf("ret=%d\n", rbd_remove(io, argv[4]));
		rados_ioctx_destroy(io);
	} else if (!strcmp(mode, "ls") && argc == 4) {
		rados_ioctx_t io = ioctx(pool, argv[3]);
		size_t size = 0;
		int r = rbd_list(io, NULL, &size);
		char *buf = malloc(size + 1);

		if (r == -ERANGE && buf)
			r = rbd_list(io, buf, &size);
		if (r < 0 && r != -ERANGE && size != 0) {
			printf("list failed %d\n", r);
			rc = 1;
		}
		for (int off = 0; r > 0 && off < r;
		     off += (int)strlen(buf + off) + 1)
			printf("list %s\n", buf + off);
		free(buf);
		size_t max = 0;

		r = rbd_list2(io, NULL, &max);
		rbd_image_spec_t *v = calloc(max + 1, sizeof(*v));

		r = rbd_list2(io, v, &max);
		if (r < 0) {
			printf("list2 failed %d\n", r);
			rc = 1;
		}
		for (size_t i = 0; r == 0 && i < max; i++)
			printf("list2 %s %s\n", v[i].name, v[i].id);
		if (r == 0)
			rbd_image_spec_list_cleanup(v, max);
		free(v);
		rados_ioctx_destroy(io);
	} else {
		fprintf(stderr, "bad arguments\n");
		rc = 2;
	}
	rados_shutdown(cluster);
	return rc;
}
