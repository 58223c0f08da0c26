/*
 * harness.h - shared helpers for the Check-based cluster tests.
 *
 * Cluster tests run against the throwaway cluster that make check
 * (tests/cluster/cluster-test.sh) starts for them (CEPH_CONF,
 * RBDLITE_TEST_POOL, RBDLITE_TEST_DATA_POOL).  A test whose cluster is missing FAILS: it never
 * skips.  Images are created with the real rbd CLI, the judge of
 * compatibility, under names unique to the process.
 */
#ifndef RBDL_TEST_HARNESS_H
#define RBDL_TEST_HARNESS_H

#include <check.h>
#include <rados/librados.h>
#include <stddef.h>
#include <stdint.h>

struct th {
	rados_t cluster;
	rados_ioctx_t io;
	const char *pool;
	const char *data_pool;
};

/* Connect to the test cluster; ck_abort()s with a clear message if the
 * cluster promised by the environment is not there. */
void th_connect(struct th *t);
void th_disconnect(struct th *t);

/* Run a shell command (printf-style); returns its exit status. */
int th_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A fresh image name "<prefix>-<pid>-<n>". Static storage, 8 slots. */
const char *th_name(const char *prefix);

/* Create an image with the rbd CLI: `rbd create --size SIZE_BYTES
 * EXTRA pool/name`; ck_assert()s success. */
void th_create(struct th *t, const char *name, uint64_t size,
	       const char *extra);
void th_remove(struct th *t, const char *name);

/* Deterministic pseudo-random bytes. */
void th_fill(void *buf, size_t len, uint64_t seed);

/* Run Check suite s, return the process exit status. */
int th_run(Suite *s);

#endif
