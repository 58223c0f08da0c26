/*
 * cloneapi.c - drive the layering calls (rbd_clone, rbd_clone2,
 * rbd_clone3, rbd_flatten, rbd_flatten_with_progress, rbd_list_children,
 * rbd_list_children2, rbd_list_children3, rbd_list_descendants) from a
 * command script, built twice from this one source: against librbdlite
 * (cloneapi-lite) and against the real librbd (cloneapi-librbd).
 * tests/cluster/test-cloneapi.sh runs the same script through both, on
 * twin parents, and compares the output line for line.
 *
 *   cloneapi < SCRIPT
 *
 * One command per line (blank lines and lines starting with '#' are
 * skipped); every command prints "LINE = RET" and sometimes more lines
 * indented under it.  SPEC is POOL or POOL/NAMESPACE; "-" stands for a
 * NULL string, "''" for the empty string.
 *   clone PSPEC PNAME PSNAP CSPEC CNAME FEATURES ORDER
 *                       rbd_clone; prints the order stored back
 *   clone2 PSPEC PNAME PSNAP CSPEC CNAME FEATURES ORDER SU SC
 *   clone3 PSPEC PNAME PSNAP CSPEC CNAME [KEY=VALUE...]
 *                       rbd_clone3 with an option set: format, features,
 *                       order, su, sc, features_set, features_clear,
 *                       data_pool, flatten, clone_format; prints the
 *                       option set's order afterwards (unchanged?)
 *   children SPEC IMAGE SNAP|-
 *                       the image opened (at SNAP) read-only: every
 *                       listing, with -ERANGE probes; ids are printed as
 *                       "id" (present) so twins compare equal
 *   flatten SPEC IMAGE STOP_AT ERR [ro|snap=NAME|write=OFF]
 *                       rbd_flatten_with_progress; the callback returns
 *                       ERR when its offset is STOP_AT (-1: never);
 *                       prints the number of calls and the last one;
 *                       write=OFF: a 4 KiB write on the same handle first
 *   flatten0 SPEC IMAGE rbd_flatten
 *   parent SPEC IMAGE   rbd_get_parent_info2 and rbd_get_overlap
 *   write SPEC IMAGE OFF LEN SEED
 *                       rbd_write of a deterministic pattern
 *   copy SPEC IMAGE SNAP|- ro|rw DSPEC DNAME VARIANT [KEY=VALUE...]
 *                       rbd_copy (copy), rbd_copy3 (copy3), rbd_copy4
 *                       (copy4:SPARSE), with progress (copyp, copyp3,
 *                       copyp4:SPARSE; cbret=N: the callback's return);
 *                       options order, features, su, sc, flatten,
 *                       clone_format, data_pool; prints the progress
 *                       calls and the option set afterwards
 *                       VARIANT deep / deepp: rbd_deep_copy /
 *                       rbd_deep_copy_with_progress (option format too)
 *   copy2 SPEC IMAGE SNAP|- DSPEC DNAME [p [CBRET]]
 *                       rbd_copy2 (with p: rbd_copy_with_progress2)
 *                       into an existing image
 *   kids SPEC IMAGE     rbd_list_children3 and rbd_list_descendants of
 *                       the image at HEAD: the count, then "pool/image
 *                       trash" per entry (no ids: pools may differ)
 *   snap SPEC IMAGE NAME, snaprm SPEC IMAGE NAME
 *                       rbd_snap_create, rbd_snap_remove
 *   snaps SPEC IMAGE    rbd_snap_list: "namespace name" per snapshot (the
 *                       name of a non-user one printed as "-")
 *   create SPEC IMAGE SIZE FEATURES
 *                       rbd_create2 (default order)
 *   remove SPEC IMAGE   rbd_remove
 *   mkpool NAME, rmpool NAME
 *                       create (and rbd_pool_init) or delete a pool
 *   nulls SPEC          NULL-argument calls librbd survives
 *   litenulls SPEC IMAGE  NULL arguments librbd would crash on (for
 *                       cloneapi-lite only): each must give -EINVAL;
 *                       RET -1000 - the number that did not
 * Exit status: 0 if every line ran (return values are compared, not
 * judged, except "nulls"), 2 when the cluster cannot be reached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

static rados_t cluster;

#define MAXTOK 32

/* An ioctx for POOL[/NAMESPACE]; NULL on failure. */
static rados_ioctx_t ioctx_for(const char *spec)
{
	char pool[256], *slash;
	rados_ioctx_t io;

	snprintf(pool, sizeof(pool), "%s", spec);
	slash = strchr(pool, '/');
	if (slash)
		*slash++ = '\0';
	if (rados_ioctx_create(cluster, pool, &io) < 0)
		return NULL;
	rados_ioctx_set_namespace(io, slash ? slash : "");
	return io;
}

