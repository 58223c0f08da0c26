/*
 * rbd_delegated.c - the rbd_* functions librbdlite forwards to the real
 * librbd: the pool-level long tail (trash, migration, mirroring, groups,
 * namespaces, pool metadata, pool statistics, the pool's configuration
 * list) and the image-level calls of those families (mirroring of one
 * image, migration source spec).  The image's configuration list is
 * native (api/rbd_info.c).
 *
 * Why forwarded: none of these is on the data path or touches state of an
 * open librbdlite image that the real librbd cannot see for itself; librbd
 * does them well and they are rare.  What crosses is only what the real
 * librbd can understand: rados_ioctx_t (a librados object), strings,
 * plain structs and arrays it fills and frees itself (its own _cleanup
 * functions, forwarded too).  An image-level call runs on a short-lived
 * real handle of the same image (real.h: RBDL_FORWARD_IMAGE), and our
 * image is refreshed afterwards; image options are copied into a real
 * options object.  The asynchronous mirroring calls run the synchronous
 * call on the control context's callback lane (core/ctl.h) and complete
 * the caller's completion.
 * Without a loadable real librbd every call here returns -EOPNOTSUPP
 * (void ones do nothing) after a one-line diagnostic.  A NULL I/O context
 * or pool-stats object is refused with -EINVAL before forwarding (the real
 * librbd would dereference it).
 *
 * Threading: as the real librbd's calls; nothing here keeps state.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "api/real.h"
#include "api/whole.h"
#include "core/completion.h"
#include "core/ctl.h"
#include "core/internal.h"
#include "image/open.h"
#include "image/state.h"
#include "rbd/librbd.h"

/* The forwarding bodies name deprecated functions (rbd_mirror_peer_*,
 * rbd_mirror_image_get_status...) to take their type. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* ---- trash ----------------------------------------------------------------- */

RBDL_API int rbd_trash_move(rados_ioctx_t io, const char *name, uint64_t delay)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_move, io, name, delay);
}

RBDL_API int rbd_trash_get(rados_ioctx_t io, const char *id,
			   rbd_trash_image_info_t *info)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_get, io, id, info);
}

RBDL_API void rbd_trash_get_cleanup(rbd_trash_image_info_t *info)
{
	RBDL_FORWARD_VOID(rbd_trash_get_cleanup, info);
}

RBDL_API int rbd_trash_list(rados_ioctx_t io,
			    rbd_trash_image_info_t *trash_entries,
			    size_t *num_entries)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_list, io, trash_entries, num_entries);
}

RBDL_API void rbd_trash_list_cleanup(rbd_trash_image_info_t *trash_entries,
				     size_t num_entries)
{
	RBDL_FORWARD_VOID(rbd_trash_list_cleanup, trash_entries, num_entries);
}

RBDL_API int rbd_trash_purge(rados_ioctx_t io, time_t expire_ts,
			     float threshold)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_purge, io, expire_ts, threshold);
}

RBDL_API int rbd_trash_purge_with_progress(rados_ioctx_t io, time_t expire_ts,
					   float threshold,
					   librbd_progress_fn_t cb,
					   void* cbdata)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_purge_with_progress, io, expire_ts, threshold, cb,
		     cbdata);
}

RBDL_API int rbd_trash_remove(rados_ioctx_t io, const char *id, bool force)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_remove, io, id, force);
}

RBDL_API int rbd_trash_remove_with_progress(rados_ioctx_t io, const char *id,
					    bool force, librbd_progress_fn_t cb,
					    void *cbdata)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_remove_with_progress, io, id, force, cb, cbdata);
}

RBDL_API int rbd_trash_restore(rados_ioctx_t io, const char *id,
			       const char *name)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_trash_restore, io, id, name);
}

/* ---- migration ------------------------------------------------------------- */

/* The options are librbdlite's: copied into a real options object. */
RBDL_API int rbd_migration_prepare(rados_ioctx_t ioctx, const char *image_name,
				   rados_ioctx_t dest_ioctx,
				   const char *dest_image_name,
				   rbd_image_options_t opts)
{
	RBDL_FORWARD_OPTS(rbd_migration_prepare, opts, ioctx, image_name,
			  dest_ioctx, dest_image_name, real_opts_);
}

