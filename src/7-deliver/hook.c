/* Hooks: see hook.h.
 *
 * Whom a hook runs as. As root, by default, each run gets a transient uid of
 * its own (uidpool.h): only the hook's own processes and root can trace it
 * or take its descriptors (the dump). A named user is honoured, and the
 * start says that the processes of that user can.
 *
 * The tree. A hook is started by a supervisor: a child of dumpwatch that
 * stays root, becomes a child subreaper (PR_SET_CHILD_SUBREAPER), forks the
 * hook and waits for it. Whatever the hook leaves running when it exits is
 * the supervisor's to end: a process that left the hook's session (setsid)
 * or was double-forked is reparented to the supervisor when its parent
 * dies, and is killed and reaped there, generation by generation, until the
 * supervisor has no child. With a transient uid, a process of that uid
 * started outside the tree (by another daemon on the hook's request) is
 * killed too: a child that takes the uid sends SIGKILL to every process it
 * may signal, which with that uid are the hook's alone. Asked to stop
 * (SIGTERM: the timeout, dumpwatch stopping, or dumpwatch dying, through
 * PR_SET_PDEATHSIG) the supervisor does the same to the hook itself. Then it
 * writes the hook's status and how many it killed on a pipe and exits: the
 * runner watches it through a pidfd on the loop, the hook's output through a
 * pipe of which only the last HOOK_OUTPUT_TAIL bytes are kept.
 *
 * Slots. At most HOOK_RUNNING_MAX hooks run at once, and at most
 * HOOK_RUNNING_PER_OWNER for the processes of one user (the owner of the
 * process a hook is about): another user's processes cannot take every slot.
 * A hook that finds no slot waits (at most HOOK_WAITING_MAX, of them
 * HOOK_WAITING_PER_OWNER for one owner), holding its descriptors; when a slot
 * frees, the waiting hook whose owner runs the fewest starts, the oldest
 * first. One that cannot wait is dropped, journaled with the reason. */
#include "dumpwatch/hook.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dumpwatch/defaults.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/log.h"
#include "dumpwatch/procfs.h"
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"
#include "dumpwatch/uidpool.h"

/* ---- the user ------------------------------------------------------------ */

/* The kernel's overflow uid, which nobody has on Debian (65534). */
static uid_t overflow_uid(void)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 65534;
	buf[n] = '\0';
	return (uid_t)strtoul(buf, NULL, 10);
}

int hook_user_resolve(const char *name, struct hook_user *u, char *err, size_t errlen)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096], *end;
	uid_t self = geteuid();

	memset(u, 0, sizeof(*u));
	if (!name && self == 0) {
		snprintf(u->name, sizeof(u->name), "transient");
		u->transient = 1;
		return 0;
	}
	if (!name) {
		if (getpwuid_r(self, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp) {
			snprintf(u->name, sizeof(u->name), "%u", (unsigned)self);
		} else {
			snprintf(u->name, sizeof(u->name), "%s", pw.pw_name);
		}
		u->uid = self;
		u->gid = getegid();
		int n = getgroups(HOOK_GROUPS_MAX, u->groups);
		u->n_groups = n > 0 ? (size_t)n : 0;
		return 0;
	}
	errno = 0;
	unsigned long v = strtoul(name, &end, 10);
	if (name[0] >= '0' && name[0] <= '9' && *end == '\0')
		getpwuid_r((uid_t)v, &pw, buf, sizeof(buf), &pwp);
	else
		getpwnam_r(name, &pw, buf, sizeof(buf), &pwp);
	if (!pwp) {
		char q[96];
		snprintf(
		    err, errlen,
		    "hook user \"%s\" does not exist: name an existing unprivileged user with --hook-user, or leave "
		    "it out",
		    text_escape_str(name, q, sizeof(q)));
		return -ENOENT;
	}
	if (self == 0 && pw.pw_uid == 0) {
		snprintf(
		    err, errlen,
		    "hooks run as an unprivileged user, not root: name another with --hook-user, or leave it out (each "
		    "hook then runs under a uid of its own)");
		return -EPERM;
	}
	if (self == 0 && (pw.pw_uid == overflow_uid() || strcmp(pw.pw_name, "nobody") == 0)) {
		snprintf(
		    err, errlen,
		    "hooks do not run as %s: every daemon that drops its privileges to %s could trace a hook and "
		    "take the dump it holds; leave --hook-user out (each hook then runs under a uid of its own), or "
		    "name a user of their own",
		    pw.pw_name, pw.pw_name);
		return -EPERM;
	}
	if (self != 0 && pw.pw_uid != self) {
		snprintf(err, errlen,
		         "hooks run as user %s, but dumpwatch runs as uid %u and can only run them as itself: leave "
		         "--hook-user out, or run dumpwatch as root",
		         pw.pw_name, (unsigned)self);
		return -EPERM;
	}
	snprintf(u->name, sizeof(u->name), "%s", pw.pw_name);
	u->uid = pw.pw_uid;
	u->gid = pw.pw_gid;
	int ng = HOOK_GROUPS_MAX;
	if (getgrouplist(pw.pw_name, pw.pw_gid, u->groups, &ng) < 0) {
		u->groups[0] = pw.pw_gid;
		ng = 1;
	}
	u->n_groups = (size_t)ng;
	return 0;
}

