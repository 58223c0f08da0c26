/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * opts.c - the command line of rbdlite-bench: the user's options, which
 * the parent passes on unchanged to every child, and the hidden --child*
 * options through which the parent tells a child what to run.
 *
 * Threading: parse_opts() runs once, in main(), before anything else; the
 * result is read-only afterwards (a child's job threads read it freely).
 *
 * Ownership: struct opts points into argv for single-valued strings (argv
 * outlives it) and owns copies of list entries (images, --set) and the
 * parsed layouts; free_opts() releases those.  Invalid input is fatal:
 * die() with a message naming the option.
 */
#include "bench.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const be_name[BE_COUNT] = { "lite", "librbd", "rados" };
const char *const rw_name[RW_COUNT] = {
	"read", "write", "randread", "randwrite", "randrw", "rw"
};
const char *const mode_name[MODE_COUNT] = {
	"poll", "poll-nocb", "callback", "handoff"
};

/* Two-way choices, indexed by the value they set. */
static const char *const outfmt_name[] = { "normal", "json" };
static const char *const spread_name[] = { "jobs", "ios" };
static const char *const handles_name[] = { "job", "shared" };
static const char *const order_name[] = { "cyclic", "abba" };

#define NAMES(a) (int)(sizeof(a) / sizeof(*(a)))

/* Index of s in names[0..n), or -1. */
static int name_index(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* 4096, 4k, 4K, 4KiB, 4kb...: binary multiples up to t */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k': mult = 1ull << 10; end++; break;
	case 'm': mult = 1ull << 20; end++; break;
	case 'g': mult = 1ull << 30; end++; break;
	case 't': mult = 1ull << 40; end++; break;
	default:
		return -1;
	}
	if (mult > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (v && mult > UINT64_MAX / v))
		return -1;
	*out = v * mult;
	return 0;
}

