/*
 * rbd_image.c - the exported librbd image-level entry points: version,
 * open/close, information, snapshots listing, locks and the rest of the
 * image-level calls (those librbd itself refuses in a mode fail with its
 * -EOPNOTSUPP, never crash).
 *
 * Thin shims over image.c.  Nothing here calls another exported rbd_*
 * function (under LD_PRELOAD it could bind to the real librbd).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/lock.h"
#include "image/updwatch.h"
#include "image/parent.h"
#include "image/refresh.h"
#include "image/open.h"
#include "proto/rados.h"
#include "rbd/librbd.h"
#include "rbdlite.h"

#include "proto/cls_rbd.h"
#include "ops/diff.h"
#include "image/state.h"
#include "api/entry.h"
#include "api/journaled.h"
#include "api/whole.h"
#include "core/internal.h"
#include "ops/maint.h"
#include "ops/luks.h"
#include "io/crypt.h"

RBDL_API void rbd_version(int *major, int *minor, int *extra)
{
	if (major)
		*major = LIBRBD_VER_MAJOR;
	if (minor)
		*minor = LIBRBD_VER_MINOR;
	if (extra)
		*extra = LIBRBD_VER_EXTRA;
}

RBDL_API const char *rbdlite_version(void)
{
	return "librbdlite " PACKAGE_VERSION;
}

RBDL_API int rbdlite_is_librbdlite(void)
{
	return 1;
}

/* ---- open / close ---------------------------------------------------------- */

/*
 * rbd_open*: open by name or id, at HEAD or snap_name ("" is HEAD),
 * read-write or read-only; *image is set on success.  Errors: -EINVAL
 * (NULL arguments), -ENOENT (no such image or snapshot), -ENOSYS
 * (unknown incompatible features, a migration being prepared or
 * aborted), librados' errnos.  A format 1 image or an import's
 * destination is opened by the system's librbd and served whole through
 * the handle (api/whole.h); -EOPNOTSUPP / -ENOSYS without one.
 */
static int open_common(rados_ioctx_t io, const char *name, const char *id,
		       rbd_image_t *image, const char *snap_name, bool ro)
{
	struct rbdl_handle *h;
	int r;

	if (!io || !image || (!name && !id))
		return -EINVAL;
	/* librbd: an empty snapshot name is HEAD, as NULL is. */
	if (snap_name && !snap_name[0])
		snap_name = NULL;
	r = rbdl_image_open(io, name, id, snap_name, ro, &h);
	if (r < 0)
		r = rbdl_whole_open(io, name, id, snap_name, ro, r, &h);
	if (r < 0)
		return r;
	*image = h;
	return 0;
}

RBDL_API int rbd_open(rados_ioctx_t io, const char *name, rbd_image_t *image,
		      const char *snap_name)
{
	return open_common(io, name, NULL, image, snap_name, false);
}

RBDL_API int rbd_open_by_id(rados_ioctx_t io, const char *id,
			    rbd_image_t *image, const char *snap_name)
{
	return open_common(io, NULL, id, image, snap_name, false);
}

RBDL_API int rbd_open_read_only(rados_ioctx_t io, const char *name,
				rbd_image_t *image, const char *snap_name)
{
	return open_common(io, name, NULL, image, snap_name, true);
}

RBDL_API int rbd_open_by_id_read_only(rados_ioctx_t io, const char *id,
				      rbd_image_t *image,
				      const char *snap_name)
{
	return open_common(io, NULL, id, image, snap_name, true);
}

RBDL_API int rbd_close(rbd_image_t image)
{
	if (!image)
		return -EINVAL;
	if (rbdl_whole_from_user(image))
		return rbdl_whole_close(image);
	return rbdl_image_close((struct rbdl_handle *)image);
}

/* ---- information ------------------------------------------------------------ */

