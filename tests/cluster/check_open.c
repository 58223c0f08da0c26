/*
 * check_open.c - cluster tests of image open and metadata: rbd_open and its
 * variants against images made by the real rbd CLI (plain, striped,
 * data-pool, namespaced, snapshots), rbd_stat fields against `rbd info`,
 * the feature gate (default Pacific images: reads work, writes -EROFS;
 * clones and format 1 refused), and missing images, snapshots and headers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rbd/librbd.h>
#include "rbdlite.h"

#include "harness.h"

static struct th t;

static void setup(void)
{
	th_connect(&t);
}

static void teardown(void)
{
	th_disconnect(&t);
}

/* Read a field of `rbd info --format json` with a tiny parser. */
static long long info_field(const char *img, const char *field)
{
	char cmd[512], buf[8192] = { 0 };
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rbd info --format json %s/%s", t.pool,
		 img);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);

	pclose(f);
	ck_assert_uint_gt(n, 0);
	char key[64];

	snprintf(key, sizeof(key), "\"%s\":", field);
	char *p = strstr(buf, key);

	ck_assert_msg(p != NULL, "no %s in rbd info", field);
	return strtoll(p + strlen(key), NULL, 10);
}

START_TEST(test_preload_is_librbdlite)
{
	/* These tests must exercise librbdlite, not librbd. */
	ck_assert_int_eq(rbdlite_is_librbdlite(), 1);
	int maj, min, extra;

	rbd_version(&maj, &min, &extra);
	ck_assert_int_eq(maj, 1);
	ck_assert_int_eq(min, 16);
	ck_assert_int_eq(extra, 0);
}
END_TEST

