/*
 * watch.h - the header watch of a read-write image (watch.c) and the
 * subscribers to its notifications.
 *
 * Role: librbd watches the header of every read-write open; a
 * HEADER_UPDATE (or any payload librbdlite cannot decode) marks the
 * metadata stale (refresh_seq) before it is acked, so that a write
 * submitted after the notifier returned sees the refresh due.  The
 * notification is then offered to each subscriber in turn: the update
 * watchers (updwatch.h) call the application back, and the exclusive
 * lock (lock.h) answers lock requests and may ack the notification
 * itself; a notification nobody acked is acked empty at once, because the
 * notifier waits for every watcher.
 *
 * A subscriber is a struct of function pointers registered with
 * rbdl_watch_listen before the image is shared (or, once shared, before
 * it starts to matter: the lock set up again by rbd_snap_set), so that
 * this module knows none of its subscribers and depends on none of them.
 *
 * Threading: the callbacks run on librados' watch thread and must not
 * block; rewatched runs on the refreshing thread under refresh_lock.
 */
#ifndef RBDL_IMAGE_WATCH_H
#define RBDL_IMAGE_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/notify.h"
#include "state.h"

struct rbdl_watch_listener {
	/* A notification: m is NULL when its payload did not decode (it
	 * then counts as a header update).  Return true if the callback
	 * acked it (rados_notify_ack) itself. */
	bool (*notify)(struct rbdl_image *img, uint64_t notify_id,
		       uint64_t handle, const struct rbdl_notify_msg *m);
	/* The watch was lost and registered again with new_handle
	 * (notifications may have been missed meanwhile). */
	void (*rewatched)(struct rbdl_image *img, uint64_t new_handle);
};

/* Subscribe l in slot (a later call for the same slot replaces it); l
 * must outlive the image.  Slots are called in this order. */
#define RBDL_WATCH_SLOT_UPDATES 0	/* rbd_update_watch callbacks */
#define RBDL_WATCH_SLOT_LOCK 1		/* the exclusive lock */
#define RBDL_WATCH_SLOT_QUIESCE 2	/* rbd_quiesce_watch (quiesce.h) */
void rbdl_watch_listen(struct rbdl_image *img, unsigned slot,
		       const struct rbdl_watch_listener *l);

/* Register the header watch (rados_watch2).  0 or a negative errno. */
int rbdl_watch_start(struct rbdl_image *img);
/* Unregister it and wait until no callback of it runs any more (close). */
void rbdl_watch_stop(struct rbdl_image *img);
/* If the watch broke, register it again and tell the subscribers (with
 * refresh_lock held).  0, or the watch error (the watch then stays marked
 * broken and the next refresh tries again). */
int rbdl_watch_repair(struct rbdl_image *img);

#endif /* RBDL_IMAGE_WATCH_H */
