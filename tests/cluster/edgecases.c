/*
 * edgecases.c - a fixed table of librbd API edge cases, built twice from
 * this one source: against librbdlite (edgecases-lite, our <rbd/librbd.h>)
 * and against the real librbd (edgecases-librbd, the system header).
 * tests/cluster/test-edgecases.sh runs both on identical fresh images and
 * diffs their output: librbd is the reference, every line must match.
 *
 *   edgecases POOL IMAGE              the differential table
 *   edgecases --lite-only POOL IMAGE  misuse that crashes or hangs the real
 *                                     librbd (NULL or closed handles, double
 *                                     release, NULL buffers, reused
 *                                     completions, wrapping lengths);
 *                                     librbdlite must answer -EINVAL (or a
 *                                     sane value) and survive
 *
 * The image is expected to be 16 MiB, 4 MiB objects, layering only, made
 * by `rbd import` of a file holding data in [0, 1 MiB) and [8 MiB, 9 MiB)
 * (so objects 1 and 3 are holes), with a snapshot "s1" taken right after.
 * Object 1 stays a hole for the hole cases; object 0 is cut into 64 KiB
 * slots, one per case that writes; object 2 is for discards; object 3 for
 * the image end.  Cases run in a fixed order on one image, so later cases
 * see the effects of earlier ones, identically for both libraries.
 *
 * Output: one line per case,
 *   <case>: submit=<ret> rval=<completion value> [extra]
 * for asynchronous calls (rval=n/a when the submission failed), and
 *   <case>: ret=<value> [extra]
 * for synchronous ones.  "cb=ok" says the callback ran exactly once, on
 * another thread than the submitter, saw rbd_aio_is_complete() == 1, the
 * same return value and its argument; "cb=none" that it never ran after a
 * failed submission.  Read data is shown as a CRC-32 ("crc=").  Nothing
 * printed depends on timing, addresses or image ids.
 *
 * Partial discards are the one documented freedom (librbd may skip pieces
 * smaller than rbd_discard_granularity_bytes, librbdlite may zero them): for
 * those cases only "old-or-zero=1" (each byte is either its old value or 0)
 * is printed, never a CRC.
 *
 * Exit status: 0 when the table ran to the end (lite-only: and every case
 * passed), 1 if a lite-only case failed, 2 on set-up errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#define KiB		1024ULL
#define MiB		(1024 * KiB)
#define OBJ		(4 * MiB)
/* 64 KiB slots in object 0; object 1 stays a hole (never written by the
 * import); object 2 holds data in its first MiB, for discards */
#define SLOT(k)		((uint64_t)(k) * 64 * KiB)
#define HOLE		(1 * OBJ)
#define DISC		(2 * OBJ)
#define SENTINEL	0xdeadbeefULL

static const char *prog = "edgecases";
static rados_t cluster;
static rados_ioctx_t io;
static const char *pool_name, *image_name;
static rbd_image_t img;
static uint64_t S;		/* image size */
static pthread_t main_tid;
static char *big;		/* S + 1 MiB, for whole-image reads */

#define die(...)                                                          \
	do {                                                              \
		fprintf(stderr, "%s: ", prog);                            \
		fprintf(stderr, __VA_ARGS__);                             \
		fputc('\n', stderr);                                      \
		exit(2);                                                  \
	} while (0)

