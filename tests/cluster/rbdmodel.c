/*
 * rbdmodel.c - a model-based random tester of the librbd C API.
 *
 * Role: keeps an in-memory model of one image (its bytes, its size, the
 * bytes and size of each of its snapshots, and which RADOS objects were
 * touched since each snapshot) and runs a seeded random mix of
 * operations against a real image through a librbd implementation,
 * checking every result against the model: sync and aio writes, writev,
 * reads (sync, aio, readv; some crossing the end of the image),
 * write_zeroes, writesame, compare-and-write (matching, mismatching:
 * -EILSEQ and librbd 16.2.15's mismatch_off, and crossing a 512-byte
 * sector: -EINVAL), discard, flush (sync and aio), resize (grow and
 * shrink), snapshot create, verify (opened at the snapshot, or
 * rbd_snap_set), rollback and remove, rbd_diff_iterate2 (from a snapshot
 * or from nothing, whole_object 0 and 1, whole or partial ranges; see
 * op_diff for what is checked), close + reopen, and requests at the end
 * of the image (clipped, or -EINVAL past it).  Up to --depth (default
 * 16) aio requests are in flight at once, always on pairwise disjoint
 * byte ranges, so the model stays deterministic; sync requests and
 * metadata operations first wait for every aio request.  Types are drawn
 * by weight (tweight); in the last twentieth of a run a type the run has
 * not yet run is taken instead, so every run covers every type.
 *
 * The implementation is not linked in: the program dlopen()s the library
 * named by --lib (RTLD_LOCAL) and resolves every rbd_* it calls with
 * dlsym, so the same binary tests librbdlite and the real librbd (which
 * is how the model itself is checked).  With --lib2 and --alt N a second
 * library is opened in the same process and the two take turns on the
 * image: every N operations the image is closed in one library and opened
 * in the other.  One process with both libraries (rather than two
 * processes) keeps the model in one address space, makes the hand-over
 * synchronous and deterministic (close, then open; no lock ping-pong
 * between live clients), and exercises the two libraries coexisting in
 * one process, as they do when librbdlite delegates to librbd.  The
 * random stream does not depend on the library, so --lib A --lib2 A
 * --alt N repeats an alternating run's operations with one library.
 *
 * Discards are exact: rbd_skip_partial_discard is set to false on the
 * cluster handle before any image is opened, so a discarded range reads
 * back as zeros in both libraries.
 *
 * At the end the image is flushed and closed and the model's bytes are
 * written to --dump FILE (and each remaining snapshot's bytes to
 * FILE@SNAPNAME, their names listed in FILE.snaps), for the calling
 * script to compare with `rbd export`.
 *
 * Output: "seed S" first; with --trace 1 every operation as it is
 * submitted; on success a summary of the operations run by type; on the
 * first failed check "FAIL seed=S op=N: OP: WHAT" (offset, expected and
 * actual bytes) and a command line that reproduces it on a new image of
 * the same kind, exit status 1.  Exit status 2: usage or setup errors
 * (no library, no cluster, no image).  RBDMODEL_TIMES=1 adds the time
 * spent per type of operation.
 *
 * Threading: single-threaded; aio completions are polled with
 * rbd_aio_wait_for_complete (no callbacks).  Ownership: every aio
 * request owns its buffers until it has completed and been checked.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

/* ---- the library under test ------------------------------------------ */

/* The rbd_* entry points the tester calls, resolved from one library. */
struct lib {
    const char *path;
    const char *kind;    /* "librbdlite" or "librbd" */
    void *dl;
    int (*open)(rados_ioctx_t, const char *, rbd_image_t *, const char *);
    int (*open_read_only)(rados_ioctx_t, const char *, rbd_image_t *,
                          const char *);
    int (*close)(rbd_image_t);
    int (*get_size)(rbd_image_t, uint64_t *);
    int (*get_features)(rbd_image_t, uint64_t *);
    int (*stat)(rbd_image_t, rbd_image_info_t *, size_t);
    int (*get_stripe_unit)(rbd_image_t, uint64_t *);
    int (*get_stripe_count)(rbd_image_t, uint64_t *);
    ssize_t (*read)(rbd_image_t, uint64_t, size_t, char *);
    ssize_t (*read2)(rbd_image_t, uint64_t, size_t, char *, int);
    ssize_t (*write)(rbd_image_t, uint64_t, size_t, const char *);
    ssize_t (*write2)(rbd_image_t, uint64_t, size_t, const char *, int);
    int (*discard)(rbd_image_t, uint64_t, uint64_t);
    ssize_t (*writesame)(rbd_image_t, uint64_t, size_t, const char *, size_t,
                         int);
    ssize_t (*write_zeroes)(rbd_image_t, uint64_t, size_t, int, int);
    ssize_t (*compare_and_write)(rbd_image_t, uint64_t, size_t, const char *,
                                 const char *, uint64_t *, int);
    int (*flush)(rbd_image_t);
    int (*resize)(rbd_image_t, uint64_t);
    int (*snap_create)(rbd_image_t, const char *);
    int (*snap_remove)(rbd_image_t, const char *);
    int (*snap_rollback)(rbd_image_t, const char *);
    int (*snap_set)(rbd_image_t, const char *);
    int (*diff_iterate2)(rbd_image_t, const char *, uint64_t, uint64_t,
                         uint8_t, uint8_t, int (*)(uint64_t, size_t, int,
                                                   void *), void *);
    int (*aio_create_completion)(void *, rbd_callback_t, rbd_completion_t *);
    int (*aio_wait_for_complete)(rbd_completion_t);
    ssize_t (*aio_get_return_value)(rbd_completion_t);
    void (*aio_release)(rbd_completion_t);
    int (*aio_write)(rbd_image_t, uint64_t, size_t, const char *,
                     rbd_completion_t);
    int (*aio_writev)(rbd_image_t, const struct iovec *, int, uint64_t,
                      rbd_completion_t);
    int (*aio_read)(rbd_image_t, uint64_t, size_t, char *, rbd_completion_t);
    int (*aio_readv)(rbd_image_t, const struct iovec *, int, uint64_t,
                     rbd_completion_t);
    int (*aio_discard)(rbd_image_t, uint64_t, uint64_t, rbd_completion_t);
    int (*aio_writesame)(rbd_image_t, uint64_t, size_t, const char *, size_t,
                         rbd_completion_t, int);
    int (*aio_write_zeroes)(rbd_image_t, uint64_t, size_t, rbd_completion_t,
                            int, int);
    ssize_t (*aio_compare_and_write)(rbd_image_t, uint64_t, size_t,
                                     const char *, const char *,
                                     rbd_completion_t, uint64_t *, int);
    int (*aio_flush)(rbd_image_t, rbd_completion_t);
};

static void resolve(struct lib *l, void *slot, const char *name)
{
    void *p = dlsym(l->dl, name);
    if (!p) {
        fprintf(stderr, "rbdmodel: %s: no symbol %s\n", l->path, name);
        exit(2);
    }
    memcpy(slot, &p, sizeof p);
}

#define RES(l, f) resolve((l), &(l)->f, "rbd_" #f)

/* dlopen() the library at PATH (RTLD_LOCAL) and resolve every entry point
 * into L; exits with status 2 when the library or a symbol is missing. */
