/* The .NET diagnostics IPC wire format (PROTOCOL.md section 2, dotnet/diagnostics
 * ipc-protocol.md): building requests and parsing replies. Pure functions of
 * their bytes, tested and fuzzable without a runtime; ipc.h sends them. */
#ifndef DUMPWATCH_WIRE_H
#define DUMPWATCH_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/strbuf.h"

/* The kinds of dump the runtime's dump command writes (its DumpType), and
 * DUMP_GCDUMP, which is never sent: a heap snapshot taken over EventPipe and
 * written as a .gcdump file (heapgraph.h). A rule's dump type is one of them. */
enum dump_type { DUMP_NORMAL = 1, DUMP_WITHHEAP = 2, DUMP_TRIAGE = 3, DUMP_FULL = 4, DUMP_GCDUMP = 5 };

#define IPC_HEADER_SIZE 20
#define IPC_MAX_MESSAGE 65535 /* the size field is a u16 */

enum ipc_command_set {
	IPC_SET_DUMP = 0x01,
	IPC_SET_EVENTPIPE = 0x02,
	IPC_SET_PROFILER = 0x03,
	IPC_SET_PROCESS = 0x04,
	IPC_SET_SERVER = 0xFF
};

#define IPC_HR_UNKNOWN_COMMAND 0x80131385u
#define IPC_HR_UNKNOWN_MAGIC 0x80131386u
#define IPC_HR_BAD_ENCODING 0x80131384u
#define IPC_HR_NOT_SUPPORTED 0x80131515u
#define IPC_HR_NOT_YET_AVAILABLE 0x8013135Bu
#define IPC_HR_RUNTIME_UNINITIALIZED 0x80131371u
#define IPC_HR_INVALID_ARG 0x80070057u
#define IPC_HR_FAIL 0x80004005u

struct ipc_provider {
	uint64_t keywords;
	uint32_t level;
	const char *name;
	const char *args; /* "k=v;k=v" or NULL */
	/* CollectTracing5 (.NET 10): only these event ids of the keywords and
	 * level above; none (n_event_ids 0): every one. Older commands carry no
	 * filter, so there the keywords and level alone decide. */
	const uint32_t *event_ids;
	uint32_t n_event_ids;
};

/* Request builders. Each fills a complete message (header included) into out,
 * replacing its contents. Return 0, -EINVAL (bad version, message over 64 KiB)
 * or -ENOMEM. Versions are the command generations of PROTOCOL.md:
 * collect 1..5 = CollectTracing .. CollectTracing5, rundown and stack walks off;
 * process_info 1..3 = ProcessInfo .. ProcessInfo3; dump 1..3 = GenerateCoreDump .. 3. */
int ipc_build_collect_tracing(int version, uint32_t buffer_mb, const struct ipc_provider *providers, size_t n,
                              struct strbuf *out);
int ipc_build_stop_tracing(uint64_t session_id, struct strbuf *out);
int ipc_build_process_info(int version, struct strbuf *out);
int ipc_build_dump(int version, const char *path, enum dump_type type, uint32_t flags, struct strbuf *out);

/* A parsed reply. */
struct ipc_reply {
	uint8_t set, id;   /* 0xFF, 0x00 = OK; 0xFF, 0xFF = error */
	uint32_t hresult;  /* error replies */
	char message[256]; /* error text some commands append (dump v3), UTF-8 */
	uint8_t payload[IPC_MAX_MESSAGE];
	size_t payload_len;
};

/* Parses the 20-byte header: returns the total message size (>= 20), or
 * -EBADMSG when the magic or size is wrong. */
int ipc_parse_header(const uint8_t *hdr, size_t len, uint8_t *ret_set, uint8_t *ret_id);

/* Completes a reply whose payload (payload_len bytes, the size
 * ipc_parse_header gave less the header) is already in place: set, id, and
 * for an error reply its HRESULT and message (control characters blanked,
 * for a log line). 0, or -EBADMSG for an error reply without its HRESULT. */
int ipc_parse_reply(const uint8_t *hdr, struct ipc_reply *reply);

/* The session id of an OK reply to CollectTracing. 0 or -EBADMSG. */
int ipc_parse_session_id(const uint8_t *payload, size_t len, uint64_t *ret_session);

/* The -errno for a reply that is not OK: UnknownCommand and NotSupported
 * -EOPNOTSUPP, BadEncoding and InvalidArg -EINVAL, NotYetAvailable and
 * RuntimeUninitialized -EAGAIN, another HRESULT -EPROTO, and -EBADMSG for
 * a reply that is no error reply either. */
int ipc_reply_errno(const struct ipc_reply *r);

struct ipc_process_info {
	int version;  /* 1..3: which command answered */
	uint64_t pid; /* as the runtime sees itself (its namespace) */
	uint8_t cookie[16];
	char command_line[4096];
	char os[64];
	char arch[64];
	char entry_assembly[256]; /* "" before ProcessInfo2 */
	char runtime_version[64]; /* "" before ProcessInfo2 */
	char rid[64];             /* "" before ProcessInfo3 */
};

/* Parses a ProcessInfo reply payload of the given version. 0 or -EBADMSG. */
int ipc_parse_process_info(int version, const uint8_t *payload, size_t len, struct ipc_process_info *out);

/* Name of an HRESULT ("UnknownCommand"), or NULL. */
const char *ipc_hresult_name(uint32_t hr);

/* A sentence for an error reply: "the runtime refused the command: NotSupported
 * (0x80131515)" plus the runtime's own message when it sent one. */
void ipc_describe_error(const struct ipc_reply *r, char *buf, size_t len);

#endif
