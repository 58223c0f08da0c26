/*
 * crypt.c - I/O on an image whose LUKS encryption is loaded (crypt.h).
 *
 * Each request below is one heap block (struct creq) that lives from
 * submission to the completion of the caller's rbd completion:
 *
 *   read        data path read of the block-aligned range (into the
 *               caller's buffer when aligned, else a bounce buffer) ->
 *               decrypt -> copy out -> complete
 *   write, CAW  copy + place the plaintext in a block-aligned buffer ->
 *               hold the range -> read edge blocks (if partial) ->
 *               decrypt, compare (CAW), merge -> encrypt -> data path
 *               write -> release -> complete
 *   discard, write-zeroes, write-same of zeros
 *               chunks of at most 1 MiB, each a write of zeros as above
 *               (at most 4 in flight) -> complete
 *   flush       hold everything -> data path flush -> release -> complete
 *
 * Requests the data path would refuse (empty, past the end, read-only
 * image, a bad write-same or compare-and-write) go to it unchanged but
 * for the offset, so that its errors are librbd's.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/join.h"
#include "core/slab.h"
#include "core/striper.h"
#include "core/wbuf.h"
#include "crypt.h"
#include "image/refresh.h"
#include "plan.h"
#include "rbd/librbd.h"

struct creq {
	struct rbdl_crange range;	/* first: grant callbacks get it */
	struct rbdl_image *img;
	struct rbdl_crypt *k;
	struct rbdl_comp *user;
	struct rbdl_io_args a;		/* the caller's, data-area offsets */
	uint64_t a0, a1;		/* block-aligned range of the request */
	char *buf;			/* aligned data [a0, a1) */
	bool bounce;			/* buf is ours (else the caller's) */
	struct rbdl_join sub;		/* edge reads or zero chunks */
	unsigned char *edge[2];		/* head and tail block of an RMW */
	unsigned char cmp[512];		/* compare-and-write's data */
	/* compare-and-write past the end of the data area: the position
	 * of the first non-zero compare byte there (the write is clipped,
	 * the compare is not, as librbd's), or UINT64_MAX */
	uint64_t cmp_past;
	struct zrange {			/* zeros: the chunks to write */
		uint64_t off, len;
	} *zr;
	size_t nzr;
	atomic_size_t zi;		/* the next chunk to send */
	bool slab;			/* from creq_slab (no iovec array) */
	bool may_ack;			/* a write write-around may ack */
	bool early;			/* user acknowledged (write-around) */
	bool ranged;			/* a read holding its range */
	struct iovec iov[];		/* a read's iovec array, copied */
};

/* Requests without an iovec array come from a slab: no malloc per I/O in
 * steady state (the data buffers are core/wbuf.h's). */
static struct rbdl_slab creq_slab =
	RBDL_SLAB_INIT("crypt", (sizeof(struct creq) + 63) & ~(size_t)63);
static pthread_once_t creq_once = PTHREAD_ONCE_INIT;

static void creq_init_once(void)
{
	rbdl_slab_init(&creq_slab);
}

static uint64_t down(uint64_t x, uint32_t bs) { return x & ~(uint64_t)(bs - 1); }
static uint64_t up(uint64_t x, uint32_t bs) { return down(x + bs - 1, bs); }

/* a's length clipped to a data area of size bytes (a->off < size). */
static uint64_t clip_len(const struct rbdl_io_args *a, uint64_t size)
{
	return a->len < size - a->off ? a->len : size - a->off;
}

/* The data-area offset off as an offset of the image: one past any size
 * when it would wrap (the data path then refuses it as past the end). */
static uint64_t raw_off(const struct rbdl_crypt *k, uint64_t off)
{
	return off > UINT64_MAX - k->data_off ? UINT64_MAX : off + k->data_off;
}

/* Hand a to the data path unchanged but for the offset, on c. */
static int forward(struct rbdl_image *img, struct rbdl_crypt *k,
		   struct rbdl_comp *c, const struct rbdl_io_args *a)
{
	struct rbdl_io_args t = *a;

	t.off = raw_off(k, a->off);
	t.raw = true;
	return rbdl_io_submit(img, c, &t);
}

