/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * engine.c - the job threads of a benchmark child, common to all backends:
 * choosing each I/O's image, offset and direction, checking and counting
 * completions, resubmitting, and the loops that wait for completions
 * (reaping them is the backend's business in rbd poll mode).
 *
 * Threading: job_main() is the body of one job thread.  handle_completion()
 * runs on the job thread, except in callback mode, where the library's
 * callback threads run it (then j->shared is set and the counters are
 * atomic adds).  A slot belongs to whoever holds its completion: the job
 * thread between completions, the library while the I/O is in flight.
 * The first error wins (child_fail, under c->errlock) and stops every job.
 *
 * Ownership: nothing is allocated here; child.c sets the jobs up and frees
 * them.  A job's eventfd is created by its own thread (job_open) and
 * closed by child_free_jobs().
 */
#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

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
		vsnprintf(c->errmsg + n, sizeof(c->errmsg) - (size_t)n, fmt,
			  ap);
		va_end(ap);
		c->err = err;
		atomic_store(&c->failed, 1);
		atomic_store(&c->phase, PH_STOP);
	}
	pthread_mutex_unlock(&c->errlock);
}

/* The offset generator: one state per slot, so jobs share nothing. */
static inline uint64_t xorshift64s(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static int keep_going(struct job *j)
{
	struct child *c = j->c;

	if (atomic_load_explicit(&c->phase, memory_order_relaxed) == PH_STOP)
		return 0;
	if (c->o->runtime > 0)
		return 1;
	/* size mode: each job issues its budget */
	return atomic_fetch_add_explicit(&j->issued, 1,
					 memory_order_relaxed) < j->budget;
}

static void next_io(struct job *j, struct slot *s)
{
	const struct opts *o = j->c->o;
	const struct jimg *ji;
	uint64_t blk;

	if (j->c->random) {
		s->cur = j->nimg > 1 ?
			 (int)(xorshift64s(&s->rng) % (uint64_t)j->nimg) : 0;
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

/* Wake a job thread blocked in efd_wait(). */
static void efd_signal(int efd)
{
	uint64_t one = 1;

	/* an eventfd write of 1 only fails on a bad descriptor: a bug */
	if (write(efd, &one, sizeof(one)) < 0)
		abort();
}

static void efd_wait(int efd)
{
	uint64_t v;

	while (read(efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

/* Retire a slot in callback mode; the last one wakes the job thread. */
void cb_retire(struct job *j)
{
	if (atomic_fetch_sub_explicit(&j->inflight, 1,
				      memory_order_acq_rel) == 1)
		efd_signal(j->efd);
}

/*
 * Hand a finished slot back to its job thread: push it on the job's
 * lock-free completed list (release: the job thread's acquire exchange
 * sees s->res / s->ops' error and the read data) and write the eventfd only on
 * the empty -> non-empty transition.
 */
void slot_handoff(struct slot *s)
{
	struct job *j = s->j;
	struct slot *head;

	head = atomic_load_explicit(&j->done, memory_order_relaxed);
	do {
		s->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&j->done, &head, s,
			memory_order_release, memory_order_relaxed));
	if (!head)		/* empty -> non-empty: one wake-up */
		efd_signal(j->efd);
}

/* Start one I/O on a slot.  Returns 0 or a negative errno (rbd backends). */
static int slot_submit(struct job *j, struct slot *s)
{
	next_io(j, s);
	s->t0 = now_ns();
	if (j->c->backend == BE_RADOS) {
		be_rados_submit(j, s);
		return 0;
	}
	return be_rbd_submit(j, s);
}

/*
 * One completed I/O: check it, account it if inside the measured window,
 * and issue the next one on the same slot.  r is the rbd return value
 * (bytes for reads, 0 for writes) or, for rados, 0 / -errno.
 * Returns 1 if the slot is in flight again, 0 if it retired.
 */
int handle_completion(struct job *j, struct slot *s, ssize_t r)
{
	struct child *c = j->c;
	const struct opts *o = c->o;
	uint64_t t = now_ns();

	if (r < 0 || (c->backend != BE_RADOS &&
		      (s->write ? r != 0 : (uint64_t)r != o->bs))) {
		const char *dir = s->write ? "write" : "read";
		const char *img = o->images[j->ji[s->cur].img];

		if (r >= 0)
			child_fail(c, EIO, "%s of %" PRIu64 " bytes at offset %"
				   PRIu64 " of image %s returned %zd", dir,
				   o->bs, s->off, img, r);
		else
			child_fail(c, (int)-r, "%s of %" PRIu64 " bytes at "
				   "offset %" PRIu64 " of image %s failed: %s "
				   "(errno %d)", dir, o->bs, s->off, img,
				   strerror((int)-r), (int)-r);
		return 0;
	}
	if (atomic_load_explicit(&c->phase, memory_order_relaxed) ==
	    PH_MEASURE) {
		ctr_add(j, &j->hist[hist_index(t - s->t0)], 1);
		ctr_add(j, &j->ios, 1);
		ctr_add(j, s->write ? &j->writes : &j->reads, 1);
		ctr_add(j, &j->bytes, o->bs);
	}
	if (!keep_going(j))
		return 0;
	r = slot_submit(j, s);
	if (r < 0) {
		/* the new I/O's direction and image, not the completed one's */
		child_fail(c, (int)-r, "submitting a %s at offset %" PRIu64
			   " of image %s failed: %s (errno %d)",
			   s->write ? "write" : "read", s->off,
			   o->images[j->ji[s->cur].img], strerror((int)-r),
			   (int)-r);
		return 0;
	}
	return 1;
}

/* Initial submissions; returns how many slots are in flight. */
static int job_prime(struct job *j)
{
	struct child *c = j->c;
	int n = 0;

	if (c->o->mode == MODE_CALLBACK)	/* +1 guard */
		atomic_store(&j->inflight, c->o->iodepth + 1);
	for (int i = 0; i < c->o->iodepth && keep_going(j); i++) {
		int r = slot_submit(j, &j->slots[i]);

		if (r < 0) {
			child_fail(c, -r, "submitting to image %s failed: %s "
				   "(errno %d)",
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

/*
 * rados poll mode and handoff mode, after an eventfd wake-up: take the
 * slots queued on j->done; returns how many retired.
 */
static int reap_handoff(struct job *j)
{
	int rados = j->c->backend == BE_RADOS;
	int retired = 0;
	struct slot *l, *rev = NULL, *next;

	l = atomic_exchange_explicit(&j->done, NULL, memory_order_acquire);
	for (; l; l = next) {	/* LIFO -> completion order */
		next = l->next;
		l->next = rev;
		rev = l;
	}
	for (; rev; rev = next) {
		next = rev->next;
		ssize_t r = rados ? rbdl_join_result(&rev->ops) : rev->res;

		if (!handle_completion(j, rev, r))
			retired++;
	}
	return retired;
}

/* The job thread reaps after every wake-up until all slots retired. */
static void job_run_reaping(struct job *j, int (*reap)(struct job *j))
{
	int inflight = job_prime(j);

	while (inflight > 0) {
		efd_wait(j->efd);
		inflight -= reap(j);
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
	j->efd = eventfd(0, EFD_CLOEXEC);
	if (j->efd < 0)
		return -errno;
	if (j->c->backend == BE_RADOS)
		return 0;
	return be_rbd_job_open(j, failed_img);
}

/*
 * A job thread: open, meet the others at the barriers (so that opening is
 * outside the measured window), run until the main thread stops the phase
 * or the size budget is spent, then close after the main thread has taken
 * its final snapshot.
 */
void *job_main(void *arg)
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
			job_run_reaping(j, reap_handoff);
		else
			job_run_reaping(j, be_rbd_reap);
	}
	sem_post(&c->done_sem);
	pthread_barrier_wait(&c->close_bar);
	/* closing is outside the measured window */
	be_rbd_job_close(j);
	return NULL;
}
