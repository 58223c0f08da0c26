/*
 * plan.c - pure request-planning rules (plan.h).
 *
 * Threading: none; no state.
 */
#include "config.h"

#include "plan.h"

#include <errno.h>
#include <string.h>

uint32_t rbdl_plan_piece_segs(const struct rbdl_bufdesc *b,
			      const struct rbdl_piece *p, struct rbdl_seg *out)
{
	if (b->buf) {
		if (out) {
			out->ptr = b->buf + p->buf_off;
			out->obj_off = p->obj_off;
			out->len = p->len;
		}
		return 1;
	}
	/* Find the iovec holding p->buf_off, then walk. */
	uint64_t base = 0, off = p->buf_off, left = p->len, oo = p->obj_off;
	uint32_t n = 0;
	int i = 0;

	while (i < b->iovcnt && base + b->iov[i].iov_len <= off)
		base += b->iov[i++].iov_len;
	while (left && i < b->iovcnt) {
		uint64_t in = off - base;
		uint64_t take = b->iov[i].iov_len - in;

		if (take > left)
			take = left;
		if (take) {
			if (out) {
				out[n].ptr = (char *)b->iov[i].iov_base + in;
				out[n].obj_off = oo;
				out[n].len = take;
			}
			n++;
		}
		off += take;
		oo += take;
		left -= take;
		base += b->iov[i++].iov_len;
	}
	return n;
}

size_t rbdl_plan_prune_discard(uint64_t osz, uint64_t g,
			       struct rbdl_objext *objs, size_t nobjs)
{
	size_t kept = 0;

	if (g > osz)
		g = osz;
	for (size_t i = 0; i < nobjs; i++) {
		uint64_t off = objs[i].obj_off, end = off + objs[i].len;

		if (g < osz || end < osz) {
			off = (off + g - 1) / g * g;
			end = end / g * g;
			if (off >= end)
				continue;
		}
		objs[kept] = objs[i];
		objs[kept].obj_off = off;
		objs[kept].len = end - off;
		kept++;
	}
	return kept;
}

int rbdl_plan_thick_split_error(uint64_t off, uint64_t len, uint64_t size)
{
	uint64_t end = off + len;

	if (len <= 512)
		return 0;	/* a single write, never split */
	if (end < off)
		end = UINT64_MAX;
	uint64_t head_end = (off + 511) / 512 * 512, mid_end = end / 512 * 512;

	if (head_end > end)
		head_end = end;
	if (mid_end < head_end)
		mid_end = head_end;
	/* head [off, head_end), middle [head_end, mid_end), tail [mid_end,
	 * end): off < size here, so only the middle and tail can fail. */
	if ((mid_end > head_end && head_end >= size) ||
	    (end > mid_end && mid_end >= size))
		return -EINVAL;
	return 0;
}

bool rbdl_plan_all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

void rbdl_plan_fill_pattern(char *dst, uint64_t len, uint64_t req_off,
			    const char *pat, size_t plen)
{
	uint64_t phase = req_off % plen;

	while (len) {
		uint64_t take = plen - phase;

		if (take > len)
			take = len;
		memcpy(dst, pat + phase, take);
		dst += take;
		len -= take;
		phase = 0;
	}
}
