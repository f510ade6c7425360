/* `dumpwatch report DIR` (context.h): the page of every dump context in a
 * directory, newest first, one card each (report_card.c).
 *
 * The report reads each context twice - once to learn when it fired, once to
 * write its card - so that only one parsed context is held at a time: 10000
 * contexts of a few hundred kB each would not fit in memory as json-c trees.
 * And it is bounded whatever the directory holds (struct context_limits):
 * the files are listed first, by name, size and modification time only; the
 * newest are read, as many bytes as read_max allows in each pass; the cards,
 * each built on its own, are kept while page_max holds them. What is left out
 * is named in one warning line. Everything goes through the directory's
 * descriptor, opened once: the directory's owner may swap it for a link. */
#include "dumpwatch/context.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context_shared.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/dumpctx.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/log.h"
#include "dumpwatch/text.h"

/* Why files were left out of the page (bits: one line says every reason). */
enum { LEFT_COUNT = 1, LEFT_READ = 2, LEFT_PAGE = 4 };

/* The count of contexts with an outcome dumpwatch does not write, after those
 * of enum dumpctx_outcome. */
#define OUTCOME_OTHER (DUMPCTX_FAILED + 1)

/* What became of a *.json file found in the directory. */
enum entry_state {
	ENT_LISTED,  /* not read (yet) */
	ENT_CONTEXT, /* a dump context, for the page */
	ENT_SKIPPED, /* not a context, or a broken one (warned about) */
	ENT_LEFT,    /* left out of the page by a limit */
	ENT_SHOWN,   /* on the page */
};

struct entry {
	char *name;            /* the file's name in the directory */
	struct timespec mtime; /* as listed */
	size_t size;           /* as listed: what reading it costs (0: a file that will not be read) */
	size_t bytes;          /* read in the first pass */
	int64_t fired_ms;      /* from the first pass */
	enum entry_state state;
	int cls; /* index into counts: an enum dumpctx_outcome, or OUTCOME_OTHER */
};

/* One report: the files listed, what became of them, what was left out. */
struct report {
	int dirfd;
	const char *shown; /* the directory, escaped, for warnings */
	const struct context_limits *lim;
	struct entry *ents; /* newest first by modification time */
	size_t n;
	size_t unnamed; /* files beyond count_max not kept, not even by name */
	int left_why;   /* LEFT_* */
	size_t n_left;  /* files left out, the unnamed included */
	size_t counts[OUTCOME_OTHER + 1];
	size_t n_shown;
};

/* Newest first by modification time; among equal times by name. */
static int mtime_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Newest first by the fire; among equal times by name, so the order is stable. */
static int fired_cmp(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;

	if (x->fired_ms != y->fired_ms)
		return x->fired_ms < y->fired_ms ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Whether name is one the report reads: "*.json", not hidden. */
static int json_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".json") == 0;
}

/* The files left out that keep their names for the warning, at least. */
#define LEFT_NAMED 64

/* Lists the *.json files of the directory with their modification times and
 * sizes (fstatat; nothing is opened), keeping the count_max newest and the
 * LEFT_NAMED newest after them (to name them): the array never holds more
 * than twice that, whatever the directory holds. Those beyond count_max are
 * marked left out. 0 or -errno with a sentence. */
static int list_dir(struct report *rp, char *err, size_t errlen)
{
	size_t keep = rp->lim->count_max, named = keep + LEFT_NAMED, cap = 2 * named;
	int fd = dup(rp->dirfd), e = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d || !(rp->ents = calloc(cap, sizeof(*rp->ents)))) {
		e = errno ? errno : ENOMEM;
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: cannot list: %s", rp->shown, strerror(e));
		return -e;
	}
	for (;;) {
		struct dirent *de;
		struct entry *en;
		struct stat st;

		errno = 0;
		de = readdir(d);
		if (!de) {
			e = errno;
			break;
		}
		if (!json_name(de->d_name))
			continue;
		if (rp->n == cap) {
			qsort(rp->ents, rp->n, sizeof(*rp->ents), mtime_cmp);
			for (size_t i = named; i < rp->n; i++)
				free(rp->ents[i].name);
			rp->unnamed += rp->n - named;
			rp->n = named;
		}
		en = &rp->ents[rp->n];
		memset(en, 0, sizeof(*en));
		/* A file that vanished, is not regular or is beyond file_max is
		 * not read: context_load says so, and it costs nothing. */
		if (fstatat(rp->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			en->mtime = st.st_mtim;
			if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size <= (uintmax_t)rp->lim->file_max)
				en->size = (size_t)st.st_size;
		}
		en->name = strdup(de->d_name);
		if (!en->name) {
			e = ENOMEM;
			break;
		}
		rp->n++;
	}
	closedir(d);
	if (e) {
		snprintf(err, errlen, "%s: cannot list: %s", rp->shown, strerror(e));
		return -e;
	}
	if (rp->n > 1)
		qsort(rp->ents, rp->n, sizeof(*rp->ents), mtime_cmp);
	for (size_t i = keep; i < rp->n; i++)
		rp->ents[i].state = ENT_LEFT;
	if (rp->n > keep || rp->unnamed) {
		rp->left_why |= LEFT_COUNT;
		rp->n_left += (rp->n > keep ? rp->n - keep : 0) + rp->unnamed;
	}
	return 0;
}

