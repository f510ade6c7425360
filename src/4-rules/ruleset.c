/* The rules directory: keeps the rules of every rule file in one directory in
 * force, follows changes through inotify (via libinotifytools), and reports
 * each load, rejection and removal to the caller. See ruleset.h for the
 * guarantees.
 *
 * State: one entry per rule file seen, in an array sorted by name (so the rules
 * in force come out in file name order); an entry holds the file's version in
 * force, if any, and the rule names that kept its latest version out, if that
 * was all that was wrong with it.
 *
 * Design notes on libinotifytools 3.22.6 (read in its inotifytools.c and
 * checked with a small program on this machine; the unit test covers the
 * directory cases):
 * - It keeps its inotify descriptor to itself and has no getter, and the loop
 *   must wait on it: the descriptor is the one whose /proc/self/fdinfo lists
 *   the library's first watch (library_fd). Its state (descriptor, watch
 *   tables, read buffer) is process-wide, so one ruleset may be open at a
 *   time in a process.
 * - inotifytools_next_event(0) blocks: it turns a timeout of 0 into -1, "wait
 *   for ever" (measured: still waiting after 2 s on an empty queue).
 *   inotifytools_next_events(0, 1) does not: it select()s with a zero timeout
 *   and returns NULL at once on an empty queue. It reads up to 64 KiB of events
 *   into a buffer of its own, which poll() on the descriptor cannot see, so
 *   events are always taken until it returns NULL: then the buffer is empty and
 *   the descriptor's readiness tells the whole truth. The select() also means
 *   the descriptor must be below FD_SETSIZE, which ruleset_open checks.
 * - The library ignores IN_IGNORED: when the kernel drops the directory's
 *   watch (the directory was deleted), the library keeps its record of it, and
 *   inotifytools_remove_watch_by_wd() on it fails and prints to stderr. Its
 *   index by file name then keeps the first record, so after the directory is
 *   created again inotifytools_wd_from_filename() returns the old descriptor.
 *   So the descriptor of a watch is taken from the kernel instead:
 *   inotify_add_watch() on an object that is already watched, with the same
 *   mask, returns the existing descriptor and changes nothing. Watches are
 *   removed with inotify_rm_watch(), which is silent; each past incarnation of
 *   the directory leaves one record (about 200 bytes) in the library until
 *   ruleset_free.
 * - Events are collected first (which names changed, whether the directory
 *   went or came), then each changed file is read once. A file is read on
 *   IN_CLOSE_WRITE and IN_MOVED_TO (an editor's save by rename) and dropped on
 *   IN_DELETE and IN_MOVED_FROM. IN_CREATE is not taken: a file being written is
 *   read when it is closed, not half-way (a hard link made into the directory
 *   is therefore seen only at the next reload), except a symbolic link, which
 *   is complete when it is created (a ConfigMap's links are made that way).
 * - IN_ATTRIB on a file already read reads it again, on the directory itself
 *   every file: a chown or chmod can make a file untrusted without writing
 *   it (a file never read is read when it is closed, as above). Such
 *   rereads, and those for a name starting with ".." (a ConfigMap's ..data
 *   swap: the files' links stay, what they lead to changes), are quiet: a
 *   file is reported only when its outcome differs from its last report (a
 *   hash of its text, or of its diagnostics), so a touch or an unrelated
 *   directory in the volume changes nothing.
 * - The parent directory is watched for the rules directory's creation or
 *   rename into place, so that a directory removed and created again, or
 *   missing at start, is loaded as soon as it appears. The directory is
 *   watched first and read second, so files created in a new directory before
 *   the watch was added are found by that read. If the parent itself is
 *   removed, a new rules directory is noticed only at the next reload. */
#include "dumpwatch/ruleset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inotifytools/inotify.h>
#include <inotifytools/inotifytools.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/rulefile_io.h"
#include "dumpwatch/trust.h"

#define DIR_EVENTS                                                                                                     \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB |        \
	 IN_CREATE | IN_ONLYDIR)
#define PARENT_EVENTS (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)
#define PENDING_MAX 1024 /* distinct changed names in one batch; beyond, the whole directory is read */
#define DIAG_LEN (2 * PATH_MAX + RULEFILE_MSG_MAX + 128)
#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL

typedef char diag_line_t[DIAG_LEN];
typedef char rule_name_t[RULE_NAME_MAX];

struct rs_file {
	char *name;              /* base name */
	struct file_rule *rules; /* the version in force (has_good) */
	size_t n_rules;
	int has_good;
	/* The names, in force in other files, that alone kept the latest
	 * version out: it is read again once they are all free. */
	rule_name_t *clash;
	size_t n_clash;
	uint64_t last_sig; /* of the last report: a quiet reread reports only a change */
};

