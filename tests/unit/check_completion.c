/*
 * check_completion.c - unit tests of completion delivery (lib/completion.c)
 * without a cluster: completions are finished from several threads at once,
 * as librados' callback threads would, and the tests check librbd's
 * observable contract: each callback exactly once and never concurrently
 * for one image, callback before poll visibility, exactly one eventfd
 * increment per queued completion (batched writes carry the count), waits,
 * release inside the callback, double release ignored, bad arguments, and
 * ordering: per producer thread, callbacks and the poll queue follow the
 * order in which that thread completed its requests.
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/completion.h"
#include "core/slab.h"
#include "core/stats.h"

#define EV_EVENTFD 2
#define EV_PIPE 1

static struct rbdl_delivery *dl;

static void setup(void)
{
	dl = calloc(1, sizeof(*dl));
	ck_assert_ptr_nonnull(dl);
	ck_assert_int_eq(rbdl_delivery_init(dl), 0);
}

static void teardown(void)
{
	rbdl_delivery_wait_idle(dl);
	rbdl_delivery_destroy(dl);
	free(dl);
}

struct cbstate {
	atomic_int calls;
	atomic_int in_cb;
	atomic_int overlap;
	atomic_int seen_complete;
	int release_in_cb;
};

static void cb(void *h, void *arg)
{
	struct cbstate *st = arg;
	/* The callback gets the user's handle, as rbd_callback_t does. */
	struct rbdl_comp *c = rbdl_comp_from_user(h);

	ck_assert_ptr_nonnull(c);

	if (atomic_fetch_add(&st->in_cb, 1) != 0)
		atomic_fetch_add(&st->overlap, 1);
	/* rbd_aio_is_complete is already true inside the callback. */
	if (rbdl_comp_is_complete(c))
		atomic_fetch_add(&st->seen_complete, 1);
	usleep(50);
	atomic_fetch_sub(&st->in_cb, 1);
	atomic_fetch_add(&st->calls, 1);
	if (st->release_in_cb)
		rbdl_comp_release(c);
}

struct finisher {
	struct rbdl_comp **v;
	int from, to;
};

static void *finish_range(void *arg)
{
	struct finisher *f = arg;

	for (int i = f->from; i < f->to; i++)
		rbdl_comp_complete(f->v[i], i);
	return NULL;
}

/* Arm n completions, then finish them from nthreads threads at once. */
static void run_many(struct rbdl_comp **v, int n, int nthreads)
{
	pthread_t t[16];
	struct finisher f[16];

	for (int k = 0; k < nthreads; k++) {
		f[k] = (struct finisher){ v, n * k / nthreads,
					  n * (k + 1) / nthreads };
		ck_assert_int_eq(pthread_create(&t[k], NULL, finish_range,
						&f[k]), 0);
	}
	for (int k = 0; k < nthreads; k++)
		pthread_join(t[k], NULL);
}

START_TEST(test_callbacks_once_serialized)
{
	enum { N = 2000 };
	struct rbdl_comp **v = calloc(N, sizeof(*v));
	struct cbstate st = { 0 };

	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbdl_comp_create(&st, cb, &v[i]), 0);
		ck_assert_int_eq(rbdl_comp_arm(v[i], dl, true), 0);
	}
	run_many(v, N, 8);
	for (int i = 0; i < N; i++) {
		rbdl_comp_wait(v[i]);
		ck_assert(rbdl_comp_is_complete(v[i]));
		ck_assert_int_eq(v[i]->rval, i);
		rbdl_comp_release(v[i]);
	}
	ck_assert_int_eq(atomic_load(&st.calls), N);
	ck_assert_int_eq(atomic_load(&st.overlap), 0);
	ck_assert_int_eq(atomic_load(&st.seen_complete), N);
	free(v);
}
END_TEST

