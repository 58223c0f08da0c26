/*
 * check_slab.c - unit tests of the slab caches (lib/slab.c): reuse,
 * alignment, depot round trips beyond a magazine, objects freed on another
 * thread, and a concurrent stress run that checks no object is ever handed
 * out twice.  No cluster needed.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/slab.h"

static struct rbdl_slab s128 = RBDL_SLAB_INIT("test128", 100);
static struct rbdl_slab s1k = RBDL_SLAB_INIT("test1k", 1000);

static void setup(void)
{
	ck_assert_int_eq(rbdl_slab_init(&s128), 0);
	ck_assert_int_eq(rbdl_slab_init(&s1k), 0);
}

START_TEST(test_size_rounded_and_aligned)
{
	ck_assert_uint_eq(s128.size, 128);
	ck_assert_uint_eq(s1k.size, 1024);
	for (int i = 0; i < 200; i++) {
		void *p = rbdl_slab_alloc(&s1k);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % 64, 0);
		memset(p, 0xab, 1000);
		rbdl_slab_free(&s1k, p);
	}
}
END_TEST

START_TEST(test_reuse_same_thread)
{
	void *a = rbdl_slab_alloc(&s128);

	rbdl_slab_free(&s128, a);
	void *b = rbdl_slab_alloc(&s128);

	/* LIFO magazine: the object just freed comes back. */
	ck_assert_ptr_eq(a, b);
	rbdl_slab_free(&s128, b);
}
END_TEST

START_TEST(test_many_objects_distinct)
{
	enum { N = 1000 };
	void **v = calloc(N, sizeof(*v));
	uint64_t before = rbdl_slab_backing_allocs();

	for (int i = 0; i < N; i++) {
		v[i] = rbdl_slab_alloc(&s128);
		ck_assert_ptr_nonnull(v[i]);
		memset(v[i], i & 0xff, 128);
	}
	for (int i = 0; i < N; i++) {
		unsigned char *p = v[i];

		for (int k = 0; k < 128; k++)
			ck_assert_uint_eq(p[k], (unsigned)(i & 0xff));
	}
	for (int i = 0; i < N; i++)
		rbdl_slab_free(&s128, v[i]);
	uint64_t grown = rbdl_slab_backing_allocs();

	ck_assert_uint_gt(grown, before);
	/* Steady state: the same working set needs no new backing memory. */
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < N; i++)
			v[i] = rbdl_slab_alloc(&s128);
		for (int i = 0; i < N; i++)
			rbdl_slab_free(&s128, v[i]);
	}
	ck_assert_uint_eq(rbdl_slab_backing_allocs(), grown);
	free(v);
}
END_TEST

struct xfer {
	void **objs;
	int n;
};

static void *free_all(void *arg)
{
	struct xfer *x = arg;

	for (int i = 0; i < x->n; i++)
		rbdl_slab_free(&s1k, x->objs[i]);
	return NULL;
}

START_TEST(test_remote_free_returns_to_owner)
{
	enum { N = 500 };
	void *objs[N];
	struct xfer x = { objs, N };
	pthread_t t;

	for (int i = 0; i < N; i++)
		objs[i] = rbdl_slab_alloc(&s1k);
	uint64_t grown = rbdl_slab_backing_allocs();

	/* Freed on another thread (librados' callback thread in real use),
	 * which then exits: its magazine drains into the depot. */
	ck_assert_int_eq(pthread_create(&t, NULL, free_all, &x), 0);
	pthread_join(t, NULL);
	for (int i = 0; i < N; i++)
		objs[i] = rbdl_slab_alloc(&s1k);
	ck_assert_uint_eq(rbdl_slab_backing_allocs(), grown);
	for (int i = 0; i < N; i++)
		rbdl_slab_free(&s1k, objs[i]);
}
END_TEST

/* Backing memory goes back to the kernel once no object is in use or
 * cached anywhere, and not before. */
static struct rbdl_slab s4k = RBDL_SLAB_INIT("test-trim", 4000);

static void *free_all_4k(void *arg)
{
	struct xfer *x = arg;

	for (int i = 0; i < x->n; i++)
		rbdl_slab_free(&s4k, x->objs[i]);
	return NULL;
}

START_TEST(test_idle_memory_released)
{
	enum { N = 300 };
	void *objs[N];
	struct xfer x = { objs, N };
	pthread_t t;
	void *keep;

	ck_assert_int_eq(rbdl_slab_init(&s4k), 0);
	for (int i = 0; i < N; i++)
		ck_assert_ptr_nonnull(objs[i] = rbdl_slab_alloc(&s4k));
	keep = rbdl_slab_alloc(&s4k);
	ck_assert_ptr_nonnull(keep);
	/* Freed on a thread that exits: its magazine drains, but one object
	 * is still in use, so nothing may be unmapped. */
	ck_assert_int_eq(pthread_create(&t, NULL, free_all_4k, &x), 0);
	pthread_join(t, NULL);
	rbdl_slab_trim();
	ck_assert_uint_gt(s4k.total, 0);
	ck_assert_ptr_nonnull(s4k.chunks);
	memset(keep, 0x5a, 4000);	/* still mapped and writable */
	/* The last object is freed into this thread's magazine: the cache is
	 * not idle until the magazine is drained too. */
	rbdl_slab_free(&s4k, keep);
	ck_assert_uint_gt(s4k.total, 0);
	rbdl_slab_trim();
	ck_assert_uint_eq(s4k.total, 0);
	ck_assert_uint_eq(s4k.depot_count, 0);
	ck_assert_ptr_null(s4k.chunks);
	/* And the cache works again afterwards, on fresh backing memory. */
	uint64_t before = rbdl_slab_backing_allocs();

	keep = rbdl_slab_alloc(&s4k);
	ck_assert_ptr_nonnull(keep);
	memset(keep, 0xa5, 4000);
	ck_assert_uint_eq(rbdl_slab_backing_allocs(), before + 1);
	rbdl_slab_free(&s4k, keep);
}
END_TEST

/* Stress: threads allocate, stamp the object with their id, check the
 * stamp, and free; a double hand-out would show as a foreign stamp. */
static void *stress(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	void *held[64];

	for (int round = 0; round < 2000; round++) {
		int n = 1 + (round * 7 + (int)id) % 64;

		for (int i = 0; i < n; i++) {
			held[i] = rbdl_slab_alloc(&s128);
			if (!held[i])
				return (void *)1;
			for (int k = 0; k < 16; k++)
				((uintptr_t *)held[i])[k] = id;
		}
		for (int i = 0; i < n; i++) {
			for (int k = 0; k < 16; k++)
				if (((uintptr_t *)held[i])[k] != id)
					return (void *)1;
			rbdl_slab_free(&s128, held[i]);
		}
	}
	return NULL;
}

START_TEST(test_concurrent_stress)
{
	pthread_t t[8];

	for (uintptr_t i = 0; i < 8; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress,
						(void *)(i + 1)), 0);
	for (int i = 0; i < 8; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		ck_assert_ptr_null(ret);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("Slab");
	TCase *tc = tcase_create("slab");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_size_rounded_and_aligned);
	tcase_add_test(tc, test_reuse_same_thread);
	tcase_add_test(tc, test_many_objects_distinct);
	tcase_add_test(tc, test_remote_free_returns_to_owner);
	tcase_add_test(tc, test_concurrent_stress);
	tcase_add_test(tc, test_idle_memory_released);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
