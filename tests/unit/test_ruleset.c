/* Unit tests for ruleset.c against real inotify in a temporary directory under
 * /tmp: initial load, edits (good, bad, fixed), deletion, save by rename,
 * rename out, a name defined in two files (and the second file taken once the
 * first lets go), disabled rules, the directory removed, moved away and
 * created again, a directory missing at open, reload, generations, the rule
 * hash, open errors, files and directories others could change (refused,
 * withdrawn, taken back), a Kubernetes ConfigMap volume updated by its ..data
 * swap, dump.dir outside the policy's directories, and no descriptor left
 * behind by open/free. Every wait is a poll() of at most 2 s on ruleset_fd. */
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/ruleset.h"

#define WAIT_MS 2000
#define REC_MAX 64

/* ---- what the callback saw -------------------------------------------- */

struct rec {
	enum ruleset_change_kind kind;
	char file[64]; /* base name; "" for DIR_* */
	size_t n_rules;
	size_t n_diags;
	char diag[1200]; /* the first */
	int kept_last_good;
	size_t kept_rules;
	int refused;
	size_t withdrawn_rules;
};

static struct rec recs[REC_MAX];
static size_t n_recs;

static void on_change(void *ctx, const struct ruleset_change *c)
{
	struct rec *r;

	(void)ctx;
	if (n_recs == REC_MAX)
		return;
	r = &recs[n_recs++];
	memset(r, 0, sizeof(*r));
	r->kind = c->kind;
	if (c->file) {
		const char *slash = strrchr(c->file, '/');
		snprintf(r->file, sizeof(r->file), "%s", slash ? slash + 1 : c->file);
	}
	r->n_rules = c->n_rules;
	r->n_diags = c->n_diags;
	if (c->n_diags)
		snprintf(r->diag, sizeof(r->diag), "%s", c->diags[0]);
	r->kept_last_good = c->kept_last_good;
	r->kept_rules = c->kept_rules;
	r->refused = c->refused;
	r->withdrawn_rules = c->withdrawn_rules;
}

/* The one report for file (NULL: for the directory) of that kind, or NULL when
 * there is none or more than one. */
static const struct rec *rec_find(enum ruleset_change_kind kind, const char *file)
{
	const struct rec *found = NULL;

	for (size_t i = 0; i < n_recs; i++)
		if (recs[i].kind == kind && strcmp(recs[i].file, file ? file : "") == 0) {
			if (found)
				return NULL;
			found = &recs[i];
		}
	return found;
}

/* ---- the directory ---------------------------------------------------- */

static char top[256], dir[320];

static void put(const char *name, const char *text)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK_MSG(fd >= 0, "%s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static void del(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK_MSG(unlink(path) == 0, "%s: %s", path, strerror(errno));
}

static void mv(const char *from, const char *to)
{
	CHECK_MSG(rename(from, to) == 0, "%s -> %s: %s", from, to, strerror(errno));
}

static void in_dir(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (!d) {
		unlink(path);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		char sub[1024];
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		rm_tree(sub);
	}
	closedir(d);
	rmdir(path);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the one opendir holds */
}

/* Waits (bounded) for the descriptor and processes what is pending. */
static int step(struct ruleset *rs)
{
	struct pollfd p = {.fd = ruleset_fd(rs), .events = POLLIN};

	n_recs = 0;
	if (poll(&p, 1, WAIT_MS) != 1)
		return -ETIMEDOUT;
	return ruleset_process(rs);
}