/* ---- formatting --------------------------------------------------------- */

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32_buf(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t c = 0xffffffffu;

	while (n--)
		c = crc_table[(c ^ *b++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static const char *errname(long long e)
{
	switch (e) {
	case -EINVAL: return "EINVAL";
	case -EROFS: return "EROFS";
	case -ENOENT: return "ENOENT";
	case -ERANGE: return "ERANGE";
	case -EILSEQ: return "EILSEQ";
	case -EOPNOTSUPP: return "EOPNOTSUPP";
	case -EBADF: return "EBADF";
	case -ENODEV: return "ENODEV";
	case -ENOMEM: return "ENOMEM";
	case -EEXIST: return "EEXIST";
	case -EBUSY: return "EBUSY";
	case -EIO: return "EIO";
	case -EFAULT: return "EFAULT";
	case -EAGAIN: return "EAGAIN";
	case -EOVERFLOW: return "EOVERFLOW";
	case -E2BIG: return "E2BIG";
	default: return NULL;
	}
}

/* "<n>" or "-22(EINVAL)"; rotating static buffers. */
static const char *v(long long x)
{
	static char bufs[16][48];
	static unsigned n;
	char *s = bufs[n++ % 16];
	const char *e = x < 0 ? errname(x) : NULL;

	if (e)
		snprintf(s, sizeof(bufs[0]), "%lld(%s)", x, e);
	else
		snprintf(s, sizeof(bufs[0]), "%lld", x);
	return s;
}

__attribute__((format(printf, 2, 3)))
static void line(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Deterministic non-zero bytes. */
static void pat(void *buf, size_t n, unsigned seed)
{
	unsigned char *p = buf;
	uint32_t x = seed * 2654435761u + 12345;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345;
		p[i] = (unsigned char)((x >> 16) | 1);
	}
}

static bool all_zero(const void *buf, size_t n)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- reading back ------------------------------------------------------- */

/* "crc=<hex>" of [off, off+len) read with rbd_read, or the error. */
static const char *rb(rbd_image_t im, uint64_t off, size_t len)
{
	static char bufs[4][64];
	static unsigned n;
	char *s = bufs[n++ % 4];
	char *b = malloc(len ? len : 1);
	ssize_t r;

	if (!b)
		die("out of memory");
	r = rbd_read(im, off, len, b);
	if (r == (ssize_t)len)
		snprintf(s, sizeof(bufs[0]), "crc=%08x%s", crc32_buf(b, len),
			 all_zero(b, len) ? "(zeros)" : "");
	else
		snprintf(s, sizeof(bufs[0]), "readback=%s", v(r));
	free(b);
	return s;
}

/* Snapshot [off, off+len) for a later old_or_zero() check. */
static char *grab(rbd_image_t im, uint64_t off, size_t len)
{
	char *b = malloc(len);

	if (!b)
		die("out of memory");
	if (rbd_read(im, off, len, b) != (ssize_t)len)
		die("read at %" PRIu64 " failed", off);
	return b;
}

/*
 * "old-or-zero=1" if every byte now is its old value or 0.  Then write the
 * old bytes back and free them: where the libraries may legitimately
 * differ (partial discards) the image is brought back to the same state,
 * so that later cases compare equal again.
 */
static const char *old_or_zero(rbd_image_t im, uint64_t off, size_t len,
			       char *old)
{
	char *b = grab(im, off, len);
	bool ok = true;

	for (size_t i = 0; i < len && ok; i++)
		ok = b[i] == old[i] || b[i] == 0;
	if (rbd_write(im, off, len, old) != (ssize_t)len)
		die("restoring %zu bytes at %" PRIu64 " failed", len, off);
	free(b);
	free(old);
	return ok ? "old-or-zero=1" : "old-or-zero=0";
}

/* ---- running one asynchronous operation --------------------------------- */

enum kind {
	K_READ, K_READ2, K_READV, K_WRITE, K_WRITE2, K_WRITEV, K_DISCARD,
	K_WSAME, K_WZERO, K_CAW, K_FLUSH,
};

struct op {
	enum kind k;
	uint64_t off;
	uint64_t len;
	char *buf;
	const char *cmp;
	const struct iovec *iov;
	int iovcnt;
	size_t dl;		/* writesame data_len */
	int zf;			/* write_zeroes zero_flags */
	int flags;		/* op_flags */
	uint64_t *moff;		/* compare_and_write mismatch offset */
};

struct cbrec {
	atomic_int calls;
	atomic_int inl;		/* ran on the submitting thread */
	atomic_int complete;	/* rbd_aio_is_complete() inside */
	atomic_int argok;	/* rbd_aio_get_arg() == arg */
	atomic_long rval;	/* rbd_aio_get_return_value() inside */
	void *user;		/* for special callbacks */
};

struct res {
	int submit;
	ssize_t rval;
	struct cbrec cb;
};

static void cb_fn(rbd_completion_t c, void *arg)
{
	struct cbrec *r = arg;

	if (pthread_equal(pthread_self(), main_tid))
		atomic_fetch_add(&r->inl, 1);
	atomic_store(&r->complete, rbd_aio_is_complete(c));
	atomic_store(&r->argok, rbd_aio_get_arg(c) == arg);
	atomic_store(&r->rval, (long)rbd_aio_get_return_value(c));
	atomic_fetch_add(&r->calls, 1);
}

static int submit_op(rbd_image_t im, const struct op *o, rbd_completion_t c)
{
	switch (o->k) {
	case K_READ:
		return rbd_aio_read(im, o->off, (size_t)o->len, o->buf, c);
	case K_READ2:
		return rbd_aio_read2(im, o->off, (size_t)o->len, o->buf, c,
				     o->flags);
	case K_READV:
		return rbd_aio_readv(im, o->iov, o->iovcnt, o->off, c);
	case K_WRITE:
		return rbd_aio_write(im, o->off, (size_t)o->len, o->buf, c);
	case K_WRITE2:
		return rbd_aio_write2(im, o->off, (size_t)o->len, o->buf, c,
				      o->flags);
	case K_WRITEV:
		return rbd_aio_writev(im, o->iov, o->iovcnt, o->off, c);
	case K_DISCARD:
		return rbd_aio_discard(im, o->off, o->len, c);
	case K_WSAME:
		return rbd_aio_writesame(im, o->off, (size_t)o->len, o->buf,
					 o->dl, c, o->flags);
	case K_WZERO:
		return rbd_aio_write_zeroes(im, o->off, (size_t)o->len, c,
					    o->zf, o->flags);
	case K_CAW:
		return (int)rbd_aio_compare_and_write(im, o->off,
						      (size_t)o->len, o->cmp,
						      o->buf, c, o->moff,
						      o->flags);
	case K_FLUSH:
		return rbd_aio_flush(im, c);
	}
	return -1;
}

/* Wait for everything submitted to im so far. */
static void barrier(rbd_image_t im)
{
	rbd_completion_t c;

	if (rbd_aio_create_completion(NULL, NULL, &c) < 0)
		die("rbd_aio_create_completion");
	if (rbd_aio_flush(im, c) == 0)
		rbd_aio_wait_for_complete(c);
	rbd_aio_release(c);
}

static void run(rbd_image_t im, const struct op *o, struct res *r)
{
	rbd_completion_t c;

	memset(r, 0, sizeof(*r));
	if (rbd_aio_create_completion(&r->cb, cb_fn, &c) < 0)
		die("rbd_aio_create_completion");
	r->submit = submit_op(im, o, c);
	if (r->submit == 0) {
		rbd_aio_wait_for_complete(c);
		r->rval = rbd_aio_get_return_value(c);
	} else {
		/* The callback must never run: give it every chance. */
		barrier(im);
	}
	rbd_aio_release(c);
}

static const char *cbstr(const struct res *r)
{
	static char bufs[4][128];
	static unsigned n;
	char *s = bufs[n++ % 4];
	const struct cbrec *b = &r->cb;

	if (r->submit != 0) {
		if (atomic_load(&b->calls) == 0)
			return "cb=none";
		snprintf(s, sizeof(bufs[0]), "cb=RAN-%d-TIMES",
			 atomic_load(&b->calls));
		return s;
	}
	if (atomic_load(&b->calls) == 1 && !atomic_load(&b->inl) &&
	    atomic_load(&b->complete) == 1 && atomic_load(&b->argok) &&
	    atomic_load(&b->rval) == r->rval)
		return "cb=ok";
	snprintf(s, sizeof(bufs[0]),
		 "cb=calls:%d,inline:%d,is_complete:%d,arg:%d,rval:%ld",
		 atomic_load(&b->calls), atomic_load(&b->inl),
		 atomic_load(&b->complete), atomic_load(&b->argok),
		 atomic_load(&b->rval));
	return s;
}

/* Print "<name>: submit=.. rval=.. cb=..[ extra]" for a finished run(). */
__attribute__((format(printf, 3, 4)))
static void aio_print(const char *name, const struct res *r, const char *fmt,
		      ...)
{
	char extra[512] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof(extra), fmt, ap);
		va_end(ap);
	}
	line(name, "submit=%s rval=%s %s%s%s", v(r->submit),
	     r->submit == 0 ? v(r->rval) : "n/a", cbstr(r),
	     *extra ? " " : "", extra);
}

/*
 * The macros below sequence "do the operation" strictly before "read the
 * image back" (function arguments are evaluated in no fixed order, so the
 * two must never be arguments of the same call).
 */

/* Run an asynchronous operation and print its line. */
#define AIO(name, im, o)                                                  \
	do {                                                              \
		struct res r_;                                            \
		run(im, o, &r_);                                          \
		aio_print(name, &r_, NULL);                               \
	} while (0)

/* ... followed by the CRC of [roff, roff+rlen) read back afterwards. */
#define AIO_RB(name, im, o, roff, rlen)                                   \
	do {                                                              \
		struct res r_;                                            \
		run(im, o, &r_);                                          \
		aio_print(name, &r_, "%s", rb(im, roff, rlen));           \
	} while (0)

/* ... followed by old_or_zero() of a range grabbed before the operation
 * (partial discards, where the libraries may legitimately differ), which
 * also restores the range. */
#define AIO_OZ(name, im, o, roff, rlen)                                   \
	do {                                                              \
		struct res r_;                                            \
		char *old_ = grab(im, roff, rlen);                        \
		run(im, o, &r_);                                          \
		aio_print(name, &r_, "%s",                                \
			  old_or_zero(im, roff, rlen, old_));             \
	} while (0)

/* A synchronous call: "<name>: ret=<value>". */
#define SYNC(name, expr)                                                  \
	do {                                                              \
		long long r_ = (expr);                                    \
		line(name, "ret=%s", v(r_));                              \
	} while (0)

/* ... followed by a read-back of [roff, roff+rlen). */
#define SYNC_RB(name, expr, im, roff, rlen)                               \
	do {                                                              \
		long long r_ = (expr);                                    \
		const char *e_ = rb(im, roff, rlen);                      \
		line(name, "ret=%s %s", v(r_), e_);                       \
	} while (0)

/* ... followed by old_or_zero() of the range. */
#define SYNC_OZ(name, expr, im, roff, rlen)                               \
	do {                                                              \
		char *old_ = grab(im, roff, rlen);                        \
		long long r_ = (expr);                                    \
		line(name, "ret=%s %s", v(r_),                            \
		     old_or_zero(im, roff, rlen, old_));                  \
	} while (0)

/* ---- connection --------------------------------------------------------- */

static void connect_cluster(const char *pool)
{
	int r = rados_create(&cluster, NULL);

	if (r < 0)
		die("rados_create: %s", strerror(-r));
	r = rados_conf_read_file(cluster, NULL);
	if (r < 0)
		die("rados_conf_read_file (CEPH_CONF=%s): %s",
		    getenv("CEPH_CONF") ? getenv("CEPH_CONF") : "unset",
		    strerror(-r));
	rados_conf_parse_env(cluster, NULL);
	r = rados_connect(cluster);
	if (r < 0)
		die("rados_connect: %s", strerror(-r));
	r = rados_ioctx_create(cluster, pool, &io);
	if (r < 0)
		die("pool %s: %s", pool, strerror(-r));
}

static void open_main(void)
{
	int r = rbd_open(io, image_name, &img, NULL);

	if (r < 0)
		die("rbd_open %s/%s: %s", pool_name, image_name, strerror(-r));
	r = rbd_get_size(img, &S);
	if (r < 0)
		die("rbd_get_size: %s", strerror(-r));
	if (S != 16 * MiB)
		die("the image must be 16 MiB (is %" PRIu64 ")", S);
	big = calloc(1, S + MiB);
	if (!big)
		die("out of memory");
}

/* ---- the differential table --------------------------------------------- */

/* qemu's only use of the deprecated rbd_get_parent_info is this check. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int parent_info(rbd_image_t im, char *p, size_t pl, char *n,
		       size_t nl, char *s, size_t sl)
{
	return rbd_get_parent_info(im, p, pl, n, nl, s, sl);
}
#pragma GCC diagnostic pop

static void cases_info(void)
{
	rbd_image_info_t info;
	rbd_snap_info_t snaps[8];
	char id[64] = "", expect[96];
	uint64_t u = 0;
	int r, max;
	rbd_image_t x = NULL;

	memset(&info, 0x5a, sizeof(info));
	r = rbd_stat(img, &info, sizeof(info));
	rbd_get_id(img, id, sizeof(id));
	snprintf(expect, sizeof(expect), "rbd_data.%s", id);
	line("rbd_stat", "ret=%s size=%" PRIu64 " obj_size=%" PRIu64
	     " num_objs=%" PRIu64 " order=%d block_name_prefix=%s"
	     " parent_pool=%" PRId64 " parent_name='%.*s'", v(r), info.size,
	     info.obj_size, info.num_objs, info.order,
	     !strcmp(info.block_name_prefix, expect) ? "rbd_data.<id>"
						     : info.block_name_prefix,
	     info.parent_pool, (int)sizeof(info.parent_name),
	     info.parent_name);
	r = rbd_stat(img, &info, 0);
	line("rbd_stat infosize=0", "ret=%s size=%" PRIu64, v(r), info.size);
	u = 0;
	r = rbd_get_size(img, &u);
	line("rbd_get_size", "ret=%s size=%" PRIu64, v(r), u);
	u = SENTINEL;
	r = rbd_get_features(img, &u);
	line("rbd_get_features", "ret=%s features=0x%" PRIx64, v(r), u);
	u = SENTINEL;
	r = rbd_get_flags(img, &u);
	line("rbd_get_flags", "ret=%s flags=0x%" PRIx64, v(r), u);
	r = parent_info(img, NULL, 0, NULL, 0, NULL, 0);
	line("rbd_get_parent_info NULL buffers (non-clone)", "ret=%s", v(r));
	{
		char a[64] = "x", b[64] = "x", c[64] = "x";

		r = parent_info(img, a, sizeof(a), b, sizeof(b), c, sizeof(c));
		line("rbd_get_parent_info buffers (non-clone)",
		     "ret=%s pool='%s' name='%s' snap='%s'", v(r), a, b, c);
	}
	max = 0;
	r = rbd_snap_list(img, snaps, &max);
	line("rbd_snap_list max=0", "ret=%s max=%d", v(r), max);
	max = 1;
	r = rbd_snap_list(img, snaps, &max);
	line("rbd_snap_list max=1", "ret=%s max=%d", v(r), max);
	max = 8;
	memset(snaps, 0, sizeof(snaps));
	r = rbd_snap_list(img, snaps, &max);
	{
		char names[256] = "";
		size_t o = 0;

		for (int i = 0; i < (r > 0 ? r : 0) && i < 8; i++)
			o += (size_t)snprintf(names + o, sizeof(names) - o,
					      "%s%s(size=%" PRIu64 ")",
					      i ? "," : "", snaps[i].name,
					      snaps[i].size);
		line("rbd_snap_list max=8", "ret=%s max=%d snaps=[%s]"
		     " terminator_name=%s", v(r), max, names,
		     r >= 0 && r < 8 ? (snaps[r].name ? "set" : "NULL") : "-");
		if (r >= 0)
			rbd_snap_list_end(snaps);
	}
	r = rbd_invalidate_cache(img);
	line("rbd_invalidate_cache", "ret=%s", v(r));
	r = rbd_flush(img);
	line("rbd_flush idle", "ret=%s", v(r));
	{
		rbd_completion_t c;
		int dummy;

		r = rbd_aio_create_completion(&dummy, NULL, &c);
		line("rbd_aio_create_completion NULL callback",
		     "ret=%s is_complete=%d rval=%s arg_ok=%d", v(r),
		     rbd_aio_is_complete(c),
		     v(rbd_aio_get_return_value(c)),
		     rbd_aio_get_arg(c) == &dummy);
		rbd_aio_release(c);
	}
	r = rbd_open(io, "edgecases-no-such-image", &x, NULL);
	line("rbd_open missing image", "ret=%s", v(r));
	if (r == 0)
		rbd_close(x);
	r = rbd_open_read_only(io, "edgecases-no-such-image", &x, NULL);
	line("rbd_open_read_only missing image", "ret=%s", v(r));
	if (r == 0)
		rbd_close(x);
	r = rbd_open(io, image_name, &x, "no-such-snap");
	line("rbd_open missing snapshot", "ret=%s", v(r));
	if (r == 0)
		rbd_close(x);
	r = rbd_open_read_only(io, image_name, &x, "no-such-snap");
	line("rbd_open_read_only missing snapshot", "ret=%s", v(r));
	if (r == 0)
		rbd_close(x);
	/* An empty snapshot name is HEAD (tgt's bs_rbd opens with ""). */
	r = rbd_open(io, image_name, &x, "");
	line("rbd_open snapshot \"\"", "ret=%s", v(r));
	if (r == 0) {
		char b[1];

		line("rbd_open \"\" read @0", "%s head_%s", rb(x, 0, 4096),
		     rb(img, 0, 4096));
		line("rbd_open \"\" zero-length write", "ret=%s",
		     v(rbd_write(x, 0, 0, b)));
		rbd_close(x);
	}
	r = rbd_open_read_only(io, image_name, &x, "");
	line("rbd_open_read_only snapshot \"\"", "ret=%s", v(r));
	if (r == 0) {
		line("rbd_open_read_only \"\" read @0", "%s", rb(x, 0, 4096));
		rbd_close(x);
	}
}

static void cases_zero_length(void)
{
	const struct {
		const char *name;
		uint64_t off;
	} at[] = {
		{ "0", 0 }, { "size-1", S - 1 }, { "size", S },
		{ "size+4096", S + 4096 },
	};
	static const struct {
		const char *name;
		enum kind k;
	} ops[] = {
		{ "read", K_READ }, { "write", K_WRITE },
		{ "discard", K_DISCARD }, { "write_zeroes", K_WZERO },
		{ "writesame (data_len 512)", K_WSAME },
		{ "readv (2 empty iovecs)", K_READV },
		{ "writev (2 empty iovecs)", K_WRITEV },
		{ "flush", K_FLUSH },
	};
	char name[96], buf[512];
	struct iovec iov[2] = { { buf, 0 }, { buf, 0 } };

	pat(buf, sizeof(buf), 1);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			struct op o = { .k = ops[k].k, .off = at[i].off,
					.len = 0, .buf = buf, .dl = 512,
					.iov = iov, .iovcnt = 2 };

			if (ops[k].k == K_FLUSH && i)
				continue;
			snprintf(name, sizeof(name), "zero-length %s @%s",
				 ops[k].name, at[i].name);
			AIO(name, img, &o);
		}
	}
	/* the sync siblings */
	SYNC("rbd_read len 0 @size+4096", rbd_read(img, S + 4096, 0, buf));
	SYNC("rbd_write len 0 @size+4096", rbd_write(img, S + 4096, 0, buf));
	SYNC("rbd_discard len 0 @size+4096", rbd_discard(img, S + 4096, 0));
	SYNC("rbd_write_zeroes len 0 @size+4096",
	     rbd_write_zeroes(img, S + 4096, 0, 0, 0));
	SYNC("rbd_writesame len 0 @size+4096",
	     rbd_writesame(img, S + 4096, 0, buf, 512, 0));
}

