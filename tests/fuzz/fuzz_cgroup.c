/* Fuzz target: the /proc/PID/cgroup parser (cgroup_parse), whose paths a
 * container's root or a delegated user may shape. Checked: what it reports
 * is of the exact alphabet and length (64 lowercase hex digits; a pod uid of
 * 8-4-4-4-12 hex digits), its answer says whether anything was found, a
 * second parse of the same bytes agrees, and the same text with every path
 * moved into a user's delegated subtree (user@1000.service, where the user
 * may name cgroups as they like) yields nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int valid_id(const char *s)
{
	if (!*s)
		return 1;
	for (size_t i = 0; i < CGROUP_ID_LEN; i++)
		if (!hex(s[i]))
			return 0;
	return s[CGROUP_ID_LEN] == '\0';
}

static int valid_pod(const char *s)
{
	if (!*s)
		return 1;
	for (size_t i = 0; i < CGROUP_POD_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !hex(s[i]))
			return 0;
	}
	return s[CGROUP_POD_LEN] == '\0';
}

/* Every line's path (after its second ':') put under a user's delegated
 * subtree, as a user who made those cgroups there would have it: nothing
 * may be found, whatever the path was. */
static void nested_finds_nothing(const char *text, size_t size)
{
	static const char sub[] = "/user.slice/user-1000.slice/user@1000.service";
	size_t lines = 1, j = 0;
	struct cgroup_ident c;

	for (size_t i = 0; i < size; i++)
		if (text[i] == '\n')
			lines++;
	char *out = malloc(size + lines * (sizeof(sub) - 1) + 1);
	if (!out)
		return;
	for (size_t i = 0; i < size;) {
		const char *nl = memchr(text + i, '\n', size - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : size - i, colons = 0;
		for (size_t k = 0; k < n; k++) {
			out[j++] = text[i + k];
			if (text[i + k] == ':' && ++colons == 2) {
				memcpy(out + j, sub, sizeof(sub) - 1);
				j += sizeof(sub) - 1;
			}
		}
		i += n;
		if (nl)
			out[j++] = text[i++];
	}
	if (cgroup_parse(out, j, &c) != 0 || c.container[0] || c.pod[0])
		abort();
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact copy, so that a read past the end is caught. */
	char *text = malloc(size ? size : 1);
	struct cgroup_ident a, b;

	if (!text)
		return 0;
	memcpy(text, data, size);
	memset(&a, 0x41, sizeof(a));
	memset(&b, 0x42, sizeof(b));
	int found = cgroup_parse(text, size, &a);
	if (!valid_id(a.container) || !valid_pod(a.pod))
		abort();
	if (found != (a.container[0] || a.pod[0]))
		abort();
	if (cgroup_parse(text, size, &b) != found || strcmp(a.container, b.container) || strcmp(a.pod, b.pod))
		abort();
	nested_finds_nothing(text, size);
	free(text);
	return 0;
}
