/*
 * rbd_aio.c - the exported librbd I/O entry points (rbd_aio_*, the
 * synchronous rbd_read/rbd_write family, completions and event polling).
 *
 * These are thin shims: validate the handles and the arguments librbd
 * validates synchronously, then hand over to io.c.  Everything librbd
 * reports through the completion (range errors, -EROFS, bad zero flags) is
 * reported through the completion here too.  Bad handles (NULL, closed,
 * never created) give -EINVAL where librbd would crash.
 *
 * Rule: nothing here calls another exported rbd_* function (under
 * LD_PRELOAD such a call could bind to the real librbd).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "rbd/librbd.h"
#include "rbdlite.h"

#include "api/journaled.h"
#include "api/whole.h"
#include "core/completion.h"
#include "image/state.h"
#include "core/internal.h"
#include "io/io.h"
#include "core/stats.h"

/* ---- completions -------------------------------------------------------- */

RBDL_API int rbd_aio_create_completion(void *cb_arg,
				       rbd_callback_t complete_cb,
				       rbd_completion_t *c)
{
	struct rbdl_comp *comp;
	int r;

	if (!c)
		return -EINVAL;
	r = rbdl_comp_create(cb_arg, (rbdl_callback_t)complete_cb, &comp);
	if (r < 0)
		return r;
	*c = rbdl_comp_handle(comp);
	return 0;
}

RBDL_API int rbd_aio_is_complete(rbd_completion_t c)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);

	if (!comp)
		return -EINVAL;
	return rbdl_comp_is_complete(comp);
}

RBDL_API int rbd_aio_wait_for_complete(rbd_completion_t c)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);

	if (!comp)
		return -EINVAL;
	return rbdl_comp_wait(comp);
}

RBDL_API ssize_t rbd_aio_get_return_value(rbd_completion_t c)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);

	if (!comp)
		return -EINVAL;
	return comp->rval;
}

RBDL_API void *rbd_aio_get_arg(rbd_completion_t c)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);

	return comp ? comp->arg : NULL;
}

RBDL_API void rbd_aio_release(rbd_completion_t c)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);

	if (!comp) {
		if (c)
			rbdl_err("rbd_aio_release: %p is not a live "
				 "completion (double release?); ignored", c);
		return;
	}
	rbdl_comp_release(comp);
}

/* ---- asynchronous I/O ---------------------------------------------------- */

static int aio_submit(rbd_image_t image, rbd_completion_t c,
		      struct rbdl_io_args *a)
{
	struct rbdl_image *img = rbdl_image_from_user(image);
	struct rbdl_comp *comp = rbdl_comp_from_user(c);

	if (__builtin_expect(!img, 0)) {
		struct rbdl_whole *w = rbdl_whole_from_user(image);

		return w && comp ? rbdl_whole_io(w, comp, a) : -EINVAL;
	}
	if (!comp)
		return -EINVAL;
	return rbdl_io_submit(img, comp, a);
}

/* Sum iovec lengths as librbd's get_iovec_length does: -EINVAL for
 * iovcnt <= 0 or a total that wraps size_t (a total above SSIZE_MAX is
 * accepted and clipped at the image end, as in librbd). */
static int iov_length(const struct iovec *iov, int iovcnt, uint64_t *out)
{
	size_t len = 0;

	if (iovcnt <= 0 || !iov)
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - len)
			return -EINVAL;
		if (iov[i].iov_len && !iov[i].iov_base)
			return -EINVAL;
		len += iov[i].iov_len;
	}
	*out = len;
	return 0;
}

static int rw_args(struct rbdl_io_args *a, enum rbdl_op op, uint64_t off,
		   size_t len, const char *buf, int op_flags)
{
	if (!buf && len)
		return -EINVAL;
	*a = (struct rbdl_io_args){ .op = op, .off = off, .len = len,
				    .buf = (void *)buf,
				    .op_flags = op_flags };
	return 0;
}

static int aio_rw(rbd_image_t image, enum rbdl_op op, uint64_t off,
		  size_t len, const char *buf, rbd_completion_t c,
		  int op_flags)
{
	struct rbdl_io_args a;
	int r = rw_args(&a, op, off, len, buf, op_flags);

	return r < 0 ? r : aio_submit(image, c, &a);
}