/* Whether the descriptor is readable right now. */
static int readable(struct ruleset *rs)
{
	struct pollfd p = {.fd = ruleset_fd(rs), .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

static struct ruleset *open_rs_policy(const struct ruleset_policy *policy)
{
	struct ruleset *rs = NULL;
	char err[512] = "";
	int r;

	n_recs = 0;
	r = ruleset_open(dir, policy, on_change, NULL, &rs, err, sizeof(err));
	CHECK_MSG(r == 0, "ruleset_open: %d %s", r, err);
	return rs;
}

static struct ruleset *open_rs(void)
{
	struct ruleset *rs = NULL;
	char err[512] = "";
	int r;

	n_recs = 0;
	r = ruleset_open(dir, NULL, on_change, NULL, &rs, err, sizeof(err));
	CHECK_MSG(r == 0, "ruleset_open: %d %s", r, err);
	return rs;
}

/* The names of the enabled rules in force, comma-separated. */
static const char *active_names(const struct ruleset *rs)
{
	static char buf[1024];
	const struct file_rule *const *a;
	size_t n = ruleset_active(rs, &a);

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(buf);
		snprintf(buf + l, sizeof(buf) - l, "%s%s", i ? "," : "", a[i]->rule.name);
	}
	return buf;
}

#define RULE(name) "{\"name\": \"" name "\", \"when\": \"heap-size > 100MB\"}\n"

static void setup(const char *tag)
{
	snprintf(top, sizeof(top), "/tmp/dw-ruleset-%s-%d", tag, (int)getpid());
	rm_tree(top);
	CHECK(mkdir(top, 0755) == 0);
	snprintf(dir, sizeof(dir), "%s/rules.d", top);
	CHECK(mkdir(dir, 0755) == 0);
}

/* ---- scenarios -------------------------------------------------------- */

static void test_edits(void)
{
	const struct rec *rc;
	struct ruleset *rs;
	uint64_t gen;
	char path[512], path2[512];

	setup("edits");
	put("a.json", RULE("alpha"));
	put("b.json", "{\"rules\": [" RULE("beta") ", " RULE("gamma") "]}");
	/* Not rule files. */
	put(".hidden.json", RULE("hidden"));
	put("x.schema.json", "{}");
	put("notes.txt", "x");
	put("a.json~", RULE("backup"));
	put("a.json.swp", "x");

	rs = open_rs();
	if (!rs)
		return;
	CHECK(n_recs == 2);
	CHECK(n_recs == 2 && recs[0].kind == RULESET_LOADED && strcmp(recs[0].file, "a.json") == 0 &&
	      recs[0].n_rules == 1);
	CHECK(n_recs == 2 && recs[1].kind == RULESET_LOADED && strcmp(recs[1].file, "b.json") == 0 &&
	      recs[1].n_rules == 2);
	CHECK_STR(active_names(rs), "alpha,beta,gamma");
	gen = ruleset_generation(rs);
	CHECK(!readable(rs));

	/* A new file, written in place. */
	put("c.json", RULE("delta"));
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "c.json") && rec_find(RULESET_LOADED, "c.json")->n_rules == 1);
	CHECK_STR(active_names(rs), "alpha,beta,gamma,delta");
	CHECK(ruleset_generation(rs) == gen + 1);
	gen = ruleset_generation(rs);

	/* Broken: rejected, the last good version stays. */
	put("c.json", "{\"name\": \"delta\", \"when\": \"heap-size > 100MB\", \"limit\": {}}\n");
	CHECK(step(rs) == 0);
	rc = rec_find(RULESET_REJECTED, "c.json");
	CHECK(n_recs == 1 && rc != NULL);
	if (rc) {
		in_dir("c.json", path, sizeof(path));
		CHECK(rc->kept_last_good == 1 && rc->kept_rules == 1 && rc->n_diags == 1);
		CHECK_MSG(strncmp(rc->diag, path, strlen(path)) == 0 &&
		              strstr(rc->diag, ":1:48: unknown key \"limit\""),
		          "%s", rc->diag);
	}
	CHECK_STR(active_names(rs), "alpha,beta,gamma,delta");
	CHECK(ruleset_generation(rs) == gen);

	/* Fixed, with another rule. */
	put("c.json", RULE("epsilon"));
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "c.json"));
	CHECK_STR(active_names(rs), "alpha,beta,gamma,epsilon");
	CHECK(ruleset_generation(rs) == gen + 1);
	gen = ruleset_generation(rs);

	/* Three writes before we look: read once. */
	put("c.json", RULE("zeta"));
	put("c.json", RULE("eta"));
	put("c.json", RULE("theta"));
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "c.json"));
	CHECK_STR(active_names(rs), "alpha,beta,gamma,theta");
	gen = ruleset_generation(rs);

	/* Deleted. */
	del("c.json");
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_REMOVED, "c.json"));
	CHECK_STR(active_names(rs), "alpha,beta,gamma");
	CHECK(ruleset_generation(rs) == gen + 1);
	gen = ruleset_generation(rs);

	/* Save by rename: the temporary file is not a rule file. */
	put("d.json.tmp", RULE("iota"));
	in_dir("d.json.tmp", path, sizeof(path));
	in_dir("d.json", path2, sizeof(path2));
	mv(path, path2);
	CHECK(step(rs) == 1);
	CHECK_MSG(n_recs == 1 && rec_find(RULESET_LOADED, "d.json"), "%zu reports", n_recs);
	CHECK_STR(active_names(rs), "alpha,beta,gamma,iota");

	/* Renamed out of the directory. */
	snprintf(path, sizeof(path), "%s/outside.json", top);
	mv(path2, path);
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_REMOVED, "d.json"));
	CHECK_STR(active_names(rs), "alpha,beta,gamma");
	gen = ruleset_generation(rs);

	/* A disabled rule is loaded but not active: nothing in force changed. */
	put("f.json", "{\"name\": \"kappa\", \"when\": \"heap-size > 1GB\", \"enabled\": false}\n");
	CHECK(step(rs) == 0);
	CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "f.json") && rec_find(RULESET_LOADED, "f.json")->n_rules == 1);
	CHECK_STR(active_names(rs), "alpha,beta,gamma");
	CHECK(ruleset_generation(rs) == gen);
	/* Enabling it is a change. */
	put("f.json", "{\"name\": \"kappa\", \"when\": \"heap-size > 1GB\", \"enabled\": true}\n");
	CHECK(step(rs) == 1);
	CHECK_STR(active_names(rs), "alpha,beta,gamma,kappa");
	CHECK(ruleset_generation(rs) == gen + 1);
	gen = ruleset_generation(rs);
	/* A description is part of the rule in force, not of its hash. */
	put("f.json", "{\"name\": \"kappa\", \"description\": \"d\", \"when\": \"heap-size > 1GB\"}\n");
	CHECK(step(rs) == 1);
	CHECK(ruleset_generation(rs) == gen + 1);
	gen = ruleset_generation(rs);

	/* Reload with nothing changed: every file reported again, nothing in force changed. */
	n_recs = 0;
	CHECK(ruleset_reload(rs) == 0);
	CHECK(n_recs == 3 && rec_find(RULESET_LOADED, "a.json") && rec_find(RULESET_LOADED, "b.json") &&
	      rec_find(RULESET_LOADED, "f.json"));
	CHECK(ruleset_generation(rs) == gen);

	/* Not readable as a rule file: one "path: sentence" line. */
	in_dir("g.json", path, sizeof(path));
	CHECK(mkdir(path, 0755) == 0);
	in_dir("g.json/x", path2, sizeof(path2));
	put("g.json/x", "x"); /* a close-after-write in a subdirectory is not ours */
	n_recs = 0;
	CHECK(ruleset_reload(rs) == 0);
	rc = rec_find(RULESET_REJECTED, "g.json");
	CHECK(rc && rc->n_diags == 1 && !rc->kept_last_good);
	if (rc) {
		char want[600];
		snprintf(want, sizeof(want), "%s: not a regular file", path);
		CHECK_STR(rc->diag, want);
	}
	unlink(path2);
	rmdir(path);
	CHECK(step(rs) == 0); /* IN_DELETE of g.json (a directory): dropped quietly */
	CHECK(n_recs == 0);

	/* Too large. */
	{
		size_t big = RULEFILE_SIZE_MAX + 10;
		char *text = malloc(big + 1);
		CHECK(text != NULL);
		if (text) {
			memset(text, ' ', big);
			text[big] = '\0';
			put("h.json", text);
			free(text);
			CHECK(step(rs) == 0);
			rc = rec_find(RULESET_REJECTED, "h.json");
			in_dir("h.json", path, sizeof(path));
			CHECK(rc && rc->n_diags == 1 && strncmp(rc->diag, path, strlen(path)) == 0 &&
			      strncmp(rc->diag + strlen(path), ": the file is too large", 23) == 0);
			del("h.json");
			CHECK(step(rs) == 0 && n_recs == 0);
		}
	}

	/* Only one ruleset at a time in a process. */
	{
		struct ruleset *second = NULL;
		char err[256] = "";
		CHECK(ruleset_open(dir, NULL, on_change, NULL, &second, err, sizeof(err)) == -EBUSY && second == NULL);
		CHECK(err[0] != '\0');
	}
	CHECK(!readable(rs));
	ruleset_free(rs);
	rm_tree(top);
}

