/*
 * imageapi.c - image information, metadata, advisory locks, resize and
 * remove with progress, the read/diff walks, rename and the aio open and
 * close, exercised on one image and printed line by line.  Built twice
 * from this source: against librbdlite (imageapi-lite) and against the
 * real librbd (imageapi-librbd); tests/cluster/test-imageapi.sh runs both
 * on twin images and compares the outputs.
 *
 *   imageapi MODE POOL IMAGE [ARG]
 *
 * Modes (each prints "label r=RET ..." lines; the image's own name is
 * printed as <IMG>, so twins print the same):
 *   seed       write a deterministic pattern into a few objects
 *   info       rbd_get_name (buffer sizes; opened by id too),
 *              rbd_get_old_format, the three timestamps (checked for
 *              plausibility: create <= access, create <= modify, recent),
 *              rbd_get_op_features, rbd_get_group (bad size too)
 *   meta SNAP  rbd_metadata_list (sizes, start, max), _remove (missing
 *              keys; read-only and snapshot opens)
 *   config     rbd_config_image_list: the buffer-size protocol (max 0,
 *              negative, count - 1, count), every (name, value, source)
 *              on a read-write and a read-only open, rbd_cache after an
 *              image override set and removed through the handle
 *   locks      advisory locks: lock twice, wrong cookies, shared tags,
 *              rbd_list_lockers with small buffers; a second process
 *              (this program, mode holder) takes a lock which is then
 *              broken
 *   holder     take lock_exclusive "other", print "ready", wait for EOF
 *              on stdin
 *   keeplocks  take two shared locks and exit (for `rbd lock ls`)
 *   iterate    rbd_read_iterate / _iterate2 (ranges, past the end, a
 *              cancelling callback), rbd_diff_iterate (from a snapshot it
 *              creates, and from the start)
 *   resize     rbd_resize2 / rbd_resize_with_progress: growth, refused
 *              shrink, shrink with progress counted, cancelled shrink
 *   cancelshrink MIB,N  one rbd_resize2 to MIB MiB cancelled by the Nth
 *              callback; then the size and the data, 4 MiB at a time
 *   aio        rbd_aio_open* / rbd_aio_close (by name, id, read-only,
 *              missing image and snapshot)
 *   rename DST rbd_rename to DST and back, onto an existing name, of a
 *              missing image
 *   remove     rbd_remove_with_progress: refused (snapshot, open), then
 *              cancelled by the callback
 *   remove2    rbd_remove_with_progress of what the cancelled one left;
 *              then of a missing image
 *   hold FILE  open read-write and wait until FILE exists
 *
 * Built against librbdlite (rbdlite.h present) the program also checks
 * the calls with a NULL or closed handle (-EINVAL; librbd would crash),
 * printed as "lite-only" lines which the script checks separately.
 * Exit status: 0, or 2 when the set-up (connect, open) fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#if defined(__has_include)
#if __has_include(<rbdlite.h>)
#define LITE 1
#endif
#endif

static rados_t cl;
static rados_ioctx_t io;
static const char *img_name;
static const char *self_path;

/* The image's name as <IMG> (twins differ only in it). */
static const char *mask(const char *s)
{
	static char buf[4][512];
	static int k;
	char *b = buf[k++ % 4];
	size_t n = strlen(img_name);
	const char *p = strstr(s, img_name);

	if (!p || !n) {
		snprintf(b, 512, "%s", s);
		return b;
	}
	snprintf(b, 512, "%.*s<IMG>%s", (int)(p - s), s, p + n);
	return b;
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void pattern(char *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((off + i) * 2654435761u >> 13 ^ seed);
}

static rbd_image_t open_img(const char *name, const char *snap, bool ro)
{
	rbd_image_t im = NULL;
	int r = ro ? rbd_open_read_only(io, name, &im, snap)
		   : rbd_open(io, name, &im, snap);

	if (r < 0) {
		printf("open %s r=%d\n", mask(name), r);
		exit(2);
	}
	return im;
}

/* ---- seed ----------------------------------------------------------------- */

static void do_seed(void)
{
	rbd_image_t im = open_img(img_name, NULL, false);
	static const uint64_t offs[] = { 0, 5 << 20, (12 << 20) + 4096,
					 (31 << 20) + 12345 };
	char *buf = malloc(300000);

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		pattern(buf, 300000, offs[i], 7);
		ssize_t r = rbd_write(im, offs[i], 300000, buf);

		printf("seed write %" PRIu64 " r=%zd\n", offs[i], r);
	}
	free(buf);
	printf("seed close r=%d\n", rbd_close(im));
}

/* ---- info ------------------------------------------------------------------- */

static void print_name(const char *label, rbd_image_t im)
{
	char buf[256];
	size_t len = 0;
	int r = rbd_get_name(im, buf, &len);

	printf("%s get_name(len 0) r=%d len=%zu\n", label, r, len);
	size_t need = len;

	len = need - 1;
	r = rbd_get_name(im, buf, &len);
	printf("%s get_name(len need-1) r=%d len=%zu\n", label, r, len);
	len = need;
	memset(buf, 'x', sizeof(buf));
	r = rbd_get_name(im, buf, &len);
	printf("%s get_name(len need) r=%d len=%zu name=%s\n", label, r, len,
	       r == 0 ? mask(buf) : "-");
	len = sizeof(buf);
	r = rbd_get_name(im, buf, &len);
	printf("%s get_name(len 256) r=%d len=%zu name=%s\n", label, r, len,
	       r == 0 ? mask(buf) : "-");
}

