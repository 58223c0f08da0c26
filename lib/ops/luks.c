/*
 * luks.c - LUKS format and load of an image (luks.h).  With configure
 * --without-encryption both return -EOPNOTSUPP.
 */
#include "config.h"

#include "luks.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

#ifdef RBDLITE_ENCRYPTION

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libcryptsetup.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "core/cipher.h"
#include "core/internal.h"
#include "image/parent.h"
#include "image/refresh.h"
#include "io/io.h"

/* What is read first, and at most, while looking for the header and the
 * keyslot, retrying with more when libcryptsetup fails (librbd's
 * LoadRequest reads 288 KiB, 4 MiB, then up to the data offset); the
 * most is the header file's size, what libcryptsetup needs for a LUKS2
 * header and its keyslots (2 x 4 MiB of metadata + 128 MiB). */
#define LUKS_FIRST_READ (1u << 20)
#define LUKS_MAX_READ (136ull << 20)
#define LUKS_READ_PIECE (8u << 20)	/* hdr_feed's buffer */

/* The header as libcryptsetup sees it: an anonymous memory file. */
struct hdr {
	int fd;
	struct crypt_device *cd;
	uint64_t have;			/* image bytes copied into fd */
};

static void cs_log(int level, const char *msg, void *arg)
{
	(void)arg;
	/* librbd logs these at its debug levels (errors at 0, which
	 * librbdlite shows only with RBDLITE_DEBUG=1 like its other
	 * diagnostics librbd does not print by default). */
	if (level == CRYPT_LOG_ERROR || level == CRYPT_LOG_NORMAL)
		rbdl_log("libcryptsetup: %s", msg);
}

