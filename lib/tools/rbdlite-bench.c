/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rbdlite-bench.c - fio-like benchmark of librbdlite against the real
 * librbd and against raw librados, in one run.
 *
 * The same job (rw pattern, block size, queue depth, threads, images) runs
 * on every backend, interleaved in blocks (A B C A B C ...):
 *
 *   lite    librbdlite, dlopen'ed (--lite-lib, $RBDLITE_LIB, the build
 *           tree, or the installed library)
 *   librbd  the real librbd.so.1, dlopen'ed
 *   rados   raw librados aio on the image's data objects, at the offsets
 *           the rbd job would touch: the floor for any client over librados
 *
 * Each block runs in a fresh child process (fork + exec of this program
 * with the hidden --child option), so CPU time (user+sys of all threads,
 * getrusage(RUSAGE_SELF)), context switches and allocator calls are
 * whole-process figures for one backend.  The child connects and opens
 * first, runs a warm-up, then measures a steady-state window and reports
 * to the parent over a pipe: counters plus a log-linear latency histogram
 * (256 sub-buckets per power of two: < 0.4 % relative error).  Allocator
 * calls are counted by the librbdlite-malloccount.so interposer, which the
 * parent preloads into every child (first, before jemalloc with
 * --jemalloc).
 *
 * This program links only librados (and libdl, libpthread, libm): librbd
 * and librbdlite must never meet in one process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#if defined(HAVE_CONFIG_H)
#include "config.h"
#elif defined(__has_include)
#if __has_include("config.h")
#include "config.h"
#endif
#endif

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* A sanitizer runtime must come first in the library list: nothing may be
 * preloaded in front of it, so a sanitized build counts no allocator calls. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif

#define PROG "rbdlite-bench"
#define MALLOCCOUNT_SO "librbdlite-malloccount.so"
#define LITE_SO "librbdlite.so.0"
#define LIBRBD_SO "librbd.so.1"
#define JEMALLOC_FALLBACK "libjemalloc.so.2"

extern char **environ;

/* ==== common definitions ================================================= */

enum backend { BE_LITE, BE_LIBRBD, BE_RADOS, BE_COUNT };
static const char *const be_name[BE_COUNT] = { "lite", "librbd", "rados" };

enum rw { RW_READ, RW_WRITE, RW_RANDREAD, RW_RANDWRITE, RW_RANDRW, RW_RW };
static const char *const rw_name[] = {
	"read", "write", "randread", "randwrite", "randrw", "rw"
};

enum mode { MODE_POLL, MODE_POLL_NOCB, MODE_CALLBACK, MODE_HANDOFF, MODE_COUNT };
static const char *const mode_name[MODE_COUNT] = {
	"poll", "poll-nocb", "callback", "handoff"
};

/* How jobs use the images: one image per job, or every job all images. */
enum { SPREAD_JOBS, SPREAD_IOS };

enum { ORDER_CYCLIC, ORDER_ABBA };

#define MAX_IMAGES 1024
#define MAX_JOBS 1024
#define MAX_DEPTH 4096

struct layout {
	uint64_t size;
	uint64_t features;
	uint64_t stripe_unit;
	uint64_t stripe_count;
	int64_t data_pool_id;
	int order;
	char prefix[RBD_MAX_BLOCK_NAME_SIZE + 8];
};

struct opts {
	enum rw rw;
	int rwmixread;
	uint64_t bs;
	int iodepth;
	int numjobs;
	double runtime;		/* 0: size-based */
	uint64_t size;		/* 0: whole image */
	const char *pool;
	char **images;
	int nimages;
	const char *conf;
	const char *id;
	int backends[BE_COUNT];
	int nbackends;
	int blocks;
	int json;
	const char *plot;
	int jemalloc;		/* 0 no, 1 only jemalloc, 2 both */
	const char *lite_lib;
	const char *librbd_lib;
	const char *malloccount_lib;
	double warmup;
	int warmup_given;
	enum mode mode;
	int quiet;
	int order;
	char **sets;
	int nsets;
	int prefill;
	int spread;		/* SPREAD_JOBS / SPREAD_IOS */
	int shared_handles;	/* 1: one handle per image for all jobs */
	double timeout;
	uint64_t seed;
	/* child side */
	int child;		/* 1: run a block, 2: image info probe */
	int child_backend;
	int child_fd;
	const char *child_lib;
	struct layout *layouts;
	int nlayouts;
};

/* ---- latency histogram (ns) --------------------------------------------- */

#define H_SUB_BITS 8
#define H_SUB (1u << H_SUB_BITS)
#define H_HALF (H_SUB / 2)
#define H_MAX_SHIFT 40
#define H_BUCKETS (H_SUB + H_MAX_SHIFT * H_HALF)

static inline unsigned hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < H_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - (H_SUB_BITS - 1);
	if (shift > H_MAX_SHIFT)
		return H_BUCKETS - 1;
	return H_SUB + (shift - 1) * H_HALF + (unsigned)((v >> shift) - H_HALF);
}

/* Midpoint of a bucket, in ns. */
static double hist_value(unsigned idx)
{
	unsigned k, shift;
	uint64_t sub;

	if (idx < H_SUB)
		return idx;
	k = idx - H_SUB;
	shift = k / H_HALF + 1;
	sub = k % H_HALF + H_HALF;
	return ((double)(sub << shift) + (double)(((sub + 1) << shift) - 1)) / 2;
}

static double hist_percentile(const uint64_t *h, double pct)
{
	uint64_t total = 0, target, cum = 0;

	for (unsigned i = 0; i < H_BUCKETS; i++)
		total += h[i];
	if (!total)
		return NAN;
	target = (uint64_t)ceil(pct / 100.0 * (double)total);
	if (target < 1)
		target = 1;
	for (unsigned i = 0; i < H_BUCKETS; i++) {
		cum += h[i];
		if (cum >= target)
			return hist_value(i);
	}
	return hist_value(H_BUCKETS - 1);
}

static double hist_mean(const uint64_t *h)
{
	double sum = 0;
	uint64_t total = 0;

	for (unsigned i = 0; i < H_BUCKETS; i++) {
		sum += hist_value(i) * (double)h[i];
		total += h[i];
	}
	return total ? sum / (double)total : NAN;
}

/* ---- child -> parent records ---------------------------------------------- */

enum { REC_PROGRESS = 1, REC_RESULT, REC_INFO, REC_ERROR };

struct rec_hdr {
	uint32_t type;
	uint32_t len;
};

struct progress_rec {
	int phase;		/* 0 warm-up, 1 measuring */
	double elapsed;		/* s, in the measured window */
	uint64_t ios;		/* completed in the measured window */
};

struct result_rec {
	double elapsed;
	double cpu_user;
	double cpu_sys;
	uint64_t ios, reads, writes, bytes;
	uint64_t nvcsw, nivcsw;
	uint64_t enoent_reads;
	int64_t mallocs;	/* -1: not counted */
	int64_t lib_hot_mallocs; /* librbdlite's own counter, -1: n/a */
	int64_t threads;
	int64_t rss_kib;
	char rbd_version[32];
	char lib_version[64];
	char rados_version[32];
	char lib_path[256];
	uint64_t hist[H_BUCKETS];
};

struct info_rec {
	int idx;
	struct layout l;
	char lib_version[64];
};

struct error_rec {
	int err;
	char msg[512];
};

/* ---- small helpers -------------------------------------------------------- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warnx_(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory");
	return p;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t xorshift64s(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* 1: got len bytes, 0: EOF at a record boundary, <0: error */
static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return got ? -EPIPE : 0;
		got += (size_t)n;
	}
	return 1;
}

static int send_rec(int fd, uint32_t type, const void *p, size_t len)
{
	struct rec_hdr h = { type, (uint32_t)len };
	int r = write_full(fd, &h, sizeof(h));

	return r < 0 ? r : write_full(fd, p, len);
}

static void fmt_size(char *buf, size_t n, uint64_t v)
{
	static const char suf[] = "kmgt";
	int i = -1;

	while (v >= 1024 && v % 1024 == 0 && i < 3) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, n, "%" PRIu64, v);
	else
		snprintf(buf, n, "%" PRIu64 "%c", v, suf[i]);
}

