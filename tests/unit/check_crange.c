/*
 * check_crange.c - unit tests for the block-range locks of lib/core/
 * cipher.c (struct rbdl_crange_set), which keep an encrypted image's
 * read-modify-writes atomic, and for the cipher's round trip.
 *
 * Ranges: a free range is granted at once (its callback runs inside the
 * call); an overlapping one waits and is granted, first come first
 * served, by the release that frees it; a later range never passes an
 * earlier waiter it overlaps, but passes one it does not; try_acquire
 * takes a free range without running the callback and leaves the set
 * untouched when the range is not free.  Cipher (encryption builds):
 * encrypt then decrypt gives the data back, the ciphertext differs, and
 * an all-zero stored block decrypts to zeros.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cipher.h"

struct tr {
	struct rbdl_crange r;	/* first: the callback gets it */
	int granted;		/* order of the grant, 0: not yet */
};

static int grants;
static struct rbdl_crange_set s;	/* fresh for every test (fixture) */

static void set_up(void)
{
	grants = 0;
	rbdl_crange_set_init(&s);
}

static void tear_down(void)
{
	ck_assert(!rbdl_crange_busy(&s));
	rbdl_crange_set_destroy(&s);
}

static void on_grant(struct rbdl_crange *r)
{
	((struct tr *)r)->granted = ++grants;
}

static void tr_init(struct tr *t, uint64_t start, uint64_t end)
{
	memset(t, 0, sizeof(*t));
	t->r.start = start;
	t->r.end = end;
	t->r.grant = on_grant;
}

START_TEST(test_fifo)
{
	struct tr a, b, c, d;

	tr_init(&a, 0, 4096);
	tr_init(&b, 0, 8192);		/* overlaps a */
	tr_init(&c, 4096, 8192);	/* overlaps b (waiting), not a */
	tr_init(&d, 8192, 12288);	/* overlaps nothing */
	rbdl_crange_acquire(&s, &a.r);
	ck_assert_int_eq(a.granted, 1);
	rbdl_crange_acquire(&s, &b.r);
	rbdl_crange_acquire(&s, &c.r);
	ck_assert_int_eq(b.granted, 0);
	ck_assert_int_eq(c.granted, 0);	/* never passes b */
	rbdl_crange_acquire(&s, &d.r);
	ck_assert_int_eq(d.granted, 2);
	ck_assert(rbdl_crange_busy(&s));
	rbdl_crange_release(&s, &a.r);
	ck_assert_int_eq(b.granted, 3);
	ck_assert_int_eq(c.granted, 0);
	rbdl_crange_release(&s, &b.r);
	ck_assert_int_eq(c.granted, 4);
	rbdl_crange_release(&s, &c.r);
	rbdl_crange_release(&s, &d.r);
}
END_TEST

START_TEST(test_try)
{
	struct tr a, b, c, w;

	tr_init(&a, 0, 4096);
	ck_assert(rbdl_crange_try_acquire(&s, &a.r));
	ck_assert_int_eq(a.granted, 0);		/* no callback */
	tr_init(&b, 2048, 6144);		/* overlaps a: refused */
	ck_assert(!rbdl_crange_try_acquire(&s, &b.r));
	tr_init(&w, 4096, 8192);		/* waits behind b */
	rbdl_crange_acquire(&s, &b.r);
	rbdl_crange_acquire(&s, &w.r);
	ck_assert_int_eq(b.granted, 0);
	ck_assert_int_eq(w.granted, 0);
	tr_init(&c, 6144, 8192);		/* overlaps waiter w only */
	ck_assert(!rbdl_crange_try_acquire(&s, &c.r));
	rbdl_crange_release(&s, &a.r);		/* grants b, not w */
	ck_assert_int_eq(b.granted, 1);
	ck_assert_int_eq(w.granted, 0);
	rbdl_crange_release(&s, &b.r);
	ck_assert_int_eq(w.granted, 2);
	ck_assert(!rbdl_crange_try_acquire(&s, &c.r));	/* w holds it */
	rbdl_crange_release(&s, &w.r);
	ck_assert(rbdl_crange_try_acquire(&s, &c.r));
	rbdl_crange_release(&s, &c.r);
}
END_TEST

