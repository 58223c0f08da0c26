/*
 * quiesce.h - rbd_quiesce_watch / rbd_quiesce_unwatch /
 * rbd_quiesce_complete (quiesce.c).
 *
 * Role: when another client snapshots the image (librbd's
 * SnapshotCreateRequest, e.g. `rbd snap create`), it first sends a QUIESCE
 * header notification and waits for every watcher's answer.  An open
 * image with quiesce watchers calls each watcher's quiesce callback and
 * answers the notification only once every callback was matched by an
 * rbd_quiesce_complete; the answer carries the result (a negative one
 * makes the snapshot fail unless the snapshotter ignores quiesce errors).
 * UNQUIESCE (or, as in librbd, 10 s without it) calls every watcher's
 * unquiesce callback.  A retried QUIESCE (the
 * notifier retries after its 5 s timeout, with the same request id) is
 * recognised: the pending answer moves to the new notification, or a
 * finished request's result is answered again.  Without a registered
 * watcher the notification is answered at once (0), as librbd does.
 *
 * Only images that watch their header receive the notifications (librbd:
 * read-write opens); quiesce callbacks of other opens are never called,
 * as with librbd.
 *
 * Threading: the callbacks run in a quiesce task per image (set up by the
 * first rbd_quiesce_watch) on the control context's callback lane
 * (core/ctl.h), in registration order, never on a librados thread and
 * with no librbdlite lock held; rbd_quiesce_complete may be called from a
 * callback or from any other thread.  The header watch's callback only
 * records the request and kicks the task.
 *
 * Ownership: img->qw is allocated by the first rbd_quiesce_watch and freed
 * by rbdl_quiesce_shutdown at close, after the header watch stopped.
 */
#ifndef RBDL_IMAGE_QUIESCE_H
#define RBDL_IMAGE_QUIESCE_H

#include <stdint.h>

struct rbdl_image;

/* rbd_quiesce_watch: register (quiesce_cb, unquiesce_cb, arg); *handle is
 * the new handle (opaque, never 0, as librbd's).  0 or -ENOMEM/-EAGAIN. */
int rbdl_quiesce_register(struct rbdl_image *img, void (*quiesce_cb)(void *),
			  void (*unquiesce_cb)(void *), void *arg,
			  uint64_t *handle);
/* rbd_quiesce_unwatch: -ENOENT for an unknown handle.  While a quiesce or
 * unquiesce round runs, waits (as librbd does) until the round that
 * follows the unquiesce has ended. */
int rbdl_quiesce_unregister(struct rbdl_image *img, uint64_t handle);
/* rbd_quiesce_complete: one watcher's answer to the quiesce callback. */
void rbdl_quiesce_complete(struct rbdl_image *img, uint64_t handle, int r);
/* Close: stop the thread, free img->qw (NULL: nothing). */
void rbdl_quiesce_shutdown(struct rbdl_image *img);

#endif /* RBDL_IMAGE_QUIESCE_H */
