/*
 * luks.h - rbd_encryption_format and rbd_encryption_load: the LUKS1/LUKS2
 * header at the start of an image, as librbd 16.2.15 writes and reads it.
 *
 * Role: the header is made and parsed by libcryptsetup on an anonymous
 * memory file, exactly as librbd does: format with cipher aes,
 * xts-plain64, a random volume key of 32 (AES-128) or 64 (AES-256) bytes,
 * data alignment of one object, LUKS2 sectors of 4096 bytes (LUKS1: 512),
 * one keyslot for the passphrase; the header is then written at offset 0
 * of the image.  Load reads the header through the data path (a clone's
 * falls through to its parent), asks libcryptsetup for the volume key and
 * installs the encryption (core/cipher.h) on the image: from then on the
 * image's I/O goes through io/crypt.h, its size is the data area's.
 *
 * Errors are librbd's: -EOPNOTSUPP for an unknown format, a journaled
 * image (or ancestor), formatting a clone, or a cipher other than
 * aes-xts-plain64; -EINVAL for an options size that is not the format's
 * struct, an unknown algorithm, or a header that is not the format's;
 * -EPERM for a wrong passphrase; -EEXIST for a second load; -ENOSPC for
 * an image smaller than the header; -EROFS for formatting a snapshot or
 * read-only handle.  Nothing is written unless format succeeds up to the
 * header write.
 *
 * Threading: synchronous, on the caller's thread (the key derivation
 * takes about a second, as with librbd); never on a librados callback
 * thread.  No I/O of the handle may be in flight during format (librbd's
 * rule too: it replaces the encryption under the I/O path).
 */
#ifndef RBDL_OPS_LUKS_H
#define RBDL_OPS_LUKS_H

#include <stddef.h>

#include "image/state.h"

int rbdl_luks_format(struct rbdl_image *img, int format, const void *opts,
		     size_t opts_size);
int rbdl_luks_load(struct rbdl_image *img, int format, const void *opts,
		   size_t opts_size);

#endif /* RBDL_OPS_LUKS_H */