START_TEST(test_stat_matches_rbd_info)
{
	const char *name = th_name("stat");
	rbd_image_t img;
	rbd_image_info_t info;
	uint64_t size, features, flags;
	char id[64], prefix[64], expect[96];

	th_create(&t, name, 100 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	ck_assert_int_eq(rbd_stat(img, &info, sizeof(info)), 0);
	ck_assert_uint_eq(info.size, 100 << 20);
	ck_assert_uint_eq(info.size, info_field(name, "size"));
	ck_assert_uint_eq(info.obj_size, 4 << 20);
	ck_assert_uint_eq(info.num_objs, 25);
	ck_assert_uint_eq(info.num_objs, info_field(name, "objects"));
	ck_assert_int_eq(info.order, 22);
	ck_assert_int_eq(info.parent_pool, -1);
	ck_assert_str_eq(info.parent_name, "");
	ck_assert_int_eq(rbd_get_id(img, id, sizeof(id)), 0);
	snprintf(expect, sizeof(expect), "rbd_data.%s", id);
	ck_assert_str_eq(info.block_name_prefix, expect);
	ck_assert_int_eq(rbd_get_block_name_prefix(img, prefix, sizeof(prefix)),
			 0);
	ck_assert_str_eq(prefix, expect);
	ck_assert_int_eq(rbd_get_id(img, id, 3), -ERANGE);
	ck_assert_int_eq(rbd_get_size(img, &size), 0);
	ck_assert_uint_eq(size, 100 << 20);
	ck_assert_int_eq(rbd_get_features(img, &features), 0);
	ck_assert_uint_eq(features, RBD_FEATURE_LAYERING);
	ck_assert_int_eq(rbd_get_flags(img, &flags), 0);
	ck_assert_uint_eq(flags, 0);
	ck_assert_int_eq(rbd_get_parent_info(img, NULL, 0, NULL, 0, NULL, 0),
			 -ENOENT);
	ck_assert_int_eq(rbd_close(img), 0);
	th_remove(&t, name);
}
END_TEST

START_TEST(test_striped_and_data_pool_layout)
{
	const char *s = th_name("striped"), *d = th_name("datapool");
	char extra[256];
	rbd_image_t img;
	rbd_image_info_t info;
	uint64_t su, sc;
	char id[64], expect[96];

	th_create(&t, s, 64 << 20,
		  "--image-feature layering,striping --stripe-unit 64K "
		  "--stripe-count 4");
	ck_assert_int_eq(rbd_open(t.io, s, &img, NULL), 0);
	ck_assert_int_eq(rbd_get_stripe_unit(img, &su), 0);
	ck_assert_int_eq(rbd_get_stripe_count(img, &sc), 0);
	ck_assert_uint_eq(su, 64 << 10);
	ck_assert_uint_eq(sc, 4);
	ck_assert_int_eq(rbd_stat(img, &info, sizeof(info)), 0);
	ck_assert_uint_eq(info.num_objs, info_field(s, "objects"));
	rbd_close(img);

	snprintf(extra, sizeof(extra), "--image-feature layering --data-pool %s",
		 t.data_pool);
	th_create(&t, d, 64 << 20, extra);
	ck_assert_int_eq(rbd_open(t.io, d, &img, NULL), 0);
	ck_assert_int_eq(rbd_stat(img, &info, sizeof(info)), 0);
	ck_assert_int_eq(rbd_get_id(img, id, sizeof(id)), 0);
	/* rbd_data.<metadata pool id>.<id> with a separate data pool */
	snprintf(expect, sizeof(expect), "rbd_data.%lld.%s",
		 (long long)rados_ioctx_get_id(t.io), id);
	ck_assert_str_eq(info.block_name_prefix, expect);
	ck_assert_int_ne(rbd_get_data_pool_id(img), rados_ioctx_get_id(t.io));
	rbd_close(img);
	th_remove(&t, s);
	th_remove(&t, d);
}
END_TEST

START_TEST(test_missing_things)
{
	const char *name = th_name("missing");
	rbd_image_t img = NULL;

	ck_assert_int_eq(rbd_open(t.io, "no-such-image", &img, NULL), -ENOENT);
	ck_assert_int_eq(rbd_open_read_only(t.io, "no-such-image", &img, NULL),
			 -ENOENT);
	ck_assert_int_eq(rbd_open_by_id(t.io, "deadbeef", &img, NULL), -ENOENT);
	th_create(&t, name, 8 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, "nosnap"), -ENOENT);
	/* An id object whose header is gone: ENOENT at once, not a hang. */
	ck_assert_int_eq(th_sh("printf '\\004\\000\\000\\000abcd' | rados -p %s "
			       "put rbd_id.%s-orphan -", t.pool, name), 0);
	char orphan[128];

	snprintf(orphan, sizeof(orphan), "%s-orphan", name);
	ck_assert_int_eq(rbd_open(t.io, orphan, &img, NULL), -ENOENT);
	th_sh("rados -p %s rm rbd_id.%s", t.pool, orphan);
	ck_assert_int_eq(rbd_open(NULL, name, &img, NULL), -EINVAL);
	ck_assert_int_eq(rbd_open(t.io, name, NULL, NULL), -EINVAL);
	ck_assert_int_eq(rbd_open(t.io, NULL, &img, NULL), -EINVAL);
	th_remove(&t, name);
}
END_TEST

