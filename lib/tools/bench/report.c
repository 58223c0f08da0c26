/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * report.c - what the parent makes of the blocks: per-variant summaries
 * (medians over blocks, latency percentiles over all blocks merged), the
 * ratios between backends, and the two report formats on stdout: the
 * table and JSON.  The SVG plot is in plot.c.
 *
 * Medians over blocks rather than means: one disturbed block (a scrub, a
 * noisy neighbour) moves a mean but not a median.  The JSON also carries
 * paired geometric means of per-block ratios, which cancel slow drifts
 * that hit both backends of a pair alike.
 *
 * Threading: parent only, single-threaded.
 *
 * Ownership: summarize() allocates v->hist (freed by the caller with the
 * variant); everything else only reads struct parent.
 */
#include "bench.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

/* "randrw70 4k qd32 jobs1 spread shared": the job in a few words */
void job_desc(const struct opts *o, char *buf, size_t n)
{
	char bs[32], rw[32];

	fmt_size(bs, sizeof(bs), o->bs);
	if (o->rw == RW_RANDRW || o->rw == RW_RW)
		snprintf(rw, sizeof(rw), "%s%d", rw_name[o->rw], o->rwmixread);
	else
		snprintf(rw, sizeof(rw), "%s", rw_name[o->rw]);
	snprintf(buf, n, "%s %s qd%d jobs%d%s%s", rw, bs, o->iodepth,
		 o->numjobs, o->spread == SPREAD_IOS ? " spread" : "",
		 o->shared_handles ? " shared" : "");
}

