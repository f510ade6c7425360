/* Unit tests of the diagnostics IPC wire format (wire.c): byte-exact
 * requests built by hand from ipc-protocol.md, header and reply parsing (good,
 * truncated, wrong magic, hostile lengths), ProcessInfo payloads of each
 * version, and the texts and errnos of error replies. No sockets. */
#include "dumpwatch/wire.h"

#include "check.h"
#include "wirebytes.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int same(const struct strbuf *got, const struct bytes *want)
{
	if (got->len != want->n) {
		fprintf(stderr, "  length %zu, want %zu\n", got->len, want->n);
		return 0;
	}
	for (size_t i = 0; i < want->n; i++)
		if ((uint8_t)got->p[i] != want->b[i]) {
			fprintf(stderr, "  byte %zu is %02x, want %02x\n", i, (uint8_t)got->p[i], want->b[i]);
			return 0;
		}
	return 1;
}

static struct bytes want, pay;
static struct ipc_reply reply;

/* The worked example of ipc-protocol.md ("Payloads"): CollectTracing with
 * 250 MB, NetTrace, one provider MyEventSource, keywords 100, level 2, no
 * arguments: 80 bytes, written out literally. */
static void test_spec_example(void)
{
	static const uint8_t spec[80] = {
	    'D', 'O', 'T',  'N',  'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0,
	    80,  0,   0x02, 0x02, 0,   0,   250, 0,   0,   0, /* circularBufferMB */
	    1,   0,   0,    0,                                /* format */
	    1,   0,   0,    0,                                /* n providers */
	    100, 0,   0,    0,    0,   0,   0,   0,           /* keywords */
	    2,   0,   0,    0,                                /* logLevel */
	    14,  0,   0,    0,                                /* provider_name length */
	    'M', 0,   'y',  0,    'E', 0,   'v', 0,   'e', 0,   'n', 0,   't', 0,
	    'S', 0,   'o',  0,    'u', 0,   'r', 0,   'c', 0,   'e', 0,   0,   0, /* "MyEventSource\0" */
	    0,   0,   0,    0                                                     /* arguments: NULL */
	};
	struct ipc_provider p = {100, 2, "MyEventSource", NULL, NULL, 0};
	struct strbuf b = {0};

	CHECK(ipc_build_collect_tracing(1, 250, &p, 1, &b) == 0);
	CHECK(b.len == sizeof(spec) && memcmp(b.p, spec, sizeof(spec)) == 0);
	strbuf_free(&b);
}

/* The expected CollectTracing N message, built field by field. */
static void expect_collect(int v, uint32_t mb, const struct ipc_provider *p, size_t n)
{
	b_header(&want, 0x02, (unsigned)(0x01 + v));
	if (v == 5)
		b_u32(&want, 0); /* session type: streaming */
	b_u32(&want, mb);
	b_u32(&want, 1); /* NetTrace */
	if (v == 2)
		b_u8(&want, 0); /* requestRundown */
	if (v == 3) {
		b_u8(&want, 0); /* requestRundown */
		b_u8(&want, 0); /* requestStackwalk */
	}
	if (v >= 4) {
		b_u64(&want, 0); /* rundown keyword */
		b_u8(&want, 0);  /* requestStackwalk */
	}
	b_u32(&want, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		b_u64(&want, p[i].keywords);
		b_u32(&want, p[i].level);
		b_str(&want, p[i].name);
		if (p[i].args)
			b_str(&want, p[i].args);
		else
			b_u32(&want, 0);
		if (v == 5) {
			/* event filter: none (enable 0, no ids: nothing
			 * disabled), or only the ids given (enable 1) */
			b_u8(&want, p[i].n_event_ids ? 1 : 0);
			b_u32(&want, p[i].n_event_ids);
			for (uint32_t k = 0; k < p[i].n_event_ids; k++)
				b_u32(&want, p[i].event_ids[k]);
		}
	}
	b_done(&want);
}

/* CollectTracing5's event filter: the ids given, an allow list; older
 * commands carry none. */
