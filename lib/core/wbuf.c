/*
 * wbuf.c - write-data copies (wbuf.h): a 64-byte header in front of the
 * payload records its size class, so rbdl_wbuf_free needs no length.
 *
 * Threading: the slabs are thread-safe (slab.h); nothing else is shared.
 */
#include "config.h"

#include "wbuf.h"

#include "slab.h"
#include "stats.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define WBUF_HDR 64	/* keeps the payload 64-byte aligned */

enum { CLASS_SMALL, CLASS_LARGE, CLASS_HEAP };

struct wbuf_hdr {
	uint32_t cls;
};

static struct rbdl_slab small_slab =
	RBDL_SLAB_INIT("wbuf-4k", WBUF_HDR + RBDL_WBUF_SMALL);
static struct rbdl_slab large_slab =
	RBDL_SLAB_INIT("wbuf-64k", WBUF_HDR + RBDL_WBUF_LARGE);
static pthread_once_t wbuf_once = PTHREAD_ONCE_INIT;

static void wbuf_init_once(void)
{
	rbdl_slab_init(&small_slab);
	rbdl_slab_init(&large_slab);
}

char *rbdl_wbuf_alloc(size_t len)
{
	struct wbuf_hdr *h;
	uint32_t cls;

	if (len > SIZE_MAX - WBUF_HDR)
		return NULL;
	pthread_once(&wbuf_once, wbuf_init_once);
	if (len <= RBDL_WBUF_SMALL) {
		h = rbdl_slab_alloc(&small_slab);
		cls = CLASS_SMALL;
	} else if (len <= RBDL_WBUF_LARGE) {
		h = rbdl_slab_alloc(&large_slab);
		cls = CLASS_LARGE;
	} else {
		void *p = NULL;

		h = posix_memalign(&p, WBUF_HDR, WBUF_HDR + len) ? NULL : p;
		cls = CLASS_HEAP;
		if (h)
			rbdl_stat_inc(RBDL_STAT_MALLOCS_HOT_PATH, 1);
	}
	if (!h)
		return NULL;
	h->cls = cls;
	rbdl_stat_inc(RBDL_STAT_WRITE_COPIES, 1);
	rbdl_stat_inc(RBDL_STAT_WRITE_COPY_BYTES, len);
	return (char *)h + WBUF_HDR;
}

void rbdl_wbuf_free(char *p)
{
	struct wbuf_hdr *h;

	if (!p)
		return;
	h = (struct wbuf_hdr *)(p - WBUF_HDR);
	switch (h->cls) {
	case CLASS_SMALL:
		rbdl_slab_free(&small_slab, h);
		break;
	case CLASS_LARGE:
		rbdl_slab_free(&large_slab, h);
		break;
	default:
		free(h);
		break;
	}
}
