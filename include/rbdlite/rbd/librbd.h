/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rbd/librbd.h - librbd-compatible C interface provided by librbdlite
 *
 * librbdlite implements a subset of Ceph librbd's C API directly on top of
 * the librados C API.  This header declares that subset.  Every type,
 * constant and prototype below is ABI-identical to Ceph Pacific 16.2.15
 * (librbd.so.1, header version 1.16.0), so that a program built against
 * this header runs unchanged against the real librbd, and a program built
 * against the real header runs unchanged against librbdlite (linked
 * directly, or interposed with LD_PRELOAD).  Functions of the upstream API
 * that are not listed here are not provided.
 *
 * Consumers compile with -I<includedir>/rbdlite (pkg-config librbdlite
 * adds it) and keep writing "#include <rbd/librbd.h>".  The include
 * guards equal the upstream ones, so the two headers can never both end
 * up in one translation unit.
 *
 * Conventions shared by every function below:
 *
 *  - Nothing reports through errno.  An int or ssize_t result is 0, or a
 *    non-negative count, on success and a negative errno value on failure
 *    (-ENOENT, -EINVAL, -ERANGE, -EROFS, ...).
 *  - "Buffer too small" answers are -ERANGE; where the function has an
 *    in/out size argument, the required size is stored there.
 *  - Strings handed to the caller through a struct or a char ** array
 *    are malloc()ed and released with the matching *_cleanup / *_end call.
 *  - rbd_image_t handles may be used from several threads at once, except
 *    that rbd_close() must not race with any other call on the handle.
 *
 * The I/O range rules (see the notes before rbd_read()) and the
 * completion rules (see the notes before rbd_aio_create_completion())
 * are the parts of librbd's behaviour that programs most often depend on;
 * librbdlite reproduces them exactly.
 */
#ifndef CEPH_LIBRBD_H
#define CEPH_LIBRBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>		/* upstream includes it; users rely on it */
#include <sys/types.h>		/* ssize_t */
#include <sys/uio.h>		/* struct iovec */
#include <time.h>		/* time_t, struct timespec */

#include <rados/librados.h>

#include "features.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Version and capability macros
 * ------------------------------------------------------------------------ */

/*
 * Interface version.  librbdlite reports the Pacific librbd version so that
 * consumers choose the same code paths they would with librbd 1.16.0.
 * The version of librbdlite itself is in <rbdlite.h>.
 */
#define LIBRBD_VER_MAJOR	1
#define LIBRBD_VER_MINOR	16
#define LIBRBD_VER_EXTRA	0

/* Pack a version triple into one comparable integer (0x011000 for 1.16.0). */
#define LIBRBD_VERSION(maj, min, extra)	(((maj) << 16) + ((min) << 8) + (extra))

#define LIBRBD_VERSION_CODE \
	LIBRBD_VERSION(LIBRBD_VER_MAJOR, LIBRBD_VER_MINOR, LIBRBD_VER_EXTRA)

/*
 * Feature-test macros, exactly the Pacific set.  Consumers test them with
 * #ifdef or #if.  Note that LIBRBD_SUPPORTS_WATCH is defined to 0, so
 * "#ifdef LIBRBD_SUPPORTS_WATCH" is true while "#if LIBRBD_SUPPORTS_WATCH"
 * is false; that is how upstream defines it.  Later additions such as
 * LIBRBD_SUPPORTS_COMPARE_AND_WRITE_IOVEC and LIBRBD_SUPPORTS_ENCRYPTION_LOAD2
 * are intentionally absent.
 */
#define LIBRBD_SUPPORTS_AIO_FLUSH		1
#define LIBRBD_SUPPORTS_AIO_OPEN		1
#define LIBRBD_SUPPORTS_COMPARE_AND_WRITE	1
#define LIBRBD_SUPPORTS_LOCKING			1
#define LIBRBD_SUPPORTS_INVALIDATE		1
#define LIBRBD_SUPPORTS_IOVEC			1
#define LIBRBD_SUPPORTS_WATCH			0
#define LIBRBD_SUPPORTS_WRITESAME		1
#define LIBRBD_SUPPORTS_WRITE_ZEROES		1
#define LIBRBD_SUPPORTS_ENCRYPTION		1

/*
 * CEPH_RBD_API marks every exported function (the library is built with
 * hidden default visibility).  CEPH_RBD_DEPRECATED marks the functions
 * upstream has deprecated; calling them produces a compiler warning.
 * Deprecation warnings are suppressed for the body of this header only.
 */
#if defined(__GNUC__) && __GNUC__ >= 4
#define CEPH_RBD_API		__attribute__((visibility("default")))
#define CEPH_RBD_DEPRECATED	__attribute__((deprecated))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#else
#define CEPH_RBD_API
#define CEPH_RBD_DEPRECATED
#endif

/* ------------------------------------------------------------------------
 * Constants
 * ------------------------------------------------------------------------ */

/* Image flags reported by rbd_get_flags(). */
#define RBD_FLAG_OBJECT_MAP_INVALID	(1 << 0)	/* object map stale */
#define RBD_FLAG_FAST_DIFF_INVALID	(1 << 1)	/* fast-diff stale */

/* Fixed array sizes inside rbd_image_info_t. */
#define RBD_MAX_IMAGE_NAME_SIZE		96
#define RBD_MAX_BLOCK_NAME_SIZE		24

/* Kinds of file descriptor accepted by rbd_set_image_notification(). */
enum {
	EVENT_TYPE_PIPE = 1,		/* one byte is written per completion */
	EVENT_TYPE_EVENTFD = 2		/* the counter is incremented by one */
};

/*
 * zero_flags of rbd_write_zeroes() / rbd_aio_write_zeroes().  This is an
 * enumerator, not a macro, exactly as upstream: "#ifdef
 * RBD_WRITE_ZEROES_FLAG_THICK_PROVISION" is false with a Pacific header,
 * and consumers (qemu) rely on that.
 */
enum {
	/* write real zeros and keep the space allocated */
	RBD_WRITE_ZEROES_FLAG_THICK_PROVISION = (1U << 0)
};

/* Option keys for rbd_image_options_t (see rbd_image_options_set_*()). */
enum {
	RBD_IMAGE_OPTION_FORMAT = 0,			/* uint64: 1 or 2 */
	RBD_IMAGE_OPTION_FEATURES = 1,			/* uint64: mask */
	RBD_IMAGE_OPTION_ORDER = 2,			/* uint64: log2(size) */
	RBD_IMAGE_OPTION_STRIPE_UNIT = 3,		/* uint64: bytes */
	RBD_IMAGE_OPTION_STRIPE_COUNT = 4,		/* uint64 */
	RBD_IMAGE_OPTION_JOURNAL_ORDER = 5,		/* uint64 */
	RBD_IMAGE_OPTION_JOURNAL_SPLAY_WIDTH = 6,	/* uint64 */
	RBD_IMAGE_OPTION_JOURNAL_POOL = 7,		/* string */
	RBD_IMAGE_OPTION_FEATURES_SET = 8,		/* uint64: add */
	RBD_IMAGE_OPTION_FEATURES_CLEAR = 9,		/* uint64: remove */
	RBD_IMAGE_OPTION_DATA_POOL = 10,		/* string: pool name */
	RBD_IMAGE_OPTION_FLATTEN = 11,			/* uint64 (bool) */
	RBD_IMAGE_OPTION_CLONE_FORMAT = 12,		/* uint64: 1 or 2 */
	RBD_IMAGE_OPTION_MIRROR_IMAGE_MODE = 13	/* uint64 */
};

/* Lock modes of the managed (exclusive-lock feature) image lock. */
typedef enum {
	RBD_LOCK_MODE_EXCLUSIVE = 0,
	RBD_LOCK_MODE_SHARED = 1
} rbd_lock_mode_t;

/* Encryption formats for rbd_encryption_format() / rbd_encryption_load(). */
typedef enum {
	RBD_ENCRYPTION_FORMAT_LUKS1 = 0,
	RBD_ENCRYPTION_FORMAT_LUKS2 = 1
} rbd_encryption_format_t;

/* Ciphers for the LUKS format options. */
typedef enum {
	RBD_ENCRYPTION_ALGORITHM_AES128 = 0,
	RBD_ENCRYPTION_ALGORITHM_AES256 = 1
} rbd_encryption_algorithm_t;

/* ------------------------------------------------------------------------
 * Handles and callback types
 * ------------------------------------------------------------------------ */

/* An open image (rbd_open() ... rbd_close()). */
typedef void *rbd_image_t;

/* A set of image creation options (rbd_image_options_create()). */
typedef void *rbd_image_options_t;

/* One asynchronous request (rbd_aio_create_completion()). */
typedef void *rbd_completion_t;

/* Completion callback: receives the completion and its cb_arg. */
typedef void (*rbd_callback_t)(rbd_completion_t cb, void *arg);

/*
 * Progress callback of long-running operations: offset and total are in
 * the operation's own units; returning a negative value cancels it.
 */
typedef int (*librbd_progress_fn_t)(uint64_t offset, uint64_t total, void *ptr);

/* Image-changed callback registered with rbd_update_watch(). */
typedef void (*rbd_update_callback_t)(void *arg);

/*
 * Options blob for rbd_encryption_format()/rbd_encryption_load(): points
 * to one of the format-specific structs below.
 */
typedef void *rbd_encryption_options_t;

/* ------------------------------------------------------------------------
 * Structures
 * ------------------------------------------------------------------------ */

/* An image identity as returned by rbd_list2(). */
typedef struct {
	char *id;
	char *name;
} rbd_image_spec_t;

/* Namespace of a snapshot (rbd_snap_spec_t). */
typedef enum {
	RBD_SNAP_NAMESPACE_TYPE_USER = 0,
	RBD_SNAP_NAMESPACE_TYPE_GROUP = 1,
	RBD_SNAP_NAMESPACE_TYPE_TRASH = 2,
	RBD_SNAP_NAMESPACE_TYPE_MIRROR = 3,
} rbd_snap_namespace_type_t;

/* An image another one links to (rbd_get_parent()); strings are
 * malloc'ed, free them with rbd_linked_image_spec_cleanup(). */
typedef struct {
	int64_t pool_id;
	char *pool_name;
	char *pool_namespace;
	char *image_id;
	char *image_name;	/* its trash name if trash is true */
	bool trash;		/* the image sits in the trash */
} rbd_linked_image_spec_t;

/* A snapshot of a linked image (rbd_get_parent()); free the name with
 * rbd_snap_spec_cleanup(). */
typedef struct {
	uint64_t id;
	rbd_snap_namespace_type_t namespace_type;
	char *name;
} rbd_snap_spec_t;

