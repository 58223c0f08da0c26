/*
 * rbdio.c - a seeded, reproducible aio workload and its verifier, built
 * twice from this one source: against librbdlite (rbdio-lite, our
 * <rbd/librbd.h>) and against the real librbd (rbdio-librbd, the system
 * header), so that data written by one library can be checked with the
 * other.
 *
 *   rbdio write   POOL IMAGE SEED [NOPS]  run the workload, then flush
 *   rbdio verify  POOL IMAGE SEED [NOPS]  recompute the expected image and
 *                                         compare it with a full read-back
 *   rbdio cmpfile POOL IMAGE FILE         compare the image with FILE
 *   rbdio whoami                          "librbdlite" or "librbd"
 *
 * The workload is a pure function of SEED, NOPS and the image geometry
 * (size, object size, stripe unit and count): mixed rbd_aio_write,
 * rbd_aio_writev (odd iovec shapes, zero-length entries, buffers laid out
 * out of order), rbd_aio_write_zeroes, rbd_aio_writesame (non-zero
 * patterns) and rbd_aio_discard of whole object sets only (librbd may skip
 * partial discards, librbdlite need not, so only whole objects give the
 * same result on both).  Lengths run from 1 byte to 8 MiB, offsets are
 * unaligned and biased towards stripe-unit, object and object-set
 * boundaries and the image end (writes crossing the end are clipped).  Up
 * to 16 operations are in flight, but never two covering the same bytes,
 * so the final content is that of applying the operations in submission
 * order.  Data never depends on timing.
 *
 * The connection uses the default client and the configuration named by
 * CEPH_CONF.  Exit status: 0 success, 1 mismatch, 2 error.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

/* Present only in librbdlite; NULL when the real librbd is linked. */
extern int rbdlite_is_librbdlite(void) __attribute__((weak));

#define MAX_INFLIGHT	16
#define MAX_LEN		(8u << 20)
#define DEFAULT_NOPS	300

static const char *prog = "rbdio";

#define die(...)                                                          \
	do {                                                              \
		fprintf(stderr, "%s: ", prog);                            \
		fprintf(stderr, __VA_ARGS__);                             \
		fputc('\n', stderr);                                      \
		exit(2);                                                  \
	} while (0)

/* ---- deterministic randomness ------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0 (the tiny modulo bias does not matter). */
static uint64_t rnd(uint64_t *s, uint64_t n)
{
	return splitmix(s) % n;
}

static void fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t s = seed, v;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		v = splitmix(&s);
		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		v = splitmix(&s);
		memcpy(p + i, &v, len - i);
	}
}

/* ---- cluster ------------------------------------------------------------ */

struct conn {
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t image;
	uint64_t size;
	uint64_t obj_size;
	uint64_t stripe_unit;
	uint64_t stripe_count;
};

static void conn_open(struct conn *cn, const char *pool, const char *name)
{
	rbd_image_info_t info;
	int r;

	r = rados_create(&cn->cluster, NULL);
	if (r < 0)
		die("rados_create: %s", strerror(-r));
	r = rados_conf_read_file(cn->cluster, NULL);
	if (r < 0)
		die("rados_conf_read_file (CEPH_CONF=%s): %s",
		    getenv("CEPH_CONF") ? getenv("CEPH_CONF") : "unset",
		    strerror(-r));
	rados_conf_parse_env(cn->cluster, NULL);
	r = rados_connect(cn->cluster);
	if (r < 0)
		die("rados_connect: %s", strerror(-r));
	r = rados_ioctx_create(cn->cluster, pool, &cn->io);
	if (r < 0)
		die("pool %s: %s", pool, strerror(-r));
	r = rbd_open(cn->io, name, &cn->image, NULL);
	if (r < 0)
		die("rbd_open %s/%s: %s", pool, name, strerror(-r));
	r = rbd_get_size(cn->image, &cn->size);
	if (r < 0)
		die("rbd_get_size: %s", strerror(-r));
	r = rbd_stat(cn->image, &info, sizeof(info));
	if (r < 0)
		die("rbd_stat: %s", strerror(-r));
	if (info.size != cn->size)
		die("rbd_stat size %" PRIu64 " != rbd_get_size %" PRIu64,
		    info.size, cn->size);
	cn->obj_size = info.obj_size;
	r = rbd_get_stripe_unit(cn->image, &cn->stripe_unit);
	if (r < 0)
		die("rbd_get_stripe_unit: %s", strerror(-r));
	r = rbd_get_stripe_count(cn->image, &cn->stripe_count);
	if (r < 0)
		die("rbd_get_stripe_count: %s", strerror(-r));
	if (cn->size == 0 || cn->obj_size == 0 || cn->stripe_unit == 0 ||
	    cn->stripe_count == 0)
		die("unexpected geometry: size %" PRIu64 " object %" PRIu64
		    " stripe %" PRIu64 "x%" PRIu64, cn->size, cn->obj_size,
		    cn->stripe_unit, cn->stripe_count);
	if (cn->size > SIZE_MAX / 2)
		die("image too large for the in-memory model");
}

