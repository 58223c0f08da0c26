/*
 * advlock.c - the advisory image lock of librbd's C API (rbd_lock_exclusive,
 * rbd_lock_shared, rbd_unlock, rbd_break_lock, rbd_list_lockers): cls
 * "lock" calls on the image header under the lock name "rbd_lock", as
 * librbd 16.2's internal.cc makes them, each followed by a HEADER_UPDATE
 * notification.  Like librbd it does not look at the exclusive-lock
 * feature: that feature's managed lock is the same cls lock, so a client
 * holding it is listed here, and a lock call while it is held fails with
 * the OSD's -EBUSY.  rbd_list_lockers answers, as librbd's list_lockers
 * does, with the lockers the last refresh read (a refresh follows every
 * header change notification, ours included; the managed lock this
 * handle just took by writing is not one), reading them now only when the
 * refresh could not.
 *
 * Threading: synchronous on the caller's thread (info.h).  Ownership: the
 * locker list is malloc'ed, freed by rbdl_advlock_list_free.
 */
#include "config.h"

#include "info.h"
#include "maint_int.h"

#include "image/refresh.h"
#include "proto/cls_lock.h"
#include "proto/rados.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCK_NAME "rbd_lock"
#define ENTITY_TYPE_CLIENT 8	/* CEPH_ENTITY_TYPE_CLIENT */

void rbdl_advlock_list_free(struct rbdl_adv_lockers *l)
{
	for (size_t i = 0; l->v && i < l->n; i++) {
		free(l->v[i].client);
		free(l->v[i].cookie);
		free(l->v[i].addr);
	}
	free(l->v);
	free(l->tag);
	memset(l, 0, sizeof(*l));
}

/* entity_addr_t::get_legacy_str: the address without its "v2:" type. */
static const char *legacy_addr(const char *a)
{
	if (!strncmp(a, "v2:", 3) || !strncmp(a, "v1:", 3))
		return a + 3;
	return a;
}

/* The entity name of a locker ("client.4123", "osd.0", ...). */
static int entity_str(const struct rbdl_locker *l, char *buf, size_t cap)
{
	static const char *const types[] = {
		[1] = "mon", [2] = "mds", [4] = "osd", [8] = "client",
		[16] = "mgr",
	};
	const char *t = l->entity_type < sizeof(types) / sizeof(types[0]) &&
				types[l->entity_type]
			? types[l->entity_type]
			: "unknown";

	return snprintf(buf, cap, "%s.%" PRId64, t, l->entity_num) < (int)cap
		       ? 0
		       : -ERANGE;
}

/* The locker list of li (a cls lock.get_info reply). */
static int list_from(const struct rbdl_lock_info *li,
		     struct rbdl_adv_lockers *out)
{
	int r = 0;

	out->exclusive = li->lock_type == RBDL_LOCK_EXCLUSIVE;
	out->tag = strdup(li->tag ? li->tag : "");
	out->v = calloc(li->n_lockers ? li->n_lockers : 1, sizeof(*out->v));
	if (!out->tag || !out->v)
		r = -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < li->n_lockers; i++) {
		const struct rbdl_locker *l = &li->lockers[i];
		struct rbdl_adv_locker *o = &out->v[out->n];
		char ent[64];

		r = entity_str(l, ent, sizeof(ent));
		if (r < 0)
			break;
		o->client = strdup(ent);
		o->cookie = strdup(l->cookie ? l->cookie : "");
		o->addr = strdup(legacy_addr(l->addr));
		out->n++;
		if (!o->client || !o->cookie || !o->addr)
			r = -ENOMEM;
	}
	if (r < 0)
		rbdl_advlock_list_free(out);
	return r;
}

int rbdl_advlock_list(struct rbdl_image *img, struct rbdl_adv_lockers *out)
{
	struct rbdl_lock_info li;
	int r = rbdl_image_maybe_refresh(img);

	memset(out, 0, sizeof(*out));
	if (r < 0)
		return r;
	pthread_mutex_lock(&img->refresh_lock);
	if (img->lockers_ok) {
		r = list_from(&img->lockers, out);
		pthread_mutex_unlock(&img->refresh_lock);
		return r;
	}
	pthread_mutex_unlock(&img->refresh_lock);
	r = rbdl_lockobj_info(img->md_io, img->header_oid, &li);
	if (r < 0)
		return r;
	r = list_from(&li, out);
	rbdl_lock_info_free(&li);
	return r;
}