/* ==== option parsing ===================================================== */

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k': mult = 1ull << 10; end++; break;
	case 'm': mult = 1ull << 20; end++; break;
	case 'g': mult = 1ull << 30; end++; break;
	case 't': mult = 1ull << 40; end++; break;
	default:
		return -1;
	}
	if (mult > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (v && mult > UINT64_MAX / v))
		return -1;
	*out = v * mult;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || isinf(v))
		return -1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		;
	else if (!strcmp(end, "m"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (!strcmp(end, "ms"))
		v /= 1000;
	else
		return -1;
	*out = v;
	return 0;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static void add_str(char ***arr, int *n, const char *s)
{
	char **a = realloc(*arr, (size_t)(*n + 1) * sizeof(**arr));

	if (!a)
		die("out of memory");
	a[*n] = xstrdup(s);
	*arr = a;
	(*n)++;
}

/* comma-separated list */
static void add_list(char ***arr, int *n, const char *s)
{
	char *copy = xstrdup(s), *save = NULL, *tok;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (*tok)
			add_str(arr, n, tok);
	free(copy);
}

static int backend_from_name(const char *s)
{
	for (int i = 0; i < BE_COUNT; i++)
		if (!strcmp(s, be_name[i]))
			return i;
	return -1;
}

static void parse_layout(struct opts *o, const char *s)
{
	struct layout l = { 0 };
	struct layout *a;
	unsigned long long size, feat, su, sc;
	long long dpool;
	int order, n = 0;

	if (sscanf(s, "%llu:%llu:%d:%llu:%llu:%lld:%n", &size, &feat, &order,
		   &su, &sc, &dpool, &n) != 6 || !n ||
	    strlen(s + n) >= sizeof(l.prefix) || order < 12 || order > 30 ||
	    !su || !sc)
		die("bad --child-layout '%s'", s);
	l.size = size;
	l.features = feat;
	l.order = order;
	l.stripe_unit = su;
	l.stripe_count = sc;
	l.data_pool_id = dpool;
	strcpy(l.prefix, s + n);
	a = realloc(o->layouts, (size_t)(o->nlayouts + 1) * sizeof(*a));
	if (!a)
		die("out of memory");
	a[o->nlayouts++] = l;
	o->layouts = a;
}

enum {
	O_RW = 256, O_RWMIX, O_BS, O_IODEPTH, O_NUMJOBS, O_RUNTIME, O_SIZE,
	O_POOL, O_IMAGE, O_CONF, O_ID, O_BACKENDS, O_BLOCKS, O_OUTFMT, O_PLOT,
	O_JEMALLOC, O_LITELIB, O_LIBRBDLIB, O_MCLIB, O_WARMUP, O_MODE, O_QUIET,
	O_ORDER, O_SET, O_PREFILL, O_SPREAD, O_HANDLES, O_TIMEOUT, O_SEED, O_HELP, O_VERSION,
	O_CHILD, O_CHILD_INFO, O_CHILD_FD, O_CHILD_LIB, O_CHILD_LAYOUT
};

static const struct option longopts[] = {
	{ "rw", required_argument, NULL, O_RW },
	{ "readwrite", required_argument, NULL, O_RW },
	{ "rwmixread", required_argument, NULL, O_RWMIX },
	{ "bs", required_argument, NULL, O_BS },
	{ "blocksize", required_argument, NULL, O_BS },
	{ "iodepth", required_argument, NULL, O_IODEPTH },
	{ "numjobs", required_argument, NULL, O_NUMJOBS },
	{ "runtime", required_argument, NULL, O_RUNTIME },
	{ "size", required_argument, NULL, O_SIZE },
	{ "pool", required_argument, NULL, O_POOL },
	{ "image", required_argument, NULL, O_IMAGE },
	{ "rbdname", required_argument, NULL, O_IMAGE },
	{ "conf", required_argument, NULL, O_CONF },
	{ "id", required_argument, NULL, O_ID },
	{ "clientname", required_argument, NULL, O_ID },
	{ "backends", required_argument, NULL, O_BACKENDS },
	{ "blocks", required_argument, NULL, O_BLOCKS },
	{ "output-format", required_argument, NULL, O_OUTFMT },
	{ "plot", required_argument, NULL, O_PLOT },
	{ "jemalloc", optional_argument, NULL, O_JEMALLOC },
	{ "lite-lib", required_argument, NULL, O_LITELIB },
	{ "librbd-lib", required_argument, NULL, O_LIBRBDLIB },
	{ "malloccount-lib", required_argument, NULL, O_MCLIB },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "ramp_time", required_argument, NULL, O_WARMUP },
	{ "mode", required_argument, NULL, O_MODE },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "order", required_argument, NULL, O_ORDER },
	{ "set", required_argument, NULL, O_SET },
	{ "prefill", no_argument, NULL, O_PREFILL },
	{ "spread", required_argument, NULL, O_SPREAD },
	{ "handles", required_argument, NULL, O_HANDLES },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "seed", required_argument, NULL, O_SEED },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, O_VERSION },
	/* internal: the parent's interface to its children */
	{ "child", required_argument, NULL, O_CHILD },
	{ "child-info", no_argument, NULL, O_CHILD_INFO },
	{ "child-fd", required_argument, NULL, O_CHILD_FD },
	{ "child-lib", required_argument, NULL, O_CHILD_LIB },
	{ "child-layout", required_argument, NULL, O_CHILD_LAYOUT },
	{ NULL, 0, NULL, 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --image=NAME[,NAME...] [options]\n"
"\n"
"Runs one fio-like job on several backends, interleaved in blocks, each block\n"
"in a fresh process, and reports IOPS, MB/s, latency p50/p99/p99.9, client CPU\n"
"per I/O (all threads), context switches and allocator calls per I/O.\n"
"\n"
"Job:\n"
"  --rw=MODE            read, write, randread (default), randwrite, randrw, rw\n"
"  --rwmixread=PCT      read percentage for randrw/rw (default 50)\n"
"  --bs=SIZE            block size, e.g. 4k, 64K, 1M (default 4k)\n"
"  --iodepth=N          I/Os in flight per job (default 32)\n"
"  --numjobs=N          job threads per process, one image handle each (default 1)\n"
"  --runtime=SECS       measured seconds per block (default 10); 0: size-based\n"
"  --size=SIZE          region of each image to use (default: whole image); with\n"
"                       --runtime=0 also the amount each job transfers\n"
"  --warmup=SECS        unmeasured warm-up per block (default 1)\n"
"  --pool=POOL          pool of the images (default rbd)\n"
"  --image=NAME         image(s), repeatable or comma-separated; jobs are spread\n"
"                       round-robin across them (see --spread)\n"
"  --spread=jobs|ios    jobs: job i uses image i mod N (default); ios: every job\n"
"                       opens every image and spreads its I/Os over all of them\n"
"  --handles=job|shared job: every job opens its own image handles (default);\n"
"                       shared: one handle per image for all jobs, so several\n"
"                       threads submit to one image (needs --mode=handoff or\n"
"                       callback)\n"
"  --conf=FILE          ceph.conf (default: $CEPH_CONF, then Ceph's search path)\n"
"  --id=NAME            client id, without \"client.\" (default admin)\n"
"  --set=KEY=VALUE      set a Ceph option in every backend (repeatable),\n"
"                       e.g. --set=rbd_cache=false\n"
"  --mode=MODE          poll (eventfd + rbd_poll_io_events, default), poll-nocb\n"
"                       (the same without a completion callback), callback\n"
"                       (resubmit from the completion callback), handoff (the\n"
"                       callback hands the completion back to the job thread\n"
"                       through a lock-free list + eventfd; the job thread\n"
"                       resubmits)\n"
"  --prefill            write the region of every image once before measuring\n"
"  --seed=N             offset generator seed (default 1)\n"
"\n"
"Run:\n"
"  --backends=LIST      lite,librbd,rados (default all three)\n"
"  --blocks=N           blocks (repetitions) per backend (default 3)\n"
"  --order=cyclic|abba  block order: A B C A B C (default) or A B C C B A\n"
"  --jemalloc[=both]    preload jemalloc into the children; 'both' runs every\n"
"                       backend with glibc malloc and with jemalloc\n"
"  --lite-lib=PATH      librbdlite to load (default: $RBDLITE_LIB, the build\n"
"                       tree, then the installed library)\n"
"  --librbd-lib=PATH    librbd to load (default librbd.so.1)\n"
"  --malloccount-lib=PATH  allocator-call counter to preload (default:\n"
"                       $RBDLITE_MALLOCCOUNT_LIB, the build tree, then the\n"
"                       installed one)\n"
"  --timeout=SECS       kill a block that takes longer (default runtime+warmup+120)\n"
"\n"
"Output:\n"
"  --output-format=normal|json\n"
"  --plot=FILE.svg      bar charts of CPU per I/O and latency percentiles\n"
"  --quiet              no progress line\n"
"  --help, --version\n");
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	int c;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->rw = RW_RANDREAD;
	o->rwmixread = 50;
	o->bs = 4096;
	o->iodepth = 32;
	o->numjobs = 1;
	o->runtime = 10;
	o->pool = "rbd";
	o->blocks = 3;
	o->warmup = 1;
	o->mode = MODE_POLL;
	o->order = ORDER_CYCLIC;
	o->seed = 1;
	o->child_fd = -1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_RW: {
			int found = 0;

			for (unsigned i = 0; i < sizeof(rw_name) / sizeof(*rw_name); i++)
				if (!strcmp(optarg, rw_name[i])) {
					o->rw = (enum rw)i;
					found = 1;
				}
			if (!strcmp(optarg, "readwrite")) {
				o->rw = RW_RW;
				found = 1;
			}
			if (!found)
				die("--rw: unknown mode '%s'", optarg);
			break;
		}
		case O_RWMIX:
			if (parse_int(optarg, 0, 100, &o->rwmixread))
				die("--rwmixread: expected 0..100");
			break;
		case O_BS:
			if (parse_size(optarg, &o->bs) || !o->bs || o->bs > (1ull << 30))
				die("--bs: bad size '%s'", optarg);
			break;
		case O_IODEPTH:
			if (parse_int(optarg, 1, MAX_DEPTH, &o->iodepth))
				die("--iodepth: expected 1..%d", MAX_DEPTH);
			break;
		case O_NUMJOBS:
			if (parse_int(optarg, 1, MAX_JOBS, &o->numjobs))
				die("--numjobs: expected 1..%d", MAX_JOBS);
			break;
		case O_RUNTIME:
			if (parse_seconds(optarg, &o->runtime))
				die("--runtime: bad duration '%s'", optarg);
			break;
		case O_SIZE:
			if (parse_size(optarg, &o->size))
				die("--size: bad size '%s'", optarg);
			break;
		case O_POOL:
			o->pool = optarg;
			break;
		case O_IMAGE:
			add_list(&o->images, &o->nimages, optarg);
			break;
		case O_CONF:
			o->conf = optarg;
			break;
		case O_ID:
			o->id = optarg;
			if (!strncmp(o->id, "client.", 7))
				o->id += 7;
			break;
		case O_BACKENDS: {
			char **l = NULL;
			int n = 0;

			add_list(&l, &n, optarg);
			o->nbackends = 0;
			for (int i = 0; i < n; i++) {
				int b = backend_from_name(l[i]);

				if (b < 0)
					die("--backends: unknown backend '%s' (lite, librbd, rados)", l[i]);
				for (int k = 0; k < o->nbackends; k++)
					if (o->backends[k] == b)
						die("--backends: '%s' given twice", l[i]);
				o->backends[o->nbackends++] = b;
			}
			for (int i = 0; i < n; i++)
				free(l[i]);
			free(l);
			if (!o->nbackends)
				die("--backends: empty list");
			break;
		}
		case O_BLOCKS:
			if (parse_int(optarg, 1, 10000, &o->blocks))
				die("--blocks: expected 1..10000");
			break;
		case O_OUTFMT:
			if (!strcmp(optarg, "json"))
				o->json = 1;
			else if (!strcmp(optarg, "normal"))
				o->json = 0;
			else
				die("--output-format: expected normal or json");
			break;
		case O_PLOT:
			o->plot = optarg;
			break;
		case O_JEMALLOC:
			if (!optarg || !strcmp(optarg, "yes") || !strcmp(optarg, "only"))
				o->jemalloc = 1;
			else if (!strcmp(optarg, "both"))
				o->jemalloc = 2;
			else if (!strcmp(optarg, "no"))
				o->jemalloc = 0;
			else
				die("--jemalloc: expected no argument, 'both' or 'no'");
			break;
		case O_LITELIB:
			o->lite_lib = optarg;
			break;
		case O_LIBRBDLIB:
			o->librbd_lib = optarg;
			break;
		case O_MCLIB:
			o->malloccount_lib = optarg;
			break;
		case O_WARMUP:
			if (parse_seconds(optarg, &o->warmup))
				die("--warmup: bad duration '%s'", optarg);
			o->warmup_given = 1;
			break;
		case O_MODE: {
			int found = 0;

			for (int i = 0; i < MODE_COUNT; i++)
				if (!strcmp(optarg, mode_name[i])) {
					o->mode = (enum mode)i;
					found = 1;
				}
			if (!found)
				die("--mode: expected poll, poll-nocb, callback or handoff");
			break;
		}
		case O_SPREAD:
			if (!strcmp(optarg, "jobs"))
				o->spread = SPREAD_JOBS;
			else if (!strcmp(optarg, "ios"))
				o->spread = SPREAD_IOS;
			else
				die("--spread: expected jobs or ios");
			break;
		case O_HANDLES:
			if (!strcmp(optarg, "job"))
				o->shared_handles = 0;
			else if (!strcmp(optarg, "shared"))
				o->shared_handles = 1;
			else
				die("--handles: expected job or shared");
			break;
		case O_QUIET:
			o->quiet = 1;
			break;
		case O_ORDER:
			if (!strcmp(optarg, "cyclic"))
				o->order = ORDER_CYCLIC;
			else if (!strcmp(optarg, "abba"))
				o->order = ORDER_ABBA;
			else
				die("--order: expected cyclic or abba");
			break;
		case O_SET:
			if (!strchr(optarg, '=') || optarg[0] == '=')
				die("--set: expected KEY=VALUE");
			add_str(&o->sets, &o->nsets, optarg);
			break;
		case O_PREFILL:
			o->prefill = 1;
			break;
		case O_TIMEOUT:
			if (parse_seconds(optarg, &o->timeout))
				die("--timeout: bad duration '%s'", optarg);
			break;
		case O_SEED:
			if (parse_size(optarg, &v))
				die("--seed: expected a number");
			o->seed = v;
			break;
		case 'h':
		case O_HELP:
			usage(stdout);
			exit(0);
		case O_VERSION:
			printf(PROG " (librbdlite) %s\n", PACKAGE_VERSION);
			exit(0);
		case O_CHILD:
			if (o->child != 2)
				o->child = 1;
			o->child_backend = backend_from_name(optarg);
			if (o->child_backend < 0)
				die("--child: unknown backend");
			break;
		case O_CHILD_INFO:
			o->child = 2;
			break;
		case O_CHILD_FD:
			if (parse_int(optarg, 0, INT_MAX, &o->child_fd))
				die("--child-fd: bad descriptor");
			break;
		case O_CHILD_LIB:
			o->child_lib = optarg;
			break;
		case O_CHILD_LAYOUT:
			parse_layout(o, optarg);
			break;
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (!o->nbackends) {
		o->backends[0] = BE_LITE;
		o->backends[1] = BE_LIBRBD;
		o->backends[2] = BE_RADOS;
		o->nbackends = 3;
	}
	if (!o->nimages)
		die("--image is required (see --help)");
	if (o->nimages > MAX_IMAGES)
		die("at most %d images", MAX_IMAGES);
	if (o->runtime == 0 && !o->warmup_given)
		o->warmup = 0;
	if (o->shared_handles && o->mode != MODE_HANDOFF && o->mode != MODE_CALLBACK)
		die("--handles=shared: one image's poll queue cannot be split between "
		    "job threads; use --mode=handoff (or callback)");
}

static void free_opts(struct opts *o)
{
	for (int i = 0; i < o->nimages; i++)
		free(o->images[i]);
	free(o->images);
	for (int i = 0; i < o->nsets; i++)
		free(o->sets[i]);
	free(o->sets);
	free(o->layouts);
}

static int rw_is_random(enum rw rw)
{
	return rw == RW_RANDREAD || rw == RW_RANDWRITE || rw == RW_RANDRW;
}

static int rw_writes(enum rw rw)
{
	return rw != RW_READ && rw != RW_RANDREAD;
}

/* ==== child: one block on one backend ==================================== */

/* The rbd_* functions the child uses, resolved from the dlopen'ed library. */
struct rbd_api {
	void *h;
	__typeof__(rbd_version) *version;
	__typeof__(rbd_open) *open;
	__typeof__(rbd_close) *close;
	__typeof__(rbd_stat) *stat;
	__typeof__(rbd_get_features) *get_features;
	__typeof__(rbd_get_stripe_unit) *get_stripe_unit;
	__typeof__(rbd_get_stripe_count) *get_stripe_count;
	__typeof__(rbd_get_data_pool_id) *get_data_pool_id;
	__typeof__(rbd_aio_create_completion) *aio_create_completion;
	__typeof__(rbd_aio_read) *aio_read;
	__typeof__(rbd_aio_write) *aio_write;
	__typeof__(rbd_aio_get_return_value) *aio_get_return_value;
	__typeof__(rbd_aio_get_arg) *aio_get_arg;
	__typeof__(rbd_aio_release) *aio_release;
	__typeof__(rbd_set_image_notification) *set_image_notification;
	__typeof__(rbd_poll_io_events) *poll_io_events;
	const char *(*rbdlite_version)(void);
	int (*rbdlite_get_stats)(void *st, size_t size);
};

/* struct rbdlite_stats as of librbdlite 0.1 (fields are only appended) */
struct lite_stats {
	uint64_t ios_submitted;
	uint64_t ios_completed;
	uint64_t mallocs_hot_path;
	uint64_t callback_batches;
	uint64_t callbacks_run;
	uint64_t eventfd_writes;
};

enum { PH_WARMUP, PH_MEASURE, PH_STOP };

struct job;

struct slot {
	struct job *j;
	char *buf;
	uint64_t off;
	uint64_t t0;
	uint64_t rng;
	int write;
	_Atomic int pending;	/* rados: object ops in flight + 1 guard */
	_Atomic int rval;	/* rados: first error */
	ssize_t res;		/* handoff mode: rbd return value */
	int cur;		/* index in j->ji of the current I/O's image */
	struct slot *next;	/* rados poll / handoff mode: completed list */
};

/* One image as one job uses it. */
struct jimg {
	int img;		/* index in o->images */
	rbd_image_t image;	/* rbd backends */
	int own;		/* the job opened image (not a shared handle) */
	rados_ioctx_t dio;	/* rados: data pool */
	const struct layout *lay;
	uint64_t nblocks;	/* region / bs */
	uint64_t seq_start;	/* first block of a sequential job */
};

struct child;

struct job {
	struct child *c;
	int idx;
	int nimg;
	struct jimg *ji;	/* the images this job uses */
	int efd;
	int shared;		/* counters written by several threads */
	struct slot *slots;
	rbd_completion_t *comps;
	_Atomic uint64_t cursor;
	uint64_t budget;	/* size mode: I/Os to issue */
	_Atomic uint64_t issued;
	_Atomic int inflight;	/* callback mode */
	_Atomic(struct slot *) done;	/* rados poll / handoff mode */
	/* measured window, read by the main thread */
	_Atomic uint64_t ios, reads, writes, bytes, enoent;
	_Atomic uint64_t *hist;
	pthread_t th;
	int started;
};

struct child {
	const struct opts *o;
	int backend;
	int fd;
	int random;
	struct rbd_api api;
	rados_t cluster;
	rados_ioctx_t io;
	rados_ioctx_t *dio;	/* per image, rados backend */
	rbd_image_t *handles;	/* per image, --handles=shared */
	struct job *jobs;
	_Atomic int phase;
	_Atomic int failed;
	int err;
	char errmsg[512];
	pthread_mutex_t errlock;
	pthread_barrier_t opened_bar, go_bar, close_bar;
	sem_t done_sem;
	uint64_t (*malloc_get)(void);
	char lib_path[256];
};

static void child_fail(struct child *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void child_fail(struct child *c, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&c->errlock);
	if (!atomic_load(&c->failed)) {
		int n = snprintf(c->errmsg, sizeof(c->errmsg), "%s: ",
				 be_name[c->backend]);

		va_start(ap, fmt);
		vsnprintf(c->errmsg + n, sizeof(c->errmsg) - (size_t)n, fmt, ap);
		va_end(ap);
		c->err = err;
		atomic_store(&c->failed, 1);
		atomic_store(&c->phase, PH_STOP);
	}
	pthread_mutex_unlock(&c->errlock);
}