struct ruleset {
	char dir[PATH_MAX];
	char parent[PATH_MAX];
	char base[NAME_MAX + 1];
	ruleset_report_fn fn;
	void *ctx;
	int fd;
	int parent_wd, dir_wd; /* -1: not watched */
	dev_t dir_dev;         /* the directory that dir_wd watches */
	ino_t dir_ino;
	int gone_reported; /* DIR_GONE was the last directory report */
	struct rs_file *files;
	size_t n_files;
	size_t n_rules;                  /* in force, across files */
	const struct file_rule **active; /* RULESET_RULES_MAX slots, so a rebuild cannot fail */
	size_t n_active;
	diag_line_t *diags; /* RULESET_DIAGS_MAX lines for a rejection */
	uint64_t generation;
	uint64_t active_sig;
	uid_t self;       /* trusted beside root (trust.h) */
	char **dump_dirs; /* the policy's, copied */
	size_t n_dump_dirs;
	int quiet; /* reports of unchanged outcomes are left out (see the design notes) */
};

static int ruleset_is_open; /* libinotifytools is process-wide: one ruleset at a time */

/* ---- hashing ---------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= FNV_PRIME;
	}
	return h;
}

/* A string with its terminator, so that "ab" then "c" differs from "a" then "bc". */
static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv(h, s, strlen(s) + 1);
}

static uint64_t fnv_i64(uint64_t h, int64_t v)
{
	return fnv(h, &v, sizeof(v));
}

uint64_t ruleset_rule_hash(const struct file_rule *r)
{
	const struct rule *ru = &r->rule;
	uint32_t n = ru->n_conds < RULE_MAX_CONDS ? ru->n_conds : RULE_MAX_CONDS;
	uint64_t h = FNV_OFFSET;

	h = fnv_str(h, ru->name);
	h = fnv_i64(h, n);
	for (uint32_t i = 0; i < n; i++)
		h = fnv_str(h, ru->conds[i].text);
	h = fnv_i64(h, ru->limits.max_dumps);
	h = fnv_i64(h, ru->limits.window_ns);
	h = fnv_i64(h, ru->limits.cooldown_ns);
	h = fnv_i64(h, ru->dump_type);
	h = fnv_i64(h, ru->heap_summary);
	h = fnv_str(h, r->filter.name);
	h = fnv_str(h, r->filter.cmdline);
	h = fnv_i64(h, r->filter.has_pid);
	h = fnv_i64(h, r->filter.has_pid ? r->filter.pid : 0);
	h = fnv_i64(h, r->filter.has_user);
	h = fnv_str(h, r->filter.has_user ? r->filter.user : "");
	h = fnv_str(h, r->dump_dir);
	h = fnv_str(h, r->name_template);
	return h;
}

/* ---- the rules in force ----------------------------------------------- */

/* Rebuilds the list of enabled rules in force. Returns 1 when it differs from
 * the last one (any field but the rule's position in its file), else 0. */
static int rebuild_active(struct ruleset *rs)
{
	uint64_t sig = FNV_OFFSET;
	size_t k = 0;

	for (size_t i = 0; i < rs->n_files; i++) {
		const struct rs_file *f = &rs->files[i];
		if (!f->has_good)
			continue;
		for (size_t j = 0; j < f->n_rules && k < RULESET_RULES_MAX; j++) {
			if (!f->rules[j].enabled)
				continue;
			rs->active[k++] = &f->rules[j];
			sig = fnv_i64(sig, (int64_t)ruleset_rule_hash(&f->rules[j]));
			sig = fnv_str(sig, f->rules[j].description);
		}
	}
	sig = fnv_i64(sig, (int64_t)k);
	rs->n_active = k;
	if (sig == rs->active_sig)
		return 0;
	rs->active_sig = sig;
	rs->generation++;
	return 1;
}

size_t ruleset_active(const struct ruleset *rs, const struct file_rule *const **ret)
{
	*ret = (const struct file_rule *const *)rs->active;
	return rs->n_active;
}

int ruleset_rule_path(const struct ruleset *rs, const struct file_rule *r, char *out, size_t outlen)
{
	for (size_t i = 0; i < rs->n_files; i++) {
		const struct rs_file *f = &rs->files[i];
		if (f->has_good && f->n_rules && r >= f->rules && r < f->rules + f->n_rules) {
			snprintf(out, outlen, "%s/%s", rs->dir, f->name);
			return 0;
		}
	}
	return -ENOENT;
}

uint64_t ruleset_generation(const struct ruleset *rs)
{
	return rs->generation;
}

int ruleset_fd(const struct ruleset *rs)
{
	return rs->fd;
}

/* ---- reports ---------------------------------------------------------- */

/* The full path of a file of the directory. It fits: the directory's length
 * leaves room for a name (ruleset_open). */
