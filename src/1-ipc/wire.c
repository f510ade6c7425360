/* The .NET diagnostics IPC wire format (PROTOCOL.md section 2;
 * dotnet/diagnostics documentation/design-docs/ipc-protocol.md): request
 * builders, header and reply parsing, and the protocol's strings (u32 length
 * in UTF-16 units, then UTF-16LE with its NUL) to and from UTF-8. Pure: bytes
 * or structs in, bytes or structs out; no sockets (ipc.c sends and receives).
 *
 * Layouts were checked against the runtime's own parsers
 * (dotnet/runtime src/native/eventpipe/ds-eventpipe-protocol.c,
 * ds-dump-protocol.c, ds-process-protocol.c) and against .NET 10.0.12. */
#include "dumpwatch/wire.h"

#include "dumpwatch/text.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const uint8_t ipc_magic[14] = "DOTNET_IPC_V1"; /* 13 chars + NUL */

/* EventPipe command ids (set 0x02). */
#define EP_STOP_TRACING 0x01
#define EP_COLLECT_TRACING 0x02 /* CollectTracing N is 0x01 + N */
#define EP_FORMAT_NETTRACE 1

/* The runtime refuses more providers than this (ds-eventpipe-protocol.c). */
#define EP_MAX_PROVIDERS 1000

/* --- request building --- */

/* Appends n bytes; a message can never exceed the u16 size field. */
static int buf_put(struct strbuf *b, const void *p, size_t n)
{
	if (strbuf_add(b, p, n) == 0)
		return 0;
	return b->len + n > IPC_MAX_MESSAGE ? -EINVAL : -ENOMEM;
}

static int put_u8(struct strbuf *b, uint8_t v)
{
	return buf_put(b, &v, 1);
}

static int put_u16(struct strbuf *b, uint16_t v)
{
	uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	return buf_put(b, x, sizeof(x));
}

static int put_u32(struct strbuf *b, uint32_t v)
{
	uint8_t x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	return buf_put(b, x, sizeof(x));
}

static int put_u64(struct strbuf *b, uint64_t v)
{
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	return buf_put(b, x, sizeof(x));
}

/* A protocol string: u32 length in UTF-16 units including the NUL, then
 * UTF-16LE; NULL is length 0. -EINVAL for invalid UTF-8. */
static int put_string(struct strbuf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len, i, units = 1;
	uint32_t cp;
	int r;

	if (!s)
		return put_u32(b, 0);
	len = strlen(s);
	for (i = 0; i < len;) {
		size_t n = text_utf8_decode(p + i, len - i, &cp);

		if (n == 0)
			return -EINVAL;
		units += cp >= 0x10000 ? 2 : 1;
		i += n;
		if (units > IPC_MAX_MESSAGE) /* cannot fit; stop before counting more */
			return -EINVAL;
	}
	if ((r = put_u32(b, (uint32_t)units)) < 0)
		return r;
	for (i = 0; i < len;) {
		size_t n = text_utf8_decode(p + i, len - i, &cp);

		if (cp >= 0x10000) {
			cp -= 0x10000;
			if ((r = put_u16(b, (uint16_t)(0xD800 + (cp >> 10)))) < 0 ||
			    (r = put_u16(b, (uint16_t)(0xDC00 + (cp & 0x3FF)))) < 0)
				return r;
		} else if ((r = put_u16(b, (uint16_t)cp)) < 0) {
			return r;
		}
		i += n;
	}
	return put_u16(b, 0);
}

/* Starts a message in out (replacing its contents); msg_end fills in the size. */
static int msg_begin(struct strbuf *out, uint8_t set, uint8_t id)
{
	int r;

	out->len = 0;
	out->failed = 0;
	out->max = IPC_MAX_MESSAGE;
	if ((r = buf_put(out, ipc_magic, sizeof(ipc_magic))) < 0 || (r = put_u16(out, 0)) < 0 ||
	    (r = put_u8(out, set)) < 0 || (r = put_u8(out, id)) < 0 || (r = put_u16(out, 0)) < 0)
		return r;
	return 0;
}

