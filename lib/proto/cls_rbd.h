/*
 * cls_rbd.h - inputs and replies of the cls "rbd" methods librbdlite
 * calls: image metadata (get_size, get_features, snapshots, parent,
 * migration), creation, removal and the image directories.
 *
 * Threading and ownership: pure functions over caller-provided buffers.
 * Decoders that return strings or arrays malloc() them; the caller frees
 * them with the matching *_free() function (also safe after a failure:
 * the output is left zeroed); rbdl_encode_string_alloc's buffer is freed
 * with free().  Control path only.
 */
#ifndef RBDL_PROTO_CLS_RBD_H
#define RBDL_PROTO_CLS_RBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RBDL_NOSNAP 0xfffffffffffffffeULL

/* ---- cls "rbd" replies -------------------------------------------------- */
/* Each returns 0 or -EBADMSG (-ENOMEM where it allocates). */

/* get_size: u8 order, u64 size */
int rbdl_decode_get_size(const void *buf, size_t len, uint8_t *order,
			 uint64_t *size);
/* get_features: u64 features, u64 incompatible (the latter may be absent in
 * old OSDs: then *incompat = 0). */
int rbdl_decode_get_features(const void *buf, size_t len, uint64_t *features,
			     uint64_t *incompat);
/* a single u64 (get_flags, op_features_get, get_data_pool as s64) */
int rbdl_decode_u64(const void *buf, size_t len, uint64_t *v);
/* get_stripe_unit_count: u64 su, u64 sc */
int rbdl_decode_stripe(const void *buf, size_t len, uint64_t *su, uint64_t *sc);
/* a Ceph string (get_object_prefix, get_id, dir_get_name, ...): malloc'ed */
int rbdl_decode_string(const void *buf, size_t len, char **out);

/* get_snapcontext: u64 seq, u32 n, u64 snaps[n] (descending).  *snaps is
 * malloc'ed (NULL when n == 0). */
int rbdl_decode_snapcontext(const void *buf, size_t len, uint64_t *seq,
			    uint64_t **snaps, uint32_t *n);

/* parent_get reply (ParentImageSpec). pool_id -1 means "no parent". */
struct rbdl_parent_spec {
	int64_t pool_id;
	char *pool_namespace;	/* malloc'ed */
	char *image_id;		/* malloc'ed */
	uint64_t snap_id;
};
int rbdl_decode_parent_spec(const void *buf, size_t len,
			    struct rbdl_parent_spec *out);
void rbdl_parent_spec_free(struct rbdl_parent_spec *p);

/* parent_overlap_get reply: optional<u64>. */
int rbdl_decode_parent_overlap(const void *buf, size_t len, bool *has,
			       uint64_t *overlap);

/*
 * migration_get reply (MigrationSpec, ENCODE_START(3, 1)): u8 header_type
 * (1 source, 2 destination), s64 pool_id, string pool_namespace, string
 * image_name, string image_id, map<u64,u64> snap_seqs (source snap id ->
 * destination snap id), u64 overlap, bool flatten, bool mirroring, u8 state
 * (RBDL_MIGRATION_*), string state_description; v2: u8 mirror_image_mode;
 * v3: string source_spec (empty for a native migration between pools).
 */
#define RBDL_MIGRATION_SRC 1
#define RBDL_MIGRATION_DST 2
#define RBDL_MIGRATION_PREPARING 1
#define RBDL_MIGRATION_PREPARED 2
#define RBDL_MIGRATION_EXECUTING 3
#define RBDL_MIGRATION_EXECUTED 4
#define RBDL_MIGRATION_ABORTING 5
struct rbdl_migration_spec {
	uint8_t header_type;
	int64_t pool_id;
	char *pool_namespace;	/* malloc'ed */
	char *image_name;	/* malloc'ed */
	char *image_id;		/* malloc'ed */
	uint32_t nsnap_seqs;
	uint64_t (*snap_seqs)[2];	/* malloc'ed: {source, destination} */
	uint64_t overlap;
	uint8_t state;
	bool has_source_spec;	/* a non-empty source_spec (import) */
};
int rbdl_decode_migration_spec(const void *buf, size_t len,
			       struct rbdl_migration_spec *out);
void rbdl_migration_spec_free(struct rbdl_migration_spec *m);