RBDL_API int rbd_migration_prepare_import(const char *source_spec,
					  rados_ioctx_t dest_ioctx,
					  const char *dest_image_name,
					  rbd_image_options_t opts)
{
	RBDL_FORWARD_OPTS(rbd_migration_prepare_import, opts, source_spec,
			  dest_ioctx, dest_image_name, real_opts_);
}

RBDL_API int rbd_migration_execute(rados_ioctx_t ioctx, const char *image_name)
{
	if (!ioctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_migration_execute, ioctx, image_name);
}

RBDL_API int rbd_migration_execute_with_progress(rados_ioctx_t ioctx,
						 const char *image_name,
						 librbd_progress_fn_t cb,
						 void *cbdata)
{
	if (!ioctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_migration_execute_with_progress, ioctx, image_name, cb, cbdata);
}

RBDL_API int rbd_migration_abort(rados_ioctx_t ioctx, const char *image_name)
{
	if (!ioctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_migration_abort, ioctx, image_name);
}

RBDL_API int rbd_migration_abort_with_progress(rados_ioctx_t ioctx,
					       const char *image_name,
					       librbd_progress_fn_t cb,
					       void *cbdata)
{
	if (!ioctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_migration_abort_with_progress, ioctx, image_name, cb, cbdata);
}

RBDL_API int rbd_migration_commit(rados_ioctx_t ioctx, const char *image_name)
{
	if (!ioctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_migration_commit, ioctx, image_name);
}

RBDL_API int rbd_migration_commit_with_progress(rados_ioctx_t ioctx,
						const char *image_name,
						librbd_progress_fn_t cb,
						void *cbdata)
{
	if (!ioctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_migration_commit_with_progress, ioctx, image_name, cb, cbdata);
}

RBDL_API int rbd_migration_status(rados_ioctx_t ioctx, const char *image_name,
				  rbd_image_migration_status_t *status,
				  size_t status_size)
{
	if (!ioctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_migration_status, ioctx, image_name, status, status_size);
}

RBDL_API void rbd_migration_status_cleanup( rbd_image_migration_status_t *status)
{
	RBDL_FORWARD_VOID(rbd_migration_status_cleanup, status);
}

RBDL_API int rbd_get_migration_source_spec(rbd_image_t image, char* source_spec,
					   size_t* max_len)
{
	if (!max_len && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_get_migration_source_spec, image, source_spec,
		    max_len);
	RBDL_FORWARD_IMAGE(rbd_get_migration_source_spec, image, source_spec, max_len);
}

/* ---- mirroring: pool, peers, site, status lists ---------------------------- */

RBDL_API int rbd_mirror_site_name_get(rados_t cluster, char *name,
				      size_t *max_len)
{
	RBDL_FORWARD(rbd_mirror_site_name_get, cluster, name, max_len);
}

RBDL_API int rbd_mirror_site_name_set(rados_t cluster, const char *name)
{
	RBDL_FORWARD(rbd_mirror_site_name_set, cluster, name);
}

RBDL_API int rbd_mirror_mode_get(rados_ioctx_t io_ctx,
				 rbd_mirror_mode_t *mirror_mode)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_mode_get, io_ctx, mirror_mode);
}

RBDL_API int rbd_mirror_mode_set(rados_ioctx_t io_ctx,
				 rbd_mirror_mode_t mirror_mode)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_mode_set, io_ctx, mirror_mode);
}

RBDL_API int rbd_mirror_uuid_get(rados_ioctx_t io_ctx, char *uuid,
				 size_t *max_len)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_uuid_get, io_ctx, uuid, max_len);
}

RBDL_API int rbd_mirror_peer_bootstrap_create( rados_ioctx_t io_ctx,
					      char *token, size_t *max_len)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_bootstrap_create, io_ctx, token, max_len);
}

RBDL_API int rbd_mirror_peer_bootstrap_import( rados_ioctx_t io_ctx,
					      rbd_mirror_peer_direction_t direction,
					      const char *token)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_bootstrap_import, io_ctx, direction, token);
}

RBDL_API int rbd_mirror_peer_site_add( rados_ioctx_t io_ctx, char *uuid,
				      size_t uuid_max_length,
				      rbd_mirror_peer_direction_t direction,
				      const char *site_name,
				      const char *client_name)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_add, io_ctx, uuid, uuid_max_length, direction,
		     site_name, client_name);
}

