/*
 * watch.c - the header watch and its subscribers (watch.h).
 *
 * Threading: watch_cb and watch_err_cb run on librados' watch thread and
 * never block; rbdl_watch_repair runs under refresh_lock; start and stop
 * run at open, rbd_snap_set and close.
 */
#include "config.h"

#include "watch.h"

#include <stdatomic.h>

static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle,
		     uint64_t notifier_id, void *data, size_t data_len)
{
	struct rbdl_image *img = arg;
	struct rbdl_notify_msg m;
	(void)notifier_id;

	/* Mark the header stale BEFORE acking a HEADER_UPDATE: the notifier
	 * (rbd snap create, rbd resize) returns once every watcher acked, and
	 * a write submitted after that must already see the refresh due.
	 * Release: pairs with the acquire in maybe_refresh. */
	bool ok = rbdl_decode_notify(data, data_len, &m) == 0;

	bool acked = false;

	if (!ok || m.op == RBDL_NOTIFY_HEADER_UPDATE)
		atomic_fetch_add_explicit(&img->refresh_seq, 1,
					  memory_order_release);
	/* Ack promptly, whatever it is: a peer waits for every watcher.
	 * A subscriber (the exclusive lock) may decide the reply. */
	for (unsigned i = 0; i < RBDL_WATCH_LISTENERS; i++) {
		/* Acquire: pairs with rbdl_watch_listen's release store. */
		const struct rbdl_watch_listener *l = atomic_load_explicit(
			&img->listeners[i], memory_order_acquire);

		if (l && l->notify(img, notify_id, handle, ok ? &m : NULL))
			acked = true;
	}
	if (!acked)
		rados_notify_ack(img->md_io, img->header_oid, notify_id,
				 handle, NULL, 0);
}

static void watch_err_cb(void *arg, uint64_t cookie, int err)
{
	struct rbdl_image *img = arg;
	(void)cookie;
	(void)err;

	/* Notifications may have been missed: re-watch and refresh on the
	 * next request (never block in this librados thread). */
	atomic_store_explicit(&img->watch_broken, true, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
}

void rbdl_watch_listen(struct rbdl_image *img, unsigned slot,
		       const struct rbdl_watch_listener *l)
{
	/* Release: the watch callback that loads it (acquire) sees what
	 * the subscriber set up before. */
	atomic_store_explicit(&img->listeners[slot], l, memory_order_release);
}

int rbdl_watch_start(struct rbdl_image *img)
{
	int r = rados_watch2(img->md_io, img->header_oid, &img->watch_cookie,
			     watch_cb, watch_err_cb, img);

	if (r == 0)
		img->watching = true;
	return r;
}

void rbdl_watch_stop(struct rbdl_image *img)
{
	if (!img->watching)
		return;
	rados_unwatch2(img->md_io, img->watch_cookie);
	/* No watch callback may still run with img. */
	rados_watch_flush(img->cluster);
	img->watching = false;
}

int rbdl_watch_repair(struct rbdl_image *img)
{
	uint64_t cookie;
	int r;

	if (!atomic_exchange_explicit(&img->watch_broken, false,
				      memory_order_relaxed) ||
	    !img->watching)
		return 0;
	rados_unwatch2(img->md_io, img->watch_cookie);
	img->watching = false;
	r = rados_watch2(img->md_io, img->header_oid, &cookie, watch_cb,
			 watch_err_cb, img);
	if (r < 0) {
		atomic_store(&img->watch_broken, true);
		return r;
	}
	for (unsigned i = 0; i < RBDL_WATCH_LISTENERS; i++) {
		const struct rbdl_watch_listener *l = atomic_load_explicit(
			&img->listeners[i], memory_order_acquire);

		if (l && l->rewatched)
			l->rewatched(img, cookie);
	}
	img->watch_cookie = cookie;
	img->watching = true;
	return 0;
}
