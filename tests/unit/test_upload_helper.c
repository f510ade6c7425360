/* Unit tests of the upload helper's protocol (src/helpers/upload/main.c): the
 * real dumpwatch-upload run as the guard runs it, the file on fd 0, the
 * report read from fd 1, the credentials written to fd 3, with no server
 * listening: what it says, in one line, for missing arguments, malformed
 * credentials, a descriptor that is not a file, and a server that is not
 * there (retryable). The uploads themselves are tested against s3rver and a
 * hostile server (tests/integration/test_upload*.sh, test_s3_*.sh). */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef DW_UPLOAD_HELPER
#error "DW_UPLOAD_HELPER: the path of dumpwatch-upload"
#endif

/* Runs the helper with argv (NULL-terminated, the program first), file_fd
 * on fd 0 and creds on fd 3; its report into out. Returns its exit status. */
static int run(const char *const *argv, int file_fd, const char *creds, char *out, size_t outlen)
{
	int rep[2], cr[2], status = -1;

	if (pipe(rep) < 0 || pipe(cr) < 0)
		return -1;
	if (write(cr[1], creds, strlen(creds)) < 0)
		return -1;
	close(cr[1]);
	pid_t pid = fork();
	if (pid == 0) {
		int a = fcntl(file_fd, F_DUPFD, 10), b = fcntl(rep[1], F_DUPFD, 10), c = fcntl(cr[0], F_DUPFD, 10);
		dup2(a, 0);
		dup2(b, 1);
		dup2(c, 3);
		for (int fd = 4; fd < 64; fd++)
			close(fd);
		char *env[] = {"LANG=C.UTF-8", NULL};
		execve(DW_UPLOAD_HELPER, (char *const *)argv, env);
		_exit(127);
	}
	close(rep[1]);
	close(cr[0]);
	size_t len = 0;
	ssize_t n;
	while (len + 1 < outlen && (n = read(rep[0], out + len, outlen - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(rep[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A loopback port nothing listens on (bound, then let go). */
static int closed_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return 9;
	close(fd);
	return ntohs(a.sin_port);
}

int main(void)
{
	char file[] = "/tmp/dw-test-upload-XXXXXX", out[4096], ep[64];
	const char *creds = "AWS_ACCESS_KEY_ID=AKID\nAWS_SECRET_ACCESS_KEY=secret\n";
	int fd = mkstemp(file);

	CHECK(fd >= 0);
	CHECK(write(fd, "core bytes", 10) == 10);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", closed_port());

	/* No key: refused, one line, status 1. */
	const char *no_key[] = {"dumpwatch-upload", "--endpoint", ep, "--bucket", "b", NULL};
	CHECK(run(no_key, fd, creds, out, sizeof(out)) == 1);
	CHECK(strncmp(out, "-22 ", 4) == 0 && strstr(out, "--key") && strchr(out, '\n') == out + strlen(out) - 1);

	/* Credentials without a secret: refused before anything is sent. */
	const char *full[] = {"dumpwatch-upload", "--endpoint", ep, "--bucket", "b", "--key", "k.core", NULL};
	CHECK(run(full, fd, "AWS_ACCESS_KEY_ID=AKID\n", out, sizeof(out)) == 1);
	CHECK(strncmp(out, "-22 ", 4) == 0 && strstr(out, "has no AWS_SECRET_ACCESS_KEY"));

	/* fd 0 not a regular file. */
	int p[2];
	CHECK(pipe(p) == 0);
	CHECK(run(full, p[0], creds, out, sizeof(out)) == 1);
	CHECK(strncmp(out, "-5 ", 3) == 0 && strstr(out, "not the file"));
	close(p[0]);
	close(p[1]);

	/* No server: worth retrying, and the secret is in no word of it. */
	CHECK(run(full, fd, creds, out, sizeof(out)) == 1);
	CHECK(strncmp(out, "-11 ", 4) == 0 && strstr(out, "(retry later)"));
	CHECK(strstr(out, "secret") == NULL);

	close(fd);
	unlink(file);
	return check_done();
}