static int aio_rwv(rbd_image_t image, enum rbdl_op op,
		   const struct iovec *iov, int iovcnt, uint64_t off,
		   rbd_completion_t c)
{
	uint64_t len;
	int r = iov_length(iov, iovcnt, &len);

	if (r < 0)
		return r;
	struct rbdl_io_args a = { .op = op, .off = off, .len = len };

	if (iovcnt == 1)
		a.buf = iov[0].iov_base;	/* linear, as librbd does */
	else {
		a.iov = iov;
		a.iovcnt = iovcnt;
	}
	return aio_submit(image, c, &a);
}

RBDL_API int rbd_aio_read(rbd_image_t image, uint64_t off, size_t len,
			  char *buf, rbd_completion_t c)
{
	return aio_rw(image, RBDL_OP_READ, off, len, buf, c, 0);
}

RBDL_API int rbd_aio_read2(rbd_image_t image, uint64_t off, size_t len,
			   char *buf, rbd_completion_t c, int op_flags)
{
	return aio_rw(image, RBDL_OP_READ, off, len, buf, c, op_flags);
}

RBDL_API int rbd_aio_readv(rbd_image_t image, const struct iovec *iov,
			   int iovcnt, uint64_t off, rbd_completion_t c)
{
	return aio_rwv(image, RBDL_OP_READ, iov, iovcnt, off, c);
}

RBDL_API int rbd_aio_write(rbd_image_t image, uint64_t off, size_t len,
			   const char *buf, rbd_completion_t c)
{
	return aio_rw(image, RBDL_OP_WRITE, off, len, buf, c, 0);
}

RBDL_API int rbd_aio_write2(rbd_image_t image, uint64_t off, size_t len,
			    const char *buf, rbd_completion_t c, int op_flags)
{
	return aio_rw(image, RBDL_OP_WRITE, off, len, buf, c, op_flags);
}

RBDL_API int rbd_aio_writev(rbd_image_t image, const struct iovec *iov,
			    int iovcnt, uint64_t off, rbd_completion_t c)
{
	return aio_rwv(image, RBDL_OP_WRITE, iov, iovcnt, off, c);
}

RBDL_API int rbd_aio_discard(rbd_image_t image, uint64_t off, uint64_t len,
			     rbd_completion_t c)
{
	struct rbdl_io_args a = { .op = RBDL_OP_DISCARD, .off = off,
				  .len = len };

	return aio_submit(image, c, &a);
}

static int writesame_args(struct rbdl_io_args *a, uint64_t off, size_t len,
			  const char *buf, size_t data_len, int op_flags)
{
	/* librbd checks these synchronously. */
	if (data_len == 0 || len % data_len)
		return -EINVAL;
	if (!buf)
		return -EINVAL;
	*a = (struct rbdl_io_args){ .op = RBDL_OP_WRITESAME, .off = off,
				    .len = len, .buf = (void *)buf,
				    .data_len = data_len,
				    .op_flags = op_flags };
	return 0;
}

RBDL_API int rbd_aio_writesame(rbd_image_t image, uint64_t off, size_t len,
			       const char *buf, size_t data_len,
			       rbd_completion_t c, int op_flags)
{
	struct rbdl_io_args a;
	int r = writesame_args(&a, off, len, buf, data_len, op_flags);

	return r < 0 ? r : aio_submit(image, c, &a);
}

RBDL_API int rbd_aio_write_zeroes(rbd_image_t image, uint64_t off, size_t len,
				  rbd_completion_t c, int zero_flags,
				  int op_flags)
{
	struct rbdl_io_args a = { .op = RBDL_OP_WRITE_ZEROES, .off = off,
				  .len = len, .zero_flags = zero_flags,
				  .op_flags = op_flags };

	return aio_submit(image, c, &a);
}