static void print_ts(rbd_image_t im)
{
	struct timespec c = { 0 }, a = { 0 }, m = { 0 };
	int rc = rbd_get_create_timestamp(im, &c);
	int ra = rbd_get_access_timestamp(im, &a);
	int rm = rbd_get_modify_timestamp(im, &m);
	time_t now = time(NULL);

	printf("timestamps r=%d,%d,%d\n", rc, ra, rm);
	/* Plausible: created within the last hour, not in the future;
	 * access and modify not before the creation. */
	bool ok = c.tv_sec > now - 3600 && c.tv_sec <= now + 60 &&
		  c.tv_nsec >= 0 && c.tv_nsec < 1000000000 &&
		  (a.tv_sec > c.tv_sec ||
		   (a.tv_sec == c.tv_sec && a.tv_nsec >= c.tv_nsec)) &&
		  (m.tv_sec > c.tv_sec ||
		   (m.tv_sec == c.tv_sec && m.tv_nsec >= c.tv_nsec)) &&
		  a.tv_sec <= now + 60 && m.tv_sec <= now + 60;
	printf("timestamps plausible=%d\n", ok);
	if (!ok)
		fprintf(stderr, "timestamps: now %ld create %ld.%09ld access "
			"%ld.%09ld modify %ld.%09ld\n", (long)now,
			(long)c.tv_sec, c.tv_nsec, (long)a.tv_sec, a.tv_nsec,
			(long)m.tv_sec, m.tv_nsec);
}

static void do_info(void)
{
	rbd_image_t im = open_img(img_name, NULL, false), im2 = NULL;
	char id[64];
	uint8_t old = 9;
	uint64_t opf = 99;
	rbd_group_info_t g;
	int r;

	print_name("byname", im);
	r = rbd_get_id(im, id, sizeof(id));
	printf("get_id r=%d\n", r);
	r = rbd_open_by_id(io, id, &im2, NULL);
	printf("open_by_id r=%d\n", r);
	if (r == 0) {
		print_name("byid", im2);
		rbd_close(im2);
	}
	r = rbd_open_by_id_read_only(io, id, &im2, NULL);
	printf("open_by_id_read_only r=%d\n", r);
	if (r == 0) {
		print_name("byid-ro", im2);
		rbd_close(im2);
	}
	r = rbd_get_old_format(im, &old);
	printf("old_format r=%d old=%u\n", r, old);
	print_ts(im);
	r = rbd_get_op_features(im, &opf);
	printf("op_features r=%d v=%" PRIu64 "\n", r, opf);
	g.name = (char *)"untouched";
	g.pool = 77;
	r = rbd_get_group(im, &g, sizeof(g) - 1);
	printf("get_group(bad size) r=%d\n", r);
	r = rbd_get_group(im, &g, sizeof(g));
	printf("get_group r=%d name=%s pool_is_ours=%d pool=%s\n", r,
	       r == 0 && g.name ? g.name : "(null)",
	       g.pool == rados_ioctx_get_id(io), g.pool == -1 ? "-1" : "id");
	if (r == 0)
		rbd_group_info_cleanup(&g, sizeof(g));
	rbd_close(im);

#ifdef LITE
	/* librbd dereferences these; librbdlite refuses them. */
	struct timespec ts;
	size_t len = 10;
	char buf[10];

	printf("lite-only get_name(NULL) r=%d\n", rbd_get_name(NULL, buf, &len));
	printf("lite-only get_name(closed) r=%d\n", rbd_get_name(im, buf, &len));
	printf("lite-only get_old_format(NULL) r=%d\n",
	       rbd_get_old_format(NULL, &old));
	printf("lite-only create_ts(NULL) r=%d\n",
	       rbd_get_create_timestamp(NULL, &ts));
	printf("lite-only access_ts(closed) r=%d\n",
	       rbd_get_access_timestamp(im, &ts));
	printf("lite-only modify_ts(NULL) r=%d\n",
	       rbd_get_modify_timestamp(NULL, &ts));
	printf("lite-only op_features(NULL) r=%d\n",
	       rbd_get_op_features(NULL, &opf));
	printf("lite-only get_group(NULL) r=%d\n",
	       rbd_get_group(NULL, &g, sizeof(g)));
	printf("lite-only metadata_remove(NULL) r=%d\n",
	       rbd_metadata_remove(NULL, "k"));
	printf("lite-only lock_exclusive(closed) r=%d\n",
	       rbd_lock_exclusive(im, "c"));
	printf("lite-only unlock(NULL) r=%d\n", rbd_unlock(NULL, "c"));
	printf("lite-only break_lock(NULL) r=%d\n",
	       rbd_break_lock(NULL, "client.1", "c"));
	printf("lite-only resize2(NULL) r=%d\n",
	       rbd_resize2(NULL, 1 << 20, true, NULL, NULL));
	printf("lite-only read_iterate2(closed) r=%d\n",
	       rbd_read_iterate2(im, 0, 10, NULL, NULL));
	printf("lite-only diff_iterate(NULL) r=%d\n",
	       rbd_diff_iterate(NULL, NULL, 0, 10, NULL, NULL));
	printf("lite-only aio_close(closed) r=%d\n", rbd_aio_close(im, NULL));
	printf("lite-only rename(NULL src) r=%d\n", rbd_rename(io, NULL, "x"));
	printf("lite-only remove_with_progress(NULL) r=%d\n",
	       rbd_remove_with_progress(io, NULL, NULL, NULL));
#endif
}

/* ---- metadata ------------------------------------------------------------------ */

