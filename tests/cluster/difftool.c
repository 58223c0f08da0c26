/*
 * difftool.c - rbd_diff_iterate2, lock owner and update-watch calls from
 * the command line, built twice from this one source: against librbdlite
 * (difftool-lite) and against the real librbd (difftool-librbd), so
 * tests/cluster/test-diff.sh can run the same call on the same image with
 * both and compare the output.
 *
 *   difftool POOL diff IMAGE SNAP|- FROMSNAP|- OFS LEN WHOLE [STOP]
 *       one line "off len exists" per callback, then "ret=<r>"; with STOP,
 *       the STOP-th callback returns -42 (iteration must stop, -42 is
 *       returned)
 *   difftool POOL owners IMAGE [MAX]
 *       "ret=<r> n=<count> mode=<m> owner=<o>..." (MAX: array size, 4)
 *   difftool POOL write-hold IMAGE SECONDS|GOFILE
 *       write 4 KiB at 0 (takes the exclusive lock), print "locked
 *       <owner>", hold the image open SECONDS (a number) or until GOFILE
 *       exists (at most 120 s), then write again and print "write2=<r>"
 *   difftool POOL break IMAGE OWNER|-
 *       "ret=<r>" of rbd_lock_break (EXCLUSIVE; "-": the current owner)
 *   difftool POOL watch IMAGE WANT SECONDS [keep]
 *       register an update watch, print "registered", wait until WANT
 *       callbacks arrived (or SECONDS), print "callbacks>=<WANT>" or
 *       "callbacks=<n>", then "unwatch=<r>"; with "keep" (librbdlite
 *       only), unwatch the same handle again ("again=<r>"), register a
 *       second watch and close with it still registered
 *   difftool POOL watchresize IMAGE SIZE...
 *       register an update watch, then for each SIZE open a second handle
 *       in this process, resize it to SIZE bytes, close it; print each
 *       "resize=<r>", then (waiting up to 10 s for them to arrive) the
 *       number of callbacks, "callbacks=<n>": one per header update,
 *       also for a resize to the current size
 *
 * With DIFFTOOL_READ_ONLY non-empty in the environment, the image is opened
 * with rbd_open_read_only.
 *
 * Exit status: 0 if the command ran (its result is in the output), 2 on
 * set-up errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

static int ncb, stop_at;

static int diff_cb(uint64_t off, size_t len, int exists, void *arg)
{
	(void)arg;
	ncb++;
	printf("%" PRIu64 " %zu %d\n", off, len, exists);
	if (stop_at && ncb == stop_at)
		return -42;
	return 0;
}

static atomic_int watch_calls;

static void watch_cb(void *arg)
{
	(void)arg;
	atomic_fetch_add(&watch_calls, 1);
}

static void noop_cb(void *arg)
{
	(void)arg;
}

static int cmd_owners(rbd_image_t img, size_t max)
{
	char *owners[4] = { 0 };
	rbd_lock_mode_t mode = (rbd_lock_mode_t)-1;
	size_t n = max;
	int r = rbd_lock_get_owners(img, &mode, max ? owners : NULL, &n);

	printf("ret=%d n=%zu", r, n);
	if (r == 0 && n) {
		printf(" mode=%d", (int)mode);
		for (size_t i = 0; i < n; i++)
			printf(" owner=%s", owners[i]);
		rbd_lock_get_owners_cleanup(owners, n);
	}
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	rados_t cl;
	rados_ioctx_t io;
	rbd_image_t img;
	int r;

	if (argc < 4) {
		fprintf(stderr, "usage: see difftool.c\n");
		return 2;
	}
	const char *pool = argv[1], *cmd = argv[2], *name = argv[3];
	const char *snap = NULL;

	if (!strcmp(cmd, "diff") && argc >= 5 && strcmp(argv[4], "-"))
		snap = argv[4];
	if (rados_create(&cl, NULL) < 0 || rados_conf_read_file(cl, NULL) < 0 ||
	    rados_connect(cl) < 0 || rados_ioctx_create(cl, pool, &io) < 0) {
		fprintf(stderr, "cannot connect\n");
		return 2;
	}
	const char *ro = getenv("DIFFTOOL_READ_ONLY");

	if (ro && *ro)
		r = rbd_open_read_only(io, name, &img, snap);
	else
		r = rbd_open(io, name, &img, snap);
	if (r < 0) {
		fprintf(stderr, "open %s: %d\n", name, r);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "diff") && argc >= 9) {
		const char *from = strcmp(argv[5], "-") ? argv[5] : NULL;

		stop_at = argc > 9 ? atoi(argv[9]) : 0;
		r = rbd_diff_iterate2(img, from, strtoull(argv[6], NULL, 0),
				      strtoull(argv[7], NULL, 0), 1,
				      (uint8_t)atoi(argv[8]), diff_cb, NULL);
		printf("ret=%d\n", r);
	} else if (!strcmp(cmd, "owners")) {
		cmd_owners(img, argc > 4 ? (size_t)atoi(argv[4]) : 4);
	} else if (!strcmp(cmd, "write-hold") && argc >= 5) {
		char buf[4096], *owners[4];
		rbd_lock_mode_t mode;
		size_t n = 4;

		memset(buf, 'w', sizeof(buf));
		r = (int)rbd_write(img, 0, sizeof(buf), buf);
		if (r < 0 || rbd_lock_get_owners(img, &mode, owners, &n) < 0 ||
		    n != 1) {
			fprintf(stderr, "write/owners failed: %d\n", r);
			return 2;
		}
		printf("locked %s\n", owners[0]);
		rbd_lock_get_owners_cleanup(owners, n);
		fflush(stdout);
		if (argv[4][0] >= '0' && argv[4][0] <= '9')
			sleep((unsigned)atoi(argv[4]));
		else
			for (int t = 0; t < 1200 && access(argv[4], F_OK); t++)
				usleep(100000);
		r = (int)rbd_write(img, 0, sizeof(buf), buf);
		printf("write2=%d\n", r < 0 ? r : 0);
	} else if (!strcmp(cmd, "break") && argc >= 5) {
		char owner[256];

		snprintf(owner, sizeof(owner), "%s", argv[4]);
		if (!strcmp(owner, "-")) {
			char *owners[4];
			rbd_lock_mode_t mode;
			size_t n = 4;

			if (rbd_lock_get_owners(img, &mode, owners, &n) < 0 ||
			    n != 1) {
				fprintf(stderr, "no owner\n");
				return 2;
			}
			snprintf(owner, sizeof(owner), "%s", owners[0]);
			rbd_lock_get_owners_cleanup(owners, n);
		}
		printf("ret=%d\n",
		       rbd_lock_break(img, RBD_LOCK_MODE_EXCLUSIVE, owner));
	} else if (!strcmp(cmd, "watch") && argc >= 6) {
		uint64_t h, h2;
		int want = atoi(argv[4]);
		time_t until = time(NULL) + atoi(argv[5]);

		r = rbd_update_watch(img, &h, watch_cb, NULL);
		if (r < 0) {
			printf("update_watch=%d\n", r);
			return 0;
		}
		printf("registered\n");
		while (atomic_load(&watch_calls) < want && time(NULL) < until)
			usleep(20000);
		int n = atomic_load(&watch_calls);

		if (n >= want)
			printf("callbacks>=%d\n", want);
		else
			printf("callbacks=%d\n", n);
		printf("unwatch=%d\n", rbd_update_unwatch(img, h));
		/* librbd 16.2.15 double-frees on an unknown handle and when
		 * closed with a watch still registered: only with "keep". */
		if (argc > 6 && !strcmp(argv[6], "keep")) {
			printf("again=%d\n", rbd_update_unwatch(img, h));
			printf("watch2=%d\n",
			       rbd_update_watch(img, &h2, noop_cb, NULL));
		}
	} else if (!strcmp(cmd, "watchresize")) {
		uint64_t h;
		int want = argc - 4;

		if (rbd_update_watch(img, &h, watch_cb, NULL) < 0) {
			fprintf(stderr, "update_watch failed\n");
			return 2;
		}
		for (int i = 4; i < argc; i++) {
			rbd_image_t other;

			if (rbd_open(io, name, &other, NULL) < 0) {
				fprintf(stderr, "open %s: failed\n", name);
				return 2;
			}
			printf("resize=%d\n",
			       rbd_resize(other, strtoull(argv[i], NULL, 0)));
			rbd_close(other);
		}
		time_t until = time(NULL) + 10;

		while (atomic_load(&watch_calls) < want && time(NULL) < until)
			usleep(20000);
		usleep(200000);	/* and no more than that */
		printf("callbacks=%d\n", atomic_load(&watch_calls));
		printf("unwatch=%d\n", rbd_update_unwatch(img, h));
	} else {
		fprintf(stderr, "bad command\n");
		return 2;
	}
	printf("close=%d\n", rbd_close(img));
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return 0;
}