static void test_duplicates(void)
{
	const struct rec *rc;
	struct ruleset *rs;
	char want[1200], pa[512], pb[512];

	setup("dup");
	put("a.json",
	    "{\"rules\": [\n  " RULE("one") ",\n  {\"name\": \"alpha\", \"when\": \"heap-size > 1GB\"}\n]}\n");
	rs = open_rs();
	if (!rs)
		return;
	CHECK_STR(active_names(rs), "one,alpha");

	/* b.json comes later and defines "alpha" too: it is rejected as a whole. */
	put("b.json", "{\"rules\": [" RULE("two") ",\n    {\"name\":   \"alpha\", \"when\": \"heap-size > 2GB\"}]}\n");
	CHECK(step(rs) == 0);
	rc = rec_find(RULESET_REJECTED, "b.json");
	CHECK(n_recs == 1 && rc && rc->n_diags == 1 && !rc->kept_last_good);
	in_dir("a.json", pa, sizeof(pa));
	in_dir("b.json", pb, sizeof(pb));
	snprintf(want, sizeof(want), "%s:3:16: rule name \"alpha\" is also defined at %s:4:12", pb, pa);
	if (rc)
		CHECK_STR(rc->diag, want);
	CHECK_STR(active_names(rs), "one,alpha");

	/* Also at reload; a.json keeps the name although b.json is not new. */
	n_recs = 0;
	CHECK(ruleset_reload(rs) == 0);
	rc = rec_find(RULESET_REJECTED, "b.json");
	CHECK(n_recs == 2 && rec_find(RULESET_LOADED, "a.json") && rc);
	if (rc)
		CHECK_STR(rc->diag, want);

	/* a.json lets go of the name: b.json is read again and taken. */
	put("a.json", RULE("one"));
	CHECK(step(rs) == 1);
	CHECK(n_recs == 2 && n_recs == 2 && recs[0].kind == RULESET_LOADED && strcmp(recs[0].file, "a.json") == 0 &&
	      recs[1].kind == RULESET_LOADED && strcmp(recs[1].file, "b.json") == 0);
	CHECK_STR(active_names(rs), "one,two,alpha");

	/* c.json clashes with b.json; deleting b.json brings c.json in. */
	put("c.json", "{\"name\": \"alpha\", \"when\": \"heap-size > 3GB\"}\n");
	CHECK(step(rs) == 0);
	CHECK(rec_find(RULESET_REJECTED, "c.json") != NULL);
	del("b.json");
	CHECK(step(rs) == 1);
	CHECK(n_recs == 2 && rec_find(RULESET_REMOVED, "b.json") && rec_find(RULESET_LOADED, "c.json"));
	CHECK_STR(active_names(rs), "one,alpha");
	{
		const struct file_rule *const *a;
		CHECK(ruleset_active(rs, &a) == 2 && a[1]->rule.conds[0].threshold == 3e9);
	}

	/* A cascade: a.json's new version waits for "beta" (in b.json) while its
	 * old one holds "one", which 0.json waits for. When b.json goes, a.json
	 * takes "beta" and lets go of "one", and then 0.json comes in. */
	put("b.json", RULE("beta"));
	CHECK(step(rs) == 1);
	put("a.json", RULE("beta"));
	CHECK(step(rs) == 0);
	rc = rec_find(RULESET_REJECTED, "a.json");
	CHECK(rc && rc->kept_last_good && rc->kept_rules == 1);
	put("0.json", "{\"name\": \"one\", \"when\": \"heap-size > 5GB\"}\n");
	CHECK(step(rs) == 0);
	CHECK(rec_find(RULESET_REJECTED, "0.json") != NULL);
	CHECK_STR(active_names(rs), "one,beta,alpha");
	del("b.json");
	CHECK(step(rs) == 1);
	CHECK_MSG(n_recs == 3 && recs[0].kind == RULESET_REMOVED && strcmp(recs[0].file, "b.json") == 0 &&
	              recs[1].kind == RULESET_LOADED && strcmp(recs[1].file, "a.json") == 0 &&
	              recs[2].kind == RULESET_LOADED && strcmp(recs[2].file, "0.json") == 0,
	          "%zu reports", n_recs);
	CHECK_STR(active_names(rs), "one,beta,alpha");
	{
		const struct file_rule *const *a;
		CHECK(ruleset_active(rs, &a) == 3 && a[0]->rule.conds[0].threshold == 5e9); /* 0.json's "one" */
	}
	ruleset_free(rs);
	rm_tree(top);
}

