/*
 * check_wbuf.c - cluster tests of write-data ownership: the caller may
 * reuse or free a write's buffers as soon as the aio call returns, as
 * with librbd (rbd_disable_zero_copy_writes=true, its default), also when
 * librbdlite keeps the write past the call.  For each reason a write is
 * kept (the exclusive lock not owned yet, a fresh object under the object
 * map, a clone's copy-up with and without the object map, a header
 * refresh that is due, a journaled image's first write) and each aio write
 * call (write, write2, writev, writesame, compare_and_write), 32 writes
 * are submitted and every buffer (and compare buffer) is scribbled over
 * the moment its call returns; the image must then hold the original data
 * (read back through a fresh open).  Also: the copies are counted in
 * rbdlite_get_stats, none is made for writes handed to librados at once,
 * and none with rbd_disable_zero_copy_writes=false and rbd_cache=false
 * (the caller keeps its buffers until completion then; a write-around
 * cache copies all the same, as in librbd).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rbd/librbd.h>
#include <rbdlite.h>

#include "harness.h"

static struct th t;

static void setup(void)
{
	th_connect(&t);
}

static void teardown(void)
{
	th_disconnect(&t);
}

#define NW 32		/* writes per case */
#define WLEN 65536	/* bytes per write (CAW: 512) */
#define PAT 512		/* write-same pattern length */
#define OBJ_ORDER 17	/* 128 KiB objects: one write per object */
#define OBJ (1u << OBJ_ORDER)
#define WOFF 32768	/* where in its object a write starts */
#define IMG_SIZE ((uint64_t)(NW + 2) * OBJ)

enum call { C_WRITE, C_WRITE2, C_WRITEV, C_WRITESAME, C_CAW, NCALLS };
static const char *const call_name[NCALLS] = {
	"rbd_aio_write", "rbd_aio_write2", "rbd_aio_writev",
	"rbd_aio_writesame", "rbd_aio_compare_and_write",
};

enum why { W_LOCK, W_OBJMAP, W_COPYUP_MAP, W_COPYUP_GUARD, W_REFRESH,
	   W_JOURNAL, NWHY };
static const char *const why_name[NWHY] = {
	"lock not owned", "fresh object under the object map",
	"clone copy-up (object map)", "clone copy-up (guarded, no map)",
	"refresh due", "journaled image",
};

#define FT_LOCK (RBD_FEATURE_LAYERING | RBD_FEATURE_EXCLUSIVE_LOCK)
#define FT_MAP (FT_LOCK | RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_FAST_DIFF)

static uint64_t copies(void)
{
	struct rbdlite_stats st;

	ck_assert_int_eq(rbdlite_get_stats(&st, sizeof(st)), 0);
	return st.write_copies;
}

static uint64_t w_off(int i)
{
	return (uint64_t)(i + 1) * OBJ + WOFF;
}

static size_t w_len(enum call k)
{
	return k == C_CAW ? 512 : WLEN;
}

/* What the image holds at [off, off + len) before the case's writes:
 * zeros, or a clone's parent data (seeded by object). */
static void before(bool clone, uint64_t off, char *out, size_t len)
{
	if (!clone) {
		memset(out, 0, len);
		return;
	}
	while (len) {
		uint64_t objno = off / OBJ, in = off % OBJ;
		size_t n = OBJ - in < len ? OBJ - in : len;
		char *obj = malloc(OBJ);

		th_fill(obj, OBJ, 1000 + objno);
		memcpy(out, obj + in, n);
		free(obj);
		out += n;
		off += n;
		len -= n;
	}
}

/* What write i of call k puts at [w_off(i), +w_len(k)). */
static void expected(enum call k, int i, char *out)
{
	if (k == C_WRITESAME) {
		char pat[PAT];

		th_fill(pat, PAT, 7000 + (uint64_t)i);
		for (size_t o = 0; o < WLEN; o += PAT)
			memcpy(out + o, pat, PAT);
	} else {
		th_fill(out, w_len(k), 5000 + (uint64_t)i);
	}
}

struct wr {
	char *buf;
	char *cmp;
	uint64_t mismatch;
	rbd_completion_t c;
};