static void lib_load(struct lib *l, const char *path)
{
    memset(l, 0, sizeof *l);
    l->path = path;
    l->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!l->dl) {
        fprintf(stderr, "rbdmodel: dlopen %s: %s\n", path, dlerror());
        exit(2);
    }
    /* librbdlite exports rbdlite_is_librbdlite; the real librbd does not */
    l->kind = dlsym(l->dl, "rbdlite_is_librbdlite") ? "librbdlite" : "librbd";
    RES(l, open); RES(l, open_read_only); RES(l, close); RES(l, get_size);
    RES(l, get_features);
    RES(l, stat); RES(l, get_stripe_unit); RES(l, get_stripe_count);
    RES(l, read); RES(l, read2); RES(l, write); RES(l, write2);
    RES(l, discard); RES(l, writesame); RES(l, write_zeroes);
    RES(l, compare_and_write); RES(l, flush); RES(l, resize);
    RES(l, snap_create); RES(l, snap_remove); RES(l, snap_rollback);
    RES(l, snap_set); RES(l, diff_iterate2); RES(l, aio_create_completion);
    RES(l, aio_wait_for_complete); RES(l, aio_get_return_value);
    RES(l, aio_release); RES(l, aio_write); RES(l, aio_writev);
    RES(l, aio_read); RES(l, aio_readv); RES(l, aio_discard);
    RES(l, aio_writesame); RES(l, aio_write_zeroes);
    RES(l, aio_compare_and_write); RES(l, aio_flush);
}

/* ---- random numbers ---------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A uniform number in [0, n); 0 when n is 0. */
static uint64_t rndn(uint64_t n)
{
    return n ? rnd() % n : 0;
}

static void fill_random(char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint64_t v = rnd();
        for (int k = 0; k < 8 && i < n; k++, i++)
            p[i] = (char)(v >> (8 * k));
    }
}

/* ---- the model ----------------------------------------------------------- */

#define MAX_SNAPS 4
#define MAX_INFLIGHT 64

struct snap {
    char name[32];
    unsigned seq;      /* creation order (librbd's snapshot ids grow) */
    char *data;        /* its bytes */
    uint64_t size;
    unsigned char *touched;  /* objects written since it was taken */
    /* when it was taken: the objects ever touched, and those touched
     * since each older snapshot (by seq), for diffs ending at it */
    unsigned char *ever_at;
    unsigned since_seq[MAX_SNAPS];
    unsigned char *since[MAX_SNAPS];
    bool since_rb[MAX_SNAPS];   /* a rollback between the two */
    bool rb;                    /* a rollback since it was taken */
    int nsince;
};

static struct {
    char *data;        /* HEAD bytes, capacity max_size */
    uint64_t size;
    uint64_t max_size, min_size;
    uint64_t obj_size, su, sc, nobj;
    uint64_t features;
    unsigned char *ever;     /* objects ever touched */
    struct snap snaps[MAX_SNAPS];
    int nsnaps;
    unsigned snap_seq;
} M;

/* The object number of image byte OFF (the image's striping layout). */
static uint64_t objno(uint64_t off)
{
    uint64_t blk = off / M.su, stripe = blk / M.sc, pos = blk % M.sc;
    uint64_t per_obj = M.obj_size / M.su;
    return (stripe / per_obj) * M.sc + pos;
}

/* The image offset of byte X of object O (the inverse of objno). */
static uint64_t obj_to_image(uint64_t o, uint64_t x)
{
    uint64_t per_obj = M.obj_size / M.su;
    uint64_t stripe = (o / M.sc) * per_obj + x / M.su;
    return (stripe * M.sc + o % M.sc) * M.su + x % M.su;
}

/*
 * The mismatch_off librbd 16.2.15 reports when byte K of a
 * compare-and-write at image offset OFF differs: the OSD's cmpext gives
 * the offset K relative to the compared range, and librbd maps it back as
 * if it were an offset inside the object, so the result is the image
 * offset of byte K of the object holding OFF (OFF + K only for a request
 * at the start of an object).
 */
static uint64_t caw_mismatch_off(uint64_t off, uint64_t k)
{
    return obj_to_image(objno(off), k);
}

/* The number of objects of an image of SIZE bytes, as librbd counts them
 * for an object map (Striper::get_num_objects): whole object sets, less
 * the objects of a last, partial set that hold no byte of the image. */
static uint64_t num_objs(uint64_t size)
{
    uint64_t period = M.obj_size * M.sc, width = M.su * M.sc;
    uint64_t n = (size + period - 1) / period * M.sc, rem = size % period;
    if (rem && rem < width)
        n -= M.sc - (rem + M.su - 1) / M.su;
    return n;
}

/* The end of the stripe unit holding OFF (a piece of one object). */
static uint64_t su_end(uint64_t off)
{
    return (off / M.su + 1) * M.su;
}

static void mark_obj(uint64_t o)
{
    if (o >= M.nobj)
        return;
    M.ever[o] = 1;
    for (int i = 0; i < M.nsnaps; i++)
        M.snaps[i].touched[o] = 1;
}

/* Every object holding a byte of [off, off+len) counts as changed since
 * every snapshot. */
static void touch(uint64_t off, uint64_t len)
{
    uint64_t end = off + len;
    while (off < end) {
        mark_obj(objno(off));
        off = su_end(off);
    }
}

static void touch_all(void)
{
    for (uint64_t o = 0; o < M.nobj; o++)
        mark_obj(o);
}

/* ---- reporting ------------------------------------------------------------ */

static uint64_t seed;
static long opno;
static long nops;
static char opdesc[256];
static const char *progname = "rbdmodel";
static char repro[1024];

enum {
    T_WRITE, T_AIO_WRITE, T_AIO_WRITEV, T_READ, T_AIO_READ, T_AIO_READV,
    T_ZEROES, T_AIO_ZEROES, T_WRITESAME, T_AIO_WRITESAME, T_CAW,
    T_CAW_MISS, T_AIO_CAW, T_CAW_CROSS, T_AIO_CAW_CROSS, T_DISCARD, T_AIO_DISCARD, T_FLUSH, T_AIO_FLUSH,
    T_GROW, T_SHRINK, T_SNAP_CREATE, T_SNAP_VERIFY, T_SNAP_ROLLBACK,
    T_SNAP_REMOVE, T_DIFF, T_DIFF_AT_SNAP, T_REOPEN, T_SWITCH, T_EDGE, T_BURST, T_NTYPES
};
static const char *tname[T_NTYPES] = {
    "write", "aio_write", "aio_writev", "read", "aio_read", "aio_readv",
    "write_zeroes", "aio_write_zeroes", "writesame", "aio_writesame",
    "compare_and_write", "compare_and_write_mismatch",
    "aio_compare_and_write", "compare_and_write_cross_sector",
    "aio_compare_and_write_cross_sector", "discard", "aio_discard", "flush",
    "aio_flush", "resize_grow", "resize_shrink", "snap_create",
    "snap_verify", "snap_rollback", "snap_remove", "diff_iterate2", "diff_iterate2_at_snapshot",
    "reopen", "switch_library", "edge", "aio_burst"
};
static long tcount[T_NTYPES];
static double ttime[T_NTYPES];   /* seconds spent per drawn type */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool tracing;

/* Describe the operation being run (for failure messages); with --trace
 * also print it. */
__attribute__((format(printf, 1, 2)))
static void setop(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(opdesc, sizeof opdesc, fmt, ap);
    va_end(ap);
    if (tracing)
        printf("op %ld: %s\n", opno, opdesc);
}

static void hexbytes(char *out, size_t outsz, const char *p, size_t n)
{
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && k + 3 < outsz; i++)
        k += (size_t)snprintf(out + k, outsz - k, "%02x", (unsigned char)p[i]);
}

__attribute__((format(printf, 2, 3), noreturn))
static void failf(long op, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    printf("FAIL seed=%" PRIu64 " op=%ld: %s: ", seed, op, opdesc);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\nreproduce: %s --seed %" PRIu64 " --ops %ld\n", repro, seed,
           op + 1);
    fflush(stdout);
    exit(1);
}

/* Compare GOT with the model's EXP for the image range starting at OFF;
 * a difference fails the run with the first differing offset and 16
 * bytes of each side. */