static void test_event_filter(void)
{
	static const uint32_t ids[] = {1, 2, 10, 80, 65535};
	struct ipc_provider p[2] = {{0x8001, 5, "Microsoft-Windows-DotNETRuntime", NULL, ids, 5},
	                            {0, 4, "System.Runtime", "EventCounterIntervalSec=1", NULL, 0}};
	struct strbuf got = {0};

	for (int v = 1; v <= 5; v++) {
		CHECK(ipc_build_collect_tracing(v, 16, p, 2, &got) == 0);
		struct ipc_provider q[2] = {p[0], p[1]};
		if (v < 5)
			q[0].n_event_ids = 0; /* not on the wire */
		expect_collect(v, 16, v < 5 ? q : p, 2);
		CHECK_MSG(same(&got, &want), "CollectTracing%d with a filter", v);
	}
	/* ids promised but missing */
	p[0].event_ids = NULL;
	CHECK(ipc_build_collect_tracing(5, 16, p, 2, &got) == -EINVAL);
	strbuf_free(&got);
}

static void test_collect_tracing(void)
{
	struct ipc_provider p[2] = {
	    {0x1 | 0x8000000000000000ull, 4, "Microsoft-Windows-DotNETRuntime", NULL, NULL, 0},
	    {0, 5, "System.Runtime", "EventCounterIntervalSec=1", NULL, 0},
	};
	struct strbuf b = {0};

	for (int v = 1; v <= 5; v++) {
		CHECK_MSG(ipc_build_collect_tracing(v, 64, p, 2, &b) == 0, "version %d", v);
		expect_collect(v, 64, p, 2);
		CHECK_MSG(same(&b, &want), "CollectTracing%d bytes", v);
	}
	/* The builder replaces what the buffer held. */
	CHECK(ipc_build_collect_tracing(2, 1, p, 1, &b) == 0);
	expect_collect(2, 1, p, 1);
	CHECK(same(&b, &want));

	/* Refused before the runtime would answer BadEncoding. */
	CHECK(ipc_build_collect_tracing(0, 64, p, 1, &b) == -EINVAL);
	CHECK(ipc_build_collect_tracing(6, 64, p, 1, &b) == -EINVAL);
	CHECK(ipc_build_collect_tracing(5, 0, p, 1, &b) == -EINVAL);
	CHECK(ipc_build_collect_tracing(5, 64, p, 0, &b) == -EINVAL);
	CHECK(ipc_build_collect_tracing(5, 64, NULL, 1, &b) == -EINVAL);
	{
		struct ipc_provider bad = {0, 6, "X", NULL, NULL, 0};

		CHECK(ipc_build_collect_tracing(5, 64, &bad, 1, &b) == -EINVAL);
		bad.level = 5;
		bad.name = "";
		CHECK(ipc_build_collect_tracing(5, 64, &bad, 1, &b) == -EINVAL);
		bad.name = NULL;
		CHECK(ipc_build_collect_tracing(5, 64, &bad, 1, &b) == -EINVAL);
	}
	strbuf_free(&b);
	strbuf_free(&b); /* twice is fine */
	strbuf_free(NULL);
}

static void test_utf8_strings(void)
{
	struct ipc_provider p = {0,
	                         4,
	                         "\xC3\xA9"
	                         "a\xF0\x9D\x84\x9E",
	                         "",
	                         NULL,
	                         0}; /* "éa𝄞", empty arguments */
	static const char *const invalid[] = {
	    "\xC0\x80",         /* overlong NUL */
	    "\xE0\x80\xAF",     /* overlong '/' */
	    "\x80",             /* lone continuation byte */
	    "\xED\xA0\x80",     /* UTF-16 surrogate encoded in UTF-8 */
	    "\xE2\x82",         /* truncated */
	    "\xF5\x80\x80\x80", /* beyond U+10FFFF */
	    "ok\xFF",
	};
	struct strbuf b = {0};

	CHECK(ipc_build_collect_tracing(1, 1, &p, 1, &b) == 0);
	b_header(&want, 0x02, 0x02);
	b_u32(&want, 1);
	b_u32(&want, 1);
	b_u32(&want, 1);
	b_u64(&want, 0);
	b_u32(&want, 4);
	b_u32(&want, 5); /* é, a, high and low surrogate, NUL */
	b_u16(&want, 0x00E9);
	b_u16(&want, 'a');
	b_u16(&want, 0xD834);
	b_u16(&want, 0xDD1E);
	b_u16(&want, 0);
	b_u32(&want, 1); /* "" is a string of just the NUL, not NULL */
	b_u16(&want, 0);
	b_done(&want);
	CHECK(same(&b, &want));

	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		struct ipc_provider q = {0, 4, invalid[i], NULL, NULL, 0};

		CHECK_MSG(ipc_build_collect_tracing(3, 1, &q, 1, &b) == -EINVAL, "invalid UTF-8 #%zu", i);
		q.name = "X";
		q.args = invalid[i];
		CHECK_MSG(ipc_build_collect_tracing(3, 1, &q, 1, &b) == -EINVAL, "invalid UTF-8 args #%zu", i);
	}
	CHECK(ipc_build_dump(3, "/tmp/\xC0\x80", DUMP_FULL, 0, &b) == -EINVAL);
	strbuf_free(&b);
}

