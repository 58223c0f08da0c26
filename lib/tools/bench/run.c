/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * run.c - the parent's side of a child: finding the libraries and the
 * allocator-call counter, building each child's environment and argument
 * list, running it (fork + exec of this program with --child...), reading
 * its records, and the two special children: the image probe and the
 * prefill.
 *
 * A child gets the user's arguments unchanged plus the hidden --child*
 * ones, and the write end of a pipe as fd 3.  Its stdout is redirected to
 * stderr: stdout carries only the parent's report.
 *
 * Threading: the parent is single-threaded and runs one child at a time,
 * so blocks never overlap.  Never load an rbd library or jemalloc into the
 * parent: each child must start from a clean process.
 *
 * Ownership: struct parent's paths are fixed buffers; the layouts array is
 * allocated by probe_images() and freed by the caller.  Argument arrays
 * built with add_str belong to whoever built them.
 */
#include "bench.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* A sanitizer runtime must come first in the library list: nothing may be
 * preloaded in front of it, so a sanitized build counts no allocator calls. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif

#define MALLOCCOUNT_SO "librbdlite-malloccount.so"
#define LITE_SO "librbdlite.so.0"
#define LIBRBD_SO "librbd.so.1"
#define JEMALLOC_FALLBACK "libjemalloc.so.2"

extern char **environ;

/* ---- finding the libraries ---------------------------------------------- */

