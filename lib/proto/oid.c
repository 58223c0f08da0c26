/*
 * oid.c - RBD object names (oid.h).  One formatter; pure, reentrant.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "cls_rbd.h"
#include "oid.h"

__attribute__((format(printf, 3, 4))) static int fmt(char *buf, size_t cap,
						      const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, cap, f, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int rbdl_oid_id(char *buf, size_t cap, const char *name)
{
	return fmt(buf, cap, "rbd_id.%s", name);
}

int rbdl_oid_v1_header(char *buf, size_t cap, const char *name)
{
	return fmt(buf, cap, "%s.rbd", name);
}

int rbdl_oid_header(char *buf, size_t cap, const char *id)
{
	return fmt(buf, cap, "rbd_header.%s", id);
}

int rbdl_oid_object_map(char *buf, size_t cap, const char *id, uint64_t snap)
{
	if (snap == RBDL_NOSNAP)
		return fmt(buf, cap, "rbd_object_map.%s", id);
	return fmt(buf, cap, "rbd_object_map.%s.%016" PRIx64, id, snap);
}

int rbdl_oid_data_prefix(char *buf, size_t cap, int64_t pool, const char *id)
{
	if (pool >= 0)
		return fmt(buf, cap, "rbd_data.%" PRId64 ".%s", pool, id);
	return fmt(buf, cap, "rbd_data.%s", id);
}

int rbdl_oid_data(char *buf, size_t cap, const char *prefix, uint64_t objno)
{
	return fmt(buf, cap, "%s.%016" PRIx64, prefix, objno);
}