static void print_meta(rbd_image_t im, const char *start, uint64_t max)
{
	char keys[1024], vals[1024];
	size_t kl = 0, vl = 0;
	int r = rbd_metadata_list(im, start, max, keys, &kl, vals, &vl);

	printf("metadata_list(%s,%" PRIu64 ", 0/0) r=%d kl=%zu vl=%zu\n",
	       start, max, r, kl, vl);
	size_t nk = kl, nv = vl;

	kl = nk ? nk - 1 : 0;
	vl = nv;
	r = rbd_metadata_list(im, start, max, keys, &kl, vals, &vl);
	printf("metadata_list(%s,%" PRIu64 ", short keys) r=%d kl=%zu vl=%zu\n",
	       start, max, r, kl, vl);
	kl = sizeof(keys);
	vl = sizeof(vals);
	r = rbd_metadata_list(im, start, max, keys, &kl, vals, &vl);
	printf("metadata_list(%s,%" PRIu64 ") r=%d kl=%zu vl=%zu:", start, max,
	       r, kl, vl);
	for (size_t k = 0, v = 0; r == 0 && k < kl && v < vl;) {
		printf(" %s=%s", keys + k, vals + v);
		k += strlen(keys + k) + 1;
		v += strlen(vals + v) + 1;
	}
	printf("\n");
}

static void do_meta(const char *snap)
{
	rbd_image_t im = open_img(img_name, NULL, false), ro, at;
	static const char *const kv[][2] = {
		{ "alpha", "1" }, { "beta", "two" }, { "conf_rbd_cache", "false" },
		{ "delta", "" }, { "gamma", "a longer value with spaces" },
	};

	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		printf("metadata_set %s r=%d\n", kv[i][0],
		       rbd_metadata_set(im, kv[i][0], kv[i][1]));
	print_meta(im, "", 0);
	print_meta(im, "beta", 0);
	print_meta(im, "", 2);
	print_meta(im, "alpha", 1);
	print_meta(im, "zzz", 0);
	printf("metadata_remove beta r=%d\n", rbd_metadata_remove(im, "beta"));
	printf("metadata_remove beta again r=%d\n",
	       rbd_metadata_remove(im, "beta"));
	printf("metadata_remove missing r=%d\n",
	       rbd_metadata_remove(im, "nosuchkey"));
	printf("metadata_remove conf_rbd_cache r=%d\n",
	       rbd_metadata_remove(im, "conf_rbd_cache"));
	print_meta(im, "", 0);

	ro = open_img(img_name, NULL, true);
	printf("ro metadata_remove alpha r=%d\n", rbd_metadata_remove(ro, "alpha"));
	printf("ro metadata_remove missing r=%d\n",
	       rbd_metadata_remove(ro, "nosuchkey"));
	print_meta(ro, "", 0);
	rbd_close(ro);
	at = open_img(img_name, snap, false);
	printf("snap metadata_remove alpha r=%d\n", rbd_metadata_remove(at, "alpha"));
	printf("snap metadata_remove missing r=%d\n",
	       rbd_metadata_remove(at, "nosuchkey"));
	print_meta(at, "", 0);
	rbd_close(at);
	printf("metadata_remove delta r=%d\n", rbd_metadata_remove(im, "delta"));
	print_meta(im, "", 0);
	rbd_close(im);
}

/* ---- configuration list ------------------------------------------------------ */

#define MAX_OPTS 512

/* rbd_config_image_list with max_options = max (options unused when it
 * is too small); the count, or -1. */
static int config_probe(const char *label, rbd_image_t im, int max)
{
	static rbd_config_option_t opts[MAX_OPTS];
	int n = max, r = rbd_config_image_list(im, opts, &n);

	printf("%s config_image_list(max=%d) r=%d n=%d\n", label, max, r, n);
	if (r == 0)
		rbd_config_image_list_cleanup(opts, n);
	return r == 0 || r == -ERANGE ? n : -1;
}

/* Every option as "LABEL NAME=VALUE source=S", or only the one named. */
static void config_print(const char *label, rbd_image_t im, const char *only)
{
	static rbd_config_option_t opts[MAX_OPTS];
	int n = MAX_OPTS, r = rbd_config_image_list(im, opts, &n);

	if (!only)
		printf("%s config_image_list(max=%d) r=%d n=%d\n", label,
		       MAX_OPTS, r, n);
	for (int i = 0; r == 0 && i < n; i++) {
		if (only && strcmp(opts[i].name, only))
			continue;
		printf("%s %s=%s source=%d\n", label, opts[i].name,
		       opts[i].value, (int)opts[i].source);
	}
	if (r == 0)
		rbd_config_image_list_cleanup(opts, n);
	else if (only)
		printf("%s config_image_list r=%d\n", label, r);
}

static void do_config(void)
{
	rbd_image_t im = open_img(img_name, NULL, false), ro;
	int count;

	/* -ERANGE with the count whenever max_options is smaller. */
	count = config_probe("rw", im, 0);
	config_probe("rw", im, -1);
	if (count > 0) {
		config_probe("rw", im, count - 1);
		config_probe("rw", im, count);
	}
	config_print("rw", im, NULL);
	/* An image override through the handle shows at once, its removal
	 * uncovers the pool's (or the client's) value again. */
	printf("metadata_set conf_rbd_cache r=%d\n",
	       rbd_metadata_set(im, "conf_rbd_cache", "true"));
	config_print("set", im, "rbd_cache");
	printf("metadata_remove conf_rbd_cache r=%d\n",
	       rbd_metadata_remove(im, "conf_rbd_cache"));
	config_print("removed", im, "rbd_cache");
	ro = open_img(img_name, NULL, true);
	config_print("ro", ro, NULL);
	rbd_close(ro);
	rbd_close(im);

#ifdef LITE
	/* librbd dereferences these; librbdlite refuses them. */
	rbd_config_option_t opts[4];
	int n = 4;

	printf("lite-only config_image_list(NULL) r=%d\n",
	       rbd_config_image_list(NULL, opts, &n));
	printf("lite-only config_image_list(closed) r=%d\n",
	       rbd_config_image_list(im, opts, &n));
	printf("lite-only config_image_list(closed, NULL options) r=%d\n",
	       rbd_config_image_list(ro, NULL, &n));
	im = open_img(img_name, NULL, true);
	printf("lite-only config_image_list(NULL max_options) r=%d\n",
	       rbd_config_image_list(im, opts, NULL));
	rbd_close(im);
#endif
}

