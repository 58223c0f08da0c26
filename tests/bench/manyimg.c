/*
 * manyimg.c - what N open images cost one process, for tests/bench-images.sh:
 *
 *   manyimg LIBRARY POOL PREFIX N
 *
 * dlopen()s LIBRARY (librbdlite.so or the system librbd.so.1) and resolves
 * the rbd_* functions it needs, connects with CEPH_CONF, then opens the
 * images PREFIX-0 .. PREFIX-(N-1) (made beforehand, with rbd's default
 * features) read-write one after another, writing 4 KiB to each (so each
 * takes its exclusive lock), and closes them all.  Prints one line of
 * key=value pairs: threads, RSS (KiB) and open fds added while the N
 * images were open, open latency p50/p99 (us, rbd_open alone), the time
 * to close all of them (ms), and the time of the writes (ms).
 * Single-threaded; exits non-zero with a message on any failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>

typedef void *image_t;

static int (*p_open)(rados_ioctx_t, const char *, image_t *, const char *);
static int (*p_close)(image_t);
static ssize_t (*p_write)(image_t, uint64_t, size_t, const char *);

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void die(const char *what, int r)
{
	fprintf(stderr, "manyimg: %s failed (%d)\n", what, r);
	exit(1);
}

/* The state after things settled (threads started lazily by librados). */
static void settle(void)
{
	usleep(300 * 1000);
}

int main(int argc, char **argv)
{
	rados_t cluster;
	rados_ioctx_t io;
	char data[4096], name[256];
	int n, r;

	if (argc != 5) {
		fprintf(stderr, "usage: manyimg LIBRARY POOL PREFIX N\n");
		return 2;
	}
	n = atoi(argv[4]);
	if (n <= 0)
		return 2;
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "manyimg: %s\n", dlerror());
		return 1;
	}
	*(void **)&p_open = dlsym(lib, "rbd_open");
	*(void **)&p_close = dlsym(lib, "rbd_close");
	*(void **)&p_write = dlsym(lib, "rbd_write");
	if (!p_open || !p_close || !p_write)
		die("dlsym", -1);
	if ((r = rados_create(&cluster, NULL)) < 0 ||
	    (r = rados_conf_read_file(cluster, NULL)) < 0 ||
	    (r = rados_connect(cluster)) < 0)
		die("connect", r);
	if ((r = rados_ioctx_create(cluster, argv[2], &io)) < 0)
		die("ioctx", r);
	memset(data, 0xa5, sizeof(data));
	image_t *img = calloc((size_t)n, sizeof(*img));
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));

	/* Warm up: one image opened, written and closed first. */
	snprintf(name, sizeof(name), "%s-0", argv[3]);
	if ((r = p_open(io, name, &img[0], NULL)) < 0)
		die("rbd_open", r);
	if ((r = (int)p_write(img[0], 0, sizeof(data), data)) < 0)
		die("rbd_write", r);
	p_close(img[0]);
	settle();
	int th0 = count_dir("/proc/self/task");
	int fd0 = count_dir("/proc/self/fd");
	long rss0 = rss_kib();

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s-%d", argv[3], i);
		uint64_t t0 = now_us();

		r = p_open(io, name, &img[i], NULL);
		lat[i] = now_us() - t0;
		if (r < 0)
			die("rbd_open", r);
	}
	uint64_t w0 = now_us();

	for (int i = 0; i < n; i++)
		if ((r = (int)p_write(img[i], 0, sizeof(data), data)) < 0)
			die("rbd_write", r);
	uint64_t w1 = now_us();

	settle();
	int th1 = count_dir("/proc/self/task");
	int fd1 = count_dir("/proc/self/fd");
	long rss1 = rss_kib();
	uint64_t c0 = now_us();

	for (int i = 0; i < n; i++)
		if ((r = p_close(img[i])) < 0)
			die("rbd_close", r);
	uint64_t c1 = now_us();

	qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
	printf("n=%d threads=%d rss_kib=%ld fds=%d open_p50_us=%llu "
	       "open_p99_us=%llu write_ms=%.1f close_ms=%.1f\n",
	       n, th1 - th0, rss1 - rss0, fd1 - fd0,
	       (unsigned long long)lat[(size_t)(n - 1) / 2],
	       (unsigned long long)lat[(size_t)((n - 1) * 99) / 100],
	       (double)(w1 - w0) / 1000.0, (double)(c1 - c0) / 1000.0);
	free(lat);
	free(img);
	rados_ioctx_destroy(io);
	rados_shutdown(cluster);
	return 0;
}