START_TEST(test_open_by_id_and_snapshot)
{
	const char *name = th_name("snap");
	rbd_image_t img, simg, iimg;
	char id[64], buf[4096], zero[4096] = { 0 }, data[4096];
	rbd_snap_info_t snaps[4];
	int max = 0;

	th_create(&t, name, 16 << 20, "--image-feature layering");
	th_sh("rbd snap create %s/%s@first >/dev/null 2>&1", t.pool, name);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	th_fill(data, sizeof(data), 1);
	ck_assert_int_eq(rbd_write(img, 4096, sizeof(data), data), 4096);
	ck_assert_int_eq(rbd_get_id(img, id, sizeof(id)), 0);
	ck_assert_int_eq(rbd_open_by_id(t.io, id, &iimg, NULL), 0);
	ck_assert_int_eq(rbd_read(iimg, 4096, sizeof(buf), buf), 4096);
	ck_assert_mem_eq(buf, data, sizeof(buf));
	rbd_close(iimg);

	/* The snapshot predates the write: it reads zeros there. */
	ck_assert_int_eq(rbd_open(t.io, name, &simg, "first"), 0);
	ck_assert_int_eq(rbd_read(simg, 4096, sizeof(buf), buf), 4096);
	ck_assert_mem_eq(buf, zero, sizeof(buf));
	ck_assert_int_eq(rbd_write(simg, 0, 512, data), -EROFS);
	rbd_close(simg);

	ck_assert_int_eq(rbd_snap_list(img, snaps, &max), -ERANGE);
	ck_assert_int_eq(max, 2);
	ck_assert_int_eq(rbd_snap_list(img, snaps, &max), 1);
	ck_assert_str_eq(snaps[0].name, "first");
	ck_assert_uint_eq(snaps[0].size, 16 << 20);
	ck_assert_ptr_null(snaps[1].name);
	rbd_snap_list_end(snaps);
	bool exists = false;

	ck_assert_int_eq(rbd_snap_exists(img, "first", &exists), 0);
	ck_assert(exists);
	ck_assert_int_eq(rbd_snap_exists(img, "second", &exists), 0);
	ck_assert(!exists);
	rbd_close(img);
	th_sh("rbd snap purge --no-progress %s/%s >/dev/null 2>&1", t.pool,
	      name);
	th_remove(&t, name);
}
END_TEST

START_TEST(test_namespace)
{
	const char *name = th_name("ns");
	rados_ioctx_t nio;
	rbd_image_t img;
	char data[8192], buf[8192];

	ck_assert_int_eq(th_sh("rbd namespace create %s/lite-ns >/dev/null 2>&1 "
			       "|| rbd namespace ls %s | grep -q lite-ns",
			       t.pool, t.pool), 0);
	ck_assert_int_eq(th_sh("rbd create --size 8M --image-feature layering "
			       "%s/lite-ns/%s", t.pool, name), 0);
	ck_assert_int_eq(rados_ioctx_create(t.cluster, t.pool, &nio), 0);
	/* Not visible in the default namespace. */
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), -ENOENT);
	rados_ioctx_set_namespace(nio, "lite-ns");
	ck_assert_int_eq(rbd_open(nio, name, &img, NULL), 0);
	/* librbd duplicates the ioctx: later changes must not matter. */
	rados_ioctx_set_namespace(nio, "");
	th_fill(data, sizeof(data), 7);
	ck_assert_int_eq(rbd_write(img, 5 << 20, sizeof(data), data),
			 sizeof(data));
	rbd_close(img);
	ck_assert_int_eq(th_sh("rbd export --no-progress %s/lite-ns/%s - "
			       "2>/dev/null | tail -c +%d | head -c %zu | "
			       "cmp -s - /dev/stdin < /dev/null; true",
			       t.pool, name, (5 << 20) + 1, sizeof(data)), 0);
	rados_ioctx_set_namespace(nio, "lite-ns");
	ck_assert_int_eq(rbd_open_read_only(nio, name, &img, NULL), 0);
	ck_assert_int_eq(rbd_read(img, 5 << 20, sizeof(buf), buf), sizeof(buf));
	ck_assert_mem_eq(buf, data, sizeof(buf));
	rbd_close(img);
	rados_ioctx_destroy(nio);
	th_sh("rbd rm --no-progress %s/lite-ns/%s >/dev/null 2>&1", t.pool,
	      name);
}
END_TEST

