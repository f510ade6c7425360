/* Where things are in a JSON text: json-c parses but keeps no positions, so
 * this scanner walks the same text once more and builds a tree of its values
 * with the byte offset of every key and value, in document order (a node's
 * path is its chain of parents: rules[1].limits.cooldown), and turns an
 * offset into a line and column. It expects text json-c has accepted, and
 * ends on any input. Pure: text in, offsets out. Used by the rule-file
 * validator (rulefile.c), whose every message names the position of the key
 * or value it is about. */
#ifndef DUMPWATCH_JSONPOS_H
#define DUMPWATCH_JSONPOS_H

#include <stddef.h>
#include <stdint.h>

#define JSONPOS_NONE UINT32_MAX  /* an offset that is no position */
#define JSONPOS_NODES_MAX 200000 /* values in one text; far above any real rule file */
#define JSONPOS_KEY_MAX 256      /* a key buffer: longer keys are never one looked for */

/* One value in the text; key_off is set for a member of an object
 * (JSONPOS_NONE otherwise). Nodes are numbered in document order; node 0 is
 * the top value; -1 ends a chain. */
struct jsonpos_node {
	int parent, first_child, next_sibling;
	uint32_t key_off, val_off;
};

struct jsonpos {
	const char *text;
	size_t len;
	struct jsonpos_node *nodes;
	size_t n, cap;
	/* jsonpos_line_col's cursor: queries come mostly in order. */
	size_t cur_off;
	int cur_line, cur_col;
};

/* Starts jp on text (len bytes; need not be NUL-terminated; kept, not
 * copied). No nodes until jsonpos_scan. */
void jsonpos_init(struct jsonpos *jp, const char *text, size_t len);
/* Frees the nodes; jp can be scanned again. */
void jsonpos_free(struct jsonpos *jp);

/* Builds the node tree of the text. Stops (returning -EINVAL with *ret_off)
 * at anything it does not expect, which json-c's strict mode lets through
 * only for single-quoted strings. Nesting is bounded: -ELOOP with *ret_off at
 * the bracket that opens level max_depth + 1. -E2BIG past JSONPOS_NODES_MAX
 * values, -ENOMEM. 0 when the tree is complete. */
int jsonpos_scan(struct jsonpos *jp, int max_depth, size_t *ret_off);

/* The offset of the bracket that opens nesting level max_depth + 1 in
 * t[0..end), or end when there is none: where to report a text json-c
 * refused as too deep, as jsonpos_scan would. */
uint32_t jsonpos_too_deep(const char *t, size_t end, int max_depth);

/* The offset of the first byte at or after i that is not JSON whitespace. */
size_t jsonpos_skip_ws(const char *t, size_t len, size_t i);

/* Decodes the JSON string token at offset off into out (as json-c does:
 * escapes, \u with surrogate pairs, stopping at \u0000). 0, or -1 when it
 * does not fit in outlen. */
int jsonpos_decode_string(const struct jsonpos *jp, size_t off, char *out, size_t outlen);

/* The first member of the object at node whose key is key, or -1. */
int jsonpos_member(const struct jsonpos *jp, int node, const char *key);

/* Line and column (1-based, in characters: a UTF-8 sequence or a tab counts
 * as one) of byte offset off (past the end: the end). Queries in document
 * order cost the text once in all; an earlier offset starts again from the
 * top. */
void jsonpos_line_col(struct jsonpos *jp, size_t off, int *ret_line, int *ret_col);

#endif