static void copy_in(const struct rbdl_io_args *a, char *dst, uint64_t len)
{
	if (!a->buf && !a->iov) {	/* a chunk of zeros (crypt_zeros) */
		memset(dst, 0, len);
		return;
	}
	if (a->buf) {
		memcpy(dst, a->buf, len);
		return;
	}
	for (int i = 0; i < a->iovcnt && len; i++) {
		size_t n = a->iov[i].iov_len < len ? a->iov[i].iov_len : len;

		memcpy(dst, a->iov[i].iov_base, n);
		dst += n;
		len -= n;
	}
}

static void copy_out(const struct rbdl_io_args *a, const char *src,
		     uint64_t len)
{
	if (a->buf) {
		memcpy(a->buf, src, len);
		return;
	}
	for (int i = 0; i < a->iovcnt && len; i++) {
		size_t n = a->iov[i].iov_len < len ? a->iov[i].iov_len : len;

		memcpy(a->iov[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

static struct creq *creq_new(struct rbdl_image *img, struct rbdl_crypt *k,
			     struct rbdl_comp *c, const struct rbdl_io_args *a,
			     int niov)
{
	struct creq *q;

	if (niov) {
		q = calloc(1, sizeof(*q) + (size_t)niov * sizeof(q->iov[0]));
	} else {
		pthread_once(&creq_once, creq_init_once);
		q = rbdl_slab_alloc(&creq_slab);
		if (q) {
			memset(q, 0, sizeof(*q));
			q->slab = true;
		}
	}
	if (!q)
		return NULL;
	q->img = img;
	q->k = k;
	q->user = c;
	q->a = *a;
	if (niov) {
		memcpy(q->iov, a->iov, (size_t)niov * sizeof(q->iov[0]));
		q->a.iov = q->iov;
	}
	return q;
}

static void creq_free(struct creq *q)
{
	if (q->bounce)
		rbdl_wbuf_free(q->buf);
	rbdl_wbuf_free((char *)q->edge[0]);
	rbdl_wbuf_free((char *)q->edge[1]);
	free(q->zr);
	if (q->slab)
		rbdl_slab_free(&creq_slab, q);
	else
		free(q);
}

/*
 * Depth of rbdl_crypt_submit calls on this thread.  A request can finish
 * inside its own submission: its range is granted at once, then an inner
 * request fails to start, or a compare-and-write's edge read is answered
 * before the call drops its guard and the compare fails.  Its completion
 * then goes through a librados thread (rbdl_comp_complete_deferred), as
 * the data path's do: never a callback inside the submitting call.
 */
static __thread unsigned submitting;

/* Finish q: release its range (if held), complete the caller's -- or,
 * for a write acknowledged early, keep its error for the next flush
 * (before the range goes: a flush waits for it), end its write-around
 * and lock counts and drop its hold on the image. */
static void creq_done(struct creq *q, ssize_t r, bool held)
{
	struct rbdl_comp *c = q->user;
	struct rbdl_image *img = q->img;
	bool early = q->early;

	if (early) {
		rbdl_wa_early_end(img, q->a1 - q->a0, r);
		/* Release: see crypt_read. */
		atomic_fetch_sub_explicit(&q->k->early, 1,
					  memory_order_release);
	}
	if (held)
		rbdl_crange_release(&q->k->ranges, &q->range);
	creq_free(q);
	if (early)
		rbdl_delivery_put(&img->dl);	/* taken by ack_early */
	else if (submitting)
		rbdl_comp_complete_deferred(c, r, img->defer_io);
	else
		rbdl_comp_complete(c, r);
}

/* Submit t to the data path on an internal completion calling cb(q). */
static int inner(struct creq *q, const struct rbdl_io_args *t,
		 rbdl_callback_t cb)
{
	struct rbdl_comp *ic;
	int r = rbdl_comp_create(q, cb, &ic);

	if (r < 0)
		return r;
	ic->internal = true;
	struct rbdl_io_args raw = *t;

	raw.raw = true;
	r = rbdl_io_submit(q->img, ic, &raw);
	if (r < 0)
		rbdl_comp_release(ic);
	return r;
}

/* Take an internal completion's result and drop it. */
static ssize_t inner_result(rbdl_user_comp_t uc)
{
	struct rbdl_comp *ic = rbdl_comp_untag(uc);
	ssize_t r = ic->rval;

	rbdl_comp_release(ic);
	return r;
}

/* ---- read ------------------------------------------------------------------ */

static void read_done(rbdl_user_comp_t uc, void *arg)
{
	struct creq *q = arg;
	ssize_t r = inner_result(uc);
	uint64_t head = q->a.off - q->a0;

	if (r >= 0) {
		/* r: bytes of [a0, a1) below the image's end (whole blocks
		 * but for a size that is not a multiple of the block). */
		uint64_t got = down((uint64_t)r, q->k->cipher.block);
		int e = rbdl_cipher_crypt(&q->k->cipher, false, q->a0, q->buf,
					  q->buf, got);

		if (e < 0) {
			r = e;
		} else {
			uint64_t n = (uint64_t)r > head ? (uint64_t)r - head : 0;

			if (n > q->a.len)
				n = q->a.len;
			if (q->bounce)
				copy_out(&q->a, q->buf + head, n);
			r = (ssize_t)n;
		}
	}
	creq_done(q, r, q->ranged);
}

static int read_send(struct creq *q)
{
	struct rbdl_io_args t = {
		.op = RBDL_OP_READ, .off = raw_off(q->k, q->a0),
		.len = q->a1 - q->a0, .buf = q->buf, .op_flags = q->a.op_flags,
	};

	return inner(q, &t, read_done);
}

/* A read behind writes acknowledged early: its blocks are free now. */
static void read_granted(struct rbdl_crange *range)
{
	struct creq *q = (struct creq *)range;
	int r = read_send(q);

	if (r < 0)
		creq_done(q, r, true);
}

static int crypt_read(struct rbdl_image *img, struct rbdl_crypt *k,
		      struct rbdl_comp *c, const struct rbdl_io_args *a,
		      uint64_t size)
{
	uint32_t bs = k->cipher.block;
	uint64_t end = a->off + clip_len(a, size);
	struct creq *q = creq_new(img, k, c, a, a->iov ? a->iovcnt : 0);
	int r;

	if (!q)
		return -ENOMEM;
	q->a0 = down(a->off, bs);
	q->a1 = up(end, bs);
	if (a->buf && q->a0 == a->off && q->a1 == end &&
	    a->len == end - a->off) {
		q->buf = a->buf;	/* decrypt in the caller's buffer */
	} else {
		q->buf = rbdl_wbuf_alloc(q->a1 - q->a0);
		q->bounce = true;
		if (!q->buf) {
			creq_free(q);
			return -ENOMEM;
		}
	}
	r = rbdl_comp_arm(c, &img->dl, !c->internal);
	if (r < 0) {
		creq_free(q);
		return r;
	}
	/* With writes acknowledged early in flight the read waits for the
	 * blocks it shares with them (read-after-write), else it goes at
	 * once.  A write the application saw acknowledged before this read
	 * made its increment (ack_early) before that acknowledgement was
	 * delivered, so this load sees the increment or a later value.
	 * Acquire: pairs with creq_done's release decrement, so a 0 left by
	 * that write also shows what it did before finishing (its inner
	 * write done, or tracked by the data path's write-around, which
	 * then orders this read after it). */
	if (atomic_load_explicit(&k->early, memory_order_acquire)) {
		q->ranged = true;
		q->range.start = q->a0;
		q->range.end = q->a1;
		q->range.grant = read_granted;
		rbdl_crange_acquire(&k->ranges, &q->range);
		return 0;
	}
	r = read_send(q);
	if (r < 0) {
		rbdl_comp_disarm(c);
		creq_free(q);
	}
	return r;
}

/* ---- writes: read-modify-write of whole blocks ----------------------------- */

static void write_done(rbdl_user_comp_t uc, void *arg)
{
	struct creq *q = arg;
	ssize_t r = inner_result(uc);

	q->bounce = false;	/* the data path freed the buffer (owned) */
	creq_done(q, r, true);
}

/* Encrypt the merged blocks -- in buf, or from src (whole blocks of the
 * caller's, read before this returns) into buf -- and write them (the
 * data path owns buf). */
static void write_blocks(struct creq *q, const void *src)
{
	int r = rbdl_cipher_crypt(&q->k->cipher, true, q->a0,
				  src ? src : q->buf, q->buf, q->a1 - q->a0);
	struct rbdl_io_args t = {
		.op = RBDL_OP_WRITE, .off = raw_off(q->k, q->a0),
		.len = q->a1 - q->a0, .buf = q->buf, .owned = q->buf,
		.op_flags = q->a.op_flags, .nested = q->early,
	};

	if (r == 0) {
		r = inner(q, &t, write_done);
		if (r == 0)
			return;
	}
	creq_done(q, r, true);
}

/* All edge reads are in: decrypt, compare, merge, write. */
static void merge_and_write(struct creq *q)
{
	uint32_t bs = q->k->cipher.block;
	uint64_t end = q->a.off + q->a.len;
	int r = rbdl_join_result(&q->sub);

	for (int i = 0; i < 2 && r == 0; i++)
		if (q->edge[i])
			r = rbdl_cipher_crypt(&q->k->cipher, false,
					      i ? q->a1 - bs : q->a0,
					      q->edge[i], q->edge[i], bs);
	if (r < 0) {
		creq_done(q, r, true);
		return;
	}
	if (q->a.op == RBDL_OP_CAW) {
		const unsigned char *cur = q->edge[0] + (q->a.off - q->a0);

		for (uint64_t i = 0; i < q->a.len; i++)
			if (cur[i] != q->cmp[i]) {
				/* librbd 16.2.15's crypto layer reports the
				 * position in the compared range. */
				if (q->a.mismatch_off)
					*q->a.mismatch_off = i;
				creq_done(q, -EILSEQ, true);
				return;
			}
		if (q->cmp_past != UINT64_MAX) {
			if (q->a.mismatch_off)
				*q->a.mismatch_off = q->cmp_past;
			creq_done(q, -EILSEQ, true);
			return;
		}
	}
	/* The tail block is the head block when the request lies in one. */
	const unsigned char *tail = q->edge[1] ? q->edge[1] : q->edge[0];

	if (q->edge[0])
		memcpy(q->buf, q->edge[0], q->a.off - q->a0);
	if (end != q->a1)
		memcpy(q->buf + (end - q->a0), tail + (end - (q->a1 - bs)),
		       q->a1 - end);
	write_blocks(q, NULL);
}

static void edge_done(rbdl_user_comp_t uc, void *arg)
{
	struct creq *q = arg;
	ssize_t r = inner_result(uc);

	if (r < 0)
		rbdl_join_error(&q->sub, (int)r);
	if (rbdl_join_put(&q->sub))
		merge_and_write(q);
}

/*
 * Write-around (writearound.c's rules, io.h): a read-modify-write is
 * acknowledged once its blocks are its own, before its edge blocks are
 * read, as librbd's write-around layer (above its crypto layer)
 * acknowledges a write on dispatch; one that waits for its blocks behind
 * another write is not acknowledged while it waits, as librbd's waits
 * behind an overlapping write in flight.  A write of whole blocks goes to
 * the data path at once, whose write-around acknowledges it.  From here
 * q holds the counts and the image until it finishes (creq_done).  The
 * acknowledgement goes through the callback lane (the grant may run
 * inside the submit call); a read the application sends after seeing it
 * finds the blocks held and waits for them (crypt_read).
 */
static void ack_early(struct creq *q)
{
	/* Its whole blocks (librbd 16.2 was seen counting either those or
	 * the caller's bytes); the inner write is not counted again
	 * (RBDL_WA_TRACK). */
	if (!rbdl_wa_early_begin(q->img, q->a1 - q->a0, q->a.op_flags))
		return;
	q->early = true;
	/* Relaxed: the acknowledgement's delivery orders it (crypt_read). */
	atomic_fetch_add_explicit(&q->k->early, 1, memory_order_relaxed);
	rbdl_delivery_get(&q->img->dl);
	rbdl_wa_ack_comp(q->img, q->user, true);
}

/* The range is ours: read the partial edge blocks, or write now. */
static void write_granted(struct rbdl_crange *range)
{
	struct creq *q = (struct creq *)range;
	uint32_t bs = q->k->cipher.block;
	uint64_t end = q->a.off + q->a.len;
	bool head = q->a.off != q->a0 || q->a.op == RBDL_OP_CAW;
	bool tail = end != q->a1 && !(head && q->a1 - q->a0 == bs);
	int r = 0;

	if (!head && !tail) {
		write_blocks(q, NULL);
		return;
	}
	if (q->may_ack)
		ack_early(q);
	/* Guard reference: the last edge to finish (or this) merges. */
	rbdl_join_start(&q->sub, 1 + head + tail);
	for (int i = 0; i < 2; i++) {
		if (!(i ? tail : head))
			continue;
		if (r == 0) {
			q->edge[i] = (unsigned char *)rbdl_wbuf_alloc(bs);
			r = q->edge[i] ? 0 : -ENOMEM;
		}
		if (r == 0) {
			struct rbdl_io_args t = {
				.op = RBDL_OP_READ,
				.off = raw_off(q->k, i ? q->a1 - bs : q->a0),
				.len = bs, .buf = q->edge[i],
			};

			r = inner(q, &t, edge_done);
			if (r == 0)
				continue;
		}
		rbdl_join_unsent(&q->sub, r);	/* this edge never runs */
	}
	if (rbdl_join_put(&q->sub))
		merge_and_write(q);
}

/* An encrypted write (write, write-same, compare-and-write, or zeros
 * when a->buf is NULL) of [a->off, a->off + a->len) clipped to size, in
 * its block range -- within the held range `within` when not NULL (a
 * chunk of a discard's zeros). */
static int crypt_write(struct rbdl_image *img, struct rbdl_crypt *k,
		       struct rbdl_comp *c, const struct rbdl_io_args *a,
		       uint64_t size, bool may_ack, struct rbdl_crange *within)
{
	uint32_t bs = k->cipher.block;
	uint64_t len = clip_len(a, size);
	struct creq *q = creq_new(img, k, c, a, 0);
	bool direct;
	int r;

	if (!q)
		return -ENOMEM;
	q->a.len = len;
	q->a.iov = NULL;	/* the data is copied below */
	q->a0 = down(a->off, bs);
	q->a1 = up(a->off + len, bs);
	/* Whole blocks from one buffer: encrypted straight from it when
	 * the range is free now (one pass over the data, no copy). */
	direct = a->op == RBDL_OP_WRITE && a->buf && q->a0 == a->off &&
		 q->a1 == a->off + len;
	q->buf = rbdl_wbuf_alloc(q->a1 - q->a0);
	q->bounce = true;
	if (!q->buf) {
		creq_free(q);
		return -ENOMEM;
	}
	char *dst = q->buf + (a->off - q->a0);

	if (a->op == RBDL_OP_WRITESAME) {
		/* Written as the data it repeats, as librbd's crypto layer
		 * does; the last repetition is cut where len was clipped
		 * at the end of the image. */
		for (uint64_t pos = 0; pos < len; pos += a->data_len)
			memcpy(dst + pos, a->buf,
			       len - pos < a->data_len ? len - pos
						       : a->data_len);
	} else if (!direct) {
		copy_in(a, dst, len);
	}
	q->cmp_past = UINT64_MAX;
	if (a->op == RBDL_OP_CAW) {
		memcpy(q->cmp, a->cmp, len);
		for (uint64_t i = len; i < a->len; i++)
			if (((const unsigned char *)a->cmp)[i]) {
				q->cmp_past = i;
				break;
			}
	}
	q->range.start = q->a0;
	q->range.end = q->a1;
	q->range.within = within;
	q->range.grant = write_granted;
	r = rbdl_comp_arm(c, &img->dl, a->op != RBDL_OP_CAW && !c->internal);
	if (r < 0) {
		creq_free(q);
		return r;
	}
	q->may_ack = may_ack && a->op != RBDL_OP_CAW;
	if (direct) {
		if (rbdl_crange_try_acquire(&k->ranges, &q->range)) {
			write_blocks(q, a->buf);
			return 0;
		}
		copy_in(a, dst, len);	/* it waits: keep the data */
	}
	rbdl_crange_acquire(&k->ranges, &q->range);
	return 0;
}

/* ---- discard, write-zeroes, flush: the data path's, in order -------------- */

static void pass_done(rbdl_user_comp_t uc, void *arg)
{
	struct creq *q = arg;

	creq_done(q, inner_result(uc), true);
}

/*
 * Discard and write-zeroes (and a write-same of zeros) write zeros, as
 * librbd's crypto layer turns them into writes of zeros: encrypted zeros
 * (the stored bytes of a zero block are its ciphertext, which librbd
 * decrypts back to zeros; stored zero bytes would decrypt to noise
 * there).  The range -- for a discard, the object extents left after the
 * discard granularity (rbd_discard_granularity_bytes), never removed or
 * truncated -- is cut into chunks of at most ZCHUNK bytes, each an
 * ordinary encrypted write of zeros (crypt_write: its own block range, a
 * read-modify-write of a partial block), at most ZWINDOW of them in
 * flight, so a discard of any length holds bounded memory.  The request
 * holds its whole block range while its chunks run, theirs within it, so
 * a later request overlapping it -- a flush, whose range is everything --
 * waits for all of its chunks, not only for those already sent.
 */
#define ZCHUNK (1u << 20)
#define ZWINDOW 4

static int crypt_write(struct rbdl_image *img, struct rbdl_crypt *k,
		       struct rbdl_comp *c, const struct rbdl_io_args *a,
		       uint64_t size, bool may_ack, struct rbdl_crange *within);
static void zchunk_done(rbdl_user_comp_t uc, void *arg);

/* Claim the next chunk and send it: false when none is left. */
static bool zchunk_send(struct creq *q)
{
	/* Relaxed: only the claim is shared; zr was filled before the first
	 * send, and every later sender runs in a completion of an earlier
	 * chunk (ordered after it by the data path). */
	size_t i = atomic_fetch_add_explicit(&q->zi, 1, memory_order_relaxed);
	struct rbdl_comp *ic;
	int r;

	if (i >= q->nzr)
		return false;
	/* The sender's own reference keeps the count above zero. */
	rbdl_join_add(&q->sub);
	r = rbdl_comp_create(q, zchunk_done, &ic);
	if (r == 0) {
		struct rbdl_io_args t = {
			.op = RBDL_OP_WRITE, .off = q->zr[i].off,
			.len = q->zr[i].len,	/* no buf: zeros */
		};

		ic->internal = true;
		r = crypt_write(q->img, q->k, ic, &t, UINT64_MAX, false,
				&q->range);
		if (r < 0)
			rbdl_comp_release(ic);
	}
	if (r < 0)
		rbdl_join_unsent(&q->sub, r);
	return true;
}

static void zeros_finish(struct creq *q)
{
	creq_done(q, rbdl_join_result(&q->sub), true);
}

/* A chunk is written: send the next one (none after an error), and the
 * last to finish completes the request. */
static void zchunk_done(rbdl_user_comp_t uc, void *arg)
{
	struct creq *q = arg;
	ssize_t r = inner_result(uc);

	if (r < 0)
		rbdl_join_error(&q->sub, (int)r);
	else if (!rbdl_join_result(&q->sub))
		zchunk_send(q);
	if (rbdl_join_put(&q->sub))
		zeros_finish(q);
}

/* Append [off, off + len) of the data area to q's chunks. */
static int zr_add(struct creq *q, size_t *cap, uint64_t off, uint64_t len)
{
	while (len) {
		uint64_t n = len < ZCHUNK ? len : ZCHUNK;

		if (q->nzr == *cap) {
			size_t nc = *cap ? *cap * 2 : 8;
			struct zrange *z = realloc(q->zr, nc * sizeof(*z));

			if (!z)
				return -ENOMEM;
			q->zr = z;
			*cap = nc;
		}
		q->zr[q->nzr].off = off;
		q->zr[q->nzr++].len = n;
		off += n;
		len -= n;
	}
	return 0;
}

/* q's chunks: [q->a.off, q->a.off + len) (len clipped to the data
 * area), pruned to the discard granularity for a discard. */
static int zeros_plan(struct creq *q, uint64_t len)
{
	struct rbdl_image *img = q->img;
	const struct rbdl_layout *l = &img->layout;
	uint64_t off = raw_off(q->k, q->a.off);
	uint64_t g = atomic_load_explicit(&img->discard_granularity,
					  memory_order_relaxed);
	struct rbdl_objext *objs = NULL;
	struct rbdl_piece *pieces = NULL;
	size_t nobjs, npieces, cap = 0;
	int r;

	if (q->a.op != RBDL_OP_DISCARD || !g)
		return zr_add(q, &cap, q->a.off, len);
	rbdl_striper_count(l, off, len, &nobjs, &npieces);
	objs = malloc((nobjs ? nobjs : 1) * sizeof(*objs));
	pieces = malloc((npieces ? npieces : 1) * sizeof(*pieces));
	r = objs && pieces ? 0 : -ENOMEM;
	if (r == 0)
		r = rbdl_striper_map(l, off, len, objs, nobjs, pieces, npieces,
				     &nobjs, &npieces);
	if (r == 0)
		nobjs = rbdl_plan_prune_discard(l->object_size, g, objs, nobjs);
	for (size_t i = 0; r == 0 && i < nobjs; i++) {
		/* An object extent crosses at most len / su + 2 stripe
		 * units, each one image range. */
		struct rbdl_img_range inl[64], *rs = inl;
		size_t max = objs[i].len / l->stripe_unit + 2;
		int n;

		if (max > 64 && !(rs = malloc(max * sizeof(*rs)))) {
			r = -ENOMEM;
			break;
		}
		n = rbdl_striper_obj_to_image(l, objs[i].objno,
					      objs[i].obj_off, objs[i].len, rs,
					      max > 64 ? max : 64);
		r = n < 0 ? n : 0;
		for (int j = 0; r == 0 && j < n; j++)
			r = zr_add(q, &cap, rs[j].img_off - q->k->data_off,
				   rs[j].len);
		if (rs != inl)
			free(rs);
	}
	free(objs);
	free(pieces);
	return r;
}

/* The request's range is held: send the first window of chunks. */
static void zeros_granted(struct rbdl_crange *range)
{
	struct creq *q = (struct creq *)range;

	/* Guard reference: the last chunk to finish (or this) completes. */
	rbdl_join_start(&q->sub, 1);
	for (int i = 0; i < ZWINDOW && zchunk_send(q); i++)
		;
	if (rbdl_join_put(&q->sub))
		zeros_finish(q);
}

static int crypt_zeros(struct rbdl_image *img, struct rbdl_crypt *k,
		       struct rbdl_comp *c, const struct rbdl_io_args *a,
		       uint64_t size)
{
	uint64_t len = clip_len(a, size);
	struct creq *q = creq_new(img, k, c, a, 0);
	int r;

	if (!q)
		return -ENOMEM;
	q->a.buf = NULL;
	r = zeros_plan(q, len);
	if (r == 0)
		r = rbdl_comp_arm(c, &img->dl, !c->internal);
	if (r < 0) {
		creq_free(q);
		return r;
	}
	/* Every chunk lies in the request's (clipped) range. */
	q->range.start = down(a->off, k->cipher.block);
	q->range.end = up(a->off + len, k->cipher.block);
	q->range.grant = zeros_granted;
	rbdl_crange_acquire(&k->ranges, &q->range);
	return 0;
}

static void pass_granted(struct rbdl_crange *range)
{
	struct creq *q = (struct creq *)range;
	struct rbdl_io_args t = q->a;
	int r;

	t.off = raw_off(q->k, q->a.off);
	r = inner(q, &t, pass_done);
	if (r < 0)
		creq_done(q, r, true);
}

static int crypt_pass(struct rbdl_image *img, struct rbdl_crypt *k,
		      struct rbdl_comp *c, const struct rbdl_io_args *a)
{
	uint32_t bs = k->cipher.block;
	/* A refused write may wait for its range after the call returned:
	 * its iovec array is kept (its data is never read: the data path
	 * refuses it first). */
	struct creq *q = creq_new(img, k, c, a,
				  a->op != RBDL_OP_FLUSH && a->iov ? a->iovcnt
								    : 0);
	int r;

	if (!q)
		return -ENOMEM;
	if (a->op == RBDL_OP_FLUSH) {
		q->range.start = 0;
		q->range.end = UINT64_MAX;
	} else {
		q->range.start = down(a->off, bs);
		q->range.end = a->off >= UINT64_MAX - bs ||
					       a->len >= UINT64_MAX - bs - a->off
				       ? UINT64_MAX
				       : up(a->off + a->len, bs);
	}
	q->range.grant = pass_granted;
	r = rbdl_comp_arm(c, &img->dl, !c->internal);
	if (r < 0) {
		creq_free(q);
		return r;
	}
	rbdl_crange_acquire(&k->ranges, &q->range);
	return 0;
}

/* ---- entry points ---------------------------------------------------------- */

/* Would the data path refuse a (data-area offsets, size the data area's)?
 * Then it goes there, unencrypted, to be refused with librbd's error. */
static bool crypt_refused(struct rbdl_image *img,
			  const struct rbdl_io_args *a, uint64_t size)
{
	bool writes = a->op != RBDL_OP_READ;

	return a->len == 0 || a->off >= size || rbdl_image_snap_gone(img) ||
	       (writes && atomic_load_explicit(&img->write_error,
					       memory_order_relaxed) < 0) ||
	       /* the data path checks the clipped length */
	       (a->op == RBDL_OP_CAW &&
		(a->off % 512) + clip_len(a, size) > 512) ||
	       (a->op == RBDL_OP_WRITESAME &&
		(a->data_len == 0 || a->len % a->data_len != 0)) ||
	       (a->op == RBDL_OP_WRITE_ZEROES &&
		(a->zero_flags & ~RBD_WRITE_ZEROES_FLAG_THICK_PROVISION));
}

static int crypt_submit(struct rbdl_image *img, struct rbdl_crypt *k,
			struct rbdl_comp *c, const struct rbdl_io_args *a)
{
	uint64_t size = rbdl_crypt_size(
		k, atomic_load_explicit(&img->size, memory_order_acquire));
	bool writes = a->op != RBDL_OP_READ;	/* flush: handled first */

	if (a->op == RBDL_OP_FLUSH)
		return crypt_pass(img, k, c, a);
	/* What the data path refuses, it refuses with librbd's errors --
	 * judged on the image as it is: a refresh that is due (another
	 * client grew the image) runs first here, on this rare path, or a
	 * request past the old end would reach the data path raw. */
	bool refused = crypt_refused(img, a, size);

	if (refused && rbdl_image_refresh_due(img) &&
	    rbdl_image_maybe_refresh(img) == 0) {
		size = rbdl_crypt_size(
			k, atomic_load_explicit(&img->size,
						memory_order_acquire));
		refused = crypt_refused(img, a, size);
	}
	if (refused)
		return writes ? crypt_pass(img, k, c, a)
			      : forward(img, k, c, a);
	switch (a->op) {
	case RBDL_OP_READ:
		return crypt_read(img, k, c, a, size);
	case RBDL_OP_WRITESAME:
		if (atomic_load_explicit(&img->ws_zero_discards,
					 memory_order_relaxed) &&
		    rbdl_plan_all_zero(a->buf, a->data_len)) {
			/* As librbd's C API: a write-zeroes. */
			struct rbdl_io_args t = *a;

			t.op = RBDL_OP_WRITE_ZEROES;
			t.buf = NULL;
			t.zero_flags = 0;
			return crypt_zeros(img, k, c, &t, size);
		}
		/* fall through */
	case RBDL_OP_WRITE:
	case RBDL_OP_CAW:
		return crypt_write(img, k, c, a, size, true, NULL);
	default:	/* discard, write-zeroes */
		return crypt_zeros(img, k, c, a, size);
	}
}

int rbdl_crypt_submit(struct rbdl_image *img, struct rbdl_crypt *k,
		      struct rbdl_comp *c, const struct rbdl_io_args *a)
{
	int r;

	submitting++;
	r = crypt_submit(img, k, c, a);
	submitting--;
	return r;
}
