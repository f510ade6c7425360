/* Rule files: JSON text in, validated rules (or positioned diagnostics) out.
 *
 * Format: one rule object, or {"rules": [rule, ...]}; either may also carry a
 * "$schema" string for editors (ignored). A rule:
 *
 *   name         required; 1-63 characters of [A-Za-z0-9._-]; unique in a file
 *   description  free text (at most 511 bytes); default ""
 *   process      {name, cmdline, user, pid}: every filter given must match;
 *                name and cmdline are globs (fnmatch), user a user name or a
 *                uid, pid a process id; default: any .NET process
 *   when         required; a condition or an array of 1-8 of them, all of which
 *                must hold. A condition is a string in the --when grammar
 *                ("loh-size > 500MB for 10s") or an object
 *                {"metric": M, "above"|"below": VALUE, "for": DURATION}
 *                with exactly one of above/below; "for" defaults to 0 (at
 *                once). VALUE is a string with its unit ("500MB", "90%"); a
 *                JSON number is accepted only for a metric without a unit.
 *   dump         {type, dir, name}: type normal|withheap|triage|full (default
 *                withheap); dir an absolute directory (default "": the
 *                daemon's; that it lies inside a directory the daemon allows
 *                is rulefile_check_dump_dirs's part); name a file name
 *                template using only {name} {pid} {rule} {time} {container}
 *                {pod} (default "":
 *                the daemon's)
 *   limits       {max-dumps, window, cooldown}: max-dumps a non-negative
 *                integer (default 1; 0 = no limit) per process within window
 *                (default 0 = the lifetime of the process); cooldown the least
 *                time between two dumps of one process (default 10m); the
 *                defaults are named, with their reasons, in defaults.h
 *   enabled      true or false (default true)
 *
 * Unknown keys at any level are errors (with the nearest allowed key
 * suggested), and so is a key given twice in one object. A file that parses
 * but does not look like a rule file (is_rule_file; see rulefile.h) gets one
 * diagnostic instead, which quotes nothing of it (nor do syntax errors). Bounds: a file over
 * RULEFILE_SIZE_MAX bytes, nesting deeper than RULEFILE_DEPTH_MAX, or more than
 * RULEFILE_RULES_MAX rules is refused.
 *
 * Design: json-c parses (strict mode, UTF-8 validated) but keeps no positions,
 * so a small scanner walks the same text once and builds a tree of nodes with
 * the byte offset of every key and value in document order (node i's path is
 * its chain of parents: rules[1].limits.cooldown). The validator walks the
 * scanner's tree and json-c's objects side by side, so every message carries
 * the line:column of the key or value it is about. */
#include "dumpwatch/rulefile.h"

#include <errno.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"
#include "dumpwatch/units.h"

#define NO_OFF UINT32_MAX
#define SCAN_NODES_MAX 200000 /* values in one file; far above any real rule file */
#define KEY_MAX 256           /* longer keys are never known keys */

/* ---- positions -------------------------------------------------------- */

/* One value in the text; key_off is set for a member of an object. */
struct scan_node {
	int parent, first_child, next_sibling;
	uint32_t key_off, val_off;
};

struct scan {
	const char *text;
	size_t len;
	struct scan_node *nodes;
	size_t n, cap;
};

static int scan_add(struct scan *sc, int parent, int *last_child, uint32_t key_off, uint32_t val_off)
{
	struct scan_node *nd;

	if (sc->n >= SCAN_NODES_MAX)
		return -E2BIG;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 64;
		struct scan_node *p = realloc(sc->nodes, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		sc->nodes = p;
		sc->cap = cap;
	}
	nd = &sc->nodes[sc->n];
	nd->parent = parent;
	nd->first_child = -1;
	nd->next_sibling = -1;
	nd->key_off = key_off;
	nd->val_off = val_off;
	if (parent >= 0) {
		if (*last_child >= 0)
			sc->nodes[*last_child].next_sibling = (int)sc->n;
		else
			sc->nodes[parent].first_child = (int)sc->n;
		*last_child = (int)sc->n;
	}
	return (int)sc->n++;
}

static size_t skip_ws(const char *t, size_t len, size_t i)
{
	while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
		i++;
	return i;
}

/* The end of the string token starting at t[i] (a quote), past the closing
 * quote; len when it is not closed. */
static size_t skip_string(const char *t, size_t len, size_t i)
{
	char q = t[i];

	for (i++; i < len; i++) {
		if (t[i] == '\\')
			i++;
		else if (t[i] == q)
			return i + 1;
	}
	return len;
}

/* Builds the node tree of text that json-c has accepted. Stops (returning
 * -EINVAL with *ret_off) at anything it does not expect, which json-c's strict
 * mode lets through only for single-quoted strings. Every step advances, and
 * nesting is bounded: -ELOOP with *ret_off at the bracket that opens level
 * RULEFILE_DEPTH_MAX + 1. It ends on any input. */
static int scan_text(struct scan *sc, size_t *ret_off)
{
	struct {
		int node, last_child;
		char close;
	} stack[RULEFILE_DEPTH_MAX];
	const char *t = sc->text;
	size_t len = sc->len, i = skip_ws(t, len, 0);
	int depth = 0, r;

	for (;;) {
		uint32_t key_off = NO_OFF;
		int parent = depth ? stack[depth - 1].node : -1;

		/* In an object, a key and ':' come first. */
		if (depth && stack[depth - 1].close == '}') {
			if (i >= len || t[i] != '"')
				goto bad;
			key_off = (uint32_t)i;
			i = skip_ws(t, len, skip_string(t, len, i));
			if (i >= len || t[i] != ':')
				goto bad;
			i = skip_ws(t, len, i + 1);
		}
		if (i >= len || t[i] == '\'')
			goto bad;
		r = scan_add(sc, parent, depth ? &stack[depth - 1].last_child : NULL, key_off, (uint32_t)i);
		if (r < 0)
			return r;
		if (t[i] == '{' || t[i] == '[') {
			if (depth == RULEFILE_DEPTH_MAX) {
				*ret_off = i;
				return -ELOOP;
			}
			stack[depth].node = r;
			stack[depth].last_child = -1;
			stack[depth].close = t[i] == '{' ? '}' : ']';
			depth++;
			i = skip_ws(t, len, i + 1);
			if (i < len && t[i] == stack[depth - 1].close) {
				depth--;
				i++;
			} else {
				continue;
			}
		} else if (t[i] == '"') {
			i = skip_string(t, len, i);
		} else {
			size_t s = i;
			while (i < len && !strchr(",]}: \t\r\n", t[i]))
				i++;
			if (i == s)
				goto bad;
		}
		/* After a value: ',' goes on, a closing bracket ends containers. */
		for (;;) {
			i = skip_ws(t, len, i);
			if (depth == 0)
				return 0;
			if (i < len && t[i] == ',') {
				i = skip_ws(t, len, i + 1);
				break;
			}
			if (i < len && t[i] == stack[depth - 1].close) {
				depth--;
				i++;
				continue;
			}
			goto bad;
		}
	}
bad:
	*ret_off = i;
	return -EINVAL;
}