static void conn_close(struct conn *cn)
{
	int r = rbd_close(cn->image);

	if (r < 0)
		die("rbd_close: %s", strerror(-r));
	rados_ioctx_destroy(cn->io);
	rados_shutdown(cn->cluster);
}

/* ---- the workload ------------------------------------------------------- */

enum op_kind { OP_WRITE, OP_WRITEV, OP_ZEROES, OP_WRITESAME, OP_DISCARD };

static const char *const op_names[] = { "write", "writev", "write_zeroes",
					"writesame", "discard" };

struct op {
	enum op_kind kind;
	uint64_t idx;
	uint64_t off, len;	/* as submitted */
	uint64_t end;		/* clipped end: bytes the op may touch */
	unsigned char *data;	/* logical data (write/writev), len bytes */
	unsigned char *phys;	/* writev: the buffers iov points into */
	struct iovec *iov;
	int iovcnt;
	unsigned char pattern[4096];	/* writesame */
	size_t data_len;
};

struct gen {
	uint64_t s;		/* PRNG state */
	uint64_t seed;
	uint64_t size, obj_size, su, sc;
};

static uint64_t gen_len(struct gen *g)
{
	unsigned e = (unsigned)rnd(&g->s, 24);	/* 2^0 .. 2^23 */
	uint64_t len;

	if (rnd(&g->s, 4) == 0)		/* block-multiple sizes */
		len = (1 + rnd(&g->s, 64)) * 4096;
	else
		len = ((uint64_t)1 << e) + rnd(&g->s, (uint64_t)1 << e);
	return len > MAX_LEN ? MAX_LEN : len;
}

static uint64_t gen_off(struct gen *g, uint64_t len)
{
	uint64_t units[3] = { g->su, g->obj_size, g->obj_size * g->sc };
	uint64_t off, unit, nb, b, back;

	switch (rnd(&g->s, 10)) {
	case 0: case 1: case 2: case 3: case 4:		/* anywhere */
		return rnd(&g->s, g->size);
	case 5: case 6: case 7:			/* across a boundary */
		unit = units[rnd(&g->s, 3)];
		nb = g->size / unit;
		if (nb == 0)
			return rnd(&g->s, g->size);
		b = (1 + rnd(&g->s, nb)) * unit;
		if (b >= g->size)
			b = g->size - 1;
		back = 1 + rnd(&g->s, len < b ? len : b);
		return b - back;
	case 8:					/* near the end */
		back = 1 + rnd(&g->s, 2 * len < g->size ? 2 * len : g->size);
		return g->size - back;
	default:					/* aligned */
		off = rnd(&g->s, g->size);
		return off & ~(uint64_t)(rnd(&g->s, 2) ? 511 : 4095);
	}
}

