/* dumpwatch-upload: the upload helper. The daemon starts one for each file
 * of a dump to ship, as a transient uid of its own (never root), and hands
 * it everything as descriptors: it opens no path it could be tricked into
 * opening (libcurl reads the system's CA certificates and resolver
 * configuration, nothing else):
 *
 *   fd 0   the file to upload, open for reading (a regular file; its size
 *          is what is sent)
 *   fd 1   the report: one line when done, "0 BYTES PARTS" or "-ERRNO why"
 *          (-EAGAIN: worth retrying; another: permanent)
 *   fd 3   the credentials, KEY=VALUE lines as a credentials file holds
 *          them, read whole and closed
 *
 *   usage: dumpwatch-upload --endpoint URL --bucket NAME --key KEY
 *            [--region R] [--addressing auto|path|vhost] [--part-size BYTES]
 *            [--content-type TYPE]
 *
 * This is the only program of dumpwatch that links libcurl and libcrypto:
 * TLS and HTTP parsing never run in the daemon, nor as root. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "s3client.h"

#define CREDS_MAX (16 * 1024)

/* The report, then the end. */
static int report(int r, const char *what, uint64_t bytes, unsigned parts)
{
	char line[2048];

	if (r == 0)
		snprintf(line, sizeof(line), "0 %llu %u\n", (unsigned long long)bytes, parts);
	else
		snprintf(line, sizeof(line), "%d %s\n", r, what);
	if (write(1, line, strlen(line)) < 0)
		return 1;
	return r == 0 ? 0 : 1;
}

/* Reads the credentials from fd 3 into c. */
static int read_creds(struct s3_credentials *c, char *err, size_t errlen)
{
	char *buf = malloc(CREDS_MAX);
	size_t len = 0;
	ssize_t n;
	int r;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while (len < CREDS_MAX && (n = read(3, buf + len, CREDS_MAX - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "dumpwatch-upload: reading the credentials (fd 3): %s", strerror(errno));
			free(buf);
			return -EINVAL;
		}
		len += (size_t)n;
	}
	close(3);
	r = s3_credentials_parse(c, buf, len, "the credentials given", err, errlen);
	explicit_bzero(buf, CREDS_MAX);
	free(buf);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"endpoint", required_argument, NULL, 'e'},     {"bucket", required_argument, NULL, 'b'},
	    {"key", required_argument, NULL, 'k'},          {"region", required_argument, NULL, 'r'},
	    {"addressing", required_argument, NULL, 'a'},   {"part-size", required_argument, NULL, 'p'},
	    {"content-type", required_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
	struct s3_credentials creds;
	struct s3_config c = {.creds = &creds};
	struct s3_result res;
	struct stat st;
	const char *key = NULL, *ctype = NULL;
	char err[1024];
	int opt, r;

	memset(&creds, 0, sizeof(creds));
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			c.endpoint = optarg;
			break;
		case 'b':
			c.bucket = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'r':
			c.region = optarg;
			break;
		case 'a':
			c.addressing = strcmp(optarg, "path") == 0    ? S3_ADDRESSING_PATH
			               : strcmp(optarg, "vhost") == 0 ? S3_ADDRESSING_VHOST
			                                              : S3_ADDRESSING_AUTO;
			break;
		case 'p':
			c.part_size = strtoull(optarg, NULL, 10);
			break;
		case 't':
			ctype = optarg;
			break;
		default:
			return report(-EINVAL, "dumpwatch-upload: unknown option (it is started by dumpwatch)", 0, 0);
		}
	}
	if (!c.endpoint || !c.bucket || !key)
		return report(-EINVAL, "dumpwatch-upload: --endpoint, --bucket and --key are needed", 0, 0);
	if ((r = read_creds(&creds, err, sizeof(err))) < 0)
		return report(-EINVAL, err, 0, 0);
	if (fstat(0, &st) < 0 || !S_ISREG(st.st_mode))
		return report(-EIO, "dumpwatch-upload: fd 0 is not the file to upload", 0, 0);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return report(-EAGAIN, "dumpwatch-upload: libcurl did not start", 0, 0);
	r = s3_put_file(&c, 0, (uint64_t)st.st_size, key, ctype, &res, err, sizeof(err));
	s3_credentials_clear(&creds);
	curl_global_cleanup();
	return report(r, err, (uint64_t)st.st_size, r == 0 ? res.parts : 0);
}
