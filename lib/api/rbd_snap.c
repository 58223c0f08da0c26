/*
 * rbd_snap.c - the snapshot entry points of the C API beyond create /
 * remove / rollback / set / list (those are rbd_image.c): create2 and
 * remove2 with flags and progress, by-id removal and view switch, rename,
 * protection, lookups, timestamps, the snapshot limit and the namespace
 * queries (group, trash, mirror).
 *
 * Each function checks its handle and pointers (a NULL or closed handle,
 * a NULL name or output: -EINVAL, where librbd would crash) and hands the
 * work to ops/snapinfo.c or ops/snap.c; the output conventions (buffer
 * sizes, -ERANGE, what is written on failure) are librbd 16.2's
 * librbd.cc, errno for errno.  rbd_snap_remove2 with
 * RBD_SNAP_REMOVE_FLATTEN (also part of RBD_SNAP_REMOVE_FORCE) flattens
 * the snapshot's children first (ops/clone.h), as librbd does.
 *
 * Threading: any thread; calls on one image are serialized where they
 * change it (ops layer).  Ownership: strings handed out are malloc'ed and
 * freed by the matching cleanup call.
 */
#include "config.h"

#include "api/journaled.h"
#include "api/whole.h"
#include "core/internal.h"
#include "image/state.h"
#include "ops/clone.h"
#include "ops/maint.h"
#include "ops/snapinfo.h"
#include "proto/cls_rbd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

/** rbd_snap_create2: create snapshot snap_name; flags
 * RBD_SNAP_CREATE_SKIP_QUIESCE or RBD_SNAP_CREATE_IGNORE_QUIESCE_ERROR
 * (-EINVAL for anything else, both included); cb sees each quiesce
 * notification attempt (its return value is ignored, as by librbd). */
RBDL_API int rbd_snap_create2(rbd_image_t image, const char *snap_name,
			      uint32_t flags, librbd_progress_fn_t cb,
			      void *cbdata)
{
	RBDL_ON_WHOLE(rbd_snap_create2, image, snap_name, flags,
		    RBDL_REAL_PROGRESS(cb), cbdata);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img || !snap_name)
		return -EINVAL;
	RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_create2, img, snap_name, flags,
				 RBDL_REAL_PROGRESS(cb), cbdata);
	return rbdl_maint_snap_create2(img, snap_name, flags, cb, cbdata);
}

/** rbd_snap_remove2: remove user snapshot snap_name; with
 * RBD_SNAP_REMOVE_UNPROTECT a protected snapshot is unprotected first
 * (-EBUSY while clone v1 children exist); a snapshot that clone v2
 * children still use moves to the trash namespace.  Other flag bits are
 * ignored, as by librbd.  RBD_SNAP_REMOVE_FLATTEN flattens the
 * snapshot's children first (every child opened by id; -EBUSY for one
 * with snapshots and no deep-flatten) and calls cb(children flattened,
 * children) after each; the callback is called only then. */
RBDL_API int rbd_snap_remove2(rbd_image_t image, const char *snap_name,
			      uint32_t flags, librbd_progress_fn_t cb,
			      void *cbdata)
{
	RBDL_ON_WHOLE(rbd_snap_remove2, image, snap_name, flags,
		    RBDL_REAL_PROGRESS(cb), cbdata);
	struct rbdl_image *img = rbdl_image_from_user(image);
	bool prot;
	int r;

	if (!img || !snap_name)
		return -EINVAL;
	RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_remove2, img, snap_name, flags,
				 RBDL_REAL_PROGRESS(cb), cbdata);
	if (flags & RBD_SNAP_REMOVE_FLATTEN) {
		r = rbdl_op_flatten_children(img, snap_name, cb, cbdata);
		if (r < 0)
			return r;
	}
	r = rbdl_op_snap_is_protected(img, snap_name, &prot);
	if (r < 0)
		return r;
	if (prot && (flags & RBD_SNAP_REMOVE_UNPROTECT)) {
		r = rbdl_op_snap_unprotect(img, snap_name);
		if (r < 0)
			return r;
	}
	return rbdl_maint_snap_remove(img, snap_name);
}

/** rbd_snap_remove_by_id: remove snapshot snap_id of any namespace
 * (user, group, trash): -ENOENT, -EBUSY (protected; a trash snapshot
 * clones still use). */
RBDL_API int rbd_snap_remove_by_id(rbd_image_t image, uint64_t snap_id)
{
	RBDL_ON_WHOLE(rbd_snap_remove_by_id, image, snap_id);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img)
		return -EINVAL;
	RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_remove_by_id, img, snap_id);
	return rbdl_maint_snap_remove_id(img, snap_id);
}

