/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stamps.c - the header's access and modify timestamps (see stamps.h).
 *
 * The timer task (internal lane) sets a kind's bit in stamps.due once
 * its interval has passed since the last stamp; the next I/O of that
 * kind clears the bit, records the time as the last stamp, sends the
 * header method and re-arms the timer.  Until a bit is set again the
 * data path pays one relaxed load.
 */
#include "config.h"

#include "stamps.h"

#include "core/internal.h"
#include "proto/rados.h"

#include <stdlib.h>
#include <time.h>

#define NS 1000000000ll

/* Index of a kind's bit in the arrays. */
static int kind_of(unsigned bit)
{
	return bit == RBDL_STAMP_MODIFY;
}

/* The timer: set the bit of every kind that is due, and sleep until the
 * next one that is not. */
static void stamps_run(struct rbdl_ctl_task *t)
{
	struct rbdl_stamps *st = container_of(t, struct rbdl_stamps, task);
	int64_t now = (int64_t)rbdl_ctl_now_ns(), wake = 0;
	unsigned due = 0;

	pthread_mutex_lock(&st->mu);
	for (int k = 0; k < 2; k++) {
		int64_t iv = atomic_load_explicit(&st->interval[k],
						  memory_order_relaxed);
		int64_t at = st->last_ns[k] + iv * NS;

		if (!iv)
			continue;
		if (at <= now)
			due |= 1u << k;
		else if (!wake || at < wake)
			wake = at;
	}
	pthread_mutex_unlock(&st->mu);
	/* Relaxed: the bits carry no data; the stamp is sent by whoever
	 * clears one (rbdl_stamps_fire). */
	if (due)
		atomic_fetch_or_explicit(&st->due, due, memory_order_relaxed);
	if (wake)
		rbdl_ctl_kick_at(t, (uint64_t)wake);
}

void rbdl_stamps_init(struct rbdl_image *img)
{
	struct rbdl_stamps *st = &img->stamps;

	atomic_init(&st->due, 0);
	atomic_init(&st->interval[0], 0);
	atomic_init(&st->interval[1], 0);
	pthread_mutex_init(&st->mu, NULL);
	st->last_ns[0] = st->last_ns[1] = 0;
	st->live = false;
}

void rbdl_stamps_start(struct rbdl_image *img)
{
	static const char *const methods[2] = {
		"get_access_timestamp", "get_modify_timestamp",
	};
	struct rbdl_stamps *st = &img->stamps;
	int64_t mono = (int64_t)rbdl_ctl_now_ns();
	struct timespec ts[2], real;

	/* Stamps that cannot be read count as the epoch: the first I/O of
	 * each kind stamps (librbd's open leaves them 0 when the OSD lacks
	 * the methods). */
	if (rbdl_read_utimes(img->md_io, img->header_oid, methods, 2, ts) < 0)
		ts[0].tv_sec = ts[1].tv_sec = 0;
	clock_gettime(CLOCK_REALTIME, &real);
	pthread_mutex_lock(&st->mu);
	for (int k = 0; k < 2; k++)	/* the stamp's age, on our clock */
		st->last_ns[k] = mono -
				 ((int64_t)real.tv_sec - ts[k].tv_sec) * NS;
	pthread_mutex_unlock(&st->mu);
	rbdl_ctl_task_init(&st->task, RBDL_CTL_INTERNAL, stamps_run);
	st->live = true;
	stamps_run(&st->task);
}

void rbdl_stamps_settings(struct rbdl_image *img, const struct rbdl_conf *c)
{
	struct rbdl_stamps *st = &img->stamps;
	uint64_t atime_s = rbdl_conf_uint(c, true, "rbd_atime_update_interval",
					  60);
	uint64_t mtime_s = rbdl_conf_uint(c, true, "rbd_mtime_update_interval",
					  60);
	uint32_t iv[2] = {
		atime_s > UINT32_MAX ? UINT32_MAX : (uint32_t)atime_s,
		mtime_s > UINT32_MAX ? UINT32_MAX : (uint32_t)mtime_s,
	};
	bool changed = false;

	for (int k = 0; k < 2; k++)
		changed |= atomic_exchange_explicit(&st->interval[k], iv[k],
						    memory_order_relaxed) !=
			   iv[k];
	/* A kind turned off stamps no more; other changes take effect at
	 * the timer's next run, now. */
	for (int k = 0; k < 2; k++)
		if (!iv[k])
			atomic_fetch_and_explicit(&st->due, ~(1u << k),
						  memory_order_relaxed);
	if (changed && st->live)
		rbdl_ctl_kick(&st->task);
}

void rbdl_stamps_stop(struct rbdl_image *img)
{
	if (img->stamps.live)
		rbdl_ctl_task_retire(&img->stamps.task);
	img->stamps.live = false;
	pthread_mutex_destroy(&img->stamps.mu);
}

struct stamp_op {
	rados_write_op_t op;
	struct rbdl_delivery *dl;
};

static void stamp_done(rados_completion_t rc, void *arg)
{
	struct stamp_op *s = arg;
	struct rbdl_delivery *dl = s->dl;

	/* Errors are ignored, as librbd ignores them. */
	rados_aio_release(rc);
	rados_release_write_op(s->op);
	free(s);
	rbdl_delivery_put(dl);	/* last: rbd_close may go on */
}

void rbdl_stamps_fire(struct rbdl_image *img, unsigned bit)
{
	static const char *const methods[2] = {
		"set_access_timestamp", "set_modify_timestamp",
	};
	struct rbdl_stamps *st = &img->stamps;
	int k = kind_of(bit);
	struct stamp_op *s;
	rados_completion_t rc;

	/* Relaxed: only one clearer sends (the RMW), nothing else is
	 * published through the bit. */
	if (!(atomic_fetch_and_explicit(&st->due, ~bit,
					memory_order_relaxed) & bit))
		return;
	pthread_mutex_lock(&st->mu);
	st->last_ns[k] = (int64_t)rbdl_ctl_now_ns();
	pthread_mutex_unlock(&st->mu);
	rbdl_ctl_kick(&st->task);	/* re-arm for the next interval */
	s = malloc(sizeof(*s));
	if (!s)
		return;
	s->op = rados_create_write_op();
	s->dl = &img->dl;
	if (!s->op) {
		free(s);
		return;
	}
	rados_write_op_exec(s->op, "rbd", methods[k], NULL, 0, NULL);
	if (rados_aio_create_completion2(s, stamp_done, &rc) < 0) {
		rados_release_write_op(s->op);
		free(s);
		return;
	}
	/* The caller is inside a request on the open image (close cannot
	 * be running), so the image's delivery may be counted here. */
	rbdl_delivery_get(s->dl);
	if (rados_aio_write_op_operate(s->op, img->md_io, rc, img->header_oid,
				       NULL, 0) < 0) {
		rados_aio_release(rc);
		rados_release_write_op(s->op);
		free(s);
		rbdl_delivery_put(&img->dl);
	}
}
