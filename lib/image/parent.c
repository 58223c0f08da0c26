/*
 * parent.c - find, open and publish the image backing a clone or a
 * migration destination (see parent.h).
 *
 * Which image backs a view (librbd's RefreshRequest):
 *   - the destination of a migration that is prepared or executing reads
 *     through to the migration source (its own parent, if any, is reached
 *     through the source): the destination's HEAD and the snapshots made
 *     after the prepare read the source's HEAD, a snapshot the prepare
 *     copied reads the matching source snapshot (snap_seqs);
 *   - otherwise a clone reads its parent (parent_get: pool, namespace,
 *     image id, snapshot id) within the overlap of the view
 *     (parent_overlap_get of HEAD or the snapshot), clipped to the view's
 *     size.  No overlap, or overlap 0, means nothing backs the view.
 * Legacy OSDs without parent_get answer get_parent(snap) with the spec and
 * the overlap in one reply.
 */
#include "config.h"

#include "proto/oid.h"
#include "proto/rados.h"
#include "parent.h"
#include "proto/wire.h"
#include "load.h"
#include "stamps.h"
#include "state.h"
#include "core/internal.h"

#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

struct rbdl_backing {
	struct rbdl_backing *next;
	struct rbdl_parent_spec s;	/* which image, at which snapshot */
	struct rbdl_image *img;
};

/* What backs a view: s.pool_id < 0 means nothing. */
struct backing_key {
	struct rbdl_parent_spec s;
	uint64_t overlap;
	bool migration;
};

static bool same_spec(const struct rbdl_parent_spec *a,
		      const struct rbdl_parent_spec *b)
{
	return a->pool_id == b->pool_id && a->snap_id == b->snap_id &&
	       !strcmp(a->pool_namespace, b->pool_namespace) &&
	       !strcmp(a->image_id, b->image_id);
}

/* A u64-argument method of the image header. */
static int u64_call(struct rbdl_image *img, const char *method, uint64_t arg,
		    char **out, size_t *outlen)
{
	return rbdl_cls_read_arg_u64(img->md_io, img->header_oid, method, arg,
				     out, outlen);
}

int rbdl_migration_get(struct rbdl_image *img, struct rbdl_migration_spec *m)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read(img->md_io, img->header_oid, "rbd",
			      "migration_get", NULL, 0, &out, &outlen);

	if (r < 0)
		return r;
	r = rbdl_decode_migration_spec(out, outlen, m);
	rados_buffer_free(out);
	return r;
}

/* The clone parent of view snap (legacy get_parent or parent_get). */
static int clone_parent(struct rbdl_image *img, uint64_t snap,
			struct backing_key *k)
{
	char *out;
	size_t outlen;
	int r = rbdl_cls_read(img->md_io, img->header_oid, "rbd", "parent_get",
			      NULL, 0, &out, &outlen);

	if (r == -EOPNOTSUPP) {
		/* Legacy OSD: get_parent(snap) -> s64 pool, string id,
		 * u64 snap, u64 overlap (pool -1: none). */
		struct rbdl_dec d;

		r = u64_call(img, "get_parent", snap, &out, &outlen);
		if (r < 0)
			return r;
		rbdl_dec_init(&d, out, outlen);
		k->s.pool_id = (int64_t)rbdl_dec_u64(&d);
		k->s.image_id = rbdl_dec_strdup(&d);
		k->s.snap_id = rbdl_dec_u64(&d);
		k->overlap = rbdl_dec_u64(&d);
		k->s.pool_namespace = strdup("");
		r = d.err ? d.err : (!k->s.pool_namespace ? -ENOMEM : 0);
		rados_buffer_free(out);
		return r;
	}
	if (r < 0)
		return r;

	r = rbdl_decode_parent_spec(out, outlen, &k->s);
	rados_buffer_free(out);
	if (r < 0 || k->s.pool_id < 0)
		return r;
	r = u64_call(img, "parent_overlap_get", snap, &out, &outlen);
	if (r == -ENOENT && snap != RBDL_NOSNAP) {
		/* The view's snapshot was removed (a refresh of a handle at
		 * it): its overlap went with it, as in librbd's refresh. */
		k->overlap = 0;
		return 0;
	}
	if (r < 0)
		return r;

