/*
 * codec.c - Ceph wire encoding for cls "rbd", cls "lock" and RBD header
 * notifications.
 *
 * Role: the only place that knows byte layouts.  Encoders append to a
 * caller buffer through struct rbdl_enc; decoders read a reply through
 * struct rbdl_dec, whose every read is bounds-checked with the
 * overflow-safe test `n <= end - p`.  The first failed read latches
 * -EBADMSG in the decoder and all later reads return zeros, so a decoder
 * function reads its fields straight through and checks d->err once.
 * Versioned structs are entered with enter()/leave(), which also narrow
 * the decoder to the struct body, so a field can never be taken from the
 * bytes that follow the struct.
 *
 * Threading and ownership: every function is reentrant; there is no
 * global state (the crc32c table is a constant).  Encoders write only into
 * the caller's buffer.  Decoders that return strings or arrays malloc()
 * them; on success the caller owns them and frees them with the matching
 * *_free() function; on failure nothing is allocated and the output struct
 * is left zeroed, so calling *_free() on it is harmless.  Allocating
 * decoders are for the control path (one malloc per string or array);
 * rbdl_walk_notify_reply() and the fixed-size decoders allocate nothing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "codec.h"

/* ---- byte order helpers (host-independent) ----------------------------- */

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/* Two's-complement reinterpretation without implementation-defined casts. */
static inline int32_t to_s32(uint32_t v)
{
	return v <= INT32_MAX ? (int32_t)v : -(int32_t)(~v) - 1;
}

static inline int64_t to_s64(uint64_t v)
{
	return v <= INT64_MAX ? (int64_t)v : -(int64_t)(~v) - 1;
}

/* ---- encoder ------------------------------------------------------------ */

void rbdl_enc_init(struct rbdl_enc *e, void *buf, size_t cap)
{
	e->buf = buf;
	e->len = 0;
	e->cap = buf ? cap : 0;
	e->err = 0;
}

/* Reserve n > 0 bytes; NULL (and err latched) if they do not fit. */
static uint8_t *enc_reserve(struct rbdl_enc *e, size_t n)
{
	uint8_t *p;

	if (e->err)
		return NULL;
	if (n > e->cap - e->len) {
		e->err = -ERANGE;
		return NULL;
	}
	p = e->buf + e->len;
	e->len += n;
	return p;
}

void rbdl_enc_u8(struct rbdl_enc *e, uint8_t v)
{
	uint8_t *p = enc_reserve(e, 1);

	if (p)
		*p = v;
}

void rbdl_enc_u32(struct rbdl_enc *e, uint32_t v)
{
	uint8_t *p = enc_reserve(e, 4);

	if (p)
		put_le32(p, v);
}

void rbdl_enc_u64(struct rbdl_enc *e, uint64_t v)
{
	uint8_t *p = enc_reserve(e, 8);

	if (p)
		put_le64(p, v);
}

void rbdl_enc_raw(struct rbdl_enc *e, const void *src, size_t n)
{
	uint8_t *p;

	if (n == 0 || e->err)
		return;
	if (!src) {
		e->err = -EINVAL;
		return;
	}
	p = enc_reserve(e, n);
	if (p)
		memcpy(p, src, n);
}

void rbdl_enc_bytes(struct rbdl_enc *e, const void *p, size_t n)
{
	if (e->err)
		return;
	if (n > UINT32_MAX) {
		e->err = -ERANGE;
		return;
	}
	rbdl_enc_u32(e, (uint32_t)n);
	rbdl_enc_raw(e, p, n);
}

void rbdl_enc_str(struct rbdl_enc *e, const char *s)
{
	if (!s)
		s = "";
	rbdl_enc_bytes(e, s, strlen(s));
}

size_t rbdl_enc_struct_start(struct rbdl_enc *e, uint8_t v, uint8_t compat)
{
	size_t token;

	rbdl_enc_u8(e, v);
	rbdl_enc_u8(e, compat);
	token = e->len;		/* where the length goes */
	rbdl_enc_u32(e, 0);
	return token;
}

void rbdl_enc_struct_end(struct rbdl_enc *e, size_t token)
{
	size_t body;

	if (e->err)
		return;
	if (token > e->len || e->len - token < 4) {
		e->err = -EINVAL;	/* not a token of this encoder */
		return;
	}
	body = e->len - token - 4;
	if (body > UINT32_MAX) {
		e->err = -ERANGE;
		return;
	}
	put_le32(e->buf + token, (uint32_t)body);
}

/* ---- decoder ------------------------------------------------------------ */

void rbdl_dec_init(struct rbdl_dec *d, const void *buf, size_t len)
{
	d->p = buf;
	d->end = buf ? d->p + len : d->p;
	d->err = 0;
}

static inline size_t dec_left(const struct rbdl_dec *d)
{
	return d->err || d->p > d->end ? 0 : (size_t)(d->end - d->p);
}

/* Take n bytes; NULL (and -EBADMSG latched) if fewer remain. */
static const uint8_t *dec_take(struct rbdl_dec *d, size_t n)
{
	const uint8_t *p;

	if (d->err)
		return NULL;
	if (d->p > d->end || n > (size_t)(d->end - d->p)) {
		d->err = -EBADMSG;
		return NULL;
	}
	p = d->p;
	if (n)
		d->p += n;
	return p;
}

