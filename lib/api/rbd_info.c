/*
 * rbd_info.c - the exported image information calls (name, format,
 * timestamps, operation features, group), metadata listing and removal,
 * the image's configuration list, rename, resize and removal with
 * progress, the advisory rbd_lock calls, the read and diff walks, and the
 * asynchronous open and close.
 *
 * Each entry point checks its arguments (a NULL or closed handle, NULL
 * outputs: -EINVAL, where librbd would crash), applies librbd 16.2's
 * buffer-size protocol and hands off to ops/info.h, ops/config_list.h,
 * ops/maint.h, ops/pool.h or image/open.h.  Nothing here calls another
 * exported rbd_* function (under LD_PRELOAD it could bind to the real
 * librbd).
 *
 * Threading: every call but the aio ones is synchronous on the caller's
 * thread.  rbd_aio_open* and rbd_aio_close run the open or close on a
 * short-lived detached thread of their own and complete the caller's
 * completion from it through one delivery shared by all such calls (no
 * image exists yet, or any more, to deliver through).  The completion is
 * armed before the thread starts, so it is PENDING when the call returns.
 *
 * Ownership: strings handed out (rbd_get_group's name, the configuration
 * list's names and values) are malloc'ed for the caller's cleanup call.
 * An aio open works on a private duplicate of the caller's I/O context and
 * copies of its strings, made before the call returns, as librbd's
 * ImageCtx does.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/completion.h"
#include "core/ctl.h"
#include "api/entry.h"
#include "api/whole.h"
#include "api/journaled.h"
#include "core/internal.h"
#include "image/open.h"
#include "image/refresh.h"
#include "image/state.h"
#include "ops/config_list.h"
#include "ops/diff.h"
#include "ops/info.h"
#include "ops/maint.h"
#include "ops/pool.h"
#include "proto/rados.h"
#include "rbd/librbd.h"
#include "real.h"

/* ---- information ------------------------------------------------------------ */

/*
 * The image's name (also for an image opened by id: the directory's
 * name).  *name_len too small: -ERANGE with the size needed, as librbd;
 * on success *name_len is the length with its NUL.
 */
RBDL_API int rbd_get_name(rbd_image_t image, char *name, size_t *name_len)
{
	if (!name_len && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_name, image, name, name_len);
	GET_IMAGE(img, image);
	if (!name_len)
		return -EINVAL;
	size_t n = strlen(img->name);

	if (*name_len <= n) {
		*name_len = n + 1;
		return -ERANGE;
	}
	if (!name)
		return -EINVAL;
	memcpy(name, img->name, n + 1);
	*name_len = n + 1;
	return 0;
}

/* Always 0: librbdlite opens format 2 images only. */
RBDL_API int rbd_get_old_format(rbd_image_t image, uint8_t *old)
{
	if (!old && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_old_format, image, old);
	GET_IMAGE(img, image);
	if (!old)
		return -EINVAL;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	*old = 0;
	return 0;
}

static int timestamp(rbd_image_t image, enum rbdl_ts_kind kind,
		     struct timespec *ts)
{
	GET_IMAGE(img, image);
	if (!ts)
		return -EINVAL;
	return rbdl_info_timestamp(img, kind, ts);
}

/* The header's creation time. */
RBDL_API int rbd_get_create_timestamp(rbd_image_t image,
				      struct timespec *timestamp_out)
{
	if (!timestamp_out && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_create_timestamp, image, timestamp_out);
	return timestamp(image, RBDL_TS_CREATE, timestamp_out);
}

/* The header's last access time (reads stamp it: image/stamps.h). */
RBDL_API int rbd_get_access_timestamp(rbd_image_t image,
				      struct timespec *timestamp_out)
{
	if (!timestamp_out && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_access_timestamp, image, timestamp_out);
	return timestamp(image, RBDL_TS_ACCESS, timestamp_out);
}

/* The header's last modification time (writes stamp it: image/stamps.h). */
RBDL_API int rbd_get_modify_timestamp(rbd_image_t image,
				      struct timespec *timestamp_out)
{
	if (!timestamp_out && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_modify_timestamp, image, timestamp_out);
	return timestamp(image, RBDL_TS_MODIFY, timestamp_out);
}

