/*
 * backing.c - the data path's reads from the image that backs a clone or
 * a migration destination (parent.h): read-through of objects the image
 * has not written, the parent data a copy-up needs, and the synchronous
 * copy-up maintenance uses before it removes or cuts an object.
 *
 * A fetch (struct rbdl_fetch) is one object's transfer from the backing
 * image: parent reads either into the request's own read buffers
 * (read-through) or into a private buffer with the object's parent data
 * (copy-up).  It happens once per object a clone has not written yet, so
 * it allocates.  Parent reads are ordinary internal requests on the
 * backing image: a parent that is a clone itself reads through to its
 * own parent the same way.
 *
 * Threading: a fetch is issued by the thread advancing its object request
 * and finished by whichever thread completes its last parent read; its
 * join (core/join.h) orders every read's data and error before
 * done() runs.  Ownership: a read-through fetch is freed when it is done;
 * a copy-up fetch belongs to its object request (o->cu) until the data
 * went out.
 */
#include "config.h"

#include "request.h"

#include "core/internal.h"
#include "image/state.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

struct rbdl_fetch {
	struct rbdl_objreq *o;	/* NULL for the synchronous copy-up */
	struct rbdl_join j;	/* the parent reads (or map updates) */
	void (*done)(struct rbdl_fetch *f, bool in_submit);
	void *ctx;		/* synchronous use: the waiter */
	_Atomic uint64_t data_end;	/* copy-up: bytes the parent holds */
	uint64_t len;		/* copy-up: bytes of parent data */
	char data[];		/* copy-up: one object's worth */
};

static void fetch_put(struct rbdl_fetch *f, bool in_submit)
{
	if (rbdl_join_put(&f->j))
		f->done(f, in_submit);
}

static void fetch_read_cb(rbdl_user_comp_t uc, void *arg)
{
	struct rbdl_comp *c = rbdl_comp_untag(uc);
	struct rbdl_fetch *f = arg;

	if (c->rval < 0) {
		rbdl_join_error(&f->j, (int)c->rval);
	} else if (c->data_end && (!f->o || f->o->req->op != RBDL_OP_READ)) {
		/* Copy-up: where the parent really had data (librbd copies
		 * up the parent's allocated extents). */
		rbdl_atomic_max_u64(&f->data_end, c->data_base + c->data_end);
	}
	rbdl_comp_release(c);
	fetch_put(f, false);
}

/* Read [off, off + len) of the backing image into dst, as part of f;
 * base: the start of the buffer whose data extent is tracked (NULL: an
 * iovec read, nothing to track). */
static int fetch_read(struct rbdl_fetch *f, struct rbdl_image *parent,
		      uint64_t off, uint64_t len, char *dst, const char *base)
{
	struct rbdl_io_args a = {
		.op = RBDL_OP_READ, .off = off, .len = len, .buf = dst,
	};
	struct rbdl_comp *c;
	int r = rbdl_comp_create(f, fetch_read_cb, &c);

	if (r < 0)
		return r;
	c->internal = true;
	c->track_data = base != NULL;
	c->data_base = base ? (uint64_t)(dst - base) : 0;
	rbdl_join_add(&f->j);
	r = rbdl_io_submit(parent, c, &a);
	if (r < 0) {
		rbdl_join_unsent(&f->j, 0);	/* r: the caller's */
		rbdl_comp_release(c);
	}
	return r;
}

/*
 * Fill dst with [obj_off, obj_off + len) of object objno as the backing
 * image sees it: parent reads for the image ranges below the overlap (and
 * the parent's size), zeros beyond.  Returns the end, relative to obj_off,
 * of the part that lies below the overlap (the backed part of an object is
 * a prefix: image offsets grow with object offsets), or a negative errno.
 */
