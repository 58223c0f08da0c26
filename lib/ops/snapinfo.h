/*
 * snapinfo.h - the snapshot calls of the C API that read or relabel a
 * snapshot without touching data (snapinfo.c): lookups by id and name,
 * timestamps, namespaces (user, group, trash, mirror), the snapshot
 * limit, protection, renaming, and switching the read view by id.
 *
 * Semantics are librbd 16.2's (api/Snapshot.cc, Operations.cc and the
 * operation/Snapshot{Protect,Unprotect,Rename,Limit}Request sequences):
 * the header is brought up to date first (refresh_if_required), a
 * snapshot is looked up in the header's current snapshot context, and the
 * errnos are librbd's, listed at each function.  Changes are cls "rbd"
 * writes on the header followed by a HEADER_UPDATE notification and our
 * own refresh; like librbd, protect, unprotect and rename do not need the
 * exclusive lock, the snapshot limit is set as lock owner.
 *
 * Threading: synchronous on the caller's thread; changes are serialized
 * with the other maintenance operations by img->maint_mu.  Ownership:
 * strings returned through char ** are malloc'ed and owned by the caller.
 */
#ifndef RBDL_OPS_SNAPINFO_H
#define RBDL_OPS_SNAPINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct rbdl_image;

/* cls::rbd::SnapshotNamespace, decoded. */
struct rbdl_snap_ns {
	uint32_t type;			/* 0 user, 1 group, 2 trash, 3 mirror */
	/* group */
	int64_t group_pool;
	char *group_id;			/* malloc'ed */
	char *group_snap_id;		/* malloc'ed */
	/* trash */
	char *trash_name;		/* malloc'ed: the original name */
	uint32_t trash_type;		/* the original namespace type */
	/* mirror */
	uint8_t mirror_state;
	bool mirror_complete;
	uint32_t npeers;
	char **peers;			/* malloc'ed, npeers strings */
	char *primary_uuid;		/* malloc'ed */
	uint64_t primary_snap_id;
	uint64_t last_copied;
};

/* One snapshot as snapshot_get reports it, with its namespace. */
struct rbdl_snapq {
	uint64_t id;
	char *name;			/* malloc'ed */
	uint64_t size;
	uint32_t ts_sec, ts_nsec;
	uint32_t child_count;
	struct rbdl_snap_ns ns;
};

/* Snapshot id (any namespace) of the image, after a refresh: 0, -ENOENT
 * (not a snapshot of the image; CEPH_NOSNAP included) or a read error.
 * Free *out with rbdl_snapq_free (also safe after a failure). */
int rbdl_snapq_get(struct rbdl_image *img, uint64_t id,
		   struct rbdl_snapq *out);
void rbdl_snapq_free(struct rbdl_snapq *q);

/* rbd_snap_get_id: the user snapshot called name.  -ENOENT sets *id to
 * CEPH_NOSNAP, as librbd does. */
int rbdl_op_snap_get_id(struct rbdl_image *img, const char *name,
			uint64_t *id);
/* rbd_snap_get_group_namespace: pool id of the group, group name and
 * group snapshot name (malloc'ed).  -EINVAL if the snapshot is not a
 * group snapshot, -ENOENT without such snapshot, group or group snapshot. */
int rbdl_op_snap_group_ns(struct rbdl_image *img, uint64_t id,
			  int64_t *pool, char **group_name, char **snap_name);
/* rbd_snap_get_limit: UINT64_MAX when none is set. */
int rbdl_op_snap_get_limit(struct rbdl_image *img, uint64_t *limit);
/* rbd_snap_set_limit: -EROFS read-only, -ERANGE below the current count;
 * UINT64_MAX removes the limit. */
int rbdl_op_snap_set_limit(struct rbdl_image *img, uint64_t limit);
/* rbd_snap_is_protected: protected or unprotecting. -ENOENT. */
int rbdl_op_snap_is_protected(struct rbdl_image *img, const char *name,
			      bool *prot);
/* rbd_snap_protect: -EROFS, -ENOSYS (no layering), -ENOENT, -EBUSY
 * (protected already). */
int rbdl_op_snap_protect(struct rbdl_image *img, const char *name);
/* rbd_snap_unprotect: -EROFS, -ENOENT, -EINVAL (not protected), -ENOSYS
 * (no layering), -EBUSY while clone v1 children are registered in the
 * rbd_children object of any pool (the snapshot is protected again). */
int rbdl_op_snap_unprotect(struct rbdl_image *img, const char *name);
/* rbd_snap_rename of a user snapshot: -EROFS, -ENOENT, -EEXIST. */
int rbdl_op_snap_rename(struct rbdl_image *img, const char *src,
			const char *dst);
/* rbd_snap_set_by_id: the read view at snapshot id (any namespace) or,
 * with CEPH_NOSNAP, at HEAD.  -ENOENT. */
int rbdl_op_snap_set_by_id(struct rbdl_image *img, uint64_t id);

#endif /* RBDL_OPS_SNAPINFO_H */
