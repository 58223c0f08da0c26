/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * engine_rados.c - the rados backend: raw librados aio on the image's data
 * objects, at the offsets the rbd job would touch, mapped the way librbd
 * maps them.  It measures the floor for any rbd client over librados: no
 * image handle, no header, no locking, no object map.  With --luks it is
 * the floor of an encrypting client: the same offsets past the LUKS
 * header, each block AES-XTS encrypted before a write and decrypted after
 * a read, with librbdlite's cipher code (core/cipher.c: per-thread
 * OpenSSL contexts) under a key of its own (the data it writes is
 * noise to the image's real key; only the work is the same).
 *
 * Threading: be_rados_submit() runs on a job thread (or, in callback mode,
 * on the librados callback thread that completed the previous I/O); the
 * per-object callbacks run on librados' callback threads.  An I/O that
 * spans several objects completes when the last of them does: s->ops
 * (core/join.h) counts the object ops plus one guard held by the
 * submitter, so that the slot cannot complete while it is still being
 * submitted, and keeps their first error.
 *
 * Ownership: each object op's completion is released by its callback, or
 * by the submitter if the op was never started.  The data-pool contexts
 * (one per image, in c->dio) and the ciphers (c->cipher) belong to the
 * child; a slot's encryption buffer (s->cbuf) to the slot.
 */
#include "engine.h"

#include "core/cipher.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The child's data-pool context for every image; 0 or a negative errno. */
int be_rados_open_pools(struct child *c, char *err, size_t errlen)
{
	const struct opts *o = c->o;

	c->dio = xcalloc((size_t)o->nimages, sizeof(*c->dio));
	for (int i = 0; i < o->nimages; i++) {
		int64_t pid = o->layouts[i].data_pool_id;
		int r = pid >= 0 ?
			rados_ioctx_create2(c->cluster, pid, &c->dio[i]) :
			rados_ioctx_create(c->cluster, o->pool, &c->dio[i]);

		if (r < 0) {
			c->dio[i] = NULL;
			snprintf(err, errlen, "data pool %" PRId64 " of image %s: %s",
				 pid, o->images[i], strerror(-r));
			return r;
		}
	}
	if (!o->luks_format)
		return 0;
	/* AES-256-XTS, as the images --luks loads are formatted. */
	unsigned char key[64];

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 37 + 11);
	c->cipher = xcalloc((size_t)o->nimages, sizeof(*c->cipher));
	for (int i = 0; i < o->nimages; i++) {
		int r = rbdl_cipher_init(&c->cipher[i], key, sizeof(key),
					 o->layouts[i].crypt_block);

		if (r < 0) {
			snprintf(err, errlen, "--luks: cipher: %s",
				 strerror(-r));
			return r;
		}
	}
	return 0;
}

void be_rados_close_pools(struct child *c)
{
	if (c->cipher) {
		for (int i = 0; i < c->o->nimages; i++)
			rbdl_cipher_destroy(&c->cipher[i]);
		free(c->cipher);
		c->cipher = NULL;
	}
	if (!c->dio)
		return;
	for (int i = 0; i < c->o->nimages; i++)
		if (c->dio[i])
			rados_ioctx_destroy(c->dio[i]);
	free(c->dio);
	c->dio = NULL;
}

/* The cipher of the slot's current image, or NULL without --luks. */
static const struct rbdl_cipher *slot_cipher(const struct slot *s)
{
	const struct child *c = s->j->c;

	return c->cipher ? &c->cipher[s->j->ji[s->cur].img] : NULL;
}

/* A rados slot whose object ops have all completed. */
static void rados_slot_done(struct slot *s)
{
	struct job *j = s->j;
	const struct rbdl_cipher *k = slot_cipher(s);

	/* After the join's last put: the data is all in. */
	if (k && !s->write && !rbdl_join_result(&s->ops)) {
		int r = rbdl_cipher_crypt(k, false, s->off, s->buf, s->buf,
					  j->c->o->bs);

		if (r < 0)
			rbdl_join_error(&s->ops, r);
	}

	if (j->c->o->mode == MODE_CALLBACK) {
		if (!handle_completion(j, s, rbdl_join_result(&s->ops)))
			cb_retire(j);
		return;
	}
	slot_handoff(s);
}

static void rados_piece_cb(rados_completion_t rc, void *arg)
{
	struct slot *s = arg;
	int r = rados_aio_get_return_value(rc);

	rados_aio_release(rc);
	if (r == -ENOENT && !s->write) {
		/* a hole: librbd would return zeros */
		atomic_fetch_add_explicit(&s->j->enoent, 1,
					  memory_order_relaxed);
		r = 0;
	}
	if (r < 0)
		rbdl_join_error(&s->ops, r);
	if (rbdl_join_put(&s->ops))
		rados_slot_done(s);
}

/*
 * Issue the object ops of one I/O: the image extent is mapped like librbd
 * maps it (striping v2 aware; with stripe_count 1 simply objno = off >>
 * order).  Errors, synchronous or not, reach handle_completion() through
 * s->ops.
 */
void be_rados_submit(struct job *j, struct slot *s)
{
	const struct layout *L = j->ji[s->cur].lay;
	rados_ioctx_t dio = j->ji[s->cur].dio;
	uint64_t os = 1ull << L->order;
	uint64_t su = L->stripe_count == 1 ? os : L->stripe_unit;
	uint64_t sc = L->stripe_count;
	uint64_t spo = os / su;
	const struct rbdl_cipher *k = slot_cipher(s);
	uint64_t off = s->off + L->data_off, left = j->c->o->bs;
	char *p = s->buf;

	rbdl_join_start(&s->ops, 1);	/* the submitter's guard */
	if (k && s->write) {
		void *cb = s->cbuf;
		int r = 0;

		if (!cb && posix_memalign(&cb, 4096, left))
			r = -ENOMEM;
		s->cbuf = cb;
		if (r == 0)
			r = rbdl_cipher_crypt(k, true, s->off, s->buf, s->cbuf,
					      left);
		if (r < 0) {
			rbdl_join_error(&s->ops, r);
			left = 0;	/* nothing is sent */
		}
		p = s->cbuf;
	}
	while (left) {
		uint64_t blockno = off / su, blockoff = off % su;
		uint64_t stripeno = blockno / sc, stripepos = blockno % sc;
		uint64_t objno = (stripeno / spo) * sc + stripepos;
		uint64_t objoff = (stripeno % spo) * su + blockoff;
		uint64_t len = su - blockoff < left ? su - blockoff : left;
		rados_completion_t rc;
		char oid[RBD_MAX_BLOCK_NAME_SIZE + 32];
		int r;

		snprintf(oid, sizeof(oid), "%s.%016" PRIx64, L->prefix, objno);
		r = rados_aio_create_completion2(s, rados_piece_cb, &rc);
		if (r < 0) {
			rbdl_join_error(&s->ops, r);
			break;
		}
		rbdl_join_add(&s->ops);
		if (s->write)
			r = rados_aio_write(dio, oid, rc, p, len, objoff);
		else
			r = rados_aio_read(dio, oid, rc, p, len, objoff);
		if (r < 0) {
			rados_aio_release(rc);
			rbdl_join_unsent(&s->ops, r);
			break;
		}
		off += len;
		p += len;
		left -= len;
	}
	if (rbdl_join_put(&s->ops))
		rados_slot_done(s);
}
