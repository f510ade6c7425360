/* Finding .NET processes and their diagnostics sockets on Linux (PROTOCOL.md
 * section 1): ${TMPDIR:-/tmp}/dotnet-diagnostic-{pid}-{key}-socket, looked up
 * with the target's own TMPDIR and, for processes in another pid or mount
 * namespace, its namespace pid (NSpid) under /proc/{pid}/root. */
#ifndef DUMPWATCH_DISCOVERY_H
#define DUMPWATCH_DISCOVERY_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "dumpwatch/ipc.h"

#define DISCOVERY_SOCK_MAX 512

struct dn_target {
	pid_t pid;                    /* host pid */
	pid_t nspid;                  /* pid inside its own pid namespace (== pid when not in a container) */
	unsigned long long starttime; /* field 22 of /proc/{pid}/stat: with pid, the process's identity */
	uid_t uid;                    /* real uid of the process */
	gid_t gid;
	int other_mount_ns; /* the socket lives under /proc/{pid}/root */
	/* A path this process can connect(2) to (it may go through
	 * /proc/{pid}/root; sun_path limits are handled by ipc_connect). */
	char socket_path[DISCOVERY_SOCK_MAX];
	/* Its TMPDIR as the process itself sees it (absolute, or as the
	 * environment gave it): where its runtime makes the socket. */
	char tmpdir[DISCOVERY_SOCK_MAX];
	char comm[64];      /* /proc/{pid}/comm */
	char exe_name[256]; /* base name of /proc/{pid}/exe, "" if unreadable */
};

/* The endpoint to talk to t: its socket, checked to be served by t itself. */
static inline struct ipc_endpoint discovery_endpoint(const struct dn_target *t)
{
	return (struct ipc_endpoint){.path = t->socket_path, .pid = t->pid, .uid = t->uid};
}

/* Finds the diagnostics socket of pid. Returns 0; -ESRCH when the pid does not
 * exist; -ENOENT when it has no diagnostics socket (not a .NET process, or
 * diagnostics disabled); -EACCES when /proc of it cannot be read. err gets a
 * sentence for the user in every error case. */
int discovery_find(pid_t pid, struct dn_target *out, char *err, size_t errlen);

/* Lists every process that has a diagnostics socket. *ret is malloc'd
 * (free with free()), *ret_n its length. 0 or -errno. */
int discovery_list(struct dn_target **ret, size_t *ret_n);

/* The name a user knows the process by: the entry assembly without extension
 * when known (a "dotnet app.dll" launch is "app"), else the executable's base
 * name, else comm. Writes into out. */
void discovery_process_name(const struct dn_target *t, const char *entry_assembly, char *out, size_t outlen);

/* Reads /proc/{pid}/cmdline with NULs turned into spaces. 0 or -errno. */
int discovery_cmdline(pid_t pid, char *out, size_t outlen);

/* Prints the `dumpwatch ps` table (or JSON lines when json is set) of every
 * .NET process to out. Returns the number of processes listed, or -errno. */
int discovery_print_ps(FILE *out, int json);

/* The directory in which pid's runtime creates (or would create) its
 * diagnostics socket, as a path reachable from here: its TMPDIR (default
 * /tmp), under /proc/{pid}/root when it lives in another mount namespace. For
 * the daemon's inotify watches. 0 or -errno. */
int discovery_socket_dir(pid_t pid, char *out, size_t outlen);

/* Whether the process (pid, starttime) has exited: no such pid, a zombie
 * waiting for its parent, or the pid reused by another process (starttime
 * 0: not compared). A process that cannot be read is taken as alive. */
int discovery_exited(pid_t pid, unsigned long long starttime);

/* discovery_exited, waiting up to timeout_ms for an exit under way (a stream
 * cut off by a dying process ends before the process is a zombie). */
int discovery_wait_exited(pid_t pid, unsigned long long starttime, int timeout_ms);

/* Whether name is a diagnostics socket name ("dotnet-diagnostic-{pid}-{key}-socket"). */
int discovery_is_socket_name(const char *name);

#endif