/* "-" is NULL, "''" the empty string. */
static const char *nul(const char *s)
{
	if (!strcmp(s, "''"))
		return "";
	return strcmp(s, "-") ? s : NULL;
}

static const char *str(const char *s)
{
	return s ? s : "(null)";
}

static int do_clone(char **t, int n, int variant)
{
	rados_ioctx_t pio, cio;
	int r, order;

	if (n < (variant == 1 ? 8 : 10))
		return -999;
	pio = ioctx_for(t[1]);
	cio = ioctx_for(t[4]);
	if (!pio || !cio)
		return -998;
	order = atoi(t[7]);
	if (variant == 1)
		r = rbd_clone(pio, nul(t[2]), nul(t[3]), cio, nul(t[5]),
			      strtoull(t[6], NULL, 0), &order);
	else
		r = rbd_clone2(pio, nul(t[2]), nul(t[3]), cio, nul(t[5]),
			       strtoull(t[6], NULL, 0), &order,
			       strtoull(t[8], NULL, 0), atoi(t[9]));
	printf("  order=%d\n", order);
	rados_ioctx_destroy(pio);
	rados_ioctx_destroy(cio);
	return r;
}

static int do_clone3(char **t, int n)
{
	static const struct {
		const char *key;
		int opt;
		bool is_str;
	} keys[] = {
		{ "format", RBD_IMAGE_OPTION_FORMAT, false },
		{ "features", RBD_IMAGE_OPTION_FEATURES, false },
		{ "order", RBD_IMAGE_OPTION_ORDER, false },
		{ "su", RBD_IMAGE_OPTION_STRIPE_UNIT, false },
		{ "sc", RBD_IMAGE_OPTION_STRIPE_COUNT, false },
		{ "features_set", RBD_IMAGE_OPTION_FEATURES_SET, false },
		{ "features_clear", RBD_IMAGE_OPTION_FEATURES_CLEAR, false },
		{ "data_pool", RBD_IMAGE_OPTION_DATA_POOL, true },
		{ "flatten", RBD_IMAGE_OPTION_FLATTEN, false },
		{ "clone_format", RBD_IMAGE_OPTION_CLONE_FORMAT, false },
	};
	rbd_image_options_t o;
	rados_ioctx_t pio, cio;
	uint64_t v;
	int r;

	if (n < 6)
		return -999;
	pio = ioctx_for(t[1]);
	cio = ioctx_for(t[4]);
	if (!pio || !cio)
		return -998;
	rbd_image_options_create(&o);
	for (int i = 6; i < n; i++) {
		char *eq = strchr(t[i], '=');
		size_t k;

		if (!eq)
			return -997;
		*eq = '\0';
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!strcmp(keys[k].key, t[i]))
				break;
		if (k == sizeof(keys) / sizeof(keys[0]))
			return -996;
		if (keys[k].is_str)
			rbd_image_options_set_string(o, keys[k].opt, eq + 1);
		else
			rbd_image_options_set_uint64(o, keys[k].opt,
						     strtoull(eq + 1, NULL, 0));
	}
	r = rbd_clone3(pio, nul(t[2]), nul(t[3]), cio, nul(t[5]), o);
	if (rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_ORDER, &v) == 0)
		printf("  opts order=%" PRIu64 "\n", v);
	else
		printf("  opts order unset\n");
	if (rbd_image_options_get_uint64(o, RBD_IMAGE_OPTION_FEATURES, &v) ==
	    0)
		printf("  opts features=%" PRIu64 "\n", v);
	else
		printf("  opts features unset\n");
	rbd_image_options_destroy(o);
	rados_ioctx_destroy(pio);
	rados_ioctx_destroy(cio);
	return r;
}

