/*
 * cloneop.c - drive I/O, snapshot, resize, parent and diff calls on one
 * open image from the command line, built twice from this one source:
 * against librbdlite (cloneop-lite) and against the real librbd
 * (cloneop-librbd).  tests/cluster/test-clone.sh runs the same command
 * script on twin clones, one through each build, and compares the output
 * line for line (and then the images themselves, with the rbd CLI).
 *
 *   cloneop [-r] [-s SNAP] [-n NAMESPACE] POOL IMAGE CMD...
 *
 * -r opens read-only, -s SNAP at a snapshot, -n in a RADOS namespace.
 * Every command prints one line "CMD ARGS = RET" (RET: the call's return
 * value), some with more after it or on the lines before it.  A command
 * fails if it returns a negative value that was not expected.  Data is a
 * deterministic pattern of (SEED, absolute image offset), so the same
 * command writes the same bytes on any image, whatever the alignment.
 *   write OFF LEN SEED        rbd_write of the pattern
 *   aiowrite OFF LEN SEED     rbd_aio_write, not waited for
 *   aiowritex OFF LEN SEED    the same, its buffer overwritten as soon as
 *                             the call returned (librbd copies the data)
 *   wait                      wait for every aiowrite; RET: the first error
 *   read OFF LEN              rbd_read; prints "fnv=<FNV-1a 64> zeros=<n>"
 *   readall STEP              reads the whole image in STEP pieces, one
 *                             "OFF LEN RET fnv zeros" line each
 *   discard OFF LEN           rbd_discard
 *   zero OFF LEN              rbd_write_zeroes (flags 0)
 *   writesame OFF LEN DLEN SEED  rbd_writesame of the DLEN-byte pattern
 *                             (SEED at offset 0)
 *   zerosame OFF LEN DLEN     rbd_writesame of DLEN zero bytes
 *   aiozerosame OFF LEN DLEN  rbd_aio_writesame of DLEN zero bytes, waited
 *                             for; RET: its return value
 *   cmpwrite OFF LEN CSEED WSEED  rbd_compare_and_write: compare with the
 *                             pattern of CSEED, write that of WSEED; prints
 *                             the mismatch offset
 *   snapc NAME | snaprm NAME | snapset NAME|- | rollback NAME | resize N
 *   size
 *   parent                    rbd_get_parent, rbd_get_parent_info(2),
 *                             rbd_get_overlap, size, features and flags
 *   diff FROM|- OFF LEN|size INCLUDE_PARENT WHOLE
 *                             rbd_diff_iterate2: "off len exists" lines
 *   meta KEY VALUE            rbd_metadata_set
 *   luksformat luks1|luks2 aes128|aes256 PASS  rbd_encryption_format
 *   luksload luks1|luks2 PASS rbd_encryption_load
 *   luksbad format|load HOW   rbd_encryption_format or _load (LUKS2,
 *                             AES-256, passphrase "cpass") called wrongly,
 *                             HOW: short (options size one byte short),
 *                             long (one byte more), null (NULL options),
 *                             fmt (unknown format), alg (unknown
 *                             algorithm, format only), nopass (empty
 *                             passphrase), nullpass (NULL passphrase with
 *                             size 0)
 *   snaps                     rbd_snap_list and rbd_snap_exists
 *   waitfile PATH SECONDS     print "  waiting PATH" and wait until PATH
 *                             exists (RET -ETIMEDOUT after SECONDS)
 *   expect E                  the next command must return E (a negative
 *                             errno); the line is printed anyway
 * Sizes accept a K or M suffix, and offsets the form end-N: the image's
 * size (read before the command) minus N.  CEPH_ARGS is applied to the client
 * configuration.  Exit status: 0 if no command failed, 1
 * otherwise, 2 on set-up errors (no connection, open failed: "open = RET"
 * is printed first).
 *
 * rbd_get_parent and rbd_get_parent_info2 (and the spec cleanups) are
 * looked up at run time, with local copies of their Pacific structures, so
 * the tool builds with a library or header that lacks them; a missing one
 * prints "missing".
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

/* Layouts of rbd_linked_image_spec_t and rbd_snap_spec_t (Pacific). */
struct lspec {
	int64_t pool_id;
	char *pool_name;
	char *pool_namespace;
	char *image_id;
	char *image_name;
	bool trash;
};