/* snapshot_get reply (SnapshotInfo). */
struct rbdl_snap_info {
	uint64_t id;
	uint32_t ns_type;	/* 0 USER, 1 GROUP, 2 TRASH, 3 MIRROR, ... */
	char *name;		/* malloc'ed */
	uint64_t image_size;
	uint32_t ts_sec, ts_nsec;
	uint32_t child_count;
};
int rbdl_decode_snapshot_info(const void *buf, size_t len,
			      struct rbdl_snap_info *out);
void rbdl_snap_info_free(struct rbdl_snap_info *s);

/* children_list reply (set<ChildImageSpec>): the clone v2 children of a
 * snapshot.  *v is malloc'ed (NULL when empty); free with
 * rbdl_child_specs_free.  -EBADMSG if malformed. */
struct rbdl_child_spec {
	int64_t pool_id;
	char *image_id;		/* malloc'ed */
	char *pool_ns;		/* malloc'ed */
};
int rbdl_decode_child_specs(const void *buf, size_t len,
			    struct rbdl_child_spec **v, uint32_t *n);
void rbdl_child_specs_free(struct rbdl_child_spec *v, uint32_t n);

/* ---- image creation, removal and listing (cls "rbd") -------------------- */
/* Encoders return the encoded length or a negative error (-ERANGE when cap
 * is too small). */

/* create: u64 size, u8 order, u64 features, string object_prefix,
 * s64 data_pool_id (-1: none). */
long rbdl_encode_create_image(void *buf, size_t cap, uint64_t size,
			      uint8_t order, uint64_t features,
			      const char *object_prefix, int64_t data_pool_id);
/* dir_add_image / dir_remove_image: string name, string id. */
long rbdl_encode_dir_entry(void *buf, size_t cap, const char *name,
			   const char *id);
/* A single string (set_id, dir_get_id). */
long rbdl_encode_string(void *buf, size_t cap, const char *s);
/* The same into a buffer of its size, malloc'ed into *out (any length:
 * metadata keys); the length, or -ENOMEM (*out NULL). */
long rbdl_encode_string_alloc(const char *s, uint8_t **out);
/* child_detach (clone v2, on the parent's header): u64 parent snap id,
 * ChildImageSpec ENCODE_START(2, 1) { s64 pool, string image id, string
 * namespace }. */
long rbdl_encode_child_detach(void *buf, size_t cap, uint64_t snap_id,
			      int64_t child_pool, const char *child_id,
			      const char *child_ns);
/* remove_child (clone v1, on rbd_children): s64 parent pool, string parent
 * image id, u64 parent snap id, string child image id. */
long rbdl_encode_remove_child(void *buf, size_t cap, int64_t parent_pool,
			      const char *parent_id, uint64_t snap_id,
			      const char *child_id);
/* set_stripe_unit_count: u64 stripe_unit, u64 stripe_count. */
long rbdl_encode_stripe(void *buf, size_t cap, uint64_t su, uint64_t sc);
/* dir_list / trash_list: string start_after, u64 max_return. */
long rbdl_encode_list_start(void *buf, size_t cap, const char *start_after,
			    uint64_t max_return);

/* One listed image: dir_list gives name and id; trash_list adds source
 * (cls::rbd::TrashImageSource, 3 = REMOVING). */
struct rbdl_dir_entry {
	char *name;	/* malloc'ed */
	char *id;	/* malloc'ed */
	uint8_t source;	/* trash entries only */
};
/* dir_list reply: map<string name, string id>.  *out is a malloc'ed array
 * of *n entries (NULL when empty); free with rbdl_dir_entries_free. */
int rbdl_decode_dir_list(const void *buf, size_t len,
			 struct rbdl_dir_entry **out, uint32_t *n);
/* trash_list reply: map<string id, TrashImageSpec>. */
int rbdl_decode_trash_list(const void *buf, size_t len,
			   struct rbdl_dir_entry **out, uint32_t *n);
void rbdl_dir_entries_free(struct rbdl_dir_entry *v, uint32_t n);
/* image_group_get reply (GroupSpec {s64 pool_id, string group_id}):
 * *in_group is true when the spec is valid (pool_id != -1 and a group id). */
int rbdl_decode_group_spec(const void *buf, size_t len, bool *in_group);

#endif /* RBDL_PROTO_CLS_RBD_H */