RBDL_API int rbd_mirror_peer_site_set_name( rados_ioctx_t io_ctx,
					   const char *uuid,
					   const char *site_name)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_set_name, io_ctx, uuid, site_name);
}

RBDL_API int rbd_mirror_peer_site_set_client_name( rados_ioctx_t io_ctx,
						  const char *uuid,
						  const char *client_name)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_set_client_name, io_ctx, uuid, client_name);
}

RBDL_API int rbd_mirror_peer_site_set_direction( rados_ioctx_t io_ctx,
						const char *uuid,
						rbd_mirror_peer_direction_t direction)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_set_direction, io_ctx, uuid, direction);
}

RBDL_API int rbd_mirror_peer_site_remove( rados_ioctx_t io_ctx,
					 const char *uuid)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_remove, io_ctx, uuid);
}

RBDL_API int rbd_mirror_peer_site_list( rados_ioctx_t io_ctx,
				       rbd_mirror_peer_site_t *peers,
				       int *max_peers)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_list, io_ctx, peers, max_peers);
}

RBDL_API void rbd_mirror_peer_site_list_cleanup( rbd_mirror_peer_site_t *peers,
						int max_peers)
{
	RBDL_FORWARD_VOID(rbd_mirror_peer_site_list_cleanup, peers, max_peers);
}

RBDL_API int rbd_mirror_peer_site_get_attributes( rados_ioctx_t p,
						 const char *uuid, char *keys,
						 size_t *max_key_len,
						 char *values,
						 size_t *max_value_len,
						 size_t *key_value_count)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_get_attributes, p, uuid, keys, max_key_len,
		     values, max_value_len, key_value_count);
}

RBDL_API int rbd_mirror_peer_site_set_attributes( rados_ioctx_t p,
						 const char *uuid,
						 const char *keys,
						 const char *values,
						 size_t key_value_count)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_site_set_attributes, p, uuid, keys, values,
		     key_value_count);
}

RBDL_API int rbd_mirror_image_global_status_list( rados_ioctx_t io_ctx,
						 const char *start_id,
						 size_t max, char **image_ids,
						 rbd_mirror_image_global_status_t *images,
						 size_t *len)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_image_global_status_list, io_ctx, start_id, max,
		     image_ids, images, len);
}

RBDL_API void rbd_mirror_image_global_status_list_cleanup( char **image_ids,
							  rbd_mirror_image_global_status_t *images,
							  size_t len)
{
	RBDL_FORWARD_VOID(rbd_mirror_image_global_status_list_cleanup, image_ids,
			  images, len);
}

RBDL_API int rbd_mirror_peer_add( rados_ioctx_t io_ctx, char *uuid,
				 size_t uuid_max_length,
				 const char *cluster_name,
				 const char *client_name)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_add, io_ctx, uuid, uuid_max_length, cluster_name,
		     client_name);
}

RBDL_API int rbd_mirror_peer_remove( rados_ioctx_t io_ctx, const char *uuid)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_remove, io_ctx, uuid);
}

RBDL_API int rbd_mirror_peer_list( rados_ioctx_t io_ctx,
				  rbd_mirror_peer_t *peers, int *max_peers)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_list, io_ctx, peers, max_peers);
}

RBDL_API void rbd_mirror_peer_list_cleanup( rbd_mirror_peer_t *peers,
					   int max_peers)
{
	RBDL_FORWARD_VOID(rbd_mirror_peer_list_cleanup, peers, max_peers);
}

RBDL_API int rbd_mirror_peer_set_client( rados_ioctx_t io_ctx, const char *uuid,
					const char *client_name)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_set_client, io_ctx, uuid, client_name);
}

RBDL_API int rbd_mirror_peer_set_cluster( rados_ioctx_t io_ctx,
					 const char *uuid,
					 const char *cluster_name)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_set_cluster, io_ctx, uuid, cluster_name);
}

RBDL_API int rbd_mirror_peer_get_attributes( rados_ioctx_t p, const char *uuid,
					    char *keys, size_t *max_key_len,
					    char *values, size_t *max_value_len,
					    size_t *key_value_count)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_get_attributes, p, uuid, keys, max_key_len, values,
		     max_value_len, key_value_count);
}

RBDL_API int rbd_mirror_peer_set_attributes( rados_ioctx_t p, const char *uuid,
					    const char *keys,
					    const char *values,
					    size_t key_value_count)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_peer_set_attributes, p, uuid, keys, values,
		     key_value_count);
}

