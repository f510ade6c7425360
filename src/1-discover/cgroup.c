/* The container id and pod uid of a process from its /proc/PID/cgroup (see
 * cgroup.h). Layouts recognized (cgroup v1 and v2 alike, path after the
 * second ':' of a line):
 *   systemd driver   /system.slice/docker-ID.scope
 *                    /kubepods.slice/kubepods-burstable.slice/
 *                        kubepods-burstable-podUID_WITH_UNDERSCORES.slice/cri-containerd-ID.scope
 *                    (crio-ID.scope, libpod-ID.scope likewise)
 *   cgroupfs driver  /docker/ID, /kubepods/burstable/podUID/ID, /kubepods/podUID/ID
 * Nothing is copied out unless it has exactly the expected length and
 * alphabet, so no byte of a hostile path reaches a label, a journal record or
 * a file name through here. */
#include "dumpwatch/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_hex(s[i]))
			return 0;
	return 1;
}

static int has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);
	return n >= p && memcmp(s, prefix, p) == 0;
}

static int has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t x = strlen(suffix);
	return n >= x && memcmp(s + n - x, suffix, x) == 0;
}

/* A pod uid, 8-4-4-4-12 hex digits, whose separators are sep: copied to out
 * with '-' separators. */
static int take_uid(const char *s, size_t n, char sep, char *out)
{
	if (n != CGROUP_POD_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != sep : !is_hex(s[i]))
			return 0;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = s[i] == sep ? '-' : s[i];
	out[n] = '\0';
	return 1;
}

/* One path component: a container id (ret 1) or a pod uid (ret 2) into id. */
static int component(const char *c, size_t n, int in_kube, char *id, char *pod)
{
	static const char *const scopes[] = {"docker-", "cri-containerd-", "crio-", "libpod-"};

	if (n == CGROUP_ID_LEN && all_hex(c, n)) {
		memcpy(id, c, n);
		id[n] = '\0';
		return 1;
	}
	if (has_suffix(c, n, ".scope")) {
		for (size_t k = 0; k < sizeof(scopes) / sizeof(scopes[0]); k++) {
			size_t p = strlen(scopes[k]);
			if (has_prefix(c, n, scopes[k]) && n == p + CGROUP_ID_LEN + 6 &&
			    all_hex(c + p, CGROUP_ID_LEN)) {
				memcpy(id, c + p, CGROUP_ID_LEN);
				id[CGROUP_ID_LEN] = '\0';
				return 1;
			}
		}
		return 0;
	}
	/* kubepods-besteffort-pod<uid>.slice, kubepods-pod<uid>.slice: the uid's
	 * dashes are underscores there (a dash would nest the slice). */
	if (has_prefix(c, n, "kubepods-") && has_suffix(c, n, ".slice") && n > CGROUP_POD_LEN + 6 + 4) {
		const char *u = c + n - 6 - CGROUP_POD_LEN;
		if (memcmp(u - 4, "-pod", 4) == 0 && take_uid(u, CGROUP_POD_LEN, '_', pod))
			return 2;
		return 0;
	}
	if (in_kube && n == 3 + CGROUP_POD_LEN && has_prefix(c, n, "pod") && take_uid(c + 3, CGROUP_POD_LEN, '-', pod))
		return 2;
	return 0;
}

/* The path of one line (after "ID:controllers:"): its innermost container
 * id and its pod uid, when there are. */
static void line_parse(const char *l, size_t n, char *id, char *pod, int *got_id, int *got_pod)
{
	const char *c1 = memchr(l, ':', n), *c2, *end = l + n;
	int in_kube = 0;

	if (!c1 || !(c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1))))
		return;
	for (const char *p = c2 + 1; p < end;) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		const char *ce = slash ? slash : end;
		size_t cn = (size_t)(ce - p);
		char cid[CGROUP_ID_LEN + 1], cpod[CGROUP_POD_LEN + 1];

		if (cn > 0) {
			int k = component(p, cn, in_kube, cid, cpod);
			if (k == 1) {
				memcpy(id, cid, sizeof(cid));
				*got_id = 1;
			} else if (k == 2) {
				memcpy(pod, cpod, sizeof(cpod));
				*got_pod = 1;
			}
			if (has_prefix(p, cn, "kubepods"))
				in_kube = 1;
		}
		p = ce + 1;
	}
}

int cgroup_parse(const char *text, size_t len, struct cgroup_ident *out)
{
	const char *p = text, *end = text + len;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char id[CGROUP_ID_LEN + 1], pod[CGROUP_POD_LEN + 1];
		int got_id = 0, got_pod = 0;

		/* A NUL inside a line is no part of any layout. */
		if (n > 0 && n <= CGROUP_LINE_MAX && !memchr(p, '\0', n)) {
			line_parse(p, n, id, pod, &got_id, &got_pod);
			if (got_id && !out->container[0])
				memcpy(out->container, id, sizeof(id));
			if (got_pod && !out->pod[0])
				memcpy(out->pod, pod, sizeof(pod));
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return out->container[0] || out->pod[0];
}

int cgroup_read(pid_t pid, struct cgroup_ident *out, char *err, size_t errlen)
{
	char path[64], buf[CGROUP_TEXT_MAX];
	size_t got = 0;
	int fd;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno == ENOENT ? ESRCH : errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -e;
	}
	while (got < sizeof(buf)) {
		ssize_t r = read(fd, buf + got, sizeof(buf) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno == ENOENT ? ESRCH : errno;
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	/* Full: the last line may be cut, and a cut component must not pass
	 * for an id of the right length. */
	if (got == sizeof(buf)) {
		const char *nl = memrchr(buf, '\n', got);
		got = nl ? (size_t)(nl - buf) : 0;
	}
	cgroup_parse(buf, got, out);
	return 0;
}

void cgroup_short_id(const char *id, char *out, size_t outlen)
{
	if (!outlen)
		return;
	snprintf(out, outlen, "%.*s", CGROUP_ID_SHORT, id);
}