/* One entry of rbd_snap_list(); the list ends with a NULL name. */
typedef struct {
	uint64_t id;
	uint64_t size;
	const char *name;
} rbd_snap_info_t;

/*
 * Result of rbd_stat().  The last three members are kept for binary
 * compatibility only: block_name_prefix may be truncated (use
 * rbd_get_block_name_prefix()), parent_pool is always -1 and parent_name
 * always empty (use rbd_get_parent_info()).
 */
typedef struct {
	uint64_t size;
	uint64_t obj_size;
	uint64_t num_objs;
	int order;
	char block_name_prefix[RBD_MAX_BLOCK_NAME_SIZE];
	int64_t parent_pool;
	char parent_name[RBD_MAX_IMAGE_NAME_SIZE];
} rbd_image_info_t;

/* Options for RBD_ENCRYPTION_FORMAT_LUKS1. */
typedef struct {
	rbd_encryption_algorithm_t alg;
	const char *passphrase;
	size_t passphrase_size;
} rbd_encryption_luks1_format_options_t;

/* Options for RBD_ENCRYPTION_FORMAT_LUKS2. */
typedef struct {
	rbd_encryption_algorithm_t alg;
	const char *passphrase;
	size_t passphrase_size;
} rbd_encryption_luks2_format_options_t;

/* ------------------------------------------------------------------------
 * Library
 * ------------------------------------------------------------------------ */

/*
 * Store the librbd interface version (1, 16, 0) into the three integers.
 * Any pointer may be NULL.
 */
CEPH_RBD_API void rbd_version(int *major, int *minor, int *extra);

/* ------------------------------------------------------------------------
 * Image creation options
 *
 * A small typed key/value map (keys are RBD_IMAGE_OPTION_*) passed to
 * rbd_create4().  Each key has a fixed type, string or uint64.
 * ------------------------------------------------------------------------ */

/* Allocate an empty option set into *opts.  Free it with ..._destroy(). */
CEPH_RBD_API void rbd_image_options_create(rbd_image_options_t *opts);

/* Free an option set created by rbd_image_options_create(). */
CEPH_RBD_API void rbd_image_options_destroy(rbd_image_options_t opts);

/*
 * Set a string / uint64 option, replacing any earlier value.  Returns 0,
 * or -EINVAL if optname is unknown or holds the other type.
 */
CEPH_RBD_API int rbd_image_options_set_string(rbd_image_options_t opts,
					      int optname, const char *optval);
CEPH_RBD_API int rbd_image_options_set_uint64(rbd_image_options_t opts,
					      int optname, uint64_t optval);

/*
 * Read a string option into optval (maxlen bytes, NUL included).  Returns
 * 0; -EINVAL for an unknown or non-string key; -ENOENT if it is not set;
 * -E2BIG (not -ERANGE) if the value does not fit.
 */
CEPH_RBD_API int rbd_image_options_get_string(rbd_image_options_t opts,
					      int optname, char *optval,
					      size_t maxlen);

/* Read a uint64 option.  Returns 0, -EINVAL (bad key/type) or -ENOENT. */
CEPH_RBD_API int rbd_image_options_get_uint64(rbd_image_options_t opts,
					      int optname, uint64_t *optval);

/* Remove one option.  Returns 0, -EINVAL (unknown key) or -ENOENT (not set). */
CEPH_RBD_API int rbd_image_options_unset(rbd_image_options_t opts,
					 int optname);

/* Remove every option. */
CEPH_RBD_API void rbd_image_options_clear(rbd_image_options_t opts);

/* Returns 1 if no option is set, 0 otherwise. */
CEPH_RBD_API int rbd_image_options_is_empty(rbd_image_options_t opts);

/* ------------------------------------------------------------------------
 * Pool-level image management
 *
 * The pool and RADOS namespace are those of the ioctx.
 * ------------------------------------------------------------------------ */

/*
 * Free the id and name strings of num_images entries filled by
 * rbd_list2().  The array itself belongs to the caller.
 */
CEPH_RBD_API void rbd_image_spec_list_cleanup(rbd_image_spec_t *images,
					      size_t num_images);

/*
 * Deprecated: use rbd_list2().  Copy the names of all images, each
 * NUL-terminated, back to back into names (*size bytes).  Returns the
 * number of bytes used; if *size is too small, stores the required size
 * in *size and returns -ERANGE (so a first call with *size == 0 sizes the
 * buffer).
 */
CEPH_RBD_API int rbd_list(rados_ioctx_t io, char *names, size_t *size)
	CEPH_RBD_DEPRECATED;

/*
 * Fill images[] (room for *max_images entries) with the id and name of
 * every image, and set *max_images to the count.  Returns 0, or -ERANGE
 * with *max_images set to the number needed.  Release the strings with
 * rbd_image_spec_list_cleanup().
 */
CEPH_RBD_API int rbd_list2(rados_ioctx_t io, rbd_image_spec_t *images,
			   size_t *max_images);

/*
 * Create a format-2 image of size bytes with the configured default
 * features (rbd_default_features, normally RBD_FEATURES_DEFAULT).
 * *order is in/out: log2 of the object size, 0 meaning the configured
 * default (22, 4 MiB); the order used is stored back.  The new image
 * reads as zeros.  Returns 0, -EEXIST if the name is taken, -EINVAL for
 * bad parameters.
 */
CEPH_RBD_API int rbd_create(rados_ioctx_t io, const char *name, uint64_t size,
			    int *order);

/* As rbd_create(), with an explicit RBD_FEATURE_* mask. */
CEPH_RBD_API int rbd_create2(rados_ioctx_t io, const char *name,
			     uint64_t size, uint64_t features, int *order);

/*
 * As rbd_create2(), with explicit striping.  stripe_unit must divide the
 * object size (1 << order); a layout other than (object size, 1) needs
 * RBD_FEATURE_STRIPINGV2 in features.  0/0 selects the default layout.
 */
CEPH_RBD_API int rbd_create3(rados_ioctx_t io, const char *name,
			     uint64_t size, uint64_t features, int *order,
			     uint64_t stripe_unit, uint64_t stripe_count);

/*
 * Create an image from an option set (RBD_IMAGE_OPTION_*); options not
 * set take their configured defaults.  The chosen order is written back
 * into opts.  Returns 0 or negative errno as rbd_create().
 */
CEPH_RBD_API int rbd_create4(rados_ioctx_t io, const char *name,
			     uint64_t size, rbd_image_options_t opts);

/*
 * Delete an image and all its data objects.  Returns 0; -ENOENT if there
 * is no such image; -EBUSY if a client still has it open (watchers);
 * -ENOTEMPTY if it still has snapshots.
 */
CEPH_RBD_API int rbd_remove(rados_ioctx_t io, const char *name);

/*
 * Set *exists to whether the named RBD namespace exists (and is ready)
 * in the ioctx's pool; the ioctx's own namespace is ignored.  Returns 0;
 * -EINVAL for the empty (default) name, after setting *exists to false.
 */
CEPH_RBD_API int rbd_namespace_exists(rados_ioctx_t io,
				      const char *namespace_name,
				      bool *exists);

/* ------------------------------------------------------------------------
 * Opening and closing
 *
 * The library takes its own copy of the ioctx (including its RADOS
 * namespace) at open time; later changes to the caller's ioctx do not
 * affect the image, but the cluster handle must outlive rbd_close().
 * snap_name == NULL opens the writable head; otherwise the named snapshot
 * is opened and every write-type call fails with -EROFS.
 * ------------------------------------------------------------------------ */

/*
 * Open image name for reading and writing.  On success stores the handle
 * in *image and returns 0; -ENOENT if the image or snapshot does not
 * exist.  *image is left unchanged on failure.
 */
CEPH_RBD_API int rbd_open(rados_ioctx_t io, const char *name,
			  rbd_image_t *image, const char *snap_name);

/* As rbd_open(), naming the image by its id instead of its name. */
CEPH_RBD_API int rbd_open_by_id(rados_ioctx_t io, const char *id,
				rbd_image_t *image, const char *snap_name);

/*
 * Open without write access.  No watch is placed on the header object
 * (a watch needs write permission), so size, snapshot and parent
 * information may go stale while the image is open.  Writes give -EROFS;
 * reads and flushes work.
 */
CEPH_RBD_API int rbd_open_read_only(rados_ioctx_t io, const char *name,
				    rbd_image_t *image, const char *snap_name);

/* As rbd_open_read_only(), naming the image by its id. */
CEPH_RBD_API int rbd_open_by_id_read_only(rados_ioctx_t io, const char *id,
					  rbd_image_t *image,
					  const char *snap_name);

/*
 * Close the image: waits for in-flight I/O, flushes, releases the lock
 * and watch, and frees the handle.  Returns 0 or negative errno; the
 * handle is invalid afterwards in both cases.  A notification fd
 * registered with rbd_set_image_notification() is not closed.
 */
CEPH_RBD_API int rbd_close(rbd_image_t image);

/* ------------------------------------------------------------------------
 * Image information and maintenance
 * ------------------------------------------------------------------------ */

/*
 * Grow or shrink the image to size bytes.  Data beyond a new, smaller
 * size is deleted, so growing again later exposes zeros.  Returns 0,
 * -EROFS on a snapshot or read-only open, or negative errno.
 */
CEPH_RBD_API int rbd_resize(rbd_image_t image, uint64_t size);

/*
 * Fill *info: size (at the opened snapshot), obj_size (1 << order),
 * num_objs, order, block_name_prefix, parent_pool = -1, parent_name = "".
 * infosize is ignored (librbd does the same).  Returns 0 or -ENOENT if the
 * opened snapshot was removed.
 */
CEPH_RBD_API int rbd_stat(rbd_image_t image, rbd_image_info_t *info,
			  size_t infosize);

/* Store the image size in bytes at the opened snapshot (or head). */
CEPH_RBD_API int rbd_get_size(rbd_image_t image, uint64_t *size);

/* Store the image's RBD_FEATURE_* mask. */
CEPH_RBD_API int rbd_get_features(rbd_image_t image, uint64_t *features);

/* Store the image's RBD_FLAG_* bits at the opened snapshot (or head). */
CEPH_RBD_API int rbd_get_flags(rbd_image_t image, uint64_t *flags);

/*
 * Copy the image id (NUL-terminated) into id.  Returns 0, -ERANGE if
 * id_len is not larger than the id, -EINVAL for a format-1 image.
 */
CEPH_RBD_API int rbd_get_id(rbd_image_t image, char *id, size_t id_len);

/*
 * Copy the data object name prefix ("rbd_data.<id>" or
 * "rbd_data.<pool>.<id>" with a data pool) into prefix.  Returns 0 or
 * -ERANGE if prefix_len is not larger than the prefix.
 */
CEPH_RBD_API int rbd_get_block_name_prefix(rbd_image_t image, char *prefix,
					   size_t prefix_len);

