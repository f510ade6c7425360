/* Unit tests of `dumpwatch status`: the text and JSON views of the sample
 * document (tests/data/status-sample.json), escaping of hostile names,
 * partial, mistyped and malformed documents; and the status socket end to
 * end - a control server on its own loop in a thread answering status_query -
 * with the client's errors (no socket, stale socket, no answer, too large,
 * permission), the server's refusals and its limit of 8 clients that never
 * read. Tests that need another uid run only as root (setuid in a child).
 *
 * No case depends on how fast the machine is (memcheck runs these under
 * valgrind, on machines busy with other work): a client that expects an answer
 * or a refusal asks with no deadline (NO_DEADLINE), a wait for the server is a
 * wait for what it does (a semaphore), and a helper process lives as long as
 * its parent (PR_SET_PDEATHSIG), not for a number of seconds. Only the mute
 * server's case exercises the client's deadline, which can only expire. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/control.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/status.h"

/* status_query's timeout for a case that waits for the answer, not for time. */
#define NO_DEADLINE (-1)

#define NOBODY 65534

static const char sample_text[] =
    "guard pid 1234  up 12.5s  rules /etc/dumpwatch/rules.d (3 in force)  dumps 2 taken, 0 failed, 1 skipped in "
    "/var/lib/dumpwatch/dumps\n"
    "4807  OrderService  attached 30.2s  .NET 10.0.12  user svc  dumps 1\n"
    "  rule loh-spike (/etc/dumpwatch/rules.d/a.json): pending  fires 1/3 in 1h\n"
    "    loh-size > 300MiB for 5s: now 117.7MiB, holding 2.1s of 5s\n"
    "  rule slow-gc (/etc/dumpwatch/rules.d/b.json): cooldown  fires 2 in 10m (5 in all)  cooldown 4m10s left\n"
    "    gc-pause > 200ms: now 350ms, not holding\n"
    "    gen2-size > 1GB: now 1.5GB, holding\n"
    "    cpu-usage > 90%: no value yet, not holding\n"
    "5120  Batch  retrying in 4s  .NET 8.0.20  user 1001  dumps 0\n"
    "  error: the diagnostics socket refused the connection\n"
    "6001  dotnet  idle (no rule matches)  .NET 9.0.1  user root  dumps 0\n";

static char *read_sample(size_t *ret_len)
{
	FILE *f = fopen(DW_TEST_DATA "/status-sample.json", "rb");
	char *buf = NULL;
	size_t cap = 0;

	*ret_len = 0;
	if (!f)
		return NULL;
	if (getdelim(&buf, &cap, '\0', f) < 0) {
		free(buf);
		buf = NULL;
	} else {
		*ret_len = strlen(buf);
	}
	fclose(f);
	return buf;
}

/* status_print of text[0..len) into a string; *ret gets its result. */
static char *render_len(const char *text, size_t len, int json, int *ret, char *err, size_t errlen)
{
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	err[0] = '\0';
	*ret = status_print(text, len, json, f, err, errlen);
	fclose(f);
	return out;
}

static char *render(const char *text, int json, int *ret)
{
	char err[512];
	return render_len(text, strlen(text), json, ret, err, sizeof(err));
}

static int contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static void test_sample_views(void)
{
	size_t len;
	char *doc = read_sample(&len), *out;
	struct json_object *a, *b;
	int r;

	CHECK(doc != NULL);
	if (!doc)
		return;
	out = render(doc, 0, &r);
	CHECK(r == 0);
	CHECK_STR(out, sample_text);
	free(out);

	out = render(doc, 1, &r);
	CHECK(r == 0);
	a = json_tokener_parse(doc);
	b = json_tokener_parse(out);
	CHECK(a && b && json_object_equal(a, b));
	CHECK(contains(out, "\n  \"pid\": 1234,\n"));       /* pretty */
	CHECK(contains(out, "\"/etc/dumpwatch/rules.d\"")); /* slashes not escaped */
	CHECK(contains(out, "123456789.0"));                /* numbers as sent */
	json_object_put(a);
	json_object_put(b);
	free(out);
	free(doc);
}

