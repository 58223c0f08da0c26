/*
 * join.h - a join counter: wait for a group of sub-operations sent in
 * parallel (edge reads, parent reads, snapshot map updates, zero chunks)
 * and keep the first error among them.
 *
 * pending counts the sub-operations in flight plus one guard reference
 * the issuer holds while it sends them, so the group cannot finish before
 * its last member is sent; the issuer drops the guard with rbdl_join_put
 * like any member.  Whoever drops the last reference (rbdl_join_put
 * returns true) continues the work, and sees every member's effects.
 *
 * Threading: any thread.  rbdl_join_start is the one call that must not
 * race with the others (the issuer calls it before sending anything).
 * Ownership: the struct lives inside the object it joins for.
 */
#ifndef RBDL_CORE_JOIN_H
#define RBDL_CORE_JOIN_H

#include <stdatomic.h>
#include <stdbool.h>

struct rbdl_join {
	atomic_int pending;	/* members in flight + the issuer's guard */
	atomic_int err;		/* their first error, 0 for none */
};

/* (Re)start j with n references (the guard included) and no error. */
static inline void rbdl_join_start(struct rbdl_join *j, int n)
{
	/* Relaxed: published by whatever hands j to the members (the
	 * submission of their operations). */
	atomic_store_explicit(&j->pending, n, memory_order_relaxed);
	atomic_store_explicit(&j->err, 0, memory_order_relaxed);
}

/* One more member, about to be sent (the guard keeps the count above
 * zero, so no one can finish in between). */
static inline void rbdl_join_add(struct rbdl_join *j)
{
	/* Relaxed: the count's last decrement (acq_rel) orders it. */
	atomic_fetch_add_explicit(&j->pending, 1, memory_order_relaxed);
}

/* Record r (< 0) if it is the first error. */
static inline void rbdl_join_error(struct rbdl_join *j, int r)
{
	int zero = 0;

	/* Relaxed: read by the last putter, after its acq_rel decrement,
	 * which every earlier put's release side precedes. */
	atomic_compare_exchange_strong_explicit(&j->err, &zero, r,
						memory_order_relaxed,
						memory_order_relaxed);
}

/* Drop one reference: true for the last one, which then sees every
 * member's data and error. */
static inline bool rbdl_join_put(struct rbdl_join *j)
{
	/* acq_rel: each put releases its member's writes; the last one
	 * acquires all of them. */
	return atomic_fetch_sub_explicit(&j->pending, 1,
					 memory_order_acq_rel) == 1;
}

/* A member that was counted but never sent: record r (0 for none) and
 * drop its reference (never the last: the guard is still held). */
static inline void rbdl_join_unsent(struct rbdl_join *j, int r)
{
	if (r < 0)
		rbdl_join_error(j, r);
	/* Relaxed: the guard keeps the count above zero. */
	atomic_fetch_sub_explicit(&j->pending, 1, memory_order_relaxed);
}

/* The first error so far: final once rbdl_join_put returned true. */
static inline int rbdl_join_result(struct rbdl_join *j)
{
	/* Relaxed: see rbdl_join_error. */
	return atomic_load_explicit(&j->err, memory_order_relaxed);
}

#endif /* RBDL_CORE_JOIN_H */
