/*
 * config.c - the configuration list of an open image, as librbd 16.2's
 * api::Config<>::list(ImageCtx*) makes it (config_list.h).
 *
 * Role: the options are the rbd_* options of the Ceph configuration
 * schema minus those librbd never lists for an image (the table below).
 * Each starts with the client's value (rados_conf_get, librbd's
 * cct->_conf.get_val; source CONFIG), is overridden by the pool's "conf_"
 * metadata (source POOL: rbd_info in the pool's default namespace, read
 * through image/conf.h) and then by the image's (source IMAGE: the
 * header's metadata, read 64 keys at a time as librbd does, through
 * ops/info.h); override keys naming no listed option are ignored.  As in
 * librbd, a failed read of the image's metadata fails the call; pool
 * overrides that cannot be read count as none (image/conf.h; librbd fails
 * the call unless rbd_info is missing).  An option of the table the
 * client's librados does not know (another Ceph release) is left out, as
 * librbd lists its own schema only.
 *
 * Threading: synchronous on the caller's thread (see config_list.h); no
 * state is kept between calls.  Ownership: the array handed out and its
 * strings belong to the caller; everything else is freed before return.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config_list.h"
#include "info.h"

#include "image/conf.h"
#include "image/refresh.h"

#define CONF_PREFIX "conf_"
#define MD_PAGE 64		/* librbd's MAX_KEYS */
#define VALUE_MAX (1u << 20)	/* longest client value we read */

/*
 * Ceph 16.2.15's configuration schema: its rbd_* options with librbd's
 * image filter applied (EXCLUDE_OPTIONS, EXCLUDE_IMAGE_OPTIONS and
 * rbd_mirror_*), in byte order, exactly what the real librbd 16.2.15
 * lists for an image.  Regenerate with the python3-rbd of the release,
 * for any image IMG of a pool POOL (the names do not depend on the image
 * or its overrides); the assertion checks that rados_conf_get accepts
 * each name (python's Rados.conf_get answers None for unknown names):
 *
 *   python3 - POOL IMG <<'EOF'
 *   import ctypes, rados, rbd, sys
 *   c = rados.Rados(conffile=""); c.connect()
 *   i = rbd.Image(c.open_ioctx(sys.argv[1]), sys.argv[2])
 *   names = [o["name"] for o in i.config_list()]
 *   l = ctypes.CDLL("librados.so.2"); h = ctypes.c_void_p()
 *   l.rados_create(ctypes.byref(h), None); l.rados_conf_read_file(h, None)
 *   b = ctypes.create_string_buffer(4096)
 *   assert all(l.rados_conf_get(h, n.encode(), b, 4096) == 0 for n in names)
 *   print("\n".join('\t"%s",' % n for n in names))
 *   EOF
 */
