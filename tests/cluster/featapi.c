/*
 * featapi.c - drive feature updates, object-map rebuild, sparsify and
 * quiesce watchers through the C API, for test-featapi.sh.
 *
 * Built twice: featapi-lite (librbdlite) and featapi-librbd (the real
 * librbd); the script runs the same commands with both on twin images and
 * compares what they print.  Pool from RBDLITE_TEST_POOL, cluster from
 * CEPH_CONF.
 *
 *   featapi IMAGE CMD [ARGS] [-- CMD [ARGS]]...
 *     feat +|-NAMES      rbd_update_features (NAMES: comma list of
 *                        exclusive-lock,object-map,fast-diff,deep-flatten,
 *                        journaling,layering,striping,data-pool,
 *                        non-primary or a number)
 *     info               features and flags
 *     write OFF LEN BYTE rbd_write of LEN bytes of BYTE (0: zeros)
 *     rebuild [STOP]     rbd_rebuild_object_map; the progress callback
 *                        returns -1 at its STOP-th call
 *     sparsify SIZE [STOP]  rbd_sparsify_with_progress (plain
 *                        rbd_sparsify when STOP is "plain")
 *     quiesce N DELAY_MS STOPFILE R0 [R1...]  register N quiesce watchers
 *                        (watcher i answers Ri after DELAY_MS on its own
 *                        thread), print events until STOPFILE exists,
 *                        then unwatch
 *     qsnap NAME R DELAY_MS  one quiesce watcher (answers R after DELAY_MS)
 *                        while this open itself runs rbd_snap_create2
 *     qcheck             quiesce handle checks (librbdlite only: librbd
 *                        takes a handle for a pointer and crashes on an
 *                        unknown or twice-unwatched one)
 *     args               argument checks of the other calls
 *
 * Threading: the quiesce answers come from short-lived threads; output
 * lines are written under one mutex and flushed.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static rbd_image_t image;

static void say(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_mu);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
}

static const struct {
	const char *name;
	uint64_t bit;
} feature_names[] = {
	{ "layering", RBD_FEATURE_LAYERING },
	{ "striping", RBD_FEATURE_STRIPINGV2 },
	{ "exclusive-lock", RBD_FEATURE_EXCLUSIVE_LOCK },
	{ "object-map", RBD_FEATURE_OBJECT_MAP },
	{ "fast-diff", RBD_FEATURE_FAST_DIFF },
	{ "deep-flatten", RBD_FEATURE_DEEP_FLATTEN },
	{ "journaling", RBD_FEATURE_JOURNALING },
	{ "data-pool", RBD_FEATURE_DATA_POOL },
	{ "operations", RBD_FEATURE_OPERATIONS },
	{ "migrating", RBD_FEATURE_MIGRATING },
	{ "non-primary", RBD_FEATURE_NON_PRIMARY },
	{ "dirty-cache", RBD_FEATURE_DIRTY_CACHE },
};

static uint64_t parse_features(const char *s)
{
	uint64_t f = 0;
	char *dup = strdup(s), *save = NULL;

	for (char *t = strtok_r(dup, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(feature_names) / sizeof(*feature_names);
		     i++)
			if (!strcmp(t, feature_names[i].name))
				break;
		if (i < sizeof(feature_names) / sizeof(*feature_names))
			f |= feature_names[i].bit;
		else
			f |= strtoull(t, NULL, 0);
	}
	free(dup);
	return f;
}

/* ---- progress -------------------------------------------------------------- */

struct prog {
	long calls, stop;
	int stopval;	/* what the STOP-th call returns (FEATAPI_STOPVAL) */
	uint64_t last_off, last_total;
	int backwards;	/* offsets went down */
};

static int progress_cb(uint64_t offset, uint64_t total, void *arg)
{
	struct prog *p = arg;

	p->calls++;
	if (p->calls > 1 && offset < p->last_off)
		p->backwards = 1;
	p->last_off = offset;
	p->last_total = total;
	if (p->stop && p->calls == p->stop)
		return p->stopval;
	return 0;
}

static int stop_value(void)
{
	const char *v = getenv("FEATAPI_STOPVAL");

	return v ? atoi(v) : -1;
}