static void test_dir_gone_and_back(void)
{
	struct ruleset *rs;
	char moved[512], errpath[512];
	int saved_err, errfd;
	struct stat st = {0};

	setup("gone");
	put("a.json", RULE("alpha"));
	put("b.json", RULE("beta"));
	rs = open_rs();
	if (!rs)
		return;
	CHECK_STR(active_names(rs), "alpha,beta");

	/* The module and the library must write nothing to stderr: it goes to a
	 * file meanwhile, so the results are checked once it is back. */
	snprintf(errpath, sizeof(errpath), "%s/stderr", top);
	fflush(stderr);
	saved_err = dup(2);
	errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	dup2(errfd, 2);
	close(errfd);

	uint64_t gen = ruleset_generation(rs);
	del("a.json");
	del("b.json");
	CHECK(rmdir(dir) == 0);
	int r = step(rs);
	int gone = rec_find(RULESET_DIR_GONE, NULL) != NULL;
	int removed = rec_find(RULESET_REMOVED, "a.json") && rec_find(RULESET_REMOVED, "b.json");
	size_t n_gone = n_recs;
	const char *after_gone = active_names(rs);
	int empty = after_gone[0] == '\0';
	uint64_t gen_gone = ruleset_generation(rs);

	/* Created again with a file in it before we look. */
	CHECK(mkdir(dir, 0755) == 0);
	put("c.json", RULE("gamma"));
	int r_back = step(rs);
	int back = rec_find(RULESET_DIR_BACK, NULL) && rec_find(RULESET_LOADED, "c.json");
	size_t n_back = n_recs;
	int back_active = strcmp(active_names(rs), "gamma") == 0;

	/* The new directory is watched (not the old one's descriptor). */
	put("c.json", RULE("delta"));
	int r_edit = step(rs);
	int edited = n_recs == 1 && rec_find(RULESET_LOADED, "c.json") && strcmp(active_names(rs), "delta") == 0;

	/* Moved away: gone; moved back: back. */
	snprintf(moved, sizeof(moved), "%s/rules.old", top);
	mv(dir, moved);
	int r_mv = step(rs);
	int mv_gone = n_recs == 2 && rec_find(RULESET_REMOVED, "c.json") && rec_find(RULESET_DIR_GONE, NULL);
	{
		char p[600];
		snprintf(p, sizeof(p), "%s/c.json", moved);
		int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd >= 0) {
			(void)!write(fd, RULE("stale"), strlen(RULE("stale")));
			close(fd);
		}
	}
	int quiet_moved = step(rs) == -ETIMEDOUT || n_recs == 0; /* changes in the moved directory are not ours */
	mv(moved, dir);
	int r_mvback = step(rs);
	int mv_back = rec_find(RULESET_DIR_BACK, NULL) && rec_find(RULESET_LOADED, "c.json") &&
	              strcmp(active_names(rs), "stale") == 0;
	put("c.json", RULE("epsilon"));
	int r_edit2 = step(rs);
	int edited2 = n_recs == 1 && strcmp(active_names(rs), "epsilon") == 0;

	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);

	CHECK(r == 1 && gone && removed && n_gone == 3 && empty);
	CHECK(gen_gone == gen + 1);
	CHECK(r_back == 1 && back && n_back == 2 && back_active);
	CHECK(r_edit == 1 && edited);
	CHECK(r_mv == 1 && mv_gone);
	CHECK(quiet_moved);
	CHECK(r_mvback == 1 && mv_back);
	CHECK(r_edit2 == 1 && edited2);
	CHECK_MSG(stat(errpath, &st) == 0 && st.st_size == 0, "the module wrote %lld bytes to stderr (%s)",
	          (long long)st.st_size, errpath);
	CHECK(!readable(rs));
	ruleset_free(rs);
	if (st.st_size == 0)
		rm_tree(top);
}

