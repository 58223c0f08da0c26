/*
 * check_threads.c - cluster tests of the shared control context: 100
 * images with rbd's default features open read-write in one process, each
 * with an update watch and written (so each owns its exclusive lock), add
 * at most two threads; closing them (rbd_aio_close) gives every thread
 * back; and an update-watch callback that makes a synchronous write
 * needing a lock hand-over from another handle completes (the callback
 * lane waits while the internal lane does the hand-over); and aio
 * submissions while a header refresh is due and cannot finish (OSDs
 * paused) return at once and run in order after it; and a refresh that
 * turns the I/O scheduler or write-around off lets no later write
 * overtake one they hold back; nor does a write submitted as soon as the
 * exclusive lock is ours overtake the writes parked for it, nor a write
 * a discard waiting for its object-map update.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
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

/* librados' own threads come and go a little (messenger workers are
 * fixed, but a finisher may start late): settle before counting. */
static int settled_threads(void)
{
	int n = proc_threads();

	for (int i = 0; i < 20; i++) {
		usleep(50 * 1000);
		int m = proc_threads();

		if (m == n)
			break;
		n = m;
	}
	return n;
}

static atomic_int updates;

static void count_update(void *arg)
{
	(void)arg;
	atomic_fetch_add(&updates, 1);
}

START_TEST(test_many_images_two_threads)
{
	enum { N = 100 };
	static rbd_image_t img[N];
	static uint64_t handle[N];
	char names[N][64];
	char data[4096];
	int order = 22, base, peak;

	th_fill(data, sizeof(data), 3);
	/* Default features (rbd_default_features): layering, exclusive-lock,
	 * object-map, fast-diff, deep-flatten. */
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "%s", th_name("many"));
		ck_assert_int_eq(rbd_create(t.io, names[i], 8 << 20, &order), 0);
	}
	/* A first open and close warms librados up (its lazily started
	 * threads are not ours to count). */
	ck_assert_int_eq(rbd_open(t.io, names[0], &img[0], NULL), 0);
	ck_assert_int_eq(rbd_write(img[0], 0, sizeof(data), data),
			 sizeof(data));
	ck_assert_int_eq(rbd_close(img[0]), 0);
	base = settled_threads();
	for (int i = 0; i < N; i++) {
		uint64_t features = 0;

		ck_assert_int_eq(rbd_open(t.io, names[i], &img[i], NULL), 0);
		ck_assert_int_eq(rbd_get_features(img[i], &features), 0);
		ck_assert(features & RBD_FEATURE_EXCLUSIVE_LOCK);
		ck_assert_int_eq(rbd_update_watch(img[i], &handle[i],
						  count_update, NULL), 0);
		ck_assert_int_eq(rbd_write(img[i], (uint64_t)i * 4096,
					   sizeof(data), data),
				 sizeof(data));
	}
	for (int i = 0; i < N; i++) {
		int owner = 0;

		ck_assert_int_eq(rbd_is_exclusive_lock_owner(img[i], &owner),
				 0);
		ck_assert_int_eq(owner, 1);
	}
	/* A header update on every image: every callback runs. */
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(rbd_resize(img[i], 16 << 20), 0);
	for (int i = 0; i < 300 && atomic_load(&updates) < N; i++)
		usleep(100 * 1000);
	ck_assert_int_ge(atomic_load(&updates), N);
	peak = settled_threads();
	printf("threads: %d before, %d with %d images open\n", base, peak, N);
	ck_assert_msg(peak <= base + 2,
		      "%d images open added %d threads (at most 2 allowed)", N,
		      peak - base);
	/* Close them all without blocking; every completion fires. */
	rbd_completion_t c[N];

	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbd_update_unwatch(img[i], handle[i]), 0);
		ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c[i]),
				 0);
		ck_assert_int_eq(rbd_aio_close(img[i], c[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbd_aio_wait_for_complete(c[i]), 0);
		ck_assert_int_eq(rbd_aio_get_return_value(c[i]), 0);
		rbd_aio_release(c[i]);
	}
	int after = settled_threads();

	ck_assert_msg(after <= base,
		      "%d threads left after closing every image",
		      after - base);
	/* The data is there, and nobody holds a lock any more. */
	for (int i = 0; i < N; i++) {
		char back[4096];

		ck_assert_int_eq(rbd_open_read_only(t.io, names[i], &img[i],
						    NULL),
				 0);
		ck_assert_int_eq(rbd_read(img[i], (uint64_t)i * 4096,
					  sizeof(back), back),
				 sizeof(back));
		ck_assert_mem_eq(back, data, sizeof(back));
		ck_assert_int_eq(rbd_close(img[i]), 0);
		ck_assert_int_eq(th_sh("rbd lock ls %s/%s | grep -q auto",
				       t.pool, names[i]) == 0,
				 0);
		ck_assert_int_eq(rbd_remove(t.io, names[i]), 0);
	}
}
END_TEST

