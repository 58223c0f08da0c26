/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * child.c - a benchmark child process (--child): load the backend's
 * library, connect, set up the jobs, start the job threads, warm up,
 * measure a steady-state window, and send the result (or the first error)
 * to the parent over the pipe on --child-fd.  --child-info instead sends
 * the layout of every image.
 *
 * Threading: the main thread does everything here; the job threads
 * (engine.c) start after child_setup_jobs() and meet the main thread at
 * three barriers: opened (every job has its handles), go (the phase is
 * set), close (the final snapshot is taken).  Between go and close the
 * main thread only sleeps, sends progress and reads counters.
 *
 * Ownership: the struct child lives on child_main()'s stack; the jobs and
 * everything they point to are freed by child_free_jobs(), on every path.
 * Records are sent only from this thread.
 */
#include "engine.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

void child_send_error(const struct opts *o, int err, const char *fmt, ...)
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
			 o->conf ? o->conf : "(default search path)",
			 strerror(-r));
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
		free(kv);
		if (r < 0) {
			snprintf(err, errlen, "--set %s: %s", o->sets[i],
				 strerror(-r));
			return r;
		}
	}
	r = rados_connect(c->cluster);
	if (r < 0) {
		snprintf(err, errlen, "cannot connect to the cluster: %s",
			 strerror(-r));
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

/* ---- measuring ---------------------------------------------------------- */

/* Whole-process figures at one instant; a result is the difference. */
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
	s->user = (double)ru.ru_utime.tv_sec +
		  (double)ru.ru_utime.tv_usec / 1e6;
	s->sys = (double)ru.ru_stime.tv_sec +
		 (double)ru.ru_stime.tv_usec / 1e6;
	s->nvcsw = (uint64_t)ru.ru_nvcsw;
	s->nivcsw = (uint64_t)ru.ru_nivcsw;
	s->mallocs = c->malloc_get ? (int64_t)c->malloc_get() : -1;
	s->lib_hot = -1;
	if (c->api.rbdlite_get_stats) {
		struct rbdlite_stats st;

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
			p.ios += atomic_load_explicit(&c->jobs[i].ios,
						      memory_order_relaxed);
	}
	(void)send_rec(c->fd, REC_PROGRESS, &p, sizeof(p));
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000u),
			       (long)(t % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/*
 * From the opened barrier to the end of the measured window: s0 and s1
 * bracket it.  Size mode measures from the start until every job has
 * spent its budget; time mode warms up first, then measures o->runtime.
 */
static void child_measure(struct child *c, struct snap *s0, struct snap *s1)
{
	const struct opts *o = c->o;

	pthread_barrier_wait(&c->opened_bar);
	if (o->runtime == 0 || o->warmup == 0) {
		take_snap(c, s0);
		atomic_store(&c->phase, atomic_load(&c->failed) ? PH_STOP
							       : PH_MEASURE);
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
			take_snap(c, s0);
			if (!atomic_load(&c->failed))
				atomic_store(&c->phase, PH_MEASURE);
		}
		t_end = s0->t + (uint64_t)(o->runtime * 1e9);
		tick = s0->t;
		while (!atomic_load(&c->failed)) {
			uint64_t now = now_ns();

			if (now >= t_end)
				break;
			tick += 1000000000u;
			sleep_until(tick < t_end ? tick : t_end);
			if (now_ns() < t_end)
				send_progress(c, 1, s0->t);
		}
		take_snap(c, s1);
		atomic_store(&c->phase, PH_STOP);
		for (int i = 0; i < o->numjobs; i++)
			sem_wait(&c->done_sem);
	} else {
		for (int i = 0; i < o->numjobs; i++)
			sem_wait(&c->done_sem);
		take_snap(c, s1);
		atomic_store(&c->phase, PH_STOP);
	}
}

