/* Hooks: see hook.h. A hook runs in a session of its own (setsid), so that
 * its timeout and its end reach everything it started: when the program
 * exits, or its time is up, SIGKILL goes to its whole process group. It is
 * watched through a pidfd on the loop, its output through a pipe of which
 * only the last HOOK_OUTPUT_TAIL bytes are kept (a hook that writes without
 * end costs nothing but the reads). */
#include "dumpwatch/hook.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
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
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"

/* ---- the user ------------------------------------------------------------ */

int hook_user_resolve(const char *name, struct hook_user *u, char *err, size_t errlen)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096], *end;
	uid_t self = geteuid();

	memset(u, 0, sizeof(*u));
	if (!name)
		name = self == 0 ? DW_DEFAULT_HOOK_USER : NULL;
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
		snprintf(err, errlen,
		         "hook user \"%s\" does not exist: name an existing unprivileged user with --hook-user",
		         text_escape_str(name, q, sizeof(q)));
		return -ENOENT;
	}
	if (self == 0 && pw.pw_uid == 0) {
		snprintf(err, errlen, "hooks run as an unprivileged user, not root: name another with --hook-user");
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

/* ---- running ------------------------------------------------------------- */

struct hook_job {
	struct hook_runner *h;
	pid_t pid;
	int pidfd;
	int out_fd;
	struct loop_timer timer;
	int timed_out;
	int64_t start_ns, deadline_ns, timeout_ns;
	char tail[HOOK_OUTPUT_TAIL];
	size_t tail_len;
	struct json_object *rec; /* what the journal record says of it */
	char what[160];          /* for log lines: "on-dump hook of rule X for pid N" */
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

int64_t hook_last_deadline(const struct hook_runner *h)
{
	int64_t last = 0;

	for (size_t i = 0; h && i < h->n_jobs; i++)
		if (h->jobs[i]->deadline_ns > last)
			last = h->jobs[i]->deadline_ns;
	return last;
}

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

/* Removes jb from its runner and frees it (the child is reaped already). */
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
	json_object_put(jb->rec);
	free(jb);
}

/* The hook's program ended with status (waitpid's), or was abandoned
 * (stopped: dumpwatch is stopping). Journals it and frees the job. */
static void job_end(struct hook_job *jb, int status, const char *stopped)
{
	struct hook_runner *h = jb->h;
	char line[HOOK_OUTPUT_TAIL * 4 + 1], why[160];
	int ok = 0;

	drain(jb);
	last_line(jb, line, sizeof(line));
	double ms = (double)(loop_now() - jb->start_ns) / 1e6;
	char msbuf[32];
	snprintf(msbuf, sizeof(msbuf), "%.1f", ms);
	json_object_object_add(jb->rec, "duration_ms", json_object_new_double_s(ms, msbuf));
	if (stopped) {
		snprintf(why, sizeof(why), "%s", stopped);
	} else if (jb->timed_out) {
		snprintf(why, sizeof(why), "timed out after %.1f s and was killed", (double)jb->timeout_ns / 1e9);
	} else if (WIFEXITED(status)) {
		json_object_object_add(jb->rec, "exit", json_object_new_int(WEXITSTATUS(status)));
		ok = WEXITSTATUS(status) == 0;
		snprintf(why, sizeof(why), "exited with status %d%s", WEXITSTATUS(status),
		         WEXITSTATUS(status) == 127 ? " (its program could not be executed)" : "");
	} else if (WIFSIGNALED(status)) {
		json_object_object_add(jb->rec, "signal", json_object_new_int(WTERMSIG(status)));
		snprintf(why, sizeof(why), "was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	} else {
		snprintf(why, sizeof(why), "ended with status 0x%x", (unsigned)status);
	}
	if (line[0])
		json_object_object_add(jb->rec, "output", json_object_new_string(line));
	if (ok) {
		log_info("%s ran in %.0f ms", jb->what, ms);
	} else {
		json_object_object_add(jb->rec, "error", json_object_new_string(why));
		log_warn("%s %s%s%s", jb->what, why, line[0] ? "; its last line: " : "", line);
	}
	if (h->journal)
		journal_write(h->journal, ok ? "hook" : "hook-failed", json_object_get(jb->rec));
	hook_done_fn done = h->done;
	void *done_ctx = h->done_ctx;
	job_free(jb);
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

	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)jb->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0)
		return;
	/* Whatever it left behind goes with it: killed while the program is a
	 * zombie not yet reaped, so that its pid, which names the group, cannot
	 * have been given to another process. */
	kill(-jb->pid, SIGKILL);
	pid_t r = waitpid(jb->pid, &status, 0);
	job_end(jb, r < 0 ? 0 : status, r < 0 ? "could not be waited for" : NULL);
}