static void test_missing_at_open(void)
{
	struct ruleset *rs;

	setup("missing");
	CHECK(rmdir(dir) == 0);
	rs = open_rs();
	if (!rs)
		return;
	CHECK(n_recs == 1 && rec_find(RULESET_DIR_GONE, NULL));
	CHECK_STR(active_names(rs), "");
	uint64_t gen = ruleset_generation(rs);

	/* A reload while it is missing says so again and changes nothing. */
	n_recs = 0;
	CHECK(ruleset_reload(rs) == 0);
	CHECK(n_recs == 1 && rec_find(RULESET_DIR_GONE, NULL));

	/* Created empty, then a file: loaded as it comes. */
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(step(rs) == 0);
	CHECK(n_recs == 1 && rec_find(RULESET_DIR_BACK, NULL));
	put("a.json", RULE("alpha"));
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "a.json"));
	CHECK_STR(active_names(rs), "alpha");
	CHECK(ruleset_generation(rs) == gen + 1);
	ruleset_free(rs);
	rm_tree(top);
}

/* More changed names in one batch than are kept one by one: the whole
 * directory is read instead. */
static void test_many(void)
{
	const struct file_rule *const *a;
	struct ruleset *rs;
	char name[32], text[128];
	const int n = 1100;

	setup("many");
	rs = open_rs();
	if (!rs)
		return;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "r%04d.json", i);
		snprintf(text, sizeof(text), "{\"name\": \"r%04d\", \"when\": \"heap-size > 1GB\"}", i);
		put(name, text);
	}
	CHECK(step(rs) == 1);
	CHECK(ruleset_active(rs, &a) == (size_t)n);
	CHECK(ruleset_active(rs, &a) == (size_t)n && strcmp(a[0]->rule.name, "r0000") == 0 &&
	      strcmp(a[n - 1]->rule.name, "r1099") == 0);
	CHECK(!readable(rs));
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "r%04d.json", i);
		del(name);
	}
	CHECK(step(rs) == 1);
	CHECK(ruleset_active(rs, &a) == 0);
	ruleset_free(rs);
	rm_tree(top);
}

static void test_open_errors(void)
{
	struct ruleset *rs = (struct ruleset *)&rs;
	char err[512], path[512];

	setup("errors");
	err[0] = '\0';
	CHECK(ruleset_open("relative/rules", NULL, on_change, NULL, &rs, err, sizeof(err)) == -EINVAL && !rs && err[0]);
	CHECK(ruleset_open("/", NULL, on_change, NULL, &rs, err, sizeof(err)) == -EINVAL && !rs);
	snprintf(path, sizeof(path), "%s/no/such", top);
	CHECK(ruleset_open(path, NULL, on_change, NULL, &rs, err, sizeof(err)) == -ENOENT && !rs);
	put("file.json", "{}");
	snprintf(path, sizeof(path), "%s/file.json", dir);
	CHECK(ruleset_open(path, NULL, on_change, NULL, &rs, err, sizeof(err)) == -ENOTDIR && !rs);
	/* A trailing slash is fine, and reports name files without it. */
	snprintf(path, sizeof(path), "%s//", dir);
	n_recs = 0;
	CHECK(ruleset_open(path, NULL, on_change, NULL, &rs, err, sizeof(err)) == 0 && rs);
	CHECK_MSG(n_recs == 1 && recs[0].kind == RULESET_REJECTED && recs[0].n_diags >= 1 &&
	              strncmp(recs[0].diag, dir, strlen(dir)) == 0 && recs[0].diag[strlen(dir)] == '/',
	          "%zu reports; %s", n_recs, n_recs ? recs[0].diag : "");
	ruleset_free(rs);
	ruleset_free(NULL);
	rm_tree(top);
}

/* Parses one rule for the hash tests. */
static int parse_one(const char *text, struct file_rule *out)
{
	struct file_rule *r = NULL;
	struct rule_diag d[4];
	size_t nd;
	int n = rulefile_parse(text, strlen(text), &r, d, 4, &nd);

	if (n != 1) {
		fprintf(stderr, "parse_one: %d %s\n", n, nd ? d[0].message : "");
		free(r);
		return -1;
	}
	*out = *r;
	free(r);
	return 0;
}