/* The callback writes through a handle whose lock another handle holds. */
struct cbw {
	rbd_image_t img;
	atomic_int calls;
	atomic_long result;
};

static void write_in_callback(void *arg)
{
	struct cbw *w = arg;
	char data[4096];

	if (atomic_fetch_add(&w->calls, 1) != 0)
		return;
	memset(data, 0x5a, sizeof(data));
	atomic_store(&w->result, (long)rbd_write(w->img, 0, sizeof(data),
						  data));
}

START_TEST(test_callback_sync_write_takes_lock_over)
{
	const char *name = th_name("cbwrite");
	rbd_image_t a, b;
	struct cbw w = { 0 };
	uint64_t h;
	char data[4096], back[4096];
	int order = 22, owner = 0;

	atomic_init(&w.result, -1000);
	ck_assert_int_eq(rbd_create(t.io, name, 8 << 20, &order), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &a, NULL), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &b, NULL), 0);
	memset(data, 0x11, sizeof(data));
	ck_assert_int_eq(rbd_write(b, 0, sizeof(data), data), sizeof(data));
	ck_assert_int_eq(rbd_is_exclusive_lock_owner(b, &owner), 0);
	ck_assert_int_eq(owner, 1);
	w.img = a;
	ck_assert_int_eq(rbd_update_watch(a, &h, write_in_callback, &w), 0);
	/* A header update from b: a's callback writes, so the lock moves
	 * from b to a while the callback waits. */
	ck_assert_int_eq(rbd_snap_create(b, "s1"), 0);
	for (int i = 0; i < 300 && atomic_load(&w.result) == -1000; i++)
		usleep(100 * 1000);
	ck_assert_int_eq(atomic_load(&w.result), sizeof(data));
	ck_assert_int_eq(rbd_is_exclusive_lock_owner(a, &owner), 0);
	ck_assert_int_eq(owner, 1);
	ck_assert_int_eq(rbd_read(b, 0, sizeof(back), back), sizeof(back));
	memset(data, 0x5a, sizeof(data));
	ck_assert_mem_eq(back, data, sizeof(back));
	ck_assert_int_eq(rbd_update_unwatch(a, h), 0);
	ck_assert_int_eq(rbd_close(a), 0);
	ck_assert_int_eq(rbd_snap_remove(b, "s1"), 0);
	ck_assert_int_eq(rbd_close(b), 0);
	ck_assert_int_eq(rbd_remove(t.io, name), 0);
}
END_TEST

/*
 * A fault the test injects and undoes itself (OSDs paused, a pool mapped
 * to no OSD): the watchdog undoes it after 60 s if the test did not, or a
 * submission that waits for it would never return.
 */
static atomic_int watchdog_fired, watchdog_stop;
static char watchdog_undo[256];

static void *watchdog(void *arg)
{
	(void)arg;
	for (int i = 0; i < 600 && !atomic_load(&watchdog_stop); i++)
		usleep(100 * 1000);
	if (!atomic_load(&watchdog_stop)) {
		atomic_store(&watchdog_fired, 1);
		th_sh("%s", watchdog_undo);
	}
	return NULL;
}

