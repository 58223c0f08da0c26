/*
 * check_ctl.c - unit tests of the control context (lib/core/ctl.c): lazy
 * threads that are gone after the last user, kicks that coalesce, a task
 * never running on two threads at once, timers in deadline order, retire
 * waiting for a running task and cancelling a timer, the two lanes not
 * waiting for each other, one-shot tasks that free themselves, and a
 * thousand tasks on one thread.  No cluster needed.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/ctl.h"

static int proc_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* /proc/self/task, once it settled: a joined thread can stay listed for a
 * moment (pthread_join returns when the kernel clears its tid, a little
 * before the task is unlisted). */
static int threads_settled(int want)
{
	int n = proc_threads();

	for (int i = 0; i < 2000 && n != want; i++) {
		sleep_ms(1);
		n = proc_threads();
	}
	return n;
}

/* Wait up to 5 s for *v to reach want. */
static bool wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 5000; i++) {
		if (atomic_load(v) >= want)
			return true;
		sleep_ms(1);
	}
	return false;
}

static void *nothing(void *arg)
{
	return arg;
}

/* The threads before the test: one thread is created and joined first,
 * so that a sanitizer's lazily started helper thread is counted. */
static int base_threads(void)
{
	pthread_t th;

	pthread_create(&th, NULL, nothing, NULL);
	pthread_join(th, NULL);
	sleep_ms(20);
	return proc_threads();
}

struct counter {
	struct rbdl_ctl_task t;
	atomic_int runs;
	atomic_int inside;
	atomic_int max_inside;
	atomic_int on_lane;
	int sleep_ms;
	uint64_t ran_at;
};

static void count_run(struct rbdl_ctl_task *t)
{
	struct counter *c = (struct counter *)t;
	int in = atomic_fetch_add(&c->inside, 1) + 1;

	if (in > atomic_load(&c->max_inside))
		atomic_store(&c->max_inside, in);
	if (rbdl_ctl_on_lane((enum rbdl_ctl_lane)t->lane))
		atomic_fetch_add(&c->on_lane, 1);
	if (c->sleep_ms)
		sleep_ms(c->sleep_ms);
	c->ran_at = rbdl_ctl_now_ns();
	atomic_fetch_sub(&c->inside, 1);
	atomic_fetch_add(&c->runs, 1);
}

START_TEST(test_lazy_threads_gone_after_last_put)
{
	int base = base_threads();
	struct counter c = { 0 };

	ck_assert_int_eq(rbdl_ctl_threads(), 0);
	rbdl_ctl_get();
	rbdl_ctl_get();
	ck_assert_int_eq(rbdl_ctl_threads(), 0);	/* no work, no thread */
	rbdl_ctl_task_init(&c.t, RBDL_CTL_INTERNAL, count_run);
	ck_assert_int_eq(rbdl_ctl_kick(&c.t), 0);
	ck_assert(wait_for(&c.runs, 1));
	ck_assert_int_eq(atomic_load(&c.on_lane), 1);
	ck_assert_int_eq(rbdl_ctl_threads(), 1);
	ck_assert_int_eq(threads_settled(base + 1), base + 1);
	ck_assert(!rbdl_ctl_on_lane(RBDL_CTL_INTERNAL));
	rbdl_ctl_task_retire(&c.t);
	rbdl_ctl_put();
	ck_assert_int_eq(rbdl_ctl_threads(), 1);	/* one user left */
	rbdl_ctl_put();
	ck_assert_int_eq(rbdl_ctl_threads(), 0);
	ck_assert_int_eq(threads_settled(base), base);
	/* A new user gets new threads. */
	rbdl_ctl_get();
	rbdl_ctl_task_init(&c.t, RBDL_CTL_INTERNAL, count_run);
	rbdl_ctl_kick(&c.t);
	ck_assert(wait_for(&c.runs, 2));
	rbdl_ctl_task_retire(&c.t);
	rbdl_ctl_put();
	ck_assert_int_eq(threads_settled(base), base);
}
END_TEST

