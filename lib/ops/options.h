/*
 * options.h - image creation options (rbd_image_options_t), librbd's
 * typed key/value map.
 *
 * Role: store RBD_IMAGE_OPTION_* values with librbd 16.2's exact typing
 * rules (each known key is either a string or a uint64; anything else is
 * -EINVAL), so rbd_create4() and the rbd_image_options_* entry points can
 * share one implementation.  Pure: no cluster access, unit-tested alone.
 *
 * Threading: none; an option set is used by one thread at a time, as in
 * librbd (which does not lock its map either).
 *
 * Ownership: an option set owns copies of its string values; the caller
 * of rbdl_opts_new() frees it with rbdl_opts_free().  A stack instance may
 * be initialised with rbdl_opts_init() and must then be released with
 * rbdl_opts_clear().
 */
#ifndef RBDL_OPTIONS_H
#define RBDL_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* One past the highest RBD_IMAGE_OPTION_* (MIRROR_IMAGE_MODE = 13). */
#define RBDL_OPT_COUNT 14

enum rbdl_opt_type {
	RBDL_OPT_NONE = 0,	/* unknown key */
	RBDL_OPT_U64,
	RBDL_OPT_STR,
};

struct rbdl_opts {
	uint32_t set;			/* bit k: option k has a value */
	uint64_t u64[RBDL_OPT_COUNT];
	char *str[RBDL_OPT_COUNT];	/* malloc'ed, string options only */
};

/* The type of option id, RBDL_OPT_NONE if librbd does not know it. */
enum rbdl_opt_type rbdl_opt_type(int id);

void rbdl_opts_init(struct rbdl_opts *o);
/* calloc'ed empty set, NULL on ENOMEM. */
struct rbdl_opts *rbdl_opts_new(void);
/* Frees values and the set itself (NULL is a no-op). */
void rbdl_opts_free(struct rbdl_opts *o);
/* Unset everything (frees string values). */
void rbdl_opts_clear(struct rbdl_opts *o);
/* 1 if nothing is set, else 0. */
int rbdl_opts_is_empty(const struct rbdl_opts *o);

/* Set a value: 0, -EINVAL (unknown id or other type), -ENOMEM. */
int rbdl_opts_set_u64(struct rbdl_opts *o, int id, uint64_t v);
int rbdl_opts_set_str(struct rbdl_opts *o, int id, const char *v);
/* Get a value: 0, -EINVAL (unknown id or other type), -ENOENT (unset).
 * rbdl_opts_get_str returns a pointer into the set. */
int rbdl_opts_get_u64(const struct rbdl_opts *o, int id, uint64_t *v);
int rbdl_opts_get_str(const struct rbdl_opts *o, int id, const char **v);
/* Copy a string value as rbd_image_options_get_string: -E2BIG unless
 * strlen(value) < maxlen. */
int rbdl_opts_copy_str(const struct rbdl_opts *o, int id, char *out,
		       size_t maxlen);
/* Unset one: 0, -EINVAL (unknown id), -ENOENT (not set). */
int rbdl_opts_unset(struct rbdl_opts *o, int id);

/*
 * Feature bits as librbd's names (pure, like the options above).
 * rbdl_features_format: the comma-separated names (alphabetical) into buf
 * of *size bytes, *size set to the length needed with the NUL; -ERANGE if
 * it is too small, -EINVAL for a bit without a name.  rbdl_features_parse:
 * librbd::rbd_features_from_string -- trimmed; "" is RBD_FEATURES_DEFAULT;
 * a decimal mask loses unnamed and internal bits; else names, comma
 * separated and trimmed, summed; -EINVAL (with *out still set to what was
 * understood) when anything was dropped or unknown.
 */
int rbdl_features_format(uint64_t features, char *buf, size_t *size);
int rbdl_features_parse(const char *s, uint64_t *out);

#endif /* RBDL_OPTIONS_H */
