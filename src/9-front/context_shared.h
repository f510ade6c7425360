/* What the files of `show` and `report` share: context.c's typed reads and
 * formats of a parsed context, and report_card.c's card for report_page.c.
 * Not a public contract: context.h is. */
#ifndef DUMPWATCH_CONTEXT_SHARED_H
#define DUMPWATCH_CONTEXT_SHARED_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A wall-clock time in ms since the epoch: 1, or 0 when missing or beyond
 * what gmtime handles in any year a dump could have been taken. */
int cx_time_ms(struct json_object *o, const char *key, int64_t *out);

/* v in the unit of o ("351.2MB"); a unit this dumpwatch does not know is
 * shown by its escaped name after the number. */
const char *cx_fmt_value(struct json_object *o, double v, char *buf, size_t buflen);

/* "2026-11-23T18:57:16.123Z", or "?" when ms is out of gmtime's range. */
const char *cx_fmt_utc(int64_t ms, char *buf, size_t buflen);

/* A condition's value at the fire: "351.2MB", "at least 351.2MB", "no value". */
const char *cx_fmt_cond_value(struct json_object *cond, char *buf, size_t buflen);

/* The outcome of ctx (enum dumpctx_outcome), or -1 for one dumpwatch does
 * not write. */
int cx_outcome_of(struct json_object *ctx);

/* v as a count with thousands grouped: "24,819"; "?" when v is not a
 * count (negative, beyond 2^53). */
const char *cx_fmt_count(double v, char *buf, size_t buflen);

/* Where the bytes of a heap summary's type lie, from its "generations"
 * (bytes by generation): "LOH" when one generation holds nearly all
 * (99.5 %), else the two that hold most with their shares, "gen1 63% gen2
 * 29%", and "+" when others hold more than a rounding's worth; "?" when gens
 * says nothing. Only the generations dumpwatch writes are read. */
const char *cx_heap_where(struct json_object *gens, char *buf, size_t buflen);

/* The types of heap (a context's "heap") beyond the first shown of its
 * "types": those listed and not shown (at most CX_HEAP_OTHER_SCAN of them
 * read) and those it counts as "other_types", summed: how many, their bytes
 * and objects. */
#define CX_HEAP_OTHER_SCAN 4096
struct cx_heap_other {
	double count, bytes, objects;
};
void cx_heap_other(struct json_object *heap, size_t shown, struct cx_heap_other *out);

/* The retention path of heap (a context's "heap") whose type is the len
 * bytes at type, or NULL; looks at no more than the first CX_HEAP_PATHS_SCAN
 * paths (dumpwatch writes 10). */
#define CX_HEAP_PATHS_SCAN 64
struct json_object *cx_heap_path_of(struct json_object *heap, const char *type, size_t len);

/* The retained sizes of heap (a context's "heap", its "retained"), as both
 * views read them: absent (a summary that says nothing of them), not
 * computed (with the summary's reason, when it gives one as a string), or
 * computed (every "computed" but true is not), with the types that keep the
 * most alive: the first n of them, at most the max the caller shows. */
enum cx_retained_state { CX_RETAINED_ABSENT, CX_RETAINED_NOT_COMPUTED, CX_RETAINED_COMPUTED };
struct cx_retained {
	enum cx_retained_state state;
	const char *why; /* NOT_COMPUTED: NULL when the summary gives no reason */
	size_t why_len;
	struct json_object *types; /* COMPUTED: the array, or NULL */
	size_t n;                  /* COMPUTED: the types to show */
};
void cx_heap_retained(struct json_object *heap, size_t max, struct cx_retained *out);

/* Row i (< r->n) of the types that keep the most alive: the type's name
 * (NULL when it is not a string; unescaped, type_len bytes), what it retains
 * and its own bytes formatted ("209.7MB"; "?" when not a number). */
struct cx_retained_row {
	const char *type;
	size_t type_len;
	char retained[48], bytes[48];
};
void cx_heap_retained_row(const struct cx_retained *r, size_t i, struct cx_retained_row *out);

/* context_html_escape of a NUL-terminated string. */
void cx_h(FILE *out, const char *s);

/* The allocating types a card lists. */
#define CX_CARD_ALLOC_TYPES 5

/* The card of ctx, read from the file json_name in the directory dirfd: its
 * links are to json_name and the dump file beside it, under the page's
 * relative prefix. */
void cx_html_card(FILE *out, struct json_object *ctx, const char *json_name, const char *prefix, int dirfd);

/* The page's style sheet. */
extern const char cx_page_style[];

#endif
