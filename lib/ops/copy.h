/*
 * copy.h - rbd_copy* (copy.c): a new image (or an existing one) filled
 * with an open image's data and metadata, as librbd 16.2's librbd::copy.
 *
 * Threading: synchronous, the caller's thread.  Each function returns 0
 * or a negative errno with librbd's errnos.
 */
#ifndef RBDL_OPS_COPY_H
#define RBDL_OPS_COPY_H

#include <stdbool.h>
#include <stddef.h>

#include <rados/librados.h>

#include "ops/clone.h"
#include "ops/options.h"

struct rbdl_image;

/*
 * librbd::copy(src, dest_md_ctx, destname, opts, prog_ctx, sparse_size):
 * create destname (rbd_create4 with the source's features, order and
 * striping where opts leaves them unset; opts is updated in place as
 * librbd updates its option set), then rbdl_op_copy_to.  -EINVAL for the
 * flatten or clone_format options, -ENOSYS for unknown features, the
 * creation's errnos.
 */
int rbdl_op_copy(struct rbdl_image *src, rados_ioctx_t dest_io,
		 const char *destname, struct rbdl_opts *opts, size_t sparse,
		 rbdl_progress_fn cb, void *arg);

/*
 * The destination options of librbd::copy (deep false) and
 * api::Image::deep_copy (deep true), set in place where unset: format 2,
 * the source's stripe unit and count, order (also returned in *order)
 * and features.  -EINVAL for format 1 (deep copy only), -ENOSYS for
 * features librbd does not know.
 */
int rbdl_op_copy_opts(struct rbdl_image *src, struct rbdl_opts *opts,
		      bool deep, uint64_t *order);

/*
 * Whether a copy of src with options opts (unset features: the source's)
 * makes an image with journaling or a mirror image mode, which librbdlite
 * does not make (rbd_create4's need_real): the caller then has the
 * system's librbd run the whole copy.  src refreshed by the caller.
 */
bool rbdl_op_copy_dest_journaled(struct rbdl_image *src,
				 const struct rbdl_opts *opts);

/*
 * Write buf (dest's [off, off + len)) in chunks of gran bytes, runs of
 * consecutive non-zero chunks as one write each; runs of zero chunks as
 * one write-zeroes each if zero_holes, else not at all (librbd's
 * C_CopyRead with sparse_size gran).  0 or the first write's errno.
 */
int rbdl_op_write_runs(struct rbdl_image *dest, uint64_t off, char *buf,
		       size_t len, size_t gran, bool zero_holes);

/* librbd::copy(src, dest, prog_ctx, sparse_size): metadata and non-zero
 * data of src's view into dest; -EINVAL if dest is smaller. */
int rbdl_op_copy_to(struct rbdl_image *src, struct rbdl_image *dest,
		    size_t sparse, rbdl_progress_fn cb, void *arg);

/*
 * librbd's api::Image::deep_copy(src, dest_md_ctx, destname, opts,
 * prog_ctx) (deepcopy.c): a new image (a clone of the same parent unless
 * opts has the flatten option, which is consumed) with src's snapshots up
 * to its view, their data, sizes and protection, and src's metadata.
 * -EINVAL for format 1, -ENOSYS for unknown features, -EBUSY for a
 * migrating source, the creation's errnos.
 */
int rbdl_op_deep_copy(struct rbdl_image *src, rados_ioctx_t dest_io,
		      const char *destname, struct rbdl_opts *opts,
		      rbdl_progress_fn cb, void *arg);

#endif /* RBDL_OPS_COPY_H */