RBDL_API int rbd_stat(rbd_image_t image, rbd_image_info_t *info,
		      size_t infosize)
{
	if (!info && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_stat, image, info, infosize);
	GET_IMAGE(img, image);
	(void)infosize;	/* ignored, as librbd does */
	if (!info)
		return -EINVAL;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	/* librbd: the size of a snapshot that is gone is 0. */
	uint64_t size = rbdl_image_snap_gone(img) ? 0 : rbdl_image_size(img);

	memset(info, 0, sizeof(*info));
	info->size = size;
	info->obj_size = img->layout.object_size;
	info->num_objs = rbdl_layout_num_objects(&img->layout, size);
	info->order = img->layout.order;
	snprintf(info->block_name_prefix, sizeof(info->block_name_prefix),
		 "%s", img->object_prefix);
	info->parent_pool = -1;
	info->parent_name[0] = '\0';
	return 0;
}

/* Refresh if a header notification arrived, then read one published
 * value (size, features or flags). */
static int get_u64(rbd_image_t image, _Atomic uint64_t *(*field)(struct rbdl_image *),
		   uint64_t *out)
{
	GET_IMAGE(img, image);
	if (!out)
		return -EINVAL;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	*out = field(img) == &img->size ? rbdl_image_size(img)
					 : atomic_load(field(img));
	/* A view whose snapshot is gone: librbd's size is 0, its flags
	 * -ENOENT (the features are the image's). */
	if (rbdl_image_snap_gone(img)) {
		if (field(img) == &img->size)
			*out = 0;
		else if (field(img) == &img->flags)
			return -ENOENT;
	}
	return 0;
}

static _Atomic uint64_t *f_size(struct rbdl_image *i) { return &i->size; }
static _Atomic uint64_t *f_features(struct rbdl_image *i) { return &i->features; }
static _Atomic uint64_t *f_flags(struct rbdl_image *i) { return &i->flags; }

RBDL_API int rbd_get_size(rbd_image_t image, uint64_t *size)
{
	if (!size && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_size, image, size);
	return get_u64(image, f_size, size);
}

RBDL_API int rbd_get_features(rbd_image_t image, uint64_t *features)
{
	if (!features && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_features, image, features);
	return get_u64(image, f_features, features);
}

RBDL_API int rbd_get_flags(rbd_image_t image, uint64_t *flags)
{
	if (!flags && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_flags, image, flags);
	return get_u64(image, f_flags, flags);
}

static int copy_string(const char *s, char *out, size_t len)
{
	size_t n = strlen(s);

	if (!out || len <= n)
		return -ERANGE;
	memcpy(out, s, n + 1);
	return 0;
}

RBDL_API int rbd_get_id(rbd_image_t image, char *id, size_t id_len)
{
	RBDL_ON_WHOLE(rbd_get_id, image, id, id_len);
	GET_IMAGE(img, image);
	return copy_string(img->id, id, id_len);
}

RBDL_API int rbd_get_block_name_prefix(rbd_image_t image, char *prefix,
				       size_t prefix_len)
{
	RBDL_ON_WHOLE(rbd_get_block_name_prefix, image, prefix, prefix_len);
	GET_IMAGE(img, image);
	return copy_string(img->object_prefix, prefix, prefix_len);
}

RBDL_API int rbd_get_stripe_unit(rbd_image_t image, uint64_t *stripe_unit)
{
	if (!stripe_unit && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_stripe_unit, image, stripe_unit);
	GET_IMAGE(img, image);
	if (!stripe_unit)
		return -EINVAL;
	*stripe_unit = img->stripe_unit;
	return 0;
}

RBDL_API int rbd_get_stripe_count(rbd_image_t image, uint64_t *stripe_count)
{
	if (!stripe_count && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_stripe_count, image, stripe_count);
	GET_IMAGE(img, image);
	if (!stripe_count)
		return -EINVAL;
	*stripe_count = img->layout.stripe_count;
	return 0;
}

RBDL_API int64_t rbd_get_data_pool_id(rbd_image_t image)
{
	RBDL_ON_WHOLE(rbd_get_data_pool_id, image);
	GET_IMAGE(img, image);
	return img->data_pool_id >= 0 ? img->data_pool_id : img->md_pool_id;
}

