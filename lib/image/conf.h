/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conf.h - effective values of rbd_* settings, layered as librbd 16.2
 * layers them: the client configuration (rados_conf_get), overridden by
 * the pool's "conf_" metadata (`rbd config pool set`: rbd_info in the
 * pool's default namespace), overridden by the image's "conf_" metadata
 * (`rbd config image set`: the image header).
 *
 * Threading and ownership: a struct rbdl_conf is a snapshot of the
 * overrides, owned by the caller from rbdl_conf_load() to rbdl_conf_free()
 * and used by one thread; the rados_t it reads the client configuration
 * from must outlive it.  Loading makes synchronous cls calls.
 */
#ifndef RBDLITE_CONF_H
#define RBDLITE_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include <rados/librados.h>

#include "proto/cls_rbd.h"

struct rbdl_conf {
	rados_t cl;
	struct rbdl_dir_entry *ov;	/* name = option, id = value; the
					 * image's first, then the pool's */
	uint32_t n;
};

/*
 * Load the overrides for the pool of io and, if header_oid is not NULL,
 * for the image with that header in io's namespace.  Overrides that cannot
 * be read (no rbd_info, an old OSD) are treated as absent, as librbd's
 * create does; never fails.
 */
void rbdl_conf_load(struct rbdl_conf *c, rados_ioctx_t io,
		    const char *header_oid);
void rbdl_conf_free(struct rbdl_conf *c);

/*
 * The value of option key into buf: an override if overrides is true and
 * one exists, else the client configuration.  0 or -ENOENT (buf empty).
 */
int rbdl_conf_get(const struct rbdl_conf *c, bool overrides, const char *key,
		  char *buf, size_t len);
/*
 * Numbers as Ceph's option parser reads them.  rbdl_conf_uint: an option
 * of type UINT (strict_si_cast: decimal, optional K/M/G/T/P/E suffix for
 * powers of 1000); rbdl_conf_size: type SIZE (strict_iec_cast: decimal,
 * optional K/M/G/T/P/E binary prefix, optionally followed by "i" or "B",
 * or a lone "B").  Negative values and values over INT64_MAX are refused.
 * An override that does not parse is ignored: the client's value is used,
 * as in librbd (its set_val fails).  def when the client's value is unset
 * or unparsable.
 */
uint64_t rbdl_conf_uint(const struct rbdl_conf *c, bool overrides,
			const char *key, uint64_t def);
uint64_t rbdl_conf_size(const struct rbdl_conf *c, bool overrides,
			const char *key, uint64_t def);
/* A bool option: "true"/"false" in any case, or an integer (non-zero is
 * true); unparsable overrides as above. */
bool rbdl_conf_bool(const struct rbdl_conf *c, bool overrides,
		    const char *key, bool def);

/* The pure parsers behind them (unit tested). */
bool rbdl_parse_uint(const char *s, uint64_t *out);
bool rbdl_parse_size(const char *s, uint64_t *out);
bool rbdl_parse_bool(const char *s, bool *out);

#endif
