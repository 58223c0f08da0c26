/*
 * journal.h - journaled images: their I/O runs on the system's librbd.
 *
 * Role: librbdlite's data path writes no journal (entries, tags, commit
 * positions and replay are librbd's), and writing such an image without
 * one would leave rbd-mirror and librbd's replay with a journal that
 * misses the write.  So a read-write HEAD open of an image with the
 * journaling feature runs its reads, writes, discards, write-same,
 * compare-and-write and flushes on a real librbd handle of the same image
 * (opened by id on the same I/O context), made by the first write, flush
 * or change that finds journaling on and kept until the image is closed.  That handle
 * takes the exclusive lock through the normal protocol, appends the
 * journal events and answers with librbd's own results.  Everything else
 * (the header, snapshots, the lock of our handle) stays librbdlite's.
 *
 * The hook is the api layer's (api/journaled.c), installed once by a
 * constructor before any image exists; without it, or without a real
 * librbd, writes to a journaled image fail with -EROFS as before.
 *
 * Threading: the handle is published once (compare-and-swap, release) and
 * read by submitters with acquire; it is closed only by the image's close,
 * after every request has completed.
 */
#ifndef RBDL_IMAGE_JOURNAL_H
#define RBDL_IMAGE_JOURNAL_H

#include <stdbool.h>

#include "image/state.h"

struct rbdl_io_args;		/* io/io.h */

struct rbdl_journal_io {
	/* Run the armed request a on img's real handle, opening it if
	 * needed; c is completed exactly once, never inside this call. */
	void (*submit)(struct rbdl_image *img, struct rbdl_comp *c,
		       const struct rbdl_io_args *a);
	/* Close img's real handle (flushing what it has cached). */
	void (*close)(void *real_handle);
};

/* Set by the api layer's constructor; NULL without one. */
extern const struct rbdl_journal_io *rbdl_journal_io;

/* The real handle running img's I/O now, or NULL: none was made, or the
 * view is a snapshot (reads of a snapshot stay librbdlite's). */
static inline void *rbdl_journal_handle(struct rbdl_image *img)
{
	/* Acquire: pairs with the publishing CAS, so the handle is seen
	 * fully opened. */
	void *h = atomic_load_explicit(&img->journal_h, memory_order_acquire);

	if (__builtin_expect(h != NULL, 0) &&
	    !atomic_load_explicit(&img->at_snap, memory_order_relaxed))
		return h;
	return NULL;
}

/* Whether a write or flush of img should be run by the system's librbd:
 * journaling on (as of the last refresh), a read-write open at HEAD, a
 * hook. */
static inline bool rbdl_journal_wanted(struct rbdl_image *img)
{
	/* Relaxed: policy values, each read once; a change is followed by
	 * a refresh the request waits for anyway. */
	return (atomic_load_explicit(&img->features, memory_order_relaxed) &
		RBD_FEATURE_JOURNALING) &&
	       rbdl_journal_io && !img->open_ro &&
	       !atomic_load_explicit(&img->at_snap, memory_order_relaxed);
}

/* Close img's real handle if it has one (image close). */
void rbdl_journal_close(struct rbdl_image *img);

#endif /* RBDL_IMAGE_JOURNAL_H */
