/*
 * journaled.c - a journaled image's I/O on the system's librbd.
 *
 * Role: the hook of image/journal.h.  librbdlite writes no journal, so the
 * reads, writes, discards, write-same, write-zeroes, compare-and-write and
 * flushes of a read-write HEAD open of a journaled image are run by the
 * real librbd on a handle of the same image (rbdl_real_image_open: by id,
 * on the image's I/O context).  librbd then appends the journal events,
 * takes the exclusive lock through the normal protocol (our handle gives
 * it up when asked, as to any other client) and gives its own results.
 * Reads go there too once the handle exists, so that they see what its
 * cache holds.  Only librbd's own objects cross: each aio request gets a
 * real completion whose callback completes ours with the real return
 * value; a synchronous call (rbd_read, rbd_write, ...) is the real
 * synchronous call, whose answers differ from the aio form's in places.
 *
 * The handle is made by the first aio write or flush that finds
 * journaling on (an open of a few round trips, on the control context's
 * internal lane: the request waits in the image's queue, as behind a
 * refresh) or by the first synchronous call or change (on the caller's
 * thread; those calls block anyway), and closed by the image's close.  Without a real librbd the write
 * fails with -EROFS, as librbdlite's own refusal did, and a diagnostic
 * says why.
 *
 * Threading: submit runs on any submitting thread; the real callback on
 * librbd's own thread, which completes our completion (core/completion.h
 * delivers from any thread).  The function table is filled once under
 * pthread_once; the handle is published by compare-and-swap.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/journaled.h"
#include "api/real.h"
#include "core/completion.h"
#include "core/ctl.h"
#include "core/internal.h"
#include "image/journal.h"
#include "image/refresh.h"
#include "image/state.h"
#include "io/io.h"

/* The real librbd's definitions, all present or none used. */
static struct {
	__typeof__(&rbd_aio_create_completion) create_completion;
	__typeof__(&rbd_aio_get_return_value) get_return_value;
	__typeof__(&rbd_aio_release) release;
	__typeof__(&rbd_aio_read2) read2;
	__typeof__(&rbd_aio_readv) readv;
	__typeof__(&rbd_aio_write2) write2;
	__typeof__(&rbd_aio_writev) writev;
	__typeof__(&rbd_aio_discard) discard;
	__typeof__(&rbd_aio_write_zeroes) write_zeroes;
	__typeof__(&rbd_aio_writesame) writesame;
	__typeof__(&rbd_aio_compare_and_write) compare_and_write;
	__typeof__(&rbd_aio_flush) flush;
	__typeof__(&rbd_read2) s_read2;
	__typeof__(&rbd_write2) s_write2;
	__typeof__(&rbd_discard) s_discard;
	__typeof__(&rbd_write_zeroes) s_write_zeroes;
	__typeof__(&rbd_writesame) s_writesame;
	__typeof__(&rbd_compare_and_write) s_compare_and_write;
	__typeof__(&rbd_flush) s_flush;
	__typeof__(&rbd_close) close;
	bool ok;
} J;
static pthread_once_t j_once = PTHREAD_ONCE_INIT;

/* The real definitions, without rbdl_real_sym's diagnostic: the caller
 * names the journaled image instead. */
#define J_SYM(fn) RBDL_REAL_FN_QUIET(fn)

static void j_resolve(void)
{
	J.create_completion = J_SYM(rbd_aio_create_completion);
	J.get_return_value = J_SYM(rbd_aio_get_return_value);
	J.release = J_SYM(rbd_aio_release);
	J.read2 = J_SYM(rbd_aio_read2);
	J.readv = J_SYM(rbd_aio_readv);
	J.write2 = J_SYM(rbd_aio_write2);
	J.writev = J_SYM(rbd_aio_writev);
	J.discard = J_SYM(rbd_aio_discard);
	J.write_zeroes = J_SYM(rbd_aio_write_zeroes);
	J.writesame = J_SYM(rbd_aio_writesame);
	J.compare_and_write = J_SYM(rbd_aio_compare_and_write);
	J.flush = J_SYM(rbd_aio_flush);
	J.s_read2 = J_SYM(rbd_read2);
	J.s_write2 = J_SYM(rbd_write2);
	J.s_discard = J_SYM(rbd_discard);
	J.s_write_zeroes = J_SYM(rbd_write_zeroes);
	J.s_writesame = J_SYM(rbd_writesame);
	J.s_compare_and_write = J_SYM(rbd_compare_and_write);
	J.s_flush = J_SYM(rbd_flush);
	J.close = J_SYM(rbd_close);
	J.ok = J.create_completion && J.get_return_value && J.release &&
	       J.read2 && J.readv && J.write2 && J.writev && J.discard &&
	       J.write_zeroes && J.writesame && J.compare_and_write &&
	       J.flush && J.s_read2 && J.s_write2 && J.s_discard &&
	       J.s_write_zeroes && J.s_writesame && J.s_compare_and_write &&
	       J.s_flush && J.close;
}