/* The first pass, newest file first: reads each, at most read_max bytes in
 * all, to learn whether it is a context, its outcome and when it fired; the
 * older files are left out. 0, or -ENOMEM with a sentence. */
static int first_pass(struct report *rp, char *err, size_t errlen)
{
	size_t total = 0;

	for (size_t i = 0; i < rp->n; i++) {
		struct entry *en = &rp->ents[i];
		struct json_object *ctx;
		char why[512], name[NAME_MAX * 4 + 1];
		int r, k;

		if (en->state != ENT_LISTED)
			continue;
		if (en->size > rp->lim->read_max - total) {
			for (; i < rp->n; i++)
				if (rp->ents[i].state == ENT_LISTED) {
					rp->ents[i].state = ENT_LEFT;
					rp->n_left++;
				}
			rp->left_why |= LEFT_READ;
			break;
		}
		r = context_load(rp->dirfd, en->name, 1, rp->lim->file_max, &ctx, &en->bytes, why, sizeof(why));
		/* What was read counts; a file that grew after it was listed
		 * takes the total past read_max by at most that file. */
		total = en->bytes > rp->lim->read_max - total ? rp->lim->read_max : total + en->bytes;
		if (r == -ENOMEM) {
			snprintf(err, errlen, "%s: out of memory", rp->shown);
			return r;
		}
		if (r < 0) {
			en->state = ENT_SKIPPED;
			if (r != -ENOMSG)
				log_warn("%s/%s: %s, skipped", rp->shown, text_escape_str(en->name, name, sizeof(name)),
				         why);
			continue;
		}
		en->state = ENT_CONTEXT;
		cx_time_ms(ctx, DUMPCTX_KEY_FIRED_UNIX_MS, &en->fired_ms);
		k = cx_outcome_of(ctx);
		en->cls = k < 0 ? OUTCOME_OTHER : k;
		json_object_put(ctx);
	}
	return 0;
}

/* The card of en, read again, to out; *ret_bytes gets what was read. */
static void put_card(FILE *out, const struct report *rp, const struct entry *en, const char *prefix, size_t *ret_bytes)
{
	struct json_object *ctx;
	char why[512];

	if (context_load(rp->dirfd, en->name, 1, rp->lim->file_max, &ctx, ret_bytes, why, sizeof(why)) < 0) {
		fputs("<article class=\"card other\"><h2>", out);
		cx_h(out, en->name);
		fputs("</h2><p class=\"error\">could not be read again: ", out);
		cx_h(out, why);
		fputs("</p></article>\n", out);
		return;
	}
	cx_html_card(out, ctx, en->name, prefix, rp->dirfd);
	json_object_put(ctx);
}

/* The second pass, newest fire first: the cards, each built on its own and
 * kept while they take at most page_max bytes; the older ones are left out.
 * The files are read again, as many bytes as in the first pass (at most one
 * file more, should they have grown since). Returns 0 with the cards
 * (malloc'd) in *ret_buf, or -ENOMEM. */