/* a non-negative number of seconds, with an optional s, m, h or ms */
static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || isinf(v))
		return -1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		;
	else if (!strcmp(end, "m"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (!strcmp(end, "ms"))
		v /= 1000;
	else
		return -1;
	*out = v;
	return 0;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* comma-separated list; empty entries are skipped */
static void add_list(char ***arr, int *n, const char *s)
{
	char *copy = xstrdup(s), *save = NULL, *tok;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (*tok)
			add_str(arr, n, tok);
	free(copy);
}

static void parse_backends(struct opts *o, const char *s)
{
	char **l = NULL;
	int n = 0;

	add_list(&l, &n, s);
	o->nbackends = 0;
	for (int i = 0; i < n; i++) {
		int b = name_index(l[i], be_name, BE_COUNT);

		if (b < 0)
			die("--backends: unknown backend '%s' (lite, librbd, rados)", l[i]);
		if (opts_has_backend(o, b))
			die("--backends: '%s' given twice", l[i]);
		o->backends[o->nbackends++] = b;
	}
	free_strs(l, n);
	if (!o->nbackends)
		die("--backends: empty list");
}

/* SIZE:FEATURES:ORDER:STRIPE_UNIT:STRIPE_COUNT:DATA_POOL:DATA_OFF:
 * CRYPT_BLOCK:PREFIX, as layout_args() writes it */
static void parse_layout(struct opts *o, const char *s)
{
	struct layout l = { 0 };
	struct layout *a;
	unsigned long long size, feat, su, sc, doff;
	long long dpool;
	unsigned cblock;
	int order, n = 0;

	if (sscanf(s, "%llu:%llu:%d:%llu:%llu:%lld:%llu:%u:%n", &size, &feat,
		   &order, &su, &sc, &dpool, &doff, &cblock, &n) != 8 || !n ||
	    strlen(s + n) >= sizeof(l.prefix) || order < 12 || order > 30 ||
	    !su || !sc)
		die("bad --child-layout '%s'", s);
	l.size = size;
	l.features = feat;
	l.order = order;
	l.stripe_unit = su;
	l.stripe_count = sc;
	l.data_pool_id = dpool;
	l.data_off = doff;
	l.crypt_block = cblock;
	strcpy(l.prefix, s + n);
	a = realloc(o->layouts, (size_t)(o->nlayouts + 1) * sizeof(*a));
	if (!a)
		die("out of memory");
	a[o->nlayouts++] = l;
	o->layouts = a;
}

enum {
	O_RW = 256, O_RWMIX, O_BS, O_IODEPTH, O_NUMJOBS, O_RUNTIME, O_SIZE,
	O_POOL, O_IMAGE, O_CONF, O_ID, O_BACKENDS, O_BLOCKS, O_OUTFMT, O_PLOT,
	O_JEMALLOC, O_LITELIB, O_LIBRBDLIB, O_MCLIB, O_WARMUP, O_MODE, O_QUIET,
	O_ORDER, O_SET, O_PREFILL, O_SPREAD, O_HANDLES, O_TIMEOUT, O_SEED,
	O_LUKS,
	O_HELP, O_VERSION,
	O_CHILD, O_CHILD_INFO, O_CHILD_FD, O_CHILD_LIB, O_CHILD_LAYOUT
};

static const struct option longopts[] = {
	{ "rw", required_argument, NULL, O_RW },
	{ "readwrite", required_argument, NULL, O_RW },
	{ "rwmixread", required_argument, NULL, O_RWMIX },
	{ "bs", required_argument, NULL, O_BS },
	{ "blocksize", required_argument, NULL, O_BS },
	{ "iodepth", required_argument, NULL, O_IODEPTH },
	{ "numjobs", required_argument, NULL, O_NUMJOBS },
	{ "runtime", required_argument, NULL, O_RUNTIME },
	{ "size", required_argument, NULL, O_SIZE },
	{ "pool", required_argument, NULL, O_POOL },
	{ "image", required_argument, NULL, O_IMAGE },
	{ "rbdname", required_argument, NULL, O_IMAGE },
	{ "conf", required_argument, NULL, O_CONF },
	{ "id", required_argument, NULL, O_ID },
	{ "clientname", required_argument, NULL, O_ID },
	{ "backends", required_argument, NULL, O_BACKENDS },
	{ "blocks", required_argument, NULL, O_BLOCKS },
	{ "output-format", required_argument, NULL, O_OUTFMT },
	{ "plot", required_argument, NULL, O_PLOT },
	{ "jemalloc", optional_argument, NULL, O_JEMALLOC },
	{ "lite-lib", required_argument, NULL, O_LITELIB },
	{ "librbd-lib", required_argument, NULL, O_LIBRBDLIB },
	{ "malloccount-lib", required_argument, NULL, O_MCLIB },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "ramp_time", required_argument, NULL, O_WARMUP },
	{ "mode", required_argument, NULL, O_MODE },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "order", required_argument, NULL, O_ORDER },
	{ "set", required_argument, NULL, O_SET },
	{ "luks", required_argument, NULL, O_LUKS },
	{ "prefill", no_argument, NULL, O_PREFILL },
	{ "spread", required_argument, NULL, O_SPREAD },
	{ "handles", required_argument, NULL, O_HANDLES },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "seed", required_argument, NULL, O_SEED },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, O_VERSION },
	/* internal: the parent's interface to its children */
	{ "child", required_argument, NULL, O_CHILD },
	{ "child-info", no_argument, NULL, O_CHILD_INFO },
	{ "child-fd", required_argument, NULL, O_CHILD_FD },
	{ "child-lib", required_argument, NULL, O_CHILD_LIB },
	{ "child-layout", required_argument, NULL, O_CHILD_LAYOUT },
	{ NULL, 0, NULL, 0 }
};

/* The help text keeps its lines whole, wider than the code around it, so
 * that every option's description can be found with grep. */
