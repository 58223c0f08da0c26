/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * util.c - small helpers of rbdlite-bench: fatal errors and warnings,
 * allocation that cannot fail, string arrays, whole-buffer pipe I/O, the
 * record framing, size formatting and the seeding PRNG.
 *
 * Threading: everything here is thread-safe, but job threads never call
 * die() or warnx_(): they report errors through child_fail(), so that the
 * parent gets them as a record.  A record is written with two write()
 * calls, so only one thread of a child sends records: its main thread.
 *
 * Ownership: xcalloc/xstrdup memory belongs to the caller; arrays grown by
 * add_str own copies of their strings and are freed with free_strs.
 */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "rbdlite-bench: <prefix><message>\n" on stderr */
static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, PROG ": %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(const char *fmt, ...)
{
	va_list ap;

	/* the report so far first, should stdout and stderr be one file */
	fflush(stdout);
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	exit(2);
}

void warnx_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory");
	return p;
}

void add_str(char ***arr, int *n, const char *s)
{
	char **a = realloc(*arr, (size_t)(*n + 1) * sizeof(**arr));

	if (!a)
		die("out of memory");
	a[*n] = xstrdup(s);
	*arr = a;
	(*n)++;
}

void free_strs(char **arr, int n)
{
	for (int i = 0; i < n; i++)
		free(arr[i]);
	free(arr);
}

/* Seeds the per-slot generators and fills the write buffers. */
uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
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
int read_full(int fd, void *buf, size_t len)
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

int send_rec(int fd, uint32_t type, const void *p, size_t len)
{
	struct rec_hdr h = { type, (uint32_t)len };
	int r = write_full(fd, &h, sizeof(h));

	return r < 0 ? r : write_full(fd, p, len);
}

/* 4096 -> "4k", 1048576 -> "1m", 1000 -> "1000": exact multiples only */
void fmt_size(char *buf, size_t n, uint64_t v)
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
