/*
 * real.c - finding and using the system's librbd for forwarded calls.
 *
 * Role: the real librbd's definitions of the rbd_* functions librbdlite
 * forwards (rbd_delegated.c), short-lived real handles of our open images
 * and copies of our image options for it.  See real.h.
 *
 * Which library: chosen once, the first time a forwarded call runs.
 *  1. The next definition after ours in the process's lookup order
 *     (dlsym(RTLD_NEXT)): under LD_PRELOAD over a program linked with
 *     librbd.so.1, that is the real librbd, already loaded.
 *  2. Otherwise (we are the substitute librbd.so.1, or linked directly, or
 *     the real one was dlopen'ed locally by a module such as python's rbd)
 *     dlopen() of the installed library by its path: $RBDLITE_SYSTEM_LIBRBD,
 *     else configure's --with-system-librbd.  RTLD_LOCAL, so none of its
 *     symbols takes the place of ours; if the library is already loaded,
 *     dlopen returns that same instance.
 * A candidate that is librbdlite itself (it defines rbdlite_is_librbdlite)
 * is refused.  The real librbd is never unloaded (a C++ library with
 * threads of its own; nothing would be gained).
 *
 * The real librbd calls a few of its own exported functions (the
 * mirroring peer and status cleanups, rbd_mirror_image_enable2, the pool
 * stats helpers, rbd_version): those calls bind to our definitions, which
 * is why every forwarding body passes handles librbdlite did not make
 * straight through, and why our native cleanups free with free() exactly
 * the fields the real ones do.
 *
 * Threading: the choice is made under pthread_once; dlsym and the real
 * librbd's open/close are thread-safe.  Ownership: real handles and real
 * option sets belong to the one call that made them.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/real.h"
#include "core/internal.h"
#include "image/journal.h"
#include "image/open.h"
#include "image/state.h"
#include "ops/options.h"
#include "proto/cls_rbd.h"

static void *real_lib;		/* RTLD_NEXT or a dlopen handle; NULL: none */
static char real_why[512];	/* why there is none */
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

/* Whether the object that defines sym is a librbdlite. */
static bool is_librbdlite_at(void *sym)
{
	Dl_info info;
	void *h;
	bool ours;

	if (!dladdr(sym, &info) || !info.dli_fname)
		return false;
	h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return false;
	ours = dlsym(h, "rbdlite_is_librbdlite") != NULL;
	dlclose(h);
	return ours;
}

static void real_choose(void)
{
	const char *path = getenv("RBDLITE_SYSTEM_LIBRBD");
	void *sym = dlsym(RTLD_NEXT, "rbd_open");
	void *h;

	if (sym && !is_librbdlite_at(sym)) {
		real_lib = RTLD_NEXT;
		return;
	}
	if (!path || !path[0])
		path = RBDLITE_SYSTEM_LIBRBD;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		snprintf(real_why, sizeof(real_why), "%s", e ? e : path);
		return;
	}
	if (dlsym(h, "rbdlite_is_librbdlite")) {
		snprintf(real_why, sizeof(real_why),
			 "%s is librbdlite, not the real librbd", path);
		dlclose(h);
		return;
	}
	real_lib = h;
}

void *rbdl_real_sym(const char *name, atomic_int *warned)
{
	void *sym = NULL;

	pthread_once(&real_once, real_choose);
	if (real_lib)
		sym = dlsym(real_lib, name);
	if (!sym && !atomic_exchange_explicit(warned, 1, memory_order_relaxed))
		rbdl_log("%s is forwarded to the system's librbd, which is "
			 "not available (%s): returning -EOPNOTSUPP (set "
			 "RBDLITE_SYSTEM_LIBRBD to its path)",
			 name, real_lib ? "symbol not found" : real_why);
	return sym;
}

int rbdl_real_image_open(struct rbdl_image *img, const char *fn,
			 rbd_image_t *out)
{
	return rbdl_real_image_open2(img, fn, false, out);
}

/* A real handle of img's image: at img's view (read-only if img is, or
 * if read_only), or, with !at_view, read-write at HEAD. */
