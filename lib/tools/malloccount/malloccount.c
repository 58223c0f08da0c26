/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * malloccount.c - LD_PRELOAD interposer that counts heap allocation calls.
 *
 * rbdlite-bench preloads this into every benchmark child so that it can
 * report allocator calls per I/O for the whole process (the application,
 * librbd or librbdlite, librados, libceph-common, libstdc++).  Counted:
 * malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc, and the C++ operator new family.  free() and operator delete
 * are forwarded without counting.
 *
 *   uint64_t rbdlite_malloccount_get(void);
 *
 * returns the number of calls counted so far in this process; find it
 * with dlsym(RTLD_DEFAULT, "rbdlite_malloccount_get").
 *
 * Every call is forwarded to the next definition in the lookup order
 * (dlsym(RTLD_NEXT)): glibc's malloc, or jemalloc's when libjemalloc.so.2
 * is preloaded after this library.  operator new is interposed as well
 * because jemalloc defines its own, which does not go through malloc();
 * with glibc, libstdc++'s operator new calls malloc(), and a thread-local
 * nesting flag keeps that from being counted twice.
 *
 * Counts are kept in cache-line-padded shards (one per thread, round
 * robin) with relaxed atomic adds, so counting costs a few nanoseconds and
 * no cache-line bouncing between threads.
 *
 * Bootstrap: dlsym() itself may call calloc()/malloc() before the real
 * functions are known; those calls are served from a small static arena
 * that is never returned to the real allocator.
 *
 * Build as a plain shared object (no sanitizers: an ASan runtime replaces
 * the allocator itself):
 *   cc -shared -fPIC -O2 -o librbdlite-malloccount.so malloccount.c -ldl
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MC_API __attribute__((visibility("default")))
#define MC_TLS __thread __attribute__((tls_model("initial-exec")))

/* ---- counting ----------------------------------------------------------- */

#define NSHARDS 64

static struct {
	_Atomic uint64_t n;
	char pad[64 - sizeof(uint64_t)];
} shards[NSHARDS] __attribute__((aligned(64)));

static _Atomic unsigned next_shard;
static MC_TLS unsigned my_shard = ~0u;
static MC_TLS int in_new;	/* inside an interposed operator new */

static inline void count(void)
{
	unsigned s = my_shard;

	if (__builtin_expect(s >= NSHARDS, 0)) {
		s = atomic_fetch_add_explicit(&next_shard, 1,
					      memory_order_relaxed) % NSHARDS;
		my_shard = s;
	}
	atomic_fetch_add_explicit(&shards[s].n, 1, memory_order_relaxed);
}

MC_API uint64_t rbdlite_malloccount_get(void)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < NSHARDS; i++)
		sum += atomic_load_explicit(&shards[i].n, memory_order_relaxed);
	return sum;
}

/* ---- the next definitions ----------------------------------------------- */

static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*new_)(size_t);
	void *(*new_arr)(size_t);
	void *(*new_nt)(size_t, const void *);
	void *(*new_arr_nt)(size_t, const void *);
	void *(*new_al)(size_t, size_t);
	void *(*new_arr_al)(size_t, size_t);
	void *(*new_al_nt)(size_t, size_t, const void *);
	void *(*new_arr_al_nt)(size_t, size_t, const void *);
} next;

static _Atomic int resolved;
/* volatile: the stores must happen although only callbacks read it */
static MC_TLS volatile int resolving;

static void *sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
	if (atomic_load_explicit(&resolved, memory_order_acquire))
		return;
	resolving = 1;
	/* Idempotent: racing threads store the same values. */
	*(void **)&next.malloc = sym("malloc");
	*(void **)&next.calloc = sym("calloc");
	*(void **)&next.realloc = sym("realloc");
	*(void **)&next.free = sym("free");
	*(void **)&next.posix_memalign = sym("posix_memalign");
	*(void **)&next.aligned_alloc = sym("aligned_alloc");
	*(void **)&next.memalign = sym("memalign");
	*(void **)&next.valloc = sym("valloc");
	*(void **)&next.pvalloc = sym("pvalloc");
	/* The C++ operator new family is looked up on first use (NEXT_NEW):
	 * libstdc++ may not be loaded yet, and a failed dlsym() allocates. */
	resolving = 0;
	if (next.malloc && next.calloc && next.realloc && next.free)
		atomic_store_explicit(&resolved, 1, memory_order_release);
}

__attribute__((constructor)) static void malloccount_init(void)
{
	resolve();
}

/* ---- bootstrap arena ---------------------------------------------------- */

#define ARENA_SIZE (64 * 1024)
#define ARENA_HDR 16		/* size_t header, keeps 16-byte alignment */

static unsigned char arena[ARENA_SIZE] __attribute__((aligned(64)));
static _Atomic size_t arena_used;

static int in_arena(const void *p)
{
	return (const unsigned char *)p >= arena &&
	       (const unsigned char *)p < arena + ARENA_SIZE;
}

