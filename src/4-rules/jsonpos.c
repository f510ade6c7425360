/* The JSON scanner that keeps positions (jsonpos.h): json-c has accepted the
 * text; this walks it once more for the offsets of its keys and values, and
 * counts lines and columns. Bounded: JSONPOS_NODES_MAX values, the caller's
 * nesting depth, every step advances. */
#include "dumpwatch/jsonpos.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/text.h"

void jsonpos_init(struct jsonpos *jp, const char *text, size_t len)
{
	memset(jp, 0, sizeof(*jp));
	jp->text = text;
	jp->len = len;
	jp->cur_line = 1;
	jp->cur_col = 1;
}

void jsonpos_free(struct jsonpos *jp)
{
	free(jp->nodes);
	jp->nodes = NULL;
	jp->n = jp->cap = 0;
}

static int scan_add(struct jsonpos *jp, int parent, int *last_child, uint32_t key_off, uint32_t val_off)
{
	struct jsonpos_node *nd;

	if (jp->n >= JSONPOS_NODES_MAX)
		return -E2BIG;
	if (jp->n == jp->cap) {
		size_t cap = jp->cap ? jp->cap * 2 : 64;
		struct jsonpos_node *p = realloc(jp->nodes, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		jp->nodes = p;
		jp->cap = cap;
	}
	nd = &jp->nodes[jp->n];
	nd->parent = parent;
	nd->first_child = -1;
	nd->next_sibling = -1;
	nd->key_off = key_off;
	nd->val_off = val_off;
	if (parent >= 0) {
		if (*last_child >= 0)
			jp->nodes[*last_child].next_sibling = (int)jp->n;
		else
			jp->nodes[parent].first_child = (int)jp->n;
		*last_child = (int)jp->n;
	}
	return (int)jp->n++;
}

size_t jsonpos_skip_ws(const char *t, size_t len, size_t i)
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

/* An open object or array while scanning: its node, its last member so far,
 * and the bracket that closes it. */
struct level {
	int node, last_child;
	char close;
};

int jsonpos_scan(struct jsonpos *jp, int max_depth, size_t *ret_off)
{
	struct level *stack;
	const char *t = jp->text;
	size_t len = jp->len, i = jsonpos_skip_ws(t, len, 0);
	int depth = 0, r;

	stack = malloc((size_t)(max_depth > 0 ? max_depth : 1) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;

	for (;;) {
		uint32_t key_off = JSONPOS_NONE;
		int parent = depth ? stack[depth - 1].node : -1;

		/* In an object, a key and ':' come first. */
		if (depth && stack[depth - 1].close == '}') {
			if (i >= len || t[i] != '"')
				goto bad;
			key_off = (uint32_t)i;
			i = jsonpos_skip_ws(t, len, skip_string(t, len, i));
			if (i >= len || t[i] != ':')
				goto bad;
			i = jsonpos_skip_ws(t, len, i + 1);
		}
		if (i >= len || t[i] == '\'')
			goto bad;
		r = scan_add(jp, parent, depth ? &stack[depth - 1].last_child : NULL, key_off, (uint32_t)i);
		if (r < 0)
			goto out;
		if (t[i] == '{' || t[i] == '[') {
			if (depth == max_depth) {
				*ret_off = i;
				r = -ELOOP;
				goto out;
			}
			stack[depth].node = r;
			stack[depth].last_child = -1;
			stack[depth].close = t[i] == '{' ? '}' : ']';
			depth++;
			i = jsonpos_skip_ws(t, len, i + 1);
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
			i = jsonpos_skip_ws(t, len, i);
			if (depth == 0) {
				r = 0;
				goto out;
			}
			if (i < len && t[i] == ',') {
				i = jsonpos_skip_ws(t, len, i + 1);
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
	r = -EINVAL;
out:
	free(stack);
	return r;
}

uint32_t jsonpos_too_deep(const char *t, size_t end, int max_depth)
{
	int depth = 0;

	for (size_t i = 0; i < end; i++) {
		if (t[i] == '"') {
			i = skip_string(t, end, i) - 1;
		} else if (t[i] == '{' || t[i] == '[') {
			if (++depth > max_depth)
				return (uint32_t)i;
		} else if (t[i] == '}' || t[i] == ']') {
			depth--;
		}
	}
	return (uint32_t)end;
}

int jsonpos_decode_string(const struct jsonpos *jp, size_t off, char *out, size_t outlen)
{
	const char *t = jp->text;
	size_t len = jp->len;
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

int jsonpos_member(const struct jsonpos *jp, int node, const char *key)
{
	char k[JSONPOS_KEY_MAX];

	for (int ch = jp->nodes[node].first_child; ch >= 0; ch = jp->nodes[ch].next_sibling)
		if (jsonpos_decode_string(jp, jp->nodes[ch].key_off, k, sizeof(k)) == 0 && strcmp(k, key) == 0)
			return ch;
	return -1;
}

void jsonpos_line_col(struct jsonpos *jp, size_t off, int *ret_line, int *ret_col)
{
	if (off > jp->len)
		off = jp->len;
	if (off < jp->cur_off) {
		jp->cur_off = 0;
		jp->cur_line = 1;
		jp->cur_col = 1;
	}
	for (; jp->cur_off < off; jp->cur_off++) {
		unsigned char ch = (unsigned char)jp->text[jp->cur_off];
		if (ch == '\n') {
			jp->cur_line++;
			jp->cur_col = 1;
		} else if ((ch & 0xc0) != 0x80) {
			jp->cur_col++;
		}
	}
	*ret_line = jp->cur_line;
	*ret_col = jp->cur_col;
}