static void file_path(const struct ruleset *rs, const char *name, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", rs->dir, name) >= len)
		abort(); /* a programmer's mistake: see above */
}

static void report(struct ruleset *rs, enum ruleset_change_kind kind, const char *file)
{
	struct ruleset_change c = {.kind = kind, .dir = rs->dir, .file = file};

	rs->fn(rs->ctx, &c);
}

/* Reports a file's outcome, whose hash is sig; f is its entry (NULL when it
 * has none). A quiet reread leaves out an outcome equal to the last one. */
static void report_file(struct ruleset *rs, struct rs_file *f, const struct ruleset_change *c, uint64_t sig)
{
	if (f) {
		if (rs->quiet && f->last_sig == sig)
			return;
		f->last_sig = sig;
	}
	rs->fn(rs->ctx, c);
}

/* A rejection; f is the file's entry (NULL when it has none). diags[i] are
 * DIAG_LEN buffers. withdrawn: a refusal by the trust checks that took
 * that many rules out of force. */
static void report_rejected_ex(struct ruleset *rs, const char *path, struct rs_file *f, diag_line_t *diags, size_t n,
                               int refused, size_t withdrawn)
{
	const char *lines[RULESET_DIAGS_MAX];
	struct ruleset_change c = {.kind = RULESET_REJECTED, .dir = rs->dir, .file = path};
	uint64_t sig = fnv_str(FNV_OFFSET, "rejected");

	for (size_t i = 0; i < n && i < RULESET_DIAGS_MAX; i++) {
		lines[i] = diags[i];
		sig = fnv_str(sig, diags[i]);
	}
	c.diags = lines;
	c.n_diags = n < RULESET_DIAGS_MAX ? n : RULESET_DIAGS_MAX;
	c.kept_last_good = f && f->has_good;
	c.kept_rules = f && f->has_good ? f->n_rules : 0;
	c.refused = refused;
	c.withdrawn_rules = withdrawn;
	sig = fnv_i64(sig, c.kept_last_good);
	report_file(rs, f, &c, sig);
}

static void report_rejected(struct ruleset *rs, const char *path, struct rs_file *f, diag_line_t *diags, size_t n)
{
	report_rejected_ex(rs, path, f, diags, n, 0, 0);
}

/* A rejection with one "path: sentence" line (path may be the directory). */
static void report_problem(struct ruleset *rs, const char *path, struct rs_file *f, const char *sentence)
{
	diag_line_t line[1];

	snprintf(line[0], sizeof(line[0]), "%s: %s", path, sentence);
	report_rejected(rs, path, f, line, 1);
}

/* ---- per-file entries ------------------------------------------------- */