/* Inject the fault (shell command cause) with the watchdog armed to run
 * undo; the client acts on it once it has the map that says so. */
static void fault_begin(pthread_t *wd, const char *cause, const char *undo)
{
	snprintf(watchdog_undo, sizeof(watchdog_undo), "%s", undo);
	atomic_store(&watchdog_stop, 0);
	atomic_store(&watchdog_fired, 0);
	pthread_create(wd, NULL, watchdog, NULL);
	ck_assert_int_eq(th_sh("%s", cause), 0);
	ck_assert_int_eq(rados_wait_for_latest_osdmap(t.cluster), 0);
}

/* Undo the fault; the watchdog never had to. */
static void fault_end(pthread_t wd)
{
	ck_assert_int_eq(atomic_load(&watchdog_fired), 0);
	ck_assert_int_eq(th_sh("%s", watchdog_undo), 0);
	atomic_store(&watchdog_stop, 1);
	pthread_join(wd, NULL);
	ck_assert_int_eq(atomic_load(&watchdog_fired), 0);
}

#define OSD_PAUSE "ceph osd pause >/dev/null 2>&1"
#define OSD_UNPAUSE "ceph osd unpause >/dev/null 2>&1"

static atomic_int header_updates;

static void note_update(void *arg)
{
	(void)arg;
	atomic_fetch_add(&header_updates, 1);
}

/*
 * A refresh is due (another handle grew the image) and cannot finish (the
 * OSDs are paused): rbd_aio_write, rbd_aio_writev and rbd_aio_flush return
 * at once, nothing completes while the pause lasts, and after it the
 * writes land in order past the old end (they saw the new size), and the
 * flush completes after them.
 */
START_TEST(test_submit_during_refresh_does_not_wait)
{
	const char *name = th_name("qrefresh");
	rbd_image_t a, b;
	rbd_completion_t w1, w2, fl;
	char x[4096], y[4096], back[4096];
	struct iovec iov[2] = { { y, 2048 }, { y + 2048, 2048 } };
	uint64_t h, off = 12 << 20;	/* past the old 8 MiB end */
	int order = 22;
	pthread_t wd;

	ck_assert_int_eq(rbd_create(t.io, name, 8 << 20, &order), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &a, NULL), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &b, NULL), 0);
	ck_assert_int_eq(rbd_update_watch(a, &h, note_update, NULL), 0);
	memset(x, 'x', sizeof(x));
	memset(y, 'y', sizeof(y));
	ck_assert_int_eq(rbd_write(a, 0, sizeof(x), x), sizeof(x));
	ck_assert_int_eq(rbd_resize(b, 16 << 20), 0);
	for (int i = 0; i < 300 && !atomic_load(&header_updates); i++)
		usleep(100 * 1000);
	ck_assert_int_ge(atomic_load(&header_updates), 1);
	fault_begin(&wd, OSD_PAUSE, OSD_UNPAUSE);
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &w1), 0);
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &w2), 0);
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &fl), 0);
	ck_assert_int_eq(rbd_aio_write(a, off, sizeof(x), x, w1), 0);
	ck_assert_int_eq(rbd_aio_writev(a, iov, 2, off, w2), 0);
	ck_assert_int_eq(rbd_aio_flush(a, fl), 0);
	/* Returned although the refresh cannot have finished. */
	usleep(500 * 1000);
	ck_assert_int_eq(rbd_aio_is_complete(w1), 0);
	ck_assert_int_eq(rbd_aio_is_complete(w2), 0);
	ck_assert_int_eq(rbd_aio_is_complete(fl), 0);
	fault_end(wd);
	ck_assert_int_eq(rbd_aio_wait_for_complete(fl), 0);
	ck_assert_int_eq(rbd_aio_get_return_value(fl), 0);
	/* The flush came after both writes. */
	ck_assert_int_eq(rbd_aio_is_complete(w1), 1);
	ck_assert_int_eq(rbd_aio_is_complete(w2), 1);
	ck_assert_int_eq(rbd_aio_get_return_value(w1), 0);
	ck_assert_int_eq(rbd_aio_get_return_value(w2), 0);
	rbd_aio_release(w1);
	rbd_aio_release(w2);
	rbd_aio_release(fl);
	ck_assert_int_eq(rbd_read(b, off, sizeof(back), back), sizeof(back));
	ck_assert_mem_eq(back, y, sizeof(back));
	ck_assert_int_eq(rbd_update_unwatch(a, h), 0);
	ck_assert_int_eq(rbd_close(a), 0);
	ck_assert_int_eq(rbd_close(b), 0);
	ck_assert_int_eq(rbd_remove(t.io, name), 0);
}
END_TEST