	bool has;

	r = rbdl_decode_parent_overlap(out, outlen, &has, &k->overlap);
	rados_buffer_free(out);
	if (r == 0 && !has)
		k->overlap = 0;
	return r;
}

/* The migration source backing destination view snap, if any. */
static int migration_source(struct rbdl_image *img, uint64_t snap,
			    uint64_t view_size, struct backing_key *k,
			    bool *found)
{
	struct rbdl_migration_spec m;
	int r = rbdl_migration_get(img, &m);

	*found = false;
	if (r < 0)
		return r;
	if (m.header_type == RBDL_MIGRATION_SRC) {
		/* A source opens for reading only (librbd: EROFS). */
		r = img->read_only ? 0 : -EROFS;
		goto out;
	}
	switch (m.state) {
	case RBDL_MIGRATION_PREPARED:
	case RBDL_MIGRATION_EXECUTING:
		break;
	case RBDL_MIGRATION_EXECUTED:
		r = 0;		/* every object was copied: nothing backs */
		goto out;
	default:
		rbdl_log("image %s: migration in state %u cannot be read",
			 img->name, m.state);
		r = -ENOSYS;
		goto out;
	}
	if (m.has_source_spec) {
		rbdl_log("image %s: migration from a non-RBD source (import) "
			 "is not supported", img->name);
		r = -ENOSYS;
		goto out;
	}
	k->s.pool_id = m.pool_id;
	k->s.pool_namespace = m.pool_namespace;
	k->s.image_id = m.image_id;
	m.pool_namespace = NULL;
	m.image_id = NULL;
	k->migration = true;
	k->s.snap_id = RBDL_NOSNAP;
	k->overlap = m.overlap < view_size ? m.overlap : view_size;
	for (uint32_t i = 0; i < m.nsnap_seqs && snap != RBDL_NOSNAP; i++)
		if (m.snap_seqs[i][1] == snap) {
			/* A snapshot the prepare copied: the source's. */
			k->s.snap_id = m.snap_seqs[i][0];
			k->overlap = view_size;
		}
	*found = true;
	r = 0;
out:
	rbdl_migration_spec_free(&m);
	return r;
}

static int find_backing(struct rbdl_image *img, uint64_t snap,
			uint64_t view_size, uint64_t features,
			struct backing_key *k)
{
	bool found = false;
	int r;

	memset(k, 0, sizeof(*k));
	k->s.pool_id = -1;
	if (features & RBD_FEATURE_MIGRATING) {
		r = migration_source(img, snap, view_size, k, &found);
		if (r < 0 || found)
			return r;
	}
	r = clone_parent(img, snap, k);
	if (r < 0)
		return r;
	if (k->overlap > view_size)
		k->overlap = view_size;
	if (k->s.pool_id < 0 || k->overlap == 0)
		k->s.pool_id = -1;
	return 0;
}

/* A backing image's reads stamp its access time as librbd's parent
 * image's do, with its own settings (its pool's and its own metadata). */
static void backing_stamps(struct rbdl_image *img)
{
	struct rbdl_conf c;

	rbdl_conf_load(&c, img->md_io, img->header_oid);
	rbdl_stamps_settings(img, &c);
	rbdl_conf_free(&c);
	rbdl_stamps_start(img);
}

/*
 * Open the image with id in pool/namespace ns read-only at snapshot snap_id
 * (RBDL_NOSNAP: HEAD) as the backing image of another one; depth counts
 * the images it backs.  It has no handle, lock, object map or watch, and
 * may itself be backed (opened here recursively, at most
 * RBDL_MAX_PARENT_DEPTH deep).
 */
static int backing_open(rados_t cluster, int64_t pool, const char *ns,
			const char *id, uint64_t snap_id, unsigned depth,
			struct rbdl_image **out)
{
	struct rbdl_image *img;
	rados_ioctx_t io;
	int r = rbdl_ioctx_dup(cluster, pool, ns, &io);