static int open_image(const char *spec, const char *name, const char *snap,
		      bool ro, rados_ioctx_t *io, rbd_image_t *img)
{
	int r;

	*io = ioctx_for(spec);
	if (!*io)
		return -998;
	r = ro ? rbd_open_read_only(*io, name, img, snap)
	       : rbd_open(*io, name, img, snap);
	if (r < 0) {
		printf("  open = %d\n", r);
		rados_ioctx_destroy(*io);
	}
	return r;
}

static void print_specs(const char *what, int r, rbd_linked_image_spec_t *v,
			size_t n)
{
	printf("  %s = %d n=%zu\n", what, r, n);
	if (r < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		printf("    pool_id=%" PRId64 " pool=%s ns=%s image=%s id=%s "
		       "trash=%d\n",
		       v[i].pool_id, str(v[i].pool_name),
		       str(v[i].pool_namespace), str(v[i].image_name),
		       v[i].image_id && v[i].image_id[0] ? "id" : "none",
		       v[i].trash);
		rbd_linked_image_spec_cleanup(&v[i]);
	}
}

static int do_children(char **t, int n)
{
	rados_ioctx_t io;
	rbd_image_t img;
	int r;

	if (n < 4)
		return -999;
	r = open_image(t[1], t[2], nul(t[3]), true, &io, &img);
	if (r < 0)
		return r;

	/* rbd_list_children: probe with empty buffers, then exact */
	{
		size_t pl = 0, il = 0;
		ssize_t s = rbd_list_children(img, NULL, &pl, NULL, &il);

		printf("  list_children(0,0) = %zd pools_len=%zu images_len=%zu\n",
		       s, pl, il);
		if (s == -ERANGE || s >= 0) {
			char *pools = calloc(1, pl + 1), *images = calloc(1, il + 1);

			s = rbd_list_children(img, pools, &pl, images, &il);
			printf("  list_children = %zd\n", s);
			for (char *p = pools, *q = images; s > 0 && *p;
			     p += strlen(p) + 1, q += strlen(q) + 1)
				printf("    %s/%s\n", p, q);
			free(pools);
			free(images);
		}
	}
	/* rbd_list_children2 */
	{
		int max = 0;
		int s = rbd_list_children2(img, NULL, &max);

		printf("  list_children2(0) = %d max=%d\n", s, max);
		if (s == -ERANGE) {
			rbd_child_info_t *c = calloc((size_t)max, sizeof(*c));

			s = rbd_list_children2(img, c, &max);
			printf("  list_children2 = %d max=%d\n", s, max);
			for (int i = 0; i < s; i++)
				printf("    pool=%s image=%s id=%s trash=%d\n",
				       str(c[i].pool_name), str(c[i].image_name),
				       c[i].image_id && c[i].image_id[0] ? "id"
									  : "none",
				       c[i].trash);
			if (s >= 0) {
				printf("    terminator %s\n",
				       c[s].pool_name || c[s].image_name ||
						       c[s].image_id
					       ? "set"
					       : "null");
				rbd_list_children_cleanup(c, (size_t)s);
			}
			free(c);
		}
	}
	/* rbd_list_children3 and rbd_list_descendants */
	for (int d = 0; d < 2; d++) {
		const char *what = d ? "list_descendants" : "list_children3";
		size_t max = 0;
		int s = d ? rbd_list_descendants(img, NULL, &max)
			  : rbd_list_children3(img, NULL, &max);

		printf("  %s(0) = %d max=%zu\n", what, s, max);
		if (s == -ERANGE || s == 0) {
			size_t cap = max + 2;
			rbd_linked_image_spec_t *v = calloc(cap, sizeof(*v));

			max = cap;
			s = d ? rbd_list_descendants(img, v, &max)
			      : rbd_list_children3(img, v, &max);
			print_specs(what, s, v, s < 0 ? 0 : max);
			free(v);
		}
	}
	rbd_close(img);
	rados_ioctx_destroy(io);
	return 0;
}