struct sspec {
	uint64_t id;
	int namespace_type;
	char *name;
};

typedef int (*get_parent_fn)(rbd_image_t, struct lspec *, struct sspec *);
typedef void (*lspec_cleanup_fn)(struct lspec *);
typedef void (*sspec_cleanup_fn)(struct sspec *);
typedef int (*parent_info_fn)(rbd_image_t, char *, size_t, char *, size_t,
			      char *, size_t);
typedef int (*parent_info2_fn)(rbd_image_t, char *, size_t, char *, size_t,
			       char *, size_t, char *, size_t);

static uint64_t cur_size;	/* the image's size before this command */

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v;

	if (!strncmp(s, "end-", 4))
		return cur_size - num(s + 4);
	v = strtoull(s, &end, 0);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return v;
}

static uint8_t pattern(uint64_t seed, uint64_t pos)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + (pos >> 3) + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint8_t)(z >> ((pos & 7) * 8));
}

static char *fill(uint64_t off, uint64_t len, uint64_t seed)
{
	char *b = malloc(len ? len : 1);

	if (!b) {
		perror("cloneop: malloc");
		exit(2);
	}
	for (uint64_t i = 0; i < len; i++)
		b[i] = (char)pattern(seed, off + i);
	return b;
}

static void summary(const char *b, uint64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull, zeros = 0;

	for (uint64_t i = 0; i < n; i++) {
		h = (h ^ (uint8_t)b[i]) * 0x100000001b3ull;
		zeros += !b[i];
	}
	printf(" fnv=%016" PRIx64 " zeros=%" PRIu64, h, zeros);
}

static int do_read(rbd_image_t im, uint64_t off, uint64_t len)
{
	char *b = malloc(len ? len : 1);
	ssize_t r;

	if (!b)
		return -ENOMEM;
	r = rbd_read(im, off, len, b);
	printf(" = %zd", r);
	if (r >= 0)
		summary(b, (uint64_t)r);
	printf("\n");
	free(b);
	return r < 0 ? (int)r : 0;
}

static int do_readall(rbd_image_t im, uint64_t step)
{
	uint64_t size;
	int r = rbd_get_size(im, &size), first = 0;

	if (r < 0 || !step)
		return r < 0 ? r : -EINVAL;
	char *b = malloc(step);

	if (!b)
		return -ENOMEM;
	for (uint64_t off = 0; off < size; off += step) {
		uint64_t n = size - off < step ? size - off : step;
		ssize_t rr = rbd_read(im, off, n, b);

		printf("  %" PRIu64 " %" PRIu64 " %zd", off, n, rr);
		if (rr >= 0)
			summary(b, (uint64_t)rr);
		else if (!first)
			first = (int)rr;
		printf("\n");
	}
	free(b);
	return first;
}

/* aio writes in flight and their buffers. */
static rbd_completion_t pending[256];
static char *pending_buf[256];
static int npending;

static int do_wait(void)
{
	int first = 0;

	for (int i = 0; i < npending; i++) {
		rbd_aio_wait_for_complete(pending[i]);
		int r = (int)rbd_aio_get_return_value(pending[i]);

		if (r < 0 && !first)
			first = r;
		rbd_aio_release(pending[i]);
		free(pending_buf[i]);
	}
	npending = 0;
	return first;
}

static void print_str(const char *s)
{
	printf(" %s", s && *s ? s : "\"\"");
}