/* The poller of test_parked_writes_not_overtaken: once a owns the lock,
 * a write over the last parked one. */
struct overtake {
	rbd_image_t img;
	uint64_t off;
	rbd_completion_t c;
	atomic_int state;	/* 0 polling, 1 submitted, -1 gave up */
};

static void *overtake_poll(void *arg)
{
	struct overtake *o = arg;
	char z[4096];
	int owner = 0;

	memset(z, 'Z', sizeof(z));
	for (time_t t0 = time(NULL); !owner && time(NULL) < t0 + 30;)
		if (rbd_is_exclusive_lock_owner(o->img, &owner) < 0)
			break;
	if (!owner || rbd_aio_write(o->img, o->off, sizeof(z), z, o->c) != 0) {
		atomic_store(&o->state, -1);
		return NULL;
	}
	atomic_store(&o->state, 1);
	return NULL;
}

/*
 * Writes parked for the exclusive lock (another handle owns it; the OSDs
 * paused while they park) are resumed in order once the lock is ours,
 * and a write submitted as soon as the lock is ours -- while the parked
 * ones are still being resumed -- does not overtake them: it overlaps
 * the last parked one and its data is what lands (the cache off, so
 * nothing but dispatch order orders them).
 */
START_TEST(test_parked_writes_not_overtaken)
{
	enum { N = 2000, BS = 4096 };
	const char *name = th_name("overtake");
	struct overtake o = { 0 };
	rbd_completion_t c[N];
	rbd_image_t a, b;
	char *buf = malloc(BS), back[BS], z[BS];
	int order = 22, owner = 0;
	pthread_t wd, poller;

	ck_assert_int_eq(rbd_create(t.io, name, 16 << 20, &order), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &b, NULL), 0);
	ck_assert_int_eq(rbd_metadata_set(b, "conf_rbd_cache", "false"), 0);
	memset(buf, 0x11, BS);
	ck_assert_int_eq(rbd_write(b, 0, BS, buf), BS);
	ck_assert_int_eq(rbd_is_exclusive_lock_owner(b, &owner), 0);
	ck_assert_int_eq(owner, 1);
	ck_assert_int_eq(rbd_open(t.io, name, &a, NULL), 0);

	fault_begin(&wd, OSD_PAUSE, OSD_UNPAUSE);
	for (int i = 0; i < N; i++) {
		memset(buf, 1 + i % 200, BS);
		ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c[i]),
				 0);
		ck_assert_int_eq(rbd_aio_write(a, (uint64_t)i * BS, BS, buf,
					       c[i]), 0);
	}
	ck_assert_int_eq(rbd_is_exclusive_lock_owner(a, &owner), 0);
	ck_assert_int_eq(owner, 0);
	o.img = a;
	o.off = (uint64_t)(N - 1) * BS;
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &o.c), 0);
	pthread_create(&poller, NULL, overtake_poll, &o);
	fault_end(wd);
	pthread_join(poller, NULL);
	ck_assert_int_eq(atomic_load(&o.state), 1);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rbd_aio_wait_for_complete(c[i]), 0);
		ck_assert_int_eq(rbd_aio_get_return_value(c[i]), 0);
		rbd_aio_release(c[i]);
	}
	ck_assert_int_eq(rbd_aio_wait_for_complete(o.c), 0);
	ck_assert_int_eq(rbd_aio_get_return_value(o.c), 0);
	rbd_aio_release(o.c);
	memset(z, 'Z', sizeof(z));
	ck_assert_int_eq(rbd_read(a, o.off, BS, back), BS);
	ck_assert_mem_eq(back, z, BS);
	ck_assert_int_eq(rbd_read(a, 0, BS, back), BS);
	ck_assert_int_eq((unsigned char)back[0], 1);
	ck_assert_int_eq(rbd_close(a), 0);
	ck_assert_int_eq(rbd_close(b), 0);
	ck_assert_int_eq(rbd_remove(t.io, name), 0);
	free(buf);
}
END_TEST

