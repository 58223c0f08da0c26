/*
 * cipher.c - AES-XTS data blocks of LUKS images and block-range locks
 * (cipher.h).  Built only with encryption (configure --with-encryption,
 * the default): OpenSSL's libcrypto does the AES.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef RBDLITE_ENCRYPTION
#include <openssl/crypto.h>
#include <openssl/evp.h>
#endif

#include "cipher.h"
#include "internal.h"

/* ---- cipher --------------------------------------------------------------- */

#ifdef RBDLITE_ENCRYPTION

/* Relaxed: only uniqueness matters. */
static _Atomic uint64_t next_gen = 1;

int rbdl_cipher_init(struct rbdl_cipher *k, const unsigned char *key,
		     size_t key_len, uint32_t block)
{
	memset(k, 0, sizeof(*k));
	if (key_len == 32)
		k->evp = EVP_aes_128_xts();
	else if (key_len == 64)
		k->evp = EVP_aes_256_xts();
	else
		return -ENOTSUP;
	if (block < 512 || block > 4096 || (block & (block - 1)))
		return -EINVAL;
	memcpy(k->key, key, key_len);
	k->key_len = (uint32_t)key_len;
	k->block = block;
	k->gen = atomic_fetch_add_explicit(&next_gen, 1, memory_order_relaxed);
	return 0;
}

void rbdl_cipher_destroy(struct rbdl_cipher *k)
{
	OPENSSL_cleanse(k->key, sizeof(k->key));
	k->gen = 0;
}

/* A thread's contexts: [0] decrypt, [1] encrypt, each keyed for the
 * cipher of generation gen[i]. */
struct tls_ctx {
	EVP_CIPHER_CTX *ctx[2];
	uint64_t gen[2];
};

static __thread struct tls_ctx *tls;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
	struct tls_ctx *t = p;

	for (int i = 0; i < 2; i++)
		EVP_CIPHER_CTX_free(t->ctx[i]);	/* wipes the key schedule */
	free(t);
}

static bool tls_key_made;

static void tls_init(void)
{
	tls_key_made = pthread_key_create(&tls_key, tls_free) == 0;
}

/* If the library is unloaded (dlclose), threads that outlive it must not
 * call a key destructor that is gone: their contexts are left behind. */
__attribute__((destructor)) static void tls_fini(void)
{
	if (tls_key_made)
		pthread_key_delete(tls_key);
}

static EVP_CIPHER_CTX *thread_ctx(const struct rbdl_cipher *k, bool enc)
{
	struct tls_ctx *t = tls;

	if (__builtin_expect(!t, 0)) {
		pthread_once(&tls_once, tls_init);
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->ctx[0] = EVP_CIPHER_CTX_new();
		t->ctx[1] = EVP_CIPHER_CTX_new();
		if (!t->ctx[0] || !t->ctx[1]) {
			tls_free(t);
			return NULL;
		}
		tls = t;
		if (tls_key_made)
			pthread_setspecific(tls_key, t);
	}
	if (t->gen[enc] != k->gen) {
		if (EVP_CipherInit_ex(t->ctx[enc], k->evp, NULL, k->key, NULL,
				      enc) != 1) {
			t->gen[enc] = 0;
			return NULL;
		}
		t->gen[enc] = k->gen;
	}
	return t->ctx[enc];
}

static bool all_zero(const unsigned char *p, size_t len)
{
	/* Ciphertext differs from zero in its first word almost surely. */
	const uint64_t *w = (const uint64_t *)(const void *)p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	return true;
}

int rbdl_cipher_crypt(const struct rbdl_cipher *k, bool enc, uint64_t off,
		      const void *src, void *dst, size_t len)
{
	const unsigned char *in = src;
	unsigned char *out = dst;
	unsigned char iv[16] = { 0 };
	EVP_CIPHER_CTX *ctx = thread_ctx(k, enc);
	uint32_t bs = k->block;

	if (!ctx)
		return -EIO;
	for (size_t pos = 0; pos < len; pos += bs) {
		uint64_t sector = (off + pos) / 512;
		int outl;

		if (!enc && all_zero(in + pos, bs)) {
			if (out != in)
				memset(out + pos, 0, bs);
			continue;
		}
		for (int i = 0; i < 8; i++)
			iv[i] = (unsigned char)(sector >> (8 * i));
		if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, -1) != 1 ||
		    EVP_CipherUpdate(ctx, out + pos, &outl, in + pos,
				     (int)bs) != 1 ||
		    outl != (int)bs)
			return -EIO;
	}
	return 0;
}

#else /* !RBDLITE_ENCRYPTION: built without; nothing can load a key */

int rbdl_cipher_init(struct rbdl_cipher *k, const unsigned char *key,
		     size_t key_len, uint32_t block)
{
	(void)key, (void)key_len, (void)block;
	memset(k, 0, sizeof(*k));
	return -EOPNOTSUPP;
}

