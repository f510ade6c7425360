/* Unit tests of the diagnostics IPC client: byte-exact requests built by hand
 * from ipc-protocol.md, header and reply parsing (good, truncated, wrong
 * magic, hostile lengths), ProcessInfo payloads of each version, error texts,
 * and the socket calls against a fake runtime (a forked process on a unix
 * socket in a temporary directory; no .NET needed). */
#include "dumpwatch/ipc.h"

#include "check.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- a hand-made byte writer for expected messages --- */

struct bytes {
	uint8_t b[70000];
	size_t n;
};

static void b_u8(struct bytes *x, unsigned v)
{
	x->b[x->n++] = (uint8_t)v;
}

static void b_u16(struct bytes *x, unsigned v)
{
	b_u8(x, v & 0xFF);
	b_u8(x, (v >> 8) & 0xFF);
}

static void b_u32(struct bytes *x, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b_u8(x, (v >> (8 * i)) & 0xFF);
}

static void b_u64(struct bytes *x, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b_u8(x, (unsigned)(v >> (8 * i)) & 0xFF);
}

/* An ASCII string as the protocol has it: u32 units with NUL, UTF-16LE. */
static void b_str(struct bytes *x, const char *ascii)
{
	size_t n = strlen(ascii);

	b_u32(x, (uint32_t)n + 1);
	for (size_t i = 0; i < n; i++)
		b_u16(x, (unsigned char)ascii[i]);
	b_u16(x, 0);
}

static void b_header(struct bytes *x, unsigned set, unsigned id)
{
	x->n = 0;
	memcpy(x->b, "DOTNET_IPC_V1\0", 14);
	x->n = 14;
	b_u16(x, 0); /* patched by b_done */
	b_u8(x, set);
	b_u8(x, id);
	b_u16(x, 0);
}

static void b_done(struct bytes *x)
{
	x->b[14] = (uint8_t)x->n;
	x->b[15] = (uint8_t)(x->n >> 8);
}

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