/* Split len into n iovec lengths, some of them zero. */
static void gen_iov(struct gen *g, struct op *o)
{
	int n = 2 + (int)rnd(&g->s, rnd(&g->s, 4) ? 7 : 40);
	uint64_t left = o->len, pos;

	o->iov = calloc((size_t)n, sizeof(*o->iov));
	o->phys = malloc(o->len ? o->len : 1);
	if (!o->iov || !o->phys)
		die("out of memory");
	o->iovcnt = n;
	for (int i = 0; i < n; i++) {
		uint64_t l;

		if (i == n - 1)
			l = left;
		else if (rnd(&g->s, 5) == 0)
			l = 0;
		else
			l = rnd(&g->s, left + 1);
		o->iov[i].iov_len = l;
		left -= l;
	}
	/* Lay the pieces out in reverse order in the physical buffer, so
	 * that the iovecs are not one contiguous run. */
	pos = o->len;
	left = 0;
	for (int i = 0; i < n; i++) {
		pos -= o->iov[i].iov_len;
		o->iov[i].iov_base = o->phys + pos;
		memcpy(o->phys + pos, o->data + left, o->iov[i].iov_len);
		left += o->iov[i].iov_len;
	}
}

/* Generate op number idx.  Consumes the PRNG identically in every mode. */
static void gen_op(struct gen *g, uint64_t idx, struct op *o)
{
	static const size_t dls[] = { 1, 2, 3, 7, 512, 4096, 100, 64 };
	uint64_t k = rnd(&g->s, 100), unit, nsets, first, cnt;

	memset(o, 0, sizeof(*o));
	o->idx = idx;
	if (k < 50)
		o->kind = OP_WRITE;
	else if (k < 72)
		o->kind = OP_WRITEV;
	else if (k < 84)
		o->kind = OP_ZEROES;
	else if (k < 92)
		o->kind = OP_WRITESAME;
	else
		o->kind = OP_DISCARD;

	switch (o->kind) {
	case OP_WRITE:
	case OP_WRITEV:
	case OP_ZEROES:
		o->len = gen_len(g);
		o->off = gen_off(g, o->len);
		break;
	case OP_WRITESAME:
		o->data_len = dls[rnd(&g->s, sizeof(dls) / sizeof(dls[0]))];
		o->len = gen_len(g) / o->data_len * o->data_len;
		if (o->len == 0)
			o->len = o->data_len;
		o->off = gen_off(g, o->len);
		fill(o->pattern, o->data_len, g->seed ^ (idx << 20) ^ 0x5a5a);
		o->pattern[0] |= 1;	/* never all zero */
		break;
	case OP_DISCARD:
		/* Whole object sets only: every object touched is removed. */
		unit = g->obj_size * g->sc;
		nsets = g->size / unit;
		if (nsets == 0) {
			o->kind = OP_ZEROES;
			o->len = gen_len(g);
			o->off = gen_off(g, o->len);
			break;
		}
		first = rnd(&g->s, nsets);
		cnt = 1 + rnd(&g->s, nsets - first < 3 ? nsets - first : 3);
		o->off = first * unit;
		o->len = cnt * unit;
		break;
	}
	o->end = o->off + o->len > g->size ? g->size : o->off + o->len;

	if (o->kind == OP_WRITE || o->kind == OP_WRITEV) {
		o->data = malloc(o->len);
		if (!o->data)
			die("out of memory");
		fill(o->data, o->len, g->seed * 1000003 + idx);
		if (o->kind == OP_WRITEV)
			gen_iov(g, o);
	}
}

static void op_free(struct op *o)
{
	free(o->data);
	free(o->phys);
	free(o->iov);
	o->data = o->phys = NULL;
	o->iov = NULL;
}

/* Apply o to the expected image. */
static void model_apply(unsigned char *m, const struct op *o)
{
	uint64_t n = o->end - o->off;

	switch (o->kind) {
	case OP_WRITE:
	case OP_WRITEV:
		memcpy(m + o->off, o->data, n);
		break;
	case OP_ZEROES:
	case OP_DISCARD:
		memset(m + o->off, 0, n);
		break;
	case OP_WRITESAME:
		for (uint64_t i = 0; i < n; i++)
			m[o->off + i] = o->pattern[i % o->data_len];
		break;
	}
}

