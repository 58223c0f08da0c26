/*
 * updwatch.c - update watchers: see updwatch.h for role and threading.
 *
 * The header watch callback (librados' thread) only bumps `pending` under
 * mu and kicks the image's notifier task (the control context's callback
 * lane, core/ctl.h); the task takes one notification at a time and calls
 * every watcher registered at that point, dropping mu around each call,
 * until none is pending.  Handles only grow and the list is kept ascending, so after a call
 * the walk resumes at the first handle above the one just called, which
 * stays correct when watchers come and go meanwhile.
 *
 * Read-write HEAD opens already watch the header (image.c forwards its
 * HEADER_UPDATEs here).  Read-only and snapshot opens do not; for them the
 * first registration adds a header watch of our own that only acks and
 * forwards, so their metadata is untouched (a snapshot stays a snapshot).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "core/ctl.h"
#include "proto/notify.h"
#include "state.h"
#include "watch.h"
#include "core/internal.h"
#include "updwatch.h"

struct rbdl_updw_ent {
	struct rbdl_updw_ent *next;
	uint64_t handle;
	void (*cb)(void *);
	void *arg;
};

static const struct rbdl_watch_listener updw_listener;

int rbdl_updw_init(struct rbdl_image *img)
{
	struct rbdl_updwatch *uw = calloc(1, sizeof(*uw));

	if (!uw)
		return -ENOMEM;
	img->uw = uw;
	pthread_mutex_init(&uw->mu, NULL);
	pthread_cond_init(&uw->cv, NULL);
	uw->task_live = uw->stop = uw->own_watch = false;
	uw->list = NULL;
	uw->next_handle = 1;
	uw->pending = 0;
	uw->in_cb = 0;
	rbdl_watch_listen(img, RBDL_WATCH_SLOT_UPDATES, &updw_listener);
	return 0;
}

static void updw_notify(struct rbdl_image *img)
{
	struct rbdl_updwatch *uw = img->uw;

	pthread_mutex_lock(&uw->mu);
	if (uw->list && uw->task_live) {
		uw->pending++;
		rbdl_ctl_kick(&uw->task);
	}
	pthread_mutex_unlock(&uw->mu);
}

static void notifier(struct rbdl_ctl_task *t)
{
	struct rbdl_updwatch *uw = container_of(t, struct rbdl_updwatch, task);

	pthread_mutex_lock(&uw->mu);
	while (uw->pending && !uw->stop) {
		uw->pending--;
		uint64_t last = 0;

		for (;;) {
			struct rbdl_updw_ent *e = uw->list;

			while (e && e->handle <= last)
				e = e->next;
			if (!e || uw->stop)
				break;
			void (*cb)(void *) = e->cb;
			void *cbarg = e->arg;

			last = e->handle;
			uw->in_cb = last;
			uw->cb_thread = pthread_self();
			pthread_mutex_unlock(&uw->mu);
			cb(cbarg);
			pthread_mutex_lock(&uw->mu);
			uw->in_cb = 0;
			pthread_cond_broadcast(&uw->cv);
		}
	}
	pthread_mutex_unlock(&uw->mu);
}

static void own_watch_cb(void *arg, uint64_t notify_id, uint64_t handle,
			 uint64_t notifier_id, void *data, size_t data_len)
{
	struct rbdl_image *img = arg;
	struct rbdl_notify_msg m;
	(void)notifier_id;

	if (rbdl_decode_notify(data, data_len, &m) < 0 ||
	    m.op == RBDL_NOTIFY_HEADER_UPDATE)
		updw_notify(img);
	rados_notify_ack(img->md_io, img->header_oid, notify_id, handle, NULL,
			 0);
}

static void own_watch_err(void *arg, uint64_t cookie, int err)
{
	(void)cookie;
	(void)err;
	/* Notifications may have been lost: tell the watchers. */
	updw_notify(arg);
}

/* The image's own header watch (watch.h) saw a notification. */
static bool updw_on_notify(struct rbdl_image *img, uint64_t notify_id,
			   uint64_t handle, const struct rbdl_notify_msg *m)
{
	(void)notify_id;
	(void)handle;
	if (!m || m->op == RBDL_NOTIFY_HEADER_UPDATE)
		updw_notify(img);
	return false;	/* the watch acks it */
}

/* Updates may have been missed while the header was unwatched. */
static void updw_on_rewatched(struct rbdl_image *img, uint64_t new_handle)
{
	(void)new_handle;
	updw_notify(img);
}

static const struct rbdl_watch_listener updw_listener = {
	.notify = updw_on_notify,
	.rewatched = updw_on_rewatched,
};

int rbdl_updw_register(struct rbdl_image *img, uint64_t *handle,
		       void (*cb)(void *), void *arg)
{
	struct rbdl_updwatch *uw = img->uw;
	struct rbdl_updw_ent *e = calloc(1, sizeof(*e)), **pp;
	int r = 0;

	if (!e)
		return -ENOMEM;
	pthread_mutex_lock(&uw->mu);
	if (!uw->task_live) {
		rbdl_ctl_task_init(&uw->task, RBDL_CTL_CALLBACK, notifier);
		uw->task_live = true;
	}
	if (!img->watching && !uw->own_watch) {
		r = rados_watch2(img->md_io, img->header_oid, &uw->own_cookie,
				 own_watch_cb, own_watch_err, img);
		if (r < 0)
			goto out;
		uw->own_watch = true;
	}
	e->handle = uw->next_handle++;
	e->cb = cb;
	e->arg = arg;
	for (pp = &uw->list; *pp; pp = &(*pp)->next)
		;
	*pp = e;
	*handle = e->handle;
	e = NULL;
out:
	pthread_mutex_unlock(&uw->mu);
	free(e);
	return r;
}

int rbdl_updw_unregister(struct rbdl_image *img, uint64_t handle)
{
	struct rbdl_updwatch *uw = img->uw;
	struct rbdl_updw_ent **pp, *e = NULL;

	pthread_mutex_lock(&uw->mu);
	for (pp = &uw->list; *pp; pp = &(*pp)->next) {
		if ((*pp)->handle == handle) {
			e = *pp;
			*pp = e->next;
			break;
		}
	}
	/* A callback of this handle may be running: wait for it, unless we
	 * are that callback. */
	if (e)
		while (uw->in_cb == handle &&
		       !pthread_equal(pthread_self(), uw->cb_thread))
			pthread_cond_wait(&uw->cv, &uw->mu);
	pthread_mutex_unlock(&uw->mu);
	if (!e)
		return -ENOENT;
	free(e);
	return 0;
}

void rbdl_updw_shutdown(struct rbdl_image *img)
{
	struct rbdl_updwatch *uw = img->uw;

	if (!uw)
		return;

	if (uw->own_watch) {
		rados_unwatch2(img->md_io, uw->own_cookie);
		rados_watch_flush(img->cluster);
		uw->own_watch = false;
	}
	pthread_mutex_lock(&uw->mu);
	uw->stop = true;
	bool live = uw->task_live;

	uw->task_live = false;	/* no kicks from here on */
	pthread_cond_broadcast(&uw->cv);
	pthread_mutex_unlock(&uw->mu);
	if (live)
		rbdl_ctl_task_retire(&uw->task);	/* waits for a callback */
	while (uw->list) {
		struct rbdl_updw_ent *e = uw->list;

		uw->list = e->next;
		free(e);
	}
	pthread_cond_destroy(&uw->cv);
	pthread_mutex_destroy(&uw->mu);
	/* The header watch is gone (close stops it first): nothing calls
	 * the listener any more. */
	img->uw = NULL;
	free(uw);
}
