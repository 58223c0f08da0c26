/*
 * whole.c - images the system's librbd serves whole (see whole.h).
 *
 * Role: recognise, after a native open failed, an image librbdlite cannot
 * open and the system's librbd can (format 1; a migration destination
 * whose source is an import spec, prepared or executing), open it there,
 * and wrap the real handle in one of ours; close it; bridge completions
 * (through journaled.c's real completions, journaled.h).
 *
 * Threading and ownership: the whole (its real handle and delivery) is
 * owned by the handle from rbdl_whole_open to rbdl_whole_close, which
 * waits for the completions in flight before freeing it.  The real
 * callback runs on librbd's thread and completes our completion there
 * (core/completion.h delivers from any thread).  The function table is
 * filled once under pthread_once.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/journaled.h"
#include "api/whole.h"
#include "core/internal.h"
#include "image/open.h"
#include "io/io.h"
#include "proto/cls_rbd.h"
#include "proto/oid.h"
#include "proto/rados.h"

/* The real librbd's definitions (quiet: the caller reports). */
static struct {
	__typeof__(&rbd_open) open;
	__typeof__(&rbd_open_read_only) open_ro;
	__typeof__(&rbd_open_by_id) open_id;
	__typeof__(&rbd_open_by_id_read_only) open_id_ro;
	__typeof__(&rbd_close) close;
	__typeof__(&rbd_get_size) get_size;
	bool ok;
} W;
static pthread_once_t w_once = PTHREAD_ONCE_INIT;

/* Quiet: rbdl_whole_open names the image when there is no librbd. */
#define W_SYM(fn) RBDL_REAL_FN_QUIET(fn)

static void w_resolve(void)
{
	W.open = W_SYM(rbd_open);
	W.open_ro = W_SYM(rbd_open_read_only);
	W.open_id = W_SYM(rbd_open_by_id);
	W.open_id_ro = W_SYM(rbd_open_by_id_read_only);
	W.close = W_SYM(rbd_close);
	W.get_size = W_SYM(rbd_get_size);
	W.ok = W.open && W.open_ro && W.open_id && W.open_id_ro && W.close &&
	       W.get_size;
}

/* The image's id, by name (malloc'ed), or NULL. */
static char *image_id(rados_ioctx_t io, const char *name)
{
	char oid[RBDL_OID_MAX], *out, *id = NULL;
	size_t len;

	if (rbdl_oid_id(oid, sizeof(oid), name) < 0 ||
	    rbdl_cls_read(io, oid, "rbd", "get_id", NULL, 0, &out, &len) < 0)
		return NULL;
	if (rbdl_decode_string(out, len, &id) < 0)
		id = NULL;
	rados_buffer_free(out);
	return id;
}

/* Is the image (by name or id) one the system's librbd serves whole? */
static bool served_whole(rados_ioctx_t io, const char *name, const char *id)
{
	struct rbdl_migration_spec m;
	char oid[RBDL_OID_MAX], *out, *iid = NULL;
	size_t len;
	bool yes = false;

	if (name) {
		uint64_t psize;
		time_t pmtime;

		if (rbdl_oid_v1_header(oid, sizeof(oid), name) == 0 &&
		    rados_stat(io, oid, &psize, &pmtime) == 0)
			return true;	/* format 1 */
		id = iid = image_id(io, name);
	}
	if (id && rbdl_oid_header(oid, sizeof(oid), id) == 0 &&
	    rbdl_cls_read(io, oid, "rbd", "migration_get", NULL, 0, &out,
			  &len) == 0) {
		if (rbdl_decode_migration_spec(out, len, &m) == 0) {
			yes = m.header_type == RBDL_MIGRATION_DST &&
			      m.has_source_spec &&
			      (m.state == RBDL_MIGRATION_PREPARED ||
			       m.state == RBDL_MIGRATION_EXECUTING);
			rbdl_migration_spec_free(&m);
		}
		rados_buffer_free(out);
	}
	free(iid);
	return yes;
}

int rbdl_whole_open(rados_ioctx_t io, const char *name, const char *id,
		    const char *snap_name, bool read_only, int err,
		    struct rbdl_handle **out)
{
	struct rbdl_whole *w;
	int r;

