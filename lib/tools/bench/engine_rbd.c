/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * engine_rbd.c - the lite and librbd backends: both are driven through the
 * same table of rbd_* functions, dlsym'ed from the library the parent
 * named with --child-lib, so that one program measures either library
 * (and the image probe reads layouts through it).
 *
 * Threading: be_rbd_submit() and be_rbd_reap() run on a job thread;
 * the completion callbacks run on the library's callback thread and touch
 * only their slot and job (callback mode resubmits from there, handoff
 * mode only queues the slot).  Shared handles are opened by the main
 * thread before the job threads start and closed after they are joined.
 *
 * Ownership: every completion is released exactly once, by whoever reads
 * its return value.  A job closes only the handles it opened (own = 1);
 * shared handles belong to the child (be_rbd_close_shared).
 */
#include "engine.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#define RESOLVE(api, field, name, required)				\
	do {								\
		*(void **)&(api)->field = dlsym((api)->h, name);	\
		if ((required) && !(api)->field) {			\
			snprintf(err, errlen, "%s: no symbol %s", path,	\
				 name);					\
			return -ENOSYS;					\
		}							\
	} while (0)

/* dlopen path and resolve the table; realpath_out gets the file loaded. */
int load_api(struct rbd_api *a, const char *path, char *err, size_t errlen,
	     char *realpath_out, size_t rplen)
{
	struct link_map *lm = NULL;

	memset(a, 0, sizeof(*a));
	a->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!a->h) {
		snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
		return -ENOENT;
	}
	if (realpath_out) {
		if (dlinfo(a->h, RTLD_DI_LINKMAP, &lm) == 0 && lm &&
		    lm->l_name)
			snprintf(realpath_out, rplen, "%s", lm->l_name);
		else
			snprintf(realpath_out, rplen, "%s", path);
	}
	RESOLVE(a, version, "rbd_version", 1);
	RESOLVE(a, open, "rbd_open", 1);
	RESOLVE(a, close, "rbd_close", 1);
	RESOLVE(a, stat, "rbd_stat", 1);
	RESOLVE(a, get_features, "rbd_get_features", 1);
	RESOLVE(a, get_stripe_unit, "rbd_get_stripe_unit", 1);
	RESOLVE(a, get_stripe_count, "rbd_get_stripe_count", 1);
	RESOLVE(a, get_data_pool_id, "rbd_get_data_pool_id", 1);
	RESOLVE(a, aio_create_completion, "rbd_aio_create_completion", 1);
	RESOLVE(a, aio_read, "rbd_aio_read", 1);
	RESOLVE(a, aio_write, "rbd_aio_write", 1);
	RESOLVE(a, aio_get_return_value, "rbd_aio_get_return_value", 1);
	RESOLVE(a, aio_get_arg, "rbd_aio_get_arg", 1);
	RESOLVE(a, aio_release, "rbd_aio_release", 1);
	RESOLVE(a, set_image_notification, "rbd_set_image_notification", 1);
	RESOLVE(a, poll_io_events, "rbd_poll_io_events", 1);
	RESOLVE(a, encryption_load, "rbd_encryption_load", 0);
	RESOLVE(a, rbdlite_version, "rbdlite_version", 0);
	RESOLVE(a, rbdlite_get_stats, "rbdlite_get_stats", 0);
	return 0;
}

int be_rbd_open_image(struct child *c, const char *name, rbd_image_t *img)
{
	const struct opts *o = c->o;
	int r = c->api.open(c->io, name, img, NULL);

	if (r < 0 || !o->luks_format)
		return r;
	/* Both formats' options structs have the same layout. */
	rbd_encryption_luks2_format_options_t lo = {
		.alg = RBD_ENCRYPTION_ALGORITHM_AES256,
		.passphrase = o->luks_pass,
		.passphrase_size = strlen(o->luks_pass),
	};

	r = c->api.encryption_load
		    ? c->api.encryption_load(*img, o->luks_format - 1, &lo,
					     sizeof(lo))
		    : -ENOSYS;
	if (r < 0) {
		c->api.close(*img);
		*img = NULL;
	}
	return r;
}

/* ---- image info probe --------------------------------------------------- */

/* --child-info: send one REC_INFO per image; 0 or 1 (error sent). */
int be_rbd_info(struct child *c)
{
	const struct opts *o = c->o;
	struct rbd_api *a = &c->api;

	for (int i = 0; i < o->nimages; i++) {
		struct info_rec rec;
		rbd_image_info_t info;
		rbd_image_t img;
		int r;

		memset(&rec, 0, sizeof(rec));
		rec.idx = i;
		if (o->luks_format) {
			/* The stored size, to find the header's. */
			r = a->open(c->io, o->images[i], &img, NULL);
			if (r == 0) {
				r = a->stat(img, &info, sizeof(info));
				a->close(img);
			}
			if (r < 0) {
				child_send_error(o, r, "cannot stat image "
						 "%s/%s: %s", o->pool,
						 o->images[i], strerror(-r));
				return 1;
			}
			rec.l.data_off = info.size;
			rec.l.crypt_block = o->luks_format - 1 ==
						    RBD_ENCRYPTION_FORMAT_LUKS1
					    ? 512 : 4096;
		}
		r = be_rbd_open_image(c, o->images[i], &img);
		if (r < 0) {
			child_send_error(o, r, "cannot open image %s/%s: %s",
					 o->pool, o->images[i], strerror(-r));
			return 1;
		}
		r = a->stat(img, &info, sizeof(info));
		if (r == 0)
			r = a->get_features(img, &rec.l.features);
		if (r == 0)
			r = a->get_stripe_unit(img, &rec.l.stripe_unit);
		if (r == 0)
			r = a->get_stripe_count(img, &rec.l.stripe_count);
		if (r < 0) {
			a->close(img);
			child_send_error(o, r, "image %s: stat: %s",
					 o->images[i], strerror(-r));
			return 1;
		}
		rec.l.size = info.size;
		rec.l.data_off -= o->luks_format ? info.size : 0;
		rec.l.order = info.order;
		rec.l.data_pool_id = a->get_data_pool_id(img);
		snprintf(rec.l.prefix, sizeof(rec.l.prefix), "%s",
			 info.block_name_prefix);
		if (a->rbdlite_version)
			snprintf(rec.lib_version, sizeof(rec.lib_version), "%s",
				 a->rbdlite_version());
		a->close(img);
		if (send_rec(c->fd, REC_INFO, &rec, sizeof(rec)) < 0)
			return 1;
	}
	return 0;
}