RBDL_API int rbd_mirror_image_status_list( rados_ioctx_t io_ctx,
					  const char *start_id, size_t max,
					  char **image_ids,
					  rbd_mirror_image_status_t *images,
					  size_t *len)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_image_status_list, io_ctx, start_id, max, image_ids,
		     images, len);
}

RBDL_API void rbd_mirror_image_status_list_cleanup( char **image_ids,
						   rbd_mirror_image_status_t *images,
						   size_t len)
{
	RBDL_FORWARD_VOID(rbd_mirror_image_status_list_cleanup, image_ids, images, len);
}

RBDL_API int rbd_mirror_image_status_summary( rados_ioctx_t io_ctx,
					     rbd_mirror_image_status_state_t *states,
					     int *counts, size_t *maxlen)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_image_status_summary, io_ctx, states, counts, maxlen);
}

RBDL_API int rbd_mirror_image_instance_id_list(rados_ioctx_t io_ctx,
					       const char *start_id, size_t max,
					       char **image_ids,
					       char **instance_ids, size_t *len)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_image_instance_id_list, io_ctx, start_id, max,
		     image_ids, instance_ids, len);
}

RBDL_API void rbd_mirror_image_instance_id_list_cleanup(char **image_ids,
							char **instance_ids,
							size_t len)
{
	RBDL_FORWARD_VOID(rbd_mirror_image_instance_id_list_cleanup, image_ids,
			  instance_ids, len);
}

RBDL_API int rbd_mirror_image_info_list( rados_ioctx_t io_ctx,
					rbd_mirror_image_mode_t *mode_filter,
					const char *start_id, size_t max,
					char **image_ids,
					rbd_mirror_image_mode_t *mode_entries,
					rbd_mirror_image_info_t *info_entries,
					size_t *num_entries)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_mirror_image_info_list, io_ctx, mode_filter, start_id, max,
		     image_ids, mode_entries, info_entries, num_entries);
}

RBDL_API void rbd_mirror_image_info_list_cleanup( char **image_ids,
						 rbd_mirror_image_info_t *info_entries,
						 size_t num_entries)
{
	RBDL_FORWARD_VOID(rbd_mirror_image_info_list_cleanup, image_ids, info_entries,
			  num_entries);
}

/* ---- mirroring of one image ------------------------------------------------ */

RBDL_API int rbd_mirror_image_enable(rbd_image_t image)
{
	RBDL_ON_WHOLE(rbd_mirror_image_enable, image);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_enable, image);
}

RBDL_API int rbd_mirror_image_enable2(rbd_image_t image,
				      rbd_mirror_image_mode_t mode)
{
	RBDL_ON_WHOLE(rbd_mirror_image_enable2, image, mode);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_enable2, image, mode);
}

RBDL_API int rbd_mirror_image_disable(rbd_image_t image, bool force)
{
	RBDL_ON_WHOLE(rbd_mirror_image_disable, image, force);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_disable, image, force);
}

RBDL_API int rbd_mirror_image_promote(rbd_image_t image, bool force)
{
	RBDL_ON_WHOLE(rbd_mirror_image_promote, image, force);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_promote, image, force);
}

RBDL_API int rbd_mirror_image_demote(rbd_image_t image)
{
	RBDL_ON_WHOLE(rbd_mirror_image_demote, image);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_demote, image);
}

RBDL_API int rbd_mirror_image_resync(rbd_image_t image)
{
	RBDL_ON_WHOLE(rbd_mirror_image_resync, image);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_resync, image);
}

RBDL_API int rbd_mirror_image_create_snapshot(rbd_image_t image,
					      uint64_t *snap_id)
{
	if (!snap_id && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_mirror_image_create_snapshot, image, snap_id);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_create_snapshot, image, snap_id);
}

RBDL_API int rbd_mirror_image_create_snapshot2(rbd_image_t image,
					       uint32_t flags,
					       uint64_t *snap_id)
{
	if (!snap_id && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_mirror_image_create_snapshot2, image, flags, snap_id);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_create_snapshot2, image, flags, snap_id);
}

