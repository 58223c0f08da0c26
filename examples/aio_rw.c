/*
 * aio_rw.c - the smallest complete librbdlite program.
 *
 * Connects to the cluster named by CEPH_CONF (or the default ceph.conf),
 * opens POOL/IMAGE, writes a 4 KiB pattern asynchronously, reads it back
 * asynchronously, checks it, and closes everything.
 *
 *   cc aio_rw.c $(pkg-config --cflags --libs rbdlite) -o aio_rw
 *   ./aio_rw POOL IMAGE [OFFSET]
 *
 * It uses only the librbd API, so the same source also builds against
 * librbd (-lrbd -lrados).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#define LEN 4096

static void done(rbd_completion_t c, void *arg)
{
	/* Runs on a library thread; the main thread waits below. */
	(void)c;
	(void)arg;
}

static int run_aio(rbd_image_t img, int write, uint64_t off, char *buf)
{
	rbd_completion_t c;
	ssize_t r;

	r = rbd_aio_create_completion(NULL, done, &c);
	if (r < 0)
		return (int)r;
	r = write ? rbd_aio_write(img, off, LEN, buf, c)
		  : rbd_aio_read(img, off, LEN, buf, c);
	if (r == 0) {
		rbd_aio_wait_for_complete(c);
		r = rbd_aio_get_return_value(c);
	}
	rbd_aio_release(c);
	return (int)r;
}

int main(int argc, char **argv)
{
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t img;
	uint64_t off = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
	char *wbuf = (char *)malloc(LEN), *rbuf = (char *)malloc(LEN);
	int r, ret = 1;

	if (argc < 3 || !wbuf || !rbuf) {
		fprintf(stderr, "usage: %s POOL IMAGE [OFFSET]\n", argv[0]);
		goto out_free;
	}
	for (int i = 0; i < LEN; i++)
		wbuf[i] = (char)(i * 7 + off);

	if ((r = rados_create(&cluster, NULL)) < 0)
		goto fail;
	if ((r = rados_conf_read_file(cluster, NULL)) < 0 ||
	    (r = rados_connect(cluster)) < 0)
		goto out_shutdown_fail;
	if ((r = rados_ioctx_create(cluster, argv[1], &io)) < 0)
		goto out_shutdown_fail;
	if ((r = rbd_open(io, argv[2], &img, NULL)) < 0)
		goto out_io_fail;

	r = run_aio(img, 1, off, wbuf);
	if (r == 0)
		r = run_aio(img, 0, off, rbuf);
	if (r == LEN && memcmp(wbuf, rbuf, LEN) == 0) {
		printf("wrote and read back %d bytes at %llu: OK\n", LEN,
		       (unsigned long long)off);
		ret = 0;
	} else if (r >= 0) {
		fprintf(stderr, "read back %d bytes, data %s\n", r,
			memcmp(wbuf, rbuf, LEN) ? "differs" : "matches");
	} else {
		fprintf(stderr, "I/O failed: %s\n", strerror(-r));
	}
	rbd_close(img);
	rados_ioctx_destroy(io);
	rados_shutdown(cluster);
	goto out_free;

out_io_fail:
	rados_ioctx_destroy(io);
out_shutdown_fail:
	rados_shutdown(cluster);
fail:
	fprintf(stderr, "error: %s\n", strerror(-r));
out_free:
	free(wbuf);
	free(rbuf);
	return ret;
}
