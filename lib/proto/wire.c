/*
 * wire.c - the encoder and decoder primitives (wire.h).
 *
 * Every read is checked with the overflow-safe test `n <= end - p`.  The
 * first failed read latches -EBADMSG in the decoder and all later reads
 * return zeros, so a decoder function reads its fields straight through
 * and checks d->err once.  Versioned structs are entered with
 * rbdl_dec_enter()/rbdl_dec_leave(), which also narrow the decoder to the
 * struct body, so a field can never be taken from the bytes that follow
 * the struct.
 *
 * Threading and ownership: reentrant, no global state.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

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
		rbdl_put_le32(p, v);
}

void rbdl_enc_u64(struct rbdl_enc *e, uint64_t v)
{
	uint8_t *p = enc_reserve(e, 8);

	if (p)
		rbdl_put_le64(p, v);
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
	rbdl_put_le32(e->buf + token, (uint32_t)body);
}

/* ---- decoder ------------------------------------------------------------ */

void rbdl_dec_init(struct rbdl_dec *d, const void *buf, size_t len)
{
	d->p = buf;
	d->end = buf ? d->p + len : d->p;
	d->err = 0;
}

const uint8_t *rbdl_dec_take(struct rbdl_dec *d, size_t n)
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
	const uint8_t *p = rbdl_dec_take(d, 1);

	return p ? *p : 0;
}

uint32_t rbdl_dec_u32(struct rbdl_dec *d)
{
	const uint8_t *p = rbdl_dec_take(d, 4);

	return p ? rbdl_get_le32(p) : 0;
}

uint64_t rbdl_dec_u64(struct rbdl_dec *d)
{
	const uint8_t *p = rbdl_dec_take(d, 8);

	return p ? rbdl_get_le64(p) : 0;
}

void rbdl_dec_skip(struct rbdl_dec *d, size_t n)
{
	rbdl_dec_take(d, n);
}

const uint8_t *rbdl_dec_bytes(struct rbdl_dec *d, uint32_t *len)
{
	uint32_t n = rbdl_dec_u32(d);
	const uint8_t *p = rbdl_dec_take(d, n);

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
	if (!rbdl_dec_take(d, len))
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

uint8_t rbdl_dec_enter(struct rbdl_dec *d, uint8_t max_compat,
		     const uint8_t **outer)
{
	const uint8_t *se;
	uint8_t v = rbdl_dec_struct_start(d, max_compat, &se);

	*outer = d->end;
	if (!d->err)
		d->end = se;
	return v;
}

void rbdl_dec_leave(struct rbdl_dec *d, const uint8_t *outer)
{
	const uint8_t *se = d->end;

	d->end = outer;
	rbdl_dec_struct_end(d, se);
}
