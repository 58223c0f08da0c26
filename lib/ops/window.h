/*
 * window.h - a window of asynchronous object writes (window.c): the one
 * way maintenance and removal send many object ops (removals, truncates)
 * with a bounded number in flight, then wait for all of them.
 *
 * Threading: a window belongs to one caller (a stack object); its ops
 * complete on librados' threads and are reaped here.  A missing object
 * (-ENOENT) counts as success: it is what a removal wants, and a guarded
 * op leaves a missing object alone.
 */
#ifndef RBDL_OPS_WINDOW_H
#define RBDL_OPS_WINDOW_H

#include <rados/librados.h>

#define RBDL_WIN_MAX 256

struct rbdl_win {
	rados_completion_t c[RBDL_WIN_MAX];
	rados_write_op_t op[RBDL_WIN_MAX];
	int size, head, n, err;
};

/* At most size (clamped to [1, RBDL_WIN_MAX]) ops in flight. */
void rbdl_win_init(struct rbdl_win *w, int size);
/* Send op on oid, after reaping the oldest op if the window is full.
 * Takes op (released when it completes, or now on failure). */
void rbdl_win_submit(struct rbdl_win *w, rados_ioctx_t io, const char *oid,
		     rados_write_op_t op);
/* Record an error of the caller's (the first error wins). */
void rbdl_win_fail(struct rbdl_win *w, int err);
/* Wait for every op; the first error, or 0. */
int rbdl_win_drain(struct rbdl_win *w);

#endif /* RBDL_OPS_WINDOW_H */
