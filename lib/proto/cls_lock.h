/*
 * cls_lock.h - the cls "lock" protocol: inputs of lock, unlock, break_lock,
 * get_info, assert_locked and set_cookie, and the get_info reply with both
 * entity_addr_t encodings.
 *
 * Threading and ownership: pure functions over caller-provided buffers;
 * rbdl_decode_lock_info() mallocs the strings and the locker array, freed
 * by rbdl_lock_info_free().  The synchronous calls on a RADOS object that
 * use these live in rados.h.
 */
#ifndef RBDL_PROTO_CLS_LOCK_H
#define RBDL_PROTO_CLS_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif /* RBDL_PROTO_CLS_LOCK_H */