static int hdr_open(struct hdr *h)
{
	char path[64];
	int r;

	h->cd = NULL;
	h->have = 0;
	h->fd = memfd_create("rbdlite-luks", MFD_CLOEXEC);
	if (h->fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", h->fd);
	r = crypt_init(&h->cd, path);
	if (r < 0) {
		h->cd = NULL;
		return r;
	}
	crypt_set_log_callback(h->cd, cs_log, NULL);
	return 0;
}

static void hdr_close(struct hdr *h)
{
	if (h->cd)
		crypt_free(h->cd);
	if (h->fd >= 0)
		close(h->fd);
}

/* The options struct both formats take (librbd 16.2: the format options
 * for load too, its algorithm ignored). */
static int parse_opts(int format, const void *opts, size_t opts_size,
		      const char **type, int *alg, const char **pass,
		      size_t *pass_len)
{
	size_t want;

	switch (format) {
	case RBD_ENCRYPTION_FORMAT_LUKS1: {
		const rbd_encryption_luks1_format_options_t *o = opts;

		want = sizeof(*o);
		*type = CRYPT_LUKS1;
		if (opts_size != want || !o)
			return -EINVAL;
		*alg = o->alg;
		*pass = o->passphrase;
		*pass_len = o->passphrase_size;
		break;
	}
	case RBD_ENCRYPTION_FORMAT_LUKS2: {
		const rbd_encryption_luks2_format_options_t *o = opts;

		want = sizeof(*o);
		*type = CRYPT_LUKS2;
		if (opts_size != want || !o)
			return -EINVAL;
		*alg = o->alg;
		*pass = o->passphrase;
		*pass_len = o->passphrase_size;
		break;
	}
	default:
		return -EOPNOTSUPP;
	}
	/* librbd would read through a NULL passphrase. */
	if (!*pass && *pass_len)
		return -EINVAL;
	if (!*pass)
		*pass = "";
	return 0;
}

/* librbd refuses encryption on journaled images and below journaled
 * ancestors. */
static bool journaled_chain(struct rbdl_image *img)
{
	for (struct rbdl_image *i = img; i; i = rbdl_parent_view(i)->parent)
		if (atomic_load(&i->features) & RBD_FEATURE_JOURNALING)
			return true;
	return false;
}

/* Install k as the image's encryption; one it replaces stays allocated
 * (retired) until close: I/O that started under it may still use it. */
static void install(struct rbdl_image *img, struct rbdl_crypt *k)
{
	k->retired = atomic_load_explicit(&img->crypt, memory_order_relaxed);
	/* Release: the state k points to is complete before I/O sees it. */
	atomic_store_explicit(&img->crypt, k, memory_order_release);
}

/* Read image bytes [h->have, end) into the header file, in pieces of
 * LUKS_READ_PIECE, never past LUKS_MAX_READ: no keyslot libcryptsetup
 * writes lies further (librbd reads up to the header's data offset, which
 * a damaged header can put anywhere). */
static int hdr_feed(struct rbdl_image *img, struct hdr *h, uint64_t end)
{
	uint64_t size = atomic_load_explicit(&img->size, memory_order_acquire);
	char *buf;

	if (end > size)
		end = size;
	if (end > LUKS_MAX_READ)
		end = LUKS_MAX_READ;
	if (end <= h->have)
		return 0;
	buf = malloc(LUKS_READ_PIECE);
	if (!buf)
		return -ENOMEM;
	while (h->have < end) {
		uint64_t left = end - h->have;
		size_t len = left < LUKS_READ_PIECE ? (size_t)left
						    : LUKS_READ_PIECE;
		struct rbdl_io_args a = {
			.op = RBDL_OP_READ, .off = h->have, .len = len,
			.buf = buf, .raw = true,
		};
		ssize_t r = rbdl_io_sync(img, &a);

		if (r >= 0 && pwrite(h->fd, buf, (size_t)r,
				     (off_t)h->have) != r)
			r = -EIO;
		if (r <= 0) {
			free(buf);
			return r < 0 ? (int)r : 0;
		}
		h->have += (uint64_t)r;
	}
	free(buf);
	return 0;
}

int rbdl_luks_load(struct rbdl_image *img, int format, const void *opts,
		   size_t opts_size)
{
	const char *type, *pass;
	size_t pass_len, key_len = 64;
	int alg, r;
	unsigned char key[64];
	struct hdr h;

	r = parse_opts(format, opts, opts_size, &type, &alg, &pass, &pass_len);
	if (r < 0)
		return r;
	if (atomic_load_explicit(&img->crypt, memory_order_acquire))
		return -EEXIST;
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	if (journaled_chain(img))
		return -EOPNOTSUPP;
	r = hdr_open(&h);
	if (r < 0)
		goto out;
	/* libcryptsetup checks the device is as large as the header and
	 * its keyslots (LUKS2: 2 x 4 MiB of metadata + 128 MiB). */
	if (ftruncate(h.fd, (off_t)LUKS_MAX_READ) < 0) {
		r = -errno;
		goto out;
	}
	r = hdr_feed(img, &h, LUKS_FIRST_READ);
	if (r < 0)
		goto out;
	r = crypt_load(h.cd, type, NULL);
	if (r < 0 && h.have < LUKS_MAX_READ) {
		r = hdr_feed(img, &h, LUKS_MAX_READ);
		if (r == 0)
			r = crypt_load(h.cd, type, NULL);
	}
	if (r < 0)
		goto out;
	if (strcmp(crypt_get_cipher(h.cd), "aes") != 0 ||
	    strcmp(crypt_get_cipher_mode(h.cd), "xts-plain64") != 0) {
		r = -EOPNOTSUPP;
		goto out;
	}
	uint64_t data_off = crypt_get_data_offset(h.cd) << 9;

	r = crypt_volume_key_get(h.cd, CRYPT_ANY_SLOT, (char *)key, &key_len,
				 pass, pass_len);
	if (r < 0 && h.have < data_off) {
		/* The keyslot may lie past what was read. */
		r = hdr_feed(img, &h, data_off);
		if (r == 0)
			r = crypt_volume_key_get(h.cd, CRYPT_ANY_SLOT,
						 (char *)key, &key_len, pass,
						 pass_len);
	}
	if (r < 0)
		goto out;
	struct rbdl_crypt *k = rbdl_crypt_new(
		key, key_len, (uint32_t)crypt_get_sector_size(h.cd), data_off,
		&r);

	if (k) {
		install(img, k);
		r = 0;
	}
out:
	OPENSSL_cleanse(key, sizeof(key));
	hdr_close(&h);
	return r;
}

int rbdl_luks_format(struct rbdl_image *img, int format, const void *opts,
		     size_t opts_size)
{
	const char *type, *pass;
	size_t pass_len, key_len;
	int alg, r;
	unsigned char key[64];
	struct hdr h = { .fd = -1 };
	char *buf = NULL;

	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	if (rbdl_parent_view(img)->parent)
		return -EOPNOTSUPP;	/* librbd: cannot format a clone */
	r = parse_opts(format, opts, opts_size, &type, &alg, &pass, &pass_len);
	if (r < 0)
		return r;
	if (atomic_load(&img->features) & RBD_FEATURE_JOURNALING)
		return -EOPNOTSUPP;
	/* librbd fails the header write after the key derivation. */
	if (img->open_ro || atomic_load(&img->at_snap))
		return -EROFS;
	if (alg == RBD_ENCRYPTION_ALGORITHM_AES128)
		key_len = 32;
	else if (alg == RBD_ENCRYPTION_ALGORITHM_AES256)
		key_len = 64;
	else
		return -EINVAL;
	if (RAND_bytes(key, (int)key_len) != 1)
		return -EAGAIN;
	r = hdr_open(&h);
	if (r < 0)
		goto out;
	/* libcryptsetup's device size check */
	if (ftruncate(h.fd, 4096) < 0) {
		r = -errno;
		goto out;
	}
	uint32_t sector = format == RBD_ENCRYPTION_FORMAT_LUKS1 ? 512 : 4096;
	struct crypt_params_luks1 p1 = {
		.data_alignment = img->layout.object_size / 512,
	};
	struct crypt_params_luks2 p2 = {
		.data_alignment = img->layout.object_size / 512,
		.sector_size = sector,
	};

	r = crypt_format(h.cd, type, "aes", "xts-plain64", NULL, (char *)key,
			 key_len, format == RBD_ENCRYPTION_FORMAT_LUKS1
					  ? (void *)&p1
					  : (void *)&p2);
	if (r < 0)
		goto out;
	uint64_t data_off = crypt_get_data_offset(h.cd) << 9;

	if (data_off >= atomic_load(&img->size)) {
		r = -ENOSPC;
		goto out;
	}
	r = crypt_keyslot_add_by_volume_key(h.cd, CRYPT_ANY_SLOT, NULL, 0,
					    pass, pass_len);
	if (r < 0)
		goto out;
	struct rbdl_crypt *k = rbdl_crypt_new(key, key_len, sector, data_off,
					      &r);

	if (!k)
		goto out;
	struct stat st;

	if (fstat(h.fd, &st) < 0 || !(buf = malloc((size_t)st.st_size)) ||
	    pread(h.fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		r = buf ? -EIO : -ENOMEM;
		rbdl_crypt_free(k);
		goto out;
	}
	/* librbd shuts a loaded encryption down first: the header goes to
	 * the image's offset 0, not through the old key.  Its writes drain
	 * first. */
	struct rbdl_io_args drain = { .op = RBDL_OP_FLUSH, .own = true };
	struct rbdl_io_args fl = { .op = RBDL_OP_FLUSH, .own = true,
				   .raw = true };

	if (atomic_load_explicit(&img->crypt, memory_order_acquire)) {
		/* Through the old encryption: a barrier behind its writes. */
		r = (int)rbdl_io_sync(img, &drain);
		if (r < 0) {
			rbdl_crypt_free(k);
			goto out;
		}
	}
	struct rbdl_io_args w = {
		.op = RBDL_OP_WRITE, .off = 0, .len = (uint64_t)st.st_size,
		.buf = buf, .raw = true,
	};
	ssize_t wr = rbdl_io_sync(img, &w);

	if (wr >= 0)
		wr = rbdl_io_sync(img, &fl);
	if (wr < 0) {
		r = (int)wr;
		rbdl_crypt_free(k);
		goto out;
	}
	install(img, k);
	r = 0;
out:
	OPENSSL_cleanse(key, sizeof(key));
	free(buf);
	hdr_close(&h);
	return r;
}

#else /* !RBDLITE_ENCRYPTION */

int rbdl_luks_format(struct rbdl_image *img, int format, const void *opts,
		     size_t opts_size)
{
	(void)img, (void)format, (void)opts, (void)opts_size;
	return -EOPNOTSUPP;
}

int rbdl_luks_load(struct rbdl_image *img, int format, const void *opts,
		   size_t opts_size)
{
	(void)img, (void)format, (void)opts, (void)opts_size;
	return -EOPNOTSUPP;
}

#endif /* RBDLITE_ENCRYPTION */