struct prog {
	long calls;
	uint64_t last_off, last_total;
	long stop_at;
	int err;
};

static int progress_cb(uint64_t off, uint64_t total, void *arg)
{
	struct prog *p = arg;

	p->calls++;
	p->last_off = off;
	p->last_total = total;
	if (p->stop_at >= 0 && (long)off == p->stop_at)
		return p->err;
	return 0;
}

static int do_flatten(char **t, int n, bool with_progress)
{
	struct prog p = { 0, 0, 0, -1, 0 };
	const char *snap = NULL;
	uint64_t wr_off = UINT64_MAX;
	bool ro = false;
	rados_ioctx_t io;
	rbd_image_t img;
	int r;

	if (n < (with_progress ? 5 : 3))
		return -999;
	for (int i = with_progress ? 5 : 3; i < n; i++) {
		if (!strcmp(t[i], "ro"))
			ro = true;
		else if (!strncmp(t[i], "snap=", 5))
			snap = t[i] + 5;
		else if (!strncmp(t[i], "write=", 6))
			wr_off = strtoull(t[i] + 6, NULL, 0);
	}
	r = open_image(t[1], t[2], snap, ro, &io, &img);
	if (r < 0)
		return r;
	if (wr_off != UINT64_MAX) {
		/* a write first: this handle owns the lock when it flattens */
		char buf[4096];

		memset(buf, 0x5a, sizeof(buf));
		printf("  write = %zd\n", rbd_write(img, wr_off, sizeof(buf), buf));
	}
	if (with_progress) {
		p.stop_at = atol(t[3]);
		p.err = atoi(t[4]);
		r = rbd_flatten_with_progress(img, progress_cb, &p);
		printf("  progress calls=%ld last=%" PRIu64 "/%" PRIu64 "\n",
		       p.calls, p.last_off, p.last_total);
	} else {
		r = rbd_flatten(img);
	}
	rbd_close(img);
	rados_ioctx_destroy(io);
	return r;
}

static int do_parent(char **t, int n)
{
	char pool[128], image[128], snap[128];
	rados_ioctx_t io;
	rbd_image_t img;
	uint64_t ov = 0;
	int r;

	if (n < 3)
		return -999;
	r = open_image(t[1], t[2], NULL, true, &io, &img);
	if (r < 0)
		return r;
	r = rbd_get_parent_info(img, pool, sizeof(pool), image, sizeof(image),
				snap, sizeof(snap));
	if (r == 0)
		printf("  parent %s/%s@%s\n", pool, image, snap);
	else
		printf("  parent_info = %d\n", r);
	printf("  overlap = %d %" PRIu64 "\n", rbd_get_overlap(img, &ov), ov);
	rbd_close(img);
	rados_ioctx_destroy(io);
	return r;
}

static int do_write(char **t, int n)
{
	rados_ioctx_t io;
	rbd_image_t img;
	uint64_t off, len, seed;
	char *buf;
	int r;

	if (n < 6)
		return -999;
	r = open_image(t[1], t[2], NULL, false, &io, &img);
	if (r < 0)
		return r;
	off = strtoull(t[3], NULL, 0);
	len = strtoull(t[4], NULL, 0);
	seed = strtoull(t[5], NULL, 0);
	buf = malloc(len);
	for (uint64_t i = 0; i < len; i++)
		buf[i] = (char)(((off + i) * 2654435761u + seed) >> 7);
	r = (int)rbd_write(img, off, len, buf);
	free(buf);
	rbd_close(img);
	rados_ioctx_destroy(io);
	return r;
}

struct cprog {
	long calls;
	char offs[4096];
	int ret;
};

static int copy_cb(uint64_t off, uint64_t total, void *arg)
{
	struct cprog *p = arg;
	size_t n = strlen(p->offs);

	p->calls++;
	if (n < sizeof(p->offs) - 48)
		snprintf(p->offs + n, sizeof(p->offs) - n, "%s%" PRIu64 "/%" PRIu64,
			 n ? "," : "", off, total);
	return p->ret;
}

