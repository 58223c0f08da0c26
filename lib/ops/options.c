/*
 * options.c - image creation options (see options.h for role, threading
 * and ownership).
 *
 * librbd 16.2 keeps a std::map<int, variant<string, uint64>> and checks
 * every key against a fixed key -> type table: set and get with the wrong
 * type or an unknown key fail with -EINVAL before looking at the map, get
 * and unset of an absent key fail with -ENOENT.  The table is the same
 * here; the map is a bit mask plus two arrays.
 */
#include "config.h"

#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/librbd.h"

static const unsigned char opt_types[RBDL_OPT_COUNT] = {
	[RBD_IMAGE_OPTION_FORMAT] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_FEATURES] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_ORDER] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_STRIPE_UNIT] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_STRIPE_COUNT] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_JOURNAL_ORDER] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_JOURNAL_SPLAY_WIDTH] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_JOURNAL_POOL] = RBDL_OPT_STR,
	[RBD_IMAGE_OPTION_FEATURES_SET] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_FEATURES_CLEAR] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_DATA_POOL] = RBDL_OPT_STR,
	[RBD_IMAGE_OPTION_FLATTEN] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_CLONE_FORMAT] = RBDL_OPT_U64,
	[RBD_IMAGE_OPTION_MIRROR_IMAGE_MODE] = RBDL_OPT_U64,
};

enum rbdl_opt_type rbdl_opt_type(int id)
{
	if (id < 0 || id >= RBDL_OPT_COUNT)
		return RBDL_OPT_NONE;
	return (enum rbdl_opt_type)opt_types[id];
}

static inline int is_set(const struct rbdl_opts *o, int id)
{
	return (o->set >> id) & 1u;
}

void rbdl_opts_init(struct rbdl_opts *o)
{
	memset(o, 0, sizeof(*o));
}

struct rbdl_opts *rbdl_opts_new(void)
{
	return calloc(1, sizeof(struct rbdl_opts));
}

void rbdl_opts_clear(struct rbdl_opts *o)
{
	for (int i = 0; i < RBDL_OPT_COUNT; i++) {
		free(o->str[i]);
		o->str[i] = NULL;
		o->u64[i] = 0;
	}
	o->set = 0;
}

void rbdl_opts_free(struct rbdl_opts *o)
{
	if (!o)
		return;
	rbdl_opts_clear(o);
	free(o);
}

int rbdl_opts_is_empty(const struct rbdl_opts *o)
{
	return o->set == 0;
}

int rbdl_opts_set_u64(struct rbdl_opts *o, int id, uint64_t v)
{
	if (rbdl_opt_type(id) != RBDL_OPT_U64)
		return -EINVAL;
	o->u64[id] = v;
	o->set |= 1u << id;
	return 0;
}

int rbdl_opts_set_str(struct rbdl_opts *o, int id, const char *v)
{
	char *s;

	if (rbdl_opt_type(id) != RBDL_OPT_STR || !v)
		return -EINVAL;
	s = strdup(v);
	if (!s)
		return -ENOMEM;
	free(o->str[id]);
	o->str[id] = s;
	o->set |= 1u << id;
	return 0;
}

int rbdl_opts_get_u64(const struct rbdl_opts *o, int id, uint64_t *v)
{
	if (rbdl_opt_type(id) != RBDL_OPT_U64)
		return -EINVAL;
	if (!is_set(o, id))
		return -ENOENT;
	*v = o->u64[id];
	return 0;
}

int rbdl_opts_get_str(const struct rbdl_opts *o, int id, const char **v)
{
	if (rbdl_opt_type(id) != RBDL_OPT_STR)
		return -EINVAL;
	if (!is_set(o, id))
		return -ENOENT;
	*v = o->str[id];
	return 0;
}

int rbdl_opts_copy_str(const struct rbdl_opts *o, int id, char *out,
		       size_t maxlen)
{
	const char *s;
	int r = rbdl_opts_get_str(o, id, &s);
	size_t n;

	if (r < 0)
		return r;
	n = strlen(s);
	if (n >= maxlen)
		return -E2BIG;
	if (!out)
		return -EINVAL;
	memcpy(out, s, n + 1);
	return 0;
}

int rbdl_opts_unset(struct rbdl_opts *o, int id)
{
	if (rbdl_opt_type(id) == RBDL_OPT_NONE)
		return -EINVAL;
	if (!is_set(o, id))
		return -ENOENT;
	free(o->str[id]);
	o->str[id] = NULL;
	o->u64[id] = 0;
	o->set &= ~(1u << id);
	return 0;
}
