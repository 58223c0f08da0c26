/*
 * cipher.h - the data encryption of a LUKS image: AES-XTS over fixed-size
 * blocks (LUKS sectors) with plain64 IVs, as dm-crypt and librbd 16.2's
 * BlockCrypto use it, and the block-range locks that keep the
 * read-modify-write of partial blocks atomic within one image handle.
 *
 * Format: block n of the data area (byte offset n * block_size from the
 * end of the LUKS header) is encrypted on its own with the IV
 * le64(offset / 512) padded with zeros to 16 bytes, whatever the block
 * size (512 for LUKS1, 4096 for LUKS2): the IV counts 512-byte sectors.
 * A block whose stored bytes are all zeros is never decrypted: it reads as
 * zeros, as librbd's reads of objects or extents that hold no data do
 * (ciphertext of all zeros has probability 2^-4096).
 *
 * Threading: struct rbdl_cipher is immutable once initialised and used by
 * any number of threads at once.  Each thread keeps its own two OpenSSL
 * contexts (encrypt, decrypt) in thread-local storage, keyed for the
 * cipher it used last: no lock and no allocation per I/O; switching
 * between images re-keys the thread's context (one AES key schedule).
 * The contexts are freed when the thread exits.
 *
 * Range locks (struct rbdl_crange_set): any thread; one mutex per image.
 * A request holds [start, end) of the data area while it reads, merges
 * and writes blocks; an overlapping request waits, first come first
 * served, and is granted from the thread that releases.  Ownership: the
 * caller owns each struct rbdl_crange until its grant callback ran and it
 * called rbdl_crange_release.
 */
#ifndef RBDL_CORE_CIPHER_H
#define RBDL_CORE_CIPHER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rbdl_cipher {
	const void *evp;		/* EVP_CIPHER: aes-128-xts / aes-256-xts */
	unsigned char key[64];
	uint32_t key_len;		/* 32 (AES-128-XTS) or 64 (AES-256) */
	uint32_t block;			/* bytes per block: 512 or 4096 */
	uint64_t gen;			/* unique: keys the thread's contexts */
};

/* Set up k for key (key_len 32 or 64 bytes) and block size (a power of
 * two, 512..4096).  0, -ENOTSUP for another key length (librbd's answer),
 * -EINVAL for a bad block size. */
int rbdl_cipher_init(struct rbdl_cipher *k, const unsigned char *key,
		     size_t key_len, uint32_t block);

/* Wipe the key. */
void rbdl_cipher_destroy(struct rbdl_cipher *k);

/*
 * Encrypt (enc) or decrypt len bytes from src to dst (they may be the same
 * buffer, never partly overlapping).  off is the data-area offset of src's
 * first byte; off and len are multiples of the block size.  Decryption
 * leaves all-zero blocks zero (above).  0, or -EIO if OpenSSL failed (or
 * -ENOMEM for a thread's first context).
 */
int rbdl_cipher_crypt(const struct rbdl_cipher *k, bool enc, uint64_t off,
		      const void *src, void *dst, size_t len);

struct rbdl_crange {
	uint64_t start, end;		/* [start, end) of the data area */
	/* NULL, or a held range containing this one whose holder acquires
	 * this one for a part of its work: this one is not blocked by it nor
	 * by any waiter (it takes its place in line from it), only by the
	 * other held ranges it overlaps (those of the same holder). */
	struct rbdl_crange *within;
	void (*grant)(struct rbdl_crange *r);	/* run once when held */
	struct rbdl_crange *next;	/* held list or wait FIFO */
	struct rbdl_crange *gnext;	/* grants of one release */
};

struct rbdl_crange_set {
	pthread_mutex_t mu;
	struct rbdl_crange *held;	/* ranges held now */
	struct rbdl_crange *wait_head, *wait_tail;	/* FIFO */
};

void rbdl_crange_set_init(struct rbdl_crange_set *s);
void rbdl_crange_set_destroy(struct rbdl_crange_set *s);

/* Ask for r: grants it now (r->grant runs on this thread before the call
 * returns) or when the ranges it overlaps are released.  A range never
 * passes an earlier waiter it overlaps, unless it is within a held one
 * (r->within, which must stay held until r is released). */
void rbdl_crange_acquire(struct rbdl_crange_set *s, struct rbdl_crange *r);

/* Take r if rbdl_crange_acquire would grant it now: true, and r is held
 * (its grant callback is not run: the caller goes on as granted); false,
 * and nothing was done. */
bool rbdl_crange_try_acquire(struct rbdl_crange_set *s,
			     struct rbdl_crange *r);

/* Release a held range; grants waiters it unblocks (their callbacks run
 * on this thread, after the set's lock is dropped). */
void rbdl_crange_release(struct rbdl_crange_set *s, struct rbdl_crange *r);

/* Whether any range is held or waiting (for tests and close). */
bool rbdl_crange_busy(struct rbdl_crange_set *s);

/*
 * An image's loaded encryption: its cipher, the size of the LUKS header
 * that I/O offsets skip (librbd 16.2 hides it: the image's size and every
 * offset are of the data area), and the range locks of its writes.
 * Created by rbd_encryption_format/_load, freed when the image closes.
 */
struct rbdl_crypt {
	struct rbdl_cipher cipher;
	uint64_t data_off;
	struct rbdl_crange_set ranges;
	/* Writes acknowledged early and not finished (io/crypt.c): while
	 * any is, reads take their block range too. */
	atomic_uint early;
	struct rbdl_crypt *retired;	/* one this replaced (format) */
};

/* A new encryption state, or NULL with *err (-ENOMEM, -ENOTSUP for a key
 * length librbd does not take, -EINVAL). */
struct rbdl_crypt *rbdl_crypt_new(const unsigned char *key, size_t key_len,
				  uint32_t block, uint64_t data_off, int *err);
/* Wipe and free k and those it retired; NULL is a no-op.  No I/O may be
 * in flight. */
void rbdl_crypt_free(struct rbdl_crypt *k);

#endif /* RBDL_CORE_CIPHER_H */