RBDL_API int rbd_get_overlap(rbd_image_t image, uint64_t *overlap)
{
	if (!overlap && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_overlap, image, overlap);
	GET_IMAGE(img, image);
	if (!overlap)
		return -EINVAL;
	int r = rbdl_image_refresh_view(img);

	if (r < 0)
		return r;
	/* What the view reads through: a clone's overlap at the opened
	 * snapshot, or a migration's; 0 without a parent. */
	*overlap = rbdl_parent_view(img)->overlap;
	return 0;
}

/* Copy s into a caller's buffer of len bytes, if one was given. */
static int copy_out(char *buf, size_t len, const char *s)
{
	if (!buf)
		return 0;
	if (strlen(s) + 1 > len)
		return -ERANGE;
	strcpy(buf, s);
	return 0;
}

/* rbd_get_parent_info and _info2 (parent_id NULL for the former). */
static int parent_info(rbd_image_t image, char *parent_poolname,
		       size_t ppoolnamelen, char *parent_name, size_t pnamelen,
		       char *parent_id, size_t pidlen, char *parent_snapname,
		       size_t psnapnamelen)
{
	struct rbdl_parent_desc d;

	GET_IMAGE(img, image);
	int r = rbdl_image_refresh_view(img);

	if (r == 0)
		r = rbdl_parent_describe(img, &d);
	if (r < 0)
		return r;
	/* librbd fills the buffers in this order and stops at the first
	 * one that is too short. */
	r = copy_out(parent_poolname, ppoolnamelen, d.pool_name);
	if (r == 0)
		r = copy_out(parent_name, pnamelen, d.image_name);
	if (r == 0)
		r = copy_out(parent_id, pidlen, d.image_id);
	if (r == 0)
		r = copy_out(parent_snapname, psnapnamelen, d.snap_name);
	rbdl_parent_desc_free(&d);
	return r;
}

RBDL_API int rbd_get_parent_info(rbd_image_t image, char *parent_poolname,
				 size_t ppoolnamelen, char *parent_name,
				 size_t pnamelen, char *parent_snapname,
				 size_t psnapnamelen)
{
	RBDL_ON_WHOLE(rbd_get_parent_info, image, parent_poolname,
		    ppoolnamelen, parent_name, pnamelen, parent_snapname,
		    psnapnamelen);
	return parent_info(image, parent_poolname, ppoolnamelen, parent_name,
			   pnamelen, NULL, 0, parent_snapname, psnapnamelen);
}

RBDL_API int rbd_get_parent_info2(rbd_image_t image, char *parent_poolname,
				  size_t ppoolnamelen, char *parent_name,
				  size_t pnamelen, char *parent_id,
				  size_t pidlen, char *parent_snapname,
				  size_t psnapnamelen)
{
	RBDL_ON_WHOLE(rbd_get_parent_info2, image, parent_poolname,
		    ppoolnamelen, parent_name, pnamelen, parent_id, pidlen,
		    parent_snapname, psnapnamelen);
	return parent_info(image, parent_poolname, ppoolnamelen, parent_name,
			   pnamelen, parent_id, pidlen, parent_snapname,
			   psnapnamelen);
}

RBDL_API int rbd_get_parent(rbd_image_t image,
			    rbd_linked_image_spec_t *parent_image,
			    rbd_snap_spec_t *parent_snap)
{
	if (rbdl_whole_from_user(image) &&
	    (!parent_image || !parent_snap))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_parent, image, parent_image, parent_snap);
	struct rbdl_parent_desc d;

	GET_IMAGE(img, image);
	if (!parent_image || !parent_snap)
		return -EINVAL;
	memset(parent_image, 0, sizeof(*parent_image));
	memset(parent_snap, 0, sizeof(*parent_snap));
	int r = rbdl_image_refresh_view(img);

	if (r == 0)
		r = rbdl_parent_describe(img, &d);
	if (r < 0)
		return r;
	/* The strings move to the caller. */
	parent_image->pool_id = d.pool_id;
	parent_image->pool_name = d.pool_name;
	parent_image->pool_namespace = d.pool_namespace;
	parent_image->image_id = d.image_id;
	parent_image->image_name = d.image_name;
	parent_image->trash = d.trash;
	parent_snap->id = d.snap_id;
	parent_snap->namespace_type = (rbd_snap_namespace_type_t)d.snap_ns_type;
	parent_snap->name = d.snap_name;
	return 0;
}