/* Submit write i of call k; scribble over its buffers once it returned. */
static void submit(rbd_image_t img, enum call k, int i, bool clone,
		   struct wr *w)
{
	uint64_t off = w_off(i);
	size_t len = w_len(k);
	struct iovec iov[3];
	int r = -1;

	w->buf = malloc(WLEN);
	w->cmp = malloc(512);
	ck_assert_ptr_nonnull(w->buf);
	ck_assert_ptr_nonnull(w->cmp);
	if (k == C_WRITESAME)
		th_fill(w->buf, PAT, 7000 + (uint64_t)i);
	else
		expected(k, i, w->buf);
	before(clone, off, w->cmp, 512);
	ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &w->c), 0);
	switch (k) {
	case C_WRITE:
		r = rbd_aio_write(img, off, len, w->buf, w->c);
		break;
	case C_WRITE2:
		r = rbd_aio_write2(img, off, len, w->buf, w->c,
				   LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL);
		break;
	case C_WRITEV:
		iov[0] = (struct iovec){ w->buf, 1000 };
		iov[1] = (struct iovec){ w->buf + 1000, 30000 };
		iov[2] = (struct iovec){ w->buf + 31000, len - 31000 };
		r = rbd_aio_writev(img, iov, 3, off, w->c);
		/* The array goes too. */
		memset(iov, 0, sizeof(iov));
		break;
	case C_WRITESAME:
		r = rbd_aio_writesame(img, off, len, w->buf, PAT, w->c, 0);
		break;
	case C_CAW:
		r = (int)rbd_aio_compare_and_write(img, off, len, w->cmp,
						   w->buf, w->c, &w->mismatch,
						   0);
		break;
	case NCALLS:
		break;
	}
	ck_assert_msg(r == 0, "%s %d: %d", call_name[k], i, r);
	memset(w->buf, 0xee, WLEN);
	memset(w->cmp, 0xdd, 512);
}

static void wait_all(enum call k, enum why y, struct wr *w)
{
	for (int i = 0; i < NW; i++) {
		ck_assert_int_eq(rbd_aio_wait_for_complete(w[i].c), 0);
		ck_assert_msg(rbd_aio_get_return_value(w[i].c) == 0,
			      "%s, %s: write %d returned %ld", why_name[y],
			      call_name[k], i,
			      (long)rbd_aio_get_return_value(w[i].c));
		rbd_aio_release(w[i].c);
		free(w[i].buf);
		free(w[i].cmp);
	}
}

/* A fresh read-only open sees each write's original data, and around it
 * what was there before. */
static void verify(const char *name, enum call k, enum why y, bool clone)
{
	rbd_image_t img;
	char *got = malloc(OBJ), *want = malloc(OBJ);

	ck_assert_int_eq(rbd_open_read_only(t.io, name, &img, NULL), 0);
	for (int i = 0; i < NW; i++) {
		uint64_t obj_start = w_off(i) - WOFF;

		ck_assert_int_eq(rbd_read(img, obj_start, OBJ, got), OBJ);
		before(clone, obj_start, want, OBJ);
		expected(k, i, want + WOFF);
		ck_assert_msg(memcmp(got, want, OBJ) == 0,
			      "%s, %s: write %d's range holds other data",
			      why_name[y], call_name[k], i);
	}
	ck_assert_int_eq(rbd_close(img), 0);
	free(got);
	free(want);
}

static void create(const char *name, uint64_t features)
{
	int order = OBJ_ORDER;

	ck_assert_int_eq(rbd_create2(t.io, name, IMG_SIZE, features, &order),
			 0);
}

/* A parent with seeded data in every object, snapshot "s" protected, and
 * its clone child (features). */
static void make_clone(const char *parent, const char *child,
		       uint64_t features)
{
	rbd_image_t p;
	char *obj = malloc(OBJ);
	int order = OBJ_ORDER;

	create(parent, FT_MAP);
	ck_assert_int_eq(rbd_open(t.io, parent, &p, NULL), 0);
	for (uint64_t o = 0; o < IMG_SIZE / OBJ; o++) {
		th_fill(obj, OBJ, 1000 + o);
		ck_assert_int_eq(rbd_write(p, o * OBJ, OBJ, obj), OBJ);
	}
	ck_assert_int_eq(rbd_snap_create(p, "s"), 0);
	ck_assert_int_eq(rbd_snap_protect(p, "s"), 0);
	ck_assert_int_eq(rbd_close(p), 0);
	ck_assert_int_eq(rbd_clone(t.io, parent, "s", t.io, child, features,
				   &order),
			 0);
	free(obj);
}