/* The index of name, or where it would go; *found says which. */
static size_t file_pos(const struct ruleset *rs, const char *name, int *found)
{
	size_t lo = 0, hi = rs->n_files;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(rs->files[mid].name, name);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

static struct rs_file *file_find(struct ruleset *rs, const char *name)
{
	int found;
	size_t i = file_pos(rs, name, &found);

	return found ? &rs->files[i] : NULL;
}

/* Adds an empty entry; NULL on out of memory. */
static struct rs_file *file_add(struct ruleset *rs, const char *name)
{
	int found;
	size_t i = file_pos(rs, name, &found);
	struct rs_file *v;
	char *copy;

	if (found)
		return &rs->files[i];
	copy = strdup(name);
	v = copy ? realloc(rs->files, (rs->n_files + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(copy);
		return NULL;
	}
	rs->files = v;
	memmove(&v[i + 1], &v[i], (rs->n_files - i) * sizeof(*v));
	memset(&v[i], 0, sizeof(*v));
	v[i].name = copy;
	rs->n_files++;
	return &v[i];
}

static void file_clear_clash(struct rs_file *f)
{
	free(f->clash);
	f->clash = NULL;
	f->n_clash = 0;
}

/* Drops the entry of name; reports REMOVED when it had rules in force. */
static void file_remove(struct ruleset *rs, const char *name)
{
	int found;
	size_t i = file_pos(rs, name, &found);
	struct rs_file *f;
	char path[PATH_MAX];
	int had;

	if (!found)
		return;
	f = &rs->files[i];
	had = f->has_good;
	if (had)
		rs->n_rules -= f->n_rules;
	file_path(rs, f->name, path, sizeof(path));
	free(f->name);
	free(f->rules);
	file_clear_clash(f);
	memmove(&rs->files[i], &rs->files[i + 1], (rs->n_files - i - 1) * sizeof(*f));
	rs->n_files--;
	if (had)
		report(rs, RULESET_REMOVED, path);
}

static void files_drop_all(struct ruleset *rs)
{
	while (rs->n_files > 0)
		file_remove(rs, rs->files[rs->n_files - 1].name);
}

/* The rule named name in force in a file other than self, or NULL. */
static const struct file_rule *name_in_force(const struct ruleset *rs, const struct rs_file *self, const char *name,
                                             const struct rs_file **where)
{
	for (size_t i = 0; i < rs->n_files; i++) {
		const struct rs_file *f = &rs->files[i];
		if (f == self || !f->has_good)
			continue;
		for (size_t j = 0; j < f->n_rules; j++)
			if (strcmp(f->rules[j].rule.name, name) == 0) {
				*where = f;
				return &f->rules[j];
			}
	}
	return NULL;
}

/* Rejects a parsed version whose names clash with rules in force elsewhere;
 * returns 0 when there is no clash (rules untouched). Frees rules otherwise. */
static int reject_clashes(struct ruleset *rs, struct rs_file *f, const char *path, struct file_rule *rules, size_t n)
{
	diag_line_t *diags = rs->diags;
	rule_name_t *clash = NULL;
	size_t nd = 0, nc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct rs_file *where;
		const struct file_rule *o = name_in_force(rs, f, rules[i].rule.name, &where);
		char opath[PATH_MAX];
		if (!o)
			continue;
		if (!clash && !(clash = calloc(n, sizeof(*clash)))) {
			free(rules);
			report_problem(rs, path, f, "out of memory");
			return -ENOMEM;
		}
		snprintf(clash[nc++], RULE_NAME_MAX, "%s", rules[i].rule.name);
		if (nd < RULESET_DIAGS_MAX) {
			file_path(rs, where->name, opath, sizeof(opath));
			rulefile_format_duplicate(path, &rules[i], opath, o->name_line, o->name_column, diags[nd++],
			                          DIAG_LEN);
		}
	}
	if (nc == 0)
		return 0;
	free(rules);
	file_clear_clash(f);
	f->clash = clash;
	f->n_clash = nc;
	report_rejected(rs, path, f, diags, nd);
	return -EEXIST;
}

/* Reads file name of the directory and applies it: LOADED, REJECTED, or,
 * when it is not there any more, the same as a deletion. 1 when LOADED. */
static int file_load(struct ruleset *rs, const char *name)
{
	diag_line_t *diags = rs->diags;
	struct rule_diag rd[RULESET_DIAGS_MAX];
	char path[PATH_MAX], msg[256], *text = NULL;
	struct file_rule *rules = NULL;
	struct rs_file *f = file_find(rs, name);
	size_t len = 0, nd = 0;
	int n, r;

	file_path(rs, name, path, sizeof(path));
	/* rulefile_read_trusted's sentence starts with the path: it is the
	 * diagnostic. ENOENT also when a link leads nowhere (any more). */
	r = rulefile_read_trusted(path, rs->self, &text, &len, diags[0], DIAG_LEN);
	if (r == -ENOENT) {
		file_remove(rs, name);
		return 0;
	}
	if (!f && rs->n_files >= RULEFILE_DIR_MAX) {
		free(text);
		snprintf(msg, sizeof(msg), "more than %d rule files in the directory; this one is ignored",
		         RULEFILE_DIR_MAX);
		report_problem(rs, path, NULL, msg);
		return 0;
	}
	if (!f && !(f = file_add(rs, name))) {
		free(text);
		report_problem(rs, path, NULL, "out of memory");
		return 0;
	}
	if (r == -EPERM) {
		/* Refused: whatever it held before is not to be trusted either. */
		size_t withdrawn = f->has_good ? f->n_rules : 0;
		if (f->has_good) {
			rs->n_rules -= f->n_rules;
			free(f->rules);
			f->rules = NULL;
			f->n_rules = 0;
			f->has_good = 0;
		}
		file_clear_clash(f);
		report_rejected_ex(rs, path, f, diags, 1, 1, withdrawn);
		return 0;
	}
	if (r < 0) {
		file_clear_clash(f);
		report_rejected(rs, path, f, diags, 1);
		return 0;
	}
	uint64_t sig = fnv(fnv_str(FNV_OFFSET, "loaded"), text, len);
	n = rulefile_parse(text, len, &rules, rd, RULESET_DIAGS_MAX, &nd);
	free(text);
	if (n >= 0 && rulefile_check_dump_dirs(rules, (size_t)n, (const char *const *)rs->dump_dirs, rs->n_dump_dirs,
	                                       rd, RULESET_DIAGS_MAX, &nd) < 0) {
		free(rules);
		rules = NULL;
		n = -EINVAL;
	}
	if (n < 0) {
		for (size_t i = 0; i < nd; i++)
			rulefile_format_diag(path, &rd[i], diags[i], DIAG_LEN);
		if (nd == 0)
			snprintf(diags[nd++], DIAG_LEN, "%s: %s", path, n == -ENOMEM ? "out of memory" : strerror(-n));
		file_clear_clash(f);
		report_rejected(rs, path, f, diags, nd);
		return 0;
	}
	size_t others = rs->n_rules - (f->has_good ? f->n_rules : 0);
	if (others + (size_t)n > RULESET_RULES_MAX) {
		free(rules);
		snprintf(msg, sizeof(msg), "its %d rules would bring the rules in force to more than %d", n,
		         RULESET_RULES_MAX);
		file_clear_clash(f);
		report_problem(rs, path, f, msg);
		return 0;
	}
	if (reject_clashes(rs, f, path, rules, (size_t)n) < 0)
		return 0;
	free(f->rules);
	f->rules = rules;
	f->n_rules = (size_t)n;
	f->has_good = 1;
	rs->n_rules = others + (size_t)n;
	file_clear_clash(f);
	struct ruleset_change c = {.kind = RULESET_LOADED, .dir = rs->dir, .file = path};
	c.rules = f->rules;
	c.n_rules = f->n_rules;
	report_file(rs, f, &c, sig);
	return 1;
}

/* Whether every name that kept f's latest version out is free now. */
static int clashes_gone(const struct ruleset *rs, const struct rs_file *f)
{
	const struct rs_file *where;

	if (f->n_clash == 0)
		return 0;
	for (size_t k = 0; k < f->n_clash; k++)
		if (name_in_force(rs, f, f->clash[k], &where))
			return 0;
	return 1;
}

/* Files whose latest version was kept out only by names in force elsewhere
 * are read again once all those names are free. A file taken that way may
 * free names of its own older version, so passes go on until one takes
 * nothing; each file is read at most once per pass, and a file read again
 * either goes in or waits for names that are in force now. */
static void retry_clashes(struct ruleset *rs)
{
	char name[NAME_MAX + 1];
	int again = 1;

	for (size_t pass = 0; again && pass <= rs->n_files; pass++) {
		size_t i = 0;
		again = 0;
		while (i < rs->n_files) {
			int found;
			if (!clashes_gone(rs, &rs->files[i])) {
				i++;
				continue;
			}
			snprintf(name, sizeof(name), "%s", rs->files[i].name);
			again |= file_load(rs, name); /* may drop the entry when the file is gone */
			i = file_pos(rs, name, &found) + (found ? 1 : 0);
		}
	}
}

/* ---- watches and the directory ---------------------------------------- */

/* Watches path through the library and takes the descriptor from the kernel
 * (see the design notes). 0 or -errno. */
static int watch_path(struct ruleset *rs, const char *path, uint32_t mask, int *ret_wd)
{
	int wd;

	if (!inotifytools_watch_file(path, (int)mask)) {
		int e = inotifytools_error();
		return e > 0 ? -e : -EIO;
	}
	wd = inotify_add_watch(rs->fd, path, mask);
	if (wd < 0)
		return -errno;
	*ret_wd = wd;
	return 0;
}

static void rules_dir_unwatch(struct ruleset *rs)
{
	if (rs->dir_wd >= 0)
		(void)inotify_rm_watch(rs->fd, rs->dir_wd); /* fails harmlessly when the kernel dropped it */
	rs->dir_wd = -1;
}

/* Starts watching the directory. 0, or -errno (-ENOENT, -ENOTDIR: not there). */
static int rules_dir_watch(struct ruleset *rs)
{
	struct stat st;
	int r = watch_path(rs, rs->dir, DIR_EVENTS, &rs->dir_wd);

	if (r < 0)
		return r;
	if (stat(rs->dir, &st) < 0) {
		r = -errno;
		rules_dir_unwatch(rs);
		return r;
	}
	rs->dir_dev = st.st_dev;
	rs->dir_ino = st.st_ino;
	return 0;
}

/* The directory is not there (any more): every rule goes. announce reports
 * DIR_GONE even when it was the last report (open, reload). */
static void dir_lost(struct ruleset *rs, int announce)
{
	rules_dir_unwatch(rs);
	files_drop_all(rs);
	if (announce || !rs->gone_reported)
		report(rs, RULESET_DIR_GONE, NULL);
	rs->gone_reported = 1;
}

/* Reads every file of the (watched) directory: new and changed files are
 * read, files no longer there are dropped. */
static void load_all(struct ruleset *rs)
{
	char **names = NULL, msg[128];
	size_t n = 0, k = 0;
	int truncated = 0, r;

	r = rulefile_list_dir(rs->dir, &names, &n, &truncated);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cannot read the directory: %s", strerror(-r));
		report_problem(rs, rs->dir, NULL, msg);
		return;
	}
	if (truncated) {
		snprintf(msg, sizeof(msg), "more than %d rule files; only %d of them are read", RULEFILE_DIR_MAX,
		         RULEFILE_DIR_MAX);
		report_problem(rs, rs->dir, NULL, msg);
	}
	/* Both lists are sorted: drop the entries whose file is not listed. */
	for (size_t i = 0; i < rs->n_files;) {
		int c = 1;
		while (k < n && (c = strcmp(names[k], rs->files[i].name)) < 0)
			k++;
		if (k < n && c == 0)
			i++;
		else
			file_remove(rs, rs->files[i].name);
	}
	for (size_t i = 0; i < n; i++)
		file_load(rs, names[i]);
	rulefile_free_names(names, n);
}