static void cases_past_end(void)
{
	const struct {
		const char *name;
		uint64_t off;
	} at[] = {
		{ "size", S }, { "size+4096", S + 4096 },
		{ "2^64-100", UINT64_MAX - 99 }, { "2^64-1", UINT64_MAX },
	};
	static const struct {
		const char *name;
		enum kind k;
	} ops[] = {
		{ "read", K_READ }, { "write", K_WRITE },
		{ "discard", K_DISCARD }, { "write_zeroes", K_WZERO },
		{ "writesame data_len 1", K_WSAME },
		{ "readv", K_READV }, { "writev", K_WRITEV },
		{ "compare_and_write", K_CAW },
	};
	char name[96], buf[4096], cmp[512];
	struct iovec iov[1] = { { buf, 0 } };
	uint64_t moff;
	long long r;

	pat(buf, sizeof(buf), 2);
	memset(cmp, 0, sizeof(cmp));
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint64_t len = at[i].off >= UINT64_MAX - 99 ? 100 : 1;

		iov[0].iov_len = len;
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			struct op o = { .k = ops[k].k, .off = at[i].off,
					.len = len, .buf = buf, .dl = 1,
					.iov = iov, .iovcnt = 1, .cmp = cmp,
					.moff = &moff };
			struct res rr;

			moff = SENTINEL;
			snprintf(name, sizeof(name), "%s len %" PRIu64 " @%s",
				 ops[k].name, len, at[i].name);
			run(img, &o, &rr);
			if (ops[k].k == K_CAW)
				aio_print(name, &rr, "mismatch_off=%s",
					  moff == SENTINEL
						  ? "untouched"
						  : v((long long)moff));
			else
				aio_print(name, &rr, NULL);
		}
	}
	SYNC("rbd_read len 1 @size", rbd_read(img, S, 1, buf));
	SYNC("rbd_write len 1 @size", rbd_write(img, S, 1, buf));
	SYNC("rbd_discard len 1 @size", rbd_discard(img, S, 1));
	SYNC("rbd_writesame len 1 @size", rbd_writesame(img, S, 1, buf, 1, 0));
	SYNC("rbd_write_zeroes len 1 @size", rbd_write_zeroes(img, S, 1, 0, 0));
	moff = SENTINEL;
	r = rbd_compare_and_write(img, S, 1, cmp, buf, &moff, 0);
	line("rbd_compare_and_write len 1 @size", "ret=%s mismatch_off=%s",
	     v(r), moff == SENTINEL ? "untouched" : v((long long)moff));
	SYNC("rbd_read len 100 @2^64-100",
	     rbd_read(img, UINT64_MAX - 99, 100, buf));
	SYNC("rbd_write len 100 @2^64-100",
	     rbd_write(img, UINT64_MAX - 99, 100, buf));
	SYNC("rbd_discard len 100 @2^64-100",
	     rbd_discard(img, UINT64_MAX - 99, 100));
}

static void cases_crossing_end(void)
{
	char buf[8192];
	struct op o;
	struct res r;
	long long sr;

	/* read: clipped count, the rest of the buffer untouched */
	memset(buf, 0xa5, sizeof(buf));
	o = (struct op){ .k = K_READ, .off = S - 100, .len = 4096,
			 .buf = buf };
	run(img, &o, &r);
	{
		bool untouched = true;

		for (size_t i = 100; i < 4096; i++)
			untouched &= (unsigned char)buf[i] == 0xa5;
		aio_print("read len 4096 @size-100 (crossing end)", &r,
			  "crc=%08x tail_untouched=%d", crc32_buf(buf, 100),
			  untouched);
	}
	memset(buf, 0xa5, sizeof(buf));
	sr = rbd_read(img, S - 100, 4096, buf);
	line("rbd_read len 4096 @size-100 (crossing end)", "ret=%s crc=%08x",
	     v(sr), crc32_buf(buf, 100));

	pat(buf, sizeof(buf), 3);
	o = (struct op){ .k = K_WRITE, .off = S - 100, .len = 4096,
			 .buf = buf };
	AIO_RB("write len 4096 @size-100 (crossing end)", img, &o, S - 4096,
	       4096);
	pat(buf, sizeof(buf), 4);
	SYNC_RB("rbd_write len 4096 @size-50 (crossing end)",
		rbd_write(img, S - 50, 4096, buf), img, S - 4096, 4096);
	pat(buf, sizeof(buf), 5);
	{
		struct iovec iov[3] = { { buf, 1000 }, { buf + 2000, 1500 },
					{ buf + 4000, 1500 } };

		o = (struct op){ .k = K_WRITEV, .off = S - 3000, .iov = iov,
				 .iovcnt = 3 };
		AIO_RB("writev 3 iovecs @size-3000 (crossing end)", img, &o,
		       S - 4096, 4096);
	}
	o = (struct op){ .k = K_WZERO, .off = S - 100, .len = 4096 };
	AIO_RB("write_zeroes len 4096 @size-100 (crossing end)", img, &o,
	       S - 4096, 4096);
	pat(buf, sizeof(buf), 6);
	o = (struct op){ .k = K_WSAME, .off = S - 1000, .len = 2048,
			 .buf = buf, .dl = 512 };
	AIO_RB("writesame len 2048 data_len 512 @size-1000 (crossing end)",
	       img, &o, S - 4096, 4096);
	/* thick write_zeroes: librbd splits head / write-same / tail before
	 * clipping */
	pat(buf, sizeof(buf), 7);
	rbd_write(img, S - 4096, 4096, buf);
	o = (struct op){ .k = K_WZERO, .off = S - 1000, .len = 4096,
			 .zf = RBD_WRITE_ZEROES_FLAG_THICK_PROVISION };
	AIO_RB("write_zeroes THICK len 4096 @size-1000 (crossing end)", img,
	       &o, S - 4096, 4096);
	pat(buf, sizeof(buf), 8);
	rbd_write(img, S - 4096, 4096, buf);
	o = (struct op){ .k = K_WZERO, .off = S - 512, .len = 4096,
			 .zf = RBD_WRITE_ZEROES_FLAG_THICK_PROVISION };
	AIO_RB("write_zeroes THICK len 4096 @size-512 (crossing end)", img,
	       &o, S - 4096, 4096);
	pat(buf, sizeof(buf), 9);
	rbd_write(img, S - 4096, 4096, buf);
	o = (struct op){ .k = K_WZERO, .off = S - 300, .len = 400,
			 .zf = RBD_WRITE_ZEROES_FLAG_THICK_PROVISION };
	AIO_RB("write_zeroes THICK len 400 @size-300 (crossing end)", img,
	       &o, S - 4096, 4096);
	/* partial discard: only "old or zero" is comparable */
	pat(buf, sizeof(buf), 10);
	rbd_write(img, S - 4096, 4096, buf);
	o = (struct op){ .k = K_DISCARD, .off = S - 100, .len = 4096 };
	AIO_OZ("discard len 4096 @size-100 (crossing end)", img, &o,
	       S - 4096, 4096);
	/* sync siblings report the clipped length */
	pat(buf, sizeof(buf), 11);
	rbd_write(img, S - 4096, 4096, buf);
	SYNC_RB("rbd_writesame len 1024 data_len 512 @size-100 (crossing "
		"end)", rbd_writesame(img, S - 100, 1024, buf, 512, 0), img,
		S - 4096, 4096);
	SYNC_RB("rbd_write_zeroes len 4096 @size-100 (crossing end)",
		rbd_write_zeroes(img, S - 100, 4096, 0, 0), img, S - 4096,
		4096);
	SYNC_RB("rbd_write_zeroes THICK len 4096 @size-1000 (crossing end)",
		rbd_write_zeroes(img, S - 1000, 4096, 1, 0), img, S - 4096,
		4096);
	pat(buf, sizeof(buf), 12);
	rbd_write(img, S - 4096, 4096, buf);
	SYNC_OZ("rbd_discard len 4096 @size-100 (crossing end)",
		rbd_discard(img, S - 100, 4096), img, S - 4096, 4096);
}

static void cases_huge(void)
{
	struct op o;
	struct res r;
	char buf[8192];

	/* len = SIZE_MAX from 0: clipped to the image */
	o = (struct op){ .k = K_READ, .off = 0, .len = SIZE_MAX, .buf = big };
	run(img, &o, &r);
	aio_print("read len SIZE_MAX @0", &r, "crc=%08x",
		  r.submit == 0 && r.rval > 0
			  ? crc32_buf(big, (size_t)r.rval) : 0);
	/* the largest lengths whose end does not wrap past 2^64 */
	o = (struct op){ .k = K_READ, .off = S - 4096,
			 .len = SIZE_MAX - (S - 4096), .buf = big };
	run(img, &o, &r);
	aio_print("read len SIZE_MAX-off @size-4096", &r, "crc=%08x",
		  r.submit == 0 && r.rval > 0
			  ? crc32_buf(big, (size_t)r.rval) : 0);
	SYNC("rbd_read len SIZE_MAX @0", rbd_read(img, 0, SIZE_MAX, big));
	o = (struct op){ .k = K_DISCARD, .off = S - 8192,
			 .len = UINT64_MAX - (S - 8192) };
	AIO_OZ("discard len UINT64_MAX-off @size-8192", img, &o, S - 8192,
	       8192);
	pat(buf, sizeof(buf), 13);
	rbd_write(img, S - 8192, 8192, buf);
	o = (struct op){ .k = K_WZERO, .off = S - 8192,
			 .len = SIZE_MAX - (S - 8192) };
	AIO_RB("write_zeroes len SIZE_MAX-off @size-8192", img, &o, S - 8192,
	       8192);
	/* readv whose total exceeds SSIZE_MAX without wrapping size_t */
	{
		struct iovec iov[2] = { { big, SIZE_MAX / 2 + 1 },
					{ buf, 10 } };

		o = (struct op){ .k = K_READV, .off = 0, .iov = iov,
				 .iovcnt = 2 };
		AIO("readv 2 iovecs total SIZE_MAX/2+11 (> SSIZE_MAX) @0",
		    img, &o);
	}
	/* totals that wrap size_t: -EINVAL at submission */
	{
		struct iovec iov[2] = { { big, SIZE_MAX }, { buf, 2 } };

		o = (struct op){ .k = K_READV, .off = 0, .iov = iov,
				 .iovcnt = 2 };
		AIO("readv total wraps size_t", img, &o);
		o.k = K_WRITEV;
		AIO("writev total wraps size_t", img, &o);
	}
	/* rbd_discard takes uint64_t but returns int */
	SYNC("rbd_discard len INT_MAX+1 @0",
	     rbd_discard(img, 0, (uint64_t)INT_MAX + 1));
	SYNC("rbd_discard len UINT64_MAX @0", rbd_discard(img, 0, UINT64_MAX));
}