/* Without a real librbd: said once per process. */
static void j_no_librbd(const struct rbdl_image *img)
{
	static atomic_int warned;

	if (!atomic_exchange_explicit(&warned, 1, memory_order_relaxed))
		rbdl_log("image %s is journaled: librbdlite writes no journal "
			 "and there is no system librbd to write it (set "
			 "RBDLITE_SYSTEM_LIBRBD to its path); its writes and "
			 "changes fail with EROFS", img->name);
}

/* img's real handle, opened now if it has none; NULL with *err set. */
static rbd_image_t j_handle(struct rbdl_image *img, int *err)
{
	void *h = atomic_load_explicit(&img->journal_h, memory_order_acquire);
	void *expected = NULL;
	rbd_image_t mine;
	int r;

	if (h)
		return h;
	r = rbdl_real_image_open_head(img, "rbd_aio_write", &mine);
	if (r < 0) {
		static atomic_int warned;

		if (!atomic_exchange_explicit(&warned, 1, memory_order_relaxed))
			rbdl_log("image %s is journaled: librbdlite writes no "
				 "journal and the system's librbd could not "
				 "open it (%d); its writes fail with EROFS",
				 img->name, r);
		*err = -EROFS;
		return NULL;
	}
	/* Release on success: a submitter that loads the pointer (acquire)
	 * sees the open finished.  Acquire on failure: we use the winner's. */
	if (atomic_compare_exchange_strong_explicit(&img->journal_h, &expected,
						    (void *)mine,
						    memory_order_acq_rel,
						    memory_order_acquire))
		return mine;
	J.close(mine);		/* another submitter's open won */
	return expected;
}

/* The real completion finished: complete ours with its value. */
static void j_done(rbd_completion_t rc, void *arg)
{
	ssize_t v = J.get_return_value(rc);

	J.release(rc);
	rbdl_comp_complete(arg, v);
}

/*
 * A vectored read: librbd keeps the iovec array until the read completes
 * (io::ReadResult stores the pointer), while librbdlite promises only the
 * buffers (io.h: the array may go when the submitting call returns, and a
 * queued request's copy goes when it is started).  So the array is copied
 * here and freed by the completion.
 */
struct j_readv {
	struct rbdl_comp *c;
	struct iovec iov[];
};

static void j_done_readv(rbd_completion_t rc, void *arg)
{
	struct j_readv *jr = arg;
	struct rbdl_comp *c = jr->c;

	free(jr);
	j_done(rc, c);
}

/* A compare-and-write without a mismatch offset: librbd stores it
 * unconditionally, so it gets one of these until it completes. */
struct j_caw {
	struct rbdl_comp *c;
	uint64_t mismatch_off;
};

static void j_done_caw(rbd_completion_t rc, void *arg)
{
	struct j_caw *jc = arg;
	struct rbdl_comp *c = jc->c;

	free(jc);
	j_done(rc, c);
}

static int j_start(rbd_image_t h, const struct rbdl_io_args *a,
		   rbd_completion_t rc)
{
	switch (a->op) {
	case RBDL_OP_READ:
		return a->iov ? J.readv(h, a->iov, a->iovcnt, a->off, rc)
			      : J.read2(h, a->off, a->len, a->buf, rc,
					a->op_flags);
	case RBDL_OP_WRITE:
		return a->iov ? J.writev(h, a->iov, a->iovcnt, a->off, rc)
			      : J.write2(h, a->off, a->len, a->buf, rc,
					 a->op_flags);
	case RBDL_OP_DISCARD:
		return J.discard(h, a->off, a->len, rc);
	case RBDL_OP_WRITE_ZEROES:
		return J.write_zeroes(h, a->off, a->len, rc, a->zero_flags,
				      a->op_flags);
	case RBDL_OP_WRITESAME:
		return J.writesame(h, a->off, a->len, a->buf, a->data_len, rc,
				   a->op_flags);
	case RBDL_OP_CAW:
		return (int)J.compare_and_write(h, a->off, a->len, a->cmp,
						a->buf, rc, a->mismatch_off,
						a->op_flags);
	case RBDL_OP_FLUSH:
		return J.flush(h, rc);
	}
	return -EINVAL;
}

/*
 * A synchronous call (rbd_read, rbd_write, ...: an internal completion)
 * is the real librbd's synchronous call, whose results differ from its
 * aio form's in places (a thick write-zeroes crossing the image end is
 * clipped, not refused).  Returns its value.  (An internal iovec request
 * has no synchronous form and takes the aio path.)
 */