/*
 * Deprecated.  For a clone, copy the parent's pool, image and snapshot
 * names into whichever buffers are non-NULL.  Returns 0; exactly -ENOENT
 * when the image has no parent (callers test for that value); -ERANGE if
 * a non-NULL buffer is too short.
 */
CEPH_RBD_API int rbd_get_parent_info(rbd_image_t image,
				     char *parent_poolname, size_t ppoolnamelen,
				     char *parent_name, size_t pnamelen,
				     char *parent_snapname,
				     size_t psnapnamelen)
	CEPH_RBD_DEPRECATED;

/*
 * Deprecated.  rbd_get_parent_info() plus the parent's image id (after
 * the name, before the snapshot name).  Same return values.
 */
CEPH_RBD_API int rbd_get_parent_info2(rbd_image_t image,
				      char *parent_poolname,
				      size_t ppoolnamelen,
				      char *parent_name, size_t pnamelen,
				      char *parent_id, size_t pidlen,
				      char *parent_snapname,
				      size_t psnapnamelen)
	CEPH_RBD_DEPRECATED;

/*
 * The parent image and snapshot of a clone at the opened view (HEAD or a
 * snapshot).  On success both structs hold malloc'ed strings: free them
 * with rbd_linked_image_spec_cleanup() and rbd_snap_spec_cleanup().
 * -ENOENT (both structs zeroed, so the cleanups are safe) when the view
 * has no parent: not a clone, or flattened.
 */
CEPH_RBD_API int rbd_get_parent(rbd_image_t image,
				rbd_linked_image_spec_t *parent_image,
				rbd_snap_spec_t *parent_snap);

/* Free the strings of a spec filled by rbd_get_parent() and NULL them. */
CEPH_RBD_API void rbd_linked_image_spec_cleanup(rbd_linked_image_spec_t *image);
CEPH_RBD_API void rbd_snap_spec_cleanup(rbd_snap_spec_t *snap);

/*
 * Store the striping layout.  Without RBD_FEATURE_STRIPINGV2 the stripe
 * unit is the object size and the count is 1.  Always return 0.
 */
CEPH_RBD_API int rbd_get_stripe_unit(rbd_image_t image, uint64_t *stripe_unit);
CEPH_RBD_API int rbd_get_stripe_count(rbd_image_t image,
				      uint64_t *stripe_count);

/*
 * Return the id of the pool holding the data objects: the data pool if
 * the image has one, else the image's own pool.  Never fails.
 */
CEPH_RBD_API int64_t rbd_get_data_pool_id(rbd_image_t image);

/*
 * Store how many bytes of the parent are visible through this clone at
 * the opened snapshot; 0 for an image without a parent.  Returns 0 or
 * negative errno.
 */
CEPH_RBD_API int rbd_get_overlap(rbd_image_t image, uint64_t *overlap);

/*
 * Report allocated extents in [ofs, ofs + len) that changed since
 * snapshot fromsnapname (NULL: since creation, i.e. every allocated
 * extent).  cb(offset, length, exists, arg) is called in ascending,
 * non-overlapping order; exists is 0 for ranges that became holes.
 * include_parent also reports data inherited from a parent;
 * whole_object reports at object granularity (cheap with fast-diff).
 * The range is clipped to the image size like an I/O.  A negative value
 * returned by cb stops the walk and is returned unchanged; otherwise
 * returns 0 or negative errno.
 */
CEPH_RBD_API int rbd_diff_iterate2(rbd_image_t image, const char *fromsnapname,
				   uint64_t ofs, uint64_t len,
				   uint8_t include_parent, uint8_t whole_object,
				   int (*cb)(uint64_t, size_t, int, void *),
				   void *arg);

/*
 * Drop any client-side cached data.  librbdlite keeps no data cache, so
 * this returns 0 immediately.
 */
CEPH_RBD_API int rbd_invalidate_cache(rbd_image_t image);

/*
 * Wait until every write submitted earlier on this image is durable.
 * Returns 0 or negative errno.  Allowed on read-only and snapshot opens.
 */
CEPH_RBD_API int rbd_flush(rbd_image_t image);

/* ------------------------------------------------------------------------
 * Synchronous I/O
 *
 * Range rules, shared with the asynchronous calls:
 *  - len == 0 always succeeds, at any offset, and does nothing.
 *  - ofs >= image size with len > 0 fails with -EINVAL.
 *  - A range crossing the end of the image is clipped to the end: reads
 *    return the shorter count and leave the tail of buf untouched, writes
 *    silently drop the bytes past the end.
 *  - Holes and never-written areas read as zeros and count as read.
 *  - Every write-type call on a snapshot or read-only open gives -EROFS.
 *
 * op_flags are LIBRADOS_OP_FLAG_FADVISE_* hints; they may be ignored.
 * Write buffers are not referenced after the call returns.
 * ------------------------------------------------------------------------ */

/* Read len bytes at ofs into buf.  Returns the byte count after clipping. */
CEPH_RBD_API ssize_t rbd_read(rbd_image_t image, uint64_t ofs, size_t len,
			      char *buf);
CEPH_RBD_API ssize_t rbd_read2(rbd_image_t image, uint64_t ofs, size_t len,
			       char *buf, int op_flags);

/* Write len bytes of buf at ofs.  Returns the byte count after clipping. */
CEPH_RBD_API ssize_t rbd_write(rbd_image_t image, uint64_t ofs, size_t len,
			       const char *buf);
CEPH_RBD_API ssize_t rbd_write2(rbd_image_t image, uint64_t ofs, size_t len,
				const char *buf, int op_flags);

/*
 * Deallocate [ofs, ofs + len).  The range may afterwards read as zeros or
 * (for pieces smaller than the discard granularity) keep its old data;
 * use rbd_write_zeroes() when zeros are required.  Returns len (after
 * clipping) as an int; len > INT_MAX gives -EINVAL.
 */
CEPH_RBD_API int rbd_discard(rbd_image_t image, uint64_t ofs, uint64_t len);

/*
 * Fill [ofs, ofs + len) by repeating the data_len-byte pattern in buf.
 * data_len must be non-zero and divide len (-EINVAL otherwise).  Returns
 * the byte count after clipping.
 */
CEPH_RBD_API ssize_t rbd_writesame(rbd_image_t image, uint64_t ofs,
				   size_t len, const char *buf,
				   size_t data_len, int op_flags);

/*
 * Make [ofs, ofs + len) read as zeros.  zero_flags may only contain
 * RBD_WRITE_ZEROES_FLAG_THICK_PROVISION (zeros are then written and
 * space stays allocated); other bits give -EINVAL.  Returns the byte
 * count after clipping.
 */
CEPH_RBD_API ssize_t rbd_write_zeroes(rbd_image_t image, uint64_t ofs,
				      size_t len, int zero_flags,
				      int op_flags);

/*
 * Atomically: if the len bytes at ofs equal cmp_buf, overwrite them with
 * buf.  Pacific limits: the range must stay inside one 512-byte sector
 * (ofs % 512 + len <= 512) and one object, else -EINVAL.  On a miscompare
 * nothing is written, *mismatch_off receives the absolute image offset of
 * the first differing byte, and -EILSEQ is returned.  Returns len on
 * success.
 */
CEPH_RBD_API ssize_t rbd_compare_and_write(rbd_image_t image, uint64_t ofs,
					   size_t len, const char *cmp_buf,
					   const char *buf,
					   uint64_t *mismatch_off,
					   int op_flags);

/* ------------------------------------------------------------------------
 * Completions
 *
 * Every asynchronous call takes a completion created by
 * rbd_aio_create_completion().  Rules:
 *  - One completion serves exactly one request; it cannot be reused.
 *  - Submission never completes inline.  When an rbd_aio_* call returns
 *    0, the result (including argument and range errors) is delivered
 *    later through the completion.  When it returns a negative value,
 *    the request was not started and the callback will never run; the
 *    caller still owns, and must release, the completion.
 *  - The callback runs on a library thread, never on the submitter's
 *    stack.  Callbacks of one image never run concurrently; those of
 *    different images may.  Inside the callback the program may call
 *    rbd_aio_get_return_value(), rbd_aio_get_arg(), rbd_aio_release()
 *    and submit new I/O, but must not call rbd_aio_wait_for_complete()
 *    on the same completion (it would deadlock).
 *  - Order at completion: read data is in place, then the callback runs,
 *    then (if notification is enabled) the completion is queued for
 *    rbd_poll_io_events() and the fd is signalled, then waiters wake up.
 *  - Read buffers, write buffers and mismatch_off must stay valid until
 *    the request completes.  The iovec arrays themselves are copied at
 *    submission.
 * ------------------------------------------------------------------------ */

/*
 * Create a completion.  complete_cb (may be NULL for wait/poll use) will
 * be called as complete_cb(*c, cb_arg).  Always returns 0.
 */
CEPH_RBD_API int rbd_aio_create_completion(void *cb_arg,
					   rbd_callback_t complete_cb,
					   rbd_completion_t *c);

/*
 * Return 1 once the request has finished (already true while its
 * callback is running), else 0.
 */
CEPH_RBD_API int rbd_aio_is_complete(rbd_completion_t c);

/*
 * Block until the request has finished and its callback has returned.
 * Returns 0.  Must not be called from the callback.
 */
CEPH_RBD_API int rbd_aio_wait_for_complete(rbd_completion_t c);

/*
 * Result of a finished request: for reads, the number of bytes read
 * (the requested length after clipping; never short because of holes);
 * 0 for writes, discards, flushes, write-zeroes, write-same and
 * compare-and-write; a negative errno on failure (-EILSEQ for a
 * compare-and-write miscompare).
 */
CEPH_RBD_API ssize_t rbd_aio_get_return_value(rbd_completion_t c);

/* Return the cb_arg given to rbd_aio_create_completion(). */
CEPH_RBD_API void *rbd_aio_get_arg(rbd_completion_t c);

/*
 * Drop the caller's reference; call exactly once per completion.  Legal
 * inside the callback or after completion; a completion that is still
 * queued for rbd_poll_io_events() must be polled out first.
 */
CEPH_RBD_API void rbd_aio_release(rbd_completion_t c);

/* ------------------------------------------------------------------------
 * Asynchronous I/O
 *
 * Same range rules as the synchronous calls, but every error is
 * reported through the completion and the call itself returns 0, except
 * where a synchronous -EINVAL is documented below.
 * ------------------------------------------------------------------------ */

/* Read len bytes at off into buf. */
CEPH_RBD_API int rbd_aio_read(rbd_image_t image, uint64_t off, size_t len,
			      char *buf, rbd_completion_t c);
CEPH_RBD_API int rbd_aio_read2(rbd_image_t image, uint64_t off, size_t len,
			       char *buf, rbd_completion_t c, int op_flags);

