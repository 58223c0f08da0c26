/*
 * notify.c - header notification payloads (notify.h).
 *
 * Threading and ownership: see notify.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notify.h"
#include "wire.h"

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
	v = rbdl_dec_enter(&d, 1, &outer);
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
		    rbdl_dec_left(&d) > 0)
			m.force = rbdl_dec_u8(&d) != 0;
	}
	/* QuiescePayload / UnquiescePayload: an AsyncRequestId (u64 gid,
	 * u64 handle, u64 request id). */
	if (!d.err && (m.op == RBDL_NOTIFY_QUIESCE ||
		       m.op == RBDL_NOTIFY_UNQUIESCE) &&
	    rbdl_dec_left(&d) >= 24) {
		m.async_gid = rbdl_dec_u64(&d);
		m.async_handle = rbdl_dec_u64(&d);
		m.async_request_id = rbdl_dec_u64(&d);
		m.has_async_id = !d.err;
	}
	rbdl_dec_leave(&d, outer);
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
	rbdl_dec_enter(&d, 1, &outer);
	r = rbdl_to_s32(rbdl_dec_u32(&d));
	rbdl_dec_leave(&d, outer);
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
	if (!d->err && n > rbdl_dec_left(d) / 20)	/* 8 + 8 + 4 per ack */
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
	if (!d->err && n > rbdl_dec_left(d) / 16)
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
