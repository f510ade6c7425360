/* Typed reading of parsed JSON; see jsonget.h. */
#include "dumpwatch/jsonget.h"

#include "dumpwatch/text.h"

#include <math.h>

struct json_object *jv_member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !key || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v; /* NULL for a JSON null */
}

struct json_object *jv_typed(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v = jv_member(o, key);

	return v && json_object_is_type(v, t) ? v : NULL;
}

const char *jv_str(struct json_object *o, const char *key, size_t *ret_len)
{
	struct json_object *v = jv_typed(o, key, json_type_string);
	int len = v ? json_object_get_string_len(v) : 0;

	if (ret_len)
		*ret_len = len > 0 ? (size_t)len : 0;
	return v ? json_object_get_string(v) : NULL;
}

int jv_num_of(struct json_object *v, double *out)
{
	double d;

	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_int))
		d = (double)json_object_get_int64(v);
	else if (json_object_is_type(v, json_type_double))
		d = json_object_get_double(v);
	else
		return 0;
	if (!isfinite(d))
		return 0;
	*out = d;
	return 1;
}

int jv_num(struct json_object *o, const char *key, double *out)
{
	return jv_num_of(jv_member(o, key), out);
}

int jv_int64(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v = jv_typed(o, key, json_type_int);
	int64_t x;

	if (!v)
		return 0;
	/* json-c keeps a positive integer beyond int64_t as a uint64_t (and
	 * one beyond that as UINT64_MAX), and reads either as INT64_MAX without
	 * a word: told apart by its uint64_t reading. */
	x = json_object_get_int64(v);
	if (x == INT64_MAX && json_object_get_uint64(v) != (uint64_t)INT64_MAX)
		return 0;
	*out = x;
	return 1;
}

void jv_put_str(FILE *out, struct json_object *o, const char *key, const char *dflt)
{
	size_t len;
	const char *s = jv_str(o, key, &len);

	if (s)
		text_put_escaped(out, s, len);
	else
		fputs(dflt, out);
}
