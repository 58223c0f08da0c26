/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rbd/features.h - RBD image feature bits, as used by librbd
 *
 * Part of librbdlite's librbd-compatible public interface.  The values
 * are those of Ceph Pacific (16.2.x) and are part of the on-disk format:
 * they are stored in the "features" field of an image header object, so
 * they must never change.
 *
 * The include guard is deliberately the same as the upstream header's,
 * so that a translation unit can never see two different definitions.
 */
#ifndef CEPH_RBD_FEATURES_H
#define CEPH_RBD_FEATURES_H

/*
 * Per-image feature bits (64-bit mask, see rbd_get_features()).
 *
 *   LAYERING        the image may be a clone of a parent snapshot
 *   STRIPINGV2      non-default stripe unit / stripe count
 *   EXCLUSIVE_LOCK  writers must own the managed exclusive lock
 *   OBJECT_MAP      an object map tracks which data objects exist
 *   FAST_DIFF       the object map also tracks per-snapshot dirtiness
 *   DEEP_FLATTEN    snapshots of a clone can be flattened too
 *   JOURNALING      all writes go through a journal first
 *   DATA_POOL       data objects live in a separate pool
 *   OPERATIONS      op_features (below) restrict image operations
 *   MIGRATING       the image is the target/source of a live migration
 *   NON_PRIMARY     mirrored image that is not the primary copy
 *   DIRTY_CACHE     a persistent write-back cache holds unflushed data
 */
#define RBD_FEATURE_LAYERING		(1ULL << 0)
#define RBD_FEATURE_STRIPINGV2		(1ULL << 1)
#define RBD_FEATURE_EXCLUSIVE_LOCK	(1ULL << 2)
#define RBD_FEATURE_OBJECT_MAP		(1ULL << 3)
#define RBD_FEATURE_FAST_DIFF		(1ULL << 4)
#define RBD_FEATURE_DEEP_FLATTEN	(1ULL << 5)
#define RBD_FEATURE_JOURNALING		(1ULL << 6)
#define RBD_FEATURE_DATA_POOL		(1ULL << 7)
#define RBD_FEATURE_OPERATIONS		(1ULL << 8)
#define RBD_FEATURE_MIGRATING		(1ULL << 9)
#define RBD_FEATURE_NON_PRIMARY		(1ULL << 10)
#define RBD_FEATURE_DIRTY_CACHE		(1ULL << 11)

/* Features a new format-2 image gets when none are requested explicitly. */
#define RBD_FEATURES_DEFAULT		(RBD_FEATURE_LAYERING | \
					 RBD_FEATURE_EXCLUSIVE_LOCK | \
					 RBD_FEATURE_OBJECT_MAP | \
					 RBD_FEATURE_FAST_DIFF | \
					 RBD_FEATURE_DEEP_FLATTEN)

/* Feature names as accepted and printed by the rbd tool and the config. */
#define RBD_FEATURE_NAME_LAYERING	"layering"
#define RBD_FEATURE_NAME_STRIPINGV2	"striping"
#define RBD_FEATURE_NAME_EXCLUSIVE_LOCK	"exclusive-lock"
#define RBD_FEATURE_NAME_OBJECT_MAP	"object-map"
#define RBD_FEATURE_NAME_FAST_DIFF	"fast-diff"
#define RBD_FEATURE_NAME_DEEP_FLATTEN	"deep-flatten"
#define RBD_FEATURE_NAME_JOURNALING	"journaling"
#define RBD_FEATURE_NAME_DATA_POOL	"data-pool"
#define RBD_FEATURE_NAME_OPERATIONS	"operations"
#define RBD_FEATURE_NAME_MIGRATING	"migrating"
#define RBD_FEATURE_NAME_NON_PRIMARY	"non-primary"
#define RBD_FEATURE_NAME_DIRTY_CACHE	"dirty-cache"

/*
 * A client that does not implement one of these features must not open
 * the image at all: it would read the wrong data.
 */
#define RBD_FEATURES_INCOMPATIBLE	(RBD_FEATURE_LAYERING | \
					 RBD_FEATURE_STRIPINGV2 | \
					 RBD_FEATURE_DATA_POOL | \
					 RBD_FEATURE_DIRTY_CACHE)

/*
 * A client that does not implement one of these features may at most
 * open the image read-only: writing would corrupt metadata other
 * clients depend on (lock, object map, journal, ...).
 */
