/* A hand-made byte writer for the IPC messages the unit tests expect or
 * send (ipc-protocol.md), written field by field, independent of wire.c; and
 * the ProcessInfo payload test_wire parses and test_ipc's fake runtime
 * answers with. */
#ifndef DUMPWATCH_TEST_WIREBYTES_H
#define DUMPWATCH_TEST_WIREBYTES_H

#include <stdint.h>
#include <string.h>

struct bytes {
	uint8_t b[70000];
	size_t n;
};

static inline void b_u8(struct bytes *x, unsigned v)
{
	x->b[x->n++] = (uint8_t)v;
}

static inline void b_u16(struct bytes *x, unsigned v)
{
	b_u8(x, v & 0xFF);
	b_u8(x, (v >> 8) & 0xFF);
}

static inline void b_u32(struct bytes *x, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b_u8(x, (v >> (8 * i)) & 0xFF);
}

static inline void b_u64(struct bytes *x, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b_u8(x, (unsigned)(v >> (8 * i)) & 0xFF);
}

/* An ASCII string as the protocol has it: u32 units with NUL, UTF-16LE. */
static inline void b_str(struct bytes *x, const char *ascii)
{
	size_t n = strlen(ascii);

	b_u32(x, (uint32_t)n + 1);
	for (size_t i = 0; i < n; i++)
		b_u16(x, (unsigned char)ascii[i]);
	b_u16(x, 0);
}

static inline void b_header(struct bytes *x, unsigned set, unsigned id)
{
	x->n = 0;
	memcpy(x->b, "DOTNET_IPC_V1\0", 14);
	x->n = 14;
	b_u16(x, 0); /* patched by b_done */
	b_u8(x, set);
	b_u8(x, id);
	b_u16(x, 0);
}

static inline void b_done(struct bytes *x)
{
	x->b[14] = (uint8_t)x->n;
	x->b[15] = (uint8_t)(x->n >> 8);
}

static const uint8_t wire_test_cookie[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* A ProcessInfo payload of version v (1..3; v3version is ProcessInfo3's
 * payload version, 1 and up with a RID) for pid 4807 running Web.dll. */
static inline void b_process_info(struct bytes *x, int v, uint32_t v3version)
{
	x->n = 0;
	if (v == 3)
		b_u32(x, v3version);
	b_u64(x, 4807);
	memcpy(x->b + x->n, wire_test_cookie, 16);
	x->n += 16;
	b_str(x, "/usr/bin/dotnet /srv/app/Web.dll --urls http://*:80");
	b_str(x, "Linux");
	b_str(x, "x64");
	if (v >= 2) {
		b_str(x, "Web");
		b_str(x, "10.0.12");
	}
	if (v == 3 && v3version >= 1)
		b_str(x, "linux-x64");
}

#endif