RBDL_API int rbd_mirror_image_get_info(rbd_image_t image,
				       rbd_mirror_image_info_t *mirror_image_info,
				       size_t info_size)
{
	if (!mirror_image_info && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_mirror_image_get_info, image, mirror_image_info,
		    info_size);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_get_info, image, mirror_image_info,
			   info_size);
}

RBDL_API void rbd_mirror_image_get_info_cleanup( rbd_mirror_image_info_t *mirror_image_info)
{
	RBDL_FORWARD_VOID(rbd_mirror_image_get_info_cleanup, mirror_image_info);
}

RBDL_API int rbd_mirror_image_get_mode(rbd_image_t image,
				       rbd_mirror_image_mode_t *mode)
{
	if (!mode && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_mirror_image_get_mode, image, mode);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_get_mode, image, mode);
}

RBDL_API int rbd_mirror_image_get_global_status( rbd_image_t image,
						rbd_mirror_image_global_status_t *mirror_image_global_status,
						size_t status_size)
{
	if (!mirror_image_global_status && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_mirror_image_get_global_status, image,
		    mirror_image_global_status, status_size);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_get_global_status, image,
			   mirror_image_global_status, status_size);
}

RBDL_API void rbd_mirror_image_global_status_cleanup( rbd_mirror_image_global_status_t *mirror_image_global_status)
{
	RBDL_FORWARD_VOID(rbd_mirror_image_global_status_cleanup,
			  mirror_image_global_status);
}

RBDL_API int rbd_mirror_image_get_status( rbd_image_t image,
					 rbd_mirror_image_status_t *mirror_image_status,
					 size_t status_size)
{
	if (!mirror_image_status && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_mirror_image_get_status, image, mirror_image_status,
		    status_size);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_get_status, image, mirror_image_status,
			   status_size);
}

RBDL_API int rbd_mirror_image_get_instance_id(rbd_image_t image,
					      char *instance_id,
					      size_t *id_max_length)
{
	if (!id_max_length && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_mirror_image_get_instance_id, image, instance_id,
		    id_max_length);
	RBDL_FORWARD_IMAGE(rbd_mirror_image_get_instance_id, image, instance_id,
			   id_max_length);
}

/* ---- asynchronous mirroring of one image ------------------------------------ */

/*
 * One asynchronous mirroring call: the synchronous real call as a
 * one-shot job on the control context's callback lane (rare calls; the
 * internal lane never waits for them), then the caller's completion.  rbd_close of the image waits for the armed
 * completion, so img stays valid until rbdl_comp_complete().
 */
enum mirror_aio_op {
	MA_PROMOTE,
	MA_DEMOTE,
	MA_GET_INFO,
	MA_GET_MODE,
	MA_GET_GLOBAL_STATUS,
	MA_GET_STATUS,
	MA_CREATE_SNAPSHOT,
};

struct mirror_aio {
	struct rbdl_ctl_task task;	/* one-shot, on the callback lane */
	enum mirror_aio_op op;
	rbd_image_t image;	/* ours: the sync call forwards it */
	struct rbdl_comp *comp;
	bool force;
	uint32_t flags;
	void *out;		/* info, mode, status or snap id */
	size_t size;
};

static int mirror_aio_run(struct mirror_aio *m)
{
	switch (m->op) {
	case MA_PROMOTE:
		return rbd_mirror_image_promote(m->image, m->force);
	case MA_DEMOTE:
		return rbd_mirror_image_demote(m->image);
	case MA_GET_INFO:
		return rbd_mirror_image_get_info(m->image, m->out, m->size);
	case MA_GET_MODE:
		return rbd_mirror_image_get_mode(m->image, m->out);
	case MA_GET_GLOBAL_STATUS:
		return rbd_mirror_image_get_global_status(m->image, m->out,
							  m->size);
	case MA_GET_STATUS:
		return rbd_mirror_image_get_status(m->image, m->out, m->size);
	case MA_CREATE_SNAPSHOT:
		return rbd_mirror_image_create_snapshot2(m->image, m->flags,
							 m->out);
	}
	return -EINVAL;
}

static void mirror_aio_job(struct rbdl_ctl_task *t)
{
	struct mirror_aio *m = container_of(t, struct mirror_aio, task);
	int r = mirror_aio_run(m);

	rbdl_comp_complete(m->comp, r);
	free(m);
	rbdl_ctl_put();		/* mirror_aio_start's */
}