	if ((err != -EOPNOTSUPP && err != -ENOSYS) ||
	    !served_whole(io, name, id))
		return err;
	pthread_once(&w_once, w_resolve);
	if (!W.ok) {
		rbdl_log("image %s: a format 1 image or an import's "
			 "destination, which only the system's librbd opens, "
			 "and there is none (set RBDLITE_SYSTEM_LIBRBD to its "
			 "path)", name ? name : id);
		return err;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	r = rbdl_delivery_init(&w->dl);
	if (r < 0) {
		free(w);
		return r;
	}
	r = rbdl_ioctx_clone(io, &w->defer_io, NULL);
	if (r < 0) {
		rbdl_delivery_destroy(&w->dl);
		free(w);
		return r;
	}
	if (name)
		r = (read_only ? W.open_ro : W.open)(io, name, &w->real,
						      snap_name);
	else
		r = (read_only ? W.open_id_ro : W.open_id)(io, id, &w->real,
							    snap_name);
	if (r == 0) {
		r = rbdl_handle_make_whole(w, out);
		if (r < 0)
			W.close(w->real);
	}
	if (r < 0) {
		rados_ioctx_destroy(w->defer_io);
		rbdl_delivery_destroy(&w->dl);
		free(w);
		return r;
	}
	rbdl_log("image %s is served by the system's librbd",
		 name ? name : id);
	return 0;
}

int rbdl_whole_close(void *image)
{
	struct rbdl_whole *w;
	int r;

	if (!rbdl_whole_from_user(image))
		return -EINVAL;
	w = rbdl_handle_close_whole(image);
	if (!w)
		return -EINVAL;
	/* The real close waits for its own requests; ours are delivered
	 * once their real callbacks ran. */
	r = W.close(w->real);
	rbdl_delivery_wait_idle(&w->dl);
	rbdl_delivery_destroy(&w->dl);
	rados_ioctx_destroy(w->defer_io);
	free(w);
	return r;
}

/* The image's size for rbdl_real_io_sanitize (0 if librbd cannot say:
 * every write is then refused, reads are cut to nothing). */
static uint64_t whole_size(struct rbdl_whole *w)
{
	uint64_t size = 0;

	if (W.get_size(w->real, &size) < 0)
		size = 0;
	return size;
}

int rbdl_whole_io(struct rbdl_whole *w, struct rbdl_comp *c,
		  const struct rbdl_io_args *args)
{
	struct rbdl_io_args t = *args;
	struct iovec *cut;
	ssize_t v;
	int r;

	/* As our own requests: a compare-and-write is never polled. */
	if (rbdl_comp_arm(c, &w->dl, t.op != RBDL_OP_CAW && !c->internal) < 0)
		return -EINVAL;
	if (!rbdl_real_io_sanitize(whole_size(w), &t, &cut, &v)) {
		rbdl_comp_complete_deferred(c, v, w->defer_io);
		return 0;
	}
	r = rbdl_real_io_aio(w->real, c, &t);
	free(cut);	/* librbd copied a writev's data when it took it */
	if (r < 0)	/* never inside the submitting call */
		rbdl_comp_complete_deferred(c, r, w->defer_io);
	return 0;
}

ssize_t rbdl_whole_io_sync(struct rbdl_whole *w,
			   const struct rbdl_io_args *args)
{
	struct rbdl_io_args t = *args;
	struct iovec *cut;
	ssize_t v;

	if (!rbdl_real_io_sanitize(whole_size(w), &t, &cut, &v))
		return v;
	v = rbdl_real_io_sync(w->real, &t);
	free(cut);
	return v;
}

int rbdl_whole_comp(struct rbdl_whole *w, rbd_completion_t c,
		    rbd_completion_t *rc)
{
	struct rbdl_comp *comp = rbdl_comp_from_user(c);
	int r;

	if (!comp)
		return -EINVAL;
	if (rbdl_comp_arm(comp, &w->dl, true) < 0)
		return -EINVAL;
	r = rbdl_real_comp_make(comp, rc);
	if (r < 0)
		rbdl_comp_disarm(comp);
	return r;
}

void rbdl_whole_comp_drop(rbd_completion_t c, rbd_completion_t rc)
{
	rbdl_real_comp_release(rc);
	rbdl_comp_disarm(rbdl_comp_from_user(c));
}
