/* The per-process pipeline (target.c) driven by fake peers on unix sockets:
 * a forked child per peer plays one behaviour on every connection (answer,
 * answer late, never answer, close at once, start a stream and end it). The
 * point is the state machine and that one peer never holds up another: two
 * targets share one loop, and what each hears, and in which order, is
 * checked, never how long it took. */
#include "dumpwatch/target.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/log.h"
#include "dumpwatch/ruleset.h"

enum peer_mode { PEER_ANSWER, PEER_SLOW, PEER_SILENT, PEER_CLOSE, PEER_STREAM_END };

static char tmpdir[256];

/* --- the fake runtime --- */

struct bytes {
	uint8_t b[4096];
	size_t n;
};

static void put(struct bytes *x, const void *p, size_t n)
{
	memcpy(x->b + x->n, p, n);
	x->n += n;
}

static void put_u32(struct bytes *x, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	put(x, b, 4);
}

static void put_u64(struct bytes *x, uint64_t v)
{
	put_u32(x, (uint32_t)v);
	put_u32(x, (uint32_t)(v >> 32));
}

static void put_str(struct bytes *x, const char *s)
{
	put_u32(x, (uint32_t)strlen(s) + 1);
	for (const char *c = s;; c++) {
		uint8_t u[2] = {(uint8_t)*c, 0};
		put(x, u, 2);
		if (!*c)
			break;
	}
}

/* A reply: the header with the size filled in, then the payload. */
static void reply(struct bytes *out, uint8_t id, const struct bytes *payload)
{
	static const uint8_t magic[14] = "DOTNET_IPC_V1";
	uint16_t size = (uint16_t)(20 + payload->n);
	uint8_t rest[6] = {(uint8_t)size, (uint8_t)(size >> 8), 0xFF, id, 0, 0};

	out->n = 0;
	put(out, magic, sizeof(magic));
	put(out, rest, sizeof(rest));
	put(out, payload->b, payload->n);
}

static void answer(int c, const uint8_t *hdr)
{
	struct bytes pay = {.n = 0}, msg;

	if (hdr[16] == 0x04) { /* ProcessInfo3 */
		static const uint8_t cookie[16] = {1};
		put_u32(&pay, 1);
		put_u64(&pay, 4242);
		put(&pay, cookie, sizeof(cookie));
		put_str(&pay, "/usr/bin/Fake --tag unit");
		put_str(&pay, "Linux");
		put_str(&pay, "X64");
		put_str(&pay, "FakeApp");
		put_str(&pay, "10.0.99");
		put_str(&pay, "linux-x64");
	} else { /* CollectTracing, StopTracing: the session id */
		put_u64(&pay, 7);
	}
	reply(&msg, 0x00, &pay);
	if (write(c, msg.b, msg.n) != (ssize_t)msg.n)
		_exit(5);
}

/* Binds path in this process (so SO_PEERCRED names us, the pid the target
 * expects) and serves it from a child. */
static pid_t peer_start(const char *path, enum peer_mode mode, int delay_ms)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	pid_t pid;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	CHECK(lfd >= 0);
	CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(lfd, 16) == 0);
	pid = fork();
	if (pid == 0) {
		alarm(20);
		for (;;) {
			uint8_t hdr[20], body[4096];
			size_t got = 0, size;
			int c = accept(lfd, NULL, NULL);

			if (c < 0)
				_exit(1);
			if (mode == PEER_CLOSE) {
				close(c);
				continue;
			}
			while (got < 20) {
				ssize_t k = read(c, hdr + got, 20 - got);
				if (k <= 0)
					break;
				got += (size_t)k;
			}
			if (got < 20) {
				close(c);
				continue;
			}
			size = (size_t)hdr[14] | (size_t)hdr[15] << 8;
			while (got < size) {
				ssize_t k = read(c, body, size - got < sizeof(body) ? size - got : sizeof(body));
				if (k <= 0)
					break;
				got += (size_t)k;
			}
			if (mode == PEER_SILENT)
				continue; /* keeps c open, never answers */
			if (mode == PEER_SLOW)
				usleep((useconds_t)delay_ms * 1000);
			answer(c, hdr);
			if (mode == PEER_STREAM_END && hdr[16] == 0x02 && hdr[17] >= 0x02) {
				/* The trace's opening, then the end of the stream. */
				static const char open[] = "Nettrace";
				uint8_t len[4] = {20, 0, 0, 0};
				if (write(c, open, 8) != 8 || write(c, len, 4) != 4 ||
				    write(c, "!FastSerialization.1", 20) != 20)
					_exit(6);
			}
			/* A trace stream stays open, as a live runtime keeps it. */
			if (!(mode != PEER_STREAM_END && hdr[16] == 0x02 && hdr[17] >= 0x02))
				close(c);
		}
	}
	close(lfd);
	return pid;
}