static int file_exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void exe_dir(char *buf, size_t n)
{
	ssize_t len = readlink("/proc/self/exe", buf, n - 1);
	char *slash;

	if (len < 0) {
		buf[0] = '\0';
		return;
	}
	buf[len] = '\0';
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

/*
 * First existing file among: rel (NULL-terminated "%s/..." formats over
 * the executable's directory: the build tree), installed (may be NULL),
 * then rel2 (the same, for an installation moved as a whole).
 */
static int find_lib(char *out, size_t n, const char *dir,
		    const char *const *rel, const char *installed,
		    const char *const *rel2)
{
	for (int i = 0; dir[0] && rel[i]; i++) {
		if (snprintf(out, n, rel[i], dir) >= (int)n)
			continue;
		if (file_exists(out))
			return 1;
	}
	if (installed && file_exists(installed)) {
		snprintf(out, n, "%s", installed);
		return 1;
	}
	return rel2 && find_lib(out, n, dir, rel2, NULL, NULL);
}

/* The path named by an option, else by an environment variable: the name
 * of the one used, or NULL. */
static const char *user_lib(char *out, size_t n, const char *opt,
			    const char *optname, const char *envname)
{
	const char *env = getenv(envname);

	if (opt) {
		snprintf(out, n, "%s", opt);
		return optname;
	}
	if (env && *env) {
		snprintf(out, n, "%s", env);
		return envname;
	}
	return NULL;
}

/* librbdlite: --lite-lib, $RBDLITE_LIB, the build tree, installed, or
 * whatever the dynamic linker finds. */
static void resolve_lite(struct parent *P, const char *dir)
{
	static const char *const rel[] = {
		"%s/../.libs/" LITE_SO,		/* build tree: lib/tools/ */
		"%s/../lib/.libs/" LITE_SO,
		NULL
	};
	static const char *const rel2[] = { "%s/../lib/" LITE_SO, NULL };
#ifdef RBDLITE_LIBDIR
	const char *inst = RBDLITE_LIBDIR "/" LITE_SO;
#else
	const char *inst = NULL;
#endif
	if (!user_lib(P->lite_lib, sizeof(P->lite_lib), P->o->lite_lib,
		      "--lite-lib", "RBDLITE_LIB") &&
	    !find_lib(P->lite_lib, sizeof(P->lite_lib), dir, rel, inst, rel2))
		/* let the dynamic linker search */
		snprintf(P->lite_lib, sizeof(P->lite_lib), "%s", LITE_SO);
	P->have_lite = 1;
}

#ifdef BENCH_SANITIZED
static void resolve_mc(struct parent *P, const char *dir)
{
	(void)dir;
	warnx_("sanitizer build: allocator calls are not counted");
	if (P->o->jemalloc)
		die("--jemalloc cannot be used with a sanitizer build");
}
#else
/* The allocator-call counter: optional, but a path given must exist. */
static void resolve_mc(struct parent *P, const char *dir)
{
	static const char *const rel[] = {
		"%s/.libs/" MALLOCCOUNT_SO,	/* build tree */
		"%s/" MALLOCCOUNT_SO,
		NULL
	};
	static const char *const rel2[] = {
		"%s/../lib/librbdlite/" MALLOCCOUNT_SO, NULL
	};
#ifdef RBDLITE_PKGLIBDIR
	const char *inst = RBDLITE_PKGLIBDIR "/" MALLOCCOUNT_SO;
#else
	const char *inst = NULL;
#endif
	const char *src = user_lib(P->mc_lib, sizeof(P->mc_lib),
				   P->o->malloccount_lib, "--malloccount-lib",
				   "RBDLITE_MALLOCCOUNT_LIB");

	if (src) {
		P->have_mc = file_exists(P->mc_lib);
		if (!P->have_mc)
			die("%s: %s not found", src, P->mc_lib);
		return;
	}
	P->have_mc = find_lib(P->mc_lib, sizeof(P->mc_lib), dir, rel, inst,
			      rel2);
	if (!P->have_mc)
		warnx_("%s not found: allocator calls will not be counted "
		       "(use --malloccount-lib or RBDLITE_MALLOCCOUNT_LIB)",
		       MALLOCCOUNT_SO);
}
#endif

/* Canonical paths, so that the children's LD_PRELOAD and --child-lib do
 * not depend on the working directory. */
static void canonical_paths(struct parent *P)
{
	char *rp;

	if (P->have_mc && (rp = realpath(P->mc_lib, NULL))) {
		snprintf(P->mc_lib, sizeof(P->mc_lib), "%s", rp);
		free(rp);
	}
	if (strchr(P->lite_lib, '/')) {
		rp = realpath(P->lite_lib, NULL);
		if (!rp)
			die("librbdlite %s: %s", P->lite_lib, strerror(errno));
		snprintf(P->lite_lib, sizeof(P->lite_lib), "%s", rp);
		free(rp);
	}
}

void resolve_paths(struct parent *P)
{
	char dir[PATH_MAX];

	if (readlink("/proc/self/exe", P->exe, sizeof(P->exe) - 1) < 0)
		die("cannot find my own executable: %s", strerror(errno));
	exe_dir(dir, sizeof(dir));
	resolve_lite(P, dir);
	P->librbd_lib = P->o->librbd_lib ? P->o->librbd_lib : LIBRBD_SO;
	resolve_mc(P, dir);
	canonical_paths(P);

#ifdef RBDLITE_JEMALLOC_SO
	P->jemalloc_so = file_exists(RBDLITE_JEMALLOC_SO) ? RBDLITE_JEMALLOC_SO
							  : JEMALLOC_FALLBACK;
#else
	P->jemalloc_so = JEMALLOC_FALLBACK;
#endif
	if (P->o->jemalloc) {
		void *h = dlopen(P->jemalloc_so,
				 RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);

		/* Only check that it exists; never load it into the parent. */
		if (h)
			dlclose(h);
		else if (strchr(P->jemalloc_so, '/') &&
			 !file_exists(P->jemalloc_so))
			die("--jemalloc: %s not found", P->jemalloc_so);
	}
}

/* ---- running a child ---------------------------------------------------- */

/* The parent's environment with LD_PRELOAD = counter, jemalloc, the
 * user's LD_PRELOAD.  Only the LD_PRELOAD entry is allocated. */
static char **build_env(const struct parent *P, int jemalloc)
{
	size_t n = 0, k = 0;
	char **env;
	const char *old = getenv("LD_PRELOAD");
	size_t len;
	char *pre;

	while (environ[n])
		n++;
	env = xcalloc(n + 2, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[k++] = environ[i];
	len = 32 + strlen(P->mc_lib) + strlen(P->jemalloc_so) +
	      (old ? strlen(old) : 0);
	pre = xcalloc(1, len);
	strcpy(pre, "LD_PRELOAD=");
	/* the counter first, so it sees every call, then the allocator */
	if (P->have_mc)
		strcat(pre, P->mc_lib);
	if (jemalloc) {
		if (P->have_mc)
			strcat(pre, ":");
		strcat(pre, P->jemalloc_so);
	}
	if (old && *old) {
		if (pre[11])
			strcat(pre, ":");
		strcat(pre, old);
	}
	if (pre[11])
		env[k++] = pre;
	else
		free(pre);
	env[k] = NULL;
	return env;
}

static void free_env(char **env)
{
	for (size_t i = 0; env[i]; i++)
		if (!strncmp(env[i], "LD_PRELOAD=", 11)) {
			free(env[i]);
			break;
		}
	free(env);
}

/* fork + exec this program with the user's arguments plus extra; *fd is
 * the read end of the child's record pipe. */
static pid_t spawn_child(struct parent *P, int jemalloc, char **extra,
			 int nextra, int *fd)
{
	int pfd[2], argc = 0;
	char **argv, **env;
	pid_t pid;

	argv = xcalloc((size_t)(P->argc + nextra + 2), sizeof(*argv));
	argv[argc++] = P->argv[0];
	for (int i = 1; i < P->argc; i++)
		argv[argc++] = P->argv[i];
	for (int i = 0; i < nextra; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	env = build_env(P, jemalloc);

	if (pipe2(pfd, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		/* the write end becomes fd 3 without O_CLOEXEC */
		if (pfd[1] == 3) {
			if (fcntl(3, F_SETFD, 0) < 0)
				_exit(127);
		} else if (dup2(pfd[1], 3) < 0) {
			_exit(127);
		}
		/* stdout is for the report: library chatter goes to stderr */
		dup2(2, 1);
		execve(P->exe, argv, env);
		_exit(127);
	}
	close(pfd[1]);
	free(argv);
	free_env(env);
	*fd = pfd[0];
	return pid;
}

/*
 * Read and dispatch the child's records until EOF.  Returns 0 at EOF, -1
 * on a timeout or a bad record (the child is killed, cb->errmsg set).
 * *got_result / *got_error say what arrived.
 */
static int read_records(struct parent *P, pid_t pid, int fd, double timeout,
			struct child_cb *cb, int *got_result, int *got_error)
{
	uint64_t deadline = timeout > 0 ?
			    now_ns() + (uint64_t)(timeout * 1e9) : 0;
	union {
		struct progress_rec p;
		struct info_rec i;
		struct error_rec e;
	} small;

	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		struct rec_hdr h;
		int r, wait_ms = 1000;

		if (deadline) {
			uint64_t now = now_ns();

			if (now >= deadline) {
				kill(pid, SIGKILL);
				snprintf(cb->errmsg, sizeof(cb->errmsg),
					 "timed out after %.0f s (see --timeout)",
					 timeout);
				return -1;
			}
			if ((deadline - now) / 1000000 < (uint64_t)wait_ms)
				wait_ms = (int)((deadline - now) / 1000000) + 1;
		}
		r = poll(&pf, 1, wait_ms);
		if (r < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		r = read_full(fd, &h, sizeof(h));
		if (r == 0)
			return 0;
		if (r < 0) {
			snprintf(cb->errmsg, sizeof(cb->errmsg),
				 "reading from the child: %s", strerror(-r));
			return -1;
		}
		if (h.type == REC_RESULT &&
		    h.len == sizeof(struct result_rec)) {
			r = read_full(fd, cb->result, h.len);
			*got_result = r == 1;
		} else if ((h.type == REC_PROGRESS &&
			    h.len == sizeof(small.p)) ||
			   (h.type == REC_INFO && h.len == sizeof(small.i)) ||
			   (h.type == REC_ERROR && h.len == sizeof(small.e))) {
			r = read_full(fd, &small, h.len);
			if (r == 1 && h.type == REC_PROGRESS && cb->progress)
				cb->progress(P, &small.p, cb->arg);
			if (r == 1 && h.type == REC_INFO && cb->info)
				cb->info(P, &small.i, cb->arg);
			if (r == 1 && h.type == REC_ERROR) {
				small.e.msg[sizeof(small.e.msg) - 1] = '\0';
				snprintf(cb->errmsg, sizeof(cb->errmsg), "%s",
					 small.e.msg);
				cb->err = small.e.err;
				*got_error = 1;
			}
		} else {
			r = -EPROTO;
		}
		if (r != 1) {
			snprintf(cb->errmsg, sizeof(cb->errmsg),
				 "bad record from the child (type %u, %u bytes)",
				 h.type, h.len);
			kill(pid, SIGKILL);
			return -1;
		}
	}
}

/*
 * Run this program as a child with the user's arguments plus extra ones,
 * and dispatch its records.  Returns 0 on success, -1 on failure with
 * cb->errmsg set.
 */
int run_child(struct parent *P, int jemalloc, char **extra, int nextra,
	      double timeout, struct child_cb *cb)
{
	int fd, status, got_result = 0, got_error = 0;
	pid_t pid = spawn_child(P, jemalloc, extra, nextra, &fd);
	int ret = read_records(P, pid, fd, timeout, cb, &got_result,
			       &got_error);

	close(fd);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (ret < 0)
		return ret;
	if (got_error)
		return -1;
	if (WIFSIGNALED(status)) {
		snprintf(cb->errmsg, sizeof(cb->errmsg),
			 "child killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
		return -1;
	}
	if (WEXITSTATUS(status) != 0) {
		snprintf(cb->errmsg, sizeof(cb->errmsg),
			 "child exited with status %d%s", WEXITSTATUS(status),
			 WEXITSTATUS(status) == 127 ? " (exec failed?)" : "");
		return -1;
	}
	if (cb->result && !got_result) {
		snprintf(cb->errmsg, sizeof(cb->errmsg),
			 "child sent no result");
		return -1;
	}
	return 0;
}

/* --child=BACKEND and, for the rbd backends, --child-lib=LIBRARY */
void add_child_args(const struct parent *P, char ***extra, int *n,
		    int backend)
{
	const char *lib = backend == BE_LITE ? P->lite_lib :
			  backend == BE_LIBRBD ? P->librbd_lib : NULL;
	char buf[PATH_MAX + 32];

	snprintf(buf, sizeof(buf), "--child=%s", be_name[backend]);
	add_str(extra, n, buf);
	if (lib) {
		snprintf(buf, sizeof(buf), "--child-lib=%s", lib);
		add_str(extra, n, buf);
	}
}

/* ---- image info --------------------------------------------------------- */

static void on_info(struct parent *P, const struct info_rec *r, void *arg)
{
	int *got = arg;

	if (r->idx >= 0 && r->idx < P->o->nimages) {
		P->layouts[r->idx] = r->l;
		P->layouts[r->idx].prefix[sizeof(r->l.prefix) - 1] = '\0';
		(*got)++;
	}
}

/*
 * Read every image's layout in a child, through librbdlite or, should that
 * fail, librbd (the one being measured first); die if neither can.
 */
void probe_images(struct parent *P)
{
	struct opts *o = P->o;
	int order[2], n = 0;
	char msgs[2][600];

	/* librbdlite first unless only librbd is being measured */
	if (opts_has_backend(o, BE_LIBRBD) && !opts_has_backend(o, BE_LITE)) {
		order[n++] = BE_LIBRBD;
		order[n++] = BE_LITE;
	} else {
		order[n++] = BE_LITE;
		order[n++] = BE_LIBRBD;
	}
	P->layouts = xcalloc((size_t)o->nimages, sizeof(*P->layouts));
	for (int k = 0; k < n; k++) {
		struct child_cb cb;
		char **extra = NULL;
		int nextra = 0, got = 0, r;

		memset(&cb, 0, sizeof(cb));
		cb.info = on_info;
		cb.arg = &got;
		add_child_args(P, &extra, &nextra, order[k]);
		add_str(&extra, &nextra, "--child-info");
		add_str(&extra, &nextra, "--child-fd=3");
		r = run_child(P, 0, extra, nextra, 120, &cb);
		free_strs(extra, nextra);
		if (r == 0 && got == o->nimages)
			return;
		snprintf(msgs[k], sizeof(msgs[k]), "%s",
			 cb.errmsg[0] ? cb.errmsg : "no image info");
	}
	die("cannot read the image layout:\n  via librbdlite: %s\n  via librbd: %s",
	    order[0] == BE_LITE ? msgs[0] : msgs[1],
	    order[0] == BE_LITE ? msgs[1] : msgs[0]);
}

/* One --child-layout per image, as parse_layout() reads it. */
void layout_args(struct parent *P, char ***extra, int *n)
{
	for (int i = 0; i < P->o->nimages; i++) {
		const struct layout *l = &P->layouts[i];
		char buf[256];

		snprintf(buf, sizeof(buf), "--child-layout=%" PRIu64 ":%" PRIu64
			 ":%d:%" PRIu64 ":%" PRIu64 ":%" PRId64 ":%" PRIu64
			 ":%" PRIu32 ":%s", l->size, l->features, l->order,
			 l->stripe_unit, l->stripe_count, l->data_pool_id,
			 l->data_off, l->crypt_block, l->prefix);
		add_str(extra, n, buf);
	}
}

/* ---- prefill ------------------------------------------------------------ */

/*
 * --prefill: write the region of every image once, one job per image, in
 * a size-mode child of its own (never measured), so that reads do not hit
 * holes.  Uses librbd if selected, else librbdlite, else raw rados, and
 * object-sized blocks (at most 4 MiB).
 */
void prefill(struct parent *P)
{
	struct opts *o = P->o;
	int be = BE_RADOS;
	uint64_t bs = UINT64_MAX, total = 0;
	char **extra = NULL;
	int n = 0;
	char buf[PATH_MAX + 32], bsb[32];
	struct child_cb cb;
	struct result_rec *res = xcalloc(1, sizeof(*res));

	if (opts_has_backend(o, BE_LIBRBD))
		be = BE_LIBRBD;
	else if (opts_has_backend(o, BE_LITE))
		be = BE_LITE;
	for (int i = 0; i < o->nimages; i++) {
		uint64_t os = 1ull << P->layouts[i].order;

		if (os < bs)
			bs = os;
		total += opts_region(o, &P->layouts[i]);
	}
	if (bs > (4u << 20))
		bs = 4u << 20;
	fmt_size(bsb, sizeof(bsb), bs);
	if (!o->quiet)
		fprintf(stderr, "prefill: writing %.1f MiB to %d image(s) with %s, bs %s\n",
			(double)total / 1048576.0, o->nimages, be_name[be],
			bsb);
	add_child_args(P, &extra, &n, be);
	add_str(&extra, &n, "--child-fd=3");
	layout_args(P, &extra, &n);
	add_str(&extra, &n, "--rw=write");
	snprintf(buf, sizeof(buf), "--bs=%" PRIu64, bs);
	add_str(&extra, &n, buf);
	add_str(&extra, &n, "--iodepth=8");
	snprintf(buf, sizeof(buf), "--numjobs=%d", o->nimages);
	add_str(&extra, &n, buf);
	add_str(&extra, &n, "--runtime=0");
	add_str(&extra, &n, "--warmup=0");
	add_str(&extra, &n, "--mode=poll");
	add_str(&extra, &n, "--spread=jobs");
	add_str(&extra, &n, "--handles=job");
	memset(&cb, 0, sizeof(cb));
	cb.result = res;
	if (run_child(P, 0, extra, n, 0, &cb) < 0) {
		fprintf(stderr, PROG ": prefill failed: %s\n", cb.errmsg);
		exit(1);
	}
	free_strs(extra, n);
	free(res);
}