/* The result of the window s0..s1; the job threads have been joined. */
static void fill_result(struct child *c, struct result_rec *res,
			const struct snap *s0, const struct snap *s1)
{
	const struct opts *o = c->o;
	int maj, min, ext;

	res->elapsed = (double)(s1->t - s0->t) / 1e9;
	res->cpu_user = s1->user - s0->user;
	res->cpu_sys = s1->sys - s0->sys;
	res->nvcsw = s1->nvcsw - s0->nvcsw;
	res->nivcsw = s1->nivcsw - s0->nivcsw;
	res->mallocs = s0->mallocs >= 0 ? s1->mallocs - s0->mallocs : -1;
	res->lib_hot_mallocs = s0->lib_hot >= 0 ? s1->lib_hot - s0->lib_hot
						: -1;
	for (int i = 0; i < o->numjobs; i++) {
		struct job *j = &c->jobs[i];

		res->ios += atomic_load(&j->ios);
		res->reads += atomic_load(&j->reads);
		res->writes += atomic_load(&j->writes);
		res->bytes += atomic_load(&j->bytes);
		res->enoent_reads += atomic_load(&j->enoent);
		for (unsigned k = 0; k < H_BUCKETS; k++)
			res->hist[k] += atomic_load_explicit(&j->hist[k],
						memory_order_relaxed);
	}
	rados_version(&maj, &min, &ext);
	snprintf(res->rados_version, sizeof(res->rados_version), "%d.%d.%d",
		 maj, min, ext);
	if (c->backend != BE_RADOS) {
		c->api.version(&maj, &min, &ext);
		snprintf(res->rbd_version, sizeof(res->rbd_version),
			 "%d.%d.%d", maj, min, ext);
		if (c->api.rbdlite_version)
			snprintf(res->lib_version, sizeof(res->lib_version),
				 "%s", c->api.rbdlite_version());
		snprintf(res->lib_path, sizeof(res->lib_path), "%s",
			 c->lib_path);
	}
}

/* ---- jobs --------------------------------------------------------------- */

/* The slots of job j: aligned buffers filled with seeded noise (so that
 * writes are not compressible zeros) and one offset generator each. */