/** rbd_snap_rollback_with_progress: roll HEAD back to snap_name; cb is
 * called after each object (object number, objects); a negative return
 * stops the rollback and is returned. */
RBDL_API int rbd_snap_rollback_with_progress(rbd_image_t image,
					     const char *snap_name,
					     librbd_progress_fn_t cb,
					     void *cbdata)
{
	RBDL_ON_WHOLE(rbd_snap_rollback_with_progress, image, snap_name,
		    RBDL_REAL_PROGRESS(cb), cbdata);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img || !snap_name)
		return -EINVAL;
	RBDL_ON_JOURNAL(rbd_snap_rollback_with_progress, img, snap_name,
			RBDL_REAL_PROGRESS(cb),
			cbdata);
	return rbdl_maint_snap_rollback2(img, snap_name, cb, cbdata);
}

/** rbd_snap_set_by_id: read the image at snapshot snap_id (any namespace),
 * or at HEAD for CEPH_NOSNAP; -ENOENT. */
RBDL_API int rbd_snap_set_by_id(rbd_image_t image, uint64_t snap_id)
{
	RBDL_ON_WHOLE(rbd_snap_set_by_id, image, snap_id);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img)
		return -EINVAL;
	return rbdl_op_snap_set_by_id(img, snap_id);
}

/** rbd_snap_rename: -ENOENT (no srcname), -EEXIST (dstname taken),
 * -EROFS (read-only open). */
RBDL_API int rbd_snap_rename(rbd_image_t image, const char *srcname,
			     const char *dstname)
{
	RBDL_ON_WHOLE(rbd_snap_rename, image, srcname, dstname);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img || !srcname || !dstname)
		return -EINVAL;
	RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_rename, img, srcname, dstname);
	return rbdl_op_snap_rename(img, srcname, dstname);
}

/** rbd_snap_protect: -EBUSY if protected already, -ENOSYS without
 * layering, -ENOENT, -EROFS. */
RBDL_API int rbd_snap_protect(rbd_image_t image, const char *snap_name)
{
	RBDL_ON_WHOLE(rbd_snap_protect, image, snap_name);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img || !snap_name)
		return -EINVAL;
	RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_protect, img, snap_name);
	return rbdl_op_snap_protect(img, snap_name);
}

/** rbd_snap_unprotect: -EINVAL if not protected, -EBUSY while clone v1
 * children exist in any pool, -ENOENT, -EROFS. */
RBDL_API int rbd_snap_unprotect(rbd_image_t image, const char *snap_name)
{
	RBDL_ON_WHOLE(rbd_snap_unprotect, image, snap_name);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img || !snap_name)
		return -EINVAL;
	RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_unprotect, img, snap_name);
	return rbdl_op_snap_unprotect(img, snap_name);
}

/** rbd_snap_is_protected: *is_protected 1 while protected or being
 * unprotected, else 0; -ENOENT (left untouched then). */
RBDL_API int rbd_snap_is_protected(rbd_image_t image, const char *snap_name,
				   int *is_protected)
{
	if (!is_protected && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_is_protected, image, snap_name, is_protected);
	struct rbdl_image *img = rbdl_image_from_user(image);
	bool prot;
	int r;

	if (!img || !snap_name || !is_protected)
		return -EINVAL;
	r = rbdl_op_snap_is_protected(img, snap_name, &prot);
	if (r == 0)
		*is_protected = prot ? 1 : 0;
	return r;
}

/** rbd_snap_get_id: id of user snapshot snapname; -ENOENT sets *snap_id
 * to CEPH_NOSNAP. */
RBDL_API int rbd_snap_get_id(rbd_image_t image, const char *snapname,
			     uint64_t *snap_id)
{
	if (!snap_id && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_get_id, image, snapname, snap_id);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img || !snapname || !snap_id)
		return -EINVAL;
	return rbdl_op_snap_get_id(img, snapname, snap_id);
}

/** rbd_snap_get_name: name of snapshot snap_id (any namespace) into
 * snapname (*name_len bytes); *name_len becomes the size needed, with
 * -ERANGE when it is too small.  As in librbd, a missing snapshot has the
 * empty name: "" is stored (when it fits) and -ENOENT returned. */