static void cases_iovec(void)
{
	char buf[8192], rbuf[8192];
	struct iovec iov[6];
	struct op o;
	struct res r;

	o = (struct op){ .k = K_READV, .off = SLOT(1), .iov = iov,
			 .iovcnt = 0 };
	iov[0] = (struct iovec){ rbuf, 100 };
	AIO("readv iovcnt 0", img, &o);
	o.iovcnt = -1;
	AIO("readv iovcnt -1", img, &o);
	o.iovcnt = INT_MIN;
	AIO("readv iovcnt INT_MIN", img, &o);
	o.k = K_WRITEV;
	o.iovcnt = 0;
	AIO("writev iovcnt 0", img, &o);
	o.iovcnt = -1;
	AIO("writev iovcnt -1", img, &o);

	/* reads scatter in iovec order, zero-length entries allowed */
	memset(rbuf, 0xa5, sizeof(rbuf));
	iov[0] = (struct iovec){ rbuf, 0 };
	iov[1] = (struct iovec){ rbuf + 4000, 100 };
	iov[2] = (struct iovec){ rbuf + 5000, 0 };
	iov[3] = (struct iovec){ rbuf, 200 };
	iov[4] = (struct iovec){ rbuf + 6000, 0 };
	o = (struct op){ .k = K_READV, .off = 7, .iov = iov, .iovcnt = 5 };
	run(img, &o, &r);
	{
		char lin[300];

		memcpy(lin, rbuf + 4000, 100);
		memcpy(lin + 100, rbuf, 200);
		aio_print("readv 5 iovecs with zero-length entries @7", &r,
			  "crc=%08x %s", crc32_buf(lin, 300), rb(img, 7, 300));
	}
	iov[0] = (struct iovec){ rbuf, 777 };
	o = (struct op){ .k = K_READV, .off = 1001, .iov = iov, .iovcnt = 1 };
	run(img, &o, &r);
	aio_print("readv 1 iovec @1001", &r, "crc=%08x",
		  crc32_buf(rbuf, 777));

	/* a clipped readv fills only the first bytes, in iovec order */
	memset(rbuf, 0xa5, sizeof(rbuf));
	iov[0] = (struct iovec){ rbuf + 4096, 3000 };
	iov[1] = (struct iovec){ rbuf, 3000 };
	o = (struct op){ .k = K_READV, .off = S - 4000, .iov = iov,
			 .iovcnt = 2 };
	run(img, &o, &r);
	{
		bool untouched = true;
		char lin[4000];

		for (size_t i = 1000; i < 3000; i++)
			untouched &= (unsigned char)rbuf[i] == 0xa5;
		memcpy(lin, rbuf + 4096, 3000);
		memcpy(lin + 3000, rbuf, 1000);
		aio_print("readv 2x3000 @size-4000 (crossing end)", &r,
			  "crc=%08x rest_untouched=%d", crc32_buf(lin, 4000),
			  untouched);
	}

	/* writev: odd shapes, zero-length entries, out-of-order buffers */
	pat(buf, sizeof(buf), 14);
	iov[0] = (struct iovec){ buf + 5000, 0 };
	iov[1] = (struct iovec){ buf + 4000, 333 };
	iov[2] = (struct iovec){ buf, 0 };
	iov[3] = (struct iovec){ buf + 100, 1 };
	iov[4] = (struct iovec){ buf + 6000, 1000 };
	iov[5] = (struct iovec){ buf + 7999, 0 };
	o = (struct op){ .k = K_WRITEV, .off = SLOT(2) + 3, .iov = iov,
			 .iovcnt = 6 };
	AIO_RB("writev 6 iovecs (3 empty) @slot2+3", img, &o, SLOT(2), 4096);
	iov[0] = (struct iovec){ buf, 4096 };
	o = (struct op){ .k = K_WRITEV, .off = SLOT(3) + 511, .iov = iov,
			 .iovcnt = 1 };
	AIO_RB("writev 1 iovec @slot3+511", img, &o, SLOT(3), 8192);
	/* across the object 2/3 boundary (object 1 must stay a hole) */
	for (int i = 0; i < 6; i++)
		iov[i] = (struct iovec){ buf + i * 1000, 700 + (size_t)i };
	o = (struct op){ .k = K_WRITEV, .off = 3 * OBJ - 2000, .iov = iov,
			 .iovcnt = 6 };
	AIO_RB("writev 6 iovecs across object 2/3", img, &o, 3 * OBJ - 4096,
	       8192);
}

static void cases_writesame(void)
{
	char buf[8192], zeros[4096];
	struct op o;

	memset(zeros, 0, sizeof(zeros));
	pat(buf, sizeof(buf), 15);
	o = (struct op){ .k = K_WSAME, .off = SLOT(4), .len = 4096,
			 .buf = buf, .dl = 0 };
	AIO("writesame data_len 0", img, &o);
	o.len = 0;
	AIO("writesame len 0 data_len 0", img, &o);
	o.len = 1000;
	o.dl = 512;
	AIO("writesame len 1000 data_len 512 (not a multiple)", img, &o);
	o.len = 512;
	o.dl = 1024;
	AIO("writesame len 512 data_len 1024", img, &o);
	o.off = S;
	o.len = 1000;
	o.dl = 512;
	AIO("writesame len 1000 data_len 512 @size", img, &o);

	/* all-zero pattern: librbd turns it into a discard */
	o = (struct op){ .k = K_WSAME, .off = SLOT(4), .len = 64 * KiB,
			 .buf = zeros, .dl = 512 };
	AIO_RB("writesame zero pattern aligned 64K @slot4", img, &o, SLOT(4),
	       64 * KiB);
	o = (struct op){ .k = K_WSAME, .off = SLOT(5) + 1000, .len = 5120,
			 .buf = zeros, .dl = 512 };
	AIO_RB("writesame zero pattern unaligned @slot5+1000", img, &o,
	       SLOT(5), 8192);
	o = (struct op){ .k = K_WSAME, .off = SLOT(6), .len = 64 * KiB,
			 .buf = buf, .dl = 512 };
	AIO_RB("writesame pattern 512 aligned 64K @slot6", img, &o, SLOT(6),
	       64 * KiB);
	o = (struct op){ .k = K_WSAME, .off = SLOT(7) + 1000,
			 .len = 333 * 20, .buf = buf, .dl = 333 };
	AIO_RB("writesame pattern 333 unaligned @slot7+1000", img, &o,
	       SLOT(7), 16 * KiB);
	o = (struct op){ .k = K_WSAME, .off = SLOT(8) + 1, .len = 4095,
			 .buf = buf, .dl = 1 };
	AIO_RB("writesame pattern 1 byte @slot8+1", img, &o, SLOT(8), 8192);
	o = (struct op){ .k = K_WSAME, .off = 3 * OBJ - 1500, .len = 3000,
			 .buf = buf, .dl = 3 };
	AIO_RB("writesame pattern 3 across object 2/3", img, &o,
	       3 * OBJ - 4096, 8192);
	SYNC_RB("rbd_writesame len 4096 data_len 512 @slot9",
		rbd_writesame(img, SLOT(9), 4096, buf, 512, 0), img, SLOT(9),
		8192);
	SYNC("rbd_writesame data_len 0",
	     rbd_writesame(img, SLOT(9), 4096, buf, 0, 0));
	SYNC("rbd_writesame len 100 data_len 64",
	     rbd_writesame(img, SLOT(9), 100, buf, 64, 0));
	SYNC_RB("rbd_writesame zero pattern 4096 @slot9+4096",
		rbd_writesame(img, SLOT(9) + 4096, 4096, zeros, 512, 0), img,
		SLOT(9), 8192);
}

static void cases_write_zeroes(void)
{
	struct op o;

	o = (struct op){ .k = K_WZERO, .off = SLOT(10) + 100, .len = 3000 };
	AIO_RB("write_zeroes flags 0 unaligned @slot10+100", img, &o,
	       SLOT(10), 4096);
	o = (struct op){ .k = K_WZERO, .off = SLOT(11) + 100, .len = 300,
			 .zf = 1 };
	AIO_RB("write_zeroes flags 1 (thick) small @slot11+100", img, &o,
	       SLOT(11), 4096);
	o = (struct op){ .k = K_WZERO, .off = SLOT(12), .len = 64 * KiB,
			 .zf = 1 };
	AIO_RB("write_zeroes flags 1 (thick) aligned 64K @slot12", img, &o,
	       SLOT(12), 64 * KiB);
	o = (struct op){ .k = K_WZERO, .off = SLOT(13) + 100, .len = 10000,
			 .zf = 1 };
	AIO_RB("write_zeroes flags 1 (thick) unaligned 10000 @slot13+100",
	       img, &o, SLOT(13), 16 * KiB);
	o = (struct op){ .k = K_WZERO, .off = SLOT(14), .len = 4096,
			 .zf = 2 };
	AIO_RB("write_zeroes flags 2 (invalid)", img, &o, SLOT(14), 4096);
	o.zf = -1;
	AIO_RB("write_zeroes flags -1", img, &o, SLOT(14), 4096);
	o.zf = 3;
	AIO_RB("write_zeroes flags 3", img, &o, SLOT(14), 4096);
	o.zf = 2;
	o.len = 0;
	AIO("write_zeroes flags 2 len 0", img, &o);
	o.len = 1;
	o.off = S;
	AIO("write_zeroes flags 2 @size", img, &o);
	/* object 1 is a hole: zeroing part of it keeps it zero */
	o = (struct op){ .k = K_WZERO, .off = HOLE + 8192, .len = 4096 };
	AIO_RB("write_zeroes on a hole", img, &o, HOLE + 4096, 12288);
	SYNC_RB("rbd_write_zeroes len 4096 @slot15",
		rbd_write_zeroes(img, SLOT(15), 4096, 0, 0), img, SLOT(15),
		8192);
	SYNC_RB("rbd_write_zeroes flags 1 len 1000 @slot15+5000",
		rbd_write_zeroes(img, SLOT(15) + 5000, 1000, 1, 0), img,
		SLOT(15), 8192);
	SYNC("rbd_write_zeroes flags 2",
	     rbd_write_zeroes(img, SLOT(15), 4096, 2, 0));
	SYNC("rbd_write_zeroes flags 2 len 0",
	     rbd_write_zeroes(img, SLOT(15), 0, 2, 0));
}

/* The mismatch offset as printed: "untouched" or the value. */
static const char *moffs(uint64_t moff)
{
	return moff == SENTINEL ? "untouched" : v((long long)moff);
}