/* The offset of the bracket that opens nesting level RULEFILE_DEPTH_MAX + 1
 * in t[0..end), or end when there is none. */
static uint32_t too_deep(const char *t, size_t end)
{
	int depth = 0;

	for (size_t i = 0; i < end; i++) {
		if (t[i] == '"') {
			i = skip_string(t, end, i) - 1;
		} else if (t[i] == '{' || t[i] == '[') {
			if (++depth > RULEFILE_DEPTH_MAX)
				return (uint32_t)i;
		} else if (t[i] == '}' || t[i] == ']') {
			depth--;
		}
	}
	return (uint32_t)end;
}

/* Decodes the JSON string token at t[off] into out (as json-c does: escapes,
 * \u with surrogate pairs, stopping at \u0000). Returns 0, or -1 when it does
 * not fit in outlen. */
static int decode_string(const char *t, size_t len, size_t off, char *out, size_t outlen)
{
	size_t i = off + 1, o = 0;

	out[0] = '\0';
	while (i < len && t[i] != '"') {
		uint32_t cp;
		if (t[i] != '\\') {
			if (o + 1 >= outlen)
				return -1;
			out[o++] = t[i++];
			out[o] = '\0';
			continue;
		}
		if (i + 1 >= len)
			break;
		char e = t[i + 1];
		i += 2;
		switch (e) {
		case 'b':
			cp = '\b';
			break;
		case 'f':
			cp = '\f';
			break;
		case 'n':
			cp = '\n';
			break;
		case 'r':
			cp = '\r';
			break;
		case 't':
			cp = '\t';
			break;
		case 'u': {
			char hex[5] = {0};
			if (i + 4 > len)
				return -1;
			memcpy(hex, t + i, 4);
			cp = (uint32_t)strtoul(hex, NULL, 16);
			i += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && i + 6 <= len && t[i] == '\\' && t[i + 1] == 'u') {
				uint32_t lo;
				memcpy(hex, t + i + 2, 4);
				lo = (uint32_t)strtoul(hex, NULL, 16);
				if (lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					i += 6;
				}
			}
			if (cp >= 0xd800 && cp < 0xe000)
				cp = 0xfffd;
			break;
		}
		default:
			cp = (unsigned char)e;
			break;
		}
		if (cp == 0)
			return 0;
		if (text_utf8_put(out, outlen, &o, cp) < 0)
			return -1;
		out[o] = '\0';
	}
	return 0;
}

/* ---- diagnostics ------------------------------------------------------ */

enum diag_kind {
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

struct ctx {
	const char *text;
	size_t len;
	struct scan sc;
	struct rule_diag *diags;
	enum diag_kind *kinds;
	size_t max, n, total;
	/* A cursor for offset -> line:column; queries come mostly in order. */
	size_t cur_off;
	int cur_line, cur_col;
};

/* Line and column (1-based, in characters: a UTF-8 sequence or a tab counts
 * as one) of byte offset off. The cursor makes queries in document order cost
 * the text once in all; an earlier offset starts again from the top. */
static void ctx_pos(struct ctx *c, size_t off, int *line, int *col)
{
	if (off > c->len)
		off = c->len;
	if (off < c->cur_off) {
		c->cur_off = 0;
		c->cur_line = 1;
		c->cur_col = 1;
	}
	for (; c->cur_off < off; c->cur_off++) {
		unsigned char ch = (unsigned char)c->text[c->cur_off];
		if (ch == '\n') {
			c->cur_line++;
			c->cur_col = 1;
		} else if ((ch & 0xc0) != 0x80) {
			c->cur_col++;
		}
	}
	*line = c->cur_line;
	*col = c->cur_col;
}

/* Whether a diagnostic of this kind would be kept (see diag). */
static int diag_wanted(const struct ctx *c, enum diag_kind kind)
{
	if (c->n < c->max)
		return 1;
	for (size_t i = 0; i < c->n; i++)
		if (c->kinds[i] == kind)
			return 0;
	return 1;
}

/* Records a diagnostic at byte offset off (NO_OFF: no position). When the
 * array is full, a kind not yet among those kept replaces the last one of a
 * kind kept twice, so that the first error of each kind always stays. */
__attribute__((format(printf, 4, 5))) static void diag(struct ctx *c, enum diag_kind kind, uint32_t off,
                                                       const char *fmt, ...)
{
	struct rule_diag *d;
	va_list ap;
	size_t slot = c->n;

	c->total++;
	if (!diag_wanted(c, kind))
		return;
	if (c->n >= c->max) {
		size_t i, j;
		for (i = c->n; i-- > 0;) {
			for (j = 0; j < c->n; j++)
				if (j != i && c->kinds[j] == c->kinds[i])
					break;
			if (j < c->n)
				break;
		}
		if (i == (size_t)-1)
			return;
		slot = i;
	} else {
		c->n++;
	}
	d = &c->diags[slot];
	c->kinds[slot] = kind;
	d->line = d->column = 0;
	if (off != NO_OFF)
		ctx_pos(c, off, &d->line, &d->column);
	va_start(ap, fmt);
	vsnprintf(d->message, sizeof(d->message), fmt, ap);
	va_end(ap);
}

/* A string fit for quoting in a message: at most 60 bytes, control and
 * non-ASCII bytes shown as '?', "..." when cut. */
static const char *shown(const char *s, char *buf, size_t buflen)
{
	size_t n = strlen(s);
	snprintf(buf, buflen, "%.*s%s", (int)(n > 60 ? 60 : n), s, n > 60 ? "..." : "");
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	return buf;
}

/* The index of the key in keys (NULL-terminated) that key is a near miss of
 * (a typo: close for its length), or -1. strict: closer still (one edit for a
 * short key, two for a longer one), for deciding what a file is rather than
 * for a suggestion. */
static int near_key(const char *key, const char *const *keys, int strict)
{
	size_t best = (size_t)-1, n = strlen(key);
	int bi = -1;

	for (int k = 0; keys[k]; k++) {
		size_t d = text_edit_distance(key, keys[k]);
		if (d < best) {
			best = d;
			bi = k;
		}
	}
	if (strict)
		return best <= (n < 6 ? 1 : 2) && best < n ? bi : -1;
	return best <= (n < 6 ? 2 : 3) && best < n ? bi : -1;
}

/* ---- objects ---------------------------------------------------------- */

/* One member of an object being validated. */
struct field {
	int node; /* -1 when absent */
	struct json_object *v;
};

static uint32_t key_off(const struct ctx *c, int node)
{
	return node >= 0 ? c->sc.nodes[node].key_off : NO_OFF;
}

static uint32_t val_off(const struct ctx *c, int node)
{
	return node >= 0 ? c->sc.nodes[node].val_off : NO_OFF;
}

/* Sorts the members of the object at node into out[] by the index of their
 * key in keys (NULL-terminated); reports unknown and repeated keys. what names
 * the object in messages ("rule", "process"). */
static void collect(struct ctx *c, int node, struct json_object *obj, const char *what, const char *const *keys,
                    struct field *out)
{
	char key[KEY_MAX], q[80], list[256];
	size_t nkeys = 0;

