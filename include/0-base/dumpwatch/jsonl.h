/* The one JSON writer of dumpwatch: a json-c object tree to a single line of
 * JSON. The journal, the JSON lines of `counters` and `gc`, `ps --json` and
 * the state file all go through it, because json-c's own serializer passes
 * invalid UTF-8 through as it is and writes NaN and infinities as bare words,
 * which are not JSON. json-c still builds the trees and parses rule files. */
#ifndef DUMPWATCH_JSONL_H
#define DUMPWATCH_JSONL_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

/* Containers nested deeper than this are refused. */
#define JSONL_MAX_DEPTH 64

/* Serializes o (NULL is null) as one line of valid UTF-8 JSON ending in
 * '\n', whatever its strings and numbers hold: in strings (and keys) '"' and
 * '\\' are escaped, every character of text_is_control is written as \uXXXX
 * (\n, \r, \t, \b, \f by their short forms), each byte that does not begin a
 * valid UTF-8 sequence becomes U+FFFD (as \ufffd), valid UTF-8 is copied; a
 * NaN or infinite number is written as null. The line holds no byte below
 * 0x20 but its final '\n', and no NUL. *ret_line is malloc'd; *ret_len (when
 * not NULL) is its length. Returns 0, -ENOMEM, or -EINVAL for containers
 * nested deeper than JSONL_MAX_DEPTH (nothing is returned then). */
int jsonl_format(struct json_object *o, char **ret_line, size_t *ret_len);

/* jsonl_format, then the line written to f with one fwrite and flushed.
 * Returns 0 or -errno. */
int jsonl_print(FILE *f, struct json_object *o);

#endif