static void gen_init(struct gen *g, const struct conn *cn, uint64_t seed)
{
	g->seed = seed;
	g->s = seed ^ 0x726264696f2d7761ULL;	/* "rbdio-wa" */
	g->size = cn->size;
	g->obj_size = cn->obj_size;
	g->su = cn->stripe_unit;
	g->sc = cn->stripe_count;
}

/* Build the expected final content. */
static unsigned char *model_build(const struct conn *cn, uint64_t seed,
				  uint64_t nops)
{
	unsigned char *m = calloc(1, cn->size);
	struct gen g;
	struct op o;

	if (!m)
		die("out of memory for a %" PRIu64 "-byte model", cn->size);
	gen_init(&g, cn, seed);
	for (uint64_t i = 0; i < nops; i++) {
		gen_op(&g, i, &o);
		model_apply(m, &o);
		op_free(&o);
	}
	return m;
}

/* ---- completions -------------------------------------------------------- */

static atomic_ulong cb_count;
static atomic_ulong cb_bad;

static void on_complete(rbd_completion_t c, void *arg)
{
	(void)arg;
	/* librbd: already "complete" while the callback runs. */
	if (rbd_aio_is_complete(c) != 1)
		atomic_fetch_add(&cb_bad, 1);
	atomic_fetch_add(&cb_count, 1);
}

struct slot {
	bool busy;
	rbd_completion_t c;
	struct op op;
	uint64_t seq;		/* submission order, for FIFO reaping */
};

static struct slot slots[MAX_INFLIGHT];
static uint64_t submitted;

static void slot_reap(struct slot *sl)
{
	ssize_t r;

	rbd_aio_wait_for_complete(sl->c);
	r = rbd_aio_get_return_value(sl->c);
	if (r != 0)
		die("op %" PRIu64 " (%s off %" PRIu64 " len %" PRIu64
		    ") completed with %zd", sl->op.idx,
		    op_names[sl->op.kind], sl->op.off, sl->op.len, r);
	rbd_aio_release(sl->c);
	op_free(&sl->op);
	sl->busy = false;
}

static struct slot *oldest_busy(void)
{
	struct slot *best = NULL;

	for (int i = 0; i < MAX_INFLIGHT; i++)
		if (slots[i].busy && (!best || slots[i].seq < best->seq))
			best = &slots[i];
	return best;
}

static void reap_all(void)
{
	struct slot *sl;

	while ((sl = oldest_busy()))
		slot_reap(sl);
}

static void submit(struct conn *cn, struct op *o, uint64_t depth)
{
	struct slot *sl = NULL;
	int busy = 0, r = 0;

	/* Never two in-flight operations on the same bytes. */
	for (int i = 0; i < MAX_INFLIGHT; i++)
		if (slots[i].busy && slots[i].op.off < o->end &&
		    o->off < slots[i].op.end)
			slot_reap(&slots[i]);
	for (int i = 0; i < MAX_INFLIGHT; i++)
		busy += slots[i].busy;
	while ((uint64_t)busy >= depth) {
		slot_reap(oldest_busy());
		busy--;
	}
	for (int i = 0; i < MAX_INFLIGHT && !sl; i++)
		if (!slots[i].busy)
			sl = &slots[i];

	sl->op = *o;
	sl->seq = submitted++;
	r = rbd_aio_create_completion(NULL, on_complete, &sl->c);
	if (r < 0)
		die("rbd_aio_create_completion: %d", r);
	switch (o->kind) {
	case OP_WRITE:
		r = rbd_aio_write(cn->image, o->off, o->len,
				  (const char *)o->data, sl->c);
		break;
	case OP_WRITEV:
		r = rbd_aio_writev(cn->image, o->iov, o->iovcnt, o->off,
				   sl->c);
		break;
	case OP_ZEROES:
		r = rbd_aio_write_zeroes(cn->image, o->off, o->len, sl->c, 0,
					 0);
		break;
	case OP_WRITESAME:
		r = rbd_aio_writesame(cn->image, o->off, o->len,
				      (const char *)sl->op.pattern,
				      o->data_len, sl->c, 0);
		break;
	case OP_DISCARD:
		r = rbd_aio_discard(cn->image, o->off, o->len, sl->c);
		break;
	}
	if (r < 0)
		die("submitting op %" PRIu64 " (%s off %" PRIu64 " len %"
		    PRIu64 "): %d", o->idx, op_names[o->kind], o->off,
		    o->len, r);
	sl->busy = true;
}