/* Brings the watches in line with the file system, then reads the whole
 * directory (if it is there). announce: as at open or reload. */
static void sync_dir(struct ruleset *rs, int announce)
{
	struct stat st;
	int there = stat(rs->dir, &st) == 0 && S_ISDIR(st.st_mode), r;

	if (rs->parent_wd < 0)
		(void)watch_path(rs, rs->parent, PARENT_EVENTS, &rs->parent_wd);
	/* Gone, or another directory (a symbolic link changed, a rename over it). */
	if (rs->dir_wd >= 0 && (!there || st.st_dev != rs->dir_dev || st.st_ino != rs->dir_ino))
		rules_dir_unwatch(rs);
	if (rs->dir_wd < 0) {
		r = rules_dir_watch(rs);
		if (r < 0) {
			if (r != -ENOENT && r != -ENOTDIR) {
				char msg[128];
				snprintf(msg, sizeof(msg), "cannot watch the directory: %s", strerror(-r));
				report_problem(rs, rs->dir, NULL, msg);
			}
			dir_lost(rs, announce);
			return;
		}
		if (rs->gone_reported)
			report(rs, RULESET_DIR_BACK, NULL);
		rs->gone_reported = 0;
	}
	load_all(rs);
}

/* ---- events ----------------------------------------------------------- */

