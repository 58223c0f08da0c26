/*
 * wacases.c - write-around acknowledgement, observed: built twice (against
 * librbdlite and against the real librbd) and run by test-writearound.sh,
 * which compares the two transcripts line by line.
 *
 *   wacases POOL [CASE...]
 *
 * Each case opens a fresh image with its own client configuration and
 * pauses the cluster's OSDs (`ceph osd pause`) while it submits requests:
 * what completes during the pause was acknowledged without the OSDs, what
 * did not waits for them.  Then it unpauses and records every result and
 * what the image holds.  Cases (default: all):
 *
 *   wtuf       write-through until the first flush, write-around after it
 *   overlap    a write overlapping one acknowledged early waits for it; a
 *              disjoint one does not; a flush waits for both
 *   raw        reads overlapping writes acknowledged early return their data
 *   fua        a FUA write is never acknowledged early
 *   maxdirty   rbd_cache_max_dirty=8192: the third 4 KiB write waits
 *   nocache    rbd_cache=false: nothing is acknowledged early
 *   wthrough   rbd_cache_policy=writethrough: nothing is
 *   sync       rbd_write returns early, as rbd_aio_write completes
 *   close      rbd_close with writes acknowledged early waits for them
 *   error      the error of a write acknowledged early (its client
 *              blocklisted meanwhile) is the next flush's, and a
 *              later flush fails too
 *   error2     two writes acknowledged early, a flush between them, all
 *              failing: that flush and the next one report an error
 *   luks       an encrypted image: whole-block and partial-block writes
 *              acknowledged early, reads wait for them
 *   luksdirty  an encrypted image, rbd_cache_max_dirty=8192: a partial-
 *              block write to an object the object map says does not
 *              exist (so its edge block reads as zeros without the OSDs,
 *              and its whole-block write is in flight during the pause)
 *              counts against max_dirty once: the next 4 KiB write is
 *              acknowledged early, the one after it is not.  (librbd
 *              counts either its 512 bytes or its 4 KiB block, from run
 *              to run: both give this answer at 8192.)  rbd_close then
 *              waits for them all, and the image holds their data.
 *
 * Prints "CASE: what" lines; exits non-zero only when the program itself
 * cannot run (the cluster is missing, an image cannot be created).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#define KiB 1024
#define MiB (1024 * 1024)

static const char *pool;
static int serial;

static void die(const char *what, int r)
{
	fprintf(stderr, "wacases: %s: %s\n", what, strerror(-r));
	exit(2);
}

static void sh(const char *cmd)
{
	if (system(cmd) != 0) {
		fprintf(stderr, "wacases: command failed: %s\n", cmd);
		exit(2);
	}
}

struct ctx {
	rados_t cl;
	rados_ioctx_t io;
	rbd_image_t img;
	char name[64];
};

/* A client with the given "key=value" settings (NULL-terminated), its
 * own fresh image of 16 MiB (default features), opened. */
static void setup(struct ctx *x, const char *const *conf)
{
	int order = 22, r;

	if ((r = rados_create(&x->cl, NULL)) < 0 ||
	    (r = rados_conf_read_file(x->cl, getenv("CEPH_CONF"))) < 0)
		die("rados_create", r);
	for (; conf && *conf; conf++) {
		char k[64];
		const char *eq = strchr(*conf, '=');

		snprintf(k, sizeof(k), "%.*s", (int)(eq - *conf), *conf);
		if ((r = rados_conf_set(x->cl, k, eq + 1)) < 0)
			die(k, r);
	}
	if ((r = rados_connect(x->cl)) < 0 ||
	    (r = rados_ioctx_create(x->cl, pool, &x->io)) < 0)
		die("rados_connect", r);
	snprintf(x->name, sizeof(x->name), "wa-%d-%d", (int)getpid(),
		 serial++);
	if ((r = rbd_create(x->io, x->name, 16 * MiB, &order)) < 0)
		die("rbd_create", r);
	if ((r = rbd_open(x->io, x->name, &x->img, NULL)) < 0)
		die("rbd_open", r);
}