	while (keys[nkeys])
		nkeys++;
	for (size_t k = 0; k < nkeys; k++) {
		out[k].node = -1;
		out[k].v = NULL;
	}
	for (int ch = c->sc.nodes[node].first_child; ch >= 0; ch = c->sc.nodes[ch].next_sibling) {
		size_t k;
		int fits = decode_string(c->text, c->len, c->sc.nodes[ch].key_off, key, sizeof(key)) == 0;

		for (k = 0; fits && k < nkeys; k++)
			if (strcmp(key, keys[k]) == 0)
				break;
		if (fits && k < nkeys) {
			if (out[k].node >= 0) {
				int line, col;
				if (!diag_wanted(c, K_DUP_KEY)) {
					c->total++;
					continue;
				}
				ctx_pos(c, key_off(c, out[k].node), &line, &col);
				diag(c, K_DUP_KEY, key_off(c, ch), "key \"%s\" appears twice in %s (first at %d:%d)",
				     keys[k], what, line, col);
				continue;
			}
			out[k].node = ch;
			json_object_object_get_ex(obj, keys[k], &out[k].v);
			continue;
		}
		/* Unknown: suggest the nearest allowed key when it is close. */
		int bi = fits ? near_key(key, keys, 0) : -1;
		if (bi >= 0) {
			diag(c, K_UNKNOWN_KEY, key_off(c, ch), "unknown key \"%s\" in %s; did you mean \"%s\"?",
			     shown(key, q, sizeof(q)), what, keys[bi]);
		} else {
			list[0] = '\0';
			for (k = 0; k < nkeys; k++)
				if (keys[k][0] != '$')
					snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					         k ? ", " : "", keys[k]);
			diag(c, K_UNKNOWN_KEY, key_off(c, ch), "unknown key \"%s\" in %s; the keys are %s",
			     shown(key, q, sizeof(q)), what, list);
		}
	}
}

