/*
 * real.h - the system's librbd, for the calls librbdlite forwards to it
 * (real.c; the forwarding entry points are rbd_delegated.c).
 *
 * librbdlite implements the data path and the everyday control plane
 * itself; the pool-level long tail (trash, groups, mirroring, migration,
 * namespaces, pool metadata and statistics) is forwarded to the real
 * librbd.  Only librados objects (rados_ioctx_t), strings and plain
 * structs ever cross: an image-level forwarded call runs on a short-lived
 * real-librbd handle of the same image, and librbdlite's image options are
 * copied into a real options object first.
 *
 * Threading: every function may be called from any thread.  The library
 * is chosen once; the real handles are private to one call.
 */
#ifndef RBDL_API_REAL_H
#define RBDL_API_REAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rbd/librbd.h"

struct rbdl_image;

/*
 * The real librbd's definition of function name, or NULL when no real
 * librbd can be loaded; then a one-line "librbdlite:" diagnostic naming
 * the function is printed the first time *warned is seen clear.
 */
void *rbdl_real_sym(const char *name, atomic_int *warned);

/*
 * Open a real-librbd handle of img's image (by id, on img's I/O context,
 * read-only if img is, at img's snapshot if it is at one).  If img holds
 * the exclusive lock, the real handle asks for it through the normal
 * request-lock notification when it needs it.  0 or negative errno.
 */
int rbdl_real_image_open(struct rbdl_image *img, const char *fn,
			 rbd_image_t *out);

/* The same, read-only if read_only: librbd 16.2 neither watches the header
 * nor takes the lock from a read-only open. */
int rbdl_real_image_open2(struct rbdl_image *img, const char *fn,
			  bool read_only, rbd_image_t *out);

/* A read-write real handle of img's image at HEAD, whatever img's view
 * (a journaled image's, api/journaled.c). */
int rbdl_real_image_open_head(struct rbdl_image *img, const char *fn,
			      rbd_image_t *out);

/* img's long-lived real handle (a journaled image's, api/journaled.c) if
 * it has one and its view is read-write HEAD, else NULL; after using it,
 * rbdl_real_image_done() makes img re-read its header. */
rbd_image_t rbdl_real_image_shared(struct rbdl_image *img);
void rbdl_real_image_done(struct rbdl_image *img);

/* A real handle for an image-level call on img: the shared one if img has
 * one, else a short-lived one (rbdl_real_image_open); *shared says which.
 * Give it back with rbdl_real_image_put(), which also makes img re-read
 * its header.  0 or negative errno. */
int rbdl_real_image_get(struct rbdl_image *img, const char *fn,
			rbd_image_t *out, bool *shared);
void rbdl_real_image_put(struct rbdl_image *img, rbd_image_t h, bool shared);

/* Close a handle of rbdl_real_image_open() and make img re-read its
 * header before its next operation (the call may have changed it). */
void rbdl_real_image_close(struct rbdl_image *img, rbd_image_t real);

/* len, cut so that the real librbd can add it to off without wrapping
 * past 2^64 (it would then hang or abort; librbdlite clips at the end). */
static inline uint64_t rbdl_real_len(uint64_t off, uint64_t len)
{
	return len > UINT64_MAX - off ? UINT64_MAX - off : len;
}

/* The real librbd calls a progress callback without checking it for NULL
 * (librbdlite's calls accept NULL): what to hand it for cb. */
int rbdl_real_no_progress(uint64_t offset, uint64_t total, void *arg);
#define RBDL_REAL_PROGRESS(cb) ((cb) ? (cb) : rbdl_real_no_progress)

/*
 * A real-librbd copy of librbdlite's image options opts (NULL stays NULL).
 * 0 or negative errno; free *out with rbdl_real_opts_free().
 */
int rbdl_real_opts_copy(rbd_image_options_t opts, const char *fn,
			rbd_image_options_t *out);
void rbdl_real_opts_free(rbd_image_options_t real_opts);