/* ---- statistics --------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* sorts v */
static double median(double *v, int n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double blk_iops(const struct result_rec *r)
{
	return r->elapsed > 0 ? (double)r->ios / r->elapsed : 0;
}

double blk_cpu(const struct result_rec *r)
{
	return r->ios ? (r->cpu_user + r->cpu_sys) * 1e6 / (double)r->ios
		      : NAN;
}

static double blk_ctx(const struct result_rec *r)
{
	return r->ios ? (double)(r->nvcsw + r->nivcsw) / (double)r->ios : NAN;
}

static double blk_mal(const struct result_rec *r)
{
	return r->ios && r->mallocs >= 0 ?
	       (double)r->mallocs / (double)r->ios : NAN;
}

static double blk_mbps(const struct result_rec *r)
{
	return r->elapsed > 0 ? (double)r->bytes / r->elapsed / 1e6 : NAN;
}

static double blk_libhot(const struct result_rec *r)
{
	return r->lib_hot_mallocs >= 0 && r->ios ?
	       (double)r->lib_hot_mallocs / (double)r->ios : NAN;
}

static double blk_threads(const struct result_rec *r)
{
	return r->threads >= 0 ? (double)r->threads : NAN;
}

static double blk_rss(const struct result_rec *r)
{
	return r->rss_kib >= 0 ? (double)r->rss_kib : NAN;
}

/*
 * Median of f over the completed blocks that have a value (f is NAN where
 * a figure is missing); *min and *max, if given, get the range when there
 * is one.  a is scratch space with room for every block.
 */
static double block_median(const struct parent *P, const struct variant *v,
			   double (*f)(const struct result_rec *), double *a,
			   double *min, double *max)
{
	double med;
	int n = 0;

	for (int i = 0; i < P->o->blocks; i++)
		if (v->b[i].done) {
			double x = f(&v->b[i].r);

			if (!isnan(x))
				a[n++] = x;
		}
	med = median(a, n);
	if (n && min) {		/* median() has sorted a */
		*min = a[0];
		*max = a[n - 1];
	}
	return med;
}

void summarize(struct parent *P, struct variant *v)
{
	int nb = P->o->blocks;
	double *a = xcalloc((size_t)nb, sizeof(double));

	v->hist = xcalloc(H_BUCKETS, sizeof(uint64_t));
	v->iops_med = block_median(P, v, blk_iops, a, &v->iops_min,
				   &v->iops_max);
	v->mbps_med = block_median(P, v, blk_mbps, a, NULL, NULL);
	v->cpu_med = block_median(P, v, blk_cpu, a, &v->cpu_min, &v->cpu_max);
	v->ctx_med = block_median(P, v, blk_ctx, a, NULL, NULL);
	v->mal_med = block_median(P, v, blk_mal, a, NULL, NULL);
	v->libhot_med = block_median(P, v, blk_libhot, a, NULL, NULL);
	v->threads_med = block_median(P, v, blk_threads, a, NULL, NULL);
	v->rss_med = block_median(P, v, blk_rss, a, NULL, NULL);
	v->n = 0;
	for (int i = 0; i < nb; i++) {
		const struct result_rec *r = &v->b[i].r;

		if (!v->b[i].done)
			continue;
		v->n++;
		v->ios_total += r->ios;
		v->reads_total += r->reads;
		v->enoent_total += r->enoent_reads;
		for (unsigned k = 0; k < H_BUCKETS; k++)
			v->hist[k] += r->hist[k];
		if (!v->rbd_version[0]) {
			memcpy(v->rbd_version, r->rbd_version,
			       sizeof(v->rbd_version));
			memcpy(v->lib_version, r->lib_version,
			       sizeof(v->lib_version));
			memcpy(v->rados_version, r->rados_version,
			       sizeof(v->rados_version));
			memcpy(v->lib_path, r->lib_path, sizeof(v->lib_path));
		}
	}
	v->p50 = hist_percentile(v->hist, 50) / 1000;
	v->p99 = hist_percentile(v->hist, 99) / 1000;
	v->p999 = hist_percentile(v->hist, 99.9) / 1000;
	v->mean = hist_mean(v->hist) / 1000;
	free(a);
}

/* geometric mean of paired per-block ratios a/b */
static double paired_geomean(const struct parent *P, const struct variant *a,
			     const struct variant *b,
			     double (*f)(const struct result_rec *))
{
	double s = 0;
	int n = 0;

	for (int i = 0; i < P->o->blocks; i++) {
		double x, y;

		if (!a->b[i].done || !b->b[i].done)
			continue;
		x = f(&a->b[i].r);
		y = f(&b->b[i].r);
		if (!(x > 0) || !(y > 0))
			continue;
		s += log(x / y);
		n++;
	}
	return n ? exp(s / n) : NAN;
}

struct ratio {
	const struct variant *a, *b;
};

/* The pairs to compare, within one allocator: at most 2 x 3. */
static int find_ratios(const struct parent *P, struct ratio *out)
{
	int n = 0;
	static const int pairs[][2] = {
		{ BE_LITE, BE_LIBRBD }, { BE_LITE, BE_RADOS },
		{ BE_LIBRBD, BE_RADOS }
	};

	for (int je = 0; je <= 1; je++)
		for (unsigned k = 0; k < sizeof(pairs) / sizeof(*pairs); k++) {
			const struct variant *a = NULL, *b = NULL;

			for (int i = 0; i < P->nv; i++) {
				if (P->v[i].jemalloc != je)
					continue;
				if (P->v[i].backend == pairs[k][0])
					a = &P->v[i];
				if (P->v[i].backend == pairs[k][1])
					b = &P->v[i];
			}
			if (a && b) {
				out[n].a = a;
				out[n].b = b;
				n++;
			}
		}
	return n;
}

/* ---- normal output ------------------------------------------------------ */

static void fmt_num(char *buf, size_t n, double v, const char *f)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, f, v);
}

static void print_row(const struct variant *v)
{
	char c[6][32], mm[40];

	fmt_num(c[0], sizeof(c[0]), v->iops_med, "%.0f");
	fmt_num(c[1], sizeof(c[1]), v->mbps_med, "%.1f");
	fmt_num(c[2], sizeof(c[2]), v->cpu_med, "%.2f");
	fmt_num(c[3], sizeof(c[3]), v->ctx_med, "%.3f");
	fmt_num(c[4], sizeof(c[4]), v->mal_med, "%.2f");
	fmt_num(c[5], sizeof(c[5]), v->threads_med, "%.0f");
	if (isnan(v->cpu_med))
		snprintf(mm, sizeof(mm), "-");
	else
		snprintf(mm, sizeof(mm), "(%.2f-%.2f)", v->cpu_min, v->cpu_max);
	printf("%-15s %9s %8s %8.1f %8.1f %9.1f %9s %17s %9s %10s %7s\n",
	       v->name, c[0], c[1], v->p50, v->p99, v->p999, c[2], mm, c[3],
	       c[4], c[5]);
}

