/* SHA-256 as FIPS 180-4 defines it (section 6.2: the message schedule, the
 * 64 rounds, the padding of section 5.1.1) and HMAC over it as RFC 2104
 * defines it. Used to sign requests to object storage (AWS Signature Version
 * 4) and to hash the bytes uploaded, so that no crypto library is needed.
 * Nothing here is secret-dependent in its timing except through memory the
 * caller already holds; the keys it sees are the caller's own. */
#include "dumpwatch/sha256.h"

#include <string.h>

/* FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

/* FIPS 180-4 section 6.2.2, steps 1-4, for one 512-bit block. */
static void compress(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (unsigned t = 0; t < 16; t++)
		w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 |
		       (uint32_t)p[4 * t + 3];
	for (unsigned t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = s1 + w[t - 7] + s0 + w[t - 16];
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (unsigned t = 0; t < 64; t++) {
		uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
		uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

void sha256_init(struct sha256 *s)
{
	/* FIPS 180-4 section 5.3.3. */
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, h0, sizeof(h0));
	s->bytes = 0;
	s->used = 0;
}

void sha256_update(struct sha256 *s, const void *p, size_t len)
{
	const uint8_t *in = p;
	if (len == 0)
		return;
	s->bytes += len;
	if (s->used > 0) {
		size_t take = SHA256_BLOCK_SIZE - s->used;
		if (take > len)
			take = len;
		memcpy(s->block + s->used, in, take);
		s->used += take;
		in += take;
		len -= take;
		if (s->used < SHA256_BLOCK_SIZE)
			return;
		compress(s->h, s->block);
		s->used = 0;
	}
	for (; len >= SHA256_BLOCK_SIZE; in += SHA256_BLOCK_SIZE, len -= SHA256_BLOCK_SIZE)
		compress(s->h, in);
	if (len > 0) {
		memcpy(s->block, in, len);
		s->used = len;
	}
}

void sha256_final(struct sha256 *s, uint8_t out[SHA256_DIGEST_SIZE])
{
	/* Section 5.1.1: a 1 bit, zeros up to 448 mod 512 bits, then the
	 * length in bits as a 64-bit big-endian number. */
	uint64_t bits = s->bytes * 8;
	s->block[s->used++] = 0x80;
	if (s->used > SHA256_BLOCK_SIZE - 8) {
		memset(s->block + s->used, 0, SHA256_BLOCK_SIZE - s->used);
		compress(s->h, s->block);
		s->used = 0;
	}
	memset(s->block + s->used, 0, SHA256_BLOCK_SIZE - 8 - s->used);
	for (unsigned i = 0; i < 8; i++)
		s->block[SHA256_BLOCK_SIZE - 1 - i] = (uint8_t)(bits >> (8 * i));
	compress(s->h, s->block);
	for (unsigned i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
	memset(s, 0, sizeof(*s));
}

void sha256_digest(const void *p, size_t len, uint8_t out[SHA256_DIGEST_SIZE])
{
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, p, len);
	sha256_final(&s, out);
}

void hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len, uint8_t out[SHA256_DIGEST_SIZE])
{
	/* RFC 2104 section 2: H(K ^ opad, H(K ^ ipad, text)), K padded with
	 * zeros to the block size. */
	uint8_t k[SHA256_BLOCK_SIZE] = {0}, pad[SHA256_BLOCK_SIZE], inner[SHA256_DIGEST_SIZE];
	if (keylen > SHA256_BLOCK_SIZE)
		sha256_digest(key, keylen, k);
	else if (keylen > 0)
		memcpy(k, key, keylen);
	struct sha256 s;
	for (unsigned i = 0; i < SHA256_BLOCK_SIZE; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, msg, len);
	sha256_final(&s, inner);
	for (unsigned i = 0; i < SHA256_BLOCK_SIZE; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, inner, sizeof(inner));
	sha256_final(&s, out);
	/* The key stretched to a block is as good as the key. */
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
}

void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char out[SHA256_HEX_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < SHA256_DIGEST_SIZE; i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 15];
	}
	out[2 * SHA256_DIGEST_SIZE] = '\0';
}