uint8_t rbdl_dec_u8(struct rbdl_dec *d)
{
	const uint8_t *p = dec_take(d, 1);

	return p ? *p : 0;
}

uint32_t rbdl_dec_u32(struct rbdl_dec *d)
{
	const uint8_t *p = dec_take(d, 4);

	return p ? get_le32(p) : 0;
}

uint64_t rbdl_dec_u64(struct rbdl_dec *d)
{
	const uint8_t *p = dec_take(d, 8);

	return p ? get_le64(p) : 0;
}

void rbdl_dec_skip(struct rbdl_dec *d, size_t n)
{
	dec_take(d, n);
}

const uint8_t *rbdl_dec_bytes(struct rbdl_dec *d, uint32_t *len)
{
	uint32_t n = rbdl_dec_u32(d);
	const uint8_t *p = dec_take(d, n);

	*len = p ? n : 0;
	return p;
}

char *rbdl_dec_strdup(struct rbdl_dec *d)
{
	uint32_t n;
	const uint8_t *s = rbdl_dec_bytes(d, &n);
	char *r;

	if (!s)
		return NULL;
	r = malloc((size_t)n + 1);
	if (!r) {
		d->err = -ENOMEM;
		return NULL;
	}
	memcpy(r, s, n);
	r[n] = '\0';
	return r;
}

uint8_t rbdl_dec_struct_start(struct rbdl_dec *d, uint8_t max_compat,
			      const uint8_t **struct_end)
{
	uint8_t v = rbdl_dec_u8(d);
	uint8_t compat = rbdl_dec_u8(d);
	uint32_t len = rbdl_dec_u32(d);
	const uint8_t *body = d->p;

	*struct_end = d->p;
	if (d->err)
		return 0;
	if (compat > max_compat) {
		/* written by a newer, incompatible peer */
		d->err = -EBADMSG;
		return 0;
	}
	if (!dec_take(d, len))
		return 0;
	d->p = body;
	*struct_end = body + len;
	return v;
}

void rbdl_dec_struct_end(struct rbdl_dec *d, const uint8_t *struct_end)
{
	if (d->err)
		return;
	/* Reading past the struct means its length field lied. */
	if (!struct_end || struct_end < d->p || struct_end > d->end) {
		d->err = -EBADMSG;
		return;
	}
	d->p = struct_end;	/* skip fields newer than we know */
}

/*
 * Enter a versioned struct and narrow the decoder to its body, so nested
 * reads fail at the struct boundary; leave() restores the outer end and
 * skips unknown trailing fields.  *outer must be passed to leave() even
 * after an error.
 */
static uint8_t enter(struct rbdl_dec *d, uint8_t max_compat,
		     const uint8_t **outer)
{
	const uint8_t *se;
	uint8_t v = rbdl_dec_struct_start(d, max_compat, &se);

	*outer = d->end;
	if (!d->err)
		d->end = se;
	return v;
}

static void leave(struct rbdl_dec *d, const uint8_t *outer)
{
	const uint8_t *se = d->end;

	d->end = outer;
	rbdl_dec_struct_end(d, se);
}

/* ---- cls "rbd" replies -------------------------------------------------- */

int rbdl_decode_get_size(const void *buf, size_t len, uint8_t *order,
			 uint64_t *size)
{
	struct rbdl_dec d;
	uint8_t o;
	uint64_t s;

	rbdl_dec_init(&d, buf, len);
	o = rbdl_dec_u8(&d);
	s = rbdl_dec_u64(&d);
	if (d.err)
		return d.err;
	*order = o;
	*size = s;
	return 0;
}

int rbdl_decode_get_features(const void *buf, size_t len, uint64_t *features,
			     uint64_t *incompat)
{
	struct rbdl_dec d;
	uint64_t f, i = 0;

	rbdl_dec_init(&d, buf, len);
	f = rbdl_dec_u64(&d);
	/* Tolerate a reply that carries the features only (codec.h). */
	if (dec_left(&d) > 0)
		i = rbdl_dec_u64(&d);
	if (d.err)
		return d.err;
	*features = f;
	*incompat = i;
	return 0;
}

int rbdl_decode_u64(const void *buf, size_t len, uint64_t *v)
{
	struct rbdl_dec d;
	uint64_t x;

	rbdl_dec_init(&d, buf, len);
	x = rbdl_dec_u64(&d);
	if (d.err)
		return d.err;
	*v = x;
	return 0;
}

int rbdl_decode_stripe(const void *buf, size_t len, uint64_t *su, uint64_t *sc)
{
	struct rbdl_dec d;
	uint64_t a, b;

	rbdl_dec_init(&d, buf, len);
	a = rbdl_dec_u64(&d);
	b = rbdl_dec_u64(&d);
	if (d.err)
		return d.err;
	*su = a;
	*sc = b;
	return 0;
}

int rbdl_decode_string(const void *buf, size_t len, char **out)
{
	struct rbdl_dec d;
	char *s;

	*out = NULL;
	rbdl_dec_init(&d, buf, len);
	s = rbdl_dec_strdup(&d);
	if (d.err)
		return d.err;
	*out = s;
	return 0;
}

