/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rbdlite.h - librbdlite-only extensions
 *
 * librbdlite provides the librbd C API declared in <rbd/librbd.h>.  This
 * header adds the few calls that exist only in librbdlite; they all use
 * the rbdlite_ prefix.  A program that wants to keep working against the
 * real librbd should call them only after checking that librbdlite is the
 * library actually bound in the process, for example by looking the
 * symbol rbdlite_is_librbdlite up with dlsym(RTLD_DEFAULT, ...).
 *
 * Build with the flags from "pkg-config --cflags librbdlite", which add
 * -I<includedir>/rbdlite, and include this header as <rbdlite.h>.
 *
 * Unless stated otherwise, functions return 0 (or a non-negative value)
 * on success and a negative errno value on failure; errno is not used.
 */
#ifndef RBDLITE_H
#define RBDLITE_H

#include <stddef.h>
#include <stdint.h>

#include "rbd/librbd.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Version of librbdlite itself (the librbd interface version it
 * implements is LIBRBD_VER_* in <rbd/librbd.h>).
 */
#define RBDLITE_VERSION_MAJOR	0
#define RBDLITE_VERSION_MINOR	1
#define RBDLITE_VERSION_PATCH	0

/*
 * Return a static string "librbdlite X.Y.Z" naming the version of the
 * library loaded at run time, which may differ from the RBDLITE_VERSION_*
 * macros the program was compiled with.  Never NULL; do not free.
 */
CEPH_RBD_API const char *rbdlite_version(void);

/*
 * Return 1.  The function exists only in librbdlite, so a program or test
 * can find out whether the rbd_* symbols of this process are provided by
 * librbdlite or by the real librbd (e.g. under LD_PRELOAD) by looking
 * this symbol up, or by linking against it.
 */
CEPH_RBD_API int rbdlite_is_librbdlite(void);

/*
 * Process-wide counters, accumulated over the life of the process
 * across all images and threads.  They are updated with relaxed atomics:
 * each counter is exact, but a snapshot taken while I/O is in flight need
 * not be consistent across counters.
 *
 *   ios_submitted     asynchronous and synchronous requests accepted
 *   ios_completed     requests whose completion has been delivered
 *   mallocs_hot_path  heap allocations made on the I/O submission and
 *                     completion paths (ideally 0 in steady state)
 *   callback_batches  wake-ups of the completion dispatcher that ran at
 *                     least one callback
 *   callbacks_run     user completion callbacks invoked
 *   eventfd_writes    writes to notification descriptors registered with
 *                     rbd_set_image_notification()
 *   write_copies      write-data copies taken because a write's data was
 *                     kept past its submit call (it waited for the lock,
 *                     an object map update, a copy-up, a refresh, ...);
 *                     none with rbd_disable_zero_copy_writes=false
 *   write_copy_bytes  the bytes those copies hold
 *   sched_held        object writes the I/O scheduler held behind a write
 *                     in flight to the same object (rbd_io_scheduler=simple)
 *   sched_runs        RADOS ops that carried held writes: the held writes
 *                     to one object go in one op, those that touched end
 *                     to end as one write (sched_held - sched_runs shared
 *                     an op with another)
 *
 * New counters are only ever appended, so the layout of existing ones
 * never changes.
 */
struct rbdlite_stats {
	uint64_t ios_submitted;
	uint64_t ios_completed;
	uint64_t mallocs_hot_path;
	uint64_t callback_batches;
	uint64_t callbacks_run;
	uint64_t eventfd_writes;
	uint64_t write_copies;
	uint64_t write_copy_bytes;
	uint64_t sched_held;
	uint64_t sched_runs;
};

/*
 * Copy the current counters into *st.  size is the caller's
 * sizeof(struct rbdlite_stats).  The first min(size, this library's
 * sizeof(struct rbdlite_stats)) bytes are filled and any bytes beyond
 * that, up to size, are zeroed: a program built against an older, shorter
 * struct receives the fields it knows, and one built against a newer,
 * longer struct reads 0 for counters this library does not keep.
 * Returns 0, or -EINVAL if st is NULL, size is 0, or size is larger than
 * RBDLITE_STATS_SIZE_MAX (no version of the struct comes near it: such a
 * size is a bogus length, and nothing is written).
 */
#define RBDLITE_STATS_SIZE_MAX 4096
CEPH_RBD_API int rbdlite_get_stats(struct rbdlite_stats *st, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RBDLITE_H */
