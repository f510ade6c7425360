/* Typed reading of parsed JSON (json-c) that dumpwatch wrote earlier and may
 * find damaged or planted: the journal's context files, the state file, the
 * upload queue. A member is handed out only with the type asked for, a JSON
 * null is the same as a missing member, and a string is never read as a
 * number (json_object_get_double would parse it). */
#ifndef DUMPWATCH_JSONGET_H
#define DUMPWATCH_JSONGET_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* o's member key of any type but null, or NULL (also when o is not an
 * object). */
struct json_object *jv_member(struct json_object *o, const char *key);
/* ... only when it has type t (json_type_null never matches), else NULL. */
struct json_object *jv_typed(struct json_object *o, const char *key, enum json_type t);
/* o's string member key, and its length (strings may hold NULs) in *ret_len
 * when ret_len is not NULL; NULL when missing or not a string. */
const char *jv_str(struct json_object *o, const char *key, size_t *ret_len);
/* Prints o's string member key escaped (text_put_escaped) to out, or dflt
 * when it is missing or not a string. */
void jv_put_str(FILE *out, struct json_object *o, const char *key, const char *dflt);
/* Whether v is a finite JSON number (an integer or a double); 1 with it in
 * *out, else 0. */
int jv_num_of(struct json_object *v, double *out);
/* o's member key as a finite number: 1 with it in *out, else 0. */
int jv_num(struct json_object *o, const char *key, double *out);
/* o's member key as an integer that fits int64_t: 1 with it in *out, else 0
 * (a double, a string or an integer beyond int64_t is not one). */
int jv_int64(struct json_object *o, const char *key, int64_t *out);

#endif
