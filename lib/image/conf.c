/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conf.c - effective rbd_* settings: client configuration < pool
 * overrides < image overrides (librbd 16.2's ConfigProxy after
 * api::Config::apply_pool_overrides and ImageCtx::apply_metadata).
 *
 * Role: create/remove read their defaults through it (pool overrides),
 * open and refresh read the per-image settings of the data path through
 * it (image and pool overrides).  Threading and ownership: see conf.h.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/rados.h"
#include "conf.h"
#include "state.h"
#include "core/internal.h"

#define RBD_INFO "rbd_info"
#define CONF_PREFIX "conf_"
#define LIST_PAGE 1024

/*
 * Append the "conf_" metadata of oid to c->ov (keys stripped of the
 * prefix).  metadata_list returns keys after start_after in order, so the
 * walk stops at the first key past the prefix.
 */
static void load_overrides(struct rbdl_conf *c, rados_ioctx_t io,
			   const char *oid)
{
	char *last = NULL;

	for (;;) {
		uint8_t in[4400];	/* a key of up to ~4 KiB */
		long n = rbdl_encode_list_start(in, sizeof(in),
						last ? last : CONF_PREFIX,
						LIST_PAGE);
		struct rbdl_dir_entry *v, *nv;
		uint32_t cnt, kept = 0;
		char *out;
		size_t outlen;
		int r;

		if (n < 0)
			break;
		r = rbdl_cls_read(io, oid, "rbd", "metadata_list", in,
				  (size_t)n, &out, &outlen);
		if (r < 0)
			break;	/* none (ENOENT) or unreadable: no overrides */
		r = rbdl_decode_dir_list(out, outlen, &v, &cnt);
		rados_buffer_free(out);
		if (r < 0 || cnt == 0) {
			if (r == 0)
				free(v);
			break;
		}
		nv = realloc(c->ov, (c->n + cnt) * sizeof(*nv));
		if (!nv) {
			rbdl_dir_entries_free(v, cnt);
			break;
		}
		c->ov = nv;
		free(last);
		last = strdup(v[cnt - 1].name);
		for (uint32_t i = 0; i < cnt; i++) {
			size_t pl = strlen(CONF_PREFIX);

			if (strncmp(v[i].name, CONF_PREFIX, pl)) {
				free(v[i].name);
				free(v[i].id);
				continue;
			}
			memmove(v[i].name, v[i].name + pl,
				strlen(v[i].name) - pl + 1);
			c->ov[c->n + kept++] = v[i];
		}
		c->n += kept;
		free(v);
		if (kept < cnt || cnt < LIST_PAGE || !last)
			break;
	}
	free(last);
}

void rbdl_conf_load(struct rbdl_conf *c, rados_ioctx_t io,
		    const char *header_oid)
{
	rados_ioctx_t dio;

	c->cl = rados_ioctx_get_cluster(io);
	c->ov = NULL;
	c->n = 0;
	if (header_oid)
		load_overrides(c, io, header_oid);
	if (rbdl_ioctx_dup(c->cl, rados_ioctx_get_id(io), "", &dio) < 0)
		return;
	load_overrides(c, dio, RBD_INFO);
	rados_ioctx_destroy(dio);
}

void rbdl_conf_free(struct rbdl_conf *c)
{
	rbdl_dir_entries_free(c->ov, c->n);
	c->ov = NULL;
	c->n = 0;
}

int rbdl_conf_get(const struct rbdl_conf *c, bool overrides, const char *key,
		  char *buf, size_t len)
{
	if (overrides) {
		for (uint32_t i = 0; i < c->n; i++) {
			if (!strcmp(c->ov[i].name, key)) {
				snprintf(buf, len, "%s", c->ov[i].id);
				return 0;
			}
		}
	}
	if (rados_conf_get(c->cl, key, buf, len) < 0) {
		buf[0] = '\0';
		return -ENOENT;
	}
	return 0;
}

/* strtoll over the first n characters of s, all of them, base 10, not
 * negative (Ceph's strict_strtoll plus the unsigned check). */
static bool parse_dec(const char *s, size_t n, uint64_t *out)
{
	char buf[32], *end;
	long long v;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || end == buf || *end || v < 0)
		return false;
	*out = (uint64_t)v;
	return true;
}

bool rbdl_parse_uint(const char *s, uint64_t *out)
{
	static const char prefixes[] = "KMGTPE";
	size_t n = strlen(s);
	uint64_t v, scale = 1;

	if (n && strspn(s, "0123456789+-") != n) {
		const char *p = strchr(prefixes, s[n - 1]);

		if (!p)
			return false;
		for (long i = 0; i <= p - prefixes; i++)
			scale *= 1000;
		n--;
	}
	if (!parse_dec(s, n, &v) || v > (uint64_t)INT64_MAX / scale)
		return false;
	*out = v * scale;
	return true;
}

bool rbdl_parse_size(const char *s, uint64_t *out)
{
	size_t n = strlen(s), u = strspn(s, "0123456789+-");
	unsigned shift = 0;
	uint64_t v;

	if (u < n) {
		const char *unit = s + u;

		if (n - u > 2 || (n - u == 2 && unit[1] != 'i' &&
				  unit[1] != 'B') ||
		    (unit[0] == 'B' && n - u == 2))
			return false;
		switch (unit[0]) {
		case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		case 'T': shift = 40; break;
		case 'P': shift = 50; break;
		case 'E': shift = 60; break;
		case 'B': break;
		default: return false;
		}
		n = u;
	}
	if (!parse_dec(s, n, &v) || v > ((uint64_t)INT64_MAX >> shift))
		return false;
	*out = v << shift;
	return true;
}

bool rbdl_parse_bool(const char *s, bool *out)
{
	char *end;
	long v;

	if (!strcasecmp(s, "true") || !strcasecmp(s, "false")) {
		*out = !strcasecmp(s, "true");
		return true;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < INT_MIN || v > INT_MAX)
		return false;
	*out = v != 0;
	return true;
}

/* The value of key through parse (overrides first); an override the
 * option refuses is ignored (librbd: set_val fails, the client's value
 * stays); def when the client's value is unset or unparsable. */
static uint64_t conf_num(const struct rbdl_conf *c, bool overrides,
			 const char *key, uint64_t def,
			 bool (*parse)(const char *, uint64_t *))
{
	char buf[64];
	uint64_t v;

	if (rbdl_conf_get(c, overrides, key, buf, sizeof(buf)) == 0 &&
	    parse(buf, &v))
		return v;
	if (overrides)
		return conf_num(c, false, key, def, parse);
	return def;
}

uint64_t rbdl_conf_uint(const struct rbdl_conf *c, bool overrides,
			const char *key, uint64_t def)
{
	return conf_num(c, overrides, key, def, rbdl_parse_uint);
}

uint64_t rbdl_conf_size(const struct rbdl_conf *c, bool overrides,
			const char *key, uint64_t def)
{
	return conf_num(c, overrides, key, def, rbdl_parse_size);
}

/* rbdl_parse_bool as a number, for conf_num. */
static bool parse_bool_num(const char *s, uint64_t *out)
{
	bool b;

	if (!rbdl_parse_bool(s, &b))
		return false;
	*out = b;
	return true;
}

bool rbdl_conf_bool(const struct rbdl_conf *c, bool overrides,
		    const char *key, bool def)
{
	return conf_num(c, overrides, key, def, parse_bool_num) != 0;
}
