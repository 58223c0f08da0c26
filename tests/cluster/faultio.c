/*
 * faultio.c - a verifying writer for the fault matrix (test-faults.sh).
 *
 *   faultio --lib LIB --pool POOL --image NAME --state FILE write
 *           [--seconds S] [--depth D] [--blocks N] [--first B]
 *           [--stop-on-error] [--cache on|off] [--luks PASS] [--bs 512]
 *           [--ready FILE]
 *   faultio --lib LIB --pool POOL --image NAME --state FILE verify
 *           [--luks PASS] [--bs 512] [--noise-unlanded]
 *
 * --ready FILE creates FILE once the image is open (and its encryption
 * loaded, which takes seconds of key derivation): the writer is writing.
 *
 * --luks PASS loads the image's LUKS2 encryption (AES-256) with passphrase
 * PASS after the open, so every block goes through the library's
 * encryption; --bs 512 makes the blocks 512 bytes (on an image with 4 KiB
 * encryption blocks every write is then a read-modify-write of its
 * block, and neighbouring writes share one).
 *
 * The library is not linked in: LIB (librbdlite or the real librbd.so.1)
 * is dlopen()ed and its rbd_* resolved with dlsym, so one binary drives
 * both, as rbdmodel.c does.  CEPH_CONF names the cluster.
 *
 * write: 4 KiB (--bs) aio writes to random blocks B..B+N-1 of the image, D in
 * flight, never two on one block, for S seconds, or until SIGUSR1 (then it
 * stops as at the end of its time: drains, flushes, reports), or until
 * killed.  Each
 * block carries a header (magic, block number, generation, CRC of the
 * rest) and a pattern derived from (block, generation); generations
 * increase with every submission.  The state file (mmap'ed MAP_SHARED, so
 * it survives a SIGKILL of the writer) holds per block the highest
 * generation acknowledged with 0, the highest generation submitted, and
 * the highest generation known durable: acknowledged before a flush that
 * completed with 0.
 *
 * --cache off (the default) sets rbd_cache=false: a write is acknowledged
 * once the OSDs have it, so an acknowledged write is durable at once.
 * --cache on keeps the library's defaults (rbd_cache=true, write-around,
 * write-through until the first flush): an acknowledgement may come
 * before the OSDs have the data, and the writer submits an rbd_aio_flush
 * every 50 ms (one at a time, as a guest's file system would), and one
 * more before it exits; only what a completed flush covered counts as
 * durable.
 * Every completion error is counted by errno; with --stop-on-error the
 * writer stops submitting at the first one, waits for what is in flight,
 * and asks rbd_is_exclusive_lock_owner (again, for up to 20 s, while the
 * first error was -ESHUTDOWN, a blocklisting, and the answer does not yet
 * say so).  The stall is the longest time
 * without a completion while requests were outstanding.  Prints one line
 * of key=value pairs: ios, errors (errno:count,...), first_error,
 * max_stall_ms, seconds, owner_rc, owner.
 *
 * verify: reads every block the state file knows and checks that it holds
 * the generation last known durable, or a later one that was submitted (a
 * write whose completion was lost with its client, or that failed, may
 * still have landed): anything older, or a bad header, is a durable write
 * lost.  With --noise-unlanded a block that holds neither zeros nor a
 * valid block (noise) counts as zeros (not landed; lost if it had a
 * durable generation), not as bad: that is how librbd reads a never-written
 * block of an encrypted image inside an object that exists (it decrypts
 * the zeros of the hole; librbdlite returns zeros).  A block older than
 * its last acknowledged (but not flushed) generation is counted apart: an early acknowledgement the fault undid,
 * which only a flush promises against.  Prints "checked=N lost=L bad=B
 * unflushed_lost=U" and exits 1 if L or B > 0.
 *
 * Threading: completions arrive on the library's callback thread and are
 * handed to the main thread through a mutex-protected list.  Exit status:
 * 0 fine, 1 verification failed, 2 usage or setup error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

/* The block size: 4096, or 512 (--bs 512). */
static size_t BS = 4096;
#define MAGIC 0x46494f4c54424452ull	/* "RDBTLOIF" */
#define MAX_DEPTH 64

static int (*p_open)(rados_ioctx_t, const char *, rbd_image_t *,
		     const char *);