static int mirror_aio_start(struct mirror_aio *tmpl, rbd_completion_t c)
{
	struct rbdl_image *img = rbdl_image_from_user(tmpl->image);
	struct rbdl_comp *comp = rbdl_comp_from_user(c);
	struct mirror_aio *m;
	int r;

	if (!img || !comp)
		return -EINVAL;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	*m = *tmpl;
	m->comp = comp;
	r = rbdl_comp_arm(comp, &img->dl, true);
	if (r < 0) {
		free(m);
		return r;
	}
	/* The synchronous call runs on the control context's callback lane
	 * (core/ctl.h): it may wait for our lock's hand-over, which runs on
	 * the other lane. */
	rbdl_ctl_get();
	r = rbdl_ctl_submit_once(&m->task, RBDL_CTL_CALLBACK, mirror_aio_job);
	if (r < 0) {
		/* Armed: report the failure through the completion. */
		free(m);
		rbdl_ctl_put();
		rbdl_comp_complete_deferred(comp, r, img->defer_io);
	}
	return 0;
}

RBDL_API int rbd_aio_mirror_image_promote(rbd_image_t image, bool force,
					  rbd_completion_t c)
{
	RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_promote, image, c, force,
		    WHOLE_RC);
	return mirror_aio_start(&(struct mirror_aio){ .op = MA_PROMOTE,
				.image = image, .force = force }, c);
}

RBDL_API int rbd_aio_mirror_image_demote(rbd_image_t image, rbd_completion_t c)
{
	RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_demote, image, c, WHOLE_RC);
	return mirror_aio_start(&(struct mirror_aio){ .op = MA_DEMOTE,
				.image = image }, c);
}

RBDL_API int rbd_aio_mirror_image_get_info(rbd_image_t image,
					   rbd_mirror_image_info_t *mirror_image_info,
					   size_t info_size, rbd_completion_t c)
{
	if (!mirror_image_info && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_get_info, image, c,
		    mirror_image_info, info_size, WHOLE_RC);
	return mirror_aio_start(&(struct mirror_aio){ .op = MA_GET_INFO,
				.image = image, .out = mirror_image_info,
				.size = info_size }, c);
}

RBDL_API int rbd_aio_mirror_image_get_mode(rbd_image_t image,
					   rbd_mirror_image_mode_t *mode,
					   rbd_completion_t c)
{
	if (!mode && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_get_mode, image, c, mode,
		    WHOLE_RC);
	return mirror_aio_start(&(struct mirror_aio){ .op = MA_GET_MODE,
				.image = image, .out = mode }, c);
}

RBDL_API int rbd_aio_mirror_image_get_global_status(
	rbd_image_t image,
	rbd_mirror_image_global_status_t *mirror_global_image_status,
	size_t status_size, rbd_completion_t c)
{
	if (!mirror_global_image_status && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_get_global_status, image, c,
		    mirror_global_image_status, status_size, WHOLE_RC);
	return mirror_aio_start(&(struct mirror_aio){
				.op = MA_GET_GLOBAL_STATUS, .image = image,
				.out = mirror_global_image_status,
				.size = status_size }, c);
}

RBDL_API int rbd_aio_mirror_image_get_status(
	rbd_image_t image, rbd_mirror_image_status_t *mirror_image_status,
	size_t status_size, rbd_completion_t c)
{
	if (!mirror_image_status && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_get_status, image, c,
		    mirror_image_status, status_size, WHOLE_RC);
	return mirror_aio_start(&(struct mirror_aio){ .op = MA_GET_STATUS,
				.image = image, .out = mirror_image_status,
				.size = status_size }, c);
}

RBDL_API int rbd_aio_mirror_image_create_snapshot(rbd_image_t image,
						  uint32_t flags,
						  uint64_t *snap_id,
						  rbd_completion_t c)
{
	if (!snap_id && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE_AIO(rbd_aio_mirror_image_create_snapshot, image, c,
		    flags, snap_id, WHOLE_RC);
	return mirror_aio_start(&(struct mirror_aio){
				.op = MA_CREATE_SNAPSHOT, .image = image,
				.flags = flags, .out = snap_id }, c);
}

/* ---- groups ---------------------------------------------------------------- */

RBDL_API int rbd_group_create(rados_ioctx_t p, const char *name)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_create, p, name);
}

RBDL_API int rbd_group_remove(rados_ioctx_t p, const char *name)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_remove, p, name);
}