static void test_hash(void)
{
	static struct file_rule a, b;
	static const char base[] = "{\"name\": \"x\", \"description\": \"one\", \"when\": \"loh-size > 1GB\","
	                           " \"limits\": {\"cooldown\": \"5m\"}}";
	static const char desc[] = "{\"name\": \"x\", \"description\": \"two\", \"when\": \"loh-size > 1GB\","
	                           " \"limits\": {\"cooldown\": \"5m\"}, \"enabled\": false}";
	static const char cool[] = "{\"name\": \"x\", \"description\": \"one\", \"when\": \"loh-size > 1GB\","
	                           " \"limits\": {\"cooldown\": \"6m\"}}";

	CHECK(parse_one(base, &a) == 0 && parse_one(desc, &b) == 0);
	CHECK(ruleset_rule_hash(&a) == ruleset_rule_hash(&b)); /* description, enabled, position do not count */
	CHECK(parse_one(cool, &b) == 0);
	CHECK(ruleset_rule_hash(&a) != ruleset_rule_hash(&b));
	/* Fields are separated: "ab" + "c" is not "a" + "bc". */
	b = a;
	snprintf(a.filter.name, sizeof(a.filter.name), "ab");
	snprintf(a.filter.cmdline, sizeof(a.filter.cmdline), "c");
	snprintf(b.filter.name, sizeof(b.filter.name), "a");
	snprintf(b.filter.cmdline, sizeof(b.filter.cmdline), "bc");
	CHECK(ruleset_rule_hash(&a) != ruleset_rule_hash(&b));
	b = a;
	b.rule.limits.max_dumps++;
	CHECK(ruleset_rule_hash(&a) != ruleset_rule_hash(&b));
	b = a;
	snprintf(b.dump_dir, sizeof(b.dump_dir), "/var/tmp");
	CHECK(ruleset_rule_hash(&a) != ruleset_rule_hash(&b));
	b = a;
	b.line += 10;
	b.name_column += 3;
	CHECK(ruleset_rule_hash(&a) == ruleset_rule_hash(&b));
}

static void chmod_in(const char *name, mode_t mode)
{
	char path[512];

	in_dir(name, path, sizeof(path));
	CHECK_MSG(chmod(path, mode) == 0, "%s: %s", path, strerror(errno));
}

static void link_in(const char *name, const char *target)
{
	char path[512];

	in_dir(name, path, sizeof(path));
	CHECK_MSG(symlink(target, path) == 0, "%s: %s", path, strerror(errno));
}

/* Whether the one report for file is a refusal whose line starts with
 * "PATH: refused: " and names what. */
static int is_refusal(const char *file, const char *what, int withdrawn)
{
	const struct rec *rc = rec_find(RULESET_REJECTED, file);
	char want[1024], path[512];

	if (!rc)
		return 0;
	in_dir(file, path, sizeof(path));
	snprintf(want, sizeof(want), "%s: refused: %s", path, what);
	CHECK_MSG(strncmp(rc->diag, want, strlen(want)) == 0, "%s", rc->diag);
	return rc->refused && rc->n_diags == 1 && !rc->kept_last_good && rc->withdrawn_rules == (size_t)withdrawn &&
	       strncmp(rc->diag, want, strlen(want)) == 0;
}

/* Files and the directory that others could change: refused, their rules
 * withdrawn, taken back once fixed; a change of owner or mode alone is seen;
 * a touch changes nothing. */