START_TEST(test_eventfd_counts_and_poll)
{
	enum { N = 3000 };
	struct rbdl_comp **v = calloc(N, sizeof(*v));
	void *out[64];
	struct cbstate st = { 0 };
	int efd = eventfd(0, EFD_NONBLOCK);
	uint64_t total = 0, cnt;
	int polled = 0;

	ck_assert_int_ge(efd, 0);
	ck_assert_int_eq(rbdl_delivery_set_notification(dl, efd,
							EV_EVENTFD), 0);
	/* A second registration is refused, as in librbd. */
	ck_assert_int_eq(rbdl_delivery_set_notification(dl, efd,
							EV_EVENTFD), -EINVAL);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbdl_comp_create(&st, cb, &v[i]), 0);
		ck_assert_int_eq(rbdl_comp_arm(v[i], dl, i % 10 != 0), 0);
	}
	run_many(v, N, 6);
	for (int i = 0; i < N; i++)
		rbdl_comp_wait(v[i]);
	while (read(efd, &cnt, sizeof(cnt)) == sizeof(cnt))
		total += cnt;
	for (;;) {
		int n = rbdl_delivery_poll(dl, out, 64);

		ck_assert_int_ge(n, 0);
		if (!n)
			break;
		for (int k = 0; k < n; k++) {
			struct rbdl_comp *c = rbdl_comp_from_user(out[k]);

			/* A live handle, whose callback ran before it became
			 * pollable. */
			ck_assert_ptr_nonnull(c);
			ck_assert(rbdl_comp_is_complete(c));
			ck_assert_int_ne(c->rval % 10, 0);
		}
		polled += n;
	}
	/* Exactly one increment per queued completion (9 in 10 are). */
	ck_assert_uint_eq(total, N - N / 10);
	ck_assert_int_eq(polled, N - N / 10);
	ck_assert_int_eq(atomic_load(&st.calls), N);
	for (int i = 0; i < N; i++)
		rbdl_comp_release(v[i]);
	close(efd);
	free(v);
}
END_TEST

START_TEST(test_pipe_one_byte_per_event)
{
	enum { N = 100 };
	struct rbdl_comp *v[N];
	void *out[N];
	struct cbstate st = { 0 };
	int p[2];
	char buf[4 * N];
	ssize_t got;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(rbdl_delivery_set_notification(dl, p[1],
							EV_PIPE), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbdl_comp_create(&st, cb, &v[i]), 0);
		ck_assert_int_eq(rbdl_comp_arm(v[i], dl, true), 0);
	}
	run_many(v, N, 4);
	for (int i = 0; i < N; i++)
		rbdl_comp_wait(v[i]);
	got = read(p[0], buf, sizeof(buf));
	ck_assert_int_eq(got, N);
	ck_assert_int_eq(rbdl_delivery_poll(dl, out, N), N);
	for (int i = 0; i < N; i++)
		rbdl_comp_release(v[i]);
	close(p[0]);
	close(p[1]);
}
END_TEST

START_TEST(test_batches_coalesce_wakeups)
{
	enum { N = 5000 };
	struct rbdl_comp **v = calloc(N, sizeof(*v));
	uint64_t before[RBDL_STAT_COUNT], after[RBDL_STAT_COUNT];
	int efd = eventfd(0, EFD_NONBLOCK);
	void *out[256];

	ck_assert_int_eq(rbdl_delivery_set_notification(dl, efd,
							EV_EVENTFD), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbdl_comp_create(NULL, NULL, &v[i]), 0);
		ck_assert_int_eq(rbdl_comp_arm(v[i], dl, true), 0);
	}
	rbdl_stats_read(before);
	run_many(v, N, 8);
	for (int i = 0; i < N; i++)
		rbdl_comp_wait(v[i]);
	rbdl_stats_read(after);
	uint64_t batches = after[RBDL_STAT_CALLBACK_BATCHES] -
			   before[RBDL_STAT_CALLBACK_BATCHES];
	uint64_t writes = after[RBDL_STAT_EVENTFD_WRITES] -
			  before[RBDL_STAT_EVENTFD_WRITES];

	/* One eventfd write per batch, never more than one per completion. */
	ck_assert_uint_eq(writes, batches);
	ck_assert_uint_le(batches, N);
	ck_assert_uint_ge(batches, 1);
	while (rbdl_delivery_poll(dl, out, 256) > 0)
		;
	for (int i = 0; i < N; i++)
		rbdl_comp_release(v[i]);
	close(efd);
	free(v);
}
END_TEST

START_TEST(test_release_inside_callback)
{
	enum { N = 500 };
	struct rbdl_comp *v[N];
	void *h[N];
	struct cbstate st = { .release_in_cb = 1 };

	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbdl_comp_create(&st, cb, &v[i]), 0);
		ck_assert_int_eq(rbdl_comp_arm(v[i], dl, false), 0);
		h[i] = rbdl_comp_handle(v[i]);
		ck_assert_ptr_eq(rbdl_comp_from_user(h[i]), v[i]);
	}
	run_many(v, N, 4);
	rbdl_delivery_wait_idle(dl);
	ck_assert_int_eq(atomic_load(&st.calls), N);
	/* Every object went back to the slab. */
	for (int i = 0; i < N; i++)
		ck_assert_ptr_null(rbdl_comp_from_user(h[i]));
}
END_TEST

static void *waiter(void *arg)
{
	rbdl_comp_wait(arg);
	return (void *)(intptr_t)rbdl_comp_is_complete(arg);
}