static void test_hostile_strings(void)
{
	/* ESC, newline, C1 CSI (U+009B), right-to-left override (U+202E), an
	 * invalid byte, and a NUL inside the name. */
	static const char doc[] = "{\"processes\":[{\"pid\":7,\"process\":\"Evil\\u001b[31mName\\nX\\u009b2J\\u202eY"
	                          "\xff"
	                          "Z\\u0000W\",\"state\":\"attached\\u001b\",\"error\":\"boom\\r\\n\\u0007\","
	                          "\"rules\":[{\"name\":\"r\\u001b\",\"file\":\"/f\\n\",\"conditions\":[{\"text\":"
	                          "\"t\\u001b]0;x\\u0007\",\"value\":1,\"unit\":\"w\\u001bidgets\"}]}]}]}";
	char *out, *p;
	int r, lines = 0;
	struct json_object *j, *procs, *name;

	out = render(doc, 0, &r);
	CHECK(r == 0);
	CHECK(out && !strchr(out, 0x1b) && !strchr(out, 0x07) && !strchr(out, '\r'));
	CHECK(contains(out, "7  Evil\\x1b[31mName\\nX\\u009b2J\\u202eY\\xffZ\\x00W  attached\\x1b\n"));
	CHECK(contains(out, "  error: boom\\r\\n\\x07\n"));
	CHECK(contains(out, "  rule r\\x1b (/f\\n)\n"));
	CHECK(contains(out, "    t\\x1b]0;x\\x07: now 1 w\\x1bidgets\n"));
	for (p = out; p && *p; p++)
		lines += *p == '\n';
	CHECK(lines == 5); /* header, process, error, rule, condition */
	free(out);

	out = render_len(doc, sizeof(doc) - 1, 1, &r, (char[256]){0}, 256);
	CHECK(r == 0);
	CHECK(out && !strchr(out, 0x1b) && !strchr(out, 0x07));
	CHECK(contains(out, "Evil\\u001b[31mName\\nX\\u009b2J\\u202eY\\ufffdZ\\u0000W"));
	CHECK(out && !strstr(out, "\xc2\x9b") && !strstr(out, "\xe2\x80\xae") && !strchr(out, '\xff'));
	/* Still JSON, and the same name but for the invalid byte. */
	j = json_tokener_parse(out);
	CHECK(j != NULL);
	if (j && json_object_object_get_ex(j, "processes", &procs) &&
	    json_object_object_get_ex(json_object_array_get_idx(procs, 0), "process", &name)) {
		static const char want[] = "Evil\x1b[31mName\nX\xc2\x9b"
		                           "2J\xe2\x80\xaeY\xef\xbf\xbdZ\0W";
		CHECK(json_object_get_string_len(name) == (int)sizeof(want) - 1 &&
		      memcmp(json_object_get_string(name), want, sizeof(want) - 1) == 0);
	} else {
		CHECK(!"no processes[0].process in the JSON view");
	}
	json_object_put(j);
	free(out);
}

static void test_partial_documents(void)
{
	char *out;
	int r;

	out = render("{}", 0, &r);
	CHECK(r == 0);
	CHECK_STR(out, "guard\n");
	free(out);

	out = render("{\"pid\":1,\"processes\":[]}", 0, &r);
	CHECK(r == 0);
	CHECK_STR(out, "guard pid 1\nno .NET processes\n");
	free(out);

	/* Wrong types everywhere: left out, not read as 0, no crash. */
	out = render("{\"pid\":\"1234\",\"uptime_s\":\"12\",\"rules_dir\":5,\"rules_in_force\":2,\"dumps_taken\":true,"
	             "\"dumps_failed\":1.5,\"dump_dir\":null,\"extra\":{\"a\":[1,2]},"
	             "\"processes\":[1,null,\"x\",[],{\"pid\":1e300,\"process\":7,\"state\":[],\"dumps\":\"2\","
	             "\"attached_s\":\"3\",\"rules\":{\"a\":1}},{\"rules\":[null,3,{\"conditions\":[7,null,{},"
	             "{\"text\":\"a > 1\",\"value\":\"5\",\"holding\":1}],\"fires\":\"3\",\"max_dumps\":2}]}]}",
	             0, &r);
	CHECK(r == 0);
	CHECK_STR(out, "guard  2 rules in force\n"
	               "?  ?\n?  ?\n?  ?\n?  ?\n?  ?\n?  ?\n"
	               "  rule ?\n  rule ?\n  rule ?\n    ?: no value yet\n    ?: no value yet\n    ?: no value yet\n"
	               "    a > 1: no value yet\n");
	free(out);

	out = render("{\"processes\":{\"pid\":1}}", 0, &r);
	CHECK(r == 0);
	CHECK_STR(out, "guard\n");
	free(out);

	/* Numbers json-c reads but that are not finite are absent. */
	out = render("{\"uptime_s\":1e400,\"pid\":-1e400}", 0, &r);
	CHECK(r == 0);
	CHECK_STR(out, "guard\n");
	free(out);
}