static void cases_caw(void)
{
	char known[1024], cmp[1024], nw[1024], zeros[1024];
	uint64_t moff, base = SLOT(16), far = 3 * OBJ + SLOT(3);
	struct op o;
	struct res r;
	long long sr;

	memset(zeros, 0, sizeof(zeros));
	pat(known, sizeof(known), 16);
	pat(nw, sizeof(nw), 17);
	rbd_write(img, base, sizeof(known), known);

#define CAW(name, roff)                                                   \
	do {                                                              \
		moff = SENTINEL;                                          \
		run(img, &o, &r);                                         \
		aio_print(name, &r, "mismatch_off=%s %s", moffs(moff),    \
			  rb(img, roff, 1024));                           \
	} while (0)

	o = (struct op){ .k = K_CAW, .off = base + 100, .len = 100,
			 .cmp = known + 100, .buf = nw, .moff = &moff };
	CAW("compare_and_write match len 100 @slot16+100", base);
	memcpy(known + 100, nw, 100);

	memcpy(cmp, known, sizeof(cmp));
	cmp[300 + 37] ^= 0x40;
	o = (struct op){ .k = K_CAW, .off = base + 300, .len = 100,
			 .cmp = cmp + 300, .buf = nw, .moff = &moff };
	CAW("compare_and_write mismatch at +37 len 100 @slot16+300", base);

	memcpy(cmp, known, sizeof(cmp));
	cmp[0] ^= 1;
	o = (struct op){ .k = K_CAW, .off = base, .len = 512, .cmp = cmp,
			 .buf = nw, .moff = &moff };
	CAW("compare_and_write mismatch at +0 len 512 @slot16", base);

	memcpy(cmp, known, sizeof(cmp));
	cmp[511] ^= 1;
	CAW("compare_and_write mismatch at +511 len 512 @slot16", base);

	o = (struct op){ .k = K_CAW, .off = base, .len = 512, .cmp = known,
			 .buf = nw, .moff = &moff };
	CAW("compare_and_write match len 512 @slot16", base);
	memcpy(known, nw, 512);

	o = (struct op){ .k = K_CAW, .off = base + 500, .len = 24,
			 .cmp = known + 500, .buf = nw, .moff = &moff };
	CAW("compare_and_write crossing a 512-byte sector", base);

	o = (struct op){ .k = K_CAW, .off = base, .len = 1024, .cmp = known,
			 .buf = nw, .moff = &moff };
	CAW("compare_and_write len 1024 (> 512) matching", base);

	{
		char cur[513];

		if (rbd_read(img, base + 512, sizeof(cur), cur) != sizeof(cur))
			die("read failed");
		o = (struct op){ .k = K_CAW, .off = base + 512, .len = 513,
				 .cmp = cur, .buf = nw, .moff = &moff };
		CAW("compare_and_write len 513 aligned matching", base);
	}

	/* in another object: is mismatch_off an image offset? */
	rbd_write(img, far, sizeof(known), known);
	memcpy(cmp, known, sizeof(cmp));
	cmp[700 + 11] ^= 0x10;
	o = (struct op){ .k = K_CAW, .off = far + 700, .len = 200,
			 .cmp = cmp + 700, .buf = nw, .moff = &moff };
	CAW("compare_and_write mismatch at +11 len 200 @obj3+192K+700", far);

	/* on a hole (object 1 never written) */
	pat(cmp, sizeof(cmp), 18);
	o = (struct op){ .k = K_CAW, .off = HOLE + 1536, .len = 512,
			 .cmp = cmp, .buf = nw, .moff = &moff };
	CAW("compare_and_write on a hole, non-zero cmp", HOLE + 1024);
	o = (struct op){ .k = K_CAW, .off = HOLE + 3 * 512 + 64, .len = 100,
			 .cmp = zeros, .buf = nw, .moff = &moff };
	CAW("compare_and_write on a hole, zero cmp", HOLE + 1024);

	/* at and across the image end: the compare buffer is len bytes,
	 * the part inside the image matches, the part past the end is
	 * zeros or not */
	{
		char cmp2[200];

		o = (struct op){ .k = K_CAW, .off = S, .len = 100,
				 .cmp = zeros, .buf = nw, .moff = &moff };
		CAW("compare_and_write len 100 @size", S - 1024);
		if (rbd_read(img, S - 100, 100, cmp2) != 100)
			die("read of the image tail failed");
		memset(cmp2 + 100, 0, 100);
		o = (struct op){ .k = K_CAW, .off = S - 100, .len = 200,
				 .cmp = cmp2, .buf = nw, .moff = &moff };
		CAW("compare_and_write len 200 @size-100 (crossing end, "
		    "in-image part matches, rest of cmp zeros)", S - 1024);
		if (rbd_read(img, S - 100, 100, cmp2) != 100)
			die("read of the image tail failed");
		memset(cmp2 + 100, 0x77, 100);
		o = (struct op){ .k = K_CAW, .off = S - 100, .len = 200,
				 .cmp = cmp2, .buf = nw, .moff = &moff };
		CAW("compare_and_write len 200 @size-100 (crossing end, "
		    "in-image part matches, rest of cmp non-zero)", S - 1024);
	}
#undef CAW

	/* synchronous form */
	if (rbd_read(img, base, sizeof(known), known) != sizeof(known))
		die("read failed");
	moff = SENTINEL;
	sr = rbd_compare_and_write(img, base + 600, 200, known + 600, nw,
				   &moff, 0);
	line("rbd_compare_and_write match len 200 @slot16+600",
	     "ret=%s mismatch_off=%s %s", v(sr), moffs(moff),
	     rb(img, base, 1024));
	memcpy(known + 600, nw, 200);
	memcpy(cmp, known, sizeof(cmp));
	cmp[900] ^= 0xff;
	moff = SENTINEL;
	sr = rbd_compare_and_write(img, base + 800, 120, cmp + 800, nw, &moff,
				   0);
	line("rbd_compare_and_write mismatch at +100 len 120 @slot16+800",
	     "ret=%s mismatch_off=%s %s", v(sr), moffs(moff),
	     rb(img, base, 1024));
	{
		char cur[48];

		if (rbd_read(img, base + 1000, sizeof(cur), cur) != sizeof(cur))
			die("read failed");
		moff = SENTINEL;
		sr = rbd_compare_and_write(img, base + 1000, sizeof(cur), cur,
					   nw, &moff, 0);
		line("rbd_compare_and_write crossing a sector",
		     "ret=%s mismatch_off=%s", v(sr), moffs(moff));
	}
	{
		char cmp2[200];

		for (int k = 0; k < 2; k++) {
			if (rbd_read(img, S - 100, 100, cmp2) != 100)
				die("read of the image tail failed");
			memset(cmp2 + 100, k ? 0x77 : 0, 100);
			pat(nw, sizeof(nw), 30 + k);
			moff = SENTINEL;
			sr = rbd_compare_and_write(img, S - 100, 200, cmp2, nw,
						   &moff, 0);
			line(k ? "rbd_compare_and_write len 200 @size-100 "
				 "(crossing end, rest of cmp non-zero)"
			       : "rbd_compare_and_write len 200 @size-100 "
				 "(crossing end, rest of cmp zeros)",
			     "ret=%s mismatch_off=%s %s", v(sr), moffs(moff),
			     rb(img, S - 1024, 1024));
		}
	}
	/* len 0 aborts the real librbd: see --lite-only */
}

static void cases_discard(void)
{
	struct op o;
	struct res r;

	/* sub-granularity partial discard: librbd may skip it */
	o = (struct op){ .k = K_DISCARD, .off = DISC + 4096, .len = 8192 };
	AIO_OZ("discard partial 8K @obj2+4K", img, &o, DISC, 64 * KiB);
	/* 64K-aligned partial discard inside data: zeroed by both */
	o = (struct op){ .k = K_DISCARD, .off = DISC + 128 * KiB,
			 .len = 128 * KiB };
	run(img, &o, &r);
	aio_print("discard partial 128K aligned @obj2+128K", &r, "%s %s",
		  rb(img, DISC + 128 * KiB, 128 * KiB),
		  rb(img, DISC + 64 * KiB, 256 * KiB));
	/* the whole object */
	o = (struct op){ .k = K_DISCARD, .off = DISC, .len = OBJ };
	run(img, &o, &r);
	aio_print("discard whole object 2", &r, "%s %s", rb(img, DISC, MiB),
		  rb(img, DISC + OBJ - 4096, 8192));
	AIO_RB("discard whole object 2 again", img, &o, DISC, 4096);
	o = (struct op){ .k = K_DISCARD, .off = HOLE, .len = OBJ };
	AIO_RB("discard whole hole object 1", img, &o, HOLE, 8192);
	{
		char b[4096];

		memset(b, 0xa5, sizeof(b));
		o = (struct op){ .k = K_READ, .off = HOLE + 64 * KiB,
				 .len = 4096, .buf = b };
		run(img, &o, &r);
		aio_print("read of a hole", &r, "zeros=%d",
			  all_zero(b, 4096));
	}
	SYNC_RB("rbd_discard 64K @slot17", rbd_discard(img, SLOT(17), 64 * KiB),
		img, SLOT(17), 64 * KiB);
	SYNC_OZ("rbd_discard 100 @slot18+1000",
		rbd_discard(img, SLOT(18) + 1000, 100), img, SLOT(18), 8192);
}

static void cases_sync_misc(void)
{
	char buf[8192];
	struct op o;
	struct res r;
	long long sr;

	pat(buf, sizeof(buf), 19);
	SYNC_RB("rbd_write 5000 @slot19+3",
		rbd_write(img, SLOT(19) + 3, 5000, buf), img, SLOT(19), 8192);
	SYNC_RB("rbd_write2 FADVISE_DONTNEED 1000 @slot19+6000",
		rbd_write2(img, SLOT(19) + 6000, 1000, buf,
			   LIBRADOS_OP_FLAG_FADVISE_DONTNEED),
		img, SLOT(19), 8192);
	sr = rbd_read2(img, SLOT(19), 8192, buf,
		       LIBRADOS_OP_FLAG_FADVISE_RANDOM);
	line("rbd_read2 FADVISE_RANDOM 8192 @slot19", "ret=%s crc=%08x",
	     v(sr), crc32_buf(buf, 8192));
	o = (struct op){ .k = K_READ2, .off = SLOT(19), .len = 8192,
			 .buf = buf,
			 .flags = LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL };
	run(img, &o, &r);
	aio_print("rbd_aio_read2 FADVISE_SEQUENTIAL 8192 @slot19", &r,
		  "crc=%08x", crc32_buf(buf, 8192));
	pat(buf, sizeof(buf), 20);
	o = (struct op){ .k = K_WRITE2, .off = SLOT(20) + 17, .len = 4000,
			 .buf = buf,
			 .flags = LIBRADOS_OP_FLAG_FADVISE_NOCACHE };
	AIO_RB("rbd_aio_write2 FADVISE_NOCACHE 4000 @slot20+17", img, &o,
	       SLOT(20), 8192);
}

/* ---- completions and flushes -------------------------------------------- */

static rbd_completion_t fl_writes[8];
static atomic_int fl_seen = -1;

static void flush_cb(rbd_completion_t c, void *arg)
{
	int n = 0;

	(void)c;
	(void)arg;
	for (int i = 0; i < 8; i++)
		n += rbd_aio_is_complete(fl_writes[i]) == 1;
	atomic_store(&fl_seen, n);
}

static pthread_mutex_t rel_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rel_cond = PTHREAD_COND_INITIALIZER;
static int rel_done;
static long rel_rval;
static int rel_inline;

static void release_cb(rbd_completion_t c, void *arg)
{
	(void)arg;
	rel_inline = pthread_equal(pthread_self(), main_tid);
	rel_rval = (long)rbd_aio_get_return_value(c);
	rbd_aio_release(c);
	pthread_mutex_lock(&rel_mtx);
	rel_done = 1;
	pthread_cond_signal(&rel_cond);
	pthread_mutex_unlock(&rel_mtx);
}

static void cases_completions(void)
{
	char buf[64 * KiB], rbuf[4096];
	rbd_completion_t c;
	struct op o;
	int r;

	o = (struct op){ .k = K_FLUSH };
	AIO("aio_flush on an idle image", img, &o);

	/* a flush completes after every write submitted before it */
	pat(buf, sizeof(buf), 19);
	for (int i = 0; i < 8; i++) {
		rbd_aio_create_completion(NULL, NULL, &fl_writes[i]);
		r = rbd_aio_write(img, SLOT(21 + i), sizeof(buf), buf,
				  fl_writes[i]);
		if (r < 0)
			die("rbd_aio_write: %d", r);
	}
	rbd_aio_create_completion(NULL, flush_cb, &c);
	r = rbd_aio_flush(img, c);
	rbd_aio_wait_for_complete(c);
	{
		long fr = (long)rbd_aio_get_return_value(c);
		int wr_ok = 0;

		rbd_aio_release(c);
		for (int i = 0; i < 8; i++) {
			rbd_aio_wait_for_complete(fl_writes[i]);
			wr_ok += rbd_aio_get_return_value(fl_writes[i]) == 0;
			rbd_aio_release(fl_writes[i]);
		}
		line("aio_flush after 8 in-flight writes",
		     "submit=%s rval=%s writes_complete_in_flush_cb=%d/8 "
		     "writes_rval_0=%d/8 %s", v(r), v(fr),
		     atomic_load(&fl_seen), wr_ok,
		     rb(img, SLOT(21), 8 * 64 * KiB));
	}

	/* release from inside the callback (qemu, SPDK, tcmu do this) */
	rbd_aio_create_completion(NULL, release_cb, &c);
	r = rbd_aio_read(img, SLOT(21), sizeof(rbuf), rbuf, c);
	{
		/* generous: only a broken library ever waits this long */
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 60;
		pthread_mutex_lock(&rel_mtx);
		while (r == 0 && !rel_done &&
		       pthread_cond_timedwait(&rel_cond, &rel_mtx, &until) !=
			       ETIMEDOUT)
			;
		pthread_mutex_unlock(&rel_mtx);
	}
	line("rbd_aio_release inside the callback",
	     "submit=%s callback_ran=%d rval=%s callback_inline=%d "
	     "crc=%08x", v(r), rel_done, v(rel_rval), rel_inline,
	     crc32_buf(rbuf, sizeof(rbuf)));

	/* is_complete / return value of a completion never submitted */
	rbd_aio_create_completion(NULL, NULL, &c);
	line("rbd_aio_is_complete before submission",
	     "ret=%d rval=%s", rbd_aio_is_complete(c),
	     v(rbd_aio_get_return_value(c)));
	rbd_aio_release(c);
	SYNC("rbd_flush", rbd_flush(img));
}

/* ---- event notification (on a second handle) ---------------------------- */

#define EV_N 17