static void check_bytes(long op, uint64_t off, const char *exp,
                        const char *got, size_t n, const char *what)
{
    if (memcmp(exp, got, n) == 0)
        return;
    size_t i = 0;
    while (exp[i] == got[i])
        i++;
    size_t show = n - i < 16 ? n - i : 16;
    char e[40], g[40];
    hexbytes(e, sizeof e, exp + i, show);
    hexbytes(g, sizeof g, got + i, show);
    size_t j = n;
    while (j > i && exp[j - 1] == got[j - 1])
        j--;
    failf(op, "%s mismatch at offset %" PRIu64 " (%zu bytes differ up to "
          "offset %" PRIu64 "): expected %s got %s", what, off + i, j - i,
          off + j, e, g);
}

/* ---- the image and in-flight requests ----------------------------------- */

static rados_t cluster;
static rados_ioctx_t ioctx;
static const char *image_name;
static struct lib libs[2];
static int nlibs = 1, cur;
static rbd_image_t img;

struct req {
    int type;
    long op;
    char desc[160];
    uint64_t off, len;
    rbd_completion_t c;
    char *buf, *buf2;        /* owned; buf2: cmp buffer or read copy */
    struct iovec iov[8];
    int iovcnt;
    ssize_t want;            /* expected return value */
    uint64_t mismatch;       /* filled by compare_and_write */
    uint64_t want_mismatch;
    bool is_read;
};
static struct req *inflight[MAX_INFLIGHT];
static int ninflight, max_inflight;
static int depth = 16;
static bool bursting;    /* no early completions during a burst */

static struct lib *L(void)
{
    return &libs[cur];
}

static void open_image(long op)
{
    int r = L()->open(ioctx, image_name, &img, NULL);
    if (r < 0)
        failf(op, "rbd_open(%s) with %s: %d", image_name, L()->path, r);
}

static void close_image(long op)
{
    int r = L()->close(img);
    if (r < 0)
        failf(op, "rbd_close: %d", r);
    img = NULL;
}

/* Wait for in-flight request I, check it against the model, free it. */
static void complete(int i)
{
    struct req *q = inflight[i];
    struct lib *l = L();
    l->aio_wait_for_complete(q->c);
    ssize_t r = l->aio_get_return_value(q->c);
    l->aio_release(q->c);
    inflight[i] = inflight[--ninflight];
    snprintf(opdesc, sizeof opdesc, "%s", q->desc);
    if (r != q->want)
        failf(q->op, "completion returned %zd, expected %zd", r, q->want);
    if (q->type == T_AIO_CAW && q->want == -EILSEQ &&
        q->mismatch != q->want_mismatch)
        failf(q->op, "mismatch_off %" PRIu64 ", expected %" PRIu64,
              q->mismatch, q->want_mismatch);
    if (q->is_read) {
        const char *got = q->buf;
        if (q->type == T_AIO_READV) {
            /* gather the vectors into buf2 */
            size_t k = 0;
            for (int v = 0; v < q->iovcnt; v++) {
                memcpy(q->buf2 + k, q->iov[v].iov_base, q->iov[v].iov_len);
                k += q->iov[v].iov_len;
            }
            got = q->buf2;
        }
        /* the range was not written while the read was in flight */
        check_bytes(q->op, q->off, M.data + q->off, got, (size_t)r, "read");
    }
    if (q->type == T_AIO_READV) {
        for (int v = 0; v < q->iovcnt; v++)
            free(q->iov[v].iov_base);
    }
    free(q->buf);
    free(q->buf2);
    free(q);
}

static void drain(void)
{
    while (ninflight)
        complete(0);
}

static bool overlaps_inflight(uint64_t off, uint64_t len)
{
    for (int i = 0; i < ninflight; i++) {
        struct req *q = inflight[i];
        if (q->len && off < q->off + q->len && q->off < off + len)
            return true;
    }
    return false;
}

/* Choose a range [*off, *off+*len) inside the image, not overlapping an
 * in-flight request: lengths from 1 byte to a few objects, offsets often
 * aligned to 512 bytes, object or stripe-unit boundaries. */
static bool pick_range(uint64_t *off, uint64_t *len, uint64_t maxlen)
{
    if (M.size == 0)
        return false;
    for (int tries = 0; tries < 20; tries++) {
        uint64_t l;
        switch (rndn(6)) {
        case 0: l = 1 + rndn(600); break;
        case 1: l = 512 * (1 + rndn(16)); break;
        case 2: l = 4096 * (1 + rndn(64)); break;
        case 3: l = M.su * (1 + rndn(3)); break;
        case 4: l = M.obj_size * (rndn(4) ? 1 : M.sc * (1 + rndn(2))); break;
        default: l = 1 + rndn(M.obj_size + M.obj_size / 2); break;
        }
        if (l > maxlen)
            l = 1 + rndn(maxlen);
        if (l > M.size)
            l = M.size;
        uint64_t o;
        switch (rndn(4)) {
        case 0: o = rndn(M.size / 512 + 1) * 512; break;
        case 1: o = rndn(M.size / M.obj_size + 1) * M.obj_size; break;
        case 2: o = rndn(M.size / M.su + 1) * M.su; break;
        default: o = rndn(M.size); break;
        }
        if (o >= M.size)
            o = rndn(M.size);
        if (o + l > M.size)
            l = M.size - o;
        if (l == 0)
            continue;
        if (!overlaps_inflight(o, l)) {
            *off = o;
            *len = l;
            return true;
        }
    }
    return false;
}

static struct req *new_req(int type, long op, uint64_t off, uint64_t len)
{
    struct req *q = calloc(1, sizeof *q);
    if (!q)
        abort();
    q->type = type;
    q->op = op;
    q->off = off;
    q->len = len;
    snprintf(q->desc, sizeof q->desc, "%s off=%" PRIu64 " len=%" PRIu64,
             tname[type], off, len);
    setop("%s", q->desc);
    int r = L()->aio_create_completion(NULL, NULL, &q->c);
    if (r < 0)
        failf(op, "rbd_aio_create_completion: %d", r);
    return q;
}

/* Submitted: make room (complete the oldest when at the depth limit). */
static void submitted(struct req *q, int r)
{
    if (r < 0) {
        L()->aio_release(q->c);
        failf(q->op, "submit returned %d", r);
    }
    inflight[ninflight++] = q;
    if (ninflight > max_inflight)
        max_inflight = ninflight;
    while (ninflight >= depth)
        complete(0);
    /* sometimes complete a random one early */
    if (!bursting && ninflight && rndn(4) == 0)
        complete((int)rndn((uint64_t)ninflight));
}

