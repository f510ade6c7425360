/* Dump contexts read back (the NAME.json dumpwatch writes beside each dump
 * NAME.core, version 1, docs/context.md): `dumpwatch show FILE` prints one as
 * text for a terminal, `dumpwatch report DIR` writes one self-contained HTML
 * page of every context in a directory, newest first, each with its plot
 * (plot.h) inline. Every string in a context may hold what a hostile process
 * chose: the text view escapes it (text_escape), the page HTML-escapes it.
 *
 * The pure parts (the sidecar name, the sparkline, HTML escaping, relative
 * links) are here too so the unit tests reach them without files. */
#ifndef DUMPWATCH_CONTEXT_H
#define DUMPWATCH_CONTEXT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

/* The largest context file read: a context holds 5 minutes of history at
 * 250 ms per metric and condition (a few hundred kB); 64 MiB leaves room for
 * many series and refuses what no dumpwatch wrote. */
#define CONTEXT_FILE_MAX (64u * 1024 * 1024)
/* The most contexts one report shows; the rest are left out with a warning. */
#define CONTEXT_REPORT_MAX 10000
/* The GCs `show` lists: the newest of those in the context. */
#define CONTEXT_SHOW_GCS 10
/* Columns of a sparkline in `show`. */
#define CONTEXT_SPARK_COLS 60

/* The name of the context beside FILE: FILE itself when it ends in ".json";
 * ".core" (or ".svg", the other sidecar) replaced by ".json"; else ".json"
 * appended. Returns 0, or -ENAMETOOLONG when it does not fit in out. */
int context_sidecar_name(const char *file, char *out, size_t outlen);

/* Reads and parses the dump context at path: a regular file (opened
 * non-blocking so a FIFO cannot hang us; nofollow refuses a symbolic link) of
 * at most CONTEXT_FILE_MAX bytes holding a JSON object with
 * "dumpwatch_context": 1 and the keys a view cannot do without (outcome,
 * fired_unix_ms, rule, process). Returns 0 with *ret_ctx (json_object_put it),
 * or -errno with a sentence in err (without the path): the open's or read's
 * errno, -EINVAL (not a regular file), -EFBIG (too large), -EBADMSG (not JSON,
 * or a context that lacks a key), -ENOMSG (JSON, but not a dump context),
 * -EPROTONOSUPPORT (a context version this dumpwatch cannot read). */
int context_load(int dirfd, const char *path, int nofollow, struct json_object **ret_ctx, char *err, size_t errlen);

/* Whether the terminal takes UTF-8: LC_CTYPE from the environment
 * (setlocale) names the UTF-8 code set. */
int context_locale_utf8(void);

/* Prints ctx (context_load's) as text: the outcome and why (the rule and each
 * condition with its value at the fire), when, the dump, the process, a
 * sparkline per condition over the history and the last GCs. Fields missing
 * or of the wrong type show as "?" or are left out, never guessed. utf8 picks
 * block elements for the sparklines, else ASCII. Returns 0, or -EIO when out
 * failed. */
int context_show(FILE *out, struct json_object *ctx, int utf8);

/* `dumpwatch show FILE`: context_sidecar_name, context_load, context_show to
 * out. Returns 0, or -errno as context_load (-ENAMETOOLONG, -EIO too) with a
 * one-line sentence in err that starts with the file's name. */
int context_show_file(const char *file, FILE *out, char *err, size_t errlen);

/* Renders the n points (t[i], v[i]) (t ascending) as a sparkline of cols
 * columns over [t[0], t[n-1]]: each column shows the highest value in its
 * time span (the lowest when op is "<" or "<="), a column without a point
 * holds the value before it; heights are scaled from the lowest to the highest
 * value shown. bars gets the line (utf8: U+2581..U+2588, else " .:-=+*#");
 * marks a line as wide of '^' under each column whose value holds
 * "value OP threshold" and ' ' elsewhere (all blank when op is NULL or not
 * one of > >= < <=). Non-finite values are skipped. *ret_lo and *ret_hi get
 * the scale. Both outputs are NUL-terminated and need 3 * cols + 1 bytes
 * (utf8) or cols + 1. Returns the number of columns drawn (0 when there is no
 * finite point; cols when there is), or -ENOBUFS when an output is too small. */
int context_sparkline(const double *t, const double *v, size_t n, size_t cols, const char *op, double threshold,
                      int utf8, char *bars, size_t barslen, char *marks, size_t markslen, double *ret_lo,
                      double *ret_hi);

/* Writes s[0..len) as HTML text fit for an element or a quoted attribute:
 * & < > " ' as entities, invalid UTF-8 as U+FFFD, tab, newline and carriage
 * return as a space, the other characters of text_is_control (NUL included)
 * and the noncharacters U+FFFE, U+FFFF left out (text_put_markup). */
void context_html_escape(FILE *out, const char *s, size_t len);

/* The relative URL of directory to_dir as seen from directory from_dir (both
 * absolute, normalized: no "." or ".." components, as realpath gives), with a
 * trailing '/' unless empty: "" when equal, "../dumps/" and so on. Each
 * component is percent-encoded (all but A-Z a-z 0-9 - . _ ~). Returns 0, or
 * -ENAMETOOLONG. */
int context_relative_url(const char *from_dir, const char *to_dir, char *out, size_t outlen);

/* `dumpwatch report DIR`: reads every *.json in dir that is a dump context
 * (other JSON is skipped silently, a broken context with a warning), at most
 * CONTEXT_REPORT_MAX, and writes the page to out_path (NULL: DIR/index.html)
 * atomically: a new file beside it (O_EXCL, O_NOFOLLOW, mode 0644), fsync,
 * rename over it. dir (and out_path's directory) is opened once, not when it
 * is a symbolic link (trailing slashes ignored), and everything is read and
 * written through that descriptor: a directory swapped for a link meanwhile is
 * never followed. On success prints "wrote PATH: N dumps (S skipped, F
 * failed)" to summary, PATH the page in the directory written by its real
 * path then, N counting every context shown. Returns 0, or -errno with a
 * one-line sentence in err: of opening dir (-ENOENT, -ENOTDIR, -EACCES,
 * -ELOOP for a link...), -EISDIR when out_path names no file, or of writing
 * the page. */
int context_report(const char *dir, const char *out_path, FILE *summary, char *err, size_t errlen);

#endif