START_TEST(test_kicks_coalesce)
{
	struct counter c = { .sleep_ms = 200 };

	rbdl_ctl_get();
	rbdl_ctl_task_init(&c.t, RBDL_CTL_INTERNAL, count_run);
	rbdl_ctl_kick(&c.t);
	while (atomic_load(&c.inside) == 0)
		sleep_ms(1);
	/* Running: these make it run exactly once more. */
	for (int i = 0; i < 100; i++)
		rbdl_ctl_kick(&c.t);
	ck_assert(wait_for(&c.runs, 2));
	sleep_ms(400);
	ck_assert_int_eq(atomic_load(&c.runs), 2);
	/* Queued behind a sleeper: kicks of a queued task coalesce too. */
	struct counter blocker = { .sleep_ms = 200 };

	rbdl_ctl_task_init(&blocker.t, RBDL_CTL_INTERNAL, count_run);
	c.sleep_ms = 0;
	rbdl_ctl_kick(&blocker.t);
	while (atomic_load(&blocker.inside) == 0)
		sleep_ms(1);
	for (int i = 0; i < 100; i++)
		rbdl_ctl_kick(&c.t);
	ck_assert(wait_for(&c.runs, 3));
	sleep_ms(100);
	ck_assert_int_eq(atomic_load(&c.runs), 3);
	rbdl_ctl_task_retire(&blocker.t);
	rbdl_ctl_task_retire(&c.t);
	rbdl_ctl_put();
}
END_TEST

static void *kicker(void *arg)
{
	struct counter *c = arg;

	for (int i = 0; i < 20000; i++)
		rbdl_ctl_kick(&c->t);
	return NULL;
}

START_TEST(test_never_concurrent_with_itself)
{
	enum { NT = 8 };
	struct counter c = { 0 };
	pthread_t th[NT];

	rbdl_ctl_get();
	rbdl_ctl_task_init(&c.t, RBDL_CTL_CALLBACK, count_run);
	for (int i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, kicker, &c);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	ck_assert(wait_for(&c.runs, 1));
	rbdl_ctl_task_retire(&c.t);
	int runs = atomic_load(&c.runs);

	ck_assert_int_eq(atomic_load(&c.max_inside), 1);
	ck_assert_int_le(runs, NT * 20000);
	/* Retired: later kicks do nothing. */
	rbdl_ctl_kick(&c.t);
	sleep_ms(50);
	ck_assert_int_eq(atomic_load(&c.runs), runs);
	ck_assert_int_le(rbdl_ctl_threads(), 1);
	rbdl_ctl_put();
}
END_TEST

START_TEST(test_timers_in_deadline_order)
{
	struct counter a = { 0 }, b = { 0 }, x = { 0 };
	uint64_t t0 = rbdl_ctl_now_ns();

	rbdl_ctl_get();
	rbdl_ctl_task_init(&a.t, RBDL_CTL_INTERNAL, count_run);
	rbdl_ctl_task_init(&b.t, RBDL_CTL_INTERNAL, count_run);
	rbdl_ctl_task_init(&x.t, RBDL_CTL_INTERNAL, count_run);
	rbdl_ctl_kick_at(&a.t, t0 + 300000000ull);
	rbdl_ctl_kick_at(&b.t, t0 + 100000000ull);
	/* The earlier deadline of two wins; a later one does not delay. */
	rbdl_ctl_kick_at(&a.t, t0 + 200000000ull);
	rbdl_ctl_kick_at(&a.t, t0 + 900000000ull);
	rbdl_ctl_kick_at(&x.t, t0 + 150000000ull);
	rbdl_ctl_task_retire(&x.t);	/* cancels its timer */
	ck_assert(wait_for(&a.runs, 1));
	ck_assert(wait_for(&b.runs, 1));
	ck_assert_uint_ge(b.ran_at, t0 + 100000000ull);
	ck_assert_uint_ge(a.ran_at, t0 + 200000000ull);
	ck_assert_uint_lt(a.ran_at, t0 + 800000000ull);
	ck_assert_uint_lt(b.ran_at, a.ran_at);
	sleep_ms(300);
	ck_assert_int_eq(atomic_load(&x.runs), 0);
	ck_assert_int_eq(atomic_load(&a.runs), 1);
	rbdl_ctl_task_retire(&a.t);
	rbdl_ctl_task_retire(&b.t);
	rbdl_ctl_put();
}
END_TEST

START_TEST(test_retire_waits_for_running_task)
{
	struct counter c = { .sleep_ms = 300 };

	rbdl_ctl_get();
	rbdl_ctl_task_init(&c.t, RBDL_CTL_INTERNAL, count_run);
	rbdl_ctl_kick(&c.t);
	while (atomic_load(&c.inside) == 0)
		sleep_ms(1);
	rbdl_ctl_task_retire(&c.t);
	ck_assert_int_eq(atomic_load(&c.runs), 1);
	ck_assert_int_eq(atomic_load(&c.inside), 0);
	rbdl_ctl_put();
}
END_TEST

/* A callback-lane task waiting for internal-lane work (a callback doing
 * a synchronous call that needs the lock's task) makes progress. */
struct pair {
	struct rbdl_ctl_task cb, in;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool internal_done;
	atomic_int cb_done;
	atomic_int cb_on_lane, in_on_lane;
};

