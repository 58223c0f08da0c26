/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * engine.h - the child's I/O engine: one child process runs one block on
 * one backend with o->numjobs job threads, each keeping o->iodepth slots
 * (I/Os) in flight.  engine.c has what all backends share (the job
 * thread, offsets, completion accounting, the handoff and callback loops),
 * engine_rbd.c the two rbd backends behind the dlopen'ed function table,
 * engine_rados.c the raw librados backend, child.c the process around
 * them (connect, set up, measure, report).
 *
 * Threading: a job thread owns its struct job and slots.  Completions run
 * on the library's callback threads: in callback and handoff mode (and
 * for every rados completion) a slot is touched by a callback thread
 * while in flight and handed back to its job thread through j->done
 * (release/acquire); in callback mode several threads update one job's
 * counters, hence j->shared and ctr_add().  The main thread only reads the
 * counters (relaxed: exact per counter, the snapshot need not be
 * consistent) and drives c->phase; c->failed/err/errmsg are written once,
 * under c->errlock.
 *
 * Ownership: struct child owns the jobs, per-image rados contexts and
 * shared handles (child_free_jobs); a job owns its slots, buffers,
 * histogram, eventfd and the image handles it opened itself (own = 1).
 * The rbd library is never unloaded (librbd is not safe to dlclose).
 */
#ifndef RBDLITE_BENCH_ENGINE_H
#define RBDLITE_BENCH_ENGINE_H

#include "bench.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/types.h>

#include <rados/librados.h>
#include "rbdlite.h"

#include "core/join.h"

/*
 * The rbd_* functions the child uses, resolved from the dlopen'ed library:
 * the harness itself never links against librbd or librbdlite, which must
 * not meet in one process.  The rbdlite_* entries are NULL with librbd.
 */
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
	__typeof__(rbd_encryption_load) *encryption_load;
	__typeof__(rbdlite_version) *rbdlite_version;
	__typeof__(rbdlite_get_stats) *rbdlite_get_stats;
};

enum { PH_WARMUP, PH_MEASURE, PH_STOP };

struct job;
struct child;
struct rbdl_cipher;

/* rbd_open, then the LUKS load that --luks asks for (closed again when
 * the load fails).  0 or a negative errno. */
int be_rbd_open_image(struct child *c, const char *name, rbd_image_t *img);

/* One I/O in flight, reused for the next one when it completes. */
struct slot {
	struct job *j;
	char *buf;
	uint64_t off;
	uint64_t t0;
	uint64_t rng;
	int write;
	struct rbdl_join ops;	/* rados: object ops + guard, first error */
	ssize_t res;		/* handoff mode: rbd return value */
	int cur;		/* index in j->ji of the current I/O's image */
	struct slot *next;	/* rados poll / handoff mode: completed list */
	char *cbuf;		/* rados with --luks: encrypted write data */
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
	struct rbdl_cipher *cipher;	/* rados backend with --luks */
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

/*
 * Add to a job counter.  With a single writer (the job thread) a relaxed
 * load + store is enough and avoids a locked instruction per I/O; callback
 * mode has several writers and needs the atomic add.
 */
static inline void ctr_add(const struct job *j, _Atomic uint64_t *p,
			   uint64_t v)
{
	if (j->shared)
		atomic_fetch_add_explicit(p, v, memory_order_relaxed);
	else
		atomic_store_explicit(p, atomic_load_explicit(p,
				      memory_order_relaxed) + v,
				      memory_order_relaxed);
}

/* engine.c: the job threads and what every backend's completions call */
void *job_main(void *arg);
int handle_completion(struct job *j, struct slot *s, ssize_t r);
void cb_retire(struct job *j);
void slot_handoff(struct slot *s);

/* engine_rbd.c: lite and librbd */
int load_api(struct rbd_api *a, const char *path, char *err, size_t errlen,
	     char *realpath_out, size_t rplen);
int be_rbd_info(struct child *c);
int be_rbd_open_shared(struct child *c, int *failed_img);
void be_rbd_close_shared(struct child *c);
int be_rbd_job_open(struct job *j, int *failed_img);
void be_rbd_job_close(struct job *j);
int be_rbd_submit(struct job *j, struct slot *s);
int be_rbd_reap(struct job *j);

/* engine_rados.c: raw librados */
int be_rados_open_pools(struct child *c, char *err, size_t errlen);
void be_rados_close_pools(struct child *c);
void be_rados_submit(struct job *j, struct slot *s);

/* child.c */
void child_send_error(const struct opts *o, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* RBDLITE_BENCH_ENGINE_H */