static int second_pass(struct report *rp, const char *prefix, char **ret_buf, size_t *ret_len)
{
	struct entry **order = malloc((rp->n ? rp->n : 1) * sizeof(*order));
	size_t k = 0, total = 0, budget = 0, len = 0;
	char *body = NULL;
	FILE *out = open_memstream(&body, &len);
	int r = 0;

	if (!out || !order) {
		if (out)
			fclose(out);
		free(body);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rp->n; i++)
		if (rp->ents[i].state == ENT_CONTEXT) {
			order[k++] = &rp->ents[i];
			budget += rp->ents[i].bytes;
		}
	if (budget < rp->lim->read_max)
		budget = rp->lim->read_max;
	if (k > 1)
		qsort(order, k, sizeof(*order), fired_cmp);
	for (size_t i = 0; i < k; i++) {
		struct entry *en = order[i];
		char *one = NULL;
		size_t one_len = 0, bytes = 0, used = (size_t)ftello(out);
		int why = 0;
		FILE *c;

		if (en->bytes > budget - total) {
			why = LEFT_READ;
		} else {
			c = open_memstream(&one, &one_len);
			if (!c) {
				r = -ENOMEM;
				break;
			}
			put_card(c, rp, en, prefix, &bytes);
			total = bytes > budget - total ? budget : total + bytes;
			if (fclose(c) != 0) {
				free(one);
				r = -ENOMEM;
				break;
			}
			if (one_len > rp->lim->page_max - used)
				why = LEFT_PAGE;
			else
				fwrite(one, 1, one_len, out);
			free(one);
		}
		if (why) {
			for (; i < k; i++) {
				order[i]->state = ENT_LEFT;
				rp->n_left++;
			}
			rp->left_why |= why;
			break;
		}
		en->state = ENT_SHOWN;
		rp->counts[en->cls]++;
		rp->n_shown++;
	}
	free(order);
	if (fclose(out) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(body);
		return r;
	}
	*ret_buf = body;
	*ret_len = len;
	return 0;
}

/* "64 MiB", or "1000 bytes" when it is not whole MiB. */
static const char *fmt_limit(size_t bytes, char *buf, size_t buflen)
{
	if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, buflen, "%zu MiB", bytes >> 20);
	else
		snprintf(buf, buflen, "%zu bytes", bytes);
	return buf;
}

/* The limits rp->left_why names: "3 files; 64 MiB of contexts read". */
static const char *fmt_left_why(const struct report *rp, char *buf, size_t buflen)
{
	char b[48];
	size_t pos = 0;

	buf[0] = '\0';
	if (rp->left_why & LEFT_COUNT)
		pos += (size_t)snprintf(buf + pos, buflen - pos, "%zu files", rp->lim->count_max);
	if ((rp->left_why & LEFT_READ) && pos < buflen)
		pos += (size_t)snprintf(buf + pos, buflen - pos, "%s%s of contexts read", pos ? "; " : "",
		                        fmt_limit(rp->lim->read_max, b, sizeof(b)));
	if ((rp->left_why & LEFT_PAGE) && pos < buflen)
		snprintf(buf + pos, buflen - pos, "%s%s of page", pos ? "; " : "",
		         fmt_limit(rp->lim->page_max, b, sizeof(b)));
	return buf;
}

/* One warning line: how many files were left out, by which limits, and the
 * names that fit in a line, newest first by modification time. */
static void warn_left_out(const struct report *rp)
{
	char line[1600], why[160];
	size_t pos, named = 0;

	pos = (size_t)snprintf(line, sizeof(line),
	                       "%s: %zu file%s left out of the page, the oldest, beyond the "
	                       "report's limits (%s):",
	                       rp->shown, rp->n_left, rp->n_left == 1 ? "" : "s", fmt_left_why(rp, why, sizeof(why)));
	for (size_t i = 0; i < rp->n && pos < sizeof(line); i++) {
		const struct entry *en = &rp->ents[i];
		size_t nlen = strlen(en->name);

		if (en->state != ENT_LEFT)
			continue;
		/* Room for this name and a closing " and 12345 more". */
		if (pos + 2 + nlen + 32 >= sizeof(line))
			break;
		pos += (size_t)snprintf(line + pos, sizeof(line) - pos, "%s %s", named ? "," : "", en->name);
		named++;
	}
	if (named < rp->n_left && pos < sizeof(line))
		snprintf(line + pos, sizeof(line) - pos, "%s and %zu more", named ? "," : "", rp->n_left - named);
	log_warn("%s", line);
}

/* The path of the directory open at dirfd as the kernel has it now
 * (/proc/self/fd), which is where a file written through dirfd lands whatever
 * became of the name it was opened by; fallback when /proc cannot say. */
static void fd_path(int dirfd, const char *fallback, char *out, size_t outlen)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	n = readlink(link, out, outlen - 1);
	if (n <= 0 || (size_t)n >= outlen - 1 || out[0] != '/') {
		snprintf(out, outlen, "%s", fallback);
		return;
	}
	out[n] = '\0';
}

