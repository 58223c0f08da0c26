/*
 * flush.h - the flush barrier of an image (flush.c): rbd_aio_flush
 * completes once every request submitted before it has completed.
 *
 * Operations are counted per generation parity (struct rbdl_flushq in
 * state.h); a flush bumps the generation and completes when the previous
 * parity drains.  Flushes arriving while one is draining are batched
 * behind it.
 *
 * Threading: start/end from any thread (the submitter, librados'
 * callback threads); the counts are seq_cst (the Dekker argument is at
 * each site), the waiting lists are under fq->lock.
 */
#ifndef RBDL_IO_FLUSH_H
#define RBDL_IO_FLUSH_H

#include <stdbool.h>

#include "core/completion.h"
#include "image/state.h"

/* Count a request in; returns its parity for rbdl_flush_op_end. */
unsigned rbdl_flush_op_start(struct rbdl_image *img);
/* Count it out (after its completion was queued); from_submitter: still
 * inside the submit call, so flush completions must be deferred. */
void rbdl_flush_op_end(struct rbdl_image *img, unsigned parity,
		       bool from_submitter);
/*
 * The error r of a request acknowledged early (io/writearound.c), still
 * counted in parity: the application's flush that waits for it reports
 * it (the first such error).
 */
void rbdl_flush_op_error(struct rbdl_image *img, unsigned parity, long r);
/*
 * The error r of a write acknowledged early whose requests are all
 * counted out already (the encryption layer's read-modify-write, whose
 * flush waits for it above the data path): the next application's flush
 * submitted to the data path reports it.
 */
void rbdl_flush_late_error(struct rbdl_image *img, long r);
/* Submit flush completion c (armed); completes it, deferred, once the
 * requests before it drained. */
void rbdl_flush_submit(struct rbdl_image *img, struct rbdl_comp *c);

/* writearound.c: complete the flushes of list (through dnext, oldest
 * first, each with its result in rval) after every early acknowledgement
 * made before them, as in librbd: here (deferred: through librados'
 * finisher), or, while acknowledgements wait for the callback lane or it
 * is delivering some, on that lane behind them. */
void rbdl_wa_flushes_complete(struct rbdl_image *img, struct rbdl_comp *list,
			      bool deferred);

#endif /* RBDL_IO_FLUSH_H */