/* A string member into out (outlen bytes). Returns 0, or -1 after a diagnostic. */
static int get_string(struct ctx *c, const struct field *f, const char *key, char *out, size_t outlen)
{
	const char *s;

	if (!json_object_is_type(f->v, json_type_string)) {
		diag(c, K_TYPE, val_off(c, f->node), "\"%s\" must be a string", key);
		return -1;
	}
	s = json_object_get_string(f->v);
	if ((size_t)json_object_get_string_len(f->v) >= outlen || strlen(s) >= outlen) {
		diag(c, K_TYPE, val_off(c, f->node), "\"%s\" is too long (at most %zu bytes)", key, outlen - 1);
		return -1;
	}
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int is_object(struct ctx *c, const struct field *f, const char *key)
{
	if (json_object_is_type(f->v, json_type_object))
		return 1;
	diag(c, K_TYPE, val_off(c, f->node), "\"%s\" must be an object", key);
	return 0;
}

static int get_duration(struct ctx *c, const struct field *f, const char *key, const char *example, int64_t *out)
{
	char s[RULE_TEXT_MAX], err[256];

	if (!json_object_is_type(f->v, json_type_string)) {
		diag(c, K_TYPE, val_off(c, f->node), "\"%s\" must be a duration string such as \"%s\"", key, example);
		return -1;
	}
	if (get_string(c, f, key, s, sizeof(s)) < 0)
		return -1;
	if (units_parse_duration(s, out, err, sizeof(err)) < 0) {
		diag(c, K_DURATION, val_off(c, f->node), "\"%s\": %s", key, err);
		return -1;
	}
	return 0;
}

/* ---- conditions ------------------------------------------------------- */

static const char *const cond_keys[] = {"metric", "above", "below", "for", NULL};
enum { CK_METRIC, CK_ABOVE, CK_BELOW, CK_FOR };

static int parse_cond_object(struct ctx *c, int node, struct json_object *obj, struct rule_cond *out)
{
	struct field f[4];
	struct rule_cond rc;
	char name[CATALOG_NAME_MAX], err[RULEFILE_MSG_MAX], value[RULE_TEXT_MAX], forv[RULE_TEXT_MAX] = "";
	const struct field *vf;
	const char *vkey;
	size_t before = c->total;

	memset(&rc, 0, sizeof(rc));
	collect(c, node, obj, "condition", cond_keys, f);
	if (f[CK_METRIC].node < 0) {
		diag(c, K_MISSING, val_off(c, node),
		     "condition has no \"metric\"; write one such as {\"metric\": \"loh-size\", \"above\": \"500MB\"}");
		return -1;
	}
	if (get_string(c, &f[CK_METRIC], "metric", name, sizeof(name)) < 0)
		return -1;
	if (strncasecmp(name, "meter ", 6) == 0 || strncasecmp(name, "exception ", 10) == 0 ||
	    strcasecmp(name, "exception") == 0) {
		diag(c, K_COND, val_off(c, f[CK_METRIC].node),
		     "a %s condition is written as a string, as in \"when\": \"%s\"",
		     name[0] == 'm' || name[0] == 'M' ? "meter" : "exception",
		     name[0] == 'm' || name[0] == 'M' ? "meter Meter.Name/instrument p99 > 2s for 30s"
		                                      : "exception TimeoutException* >= 3 in 1m");
		return -1;
	}
	if (catalog_resolve(name, &rc.metric, err, sizeof(err)) < 0) {
		diag(c, K_COND, val_off(c, f[CK_METRIC].node), "%s", err);
		return -1;
	}
	if (f[CK_ABOVE].node >= 0 && f[CK_BELOW].node >= 0) {
		int second = f[CK_ABOVE].node > f[CK_BELOW].node ? f[CK_ABOVE].node : f[CK_BELOW].node;
		diag(c, K_ABOVE_BELOW, key_off(c, second),
		     "condition has both \"above\" and \"below\"; give one (two conditions make a range)");
		return -1;
	}
	if (f[CK_ABOVE].node < 0 && f[CK_BELOW].node < 0) {
		diag(c, K_ABOVE_BELOW, val_off(c, node),
		     "condition needs \"above\" or \"below\", as in \"above\": \"%s\"",
		     rule_unit_example(rc.metric.unit));
		return -1;
	}
	vf = f[CK_ABOVE].node >= 0 ? &f[CK_ABOVE] : &f[CK_BELOW];
	vkey = f[CK_ABOVE].node >= 0 ? "above" : "below";
	rc.op = f[CK_ABOVE].node >= 0 ? COND_GT : COND_LT;
	if (json_object_is_type(vf->v, json_type_string)) {
		if (get_string(c, vf, vkey, value, sizeof(value)) < 0)
			return -1;
		if (units_parse_value(value, rc.metric.unit, &rc.threshold, err, sizeof(err)) < 0) {
			diag(c, K_VALUE, val_off(c, vf->node), "\"%s\": %s", vkey, err);
			return -1;
		}
	} else if (json_object_is_type(vf->v, json_type_int) || json_object_is_type(vf->v, json_type_double)) {
		double v = json_object_get_double(vf->v);
		if (rc.metric.unit != UNIT_NONE && rc.metric.unit != UNIT_COUNT) {
			diag(c, K_VALUE, val_off(c, vf->node),
			     "\"%s\" needs a unit for %s: write a string such as \"%s\"", vkey, rc.metric.name,
			     rule_unit_example(rc.metric.unit));
			return -1;
		}
		if (!isfinite(v) || fabs(v) >= 9.2e18 || (rc.metric.unit == UNIT_COUNT && v < 0)) {
			diag(c, K_VALUE, val_off(c, vf->node), "\"%s\" must be a finite%s number", vkey,
			     rc.metric.unit == UNIT_COUNT ? " non-negative" : "");
			return -1;
		}
		rc.threshold = v;
		snprintf(value, sizeof(value), "%.15g", v);
	} else {
		diag(c, K_TYPE, val_off(c, vf->node), "\"%s\" must be a value string such as \"%s\"", vkey,
		     rule_unit_example(rc.metric.unit));
		return -1;
	}
	if (f[CK_FOR].node >= 0) {
		if (get_duration(c, &f[CK_FOR], "for", "10s", &rc.for_ns) < 0)
			return -1;
		snprintf(forv, sizeof(forv), " for %s", json_object_get_string(f[CK_FOR].v));
	}
	if (c->total != before)
		return -1;
	snprintf(rc.text, sizeof(rc.text), "%.*s %s %.*s%.*s", (int)CATALOG_NAME_MAX, rc.metric.name,
	         rc.op == COND_GT ? ">" : "<", 60, value, 64, forv);
	*out = rc;
	return 0;
}

static int parse_cond(struct ctx *c, int node, struct json_object *v, struct rule_cond *out)
{
	char s[RULE_TEXT_MAX + 1], err[RULEFILE_MSG_MAX];
	const char *text;

	if (json_object_is_type(v, json_type_object))
		return parse_cond_object(c, node, v, out);
	if (!json_object_is_type(v, json_type_string)) {
		diag(c, K_TYPE, val_off(c, node),
		     "a condition must be a string such as \"loh-size > 500MB\" or an object with \"metric\"");
		return -1;
	}
	text = json_object_get_string(v);
	/* rule_cond_parse refuses text of RULE_TEXT_MAX or more; copy just past it. */
	snprintf(s, sizeof(s), "%s", text);
	if (rule_cond_parse(s, out, err, sizeof(err)) < 0) {
		diag(c, K_COND, val_off(c, node), "%s", err);
		return -1;
	}
	return 0;
}

static void parse_when(struct ctx *c, const struct field *f, struct rule *r)
{
	if (!json_object_is_type(f->v, json_type_array)) {
		if (parse_cond(c, f->node, f->v, &r->conds[0]) == 0)
			r->n_conds = 1;
		return;
	}
	size_t n = json_object_array_length(f->v), i = 0;
	if (n == 0) {
		diag(c, K_MISSING, val_off(c, f->node), "\"when\" is empty; give at least one condition");
		return;
	}
	if (n > RULE_MAX_CONDS) {
		diag(c, K_LIMIT, val_off(c, f->node), "\"when\" has %zu conditions; a rule takes at most %d", n,
		     RULE_MAX_CONDS);
		return;
	}
	for (int ch = c->sc.nodes[f->node].first_child; ch >= 0 && i < n; ch = c->sc.nodes[ch].next_sibling, i++)
		if (parse_cond(c, ch, json_object_array_get_idx(f->v, i), &r->conds[r->n_conds]) == 0)
			r->n_conds++;
}

/* ---- rule parts -------------------------------------------------------- */

static const char *const process_keys[] = {"name", "cmdline", "user", "pid", NULL};
static const char *const dump_keys[] = {"type", "dir", "name", NULL};
static const char *const limits_keys[] = {"max-dumps", "window", "cooldown", NULL};
static const char *const hooks_keys[] = {"on-fire", "on-dump", "timeout", NULL};
static const char *const upload_keys[] = {"prefix", "keep-local", NULL};

static void parse_process(struct ctx *c, const struct field *pf, struct rule_filter *flt)
{
	struct field f[4];

	if (!is_object(c, pf, "process"))
		return;
	collect(c, pf->node, pf->v, "process", process_keys, f);
	if (f[0].node >= 0)
		get_string(c, &f[0], "name", flt->name, sizeof(flt->name));
	if (f[1].node >= 0)
		get_string(c, &f[1], "cmdline", flt->cmdline, sizeof(flt->cmdline));
	if (f[2].node >= 0) {
		if (json_object_is_type(f[2].v, json_type_int) && json_object_get_int64(f[2].v) >= 0 &&
		    json_object_get_int64(f[2].v) <= UINT32_MAX - 1) {
			snprintf(flt->user, sizeof(flt->user), "%lld", (long long)json_object_get_int64(f[2].v));
			flt->has_user = 1;
		} else if (!json_object_is_type(f[2].v, json_type_string)) {
			diag(c, K_TYPE, val_off(c, f[2].node), "\"user\" must be a user name or a uid");
		} else if (get_string(c, &f[2], "user", flt->user, sizeof(flt->user)) == 0) {
			if (flt->user[0] == '\0')
				diag(c, K_FILTER, val_off(c, f[2].node),
				     "\"user\" is empty; leave it out to match any user");
			flt->has_user = 1;
		}
	}
	if (f[3].node >= 0) {
		int64_t pid = json_object_get_int64(f[3].v);
		if (!json_object_is_type(f[3].v, json_type_int) || pid <= 0 || pid > INT32_MAX) {
			diag(c, K_TYPE, val_off(c, f[3].node), "\"pid\" must be a positive integer");
		} else {
			flt->pid = (pid_t)pid;
			flt->has_pid = 1;
		}
	}
}

/* Dump file name templates take {name} {pid} {rule} {time} {container} {pod}
 * and no '/'. */
static void check_template(struct ctx *c, int node, const char *t)
{
	static const char *const ph[] = {"{name}", "{pid}", "{rule}", "{time}", "{container}", "{pod}"};
	char q[80];

	for (const char *p = t; *p; p++) {
		if (*p == '/') {
			diag(c, K_TEMPLATE, val_off(c, node), "dump name \"%s\" must be a file name, without '/'",
			     shown(t, q, sizeof(q)));
			return;
		}
		if (*p == '}') {
			diag(c, K_TEMPLATE, val_off(c, node), "dump name \"%s\" has a '}' without its '{'",
			     shown(t, q, sizeof(q)));
			return;
		}
		if (*p != '{')
			continue;
		const char *end = strchr(p, '}');
		size_t k;
		if (!end) {
			diag(c, K_TEMPLATE, val_off(c, node), "dump name \"%s\" has a '{' without its '}'",
			     shown(t, q, sizeof(q)));
			return;
		}
		for (k = 0; k < 6; k++)
			if ((size_t)(end - p + 1) == strlen(ph[k]) && strncmp(p, ph[k], strlen(ph[k])) == 0)
				break;
		if (k == 6) {
			char part[80];
			snprintf(part, sizeof(part), "%.*s", (int)(end - p + 1 > 60 ? 60 : end - p + 1), p);
			diag(c, K_TEMPLATE, val_off(c, node),
			     "dump name: unknown placeholder \"%s\"; use {name}, {pid}, {rule}, {time}, {container} or "
			     "{pod}",
			     shown(part, q, sizeof(q)));
			return;
		}
		p = end;
	}
}

static void parse_dump(struct ctx *c, const struct field *df, struct file_rule *fr)
{
	struct field f[3];
	char s[64], q[80];

	if (!is_object(c, df, "dump"))
		return;
	collect(c, df->node, df->v, "dump", dump_keys, f);
	if (f[0].node >= 0 && get_string(c, &f[0], "type", s, sizeof(s)) == 0 &&
	    rule_dump_type_parse(s, &fr->rule.dump_type) < 0)
		diag(c, K_DUMP, val_off(c, f[0].node), "dump type \"%s\" is not one of normal, withheap, triage, full",
		     shown(s, q, sizeof(q)));
	if (f[1].node >= 0 && get_string(c, &f[1], "dir", fr->dump_dir, sizeof(fr->dump_dir)) == 0) {
		ctx_pos(c, val_off(c, f[1].node), &fr->dump_dir_line, &fr->dump_dir_column);
		if (fr->dump_dir[0] && fr->dump_dir[0] != '/')
			diag(c, K_DUMP, val_off(c, f[1].node),
			     "dump dir \"%s\" must be an absolute path, such as \"/var/lib/dumpwatch/dumps\"",
			     shown(fr->dump_dir, q, sizeof(q)));
	}
	if (f[2].node >= 0 && get_string(c, &f[2], "name", fr->name_template, sizeof(fr->name_template)) == 0)
		check_template(c, f[2].node, fr->name_template);
}

static void parse_limits(struct ctx *c, const struct field *lf, struct rule_limits *l)
{
	struct field f[3];

	if (!is_object(c, lf, "limits"))
		return;
	collect(c, lf->node, lf->v, "limits", limits_keys, f);
	if (f[0].node >= 0) {
		int64_t v = json_object_get_int64(f[0].v);
		if (!json_object_is_type(f[0].v, json_type_int) || v < 0 || v > 1000000)
			diag(c, K_TYPE, val_off(c, f[0].node),
			     "\"max-dumps\" must be a non-negative integer (0 = no limit; at most 1000000)");
		else
			l->max_dumps = (uint32_t)v;
	}
	if (f[1].node >= 0)
		get_duration(c, &f[1], "window", "1h", &l->window_ns);
	if (f[2].node >= 0)
		get_duration(c, &f[2], "cooldown", "10m", &l->cooldown_ns);
}

/* A hook command: an array of strings (argv), or one string split into
 * words as a shell would, without expanding anything. */
static void parse_hook_cmd(struct ctx *c, const struct field *f, const char *key, struct hook_cmd *cmd)
{
	char err[256], text[HOOK_ARGV_BYTES];

	if (json_object_is_type(f->v, json_type_string)) {
		if (get_string(c, f, key, text, sizeof(text)) == 0 && hook_cmd_parse(text, cmd, err, sizeof(err)) < 0)
			diag(c, K_HOOK, val_off(c, f->node), "\"%s\": %s", key, err);
		return;
	}
	if (!json_object_is_type(f->v, json_type_array) || json_object_array_length(f->v) == 0) {
		diag(c, K_TYPE, val_off(c, f->node),
		     "\"%s\" must be a command: an array such as [\"/usr/local/bin/notify\", \"--dump\"] or a string",
		     key);
		return;
	}
	memset(cmd, 0, sizeof(*cmd));
	for (size_t i = 0; i < json_object_array_length(f->v); i++) {
		struct json_object *a = json_object_array_get_idx(f->v, i);
		if (!json_object_is_type(a, json_type_string)) {
			diag(c, K_TYPE, val_off(c, f->node), "\"%s\": every word of the command must be a string", key);
			return;
		}
		if (hook_cmd_add(cmd, json_object_get_string(a)) < 0) {
			diag(c, K_HOOK, val_off(c, f->node), "\"%s\" is too long: at most %d words, %d bytes", key,
			     HOOK_ARGS_MAX, HOOK_ARGV_BYTES);
			return;
		}
	}
	if (cmd->buf[0] != '/')
		diag(c, K_HOOK, val_off(c, f->node),
		     "\"%s\": the program must be an absolute path (hooks run without a shell or PATH)", key);
}

static void parse_hooks(struct ctx *c, const struct field *hf, struct file_rule *fr)
{
	struct field f[3];

	if (!is_object(c, hf, "hooks"))
		return;
	collect(c, hf->node, hf->v, "hooks", hooks_keys, f);
	if (f[0].node >= 0)
		parse_hook_cmd(c, &f[0], "on-fire", &fr->on_fire);
	if (f[1].node >= 0)
		parse_hook_cmd(c, &f[1], "on-dump", &fr->on_dump);
	if (f[2].node >= 0 && get_duration(c, &f[2], "timeout", "2m", &fr->hook_timeout_ns) == 0 &&
	    (fr->hook_timeout_ns < DW_NS_PER_SEC || fr->hook_timeout_ns > 24 * 3600 * DW_NS_PER_SEC))
		diag(c, K_HOOK, val_off(c, f[2].node), "hook \"timeout\" must be from 1s to 24h");
}

/* "upload": true, false, or {"prefix": "...", "keep-local": bool}. */
static void parse_upload(struct ctx *c, const struct field *uf, struct file_rule *fr)
{
	struct field f[2];
	char q[80];

	if (json_object_is_type(uf->v, json_type_boolean)) {
		fr->upload = json_object_get_boolean(uf->v);
		return;
	}
	if (!json_object_is_type(uf->v, json_type_object)) {
		diag(c, K_TYPE, val_off(c, uf->node),
		     "\"upload\" must be true, false or an object such as {\"prefix\": \"orders/\", \"keep-local\": "
		     "false}");
		return;
	}
	fr->upload = 1;
	collect(c, uf->node, uf->v, "upload", upload_keys, f);
	if (f[0].node >= 0 && get_string(c, &f[0], "prefix", fr->upload_prefix, sizeof(fr->upload_prefix)) == 0) {
		const char *p = fr->upload_prefix;
		if (p[0] == '/' || strstr(p, "..") ||
		    strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/") != strlen(p))
			diag(c, K_UPLOAD, val_off(c, f[0].node),
			     "upload prefix \"%s\" may only hold letters, digits, '.', '_', '-' and '/', not start "
			     "with '/' "
			     "nor hold \"..\"",
			     shown(p, q, sizeof(q)));
	}
	if (f[1].node >= 0) {
		if (json_object_is_type(f[1].v, json_type_boolean))
			fr->upload_keep = json_object_get_boolean(f[1].v);
		else
			diag(c, K_TYPE, val_off(c, f[1].node), "\"keep-local\" must be true or false");
	}
}

static const char *const rule_keys[] = {"name",    "description", "process", "when",    "dump",  "limits",
                                        "enabled", "hooks",       "upload",  "$schema", "rules", NULL};
enum {
	RK_NAME,
	RK_DESC,
	RK_PROCESS,
	RK_WHEN,
	RK_DUMP,
	RK_LIMITS,
	RK_ENABLED,
	RK_HOOKS,
	RK_UPLOAD,
	RK_SCHEMA,
	RK_RULES
};
/* The keys of a {"rules": [...]} file; those of a rule inside it; the keys
 * that mark an object as a rule, or a file as a list of rules. */
static const char *const file_keys[] = {"rules", "$schema", NULL};
static const char *const inner_rule_keys[] = {"name",   "description", "process", "when",   "dump",
                                              "limits", "enabled",     "hooks",   "upload", NULL};
static const char *const rule_anchors[] = {"name", "when", NULL};
static const char *const file_anchors[] = {"rules", NULL};

/* Parses the rule object at node into fr (defaults first). top is set for
 * a file that is a single rule, where "$schema" is allowed. */
static void parse_rule(struct ctx *c, int node, struct json_object *obj, int top, struct file_rule *fr)
{
	/* "rules" is listed only for its suggestion: a rule with it is a container. */
	const char *const *keys = rule_keys;
	struct field f[11];
	char q[80];
	int column;

	memset(fr, 0, sizeof(*fr));
	fr->enabled = 1;
	fr->rule.dump_type = DW_DEFAULT_DUMP_TYPE;
	fr->rule.limits.max_dumps = DW_DEFAULT_MAX_DUMPS;
	fr->rule.limits.window_ns = DW_DEFAULT_RULE_WINDOW_NS;
	fr->rule.limits.cooldown_ns = DW_DEFAULT_RULE_COOLDOWN_NS;
	fr->upload = -1;
	fr->upload_keep = -1;
	ctx_pos(c, val_off(c, node), &fr->line, &column); /* the column is not kept */

	if (!top) {
		collect(c, node, obj, "rule", inner_rule_keys, f);
		f[RK_SCHEMA].node = -1;
	} else {
		collect(c, node, obj, "rule", keys, f);
	}
	if (f[RK_NAME].node < 0) {
		diag(c, K_MISSING, val_off(c, node), "rule has no \"name\"; add one such as \"name\": \"loh-balloon\"");
	} else if (get_string(c, &f[RK_NAME], "name", fr->rule.name, sizeof(fr->rule.name)) == 0) {
		const char *n = fr->rule.name;
		ctx_pos(c, val_off(c, f[RK_NAME].node), &fr->name_line, &fr->name_column);
		if (n[0] == '\0')
			diag(c, K_NAME, val_off(c, f[RK_NAME].node), "rule name is empty");
		else if (strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(n))
			diag(c, K_NAME, val_off(c, f[RK_NAME].node),
			     "rule name \"%s\" may only hold letters, digits, '.', '_' and '-'",
			     shown(n, q, sizeof(q)));
	}
	if (f[RK_DESC].node >= 0)
		get_string(c, &f[RK_DESC], "description", fr->description, sizeof(fr->description));
	if (f[RK_PROCESS].node >= 0)
		parse_process(c, &f[RK_PROCESS], &fr->filter);
	if (f[RK_WHEN].node < 0)
		diag(c, K_MISSING, val_off(c, node),
		     "rule has no \"when\"; add a condition such as \"when\": \"loh-size > 500MB\"");
	else
		parse_when(c, &f[RK_WHEN], &fr->rule);
	if (f[RK_DUMP].node >= 0)
		parse_dump(c, &f[RK_DUMP], fr);
	if (f[RK_LIMITS].node >= 0)
		parse_limits(c, &f[RK_LIMITS], &fr->rule.limits);
	if (f[RK_HOOKS].node >= 0)
		parse_hooks(c, &f[RK_HOOKS], fr);
	if (f[RK_UPLOAD].node >= 0)
		parse_upload(c, &f[RK_UPLOAD], fr);
	if (f[RK_ENABLED].node >= 0) {
		if (json_object_is_type(f[RK_ENABLED].v, json_type_boolean))
			fr->enabled = json_object_get_boolean(f[RK_ENABLED].v);
		else
			diag(c, K_TYPE, val_off(c, f[RK_ENABLED].node), "\"enabled\" must be true or false");
	}
	if (f[RK_SCHEMA].node >= 0 && !json_object_is_type(f[RK_SCHEMA].v, json_type_string))
		diag(c, K_TYPE, val_off(c, f[RK_SCHEMA].node), "\"$schema\" must be a string");
}

/* ---- is it a rule file? ----------------------------------------------- */

/* The first member of the object at node named key, or -1. */
static int member(struct ctx *c, int node, const char *key)
{
	char k[KEY_MAX];

	for (int ch = c->sc.nodes[node].first_child; ch >= 0; ch = c->sc.nodes[ch].next_sibling)
		if (decode_string(c->text, c->len, c->sc.nodes[ch].key_off, k, sizeof(k)) == 0 && strcmp(k, key) == 0)
			return ch;
	return -1;
}

/* Whether the object at node looks like what keys describe: it has one of
 * the anchors, and more than half of its keys are keys or close misses of one.
 * Decides whether messages may quote the file (see rulefile.h): a file that
 * is not a rule file (some other JSON a link leads to) has few of our keys. */
static int looks_like(struct ctx *c, int node, const char *const *keys, const char *const *anchors)
{
	char k[KEY_MAX];
	size_t total = 0, known = 0;
	int anchored = 0;

	for (int ch = c->sc.nodes[node].first_child; ch >= 0; ch = c->sc.nodes[ch].next_sibling) {
		size_t i;
		total++;
		if (decode_string(c->text, c->len, c->sc.nodes[ch].key_off, k, sizeof(k)) < 0)
			continue;
		for (i = 0; anchors[i]; i++)
			anchored |= strcmp(k, anchors[i]) == 0;
		for (i = 0; keys[i] && strcmp(k, keys[i]) != 0; i++)
			;
		if (keys[i] || near_key(k, keys, 1) >= 0)
			known++;
	}
	return anchored && known * 2 > total;
}

/* Whether the file (an object at node 0) looks like a rule file; when not,
 * the one diagnostic it gets, at the object that does not, quoting nothing. */
static int is_rule_file(struct ctx *c, int listed)
{
	static const char msg[] = "this does not look like a rule file (a rule object with \"name\" and \"when\", or "
	                          "{\"rules\": [rule, ...]}), so nothing of it is shown";
	int rules_node;

	if (!looks_like(c, 0, listed ? file_keys : rule_keys, listed ? file_anchors : rule_anchors)) {
		diag(c, K_NOT_RULES, val_off(c, 0), "%s", msg);
		return 0;
	}
	rules_node = listed ? member(c, 0, "rules") : -1;
	if (rules_node < 0 || c->text[c->sc.nodes[rules_node].val_off] != '[')
		return 1;
	for (int ch = c->sc.nodes[rules_node].first_child; ch >= 0; ch = c->sc.nodes[ch].next_sibling)
		if (c->text[c->sc.nodes[ch].val_off] == '{' && !looks_like(c, ch, inner_rule_keys, rule_anchors)) {
			diag(c, K_NOT_RULES, val_off(c, ch), "%s", msg);
			return 0;
		}
	return 1;
}

/* ---- the file --------------------------------------------------------- */

static int diag_cmp(const void *a, const void *b)
{
	const struct rule_diag *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return (x->column > y->column) - (x->column < y->column);
}

/* Parses and validates; returns the number of rules in *ret, or -1 after
 * diagnostics (or -ENOMEM). */
static int parse_text(struct ctx *c, struct file_rule **ret)
{
	struct json_tokener *tok;
	struct json_object *root = NULL, *rules = NULL;
	struct file_rule *out = NULL;
	size_t n = 0, off;
	int rules_node = -1, r;
	const char *nul;

	if (c->len > RULEFILE_SIZE_MAX) {
		diag(c, K_LIMIT, NO_OFF, "the file is too large (%zu bytes; a rule file may have at most %d)", c->len,
		     RULEFILE_SIZE_MAX);
		return -1;
	}
	if (skip_ws(c->text, c->len, 0) == c->len) {
		diag(c, K_SYNTAX, NO_OFF, "the file is empty; it must hold a rule object or {\"rules\": [...]}");
		return -1;
	}
	nul = memchr(c->text, '\0', c->len);
	if (nul) {
		diag(c, K_SYNTAX, (uint32_t)(nul - c->text), "invalid JSON: a NUL byte");
		return -1;
	}
	/* json-c counts every value on its stack, scalars too, and refuses more
	 * than max_depth; RULEFILE_DEPTH_MAX containers and a scalar in the
	 * innermost make RULEFILE_DEPTH_MAX + 1. Deeper nesting is reported at the
	 * bracket that opens the level too many (too_deep), as the scanner does. */
	tok = json_tokener_new_ex(RULEFILE_DEPTH_MAX + 1);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, c->text, (int)c->len);
	if (!root) {
		enum json_tokener_error e = json_tokener_get_error(tok);
		off = json_tokener_get_parse_end(tok);
		if (e == json_tokener_continue)
			diag(c, K_SYNTAX, (uint32_t)c->len, "invalid JSON: unexpected end of file");
		else if (e == json_tokener_error_depth)
			diag(c, K_LIMIT, too_deep(c->text, off), "nesting is too deep (at most %d levels)",
			     RULEFILE_DEPTH_MAX);
		else
			diag(c, K_SYNTAX, (uint32_t)off, "invalid JSON: %s", json_tokener_error_desc(e));
		json_tokener_free(tok);
		return -1;
	}
	json_tokener_free(tok);
	r = scan_text(&c->sc, &off);
	if (r == -EINVAL) {
		diag(c, K_SYNTAX, (uint32_t)off,
		     c->text[off < c->len ? off : 0] == '\'' ? "invalid JSON: strings must be in double quotes"
		                                             : "invalid JSON: unexpected character");
		goto fail;
	}
	if (r == -ELOOP) {
		diag(c, K_LIMIT, (uint32_t)off, "nesting is too deep (at most %d levels)", RULEFILE_DEPTH_MAX);
		goto fail;
	}
	if (r == -E2BIG) {
		diag(c, K_LIMIT, NO_OFF, "the file has too many values (at most %d)", SCAN_NODES_MAX);
		goto fail;
	}
	if (r < 0)
		goto oom;

	if (!json_object_is_type(root, json_type_object)) {
		diag(c, K_TYPE, val_off(c, 0), "a rule file must hold a rule object or {\"rules\": [...]}");
		goto fail;
	}
	if (!is_rule_file(c, json_object_object_get_ex(root, "rules", NULL)))
		goto fail;
	if (json_object_object_get_ex(root, "rules", &rules)) {
		struct field f[2];
		collect(c, 0, root, "rule file", file_keys, f);
		if (f[1].node >= 0 && !json_object_is_type(f[1].v, json_type_string))
			diag(c, K_TYPE, val_off(c, f[1].node), "\"$schema\" must be a string");
		rules_node = f[0].node;
		if (rules_node < 0)
			goto fail; /* reported as a repeated key */
		if (!json_object_is_type(rules, json_type_array)) {
			diag(c, K_TYPE, val_off(c, rules_node), "\"rules\" must be an array of rule objects");
			goto fail;
		}
		n = json_object_array_length(rules);
		if (n > RULEFILE_RULES_MAX) {
			diag(c, K_LIMIT, val_off(c, rules_node), "the file has %zu rules; at most %d are allowed", n,
			     RULEFILE_RULES_MAX);
			goto fail;
		}
	} else {
		n = 1;
	}
	out = calloc(n ? n : 1, sizeof(*out));
	if (!out)
		goto oom;
	if (rules_node < 0) {
		parse_rule(c, 0, root, 1, &out[0]);
	} else {
		size_t i = 0;
		for (int ch = c->sc.nodes[rules_node].first_child; ch >= 0 && i < n;
		     ch = c->sc.nodes[ch].next_sibling, i++) {
			struct json_object *o = json_object_array_get_idx(rules, i);
			if (!json_object_is_type(o, json_type_object))
				diag(c, K_TYPE, val_off(c, ch), "each entry of \"rules\" must be a rule object");
			else
				parse_rule(c, ch, o, 0, &out[i]);
		}
	}
	/* Names are unique within a file (they name dump files and journal lines). */
	for (size_t i = 1; i < n; i++) {
		if (!out[i].rule.name[0] || !out[i].name_line)
			continue;
		for (size_t j = 0; j < i; j++)
			if (out[j].name_line && strcmp(out[i].rule.name, out[j].rule.name) == 0) {
				char q[80];
				int ch = c->sc.nodes[rules_node].first_child;
				for (size_t k = 0; k < i && ch >= 0; k++)
					ch = c->sc.nodes[ch].next_sibling;
				struct field nf;
				nf.node = -1;
				for (int m = ch >= 0 ? c->sc.nodes[ch].first_child : -1; m >= 0;
				     m = c->sc.nodes[m].next_sibling) {
					char key[8];
					if (decode_string(c->text, c->len, c->sc.nodes[m].key_off, key, sizeof(key)) ==
					        0 &&
					    strcmp(key, "name") == 0)
						nf.node = m;
				}
				diag(c, K_DUP_NAME, val_off(c, nf.node), "rule name \"%s\" is also defined at %d:%d",
				     shown(out[i].rule.name, q, sizeof(q)), out[j].name_line, out[j].name_column);
				break;
			}
	}
	if (c->total)
		goto fail;
	json_object_put(root);
	*ret = out;
	return (int)n;
oom:
	json_object_put(root);
	free(out);
	return -ENOMEM;
fail:
	json_object_put(root);
	free(out);
	return -1;
}

int rulefile_parse(const char *text, size_t len, struct file_rule **ret, struct rule_diag *diags, size_t max_diags,
                   size_t *ret_ndiags)
{
	struct ctx c;
	enum diag_kind kinds_small[64], *kinds = kinds_small;
	int r;

	*ret = NULL;
	if (ret_ndiags)
		*ret_ndiags = 0;
	if (!diags)
		max_diags = 0;
	if (max_diags > 64) {
		kinds = calloc(max_diags, sizeof(*kinds));
		if (!kinds)
			return -ENOMEM;
	}
	memset(&c, 0, sizeof(c));
	c.text = text ? text : "";
	c.len = text ? len : 0;
	c.diags = diags;
	c.kinds = kinds;
	c.max = max_diags;
	c.cur_line = 1;
	c.cur_col = 1;
	c.sc.text = c.text;
	c.sc.len = c.len;
	r = parse_text(&c, ret);
	free(c.sc.nodes);
	if (kinds != kinds_small)
		free(kinds);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		if (c.n > 1)
			qsort(diags, c.n, sizeof(*diags), diag_cmp);
		if (ret_ndiags)
			*ret_ndiags = c.n;
		return -EINVAL;
	}
	return r;
}