static void say_prog(const char *what, int r, const struct prog *p)
{
	/* Call counts are printed apart: the script compares them itself. */
	say("%s = %d last=%" PRIu64 "/%" PRIu64 " backwards=%d", what, r,
	    p->last_off, p->last_total, p->backwards);
	say("# %s calls=%ld", what, p->calls);
}

/* ---- quiesce ----------------------------------------------------------------- */

struct qwatcher {
	int idx;
	uint64_t handle;
	int answer;
	int delay_ms;
	int rounds;
	volatile int unquiesced;
};

static void *answer_thread(void *arg)
{
	struct qwatcher *w = arg;

	usleep((useconds_t)w->delay_ms * 1000);
	say("complete %d %d", w->idx, w->answer);
	rbd_quiesce_complete(image, w->handle, w->answer);
	return NULL;
}

static void quiesce_cb(void *arg)
{
	struct qwatcher *w = arg;
	pthread_t t;

	w->rounds++;
	say("quiesce %d", w->idx);
	if (w->delay_ms == 0) {
		say("complete %d %d", w->idx, w->answer);
		rbd_quiesce_complete(image, w->handle, w->answer);
		return;
	}
	pthread_create(&t, NULL, answer_thread, w);
	pthread_detach(t);
}

static void unquiesce_cb(void *arg)
{
	struct qwatcher *w = arg;

	say("unquiesce %d", w->idx);
	w->unquiesced = 1;
}

static int cmd_quiesce(int argc, char **argv)
{
	int n, delay;
	const char *stop;
	struct qwatcher *ws;

	if (argc < 4)
		return -EINVAL;
	n = atoi(argv[0]);
	delay = atoi(argv[1]);
	stop = argv[2];
	ws = calloc((size_t)n, sizeof(*ws));
	for (int i = 0; i < n; i++) {
		ws[i].idx = i;
		ws[i].delay_ms = delay;
		ws[i].answer = atoi(argv[3 + (i < argc - 3 ? i : argc - 4)]);
		int r = rbd_quiesce_watch(image, quiesce_cb, unquiesce_cb,
					  &ws[i], &ws[i].handle);

		say("watch %d = %d", i, r);
	}
	say("ready");
	while (access(stop, F_OK) != 0)
		usleep(20000);
	for (int i = 0; i < n; i++)
		say("unwatch %d = %d", i,
		    rbd_quiesce_unwatch(image, ws[i].handle));
	return 0;
}

static void noop_cb(void *arg)
{
	(void)arg;
}

static void cmd_qcheck(void)
{
	uint64_t h1 = 99, h2 = 99;

	say("unwatch unknown = %d", rbd_quiesce_unwatch(image, 12345));
	say("watch1 = %d", rbd_quiesce_watch(image, noop_cb, noop_cb, NULL,
					     &h1));
	say("watch2 = %d", rbd_quiesce_watch(image, noop_cb, noop_cb, NULL,
					     &h2));
	say("handles %" PRIu64 " %" PRIu64, h1, h2);
	say("unwatch1 = %d", rbd_quiesce_unwatch(image, h1));
	say("unwatch1 again = %d", rbd_quiesce_unwatch(image, h1));
	say("unwatch2 = %d", rbd_quiesce_unwatch(image, h2));
}

/* ---- main ----------------------------------------------------------------- */

static void cmd_info(void)
{
	uint64_t f = 0, fl = 0;
	int r1 = rbd_get_features(image, &f), r2 = rbd_get_flags(image, &fl);

	say("info features=0x%" PRIx64 " (%d) flags=0x%" PRIx64 " (%d)", f, r1,
	    fl, r2);
}

