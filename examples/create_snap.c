/*
 * create_snap.c - the control path and synchronous I/O with librbdlite.
 *
 * Connects to the cluster named by CEPH_CONF (or the default ceph.conf)
 * and, in pool POOL:
 *   1. creates a 16 MiB image IMAGE (rbd_create; it must not exist yet),
 *   2. writes pattern A at OFFSET (rbd_write),
 *   3. takes snapshot "snap1" (rbd_snap_create),
 *   4. overwrites the same range with pattern B,
 *   5. reads the range back from the image (B) and from the snapshot,
 *      opened read-only by name (A), and checks both,
 *   6. removes the snapshot and the image (rbd_snap_remove, rbd_remove),
 *      also when a step in between failed.
 *
 *   cc create_snap.c $(pkg-config --cflags --libs rbdlite) -o create_snap
 *   ./create_snap POOL IMAGE [OFFSET]
 *
 * Each call is synchronous and returns a negative errno on failure.  Only
 * the librbd API is used, so the same source builds against librbd
 * (-lrbd -lrados) too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#define IMG_SIZE (16ULL << 20)
#define LEN 8192
#define SNAP "snap1"

/* Report a failed call; returns r so callers can propagate it. */
static int check(int r, const char *what)
{
	if (r < 0)
		fprintf(stderr, "%s: %s\n", what, strerror(-r));
	return r;
}

/* Read LEN bytes at off from pool/name (at snapshot snap, or the head if
 * snap is NULL) and compare them with want. */
static int read_check(rados_ioctx_t io, const char *name, const char *snap,
		      uint64_t off, const char *want)
{
	rbd_image_t img;
	char *buf = (char *)malloc(LEN);
	ssize_t n;
	int r;

	if (!buf)
		return -ENOMEM;
	r = snap ? rbd_open_read_only(io, name, &img, snap)
		 : rbd_open(io, name, &img, NULL);
	if (check(r, "rbd_open") < 0)
		goto out;
	n = rbd_read(img, off, LEN, buf);
	if (n != LEN) {
		r = n < 0 ? (int)n : -EIO;
		check(r, "rbd_read");
	} else if (memcmp(buf, want, LEN) != 0) {
		fprintf(stderr, "%s%s%s: data read back differs\n", name,
			snap ? "@" : "", snap ? snap : "");
		r = -EIO;
	} else {
		printf("%s%s%s: read back %d bytes: OK\n", name,
		       snap ? "@" : "", snap ? snap : "", LEN);
		r = 0;
	}
	rbd_close(img);
out:
	free(buf);
	return r;
}

int main(int argc, char **argv)
{
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t img;
	const char *pool, *name;
	uint64_t off;
	int order = 0;	/* 0: the default object size (4 MiB) */
	char *a = (char *)malloc(LEN), *b = (char *)malloc(LEN);
	int r, ret = 1, have_snap = 0;
	ssize_t n;

	if (argc < 3 || !a || !b) {
		fprintf(stderr, "usage: %s POOL IMAGE [OFFSET]\n", argv[0]);
		goto out_free;
	}
	pool = argv[1];
	name = argv[2];
	off = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
	if (off > IMG_SIZE - LEN) {
		fprintf(stderr, "OFFSET must be at most %llu\n",
			(unsigned long long)(IMG_SIZE - LEN));
		goto out_free;
	}
	memset(a, 'A', LEN);
	memset(b, 'B', LEN);

	if (check(rados_create(&cluster, NULL), "rados_create") < 0)
		goto out_free;
	if (check(rados_conf_read_file(cluster, NULL), "rados_conf_read_file") < 0 ||
	    check(rados_connect(cluster), "rados_connect") < 0 ||
	    check(rados_ioctx_create(cluster, pool, &io), "rados_ioctx_create") < 0)
		goto out_shutdown;

	if (check(rbd_create(io, name, IMG_SIZE, &order), "rbd_create") < 0)
		goto out_ioctx;
	printf("created %s/%s: %llu bytes, objects of %llu bytes\n", pool, name,
	       (unsigned long long)IMG_SIZE, 1ULL << order);

	if (check(rbd_open(io, name, &img, NULL), "rbd_open") < 0)
		goto out_remove;
	n = rbd_write(img, off, LEN, a);
	if (n != LEN) {
		check(n < 0 ? (int)n : -EIO, "rbd_write A");
		goto out_close;
	}
	if (check(rbd_snap_create(img, SNAP), "rbd_snap_create") < 0)
		goto out_close;
	have_snap = 1;
	n = rbd_write(img, off, LEN, b);
	if (n != LEN) {
		check(n < 0 ? (int)n : -EIO, "rbd_write B");
		goto out_close;
	}
	if (check(rbd_flush(img), "rbd_flush") < 0)
		goto out_close;
	rbd_close(img);

	if (read_check(io, name, NULL, off, b) == 0 &&
	    read_check(io, name, SNAP, off, a) == 0)
		ret = 0;
	goto out_snap;

out_close:
	rbd_close(img);
out_snap:
	if (have_snap) {
		if (check(rbd_open(io, name, &img, NULL), "rbd_open") < 0) {
			ret = 1;
			goto out_remove;
		}
		if (check(rbd_snap_remove(img, SNAP), "rbd_snap_remove") < 0)
			ret = 1;
		rbd_close(img);
	}
out_remove:
	r = check(rbd_remove(io, name), "rbd_remove");
	if (r < 0)
		ret = 1;
	else
		printf("removed %s/%s\n", pool, name);
out_ioctx:
	rados_ioctx_destroy(io);
out_shutdown:
	rados_shutdown(cluster);
out_free:
	free(a);
	free(b);
	if (ret == 0)
		printf("OK\n");
	return ret;
}