static uint64_t sched_runs(void)
{
	struct rbdlite_stats st;

	ck_assert_int_eq(rbdlite_get_stats(&st, sizeof(st)), 0);
	return st.sched_runs;
}

/* A pool of the test's own, prefix-<pid> in pool[64], which pool_block
 * can map to no OSD (a CRUSH rule over an empty root): its ops then wait
 * while the other pools work. */
static void pool_create(char pool[64], const char *prefix)
{
	snprintf(pool, 64, "%s-%d", prefix, (int)getpid());
	ck_assert_int_eq(th_sh("ceph osd crush add-bucket qnowhere root "
			       ">/dev/null 2>&1 && ceph osd crush rule "
			       "create-replicated qnowhere qnowhere osd "
			       ">/dev/null 2>&1 && ceph osd pool create %s 8 8 "
			       ">/dev/null 2>&1 && ceph osd pool application "
			       "enable %s rbd >/dev/null 2>&1",
			       pool, pool),
			 0);
}

static void pool_remove(const char *pool)
{
	ck_assert_int_eq(th_sh("ceph osd pool rm %s %s "
			       "--yes-i-really-really-mean-it >/dev/null 2>&1",
			       pool, pool),
			 0);
}

/* Map pool to no OSD until fault_end(*wd). */
static void pool_block(pthread_t *wd, const char *pool)
{
	char cause[160], undo[160];

	snprintf(cause, sizeof(cause),
		 "ceph osd pool set %s crush_rule qnowhere >/dev/null 2>&1",
		 pool);
	snprintf(undo, sizeof(undo),
		 "ceph osd pool set %s crush_rule replicated_rule "
		 ">/dev/null 2>&1", pool);
	fault_begin(wd, cause, undo);
}

/*
 * A refresh turns off what holds a write back, while a write is held
 * behind an op in flight to the same bytes (the image's data pool mapped
 * to no OSD, so its ops wait while the header pool works; the setting
 * written into the image's metadata behind its back, then a
 * HEADER_UPDATE): a later write overlapping the held one must not
 * overtake it, so the later data is what lands.
 *   sched: the I/O scheduler holds b behind a (cache off), then
 *          conf_rbd_io_scheduler=none; c sends b first (sched_runs + 1
 *          while a still waits);
 *   wa:    write-around blocks b behind a, which it acknowledged early
 *          (scheduler off), then conf_rbd_cache=false; c waits for b.
 */
