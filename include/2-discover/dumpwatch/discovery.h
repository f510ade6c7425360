/* Finding .NET processes and their diagnostics sockets on Linux (PROTOCOL.md
 * section 1): ${TMPDIR:-/tmp}/dotnet-diagnostic-{pid}-{key}-socket, looked up
 * with the target's own TMPDIR and, for processes in another pid or mount
 * namespace, its namespace pid (NSpid) under /proc/{pid}/root. */
#ifndef DUMPWATCH_DISCOVERY_H
#define DUMPWATCH_DISCOVERY_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "dumpwatch/ipc.h"

#define DISCOVERY_SOCK_MAX 512

/* A socket file's identity (a candidate found served by someone else is
 * skipped by it, whatever its name becomes). */
struct dn_sock_id {
	dev_t dev;
	ino_t ino;
};

/* Adds id to a list of at most max sockets to skip (the oldest goes when it
 * is full); an id already there is not added twice. */
void discovery_skip_add(struct dn_sock_id *skip, size_t *n, size_t max, struct dn_sock_id id);

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
	struct dn_sock_id sock; /* the socket file at socket_path when it was found */
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

/* Finds the diagnostics socket of pid. A candidate must be a socket file (not
 * a link) owned by the process's real uid: a name planted by another user is
 * skipped, never connected to. The name the process's runtime uses,
 * {nspid}-{starttime}, is looked up directly; only when it is missing is the
 * directory listed for the newest other socket of that pid made since the
 * process started (a runtime in another time namespace). Returns 0; -ESRCH
 * when the pid does not exist; -ENOENT when it has no diagnostics socket (not
 * a .NET process, diagnostics disabled, or only sockets of another uid: the
 * sentence says so); -EACCES when /proc of it cannot be read. err gets a
 * sentence for the user in every error case. */
int discovery_find(pid_t pid, struct dn_target *out, char *err, size_t errlen);

/* How discovery_find_ex looks. */
struct dn_find_opts {
	/* Look only at the runtime's own name and at the hints, never list
	 * the directory: a cost that does not grow with what others put there. */
	int exact_only;
	/* Socket names just seen created, tried after the runtime's own name
	 * (the newest that qualifies wins). */
	const char *const *hints;
	size_t n_hints;
	const struct dn_sock_id *skip; /* sockets found served by someone else: not candidates */
	size_t n_skip;
	/* Out: a socket under the process's name that another uid owns, skipped
	 * ("" when none), and that uid. */
	char foreign[DISCOVERY_SOCK_MAX];
	uid_t foreign_uid;
};

/* discovery_find with options (o may be NULL: as discovery_find). */
int discovery_find_ex(pid_t pid, struct dn_find_opts *o, struct dn_target *out, char *err, size_t errlen);

/* The sentence for a skipped socket of another uid (t: pid and uid set):
 * "ignoring PATH: that socket belongs to uid U, not to uid V of process N
 * (planted by another user?)". */
void discovery_describe_foreign(const struct dn_target *t, const char *path, uid_t owner, char *out, size_t outlen);

/* Lists every process that has a diagnostics socket. *ret is malloc'd
 * (free with free()), *ret_n its length. 0 or -errno. */
int discovery_list(struct dn_target **ret, size_t *ret_n);

/* Called by discovery_list_ex for a process left out because the only
 * socket under its name belongs to another uid (path, owner). */
typedef void (*discovery_foreign_fn)(void *ctx, const struct dn_target *t, const char *path, uid_t owner);

/* discovery_list, telling foreign (when not NULL) about each process whose
 * only socket was another uid's. */
int discovery_list_ex(discovery_foreign_fn foreign, void *ctx, struct dn_target **ret, size_t *ret_n);

/* Work done by discovery in this process, for tests and figures. */
struct dn_stats {
	uint64_t probes;       /* processes probed (/proc/PID/stat, status, exe, environ) */
	uint64_t listings;     /* socket directories listed */
	uint64_t listed_names; /* socket names read in those listings */
	uint64_t lookups;      /* candidate socket files stat'ed */
};
void discovery_get_stats(struct dn_stats *out);

/* The start time (field 22 of /proc/{pid}/stat) of pid: 0, -ESRCH, or -errno. */
int discovery_starttime(pid_t pid, unsigned long long *ret);

/* Parses a diagnostics socket name: 1 with its pid and key, else 0. */
int discovery_parse_socket_name(const char *name, pid_t *ret_pid, unsigned long long *ret_key);

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