/* Ranges within a held one (a discard's chunks inside the discard's
 * range): not blocked by it nor by the waiters queued behind it (a flush
 * of everything), only by each other; the waiters get their turn only
 * when the outer range goes. */
START_TEST(test_within)
{
	struct tr p, f, c1, c2, c3;

	tr_init(&p, 0, 3 * 4096);
	rbdl_crange_acquire(&s, &p.r);
	ck_assert_int_eq(p.granted, 1);
	tr_init(&f, 0, UINT64_MAX);		/* a flush: waits for p */
	rbdl_crange_acquire(&s, &f.r);
	ck_assert_int_eq(f.granted, 0);
	tr_init(&c1, 0, 8192);
	c1.r.within = &p.r;
	rbdl_crange_acquire(&s, &c1.r);		/* passes f */
	ck_assert_int_eq(c1.granted, 2);
	tr_init(&c2, 4096, 3 * 4096);		/* shares a block with c1 */
	c2.r.within = &p.r;
	rbdl_crange_acquire(&s, &c2.r);
	ck_assert_int_eq(c2.granted, 0);
	rbdl_crange_release(&s, &c1.r);		/* grants c2, not f */
	ck_assert_int_eq(c2.granted, 3);
	ck_assert_int_eq(f.granted, 0);
	rbdl_crange_release(&s, &c2.r);
	tr_init(&c3, 8192, 3 * 4096);		/* sent after the others */
	c3.r.within = &p.r;
	ck_assert(rbdl_crange_try_acquire(&s, &c3.r));
	ck_assert_int_eq(f.granted, 0);
	rbdl_crange_release(&s, &c3.r);
	ck_assert_int_eq(f.granted, 0);
	rbdl_crange_release(&s, &p.r);		/* now the flush */
	ck_assert_int_eq(f.granted, 4);
	rbdl_crange_release(&s, &f.r);
}
END_TEST

#ifdef RBDLITE_ENCRYPTION
START_TEST(test_cipher_roundtrip)
{
	unsigned char key[64];
	struct rbdl_cipher k;
	char *plain = malloc(3 * 4096), *buf = malloc(3 * 4096);

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 7 + 1);
	ck_assert_int_eq(rbdl_cipher_init(&k, key, sizeof(key), 4096), 0);
	for (int i = 0; i < 3 * 4096; i++)
		plain[i] = (char)(i * 13 + 5);
	ck_assert_int_eq(rbdl_cipher_crypt(&k, true, 8192, plain, buf,
					   3 * 4096), 0);
	ck_assert(memcmp(plain, buf, 3 * 4096) != 0);
	memset(buf + 4096, 0, 4096);	/* a block never written */
	ck_assert_int_eq(rbdl_cipher_crypt(&k, false, 8192, buf, buf,
					   3 * 4096), 0);
	ck_assert(memcmp(plain, buf, 4096) == 0);
	ck_assert(memcmp(plain + 8192, buf + 8192, 4096) == 0);
	for (int i = 4096; i < 8192; i++)
		ck_assert_int_eq(buf[i], 0);
	ck_assert_int_eq(rbdl_cipher_init(&k, key, 48, 4096), -ENOTSUP);
	rbdl_cipher_destroy(&k);
	free(plain);
	free(buf);
}
END_TEST
#endif

static Suite *crange_suite(void)
{
	Suite *s = suite_create("crange");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, set_up, tear_down);
	tcase_add_test(tc, test_fifo);
	tcase_add_test(tc, test_try);
	tcase_add_test(tc, test_within);
#ifdef RBDLITE_ENCRYPTION
	tcase_add_test(tc, test_cipher_roundtrip);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(crange_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