/* A CollectTracing v1 message with provider "A" and L arguments is 58 + 2L
 * bytes: 65534 fits, 65536 does not. */
static void test_size_limit(void)
{
	char *args = malloc(40000);
	struct ipc_provider p = {0, 4, "A", args, NULL, 0};
	struct strbuf b = {0};

	memset(args, 'x', 32738);
	args[32738] = '\0';
	CHECK(ipc_build_collect_tracing(1, 1, &p, 1, &b) == 0);
	CHECK(b.len == 65534 && (uint8_t)b.p[14] == 0xFE && (uint8_t)b.p[15] == 0xFF);
	args[32738] = 'x';
	args[32739] = '\0';
	CHECK(ipc_build_collect_tracing(1, 1, &p, 1, &b) == -EINVAL);
	memset(args, 'y', 39999);
	args[39999] = '\0';
	CHECK(ipc_build_dump(2, args, DUMP_NORMAL, 0, &b) == -EINVAL);
	strbuf_free(&b);
	free(args);
}

static void test_other_builders(void)
{
	struct strbuf b = {0};
	static const unsigned pi_ids[] = {0x00, 0x04, 0x08};

	CHECK(ipc_build_stop_tracing(0x1122334455667788ull, &b) == 0);
	b_header(&want, 0x02, 0x01);
	b_u64(&want, 0x1122334455667788ull);
	b_done(&want);
	CHECK(same(&b, &want));
	CHECK(b.len == 28);

	for (int v = 1; v <= 3; v++) {
		CHECK(ipc_build_process_info(v, &b) == 0);
		b_header(&want, 0x04, pi_ids[v - 1]);
		b_done(&want);
		CHECK_MSG(same(&b, &want), "ProcessInfo%d", v);
	}
	CHECK(ipc_build_process_info(0, &b) == -EINVAL);
	CHECK(ipc_build_process_info(4, &b) == -EINVAL);

	/* GenerateCoreDump 1..3: string path, u32 type, u32 flags. */
	for (int v = 1; v <= 3; v++) {
		uint32_t flags = v == 1 ? 1 : 4;

		CHECK(ipc_build_dump(v, "/tmp/d", DUMP_WITHHEAP, flags, &b) == 0);
		b_header(&want, 0x01, (unsigned)v);
		b_str(&want, "/tmp/d");
		b_u32(&want, 2);
		b_u32(&want, flags);
		b_done(&want);
		CHECK_MSG(same(&b, &want), "GenerateCoreDump%d", v);
	}
	CHECK(ipc_build_dump(1, "/tmp/d", DUMP_NORMAL, 4, &b) == -EINVAL); /* v1: logging flag only */
	CHECK(ipc_build_dump(4, "/tmp/d", DUMP_NORMAL, 0, &b) == -EINVAL);
	CHECK(ipc_build_dump(3, "", DUMP_NORMAL, 0, &b) == -EINVAL);
	CHECK(ipc_build_dump(3, NULL, DUMP_NORMAL, 0, &b) == -EINVAL);
	CHECK(ipc_build_dump(3, "/tmp/d", (enum dump_type)0, 0, &b) == -EINVAL);
	CHECK(ipc_build_dump(3, "/tmp/d", (enum dump_type)5, 0, &b) == -EINVAL);
	strbuf_free(&b);
}

