/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * main.c - rbdlite-bench: fio-like benchmark of librbdlite against the
 * real librbd and against raw librados, in one run.
 *
 * The same job (rw pattern, block size, queue depth, threads, images) runs
 * on every backend, interleaved in blocks (A B C A B C ...):
 *
 *   lite    librbdlite, dlopen'ed (--lite-lib, $RBDLITE_LIB, the build
 *           tree, or the installed library)
 *   librbd  the real librbd.so.1, dlopen'ed
 *   rados   raw librados aio on the image's data objects, at the offsets
 *           the rbd job would touch: the floor for any client over librados
 *
 * Each block runs in a fresh child process (fork + exec of this program
 * with the hidden --child option), so CPU time (user+sys of all threads,
 * getrusage(RUSAGE_SELF)), context switches and allocator calls are
 * whole-process figures for one backend.  The child connects and opens
 * first, runs a warm-up, then measures a steady-state window and reports
 * to the parent over a pipe: counters plus a log-linear latency histogram
 * (256 sub-buckets per power of two: < 0.4 % relative error).  Allocator
 * calls are counted by the librbdlite-malloccount.so interposer, which the
 * parent preloads into every child (first, before jemalloc with
 * --jemalloc).
 *
 * This program links only librados (and libdl, libpthread, libm): librbd
 * and librbdlite must never meet in one process.
 *
 * This file: main() and the parent's orchestration (checks, variants,
 * the block loop, the report).  opts.c parses the command line, run.c
 * runs children, child.c and engine*.c are the child, report.c and
 * plot.c the output.
 *
 * Threading: the parent is single-threaded; a child runs job threads
 * (engine.h).  Ownership: parent_main() owns struct parent and frees the
 * variants, layouts and argument arrays before returning.
 */
#include "bench.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes that the backends would handle differently: say so up front. */
static void warn_features(struct parent *P)
{
	const struct opts *o = P->o;
	int lite = opts_has_backend(o, BE_LITE);
	int rados = opts_has_backend(o, BE_RADOS);
	int writers[MAX_IMAGES] = { 0 };

	if (!rw_writes(o->rw))
		return;
	for (int i = 0; i < o->numjobs; i++)
		writers[i % o->nimages]++;
	for (int i = 0; i < o->nimages; i++) {
		uint64_t f = P->layouts[i].features;

		if (lite && (f & RBD_FEATURE_JOURNALING))
			warnx_("image %s has journaling: librbdlite has the system's "
			       "librbd run its I/O (librbd's cost, not librbdlite's)",
			       o->images[i]);
		if (rados && (f & RBD_FEATURE_OBJECT_MAP))
			warnx_("image %s has an object map: raw rados writes bypass it "
			       "(use a scratch image)", o->images[i]);
		if ((f & RBD_FEATURE_EXCLUSIVE_LOCK) && writers[i] > 1)
			warnx_("%d jobs write to exclusive-lock image %s through separate "
			       "handles: the lock moves between them",
			       writers[i], o->images[i]);
	}
}

/* ---- progress ----------------------------------------------------------- */

struct block_ctx {
	int blockno;
	const struct variant *v;
};

static void on_progress(struct parent *P, const struct progress_rec *p,
			void *arg)
{
	const struct block_ctx *b = arg;
	char desc[96];

	if (P->o->quiet || !P->tty)
		return;
	job_desc(P->o, desc, sizeof(desc));
	if (p->phase == 0)
		fprintf(stderr, "\r\033[Kblock %d/%d: %-14s %s: warming up",
			b->blockno, P->total_blocks, b->v->name, desc);
	else
		fprintf(stderr, "\r\033[Kblock %d/%d: %-14s %s: %.0f/%.0f s, %.0f IOPS",
			b->blockno, P->total_blocks, b->v->name, desc,
			p->elapsed, P->o->runtime,
			p->elapsed > 0 ? (double)p->ios / p->elapsed : 0.0);
	fflush(stderr);
}

/* ---- the run ------------------------------------------------------------ */

/* Before any block: find the libraries, read the layouts, check, prefill. */
static void prepare(struct parent *P)
{
	const struct opts *o = P->o;
	const char *preload = getenv("LD_PRELOAD");

	if (preload && *preload)
		warnx_("LD_PRELOAD=%s is passed on to every backend", preload);
	if (o->runtime == 0 && o->size == 0 && !o->quiet)
		warnx_("--runtime=0: every job transfers its whole image region once");
	resolve_paths(P);
	probe_images(P);
	for (int i = 0; i < o->nimages; i++) {
		if (o->size && o->size > P->layouts[i].size)
			warnx_("--size is larger than image %s (%" PRIu64 " bytes): using the image size",
			       o->images[i], P->layouts[i].size);
		if (P->layouts[i].size < o->bs)
			die("image %s is smaller than --bs", o->images[i]);
	}
	warn_features(P);
	if (o->prefill)
		prefill(P);
}