static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --image=NAME[,NAME...] [options]\n"
"\n"
"Runs one fio-like job on several backends, interleaved in blocks, each block\n"
"in a fresh process, and reports IOPS, MB/s, latency p50/p99/p99.9, client CPU\n"
"per I/O (all threads), context switches and allocator calls per I/O.\n"
"\n"
"Job:\n"
"  --rw=MODE            read, write, randread (default), randwrite, randrw, rw\n"
"  --rwmixread=PCT      read percentage for randrw/rw (default 50)\n"
"  --bs=SIZE            block size, e.g. 4k, 64K, 1M (default 4k)\n"
"  --iodepth=N          I/Os in flight per job (default 32)\n"
"  --numjobs=N          job threads per process, one image handle each (default 1)\n"
"  --runtime=SECS       measured seconds per block (default 10); 0: size-based\n"
"  --size=SIZE          region of each image to use (default: whole image); with\n"
"                       --runtime=0 also the amount each job transfers\n"
"  --warmup=SECS        unmeasured warm-up per block (default 1)\n"
"  --pool=POOL          pool of the images (default rbd)\n"
"  --image=NAME         image(s), repeatable or comma-separated; jobs are spread\n"
"                       round-robin across them (see --spread)\n"
"  --spread=jobs|ios    jobs: job i uses image i mod N (default); ios: every job\n"
"                       opens every image and spreads its I/Os over all of them\n"
"  --handles=job|shared job: every job opens its own image handles (default);\n"
"                       shared: one handle per image for all jobs, so several\n"
"                       threads submit to one image (needs --mode=handoff or\n"
"                       callback)\n"
"  --conf=FILE          ceph.conf (default: $CEPH_CONF, then Ceph's search path)\n"
"  --id=NAME            client id, without \"client.\" (default admin)\n"
"  --set=KEY=VALUE      set a Ceph option in every backend (repeatable),\n"
"                       e.g. --set=rbd_cache=false\n"
"  --mode=MODE          poll (eventfd + rbd_poll_io_events, default), poll-nocb\n"
"                       (the same without a completion callback), callback\n"
"                       (resubmit from the completion callback), handoff (the\n"
"                       callback hands the completion back to the job thread\n"
"                       through a lock-free list + eventfd; the job thread\n"
"                       resubmits)\n"
"  --prefill            write the region of every image once before measuring\n"
"  --luks=luks1|luks2:PASSPHRASE\n"
"                       load the images' LUKS encryption after each open\n"
"                       (rbd_encryption_load); the rados backend encrypts\n"
"                       and decrypts AES-256-XTS blocks itself, past the\n"
"                       header, under a key of its own (its data is noise)\n"
"  --seed=N             offset generator seed (default 1)\n"
"\n"
"Run:\n"
"  --backends=LIST      lite,librbd,rados (default all three)\n"
"  --blocks=N           blocks (repetitions) per backend (default 3)\n"
"  --order=cyclic|abba  block order: A B C A B C (default) or A B C C B A\n"
"  --jemalloc[=both]    preload jemalloc into the children; 'both' runs every\n"
"                       backend with glibc malloc and with jemalloc\n"
"  --lite-lib=PATH      librbdlite to load (default: $RBDLITE_LIB, the build\n"
"                       tree, then the installed library)\n"
"  --librbd-lib=PATH    librbd to load (default librbd.so.1)\n"
"  --malloccount-lib=PATH  allocator-call counter to preload (default:\n"
"                       $RBDLITE_MALLOCCOUNT_LIB, the build tree, then the\n"
"                       installed one)\n"
"  --timeout=SECS       kill a block that takes longer (default runtime+warmup+120)\n"
"\n"
"Output:\n"
"  --output-format=normal|json\n"
"  --plot=FILE.svg      bar charts of CPU per I/O and latency percentiles\n"
"  --quiet              no progress line\n"
"  --help, --version\n");
}

