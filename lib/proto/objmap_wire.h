/*
 * objmap_wire.h - the on-disk object map (a BitVector<2> in
 * rbd_object_map.<id>[.<snap>]) and the cls "rbd" object_map_* inputs.
 *
 * The map holds 2 bits per object, MSB first: the state of object i is
 * (bits[i / 4] >> ((3 - i % 4) * 2)) & 3.  rbdl_om_state() and
 * rbdl_om_set_state() are the only code that packs or unpacks it.
 *
 * Threading and ownership: pure functions; rbdl_decode_object_map()
 * mallocs the bit array it returns.
 */
#ifndef RBDL_PROTO_OBJMAP_WIRE_H
#define RBDL_PROTO_OBJMAP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RBDL_OBJ_NONEXISTENT 0
#define RBDL_OBJ_EXISTS 1
#define RBDL_OBJ_PENDING 2
#define RBDL_OBJ_EXISTS_CLEAN 3

/* The state of object objno in a packed map (no bounds check). */
static inline uint8_t rbdl_om_state(const uint8_t *bits, uint64_t objno)
{
	return (bits[objno / 4] >> ((3 - objno % 4) * 2)) & 3;
}

/* Set the state of object objno in a packed map. */
static inline void rbdl_om_set_state(uint8_t *bits, uint64_t objno,
				     uint8_t state)
{
	unsigned shift = (3 - objno % 4) * 2;

	bits[objno / 4] = (uint8_t)((bits[objno / 4] & ~(3u << shift)) |
				    ((unsigned)state << shift));
}

/* crc32c as Ceph computes it: Castagnoli, seed given, no final xor. */
uint32_t rbdl_crc32c(uint32_t seed, const void *data, size_t len);

/*
 * Decode an object map as returned by rbd.object_map_load (footer may be
 * empty) or stored in the object (footer CRCs are verified when present).
 * *bits receives a malloc'ed copy of the packed 2-bit states (MSB first:
 * state of object i = (bits[i/4] >> ((3 - i%4) * 2)) & 3), *nobjs the count;
 * on success *bits is never NULL, also for a map of 0 objects.
 */
int rbdl_decode_object_map(const void *buf, size_t len, uint8_t **bits,
			   uint64_t *nobjs);

/* object_map_update input: u64 start, u64 end, u8 state, optional<u8> cur.
 * -EINVAL if a state does not fit in 2 bits. */
long rbdl_encode_object_map_update(void *buf, size_t cap, uint64_t start,
				   uint64_t end, uint8_t state,
				   bool has_current, uint8_t current);
/* object_map_resize: u64 object_count, u8 default_state. */
long rbdl_encode_object_map_resize(void *buf, size_t cap, uint64_t count,
				   uint8_t state);

#endif /* RBDL_PROTO_OBJMAP_WIRE_H */
