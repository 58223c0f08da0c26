/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench.h - what every part of rbdlite-bench shares: the options, the
 * image layout, the records a child sends its parent, the latency
 * histogram, the small helpers, and the parent's bookkeeping.  The child's
 * I/O engine (job threads, slots, the rbd function table) is in engine.h.
 *
 * Threading: the parent is single-threaded.  In a child, the options and
 * layouts are written once by the main thread before any job thread starts
 * and are read-only afterwards, so every thread may read them without
 * locks.  Nothing declared here takes a lock; the hot-path helpers
 * (now_ns, hist_index) are static inline because they run per I/O and a
 * call would otherwise cross a file.
 *
 * Ownership: struct opts owns its image names, --set strings and layouts
 * (free_opts); the argv strings it points into belong to main().  Arrays
 * built with add_str own their strings (free_strs).
 *
 * Each .c file includes this header first: it defines _GNU_SOURCE and
 * reads config.h before any system header is seen.
 */
#ifndef RBDLITE_BENCH_H
#define RBDLITE_BENCH_H

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

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <rbd/librbd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define PROG "rbdlite-bench"

/* ==== options ============================================================ */

enum backend { BE_LITE, BE_LIBRBD, BE_RADOS, BE_COUNT };
extern const char *const be_name[BE_COUNT];

enum rw { RW_READ, RW_WRITE, RW_RANDREAD, RW_RANDWRITE, RW_RANDRW, RW_RW,
	  RW_COUNT };
extern const char *const rw_name[RW_COUNT];

enum mode { MODE_POLL, MODE_POLL_NOCB, MODE_CALLBACK, MODE_HANDOFF,
	    MODE_COUNT };
extern const char *const mode_name[MODE_COUNT];

/* How jobs use the images: one image per job, or every job all images. */
enum { SPREAD_JOBS, SPREAD_IOS };

enum { ORDER_CYCLIC, ORDER_ABBA };

#define MAX_IMAGES 1024
#define MAX_JOBS 1024
#define MAX_DEPTH 4096

/*
 * One image as the parent probed it; children get it on the command line
 * (--child-layout), so that the rados backend never needs an rbd library
 * and every backend works on the same extents.
 */
struct layout {
	uint64_t size;
	uint64_t features;
	uint64_t stripe_unit;
	uint64_t stripe_count;
	int64_t data_pool_id;
	int order;
	char prefix[RBD_MAX_BLOCK_NAME_SIZE + 8];
	/* --luks: where the data area starts in the image (the header's
	 * size) and the cipher's block size, for the rados backend */
	uint64_t data_off;
	uint32_t crypt_block;
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
	int luks_format;	/* 0: none, else 1 + rbd_encryption_format_t */
	const char *luks_pass;
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

/* opts.c */
void parse_opts(struct opts *o, int argc, char **argv);
void free_opts(struct opts *o);
int opts_has_backend(const struct opts *o, int be);
uint64_t opts_region(const struct opts *o, const struct layout *l);

static inline int rw_is_random(enum rw rw)
{
	return rw == RW_RANDREAD || rw == RW_RANDWRITE || rw == RW_RANDRW;
}

static inline int rw_writes(enum rw rw)
{
	return rw != RW_READ && rw != RW_RANDREAD;
}

/* ==== latency histogram (ns) ============================================= */

/*
 * Log-linear: values below H_SUB have a bucket each, then every power of
 * two is cut into H_HALF sub-buckets (< 0.4 % relative error).
 */
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

/* hist.c: NAN for an empty histogram */
double hist_percentile(const uint64_t *h, double pct);
double hist_mean(const uint64_t *h);

/* ==== child -> parent records ============================================ */

/*
 * A child writes records (header + fixed-size body) to the pipe on fd 3;
 * the parent checks each length against the type before reading the body.
 * Both ends are the same executable, so the structs need no encoding.
 */
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

/* ==== small helpers (util.c) ============================================= */

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
void add_str(char ***arr, int *n, const char *s);
void free_strs(char **arr, int n);
int read_full(int fd, void *buf, size_t len);
int send_rec(int fd, uint32_t type, const void *p, size_t len);
void fmt_size(char *buf, size_t n, uint64_t v);
uint64_t splitmix64(uint64_t *s);

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ==== child process (child.c) ============================================ */

int child_main(const struct opts *o);

/* ==== parent ============================================================= */

struct block_res {
	int done;
	int seq;		/* position in the run, 1-based */
	struct result_rec r;
};

/* One backend with one allocator: a row of the report. */
struct variant {
	int backend;
	int jemalloc;
	char name[32];
	struct block_res *b;	/* o->blocks of them, owned */
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
	uint64_t *hist;		/* all blocks merged, owned */
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
	struct layout *layouts;	/* one per image, owned */
	struct variant *v;	/* owned */
	int nv;
	int total_blocks;
	int tty;
	time_t start;
};

/* What run_child() does with the records of one child. */
struct child_cb {
	void (*progress)(struct parent *P, const struct progress_rec *p,
			 void *arg);
	void (*info)(struct parent *P, const struct info_rec *r, void *arg);
	struct result_rec *result;	/* NULL: none expected */
	void *arg;
	char errmsg[600];
	int err;
};

/* run.c */
void resolve_paths(struct parent *P);
int run_child(struct parent *P, int jemalloc, char **extra, int nextra,
	      double timeout, struct child_cb *cb);
void add_child_args(const struct parent *P, char ***extra, int *n,
		    int backend);
void probe_images(struct parent *P);
void layout_args(struct parent *P, char ***extra, int *n);
void prefill(struct parent *P);

/* report.c */
void job_desc(const struct opts *o, char *buf, size_t n);
double blk_iops(const struct result_rec *r);
double blk_cpu(const struct result_rec *r);
void summarize(struct parent *P, struct variant *v);
void print_table(struct parent *P);
void print_json(struct parent *P);

/* plot.c */
int write_plot(struct parent *P, const char *path);

#endif /* RBDLITE_BENCH_H */
