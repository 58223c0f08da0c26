/*
 * open.c - rbd_open and rbd_close of a user's image, and rbd_snap_set.
 *
 * Open follows librbd's OpenRequest/RefreshRequest: the shared load
 * (load.h: id, header, snapshot), what backs a clone (parent.h), then for
 * a read-write open of HEAD the write context and the header watch
 * (watch.h), the object map (objmap.h) and the exclusive lock (lock.h),
 * and finally the settings the data path applies (refresh.h).  Close
 * undoes it in reverse after the image's I/O drained.
 *
 * Threading and ownership: synchronous on the caller's thread; an open
 * image holds a reference on the control context (core/ctl.h), whose
 * threads run its lock and callback tasks.  Handles
 * are allocated here and never freed (state.h): a closed handle stays
 * recognisable.
 */
#include "config.h"

#include "open.h"
#include "stamps.h"

#include "core/cipher.h"
#include "core/ctl.h"
#include "core/slab.h"
#include "journal.h"
#include "load.h"
#include "lock.h"
#include "objmap.h"
#include "parent.h"
#include "quiesce.h"
#include "proto/cls_rbd.h"
#include "refresh.h"
#include "updwatch.h"
#include "watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rbdl_handle *handles;

/* What a read-write open of HEAD has beyond the shared load: a write
 * context with the snapshot context, and the header watch (librbd
 * watches the header of every read-write open). */
static int make_writable(struct rbdl_image *img)
{
	rados_ioctx_t wio;
	int r = rbdl_image_write_ioctx(img, img->snap_seq, img->snaps,
				       img->nsnaps, &wio);

	if (r < 0)
		return r;
	atomic_init(&img->wr_io, wio);
	return rbdl_watch_start(img);
}

const struct rbdl_journal_io *rbdl_journal_io;

void rbdl_journal_close(struct rbdl_image *img)
{
	void *h = atomic_exchange_explicit(&img->journal_h, NULL,
					   memory_order_acquire);

	if (h)
		rbdl_journal_io->close(h);
}

/* Undo rbdl_image_open (or a part of it) once no I/O is in flight. */
static void image_close(struct rbdl_image *img)
{
	rbdl_journal_close(img);	/* first: it may hold the lock */
	rbdl_lock_shutdown(img);	/* releases the lock if we hold it */
	rbdl_watch_stop(img);
	rbdl_quiesce_shutdown(img);	/* after the watch: no callback left */
	rbdl_updw_shutdown(img);
	rbdl_parent_close(img);
	rbdl_objmap_destroy(img);
	rbdl_lock_free(img);
	rbdl_crypt_free(atomic_load_explicit(&img->crypt,
					     memory_order_relaxed));
	rbdl_image_free(img);
	rbdl_ctl_put();		/* rbdl_image_open's: the last joins its threads */
}

/* An image opened at a snapshot comes back to HEAD writable (librbd):
 * give it what a read-write open has.  Called with maint_mu held. */
static int become_writable(struct rbdl_image *img)
{
	rados_ioctx_t wio;
	int r;

	pthread_mutex_lock(&img->refresh_lock);
	r = rbdl_image_write_ioctx(img, img->snap_seq, img->snaps, img->nsnaps,
				   &wio);
	if (r == 0)
		atomic_store_explicit(&img->wr_io, wio, memory_order_release);
	pthread_mutex_unlock(&img->refresh_lock);
	if (r < 0)
		return r;
	if (!img->watching) {
		r = rbdl_watch_start(img);
		if (r < 0)
			return r;
	}
	pthread_mutex_lock(&img->refresh_lock);
	img->read_only = false;
	pthread_mutex_unlock(&img->refresh_lock);
	/* The lock was set up disabled (read-only then); no thread ran and
	 * the watch callback only looks at the DISABLED state. */
	rbdl_lock_shutdown(img);
	return rbdl_lock_init(img);
}

int rbdl_image_set_snap(struct rbdl_image *img, const char *snap_name)
{
	uint64_t id = RBDL_NOSNAP, size = 0;
	char *name = NULL;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	if (snap_name) {
		pthread_mutex_lock(&img->refresh_lock);
		r = rbdl_image_find_snap(img, snap_name, &id, &size);
		pthread_mutex_unlock(&img->refresh_lock);
		if (r < 0)
			return r;
		name = strdup(snap_name);
		if (!name)
			return -ENOMEM;
		/* librbd shuts the exclusive lock down at a snapshot; the
		 * HEAD object map must not answer snapshot reads either. */
		rbdl_lock_drop(img);
	} else if (!img->open_ro && !atomic_load(&img->wr_io)) {
		r = become_writable(img);
		if (r < 0)
			return r;
	}
	pthread_mutex_lock(&img->refresh_lock);
	free(img->snap_name);
	img->snap_name = name;
	img->snap_id = id;
	img->snap_ns = 0;	/* by name: a user snapshot */
	atomic_store_explicit(&img->snap_gone, false, memory_order_relaxed);
	img->read_only = img->open_ro || id != RBDL_NOSNAP;
	rados_ioctx_snap_set_read(img->rd_io, id == RBDL_NOSNAP
						  ? LIBRADOS_SNAP_HEAD
						  : id);
	atomic_store_explicit(&img->at_snap, id != RBDL_NOSNAP,
			      memory_order_relaxed);
	if (id != RBDL_NOSNAP)
		atomic_store_explicit(&img->size, size, memory_order_release);
	pthread_mutex_unlock(&img->refresh_lock);
	/* Size and write gate follow from the new view. */
	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
	return rbdl_image_refresh_slow(img);
}