/*
 * Scatter read of sum(iov[i].iov_len) bytes at off, filling the buffers
 * in order (a clipped read fills only the first bytes).  iovcnt <= 0 or
 * an overflowing total gives a synchronous -EINVAL.
 */
CEPH_RBD_API int rbd_aio_readv(rbd_image_t image, const struct iovec *iov,
			       int iovcnt, uint64_t off, rbd_completion_t c);

/* Write len bytes of buf at off. */
CEPH_RBD_API int rbd_aio_write(rbd_image_t image, uint64_t off, size_t len,
			       const char *buf, rbd_completion_t c);
CEPH_RBD_API int rbd_aio_write2(rbd_image_t image, uint64_t off, size_t len,
				const char *buf, rbd_completion_t c,
				int op_flags);

/* Gather write; iovcnt <= 0 or an overflowing total: synchronous -EINVAL. */
CEPH_RBD_API int rbd_aio_writev(rbd_image_t image, const struct iovec *iov,
				int iovcnt, uint64_t off, rbd_completion_t c);

/* Asynchronous rbd_discard(); the completion's value is 0. */
CEPH_RBD_API int rbd_aio_discard(rbd_image_t image, uint64_t off,
				 uint64_t len, rbd_completion_t c);

/*
 * Asynchronous rbd_writesame().  data_len == 0 or len % data_len != 0
 * gives a synchronous -EINVAL.
 */
CEPH_RBD_API int rbd_aio_writesame(rbd_image_t image, uint64_t off,
				   size_t len, const char *buf,
				   size_t data_len, rbd_completion_t c,
				   int op_flags);

/*
 * Asynchronous rbd_write_zeroes(); an unsupported zero_flags bit is
 * reported as -EINVAL through the completion.
 */
CEPH_RBD_API int rbd_aio_write_zeroes(rbd_image_t image, uint64_t off,
				      size_t len, rbd_completion_t c,
				      int zero_flags, int op_flags);

/*
 * Asynchronous rbd_compare_and_write(); returns 0.  The completion
 * carries 0, -EILSEQ (with *mismatch_off set before completion) or
 * another negative errno.  As in Pacific, these requests are never
 * queued for rbd_poll_io_events(); only the callback reports them.
 */
CEPH_RBD_API ssize_t rbd_aio_compare_and_write(rbd_image_t image,
					       uint64_t off, size_t len,
					       const char *cmp_buf,
					       const char *buf,
					       rbd_completion_t c,
					       uint64_t *mismatch_off,
					       int op_flags);

/*
 * Complete after every request submitted earlier on this image has
 * completed and its writes are durable (a barrier).  Allowed on
 * read-only and snapshot opens.
 */
CEPH_RBD_API int rbd_aio_flush(rbd_image_t image, rbd_completion_t c);

/* ------------------------------------------------------------------------
 * Completion notification through a file descriptor
 * ------------------------------------------------------------------------ */

/*
 * Have the completions of requests submitted from now on (except
 * compare-and-write) queued for rbd_poll_io_events(), each one also
 * signalling fd once: an 8-byte increment of 1 for EVENT_TYPE_EVENTFD, one
 * byte for EVENT_TYPE_PIPE.  The queue entry is added before the fd is
 * signalled.  The library never reads or closes fd.  Returns 0; -EINVAL
 * for another type, or if a descriptor is already registered (there is no
 * way to change or remove it).
 */
CEPH_RBD_API int rbd_set_image_notification(rbd_image_t image, int fd,
					    int type);

/*
 * Move up to numcomp queued completions, oldest first, into comps[] and
 * return how many (0 if none); never blocks and never reads the fd
 * (draining it is the caller's job).  numcomp <= 0 gives -EINVAL.  The
 * caller must still release each returned completion.
 */
CEPH_RBD_API int rbd_poll_io_events(rbd_image_t image, rbd_completion_t *comps,
				    int numcomp);

/* ------------------------------------------------------------------------
 * Snapshots
 * ------------------------------------------------------------------------ */

/*
 * Take a snapshot of the image head.  Returns 0; -EEXIST if the name is
 * in use; -EROFS on a read-only or snapshot open.
 */
CEPH_RBD_API int rbd_snap_create(rbd_image_t image, const char *snapname);

/* Delete a snapshot.  Returns 0, -ENOENT, -EBUSY (protected) or errno. */
CEPH_RBD_API int rbd_snap_remove(rbd_image_t image, const char *snapname);

/*
 * Rewrite the image head in place with the contents and size of the
 * snapshot.  Returns 0, -ENOENT or negative errno.
 */
CEPH_RBD_API int rbd_snap_rollback(rbd_image_t image, const char *snapname);

/*
 * List the snapshots.  snaps[] needs room for n + 1 entries: n snapshots
 * plus a terminator whose name is NULL.  Returns n on success (names are
 * malloc()ed: free with rbd_snap_list_end()); if *max_snaps is too small,
 * stores n + 1 there and returns -ERANGE.
 */
CEPH_RBD_API int rbd_snap_list(rbd_image_t image, rbd_snap_info_t *snaps,
			       int *max_snaps);

/* Free the names of a list filled by rbd_snap_list(), up to its terminator. */
CEPH_RBD_API void rbd_snap_list_end(rbd_snap_info_t *snaps);

/*
 * Switch an open image to reading from snapshot snapname, or back to the
 * head when snapname is NULL.  Returns 0 or -ENOENT.
 */
CEPH_RBD_API int rbd_snap_set(rbd_image_t image, const char *snapname);

/*
 * Set *exists to whether a user snapshot of that name exists.  Returns 0
 * or negative errno.
 */
CEPH_RBD_API int rbd_snap_exists(rbd_image_t image, const char *snapname,
				 bool *exists);

/* ------------------------------------------------------------------------
 * Change notification
 * ------------------------------------------------------------------------ */

/*
 * Call watch_cb(arg) from a library thread whenever the image header
 * changes (resize, snapshots, features, lock ownership, ...).  Stores an
 * identifier in *handle.  Returns 0 or negative errno.
 */
CEPH_RBD_API int rbd_update_watch(rbd_image_t image, uint64_t *handle,
				  rbd_update_callback_t watch_cb, void *arg);

/*
 * Unregister a watch added by rbd_update_watch(); when it returns, the
 * callback is not running and will not run again.  Returns 0, -ENOENT
 * for an unknown handle, or negative errno.
 */
CEPH_RBD_API int rbd_update_unwatch(rbd_image_t image, uint64_t handle);

/* ------------------------------------------------------------------------
 * Managed exclusive lock (RBD_FEATURE_EXCLUSIVE_LOCK)
 * ------------------------------------------------------------------------ */

/*
 * Set *is_owner to 1 if this handle holds the exclusive lock, else 0.
 * Returns 0 or negative errno.
 */
CEPH_RBD_API int rbd_is_exclusive_lock_owner(rbd_image_t image,
					     int *is_owner);

/*
 * Acquire the lock and keep it (no transparent hand-over to other
 * clients) until rbd_lock_release() or close.  Only
 * RBD_LOCK_MODE_EXCLUSIVE is supported (-EOPNOTSUPP otherwise); -EINVAL
 * if this open has no managed lock (the image lacks the exclusive-lock
 * feature, a read-only open, a handle at a snapshot), as librbd; -EROFS
 * when the current holder refuses to hand it over.
 */
CEPH_RBD_API int rbd_lock_acquire(rbd_image_t image, rbd_lock_mode_t lock_mode);

/*
 * Release a lock taken with rbd_lock_acquire().  Returns 0, or -EINVAL if
 * this handle does not hold it (or has no managed lock, as above).
 */
CEPH_RBD_API int rbd_lock_release(rbd_image_t image);

/*
 * Report the current lock holder(s): *lock_mode and up to
 * *max_lock_owners malloc()ed owner strings (client addresses) in
 * lock_owners[], with the count stored in *max_lock_owners.  Returns 0;
 * -ENOENT if the lock is free; -EINVAL if this open has no managed lock
 * (see rbd_lock_acquire); -ERANGE (count needed stored in *max_lock_owners) if the array
 * is too small.  Free with rbd_lock_get_owners_cleanup().
 */
CEPH_RBD_API int rbd_lock_get_owners(rbd_image_t image,
				     rbd_lock_mode_t *lock_mode,
				     char **lock_owners,
				     size_t *max_lock_owners);

/* Free lock_owner_count strings returned by rbd_lock_get_owners(). */
CEPH_RBD_API void rbd_lock_get_owners_cleanup(char **lock_owners,
					      size_t lock_owner_count);

/*
 * Forcibly take the lock away from lock_owner (as returned by
 * rbd_lock_get_owners()), blocklisting that client.  Returns 0;
 * -EOPNOTSUPP for a mode other than exclusive; -EROFS on a read-only
 * open; -EINVAL if this open has no managed lock (see rbd_lock_acquire);
 * -EBUSY if lock_owner is no longer the holder; -ENOENT if nobody holds
 * it.
 */
CEPH_RBD_API int rbd_lock_break(rbd_image_t image, rbd_lock_mode_t lock_mode,
				const char *lock_owner);

/* ------------------------------------------------------------------------
 * Image metadata (key/value pairs stored in the image header)
 * ------------------------------------------------------------------------ */

/*
 * Copy the value of key, NUL-terminated, into value (*val_len bytes).
 * Returns 0; -ENOENT if the key is not set; -ERANGE if it does not fit,
 * with the size needed (NUL included) stored in *val_len.
 */
CEPH_RBD_API int rbd_metadata_get(rbd_image_t image, const char *key,
				  char *value, size_t *val_len);

/* Set key to value (both NUL-terminated).  Returns 0, -EROFS or errno. */
CEPH_RBD_API int rbd_metadata_set(rbd_image_t image, const char *key,
				  const char *value);

/* ------------------------------------------------------------------------
 * Encryption
 *
 * opts points to the rbd_encryption_luks{1,2}_format_options_t matching
 * format and opts_size is its sizeof.  librbdlite does not implement
 * client-side encryption: both calls return -EOPNOTSUPP (== -ENOTSUP on
 * Linux) and leave the image untouched.
 * ------------------------------------------------------------------------ */

/* Write a LUKS header and encrypt further I/O through this handle. */
CEPH_RBD_API int rbd_encryption_format(rbd_image_t image,
				       rbd_encryption_format_t format,
				       rbd_encryption_options_t opts,
				       size_t opts_size);

/* Unlock an existing LUKS header; later I/O on this handle is decrypted. */
CEPH_RBD_API int rbd_encryption_load(rbd_image_t image,
				     rbd_encryption_format_t format,
				     rbd_encryption_options_t opts,
				     size_t opts_size);