static void child_send_error(const struct opts *o, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void child_send_error(const struct opts *o, int err, const char *fmt, ...)
{
	struct error_rec e;
	va_list ap;

	memset(&e, 0, sizeof(e));
	e.err = err;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	if (send_rec(o->child_fd, REC_ERROR, &e, sizeof(e)) < 0)
		fprintf(stderr, PROG ": %s\n", e.msg);
}

#define RESOLVE(api, field, name, required)				\
	do {								\
		*(void **)&(api)->field = dlsym((api)->h, name);	\
		if ((required) && !(api)->field) {			\
			snprintf(err, errlen, "%s: no symbol %s", path, name); \
			return -ENOSYS;					\
		}							\
	} while (0)

static int load_api(struct rbd_api *a, const char *path, char *err, size_t errlen,
		    char *realpath_out, size_t rplen)
{
	struct link_map *lm = NULL;

	memset(a, 0, sizeof(*a));
	a->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!a->h) {
		snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
		return -ENOENT;
	}
	if (realpath_out) {
		if (dlinfo(a->h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
			snprintf(realpath_out, rplen, "%s", lm->l_name);
		else
			snprintf(realpath_out, rplen, "%s", path);
	}
	RESOLVE(a, version, "rbd_version", 1);
	RESOLVE(a, open, "rbd_open", 1);
	RESOLVE(a, close, "rbd_close", 1);
	RESOLVE(a, stat, "rbd_stat", 1);
	RESOLVE(a, get_features, "rbd_get_features", 1);
	RESOLVE(a, get_stripe_unit, "rbd_get_stripe_unit", 1);
	RESOLVE(a, get_stripe_count, "rbd_get_stripe_count", 1);
	RESOLVE(a, get_data_pool_id, "rbd_get_data_pool_id", 1);
	RESOLVE(a, aio_create_completion, "rbd_aio_create_completion", 1);
	RESOLVE(a, aio_read, "rbd_aio_read", 1);
	RESOLVE(a, aio_write, "rbd_aio_write", 1);
	RESOLVE(a, aio_get_return_value, "rbd_aio_get_return_value", 1);
	RESOLVE(a, aio_get_arg, "rbd_aio_get_arg", 1);
	RESOLVE(a, aio_release, "rbd_aio_release", 1);
	RESOLVE(a, set_image_notification, "rbd_set_image_notification", 1);
	RESOLVE(a, poll_io_events, "rbd_poll_io_events", 1);
	RESOLVE(a, rbdlite_version, "rbdlite_version", 0);
	RESOLVE(a, rbdlite_get_stats, "rbdlite_get_stats", 0);
	return 0;
}

static int child_connect(struct child *c, char *err, size_t errlen)
{
	const struct opts *o = c->o;
	int r;

	r = rados_create(&c->cluster, o->id);
	if (r < 0) {
		snprintf(err, errlen, "rados_create: %s", strerror(-r));
		return r;
	}
	r = rados_conf_read_file(c->cluster, o->conf);
	if (r < 0) {
		snprintf(err, errlen, "cannot read ceph config %s: %s",
			 o->conf ? o->conf : "(default search path)", strerror(-r));
		return r;
	}
	r = rados_conf_parse_env(c->cluster, NULL);
	if (r < 0) {
		snprintf(err, errlen, "CEPH_ARGS: %s", strerror(-r));
		return r;
	}
	for (int i = 0; i < o->nsets; i++) {
		char *kv = xstrdup(o->sets[i]), *eq = strchr(kv, '=');

		*eq = '\0';
		r = rados_conf_set(c->cluster, kv, eq + 1);
		if (r < 0) {
			snprintf(err, errlen, "--set %s: %s", o->sets[i], strerror(-r));
			free(kv);
			return r;
		}
		free(kv);
	}
	r = rados_connect(c->cluster);
	if (r < 0) {
		snprintf(err, errlen, "cannot connect to the cluster: %s", strerror(-r));
		return r;
	}
	r = rados_ioctx_create(c->cluster, o->pool, &c->io);
	if (r < 0) {
		c->io = NULL;
		snprintf(err, errlen, "pool %s: %s", o->pool, strerror(-r));
		return r;
	}
	return 0;
}

static void child_disconnect(struct child *c)
{
	if (c->io)
		rados_ioctx_destroy(c->io);
	if (c->cluster)
		rados_shutdown(c->cluster);
	c->io = NULL;
	c->cluster = NULL;
}

/* ---- image info probe ------------------------------------------------------ */

static int child_info(struct child *c)
{
	const struct opts *o = c->o;
	struct rbd_api *a = &c->api;

	for (int i = 0; i < o->nimages; i++) {
		struct info_rec rec;
		rbd_image_info_t info;
		rbd_image_t img;
		int r;

		memset(&rec, 0, sizeof(rec));
		rec.idx = i;
		r = a->open(c->io, o->images[i], &img, NULL);
		if (r < 0) {
			child_send_error(o, r, "cannot open image %s/%s: %s",
					 o->pool, o->images[i], strerror(-r));
			return 1;
		}
		r = a->stat(img, &info, sizeof(info));
		if (r == 0)
			r = a->get_features(img, &rec.l.features);
		if (r == 0)
			r = a->get_stripe_unit(img, &rec.l.stripe_unit);
		if (r == 0)
			r = a->get_stripe_count(img, &rec.l.stripe_count);
		if (r < 0) {
			a->close(img);
			child_send_error(o, r, "image %s: stat: %s", o->images[i],
					 strerror(-r));
			return 1;
		}
		rec.l.size = info.size;
		rec.l.order = info.order;
		rec.l.data_pool_id = a->get_data_pool_id(img);
		snprintf(rec.l.prefix, sizeof(rec.l.prefix), "%s",
			 info.block_name_prefix);
		if (a->rbdlite_version)
			snprintf(rec.lib_version, sizeof(rec.lib_version), "%s",
				 a->rbdlite_version());
		a->close(img);
		if (send_rec(c->fd, REC_INFO, &rec, sizeof(rec)) < 0)
			return 1;
	}
	return 0;
}

/* ---- the I/O engine ---------------------------------------------------------- */

static inline void ctr_add(const struct job *j, _Atomic uint64_t *p, uint64_t v)
{
	if (j->shared)
		atomic_fetch_add_explicit(p, v, memory_order_relaxed);
	else
		atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + v,
				      memory_order_relaxed);
}

static int keep_going(struct job *j)
{
	struct child *c = j->c;

	if (atomic_load_explicit(&c->phase, memory_order_relaxed) == PH_STOP)
		return 0;
	if (c->o->runtime > 0)
		return 1;
	/* size mode: each job issues its budget */
	return atomic_fetch_add_explicit(&j->issued, 1, memory_order_relaxed) < j->budget;
}

static void next_io(struct job *j, struct slot *s)
{
	const struct opts *o = j->c->o;
	const struct jimg *ji;
	uint64_t blk;

	if (j->c->random) {
		s->cur = j->nimg > 1 ? (int)(xorshift64s(&s->rng) % (uint64_t)j->nimg) : 0;
		ji = &j->ji[s->cur];
		blk = xorshift64s(&s->rng) % ji->nblocks;
	} else {
		uint64_t n = atomic_fetch_add_explicit(&j->cursor, 1,
						       memory_order_relaxed);

		/* round-robin over the images, sequential within each */
		s->cur = (int)(n % (uint64_t)j->nimg);
		ji = &j->ji[s->cur];
		blk = (ji->seq_start + n / (uint64_t)j->nimg) % ji->nblocks;
	}
	s->off = blk * o->bs;
	switch (o->rw) {
	case RW_READ:
	case RW_RANDREAD:
		s->write = 0;
		break;
	case RW_WRITE:
	case RW_RANDWRITE:
		s->write = 1;
		break;
	default:
		s->write = (int)(xorshift64s(&s->rng) % 100) >= o->rwmixread;
		break;
	}
}

static void rbd_noop_cb(rbd_completion_t comp, void *arg)
{
	(void)comp;
	(void)arg;
}

static void rbd_resubmit_cb(rbd_completion_t comp, void *arg);
static void rbd_handoff_cb(rbd_completion_t comp, void *arg);
static void rados_piece_cb(rados_completion_t rc, void *arg);
static int handle_completion(struct job *j, struct slot *s, ssize_t r);

/* Retire a slot in callback mode; the last one wakes the job thread. */
static void cb_retire(struct job *j)
{
	if (atomic_fetch_sub_explicit(&j->inflight, 1, memory_order_acq_rel) == 1) {
		uint64_t one = 1;

		if (write(j->efd, &one, sizeof(one)) < 0)
			abort();
	}
}

/*
 * Hand a finished slot back to its job thread: push it on the job's
 * lock-free completed list (release: the job thread's acquire exchange
 * sees s->res / s->rval and the read data) and write the eventfd only on
 * the empty -> non-empty transition.
 */
static void slot_handoff(struct slot *s)
{
	struct job *j = s->j;
	struct slot *head;

	head = atomic_load_explicit(&j->done, memory_order_relaxed);
	do {
		s->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&j->done, &head, s,
			memory_order_release, memory_order_relaxed));
	if (!head) {		/* empty -> non-empty: one wake-up */
		uint64_t one = 1;

		if (write(j->efd, &one, sizeof(one)) < 0)
			abort();
	}
}

/* A rados slot whose object ops have all completed. */
static void rados_slot_done(struct slot *s)
{
	struct job *j = s->j;

	if (j->c->o->mode == MODE_CALLBACK) {
		if (!handle_completion(j, s, atomic_load_explicit(&s->rval,
						memory_order_relaxed)))
			cb_retire(j);
		return;
	}
	slot_handoff(s);
}

static void rados_set_err(struct slot *s, int r)
{
	int zero = 0;

	atomic_compare_exchange_strong_explicit(&s->rval, &zero, r,
			memory_order_relaxed, memory_order_relaxed);
}

static void rados_piece_cb(rados_completion_t rc, void *arg)
{
	struct slot *s = arg;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	if (r == -ENOENT && !s->write) {
		/* a hole: librbd would return zeros */
		atomic_fetch_add_explicit(&s->j->enoent, 1, memory_order_relaxed);
		r = 0;
	}
	if (r < 0)
		rados_set_err(s, r);
	if (atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) == 1)
		rados_slot_done(s);
}

/*
 * Issue the object ops of one I/O: the image extent is mapped like librbd
 * maps it (striping v2 aware; with stripe_count 1 simply objno = off >> order).
 * Errors, synchronous or not, reach handle_completion() through s->rval.
 */
static void rados_submit(struct job *j, struct slot *s)
{
	const struct layout *L = j->ji[s->cur].lay;
	rados_ioctx_t dio = j->ji[s->cur].dio;
	uint64_t os = 1ull << L->order;
	uint64_t su = L->stripe_count == 1 ? os : L->stripe_unit;
	uint64_t sc = L->stripe_count;
	uint64_t spo = os / su;
	uint64_t off = s->off, left = j->c->o->bs;
	char *p = s->buf;

	atomic_store_explicit(&s->rval, 0, memory_order_relaxed);
	atomic_store_explicit(&s->pending, 1, memory_order_relaxed);
	while (left) {
		uint64_t blockno = off / su, blockoff = off % su;
		uint64_t stripeno = blockno / sc, stripepos = blockno % sc;
		uint64_t objno = (stripeno / spo) * sc + stripepos;
		uint64_t objoff = (stripeno % spo) * su + blockoff;
		uint64_t len = su - blockoff < left ? su - blockoff : left;
		rados_completion_t rc;
		char oid[RBD_MAX_BLOCK_NAME_SIZE + 32];
		int r;

		snprintf(oid, sizeof(oid), "%s.%016" PRIx64, L->prefix, objno);
		r = rados_aio_create_completion2(s, rados_piece_cb, &rc);
		if (r < 0) {
			rados_set_err(s, r);
			break;
		}
		atomic_fetch_add_explicit(&s->pending, 1, memory_order_relaxed);
		if (s->write)
			r = rados_aio_write(dio, oid, rc, p, len, objoff);
		else
			r = rados_aio_read(dio, oid, rc, p, len, objoff);
		if (r < 0) {
			atomic_fetch_sub_explicit(&s->pending, 1, memory_order_relaxed);
			rados_aio_release(rc);
			rados_set_err(s, r);
			break;
		}
		off += len;
		p += len;
		left -= len;
	}
	if (atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) == 1)
		rados_slot_done(s);
}

/* Start one I/O on a slot.  Returns 0 or a negative errno (rbd backends). */
static int slot_submit(struct job *j, struct slot *s)
{
	struct child *c = j->c;
	const struct rbd_api *a = &c->api;
	rbd_completion_t comp;
	rbd_callback_t cb;
	int r;

	next_io(j, s);
	s->t0 = now_ns();
	if (c->backend == BE_RADOS) {
		rados_submit(j, s);
		return 0;
	}
	cb = c->o->mode == MODE_CALLBACK ? rbd_resubmit_cb :
	     c->o->mode == MODE_HANDOFF ? rbd_handoff_cb :
	     c->o->mode == MODE_POLL ? rbd_noop_cb : NULL;
	r = a->aio_create_completion(s, cb, &comp);
	if (r < 0)
		return r;
	if (s->write)
		r = a->aio_write(j->ji[s->cur].image, s->off, c->o->bs, s->buf, comp);
	else
		r = a->aio_read(j->ji[s->cur].image, s->off, c->o->bs, s->buf, comp);
	if (r < 0)
		a->aio_release(comp);
	return r;
}

/*
 * One completed I/O: check it, account it if inside the measured window,
 * and issue the next one on the same slot.  r is the rbd return value
 * (bytes for reads, 0 for writes) or, for rados, 0 / -errno.
 * Returns 1 if the slot is in flight again, 0 if it retired.
 */
