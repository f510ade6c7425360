/* Who a process runs as in a container world: the container id and the
 * Kubernetes pod uid read from the text of /proc/PID/cgroup. The parser is
 * pure (text in, identity out); only cgroup_read touches /proc. The text
 * comes from any process's cgroup path, which the process's owner (in a
 * delegated subtree such as user@UID.service) or a container's root may
 * shape: an id is believed only where the runtimes and the kubelet put it,
 * below cgroups only root makes, and only of the expected alphabet and
 * length; everything else reads as "no container". */
#ifndef DUMPWATCH_CGROUP_H
#define DUMPWATCH_CGROUP_H

#include <stddef.h>
#include <sys/types.h>

#define CGROUP_ID_LEN 64     /* a container id: 64 lowercase hex digits */
#define CGROUP_ID_SHORT 12   /* the short form docker and crictl show */
#define CGROUP_POD_LEN 36    /* a pod uid: 8-4-4-4-12 hex digits */
#define CGROUP_TEXT_MAX 8192 /* read of /proc/PID/cgroup; more is ignored */
#define CGROUP_LINE_MAX 4096 /* a longer line is skipped */

struct cgroup_ident {
	char container[CGROUP_ID_LEN + 1]; /* "" when none */
	char pod[CGROUP_POD_LEN + 1];      /* "" when none */
};

/* Parses len bytes of /proc/PID/cgroup text (cgroup v2 "0::/path" and v1
 * "N:controllers:/path" lines) into out, which is always filled ("" for
 * what is not found). A path gives a container id and a pod uid only in the
 * layouts the runtimes and the kubelet make, walked from the hierarchy's
 * root: the kubepods hierarchy of the systemd and cgroupfs drivers (QoS
 * guaranteed, burstable, besteffort; containerd, CRI-O, cri-dockerd),
 * Docker's system.slice/docker-ID.scope and /docker/ID, rootful Podman's
 * machine.slice/libpod-ID.scope and /libpod_parent/libpod-ID (the list is
 * in cgroup.c). A path relative to a cgroup namespace ("/../../NAME/...")
 * may start at any level of them. Anywhere else, under user.slice, a user's
 * user@UID.service or any other cgroup, a name of the right shape is no
 * container; below a container's cgroup, the container is that one, not
 * what its root named beneath it. The first line that yields a container id
 * decides it, the first that yields a pod uid decides that. Returns 1 when
 * either was found, else 0. */
int cgroup_parse(const char *text, size_t len, struct cgroup_ident *out);

/* Reads /proc/PID/cgroup (at most CGROUP_TEXT_MAX bytes) and parses it.
 * 0 (out filled, maybe with nothing), or -errno with a sentence in err
 * (-ESRCH when the process is gone). */
int cgroup_read(pid_t pid, struct cgroup_ident *out, char *err, size_t errlen);

/* The first CGROUP_ID_SHORT characters of id ("" for ""), into out (room
 * for CGROUP_ID_SHORT + 1). */
void cgroup_short_id(const char *id, char *out, size_t outlen);

#endif