/* ------------------------------------------------------------------------
 * The rest of the Pacific C API
 *
 * Which of these librbdlite implements itself and which it forwards to the
 * system's librbd is listed in the README (Function table); the notes per
 * family below say the semantics, which are librbd 16.2's throughout.
 * ------------------------------------------------------------------------ */

/* Flags of rbd_snap_create2() and rbd_snap_remove2(). */
#define RBD_SNAP_CREATE_SKIP_QUIESCE	(1 << 0)
#define RBD_SNAP_CREATE_IGNORE_QUIESCE_ERROR	(1 << 1)
#define RBD_SNAP_REMOVE_UNPROTECT	(1 << 0)
#define RBD_SNAP_REMOVE_FLATTEN	(1 << 1)
#define RBD_SNAP_REMOVE_FORCE	(RBD_SNAP_REMOVE_UNPROTECT | RBD_SNAP_REMOVE_FLATTEN)

/* Names of rbd_mirror_peer_site_set_attributes() keys. */
#define RBD_MIRROR_PEER_ATTRIBUTE_NAME_MON_HOST	"mon_host"
#define RBD_MIRROR_PEER_ATTRIBUTE_NAME_KEY	"key"

typedef void *rbd_pool_stats_t;

typedef struct {
	const char *pool_name;
	const char *image_name;
	const char *image_id;
	bool trash;
} rbd_child_info_t;

typedef enum {
	RBD_MIRROR_MODE_DISABLED,
	RBD_MIRROR_MODE_IMAGE,
	RBD_MIRROR_MODE_POOL,
} rbd_mirror_mode_t;

typedef enum {
	RBD_MIRROR_PEER_DIRECTION_RX = 0,
	RBD_MIRROR_PEER_DIRECTION_TX = 1,
	RBD_MIRROR_PEER_DIRECTION_RX_TX = 2,
} rbd_mirror_peer_direction_t;

typedef struct {
	char *uuid;
	char *cluster_name;
	char *client_name;
} rbd_mirror_peer_t CEPH_RBD_DEPRECATED;

typedef struct {
	char *uuid;
	rbd_mirror_peer_direction_t direction;
	char *site_name;
	char *mirror_uuid;
	char *client_name;
	time_t last_seen;
} rbd_mirror_peer_site_t;

typedef enum {
	RBD_MIRROR_IMAGE_MODE_JOURNAL = 0,
	RBD_MIRROR_IMAGE_MODE_SNAPSHOT = 1,
} rbd_mirror_image_mode_t;

typedef enum {
	RBD_MIRROR_IMAGE_DISABLING = 0,
	RBD_MIRROR_IMAGE_ENABLED = 1,
	RBD_MIRROR_IMAGE_DISABLED = 2,
} rbd_mirror_image_state_t;

typedef struct {
	char *global_id;
	rbd_mirror_image_state_t state;
	bool primary;
} rbd_mirror_image_info_t;

typedef enum {
	MIRROR_IMAGE_STATUS_STATE_UNKNOWN = 0,
	MIRROR_IMAGE_STATUS_STATE_ERROR = 1,
	MIRROR_IMAGE_STATUS_STATE_SYNCING = 2,
	MIRROR_IMAGE_STATUS_STATE_STARTING_REPLAY = 3,
	MIRROR_IMAGE_STATUS_STATE_REPLAYING = 4,
	MIRROR_IMAGE_STATUS_STATE_STOPPING_REPLAY = 5,
	MIRROR_IMAGE_STATUS_STATE_STOPPED = 6,
} rbd_mirror_image_status_state_t;

typedef struct {
	char *name;
	rbd_mirror_image_info_t info;
	rbd_mirror_image_status_state_t state;
	char *description;
	time_t last_update;
	bool up;
} rbd_mirror_image_status_t CEPH_RBD_DEPRECATED;

typedef struct {
	char *mirror_uuid;
	rbd_mirror_image_status_state_t state;
	char *description;
	time_t last_update;
	bool up;
} rbd_mirror_image_site_status_t;

typedef struct {
	char *name;
	rbd_mirror_image_info_t info;
	uint32_t site_statuses_count;
	rbd_mirror_image_site_status_t *site_statuses;
} rbd_mirror_image_global_status_t;

typedef enum {
	RBD_GROUP_IMAGE_STATE_ATTACHED,
	RBD_GROUP_IMAGE_STATE_INCOMPLETE,
} rbd_group_image_state_t;

typedef struct {
	char *name;
	int64_t pool;
	rbd_group_image_state_t state;
} rbd_group_image_info_t;

typedef struct {
	char *name;
	int64_t pool;
} rbd_group_info_t;

typedef enum {
	RBD_GROUP_SNAP_STATE_INCOMPLETE,
	RBD_GROUP_SNAP_STATE_COMPLETE,
} rbd_group_snap_state_t;

typedef struct {
	char *name;
	rbd_group_snap_state_t state;
} rbd_group_snap_info_t;

typedef struct {
	int64_t group_pool;
	char *group_name;
	char *group_snap_name;
} rbd_snap_group_namespace_t;

typedef enum {
	RBD_SNAP_MIRROR_STATE_PRIMARY,
	RBD_SNAP_MIRROR_STATE_PRIMARY_DEMOTED,
	RBD_SNAP_MIRROR_STATE_NON_PRIMARY,
	RBD_SNAP_MIRROR_STATE_NON_PRIMARY_DEMOTED,
} rbd_snap_mirror_state_t;

typedef struct {
	rbd_snap_mirror_state_t state;
	size_t mirror_peer_uuids_count;
	char *mirror_peer_uuids;
	bool complete;
	char *primary_mirror_uuid;
	uint64_t primary_snap_id;
	uint64_t last_copied_object_number;
} rbd_snap_mirror_namespace_t;

typedef enum {
	RBD_TRASH_IMAGE_SOURCE_USER = 0,
	RBD_TRASH_IMAGE_SOURCE_MIRRORING = 1,
	RBD_TRASH_IMAGE_SOURCE_MIGRATION = 2,
	RBD_TRASH_IMAGE_SOURCE_REMOVING = 3,
	RBD_TRASH_IMAGE_SOURCE_USER_PARENT = 4,
} rbd_trash_image_source_t;

typedef struct {
	char *id;
	char *name;
	rbd_trash_image_source_t source;
	time_t deletion_time;
	time_t deferment_end_time;
} rbd_trash_image_info_t;

typedef struct {
	char *addr;
	int64_t id;
	uint64_t cookie;
} rbd_image_watcher_t;

typedef enum {
	RBD_IMAGE_MIGRATION_STATE_UNKNOWN = -1,
	RBD_IMAGE_MIGRATION_STATE_ERROR = 0,
	RBD_IMAGE_MIGRATION_STATE_PREPARING = 1,
	RBD_IMAGE_MIGRATION_STATE_PREPARED = 2,
	RBD_IMAGE_MIGRATION_STATE_EXECUTING = 3,
	RBD_IMAGE_MIGRATION_STATE_EXECUTED = 4,
	RBD_IMAGE_MIGRATION_STATE_ABORTING = 5,
} rbd_image_migration_state_t;

typedef struct {
	int64_t source_pool_id;
	char *source_pool_namespace;
	char *source_image_name;
	char *source_image_id;
	int64_t dest_pool_id;
	char *dest_pool_namespace;
	char *dest_image_name;
	char *dest_image_id;
	rbd_image_migration_state_t state;
	char *state_description;
} rbd_image_migration_status_t;

typedef enum {
	RBD_CONFIG_SOURCE_CONFIG = 0,
	RBD_CONFIG_SOURCE_POOL = 1,
	RBD_CONFIG_SOURCE_IMAGE = 2,
} rbd_config_source_t;

typedef struct {
	char *name;
	char *value;
	rbd_config_source_t source;
} rbd_config_option_t;

typedef enum {
	RBD_POOL_STAT_OPTION_IMAGES,
	RBD_POOL_STAT_OPTION_IMAGE_PROVISIONED_BYTES,
	RBD_POOL_STAT_OPTION_IMAGE_MAX_PROVISIONED_BYTES,
	RBD_POOL_STAT_OPTION_IMAGE_SNAPSHOTS,
	RBD_POOL_STAT_OPTION_TRASH_IMAGES,
	RBD_POOL_STAT_OPTION_TRASH_PROVISIONED_BYTES,
	RBD_POOL_STAT_OPTION_TRASH_MAX_PROVISIONED_BYTES,
	RBD_POOL_STAT_OPTION_TRASH_SNAPSHOTS,
} rbd_pool_stat_option_t;

/* ---- Snapshots: by id, protection, limits, namespaces ------------------ */

/*
 * Snapshots by id and name, protection, limits and namespaces.  All take an
 * open image (any snapshot view); snapshot ids are those of rbd_snap_list().
 * Names are compared exactly; "" is not a snapshot name.  The *_cleanup calls
 * free what the matching getter malloc'ed and accept a zeroed struct.
 */
CEPH_RBD_API int rbd_snap_create2(rbd_image_t image, const char *snap_name,
				  uint32_t flags, librbd_progress_fn_t cb,
				  void *cbdata);
CEPH_RBD_API int rbd_snap_remove2(rbd_image_t image, const char *snap_name,
				  uint32_t flags, librbd_progress_fn_t cb,
				  void *cbdata);
CEPH_RBD_API int rbd_snap_remove_by_id(rbd_image_t image, uint64_t snap_id);
CEPH_RBD_API int rbd_snap_rollback_with_progress(rbd_image_t image,
						 const char *snapname,
						 librbd_progress_fn_t cb,
						 void *cbdata);
CEPH_RBD_API int rbd_snap_rename(rbd_image_t image, const char *snapname,
				 const char* dstsnapsname);
CEPH_RBD_API int rbd_snap_protect(rbd_image_t image, const char *snap_name);
CEPH_RBD_API int rbd_snap_unprotect(rbd_image_t image, const char *snap_name);
CEPH_RBD_API int rbd_snap_is_protected(rbd_image_t image, const char *snap_name,
				       int *is_protected);
CEPH_RBD_API int rbd_snap_get_limit(rbd_image_t image, uint64_t *limit);
CEPH_RBD_API int rbd_snap_set_limit(rbd_image_t image, uint64_t limit);
CEPH_RBD_API int rbd_snap_get_timestamp(rbd_image_t image, uint64_t snap_id,
					struct timespec *timestamp);
CEPH_RBD_API int rbd_snap_set_by_id(rbd_image_t image, uint64_t snap_id);
CEPH_RBD_API int rbd_snap_get_name(rbd_image_t image, uint64_t snap_id,
				   char *snapname, size_t *name_len);
CEPH_RBD_API int rbd_snap_get_id(rbd_image_t image, const char *snapname,
				 uint64_t *snap_id);
