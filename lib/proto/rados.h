/*
 * rados.h - the synchronous RADOS calls of the control path: cls method
 * calls (generic and typed: encode, call, decode and free in one
 * function, as the kernel's cls_lock_client.c does), the one reader of an
 * image header's metadata, cls "lock" on any object, and I/O context
 * helpers.
 *
 * Threading: every function blocks on a round trip and may run on any
 * thread except a librados callback thread.  Ownership: replies returned
 * through `char **out` are librados buffers (free with rados_buffer_free);
 * decoded strings and arrays are malloc'ed and owned by the caller.
 * Each function returns 0 or a negative errno.
 */
#ifndef RBDL_PROTO_RADOS_H
#define RBDL_PROTO_RADOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <rados/librados.h>

#include "cls_lock.h"
#include "cls_rbd.h"

/* ---- cls method calls ---------------------------------------------------- */

/* A cls method as a read op: the reply in *out / *outlen. */
int rbdl_cls_read(rados_ioctx_t io, const char *oid, const char *cls,
		  const char *method, const void *in, size_t inlen, char **out,
		  size_t *outlen);
/*
 * n timestamps of the header in one round trip: the rbd class methods
 * methods[i] (get_create_timestamp, get_access_timestamp, ...), each
 * returning a utime_t, into ts[i] (n at most RBDL_UTIMES_MAX).  0, or
 * (ts untouched) the first error (-EOPNOTSUPP from an OSD older than a method, -EBADMSG
 * for an undecodable reply, -EINVAL for a bad n).
 */
#define RBDL_UTIMES_MAX 3
int rbdl_read_utimes(rados_ioctx_t io, const char *oid,
		     const char *const *methods, int n, struct timespec *ts);
/* A cls method as a write op. */
int rbdl_cls_write(rados_ioctx_t io, const char *oid, const char *cls,
		   const char *method, const void *in, size_t inlen);
/* A cls "rbd" read method whose input is one u64 (a snapshot id:
 * get_size, snapshot_get, parent_overlap_get, ...). */
int rbdl_cls_read_arg_u64(rados_ioctx_t io, const char *oid,
			  const char *method, uint64_t arg, char **out,
			  size_t *outlen);
/* A cls "rbd" read method whose reply is one u64 (get_flags,
 * get_data_pool, ...): *v set on success. */
int rbdl_cls_read_u64(rados_ioctx_t io, const char *oid, const char *method,
		      const void *in, size_t inlen, uint64_t *v);
/* A u64-reply method taking a snapshot id (get_flags at snap). */
int rbdl_cls_read_u64_at(rados_ioctx_t io, const char *oid,
			 const char *method, uint64_t snap, uint64_t *v);

/* ---- typed cls "rbd" reads of an image header ---------------------------- */

/* get_size at snap (RBDL_NOSNAP: HEAD). */
int rbdl_read_size(rados_ioctx_t io, const char *oid, uint64_t snap,
		   uint8_t *order, uint64_t *size);
/* get_features of HEAD; read_only asks only about read incompatibility. */
int rbdl_read_features(rados_ioctx_t io, const char *oid, bool read_only,
		       uint64_t *features, uint64_t *incompat);
/* get_snapcontext: *snaps malloc'ed, descending (as the OSD wants it). */
int rbdl_read_snapcontext(rados_ioctx_t io, const char *oid, uint64_t *seq,
			  uint64_t **snaps, uint32_t *n);
/* Stripe unit and count (get_stripe_unit_count) when features has
 * STRIPINGV2 and the OSD knows the method; otherwise *su and *sc are left
 * as they are. */
int rbdl_read_stripe(rados_ioctx_t io, const char *oid, uint64_t features,
		     uint64_t *su, uint64_t *sc);
/* snapshot_get of snapshot id (free with rbdl_snap_info_free); -ENOENT if
 * there is no such snapshot. */
int rbdl_read_snapshot_info(rados_ioctx_t io, const char *oid, uint64_t id,
			    struct rbdl_snap_info *si);
/* children_list of snapshot snap_id: its clone v2 children (free with
 * rbdl_child_specs_free); none when the header has no such list
 * (-ENOENT from the OSD). */
int rbdl_read_children(rados_ioctx_t io, const char *oid, uint64_t snap_id,
		       struct rbdl_child_spec **v, uint32_t *n);

/*
 * The metadata of an image header that every opener needs, read in
 * librbd's order (get_size, get_object_prefix, get_features,
 * get_stripe_unit_count, get_data_pool, get_snapcontext).  su and sc are
 * 0 when the header stores no striping; data_pool is -1 when the image has
 * none (or the OSD predates data pools).  A missing header reads as
 * -ENOENT (the cls says EIO).  Free with rbdl_header_free (also safe after
 * a failure).
 */
struct rbdl_header {
	uint8_t order;
	uint64_t size;
	char *object_prefix;	/* malloc'ed */
	uint64_t features;
	uint64_t incompat;
	uint64_t su, sc;
	int64_t data_pool;
	uint64_t snap_seq;
	uint64_t *snaps;	/* malloc'ed, descending */
	uint32_t nsnaps;
};
int rbdl_read_header(rados_ioctx_t io, const char *oid, bool read_only,
		     struct rbdl_header *h);
void rbdl_header_free(struct rbdl_header *h);

/* ---- cls "lock" on any object (lock name "rbd_lock") -------------------- */

int rbdl_lockobj_lock(rados_ioctx_t io, const char *oid, const char *cookie,
		      const char *tag);
int rbdl_lockobj_unlock(rados_ioctx_t io, const char *oid, const char *cookie);
/* The lockers (free with rbdl_lock_info_free). */
int rbdl_lockobj_info(rados_ioctx_t io, const char *oid,
		      struct rbdl_lock_info *li);
/*
 * The view's flags (get_flags at snapshot snap) and the header's lockers
 * in one read, as librbd's RefreshRequest reads them with the rest of the
 * mutable metadata.  *li_ok says whether the lockers could be read (free
 * *li then); the result is get_flags'.
 */
int rbdl_read_flags_lockers(rados_ioctx_t io, const char *oid, uint64_t snap,
			    uint64_t *flags, struct rbdl_lock_info *li,
			    bool *li_ok);
/* Break one locker's lock (0 also when it is gone already). */
int rbdl_lockobj_break(rados_ioctx_t io, const char *oid,
		       const struct rbdl_locker *l);
/* Break every locker (best effort, errors ignored). */
void rbdl_lockobj_break_all(rados_ioctx_t io, const char *oid);

/* The whole object: *buf malloc'ed (free), *len bytes. */
int rbdl_read_object(rados_ioctx_t io, const char *oid, char **buf,
		     size_t *len);
/* Remove an object; -ENOENT counts as success. */
int rbdl_remove_if_exists(rados_ioctx_t io, const char *oid);

/* ---- I/O contexts -------------------------------------------------------- */

/* A new ioctx on pool (by id) and namespace ns of cluster. */
int rbdl_ioctx_dup(rados_t cluster, int64_t pool, const char *ns,
		   rados_ioctx_t *out);
/* io's namespace as a malloc'ed string ("" for the default one). */
int rbdl_ioctx_namespace(rados_ioctx_t io, char **out);
/* A private ioctx on io's pool and namespace (so later changes to io do
 * not matter); *ns, if ns is not NULL, receives the namespace (free). */
int rbdl_ioctx_clone(rados_ioctx_t io, rados_ioctx_t *out, char **ns);

#endif /* RBDL_PROTO_RADOS_H */
