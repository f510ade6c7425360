/* Unit tests of the dump-context readers (context.h): the sidecar name, the
 * sparkline (resampling by time, holding values over gaps, the marks under
 * columns that hold the condition, ASCII and UTF-8), HTML escaping of hostile
 * text, relative links; loading (what is refused and why); `show` and
 * `report` on the hand-made contexts in tests/data/context (a dump, a failed
 * dump whose strings hold markup, quotes and terminal escapes, a skipped
 * one), including the atomic replacement of index.html; the heap summary in
 * both, from a real context and from one made hostile here (type and root
 * names with terminal escapes, markup and controls, very long, paths of
 * many steps, more types than dumpwatch writes). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/context.h"

#define CTX_DIR DW_TEST_DATA "/context"
#define CTX_DUMP "GcLab-4807-20261118T110640Z"           /* outcome dump, fired 11:06:40 */
#define CTX_HOSTILE "dotnet-6001-20261118T120640Z"       /* outcome failed, fired 12:06:40 */
#define CTX_SKIPPED "OrderService-5120-20261117T110640Z" /* outcome skipped, a day before */
#define CTX_HEAP "GcLab-3033-20261128T130335Z"           /* a real one with a heap summary */

/* ---- helpers ----------------------------------------------------------- */

static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	*ret_len = 0;
	if (!f)
		return NULL;
	n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	*ret_len = (size_t)n;
	return buf;
}

static void put_file(const char *dir, const char *name, const char *text, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	fwrite(text, 1, len, f);
	fclose(f);
}

static void put_str(const char *dir, const char *name, const char *text)
{
	put_file(dir, name, text, strlen(text));
}

static void copy_fixture(const char *dir, const char *name)
{
	char src[PATH_MAX];
	size_t len;
	char *text;

	snprintf(src, sizeof(src), "%s/%s.json", CTX_DIR, name);
	text = slurp(src, &len);
	CHECK_MSG(text != NULL, "%s", src);
	if (!text)
		return;
	snprintf(src, sizeof(src), "%s.json", name);
	put_file(dir, src, text, len);
	free(text);
}

/* Removes dir and the files directly in it. */
static void remove_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(fd, de->d_name, 0);
	closedir(d);
	rmdir(dir);
}

