/*
 * remove.c - image removal as librbd 16.2's rbd_remove (and
 * rbd_remove_with_progress, whose callback sees every data object of the
 * trim and can stop it: the image then waits in the trash as librbd
 * leaves it) does it
 * (image::PreRemoveRequest's checks, then image::RemoveRequest): refuse
 * images with snapshots, watchers, groups, migrations or features whose
 * removal librbdlite does not implement, detach a clone from its parent,
 * remove the data objects (skipping those a valid object map says do not
 * exist), the object map, header, id object and directory entry; finish a
 * removal an earlier client left in the trash.
 *
 * Threading: synchronous and self-contained, like create.c.
 */
#include "config.h"

#include "ops/maint.h"
#include "ops/window.h"
#include "image/objmap.h"
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

#define TRASH_SOURCE_REMOVING 3
/* cls inputs holding up to two names */
#define IN_MAX (2 * RBDL_OID_MAX + 64)

struct rm_image {
	rados_ioctx_t io;		/* metadata pool + namespace */
	rados_ioctx_t dio;		/* data objects */
	const char *name;
	char *id;
	char header[RBDL_OID_MAX];
	char *prefix;
	uint64_t size, features, flags;
	struct rbdl_layout layout;
	int64_t data_pool;
	uint64_t *trash_snaps;		/* PreRemoveRequest prunes these */
	uint32_t ntrash;
	bool cancelled;			/* the progress callback said stop */
	bool *need_real;		/* see rbdl_op_remove_prog */
};

/* rbd_remove_with_progress's callback (NULL fn: none). */
struct rm_progress {
	int (*fn)(uint64_t, uint64_t, void *);
	void *arg;
};

struct watchers {
	uint64_t self;
	int others;
};

/*
 * PreRemoveRequest::check_image_snaps: trash-namespace snapshots are
 * pruned before the removal (m->trash_snaps), mirror snapshots ignored,
 * any other (user, group) refuses it: -ENOTEMPTY.
 */
static int check_snaps(struct rm_image *m, const struct rbdl_header *h)
{
	if (!h->nsnaps)
		return 0;
	m->trash_snaps = calloc(h->nsnaps, sizeof(*m->trash_snaps));
	if (!m->trash_snaps)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->nsnaps; i++) {
		struct rbdl_snap_info si;
		int r = rbdl_read_snapshot_info(m->io, m->header, h->snaps[i],
						&si);

		if (r == -ENOENT)
			continue;	/* removed meanwhile */
		if (r < 0)
			return r;
		uint32_t t = si.ns_type;

		rbdl_snap_info_free(&si);
		if (t == RBD_SNAP_NAMESPACE_TYPE_TRASH)
			m->trash_snaps[m->ntrash++] = h->snaps[i];
		else if (t != RBD_SNAP_NAMESPACE_TYPE_MIRROR)
			return -ENOTEMPTY;
	}
	return 0;
}

/* Header fields the removal needs, and PreRemoveRequest's checks. */
static int rm_load(struct rm_image *m)
{
	struct rbdl_header h;
	int r = rbdl_read_header(m->io, m->header, false, &h);

	if (r < 0)
		return r;
	m->size = h.size;
	m->features = h.features;
	m->prefix = h.object_prefix;
	h.object_prefix = NULL;
	if (rbdl_layout_init(&m->layout, h.order,
			     h.su ? h.su : (1ULL << h.order),
			     h.sc ? h.sc : 1) < 0)
		r = -EBADMSG;
	m->data_pool = h.data_pool;
	if (r == 0)
		r = rbdl_cls_read_u64_at(m->io, m->header, "get_flags",
					 RBDL_NOSNAP, &m->flags);
	/* PreRemoveRequest: migration, snapshots, group, watchers. */
	if (r == 0 && (m->features & RBD_FEATURE_MIGRATING))
		r = -EBUSY;
	if (r == 0)
		r = check_snaps(m, &h);
	rbdl_header_free(&h);
	return r;
}

static int count_watcher(uint64_t gid, uint64_t cookie, bool timed_out,
			 const uint8_t *payload, uint32_t len, void *arg)
{
	struct watchers *w = arg;

	(void)cookie;
	(void)timed_out;
	(void)payload;
	(void)len;
	/* librbd filters out only the watch of the image it opened for the
	 * removal (LIST_WATCHERS_FILTER_OUT_MY_INSTANCE compares the watch
	 * handle too): another open of the image by this same client is
	 * busy (-EBUSY).  librbdlite's removal opens no watch of its own,
	 * so every watcher counts. */
	(void)gid;
	w->others++;
	return 0;
}