static void test_formatting(void)
{
	char *out;
	int r;

	out = render("{\"processes\":[{\"pid\":1,\"state\":\"dumping\",\"attached_s\":7200.4,\"retry_in_s\":0.5,"
	             "\"rules\":[{\"name\":\"n\",\"state\":\"limit\",\"fires\":3,\"fires_in_window\":3,\"max_dumps\":3,"
	             "\"window_s\":0,\"cooldown_left_s\":90061,\"conditions\":["
	             "{\"text\":\"alloc-rate > 50MB/s\",\"value\":50000000,\"unit\":\"bytes/s\",\"holding\":true,"
	             "\"held_s\":75,\"for_s\":120},"
	             "{\"text\":\"alloc-rate > 8MiB/s\",\"value\":9437184,\"unit\":\"bytes/s\"},"
	             "{\"text\":\"loh-size > 1kib\",\"value\":1000,\"unit\":\"bytes\"},"
	             "{\"text\":\"cpu > 90%\",\"value\":91.25,\"unit\":\"percent\"},"
	             "{\"text\":\"cpu > 90%\",\"value\":91.5,\"unit\":\"%\"},"
	             "{\"text\":\"gen0-count > 10/min\",\"value\":0.5,\"unit\":\"1/s\"},"
	             "{\"text\":\"x > 2\",\"value\":2.5,\"unit\":\"\",\"holding\":true,\"held_s\":1,\"for_s\":0},"
	             "{\"text\":\"g > 1\",\"value\":12,\"unit\":\"gadgets\"}]}]}]}",
	             0, &r);
	CHECK(r == 0);
	CHECK_STR(out, "guard\n"
	               "1  ?  dumping (attached 2h) (retry in 500ms)\n"
	               "  rule n: limit  fires 3/3  cooldown 1d1h left\n"
	               "    alloc-rate > 50MB/s: now 50.0MB/s, holding 1m15s of 2m\n"
	               "    alloc-rate > 8MiB/s: now 9.0MiB/s\n"
	               "    loh-size > 1kib: now 1000B\n"
	               "    cpu > 90%: now 91.2%\n"
	               "    cpu > 90%: now 91.5%\n"
	               "    gen0-count > 10/min: now 30/min\n"
	               "    x > 2: now 2.5, holding\n"
	               "    g > 1: now 12 gadgets\n");
	free(out);
}

static void test_malformed(void)
{
	static const char *const bad[] = {"{\"pid\": 12,", "", "[1,2]", "{} x", "{}{}", "nul", "\"s\"", "{\"a\":1}\0x"};
	char err[512], *out;
	int r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = i == 7 ? 9 : strlen(bad[i]);
		out = render_len(bad[i], len, i % 2, &r, err, sizeof(err));
		CHECK_MSG(r == -EBADMSG, "%zu: %d", i, r);
		CHECK_MSG(out && out[0] == '\0', "%zu: printed \"%s\"", i, out ? out : "(null)");
		CHECK_MSG(contains(err, "the guard's answer is not") && !strchr(err, '\n'), "%zu: %s", i, err);
		free(out);
	}
	out = render_len("{\"pid\": 12,", 11, 0, &r, err, sizeof(err));
	CHECK_STR(err, "the guard's answer is not valid JSON (at byte 11 of 11: it ends too early)");
	free(out);
	out = render_len("[1]", 3, 0, &r, err, sizeof(err));
	CHECK_STR(err, "the guard's answer is not a JSON object");
	free(out);
	/* Trailing white space is fine. */
	out = render_len("{}\n \t", 5, 0, &r, err, sizeof(err));
	CHECK(r == 0);
	free(out);
}

