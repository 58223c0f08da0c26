/*
 * check_join.c - unit tests for lib/core/join.h, the join counter that
 * waits for a group of sub-operations and keeps their first error.
 *
 * Single-threaded: the guard keeps the group open while members are
 * added, unsent members never finish it, the first error wins, a restart
 * clears it.  Threaded: members put from several threads at once finish
 * the group exactly once, and the finisher sees every member's write and
 * an error one of them recorded.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/join.h"

START_TEST(test_guard)
{
	struct rbdl_join j;

	rbdl_join_start(&j, 1);
	rbdl_join_add(&j);
	rbdl_join_add(&j);
	ck_assert(!rbdl_join_put(&j));		/* a member */
	ck_assert(!rbdl_join_put(&j));		/* the other */
	ck_assert(rbdl_join_put(&j));		/* the guard: last */
	ck_assert_int_eq(rbdl_join_result(&j), 0);
}
END_TEST

START_TEST(test_first_error)
{
	struct rbdl_join j;

	rbdl_join_start(&j, 4);
	rbdl_join_error(&j, -5);
	rbdl_join_error(&j, -2);
	ck_assert(!rbdl_join_put(&j));
	ck_assert(!rbdl_join_put(&j));
	ck_assert(!rbdl_join_put(&j));
	ck_assert(rbdl_join_put(&j));
	ck_assert_int_eq(rbdl_join_result(&j), -5);
	rbdl_join_start(&j, 1);			/* restart: no error */
	ck_assert_int_eq(rbdl_join_result(&j), 0);
	ck_assert(rbdl_join_put(&j));
}
END_TEST

START_TEST(test_unsent)
{
	struct rbdl_join j;

	rbdl_join_start(&j, 1);
	rbdl_join_add(&j);
	rbdl_join_unsent(&j, 0);		/* no error recorded */
	ck_assert_int_eq(rbdl_join_result(&j), 0);
	rbdl_join_add(&j);
	rbdl_join_add(&j);
	rbdl_join_unsent(&j, -12);
	ck_assert_int_eq(rbdl_join_result(&j), -12);
	ck_assert(!rbdl_join_put(&j));		/* the sent member */
	ck_assert(rbdl_join_put(&j));		/* the guard */
	ck_assert_int_eq(rbdl_join_result(&j), -12);
}
END_TEST

#define THREADS 4
#define MEMBERS 20000	/* per thread */

static struct rbdl_join tj;
static int slots[THREADS * MEMBERS];	/* each member's plain write */
static atomic_int finished;
static int seen;			/* slots the finisher saw set */

static void finish(void)
{
	atomic_fetch_add(&finished, 1);
	seen = 0;
	for (int i = 0; i < THREADS * MEMBERS; i++)
		seen += slots[i];
}

static void *member_thread(void *arg)
{
	int t = (int)(long)arg;

	for (int i = 0; i < MEMBERS; i++) {
		slots[t * MEMBERS + i] = 1;
		if (i == MEMBERS / 2)
			rbdl_join_error(&tj, -(t + 1));
		if (rbdl_join_put(&tj))
			finish();
	}
	return NULL;
}

START_TEST(test_threads)
{
	pthread_t th[THREADS];

	rbdl_join_start(&tj, THREADS * MEMBERS + 1);
	for (long t = 0; t < THREADS; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, member_thread,
						(void *)t), 0);
	if (rbdl_join_put(&tj))			/* the guard */
		finish();
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	ck_assert_int_eq(atomic_load(&finished), 1);
	ck_assert_int_eq(seen, THREADS * MEMBERS);
	ck_assert_int_lt(rbdl_join_result(&tj), 0);
	ck_assert_int_ge(rbdl_join_result(&tj), -THREADS);
}
END_TEST

static Suite *join_suite(void)
{
	Suite *s = suite_create("join");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_guard);
	tcase_add_test(tc, test_first_error);
	tcase_add_test(tc, test_unsent);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(join_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