RBDL_API int rbd_snap_get_name(rbd_image_t image, uint64_t snap_id,
			       char *snapname, size_t *name_len)
{
	if (!name_len && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_get_name, image, snap_id, snapname, name_len);
	struct rbdl_image *img = rbdl_image_from_user(image);
	struct rbdl_snapq q;
	const char *name = "";
	size_t n;
	int r;

	if (!img || !name_len)
		return -EINVAL;
	r = rbdl_snapq_get(img, snap_id, &q);
	if (r == 0 && q.name)
		name = q.name;
	n = strlen(name);
	if (*name_len <= n) {
		*name_len = n + 1;
		rbdl_snapq_free(&q);
		return -ERANGE;
	}
	if (!snapname) {
		rbdl_snapq_free(&q);
		return -EINVAL;
	}
	memcpy(snapname, name, n + 1);
	*name_len = n + 1;
	rbdl_snapq_free(&q);
	return r;
}

/** rbd_snap_get_timestamp: creation time of snapshot snap_id; -ENOENT
 * (librbd asserts instead). */
RBDL_API int rbd_snap_get_timestamp(rbd_image_t image, uint64_t snap_id,
				    struct timespec *timestamp)
{
	if (!timestamp && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_get_timestamp, image, snap_id, timestamp);
	struct rbdl_image *img = rbdl_image_from_user(image);
	struct rbdl_snapq q;
	int r;

	if (!img || !timestamp)
		return -EINVAL;
	r = rbdl_snapq_get(img, snap_id, &q);
	if (r < 0)
		return r;
	timestamp->tv_sec = (time_t)q.ts_sec;
	timestamp->tv_nsec = (long)q.ts_nsec;
	rbdl_snapq_free(&q);
	return 0;
}

/** rbd_snap_get_limit: the snapshot limit, UINT64_MAX if none. */
RBDL_API int rbd_snap_get_limit(rbd_image_t image, uint64_t *limit)
{
	if (!limit && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_get_limit, image, limit);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img || !limit)
		return -EINVAL;
	return rbdl_op_snap_get_limit(img, limit);
}

/** rbd_snap_set_limit: -ERANGE if below the number of snapshots;
 * UINT64_MAX clears it; -EROFS read-only. */
RBDL_API int rbd_snap_set_limit(rbd_image_t image, uint64_t limit)
{
	RBDL_ON_WHOLE(rbd_snap_set_limit, image, limit);
	struct rbdl_image *img = rbdl_image_from_user(image);

	if (!img)
		return -EINVAL;
	RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_set_limit, img, limit);
	return rbdl_op_snap_set_limit(img, limit);
}

/** rbd_snap_get_namespace_type: user, group, trash or mirror; -ENOENT. */
RBDL_API int rbd_snap_get_namespace_type(rbd_image_t image, uint64_t snap_id,
					 rbd_snap_namespace_type_t *namespace_type)
{
	if (!namespace_type && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_get_namespace_type, image, snap_id,
		    namespace_type);
	struct rbdl_image *img = rbdl_image_from_user(image);
	struct rbdl_snapq q;
	int r;

	if (!img || !namespace_type)
		return -EINVAL;
	r = rbdl_snapq_get(img, snap_id, &q);
	if (r < 0)
		return r;
	*namespace_type = (rbd_snap_namespace_type_t)q.ns.type;
	rbdl_snapq_free(&q);
	return 0;
}

/** rbd_snap_get_group_namespace: group pool, group name and group
 * snapshot name of a group snapshot (free with
 * rbd_snap_group_namespace_cleanup); -ERANGE for a wrong struct size,
 * -EINVAL for a snapshot of another namespace, -ENOENT. */
RBDL_API int rbd_snap_get_group_namespace(rbd_image_t image, uint64_t snap_id,
					  rbd_snap_group_namespace_t *group_snap,
					  size_t snap_group_namespace_size)
{
	if (!group_snap && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_get_group_namespace, image, snap_id, group_snap,
		    snap_group_namespace_size);
	struct rbdl_image *img = rbdl_image_from_user(image);
	int64_t pool;
	char *gname, *sname;
	int r;

	if (!img)
		return -EINVAL;
	if (snap_group_namespace_size != sizeof(rbd_snap_group_namespace_t))
		return -ERANGE;
	if (!group_snap)
		return -EINVAL;
	r = rbdl_op_snap_group_ns(img, snap_id, &pool, &gname, &sname);
	if (r < 0)
		return r;
	group_snap->group_pool = pool;
	group_snap->group_name = gname;
	group_snap->group_snap_name = sname;
	return 0;
}

/** rbd_snap_group_namespace_cleanup: frees what
 * rbd_snap_get_group_namespace returned; -ERANGE for a wrong size. */
RBDL_API int rbd_snap_group_namespace_cleanup(rbd_snap_group_namespace_t *group_snap,
					      size_t snap_group_namespace_size)
{
	if (snap_group_namespace_size != sizeof(rbd_snap_group_namespace_t))
		return -ERANGE;
	if (!group_snap)
		return -EINVAL;
	free(group_snap->group_name);
	free(group_snap->group_snap_name);
	group_snap->group_name = NULL;
	group_snap->group_snap_name = NULL;
	return 0;
}

