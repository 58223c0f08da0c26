/*
 * journaled.h - image-level calls on a journaled image, run by the
 * system's librbd on the image's real handle (journaled.c).
 *
 * librbd appends an event to the journal for every operation that changes
 * a journaled image (snapshots, resize, flatten, features, metadata, ...),
 * so that rbd-mirror replays it; librbdlite's own operations append
 * nothing.  An entry point that changes the image therefore starts with
 * RBDL_ON_JOURNAL: on a read-write open of an image that has journaling
 * (as of a refresh now), the call is the real librbd's on the image's
 * real handle, at HEAD, the one its I/O runs on; otherwise, or without a
 * real librbd, it is librbdlite's, which refuses such an image with
 * -EROFS.
 *
 * Threading: as the calls themselves; the real handle is shared with the
 * image's I/O (librbd's handles are thread-safe).
 */
#ifndef RBDL_API_JOURNALED_H
#define RBDL_API_JOURNALED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/real.h"

/*
 * Whether img's call goes to its real handle: 1 with *out set (the handle
 * is opened now if it has none), 0 for librbdlite's own, or a negative
 * errno from the refresh.  any_view: also when img's view is a snapshot
 * (the calls librbd allows there: snapshot creation, removal, rename,
 * protection, the limit); otherwise a snapshot view keeps librbdlite's
 * own answer (-EROFS or -EINVAL, as librbd's).
 */
int rbdl_journal_route(struct rbdl_image *img, bool any_view,
		       rbd_image_t *out);
/* After a call routed to the real handle: img's view follows what the
 * call changed before it returns (a refresh now), as a librbd handle's
 * own operation leaves it refreshed; a snapshot the call removed from
 * under img's view is gone for img's next request. */
void rbdl_journal_routed_done(struct rbdl_image *img);

#define RBDL_ON_JOURNAL_(any_view, fn, img, ...)                         \
	do {                                                             \
		rbd_image_t jh_;                                         \
		int jr_ = rbdl_journal_route(img, any_view, &jh_);       \
		if (jr_ < 0)                                             \
			return jr_;                                      \
		if (jr_ > 0) {                                           \
			__typeof__(&fn) real_ = RBDL_REAL_FN(fn);        \
			if (!real_)                                      \
				return -EROFS;                           \
			jr_ = real_(jh_ __VA_OPT__(, ) __VA_ARGS__);     \
			rbdl_journal_routed_done(img);                   \
			return jr_;                                      \
		}                                                        \
	} while (0)

/* RBDL_ON_JOURNAL(fn, img, args...): at the top of an entry point that
 * changes the image, after its argument checks. */
#define RBDL_ON_JOURNAL(fn, img, ...)                                    \
	RBDL_ON_JOURNAL_(false, fn, img __VA_OPT__(, ) __VA_ARGS__)
#define RBDL_ON_JOURNAL_ANY_VIEW(fn, img, ...)                           \
	RBDL_ON_JOURNAL_(true, fn, img __VA_OPT__(, ) __VA_ARGS__)

/*
 * Running librbdlite's I/O requests on a real librbd handle, shared by a
 * journaled image's I/O and the images the system's librbd serves whole
 * (api/whole.h).
 *
 * rbdl_real_io_sanitize: make t safe for librbd on an image of size bytes
 * (see journaled.c); 1 to run it, 0 when it is answered here with *rval.
 * *cut, if set, is a cut copy of a writev's iovec array, to free once
 * librbd has taken the data.
 * rbdl_real_io_aio: start (sanitized) a on real handle h for our armed
 * completion c, which the real completion's callback completes; 0, or a
 * negative errno to complete c with (c is then not used).
 * rbdl_real_io_sync: the real synchronous call; its value.
 * rbdl_real_comp_make: a real completion *rc whose callback completes our
 * (armed) completion c with its value (0, -EOPNOTSUPP without a real
 * librbd, -ENOMEM); rbdl_real_comp_release gives back one the real call
 * did not take.
 */
struct rbdl_comp;
struct rbdl_io_args;
struct iovec;
int rbdl_real_io_sanitize(uint64_t size, struct rbdl_io_args *t,
			  struct iovec **cut, ssize_t *rval);
int rbdl_real_io_aio(rbd_image_t h, struct rbdl_comp *c,
		     const struct rbdl_io_args *a);
ssize_t rbdl_real_io_sync(rbd_image_t h, const struct rbdl_io_args *a);
int rbdl_real_comp_make(struct rbdl_comp *c, rbd_completion_t *rc);
void rbdl_real_comp_release(rbd_completion_t rc);

#endif /* RBDL_API_JOURNALED_H */