static int msg_end(struct strbuf *out, int r)
{
	if (r < 0) {
		out->len = 0;
		return r;
	}
	out->p[14] = (char)(uint8_t)out->len;
	out->p[15] = (char)(uint8_t)(out->len >> 8);
	return 0;
}

/* The provider array of every CollectTracing version; CollectTracing5 adds an
 * event filter per provider: u8 enable, u32 count, count x u32 event id.
 * With enable 1 the ids are the only ones allowed (of the keywords and
 * level); "enable 0, count 0" disables nothing. */
static int put_providers(struct strbuf *out, const struct ipc_provider *providers, size_t n, int with_filter)
{
	int r;

	if ((r = put_u32(out, (uint32_t)n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct ipc_provider *p = &providers[i];

		if ((r = put_u64(out, p->keywords)) < 0 || (r = put_u32(out, p->level)) < 0 ||
		    (r = put_string(out, p->name)) < 0 || (r = put_string(out, p->args)) < 0)
			return r;
		if (!with_filter)
			continue;
		if ((r = put_u8(out, p->n_event_ids ? 1 : 0)) < 0 || (r = put_u32(out, p->n_event_ids)) < 0)
			return r;
		for (uint32_t k = 0; k < p->n_event_ids; k++)
			if ((r = put_u32(out, p->event_ids[k])) < 0)
				return r;
	}
	return 0;
}

int ipc_build_collect_tracing(int version, uint32_t buffer_mb, const struct ipc_provider *providers, size_t n,
                              struct strbuf *out)
{
	int r;

	/* The runtime answers BadEncoding to all of these, so refuse them here
	 * with a clearer error. */
	if (version < 1 || version > 5 || buffer_mb == 0 || n == 0 || n > EP_MAX_PROVIDERS || !providers)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!providers[i].name || !providers[i].name[0] || providers[i].level > 5 ||
		    (providers[i].n_event_ids && !providers[i].event_ids))
			return -EINVAL;

	r = msg_begin(out, IPC_SET_EVENTPIPE, (uint8_t)(EP_COLLECT_TRACING + version - 1));
	if (r == 0 && version == 5)
		r = put_u32(out, 0); /* session type 0: stream over this socket */
	if (r == 0)
		r = put_u32(out, buffer_mb);
	if (r == 0)
		r = put_u32(out, EP_FORMAT_NETTRACE);
	switch (version) {
	case 1: /* always rundown and stack walks: the runtime gives no choice */
		break;
	case 2:
		if (r == 0)
			r = put_u8(out, 0); /* requestRundown */
		break;
	case 3:
		if (r == 0)
			r = put_u8(out, 0); /* requestRundown */
		if (r == 0)
			r = put_u8(out, 0); /* requestStackwalk */
		break;
	default: /* 4, 5 */
		if (r == 0)
			r = put_u64(out, 0); /* rundown keyword 0 = no rundown */
		if (r == 0)
			r = put_u8(out, 0); /* requestStackwalk */
		break;
	}
	if (r == 0)
		r = put_providers(out, providers, n, version == 5);
	return msg_end(out, r);
}

int ipc_build_stop_tracing(uint64_t session_id, struct strbuf *out)
{
	int r = msg_begin(out, IPC_SET_EVENTPIPE, EP_STOP_TRACING);

	if (r == 0)
		r = put_u64(out, session_id);
	return msg_end(out, r);
}

int ipc_build_process_info(int version, struct strbuf *out)
{
	static const uint8_t ids[] = {0x00, 0x04, 0x08};

	if (version < 1 || version > 3)
		return -EINVAL;
	return msg_end(out, msg_begin(out, IPC_SET_PROCESS, ids[version - 1]));
}

/* Every GenerateCoreDump version has the same payload: string path, u32 type,
 * u32 flags. Version 1 calls the third field "diagnostics" (0 or 1, console
 * logging), so only the logging flag is valid there; the runtime's parser
 * (ds-dump-protocol.c) rejects a version 1 payload without it. */
int ipc_build_dump(int version, const char *path, enum dump_type type, uint32_t flags, struct strbuf *out)
{
	int r;

	if (version < 1 || version > 3 || !path || !path[0] || type < DUMP_NORMAL || type > DUMP_FULL)
		return -EINVAL;
	if (version == 1 && (flags & ~1u))
		return -EINVAL;
	r = msg_begin(out, IPC_SET_DUMP, (uint8_t)version);
	if (r == 0)
		r = put_string(out, path);
	if (r == 0)
		r = put_u32(out, (uint32_t)type);
	if (r == 0)
		r = put_u32(out, flags);
	return msg_end(out, r);
}

/* --- reply parsing --- */

int ipc_parse_header(const uint8_t *hdr, size_t len, uint8_t *ret_set, uint8_t *ret_id)
{
	unsigned size;

	if (!hdr || len < IPC_HEADER_SIZE || memcmp(hdr, ipc_magic, sizeof(ipc_magic)) != 0)
		return -EBADMSG;
	size = (unsigned)hdr[14] | (unsigned)hdr[15] << 8;
	if (size < IPC_HEADER_SIZE)
		return -EBADMSG;
	if (ret_set)
		*ret_set = hdr[16];
	if (ret_id)
		*ret_id = hdr[17];
	return (int)size;
}

/* A bounds-checked reader over a payload. */
struct rd {
	const uint8_t *p;
	size_t len, pos;
};

static int rd_bytes(struct rd *r, void *out, size_t n)
{
	if (n > r->len - r->pos)
		return -EBADMSG;
	memcpy(out, r->p + r->pos, n);
	r->pos += n;
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *v)
{
	uint8_t x[4];

	if (rd_bytes(r, x, sizeof(x)) < 0)
		return -EBADMSG;
	*v = (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
	return 0;
}

static int rd_u64(struct rd *r, uint64_t *v)
{
	uint32_t lo, hi;

	if (rd_u32(r, &lo) < 0 || rd_u32(r, &hi) < 0)
		return -EBADMSG;
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* A protocol string into out as UTF-8 (truncated to fit). Length 0 is the
 * NULL string, read as "". The length must fit the rest of the payload and
 * the last unit must be the NUL (ipc-protocol.md, "Payloads"). */
static int rd_string(struct rd *r, char *out, size_t outlen)
{
	uint32_t units;
	const uint8_t *s;

	if (rd_u32(r, &units) < 0)
		return -EBADMSG;
	if (outlen)
		out[0] = '\0';
	if (units == 0)
		return 0;
	if (units > (r->len - r->pos) / 2)
		return -EBADMSG;
	s = r->p + r->pos;
	if (s[2 * (units - 1)] != 0 || s[2 * (units - 1) + 1] != 0)
		return -EBADMSG;
	text_utf16_to_utf8(s, units - 1, out, outlen);
	r->pos += 2 * (size_t)units;
	return 0;
}

int ipc_parse_process_info(int version, const uint8_t *payload, size_t len, struct ipc_process_info *out)
{
	struct rd r = {payload, len, 0};
	uint32_t v3 = 0;

	if (version < 1 || version > 3 || !out || (!payload && len))
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->version = version;
	/* ProcessInfo3 puts a payload version first; fields are only ever
	 * appended, so trailing bytes beyond what we know are fine. */
	if (version == 3 && rd_u32(&r, &v3) < 0)
		return -EBADMSG;
	if (rd_u64(&r, &out->pid) < 0 || rd_bytes(&r, out->cookie, sizeof(out->cookie)) < 0 ||
	    rd_string(&r, out->command_line, sizeof(out->command_line)) < 0 ||
	    rd_string(&r, out->os, sizeof(out->os)) < 0 || rd_string(&r, out->arch, sizeof(out->arch)) < 0)
		goto bad;
	if (version >= 2 && (rd_string(&r, out->entry_assembly, sizeof(out->entry_assembly)) < 0 ||
	                     rd_string(&r, out->runtime_version, sizeof(out->runtime_version)) < 0))
		goto bad;
	if (version == 3 && v3 >= 1 && rd_string(&r, out->rid, sizeof(out->rid)) < 0)
		goto bad;
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -EBADMSG;
}

/* An error reply must carry its HRESULT; dump v3 error replies append a
 * message string, which is read when it parses and otherwise ignored. */
int ipc_parse_reply(const uint8_t *hdr, struct ipc_reply *reply)
{
	reply->set = hdr[16];
	reply->id = hdr[17];
	reply->hresult = 0;
	reply->message[0] = '\0';
	if (reply->set == IPC_SET_SERVER && reply->id == 0xFF) {
		struct rd r = {reply->payload, reply->payload_len, 0};

		if (rd_u32(&r, &reply->hresult) < 0)
			return -EBADMSG;
		if (r.pos < r.len && rd_string(&r, reply->message, sizeof(reply->message)) < 0)
			reply->message[0] = '\0';
		/* The text goes into one log line: no control characters. */
		for (char *c = reply->message; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7F)
				*c = ' ';
		for (size_t k = strlen(reply->message); k > 0 && reply->message[k - 1] == ' '; k--)
			reply->message[k - 1] = '\0';
	}
	return 0;
}

int ipc_parse_session_id(const uint8_t *payload, size_t len, uint64_t *ret_session)
{
	struct rd r = {payload, len, 0};

	if (!payload && len)
		return -EBADMSG;
	return rd_u64(&r, ret_session);
}

const char *ipc_hresult_name(uint32_t hr)
{
	switch (hr) {
	case IPC_HR_UNKNOWN_COMMAND:
		return "UnknownCommand";
	case IPC_HR_UNKNOWN_MAGIC:
		return "UnknownMagic";
	case IPC_HR_BAD_ENCODING:
		return "BadEncoding";
	case IPC_HR_NOT_SUPPORTED:
		return "NotSupported";
	case IPC_HR_NOT_YET_AVAILABLE:
		return "NotYetAvailable";
	case IPC_HR_RUNTIME_UNINITIALIZED:
		return "RuntimeUninitialized";
	case IPC_HR_INVALID_ARG:
		return "InvalidArg";
	case IPC_HR_FAIL:
		return "Fail";
	case 0x8007007Au:
		return "InsufficientBuffer";
	case 0x800000CBu:
		return "EnvVarNotFound";
	default:
		return NULL;
	}
}

void ipc_describe_error(const struct ipc_reply *r, char *buf, size_t len)
{
	const char *name;

	if (!buf || len == 0)
		return;
	if (!r) {
		snprintf(buf, len, "no reply from the runtime");
		return;
	}
	if (r->set == IPC_SET_SERVER && r->id == 0x00) {
		snprintf(buf, len, "the runtime accepted the command");
		return;
	}
	if (r->set != IPC_SET_SERVER || r->id != 0xFF) {
		snprintf(buf, len, "the runtime sent an unexpected reply (command set 0x%02X, id 0x%02X)", r->set,
		         r->id);
		return;
	}
	name = ipc_hresult_name(r->hresult);
	if (name)
		snprintf(buf, len, "the runtime refused the command: %s (0x%08X)%s%s", name, r->hresult,
		         r->message[0] ? ": " : "", r->message);
	else
		snprintf(buf, len, "the runtime refused the command: error 0x%08X%s%s", r->hresult,
		         r->message[0] ? ": " : "", r->message);
}

int ipc_reply_errno(const struct ipc_reply *r)
{
	if (r->set != IPC_SET_SERVER || r->id != 0xFF)
		return -EBADMSG;
	switch (r->hresult) {
	case IPC_HR_UNKNOWN_COMMAND:
	case IPC_HR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case IPC_HR_BAD_ENCODING:
	case IPC_HR_INVALID_ARG:
		return -EINVAL;
	case IPC_HR_NOT_YET_AVAILABLE:
	case IPC_HR_RUNTIME_UNINITIALIZED:
		return -EAGAIN;
	default:
		return -EPROTO;
	}
}