RBDL_API void rbd_linked_image_spec_cleanup(rbd_linked_image_spec_t *image)
{
	if (!image)
		return;
	free(image->pool_name);
	free(image->pool_namespace);
	free(image->image_id);
	free(image->image_name);
	image->pool_name = NULL;
	image->pool_namespace = NULL;
	image->image_id = NULL;
	image->image_name = NULL;
}

RBDL_API void rbd_snap_spec_cleanup(rbd_snap_spec_t *snap)
{
	if (!snap)
		return;
	free(snap->name);
	snap->name = NULL;
}

/* ---- snapshots ------------------------------------------------------------- */

/* Fetch the snapshots (id, size, name) of the image, oldest first: every
 * namespace, or user snapshots only. */
static int list_snaps(struct rbdl_image *img, bool user_only,
		      rbd_snap_info_t **out, int *n)
{
	uint64_t seq, *ids = NULL;
	uint32_t nids = 0;
	rbd_snap_info_t *v;
	int cnt = 0, r;

	r = rbdl_read_snapcontext(img->md_io, img->header_oid, &seq, &ids,
				  &nids);
	if (r < 0)
		return r;
	v = calloc(nids + 1, sizeof(*v));
	if (!v) {
		free(ids);
		return -ENOMEM;
	}
	/* Oldest first, as librbd lists them. */
	for (uint32_t k = nids; k-- > 0;) {
		struct rbdl_snap_info si;

		r = rbdl_read_snapshot_info(img->md_io, img->header_oid,
					    ids[k], &si);
		if (r == -ENOENT) {	/* removed meanwhile */
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		/* librbd's snap_list lists every namespace (group, trash,
		 * mirror: their namespace is asked separately); snap_exists
		 * looks at user snapshots only. */
		if (!user_only || si.ns_type == 0) {
			v[cnt].id = si.id;
			v[cnt].size = si.image_size;
			v[cnt].name = si.name;
			si.name = NULL;
			cnt++;
		}
		rbdl_snap_info_free(&si);
	}
	free(ids);
	if (r < 0) {
		for (int i = 0; i < cnt; i++)
			free((char *)v[i].name);
		free(v);
		return r;
	}
	*out = v;
	*n = cnt;
	return 0;
}

RBDL_API int rbd_snap_list(rbd_image_t image, rbd_snap_info_t *snaps,
			   int *max_snaps)
{
	if (!max_snaps && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_list, image, snaps, max_snaps);
	rbd_snap_info_t *v;
	int n, r;

	GET_IMAGE(img, image);
	if (!max_snaps)
		return -EINVAL;
	r = list_snaps(img, false, &v, &n);
	if (r < 0)
		return r;
	if (*max_snaps < n + 1 || !snaps) {
		*max_snaps = n + 1;
		for (int i = 0; i < n; i++)
			free((char *)v[i].name);
		free(v);
		return -ERANGE;
	}
	memcpy(snaps, v, (size_t)(n + 1) * sizeof(*v));	/* + terminator */
	free(v);
	return n;
}

RBDL_API void rbd_snap_list_end(rbd_snap_info_t *snaps)
{
	if (!snaps)
		return;
	for (; snaps->name; snaps++) {
		free((char *)snaps->name);
		snaps->name = NULL;
	}
}

RBDL_API int rbd_snap_exists(rbd_image_t image, const char *snapname,
			     bool *exists)
{
	if (!exists && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_snap_exists, image, snapname, exists);
	rbd_snap_info_t *v;
	int n, r;

	GET_IMAGE(img, image);
	if (!snapname || !exists)
		return -EINVAL;
	r = list_snaps(img, true, &v, &n);
	if (r < 0)
		return r;
	*exists = false;
	for (int i = 0; i < n; i++) {
		if (!strcmp(v[i].name, snapname))
			*exists = true;
		free((char *)v[i].name);
	}
	free(v);
	return 0;
}

/* ---- resize and snapshot operations (maint.c) ------------------------------------ */

RBDL_API int rbd_resize(rbd_image_t image, uint64_t size)
{
	RBDL_ON_WHOLE(rbd_resize, image, size);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_resize, img, size);
	return rbdl_maint_resize(img, size);
}