/*
 * The forwarding bodies.  FN is the exported function, whose own
 * prototype gives the pointer's type.  RBDL_FORWARD returns -EOPNOTSUPP
 * when there is no real librbd; RBDL_FORWARD_VOID then does nothing.
 */
#define RBDL_REAL_FN(fn)                                                 \
	__extension__({                                                  \
		static atomic_int warned_;                               \
		(__typeof__(&fn))rbdl_real_sym(#fn, &warned_);           \
	})

/* The same without the diagnostic: for callers that say themselves what
 * cannot be done without a real librbd (journaled.c, whole.c). */
#define RBDL_REAL_FN_QUIET(fn)                                           \
	__extension__({                                                  \
		static atomic_int quiet_ = 1;                            \
		(__typeof__(&fn))rbdl_real_sym(#fn, &quiet_);            \
	})

#define RBDL_FORWARD(fn, ...)                                            \
	do {                                                             \
		__typeof__(&fn) real_ = RBDL_REAL_FN(fn);                \
		if (!real_)                                              \
			return -EOPNOTSUPP;                              \
		return real_(__VA_ARGS__);                               \
	} while (0)

/*
 * RBDL_FORWARD with librbdlite's image options opts copied into a real
 * options object first; the copy is named real_opts_ in the arguments,
 * e.g. RBDL_FORWARD_OPTS(rbd_create4, opts, io, name, size, real_opts_).
 */
#define RBDL_FORWARD_OPTS(fn, opts, ...)                                 \
	do {                                                             \
		__typeof__(&fn) real_ = RBDL_REAL_FN(fn);                \
		rbd_image_options_t real_opts_;                          \
		int r_;                                                  \
		if (!real_)                                              \
			return -EOPNOTSUPP;                              \
		r_ = rbdl_real_opts_copy(opts, #fn, &real_opts_);        \
		if (r_ < 0)                                              \
			return r_;                                       \
		r_ = real_(__VA_ARGS__);                                 \
		rbdl_real_opts_free(real_opts_);                         \
		return r_;                                               \
	} while (0)

#define RBDL_FORWARD_VOID(fn, ...)                                       \
	do {                                                             \
		__typeof__(&fn) real_ = RBDL_REAL_FN(fn);                \
		if (real_)                                               \
			real_(__VA_ARGS__);                              \
	} while (0)

/*
 * An image-level call: on the real handle a journaled image's I/O runs on
 * (api/journaled.c), when it has one and the view is read-write HEAD (no
 * lock changes hands within the process), else on a short-lived real
 * handle of image's image.  A
 * handle that librbdlite never made is passed through unchanged: it is the
 * real librbd's own, reaching us because the real librbd calls some of its
 * exported functions itself (they bind to ours first), e.g.
 * rbd_mirror_image_enable() calling rbd_mirror_image_enable2().
 */
#define RBDL_FORWARD_IMAGE(fn, image, ...)                               \
	do {                                                             \
		__typeof__(&fn) real_ = RBDL_REAL_FN(fn);                \
		struct rbdl_image *img_ = rbdl_image_from_user(image);   \
		rbd_image_t h_;                                          \
		bool shared_;                                            \
		int r_;                                                  \
		if (!img_) {                                             \
			if (!image || rbdl_image_handle_known(image))    \
				return -EINVAL;                          \
			if (!real_)                                      \
				return -EOPNOTSUPP;                      \
			return real_(image __VA_OPT__(, ) __VA_ARGS__);  \
		}                                                        \
		if (!real_)                                              \
			return -EOPNOTSUPP;                              \
		r_ = rbdl_real_image_get(img_, #fn, &h_, &shared_);      \
		if (r_ < 0)                                              \
			return r_;                                       \
		r_ = real_(h_ __VA_OPT__(, ) __VA_ARGS__);               \
		rbdl_real_image_put(img_, h_, shared_);                  \
		return r_;                                               \
	} while (0)

#endif /* RBDL_API_REAL_H */
