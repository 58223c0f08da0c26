/*
 * config_list.h - the configuration list of an open image (config.c):
 * rbd_config_image_list.  (Not named config.h: that name is configure's
 * header, which every file of lib/ includes.)
 *
 * Role: librbd 16.2's api::Config<>::list(ImageCtx*): every rbd_* option
 * an image can override, with the value in effect for the image and where
 * it came from (client configuration, pool or image "conf_" metadata).
 *
 * Threading: synchronous on the caller's thread; may block on OSD round
 * trips (a refresh if one is due, the pool's and the image's metadata).
 * Returns 0 or a negative errno (librbd's).
 *
 * Ownership: the array and its strings are malloc'ed and belong to the
 * caller, who frees them with rbdl_config_list_free (or takes the
 * strings, which free() releases, as rbd_config_image_list_cleanup does,
 * and frees the array).
 */
#ifndef RBDL_OPS_CONFIG_LIST_H
#define RBDL_OPS_CONFIG_LIST_H

#include <stddef.h>

#include "rbd/librbd.h"

struct rbdl_image;

/* The options in name (byte) order: *out has *n entries, each name and
 * value strdup'ed.  On failure *out is NULL and *n 0. */
int rbdl_config_image_list(struct rbdl_image *img, rbd_config_option_t **out,
			   size_t *n);
/* Free the n entries' strings and the array (v may be NULL). */
void rbdl_config_list_free(rbd_config_option_t *v, size_t n);

#endif /* RBDL_OPS_CONFIG_LIST_H */