static void count_uid(uid_t uid, void *ctx)
{
	struct {
		uid_t uid;
		size_t n;
	} *c = ctx;
	if (uid == c->uid)
		c->n++;
}

int hook_user_warning(const struct hook_user *u, char *out, size_t outlen)
{
	struct {
		uid_t uid;
		size_t n;
	} c = {u->uid, 0};

	if (u->transient || geteuid() != 0)
		return 0;
	uidpool_each_process_uid(count_uid, &c);
	if (c.n == 0)
		return 0;
	/* A process shows its uid up to four times (real, effective, saved,
	 * filesystem): at least this many have it. */
	snprintf(out, outlen,
	         "hook user %s (uid %u) runs at least %zu other process(es): any of them can trace a running hook and "
	         "take the dump it holds (ptrace, pidfd_getfd); leave --hook-user out to run each hook under a uid of "
	         "its own, or give hooks a user of their own",
	         u->name, (unsigned)u->uid, (c.n + 3) / 4);
	return 1;
}

/* ---- the runner ---------------------------------------------------------- */

/* A hook asked for: what it is told, with its own copies. */
struct hook_req {
	struct hook_cmd cmd;
	int64_t timeout_ns;
	struct hook_env env; /* strings and descriptors below are the request's own */
	char *strs[9];
	int64_t queued_ns;
	struct json_object *rec; /* what the journal record says of it */
	char what[160];          /* for log lines: "on-dump hook of rule X for pid N" */
};

struct hook_job {
	struct hook_runner *h;
	struct hook_req *rq;
	pid_t pid; /* the supervisor */
	int pidfd;
	int out_fd;    /* the hook's output */
	int report_fd; /* the supervisor's report */
	uid_t uid;     /* the hook's */
	struct loop_timer timer;
	int timed_out;
	int64_t start_ns, deadline_ns;
	char tail[HOOK_OUTPUT_TAIL];
	size_t tail_len;
};

struct hook_runner {
	struct loop *loop;
	struct journal *journal;
	struct hook_user user;
	int have_user;
	hook_done_fn done;
	void *done_ctx;
	struct hook_job *jobs[HOOK_RUNNING_MAX];
	size_t n_jobs;
	struct hook_req *waiting[HOOK_WAITING_MAX]; /* oldest first */
	size_t n_waiting;
};

/* What the supervisor writes on its pipe before it exits. */
struct sup_report {
	int32_t status;    /* the hook's wait status */
	int32_t waited;    /* 1 when status is the hook's */
	uint32_t leftover; /* processes of the hook's still running at its end, killed */
	int32_t err;       /* errno of a failure to start the hook; 0 */
};

struct hook_runner *hook_runner_new(struct loop *l, struct journal *j, const struct hook_user *user, hook_done_fn done,
                                    void *done_ctx)
{
	struct hook_runner *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->loop = l;
	h->journal = j;
	if (user) {
		h->user = *user;
		h->have_user = 1;
	}
	h->done = done;
	h->done_ctx = done_ctx;
	return h;
}

size_t hook_running(const struct hook_runner *h)
{
	return h ? h->n_jobs : 0;
}

size_t hook_waiting(const struct hook_runner *h)
{
	return h ? h->n_waiting : 0;
}

size_t hook_fds(const struct hook_runner *h)
{
	size_t n = 0;

	if (!h)
		return 0;
	n = 3 * h->n_jobs;
	for (size_t i = 0; i < h->n_waiting; i++)
		n += (size_t)(h->waiting[i]->env.dump_fd >= 0) + (size_t)(h->waiting[i]->env.ctx_fd >= 0);
	return n;
}

