/*
 * codec.h - pure encoders and decoders for Ceph's wire encoding as used by
 * the cls "rbd" and cls "lock" methods and by RBD header notifications.
 *
 * Role: turn cls method inputs into bytes and cls replies into C values,
 * with every read bounds-checked, so a malformed reply from the cluster
 * yields -EBADMSG and never an out-of-bounds access.
 *
 * Threading and ownership: pure functions over caller-provided buffers.
 * Decoders that return strings or arrays allocate them with malloc(); the
 * caller frees them with the matching *_free() function (control path only,
 * never the I/O hot path).  Encoders write into a caller-provided buffer.
 *
 * Conventions: little-endian fixed-width integers, strings as u32 length +
 * bytes, versioned structs as u8 v, u8 compat, u32 len + body (decoders
 * skip unknown trailing bytes using len and refuse compat above what they
 * understand with -EBADMSG).
 */
#ifndef RBDL_CODEC_H
#define RBDL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RBDL_NOSNAP 0xfffffffffffffffeULL

/* ---- encoder ---------------------------------------------------------- */

/*
 * An encoder appends to a fixed caller buffer.  On overflow it sets err to
 * -ERANGE and stops writing; check err (or rbdl_enc_len() < 0) once at the
 * end instead of after every call.
 */
struct rbdl_enc {
	uint8_t *buf;
	size_t len;
	size_t cap;
	int err;
};

void rbdl_enc_init(struct rbdl_enc *e, void *buf, size_t cap);
void rbdl_enc_u8(struct rbdl_enc *e, uint8_t v);
void rbdl_enc_u32(struct rbdl_enc *e, uint32_t v);
void rbdl_enc_u64(struct rbdl_enc *e, uint64_t v);
void rbdl_enc_raw(struct rbdl_enc *e, const void *p, size_t n);
/* u32 length + bytes; p may be NULL only when n == 0 (else err = -EINVAL). */
void rbdl_enc_bytes(struct rbdl_enc *e, const void *p, size_t n);
/* A NUL-terminated C string as a Ceph string (no NUL on the wire); NULL is
 * encoded as the empty string. */
void rbdl_enc_str(struct rbdl_enc *e, const char *s);
/*
 * Start a versioned struct: writes v, compat and a placeholder u32 length;
 * returns a token to pass to rbdl_enc_struct_end(), which patches the length.
 */
size_t rbdl_enc_struct_start(struct rbdl_enc *e, uint8_t v, uint8_t compat);
void rbdl_enc_struct_end(struct rbdl_enc *e, size_t token);
/* Bytes written, or the negative error. */
static inline long rbdl_enc_len(const struct rbdl_enc *e)
{
	return e->err ? (long)e->err : (long)e->len;
}

/* ---- decoder ---------------------------------------------------------- */

/*
 * A decoder reads from [p, end).  Any underrun sets err to -EBADMSG, after
 * which every read returns 0 / empty; check err once at the end.
 */
struct rbdl_dec {
	const uint8_t *p;
	const uint8_t *end;
	int err;
};

void rbdl_dec_init(struct rbdl_dec *d, const void *buf, size_t len);
uint8_t rbdl_dec_u8(struct rbdl_dec *d);
uint32_t rbdl_dec_u32(struct rbdl_dec *d);
uint64_t rbdl_dec_u64(struct rbdl_dec *d);
/* Skip n bytes. */
void rbdl_dec_skip(struct rbdl_dec *d, size_t n);
/*
 * A Ceph string/bufferlist: returns a pointer into the buffer (not
 * NUL-terminated) and its length; NULL and 0 on error.
 */
const uint8_t *rbdl_dec_bytes(struct rbdl_dec *d, uint32_t *len);
/* A Ceph string as a malloc'ed NUL-terminated copy (NULL on error/ENOMEM:
 * d->err is -EBADMSG or -ENOMEM). */
char *rbdl_dec_strdup(struct rbdl_dec *d);
/*
 * Enter a versioned struct.  Fails (-EBADMSG) if compat > max_compat or the
 * length runs past the buffer.  *struct_end receives the end of the struct
 * body; pass it to rbdl_dec_struct_end() to skip unknown trailing fields.
 * Returns struct_v (0 on error).
 */
uint8_t rbdl_dec_struct_start(struct rbdl_dec *d, uint8_t max_compat,
			      const uint8_t **struct_end);
void rbdl_dec_struct_end(struct rbdl_dec *d, const uint8_t *struct_end);

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

/* ---- cls "lock" --------------------------------------------------------- */

#define RBDL_LOCK_EXCLUSIVE 1
#define RBDL_LOCK_SHARED 2

/* Inputs; each returns the encoded length or a negative error. */
long rbdl_encode_lock_lock(void *buf, size_t cap, const char *name,
			   uint8_t type, const char *cookie, const char *tag,
			   const char *desc, uint32_t dur_sec,
			   uint32_t dur_nsec, uint8_t flags);
long rbdl_encode_lock_unlock(void *buf, size_t cap, const char *name,
			     const char *cookie);
long rbdl_encode_lock_break(void *buf, size_t cap, const char *name,
			    uint8_t entity_type, int64_t entity_num,
			    const char *cookie);