/* RBD_OPERATION_FEATURE_* bits of the image (0 without the feature). */
RBDL_API int rbd_get_op_features(rbd_image_t image, uint64_t *op_features)
{
	if (!op_features && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_op_features, image, op_features);
	GET_IMAGE(img, image);
	if (!op_features)
		return -EINVAL;
	return rbdl_info_op_features(img, op_features);
}

/*
 * The group of the image: name (malloc'ed, free with
 * rbd_group_info_cleanup; "" when in no group) and pool (-1 when in none).
 * group_info_size must be sizeof(rbd_group_info_t) (-ERANGE otherwise);
 * on failure group_info->name is NULL.
 */
RBDL_API int rbd_get_group(rbd_image_t image, rbd_group_info_t *group_info,
			   size_t group_info_size)
{
	if (!group_info && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_group, image, group_info, group_info_size);
	GET_IMAGE(img, image);
	if (!group_info)
		return -EINVAL;
	if (group_info_size != sizeof(rbd_group_info_t))
		return -ERANGE;
	int64_t pool;
	char *name;
	int r = rbdl_info_group(img, &pool, &name);

	if (r < 0) {
		group_info->name = NULL;
		return r;
	}
	group_info->name = name;
	group_info->pool = pool;
	return 0;
}

/* ---- metadata ---------------------------------------------------------------- */

/*
 * Up to max (0: all) metadata pairs with keys after start ("" or NULL:
 * from the first), as librbd: the keys packed NUL-separated into keys,
 * the values into values.  *key_len and *vals_len are set to the sizes
 * needed; -ERANGE if either buffer is too small.  On a read error both
 * lengths are 0 and the error is returned.
 */
RBDL_API int rbd_metadata_list(rbd_image_t image, const char *start,
			       uint64_t max, char *keys, size_t *key_len,
			       char *values, size_t *vals_len)
{
	if (rbdl_whole_from_user(image) &&
	    (!key_len || !vals_len))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_metadata_list, image, start, max, keys, key_len,
		    values, vals_len);
	struct rbdl_md_pair *v = NULL;
	size_t n = 0, ktot = 0, vtot = 0;

	GET_IMAGE(img, image);
	if (!key_len || !vals_len)
		return -EINVAL;
	int r = rbdl_info_metadata_list(img, start, max, &v, &n);

	for (size_t i = 0; i < n; i++) {
		ktot += strlen(v[i].key) + 1;
		vtot += v[i].vlen + 1;
	}
	bool short_buf = *key_len < ktot || *vals_len < vtot;

	*key_len = ktot;
	*vals_len = vtot;
	if (r == 0 && short_buf)
		r = -ERANGE;
	if (r == 0 && ((ktot && !keys) || (vtot && !values)))
		r = -EINVAL;
	if (r == 0) {
		char *kp = keys, *vp = values;

		for (size_t i = 0; i < n; i++) {
			size_t kl = strlen(v[i].key) + 1;

			memcpy(kp, v[i].key, kl);
			kp += kl;
			memcpy(vp, v[i].value, v[i].vlen);
			vp[v[i].vlen] = '\0';
			vp += v[i].vlen + 1;
		}
	}
	rbdl_info_metadata_free(v, n);
	return r;
}

/* Remove one metadata key: -ENOENT if absent, -EROFS on read-only opens
 * and at a snapshot. */
RBDL_API int rbd_metadata_remove(rbd_image_t image, const char *key)
{
	RBDL_ON_WHOLE(rbd_metadata_remove, image, key);
	GET_IMAGE(img, image);
	if (!key)
		return -EINVAL;
	RBDL_ON_JOURNAL(rbd_metadata_remove, img, key);
	return rbdl_info_metadata_remove(img, key);
}

/* ---- configuration list ------------------------------------------------------ */

/*
 * The rbd_* options an image can override, in name order, each with the
 * value in effect and where it came from (RBD_CONFIG_SOURCE_CONFIG: the
 * client configuration; _POOL: `rbd config pool set`; _IMAGE: `rbd config
 * image set`), as librbd 16.2's Config<>::list.  *max_options smaller
 * than the count: -ERANGE with *max_options set to the count (options
 * untouched, may be NULL); else the entries, *max_options set to the
 * count, names and values malloc'ed for rbd_config_image_list_cleanup.
 */