/* ---- advisory locks ---------------------------------------------------------------- */

static char self_client[64];

/* Print the lockers: clients as "self"/"other", cookies, addresses as
 * "addr" when they look like ip:port/nonce. */
static ssize_t print_lockers(const char *label, rbd_image_t im, char *other,
			     size_t other_cap)
{
	char tag[128], clients[512], cookies[512], addrs[512];
	size_t tl = sizeof(tag), cl_ = sizeof(clients), kl = sizeof(cookies),
	       al = sizeof(addrs);
	int ex = -1;
	/* The managed lock's cookie ("auto <watch handle>") has no fixed
	 * length: with one listed, cookie lengths print as "var". */
	ssize_t r = rbd_list_lockers(im, &ex, tag, &tl, clients, &cl_, cookies,
				     &kl, addrs, &al);
	bool var = false;

	for (ssize_t i = 0, k = 0; r > 0 && i < r; i++) {
		var |= !strncmp(cookies + k, "auto ", 5);
		k += (ssize_t)strlen(cookies + k) + 1;
	}
#define KL(x) (var ? "var" : (snprintf(klbuf, sizeof(klbuf), "%zu", (x)), klbuf))
	char klbuf[32];

	tl = cl_ = kl = al = 0;
	r = rbd_list_lockers(im, &ex, tag, &tl, clients, &cl_, cookies, &kl,
			     addrs, &al);
	printf("%s list_lockers(0 sizes) r=%zd ex=%d tl=%zu kl=%s\n", label,
	       r, ex, tl, KL(kl));
	size_t ntl = tl, ncl = cl_, nkl = kl, nal = al;

	if (nkl > 0) {
		kl = nkl - 1;
		tl = ntl;
		cl_ = ncl;
		al = nal;
		r = rbd_list_lockers(im, &ex, tag, &tl, clients, &cl_, cookies,
				     &kl, addrs, &al);
		printf("%s list_lockers(short cookies) r=%zd kl=%s\n", label,
		       r, KL(kl));
	}
	tl = sizeof(tag);
	cl_ = sizeof(clients);
	kl = sizeof(cookies);
	al = sizeof(addrs);
	r = rbd_list_lockers(im, &ex, tag, &tl, clients, &cl_, cookies, &kl,
			     addrs, &al);
	printf("%s list_lockers r=%zd ex=%d tag='%s' tl=%zu kl=%s:", label, r,
	       ex, r >= 0 ? tag : "", tl, KL(kl));
#undef KL
	for (ssize_t i = 0, c = 0, k = 0, a = 0; r > 0 && i < r; i++) {
		const char *cs = clients + c, *ks = cookies + k, *as = addrs + a;
		unsigned ip[4], port, nonce;
		bool addr_ok = sscanf(as, "%u.%u.%u.%u:%u/%u", &ip[0], &ip[1],
				      &ip[2], &ip[3], &port, &nonce) == 6;

		/* The managed lock's cookie: "auto <watch handle>". */
		unsigned long long handle;
		char tail;
		bool managed = sscanf(ks, "auto %llu%c", &handle, &tail) == 1;

		printf(" [%s %s %s]",
		       !strcmp(cs, self_client) ? "self"
		       : !strncmp(cs, "client.", 7) ? "other-client"
						    : cs,
		       managed ? "auto <handle>" : ks, addr_ok ? "addr" : as);
		if (other && strcmp(cs, self_client))
			snprintf(other, other_cap, "%s", cs);
		c += (ssize_t)strlen(cs) + 1;
		k += (ssize_t)strlen(ks) + 1;
		a += (ssize_t)strlen(as) + 1;
	}
	printf("\n");
	return r;
}