static ssize_t j_sync(rbd_image_t h, const struct rbdl_io_args *a)
{
	uint64_t moff;

	switch (a->op) {
	case RBDL_OP_READ:
		return J.s_read2(h, a->off, a->len, a->buf, a->op_flags);
	case RBDL_OP_WRITE:
		return J.s_write2(h, a->off, a->len, a->buf, a->op_flags);
	case RBDL_OP_DISCARD:
		return J.s_discard(h, a->off, a->len);
	case RBDL_OP_WRITE_ZEROES:
		return J.s_write_zeroes(h, a->off, a->len, a->zero_flags,
					a->op_flags);
	case RBDL_OP_WRITESAME:
		return J.s_writesame(h, a->off, a->len, a->buf, a->data_len,
				     a->op_flags);
	case RBDL_OP_CAW:
		return J.s_compare_and_write(h, a->off, a->len, a->cmp,
					     a->buf,
					     a->mismatch_off ? a->mismatch_off
							     : &moff,
					     a->op_flags);
	case RBDL_OP_FLUSH:
		return J.s_flush(h);
	}
	return -EINVAL;
}

/*
 * What librbd must not be given, made safe as librbdlite's own path makes
 * it (the caller refreshed img, as for any request).  librbd copies a
 * write's whole length out of the caller's buffers before it clips the
 * request at the image end, and its clip computes off + len, which wraps
 * for a length near 2^64 (librbd then hangs or aborts).  So:
 *   - a write from at or past the image end fails with -EINVAL here (what
 *     librbd's clip answers, without the copy);
 *   - a read or write longer than the image end allows is cut at the
 *     image end, where librbd's clip would cut it (a writev's iovec array
 *     is cut in a copy, *cut, which the caller frees once librbd has
 *     taken the data);
 *   - any other length that would wrap from an offset inside the image
 *     is cut to what can be reached (a write-same's to whole patterns),
 *     and librbd's clip then gives the image end, as librbdlite's does
 *     (from past the end librbd answers -EINVAL before it adds);
 *   - a zero-length compare-and-write aborts librbd: it completes here
 *     with 0, as on any writable image.
 * (journaled.h)
 */
int rbdl_real_io_sanitize(uint64_t size, struct rbdl_io_args *t,
			  struct iovec **cut, ssize_t *rval)
{
	int r = 0;

	*cut = NULL;
	if (t->op == RBDL_OP_FLUSH)
		return 1;
	if (t->op == RBDL_OP_CAW && t->len == 0)
		goto answered;
	if (t->op == RBDL_OP_WRITE && t->len && t->off >= size) {
		r = -EINVAL;
		goto answered;
	}
	if ((t->op == RBDL_OP_READ || t->op == RBDL_OP_WRITE) &&
	    t->off < size && t->len > size - t->off) {
		t->len = size - t->off;
		if (t->iov && t->op == RBDL_OP_WRITE) {
			uint64_t left = t->len;
			int n = 0;

			*cut = malloc((size_t)t->iovcnt * sizeof(**cut));
			if (!*cut) {
				r = -ENOMEM;
				goto answered;
			}
			for (; n < t->iovcnt && left; n++) {
				(*cut)[n] = t->iov[n];
				if ((*cut)[n].iov_len > left)
					(*cut)[n].iov_len = left;
				left -= (*cut)[n].iov_len;
			}
			t->iov = *cut;
			t->iovcnt = n;
		}
	}
	if (t->off < size && t->len > UINT64_MAX - t->off) {
		t->len = UINT64_MAX - t->off;
		if (t->op == RBDL_OP_WRITESAME)
			t->len -= t->len % t->data_len;
	}
	return 1;
answered:
	*rval = r;
	return 0;
}

static bool j_sanitize(struct rbdl_image *img, struct rbdl_comp *c,
		       struct rbdl_io_args *t, struct iovec **cut)
{
	uint64_t size = atomic_load_explicit(&img->size, memory_order_acquire);
	ssize_t v;

	if (rbdl_real_io_sanitize(size, t, cut, &v))
		return true;
	rbdl_comp_complete_deferred(c, v, img->defer_io);
	return false;
}

/* Start a (sanitized) on img's real handle: 0 when c will be completed,
 * else a negative errno to complete it with. */