/* What one batch of events says. */
struct batch {
	int dir_gone;   /* the watched directory was deleted, moved or unmounted */
	int dir_there;  /* the parent saw the directory's name created or moved in */
	int full;       /* events were lost, or too many names changed: read it all */
	int parent_off; /* the kernel dropped the parent's watch */
	int recheck;    /* read every file again, quietly: the directory's owner or
	                   mode, or a ".." name (a ConfigMap update), changed */
	struct pending {
		char *name; /* a rule file name that changed, each once */
		int loud;   /* written, created or renamed, not only its attributes */
	} * names;
	size_t n;
};

static void batch_add(struct batch *b, const char *name, int loud)
{
	struct pending *v;

	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->names[i].name, name) == 0) {
			b->names[i].loud |= loud;
			return;
		}
	if (b->n == PENDING_MAX) {
		b->full = 1;
		return;
	}
	v = realloc(b->names, (b->n + 1) * sizeof(*v));
	if (!v) {
		b->full = 1;
		return;
	}
	b->names = v;
	v[b->n].name = strdup(name);
	v[b->n].loud = loud;
	if (!v[b->n].name)
		b->full = 1;
	else
		b->n++;
}

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->names[i].name);
	free(b->names);
}

/* Whether name in the directory is a symbolic link (complete once created). */
static int is_link(const struct ruleset *rs, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	file_path(rs, name, path, sizeof(path));
	return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Takes every pending event (see the design notes on why all of them).
 * 0, or -errno when reading inotify failed. */
static int collect(struct ruleset *rs, struct batch *b)
{
	for (;;) {
		struct inotify_event *ev = inotifytools_next_events(0, 1);
		if (!ev) {
			int e = inotifytools_error();
			/* NULL with no error: the queue is empty. */
			return e && e != EINTR && e != EAGAIN ? -e : 0;
		}
		if (ev->mask & IN_Q_OVERFLOW) {
			b->full = 1;
		} else if (ev->wd == rs->parent_wd) {
			if (ev->mask & IN_IGNORED)
				b->parent_off = 1;
			else if (ev->len && strcmp(ev->name, rs->base) == 0)
				b->dir_there = 1;
		} else if (ev->wd == rs->dir_wd) {
			if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT))
				b->dir_gone = 1;
			else if (!ev->len)
				b->recheck |= (ev->mask & IN_ATTRIB) != 0; /* the directory's own owner or mode */
			else if (ev->name[0] == '.' && ev->name[1] == '.')
				b->recheck = 1; /* ..data, ..data_tmp, ..TIMESTAMP */
			else if (!rulefile_is_rule_file_name(ev->name))
				continue;
			else if (ev->mask & IN_CREATE) {
				if (is_link(rs, ev->name))
					batch_add(b, ev->name, 1);
			} else if (ev->mask & ~(uint32_t)IN_ATTRIB) {
				batch_add(b, ev->name, 1);
			} else if (file_find(rs, ev->name)) {
				/* Attributes alone: only a file already read can have
				 * become untrusted; a new one (maybe half-written) is
				 * read when it is closed. */
				batch_add(b, ev->name, 0);
			}
		}
		/* Any other descriptor is a past incarnation of the directory. */
	}
}