static void print_notes(const struct variant *v)
{
	if (v->backend == BE_RADOS && v->enoent_total && v->reads_total)
		printf("note: %s: %.1f%% of the object reads hit nonexistent objects "
		       "(holes; use --prefill)\n", v->name, 100.0 *
		       (double)v->enoent_total / (double)v->reads_total);
	if (v->backend == BE_LITE && !isnan(v->libhot_med) && v->libhot_med > 0)
		printf("note: %s: librbdlite counted %.3f hot-path mallocs per I/O\n",
		       v->name, v->libhot_med);
}

void print_table(struct parent *P)
{
	const struct opts *o = P->o;
	struct ratio rat[6];
	int nr = find_ratios(P, rat);
	char desc[96], size[32];

	job_desc(o, desc, sizeof(desc));
	fmt_size(size, sizeof(size), o->size);
	printf("\n%s: %s, %d image(s), mode %s, %d block(s) per backend", PROG,
	       desc, o->nimages, mode_name[o->mode], o->blocks);
	if (o->runtime > 0)
		printf(", %.3g s measured after %.3g s warm-up\n", o->runtime,
		       o->warmup);
	else
		printf(", size-based: each job transfers %s\n",
		       o->size ? size : "its image region");
	printf("\n%-15s %9s %8s %8s %8s %9s %9s %17s %9s %10s %7s\n",
	       "backend", "IOPS", "MB/s", "p50 us", "p99 us", "p99.9 us",
	       "CPU us/IO", "(min-max)", "ctxsw/IO", "mallocs/IO", "threads");
	for (int i = 0; i < P->nv; i++)
		print_row(&P->v[i]);
	for (int i = 0; i < P->nv; i++)
		print_notes(&P->v[i]);
	if (nr) {
		printf("\n%-30s %8s %8s %8s %8s %12s\n", "ratio (medians)",
		       "CPU/IO", "IOPS", "p50", "p99", "p50 delta");
		for (int i = 0; i < nr; i++) {
			const struct variant *a = rat[i].a, *b = rat[i].b;
			char name[80];

			snprintf(name, sizeof(name), "%s/%s", a->name, b->name);
			printf("%-30s %7.2fx %7.2fx %7.2fx %7.2fx %+9.1f us\n",
			       name, a->cpu_med / b->cpu_med,
			       a->iops_med / b->iops_med, a->p50 / b->p50,
			       a->p99 / b->p99, a->p50 - b->p50);
		}
	}
	printf("\nCPU = user+sys of all threads of the benchmark process per completed I/O "
	       "(getrusage);\nmallocs = malloc/calloc/realloc/memalign-family/operator new "
	       "calls, whole process.\n");
}