#define RBD_FEATURES_RW_INCOMPATIBLE	(RBD_FEATURES_INCOMPATIBLE | \
					 RBD_FEATURE_EXCLUSIVE_LOCK | \
					 RBD_FEATURE_OBJECT_MAP | \
					 RBD_FEATURE_FAST_DIFF | \
					 RBD_FEATURE_DEEP_FLATTEN | \
					 RBD_FEATURE_JOURNALING | \
					 RBD_FEATURE_OPERATIONS | \
					 RBD_FEATURE_MIGRATING | \
					 RBD_FEATURE_NON_PRIMARY)

/* Every feature bit known to this version. */
#define RBD_FEATURES_ALL		(RBD_FEATURE_LAYERING | \
					 RBD_FEATURE_STRIPINGV2 | \
					 RBD_FEATURE_EXCLUSIVE_LOCK | \
					 RBD_FEATURE_OBJECT_MAP | \
					 RBD_FEATURE_FAST_DIFF | \
					 RBD_FEATURE_DEEP_FLATTEN | \
					 RBD_FEATURE_JOURNALING | \
					 RBD_FEATURE_DATA_POOL | \
					 RBD_FEATURE_OPERATIONS | \
					 RBD_FEATURE_MIGRATING | \
					 RBD_FEATURE_NON_PRIMARY | \
					 RBD_FEATURE_DIRTY_CACHE)

/* Features that can be switched on and off on an existing image. */
#define RBD_FEATURES_MUTABLE		(RBD_FEATURE_EXCLUSIVE_LOCK | \
					 RBD_FEATURE_OBJECT_MAP | \
					 RBD_FEATURE_FAST_DIFF | \
					 RBD_FEATURE_JOURNALING | \
					 RBD_FEATURE_NON_PRIMARY | \
					 RBD_FEATURE_DIRTY_CACHE)

/* Mutable features that only librbd itself toggles. */
#define RBD_FEATURES_MUTABLE_INTERNAL	(RBD_FEATURE_NON_PRIMARY | \
					 RBD_FEATURE_DIRTY_CACHE)

/* Features that can be removed from an existing image but never added. */
#define RBD_FEATURES_DISABLE_ONLY	(RBD_FEATURE_DEEP_FLATTEN)

/* Features that assume a single writing client at a time. */
#define RBD_FEATURES_SINGLE_CLIENT	(RBD_FEATURE_EXCLUSIVE_LOCK | \
					 RBD_FEATURE_OBJECT_MAP | \
					 RBD_FEATURE_FAST_DIFF | \
					 RBD_FEATURE_JOURNALING | \
					 RBD_FEATURE_DIRTY_CACHE)

/* Features librbd turns on by itself when the image layout needs them. */
#define RBD_FEATURES_IMPLICIT_ENABLE	(RBD_FEATURE_STRIPINGV2 | \
					 RBD_FEATURE_DATA_POOL | \
					 RBD_FEATURE_FAST_DIFF | \
					 RBD_FEATURE_OPERATIONS | \
					 RBD_FEATURE_MIGRATING | \
					 RBD_FEATURE_NON_PRIMARY | \
					 RBD_FEATURE_DIRTY_CACHE)

/* Features a user can never request or clear directly. */
#define RBD_FEATURES_INTERNAL		(RBD_FEATURE_OPERATIONS | \
					 RBD_FEATURE_MIGRATING)

/*
 * Operation feature bits (the "op_features" mask, meaningful when
 * RBD_FEATURE_OPERATIONS is set): each one blocks clients that do not
 * understand it from performing the related operations.
 */
#define RBD_OPERATION_FEATURE_CLONE_PARENT	(1ULL << 0)
#define RBD_OPERATION_FEATURE_CLONE_CHILD	(1ULL << 1)
#define RBD_OPERATION_FEATURE_GROUP		(1ULL << 2)
#define RBD_OPERATION_FEATURE_SNAP_TRASH	(1ULL << 3)

#define RBD_OPERATION_FEATURE_NAME_CLONE_PARENT	"clone-parent"
#define RBD_OPERATION_FEATURE_NAME_CLONE_CHILD	"clone-child"
#define RBD_OPERATION_FEATURE_NAME_GROUP	"group"
#define RBD_OPERATION_FEATURE_NAME_SNAP_TRASH	"snap-trash"

/* Every operation feature bit known to this version. */
#define RBD_OPERATION_FEATURES_ALL	(RBD_OPERATION_FEATURE_CLONE_PARENT | \
					 RBD_OPERATION_FEATURE_CLONE_CHILD | \
					 RBD_OPERATION_FEATURE_GROUP | \
					 RBD_OPERATION_FEATURE_SNAP_TRASH)

#endif /* CEPH_RBD_FEATURES_H */
