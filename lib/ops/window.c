/*
 * window.c - a window of asynchronous object writes (window.h).
 */
#include "config.h"

#include "window.h"

#include <errno.h>

void rbdl_win_init(struct rbdl_win *w, int size)
{
	w->size = size < 1 ? 1 : size > RBDL_WIN_MAX ? RBDL_WIN_MAX : size;
	w->head = w->n = w->err = 0;
}

void rbdl_win_fail(struct rbdl_win *w, int err)
{
	if (!w->err)
		w->err = err;
}

static void win_reap(struct rbdl_win *w)
{
	int i = w->head, r;

	rados_aio_wait_for_complete(w->c[i]);
	r = rados_aio_get_return_value(w->c[i]);
	rados_aio_release(w->c[i]);
	rados_release_write_op(w->op[i]);
	/* A missing object is what we wanted (or, guarded, left alone). */
	if (r < 0 && r != -ENOENT)
		rbdl_win_fail(w, r);
	w->head = (w->head + 1) % w->size;
	w->n--;
}

/* Takes op (released when it completes). */
void rbdl_win_submit(struct rbdl_win *w, rados_ioctx_t io, const char *oid,
		     rados_write_op_t op)
{
	int i, r;

	if (w->n == w->size)
		win_reap(w);
	i = (w->head + w->n) % w->size;
	r = rados_aio_create_completion2(NULL, NULL, &w->c[i]);
	if (r < 0) {
		rados_release_write_op(op);
		rbdl_win_fail(w, r);
		return;
	}
	r = rados_aio_write_op_operate(op, io, w->c[i], oid, NULL, 0);
	if (r < 0) {
		rados_aio_release(w->c[i]);
		rados_release_write_op(op);
		rbdl_win_fail(w, r);
		return;
	}
	w->op[i] = op;
	w->n++;
}

int rbdl_win_drain(struct rbdl_win *w)
{
	while (w->n)
		win_reap(w);
	return w->err;
}