int rbdl_decode_snapcontext(const void *buf, size_t len, uint64_t *seq,
			    uint64_t **snaps, uint32_t *n)
{
	struct rbdl_dec d;
	uint64_t s, *v = NULL;
	uint32_t cnt, i;

	*snaps = NULL;
	*n = 0;
	rbdl_dec_init(&d, buf, len);
	s = rbdl_dec_u64(&d);
	cnt = rbdl_dec_u32(&d);
	if (d.err)
		return d.err;
	/* Check the count against the bytes before trusting it to malloc. */
	if (cnt > dec_left(&d) / 8)
		return -EBADMSG;
	if (cnt) {
		v = malloc((size_t)cnt * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (i = 0; i < cnt; i++)
			v[i] = rbdl_dec_u64(&d);
	}
	*seq = s;
	*snaps = v;
	*n = cnt;
	return 0;
}

int rbdl_decode_parent_spec(const void *buf, size_t len,
			    struct rbdl_parent_spec *out)
{
	struct rbdl_dec d;
	const uint8_t *outer;
	struct rbdl_parent_spec ps;

	memset(out, 0, sizeof(*out));
	memset(&ps, 0, sizeof(ps));
	rbdl_dec_init(&d, buf, len);
	enter(&d, 1, &outer);
	ps.pool_id = to_s64(rbdl_dec_u64(&d));
	ps.pool_namespace = rbdl_dec_strdup(&d);
	ps.image_id = rbdl_dec_strdup(&d);
	ps.snap_id = rbdl_dec_u64(&d);
	leave(&d, outer);
	if (d.err) {
		rbdl_parent_spec_free(&ps);
		return d.err;
	}
	*out = ps;
	return 0;
}

void rbdl_parent_spec_free(struct rbdl_parent_spec *p)
{
	free(p->pool_namespace);
	free(p->image_id);
	p->pool_namespace = NULL;
	p->image_id = NULL;
}

int rbdl_decode_parent_overlap(const void *buf, size_t len, bool *has,
			       uint64_t *overlap)
{
	struct rbdl_dec d;
	bool h;
	uint64_t v = 0;

	rbdl_dec_init(&d, buf, len);
	h = rbdl_dec_u8(&d) != 0;
	if (h)
		v = rbdl_dec_u64(&d);
	if (d.err)
		return d.err;
	*has = h;
	*overlap = v;
	return 0;
}

int rbdl_decode_migration_spec(const void *buf, size_t len,
			       struct rbdl_migration_spec *out)
{
	struct rbdl_dec d;
	const uint8_t *outer;
	struct rbdl_migration_spec m;
	uint8_t v;
	uint32_t n, slen;

	memset(out, 0, sizeof(*out));
	memset(&m, 0, sizeof(m));
	rbdl_dec_init(&d, buf, len);
	v = enter(&d, 3, &outer);
	m.header_type = rbdl_dec_u8(&d);
	m.pool_id = to_s64(rbdl_dec_u64(&d));
	m.pool_namespace = rbdl_dec_strdup(&d);
	m.image_name = rbdl_dec_strdup(&d);
	m.image_id = rbdl_dec_strdup(&d);
	n = rbdl_dec_u32(&d);
	/* Each entry takes 16 bytes: a count beyond the reply is malformed
	 * (never allocate for it). */
	if (!d.err && (size_t)(d.end - d.p) / 16 < n)
		d.err = -EBADMSG;
	if (!d.err && n) {
		m.snap_seqs = malloc(n * sizeof(*m.snap_seqs));
		if (!m.snap_seqs)
			d.err = -ENOMEM;
	}
	for (uint32_t i = 0; i < n && !d.err; i++) {
		m.snap_seqs[i][0] = rbdl_dec_u64(&d);
		m.snap_seqs[i][1] = rbdl_dec_u64(&d);
	}
	m.nsnap_seqs = d.err ? 0 : n;
	m.overlap = rbdl_dec_u64(&d);
	rbdl_dec_u8(&d);		/* flatten */
	rbdl_dec_u8(&d);		/* mirroring */
	m.state = rbdl_dec_u8(&d);
	rbdl_dec_bytes(&d, &slen);	/* state_description */
	if (v >= 2)
		rbdl_dec_u8(&d);	/* mirror_image_mode */
	if (v >= 3) {
		rbdl_dec_bytes(&d, &slen);	/* source_spec */
		m.has_source_spec = slen != 0;
	}
	leave(&d, outer);
	if (!d.err && (!m.pool_namespace || !m.image_name || !m.image_id))
		d.err = -ENOMEM;
	if (d.err) {
		rbdl_migration_spec_free(&m);
		return d.err;
	}
	*out = m;
	return 0;
}

void rbdl_migration_spec_free(struct rbdl_migration_spec *m)
{
	free(m->pool_namespace);
	free(m->image_name);
	free(m->image_id);
	free(m->snap_seqs);
	memset(m, 0, sizeof(*m));
}

int rbdl_decode_snapshot_info(const void *buf, size_t len,
			      struct rbdl_snap_info *out)
{
	struct rbdl_dec d;
	const uint8_t *outer, *ns_outer;
	struct rbdl_snap_info si;

	memset(out, 0, sizeof(*out));
	memset(&si, 0, sizeof(si));
	rbdl_dec_init(&d, buf, len);
	enter(&d, 1, &outer);
	si.id = rbdl_dec_u64(&d);
	/* SnapshotNamespace: u32 type + a body we skip (unknown types too). */
	enter(&d, 1, &ns_outer);
	si.ns_type = rbdl_dec_u32(&d);
	leave(&d, ns_outer);
	si.name = rbdl_dec_strdup(&d);
	si.image_size = rbdl_dec_u64(&d);
	si.ts_sec = rbdl_dec_u32(&d);
	si.ts_nsec = rbdl_dec_u32(&d);
	si.child_count = rbdl_dec_u32(&d);
	leave(&d, outer);
	if (d.err) {
		rbdl_snap_info_free(&si);
		return d.err;
	}
	*out = si;
	return 0;
}

void rbdl_snap_info_free(struct rbdl_snap_info *s)
{
	free(s->name);
	s->name = NULL;
}

/* ---- cls "lock" inputs -------------------------------------------------- */

/* Each cls_lock op is ENCODE_START(1, 1) around its fields. */
static size_t lock_op_begin(struct rbdl_enc *e, void *buf, size_t cap)
{
	rbdl_enc_init(e, buf, cap);
	return rbdl_enc_struct_start(e, 1, 1);
}

static long lock_op_end(struct rbdl_enc *e, size_t token)
{
	rbdl_enc_struct_end(e, token);
	return rbdl_enc_len(e);
}

long rbdl_encode_lock_lock(void *buf, size_t cap, const char *name,
			   uint8_t type, const char *cookie, const char *tag,
			   const char *desc, uint32_t dur_sec,
			   uint32_t dur_nsec, uint8_t flags)
{
	struct rbdl_enc e;
	size_t tok = lock_op_begin(&e, buf, cap);

	rbdl_enc_str(&e, name);
	rbdl_enc_u8(&e, type);
	rbdl_enc_str(&e, cookie);
	rbdl_enc_str(&e, tag);
	rbdl_enc_str(&e, desc);
	rbdl_enc_u32(&e, dur_sec);	/* utime_t duration, 0 = forever */
	rbdl_enc_u32(&e, dur_nsec);
	rbdl_enc_u8(&e, flags);
	return lock_op_end(&e, tok);
}

long rbdl_encode_lock_unlock(void *buf, size_t cap, const char *name,
			     const char *cookie)
{
	struct rbdl_enc e;
	size_t tok = lock_op_begin(&e, buf, cap);

	rbdl_enc_str(&e, name);
	rbdl_enc_str(&e, cookie);
	return lock_op_end(&e, tok);
}

long rbdl_encode_lock_break(void *buf, size_t cap, const char *name,
			    uint8_t entity_type, int64_t entity_num,
			    const char *cookie)
{
	struct rbdl_enc e;
	size_t tok = lock_op_begin(&e, buf, cap);

	rbdl_enc_str(&e, name);
	rbdl_enc_u8(&e, entity_type);	/* entity_name_t */
	rbdl_enc_u64(&e, (uint64_t)entity_num);
	rbdl_enc_str(&e, cookie);
	return lock_op_end(&e, tok);
}

long rbdl_encode_lock_get_info(void *buf, size_t cap, const char *name)
{
	struct rbdl_enc e;
	size_t tok = lock_op_begin(&e, buf, cap);

	rbdl_enc_str(&e, name);
	return lock_op_end(&e, tok);
}

long rbdl_encode_lock_assert(void *buf, size_t cap, const char *name,
			     uint8_t type, const char *cookie,
			     const char *tag)
{
	struct rbdl_enc e;
	size_t tok = lock_op_begin(&e, buf, cap);

	rbdl_enc_str(&e, name);
	rbdl_enc_u8(&e, type);
	rbdl_enc_str(&e, cookie);
	rbdl_enc_str(&e, tag);
	return lock_op_end(&e, tok);
}

long rbdl_encode_lock_set_cookie(void *buf, size_t cap, const char *name,
				 uint8_t type, const char *cookie,
				 const char *tag, const char *new_cookie)
{
	struct rbdl_enc e;
	size_t tok = lock_op_begin(&e, buf, cap);

	rbdl_enc_str(&e, name);
	rbdl_enc_u8(&e, type);
	rbdl_enc_str(&e, cookie);
	rbdl_enc_str(&e, tag);
	rbdl_enc_str(&e, new_cookie);
	return lock_op_end(&e, tok);
}

/* ---- cls "lock" get_info reply ------------------------------------------ */

/* Address families as they appear on the wire (Linux numbering). */
#define WIRE_AF_INET 2
#define WIRE_AF_INET6 10
#define ADDR_TYPE_MSGR2 2
#define SOCKADDR_STORAGE_LEN 128

/*
 * Smallest possible encoding of one map entry, used to reject a locker
 * count the reply cannot hold before allocating for it:
 * locker_id_t = 6 (struct header) + 1 + 8 (entity_name_t) + 4 (cookie);
 * locker_info_t = 6 + 8 (expiration) + 19 (new-form entity_addr_t with
 * no sockaddr: marker 1, header 6, type, nonce, length) + 4 (description).
 */
#define MIN_LOCKER_WIRE (19 + 37)

/*
 * Render an address the way blocklisting wants it: "ip:port/nonce",
 * "[ip6]:port/nonce", with "v2:" in front for msgr2 addresses.  sa is a
 * zero-filled sockaddr image whose family has already been decoded (port
 * at 2, IPv4 address at 4, IPv6 address at 8, as in sockaddr_in{,6}).
 * Unknown families render as the empty string.
 */
static void format_addr(char *out, size_t cap, uint32_t type, uint32_t nonce,
			uint16_t family, const uint8_t *sa)
{
	char ip[INET6_ADDRSTRLEN];
	const char *prefix = type == ADDR_TYPE_MSGR2 ? "v2:" : "";
	unsigned int port = (unsigned int)sa[2] << 8 | sa[3];

	out[0] = '\0';
	if (family == WIRE_AF_INET) {
		if (inet_ntop(AF_INET, sa + 4, ip, sizeof(ip)))
			snprintf(out, cap, "%s%s:%u/%u", prefix, ip, port,
				 (unsigned int)nonce);
	} else if (family == WIRE_AF_INET6) {
		if (inet_ntop(AF_INET6, sa + 8, ip, sizeof(ip)))
			snprintf(out, cap, "%s[%s]:%u/%u", prefix, ip, port,
				 (unsigned int)nonce);
	}
}

/*
 * entity_addr_t (msg_types.h), both encodings:
 *   marker 1: ENCODE_START(1,1){u32 type, u32 nonce, u32 len,
 *             len bytes of sockaddr with a little-endian u16 family}
 *   marker 0: 3 pad bytes, u32 nonce, 128-byte sockaddr_storage with a
 *             big-endian family (type LEGACY, or NONE without a family)
 */
static void decode_addr(struct rbdl_dec *d, char *out, size_t cap)
{
	uint8_t sa[SOCKADDR_STORAGE_LEN];
	uint8_t marker = rbdl_dec_u8(d);
	uint32_t type = 0, nonce = 0;
	uint16_t family = 0;
	const uint8_t *raw;

	out[0] = '\0';
	memset(sa, 0, sizeof(sa));
	if (d->err)
		return;
	if (marker == 0) {
		rbdl_dec_skip(d, 3);
		nonce = rbdl_dec_u32(d);
		raw = dec_take(d, SOCKADDR_STORAGE_LEN);
		if (!raw)
			return;
		memcpy(sa, raw, sizeof(sa));
		family = (uint16_t)(raw[0] << 8 | raw[1]);
		type = family ? 1 : 0;
	} else if (marker == 1) {
		const uint8_t *outer;
		uint32_t elen;

		enter(d, 1, &outer);
		type = rbdl_dec_u32(d);
		nonce = rbdl_dec_u32(d);
		elen = rbdl_dec_u32(d);
		if (elen && !d->err) {
			/*
			 * Ceph: the family, then at most the rest of that
			 * family's sockaddr (16 bytes for INET, 28 otherwise).
			 */
			uint32_t max = 28;

			if (elen < 2)
				d->err = -EBADMSG;
			raw = dec_take(d, 2);
			if (raw) {
				family = (uint16_t)(raw[0] | raw[1] << 8);
				if (family == WIRE_AF_INET)
					max = 16;
				if (elen > max)
					d->err = -EBADMSG;
			}
			raw = dec_take(d, elen - 2);
			if (raw)
				memcpy(sa + 2, raw, elen - 2);
		}
		leave(d, outer);
	} else {
		d->err = -EBADMSG;
	}
	if (!d->err)
		format_addr(out, cap, type, nonce, family, sa);
}

static void decode_locker(struct rbdl_dec *d, struct rbdl_locker *l)
{
	const uint8_t *outer;

	/* locker_id_t { entity_name_t locker, string cookie } */
	enter(d, 1, &outer);
	l->entity_type = rbdl_dec_u8(d);
	l->entity_num = to_s64(rbdl_dec_u64(d));
	l->cookie = rbdl_dec_strdup(d);
	leave(d, outer);

	/* locker_info_t { utime_t expiration, entity_addr_t, string desc } */
	enter(d, 1, &outer);
	rbdl_dec_skip(d, 8);
	decode_addr(d, l->addr, sizeof(l->addr));
	l->description = rbdl_dec_strdup(d);
	leave(d, outer);
}

int rbdl_decode_lock_info(const void *buf, size_t len,
			  struct rbdl_lock_info *out)
{
	struct rbdl_dec d;
	const uint8_t *outer;
	uint32_t n, i;

	memset(out, 0, sizeof(*out));
	rbdl_dec_init(&d, buf, len);
	enter(&d, 1, &outer);
	n = rbdl_dec_u32(&d);
	if (!d.err && n > dec_left(&d) / MIN_LOCKER_WIRE)
		d.err = -EBADMSG;
	if (!d.err && n) {
		out->lockers = calloc(n, sizeof(*out->lockers));
		if (out->lockers)
			out->n_lockers = n;
		else
			d.err = -ENOMEM;
	}
	for (i = 0; i < n && !d.err; i++)
		decode_locker(&d, &out->lockers[i]);
	out->lock_type = rbdl_dec_u8(&d);
	out->tag = rbdl_dec_strdup(&d);
	leave(&d, outer);
	if (d.err) {
		rbdl_lock_info_free(out);
		return d.err;
	}
	return 0;
}

void rbdl_lock_info_free(struct rbdl_lock_info *li)
{
	uint32_t i;

	for (i = 0; li->lockers && i < li->n_lockers; i++) {
		free(li->lockers[i].cookie);
		free(li->lockers[i].description);
	}
	free(li->lockers);
	free(li->tag);
	memset(li, 0, sizeof(*li));
}

/* ---- header notifications ------------------------------------------------ */

/* Ops whose payload starts with a ClientId (LockPayloadBase). */
static inline bool op_has_client(uint32_t op)
{
	return op == RBDL_NOTIFY_ACQUIRED_LOCK ||
	       op == RBDL_NOTIFY_RELEASED_LOCK ||
	       op == RBDL_NOTIFY_REQUEST_LOCK;
}

int rbdl_decode_notify(const void *buf, size_t len, struct rbdl_notify_msg *out)
{
	struct rbdl_dec d;
	const uint8_t *outer;
	struct rbdl_notify_msg m;
	uint8_t v;

	memset(out, 0, sizeof(*out));
	memset(&m, 0, sizeof(m));
	if (len == 0) {
		/* Pre-NotifyMessage peers send an empty HEADER_UPDATE. */
		out->op = RBDL_NOTIFY_HEADER_UPDATE;
		return 0;
	}
	rbdl_dec_init(&d, buf, len);
	v = enter(&d, 1, &outer);
	m.op = rbdl_dec_u32(&d);
	/*
	 * WatchNotifyTypes.cc: the ClientId exists from v2 on and the
	 * REQUEST_LOCK force flag from v3 on.  Other ops keep only the op.
	 */
	if (!d.err && v >= 2 && op_has_client(m.op)) {
		m.client_gid = rbdl_dec_u64(&d);
		m.client_handle = rbdl_dec_u64(&d);
		m.has_client = true;
		if (m.op == RBDL_NOTIFY_REQUEST_LOCK && v >= 3 &&
		    dec_left(&d) > 0)
			m.force = rbdl_dec_u8(&d) != 0;
	}
	leave(&d, outer);
	if (d.err)
		return d.err;
	*out = m;
	return 0;
}

long rbdl_encode_notify(void *buf, size_t cap, uint32_t op, uint64_t gid,
			uint64_t handle, bool force)
{
	struct rbdl_enc e;
	size_t tok;

	if (!op_has_client(op) && op != RBDL_NOTIFY_HEADER_UPDATE)
		return -EINVAL;
	rbdl_enc_init(&e, buf, cap);
	tok = rbdl_enc_struct_start(&e, 7, 1);
	rbdl_enc_u32(&e, op);
	if (op_has_client(op)) {
		rbdl_enc_u64(&e, gid);
		rbdl_enc_u64(&e, handle);
		if (op == RBDL_NOTIFY_REQUEST_LOCK)
			rbdl_enc_u8(&e, force ? 1 : 0);
	}
	rbdl_enc_struct_end(&e, tok);
	return rbdl_enc_len(&e);
}

long rbdl_encode_notify_response(void *buf, size_t cap, int32_t result)
{
	struct rbdl_enc e;
	size_t tok;

	rbdl_enc_init(&e, buf, cap);
	tok = rbdl_enc_struct_start(&e, 1, 1);
	rbdl_enc_u32(&e, (uint32_t)result);
	rbdl_enc_struct_end(&e, tok);
	return rbdl_enc_len(&e);
}

int rbdl_decode_notify_response(const void *buf, size_t len, int32_t *result)
{
	struct rbdl_dec d;
	const uint8_t *outer;
	int32_t r;

	rbdl_dec_init(&d, buf, len);
	enter(&d, 1, &outer);
	r = to_s32(rbdl_dec_u32(&d));
	leave(&d, outer);
	if (d.err)
		return d.err;
	*result = r;
	return 0;
}

/* One pass over a notify reply; calls fn only when fn != NULL. */
static int walk_reply(struct rbdl_dec *d, rbdl_notify_reply_fn fn, void *arg)
{
	uint32_t n, i, plen;
	const uint8_t *payload;
	uint64_t gid, cookie;
	int r;

	n = rbdl_dec_u32(d);
	if (!d->err && n > dec_left(d) / 20)	/* 8 + 8 + 4 per ack */
		return -EBADMSG;
	for (i = 0; i < n && !d->err; i++) {
		gid = rbdl_dec_u64(d);
		cookie = rbdl_dec_u64(d);
		payload = rbdl_dec_bytes(d, &plen);
		if (fn && !d->err) {
			r = fn(gid, cookie, false, payload, plen, arg);
			if (r)
				return r;
		}
	}
	n = rbdl_dec_u32(d);
	if (!d->err && n > dec_left(d) / 16)
		return -EBADMSG;
	for (i = 0; i < n && !d->err; i++) {
		gid = rbdl_dec_u64(d);
		cookie = rbdl_dec_u64(d);
		if (fn && !d->err) {
			r = fn(gid, cookie, true, NULL, 0, arg);
			if (r)
				return r;
		}
	}
	return d->err;
}

int rbdl_walk_notify_reply(const void *buf, size_t len,
			   rbdl_notify_reply_fn fn, void *arg)
{
	struct rbdl_dec d;
	int r;

	/* Validate first, so the callback never sees part of a bad reply. */
	rbdl_dec_init(&d, buf, len);
	r = walk_reply(&d, NULL, NULL);
	if (r || !fn)
		return r;
	rbdl_dec_init(&d, buf, len);
	return walk_reply(&d, fn, arg);
}

/* ---- object map ---------------------------------------------------------- */

/* crc32c (Castagnoli), reflected polynomial 0x82F63B78, byte-wise table. */
static const uint32_t crc32c_table[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4,
	0xc79a971f, 0x35f1141c, 0x26a1e7e8, 0xd4ca64eb,
	0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24,
	0x105ec76f, 0xe235446c, 0xf165b798, 0x030e349b,
	0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54,
	0x5d1d08bf, 0xaf768bbc, 0xbc267848, 0x4e4dfb4b,
	0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35,
	0xaa64d611, 0x580f5512, 0x4b5fa6e6, 0xb93425e5,
	0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45,
	0xf779deae, 0x05125dad, 0x1642ae59, 0xe4292d5a,
	0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595,
	0x417b1dbc, 0xb3109ebf, 0xa0406d4b, 0x522bee48,
	0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687,
	0x0c38d26c, 0xfe53516f, 0xed03a29b, 0x1f682198,
	0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38,
	0xdbfc821c, 0x2997011f, 0x3ac7f2eb, 0xc8ac71e8,
	0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096,
	0xa65c047d, 0x5437877e, 0x4767748a, 0xb50cf789,
	0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46,
	0x7198540d, 0x83f3d70e, 0x90a324fa, 0x62c8a7f9,
	0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36,
	0x3cdb9bdd, 0xceb018de, 0xdde0eb2a, 0x2f8b6829,
	0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93,
	0x082f63b7, 0xfa44e0b4, 0xe9141340, 0x1b7f9043,
	0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3,
	0x55326b08, 0xa759e80b, 0xb4091bff, 0x466298fc,
	0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033,
	0xa24bb5a6, 0x502036a5, 0x4370c551, 0xb11b4652,
	0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d,
	0xef087a76, 0x1d63f975, 0x0e330a81, 0xfc588982,
	0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622,
	0x38cc2a06, 0xcaa7a905, 0xd9f75af1, 0x2b9cd9f2,
	0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530,
	0x0417b1db, 0xf67c32d8, 0xe52cc12c, 0x1747422f,
	0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0,
	0xd3d3e1ab, 0x21b862a8, 0x32e8915c, 0xc083125f,
	0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90,
	0x9e902e7b, 0x6cfbad78, 0x7fab5e8c, 0x8dc0dd8f,
	0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1,
	0x69e9f0d5, 0x9b8273d6, 0x88d28022, 0x7ab90321,
	0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81,
	0x34f4f86a, 0xc69f7b69, 0xd5cf889d, 0x27a40b9e,
	0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

uint32_t rbdl_crc32c(uint32_t seed, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t crc = seed;

	/* Ceph's ceph_crc32c(): no pre- or post-inversion. */
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#define BITVECTOR_BLOCK 4096	/* BitVector<>::BLOCK_SIZE, bytes per CRC */

int rbdl_decode_object_map(const void *buf, size_t len, uint8_t **bits,
			   uint64_t *nobjs)
{
	struct rbdl_dec d, h, f;
	const uint8_t *hdr, *data, *foot, *outer;
	uint32_t hlen, flen, ncrc, i;
	uint64_t size, dlen, nblocks;
	uint8_t *copy = NULL;

	*bits = NULL;
	*nobjs = 0;
	rbdl_dec_init(&d, buf, len);

	/* Header: a bufferlist holding ENCODE_START(1,1){u64 size}. */
	hdr = rbdl_dec_bytes(&d, &hlen);
	if (d.err)
		return d.err;
	rbdl_dec_init(&h, hdr, hlen);
	enter(&h, 1, &outer);
	size = rbdl_dec_u64(&h);
	leave(&h, outer);
	if (h.err)
		return h.err;

	/* Data: 2 bits per object, no length prefix. */
	dlen = size / 4 + (size % 4 != 0);
	if (dlen > dec_left(&d))
		return -EBADMSG;
	data = dec_take(&d, (size_t)dlen);

	/* Footer: a bufferlist, empty as returned by object_map_load. */
	foot = rbdl_dec_bytes(&d, &flen);
	if (d.err)
		return d.err;
	if (flen > 0) {
		rbdl_dec_init(&f, foot, flen);
		if (rbdl_dec_u32(&f) != rbdl_crc32c(0, hdr, hlen))
			return -EBADMSG;	/* header CRC */
		ncrc = rbdl_dec_u32(&f);
		nblocks = dlen / BITVECTOR_BLOCK +
			  (dlen % BITVECTOR_BLOCK != 0);
		if (f.err || ncrc != nblocks || ncrc > dec_left(&f) / 4)
			return -EBADMSG;
		for (i = 0; i < ncrc; i++) {
			uint64_t boff = (uint64_t)i * BITVECTOR_BLOCK;
			uint64_t blen = dlen - boff < BITVECTOR_BLOCK ?
					dlen - boff : BITVECTOR_BLOCK;

			if (rbdl_dec_u32(&f) !=
			    rbdl_crc32c(0, data + boff, (size_t)blen))
				return -EBADMSG;	/* data block CRC */
		}
	}

	if (dlen) {
		copy = malloc((size_t)dlen);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, (size_t)dlen);
	}
	*bits = copy;
	*nobjs = size;
	return 0;
}

long rbdl_encode_object_map_update(void *buf, size_t cap, uint64_t start,
				   uint64_t end, uint8_t state,
				   bool has_current, uint8_t current)
{
	struct rbdl_enc e;

	/* Object states are 2 bits wide (object_map_types.h). */
	if (state > 3 || (has_current && current > 3))
		return -EINVAL;
	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_u64(&e, start);
	rbdl_enc_u64(&e, end);
	rbdl_enc_u8(&e, state);
	rbdl_enc_u8(&e, has_current ? 1 : 0);	/* optional<u8> */
	if (has_current)
		rbdl_enc_u8(&e, current);
	return rbdl_enc_len(&e);
}

/* ---- image creation, removal and listing ---------------------------------- */

long rbdl_encode_create_image(void *buf, size_t cap, uint64_t size,
			      uint8_t order, uint64_t features,
			      const char *object_prefix, int64_t data_pool_id)
{
	struct rbdl_enc e;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_u64(&e, size);
	rbdl_enc_u8(&e, order);
	rbdl_enc_u64(&e, features);
	rbdl_enc_str(&e, object_prefix);
	rbdl_enc_u64(&e, (uint64_t)data_pool_id);
	return rbdl_enc_len(&e);
}

long rbdl_encode_dir_entry(void *buf, size_t cap, const char *name,
			   const char *id)
{
	struct rbdl_enc e;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_str(&e, name);
	rbdl_enc_str(&e, id);
	return rbdl_enc_len(&e);
}

long rbdl_encode_child_detach(void *buf, size_t cap, uint64_t snap_id,
			      int64_t child_pool, const char *child_id,
			      const char *child_ns)
{
	struct rbdl_enc e;
	size_t t;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_u64(&e, snap_id);
	t = rbdl_enc_struct_start(&e, 2, 1);
	rbdl_enc_u64(&e, (uint64_t)child_pool);
	rbdl_enc_str(&e, child_id);
	rbdl_enc_str(&e, child_ns);
	rbdl_enc_struct_end(&e, t);
	return rbdl_enc_len(&e);
}

long rbdl_encode_remove_child(void *buf, size_t cap, int64_t parent_pool,
			      const char *parent_id, uint64_t snap_id,
			      const char *child_id)
{
	struct rbdl_enc e;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_u64(&e, (uint64_t)parent_pool);
	rbdl_enc_str(&e, parent_id);
	rbdl_enc_u64(&e, snap_id);
	rbdl_enc_str(&e, child_id);
	return rbdl_enc_len(&e);
}

long rbdl_encode_string(void *buf, size_t cap, const char *s)
{
	struct rbdl_enc e;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_str(&e, s);
	return rbdl_enc_len(&e);
}

long rbdl_encode_stripe(void *buf, size_t cap, uint64_t su, uint64_t sc)
{
	struct rbdl_enc e;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_u64(&e, su);
	rbdl_enc_u64(&e, sc);
	return rbdl_enc_len(&e);
}

long rbdl_encode_object_map_resize(void *buf, size_t cap, uint64_t count,
				   uint8_t state)
{
	struct rbdl_enc e;

	if (state > 3)
		return -EINVAL;
	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_u64(&e, count);
	rbdl_enc_u8(&e, state);
	return rbdl_enc_len(&e);
}

long rbdl_encode_list_start(void *buf, size_t cap, const char *start_after,
			    uint64_t max_return)
{
	struct rbdl_enc e;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_str(&e, start_after);
	rbdl_enc_u64(&e, max_return);
	return rbdl_enc_len(&e);
}

void rbdl_dir_entries_free(struct rbdl_dir_entry *v, uint32_t n)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].id);
	}
	free(v);
}

