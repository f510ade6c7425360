/* The container id and pod uid of a process from its /proc/PID/cgroup (see
 * cgroup.h).
 *
 * Design note. A cgroup's name says nothing about who made it: a user with a
 * delegated subtree (systemd delegates user@UID.service to its user, and any
 * service with Delegate= and User= to that user) may make
 * .../kubepods-besteffort-podUID.slice/docker-ID.scope beneath it, and a
 * container's root may make anything beneath its own container's cgroup. A
 * name of the right shape is therefore believed only at the place where the
 * runtimes and the kubelet put it, walking down from the hierarchy's root
 * through cgroups only root can make:
 *
 *   systemd driver   /kubepods.slice/kubepods-pod<UID_>.slice/S
 *                    /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID_>.slice/S
 *                    /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<UID_>.slice/S
 *                      S = cri-containerd-ID.scope, crio-ID.scope or docker-ID.scope (cri-dockerd)
 *                    /system.slice/docker-ID.scope
 *                    /machine.slice/libpod-ID.scope                     (rootful podman)
 *                    /machine.slice/machine-libpod_pod_<64 hex>.slice/libpod-ID.scope
 *   cgroupfs driver  /kubepods[/burstable|/besteffort]/pod<UID>/C       C = ID or crio-ID
 *                    /docker/ID
 *                    /libpod_parent/libpod-ID                           (rootful podman)
 *
 * UID_ is the pod uid with '_' for '-' (a '-' would nest the slice). A static
 * pod's uid is 32 hex digits (a hash of its manifest, not the API's uid): its
 * slice is a pod's place, without a pod uid reported. Whatever lies beneath
 * the container's cgroup (podman's and crun's /container, a container's own
 * cgroups, docker in docker) belongs to that container: the first id on the
 * way down is the one the host's runtime gave, the others were named by a
 * container's root.
 *
 * Seen from inside a cgroup namespace (a guard in a pod), another cgroup's
 * path is relative to the namespace's root and starts with "/.." as often as
 * it climbs. The first name after the climb is a child of a cgroup above the
 * guard's own, so root named it, unless the guard itself runs in a user's
 * delegated subtree; it may stand at any level of the layouts above, and
 * the walk goes on from there (its parent, e.g. the pod, unknown).
 *
 * The kernel writes a path as '/' and names joined by '/', with no empty
 * name, "." or ".." but that leading climb: a line that has one is no layout.
 * Nothing is copied out unless it has exactly the expected length and
 * alphabet, so no byte of a hostile path reaches a label, a journal record or
 * a file name through here. */
#include "dumpwatch/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Where the walk stands: the cgroup whose children are looked at next. */
enum at {
	AT_NONE,       /* off the layouts: nothing further is believed */
	AT_ROOT,       /* the hierarchy's root */
	AT_CLIMBED,    /* after a leading "..": any level below the root */
	AT_KUBE_SD,    /* /kubepods.slice */
	AT_QOS_SD,     /* /kubepods.slice/kubepods-QOS.slice (burstable, besteffort) */
	AT_POD_SD,     /* a pod's slice */
	AT_KUBE_FS,    /* /kubepods */
	AT_QOS_FS,     /* /kubepods/QOS */
	AT_POD_FS,     /* /kubepods[/QOS]/podUID */
	AT_SYSTEM,     /* /system.slice */
	AT_MACHINE,    /* /machine.slice */
	AT_PODMAN_POD, /* /machine.slice/machine-libpod_pod_ID.slice */
	AT_DOCKER_FS,  /* /docker */
	AT_LIBPOD_FS,  /* /libpod_parent */
	AT_CONTAINER,  /* a container's cgroup: the walk ends */
};

/* The kubelet's QoS classes, by the systemd slice stem their pods' slices
 * extend ("kubepods-burstable" + "-pod<UID_>.slice"). */
enum qos { QOS_GUARANTEED, QOS_BURSTABLE, QOS_BESTEFFORT, QOS_ANY };
static const char *const qos_stem[] = {"kubepods", "kubepods-burstable", "kubepods-besteffort"};

/* Runtime scope prefixes ("PREFIX-ID.scope"), as a mask of those allowed. */
enum {
	RT_DOCKER = 1,
	RT_CONTAINERD = 2,
	RT_CRIO = 4,
	RT_LIBPOD = 8,
};
static const char *const rt_prefix[] = {"docker-", "cri-containerd-", "crio-", "libpod-"};

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