int rbdl_advlock_lock(struct rbdl_image *img, bool exclusive,
		      const char *cookie, const char *tag)
{
	size_t cap = strlen(cookie) + strlen(tag) + 128;
	uint8_t *in = malloc(cap);
	long n;
	int r = in ? rbdl_image_maybe_refresh(img) : -ENOMEM;

	if (r == 0) {
		n = rbdl_encode_lock_lock(in, cap, LOCK_NAME,
					  exclusive ? RBDL_LOCK_EXCLUSIVE
						    : RBDL_LOCK_SHARED,
					  cookie, tag, "", 0, 0, 0);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(img->md_io, img->header_oid, "lock",
					   "lock", in, (size_t)n);
	}
	free(in);
	if (r == 0)
		rbdl_maint_notify(img);
	return r;
}

int rbdl_advlock_unlock(struct rbdl_image *img, const char *cookie)
{
	size_t cap = strlen(cookie) + 64;
	uint8_t *in = malloc(cap);
	long n;
	int r = in ? rbdl_image_maybe_refresh(img) : -ENOMEM;

	if (r == 0) {
		n = rbdl_encode_lock_unlock(in, cap, LOCK_NAME, cookie);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(img->md_io, img->header_oid, "lock",
					   "unlock", in, (size_t)n);
	}
	free(in);
	if (r == 0)
		rbdl_maint_notify(img);
	return r;
}

/* entity_name_t::parse: "<type>.<number>"; only what a locker can be. */
static int parse_entity(const char *s, uint8_t *type, int64_t *num)
{
	static const struct {
		const char *name;
		uint8_t type;
	} types[] = {
		{ "mon.", 1 }, { "mds.", 2 }, { "osd.", 4 },
		{ "client.", ENTITY_TYPE_CLIENT }, { "mgr.", 16 },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t k = strlen(types[i].name);
		char *end;

		if (strncmp(s, types[i].name, k))
			continue;
		if (!s[k])
			return -EINVAL;
		errno = 0;
		long long v = strtoll(s + k, &end, 10);

		if (errno || *end)
			return -EINVAL;
		*type = types[i].type;
		*num = v;
		return 0;
	}
	return -EINVAL;
}

static bool conf_bool(rados_t cluster, const char *opt, bool def)
{
	char v[16];

	if (rados_conf_get(cluster, opt, v, sizeof(v)) < 0)
		return def;
	return !strcmp(v, "true") || !strcmp(v, "1");
}

static uint32_t conf_u32(rados_t cluster, const char *opt, uint32_t def)
{
	char v[32], *end;

	if (rados_conf_get(cluster, opt, v, sizeof(v)) < 0)
		return def;
	unsigned long x = strtoul(v, &end, 10);

	return *end ? def : (uint32_t)x;
}

int rbdl_advlock_break(struct rbdl_image *img, const char *client,
		       const char *cookie)
{
	struct rbdl_locker target;
	int r = rbdl_image_maybe_refresh(img);

	if (r < 0)
		return r;
	memset(&target, 0, sizeof(target));
	if (parse_entity(client, &target.entity_type, &target.entity_num) < 0)
		return -EINVAL;
	if (conf_bool(img->cluster, "rbd_blocklist_on_break_lock", true)) {
		struct rbdl_lock_info li;
		char addr[sizeof(li.lockers[0].addr)] = "";

		r = rbdl_lockobj_info(img->md_io, img->header_oid, &li);
		if (r < 0)
			return r;
		for (uint32_t i = 0; i < li.n_lockers; i++) {
			const struct rbdl_locker *l = &li.lockers[i];

			if (l->entity_type == target.entity_type &&
			    l->entity_num == target.entity_num) {
				snprintf(addr, sizeof(addr), "%s",
					 legacy_addr(l->addr));
				break;
			}
		}
		rbdl_lock_info_free(&li);
		if (!addr[0])
			return -ENOENT;
		r = rados_blocklist_add(
			img->cluster, addr,
			conf_u32(img->cluster, "rbd_blocklist_expire_seconds",
				 0));
		if (r < 0)
			return r;
	}
	size_t cap = strlen(cookie) + 128;
	uint8_t *in = malloc(cap);
	long n;

	if (!in)
		return -ENOMEM;
	n = rbdl_encode_lock_break(in, cap, LOCK_NAME, target.entity_type,
				   target.entity_num, cookie);
	r = n < 0 ? (int)n
		  : rbdl_cls_write(img->md_io, img->header_oid, "lock",
				   "break_lock", in, (size_t)n);
	free(in);
	if (r == 0)
		rbdl_maint_notify(img);
	return r;
}
