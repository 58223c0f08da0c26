/*
 * crypt.h - I/O on an image whose LUKS encryption is loaded.
 *
 * Role: between the API's image requests and the data path (io.h), as
 * librbd 16.2's crypto layers: offsets and sizes are of the data area
 * (the LUKS header at the start of the image is hidden), write data is
 * encrypted and read data decrypted in whole blocks (core/cipher.h), a
 * write or compare-and-write that covers part of a block reads the edge
 * blocks, merges and writes whole blocks (read-modify-write), a
 * write-same is written as the data it repeats, and discard and
 * write-zeroes pass to the data path, which stores zeros (a block of
 * zeros reads back as zeros).
 *
 * Ordering: every request that changes data holds its block range
 * (core/cipher.h) from before its reads until its write completed, so a
 * read-modify-write never loses a concurrent write of the same handle to
 * another part of its blocks; a flush waits for every such request before
 * it (it holds the whole range), then flushes the data path.  Reads take
 * no range.
 *
 * Buffers: the caller's write data is copied (encrypted) before submit
 * returns; the caller's read buffers and iovec targets are written at
 * completion (the iovec array itself is copied).  Requests come from a
 * slab (a vector read's, with its copied iovec array, from the heap), the
 * encrypted data and edge blocks from core/wbuf.h's slab classes (up to
 * 64 KiB); aligned reads decrypt in the caller's buffer.
 *
 * Threading: as io.h.  Completions run the next step on the thread that
 * delivered the data path's completion.
 */
#ifndef RBDL_IO_CRYPT_H
#define RBDL_IO_CRYPT_H

#include <sys/types.h>

#include "core/cipher.h"
#include "io.h"

/* The size an encrypted image shows: raw minus the header. */
static inline uint64_t rbdl_crypt_size(const struct rbdl_crypt *k,
				       uint64_t raw)
{
	return raw > k->data_off ? raw - k->data_off : 0;
}

/* The image's size as its users see it: the data area's when encryption
 * is loaded. */
static inline uint64_t rbdl_image_size(struct rbdl_image *img)
{
	uint64_t raw = atomic_load_explicit(&img->size, memory_order_acquire);
	struct rbdl_crypt *k = atomic_load_explicit(&img->crypt,
						    memory_order_acquire);

	return k ? rbdl_crypt_size(k, raw) : raw;
}

/* rbdl_io_submit's contract, for an image with encryption k loaded; a's
 * offsets are of the data area. */
int rbdl_crypt_submit(struct rbdl_image *img, struct rbdl_crypt *k,
		      struct rbdl_comp *c, const struct rbdl_io_args *a);

#endif /* RBDL_IO_CRYPT_H */