RBDL_API int rbd_config_image_list(rbd_image_t image,
				   rbd_config_option_t *options,
				   int *max_options)
{
	if (!max_options && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_config_image_list, image, options, max_options);
	rbd_config_option_t *v;
	size_t n;

	GET_IMAGE(img, image);
	if (!max_options)
		return -EINVAL;
	int r = rbdl_config_image_list(img, &v, &n);

	if (r < 0)
		return r;
	if (*max_options < (int)n) {
		*max_options = (int)n;
		rbdl_config_list_free(v, n);
		return -ERANGE;
	}
	if (n && !options) {
		rbdl_config_list_free(v, n);
		return -EINVAL;
	}
	if (n)
		memcpy(options, v, n * sizeof(*v));
	free(v);	/* the strings are the caller's now */
	*max_options = (int)n;
	return 0;
}

/* Free the names and values of the first max_options entries. */
RBDL_API void rbd_config_image_list_cleanup(rbd_config_option_t *options,
					    int max_options)
{
	for (int i = 0; options && i < max_options; i++) {
		free(options[i].name);
		free(options[i].value);
	}
}

/* ---- rename, resize and remove with progress --------------------------------- */

/*
 * Rename image srcname of io's pool and namespace to destname: -EEXIST if
 * destname is taken, -ENOENT if srcname does not exist.  Runs as
 * exclusive-lock owner on images with the feature, as librbd's rename.
 * A journaled image is renamed by the system's librbd (which journals it;
 * -EOPNOTSUPP without one), and so is an image it serves whole (format 1,
 * an import's destination; without one, the open's error).
 */
RBDL_API int rbd_rename(rados_ioctx_t src_io_ctx, const char *srcname,
			const char *destname)
{
	bool need_real = false;
	int r;

	if (!src_io_ctx || !srcname || !destname)
		return -EINVAL;
	r = rbdl_op_rename(src_io_ctx, srcname, destname, &need_real);
	if (!need_real)
		return r;
	/* a journaled image (librbd journals the rename), or one the
	 * system's librbd serves whole (api/whole.h) */
	__typeof__(&rbd_rename) real = RBDL_REAL_FN(rbd_rename);

	return real ? real(src_io_ctx, srcname, destname) : r;
}

/*
 * rbd_resize with librbd's progress reports: cb(object, object count,
 * cbdata) once per object a shrink goes through (none for a growth); a
 * negative return from cb ends the resize with that value.  allow_shrink
 * false: a smaller size fails with -EINVAL.
 */
RBDL_API int rbd_resize2(rbd_image_t image, uint64_t size, bool allow_shrink,
			 librbd_progress_fn_t cb, void *cbdata)
{
	RBDL_ON_WHOLE(rbd_resize2, image, size, allow_shrink,
		    RBDL_REAL_PROGRESS(cb), cbdata);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_resize2, img, size, allow_shrink,
			RBDL_REAL_PROGRESS(cb), cbdata);
	return rbdl_maint_resize2(img, size, allow_shrink, cb, cbdata);
}

/* rbd_resize2 with allow_shrink. */
RBDL_API int rbd_resize_with_progress(rbd_image_t image, uint64_t size,
				      librbd_progress_fn_t cb, void *cbdata)
{
	RBDL_ON_WHOLE(rbd_resize_with_progress, image, size,
		    RBDL_REAL_PROGRESS(cb), cbdata);
	GET_IMAGE(img, image);
	RBDL_ON_JOURNAL(rbd_resize_with_progress, img, size,
			RBDL_REAL_PROGRESS(cb), cbdata);
	return rbdl_maint_resize2(img, size, true, cb, cbdata);
}

/*
 * rbd_remove with librbd's progress reports: cb(object, object count,
 * cbdata) once per data object, in order; a negative return from cb ends
 * the removal with that value (the image is left, partly trimmed).  A
 * journaled or mirrored image is removed by the system's librbd, as
 * rbd_remove's.
 */
RBDL_API int rbd_remove_with_progress(rados_ioctx_t io, const char *name,
				      librbd_progress_fn_t cb, void *cbdata)
{
	bool need_real = false;
	int r;

	if (!io || !name)
		return -EINVAL;
	r = rbdl_op_remove_prog(io, name, cb, cbdata, &need_real);
	if (!need_real)
		return r;
	RBDL_FORWARD(rbd_remove_with_progress, io, name, cb, cbdata);
}

/* ---- advisory locks ------------------------------------------------------------ */