static int handle_completion(struct job *j, struct slot *s, ssize_t r)
{
	struct child *c = j->c;
	const struct opts *o = c->o;
	uint64_t t = now_ns();

	if (r < 0 || (c->backend != BE_RADOS &&
		      (s->write ? r != 0 : (uint64_t)r != o->bs))) {
		if (r >= 0)
			child_fail(c, EIO, "%s of %" PRIu64 " bytes at offset %" PRIu64
				   " of image %s returned %zd", s->write ? "write" : "read",
				   o->bs, s->off, o->images[j->ji[s->cur].img], r);
		else
			child_fail(c, (int)-r, "%s of %" PRIu64 " bytes at offset %" PRIu64
				   " of image %s failed: %s (errno %d)",
				   s->write ? "write" : "read", o->bs, s->off,
				   o->images[j->ji[s->cur].img], strerror((int)-r), (int)-r);
		return 0;
	}
	if (atomic_load_explicit(&c->phase, memory_order_relaxed) == PH_MEASURE) {
		unsigned idx = hist_index(t - s->t0);

		if (j->shared)
			atomic_fetch_add_explicit(&j->hist[idx], 1, memory_order_relaxed);
		else
			atomic_store_explicit(&j->hist[idx],
				atomic_load_explicit(&j->hist[idx], memory_order_relaxed) + 1,
				memory_order_relaxed);
		ctr_add(j, &j->ios, 1);
		ctr_add(j, s->write ? &j->writes : &j->reads, 1);
		ctr_add(j, &j->bytes, o->bs);
	}
	if (!keep_going(j))
		return 0;
	r = slot_submit(j, s);
	if (r < 0) {
		child_fail(c, (int)-r, "submitting a %s at offset %" PRIu64
			   " of image %s failed: %s (errno %d)",
			   s->write ? "write" : "read", s->off, o->images[j->ji[s->cur].img],
			   strerror((int)-r), (int)-r);
		return 0;
	}
	return 1;
}

static void rbd_resubmit_cb(rbd_completion_t comp, void *arg)
{
	struct slot *s = arg;
	struct job *j = s->j;
	ssize_t r = j->c->api.aio_get_return_value(comp);

	j->c->api.aio_release(comp);
	if (!handle_completion(j, s, r))
		cb_retire(j);
}

static void rbd_handoff_cb(rbd_completion_t comp, void *arg)
{
	struct slot *s = arg;
	struct job *j = s->j;

	s->res = j->c->api.aio_get_return_value(comp);
	j->c->api.aio_release(comp);
	slot_handoff(s);
}