static void on_timeout(struct loop *l, void *ctx)
{
	struct hook_job *jb = ctx;
	(void)l;

	jb->timed_out = 1;
	kill(-jb->pid, SIGKILL);
	kill(jb->pid, SIGKILL);
	/* The pidfd says when it is gone. */
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

/* The child: a session of its own, the descriptors it is given and no other,
 * the hook's user, no way back to privileges, then the program. Never
 * returns. */
static void child_exec(const struct hook_user *u, const char *prog, char *const *argv, char *const *env, int out_fd,
                       int dump_fd, int ctx_fd)
{
	int devnull = open("/dev/null", O_RDWR);
	sigset_t none;

	setsid();
	/* The loop blocks the signals it reads from a signalfd: a hook starts
	 * with none blocked and default dispositions. */
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
		if (setgroups(u->n_groups, u->groups) < 0 || setresgid(u->gid, u->gid, u->gid) < 0 ||
		    setresuid(u->uid, u->uid, u->uid) < 0) {
			/* Said on the output, which the journal keeps. */
			dprintf(1,
			        "dumpwatch: cannot become user %s to run the hook: %s (CAP_SETUID and CAP_SETGID are "
			        "needed)\n",
			        u->name, strerror(errno));
			_exit(126);
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(126);
	/* Set after the change of user, which clears it: a hook dies with us. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (chdir("/") < 0)
		_exit(126);
	umask(077);
	execve(prog, argv, env);
	_exit(127);
}

/* A hook that could not start: journaled, counted, freed. Returns r. */
static int not_run(struct hook_job *jb, int r, const char *err)
{
	struct hook_runner *h = jb->h;

	json_object_object_add(jb->rec, "error", json_object_new_string(err));
	log_warn("%s not run: %s", jb->what, err);
	if (h->journal)
		journal_write(h->journal, "hook-failed", json_object_get(jb->rec));
	json_object_put(jb->rec);
	free(jb);
	if (h->done)
		h->done(h->done_ctx, 0);
	return r;
}

int hook_run(struct hook_runner *h, const struct hook_cmd *cmd, int64_t timeout_ns, const struct hook_env *e, char *err,
             size_t errlen)
{
	char real[PATH_MAX], shown[HOOK_ARGV_BYTES + 64];
	char *argv[HOOK_ARGS_MAX + 1], *env[24];
	size_t n_env = 0;
	int pipefd[2];
	struct hook_job *jb;

	if (timeout_ns <= 0)
		timeout_ns = DW_DEFAULT_HOOK_TIMEOUT_NS;
	jb = calloc(1, sizeof(*jb));
	if (!jb) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	jb->h = h;
	jb->pidfd = jb->out_fd = -1;
	jb->timeout_ns = timeout_ns;
	hook_cmd_format(cmd, shown, sizeof(shown));
	jb->rec = json_object_new_object();
	json_object_object_add(jb->rec, "hook", json_object_new_string(e->event));
	if (e->rule)
		json_object_object_add(jb->rec, "rule", json_object_new_string(e->rule));
	json_object_object_add(jb->rec, "pid", json_object_new_int(e->pid));
	if (e->process)
		json_object_object_add(jb->rec, "process", json_object_new_string(e->process));
	json_object_object_add(jb->rec, "command", json_object_new_string(shown));
	json_object_object_add(jb->rec, "user", json_object_new_string(h->user.name));
	snprintf(jb->what, sizeof(jb->what), "%s hook of rule %s for pid %d", e->event, e->rule ? e->rule : "?",
	         (int)e->pid);

	int r = 0;
	if (!h->have_user) {
		snprintf(err, errlen,
		         "no user to run hooks as (user %s does not exist): start dumpwatch with --hook-user",
		         DW_DEFAULT_HOOK_USER);
		r = -ENOENT;
	} else if (h->n_jobs >= HOOK_RUNNING_MAX) {
		snprintf(err, errlen, "not started: %d hooks are running already", HOOK_RUNNING_MAX);
		r = -EBUSY;
	} else {
		r = trust_exec_path(hook_cmd_arg(cmd, 0), "hook", real, sizeof(real), err, errlen);
	}
	if (r == 0 && pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot start it: %s", strerror(-r));
	}
	if (r < 0)
		return not_run(jb, r, err);

	for (size_t i = 0; i < cmd->argc; i++)
		argv[i] = (char *)hook_cmd_arg(cmd, i);
	argv[cmd->argc] = NULL;
	size_t max_env = sizeof(env) / sizeof(env[0]);
	char num[32];
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
	pid_t pid = fork();
	if (pid == 0)
		child_exec(&h->user, real, argv, env, pipefd[1], e->dump_fd, e->ctx_fd);
	int fe = errno;
	env_free(env, n_env);
	close(pipefd[1]);
	jb->out_fd = pipefd[0];
	if (pid < 0) {
		snprintf(err, errlen, "cannot start it: %s", strerror(fe));
		close(jb->out_fd);
		return not_run(jb, -fe, err);
	}
	jb->pid = pid;
	h->jobs[h->n_jobs++] = jb;
	jb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (jb->pidfd < 0 || loop_add(h->loop, jb->pidfd, EPOLLIN, on_exit_fd, jb) < 0) {
		/* Not watchable: it is not let run unwatched. */
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		int status = 0;
		waitpid(pid, &status, 0);
		job_end(jb, status, "could not be watched (pidfd) and was killed");
		snprintf(err, errlen, "could not be watched (pidfd) and was killed");
		return -EIO;
	}
	loop_add(h->loop, jb->out_fd, EPOLLIN, on_output, jb);
	loop_timer_init(&jb->timer, on_timeout, jb);
	jb->deadline_ns = jb->start_ns + timeout_ns;
	loop_timer_arm(h->loop, &jb->timer, jb->deadline_ns);
	log_info("%s started as user %s: %s", jb->what, h->user.name, shown);
	return 0;
}

void hook_runner_free(struct hook_runner *h)
{
	if (!h)
		return;
	h->done = NULL;
	while (h->n_jobs) {
		struct hook_job *jb = h->jobs[h->n_jobs - 1];
		int status = 0;
		kill(-jb->pid, SIGKILL);
		kill(jb->pid, SIGKILL);
		waitpid(jb->pid, &status, 0);
		job_end(jb, status, "was killed: dumpwatch stopped");
	}
	free(h);
}
