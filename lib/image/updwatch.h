/*
 * updwatch.h - rbd_update_watch / rbd_update_unwatch (updwatch.c).
 *
 * Role: call the application back whenever the image header changed
 * (another client's or our own HEADER_UPDATE notification: resize,
 * snapshots, features, ...; and after the header watch was lost and
 * re-established, when notifications may have been missed), as librbd's
 * ImageUpdateWatchers do.
 *
 * Threading: callbacks run in a notifier task per image (set up by the
 * first rbd_update_watch) on the control context's callback lane
 * (core/ctl.h), shared by every open image: never on a librados or I/O
 * thread and with no librbdlite lock held, so a callback may call any
 * rbd_* function on the image except rbd_close (synchronous ones too: the
 * work they wait for runs on the other lane).  One callback per registered watcher per
 * notification, in registration order.  rbd_update_unwatch waits for a
 * running callback of that handle (unless called from a callback).
 *
 * Ownership: registrations belong to the image; unwatch frees one, close
 * frees those left.  The callback argument stays the caller's.
 */
#ifndef RBDL_UPDWATCH_H
#define RBDL_UPDWATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/ctl.h"

struct rbdl_image;
struct rbdl_updw_ent;

struct rbdl_updwatch {
	pthread_mutex_t mu;		/* everything below */
	pthread_cond_t cv;
	struct rbdl_ctl_task task;	/* the notifier (callback lane) */
	bool task_live;			/* set up, not retired */
	bool stop;
	pthread_t cb_thread;		/* runs the callback in_cb */
	struct rbdl_updw_ent *list;	/* ascending handles */
	uint64_t next_handle;
	unsigned pending;		/* notifications to dispatch */
	uint64_t in_cb;			/* in a callback, or 0 */
	bool own_watch;			/* our own header watch */
	uint64_t own_cookie;
};

/* Allocate img->uw and subscribe to the header watch (open). */
int rbdl_updw_init(struct rbdl_image *img);
/* Close: unwatch, retire the notifier task, drop remaining registrations, free
 * img->uw (after the header watch stopped).  NULL: nothing. */
void rbdl_updw_shutdown(struct rbdl_image *img);

int rbdl_updw_register(struct rbdl_image *img, uint64_t *handle,
		       void (*cb)(void *), void *arg);
int rbdl_updw_unregister(struct rbdl_image *img, uint64_t handle);

#endif /* RBDL_UPDWATCH_H */
