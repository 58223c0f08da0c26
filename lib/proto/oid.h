/*
 * oid.h - the names of RBD's RADOS objects (rbd-protocol.md section 1),
 * formatted in one place.
 *
 *   rbd_id.<name>                 image name -> id (format 2)
 *   <name>.rbd                    a format 1 header (only recognised)
 *   rbd_header.<id>               the image header
 *   rbd_object_map.<id>           HEAD object map
 *   rbd_object_map.<id>.<snap>    a snapshot's object map (%016x)
 *   rbd_data.[<pool>.]<id>        object prefix written at create
 *   <prefix>.<objno>              a data object (%016x)
 *
 * Sizes: RBDL_OID_MAX holds any name RADOS accepts (osd_max_object_name_len
 * is 2048) plus the longest fixed part; image names are limited to
 * RBDL_NAME_MAX so that every name fits it.  A data object name needs at
 * most RBDL_DATA_OID_MAX: an open refuses object prefixes longer than
 * RBDL_OID_PREFIX_MAX (-EBADMSG), which keeps per-I/O state small.
 *
 * Every formatter returns 0, or -ENAMETOOLONG when the name does not fit
 * cap (the buffer then holds a truncated, NUL-terminated string).  Pure;
 * any thread.
 */
#ifndef RBDL_PROTO_OID_H
#define RBDL_PROTO_OID_H

#include <stddef.h>
#include <stdint.h>

/* Pool-wide objects. */
#define RBDL_OID_DIRECTORY "rbd_directory"	/* names <-> ids */
#define RBDL_OID_TRASH "rbd_trash"
#define RBDL_OID_INFO "rbd_info"		/* pool metadata */
#define RBDL_OID_CHILDREN "rbd_children"	/* clone v1 parent links */

#define RBDL_NAME_MAX 2048
#define RBDL_OID_MAX (RBDL_NAME_MAX + 64)
#define RBDL_OID_PREFIX_MAX 96
/* prefix, '.', 16 hex digits, NUL */
#define RBDL_DATA_OID_MAX (RBDL_OID_PREFIX_MAX + 1 + 16 + 1)

int rbdl_oid_id(char *buf, size_t cap, const char *name);
int rbdl_oid_v1_header(char *buf, size_t cap, const char *name);
int rbdl_oid_header(char *buf, size_t cap, const char *id);
/* snap RBDL_NOSNAP: the HEAD map. */
int rbdl_oid_object_map(char *buf, size_t cap, const char *id, uint64_t snap);
/* pool < 0: the image keeps its data in the metadata pool. */
int rbdl_oid_data_prefix(char *buf, size_t cap, int64_t pool, const char *id);
int rbdl_oid_data(char *buf, size_t cap, const char *prefix, uint64_t objno);

#endif /* RBDL_PROTO_OID_H */
