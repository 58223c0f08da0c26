/*
 * log.c - librbdlite's diagnostics, one line each on stderr, prefixed
 * "librbdlite:".  Two levels:
 *   rbdl_err  what librbd too reports as an error (an object map flagged
 *             invalid, a lock that cannot be released or moved, a thread
 *             that cannot start, an API misuse that librbd would crash
 *             on): printed unless RBDLITE_QUIET=1;
 *   rbdl_log  the rest (refusals that the returned errno already says,
 *             protocol notes, forwarded calls): printed only with
 *             RBDLITE_DEBUG=1, so that a program sees on stderr only what
 *             librbd would print.
 * Thread-safe (one fprintf call per line, stdio locks); the environment
 * is read once.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool quiet, debug;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

static void env_init(void)
{
	quiet = env_on("RBDLITE_QUIET");
	debug = env_on("RBDLITE_DEBUG");
}

static void vlog(const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "librbdlite: %s\n", line);
}

void rbdl_err(const char *fmt, ...)
{
	va_list ap;

	pthread_once(&env_once, env_init);
	if (quiet)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void rbdl_log(const char *fmt, ...)
{
	va_list ap;

	pthread_once(&env_once, env_init);
	if (quiet || !debug)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}