/* ---- JSON --------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* s, or null where s is NULL */
static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		json_str(f, s);
	else
		fputs("null", f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

/* v, or null for a counter that was not kept (negative) */
static void json_count(FILE *f, int64_t v)
{
	if (v >= 0)
		fprintf(f, "%" PRId64, v);
	else
		fputs("null", f);
}

/* "key": value pairs of numbers, each after ", " */
static void json_num_field(FILE *f, const char *key, double v)
{
	fprintf(f, ", \"%s\": ", key);
	json_num(f, v);
}

static void json_lat(FILE *f, const uint64_t *h)
{
	fprintf(f, "{\"p50\": ");
	json_num(f, hist_percentile(h, 50) / 1000);
	json_num_field(f, "p90", hist_percentile(h, 90) / 1000);
	json_num_field(f, "p99", hist_percentile(h, 99) / 1000);
	json_num_field(f, "p99.9", hist_percentile(h, 99.9) / 1000);
	json_num_field(f, "p99.99", hist_percentile(h, 99.99) / 1000);
	json_num_field(f, "mean", hist_mean(h) / 1000);
	fprintf(f, "}");
}

/* tool, version, command line, date and host */
static void json_run(FILE *f, const struct parent *P)
{
	struct utsname un;
	char date[64], host[256] = "";
	struct tm tm;

	gmtime_r(&P->start, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gethostname(host, sizeof(host) - 1);
	if (uname(&un) < 0)
		memset(&un, 0, sizeof(un));

	fprintf(f, "{\n  \"tool\": \"%s\",\n  \"version\": ", PROG);
	json_str(f, PACKAGE_VERSION);
	fprintf(f, ",\n  \"command_line\": [");
	for (int i = 0; i < P->argc; i++) {
		if (i)
			fputs(", ", f);
		json_str(f, P->argv[i]);
	}
	fprintf(f, "],\n  \"date\": \"%s\",\n  \"host\": {\"hostname\": ", date);
	json_str(f, host);
	fprintf(f, ", \"nproc\": %ld, \"kernel\": ",
		sysconf(_SC_NPROCESSORS_ONLN));
	json_str(f, un.release);
	fprintf(f, ", \"machine\": ");
	json_str(f, un.machine);
	fputc('}', f);
}

/* the job's options and the images' layouts */
static void json_job(FILE *f, const struct parent *P)
{
	const struct opts *o = P->o;

	fprintf(f, ",\n  \"job\": {\"rw\": \"%s\", \"rwmixread\": %d, \"bs\": %"
		PRIu64 ", \"iodepth\": %d, \"numjobs\": %d, \"runtime_s\": ",
		rw_name[o->rw], o->rwmixread, o->bs, o->iodepth, o->numjobs);
	json_num(f, o->runtime);
	json_num_field(f, "warmup_s", o->warmup);
	fprintf(f, ", \"size\": %" PRIu64 ", \"pool\": ", o->size);
	json_str(f, o->pool);
	fprintf(f, ", \"mode\": \"%s\", \"blocks\": %d, \"order\": \"%s\", "
		"\"seed\": %" PRIu64 ", \"prefill\": %s, \"spread\": \"%s\", "
		"\"handles\": \"%s\", \"conf\": ",
		mode_name[o->mode], o->blocks,
		o->order == ORDER_ABBA ? "abba" : "cyclic", o->seed,
		o->prefill ? "true" : "false",
		o->spread == SPREAD_IOS ? "ios" : "jobs",
		o->shared_handles ? "shared" : "job");
	json_str_or_null(f, o->conf);
	fprintf(f, ", \"set\": [");
	for (int i = 0; i < o->nsets; i++) {
		if (i)
			fputs(", ", f);
		json_str(f, o->sets[i]);
	}
	fprintf(f, "]},\n  \"images\": [");
	for (int i = 0; i < o->nimages; i++) {
		const struct layout *l = &P->layouts[i];

		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, o->images[i]);
		fprintf(f, ", \"size\": %" PRIu64 ", \"order\": %d, "
			"\"stripe_unit\": %" PRIu64 ", \"stripe_count\": %"
			PRIu64 ", \"features\": %" PRIu64 ", \"data_pool_id\": %"
			PRId64 ", \"block_name_prefix\": ", l->size, l->order,
			l->stripe_unit, l->stripe_count, l->features,
			l->data_pool_id);
		json_str(f, l->prefix);
		fputc('}', f);
	}
	fprintf(f, "\n  ],\n  \"malloc_counter\": ");
	json_str_or_null(f, P->have_mc ? P->mc_lib : NULL);
	fprintf(f, ",\n  \"jemalloc\": ");
	json_str_or_null(f, o->jemalloc ? P->jemalloc_so : NULL);
}

static void json_block(FILE *f, const struct block_res *b, int blockno,
		       int first)
{
	const struct result_rec *r = &b->r;

	fprintf(f, "%s\n       {\"block\": %d, \"seq\": %d, \"elapsed_s\": ",
		first ? "" : ",", blockno, b->seq);
	json_num(f, r->elapsed);
	fprintf(f, ", \"ios\": %" PRIu64 ", \"reads\": %" PRIu64
		", \"writes\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"iops\": ",
		r->ios, r->reads, r->writes, r->bytes);
	json_num(f, blk_iops(r));
	json_num_field(f, "cpu_user_s", r->cpu_user);
	json_num_field(f, "cpu_sys_s", r->cpu_sys);
	json_num_field(f, "cpu_us_per_io", blk_cpu(r));
	fprintf(f, ", \"voluntary_ctxsw\": %" PRIu64 ", \"involuntary_ctxsw\": %"
		PRIu64 ", \"ctxsw_per_io\": ", r->nvcsw, r->nivcsw);
	json_num(f, blk_ctx(r));
	fprintf(f, ", \"mallocs\": ");
	json_count(f, r->mallocs);
	json_num_field(f, "mallocs_per_io", blk_mal(r));
	fprintf(f, ", \"lib_hot_path_mallocs\": ");
	json_count(f, r->lib_hot_mallocs);
	fprintf(f, ", \"threads\": %" PRId64 ", \"rss_kib\": %" PRId64
		", \"enoent_object_reads\": %" PRIu64 ", \"lat_us\": ",
		r->threads, r->rss_kib, r->enoent_reads);
	json_lat(f, r->hist);
	fputc('}', f);
}

static void json_variant(FILE *f, const struct parent *P,
			 const struct variant *v, int first)
{
	fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
	json_str(f, v->name);
	fprintf(f, ", \"backend\": \"%s\", \"allocator\": \"%s\", \"library\": ",
		be_name[v->backend], v->jemalloc ? "jemalloc" : "glibc");
	json_str_or_null(f, v->lib_path[0] ? v->lib_path : NULL);
	fprintf(f, ", \"rbd_version\": ");
	json_str_or_null(f, v->rbd_version[0] ? v->rbd_version : NULL);
	fprintf(f, ", \"rbdlite_version\": ");
	json_str_or_null(f, v->lib_version[0] ? v->lib_version : NULL);
	fprintf(f, ", \"rados_version\": ");
	json_str(f, v->rados_version);
	fprintf(f, ",\n     \"summary\": {\"blocks\": %d, \"ios\": %" PRIu64
		", \"iops\": {\"median\": ", v->n, v->ios_total);
	json_num(f, v->iops_med);
	json_num_field(f, "min", v->iops_min);
	json_num_field(f, "max", v->iops_max);
	fprintf(f, "}, \"mb_per_s\": ");
	json_num(f, v->mbps_med);
	fprintf(f, ", \"lat_us\": ");
	json_lat(f, v->hist);
	fprintf(f, ",\n       \"cpu_us_per_io\": {\"median\": ");
	json_num(f, v->cpu_med);
	json_num_field(f, "min", v->cpu_min);
	json_num_field(f, "max", v->cpu_max);
	fprintf(f, "}, \"ctxsw_per_io\": ");
	json_num(f, v->ctx_med);
	json_num_field(f, "mallocs_per_io", v->mal_med);
	json_num_field(f, "lib_hot_path_mallocs_per_io", v->libhot_med);
	json_num_field(f, "threads", v->threads_med);
	json_num_field(f, "rss_kib", v->rss_med);
	fprintf(f, ", \"enoent_object_reads\": %" PRIu64 "},\n     \"blocks\": [",
		v->enoent_total);
	for (int i = 0, first_block = 1; i < P->o->blocks; i++) {
		if (!v->b[i].done)
			continue;
		json_block(f, &v->b[i], i + 1, first_block);
		first_block = 0;
	}
	fprintf(f, "\n     ]}");
}

static void json_ratio(FILE *f, const struct parent *P, const struct ratio *q,
		       int first)
{
	const struct variant *a = q->a, *b = q->b;

	fprintf(f, "%s\n    {\"a\": ", first ? "" : ",");
	json_str(f, a->name);
	fprintf(f, ", \"b\": ");
	json_str(f, b->name);
	json_num_field(f, "cpu_per_io", a->cpu_med / b->cpu_med);
	json_num_field(f, "cpu_per_io_paired_geomean",
		       paired_geomean(P, a, b, blk_cpu));
	json_num_field(f, "iops", a->iops_med / b->iops_med);
	json_num_field(f, "iops_paired_geomean",
		       paired_geomean(P, a, b, blk_iops));
	json_num_field(f, "p50", a->p50 / b->p50);
	json_num_field(f, "p99", a->p99 / b->p99);
	json_num_field(f, "p99.9", a->p999 / b->p999);
	json_num_field(f, "p50_delta_us", a->p50 - b->p50);
	json_num_field(f, "mallocs_per_io_delta", a->mal_med - b->mal_med);
	fputc('}', f);
}

void print_json(struct parent *P)
{
	FILE *f = stdout;
	struct ratio rat[6];
	int nr = find_ratios(P, rat);

	json_run(f, P);
	json_job(f, P);
	fprintf(f, ",\n  \"backends\": [");
	for (int i = 0; i < P->nv; i++)
		json_variant(f, P, &P->v[i], i == 0);
	fprintf(f, "\n  ],\n  \"ratios\": [");
	for (int i = 0; i < nr; i++)
		json_ratio(f, P, &rat[i], i == 0);
	fprintf(f, "\n  ]\n}\n");
}