static void test_header(void)
{
	uint8_t set = 0, id = 0;

	b_header(&want, 0xFF, 0x00);
	b_u64(&want, 7);
	b_done(&want);
	CHECK(ipc_parse_header(want.b, want.n, &set, &id) == 28);
	CHECK(set == 0xFF && id == 0x00);
	CHECK(ipc_parse_header(want.b, 20, NULL, NULL) == 28); /* only the header is needed */
	CHECK(ipc_parse_header(want.b, 19, &set, &id) == -EBADMSG);
	CHECK(ipc_parse_header(NULL, 20, &set, &id) == -EBADMSG);
	want.b[12] = '2'; /* DOTNET_IPC_V2 */
	CHECK(ipc_parse_header(want.b, 20, &set, &id) == -EBADMSG);
	want.b[12] = '1';
	want.b[13] = ' '; /* the magic's NUL is part of it */
	CHECK(ipc_parse_header(want.b, 20, &set, &id) == -EBADMSG);
	want.b[13] = 0;
	want.b[14] = 19; /* smaller than a header */
	want.b[15] = 0;
	CHECK(ipc_parse_header(want.b, 20, &set, &id) == -EBADMSG);
	want.b[14] = 20;
	CHECK(ipc_parse_header(want.b, 20, &set, &id) == 20);
	want.b[14] = 0xFF;
	want.b[15] = 0xFF;
	CHECK(ipc_parse_header(want.b, 20, &set, &id) == 65535);
}

/* --- ProcessInfo payloads --- */

static void test_process_info(void)
{
	struct ipc_process_info pi;

	for (int v = 1; v <= 3; v++) {
		b_process_info(&pay, v, 1);
		CHECK_MSG(ipc_parse_process_info(v, pay.b, pay.n, &pi) == 0, "ProcessInfo%d", v);
		CHECK(pi.version == v);
		CHECK(pi.pid == 4807);
		CHECK(memcmp(pi.cookie, wire_test_cookie, 16) == 0);
		CHECK_STR(pi.command_line, "/usr/bin/dotnet /srv/app/Web.dll --urls http://*:80");
		CHECK_STR(pi.os, "Linux");
		CHECK_STR(pi.arch, "x64");
		CHECK_STR(pi.entry_assembly, v >= 2 ? "Web" : "");
		CHECK_STR(pi.runtime_version, v >= 2 ? "10.0.12" : "");
		CHECK_STR(pi.rid, v == 3 ? "linux-x64" : "");

		/* Every truncation of a valid payload is malformed. */
		for (size_t cut = 0; cut < pay.n; cut++)
			CHECK_MSG(ipc_parse_process_info(v, pay.b, cut, &pi) == -EBADMSG, "v%d cut at %zu", v, cut);
	}

	/* ProcessInfo3 payload version 0 has no RID; a newer version may append
	 * fields we do not know. */
	b_process_info(&pay, 3, 0);
	CHECK(ipc_parse_process_info(3, pay.b, pay.n, &pi) == 0 && pi.rid[0] == '\0' &&
	      strcmp(pi.runtime_version, "10.0.12") == 0);
	b_process_info(&pay, 3, 2);
	b_str(&pay, "some future field");
	b_u32(&pay, 42);
	CHECK(ipc_parse_process_info(3, pay.b, pay.n, &pi) == 0 && strcmp(pi.rid, "linux-x64") == 0);

	/* NULL strings (length 0). */
	pay.n = 0;
	b_u64(&pay, 1);
	pay.n += 16;
	b_u32(&pay, 0);
	b_u32(&pay, 0);
	b_u32(&pay, 0);
	CHECK(ipc_parse_process_info(1, pay.b, pay.n, &pi) == 0 && pi.command_line[0] == '\0' && pi.os[0] == '\0');

	/* Hostile string lengths. */
	for (int k = 0; k < 4; k++) {
		pay.n = 0;
		b_u64(&pay, 1);
		memset(pay.b + pay.n, 0, 16);
		pay.n += 16;
		if (k == 0)
			b_u32(&pay, 0xFFFFFFFFu); /* units * 2 would overflow 32 bits */
		else if (k == 1)
			b_u32(&pay, 0x80000001u);
		else if (k == 2) {
			b_u32(&pay, 3); /* says 3 units, has 2 */
			b_u16(&pay, 'a');
			b_u16(&pay, 0);
		} else {
			b_u32(&pay, 2); /* no terminating NUL */
			b_u16(&pay, 'a');
			b_u16(&pay, 'b');
		}
		b_u32(&pay, 0);
		b_u32(&pay, 0);
		CHECK_MSG(ipc_parse_process_info(1, pay.b, pay.n, &pi) == -EBADMSG, "hostile length %d", k);
	}
	CHECK(ipc_parse_process_info(1, NULL, 0, &pi) == -EBADMSG);
	CHECK(ipc_parse_process_info(0, pay.b, pay.n, &pi) == -EBADMSG);
	CHECK(ipc_parse_process_info(4, pay.b, pay.n, &pi) == -EBADMSG);

	/* A 5000-unit command line is cut to fit, on a character boundary:
	 * 2500 x "é" (2 bytes each) into 4096 bytes keeps 2047 of them. */
	pay.n = 0;
	b_u64(&pay, 1);
	pay.n += 16;
	b_u32(&pay, 2501);
	for (int i = 0; i < 2500; i++)
		b_u16(&pay, 0xE9);
	b_u16(&pay, 0);
	b_str(&pay, "Linux");
	b_str(&pay, "x64");
	CHECK(ipc_parse_process_info(1, pay.b, pay.n, &pi) == 0);
	CHECK(strlen(pi.command_line) == 4094 && strcmp(pi.os, "Linux") == 0);
	CHECK((unsigned char)pi.command_line[4092] == 0xC3 && (unsigned char)pi.command_line[4093] == 0xA9);

	/* UTF-16 to UTF-8: a pair, lone surrogates, an embedded NUL. */
	pay.n = 0;
	b_u64(&pay, 1);
	pay.n += 16;
	b_u32(&pay, 8);
	b_u16(&pay, 0xD834); /* U+1D11E */
	b_u16(&pay, 0xDD1E);
	b_u16(&pay, 0xD800); /* high surrogate, then not a low one */
	b_u16(&pay, 'x');
	b_u16(&pay, 0xDC00); /* lone low surrogate */
	b_u16(&pay, 0);
	b_u16(&pay, 'z'); /* after the embedded NUL: dropped */
	b_u16(&pay, 0);
	b_str(&pay, "Linux");
	b_str(&pay, "x64");
	CHECK(ipc_parse_process_info(1, pay.b, pay.n, &pi) == 0);
	CHECK_STR(pi.command_line, "\xF0\x9D\x84\x9E\xEF\xBF\xBDx\xEF\xBF\xBD");
	CHECK_STR(pi.os, "Linux");
}