static void remove_clone(const char *parent, const char *child)
{
	rbd_image_t p;

	ck_assert_int_eq(rbd_remove(t.io, child), 0);
	ck_assert_int_eq(rbd_open(t.io, parent, &p, NULL), 0);
	ck_assert_int_eq(rbd_snap_unprotect(p, "s"), 0);
	ck_assert_int_eq(rbd_snap_remove(p, "s"), 0);
	ck_assert_int_eq(rbd_close(p), 0);
	ck_assert_int_eq(rbd_remove(t.io, parent), 0);
}

static atomic_int header_updates;

static void note_update(void *arg)
{
	(void)arg;
	atomic_fetch_add(&header_updates, 1);
}

/* Run call k's writes with reason y in force; the image holds the data. */
static void run_case(enum why y, enum call k)
{
	const char *name = th_name("wbuf"), *parent = th_name("wbufp");
	bool clone = y == W_COPYUP_MAP || y == W_COPYUP_GUARD;
	rbd_image_t img, other = NULL;
	struct wr w[NW];
	char one[512] = { 0 };
	uint64_t h = 0, c0, n;

	switch (y) {
	case W_LOCK:
		/* Every object exists (so the map asks nothing), then a
		 * fresh open: its first writes wait for the lock. */
		create(name, FT_MAP);
		ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
		for (int i = 0; i < NW; i++)
			ck_assert_int_eq(rbd_write(img, w_off(i) - WOFF, 512,
						   one),
					 512);
		ck_assert_int_eq(rbd_close(img), 0);
		ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
		break;
	case W_OBJMAP:
		/* The lock is ours (object 0's write); objects 1.. are
		 * new to the map. */
		create(name, FT_MAP);
		ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
		ck_assert_int_eq(rbd_write(img, 0, 512, one), 512);
		break;
	case W_COPYUP_MAP:
	case W_COPYUP_GUARD:
		make_clone(parent, name,
			   y == W_COPYUP_MAP ? FT_MAP : RBD_FEATURE_LAYERING);
		ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
		/* Own the lock (the last object, written whole). */
		{
			char *obj = malloc(OBJ);

			before(true, IMG_SIZE - OBJ, obj, OBJ);
			ck_assert_int_eq(rbd_write(img, IMG_SIZE - OBJ, OBJ,
						   obj),
					 OBJ);
			free(obj);
		}
		break;
	case W_REFRESH:
		/* Another handle grows the image: a refresh is due. */
		create(name, FT_LOCK);
		ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
		ck_assert_int_eq(rbd_open(t.io, name, &other, NULL), 0);
		atomic_store(&header_updates, 0);
		ck_assert_int_eq(rbd_update_watch(img, &h, note_update, NULL),
				 0);
		ck_assert_int_eq(rbd_write(img, 0, 512, one), 512);
		ck_assert_int_eq(rbd_resize(other, IMG_SIZE + OBJ), 0);
		for (int i = 0; i < 300 && !atomic_load(&header_updates); i++)
			usleep(10 * 1000);
		ck_assert_int_ge(atomic_load(&header_updates), 1);
		break;
	case W_JOURNAL:
		create(name, FT_LOCK | RBD_FEATURE_JOURNALING);
		ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
		break;
	case NWHY:
		return;
	}
	c0 = copies();
	for (int i = 0; i < NW; i++)
		submit(img, k, i, clone, &w[i]);
	n = copies() - c0;
	wait_all(k, y, w);
	if (h)
		ck_assert_int_eq(rbd_update_unwatch(img, h), 0);
	ck_assert_int_eq(rbd_close(img), 0);
	if (other)
		ck_assert_int_eq(rbd_close(other), 0);
	verify(name, k, y, clone);
	/* Kept past the call, so copied (the journaled image's real librbd
	 * copies its own, after the queue's copy of the first ones). */
	ck_assert_msg(n > 0, "%s, %s: no write-data copy counted",
		      why_name[y], call_name[k]);
	if (clone) {
		remove_clone(parent, name);
	} else {
		ck_assert_int_eq(rbd_remove(t.io, name), 0);
	}
}