static void test_trust(void)
{
	struct ruleset *rs;
	char path[512], what[1024];

	setup("trust");
	put("a.json", RULE("alpha"));
	put("b.json", RULE("beta"));
	chmod_in("b.json", 0666);
	rs = open_rs();
	if (!rs)
		return;
	in_dir("b.json", path, sizeof(path));
	snprintf(what, sizeof(what), "file %s is writable by group or others (mode 0666)", path);
	CHECK(n_recs == 2 && rec_find(RULESET_LOADED, "a.json") && is_refusal("b.json", what, 0));
	CHECK_STR(active_names(rs), "alpha");

	chmod_in("b.json", 0644);
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "b.json"));
	CHECK_STR(active_names(rs), "alpha,beta");

	/* Attributes that change nothing: no report. */
	in_dir("a.json", path, sizeof(path));
	CHECK(utimensat(AT_FDCWD, path, NULL, 0) == 0);
	CHECK(step(rs) == 0);
	CHECK(n_recs == 0);

	/* A good file made writable by others: withdrawn, not kept. */
	chmod_in("a.json", 0664);
	CHECK(step(rs) == 1);
	snprintf(what, sizeof(what), "file %s is writable by group or others (mode 0664)", path);
	CHECK(n_recs == 1 && is_refusal("a.json", what, 1));
	CHECK_STR(active_names(rs), "beta");
	chmod_in("a.json", 0644);
	CHECK(step(rs) == 1);
	CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "a.json"));

	/* The directory itself. */
	CHECK(chmod(dir, 0777) == 0);
	CHECK(step(rs) == 1);
	snprintf(what, sizeof(what), "directory %s is writable by group or others (mode 0777)", dir);
	CHECK(n_recs == 2 && is_refusal("a.json", what, 1) && is_refusal("b.json", what, 1));
	CHECK_STR(active_names(rs), "");
	CHECK(chmod(dir, 01777) == 0); /* sticky: others cannot rename or remove our files */
	CHECK(step(rs) == 1);
	CHECK(n_recs == 2 && rec_find(RULESET_LOADED, "a.json") && rec_find(RULESET_LOADED, "b.json"));
	CHECK(chmod(dir, 0755) == 0);
	CHECK(step(rs) == 0);
	CHECK(n_recs == 0);

	if (geteuid() == 0) {
		in_dir("a.json", path, sizeof(path));
		CHECK(chown(path, 65534, 65534) == 0);
		CHECK(step(rs) == 1);
		snprintf(what, sizeof(what), "file %s is owned by uid 65534, not by root", path);
		CHECK(n_recs == 1 && is_refusal("a.json", what, 1));
		CHECK(chown(path, 0, 0) == 0);
		CHECK(step(rs) == 1);
		CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "a.json"));
	}

	/* A new file whose mode is set before it is closed is not read half-way. */
	{
		static const char text[] = RULE("epsilon");
		int fd;
		in_dir("e.json", path, sizeof(path));
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		CHECK(fd >= 0);
		if (fd >= 0) {
			CHECK(write(fd, text, 10) == 10);
			CHECK(fchmod(fd, 0644) == 0);
			CHECK(step(rs) == 0);
			CHECK(n_recs == 0);
			CHECK(write(fd, text + 10, strlen(text) - 10) == (ssize_t)(strlen(text) - 10));
			close(fd);
			CHECK(step(rs) == 1);
			CHECK(n_recs == 1 && rec_find(RULESET_LOADED, "e.json"));
		}
		del("e.json");
		CHECK(step(rs) == 1);
	}

	/* A link made into the directory is taken when it is created; one
	 * that leads through a directory others can write is refused. */
	snprintf(path, sizeof(path), "%s/open", top);
	CHECK(mkdir(path, 0777) == 0 && chmod(path, 0777) == 0);
	snprintf(path, sizeof(path), "%s/open/c.json", top);
	{
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		if (f) {
			fputs(RULE("gamma"), f);
			fclose(f);
		}
	}
	link_in("c.json", "../open/c.json");
	CHECK(step(rs) == 0);
	snprintf(what, sizeof(what), "directory %s/open is writable by group or others (mode 0777)", top);
	CHECK(n_recs == 1 && is_refusal("c.json", what, 0));
	snprintf(path, sizeof(path), "%s/open", top);
	CHECK(chmod(path, 0755) == 0);
	/* Not watched: taken at the next reload. */
	n_recs = 0;
	CHECK(ruleset_reload(rs) == 1);
	CHECK(rec_find(RULESET_LOADED, "c.json") != NULL);
	CHECK_STR(active_names(rs), "alpha,beta,gamma");
	/* A dangling link is no file at all. */
	link_in("d.json", "nowhere.json");
	CHECK(step(rs) == 0);
	CHECK(n_recs == 0);

	ruleset_free(rs);
	rm_tree(top);
}

/* ConfigMap make_version: ..TS/ with the given files, then ..data swapped to it
 * by rename, as the kubelet's atomic writer does; the old version removed. */
static void cm_version(const char *ts, const char *old_ts, const char *const *names, const char *const *texts, size_t n)
{
	char path[512], from[512];

	in_dir(ts, path, sizeof(path));
	CHECK(mkdir(path, 0755) == 0);
	for (size_t i = 0; i < n; i++) {
		char rel[256];
		snprintf(rel, sizeof(rel), "%s/%s", ts, names[i]);
		put(rel, texts[i]);
	}
	link_in("..data_tmp", ts);
	in_dir("..data_tmp", from, sizeof(from));
	in_dir("..data", path, sizeof(path));
	mv(from, path);
	if (old_ts) {
		in_dir(old_ts, path, sizeof(path));
		rm_tree(path);
	}
}

/* A Kubernetes ConfigMap volume: the rule files are links into ..data, which
 * an update swaps; only the files whose content changed are reported. */
