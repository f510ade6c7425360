/* Dump contexts read back (the NAME.json dumpwatch writes beside each dump
 * NAME.core, version 1, docs/context.md): `dumpwatch show FILE` prints one as
 * text for a terminal, `dumpwatch report DIR` writes one self-contained HTML
 * page of every context in a directory, newest first, each with its plot
 * (plot.h) inline. Every string in a context may hold what a hostile process
 * chose: the text view escapes it (text_escape), the page HTML-escapes it.
 *
 * The pure parts (the sidecar name, the sparkline, HTML escaping, relative
 * links) are here too so the unit tests reach them without files. Loading
 * is context.c's, the text show.c's, the page report_page.c's and its cards
 * report_card.c's. */
#ifndef DUMPWATCH_CONTEXT_H
#define DUMPWATCH_CONTEXT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

/* What `show` and `report` read and hold at most. A context dumpwatch writes
 * is bounded by its history (docs/context.md): at most 32 series of 1201
 * points, each point at most about 52 bytes of JSON ([t, last, min, max] with
 * 7 significant digits), about 2.0 MB, plus the last 50 GCs, a command line
 * of at most 4 kB and the rule's texts: 2.1 MB at the very most; 41 kB to
 * 238 kB as measured. A file beyond CONTEXT_FILE_MAX, about twice that, is
 * refused unread. Parsed, a 4 MiB file built to cost the most (a point
 * "[0,0,0,0]" is 10 bytes and five json-c objects) took 200 MB and 0.5 s to
 * show; 8 MiB took 390 MB. */
#define CONTEXT_FILE_MAX (4u * 1024 * 1024)
/* A report reads at most CONTEXT_READ_MAX bytes of contexts, the newest files
 * by modification time first (a file that grew after it was listed may pass
 * this by that one file), lists at most CONTEXT_REPORT_MAX files and builds
 * at most CONTEXT_PAGE_MAX bytes of cards: about 730 idle contexts (41 kB,
 * 46 kB of card each) or 140 busy ones (238 kB). What is left out is named in
 * one warning line and counted on the page and in the summary. Measured at
 * these limits (2-core VM, docs/context.md): 48 MB and 3.6-4.5 s for 3,001
 * idle contexts, 200 MB and 10 s for 18 contexts of 4 MiB built to cost the
 * most. */
#define CONTEXT_READ_MAX (32u * 1024 * 1024)
#define CONTEXT_PAGE_MAX (32u * 1024 * 1024)
#define CONTEXT_REPORT_MAX 10000

/* The bounds of context_load and context_report; context_limits_default
 * holds the ones above. Tests pass smaller ones. */
struct context_limits {
	size_t file_max;  /* bytes of one context file */
	size_t read_max;  /* bytes of contexts one report reads, in each of its two passes */
	size_t page_max;  /* bytes of the cards of one page */
	size_t count_max; /* contexts one report lists and shows */
};
extern const struct context_limits context_limits_default;

/* The GCs `show` lists: the newest of those in the context. */
#define CONTEXT_SHOW_GCS 10
/* The allocating types `show` lists: the largest of those in the context. */
#define CONTEXT_SHOW_ALLOC_TYPES 10
/* Columns of a sparkline in `show`. */
#define CONTEXT_SPARK_COLS 60
/* The heap summary (a context's "heap"): the types `show` lists (the context
 * holds 30) and the retention paths it shows (of the largest types; the
 * context holds 10); the types and paths a report's card shows. */
#define CONTEXT_SHOW_HEAP_TYPES 15
#define CONTEXT_SHOW_HEAP_PATHS 5
/* The types that retain the most, in show and on a card (the context holds
 * 30). */
#define CONTEXT_SHOW_HEAP_RETAINED 5
#define CONTEXT_CARD_HEAP_TYPES 8
#define CONTEXT_CARD_HEAP_PATHS 2
#define CONTEXT_CARD_HEAP_RETAINED 5
/* The most of a name from the target (a type, a root) shown in a heap table
 * or path: `show`'s escaped text in bytes, the card's in characters; the
 * rest is cut with an ellipsis. A path shows at most CONTEXT_PATH_STEPS
 * steps: the first half and the last half of a longer one (dumpwatch writes
 * at most 16; a planted file may hold any number). */
#define CONTEXT_NAME_MAX 200
#define CONTEXT_PATH_STEPS 16

