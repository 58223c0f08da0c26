/*
 * notify.h - librbd's header notification payloads (WatchNotifyTypes):
 * NotifyMessage, ResponseMessage, and the reply buffer of rados_notify2.
 *
 * Threading and ownership: pure functions over caller-provided buffers;
 * nothing allocates.
 */
#ifndef RBDL_PROTO_NOTIFY_H
#define RBDL_PROTO_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	/* QUIESCE / UNQUIESCE: the AsyncRequestId (ClientId gid and handle,
	 * request id) that names the request across notify retries. */
	bool has_async_id;
	uint64_t async_gid;
	uint64_t async_handle;
	uint64_t async_request_id;
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

#endif /* RBDL_PROTO_NOTIFY_H */