static void opts_defaults(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rw = RW_RANDREAD;
	o->rwmixread = 50;
	o->bs = 4096;
	o->iodepth = 32;
	o->numjobs = 1;
	o->runtime = 10;
	o->pool = "rbd";
	o->blocks = 3;
	o->warmup = 1;
	o->mode = MODE_POLL;
	o->order = ORDER_CYCLIC;
	o->seed = 1;
	o->child_fd = -1;
}

/* Checks that need all options; fills in what depends on several. */
static void opts_finish(struct opts *o, int argc, char **argv)
{
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (!o->nbackends) {
		o->backends[0] = BE_LITE;
		o->backends[1] = BE_LIBRBD;
		o->backends[2] = BE_RADOS;
		o->nbackends = 3;
	}
	if (!o->nimages)
		die("--image is required (see --help)");
	if (o->nimages > MAX_IMAGES)
		die("at most %d images", MAX_IMAGES);
	if (o->runtime == 0 && !o->warmup_given)
		o->warmup = 0;
	if (o->shared_handles && o->mode != MODE_HANDOFF &&
	    o->mode != MODE_CALLBACK)
		die("--handles=shared: one image's poll queue cannot be split between "
		    "job threads; use --mode=handoff (or callback)");
}

void parse_opts(struct opts *o, int argc, char **argv)
{
	int c, i;
	uint64_t v;

	opts_defaults(o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_RW:
			i = name_index(optarg, rw_name, RW_COUNT);
			if (i < 0 && !strcmp(optarg, "readwrite"))
				i = RW_RW;
			if (i < 0)
				die("--rw: unknown mode '%s'", optarg);
			o->rw = (enum rw)i;
			break;
		case O_RWMIX:
			if (parse_int(optarg, 0, 100, &o->rwmixread))
				die("--rwmixread: expected 0..100");
			break;
		case O_BS:
			if (parse_size(optarg, &o->bs) || !o->bs ||
			    o->bs > (1ull << 30))
				die("--bs: bad size '%s'", optarg);
			break;
		case O_IODEPTH:
			if (parse_int(optarg, 1, MAX_DEPTH, &o->iodepth))
				die("--iodepth: expected 1..%d", MAX_DEPTH);
			break;
		case O_NUMJOBS:
			if (parse_int(optarg, 1, MAX_JOBS, &o->numjobs))
				die("--numjobs: expected 1..%d", MAX_JOBS);
			break;
		case O_RUNTIME:
			if (parse_seconds(optarg, &o->runtime))
				die("--runtime: bad duration '%s'", optarg);
			break;
		case O_SIZE:
			if (parse_size(optarg, &o->size))
				die("--size: bad size '%s'", optarg);
			break;
		case O_POOL:
			o->pool = optarg;
			break;
		case O_IMAGE:
			add_list(&o->images, &o->nimages, optarg);
			break;
		case O_CONF:
			o->conf = optarg;
			break;
		case O_ID:
			o->id = optarg;
			if (!strncmp(o->id, "client.", 7))
				o->id += 7;
			break;
		case O_BACKENDS:
			parse_backends(o, optarg);
			break;
		case O_BLOCKS:
			if (parse_int(optarg, 1, 10000, &o->blocks))
				die("--blocks: expected 1..10000");
			break;
		case O_OUTFMT:
			o->json = name_index(optarg, outfmt_name,
					     NAMES(outfmt_name));
			if (o->json < 0)
				die("--output-format: expected normal or json");
			break;
		case O_PLOT:
			o->plot = optarg;
			break;
		case O_JEMALLOC:
			if (!optarg || !strcmp(optarg, "yes") ||
			    !strcmp(optarg, "only"))
				o->jemalloc = 1;
			else if (!strcmp(optarg, "both"))
				o->jemalloc = 2;
			else if (!strcmp(optarg, "no"))
				o->jemalloc = 0;
			else
				die("--jemalloc: expected no argument, 'both' or 'no'");
			break;
		case O_LITELIB:
			o->lite_lib = optarg;
			break;
		case O_LIBRBDLIB:
			o->librbd_lib = optarg;
			break;
		case O_MCLIB:
			o->malloccount_lib = optarg;
			break;
		case O_WARMUP:
			if (parse_seconds(optarg, &o->warmup))
				die("--warmup: bad duration '%s'", optarg);
			o->warmup_given = 1;
			break;
		case O_MODE:
			i = name_index(optarg, mode_name, MODE_COUNT);
			if (i < 0)
				die("--mode: expected poll, poll-nocb, callback or handoff");
			o->mode = (enum mode)i;
			break;
		case O_SPREAD:
			o->spread = name_index(optarg, spread_name,
					       NAMES(spread_name));
			if (o->spread < 0)
				die("--spread: expected jobs or ios");
			break;
		case O_HANDLES:
			o->shared_handles = name_index(optarg, handles_name,
						       NAMES(handles_name));
			if (o->shared_handles < 0)
				die("--handles: expected job or shared");
			break;
		case O_QUIET:
			o->quiet = 1;
			break;
		case O_ORDER:
			o->order = name_index(optarg, order_name,
					      NAMES(order_name));
			if (o->order < 0)
				die("--order: expected cyclic or abba");
			break;
		case O_LUKS:
			if (!strncmp(optarg, "luks1:", 6))
				o->luks_format = 1 + RBD_ENCRYPTION_FORMAT_LUKS1;
			else if (!strncmp(optarg, "luks2:", 6))
				o->luks_format = 1 + RBD_ENCRYPTION_FORMAT_LUKS2;
			else
				die("--luks: expected luks1:PASSPHRASE or "
				    "luks2:PASSPHRASE");
			o->luks_pass = optarg + 6;
			break;
		case O_SET:
			if (!strchr(optarg, '=') || optarg[0] == '=')
				die("--set: expected KEY=VALUE");
			add_str(&o->sets, &o->nsets, optarg);
			break;
		case O_PREFILL:
			o->prefill = 1;
			break;
		case O_TIMEOUT:
			if (parse_seconds(optarg, &o->timeout))
				die("--timeout: bad duration '%s'", optarg);
			break;
		case O_SEED:
			if (parse_size(optarg, &v))
				die("--seed: expected a number");
			o->seed = v;
			break;
		case 'h':
		case O_HELP:
			usage(stdout);
			exit(0);
		case O_VERSION:
			printf(PROG " (librbdlite) %s\n", PACKAGE_VERSION);
			exit(0);
		case O_CHILD:
			if (o->child != 2)
				o->child = 1;
			o->child_backend = name_index(optarg, be_name,
						      BE_COUNT);
			if (o->child_backend < 0)
				die("--child: unknown backend");
			break;
		case O_CHILD_INFO:
			o->child = 2;
			break;
		case O_CHILD_FD:
			if (parse_int(optarg, 0, INT_MAX, &o->child_fd))
				die("--child-fd: bad descriptor");
			break;
		case O_CHILD_LIB:
			o->child_lib = optarg;
			break;
		case O_CHILD_LAYOUT:
			parse_layout(o, optarg);
			break;
		default:
			usage(stderr);
			exit(2);
		}
	}
	opts_finish(o, argc, argv);
}

void free_opts(struct opts *o)
{
	free_strs(o->images, o->nimages);
	free_strs(o->sets, o->nsets);
	free(o->layouts);
}

int opts_has_backend(const struct opts *o, int be)
{
	for (int i = 0; i < o->nbackends; i++)
		if (o->backends[i] == be)
			return 1;
	return 0;
}

/* The part of an image the job uses: --size, at most the whole image. */
uint64_t opts_region(const struct opts *o, const struct layout *l)
{
	return o->size && o->size < l->size ? o->size : l->size;
}
