/*
 * list.c - listing a pool's images as librbd 16.2's api::Image::list_images
 * does (format 1 names in the default namespace, the directory, and the
 * trash entries of interrupted removals), and api::Namespace::exists.
 *
 * Threading: synchronous and self-contained, like create.c.
 */
#include "config.h"

#include "pool.h"

#include "core/internal.h"
#include "core/striper.h"
#include "image/conf.h"
#include "ops/options.h"
#include "proto/cls_rbd.h"
#include "proto/notify.h"
#include "proto/objmap_wire.h"
#include "proto/oid.h"
#include "proto/rados.h"
#include "proto/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rados/librados.h>

#include "rbd/features.h"
#include "rbd/librbd.h"

#define LIST_PAGE 1024
#define TRASH_SOURCE_REMOVING 3
/* cls inputs holding up to two names */
#define IN_MAX (2 * RBDL_OID_MAX + 64)

static int list_push(struct rbdl_img_list *l, struct rbdl_dir_entry *e)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 16;
		struct rbdl_dir_entry *nv = realloc(l->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = *e;
	return 0;
}

void rbdl_img_list_free(struct rbdl_img_list *l)
{
	rbdl_dir_entries_free(l->v, (uint32_t)l->n);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* Take all entries of v (freeing the array) into l; keep only those with
 * source == REMOVING when removing_only. */
static int list_take(struct rbdl_img_list *l, struct rbdl_dir_entry *v,
		     uint32_t cnt, bool removing_only)
{
	int r = 0;

	for (uint32_t i = 0; i < cnt; i++) {
		if (r == 0 && (!removing_only ||
			       v[i].source == TRASH_SOURCE_REMOVING)) {
			r = list_push(l, &v[i]);
			if (r == 0)
				continue;
		}
		free(v[i].name);
		free(v[i].id);
	}
	free(v);
	return r;
}

/* Page through dir_list (trash: trash_list on rbd_trash). */
static int list_pages(rados_ioctx_t io, bool trash, bool removing_only,
		      struct rbdl_img_list *l)
{
	char *last = NULL;
	int r = 0;

	for (;;) {
		uint8_t in[IN_MAX];
		struct rbdl_dir_entry *v;
		uint32_t cnt;
		char *out;
		size_t outlen;
		long n = rbdl_encode_list_start(in, sizeof(in),
						last ? last : "", LIST_PAGE);

		if (n < 0) {
			r = (int)n;
			break;
		}
		r = rbdl_cls_read(io, trash ? RBDL_OID_TRASH : RBDL_OID_DIRECTORY, "rbd",
				  trash ? "trash_list" : "dir_list", in,
				  (size_t)n, &out, &outlen);
		if (r == -ENOENT || (trash && r == -EOPNOTSUPP)) {
			r = 0;
			break;
		}
		if (r < 0)
			break;
		r = trash ? rbdl_decode_trash_list(out, outlen, &v, &cnt)
			  : rbdl_decode_dir_list(out, outlen, &v, &cnt);
		rados_buffer_free(out);
		if (r < 0)
			break;
		free(last);
		/* the paging key: the name (dir_list) or id (trash_list) */
		last = cnt ? strdup(trash ? v[cnt - 1].id : v[cnt - 1].name)
			   : NULL;
		r = list_take(l, v, cnt, removing_only);
		if (r < 0 || cnt < LIST_PAGE)
			break;
		if (!last) {
			r = -ENOMEM;
			break;
		}
	}
	free(last);
	return r;
}

int rbdl_list_dir(rados_ioctx_t io, bool trash, struct rbdl_img_list *l)
{
	return list_pages(io, trash, trash, l);
}

int rbdl_list_dir_all(rados_ioctx_t io, bool trash, struct rbdl_img_list *l)
{
	return list_pages(io, trash, false, l);
}

/* Format 1 names: the tmap in rbd_directory's data (default namespace). */
static int list_v1(rados_ioctx_t io, struct rbdl_img_list *l)
{
	uint64_t size;
	time_t mtime;
	struct rbdl_dec d;
	struct rbdl_dir_entry *v;
	uint32_t hlen, cnt;
	char *buf;
	int r = rados_stat(io, RBDL_OID_DIRECTORY, &size, &mtime);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (size == 0)
		return 0;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	r = rados_read(io, RBDL_OID_DIRECTORY, buf, size, 0);
	if (r < 0)
		goto out;
	rbdl_dec_init(&d, buf, (size_t)r);
	rbdl_dec_bytes(&d, &hlen);	/* tmap header */
	if (d.err) {
		r = d.err;
		goto out;
	}
	r = rbdl_decode_dir_list(d.p, (size_t)(d.end - d.p), &v, &cnt);
	if (r < 0)
		goto out;
	for (uint32_t i = 0; i < cnt; i++) {
		free(v[i].id);	/* the value is not an id */
		v[i].id = strdup("");
	}
	r = list_take(l, v, cnt, false);
out:
	free(buf);
	return r;
}

/* api::Image::list_images: format 1 (default namespace only), format 2
 * from the directory, then images left in the trash by an interrupted
 * removal. */
int rbdl_op_list(rados_ioctx_t io, struct rbdl_img_list *l)
{
	rados_ioctx_t mio;
	char *ns;
	int r = rbdl_ioctx_clone(io, &mio, &ns);

	if (r < 0)
		return r;
	if (!ns[0]) {
		r = list_v1(mio, l);
		if (r < 0)
			goto out;
	}
	r = rbdl_list_dir(mio, false, l);
	if (r < 0)
		goto out;
	r = rbdl_list_dir(mio, true, l);
out:
	if (r < 0)
		rbdl_img_list_free(l);
	rados_ioctx_destroy(mio);
	free(ns);
	return r;
}

/*
 * Namespace::exists: *exists = whether rbd_directory in that namespace of
 * the ioctx's pool exists and is ready (dir_state_assert READY).  The
 * ioctx's own namespace does not matter.  -EINVAL (after *exists = false)
 * for the empty name.
 */
int rbdl_op_namespace_exists(rados_ioctx_t io, const char *namespace_name,
			     bool *exists)
{
	rados_ioctx_t nio;
	uint8_t st = 0;	/* DIRECTORY_STATE_READY */
	int r;

	if (!exists)
		return -EINVAL;
	*exists = false;
	if (!io || !namespace_name || !namespace_name[0])
		return -EINVAL;
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io), rados_ioctx_get_id(io),
		       namespace_name, &nio);
	if (r < 0)
		return r;
	r = rbdl_cls_write(nio, RBDL_OID_DIRECTORY, "rbd", "dir_state_assert", &st,
			   1);
	rados_ioctx_destroy(nio);
	if (r == 0)
		*exists = true;
	else if (r != -ENOENT)
		return r;
	return 0;
}
