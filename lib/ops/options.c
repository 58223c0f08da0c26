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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rbd/features.h"
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

/* ---- feature names (rbd_features_to_string/_from_string) ---------------- */

/* librbd's feature names, in the (alphabetical) order it lists them. */
static const struct {
	const char *name;
	uint64_t bit;
} feature_names[] = {
	{ RBD_FEATURE_NAME_DATA_POOL, RBD_FEATURE_DATA_POOL },
	{ RBD_FEATURE_NAME_DEEP_FLATTEN, RBD_FEATURE_DEEP_FLATTEN },
	{ "dirty-cache", RBD_FEATURE_DIRTY_CACHE },
	{ RBD_FEATURE_NAME_EXCLUSIVE_LOCK, RBD_FEATURE_EXCLUSIVE_LOCK },
	{ RBD_FEATURE_NAME_FAST_DIFF, RBD_FEATURE_FAST_DIFF },
	{ RBD_FEATURE_NAME_JOURNALING, RBD_FEATURE_JOURNALING },
	{ RBD_FEATURE_NAME_LAYERING, RBD_FEATURE_LAYERING },
	{ RBD_FEATURE_NAME_MIGRATING, RBD_FEATURE_MIGRATING },
	{ RBD_FEATURE_NAME_NON_PRIMARY, RBD_FEATURE_NON_PRIMARY },
	{ RBD_FEATURE_NAME_OBJECT_MAP, RBD_FEATURE_OBJECT_MAP },
	{ RBD_FEATURE_NAME_OPERATIONS, RBD_FEATURE_OPERATIONS },
	{ RBD_FEATURE_NAME_STRIPINGV2, RBD_FEATURE_STRIPINGV2 },
};
#define FEATURES_ALL (RBD_FEATURE_DIRTY_CACHE * 2 - 1)
/* Bits a numeric feature mask may not set (librbd drops them, and errs). */
#define FEATURES_INTERNAL (RBD_FEATURE_OPERATIONS | RBD_FEATURE_MIGRATING | \
			   RBD_FEATURE_NON_PRIMARY | RBD_FEATURE_DIRTY_CACHE)

int rbdl_features_format(uint64_t features, char *str_features, size_t *size)
{
	char buf[256];
	size_t len = 0;
	uint64_t left = features;

	if (!size)
		return -EINVAL;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]);
	     i++) {
		if (!(features & feature_names[i].bit))
			continue;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
					len ? "," : "", feature_names[i].name);
		left &= ~feature_names[i].bit;
	}
	if (left)
		return -EINVAL;
	if (*size <= len) {
		*size = len + 1;
		return -ERANGE;
	}
	if (!str_features)
		return -EINVAL;
	memcpy(str_features, buf, len + 1);
	*size = len + 1;
	return 0;
}

static bool feat_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* [s, e) without surrounding white space. */
static void feat_trim(const char **s, const char **e)
{
	while (*s < *e && feat_space(**s))
		(*s)++;
	while (*e > *s && feat_space((*e)[-1]))
		(*e)--;
}

int rbdl_features_parse(const char *str_features, uint64_t *features)
{
	const char *s = str_features, *e;
	uint64_t v = 0;
	bool bad = false, numeric = true;

	e = s + strlen(s);
	feat_trim(&s, &e);
	if (s == e) {
		*features = RBD_FEATURES_DEFAULT;
		return 0;
	}
	/* A number: optional sign, decimal digits (wrapping like librbd's
	 * conversion to an unsigned type). */
	{
		const char *p = s;
		bool neg = false;

		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		if (p == e)
			numeric = false;
		for (; p < e && numeric; p++) {
			if (*p < '0' || *p > '9')
				numeric = false;
			else
				v = v * 10 + (uint64_t)(*p - '0');
		}
		if (numeric && neg)
			v = -v;
	}
	if (numeric) {
		if (v & ~(uint64_t)FEATURES_ALL)
			bad = true;
		if (v & FEATURES_INTERNAL)
			bad = true;
		*features = v & FEATURES_ALL & ~(uint64_t)FEATURES_INTERNAL;
		return bad ? -EINVAL : 0;
	}
	v = 0;
	for (const char *t = s;;) {
		const char *c = memchr(t, ',', (size_t)(e - t));
		const char *ts = t, *te = c ? c : e;
		size_t i, n = sizeof(feature_names) / sizeof(feature_names[0]);

		feat_trim(&ts, &te);
		for (i = 0; i < n; i++) {
			if (strlen(feature_names[i].name) == (size_t)(te - ts) &&
			    !memcmp(feature_names[i].name, ts, (size_t)(te - ts)))
				break;
		}
		if (i < n)
			v += feature_names[i].bit;
		else
			bad = true;
		if (!c)
			break;
		t = c + 1;
	}
	*features = v;
	return bad ? -EINVAL : 0;
}
