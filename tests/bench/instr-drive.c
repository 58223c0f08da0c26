/*
 * instr-drive.c - a fixed workload for counting instructions per I/O
 * (tests/bench/instr.sh): N 4 KiB random aio reads, then N writes, at
 * iodepth DEPTH (default 32) on one image, through whichever
 * librbd-compatible library the dynamic linker finds.  The offsets are a
 * fixed pseudo-random sequence, so two libraries run exactly the same I/O.
 * At depth 1 no write is ever submitted while another is in flight: no
 * request can wait for or merge with another.
 *
 *   instr-drive POOL IMAGE N [DEPTH]
 *
 * Exit status 0, or 2 with a message when the cluster or image is not
 * there or an I/O fails.
 */
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_DEPTH 32

static atomic_int inflight, errors;

static void done(rbd_completion_t c, void *arg)
{
	(void)arg;
	if (rbd_aio_get_return_value(c) < 0)
		atomic_fetch_add(&errors, 1);
	rbd_aio_release(c);
	atomic_fetch_sub(&inflight, 1);
}

int main(int argc, char **argv)
{
	static char buf[MAX_DEPTH][4096];
	rados_t cl;
	rados_ioctx_t io;
	rbd_image_t img;
	uint64_t size;
	unsigned seed = 1;
	int n, depth = argc > 4 ? atoi(argv[4]) : MAX_DEPTH;

	if (argc < 4 || argc > 5 || (n = atoi(argv[3])) <= 0 || depth < 1 ||
	    depth > MAX_DEPTH) {
		fprintf(stderr, "usage: instr-drive POOL IMAGE N [DEPTH 1-%d]\n",
			MAX_DEPTH);
		return 2;
	}
	if (rados_create(&cl, NULL) < 0 ||
	    rados_conf_read_file(cl, getenv("CEPH_CONF")) < 0 ||
	    rados_connect(cl) < 0 || rados_ioctx_create(cl, argv[1], &io) < 0 ||
	    rbd_open(io, argv[2], &img, NULL) < 0 ||
	    rbd_get_size(img, &size) < 0 || size < 4096) {
		fprintf(stderr, "instr-drive: cannot open %s/%s\n", argv[1],
			argv[2]);
		return 2;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			rbd_completion_t c;
			uint64_t off;

			while (atomic_load(&inflight) >= depth)
				usleep(50);
			seed = seed * 1103515245u + 12345u;
			off = (uint64_t)(seed >> 8) % (size / 4096) * 4096;
			if (rbd_aio_create_completion(NULL, done, &c) < 0)
				return 2;
			atomic_fetch_add(&inflight, 1);
			if ((pass ? rbd_aio_write(img, off, 4096,
						  buf[i % depth], c)
				  : rbd_aio_read(img, off, 4096,
						 buf[i % depth], c)) < 0)
				return 2;
		}
	}
	while (atomic_load(&inflight))
		usleep(100);
	rbd_close(img);
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	if (atomic_load(&errors)) {
		fprintf(stderr, "instr-drive: %d I/Os failed\n",
			atomic_load(&errors));
		return 2;
	}
	return 0;
}