/* How many times needle occurs in s. */
static int count(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Whether s[0..len) holds a byte that is a C0 control other than newline, or DEL. */
static int has_control(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\n') || s[i] == 0x7f)
			return 1;
	return 0;
}

/* context_report(dir, NULL, lim) with its stderr caught: returns what it
 * wrote there (malloc'd), its summary in *ret_sum, its result in *ret_r. */
static char *report_caught(const char *dir, const struct context_limits *lim, char **ret_sum, int *ret_r)
{
	char err[PATH_MAX * 2], *text;
	size_t sumlen = 0, len;
	FILE *m = open_memstream(ret_sum, &sumlen), *tmp = tmpfile();
	int saved = dup(2);

	fflush(stderr);
	dup2(fileno(tmp), 2);
	*ret_r = context_report(dir, NULL, lim, m, err, sizeof(err));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	fclose(m);
	CHECK_MSG(*ret_r == 0, "%s", err);
	len = (size_t)ftell(tmp);
	text = calloc(1, len + 1);
	rewind(tmp);
	if (text && fread(text, 1, len, tmp) != len)
		text[0] = '\0';
	fclose(tmp);
	return text;
}

/* Sets the modification time of dir/name to t seconds after the epoch. */
static void set_mtime(const char *dir, const char *name, time_t t)
{
	char path[PATH_MAX];
	struct timespec ts[2] = {{.tv_sec = t}, {.tv_sec = t}};

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

/* ---- pure parts -------------------------------------------------------- */

static void test_sidecar_name(void)
{
	char out[64], tiny[8];

	CHECK(context_sidecar_name("a/NAME.core", out, sizeof(out)) == 0);
	CHECK_STR(out, "a/NAME.json");
	CHECK(context_sidecar_name("NAME.json", out, sizeof(out)) == 0);
	CHECK_STR(out, "NAME.json");
	CHECK(context_sidecar_name("NAME", out, sizeof(out)) == 0);
	CHECK_STR(out, "NAME.json");
	CHECK(context_sidecar_name("NAME.svg", out, sizeof(out)) == 0);
	CHECK_STR(out, "NAME.json");
	CHECK(context_sidecar_name("a/NAME.gcdump", out, sizeof(out)) == 0); /* store.c's name for a gcdump's */
	CHECK_STR(out, "a/NAME.json");
	CHECK(context_sidecar_name("x.core.gz", out, sizeof(out)) == 0);
	CHECK_STR(out, "x.core.gz.json");
	CHECK(context_sidecar_name(".core", out, sizeof(out)) == 0);
	CHECK_STR(out, ".json");
	CHECK(context_sidecar_name("abcdefgh", tiny, sizeof(tiny)) == -ENAMETOOLONG);
	CHECK(context_sidecar_name("abc.core", tiny, sizeof(tiny)) == -ENAMETOOLONG); /* "abc.json" + NUL */
	CHECK(context_sidecar_name("ab.core", tiny, sizeof(tiny)) == 0);
	CHECK_STR(tiny, "ab.json");
}

static void test_sparkline(void)
{
	double t[16], v[16], lo, hi;
	char bars[3 * 16 + 1], marks[17];
	int r;

	/* 0..7 over 8 columns: one level per column; marks where v > 4.5. */
	for (int i = 0; i < 8; i++) {
		t[i] = -7000 + 1000.0 * i;
		v[i] = i;
	}
	r = context_sparkline(t, v, 8, 8, ">", 4.5, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 8);
	CHECK_STR(bars, " .:-=+*#");
	CHECK_STR(marks, "     ^^^");
	CHECK(lo == 0 && hi == 7);
	r = context_sparkline(t, v, 8, 8, ">", 4.5, 1, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 8);
	CHECK_STR(bars, "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588");
	/* "<=": the lowest value of a column counts, marks where it holds. */
	r = context_sparkline(t, v, 8, 8, "<=", 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK_STR(marks, "^^      ");
	/* No threshold, or an op that is not one: no marks. */
	context_sparkline(t, v, 8, 8, NULL, 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK_STR(marks, "        ");
	context_sparkline(t, v, 8, 8, "==", 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK_STR(marks, "        ");

	/* Resampled by time: two points far apart, a gap held at the first
	 * value, the last column gets the last point. */
	t[0] = 0, v[0] = 10;
	t[1] = 1000, v[1] = 20;
	r = context_sparkline(t, v, 2, 4, ">", 15, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 4);
	CHECK_STR(bars, "   #");
	CHECK_STR(marks, "   ^");

	/* Several points in one column: ">" shows the highest. */
	t[0] = 0, v[0] = 1;
	t[1] = 10, v[1] = 9;
	t[2] = 20, v[2] = 2;
	t[3] = 1000, v[3] = 1;
	r = context_sparkline(t, v, 4, 2, ">", 100, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK_STR(bars, "# ");
	CHECK(hi == 9 && lo == 1);

	/* Flat: every column at the lowest level. */
	t[0] = 0, v[0] = 5;
	t[1] = 100, v[1] = 5;
	r = context_sparkline(t, v, 2, 3, ">=", 5, 1, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 3);
	CHECK_STR(bars, "\u2581\u2581\u2581");
	CHECK_STR(marks, "^^^");

	/* One point: a flat line of it. */
	r = context_sparkline(t, v, 1, 5, ">", 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 5);
	CHECK_STR(bars, "     ");

	/* Non-finite points are skipped; none finite draws nothing. */
	t[0] = 0, v[0] = NAN;
	t[1] = NAN, v[1] = 3;
	t[2] = 5, v[2] = 4;
	t[3] = 10, v[3] = INFINITY;
	r = context_sparkline(t, v, 4, 4, ">", 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 4 && lo == 4 && hi == 4);
	r = context_sparkline(t, v, 2, 4, ">", 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 0 && bars[0] == '\0' && marks[0] == '\0');
	r = context_sparkline(t, v, 0, 4, ">", 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi);
	CHECK(r == 0);

	/* Output too small for the columns (UTF-8 takes 3 bytes a column). */
	CHECK(context_sparkline(t, v, 4, 16, ">", 1, 1, bars, 3 * 16, marks, sizeof(marks), &lo, &hi) == -ENOBUFS);
	CHECK(context_sparkline(t, v, 4, 16, ">", 1, 0, bars, sizeof(bars), marks, 16, &lo, &hi) == -ENOBUFS);
	CHECK(context_sparkline(t, v, 4, 0, ">", 1, 0, bars, sizeof(bars), marks, sizeof(marks), &lo, &hi) == -ENOBUFS);
}

static void check_html(const char *in, size_t len, const char *want)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *m = open_memstream(&buf, &blen);

	context_html_escape(m, in, len);
	fclose(m);
	CHECK_STR(buf, want);
	free(buf);
}

#define HTML(lit, want) check_html(lit, sizeof(lit) - 1, want)

static void test_html_escape(void)
{
	HTML("plain caf\xC3\xA9", "plain caf\xC3\xA9");
	HTML("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;");
	HTML("a&b \"q\" 'p'", "a&amp;b &quot;q&quot; &#39;p&#39;");
	HTML("&amp;", "&amp;amp;");
	/* Controls left out; tab, newline, CR as a space; NUL left out. */
	HTML("\x1b[31mred\x07", "[31mred");
	HTML("a\tb\nc\rd", "a b c d");
	HTML("a\0b", "ab");
	/* C1 controls, bidi overrides and line separators left out. */
	HTML("x\xC2\x9By\xE2\x80\xAEz\xE2\x80\xA8w", "xyzw");
	/* Invalid UTF-8: each bad byte one U+FFFD. */
	HTML("\xFF<\xC3", "\xEF\xBF\xBD&lt;\xEF\xBF\xBD");
	HTML("\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
	HTML("", "");
}

static void test_relative_url(void)
{
	char out[256], tiny[4];

	CHECK(context_relative_url("/a/b", "/a/b", out, sizeof(out)) == 0);
	CHECK_STR(out, "");
	CHECK(context_relative_url("/srv/www", "/var/lib/dumpwatch/dumps", out, sizeof(out)) == 0);
	CHECK_STR(out, "../../var/lib/dumpwatch/dumps/");
	CHECK(context_relative_url("/a", "/a/b c", out, sizeof(out)) == 0);
	CHECK_STR(out, "b%20c/");
	CHECK(context_relative_url("/a/b/c", "/a", out, sizeof(out)) == 0);
	CHECK_STR(out, "../../");
	CHECK(context_relative_url("/", "/x:y", out, sizeof(out)) == 0);
	CHECK_STR(out, "x%3Ay/");
	CHECK(context_relative_url("/ab", "/abc", out, sizeof(out)) == 0); /* not a common component */
	CHECK_STR(out, "../abc/");
	CHECK(context_relative_url("/a/b/c/d", "/", tiny, sizeof(tiny)) == -ENAMETOOLONG);
}

/* ---- loading ------------------------------------------------------------ */

static void test_load(void)
{
	static const char *names[] = {CTX_DUMP, CTX_HOSTILE, CTX_SKIPPED};
	char dir[] = "/tmp/test_context.XXXXXX", path[PATH_MAX], err[512];
	struct json_object *ctx;
	int fd;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.json", CTX_DIR, names[i]);
		CHECK_MSG(context_load(AT_FDCWD, path, 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == 0,
		          "%s: %s", path, err);
		json_object_put(ctx);
	}

	CHECK(mkdtemp(dir) != NULL);
	put_str(dir, "other.json", "{\"a\": 1}\n");
	put_str(dir, "array.json", "[1, 2]");
	put_str(dir, "broken.json", "{\"dumpwatch_context\": 1,");
	put_str(dir, "trailing.json", "{\"dumpwatch_context\": 1} {}");
	put_file(dir, "nul.json", "{\"dumpwatch_context\"\0: 1}", 25); /* a NUL inside */
	put_str(dir, "v2.json", "{\"dumpwatch_context\": 2}");
	put_str(dir, "vstr.json", "{\"dumpwatch_context\": \"1\"}");
	put_str(dir, "partial.json", "{\"dumpwatch_context\": 1, \"outcome\": \"dump\"}");
	put_str(dir, "notime.json",
	        "{\"dumpwatch_context\": 1, \"outcome\": \"dump\", \"rule\": {}, \"process\": {}, "
	        "\"fired_unix_ms\": null}");
	put_str(dir, "minimal.json",
	        "{\"dumpwatch_context\": 1, \"outcome\": \"dump\", \"rule\": {}, \"process\": {}, "
	        "\"fired_unix_ms\": 1795000000123}");
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0);
	CHECK(context_load(fd, "missing.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -ENOENT &&
	      ctx == NULL);
	CHECK(context_load(fd, "other.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -ENOMSG);
	CHECK(context_load(fd, "array.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -ENOMSG);
	CHECK(context_load(fd, "broken.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EBADMSG);
	CHECK(strstr(err, "not JSON") != NULL);
	CHECK(context_load(fd, "trailing.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EBADMSG);
	CHECK(context_load(fd, "nul.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EBADMSG);
	CHECK(context_load(fd, "v2.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EPROTONOSUPPORT);
	CHECK(context_load(fd, "vstr.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EBADMSG);
	CHECK(context_load(fd, "partial.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EBADMSG);
	CHECK_STR(err, "a broken dump context: no \"rule\" object");
	CHECK(context_load(fd, "notime.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EBADMSG);
	CHECK(context_load(fd, "minimal.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == 0);
	/* The least a view needs shows, with "?" for what is missing. */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);

		CHECK(context_show(m, ctx, 0) == 0);
		fclose(m);
		CHECK(strstr(buf, "outcome:   dump\nrule:      ? (command line)\n") != NULL);
		CHECK(strstr(buf, "2026-11-18T11:06:40.123Z") != NULL);
		free(buf);
	}
	json_object_put(ctx);

	/* A directory, a FIFO (must not block), a symbolic link with nofollow. */
	CHECK(mkdirat(fd, "d.json", 0700) == 0);
	CHECK(context_load(fd, "d.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "not a regular file");
	CHECK(mkfifoat(fd, "fifo.json", 0600) == 0);
	CHECK(context_load(fd, "fifo.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EINVAL);
	CHECK(symlinkat("minimal.json", fd, "link.json") == 0);
	CHECK(context_load(fd, "link.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -ELOOP);
	CHECK(context_load(fd, "link.json", 0, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == 0);
	json_object_put(ctx);
	/* Larger than the cap (sparse: no disk used). */
	{
		int big = openat(fd, "big.json", O_WRONLY | O_CREAT | O_EXCL, 0600);
		CHECK(big >= 0 && ftruncate(big, (off_t)CONTEXT_FILE_MAX + 1) == 0);
		close(big);
		CHECK(context_load(fd, "big.json", 1, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) == -EFBIG);
	}
	unlinkat(fd, "d.json", AT_REMOVEDIR);
	close(fd);
	remove_dir(dir);
}

/* ---- show --------------------------------------------------------------- */

static char *show(const char *name, int utf8)
{
	char path[PATH_MAX], err[512], *buf = NULL;
	struct json_object *ctx;
	size_t len = 0;
	FILE *m;

	snprintf(path, sizeof(path), "%s/%s.json", CTX_DIR, name);
	if (context_load(AT_FDCWD, path, 0, CONTEXT_FILE_MAX, &ctx, NULL, err, sizeof(err)) < 0) {
		CHECK_MSG(0, "%s: %s", path, err);
		return strdup("");
	}
	m = open_memstream(&buf, &len);
	CHECK(context_show(m, ctx, utf8) == 0);
	fclose(m);
	json_object_put(ctx);
	CHECK_MSG(!has_control(buf, len), "%s: a control character in the text", name);
	return buf;
}

static void test_show(void)
{
	char *out = show(CTX_DUMP, 1), err[PATH_MAX + 512];
	FILE *devnull;

	CHECK(strstr(out, "outcome:   dump\n") != NULL);
	CHECK(strstr(out, "rule:      loh-balloon (/etc/dumpwatch/rules.d/gclab.json:3)\n") != NULL);
	CHECK(strstr(out, "  loh-size > 300MB for 2s: 351.2MB at the fire\n") != NULL);
	CHECK(strstr(out, "  gc-pause >= 20ms: 42ms at the fire\n") != NULL);
	CHECK(strstr(out, "fired:     2026-11-18T11:06:40.123Z (local ") != NULL);
	CHECK(strstr(out, "dump:      started +12ms, ended +1.05s from the fire, took 1.03s, via runtime\n") != NULL);
	CHECK(strstr(out, "size:      494.0MB (494000000 bytes)\n") != NULL);
	CHECK(strstr(out, "process:   4807 GcLab, user alice (uid 1000), .NET 10.0.0\n") != NULL);
	CHECK(strstr(out, "cmdline:   /app/GcLab loh 350\n") != NULL);
	CHECK(strstr(out, "\u2588") != NULL);                /* a full block: the peak */
	CHECK(strstr(out, "^^^^^  ^: > 300.0MB\n") != NULL); /* the columns over the threshold */
	CHECK(strstr(out, "last GCs (10 of 14, oldest first):\n") != NULL);
	CHECK(count(out, "AllocLarge / Background") == 4); /* GCs 104, 107, 110, 113 */
	CHECK(strstr(out, "      103 ") == NULL && strstr(out, "      104 ") != NULL);
	CHECK(strstr(out, "allocation by type (allocation ticks from -285s up to +40ms: 392.0MB in 3700 ticks):\n") !=
	      NULL);
	CHECK(strstr(out, "    367.0MB  93.6%  loh  System.Byte[]\n") != NULL);
	CHECK(strstr(out, "      6.0MB   1.5%  soh  GcLab.Node\n") != NULL);
	CHECK(strstr(out, "      4.0MB              the other types\n") != NULL);
	free(out);

	out = show(CTX_SKIPPED, 0);
	CHECK(strstr(out, "outcome:   skipped: less than 10% free on /var/lib/dumpwatch/dumps") != NULL);
	CHECK(strstr(out, "  System.Runtime/cpu-usage >= 90% for 2s: at least 94.5% at the fire\n") != NULL);
	CHECK(strstr(out, "dump:      never started\n") != NULL);
	CHECK(strstr(out, "size:") == NULL);
	CHECK(strstr(out, "#") != NULL && strstr(out, "\u2588") == NULL); /* ASCII */
	CHECK(strstr(out, "no GC in the context\n") != NULL);
	CHECK(strstr(out, "allocation by type: not recorded") != NULL);
	free(out);

	/* Hostile strings stay on their lines, escaped; markup is just text. */
	out = show(CTX_HOSTILE, 1);
	CHECK(strstr(out, "outcome:   failed: createdump exited with status 1: <b>not</b> \"enough\" 'memory' & "
	                  "more\\nsecond line\n") != NULL);
	CHECK(strstr(out, "rule:      <i>rule</i>\"'& (command line)\n") != NULL);
	CHECK(strstr(out, "\\x1b[31mred\\x1b[0m and \\u202eevil\n") != NULL);
	CHECK(strstr(out, "process:   6001 <b>x</b>, uid 1001, .NET 9.0.1\\x1b]0;title\\x07\n") != NULL);
	CHECK(strstr(out, "\\x07bell\\ttab\n") != NULL);
	CHECK(strstr(out, "  System.Runtime/cpu-usage > 90% for 10s: no value at the fire\n") != NULL);
	CHECK(strstr(out, "    no history\n") != NULL);
	CHECK(strstr(out, "<AllocLarge> / \\x1b[2J (incomplete)\n") != NULL);
	CHECK(strstr(out, "     600B  60.0% soh\\x1b  Evil\\x1b[2J<b>\\n\n") != NULL);
	CHECK(strstr(out, "  poh  (no type name)\n") != NULL);
	free(out);

	/* context_show_file: the sidecar of NAME.core, and its errors. */
	devnull = fopen("/dev/null", "w");
	CHECK(context_show_file(CTX_DIR "/" CTX_DUMP ".core", devnull, err, sizeof(err)) == 0);
	CHECK(context_show_file(CTX_DIR "/" CTX_DUMP, devnull, err, sizeof(err)) == 0);
	CHECK(context_show_file(CTX_DIR "/nothing.core", devnull, err, sizeof(err)) == -ENOENT);
	CHECK_STR(err, CTX_DIR "/nothing.core: " CTX_DIR "/nothing.json: No such file or directory");
	CHECK(context_show_file("/dev/null.json", devnull, err, sizeof(err)) == -ENOENT);
	CHECK(context_show_file("bad\x1b[2J.json", devnull, err, sizeof(err)) == -ENOENT);
	CHECK_STR(err, "bad\\x1b[2J.json: No such file or directory");
	fclose(devnull);
}

/* ---- report ------------------------------------------------------------- */

static void test_report(void)
{
	char dir[] = "/tmp/test_context.XXXXXX", other[] = "/tmp/test_context_out.XXXXXX";
	char path[PATH_MAX], target[PATH_MAX], err[PATH_MAX * 2], *page, *sum = NULL;
	const char *p_hostile, *p_dump, *p_skipped;
	size_t len, sumlen = 0;
	struct stat st;
	FILE *m;
	int r;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(mkdtemp(other) != NULL);
	copy_fixture(dir, CTX_DUMP);
	copy_fixture(dir, CTX_HOSTILE);
	copy_fixture(dir, CTX_SKIPPED);
	put_str(dir, "other.json", "{\"rules\": []}");                    /* skipped silently */
	put_str(dir, "broken.json", "{\"dumpwatch_context\": 1, \"outc"); /* with a warning */
	put_str(dir, ".hidden.json", "{");                                /* never read */
	put_file(dir, CTX_DUMP ".core", "core", 4);
	/* index.html is a link to a file elsewhere: replaced, not written through. */
	snprintf(target, sizeof(target), "%s/target", other);
	put_str(other, "target", "keep");
	snprintf(path, sizeof(path), "%s/index.html", dir);
	CHECK(symlink(target, path) == 0);

	m = open_memstream(&sum, &sumlen);
	r = context_report(dir, NULL, NULL, m, err, sizeof(err));
	fclose(m);
	CHECK_MSG(r == 0, "%s", err);
	{
		char want[PATH_MAX + 128];
		snprintf(want, sizeof(want), "wrote %s/index.html: 3 dumps (1 skipped, 1 failed)\n", dir);
		CHECK_STR(sum, want);
	}
	free(sum);
	CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
	page = slurp(target, &len);
	CHECK(page && strcmp(page, "keep") == 0);
	free(page);

	page = slurp(path, &len);
	CHECK(page != NULL);
	if (!page)
		goto out;
	CHECK(strncmp(page, "<!DOCTYPE html>\n", 16) == 0);
	CHECK(strstr(page, "3 dump contexts: 1 dump, 1 skipped, 1 failed") != NULL);
	/* Newest first. */
	p_hostile = strstr(page, "<article class=\"card failed\">");
	p_dump = strstr(page, "<article class=\"card dump\">");
	p_skipped = strstr(page, "<article class=\"card skipped\">");
	CHECK(p_hostile && p_dump && p_skipped && p_hostile < p_dump && p_dump < p_skipped);
	CHECK(count(page, "<article") == 3);
	/* Each card has its plot inline, without an XML declaration. */
	CHECK(count(page, "<div class=\"plot\"><svg") == 3);
	CHECK(strstr(page, "<?xml") == NULL);
	/* Hostile text is text; nothing runs, nothing is fetched. */
	CHECK(strstr(page, "<script") == NULL);
	CHECK(strstr(page, "<b>x</b>") == NULL);
	CHECK(strstr(page, "&lt;b&gt;x&lt;/b&gt; (pid 6001)") != NULL);
	CHECK(strstr(page, "&lt;i&gt;rule&lt;/i&gt;&quot;&#39;&amp;") != NULL);
	CHECK(strstr(page, "&lt;svg onload=alert(1)&gt;") != NULL);
	/* The allocating types: listed on the dump's card, escaped on the
	 * hostile one, no row where the context has none. */
	CHECK(strstr(page, "<li><code>System.Byte[]</code> loh 367.0MB (93.6 %)</li>") != NULL);
	CHECK(strstr(page, "<li><code>Evil[2J&lt;b&gt; </code>") != NULL);
	CHECK(count(page, "<th>Allocating</th>") == 2);
	CHECK(!has_control(page, len));
	CHECK(strstr(page, "\xE2\x80\xAE") == NULL); /* the bidi override is left out */
	CHECK(strstr(page, "src=") == NULL && strstr(page, "@import") == NULL && strstr(page, "url(") == NULL);
	/* Links: relative, to the context, and to the core only for a dump and
	 * only by a plain name ("../../etc/passwd" in the failed one is not). */
	CHECK(strstr(page, "<a href=\"" CTX_DUMP ".json\">") != NULL);
	CHECK(strstr(page, "<a href=\"" CTX_DUMP ".core\">" CTX_DUMP ".core</a></td>") != NULL);
	CHECK(strstr(page, "<a href=\"" CTX_SKIPPED ".json\">") != NULL);
	CHECK(strstr(page, CTX_SKIPPED ".core") == NULL);
	CHECK(strstr(page, "passwd") == NULL);
	CHECK(count(page, "<a href=") == 4);
	/* Sizes and durations, "—" when not known. */
	CHECK(strstr(page, "size 494.0MB, took 1.03s, via runtime") != NULL);
	CHECK(strstr(page, "size \xE2\x80\x94, took \xE2\x80\x94</td>") != NULL);
	CHECK(strstr(page, "@media print") != NULL);
	free(page);

	/* -o elsewhere: the links lead back to the directory; a missing core
	 * is marked. */
	CHECK(unlink(path) == 0);
	{
		char core[PATH_MAX], want[PATH_MAX + 64];
		const char *base = strrchr(dir, '/') + 1;

		snprintf(core, sizeof(core), "%s/%s.core", dir, CTX_DUMP);
		CHECK(unlink(core) == 0);
		snprintf(path, sizeof(path), "%s/page.html", other);
		m = fopen("/dev/null", "w");
		CHECK(context_report(dir, path, NULL, m, err, sizeof(err)) == 0);
		fclose(m);
		page = slurp(path, &len);
		CHECK(page != NULL);
		snprintf(want, sizeof(want), "<a href=\"../%s/%s.json\">", base, CTX_DUMP);
		CHECK(page && strstr(page, want) != NULL);
		CHECK(page && strstr(page, ".core</a> (missing)") != NULL);
		free(page);
		snprintf(path, sizeof(path), "%s/index.html", dir);
		CHECK(access(path, F_OK) < 0); /* nothing written in DIR */
	}

	/* The summary names the directory written by its real path, however
	 * DIR was spelled. */
	{
		char spelled[PATH_MAX + 16], want[PATH_MAX + 128];

		snprintf(spelled, sizeof(spelled), "/tmp/..%s//", dir);
		m = open_memstream(&sum, &sumlen);
		CHECK(context_report(spelled, NULL, NULL, m, err, sizeof(err)) == 0);
		fclose(m);
		snprintf(want, sizeof(want), "wrote %s/index.html: 3 dumps (1 skipped, 1 failed)\n", dir);
		CHECK_STR(sum, want);
		free(sum);
		snprintf(path, sizeof(path), "%s/index.html", dir);
		CHECK(unlink(path) == 0);
	}

	/* DIR (or the directory of -o FILE) as a symbolic link is not followed,
	 * also with a trailing slash: nothing is written through it. */
	{
		char link[PATH_MAX], linked[PATH_MAX + 16];

		snprintf(link, sizeof(link), "%s/link", other);
		CHECK(symlink(dir, link) == 0);
		CHECK(context_report(link, NULL, NULL, stdout, err, sizeof(err)) == -ELOOP);
		CHECK_MSG(strstr(err, "/link: a symbolic link, not followed") != NULL, "%s", err);
		snprintf(linked, sizeof(linked), "%s/", link);
		CHECK(context_report(linked, NULL, NULL, stdout, err, sizeof(err)) == -ELOOP);
		snprintf(linked, sizeof(linked), "%s/page.html", link);
		CHECK(context_report(dir, linked, NULL, stdout, err, sizeof(err)) == -ELOOP);
		snprintf(path, sizeof(path), "%s/index.html", dir);
		CHECK(access(path, F_OK) < 0);
		snprintf(path, sizeof(path), "%s/page.html", dir);
		CHECK(access(path, F_OK) < 0);
		CHECK(unlink(link) == 0);
	}

	/* Errors: no such directory; an output directory that does not exist;
	 * an output that names no file. */
	CHECK(context_report("/nonexistent-dir", NULL, NULL, stdout, err, sizeof(err)) == -ENOENT);
	CHECK_STR(err, "/nonexistent-dir: No such file or directory");
	snprintf(path, sizeof(path), "%s/no/page.html", other);
	CHECK(context_report(dir, path, NULL, stdout, err, sizeof(err)) == -ENOENT);
	snprintf(path, sizeof(path), "%s/", other);
	CHECK(context_report(dir, path, NULL, stdout, err, sizeof(err)) == -EISDIR);
	/* An empty directory still gets its page. */
	{
		char empty[] = "/tmp/test_context_empty.XXXXXX";
		CHECK(mkdtemp(empty) != NULL);
		m = fopen("/dev/null", "w");
		CHECK(context_report(empty, NULL, NULL, m, err, sizeof(err)) == 0);
		fclose(m);
		snprintf(path, sizeof(path), "%s/index.html", empty);
		page = slurp(path, &len);
		CHECK(page && strstr(page, "No dump context in this directory.") != NULL);
		free(page);
		remove_dir(empty);
	}
out:
	remove_dir(dir);
	remove_dir(other);
}

/* ---- the heap summary ----------------------------------------------------- */

static void check_short(const char *in, const char *want)
{
	char out[256];
	size_t n = context_type_short(in, strlen(in), out, sizeof(out));

	CHECK_STR(out, want);
	CHECK(n == strlen(want));
}

static void test_type_short(void)
{
	char tiny[5];

	check_short("System.Byte[]", "Byte[]");
	check_short("System.Collections.Generic.List<System.Byte[]>", "List<Byte[]>");
	check_short("Entry<System.Int32,System.Diagnostics.Tracing.EventSource+EventMetadata>[]",
	            "Entry<Int32,EventSource+EventMetadata>[]");
	check_short("HeapNode", "HeapNode");
	check_short("System.Collections.Generic.List`1[[System.String]]", "List`1[[String]]");
	check_short("<Module>.Foo", "<Module>.Foo");
	check_short("a.", "a.");
	check_short(".b", ".b");
	check_short("", "");
	check_short("Ns.\xC3\xA9t\xC3\xA9.T", "T");
	/* Cut like snprintf: the whole length returned. */
	CHECK(context_type_short("System.Collections.Generic.List", 31, tiny, sizeof(tiny)) == 4);
	CHECK_STR(tiny, "List");
	CHECK(context_type_short("System.Dictionary", 17, tiny, sizeof(tiny)) == 10);
	CHECK_STR(tiny, "Dict");
	/* A NUL is a byte like another; it does not end the name. */
	CHECK(context_type_short("A.B\0C.D", 7, tiny, sizeof(tiny)) == 3 && memcmp(tiny, "B\0D", 4) == 0);
}

/* The real context's heap: the table, the generations, the paths. */
static void test_show_heap(void)
{
	char *out = show(CTX_HEAP, 1);

	CHECK(strstr(out, "\nheap (a snapshot in GC #5): 105.9MB in 24,819 objects; the target was paused 5.47ms for "
	                  "it:\n") != NULL);
	CHECK(strstr(out, "  by generation: gen0 0B, gen1 306.7KB, gen2 684.0KB, LOH 104.9MB, POH 8.2KB, ? 38.6KB\n") !=
	      NULL);
	CHECK(strstr(out, "      bytes     objects  share  where               type\n") != NULL);
	CHECK(strstr(out, "    104.9MB         187  99.0%  LOH                 System.Byte[]\n") != NULL);
	CHECK(strstr(out, "    400.0KB      10,000   0.4%  gen2                HeapNode\n") != NULL);
	CHECK(strstr(out, "    108.8KB       1,503   0.1%  gen1 45% gen2 29%+  System.String\n") != NULL);
	CHECK(strstr(out, "     10.5KB          34   0.0%  POH 78% gen1 19%+   System.Object[]\n") != NULL);
	/* 15 of the 30 listed, the other 15 and the 206 beyond with them. */
	CHECK(strstr(out, "     65.9KB         809                             (221 other types)\n") != NULL);
	CHECK(strstr(out, "System.Reflection.Emit.OpCode\n") != NULL);
	CHECK(strstr(out, "System.RuntimeType\n") != NULL && strstr(out, "System.Reflection.RtFieldInfo") == NULL);
	CHECK(strstr(out, "  what holds them (from a root, the path that holds most of each type's bytes):\n"
	                  "    System.Byte[]: 104.9MB of 104.9MB in 100 of 187 objects\n"
	                  "      s_entries (static) \u2192 List<Byte[]> \u2192 Byte[][] \u2192 Byte[]\n"
	                  "    HeapNode: 400.0KB of 400.0KB in 10,000 of 10,000 objects\n"
	                  "      s_root (static) \u2192 HeapNode (nested)\n"
	                  "    HeapLeaf: ") != NULL);
	CHECK(count(out, " objects\n      ") == CONTEXT_SHOW_HEAP_PATHS);
	CHECK(strstr(out, "cut (") == NULL && strstr(out, "heap summary: missing") == NULL);
	free(out);

	out = show(CTX_HEAP, 0);
	CHECK(strstr(out, "      s_entries (static) -> List<Byte[]> -> Byte[][] -> Byte[]\n") != NULL);
	CHECK(strstr(out, "\u2192") == NULL);
	free(out);

	/* No heap, no heap section. */
	out = show(CTX_DUMP, 1);
	CHECK(strstr(out, "\nheap") == NULL);
	free(out);
}

/* Parses CTX_HEAP, for tests to make hostile. */
static struct json_object *heap_fixture(void)
{
	struct json_object *ctx = json_object_from_file(CTX_DIR "/" CTX_HEAP ".json");

	CHECK(ctx != NULL);
	return ctx;
}

static struct json_object *at(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

#define EVIL_TYPE "Evil\x1b[31m<script>alert(1)</script>\n\x07&\"'\xE2\x80\xAE"
#define EVIL_ROOT "s_\x1b]0;title\x07<b>x</b> (static)"

/* The real context with a hostile heap: names with terminal escapes,
 * markup, controls, a bidi override and invalid UTF-8; a name of 100,000
 * bytes; a path of 1,000 steps; 20,000 types; figures of the wrong type:
 * about 1.4 MB, within what show and report read. */
static struct json_object *hostile_heap(void)
{
	struct json_object *ctx = heap_fixture(), *heap = at(ctx, "heap");
	struct json_object *types = at(heap, "types"), *paths = at(heap, "paths");
	struct json_object *steps = json_object_new_array();
	char *longname = malloc(100001);

	if (!ctx || !heap || !types || !paths || !longname) {
		free(longname);
		return ctx;
	}
	memset(longname, 'A', 100000);
	longname[100000] = '\0';
	json_object_object_add(json_object_array_get_idx(types, 0), "type",
	                       json_object_new_string_len(EVIL_TYPE "\xff\0z", (int)sizeof(EVIL_TYPE "\xff\0z") - 1));
	json_object_object_add(json_object_array_get_idx(types, 1), "type", json_object_new_string(longname));
	json_object_object_add(json_object_array_get_idx(types, 2), "bytes", json_object_new_string("12"));
	json_object_object_add(json_object_array_get_idx(types, 2), "generations", json_object_new_string("gen2"));
	json_object_object_add(heap, "pause_ms", json_object_new_string("0"));
	for (int i = 0; i < 20000; i++) {
		struct json_object *e = json_object_new_object();
		json_object_object_add(e, "type", json_object_new_string("Filler"));
		json_object_object_add(e, "bytes", json_object_new_int(1));
		json_object_object_add(e, "objects", json_object_new_int(1));
		json_object_array_add(types, e);
	}
	/* Paths: the evil type's through an evil root and 1,000 steps, the
	 * first with the long name, every other one evil; the long one's cut. */
	struct json_object *p0 = json_object_array_get_idx(paths, 0), *p1 = json_object_array_get_idx(paths, 1);
	json_object_object_add(p0, "type",
	                       json_object_new_string_len(EVIL_TYPE "\xff\0z", (int)sizeof(EVIL_TYPE "\xff\0z") - 1));
	json_object_object_add(p0, "root", json_object_new_string(EVIL_ROOT));
	for (int i = 0; i < 1000; i++) {
		struct json_object *st = json_object_new_object();
		json_object_object_add(st, "type",
		                       json_object_new_string(i == 0  ? longname
		                                              : i % 2 ? EVIL_TYPE
		                                                      : "Node"));
		json_object_array_add(steps, st);
	}
	json_object_object_add(p0, "steps", steps);
	json_object_object_add(p1, "type", json_object_new_string(longname));
	json_object_object_add(p1, "cut", json_object_new_boolean(1));
	json_object_object_add(ctx, "heap_error", json_object_new_string("snapshot \x1b[2J<i>failed</i>\nline"));
	free(longname);
	return ctx;
}

/* The page `report` writes of ctx alone (malloc'd), read back. */
static char *report_page_of(struct json_object *ctx)
{
	char dir[] = "/tmp/test_context_one.XXXXXX", path[PATH_MAX], *sum = NULL, *caught, *page = NULL;
	size_t len;
	int r;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/one.json", dir);
	CHECK(json_object_to_file_ext(path, ctx, JSON_C_TO_STRING_PLAIN) == 0);
	caught = report_caught(dir, NULL, &sum, &r);
	CHECK_MSG(strstr(sum, ": 1 dump (0 skipped, 0 failed)\n") != NULL, "%s", sum);
	snprintf(path, sizeof(path), "%s/index.html", dir);
	page = slurp(path, &len);
	CHECK(page != NULL && !has_control(page, len));
	free(sum);
	free(caught);
	remove_dir(dir);
	return page ? page : strdup("");
}

/* Retained sizes, when the summary has them, and why not when it says so,
 * in show and on the report's card alike: names escaped, wrong-typed
 * figures shown as "?". */
static void test_show_retained(void)
{
	struct json_object *ctx = heap_fixture(), *heap = at(ctx, "heap");
	struct json_object *ret = json_object_new_object(), *types = json_object_new_array();
	char *buf = NULL, *page;
	size_t len = 0;
	FILE *m;

	for (int i = 0; i < 8; i++) {
		struct json_object *e = json_object_new_object();
		json_object_object_add(
		    e, "type",
		    json_object_new_string(i == 1 ? EVIL_TYPE : "System.Collections.Generic.List<System.Byte[]>"));
		json_object_object_add(e, "retained_bytes",
		                       i == 2 ? json_object_new_string("9") : json_object_new_int64(209722104 - i));
		json_object_object_add(e, "bytes", json_object_new_int64(32));
		json_object_array_add(types, e);
	}
	json_object_object_add(ret, "computed", json_object_new_boolean(1));
	json_object_object_add(ret, "types", types);
	json_object_object_add(heap, "retained", ret);
	m = open_memstream(&buf, &len);
	CHECK(context_show(m, ctx, 1) == 0);
	fclose(m);
	CHECK(!has_control(buf, len));
	CHECK(strstr(buf, "  what they keep alive (retained: the objects only they hold, themselves included):\n"
	                  "   retained     bytes  type\n"
	                  "    209.7MB       32B  System.Collections.Generic.List<System.Byte[]>\n"
	                  "    209.7MB       32B  Evil\\x1b[31m<script>") != NULL);
	CHECK(strstr(buf, "          ?       32B  System.Collections") != NULL);
	CHECK(count(buf, "      32B  ") == CONTEXT_SHOW_HEAP_RETAINED);
	free(buf);
	buf = NULL;
	page = report_page_of(ctx);
	CHECK(strstr(page, "<p class=\"retained\">what they keep alive <span class=\"src\">(retained: the objects "
	                   "only they hold, themselves included)</span></p><table class=\"heap\"><tr><th "
	                   "class=\"n\">retained</th><th class=\"n\">bytes</th><th>type</th></tr>\n"
	                   "<tr><td class=\"n\">209.7MB</td><td class=\"n\">32B</td><td><code>"
	                   "System.Collections.Generic.List&lt;System.Byte[]&gt;</code></td></tr>\n"
	                   "<tr><td class=\"n\">209.7MB</td><td class=\"n\">32B</td><td><code>"
	                   "Evil[31m&lt;script&gt;alert(1)&lt;/script&gt; &amp;&quot;&#39;</code></td></tr>\n"
	                   "<tr><td class=\"n\">?</td><td class=\"n\">32B</td>") != NULL);
	CHECK(strstr(page, "<script") == NULL);
	CHECK(count(page, "<td class=\"n\">32B</td>") == CONTEXT_CARD_HEAP_RETAINED);
	CHECK(count(page, "what they keep alive") == 1 && strstr(page, "not computed") == NULL);
	free(page);

	ret = json_object_new_object();
	json_object_object_add(ret, "computed", json_object_new_boolean(0));
	json_object_object_add(ret, "why", json_object_new_string("the heap has more than 4000000 objects\x1b[2J"));
	json_object_object_add(heap, "retained", ret);
	m = open_memstream(&buf, &len);
	CHECK(context_show(m, ctx, 1) == 0);
	fclose(m);
	CHECK(strstr(buf, "  retained sizes: not computed: the heap has more than 4000000 objects\\x1b[2J\n") != NULL);
	CHECK(strstr(buf, "what they keep alive") == NULL);
	free(buf);
	json_object_object_add(ret, "why", json_object_new_string("more than 4000000 objects <i>x</i>\x1b[2J"));
	page = report_page_of(ctx);
	CHECK(strstr(page, "<p class=\"retained\">retained sizes: not computed: more than 4000000 objects "
	                   "&lt;i&gt;x&lt;/i&gt;[2J</p>") != NULL);
	CHECK(strstr(page, "what they keep alive") == NULL && strstr(page, "<i>") == NULL);
	free(page);

	/* Not computed, for no reason given (or one that is not a string). */
	json_object_object_add(ret, "why", json_object_new_int(7));
	m = open_memstream(&buf, &len);
	CHECK(context_show(m, ctx, 1) == 0);
	fclose(m);
	CHECK(strstr(buf, "  retained sizes: not computed\n") != NULL);
	free(buf);
	page = report_page_of(ctx);
	CHECK(strstr(page, "<p class=\"retained\">retained sizes: not computed</p>") != NULL);
	free(page);

	/* A summary that says nothing of them (older than they are): nothing. */
	json_object_object_del(heap, "retained");
	m = open_memstream(&buf, &len);
	CHECK(context_show(m, ctx, 1) == 0);
	fclose(m);
	CHECK(strstr(buf, "retained") == NULL);
	free(buf);
	page = report_page_of(ctx);
	CHECK(strstr(page, "class=\"retained\"") == NULL && strstr(page, "<th>Heap</th>") != NULL);
	free(page);
	json_object_put(ctx);
}

static void test_heap_hostile(void)
{
	struct json_object *ctx = hostile_heap();
	char dir[] = "/tmp/test_context_heap.XXXXXX", *buf = NULL, *sum = NULL, *page, *caught, *line;
	size_t len = 0, longest = 0;
	FILE *m = open_memstream(&buf, &len);
	int r;

	CHECK(context_show(m, ctx, 1) == 0);
	fclose(m);
	CHECK(!has_control(buf, len));
	CHECK(strstr(buf, "\xE2\x80\xAE") == NULL);
	CHECK(strstr(buf, "heap summary: missing: snapshot \\x1b[2J<i>failed</i>\\nline\n") != NULL);
	/* Escaped, whole: the NUL and the byte after it too. */
	CHECK(
	    strstr(
	        buf,
	        "99.0%  LOH                 Evil\\x1b[31m<script>alert(1)</script>\\n\\x07&\"'\\u202e\\xff\\x00z\n") !=
	    NULL);
	/* The long name cut at CONTEXT_NAME_MAX with an ellipsis. */
	CHECK(strstr(buf, "  gen2                AAAAAAAA") != NULL);
	CHECK(count(buf, "A") < 40 * CONTEXT_NAME_MAX);
	/* A figure of the wrong type is "?", never read as a number. */
	CHECK(strstr(buf, "          ?      10,000      ?  ?                   HeapLeaf\n") != NULL);
	CHECK(strstr(buf, "the target was paused") == NULL);
	/* 15 types shown of 20,030: the rest summed, as many as the file holds. */
	CHECK(strstr(buf, "(20,221 other types)\n") != NULL);
	CHECK(count(buf, "Filler") == 0);
	/* The 1,000 steps: the first and last eight, the rest counted. */
	CHECK(strstr(buf, "      s_\\x1b]0;title\\x07<b>x</b> (static) \u2192 AAAA") != NULL);
	CHECK(strstr(buf, "\u2192 \u2026 984 more \u2192 ") != NULL);
	CHECK(count(buf, "Evil") == 2 + 8);
	/* The cut path: an ellipsis before its last step. */
	CHECK(strstr(buf, " \u2192 \u2026 \u2192 HeapNode (nested)\n") != NULL);
	/* Every line bounded: 16 steps of at most CONTEXT_NAME_MAX bytes. */
	for (char *p = buf; (line = strchr(p, '\n')); p = line + 1)
		if ((size_t)(line - p) > longest)
			longest = (size_t)(line - p);
	CHECK_MSG(longest < (CONTEXT_PATH_STEPS + 1) * (CONTEXT_NAME_MAX + 24), "a line of %zu bytes", longest);
	CHECK_MSG(len < 64 * 1024, "%zu bytes of text", len);
	free(buf);

	/* The card. */
	CHECK(mkdtemp(dir) != NULL);
	{
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/" CTX_HEAP ".json", dir);
		CHECK(json_object_to_file_ext(path, ctx, JSON_C_TO_STRING_PLAIN) == 0);
	}
	copy_fixture(dir, CTX_HEAP);
	{
		/* The real one beside it, under another name. */
		char from[PATH_MAX], to[PATH_MAX];
		snprintf(from, sizeof(from), "%s/" CTX_HEAP ".json", dir);
		snprintf(to, sizeof(to), "%s/real.json", dir);
		CHECK(rename(from, to) == 0);
		snprintf(from, sizeof(from), "%s/" CTX_HEAP ".json", dir);
		CHECK(json_object_to_file_ext(from, ctx, JSON_C_TO_STRING_PLAIN) == 0);
	}
	caught = report_caught(dir, NULL, &sum, &r);
	CHECK_MSG(strstr(sum, ": 2 dumps (0 skipped, 0 failed)\n") != NULL, "%s", sum);
	free(sum);
	free(caught);
	{
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/index.html", dir);
		page = slurp(path, &len);
	}
	CHECK(page != NULL);
	if (page) {
		CHECK(!has_control(page, len));
		CHECK(strstr(page, "\xE2\x80\xAE") == NULL);
		CHECK(strstr(page, "<script") == NULL && strstr(page, "<b>x") == NULL &&
		      strstr(page, "<i>failed") == NULL);
		CHECK(count(page, "<th>Heap</th>") == 2);
		CHECK(strstr(page, "<span class=\"error\">no summary: snapshot [2J&lt;i&gt;failed&lt;/i&gt; "
		                   "line</span><br>105.9MB") != NULL);
		CHECK(strstr(
		          page,
		          "<code>Evil[31m&lt;script&gt;alert(1)&lt;/script&gt; &amp;&quot;&#39;\xEF\xBF\xBDz</code>") !=
		      NULL);
		/* The long name: CONTEXT_NAME_MAX characters and an ellipsis. */
		{
			char want[CONTEXT_NAME_MAX + 32];
			memset(want, 'A', CONTEXT_NAME_MAX);
			snprintf(want + CONTEXT_NAME_MAX - 1, sizeof(want) - CONTEXT_NAME_MAX + 1,
			         "A\xE2\x80\xA6</code>");
			CHECK(strstr(page, want) != NULL);
			want[0] = 'x';
			memset(want, 'A', CONTEXT_NAME_MAX + 1);
			want[CONTEXT_NAME_MAX + 1] = '\0';
			CHECK(strstr(page, want) == NULL);
		}
		/* Each card: 8 types and a row of the others; two paths. */
		CHECK(count(page, "<tr><td class=\"n\">") == 2 * (CONTEXT_CARD_HEAP_TYPES + 1));
		CHECK(strstr(page, ">20,228 other types</td>") != NULL);
		CHECK(strstr(page, ">228 other types</td>") != NULL);
		CHECK(count(page, "<p class=\"path\">") == 2 * CONTEXT_CARD_HEAP_PATHS);
		CHECK(
		    strstr(page,
		           "<p class=\"path\"><code>System.Byte[]</code> 104.9MB of 104.9MB held by<br><code>s_entries "
		           "(static) \xE2\x86\x92 List&lt;Byte[]&gt; \xE2\x86\x92 Byte[][] \xE2\x86\x92 "
		           "Byte[]</code></p>") != NULL);
		CHECK(strstr(page, "<code>s_]0;title&lt;b&gt;x&lt;/b&gt; (static) \xE2\x86\x92 AAAA") != NULL);
		CHECK(strstr(page, "\xE2\x86\x92 \xE2\x80\xA6 984 more \xE2\x86\x92") != NULL);
		CHECK(strstr(page, "105.9MB in 24,819 objects; the target was paused 5.47ms for the snapshot") != NULL);
		CHECK(count(page, "the target was paused") == 1);
		CHECK_MSG(len < 200 * 1024, "a page of %zu bytes", len);
		free(page);
	}
	remove_dir(dir);
	json_object_put(ctx);
}

/* ---- bounds -------------------------------------------------------------- */

/* A file past the per-context limit is refused unread, by show and by
 * report: a valid context followed by NUL bytes up to the size says "too
 * large", where a file that was read would say "not JSON: it holds a NUL
 * byte". */
static void test_file_limit(void)
{
	char dir[] = "/tmp/test_context.XXXXXX", path[PATH_MAX], err[PATH_MAX + 512], *sum = NULL, *caught, *text;
	struct context_limits lim = context_limits_default;
	size_t len;
	FILE *devnull = fopen("/dev/null", "w");
	int r, fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/%s.json", CTX_DIR, CTX_DUMP);
	text = slurp(path, &len);
	CHECK(text != NULL);
	if (!text)
		return;
	put_file(dir, "huge.json", text, len);
	snprintf(path, sizeof(path), "%s/huge.json", dir);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)CONTEXT_FILE_MAX + 1) == 0);
	close(fd);
	r = context_show_file(path, devnull, err, sizeof(err));
	CHECK_MSG(r == -EFBIG, "%d %s", r, err);
	CHECK_MSG(strstr(err, "/huge.json: too large for a dump context (4194305 bytes; at most 4194304), not read") &&
	              !strchr(err, '\n'),
	          "%s", err);
	/* At the limit it is read (and then is not JSON). */
	CHECK(truncate(path, (off_t)CONTEXT_FILE_MAX) == 0);
	r = context_show_file(path, devnull, err, sizeof(err));
	CHECK_MSG(r == -EBADMSG && strstr(err, "NUL byte"), "%d %s", r, err);

	/* In a report, with a smaller limit: the fixture is shown, a copy one
	 * byte longer than the limit is warned about, unread. */
	lim.file_max = len;
	CHECK(truncate(path, (off_t)len + 1) == 0);
	put_file(dir, CTX_DUMP ".json", text, len);
	caught = report_caught(dir, &lim, &sum, &r);
	CHECK_MSG(caught && strstr(caught, "/huge.json: too large for a dump context") && !strstr(caught, "NUL") &&
	              count(caught, "\n") == 1,
	          "%s", caught ? caught : "");
	CHECK_MSG(sum && strstr(sum, ": 1 dump (0 skipped, 0 failed)\n"), "%s", sum ? sum : "");
	free(caught);
	free(sum);
	free(text);
	fclose(devnull);
	remove_dir(dir);
}

/* Six copies of one context, c0 (oldest) to c5 (newest, by the fire and by
 * modification time), and a file that is not JSON, older than all of them. */
static void make_six(const char *dir, size_t *ret_len)
{
	char path[PATH_MAX], name[32], *text, *p;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s.json", CTX_DIR, CTX_DUMP);
	text = slurp(path, &len);
	CHECK(text != NULL);
	*ret_len = len;
	if (!text)
		return;
	p = strstr(text, "1795000000123"); /* fired_unix_ms */
	CHECK(p != NULL);
	for (int i = 0; i < 6 && p; i++) {
		p[12] = (char)('0' + i); /* fired 1795000000120 + i */
		snprintf(name, sizeof(name), "c%d.json", i);
		put_file(dir, name, text, len);
		set_mtime(dir, name, 1795000000 + i);
	}
	put_str(dir, "a-not-json.json", "not JSON at all");
	set_mtime(dir, "a-not-json.json", 1700000000);
	free(text);
}

/* The line that names what was left out: exactly one, holding each of the
 * names given (NULL-terminated) in that order. */
static void check_left_out(const char *caught, const char *what, const char *const *names)
{
	const char *line = caught ? strstr(caught, " left out of the page") : NULL, *at;

	CHECK_MSG(line != NULL, "no line says what was left out: %s", caught ? caught : "");
	if (!line)
		return;
	while (line > caught && line[-1] != '\n')
		line--;
	CHECK_MSG(count(caught, "left out") == 1, "%s", caught);
	CHECK_MSG(strstr(line, what) != NULL && strstr(line, what) < strchr(line, '\n'), "'%s' not in: %s", what,
	          caught);
	at = line;
	for (size_t i = 0; names[i]; i++) {
		const char *n = strstr(at, names[i]);
		CHECK_MSG(n != NULL && n < strchr(line, '\n'), "%s not named (in order) in: %s", names[i], caught);
		at = n ? n : at;
	}
}

static void test_report_limits(void)
{
	char dir[] = "/tmp/test_context.XXXXXX", path[PATH_MAX], *sum = NULL, *caught, *page;
	struct context_limits lim = context_limits_default;
	size_t len, plen;
	int r;

	CHECK(mkdtemp(dir) != NULL);
	make_six(dir, &len);
	snprintf(path, sizeof(path), "%s/index.html", dir);

	/* The total read: room for two and a half contexts. The two newest are
	 * shown; the four older ones and the file that is not JSON are not read
	 * (no warning about it), and named in one line. */
	lim.read_max = len * 5 / 2;
	caught = report_caught(dir, &lim, &sum, &r);
	{
		static const char *const left[] = {"c3.json", "c2.json", "c1.json", "c0.json", "a-not-json.json", NULL};
		char what[128];
		snprintf(what, sizeof(what),
		         "5 files left out of the page, the oldest, beyond the report's limits (%zu "
		         "bytes of contexts read)",
		         lim.read_max);
		check_left_out(caught, what, left);
	}
	CHECK_MSG(caught && !strstr(caught, "not JSON"), "%s", caught ? caught : "");
	CHECK_MSG(sum && strstr(sum, ": 2 dumps (0 skipped, 0 failed), 5 files left out\n"), "%s", sum ? sum : "");
	page = slurp(path, &plen);
	CHECK(page && count(page, "<article") == 2 && strstr(page, "c5.json") && strstr(page, "c4.json") &&
	      !strstr(page, "c3.json"));
	CHECK(page && strstr(page, "5 more files left out (the oldest)") != NULL);
	free(page);
	free(caught);
	free(sum);

	/* The count: three. */
	lim = context_limits_default;
	lim.count_max = 3;
	caught = report_caught(dir, &lim, &sum, &r);
	{
		static const char *const left[] = {"c2.json", "c1.json", "c0.json", "a-not-json.json", NULL};
		check_left_out(caught, "4 files left out of the page, the oldest, beyond the report's limits (3 files)",
		               left);
	}
	CHECK_MSG(sum && strstr(sum, ": 3 dumps (0 skipped, 0 failed), 4 files left out\n"), "%s", sum ? sum : "");
	free(caught);
	free(sum);

	/* The page: cards while they fit; the page stays within the bound (and
	 * its header). */
	lim = context_limits_default;
	lim.page_max = 2 * len;
	caught = report_caught(dir, &lim, &sum, &r);
	page = slurp(path, &plen);
	{
		int shown = page ? count(page, "<article") : -1;
		char what[128], want[64];

		CHECK_MSG(shown >= 1 && shown < 6, "%d cards", shown);
		CHECK_MSG(page && plen <= lim.page_max + 16384, "a page of %zu bytes", plen);
		snprintf(what, sizeof(what),
		         "%d files left out of the page, the oldest, beyond the report's limits "
		         "(%zu bytes of page)",
		         6 - shown, lim.page_max);
		check_left_out(caught, what, (const char *const[]){"c0.json", NULL});
		snprintf(want, sizeof(want), ": %d dump%s (0 skipped, 0 failed), %d files left out\n", shown,
		         shown == 1 ? "" : "s", 6 - shown);
		CHECK_MSG(sum && strstr(sum, want), "%s", sum ? sum : "");
		/* The not-JSON file was read this time, and warned about. */
		CHECK_MSG(caught && strstr(caught, "a-not-json.json: not JSON"), "%s", caught ? caught : "");
	}
	free(page);
	free(caught);
	free(sum);

	/* Many names: one line all the same, the names that fit and a count. */
	{
		char name[64];
		static const char *const newest[] = {"many-299-", "many-298-", "many-297-", NULL};

		for (int i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "many-%03d-%s.json", i, "a-rather-long-name-of-a-dump-context");
			put_str(dir, name, "{}");
			set_mtime(dir, name, 1600000000 + i);
		}
		lim = context_limits_default;
		lim.count_max = 6;
		caught = report_caught(dir, &lim, &sum, &r);
		check_left_out(caught, "301 files left out of the page", newest);
		CHECK_MSG(caught && count(caught, "\n") == 1 && strlen(caught) < 2048 && strstr(caught, " more\n"),
		          "%s", caught ? caught : "");
		free(caught);
		free(sum);
	}
	remove_dir(dir);
}

int main(void)
{
	test_sidecar_name();
	test_sparkline();
	test_html_escape();
	test_relative_url();
	test_load();
	test_show();
	test_report();
	test_type_short();
	test_show_heap();
	test_heap_hostile();
	test_show_retained();
	test_file_limit();
	test_report_limits();
	return check_done();
}
