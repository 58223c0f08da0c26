/*
 * snapapi.c - drive the snapshot calls of the C API on one open image from
 * the command line, built twice from this one source: against librbdlite
 * (snapapi-lite) and against the real librbd (snapapi-librbd).
 * tests/cluster/test-snapapi.sh runs the same command script on twin
 * images, one through each build, and compares the output line for line
 * (then the images themselves, with the rbd CLI).
 *
 *   snapapi [-r] [-s SNAP] POOL IMAGE CMD...
 *
 * -r opens read-only, -s SNAP at a snapshot.  Every command prints one
 * line "CMD ARGS = RET ..." (RET: the call's return value, then what the
 * call returned through its arguments).  Snapshot ids differ between twin
 * images (the pool allocates them), so a snapshot is named in a command
 * by a reference that both runs resolve alike, and ids are printed as such
 * references:
 *   @NAME       the snapshot called NAME (any namespace, rbd_snap_list)
 *   %TYPE:N     the N-th (oldest first, from 0) snapshot of namespace
 *               TYPE (user, group, trash, mirror)
 *   #N          the raw id N (e.g. one that does not exist)
 *   head        SNAPAPI_NOSNAP
 * Commands:
 *   create NAME FLAGS [STOP RET]  rbd_snap_create2; the progress callback
 *                    prints its calls and returns RET from call STOP on
 *   remove NAME FLAGS [STOP RET]  rbd_snap_remove2 (same callback)
 *   rmid REF         rbd_snap_remove_by_id
 *   rollback NAME [STOP RET]      rbd_snap_rollback_with_progress
 *   setid REF        rbd_snap_set_by_id
 *   set NAME|-       rbd_snap_set
 *   rename A B       rbd_snap_rename ("-" passes NULL)
 *   protect N | unprotect N | isprot N   ("-" passes NULL)
 *   getid N          rbd_snap_get_id (prints the id as a reference)
 *   getname REF LEN  rbd_snap_get_name with a LEN-byte buffer
 *   ts REF           rbd_snap_get_timestamp (prints "recent" when the
 *                    time is within the last hour)
 *   limit | setlimit N|max
 *   nstype REF | grpns REF [SIZE] | trashns REF LEN | mirrorns REF [SIZE]
 *   write OFF LEN SEED | read OFF LEN
 *   snaps            rbd_snap_list with each snapshot's namespace type and
 *                    protection
 *   nullcheck        every call with a NULL image handle and with NULL
 *                    arguments: all must be -EINVAL (for librbdlite only:
 *                    librbd crashes on them)
 *   qwatch RET SECS  register a quiesce watcher (rbd_quiesce_watch, looked
 *                    up at run time) that completes every QUIESCE with
 *                    RET, print "  watching", then keep the image open
 *                    for SECS seconds (a second client for the other run)
 *   waitfile PATH SECS  print "  waiting PATH", wait until PATH exists
 *                    (-ETIMEDOUT after SECS seconds)
 *   expect E         the next command must return E
 * Exit status: 0 if no command failed, 1 otherwise, 2 on set-up errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#define SNAPAPI_NOSNAP ((uint64_t)-2)

static rbd_image_t im;

static const char *ns_names[] = { "user", "group", "trash", "mirror" };

/* ---- progress callback ---------------------------------------------------- */

static struct {
	int calls, stop, ret;
	char buf[4096];
	size_t len;
} prog;

static void prog_reset(int stop, int ret)
{
	prog.calls = 0;
	prog.stop = stop;
	prog.ret = ret;
	prog.len = 0;
	prog.buf[0] = 0;
}

static int prog_cb(uint64_t off, uint64_t total, void *arg)
{
	(void)arg;
	if (prog.len < sizeof(prog.buf) - 64)
		prog.len += (size_t)snprintf(prog.buf + prog.len,
					     sizeof(prog.buf) - prog.len,
					     " %" PRIu64 "/%" PRIu64, off,
					     total);
	prog.calls++;
	if (prog.stop >= 0 && prog.calls > prog.stop)
		return prog.ret;
	return 0;
}

static void prog_print(void)
{
	printf(" progress(%d):%s", prog.calls, prog.buf);
}

/* ---- snapshot references ------------------------------------------------- */