/* ---- image handles ------------------------------------------------------ */

/* --handles=shared: one handle per image for every job. */
int be_rbd_open_shared(struct child *c, int *failed_img)
{
	const struct opts *o = c->o;

	c->handles = xcalloc((size_t)o->nimages, sizeof(*c->handles));
	for (int i = 0; i < o->nimages; i++) {
		int r = be_rbd_open_image(c, o->images[i], &c->handles[i]);

		if (r < 0) {
			c->handles[i] = NULL;
			*failed_img = i;
			return r;
		}
	}
	return 0;
}

void be_rbd_close_shared(struct child *c)
{
	if (!c->handles)
		return;
	for (int i = 0; i < c->o->nimages; i++)
		if (c->handles[i])
			c->api.close(c->handles[i]);
	free(c->handles);
	c->handles = NULL;
}

/*
 * Open the job's images (or borrow the shared handles).  In poll mode every
 * image notifies the job's one eventfd, so one wait covers all of them.
 */
int be_rbd_job_open(struct job *j, int *failed_img)
{
	struct child *c = j->c;
	const struct opts *o = c->o;
	int r;

	for (int k = 0; k < j->nimg; k++) {
		struct jimg *ji = &j->ji[k];

		if (c->handles) {
			ji->image = c->handles[ji->img];
			continue;
		}
		r = be_rbd_open_image(c, o->images[ji->img], &ji->image);
		if (r < 0) {
			ji->image = NULL;
			*failed_img = ji->img;
			return r;
		}
		ji->own = 1;
		if (o->mode == MODE_POLL || o->mode == MODE_POLL_NOCB) {
			r = c->api.set_image_notification(ji->image, j->efd,
							  EVENT_TYPE_EVENTFD);
			if (r < 0) {
				*failed_img = ji->img;
				return r;
			}
		}
	}
	return 0;
}

void be_rbd_job_close(struct job *j)
{
	for (int k = 0; k < j->nimg; k++) {
		if (j->ji[k].image && j->ji[k].own)
			j->c->api.close(j->ji[k].image);
		j->ji[k].image = NULL;
	}
}

/* ---- submission and completion ------------------------------------------ */

/* poll mode: a callback that does nothing, as fio's rbd engine passes */
static void rbd_noop_cb(rbd_completion_t comp, void *arg)
{
	(void)comp;
	(void)arg;
}

static void rbd_resubmit_cb(rbd_completion_t comp, void *arg)
{
	struct slot *s = arg;
	struct job *j = s->j;
	ssize_t r = j->c->api.aio_get_return_value(comp);

	j->c->api.aio_release(comp);
	if (!handle_completion(j, s, r))
		cb_retire(j);
}

static void rbd_handoff_cb(rbd_completion_t comp, void *arg)
{
	struct slot *s = arg;
	struct job *j = s->j;

	s->res = j->c->api.aio_get_return_value(comp);
	j->c->api.aio_release(comp);
	slot_handoff(s);
}

/* Start the slot's I/O (next_io() has chosen it); 0 or a negative errno. */
int be_rbd_submit(struct job *j, struct slot *s)
{
	struct child *c = j->c;
	const struct rbd_api *a = &c->api;
	rbd_image_t image = j->ji[s->cur].image;
	rbd_completion_t comp;
	rbd_callback_t cb;
	int r;

	cb = c->o->mode == MODE_CALLBACK ? rbd_resubmit_cb :
	     c->o->mode == MODE_HANDOFF ? rbd_handoff_cb :
	     c->o->mode == MODE_POLL ? rbd_noop_cb : NULL;
	r = a->aio_create_completion(s, cb, &comp);
	if (r < 0)
		return r;
	if (s->write)
		r = a->aio_write(image, s->off, c->o->bs, s->buf, comp);
	else
		r = a->aio_read(image, s->off, c->o->bs, s->buf, comp);
	if (r < 0)
		a->aio_release(comp);
	return r;
}

/*
 * poll and poll-nocb mode, after an eventfd wake-up: reap the job's
 * completions with rbd_poll_io_events; returns how many slots retired.
 */
int be_rbd_reap(struct job *j)
{
	const struct rbd_api *a = &j->c->api;
	int depth = j->c->o->iodepth;
	int retired = 0, n;

	/* all of the job's images share its eventfd: poll each */
	for (int k = 0; k < j->nimg; k++)
		do {
			n = a->poll_io_events(j->ji[k].image, j->comps, depth);
			for (int i = 0; i < n; i++) {
				rbd_completion_t comp = j->comps[i];
				struct slot *s = a->aio_get_arg(comp);
				ssize_t r = a->aio_get_return_value(comp);

				a->aio_release(comp);
				if (!handle_completion(j, s, r))
					retired++;
			}
		} while (n == depth);
	return retired;
}