RBDL_API int rbd_group_list(rados_ioctx_t p, char *names, size_t *size)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_list, p, names, size);
}

RBDL_API int rbd_group_rename(rados_ioctx_t p, const char *src_name,
			      const char *dest_name)
{
	if (!p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_rename, p, src_name, dest_name);
}


RBDL_API int rbd_group_image_add(rados_ioctx_t group_p, const char *group_name,
				 rados_ioctx_t image_p, const char *image_name)
{
	if (!group_p || !image_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_image_add, group_p, group_name, image_p, image_name);
}

RBDL_API int rbd_group_image_remove(rados_ioctx_t group_p,
				    const char *group_name,
				    rados_ioctx_t image_p,
				    const char *image_name)
{
	if (!group_p || !image_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_image_remove, group_p, group_name, image_p, image_name);
}

RBDL_API int rbd_group_image_remove_by_id(rados_ioctx_t group_p,
					  const char *group_name,
					  rados_ioctx_t image_p,
					  const char *image_id)
{
	if (!group_p || !image_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_image_remove_by_id, group_p, group_name, image_p,
		     image_id);
}

RBDL_API int rbd_group_image_list(rados_ioctx_t group_p, const char *group_name,
				  rbd_group_image_info_t *images,
				  size_t group_image_info_size,
				  size_t *num_entries)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_image_list, group_p, group_name, images,
		     group_image_info_size, num_entries);
}

RBDL_API int rbd_group_image_list_cleanup(rbd_group_image_info_t *images,
					  size_t group_image_info_size,
					  size_t num_entries)
{
	RBDL_FORWARD(rbd_group_image_list_cleanup, images, group_image_info_size,
		     num_entries);
}

RBDL_API int rbd_group_snap_create(rados_ioctx_t group_p,
				   const char *group_name,
				   const char *snap_name)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_snap_create, group_p, group_name, snap_name);
}

RBDL_API int rbd_group_snap_create2(rados_ioctx_t group_p,
				    const char *group_name,
				    const char *snap_name, uint32_t flags)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_snap_create2, group_p, group_name, snap_name, flags);
}

RBDL_API int rbd_group_snap_remove(rados_ioctx_t group_p,
				   const char *group_name,
				   const char *snap_name)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_snap_remove, group_p, group_name, snap_name);
}

RBDL_API int rbd_group_snap_rename(rados_ioctx_t group_p,
				   const char *group_name,
				   const char *old_snap_name,
				   const char *new_snap_name)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_snap_rename, group_p, group_name, old_snap_name,
		     new_snap_name);
}

RBDL_API int rbd_group_snap_list(rados_ioctx_t group_p, const char *group_name,
				 rbd_group_snap_info_t *snaps,
				 size_t group_snap_info_size,
				 size_t *num_entries)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_snap_list, group_p, group_name, snaps,
		     group_snap_info_size, num_entries);
}

RBDL_API int rbd_group_snap_list_cleanup(rbd_group_snap_info_t *snaps,
					 size_t group_snap_info_size,
					 size_t num_entries)
{
	RBDL_FORWARD(rbd_group_snap_list_cleanup, snaps, group_snap_info_size,
		     num_entries);
}

RBDL_API int rbd_group_snap_rollback(rados_ioctx_t group_p,
				     const char *group_name,
				     const char *snap_name)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_snap_rollback, group_p, group_name, snap_name);
}

RBDL_API int rbd_group_snap_rollback_with_progress(rados_ioctx_t group_p,
						   const char *group_name,
						   const char *snap_name,
						   librbd_progress_fn_t cb,
						   void *cbdata)
{
	if (!group_p)
		return -EINVAL;
	RBDL_FORWARD(rbd_group_snap_rollback_with_progress, group_p, group_name,
		     snap_name, cb, cbdata);
}

/* ---- namespaces, pool init, pool metadata, pool statistics ----------------- */

RBDL_API int rbd_pool_metadata_get(rados_ioctx_t io_ctx, const char *key,
				   char *value, size_t *val_len)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_pool_metadata_get, io_ctx, key, value, val_len);
}

RBDL_API int rbd_pool_metadata_set(rados_ioctx_t io_ctx, const char *key,
				   const char *value)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_pool_metadata_set, io_ctx, key, value);
}