static int snap_type(uint64_t id)
{
	rbd_snap_namespace_type_t t;

	if (rbd_snap_get_namespace_type(im, id, &t) < 0)
		return -1;
	return (int)t;
}

/* Resolve a reference; false if it names nothing (then *id = a bogus id). */
static bool resolve(const char *ref, uint64_t *id)
{
	rbd_snap_info_t s[64];
	int max = 64, n;
	bool found = false;

	*id = 0xdeadbeefULL;
	if (!strcmp(ref, "head")) {
		*id = SNAPAPI_NOSNAP;
		return true;
	}
	if (ref[0] == '#') {
		*id = strtoull(ref + 1, NULL, 0);
		return true;
	}
	n = rbd_snap_list(im, s, &max);
	if (n < 0)
		return false;
	if (ref[0] == '@') {
		for (int i = 0; i < n && !found; i++)
			if (!strcmp(s[i].name, ref + 1)) {
				*id = s[i].id;
				found = true;
			}
	} else if (ref[0] == '%') {
		const char *c = strchr(ref, ':');
		int want = c ? atoi(c + 1) : 0, k = 0;

		for (int i = 0; i < n && !found; i++) {
			int t = snap_type(s[i].id);

			if (t >= 0 && t < 4 &&
			    !strncmp(ref + 1, ns_names[t], strlen(ns_names[t])) &&
			    k++ == want) {
				*id = s[i].id;
				found = true;
			}
		}
	}
	rbd_snap_list_end(s);
	return found;
}

/* Print an id the way both runs can agree on. */
static void print_ref(uint64_t id)
{
	rbd_snap_info_t s[64];
	int max = 64, n, counts[4] = { 0 };

	if (id == SNAPAPI_NOSNAP) {
		printf(" head");
		return;
	}
	n = rbd_snap_list(im, s, &max);
	for (int i = 0; i < n; i++) {
		int t = snap_type(s[i].id);

		if (s[i].id == id) {
			if (t == 0)
				printf(" @%s", s[i].name);
			else if (t > 0 && t < 4)
				printf(" %%%s:%d", ns_names[t], counts[t]);
			else
				printf(" ?");
			rbd_snap_list_end(s);
			return;
		}
		if (t >= 0 && t < 4)
			counts[t]++;
	}
	if (n >= 0)
		rbd_snap_list_end(s);
	printf(" unknown-id");
}

/* ---- commands ------------------------------------------------------------- */

static const char *nul(const char *s)
{
	return strcmp(s, "-") ? s : NULL;
}

static uint8_t pattern(uint64_t seed, uint64_t pos)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + (pos >> 3) + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint8_t)(z >> ((pos & 7) * 8));
}

static int cmd_snaps(void)
{
	rbd_snap_info_t s[64];
	int max = 64, n = rbd_snap_list(im, s, &max);

	printf(" = %d\n", n);
	for (int i = 0; i < n; i++) {
		int t = snap_type(s[i].id), prot = -1;

		if (t == 0)
			rbd_snap_is_protected(im, s[i].name, &prot);
		printf("  snap");
		print_ref(s[i].id);
		printf(" size=%" PRIu64 " type=%d prot=%d\n", s[i].size, t,
		       prot);
	}
	if (n >= 0)
		rbd_snap_list_end(s);
	return n < 0 ? n : 0;
}

static void need(int argc, int i, int k)
{
	if (i + k >= argc) {
		fprintf(stderr, "snapapi: missing arguments\n");
		exit(2);
	}
}