static void print_opts(rbd_image_options_t o)
{
	static const struct {
		const char *name;
		int opt;
	} v[] = {
		{ "format", RBD_IMAGE_OPTION_FORMAT },
		{ "features", RBD_IMAGE_OPTION_FEATURES },
		{ "order", RBD_IMAGE_OPTION_ORDER },
		{ "su", RBD_IMAGE_OPTION_STRIPE_UNIT },
		{ "sc", RBD_IMAGE_OPTION_STRIPE_COUNT },
	};

	printf("  opts");
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t x;

		if (rbd_image_options_get_uint64(o, v[i].opt, &x) == 0)
			printf(" %s=%" PRIu64, v[i].name, x);
		else
			printf(" %s=unset", v[i].name);
	}
	printf("\n");
}

/* copy SPEC IMAGE SNAP|- ro|rw DSPEC DNAME VARIANT [KEY=VALUE...]:
 * VARIANT copy, copy3, copy4:SPARSE, copyp, copyp3, copyp4:SPARSE (p:
 * with progress; a KEY "cbret" sets the callback's return value). */
static int do_copy(char **t, int n)
{
	struct cprog p = { 0, "", 0 };
	rbd_image_options_t o;
	rados_ioctx_t io, dio;
	rbd_image_t img;
	const char *var;
	size_t sparse = 0;
	bool prog;
	int r;

	if (n < 8)
		return -999;
	r = open_image(t[1], t[2], nul(t[3]), !strcmp(t[4], "ro"), &io, &img);
	if (r < 0)
		return r;
	dio = ioctx_for(t[5]);
	if (!dio)
		return -998;
	var = t[7];
	prog = !strncmp(var, "copyp", 5) || !strcmp(var, "deepp");
	if (strchr(var, ':'))
		sparse = strtoull(strchr(var, ':') + 1, NULL, 0);
	rbd_image_options_create(&o);
	for (int i = 8; i < n; i++) {
		char *eq = strchr(t[i], '=');

		if (!eq)
			return -997;
		*eq++ = '\0';
		if (!strcmp(t[i], "cbret"))
			p.ret = atoi(eq);
		else if (!strcmp(t[i], "format"))
			rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FORMAT,
						     strtoull(eq, NULL, 0));
		else if (!strcmp(t[i], "order"))
			rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_ORDER,
						     strtoull(eq, NULL, 0));
		else if (!strcmp(t[i], "features"))
			rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FEATURES,
						     strtoull(eq, NULL, 0));
		else if (!strcmp(t[i], "su"))
			rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_STRIPE_UNIT,
						     strtoull(eq, NULL, 0));
		else if (!strcmp(t[i], "sc"))
			rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_STRIPE_COUNT,
						     strtoull(eq, NULL, 0));
		else if (!strcmp(t[i], "flatten"))
			rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_FLATTEN,
						     strtoull(eq, NULL, 0));
		else if (!strcmp(t[i], "clone_format"))
			rbd_image_options_set_uint64(o, RBD_IMAGE_OPTION_CLONE_FORMAT,
						     strtoull(eq, NULL, 0));
		else if (!strcmp(t[i], "data_pool"))
			rbd_image_options_set_string(o, RBD_IMAGE_OPTION_DATA_POOL, eq);
		else
			return -996;
	}
	if (!strcmp(var, "copy"))
		r = rbd_copy(img, dio, nul(t[6]));
	else if (!strcmp(var, "copyp"))
		r = rbd_copy_with_progress(img, dio, nul(t[6]), copy_cb, &p);
	else if (!strcmp(var, "copy3"))
		r = rbd_copy3(img, dio, nul(t[6]), o);
	else if (!strcmp(var, "copyp3"))
		r = rbd_copy_with_progress3(img, dio, nul(t[6]), o, copy_cb, &p);
	else if (!strncmp(var, "copy4", 5))
		r = rbd_copy4(img, dio, nul(t[6]), o, sparse);
	else if (!strncmp(var, "copyp4", 6))
		r = rbd_copy_with_progress4(img, dio, nul(t[6]), o, copy_cb, &p,
					    sparse);
	else if (!strcmp(var, "deep"))
		r = rbd_deep_copy(img, dio, nul(t[6]), o);
	else if (!strcmp(var, "deepp"))
		r = rbd_deep_copy_with_progress(img, dio, nul(t[6]), o, copy_cb,
						&p);
	else
		r = -995;
	if (prog)
		printf("  progress calls=%ld %s\n", p.calls, p.offs);
	if (strcmp(var, "copy") && strcmp(var, "copyp"))
		print_opts(o);
	rbd_image_options_destroy(o);
	rbd_close(img);
	rados_ioctx_destroy(io);
	rados_ioctx_destroy(dio);
	return r;
}