/* Opens the directory path for the report, once: every context is read and
 * the page written through this descriptor, so a directory swapped for a link
 * while the report runs is never followed. The last component must not be a
 * symbolic link (trailing slashes do not count, or "DIR/" would follow it): a
 * link there is what an owner of DIR would put in its place to send root's
 * page elsewhere. Returns the descriptor, or -errno (-ELOOP: a link) with a
 * sentence naming shown. */
static int open_dir(const char *path, const char *shown, char *err, size_t errlen)
{
	char p[PATH_MAX];
	size_t len;
	struct stat st;
	int fd, e;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p)) {
		snprintf(err, errlen, "%s: the name is too long", shown);
		return -ENAMETOOLONG;
	}
	len = strlen(p);
	while (len > 1 && p[len - 1] == '/')
		p[--len] = '\0';
	fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	e = errno;
	/* O_DIRECTORY | O_NOFOLLOW on a link fails with ENOTDIR. */
	if ((e == ENOTDIR || e == ELOOP) && lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "%s: a symbolic link, not followed (name the directory it leads to)", shown);
		return -ELOOP;
	}
	snprintf(err, errlen, "%s: %s", shown, strerror(e));
	return -e;
}

/* The page's relative prefix from the page's directory (real path from) to
 * the contexts' (to); "" when they are one directory. */