static int nullcheck(void)
{
	rbd_snap_group_namespace_t g;
	rbd_snap_mirror_namespace_t m;
	rbd_snap_namespace_type_t t;
	struct timespec ts;
	uint64_t u;
	size_t len = 8;
	char buf[8];
	int p, bad = 0;
	int rs[] = {
		rbd_snap_create2(NULL, "x", 0, NULL, NULL),
		rbd_snap_remove2(NULL, "x", 0, NULL, NULL),
		rbd_snap_remove_by_id(NULL, 1),
		rbd_snap_rollback_with_progress(NULL, "x", NULL, NULL),
		rbd_snap_set_by_id(NULL, 1),
		rbd_snap_rename(NULL, "a", "b"),
		rbd_snap_protect(NULL, "x"),
		rbd_snap_unprotect(NULL, "x"),
		rbd_snap_is_protected(NULL, "x", &p),
		rbd_snap_get_id(NULL, "x", &u),
		rbd_snap_get_name(NULL, 1, buf, &len),
		rbd_snap_get_timestamp(NULL, 1, &ts),
		rbd_snap_get_limit(NULL, &u),
		rbd_snap_set_limit(NULL, 5),
		rbd_snap_get_namespace_type(NULL, 1, &t),
		rbd_snap_get_group_namespace(NULL, 1, &g, sizeof(g)),
		rbd_snap_get_trash_namespace(NULL, 1, buf, sizeof(buf)),
		rbd_snap_get_mirror_namespace(NULL, 1, &m, sizeof(m)),
		/* NULL arguments on a valid handle */
		rbd_snap_create2(im, NULL, 0, NULL, NULL),
		rbd_snap_remove2(im, NULL, 0, NULL, NULL),
		rbd_snap_rollback_with_progress(im, NULL, NULL, NULL),
		rbd_snap_rename(im, NULL, "b"),
		rbd_snap_rename(im, "a", NULL),
		rbd_snap_protect(im, NULL),
		rbd_snap_unprotect(im, NULL),
		rbd_snap_is_protected(im, NULL, &p),
		rbd_snap_is_protected(im, "x", NULL),
		rbd_snap_get_id(im, NULL, &u),
		rbd_snap_get_id(im, "x", NULL),
		rbd_snap_get_name(im, 1, buf, NULL),
		rbd_snap_get_timestamp(im, 1, NULL),
		rbd_snap_get_limit(im, NULL),
		rbd_snap_get_namespace_type(im, 1, NULL),
		rbd_snap_get_group_namespace(im, 1, NULL, sizeof(g)),
		rbd_snap_get_trash_namespace(im, 1, NULL, 8),
		rbd_snap_get_mirror_namespace(im, 1, NULL, sizeof(m)),
		/* a timestamp of a snapshot that does not exist (librbd
		 * asserts) */
		rbd_snap_get_timestamp(im, 0xdeadbeefULL, &ts),
		rbd_snap_group_namespace_cleanup(NULL, sizeof(g)),
		rbd_snap_mirror_namespace_cleanup(NULL, sizeof(m)),
	};

	printf(" =");
	for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
		printf(" %d", rs[i]);
		if (rs[i] != -EINVAL && !(i == 36 && rs[i] == -ENOENT))
			bad++;
	}
	printf("\n");
	return bad ? -EIO : 0;
}

static int qwatch_ret;
static uint64_t qwatch_handle;

typedef int (*qwatch_fn)(rbd_image_t, rbd_update_callback_t,
			 rbd_update_callback_t, void *, uint64_t *);
typedef void (*qcomplete_fn)(rbd_image_t, uint64_t, int);

static void on_quiesce(void *arg)
{
	qcomplete_fn done = (qcomplete_fn)dlsym(RTLD_DEFAULT,
						"rbd_quiesce_complete");

	(void)arg;
	if (done)
		done(im, qwatch_handle, qwatch_ret);
}

static void on_unquiesce(void *arg)
{
	(void)arg;
}

static int qwatch(int ret, int secs)
{
	qwatch_fn w = (qwatch_fn)dlsym(RTLD_DEFAULT, "rbd_quiesce_watch");
	int r;

	if (!w)
		return -ENOSYS;
	qwatch_ret = ret;
	r = w(im, on_quiesce, on_unquiesce, NULL, &qwatch_handle);
	printf("qwatch %d = %d\n  watching\n", ret, r);
	if (r == 0)
		sleep((unsigned)secs);
	return r;
}