/*
 * Does any other client watch the header?  librados' C API cannot list
 * watchers, so notify them with an empty payload (a header update to a
 * librbd watcher): every watcher appears in the reply, as an ack or, if
 * it did not answer in time, as a timeout.
 */
static int other_watchers(struct rm_image *m, bool *busy)
{
	struct watchers w = {
		.self = rados_get_instance_id(rados_ioctx_get_cluster(m->io)),
	};
	char *reply = NULL;
	size_t rlen = 0;
	int r;

	r = rados_notify2(m->io, m->header, NULL, 0, 1000, &reply, &rlen);
	if (r < 0 && r != -ETIMEDOUT) {
		if (reply)
			rados_buffer_free(reply);
		return r;
	}
	if (reply) {
		r = rbdl_walk_notify_reply(reply, rlen, count_watcher, &w);
		rados_buffer_free(reply);
		if (r < 0)
			return r;
	}
	*busy = w.others > 0;
	return 0;
}

/* In a group?  (PreRemoveRequest::check_group: -EMLINK) */
static int check_group(struct rm_image *m)
{
	char *out;
	size_t outlen;
	bool in_group = false;
	int r = rbdl_cls_read(m->io, m->header, "rbd", "image_group_get",
			      NULL, 0, &out, &outlen);

	if (r == -EOPNOTSUPP)
		return 0;
	if (r < 0)
		return r;
	r = rbdl_decode_group_spec(out, outlen, &in_group);
	rados_buffer_free(out);
	if (r < 0)
		return r;
	return in_group ? -EMLINK : 0;
}

/*
 * What librbd's removal also cleans up and librbdlite does not: a journal,
 * mirroring state.  Refuse those images (-EOPNOTSUPP) before anything is
 * deleted.
 */