int64_t hook_last_deadline(const struct hook_runner *h)
{
	int64_t last = 0, now = loop_now();

	for (size_t i = 0; h && i < h->n_jobs; i++)
		if (h->jobs[i]->deadline_ns > last)
			last = h->jobs[i]->deadline_ns;
	/* A waiting hook starts at the latest when the last running one ends. */
	int64_t start = last > now ? last : now;
	for (size_t i = 0; h && i < h->n_waiting; i++)
		if (start + h->waiting[i]->timeout_ns > last)
			last = start + h->waiting[i]->timeout_ns;
	return last;
}

/* ---- requests ------------------------------------------------------------ */

static void req_free(struct hook_req *rq)
{
	if (!rq)
		return;
	for (size_t i = 0; i < sizeof(rq->strs) / sizeof(rq->strs[0]); i++)
		free(rq->strs[i]);
	if (rq->env.dump_fd >= 0)
		close(rq->env.dump_fd);
	if (rq->env.ctx_fd >= 0)
		close(rq->env.ctx_fd);
	json_object_put(rq->rec);
	free(rq);
}

/* A copy of s owned by rq (NULL for NULL; "" when out of memory). */
static const char *req_str(struct hook_req *rq, size_t slot, const char *s)
{
	if (!s)
		return NULL;
	rq->strs[slot] = strdup(s);
	return rq->strs[slot] ? rq->strs[slot] : "";
}

static struct hook_req *req_new(const struct hook_runner *h, const struct hook_cmd *cmd, int64_t timeout_ns,
                                const struct hook_env *e)
{
	struct hook_req *rq = calloc(1, sizeof(*rq));
	char shown[HOOK_ARGV_BYTES + 64];

	if (!rq)
		return NULL;
	rq->cmd = *cmd;
	rq->timeout_ns = timeout_ns;
	rq->env = *e;
	rq->env.event = req_str(rq, 0, e->event);
	rq->env.process = req_str(rq, 1, e->process);
	rq->env.rule = req_str(rq, 2, e->rule);
	rq->env.values = req_str(rq, 3, e->values);
	rq->env.dump = req_str(rq, 4, e->dump);
	rq->env.context = req_str(rq, 5, e->context);
	rq->env.container = req_str(rq, 6, e->container);
	rq->env.pod = req_str(rq, 7, e->pod);
	rq->env.dump_fd = e->dump_fd >= 0 ? fcntl(e->dump_fd, F_DUPFD_CLOEXEC, 3) : -1;
	rq->env.ctx_fd = e->ctx_fd >= 0 ? fcntl(e->ctx_fd, F_DUPFD_CLOEXEC, 3) : -1;
	hook_cmd_format(cmd, shown, sizeof(shown));
	rq->rec = json_object_new_object();
	json_object_object_add(rq->rec, "hook", json_object_new_string(e->event));
	if (e->rule)
		json_object_object_add(rq->rec, "rule", json_object_new_string(e->rule));
	json_object_object_add(rq->rec, "pid", json_object_new_int(e->pid));
	if (e->process)
		json_object_object_add(rq->rec, "process", json_object_new_string(e->process));
	json_object_object_add(rq->rec, "command", json_object_new_string(shown));
	json_object_object_add(rq->rec, "user", json_object_new_string(h->have_user ? h->user.name : "none"));
	snprintf(rq->what, sizeof(rq->what), "%s hook of rule %s for pid %d", e->event, e->rule ? e->rule : "?",
	         (int)e->pid);
	return rq;
}

/* A hook that will not run: journaled, told, freed. Returns r. */
static int not_run(struct hook_runner *h, struct hook_req *rq, int r, const char *err)
{
	json_object_object_add(rq->rec, "error", json_object_new_string(err));
	log_warn("%s not run: %s", rq->what, err);
	if (h->journal)
		journal_write(h->journal, "hook-failed", json_object_get(rq->rec));
	req_free(rq);
	if (h->done)
		h->done(h->done_ctx, 0);
	return r;
}

static size_t running_for(const struct hook_runner *h, uid_t owner)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n_jobs; i++)
		n += h->jobs[i]->rq->env.owner == owner;
	return n;
}

static size_t waiting_for(const struct hook_runner *h, uid_t owner)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n_waiting; i++)
		n += h->waiting[i]->env.owner == owner;
	return n;
}

static int has_slot(const struct hook_runner *h, uid_t owner)
{
	return h->n_jobs < HOOK_RUNNING_MAX && running_for(h, owner) < HOOK_RUNNING_PER_OWNER;
}