static int is_name(const char *c, size_t n, const char *name)
{
	return n == strlen(name) && memcmp(c, name, n) == 0;
}

/* c is prefix + 64 hex digits + suffix: the id copied to id. */
static int take_id(const char *c, size_t n, const char *prefix, const char *suffix, char *id)
{
	size_t p = strlen(prefix), s = strlen(suffix);

	if (n != p + CGROUP_ID_LEN + s || memcmp(c, prefix, p) != 0 || memcmp(c + p + CGROUP_ID_LEN, suffix, s) != 0 ||
	    !all_hex(c + p, CGROUP_ID_LEN))
		return 0;
	memcpy(id, c + p, CGROUP_ID_LEN);
	id[CGROUP_ID_LEN] = '\0';
	return 1;
}

/* A runtime's scope of one of the runtimes in mask. */
static int take_scope(const char *c, size_t n, int mask, char *id)
{
	for (size_t k = 0; k < sizeof(rt_prefix) / sizeof(rt_prefix[0]); k++)
		if ((mask & (1 << k)) && take_id(c, n, rt_prefix[k], ".scope", id))
			return 1;
	return 0;
}

/* A pod uid, 8-4-4-4-12 hex digits whose separators are sep, copied to pod
 * with '-' separators (1); a static pod's 32 hex digits (1, pod ""); or
 * neither (0). */
static int take_uid(const char *s, size_t n, char sep, char *pod)
{
	if (n == 32 && all_hex(s, n)) {
		pod[0] = '\0';
		return 1;
	}
	if (n != CGROUP_POD_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != sep : !is_hex(s[i]))
			return 0;
	}
	for (size_t i = 0; i < n; i++)
		pod[i] = s[i] == sep ? '-' : s[i];
	pod[n] = '\0';
	return 1;
}

/* A pod's slice under the QoS class q (QOS_ANY: any): STEM-pod<UID_>.slice. */
static int take_pod_slice(const char *c, size_t n, enum qos q, char *pod)
{
	for (int k = QOS_GUARANTEED; k <= QOS_BESTEFFORT; k++) {
		size_t p = strlen(qos_stem[k]);
		if ((q != QOS_ANY && q != (enum qos)k) || n <= p + 4 + 6 || memcmp(c, qos_stem[k], p) != 0 ||
		    memcmp(c + p, "-pod", 4) != 0 || memcmp(c + n - 6, ".slice", 6) != 0)
			continue;
		if (take_uid(c + p + 4, n - p - 4 - 6, '_', pod))
			return 1;
	}
	return 0;
}

/* One step down, from the cgroup at to its child c: where the walk then
 * stands. A container's id goes to id, a pod's uid to pod; *q carries the
 * QoS class from its slice to the pod's. */
static enum at step(enum at at, const char *c, size_t n, enum qos *q, char *id, char *pod)
{
	char scratch[CGROUP_ID_LEN + 1]; /* a podman pod's id, not reported */

