/*
 * check_codec.c - unit tests for lib/codec.c.
 *
 * Golden data: the captured vectors of rbd-protocol.md Appendix A (written
 * below almost verbatim: hex bytes, "..." for string bytes) and the crc32c
 * vectors of section 0.  Malformed input: every proper prefix of every
 * valid reply must fail with -EBADMSG, and random corruptions must never
 * crash.  Decoders always get an exact-size heap copy of their input, so
 * an AddressSanitizer build catches any read past the end.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"
#include "proto/cls_rbd.h"
#include "proto/cls_lock.h"
#include "proto/notify.h"
#include "proto/objmap_wire.h"

/* Only calls into Check on failure; see check_striper.c. */
#define EXPECT(c)							\
	do {								\
		if (!(c))						\
			ck_abort_msg("expected %s", #c);		\
	} while (0)

/* ---- helpers ------------------------------------------------------------ */

/*
 * Parse Appendix A notation: hex digit pairs, blanks ignored, "..." taken
 * as raw string bytes.  Returns the number of bytes written.
 */
static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	unsigned int v;

	while (*s) {
		if (*s == ' ' || *s == '\n' || *s == '\t') {
			s++;
		} else if (*s == '"') {
			for (s++; *s && *s != '"'; s++) {
				ck_assert_uint_lt(n, cap);
				out[n++] = (uint8_t)*s;
			}
			ck_assert_int_eq(*s, '"');
			s++;
		} else {
			ck_assert_msg(sscanf(s, "%2x", &v) == 1 && s[1] &&
					      s[1] != ' ',
				      "bad hex at '%.8s'", s);
			ck_assert_uint_lt(n, cap);
			out[n++] = (uint8_t)v;
			s += 2;
		}
	}
	return n;
}

/* An exact-size heap copy (never NULL), so ASan sees over-reads. */
static uint8_t *dup_exact(const void *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(c);
	if (n)
		memcpy(c, p, n);
	return c;
}

static void hexdump(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < n && o + 3 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", p[i]);
}

/* Compare an encoder's output against Appendix A notation. */
static void expect_bytes(const uint8_t *got, long len, const char *hex)
{
	uint8_t want[512];
	size_t n = unhex(hex, want, sizeof(want));
	char a[1100], b[1100];

	ck_assert_int_ge(len, 0);
	hexdump(a, sizeof(a), got, (size_t)len);
	hexdump(b, sizeof(b), want, n);
	ck_assert_msg((size_t)len == n && memcmp(got, want, n) == 0,
		      "encoded\n  %s\nexpected\n  %s", a, b);
}

/* ---- Appendix A --------------------------------------------------------- */

#define V_GET_SIZE "16 0000004000000000"
#define V_FEATURES_RW "3d00000000000000 3d00000000000000"
#define V_FEATURES_RO "3d00000000000000 0100000000000000"
#define V_SNAPC "0800000000000000 02000000 0800000000000000 0400000000000000"
#define V_PARENT_NONE                                                     \
	"010118000000 ffffffffffffffff 00000000 00000000 feffffffffffffff"
#define V_PARENT_CLONE                                                    \
	"010124000000 0100000000000000 00000000 0c000000\"10316e0deff2\" "  \
	"0400000000000000"
#define V_OVERLAP "01 0000000200000000"
/* migration_get of a prepared destination (16.2.15): source rbd/msrc id
 * 1049779 7d1af, snap_seqs {13 -> 14}, overlap 3670016, state PREPARED. */
#define V_MIGRATION_DST                                                   \
	"03014d000000 02 0100000000000000 00000000 04000000\"msrc\" "       \
	"0c000000\"10497797d1af\" 01000000 0d00000000000000 "             \
	"0e00000000000000 0000380000000000 00 00 02 00000000 00 00000000"
#define V_SNAPSHOT_GET                                                    \
	"01012c000000 0400000000000000 010104000000 00000000 "             \
	"02000000\"s1\" 0000000200000000 60770c6b f554a11b 00000000"
#define V_GET_INFO_IN "01010c000000 08000000\"rbd_lock\""
#define V_ADDR_LOCAL                                                      \
	"01 01011c000000 01000000 0a1c5f46 10000000 0200 0000 7f000001 "   \
	"0000000000000000"
#define V_GET_INFO_HELD                                                   \
	"01016d000000 01000000 "                                          \
	"010121000000 08 7510000000000000 "                               \
	"14000000\"auto 139951106705808\" "                               \
	"01012f000000 00000000 00000000 " V_ADDR_LOCAL " 00000000 "        \
	"01 08000000\"internal\""
#define V_OBJMAP_GET_INFO                                                 \
	"010151000000 01000000 01010d000000 08 7510000000000000 00000000 " \
	"01012f000000 00000000 00000000 " V_ADDR_LOCAL " 00000000 "        \
	"01 00000000"
#define V_LOCK_IN                                                         \
	"010134000000 08000000\"rbd_lock\" 01 0a000000\"auto 12345\" "     \
	"08000000\"internal\" 00000000 0000000000000000 00"
#define ZERO16 "00000000000000000000000000000000"
#define V_OBJMAP_256                                                      \
	"0e000000 0101080000000001000000000000 " ZERO16 ZERO16 ZERO16      \
	ZERO16 " 0c000000 9a96b482 01000000 00000000"
#define V_ACQUIRED                                                        \
	"070114000000 00000000 7510000000000000 904900e8487f0000"
#define V_REQUEST                                                         \
	"070115000000 02000000 7710000000000000 b0db01e8487f0000 00"
#define V_HEADER_UPDATE "070104000000 03000000"
#define V_RESIZE                                                          \
	"070125000000 07000000 0000008000000000 7510000000000000 "         \
	"904900e8487f0000 0100000000000000 00"
#define V_QUIESCE                                                         \
	"07011c000000 12000000 7510000000000000 904900e8487f0000 "         \
	"0100000000000000"
#define V_RESPONSE_0 "010104000000 00000000"
#define V_NOTIFY_REPLY                                                    \
	"01000000 8910000000000000 a03bbfa483550000 00000000 00000000"

/* ---- decoder wrappers (for the table-driven malformed-input tests) ------ */

typedef int (*dec_fn)(const uint8_t *buf, size_t len);

static int w_get_size(const uint8_t *b, size_t n)
{
	uint8_t o;
	uint64_t s;

	return rbdl_decode_get_size(b, n, &o, &s);
}

static int w_features(const uint8_t *b, size_t n)
{
	uint64_t f, i;

	return rbdl_decode_get_features(b, n, &f, &i);
}

static int w_u64(const uint8_t *b, size_t n)
{
	uint64_t v;

	return rbdl_decode_u64(b, n, &v);
}

static int w_stripe(const uint8_t *b, size_t n)
{
	uint64_t su, sc;

	return rbdl_decode_stripe(b, n, &su, &sc);
}

static int w_string(const uint8_t *b, size_t n)
{
	char *s = (char *)1;
	int r = rbdl_decode_string(b, n, &s);

	if (r)
		EXPECT(s == NULL);
	free(s);
	return r;
}

static int w_snapc(const uint8_t *b, size_t n)
{
	uint64_t seq, *snaps = (uint64_t *)1;
	uint32_t cnt = 7;
	int r = rbdl_decode_snapcontext(b, n, &seq, &snaps, &cnt);

	if (r)
		EXPECT(snaps == NULL && cnt == 0);
	free(snaps);
	return r;
}

static int w_parent(const uint8_t *b, size_t n)
{
	struct rbdl_parent_spec ps;
	int r = rbdl_decode_parent_spec(b, n, &ps);

	if (r)
		EXPECT(!ps.pool_namespace && !ps.image_id);
	rbdl_parent_spec_free(&ps);
	return r;
}

static int w_migration(const uint8_t *b, size_t n)
{
	struct rbdl_migration_spec m;
	int r = rbdl_decode_migration_spec(b, n, &m);

	if (r)
		EXPECT(!m.pool_namespace && !m.image_id && !m.snap_seqs);
	rbdl_migration_spec_free(&m);
	return r;
}

static int w_overlap(const uint8_t *b, size_t n)
{
	bool has;
	uint64_t ov;

	return rbdl_decode_parent_overlap(b, n, &has, &ov);
}

static int w_snapshot(const uint8_t *b, size_t n)
{
	struct rbdl_snap_info si;
	int r = rbdl_decode_snapshot_info(b, n, &si);

	if (r)
		EXPECT(!si.name);
	rbdl_snap_info_free(&si);
	return r;
}

static int w_lock_info(const uint8_t *b, size_t n)
{
	struct rbdl_lock_info li;
	int r = rbdl_decode_lock_info(b, n, &li);

	if (r)
		EXPECT(!li.lockers && !li.tag && li.n_lockers == 0);
	rbdl_lock_info_free(&li);
	return r;
}

static int w_objmap(const uint8_t *b, size_t n)
{
	uint8_t *bits = (uint8_t *)1;
	uint64_t nobjs = 7;
	int r = rbdl_decode_object_map(b, n, &bits, &nobjs);

	if (r)
		EXPECT(bits == NULL && nobjs == 0);
	free(bits);
	return r;
}

static int w_notify(const uint8_t *b, size_t n)
{
	struct rbdl_notify_msg m;

	return rbdl_decode_notify(b, n, &m);
}

static int w_response(const uint8_t *b, size_t n)
{
	int32_t res;

	return rbdl_decode_notify_response(b, n, &res);
}

static unsigned int walk_calls;

static int count_cb(uint64_t gid, uint64_t cookie, bool timed_out,
		    const uint8_t *payload, uint32_t len, void *arg)
{
	(void)gid;
	(void)cookie;
	(void)arg;
	EXPECT(timed_out ? payload == NULL && len == 0 : payload != NULL);
	walk_calls++;
	return 0;
}

static int w_walk(const uint8_t *b, size_t n)
{
	int r;

	walk_calls = 0;
	r = rbdl_walk_notify_reply(b, n, count_cb, NULL);
	/* A malformed reply is rejected before any callback runs. */
	if (r)
		EXPECT(walk_calls == 0);
	return r;
}