START_TEST(test_kept_writes_own_their_data)
{
	enum why y = (enum why)(_i / NCALLS);
	enum call k = (enum call)(_i % NCALLS);

	run_case(y, k);
}
END_TEST

/* Writes handed to librados at once (lock owned, objects in the map) copy
 * nothing. */
START_TEST(test_fast_path_copies_nothing)
{
	const char *name = th_name("wbuffast");
	rbd_image_t img;
	struct wr w[NW];
	char one[512] = { 0 };
	uint64_t c0;

	create(name, FT_MAP);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	for (int i = 0; i < NW; i++)
		ck_assert_int_eq(rbd_write(img, w_off(i) - WOFF, 512, one), 512);
	c0 = copies();
	for (int i = 0; i < NW; i++)
		submit(img, C_WRITE, i, false, &w[i]);
	ck_assert_uint_eq(copies(), c0);
	wait_all(C_WRITE, W_LOCK, w);
	ck_assert_int_eq(rbd_close(img), 0);
	verify(name, C_WRITE, W_LOCK, false);
	ck_assert_int_eq(rbd_remove(t.io, name), 0);
}
END_TEST

/* rbd_disable_zero_copy_writes=false with rbd_cache=false (image
 * overrides; a write-around cache forces copying, as in librbd): writes
 * that wait for the lock are not copied; the caller's buffers, kept until
 * completion, are what is written. */
START_TEST(test_zero_copy_writes_are_not_copied)
{
	const char *name = th_name("wbufzc");
	rbd_image_t img;
	rbd_completion_t c[NW];
	char *buf[NW];
	char one[512] = { 0 };
	uint64_t c0;

	create(name, FT_MAP);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	ck_assert_int_eq(rbd_metadata_set(img,
					  "conf_rbd_disable_zero_copy_writes",
					  "false"),
			 0);
	/* _i 1: the cache left on, which copies all the same. */
	if (_i == 0)
		ck_assert_int_eq(rbd_metadata_set(img, "conf_rbd_cache",
						  "false"),
				 0);
	for (int i = 0; i < NW; i++)
		ck_assert_int_eq(rbd_write(img, w_off(i) - WOFF, 512, one), 512);
	ck_assert_int_eq(rbd_close(img), 0);
	ck_assert_int_eq(rbd_open(t.io, name, &img, NULL), 0);
	c0 = copies();
	for (int i = 0; i < NW; i++) {
		buf[i] = malloc(WLEN);
		expected(C_WRITE, i, buf[i]);
		ck_assert_int_eq(rbd_aio_create_completion(NULL, NULL, &c[i]),
				 0);
		ck_assert_int_eq(rbd_aio_write(img, w_off(i), WLEN, buf[i],
					       c[i]),
				 0);
	}
	for (int i = 0; i < NW; i++) {
		ck_assert_int_eq(rbd_aio_wait_for_complete(c[i]), 0);
		ck_assert_int_eq(rbd_aio_get_return_value(c[i]), 0);
		rbd_aio_release(c[i]);
		free(buf[i]);
	}
	if (_i == 0)
		ck_assert_uint_eq(copies(), c0);
	else
		ck_assert_uint_gt(copies(), c0);
	ck_assert_int_eq(rbd_close(img), 0);
	verify(name, C_WRITE, W_LOCK, false);
	ck_assert_int_eq(rbd_remove(t.io, name), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("WriteBuffers");
	TCase *tc = tcase_create("wbuf");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_kept_writes_own_their_data, 0,
			    NWHY * NCALLS);
	tcase_add_test(tc, test_fast_path_copies_nothing);
	tcase_add_loop_test(tc, test_zero_copy_writes_are_not_copied, 0, 2);
	suite_add_tcase(s, tc);
	return th_run(s);
}