static int caw_args(struct rbdl_io_args *a, uint64_t off, size_t len,
		    const char *cmp_buf, const char *buf,
		    uint64_t *mismatch_off, int op_flags)
{
	if (len && (!cmp_buf || !buf))
		return -EINVAL;
	/* Beyond this the data path's sums of offsets and the compare
	 * length (not clipped at the image end, request.h) could wrap;
	 * librbd aborts copying such a buffer. */
	if (len > SSIZE_MAX)
		return -EINVAL;
	*a = (struct rbdl_io_args){ .op = RBDL_OP_CAW, .off = off, .len = len,
				    .buf = (void *)buf, .cmp = cmp_buf,
				    .mismatch_off = mismatch_off,
				    .op_flags = op_flags };
	return 0;
}

RBDL_API ssize_t rbd_aio_compare_and_write(rbd_image_t image, uint64_t off,
					   size_t len, const char *cmp_buf,
					   const char *buf, rbd_completion_t c,
					   uint64_t *mismatch_off,
					   int op_flags)
{
	struct rbdl_io_args a;
	int r = caw_args(&a, off, len, cmp_buf, buf, mismatch_off, op_flags);

	return r < 0 ? r : aio_submit(image, c, &a);
}

RBDL_API int rbd_aio_flush(rbd_image_t image, rbd_completion_t c)
{
	struct rbdl_io_args a = { .op = RBDL_OP_FLUSH, .user = true };

	return aio_submit(image, c, &a);
}

/* ---- synchronous I/O ----------------------------------------------------- */

static ssize_t sync_io(rbd_image_t image, struct rbdl_io_args *a)
{
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (__builtin_expect(!img, 0)) {
		struct rbdl_whole *w = rbdl_whole_from_user(image);

		return w ? rbdl_whole_io_sync(w, a) : -EINVAL;
	}
	return rbdl_io_sync(img, a);
}

static ssize_t sync_rw(rbd_image_t image, enum rbdl_op op, uint64_t ofs,
		       size_t len, const char *buf, int op_flags)
{
	struct rbdl_io_args a;
	int r = rw_args(&a, op, ofs, len, buf, op_flags);

	return r < 0 ? r : sync_io(image, &a);
}

RBDL_API ssize_t rbd_read(rbd_image_t image, uint64_t ofs, size_t len,
			  char *buf)
{
	return sync_rw(image, RBDL_OP_READ, ofs, len, buf, 0);
}

RBDL_API ssize_t rbd_read2(rbd_image_t image, uint64_t ofs, size_t len,
			   char *buf, int op_flags)
{
	return sync_rw(image, RBDL_OP_READ, ofs, len, buf, op_flags);
}

RBDL_API ssize_t rbd_write(rbd_image_t image, uint64_t ofs, size_t len,
			   const char *buf)
{
	return sync_rw(image, RBDL_OP_WRITE, ofs, len, buf, 0);
}

RBDL_API ssize_t rbd_write2(rbd_image_t image, uint64_t ofs, size_t len,
			    const char *buf, int op_flags)
{
	return sync_rw(image, RBDL_OP_WRITE, ofs, len, buf, op_flags);
}

RBDL_API int rbd_discard(rbd_image_t image, uint64_t ofs, uint64_t len)
{
	struct rbdl_io_args a = { .op = RBDL_OP_DISCARD, .off = ofs,
				  .len = len };

	/* librbd returns the length as an int. */
	if (len > INT_MAX)
		return -EINVAL;
	return (int)sync_io(image, &a);
}

RBDL_API ssize_t rbd_writesame(rbd_image_t image, uint64_t ofs, size_t len,
			       const char *buf, size_t data_len, int op_flags)
{
	struct rbdl_io_args a;
	int r = writesame_args(&a, ofs, len, buf, data_len, op_flags);

	return r < 0 ? r : sync_io(image, &a);
}

RBDL_API ssize_t rbd_write_zeroes(rbd_image_t image, uint64_t ofs, size_t len,
				  int zero_flags, int op_flags)
{
	struct rbdl_io_args a = { .op = RBDL_OP_WRITE_ZEROES, .off = ofs,
				  .len = len, .zero_flags = zero_flags,
				  .op_flags = op_flags };

	return sync_io(image, &a);
}