/* --- a control server on its own loop, in a thread --- */

struct server {
	struct loop *l;
	struct control *c;
	pthread_t th;
	int stop[2];
	const char *doc; /* what build answers; NULL: build fails */
	atomic_int builds;
	sem_t built; /* posted by each build */
	char dir[64], path[100];
};

static char *build_doc(void *ctx)
{
	struct server *s = ctx;

	atomic_fetch_add(&s->builds, 1);
	sem_post(&s->built);
	return s->doc ? strdup(s->doc) : NULL;
}

static void on_stop(struct loop *l, int fd, uint32_t events, void *ctx)
{
	char b;

	(void)events;
	(void)ctx;
	if (read(fd, &b, 1) > 0)
		loop_stop(l);
}

static void *server_main(void *arg)
{
	struct server *s = arg;

	loop_run(s->l);
	return NULL;
}

static int server_open(struct server *s, const char *doc)
{
	char err[512];
	int r;

	memset(s, 0, sizeof(*s));
	s->doc = doc;
	sem_init(&s->built, 0, 0);
	s->stop[0] = s->stop[1] = -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/dw-status-XXXXXX");
	if (!mkdtemp(s->dir))
		return -errno;
	snprintf(s->path, sizeof(s->path), "%s/status.sock", s->dir);
	s->l = loop_new();
	if (!s->l)
		return -ENOMEM;
	r = control_open(s->l, s->path, build_doc, s, &s->c, err, sizeof(err));
	CHECK_MSG(r == 0, "control_open: %s", err);
	return r;
}

static void server_start(struct server *s)
{
	CHECK(pipe2(s->stop, O_CLOEXEC) == 0);
	CHECK(loop_add(s->l, s->stop[0], EPOLLIN, on_stop, s) == 0);
	CHECK(pthread_create(&s->th, NULL, server_main, s) == 0);
}

static void server_stop(struct server *s)
{
	CHECK(write(s->stop[1], "x", 1) == 1);
	pthread_join(s->th, NULL);
	loop_del(s->l, s->stop[0]);
	close(s->stop[0]);
	close(s->stop[1]);
}

static void server_close(struct server *s)
{
	control_free(s->c);
	loop_free(s->l);
	rmdir(s->dir);
	sem_destroy(&s->built);
}

/* status_run without its deadline: status_query, then status_print. */
static char *run_status(const char *path, int json, int *ret, char *err, size_t errlen)
{
	char *out = NULL, *text = NULL;
	size_t outlen = 0, len = 0;
	FILE *f = open_memstream(&out, &outlen);

	err[0] = '\0';
	*ret = status_query(path, NO_DEADLINE, &text, &len, err, errlen);
	if (*ret == 0)
		*ret = status_print(text, len, json, f, err, errlen);
	free(text);
	fclose(f);
	return out;
}