RBDL_API int rbd_pool_metadata_remove(rados_ioctx_t io_ctx, const char *key)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_pool_metadata_remove, io_ctx, key);
}

RBDL_API int rbd_pool_metadata_list(rados_ioctx_t io_ctx, const char *start,
				    uint64_t max, char *keys, size_t *key_len,
				    char *values, size_t *vals_len)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_pool_metadata_list, io_ctx, start, max, keys, key_len, values,
		     vals_len);
}

RBDL_API int rbd_namespace_create(rados_ioctx_t io, const char *namespace_name)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_namespace_create, io, namespace_name);
}

RBDL_API int rbd_namespace_remove(rados_ioctx_t io, const char *namespace_name)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_namespace_remove, io, namespace_name);
}

RBDL_API int rbd_namespace_list(rados_ioctx_t io, char *namespace_names,
				size_t *size)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_namespace_list, io, namespace_names, size);
}

RBDL_API int rbd_pool_init(rados_ioctx_t io, bool force)
{
	if (!io)
		return -EINVAL;
	RBDL_FORWARD(rbd_pool_init, io, force);
}

RBDL_API void rbd_pool_stats_create(rbd_pool_stats_t *stats)
{
	RBDL_FORWARD_VOID(rbd_pool_stats_create, stats);
}

RBDL_API void rbd_pool_stats_destroy(rbd_pool_stats_t stats)
{
	if (!stats)
		return;
	RBDL_FORWARD_VOID(rbd_pool_stats_destroy, stats);
}

RBDL_API int rbd_pool_stats_option_add_uint64(rbd_pool_stats_t stats,
					      int stat_option,
					      uint64_t* stat_val)
{
	if (!stats)
		return -EINVAL;
	RBDL_FORWARD(rbd_pool_stats_option_add_uint64, stats, stat_option, stat_val);
}

RBDL_API int rbd_pool_stats_get(rados_ioctx_t io, rbd_pool_stats_t stats)
{
	if (!io || !stats)
		return -EINVAL;
	RBDL_FORWARD(rbd_pool_stats_get, io, stats);
}

/* ---- configuration lists --------------------------------------------------- */

RBDL_API int rbd_config_pool_list(rados_ioctx_t io_ctx,
				  rbd_config_option_t *options,
				  int *max_options)
{
	if (!io_ctx)
		return -EINVAL;
	RBDL_FORWARD(rbd_config_pool_list, io_ctx, options, max_options);
}

RBDL_API void rbd_config_pool_list_cleanup(rbd_config_option_t *options,
					   int max_options)
{
	RBDL_FORWARD_VOID(rbd_config_pool_list_cleanup, options, max_options);
}

/* ---- watchers ---------------------------------------------------------------- */

/*
 * The clients watching the image's header, with their addresses.
 * librados' C API cannot list watchers, so this is forwarded, on a
 * read-only real handle: librbd does not watch the header from those, so
 * the list holds exactly the watchers there were (librbdlite's own
 * handle's included, as librbd lists its own).
 */
RBDL_API int rbd_watchers_list(rbd_image_t image, rbd_image_watcher_t *watchers,
			       size_t *max_watchers)
{
	if (!max_watchers && rbdl_whole_from_user(image))
		return -EINVAL;	/* librbd would crash */
	RBDL_ON_WHOLE(rbd_watchers_list, image, watchers, max_watchers);
	__typeof__(&rbd_watchers_list) real_ = RBDL_REAL_FN(rbd_watchers_list);
	struct rbdl_image *img = rbdl_image_from_user(image);
	rbd_image_t h;
	int r;

	if (!img) {
		if (!image || rbdl_image_handle_known(image))
			return -EINVAL;
		return real_ ? real_(image, watchers, max_watchers) : -EOPNOTSUPP;
	}
	if (!max_watchers)
		return -EINVAL;
	if (!real_)
		return -EOPNOTSUPP;
	r = rbdl_real_image_open2(img, "rbd_watchers_list", true, &h);
	if (r < 0)
		return r;
	r = real_(h, watchers, max_watchers);
	rbdl_real_image_close(img, h);
	return r;
}

RBDL_API void rbd_watchers_list_cleanup(rbd_image_watcher_t *watchers,
					size_t num_watchers)
{
	RBDL_FORWARD_VOID(rbd_watchers_list_cleanup, watchers, num_watchers);
}