static void teardown(struct ctx *x)
{
	if (x->img)
		rbd_close(x->img);
	rbd_remove(x->io, x->name);
	rados_ioctx_destroy(x->io);
	rados_shutdown(x->cl);
}

static void pause_osds(struct ctx *x)
{
	sh("ceph osd pause >/dev/null 2>&1");
	/* Our client must know, or its next op would go out at once. */
	rados_wait_for_latest_osdmap(x->cl);
}

static void unpause_osds(void)
{
	sh("ceph osd unpause >/dev/null 2>&1");
}

/* Time for an early acknowledgement to be delivered. */
static void settle(void)
{
	usleep(400 * 1000);
}

static void fill(char *b, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(seed * 31 + (int)(i * 7 + i / 4096));
}

static rbd_completion_t comp(void)
{
	rbd_completion_t c;

	if (rbd_aio_create_completion(NULL, NULL, &c) < 0)
		die("rbd_aio_create_completion", -ENOMEM);
	return c;
}

static void say(const char *cs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const char *cs, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", cs);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const char *yesno(int v)
{
	return v ? "yes" : "no";
}

/* Wait for c, report its value, release it. */
static void finish(const char *cs, const char *what, rbd_completion_t c)
{
	rbd_aio_wait_for_complete(c);
	say(cs, "%s returned %ld", what, (long)rbd_aio_get_return_value(c));
	rbd_aio_release(c);
}

/* Does [off, off + n) hold b? */
static void check(const char *cs, const char *what, struct ctx *x,
		  uint64_t off, const char *b, size_t n)
{
	char *got = malloc(n);
	ssize_t r = rbd_read(x->img, off, n, got);

	say(cs, "%s: read %zd, %s", what, r,
	    r == (ssize_t)n && !memcmp(got, b, n) ? "as written" : "OTHER DATA");
	free(got);
}

static void first_write(struct ctx *x)
{
	char b[512] = { 0 };

	if (rbd_write(x->img, 8 * MiB, sizeof(b), b) != sizeof(b))
		die("rbd_write", -EIO);
}

static void c_wtuf(void)
{
	const char *cs = "wtuf";
	struct ctx x;
	char a[4096], b[4096];
	rbd_completion_t w1, w2;

	setup(&x, NULL);
	first_write(&x);
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	pause_osds(&x);
	w1 = comp();
	rbd_aio_write(x.img, 0, sizeof(a), a, w1);
	settle();
	say(cs, "write before any flush acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w1)));
	unpause_osds();
	finish(cs, "write 1", w1);
	say(cs, "flush: %d", rbd_flush(x.img));
	pause_osds(&x);
	w2 = comp();
	rbd_aio_write(x.img, 65536, sizeof(b), b, w2);
	settle();
	say(cs, "write after a flush acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w2)));
	unpause_osds();
	finish(cs, "write 2", w2);
	check(cs, "write 1", &x, 0, a, sizeof(a));
	check(cs, "write 2", &x, 65536, b, sizeof(b));
	teardown(&x);
}

static void c_overlap(void)
{
	const char *cs = "overlap";
	struct ctx x;
	char a[4096], b[4096], c[4096], want[6144];
	rbd_completion_t w1, w2, w3, fl;

	setup(&x, NULL);
	first_write(&x);
	rbd_flush(x.img);
	fill(a, sizeof(a), 3);
	fill(b, sizeof(b), 4);
	fill(c, sizeof(c), 5);
	pause_osds(&x);
	w1 = comp();
	w2 = comp();
	w3 = comp();
	fl = comp();
	rbd_aio_write(x.img, 0, sizeof(a), a, w1);
	rbd_aio_write(x.img, 2048, sizeof(b), b, w2);
	rbd_aio_write(x.img, MiB, sizeof(c), c, w3);
	rbd_aio_flush(x.img, fl);
	/* The caller's buffers are free once acknowledged. */
	settle();
	say(cs, "write 1 acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w1)));
	say(cs, "write 2 (overlaps 1) acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w2)));
	say(cs, "write 3 (disjoint) acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w3)));
	say(cs, "flush complete during the pause: %s",
	    yesno(rbd_aio_is_complete(fl)));
	memcpy(want, a, 2048);
	memcpy(want + 2048, b, 4096);
	memset(a, 0xee, sizeof(a));
	memset(c, 0xee, sizeof(c));
	unpause_osds();
	finish(cs, "flush", fl);
	say(cs, "after the flush, writes complete: %s %s %s",
	    yesno(rbd_aio_is_complete(w1)), yesno(rbd_aio_is_complete(w2)),
	    yesno(rbd_aio_is_complete(w3)));
	finish(cs, "write 1", w1);
	finish(cs, "write 2", w2);
	finish(cs, "write 3", w3);
	check(cs, "writes 1 and 2", &x, 0, want, sizeof(want));
	fill(c, sizeof(c), 5);
	check(cs, "write 3", &x, MiB, c, sizeof(c));
	teardown(&x);
}

static void c_raw(void)
{
	const char *cs = "raw";
	struct ctx x;
	char a[8192], got[8192], got2[4096];
	rbd_completion_t w1, r1, r2;

	setup(&x, NULL);
	first_write(&x);
	rbd_flush(x.img);
	fill(a, sizeof(a), 6);
	pause_osds(&x);
	w1 = comp();
	r1 = comp();
	r2 = comp();
	rbd_aio_write(x.img, 4096, sizeof(a), a, w1);
	settle();
	say(cs, "write acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w1)));
	rbd_aio_read(x.img, 0, sizeof(got), got, r1);
	rbd_aio_read(x.img, 8192, sizeof(got2), got2, r2);
	unpause_osds();
	finish(cs, "read 1", r1);
	finish(cs, "read 2", r2);
	finish(cs, "write", w1);
	{
		char want[8192] = { 0 };

		memcpy(want + 4096, a, 4096);
		say(cs, "read 1 holds the write's data: %s",
		    yesno(!memcmp(got, want, sizeof(got))));
		say(cs, "read 2 holds the write's data: %s",
		    yesno(!memcmp(got2, a + 4096, sizeof(got2))));
	}
	teardown(&x);
}

static void c_fua(void)
{
	const char *cs = "fua";
	struct ctx x;
	char a[4096];
	rbd_completion_t w1;

	setup(&x, NULL);
	first_write(&x);
	rbd_flush(x.img);
	fill(a, sizeof(a), 7);
	pause_osds(&x);
	w1 = comp();
	rbd_aio_write2(x.img, 0, sizeof(a), a, w1,
		       LIBRADOS_OP_FLAG_FADVISE_FUA);
	settle();
	say(cs, "FUA write acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w1)));
	unpause_osds();
	finish(cs, "FUA write", w1);
	check(cs, "FUA write", &x, 0, a, sizeof(a));
	teardown(&x);
}

/* Three 4 KiB writes under a pause with configuration conf. */
static void three_writes(const char *cs, const char *const *conf)
{
	struct ctx x;
	char a[3][4096];
	rbd_completion_t w[3];

	setup(&x, conf);
	first_write(&x);
	rbd_flush(x.img);
	pause_osds(&x);
	for (int i = 0; i < 3; i++) {
		fill(a[i], sizeof(a[i]), 10 + i);
		w[i] = comp();
		rbd_aio_write(x.img, (uint64_t)i * MiB, sizeof(a[i]), a[i],
			      w[i]);
	}
	/* How many, not which: librbd delivers its acknowledgements from a
	 * work queue, and on a loaded machine one may come after a later
	 * one (seen: "yes no yes" at max_dirty 8192). */
	settle();
	settle();
	say(cs, "4 KiB writes acknowledged during the pause: %d of 3",
	    rbd_aio_is_complete(w[0]) + rbd_aio_is_complete(w[1]) +
		    rbd_aio_is_complete(w[2]));
	unpause_osds();
	for (int i = 0; i < 3; i++) {
		finish(cs, "write", w[i]);
		check(cs, "write", &x, (uint64_t)i * MiB, a[i], sizeof(a[i]));
	}
	teardown(&x);
}

static void c_maxdirty(void)
{
	static const char *const conf[] = { "rbd_cache_max_dirty=8192", NULL };

	three_writes("maxdirty", conf);
}

static void c_nocache(void)
{
	static const char *const conf[] = { "rbd_cache=false", NULL };

	three_writes("nocache", conf);
}

static void c_wthrough(void)
{
	static const char *const conf[] = { "rbd_cache_policy=writethrough",
					    NULL };

	three_writes("wthrough", conf);
}

struct bg {
	struct ctx *x;
	char *buf;
	ssize_t r;
	bool close;
	volatile bool done;
};

static void *bg_run(void *arg)
{
	struct bg *b = arg;

	if (b->close)
		b->r = rbd_close(b->x->img);
	else
		b->r = rbd_write(b->x->img, 0, 4096, b->buf);
	b->done = true;
	return NULL;
}

static void c_sync(void)
{
	const char *cs = "sync";
	struct ctx x;
	char a[4096];
	struct bg b = { &x, a, 0, false, false };
	pthread_t t;

	setup(&x, NULL);
	first_write(&x);
	rbd_flush(x.img);
	fill(a, sizeof(a), 20);
	pause_osds(&x);
	pthread_create(&t, NULL, bg_run, &b);
	settle();
	say(cs, "rbd_write returned during the pause: %s", yesno(b.done));
	unpause_osds();
	pthread_join(t, NULL);
	say(cs, "rbd_write: %zd", b.r);
	say(cs, "flush: %d", rbd_flush(x.img));
	check(cs, "rbd_write", &x, 0, a, sizeof(a));
	teardown(&x);
}

static void c_close(void)
{
	const char *cs = "close";
	struct ctx x;
	char a[8][4096];
	rbd_completion_t w[8];
	struct bg b = { &x, NULL, 0, true, false };
	pthread_t t;
	int acked = 0;

	setup(&x, NULL);
	first_write(&x);
	rbd_flush(x.img);
	pause_osds(&x);
	for (int i = 0; i < 8; i++) {
		fill(a[i], sizeof(a[i]), 30 + i);
		w[i] = comp();
		rbd_aio_write(x.img, (uint64_t)i * 65536, 4096, a[i], w[i]);
	}
	settle();
	for (int i = 0; i < 8; i++) {
		acked += rbd_aio_is_complete(w[i]);
	}
	say(cs, "writes acknowledged during the pause: %d of 8", acked);
	for (int i = 0; i < 8 && acked == 8; i++)
		rbd_aio_release(w[i]);
	pthread_create(&t, NULL, bg_run, &b);
	settle();
	say(cs, "rbd_close returned during the pause: %s", yesno(b.done));
	unpause_osds();
	pthread_join(t, NULL);
	say(cs, "rbd_close: %zd", b.r);
	for (int i = 0; i < 8 && acked != 8; i++)
		rbd_aio_release(w[i]);
	if (rbd_open(x.io, x.name, &x.img, NULL) < 0)
		die("rbd_open", -EIO);
	for (int i = 0; i < 8; i++)
		check(cs, "write", &x, (uint64_t)i * 65536, a[i], 4096);
	teardown(&x);
}

/* Blocklist x's client (ceph osd blocklist add ADDR). */
static void blocklist(struct ctx *x)
{
	char cmd[512], *addrs = NULL, *s, *e;

	if (rados_getaddrs(x->cl, &addrs) < 0 || !addrs)
		die("rados_getaddrs", -EIO);
	/* addrs: "[v2:IP:PORT/NONCE,v1:IP:PORT/NONCE]" or "IP:PORT/NONCE" */
	s = addrs;
	if (*s == '[')
		s++;
	if (!strncmp(s, "v2:", 3) || !strncmp(s, "v1:", 3))
		s += 3;
	e = s + strcspn(s, ",]");
	snprintf(cmd, sizeof(cmd), "ceph osd blocklist add %.*s >/dev/null 2>&1",
		 (int)(e - s), s);
	rados_buffer_free(addrs);
	sh(cmd);
}

/* Close x's blocklisted handle; another client removes its image, as
 * the blocklisted one cannot. */
static void teardown_blocklisted(const char *cs, struct ctx *x)
{
	struct ctx y;

	rbd_close(x->img);
	x->img = NULL;
	rados_ioctx_destroy(x->io);
	rados_shutdown(x->cl);
	if (rados_create(&y.cl, NULL) < 0 ||
	    rados_conf_read_file(y.cl, getenv("CEPH_CONF")) < 0 ||
	    rados_connect(y.cl) < 0 ||
	    rados_ioctx_create(y.cl, pool, &y.io) < 0)
		die("rados_connect", -EIO);
	say(cs, "remove: %d", rbd_remove(y.io, x->name));
	rados_ioctx_destroy(y.io);
	rados_shutdown(y.cl);
}

/* Submit a flush, wait for it: did it return an error? */
static const char *flush_fails(struct ctx *x)
{
	rbd_completion_t fl = comp();
	int r;

	rbd_aio_flush(x->img, fl);
	rbd_aio_wait_for_complete(fl);
	r = (int)rbd_aio_get_return_value(fl);
	rbd_aio_release(fl);
	return yesno(r < 0);
}

static void c_error(void)
{
	const char *cs = "error";
	struct ctx x;
	char a[4096];
	rbd_completion_t w1;

	setup(&x, NULL);
	first_write(&x);
	rbd_flush(x.img);
	fill(a, sizeof(a), 40);
	pause_osds(&x);
	w1 = comp();
	rbd_aio_write(x.img, 0, sizeof(a), a, w1);
	settle();
	say(cs, "write acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w1)));
	blocklist(&x);
	unpause_osds();
	finish(cs, "write", w1);
	say(cs, "the next flush returned an error: %s", flush_fails(&x));
	say(cs, "a later flush returned an error: %s", flush_fails(&x));
	teardown_blocklisted(cs, &x);
}

/*
 * Two writes acknowledged early, a flush between them, both failing (the
 * client blocklisted during the pause): the flush between them and the
 * flush after both return an error, whichever write failed first -- a
 * flush never completes with 0 while a write acknowledged before it
 * failed.
 */
static void c_error2(void)
{
	const char *cs = "error2";
	struct ctx x;
	char a[4096], b[4096];
	rbd_completion_t w1, w2, f1;

	setup(&x, NULL);
	first_write(&x);
	rbd_flush(x.img);
	fill(a, sizeof(a), 43);
	fill(b, sizeof(b), 44);
	pause_osds(&x);
	w1 = comp();
	f1 = comp();
	w2 = comp();
	rbd_aio_write(x.img, 0, sizeof(a), a, w1);
	rbd_aio_flush(x.img, f1);
	rbd_aio_write(x.img, 8 * MiB + 64 * KiB, sizeof(b), b, w2);
	settle();
	say(cs, "writes acknowledged during the pause: %d of 2",
	    rbd_aio_is_complete(w1) + rbd_aio_is_complete(w2));
	blocklist(&x);
	unpause_osds();
	finish(cs, "write 1", w1);
	finish(cs, "write 2", w2);
	rbd_aio_wait_for_complete(f1);
	say(cs, "the flush between them returned an error: %s",
	    yesno(rbd_aio_get_return_value(f1) < 0));
	rbd_aio_release(f1);
	say(cs, "the flush after both returned an error: %s", flush_fails(&x));
	teardown_blocklisted(cs, &x);
}

/* The LUKS2 passphrase options of the encrypted cases. */
static rbd_encryption_luks2_format_options_t luks_opts = {
	.alg = RBD_ENCRYPTION_ALGORITHM_AES128,
	.passphrase = "wa",
	.passphrase_size = 2,
};

/* setup_luks: setup() with conf, then the image grown to 32 MiB,
 * formatted with LUKS2 (which loads it), written once and flushed, so
 * the cases start past the lock and the first write. */
static void setup_luks(struct ctx *x, const char *const *conf)
{
	int r;

	setup(x, conf);
	if ((r = rbd_resize(x->img, 32 * MiB)) < 0 ||
	    (r = rbd_encryption_format(x->img, RBD_ENCRYPTION_FORMAT_LUKS2,
				       &luks_opts, sizeof(luks_opts))) < 0)
		die("rbd_encryption_format", r);
	first_write(x);
	rbd_flush(x->img);
}

/* On an image with LUKS2 loaded: block-aligned encrypted writes are
 * acknowledged early, a read of their range waits for them and decrypts
 * their data.  A write of part of a written block (a read-modify-write:
 * its edge block is read first) is acknowledged early too, as librbd's
 * write-around layer above its crypto layer does, and a read of it sent
 * during the pause returns its data (it waits for the write, which waits
 * for the edge block's read). */
static void c_luks(void)
{
	const char *cs = "luks";
	struct ctx x;
	char a[4096], b[4096], c[512], got[4096], got3[512];
	rbd_completion_t w1, w2, w3, r1, r3;

	setup_luks(&x, NULL);
	fill(a, sizeof(a), 40);
	fill(b, sizeof(b), 41);
	fill(c, sizeof(c), 42);
	pause_osds(&x);
	w1 = comp();
	w2 = comp();
	w3 = comp();
	r1 = comp();
	r3 = comp();
	rbd_aio_write(x.img, 0, sizeof(a), a, w1);
	rbd_aio_write(x.img, MiB, sizeof(b), b, w2);
	rbd_aio_write(x.img, 8 * MiB + 4096 + 100, sizeof(c), c, w3);
	settle();
	say(cs, "aligned write 1 acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w1)));
	say(cs, "aligned write 2 acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(w2)));
	say(cs, "partial-block write (read-modify-write) acknowledged "
		"during the pause: %s",
	    yesno(rbd_aio_is_complete(w3)));
	rbd_aio_read(x.img, 0, sizeof(got), got, r1);
	rbd_aio_read(x.img, 8 * MiB + 4096 + 100, sizeof(got3), got3, r3);
	settle();
	say(cs, "read of write 1 complete during the pause: %s",
	    yesno(rbd_aio_is_complete(r1)));
	unpause_osds();
	finish(cs, "read", r1);
	say(cs, "read holds write 1: %s", yesno(!memcmp(got, a, sizeof(a))));
	finish(cs, "read of write 3", r3);
	say(cs, "read of write 3 (sent during the pause) holds it: %s",
	    yesno(!memcmp(got3, c, sizeof(c))));
	finish(cs, "write 1", w1);
	finish(cs, "write 2", w2);
	finish(cs, "write 3", w3);
	say(cs, "flush: %d", rbd_flush(x.img));
	check(cs, "write 2", &x, MiB, b, sizeof(b));
	check(cs, "write 3", &x, 8 * MiB + 4096 + 100, c, sizeof(c));
	teardown(&x);
}

static void c_luksdirty(void)
{
	static const char *const conf[] = { "rbd_cache_max_dirty=8192", NULL };
	const char *cs = "luksdirty";
	struct ctx x;
	char p[512], a[2][4096];
	rbd_completion_t wp, w[2];
	struct bg b = { &x, NULL, 0, true, false };
	pthread_t t;
	int r;

	setup_luks(&x, conf);
	fill(p, sizeof(p), 50);
	pause_osds(&x);
	wp = comp();
	/* Data-area offset 12 MiB: an object of its own, never written. */
	rbd_aio_write(x.img, 12 * MiB + 100, sizeof(p), p, wp);
	/* Its edge block reads as zeros; its write is in flight. */
	settle();
	for (int i = 0; i < 2; i++) {
		fill(a[i], sizeof(a[i]), 51 + i);
		w[i] = comp();
		rbd_aio_write(x.img, 8 * MiB + (uint64_t)(i + 1) * 64 * KiB,
			      sizeof(a[i]), a[i], w[i]);
	}
	settle();
	settle();
	say(cs, "partial-block write acknowledged during the pause: %s",
	    yesno(rbd_aio_is_complete(wp)));
	say(cs, "4 KiB writes after it acknowledged during the pause: %d of 2",
	    rbd_aio_is_complete(w[0]) + rbd_aio_is_complete(w[1]));
	/* Close with them in flight: it waits for them. */
	pthread_create(&t, NULL, bg_run, &b);
	settle();
	say(cs, "rbd_close returned during the pause: %s", yesno(b.done));
	unpause_osds();
	pthread_join(t, NULL);
	say(cs, "rbd_close: %zd", b.r);
	finish(cs, "partial-block write", wp);
	for (int i = 0; i < 2; i++)
		finish(cs, "write", w[i]);
	if ((r = rbd_open(x.io, x.name, &x.img, NULL)) < 0 ||
	    (r = rbd_encryption_load(x.img, RBD_ENCRYPTION_FORMAT_LUKS2,
				     &luks_opts, sizeof(luks_opts))) < 0)
		die("reopen and load", r);
	check(cs, "partial-block write", &x, 12 * MiB + 100, p, sizeof(p));
	for (int i = 0; i < 2; i++)
		check(cs, "write", &x, 8 * MiB + (uint64_t)(i + 1) * 64 * KiB,
		      a[i], sizeof(a[i]));
	teardown(&x);
}

/* On an image with LUKS2 loaded, the cache off (no write-around to order
 * them): a discard of 8 MiB (encrypted zeros, written in chunks), then at
 * once a flush: the flush completes only after the whole discard.  (Not
 * asked: a write into the discarded range sent right after the discard;
 * librbd 16.2.15 lets the discard's zeros land over it, librbdlite
 * orders the two.) */
static void c_luksdiscard(void)
{
	static const char *const conf[] = { "rbd_cache=false", NULL };
	const char *cs = "luksdiscard";
	struct ctx x;
	static char zeros[4096], data[8 << 20];
	rbd_completion_t d, f;

	setup_luks(&x, conf);
	fill(data, sizeof(data), 60);
	if (rbd_write(x.img, 0, sizeof(data), data) != (ssize_t)sizeof(data))
		die("rbd_write of 8 MiB", -EIO);
	d = comp();
	f = comp();
	rbd_aio_discard(x.img, 0, sizeof(data), d);
	rbd_aio_flush(x.img, f);
	rbd_aio_wait_for_complete(f);
	say(cs, "the discard was complete when the flush completed: %s",
	    yesno(rbd_aio_is_complete(d)));
	say(cs, "flush: %zd", rbd_aio_get_return_value(f));
	rbd_aio_release(f);
	finish(cs, "discard", d);
	check(cs, "the discarded range", &x, 7 * MiB + 4096, zeros,
	      sizeof(zeros));
	teardown(&x);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "wtuf", c_wtuf },	  { "overlap", c_overlap },
	{ "raw", c_raw },	  { "fua", c_fua },
	{ "maxdirty", c_maxdirty }, { "nocache", c_nocache },
	{ "wthrough", c_wthrough }, { "sync", c_sync },
	{ "close", c_close },	  { "error", c_error },
	{ "error2", c_error2 },
	{ "luks", c_luks },
	{ "luksdirty", c_luksdirty },
	{ "luksdiscard", c_luksdiscard },
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: wacases POOL [CASE...]\n");
		return 2;
	}
	pool = argv[1];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool want = argc == 2;

		for (int k = 2; k < argc; k++)
			want |= !strcmp(argv[k], cases[i].name);
		if (want)
			cases[i].fn();
	}
	return 0;
}