static void link_prefix(int dirfd, int outfd, const char *from, const char *to, char *out, size_t outlen)
{
	struct stat a, b;

	out[0] = '\0';
	if (fstat(dirfd, &a) == 0 && fstat(outfd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return;
	if (from[0] != '/' || to[0] != '/' || context_relative_url(from, to, out, outlen) < 0)
		out[0] = '\0';
}

/* The page's head and header, up to <main>; dir is the directory's real
 * path, as the reader of a printed page can find it again. */
static void html_head(FILE *out, const char *dir, const struct report *rp)
{
	char now[64], why[160];
	size_t n = rp->n_shown;

	/* Also well-formed XML (void elements closed with "/>"), so XML tools
	 * can check the page. */
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n"
	      "<title>dumpwatch: dumps in ",
	      out);
	cx_h(out, dir);
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header>\n<h1>Dumps in <code>", cx_page_style);
	cx_h(out, dir);
	fprintf(out, "</code></h1>\n<p>%zu dump context%s: %zu dump%s, %zu skipped, %zu failed", n, n == 1 ? "" : "s",
	        rp->counts[DUMPCTX_DUMP], rp->counts[DUMPCTX_DUMP] == 1 ? "" : "s", rp->counts[DUMPCTX_SKIPPED],
	        rp->counts[DUMPCTX_FAILED]);
	if (rp->counts[OUTCOME_OTHER])
		fprintf(out, ", %zu other", rp->counts[OUTCOME_OTHER]);
	fputs(". Newest first.</p>\n", out);
	if (rp->n_left)
		fprintf(out,
		        "<p class=\"left-out\">%zu more file%s left out (the oldest), beyond the report's limits "
		        "(%s).</p>\n",
		        rp->n_left, rp->n_left == 1 ? "" : "s", fmt_left_why(rp, why, sizeof(why)));
	fprintf(out, "<p>Written %s by dumpwatch %s.</p>\n</header>\n<main>\n",
	        cx_fmt_utc((int64_t)time(NULL) * 1000, now, sizeof(now)), DW_VERSION);
	if (n == 0)
		fputs("<p>No dump context in this directory.</p>\n", out);
}

/* The whole page: the head, then the cards (body, len bytes), then the end,
 * in the cards' own buffer, moved up in place rather than copied: the page
 * is in memory once. Returns the page (body is taken over, or freed), or
 * NULL. */
static char *html_page(char *body, size_t len, const char *dir, const struct report *rp, size_t *ret_len)
{
	static const char tail[] = "</main>\n</body>\n</html>\n";
	char *head = NULL, *page;
	size_t head_len = 0;
	FILE *f = open_memstream(&head, &head_len);

	if (!f) {
		free(body);
		return NULL;
	}
	html_head(f, dir, rp);
	if (fclose(f) != 0) {
		free(head);
		free(body);
		return NULL;
	}
	page = realloc(body, head_len + len + sizeof(tail));
	if (!page) {
		free(head);
		free(body);
		return NULL;
	}
	memmove(page + head_len, page, len);
	memcpy(page, head, head_len);
	memcpy(page + head_len + len, tail, sizeof(tail));
	free(head);
	*ret_len = head_len + len + sizeof(tail) - 1;
	return page;
}

int context_report(const char *dir, const char *out_path, const struct context_limits *lim, FILE *summary, char *err,
                   size_t errlen)
{
	char dir_shown[PATH_MAX], out_dir[PATH_MAX], page_shown[PATH_MAX * 2], prefix[PATH_MAX * 3];
	char real_dir[PATH_MAX], real_out[PATH_MAX], real_shown[PATH_MAX * 2];
	struct report rp = {.shown = dir_shown, .lim = lim ? lim : &context_limits_default};
	const char *page_name = "index.html";
	size_t body_len = 0, page_len = 0;
	char *body = NULL, *page = NULL;
	int outfd, e = 0, r;

	text_escape_str(dir, dir_shown, sizeof(dir_shown));
	rp.dirfd = open_dir(dir, dir_shown, err, errlen);
	if (rp.dirfd < 0)
		return rp.dirfd;
	/* Warnings name the directory opened, whatever its name becomes. */
	fd_path(rp.dirfd, dir, real_dir, sizeof(real_dir));
	text_escape_str(real_dir, dir_shown, sizeof(dir_shown));
	outfd = rp.dirfd;
	if (out_path) {
		const char *slash = strrchr(out_path, '/');
		char out_shown[PATH_MAX];

		text_escape_str(out_path, out_shown, sizeof(out_shown));
		page_name = slash ? slash + 1 : out_path;
		if (!*page_name || strcmp(page_name, ".") == 0 || strcmp(page_name, "..") == 0) {
			snprintf(err, errlen, "%s: not a file name", out_shown);
			close(rp.dirfd);
			return -EISDIR;
		}
		if (!slash)
			snprintf(out_dir, sizeof(out_dir), ".");
		else if (slash == out_path)
			snprintf(out_dir, sizeof(out_dir), "/");
		else if ((size_t)(slash - out_path) >= sizeof(out_dir)) {
			snprintf(err, errlen, "%s: the name is too long", out_shown);
			close(rp.dirfd);
			return -ENAMETOOLONG;
		} else
			snprintf(out_dir, sizeof(out_dir), "%.*s", (int)(slash - out_path), out_path);
		text_escape_str(out_dir, real_shown, sizeof(real_shown));
		outfd = open_dir(out_dir, real_shown, err, errlen);
		if (outfd < 0) {
			close(rp.dirfd);
			return outfd;
		}
	}
	r = list_dir(&rp, err, errlen);
	if (r == 0)
		r = first_pass(&rp, err, errlen);
	if (r < 0) {
		e = -r;
		goto out;
	}
	fd_path(outfd, out_path ? out_dir : dir, real_out, sizeof(real_out));
	link_prefix(rp.dirfd, outfd, real_out, real_dir, prefix, sizeof(prefix));
	/* Built in memory, then written whole beside where it goes: a reader
	 * of the page never sees half of it. */
	r = second_pass(&rp, prefix, &body, &body_len);
	page = r == 0 ? html_page(body, body_len, real_dir, &rp, &page_len) : NULL;
	e = page ? -fds_write_file(outfd, page_name, page, page_len, 0644, 0) : ENOMEM;
	free(page);
	if (rp.n_left)
		warn_left_out(&rp);
	/* Named as the directory written is called now, not as it was given. */
	fd_path(outfd, out_path ? out_dir : dir, real_out, sizeof(real_out));
	snprintf(page_shown, sizeof(page_shown), "%s%s%s", real_out, strcmp(real_out, "/") ? "/" : "", page_name);
	text_escape_str(page_shown, real_shown, sizeof(real_shown));
	if (e) {
		snprintf(err, errlen, "%s: cannot write: %s", real_shown, strerror(e));
		goto out;
	}
	fprintf(summary, "wrote %s: %zu dump%s (%zu skipped, %zu failed)", real_shown, rp.n_shown,
	        rp.n_shown == 1 ? "" : "s", rp.counts[DUMPCTX_SKIPPED], rp.counts[DUMPCTX_FAILED]);
	if (rp.n_left)
		fprintf(summary, ", %zu file%s left out", rp.n_left, rp.n_left == 1 ? "" : "s");
	fputc('\n', summary);
out:
	for (size_t i = 0; i < rp.n; i++)
		free(rp.ents[i].name);
	free(rp.ents);
	if (outfd != rp.dirfd)
		close(outfd);
	close(rp.dirfd);
	return -e;
}
