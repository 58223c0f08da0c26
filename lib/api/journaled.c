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
 * The handle is made by the first write or flush that finds journaling
 * on (an open of a few round trips, on the control context's internal
 * lane: the request waits in the image's queue, as behind a refresh) or
 * by the first change (on the caller's thread; those calls block anyway),
 * and closed by the image's close.  Without a real librbd the write
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

#include "api/journaled.h"
#include "api/real.h"
#include "core/completion.h"
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

/* The real definition of fn, without rbdl_real_sym's diagnostic: the
 * caller names the journaled image instead. */
#define J_SYM(fn)                                                        \
	__extension__({                                                  \
		static atomic_int quiet_ = 1;                            \
		(__typeof__(&fn))rbdl_real_sym(#fn, &quiet_);            \
	})

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
					     a->buf, a->mismatch_off,
					     a->op_flags);
	case RBDL_OP_FLUSH:
		return J.s_flush(h);
	}
	return -EINVAL;
}

static void j_submit(struct rbdl_image *img, struct rbdl_comp *c,
		     const struct rbdl_io_args *a)
{
	rbd_completion_t rc;
	rbd_image_t h;
	int r = -EROFS;

	pthread_once(&j_once, j_resolve);
	if (!J.ok) {
		j_no_librbd(img);
		goto fail;
	}
	h = j_handle(img, &r);
	if (!h)
		goto fail;
	if (c->internal && !a->iov) {
		rbdl_comp_complete_deferred(c, j_sync(h, a), img->defer_io);
		return;
	}
	r = J.create_completion(c, j_done, &rc);
	if (r < 0)
		goto fail;
	r = j_start(h, a, rc);
	if (r >= 0)
		return;
	J.release(rc);
fail:
	/* Never inside the submitting call, as every early result. */
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