static void held_order_round(bool wa)
{
	const char *name = th_name(wa ? "qwaoff" : "qschedoff");
	char pool[64], pa[4096], pb[4096], pc[4096], back[4096], id[64],
		oid[96];
	const char *key = wa ? "metadata_conf_rbd_cache"
			     : "metadata_conf_rbd_io_scheduler",
		   *val = wa ? "false" : "none";
	size_t vlen = strlen(val);
	struct rbdlite_stats st0, st1;
	rbd_completion_t c[3];
	rbd_image_options_t o;
	rados_write_op_t op;
	rbd_image_t a;
	uint64_t runs;
	pthread_t wd;

	pool_create(pool, wa ? "qwaoff" : "qschedoff");
	rbd_image_options_create(&o);
	ck_assert_int_eq(rbd_image_options_set_uint64(o,
			RBD_IMAGE_OPTION_FEATURES, RBD_FEATURE_LAYERING), 0);
	ck_assert_int_eq(rbd_image_options_set_uint64(o,
			RBD_IMAGE_OPTION_ORDER, 22), 0);
	ck_assert_int_eq(rbd_image_options_set_string(o,
			RBD_IMAGE_OPTION_DATA_POOL, pool), 0);
	ck_assert_int_eq(rbd_create4(t.io, name, 8 << 20, o), 0);
	rbd_image_options_destroy(o);
	ck_assert_int_eq(rbd_open(t.io, name, &a, NULL), 0);
	if (wa) {
		ck_assert_int_eq(rbd_metadata_set(a, "conf_rbd_cache", "true"),
				 0);
		ck_assert_int_eq(rbd_metadata_set(a, "conf_rbd_io_scheduler",
						  "none"), 0);
	} else {
		ck_assert_int_eq(rbd_metadata_set(a, "conf_rbd_cache",
						  "false"), 0);
	}
	ck_assert_int_eq(rbd_close(a), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &a, NULL), 0);
	memset(pa, 'a', sizeof(pa));
	memset(pb, 'b', sizeof(pb));
	memset(pc, 'c', sizeof(pc));
	/* Ten finished ops before the scheduler holds anything; the flush
	 * ends write-around's write-through. */
	for (int i = 0; i < 12; i++)
		ck_assert_int_eq(rbd_write(a, 0, sizeof(pa), pa), sizeof(pa));
	ck_assert_int_eq(rbd_flush(a), 0);
	ck_assert_int_eq(rbd_get_id(a, id, sizeof(id)), 0);
	snprintf(oid, sizeof(oid), "rbd_header.%s", id);
	op = rados_create_write_op();
	rados_write_op_omap_set(op, &key, &val, &vlen, 1);
	ck_assert_int_eq(rados_write_op_operate(op, t.io, oid, NULL, 0), 0);
	rados_release_write_op(op);

	pool_block(&wd, pool);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c[i]), 0);
	ck_assert_int_eq(rbdlite_get_stats(&st0, sizeof(st0)), 0);
	/* wa: b overlaps a (blocked); sched: b is beside a (held). */
	ck_assert_int_eq(rbd_aio_write(a, 0, sizeof(pa), pa, c[0]), 0);
	ck_assert_int_eq(rbd_aio_write(a, wa ? 0 : 8192, sizeof(pb), pb, c[1]),
			 0);
	ck_assert_int_eq(rbdlite_get_stats(&st1, sizeof(st1)), 0);
	if (wa) {
		/* a acknowledged early, b not (it waits for a). */
		ck_assert_int_eq(rbd_aio_wait_for_complete(c[0]), 0);
		ck_assert_int_eq(rbd_aio_is_complete(c[1]), 0);
	} else {
		ck_assert_uint_eq(st1.sched_held, st0.sched_held + 1);
	}
	/* The refresh is due once the notification returns (a watcher
	 * marks it before acking). */
	ck_assert_int_eq(rados_notify2(t.io, oid, NULL, 0, 10000, NULL, NULL),
			 0);
	ck_assert_int_eq(rbd_aio_write(a, wa ? 0 : 8192, sizeof(pc), pc, c[2]),
			 0);
	if (!wa) {
		/* The held run goes before c's write, while a's op still
		 * waits. */
		runs = st1.sched_runs;
		for (int i = 0; i < 100 && sched_runs() == runs; i++)
			usleep(50 * 1000);
		ck_assert_uint_eq(sched_runs(), runs + 1);
	} else {
		usleep(500 * 1000);	/* c's refresh ran: c is past it */
	}
	fault_end(wd);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(rbd_aio_wait_for_complete(c[i]), 0);
		ck_assert_int_eq(rbd_aio_get_return_value(c[i]), 0);
		rbd_aio_release(c[i]);
	}
	if (wa)
		ck_assert_int_eq(rbd_flush(a), 0);
	ck_assert_int_eq(rbd_read(a, wa ? 0 : 8192, sizeof(back), back),
			 sizeof(back));
	ck_assert_mem_eq(back, pc, sizeof(back));
	ck_assert_int_eq(rbd_close(a), 0);
	ck_assert_int_eq(rbd_remove(t.io, name), 0);
	pool_remove(pool);
}

