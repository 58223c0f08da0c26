/*
 * wbuf.h - write-data copies: the buffers that hold a caller's write data
 * once the data path keeps it past the submit call (the write waits for
 * the exclusive lock, an object map update, a copy-up, a due refresh, or
 * a journaled image's real handle).  librbd 16.2 copies every write
 * (rbd_disable_zero_copy_writes=true, its default); librbdlite copies only
 * what it does not hand to librados before the call returns, since
 * librados copies on submission.
 *
 * Memory: payloads up to RBDL_WBUF_SMALL and RBDL_WBUF_LARGE bytes come
 * from two slab classes (per-thread magazines: no lock, no malloc in
 * steady state); larger ones are one heap allocation each.  Every copy is
 * counted (RBDL_STAT_WRITE_COPIES, RBDL_STAT_WRITE_COPY_BYTES).
 *
 * Threading: any thread may allocate or free; a buffer is owned by whoever
 * allocated it until rbdl_wbuf_free (typically: allocated by the
 * submitter, freed by the request's completion on a librados thread).
 */
#ifndef RBDL_CORE_WBUF_H
#define RBDL_CORE_WBUF_H

#include <stddef.h>

#define RBDL_WBUF_SMALL 4096
#define RBDL_WBUF_LARGE 65536

/* A buffer of len bytes (len > 0), 64-byte aligned, uninitialised; NULL
 * when out of memory.  Counted as one copy of len bytes. */
char *rbdl_wbuf_alloc(size_t len);

/* Release a buffer of rbdl_wbuf_alloc; NULL is a no-op. */
void rbdl_wbuf_free(char *p);

#endif /* RBDL_CORE_WBUF_H */
