/*
 * plan.h - the pure rules of request planning (plan.c): how librbd 16.2
 * clips, splits and prunes a request before any object is touched.
 * No I/O, no image state: each rule takes plain numbers and buffers, so
 * the unit tests check them against librbd's behaviour directly.
 *
 * Threading: pure functions, any thread.
 */
#ifndef RBDL_IO_PLAN_H
#define RBDL_IO_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/striper.h"

/* The caller's data: exactly one of buf / iov (none for discards). */
struct rbdl_bufdesc {
	char *buf;
	const struct iovec *iov;
	int iovcnt;
};

/* A contiguous run of one object backed by one contiguous buffer. */
struct rbdl_seg {
	char *ptr;
	uint64_t obj_off;
	uint64_t len;
	size_t bytes_read;	/* read ops */
	int prval;		/* read ops */
};

/*
 * The buffer segments of one striper piece: one for a flat buffer, one per
 * iovec run it crosses for an iovec array.  With out NULL, only counts.
 * Returns the number of segments.
 */
uint32_t rbdl_plan_piece_segs(const struct rbdl_bufdesc *b,
			      const struct rbdl_piece *p, struct rbdl_seg *out);

/*
 * librbd's ImageDiscardRequest::prune_object_extents: shrink each object
 * extent to whole granularity units g (at most the object size) and drop
 * the extents left empty; with a granularity of a whole object, an extent
 * reaching the object's end (a tail truncation) is kept as it is.
 * Returns the number of extents kept (compacted in place).
 */
size_t rbdl_plan_prune_discard(uint64_t object_size, uint64_t g,
			       struct rbdl_objext *objs, size_t nobjs);

/*
 * librbd 16.2 splits an aio thick write-zeroes longer than 512 bytes into
 * a 512-unaligned head, a 512-aligned middle and a tail, and clips each
 * piece separately: a piece that starts at or past the image end fails
 * with -EINVAL (the others are still written).  The error the request
 * [off, off + len) reports on an image of size bytes (off < size), or 0.
 */
int rbdl_plan_thick_split_error(uint64_t off, uint64_t len, uint64_t size);

/* Is every byte of p[0, n) zero? */
bool rbdl_plan_all_zero(const char *p, size_t n);

/* Fill dst[0, len) with the write-same pattern pat[0, plen) as it falls
 * from request byte req_off on. */
void rbdl_plan_fill_pattern(char *dst, uint64_t len, uint64_t req_off,
			    const char *pat, size_t plen);

#endif /* RBDL_IO_PLAN_H */