static int64_t fetch_extent(struct rbdl_fetch *f, const struct rbdl_pview *pv,
			    const struct rbdl_layout *l, uint64_t objno,
			    uint64_t obj_off, uint64_t len, char *dst,
			    const char *base)
{
	struct rbdl_img_range stack[8], *rs = stack;
	uint64_t limit = pv->overlap, pos = 0, backed = 0;
	uint64_t psize = atomic_load_explicit(&pv->parent->size,
					      memory_order_acquire);
	int n;

	if (psize < limit)
		limit = psize;
	n = rbdl_striper_obj_to_image(l, objno, obj_off, len, rs,
				      RBDL_ARRAY_SIZE(stack));
	if (n == -ERANGE) {
		size_t max = len / l->stripe_unit + 2;

		rs = malloc(max * sizeof(*rs));
		if (!rs)
			return -ENOMEM;
		n = rbdl_striper_obj_to_image(l, objno, obj_off, len, rs, max);
	}
	for (int i = 0; i < n; i++) {
		uint64_t in = rs[i].img_off >= limit ? 0 : limit - rs[i].img_off;

		if (in > rs[i].len)
			in = rs[i].len;
		if (in) {
			int r = fetch_read(f, pv->parent, rs[i].img_off, in,
					   dst + pos, base);

			if (r < 0) {
				n = r;
				break;
			}
			backed = pos + in;
		}
		if (in < rs[i].len)
			memset(dst + pos + in, 0, rs[i].len - in);
		pos += rs[i].len;
	}
	if (rs != stack)
		free(rs);
	return n < 0 ? n : (int64_t)backed;
}

/* A fetch for object o (NULL: synchronous use, ctx then names the waiter)
 * with data_bytes of buffer; done runs once every parent read issued
 * through it finished and the issuer dropped its count.  NULL: ENOMEM. */
static struct rbdl_fetch *fetch_new(struct rbdl_objreq *o, size_t data_bytes,
				    void (*done)(struct rbdl_fetch *, bool),
				    void *ctx)
{
	struct rbdl_fetch *f = malloc(sizeof(*f) + data_bytes);

	if (!f)
		return NULL;
	f->o = o;
	f->ctx = ctx;
	f->done = done;
	f->len = 0;
	rbdl_join_start(&f->j, 1);	/* the issuer's guard */
	atomic_init(&f->data_end, 0);
	return f;
}

/* Copy-up source: read the parent's data of the whole object objno into
 * f->data (f->len: the part below the overlap). */
static void fetch_object(struct rbdl_fetch *f, const struct rbdl_pview *pv,
			 const struct rbdl_layout *l, uint64_t objno)
{
	int64_t r = fetch_extent(f, pv, l, objno, 0, l->object_size, f->data,
				 f->data);

	if (r < 0)
		rbdl_join_error(&f->j, (int)r);
	else
		f->len = (uint64_t)r;
}

/*
 * The parent data to copy up: up to where the parent's objects really
 * held data (librbd copies the parent's allocated extents: the objects'
 * sizes, zeros inside included), within the part below the overlap; data
 * that is all zeros copies nothing.
 */
static void fetch_trim(struct rbdl_fetch *f)
{
	uint64_t end = atomic_load_explicit(&f->data_end,
					    memory_order_relaxed);

	if (end < f->len)
		f->len = end;
	if (rbdl_plan_all_zero(f->data, f->len))
		f->len = 0;
}

const char *rbdl_fetch_data(const struct rbdl_fetch *f, uint64_t *len)
{
	*len = f->len;
	return f->data;
}

void rbdl_fetch_free(struct rbdl_fetch *f)
{
	free(f);
}

bool rbdl_obj_backed(const struct rbdl_pview *pv, const struct rbdl_layout *l,
		     uint64_t objno)
{
	struct rbdl_img_range first;

	if (!pv->parent)
		return false;
	/* The object's first byte has its lowest image offset. */
	return rbdl_striper_obj_to_image(l, objno, 0, 1, &first, 1) == 1 &&
	       first.img_off < pv->overlap;
}

/* ---- read-through -------------------------------------------------------- */

static void read_done(struct rbdl_fetch *f, bool in_submit)
{
	struct rbdl_objreq *o = f->o;
	int err = rbdl_join_result(&f->j);

	free(f);
	rbdl_obj_advance(o, err, in_submit);
}

void rbdl_backing_read(struct rbdl_objreq *o, bool in_submit)
{
	struct rbdl_req *req = o->req;
	struct rbdl_fetch *f = fetch_new(o, 0, read_done, NULL);

	if (!f) {
		rbdl_obj_advance(o, -ENOMEM, in_submit);
		return;
	}
	for (uint32_t i = 0; i < o->nsegs; i++) {
		struct rbdl_seg *sg = &req->segs[o->first_seg + i];
		int64_t r = fetch_extent(f, req->pv, &req->img->layout,
					 o->objno, sg->obj_off, sg->len,
					 sg->ptr, req->pattern);

		if (r < 0) {
			rbdl_join_error(&f->j, (int)r);
			break;
		}
		/* A backing image's read through to its own parent counts
		 * as data over the whole range below the overlap (librbd's
		 * read_parent result is not sparse). */
		if (req->track_data && r > 0)
			rbdl_req_note_data(req, sg, (uint64_t)r);
	}
	fetch_put(f, in_submit);
}