START_TEST(test_wait_from_other_thread)
{
	struct rbdl_comp *c;
	pthread_t t[3];

	ck_assert_int_eq(rbdl_comp_create(NULL, NULL, &c), 0);
	ck_assert_int_eq(rbdl_comp_arm(c, dl, false), 0);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, waiter, c);
	usleep(20000);
	ck_assert(!rbdl_comp_is_complete(c));
	rbdl_comp_complete(c, 7);
	for (int i = 0; i < 3; i++) {
		void *r;

		pthread_join(t[i], &r);
		ck_assert_ptr_eq(r, (void *)1);
	}
	ck_assert_int_eq(c->rval, 7);
	rbdl_comp_release(c);
}
END_TEST

START_TEST(test_single_shot_and_double_release)
{
	struct rbdl_comp *c;
	void *h;

	ck_assert_int_eq(rbdl_comp_create(NULL, NULL, &c), 0);
	h = rbdl_comp_handle(c);
	ck_assert_int_eq(rbdl_comp_arm(c, dl, false), 0);
	/* A completion carries one operation only. */
	ck_assert_int_eq(rbdl_comp_arm(c, dl, false), -EINVAL);
	rbdl_comp_complete(c, 0);
	rbdl_comp_wait(c);
	ck_assert_int_eq(rbdl_comp_arm(c, dl, false), -EINVAL);
	rbdl_comp_release(c);
	/* The second release is detected and ignored, not a crash. */
	ck_assert_ptr_null(rbdl_comp_from_user(h));
	ck_assert_ptr_null(rbdl_comp_from_user(NULL));
	/* Also once every completion is back and the caches were trimmed
	 * (as rbd_close trims them): the handle's memory stays mapped. */
	rbdl_slab_trim();
	ck_assert_ptr_null(rbdl_comp_from_user(h));
}
END_TEST

/*
 * A handle kept past its release does not name the completion that now
 * uses the same memory: the slab hands the freed object straight back
 * (LIFO), and a second release of the old handle must leave the new
 * completion alone.
 */
START_TEST(test_stale_handle_after_reuse)
{
	struct rbdl_comp *a, *b;
	void *ha, *hb;
	int same = 0;

	for (int round = 0; round < 64; round++) {
		ck_assert_int_eq(rbdl_comp_create(NULL, NULL, &a), 0);
		ha = rbdl_comp_handle(a);
		rbdl_comp_release(a);
		ck_assert_int_eq(rbdl_comp_create(NULL, NULL, &b), 0);
		hb = rbdl_comp_handle(b);
		same += a == b;
		ck_assert_ptr_ne(ha, hb);
		ck_assert_ptr_null(rbdl_comp_from_user(ha));
		ck_assert_ptr_eq(rbdl_comp_from_user(hb), b);
		/* The new completion still works end to end. */
		ck_assert_int_eq(rbdl_comp_arm(b, dl, false), 0);
		rbdl_comp_complete(b, 5);
		rbdl_comp_wait(b);
		ck_assert_ptr_eq(rbdl_comp_from_user(hb), b);
		ck_assert_int_eq(b->rval, 5);
		rbdl_comp_release(b);
		ck_assert_ptr_null(rbdl_comp_from_user(hb));
	}
	/* The case this guards is the reused one: it must have happened. */
	ck_assert_int_gt(same, 0);
}
END_TEST

START_TEST(test_bad_arguments)
{
	void *out[1];

	ck_assert_int_eq(rbdl_delivery_poll(dl, out, 0), -EINVAL);
	ck_assert_int_eq(rbdl_delivery_poll(dl, out, -1), -EINVAL);
	ck_assert_int_eq(rbdl_delivery_poll(dl, out, 1), 0);
	ck_assert_int_eq(rbdl_delivery_set_notification(dl, 0, 0),
			 -EINVAL);
	ck_assert_int_eq(rbdl_delivery_set_notification(dl, 0, 3),
			 -EINVAL);
}
END_TEST

/*
 * Ordering.  The deliverer drains the image's done stack and reverses each
 * batch, so what one producer thread completes in a given order is called
 * back, and queued for rbd_poll_io_events(), in that order; producers
 * interleave arbitrarily.  The log below is written without atomics from
 * inside the callbacks: with callbacks serialized per image (the deliverer
 * hand-over is a seq_cst exchange/store pair) TSan sees every write ordered;
 * a second concurrent deliverer would be reported as a data race.
 */
enum { ORD_PRODUCERS = 8, ORD_PER = 600, ORD_N = ORD_PRODUCERS * ORD_PER };

struct ordlog {
	int log[ORD_N];		/* callback order: producer * ORD_PER + seq */
	int n;			/* plain: only touched by callbacks */
	atomic_int in_cb;
	atomic_int overlap;
	int ids[ORD_N];
};

static struct ordlog *ord_log;

