/* Incremental parser for the nettrace stream a .NET runtime sends for an
 * EventPipe session in format 1 ("Nettrace" + "!FastSerialization.1", the V5
 * layout; PROTOCOL.md section 3, perfview NetTraceFormat.md).
 *
 * Bytes go in in any split (down to one at a time); metadata and events come
 * out through callbacks in stream order. Pure: no I/O, no clocks, no globals.
 * Memory is bounded by the limits given at creation. On malformed input the
 * parser stops for good and nettrace_error() names the byte offset and reason. */
#ifndef DUMPWATCH_NETTRACE_H
#define DUMPWATCH_NETTRACE_H

#include <stddef.h>
#include <stdint.h>

/* Field type codes of V1 metadata (System.TypeCode plus Array 19). */
enum nettrace_type {
	NT_TC_OBJECT = 1,
	NT_TC_BOOL = 3, /* 4 bytes on the wire */
	NT_TC_CHAR = 4, /* 2 bytes */
	NT_TC_SBYTE = 5,
	NT_TC_BYTE = 6,
	NT_TC_INT16 = 7,
	NT_TC_UINT16 = 8,
	NT_TC_INT32 = 9,
	NT_TC_UINT32 = 10,
	NT_TC_INT64 = 11,
	NT_TC_UINT64 = 12,
	NT_TC_SINGLE = 13,
	NT_TC_DOUBLE = 14,
	NT_TC_DECIMAL = 15,  /* 16 bytes */
	NT_TC_DATETIME = 16, /* 8 bytes */
	NT_TC_GUID = 17,     /* 16 bytes */
	NT_TC_STRING = 18,   /* UTF-16LE, NUL-terminated */
	NT_TC_ARRAY = 19,    /* u16 count + items of elem_type */
};

struct nettrace_field {
	uint32_t type;       /* enum nettrace_type */
	uint32_t elem_type;  /* for NT_TC_ARRAY: the item type, else 0 */
	char *name;          /* UTF-8, never NULL ("" when unnamed) */
	uint32_t n_children; /* for NT_TC_OBJECT (and arrays of objects) */
	struct nettrace_field *children;
};

struct nettrace_metadata {
	uint32_t id;
	char *provider; /* UTF-8, never NULL */
	uint32_t event_id;
	char *event_name; /* UTF-8, "" for runtime-native events */
	uint64_t keywords;
	uint32_t version;
	uint32_t level;
	uint8_t opcode; /* from the .NET 5+ opcode tag, else 0 */
	uint32_t n_fields;
	struct nettrace_field *fields;
};

struct nettrace_event {
	const struct nettrace_metadata *meta; /* never NULL for delivered events */
	uint64_t sequence;
	uint64_t capture_thread_id;
	uint32_t processor;
	uint64_t thread_id;
	uint32_t stack_id;
	int64_t timestamp; /* QPC ticks, see nettrace_time_ns */
	uint8_t activity_id[16];
	uint8_t related_activity_id[16];
	int sorted;
	const uint8_t *payload; /* valid only during the callback */
	uint32_t payload_size;
};

/* The Trace object: clock synchronisation and process facts. */
struct nettrace_info {
	int64_t sync_utc_ns; /* UTC (Unix epoch ns) of sync_qpc */
	int64_t sync_qpc;
	int64_t qpc_freq;     /* ticks per second, > 0 */
	int32_t pointer_size; /* 4 or 8 */
	int32_t pid;
	int32_t processors;
	int32_t sampling_rate;
};

struct nettrace_callbacks {
	void *ctx;
	/* Once, when the Trace object has been read. May be NULL. */
	void (*on_info)(void *ctx, const struct nettrace_info *info);
	/* Each new metadata record. May be NULL. A record (here and in
	 * nettrace_event.meta) stays valid until its id is defined again or the
	 * parser is freed: keep ids, not pointers. */
	void (*on_metadata)(void *ctx, const struct nettrace_metadata *meta);
	/* Each event of an EventBlock, in stream order. May be NULL. */
	void (*on_event)(void *ctx, const struct nettrace_event *ev);
};

struct nettrace_limits {
	uint32_t max_block;    /* largest block body accepted, bytes (default 16 MiB) */
	uint32_t max_metadata; /* most metadata records kept (default 65536) */
	uint32_t max_fields;   /* most fields in one metadata record, all levels (default 1024) */
};

typedef struct nettrace_parser nettrace_parser;

/* Returns a parser or NULL when out of memory. limits may be NULL (defaults). */
nettrace_parser *nettrace_new(const struct nettrace_callbacks *cb, const struct nettrace_limits *limits);
void nettrace_free(nettrace_parser *p);

/* Feeds the next bytes. Returns 0, -EBADMSG on malformed input, -ENOTSUP for a
 * stream in a layout not supported (NetTrace V6), -ENOMEM. After an error every
 * later call returns the same error. */
int nettrace_feed(nettrace_parser *p, const uint8_t *data, size_t len);

/* Declares the end of the stream. Returns 0 when the stream ended cleanly (at
 * the closing NullReference tag), -EPIPE when it was cut off, or the earlier error. */
int nettrace_finish(nettrace_parser *p);

/* "offset 1234: <reason>" for the first error, or "" when none. */
const char *nettrace_error(const nettrace_parser *p);

/* Bytes consumed so far (offset from the 'N' of "Nettrace"). */
uint64_t nettrace_offset(const nettrace_parser *p);

/* Events of EventBlocks seen so far (metadata records are not counted). */
uint64_t nettrace_event_count(const nettrace_parser *p);

/* Whether the stream has stopped inside the header or an object (a block
 * begun and not finished). Between blocks a runtime with nothing to say is
 * idle; inside one, it writes the rest at once, so waiting there means it is
 * stuck. */
int nettrace_mid_object(const nettrace_parser *p);

/* Converts an event timestamp to nanoseconds on the trace's QPC clock (on Linux
 * the runtime's QPC is CLOCK_MONOTONIC, frequency 1e9). */
int64_t nettrace_qpc_to_ns(const struct nettrace_info *info, int64_t qpc);

#endif
