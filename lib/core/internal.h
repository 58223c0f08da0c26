/*
 * internal.h - small helpers shared by every librbdlite source file.
 *
 * Nothing here is exported.  RBDL_API marks the definitions of the
 * librbd-compatible rbd_* entry points and the rbdlite_* extensions; the
 * library is compiled with -fvisibility=hidden and linked with an anonymous
 * version script, so those are the only dynamic symbols.
 */
#ifndef RBDL_INTERNAL_H
#define RBDL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define RBDL_API __attribute__((visibility("default")))

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define RBDL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define RBDL_CACHELINE 64

/* Diagnostics (log.c): rbdl_err for what librbd reports as an error too
 * (printed unless RBDLITE_QUIET=1), rbdl_log for the rest (printed only
 * with RBDLITE_DEBUG=1). */
void rbdl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rbdl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* RBDL_INTERNAL_H */