	switch (at) {
	case AT_ROOT:
		if (is_name(c, n, "kubepods.slice"))
			return AT_KUBE_SD;
		if (is_name(c, n, "kubepods"))
			return AT_KUBE_FS;
		if (is_name(c, n, "system.slice"))
			return AT_SYSTEM;
		if (is_name(c, n, "machine.slice"))
			return AT_MACHINE;
		if (is_name(c, n, "docker"))
			return AT_DOCKER_FS;
		if (is_name(c, n, "libpod_parent"))
			return AT_LIBPOD_FS;
		return AT_NONE;
	case AT_KUBE_SD:
		if (is_name(c, n, "kubepods-burstable.slice") || is_name(c, n, "kubepods-besteffort.slice")) {
			*q = is_name(c, n, "kubepods-burstable.slice") ? QOS_BURSTABLE : QOS_BESTEFFORT;
			return AT_QOS_SD;
		}
		return take_pod_slice(c, n, QOS_GUARANTEED, pod) ? AT_POD_SD : AT_NONE;
	case AT_QOS_SD:
		return take_pod_slice(c, n, *q, pod) ? AT_POD_SD : AT_NONE;
	case AT_POD_SD:
		return take_scope(c, n, RT_CONTAINERD | RT_CRIO | RT_DOCKER, id) ? AT_CONTAINER : AT_NONE;
	case AT_KUBE_FS:
		if (is_name(c, n, "burstable") || is_name(c, n, "besteffort"))
			return AT_QOS_FS;
		/* A guaranteed pod sits in /kubepods itself. */
		return n > 3 && memcmp(c, "pod", 3) == 0 && take_uid(c + 3, n - 3, '-', pod) ? AT_POD_FS : AT_NONE;
	case AT_QOS_FS:
		return n > 3 && memcmp(c, "pod", 3) == 0 && take_uid(c + 3, n - 3, '-', pod) ? AT_POD_FS : AT_NONE;
	case AT_POD_FS:
		return take_id(c, n, "", "", id) || take_id(c, n, "crio-", "", id) ? AT_CONTAINER : AT_NONE;
	case AT_SYSTEM:
		return take_scope(c, n, RT_DOCKER, id) ? AT_CONTAINER : AT_NONE;
	case AT_MACHINE:
		if (take_id(c, n, "machine-libpod_pod_", ".slice", scratch))
			return AT_PODMAN_POD;
		return take_scope(c, n, RT_LIBPOD, id) ? AT_CONTAINER : AT_NONE;
	case AT_PODMAN_POD:
		return take_scope(c, n, RT_LIBPOD, id) ? AT_CONTAINER : AT_NONE;
	case AT_DOCKER_FS:
		return take_id(c, n, "", "", id) ? AT_CONTAINER : AT_NONE;
	case AT_LIBPOD_FS:
		return take_id(c, n, "libpod-", "", id) ? AT_CONTAINER : AT_NONE;
	case AT_CLIMBED: {
		/* Any level: the first place the name fits, the root's
		 * children included. Where one name fits several (a scope in a
		 * pod or in system.slice), all lead to the same answer. */
		enum at top = step(AT_ROOT, c, n, q, id, pod);
		if (top != AT_NONE)
			return top;
		for (int from = AT_KUBE_SD; from <= AT_LIBPOD_FS; from++) {
			enum qos fq = QOS_ANY;
			enum at to = step((enum at)from, c, n, &fq, id, pod);
			if (to != AT_NONE) {
				*q = fq;
				return to;
			}
		}
		return AT_NONE;
	}
	case AT_NONE:
	case AT_CONTAINER:
		break;
	}
	return AT_NONE;
}

/* The path as the kernel writes it: '/' alone, or "/name/name...", with no
 * empty name and no "." or ".." but a leading climb. */
static int path_well_formed(const char *p, size_t n)
{
	int climbing = 1;

	if (n == 0 || p[0] != '/')
		return 0;
	if (n == 1)
		return 1;
	for (size_t i = 1; i <= n;) {
		const char *slash = memchr(p + i, '/', n - i);
		size_t e = slash ? (size_t)(slash - p) : n, cn = e - i;
		if (cn == 0 || (cn == 1 && p[i] == '.'))
			return 0;
		if (cn == 2 && p[i] == '.' && p[i + 1] == '.') {
			if (!climbing)
				return 0;
		} else {
			climbing = 0;
		}
		i = e + 1;
	}
	return 1;
}

/* The path of one line (after "ID:controllers:"): the container id and the
 * pod uid its layout gives, when it gives them. */
static void line_parse(const char *l, size_t n, char *id, char *pod, int *got_id, int *got_pod)
{
	const char *c1 = memchr(l, ':', n), *c2, *end = l + n, *p;
	enum at at = AT_ROOT;
	enum qos q = QOS_ANY;

	if (!c1 || !(c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1))))
		return;
	p = c2 + 1;
	if (!path_well_formed(p, (size_t)(end - p)))
		return;
	while (end - p >= 3 && memcmp(p, "/..", 3) == 0 && (end - p == 3 || p[3] == '/')) {
		at = AT_CLIMBED;
		p += 3;
	}
	/* Each step sees the child's name: p is at its '/'. */
	while (p < end && at != AT_NONE && at != AT_CONTAINER) {
		const char *c = p + 1, *slash = memchr(c, '/', (size_t)(end - c));
		size_t cn = (size_t)((slash ? slash : end) - c);
		char cid[CGROUP_ID_LEN + 1], cpod[CGROUP_POD_LEN + 1];

		cpod[0] = '\0';
		at = step(at, c, cn, &q, cid, cpod);
		if (at == AT_CONTAINER) {
			memcpy(id, cid, sizeof(cid));
			*got_id = 1;
		} else if ((at == AT_POD_SD || at == AT_POD_FS) && cpod[0]) {
			memcpy(pod, cpod, sizeof(cpod));
			*got_pod = 1;
		}
		p = c + cn;
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
