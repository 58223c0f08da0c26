/*
 * writearound.h - librbd 16.2's write-around acknowledgement
 * (cache/WriteAroundObjectDispatch.cc), private to the data path: with
 * rbd_cache=true and rbd_cache_policy=writearound (both defaults) an aio
 * write, discard, write-zeroes or write-same is completed to the caller
 * as soon as all its object operations are handed to librados (or hold
 * their data: request.h), while the bytes acknowledged early and still in
 * flight stay within rbd_cache_max_dirty; from the application's first
 * flush on, when rbd_cache_writethrough_until_flush (the default).
 *
 * Each tracked request has a kind (fixed when it is built):
 *   WRITE  a write, discard, write-zeroes or write-same, not FUA (also
 *          a synchronous one, which returns early as in librbd: its data
 *          is copied where kept, request.h): it may be acknowledged
 *          early, and others wait for it;
 *   WAIT   a read, a compare-and-write or a FUA write: never acknowledged
 *          early, but waits for the tracked requests it overlaps (so
 *          read-after-write stays exact);
 *   NONE   nothing to do (write-around off, or write-through until the
 *          first flush: then every request is NONE, and tracking costs one
 *          relaxed load at submission).
 *
 * The life of a tracked request (rbdl_wa_begin in request.c's req_send,
 * rbdl_wa_end when its last object finished):
 *
 *               overlaps a tracked request        no overlap (WRITE)
 *   begin ---------------------------------> BLOCKED  ------+
 *     |  \                                     | released   |
 *     |   +-- no overlap (WAIT): GO, untracked |  when no   v
 *     |                                        |  overlap  IN FLIGHT
 *     +--------- no overlap (WRITE) -----------+----------> (early ack
 *                                                            if within
 *                                                            max_dirty)
 *   IN FLIGHT --(all objects done)--> end: untracked; an early-acked
 *                 error is kept for the next flush; blocked requests
 *                 that no longer overlap anything are released (in order)
 *
 * Overlap is by object extent, per object, as in librbd.  A request that
 * overlaps a blocked one waits behind it, so overlapping requests are
 * started in submission order.  Flushes need nothing from here: an
 * early-acknowledged request keeps its flush count (flush.h), its hold on
 * the exclusive lock and its reference on the image's delivery (close
 * waits for it) until its objects finished; a user flush takes the first
 * error of the early-acknowledged writes before it (rbdl_wa_take_error).
 *
 * Threading: rbdl_wa_begin runs on the submitter (or the thread that
 * resumed the request), rbdl_wa_end on the thread that finished it; both
 * take img->wa.mu.  A released request is started by rbdl_wa_end's
 * caller's thread, after mu is dropped.
 */
#ifndef RBDL_IO_WRITEAROUND_H
#define RBDL_IO_WRITEAROUND_H

#include <stdbool.h>
#include <sys/types.h>

#include "image/state.h"

enum rbdl_wa_kind {
	RBDL_WA_NONE,
	RBDL_WA_WRITE,
	RBDL_WA_WAIT,
};

/* What rbdl_wa_begin decided. */
enum {
	RBDL_WA_GO = 0,		/* start the request now */
	RBDL_WA_PARKED = 1,	/* blocked: rbdl_req_wa_go starts it later */
};

struct rbdl_req;

/* The kind of request req (its op, flags and completion set), for
 * req->wa_kind. */
enum rbdl_wa_kind rbdl_wa_classify(struct rbdl_image *img,
				   const struct rbdl_req *req);

/*
 * Admit req (wa_kind not NONE) before its objects are started: GO, PARKED
 * (its write data kept first when in_submit: request.h), or -ENOMEM.  For
 * a WRITE, sets req->wa_early when it may be acknowledged at once.
 */
int rbdl_wa_begin(struct rbdl_req *req, bool in_submit);

/* req, admitted by rbdl_wa_begin as GO (tracked) or released, finished
 * with rval: stop tracking it and start what it held back. */
void rbdl_wa_end(struct rbdl_req *req, ssize_t rval);

/* Complete req's completion now, acknowledged early; in_submit: inside
 * the submit call, so through the control context's callback lane (a
 * callback never runs inside the submitting call). */
void rbdl_wa_ack(struct rbdl_req *req, bool in_submit);

/* The application flushes (rbd_flush, rbd_aio_flush): write-around is on
 * from now, if it waited for the first flush. */
void rbdl_wa_user_flush(struct rbdl_image *img);

/* The first error of an early-acknowledged write since the last call
 * (0 if none), cleared: what a user flush reports. */
long rbdl_wa_take_error(struct rbdl_image *img);

#endif /* RBDL_IO_WRITEAROUND_H */