static int cmd_write(struct conn *cn, uint64_t seed, uint64_t nops)
{
	uint64_t counts[5] = { 0 }, bytes = 0, ds = seed ^ 0xdeadbeefULL;
	uint64_t depth = 1 + rnd(&ds, MAX_INFLIGHT);
	rbd_completion_t fc;
	struct gen g;
	struct op o;
	ssize_t r;

	gen_init(&g, cn, seed);
	for (uint64_t i = 0; i < nops; i++) {
		gen_op(&g, i, &o);
		counts[o.kind]++;
		bytes += o.end - o.off;
		/* The queue depth varies, but only timing depends on it. */
		if (rnd(&ds, 16) == 0)
			depth = 1 + rnd(&ds, MAX_INFLIGHT);
		submit(cn, &o, depth);
		if (rnd(&ds, 50) == 0)
			reap_all();
	}
	/* The final flush is a barrier over everything still in flight. */
	if (rbd_aio_create_completion(NULL, NULL, &fc) < 0)
		die("rbd_aio_create_completion");
	r = rbd_aio_flush(cn->image, fc);
	if (r < 0)
		die("rbd_aio_flush: %zd", r);
	rbd_aio_wait_for_complete(fc);
	r = rbd_aio_get_return_value(fc);
	if (r != 0)
		die("flush completed with %zd", r);
	for (int i = 0; i < MAX_INFLIGHT; i++)
		if (slots[i].busy && rbd_aio_is_complete(slots[i].c) != 1)
			die("op %" PRIu64 " not complete after the flush",
			    slots[i].op.idx);
	rbd_aio_release(fc);
	reap_all();
	if (atomic_load(&cb_count) != nops)
		die("%lu callbacks for %" PRIu64 " operations",
		    atomic_load(&cb_count), nops);
	if (atomic_load(&cb_bad))
		die("%lu callbacks saw rbd_aio_is_complete() != 1",
		    atomic_load(&cb_bad));
	printf("wrote %" PRIu64 " ops (%" PRIu64 " write, %" PRIu64
	       " writev, %" PRIu64 " write_zeroes, %" PRIu64
	       " writesame, %" PRIu64 " discard), %" PRIu64 " bytes\n",
	       nops, counts[OP_WRITE], counts[OP_WRITEV], counts[OP_ZEROES],
	       counts[OP_WRITESAME], counts[OP_DISCARD], bytes);
	return 0;
}

/* ---- reading back ------------------------------------------------------- */

enum rd_kind { RD_AIO, RD_AIOV, RD_SYNC };

struct rd {
	bool busy;
	enum rd_kind kind;
	rbd_completion_t c;
	uint64_t off, len, want;	/* want: expected count (clipped) */
	unsigned char *buf;		/* contiguous result */
	unsigned char *phys;		/* readv: buffers iov points into */
	struct iovec *iov;
	int iovcnt;
	uint64_t seq;
};

struct reader {
	struct conn *cn;
	const unsigned char *expect;	/* NULL: compare with a file */
	FILE *file;
	uint64_t mismatch;		/* lowest mismatching offset */
	bool bad;
	struct rd rds[MAX_INFLIGHT];
	uint64_t seq;
};