static char *xmalloc(size_t n)
{
    char *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* The longest write or read: bounds the data moved per operation. */
#define WRITE_MAX (512 * 1024)

/* ---- operations ------------------------------------------------------------ */

static void op_write(long op, int type)
{
    uint64_t off, len;
    if (!pick_range(&off, &len, WRITE_MAX))
        return;
    char *buf = xmalloc(len);
    fill_random(buf, len);
    if (type == T_WRITE) {
        drain();
        setop("write off=%" PRIu64 " len=%" PRIu64,
                 off, len);
        ssize_t r = rndn(2) ? L()->write(img, off, len, buf)
                            : L()->write2(img, off, len, buf, 0);
        if (r != (ssize_t)len)
            failf(op, "returned %zd, expected %" PRIu64, r, len);
        memcpy(M.data + off, buf, len);
        touch(off, len);
        free(buf);
        tcount[type]++;
        return;
    }
    struct req *q = new_req(type, op, off, len);
    q->want = 0;    /* aio writes complete with 0 */
    int r;
    if (type == T_AIO_WRITE) {
        q->buf = buf;
        r = L()->aio_write(img, off, len, buf, q->c);
    } else {
        /* writev: split into up to 8 vectors (some of them empty) */
        int n = 1 + (int)rndn(8);
        uint64_t left = len, k = 0;
        q->buf = buf;
        for (int v = 0; v < n; v++) {
            uint64_t piece = v == n - 1 ? left : rndn(left + 1);
            q->iov[v].iov_base = buf + k;
            q->iov[v].iov_len = piece;
            k += piece;
            left -= piece;
        }
        q->iovcnt = n;
        r = L()->aio_writev(img, q->iov, n, off, q->c);
    }
    memcpy(M.data + off, buf, len);
    touch(off, len);
    tcount[type]++;
    submitted(q, r);
}

static void op_read(long op, int type)
{
    uint64_t off, len;
    if (M.size == 0)
        return;
    /* a read may cross the end of the image: it is clipped */
    if (rndn(8) == 0) {
        if (type == T_READ)
            drain();
        off = M.size - 1 - rndn(M.size < 8192 ? M.size : 8192);
        len = M.size - off + 1 + rndn(8192);
        if (overlaps_inflight(off, len))
            return;
    } else if (!pick_range(&off, &len, WRITE_MAX)) {
        return;
    }
    uint64_t want = off + len > M.size ? M.size - off : len;
    if (type == T_READ) {
        drain();
        char *buf = xmalloc(len);
        setop("read off=%" PRIu64 " len=%" PRIu64,
                 off, len);
        ssize_t r = rndn(2) ? L()->read(img, off, len, buf)
                            : L()->read2(img, off, len, buf, 0);
        if (r != (ssize_t)want)
            failf(op, "returned %zd, expected %" PRIu64, r, want);
        check_bytes(op, off, M.data + off, buf, want, "read");
        free(buf);
        tcount[type]++;
        return;
    }
    struct req *q = new_req(type, op, off, len);
    q->want = (ssize_t)want;
    q->is_read = true;
    int r;
    if (type == T_AIO_READ) {
        q->buf = xmalloc(len);
        r = L()->aio_read(img, off, len, q->buf, q->c);
    } else {
        int n = 1 + (int)rndn(8);
        uint64_t left = len;
        for (int v = 0; v < n; v++) {
            uint64_t piece = v == n - 1 ? left : rndn(left + 1);
            q->iov[v].iov_base = xmalloc(piece);
            q->iov[v].iov_len = piece;
            left -= piece;
        }
        q->iovcnt = n;
        q->buf2 = xmalloc(len);
        r = L()->aio_readv(img, q->iov, n, off, q->c);
    }
    tcount[type]++;
    submitted(q, r);
}

static void op_zero(long op, int type)
{
    uint64_t off, len;
    if (!pick_range(&off, &len, 2 * M.obj_size * M.sc))
        return;
    bool discard = type == T_DISCARD || type == T_AIO_DISCARD;
    if (type == T_ZEROES || type == T_DISCARD) {
        drain();
        setop("%s off=%" PRIu64 " len=%" PRIu64,
                 tname[type], off, len);
        ssize_t r = discard ? L()->discard(img, off, len)
                            : L()->write_zeroes(img, off, len, 0, 0);
        if (r != (ssize_t)len)
            failf(op, "returned %zd, expected %" PRIu64, r, len);
    } else {
        struct req *q = new_req(type, op, off, len);
        q->want = 0;
        int r = discard ? L()->aio_discard(img, off, len, q->c)
                        : L()->aio_write_zeroes(img, off, len, q->c, 0, 0);
        submitted(q, r);
    }
    memset(M.data + off, 0, len);
    touch(off, len);
    tcount[type]++;
}

static void op_writesame(long op, int type)
{
    uint64_t off, len;
    if (!pick_range(&off, &len, WRITE_MAX))
        return;
    static const size_t dls[] = {1, 2, 7, 512, 4096, 1000};
    size_t dl = dls[rndn(6)];
    if (len < dl)
        dl = len;
    len -= len % dl;
    char *pat = xmalloc(dl);
    if (rndn(5) == 0)
        memset(pat, 0, dl);   /* an all-zero pattern (librbd: a discard) */
    else
        fill_random(pat, dl);
    if (type == T_WRITESAME) {
        drain();
        setop("writesame off=%" PRIu64 " len=%"
                 PRIu64 " data_len=%zu", off, len, dl);
        ssize_t r = L()->writesame(img, off, len, pat, dl, 0);
        if (r != (ssize_t)len)
            failf(op, "returned %zd, expected %" PRIu64, r, len);
    } else {
        struct req *q = new_req(type, op, off, len);
        snprintf(q->desc + strlen(q->desc), sizeof q->desc - strlen(q->desc),
                 " data_len=%zu", dl);
        setop("%s", q->desc);
        q->want = 0;
        q->buf = pat;
        int r = L()->aio_writesame(img, off, len, pat, dl, q->c, 0);
        for (uint64_t k = 0; k < len; k += dl)
            memcpy(M.data + off + k, pat, dl);
        touch(off, len);
        tcount[type]++;
        submitted(q, r);
        return;
    }
    for (uint64_t k = 0; k < len; k += dl)
        memcpy(M.data + off + k, pat, dl);
    touch(off, len);
    free(pat);
    tcount[type]++;
}

/* compare-and-write: librbd 16.2 accepts only a range inside one 512-byte
 * sector (and so inside one object and one stripe unit); one that crosses
 * a sector boundary fails with -EINVAL (sync: returned; aio: through the
 * completion) and changes nothing (T_CAW_CROSS). */
static void op_caw(long op, int type)
{
    uint64_t off, len;
    bool cross = type == T_CAW_CROSS || type == T_AIO_CAW_CROSS;
    if (!pick_range(&off, &len, cross ? 4096 : 512))
        return;
    uint64_t sec_end = (off / 512 + 1) * 512;
    if (cross) {
        if (sec_end >= M.size)
            return;
        if (off + len <= sec_end)
            len = sec_end - off + 1 + rndn(M.size - sec_end < 600 ? M.size - sec_end : 600);
        if (overlaps_inflight(off, len))
            return;
    } else if (off + len > sec_end) {
        len = sec_end - off;
    }
    char *cmp = xmalloc(len), *buf = xmalloc(len);
    memcpy(cmp, M.data + off, len);
    fill_random(buf, len);
    bool miss = type == T_CAW_MISS || (type == T_AIO_CAW && rndn(2));
    if (cross)
        miss = rndn(2);
    uint64_t k = 0;
    if (miss) {
        k = rndn(len);
        cmp[k] ^= (char)(1 + rndn(255));
    }
    if (type != T_AIO_CAW && type != T_AIO_CAW_CROSS) {
        drain();
        uint64_t mo = UINT64_MAX;
        setop("%s off=%" PRIu64 " len=%" PRIu64
                 "%s", tname[type], off, len, miss ? " (cmp differs)" : "");
        ssize_t r = L()->compare_and_write(img, off, len, cmp, buf, &mo, 0);
        if (cross) {
            if (r != -EINVAL)
                failf(op, "returned %zd, expected -EINVAL (crosses a sector)",
                      r);
        } else if (miss) {
            /* librbd marks the object existing in the object map before
             * the compare fails: fast diff reports it from then on */
            touch(off, len);
            if (r != -EILSEQ)
                failf(op, "returned %zd, expected -EILSEQ (cmp byte %" PRIu64
                      " differs)", r, k);
            if (mo != caw_mismatch_off(off, k))
                failf(op, "mismatch_off %" PRIu64 ", expected %" PRIu64
                      " (cmp byte %" PRIu64 " differs)", mo,
                      caw_mismatch_off(off, k), k);
        } else {
            if (r != (ssize_t)len)
                failf(op, "returned %zd, expected %" PRIu64, r, len);
            memcpy(M.data + off, buf, len);
            touch(off, len);
        }
        free(cmp);
        free(buf);
        tcount[type]++;
        return;
    }
    struct req *q = new_req(type, op, off, len);
    snprintf(q->desc + strlen(q->desc), sizeof q->desc - strlen(q->desc),
             "%s", miss ? " (cmp differs)" : "");
    setop("%s", q->desc);
    q->buf = buf;
    q->buf2 = cmp;
    q->want = cross ? -EINVAL : miss ? -EILSEQ : 0;  /* librbd: 0 on success */
    q->want_mismatch = caw_mismatch_off(off, k);
    ssize_t r = L()->aio_compare_and_write(img, off, len, cmp, buf, q->c,
                                           &q->mismatch, 0);
    if (!miss && !cross)
        memcpy(M.data + off, buf, len);
    if (!cross)
        touch(off, len);
    tcount[type]++;
    submitted(q, (int)r);
}

static void op_flush(long op, int type)
{
    if (type == T_FLUSH) {
        drain();
        setop("flush");
        int r = L()->flush(img);
        if (r < 0)
            failf(op, "rbd_flush: %d", r);
    } else {
        struct req *q = new_req(type, op, 0, 0);
        q->want = 0;
        submitted(q, L()->aio_flush(img, q->c));
    }
    tcount[type]++;
}

/*
 * Requests at the end of the image (sync): a write, discard, write_zeroes,
 * writesame or read that crosses the end is clipped to it (the return
 * value is the clipped length); one that starts at or past the end fails
 * with -EINVAL and changes nothing; a zero length returns 0; a writesame
 * whose length is not a multiple of its pattern fails with -EINVAL.
 */
static void op_edge(long op)
{
    drain();
    if (M.size < 2)
        return;
    int kind = (int)rndn(5);          /* write discard zeroes same read */
    int where = (int)rndn(4);         /* cross, at end, past end, len 0 */
    static const char *kn[] = {"write", "discard", "write_zeroes",
                               "writesame", "read"};
    static const char *wn[] = {"crossing the end", "at the end",
                               "past the end", "of length 0"};
    uint64_t len = 1 + rndn(20000), off;
    size_t dl = 1 + rndn(16);
    if (kind == 3)
        len = dl * (1 + rndn(2000));
    if (where == 0) {
        off = M.size - 1 - rndn(len - 1 < M.size - 1 ? len - 1 : M.size - 1);
        if (off + len <= M.size)
            len = M.size - off + 1 + (kind == 3 ? 0 : rndn(100));
        if (kind == 3)
            len = (len + dl - 1) / dl * dl;
    } else if (where == 1) {
        off = M.size;
    } else if (where == 2) {
        off = M.size + 1 + rndn(1 << 20);
    } else {
        off = rndn(M.size);
        len = 0;
    }
    bool badsame = kind == 3 && where == 3 ? false : kind == 3 && rndn(6) == 0;
    if (badsame)
        len += 1 + rndn(dl > 1 ? dl - 1 : 1), dl = dl > 1 ? dl : 2;
    if (badsame && len % dl == 0)
        len++;
    setop("%s %s off=%" PRIu64 " len=%" PRIu64 " (size %" PRIu64 ")%s",
          kn[kind], wn[where], off, len, M.size,
          badsame ? " (length not a multiple of the pattern)" : "");
    char *buf = xmalloc(len), *pat = xmalloc(dl);
    fill_random(buf, len);
    fill_random(pat, dl);
    ssize_t want;
    if (badsame)
        want = -EINVAL;
    else if (len == 0)
        want = 0;
    else if (off >= M.size)
        want = -EINVAL;
    else
        want = (ssize_t)(off + len > M.size ? M.size - off : len);
    ssize_t r = 0;
    switch (kind) {
    case 0: r = L()->write(img, off, len, buf); break;
    case 1: r = L()->discard(img, off, len); break;
    case 2: r = L()->write_zeroes(img, off, len, 0, 0); break;
    case 3: r = L()->writesame(img, off, len, pat, dl, 0); break;
    default: r = L()->read(img, off, len, buf); break;
    }
    if (r != want)
        failf(op, "returned %zd, expected %zd", r, want);
    if (want > 0) {
        uint64_t n = (uint64_t)want;
        switch (kind) {
        case 0: memcpy(M.data + off, buf, n); break;
        case 1: case 2: memset(M.data + off, 0, n); break;
        case 3:
            for (uint64_t k = 0; k < n; k++)
                M.data[off + k] = pat[k % dl];
            break;
        default:
            check_bytes(op, off, M.data + off, buf, n, "read");
            break;
        }
        if (kind != 4)
            touch(off, n);
    }
    free(buf);
    free(pat);
    tcount[T_EDGE]++;
}

static void check_size(long op)
{
    uint64_t sz = 0;
    int r = L()->get_size(img, &sz);
    if (r < 0 || sz != M.size)
        failf(op, "rbd_get_size: r=%d size=%" PRIu64 ", expected %" PRIu64,
              r, sz, M.size);
}

static void op_resize(long op)
{
    drain();
    uint64_t ns;
    int type;
    if (rndn(2) && M.size < M.max_size) {
        type = T_GROW;
        ns = M.size + 1 + rndn(M.max_size - M.size);
    } else if (M.size > M.min_size) {
        type = T_SHRINK;
        ns = M.min_size + rndn(M.size - M.min_size);
    } else {
        return;
    }
    if (rndn(2))
        ns -= ns % 512;   /* often sector-aligned, sometimes not */
    if (ns < M.min_size)
        ns = M.min_size;
    setop("resize %" PRIu64 " -> %" PRIu64, M.size,
             ns);
    int r = L()->resize(img, ns);
    if (r < 0)
        failf(op, "rbd_resize: %d", r);
    uint64_t lo = ns < M.size ? ns : M.size, hi = ns < M.size ? M.size : ns;
    touch(lo, hi - lo);
    if (ns > M.size)
        memset(M.data + M.size, 0, ns - M.size);
    M.size = ns;
    check_size(op);
    tcount[type]++;
}

static void diff_check(long op, rbd_image_t h, struct snap *s,
                       struct snap *to);

static void op_snap_create(long op)
{
    drain();
    if (M.nsnaps == MAX_SNAPS)
        return;
    struct snap *s = &M.snaps[M.nsnaps];
    snprintf(s->name, sizeof s->name, "m%u", ++M.snap_seq);
    s->seq = M.snap_seq;
    setop("snap_create %s", s->name);
    int r = L()->snap_create(img, s->name);
    if (r < 0)
        failf(op, "rbd_snap_create: %d", r);
    s->size = M.size;
    s->data = xmalloc(M.size);
    memcpy(s->data, M.data, M.size);
    s->touched = calloc(M.nobj, 1);
    s->ever_at = (unsigned char *)xmalloc(M.nobj);
    memcpy(s->ever_at, M.ever, M.nobj);
    s->nsince = 0;
    s->rb = false;
    for (int i = 0; i < M.nsnaps; i++) {
        s->since_seq[s->nsince] = M.snaps[i].seq;
        s->since_rb[s->nsince] = M.snaps[i].rb;
        s->since[s->nsince] = (unsigned char *)xmalloc(M.nobj);
        memcpy(s->since[s->nsince++], M.snaps[i].touched, M.nobj);
    }
    if (!s->touched)
        abort();
    M.nsnaps++;
    tcount[T_SNAP_CREATE]++;
}

/* Read the whole of image handle H (size SIZE expected) and compare. */
static void verify_handle(long op, rbd_image_t h, const char *exp,
                          uint64_t size, const char *what)
{
    uint64_t sz = 0;
    int r = L()->get_size(h, &sz);
    if (r < 0 || sz != size)
        failf(op, "%s: rbd_get_size r=%d size=%" PRIu64 ", expected %" PRIu64,
              what, r, sz, size);
    size_t chunk = 4 << 20;
    char *buf = xmalloc(chunk);
    for (uint64_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        ssize_t got = L()->read(h, off, n, buf);
        if (got != (ssize_t)n)
            failf(op, "%s: read at %" PRIu64 " returned %zd, expected %zu",
                  what, off, got, n);
        check_bytes(op, off, exp + off, buf, n, what);
    }
    free(buf);
}

/* Verify a snapshot (diff: always by opening it, with a diff ending at
 * it -- T_DIFF_AT_SNAP, when missing_type asks for one). */
static void op_snap_verify(long op, bool diff)
{
    drain();
    if (M.nsnaps == 0)
        return;
    struct snap *s = &M.snaps[rndn((uint64_t)M.nsnaps)];
    int r;
    if (diff || rndn(2)) {
        rbd_image_t h;
        setop("snap_verify %s (open at snapshot)",
                 s->name);
        r = L()->open_read_only(ioctx, image_name, &h, s->name);
        if (r < 0)
            failf(op, "rbd_open_read_only at %s: %d", s->name, r);
        verify_handle(op, h, s->data, s->size, "snapshot read");
        if (diff || rndn(2)) {
            /* a diff ending at this snapshot, from an older one or from
             * nothing */
            struct snap *from = NULL;
            for (int i = 0; i < M.nsnaps; i++)
                if (M.snaps[i].seq < s->seq && rndn(2))
                    from = &M.snaps[i];
            diff_check(op, h, from, s);
            tcount[T_DIFF_AT_SNAP]++;
        }
        r = L()->close(h);
        if (r < 0)
            failf(op, "rbd_close: %d", r);
    } else {
        setop("snap_verify %s (rbd_snap_set)",
                 s->name);
        r = L()->snap_set(img, s->name);
        if (r < 0)
            failf(op, "rbd_snap_set(%s): %d", s->name, r);
        verify_handle(op, img, s->data, s->size, "snapshot read");
        r = L()->snap_set(img, NULL);
        if (r < 0)
            failf(op, "rbd_snap_set(NULL): %d", r);
        check_size(op);
    }
    tcount[T_SNAP_VERIFY]++;
}

static void op_snap_rollback(long op)
{
    drain();
    if (M.nsnaps == 0)
        return;
    struct snap *s = &M.snaps[rndn((uint64_t)M.nsnaps)];
    setop("snap_rollback %s (size %" PRIu64 ")",
             s->name, s->size);
    int r = L()->snap_rollback(img, s->name);
    if (r < 0)
        failf(op, "rbd_snap_rollback: %d", r);
    touch_all();
    for (int i = 0; i < M.nsnaps; i++)
        M.snaps[i].rb = true;
    memcpy(M.data, s->data, s->size);
    M.size = s->size;
    check_size(op);
    tcount[T_SNAP_ROLLBACK]++;
}

static void op_snap_remove(long op)
{
    drain();
    if (M.nsnaps == 0)
        return;
    int i = (int)rndn((uint64_t)M.nsnaps);
    struct snap *s = &M.snaps[i];
    setop("snap_remove %s", s->name);
    int r = L()->snap_remove(img, s->name);
    if (r < 0)
        failf(op, "rbd_snap_remove: %d", r);
    free(s->data);
    free(s->touched);
    free(s->ever_at);
    for (int k = 0; k < s->nsince; k++)
        free(s->since[k]);
    M.snaps[i] = M.snaps[--M.nsnaps];
    tcount[T_SNAP_REMOVE]++;
}

/* ---- diff ------------------------------------------------------------------ */

struct ext {
    uint64_t off, len;
    int exists;
};
static struct ext *exts;
static size_t nexts, cap_exts;

static int diff_cb(uint64_t off, size_t len, int exists, void *arg)
{
    (void)arg;
    if (nexts == cap_exts) {
        cap_exts = cap_exts ? 2 * cap_exts : 256;
        exts = realloc(exts, cap_exts * sizeof *exts);
        if (!exts)
            abort();
    }
    exts[nexts++] = (struct ext){off, len, exists};
    return 0;
}

/* On a failed diff check: the extents reported (the first 64). */
static void print_exts(void)
{
    printf("extents reported (%zu):", nexts);
    for (size_t i = 0; i < nexts && i < 64; i++)
        printf(" %" PRIu64 "+%" PRIu64 "%s", exts[i].off, exts[i].len,
               exts[i].exists ? "" : "(hole)");
    printf("\n");
}

/*
 * rbd_diff_iterate2 from a snapshot (or from nothing) to HEAD over a
 * random range, checked against the model:
 *  - completeness: every byte in the range where HEAD differs from the
 *    snapshot (from nothing: every non-zero byte) lies in a reported
 *    extent;
 *  - precision at object granularity: every reported byte lies in an
 *    object that was written, discarded, zeroed, resized or rolled back
 *    since the snapshot (ever, from nothing); librbd may report more than
 *    the changed bytes (whole objects with whole_object=1, rewrites of
 *    identical data, discards of holes) but never an untouched object;
 *  - an extent reported with exists=0 reads as zeros at HEAD;
 *  - extents lie inside the requested range and the image.
 */
static void op_diff(long op)
{
    drain();
    struct snap *s = NULL;
    if (M.nsnaps && rndn(4))
        s = &M.snaps[rndn((uint64_t)M.nsnaps)];
    diff_check(op, img, s, NULL);
    tcount[T_DIFF]++;
}

/*
 * rbd_diff_iterate2 on handle H (opened at snapshot TO, or at HEAD when
 * TO is NULL) from snapshot S (or from nothing), whole_object 0 or 1,
 * over the whole image or a random part of it, checked as described
 * above.
 */
static void diff_check(long op, rbd_image_t h, struct snap *s,
                       struct snap *to)
{
    const char *data = to ? to->data : M.data;
    uint64_t size = to ? to->size : M.size;
    unsigned end_seq = to ? to->seq : UINT32_MAX;
    const unsigned char *touched = M.ever;
    bool rolled_back = s && !to && s->rb;
    if (to && !s) {
        touched = to->ever_at;
    } else if (to) {
        touched = NULL;
        for (int k = 0; k < to->nsince; k++)
            if (to->since_seq[k] == s->seq) {
                touched = to->since[k];
                rolled_back = to->since_rb[k];
            }
        if (!touched)
            failf(op, "model: no record of %s at %s", s->name, to->name);
    } else if (s) {
        touched = s->touched;
    }
    uint8_t whole = (uint8_t)rndn(2);
    uint64_t off = 0, len = size;
    if (rndn(2) && size) {
        off = rndn(size);
        len = 1 + rndn(size - off);
    }
    setop("diff_iterate2 at=%s from=%s off=%" PRIu64 " len=%" PRIu64
          " whole_object=%u", to ? to->name : "HEAD", s ? s->name : "(none)",
          off, len, whole);
    nexts = 0;
    int r = L()->diff_iterate2(h, s ? s->name : NULL, off, len, 0, whole,
                               diff_cb, NULL);
    if (r < 0)
        failf(op, "rbd_diff_iterate2: %d", r);
    uint64_t end = off + len;
    unsigned char *cov = calloc(len ? len : 1, 1);
    /*
     * librbd 16.2.15's fast diff (whole_object=1 with fast-diff) walks the
     * object maps of the snapshot, of every later snapshot and of HEAD,
     * sizing its per-object state to each version's object count: an
     * object past the end of a later snapshot forgets its history, and
     * is then judged against zeros (reported if it exists at HEAD, not if
     * it does not, even when the from-snapshot had data there).  Such an
     * object's "before" is zeros, not the snapshot's bytes.
     */
    unsigned char *reset = calloc(M.nobj, 1);
    if (!cov || !reset)
        abort();
    /*
     * And after a rollback (since the from-snapshot) librbd's fast diff
     * may miss changes: the rollback copies the snapshot's object map,
     * EXISTS_CLEAN states included, into HEAD, so an object rolled back
     * to other data looks unchanged (`rbd object-map check` then says
     * "marked as 3, but should be 1").  No completeness is checked then.
     */
    bool fast = s && whole && (M.features & RBD_FEATURE_FAST_DIFF);
    bool complete_check = !(fast && rolled_back);
    if (fast) {
        for (int i = 0; i < M.nsnaps; i++) {
            if (M.snaps[i].seq <= s->seq || M.snaps[i].seq >= end_seq)
                continue;
            for (uint64_t o = num_objs(M.snaps[i].size); o < M.nobj; o++)
                reset[o] = 1;
        }
    }
    for (size_t i = 0; i < nexts; i++) {
        struct ext *e = &exts[i];
        if (e->off < off || e->off + e->len > end) {
            print_exts();
            failf(op, "extent %" PRIu64 "+%" PRIu64 " outside the range",
                  e->off, e->len);
        }
        memset(cov + (e->off - off), 1, e->len);
        for (uint64_t p = e->off; p < e->off + e->len;) {
            uint64_t o = objno(p);
            if (o >= M.nobj || !touched[o]) {
                print_exts();
                failf(op, "extent %" PRIu64 "+%" PRIu64 " (exists=%d) "
                      "reports byte %" PRIu64 " of object %" PRIu64
                      ", untouched since %s", e->off, e->len, e->exists, p,
                      o, s ? s->name : "creation");
            }
            p = su_end(p);
        }
        if (e->off + e->len > size) {
            print_exts();
            failf(op, "extent %" PRIu64 "+%" PRIu64 " past the end (%" PRIu64
                  ")", e->off, e->len, size);
        }
        if (!e->exists) {
            for (uint64_t p = e->off; p < e->off + e->len; p++)
                if (data[p])
                    failf(op, "extent %" PRIu64 "+%" PRIu64 " reported as a "
                          "hole (exists=0) but byte %" PRIu64 " is 0x%02x",
                          e->off, e->len, p, (unsigned char)data[p]);
        }
    }
    for (uint64_t p = off; complete_check && p < end; p++) {
        char was = s && p < s->size && !reset[objno(p)] ? s->data[p] : 0;
        if (data[p] != was && !cov[p - off]) {
            print_exts();
            failf(op, "changed byte %" PRIu64 " (0x%02x -> 0x%02x, object %"
                  PRIu64 ") not reported (%zu extents)", p,
                  (unsigned char)was, (unsigned char)data[p], objno(p),
                  nexts);
        }
    }
    free(cov);
    free(reset);
}

static void op_reopen(long op, int type)
{
    drain();
    setop("%s", type == T_SWITCH ? (cur ?
             "switch library to the first" : "switch library to the second")
             : "reopen");
    close_image(op);
    if (type == T_SWITCH)
        cur = (cur + 1) % nlibs;
    open_image(op);
    check_size(op);
    tcount[type]++;
}

static void op_write(long op, int type);
static void op_read(long op, int type);
static void op_zero(long op, int type);
static void op_writesame(long op, int type);
static void op_caw(long op, int type);
static void op_flush(long op, int type);

/* A burst: 8 to 31 aio requests of every kind submitted back to back
 * (each on a range disjoint from those in flight), so the queue fills to
 * the depth limit. */
static void op_burst(long op)
{
    int n = 8 + (int)rndn(24);
    bursting = true;
    for (int i = 0; i < n; i++) {
        switch (rndn(9)) {
        case 0: op_write(op, T_AIO_WRITE); break;
        case 1: op_write(op, T_AIO_WRITEV); break;
        case 2: op_read(op, T_AIO_READ); break;
        case 3: op_read(op, T_AIO_READV); break;
        case 4: op_zero(op, T_AIO_DISCARD); break;
        case 5: op_zero(op, T_AIO_ZEROES); break;
        case 6: op_writesame(op, T_AIO_WRITESAME); break;
        case 7: op_caw(op, T_AIO_CAW); break;
        default: op_flush(op, T_AIO_FLUSH); break;
        }
    }
    bursting = false;
    tcount[T_BURST]++;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
            "usage: %s --pool POOL --image NAME --lib LIBRARY [--lib2 LIBRARY "
            "--alt N]\n"
            "       [--seed S] [--ops N] [--depth D] [--max-size BYTES] "
            "[--dump FILE] [--trace 1]\n"
            "The image must exist; its current content must be zeros (a "
            "new image).\n", progname);
    exit(2);
}