static void ord_cb(void *c, void *arg)
{
	int *id = arg;
	struct ordlog *L = ord_log;

	(void)c;
	if (atomic_fetch_add(&L->in_cb, 1) != 0)
		atomic_fetch_add(&L->overlap, 1);
	L->log[L->n++] = *id;
	/* a slow callback now and then: producers pile up behind the
	 * deliverer, so batches hold several completions of one producer */
	if (L->n % 16 == 0)
		usleep(100);
	atomic_fetch_sub(&L->in_cb, 1);
}

struct producer {
	struct rbdl_comp **v;	/* this producer's completions, in order */
	pthread_barrier_t *go;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	pthread_barrier_wait(p->go);
	for (int i = 0; i < ORD_PER; i++) {
		rbdl_comp_complete(p->v[i], i);
		if (i % 64 == 0)
			sched_yield();	/* vary the interleaving */
	}
	return NULL;
}

START_TEST(test_per_producer_order)
{
	struct ordlog *L = calloc(1, sizeof(*L));
	struct rbdl_comp **v = calloc(ORD_N, sizeof(*v));
	void **polled = calloc(ORD_N, sizeof(*polled));
	int *seen_cb = calloc(ORD_N, sizeof(int));
	int *seen_poll = calloc(ORD_N, sizeof(int));
	int last[ORD_PRODUCERS], np = 0, r;
	struct producer pr[ORD_PRODUCERS];
	pthread_t t[ORD_PRODUCERS];
	pthread_barrier_t go;
	int efd = eventfd(0, EFD_NONBLOCK);
	uint64_t events = 0, ev;

	ck_assert_ptr_nonnull(L);
	ord_log = L;
	ck_assert_int_ge(efd, 0);
	ck_assert_int_eq(rbdl_delivery_set_notification(dl, efd,
							EV_EVENTFD), 0);
	for (int i = 0; i < ORD_N; i++) {
		L->ids[i] = i;
		ck_assert_int_eq(rbdl_comp_create(&L->ids[i], ord_cb, &v[i]), 0);
		ck_assert_int_eq(rbdl_comp_arm(v[i], dl, true), 0);
	}
	pthread_barrier_init(&go, NULL, ORD_PRODUCERS);
	for (int k = 0; k < ORD_PRODUCERS; k++) {
		pr[k] = (struct producer){ v + k * ORD_PER, &go };
		ck_assert_int_eq(pthread_create(&t[k], NULL, produce, &pr[k]), 0);
	}
	for (int k = 0; k < ORD_PRODUCERS; k++)
		pthread_join(t[k], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < ORD_N; i++)
		rbdl_comp_wait(v[i]);

	/* callbacks: each exactly once, never overlapping, per-producer FIFO */
	ck_assert_int_eq(atomic_load(&L->overlap), 0);
	ck_assert_int_eq(L->n, ORD_N);
	for (int k = 0; k < ORD_PRODUCERS; k++)
		last[k] = -1;
	for (int i = 0; i < ORD_N; i++) {
		int id = L->log[i], k = id / ORD_PER, seq = id % ORD_PER;

		ck_assert_int_eq(seen_cb[id]++, 0);
		ck_assert_msg(seq > last[k], "producer %d: completion %d called "
			      "back after %d", k, seq, last[k]);
		last[k] = seq;
	}
	/* poll queue: the same order as the callbacks, each exactly once */
	while ((r = rbdl_delivery_poll(dl, polled + np, 64)) > 0) {
		ck_assert_int_le(np + r, ORD_N);
		np += r;
	}
	ck_assert_int_eq(np, ORD_N);
	for (int i = 0; i < np; i++) {
		struct rbdl_comp *c = rbdl_comp_from_user(polled[i]);
		int id;

		ck_assert_ptr_nonnull(c);
		id = *(int *)c->arg;
		ck_assert_int_eq(seen_poll[id]++, 0);
		ck_assert_int_eq(id, L->log[i]);
		ck_assert_int_eq(c->rval, id % ORD_PER);
	}
	while (read(efd, &ev, sizeof(ev)) == sizeof(ev))
		events += ev;
	ck_assert_uint_eq(events, ORD_N);
	for (int i = 0; i < ORD_N; i++)
		rbdl_comp_release(v[i]);
	close(efd);
	free(seen_poll);
	free(seen_cb);
	free(polled);
	free(v);
	free(L);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("Completion");
	TCase *tc = tcase_create("delivery");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_callbacks_once_serialized);
	tcase_add_test(tc, test_eventfd_counts_and_poll);
	tcase_add_test(tc, test_pipe_one_byte_per_event);
	tcase_add_test(tc, test_batches_coalesce_wakeups);
	tcase_add_test(tc, test_release_inside_callback);
	tcase_add_test(tc, test_wait_from_other_thread);
	tcase_add_test(tc, test_single_shot_and_double_release);
	tcase_add_test(tc, test_stale_handle_after_reuse);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_per_producer_order);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
