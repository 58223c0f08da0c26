/*
 * diff.h - rbd_diff_iterate2 (diff.c).
 *
 * Synchronous, on the caller's thread; the callback runs there too, with
 * no librbdlite lock held.
 */
#ifndef RBDL_DIFF_H
#define RBDL_DIFF_H

#include <stdbool.h>
#include <stdint.h>

#include "image/state.h"

int rbdl_diff_iterate(struct rbdl_image *img, const char *fromsnapname,
		      uint64_t ofs, uint64_t len, bool whole_object,
		      bool include_parent,
		      int (*cb)(uint64_t, size_t, int, void *), void *arg);

#endif /* RBDL_DIFF_H */