static void test_configmap(void)
{
	static const char *const names[] = {"x.json", "y.json", "z.json"};
	const char *v1[] = {RULE("cm-one"), RULE("other")};
	const char *v2[] = {RULE("cm-two"), RULE("other")};
	const char *v3[] = {RULE("cm-two"), RULE("other"), RULE("zed")};
	const char *v4[] = {RULE("cm-two")};
	struct ruleset *rs;

	setup("configmap");
	cm_version("..2026_11_23_10_00_00.1", NULL, names, v1, 2);
	link_in("x.json", "..data/x.json");
	link_in("y.json", "..data/y.json");
	rs = open_rs();
	if (!rs)
		return;
	CHECK(n_recs == 2 && rec_find(RULESET_LOADED, "x.json") && rec_find(RULESET_LOADED, "y.json"));
	CHECK_STR(active_names(rs), "cm-one,other");

	/* An update: x.json changes, y.json does not. */
	cm_version("..2026_11_23_10_05_00.2", "..2026_11_23_10_00_00.1", names, v2, 2);
	CHECK(step(rs) == 1);
	CHECK_MSG(n_recs == 1 && rec_find(RULESET_LOADED, "x.json"), "%zu reports", n_recs);
	CHECK_STR(active_names(rs), "cm-two,other");

	/* A key added: its link is made after the swap. */
	cm_version("..2026_11_23_10_10_00.3", "..2026_11_23_10_05_00.2", names, v3, 3);
	link_in("z.json", "..data/z.json");
	CHECK(step(rs) == 1);
	CHECK_MSG(n_recs == 1 && rec_find(RULESET_LOADED, "z.json"), "%zu reports", n_recs);
	CHECK_STR(active_names(rs), "cm-two,other,zed");

	/* Keys removed: their links go. */
	cm_version("..2026_11_23_10_15_00.4", "..2026_11_23_10_10_00.3", names, v4, 1);
	del("y.json");
	del("z.json");
	CHECK(step(rs) == 1);
	CHECK_MSG(n_recs == 2 && rec_find(RULESET_REMOVED, "y.json") && rec_find(RULESET_REMOVED, "z.json"),
	          "%zu reports", n_recs);
	CHECK_STR(active_names(rs), "cm-two");

	/* A bad update (a broken file in the new version): refused with its
	 * position, the last good rules stay; the next good update is taken. */
	const char *v5[] = {"{\"name\": \"cm-three\", \"when\": \"heap-size > \"}\n"};
	cm_version("..2026_11_23_10_20_00.5", "..2026_11_23_10_15_00.4", names, v5, 1);
	CHECK(step(rs) == 0);
	const struct rec *rc = rec_find(RULESET_REJECTED, "x.json");
	CHECK_MSG(n_recs == 1 && rc && rc->kept_last_good && !rc->refused, "%zu reports", n_recs);
	CHECK_STR(active_names(rs), "cm-two");
	const char *v6[] = {RULE("cm-three")};
	cm_version("..2026_11_23_10_25_00.6", "..2026_11_23_10_20_00.5", names, v6, 1);
	CHECK(step(rs) == 1);
	CHECK_MSG(n_recs == 1 && rec_find(RULESET_LOADED, "x.json"), "%zu reports", n_recs);
	CHECK_STR(active_names(rs), "cm-three");

	ruleset_free(rs);
	rm_tree(top);
}

/* A rule's dump.dir outside the policy's directories rejects its file like
 * any other error: the last good version stays. */
static void test_policy(void)
{
	const char *dirs[] = {"/var/dumps", "/srv/dumps"};
	struct ruleset_policy policy = {.dump_dirs = dirs, .n_dump_dirs = 2};
	const struct rec *rc;
	struct ruleset *rs;

	setup("policy");
	put("a.json", "{\"name\": \"a\", \"when\": \"heap-size > 100MB\", \"dump\": {\"dir\": \"/var/dumps/a\"}}\n");
	put("b.json", "{\"name\": \"b\", \"when\": \"heap-size > 100MB\", \"dump\": {\"dir\": \"/etc/cron.d\"}}\n");
	rs = open_rs_policy(&policy);
	if (!rs)
		return;
	rc = rec_find(RULESET_REJECTED, "b.json");
	CHECK(n_recs == 2 && rec_find(RULESET_LOADED, "a.json") && rc);
	if (rc) {
		CHECK(!rc->refused && !rc->kept_last_good && rc->n_diags == 1);
		CHECK_MSG(strstr(rc->diag, "b.json:1:60: dump dir \"/etc/cron.d\" is not inside an allowed dump "
		                           "directory (/var/dumps, /srv/dumps)") != NULL,
		          "%s", rc->diag);
	}
	put("a.json", "{\"name\": \"a\", \"when\": \"heap-size > 100MB\", \"dump\": {\"dir\": \"/var/dumps2\"}}\n");
	CHECK(step(rs) == 0);
	rc = rec_find(RULESET_REJECTED, "a.json");
	CHECK(n_recs == 1 && rc && rc->kept_last_good && !rc->refused);
	CHECK_STR(active_names(rs), "a");
	ruleset_free(rs);
	rm_tree(top);
}

int main(void)
{
	static void (*const scenarios[])(void) = {test_edits,           test_duplicates, test_dir_gone_and_back,
	                                          test_missing_at_open, test_many,       test_open_errors,
	                                          test_trust,           test_configmap,  test_policy};
	int fds = count_fds();

	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		scenarios[i]();
		/* Every open/free pair gives its descriptors back. */
		CHECK_MSG(count_fds() == fds, "scenario %zu: %d descriptors before, %d after", i, fds, count_fds());
	}
	test_hash();
	return check_done();
}
