/*
 * slab.h - fixed-size object caches with per-thread magazines.
 *
 * Role: every object librbdlite needs per I/O (completions, requests,
 * object sub-requests) comes from a slab, so the steady-state I/O path never
 * calls malloc/free.
 *
 * Design (jemalloc's tcache, reduced to one size per cache):
 *
 *     thread A (submitter)          thread B (librados callback)
 *     +-----------------+           +-----------------+
 *     | magazine [n/64] |           | magazine [n/64] |
 *     +--------+--------+           +--------+--------+
 *        refill|  ^ flush              refill|  ^ flush
 *              v  |  (half a magazine at a time, under depot lock)
 *     +---------------------------------------------------+
 *     | depot: singly linked free list, mutex-protected   |
 *     +---------------------------------------------------+
 *              ^ chunks of objects carved from backing memory
 *              | (anonymous mmap, never the application's heap)
 *
 * Allocation and free touch only the calling thread's magazine; an object
 * freed on another thread (the usual case: allocated by the submitter,
 * released on librados' callback thread) lands in that thread's magazine and
 * travels back through the depot in batches of half a magazine, so the depot
 * lock is taken at most once per 32 objects per thread.
 *
 * Threading: rbdl_slab_alloc/free are safe from any thread.  Magazines are
 * thread-local (__thread) and drained into the depot by a pthread key
 * destructor when the thread exits.  Backing chunks are reused while any
 * object of the cache is in use (the working set is bounded by the peak
 * number of I/Os in flight) and unmapped once every object is back in the
 * depot: checked when a thread exits and by rbdl_slab_trim() (image close);
 * never for a cache marked keep (handles the application holds).
 */
#ifndef RBDL_SLAB_H
#define RBDL_SLAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rbdl_slab_chunk;

struct rbdl_slab {
	const char *name;
	size_t size;		/* object size, a multiple of 64 */
	unsigned index;		/* magazine slot, assigned by rbdl_slab_init */
	pthread_mutex_t lock;	/* protects everything below */
	void *depot;		/* free objects, linked through word 0 */
	size_t depot_count;
	size_t total;		/* objects carved so far */
	struct rbdl_slab_chunk *chunks;
	/* Never unmap the chunks: the objects are handles given to the
	 * application (completions), which may touch one after releasing
	 * it (a double release is refused, not a fault). */
	bool keep;
};

#define RBDL_SLAB_MAX_CACHES 8

/* Define a cache; call rbdl_slab_init() once before first use (thread-safe,
 * idempotent through pthread_once in the callers' module init). */
#define RBDL_SLAB_INIT(nm, sz) \
	{ .name = (nm), .size = (sz), .lock = PTHREAD_MUTEX_INITIALIZER }
/* The same, for a cache whose chunks stay mapped (keep). */
#define RBDL_SLAB_INIT_KEEP(nm, sz) \
	{ .name = (nm), .size = (sz), .lock = PTHREAD_MUTEX_INITIALIZER, \
	  .keep = true }

int rbdl_slab_init(struct rbdl_slab *s);

/* Returns an uninitialised object of s->size bytes (64-byte aligned), or
 * NULL when out of memory. */
void *rbdl_slab_alloc(struct rbdl_slab *s);

/* Return an object obtained from rbdl_slab_alloc(s).  Any thread. */
void rbdl_slab_free(struct rbdl_slab *s, void *obj);

/* Drain the calling thread's magazines into the depots, then unmap the
 * chunks of every cache none of whose objects is in use or cached by
 * another thread.  Any thread; control path (rbd_close calls it). */
void rbdl_slab_trim(void);

/* Counters (process-wide, relaxed): how many times backing memory was
 * allocated (chunk refills).  Zero growth in steady state is the target. */
uint64_t rbdl_slab_backing_allocs(void);

#endif /* RBDL_SLAB_H */