/*
 * The object map: a whole-object discard waits for its map update (the
 * image's own pool, where the map lives, mapped to no OSD; its data pool
 * works), and a write to that object submitted after it must wait behind
 * it (librbd's update guard), not go by the state read before: the
 * written data is what remains once the pool works again (the discard
 * removed the object before the write).
 */
START_TEST(test_objmap_transition_keeps_order)
{
	const char *name = th_name("qomorder");
	char pool[64], buf[4096], back[4096];
	rbd_image_options_t o;
	rbd_completion_t c[2];
	rados_ioctx_t io;
	rbd_image_t a;
	pthread_t wd;

	pool_create(pool, "qomorder");
	ck_assert_int_eq(rados_ioctx_create(t.cluster, pool, &io), 0);
	rbd_image_options_create(&o);
	ck_assert_int_eq(rbd_image_options_set_uint64(o,
			RBD_IMAGE_OPTION_ORDER, 22), 0);
	ck_assert_int_eq(rbd_image_options_set_string(o,
			RBD_IMAGE_OPTION_DATA_POOL, t.pool), 0);
	ck_assert_int_eq(rbd_create4(io, name, 8 << 20, o), 0);
	rbd_image_options_destroy(o);
	ck_assert_int_eq(rbd_open(io, name, &a, NULL), 0);
	ck_assert_int_eq(rbd_metadata_set(a, "conf_rbd_cache", "false"), 0);
	ck_assert_int_eq(rbd_close(a), 0);
	ck_assert_int_eq(rbd_open(io, name, &a, NULL), 0);
	memset(buf, 'a', sizeof(buf));
	/* The lock is ours and the object exists in the map. */
	ck_assert_int_eq(rbd_write(a, 0, sizeof(buf), buf), sizeof(buf));

	pool_block(&wd, pool);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c[i]), 0);
	ck_assert_int_eq(rbd_aio_discard(a, 0, 4 << 20, c[0]), 0);
	memset(buf, 'b', sizeof(buf));
	ck_assert_int_eq(rbd_aio_write(a, 0, sizeof(buf), buf, c[1]), 0);
	usleep(500 * 1000);
	ck_assert_int_eq(rbd_aio_is_complete(c[0]), 0);
	fault_end(wd);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(rbd_aio_wait_for_complete(c[i]), 0);
		ck_assert_int_eq(rbd_aio_get_return_value(c[i]), i ? 0 : 0);
		rbd_aio_release(c[i]);
	}
	ck_assert_int_eq(rbd_read(a, 0, sizeof(back), back), sizeof(back));
	ck_assert_mem_eq(back, buf, sizeof(back));
	ck_assert_int_eq(rbd_close(a), 0);
	/* The map agrees with the data (rbd object-map check). */
	ck_assert_int_eq(th_sh("rbd object-map check %s/%s >/dev/null 2>&1",
			       pool, name), 0);
	ck_assert_int_eq(rbd_remove(io, name), 0);
	rados_ioctx_destroy(io);
	pool_remove(pool);
}
END_TEST

START_TEST(test_sched_off_by_refresh_keeps_held_order)
{
	held_order_round(false);
}
END_TEST

START_TEST(test_writearound_off_by_refresh_keeps_order)
{
	held_order_round(true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("Threads");
	TCase *tc = tcase_create("threads");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_many_images_two_threads);
	tcase_add_test(tc, test_callback_sync_write_takes_lock_over);
	tcase_add_test(tc, test_submit_during_refresh_does_not_wait);
	tcase_add_test(tc, test_sched_off_by_refresh_keeps_held_order);
	tcase_add_test(tc, test_writearound_off_by_refresh_keeps_order);
	tcase_add_test(tc, test_parked_writes_not_overtaken);
	tcase_add_test(tc, test_objmap_transition_keeps_order);
	suite_add_tcase(s, tc);
	return th_run(s);
}