static void test_end_to_end(void)
{
	struct server s;
	struct stat st;
	size_t len;
	char *doc = read_sample(&len), *out, err[512];
	int r;

	if (!doc || server_open(&s, doc) < 0) {
		CHECK(!"no server");
		free(doc);
		return;
	}
	CHECK(lstat(s.path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);
	server_start(&s);
	out = run_status(s.path, 0, &r, err, sizeof(err));
	CHECK_MSG(r == 0, "%s", err);
	CHECK_STR(out, sample_text);
	free(out);
	out = run_status(s.path, 1, &r, err, sizeof(err));
	CHECK_MSG(r == 0, "%s", err);
	CHECK(contains(out, "\"process\": \"OrderService\""));
	free(out);

	/* A second guard on the same socket is refused; the first keeps it. */
	{
		struct loop *l2 = loop_new();
		struct control *c2 = NULL;
		r = control_open(l2, s.path, build_doc, &s, &c2, err, sizeof(err));
		CHECK(r == -EADDRINUSE && c2 == NULL);
		CHECK_MSG(contains(err, "another dumpwatch guard already answers on"), "%s", err);
		loop_free(l2);
		CHECK(lstat(s.path, &st) == 0 && S_ISSOCK(st.st_mode));
	}
	server_stop(&s);
	{
		struct control_stats cs;
		control_get_stats(s.c, &cs);
		/* The second guard's probe was a connection too, answered or not. */
		CHECK(cs.served >= 2 && cs.served + cs.dropped == 3 && cs.clients == 0 && cs.refused == 0);
	}
	server_close(&s);
	CHECK(lstat(s.path, &st) < 0 && errno == ENOENT); /* control_free removed it */
	free(doc);
}

static void test_bad_answers(void)
{
	struct server s;
	char *out, err[512], *big;
	int r;
	struct control_stats cs;

	if (server_open(&s, "{\"pid\": 12,") < 0)
		return;
	server_start(&s);
	out = run_status(s.path, 0, &r, err, sizeof(err));
	CHECK(r == -EBADMSG && out && out[0] == '\0');
	CHECK_MSG(contains(err, "not valid JSON"), "%s", err);
	free(out);
	server_stop(&s);
	server_close(&s);

	/* build fails: closed without an answer. */
	if (server_open(&s, NULL) < 0)
		return;
	server_start(&s);
	out = run_status(s.path, 0, &r, err, sizeof(err));
	CHECK(r == -ENODATA);
	CHECK_MSG(contains(err, "it closed the connection without an answer"), "%s", err);
	free(out);
	server_stop(&s);
	control_get_stats(s.c, &cs);
	CHECK(cs.dropped == 1 && cs.served == 0);
	server_close(&s);

	/* A document over the server's bound is not sent. */
	big = malloc(CONTROL_MAX_ANSWER + 2);
	memset(big, ' ', CONTROL_MAX_ANSWER + 1);
	big[0] = '{';
	big[CONTROL_MAX_ANSWER] = '}';
	big[CONTROL_MAX_ANSWER + 1] = '\0';
	if (server_open(&s, big) == 0) {
		server_start(&s);
		out = run_status(s.path, 0, &r, err, sizeof(err));
		CHECK(r == -ENODATA);
		free(out);
		server_stop(&s);
		server_close(&s);
	}
	/* One byte less is sent whole. */
	big[CONTROL_MAX_ANSWER - 1] = '}';
	big[CONTROL_MAX_ANSWER] = '\0';
	if (server_open(&s, big) == 0) {
		server_start(&s);
		out = run_status(s.path, 0, &r, err, sizeof(err));
		CHECK_MSG(r == 0, "%s", err);
		CHECK_STR(out, "guard\n");
		free(out);
		server_stop(&s);
		server_close(&s);
	}
	free(big);
}

/* A client that sends something (`echo status | socat - UNIX:...`) still
 * gets the whole answer and a clean EOF: what it sent is drained, or the
 * close would turn its EOF into ECONNRESET. */
static void test_client_that_talks(void)
{
	struct server s;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[256];
	size_t got = 0;
	ssize_t n;
	int fd;

	if (server_open(&s, "{\"pid\":5}") < 0)
		return;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s.path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(send(fd, "status\n", 7, 0) == 7); /* before the server accepts */
	server_start(&s);
	while ((n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
		got += (size_t)n;
	CHECK_MSG(n == 0, "recv: %s", n < 0 ? strerror(errno) : "");
	buf[got] = '\0';
	CHECK_STR(buf, "{\"pid\":5}");
	close(fd);
	server_stop(&s);
	server_close(&s);
}

/* A listening unix socket at path, which nobody accepts on. */
static int raw_listener(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void test_client_errors(void)
{
	char dir[] = "/tmp/dw-status-XXXXXX", path[128], want[256], err[512], *out, *text;
	size_t len;
	int r, fd;

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/nope.sock", dir);
	out = run_status(path, 0, &r, err, sizeof(err));
	CHECK(r == -ENOENT && out && out[0] == '\0');
	snprintf(want, sizeof(want), "no guard is running (%s does not exist)", path);
	CHECK_STR(err, want);
	free(out);

	/* A socket left by a guard that died. */
	snprintf(path, sizeof(path), "%s/stale.sock", dir);
	fd = raw_listener(path);
	CHECK(fd >= 0);
	close(fd);
	out = run_status(path, 0, &r, err, sizeof(err));
	CHECK(r == -ECONNREFUSED);
	CHECK_MSG(contains(err, "connection refused (the guard is not running"), "%s", err);
	free(out);
	/* ... which control_open replaces. */
	{
		struct loop *l = loop_new();
		struct control *c = NULL;
		struct stat st1, st2;
		CHECK(stat(path, &st1) == 0);
		r = control_open(l, path, build_doc, NULL, &c, err, sizeof(err));
		CHECK_MSG(r == 0, "%s", err);
		/* (The inode number may be reused; the mode tells them apart.) */
		CHECK((st1.st_mode & 0777) != 0600);
		CHECK(stat(path, &st2) == 0 && S_ISSOCK(st2.st_mode) && (st2.st_mode & 0777) == 0600);
		/* control_free leaves alone what is no longer its socket. */
		CHECK(unlink(path) == 0);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		CHECK(fd >= 0);
		close(fd);
		control_free(c);
		CHECK(stat(path, &st2) == 0 && S_ISREG(st2.st_mode));
		unlink(path);
		loop_free(l);
	}

	/* Connected, but no answer in time. */
	snprintf(path, sizeof(path), "%s/mute.sock", dir);
	fd = raw_listener(path);
	CHECK(fd >= 0);
	r = status_query(path, 200, &text, &len, err, sizeof(err));
	CHECK(r == -ETIMEDOUT && text == NULL);
	snprintf(want, sizeof(want), "no guard answered on %s: no complete answer within 200ms", path);
	CHECK_STR(err, want);
	close(fd);
	unlink(path);

	/* Not a socket at all. */
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	close(fd);
	r = status_query(path, 200, &text, &len, err, sizeof(err));
	CHECK(r == -ECONNREFUSED);
	unlink(path);

	/* A path longer than sun_path is reached through its directory. */
	{
		char longdir[200], lpath[300];
		struct server s;
		if (server_open(&s, "{\"pid\":9}") == 0) {
			server_start(&s);
			snprintf(
			    longdir, sizeof(longdir), "%s/%s", s.dir,
			    "a-rather-long-directory-name-to-go-well-past-the-108-bytes-of-sun-path-of-a-unix-socket");
			CHECK(symlink(s.dir, longdir) == 0); /* the client may follow links */
			snprintf(lpath, sizeof(lpath), "%s/status.sock", longdir);
			CHECK(strlen(lpath) >= sizeof(((struct sockaddr_un *)0)->sun_path));
			r = status_query(lpath, NO_DEADLINE, &text, &len, err, sizeof(err));
			CHECK_MSG(r == 0 && text && strcmp(text, "{\"pid\":9}") == 0, "%d %s", r, err);
			free(text);
			unlink(longdir);
			server_stop(&s);
			server_close(&s);
		}
	}
	rmdir(dir);
}

/* A server that writes more than the client's bound, until the client
 * closes the connection; however long reading 64 MiB takes. */
static void test_too_large(void)
{
	char dir[] = "/tmp/dw-status-XXXXXX", path[128], err[512], *text = NULL;
	size_t len;
	pid_t child, parent;
	int fd, r, status;

	if (!mkdtemp(dir))
		return;
	snprintf(path, sizeof(path), "%s/big.sock", dir);
	fd = raw_listener(path);
	CHECK(fd >= 0);
	parent = getpid();
	child = fork();
	if (child == 0) {
		static char chunk[65536];
		int c;
		/* Ends when the client closes, or with the test. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		c = accept(fd, NULL, NULL);
		memset(chunk, ' ', sizeof(chunk));
		while (c >= 0 && send(c, chunk, sizeof(chunk), MSG_NOSIGNAL) > 0)
			;
		_exit(0);
	}
	close(fd);
	r = status_query(path, NO_DEADLINE, &text, &len, err, sizeof(err));
	CHECK(r == -EFBIG && text == NULL);
	CHECK_MSG(contains(err, "larger than 64 MiB"), "%s", err);
	waitpid(child, &status, 0);
	unlink(path);
	rmdir(dir);
}

/* Nine clients that never read: the server keeps eight answers, the oldest
 * one's connection is closed. */
static void test_client_limit(void)
{
	enum { N = CONTROL_MAX_CLIENTS + 1 };
	const size_t doc_len = 4u << 20; /* a socket buffer holds 208 KiB (net.core.wmem_default here) */
	struct server s;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct control_stats cs;
	char *doc = malloc(doc_len + 1), buf[65536];
	int fds[N];
	size_t got = 0;
	int eof = 0;

	memset(doc, ' ', doc_len);
	doc[0] = '{';
	doc[doc_len - 1] = '}';
	doc[doc_len] = '\0';
	if (server_open(&s, doc) < 0) {
		free(doc);
		return;
	}
	server_start(&s);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s.path);
	for (int i = 0; i < N; i++) {
		fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) == 0);
		/* One at a time, so accept order is connect order: the server
		 * builds an answer for each connection it accepts. */
		while (sem_wait(&s.built) < 0 && errno == EINTR)
			;
	}
	CHECK(atomic_load(&s.builds) == N);
	server_stop(&s);
	control_get_stats(s.c, &cs);
	CHECK_MSG(cs.clients == CONTROL_MAX_CLIENTS, "%zu clients", cs.clients);
	CHECK(cs.dropped == 1 && cs.served == 0);

	/* The first one was closed: part of its answer, then EOF. */
	for (;;) {
		ssize_t n = recv(fds[0], buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		eof = n == 0;
		break;
	}
	CHECK(eof && got > 0 && got < doc_len);
	/* The others are still open: data, then nothing yet. */
	for (int i = 1; i < N; i++) {
		ssize_t n;
		got = 0;
		while ((n = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			got += (size_t)n;
		CHECK_MSG(n < 0 && errno == EAGAIN && got > 0 && got < doc_len, "client %d: %zd after %zu", i, n, got);
	}
	/* control_free closes them. */
	server_close(&s);
	for (int i = 1; i < N; i++) {
		ssize_t n;
		while ((n = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			;
		CHECK(n == 0);
	}
	for (int i = 0; i < N; i++)
		close(fds[i]);
	free(doc);
}

static void test_unsafe_places(void)
{
	char dir[] = "/tmp/dw-status-XXXXXX", path[160], link[160], err[512];
	struct loop *l = loop_new();
	struct control *c = NULL;
	struct stat st;
	int r, fd;

	if (!mkdtemp(dir))
		return;
	/* Something that is not a socket is left alone. */
	snprintf(path, sizeof(path), "%s/status.sock", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	close(fd);
	r = control_open(l, path, build_doc, NULL, &c, err, sizeof(err));
	CHECK(r == -EEXIST && c == NULL);
	CHECK_MSG(contains(err, "exists and is not a socket"), "%s", err);
	CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
	unlink(path);

	/* The directory through a symbolic link. */
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(path, sizeof(path), "%s/link/status.sock", dir);
	CHECK(symlink(dir, link) == 0);
	r = control_open(l, path, build_doc, NULL, &c, err, sizeof(err));
	CHECK(r < 0 && c == NULL);
	CHECK_MSG(contains(err, "a symbolic link is not followed"), "%s", err);
	CHECK(lstat(path, &st) < 0);
	unlink(link);

	/* A directory other users may write to. */
	snprintf(path, sizeof(path), "%s/status.sock", dir);
	CHECK(chmod(dir, 0777) == 0);
	r = control_open(l, path, build_doc, NULL, &c, err, sizeof(err));
	CHECK(r == -EPERM && c == NULL);
	CHECK_MSG(contains(err, "is writable by other users (mode 0777)"), "%s", err);
	CHECK(chmod(dir, 0700) == 0);

	/* No file name, no directory. */
	r = control_open(l, "/tmp/", build_doc, NULL, &c, err, sizeof(err));
	CHECK(r == -EINVAL);
	snprintf(path, sizeof(path), "%s/none/status.sock", dir);
	r = control_open(l, path, build_doc, NULL, &c, err, sizeof(err));
	CHECK(r == -ENOENT);
	control_free(NULL);
	loop_free(l);
	rmdir(dir);
}

/* Runs status_query(path) in a child as the user nobody; its err text comes
 * back in err. Returns its result, or 1 when the child could not switch. */
static int as_nobody(const char *path, char *err, size_t errlen)
{
	int p[2], status;
	pid_t child;
	ssize_t n;

	if (pipe(p) < 0)
		return 1;
	child = fork();
	if (child == 0) {
		char e[512] = "";
		char *text = NULL;
		size_t len;
		int r;
		close(p[0]);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(1);
		r = status_query(path, NO_DEADLINE, &text, &len, e, sizeof(e));
		if (write(p[1], e, strlen(e)) < 0)
			_exit(2);
		_exit(r < 0 ? -r : 0);
	}
	close(p[1]);
	n = read(p[0], err, errlen - 1);
	err[n > 0 ? n : 0] = '\0';
	close(p[0]);
	waitpid(child, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 1)
		return 1;
	return -WEXITSTATUS(status);
}

static void test_permissions(void)
{
	struct server s;
	struct control_stats cs;
	char err[512], *text = NULL;
	size_t len;
	int r;

	if (server_open(&s, "{}") < 0)
		return;
	server_start(&s);
	if (geteuid() != 0) {
		/* The socket 0600 is ours; take our own permission away. */
		CHECK(chmod(s.path, 0) == 0);
		r = status_query(s.path, NO_DEADLINE, &text, &len, err, sizeof(err));
		CHECK(r == -EACCES);
		CHECK_MSG(contains(err, "permission denied: run as root"), "%s", err);
		printf("skipped: refusals by uid (not root)\n");
		server_stop(&s);
		server_close(&s);
		return;
	}
	/* Another user cannot reach the socket (0700 directory, 0600 socket). */
	r = as_nobody(s.path, err, sizeof(err));
	if (r == 1) {
		printf("skipped: cannot switch to uid %d\n", NOBODY);
		server_stop(&s);
		server_close(&s);
		return;
	}
	CHECK_MSG(r == -EACCES, "%d %s", r, err);
	CHECK_MSG(contains(err, "permission denied: run as root"), "%s", err);

	/* With the doors opened, the server itself says no (SO_PEERCRED). */
	CHECK(chmod(s.dir, 0711) == 0 && chmod(s.path, 0666) == 0);
	r = as_nobody(s.path, err, sizeof(err));
	CHECK_MSG(r == -ENODATA, "%d %s", r, err);
	CHECK_MSG(contains(err, "without an answer"), "%s", err);
	r = as_nobody(s.path, err, sizeof(err));
	CHECK(r == -ENODATA);
	server_stop(&s);
	control_get_stats(s.c, &cs);
	CHECK(cs.refused == 2 && cs.served == 0);
	CHECK(atomic_load(&s.builds) == 0); /* nothing built for them */
	server_close(&s);
}

/* The client believes only root or itself: a socket served by nobody. */
static void test_untrusted_server(void)
{
	char dir[] = "/tmp/dw-status-XXXXXX", path[128], err[512], *text = NULL;
	size_t len;
	int p[2], r, status;
	pid_t child;
	char ok = 0;

	if (geteuid() != 0) {
		printf("skipped: untrusted server (not root)\n");
		return;
	}
	if (!mkdtemp(dir) || chown(dir, NOBODY, NOBODY) < 0 || pipe(p) < 0)
		return;
	snprintf(path, sizeof(path), "%s/status.sock", dir);
	child = fork();
	if (child == 0) {
		int fd, c;
		close(p[0]);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(1);
		umask(0);
		fd = raw_listener(path);
		if (fd < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || write(p[1], "y", 1) != 1)
			_exit(1);
		c = accept(fd, NULL, NULL);
		if (c >= 0 && write(c, "{}", 2) != 2)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &ok, 1) != 1 || ok != 'y') {
		printf("skipped: cannot switch to uid %d\n", NOBODY);
	} else {
		r = status_query(path, NO_DEADLINE, &text, &len, err, sizeof(err));
		CHECK(r == -EPERM && text == NULL);
		CHECK_MSG(contains(err, "is served by uid 65534, neither root nor us: not trusting its answer"), "%s",
		          err);
	}
	close(p[0]);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_sample_views();
	test_hostile_strings();
	test_partial_documents();
	test_formatting();
	test_malformed();
	test_end_to_end();
	test_bad_answers();
	test_client_that_talks();
	test_client_errors();
	test_too_large();
	test_client_limit();
	test_unsafe_places();
	test_permissions();
	test_untrusted_server();
	return check_done();
}
