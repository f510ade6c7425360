/* A heap snapshot taken from a running process: an EventPipe session with
 * the heap-walk keywords (heapgraph.h), which makes the runtime induce a
 * blocking gen2 GC and walk its heap; the stream goes through the nettrace
 * parser into a heapgraph until the walk has ended, then the session is
 * stopped and drained. Blocking, bounded by a timeout: for the `heap`
 * command and for a dump's summary, taken after the dump. */
#ifndef DUMPWATCH_HEAPSNAP_H
#define DUMPWATCH_HEAPSNAP_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/heapgraph.h"
#include "dumpwatch/ipc.h"

/* The session buffer asked of the runtime, as dotnet-gcdump asks: the walk
 * writes its events faster than they are sent (10 M objects make some 500 MB
 * of events in well under a second), and what does not fit is dropped. The
 * runtime allocates it only as it fills. */
#define HEAPSNAP_BUFFER_MB 1024

struct heapsnap_opts {
	int64_t timeout_ns;             /* the whole snapshot; 0: 120 s */
	uint32_t buffer_mb;             /* the runtime's session buffer; 0: HEAPSNAP_BUFFER_MB */
	const struct hg_limits *limits; /* NULL: defaults */
	int save_fd;                    /* >= 0: the raw stream is also written there (a nettrace file) */
	int histogram;                  /* a histogram only (hg_new_histogram): no graph kept */
};

struct heapsnap {
	struct heapgraph *graph; /* finished (hg_finish), a histogram when asked; the caller frees it (hg_free) */
	int64_t pause_ns;        /* the target's pause for the walk, -1 when not seen */
	int64_t walk_ns;         /* the induced GC's start to its end, -1 when not seen */
	int64_t elapsed_ns;      /* connect to the graph assembled */
	uint64_t stream_bytes;
	uint64_t events;
	int pointer_size;
	uint64_t walk_bytes; /* the objects' sizes added up */
	/* Whether the walk arrived whole: no event seen lost, and its objects
	 * make at least 95 % of the bytes the runtime counts (GCHeapStats).
	 * The runtime drops what does not fit in the session buffer without
	 * always leaving a gap in the sequence numbers, so the sizes are the
	 * check that holds. */
	int complete;
};

/* Takes a snapshot of the process listening on ep. 0 with out filled, or
 * -errno with a sentence in err (-ETIMEDOUT when the walk did not end in
 * time, -EBADMSG for a stream or payload that cannot be read). */
int heapsnap_take(const struct ipc_endpoint *ep, const struct heapsnap_opts *opts, struct heapsnap *out, char *err,
                  size_t errlen);

#endif
