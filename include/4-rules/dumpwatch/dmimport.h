/* dotnet-monitor collection rules to dumpwatch rule files: the converter
 * behind `dumpwatch import dotnet-monitor`. Pure: the settings text in, the
 * text of one rule file per convertible collection rule and one note per part
 * that could not be carried over out; reading and writing files is the
 * caller's (src/9-front/cmd_import.c).
 *
 * The input is a dotnet-monitor settings file (JSON, keys matched without
 * regard to case as .NET's configuration does) with a "CollectionRules"
 * object, or the same settings flattened as a Kubernetes ConfigMap's or the
 * environment's keys ("CollectionRules__NAME__Trigger__Type", with or without
 * the "DotnetMonitor_" prefix, at the top level or under "data"). The
 * mapping, its defaults and what is refused are in docs/guide.md, "Importing
 * dotnet-monitor collection rules". Every rule text produced is checked with
 * rulefile_parse before it is handed out; a rule that does not pass is a note,
 * never a file. */
#ifndef DUMPWATCH_DMIMPORT_H
#define DUMPWATCH_DMIMPORT_H

#include <stddef.h>

#define DMIMPORT_SIZE_MAX (1024 * 1024) /* bytes of settings; more is refused */
#define DMIMPORT_RULES_MAX 1000         /* collection rules in one file */
#define DMIMPORT_DEPTH_MAX 64           /* nesting of JSON objects and arrays */
#define DMIMPORT_NOTE_MAX 480           /* bytes of one note, with its NUL */
#define DMIMPORT_RULE_NAME_MAX 64       /* a written rule's name, with its NUL */

/* One rule file to write: DIR/<name>.json holding text. */
struct dmimport_rule {
	char name[DMIMPORT_RULE_NAME_MAX]; /* [A-Za-z0-9._-], 1-63 chars, unique in the result */
	char *text;                        /* the rule file, JSON ending in a newline (malloc'd) */
};

/* Something not carried over. rule is the collection rule's name as written
 * in the settings, made printable (bytes outside printable ASCII shown as
 * '?', cut at 60 characters); "" for the settings as a whole. text is one
 * sentence, printable too. */
struct dmimport_note {
	char rule[72];
	char text[DMIMPORT_NOTE_MAX];
};

struct dmimport_result {
	struct dmimport_rule *rules;
	size_t n_rules;
	struct dmimport_note *notes;
	size_t n_notes;
	size_t n_source_rules; /* collection rules in the settings */
};

/* Converts the settings text (len bytes, need not be NUL-terminated).
 * source names the settings in each rule's description ("imported from
 * dotnet-monitor rule X of SOURCE"). On success returns 0 and fills *out
 * (free with dmimport_result_free), even when no rule could be converted
 * (n_rules 0, the notes say why). Returns -EFBIG for more than
 * DMIMPORT_SIZE_MAX bytes, -EBADMSG for text that is not JSON or nested
 * deeper than DMIMPORT_DEPTH_MAX ("line L, column C: ..." in err),
 * -EINVAL for JSON that is not dotnet-monitor settings with collection rules
 * or has more than DMIMPORT_RULES_MAX of them, -ENOMEM; err holds a sentence
 * then and *out is left empty. */
int dmimport_convert(const char *text, size_t len, const char *source, struct dmimport_result *out, char *err,
                     size_t errlen);

/* Frees what dmimport_convert filled and empties *r; NULL is a no-op. */
void dmimport_result_free(struct dmimport_result *r);

/* Parses a .NET TimeSpan as dotnet-monitor's settings write it:
 * "[d.]hh:mm[:ss[.fffffff]]" ("00:00:10", "1:00:00", "1.00:00:00") or a
 * whole number of days ("2"). Returns 0 with nanoseconds in *out_ns, or
 * -EINVAL (negative spans, out-of-range fields, anything else). */
int dmimport_parse_timespan(const char *text, long long *out_ns);

#endif
