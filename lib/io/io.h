/*
 * io.h - image requests: clip, stripe, and issue object operations.
 *
 * Role: the data path.  A request (read, write, discard, write-zeroes,
 * write-same, compare-and-write, flush) is validated and clipped the way
 * librbd 16.2 does, mapped onto objects with the striper, and sent to
 * librados from the submitting thread: no queue, no hand-off to a thread of
 * ours.  Each object operation completes on librados' callback thread; the
 * last one to finish completes the request's rbd completion, which the
 * per-image delivery (completion.h) turns into callbacks and events.
 *
 * Memory: requests and object sub-requests come from slabs.  A request
 * touching up to RBDL_REQ_INLINE_OBJS objects and RBDL_REQ_INLINE_SEGS
 * buffer segments needs no other memory; larger requests (big striped I/O,
 * long iovec arrays, unaligned write-same) allocate their arrays, which is
 * outside the steady-state small-I/O path.
 *
 * Buffers: the caller's write buffer is free once an aio submit call
 * returns, as in librbd (rbd_disable_zero_copy_writes=true): write data
 * handed to librados before the call returns is copied by librados; data
 * the request keeps longer (it waits for the exclusive lock, an object
 * map update, a copy-up, a due refresh or a journaled image's real
 * handle, or may be sent again after a copy-up) is copied first
 * (core/wbuf.h).  With rbd_disable_zero_copy_writes=false nothing is
 * copied and the caller keeps its buffers until completion, as librbd's
 * zero-copy writes require.  Synchronous calls never copy: they wait.
 * Read destinations and the iovec arrays of reads are used until
 * completion; the iovec array is copied at submit time, so only the
 * buffers it points to must stay valid.
 */
#ifndef RBDL_IO_H
#define RBDL_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/completion.h"
#include "image/state.h"

enum rbdl_op {
	RBDL_OP_READ,
	RBDL_OP_WRITE,
	RBDL_OP_DISCARD,
	RBDL_OP_WRITE_ZEROES,
	RBDL_OP_WRITESAME,
	RBDL_OP_CAW,
	RBDL_OP_FLUSH,
};

struct rbdl_io_args {
	enum rbdl_op op;
	uint64_t off;
	uint64_t len;
	/* exactly one of buf / iov describes the data (none for discard,
	 * zeroes and flush) */
	void *buf;
	const struct iovec *iov;
	int iovcnt;
	const void *cmp;		/* compare-and-write */
	uint64_t *mismatch_off;		/* compare-and-write */
	size_t data_len;		/* write-same pattern length */
	int op_flags;			/* LIBRADOS_OP_FLAG_FADVISE_* hints */
	int zero_flags;			/* write-zeroes */
	/* flush: of librbdlite's own requests only, never on a journaled
	 * image's real handle (image/journal.h) */
	bool own;
	/* flush: the application's (rbd_flush, rbd_aio_flush): it turns
	 * write-around on and reports the first error of the writes it
	 * acknowledged early (writearound.c) */
	bool user;
	/* On an image with encryption loaded (io/crypt.h): the image's
	 * bytes as stored, offsets counted from its start (the LUKS header
	 * and the encryption layer's own requests); false: through the
	 * encryption, offsets of the data area. */
	bool raw;
	/* A copy of the data (core/wbuf.h) made for a request that waited
	 * in the image's queue: buf (and cmp) point into it, and the
	 * request frees it when it completes. */
	char *owned;
	/* A write whose submitter holds a count of the exclusive lock's
	 * writes for it until it completes (the encryption layer's early
	 * acknowledged writes): it takes one more without the gate, so a
	 * release waiting for that count cannot park it. */
	bool nested;
};

/*
 * Submit a request.  c must be IDLE.  Returns 0 when the request was
 * accepted (its result, including librbd's "late" errors such as -EINVAL
 * for an offset past the end or -EROFS, arrives through c), or a negative
 * errno when it was not (c is left IDLE and its callback never runs).
 */
int rbdl_io_submit(struct rbdl_image *img, struct rbdl_comp *c,
		   const struct rbdl_io_args *a);

/*
 * Write-around for a layer above the data path (the encryption layer's
 * read-modify-writes, io/crypt.c), as writearound.c does it for a
 * request.  rbdl_wa_early_begin: may a write of len bytes with op_flags
 * be acknowledged now (write-around on and past its first flush, not FUA,
 * the exclusive lock owned -- counted as one of its writes -- and the
 * bytes within rbd_cache_max_dirty)?  When true the caller must call
 * rbdl_wa_early_end(img, len, r) once the write finished (r < 0: reported
 * by the next application flush sent to the data path,
 * rbdl_flush_late_error; drops the lock's count) and may acknowledge c with
 * rbdl_wa_ack_comp (in_submit: inside the submit call).
 */
bool rbdl_wa_early_begin(struct rbdl_image *img, uint64_t len, int op_flags);
void rbdl_wa_early_end(struct rbdl_image *img, uint64_t len, ssize_t r);
void rbdl_wa_ack_comp(struct rbdl_image *img, struct rbdl_comp *c,
		      bool in_submit);

/*
 * Synchronous form: submits with an internal completion, waits, and
 * returns the completion's value (bytes for reads, 0 otherwise) or a
 * negative errno.
 */
ssize_t rbdl_io_sync(struct rbdl_image *img, const struct rbdl_io_args *a);

/*
 * Copy object objno of a clone up from its parent now, as librbd's
 * maintenance does before it removes or cuts an object the parent backs:
 * with an empty snapshot context when the clone has snapshots (they keep
 * the parent data) and their object maps updated.  Parent data of zeros
 * copies nothing unless create_if_zero (then an empty object hides the
 * parent).  Does nothing for an object beyond the overlap or one that
 * exists already.  Synchronous; for maintenance with writes quiesced (the
 * caller moves the HEAD object map).  0 or a negative errno.
 */
int rbdl_io_copyup_sync(struct rbdl_image *img, uint64_t objno,
			bool create_if_zero);

#endif /* RBDL_IO_H */