/* Register h (handles are never freed: keep them reachable) and make it
 * usable: the release store pairs with rbdl_image_from_user's acquire. */
static void publish(struct rbdl_handle *h, uint32_t magic)
{
	pthread_mutex_lock(&handles_lock);
	h->next = handles;
	handles = h;
	pthread_mutex_unlock(&handles_lock);
	atomic_store_explicit(&h->magic, magic, memory_order_release);
}

int rbdl_handle_make_whole(struct rbdl_whole *w, struct rbdl_handle **out)
{
	struct rbdl_handle *h = malloc(sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->img = NULL;
	h->whole = w;
	publish(h, RBDL_HANDLE_WHOLE);
	*out = h;
	return 0;
}

struct rbdl_whole *rbdl_handle_close_whole(struct rbdl_handle *h)
{
	uint32_t whole = RBDL_HANDLE_WHOLE;

	/* Only one closer wins; later calls see a closed handle. */
	if (!atomic_compare_exchange_strong(&h->magic, &whole,
					    RBDL_HANDLE_CLOSED))
		return NULL;
	struct rbdl_whole *w = h->whole;

	h->whole = NULL;
	return w;
}

int rbdl_image_open(rados_ioctx_t io, const char *name, const char *id,
		    const char *snap_name, bool read_only,
		    struct rbdl_handle **out)
{
	struct rbdl_handle *h;
	int r;
	struct rbdl_image *img = rbdl_image_alloc(read_only, &r);

	if (!img)
		return r;
	/* The image's tasks (lock, update watch, quiesce) run on the shared
	 * control context while it is open. */
	rbdl_ctl_get();
	r = rbdl_updw_init(img);
	if (r == 0)
		r = rbdl_image_load(img, io, name, id, snap_name, RBDL_NOSNAP);
	if (r == 0)
		r = rbdl_parent_update(img, img->snap_id,
				       atomic_load(&img->size),
				       atomic_load(&img->features));
	if (r == 0) {
		/* the write gate again, with the backing view known */
		uint64_t f = atomic_load(&img->features);
		int g = rbdl_image_write_gate(img, f, img->nsnaps,
					      rbdl_parent_view(img)->migration);

		atomic_store(&img->write_error, g);
		if (g)
			rbdl_image_log_write_refusal(img, f);
	}
	if (r == 0 && !img->read_only)
		r = make_writable(img);
	else if (r == 0 && !img->open_ro)
		/* Opened at a snapshot, not read-only: librbd watches the
		 * header too (its refresh then finds the snapshot gone). */
		r = rbdl_watch_start(img);
	if (r == 0)
		r = rbdl_objmap_init(img);
	if (r == 0)
		r = rbdl_lock_init(img);
	if (r < 0)
		goto fail;
	/* The caller's images only: a backing image never discards. */
	rbdl_image_apply_settings(img, true);
	rbdl_stamps_start(img);
	h = malloc(sizeof(*h));
	if (!h) {
		r = -ENOMEM;
		goto fail;
	}
	h->img = img;
	h->whole = NULL;
	publish(h, RBDL_HANDLE_OPEN);
	*out = h;
	return 0;
fail:
	image_close(img);
	return r;
}

bool rbdl_image_handle_known(const void *p)
{
	bool found = false;

	pthread_mutex_lock(&handles_lock);
	for (struct rbdl_handle *h = handles; h && !found; h = h->next)
		found = (const void *)h == p;
	pthread_mutex_unlock(&handles_lock);
	return found;
}

int rbdl_image_close(struct rbdl_handle *h)
{
	uint32_t open = RBDL_HANDLE_OPEN;

	/* Only one closer wins; later calls see a closed handle. */
	if (!atomic_compare_exchange_strong(&h->magic, &open,
					    RBDL_HANDLE_CLOSED))
		return -EINVAL;
	struct rbdl_image *img = h->img;

	rbdl_delivery_wait_idle(&img->dl);
	image_close(img);
	/* Give slab memory back to the kernel if nothing uses it any more. */
	rbdl_slab_trim();
	/* The handle itself is never freed: a stale rbd_image_t must keep
	 * reading "closed" rather than whatever reuses the memory. */
	h->img = NULL;
	return 0;
}