static const uint8_t cookie[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void payload_process_info(int v, uint32_t v3version)
{
	pay.n = 0;
	if (v == 3)
		b_u32(&pay, v3version);
	b_u64(&pay, 4807);
	memcpy(pay.b + pay.n, cookie, 16);
	pay.n += 16;
	b_str(&pay, "/usr/bin/dotnet /srv/app/Web.dll --urls http://*:80");
	b_str(&pay, "Linux");
	b_str(&pay, "x64");
	if (v >= 2) {
		b_str(&pay, "Web");
		b_str(&pay, "10.0.12");
	}
	if (v == 3 && v3version >= 1)
		b_str(&pay, "linux-x64");
}

static void test_process_info(void)
{
	struct ipc_process_info pi;

	for (int v = 1; v <= 3; v++) {
		payload_process_info(v, 1);
		CHECK_MSG(ipc_parse_process_info(v, pay.b, pay.n, &pi) == 0, "ProcessInfo%d", v);
		CHECK(pi.version == v);
		CHECK(pi.pid == 4807);
		CHECK(memcmp(pi.cookie, cookie, 16) == 0);
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
	payload_process_info(3, 0);
	CHECK(ipc_parse_process_info(3, pay.b, pay.n, &pi) == 0 && pi.rid[0] == '\0' &&
	      strcmp(pi.runtime_version, "10.0.12") == 0);
	payload_process_info(3, 2);
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

/* --- ipc_read_reply over a socketpair --- */

static void put_all(int fd, const void *p, size_t n)
{
	CHECK(write(fd, p, n) == (ssize_t)n);
}

static void test_read_reply(void)
{
	int sv[2];
	char rest[9] = {0};

	/* OK + session id, then the stream: only the reply is consumed. */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	b_header(&want, 0xFF, 0x00);
	b_u64(&want, 0xABCDEF);
	b_done(&want);
	put_all(sv[1], want.b, want.n);
	put_all(sv[1], "Nettrace", 8);
	CHECK(ipc_read_reply(sv[0], 1000, &reply) == 0);
	CHECK(reply.set == 0xFF && reply.id == 0x00 && reply.payload_len == 8 && reply.payload[0] == 0xEF);
	CHECK(read(sv[0], rest, 8) == 8 && memcmp(rest, "Nettrace", 8) == 0);

	/* An error reply. */
	b_header(&want, 0xFF, 0xFF);
	b_u32(&want, IPC_HR_UNKNOWN_COMMAND);
	b_done(&want);
	put_all(sv[1], want.b, want.n);
	CHECK(ipc_read_reply(sv[0], 1000, &reply) == 0);
	CHECK(reply.id == 0xFF && reply.hresult == IPC_HR_UNKNOWN_COMMAND && reply.message[0] == '\0');

	/* A dump v3 error with its message; control characters flattened. */
	b_header(&want, 0xFF, 0xFF);
	b_u32(&want, IPC_HR_FAIL);
	b_str(&want, "[createdump] no space\n[createdump] Failure took 3ms\n");
	b_done(&want);
	put_all(sv[1], want.b, want.n);
	CHECK(ipc_read_reply(sv[0], 1000, &reply) == 0);
	CHECK(reply.hresult == IPC_HR_FAIL);
	CHECK_STR(reply.message, "[createdump] no space [createdump] Failure took 3ms");

	/* A message string longer than the payload: the HRESULT still counts. */
	b_header(&want, 0xFF, 0xFF);
	b_u32(&want, IPC_HR_FAIL);
	b_u32(&want, 1000);
	b_u16(&want, 'a');
	b_done(&want);
	put_all(sv[1], want.b, want.n);
	CHECK(ipc_read_reply(sv[0], 1000, &reply) == 0);
	CHECK(reply.hresult == IPC_HR_FAIL && reply.message[0] == '\0');

	/* An error without an HRESULT. */
	b_header(&want, 0xFF, 0xFF);
	b_u16(&want, 0);
	b_done(&want);
	put_all(sv[1], want.b, want.n);
	CHECK(ipc_read_reply(sv[0], 1000, &reply) == -EBADMSG);

	/* The largest message a u16 allows. */
	b_header(&want, 0xFF, 0x00);
	memset(want.b + 20, 0x5A, 65515);
	want.n = 65535;
	b_done(&want);
	{
		pid_t w = fork();

		if (w == 0) { /* more than a socket buffer: write from another process */
			size_t off = 0;

			while (off < want.n) {
				ssize_t k = write(sv[1], want.b + off, want.n - off);

				if (k <= 0)
					_exit(1);
				off += (size_t)k;
			}
			_exit(0);
		}
		CHECK(ipc_read_reply(sv[0], 5000, &reply) == 0);
		CHECK(reply.payload_len == 65515 && reply.payload[65514] == 0x5A);
		waitpid(w, NULL, 0);
	}

	/* Wrong magic. */
	b_header(&want, 0xFF, 0x00);
	want.b[0] = 'X';
	b_done(&want);
	put_all(sv[1], want.b, want.n);
	CHECK(ipc_read_reply(sv[0], 1000, &reply) == -EBADMSG);

	/* Nothing arrives: timeout. */
	{
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		CHECK(ipc_read_reply(sv[0], 50, &reply) == -ETIMEDOUT);
		clock_gettime(CLOCK_MONOTONIC, &b);
		CHECK((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= 45);
	}
	close(sv[0]);
	close(sv[1]);

	/* A reply dribbling in byte by byte is put together. */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	b_header(&want, 0xFF, 0x00);
	b_u64(&want, 99);
	b_done(&want);
	{
		pid_t w = fork();

		if (w == 0) {
			for (size_t i = 0; i < want.n; i++) {
				struct timespec ts = {0, 500000};

				if (write(sv[1], want.b + i, 1) != 1)
					_exit(1);
				nanosleep(&ts, NULL);
			}
			_exit(0);
		}
		CHECK(ipc_read_reply(sv[0], 5000, &reply) == 0 && reply.payload_len == 8 && reply.payload[0] == 99);
		waitpid(w, NULL, 0);
	}
	close(sv[0]);
	close(sv[1]);

	/* The peer goes away: before anything, inside the header, inside the payload. */
	for (int k = 0; k < 3; k++) {
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		if (k == 1)
			put_all(sv[1], want.b, 10);
		if (k == 2)
			put_all(sv[1], want.b, 24);
		close(sv[1]);
		CHECK_MSG(ipc_read_reply(sv[0], 1000, &reply) == (k == 0 ? -ECONNRESET : -EBADMSG), "peer gone %d", k);
		close(sv[0]);
	}
	CHECK(ipc_read_reply(-1, 10, &reply) == -EINVAL);
}

/* --- the socket calls against a fake runtime --- */

/* One scripted answer: the reply to send, and bytes of "stream" after it;
 * silent = accept and answer nothing. */
struct answer {
	struct bytes reply;
	const char *stream;
	int silent;
};

static char tmpdir[64];
static struct answer script[6];

/* Listens on path and answers len connections from script in a child.
 * The child writes the set and id of each request it got to ret_log. */
static pid_t fake_runtime(const char *path, int n, int *ret_log)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd, pipefd[2];
	pid_t pid;

	/* Bind through the directory when the path is too long for sun_path. */
	if (strlen(path) < sizeof(sa.sun_path)) {
		strcpy(sa.sun_path, path);
	} else {
		char dir[512];
		const char *slash = strrchr(path, '/');

		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		CHECK(chdir(dir) == 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", slash + 1);
	}
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(lfd >= 0);
	CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(lfd, 8) == 0);
	CHECK(chdir("/") == 0);
	CHECK(pipe(pipefd) == 0);
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		alarm(10);
		for (int i = 0; i < n; i++) {
			uint8_t hdr[20], body[65536];
			int c = accept(lfd, NULL, NULL);
			size_t size, got = 0;

			if (c < 0)
				_exit(1);
			while (got < 20) {
				ssize_t k = read(c, hdr + got, 20 - got);

				if (k == 0 && got == 0)
					break;
				if (k <= 0)
					_exit(2);
				got += (size_t)k;
			}
			if (got == 0) {
				/* A client that closed without a request (it refused
				 * us) does not count. */
				close(c);
				i--;
				continue;
			}
			size = (size_t)hdr[14] | (size_t)hdr[15] << 8;
			for (got = 20; got < size;) {
				ssize_t k = read(c, body, size - got < sizeof(body) ? size - got : sizeof(body));

				if (k <= 0)
					_exit(3);
				got += (size_t)k;
			}
			if (write(pipefd[1], hdr + 16, 2) != 2)
				_exit(4);
			if (script[i].silent) {
				pause();
				_exit(0);
			}
			if (write(c, script[i].reply.b, script[i].reply.n) != (ssize_t)script[i].reply.n)
				_exit(5);
			if (script[i].stream && write(c, script[i].stream, strlen(script[i].stream)) < 0)
				_exit(6);
			close(c);
		}
		_exit(0);
	}
	close(pipefd[1]);
	close(lfd);
	*ret_log = pipefd[0];
	return pid;
}

/* Reads the logged (set, id) pairs into ids as set << 8 | id. */
static int fake_done(pid_t pid, int log, unsigned *ids, int max)
{
	uint8_t two[2];
	int n = 0, status = 0;

	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	while (n < max && read(log, two, 2) == 2)
		ids[n++] = (unsigned)two[0] << 8 | two[1];
	close(log);
	return n;
}

static void reply_ok_u64(struct bytes *x, uint64_t v)
{
	b_header(x, 0xFF, 0x00);
	b_u64(x, v);
	b_done(x);
}

static void reply_error(struct bytes *x, uint32_t hr)
{
	b_header(x, 0xFF, 0xFF);
	b_u32(x, hr);
	b_done(x);
}

/* A CollectTracing op keeps every provider's arguments whole (a meters
 * subscription's run to hundreds of bytes), and refuses, not cuts, what does
 * not fit. */
static void test_op_args(void)
{
	static struct ipc_op op;
	static char a[1500], b[IPC_OP_ARGS_MAX];
	const struct ipc_endpoint ep = {.path = "/nonexistent/dumpwatch-test.sock", .pid = 1, .uid = 0};
	struct ipc_provider provs[2] = {{0, 4, "System.Runtime", "EventCounterIntervalSec=1", NULL, 0},
	                                {0x2, 4, "System.Diagnostics.Metrics", a, NULL, 0}};

	memset(a, 'm', sizeof(a) - 1);
	ipc_op_collect_tracing(&op, &ep, provs, 2, 16, 100);
	CHECK(op.n_providers == 2 && strcmp(op.providers[0].args, "EventCounterIntervalSec=1") == 0 &&
	      strcmp(op.providers[1].args, a) == 0 && op.providers[1].args != a);
	ipc_op_clear(&op);
	memset(b, 'm', sizeof(b) - 1);
	provs[1].args = b;
	CHECK(ipc_op_collect_tracing(&op, &ep, provs, 2, 16, 100) == -E2BIG);
	CHECK(strstr(op.err, "the providers' arguments exceed") != NULL);
	ipc_op_clear(&op);
}

static void test_fake_runtime(void)
{
	char path[600], err[512];
	struct ipc_process_info pi;
	struct ipc_provider prov = {0, 4, "System.Runtime", "EventCounterIntervalSec=1", NULL, 0};
	unsigned ids[8];
	uint64_t session = 0;
	int log, fd = -1, n;
	pid_t srv;
	/* The fake's socket is bound and listened on by this process before
	 * the fork: SO_PEERCRED names us. */
	const struct ipc_endpoint ep = {.path = path, .pid = getpid(), .uid = getuid()};

	/* ProcessInfo3 unknown: falls back to ProcessInfo2, new connection each. */
	snprintf(path, sizeof(path), "%s/pi.sock", tmpdir);
	memset(script, 0, sizeof(script));
	reply_error(&script[0].reply, IPC_HR_UNKNOWN_COMMAND);
	payload_process_info(2, 0);
	b_header(&script[1].reply, 0xFF, 0x00);
	memcpy(script[1].reply.b + 20, pay.b, pay.n);
	script[1].reply.n = 20 + pay.n;
	b_done(&script[1].reply);
	srv = fake_runtime(path, 2, &log);
	CHECK(ipc_process_info(&ep, 2000, &pi, err, sizeof(err)) == 0);
	CHECK(pi.version == 2 && strcmp(pi.entry_assembly, "Web") == 0);
	n = fake_done(srv, log, ids, 8);
	CHECK(n == 2 && ids[0] == 0x0408 && ids[1] == 0x0404);
	unlink(path);

	/* ProcessInfo refused with something else: no fallback, a sentence. */
	memset(script, 0, sizeof(script));
	reply_error(&script[0].reply, IPC_HR_FAIL);
	srv = fake_runtime(path, 1, &log);
	CHECK(ipc_process_info(&ep, 2000, &pi, err, sizeof(err)) == -EPROTO);
	CHECK_STR(err, "ProcessInfo3: the runtime refused the command: Fail (0x80004005)");
	CHECK(fake_done(srv, log, ids, 8) == 1);
	unlink(path);

	/* CollectTracing5 unknown, CollectTracing4 starts: the fd carries the stream. */
	memset(script, 0, sizeof(script));
	reply_error(&script[0].reply, IPC_HR_UNKNOWN_COMMAND);
	reply_ok_u64(&script[1].reply, 0x7fb8a80018f0ull);
	script[1].stream = "Nettrace";
	srv = fake_runtime(path, 2, &log);
	CHECK(ipc_collect_tracing(&ep, &prov, 1, 16, 2000, &fd, &session, err, sizeof(err)) == 0);
	CHECK(session == 0x7fb8a80018f0ull && fd >= 0);
	if (fd >= 0) {
		char head[9] = {0};
		size_t got = 0;

		while (got < 8) {
			ssize_t k = read(fd, head + got, 8 - got);

			if (k <= 0)
				break;
			got += (size_t)k;
		}
		CHECK_STR(head, "Nettrace");
		close(fd);
	}
	n = fake_done(srv, log, ids, 8);
	CHECK(n == 2 && ids[0] == 0x0206 && ids[1] == 0x0205);
	unlink(path);

	/* BadEncoding is final. */
	memset(script, 0, sizeof(script));
	reply_error(&script[0].reply, IPC_HR_BAD_ENCODING);
	srv = fake_runtime(path, 1, &log);
	CHECK(ipc_collect_tracing(&ep, &prov, 1, 16, 2000, &fd, &session, err, sizeof(err)) == -EINVAL);
	CHECK(fd == -1);
	CHECK_STR(err, "CollectTracing5: the runtime refused the command: BadEncoding (0x80131384)");
	CHECK(fake_done(srv, log, ids, 8) == 1);
	unlink(path);

	/* StopTracing. */
	memset(script, 0, sizeof(script));
	reply_ok_u64(&script[0].reply, 5);
	srv = fake_runtime(path, 1, &log);
	CHECK(ipc_stop_tracing(&ep, 5, 2000, err, sizeof(err)) == 0);
	n = fake_done(srv, log, ids, 8);
	CHECK(n == 1 && ids[0] == 0x0201);
	unlink(path);

	/* A dump request answered later with a v3 error message. */
	memset(script, 0, sizeof(script));
	b_header(&script[0].reply, 0xFF, 0xFF);
	b_u32(&script[0].reply, IPC_HR_FAIL);
	b_str(&script[0].reply, "[createdump] Could not create output file");
	b_done(&script[0].reply);
	srv = fake_runtime(path, 1, &log);
	CHECK(ipc_dump_send(&ep, 3, "/x/y.dmp", DUMP_FULL, 0, &fd, err, sizeof(err)) == 0);
	CHECK(ipc_read_reply(fd, 2000, &reply) == 0);
	CHECK(reply.id == 0xFF && reply.hresult == IPC_HR_FAIL);
	CHECK_STR(reply.message, "[createdump] Could not create output file");
	close(fd);
	n = fake_done(srv, log, ids, 8);
	CHECK(n == 1 && ids[0] == 0x0103);
	unlink(path);

	/* A runtime that never answers. */
	memset(script, 0, sizeof(script));
	script[0].silent = 1;
	srv = fake_runtime(path, 1, &log);
	CHECK(ipc_process_info(&ep, 100, &pi, err, sizeof(err)) == -ETIMEDOUT);
	CHECK(strstr(err, "did not answer within 100 ms") != NULL);
	fake_done(srv, log, ids, 8);
	unlink(path);

	/* A path longer than sun_path (108 bytes) is reached through its directory. */
	{
		char dir[300];

		snprintf(dir, sizeof(dir), "%s/%0100d", tmpdir, 0);
		CHECK(mkdir(dir, 0700) == 0);
		snprintf(path, sizeof(path), "%s/dotnet-diagnostic-1-2-socket", dir);
		CHECK(strlen(path) > 108);
		memset(script, 0, sizeof(script));
		reply_ok_u64(&script[0].reply, 9);
		srv = fake_runtime(path, 1, &log);
		CHECK(ipc_stop_tracing(&ep, 9, 2000, err, sizeof(err)) == 0);
		fake_done(srv, log, ids, 8);
		unlink(path);
		rmdir(dir);
	}

	/* A listener that is not the process named: another pid, or another
	 * user under the right pid, is refused before anything is sent. */
	snprintf(path, sizeof(path), "%s/peer.sock", tmpdir);
	memset(script, 0, sizeof(script));
	reply_ok_u64(&script[0].reply, 5);
	srv = fake_runtime(path, 1, &log);
	{
		struct ipc_endpoint other = ep;

		other.pid = srv;
		CHECK(ipc_connect(&other) == -EPERM);
		CHECK(ipc_stop_tracing(&other, 5, 2000, err, sizeof(err)) == -EPERM);
		CHECK(strstr(err, "refusing") && strstr(err, "planted"));
		other = ep;
		other.uid = ep.uid + 1;
		CHECK(ipc_process_info(&other, 2000, &pi, err, sizeof(err)) == -EPERM);
		CHECK(ipc_dump_send(&other, 3, "/x/y.dmp", DUMP_FULL, 0, &fd, err, sizeof(err)) == -EPERM);
		CHECK(fd == -1);
		/* Still served to the right peer afterwards. */
		CHECK(ipc_stop_tracing(&ep, 5, 2000, err, sizeof(err)) == 0);
	}
	fake_done(srv, log, ids, 8);
	unlink(path);

	/* Nobody there: gone, or a stale socket file. */
	snprintf(path, sizeof(path), "%s/none.sock", tmpdir);
	CHECK(ipc_connect(&ep) == -ENOENT);
	CHECK(ipc_process_info(&ep, 100, &pi, err, sizeof(err)) == -ENOENT);
	{
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int s = socket(AF_UNIX, SOCK_STREAM, 0);

		CHECK(strlen(path) < sizeof(sa.sun_path));
		memcpy(sa.sun_path, path, strlen(path) + 1);
		CHECK(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
		close(s);
		CHECK(ipc_connect(&ep) == -ECONNREFUSED);
		CHECK(ipc_stop_tracing(&ep, 1, 100, err, sizeof(err)) == -ECONNREFUSED);
		CHECK(strstr(err, "nobody listens") != NULL);
		unlink(path);
	}
}

int main(void)
{
	test_op_args();
	test_event_filter();
	/* SIGPIPE stays fatal: the library must never raise it (MSG_NOSIGNAL). */
	test_spec_example();
	test_collect_tracing();
	test_utf8_strings();
	test_size_limit();
	test_other_builders();
	test_header();
	test_process_info();
	test_describe();
	test_read_reply();
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/dw-test-ipc-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_fake_runtime();
	rmdir(tmpdir);
	return check_done();
}