static void rd_check(struct reader *rr, struct rd *d, ssize_t got)
{
	unsigned char *exp = NULL;
	const unsigned char *e;

	if (got != (ssize_t)d->want)
		die("read off %" PRIu64 " len %" PRIu64 " returned %zd, "
		    "expected %" PRIu64, d->off, d->len, got, d->want);
	if (d->kind == RD_AIOV) {	/* gather */
		uint64_t pos = 0;

		for (int i = 0; i < d->iovcnt; i++) {
			memcpy(d->buf + pos, d->iov[i].iov_base,
			       d->iov[i].iov_len);
			pos += d->iov[i].iov_len;
		}
	}
	if (rr->expect) {
		e = rr->expect + d->off;
	} else {
		exp = malloc(d->want ? d->want : 1);
		if (!exp)
			die("out of memory");
		if (fseeko(rr->file, (off_t)d->off, SEEK_SET) != 0 ||
		    fread(exp, 1, d->want, rr->file) != d->want)
			die("reading the comparison file at %" PRIu64,
			    d->off);
		e = exp;
	}
	if (memcmp(d->buf, e, d->want) != 0) {
		for (uint64_t i = 0; i < d->want; i++) {
			if (d->buf[i] == e[i])
				continue;
			if (!rr->bad || d->off + i < rr->mismatch) {
				rr->mismatch = d->off + i;
				rr->bad = true;
			}
			break;
		}
	}
	free(exp);
}

static void rd_free(struct rd *d)
{
	free(d->buf);
	free(d->phys);
	free(d->iov);
	d->buf = d->phys = NULL;
	d->iov = NULL;
	d->busy = false;
}

static void rd_reap(struct reader *rr, struct rd *d)
{
	ssize_t r;

	rbd_aio_wait_for_complete(d->c);
	r = rbd_aio_get_return_value(d->c);
	rbd_aio_release(d->c);
	rd_check(rr, d, r);
	rd_free(d);
}

static struct rd *rd_slot(struct reader *rr)
{
	struct rd *best = NULL;

	for (int i = 0; i < MAX_INFLIGHT; i++)
		if (!rr->rds[i].busy)
			return &rr->rds[i];
	for (int i = 0; i < MAX_INFLIGHT; i++)
		if (!best || rr->rds[i].seq < best->seq)
			best = &rr->rds[i];
	rd_reap(rr, best);
	return best;
}

/* Read the whole image in random chunks with a mix of read calls. */
static void read_all(struct reader *rr, uint64_t seed)
{
	struct conn *cn = rr->cn;
	uint64_t s = seed ^ 0x7665726966790000ULL, off = 0;
	struct gen g = { .s = seed };

	while (off < cn->size) {
		struct rd *d = rd_slot(rr);
		uint64_t len, left = cn->size - off;
		ssize_t r;

		g.s = splitmix(&s);
		len = gen_len(&g);
		if (len > left)
			len = left;
		memset(d, 0, sizeof(*d));
		d->off = off;
		d->want = len;
		d->len = len;
		/* The last chunk sometimes asks for more than is there. */
		if (off + len == cn->size && rnd(&s, 2))
			d->len = len + 1 + rnd(&s, 1 << 20);
		d->kind = (enum rd_kind)rnd(&s, 3);
		d->seq = rr->seq++;
		d->buf = malloc(d->len);
		if (!d->buf)
			die("out of memory");
		off += len;
		if (d->kind == RD_SYNC) {
			r = rbd_read(cn->image, d->off, d->len, (char *)d->buf);
			rd_check(rr, d, r);
			rd_free(d);
			continue;
		}
		r = rbd_aio_create_completion(NULL, NULL, &d->c);
		if (r < 0)
			die("rbd_aio_create_completion: %zd", r);
		if (d->kind == RD_AIO) {
			r = rbd_aio_read(cn->image, d->off, d->len,
					 (char *)d->buf, d->c);
		} else {
			int n = 1 + (int)rnd(&s, rnd(&s, 3) ? 6 : 50);
			uint64_t l2 = d->len, pos;

			d->iov = calloc((size_t)n, sizeof(*d->iov));
			d->phys = malloc(d->len);
			if (!d->iov || !d->phys)
				die("out of memory");
			d->iovcnt = n;
			for (int i = 0; i < n; i++) {
				uint64_t l = i == n - 1 ? l2
					     : rnd(&s, 4) == 0 ? 0
					     : rnd(&s, l2 + 1);

				d->iov[i].iov_len = l;
				l2 -= l;
			}
			/* reversed layout, as for writev */
			pos = d->len;
			for (int i = 0; i < n; i++) {
				pos -= d->iov[i].iov_len;
				d->iov[i].iov_base = d->phys + pos;
			}
			r = rbd_aio_readv(cn->image, d->iov, n, d->off, d->c);
		}
		if (r < 0)
			die("submitting a read at %" PRIu64 ": %zd", d->off, r);
		d->busy = true;
	}
	for (int i = 0; i < MAX_INFLIGHT; i++)
		if (rr->rds[i].busy)
			rd_reap(rr, &rr->rds[i]);
}