static void peer_stop(pid_t pid, const char *path)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
}

/* --- what the targets heard --- */

#define EVENTS_MAX 32

struct heard {
	char what[EVENTS_MAX][64];
	int n;
	int r_probe;
	struct loop *loop;
	int stop_after; /* loop_stop after this many events */
};

static void note(struct heard *h, const char *who, const char *what)
{
	if (h->n < EVENTS_MAX)
		snprintf(h->what[h->n++], sizeof(h->what[0]), "%s:%s", who, what);
	if (h->stop_after && h->n >= h->stop_after)
		loop_stop(h->loop);
}

struct who {
	struct heard *h;
	const char *name;
};

static void on_probed(void *ctx, struct target *t, int r, const char *err)
{
	struct who *w = ctx;
	(void)t;
	(void)err;
	note(w->h, w->name, r == 0 ? "probed" : r == -ETIMEDOUT ? "probe-timeout" : "probe-failed");
	if (r == 0)
		target_attach(t);
}

static void on_attached(void *ctx, struct target *t)
{
	struct who *w = ctx;
	(void)t;
	note(w->h, w->name, "attached");
}

static void on_attach_failed(void *ctx, struct target *t, int r, const char *err)
{
	struct who *w = ctx;
	(void)t;
	(void)r;
	(void)err;
	note(w->h, w->name, "attach-failed");
}

static void on_session_failed(void *ctx, struct target *t, const char *err)
{
	struct who *w = ctx;
	(void)t;
	(void)err;
	note(w->h, w->name, "session-failed");
}

static const struct target_hooks hooks = {
    .probed = on_probed,
    .attached = on_attached,
    .attach_failed = on_attach_failed,
    .session_failed = on_session_failed,
};

static void on_deadline(struct loop *l, void *ctx)
{
	(void)ctx;
	loop_stop(l);
}

static struct dn_target process_at(const char *path)
{
	struct dn_target dt;

	memset(&dt, 0, sizeof(dt));
	dt.pid = getpid();
	dt.uid = getuid();
	dt.gid = getgid();
	CHECK(discovery_starttime(dt.pid, &dt.starttime) == 0);
	snprintf(dt.socket_path, sizeof(dt.socket_path), "%s", path);
	return dt;
}

static struct target_rule *one_rule(void)
{
	struct target_rule *r = calloc(1, sizeof(*r));
	struct rule_diag d;

	CHECK(r != NULL);
	snprintf(r->fr.rule.name, sizeof(r->fr.rule.name), "unit");
	CHECK(rule_cond_parse("loh-size > 1GB", &r->fr.rule.conds[0], d.message, sizeof(d.message)) == 0);
	r->fr.rule.n_conds = 1;
	r->fr.rule.limits.max_dumps = 1;
	eval_init(&r->st);
	return r;
}

static int index_of(const struct heard *h, const char *what)
{
	for (int i = 0; i < h->n; i++)
		if (strcmp(h->what[i], what) == 0)
			return i;
	return -1;
}

/* Runs two targets, a and b, against peers of the given modes until
 * stop_after events or the deadline. */
static void run_pair(struct heard *h, enum peer_mode ma, int delay_a, enum peer_mode mb, int request_ms,
                     int64_t deadline_ns)
{
	char pa[300], pb[300];
	struct loop *l = loop_new();
	struct target_options opt = {.dump_dir = tmpdir};
	struct target_config cfg = {.loop = l, .opt = &opt, .request_ms = request_ms, .exit_grace_ns = 100000000LL};
	struct who wa = {h, "a"}, wb = {h, "b"};

	snprintf(pa, sizeof(pa), "%s/a.sock", tmpdir);
	snprintf(pb, sizeof(pb), "%s/b.sock", tmpdir);
	pid_t sa = peer_start(pa, ma, delay_a), sb = peer_start(pb, mb, 0);
	struct dn_target da = process_at(pa), db = process_at(pb);
	struct target *a = target_new(&cfg, &hooks, &wa, &da), *b = target_new(&cfg, &hooks, &wb, &db);

	h->loop = l;
	target_set_rules(a, one_rule(), 1);
	target_set_rules(b, one_rule(), 1);
	target_probe(a);
	target_probe(b);
	loop_set_timer(l, loop_now() + deadline_ns, on_deadline, NULL);
	loop_run(l);
	target_free(a);
	target_free(b);
	loop_free(l);
	peer_stop(sa, pa);
	peer_stop(sb, pb);
}

