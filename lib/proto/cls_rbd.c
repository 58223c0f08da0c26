/*
 * cls_rbd.c - cls "rbd" method inputs and replies (cls_rbd.h).
 *
 * Threading and ownership: see cls_rbd.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cls_rbd.h"
#include "wire.h"

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
	if (rbdl_dec_left(&d) > 0)
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
	if (cnt > rbdl_dec_left(&d) / 8)
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
	rbdl_dec_enter(&d, 1, &outer);
	ps.pool_id = rbdl_to_s64(rbdl_dec_u64(&d));
	ps.pool_namespace = rbdl_dec_strdup(&d);
	ps.image_id = rbdl_dec_strdup(&d);
	ps.snap_id = rbdl_dec_u64(&d);
	rbdl_dec_leave(&d, outer);
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
	v = rbdl_dec_enter(&d, 3, &outer);
	m.header_type = rbdl_dec_u8(&d);
	m.pool_id = rbdl_to_s64(rbdl_dec_u64(&d));
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
	rbdl_dec_leave(&d, outer);
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
	rbdl_dec_enter(&d, 1, &outer);
	si.id = rbdl_dec_u64(&d);
	/* SnapshotNamespace: u32 type + a body we skip (unknown types too). */
	rbdl_dec_enter(&d, 1, &ns_outer);
	si.ns_type = rbdl_dec_u32(&d);
	rbdl_dec_leave(&d, ns_outer);
	si.name = rbdl_dec_strdup(&d);
	si.image_size = rbdl_dec_u64(&d);
	si.ts_sec = rbdl_dec_u32(&d);
	si.ts_nsec = rbdl_dec_u32(&d);
	si.child_count = rbdl_dec_u32(&d);
	rbdl_dec_leave(&d, outer);
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

int rbdl_decode_child_specs(const void *buf, size_t len,
			    struct rbdl_child_spec **v, uint32_t *n)
{
	struct rbdl_dec d;
	struct rbdl_child_spec *a = NULL;
	uint32_t cnt, i = 0;

	rbdl_dec_init(&d, buf, len);
	cnt = rbdl_dec_u32(&d);
	/* Each entry takes at least 22 bytes: a count past that is bogus. */
	if (!d.err && cnt && (uint64_t)cnt * 22 > len)
		d.err = -EBADMSG;
	if (!d.err && cnt && !(a = calloc(cnt, sizeof(*a))))
		return -ENOMEM;
	for (; i < cnt && !d.err; i++) {
		const uint8_t *outer;

		rbdl_dec_enter(&d, 2, &outer);
		a[i].pool_id = rbdl_to_s64(rbdl_dec_u64(&d));
		a[i].image_id = rbdl_dec_strdup(&d);
		a[i].pool_ns = rbdl_dec_strdup(&d);
		rbdl_dec_leave(&d, outer);
		if (!a[i].image_id || !a[i].pool_ns)
			d.err = -EBADMSG;
	}
	if (d.err) {
		rbdl_child_specs_free(a, i);
		return -EBADMSG;
	}
	*v = a;
	*n = cnt;
	return 0;
}

void rbdl_child_specs_free(struct rbdl_child_spec *v, uint32_t n)
{
	for (uint32_t i = 0; v && i < n; i++) {
		free(v[i].image_id);
		free(v[i].pool_ns);
	}
	free(v);
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

long rbdl_encode_string_alloc(const char *s, uint8_t **out)
{
	size_t cap = strlen(s) + 4;	/* u32 length, then the bytes */
	long n;

	*out = malloc(cap);
	if (!*out)
		return -ENOMEM;
	n = rbdl_encode_string(*out, cap, s);
	if (n < 0) {
		free(*out);
		*out = NULL;
	}
	return n;
}

long rbdl_encode_stripe(void *buf, size_t cap, uint64_t su, uint64_t sc)
{
	struct rbdl_enc e;

	rbdl_enc_init(&e, buf, cap);
	rbdl_enc_u64(&e, su);
	rbdl_enc_u64(&e, sc);
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
		rbdl_dec_enter(&d, 2, &outer);
		v[i].source = rbdl_dec_u8(&d);
		v[i].name = rbdl_dec_strdup(&d);
		rbdl_dec_leave(&d, outer);
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
	rbdl_dec_enter(&d, 1, &outer);
	pool = rbdl_dec_u64(&d);
	rbdl_dec_bytes(&d, &idlen);
	rbdl_dec_leave(&d, outer);
	if (d.err)
		return d.err;
	*in_group = (int64_t)pool != -1 && idlen > 0;
	return 0;
}