static void efd_wait(int efd)
{
	uint64_t v;

	while (read(efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

/* Initial submissions; returns how many slots are in flight. */
static int job_prime(struct job *j)
{
	struct child *c = j->c;
	int n = 0;

	if (c->o->mode == MODE_CALLBACK)
		atomic_store(&j->inflight, c->o->iodepth + 1);	/* +1 guard */
	for (int i = 0; i < c->o->iodepth && keep_going(j); i++) {
		int r = slot_submit(j, &j->slots[i]);

		if (r < 0) {
			child_fail(c, -r, "submitting to image %s failed: %s (errno %d)",
				   c->o->images[j->ji[j->slots[i].cur].img],
				   strerror(-r), -r);
			break;
		}
		n++;
	}
	if (c->o->mode == MODE_CALLBACK) {
		/* drop the slots never submitted and the guard */
		int unused = c->o->iodepth - n + 1;

		if (atomic_fetch_sub(&j->inflight, unused) == unused)
			return 0;
	}
	return n;
}

static void job_run_poll_rbd(struct job *j)
{
	const struct rbd_api *a = &j->c->api;
	int depth = j->c->o->iodepth;
	int inflight = job_prime(j);

	while (inflight > 0) {
		int n;

		efd_wait(j->efd);
		/* all of the job's images share its eventfd: poll each */
		for (int k = 0; k < j->nimg; k++)
			do {
				n = a->poll_io_events(j->ji[k].image, j->comps, depth);
				for (int i = 0; i < n; i++) {
					rbd_completion_t comp = j->comps[i];
					struct slot *s = a->aio_get_arg(comp);
					ssize_t r = a->aio_get_return_value(comp);

					a->aio_release(comp);
					if (!handle_completion(j, s, r))
						inflight--;
				}
			} while (n == depth);
	}
}

/* rados poll mode and handoff mode: slots come back on j->done. */
static void job_run_handoff(struct job *j)
{
	int rados = j->c->backend == BE_RADOS;
	int inflight = job_prime(j);

	while (inflight > 0) {
		struct slot *l, *rev = NULL, *next;

		efd_wait(j->efd);
		l = atomic_exchange_explicit(&j->done, NULL, memory_order_acquire);
		for (; l; l = next) {	/* LIFO -> completion order */
			next = l->next;
			l->next = rev;
			rev = l;
		}
		for (; rev; rev = next) {
			next = rev->next;
			ssize_t r = rados ? atomic_load_explicit(&rev->rval,
							memory_order_relaxed) : rev->res;

			if (!handle_completion(j, rev, r))
				inflight--;
		}
	}
}

static void job_run_callback(struct job *j)
{
	if (!job_prime(j))
		return;
	while (atomic_load_explicit(&j->inflight, memory_order_acquire) > 0)
		efd_wait(j->efd);
}

static int job_open(struct job *j, int *failed_img)
{
	struct child *c = j->c;
	const struct opts *o = c->o;
	int r;

	j->efd = eventfd(0, EFD_CLOEXEC);
	if (j->efd < 0)
		return -errno;
	if (c->backend == BE_RADOS)
		return 0;
	for (int k = 0; k < j->nimg; k++) {
		struct jimg *ji = &j->ji[k];

		if (c->handles) {
			ji->image = c->handles[ji->img];
			continue;
		}
		r = c->api.open(c->io, o->images[ji->img], &ji->image, NULL);
		if (r < 0) {
			ji->image = NULL;
			*failed_img = ji->img;
			return r;
		}
		ji->own = 1;
		if (o->mode == MODE_POLL || o->mode == MODE_POLL_NOCB) {
			r = c->api.set_image_notification(ji->image, j->efd,
							  EVENT_TYPE_EVENTFD);
			if (r < 0) {
				*failed_img = ji->img;
				return r;
			}
		}
	}
	return 0;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct child *c = j->c;
	int bad = j->ji[0].img;
	int r = job_open(j, &bad);

	if (r < 0)
		child_fail(c, -r, "cannot open image %s/%s: %s (errno %d)",
			   c->o->pool, c->o->images[bad], strerror(-r), -r);
	pthread_barrier_wait(&c->opened_bar);
	pthread_barrier_wait(&c->go_bar);
	if (!atomic_load(&c->failed)) {
		if (c->o->mode == MODE_CALLBACK)
			job_run_callback(j);
		else if (c->backend == BE_RADOS || c->o->mode == MODE_HANDOFF)
			job_run_handoff(j);
		else
			job_run_poll_rbd(j);
	}
	sem_post(&c->done_sem);
	pthread_barrier_wait(&c->close_bar);
	/* closing is outside the measured window */
	for (int k = 0; k < j->nimg; k++) {
		if (j->ji[k].image && j->ji[k].own)
			c->api.close(j->ji[k].image);
		j->ji[k].image = NULL;
	}
	return NULL;
}

struct snap {
	uint64_t t;
	double user, sys;
	uint64_t nvcsw, nivcsw;
	int64_t mallocs;
	int64_t lib_hot;
};

static void take_snap(struct child *c, struct snap *s)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	s->t = now_ns();
	s->user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	s->sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	s->nvcsw = (uint64_t)ru.ru_nvcsw;
	s->nivcsw = (uint64_t)ru.ru_nivcsw;
	s->mallocs = c->malloc_get ? (int64_t)c->malloc_get() : -1;
	s->lib_hot = -1;
	if (c->api.rbdlite_get_stats) {
		struct lite_stats st;

		if (c->api.rbdlite_get_stats(&st, sizeof(st)) == 0)
			s->lib_hot = (int64_t)st.mallocs_hot_path;
	}
}

/* Threads and VmRSS from /proc/self/status, without stdio (no malloc). */
static void proc_status(int64_t *threads, int64_t *rss_kib)
{
	char buf[8192];
	ssize_t n, got = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	char *p;

	*threads = *rss_kib = -1;
	if (fd < 0)
		return;
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	if ((p = strstr(buf, "\nThreads:")))
		*threads = strtoll(p + 9, NULL, 10);
	if ((p = strstr(buf, "\nVmRSS:")))
		*rss_kib = strtoll(p + 7, NULL, 10);
}

static void send_progress(struct child *c, int phase, uint64_t t0)
{
	struct progress_rec p = { phase, 0, 0 };

	if (phase == 1) {
		p.elapsed = (double)(now_ns() - t0) / 1e9;
		for (int i = 0; i < c->o->numjobs; i++)
			p.ios += atomic_load_explicit(&c->jobs[i].ios, memory_order_relaxed);
	}
	(void)send_rec(c->fd, REC_PROGRESS, &p, sizeof(p));
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int child_setup_jobs(struct child *c, char *err, size_t errlen)
{
	const struct opts *o = c->o;
	int per_image[MAX_IMAGES] = { 0 }, seen[MAX_IMAGES] = { 0 };

	c->jobs = xcalloc((size_t)o->numjobs, sizeof(*c->jobs));
	if (c->backend == BE_RADOS) {
		c->dio = xcalloc((size_t)o->nimages, sizeof(*c->dio));
		for (int i = 0; i < o->nimages; i++) {
			int64_t pid = o->layouts[i].data_pool_id;
			int r = pid >= 0 ? rados_ioctx_create2(c->cluster, pid, &c->dio[i])
					 : rados_ioctx_create(c->cluster, o->pool, &c->dio[i]);

			if (r < 0) {
				c->dio[i] = NULL;
				snprintf(err, errlen, "data pool %" PRId64 " of image %s: %s",
					 pid, o->images[i], strerror(-r));
				return r;
			}
		}
	}
	for (int i = 0; i < o->numjobs; i++)
		per_image[i % o->nimages]++;
	for (int i = 0; i < o->numjobs; i++) {
		struct job *j = &c->jobs[i];
		uint64_t seed = o->seed * 0x100000001b3ull + (uint64_t)i;

		j->c = c;
		j->idx = i;
		j->nimg = o->spread == SPREAD_IOS ? o->nimages : 1;
		j->ji = xcalloc((size_t)j->nimg, sizeof(*j->ji));
		j->efd = -1;
		j->shared = o->mode == MODE_CALLBACK;
		j->budget = 0;
		for (int k = 0; k < j->nimg; k++) {
			struct jimg *ji = &j->ji[k];
			int img = o->spread == SPREAD_IOS ? k : i % o->nimages;
			const struct layout *L = &o->layouts[img];
			uint64_t region = o->size && o->size < L->size ? o->size : L->size;

			ji->img = img;
			ji->lay = L;
			ji->nblocks = region / o->bs;
			if (!ji->nblocks) {
				snprintf(err, errlen, "image %s: region of %" PRIu64
					 " bytes is smaller than one block", o->images[img],
					 region);
				return -EINVAL;
			}
			/* sequential jobs on one image start spread over the region */
			if (o->spread == SPREAD_IOS)
				ji->seq_start = ji->nblocks * (uint64_t)i /
						(uint64_t)o->numjobs;
			else
				ji->seq_start = ji->nblocks * (uint64_t)seen[img]++ /
						(uint64_t)per_image[img];
			j->budget += o->size ? (o->size < region ? o->size : region) / o->bs
					     : ji->nblocks;
			if (c->backend == BE_RADOS)
				ji->dio = c->dio[img];
		}
		if (!j->budget)
			j->budget = 1;
		j->hist = xcalloc(H_BUCKETS, sizeof(*j->hist));
		j->comps = xcalloc((size_t)o->iodepth, sizeof(*j->comps));
		j->slots = xcalloc((size_t)o->iodepth, sizeof(*j->slots));
		for (int k = 0; k < o->iodepth; k++) {
			struct slot *s = &j->slots[k];
			void *buf;
			uint64_t fill = seed ^ (uint64_t)k;

			if (posix_memalign(&buf, 4096, o->bs))
				die("out of memory");
			s->buf = buf;
			for (uint64_t b = 0; b + 8 <= o->bs; b += 8) {
				uint64_t x = splitmix64(&fill);

				memcpy(s->buf + b, &x, 8);
			}
			s->j = j;
			s->rng = seed * 31 + (uint64_t)k * 0x9e3779b97f4a7c15ull;
			(void)splitmix64(&s->rng);
			s->rng = splitmix64(&s->rng) | 1;
		}
	}
	return 0;
}

static void child_free_jobs(struct child *c)
{
	const struct opts *o = c->o;

	if (c->jobs) {
		for (int i = 0; i < o->numjobs; i++) {
			struct job *j = &c->jobs[i];

			if (j->slots)
				for (int k = 0; k < o->iodepth; k++)
					free(j->slots[k].buf);
			free(j->slots);
			free(j->ji);
			free(j->comps);
			free(j->hist);
			if (j->efd >= 0)
				close(j->efd);
		}
	}
	free(c->jobs);
	c->jobs = NULL;
	if (c->handles) {
		for (int i = 0; i < o->nimages; i++)
			if (c->handles[i])
				c->api.close(c->handles[i]);
		free(c->handles);
		c->handles = NULL;
	}
	if (c->dio) {
		for (int i = 0; i < o->nimages; i++)
			if (c->dio[i])
				rados_ioctx_destroy(c->dio[i]);
		free(c->dio);
		c->dio = NULL;
	}
}

static int child_bench(struct child *c)
{
	const struct opts *o = c->o;
	struct result_rec *res;
	struct snap s0, s1;
	char err[512];
	int nthreads = 0, r, maj, min, ext;

	if (o->nlayouts != o->nimages) {
		child_send_error(o, EINVAL, "internal: %d layouts for %d images",
				 o->nlayouts, o->nimages);
		return 1;
	}
	r = child_setup_jobs(c, err, sizeof(err));
	if (r < 0) {
		child_send_error(o, -r, "%s: %s", be_name[c->backend], err);
		child_free_jobs(c);
		return 1;
	}
	if (o->shared_handles && c->backend != BE_RADOS) {
		/* one handle per image, used by every job (opened here, before
		 * the job threads start, and closed after they are joined) */
		c->handles = xcalloc((size_t)o->nimages, sizeof(*c->handles));
		for (int i = 0; i < o->nimages; i++) {
			r = c->api.open(c->io, o->images[i], &c->handles[i], NULL);
			if (r < 0) {
				c->handles[i] = NULL;
				child_send_error(o, -r, "%s: cannot open image %s/%s: %s",
						 be_name[c->backend], o->pool,
						 o->images[i], strerror(-r));
				child_free_jobs(c);
				return 1;
			}
		}
	}
	pthread_barrier_init(&c->opened_bar, NULL, (unsigned)o->numjobs + 1);
	pthread_barrier_init(&c->go_bar, NULL, (unsigned)o->numjobs + 1);
	pthread_barrier_init(&c->close_bar, NULL, (unsigned)o->numjobs + 1);
	sem_init(&c->done_sem, 0, 0);
	for (int i = 0; i < o->numjobs; i++) {
		r = pthread_create(&c->jobs[i].th, NULL, job_main, &c->jobs[i]);
		if (r) {
			/* cannot proceed without every thread at the barriers */
			child_send_error(o, r, "pthread_create: %s", strerror(r));
			_exit(1);
		}
		nthreads++;
	}
	pthread_barrier_wait(&c->opened_bar);
	if (o->runtime == 0 || o->warmup == 0) {
		take_snap(c, &s0);
		atomic_store(&c->phase, atomic_load(&c->failed) ? PH_STOP : PH_MEASURE);
	}
	pthread_barrier_wait(&c->go_bar);

	if (o->runtime > 0) {
		uint64_t t_end, tick;

		if (o->warmup > 0) {
			uint64_t t_w = now_ns() + (uint64_t)(o->warmup * 1e9);

			send_progress(c, 0, 0);
			while (now_ns() < t_w && !atomic_load(&c->failed)) {
				uint64_t t = now_ns() + 200000000u;

				sleep_until(t < t_w ? t : t_w);
			}
			take_snap(c, &s0);
			if (!atomic_load(&c->failed))
				atomic_store(&c->phase, PH_MEASURE);
		}
		t_end = s0.t + (uint64_t)(o->runtime * 1e9);
		tick = s0.t;
		while (!atomic_load(&c->failed)) {
			uint64_t now = now_ns();

			if (now >= t_end)
				break;
			tick += 1000000000u;
			sleep_until(tick < t_end ? tick : t_end);
			if (now_ns() < t_end)
				send_progress(c, 1, s0.t);
		}
		take_snap(c, &s1);
		atomic_store(&c->phase, PH_STOP);
		for (int i = 0; i < o->numjobs; i++)
			sem_wait(&c->done_sem);
	} else {
		for (int i = 0; i < o->numjobs; i++)
			sem_wait(&c->done_sem);
		take_snap(c, &s1);
		atomic_store(&c->phase, PH_STOP);
	}

	res = xcalloc(1, sizeof(*res));
	proc_status(&res->threads, &res->rss_kib);
	pthread_barrier_wait(&c->close_bar);
	for (int i = 0; i < nthreads; i++)
		pthread_join(c->jobs[i].th, NULL);

	if (atomic_load(&c->failed)) {
		child_send_error(o, c->err, "%s", c->errmsg);
		free(res);
		child_free_jobs(c);
		return 1;
	}
	res->elapsed = (double)(s1.t - s0.t) / 1e9;
	res->cpu_user = s1.user - s0.user;
	res->cpu_sys = s1.sys - s0.sys;
	res->nvcsw = s1.nvcsw - s0.nvcsw;
	res->nivcsw = s1.nivcsw - s0.nivcsw;
	res->mallocs = s0.mallocs >= 0 ? s1.mallocs - s0.mallocs : -1;
	res->lib_hot_mallocs = s0.lib_hot >= 0 ? s1.lib_hot - s0.lib_hot : -1;
	for (int i = 0; i < o->numjobs; i++) {
		struct job *j = &c->jobs[i];

		res->ios += atomic_load(&j->ios);
		res->reads += atomic_load(&j->reads);
		res->writes += atomic_load(&j->writes);
		res->bytes += atomic_load(&j->bytes);
		res->enoent_reads += atomic_load(&j->enoent);
		for (unsigned k = 0; k < H_BUCKETS; k++)
			res->hist[k] += atomic_load_explicit(&j->hist[k], memory_order_relaxed);
	}
	rados_version(&maj, &min, &ext);
	snprintf(res->rados_version, sizeof(res->rados_version), "%d.%d.%d", maj, min, ext);
	if (c->backend != BE_RADOS) {
		c->api.version(&maj, &min, &ext);
		snprintf(res->rbd_version, sizeof(res->rbd_version), "%d.%d.%d",
			 maj, min, ext);
		if (c->api.rbdlite_version)
			snprintf(res->lib_version, sizeof(res->lib_version), "%s",
				 c->api.rbdlite_version());
		snprintf(res->lib_path, sizeof(res->lib_path), "%s", c->lib_path);
	}
	r = send_rec(c->fd, REC_RESULT, res, sizeof(*res));
	free(res);
	child_free_jobs(c);
	pthread_barrier_destroy(&c->opened_bar);
	pthread_barrier_destroy(&c->go_bar);
	pthread_barrier_destroy(&c->close_bar);
	sem_destroy(&c->done_sem);
	return r < 0;
}

static int child_main(const struct opts *o)
{
	struct child c;
	char err[512];
	int r, ret;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.fd = o->child_fd;
	c.backend = o->child_backend;
	c.random = rw_is_random(o->rw);
	pthread_mutex_init(&c.errlock, NULL);
	atomic_store(&c.phase, PH_WARMUP);
	if (c.fd < 0)
		die("--child needs --child-fd");
	signal(SIGPIPE, SIG_IGN);
	if (c.backend != BE_RADOS || o->child == 2) {
		if (!o->child_lib) {
			child_send_error(o, EINVAL, "internal: no --child-lib");
			return 1;
		}
		r = load_api(&c.api, o->child_lib, err, sizeof(err),
			     c.lib_path, sizeof(c.lib_path));
		if (r < 0) {
			child_send_error(o, -r, "%s: %s", be_name[c.backend], err);
			return 1;
		}
	}
	*(void **)&c.malloc_get = dlsym(RTLD_DEFAULT, "rbdlite_malloccount_get");
	r = child_connect(&c, err, sizeof(err));
	if (r < 0) {
		child_send_error(o, -r, "%s: %s", be_name[c.backend], err);
		child_disconnect(&c);
		return 1;
	}
	ret = o->child == 2 ? child_info(&c) : child_bench(&c);
	child_disconnect(&c);
	pthread_mutex_destroy(&c.errlock);
	/* The rbd library stays loaded: unloading librbd is not safe. */
	return ret;
}

/* ==== parent ================================================================ */

struct block_res {
	int done;
	int seq;		/* position in the run, 1-based */
	struct result_rec r;
};

struct variant {
	int backend;
	int jemalloc;
	char name[32];
	const char *lib;
	struct block_res *b;
	/* summary */
	int n;
	double iops_med, iops_min, iops_max;
	double mbps_med;
	double cpu_med, cpu_min, cpu_max;
	double ctx_med;
	double mal_med;		/* NAN: not counted */
	double libhot_med;	/* NAN: n/a */
	double threads_med, rss_med;
	double p50, p99, p999, mean;
	uint64_t ios_total, enoent_total, reads_total;
	uint64_t *hist;
	char rbd_version[32], lib_version[64], rados_version[32], lib_path[256];
};

struct parent {
	struct opts *o;
	int argc;
	char **argv;
	char exe[PATH_MAX];
	char lite_lib[PATH_MAX];
	int have_lite;
	const char *librbd_lib;
	char mc_lib[PATH_MAX];
	int have_mc;
	const char *jemalloc_so;
	struct layout *layouts;
	struct variant *v;
	int nv;
	int total_blocks;
	int tty;
	time_t start;
};

static int file_exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void exe_dir(char *buf, size_t n)
{
	ssize_t len = readlink("/proc/self/exe", buf, n - 1);
	char *slash;

	if (len < 0) {
		buf[0] = '\0';
		return;
	}
	buf[len] = '\0';
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

/* First existing file among candidates (NULL-terminated, dir-relative ones
 * are "%s/..." formats over the executable's directory). */
static int find_lib(char *out, size_t n, const char *dir, const char *const *rel,
		    const char *installed)
{
	for (int i = 0; rel[i]; i++) {
		if (!dir[0])
			break;
		if (snprintf(out, n, rel[i], dir) >= (int)n)
			continue;
		if (file_exists(out))
			return 1;
	}
	if (installed && file_exists(installed)) {
		snprintf(out, n, "%s", installed);
		return 1;
	}
	return 0;
}

static void resolve_paths(struct parent *P)
{
	struct opts *o = P->o;
	char dir[PATH_MAX];
	const char *env;

	if (readlink("/proc/self/exe", P->exe, sizeof(P->exe) - 1) < 0)
		die("cannot find my own executable: %s", strerror(errno));
	exe_dir(dir, sizeof(dir));

	/* librbdlite */
	env = getenv("RBDLITE_LIB");
	if (o->lite_lib) {
		snprintf(P->lite_lib, sizeof(P->lite_lib), "%s", o->lite_lib);
		P->have_lite = 1;
	} else if (env && *env) {
		snprintf(P->lite_lib, sizeof(P->lite_lib), "%s", env);
		P->have_lite = 1;
	} else {
		static const char *const rel[] = {
			"%s/../.libs/" LITE_SO,		/* build tree: lib/tools/ */
			"%s/../lib/.libs/" LITE_SO,
			NULL
		};
		static const char *const rel2[] = { "%s/../lib/" LITE_SO, NULL };
#ifdef RBDLITE_LIBDIR
		const char *inst = RBDLITE_LIBDIR "/" LITE_SO;
#else
		const char *inst = NULL;
#endif
		P->have_lite = find_lib(P->lite_lib, sizeof(P->lite_lib), dir, rel, inst) ||
			       find_lib(P->lite_lib, sizeof(P->lite_lib), dir, rel2, NULL);
		if (!P->have_lite)	/* let the dynamic linker search */
			snprintf(P->lite_lib, sizeof(P->lite_lib), "%s", LITE_SO);
		P->have_lite = 1;
	}

	P->librbd_lib = o->librbd_lib ? o->librbd_lib : LIBRBD_SO;

	/* the allocator-call counter */
	env = getenv("RBDLITE_MALLOCCOUNT_LIB");
#ifdef BENCH_SANITIZED
	if (1) {
		warnx_("sanitizer build: allocator calls are not counted");
		if (o->jemalloc)
			die("--jemalloc cannot be used with a sanitizer build");
	} else
#endif
	if (o->malloccount_lib) {
		snprintf(P->mc_lib, sizeof(P->mc_lib), "%s", o->malloccount_lib);
		P->have_mc = file_exists(P->mc_lib);
		if (!P->have_mc)
			die("--malloccount-lib: %s not found", P->mc_lib);
	} else if (env && *env) {
		snprintf(P->mc_lib, sizeof(P->mc_lib), "%s", env);
		P->have_mc = file_exists(P->mc_lib);
		if (!P->have_mc)
			die("RBDLITE_MALLOCCOUNT_LIB: %s not found", P->mc_lib);
	} else {
		static const char *const rel[] = {
			"%s/.libs/" MALLOCCOUNT_SO,	/* build tree */
			"%s/" MALLOCCOUNT_SO,
			NULL
		};
		static const char *const rel2[] = {
			"%s/../lib/librbdlite/" MALLOCCOUNT_SO, NULL
		};
#ifdef RBDLITE_PKGLIBDIR
		const char *inst = RBDLITE_PKGLIBDIR "/" MALLOCCOUNT_SO;
#else
		const char *inst = NULL;
#endif
		P->have_mc = find_lib(P->mc_lib, sizeof(P->mc_lib), dir, rel, inst) ||
			     find_lib(P->mc_lib, sizeof(P->mc_lib), dir, rel2, NULL);
		if (!P->have_mc)
			warnx_("%s not found: allocator calls will not be counted "
			       "(use --malloccount-lib or RBDLITE_MALLOCCOUNT_LIB)",
			       MALLOCCOUNT_SO);
	}
	/* canonical paths, so that the children's LD_PRELOAD does not depend
	 * on the working directory */
	if (P->have_mc) {
		char *rp = realpath(P->mc_lib, NULL);

		if (rp) {
			snprintf(P->mc_lib, sizeof(P->mc_lib), "%s", rp);
			free(rp);
		}
	}
	if (strchr(P->lite_lib, '/')) {
		char *rp = realpath(P->lite_lib, NULL);

		if (!rp)
			die("librbdlite %s: %s", P->lite_lib, strerror(errno));
		snprintf(P->lite_lib, sizeof(P->lite_lib), "%s", rp);
		free(rp);
	}

#ifdef RBDLITE_JEMALLOC_SO
	P->jemalloc_so = file_exists(RBDLITE_JEMALLOC_SO) ? RBDLITE_JEMALLOC_SO
							  : JEMALLOC_FALLBACK;
#else
	P->jemalloc_so = JEMALLOC_FALLBACK;
#endif
	if (o->jemalloc) {
		void *h = dlopen(P->jemalloc_so, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);

		/* Only check that it exists; never load it into the parent. */
		if (h)
			dlclose(h);
		else if (strchr(P->jemalloc_so, '/') && !file_exists(P->jemalloc_so))
			die("--jemalloc: %s not found", P->jemalloc_so);
	}
}

/* ---- running a child ---------------------------------------------------------- */

struct child_cb {
	void (*progress)(struct parent *P, const struct progress_rec *p, void *arg);
	void (*info)(struct parent *P, const struct info_rec *r, void *arg);
	struct result_rec *result;
	void *arg;
	char errmsg[600];
	int err;
};

static char **build_env(const struct parent *P, int jemalloc)
{
	size_t n = 0, k = 0;
	char **env;
	const char *old = getenv("LD_PRELOAD");
	size_t len;
	char *pre;

	while (environ[n])
		n++;
	env = xcalloc(n + 2, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[k++] = environ[i];
	len = 32 + strlen(P->mc_lib) + strlen(P->jemalloc_so) + (old ? strlen(old) : 0);
	pre = xcalloc(1, len);
	strcpy(pre, "LD_PRELOAD=");
	/* the counter first, so it sees every call, then the allocator */
	if (P->have_mc)
		strcat(pre, P->mc_lib);
	if (jemalloc) {
		if (P->have_mc)
			strcat(pre, ":");
		strcat(pre, P->jemalloc_so);
	}
	if (old && *old) {
		if (pre[11])
			strcat(pre, ":");
		strcat(pre, old);
	}
	if (pre[11])
		env[k++] = pre;
	else
		free(pre);
	env[k] = NULL;
	return env;
}

static void free_env(char **env, size_t nenv_orig)
{
	(void)nenv_orig;
	for (size_t i = 0; env[i]; i++)
		if (!strncmp(env[i], "LD_PRELOAD=", 11)) {
			free(env[i]);
			break;
		}
	free(env);
}

/*
 * Run this program as a child with the user's arguments plus extra ones,
 * and dispatch its records.  Returns 0 on success, -1 on failure with
 * cb->errmsg set.
 */
static int run_child(struct parent *P, int jemalloc, char **extra, int nextra,
		     double timeout, struct child_cb *cb)
{
	int pfd[2], status;
	pid_t pid;
	char **argv, **env;
	int argc = 0, got_result = 0, got_error = 0, ret = 0;
	uint64_t deadline = timeout > 0 ? now_ns() + (uint64_t)(timeout * 1e9) : 0;
	union {
		struct progress_rec p;
		struct info_rec i;
		struct error_rec e;
	} small;

	argv = xcalloc((size_t)(P->argc + nextra + 2), sizeof(*argv));
	argv[argc++] = P->argv[0];
	for (int i = 1; i < P->argc; i++)
		argv[argc++] = P->argv[i];
	for (int i = 0; i < nextra; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	env = build_env(P, jemalloc);

	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		/* the write end becomes fd 3 without O_CLOEXEC */
		if (pfd[1] == 3) {
			if (fcntl(3, F_SETFD, 0) < 0)
				_exit(127);
		} else if (dup2(pfd[1], 3) < 0) {
			_exit(127);
		}
		/* stdout is for the report: library chatter goes to stderr */
		dup2(2, 1);
		execve(P->exe, argv, env);
		_exit(127);
	}
	close(pfd[1]);
	free(argv);
	free_env(env, 0);

	for (;;) {
		struct pollfd pf = { pfd[0], POLLIN, 0 };
		struct rec_hdr h;
		int r, wait_ms = 1000;

		if (deadline) {
			uint64_t now = now_ns();

			if (now >= deadline) {
				kill(pid, SIGKILL);
				snprintf(cb->errmsg, sizeof(cb->errmsg),
					 "timed out after %.0f s (see --timeout)", timeout);
				ret = -1;
				break;
			}
			if ((deadline - now) / 1000000 < (uint64_t)wait_ms)
				wait_ms = (int)((deadline - now) / 1000000) + 1;
		}
		r = poll(&pf, 1, wait_ms);
		if (r < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		r = read_full(pfd[0], &h, sizeof(h));
		if (r == 0)
			break;
		if (r < 0) {
			snprintf(cb->errmsg, sizeof(cb->errmsg), "reading from the child: %s",
				 strerror(-r));
			ret = -1;
			break;
		}
		if (h.type == REC_RESULT && h.len == sizeof(struct result_rec)) {
			r = read_full(pfd[0], cb->result, h.len);
			got_result = r == 1;
		} else if ((h.type == REC_PROGRESS && h.len == sizeof(small.p)) ||
			   (h.type == REC_INFO && h.len == sizeof(small.i)) ||
			   (h.type == REC_ERROR && h.len == sizeof(small.e))) {
			r = read_full(pfd[0], &small, h.len);
			if (r == 1 && h.type == REC_PROGRESS && cb->progress)
				cb->progress(P, &small.p, cb->arg);
			if (r == 1 && h.type == REC_INFO && cb->info)
				cb->info(P, &small.i, cb->arg);
			if (r == 1 && h.type == REC_ERROR) {
				small.e.msg[sizeof(small.e.msg) - 1] = '\0';
				snprintf(cb->errmsg, sizeof(cb->errmsg), "%s", small.e.msg);
				cb->err = small.e.err;
				got_error = 1;
			}
		} else {
			r = -EPROTO;
		}
		if (r != 1) {
			snprintf(cb->errmsg, sizeof(cb->errmsg),
				 "bad record from the child (type %u, %u bytes)", h.type, h.len);
			kill(pid, SIGKILL);
			ret = -1;
			break;
		}
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (ret == 0) {
		if (got_error) {
			ret = -1;
		} else if (WIFSIGNALED(status)) {
			snprintf(cb->errmsg, sizeof(cb->errmsg), "child killed by signal %d (%s)",
				 WTERMSIG(status), strsignal(WTERMSIG(status)));
			ret = -1;
		} else if (WEXITSTATUS(status) != 0) {
			snprintf(cb->errmsg, sizeof(cb->errmsg), "child exited with status %d%s",
				 WEXITSTATUS(status),
				 WEXITSTATUS(status) == 127 ? " (exec failed?)" : "");
			ret = -1;
		} else if (cb->result && !got_result) {
			snprintf(cb->errmsg, sizeof(cb->errmsg), "child sent no result");
			ret = -1;
		}
	}
	return ret;
}

/* ---- image info ------------------------------------------------------------------ */

static void on_info(struct parent *P, const struct info_rec *r, void *arg)
{
	int *got = arg;

	if (r->idx >= 0 && r->idx < P->o->nimages) {
		P->layouts[r->idx] = r->l;
		P->layouts[r->idx].prefix[sizeof(r->l.prefix) - 1] = '\0';
		(*got)++;
	}
}

static void probe_images(struct parent *P)
{
	struct opts *o = P->o;
	int order[2], n = 0, selected_lite = 0, selected_librbd = 0;
	char msgs[2][600];

	for (int i = 0; i < o->nbackends; i++) {
		selected_lite |= o->backends[i] == BE_LITE;
		selected_librbd |= o->backends[i] == BE_LIBRBD;
	}
	/* librbdlite first unless only librbd is being measured */
	if (selected_librbd && !selected_lite) {
		order[n++] = BE_LIBRBD;
		order[n++] = BE_LITE;
	} else {
		order[n++] = BE_LITE;
		order[n++] = BE_LIBRBD;
	}
	P->layouts = xcalloc((size_t)o->nimages, sizeof(*P->layouts));
	for (int k = 0; k < n; k++) {
		struct child_cb cb;
		char a0[32], a1[PATH_MAX + 16];
		char *extra[4];
		int got = 0;

		memset(&cb, 0, sizeof(cb));
		cb.info = on_info;
		cb.arg = &got;
		snprintf(a0, sizeof(a0), "--child=%s", be_name[order[k]]);
		snprintf(a1, sizeof(a1), "--child-lib=%s",
			 order[k] == BE_LITE ? P->lite_lib : P->librbd_lib);
		extra[0] = a0;
		extra[1] = (char *)"--child-info";
		extra[2] = (char *)"--child-fd=3";
		extra[3] = a1;
		if (run_child(P, 0, extra, 4, 120, &cb) == 0 && got == o->nimages)
			return;
		snprintf(msgs[k], sizeof(msgs[k]), "%s", cb.errmsg[0] ? cb.errmsg : "no image info");
	}
	die("cannot read the image layout:\n  via librbdlite: %s\n  via librbd: %s",
	    order[0] == BE_LITE ? msgs[0] : msgs[1],
	    order[0] == BE_LITE ? msgs[1] : msgs[0]);
}

static void layout_args(struct parent *P, char ***extra, int *n)
{
	for (int i = 0; i < P->o->nimages; i++) {
		const struct layout *l = &P->layouts[i];
		char buf[256];

		snprintf(buf, sizeof(buf), "--child-layout=%" PRIu64 ":%" PRIu64 ":%d:%"
			 PRIu64 ":%" PRIu64 ":%" PRId64 ":%s", l->size, l->features,
			 l->order, l->stripe_unit, l->stripe_count, l->data_pool_id,
			 l->prefix);
		add_str(extra, n, buf);
	}
}

/* ---- progress ---------------------------------------------------------------------- */

struct block_ctx {
	int blockno;
	const struct variant *v;
};

static void job_desc(const struct opts *o, char *buf, size_t n)
{
	char bs[32];

	fmt_size(bs, sizeof(bs), o->bs);
	if (o->rw == RW_RANDRW || o->rw == RW_RW)
		snprintf(buf, n, "%s%d %s qd%d jobs%d%s%s", rw_name[o->rw], o->rwmixread,
			 bs, o->iodepth, o->numjobs,
			 o->spread == SPREAD_IOS ? " spread" : "",
			 o->shared_handles ? " shared" : "");
	else
		snprintf(buf, n, "%s %s qd%d jobs%d%s%s", rw_name[o->rw], bs, o->iodepth,
			 o->numjobs, o->spread == SPREAD_IOS ? " spread" : "",
			 o->shared_handles ? " shared" : "");
}

static void on_progress(struct parent *P, const struct progress_rec *p, void *arg)
{
	const struct block_ctx *b = arg;
	char desc[96];

	if (P->o->quiet || !P->tty)
		return;
	job_desc(P->o, desc, sizeof(desc));
	if (p->phase == 0)
		fprintf(stderr, "\r\033[Kblock %d/%d: %-14s %s: warming up",
			b->blockno, P->total_blocks, b->v->name, desc);
	else
		fprintf(stderr, "\r\033[Kblock %d/%d: %-14s %s: %.0f/%.0f s, %.0f IOPS",
			b->blockno, P->total_blocks, b->v->name, desc, p->elapsed,
			P->o->runtime, p->elapsed > 0 ? (double)p->ios / p->elapsed : 0.0);
	fflush(stderr);
}

/* ---- prefill ---------------------------------------------------------------------- */

static void prefill(struct parent *P)
{
	struct opts *o = P->o;
	int be = BE_RADOS;
	uint64_t bs = UINT64_MAX, total = 0;
	char **extra = NULL;
	int n = 0;
	char buf[PATH_MAX + 32], bsb[32];
	struct child_cb cb;
	struct result_rec *res = xcalloc(1, sizeof(*res));
	struct block_ctx bctx;
	struct variant pv;

	for (int i = 0; i < o->nbackends; i++)
		if (o->backends[i] == BE_LIBRBD)
			be = BE_LIBRBD;
	if (be == BE_RADOS)
		for (int i = 0; i < o->nbackends; i++)
			if (o->backends[i] == BE_LITE)
				be = BE_LITE;
	for (int i = 0; i < o->nimages; i++) {
		uint64_t os = 1ull << P->layouts[i].order;
		uint64_t region = o->size && o->size < P->layouts[i].size ? o->size
									   : P->layouts[i].size;

		if (os < bs)
			bs = os;
		total += region;
	}
	if (bs > (4u << 20))
		bs = 4u << 20;
	fmt_size(bsb, sizeof(bsb), bs);
	if (!o->quiet)
		fprintf(stderr, "prefill: writing %.1f MiB to %d image(s) with %s, bs %s\n",
			(double)total / 1048576.0, o->nimages, be_name[be], bsb);
	snprintf(buf, sizeof(buf), "--child=%s", be_name[be]);
	add_str(&extra, &n, buf);
	add_str(&extra, &n, "--child-fd=3");
	if (be != BE_RADOS) {
		snprintf(buf, sizeof(buf), "--child-lib=%s",
			 be == BE_LITE ? P->lite_lib : P->librbd_lib);
		add_str(&extra, &n, buf);
	}
	layout_args(P, &extra, &n);
	add_str(&extra, &n, "--rw=write");
	snprintf(buf, sizeof(buf), "--bs=%" PRIu64, bs);
	add_str(&extra, &n, buf);
	add_str(&extra, &n, "--iodepth=8");
	snprintf(buf, sizeof(buf), "--numjobs=%d", o->nimages);
	add_str(&extra, &n, buf);
	add_str(&extra, &n, "--runtime=0");
	add_str(&extra, &n, "--warmup=0");
	add_str(&extra, &n, "--mode=poll");
	add_str(&extra, &n, "--spread=jobs");
	add_str(&extra, &n, "--handles=job");
	memset(&cb, 0, sizeof(cb));
	memset(&pv, 0, sizeof(pv));
	snprintf(pv.name, sizeof(pv.name), "prefill");
	bctx.blockno = 0;
	bctx.v = &pv;
	cb.result = res;
	cb.arg = &bctx;
	if (run_child(P, 0, extra, n, 0, &cb) < 0) {
		fprintf(stderr, PROG ": prefill failed: %s\n", cb.errmsg);
		exit(1);
	}
	for (int i = 0; i < n; i++)
		free(extra[i]);
	free(extra);
	free(res);
}

/* ---- statistics -------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double blk_iops(const struct result_rec *r)
{
	return r->elapsed > 0 ? (double)r->ios / r->elapsed : 0;
}

static double blk_cpu(const struct result_rec *r)
{
	return r->ios ? (r->cpu_user + r->cpu_sys) * 1e6 / (double)r->ios : NAN;
}

static double blk_ctx(const struct result_rec *r)
{
	return r->ios ? (double)(r->nvcsw + r->nivcsw) / (double)r->ios : NAN;
}

static double blk_mal(const struct result_rec *r)
{
	return r->ios && r->mallocs >= 0 ? (double)r->mallocs / (double)r->ios : NAN;
}

static void summarize(struct parent *P, struct variant *v)
{
	int nb = P->o->blocks, n = 0;
	double *a = xcalloc((size_t)nb, sizeof(double));

	v->hist = xcalloc(H_BUCKETS, sizeof(uint64_t));
#define MED(field, expr)						\
	do {								\
		n = 0;							\
		for (int i = 0; i < nb; i++)				\
			if (v->b[i].done) {				\
				const struct result_rec *r = &v->b[i].r; \
				double x = (expr);			\
				if (!isnan(x))				\
					a[n++] = x;			\
			}						\
		v->field = median(a, n);				\
	} while (0)
	MED(iops_med, blk_iops(r));
	if (n) {
		v->iops_min = a[0];
		v->iops_max = a[n - 1];
	}
	MED(mbps_med, r->elapsed > 0 ? (double)r->bytes / r->elapsed / 1e6 : NAN);
	MED(cpu_med, blk_cpu(r));
	if (n) {
		v->cpu_min = a[0];
		v->cpu_max = a[n - 1];
	}
	MED(ctx_med, blk_ctx(r));
	MED(mal_med, blk_mal(r));
	MED(libhot_med, r->lib_hot_mallocs >= 0 && r->ios ?
			(double)r->lib_hot_mallocs / (double)r->ios : NAN);
	MED(threads_med, r->threads >= 0 ? (double)r->threads : NAN);
	MED(rss_med, r->rss_kib >= 0 ? (double)r->rss_kib : NAN);
#undef MED
	v->n = 0;
	for (int i = 0; i < nb; i++) {
		const struct result_rec *r = &v->b[i].r;

		if (!v->b[i].done)
			continue;
		v->n++;
		v->ios_total += r->ios;
		v->reads_total += r->reads;
		v->enoent_total += r->enoent_reads;
		for (unsigned k = 0; k < H_BUCKETS; k++)
			v->hist[k] += r->hist[k];
		if (!v->rbd_version[0]) {
			memcpy(v->rbd_version, r->rbd_version, sizeof(v->rbd_version));
			memcpy(v->lib_version, r->lib_version, sizeof(v->lib_version));
			memcpy(v->rados_version, r->rados_version, sizeof(v->rados_version));
			memcpy(v->lib_path, r->lib_path, sizeof(v->lib_path));
		}
	}
	v->p50 = hist_percentile(v->hist, 50) / 1000;
	v->p99 = hist_percentile(v->hist, 99) / 1000;
	v->p999 = hist_percentile(v->hist, 99.9) / 1000;
	v->mean = hist_mean(v->hist) / 1000;
	free(a);
}

/* geometric mean of paired per-block ratios a/b */
static double paired_geomean(const struct parent *P, const struct variant *a,
			     const struct variant *b, double (*f)(const struct result_rec *))
{
	double s = 0;
	int n = 0;

	for (int i = 0; i < P->o->blocks; i++) {
		double x, y;

		if (!a->b[i].done || !b->b[i].done)
			continue;
		x = f(&a->b[i].r);
		y = f(&b->b[i].r);
		if (!(x > 0) || !(y > 0))
			continue;
		s += log(x / y);
		n++;
	}
	return n ? exp(s / n) : NAN;
}

struct ratio {
	const struct variant *a, *b;
};

static int find_ratios(const struct parent *P, struct ratio *out)
{
	int n = 0;
	static const int pairs[][2] = {
		{ BE_LITE, BE_LIBRBD }, { BE_LITE, BE_RADOS }, { BE_LIBRBD, BE_RADOS }
	};

	for (int je = 0; je <= 1; je++)
		for (unsigned k = 0; k < sizeof(pairs) / sizeof(*pairs); k++) {
			const struct variant *a = NULL, *b = NULL;

			for (int i = 0; i < P->nv; i++) {
				if (P->v[i].jemalloc != je)
					continue;
				if (P->v[i].backend == pairs[k][0])
					a = &P->v[i];
				if (P->v[i].backend == pairs[k][1])
					b = &P->v[i];
			}
			if (a && b) {
				out[n].a = a;
				out[n].b = b;
				n++;
			}
		}
	return n;
}

/* ---- normal output ----------------------------------------------------------------- */

static void fmt_num(char *buf, size_t n, double v, const char *f)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, f, v);
}

static void print_table(struct parent *P)
{
	const struct opts *o = P->o;
	struct ratio rat[6];
	int nr = find_ratios(P, rat);
	char desc[96], size[32];

	job_desc(o, desc, sizeof(desc));
	fmt_size(size, sizeof(size), o->size);
	printf("\n%s: %s, %d image(s), mode %s, %d block(s) per backend", PROG, desc,
	       o->nimages, mode_name[o->mode], o->blocks);
	if (o->runtime > 0)
		printf(", %.3g s measured after %.3g s warm-up\n", o->runtime, o->warmup);
	else
		printf(", size-based: each job transfers %s\n",
		       o->size ? size : "its image region");
	printf("\n%-15s %9s %8s %8s %8s %9s %9s %17s %9s %10s %7s\n",
	       "backend", "IOPS", "MB/s", "p50 us", "p99 us", "p99.9 us",
	       "CPU us/IO", "(min-max)", "ctxsw/IO", "mallocs/IO", "threads");
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];
		char c[6][32], mm[40];

		fmt_num(c[0], sizeof(c[0]), v->iops_med, "%.0f");
		fmt_num(c[1], sizeof(c[1]), v->mbps_med, "%.1f");
		fmt_num(c[2], sizeof(c[2]), v->cpu_med, "%.2f");
		fmt_num(c[3], sizeof(c[3]), v->ctx_med, "%.3f");
		fmt_num(c[4], sizeof(c[4]), v->mal_med, "%.2f");
		fmt_num(c[5], sizeof(c[5]), v->threads_med, "%.0f");
		if (isnan(v->cpu_med))
			snprintf(mm, sizeof(mm), "-");
		else
			snprintf(mm, sizeof(mm), "(%.2f-%.2f)", v->cpu_min, v->cpu_max);
		printf("%-15s %9s %8s %8.1f %8.1f %9.1f %9s %17s %9s %10s %7s\n",
		       v->name, c[0], c[1], v->p50, v->p99, v->p999, c[2], mm, c[3],
		       c[4], c[5]);
	}
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];

		if (v->backend == BE_RADOS && v->enoent_total && v->reads_total)
			printf("note: %s: %.1f%% of the object reads hit nonexistent objects "
			       "(holes; use --prefill)\n", v->name,
			       100.0 * (double)v->enoent_total / (double)v->reads_total);
		if (v->backend == BE_LITE && !isnan(v->libhot_med) && v->libhot_med > 0)
			printf("note: %s: librbdlite counted %.3f hot-path mallocs per I/O\n",
			       v->name, v->libhot_med);
	}
	if (nr) {
		printf("\n%-30s %8s %8s %8s %8s %12s\n", "ratio (medians)", "CPU/IO",
		       "IOPS", "p50", "p99", "p50 delta");
		for (int i = 0; i < nr; i++) {
			const struct variant *a = rat[i].a, *b = rat[i].b;
			char name[80];

			snprintf(name, sizeof(name), "%s/%s", a->name, b->name);
			printf("%-30s %7.2fx %7.2fx %7.2fx %7.2fx %+9.1f us\n", name,
			       a->cpu_med / b->cpu_med, a->iops_med / b->iops_med,
			       a->p50 / b->p50, a->p99 / b->p99, a->p50 - b->p50);
		}
	}
	printf("\nCPU = user+sys of all threads of the benchmark process per completed I/O "
	       "(getrusage);\nmallocs = malloc/calloc/realloc/memalign-family/operator new "
	       "calls, whole process.\n");
}

/* ---- JSON ---------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

static void json_lat(FILE *f, const uint64_t *h)
{
	fprintf(f, "{\"p50\": ");
	json_num(f, hist_percentile(h, 50) / 1000);
	fprintf(f, ", \"p90\": ");
	json_num(f, hist_percentile(h, 90) / 1000);
	fprintf(f, ", \"p99\": ");
	json_num(f, hist_percentile(h, 99) / 1000);
	fprintf(f, ", \"p99.9\": ");
	json_num(f, hist_percentile(h, 99.9) / 1000);
	fprintf(f, ", \"p99.99\": ");
	json_num(f, hist_percentile(h, 99.99) / 1000);
	fprintf(f, ", \"mean\": ");
	json_num(f, hist_mean(h) / 1000);
	fprintf(f, "}");
}

static void print_json(struct parent *P)
{
	const struct opts *o = P->o;
	FILE *f = stdout;
	struct utsname un;
	char date[64], host[256] = "";
	struct tm tm;
	struct ratio rat[6];
	int nr = find_ratios(P, rat);

	gmtime_r(&P->start, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gethostname(host, sizeof(host) - 1);
	if (uname(&un) < 0)
		memset(&un, 0, sizeof(un));

	fprintf(f, "{\n  \"tool\": \"%s\",\n  \"version\": ", PROG);
	json_str(f, PACKAGE_VERSION);
	fprintf(f, ",\n  \"command_line\": [");
	for (int i = 0; i < P->argc; i++) {
		if (i)
			fputs(", ", f);
		json_str(f, P->argv[i]);
	}
	fprintf(f, "],\n  \"date\": \"%s\",\n  \"host\": {\"hostname\": ", date);
	json_str(f, host);
	fprintf(f, ", \"nproc\": %ld, \"kernel\": ", sysconf(_SC_NPROCESSORS_ONLN));
	json_str(f, un.release);
	fprintf(f, ", \"machine\": ");
	json_str(f, un.machine);
	fprintf(f, "},\n  \"job\": {\"rw\": \"%s\", \"rwmixread\": %d, \"bs\": %" PRIu64
		", \"iodepth\": %d, \"numjobs\": %d, \"runtime_s\": ", rw_name[o->rw],
		o->rwmixread, o->bs, o->iodepth, o->numjobs);
	json_num(f, o->runtime);
	fprintf(f, ", \"warmup_s\": ");
	json_num(f, o->warmup);
	fprintf(f, ", \"size\": %" PRIu64 ", \"pool\": ", o->size);
	json_str(f, o->pool);
	fprintf(f, ", \"mode\": \"%s\", \"blocks\": %d, \"order\": \"%s\", \"seed\": %" PRIu64
		", \"prefill\": %s, \"spread\": \"%s\", \"handles\": \"%s\", \"conf\": ",
		mode_name[o->mode], o->blocks,
		o->order == ORDER_ABBA ? "abba" : "cyclic", o->seed,
		o->prefill ? "true" : "false", o->spread == SPREAD_IOS ? "ios" : "jobs",
		o->shared_handles ? "shared" : "job");
	if (o->conf)
		json_str(f, o->conf);
	else
		fputs("null", f);
	fprintf(f, ", \"set\": [");
	for (int i = 0; i < o->nsets; i++) {
		if (i)
			fputs(", ", f);
		json_str(f, o->sets[i]);
	}
	fprintf(f, "]},\n  \"images\": [");
	for (int i = 0; i < o->nimages; i++) {
		const struct layout *l = &P->layouts[i];

		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, o->images[i]);
		fprintf(f, ", \"size\": %" PRIu64 ", \"order\": %d, \"stripe_unit\": %" PRIu64
			", \"stripe_count\": %" PRIu64 ", \"features\": %" PRIu64
			", \"data_pool_id\": %" PRId64 ", \"block_name_prefix\": ",
			l->size, l->order, l->stripe_unit, l->stripe_count, l->features,
			l->data_pool_id);
		json_str(f, l->prefix);
		fputc('}', f);
	}
	fprintf(f, "\n  ],\n  \"malloc_counter\": ");
	if (P->have_mc)
		json_str(f, P->mc_lib);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"jemalloc\": ");
	if (o->jemalloc)
		json_str(f, P->jemalloc_so);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"backends\": [");
	for (int vi = 0; vi < P->nv; vi++) {
		const struct variant *v = &P->v[vi];

		fprintf(f, "%s\n    {\"name\": ", vi ? "," : "");
		json_str(f, v->name);
		fprintf(f, ", \"backend\": \"%s\", \"allocator\": \"%s\", \"library\": ",
			be_name[v->backend], v->jemalloc ? "jemalloc" : "glibc");
		if (v->lib_path[0])
			json_str(f, v->lib_path);
		else
			fputs("null", f);
		fprintf(f, ", \"rbd_version\": ");
		if (v->rbd_version[0])
			json_str(f, v->rbd_version);
		else
			fputs("null", f);
		fprintf(f, ", \"rbdlite_version\": ");
		if (v->lib_version[0])
			json_str(f, v->lib_version);
		else
			fputs("null", f);
		fprintf(f, ", \"rados_version\": ");
		json_str(f, v->rados_version);
		fprintf(f, ",\n     \"summary\": {\"blocks\": %d, \"ios\": %" PRIu64
			", \"iops\": {\"median\": ", v->n, v->ios_total);
		json_num(f, v->iops_med);
		fprintf(f, ", \"min\": ");
		json_num(f, v->iops_min);
		fprintf(f, ", \"max\": ");
		json_num(f, v->iops_max);
		fprintf(f, "}, \"mb_per_s\": ");
		json_num(f, v->mbps_med);
		fprintf(f, ", \"lat_us\": ");
		json_lat(f, v->hist);
		fprintf(f, ",\n       \"cpu_us_per_io\": {\"median\": ");
		json_num(f, v->cpu_med);
		fprintf(f, ", \"min\": ");
		json_num(f, v->cpu_min);
		fprintf(f, ", \"max\": ");
		json_num(f, v->cpu_max);
		fprintf(f, "}, \"ctxsw_per_io\": ");
		json_num(f, v->ctx_med);
		fprintf(f, ", \"mallocs_per_io\": ");
		json_num(f, v->mal_med);
		fprintf(f, ", \"lib_hot_path_mallocs_per_io\": ");
		json_num(f, v->libhot_med);
		fprintf(f, ", \"threads\": ");
		json_num(f, v->threads_med);
		fprintf(f, ", \"rss_kib\": ");
		json_num(f, v->rss_med);
		fprintf(f, ", \"enoent_object_reads\": %" PRIu64 "},\n     \"blocks\": [",
			v->enoent_total);
		for (int i = 0, first = 1; i < o->blocks; i++) {
			const struct result_rec *r = &v->b[i].r;

			if (!v->b[i].done)
				continue;
			fprintf(f, "%s\n       {\"block\": %d, \"seq\": %d, \"elapsed_s\": ",
				first ? "" : ",", i + 1, v->b[i].seq);
			first = 0;
			json_num(f, r->elapsed);
			fprintf(f, ", \"ios\": %" PRIu64 ", \"reads\": %" PRIu64
				", \"writes\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"iops\": ",
				r->ios, r->reads, r->writes, r->bytes);
			json_num(f, blk_iops(r));
			fprintf(f, ", \"cpu_user_s\": ");
			json_num(f, r->cpu_user);
			fprintf(f, ", \"cpu_sys_s\": ");
			json_num(f, r->cpu_sys);
			fprintf(f, ", \"cpu_us_per_io\": ");
			json_num(f, blk_cpu(r));
			fprintf(f, ", \"voluntary_ctxsw\": %" PRIu64 ", \"involuntary_ctxsw\": %"
				PRIu64 ", \"ctxsw_per_io\": ", r->nvcsw, r->nivcsw);
			json_num(f, blk_ctx(r));
			fprintf(f, ", \"mallocs\": ");
			if (r->mallocs >= 0)
				fprintf(f, "%" PRId64, r->mallocs);
			else
				fputs("null", f);
			fprintf(f, ", \"mallocs_per_io\": ");
			json_num(f, blk_mal(r));
			fprintf(f, ", \"lib_hot_path_mallocs\": ");
			if (r->lib_hot_mallocs >= 0)
				fprintf(f, "%" PRId64, r->lib_hot_mallocs);
			else
				fputs("null", f);
			fprintf(f, ", \"threads\": %" PRId64 ", \"rss_kib\": %" PRId64
				", \"enoent_object_reads\": %" PRIu64 ", \"lat_us\": ",
				r->threads, r->rss_kib, r->enoent_reads);
			json_lat(f, r->hist);
			fputc('}', f);
		}
		fprintf(f, "\n     ]}");
	}
	fprintf(f, "\n  ],\n  \"ratios\": [");
	for (int i = 0; i < nr; i++) {
		const struct variant *a = rat[i].a, *b = rat[i].b;

		fprintf(f, "%s\n    {\"a\": ", i ? "," : "");
		json_str(f, a->name);
		fprintf(f, ", \"b\": ");
		json_str(f, b->name);
		fprintf(f, ", \"cpu_per_io\": ");
		json_num(f, a->cpu_med / b->cpu_med);
		fprintf(f, ", \"cpu_per_io_paired_geomean\": ");
		json_num(f, paired_geomean(P, a, b, blk_cpu));
		fprintf(f, ", \"iops\": ");
		json_num(f, a->iops_med / b->iops_med);
		fprintf(f, ", \"iops_paired_geomean\": ");
		json_num(f, paired_geomean(P, a, b, blk_iops));
		fprintf(f, ", \"p50\": ");
		json_num(f, a->p50 / b->p50);
		fprintf(f, ", \"p99\": ");
		json_num(f, a->p99 / b->p99);
		fprintf(f, ", \"p99.9\": ");
		json_num(f, a->p999 / b->p999);
		fprintf(f, ", \"p50_delta_us\": ");
		json_num(f, a->p50 - b->p50);
		fprintf(f, ", \"mallocs_per_io_delta\": ");
		json_num(f, a->mal_med - b->mal_med);
		fputc('}', f);
	}
	fprintf(f, "\n  ]\n}\n");
}

/* ---- SVG plot ---------------------------------------------------------------------- */

static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

static double nice_step(double range, int ticks)
{
	double raw = range / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;

	return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

/* 4211 -> "4.2k", 149422 -> "149k", 87.3 -> "87" */
static void compact(char *buf, size_t n, double v)
{
	if (v >= 99950)
		snprintf(buf, n, "%.0fk", v / 1000);
	else if (v >= 1000)
		snprintf(buf, n, "%.1fk", v / 1000);
	else if (v >= 10)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.1f", v);
}

/* backend name, "+jemalloc" on a second line */
static void svg_name(FILE *f, const struct variant *v, double x, double y)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
		x, y, be_name[v->backend]);
	if (v->jemalloc)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"font-size=\"10\">+jemalloc</text>\n", x, y + 12);
}