static int do_parent(rbd_image_t im)
{
	get_parent_fn gp = (get_parent_fn)dlsym(RTLD_DEFAULT, "rbd_get_parent");
	lspec_cleanup_fn lc = (lspec_cleanup_fn)dlsym(
		RTLD_DEFAULT, "rbd_linked_image_spec_cleanup");
	sspec_cleanup_fn sc =
		(sspec_cleanup_fn)dlsym(RTLD_DEFAULT, "rbd_snap_spec_cleanup");
	parent_info_fn pi =
		(parent_info_fn)dlsym(RTLD_DEFAULT, "rbd_get_parent_info");
	parent_info2_fn pi2 =
		(parent_info2_fn)dlsym(RTLD_DEFAULT, "rbd_get_parent_info2");
	char pool[128], name[128], id[128], snap[128];
	uint64_t v;
	int r;

	if (gp && lc && sc) {
		struct lspec l;
		struct sspec s;

		memset(&l, 0, sizeof(l));
		memset(&s, 0, sizeof(s));
		r = gp(im, &l, &s);
		printf("get_parent = %d", r);
		if (r == 0) {
			printf(" pool_id=%" PRId64, l.pool_id);
			print_str(l.pool_name);
			print_str(l.pool_namespace);
			print_str(l.image_id);
			print_str(l.image_name);
			printf(" trash=%d snap_id=%" PRIu64 " snap_ns=%d",
			       (int)l.trash, s.id, s.namespace_type);
			print_str(s.name);
			lc(&l);
			sc(&s);
		}
		printf("\n");
	} else {
		printf("get_parent missing\n");
	}
	if (pi) {
		r = pi(im, pool, sizeof(pool), name, sizeof(name), snap,
		       sizeof(snap));
		printf("get_parent_info = %d", r);
		if (r == 0)
			printf(" %s %s %s", pool, name, snap);
		printf("\n");
		r = pi(im, pool, 1, name, sizeof(name), snap, sizeof(snap));
		printf("get_parent_info(short pool buffer) = %d\n", r);
	} else {
		printf("get_parent_info missing\n");
	}
	if (pi2) {
		r = pi2(im, pool, sizeof(pool), name, sizeof(name), id,
			sizeof(id), snap, sizeof(snap));
		printf("get_parent_info2 = %d", r);
		if (r == 0)
			printf(" %s %s %s %s", pool, name, id, snap);
		printf("\n");
	} else {
		printf("get_parent_info2 missing\n");
	}
	r = rbd_get_overlap(im, &v);
	printf("get_overlap = %d", r);
	if (r == 0)
		printf(" %" PRIu64, v);
	printf("\n");
	r = rbd_get_size(im, &v);
	printf("get_size = %d %" PRIu64 "\n", r, r ? 0 : v);
	r = rbd_get_features(im, &v);
	printf("get_features = %d %" PRIu64 "\n", r, r ? 0 : v);
	r = rbd_get_flags(im, &v);
	printf("get_flags = %d %" PRIu64 "\n", r, r ? 0 : v);
	return 0;
}

static int diff_cb(uint64_t off, size_t len, int exists, void *arg)
{
	(void)arg;
	printf("  %" PRIu64 " %zu %d\n", off, len, exists);
	return 0;
}

static int do_waitfile(const char *path, int secs)
{
	struct stat st;
	time_t until = time(NULL) + secs;

	printf("  waiting %s\n", path);
	fflush(stdout);
	while (stat(path, &st) < 0) {
		if (time(NULL) >= until)
			return -ETIMEDOUT;
		usleep(50000);
	}
	return 0;
}

/*
 * snaps: rbd_snap_list (every namespace, oldest first), one "  name size"
 * line each -- a group snapshot's name holds the twin's own group id, so
 * it prints as ".group.*" -- and rbd_snap_exists of each name (user
 * snapshots only).  Returns the count.
 */