static void dump(const char *path, const char *data, uint64_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        fprintf(stderr, "rbdmodel: cannot write %s\n", path);
        exit(2);
    }
}

/* ---- the mix --------------------------------------------------------------- */

/* Weight of each type, per mille (T_SWITCH is not drawn: it comes every
 * --alt operations when two libraries take turns; T_DIFF_AT_SNAP comes
 * with T_SNAP_VERIFY, and T_SHRINK with T_GROW, as op_resize picks). */
static const unsigned short tweight[T_NTYPES] = {
    [T_WRITE] = 110, [T_AIO_WRITE] = 140, [T_AIO_WRITEV] = 80,
    [T_READ] = 80, [T_AIO_READ] = 110, [T_AIO_READV] = 60,
    [T_ZEROES] = 30, [T_AIO_ZEROES] = 30, [T_WRITESAME] = 30,
    [T_AIO_WRITESAME] = 30, [T_CAW] = 20, [T_CAW_MISS] = 15, [T_AIO_CAW] = 20,
    [T_CAW_CROSS] = 3, [T_AIO_CAW_CROSS] = 2, [T_DISCARD] = 40,
    [T_AIO_DISCARD] = 40, [T_FLUSH] = 15, [T_AIO_FLUSH] = 20, [T_GROW] = 18,
    [T_SNAP_CREATE] = 17, [T_SNAP_VERIFY] = 15, [T_SNAP_ROLLBACK] = 8,
    [T_SNAP_REMOVE] = 12, [T_DIFF] = 30, [T_EDGE] = 13, [T_BURST] = 6,
    [T_REOPEN] = 6,
};