long rbdl_encode_lock_get_info(void *buf, size_t cap, const char *name);
long rbdl_encode_lock_assert(void *buf, size_t cap, const char *name,
			     uint8_t type, const char *cookie,
			     const char *tag);
long rbdl_encode_lock_set_cookie(void *buf, size_t cap, const char *name,
				 uint8_t type, const char *cookie,
				 const char *tag, const char *new_cookie);

struct rbdl_locker {
	uint8_t entity_type;	/* 8 = client */
	int64_t entity_num;	/* the client's global id */
	char *cookie;		/* malloc'ed */
	char *description;	/* malloc'ed */
	/* "ip:port/nonce" or "[ip6]:port/nonce", "v2:" prefix for msgr2;
	 * "" if the address is neither IPv4 nor IPv6 */
	char addr[128];
};
struct rbdl_lock_info {
	uint32_t n_lockers;
	struct rbdl_locker *lockers;	/* malloc'ed array */
	uint8_t lock_type;
	char *tag;		/* malloc'ed */
};
/* lock.get_info reply, with both entity_addr_t encodings. */
int rbdl_decode_lock_info(const void *buf, size_t len,
			  struct rbdl_lock_info *out);
void rbdl_lock_info_free(struct rbdl_lock_info *li);

/* ---- header notifications (librbd WatchNotifyTypes) --------------------- */

enum rbdl_notify_op {
	RBDL_NOTIFY_ACQUIRED_LOCK = 0,
	RBDL_NOTIFY_RELEASED_LOCK = 1,
	RBDL_NOTIFY_REQUEST_LOCK = 2,
	RBDL_NOTIFY_HEADER_UPDATE = 3,
	RBDL_NOTIFY_ASYNC_PROGRESS = 4,
	RBDL_NOTIFY_ASYNC_COMPLETE = 5,
	RBDL_NOTIFY_QUIESCE = 18,
	RBDL_NOTIFY_UNQUIESCE = 19,
};

struct rbdl_notify_msg {
	uint32_t op;		/* enum rbdl_notify_op or any other value */
	bool has_client;	/* client_gid/handle are valid */
	uint64_t client_gid;
	uint64_t client_handle;
	bool force;		/* REQUEST_LOCK only */
};
/* An empty payload decodes as HEADER_UPDATE.  The ClientId is decoded
 * (has_client) only for ACQUIRED/RELEASED/REQUEST_LOCK with struct_v >= 2;
 * any other op decodes with only op set. */
int rbdl_decode_notify(const void *buf, size_t len, struct rbdl_notify_msg *out);
/* NotifyMessage v7 with a ClientId payload (ACQUIRED/RELEASED/REQUEST_LOCK;
 * force is only encoded for REQUEST_LOCK) or no payload (HEADER_UPDATE);
 * -EINVAL for any other op. */
long rbdl_encode_notify(void *buf, size_t cap, uint32_t op, uint64_t gid,
			uint64_t handle, bool force);
/* ResponseMessage: ENCODE_START(1,1){s32 result}. */
long rbdl_encode_notify_response(void *buf, size_t cap, int32_t result);
/* Decode a ResponseMessage ack payload; -EBADMSG if malformed. */
int rbdl_decode_notify_response(const void *buf, size_t len, int32_t *result);

/*
 * The reply buffer of rados_notify2: u32 n_acks, n x {u64 gid, u64 cookie,
 * u32 len, bytes}, u32 n_timeouts, n x {u64 gid, u64 cookie}.
 * The callback is called for each ack (timed_out = false, payload given)
 * and each timeout (timed_out = true, payload NULL); a non-zero return stops
 * the walk and is returned.
 */
typedef int (*rbdl_notify_reply_fn)(uint64_t gid, uint64_t cookie,
				    bool timed_out, const uint8_t *payload,
				    uint32_t len, void *arg);
int rbdl_walk_notify_reply(const void *buf, size_t len,
			   rbdl_notify_reply_fn fn, void *arg);

/* ---- object map (BitVector<2>) ----------------------------------------- */

/* crc32c as Ceph computes it: Castagnoli, seed given, no final xor. */
uint32_t rbdl_crc32c(uint32_t seed, const void *data, size_t len);

/*
 * Decode an object map as returned by rbd.object_map_load (footer may be
 * empty) or stored in the object (footer CRCs are verified when present).
 * *bits receives a malloc'ed copy of the packed 2-bit states (MSB first:
 * state of object i = (bits[i/4] >> ((3 - i%4) * 2)) & 3), *nobjs the count.
 */
int rbdl_decode_object_map(const void *buf, size_t len, uint8_t **bits,
			   uint64_t *nobjs);

/* object_map_update input: u64 start, u64 end, u8 state, optional<u8> cur.
 * -EINVAL if a state does not fit in 2 bits. */
long rbdl_encode_object_map_update(void *buf, size_t cap, uint64_t start,
				   uint64_t end, uint8_t state,
				   bool has_current, uint8_t current);

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
/* object_map_resize: u64 object_count, u8 default_state. */
long rbdl_encode_object_map_resize(void *buf, size_t cap, uint64_t count,
				   uint8_t state);
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

#endif /* RBDL_CODEC_H */