void rulefile_format_diag(const char *path, const struct rule_diag *d, char *buf, size_t len)
{
	if (d->line > 0)
		snprintf(buf, len, "%s:%d:%d: %s", path, d->line, d->column, d->message);
	else
		snprintf(buf, len, "%s: %s", path, d->message);
}

void rulefile_format_duplicate(const char *path, const struct file_rule *r, const char *other_path, int other_line,
                               int other_column, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%d:%d: rule name \"%s\" is also defined at %s:%d:%d", path, r->name_line, r->name_column,
	         r->rule.name, other_path, other_line, other_column);
}

int rulefile_check_dump_dirs(const struct file_rule *rules, size_t n, const char *const *dirs, size_t n_dirs,
                             struct rule_diag *diags, size_t max_diags, size_t *ret_ndiags)
{
	char norm[PATH_MAX], list[320], q[80];
	size_t nd = 0, bad = 0, l = 0;

	if (ret_ndiags)
		*ret_ndiags = 0;
	if (n_dirs == 0)
		return 0;
	list[0] = '\0';
	for (size_t i = 0; i < n_dirs; i++) {
		size_t need = strlen(dirs[i]) + (i ? 2 : 0);
		if (l + need + 5 >= sizeof(list)) {
			snprintf(list + l, sizeof(list) - l, ", ...");
			break;
		}
		l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", dirs[i]);
	}
	for (size_t i = 0; i < n; i++) {
		const struct file_rule *r = &rules[i];
		size_t k = 0;
		int e;

		if (!r->dump_dir[0])
			continue;
		e = trust_path_normalize(r->dump_dir, norm, sizeof(norm));
		for (k = 0; e == 0 && k < n_dirs; k++)
			if (trust_path_within(norm, dirs[k]))
				break;
		if (e == 0 && k < n_dirs)
			continue;
		bad++;
		if (nd >= max_diags || !diags)
			continue;
		diags[nd].line = r->dump_dir_line;
		diags[nd].column = r->dump_dir_column;
		if (e == -EINVAL)
			snprintf(diags[nd].message, sizeof(diags[nd].message),
			         "dump dir \"%s\" has a \"..\" component; write the directory it means",
			         shown(r->dump_dir, q, sizeof(q)));
		else
			snprintf(
			    diags[nd].message, sizeof(diags[nd].message),
			    "dump dir \"%s\" is not inside an allowed dump directory (%s): dumps go only below the "
			    "daemon's --dump-dir and its --allow-dump-dir directories",
			    shown(r->dump_dir, q, sizeof(q)), list);
		nd++;
	}
	if (ret_ndiags)
		*ret_ndiags = nd;
	return bad ? -EINVAL : 0;
}

int rulefile_filter_match(const struct rule_filter *f, const char *name, const char *cmdline, pid_t pid, uid_t uid,
                          long uid_of_user)
{
	if (f->name[0] && (!name || fnmatch(f->name, name, 0) != 0))
		return 0;
	if (f->cmdline[0] && (!cmdline || fnmatch(f->cmdline, cmdline, 0) != 0))
		return 0;
	if (f->has_pid && f->pid != pid)
		return 0;
	if (f->has_user) {
		const char *u = f->user;
		if (u[0] && strspn(u, "0123456789") == strlen(u)) {
			/* A decimal uid; at most 10 digits fit in uid_t. */
			if (strlen(u) > 10 || strtoull(u, NULL, 10) != (unsigned long long)uid)
				return 0;
		} else if (uid_of_user < 0 || (unsigned long long)uid_of_user != (unsigned long long)uid) {
			return 0;
		}
	}
	return 1;
}