static void cases_events(void)
{
	rbd_image_t h;
	rbd_completion_t comps[EV_N], polled[32], extra[4];
	struct cbrec recs[EV_N];
	static char rbufs[10][4096];
	char wbuf[4096], known[512], nw[512];
	uint64_t moff = SENTINEL, cnt = 0;
	int r, efd, sub[EV_N], np1, np2, np3, caw_polled = 0, foreign = 0;
	int cb_ok = 0, inl = 0, dup = 0;
	bool seen[EV_N] = { false };

	r = rbd_open(io, image_name, &h, NULL);
	if (r < 0)
		die("second rbd_open: %d", r);
	r = rbd_poll_io_events(h, polled, 0);
	line("rbd_poll_io_events numcomp 0 (no notification)", "ret=%s",
	     v(r));
	r = rbd_poll_io_events(h, polled, -1);
	line("rbd_poll_io_events numcomp -1 (no notification)", "ret=%s",
	     v(r));
	r = rbd_poll_io_events(h, polled, 32);
	line("rbd_poll_io_events numcomp 32 (no notification)", "ret=%s",
	     v(r));
	efd = eventfd(0, EFD_NONBLOCK);
	if (efd < 0)
		die("eventfd: %s", strerror(errno));
	line("rbd_set_image_notification type 0", "ret=%s",
	     v(rbd_set_image_notification(h, efd, 0)));
	line("rbd_set_image_notification type 3", "ret=%s",
	     v(rbd_set_image_notification(h, efd, 3)));
	line("rbd_set_image_notification eventfd", "ret=%s",
	     v(rbd_set_image_notification(h, efd, EVENT_TYPE_EVENTFD)));
	line("rbd_set_image_notification eventfd again", "ret=%s",
	     v(rbd_set_image_notification(h, efd, EVENT_TYPE_EVENTFD)));
	line("rbd_set_image_notification pipe after eventfd", "ret=%s",
	     v(rbd_set_image_notification(h, efd, EVENT_TYPE_PIPE)));
	line("rbd_poll_io_events numcomp 0", "ret=%s",
	     v(rbd_poll_io_events(h, polled, 0)));
	line("rbd_poll_io_events numcomp -1", "ret=%s",
	     v(rbd_poll_io_events(h, polled, -1)));
	line("rbd_poll_io_events nothing pending", "ret=%s",
	     v(rbd_poll_io_events(h, polled, 32)));

	/* 10 reads, 5 writes, 1 flush, 1 compare-and-write */
	pat(wbuf, sizeof(wbuf), 20);
	if (rbd_read(h, SLOT(30), sizeof(known), known) != sizeof(known))
		die("read failed");
	pat(nw, sizeof(nw), 21);
	memset(recs, 0, sizeof(recs));
	for (int i = 0; i < EV_N; i++)
		if (rbd_aio_create_completion(&recs[i], cb_fn, &comps[i]) < 0)
			die("rbd_aio_create_completion");
	for (int i = 0; i < 10; i++)
		sub[i] = rbd_aio_read(h, SLOT(i), 4096, rbufs[i], comps[i]);
	for (int i = 10; i < 15; i++)
		sub[i] = rbd_aio_write(h, SLOT(31 + i), sizeof(wbuf), wbuf,
				       comps[i]);
	sub[15] = rbd_aio_flush(h, comps[15]);
	sub[16] = (int)rbd_aio_compare_and_write(h, SLOT(30), 512, known, nw,
						 comps[16], &moff, 0);
	for (int i = 0; i < EV_N; i++)
		if (sub[i] == 0)
			rbd_aio_wait_for_complete(comps[i]);
	/* every completion is COMPLETE: all events are posted */
	if (read(efd, &cnt, sizeof(cnt)) != sizeof(cnt))
		cnt = 0;
	np1 = rbd_poll_io_events(h, polled, 5);
	np2 = rbd_poll_io_events(h, polled + (np1 > 0 ? np1 : 0), 32 - 5);
	np3 = rbd_poll_io_events(h, extra, 4);
	for (int i = 0; i < (np1 > 0 ? np1 : 0) + (np2 > 0 ? np2 : 0) &&
			i < 32; i++) {
		int k = -1;

		for (int j = 0; j < EV_N; j++)
			if (polled[i] == comps[j])
				k = j;
		if (k < 0)
			foreign++;
		else if (seen[k])
			dup++;
		else
			seen[k] = true;
		if (k == 16)
			caw_polled = 1;
	}
	for (int i = 0; i < EV_N; i++) {
		struct res rr = { .submit = sub[i],
				  .rval = rbd_aio_get_return_value(comps[i]) };

		memcpy(&rr.cb, &recs[i], sizeof(recs[i]));
		cb_ok += !strcmp(cbstr(&rr), "cb=ok");
		inl += atomic_load(&recs[i].inl) != 0;
	}
	{
		int rd_ok = 0, wr_ok = 0, sub_ok = 0;

		for (int i = 0; i < EV_N; i++)
			sub_ok += sub[i] == 0;
		for (int i = 0; i < 10; i++)
			rd_ok += rbd_aio_get_return_value(comps[i]) == 4096;
		for (int i = 10; i < 15; i++)
			wr_ok += rbd_aio_get_return_value(comps[i]) == 0;
		line("events 10 reads + 5 writes + flush + CAW on eventfd",
		     "submit=%d/%d eventfd=%" PRIu64 " polled=%d+%d+%d "
		     "caw_polled=%d foreign=%d dup=%d cb_ok=%d/%d "
		     "callback_inline=%d reads_4096=%d/10 writes_0=%d/5 "
		     "flush=%s caw=%s", sub_ok, EV_N, cnt, np1, np2, np3,
		     caw_polled,
		     foreign, dup, cb_ok, EV_N, inl != 0, rd_ok, wr_ok,
		     v(rbd_aio_get_return_value(comps[15])),
		     v(rbd_aio_get_return_value(comps[16])));
	}
	for (int i = 0; i < EV_N; i++)
		rbd_aio_release(comps[i]);
	/* zero-length and failing ops are events too */
	{
		rbd_completion_t c1, c2;
		char b[16];
		int s1, s2, n;

		rbd_aio_create_completion(NULL, NULL, &c1);
		rbd_aio_create_completion(NULL, NULL, &c2);
		s1 = rbd_aio_read(h, S, 0, b, c1);
		s2 = rbd_aio_read(h, S, 16, b, c2);
		rbd_aio_wait_for_complete(c1);
		rbd_aio_wait_for_complete(c2);
		cnt = 0;
		if (read(efd, &cnt, sizeof(cnt)) != sizeof(cnt))
			cnt = 0;
		n = rbd_poll_io_events(h, polled, 32);
		line("events zero-length read + read @size", "submit=%s/%s "
		     "rval=%s/%s eventfd=%" PRIu64 " polled=%d", v(s1), v(s2),
		     v(rbd_aio_get_return_value(c1)),
		     v(rbd_aio_get_return_value(c2)), cnt, n);
		rbd_aio_release(c1);
		rbd_aio_release(c2);
	}
	/* fio's order: close the eventfd, then the image */
	close(efd);
	SYNC("rbd_close second handle", rbd_close(h));
}

/* ---- read-only and snapshot opens ---------------------------------------- */

static void write_cases(const char *prefix, rbd_image_t h)
{
	char buf[4096], name[128];
	struct iovec iov[2], iov0[2] = { { buf, 0 }, { buf, 0 } };
	uint64_t moff;
	struct op o;

	pat(buf, sizeof(buf), 22);
	iov[0] = (struct iovec){ buf, 100 };
	iov[1] = (struct iovec){ buf + 200, 100 };
#define W(label, ...)                                                     \
	do {                                                              \
		o = (struct op){ __VA_ARGS__ };                           \
		snprintf(name, sizeof(name), "%s %s", prefix, label);     \
		AIO(name, h, &o);                                         \
	} while (0)
	W("write 4096 @0", .k = K_WRITE, .off = 0, .len = 4096, .buf = buf);
	/* zero-length requests: is EROFS checked before "len 0 is ok"? */
	W("write len 0", .k = K_WRITE, .off = 0, .len = 0, .buf = buf);
	W("write len 0 @size+4096", .k = K_WRITE, .off = S + 4096, .len = 0,
	  .buf = buf);
	W("writev 2 empty iovecs", .k = K_WRITEV, .off = 0, .iov = iov0,
	  .iovcnt = 2);
	W("discard len 0", .k = K_DISCARD, .off = 0, .len = 0);
	W("write_zeroes len 0", .k = K_WZERO, .off = 0, .len = 0);
	W("writesame len 0", .k = K_WSAME, .off = 0, .len = 0, .buf = buf,
	  .dl = 512);
	W("read len 0", .k = K_READ, .off = 0, .len = 0, .buf = buf);
	W("write 1 @size", .k = K_WRITE, .off = S, .len = 1, .buf = buf);
	W("writev 2 iovecs", .k = K_WRITEV, .off = 0, .iov = iov,
	  .iovcnt = 2);
	W("discard 4M @0", .k = K_DISCARD, .off = 0, .len = OBJ);
	W("write_zeroes 4096", .k = K_WZERO, .off = 0, .len = 4096);
	W("write_zeroes flags 2", .k = K_WZERO, .off = 0, .len = 4096,
	  .zf = 2);
	W("writesame 4096/512", .k = K_WSAME, .off = 0, .len = 4096,
	  .buf = buf, .dl = 512);
	W("writesame data_len 0", .k = K_WSAME, .off = 0, .len = 4096,
	  .buf = buf, .dl = 0);
	moff = SENTINEL;
	W("compare_and_write 512 @0", .k = K_CAW, .off = 0, .len = 512,
	  .cmp = buf, .buf = buf, .moff = &moff);
	W("flush", .k = K_FLUSH);
	W("read 4096 @0", .k = K_READ, .off = 0, .len = 4096, .buf = buf);
#undef W
	snprintf(name, sizeof(name), "%s rbd_write 4096 @0", prefix);
	SYNC(name, rbd_write(h, 0, 4096, buf));
	snprintf(name, sizeof(name), "%s rbd_write len 0", prefix);
	SYNC(name, rbd_write(h, 0, 0, buf));
	snprintf(name, sizeof(name), "%s rbd_discard len 0", prefix);
	SYNC(name, rbd_discard(h, 0, 0));
	snprintf(name, sizeof(name), "%s rbd_discard 4096 @0", prefix);
	SYNC(name, rbd_discard(h, 0, 4096));
	snprintf(name, sizeof(name), "%s rbd_write_zeroes 4096 @0", prefix);
	SYNC(name, rbd_write_zeroes(h, 0, 4096, 0, 0));
	snprintf(name, sizeof(name), "%s rbd_flush", prefix);
	SYNC(name, rbd_flush(h));
}

static void cases_read_only(void)
{
	rbd_image_t h;
	rbd_image_info_t info;
	uint64_t u = SENTINEL;
	int r;

	r = rbd_open_read_only(io, image_name, &h, NULL);
	line("rbd_open_read_only", "ret=%s", v(r));
	if (r < 0)
		return;
	r = rbd_stat(h, &info, sizeof(info));
	rbd_get_flags(h, &u);
	line("read-only rbd_stat", "ret=%s size=%" PRIu64 " order=%d "
	     "flags=0x%" PRIx64, v(r), info.size, info.order, u);
	write_cases("read-only", h);
	line("read-only read back", "%s", rb(h, 0, 8192));
	SYNC("read-only rbd_close", rbd_close(h));
}