RBDL_API ssize_t rbd_compare_and_write(rbd_image_t image, uint64_t ofs,
				       size_t len, const char *cmp_buf,
				       const char *buf, uint64_t *mismatch_off,
				       int op_flags)
{
	struct rbdl_io_args a;
	int r = caw_args(&a, ofs, len, cmp_buf, buf, mismatch_off, op_flags);

	return r < 0 ? r : sync_io(image, &a);
}

RBDL_API int rbd_flush(rbd_image_t image)
{
	struct rbdl_io_args a = { .op = RBDL_OP_FLUSH, .user = true };

	return (int)sync_io(image, &a);
}

RBDL_API int rbd_invalidate_cache(rbd_image_t image)
{
	RBDL_ON_WHOLE(rbd_invalidate_cache, image);
	struct rbdl_image *img = rbdl_image_from_user(image);
	rbd_image_t real;

	if (!img)
		return -EINVAL;
	/* A journaled image's real handle may cache; librbdlite keeps no
	 * data, but drains the writes it acknowledged early (write-around)
	 * first, as a cache invalidation writes dirty data back. */
	real = rbdl_real_image_shared(img);
	if (real)
		RBDL_FORWARD(rbd_invalidate_cache, real);
	struct rbdl_io_args a = { .op = RBDL_OP_FLUSH, .own = true };
	ssize_t r = rbdl_io_sync(img, &a);

	return r < 0 ? (int)r : 0;
}

/* ---- event notification -------------------------------------------------- */

/* The delivery behind a handle: an image's, or a whole handle's (whose
 * completions are ours too, api/whole.h); NULL for a bad handle. */
static struct rbdl_delivery *delivery_of(rbd_image_t image)
{
	struct rbdl_image *img = rbdl_image_from_user(image);
	struct rbdl_whole *w;

	if (img)
		return &img->dl;
	w = rbdl_whole_from_user(image);
	return w ? &w->dl : NULL;
}

RBDL_API int rbd_set_image_notification(rbd_image_t image, int fd, int type)
{
	struct rbdl_delivery *d = delivery_of(image);

	if (!d || fd < 0)
		return -EINVAL;
	return rbdl_delivery_set_notification(d, fd, type);
}

RBDL_API int rbd_poll_io_events(rbd_image_t image, rbd_completion_t *comps,
				int numcomp)
{
	struct rbdl_delivery *d = delivery_of(image);

	if (!d || numcomp <= 0 || !comps)
		return -EINVAL;
	return rbdl_delivery_poll(d, comps, numcomp);
}

/* ---- librbdlite extensions ------------------------------------------------ */

RBDL_API int rbdlite_get_stats(struct rbdlite_stats *st, size_t size)
{
	uint64_t v[RBDL_STAT_COUNT];
	struct rbdlite_stats s;

	if (!st || size == 0 || size > RBDLITE_STATS_SIZE_MAX)
		return -EINVAL;
	rbdl_stats_read(v);
	s.ios_submitted = v[RBDL_STAT_IOS_SUBMITTED];
	s.ios_completed = v[RBDL_STAT_IOS_COMPLETED];
	s.mallocs_hot_path = v[RBDL_STAT_MALLOCS_HOT_PATH];
	s.callback_batches = v[RBDL_STAT_CALLBACK_BATCHES];
	s.callbacks_run = v[RBDL_STAT_CALLBACKS_RUN];
	s.eventfd_writes = v[RBDL_STAT_EVENTFD_WRITES];
	s.write_copies = v[RBDL_STAT_WRITE_COPIES];
	s.write_copy_bytes = v[RBDL_STAT_WRITE_COPY_BYTES];
	s.sched_held = v[RBDL_STAT_SCHED_HELD];
	s.sched_runs = v[RBDL_STAT_SCHED_RUNS];
	/* An older caller's shorter struct gets the fields it knows; a
	 * newer caller's longer one reads 0 for counters we do not keep. */
	memcpy(st, &s, size < sizeof(s) ? size : sizeof(s));
	if (size > sizeof(s))
		memset((char *)st + sizeof(s), 0, size - sizeof(s));
	return 0;
}
