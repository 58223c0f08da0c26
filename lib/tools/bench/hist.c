/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hist.c - reading the log-linear latency histogram (bench.h has the
 * layout and hist_index(), which job threads call per I/O).
 *
 * A histogram is a plain array of H_BUCKETS counts in ns; these functions
 * only read it, so the caller owns it and decides about locking (the
 * parent reads merged copies, never a live one).
 */
#include "bench.h"

#include <math.h>

/* Midpoint of a bucket, in ns. */
static double hist_value(unsigned idx)
{
	unsigned k, shift;
	uint64_t sub;

	if (idx < H_SUB)
		return idx;
	k = idx - H_SUB;
	shift = k / H_HALF + 1;
	sub = k % H_HALF + H_HALF;
	return ((double)(sub << shift) +
		(double)(((sub + 1) << shift) - 1)) / 2;
}

double hist_percentile(const uint64_t *h, double pct)
{
	uint64_t total = 0, target, cum = 0;

	for (unsigned i = 0; i < H_BUCKETS; i++)
		total += h[i];
	if (!total)
		return NAN;
	target = (uint64_t)ceil(pct / 100.0 * (double)total);
	if (target < 1)
		target = 1;
	for (unsigned i = 0; i < H_BUCKETS; i++) {
		cum += h[i];
		if (cum >= target)
			return hist_value(i);
	}
	return hist_value(H_BUCKETS - 1);
}

double hist_mean(const uint64_t *h)
{
	double sum = 0;
	uint64_t total = 0;

	for (unsigned i = 0; i < H_BUCKETS; i++) {
		sum += hist_value(i) * (double)h[i];
		total += h[i];
	}
	return total ? sum / (double)total : NAN;
}
