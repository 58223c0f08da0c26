/*
 * wire.h - Ceph's wire encoding: little-endian integers, strings, and
 * versioned structs, the primitives every protocol module builds on.
 *
 * Role: the only code that knows byte order and struct framing.  Encoders
 * append to a fixed caller buffer through struct rbdl_enc; decoders read a
 * reply through struct rbdl_dec, whose every read is bounds-checked, so a
 * malformed reply from the cluster yields -EBADMSG and never an
 * out-of-bounds access.
 *
 * Threading and ownership: pure functions over caller-provided buffers;
 * no global state.  rbdl_dec_strdup() mallocs; everything else allocates
 * nothing.
 *
 * Conventions: little-endian fixed-width integers, strings as u32 length +
 * bytes, versioned structs as u8 v, u8 compat, u32 len + body (decoders
 * skip unknown trailing bytes using len and refuse compat above what they
 * understand with -EBADMSG).
 */
#ifndef RBDL_PROTO_WIRE_H
#define RBDL_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- byte order (host-independent): the one little-endian codec ------- */

static inline void rbdl_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void rbdl_put_le64(uint8_t *p, uint64_t v)
{
	rbdl_put_le32(p, (uint32_t)v);
	rbdl_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t rbdl_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t rbdl_get_le64(const uint8_t *p)
{
	return (uint64_t)rbdl_get_le32(p) | (uint64_t)rbdl_get_le32(p + 4) << 32;
}

/* Two's-complement reinterpretation without implementation-defined casts. */
static inline int32_t rbdl_to_s32(uint32_t v)
{
	return v <= INT32_MAX ? (int32_t)v : -(int32_t)(~v) - 1;
}

static inline int64_t rbdl_to_s64(uint64_t v)
{
	return v <= INT64_MAX ? (int64_t)v : -(int64_t)(~v) - 1;
}


/* ---- encoder ---------------------------------------------------------- */

/*
 * An encoder appends to a fixed caller buffer.  On overflow it sets err to
 * -ERANGE and stops writing; check err (or rbdl_enc_len() < 0) once at the
 * end instead of after every call.
 */
struct rbdl_enc {
	uint8_t *buf;
	size_t len;
	size_t cap;
	int err;
};

void rbdl_enc_init(struct rbdl_enc *e, void *buf, size_t cap);
void rbdl_enc_u8(struct rbdl_enc *e, uint8_t v);
void rbdl_enc_u32(struct rbdl_enc *e, uint32_t v);
void rbdl_enc_u64(struct rbdl_enc *e, uint64_t v);
void rbdl_enc_raw(struct rbdl_enc *e, const void *p, size_t n);
/* u32 length + bytes; p may be NULL only when n == 0 (else err = -EINVAL). */
void rbdl_enc_bytes(struct rbdl_enc *e, const void *p, size_t n);
/* A NUL-terminated C string as a Ceph string (no NUL on the wire); NULL is
 * encoded as the empty string. */
void rbdl_enc_str(struct rbdl_enc *e, const char *s);
/*
 * Start a versioned struct: writes v, compat and a placeholder u32 length;
 * returns a token to pass to rbdl_enc_struct_end(), which patches the length.
 */
size_t rbdl_enc_struct_start(struct rbdl_enc *e, uint8_t v, uint8_t compat);
void rbdl_enc_struct_end(struct rbdl_enc *e, size_t token);
/* Bytes written, or the negative error. */
static inline long rbdl_enc_len(const struct rbdl_enc *e)
{
	return e->err ? (long)e->err : (long)e->len;
}

/* ---- decoder ---------------------------------------------------------- */

/*
 * A decoder reads from [p, end).  Any underrun sets err to -EBADMSG, after
 * which every read returns 0 / empty; check err once at the end.
 */
struct rbdl_dec {
	const uint8_t *p;
	const uint8_t *end;
	int err;
};

void rbdl_dec_init(struct rbdl_dec *d, const void *buf, size_t len);
uint8_t rbdl_dec_u8(struct rbdl_dec *d);
uint32_t rbdl_dec_u32(struct rbdl_dec *d);
uint64_t rbdl_dec_u64(struct rbdl_dec *d);
/* Bytes left to read (0 after an error). */
static inline size_t rbdl_dec_left(const struct rbdl_dec *d)
{
	return d->err || d->p > d->end ? 0 : (size_t)(d->end - d->p);
}
/* Take n bytes; NULL (and -EBADMSG latched) if fewer remain. */
const uint8_t *rbdl_dec_take(struct rbdl_dec *d, size_t n);
/* Skip n bytes. */
void rbdl_dec_skip(struct rbdl_dec *d, size_t n);
/*
 * A Ceph string/bufferlist: returns a pointer into the buffer (not
 * NUL-terminated) and its length; NULL and 0 on error.
 */
const uint8_t *rbdl_dec_bytes(struct rbdl_dec *d, uint32_t *len);
/* A Ceph string as a malloc'ed NUL-terminated copy (NULL on error/ENOMEM:
 * d->err is -EBADMSG or -ENOMEM). */
char *rbdl_dec_strdup(struct rbdl_dec *d);
/*
 * Enter a versioned struct.  Fails (-EBADMSG) if compat > max_compat or the
 * length runs past the buffer.  *struct_end receives the end of the struct
 * body; pass it to rbdl_dec_struct_end() to skip unknown trailing fields.
 * Returns struct_v (0 on error).
 */
uint8_t rbdl_dec_struct_start(struct rbdl_dec *d, uint8_t max_compat,
			      const uint8_t **struct_end);
void rbdl_dec_struct_end(struct rbdl_dec *d, const uint8_t *struct_end);

/*
 * Enter a versioned struct and narrow the decoder to its body, so nested
 * reads fail at the struct boundary; rbdl_dec_leave() restores the outer
 * end and skips unknown trailing fields.  *outer must be passed to
 * rbdl_dec_leave() even after an error.
 */
uint8_t rbdl_dec_enter(struct rbdl_dec *d, uint8_t max_compat,
		       const uint8_t **outer);
void rbdl_dec_leave(struct rbdl_dec *d, const uint8_t *outer);

#endif /* RBDL_PROTO_WIRE_H */