/* variants: backend x allocator, glibc malloc first */
static void setup_variants(struct parent *P)
{
	const struct opts *o = P->o;
	int je_lo = o->jemalloc == 1 ? 1 : 0, je_hi = o->jemalloc ? 1 : 0;

	P->v = xcalloc((size_t)(o->nbackends * 2), sizeof(*P->v));
	for (int je = je_lo; je <= je_hi; je++)
		for (int i = 0; i < o->nbackends; i++) {
			struct variant *v = &P->v[P->nv++];

			v->backend = o->backends[i];
			v->jemalloc = je;
			snprintf(v->name, sizeof(v->name), "%s%s",
				 be_name[v->backend], je ? "+jemalloc" : "");
			v->b = xcalloc((size_t)o->blocks, sizeof(*v->b));
			v->cpu_min = v->cpu_max = NAN;
			v->iops_min = v->iops_max = NAN;
		}
	P->total_blocks = P->nv * o->blocks;
}

/* Block b of variant v, the seq'th of the run; 0 or 1 (reported). */
static int run_block(struct parent *P, struct variant *v, int b, int seq,
		     char **base, int nbase, double timeout, const char *desc)
{
	const struct opts *o = P->o;
	struct block_ctx bctx = { seq, v };
	struct child_cb cb;
	char **extra = NULL;
	int nextra = 0, rc = 0;

	for (int i = 0; i < nbase; i++)
		add_str(&extra, &nextra, base[i]);
	add_child_args(P, &extra, &nextra, v->backend);
	memset(&cb, 0, sizeof(cb));
	cb.progress = on_progress;
	cb.arg = &bctx;
	cb.result = &v->b[b].r;
	if (!o->quiet && P->tty) {
		fprintf(stderr, "\r\033[Kblock %d/%d: %-14s %s: starting",
			seq, P->total_blocks, v->name, desc);
		fflush(stderr);
	}
	if (run_child(P, v->jemalloc, extra, nextra, timeout, &cb) < 0) {
		if (!o->quiet && P->tty)
			fputc('\n', stderr);
		fprintf(stderr, PROG ": block %d/%d (%s) failed: %s\n", seq,
			P->total_blocks, v->name, cb.errmsg);
		rc = 1;
	} else {
		const struct result_rec *r = &v->b[b].r;

		v->b[b].done = 1;
		v->b[b].seq = seq;
		if (!o->quiet)
			fprintf(stderr, "%sblock %d/%d: %-14s %s: %.0f IOPS, "
				"%.2f us CPU/IO, p50 %.1f us\n",
				P->tty ? "\r\033[K" : "", seq, P->total_blocks,
				v->name, desc, blk_iops(r), blk_cpu(r),
				hist_percentile(r->hist, 50) / 1000);
	}
	free_strs(extra, nextra);
	return rc;
}

static int report(struct parent *P)
{
	const struct opts *o = P->o;
	int r;

	for (int i = 0; i < P->nv; i++)
		summarize(P, &P->v[i]);
	if (o->json)
		print_json(P);
	else
		print_table(P);
	if (!o->plot)
		return 0;
	r = write_plot(P, o->plot);
	if (r < 0) {
		fprintf(stderr, PROG ": cannot write %s: %s\n", o->plot,
			strerror(-r));
		return 1;
	}
	if (!o->quiet)
		fprintf(stderr, "plot written to %s\n", o->plot);
	return 0;
}

static int parent_main(struct opts *o, int argc, char **argv)
{
	struct parent P;
	char **base = NULL;
	int nbase = 0, seq = 0, rc = 0;
	double timeout;
	char desc[96];

	memset(&P, 0, sizeof(P));
	P.o = o;
	P.argc = argc;
	P.argv = argv;
	P.tty = isatty(2);
	P.start = time(NULL);
	prepare(&P);
	setup_variants(&P);
	/* what every block's child gets besides --child and --child-lib */
	layout_args(&P, &base, &nbase);
	add_str(&base, &nbase, "--child-fd=3");
	timeout = o->timeout > 0 ? o->timeout :
		  o->runtime > 0 ? o->runtime + o->warmup + 120 : 0;
	job_desc(o, desc, sizeof(desc));

	/* abba reverses every second round, cancelling linear drift */
	for (int b = 0; b < o->blocks && !rc; b++)
		for (int k = 0; k < P.nv && !rc; k++) {
			int vi = o->order == ORDER_ABBA && b % 2 ? P.nv - 1 - k
								  : k;

			rc = run_block(&P, &P.v[vi], b, ++seq, base, nbase,
				       timeout, desc);
		}
	if (!rc)
		rc = report(&P);
	free_strs(base, nbase);
	for (int i = 0; i < P.nv; i++) {
		free(P.v[i].b);
		free(P.v[i].hist);
	}
	free(P.v);
	free(P.layouts);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc;

	parse_opts(&o, argc, argv);
	if (o.child)
		rc = child_main(&o);
	else
		rc = parent_main(&o, argc, argv);
	free_opts(&o);
	return rc;
}