static int run(int argc, char **argv, int i, int *used)
{
	const char *c = argv[i];
	uint64_t id;
	int r;

	*used = 1;
	if (!strcmp(c, "create") || !strcmp(c, "remove")) {
		need(argc, i, 2);
		int stop = -1, ret = 0;
		uint32_t flags = (uint32_t)strtoul(argv[i + 2], NULL, 0);

		*used = 3;
		if (i + 4 < argc && strchr("0123456789", argv[i + 3][0]) &&
		    argv[i + 4][0] == '-') {
			stop = atoi(argv[i + 3]);
			ret = atoi(argv[i + 4]);
			*used = 5;
		}
		printf("%s %s %s", c, argv[i + 1], argv[i + 2]);
		prog_reset(stop, ret);
		if (c[0] == 'c')
			r = rbd_snap_create2(im, nul(argv[i + 1]), flags,
					     prog_cb, NULL);
		else
			r = rbd_snap_remove2(im, nul(argv[i + 1]), flags,
					     prog_cb, NULL);
		printf(" = %d", r);
		prog_print();
		printf("\n");
		return r;
	}
	if (!strcmp(c, "rollback")) {
		need(argc, i, 1);
		int stop = -1, ret = 0;

		*used = 2;
		if (i + 3 < argc && strchr("0123456789", argv[i + 2][0]) &&
		    argv[i + 3][0] == '-') {
			stop = atoi(argv[i + 2]);
			ret = atoi(argv[i + 3]);
			*used = 4;
		}
		prog_reset(stop, ret);
		r = rbd_snap_rollback_with_progress(im, nul(argv[i + 1]),
						    prog_cb, NULL);
		printf("rollback %s = %d", argv[i + 1], r);
		prog_print();
		printf("\n");
		return r;
	}
	if (!strcmp(c, "rmid") || !strcmp(c, "setid") || !strcmp(c, "ts") ||
	    !strcmp(c, "nstype")) {
		need(argc, i, 1);
		*used = 2;
		bool ok = resolve(argv[i + 1], &id);

		printf("%s %s%s", c, argv[i + 1], ok ? "" : " (unresolved)");
		if (c[0] == 'r') {
			r = rbd_snap_remove_by_id(im, id);
			printf(" = %d\n", r);
		} else if (c[0] == 's') {
			r = rbd_snap_set_by_id(im, id);
			uint64_t size = 0;

			rbd_get_size(im, &size);
			printf(" = %d size=%" PRIu64 "\n", r, size);
		} else if (c[0] == 't') {
			struct timespec ts = { 0, 0 };

			r = rbd_snap_get_timestamp(im, id, &ts);
			printf(" = %d %s\n", r,
			       ts.tv_sec > time(NULL) - 3600 &&
					       ts.tv_sec <= time(NULL)
				       ? "recent"
				       : "not-recent");
		} else {
			rbd_snap_namespace_type_t t = 77;

			r = rbd_snap_get_namespace_type(im, id, &t);
			printf(" = %d type=%d\n", r, (int)t);
		}
		return r;
	}
	if (!strcmp(c, "set")) {
		need(argc, i, 1);
		*used = 2;
		r = rbd_snap_set(im, nul(argv[i + 1]));
		uint64_t size = 0;

		rbd_get_size(im, &size);
		printf("set %s = %d size=%" PRIu64 "\n", argv[i + 1], r, size);
		return r;
	}
	if (!strcmp(c, "rename")) {
		need(argc, i, 2);
		*used = 3;
		r = rbd_snap_rename(im, nul(argv[i + 1]), nul(argv[i + 2]));
		printf("rename %s %s = %d\n", argv[i + 1], argv[i + 2], r);
		return r;
	}
	if (!strcmp(c, "protect") || !strcmp(c, "unprotect") ||
	    !strcmp(c, "isprot") || !strcmp(c, "getid")) {
		need(argc, i, 1);
		*used = 2;
		const char *n = nul(argv[i + 1]);

		printf("%s %s", c, argv[i + 1]);
		if (!strcmp(c, "protect")) {
			r = rbd_snap_protect(im, n);
			printf(" = %d\n", r);
		} else if (!strcmp(c, "unprotect")) {
			r = rbd_snap_unprotect(im, n);
			printf(" = %d\n", r);
		} else if (!strcmp(c, "isprot")) {
			int p = 77;

			r = rbd_snap_is_protected(im, n, &p);
			printf(" = %d prot=%d\n", r, p);
		} else {
			uint64_t v = 0xdeadbeefULL;

			r = rbd_snap_get_id(im, n, &v);
			printf(" = %d", r);
			if (r == 0)
				print_ref(v);
			else
				printf(" %s", v == 0xdeadbeefULL ? "untouched"
								: "changed");
			printf("\n");
		}
		return r;
	}
	if (!strcmp(c, "getname") || !strcmp(c, "trashns")) {
		need(argc, i, 2);
		*used = 3;
		bool ok = resolve(argv[i + 1], &id);
		size_t len = strtoul(argv[i + 2], NULL, 0), l0 = len;
		char buf[256];

		memset(buf, 'Z', sizeof(buf));
		if (len > sizeof(buf))
			len = l0 = sizeof(buf);
		printf("%s %s %s%s", c, argv[i + 1], argv[i + 2],
		       ok ? "" : " (unresolved)");
		if (c[0] == 'g') {
			r = rbd_snap_get_name(im, id, buf, &len);
			printf(" = %d len=%zu", r, len);
		} else {
			r = rbd_snap_get_trash_namespace(im, id, buf, len);
			printf(" = %d", r);
		}
		if (r == 0 || (c[0] == 'g' && l0 > 0 && buf[0] != 'Z')) {
			/* trash names are uuids: print the length and the
			 * original name's shape only */
			size_t n = strnlen(buf, l0);

			if (c[0] == 'g' && snap_type(id) == 2)
				printf(" name-len=%zu", n);
			else
				printf(" name=%.*s", (int)n, buf);
		}
		printf("\n");
		return r;
	}
	if (!strcmp(c, "grpns") || !strcmp(c, "mirrorns")) {
		need(argc, i, 1);
		*used = 2;
		size_t size = c[0] == 'g' ? sizeof(rbd_snap_group_namespace_t)
					  : sizeof(rbd_snap_mirror_namespace_t);

		if (i + 2 < argc && strchr("0123456789", argv[i + 2][0])) {
			size = strtoul(argv[i + 2], NULL, 0);
			*used = 3;
		}
		bool ok = resolve(argv[i + 1], &id);

		printf("%s %s %zu%s", c, argv[i + 1], size,
		       ok ? "" : " (unresolved)");
		if (c[0] == 'g') {
			rbd_snap_group_namespace_t g;

			memset(&g, 0, sizeof(g));
			r = rbd_snap_get_group_namespace(im, id, &g, size);
			printf(" = %d", r);
			if (r == 0) {
				printf(" pool=%s group=%s snap=%s",
				       g.group_pool >= 0 ? "ok" : "bad",
				       g.group_name, g.group_snap_name);
				printf(" cleanup=%d",
				       rbd_snap_group_namespace_cleanup(
					       &g, size));
			}
			printf(" badcleanup=%d",
			       rbd_snap_group_namespace_cleanup(&g, size + 1));
		} else {
			rbd_snap_mirror_namespace_t m;

			memset(&m, 0, sizeof(m));
			r = rbd_snap_get_mirror_namespace(im, id, &m, size);
			printf(" = %d", r);
			if (r == 0) {
				printf(" state=%d complete=%d peers=%zu:",
				       (int)m.state, (int)m.complete,
				       m.mirror_peer_uuids_count);
				const char *pp = m.mirror_peer_uuids;

				for (size_t k = 0; k < m.mirror_peer_uuids_count;
				     k++, pp += strlen(pp) + 1)
					printf("%s%s", k ? "," : "", pp);
				printf(" primary-uuid-len=%zu primary-snap=%s"
				       " copied=%" PRIu64,
				       strlen(m.primary_mirror_uuid),
				       m.primary_snap_id == SNAPAPI_NOSNAP
					       ? "none"
					       : "set",
				       m.last_copied_object_number);
				printf(" cleanup=%d",
				       rbd_snap_mirror_namespace_cleanup(
					       &m, size));
			}
			printf(" badcleanup=%d",
			       rbd_snap_mirror_namespace_cleanup(&m, size + 1));
		}
		printf("\n");
		return r;
	}
	if (!strcmp(c, "limit")) {
		uint64_t v = 0;

		r = rbd_snap_get_limit(im, &v);
		printf("limit = %d %" PRIu64 "\n", r, v);
		return r;
	}
	if (!strcmp(c, "setlimit")) {
		need(argc, i, 1);
		*used = 2;
		uint64_t v = strcmp(argv[i + 1], "max")
				     ? strtoull(argv[i + 1], NULL, 0)
				     : UINT64_MAX;

		r = rbd_snap_set_limit(im, v);
		printf("setlimit %s = %d\n", argv[i + 1], r);
		return r;
	}
	if (!strcmp(c, "write") || !strcmp(c, "read")) {
		need(argc, i, c[0] == 'w' ? 3 : 2);
		*used = c[0] == 'w' ? 4 : 3;
		uint64_t off = strtoull(argv[i + 1], NULL, 0);
		size_t len = strtoul(argv[i + 2], NULL, 0);
		char *b = malloc(len ? len : 1);

		if (!b)
			return -ENOMEM;
		if (c[0] == 'w') {
			uint64_t seed = strtoull(argv[i + 3], NULL, 0);

			for (size_t k = 0; k < len; k++)
				b[k] = (char)pattern(seed, off + k);
			ssize_t w = rbd_write(im, off, len, b);

			r = w < 0 ? (int)w : 0;
			printf("write %s %s %s = %zd\n", argv[i + 1],
			       argv[i + 2], argv[i + 3], w);
		} else {
			ssize_t n = rbd_read(im, off, len, b);
			uint64_t h = 0xcbf29ce484222325ull;

			for (ssize_t k = 0; k < n; k++)
				h = (h ^ (uint8_t)b[k]) * 0x100000001b3ull;
			r = n < 0 ? (int)n : 0;
			printf("read %s %s = %zd fnv=%016" PRIx64 "\n",
			       argv[i + 1], argv[i + 2], n, h);
		}
		free(b);
		return r;
	}
	if (!strcmp(c, "waitfile")) {
		need(argc, i, 2);
		*used = 3;
		int secs = atoi(argv[i + 2]);

		printf("  waiting %s\n", argv[i + 1]);
		for (int k = 0; k < secs * 10; k++) {
			if (access(argv[i + 1], F_OK) == 0) {
				printf("waitfile = 0\n");
				return 0;
			}
			usleep(100000);
		}
		printf("waitfile = %d\n", -ETIMEDOUT);
		return -ETIMEDOUT;
	}
	if (!strcmp(c, "qwatch")) {
		need(argc, i, 2);
		*used = 3;
		return qwatch(atoi(argv[i + 1]), atoi(argv[i + 2]));
	}
	if (!strcmp(c, "snaps")) {
		printf("snaps");
		return cmd_snaps();
	}
	if (!strcmp(c, "nullcheck")) {
		printf("nullcheck");
		return nullcheck();
	}
	fprintf(stderr, "snapapi: unknown command %s\n", c);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *snap = NULL;
	bool ro = false;
	int i = 1, failed = 0;
	rados_t cluster;
	rados_ioctx_t io;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "-r"))
			ro = true;
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			snap = argv[++i];
		else
			break;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: snapapi [-r] [-s SNAP] POOL IMAGE CMD...\n");
		return 2;
	}
	if (rados_create(&cluster, NULL) < 0 ||
	    rados_conf_read_file(cluster, NULL) < 0 ||
	    rados_conf_parse_env(cluster, NULL) < 0 ||
	    rados_connect(cluster) < 0) {
		fprintf(stderr, "snapapi: cannot connect\n");
		return 2;
	}
	if (rados_ioctx_create(cluster, argv[i], &io) < 0) {
		fprintf(stderr, "snapapi: no pool %s\n", argv[i]);
		return 2;
	}
	int r = ro ? rbd_open_read_only(io, argv[i + 1], &im, snap)
		   : rbd_open(io, argv[i + 1], &im, snap);

	if (r < 0) {
		printf("open = %d\n", r);
		return 2;
	}
	int expect = 0;

	for (i += 2; i < argc;) {
		int used;

		if (!strcmp(argv[i], "expect")) {
			need(argc, i, 1);
			expect = atoi(argv[i + 1]);
			i += 2;
			continue;
		}
		r = run(argc, argv, i, &used);
		i += used;
		if (r < 0 && r != expect) {
			printf("  FAILED: unexpected %d\n", r);
			failed = 1;
		} else if (expect && r != expect) {
			printf("  FAILED: expected %d\n", expect);
			failed = 1;
		}
		expect = 0;
	}
	rbd_close(im);
	rados_ioctx_destroy(io);
	rados_shutdown(cluster);
	return failed;
}