/* Decode hex through a wrapper, on an exact-size heap copy. */
static int run_hex(dec_fn fn, const char *hex)
{
	uint8_t raw[1024], *c;
	size_t n = unhex(hex, raw, sizeof(raw));
	int r;

	c = dup_exact(raw, n);
	r = fn(c, n);
	free(c);
	return r;
}

/* ---- encoder / decoder primitives ---------------------------------------- */

START_TEST(test_enc_primitives)
{
	uint8_t buf[64];
	struct rbdl_enc e;
	size_t t1, t2;

	rbdl_enc_init(&e, buf, sizeof(buf));
	t1 = rbdl_enc_struct_start(&e, 3, 2);
	rbdl_enc_u8(&e, 0xab);
	rbdl_enc_u32(&e, 0x01020304);
	t2 = rbdl_enc_struct_start(&e, 1, 1);
	rbdl_enc_u64(&e, 0x1122334455667788ULL);
	rbdl_enc_struct_end(&e, t2);
	rbdl_enc_str(&e, "ab");
	rbdl_enc_str(&e, NULL);
	rbdl_enc_bytes(&e, NULL, 0);
	rbdl_enc_raw(&e, "xy", 2);
	rbdl_enc_struct_end(&e, t1);
	expect_bytes(buf, rbdl_enc_len(&e),
		     "0302 23000000 ab 04030201 0101 08000000 8877665544332211"
		     " 02000000\"ab\" 00000000 00000000 \"xy\"");

	/* Overflow latches -ERANGE and writes nothing past cap. */
	memset(buf, 0xee, sizeof(buf));
	rbdl_enc_init(&e, buf, 6);
	rbdl_enc_u32(&e, 1);
	rbdl_enc_u32(&e, 2);
	ck_assert_int_eq(e.err, -ERANGE);
	ck_assert_int_eq(rbdl_enc_len(&e), -ERANGE);
	rbdl_enc_u8(&e, 3);	/* ignored after the error */
	ck_assert_uint_eq(buf[4], 0xee);
	ck_assert_uint_eq(buf[6], 0xee);
	ck_assert_int_eq(rbdl_enc_len(&e), -ERANGE);

	/* A zero-capacity or NULL buffer. */
	rbdl_enc_init(&e, NULL, 100);
	rbdl_enc_u8(&e, 1);
	ck_assert_int_eq(rbdl_enc_len(&e), -ERANGE);
	rbdl_enc_init(&e, buf, 0);
	ck_assert_int_eq(rbdl_enc_len(&e), 0);
	rbdl_enc_str(&e, "");
	ck_assert_int_eq(rbdl_enc_len(&e), -ERANGE);

	/* NULL bytes with a length are a caller bug. */
	rbdl_enc_init(&e, buf, sizeof(buf));
	rbdl_enc_bytes(&e, NULL, 3);
	ck_assert_int_lt(rbdl_enc_len(&e), 0);
}
END_TEST

START_TEST(test_dec_primitives)
{
	uint8_t raw[64];
	size_t n = unhex("ab 04030201 8877665544332211 03000000\"xyz\" "
			 "0201 03000000 aabbcc 55",
			 raw, sizeof(raw));
	uint8_t *buf = dup_exact(raw, n);
	struct rbdl_dec d;
	const uint8_t *se, *p;
	uint32_t len;
	char *s;

	rbdl_dec_init(&d, buf, n);
	ck_assert_uint_eq(rbdl_dec_u8(&d), 0xab);
	ck_assert_uint_eq(rbdl_dec_u32(&d), 0x01020304);
	ck_assert_uint_eq(rbdl_dec_u64(&d), 0x1122334455667788ULL);
	s = rbdl_dec_strdup(&d);
	ck_assert_str_eq(s, "xyz");
	free(s);
	/* A v2 struct (compat 1) with 3 bytes of body; we read 1. */
	ck_assert_uint_eq(rbdl_dec_struct_start(&d, 1, &se), 2);
	ck_assert_uint_eq(rbdl_dec_u8(&d), 0xaa);
	rbdl_dec_struct_end(&d, se);
	ck_assert_uint_eq(rbdl_dec_u8(&d), 0x55);
	ck_assert_int_eq(d.err, 0);
	ck_assert_ptr_eq(d.p, d.end);
	/* Underrun latches -EBADMSG; later reads give zeros. */
	ck_assert_uint_eq(rbdl_dec_u32(&d), 0);
	ck_assert_int_eq(d.err, -EBADMSG);
	ck_assert_uint_eq(rbdl_dec_u8(&d), 0);
	ck_assert_ptr_null(rbdl_dec_bytes(&d, &len));
	ck_assert_uint_eq(len, 0);
	ck_assert_ptr_null(rbdl_dec_strdup(&d));
	ck_assert_int_eq(d.err, -EBADMSG);

	/* A partial u64 is not consumed. */
	rbdl_dec_init(&d, buf, 7);
	ck_assert_uint_eq(rbdl_dec_u64(&d), 0);
	ck_assert_int_eq(d.err, -EBADMSG);

	/* Compat newer than we understand. */
	rbdl_dec_init(&d, buf + 20, 6);
	ck_assert_uint_eq(rbdl_dec_struct_start(&d, 0, &se), 0);
	ck_assert_int_eq(d.err, -EBADMSG);

	/* struct_len past the end of the buffer. */
	rbdl_dec_init(&d, buf + 20, 8);
	rbdl_dec_struct_start(&d, 1, &se);
	ck_assert_int_eq(d.err, -EBADMSG);

	/* Reading past struct_end means the length lied. */
	rbdl_dec_init(&d, buf + 20, 10);
	rbdl_dec_struct_start(&d, 1, &se);
	rbdl_dec_u32(&d);
	rbdl_dec_struct_end(&d, se);
	ck_assert_int_eq(d.err, -EBADMSG);

	/* Skip, bytes with an empty string. */
	rbdl_dec_init(&d, buf, n);
	rbdl_dec_skip(&d, n);
	ck_assert_int_eq(d.err, 0);
	rbdl_dec_skip(&d, 1);
	ck_assert_int_eq(d.err, -EBADMSG);
	free(buf);

	n = unhex("00000000", raw, sizeof(raw));
	buf = dup_exact(raw, n);
	rbdl_dec_init(&d, buf, n);
	p = rbdl_dec_bytes(&d, &len);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(d.err, 0);
	free(buf);

	/* Huge string lengths. */
	n = unhex("ffffffff 616263", raw, sizeof(raw));
	buf = dup_exact(raw, n);
	rbdl_dec_init(&d, buf, n);
	ck_assert_ptr_null(rbdl_dec_strdup(&d));
	ck_assert_int_eq(d.err, -EBADMSG);
	rbdl_dec_init(&d, buf, n);
	ck_assert_ptr_null(rbdl_dec_bytes(&d, &len));
	free(buf);
	n = unhex("04000000 616263", raw, sizeof(raw));
	buf = dup_exact(raw, n);
	rbdl_dec_init(&d, buf, n);
	ck_assert_ptr_null(rbdl_dec_strdup(&d));
	ck_assert_int_eq(d.err, -EBADMSG);
	free(buf);

	/* An empty buffer, even a NULL one. */
	rbdl_dec_init(&d, NULL, 0);
	ck_assert_uint_eq(rbdl_dec_u8(&d), 0);
	ck_assert_int_eq(d.err, -EBADMSG);
}
END_TEST

/* ---- cls "rbd" replies --------------------------------------------------- */

START_TEST(test_get_size)
{
	uint8_t raw[16], order = 0;
	uint64_t size = 0;
	size_t n = unhex(V_GET_SIZE " 99", raw, sizeof(raw));

	ck_assert_int_eq(rbdl_decode_get_size(raw, n - 1, &order, &size), 0);
	ck_assert_uint_eq(order, 22);
	ck_assert_uint_eq(size, 1ULL << 30);
	/* Trailing bytes are ignored (newer OSDs may append fields). */
	ck_assert_int_eq(rbdl_decode_get_size(raw, n, &order, &size), 0);
	ck_assert_uint_eq(size, 1ULL << 30);
}
END_TEST

START_TEST(test_get_features)
{
	uint8_t raw[32];
	uint64_t f, i;
	size_t n;

	n = unhex(V_FEATURES_RW, raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_get_features(raw, n, &f, &i), 0);
	ck_assert_uint_eq(f, 0x3d);
	ck_assert_uint_eq(i, 0x3d);
	n = unhex(V_FEATURES_RO, raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_get_features(raw, n, &f, &i), 0);
	ck_assert_uint_eq(f, 0x3d);
	ck_assert_uint_eq(i, 0x1);
	/* Old OSDs: features only. */
	i = 99;
	ck_assert_int_eq(rbdl_decode_get_features(raw, 8, &f, &i), 0);
	ck_assert_uint_eq(f, 0x3d);
	ck_assert_uint_eq(i, 0);
}
END_TEST

