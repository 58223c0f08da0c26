/*
 * check_io.c - cluster tests of the data path's behaviour that only
 * librbdlite's own machinery can break: striped and data-pool round trips
 * with odd iovecs and sizes up to many MiB, several threads submitting to
 * one image, callbacks off the submitting thread and serialized, release
 * inside the callback, eventfd counts under load, flush as a barrier (and
 * after the callbacks of early-acknowledged writes), and
 * the snapshot context: a snapshot taken by the rbd CLI while librbdlite
 * holds the image open keeps its data (header watch + refresh).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rbd/librbd.h>
#include <rbdlite.h>

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

struct cbs {
	pthread_t submitter;
	atomic_int inline_calls;
	atomic_int calls;
	atomic_int in_cb;
	atomic_int overlap;
	atomic_int errors;
	int release;
};

static void cb(rbd_completion_t c, void *arg)
{
	struct cbs *s = arg;

	if (pthread_equal(pthread_self(), s->submitter))
		atomic_fetch_add(&s->inline_calls, 1);
	if (atomic_fetch_add(&s->in_cb, 1))
		atomic_fetch_add(&s->overlap, 1);
	if (rbd_aio_get_return_value(c) < 0)
		atomic_fetch_add(&s->errors, 1);
	atomic_fetch_sub(&s->in_cb, 1);
	atomic_fetch_add(&s->calls, 1);
	if (s->release)
		rbd_aio_release(c);
}

/* Write [off, off+len) with random iovec splits, read it back with other
 * splits, compare. */
static void roundtrip(rbd_image_t img, uint64_t off, size_t len, unsigned seed)
{
	char *w = malloc(len), *r = malloc(len);
	struct iovec iov[16];
	int n = 0;
	size_t pos = 0;
	rbd_completion_t c;

	th_fill(w, len, seed);
	memset(r, 0x5a, len);
	srand(seed);
	while (pos < len && n < 15) {
		size_t piece = 1 + (size_t)rand() % (len - pos);

		iov[n].iov_base = w + pos;
		iov[n++].iov_len = piece;
		pos += piece;
	}
	if (pos < len) {
		iov[n].iov_base = w + pos;
		iov[n++].iov_len = len - pos;
	}
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c), 0);
	ck_assert_int_eq(rbd_aio_writev(img, iov, n, off, c), 0);
	rbd_aio_wait_for_complete(c);
	ck_assert_int_eq(rbd_aio_get_return_value(c), 0);
	rbd_aio_release(c);

	n = 0;
	pos = 0;
	while (pos < len && n < 15) {
		size_t piece = 1 + (size_t)rand() % (len - pos);

		iov[n].iov_base = r + pos;
		iov[n++].iov_len = piece;
		pos += piece;
	}
	if (pos < len) {
		iov[n].iov_base = r + pos;
		iov[n++].iov_len = len - pos;
	}
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c), 0);
	ck_assert_int_eq(rbd_aio_readv(img, iov, n, off, c), 0);
	rbd_aio_wait_for_complete(c);
	ck_assert_int_eq(rbd_aio_get_return_value(c), (ssize_t)len);
	rbd_aio_release(c);
	ck_assert_msg(memcmp(w, r, len) == 0, "data mismatch at %llu+%zu",
		      (unsigned long long)off, len);
	free(w);
	free(r);
}