static void do_locks(void)
{
	rbd_image_t im = open_img(img_name, NULL, false), ro;
	char other[64] = "";
	int r;

	print_lockers("empty", im, NULL, 0);
	printf("lock_exclusive c1 r=%d\n", rbd_lock_exclusive(im, "c1"));
	printf("lock_exclusive c1 again r=%d\n", rbd_lock_exclusive(im, "c1"));
	printf("lock_exclusive c2 r=%d\n", rbd_lock_exclusive(im, "c2"));
	printf("lock_shared c3 r=%d\n", rbd_lock_shared(im, "c3", "t"));
	print_lockers("excl", im, NULL, 0);
	printf("unlock wrong cookie r=%d\n", rbd_unlock(im, "nope"));
	printf("unlock c1 r=%d\n", rbd_unlock(im, "c1"));
	printf("unlock c1 again r=%d\n", rbd_unlock(im, "c1"));
	printf("lock_shared s1 tagA r=%d\n", rbd_lock_shared(im, "s1", "tagA"));
	printf("lock_shared s2 tagA r=%d\n", rbd_lock_shared(im, "s2", "tagA"));
	printf("lock_shared s3 tagB r=%d\n", rbd_lock_shared(im, "s3", "tagB"));
	printf("lock_exclusive e1 r=%d\n", rbd_lock_exclusive(im, "e1"));
	print_lockers("shared", im, NULL, 0);
	/* Another handle of the same client sees and may release them. */
	ro = open_img(img_name, NULL, true);
	print_lockers("ro-handle", ro, NULL, 0);
	printf("ro unlock s2 r=%d\n", rbd_unlock(ro, "s2"));
	printf("ro lock_shared s4 tagA r=%d\n", rbd_lock_shared(ro, "s4", "tagA"));
	printf("ro unlock s4 r=%d\n", rbd_unlock(ro, "s4"));
	rbd_close(ro);
	printf("unlock s1 r=%d\n", rbd_unlock(im, "s1"));
	printf("lock_shared NULL cookie/tag r=%d\n", rbd_lock_shared(im, NULL, NULL));
	print_lockers("nullcookie", im, NULL, 0);
	printf("unlock NULL r=%d\n", rbd_unlock(im, NULL));
	print_lockers("after-unlock", im, NULL, 0);

	/* A second process holds the lock; break it. */
	int to[2], from[2];

	if (pipe(to) || pipe(from)) {
		printf("pipe failed\n");
		exit(2);
	}
	pid_t pid = fork();

	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		char pool[256];

		rados_ioctx_get_pool_name(io, pool, sizeof(pool));
		execl(self_path, self_path, "holder", pool, img_name,
		      (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	FILE *f = fdopen(from[0], "r");
	char line[256] = "";

	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	printf("holder says: %s", line[0] ? line : "(nothing)\n");
	print_lockers("held-by-other", im, other, sizeof(other));
	printf("lock_exclusive while other holds r=%d\n",
	       rbd_lock_exclusive(im, "mine"));
	printf("unlock other's cookie r=%d\n", rbd_unlock(im, "other"));
	printf("break_lock unparsable r=%d\n", rbd_break_lock(im, "bogus", "other"));
	printf("break_lock client.1 r=%d\n", rbd_break_lock(im, "client.1", "other"));
	r = rbd_break_lock(im, other, "wrongcookie");
	printf("break_lock wrong cookie r=%d\n", r);
	print_lockers("after-wrong-break", im, NULL, 0);
	r = rbd_break_lock(im, other, "other");
	printf("break_lock r=%d\n", r);
	print_lockers("after-break", im, NULL, 0);
	close(to[1]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(f);

	/* A write takes the exclusive-lock feature's managed lock (the same
	 * cls lock): listed, and advisory locks are then refused. */
	char buf[4096];

	memset(buf, 0x11, sizeof(buf));
	printf("write r=%zd\n", rbd_write(im, 0, sizeof(buf), buf));
	/* Listed through a new handle: librbd answers from the lockers its
	 * last refresh read, and taking the managed lock refreshes nothing
	 * (librbdlite asks the OSD each time). */
	ro = open_img(img_name, NULL, true);
	print_lockers("after-write", ro, NULL, 0);
	rbd_close(ro);
	printf("lock_exclusive after write r=%d\n", rbd_lock_exclusive(im, "w1"));
	printf("lock_shared after write r=%d\n", rbd_lock_shared(im, "w2", "internal"));
	printf("unlock w1 r=%d\n", rbd_unlock(im, "w1"));
	printf("unlock w2 r=%d\n", rbd_unlock(im, "w2"));
	printf("close r=%d\n", rbd_close(im));
	im = open_img(img_name, NULL, true);
	print_lockers("after-close", im, NULL, 0);
	rbd_close(im);
}

static void do_holder(void)
{
	rbd_image_t im = open_img(img_name, NULL, false);
	int r = rbd_lock_exclusive(im, "other");
	char c;

	printf("ready r=%d\n", r);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	_exit(0);
}

static void do_keeplocks(void)
{
	rbd_image_t im = open_img(img_name, NULL, false);

	printf("keep lock_shared k1 r=%d\n", rbd_lock_shared(im, "keep1", "kt"));
	printf("keep lock_shared k2 r=%d\n", rbd_lock_shared(im, "keep2", "kt"));
	printf("close r=%d\n", rbd_close(im));
}

/* ---- iterate ----------------------------------------------------------------------- */

struct it_state {
	int calls, stop_at, stop_with;
	bool quiet;
};

static int it_cb(uint64_t off, size_t len, const char *buf, void *arg)
{
	struct it_state *s = arg;
	size_t zeros = 0;

	s->calls++;
	for (size_t i = 0; buf && i < len; i++)
		zeros += buf[i] == 0;
	if (!s->quiet)
		printf("  cb off=%" PRIu64 " len=%zu buf=%s fnv=%016" PRIx64
		       " zeros=%zu\n", off, len, buf ? "data" : "NULL",
		       buf ? fnv(buf, len) : 0, zeros);
	if (s->stop_at && s->calls == s->stop_at)
		return s->stop_with;
	return 0;
}

static int diff_cb(uint64_t off, size_t len, int exists, void *arg)
{
	(void)arg;
	printf("  diff off=%" PRIu64 " len=%zu exists=%d\n", off, len, exists);
	return 0;
}

static void do_iterate(void)
{
	rbd_image_t im = open_img(img_name, NULL, false);
	struct it_state s = { 0 };
	uint64_t size = 0;
	int64_t r;

	rbd_get_size(im, &size);
	printf("size %" PRIu64 "\n", size);
	s = (struct it_state){ 0 };
	r = rbd_read_iterate(im, 0, (size_t)size, it_cb, &s);
	printf("read_iterate all r=%" PRId64 " calls=%d\n", r, s.calls);
	s = (struct it_state){ 0 };
	r = rbd_read_iterate2(im, (5 << 20) - 1000, 9 << 20, it_cb, &s);
	printf("read_iterate2 mid r=%" PRId64 " calls=%d\n", r, s.calls);
	s = (struct it_state){ 0 };
	r = rbd_read_iterate(im, size - 5000, 100000, it_cb, &s);
	printf("read_iterate clipped r=%" PRId64 " calls=%d\n", r, s.calls);
	s = (struct it_state){ 0 };
	r = rbd_read_iterate(im, size, 10, it_cb, &s);
	printf("read_iterate at end r=%" PRId64 " calls=%d\n", r, s.calls);
	s = (struct it_state){ 0 };
	r = rbd_read_iterate2(im, size + 1, 0, it_cb, &s);
	printf("read_iterate2 len 0 past end r=%" PRId64 " calls=%d\n", r,
	       s.calls);
	s = (struct it_state){ .stop_at = 2, .stop_with = -42 };
	r = rbd_read_iterate2(im, 0, size, it_cb, &s);
	printf("read_iterate2 cancelled r=%" PRId64 " calls=%d\n", r, s.calls);
	s = (struct it_state){ .stop_at = 3, .stop_with = -7 };
	r = rbd_read_iterate(im, 0, (size_t)size, it_cb, &s);
	printf("read_iterate cancelled r=%" PRId64 " calls=%d\n", r, s.calls);
	s = (struct it_state){ .stop_at = 1, .stop_with = 5 };
	r = rbd_read_iterate2(im, 0, 3 << 20, it_cb, &s);
	printf("read_iterate2 positive cb r=%" PRId64 " calls=%d\n", r, s.calls);

	printf("snap_create it1 r=%d\n", rbd_snap_create(im, "it1"));
	char *buf = malloc(70000);

	pattern(buf, 70000, 9 << 20, 3);
	printf("write r=%zd\n", rbd_write(im, 9 << 20, 70000, buf));
	printf("discard r=%d\n", rbd_discard(im, 0, 1 << 20));
	free(buf);
	printf("diff_iterate from it1 r=%d\n",
	       rbd_diff_iterate(im, "it1", 0, size, diff_cb, NULL));
	printf("diff_iterate from start r=%d\n",
	       rbd_diff_iterate(im, NULL, 0, size, diff_cb, NULL));
	printf("diff_iterate part r=%d\n",
	       rbd_diff_iterate(im, NULL, 4 << 20, 6 << 20, diff_cb, NULL));
	printf("diff_iterate missing snap r=%d\n",
	       rbd_diff_iterate(im, "nosuch", 0, size, diff_cb, NULL));
	rbd_image_t at = open_img(img_name, "it1", true);

	s = (struct it_state){ 0 };
	r = rbd_read_iterate2(at, 0, 2 << 20, it_cb, &s);
	printf("snap read_iterate2 r=%" PRId64 " calls=%d\n", r, s.calls);
	rbd_close(at);
	printf("snap_remove it1 r=%d\n", rbd_snap_remove(im, "it1"));
	rbd_close(im);
}

/* ---- resize ------------------------------------------------------------------------ */

struct prog_state {
	int calls, stop_at, stop_with;
	uint64_t first_off, first_tot, last_off, last_tot;
	bool monotonic;
};

static int prog_cb(uint64_t off, uint64_t total, void *arg)
{
	struct prog_state *p = arg;

	if (p->calls == 0) {
		p->first_off = off;
		p->first_tot = total;
		p->monotonic = true;
	} else if (off <= p->last_off || total != p->last_tot) {
		p->monotonic = false;
	}
	p->calls++;
	p->last_off = off;
	p->last_tot = total;
	if (p->stop_at && p->calls == p->stop_at)
		return p->stop_with;
	return 0;
}

static void print_prog(const char *label, int r, const struct prog_state *p)
{
	printf("%s r=%d calls=%d first=%" PRIu64 "/%" PRIu64 " last=%" PRIu64
	       "/%" PRIu64 " monotonic=%d\n", label, r, p->calls, p->first_off,
	       p->first_tot, p->last_off, p->last_tot, p->calls ? p->monotonic : 1);
}

static void print_size(rbd_image_t im)
{
	uint64_t size = 0;
	int r = rbd_get_size(im, &size);

	printf("  size r=%d %" PRIu64 "\n", r, size);
}

/* The image's data, 4 MiB at a time. */
static void print_data(rbd_image_t im)
{
	uint64_t size = 0;
	char *buf = malloc(4 << 20);

	rbd_get_size(im, &size);
	for (uint64_t off = 0; off < size; off += 4 << 20) {
		uint64_t len = size - off < (4 << 20) ? size - off : 4 << 20;
		ssize_t got = rbd_read(im, off, len, buf);

		printf("  read %" PRIu64 " r=%zd fnv=%016" PRIx64 "\n", off, got,
		       got > 0 ? fnv(buf, (size_t)got) : 0);
	}
	free(buf);
}

static void do_resize(void)
{
	rbd_image_t im = open_img(img_name, NULL, false), ro;
	struct prog_state p;
	int r;

	print_size(im);
	p = (struct prog_state){ 0 };
	r = rbd_resize2(im, 48 << 20, true, prog_cb, &p);
	print_prog("resize2 grow", r, &p);
	print_size(im);
	p = (struct prog_state){ 0 };
	r = rbd_resize2(im, 20 << 20, false, prog_cb, &p);
	print_prog("resize2 shrink refused", r, &p);
	print_size(im);
	p = (struct prog_state){ 0 };
	r = rbd_resize2(im, 48 << 20, false, prog_cb, &p);
	print_prog("resize2 same size", r, &p);
	p = (struct prog_state){ .stop_at = 3, .stop_with = -42 };
	r = rbd_resize2(im, 8 << 20, true, prog_cb, &p);
	print_prog("resize2 shrink cancelled", r, &p);
	/* The size the header kept (librbd's in-memory size may show the
	 * new one until a refresh), seen through a new open. */
	ro = open_img(img_name, NULL, true);
	print_size(ro);
	rbd_close(ro);
	p = (struct prog_state){ 0 };
	r = rbd_resize_with_progress(im, 30 << 20, prog_cb, &p);
	print_prog("resize_with_progress shrink", r, &p);
	print_size(im);
	p = (struct prog_state){ 0 };
	r = rbd_resize2(im, (13 << 20) + 100, true, prog_cb, &p);
	print_prog("resize2 shrink", r, &p);
	print_size(im);
	p = (struct prog_state){ 0 };
	r = rbd_resize2(im, 40 << 20, true, NULL, NULL);
	print_prog("resize2 grow NULL cb", r, &p);
	print_size(im);
	p = (struct prog_state){ 0 };
	r = rbd_resize_with_progress(im, 12 << 20, prog_cb, &p);
	print_prog("resize_with_progress shrink 2", r, &p);
	print_size(im);

	ro = open_img(img_name, NULL, true);
	p = (struct prog_state){ 0 };
	r = rbd_resize2(ro, 4 << 20, true, prog_cb, &p);
	print_prog("ro resize2", r, &p);
	p = (struct prog_state){ 0 };
	r = rbd_resize_with_progress(ro, 40 << 20, prog_cb, &p);
	print_prog("ro resize_with_progress", r, &p);
	rbd_close(ro);

	/* The data that is left reads back the same on both twins. */
	print_data(im);
	rbd_close(im);
}

/* cancelshrink SIZE_MIB N: one shrink cancelled at the Nth callback. */
static void do_cancelshrink(const char *arg)
{
	rbd_image_t im = open_img(img_name, NULL, false);
	unsigned mib = 0, n = 0;
	struct prog_state p;

	if (sscanf(arg, "%u,%u", &mib, &n) != 2) {
		printf("bad argument %s\n", arg);
		exit(2);
	}
	p = (struct prog_state){ .stop_at = (int)n, .stop_with = -42 };
	int r = rbd_resize2(im, (uint64_t)mib << 20, true, prog_cb, &p);

	print_prog("resize2 cancelled", r, &p);
	rbd_close(im);
	im = open_img(img_name, NULL, true);
	print_size(im);
	print_data(im);
	rbd_close(im);
}

/* ---- aio open / close ---------------------------------------------------------------- */

static rbd_image_t aio_img;
static volatile int cb_calls;
static volatile int cb_saw_image;

static void aio_cb(rbd_completion_t c, void *arg)
{
	(void)c;
	(void)arg;
	cb_calls++;
	cb_saw_image = aio_img != NULL;
}

static void aio_one(const char *label, int kind, const char *what,
		    const char *snap)
{
	rbd_completion_t c;
	int r;

	aio_img = (rbd_image_t)0x1;	/* must be overwritten */
	cb_calls = 0;
	rbd_aio_create_completion(NULL, aio_cb, &c);
	switch (kind) {
	case 0: r = rbd_aio_open(io, what, &aio_img, snap, c); break;
	case 1: r = rbd_aio_open_by_id(io, what, &aio_img, snap, c); break;
	case 2: r = rbd_aio_open_read_only(io, what, &aio_img, snap, c); break;
	default: r = rbd_aio_open_by_id_read_only(io, what, &aio_img, snap, c); break;
	}
	printf("%s submit r=%d\n", label, r);
	if (r < 0) {
		rbd_aio_release(c);
		return;
	}
	rbd_aio_wait_for_complete(c);
	/* The callback runs before the completion counts as complete. */
	printf("%s rval=%zd cb_calls=%d image=%s cb_saw_image=%d\n", label,
	       rbd_aio_get_return_value(c), cb_calls,
	       aio_img == NULL ? "NULL" : aio_img == (rbd_image_t)0x1 ? "unset"
								     : "set",
	       cb_saw_image);
	rbd_aio_release(c);
	if (aio_img && aio_img != (rbd_image_t)0x1) {
		char name[256];
		size_t len = sizeof(name);
		uint64_t size = 0;
		int rn = rbd_get_name(aio_img, name, &len);

		rbd_get_size(aio_img, &size);
		printf("%s get_name r=%d name=%s size=%" PRIu64 "\n", label, rn,
		       rn == 0 ? mask(name) : "-", size);
		char buf[512];

		memset(buf, 0x3c, sizeof(buf));
		ssize_t w = rbd_write(aio_img, 4096, sizeof(buf), buf);

		printf("%s write r=%zd\n", label, w < 0 ? w : (ssize_t)(w > 0));
		rbd_aio_create_completion(NULL, aio_cb, &c);
		cb_calls = 0;
		r = rbd_aio_close(aio_img, c);
		printf("%s aio_close submit r=%d\n", label, r);
		if (r == 0) {
			rbd_aio_wait_for_complete(c);
			printf("%s aio_close rval=%zd cb_calls=%d\n", label,
			       rbd_aio_get_return_value(c), cb_calls);
		}
		rbd_aio_release(c);
	}
}

static void do_aio(void)
{
	rbd_image_t im = open_img(img_name, NULL, false);
	char id[64];

	rbd_get_id(im, id, sizeof(id));
	printf("snap_create a1 r=%d\n", rbd_snap_create(im, "a1"));
	rbd_close(im);
	aio_one("aio_open", 0, img_name, NULL);
	aio_one("aio_open snap", 0, img_name, "a1");
	aio_one("aio_open \"\" snap", 0, img_name, "");
	aio_one("aio_open_by_id", 1, id, NULL);
	aio_one("aio_open_read_only", 2, img_name, NULL);
	aio_one("aio_open_by_id_read_only", 3, id, "a1");
	aio_one("aio_open missing", 0, "no-such-image-here", NULL);
	aio_one("aio_open missing snap", 0, img_name, "nosnap");
	aio_one("aio_open_by_id missing", 1, "0123456789ab", NULL);
	aio_one("aio_open_read_only missing", 2, "no-such-image-here", NULL);

	/* The caller's ioctx may go as soon as the call returns. */
	rados_ioctx_t io2;
	char pool[256];
	rbd_completion_t c;

	rados_ioctx_get_pool_name(io, pool, sizeof(pool));
	rados_ioctx_create(cl, pool, &io2);
	rbd_aio_create_completion(NULL, aio_cb, &c);
	aio_img = NULL;
	int r = rbd_aio_open(io2, img_name, &aio_img, NULL, c);

	rados_ioctx_destroy(io2);
	rbd_aio_wait_for_complete(c);
	printf("aio_open ioctx gone submit r=%d rval=%zd\n", r,
	       rbd_aio_get_return_value(c));
	rbd_aio_release(c);
	if (aio_img) {
		uint64_t size = 0;

		printf("  size r=%d\n", rbd_get_size(aio_img, &size));
		rbd_close(aio_img);
	}
	im = open_img(img_name, NULL, false);
	printf("snap_remove a1 r=%d\n", rbd_snap_remove(im, "a1"));
	rbd_close(im);
}

/* ---- rename ---------------------------------------------------------------------------- */

static void do_rename(const char *dst)
{
	char tmp[512];
	rbd_image_t im;
	int r;

	snprintf(tmp, sizeof(tmp), "%s-renamed", img_name);
	r = rbd_rename(io, img_name, tmp);
	printf("rename to -renamed r=%d\n", r);
	r = rbd_open(io, img_name, &im, NULL);
	printf("open old name r=%d\n", r);
	if (r == 0)
		rbd_close(im);
	r = rbd_open(io, tmp, &im, NULL);
	printf("open new name r=%d\n", r);
	if (r == 0) {
		print_name("renamed", im);
		rbd_close(im);
	}
	r = rbd_rename(io, tmp, dst);
	printf("rename onto existing r=%d\n", r);
	r = rbd_rename(io, tmp, tmp);
	printf("rename onto itself r=%d\n", r);
	r = rbd_rename(io, "no-such-image-here", "whatever-name");
	printf("rename missing r=%d\n", r);
	/* An image held open by this client keeps working. */
	im = open_img(tmp, NULL, false);
	r = rbd_rename(io, tmp, img_name);
	printf("rename back (held open) r=%d\n", r);
	char buf[4096];

	memset(buf, 0x5a, sizeof(buf));
	printf("write after rename r=%zd\n", rbd_write(im, 0, sizeof(buf), buf));
	print_name("held", im);
	rbd_close(im);
	im = open_img(img_name, NULL, false);
	print_name("back", im);
	rbd_close(im);
	r = rbd_open(io, tmp, &im, NULL);
	printf("open -renamed after rename back r=%d\n", r);
	if (r == 0)
		rbd_close(im);
}

/* ---- remove -------------------------------------------------------------------------- */

static void do_remove(void)
{
	struct prog_state p;
	rbd_image_t im;
	int r;

	im = open_img(img_name, NULL, false);
	printf("snap_create r1 r=%d\n", rbd_snap_create(im, "r1"));
	rbd_close(im);
	p = (struct prog_state){ 0 };
	r = rbd_remove_with_progress(io, img_name, prog_cb, &p);
	print_prog("remove with snapshot", r, &p);
	im = open_img(img_name, NULL, false);
	printf("snap_remove r1 r=%d\n", rbd_snap_remove(im, "r1"));
	/* Watched by us: busy. */
	p = (struct prog_state){ 0 };
	r = rbd_remove_with_progress(io, img_name, prog_cb, &p);
	print_prog("remove while open", r, &p);
	rbd_close(im);
	p = (struct prog_state){ .stop_at = 2, .stop_with = -33 };
	r = rbd_remove_with_progress(io, img_name, prog_cb, &p);
	print_prog("remove cancelled", r, &p);
	r = rbd_open(io, img_name, &im, NULL);
	printf("open after cancelled remove r=%d\n", r);
	if (r == 0)
		rbd_close(im);
}

/* The removal a cancelled one left behind, finished. */
static void do_remove2(void)
{
	struct prog_state p;
	rbd_image_t im;
	int r;

	p = (struct prog_state){ 0 };
	r = rbd_remove_with_progress(io, img_name, prog_cb, &p);
	print_prog("remove", r, &p);
	r = rbd_open(io, img_name, &im, NULL);
	printf("open after remove r=%d\n", r);
	p = (struct prog_state){ 0 };
	r = rbd_remove_with_progress(io, img_name, prog_cb, &p);
	print_prog("remove again", r, &p);
	p = (struct prog_state){ 0 };
	r = rbd_remove_with_progress(io, img_name, NULL, NULL);
	print_prog("remove again NULL cb", r, &p);
}

static void do_hold(const char *file)
{
	rbd_image_t im = open_img(img_name, NULL, false);
	struct stat st;

	printf("holding\n");
	fflush(stdout);
	for (int i = 0; i < 600 && stat(file, &st) < 0; i++)
		usleep(100000);
	printf("close r=%d\n", rbd_close(im));
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s MODE POOL IMAGE [ARG]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	self_path = argv[0];
	img_name = argv[3];
	if (rados_create(&cl, NULL) < 0 || rados_conf_read_file(cl, NULL) < 0 ||
	    rados_conf_parse_env(cl, NULL) < 0 || rados_connect(cl) < 0 ||
	    rados_ioctx_create(cl, argv[2], &io) < 0) {
		printf("connect failed\n");
		return 2;
	}
	snprintf(self_client, sizeof(self_client), "client.%" PRIu64,
		 rados_get_instance_id(cl));
	const char *m = argv[1], *arg = argc > 4 ? argv[4] : "";

	if (!strcmp(m, "seed"))
		do_seed();
	else if (!strcmp(m, "info"))
		do_info();
	else if (!strcmp(m, "meta"))
		do_meta(arg);
	else if (!strcmp(m, "config"))
		do_config();
	else if (!strcmp(m, "locks"))
		do_locks();
	else if (!strcmp(m, "holder"))
		do_holder();
	else if (!strcmp(m, "keeplocks"))
		do_keeplocks();
	else if (!strcmp(m, "iterate"))
		do_iterate();
	else if (!strcmp(m, "resize"))
		do_resize();
	else if (!strcmp(m, "cancelshrink"))
		do_cancelshrink(arg);
	else if (!strcmp(m, "aio"))
		do_aio();
	else if (!strcmp(m, "rename"))
		do_rename(arg);
	else if (!strcmp(m, "remove"))
		do_remove();
	else if (!strcmp(m, "remove2"))
		do_remove2();
	else if (!strcmp(m, "hold"))
		do_hold(arg);
	else {
		fprintf(stderr, "unknown mode %s\n", m);
		return 2;
	}
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return 0;
}
