/*
 * slab.c - fixed-size object caches with per-thread magazines.
 *
 * See slab.h for the picture.  The fast paths are rbdl_slab_alloc() and
 * rbdl_slab_free(): an array push or pop on the calling thread's magazine.
 * The slow paths move half a magazine between the magazine and the depot
 * under the depot mutex, and carve a new chunk when the depot is empty.
 *
 * Backing memory comes straight from mmap in chunks of 64 objects, so the
 * slabs never touch the application's heap.  (jemalloc is deliberately not
 * linked into the library: as a DT_NEEDED dependency of a library that is
 * LD_PRELOADed or linked into arbitrary programs it interposes some of the
 * allocator symbols -- C++ operator new/delete among them -- while glibc
 * keeps others, and the process aborts with mismatched frees; dlopen'ing it
 * privately fails because it uses static TLS.  jemalloc is offered to whole
 * processes instead, through the benchmark and the run wrapper.)
 */
#include "config.h"

#include "slab.h"
#include "internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#define MAG_SIZE 64
#define CHUNK_OBJS 64

struct rbdl_slab_chunk {
	struct rbdl_slab_chunk *next;
};

struct magazine {
	unsigned n;
	void *objs[MAG_SIZE];
};

struct tcache {
	struct magazine mags[RBDL_SLAB_MAX_CACHES];
	bool registered;
};

static __thread struct tcache tc;
static struct rbdl_slab *caches[RBDL_SLAB_MAX_CACHES];
static atomic_uint ncaches;
static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
/* Statistics only: relaxed ordering, nothing synchronises through it. */
static atomic_uint_fast64_t backing_allocs;


static void depot_put_locked(struct rbdl_slab *s, void *obj)
{
	*(void **)obj = s->depot;
	s->depot = obj;
	s->depot_count++;
}

static size_t chunk_bytes(const struct rbdl_slab *s)
{
	return RBDL_CACHELINE + CHUNK_OBJS * s->size;
}

/*
 * When every object ever carved is back in the depot, no thread holds one
 * (not even in a magazine), so the chunks can go back to the kernel; the
 * next allocation carves a fresh chunk.  Caller holds s->lock.
 */
static void release_if_idle_locked(struct rbdl_slab *s)
{
	struct rbdl_slab_chunk *c = s->chunks;

	if (s->keep || !s->total || s->depot_count != s->total)
		return;
	while (c) {
		struct rbdl_slab_chunk *next = c->next;

		munmap(c, chunk_bytes(s));
		c = next;
	}
	s->chunks = NULL;
	s->depot = NULL;
	s->depot_count = 0;
	s->total = 0;
}

/* Give the calling thread's cached objects back to their depots, and
 * release the backing memory of every cache that is then idle. */
static void drain_tcache(void)
{
	unsigned n = atomic_load_explicit(&ncaches, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		struct rbdl_slab *s = caches[i];
		struct magazine *m = &tc.mags[i];

		pthread_mutex_lock(&s->lock);
		while (m->n)
			depot_put_locked(s, m->objs[--m->n]);
		release_if_idle_locked(s);
		pthread_mutex_unlock(&s->lock);
	}
}

/* Thread exit (pthread key destructor). */
static void tcache_destroy(void *arg)
{
	(void)arg;
	drain_tcache();
	tc.registered = false;
}

void rbdl_slab_trim(void)
{
	drain_tcache();
}

static void tc_key_create(void)
{
	pthread_key_create(&tc_key, tcache_destroy);
}

int rbdl_slab_init(struct rbdl_slab *s)
{
	int r = 0;

	pthread_once(&tc_once, tc_key_create);
	pthread_mutex_lock(&init_lock);
	for (unsigned i = 0; i < atomic_load_explicit(&ncaches,
						      memory_order_relaxed); i++)
		if (caches[i] == s)
			goto out;
	unsigned n = atomic_load_explicit(&ncaches, memory_order_relaxed);
	if (n == RBDL_SLAB_MAX_CACHES || s->size < sizeof(void *)) {
		r = -EINVAL;
		goto out;
	}
	s->size = (s->size + RBDL_CACHELINE - 1) & ~(size_t)(RBDL_CACHELINE - 1);
	s->index = n;
	caches[n] = s;
	/* Release: a thread that sees the new count also sees caches[n]
	 * (pairs with the acquire load in tcache_destroy). */
	atomic_store_explicit(&ncaches, n + 1, memory_order_release);
out:
	pthread_mutex_unlock(&init_lock);
	return r;
}

static void *backing_alloc(size_t bytes)
{
	atomic_fetch_add_explicit(&backing_allocs, 1, memory_order_relaxed);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Carve a new chunk into the depot.  Caller holds s->lock. */
static int depot_grow_locked(struct rbdl_slab *s)
{
	size_t hdr = RBDL_CACHELINE;
	char *mem = backing_alloc(chunk_bytes(s));

	if (!mem)
		return -ENOMEM;
	struct rbdl_slab_chunk *c = (struct rbdl_slab_chunk *)mem;

	c->next = s->chunks;
	s->chunks = c;
	for (int i = CHUNK_OBJS - 1; i >= 0; i--)
		depot_put_locked(s, mem + hdr + (size_t)i * s->size);
	s->total += CHUNK_OBJS;
	return 0;
}

static void *slab_alloc_slow(struct rbdl_slab *s, struct magazine *m)
{
	if (!tc.registered) {
		/* Any non-NULL value makes the destructor run at exit. */
		pthread_setspecific(tc_key, &tc);
		tc.registered = true;
	}
	pthread_mutex_lock(&s->lock);
	if (!s->depot && depot_grow_locked(s) < 0) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	while (s->depot && m->n < MAG_SIZE / 2) {
		void *o = s->depot;

		s->depot = *(void **)o;
		s->depot_count--;
		m->objs[m->n++] = o;
	}
	pthread_mutex_unlock(&s->lock);
	return m->objs[--m->n];
}

void *rbdl_slab_alloc(struct rbdl_slab *s)
{
	struct magazine *m = &tc.mags[s->index];

	if (likely(m->n))
		return m->objs[--m->n];
	return slab_alloc_slow(s, m);
}

static void slab_free_slow(struct rbdl_slab *s, struct magazine *m)
{
	if (!tc.registered) {
		pthread_setspecific(tc_key, &tc);
		tc.registered = true;
	}
	pthread_mutex_lock(&s->lock);
	while (m->n > MAG_SIZE / 2)
		depot_put_locked(s, m->objs[--m->n]);
	pthread_mutex_unlock(&s->lock);
}

void rbdl_slab_free(struct rbdl_slab *s, void *obj)
{
	struct magazine *m = &tc.mags[s->index];

	if (unlikely(m->n == MAG_SIZE))
		slab_free_slow(s, m);
	m->objs[m->n++] = obj;
}

uint64_t rbdl_slab_backing_allocs(void)
{
	return atomic_load_explicit(&backing_allocs, memory_order_relaxed);
}