static void test_describe(void)
{
	char buf[512];

	CHECK_STR(ipc_hresult_name(IPC_HR_UNKNOWN_COMMAND), "UnknownCommand");
	CHECK_STR(ipc_hresult_name(IPC_HR_BAD_ENCODING), "BadEncoding");
	CHECK_STR(ipc_hresult_name(IPC_HR_UNKNOWN_MAGIC), "UnknownMagic");
	CHECK_STR(ipc_hresult_name(IPC_HR_NOT_SUPPORTED), "NotSupported");
	CHECK_STR(ipc_hresult_name(IPC_HR_NOT_YET_AVAILABLE), "NotYetAvailable");
	CHECK_STR(ipc_hresult_name(IPC_HR_RUNTIME_UNINITIALIZED), "RuntimeUninitialized");
	CHECK_STR(ipc_hresult_name(IPC_HR_INVALID_ARG), "InvalidArg");
	CHECK_STR(ipc_hresult_name(IPC_HR_FAIL), "Fail");
	CHECK(ipc_hresult_name(0x12345678u) == NULL);

	memset(&reply, 0, sizeof(reply));
	reply.set = 0xFF;
	reply.id = 0xFF;
	reply.hresult = IPC_HR_UNKNOWN_COMMAND;
	ipc_describe_error(&reply, buf, sizeof(buf));
	CHECK_STR(buf, "the runtime refused the command: UnknownCommand (0x80131385)");
	reply.hresult = IPC_HR_NOT_SUPPORTED;
	ipc_describe_error(&reply, buf, sizeof(buf));
	CHECK_STR(buf, "the runtime refused the command: NotSupported (0x80131515)");
	reply.hresult = IPC_HR_FAIL;
	strcpy(reply.message, "[createdump] Could not create output file");
	ipc_describe_error(&reply, buf, sizeof(buf));
	CHECK_STR(buf, "the runtime refused the command: Fail (0x80004005): [createdump] Could not create output file");
	reply.message[0] = '\0';
	reply.hresult = 0x80001234u;
	ipc_describe_error(&reply, buf, sizeof(buf));
	CHECK_STR(buf, "the runtime refused the command: error 0x80001234");
	reply.id = 0x00;
	ipc_describe_error(&reply, buf, sizeof(buf));
	CHECK_STR(buf, "the runtime accepted the command");
	reply.set = 0x02;
	reply.id = 0x07;
	ipc_describe_error(&reply, buf, sizeof(buf));
	CHECK_STR(buf, "the runtime sent an unexpected reply (command set 0x02, id 0x07)");
	reply.set = reply.id = 0xFF;
	reply.hresult = IPC_HR_UNKNOWN_COMMAND;
	ipc_describe_error(&reply, buf, 12);
	CHECK_STR(buf, "the runtime");
}

