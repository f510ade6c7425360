/* SHA-256 (FIPS 180-4) computed incrementally, and HMAC-SHA256 (RFC 2104),
 * for signing requests to object storage (s3.c) and hashing what it uploads.
 * Pure: no allocation, no globals but the constant table. */
#ifndef DUMPWATCH_SHA256_H
#define DUMPWATCH_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_BLOCK_SIZE 64
#define SHA256_HEX_SIZE (2 * SHA256_DIGEST_SIZE + 1) /* lower-case hex and its NUL */

struct sha256 {
	uint32_t h[8];
	uint64_t bytes; /* message length so far */
	uint8_t block[SHA256_BLOCK_SIZE];
	size_t used; /* bytes waiting in block */
};

/* Starts a new message. */
void sha256_init(struct sha256 *s);

/* Adds len bytes at p (p may be NULL when len is 0). */
void sha256_update(struct sha256 *s, const void *p, size_t len);

/* Finishes the message into out; s must be initialised again before reuse. */
void sha256_final(struct sha256 *s, uint8_t out[SHA256_DIGEST_SIZE]);

/* The digest of len bytes at p in one call. */
void sha256_digest(const void *p, size_t len, uint8_t out[SHA256_DIGEST_SIZE]);

/* HMAC-SHA256 of len bytes at msg under key (any key length; a key longer than
 * the block is hashed first, as RFC 2104 says). */
void hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len, uint8_t out[SHA256_DIGEST_SIZE]);

/* Writes the digest as 64 lower-case hex digits and a NUL. */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char out[SHA256_HEX_SIZE]);

#endif