static int j_run(struct rbdl_image *img, struct rbdl_comp *c,
		 const struct rbdl_io_args *a)
{
	rbd_image_t h;
	int r = -EROFS;

	pthread_once(&j_once, j_resolve);
	if (!J.ok) {
		j_no_librbd(img);
		return r;
	}
	h = j_handle(img, &r);
	if (!h)
		return r;
	/* Synchronous on the caller's thread; never on the control
	 * context's internal lane (a request queued behind a refresh), whose
	 * thread also answers the lock requests of our own handles: librbd
	 * may need one of them to give the lock up before it completes. */
	if (c->internal && !a->iov && !rbdl_ctl_on_lane(RBDL_CTL_INTERNAL)) {
		rbdl_comp_complete_deferred(c, j_sync(h, a), img->defer_io);
		return 0;
	}
	return rbdl_real_io_aio(h, c, a);
}

ssize_t rbdl_real_io_sync(rbd_image_t h, const struct rbdl_io_args *a)
{
	pthread_once(&j_once, j_resolve);
	return J.ok ? j_sync(h, a) : -EOPNOTSUPP;
}

int rbdl_real_comp_make(struct rbdl_comp *c, rbd_completion_t *rc)
{
	pthread_once(&j_once, j_resolve);
	return J.ok ? J.create_completion(c, j_done, rc) : -EOPNOTSUPP;
}

void rbdl_real_comp_release(rbd_completion_t rc)
{
	/* A real completion exists only if the table was complete. */
	J.release(rc);
}

/* Start t on h with a real completion whose callback gets arg (done); w,
 * the wrapper arg belongs to if any, is freed if the start fails. */
static int j_start_with(rbd_image_t h, const struct rbdl_io_args *t,
			void *arg, rbd_callback_t done, void *w)
{
	rbd_completion_t rc;
	int r = J.create_completion(arg, done, &rc);

	if (r == 0) {
		r = j_start(h, t, rc);
		if (r >= 0)
			return 0;
		J.release(rc);
	}
	free(w);
	return r;
}

int rbdl_real_io_aio(rbd_image_t h, struct rbdl_comp *c,
		     const struct rbdl_io_args *a)
{
	struct rbdl_io_args t = *a;

	pthread_once(&j_once, j_resolve);
	if (!J.ok)
		return -EOPNOTSUPP;
	if (a->op == RBDL_OP_READ && a->iov) {
		struct j_readv *jr = malloc(sizeof(*jr) + (size_t)a->iovcnt *
							  sizeof(jr->iov[0]));

		if (!jr)
			return -ENOMEM;
		jr->c = c;
		memcpy(jr->iov, a->iov, (size_t)a->iovcnt * sizeof(jr->iov[0]));
		t.iov = jr->iov;
		return j_start_with(h, &t, jr, j_done_readv, jr);
	}
	if (a->op == RBDL_OP_CAW && !a->mismatch_off) {
		struct j_caw *jc = malloc(sizeof(*jc));

		if (!jc)
			return -ENOMEM;
		jc->c = c;
		t.mismatch_off = &jc->mismatch_off;
		return j_start_with(h, &t, jc, j_done_caw, jc);
	}
	return j_start_with(h, &t, c, j_done, NULL);
}

static void j_submit(struct rbdl_image *img, struct rbdl_comp *c,
		     const struct rbdl_io_args *args)
{
	struct rbdl_io_args t = *args;
	struct iovec *cut;
	int r;

	if (!j_sanitize(img, c, &t, &cut))
		return;
	r = j_run(img, c, &t);
	free(cut);	/* librbd copied a writev's data when it took it */
	if (r < 0)	/* never inside the submitting call */
		rbdl_comp_complete_deferred(c, r, img->defer_io);
}

static void j_close(void *real_handle)
{
	pthread_once(&j_once, j_resolve);
	/* A handle exists only if the table was complete. */
	J.close(real_handle);
}

static const struct rbdl_journal_io j_io = {
	.submit = j_submit,
	.close = j_close,
};

/* Before main (or before dlopen returns): no image exists yet. */
__attribute__((constructor)) static void j_install(void)
{
	rbdl_journal_io = &j_io;
}

/* ---- image-level calls (journaled.h) -------------------------------------- */

int rbdl_journal_route(struct rbdl_image *img, bool any_view,
		       rbd_image_t *out)
{
	int r;

	if (img->open_ro || !rbdl_journal_io ||
	    (!any_view && atomic_load(&img->at_snap)))
		return 0;
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	if (!(atomic_load(&img->features) & RBD_FEATURE_JOURNALING))
		return 0;
	pthread_once(&j_once, j_resolve);
	if (!J.ok) {
		j_no_librbd(img);
		return 0;	/* librbdlite's own call refuses it */
	}
	*out = j_handle(img, &r);
	return *out ? 1 : 0;
}

void rbdl_journal_routed_done(struct rbdl_image *img)
{
	rbdl_real_image_done(img);
	/* Its error (the header unreadable now) shows in the next call. */
	(void)rbdl_image_maybe_refresh(img);
}