static void roundtrips(const char *extra)
{
	const char *name = th_name("rt");
	rbd_image_t img;
	static const struct { uint64_t off; size_t len; } cases[] = {
		{ 0, 1 }, { 4095, 2 }, { 65535, 65538 }, { (4 << 20) - 3, 7 },
		{ 1000, 3 << 20 }, { (8 << 20) + 12345, (9 << 20) + 777 },
		{ 123, 17 << 20 }, { (63 << 20), 1 << 20 },
	};

	th_create(&t, name, 64 << 20, extra);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		roundtrip(img, cases[i].off, cases[i].len, i + 1);
	rbd_close(img);
	/* What the rbd CLI exports is what librbdlite wrote last. */
	char *w = malloc(1 << 20);

	char path[256];
	FILE *f;

	th_fill(w, 1 << 20, 8);
	snprintf(path, sizeof(path), "/tmp/%s.exp", name);
	ck_assert_int_eq(th_sh("rbd export --no-progress %s/%s %s "
			       ">/dev/null 2>&1", t.pool, name, path), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	char *got = malloc(1 << 20);

	fseek(f, 63 << 20, SEEK_SET);
	ck_assert_uint_eq(fread(got, 1, 1 << 20, f), 1 << 20);
	fclose(f);
	unlink(path);
	ck_assert_mem_eq(got, w, 1 << 20);
	free(got);
	free(w);
	th_remove(&t, name);
}

/*
 * rbdlite_get_stats' size contract (rbdlite.h): a shorter struct gets its
 * prefix, a longer one is zero-filled past ours, NULL, 0 and bogus sizes
 * are -EINVAL and write nothing; the counters move with I/O.
 */
START_TEST(test_stats_contract)
{
	const char *name = th_name("stats");
	struct rbdlite_stats a, b;
	unsigned char big[sizeof(a) + 24], small[8];
	rbd_image_t img;
	char buf[4096];

	th_create(&t, name, 1 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	ck_assert_int_eq(rbdlite_get_stats(&a, sizeof(a)), 0);
	memset(buf, 7, sizeof(buf));
	ck_assert_int_eq(rbd_write(img, 0, sizeof(buf), buf), sizeof(buf));
	ck_assert_int_eq(rbd_read(img, 0, sizeof(buf), buf), sizeof(buf));
	ck_assert_int_eq(rbdlite_get_stats(&b, sizeof(b)), 0);
	ck_assert_uint_ge(b.ios_submitted, a.ios_submitted + 2);
	/* A completion is counted by its deliverer just after it woke the
	 * waiter: give the count a moment to catch up. */
	for (int i = 0; i < 500 && b.ios_completed < a.ios_completed + 2; i++) {
		usleep(10 * 1000);
		ck_assert_int_eq(rbdlite_get_stats(&b, sizeof(b)), 0);
	}
	ck_assert_uint_ge(b.ios_completed, a.ios_completed + 2);

	memset(big, 0xff, sizeof(big));
	ck_assert_int_eq(rbdlite_get_stats((struct rbdlite_stats *)big,
					   sizeof(big)), 0);
	for (size_t i = sizeof(a); i < sizeof(big); i++)
		ck_assert_uint_eq(big[i], 0);
	ck_assert_uint_ge(((struct rbdlite_stats *)big)->ios_submitted,
			  b.ios_submitted);

	/* A caller that knows only the first counter. */
	memset(small, 0xff, sizeof(small));
	ck_assert_int_eq(rbdlite_get_stats((struct rbdlite_stats *)small,
					   sizeof(small)), 0);
	uint64_t first;

	memcpy(&first, small, sizeof(first));
	ck_assert_uint_ge(first, b.ios_submitted);

	memset(big, 0xff, sizeof(big));
	ck_assert_int_eq(rbdlite_get_stats(NULL, sizeof(a)), -EINVAL);
	ck_assert_int_eq(rbdlite_get_stats((struct rbdlite_stats *)big, 0),
			 -EINVAL);
	ck_assert_int_eq(rbdlite_get_stats((struct rbdlite_stats *)big,
					   (size_t)-1), -EINVAL);
	ck_assert_int_eq(rbdlite_get_stats((struct rbdlite_stats *)big,
					   RBDLITE_STATS_SIZE_MAX + 1), -EINVAL);
	ck_assert_uint_eq(big[0], 0xff);	/* nothing written */
	ck_assert_int_eq(rbd_close(img), 0);
	th_remove(&t, name);
}
END_TEST

START_TEST(test_roundtrip_plain)
{
	roundtrips("--image-feature layering");
}
END_TEST

START_TEST(test_roundtrip_striped)
{
	roundtrips("--image-feature layering,striping --stripe-unit 64K "
		   "--stripe-count 4");
	roundtrips("--image-feature layering,striping --stripe-unit 8K "
		   "--stripe-count 5 --object-size 1M");
}
END_TEST

START_TEST(test_roundtrip_data_pool)
{
	char extra[256];

	snprintf(extra, sizeof(extra), "--image-feature layering --data-pool %s",
		 t.data_pool);
	roundtrips(extra);
}
END_TEST

START_TEST(test_callbacks_threads_and_events)
{
	enum { N = 400 };
	const char *name = th_name("cb");
	rbd_image_t img;
	struct cbs s = { .submitter = pthread_self(), .release = 1 };
	char *buf = malloc(N * 4096);
	int efd = eventfd(0, EFD_NONBLOCK);
	uint64_t total = 0, v;
	rbd_completion_t out[64];
	int polled = 0;

	th_create(&t, name, 16 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	ck_assert_int_eq(rbd_set_image_notification(img, efd,
						    EVENT_TYPE_EVENTFD), 0);
	th_fill(buf, N * 4096, 5);
	for (int i = 0; i < N; i++) {
		rbd_completion_t c;

		ck_assert_int_eq(rbd_aio_create_completion(&s, cb, &c), 0);
		if (i % 2)
			ck_assert_int_eq(rbd_aio_write(img, (uint64_t)i * 4096,
						       4096, buf + i * 4096, c),
					 0);
		else
			ck_assert_int_eq(rbd_aio_read(img, (uint64_t)i * 4096,
						      4096, buf + i * 4096, c),
					 0);
	}
	ck_assert_int_eq(rbd_flush(img), 0);
	while (atomic_load(&s.calls) < N)
		usleep(1000);
	/* Completions released inside their callbacks stay queued for the
	 * poller until polled; librbd's contract is that the event count
	 * equals the number of completions queued.  A batch's events are
	 * posted after its callbacks ran (librbd's order too), so the last
	 * ones may come a moment after the last callback: wait up to 10 s
	 * for all, then check that no more come. */
	int n = 0;

	for (int w = 0; w < 10000 && (total < N || polled < N); w++) {
		while (read(efd, &v, sizeof(v)) == sizeof(v))
			total += v;
		while ((n = rbd_poll_io_events(img, out, 64)) > 0)
			polled += n;
		if (total < N || polled < N)
			usleep(1000);
	}
	while (read(efd, &v, sizeof(v)) == sizeof(v))
		total += v;
	while ((n = rbd_poll_io_events(img, out, 64)) > 0)
		polled += n;
	ck_assert_int_eq(n, 0);
	ck_assert_uint_eq(total, N);
	ck_assert_int_eq(polled, N);
	ck_assert_int_eq(atomic_load(&s.inline_calls), 0);
	ck_assert_int_eq(atomic_load(&s.overlap), 0);
	ck_assert_int_eq(atomic_load(&s.errors), 0);
	rbd_close(img);
	close(efd);
	free(buf);
	th_remove(&t, name);
}
END_TEST

struct mt {
	rbd_image_t img;
	int id;
	int bad;
};

static void *mt_worker(void *arg)
{
	struct mt *m = arg;
	char w[8192], r[8192];

	for (int i = 0; i < 200; i++) {
		uint64_t off = ((uint64_t)m->id << 20) + (uint64_t)(i % 100) * 8192;
		rbd_completion_t c;

		th_fill(w, sizeof(w), (uint64_t)m->id * 1000 + i);
		if (rbd_aio_create_completion(NULL, NULL, &c) ||
		    rbd_aio_write(m->img, off, sizeof(w), w, c)) {
			m->bad++;
			continue;
		}
		rbd_aio_wait_for_complete(c);
		if (rbd_aio_get_return_value(c))
			m->bad++;
		rbd_aio_release(c);
		if (rbd_read(m->img, off, sizeof(r), r) != sizeof(r) ||
		    memcmp(w, r, sizeof(r)))
			m->bad++;
	}
	return NULL;
}

START_TEST(test_many_threads_one_image)
{
	const char *name = th_name("mt");
	rbd_image_t img;
	pthread_t th[8];
	struct mt m[8];

	th_create(&t, name, 16 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	for (int i = 0; i < 8; i++) {
		m[i] = (struct mt){ img, i, 0 };
		pthread_create(&th[i], NULL, mt_worker, &m[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(m[i].bad, 0);
	}
	rbd_close(img);
	th_remove(&t, name);
}
END_TEST

struct flushcheck {
	rbd_completion_t *earlier;
	int n;
	atomic_int incomplete_at_flush;
	atomic_int done;
};

static void flush_cb(rbd_completion_t c, void *arg)
{
	struct flushcheck *f = arg;
	(void)c;

	for (int i = 0; i < f->n; i++)
		if (!rbd_aio_is_complete(f->earlier[i]))
			atomic_fetch_add(&f->incomplete_at_flush, 1);
	atomic_store(&f->done, 1);
}

START_TEST(test_flush_is_a_barrier)
{
	enum { N = 64 };
	const char *name = th_name("flush");
	rbd_image_t img;
	rbd_completion_t w[N], fc;
	struct flushcheck f = { w, N, 0, 0 };
	char *buf = malloc(N * 65536);

	th_create(&t, name, 16 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	th_fill(buf, N * 65536, 9);
	for (int round = 0; round < 5; round++) {
		f.incomplete_at_flush = 0;
		f.done = 0;
		for (int i = 0; i < N; i++) {
			ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL,
								   &w[i]), 0);
			ck_assert_int_eq(rbd_aio_write(img, (uint64_t)i * 65536,
						       65536, buf + i * 65536,
						       w[i]), 0);
		}
		ck_assert_int_eq(rbd_aio_create_completion(&f, flush_cb, &fc),
				 0);
		ck_assert_int_eq(rbd_aio_flush(img, fc), 0);
		rbd_aio_wait_for_complete(fc);
		ck_assert_int_eq(rbd_aio_get_return_value(fc), 0);
		ck_assert_int_eq(atomic_load(&f.done), 1);
		ck_assert_int_eq(atomic_load(&f.incomplete_at_flush), 0);
		rbd_aio_release(fc);
		for (int i = 0; i < N; i++) {
			ck_assert_int_eq(rbd_aio_get_return_value(w[i]), 0);
			rbd_aio_release(w[i]);
		}
	}
	rbd_close(img);
	free(buf);
	th_remove(&t, name);
}
END_TEST

/* Callback order of test_flush_after_early_acks: each records its turn;
 * the first two hold the callback lane for a while. */
struct ordercheck {
	atomic_int next;
	int turn[4];
};

struct orderarg {
	struct ordercheck *o;
	int who, sleep_ms;
};

static void order_cb(rbd_completion_t c, void *arg)
{
	struct orderarg *a = arg;

	(void)c;
	a->o->turn[a->who] = atomic_fetch_add(&a->o->next, 1);
	usleep((useconds_t)a->sleep_ms * 1000);
}

/*
 * A flush's callback comes after those of the writes acknowledged early
 * before it, even when the callback lane is part-way through delivering
 * them: w0's callback keeps the lane busy while w1 and w2 are acknowledged
 * (so the lane takes both at once), w1's callback keeps it busy again
 * while the flush, submitted after every write finished, completes.
 * Callbacks run in the order w0, w1, w2, flush.
 */
START_TEST(test_flush_after_early_acks)
{
	const char *name = th_name("ackorder");
	struct ordercheck o = { 0 };
	struct orderarg args[4] = {
		{ &o, 0, 100 }, { &o, 1, 300 }, { &o, 2, 0 }, { &o, 3, 0 },
	};
	rbd_completion_t c[4];
	rbd_image_t img;
	char buf[4096];

	th_create(&t, name, 16 << 20, "--image-feature layering");
	ck_assert_int_eq(th_sh("rbd config image set %s/%s rbd_cache true",
			       t.pool, name), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	/* Write-around acknowledges early from the first flush on. */
	ck_assert_int_eq(rbd_flush(img), 0);
	th_fill(buf, sizeof(buf), 3);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(rbd_aio_create_completion(&args[i], order_cb,
							   &c[i]), 0);
	ck_assert_int_eq(rbd_aio_write(img, 0, sizeof(buf), buf, c[0]), 0);
	usleep(30 * 1000);	/* the lane is in w0's callback */
	ck_assert_int_eq(rbd_aio_write(img, 1 << 20, sizeof(buf), buf, c[1]), 0);
	ck_assert_int_eq(rbd_aio_write(img, 2 << 20, sizeof(buf), buf, c[2]), 0);
	usleep(200 * 1000);	/* the lane is in w1's callback */
	ck_assert_int_eq(rbd_aio_flush(img, c[3]), 0);
	for (int i = 0; i < 4; i++) {
		rbd_aio_wait_for_complete(c[i]);
		ck_assert_int_eq(rbd_aio_get_return_value(c[i]), 0);
	}
	/* wait_for_complete returns once the state is set, after the
	 * callback: every turn is recorded. */
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(o.turn[i] == i,
			      "callback %d ran %d-th (w0 %d, w1 %d, w2 %d, "
			      "flush %d)", i, o.turn[i], o.turn[0], o.turn[1],
			      o.turn[2], o.turn[3]);
		rbd_aio_release(c[i]);
	}
	rbd_close(img);
	th_remove(&t, name);
}
END_TEST

/*
 * The simple I/O scheduler (lib/io/sched.h), with write-around off so that
 * each write stays in flight until the OSD has it: N writes submitted back
 * to back to one object -- sequential 4 KiB ones, then unaligned ones of
 * odd sizes (up to 16 KiB, and every fourth up to 256 KiB: large held
 * writes go into the object's pending op instead of a run's buffer) that
 * overlap earlier writes and each other -- each buffer scribbled over as
 * its call returns.  Writes behind one in flight are
 * held, those that touch are merged into one RADOS write (sched_runs <
 * sched_held), overlapping ones are never reordered, and the image holds
 * exactly what applying the writes in submission order gives.  With
 * rbd_io_scheduler=none nothing is held.
 */
static void sched_round(const char *sched, uint64_t *held, uint64_t *runs)
{
	enum { N = 256, BS = 4096, SPAN = 1 << 20, SMALL = 16384,
	       MAXLEN = 256 << 10 };
	const char *name = th_name("sched");
	char *model = calloc(1, SPAN + MAXLEN), *got = malloc(SPAN + MAXLEN);
	char *buf = malloc(MAXLEN), warm[BS];
	rbd_completion_t c[N];
	struct rbdlite_stats a, b;
	rbd_image_t img;
	uint64_t seed = 7;

	th_create(&t, name, 16 << 20, "--image-feature layering");
	/* As image settings (librados does not know rbd_io_scheduler). */
	ck_assert_int_eq(th_sh("rbd config image set %s/%s rbd_cache false && "
			       "rbd config image set %s/%s rbd_io_scheduler %s",
			       t.pool, name, t.pool, name, sched), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	/* Nothing is held before ten ops finished (librbd's latency
	 * samples): warm up in another object. */
	th_fill(warm, BS, 1);
	for (int i = 0; i < 12; i++)
		ck_assert_int_eq(rbd_write(img, (8 << 20) + (uint64_t)i * BS,
					   BS, warm), BS);
	ck_assert_int_eq(rbdlite_get_stats(&a, sizeof(a)), 0);
	for (int i = 0; i < N; i++) {
		uint64_t off;
		size_t len;

		if (i < N / 2) {
			off = (uint64_t)i * BS;
			len = BS;
		} else {
			seed = seed * 6364136223846793005ULL + 1;
			off = (seed >> 20) % SPAN;
			len = 1 + (size_t)((seed >> 40) %
					   (i % 4 ? SMALL : MAXLEN));
		}
		th_fill(buf, len, 100 + (uint64_t)i);
		memcpy(model + off, buf, len);
		ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c[i]),
				 0);
		ck_assert_int_eq(rbd_aio_write(img, off, len, buf, c[i]), 0);
		memset(buf, 0xee, len);	/* the library keeps no pointer */
	}
	for (int i = 0; i < N; i++) {
		rbd_aio_wait_for_complete(c[i]);
		ck_assert_int_eq(rbd_aio_get_return_value(c[i]), 0);
		rbd_aio_release(c[i]);
	}
	ck_assert_int_eq(rbdlite_get_stats(&b, sizeof(b)), 0);
	*held = b.sched_held - a.sched_held;
	*runs = b.sched_runs - a.sched_runs;
	ck_assert_int_eq(rbd_read(img, 0, SPAN + MAXLEN, got), SPAN + MAXLEN);
	for (size_t i = 0; i < SPAN + MAXLEN; i++)
		if (got[i] != model[i])
			ck_abort_msg("scheduler %s: byte %zu is %d, wrote %d",
				     sched, i, got[i], model[i]);
	rbd_close(img);
	th_remove(&t, name);
	free(model);
	free(got);
	free(buf);
}

START_TEST(test_scheduler_holds_and_merges)
{
	uint64_t held, runs;

	sched_round("simple", &held, &runs);
	ck_assert_msg(held > 0 && runs < held,
		      "simple: %llu writes held, %llu runs sent",
		      (unsigned long long)held, (unsigned long long)runs);
	sched_round("none", &held, &runs);
	ck_assert_msg(held == 0 && runs == 0,
		      "none: %llu writes held, %llu runs sent",
		      (unsigned long long)held, (unsigned long long)runs);
}
END_TEST

START_TEST(test_snapshot_while_open_keeps_data)
{
	const char *name = th_name("snapctx");
	rbd_image_t img;
	char a[65536], b[65536], got[65536];
	char path[256];
	FILE *f;

	th_create(&t, name, 8 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	ck_assert_int_eq(rbd_write(img, 0, sizeof(a), a), sizeof(a));
	/* Another client snapshots while we hold the image open. */
	ck_assert_int_eq(th_sh("rbd snap create %s/%s@s1 >/dev/null 2>&1",
			       t.pool, name), 0);
	/* The header notification may take a moment to arrive. */
	for (int i = 0; i < 50; i++) {
		bool ex = false;

		rbd_snap_exists(img, "s1", &ex);
		if (ex)
			break;
		usleep(100000);
	}
	usleep(500000);
	ck_assert_int_eq(rbd_write(img, 0, sizeof(b), b), sizeof(b));
	ck_assert_int_eq(rbd_read(img, 0, sizeof(got), got), sizeof(got));
	ck_assert_mem_eq(got, b, sizeof(got));
	snprintf(path, sizeof(path), "/tmp/%s.snap", name);
	ck_assert_int_eq(th_sh("rbd export --no-progress %s/%s@s1 %s "
			       ">/dev/null 2>&1", t.pool, name, path), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(got, 1, sizeof(got), f), sizeof(got));
	fclose(f);
	unlink(path);
	/* The snapshot still holds A: our write carried the new snapc. */
	ck_assert_mem_eq(got, a, sizeof(got));
	rbd_close(img);
	th_sh("rbd snap purge --no-progress %s/%s >/dev/null 2>&1", t.pool,
	      name);
	th_remove(&t, name);
}
END_TEST

START_TEST(test_resize_by_other_client_seen)
{
	const char *name = th_name("resize");
	rbd_image_t img;
	uint64_t size = 0;
	char buf[4096];

	th_create(&t, name, 8 << 20, "--image-feature layering");
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	ck_assert_int_eq(th_sh("rbd resize --no-progress --size 16M %s/%s "
			       ">/dev/null 2>&1", t.pool, name), 0);
	for (int i = 0; i < 50 && size != (16 << 20); i++) {
		usleep(100000);
		ck_assert_int_eq(rbd_get_size(img, &size), 0);
	}
	ck_assert_uint_eq(size, 16 << 20);
	th_fill(buf, sizeof(buf), 11);
	ck_assert_int_eq(rbd_write(img, (12 << 20), sizeof(buf), buf),
			 sizeof(buf));
	rbd_close(img);
	th_remove(&t, name);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("IO");
	TCase *tc = tcase_create("io");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_stats_contract);
	tcase_add_test(tc, test_roundtrip_plain);
	tcase_add_test(tc, test_roundtrip_striped);
	tcase_add_test(tc, test_roundtrip_data_pool);
	tcase_add_test(tc, test_callbacks_threads_and_events);
	tcase_add_test(tc, test_many_threads_one_image);
	tcase_add_test(tc, test_flush_is_a_barrier);
	tcase_add_test(tc, test_flush_after_early_acks);
	tcase_add_test(tc, test_scheduler_holds_and_merges);
	tcase_add_test(tc, test_snapshot_while_open_keeps_data);
	tcase_add_test(tc, test_resize_by_other_client_seen);
	suite_add_tcase(s, tc);
	return th_run(s);
}