static void dump_heard(const struct heard *h)
{
	for (int i = 0; i < h->n; i++)
		fprintf(stderr, "  %d %s\n", i, h->what[i]);
}

/* Which rules' allocation ticks can come and go: "above" conditions on sizes
 * and allocation rates only. */
static void test_ticks_gate(void)
{
	static const struct {
		const char *conds[2];
		int gate;
	} cases[] = {
	    {{"loh-size > 1GB", NULL}, 1},
	    {{"heap-size >= 2GB", "gc-pause > 100ms"}, 1},
	    {{"loh-alloc-rate > 100MB/s", "poh-size > 1MB"}, 1},
	    {{"alloc-rate > 1GB/s for 5s", NULL}, 1},
	    {{"gc-pause > 100ms", NULL}, 0}, /* no ticks at all */
	    {{"loh-size < 1GB", NULL}, 0},   /* a "below" one needs them always */
	    {{"loh-size > 1GB", "alloc-rate < 1MB/s"}, 0},
	    {{"loh-size > 1GB", "appdomain-allocated > 1GB"}, 0},
	    {{"loh-size > 0B", NULL}, 0}, /* nothing to be far from */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct target_rule r;
		char err[256];
		memset(&r, 0, sizeof(r));
		for (int c = 0; c < 2 && cases[i].conds[c]; c++) {
			CHECK_MSG(rule_cond_parse(cases[i].conds[c], &r.fr.rule.conds[c], err, sizeof(err)) == 0,
			          "%s: %s", cases[i].conds[c], err);
			r.fr.rule.n_conds++;
		}
		CHECK_MSG(target_ticks_gate(&r, 1) == cases[i].gate, "case %zu (%s)", i, cases[i].conds[0]);
	}
	CHECK(target_ticks_gate(NULL, 0) == 0);
}

int main(void)
{
	test_ticks_gate();
	struct heard h;

	log_set_level((enum log_level)0);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/dw-target.XXXXXX");
	CHECK(mkdtemp(tmpdir) != NULL);

	/* A silent peer beside one that answers: b probes and attaches while
	 * a's request is still waiting; a then times out on its own. */
	memset(&h, 0, sizeof(h));
	h.stop_after = 4;
	run_pair(&h, PEER_SILENT, 0, PEER_ANSWER, 300, 5000000000LL);
	CHECK(index_of(&h, "b:probed") == 0);
	CHECK(index_of(&h, "b:attached") == 1);
	CHECK(index_of(&h, "a:probe-timeout") == 2);
	if (check_failed)
		dump_heard(&h);

	/* A slow peer (answers after 150 ms, within the 2 s deadline): both
	 * attach, the quick one first. */
	memset(&h, 0, sizeof(h));
	h.stop_after = 4;
	run_pair(&h, PEER_SLOW, 150, PEER_ANSWER, 2000, 5000000000LL);
	CHECK(index_of(&h, "b:attached") >= 0 && index_of(&h, "a:attached") >= 0);
	CHECK(index_of(&h, "b:attached") < index_of(&h, "a:probed"));

	/* A peer that closes every connection at once: a clear failure of
	 * the probe, and b is served meanwhile. */
	memset(&h, 0, sizeof(h));
	h.stop_after = 3;
	run_pair(&h, PEER_CLOSE, 0, PEER_ANSWER, 2000, 5000000000LL);
	CHECK(index_of(&h, "a:probe-failed") >= 0);
	CHECK(index_of(&h, "b:attached") >= 0);

	/* A stream that the peer cuts off while the process (us) lives on:
	 * after the exit grace it is a session failure, not an exit. */
	memset(&h, 0, sizeof(h));
	h.stop_after = 5;
	run_pair(&h, PEER_STREAM_END, 0, PEER_ANSWER, 2000, 3000000000LL);
	CHECK(index_of(&h, "a:attached") >= 0);
	CHECK(index_of(&h, "a:session-failed") > index_of(&h, "a:attached"));
	CHECK(index_of(&h, "b:session-failed") < 0);
	CHECK(index_of(&h, "b:attached") >= 0);
	if (check_failed)
		dump_heard(&h);

	rmdir(tmpdir);
	return check_done();
}
