/*
 * info.h - image information and small header operations (info.c) and
 * the advisory rbd_lock calls (advlock.c).
 *
 * Role: what librbd 16.2 answers from the header (timestamps, operation
 * features, group membership, metadata), the name changes and metadata
 * removal it performs through its operation machinery, the whole-image
 * read walk (rbd_read_iterate) and the advisory lock API (rbd_lock_*,
 * rbd_list_lockers, rbd_break_lock): cls "lock" on the header under the
 * name "rbd_lock", the same lock the exclusive-lock feature manages.
 *
 * Threading: every function is synchronous, runs on the caller's thread
 * and may block on OSD round trips; none may run on a librados callback
 * thread.  Callbacks (read_iterate) run on the caller's thread with no
 * librbdlite lock held.  Each function returns 0 (or a count) or a
 * negative errno, librbd's errnos.
 *
 * Ownership: strings and arrays handed out are malloc'ed and belong to
 * the caller (free with the matching *_free function).
 */
#ifndef RBDL_OPS_INFO_H
#define RBDL_OPS_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <rados/librados.h>

#include "image/state.h"

/* ---- info.c -------------------------------------------------------------- */

enum rbdl_ts_kind {
	RBDL_TS_CREATE,
	RBDL_TS_ACCESS,
	RBDL_TS_MODIFY,
};
/* The header's create / access / modify timestamp (an OSD without the
 * access or modify timestamp reports the creation time, as librbd). */
int rbdl_info_timestamp(struct rbdl_image *img, enum rbdl_ts_kind kind,
			struct timespec *ts);
/* op_features_get (0 without the operations feature). */
int rbdl_info_op_features(struct rbdl_image *img, uint64_t *op_features);
/* The group the image belongs to: *name malloc'ed ("" and pool -1 when
 * in none). */
int rbdl_info_group(struct rbdl_image *img, int64_t *pool, char **name);

/* One metadata pair; value is NUL-terminated after vlen bytes. */
struct rbdl_md_pair {
	char *key;
	char *value;
	size_t vlen;
};
/* Up to max (0: all) pairs with keys after start, in key order. */
int rbdl_info_metadata_list(struct rbdl_image *img, const char *start,
			    uint64_t max, struct rbdl_md_pair **out,
			    size_t *n);
void rbdl_info_metadata_free(struct rbdl_md_pair *v, size_t n);
/* rbd_metadata_remove: -ENOENT for a missing key, -EROFS read-only or at
 * a snapshot (the key is looked up first, as librbd does). */
int rbdl_info_metadata_remove(struct rbdl_image *img, const char *key);

/* rbd_rename of image srcname in io's pool and namespace; a journaled
 * image is not renamed here: -EOPNOTSUPP with *need_real set (librbd
 * journals the rename). */
int rbdl_op_rename(rados_ioctx_t io, const char *srcname,
		   const char *dstname, bool *need_real);

/* rbd_read_iterate: cb(offset from ofs, length, data, arg) per stripe
 * period; the total read or the first negative (an error or cb's). */
int64_t rbdl_info_read_iterate(struct rbdl_image *img, uint64_t ofs,
			       uint64_t len,
			       int (*cb)(uint64_t, size_t, const char *,
					 void *),
			       void *arg);

/* ---- advlock.c ----------------------------------------------------------- */

struct rbdl_adv_locker {
	char *client;	/* "client.<gid>" */
	char *cookie;
	char *addr;	/* legacy form "ip:port/nonce" */
};
struct rbdl_adv_lockers {
	bool exclusive;
	char *tag;
	size_t n;
	struct rbdl_adv_locker *v;
};
int rbdl_advlock_list(struct rbdl_image *img, struct rbdl_adv_lockers *out);
void rbdl_advlock_list_free(struct rbdl_adv_lockers *l);
/* lock (exclusive or shared, with tag), unlock, break another client's
 * lock (blocklisting it first when rbd_blocklist_on_break_lock is on). */
int rbdl_advlock_lock(struct rbdl_image *img, bool exclusive,
		      const char *cookie, const char *tag);
int rbdl_advlock_unlock(struct rbdl_image *img, const char *cookie);
int rbdl_advlock_break(struct rbdl_image *img, const char *client,
		       const char *cookie);

#endif /* RBDL_OPS_INFO_H */