static const char *const be_color[BE_COUNT] = { "#2e7d32", "#c62828", "#1565c0" };
static const char *const pct_color[3] = { "#90caf9", "#1e88e5", "#0d47a1" };

static int write_plot(struct parent *P, const char *path)
{
	const struct opts *o = P->o;
	FILE *f = fopen(path, "w");
	const double W = 1000, H = 490, top = 70, bot = 380;
	const double lx0 = 70, lx1 = 470, rx0 = 560, rx1 = 970;
	double cmax = 0, lmin = INFINITY, lmax = 0, step, lo, hi;
	char desc[96], num[32];

	if (!f)
		return -errno;
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];

		if (!isnan(v->cpu_max) && v->cpu_max > cmax)
			cmax = v->cpu_max;
		if (v->p50 > 0 && v->p50 < lmin)
			lmin = v->p50;
		if (v->p999 > lmax)
			lmax = v->p999;
	}
	if (cmax <= 0)
		cmax = 1;
	if (!(lmin < INFINITY) || lmax <= 0) {
		lmin = 1;
		lmax = 10;
	}
	job_desc(o, desc, sizeof(desc));
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
	fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">"
		PROG ": ", W / 2);
	svg_text(f, desc);
	fprintf(f, ", %d image(s), %d block(s) per backend</text>\n", o->nimages, o->blocks);

	/* left: CPU per I/O, median bar with min-max whisker */
	step = nice_step(cmax * 1.1, 5);
	hi = ceil(cmax * 1.1 / step) * step;
	fprintf(f, "<text x=\"%.0f\" y=\"50\" text-anchor=\"middle\" font-weight=\"bold\">"
		"Client CPU per I/O (\xc2\xb5s, all threads; bar median, whisker min-max)</text>\n",
		(lx0 + lx1) / 2);
	for (double t = 0; t <= hi + step / 2; t += step) {
		double y = bot - (bot - top) * t / hi;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			lx0, y, lx1, y, lx0 - 6, y + 4, t);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
		lx0, top, lx0, bot);
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];
		double slot = (lx1 - lx0) / P->nv, bw = slot * 0.6;
		double x = lx0 + slot * i + (slot - bw) / 2, xc = x + bw / 2;
		double y = bot - (bot - top) * (isnan(v->cpu_med) ? 0 : v->cpu_med) / hi;

		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"%s\" fill-opacity=\"%s\"/>\n", x, y, bw, bot - y,
			be_color[v->backend], v->jemalloc ? "0.55" : "0.9");
		if (!isnan(v->cpu_med)) {
			double y0 = bot - (bot - top) * v->cpu_min / hi;
			double y1 = bot - (bot - top) * v->cpu_max / hi;

			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
				"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
				"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
				xc, y0, xc, y1, xc - 6, y0, xc + 6, y0, xc - 6, y1, xc + 6, y1);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.1f</text>\n",
				xc + bw / 4, y1 - 6, v->cpu_med);
		}
		svg_name(f, v, xc, bot + 16);
		compact(num, sizeof(num), v->iops_med);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"font-size=\"10\" fill=\"#555\">%s IOPS</text>\n", xc, bot + 40, num);
	}

	/* right: latency percentiles, log scale */
	lo = pow(10, floor(log10(lmin)));
	hi = pow(10, ceil(log10(lmax)));
	if (hi <= lo)
		hi = lo * 10;
	fprintf(f, "<text x=\"%.0f\" y=\"50\" text-anchor=\"middle\" font-weight=\"bold\">"
		"Latency (\xc2\xb5s, log scale, all blocks merged)</text>\n", (rx0 + rx1) / 2);
	for (double d = lo; d <= hi * 1.001; d *= 10) {
		for (int m = 1; m < 10; m++) {
			double t = d * m, y;

			if (t > hi * 1.001)
				break;
			y = bot - (bot - top) * log10(t / lo) / log10(hi / lo);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"%s\"/>\n", rx0, y, rx1, y, m == 1 ? "#bbb" : "#eee");
			if (m == 1)
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
					rx0 - 6, y + 4, t >= 1 ? (snprintf(num, sizeof(num), "%.0f", t), num)
							       : (snprintf(num, sizeof(num), "%g", t), num));
		}
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
		rx0, top, rx0, bot);
	for (int i = 0; i < P->nv; i++) {
		const struct variant *v = &P->v[i];
		double slot = (rx1 - rx0) / P->nv, bw = slot * 0.8 / 3;
		double x0 = rx0 + slot * i + slot * 0.1;
		double vals[3] = { v->p50, v->p99, v->p999 };

		for (int k = 0; k < 3; k++) {
			double val = vals[k], y;

			if (!(val > 0))
				continue;
			y = bot - (bot - top) * log10(val / lo) / log10(hi / lo);
			if (y < top)
				y = top;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				"fill=\"%s\"/>\n", x0 + bw * k, y, bw - 2, bot - y, pct_color[k]);
			compact(num, sizeof(num), val);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
				"font-size=\"9\">%s</text>\n", x0 + bw * k + bw / 2 - 1, y - 3, num);
		}
		svg_name(f, v, rx0 + slot * i + slot / 2, bot + 16);
	}
	for (int k = 0; k < 3; k++) {
		static const char *const lbl[3] = { "p50", "p99", "p99.9" };
		double x = rx0 + 20 + k * 90;

		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x, bot + 48, pct_color[k],
			x + 16, bot + 58, lbl[k]);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#555\">"
		"CPU: getrusage(RUSAGE_SELF) user+sys over the measured window / completed I/Os. "
		"Each block runs in a fresh process.</text>\n", W / 2, H - 12);
	fprintf(f, "</svg>\n");
	if (fclose(f))
		return -errno;
	return 0;
}