static int (*p_close)(rbd_image_t);
static ssize_t (*p_read)(rbd_image_t, uint64_t, size_t, char *);
static int (*p_aio_write)(rbd_image_t, uint64_t, size_t, const char *,
			  rbd_completion_t);
static int (*p_aio_flush)(rbd_image_t, rbd_completion_t);
static int (*p_create_comp)(void *, rbd_callback_t, rbd_completion_t *);
static ssize_t (*p_get_rv)(rbd_completion_t);
static void (*p_release)(rbd_completion_t);
static int (*p_is_owner)(rbd_image_t, int *);
static int (*p_enc_load)(rbd_image_t, rbd_encryption_format_t,
			 rbd_encryption_options_t, size_t);

struct hdr {
	uint64_t magic;
	uint64_t block;
	uint64_t gen;
	uint32_t crc;
	uint32_t pad;
};

struct slot {
	struct slot *next;	/* in the done list */
	uint64_t block, gen;
	rbd_completion_t c;
	ssize_t rv;
	char *buf;
	bool busy;
	bool flush;	/* the flush slot */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static struct slot *done_head;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t crc32(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= b[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void fill(char *buf, uint64_t block, uint64_t gen)
{
	struct hdr h = { MAGIC, block, gen, 0, 0 };
	uint64_t s = mix(block * 0x9e3779b97f4a7c15ull ^ gen);

	for (size_t i = sizeof(h); i + 8 <= BS; i += 8) {
		s = mix(s + i);
		memcpy(buf + i, &s, 8);
	}
	h.crc = crc32(buf + sizeof(h), BS - sizeof(h));
	memcpy(buf, &h, sizeof(h));
}

static void on_done(rbd_completion_t c, void *arg)
{
	struct slot *s = arg;

	s->rv = p_get_rv(c);
	pthread_mutex_lock(&mu);
	s->next = done_head;
	done_head = s;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

static void *sym(void *dl, const char *name)
{
	void *p = dlsym(dl, name);

	if (!p) {
		fprintf(stderr, "faultio: %s has no %s\n", "library", name);
		exit(2);
	}
	return p;
}

/* The state file: acked[n], submitted[n], durable[n]; create: n blocks,
 * else *np from the file's size. */
static uint64_t *map_state(const char *path, uint64_t *np, bool create)
{
	int fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDONLY,
		      0644);
	struct stat st;
	size_t len;
	void *p;

	if (fd < 0 || (!create && fstat(fd, &st) < 0)) {
		perror(path);
		exit(2);
	}
	if (!create)
		*np = (uint64_t)st.st_size / (3 * sizeof(uint64_t));
	len = (size_t)*np * 3 * sizeof(uint64_t);
	if (!len || (create && ftruncate(fd, (off_t)len) < 0)) {
		fprintf(stderr, "faultio: %s: bad state file\n", path);
		exit(2);
	}
	p = mmap(NULL, len, create ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

#define FLUSH_NS 50000000u	/* --cache on: a flush every 50 ms */

/* Set by SIGUSR1: stop as if the time were up.  Read by the main loop,
 * which wakes at least every 100 ms. */
static volatile sig_atomic_t stop_requested;

static void on_usr1(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int do_write(rbd_image_t img, const char *state, double seconds,
		    int depth, uint64_t nblocks, uint64_t first, bool stop_err,
		    bool cache)
{
	uint64_t total = first + nblocks;
	uint64_t *acked = map_state(state, &total, true);
	uint64_t *subm = acked + total, *durable = subm + total;
	/* What the flush in flight covers: acked[] when it was submitted. */
	uint64_t *covers = calloc(total, sizeof(*covers));
	uint8_t *busy = calloc(nblocks, 1);
	struct slot slots[MAX_DEPTH], fl = { .flush = true };
	long errs[256] = { 0 };
	uint64_t ios = 0, gen = 0, t0 = now_ns(), last = t0, max_stall = 0;
	uint64_t end = t0 + (uint64_t)(seconds * 1e9), rng = mix(t0);
	uint64_t last_flush = t0, flushes = 0;
	int inflight = 0, first_error = 0;
	bool stopping = false, final_flush = false;

	memset(slots, 0, sizeof(slots));
	for (int i = 0; i < depth; i++)
		slots[i].buf = aligned_alloc(BS, BS);
	if (!covers || !busy) {
		fprintf(stderr, "faultio: out of memory\n");
		return 2;
	}
	for (;;) {
		uint64_t now = now_ns();

		if (now >= end || stop_requested)
			stopping = true;
		/* --cache on: one flush in flight at a time, every FLUSH_NS,
		 * and a last one once the writes have drained. */
		if (cache && !fl.busy &&
		    ((!stopping && now - last_flush >= FLUSH_NS) ||
		     (stopping && !inflight && !final_flush))) {
			final_flush = stopping;
			memcpy(covers, acked, total * sizeof(*covers));
			if (p_create_comp(&fl, on_done, &fl.c) < 0) {
				fprintf(stderr, "faultio: no completion\n");
				return 2;
			}
			fl.busy = true;
			inflight++;
			last_flush = now;
			int r = p_aio_flush(img, fl.c);

			if (r < 0) {
				fl.rv = r;
				pthread_mutex_lock(&mu);
				fl.next = done_head;
				done_head = &fl;
				pthread_mutex_unlock(&mu);
			}
		}
		/* Submit into every free slot. */
		for (int i = 0; i < depth && !stopping; i++) {
			struct slot *s = &slots[i];
			uint64_t b;

			if (s->busy)
				continue;
			do {
				rng = mix(rng + 1);
				b = rng % nblocks;
			} while (busy[b]);
			busy[b] = 1;
			s->block = first + b;
			s->gen = ++gen;
			fill(s->buf, s->block, s->gen);
			subm[s->block] = s->gen;
			if (p_create_comp(s, on_done, &s->c) < 0) {
				fprintf(stderr, "faultio: no completion\n");
				return 2;
			}
			s->busy = true;
			inflight++;
			int r = p_aio_write(img, s->block * BS, BS, s->buf, s->c);

			if (r < 0) {
				/* Not submitted: counted as a failed write. */
				s->rv = r;
				pthread_mutex_lock(&mu);
				s->next = done_head;
				done_head = s;
				pthread_mutex_unlock(&mu);
			}
		}
		if (!inflight && stopping)
			break;
		/* Wait for completions (a tick at most: the stall clock). */
		pthread_mutex_lock(&mu);
		if (!done_head) {
			uint64_t d = now_ns() + 100000000u;
			struct timespec ts = { (time_t)(d / 1000000000u),
					       (long)(d % 1000000000u) };

			pthread_cond_timedwait(&cv, &mu, &ts);
		}
		struct slot *s = done_head;

		done_head = NULL;
		pthread_mutex_unlock(&mu);
		now = now_ns();
		if (!s) {
			if (inflight && now - last > max_stall)
				max_stall = now - last;
			continue;
		}
		if (now - last > max_stall)
			max_stall = now - last;
		last = now;
		while (s) {
			struct slot *n = s->next;

			if (s->flush && s->rv == 0) {
				for (uint64_t b = 0; b < total; b++)
					if (covers[b] > durable[b])
						durable[b] = covers[b];
				flushes++;
			} else if (s->rv == 0) {
				if (s->gen > acked[s->block])
					acked[s->block] = s->gen;
				if (!cache && s->gen > durable[s->block])
					durable[s->block] = s->gen;
				ios++;
			} else {
				int e = s->rv < 0 && s->rv > -256 ? (int)-s->rv
								  : 255;

				errs[e]++;
				if (!first_error)
					first_error = (int)s->rv;
				if (stop_err)
					stopping = true;
			}
			if (s->c)
				p_release(s->c);
			s->c = NULL;
			if (!s->flush)
				busy[s->block - first] = 0;
			s->busy = false;
			inflight--;
			s = n;
		}
	}
	msync(acked, (size_t)total * 3 * sizeof(uint64_t), MS_SYNC);
	/*
	 * After a blocklisting both libraries ask the OSD holding the
	 * header, which may apply the new OSD map a moment after the OSDs
	 * that failed the writes: ask again, for at most 20 s, until the
	 * answer says so.  A library that never does still fails the
	 * comparison.
	 */
	int owner = -1, orc = p_is_owner(img, &owner);

	for (int i = 0; i < 200 && first_error == -ESHUTDOWN &&
			orc != -ESHUTDOWN; i++) {
		usleep(100 * 1000);
		owner = -1;
		orc = p_is_owner(img, &owner);
	}

	printf("ios=%" PRIu64 " errors=", ios);
	bool any = false;

	for (int e = 1; e < 256; e++) {
		if (errs[e]) {
			printf("%s-%d:%ld", any ? "," : "", e, errs[e]);
			any = true;
		}
	}
	printf("%s first_error=%d max_stall_ms=%.0f seconds=%.1f owner_rc=%d "
	       "owner=%d flushes=%" PRIu64 "\n", any ? "" : "none",
	       first_error, (double)max_stall / 1e6,
	       (double)(now_ns() - t0) / 1e9, orc, owner, flushes);
	return 0;
}

/* Does buf hold a block b wrote (header, CRC, pattern)?  want: scratch. */
static bool valid_block(const char *buf, uint64_t b, char *want)
{
	struct hdr h;

	memcpy(&h, buf, sizeof(h));
	if (h.magic != MAGIC || h.block != b ||
	    h.crc != crc32(buf + sizeof(h), BS - sizeof(h)))
		return false;
	fill(want, b, h.gen);
	return !memcmp(want, buf, BS);
}

static int do_verify(rbd_image_t img, const char *state, bool noise_unlanded)
{
	uint64_t nblocks;
	uint64_t *acked = map_state(state, &nblocks, false);
	uint64_t *subm = acked + nblocks, *durable = subm + nblocks;
	uint64_t checked = 0, lost = 0, bad = 0, unflushed = 0;
	char *buf = aligned_alloc(BS, BS), *want = aligned_alloc(BS, BS);

	for (uint64_t b = 0; b < nblocks; b++) {
		struct hdr h;

		if (!subm[b])
			continue;
		checked++;
		ssize_t r = p_read(img, b * BS, BS, buf);

		if (r != (ssize_t)BS) {
			fprintf(stderr, "faultio: read of block %" PRIu64
				" = %zd\n", b, r);
			bad++;
			continue;
		}
		memcpy(&h, buf, sizeof(h));
		bool zero = true;

		for (size_t i = 0; i < BS && zero; i++)
			zero = buf[i] == 0;
		if (!zero && noise_unlanded && !valid_block(buf, b, want))
			zero = true;	/* librbd's hole of an encrypted image */
		if (zero) {
			/* Never landed: a durable write lost, an early
			 * acknowledgement the fault undid (the block's first
			 * write, acknowledged but not flushed), or nothing
			 * acknowledged at all. */
			if (durable[b]) {
				fprintf(stderr, "faultio: block %" PRIu64
					": zeros, durable %" PRIu64 "\n", b,
					durable[b]);
				lost++;
			} else if (acked[b]) {
				unflushed++;
			}
			continue;
		}
		if (h.magic != MAGIC || h.block != b ||
		    h.crc != crc32(buf + sizeof(h), BS - sizeof(h))) {
			fprintf(stderr, "faultio: block %" PRIu64 ": bad "
				"content (acked gen %" PRIu64 ")\n", b,
				acked[b]);
			bad++;
			continue;
		}
		fill(want, b, h.gen);
		if (memcmp(want, buf, BS)) {
			bad++;
			continue;
		}
		if (h.gen < durable[b] || h.gen > subm[b]) {
			fprintf(stderr, "faultio: block %" PRIu64 ": gen %"
				PRIu64 ", durable %" PRIu64 ", acked %" PRIu64
				", submitted %" PRIu64 "\n", b, h.gen,
				durable[b], acked[b], subm[b]);
			lost++;
		} else if (h.gen < acked[b]) {
			unflushed++;
		}
	}
	printf("checked=%" PRIu64 " lost=%" PRIu64 " bad=%" PRIu64
	       " unflushed_lost=%" PRIu64 "\n", checked, lost, bad,
	       unflushed);
	return lost || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *lib = NULL, *pool = NULL, *image = NULL, *state = NULL;
	const char *mode = NULL;
	double seconds = 10;
	int depth = 8;
	uint64_t nblocks = 2048, first = 0;
	bool stop_err = false, cache = false;
	const char *luks = NULL, *ready = NULL;
	bool noise_unlanded = false;
	pthread_condattr_t ca;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--stop-on-error")) {
			stop_err = true;
			continue;
		}
		if (!strcmp(a, "--noise-unlanded")) {
			noise_unlanded = true;
			continue;
		}
		if (a[0] != '-' || a[1] != '-') {
			mode = a;
			continue;
		}
		if (!v) {
			fprintf(stderr, "faultio: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--lib"))
			lib = v;
		else if (!strcmp(a, "--pool"))
			pool = v;
		else if (!strcmp(a, "--image"))
			image = v;
		else if (!strcmp(a, "--state"))
			state = v;
		else if (!strcmp(a, "--seconds"))
			seconds = atof(v);
		else if (!strcmp(a, "--depth"))
			depth = atoi(v);
		else if (!strcmp(a, "--blocks"))
			nblocks = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--first"))
			first = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--luks"))
			luks = v;
		else if (!strcmp(a, "--ready"))
			ready = v;
		else if (!strcmp(a, "--bs") &&
			 (!strcmp(v, "512") || !strcmp(v, "4096")))
			BS = (size_t)atoi(v);
		else if (!strcmp(a, "--cache") &&
			 (!strcmp(v, "on") || !strcmp(v, "off")))
			cache = !strcmp(v, "on");
		else {
			fprintf(stderr, "faultio: unknown option %s\n", a);
			return 2;
		}
	}
	if (!lib || !pool || !image || !state || !mode || depth < 1 ||
	    depth > MAX_DEPTH || !nblocks ||
	    (strcmp(mode, "write") && strcmp(mode, "verify"))) {
		fprintf(stderr, "usage: faultio --lib LIB --pool POOL --image "
			"NAME --state FILE write|verify [--seconds S] "
			"[--depth D] [--blocks N] [--first B] "
			"[--stop-on-error] [--cache on|off] [--luks PASS] "
			"[--bs 512|4096] [--ready FILE] [--noise-unlanded]\n");
		return 2;
	}
	void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		fprintf(stderr, "faultio: %s\n", dlerror());
		return 2;
	}
	*(void **)&p_open = sym(dl, "rbd_open");
	*(void **)&p_close = sym(dl, "rbd_close");
	*(void **)&p_read = sym(dl, "rbd_read");
	*(void **)&p_aio_write = sym(dl, "rbd_aio_write");
	*(void **)&p_aio_flush = sym(dl, "rbd_aio_flush");
	*(void **)&p_create_comp = sym(dl, "rbd_aio_create_completion");
	*(void **)&p_get_rv = sym(dl, "rbd_aio_get_return_value");
	*(void **)&p_release = sym(dl, "rbd_aio_release");
	*(void **)&p_is_owner = sym(dl, "rbd_is_exclusive_lock_owner");
	*(void **)&p_enc_load = sym(dl, "rbd_encryption_load");
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &ca);

	rados_t cl;
	rados_ioctx_t io;
	rbd_image_t img;
	int r;

	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	if ((r = rados_create(&cl, NULL)) < 0 ||
	    (r = rados_conf_read_file(cl, NULL)) < 0 ||
	    (!cache && (r = rados_conf_set(cl, "rbd_cache", "false")) < 0) ||
	    (r = rados_connect(cl)) < 0 ||
	    (r = rados_ioctx_create(cl, pool, &io)) < 0) {
		fprintf(stderr, "faultio: cluster: %s\n", strerror(-r));
		return 2;
	}
	if ((r = p_open(io, image, &img, NULL)) < 0) {
		fprintf(stderr, "faultio: rbd_open %s: %s\n", image,
			strerror(-r));
		return 2;
	}
	if (luks) {
		rbd_encryption_luks2_format_options_t o = {
			.alg = RBD_ENCRYPTION_ALGORITHM_AES256,
			.passphrase = luks,
			.passphrase_size = strlen(luks),
		};

		r = p_enc_load(img, RBD_ENCRYPTION_FORMAT_LUKS2, &o, sizeof(o));
		if (r < 0) {
			fprintf(stderr, "faultio: rbd_encryption_load %s: %s\n",
				image, strerror(-r));
			return 2;
		}
	}
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0) {
			perror(ready);
			return 2;
		}
		close(fd);
	}
	fflush(stdout);
	if (!strcmp(mode, "write"))
		r = do_write(img, state, seconds, depth, nblocks, first,
			     stop_err, cache);
	else
		r = do_verify(img, state, noise_unlanded);
	fflush(stdout);
	p_close(img);
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return r;
}