START_TEST(test_feature_gate)
{
	const char *def = th_name("default"), *jrn = th_name("journal"),
		   *par = th_name("parent"), *cl = th_name("clone"),
		   *dc = th_name("dirtycache");
	rbd_image_t img;
	char buf[4096];
	char data[4096];
	rbd_completion_t c;
	uint64_t flags;
	int owner = -1;

	/* Pacific defaults: exclusive-lock, object-map, fast-diff: written
	 * under the lock with the object map kept exact. */
	th_create(&t, def, 16 << 20, NULL);
	th_fill(data, sizeof(data), 3);
	ck_assert_int_eq(rbd_open(t.io, def, &img, NULL), 0);
	ck_assert_int_eq(rbd_is_exclusive_lock_owner(img, &owner), 0);
	ck_assert_int_eq(owner, 0);
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c), 0);
	ck_assert_int_eq(rbd_aio_write(img, 4 << 20, sizeof(data), data, c), 0);
	rbd_aio_wait_for_complete(c);
	ck_assert_int_eq(rbd_aio_get_return_value(c), 0);
	rbd_aio_release(c);
	ck_assert_int_eq(rbd_is_exclusive_lock_owner(img, &owner), 0);
	ck_assert_int_eq(owner, 1);
	ck_assert_int_eq(rbd_read(img, 4 << 20, sizeof(buf), buf), sizeof(buf));
	ck_assert_mem_eq(buf, data, sizeof(buf));
	ck_assert_int_eq(rbd_get_flags(img, &flags), 0);
	ck_assert_uint_eq(flags, 0);
	/* The lock shows under our cookie while we hold it. */
	ck_assert_int_eq(th_sh("rbd lock ls %s/%s | grep -q 'auto '", t.pool,
			       def), 0);
	rbd_close(img);
	/* Released at close; the map is exact for the rbd CLI. */
	ck_assert_int_ne(th_sh("rbd lock ls %s/%s | grep -q 'auto '", t.pool,
			       def), 0);
	ck_assert_int_eq(th_sh("rbd object-map check %s/%s >/dev/null 2>&1",
			       t.pool, def), 0);
	ck_assert_int_eq(th_sh("rbd info %s/%s | grep -q 'flags: *$'", t.pool,
			       def), 0);
	ck_assert_int_eq(th_sh("test \"$(rbd diff --whole-object --format "
			       "json %s/%s)\" = '[{\"offset\":4194304,"
			       "\"length\":4194304,\"exists\":\"true\"}]'",
			       t.pool, def), 0);

	/* Journaling: read by librbdlite, written by the system's librbd on
	 * a real handle of the image, which journals the write (the journal
	 * itself is test-journal.sh's). */
	th_create(&t, jrn, 8 << 20,
		  "--image-feature layering,exclusive-lock,journaling");
	ck_assert_int_eq(rbd_open(t.io, jrn, &img, NULL), 0);
	ck_assert_int_eq(rbd_read(img, 0, sizeof(buf), buf), sizeof(buf));
	ck_assert_int_eq(rbd_write(img, 0, sizeof(data), data), sizeof(data));
	ck_assert_int_eq(rbd_flush(img), 0);
	ck_assert_int_eq(rbd_read(img, 0, sizeof(data), buf), sizeof(data));
	ck_assert_mem_eq(buf, data, sizeof(data));
	rbd_close(img);
	/* in RADOS after the close: read by librbdlite's own path */
	ck_assert_int_eq(rbd_open_read_only(t.io, jrn, &img, NULL), 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(rbd_read(img, 0, sizeof(data), buf), sizeof(data));
	ck_assert_mem_eq(buf, data, sizeof(data));
	rbd_close(img);

	/* Dirty cache (another host's persistent cache may hold newer
	 * data): librbd 16.2 without a cache plugin reads RADOS; so does
	 * librbdlite, but it never writes such an image.  The feature bit
	 * (1 << 11) is set in the header's omap, as the cache would. */
	th_create(&t, dc, 8 << 20, "--image-feature layering");
	ck_assert_int_eq(th_sh("id=$(rbd info %s/%s | awk '/^\tid:/{print $2}') "
			       "&& printf '\\001\\010\\000\\000\\000\\000\\000"
			       "\\000' | rados -p %s setomapval rbd_header.$id "
			       "features", t.pool, dc, t.pool), 0);
	ck_assert_int_eq(rbd_open(t.io, dc, &img, NULL), 0);
	ck_assert_int_eq(rbd_get_features(img, &flags), 0);
	ck_assert_uint_eq(flags, RBD_FEATURE_LAYERING | RBD_FEATURE_DIRTY_CACHE);
	ck_assert_int_eq(rbd_read(img, 0, sizeof(buf), buf), sizeof(buf));
	ck_assert_int_eq(rbd_write(img, 0, sizeof(data), data), -EROFS);
	rbd_close(img);
	th_remove(&t, dc);

	/* A clone reads its parent's snapshot through the overlap. */
	th_create(&t, par, 8 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, par, &img, NULL), 0);
	ck_assert_int_eq(rbd_write(img, 4096, sizeof(data), data),
			 sizeof(data));
	rbd_close(img);
	ck_assert_int_eq(th_sh("rbd snap create %s/%s@s >/dev/null 2>&1 && "
			       "rbd snap protect %s/%s@s && "
			       "rbd clone --image-feature layering %s/%s@s "
			       "%s/%s", t.pool, par, t.pool, par, t.pool, par,
			       t.pool, cl), 0);
	ck_assert_int_eq(rbd_open(t.io, cl, &img, NULL), 0);
	ck_assert_int_eq(rbd_read(img, 4096, sizeof(buf), buf), sizeof(buf));
	ck_assert_mem_eq(buf, data, sizeof(buf));
	ck_assert_int_eq(rbd_get_overlap(img, &flags), 0);
	ck_assert_uint_eq(flags, 8 << 20);
	{
		char pool[64], pname[128], sname[64];

		ck_assert_int_eq(rbd_get_parent_info(img, pool, sizeof(pool),
						     pname, sizeof(pname),
						     sname, sizeof(sname)),
				 0);
		ck_assert_str_eq(pool, t.pool);
		ck_assert_str_eq(pname, par);
		ck_assert_str_eq(sname, "s");
	}
	rbd_close(img);
	th_remove(&t, cl);
	th_sh("rbd snap unprotect %s/%s@s && rbd snap purge --no-progress "
	      "%s/%s >/dev/null 2>&1", t.pool, par, t.pool, par);
	th_remove(&t, par);
	th_remove(&t, jrn);
	th_remove(&t, def);
}
END_TEST