/* The name of the context beside FILE: FILE itself when it ends in ".json";
 * ".core" (or ".gcdump", the other kind of dump, or ".svg", the other
 * sidecar) replaced by ".json"; else ".json" appended. Returns 0, or -ENAMETOOLONG when it does not fit in out. */
int context_sidecar_name(const char *file, char *out, size_t outlen);

/* Reads and parses the dump context at path: a regular file (opened
 * non-blocking so a FIFO cannot hang us; nofollow refuses a symbolic link) of
 * at most max bytes (refused unread when fstat says it is larger, and no more
 * read when it grows) holding a JSON object with "dumpwatch_context": 1 and
 * the keys a view cannot do without (outcome, fired_unix_ms, rule, process).
 * Returns 0 with *ret_ctx (json_object_put it), or -errno with a sentence in
 * err (without the path): the open's or read's errno, -EINVAL (not a regular
 * file), -EFBIG (too large), -EBADMSG (not JSON, or a context that lacks a
 * key), -ENOMSG (JSON, but not a dump context), -EPROTONOSUPPORT (a context
 * version this dumpwatch cannot read). *ret_bytes (when not NULL) gets the
 * bytes read, whatever the result. */
int context_load(int dirfd, const char *path, int nofollow, size_t max, struct json_object **ret_ctx, size_t *ret_bytes,
                 char *err, size_t errlen);

/* Whether the terminal takes UTF-8: LC_CTYPE from the environment
 * (setlocale) names the UTF-8 code set. */
int context_locale_utf8(void);

/* Prints ctx (context_load's) as text: the outcome and why (the rule and each
 * condition with its value at the fire), when, the dump, the process, a
 * sparkline per condition over the history, the last GCs, the types that
 * allocated most and the heap summary: the largest types with their
 * generations and the paths that hold them, the types that keep the most
 * alive, the target's pause (when the context has them, or the reason it has
 * none). Fields missing or of the wrong type show as "?" or are left out,
 * never guessed. utf8 picks
 * block elements for the sparklines, else ASCII. Returns 0, or -EIO when out
 * failed. */
int context_show(FILE *out, struct json_object *ctx, int utf8);

/* `dumpwatch show FILE`: context_sidecar_name, context_load (at most
 * CONTEXT_FILE_MAX bytes), context_show to out. Returns 0, or -errno as
 * context_load (-ENAMETOOLONG, -EIO too) with a one-line sentence in err that
 * starts with the file's name. */
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

/* A .NET type name without its namespaces, for a retention path:
 * "System.Collections.Generic.List<System.Byte[]>" is "List<Byte[]>", every
 * run of identifier characters followed by '.' and another identifier
 * character left out, the rest (nested types' '+', generic arguments, array
 * ranks, any other byte) kept as it is. Writes at most outlen - 1 bytes and
 * a NUL to out (outlen > 0); returns the length of the whole result, which
 * is at most len and may hold NULs when s does, as snprintf does. */
size_t context_type_short(const char *s, size_t len, char *out, size_t outlen);

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

/* `dumpwatch report DIR`: reads the *.json in dir that are dump contexts
 * (other JSON is skipped silently, a broken context with a warning) and writes
 * the page to out_path (NULL: DIR/index.html) atomically: a new file beside it
 * (O_EXCL, O_NOFOLLOW, mode 0644), fsync, rename over it. dir (and out_path's
 * directory) is opened once, not when it is a symbolic link (trailing slashes
 * ignored), and everything is read and written through that descriptor: a
 * directory swapped for a link meanwhile is never followed.
 *
 * Bounded by lim (NULL: context_limits_default): the files are taken newest
 * first by modification time, at most count_max of them and read_max bytes
 * (a file beyond file_max is refused unread); the cards, newest first by the
 * fire, while the page holds at most page_max bytes of them. What is left
 * out is named in one warning line ("DIR: N files left out of the page, the
 * oldest, beyond ...: NAME, NAME and K more") and counted on the page.
 *
 * On success prints "wrote PATH: N dumps (S skipped, F failed)" to summary,
 * with ", K files left out" when some were, PATH the page in the directory
 * written by its real path then, N counting every context shown. Returns 0,
 * or -errno with a one-line sentence in err: of opening dir (-ENOENT,
 * -ENOTDIR, -EACCES, -ELOOP for a link...), -EISDIR when out_path names no
 * file, or of writing the page. */
int context_report(const char *dir, const char *out_path, const struct context_limits *lim, FILE *summary, char *err,
                   size_t errlen);

#endif
