/* Unit tests of the diagnostics IPC client's transport (ipc.c): replies read
 * over a socketpair (whole, dribbling, cut off, too slow), and the requests
 * with their version fallbacks against a fake runtime (a forked process on a
 * unix socket in a temporary directory; no .NET needed). The messages'
 * bytes are test_wire's. */
#include "dumpwatch/ipc.h"

#include "check.h"
#include "wirebytes.h"

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

static struct bytes want, pay;
static struct ipc_reply reply;

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
	b_process_info(&pay, 2, 0);
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
		reply_ok_u64(&script[1].reply, 0);
		srv = fake_runtime(path, 2, &log);
		CHECK(ipc_stop_tracing(&ep, 9, 2000, err, sizeof(err)) == 0);
		/* and by the blocking connect of a dump request */
		CHECK(ipc_dump_send(&ep, 3, "/x/y.dmp", DUMP_FULL, 0, &fd, err, sizeof(err)) == 0);
		CHECK(fd >= 0 && ipc_read_reply(fd, 2000, &reply) == 0 && reply.id == 0x00);
		if (fd >= 0)
			close(fd);
		CHECK(fake_done(srv, log, ids, 8) == 2 && ids[1] == 0x0103);
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
	/* SIGPIPE stays fatal: the library must never raise it (MSG_NOSIGNAL). */
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
