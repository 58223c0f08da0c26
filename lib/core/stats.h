/*
 * stats.h - process-wide counters behind rbdlite_get_stats().
 *
 * Counters are per thread (a __thread array, plain increments by the owning
 * thread, read racily-but-atomically by rbdlite_get_stats()), so counting
 * costs no shared cache line on the I/O path.  A thread's counts are folded
 * into the global totals when it exits.
 */
#ifndef RBDL_STATS_H
#define RBDL_STATS_H

#include <stdatomic.h>
#include <stdint.h>

enum rbdl_stat {
	RBDL_STAT_IOS_SUBMITTED,
	RBDL_STAT_IOS_COMPLETED,
	RBDL_STAT_MALLOCS_HOT_PATH,
	RBDL_STAT_CALLBACK_BATCHES,
	RBDL_STAT_CALLBACKS_RUN,
	RBDL_STAT_EVENTFD_WRITES,
	RBDL_STAT_WRITE_COPIES,
	RBDL_STAT_WRITE_COPY_BYTES,
	RBDL_STAT_SCHED_HELD,
	RBDL_STAT_SCHED_RUNS,
	RBDL_STAT_COUNT
};

struct rbdl_tstats {
	/* Written only by the owning thread (relaxed), read by anyone. */
	atomic_uint_fast64_t v[RBDL_STAT_COUNT];
	struct rbdl_tstats *next;
	int registered;
};

extern __thread struct rbdl_tstats rbdl_tstats;
void rbdl_stats_register(void);

static inline void rbdl_stat_inc(enum rbdl_stat s, uint64_t n)
{
	if (__builtin_expect(!rbdl_tstats.registered, 0))
		rbdl_stats_register();
	/* Single writer: a relaxed load + store is an atomic increment. */
	atomic_store_explicit(&rbdl_tstats.v[s],
			      atomic_load_explicit(&rbdl_tstats.v[s],
						   memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Sum over all threads, live and exited. */
void rbdl_stats_read(uint64_t out[RBDL_STAT_COUNT]);

#endif /* RBDL_STATS_H */
