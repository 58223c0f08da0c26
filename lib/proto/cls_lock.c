/*
 * cls_lock.c - cls "lock" inputs and the get_info reply (cls_lock.h).
 *
 * Threading and ownership: see cls_lock.h.
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

#include "cls_lock.h"
#include "wire.h"

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
		raw = rbdl_dec_take(d, SOCKADDR_STORAGE_LEN);
		if (!raw)
			return;
		memcpy(sa, raw, sizeof(sa));
		family = (uint16_t)(raw[0] << 8 | raw[1]);
		type = family ? 1 : 0;
	} else if (marker == 1) {
		const uint8_t *outer;
		uint32_t elen;

		rbdl_dec_enter(d, 1, &outer);
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
			raw = rbdl_dec_take(d, 2);
			if (raw) {
				family = (uint16_t)(raw[0] | raw[1] << 8);
				if (family == WIRE_AF_INET)
					max = 16;
				if (elen > max)
					d->err = -EBADMSG;
			}
			raw = rbdl_dec_take(d, elen - 2);
			if (raw)
				memcpy(sa + 2, raw, elen - 2);
		}
		rbdl_dec_leave(d, outer);
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
	rbdl_dec_enter(d, 1, &outer);
	l->entity_type = rbdl_dec_u8(d);
	l->entity_num = rbdl_to_s64(rbdl_dec_u64(d));
	l->cookie = rbdl_dec_strdup(d);
	rbdl_dec_leave(d, outer);

	/* locker_info_t { utime_t expiration, entity_addr_t, string desc } */
	rbdl_dec_enter(d, 1, &outer);
	rbdl_dec_skip(d, 8);
	decode_addr(d, l->addr, sizeof(l->addr));
	l->description = rbdl_dec_strdup(d);
	rbdl_dec_leave(d, outer);
}

int rbdl_decode_lock_info(const void *buf, size_t len,
			  struct rbdl_lock_info *out)
{
	struct rbdl_dec d;
	const uint8_t *outer;
	uint32_t n, i;

	memset(out, 0, sizeof(*out));
	rbdl_dec_init(&d, buf, len);
	rbdl_dec_enter(&d, 1, &outer);
	n = rbdl_dec_u32(&d);
	if (!d.err && n > rbdl_dec_left(&d) / MIN_LOCKER_WIRE)
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
	rbdl_dec_leave(&d, outer);
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
