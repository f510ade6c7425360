/* Little-endian fields at any alignment, as the runtime's payloads and the
 * nettrace stream lay them out. */
#ifndef DUMPWATCH_LE_H
#define DUMPWATCH_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t le16_at(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t le32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t le64_at(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

#endif