CEPH_RBD_API int rbd_snap_get_namespace_type(rbd_image_t image,
					     uint64_t snap_id,
					     rbd_snap_namespace_type_t *namespace_type);
CEPH_RBD_API int rbd_snap_get_group_namespace(rbd_image_t image,
					      uint64_t snap_id,
					      rbd_snap_group_namespace_t *group_snap,
					      size_t group_snap_size);
CEPH_RBD_API int rbd_snap_group_namespace_cleanup(rbd_snap_group_namespace_t *group_snap,
						  size_t group_snap_size);
CEPH_RBD_API int rbd_snap_get_trash_namespace(rbd_image_t image,
					      uint64_t snap_id,
					      char* original_name,
					      size_t max_length);
CEPH_RBD_API int rbd_snap_get_mirror_namespace( rbd_image_t image,
					       uint64_t snap_id,
					       rbd_snap_mirror_namespace_t *mirror_snap,
					       size_t mirror_snap_size);
CEPH_RBD_API int rbd_snap_mirror_namespace_cleanup( rbd_snap_mirror_namespace_t *mirror_snap,
						   size_t mirror_snap_size);

/* ---- Clones, flatten and children -------------------------------------- */

/*
 * Clones (layering) and their parents' children.  rbd_clone*() make a clone
 * of p_name@p_snapname (format 1 or 2 as RBD_IMAGE_OPTION_CLONE_FORMAT or the
 * rbd_default_clone_format option says); rbd_flatten*() copy the parent's data
 * into the clone and detach it; the children listings cover every pool and
 * namespace of the cluster.  Progress callbacks get (done, total, arg); a
 * negative return cancels the operation with -ECANCELED.
 */
CEPH_RBD_API int rbd_clone(rados_ioctx_t p_ioctx, const char *p_name,
			   const char *p_snapname, rados_ioctx_t c_ioctx,
			   const char *c_name, uint64_t features, int *c_order);
CEPH_RBD_API int rbd_clone2(rados_ioctx_t p_ioctx, const char *p_name,
			    const char *p_snapname, rados_ioctx_t c_ioctx,
			    const char *c_name, uint64_t features, int *c_order,
			    uint64_t stripe_unit, int stripe_count);
CEPH_RBD_API int rbd_clone3(rados_ioctx_t p_ioctx, const char *p_name,
			    const char *p_snapname, rados_ioctx_t c_ioctx,
			    const char *c_name, rbd_image_options_t c_opts);
CEPH_RBD_API int rbd_flatten(rbd_image_t image);
CEPH_RBD_API int rbd_flatten_with_progress(rbd_image_t image,
					   librbd_progress_fn_t cb,
					   void *cbdata);
CEPH_RBD_API ssize_t rbd_list_children(rbd_image_t image, char *pools,
				       size_t *pools_len, char *images,
				       size_t *images_len) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_list_children2(rbd_image_t image,
				    rbd_child_info_t *children,
				    int *max_children) CEPH_RBD_DEPRECATED;
CEPH_RBD_API void rbd_list_child_cleanup(rbd_child_info_t *child) CEPH_RBD_DEPRECATED;
CEPH_RBD_API void rbd_list_children_cleanup(rbd_child_info_t *children,
					    size_t num_children) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_list_children3(rbd_image_t image,
				    rbd_linked_image_spec_t *images,
				    size_t *max_images);
CEPH_RBD_API int rbd_list_descendants(rbd_image_t image,
				      rbd_linked_image_spec_t *images,
				      size_t *max_images);

/* ---- Copies ------------------------------------------------------------ */

/*
 * Copies of an image's data (rbd_copy*, HEAD or the open snapshot only) or of
 * the whole image with its snapshots and parent link (rbd_deep_copy*) into a
 * new image dest_name in dest_io.  Progress callbacks as for rbd_flatten().
 */
CEPH_RBD_API int rbd_copy(rbd_image_t image, rados_ioctx_t dest_io_ctx,
			  const char *destname);
CEPH_RBD_API int rbd_copy2(rbd_image_t src, rbd_image_t dest);
CEPH_RBD_API int rbd_copy3(rbd_image_t src, rados_ioctx_t dest_io_ctx,
			   const char *destname, rbd_image_options_t dest_opts);
CEPH_RBD_API int rbd_copy4(rbd_image_t src, rados_ioctx_t dest_io_ctx,
			   const char *destname, rbd_image_options_t dest_opts,
			   size_t sparse_size);
CEPH_RBD_API int rbd_copy_with_progress(rbd_image_t image, rados_ioctx_t dest_p,
					const char *destname,
					librbd_progress_fn_t cb, void *cbdata);
CEPH_RBD_API int rbd_copy_with_progress2(rbd_image_t src, rbd_image_t dest,
					 librbd_progress_fn_t cb, void *cbdata);
CEPH_RBD_API int rbd_copy_with_progress3(rbd_image_t image,
					 rados_ioctx_t dest_p,
					 const char *destname,
					 rbd_image_options_t dest_opts,
					 librbd_progress_fn_t cb, void *cbdata);
CEPH_RBD_API int rbd_copy_with_progress4(rbd_image_t image,
					 rados_ioctx_t dest_p,
					 const char *destname,
					 rbd_image_options_t dest_opts,
					 librbd_progress_fn_t cb, void *cbdata,
					 size_t sparse_size);
CEPH_RBD_API int rbd_deep_copy(rbd_image_t src, rados_ioctx_t dest_io_ctx,
			       const char *destname,
			       rbd_image_options_t dest_opts);
CEPH_RBD_API int rbd_deep_copy_with_progress(rbd_image_t image,
					     rados_ioctx_t dest_io_ctx,
					     const char *destname,
					     rbd_image_options_t dest_opts,
					     librbd_progress_fn_t cb,
					     void *cbdata);

/* ---- Image information and maintenance --------------------------------- */

/*
 * Image information and maintenance calls on an open image.  Buffer getters
 * follow librbd's size protocol: -ERANGE with *len set to the size needed.
 * Timestamps are the header's creation, last access and last modification
 * times.  rbd_resize2(allow_shrink=false) refuses to shrink with -EINVAL.
 */
CEPH_RBD_API int rbd_remove_with_progress(rados_ioctx_t io, const char *name,
					  librbd_progress_fn_t cb,
					  void *cbdata);
CEPH_RBD_API int rbd_rename(rados_ioctx_t src_io_ctx, const char *srcname,
			    const char *destname);
CEPH_RBD_API int rbd_resize2(rbd_image_t image, uint64_t size,
			     bool allow_shrink, librbd_progress_fn_t cb,
			     void *cbdata);
CEPH_RBD_API int rbd_resize_with_progress(rbd_image_t image, uint64_t size,
					  librbd_progress_fn_t cb,
					  void *cbdata);
CEPH_RBD_API int rbd_get_old_format(rbd_image_t image, uint8_t *old);
CEPH_RBD_API int rbd_update_features(rbd_image_t image, uint64_t features,
				     uint8_t enabled);
CEPH_RBD_API int rbd_get_op_features(rbd_image_t image, uint64_t *op_features);
CEPH_RBD_API int rbd_get_create_timestamp(rbd_image_t image,
					  struct timespec *timestamp);
CEPH_RBD_API int rbd_get_access_timestamp(rbd_image_t image,
					  struct timespec *timestamp);
CEPH_RBD_API int rbd_get_modify_timestamp(rbd_image_t image,
					  struct timespec *timestamp);
CEPH_RBD_API int rbd_get_name(rbd_image_t image, char *name, size_t *name_len);
CEPH_RBD_API int rbd_get_migration_source_spec(rbd_image_t image,
					       char* source_spec,
					       size_t* max_len);
CEPH_RBD_API int rbd_get_group(rbd_image_t image, rbd_group_info_t *group_info,
			       size_t group_info_size);
CEPH_RBD_API int rbd_rebuild_object_map(rbd_image_t image,
					librbd_progress_fn_t cb, void *cbdata);
CEPH_RBD_API int rbd_sparsify(rbd_image_t image, size_t sparse_size);
CEPH_RBD_API int rbd_sparsify_with_progress(rbd_image_t image,
					    size_t sparse_size,
					    librbd_progress_fn_t cb,
					    void *cbdata);
CEPH_RBD_API int rbd_metadata_remove(rbd_image_t image, const char *key);
CEPH_RBD_API int rbd_metadata_list(rbd_image_t image, const char *start,
				   uint64_t max, char *keys, size_t *key_len,
				   char *values, size_t *vals_len);
CEPH_RBD_API int rbd_watchers_list(rbd_image_t image,
				   rbd_image_watcher_t *watchers,
				   size_t *max_watchers);
CEPH_RBD_API void rbd_watchers_list_cleanup(rbd_image_watcher_t *watchers,
					    size_t num_watchers);

/* ---- Advisory locks ---------------------------------------------------- */

/*
 * Advisory locks (the `rbd lock` kind, cls_lock "rbd_lock" on the header).
 * They share the lock object with the exclusive-lock feature's managed
 * lock: while a client holds that one, these fail with -EBUSY (and vice
 * versa).  The owner of a lock is this RADOS client; cookie and tag are
 * free strings.  rbd_list_lockers asks the OSD at every call.
 */
CEPH_RBD_API ssize_t rbd_list_lockers(rbd_image_t image, int *exclusive,
				      char *tag, size_t *tag_len, char *clients,
				      size_t *clients_len, char *cookies,
				      size_t *cookies_len, char *addrs,
				      size_t *addrs_len);
CEPH_RBD_API int rbd_lock_exclusive(rbd_image_t image, const char *cookie);
CEPH_RBD_API int rbd_lock_shared(rbd_image_t image, const char *cookie,
				 const char *tag);
CEPH_RBD_API int rbd_unlock(rbd_image_t image, const char *cookie);
CEPH_RBD_API int rbd_break_lock(rbd_image_t image, const char *client,
				const char *cookie);

/* ---- Iteration --------------------------------------------------------- */

/*
 * Whole-extent iteration.  rbd_read_iterate*() read [ofs, ofs + len) in
 * object-sized pieces and hand each to cb (holes as zeros; for
 * rbd_read_iterate2 the offset is relative to ofs); a negative cb return
 * stops the walk and is returned.  rbd_diff_iterate() is
 * rbd_diff_iterate2() with include_parent = 1 and whole_object = 0.
 */
CEPH_RBD_API int64_t rbd_read_iterate(rbd_image_t image, uint64_t ofs,
				      size_t len,
				      int (*cb)(uint64_t, size_t, const char *, void *),
				      void *arg);
CEPH_RBD_API int rbd_read_iterate2(rbd_image_t image, uint64_t ofs,
				   uint64_t len,
				   int (*cb)(uint64_t, size_t, const char *, void *),
				   void *arg);