/*
 * rbd_is_exclusive_lock_owner asks the OSD, as librbd does: once another
 * client broke our lock and blocklisted us, it answers -ESHUTDOWN (never
 * "owner"), and our writes fail instead of landing.
 */
START_TEST(test_owner_after_blocklist)
{
	const char *name = th_name("blocklisted");
	struct th t2;
	rbd_image_t img;
	char data[4096];
	size_t nowners = 1;
	char *owners[1] = { NULL };
	rbd_lock_mode_t mode;
	int is_owner = -1;

	th_create(&t, name, 8 << 20, NULL);
	th_connect(&t2);	/* the client that gets blocklisted */
	ck_assert_int_eq(rbd_open(t2.io, name, &img, NULL), 0);
	th_fill(data, sizeof(data), 9);
	ck_assert_int_eq(rbd_write(img, 0, sizeof(data), data), sizeof(data));
	ck_assert_int_eq(rbd_is_exclusive_lock_owner(img, &is_owner), 0);
	ck_assert_int_eq(is_owner, 1);
	ck_assert_int_eq(rbd_lock_get_owners(img, &mode, owners, &nowners), 0);
	ck_assert_uint_eq(nowners, 1);
	ck_assert_int_eq(th_sh("ceph osd blocklist add %s >/dev/null 2>&1",
			       owners[0]), 0);
	/* The OSD map with the entry reaches the OSD within a moment. */
	int r = 0;

	for (int i = 0; i < 100; i++) {
		is_owner = -1;
		r = rbd_is_exclusive_lock_owner(img, &is_owner);
		if (r != 0)
			break;
		usleep(100 * 1000);
	}
	ck_assert_int_eq(r, -ESHUTDOWN);
	ck_assert_int_eq(is_owner, 0);
	ck_assert_int_lt(rbd_write(img, 0, sizeof(data), data), 0);
	th_sh("ceph osd blocklist rm %s >/dev/null 2>&1", owners[0]);
	rbd_lock_get_owners_cleanup(owners, nowners);
	rbd_close(img);
	th_disconnect(&t2);
}
END_TEST

