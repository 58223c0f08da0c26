/*
 * log.c - diagnostics for refusals and protocol surprises (control path
 * only).  Writes one line to stderr; RBDLITE_QUIET=1 silences it.
 * Thread-safe (one fprintf-family call per fragment, stdio locks).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rbdl_log(const char *fmt, ...)
{
	const char *q = getenv("RBDLITE_QUIET");
	char line[512];
	va_list ap;

	if (q && *q && strcmp(q, "0"))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "librbdlite: %s\n", line);
}
