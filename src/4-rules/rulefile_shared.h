/* What the rule-file parser's parts share: rulefile.c (the file: JSON,
 * positions, the top level), rulefile_schema.c (the format's objects and keys)
 * and rulefile_diag.c (the diagnostics they record). Not a public contract:
 * rulefile.h is. */
#ifndef DUMPWATCH_RULEFILE_SHARED_H
#define DUMPWATCH_RULEFILE_SHARED_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/jsonpos.h"
#include "dumpwatch/rulefile.h"

/* The kinds of diagnostic: when the caller's array is full, the first of
 * each kind is kept (rf_diag). */
enum rf_diag_kind {
	K_LIMIT = 0,
	K_SYNTAX,
	K_UNKNOWN_KEY,
	K_DUP_KEY,
	K_TYPE,
	K_MISSING,
	K_NAME,
	K_DUP_NAME,
	K_COND,
	K_VALUE,
	K_DURATION,
	K_ABOVE_BELOW,
	K_DUMP,
	K_TEMPLATE,
	K_FILTER,
	K_NOT_RULES,
	K_HOOK,
	K_UPLOAD,
	K__COUNT
};

/* One parse: the text's positions and the diagnostics so far (total counts
 * those not kept too; a parse with any is refused). */
struct rf_ctx {
	struct jsonpos jp; /* the text, its values' offsets, lines and columns */
	struct rule_diag *diags;
	enum rf_diag_kind *kinds;
	size_t max, n, total;
};

/* Whether a diagnostic of this kind would be kept (see rf_diag). */
int rf_diag_wanted(const struct rf_ctx *c, enum rf_diag_kind kind);

/* Records a diagnostic at byte offset off (JSONPOS_NONE: no position). When
 * the array is full, a kind not yet among those kept replaces the last one of
 * a kind kept twice, so that the first error of each kind always stays. */
__attribute__((format(printf, 4, 5))) void rf_diag(struct rf_ctx *c, enum rf_diag_kind kind, uint32_t off,
                                                   const char *fmt, ...);

/* Sorts diagnostics by line and column. */
void rf_diag_sort(struct rule_diag *diags, size_t n);

/* A string fit for quoting in a message: at most 60 bytes, control and
 * non-ASCII bytes shown as '?', "..." when cut. */
const char *rf_shown(const char *s, char *buf, size_t buflen);

/* The index of the key in keys (NULL-terminated) that key is a near miss of
 * (a typo: close for its length), or -1. strict: closer still (one edit for a
 * short key, two for a longer one), for deciding what a file is rather than
 * for a suggestion. */
int rf_near_key(const char *key, const char *const *keys, int strict);

/* One member of an object being validated. */
struct rf_field {
	int node; /* -1 when absent */
	struct json_object *v;
};

static inline uint32_t rf_key_off(const struct rf_ctx *c, int node)
{
	return node >= 0 ? c->jp.nodes[node].key_off : JSONPOS_NONE;
}

static inline uint32_t rf_val_off(const struct rf_ctx *c, int node)
{
	return node >= 0 ? c->jp.nodes[node].val_off : JSONPOS_NONE;
}

/* Sorts the members of the object at node into out[] by the index of their
 * key in keys (NULL-terminated); reports unknown and repeated keys. what names
 * the object in messages ("rule", "process"). */
void rf_collect(struct rf_ctx *c, int node, struct json_object *obj, const char *what, const char *const *keys,
                struct rf_field *out);

/* The keys of a {"rules": [...]} file, in this order. */
enum { RF_FILE_RULES, RF_FILE_SCHEMA };
extern const char *const rf_file_keys[];

/* Whether the file (an object at node 0; listed: with "rules") looks like a
 * rule file; when not, the one diagnostic it gets, at the object that does
 * not, quoting nothing. */
int rf_is_rule_file(struct rf_ctx *c, int listed);

/* Parses the rule object at node into fr (defaults first). top is set for
 * a file that is a single rule, where "$schema" is allowed. */
void rf_parse_rule(struct rf_ctx *c, int node, struct json_object *obj, int top, struct file_rule *fr);

#endif