/* A reply completed from its header: set and id, an error's HRESULT and its
 * message (flattened for a log line, dropped when it does not parse). */
static void test_parse_reply(void)
{
	b_header(&want, 0xFF, 0x00);
	b_u64(&want, 0xABCDEF);
	b_done(&want);
	memcpy(reply.payload, want.b + 20, want.n - 20);
	reply.payload_len = want.n - 20;
	CHECK(ipc_parse_reply(want.b, &reply) == 0);
	CHECK(reply.set == 0xFF && reply.id == 0x00 && reply.hresult == 0 && reply.message[0] == '\0');

	b_header(&want, 0xFF, 0xFF);
	b_u32(&want, IPC_HR_FAIL);
	b_str(&want, "[createdump] no space\n\t\x7F ");
	b_done(&want);
	memcpy(reply.payload, want.b + 20, want.n - 20);
	reply.payload_len = want.n - 20;
	CHECK(ipc_parse_reply(want.b, &reply) == 0);
	CHECK(reply.hresult == IPC_HR_FAIL);
	CHECK_STR(reply.message, "[createdump] no space");

	/* A message longer than the payload: the HRESULT still counts. */
	b_header(&want, 0xFF, 0xFF);
	b_u32(&want, IPC_HR_NOT_SUPPORTED);
	b_u32(&want, 1000);
	b_u16(&want, 'a');
	b_done(&want);
	memcpy(reply.payload, want.b + 20, want.n - 20);
	reply.payload_len = want.n - 20;
	CHECK(ipc_parse_reply(want.b, &reply) == 0 && reply.hresult == IPC_HR_NOT_SUPPORTED &&
	      reply.message[0] == '\0');

	/* An error without its HRESULT. */
	reply.payload_len = 3;
	CHECK(ipc_parse_reply(want.b, &reply) == -EBADMSG);
}

static void test_session_id(void)
{
	static const uint8_t p[9] = {0xF0, 0x18, 0x00, 0xA8, 0xB8, 0x7F, 0x00, 0x00, 0xEE};
	uint64_t id = 0;

	CHECK(ipc_parse_session_id(p, 8, &id) == 0 && id == 0x7fb8a80018f0ull);
	CHECK(ipc_parse_session_id(p, 9, &id) == 0 && id == 0x7fb8a80018f0ull); /* trailing bytes: fine */
	id = 1;
	CHECK(ipc_parse_session_id(p, 7, &id) == -EBADMSG && id == 1);
	CHECK(ipc_parse_session_id(NULL, 0, &id) == -EBADMSG);
}

/* What a refusal means to the caller: the errno for each HRESULT. */
static void test_reply_errno(void)
{
	static const struct {
		uint32_t hr;
		int err;
	} map[] = {
	    {IPC_HR_UNKNOWN_COMMAND, -EOPNOTSUPP},
	    {IPC_HR_NOT_SUPPORTED, -EOPNOTSUPP},
	    {IPC_HR_BAD_ENCODING, -EINVAL},
	    {IPC_HR_INVALID_ARG, -EINVAL},
	    {IPC_HR_NOT_YET_AVAILABLE, -EAGAIN},
	    {IPC_HR_RUNTIME_UNINITIALIZED, -EAGAIN},
	    {IPC_HR_FAIL, -EPROTO},
	    {0x80001234u, -EPROTO},
	};

	memset(&reply, 0, sizeof(reply));
	reply.set = reply.id = 0xFF;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		reply.hresult = map[i].hr;
		CHECK_MSG(ipc_reply_errno(&reply) == map[i].err, "0x%08X", map[i].hr);
	}
	reply.set = 0x02; /* not an error reply at all */
	reply.id = 0x07;
	CHECK(ipc_reply_errno(&reply) == -EBADMSG);
}

int main(void)
{
	test_event_filter();
	test_spec_example();
	test_collect_tracing();
	test_utf8_strings();
	test_size_limit();
	test_other_builders();
	test_header();
	test_process_info();
	test_parse_reply();
	test_session_id();
	test_describe();
	test_reply_errno();
	return check_done();
}