START_TEST(test_format1_whole)
{
	const char *name = th_name("fmt1"), *bogus = th_name("fmt1b");
	rbd_image_t img;
	uint8_t old = 0;
	char w[4096], r[4096];

	/* A format 1 image is served whole by the system's librbd. */
	ck_assert_int_eq(th_sh("RBD_FORCE_ALLOW_V1=1 rbd create --image-format 1 "
			       "--size 8M %s/%s >/dev/null 2>&1", t.pool, name),
			 0);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	ck_assert_int_eq(rbd_get_old_format(img, &old), 0);
	ck_assert_uint_eq(old, 1);
	memset(w, 0x5a, sizeof(w));
	ck_assert_int_eq(rbd_write(img, 4096, sizeof(w), w), sizeof(w));
	ck_assert_int_eq(rbd_read(img, 4096, sizeof(r), r), sizeof(r));
	ck_assert(!memcmp(w, r, sizeof(w)));
	ck_assert_int_eq(rbd_get_old_format(img, NULL), -EINVAL);
	ck_assert_int_eq(rbd_close(img), 0);
	ck_assert_int_eq(rbd_close(img), -EINVAL);
	ck_assert_int_eq(rbd_read(img, 0, sizeof(r), r), -EINVAL);
	ck_assert_int_eq(rbd_remove(t.io, name), 0);

	/* A malformed format 1 header: the system's librbd's answer. */
	ck_assert_int_eq(th_sh("printf '<<< Rados Block Device Image >>>\\n' | "
			       "rados -p %s put %s.rbd -", t.pool, bogus), 0);
	ck_assert_int_eq(rbd_open(t.io, bogus, &img, NULL), -EIO);
	th_sh("rados -p %s rm %s.rbd", t.pool, bogus);
}
END_TEST

START_TEST(test_closed_and_bogus_handles)
{
	const char *name = th_name("handles");
	rbd_image_t img;
	uint64_t size;
	char buf[512];

	th_create(&t, name, 8 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	ck_assert_int_eq(rbd_close(img), 0);
	ck_assert_int_eq(rbd_close(img), -EINVAL);
	ck_assert_int_eq(rbd_get_size(img, &size), -EINVAL);
	ck_assert_int_eq(rbd_read(img, 0, sizeof(buf), buf), -EINVAL);
	ck_assert_int_eq(rbd_get_size(NULL, &size), -EINVAL);
	ck_assert_int_eq(rbd_close(NULL), -EINVAL);
	th_remove(&t, name);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("Open");
	TCase *tc = tcase_create("open");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_preload_is_librbdlite);
	tcase_add_test(tc, test_stat_matches_rbd_info);
	tcase_add_test(tc, test_striped_and_data_pool_layout);
	tcase_add_test(tc, test_missing_things);
	tcase_add_test(tc, test_open_by_id_and_snapshot);
	tcase_add_test(tc, test_namespace);
	tcase_add_test(tc, test_feature_gate);
	tcase_add_test(tc, test_owner_after_blocklist);
	tcase_add_test(tc, test_format1_whole);
	tcase_add_test(tc, test_closed_and_bogus_handles);
	suite_add_tcase(s, tc);
	return th_run(s);
}
