/* The names of dump files: a template ({name} {pid} {rule} {time}
 * {container} {pod}) expanded with every part restricted to [A-Za-z0-9._-],
 * so that no process, rule or container can name another directory or a
 * hidden file; see dump.h. Pure. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dumpwatch/cgroup.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/dump.h"
#include "dumpwatch/text.h"

static void sanitize(const char *in, char *out, size_t outlen, size_t maxlen)
{
	size_t j = 0;

	for (size_t i = 0; in && in[i] && j + 1 < outlen && j < maxlen; i++) {
		char c = in[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		         c == '_' || c == '-';
		out[j++] = ok ? c : '_';
	}
	if (j == 0 && outlen > 1)
		out[j++] = '_';
	out[j] = '\0';
	/* A leading dot would hide the file and collide with our temporary names. */
	if (out[0] == '.')
		out[0] = '_';
}

void dump_file_name(const char *process_name, pid_t pid, const char *rule_name, int64_t unix_ns, char *out,
                    size_t outlen)
{
	dump_file_name_template(NULL, process_name, pid, rule_name, unix_ns, out, outlen);
}

void dump_file_name_template(const char *tmpl, const char *process_name, pid_t pid, const char *rule_name,
                             int64_t unix_ns, char *out, size_t outlen)
{
	dump_file_name_ids(tmpl, process_name, pid, rule_name, NULL, NULL, unix_ns, out, outlen);
}

void dump_file_name_ids(const char *tmpl, const char *process_name, pid_t pid, const char *rule_name,
                        const char *container, const char *pod, int64_t unix_ns, char *out, size_t outlen)
{
	char name[80], rule[80], stamp[40], pidbuf[16], raw[32], ctr[CGROUP_ID_SHORT + 1], podbuf[CGROUP_POD_LEN + 1];
	time_t s = (time_t)(unix_ns / 1000000000LL);
	struct tm tm;
	size_t j = 0;

	if (!outlen)
		return;
	/* Unknown ids expand to nothing, not to the '_' of an empty part. */
	ctr[0] = podbuf[0] = '\0';
	if (container && container[0])
		sanitize(container, ctr, sizeof(ctr), CGROUP_ID_SHORT);
	if (pod && pod[0])
		sanitize(pod, podbuf, sizeof(podbuf), CGROUP_POD_LEN);
	if (!tmpl || !tmpl[0])
		tmpl = ctr[0] ? DW_DEFAULT_DUMP_NAME_TEMPLATE_CONTAINER : DW_DEFAULT_DUMP_NAME_TEMPLATE;
	sanitize(process_name, name, sizeof(name), 64);
	sanitize(rule_name, rule, sizeof(rule), 64);
	gmtime_r(&s, &tm);
	strftime(raw, sizeof(raw), "%Y%m%dT%H%M%S", &tm);
	snprintf(stamp, sizeof(stamp), "%s.%03dZ", raw, (int)((unix_ns / 1000000LL) % 1000));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	for (const char *p = tmpl; *p && j + 1 < outlen;) {
		static const char *const keys[] = {"{name}", "{pid}", "{rule}", "{time}", "{container}", "{pod}"};
		const char *vals[] = {name, pidbuf, rule, stamp, ctr, podbuf};
		size_t k;

		for (k = 0; k < 6; k++)
			if (strncmp(p, keys[k], strlen(keys[k])) == 0)
				break;
		if (k < 6) {
			for (const char *v = vals[k]; *v && j + 1 < outlen; v++)
				out[j++] = *v;
			p += strlen(keys[k]);
			continue;
		}
		/* The template was validated; still, never let it name another directory. */
		out[j++] = *p == '/' ? '_' : *p;
		p++;
	}
	out[j] = '\0';
	if (out[0] == '.' || out[0] == '\0')
		out[0] = '_';
}

int dump_file_name_ok(const char *name)
{
	size_t n = name ? strnlen(name, NAME_MAX + 1) : 0;

	return n > 0 && n <= NAME_MAX && name[0] != '.' && !memchr(name, '/', n);
}

void dump_file_name_for_type(char *name, size_t len, enum dump_type type)
{
	size_t n = strlen(name);

	if (type != DUMP_GCDUMP || text_ends_with(name, n, ".gcdump", 0))
		return;
	if (text_ends_with(name, n, ".core", 0))
		n -= 5;
	if (n + sizeof(".gcdump") > len)
		n = len - sizeof(".gcdump");
	snprintf(name + n, len - n, ".gcdump");
}