void rbdl_cipher_destroy(struct rbdl_cipher *k)
{
	memset(k, 0, sizeof(*k));
}

int rbdl_cipher_crypt(const struct rbdl_cipher *k, bool enc, uint64_t off,
		      const void *src, void *dst, size_t len)
{
	(void)k, (void)enc, (void)off, (void)src, (void)dst, (void)len;
	return -EOPNOTSUPP;
}

#endif /* RBDLITE_ENCRYPTION */

/* ---- block-range locks ---------------------------------------------------- */

void rbdl_crange_set_init(struct rbdl_crange_set *s)
{
	pthread_mutex_init(&s->mu, NULL);
	s->held = NULL;
	s->wait_head = s->wait_tail = NULL;
}

void rbdl_crange_set_destroy(struct rbdl_crange_set *s)
{
	pthread_mutex_destroy(&s->mu);
}

static bool overlaps(const struct rbdl_crange *a, const struct rbdl_crange *b)
{
	return a->start < b->end && b->start < a->end;
}

/* Whether r conflicts with a held range or a waiter before it (stop); a
 * range within a held one only with the other held ranges. */
static bool blocked(struct rbdl_crange_set *s, struct rbdl_crange *r,
		    struct rbdl_crange *stop)
{
	for (struct rbdl_crange *h = s->held; h; h = h->next)
		if (h != r->within && overlaps(h, r))
			return true;
	if (r->within)
		return false;
	for (struct rbdl_crange *w = s->wait_head; w && w != stop; w = w->next)
		if (overlaps(w, r))
			return true;
	return false;
}

void rbdl_crange_acquire(struct rbdl_crange_set *s, struct rbdl_crange *r)
{
	pthread_mutex_lock(&s->mu);
	r->next = NULL;
	if (blocked(s, r, NULL)) {
		if (s->wait_tail)
			s->wait_tail->next = r;
		else
			s->wait_head = r;
		s->wait_tail = r;
		pthread_mutex_unlock(&s->mu);
		return;
	}
	r->next = s->held;
	s->held = r;
	pthread_mutex_unlock(&s->mu);
	r->grant(r);
}

bool rbdl_crange_try_acquire(struct rbdl_crange_set *s,
			     struct rbdl_crange *r)
{
	bool ok;

	pthread_mutex_lock(&s->mu);
	ok = !blocked(s, r, NULL);
	if (ok) {
		r->next = s->held;
		s->held = r;
	}
	pthread_mutex_unlock(&s->mu);
	return ok;
}

void rbdl_crange_release(struct rbdl_crange_set *s, struct rbdl_crange *r)
{
	struct rbdl_crange *grant = NULL, **gtail = &grant, **pp, *w, *prev;

	pthread_mutex_lock(&s->mu);
	for (pp = &s->held; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	/* Grant, in order, each waiter that nothing held and no earlier
	 * waiter blocks. */
	prev = NULL;
	for (w = s->wait_head; w;) {
		struct rbdl_crange *next = w->next;

		if (blocked(s, w, w)) {
			prev = w;
			w = next;
			continue;
		}
		if (prev)
			prev->next = next;
		else
			s->wait_head = next;
		if (s->wait_tail == w)
			s->wait_tail = prev;
		w->next = s->held;
		s->held = w;
		w->gnext = NULL;
		*gtail = w;
		gtail = &w->gnext;
		w = next;
	}
	pthread_mutex_unlock(&s->mu);
	while (grant) {
		w = grant;
		grant = w->gnext;	/* read first: the grant may free w */
		w->grant(w);
	}
}

bool rbdl_crange_busy(struct rbdl_crange_set *s)
{
	pthread_mutex_lock(&s->mu);
	bool busy = s->held || s->wait_head;

	pthread_mutex_unlock(&s->mu);
	return busy;
}

/* ---- an image's loaded encryption ----------------------------------------- */

struct rbdl_crypt *rbdl_crypt_new(const unsigned char *key, size_t key_len,
				  uint32_t block, uint64_t data_off, int *err)
{
	struct rbdl_crypt *k = calloc(1, sizeof(*k));

	*err = -ENOMEM;
	if (!k)
		return NULL;
	*err = rbdl_cipher_init(&k->cipher, key, key_len, block);
	if (*err < 0) {
		free(k);
		return NULL;
	}
	k->data_off = data_off;
	rbdl_crange_set_init(&k->ranges);
	return k;
}

void rbdl_crypt_free(struct rbdl_crypt *k)
{
	while (k) {
		struct rbdl_crypt *next = k->retired;

		rbdl_cipher_destroy(&k->cipher);
		rbdl_crange_set_destroy(&k->ranges);
		free(k);
		k = next;
	}
}