START_TEST(test_scalars_and_strings)
{
	uint8_t raw[64];
	uint64_t v, su, sc;
	char *s;
	size_t n;

	n = unhex("0300000000000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_u64(raw, n, &v), 0);
	ck_assert_uint_eq(v, 3);
	/* get_data_pool: s64 -1 = none. */
	n = unhex("ffffffffffffffff", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_u64(raw, n, &v), 0);
	ck_assert_int_eq((int64_t)v, -1);

	n = unhex("0000010000000000 0400000000000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_stripe(raw, n, &su, &sc), 0);
	ck_assert_uint_eq(su, 65536);
	ck_assert_uint_eq(sc, 4);

	/* rbd.get_id reply (section 1). */
	n = unhex("0c000000\"10116cf22ad0\"", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_string(raw, n, &s), 0);
	ck_assert_str_eq(s, "10116cf22ad0");
	free(s);
	n = unhex("00000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_string(raw, n, &s), 0);
	ck_assert_str_eq(s, "");
	free(s);

	ck_assert_int_eq(run_hex(w_string, "ffffffff \"abc\""), -EBADMSG);
	ck_assert_int_eq(run_hex(w_string, "0d000000\"10116cf22ad0\""),
			 -EBADMSG);
	ck_assert_int_eq(run_hex(w_string, "00000080 00"), -EBADMSG);
}
END_TEST

START_TEST(test_snapcontext)
{
	uint8_t raw[64];
	uint64_t seq, *snaps;
	uint32_t cnt;
	size_t n = unhex(V_SNAPC, raw, sizeof(raw));

	ck_assert_int_eq(rbdl_decode_snapcontext(raw, n, &seq, &snaps, &cnt),
			 0);
	ck_assert_uint_eq(seq, 8);
	ck_assert_uint_eq(cnt, 2);
	ck_assert_uint_eq(snaps[0], 8);
	ck_assert_uint_eq(snaps[1], 4);
	free(snaps);

	n = unhex("0000000000000000 00000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_snapcontext(raw, n, &seq, &snaps, &cnt),
			 0);
	ck_assert_uint_eq(seq, 0);
	ck_assert_uint_eq(cnt, 0);
	ck_assert_ptr_null(snaps);

	/* A count the buffer cannot hold is refused before allocating. */
	ck_assert_int_eq(run_hex(w_snapc, "0800000000000000 ffffffff "
					  "0800000000000000"), -EBADMSG);
	ck_assert_int_eq(run_hex(w_snapc, "0800000000000000 00000020"),
			 -EBADMSG);
}
END_TEST

START_TEST(test_migration_get)
{
	uint8_t raw[160];
	struct rbdl_migration_spec m;
	size_t n = unhex(V_MIGRATION_DST, raw, sizeof(raw));

	ck_assert_int_eq(rbdl_decode_migration_spec(raw, n, &m), 0);
	ck_assert_uint_eq(m.header_type, RBDL_MIGRATION_DST);
	ck_assert_int_eq(m.pool_id, 1);
	ck_assert_str_eq(m.pool_namespace, "");
	ck_assert_str_eq(m.image_name, "msrc");
	ck_assert_str_eq(m.image_id, "10497797d1af");
	ck_assert_uint_eq(m.nsnap_seqs, 1);
	ck_assert_uint_eq(m.snap_seqs[0][0], 13);
	ck_assert_uint_eq(m.snap_seqs[0][1], 14);
	ck_assert_uint_eq(m.overlap, 3670016);
	ck_assert_uint_eq(m.state, RBDL_MIGRATION_PREPARED);
	ck_assert(!m.has_source_spec);
	rbdl_migration_spec_free(&m);
	/* A snap_seqs count far beyond the reply: malformed, no huge
	 * allocation. */
	ck_assert_int_eq(run_hex(w_migration,
				 "03011d000000 02 0100000000000000 00000000 "
				 "00000000 00000000 ffffffff 0000000000000000"),
			 -EBADMSG);
}
END_TEST

START_TEST(test_parent_get)
{
	uint8_t raw[128];
	struct rbdl_parent_spec ps;
	size_t n;

	n = unhex(V_PARENT_NONE, raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_parent_spec(raw, n, &ps), 0);
	ck_assert_int_eq(ps.pool_id, -1);
	ck_assert_str_eq(ps.pool_namespace, "");
	ck_assert_str_eq(ps.image_id, "");
	ck_assert_uint_eq(ps.snap_id, RBDL_NOSNAP);
	rbdl_parent_spec_free(&ps);
	ck_assert_ptr_null(ps.image_id);
	rbdl_parent_spec_free(&ps);	/* idempotent */

	n = unhex(V_PARENT_CLONE, raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_parent_spec(raw, n, &ps), 0);
	ck_assert_int_eq(ps.pool_id, 1);
	ck_assert_str_eq(ps.pool_namespace, "");
	ck_assert_str_eq(ps.image_id, "10316e0deff2");
	ck_assert_uint_eq(ps.snap_id, 4);
	rbdl_parent_spec_free(&ps);

	/* A newer encoder (v2, compat 1) with a trailing field we skip. */
	n = unhex("020128000000 0100000000000000 02000000\"ns\" "
		  "0c000000\"10316e0deff2\" 0400000000000000 \"tail\"",
		  raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_parent_spec(raw, n, &ps), 0);
	ck_assert_str_eq(ps.pool_namespace, "ns");
	ck_assert_uint_eq(ps.snap_id, 4);
	rbdl_parent_spec_free(&ps);

	/* Compat too new. */
	ck_assert_int_eq(run_hex(w_parent,
				 "020218000000 ffffffffffffffff 00000000 "
				 "00000000 feffffffffffffff"), -EBADMSG);
	/* struct_len shorter than the fields. */
	ck_assert_int_eq(run_hex(w_parent,
				 "010117000000 ffffffffffffffff 00000000 "
				 "00000000 feffffffffffffff"), -EBADMSG);
	/* A string length running past the struct (but not the buffer). */
	ck_assert_int_eq(run_hex(w_parent,
				 "010118000000 ffffffffffffffff 0c000000 "
				 "00000000 feffffffffffffff 0000000000000000"),
			 -EBADMSG);
}
END_TEST

START_TEST(test_parent_overlap)
{
	uint8_t raw[16];
	bool has = true;
	uint64_t ov = 7;
	size_t n;

	n = unhex(V_OVERLAP, raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_parent_overlap(raw, n, &has, &ov), 0);
	ck_assert(has);
	ck_assert_uint_eq(ov, 32ULL << 20);
	n = unhex("00", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_parent_overlap(raw, n, &has, &ov), 0);
	ck_assert(!has);
	ck_assert_uint_eq(ov, 0);
}
END_TEST

START_TEST(test_child_specs)
{
	uint8_t raw[160];
	struct rbdl_child_spec *v = NULL;
	uint32_t n = 99;
	size_t len;

	/* set<ChildImageSpec> of two: (pool 2, "ab", ""), (pool 3, "c",
	 * "ns"). */
	len = unhex("02000000 "
		    "020112000000 0200000000000000 02000000\"ab\" 00000000 "
		    "020113000000 0300000000000000 01000000\"c\" "
		    "02000000\"ns\"", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_child_specs(raw, len, &v, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(v[0].pool_id, 2);
	ck_assert_str_eq(v[0].image_id, "ab");
	ck_assert_str_eq(v[0].pool_ns, "");
	ck_assert_int_eq(v[1].pool_id, 3);
	ck_assert_str_eq(v[1].image_id, "c");
	ck_assert_str_eq(v[1].pool_ns, "ns");
	rbdl_child_specs_free(v, n);

	/* Empty; truncated; a count no reply could hold. */
	len = unhex("00000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_child_specs(raw, len, &v, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(v);
	len = unhex("01000000 020112000000 0200000000000000 02000000 61",
		    raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_child_specs(raw, len, &v, &n), -EBADMSG);
	len = unhex("ffffffff 020112000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_child_specs(raw, len, &v, &n), -EBADMSG);
}
END_TEST

START_TEST(test_snapshot_get)
{
	uint8_t raw[160];
	struct rbdl_snap_info si;
	size_t n;

	n = unhex(V_SNAPSHOT_GET, raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_snapshot_info(raw, n, &si), 0);
	ck_assert_uint_eq(si.id, 4);
	ck_assert_uint_eq(si.ns_type, 0);
	ck_assert_str_eq(si.name, "s1");
	ck_assert_uint_eq(si.image_size, 32ULL << 20);
	ck_assert_uint_eq(si.ts_sec, 0x6b0c7760);
	ck_assert_uint_eq(si.ts_nsec, 0x1ba154f5);
	ck_assert_uint_eq(si.child_count, 0);
	rbdl_snap_info_free(&si);

	/* A TRASH snapshot: the namespace body is skipped. */
	n = unhex("01013a000000 0500000000000000 "
		  "010110000000 02000000 04000000\"orig\" 00000000 "
		  "04000000\"uuid\" 0000004000000000 01000000 02000000 "
		  "01000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_snapshot_info(raw, n, &si), 0);
	ck_assert_uint_eq(si.id, 5);
	ck_assert_uint_eq(si.ns_type, 2);
	ck_assert_str_eq(si.name, "uuid");
	ck_assert_uint_eq(si.image_size, 1ULL << 30);
	ck_assert_uint_eq(si.ts_sec, 1);
	ck_assert_uint_eq(si.ts_nsec, 2);
	ck_assert_uint_eq(si.child_count, 1);
	rbdl_snap_info_free(&si);

	/* Namespace compat too new; outer compat too new. */
	ck_assert_int_eq(run_hex(w_snapshot,
				 "01012c000000 0400000000000000 010204000000 "
				 "00000000 02000000\"s1\" 0000000200000000 "
				 "60770c6b f554a11b 00000000"), -EBADMSG);
	ck_assert_int_eq(run_hex(w_snapshot,
				 "02022c000000 0400000000000000 010104000000 "
				 "00000000 02000000\"s1\" 0000000200000000 "
				 "60770c6b f554a11b 00000000"), -EBADMSG);
	/* Namespace struct_len larger than the outer struct. */
	ck_assert_int_eq(run_hex(w_snapshot,
				 "01012c000000 0400000000000000 010140000000 "
				 "00000000 02000000\"s1\" 0000000200000000 "
				 "60770c6b f554a11b 00000000 " ZERO16 ZERO16),
			 -EBADMSG);
	/* Huge name length. */
	ck_assert_int_eq(run_hex(w_snapshot,
				 "01012c000000 0400000000000000 010104000000 "
				 "00000000 f0ffffff\"s1\" 0000000200000000 "
				 "60770c6b f554a11b 00000000"), -EBADMSG);
}
END_TEST

/* ---- cls "lock" ---------------------------------------------------------- */

START_TEST(test_lock_encoders)
{
	uint8_t buf[256];
	long n, cap;

	n = rbdl_encode_lock_get_info(buf, sizeof(buf), "rbd_lock");
	expect_bytes(buf, n, V_GET_INFO_IN);

	n = rbdl_encode_lock_lock(buf, sizeof(buf), "rbd_lock",
				  RBDL_LOCK_EXCLUSIVE, "auto 12345", "internal",
				  "", 0, 0, 0);
	expect_bytes(buf, n, V_LOCK_IN);
	/* Every too-small buffer fails cleanly. */
	for (cap = 0; cap < n; cap++)
		ck_assert_int_eq(rbdl_encode_lock_lock(buf, (size_t)cap,
						       "rbd_lock", 1,
						       "auto 12345",
						       "internal", "", 0, 0,
						       0), -ERANGE);

	/* Object-map lock: cookie "", tag "". */
	n = rbdl_encode_lock_lock(buf, sizeof(buf), "rbd_lock",
				  RBDL_LOCK_EXCLUSIVE, "", "", NULL, 0, 0, 0);
	expect_bytes(buf, n, "010122000000 08000000\"rbd_lock\" 01 00000000 "
			     "00000000 00000000 0000000000000000 00");
	n = rbdl_encode_lock_lock(buf, sizeof(buf), "x", RBDL_LOCK_SHARED,
				  "c", "t", "d", 5, 6, 1);
	expect_bytes(buf, n, "01011e000000 01000000\"x\" 02 01000000\"c\" "
			     "01000000\"t\" 01000000\"d\" "
			     "05000000 06000000 01");

	n = rbdl_encode_lock_unlock(buf, sizeof(buf), "rbd_lock",
				    "auto 12345");
	expect_bytes(buf, n, "01011a000000 08000000\"rbd_lock\" "
			     "0a000000\"auto 12345\"");

	n = rbdl_encode_lock_break(buf, sizeof(buf), "rbd_lock", 8, 0x1075,
				   "auto 139951106705808");
	expect_bytes(buf, n, "01012d000000 08000000\"rbd_lock\" 08 "
			     "7510000000000000 "
			     "14000000\"auto 139951106705808\"");

	n = rbdl_encode_lock_assert(buf, sizeof(buf), "rbd_lock",
				    RBDL_LOCK_EXCLUSIVE, "", "");
	expect_bytes(buf, n,
		     "010115000000 08000000\"rbd_lock\" 01 00000000 00000000");

	n = rbdl_encode_lock_set_cookie(buf, sizeof(buf), "rbd_lock",
					RBDL_LOCK_EXCLUSIVE, "auto 1",
					"internal", "auto 2");
	expect_bytes(buf, n, "01012d000000 08000000\"rbd_lock\" 01 "
			     "06000000\"auto 1\" 08000000\"internal\" "
			     "06000000\"auto 2\"");

	ck_assert_int_eq(rbdl_encode_lock_unlock(buf, 10, "rbd_lock", "c"),
			 -ERANGE);
	ck_assert_int_eq(rbdl_encode_lock_break(buf, 0, "a", 8, 1, "c"),
			 -ERANGE);
	ck_assert_int_eq(rbdl_encode_lock_get_info(buf, 17, "rbd_lock"),
			 -ERANGE);
	ck_assert_int_eq(rbdl_encode_lock_assert(buf, 5, "a", 1, "c", "t"),
			 -ERANGE);
	ck_assert_int_eq(rbdl_encode_lock_set_cookie(buf, 20, "a", 1, "c",
						     "t", "new cookie"),
			 -ERANGE);
}
END_TEST

START_TEST(test_lock_info_held)
{
	uint8_t raw[256];
	struct rbdl_lock_info li;
	size_t n = unhex(V_GET_INFO_HELD, raw, sizeof(raw));
	uint8_t *buf = dup_exact(raw, n);

	ck_assert_int_eq(rbdl_decode_lock_info(buf, n, &li), 0);
	ck_assert_uint_eq(li.n_lockers, 1);
	ck_assert_uint_eq(li.lockers[0].entity_type, 8);
	ck_assert_int_eq(li.lockers[0].entity_num, 0x1075);
	ck_assert_str_eq(li.lockers[0].cookie, "auto 139951106705808");
	ck_assert_str_eq(li.lockers[0].description, "");
	/* nonce 0a1c5f46 = 0x465f1c0a; port 0; msgr1 (type 1). */
	ck_assert_str_eq(li.lockers[0].addr, "127.0.0.1:0/1180638218");
	ck_assert_uint_eq(li.lock_type, RBDL_LOCK_EXCLUSIVE);
	ck_assert_str_eq(li.tag, "internal");
	rbdl_lock_info_free(&li);
	ck_assert_ptr_null(li.lockers);
	ck_assert_uint_eq(li.n_lockers, 0);
	rbdl_lock_info_free(&li);	/* idempotent */
	free(buf);
}
END_TEST

START_TEST(test_lock_info_objmap)
{
	uint8_t raw[256];
	struct rbdl_lock_info li;
	size_t n = unhex(V_OBJMAP_GET_INFO, raw, sizeof(raw));

	ck_assert_int_eq(rbdl_decode_lock_info(raw, n, &li), 0);
	ck_assert_uint_eq(li.n_lockers, 1);
	ck_assert_int_eq(li.lockers[0].entity_num, 0x1075);
	ck_assert_str_eq(li.lockers[0].cookie, "");
	ck_assert_str_eq(li.lockers[0].addr, "127.0.0.1:0/1180638218");
	ck_assert_uint_eq(li.lock_type, RBDL_LOCK_EXCLUSIVE);
	ck_assert_str_eq(li.tag, "");
	rbdl_lock_info_free(&li);

	/* Unlocked: no lockers, but a stale type and tag. */
	n = unhex("010111000000 00000000 01 08000000\"internal\"", raw,
		  sizeof(raw));
	ck_assert_int_eq(rbdl_decode_lock_info(raw, n, &li), 0);
	ck_assert_uint_eq(li.n_lockers, 0);
	ck_assert_ptr_null(li.lockers);
	ck_assert_uint_eq(li.lock_type, 1);
	ck_assert_str_eq(li.tag, "internal");
	rbdl_lock_info_free(&li);
}
END_TEST

/*
 * Build a one-locker get_info reply around raw entity_addr_t bytes
 * (Appendix A notation), with the encoders under test.
 */
static size_t build_lock_info(uint8_t *out, size_t cap, const char *addr_hex,
			      uint8_t addr_compat)
{
	uint8_t addr[256];
	size_t alen = unhex(addr_hex, addr, sizeof(addr));
	struct rbdl_enc e;
	size_t t0, t1;

	rbdl_enc_init(&e, out, cap);
	t0 = rbdl_enc_struct_start(&e, 1, 1);
	rbdl_enc_u32(&e, 1);
	t1 = rbdl_enc_struct_start(&e, 1, 1);
	rbdl_enc_u8(&e, 8);
	rbdl_enc_u64(&e, 4242);
	rbdl_enc_str(&e, "auto 7");
	rbdl_enc_struct_end(&e, t1);
	t1 = rbdl_enc_struct_start(&e, 1, 1);
	rbdl_enc_u64(&e, 0);
	if (alen > 2 && addr_compat)
		addr[2] = addr_compat;	/* patch the struct's compat */
	rbdl_enc_raw(&e, addr, alen);
	rbdl_enc_str(&e, "desc");
	rbdl_enc_struct_end(&e, t1);
	rbdl_enc_u8(&e, 1);
	rbdl_enc_str(&e, "internal");
	rbdl_enc_struct_end(&e, t0);
	ck_assert_int_gt(rbdl_enc_len(&e), 0);
	return (size_t)rbdl_enc_len(&e);
}

/* Decode a built reply; returns the result and copies the address. */
static int lock_addr(const char *addr_hex, uint8_t addr_compat, char *addr)
{
	uint8_t raw[512], *buf;
	struct rbdl_lock_info li;
	size_t n = build_lock_info(raw, sizeof(raw), addr_hex, addr_compat);
	int r;

	buf = dup_exact(raw, n);
	r = rbdl_decode_lock_info(buf, n, &li);
	free(buf);
	addr[0] = '\0';
	if (r == 0) {
		ck_assert_uint_eq(li.n_lockers, 1);
		ck_assert_int_eq(li.lockers[0].entity_num, 4242);
		ck_assert_str_eq(li.lockers[0].cookie, "auto 7");
		ck_assert_str_eq(li.lockers[0].description, "desc");
		ck_assert_str_eq(li.tag, "internal");
		strcpy(addr, li.lockers[0].addr);
	}
	rbdl_lock_info_free(&li);
	return r;
}

#define LEGACY_PAD                                                        \
	ZERO16 ZERO16 ZERO16 ZERO16 ZERO16 ZERO16 ZERO16 "0000000000000000"

START_TEST(test_lock_info_addr_forms)
{
	char a[128];

	/* The Appendix A address again, through the builder. */
	ck_assert_int_eq(lock_addr(V_ADDR_LOCAL, 0, a), 0);
	ck_assert_str_eq(a, "127.0.0.1:0/1180638218");

	/* msgr2 (type 2), a real port: 0x1a90 = 6800. */
	ck_assert_int_eq(lock_addr("01 01011c000000 02000000 2a000000 "
				   "10000000 0200 1a90 0a000102 "
				   "0000000000000000", 0, a), 0);
	ck_assert_str_eq(a, "v2:10.0.1.2:6800/42");
	/* type 3 (ANY) gets no prefix. */
	ck_assert_int_eq(lock_addr("01 01011c000000 03000000 2a000000 "
				   "10000000 0200 1a90 0a000102 "
				   "0000000000000000", 0, a), 0);
	ck_assert_str_eq(a, "10.0.1.2:6800/42");

	/* IPv6, sockaddr_in6: family, port, flowinfo, addr, scope. */
	ck_assert_int_eq(lock_addr("01 010128000000 02000000 ffffffff "
				   "1c000000 0a00 1a91 00000000 "
				   "20010db8000000000000000000000001 "
				   "00000000", 0, a), 0);
	ck_assert_str_eq(a, "v2:[2001:db8::1]:6801/4294967295");

	/* Legacy form: marker 0, 3 pad bytes, nonce, sockaddr_storage
	 * with a big-endian family. */
	ck_assert_int_eq(lock_addr("00 000000 d2040000 0002 0050 c0a80001 "
				   LEGACY_PAD, 0, a), 0);
	ck_assert_str_eq(a, "192.168.0.1:80/1234");
	ck_assert_int_eq(lock_addr("00 000000 07000000 000a 0051 00000000 "
				   "00000000000000000000000000000001 "
				   "00000000" ZERO16 ZERO16 ZERO16 ZERO16 ZERO16
				   ZERO16 "00000000", 0, a), 0);
	ck_assert_str_eq(a, "[::1]:81/7");

	/* No sockaddr, or an unknown family: no usable address. */
	ck_assert_int_eq(lock_addr("01 01010c000000 00000000 05000000 "
				   "00000000", 0, a), 0);
	ck_assert_str_eq(a, "");
	ck_assert_int_eq(lock_addr("01 01010e000000 01000000 05000000 "
				   "02000000 0100", 0, a), 0);
	ck_assert_str_eq(a, "");

	/* A newer addr struct (v2, compat 1) with a trailing field. */
	ck_assert_int_eq(lock_addr("01 02011e000000 01000000 0a1c5f46 "
				   "10000000 0200 0000 7f000001 "
				   "0000000000000000 abcd", 0, a), 0);
	ck_assert_str_eq(a, "127.0.0.1:0/1180638218");

	/* Malformed: compat too new, marker 2, sockaddr too long for the
	 * family, sockaddr shorter than a family, sockaddr past the struct,
	 * legacy form cut short. */
	ck_assert_int_eq(lock_addr(V_ADDR_LOCAL, 2, a), -EBADMSG);
	ck_assert_int_eq(lock_addr("02 01011c000000 01000000 0a1c5f46 "
				   "10000000 0200 0000 7f000001 "
				   "0000000000000000", 0, a), -EBADMSG);
	ck_assert_int_eq(lock_addr("01 01011d000000 01000000 0a1c5f46 "
				   "11000000 0200 0000 7f000001 "
				   "000000000000000000", 0, a), -EBADMSG);
	ck_assert_int_eq(lock_addr("01 01010d000000 01000000 0a1c5f46 "
				   "01000000 02", 0, a), -EBADMSG);
	ck_assert_int_eq(lock_addr("01 01011c000000 01000000 0a1c5f46 "
				   "ffffffff 0200 0000 7f000001 "
				   "0000000000000000", 0, a), -EBADMSG);
	ck_assert_int_eq(lock_addr("00 000000 d2040000 0002 0050 c0a80001",
				   0, a), -EBADMSG);
}
END_TEST

START_TEST(test_lock_info_malformed)
{
	/* Outer compat too new. */
	ck_assert_int_eq(run_hex(w_lock_info,
				 "010211000000 00000000 01 "
				 "08000000\"internal\""), -EBADMSG);
	/* locker_id_t compat too new. */
	ck_assert_int_eq(run_hex(w_lock_info,
				 "01016d000000 01000000 "
				 "010221000000 08 7510000000000000 "
				 "14000000\"auto 139951106705808\" "
				 "01012f000000 00000000 00000000 "
				 V_ADDR_LOCAL " 00000000 "
				 "01 08000000\"internal\""), -EBADMSG);
	/* locker_info_t compat too new. */
	ck_assert_int_eq(run_hex(w_lock_info,
				 "01016d000000 01000000 "
				 "010121000000 08 7510000000000000 "
				 "14000000\"auto 139951106705808\" "
				 "01032f000000 00000000 00000000 "
				 V_ADDR_LOCAL " 00000000 "
				 "01 08000000\"internal\""), -EBADMSG);
	/* Huge cookie length. */
	ck_assert_int_eq(run_hex(w_lock_info,
				 "01016d000000 01000000 "
				 "010121000000 08 7510000000000000 "
				 "ffffff7f\"auto 139951106705808\" "
				 "01012f000000 00000000 00000000 "
				 V_ADDR_LOCAL " 00000000 "
				 "01 08000000\"internal\""), -EBADMSG);
	/* Huge and merely-too-large locker counts. */
	ck_assert_int_eq(run_hex(w_lock_info,
				 "010111000000 ffffffff 01 "
				 "08000000\"internal\""), -EBADMSG);
	ck_assert_int_eq(run_hex(w_lock_info,
				 "01016d000000 02000000 "
				 "010121000000 08 7510000000000000 "
				 "14000000\"auto 139951106705808\" "
				 "01012f000000 00000000 00000000 "
				 V_ADDR_LOCAL " 00000000 "
				 "01 08000000\"internal\""), -EBADMSG);
	/* Description length running past locker_info_t. */
	ck_assert_int_eq(run_hex(w_lock_info,
				 "01016d000000 01000000 "
				 "010121000000 08 7510000000000000 "
				 "14000000\"auto 139951106705808\" "
				 "01012f000000 00000000 00000000 "
				 V_ADDR_LOCAL " 05000000 "
				 "01 08000000\"internal\""), -EBADMSG);
}
END_TEST

/* ---- object map ---------------------------------------------------------- */

static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	int k;

	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
	}
	return crc;
}

START_TEST(test_crc32c)
{
	uint8_t raw[64], zero[64], buf[1000];
	size_t n = unhex("01 01 08 00 00 00 00 01 00 00 00 00 00 00", raw,
			 sizeof(raw));
	size_t i;

	ck_assert_uint_eq(rbdl_crc32c(0, raw, n), 0x82b4969a);
	memset(zero, 0, sizeof(zero));
	ck_assert_uint_eq(rbdl_crc32c(0, zero, sizeof(zero)), 0);
	ck_assert_uint_eq(rbdl_crc32c(0, NULL, 0), 0);
	ck_assert_uint_eq(rbdl_crc32c(1234, NULL, 0), 1234);
	/* The standard CRC-32C check value, with the usual inversions. */
	ck_assert_uint_eq(rbdl_crc32c(0xffffffff, "123456789", 9) ^ 0xffffffff,
			  0xe3069283);
	/* Chaining, and the table against the bitwise definition. */
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	ck_assert_uint_eq(rbdl_crc32c(rbdl_crc32c(5, buf, 333), buf + 333,
				      sizeof(buf) - 333),
			  rbdl_crc32c(5, buf, sizeof(buf)));
	for (i = 0; i < sizeof(buf); i += 37)
		ck_assert_uint_eq(rbdl_crc32c((uint32_t)i * 0x9e3779b9u, buf,
					      i),
				  crc32c_bitwise((uint32_t)i * 0x9e3779b9u,
						 buf, i));
}
END_TEST

/*
 * Encode a BitVector<2> as stored in rbd_object_map.<id> (footer with
 * CRCs) or as returned by object_map_load (empty footer).
 */
static size_t build_objmap(uint8_t *out, size_t cap, uint64_t nobjs,
			   const uint8_t *data, bool footer)
{
	uint64_t dlen = (nobjs + 3) / 4, off;
	uint8_t hdr[14];
	struct rbdl_enc e;
	size_t tok;

	rbdl_enc_init(&e, hdr, sizeof(hdr));
	tok = rbdl_enc_struct_start(&e, 1, 1);
	rbdl_enc_u64(&e, nobjs);
	rbdl_enc_struct_end(&e, tok);
	ck_assert_int_eq(rbdl_enc_len(&e), 14);

	rbdl_enc_init(&e, out, cap);
	rbdl_enc_bytes(&e, hdr, sizeof(hdr));
	rbdl_enc_raw(&e, data, (size_t)dlen);
	if (footer) {
		uint32_t nblk = (uint32_t)((dlen + 4095) / 4096);

		rbdl_enc_u32(&e, 8 + 4 * nblk);
		rbdl_enc_u32(&e, rbdl_crc32c(0, hdr, sizeof(hdr)));
		rbdl_enc_u32(&e, nblk);
		for (off = 0; off < dlen; off += 4096) {
			size_t blen = dlen - off < 4096 ? dlen - off : 4096;

			rbdl_enc_u32(&e, rbdl_crc32c(0, data + off, blen));
		}
	} else {
		rbdl_enc_u32(&e, 0);
	}
	ck_assert_int_gt(rbdl_enc_len(&e), 0);
	return (size_t)rbdl_enc_len(&e);
}

static uint8_t state_of(const uint8_t *bits, uint64_t i)
{
	return (bits[i / 4] >> ((3 - i % 4) * 2)) & 3;
}

START_TEST(test_object_map_vector)
{
	uint8_t raw[256], data[64], built[256], *bits;
	uint64_t nobjs, i;
	size_t n = unhex(V_OBJMAP_256, raw, sizeof(raw));
	size_t m;

	/* Appendix A: 256 objects, all NONEXISTENT, 98 bytes. */
	ck_assert_uint_eq(n, 98);
	ck_assert_int_eq(rbdl_decode_object_map(raw, n, &bits, &nobjs), 0);
	ck_assert_uint_eq(nobjs, 256);
	for (i = 0; i < 64; i++)
		ck_assert_uint_eq(bits[i], 0);
	free(bits);
	/* Our builder reproduces the captured object byte for byte. */
	memset(data, 0, sizeof(data));
	m = build_objmap(built, sizeof(built), 256, data, true);
	ck_assert_uint_eq(m, n);
	ck_assert_mem_eq(built, raw, n);

	/* object_map_load form: same, empty footer. */
	n = unhex("0e000000 0101080000000001000000000000 " ZERO16 ZERO16
		  ZERO16 ZERO16 " 00000000", raw, sizeof(raw));
	ck_assert_int_eq(rbdl_decode_object_map(raw, n, &bits, &nobjs), 0);
	ck_assert_uint_eq(nobjs, 256);
	free(bits);

	/* MSB-first 2-bit states: object 0 EXISTS, 1 PENDING, 2
	 * EXISTS_CLEAN, 3 NONEXISTENT, 255 EXISTS. */
	data[0] = 0x1 << 6 | 0x2 << 4 | 0x3 << 2;
	data[63] = 0x1;
	n = build_objmap(raw, sizeof(raw), 256, data, true);
	ck_assert_int_eq(rbdl_decode_object_map(raw, n, &bits, &nobjs), 0);
	ck_assert_uint_eq(state_of(bits, 0), 1);
	ck_assert_uint_eq(state_of(bits, 1), 2);
	ck_assert_uint_eq(state_of(bits, 2), 3);
	ck_assert_uint_eq(state_of(bits, 3), 0);
	ck_assert_uint_eq(state_of(bits, 254), 0);
	ck_assert_uint_eq(state_of(bits, 255), 1);
	free(bits);

	/* The data CRC is checked: flip a state, keep the old footer. */
	raw[18] ^= 0x40;
	ck_assert_int_eq(w_objmap(raw, n), -EBADMSG);
	raw[18] ^= 0x40;
	/* The header CRC is checked. */
	raw[18 + 64 + 4] ^= 1;
	ck_assert_int_eq(w_objmap(raw, n), -EBADMSG);
	raw[18 + 64 + 4] ^= 1;
	ck_assert_int_eq(w_objmap(raw, n), 0);
}
END_TEST

START_TEST(test_object_map_sizes)
{
	static uint8_t data[5000], raw[6000];
	uint8_t *bits;
	uint64_t nobjs, i;
	size_t n;

	/* 20000 objects: 5000 data bytes, two CRC blocks (4096 + 904). */
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	n = build_objmap(raw, sizeof(raw), 20000, data, true);
	ck_assert_uint_eq(n, 4 + 14 + 5000 + 4 + 16);
	ck_assert_int_eq(rbdl_decode_object_map(raw, n, &bits, &nobjs), 0);
	ck_assert_uint_eq(nobjs, 20000);
	ck_assert_mem_eq(bits, data, sizeof(data));
	free(bits);
	/* Corrupt the second block only. */
	raw[18 + 4500] ^= 0x80;
	ck_assert_int_eq(w_objmap(raw, n), -EBADMSG);
	raw[18 + 4500] ^= 0x80;
	/* Wrong CRC count. */
	raw[18 + 5000 + 8] = 1;
	ck_assert_int_eq(w_objmap(raw, n), -EBADMSG);
	raw[18 + 5000 + 8] = 2;
	ck_assert_int_eq(w_objmap(raw, n), 0);

	/* A count that is not a multiple of 4: 5 objects in 2 bytes. */
	n = build_objmap(raw, sizeof(raw), 5, data, true);
	ck_assert_uint_eq(n, 4 + 14 + 2 + 4 + 12);
	ck_assert_int_eq(rbdl_decode_object_map(raw, n, &bits, &nobjs), 0);
	ck_assert_uint_eq(nobjs, 5);
	ck_assert_uint_eq(bits[1], data[1]);
	free(bits);

	/* An empty map (an image of size 0): 0 objects, and still an
	 * array (NULL would mean "unusable" to objmap.c). */
	n = build_objmap(raw, sizeof(raw), 0, data, true);
	ck_assert_int_eq(rbdl_decode_object_map(raw, n, &bits, &nobjs), 0);
	ck_assert_uint_eq(nobjs, 0);
	ck_assert_ptr_nonnull(bits);
	free(bits);
	n = build_objmap(raw, sizeof(raw), 0, data, false);
	ck_assert_int_eq(rbdl_decode_object_map(raw, n, &bits, &nobjs), 0);
	ck_assert_uint_eq(nobjs, 0);
	ck_assert_ptr_nonnull(bits);
	free(bits);

	/* Huge object counts the buffer cannot hold. */
	ck_assert_int_eq(run_hex(w_objmap, "0e000000 010108000000 "
					   "ffffffffffffffff 00000000"),
			 -EBADMSG);
	ck_assert_int_eq(run_hex(w_objmap, "0e000000 010108000000 "
					   "0000000000000040 00000000"),
			 -EBADMSG);
	/* Header compat too new; header length past the buffer; header
	 * struct longer than its bufferlist. */
	ck_assert_int_eq(run_hex(w_objmap, "0e000000 010208000000 "
					   "0400000000000000 00 00000000"),
			 -EBADMSG);
	ck_assert_int_eq(run_hex(w_objmap, "ff000000 010108000000 "
					   "0400000000000000 00 00000000"),
			 -EBADMSG);
	ck_assert_int_eq(run_hex(w_objmap, "0d000000 010108000000 "
					   "04000000000000 00 00000000"),
			 -EBADMSG);
	/* A newer header (v2, compat 1) with an extra field. */
	ck_assert_int_eq(run_hex(w_objmap, "10000000 02010a000000 "
					   "0400000000000000 abcd 1b "
					   "00000000"), 0);
	/* Footer length past the buffer. */
	ck_assert_int_eq(run_hex(w_objmap, "0e000000 010108000000 "
					   "0400000000000000 1b 0c000000 "
					   "00000000"), -EBADMSG);
}
END_TEST

START_TEST(test_object_map_update)
{
	uint8_t buf[32];
	long n;

	/* Appendix A: <u64 start><u64 start+1> 01 00 (EXISTS, no current). */
	n = rbdl_encode_object_map_update(buf, sizeof(buf), 5, 6, 1, false,
					  0);
	expect_bytes(buf, n, "0500000000000000 0600000000000000 01 00");
	/* NONEXISTENT if currently PENDING. */
	n = rbdl_encode_object_map_update(buf, sizeof(buf), 0x1234, 0x1240,
					  0, true, 2);
	expect_bytes(buf, n, "3412000000000000 4012000000000000 00 01 02");

	ck_assert_int_eq(rbdl_encode_object_map_update(buf, sizeof(buf), 0, 1,
						       4, false, 0), -EINVAL);
	ck_assert_int_eq(rbdl_encode_object_map_update(buf, sizeof(buf), 0, 1,
						       1, true, 9), -EINVAL);
	ck_assert_int_eq(rbdl_encode_object_map_update(buf, 18, 0, 1, 1,
						       true, 0), -ERANGE);
	ck_assert_int_eq(rbdl_encode_object_map_update(buf, 18, 0, 1, 1,
						       false, 0), 18);
}
END_TEST

/* ---- notifications ------------------------------------------------------- */

START_TEST(test_notify_encode)
{
	uint8_t buf[64];
	long n, cap;

	n = rbdl_encode_notify(buf, sizeof(buf), RBDL_NOTIFY_ACQUIRED_LOCK,
			       0x1075, 0x7f48e8004990ULL, false);
	ck_assert_int_eq(n, 6 + 0x14);
	expect_bytes(buf, n, V_ACQUIRED);

	n = rbdl_encode_notify(buf, sizeof(buf), RBDL_NOTIFY_REQUEST_LOCK,
			       0x1077, 0x7f48e801dbb0ULL, false);
	ck_assert_int_eq(n, 6 + 0x15);
	expect_bytes(buf, n, V_REQUEST);

	n = rbdl_encode_notify(buf, sizeof(buf), RBDL_NOTIFY_HEADER_UPDATE,
			       0x1075, 1, true);
	expect_bytes(buf, n, V_HEADER_UPDATE);

	n = rbdl_encode_notify(buf, sizeof(buf), RBDL_NOTIFY_RELEASED_LOCK,
			       0x1075, 0x7f48e8004990ULL, true);
	expect_bytes(buf, n, "070114000000 01000000 7510000000000000 "
			     "904900e8487f0000");
	n = rbdl_encode_notify(buf, sizeof(buf), RBDL_NOTIFY_REQUEST_LOCK, 1,
			       2, true);
	expect_bytes(buf, n, "070115000000 02000000 0100000000000000 "
			     "0200000000000000 01");

	for (cap = 0; cap < 6 + 0x15; cap++)
		ck_assert_int_eq(rbdl_encode_notify(buf, (size_t)cap,
						    RBDL_NOTIFY_REQUEST_LOCK,
						    1, 2, true), -ERANGE);
	ck_assert_int_eq(rbdl_encode_notify(buf, sizeof(buf), 7, 1, 2, false),
			 -EINVAL);
	ck_assert_int_eq(rbdl_encode_notify(buf, sizeof(buf),
					    RBDL_NOTIFY_QUIESCE, 1, 2, false),
			 -EINVAL);
}
END_TEST

static struct rbdl_notify_msg notify_hex(const char *hex, int want)
{
	uint8_t raw[128], *buf;
	struct rbdl_notify_msg m;
	size_t n = unhex(hex, raw, sizeof(raw));

	buf = dup_exact(raw, n);
	ck_assert_int_eq(rbdl_decode_notify(buf, n, &m), want);
	free(buf);
	return m;
}

START_TEST(test_notify_decode)
{
	struct rbdl_notify_msg m;

	m = notify_hex(V_ACQUIRED, 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_ACQUIRED_LOCK);
	ck_assert(m.has_client);
	ck_assert_uint_eq(m.client_gid, 0x1075);
	ck_assert_uint_eq(m.client_handle, 0x7f48e8004990ULL);
	/* The cookie "auto 139951106705808" names the same watch handle. */
	ck_assert_uint_eq(m.client_handle, 139951106705808ULL);
	ck_assert(!m.force);

	m = notify_hex(V_REQUEST, 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_REQUEST_LOCK);
	ck_assert(m.has_client);
	ck_assert_uint_eq(m.client_gid, 0x1077);
	ck_assert_uint_eq(m.client_handle, 0x7f48e801dbb0ULL);
	ck_assert(!m.force);

	m = notify_hex("070115000000 02000000 0100000000000000 "
		       "0200000000000000 01", 0);
	ck_assert(m.force);

	m = notify_hex(V_HEADER_UPDATE, 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_HEADER_UPDATE);
	ck_assert(!m.has_client);

	/* Legacy empty payload. */
	m = notify_hex("", 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_HEADER_UPDATE);
	ck_assert(!m.has_client);
	ck_assert_int_eq(rbdl_decode_notify(NULL, 0, &m), 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_HEADER_UPDATE);

	/* v1: no ClientId even when bytes follow. */
	m = notify_hex("010114000000 00000000 7510000000000000 "
		       "904900e8487f0000", 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_ACQUIRED_LOCK);
	ck_assert(!m.has_client);
	m = notify_hex("010104000000 02000000", 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_REQUEST_LOCK);
	ck_assert(!m.has_client);
	/* v2 (krbd): ClientId, no force flag even if a byte follows. */
	m = notify_hex("020115000000 02000000 7510000000000000 "
		       "0100000000000000 01", 0);
	ck_assert(m.has_client);
	ck_assert_uint_eq(m.client_handle, 1);
	ck_assert(!m.force);
	/* v3+: force only if bytes remain. */
	m = notify_hex("030115000000 02000000 7510000000000000 "
		       "0100000000000000 01", 0);
	ck_assert(m.force);
	m = notify_hex("070114000000 02000000 7510000000000000 "
		       "0100000000000000", 0);
	ck_assert(m.has_client);
	ck_assert(!m.force);
	/* A future v8 with a trailing field. */
	m = notify_hex("080118000000 01000000 7510000000000000 "
		       "0100000000000000 ffffffff", 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_RELEASED_LOCK);
	ck_assert(m.has_client);

	/* Other ops: only the op. */
	m = notify_hex(V_RESIZE, 0);
	ck_assert_uint_eq(m.op, 7);
	ck_assert(!m.has_client);
	m = notify_hex(V_QUIESCE, 0);
	ck_assert_uint_eq(m.op, RBDL_NOTIFY_QUIESCE);
	ck_assert(!m.has_client);
	m = notify_hex("070108000000 63000000 abcdef01", 0);
	ck_assert_uint_eq(m.op, 99);

	/* Malformed: compat too new, ClientId cut short, no op, length
	 * past the buffer, a lone byte. */
	notify_hex("070204000000 03000000", -EBADMSG);
	notify_hex("07010c000000 00000000 7510000000000000", -EBADMSG);
	notify_hex("070100000000", -EBADMSG);
	notify_hex("070108000000 03000000", -EBADMSG);
	notify_hex("07", -EBADMSG);
}
END_TEST

START_TEST(test_notify_response)
{
	uint8_t buf[16];
	int32_t r = 7;
	long n;

	n = rbdl_encode_notify_response(buf, sizeof(buf), 0);
	expect_bytes(buf, n, V_RESPONSE_0);
	ck_assert_int_eq(rbdl_decode_notify_response(buf, (size_t)n, &r), 0);
	ck_assert_int_eq(r, 0);

	n = rbdl_encode_notify_response(buf, sizeof(buf), -EOPNOTSUPP);
	expect_bytes(buf, n, "010104000000 a1ffffff");
	ck_assert_int_eq(rbdl_decode_notify_response(buf, (size_t)n, &r), 0);
	ck_assert_int_eq(r, -EOPNOTSUPP);
	n = rbdl_encode_notify_response(buf, sizeof(buf), -EROFS);
	ck_assert_int_eq(rbdl_decode_notify_response(buf, (size_t)n, &r), 0);
	ck_assert_int_eq(r, -EROFS);
	n = rbdl_encode_notify_response(buf, sizeof(buf), INT32_MIN);
	ck_assert_int_eq(rbdl_decode_notify_response(buf, (size_t)n, &r), 0);
	ck_assert_int_eq(r, INT32_MIN);

	ck_assert_int_eq(rbdl_encode_notify_response(buf, 9, 0), -ERANGE);
	ck_assert_int_eq(run_hex(w_response, ""), -EBADMSG);
	ck_assert_int_eq(run_hex(w_response, "010204000000 00000000"),
			 -EBADMSG);
	/* A newer ResponseMessage with more fields is fine. */
	ck_assert_int_eq(run_hex(w_response, "020108000000 00000000 01020304"),
			 0);
}
END_TEST

struct walk_rec {
	unsigned int n;
	uint64_t gid[4], cookie[4];
	bool timed_out[4];
	uint32_t len[4];
	int32_t result[4];
	int stop_at;
};

static int rec_cb(uint64_t gid, uint64_t cookie, bool timed_out,
		  const uint8_t *payload, uint32_t len, void *arg)
{
	struct walk_rec *w = arg;

	ck_assert_uint_lt(w->n, 4);
	w->gid[w->n] = gid;
	w->cookie[w->n] = cookie;
	w->timed_out[w->n] = timed_out;
	w->len[w->n] = len;
	w->result[w->n] = 12345;
	if (timed_out)
		ck_assert_ptr_null(payload);
	else if (len)
		ck_assert_int_eq(rbdl_decode_notify_response(
					 payload, len, &w->result[w->n]), 0);
	w->n++;
	return (int)w->n == w->stop_at ? -EINTR : 0;
}

static int walk_hex(const char *hex, struct walk_rec *w)
{
	uint8_t raw[256], *buf;
	size_t n = unhex(hex, raw, sizeof(raw));
	int r;

	buf = dup_exact(raw, n);
	r = rbdl_walk_notify_reply(buf, n, rec_cb, w);
	free(buf);
	return r;
}

#define V_REPLY_MIXED                                                     \
	"02000000 "                                                       \
	"8910000000000000 a03bbfa483550000 00000000 "                     \
	"7510000000000000 904900e8487f0000 0a000000 " V_RESPONSE_0 " "     \
	"01000000 7710000000000000 b0db01e8487f0000"

START_TEST(test_notify_reply_walk)
{
	struct walk_rec w;

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(walk_hex(V_NOTIFY_REPLY, &w), 0);
	ck_assert_uint_eq(w.n, 1);
	ck_assert_uint_eq(w.gid[0], 0x1089);
	ck_assert_uint_eq(w.cookie[0], 0x5583a4bf3ba0ULL);
	ck_assert(!w.timed_out[0]);
	ck_assert_uint_eq(w.len[0], 0);

	/* Two acks (one the owner's ResponseMessage) and one timeout. */
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(walk_hex(V_REPLY_MIXED, &w), 0);
	ck_assert_uint_eq(w.n, 3);
	ck_assert_uint_eq(w.len[0], 0);
	ck_assert_uint_eq(w.gid[1], 0x1075);
	ck_assert_uint_eq(w.len[1], 10);
	ck_assert_int_eq(w.result[1], 0);
	ck_assert(w.timed_out[2]);
	ck_assert_uint_eq(w.gid[2], 0x1077);
	ck_assert_uint_eq(w.cookie[2], 0x7f48e801dbb0ULL);

	/* A non-zero callback result stops the walk and is returned. */
	memset(&w, 0, sizeof(w));
	w.stop_at = 2;
	ck_assert_int_eq(walk_hex(V_REPLY_MIXED, &w), -EINTR);
	ck_assert_uint_eq(w.n, 2);

	/* Nothing to walk, and validation without a callback. */
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(walk_hex("00000000 00000000", &w), 0);
	ck_assert_uint_eq(w.n, 0);
	ck_assert_int_eq(rbdl_walk_notify_reply("\0\0\0\0\0\0\0", 8, NULL,
						NULL), 0);

	/* Malformed: huge counts, payload past the end; no callbacks. */
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(walk_hex("ffffffff 00000000", &w), -EBADMSG);
	ck_assert_int_eq(walk_hex("00000000 ffffffff", &w), -EBADMSG);
	ck_assert_int_eq(walk_hex("01000000 8910000000000000 "
				  "a03bbfa483550000 ffffff0f 00000000", &w),
			 -EBADMSG);
	ck_assert_uint_eq(w.n, 0);
}
END_TEST

/* ---- malformed input, table-driven --------------------------------------- */

struct vec {
	const char *name;
	const char *hex;
	dec_fn fn;
	long ok_prefix;	/* a proper prefix that decodes fine, or -1 */
};

static const struct vec vectors[] = {
	{ "get_size", V_GET_SIZE, w_get_size, -1 },
	/* Pre-Kraken OSDs send features without incompatible ones. */
	{ "get_features rw", V_FEATURES_RW, w_features, 8 },
	{ "get_features ro", V_FEATURES_RO, w_features, 8 },
	{ "get_flags", "0300000000000000", w_u64, -1 },
	{ "get_stripe_unit_count", "0000010000000000 0400000000000000",
	  w_stripe, -1 },
	{ "get_id", "0c000000\"10116cf22ad0\"", w_string, -1 },
	{ "get_snapcontext", V_SNAPC, w_snapc, -1 },
	{ "parent_get none", V_PARENT_NONE, w_parent, -1 },
	{ "parent_get clone", V_PARENT_CLONE, w_parent, -1 },
	{ "parent_overlap_get", V_OVERLAP, w_overlap, -1 },
	{ "migration_get", V_MIGRATION_DST, w_migration, -1 },
	{ "parent_overlap_get none", "00", w_overlap, -1 },
	{ "snapshot_get", V_SNAPSHOT_GET, w_snapshot, -1 },
	{ "lock.get_info held", V_GET_INFO_HELD, w_lock_info, -1 },
	{ "objmap lock.get_info", V_OBJMAP_GET_INFO, w_lock_info, -1 },
	{ "object map", V_OBJMAP_256, w_objmap, -1 },
	/* An empty notify is a legacy HEADER_UPDATE. */
	{ "ACQUIRED_LOCK", V_ACQUIRED, w_notify, 0 },
	{ "REQUEST_LOCK", V_REQUEST, w_notify, 0 },
	{ "HEADER_UPDATE", V_HEADER_UPDATE, w_notify, 0 },
	{ "RESIZE", V_RESIZE, w_notify, 0 },
	{ "QUIESCE", V_QUIESCE, w_notify, 0 },
	{ "ResponseMessage", V_RESPONSE_0, w_response, -1 },
	{ "notify reply", V_NOTIFY_REPLY, w_walk, -1 },
	{ "notify reply mixed", V_REPLY_MIXED, w_walk, -1 },
};

#define NVECTORS (sizeof(vectors) / sizeof(vectors[0]))

START_TEST(test_vectors_decode)
{
	const struct vec *v = &vectors[_i];

	ck_assert_msg(run_hex(v->fn, v->hex) == 0, "%s", v->name);
}
END_TEST

/* Every proper prefix of a valid reply is -EBADMSG (and does not crash). */
START_TEST(test_truncation)
{
	const struct vec *v = &vectors[_i];
	uint8_t raw[1024], *c;
	size_t n = unhex(v->hex, raw, sizeof(raw)), k;
	int r;

	for (k = 0; k < n; k++) {
		c = dup_exact(raw, k);
		r = v->fn(c, k);
		free(c);
		if ((long)k == v->ok_prefix)
			ck_assert_msg(r == 0, "%s: prefix %zu: %d", v->name, k,
				      r);
		else
			ck_assert_msg(r == -EBADMSG, "%s: prefix %zu: %d",
				      v->name, k, r);
	}
}
END_TEST

/* Random corruption never crashes and only yields 0 or -EBADMSG. */
START_TEST(test_fuzz)
{
	const struct vec *v = &vectors[_i];
	uint8_t raw[1024], *c;
	size_t n = unhex(v->hex, raw, sizeof(raw));
	uint64_t x = 0x243f6a8885a308d3ULL ^ (uint64_t)_i;
	unsigned int iter, k, flips;
	size_t len;
	int r;

	for (iter = 0; iter < 3000; iter++) {
		c = dup_exact(raw, n);
		len = n;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		flips = 1 + (unsigned int)(x % 4);
		for (k = 0; k < flips && n; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			switch ((x >> 32) % 3) {
			case 0:		/* any byte */
				c[x % n] = (uint8_t)(x >> 24);
				break;
			case 1:		/* bit flip */
				c[x % n] ^= (uint8_t)(1u << ((x >> 20) % 8));
				break;
			default:	/* a length-like extreme */
				c[x % n] = (x >> 40) & 1 ? 0xff : 0x00;
				break;
			}
		}
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (x % 4 == 0)
			len = (size_t)((x >> 16) % (n + 1));
		r = v->fn(c, len);
		free(c);
		ck_assert_msg(r == 0 || r == -EBADMSG, "%s: iter %u: %d",
			      v->name, iter, r);
	}
}
END_TEST


/* ---- image creation, removal and listing -------------------------------- */

START_TEST(test_create_encoders)
{
	uint8_t b[256];
	long n;

	/* create: u64 size, u8 order, u64 features, string, s64 pool */
	n = rbdl_encode_create_image(b, sizeof(b), 1ULL << 30, 22, 0x3d,
				     "rbd_data.abc", -1);
	expect_bytes(b, n, "0000004000000000 16 3d00000000000000 "
			   "0c000000\"rbd_data.abc\" ffffffffffffffff");
	n = rbdl_encode_create_image(b, sizeof(b), 0, 12, 0x81,
				     "rbd_data.3.x", 5);
	expect_bytes(b, n, "0000000000000000 0c 8100000000000000 "
			   "0c000000\"rbd_data.3.x\" 0500000000000000");
	n = rbdl_encode_dir_entry(b, sizeof(b), "img", "10ab");
	expect_bytes(b, n, "03000000\"img\" 04000000\"10ab\"");
	n = rbdl_encode_string(b, sizeof(b), "10ab");
	expect_bytes(b, n, "04000000\"10ab\"");
	n = rbdl_encode_string(b, sizeof(b), "");
	expect_bytes(b, n, "00000000");
	n = rbdl_encode_stripe(b, sizeof(b), 65536, 8);
	expect_bytes(b, n, "0000010000000000 0800000000000000");
	n = rbdl_encode_object_map_resize(b, sizeof(b), 256, 0);
	expect_bytes(b, n, "0001000000000000 00");
	ck_assert_int_eq(rbdl_encode_object_map_resize(b, sizeof(b), 1, 4),
			 -EINVAL);
	n = rbdl_encode_list_start(b, sizeof(b), "", 1024);
	expect_bytes(b, n, "00000000 0004000000000000");
	n = rbdl_encode_list_start(b, sizeof(b), "conf_", 1024);
	expect_bytes(b, n, "05000000\"conf_\" 0004000000000000");
	/* too small a buffer */
	ck_assert_int_eq(rbdl_encode_create_image(b, 20, 1, 22, 1, "p", -1),
			 -ERANGE);
	ck_assert_int_eq(rbdl_encode_dir_entry(b, 8, "img", "10ab"), -ERANGE);
}
END_TEST

#define V_DIR_LIST                                                        \
	"02000000 01000000\"a\" 0c000000\"1064e5b4d6e0\" "                 \
	"03000000\"img\" 04000000\"10ab\""
#define V_TRASH_LIST                                                      \
	"02000000 04000000\"1001\" 02011a000000 03 04000000\"gone\" "      \
	"0000000000000000 0000000000000000 00 "                           \
	"04000000\"1002\" 010118000000 00 03000000\"usr\" "                \
	"0000000000000000 0000000000000000"
#define V_GROUP_NONE "01010c000000 ffffffffffffffff 00000000"
#define V_GROUP_SET "01010e000000 0200000000000000 02000000\"g1\""

START_TEST(test_dir_list)
{
	uint8_t b[256];
	size_t n = unhex(V_DIR_LIST, b, sizeof(b));
	uint8_t *c = dup_exact(b, n);
	struct rbdl_dir_entry *v;
	uint32_t cnt;

	ck_assert_int_eq(rbdl_decode_dir_list(c, n, &v, &cnt), 0);
	ck_assert_uint_eq(cnt, 2);
	ck_assert_str_eq(v[0].name, "a");
	ck_assert_str_eq(v[0].id, "1064e5b4d6e0");
	ck_assert_str_eq(v[1].name, "img");
	ck_assert_str_eq(v[1].id, "10ab");
	rbdl_dir_entries_free(v, cnt);
	free(c);

	/* the empty map */
	c = dup_exact("\0\0\0\0", 4);
	ck_assert_int_eq(rbdl_decode_dir_list(c, 4, &v, &cnt), 0);
	ck_assert_uint_eq(cnt, 0);
	ck_assert_ptr_null(v);
	free(c);

	/* an absurd count is refused, not allocated */
	c = dup_exact("\xff\xff\xff\x7f", 4);
	ck_assert_int_eq(rbdl_decode_dir_list(c, 4, &v, &cnt), -EBADMSG);
	free(c);

	/* every proper prefix fails cleanly */
	for (size_t k = 0; k < n; k++) {
		c = dup_exact(b, k);
		ck_assert_int_eq(rbdl_decode_dir_list(c, k, &v, &cnt),
				 -EBADMSG);
		free(c);
	}
}
END_TEST

START_TEST(test_trash_list)
{
	uint8_t b[256];
	size_t n = unhex(V_TRASH_LIST, b, sizeof(b));
	uint8_t *c = dup_exact(b, n);
	struct rbdl_dir_entry *v;
	uint32_t cnt;

	ck_assert_int_eq(rbdl_decode_trash_list(c, n, &v, &cnt), 0);
	ck_assert_uint_eq(cnt, 2);
	ck_assert_str_eq(v[0].id, "1001");
	ck_assert_str_eq(v[0].name, "gone");
	ck_assert_uint_eq(v[0].source, 3);
	/* a v1 spec (no state byte) */
	ck_assert_str_eq(v[1].id, "1002");
	ck_assert_str_eq(v[1].name, "usr");
	ck_assert_uint_eq(v[1].source, 0);
	rbdl_dir_entries_free(v, cnt);
	free(c);
	for (size_t k = 0; k < n; k++) {
		c = dup_exact(b, k);
		ck_assert_int_eq(rbdl_decode_trash_list(c, k, &v, &cnt),
				 -EBADMSG);
		free(c);
	}
}
END_TEST

START_TEST(test_group_spec)
{
	uint8_t b[64];
	size_t n;
	bool in;

	n = unhex(V_GROUP_NONE, b, sizeof(b));
	in = true;
	ck_assert_int_eq(rbdl_decode_group_spec(b, n, &in), 0);
	ck_assert(!in);
	n = unhex(V_GROUP_SET, b, sizeof(b));
	ck_assert_int_eq(rbdl_decode_group_spec(b, n, &in), 0);
	ck_assert(in);
	for (size_t k = 0; k < n; k++) {
		uint8_t *c = dup_exact(b, k);

		ck_assert_int_eq(rbdl_decode_group_spec(c, k, &in), -EBADMSG);
		free(c);
	}
}
END_TEST

static Suite *codec_suite(void)
{
	Suite *s = suite_create("Codec");
	TCase *tc = tcase_create("core");
	TCase *tm = tcase_create("malformed");

	tcase_add_test(tc, test_enc_primitives);
	tcase_add_test(tc, test_dec_primitives);
	tcase_add_test(tc, test_get_size);
	tcase_add_test(tc, test_get_features);
	tcase_add_test(tc, test_scalars_and_strings);
	tcase_add_test(tc, test_snapcontext);
	tcase_add_test(tc, test_parent_get);
	tcase_add_test(tc, test_parent_overlap);
	tcase_add_test(tc, test_snapshot_get);
	tcase_add_test(tc, test_child_specs);
	tcase_add_test(tc, test_lock_encoders);
	tcase_add_test(tc, test_lock_info_held);
	tcase_add_test(tc, test_lock_info_objmap);
	tcase_add_test(tc, test_lock_info_addr_forms);
	tcase_add_test(tc, test_lock_info_malformed);
	tcase_add_test(tc, test_crc32c);
	tcase_add_test(tc, test_object_map_vector);
	tcase_add_test(tc, test_object_map_sizes);
	tcase_add_test(tc, test_object_map_update);
	tcase_add_test(tc, test_notify_encode);
	tcase_add_test(tc, test_notify_decode);
	tcase_add_test(tc, test_notify_response);
	tcase_add_test(tc, test_notify_reply_walk);
	tcase_add_test(tc, test_create_encoders);
	tcase_add_test(tc, test_dir_list);
	tcase_add_test(tc, test_trash_list);
	tcase_add_test(tc, test_group_spec);
	tcase_add_test(tc, test_migration_get);
	suite_add_tcase(s, tc);

	tcase_add_loop_test(tm, test_vectors_decode, 0, (int)NVECTORS);
	tcase_add_loop_test(tm, test_truncation, 0, (int)NVECTORS);
	tcase_add_loop_test(tm, test_fuzz, 0, (int)NVECTORS);
	suite_add_tcase(s, tm);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(codec_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