static void *arena_alloc(size_t size, size_t align)
{
	size_t old, start, end;

	if (align < ARENA_HDR)
		align = ARENA_HDR;
	if (align & (align - 1) || size > ARENA_SIZE)
		return NULL;
	old = atomic_load_explicit(&arena_used, memory_order_relaxed);
	do {
		start = (old + ARENA_HDR + align - 1) & ~(align - 1);
		end = start + ((size + ARENA_HDR - 1) & ~(size_t)(ARENA_HDR - 1));
		if (end > ARENA_SIZE)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(&arena_used, &old, end,
							memory_order_relaxed,
							memory_order_relaxed));
	memcpy(arena + start - sizeof(size_t), &size, sizeof(size));
	return arena + start;	/* static storage: already zeroed */
}

static size_t arena_size(const void *p)
{
	size_t size;

	memcpy(&size, (const unsigned char *)p - sizeof(size_t), sizeof(size));
	return size;
}

/* True when the real functions are not known yet and this call comes from
 * inside dlsym() on this thread: it must be served from the arena. */
static inline int bootstrap(void)
{
	if (__builtin_expect(atomic_load_explicit(&resolved,
						  memory_order_acquire), 1))
		return 0;
	if (resolving)
		return 1;
	resolve();
	return !atomic_load_explicit(&resolved, memory_order_acquire);
}

/* ---- C allocator ---------------------------------------------------------- */

MC_API void *malloc(size_t size)
{
	if (bootstrap())
		return arena_alloc(size, 0);
	if (!in_new)
		count();
	return next.malloc(size);
}

MC_API void *calloc(size_t n, size_t size)
{
	if (bootstrap()) {
		if (size && n > SIZE_MAX / size)
			return NULL;
		return arena_alloc(n * size, 0);
	}
	if (!in_new)
		count();
	return next.calloc(n, size);
}

MC_API void *realloc(void *p, size_t size)
{
	if (p && in_arena(p)) {
		size_t old = arena_size(p);
		void *q = malloc(size);

		if (q)
			memcpy(q, p, old < size ? old : size);
		return q;
	}
	if (bootstrap())
		return p ? NULL : arena_alloc(size, 0);
	if (!in_new)
		count();
	return next.realloc(p, size);
}

MC_API void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (bootstrap())
		return;		/* cannot happen: p came from somewhere */
	next.free(p);
}

MC_API int posix_memalign(void **out, size_t align, size_t size)
{
	if (bootstrap()) {
		*out = arena_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	count();
	return next.posix_memalign(out, align, size);
}

MC_API void *aligned_alloc(size_t align, size_t size)
{
	if (bootstrap())
		return arena_alloc(size, align);
	count();
	return next.aligned_alloc(align, size);
}

MC_API void *memalign(size_t align, size_t size)
{
	if (bootstrap())
		return arena_alloc(size, align);
	count();
	return next.memalign(align, size);
}

MC_API void *valloc(size_t size)
{
	if (bootstrap())
		return arena_alloc(size, 4096);
	count();
	return next.valloc(size);
}

MC_API void *pvalloc(size_t size)
{
	if (bootstrap())
		return arena_alloc((size + 4095) & ~(size_t)4095, 4096);
	count();
	return next.pvalloc(size);
}

/* ---- C++ operator new (Itanium ABI names) ------------------------------- */

/*
 * If the next definition is still unknown (libstdc++ loaded after our
 * constructor ran), look it up again; that happens once.
 */
#define NEXT_NEW(field, name)						\
	do {								\
		if (__builtin_expect(!next.field, 0))			\
			*(void **)&next.field = sym(name);		\
	} while (0)

/* These are only called from C++ code, so no prototypes exist for them. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

MC_API void *_Znwm(size_t size)
{
	void *p;

	NEXT_NEW(new_, "_Znwm");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_(size);
	in_new--;
	return p;
}

MC_API void *_Znam(size_t size)
{
	void *p;

	NEXT_NEW(new_arr, "_Znam");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_arr(size);
	in_new--;
	return p;
}

MC_API void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt)
{
	void *p;

	NEXT_NEW(new_nt, "_ZnwmRKSt9nothrow_t");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_nt(size, nt);
	in_new--;
	return p;
}

MC_API void *_ZnamRKSt9nothrow_t(size_t size, const void *nt)
{
	void *p;

	NEXT_NEW(new_arr_nt, "_ZnamRKSt9nothrow_t");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_arr_nt(size, nt);
	in_new--;
	return p;
}

MC_API void *_ZnwmSt11align_val_t(size_t size, size_t align)
{
	void *p;

	NEXT_NEW(new_al, "_ZnwmSt11align_val_t");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_al(size, align);
	in_new--;
	return p;
}

MC_API void *_ZnamSt11align_val_t(size_t size, size_t align)
{
	void *p;

	NEXT_NEW(new_arr_al, "_ZnamSt11align_val_t");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_arr_al(size, align);
	in_new--;
	return p;
}

MC_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align,
					       const void *nt)
{
	void *p;

	NEXT_NEW(new_al_nt, "_ZnwmSt11align_val_tRKSt9nothrow_t");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_al_nt(size, align, nt);
	in_new--;
	return p;
}

MC_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align,
					       const void *nt)
{
	void *p;

	NEXT_NEW(new_arr_al_nt, "_ZnamSt11align_val_tRKSt9nothrow_t");
	if (!in_new)	/* libstdc++'s new[] calls new */
		count();
	in_new++;
	p = next.new_arr_al_nt(size, align, nt);
	in_new--;
	return p;
}