static int real_open(struct rbdl_image *img, const char *fn, bool read_only,
		     bool at_view, rbd_image_t *out)
{
	__typeof__(&rbd_open_by_id) open_rw = RBDL_REAL_FN(rbd_open_by_id);
	__typeof__(&rbd_open_by_id_read_only) open_ro =
		RBDL_REAL_FN(rbd_open_by_id_read_only);
	__typeof__(&rbd_snap_set_by_id) snap_set =
		RBDL_REAL_FN(rbd_snap_set_by_id);
	__typeof__(&rbd_close) close_fn = RBDL_REAL_FN(rbd_close);
	uint64_t snap_id;
	bool ro;
	int r;

	if (!open_rw || !open_ro || !snap_set || !close_fn)
		return -EOPNOTSUPP;
	/* The view (snapshot, read-only) as of now; it changes only under
	 * refresh_lock (rbd_snap_set). */
	pthread_mutex_lock(&img->refresh_lock);
	snap_id = at_view ? img->snap_id : RBDL_NOSNAP;
	ro = at_view && (img->read_only || read_only);
	pthread_mutex_unlock(&img->refresh_lock);
	r = (ro ? open_ro : open_rw)(img->md_io, img->id, out, NULL);
	if (r < 0) {
		rbdl_log("%s: opening image %s with the system's librbd "
			 "failed: %d", fn, img->id, r);
		return r;
	}
	if (snap_id != RBDL_NOSNAP) {
		r = snap_set(*out, snap_id);
		if (r < 0) {
			close_fn(*out);
			return r;
		}
	}
	return 0;
}

int rbdl_real_image_open2(struct rbdl_image *img, const char *fn,
			  bool read_only, rbd_image_t *out)
{
	return real_open(img, fn, read_only, true, out);
}

int rbdl_real_image_open_head(struct rbdl_image *img, const char *fn,
			      rbd_image_t *out)
{
	return real_open(img, fn, false, false, out);
}

rbd_image_t rbdl_real_image_shared(struct rbdl_image *img)
{
	return rbdl_journal_handle(img);
}

void rbdl_real_image_done(struct rbdl_image *img)
{
	/* Release: pairs with rbdl_image_maybe_refresh()'s acquire load, as
	 * a header notification's increment does. */
	atomic_fetch_add_explicit(&img->refresh_seq, 1, memory_order_release);
}

int rbdl_real_image_get(struct rbdl_image *img, const char *fn,
			rbd_image_t *out, bool *shared)
{
	*out = rbdl_real_image_shared(img);
	*shared = *out != NULL;
	return *shared ? 0 : rbdl_real_image_open(img, fn, out);
}

void rbdl_real_image_put(struct rbdl_image *img, rbd_image_t h, bool shared)
{
	if (shared)
		rbdl_real_image_done(img);
	else
		rbdl_real_image_close(img, h);
}

void rbdl_real_image_close(struct rbdl_image *img, rbd_image_t real)
{
	__typeof__(&rbd_close) close_fn = RBDL_REAL_FN(rbd_close);

	if (close_fn)
		close_fn(real);
	rbdl_real_image_done(img);
}

int rbdl_real_no_progress(uint64_t offset, uint64_t total, void *arg)
{
	(void)offset;
	(void)total;
	(void)arg;
	return 0;
}

int rbdl_real_opts_copy(rbd_image_options_t opts, const char *fn,
			rbd_image_options_t *out)
{
	__typeof__(&rbd_image_options_create) create =
		RBDL_REAL_FN(rbd_image_options_create);
	__typeof__(&rbd_image_options_destroy) destroy =
		RBDL_REAL_FN(rbd_image_options_destroy);
	__typeof__(&rbd_image_options_set_uint64) set_u64 =
		RBDL_REAL_FN(rbd_image_options_set_uint64);
	__typeof__(&rbd_image_options_set_string) set_str =
		RBDL_REAL_FN(rbd_image_options_set_string);
	const struct rbdl_opts *o = opts;
	int r = 0;

	(void)fn;
	*out = NULL;
	if (!opts)
		return 0;
	if (!create || !destroy || !set_u64 || !set_str)
		return -EOPNOTSUPP;
	create(out);
	if (!*out)
		return -ENOMEM;
	for (int id = 0; id < RBDL_OPT_COUNT && r == 0; id++) {
		if (!(o->set & (1u << id)))
			continue;
		if (rbdl_opt_type(id) == RBDL_OPT_STR)
			r = set_str(*out, id, o->str[id]);
		else
			r = set_u64(*out, id, o->u64[id]);
	}
	if (r < 0) {
		destroy(*out);
		*out = NULL;
	}
	return r;
}

void rbdl_real_opts_free(rbd_image_options_t real_opts)
{
	__typeof__(&rbd_image_options_destroy) destroy =
		RBDL_REAL_FN(rbd_image_options_destroy);

	if (real_opts && destroy)
		destroy(real_opts);
}