static void cases_snapshot(void)
{
	rbd_image_t h;
	rbd_image_info_t info;
	rbd_snap_info_t snaps[4];
	char buf[4096];
	int r, max = 4;
	uint64_t u = 0;

	/* make the head differ from s1 where the snapshot is read */
	pat(buf, sizeof(buf), 23);
	SYNC_RB("head rbd_write 4096 @0", rbd_write(img, 0, 4096, buf), img, 0,
		4096);
	r = rbd_open(io, image_name, &h, "s1");
	line("rbd_open snapshot s1", "ret=%s", v(r));
	if (r < 0)
		return;
	memset(&info, 0, sizeof(info));
	r = rbd_stat(h, &info, sizeof(info));
	line("snapshot rbd_stat", "ret=%s size=%" PRIu64 " obj_size=%" PRIu64
	     " num_objs=%" PRIu64 " order=%d parent_pool=%" PRId64, v(r),
	     info.size, info.obj_size, info.num_objs, info.order,
	     info.parent_pool);
	r = rbd_get_size(h, &u);
	line("snapshot rbd_get_size", "ret=%s size=%" PRIu64, v(r), u);
	u = SENTINEL;
	r = rbd_get_features(h, &u);
	line("snapshot rbd_get_features", "ret=%s features=0x%" PRIx64, v(r),
	     u);
	r = rbd_snap_list(h, snaps, &max);
	line("snapshot rbd_snap_list", "ret=%s first=%s", v(r),
	     r > 0 ? snaps[0].name : "-");
	if (r >= 0)
		rbd_snap_list_end(snaps);
	/* the snapshot keeps the imported data the head has since lost */
	line("snapshot read @0 (head overwritten)", "%s head_%s",
	     rb(h, 0, 4096), rb(img, 0, 4096));
	line("snapshot read object 2 (head discarded)", "%s head_%s",
	     rb(h, DISC, MiB), rb(img, DISC, MiB));
	line("snapshot read slot 21 (written after s1)", "%s head_%s",
	     rb(h, SLOT(21), 64 * KiB), rb(img, SLOT(21), 64 * KiB));
	line("snapshot read end (written after s1)", "%s",
	     rb(h, S - 4096, 4096));
	{
		char b[4096];
		long long sr;

		memset(b, 0xa5, sizeof(b));
		sr = rbd_read(h, S - 100, 4096, b);
		line("snapshot rbd_read len 4096 @size-100", "ret=%s crc=%08x",
		     v(sr), crc32_buf(b, 100));
	}
	write_cases("snapshot", h);
	SYNC("snapshot rbd_close", rbd_close(h));

	/* rbd_snap_set: "" (like NULL) goes back to HEAD. */
	r = rbd_open(io, image_name, &h, NULL);
	line("rbd_open for snap_set \"\"", "ret=%s", v(r));
	if (r == 0) {
		char b[1];

		line("rbd_snap_set s1", "ret=%s", v(rbd_snap_set(h, "s1")));
		line("at s1 zero-length write", "ret=%s",
		     v(rbd_write(h, 0, 0, b)));
		line("rbd_snap_set \"\"", "ret=%s", v(rbd_snap_set(h, "")));
		line("back at head zero-length write", "ret=%s",
		     v(rbd_write(h, 0, 0, b)));
		line("back at head read @0", "%s head_%s", rb(h, 0, 4096),
		     rb(img, 0, 4096));
		SYNC("snap_set \"\" rbd_close", rbd_close(h));
	}

	r = rbd_open_read_only(io, image_name, &h, "s1");
	line("rbd_open_read_only snapshot s1", "ret=%s", v(r));
	if (r < 0)
		return;
	line("read-only snapshot read @0", "%s", rb(h, 0, 4096));
	{
		struct op o = { .k = K_WRITE, .off = 0, .len = 4096,
				.buf = buf };

		AIO("read-only snapshot write", h, &o);
	}
	SYNC("read-only snapshot rbd_close", rbd_close(h));
}

static void cases_final(void)
{
	struct op o;
	struct res r;

	/* discard everything: len UINT64_MAX from 0 does not wrap */
	o = (struct op){ .k = K_DISCARD, .off = 0, .len = UINT64_MAX };
	AIO("discard len UINT64_MAX @0", img, &o);
	o = (struct op){ .k = K_READ, .off = 0, .len = S, .buf = big };
	run(img, &o, &r);
	{
		/* whole objects are zero, partial ones are old-or-zero:
		 * report only whether any whole object kept data */
		int kept = 0;

		for (uint64_t ob = 0; ob < S / OBJ; ob++)
			kept += !all_zero(big + ob * OBJ, OBJ);
		line("read all after discarding all",
		     "submit=%s rval=%s %s objects_not_zero=%d", v(r.submit),
		     v(r.rval), cbstr(&r), kept);
	}
	SYNC("rbd_close", rbd_close(img));
	img = NULL;
}

/* ---- librbdlite only: misuse the real librbd does not survive ----------- */

static int lo_pass, lo_fail;

__attribute__((format(printf, 3, 4)))
static void lo(const char *name, bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" %s\n", ok ? "ok" : "FAIL");
	fflush(stdout);
	if (ok)
		lo_pass++;
	else
		lo_fail++;
}

/* rval must be one of: clipped count (reads) / 0 (writes) / -EINVAL */
static void lo_op(const char *name, rbd_image_t im, const struct op *o,
		  long long want_sub, long long want_rval, bool einval_ok)
{
	struct res r;
	bool ok;

	run(im, o, &r);
	ok = r.submit == want_sub &&
	     (r.submit != 0 || r.rval == want_rval ||
	      (einval_ok && r.rval == -EINVAL)) &&
	     (r.submit != 0 ? !strcmp(cbstr(&r), "cb=none")
			    : !strcmp(cbstr(&r), "cb=ok"));
	lo(name, ok, "submit=%s rval=%s %s", v(r.submit),
	   r.submit == 0 ? v(r.rval) : "n/a", cbstr(&r));
}

/* A synchronous call that must return want. */
#define LO_RET(name, expr, want)                                          \
	do {                                                              \
		long long r_ = (expr);                                    \
		lo(name, r_ == (want), "ret=%s", v(r_));                  \
	} while (0)