/* ---- main ------------------------------------------------------------------------------ */

static void warn_features(struct parent *P)
{
	const struct opts *o = P->o;
	int lite = 0, rados = 0, writers[MAX_IMAGES] = { 0 };

	if (!rw_writes(o->rw))
		return;
	for (int k = 0; k < o->nbackends; k++) {
		lite |= o->backends[k] == BE_LITE;
		rados |= o->backends[k] == BE_RADOS;
	}
	for (int i = 0; i < o->numjobs; i++)
		writers[i % o->nimages]++;
	for (int i = 0; i < o->nimages; i++) {
		uint64_t f = P->layouts[i].features;

		if (lite && (f & RBD_FEATURE_JOURNALING))
			warnx_("image %s has journaling: librbdlite refuses to write it (EROFS)",
			       o->images[i]);
		if (rados && (f & RBD_FEATURE_OBJECT_MAP))
			warnx_("image %s has an object map: raw rados writes bypass it "
			       "(use a scratch image)", o->images[i]);
		if ((f & RBD_FEATURE_EXCLUSIVE_LOCK) && writers[i] > 1)
			warnx_("%d jobs write to exclusive-lock image %s through separate "
			       "handles: the lock moves between them", writers[i], o->images[i]);
	}
}

static int parent_main(struct opts *o, int argc, char **argv)
{
	struct parent P;
	char **base = NULL;
	int nbase = 0, seq = 0, rc = 0;
	int je_lo = o->jemalloc == 1 ? 1 : 0, je_hi = o->jemalloc ? 1 : 0;
	double timeout;
	char desc[96];

	memset(&P, 0, sizeof(P));
	P.o = o;
	P.argc = argc;
	P.argv = argv;
	P.tty = isatty(2);
	P.start = time(NULL);
	if (getenv("LD_PRELOAD") && *getenv("LD_PRELOAD"))
		warnx_("LD_PRELOAD=%s is passed on to every backend", getenv("LD_PRELOAD"));
	if (o->runtime == 0 && o->size == 0 && !o->quiet)
		warnx_("--runtime=0: every job transfers its whole image region once");
	resolve_paths(&P);
	probe_images(&P);
	for (int i = 0; i < o->nimages; i++) {
		if (o->size && o->size > P.layouts[i].size)
			warnx_("--size is larger than image %s (%" PRIu64 " bytes): using the image size",
			       o->images[i], P.layouts[i].size);
		if (P.layouts[i].size < o->bs)
			die("image %s is smaller than --bs", o->images[i]);
	}
	warn_features(&P);
	if (o->prefill)
		prefill(&P);

	/* variants: backend x allocator */
	P.v = xcalloc((size_t)(o->nbackends * 2), sizeof(*P.v));
	for (int je = je_lo; je <= je_hi; je++)
		for (int i = 0; i < o->nbackends; i++) {
			struct variant *v = &P.v[P.nv++];

			v->backend = o->backends[i];
			v->jemalloc = je;
			snprintf(v->name, sizeof(v->name), "%s%s", be_name[v->backend],
				 je ? "+jemalloc" : "");
			v->lib = v->backend == BE_LITE ? P.lite_lib :
				 v->backend == BE_LIBRBD ? P.librbd_lib : NULL;
			v->b = xcalloc((size_t)o->blocks, sizeof(*v->b));
			v->cpu_min = v->cpu_max = NAN;
			v->iops_min = v->iops_max = NAN;
		}
	P.total_blocks = P.nv * o->blocks;
	layout_args(&P, &base, &nbase);
	add_str(&base, &nbase, "--child-fd=3");
	timeout = o->timeout > 0 ? o->timeout :
		  o->runtime > 0 ? o->runtime + o->warmup + 120 : 0;
	job_desc(o, desc, sizeof(desc));

	for (int b = 0; b < o->blocks && !rc; b++) {
		for (int k = 0; k < P.nv && !rc; k++) {
			int vi = o->order == ORDER_ABBA && b % 2 ? P.nv - 1 - k : k;
			struct variant *v = &P.v[vi];
			struct child_cb cb;
			struct block_ctx bctx = { ++seq, v };
			char **extra = NULL;
			int nextra = 0;
			char buf[PATH_MAX + 32];

			for (int i = 0; i < nbase; i++)
				add_str(&extra, &nextra, base[i]);
			snprintf(buf, sizeof(buf), "--child=%s", be_name[v->backend]);
			add_str(&extra, &nextra, buf);
			if (v->lib) {
				snprintf(buf, sizeof(buf), "--child-lib=%s", v->lib);
				add_str(&extra, &nextra, buf);
			}
			memset(&cb, 0, sizeof(cb));
			cb.progress = on_progress;
			cb.arg = &bctx;
			cb.result = &v->b[b].r;
			if (!o->quiet && P.tty) {
				fprintf(stderr, "\r\033[Kblock %d/%d: %-14s %s: starting",
					seq, P.total_blocks, v->name, desc);
				fflush(stderr);
			}
			if (run_child(&P, v->jemalloc, extra, nextra, timeout, &cb) < 0) {
				if (!o->quiet && P.tty)
					fputc('\n', stderr);
				fprintf(stderr, PROG ": block %d/%d (%s) failed: %s\n", seq,
					P.total_blocks, v->name, cb.errmsg);
				rc = 1;
			} else {
				const struct result_rec *r = &v->b[b].r;

				v->b[b].done = 1;
				v->b[b].seq = seq;
				if (!o->quiet)
					fprintf(stderr, "%sblock %d/%d: %-14s %s: %.0f IOPS, "
						"%.2f us CPU/IO, p50 %.1f us\n",
						P.tty ? "\r\033[K" : "", seq, P.total_blocks,
						v->name, desc, blk_iops(r), blk_cpu(r),
						hist_percentile(r->hist, 50) / 1000);
			}
			for (int i = 0; i < nextra; i++)
				free(extra[i]);
			free(extra);
		}
	}
	if (!rc) {
		for (int i = 0; i < P.nv; i++)
			summarize(&P, &P.v[i]);
		if (o->json)
			print_json(&P);
		else
			print_table(&P);
		if (o->plot) {
			int r = write_plot(&P, o->plot);

			if (r < 0) {
				fprintf(stderr, PROG ": cannot write %s: %s\n", o->plot, strerror(-r));
				rc = 1;
			} else if (!o->quiet) {
				fprintf(stderr, "plot written to %s\n", o->plot);
			}
		}
	}
	for (int i = 0; i < nbase; i++)
		free(base[i]);
	free(base);
	for (int i = 0; i < P.nv; i++) {
		free(P.v[i].b);
		free(P.v[i].hist);
	}
	free(P.v);
	free(P.layouts);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc;

	parse_opts(&o, argc, argv);
	if (o.child)
		rc = child_main(&o);
	else
		rc = parent_main(&o, argc, argv);
	free_opts(&o);
	return rc;
}
