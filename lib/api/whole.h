/*
 * whole.h - images the system's librbd serves whole (whole.c).
 *
 * Two kinds of image have no native open in librbdlite: format 1 images
 * and the destination of a migration from an import source spec (until
 * it is executed).  rbd_open* of one gives the caller a handle of ours
 * (magic RBDL_HANDLE_WHOLE, image/state.h) holding the system's librbd's
 * handle of the image; every image-level entry point starts with one of
 * the RBDL_ON_WHOLE macros below, which run the real function on that
 * handle.  Only the real librbd's own objects cross: an aio call gets a
 * real completion whose callback completes ours, delivered through the
 * handle's own delivery (so rbd_poll_io_events works as for our images);
 * options are copied into real option objects.  Without a system librbd
 * such an open fails as before (-EOPNOTSUPP, -ENOSYS).
 *
 * Threading: as the calls themselves (librbd's handles are thread-safe);
 * the handle's fields are immutable from its publication (release store
 * of the magic) to its close.
 */
#ifndef RBDL_API_WHOLE_H
#define RBDL_API_WHOLE_H

#include <stdbool.h>

#include "api/real.h"
#include "core/completion.h"
#include "image/state.h"

struct rbdl_handle;

struct rbdl_whole {
	rbd_image_t real;		/* the system's librbd's handle */
	struct rbdl_delivery dl;	/* our completions of its aio calls */
	rados_ioctx_t defer_io;		/* answers given here (never writes) */
};

/*
 * After a native open of (name or id, snap_name, read_only) in io failed
 * with err: if the image is one the system's librbd serves whole, open it
 * there and return 0 with *out a whole handle; else return err.
 */
int rbdl_whole_open(rados_ioctx_t io, const char *name, const char *id,
		    const char *snap_name, bool read_only, int err,
		    struct rbdl_handle **out);

/* rbd_close of a whole handle: the real close's value; -EINVAL if image
 * is not an open whole handle. */
int rbdl_whole_close(void *image);

/*
 * Arm our completion c on w's delivery and make the real completion *rc
 * that completes it.  0, or -EINVAL (c is not an idle completion of ours),
 * -EOPNOTSUPP (no real librbd), -ENOMEM.  If the real call then refuses
 * the request (returns < 0), give it back with rbdl_whole_comp_drop.
 */
int rbdl_whole_comp(struct rbdl_whole *w, rbd_completion_t c,
		    rbd_completion_t *rc);
void rbdl_whole_comp_drop(rbd_completion_t c, rbd_completion_t rc);

/*
 * An I/O request of ours (validated as for our images) on a whole handle:
 * rbdl_whole_io arms our completion c and completes it with the real
 * request's value (0, or -EINVAL for a completion already used);
 * rbdl_whole_io_sync is the synchronous call's value.  What would crash
 * or hang the real librbd is answered here first (journaled.h's
 * rbdl_real_io_sanitize), as for a journaled image.
 */
struct rbdl_comp;
struct rbdl_io_args;
int rbdl_whole_io(struct rbdl_whole *w, struct rbdl_comp *c,
		  const struct rbdl_io_args *a);
ssize_t rbdl_whole_io_sync(struct rbdl_whole *w,
			   const struct rbdl_io_args *a);

/*
 * RBDL_ON_WHOLE(fn, image, args...): at the top of an entry point taking
 * an image: on a whole handle, the entry point's value is the real fn's
 * on its real handle (the other arguments as given): real.h's
 * RBDL_FORWARD, which names deprecated functions too
 * (rbd_get_parent_info).
 */
#define RBDL_ON_WHOLE(fn, image, ...)                                    \
	do {                                                             \
		struct rbdl_whole *w_ = rbdl_whole_from_user(image);     \
		if (__builtin_expect(w_ != NULL, 0)) {                   \
			_Pragma("GCC diagnostic push")                   \
			_Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"") \
			RBDL_FORWARD(fn, w_->real __VA_OPT__(, ) __VA_ARGS__); \
			_Pragma("GCC diagnostic pop")                    \
		}                                                        \
	} while (0)

/* The same for a function returning nothing (RBDL_FORWARD_VOID). */
#define RBDL_ON_WHOLE_VOID(fn, image, ...)                               \
	do {                                                             \
		struct rbdl_whole *w_ = rbdl_whole_from_user(image);     \
		if (__builtin_expect(w_ != NULL, 0)) {                   \
			RBDL_FORWARD_VOID(fn, w_->real __VA_OPT__(, ) __VA_ARGS__); \
			return;                                          \
		}                                                        \
	} while (0)

/*
 * An aio call other than I/O (whose requests go through rbdl_whole_io): c
 * is our completion; in the argument list, WHOLE_RC stands where the
 * completion goes, e.g.
 * RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_demote, image, c, WHOLE_RC).
 */
#define RBDL_ON_WHOLE_AIO(fn, image, c, ...)                             \
	do {                                                             \
		struct rbdl_whole *w_ = rbdl_whole_from_user(image);     \
		if (__builtin_expect(w_ != NULL, 0)) {                   \
			__typeof__(&fn) real_ = RBDL_REAL_FN(fn);        \
			rbd_completion_t WHOLE_RC;                       \
			int r_;                                          \
			if (!real_)                                      \
				return -EOPNOTSUPP;                      \
			r_ = rbdl_whole_comp(w_, c, &WHOLE_RC);          \
			if (r_ < 0)                                      \
				return r_;                               \
			r_ = (int)real_(w_->real, __VA_ARGS__);          \
			if (r_ < 0)                                      \
				rbdl_whole_comp_drop(c, WHOLE_RC);       \
			return r_;                                       \
		}                                                        \
	} while (0)

/*
 * A call taking image options: real.h's RBDL_FORWARD_OPTS, opts being
 * ours; in the argument list, real_opts_ stands where the options go (a
 * real copy of them).
 */
#define RBDL_ON_WHOLE_OPTS(fn, image, opts, ...)                         \
	do {                                                             \
		struct rbdl_whole *w_ = rbdl_whole_from_user(image);     \
		if (__builtin_expect(w_ != NULL, 0))                     \
			RBDL_FORWARD_OPTS(fn, opts, w_->real, __VA_ARGS__); \
	} while (0)

#endif /* RBDL_API_WHOLE_H */