RBDL_API int rbd_snap_create(rbd_image_t image, const char *snapname)
{
	RBDL_ON_WHOLE(rbd_snap_create, image, snapname);
	GET_IMAGE(img, image);
	if (snapname)
		RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_create, img, snapname);
	return rbdl_maint_snap_create(img, snapname);
}

RBDL_API int rbd_snap_remove(rbd_image_t image, const char *snapname)
{
	RBDL_ON_WHOLE(rbd_snap_remove, image, snapname);
	GET_IMAGE(img, image);
	if (snapname)
		RBDL_ON_JOURNAL_ANY_VIEW(rbd_snap_remove, img, snapname);
	return rbdl_maint_snap_remove(img, snapname);
}

RBDL_API int rbd_snap_rollback(rbd_image_t image, const char *snapname)
{
	RBDL_ON_WHOLE(rbd_snap_rollback, image, snapname);
	GET_IMAGE(img, image);
	if (snapname)
		RBDL_ON_JOURNAL(rbd_snap_rollback, img, snapname);
	return rbdl_maint_snap_rollback(img, snapname);
}

RBDL_API int rbd_snap_set(rbd_image_t image, const char *snapname)
{
	RBDL_ON_WHOLE(rbd_snap_set, image, snapname);
	GET_IMAGE(img, image);
	/* librbd: NULL and "" both mean HEAD. */
	return rbdl_maint_snap_set(img, snapname && snapname[0] ? snapname
							       : NULL);
}

/*
 * Changed extents since fromsnapname (NULL: since creation) up to the open
 * version, in [ofs, ofs + len): see diff.c.  include_parent has no effect:
 * librbdlite opens no image whose parent still backs data.
 */
RBDL_API int rbd_diff_iterate2(rbd_image_t image, const char *fromsnapname,
			       uint64_t ofs, uint64_t len,
			       uint8_t include_parent, uint8_t whole_object,
			       int (*cb)(uint64_t, size_t, int, void *),
			       void *arg)
{
	RBDL_ON_WHOLE(rbd_diff_iterate2, image, fromsnapname, ofs, len,
		    include_parent, whole_object, cb, arg);
	GET_IMAGE(img, image);
	/* a journaled image's writes may sit in its real handle's cache */
	rbd_image_t real = rbdl_real_image_shared(img);

	if (real && cb)
		RBDL_FORWARD(rbd_diff_iterate2, real, fromsnapname, ofs,
			     rbdl_real_len(ofs, len),
			     include_parent, whole_object, cb, arg);
	return rbdl_diff_iterate(img, fromsnapname, ofs, len, whole_object != 0,
				 include_parent != 0, cb, arg);
}

/*
 * Call watch_cb(arg) after every header update of the image (resize,
 * snapshot changes, ... by any client, this one included), on a notifier
 * thread of the image: see updwatch.h.  *handle identifies the watch for
 * rbd_update_unwatch, which returns -ENOENT for an unknown handle and
 * waits for a running callback of the handle.  Watches still registered
 * at rbd_close are dropped.
 */