static int draw_type(void)
{
    unsigned x = (unsigned)rndn(1000);
    for (int t = 0; t < T_NTYPES; t++) {
        if (x < tweight[t])
            return t;
        x -= tweight[t];
    }
    return T_REOPEN;
}

/* Run one operation of type t (op_resize picks grow or shrink itself). */
static void run_type(long op, int t)
{
    switch (t) {
    case T_WRITE: case T_AIO_WRITE: case T_AIO_WRITEV: op_write(op, t); break;
    case T_READ: case T_AIO_READ: case T_AIO_READV: op_read(op, t); break;
    case T_ZEROES: case T_AIO_ZEROES: case T_DISCARD: case T_AIO_DISCARD:
        op_zero(op, t);
        break;
    case T_WRITESAME: case T_AIO_WRITESAME: op_writesame(op, t); break;
    case T_CAW: case T_CAW_MISS: case T_AIO_CAW: case T_CAW_CROSS:
    case T_AIO_CAW_CROSS:
        op_caw(op, t);
        break;
    case T_FLUSH: case T_AIO_FLUSH: op_flush(op, t); break;
    case T_GROW: case T_SHRINK: op_resize(op); break;
    case T_SNAP_CREATE: op_snap_create(op); break;
    case T_SNAP_VERIFY: op_snap_verify(op, false); break;
    case T_DIFF_AT_SNAP: op_snap_verify(op, true); break;
    case T_SNAP_ROLLBACK: op_snap_rollback(op); break;
    case T_SNAP_REMOVE: op_snap_remove(op); break;
    case T_DIFF: op_diff(op); break;
    case T_EDGE: op_edge(op); break;
    case T_BURST: op_burst(op); break;
    case T_SWITCH: case T_REOPEN: default: op_reopen(op, T_REOPEN); break;
    }
}