static const char *const options[] = {
	"rbd_atime_update_interval",
	"rbd_balance_parent_reads",
	"rbd_balance_snap_reads",
	"rbd_blkin_trace_all",
	"rbd_blocklist_expire_seconds",
	"rbd_blocklist_on_break_lock",
	"rbd_cache",
	"rbd_cache_block_writes_upfront",
	"rbd_cache_max_dirty",
	"rbd_cache_max_dirty_age",
	"rbd_cache_max_dirty_object",
	"rbd_cache_policy",
	"rbd_cache_size",
	"rbd_cache_target_dirty",
	"rbd_cache_writethrough_until_flush",
	"rbd_clone_copy_on_read",
	"rbd_compression_hint",
	"rbd_concurrent_management_ops",
	"rbd_default_map_options",
	"rbd_default_snapshot_quiesce_mode",
	"rbd_disable_zero_copy_writes",
	"rbd_discard_granularity_bytes",
	"rbd_enable_alloc_hint",
	"rbd_invalidate_object_map_on_timeout",
	"rbd_io_scheduler",
	"rbd_io_scheduler_simple_max_delay",
	"rbd_journal_commit_age",
	"rbd_journal_max_concurrent_object_sets",
	"rbd_journal_max_payload_bytes",
	"rbd_journal_object_flush_age",
	"rbd_journal_object_flush_bytes",
	"rbd_journal_object_flush_interval",
	"rbd_journal_object_max_in_flight_appends",
	"rbd_journal_object_writethrough_until_flush",
	"rbd_localize_parent_reads",
	"rbd_localize_snap_reads",
	"rbd_mirroring_delete_delay",
	"rbd_mirroring_max_mirroring_snapshots",
	"rbd_mirroring_replay_delay",
	"rbd_mirroring_resync_after_disconnect",
	"rbd_move_parent_to_trash_on_remove",
	"rbd_move_to_trash_on_remove",
	"rbd_move_to_trash_on_remove_expire_seconds",
	"rbd_mtime_update_interval",
	"rbd_non_blocking_aio",
	"rbd_parent_cache_enabled",
	"rbd_persistent_cache_mode",
	"rbd_persistent_cache_path",
	"rbd_persistent_cache_size",
	"rbd_plugins",
	"rbd_qos_bps_burst",
	"rbd_qos_bps_burst_seconds",
	"rbd_qos_bps_limit",
	"rbd_qos_iops_burst",
	"rbd_qos_iops_burst_seconds",
	"rbd_qos_iops_limit",
	"rbd_qos_read_bps_burst",
	"rbd_qos_read_bps_burst_seconds",
	"rbd_qos_read_bps_limit",
	"rbd_qos_read_iops_burst",
	"rbd_qos_read_iops_burst_seconds",
	"rbd_qos_read_iops_limit",
	"rbd_qos_schedule_tick_min",
	"rbd_qos_write_bps_burst",
	"rbd_qos_write_bps_burst_seconds",
	"rbd_qos_write_bps_limit",
	"rbd_qos_write_iops_burst",
	"rbd_qos_write_iops_burst_seconds",
	"rbd_qos_write_iops_limit",
	"rbd_quiesce_notification_attempts",
	"rbd_read_from_replica_policy",
	"rbd_readahead_disable_after_bytes",
	"rbd_readahead_max_bytes",
	"rbd_readahead_trigger_requests",
	"rbd_request_timed_out_seconds",
	"rbd_skip_partial_discard",
	"rbd_sparse_read_threshold_bytes",
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static int cmp_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

/* The client's value of name, malloc'ed into *out: 0, or -ENOENT for an
 * option its librados does not know, or another negative errno. */
static int client_value(rados_t cl, const char *name, char **out)
{
	for (size_t len = 64;; len *= 4) {
		char *buf = malloc(len);
		int r;

		if (!buf)
			return -ENOMEM;
		r = rados_conf_get(cl, name, buf, len);
		if (r == 0) {
			*out = buf;
			return 0;
		}
		free(buf);
		if (r != -ENAMETOOLONG || len >= VALUE_MAX)
			return r;
	}
}

/* Give option name (if listed) value from source; 0 or -ENOMEM. */
static int override(rbd_config_option_t *v, const char *name,
		    const char *value, rbd_config_source_t source)
{
	const char *const *o = bsearch(name, options, N_OPTIONS,
				       sizeof(options[0]), cmp_name);
	char *dup;

	if (!o || !v[o - options].name)
		return 0;
	dup = strdup(value);
	if (!dup)
		return -ENOMEM;
	free(v[o - options].value);
	v[o - options].value = dup;
	v[o - options].source = source;
	return 0;
}

/* The image's "conf_" metadata over v: librbd's loop, MD_PAGE keys after
 * the last one seen, up to the first key without the prefix. */
static int image_overrides(struct rbdl_image *img, rbd_config_option_t *v)
{
	char *last = strdup(CONF_PREFIX);
	int r = last ? 0 : -ENOMEM;

	while (r == 0) {
		struct rbdl_md_pair *p;
		size_t cnt;
		bool more;

		r = rbdl_info_metadata_list(img, last, MD_PAGE, &p, &cnt);
		if (r < 0)
			break;
		more = cnt == MD_PAGE;
		for (size_t k = 0; k < cnt && r == 0; k++) {
			if (strncmp(p[k].key, CONF_PREFIX, strlen(CONF_PREFIX))) {
				more = false;
				break;
			}
			r = override(v, p[k].key + strlen(CONF_PREFIX),
				     p[k].value, RBD_CONFIG_SOURCE_IMAGE);
		}
		if (more && r == 0) {
			free(last);
			last = strdup(p[cnt - 1].key);
			if (!last)
				r = -ENOMEM;
		}
		rbdl_info_metadata_free(p, cnt);
		if (!more)
			break;
	}
	free(last);
	return r;
}

void rbdl_config_list_free(rbd_config_option_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

int rbdl_config_image_list(struct rbdl_image *img, rbd_config_option_t **out,
			   size_t *n)
{
	rbd_config_option_t *v;
	struct rbdl_conf pool;
	size_t kept = 0;
	int r;

	*out = NULL;
	*n = 0;
	r = rbdl_image_maybe_refresh(img);
	if (r < 0)
		return r;
	v = calloc(N_OPTIONS, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < N_OPTIONS; i++) {
		v[i].source = RBD_CONFIG_SOURCE_CONFIG;
		r = client_value(img->cluster, options[i], &v[i].value);
		if (r == -ENOENT)
			continue;	/* not in this client's schema */
		if (r < 0)
			goto fail;
		v[i].name = strdup(options[i]);
		if (!v[i].name) {
			r = -ENOMEM;
			goto fail;
		}
	}

	rbdl_conf_load(&pool, img->md_io, NULL);
	r = 0;
	for (uint32_t j = 0; j < pool.n && r == 0; j++)
		r = override(v, pool.ov[j].name, pool.ov[j].id,
			     RBD_CONFIG_SOURCE_POOL);
	rbdl_conf_free(&pool);
	if (r == 0)
		r = image_overrides(img, v);
	if (r < 0)
		goto fail;

	for (size_t i = 0; i < N_OPTIONS; i++)
		if (v[i].name)
			v[kept++] = v[i];
	*out = v;
	*n = kept;
	return 0;

fail:
	rbdl_config_list_free(v, N_OPTIONS);
	return r;
}