/* ---- the supervisor and the hook (children) ------------------------------ */

static int become(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups)
{
	if (setgroups(n_groups, groups) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	return 0;
}

/* The hook: a session of its own, the descriptors it is given and no other,
 * its user, no way back to privileges, then the program. Never returns. */
static void hook_exec(const struct hook_user *u, uid_t uid, const char *prog, char *const *argv, char *const *env,
                      int out_fd, int dump_fd, int ctx_fd)
{
	int devnull = open("/dev/null", O_RDWR);
	sigset_t none;

	setsid();
	/* The loop blocks the signals it reads from a signalfd, and the
	 * supervisor those it waits for: a hook starts with none blocked and
	 * default dispositions. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	/* Moved above 10 first, so that the dup2s below cannot clobber them. */
	int o = fcntl(out_fd, F_DUPFD, 10), d = dump_fd >= 0 ? fcntl(dump_fd, F_DUPFD, 10) : -1,
	    c = ctx_fd >= 0 ? fcntl(ctx_fd, F_DUPFD, 10) : -1, n = fcntl(devnull, F_DUPFD, 10);
	if (o < 0 || n < 0)
		_exit(126);
	dup2(n, 0);
	dup2(o, 1);
	dup2(o, 2);
	dup2(d >= 0 ? d : n, 3);
	dup2(c >= 0 ? c : n, 4);
	if (d < 0)
		close(3);
	if (c < 0)
		close(4);
	fds_close_from(5);
	if (geteuid() == 0) {
		int r =
		    u->transient ? become(uid, (gid_t)uid, NULL, 0) : become(u->uid, u->gid, u->groups, u->n_groups);
		if (r < 0) {
			/* Said on the output, which the journal keeps. */
			dprintf(1,
			        "dumpwatch: cannot become uid %u to run the hook: %s (CAP_SETUID and CAP_SETGID are "
			        "needed)\n",
			        (unsigned)uid, strerror(-r));
			_exit(126);
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(126);
	/* Set after the change of user, which clears it: a hook dies with its
	 * supervisor. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (chdir("/") < 0)
		_exit(126);
	umask(077);
	execve(prog, argv, env);
	_exit(127);
}

/* kill_children's: SIGKILL to pid when it is a child of ours. */
static int kill_if_child(pid_t pid, void *ctx)
{
	size_t *n = ctx;
	char buf[512];
	int ppid;
	char state;

	if (procfs_read(pid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	/* pid (comm) state ppid ...: comm may hold any byte, ')' too. */
	const char *rp = strrchr(buf, ')');
	if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid()) {
		kill(pid, SIGKILL);
		(*n)++;
	}
	return 0;
}

/* SIGKILL to every child of ours; how many there were. A child cannot be
 * reaped by anyone else, so its pid names it until we reap it. */
static size_t kill_children(void)
{
	size_t n = 0;

	procfs_each_pid(kill_if_child, &n);
	return n;
}

/* The supervisor. Never returns. */
static void supervise(const struct hook_user *u, uid_t uid, const char *prog, char *const *argv, char *const *env,
                      int out_fd, int dump_fd, int ctx_fd, int report_fd, pid_t parent)
{
	struct sup_report rep = {0};
	sigset_t waitfor;
	int stop = 0;

	setsid();
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&waitfor);
	sigaddset(&waitfor, SIGCHLD);
	sigaddset(&waitfor, SIGTERM);
	sigaddset(&waitfor, SIGINT);
	sigaddset(&waitfor, SIGHUP);
	sigprocmask(SIG_BLOCK, &waitfor, NULL);
	/* Keeps nothing of dumpwatch's but what the hook is given, on 3 to 6
	 * (copied above them first, so that no dup3 below clobbers another). */
	int keep[] = {out_fd, dump_fd, ctx_fd, report_fd};
	enum { N_KEEP = sizeof(keep) / sizeof(keep[0]) };
	for (size_t i = 0; i < N_KEEP; i++)
		keep[i] = keep[i] >= 0 ? fcntl(keep[i], F_DUPFD_CLOEXEC, 3 + N_KEEP) : -1;
	for (size_t i = 0; i < N_KEEP; i++)
		keep[i] = keep[i] >= 0 ? dup3(keep[i], 3 + (int)i, O_CLOEXEC) : -1;
	close(0);
	close(1);
	close(2);
	fds_close_from(3 + N_KEEP);
	out_fd = keep[0], dump_fd = keep[1], ctx_fd = keep[2], report_fd = keep[3];
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != parent)
		stop = 1;
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	pid_t hook = stop ? -1 : fork();
	if (hook == 0)
		hook_exec(u, uid, prog, argv, env, out_fd, dump_fd, ctx_fd);
	if (hook < 0)
		rep.err = stop ? EINTR : errno;
	/* Only the hook's tree holds these now: its output ends with it. */
	close(out_fd);
	if (dump_fd >= 0)
		close(dump_fd);
	if (ctx_fd >= 0)
		close(ctx_fd);

	/* Until the hook ends or we are told to stop; orphans of its tree that
	 * end meanwhile are reaped as they come. */
	while (hook > 0 && !rep.waited && !stop) {
		int st;
		pid_t p;
		while ((p = waitpid(-1, &st, WNOHANG)) > 0)
			if (p == hook) {
				rep.status = st;
				rep.waited = 1;
			}
		if (rep.waited)
			break;
		siginfo_t si;
		if (sigwaitinfo(&waitfor, &si) > 0 && si.si_signo != SIGCHLD)
			stop = 1;
	}

	/* Whatever is left goes. */
	if (u->transient && hook > 0)
		uidpool_kill_all(uid);
	for (;;) {
		int st;
		kill_children();
		pid_t p = waitpid(-1, &st, 0);
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			break;
		if (p == hook) {
			rep.status = st;
			rep.waited = 1;
		} else {
			rep.leftover++;
		}
	}
	ssize_t w = write(report_fd, &rep, sizeof(rep));
	_exit(w == (ssize_t)sizeof(rep) ? 0 : 1);
}

/* ---- the runner's side --------------------------------------------------- */

/* The last non-empty line of the output kept, into out ("" when none). */
static void last_line(const struct hook_job *jb, char *out, size_t outlen)
{
	size_t end = jb->tail_len, start;

	while (end > 0 && (jb->tail[end - 1] == '\n' || jb->tail[end - 1] == '\r'))
		end--;
	for (start = end; start > 0 && jb->tail[start - 1] != '\n'; start--)
		;
	text_escape(jb->tail + start, end - start, out, outlen);
}

static void drain(struct hook_job *jb)
{
	char buf[4096];
	ssize_t n;

	if (jb->out_fd < 0)
		return;
	while ((n = read(jb->out_fd, buf, sizeof(buf))) > 0) {
		size_t k = (size_t)n;
		if (k >= sizeof(jb->tail)) {
			memcpy(jb->tail, buf + k - sizeof(jb->tail), sizeof(jb->tail));
			jb->tail_len = sizeof(jb->tail);
		} else {
			if (jb->tail_len + k > sizeof(jb->tail)) {
				size_t drop = jb->tail_len + k - sizeof(jb->tail);
				memmove(jb->tail, jb->tail + drop, jb->tail_len - drop);
				jb->tail_len -= drop;
			}
			memcpy(jb->tail + jb->tail_len, buf, k);
			jb->tail_len += k;
		}
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		loop_del(jb->h->loop, jb->out_fd);
		close(jb->out_fd);
		jb->out_fd = -1;
	}
}

static void on_output(struct loop *l, int fd, uint32_t events, void *ctx)
{
	(void)l;
	(void)fd;
	(void)events;
	drain(ctx);
}

static void start_waiting(struct hook_runner *h);

/* Removes jb from its runner and frees it (the supervisor is reaped). */
static void job_free(struct hook_job *jb)
{
	struct hook_runner *h = jb->h;

	for (size_t i = 0; i < h->n_jobs; i++)
		if (h->jobs[i] == jb) {
			h->jobs[i] = h->jobs[--h->n_jobs];
			break;
		}
	loop_timer_disarm(h->loop, &jb->timer);
	if (jb->pidfd >= 0) {
		loop_del(h->loop, jb->pidfd);
		close(jb->pidfd);
	}
	if (jb->out_fd >= 0) {
		loop_del(h->loop, jb->out_fd);
		close(jb->out_fd);
	}
	if (jb->report_fd >= 0)
		close(jb->report_fd);
	/* The supervisor killed all of the uid before it ended. */
	if (h->user.transient)
		uidpool_release(jb->uid, 0);
	req_free(jb->rq);
	free(jb);
}

/* The supervisor ended with status (waitpid's); its report says how the
 * hook did. stopped: why it was stopped when dumpwatch stopped it (NULL
 * otherwise). Journals the run and frees the job. */
static void job_end(struct hook_job *jb, int sup_status, const char *stopped)
{
	struct hook_runner *h = jb->h;
	struct hook_req *rq = jb->rq;
	struct sup_report rep;
	char line[HOOK_OUTPUT_TAIL * 4 + 1], why[256];
	int ok = 0, status;

	drain(jb);
	last_line(jb, line, sizeof(line));
	double ms = (double)(loop_now() - jb->start_ns) / 1e6;
	char msbuf[32];
	snprintf(msbuf, sizeof(msbuf), "%.1f", ms);
	json_object_object_add(rq->rec, "duration_ms", json_object_new_double_s(ms, msbuf));
	if (read(jb->report_fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep)) {
		memset(&rep, 0, sizeof(rep));
		rep.err = -1;
	}
	status = rep.status;
	if (rep.leftover)
		json_object_object_add(rq->rec, "killed_left_running", json_object_new_int64((int64_t)rep.leftover));
	if (stopped) {
		snprintf(why, sizeof(why), "%s", stopped);
	} else if (rep.err > 0) {
		snprintf(why, sizeof(why), "could not be started: %s", strerror(rep.err));
	} else if (rep.err < 0 || !rep.waited) {
		snprintf(why, sizeof(why), "ended unaccounted for: its supervisor ended with status 0x%x and no report",
		         (unsigned)sup_status);
	} else if (jb->timed_out) {
		snprintf(why, sizeof(why), "timed out after %.1f s and was killed", (double)rq->timeout_ns / 1e9);
	} else if (WIFEXITED(status)) {
		json_object_object_add(rq->rec, "exit", json_object_new_int(WEXITSTATUS(status)));
		ok = WEXITSTATUS(status) == 0;
		snprintf(why, sizeof(why), "exited with status %d%s", WEXITSTATUS(status),
		         WEXITSTATUS(status) == 127 ? " (its program could not be executed)" : "");
	} else if (WIFSIGNALED(status)) {
		json_object_object_add(rq->rec, "signal", json_object_new_int(WTERMSIG(status)));
		snprintf(why, sizeof(why), "was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	} else {
		snprintf(why, sizeof(why), "ended with status 0x%x", (unsigned)status);
	}
	if (line[0])
		json_object_object_add(rq->rec, "output", json_object_new_string(line));
	if (ok) {
		log_info("%s ran in %.0f ms%s", rq->what, ms, rep.leftover ? "; what it left running was killed" : "");
	} else {
		json_object_object_add(rq->rec, "error", json_object_new_string(why));
		log_warn("%s %s%s%s", rq->what, why, line[0] ? "; its last line: " : "", line);
	}
	if (h->journal)
		journal_write(h->journal, ok ? "hook" : "hook-failed", json_object_get(rq->rec));
	hook_done_fn done = h->done;
	void *done_ctx = h->done_ctx;
	job_free(jb);
	/* A slot is free: a waiting hook takes it before the owner hears, so
	 * that an owner counting what is left to wait for sees it. */
	start_waiting(h);
	if (done)
		done(done_ctx, ok);
}

static void on_exit_fd(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct hook_job *jb = ctx;
	int status = 0;
	(void)l;
	(void)fd;
	(void)events;

	pid_t r = waitpid(jb->pid, &status, WNOHANG);
	if (r == 0)
		return;
	job_end(jb, r < 0 ? 0 : status, r < 0 ? "could not be waited for" : NULL);
}

static void on_timeout(struct loop *l, void *ctx)
{
	struct hook_job *jb = ctx;
	(void)l;

	/* The supervisor kills the hook and all it started; its pidfd says
	 * when that is done. Not reaped yet, its pid cannot name another. */
	jb->timed_out = 1;
	kill(jb->pid, SIGTERM);
}

/* Appends NAME=value (value escaped) to env, which has room for max entries. */
static void env_add(char **env, size_t *n, size_t max, const char *name, const char *value)
{
	char safe[4096], *e;

	if (!value || *n + 1 >= max)
		return;
	text_escape_str(value, safe, sizeof(safe));
	if (asprintf(&e, "%s=%s", name, safe) >= 0)
		env[(*n)++] = e;
}

static void env_free(char **env, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(env[i]);
}

/* Starts rq in a slot (the caller checked there is one). 0, or -errno with
 * the request journaled and freed. */
static int start(struct hook_runner *h, struct hook_req *rq, char *err, size_t errlen)
{
	const struct hook_env *e = &rq->env;
	char real[PATH_MAX], num[32];
	char *argv[HOOK_ARGS_MAX + 1], *env[24];
	size_t n_env = 0, max_env = sizeof(env) / sizeof(env[0]);
	int out[2], rep[2];
	uid_t uid = h->user.uid;
	int r;

	if ((r = trust_exec_path(hook_cmd_arg(&rq->cmd, 0), "hook", real, sizeof(real), err, errlen)) < 0)
		return not_run(h, rq, r, err);
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot start it: %s", strerror(-r));
		return not_run(h, rq, r, err);
	}
	if (pipe2(rep, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		close(out[0]);
		close(out[1]);
		snprintf(err, errlen, "cannot start it: %s", strerror(-r));
		return not_run(h, rq, r, err);
	}
	struct hook_job *jb = calloc(1, sizeof(*jb));
	if (!jb) {
		close(out[0]), close(out[1]), close(rep[0]), close(rep[1]);
		snprintf(err, errlen, "out of memory");
		return not_run(h, rq, -ENOMEM, err);
	}
	if (h->user.transient && (r = uidpool_lease(&uid, err, errlen)) < 0) {
		close(out[0]), close(out[1]), close(rep[0]), close(rep[1]);
		free(jb);
		return not_run(h, rq, r, err);
	}
	jb->h = h;
	jb->rq = rq;
	jb->uid = uid;
	jb->pidfd = -1;
	jb->out_fd = out[0];
	jb->report_fd = rep[0];
	json_object_object_add(rq->rec, "uid", json_object_new_int64((int64_t)uid));

	for (size_t i = 0; i < rq->cmd.argc; i++)
		argv[i] = (char *)hook_cmd_arg(&rq->cmd, i);
	argv[rq->cmd.argc] = NULL;
	env_add(env, &n_env, max_env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	env_add(env, &n_env, max_env, "HOME", "/");
	env_add(env, &n_env, max_env, "LANG", "C.UTF-8");
	env_add(env, &n_env, max_env, "DUMPWATCH_EVENT", e->event);
	snprintf(num, sizeof(num), "%d", (int)e->pid);
	env_add(env, &n_env, max_env, "DUMPWATCH_PID", num);
	env_add(env, &n_env, max_env, "DUMPWATCH_PROCESS", e->process);
	env_add(env, &n_env, max_env, "DUMPWATCH_RULE", e->rule);
	env_add(env, &n_env, max_env, "DUMPWATCH_VALUES", e->values);
	env_add(env, &n_env, max_env, "DUMPWATCH_CONTAINER", e->container);
	env_add(env, &n_env, max_env, "DUMPWATCH_POD", e->pod);
	if (e->dump) {
		env_add(env, &n_env, max_env, "DUMPWATCH_DUMP", e->dump);
		snprintf(num, sizeof(num), "%llu", (unsigned long long)e->dump_bytes);
		env_add(env, &n_env, max_env, "DUMPWATCH_DUMP_BYTES", num);
		if (e->dump_fd >= 0)
			env_add(env, &n_env, max_env, "DUMPWATCH_DUMP_FD", "3");
	}
	if (e->context) {
		env_add(env, &n_env, max_env, "DUMPWATCH_CONTEXT", e->context);
		if (e->ctx_fd >= 0)
			env_add(env, &n_env, max_env, "DUMPWATCH_CONTEXT_FD", "4");
	}
	env[n_env] = NULL;

	jb->start_ns = loop_now();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0)
		supervise(&h->user, uid, real, argv, env, out[1], e->dump_fd, e->ctx_fd, rep[1], parent);
	int fe = errno;
	env_free(env, n_env);
	close(out[1]);
	close(rep[1]);
	if (pid < 0) {
		jb->rq = NULL;
		close(jb->out_fd);
		close(jb->report_fd);
		if (h->user.transient)
			uidpool_release(uid, 0);
		free(jb);
		snprintf(err, errlen, "cannot start it: %s", strerror(fe));
		return not_run(h, rq, -fe, err);
	}
	/* The supervisor holds the files now; the request need not. */
	if (rq->env.dump_fd >= 0)
		close(rq->env.dump_fd);
	if (rq->env.ctx_fd >= 0)
		close(rq->env.ctx_fd);
	rq->env.dump_fd = rq->env.ctx_fd = -1;
	jb->pid = pid;
	h->jobs[h->n_jobs++] = jb;
	loop_timer_init(&jb->timer, on_timeout, jb);
	jb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (jb->pidfd < 0 || loop_add(h->loop, jb->pidfd, EPOLLIN, on_exit_fd, jb) < 0) {
		/* Not watchable: it is not let run unwatched. */
		int status = 0;
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		job_end(jb, status, "could not be watched (pidfd) and was killed");
		snprintf(err, errlen, "could not be watched (pidfd) and was killed");
		return -EIO;
	}
	loop_add(h->loop, jb->out_fd, EPOLLIN, on_output, jb);
	jb->deadline_ns = jb->start_ns + rq->timeout_ns;
	loop_timer_arm(h->loop, &jb->timer, jb->deadline_ns);
	const char *shown = json_object_get_string(json_object_object_get(rq->rec, "command"));
	if (h->user.transient)
		log_info("%s started as uid %u: %s", rq->what, (unsigned)uid, shown);
	else
		log_info("%s started as user %s: %s", rq->what, h->user.name, shown);
	return 0;
}

/* Starts waiting hooks while slots are free: the one whose owner runs the
 * fewest, the oldest of those. */
static void start_waiting(struct hook_runner *h)
{
	char err[512];

	while (h->n_waiting > 0 && h->n_jobs < HOOK_RUNNING_MAX) {
		size_t best = h->n_waiting, best_running = HOOK_RUNNING_PER_OWNER;
		for (size_t i = 0; i < h->n_waiting; i++) {
			size_t r = running_for(h, h->waiting[i]->env.owner);
			if (r < best_running) {
				best = i;
				best_running = r;
			}
		}
		if (best == h->n_waiting)
			return;
		struct hook_req *rq = h->waiting[best];
		memmove(&h->waiting[best], &h->waiting[best + 1], (h->n_waiting - best - 1) * sizeof(h->waiting[0]));
		h->n_waiting--;
		double waited = (double)(loop_now() - rq->queued_ns) / 1e9;
		char wbuf[32];
		snprintf(wbuf, sizeof(wbuf), "%.3f", waited);
		json_object_object_add(rq->rec, "waited_s", json_object_new_double_s(waited, wbuf));
		start(h, rq, err, sizeof(err));
	}
}

int hook_run(struct hook_runner *h, const struct hook_cmd *cmd, int64_t timeout_ns, const struct hook_env *e, char *err,
             size_t errlen)
{
	struct hook_req *rq;

	if (timeout_ns <= 0)
		timeout_ns = DW_DEFAULT_HOOK_TIMEOUT_NS;
	rq = req_new(h, cmd, timeout_ns, e);
	if (!rq) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!h->have_user) {
		snprintf(err, errlen, "no user to run hooks as: start dumpwatch with --hook-user");
		return not_run(h, rq, -ENOENT, err);
	}
	if ((e->dump_fd >= 0 && rq->env.dump_fd < 0) || (e->ctx_fd >= 0 && rq->env.ctx_fd < 0)) {
		snprintf(err, errlen, "cannot hand it the dump: %s", strerror(errno));
		return not_run(h, rq, -EMFILE, err);
	}
	if (has_slot(h, e->owner))
		return start(h, rq, err, errlen);
	size_t mine = waiting_for(h, e->owner);
	if (h->n_waiting >= HOOK_WAITING_MAX || mine >= HOOK_WAITING_PER_OWNER) {
		snprintf(err, errlen,
		         "dropped: %zu hooks run (%zu for the processes of uid %u) and %zu wait (%zu of them for uid "
		         "%u), as many as may",
		         h->n_jobs, running_for(h, e->owner), (unsigned)e->owner, h->n_waiting, mine,
		         (unsigned)e->owner);
		json_object_object_add(rq->rec, "dropped", json_object_new_boolean(1));
		return not_run(h, rq, -EBUSY, err);
	}
	rq->queued_ns = loop_now();
	h->waiting[h->n_waiting++] = rq;
	log_info("%s waits for a slot: %zu hooks run, %zu for the processes of uid %u", rq->what, h->n_jobs,
	         running_for(h, e->owner), (unsigned)e->owner);
	return 0;
}

void hook_runner_free(struct hook_runner *h)
{
	if (!h)
		return;
	h->done = NULL;
	while (h->n_waiting > 0) {
		struct hook_req *rq = h->waiting[--h->n_waiting];
		not_run(h, rq, 0, "dumpwatch stopped before a slot was free");
	}
	while (h->n_jobs) {
		struct hook_job *jb = h->jobs[h->n_jobs - 1];
		int status = 0;
		kill(jb->pid, SIGTERM);
		while (waitpid(jb->pid, &status, 0) < 0 && errno == EINTR)
			;
		job_end(jb, status, "was killed: dumpwatch stopped");
	}
	free(h);
}