/* In the last twentieth of a run, the first type the run has not run yet
 * is taken instead of a drawn one, so every run covers every type however
 * the dice fell (the rare ones, such as a compare-and-write across a
 * sector, would otherwise be missed now and then); a type that needs a
 * snapshot gets one created first.  -1 when nothing is missing. */
static int missing_type(void)
{
    for (int t = 0; t < T_NTYPES; t++) {
        if (tcount[t] || t == T_SWITCH)
            continue;
        bool needs_snap = t == T_SNAP_VERIFY || t == T_DIFF_AT_SNAP ||
                          t == T_SNAP_ROLLBACK || t == T_SNAP_REMOVE;
        return needs_snap && M.nsnaps == 0 ? T_SNAP_CREATE : t;
    }
    return -1;
}

int main(int argc, char **argv)
{
    const char *pool = NULL, *libpath = getenv("RBDMODEL_LIB"), *lib2 = NULL,
               *dumpf = NULL;
    long alt = 0;
    bool have_seed = false;
    nops = 1000;
    M.max_size = 0;
    progname = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--pool")) pool = v;
        else if (!strcmp(a, "--image")) image_name = v;
        else if (!strcmp(a, "--lib")) libpath = v;
        else if (!strcmp(a, "--lib2")) lib2 = v;
        else if (!strcmp(a, "--alt")) alt = atol(v);
        else if (!strcmp(a, "--seed")) { seed = strtoull(v, NULL, 0); have_seed = true; }
        else if (!strcmp(a, "--ops")) nops = atol(v);
        else if (!strcmp(a, "--depth")) depth = atoi(v);
        else if (!strcmp(a, "--max-size")) M.max_size = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--dump")) dumpf = v;
        else if (!strcmp(a, "--trace")) tracing = atoi(v) != 0;
        else usage();
    }
    if (!pool || !image_name || !libpath || depth < 1 ||
        depth > MAX_INFLIGHT || (lib2 && alt < 1))
        usage();
    if (!have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
               (uint64_t)getpid();
    }
    rng_state = seed;
    {
        size_t k = 0;
        k += (size_t)snprintf(repro + k, sizeof repro - k, "%s --pool %s "
                              "--image NEW-IMAGE --lib %s", progname, pool,
                              libpath);
        if (lib2)
            k += (size_t)snprintf(repro + k, sizeof repro - k,
                                  " --lib2 %s --alt %ld", lib2, alt);
        k += (size_t)snprintf(repro + k, sizeof repro - k, " --depth %d",
                              depth);
        if (M.max_size)
            snprintf(repro + k, sizeof repro - k, " --max-size %" PRIu64,
                     M.max_size);
    }
    printf("seed %" PRIu64 "\n", seed);
    fflush(stdout);

    lib_load(&libs[0], libpath);
    if (lib2) {
        lib_load(&libs[1], lib2);
        nlibs = 2;
    }
    int r = rados_create(&cluster, NULL);
    if (r >= 0)
        r = rados_conf_read_file(cluster, NULL);
    if (r >= 0)
        r = rados_conf_parse_env(cluster, NULL);
    /* exact discards: both libraries zero every discarded byte */
    if (r >= 0)
        r = rados_conf_set(cluster, "rbd_skip_partial_discard", "false");
    if (r >= 0)
        r = rados_connect(cluster);
    if (r >= 0)
        r = rados_ioctx_create(cluster, pool, &ioctx);
    if (r < 0) {
        fprintf(stderr, "rbdmodel: cannot reach the cluster or pool %s: %s\n",
                pool, strerror(-r));
        return 2;
    }
    setop("initial open");
    open_image(0);
    rbd_image_info_t info;
    r = L()->stat(img, &info, sizeof info);
    if (r < 0)
        failf(0, "rbd_stat: %d", r);
    M.size = info.size;
    M.obj_size = info.obj_size;
    if (L()->get_features(img, &M.features) < 0)
        failf(0, "rbd_get_features failed");
    if (L()->get_stripe_unit(img, &M.su) < 0 ||
        L()->get_stripe_count(img, &M.sc) < 0)
        failf(0, "rbd_get_stripe_unit/count failed");
    if (M.su == 0 || M.sc == 0 || M.obj_size % M.su)
        failf(0, "odd layout: object %" PRIu64 " su %" PRIu64 " sc %" PRIu64,
              M.obj_size, M.su, M.sc);
    if (!M.max_size)
        M.max_size = 2 * M.size;
    if (M.max_size < M.size)
        M.max_size = M.size;
    M.min_size = M.size / 8;
    M.nobj = objno(M.max_size + M.obj_size * M.sc) + M.sc + 1;
    M.data = calloc(M.max_size, 1);
    M.ever = calloc(M.nobj, 1);
    if (!M.data || !M.ever)
        abort();
    printf("image %s size %" PRIu64 " object %" PRIu64 " stripe %" PRIu64
           "x%" PRIu64 " ops %ld\n", image_name, M.size, M.obj_size, M.su,
           M.sc, nops);
    printf("library %s (%s)\n", libs[0].kind, libpath);
    if (lib2)
        printf("library %s (%s), taking turns every %ld ops\n", libs[1].kind,
               lib2, alt);
    fflush(stdout);

    for (opno = 1; opno <= nops; opno++) {
        if (nlibs == 2 && opno % alt == 0) {
            op_reopen(opno, T_SWITCH);
            continue;
        }
        int t = (opno > nops - nops / 20) ? missing_type() : -1;
        if (t < 0)
            t = draw_type();
        double t0 = now();
        long before[T_NTYPES];
        memcpy(before, tcount, sizeof before);
        run_type(opno, t);
        for (int u = 0; u < T_NTYPES; u++)
            if (tcount[u] != before[u])
                ttime[u] += now() - t0;
    }
    setop("final drain and close");
    drain();
    if ((r = L()->flush(img)) < 0)
        failf(opno, "rbd_flush: %d", r);
    check_size(opno);
    close_image(opno);

    if (dumpf) {
        char path[4096];
        dump(dumpf, M.data, M.size);
        snprintf(path, sizeof path, "%s.snaps", dumpf);
        FILE *f = fopen(path, "w");
        if (!f)
            return 2;
        for (int i = 0; i < M.nsnaps; i++) {
            fprintf(f, "%s\n", M.snaps[i].name);
            snprintf(path, sizeof path, "%s@%s", dumpf, M.snaps[i].name);
            dump(path, M.snaps[i].data, M.snaps[i].size);
        }
        fclose(f);
    }
    long total = 0;
    for (int t = 0; t < T_NTYPES; t++)
        total += tcount[t];
    printf("ok: %ld operations run (%ld drawn; a burst is several), final "
           "size %" PRIu64 ", %d snapshots, at most %d aio requests in "
           "flight\n", total, nops, M.size, M.nsnaps, max_inflight);
    printf("by type:");
    for (int t = 0; t < T_NTYPES; t++)
        if (tcount[t])
            printf(" %s=%ld", tname[t], tcount[t]);
    printf("\n");
    if (getenv("RBDMODEL_TIMES")) {
        printf("seconds by type:");
        for (int t = 0; t < T_NTYPES; t++)
            if (tcount[t])
                printf(" %s=%.2f", tname[t], ttime[t]);
        printf("\n");
    }
    rados_ioctx_destroy(ioctx);
    rados_shutdown(cluster);
    return 0;
}