static int fill_packed(char *buf, const struct rbdl_adv_lockers *l,
		       size_t field)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *s = *(char *const *)((const char *)&l->v[i] + field);
		size_t k = strlen(s) + 1;

		memcpy(buf, s, k);
		buf += k;
	}
	return 0;
}

/*
 * The lockers of the header's "rbd_lock" (advisory locks and the
 * exclusive-lock feature's managed lock alike): their count, with the
 * clients ("client.<id>"), cookies and addresses packed NUL-separated, and
 * the tag; *exclusive as the lock's type (which the OSD keeps after the
 * last locker left).  Every length is set to the size needed; -ERANGE if
 * any buffer is too small.  Read from the OSD at each call: librbd answers
 * from its last refresh, so its list can lag (it does not show the
 * managed lock its own handle took since).
 */
RBDL_API ssize_t rbd_list_lockers(rbd_image_t image, int *exclusive,
				  char *tag, size_t *tag_len, char *clients,
				  size_t *clients_len, char *cookies,
				  size_t *cookies_len, char *addrs,
				  size_t *addrs_len)
{
	if (rbdl_whole_from_user(image) &&
	    (!exclusive || !tag_len || !clients_len || !cookies_len ||
	     !addrs_len))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_list_lockers, image, exclusive, tag, tag_len,
		    clients, clients_len, cookies, cookies_len, addrs,
		    addrs_len);
	struct rbdl_adv_lockers l;
	size_t ct = 0, kt = 0, at = 0;

	GET_IMAGE(img, image);
	if (!exclusive || !tag_len || !clients_len || !cookies_len ||
	    !addrs_len)
		return -EINVAL;
	int r = rbdl_advlock_list(img, &l);

	if (r < 0)
		return r;
	*exclusive = l.exclusive;
	for (size_t i = 0; i < l.n; i++) {
		ct += strlen(l.v[i].client) + 1;
		kt += strlen(l.v[i].cookie) + 1;
		at += strlen(l.v[i].addr) + 1;
	}
	size_t tt = strlen(l.tag) + 1;
	bool short_buf = ct > *clients_len || kt > *cookies_len ||
			 at > *addrs_len || tt > *tag_len;

	*clients_len = ct;
	*cookies_len = kt;
	*addrs_len = at;
	*tag_len = tt;
	ssize_t ret = (ssize_t)l.n;

	if (short_buf)
		ret = -ERANGE;
	else if (!tag || (l.n && (!clients || !cookies || !addrs)))
		ret = -EINVAL;
	if (ret >= 0) {
		strcpy(tag, l.tag);
		fill_packed(clients, &l, offsetof(struct rbdl_adv_locker, client));
		fill_packed(cookies, &l, offsetof(struct rbdl_adv_locker, cookie));
		fill_packed(addrs, &l, offsetof(struct rbdl_adv_locker, addr));
	}
	rbdl_advlock_list_free(&l);
	return ret;
}

/* Take the advisory lock exclusively under cookie (NULL: ""): -EEXIST if
 * this client holds it with that cookie already, -EBUSY if another does. */
RBDL_API int rbd_lock_exclusive(rbd_image_t image, const char *cookie)
{
	RBDL_ON_WHOLE(rbd_lock_exclusive, image, cookie);
	GET_IMAGE(img, image);
	return rbdl_advlock_lock(img, true, cookie ? cookie : "", "");
}

/* Take the advisory lock shared with tag (NULL: ""): -EBUSY if it is held
 * exclusively or with another tag. */
RBDL_API int rbd_lock_shared(rbd_image_t image, const char *cookie,
			     const char *tag)
{
	RBDL_ON_WHOLE(rbd_lock_shared, image, cookie, tag);
	GET_IMAGE(img, image);
	return rbdl_advlock_lock(img, false, cookie ? cookie : "",
				 tag ? tag : "");
}

/* Release this client's lock under cookie: -ENOENT if it holds none. */
RBDL_API int rbd_unlock(rbd_image_t image, const char *cookie)
{
	RBDL_ON_WHOLE(rbd_unlock, image, cookie);
	GET_IMAGE(img, image);
	return rbdl_advlock_unlock(img, cookie ? cookie : "");
}

/* Break the lock of client ("client.<id>") under cookie, blocklisting the
 * client first (rbd_blocklist_on_break_lock): -EINVAL for an unparsable
 * client, -ENOENT if it holds no lock. */
