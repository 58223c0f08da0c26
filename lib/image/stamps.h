/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stamps.h - the header's access and modify timestamps, updated by I/O as
 * librbd 16.2 updates them (io/ImageRequest.cc, update_timestamp): a
 * read stamps the access time, any other request (write, discard,
 * write-zeroes, write-same, compare-and-write, flush) the modify time,
 * when rbd_atime_update_interval / rbd_mtime_update_interval seconds
 * (default 60, 0: never) have passed since the last stamp.  The stamp is
 * the header's "rbd.set_access_timestamp" / "set_modify_timestamp" method
 * (the OSD's clock), sent and not waited for; its errors are ignored,
 * as librbd's are.  The last stamps are read from the header at open.
 *
 * Cost on the data path: one relaxed load of a word the image's own
 * timer sets once per interval (rbdl_stamps_io); no clock is read per
 * I/O.  The images backing a clone stamp too, with their own settings,
 * as librbd's parent image does: a read of the clone that reaches its
 * parent is a read of the parent.
 *
 * Threading: rbdl_stamps_io on any submitting thread; the timer task on
 * the control context's internal lane; the stamp's completion on a
 * librados thread, holding a count on the image's delivery so that
 * rbd_close waits for it.  start, settings and stop from open,
 * refresh and close (a backing image: from its open and close).
 */
#ifndef RBDL_IMAGE_STAMPS_H
#define RBDL_IMAGE_STAMPS_H

#include <stdint.h>

#include "conf.h"
#include "state.h"

#define RBDL_STAMP_ACCESS 1u
#define RBDL_STAMP_MODIFY 2u

/* Part of rbdl_image_alloc: nothing due, no task. */
void rbdl_stamps_init(struct rbdl_image *img);
/* At open, after the settings: read the header's stamps and start the
 * timer. */
void rbdl_stamps_start(struct rbdl_image *img);
/* From the image's settings c (open and refresh): the two intervals,
 * rbd_atime_update_interval and rbd_mtime_update_interval. */
void rbdl_stamps_settings(struct rbdl_image *img, const struct rbdl_conf *c);
/* At close, once no I/O is in flight: stop the timer. */
void rbdl_stamps_stop(struct rbdl_image *img);

/* Stamp the kind of bit if it is still due (it was seen set). */
void rbdl_stamps_fire(struct rbdl_image *img, unsigned bit);

/* A request of the kind of bit is starting on img. */
static inline void rbdl_stamps_io(struct rbdl_image *img, unsigned bit)
{
	/* Relaxed: a bit seen late only delays the stamp to a later I/O;
	 * fire's RMW decides who sends it. */
	if (__builtin_expect(atomic_load_explicit(&img->stamps.due,
						  memory_order_relaxed) & bit,
			     0))
		rbdl_stamps_fire(img, bit);
}

#endif /* RBDL_IMAGE_STAMPS_H */