static void setup_slots(struct job *j, uint64_t seed)
{
	const struct opts *o = j->c->o;

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

static int child_setup_jobs(struct child *c, char *err, size_t errlen)
{
	const struct opts *o = c->o;
	int per_image[MAX_IMAGES] = { 0 }, seen[MAX_IMAGES] = { 0 };

	if (c->backend == BE_RADOS) {
		int r = be_rados_open_pools(c, err, errlen);

		if (r < 0)
			return r;
	}
	c->jobs = xcalloc((size_t)o->numjobs, sizeof(*c->jobs));
	for (int i = 0; i < o->numjobs; i++) {
		c->jobs[i].efd = -1;	/* child_free_jobs() may see any */
		per_image[i % o->nimages]++;
	}
	for (int i = 0; i < o->numjobs; i++) {
		struct job *j = &c->jobs[i];

		j->c = c;
		j->idx = i;
		j->nimg = o->spread == SPREAD_IOS ? o->nimages : 1;
		j->ji = xcalloc((size_t)j->nimg, sizeof(*j->ji));
		j->shared = o->mode == MODE_CALLBACK;
		j->budget = 0;
		for (int k = 0; k < j->nimg; k++) {
			struct jimg *ji = &j->ji[k];
			int img = o->spread == SPREAD_IOS ? k : i % o->nimages;
			const struct layout *L = &o->layouts[img];
			uint64_t region = opts_region(o, L);

			ji->img = img;
			ji->lay = L;
			ji->nblocks = region / o->bs;
			if (!ji->nblocks) {
				snprintf(err, errlen, "image %s: region of %"
					 PRIu64 " bytes is smaller than one block",
					 o->images[img], region);
				return -EINVAL;
			}
			/* sequential jobs on one image start spread over the
			 * region */
			if (o->spread == SPREAD_IOS)
				ji->seq_start = ji->nblocks * (uint64_t)i /
						(uint64_t)o->numjobs;
			else
				ji->seq_start = ji->nblocks *
						(uint64_t)seen[img]++ /
						(uint64_t)per_image[img];
			/* size mode: the region of every image once */
			j->budget += ji->nblocks;
			if (c->backend == BE_RADOS)
				ji->dio = c->dio[img];
		}
		if (!j->budget)
			j->budget = 1;
		setup_slots(j, o->seed * 0x100000001b3ull + (uint64_t)i);
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
				for (int k = 0; k < o->iodepth; k++) {
					free(j->slots[k].buf);
					free(j->slots[k].cbuf);
				}
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
	be_rbd_close_shared(c);
	be_rados_close_pools(c);
}

/* ---- one block ---------------------------------------------------------- */

static int child_bench(struct child *c)
{
	const struct opts *o = c->o;
	struct result_rec *res;
	struct snap s0, s1;
	char err[512];
	int nthreads = 0, r;

	if (o->nlayouts != o->nimages) {
		child_send_error(o, EINVAL, "internal: %d layouts for %d images",
				 o->nlayouts, o->nimages);
		return 1;
	}
	r = child_setup_jobs(c, err, sizeof(err));
	if (r < 0) {
		child_send_error(o, -r, "%s: %s", be_name[c->backend], err);
		goto fail;
	}
	if (o->shared_handles && c->backend != BE_RADOS) {
		/* opened before the job threads start, closed after they are
		 * joined */
		int bad = 0;

		r = be_rbd_open_shared(c, &bad);
		if (r < 0) {
			child_send_error(o, -r, "%s: cannot open image %s/%s: %s",
					 be_name[c->backend], o->pool,
					 o->images[bad], strerror(-r));
			goto fail;
		}
	}
	pthread_barrier_init(&c->opened_bar, NULL, (unsigned)o->numjobs + 1);
	pthread_barrier_init(&c->go_bar, NULL, (unsigned)o->numjobs + 1);
	pthread_barrier_init(&c->close_bar, NULL, (unsigned)o->numjobs + 1);
	sem_init(&c->done_sem, 0, 0);
	for (int i = 0; i < o->numjobs; i++) {
		r = pthread_create(&c->jobs[i].th, NULL, job_main, &c->jobs[i]);
		if (r) {
			/* cannot go on without every thread at the barriers */
			child_send_error(o, r, "pthread_create: %s",
					 strerror(r));
			_exit(1);
		}
		nthreads++;
	}
	child_measure(c, &s0, &s1);

	/* before the jobs close their images: the steady-state figures */
	res = xcalloc(1, sizeof(*res));
	proc_status(&res->threads, &res->rss_kib);
	pthread_barrier_wait(&c->close_bar);
	for (int i = 0; i < nthreads; i++)
		pthread_join(c->jobs[i].th, NULL);

	if (atomic_load(&c->failed)) {
		child_send_error(o, c->err, "%s", c->errmsg);
		free(res);
		goto fail;
	}
	fill_result(c, res, &s0, &s1);
	r = send_rec(c->fd, REC_RESULT, res, sizeof(*res));
	free(res);
	child_free_jobs(c);
	pthread_barrier_destroy(&c->opened_bar);
	pthread_barrier_destroy(&c->go_bar);
	pthread_barrier_destroy(&c->close_bar);
	sem_destroy(&c->done_sem);
	return r < 0;
fail:
	child_free_jobs(c);
	return 1;
}

int child_main(const struct opts *o)
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
			child_send_error(o, -r, "%s: %s", be_name[c.backend],
					 err);
			return 1;
		}
	}
	/* present only if the parent preloaded the counter */
	*(void **)&c.malloc_get = dlsym(RTLD_DEFAULT,
					"rbdlite_malloccount_get");
	r = child_connect(&c, err, sizeof(err));
	if (r < 0) {
		child_send_error(o, -r, "%s: %s", be_name[c.backend], err);
		child_disconnect(&c);
		return 1;
	}
	ret = o->child == 2 ? be_rbd_info(&c) : child_bench(&c);
	child_disconnect(&c);
	pthread_mutex_destroy(&c.errlock);
	/* The rbd library stays loaded: unloading librbd is not safe. */
	return ret;
}