RBDL_API int rbd_break_lock(rbd_image_t image, const char *client,
			    const char *cookie)
{
	RBDL_ON_WHOLE(rbd_break_lock, image, client, cookie);
	GET_IMAGE(img, image);
	if (!client)
		return -EINVAL;
	return rbdl_advlock_break(img, client, cookie ? cookie : "");
}

/* ---- iteration --------------------------------------------------------------- */

/*
 * Read [ofs, ofs + len) clipped to the image, one stripe period at a time,
 * calling cb(offset from ofs, length, data, arg) for each (holes read as
 * zeros): the bytes read, or the first negative (an error, -EINVAL for
 * ofs past the end, or cb's return).
 */
RBDL_API int64_t rbd_read_iterate(rbd_image_t image, uint64_t ofs, size_t len,
				  int (*cb)(uint64_t, size_t, const char *,
					    void *),
				  void *arg)
{
	RBDL_ON_WHOLE(rbd_read_iterate, image, ofs, len, cb, arg);
	GET_IMAGE(img, image);
	if (!cb)
		return -EINVAL;
	return rbdl_info_read_iterate(img, ofs, len, cb, arg);
}

/* rbd_read_iterate returning 0 on success. */
RBDL_API int rbd_read_iterate2(rbd_image_t image, uint64_t ofs, uint64_t len,
			       int (*cb)(uint64_t, size_t, const char *,
					 void *),
			       void *arg)
{
	RBDL_ON_WHOLE(rbd_read_iterate2, image, ofs, len, cb, arg);
	GET_IMAGE(img, image);
	if (!cb)
		return -EINVAL;
	int64_t r = rbdl_info_read_iterate(img, ofs, len, cb, arg);

	return r > 0 ? 0 : (int)r;
}

/* rbd_diff_iterate2 with include_parent and exact extents. */
RBDL_API int rbd_diff_iterate(rbd_image_t image, const char *fromsnapname,
			      uint64_t ofs, uint64_t len,
			      int (*cb)(uint64_t, size_t, int, void *),
			      void *arg)
{
	RBDL_ON_WHOLE(rbd_diff_iterate, image, fromsnapname, ofs, len, cb, arg);
	GET_IMAGE(img, image);
	if (!cb)
		return -EINVAL;
	/* a journaled image's writes may sit in its real handle's cache */
	rbd_image_t real = rbdl_real_image_shared(img);

	if (real)
		RBDL_FORWARD(rbd_diff_iterate, real, fromsnapname, ofs,
			     rbdl_real_len(ofs, len), cb, arg);
	return rbdl_diff_iterate(img, fromsnapname, ofs, len, false, true, cb,
				 arg);
}

/* ---- asynchronous open and close ------------------------------------------------ */

/* The delivery of every aio open and close (never closed). */
static struct rbdl_delivery aio_dl;
static pthread_once_t aio_once = PTHREAD_ONCE_INIT;
static int aio_dl_err;

static void aio_dl_init(void)
{
	aio_dl_err = rbdl_delivery_init(&aio_dl);
}

struct aio_job {
	struct rbdl_ctl_task task;	/* one-shot, on the callback lane */
	struct rbdl_comp *comp;
	rados_ioctx_t io;		/* private duplicate (open) */
	char *name, *id, *snap;		/* copies (open) */
	bool ro;
	rbd_image_t *image;		/* where the handle goes (open) */
	struct rbdl_handle *h;		/* the image to close (close) */
};

static void job_free(struct aio_job *j)
{
	if (j->io)
		rados_ioctx_destroy(j->io);
	free(j->name);
	free(j->id);
	free(j->snap);
	free(j);
}

static void aio_open_job(struct rbdl_ctl_task *t)
{
	struct aio_job *j = container_of(t, struct aio_job, task);
	struct rbdl_handle *h = NULL;
	int r = rbdl_image_open(j->io, j->name, j->id, j->snap, j->ro, &h);

	if (r < 0)
		r = rbdl_whole_open(j->io, j->name, j->id, j->snap, j->ro, r,
				    &h);

	/* As librbd's C_OpenComplete: the handle, or NULL on failure, is
	 * stored before the completion fires. */
	*j->image = r < 0 ? NULL : h;
	struct rbdl_comp *c = j->comp;

	job_free(j);
	rbdl_comp_complete(c, r);
	rbdl_ctl_put();		/* aio_start's */
}