CEPH_RBD_API int rbd_diff_iterate(rbd_image_t image, const char *fromsnapname,
				  uint64_t ofs, uint64_t len,
				  int (*cb)(uint64_t, size_t, int, void *),
				  void *arg);

/* ---- Asynchronous open and close --------------------------------------- */

/*
 * Asynchronous open and close: they return at once and complete c later;
 * rbd_aio_get_return_value(c) is then 0 or negative errno.  *image is
 * written before completion and is only valid once c completed with 0.
 */
CEPH_RBD_API int rbd_aio_open(rados_ioctx_t io, const char *name,
			      rbd_image_t *image, const char *snap_name,
			      rbd_completion_t c);
CEPH_RBD_API int rbd_aio_open_by_id(rados_ioctx_t io, const char *id,
				    rbd_image_t *image, const char *snap_name,
				    rbd_completion_t c);
CEPH_RBD_API int rbd_aio_open_read_only(rados_ioctx_t io, const char *name,
					rbd_image_t *image,
					const char *snap_name,
					rbd_completion_t c);
CEPH_RBD_API int rbd_aio_open_by_id_read_only(rados_ioctx_t io, const char *id,
					      rbd_image_t *image,
					      const char *snap_name,
					      rbd_completion_t c);
CEPH_RBD_API int rbd_aio_close(rbd_image_t image, rbd_completion_t c);

/* ---- Quiesce ----------------------------------------------------------- */

/*
 * Quiesce callbacks: another client creating a snapshot asks watchers to
 * quiesce I/O first.  quiesce_cb(arg) is called; the snapshot waits until
 * rbd_quiesce_complete(image, handle, r) reports r (a negative r makes the
 * snapshot fail unless it ignores quiesce errors); unquiesce_cb(arg) follows.
 */
CEPH_RBD_API int rbd_quiesce_watch(rbd_image_t image,
				   rbd_update_callback_t quiesce_cb,
				   rbd_update_callback_t unquiesce_cb,
				   void *arg, uint64_t *handle);
CEPH_RBD_API void rbd_quiesce_complete(rbd_image_t image, uint64_t handle,
				       int r);
CEPH_RBD_API int rbd_quiesce_unwatch(rbd_image_t image, uint64_t handle);

/* ---- Configuration lists ----------------------------------------------- */

/*
 * Configuration overrides: the rbd_* options with the value in effect for
 * the pool (rbd_config_pool_list) or the image (rbd_config_image_list), and
 * where each came from.  Free the arrays with the matching _cleanup call.
 */
CEPH_RBD_API int rbd_config_pool_list(rados_ioctx_t io_ctx,
				      rbd_config_option_t *options,
				      int *max_options);
CEPH_RBD_API void rbd_config_pool_list_cleanup(rbd_config_option_t *options,
					       int max_options);
CEPH_RBD_API int rbd_config_image_list(rbd_image_t image,
				       rbd_config_option_t *options,
				       int *max_options);
CEPH_RBD_API void rbd_config_image_list_cleanup(rbd_config_option_t *options,
						int max_options);

/* ---- Feature strings and cleanups -------------------------------------- */

/*
 * Small helpers: feature bit names (rbd_features_to_string writes a
 * comma-separated list, -ERANGE with *size set when the buffer is short;
 * rbd_features_from_string parses one, -EINVAL on an unknown name), option
 * presence, and freeing of single image specs and linked-image spec arrays.
 */
CEPH_RBD_API int rbd_image_options_is_set(rbd_image_options_t opts, int optname,
					  bool* is_set);
CEPH_RBD_API void rbd_image_spec_cleanup(rbd_image_spec_t *image);
CEPH_RBD_API void rbd_linked_image_spec_list_cleanup( rbd_linked_image_spec_t *images,
						     size_t num_images);
CEPH_RBD_API int rbd_features_to_string(uint64_t features, char *str_features,
					size_t *size);
CEPH_RBD_API int rbd_features_from_string(const char *str_features,
					  uint64_t *features);

/* ---- Trash ------------------------------------------------------------- */

/*
 * Trash: images moved aside (rbd_trash_move, optionally with a deferment
 * delay), listed, restored, removed or purged.  Pool-level calls, forwarded to
 * the system's librbd (see the README's delegation section); -EOPNOTSUPP
 * with a diagnostic when it cannot be loaded.
 */
CEPH_RBD_API int rbd_trash_move(rados_ioctx_t io, const char *name,
				uint64_t delay);
CEPH_RBD_API int rbd_trash_get(rados_ioctx_t io, const char *id,
			       rbd_trash_image_info_t *info);
CEPH_RBD_API void rbd_trash_get_cleanup(rbd_trash_image_info_t *info);
CEPH_RBD_API int rbd_trash_list(rados_ioctx_t io,
				rbd_trash_image_info_t *trash_entries,
				size_t *num_entries);
CEPH_RBD_API void rbd_trash_list_cleanup(rbd_trash_image_info_t *trash_entries,
					 size_t num_entries);
CEPH_RBD_API int rbd_trash_purge(rados_ioctx_t io, time_t expire_ts,
				 float threshold);
CEPH_RBD_API int rbd_trash_purge_with_progress(rados_ioctx_t io,
					       time_t expire_ts,
					       float threshold,
					       librbd_progress_fn_t cb,
					       void* cbdata);
CEPH_RBD_API int rbd_trash_remove(rados_ioctx_t io, const char *id, bool force);
CEPH_RBD_API int rbd_trash_remove_with_progress(rados_ioctx_t io,
						const char *id, bool force,
						librbd_progress_fn_t cb,
						void *cbdata);
CEPH_RBD_API int rbd_trash_restore(rados_ioctx_t io, const char *id,
				   const char *name);

/* ---- Migration --------------------------------------------------------- */

/*
 * Live migration of an image (prepare, execute, commit/abort, status) and
 * import from an external source.  Forwarded to the system's librbd; the
 * image options passed in are copied into a librbd options object.
 */
CEPH_RBD_API int rbd_migration_prepare(rados_ioctx_t ioctx,
				       const char *image_name,
				       rados_ioctx_t dest_ioctx,
				       const char *dest_image_name,
				       rbd_image_options_t opts);
CEPH_RBD_API int rbd_migration_prepare_import( const char *source_spec,
					      rados_ioctx_t dest_ioctx,
					      const char *dest_image_name,
					      rbd_image_options_t opts);
CEPH_RBD_API int rbd_migration_execute(rados_ioctx_t ioctx,
				       const char *image_name);
CEPH_RBD_API int rbd_migration_execute_with_progress(rados_ioctx_t ioctx,
						     const char *image_name,
						     librbd_progress_fn_t cb,
						     void *cbdata);
CEPH_RBD_API int rbd_migration_abort(rados_ioctx_t ioctx,
				     const char *image_name);
CEPH_RBD_API int rbd_migration_abort_with_progress(rados_ioctx_t ioctx,
						   const char *image_name,
						   librbd_progress_fn_t cb,
						   void *cbdata);
CEPH_RBD_API int rbd_migration_commit(rados_ioctx_t ioctx,
				      const char *image_name);
CEPH_RBD_API int rbd_migration_commit_with_progress(rados_ioctx_t ioctx,
						    const char *image_name,
						    librbd_progress_fn_t cb,
						    void *cbdata);
CEPH_RBD_API int rbd_migration_status(rados_ioctx_t ioctx,
				      const char *image_name,
				      rbd_image_migration_status_t *status,
				      size_t status_size);
CEPH_RBD_API void rbd_migration_status_cleanup( rbd_image_migration_status_t *status);

/* ---- Mirroring --------------------------------------------------------- */

/*
 * RBD mirroring: pool mode and peers, site name, image enable/disable,
 * promotion, resync, snapshots and status.  Forwarded to the system's librbd;
 * image-level calls run on a short-lived librbd handle of the same image.
 */
CEPH_RBD_API int rbd_mirror_site_name_get(rados_t cluster, char *name,
					  size_t *max_len);
CEPH_RBD_API int rbd_mirror_site_name_set(rados_t cluster, const char *name);
CEPH_RBD_API int rbd_mirror_mode_get(rados_ioctx_t io_ctx,
				     rbd_mirror_mode_t *mirror_mode);
CEPH_RBD_API int rbd_mirror_mode_set(rados_ioctx_t io_ctx,
				     rbd_mirror_mode_t mirror_mode);
CEPH_RBD_API int rbd_mirror_uuid_get(rados_ioctx_t io_ctx, char *uuid,
				     size_t *max_len);
CEPH_RBD_API int rbd_mirror_peer_bootstrap_create( rados_ioctx_t io_ctx,
						  char *token, size_t *max_len);
CEPH_RBD_API int rbd_mirror_peer_bootstrap_import( rados_ioctx_t io_ctx,
						  rbd_mirror_peer_direction_t direction,
						  const char *token);
CEPH_RBD_API int rbd_mirror_peer_site_add( rados_ioctx_t io_ctx, char *uuid,
					  size_t uuid_max_length,
					  rbd_mirror_peer_direction_t direction,
					  const char *site_name,
					  const char *client_name);
CEPH_RBD_API int rbd_mirror_peer_site_set_name( rados_ioctx_t io_ctx,
					       const char *uuid,
					       const char *site_name);
CEPH_RBD_API int rbd_mirror_peer_site_set_client_name( rados_ioctx_t io_ctx,
						      const char *uuid,
						      const char *client_name);
CEPH_RBD_API int rbd_mirror_peer_site_set_direction( rados_ioctx_t io_ctx,
						    const char *uuid,
						    rbd_mirror_peer_direction_t direction);
CEPH_RBD_API int rbd_mirror_peer_site_remove( rados_ioctx_t io_ctx,
					     const char *uuid);
CEPH_RBD_API int rbd_mirror_peer_site_list( rados_ioctx_t io_ctx,
					   rbd_mirror_peer_site_t *peers,
					   int *max_peers);
CEPH_RBD_API void rbd_mirror_peer_site_list_cleanup( rbd_mirror_peer_site_t *peers,
						    int max_peers);
CEPH_RBD_API int rbd_mirror_peer_site_get_attributes( rados_ioctx_t p,
						     const char *uuid,
						     char *keys,
						     size_t *max_key_len,
						     char *values,
						     size_t *max_value_len,
						     size_t *key_value_count);
CEPH_RBD_API int rbd_mirror_peer_site_set_attributes( rados_ioctx_t p,
						     const char *uuid,
						     const char *keys,
						     const char *values,
						     size_t key_value_count);
CEPH_RBD_API int rbd_mirror_image_global_status_list( rados_ioctx_t io_ctx,
						     const char *start_id,
						     size_t max,
						     char **image_ids,
						     rbd_mirror_image_global_status_t *images,
						     size_t *len);
