/*
 * stats.c - per-thread counter registry (see stats.h).
 *
 * Threading: the registry list and the totals of exited threads are
 * protected by reg_lock; counters themselves are single-writer atomics.
 */
#include "config.h"

#include "stats.h"

#include <pthread.h>

__thread struct rbdl_tstats rbdl_tstats;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rbdl_tstats *reg_head;
static uint64_t exited[RBDL_STAT_COUNT];
static pthread_key_t reg_key;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static void stats_thread_exit(void *arg)
{
	struct rbdl_tstats *t = arg, **pp;

	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_head; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	for (int i = 0; i < RBDL_STAT_COUNT; i++) {
		exited[i] += atomic_load_explicit(&t->v[i],
						  memory_order_relaxed);
		atomic_store_explicit(&t->v[i], 0, memory_order_relaxed);
	}
	t->registered = 0;
	pthread_mutex_unlock(&reg_lock);
}

static void reg_init(void)
{
	pthread_key_create(&reg_key, stats_thread_exit);
}

void rbdl_stats_register(void)
{
	pthread_once(&reg_once, reg_init);
	pthread_mutex_lock(&reg_lock);
	rbdl_tstats.next = reg_head;
	reg_head = &rbdl_tstats;
	rbdl_tstats.registered = 1;
	pthread_mutex_unlock(&reg_lock);
	pthread_setspecific(reg_key, &rbdl_tstats);
}

void rbdl_stats_read(uint64_t out[RBDL_STAT_COUNT])
{
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < RBDL_STAT_COUNT; i++)
		out[i] = exited[i];
	for (struct rbdl_tstats *t = reg_head; t; t = t->next)
		for (int i = 0; i < RBDL_STAT_COUNT; i++)
			out[i] += atomic_load_explicit(&t->v[i],
						       memory_order_relaxed);
	pthread_mutex_unlock(&reg_lock);
}
