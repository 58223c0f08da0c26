/*
 * entry.h - what the exported rbd_* entry points (lib/api/rbd_*.c) share.
 *
 * GET_IMAGE(img, image): declare img, the open image behind the caller's
 * handle image, or return -EINVAL from the entry point for a NULL, closed
 * or never-made handle (where librbd would crash).  Threading: none of
 * its own; the handle check is state.h's acquire load of the magic.
 */
#ifndef RBDL_API_ENTRY_H
#define RBDL_API_ENTRY_H

#include <errno.h>

#include "image/state.h"

#define GET_IMAGE(img, image)                                            \
	struct rbdl_image *img = rbdl_image_from_user(image);            \
	if (!img)                                                        \
		return -EINVAL

#endif /* RBDL_API_ENTRY_H */