/* One pass: events, then the changes they call for. full: read everything. */
static int run(struct ruleset *rs, int full)
{
	struct batch b = {0};
	int r = collect(rs, &b);

	if (b.parent_off)
		rs->parent_wd = -1;
	if (b.dir_gone && rs->dir_wd >= 0)
		dir_lost(rs, 0);
	if (full || b.full || b.dir_there || b.dir_gone) {
		sync_dir(rs, full);
	} else if (rs->dir_wd >= 0) {
		for (size_t i = 0; i < b.n; i++) {
			rs->quiet = !b.names[i].loud;
			file_load(rs, b.names[i].name);
		}
		rs->quiet = 1;
		if (b.recheck)
			load_all(rs);
		rs->quiet = 0;
	}
	batch_free(&b);
	retry_clashes(rs);
	int changed = rebuild_active(rs);
	return r < 0 && !full ? r : changed;
}

int ruleset_process(struct ruleset *rs)
{
	return run(rs, 0);
}

int ruleset_reload(struct ruleset *rs)
{
	return run(rs, 1);
}

/* ---- open and free ---------------------------------------------------- */

/* libinotifytools keeps its inotify descriptor to itself (a static of
 * inotifytools.c, no getter), and the loop must sleep on it until an event
 * comes: the one thing its API cannot give. It is the inotify descriptor
 * whose /proc/self/fdinfo lists the watch the library just added, that
 * watch's wd on the parent's inode; everything else (watching, reading
 * events) goes through the library. The descriptor, or -errno. */
static int library_fd(int wd, ino_t ino)
{
	DIR *d = opendir("/proc/self/fdinfo");
	struct dirent *de;
	int found = -ENOENT;

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char path[64 + NAME_MAX], buf[4096];
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "inotify wd:%x ino:%lx sdev:%x mask:..." a line per watch. */
		for (const char *l = strstr(buf, "inotify wd:"); l; l = strstr(l + 1, "inotify wd:")) {
			unsigned w;
			unsigned long long i;
			if (sscanf(l, "inotify wd:%x ino:%llx", &w, &i) == 2 && (int)w == wd && (ino_t)i == ino) {
				if (found >= 0) {
					closedir(d);
					return -EBUSY; /* two: cannot tell which */
				}
				found = atoi(de->d_name);
			}
		}
	}
	closedir(d);
	return found;
}

/* Initialises libinotifytools with its first watch, the parent directory,
 * and finds its descriptor (see library_fd). 0 or -errno with a sentence in
 * err. */
static int inotify_start(struct ruleset *rs, char *err, size_t errlen)
{
	struct stat st;
	int wd, fd;

	if (!inotifytools_initialize()) {
		int e = inotifytools_error() > 0 ? inotifytools_error() : ENOSYS;
		snprintf(err, errlen, "cannot start inotify to watch %s: %s", rs->dir, strerror(e));
		return -e;
	}
	/* The library keeps a directory's name with a '/' at its end. */
	char slashed[sizeof(rs->parent) + 1];
	snprintf(slashed, sizeof(slashed), "%s%s", rs->parent, strcmp(rs->parent, "/") == 0 ? "" : "/");
	if (!inotifytools_watch_file(rs->parent, (int)PARENT_EVENTS) || stat(rs->parent, &st) < 0 ||
	    ((wd = inotifytools_wd_from_filename(slashed)) < 0 &&
	     (wd = inotifytools_wd_from_filename(rs->parent)) < 0)) {
		int e = inotifytools_error() > 0 ? inotifytools_error() : errno ? errno : EIO;
		snprintf(err, errlen, "cannot watch %s: %s", rs->parent, strerror(e));
		inotifytools_cleanup();
		return -e;
	}
	fd = library_fd(wd, st.st_ino);
	if (fd < 0) {
		snprintf(err, errlen, "cannot find libinotifytools' inotify descriptor in /proc/self/fdinfo: %s",
		         strerror(-fd));
		inotifytools_cleanup();
		return fd;
	}
	if (fd >= FD_SETSIZE) {
		snprintf(err, errlen, "inotify descriptor %d is too high for libinotifytools (it uses select())", fd);
		inotifytools_cleanup();
		return -EMFILE;
	}
	/* Not inherited by dump helpers; never blocking a read. */
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	rs->fd = fd;
	rs->parent_wd = wd;
	return 0;
}