	if (r < 0)
		return r;
	img = rbdl_image_alloc(true, &r);
	if (img) {
		img->depth = depth;
		r = rbdl_image_load(img, io, NULL, id, NULL, snap_id);
		if (r == 0)
			r = rbdl_parent_update(img, img->snap_id,
					       atomic_load(&img->size),
					       atomic_load(&img->features));
		if (r == 0)
			backing_stamps(img);
		if (r < 0) {
			rbdl_parent_close(img);
			rbdl_image_free(img);
		} else {
			*out = img;
		}
	}
	rados_ioctx_destroy(io);
	return r;
}

/* Close a backing image once nothing reads from it any more. */
static void backing_close(struct rbdl_image *img)
{
	rbdl_delivery_wait_idle(&img->dl);
	rbdl_parent_close(img);
	rbdl_image_free(img);
}

static int open_backing(struct rbdl_image *img, const struct backing_key *k,
			struct rbdl_image **out)
{
	struct rbdl_backing *b;
	int r;

	for (b = img->backings; b; b = b->next)
		if (same_spec(&b->s, &k->s)) {
			*out = b->img;
			return 0;
		}
	if (img->depth + 1 >= RBDL_MAX_PARENT_DEPTH) {
		rbdl_log("image %s: more than %d levels of parents",
			 img->name, RBDL_MAX_PARENT_DEPTH);
		return -EINVAL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->s.pool_id = k->s.pool_id;
	b->s.snap_id = k->s.snap_id;
	b->s.pool_namespace = strdup(k->s.pool_namespace);
	b->s.image_id = strdup(k->s.image_id);
	if (!b->s.pool_namespace || !b->s.image_id) {
		r = -ENOMEM;
		goto fail;
	}
	r = backing_open(img->cluster, b->s.pool_id,
			 b->s.pool_namespace, b->s.image_id, b->s.snap_id,
			 img->depth + 1, &b->img);
	if (r < 0) {
		rbdl_log("image %s: cannot open its %s (pool %" PRId64
			 ", image id %s, snapshot %" PRIu64 "): %s", img->name,
			 k->migration ? "migration source" : "parent",
			 b->s.pool_id, b->s.image_id, b->s.snap_id,
			 strerror(-r));
		goto fail;
	}
	b->next = img->backings;
	img->backings = b;
	*out = b->img;
	return 0;
fail:
	rbdl_parent_spec_free(&b->s);
	free(b);
	return r;
}

int rbdl_parent_update(struct rbdl_image *img, uint64_t snap,
		       uint64_t view_size, uint64_t features)
{
	const struct rbdl_pview *cur =
		atomic_load_explicit(&img->pview, memory_order_relaxed);
	struct rbdl_image *parent = NULL;
	struct backing_key k;
	int r = find_backing(img, snap, view_size, features, &k);

	if (r < 0)
		goto out;
	if (k.s.pool_id >= 0) {
		r = open_backing(img, &k, &parent);
		if (r < 0)
			goto out;
	}
	if (cur && cur->parent == parent &&
	    cur->overlap == (parent ? k.overlap : 0))
		goto out;

	struct rbdl_pview *v = calloc(1, sizeof(*v));

	if (!v) {
		r = -ENOMEM;
		goto out;
	}
	v->parent = parent;
	v->overlap = parent ? k.overlap : 0;
	v->migration = parent && k.migration;
	v->next = img->pviews;
	img->pviews = v;
	/* Release: a request that loads the view (acquire) sees it and the
	 * backing image it names fully set up. */
	atomic_store_explicit(&img->pview, v, memory_order_release);
out:
	rbdl_parent_spec_free(&k.s);
	return r;
}

void rbdl_parent_close(struct rbdl_image *img)
{
	while (img->backings) {
		struct rbdl_backing *b = img->backings;

		img->backings = b->next;
		backing_close(b->img);
		rbdl_parent_spec_free(&b->s);
		free(b);
	}
	while (img->pviews) {
		struct rbdl_pview *v = img->pviews;

		img->pviews = v->next;
		free(v);
	}
	atomic_store(&img->pview, NULL);
}

int rbdl_parent_spec(struct rbdl_image *img, struct rbdl_parent_spec *spec,
		     uint64_t *overlap)
{
	struct backing_key k;
	uint64_t size = atomic_load_explicit(&img->size, memory_order_acquire);
	int r;

	memset(spec, 0, sizeof(*spec));
	memset(&k, 0, sizeof(k));
	pthread_mutex_lock(&img->refresh_lock);
	r = clone_parent(img, img->snap_id, &k);
	pthread_mutex_unlock(&img->refresh_lock);
	if (r == 0 && (k.s.pool_id < 0 || k.overlap == 0))
		r = -ENOENT;
	if (r < 0) {
		rbdl_parent_spec_free(&k.s);
		return r;
	}
	*spec = k.s;	/* the strings move to the caller */
	*overlap = k.overlap < size ? k.overlap : size;
	return 0;
}

void rbdl_parent_desc_free(struct rbdl_parent_desc *d)
{
	free(d->pool_name);
	free(d->pool_namespace);
	free(d->image_id);
	free(d->image_name);
	free(d->snap_name);
	memset(d, 0, sizeof(*d));
}

/* The parent's name from its pool's directory, or from the trash. */
static int parent_name(rados_ioctx_t io, const char *id, char **name,
		       bool *trash)
{
	struct rbdl_enc e;
	struct rbdl_dec d;
	const uint8_t *end;
	uint8_t in[256];
	char *out;
	size_t outlen;
	int r;

	if (strlen(id) > 200)
		return -EINVAL;
	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_str(&e, id);
	*trash = false;
	r = rbdl_cls_read(io, "rbd_directory", "rbd", "dir_get_name", in,
			  e.len, &out, &outlen);
	if (r == 0) {
		r = rbdl_decode_string(out, outlen, name);
		rados_buffer_free(out);
		return r;
	}
	if (r != -ENOENT)
		return r;
	/* trash_get: TrashImageSpec { u8 source, string name, ... }. */
	r = rbdl_cls_read(io, "rbd_trash", "rbd", "trash_get", in, e.len,
			  &out, &outlen);
	if (r < 0)
		return r;
	rbdl_dec_init(&d, out, outlen);
	rbdl_dec_struct_start(&d, 2, &end);
	rbdl_dec_u8(&d);
	*name = rbdl_dec_strdup(&d);
	r = d.err;
	rados_buffer_free(out);
	if (r < 0) {
		free(*name);
		*name = NULL;
		return r;
	}
	*trash = true;
	return 0;
}

int rbdl_parent_describe(struct rbdl_image *img, struct rbdl_parent_desc *d)
{
	const struct rbdl_pview *pv = rbdl_parent_view(img);
	struct rbdl_parent_spec ps;
	struct rbdl_snap_info si;
	rados_ioctx_t io;
	char buf[256], header[RBDL_OID_MAX];
	uint64_t overlap;
	int r;

	memset(d, 0, sizeof(*d));
	if (pv->migration)
		return rbdl_parent_describe(pv->parent, d);
	r = rbdl_parent_spec(img, &ps, &overlap);
	if (r < 0)
		return r;
	d->pool_id = ps.pool_id;
	d->pool_namespace = ps.pool_namespace;
	d->image_id = ps.image_id;
	d->snap_id = ps.snap_id;
	r = rados_pool_reverse_lookup(img->cluster, ps.pool_id, buf,
				      sizeof(buf));
	if (r < 0)
		goto fail;
	d->pool_name = strdup(buf);
	r = rbdl_ioctx_dup(img->cluster, ps.pool_id, ps.pool_namespace, &io);
	if (r < 0)
		goto fail;
	r = parent_name(io, ps.image_id, &d->image_name, &d->trash);
	if (r == 0) {
		rbdl_oid_header(header, sizeof(header), ps.image_id);
		r = rbdl_read_snapshot_info(io, header, ps.snap_id, &si);
	}
	if (r == 0) {
		d->snap_ns_type = si.ns_type;
		d->snap_name = si.name;
	}
	rados_ioctx_destroy(io);
	if (r == 0 && (!d->pool_name || !d->image_name || !d->snap_name))
		r = -ENOMEM;
	if (r == 0)
		return 0;
fail:
	rbdl_parent_desc_free(d);
	return r;
}
