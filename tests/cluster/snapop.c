/*
 * snapop.c - drive resize and snapshot operations of one open image
 * through librbdlite, for test-snapops.sh (which judges the results with
 * the real librbd and the rbd CLI).
 *
 *   snapop [-r] [-s SNAP] POOL IMAGE CMD...
 *
 * -r opens read-only, -s SNAP opens at a snapshot.  Commands run in order
 * on the one open image:
 *   write OFF LEN BYTE   rbd_write LEN bytes of value BYTE (in 1 MiB pieces)
 *   check OFF LEN BYTE   rbd_read and require every byte to be BYTE
 *   size N               rbd_get_size must give N
 *   resize N | snapc NAME | snaprm NAME | rollback NAME
 *   snapset NAME         (NAME "-" means HEAD)
 *   aiowrite OFF LEN BYTE  rbd_aio_write in 1 MiB pieces, not waited for
 *   wait X               wait for every aiowrite (X is ignored); returns
 *                        the first error
 *   expect E             the next command must return E (a negative errno;
 *                        for write, the first rbd_write's return); default 0
 * Sizes accept a K, M or G suffix.  Exit status 0 if every command gave
 * what was expected, 1 otherwise, 2 on a setup error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#define CHUNK (1u << 20)

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'K': v <<= 10; break;
	case 'M': v <<= 20; break;
	case 'G': v <<= 30; break;
	default: break;
	}
	return v;
}

static int do_write(rbd_image_t im, uint64_t off, uint64_t len, int byte)
{
	static char buf[CHUNK];

	memset(buf, byte, sizeof(buf));
	while (len) {
		size_t n = len < CHUNK ? (size_t)len : CHUNK;
		ssize_t r = rbd_write(im, off, n, buf);

		if (r < 0)
			return (int)r;
		if ((size_t)r != n)
			return -EIO;
		off += n;
		len -= n;
	}
	return 0;
}

/* Writes submitted by aiowrite and not yet waited for. */
static rbd_completion_t pending[4096];
static int npending;

static int do_aiowrite(rbd_image_t im, uint64_t off, uint64_t len, int byte)
{
	static char buf[CHUNK * 4];

	memset(buf + (byte & 3) * CHUNK, byte, CHUNK);
	while (len) {
		size_t n = len < CHUNK ? (size_t)len : CHUNK;
		int r;

		if (npending == (int)(sizeof(pending) / sizeof(pending[0])))
			return -ENOSPC;
		r = rbd_aio_create_completion(NULL, NULL, &pending[npending]);
		if (r < 0)
			return r;
		/* librbdlite copies write data at submission. */
		r = rbd_aio_write(im, off, n, buf + (byte & 3) * CHUNK,
				  pending[npending]);
		if (r < 0)
			return r;
		npending++;
		off += n;
		len -= n;
	}
	return 0;
}

static int do_wait(void)
{
	int first = 0;

	for (int i = 0; i < npending; i++) {
		rbd_aio_wait_for_complete(pending[i]);
		int r = (int)rbd_aio_get_return_value(pending[i]);

		if (r < 0 && !first)
			first = r;
		rbd_aio_release(pending[i]);
	}
	npending = 0;
	return first;
}

static int do_check(rbd_image_t im, uint64_t off, uint64_t len, int byte)
{
	static char buf[CHUNK];

	while (len) {
		size_t n = len < CHUNK ? (size_t)len : CHUNK;
		ssize_t r = rbd_read(im, off, n, buf);

		if (r < 0)
			return (int)r;
		if ((size_t)r != n) {
			fprintf(stderr, "snapop: short read at %" PRIu64 "\n",
				off);
			return -EIO;
		}
		for (size_t i = 0; i < n; i++) {
			if ((unsigned char)buf[i] != (unsigned char)byte) {
				fprintf(stderr, "snapop: byte %" PRIu64
					" is 0x%02x, expected 0x%02x\n",
					off + i, (unsigned char)buf[i], byte);
				return -EILSEQ;
			}
		}
		off += n;
		len -= n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *snap = NULL;
	bool ro = false;
	int opt, r, fails = 0, expect = 0;

	while ((opt = getopt(argc, argv, "+rs:")) != -1) {
		if (opt == 'r')
			ro = true;
		else if (opt == 's')
			snap = optarg;
		else
			return 2;
	}
	if (argc - optind < 2) {
		fprintf(stderr, "usage: snapop [-r] [-s SNAP] POOL IMAGE CMD...\n");
		return 2;
	}
	rados_t cl;
	rados_ioctx_t io;
	rbd_image_t im;

	if (rados_create(&cl, NULL) < 0 || rados_conf_read_file(cl, NULL) < 0 ||
	    rados_connect(cl) < 0) {
		fprintf(stderr, "snapop: cannot connect\n");
		return 2;
	}
	if (rados_ioctx_create(cl, argv[optind], &io) < 0) {
		fprintf(stderr, "snapop: no pool %s\n", argv[optind]);
		return 2;
	}
	r = ro ? rbd_open_read_only(io, argv[optind + 1], &im, snap)
	       : rbd_open(io, argv[optind + 1], &im, snap);
	if (r < 0) {
		fprintf(stderr, "snapop: open %s: %d\n", argv[optind + 1], r);
		return 2;
	}
	for (int i = optind + 2; i < argc; i++) {
		const char *c = argv[i];
		int nargs = !strcmp(c, "write") || !strcmp(c, "check") ||
					    !strcmp(c, "aiowrite")
				    ? 3
				    : 1;

		if (i + nargs >= argc) {
			fprintf(stderr, "snapop: %s: missing arguments\n", c);
			return 2;
		}
		const char *a = argv[i + 1];

		if (!strcmp(c, "expect")) {
			expect = atoi(a);
			i++;
			continue;
		}
		if (!strcmp(c, "write"))
			r = do_write(im, num(a), num(argv[i + 2]),
				     (int)num(argv[i + 3]));
		else if (!strcmp(c, "aiowrite"))
			r = do_aiowrite(im, num(a), num(argv[i + 2]),
					(int)num(argv[i + 3]));
		else if (!strcmp(c, "wait"))
			r = do_wait();
		else if (!strcmp(c, "check"))
			r = do_check(im, num(a), num(argv[i + 2]),
				     (int)num(argv[i + 3]));
		else if (!strcmp(c, "size")) {
			uint64_t s = 0;

			r = rbd_get_size(im, &s);
			if (r == 0 && s != num(a)) {
				fprintf(stderr, "snapop: size %" PRIu64
					", expected %" PRIu64 "\n", s, num(a));
				r = -EILSEQ;
			}
		} else if (!strcmp(c, "resize"))
			r = rbd_resize(im, num(a));
		else if (!strcmp(c, "snapc"))
			r = rbd_snap_create(im, a);
		else if (!strcmp(c, "snaprm"))
			r = rbd_snap_remove(im, a);
		else if (!strcmp(c, "rollback"))
			r = rbd_snap_rollback(im, a);
		else if (!strcmp(c, "snapset"))
			r = rbd_snap_set(im, strcmp(a, "-") ? a : NULL);
		else {
			fprintf(stderr, "snapop: unknown command %s\n", c);
			return 2;
		}
		if (r != expect) {
			fprintf(stderr, "snapop: %s %s: got %d (%s), expected "
				"%d\n", c, a, r, strerror(-r), expect);
			fails++;
		}
		expect = 0;
		i += nargs;
	}
	if (npending && do_wait() < 0)
		fails++;
	rbd_close(im);
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return fails ? 1 : 0;
}