RBDL_API int rbd_update_watch(rbd_image_t image, uint64_t *handle,
			      rbd_update_callback_t watch_cb, void *arg)
{
	if (!handle && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_update_watch, image, handle, watch_cb, arg);
	GET_IMAGE(img, image);
	if (!handle || !watch_cb)
		return -EINVAL;
	return rbdl_updw_register(img, handle, watch_cb, arg);
}

RBDL_API int rbd_update_unwatch(rbd_image_t image, uint64_t handle)
{
	RBDL_ON_WHOLE(rbd_update_unwatch, image, handle);
	GET_IMAGE(img, image);
	return rbdl_updw_unregister(img, handle);
}

RBDL_API int rbd_is_exclusive_lock_owner(rbd_image_t image, int *is_owner)
{
	if (!is_owner && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_is_exclusive_lock_owner, image, is_owner);
	GET_IMAGE(img, image);
	if (!is_owner)
		return -EINVAL;
	rbd_image_t real = rbdl_real_image_shared(img);

	if (real)
		RBDL_FORWARD(rbd_is_exclusive_lock_owner, real, is_owner);
	return rbdl_lock_check_owner(img, is_owner);
}

RBDL_API int rbd_lock_acquire(rbd_image_t image, rbd_lock_mode_t lock_mode)
{
	RBDL_ON_WHOLE(rbd_lock_acquire, image, lock_mode);
	GET_IMAGE(img, image);
	/* Only the managed exclusive lock, as librbd 16.2. */
	if (lock_mode != RBD_LOCK_MODE_EXCLUSIVE)
		return -EOPNOTSUPP;
	/* a journaled image's lock is its real handle's */
	RBDL_ON_JOURNAL(rbd_lock_acquire, img, lock_mode);
	return rbdl_lock_acquire_user(img);
}

RBDL_API int rbd_lock_release(rbd_image_t image)
{
	RBDL_ON_WHOLE(rbd_lock_release, image);
	GET_IMAGE(img, image);
	rbd_image_t real = rbdl_real_image_shared(img);

	if (real)
		RBDL_FORWARD(rbd_lock_release, real);
	return rbdl_lock_release_user(img);
}

/*
 * The exclusive lock's owner (at most one, mode EXCLUSIVE), as librbd:
 * -ENOENT when unlocked, -EINVAL without a managed lock on this open
 * (feature off, read-only), -ERANGE with *max_lock_owners set to the
 * count when the array is too small.  Free with
 * rbd_lock_get_owners_cleanup.
 */
RBDL_API int rbd_lock_get_owners(rbd_image_t image,
				 rbd_lock_mode_t *lock_mode,
				 char **lock_owners, size_t *max_lock_owners)
{
	if (rbdl_whole_from_user(image) &&
	    (!lock_mode || !max_lock_owners))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_lock_get_owners, image, lock_mode, lock_owners,
		    max_lock_owners);
	char owner[160];
	int r;

	GET_IMAGE(img, image);
	if (!lock_mode || !max_lock_owners)
		return -EINVAL;
	/* The entries are ours to fill: clear them first, so that a caller
	 * that runs rbd_lock_get_owners_cleanup() over its whole array after
	 * an error (python3-rbd's iterator does) frees nothing stale. */
	if (lock_owners && *max_lock_owners <= SIZE_MAX / sizeof(char *))
		memset(lock_owners, 0, *max_lock_owners * sizeof(char *));
	r = rbdl_lock_get_owner(img, owner, sizeof(owner));
	if (r < 0)
		return r;
	*lock_mode = RBD_LOCK_MODE_EXCLUSIVE;
	if (*max_lock_owners < 1 || !lock_owners) {
		*max_lock_owners = 1;
		return -ERANGE;
	}
	lock_owners[0] = strdup(owner);
	if (!lock_owners[0])
		return -ENOMEM;
	*max_lock_owners = 1;
	return 0;
}

RBDL_API void rbd_lock_get_owners_cleanup(char **lock_owners,
					  size_t lock_owner_count)
{
	for (size_t i = 0; lock_owners && i < lock_owner_count; i++) {
		free(lock_owners[i]);
		lock_owners[i] = NULL;
	}
}

