/*
 * harness.c - shared helpers for the Check-based cluster tests (see
 * harness.h).  Single-threaded test set-up code; nothing here is shared
 * between threads.
 */
#include "harness.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void th_connect(struct th *t)
{
	const char *conf = getenv("CEPH_CONF");
	int r;

	t->pool = getenv("RBDLITE_TEST_POOL");
	t->data_pool = getenv("RBDLITE_TEST_DATA_POOL");
	if (!conf || !t->pool || !t->data_pool)
		ck_abort_msg("no test cluster: CEPH_CONF, RBDLITE_TEST_POOL "
			     "and RBDLITE_TEST_DATA_POOL must be set (run "
			     "through make check or "
			     "tests/cluster/cluster-test.sh)");
	r = rados_create(&t->cluster, NULL);
	ck_assert_int_eq(r, 0);
	r = rados_conf_read_file(t->cluster, conf);
	ck_assert_msg(r == 0, "cannot read %s: %d", conf, r);
	rados_conf_set(t->cluster, "client_mount_timeout", "20");
	r = rados_connect(t->cluster);
	ck_assert_msg(r == 0, "cannot connect to the test cluster: %d", r);
	r = rados_ioctx_create(t->cluster, t->pool, &t->io);
	ck_assert_msg(r == 0, "no pool %s: %d", t->pool, r);
}

void th_disconnect(struct th *t)
{
	rados_ioctx_destroy(t->io);
	rados_shutdown(t->cluster);
}

int th_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	r = system(cmd);
	if (r == -1)
		return -1;
	return WIFEXITED(r) ? WEXITSTATUS(r) : 128 + WTERMSIG(r);
}

const char *th_name(const char *prefix)
{
	static char names[8][96];
	static unsigned n;
	char *s = names[n % 8];

	snprintf(s, sizeof(names[0]), "%s-%d-%u", prefix, (int)getpid(), n);
	n++;
	return s;
}

void th_create(struct th *t, const char *name, uint64_t size,
	       const char *extra)
{
	int r = th_sh("rbd create --size %" PRIu64 "B %s %s/%s", size,
		      extra ? extra : "", t->pool, name);

	ck_assert_msg(r == 0, "rbd create %s failed: %d", name, r);
}

void th_remove(struct th *t, const char *name)
{
	th_sh("rbd rm --no-progress %s/%s >/dev/null 2>&1", t->pool, name);
}

void th_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)x;
	}
}

int th_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