/* Splits dir into rs->dir (without trailing slashes), parent and base. */
static int split_dir(struct ruleset *rs, const char *dir, char *err, size_t errlen)
{
	size_t l = strlen(dir);
	char *slash;

	if (dir[0] != '/' || l >= sizeof(rs->dir) - NAME_MAX - 2) {
		snprintf(err, errlen, "the rules directory must be an absolute path of at most %d bytes: %s",
		         (int)(sizeof(rs->dir) - NAME_MAX - 3), dir);
		return -EINVAL;
	}
	memcpy(rs->dir, dir, l + 1);
	while (l > 1 && rs->dir[l - 1] == '/')
		rs->dir[--l] = '\0';
	slash = strrchr(rs->dir, '/');
	if (!slash[1] || strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0) {
		snprintf(err, errlen, "the rules directory must name a directory below another: %s", dir);
		return -EINVAL;
	}
	snprintf(rs->base, sizeof(rs->base), "%s", slash + 1);
	if (slash == rs->dir)
		snprintf(rs->parent, sizeof(rs->parent), "/");
	else
		snprintf(rs->parent, sizeof(rs->parent), "%.*s", (int)(slash - rs->dir), rs->dir);
	return 0;
}

/* Copies the policy's dump directories. 0 or -ENOMEM. */
static int copy_policy(struct ruleset *rs, const struct ruleset_policy *policy)
{
	size_t n = policy ? policy->n_dump_dirs : 0;

	if (n == 0)
		return 0;
	rs->dump_dirs = calloc(n, sizeof(*rs->dump_dirs));
	if (!rs->dump_dirs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		rs->dump_dirs[i] = strdup(policy->dump_dirs[i]);
		if (!rs->dump_dirs[i])
			return -ENOMEM;
		rs->n_dump_dirs++;
	}
	return 0;
}

static void free_policy(struct ruleset *rs)
{
	for (size_t i = 0; i < rs->n_dump_dirs; i++)
		free(rs->dump_dirs[i]);
	free(rs->dump_dirs);
}

int ruleset_open(const char *dir, const struct ruleset_policy *policy, ruleset_report_fn fn, void *ctx,
                 struct ruleset **ret, char *err, size_t errlen)
{
	struct ruleset *rs;
	struct stat st;
	int r;

	*ret = NULL;
	if (ruleset_is_open) {
		snprintf(err, errlen, "a rules directory is already open in this process (libinotifytools is global)");
		return -EBUSY;
	}
	rs = calloc(1, sizeof(*rs));
	if (rs) {
		rs->active = calloc(RULESET_RULES_MAX, sizeof(*rs->active));
		rs->diags = calloc(RULESET_DIAGS_MAX, sizeof(*rs->diags));
	}
	if (!rs || !rs->active || !rs->diags || copy_policy(rs, policy) < 0) {
		if (rs) {
			free(rs->active);
			free(rs->diags);
			free_policy(rs);
		}
		free(rs);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rs->self = geteuid();
	rs->fn = fn;
	rs->ctx = ctx;
	rs->fd = rs->dir_wd = rs->parent_wd = -1;
	r = split_dir(rs, dir, err, errlen);
	if (r < 0)
		goto fail;
	if (stat(rs->dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "the rules directory %s is not a directory", rs->dir);
		r = -ENOTDIR;
		goto fail;
	}
	if (stat(rs->parent, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "the rules directory's parent %s does not exist", rs->parent);
		r = -ENOENT;
		goto fail;
	}
	r = inotify_start(rs, err, errlen);
	if (r < 0)
		goto fail;
	/* A directory that is there but cannot be watched is an error at start;
	 * one that is missing is not. */
	r = rules_dir_watch(rs);
	if (r < 0 && r != -ENOENT && r != -ENOTDIR) {
		snprintf(err, errlen, "cannot watch %s: %s", rs->dir, strerror(-r));
		goto fail_inotify;
	}
	ruleset_is_open = 1;
	sync_dir(rs, 1);
	retry_clashes(rs);
	rebuild_active(rs);
	*ret = rs;
	return 0;

fail_inotify:
	inotifytools_cleanup();
fail:
	free(rs->active);
	free(rs->diags);
	free_policy(rs);
	free(rs);
	return r;
}

void ruleset_free(struct ruleset *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n_files; i++) {
		free(rs->files[i].name);
		free(rs->files[i].rules);
		free(rs->files[i].clash);
	}
	free(rs->files);
	free(rs->active);
	free(rs->diags);
	free_policy(rs);
	/* Closes the descriptor. The library's read buffer outlives this, but
	 * it is empty: events are always read until there are none. */
	inotifytools_cleanup();
	ruleset_is_open = 0;
	free(rs);
}