/** rbd_snap_get_trash_namespace: the original name of a snapshot in the
 * trash namespace into original_name (max_length bytes, -ERANGE if it
 * does not fit); -EINVAL for another namespace, -ENOENT. */
RBDL_API int rbd_snap_get_trash_namespace(rbd_image_t image, uint64_t snap_id,
					  char *original_name,
					  size_t max_length)
{
	RBDL_ON_WHOLE(rbd_snap_get_trash_namespace, image, snap_id,
		    original_name, max_length);
	struct rbdl_image *img = rbdl_image_from_user(image);
	struct rbdl_snapq q;
	size_t n;
	int r;

	if (!img || !original_name)
		return -EINVAL;
	r = rbdl_snapq_get(img, snap_id, &q);
	if (r < 0)
		return r;
	if (q.ns.type != 2) {
		rbdl_snapq_free(&q);
		return -EINVAL;
	}
	n = q.ns.trash_name ? strlen(q.ns.trash_name) : 0;
	if (n >= max_length) {
		rbdl_snapq_free(&q);
		return -ERANGE;
	}
	memcpy(original_name, n ? q.ns.trash_name : "", n + 1);
	rbdl_snapq_free(&q);
	return 0;
}

/** rbd_snap_get_mirror_namespace: state, peers (one NUL-separated
 * malloc'ed block), primary and progress of a mirror snapshot (free with
 * rbd_snap_mirror_namespace_cleanup); -ERANGE for a wrong struct size,
 * -EINVAL for another namespace, -ENOENT. */
RBDL_API int rbd_snap_get_mirror_namespace(rbd_image_t image, uint64_t snap_id,
					   rbd_snap_mirror_namespace_t *mirror_snap,
					   size_t mirror_snap_size)
{
	if (!mirror_snap && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_get_mirror_namespace, image, snap_id,
		    mirror_snap, mirror_snap_size);
	struct rbdl_image *img = rbdl_image_from_user(image);
	struct rbdl_snapq q;
	size_t len = 0;
	char *peers, *p;
	int r;

	if (!img)
		return -EINVAL;
	if (mirror_snap_size != sizeof(rbd_snap_mirror_namespace_t))
		return -ERANGE;
	if (!mirror_snap)
		return -EINVAL;
	r = rbdl_snapq_get(img, snap_id, &q);
	if (r < 0)
		return r;
	if (q.ns.type != 3) {
		rbdl_snapq_free(&q);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < q.ns.npeers; i++)
		len += strlen(q.ns.peers[i]) + 1;
	peers = malloc(len ? len : 1);
	mirror_snap->primary_mirror_uuid =
		strdup(q.ns.primary_uuid ? q.ns.primary_uuid : "");
	if (!peers || !mirror_snap->primary_mirror_uuid) {
		free(peers);
		free(mirror_snap->primary_mirror_uuid);
		mirror_snap->primary_mirror_uuid = NULL;
		rbdl_snapq_free(&q);
		return -ENOMEM;
	}
	p = peers;
	for (uint32_t i = 0; i < q.ns.npeers; i++) {
		size_t n = strlen(q.ns.peers[i]) + 1;

		memcpy(p, q.ns.peers[i], n);
		p += n;
	}
	mirror_snap->state = (rbd_snap_mirror_state_t)q.ns.mirror_state;
	mirror_snap->primary_snap_id = q.ns.primary_snap_id;
	mirror_snap->mirror_peer_uuids_count = q.ns.npeers;
	mirror_snap->mirror_peer_uuids = peers;
	mirror_snap->complete = q.ns.mirror_complete;
	mirror_snap->last_copied_object_number = q.ns.last_copied;
	rbdl_snapq_free(&q);
	return 0;
}

/** rbd_snap_mirror_namespace_cleanup: frees what
 * rbd_snap_get_mirror_namespace returned; -ERANGE for a wrong size. */
RBDL_API int rbd_snap_mirror_namespace_cleanup(rbd_snap_mirror_namespace_t *mirror_snap,
					       size_t mirror_snap_size)
{
	if (mirror_snap_size != sizeof(rbd_snap_mirror_namespace_t))
		return -ERANGE;
	if (!mirror_snap)
		return -EINVAL;
	free(mirror_snap->primary_mirror_uuid);
	free(mirror_snap->mirror_peer_uuids);
	mirror_snap->primary_mirror_uuid = NULL;
	mirror_snap->mirror_peer_uuids = NULL;
	return 0;
}