static int do_snaps(rbd_image_t im)
{
	rbd_snap_info_t v[64];
	int max = 64, n = rbd_snap_list(im, v, &max);

	for (int i = 0; i < n; i++) {
		bool exists = false;
		int e = rbd_snap_exists(im, v[i].name, &exists);
		bool group = !strncmp(v[i].name, ".group.", 7);

		printf("  %s %" PRIu64 " exists=%d/%d\n",
		       group ? ".group.*" : v[i].name, v[i].size, e, exists);
	}
	if (n >= 0)
		rbd_snap_list_end(v);
	return n;
}

/* Number of arguments of each command. */
static int nargs(const char *c)
{
	static const struct {
		const char *name;
		int n;
	} t[] = {
		{ "write", 3 },	   { "aiowrite", 3 }, { "aiowritex", 3 },
		{ "wait", 0 },
		{ "read", 2 },	   { "readall", 1 },  { "discard", 2 },
		{ "zero", 2 },	   { "writesame", 4 }, { "cmpwrite", 4 },
		{ "zerosame", 3 }, { "aiozerosame", 3 },
		{ "snapc", 1 },	   { "snaprm", 1 },   { "snapset", 1 },
		{ "rollback", 1 },
		{ "resize", 1 },   { "size", 0 },     { "parent", 0 },
		{ "diff", 5 },	   { "waitfile", 2 }, { "expect", 1 },
		{ "meta", 2 },	   { "snaps", 0 },
		{ "luksformat", 3 }, { "luksload", 2 }, { "luksbad", 2 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(c, t[i].name))
			return t[i].n;
	return -1;
}

/* luksbad: the encryption calls with one thing wrong (HOW). */
static int luks_bad(rbd_image_t im, bool format, const char *how)
{
	struct {
		rbd_encryption_luks2_format_options_t o;
		char pad[8];
	} u = { .o = { .alg = RBD_ENCRYPTION_ALGORITHM_AES256,
		       .passphrase = "cpass",
		       .passphrase_size = 5 } };
	rbd_encryption_format_t f = RBD_ENCRYPTION_FORMAT_LUKS2;
	size_t sz = sizeof(u.o);
	void *opts = &u.o;

	if (!strcmp(how, "short"))
		sz--;
	else if (!strcmp(how, "long"))
		sz++;
	else if (!strcmp(how, "null"))
		opts = NULL;
	else if (!strcmp(how, "fmt"))
		f = (rbd_encryption_format_t)7;
	else if (!strcmp(how, "alg"))
		u.o.alg = (rbd_encryption_algorithm_t)9;
	else if (!strcmp(how, "nopass"))
		u.o.passphrase = "";
	else if (!strcmp(how, "nullpass"))
		u.o.passphrase = NULL;
	if (!strcmp(how, "nopass") || !strcmp(how, "nullpass"))
		u.o.passphrase_size = 0;
	return format ? rbd_encryption_format(im, f, opts, sz)
		      : rbd_encryption_load(im, f, opts, sz);
}

static int run(rbd_image_t im, const char *c, char **a)
{
	ssize_t r;
	char *b, *b2;

	if (!strcmp(c, "write")) {
		b = fill(num(a[0]), num(a[1]), num(a[2]));
		r = rbd_write(im, num(a[0]), num(a[1]), b);
		free(b);
		return (int)r;
	}
	if (!strcmp(c, "aiowrite") || !strcmp(c, "aiowritex")) {
		if (npending == (int)(sizeof(pending) / sizeof(pending[0])))
			return -ENOSPC;
		b = fill(num(a[0]), num(a[1]), num(a[2]));
		r = rbd_aio_create_completion(NULL, NULL, &pending[npending]);
		if (r < 0) {
			free(b);
			return (int)r;
		}
		r = rbd_aio_write(im, num(a[0]), num(a[1]), b,
				  pending[npending]);
		if (r < 0) {
			rbd_aio_release(pending[npending]);
			free(b);
			return (int)r;
		}
		if (c[8] == 'x')
			memset(b, 0xee, num(a[1]));
		pending_buf[npending++] = b;
		return 0;
	}
	if (!strcmp(c, "wait"))
		return do_wait();
	if (!strcmp(c, "readall"))
		return do_readall(im, num(a[0]));
	if (!strcmp(c, "discard"))
		return rbd_discard(im, num(a[0]), num(a[1]));
	if (!strcmp(c, "zero"))
		return (int)rbd_write_zeroes(im, num(a[0]), num(a[1]), 0, 0);
	if (!strcmp(c, "writesame")) {
		b = fill(0, num(a[2]), num(a[3]));
		r = rbd_writesame(im, num(a[0]), num(a[1]), b, num(a[2]), 0);
		free(b);
		return (int)r;
	}
	if (!strcmp(c, "zerosame") || !strcmp(c, "aiozerosame")) {
		rbd_completion_t comp;

		b = calloc(1, num(a[2]) ? num(a[2]) : 1);
		if (!b)
			return -ENOMEM;
		if (c[0] == 'z') {
			r = rbd_writesame(im, num(a[0]), num(a[1]), b,
					  num(a[2]), 0);
		} else if ((r = rbd_aio_create_completion(NULL, NULL,
							  &comp)) == 0) {
			r = rbd_aio_writesame(im, num(a[0]), num(a[1]), b,
					      num(a[2]), comp, 0);
			if (r == 0) {
				rbd_aio_wait_for_complete(comp);
				r = rbd_aio_get_return_value(comp);
			}
			rbd_aio_release(comp);
		}
		free(b);
		return (int)r;
	}
	if (!strcmp(c, "cmpwrite")) {
		uint64_t mm = (uint64_t)-1;

		b = fill(num(a[0]), num(a[1]), num(a[2]));
		b2 = fill(num(a[0]), num(a[1]), num(a[3]));
		r = rbd_compare_and_write(im, num(a[0]), num(a[1]), b, b2, &mm,
					  0);
		free(b);
		free(b2);
		printf("  mismatch_off=%" PRId64 "\n", (int64_t)mm);
		return (int)r;
	}
	if (!strcmp(c, "luksformat") || !strcmp(c, "luksload")) {
		/* Both formats' options structs have the same layout. */
		const char *pass = c[4] == 'f' ? a[2] : a[1];
		rbd_encryption_luks2_format_options_t o = {
			.alg = c[4] == 'f' && !strcmp(a[1], "aes256")
				       ? RBD_ENCRYPTION_ALGORITHM_AES256
				       : RBD_ENCRYPTION_ALGORITHM_AES128,
			.passphrase = pass,
			.passphrase_size = strlen(pass),
		};
		rbd_encryption_format_t f = !strcmp(a[0], "luks1")
						    ? RBD_ENCRYPTION_FORMAT_LUKS1
						    : RBD_ENCRYPTION_FORMAT_LUKS2;

		return c[4] == 'f'
			       ? rbd_encryption_format(im, f, &o, sizeof(o))
			       : rbd_encryption_load(im, f, &o, sizeof(o));
	}
	if (!strcmp(c, "luksbad"))
		return luks_bad(im, !strcmp(a[0], "format"), a[1]);
	if (!strcmp(c, "snapc"))
		return rbd_snap_create(im, a[0]);
	if (!strcmp(c, "snaprm"))
		return rbd_snap_remove(im, a[0]);
	if (!strcmp(c, "rollback"))
		return rbd_snap_rollback(im, a[0]);
	if (!strcmp(c, "snapset"))
		return rbd_snap_set(im, strcmp(a[0], "-") ? a[0] : NULL);
	if (!strcmp(c, "resize"))
		return rbd_resize(im, num(a[0]));
	if (!strcmp(c, "size")) {
		uint64_t s = 0;
		int rr = rbd_get_size(im, &s);

		printf("  size=%" PRIu64 "\n", s);
		return rr;
	}
	if (!strcmp(c, "parent"))
		return do_parent(im);
	if (!strcmp(c, "snaps"))
		return do_snaps(im);
	if (!strcmp(c, "diff")) {
		uint64_t len = num(a[2]);

		if (!strcmp(a[2], "size") && rbd_get_size(im, &len) < 0)
			return -EIO;
		return rbd_diff_iterate2(im, strcmp(a[0], "-") ? a[0] : NULL,
					 num(a[1]), len, (uint8_t)atoi(a[3]),
					 atoi(a[4]), diff_cb, NULL);
	}
	if (!strcmp(c, "waitfile"))
		return do_waitfile(a[0], atoi(a[1]));
	if (!strcmp(c, "meta"))
		return rbd_metadata_set(im, a[0], a[1]);
	return -EINVAL;
}

int main(int argc, char **argv)
{
	const char *snap = NULL, *ns = NULL;
	bool ro = false;
	int opt, r, fails = 0, expect = 0;

	while ((opt = getopt(argc, argv, "+rs:n:")) != -1) {
		if (opt == 'r')
			ro = true;
		else if (opt == 's')
			snap = optarg;
		else if (opt == 'n')
			ns = optarg;
		else
			return 2;
	}
	if (argc - optind < 2) {
		fprintf(stderr, "usage: cloneop [-r] [-s SNAP] [-n NS] POOL "
				"IMAGE CMD...\n");
		return 2;
	}
	rados_t cl;
	rados_ioctx_t io;
	rbd_image_t im;

	if (rados_create(&cl, NULL) < 0 || rados_conf_read_file(cl, NULL) < 0 ||
	    rados_conf_parse_env(cl, NULL) < 0 || rados_connect(cl) < 0) {
		fprintf(stderr, "cloneop: cannot connect\n");
		return 2;
	}
	if (rados_ioctx_create(cl, argv[optind], &io) < 0) {
		fprintf(stderr, "cloneop: no pool %s\n", argv[optind]);
		return 2;
	}
	if (ns)
		rados_ioctx_set_namespace(io, ns);
	setvbuf(stdout, NULL, _IOLBF, 0);
	r = ro ? rbd_open_read_only(io, argv[optind + 1], &im, snap)
	       : rbd_open(io, argv[optind + 1], &im, snap);
	if (r < 0) {
		printf("open = %d\n", r);
		return 2;
	}
	for (int i = optind + 2; i < argc; i++) {
		const char *c = argv[i];
		int n = nargs(c);

		if (n < 0 || i + n >= argc) {
			fprintf(stderr, "cloneop: %s: unknown command or "
					"missing arguments\n", c);
			return 2;
		}
		if (!strcmp(c, "expect")) {
			expect = atoi(argv[i + 1]);
			i++;
			continue;
		}
		bool multi = !strcmp(c, "readall") || !strcmp(c, "diff") ||
			     !strcmp(c, "parent") || !strcmp(c, "cmpwrite") ||
			     !strcmp(c, "size") || !strcmp(c, "waitfile") ||
			     !strcmp(c, "snaps");

		printf("%s", c);
		for (int k = 1; k <= n; k++)
			printf(" %s", argv[i + k]);
		if (multi)
			printf(":\n");
		for (int k = 1; k <= n; k++)
			if (!strncmp(argv[i + k], "end-", 4)) {
				if (rbd_get_size(im, &cur_size) < 0)
					cur_size = 0;
				break;
			}
		if (!strcmp(c, "read"))
			r = do_read(im, num(argv[i + 1]), num(argv[i + 2]));
		else
			r = run(im, c, argv + i + 1);
		if (strcmp(c, "read"))
			printf("%s= %d\n", multi ? "  " : " ", r);
		/* Byte counts are success unless an error is expected. */
		if (expect ? r != expect : r < 0) {
			fprintf(stderr, "cloneop: %s %s: got %d, expected %d\n",
				c, n ? argv[i + 1] : "", r, expect);
			fails++;
		}
		expect = 0;
		i += n;
	}
	if (npending) {
		r = do_wait();
		printf("final wait = %d\n", r);
	}
	printf("close = %d\n", rbd_close(im));
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return fails ? 1 : 0;
}