static int run(int argc, char **argv)
{
	const char *cmd = argv[0];

	if (!strcmp(cmd, "feat") && argc >= 2) {
		uint64_t f = parse_features(argv[1] + 1);
		int r = rbd_update_features(image, f, argv[1][0] == '+');

		say("feat %s = %d", argv[1], r);
	} else if (!strcmp(cmd, "info")) {
		cmd_info();
	} else if (!strcmp(cmd, "write") && argc >= 4) {
		uint64_t off = strtoull(argv[1], NULL, 0);
		size_t len = strtoull(argv[2], NULL, 0);
		char *buf = malloc(len);

		memset(buf, (int)strtol(argv[3], NULL, 0), len);
		ssize_t r = rbd_write(image, off, len, buf);

		free(buf);
		say("write %s %s = %zd", argv[1], argv[2], r);
	} else if (!strcmp(cmd, "rebuild")) {
		struct prog p = { 0 };

		p.stopval = stop_value();
		if (argc >= 2)
			p.stop = atol(argv[1]);
		int r = rbd_rebuild_object_map(image, progress_cb, &p);

		say_prog("rebuild", r, &p);
	} else if (!strcmp(cmd, "sparsify") && argc >= 2) {
		struct prog p = { 0 };

		p.stopval = stop_value();
		size_t sz = strtoull(argv[1], NULL, 0);
		int r;

		if (argc >= 3 && !strcmp(argv[2], "plain")) {
			r = rbd_sparsify(image, sz);
			say("sparsify %s = %d", argv[1], r);
		} else {
			if (argc >= 3)
				p.stop = atol(argv[2]);
			r = rbd_sparsify_with_progress(image, sz, progress_cb,
						       &p);
			say_prog("sparsify", r, &p);
		}
	} else if (!strcmp(cmd, "quiesce")) {
		return cmd_quiesce(argc - 1, argv + 1);
	} else if (!strcmp(cmd, "qsnap") && argc >= 4) {
		/* Our own snapshot of an image we watch for quiesce. */
		struct qwatcher w = { .idx = 0, .answer = atoi(argv[2]),
				      .delay_ms = atoi(argv[3]) };
		int r = rbd_quiesce_watch(image, quiesce_cb, unquiesce_cb, &w,
					  &w.handle);

		say("watch = %d", r);
		struct prog p = { 0 };

		/* librbd calls the progress callback unchecked: give one. */
		r = rbd_snap_create2(image, argv[1], 0, progress_cb, &p);
		say("snap_create2 %s = %d progress=%ld last=%" PRIu64 "/%" PRIu64,
		    argv[1], r, p.calls, p.last_off, p.last_total);
		for (int i = 0; i < 300 && !w.unquiesced; i++)
			usleep(10000);
		usleep(100000);
		say("unwatch = %d", rbd_quiesce_unwatch(image, w.handle));
	} else if (!strcmp(cmd, "qcheck")) {
		cmd_qcheck();
	} else if (!strcmp(cmd, "args")) {
		say("feat null image = %d",
		    rbd_update_features(NULL, RBD_FEATURE_OBJECT_MAP, 1));
		say("rebuild null image = %d",
		    rbd_rebuild_object_map(NULL, NULL, NULL));
		say("sparsify null image = %d", rbd_sparsify(NULL, 4096));
		say("quiesce_watch null image = %d",
		    rbd_quiesce_watch(NULL, noop_cb, noop_cb, NULL, NULL));
		say("quiesce_unwatch null image = %d",
		    rbd_quiesce_unwatch(NULL, 0));
	} else {
		fprintf(stderr, "featapi: bad command %s\n", cmd);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	rados_t cluster;
	rados_ioctx_t io;
	const char *pool = getenv("RBDLITE_TEST_POOL");
	const char *snap = getenv("FEATAPI_SNAP");
	int r;

	if (argc < 3 || !pool) {
		fprintf(stderr, "usage: featapi IMAGE CMD... (RBDLITE_TEST_POOL)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((r = rados_create(&cluster, NULL)) < 0 ||
	    (r = rados_conf_read_file(cluster, getenv("CEPH_CONF"))) < 0 ||
	    (r = rados_connect(cluster)) < 0 ||
	    (r = rados_ioctx_create(cluster, pool, &io)) < 0) {
		fprintf(stderr, "featapi: cluster: %s\n", strerror(-r));
		return 1;
	}
	if (getenv("FEATAPI_RO"))
		r = rbd_open_read_only(io, argv[1], &image, snap);
	else
		r = rbd_open(io, argv[1], &image, snap);
	if (r < 0) {
		fprintf(stderr, "featapi: open %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	int i = 2;

	while (i < argc) {
		int j = i;

		while (j < argc && strcmp(argv[j], "--"))
			j++;
		if (run(j - i, argv + i) < 0)
			return 1;
		i = j + 1;
	}
	r = rbd_close(image);
	rados_ioctx_destroy(io);
	rados_shutdown(cluster);
	return r < 0 ? 1 : 0;
}