static void aio_close_job(struct rbdl_ctl_task *t)
{
	struct aio_job *j = container_of(t, struct aio_job, task);
	int r = rbdl_whole_from_user(j->h) ? rbdl_whole_close(j->h)
					   : rbdl_image_close(j->h);
	struct rbdl_comp *c = j->comp;

	job_free(j);
	rbdl_comp_complete(c, r);
	rbdl_ctl_put();		/* aio_start's */
}

/* Arm comp on the shared delivery and run fn(j) on the control
 * context's callback lane (core/ctl.h), which keeps its thread while the
 * job is pending. */
static int aio_start(struct aio_job *j, void (*fn)(struct rbdl_ctl_task *))
{
	pthread_once(&aio_once, aio_dl_init);
	if (aio_dl_err)
		return aio_dl_err;
	if (rbdl_comp_arm(j->comp, &aio_dl, false) < 0)
		return -EINVAL;
	rbdl_ctl_get();
	if (rbdl_ctl_submit_once(&j->task, RBDL_CTL_CALLBACK, fn) < 0) {
		/* No thread: run it here (the callback then runs inside
		 * this call; better than a completion that never fires). */
		rbdl_err("cannot start the control thread; running the aio "
			 "open/close inline");
		fn(&j->task);
	}
	return 0;
}

static int aio_open_common(rados_ioctx_t io, const char *name, const char *id,
			   rbd_image_t *image, const char *snap_name,
			   rbd_completion_t c, bool ro)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);
	struct aio_job *j;
	int r;

	if (!io || !image || !comp || (!name && !id))
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->comp = comp;
	j->ro = ro;
	j->image = image;
	r = rbdl_ioctx_clone(io, &j->io, NULL);
	if (r < 0) {
		j->io = NULL;
		job_free(j);
		return r;
	}
	j->name = name ? strdup(name) : NULL;
	j->id = id ? strdup(id) : NULL;
	/* "" is HEAD, as NULL (rbd_open). */
	j->snap = snap_name && snap_name[0] ? strdup(snap_name) : NULL;
	if ((name && !j->name) || (id && !j->id) ||
	    (snap_name && snap_name[0] && !j->snap)) {
		job_free(j);
		return -ENOMEM;
	}
	r = aio_start(j, aio_open_job);
	if (r < 0)
		job_free(j);
	return r;
}

/*
 * rbd_open without blocking: returns 0 at once (-EINVAL for NULL
 * arguments or a used completion) and completes c with the open's result;
 * *image is set before (NULL on failure).  The caller's ioctx and strings
 * may go as soon as the call returns.
 */
RBDL_API int rbd_aio_open(rados_ioctx_t io, const char *name,
			  rbd_image_t *image, const char *snap_name,
			  rbd_completion_t c)
{
	return aio_open_common(io, name, NULL, image, snap_name, c, false);
}

/* rbd_aio_open by image id. */
RBDL_API int rbd_aio_open_by_id(rados_ioctx_t io, const char *id,
				rbd_image_t *image, const char *snap_name,
				rbd_completion_t c)
{
	return aio_open_common(io, NULL, id, image, snap_name, c, false);
}

/* rbd_aio_open, read-only. */
RBDL_API int rbd_aio_open_read_only(rados_ioctx_t io, const char *name,
				    rbd_image_t *image, const char *snap_name,
				    rbd_completion_t c)
{
	return aio_open_common(io, name, NULL, image, snap_name, c, true);
}

/* rbd_aio_open_by_id, read-only. */
RBDL_API int rbd_aio_open_by_id_read_only(rados_ioctx_t io, const char *id,
					  rbd_image_t *image,
					  const char *snap_name,
					  rbd_completion_t c)
{
	return aio_open_common(io, NULL, id, image, snap_name, c, true);
}

/*
 * rbd_close without blocking: returns 0 at once (-EINVAL for a closed or
 * bogus handle or a used completion) and completes c once in-flight I/O
 * drained and the image is closed.  The handle must not be used after
 * the call.
 */
RBDL_API int rbd_aio_close(rbd_image_t image, rbd_completion_t c)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);
	struct aio_job *j;
	int r;

	if ((!rbdl_image_from_user(image) && !rbdl_whole_from_user(image)) ||
	    !comp)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->comp = comp;
	j->h = image;
	r = aio_start(j, aio_close_job);
	if (r < 0)
		job_free(j);
	return r;
}