static int lite_only(void)
{
	char buf[4096];
	struct cbrec rec;
	rbd_completion_t c;
	rbd_image_t h;
	struct op o;
	struct iovec iov[2];
	uint64_t u, moff;
	long long r, rv;

	pat(buf, sizeof(buf), 24);
	memset(&rec, 0, sizeof(rec));

	/* NULL image */
	rbd_aio_create_completion(&rec, cb_fn, &c);
	r = rbd_aio_read(NULL, 0, 4096, buf, c);
	lo("aio_read NULL image", r == -EINVAL, "submit=%s", v(r));
	r = rbd_aio_write(NULL, 0, 4096, buf, c);
	lo("aio_write NULL image", r == -EINVAL, "submit=%s", v(r));
	r = rbd_aio_discard(NULL, 0, 4096, c);
	lo("aio_discard NULL image", r == -EINVAL, "submit=%s", v(r));
	r = rbd_aio_flush(NULL, c);
	lo("aio_flush NULL image", r == -EINVAL, "submit=%s", v(r));
	/* the completion is still unused and works */
	r = rbd_aio_read(img, 0, 4096, buf, c);
	if (r == 0)
		rbd_aio_wait_for_complete(c);
	rv = rbd_aio_get_return_value(c);
	lo("completion usable after NULL-image failures",
	   r == 0 && rv == 4096 && atomic_load(&rec.calls) == 1,
	   "submit=%s rval=%s callbacks=%d", v(r), v(rv),
	   atomic_load(&rec.calls));
	/* reusing a completion for a second operation */
	r = rbd_aio_read(img, 0, 4096, buf, c);
	rv = rbd_aio_get_return_value(c);
	barrier(img);
	lo("reuse a completed completion for a second op",
	   r == -EINVAL && rv == 4096 && atomic_load(&rec.calls) == 1,
	   "submit=%s rval_of_first=%s callbacks=%d", v(r), v(rv),
	   atomic_load(&rec.calls));
	rbd_aio_release(c);
	{
		rbd_completion_t c2;

		rbd_aio_create_completion(NULL, NULL, &c2);
		rbd_aio_write(img, SLOT(40), 4096, buf, c2);
		r = rbd_aio_write(img, SLOT(41), 4096, buf, c2);
		rbd_aio_wait_for_complete(c2);
		rv = rbd_aio_get_return_value(c2);
		lo("reuse an in-flight completion", r == -EINVAL && rv == 0,
		   "submit=%s rval=%s", v(r), v(rv));
		rbd_aio_release(c2);
	}
	LO_RET("rbd_read NULL image", rbd_read(NULL, 0, 10, buf), -EINVAL);
	LO_RET("rbd_write NULL image", rbd_write(NULL, 0, 10, buf), -EINVAL);
	LO_RET("rbd_discard NULL image", rbd_discard(NULL, 0, 10), -EINVAL);
	LO_RET("rbd_flush NULL image", rbd_flush(NULL), -EINVAL);
	{
		rbd_image_info_t info;

		LO_RET("rbd_stat NULL image",
		       rbd_stat(NULL, &info, sizeof(info)), -EINVAL);
	}
	LO_RET("rbd_get_size NULL image", rbd_get_size(NULL, &u), -EINVAL);
	LO_RET("rbd_get_features NULL image", rbd_get_features(NULL, &u),
	       -EINVAL);
	LO_RET("rbd_invalidate_cache NULL image", rbd_invalidate_cache(NULL),
	       -EINVAL);
	LO_RET("rbd_close NULL", rbd_close(NULL), -EINVAL);
	{
		rbd_completion_t pc[2];

		LO_RET("rbd_poll_io_events NULL image",
		       rbd_poll_io_events(NULL, pc, 2), -EINVAL);
		LO_RET("rbd_set_image_notification NULL image",
		       rbd_set_image_notification(NULL, 0, 2), -EINVAL);
	}

	/* NULL completion */
	LO_RET("aio_read NULL completion",
	       rbd_aio_read(img, 0, 4096, buf, NULL), -EINVAL);
	LO_RET("aio_write NULL completion",
	       rbd_aio_write(img, SLOT(40), 4096, buf, NULL), -EINVAL);
	LO_RET("aio_flush NULL completion", rbd_aio_flush(img, NULL),
	       -EINVAL);
	LO_RET("rbd_aio_is_complete NULL", rbd_aio_is_complete(NULL),
	       -EINVAL);
	LO_RET("rbd_aio_get_return_value NULL",
	       rbd_aio_get_return_value(NULL), -EINVAL);
	LO_RET("rbd_aio_wait_for_complete NULL",
	       rbd_aio_wait_for_complete(NULL), -EINVAL);
	lo("rbd_aio_get_arg NULL", rbd_aio_get_arg(NULL) == NULL, "ret=%s",
	   rbd_aio_get_arg(NULL) ? "non-NULL" : "NULL");
	rbd_aio_release(NULL);
	lo("rbd_aio_release NULL", true, "survived");
	LO_RET("rbd_aio_create_completion NULL out",
	       rbd_aio_create_completion(NULL, NULL, NULL), -EINVAL);

	/* double release, then the allocator must still be sane */
	rbd_aio_create_completion(NULL, NULL, &c);
	rbd_aio_release(c);
	rbd_aio_release(c);
	lo("double rbd_aio_release", true, "survived");
	{
		rbd_completion_t c1, c2;
		long long r1, r2;

		rbd_aio_create_completion(NULL, NULL, &c1);
		rbd_aio_create_completion(NULL, NULL, &c2);
		r1 = rbd_aio_read(img, 0, 4096, buf, c1);
		r2 = rbd_aio_read(img, 4096, 4096, buf, c2);
		if (r1 == 0)
			rbd_aio_wait_for_complete(c1);
		if (r2 == 0)
			rbd_aio_wait_for_complete(c2);
		lo("two new completions after the double release",
		   c1 != c2 && r1 == 0 && r2 == 0 &&
		   rbd_aio_get_return_value(c1) == 4096 &&
		   rbd_aio_get_return_value(c2) == 4096,
		   "submit=%s/%s rval=%s/%s distinct=%d", v(r1), v(r2),
		   v(rbd_aio_get_return_value(c1)),
		   v(rbd_aio_get_return_value(c2)), c1 != c2);
		rbd_aio_release(c1);
		rbd_aio_release(c2);
	}
	/*
	 * A stale handle released again after a new completion took its
	 * memory (the allocator hands the last freed object back first):
	 * the new completion must stay live and deliver its own result.
	 */
	{
		rbd_completion_t old, c3;
		long long r3;
		int n_same = 0, n_ok = 0;

		for (int i = 0; i < 16; i++) {
			rbd_aio_create_completion(NULL, NULL, &old);
			rbd_aio_release(old);
			rbd_aio_create_completion(NULL, NULL, &c3);
			rbd_aio_release(old);	/* the stale handle */
			n_same += ((uintptr_t)old & 0xffffffffffffull) ==
				  ((uintptr_t)c3 & 0xffffffffffffull);
			r3 = rbd_aio_read(img, 0, 4096, buf, c3);
			if (r3 == 0)
				rbd_aio_wait_for_complete(c3);
			n_ok += r3 == 0 && rbd_aio_is_complete(c3) == 1 &&
				rbd_aio_get_return_value(c3) == 4096;
			rbd_aio_release(c3);
		}
		lo("release of a stale handle after its memory was reused",
		   n_ok == 16 && n_same > 0, "ok=%d/16 reused=%d", n_ok,
		   n_same);
	}

	/* NULL buffers */
	o = (struct op){ .k = K_READ, .off = 0, .len = 4096, .buf = NULL };
	lo_op("aio_read NULL buffer", img, &o, -EINVAL, 0, false);
	o.k = K_WRITE;
	lo_op("aio_write NULL buffer", img, &o, -EINVAL, 0, false);
	o = (struct op){ .k = K_READV, .off = 0, .iov = NULL, .iovcnt = 1 };
	lo_op("aio_readv NULL iov", img, &o, -EINVAL, 0, false);
	o.k = K_WRITEV;
	lo_op("aio_writev NULL iov", img, &o, -EINVAL, 0, false);
	iov[0] = (struct iovec){ buf, 10 };
	iov[1] = (struct iovec){ NULL, 10 };
	o = (struct op){ .k = K_WRITEV, .off = 0, .iov = iov, .iovcnt = 2 };
	lo_op("aio_writev iov_base NULL", img, &o, -EINVAL, 0, false);
	o.k = K_READV;
	lo_op("aio_readv iov_base NULL", img, &o, -EINVAL, 0, false);
	o = (struct op){ .k = K_WSAME, .off = 0, .len = 4096, .buf = NULL,
			 .dl = 512 };
	lo_op("aio_writesame NULL buffer", img, &o, -EINVAL, 0, false);
	moff = SENTINEL;
	o = (struct op){ .k = K_CAW, .off = 0, .len = 512, .cmp = NULL,
			 .buf = buf, .moff = &moff };
	lo_op("aio_compare_and_write NULL cmp", img, &o, -EINVAL, 0, false);
	o.cmp = buf;
	o.buf = NULL;
	lo_op("aio_compare_and_write NULL buf", img, &o, -EINVAL, 0, false);
	LO_RET("rbd_read NULL buffer", rbd_read(img, 0, 10, NULL), -EINVAL);
	LO_RET("rbd_write NULL buffer", rbd_write(img, 0, 10, NULL), -EINVAL);
	LO_RET("rbd_writesame NULL buffer",
	       rbd_writesame(img, 0, 512, NULL, 512, 0), -EINVAL);
	LO_RET("rbd_compare_and_write NULL cmp",
	       rbd_compare_and_write(img, 0, 512, NULL, buf, &moff, 0),
	       -EINVAL);
	/* Lengths whose sums wrap (librbd aborts copying them): clipped at
	 * the end they would pass the 512-byte check, and the compare
	 * length, which is not clipped, would size the copy. */
	LO_RET("rbd_compare_and_write len 2^64-51 @size-100",
	       rbd_compare_and_write(img, S - 100, SIZE_MAX - 50, buf, buf,
				     &moff, 0),
	       -EINVAL);
	o = (struct op){ .k = K_CAW, .off = S - 4095, .len = SIZE_MAX,
			 .cmp = buf, .buf = buf, .moff = &moff };
	lo_op("aio_compare_and_write len 2^64-1 @size-4095", img, &o, -EINVAL,
	      0, false);
	LO_RET("rbd_stat NULL info", rbd_stat(img, NULL, 0), -EINVAL);
	LO_RET("rbd_get_size NULL", rbd_get_size(img, NULL), -EINVAL);
	LO_RET("rbd_snap_list NULL max", rbd_snap_list(img, NULL, NULL),
	       -EINVAL);
	LO_RET("rbd_poll_io_events NULL array",
	       rbd_poll_io_events(img, NULL, 4), -EINVAL);

	/* The iovec array of an aio readv may go once the call returned
	 * (librbdlite copies it; librbd keeps the pointer until the read
	 * completes): the array is pointed at a decoy right after the
	 * submission, and the read must still land in the first buffers. */
	{
		static const char zero[1024];
		char want[1024], a1[512], a2[512], decoy[1024];
		struct iovec *arr = malloc(2 * sizeof(*arr));

		if (!arr)
			die("out of memory");
		pat(want, sizeof(want), 43);
		if (rbd_write(img, SLOT(43), sizeof(want), want) != 1024)
			die("write failed");
		memset(a1, 0, sizeof(a1));
		memset(a2, 0, sizeof(a2));
		memset(decoy, 0, sizeof(decoy));
		arr[0] = (struct iovec){ a1, sizeof(a1) };
		arr[1] = (struct iovec){ a2, sizeof(a2) };
		memset(&rec, 0, sizeof(rec));
		rbd_aio_create_completion(&rec, cb_fn, &c);
		r = rbd_aio_readv(img, arr, 2, SLOT(43), c);
		arr[0] = (struct iovec){ decoy, 512 };
		arr[1] = (struct iovec){ decoy + 512, 512 };
		if (r == 0)
			rbd_aio_wait_for_complete(c);
		rv = r == 0 ? rbd_aio_get_return_value(c) : r;
		rbd_aio_release(c);
		free(arr);
		lo("aio_readv, its iovec array changed after the submission",
		   r == 0 && rv == 1024 && !memcmp(a1, want, 512) &&
			   !memcmp(a2, want + 512, 512) &&
			   !memcmp(decoy, zero, sizeof(decoy)),
		   "submit=%s rval=%s", v(r), v(rv));
	}

	/* compare-and-write cases that abort the real librbd */
	{
		char cur[512], cmp[512];

		if (rbd_read(img, SLOT(42), 512, cur) != 512)
			die("read failed");
		memcpy(cmp, cur, 512);
		cmp[5] ^= 1;
		o = (struct op){ .k = K_CAW, .off = SLOT(42), .len = 512,
				 .cmp = cmp, .buf = buf, .moff = NULL };
		lo_op("aio_compare_and_write mismatch, NULL mismatch_off",
		      img, &o, 0, -EILSEQ, false);
		moff = SENTINEL;
		o = (struct op){ .k = K_CAW, .off = SLOT(42), .len = 0,
				 .cmp = cmp, .buf = buf, .moff = &moff };
		lo_op("aio_compare_and_write len 0", img, &o, 0, 0, false);
		LO_RET("rbd_compare_and_write len 0",
		       rbd_compare_and_write(img, SLOT(42), 0, cmp, buf, &moff,
					     0), 0);
	}

	/* lengths whose end wraps past 2^64 (librbd hangs or aborts) */
	o = (struct op){ .k = K_READ, .off = 4096, .len = SIZE_MAX,
			 .buf = big };
	lo_op("read len SIZE_MAX @4096 (end wraps)", img, &o, 0,
	      (long long)(S - 4096), true);
	o = (struct op){ .k = K_WRITE, .off = S - 4096, .len = SIZE_MAX,
			 .buf = big };
	lo_op("write len SIZE_MAX @size-4096 (end wraps)", img, &o, 0, 0,
	      true);
	o = (struct op){ .k = K_WRITE, .off = 0, .len = SIZE_MAX,
			 .buf = big };
	lo_op("write len SIZE_MAX @0", img, &o, 0, 0, true);
	o = (struct op){ .k = K_DISCARD, .off = S - 4096, .len = UINT64_MAX };
	lo_op("discard len UINT64_MAX @size-4096 (end wraps)", img, &o, 0, 0,
	      true);
	o = (struct op){ .k = K_WZERO, .off = S - 4096, .len = SIZE_MAX };
	lo_op("write_zeroes len SIZE_MAX @size-4096 (end wraps)", img, &o, 0,
	      0, true);
	o.zf = 1;
	lo_op("write_zeroes THICK len SIZE_MAX @size-4096 (end wraps)", img,
	      &o, 0, 0, true);
	o = (struct op){ .k = K_WSAME, .off = S - 4096,
			 .len = SIZE_MAX / 512 * 512, .buf = buf, .dl = 512 };
	lo_op("writesame len ~SIZE_MAX @size-4096 (end wraps)", img, &o, 0, 0,
	      true);
	iov[0] = (struct iovec){ big, SIZE_MAX / 2 + 1 };
	iov[1] = (struct iovec){ buf, 10 };
	o = (struct op){ .k = K_WRITEV, .off = 0, .iov = iov, .iovcnt = 2 };
	{
		struct res rr;

		run(img, &o, &rr);
		lo("writev total > SSIZE_MAX @0", rr.submit == -EINVAL ||
		   (rr.submit == 0 && (rr.rval == 0 || rr.rval == -EINVAL)),
		   "submit=%s rval=%s %s", v(rr.submit),
		   rr.submit == 0 ? v(rr.rval) : "n/a", cbstr(&rr));
	}
	r = rbd_write(img, S - 4096, SIZE_MAX, big);
	lo("rbd_write len SIZE_MAX @size-4096 (end wraps)",
	   r == 4096 || r == -EINVAL, "ret=%s", v(r));

	/* NULL progress callbacks (the real librbd calls them unchecked):
	 * a shrink and a regrowth, a snapshot made and removed, a rollback
	 * to it */
	LO_RET("rbd_resize2 shrink NULL progress",
	       rbd_resize2(img, S - 2 * OBJ, true, NULL, NULL), 0);
	LO_RET("rbd_resize2 grow NULL progress",
	       rbd_resize2(img, S, true, NULL, NULL), 0);
	LO_RET("rbd_snap_create2 NULL progress",
	       rbd_snap_create2(img, "lo-s", 0, NULL, NULL), 0);
	LO_RET("rbd_snap_rollback_with_progress NULL progress",
	       rbd_snap_rollback_with_progress(img, "lo-s", NULL, NULL), 0);
	LO_RET("rbd_snap_remove2 NULL progress",
	       rbd_snap_remove2(img, "lo-s", 0, NULL, NULL), 0);

	/* a closed handle; a second close */
	r = rbd_open(io, image_name, &h, NULL);
	if (r < 0)
		die("rbd_open: %lld", r);
	LO_RET("rbd_close", rbd_close(h), 0);
	memset(&rec, 0, sizeof(rec));
	rbd_aio_create_completion(&rec, cb_fn, &c);
	LO_RET("aio_read on a closed image", rbd_aio_read(h, 0, 4096, buf, c),
	       -EINVAL);
	LO_RET("aio_flush on a closed image", rbd_aio_flush(h, c), -EINVAL);
	rbd_aio_release(c);
	LO_RET("rbd_read on a closed image", rbd_read(h, 0, 10, buf),
	       -EINVAL);
	LO_RET("rbd_get_size on a closed image", rbd_get_size(h, &u),
	       -EINVAL);
	LO_RET("rbd_close twice", rbd_close(h), -EINVAL);

	LO_RET("rbd_close main image", rbd_close(img), 0);
	img = NULL;
	printf("lite-only: %d ok, %d failed\n", lo_pass, lo_fail);
	return lo_fail ? 1 : 0;
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
	bool lite = false;
	int r = 0;

	if (argc >= 1 && argv[0]) {
		const char *p = strrchr(argv[0], '/');

		prog = p ? p + 1 : argv[0];
	}
	if (argc >= 2 && !strcmp(argv[1], "--lite-only")) {
		lite = true;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s [--lite-only] POOL IMAGE\n", prog);
		return 2;
	}
	pool_name = argv[1];
	image_name = argv[2];
	main_tid = pthread_self();
	crc_init();
	connect_cluster(pool_name);
	open_main();

	if (lite) {
		r = lite_only();
	} else {
		cases_info();
		cases_zero_length();
		cases_past_end();
		cases_crossing_end();
		cases_huge();
		cases_iovec();
		cases_writesame();
		cases_write_zeroes();
		cases_caw();
		cases_discard();
		cases_sync_misc();
		cases_completions();
		cases_events();
		cases_read_only();
		cases_snapshot();
		cases_final();
	}
	if (img)
		rbd_close(img);
	free(big);
	rados_ioctx_destroy(io);
	rados_shutdown(cluster);
	return r;
}