/* Shared walk over map<string, X>: trash selects the X decoder. */
static int decode_entries(const void *buf, size_t len, bool trash,
			  struct rbdl_dir_entry **out, uint32_t *n)
{
	struct rbdl_dec d;
	struct rbdl_dir_entry *v = NULL;
	uint32_t cnt, i;

	*out = NULL;
	*n = 0;
	rbdl_dec_init(&d, buf, len);
	cnt = rbdl_dec_u32(&d);
	if (d.err)
		return d.err;
	/* Each entry takes at least 8 bytes: refuse absurd counts early. */
	if (cnt > len / 8)
		return -EBADMSG;
	if (cnt) {
		v = calloc(cnt, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	for (i = 0; i < cnt && !d.err; i++) {
		if (!trash) {
			v[i].name = rbdl_dec_strdup(&d);
			v[i].id = rbdl_dec_strdup(&d);
			continue;
		}
		const uint8_t *outer;

		v[i].id = rbdl_dec_strdup(&d);
		enter(&d, 2, &outer);
		v[i].source = rbdl_dec_u8(&d);
		v[i].name = rbdl_dec_strdup(&d);
		leave(&d, outer);
	}
	if (d.err) {
		rbdl_dir_entries_free(v, cnt);
		return d.err;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int rbdl_decode_dir_list(const void *buf, size_t len,
			 struct rbdl_dir_entry **out, uint32_t *n)
{
	return decode_entries(buf, len, false, out, n);
}

int rbdl_decode_trash_list(const void *buf, size_t len,
			   struct rbdl_dir_entry **out, uint32_t *n)
{
	return decode_entries(buf, len, true, out, n);
}

int rbdl_decode_group_spec(const void *buf, size_t len, bool *in_group)
{
	struct rbdl_dec d;
	const uint8_t *outer;
	uint64_t pool;
	uint32_t idlen = 0;

	rbdl_dec_init(&d, buf, len);
	enter(&d, 1, &outer);
	pool = rbdl_dec_u64(&d);
	rbdl_dec_bytes(&d, &idlen);
	leave(&d, outer);
	if (d.err)
		return d.err;
	*in_group = (int64_t)pool != -1 && idlen > 0;
	return 0;
}