/*
 * Break another client's exclusive lock (lock_owner as returned by
 * rbd_lock_get_owners): the owner is blocklisted, then its lock broken,
 * as librbd's lock_break.  -EOPNOTSUPP unless RBD_LOCK_MODE_EXCLUSIVE,
 * -EROFS on read-only opens, -EINVAL without the feature, -EBUSY if we
 * own the lock or lock_owner is not the owner, -ENOENT if unlocked.
 */
RBDL_API int rbd_lock_break(rbd_image_t image, rbd_lock_mode_t lock_mode,
			    const char *lock_owner)
{
	RBDL_ON_WHOLE(rbd_lock_break, image, lock_mode, lock_owner);
	GET_IMAGE(img, image);
	if (lock_mode != RBD_LOCK_MODE_EXCLUSIVE)
		return -EOPNOTSUPP;
	if (!lock_owner)
		return -EINVAL;
	return rbdl_lock_break_owner(img, lock_owner);
}

RBDL_API int rbd_metadata_get(rbd_image_t image, const char *key, char *value,
			      size_t *val_len)
{
	if (!val_len && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_metadata_get, image, key, value, val_len);
	uint8_t *in;
	char *out, *val = NULL;
	size_t outlen;
	long n;

	GET_IMAGE(img, image);
	if (!key || !val_len)
		return -EINVAL;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	/* Any key rbd_metadata_set takes (no length limit but the OSD's). */
	n = rbdl_encode_string_alloc(key, &in);
	if (n < 0)
		return (int)n;
	r = rbdl_cls_read(img->md_io, img->header_oid, "rbd", "metadata_get", in, (size_t)n, &out, &outlen);
	free(in);
	if (r < 0)
		return r;
	r = rbdl_decode_string(out, outlen, &val);
	rados_buffer_free(out);
	if (r < 0)
		return r;
	size_t need = strlen(val) + 1;

	/* librbd: too small (or no buffer) reports the size needed. */
	if (*val_len < need || !value) {
		*val_len = need;
		r = -ERANGE;
	} else {
		memcpy(value, val, need);
	}
	free(val);
	return r;
}

RBDL_API int rbd_metadata_set(rbd_image_t image, const char *key,
			      const char *value)
{
	RBDL_ON_WHOLE(rbd_metadata_set, image, key, value);
	GET_IMAGE(img, image);
	if (key && value)
		RBDL_ON_JOURNAL(rbd_metadata_set, img, key, value);
	return rbdl_maint_metadata_set(img, key, value);
}

/* ---- encryption (ops/luks.h, io/crypt.h) ------------------------------------- */

/*
 * Write a LUKS1 or LUKS2 header (opts: rbd_encryption_luks{1,2}_format_
 * options_t) at the start of the image and load it: from then on the
 * handle's I/O is encrypted and its size is the data area's.  librbd's
 * errors (ops/luks.h).
 */
RBDL_API int rbd_encryption_format(rbd_image_t image,
				   rbd_encryption_format_t format,
				   rbd_encryption_options_t opts,
				   size_t opts_size)
{
	RBDL_ON_WHOLE(rbd_encryption_format, image, format, opts, opts_size);
	GET_IMAGE(img, image);
	return rbdl_luks_format(img, format, opts, opts_size);
}

/* Load the image's LUKS header with the passphrase of opts (the format's
 * options struct; its algorithm is ignored): as after format.  -EEXIST if
 * encryption is loaded already, -EPERM for a wrong passphrase. */
RBDL_API int rbd_encryption_load(rbd_image_t image,
				 rbd_encryption_format_t format,
				 rbd_encryption_options_t opts,
				 size_t opts_size)
{
	RBDL_ON_WHOLE(rbd_encryption_load, image, format, opts, opts_size);
	GET_IMAGE(img, image);
	return rbdl_luks_load(img, format, opts, opts_size);
}