/* copy2 SPEC IMAGE SNAP|- DSPEC DNAME [p [CBRET]]: rbd_copy2 or
 * rbd_copy_with_progress2 into an existing image opened read-write. */
static int do_copy2(char **t, int n)
{
	struct cprog p = { 0, "", 0 };
	rados_ioctx_t io, dio;
	rbd_image_t img, dimg;
	int r;

	if (n < 6)
		return -999;
	r = open_image(t[1], t[2], nul(t[3]), true, &io, &img);
	if (r < 0)
		return r;
	r = open_image(t[4], t[5], NULL, false, &dio, &dimg);
	if (r < 0) {
		rbd_close(img);
		rados_ioctx_destroy(io);
		return r;
	}
	if (n > 6) {
		if (n > 7)
			p.ret = atoi(t[7]);
		r = rbd_copy_with_progress2(img, dimg, copy_cb, &p);
		printf("  progress calls=%ld %s\n", p.calls, p.offs);
	} else {
		r = rbd_copy2(img, dimg);
	}
	rbd_close(dimg);
	rbd_close(img);
	rados_ioctx_destroy(dio);
	rados_ioctx_destroy(io);
	return r;
}

/* NULL arguments that librbd 16.2 checks (it would crash on others). */
static int do_nulls(char **t, int n)
{
	rados_ioctx_t io;
	int order = 0;

	if (n < 2)
		return -999;
	io = ioctx_for(t[1]);
	if (!io)
		return -998;
	printf("  clone NULL snap = %d\n",
	       rbd_clone(io, "x", NULL, io, "y", 1, &order));
	printf("  clone2 NULL snap = %d\n",
	       rbd_clone2(io, "x", NULL, io, "y", 1, &order, 0, 0));
	{
		rbd_image_options_t o;

		rbd_image_options_create(&o);
		printf("  clone3 NULL snap = %d\n",
		       rbd_clone3(io, "x", NULL, io, "y", o));
		rbd_image_options_destroy(o);
	}
	rados_ioctx_destroy(io);
	return 0;
}

/* litenulls SPEC IMAGE: NULL arguments librbd would dereference (run
 * through cloneapi-lite only): every call must return -EINVAL. */