static struct pair pr = { .mu = PTHREAD_MUTEX_INITIALIZER,
			  .cv = PTHREAD_COND_INITIALIZER };

static void pair_internal(struct rbdl_ctl_task *t)
{
	(void)t;
	atomic_store(&pr.in_on_lane, rbdl_ctl_on_lane(RBDL_CTL_INTERNAL));
	pthread_mutex_lock(&pr.mu);
	pr.internal_done = true;
	pthread_cond_broadcast(&pr.cv);
	pthread_mutex_unlock(&pr.mu);
}

static void pair_callback(struct rbdl_ctl_task *t)
{
	(void)t;
	atomic_store(&pr.cb_on_lane, rbdl_ctl_on_lane(RBDL_CTL_CALLBACK));
	rbdl_ctl_kick(&pr.in);
	pthread_mutex_lock(&pr.mu);
	while (!pr.internal_done)
		pthread_cond_wait(&pr.cv, &pr.mu);
	pthread_mutex_unlock(&pr.mu);
	atomic_store(&pr.cb_done, 1);
}

START_TEST(test_callback_lane_may_wait_for_internal)
{
	int base = base_threads();

	rbdl_ctl_get();
	rbdl_ctl_task_init(&pr.cb, RBDL_CTL_CALLBACK, pair_callback);
	rbdl_ctl_task_init(&pr.in, RBDL_CTL_INTERNAL, pair_internal);
	rbdl_ctl_kick(&pr.cb);
	ck_assert(wait_for(&pr.cb_done, 1));
	ck_assert_int_eq(atomic_load(&pr.cb_on_lane), 1);
	ck_assert_int_eq(atomic_load(&pr.in_on_lane), 1);
	ck_assert_int_eq(rbdl_ctl_threads(), 2);
	ck_assert_int_eq(threads_settled(base + 2), base + 2);
	rbdl_ctl_task_retire(&pr.cb);
	rbdl_ctl_task_retire(&pr.in);
	rbdl_ctl_put();
	ck_assert_int_eq(threads_settled(base), base);
}
END_TEST

/* One-shot jobs free themselves; the last one drops the last user from
 * the lane thread itself (rbd_aio_close of the last image). */
struct job {
	struct rbdl_ctl_task t;
	atomic_int *done;
	bool last;
};

static void job_run(struct rbdl_ctl_task *t)
{
	struct job *j = (struct job *)t;
	atomic_int *done = j->done;

	free(j);
	rbdl_ctl_put();
	atomic_fetch_add(done, 1);
}

START_TEST(test_oneshot_jobs_and_put_from_lane)
{
	enum { N = 50 };
	static atomic_int done;
	int base = base_threads();

	for (int i = 0; i < N; i++) {
		struct job *j = calloc(1, sizeof(*j));

		j->done = &done;
		rbdl_ctl_get();
		ck_assert_int_eq(rbdl_ctl_submit_once(&j->t, RBDL_CTL_CALLBACK,
						      job_run), 0);
	}
	ck_assert(wait_for(&done, N));
	/* The last put ran on the lane: the thread detached itself. */
	ck_assert_int_eq(threads_settled(base), base);
	ck_assert_int_eq(rbdl_ctl_threads(), 0);
}
END_TEST

START_TEST(test_thousand_tasks_one_thread)
{
	enum { N = 1000 };
	struct counter *c = calloc(N, sizeof(*c));
	int base = base_threads();

	rbdl_ctl_get();
	for (int i = 0; i < N; i++)
		rbdl_ctl_task_init(&c[i].t, RBDL_CTL_INTERNAL, count_run);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < N; i++)
			rbdl_ctl_kick(&c[i].t);
	for (int i = 0; i < N; i++)
		ck_assert(wait_for(&c[i].runs, 1));
	ck_assert_int_eq(threads_settled(base + 1), base + 1);
	for (int i = 0; i < N; i++)
		rbdl_ctl_task_retire(&c[i].t);
	rbdl_ctl_put();
	ck_assert_int_eq(threads_settled(base), base);
	free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("Control context");
	TCase *tc = tcase_create("ctl");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lazy_threads_gone_after_last_put);
	tcase_add_test(tc, test_kicks_coalesce);
	tcase_add_test(tc, test_never_concurrent_with_itself);
	tcase_add_test(tc, test_timers_in_deadline_order);
	tcase_add_test(tc, test_retire_waits_for_running_task);
	tcase_add_test(tc, test_callback_lane_may_wait_for_internal);
	tcase_add_test(tc, test_oneshot_jobs_and_put_from_lane);
	tcase_add_test(tc, test_thousand_tasks_one_thread);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
