/* dw_s3put: uploads one file to S3-compatible storage with s3.c, as the
 * daemon's upload child will, for the integration tests (test_s3_client).
 *
 * usage: dw_s3put --endpoint URL --bucket B [--region R] [--part-size BYTES]
 *                 [--prefix P] [--path-style | --virtual-hosted]
 *                 [--credentials FILE] [--timeout-ms N] FILE KEY
 * Credentials come from the environment (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or from --credentials FILE. On
 * success it prints "KEY SIZE PARTS ETAG" on stdout and exits 0; on failure it
 * prints the sentence on stderr and exits 75 (EX_TEMPFAIL) when the failure
 * is worth retrying, 1 otherwise. */
#include "dumpwatch/s3.h"
#include "s3client.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr, "usage: dw_s3put --endpoint URL --bucket B [--region R] [--part-size BYTES] [--prefix P]\n"
	                "                [--path-style | --virtual-hosted] [--credentials FILE] [--timeout-ms N]\n"
	                "                FILE KEY\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"endpoint", required_argument, NULL, 'e'},   {"bucket", required_argument, NULL, 'b'},
	    {"region", required_argument, NULL, 'r'},     {"part-size", required_argument, NULL, 'p'},
	    {"prefix", required_argument, NULL, 'x'},     {"path-style", no_argument, NULL, 'P'},
	    {"virtual-hosted", no_argument, NULL, 'V'},   {"credentials", required_argument, NULL, 'c'},
	    {"timeout-ms", required_argument, NULL, 't'}, {NULL, 0, NULL, 0},
	};
	struct s3_config c = {0};
	const char *cred_file = NULL;
	int o;
	char *end;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'e':
			c.endpoint = optarg;
			break;
		case 'b':
			c.bucket = optarg;
			break;
		case 'r':
			c.region = optarg;
			break;
		case 'p':
			errno = 0;
			c.part_size = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg)
				usage();
			break;
		case 'x':
			c.prefix = optarg;
			break;
		case 'P':
			c.addressing = S3_ADDRESSING_PATH;
			break;
		case 'V':
			c.addressing = S3_ADDRESSING_VHOST;
			break;
		case 'c':
			cred_file = optarg;
			break;
		case 't':
			c.request_timeout_ms = c.connect_timeout_ms = strtol(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2 || !c.endpoint || !c.bucket)
		usage();
	const char *file = argv[optind], *key = argv[optind + 1];

	char err[1024];
	struct s3_credentials creds;
	int r = s3_credentials_load(&creds, cred_file, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	c.creds = &creds;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "dw_s3put: %s: not a regular file we can open: %s\n", file, strerror(errno));
		return 1;
	}
	struct s3_result res;
	r = s3_put_file(&c, fd, (uint64_t)st.st_size, key, NULL, &res, err, sizeof(err));
	close(fd);
	s3_credentials_clear(&creds);
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return r == -EAGAIN ? 75 : 1;
	}
	printf("%s %llu %u %s\n", res.key, (unsigned long long)res.size, res.parts, res.etag[0] ? res.etag : "-");
	return 0;
}