CEPH_RBD_API void rbd_mirror_image_global_status_list_cleanup( char **image_ids,
							      rbd_mirror_image_global_status_t *images,
							      size_t len);
CEPH_RBD_API int rbd_mirror_peer_add( rados_ioctx_t io_ctx, char *uuid,
				     size_t uuid_max_length,
				     const char *cluster_name,
				     const char *client_name) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_peer_remove( rados_ioctx_t io_ctx,
					const char *uuid) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_peer_list( rados_ioctx_t io_ctx,
				      rbd_mirror_peer_t *peers,
				      int *max_peers) CEPH_RBD_DEPRECATED;
CEPH_RBD_API void rbd_mirror_peer_list_cleanup( rbd_mirror_peer_t *peers,
					       int max_peers) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_peer_set_client( rados_ioctx_t io_ctx,
					    const char *uuid,
					    const char *client_name) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_peer_set_cluster( rados_ioctx_t io_ctx,
					     const char *uuid,
					     const char *cluster_name) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_peer_get_attributes( rados_ioctx_t p,
						const char *uuid, char *keys,
						size_t *max_key_len,
						char *values,
						size_t *max_value_len,
						size_t *key_value_count) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_peer_set_attributes( rados_ioctx_t p,
						const char *uuid,
						const char *keys,
						const char *values,
						size_t key_value_count) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_image_status_list( rados_ioctx_t io_ctx,
					      const char *start_id, size_t max,
					      char **image_ids,
					      rbd_mirror_image_status_t *images,
					      size_t *len) CEPH_RBD_DEPRECATED;
CEPH_RBD_API void rbd_mirror_image_status_list_cleanup( char **image_ids,
						       rbd_mirror_image_status_t *images,
						       size_t len) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_image_status_summary( rados_ioctx_t io_ctx,
						 rbd_mirror_image_status_state_t *states,
						 int *counts, size_t *maxlen);
CEPH_RBD_API int rbd_mirror_image_instance_id_list(rados_ioctx_t io_ctx,
						   const char *start_id,
						   size_t max, char **image_ids,
						   char **instance_ids,
						   size_t *len);
CEPH_RBD_API void rbd_mirror_image_instance_id_list_cleanup(char **image_ids,
							    char **instance_ids,
							    size_t len);
CEPH_RBD_API int rbd_mirror_image_info_list( rados_ioctx_t io_ctx,
					    rbd_mirror_image_mode_t *mode_filter,
					    const char *start_id, size_t max,
					    char **image_ids,
					    rbd_mirror_image_mode_t *mode_entries,
					    rbd_mirror_image_info_t *info_entries,
					    size_t *num_entries);
CEPH_RBD_API void rbd_mirror_image_info_list_cleanup( char **image_ids,
						     rbd_mirror_image_info_t *info_entries,
						     size_t num_entries);
CEPH_RBD_API int rbd_mirror_image_enable(rbd_image_t image) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_image_enable2(rbd_image_t image,
					  rbd_mirror_image_mode_t mode);
CEPH_RBD_API int rbd_mirror_image_disable(rbd_image_t image, bool force);
CEPH_RBD_API int rbd_mirror_image_promote(rbd_image_t image, bool force);
CEPH_RBD_API int rbd_mirror_image_demote(rbd_image_t image);
CEPH_RBD_API int rbd_mirror_image_resync(rbd_image_t image);
CEPH_RBD_API int rbd_mirror_image_create_snapshot(rbd_image_t image,
						  uint64_t *snap_id);
CEPH_RBD_API int rbd_mirror_image_create_snapshot2(rbd_image_t image,
						   uint32_t flags,
						   uint64_t *snap_id);
CEPH_RBD_API int rbd_mirror_image_get_info(rbd_image_t image,
					   rbd_mirror_image_info_t *mirror_image_info,
					   size_t info_size);
CEPH_RBD_API void rbd_mirror_image_get_info_cleanup( rbd_mirror_image_info_t *mirror_image_info);
CEPH_RBD_API int rbd_mirror_image_get_mode(rbd_image_t image,
					   rbd_mirror_image_mode_t *mode);
CEPH_RBD_API int rbd_mirror_image_get_global_status( rbd_image_t image,
						    rbd_mirror_image_global_status_t *mirror_image_global_status,
						    size_t status_size);
CEPH_RBD_API void rbd_mirror_image_global_status_cleanup( rbd_mirror_image_global_status_t *mirror_image_global_status);
CEPH_RBD_API int rbd_mirror_image_get_status( rbd_image_t image,
					     rbd_mirror_image_status_t *mirror_image_status,
					     size_t status_size) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_mirror_image_get_instance_id(rbd_image_t image,
						  char *instance_id,
						  size_t *id_max_length);
CEPH_RBD_API int rbd_aio_mirror_image_promote(rbd_image_t image, bool force,
					      rbd_completion_t c);
CEPH_RBD_API int rbd_aio_mirror_image_demote(rbd_image_t image,
					     rbd_completion_t c);
CEPH_RBD_API int rbd_aio_mirror_image_get_info(rbd_image_t image,
					       rbd_mirror_image_info_t *mirror_image_info,
					       size_t info_size,
					       rbd_completion_t c);
CEPH_RBD_API int rbd_aio_mirror_image_get_mode(rbd_image_t image,
					       rbd_mirror_image_mode_t *mode,
					       rbd_completion_t c);
CEPH_RBD_API int rbd_aio_mirror_image_get_global_status( rbd_image_t image,
							rbd_mirror_image_global_status_t *mirror_global_image_status,
							size_t status_size,
							rbd_completion_t c);
CEPH_RBD_API int rbd_aio_mirror_image_get_status( rbd_image_t image,
						 rbd_mirror_image_status_t *mirror_image_status,
						 size_t status_size,
						 rbd_completion_t c) CEPH_RBD_DEPRECATED;
CEPH_RBD_API int rbd_aio_mirror_image_create_snapshot(rbd_image_t image,
						      uint32_t flags,
						      uint64_t *snap_id,
						      rbd_completion_t c);

/* ---- Groups ------------------------------------------------------------ */

/*
 * Consistency groups: groups, their images and group snapshots.  Forwarded
 * to the system's librbd.
 */
CEPH_RBD_API int rbd_group_create(rados_ioctx_t p, const char *name);
CEPH_RBD_API int rbd_group_remove(rados_ioctx_t p, const char *name);
CEPH_RBD_API int rbd_group_list(rados_ioctx_t p, char *names, size_t *size);
CEPH_RBD_API int rbd_group_rename(rados_ioctx_t p, const char *src_name,
				  const char *dest_name);
CEPH_RBD_API int rbd_group_info_cleanup(rbd_group_info_t *group_info,
					size_t group_info_size);
CEPH_RBD_API int rbd_group_image_add(rados_ioctx_t group_p,
				     const char *group_name,
				     rados_ioctx_t image_p,
				     const char *image_name);
CEPH_RBD_API int rbd_group_image_remove(rados_ioctx_t group_p,
					const char *group_name,
					rados_ioctx_t image_p,
					const char *image_name);
CEPH_RBD_API int rbd_group_image_remove_by_id(rados_ioctx_t group_p,
					      const char *group_name,
					      rados_ioctx_t image_p,
					      const char *image_id);
CEPH_RBD_API int rbd_group_image_list(rados_ioctx_t group_p,
				      const char *group_name,
				      rbd_group_image_info_t *images,
				      size_t group_image_info_size,
				      size_t *num_entries);
CEPH_RBD_API int rbd_group_image_list_cleanup(rbd_group_image_info_t *images,
					      size_t group_image_info_size,
					      size_t num_entries);
CEPH_RBD_API int rbd_group_snap_create(rados_ioctx_t group_p,
				       const char *group_name,
				       const char *snap_name);
CEPH_RBD_API int rbd_group_snap_create2(rados_ioctx_t group_p,
					const char *group_name,
					const char *snap_name, uint32_t flags);
CEPH_RBD_API int rbd_group_snap_remove(rados_ioctx_t group_p,
				       const char *group_name,
				       const char *snap_name);
CEPH_RBD_API int rbd_group_snap_rename(rados_ioctx_t group_p,
				       const char *group_name,
				       const char *old_snap_name,
				       const char *new_snap_name);
CEPH_RBD_API int rbd_group_snap_list(rados_ioctx_t group_p,
				     const char *group_name,
				     rbd_group_snap_info_t *snaps,
				     size_t group_snap_info_size,
				     size_t *num_entries);
CEPH_RBD_API int rbd_group_snap_list_cleanup(rbd_group_snap_info_t *snaps,
					     size_t group_snap_info_size,
					     size_t num_entries);
CEPH_RBD_API int rbd_group_snap_rollback(rados_ioctx_t group_p,
					 const char *group_name,
					 const char *snap_name);
CEPH_RBD_API int rbd_group_snap_rollback_with_progress(rados_ioctx_t group_p,
						       const char *group_name,
						       const char *snap_name,
						       librbd_progress_fn_t cb,
						       void *cbdata);

/* ---- Namespaces, pool metadata and statistics -------------------------- */

/*
 * Namespaces, pool initialisation, pool metadata and pool statistics.
 * Forwarded to the system's librbd.
 */
CEPH_RBD_API int rbd_pool_metadata_get(rados_ioctx_t io_ctx, const char *key,
				       char *value, size_t *val_len);
CEPH_RBD_API int rbd_pool_metadata_set(rados_ioctx_t io_ctx, const char *key,
				       const char *value);
CEPH_RBD_API int rbd_pool_metadata_remove(rados_ioctx_t io_ctx,
					  const char *key);
CEPH_RBD_API int rbd_pool_metadata_list(rados_ioctx_t io_ctx, const char *start,
					uint64_t max, char *keys,
					size_t *key_len, char *values,
					size_t *vals_len);
CEPH_RBD_API int rbd_namespace_create(rados_ioctx_t io,
				      const char *namespace_name);
CEPH_RBD_API int rbd_namespace_remove(rados_ioctx_t io,
				      const char *namespace_name);
CEPH_RBD_API int rbd_namespace_list(rados_ioctx_t io, char *namespace_names,
				    size_t *size);
CEPH_RBD_API int rbd_pool_init(rados_ioctx_t io, bool force);
CEPH_RBD_API void rbd_pool_stats_create(rbd_pool_stats_t *stats);
CEPH_RBD_API void rbd_pool_stats_destroy(rbd_pool_stats_t stats);
CEPH_RBD_API int rbd_pool_stats_option_add_uint64(rbd_pool_stats_t stats,
						  int stat_option,
						  uint64_t* stat_val);
CEPH_RBD_API int rbd_pool_stats_get(rados_ioctx_t io, rbd_pool_stats_t stats);

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* CEPH_LIBRBD_H */