static int check_unsupported(struct rm_image *m)
{
	char *out;
	size_t outlen;
	uint8_t in[RBDL_OID_MAX + 8];
	long n;
	int r;

	if (m->features & RBD_FEATURE_JOURNALING) {
		if (m->need_real)
			*m->need_real = true;
		else
			rbdl_log("removing image %s: journaled images are not "
				 "supported by librbdlite", m->name);
		return -EOPNOTSUPP;
	}
	n = rbdl_encode_string(in, sizeof(in), m->id);
	if (n < 0)
		return (int)n;
	r = rbdl_cls_read(m->io, "rbd_mirroring", "rbd", "mirror_image_get",
			  in, (size_t)n, &out, &outlen);
	if (r == 0) {
		rados_buffer_free(out);
		if (m->need_real)
			*m->need_real = true;
		else
			rbdl_log("removing image %s: mirrored images are not "
				 "supported by librbdlite", m->name);
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * DetachChildRequest: a clone leaves its parent's list of children --
 * clone v2 (op feature CLONE_CHILD): child_detach on the parent's header,
 * then the parent's snapshot goes if it sits in the trash namespace and
 * this was its last child; clone v1: remove_child on rbd_children in the
 * clone's pool.  Already detached (ENOENT) is fine.
 */
static int detach_child(struct rm_image *m, const char *ns)
{
	struct rbdl_parent_spec ps;
	uint64_t opf = 0;
	rados_ioctx_t pio;
	uint8_t in[IN_MAX];
	char oid[RBDL_OID_MAX], *out;
	size_t outlen;
	long n;
	int r = rbdl_cls_read(m->io, m->header, "rbd", "parent_get", NULL, 0,
			      &out, &outlen);

	if (r == -EOPNOTSUPP)
		return 0;	/* a pre-Nautilus OSD: no such parents */
	if (r < 0)
		return r;
	r = rbdl_decode_parent_spec(out, outlen, &ps);
	rados_buffer_free(out);
	if (r < 0)
		return r;
	if (ps.pool_id < 0)
		goto out;
	r = rbdl_cls_read_u64(m->io, m->header, "op_features_get", NULL, 0,
			      &opf);
	if (r < 0 && r != -EOPNOTSUPP)
		goto out;
	if (opf & RBD_OPERATION_FEATURE_CLONE_CHILD) {
		r = rbdl_ioctx_dup(rados_ioctx_get_cluster(m->io), ps.pool_id,
				   ps.pool_namespace, &pio);
		if (r < 0)
			goto out;
		rbdl_oid_header(oid, sizeof(oid), ps.image_id);
		n = rbdl_encode_child_detach(in, sizeof(in), ps.snap_id,
					     rados_ioctx_get_id(m->io), m->id,
					     ns);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(pio, oid, "rbd", "child_detach", in,
					   (size_t)n);
		if (r == 0 || r == -ENOENT)
			rbdl_maint_remove_trashed_parent_snap(pio, ps.image_id,
							      ps.snap_id);
	} else {
		/* A v1 clone was registered in the rbd_children of its
		 * own pool and namespace (librbd: the child's md_ctx). */
		r = rbdl_ioctx_clone(m->io, &pio, NULL);
		if (r < 0)
			goto out;
		n = rbdl_encode_remove_child(in, sizeof(in), ps.pool_id,
					     ps.image_id, ps.snap_id, m->id);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(pio, "rbd_children", "rbd",
					   "remove_child", in, (size_t)n);
	}
	rados_ioctx_destroy(pio);
	if (r == -ENOENT)
		r = 0;
out:
	rbdl_parent_spec_free(&ps);
	return r;
}

/*
 * TrimRequest to size 0: remove every data object that may exist (all of
 * them, or only those the object map, when valid, does not mark
 * nonexistent), rbd_concurrent_management_ops at a time.
 */
static int trim_data(struct rm_image *m, uint64_t window,
		     const struct rm_progress *prog)
{
	uint64_t nobjs = rbdl_layout_num_objects(&m->layout, m->size);
	uint8_t *bits = NULL;
	struct rbdl_win w;

	if ((m->features & RBD_FEATURE_OBJECT_MAP) &&
	    !(m->flags & RBD_FLAG_OBJECT_MAP_INVALID)) {
		uint64_t n;

		if (rbdl_objmap_read(m->io, m->id, RBDL_NOSNAP, &bits, &n) < 0 ||
		    n != nobjs) {
			free(bits);
			bits = NULL;
		}
	}
	rbdl_win_init(&w, (int)(window > RBDL_WIN_MAX ? RBDL_WIN_MAX : window));
	/* Stop sending at the first error (ops in flight are reaped).  The
	 * progress callback sees every object, skipped or not, in order, as
	 * librbd's AsyncObjectThrottle calls it; a negative return ends the
	 * removal with that value. */
	int stop = 0;

	for (uint64_t o = 0; o < nobjs && w.err == 0; o++) {
		char oid[RBDL_OID_MAX];
		rados_write_op_t op;

		if (!bits || rbdl_om_state(bits, o) != RBDL_OBJ_NONEXISTENT) {
			op = rados_create_write_op();
			if (!op) {
				rbdl_win_fail(&w, -ENOMEM);
				break;
			}
			rbdl_oid_data(oid, sizeof(oid), m->prefix, o);
			rados_write_op_remove(op);
			rbdl_win_submit(&w, m->dio, oid, op);
		}
		if (prog && prog->fn) {
			stop = prog->fn(o, nobjs, prog->arg);
			if (stop < 0) {
				m->cancelled = true;
				break;
			}
		}
	}
	free(bits);
	int r = rbdl_win_drain(&w);

	return stop < 0 ? stop : r;
}

/*
 * A removal cancelled by its progress callback leaves the image where
 * librbd 16.2's would be at that point: librbd moves the image to the
 * trash (source REMOVING) before it trims the data, so the name is gone
 * and a later rbd_remove of it finishes the job (finish_trashed).  So the
 * image goes to the trash now: trash_add (TrashImageSpec v2 {u8 source,
 * string name, utime deletion and deferment end, u8 state NORMAL}), then
 * the id object and the directory entry go.
 */
static int trash_after_cancel(struct rm_image *m)
{
	uint8_t in[IN_MAX];
	struct rbdl_enc e;
	struct timespec now;
	char oid[RBDL_OID_MAX];
	size_t tok;
	long n;
	int r;

	clock_gettime(CLOCK_REALTIME, &now);
	rbdl_enc_init(&e, in, sizeof(in));
	rbdl_enc_str(&e, m->id);
	tok = rbdl_enc_struct_start(&e, 2, 1);
	rbdl_enc_u8(&e, TRASH_SOURCE_REMOVING);
	rbdl_enc_str(&e, m->name);
	for (int i = 0; i < 2; i++) {
		rbdl_enc_u32(&e, (uint32_t)now.tv_sec);
		rbdl_enc_u32(&e, (uint32_t)now.tv_nsec);
	}
	rbdl_enc_u8(&e, 0);	/* TRASH_IMAGE_STATE_NORMAL */
	rbdl_enc_struct_end(&e, tok);
	n = rbdl_enc_len(&e);
	r = n < 0 ? (int)n
		  : rbdl_cls_write(m->io, RBDL_OID_TRASH, "rbd", "trash_add", in,
				   (size_t)n);
	if (r < 0)
		return r;
	rbdl_oid_id(oid, sizeof(oid), m->name);
	r = rbdl_remove_if_exists(m->io, oid);
	if (r < 0)
		return r;
	n = rbdl_encode_dir_entry(in, sizeof(in), m->name, m->id);
	r = n < 0 ? (int)n
		  : rbdl_cls_write(m->io, RBDL_OID_DIRECTORY, "rbd",
				   "dir_remove_image", in, (size_t)n);
	return r == -ENOENT ? 0 : r;
}

/* Remove an image whose id is known; in_dir: it has a directory entry. */
static int remove_by_id(rados_ioctx_t io, const char *name, char *id,
			bool in_dir, const char *ns,
			const struct rm_progress *prog, bool *need_real)
{
	struct rm_image m;
	struct rbdl_conf cf;
	char oid[RBDL_OID_MAX];
	uint8_t in[IN_MAX];
	bool busy = false;
	long n;
	int r;

	memset(&m, 0, sizeof(m));
	m.io = io;
	m.name = name;
	m.id = id;
	m.need_real = need_real;
	rbdl_oid_header(m.header, sizeof(m.header), id);
	r = rm_load(&m);
	if (r == -ENOENT || r == -EIO) {
		uint64_t psize;
		time_t pmtime;

		/* The cls reports a missing header as EIO. */
		if (rados_stat(io, m.header, &psize, &pmtime) != -ENOENT)
			goto out;
		/* No header: only the id object and the entry are left. */
		r = 0;
		goto drop_names;
	}
	if (r < 0)
		goto out;
	/* PreRemoveRequest's order: watchers, then the group. */
	r = other_watchers(&m, &busy);
	if (r < 0)
		goto out;
	if (busy) {
		r = -EBUSY;
		goto out;
	}
	r = check_group(&m);
	if (r < 0)
		goto out;
	r = check_unsupported(&m);
	if (r < 0)
		goto out;
	if (m.ntrash) {
		r = rbdl_maint_prune_trash_snaps(io, id, m.trash_snaps,
						 m.ntrash);
		if (r == -ECHILD)
			r = -ENOTEMPTY;	/* as librbd's RemoveRequest */
		if (r < 0)
			goto out;
	}
	r = rbdl_ioctx_dup(rados_ioctx_get_cluster(io),
		       m.data_pool >= 0 ? m.data_pool : rados_ioctx_get_id(io),
		       ns, &m.dio);
	if (r < 0)
		goto out;
	rbdl_conf_load(&cf, io, NULL);
	r = trim_data(&m, rbdl_conf_uint(&cf, true,
					 "rbd_concurrent_management_ops", 10),
		      prog);
	rbdl_conf_free(&cf);
	rados_ioctx_destroy(m.dio);
	if (r < 0 && m.cancelled && in_dir) {
		int q = trash_after_cancel(&m);

		if (q < 0)
			rbdl_log("image %s: cancelled removal not moved to the "
				 "trash (%d)", name, q);
	}
	if (r == 0)
		r = detach_child(&m, ns);
	if (r < 0)
		goto out;
	r = rbdl_remove_if_exists(io, m.header);
	if (r < 0)
		goto out;
	rbdl_oid_object_map(oid, sizeof(oid), id, RBDL_NOSNAP);
	r = rbdl_remove_if_exists(io, oid);
	if (r < 0)
		goto out;
drop_names:
	/* The id object, unless the name now belongs to another image. */
	rbdl_oid_id(oid, sizeof(oid), name);
	{
		char *out, *cur = NULL;
		size_t outlen;

		r = rbdl_cls_read(io, oid, "rbd", "get_id", NULL, 0, &out,
				  &outlen);
		if (r == 0) {
			r = rbdl_decode_string(out, outlen, &cur);
			rados_buffer_free(out);
			if (r == 0 && !strcmp(cur, id))
				r = rbdl_remove_if_exists(io, oid);
			free(cur);
		} else if (r == -ENOENT) {
			r = 0;
		}
		if (r < 0)
			goto out;
	}
	if (in_dir) {
		n = rbdl_encode_dir_entry(in, sizeof(in), name, id);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(io, RBDL_OID_DIRECTORY, "rbd",
					   "dir_remove_image", in, (size_t)n);
		if (r == -ENOENT)
			r = 0;
	}
out:
	free(m.trash_snaps);
	free(m.prefix);
	return r;
}

/*
 * An image a removal left in the trash (source REMOVING) under this name,
 * which librbd's rbd_remove finishes removing: remove it by id, then its
 * trash entry.  -ENOENT if there is none.
 */
static int finish_trashed(rados_ioctx_t io, const char *name, const char *ns,
			  const struct rm_progress *prog)
{
	struct rbdl_img_list l = { 0 };
	uint8_t in[IN_MAX];
	char *id = NULL;
	long n;
	int r = rbdl_list_dir(io, true, &l);

	if (r < 0)
		return r;
	for (size_t i = 0; i < l.n && !id; i++)
		if (!strcmp(l.v[i].name, name))
			id = strdup(l.v[i].id);
	rbdl_img_list_free(&l);
	if (!id)
		return -ENOENT;
	r = remove_by_id(io, name, id, false, ns, prog, NULL);
	if (r == 0) {
		n = rbdl_encode_string(in, sizeof(in), id);
		r = n < 0 ? (int)n
			  : rbdl_cls_write(io, RBDL_OID_TRASH, "rbd", "trash_remove",
					   in, (size_t)n);
		if (r == -ENOENT)
			r = 0;
	}
	free(id);
	return r;
}

int rbdl_op_remove(rados_ioctx_t io, const char *name)
{
	return rbdl_op_remove_prog(io, name, NULL, NULL, NULL);
}

int rbdl_op_remove_prog(rados_ioctx_t io, const char *name,
			int (*fn)(uint64_t, uint64_t, void *), void *arg,
			bool *need_real)
{
	const struct rm_progress prog = { fn, arg };
	rados_ioctx_t mio;
	char oid[RBDL_OID_MAX], *ns, *id = NULL, *out;
	uint8_t in[IN_MAX];
	size_t outlen;
	bool in_dir = true;
	long n;
	int r;

	if (strlen(name) > RBDL_OID_MAX - 16)
		return -ENOENT;	/* no such object can exist */
	r = rbdl_ioctx_clone(io, &mio, &ns);
	if (r < 0)
		return r;
	n = rbdl_encode_string(in, sizeof(in), name);
	r = rbdl_cls_read(mio, RBDL_OID_DIRECTORY, "rbd", "dir_get_id", in,
			  (size_t)n, &out, &outlen);
	if (r == -ENOENT) {
		/* Not in the directory: an interrupted removal in the trash,
		 * a leftover id object, or format 1. */
		in_dir = false;
		r = finish_trashed(mio, name, ns, &prog);
		if (r != -ENOENT)
			goto out;
		rbdl_oid_id(oid, sizeof(oid), name);
		r = rbdl_cls_read(mio, oid, "rbd", "get_id", NULL, 0, &out,
				  &outlen);
		if (r == -ENOENT) {
			uint64_t psize;
			time_t pmtime;

			/* format 1: the system's librbd removes it */
			rbdl_oid_v1_header(oid, sizeof(oid), name);
			if (rados_stat(mio, oid, &psize, &pmtime) == 0) {
				r = -EOPNOTSUPP;
				if (need_real)
					*need_real = true;
			}
			goto out;
		}
	}
	if (r < 0)
		goto out;
	r = rbdl_decode_string(out, outlen, &id);
	rados_buffer_free(out);
	if (r < 0)
		goto out;
	if (!id[0]) {
		r = -ENOENT;
		goto out;
	}
	r = remove_by_id(mio, name, id, in_dir, ns, &prog, need_real);
out:
	free(id);
	rados_ioctx_destroy(mio);
	free(ns);
	return r;
}
