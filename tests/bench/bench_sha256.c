/* SHA-256 throughput: what signing an upload's payload costs (the upload
 * helper hashes every part before sending it, with libcrypto's EVP). ROUNDS rounds over a buffer of MB
 * megabytes held in memory; the first is a warm-up. Prints the best and
 * median in one line.
 *   usage: bench_sha256 [MB] [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 256;
	int rounds = argc > 2 ? atoi(argv[2]) : 6;
	size_t len = mb << 20;
	unsigned char *buf = malloc(len), out[32];
	double t[64];

	if (!buf || rounds < 2 || rounds > 64 || mb == 0) {
		fprintf(stderr, "usage: bench_sha256 [MB] [ROUNDS 2-64]\n");
		return 2;
	}
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 24);
	for (int r = 0; r < rounds; r++) {
		double t0 = now_s();
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		unsigned dl;
		EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
		/* In 1 MiB slices, as a part is read. */
		for (size_t off = 0; off < len; off += 1 << 20)
			EVP_DigestUpdate(ctx, buf + off, 1 << 20);
		EVP_DigestFinal_ex(ctx, out, &dl);
		EVP_MD_CTX_free(ctx);
		t[r] = now_s() - t0;
	}
	qsort(t + 1, (size_t)rounds - 1, sizeof(double), cmp);
	printf("sha256: %zu MiB, best %.0f MB/s, median %.0f MB/s (%d rounds after a warm-up; digest %02x%02x..)\n", mb,
	       (double)len / 1e6 / t[1], (double)len / 1e6 / t[1 + (rounds - 1) / 2], rounds - 1, out[0], out[1]);
	free(buf);
	return 0;
}