/* ---- copy-up data -------------------------------------------------------- */

static void copyup_fetched(struct rbdl_fetch *f, bool in_submit)
{
	struct rbdl_objreq *o = f->o;
	int err = rbdl_join_result(&f->j);

	if (err == 0)
		fetch_trim(f);
	rbdl_obj_advance(o, err, in_submit);
}

void rbdl_backing_fetch(struct rbdl_objreq *o, bool in_submit)
{
	struct rbdl_req *req = o->req;
	struct rbdl_fetch *f = fetch_new(o, req->img->layout.object_size,
					 copyup_fetched, NULL);

	if (!f) {
		rbdl_obj_advance(o, -ENOMEM, in_submit);
		return;
	}
	o->cu = f;
	fetch_object(f, req->pv, &req->img->layout, o->objno);
	fetch_put(f, in_submit);
}

/* ---- synchronous copy-up (maintenance) ------------------------------------ */

struct syncwait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void sync_signal(struct syncwait *w)
{
	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void fetch_sync_done(struct rbdl_fetch *f, bool in_submit)
{
	(void)in_submit;
	sync_signal(f->ctx);
}

/* One snapshot map update of the synchronous deep copy-up finished. */
static void sync_map_done(void *arg, int r)
{
	struct rbdl_fetch *f = arg;

	if (r < 0)
		rbdl_join_error(&f->j, r);
	fetch_put(f, false);
}

/* Drop the issuer's count of f and wait until everything finished; the
 * count is the issuer's again afterwards. */
static int fetch_wait(struct rbdl_fetch *f)
{
	struct syncwait *w = f->ctx;
	int r;

	fetch_put(f, false);
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	w->done = false;
	pthread_mutex_unlock(&w->mu);
	r = rbdl_join_result(&f->j);

	rbdl_join_start(&f->j, 1);
	return r;
}

int rbdl_io_copyup_sync(struct rbdl_image *img, uint64_t objno,
			bool create_if_zero)
{
	const struct rbdl_pview *pv = rbdl_parent_view(img);
	uint32_t nsnaps = atomic_load(&img->wr_nsnaps);
	struct syncwait w = { PTHREAD_MUTEX_INITIALIZER,
			      PTHREAD_COND_INITIALIZER, false };
	struct rbdl_fetch *f;
	char oid[RBDL_DATA_OID_MAX];
	uint64_t psize;
	time_t pmtime;
	int r;

	if (!rbdl_obj_backed(pv, &img->layout, objno))
		return 0;
	r = rbdl_oid_data(oid, sizeof(oid), img->object_prefix, objno);
	if (r < 0)
		return r;
	r = rados_stat(img->rd_io, oid, &psize, &pmtime);
	if (r != -ENOENT)
		return r;	/* exists (0): its own data already */
	f = fetch_new(NULL, img->layout.object_size, fetch_sync_done, &w);
	if (!f)
		return -ENOMEM;
	fetch_object(f, pv, &img->layout, objno);
	r = fetch_wait(f);
	fetch_trim(f);
	if (r == 0 && !f->len && !create_if_zero)
		r = 1;	/* nothing to keep */
	bool deep = f->len && nsnaps;

	if (r == 0 && deep && rbdl_objmap_ready(img->om)) {
		r = rbdl_objmap_mark_in_snaps(img, objno, &f->j,
					      sync_map_done, f);
		if (r < 0)
			rbdl_join_error(&f->j, r);
		r = fetch_wait(f);
	}
	if (r == 0) {
		rados_write_op_t op = rados_create_write_op();

		if (!op) {
			r = -ENOMEM;
		} else {
			rados_write_op_exec(op, "rbd", "copyup", f->data,
					    f->len, NULL);
			/* Deep: rd_io carries no snapshot context, so the
			 * OSD keeps the data in every snapshot. */
			r = rados_write_op_operate(
				op, deep ? img->rd_io
					 : atomic_load(&img->wr_io),
				oid, NULL, 0);
			rados_release_write_op(op);
		}
	}
	free(f);
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.mu);
	return r == 1 ? 0 : r;
}
