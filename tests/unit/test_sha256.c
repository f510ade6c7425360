/* Unit tests for sha256.c: the FIPS 180-2 / NIST example messages (empty,
 * "abc", the 448-bit message, one million 'a' fed in uneven pieces) and the
 * HMAC-SHA256 cases 1-4, 6 and 7 of RFC 4231. */
#include "dumpwatch/sha256.h"

#include <string.h>

#include "check.h"

static void check_digest(const char *msg, size_t len, const char *want)
{
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[SHA256_HEX_SIZE];
	sha256_digest(msg, len, d);
	sha256_hex(d, hex);
	CHECK_STR(hex, want);
}

static void check_hmac(const uint8_t *key, size_t keylen, const void *msg, size_t len, const char *want)
{
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[SHA256_HEX_SIZE];
	hmac_sha256(key, keylen, msg, len, d);
	sha256_hex(d, hex);
	CHECK_STR(hex, want);
}

static void test_nist(void)
{
	check_digest("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_digest("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	check_digest(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

	/* One million 'a' in pieces of 1, 63, 64, 65, ... bytes: every way a
	 * piece can straddle a block. */
	static char a[1000];
	memset(a, 'a', sizeof(a));
	struct sha256 s;
	sha256_init(&s);
	size_t left = 1000000, steps[] = {1, 63, 64, 65, 127, 1000, 7};
	for (unsigned i = 0; left > 0; i++) {
		size_t n = steps[i % (sizeof(steps) / sizeof(steps[0]))];
		if (n > left)
			n = left;
		sha256_update(&s, a, n);
		left -= n;
	}
	sha256_update(&s, NULL, 0);
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[SHA256_HEX_SIZE];
	sha256_final(&s, d);
	sha256_hex(d, hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

	/* Lengths around the padding boundary (55, 56, 64 bytes) agree fed
	 * whole and byte by byte. */
	for (size_t n = 50; n <= 130; n++) {
		uint8_t d1[SHA256_DIGEST_SIZE], d2[SHA256_DIGEST_SIZE];
		sha256_digest(a, n, d1);
		sha256_init(&s);
		for (size_t i = 0; i < n; i++)
			sha256_update(&s, a + i, 1);
		sha256_final(&s, d2);
		CHECK(memcmp(d1, d2, sizeof(d1)) == 0);
	}
}

static void test_rfc4231(void)
{
	uint8_t key[131];

	memset(key, 0x0b, 20); /* test case 1 */
	check_hmac(key, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

	const char *m2 = "what do ya want for nothing?"; /* test case 2 */
	check_hmac((const uint8_t *)"Jefe", 4, m2, strlen(m2),
	           "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

	uint8_t data[50];
	memset(key, 0xaa, 20); /* test case 3 */
	memset(data, 0xdd, sizeof(data));
	check_hmac(key, 20, data, sizeof(data), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");

	for (unsigned i = 0; i < 25; i++) /* test case 4 */
		key[i] = (uint8_t)(i + 1);
	memset(data, 0xcd, sizeof(data));
	check_hmac(key, 25, data, sizeof(data), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");

	memset(key, 0xaa, 131); /* test case 6: a key longer than a block */
	const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
	check_hmac(key, 131, m6, strlen(m6), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

	const char *m7 = "This is a test using a larger than block-size key and a larger than block-size data. "
	                 "The key needs to be hashed before being used by the HMAC algorithm."; /* test case 7 */
	check_hmac(key, 131, m7, strlen(m7), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

int main(void)
{
	test_nist();
	test_rfc4231();
	return check_done();
}