static int report(struct reader *rr, const char *what)
{
	if (rr->bad) {
		printf("MISMATCH at offset %" PRIu64 " (%s)\n", rr->mismatch,
		       what);
		return 1;
	}
	printf("verified %" PRIu64 " bytes (%s)\n", rr->cn->size, what);
	return 0;
}

static int cmd_verify(struct conn *cn, uint64_t seed, uint64_t nops)
{
	struct reader rr = { .cn = cn };
	unsigned char *m = model_build(cn, seed, nops);
	int r;

	rr.expect = m;
	read_all(&rr, seed);
	r = report(&rr, "workload");
	free(m);
	return r;
}

static int cmd_cmpfile(struct conn *cn, const char *path)
{
	struct reader rr = { .cn = cn };
	int r;

	rr.file = fopen(path, "rb");
	if (!rr.file)
		die("%s: %s", path, strerror(errno));
	if (fseeko(rr.file, 0, SEEK_END) != 0)
		die("%s: cannot seek", path);
	if ((uint64_t)ftello(rr.file) != cn->size) {
		printf("MISMATCH: file is %jd bytes, image %" PRIu64 "\n",
		       (intmax_t)ftello(rr.file), cn->size);
		fclose(rr.file);
		return 1;
	}
	read_all(&rr, cn->size);
	fclose(rr.file);
	r = report(&rr, path);
	return r;
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: %s write   POOL IMAGE SEED [NOPS]\n"
		"       %s verify  POOL IMAGE SEED [NOPS]\n"
		"       %s cmpfile POOL IMAGE FILE\n"
		"       %s whoami\n", prog, prog, prog, prog);
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end)
		die("not a number: %s", s);
	return v;
}

int main(int argc, char **argv)
{
	struct conn cn;
	uint64_t seed, nops = DEFAULT_NOPS;
	int r;

	if (argc >= 1 && argv[0]) {
		const char *p = strrchr(argv[0], '/');

		prog = p ? p + 1 : argv[0];
	}
	if (argc == 2 && !strcmp(argv[1], "whoami")) {
		puts(rbdlite_is_librbdlite && rbdlite_is_librbdlite() == 1
			     ? "librbdlite" : "librbd");
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "cmpfile")) {
		conn_open(&cn, argv[2], argv[3]);
		r = cmd_cmpfile(&cn, argv[4]);
		conn_close(&cn);
		return r;
	}
	if (argc < 5 || argc > 6)
		usage();
	seed = num(argv[4]);
	if (argc == 6)
		nops = num(argv[5]);
	if (strcmp(argv[1], "write") && strcmp(argv[1], "verify"))
		usage();
	conn_open(&cn, argv[2], argv[3]);
	if (!strcmp(argv[1], "write"))
		r = cmd_write(&cn, seed, nops);
	else
		r = cmd_verify(&cn, seed, nops);
	conn_close(&cn);
	return r;
}