static int do_litenulls(char **t, int n)
{
	rados_ioctx_t io;
	rbd_image_t img;
	int bad = 0, r;

	if (n < 3)
		return -999;
	r = open_image(t[1], t[2], NULL, true, &io, &img);
	if (r < 0)
		return r;
#define CHECK(call)                                                       \
	do {                                                              \
		int r_ = (int)(call);                                     \
		printf("  %s = %d\n", #call, r_);                        \
		if (r_ != -EINVAL)                                        \
			bad++;                                            \
	} while (0)
	{
		size_t mx = 1, pl = 0;
		int imx = 1;
		rbd_image_options_t o;

		rbd_image_options_create(&o);
		CHECK(rbd_clone(io, t[2], "s1", io, "never", 1, NULL));
		CHECK(rbd_clone2(io, t[2], "s1", io, "never", 1, NULL, 0, 0));
		CHECK(rbd_clone3(io, t[2], "s1", io, "never", NULL));
		/* librbd 16.2 asserts on an empty snapshot name */
		CHECK(rbd_clone3(io, t[2], "", io, "never", o));
		CHECK(rbd_clone(io, t[2], "", io, "never", 1, &imx));
		CHECK(rbd_clone3(io, NULL, "s1", io, "never", o));
		CHECK(rbd_clone3(io, t[2], "s1", io, NULL, o));
		CHECK(rbd_clone3(NULL, t[2], "s1", io, "never", o));
		CHECK(rbd_clone3(io, t[2], "s1", NULL, "never", o));
		CHECK(rbd_flatten(NULL));
		CHECK(rbd_flatten_with_progress(NULL, NULL, NULL));
		CHECK(rbd_list_children(NULL, NULL, &pl, NULL, &pl));
		CHECK(rbd_list_children(img, NULL, NULL, NULL, &pl));
		CHECK(rbd_list_children2(img, NULL, NULL));
		CHECK(rbd_list_children2(img, NULL, &imx));
		CHECK(rbd_list_children3(img, NULL, NULL));
		CHECK(rbd_list_children3(img, NULL, &mx));
		CHECK(rbd_list_descendants(NULL, NULL, &mx));
		CHECK(rbd_list_descendants(img, NULL, &mx));
		CHECK(rbd_copy(NULL, io, "never"));
		CHECK(rbd_copy(img, NULL, "never"));
		CHECK(rbd_copy(img, io, NULL));
		CHECK(rbd_copy2(img, NULL));
		CHECK(rbd_copy2(NULL, img));
		CHECK(rbd_copy3(img, io, "never", NULL));
		CHECK(rbd_copy4(img, io, "never", NULL, 0));
		CHECK(rbd_copy_with_progress3(img, io, "never", NULL, NULL, NULL));
		CHECK(rbd_copy_with_progress4(img, io, "never", NULL, NULL, NULL, 0));
		CHECK(rbd_deep_copy(NULL, io, "never", NULL));
		CHECK(rbd_deep_copy(img, io, "never", NULL));
		CHECK(rbd_deep_copy(img, NULL, "never", NULL));
		CHECK(rbd_deep_copy_with_progress(img, io, NULL, NULL, NULL, NULL));
		rbd_list_child_cleanup(NULL);
		rbd_list_children_cleanup(NULL, 3);
		rbd_image_options_destroy(o);
	}
#undef CHECK
	rbd_close(img);
	rados_ioctx_destroy(io);
	return bad ? -1000 - bad : 0;
}

static int do_kids(char **t, int n)
{
	rados_ioctx_t io;
	rbd_image_t img;
	int r;

	if (n < 3)
		return -999;
	r = open_image(t[1], t[2], NULL, false, &io, &img);
	if (r < 0)
		return r;
	for (int d = 0; d < 2; d++) {
		rbd_linked_image_spec_t v[16];
		size_t max = 16;
		int s = d ? rbd_list_descendants(img, v, &max)
			  : rbd_list_children3(img, v, &max);

		printf("  %s = %d n=%zu\n",
		       d ? "list_descendants" : "list_children3", s,
		       s < 0 ? 0 : max);
		for (size_t i = 0; s >= 0 && i < max; i++) {
			printf("    %s/%s trash=%d\n", str(v[i].pool_name),
			       str(v[i].image_name), v[i].trash);
			rbd_linked_image_spec_cleanup(&v[i]);
		}
	}
	rbd_close(img);
	rados_ioctx_destroy(io);
	return 0;
}

static int do_snapcmd(char **t, int n)
{
	rados_ioctx_t io;
	rbd_image_t img;
	int r;

	if (n < (strcmp(t[0], "snaps") ? 4 : 3))
		return -999;
	r = open_image(t[1], t[2], NULL, false, &io, &img);
	if (r < 0)
		return r;
	if (!strcmp(t[0], "snap")) {
		r = rbd_snap_create(img, t[3]);
	} else if (!strcmp(t[0], "snaprm")) {
		r = rbd_snap_remove(img, t[3]);
	} else {
		rbd_snap_info_t v[16];
		int max = 16;

		r = rbd_snap_list(img, v, &max);
		for (int i = 0; i < r; i++) {
			rbd_snap_namespace_type_t ns = -1;

			rbd_snap_get_namespace_type(img, v[i].id, &ns);
			printf("    %d %s\n", (int)ns, ns ? "-" : v[i].name);
		}
		if (r >= 0)
			rbd_snap_list_end(v);
	}
	rbd_close(img);
	rados_ioctx_destroy(io);
	return r;
}

static int do_remove(char **t, int n)
{
	rados_ioctx_t io;
	int order = 0, r;

	if (n < (strcmp(t[0], "create") ? 3 : 5))
		return -999;
	io = ioctx_for(t[1]);
	if (!io)
		return -998;
	if (!strcmp(t[0], "create"))
		r = rbd_create2(io, t[2], strtoull(t[3], NULL, 0),
				strtoull(t[4], NULL, 0), &order);
	else
		r = rbd_remove(io, t[2]);
	rados_ioctx_destroy(io);
	return r;
}

static int do_pool(char **t, int n)
{
	rados_ioctx_t io;
	int r;

	if (n < 2)
		return -999;
	if (!strcmp(t[0], "rmpool")) {
		r = rados_pool_delete(cluster, t[1]);
		if (r == 0)
			r = rados_wait_for_latest_osdmap(cluster);
		return r;
	}
	r = rados_pool_create(cluster, t[1]);
	if (r < 0)
		return r;
	io = ioctx_for(t[1]);
	if (!io)
		return -998;
	r = rbd_pool_init(io, true);
	rados_ioctx_destroy(io);
	return r;
}

int main(void)
{
	char line[4096];
	int rc = 0;

	if (rados_create(&cluster, NULL) < 0 ||
	    rados_conf_read_file(cluster, NULL) < 0 ||
	    rados_conf_parse_env(cluster, NULL) < 0 ||
	    rados_connect(cluster) < 0) {
		fprintf(stderr, "cloneapi: cannot connect to the cluster\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char copy[4096], *t[MAXTOK], *save = NULL;
		int n = 0, r;

		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		snprintf(copy, sizeof(copy), "%s", line);
		for (char *tok = strtok_r(copy, " \t", &save);
		     tok && n < MAXTOK; tok = strtok_r(NULL, " \t", &save))
			t[n++] = tok;
		if (!n)
			continue;
		printf("%s\n", line);
		fflush(stdout);
		if (!strcmp(t[0], "clone"))
			r = do_clone(t, n, 1);
		else if (!strcmp(t[0], "clone2"))
			r = do_clone(t, n, 2);
		else if (!strcmp(t[0], "clone3"))
			r = do_clone3(t, n);
		else if (!strcmp(t[0], "children"))
			r = do_children(t, n);
		else if (!strcmp(t[0], "flatten"))
			r = do_flatten(t, n, true);
		else if (!strcmp(t[0], "flatten0"))
			r = do_flatten(t, n, false);
		else if (!strcmp(t[0], "parent"))
			r = do_parent(t, n);
		else if (!strcmp(t[0], "write"))
			r = do_write(t, n);
		else if (!strcmp(t[0], "copy"))
			r = do_copy(t, n);
		else if (!strcmp(t[0], "copy2"))
			r = do_copy2(t, n);
		else if (!strcmp(t[0], "kids"))
			r = do_kids(t, n);
		else if (!strcmp(t[0], "snap") || !strcmp(t[0], "snaprm") ||
			 !strcmp(t[0], "snaps"))
			r = do_snapcmd(t, n);
		else if (!strcmp(t[0], "remove") || !strcmp(t[0], "create"))
			r = do_remove(t, n);
		else if (!strcmp(t[0], "mkpool") || !strcmp(t[0], "rmpool"))
			r = do_pool(t, n);
		else if (!strcmp(t[0], "litenulls"))
			r = do_litenulls(t, n);
		else if (!strcmp(t[0], "nulls"))
			r = do_nulls(t, n);
		else
			r = -999;
		if (r <= -996)
			rc = 1;	/* a script error, not a result */
		printf("  = %d\n", r);
		fflush(stdout);
	}
	rados_shutdown(cluster);
	return rc;
}
