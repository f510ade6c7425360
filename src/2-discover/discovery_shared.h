/* The pure helpers of discovery.c, exposed for tests/unit/test_discovery.c
 * only: parsing /proc text, matching socket names, naming processes, cutting
 * columns, and the directory scan. Not a public contract. */
#ifndef DUMPWATCH_DISCOVERY_SHARED_H
#define DUMPWATCH_DISCOVERY_SHARED_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* True when name is "dotnet-diagnostic-{nspid}-{digits}-socket"; stores the
 * digits (the runtime's key, its start time) in *ret_key when not NULL. */
int dn_socket_name_match(const char *name, pid_t nspid, unsigned long long *ret_key);

/* Parses /proc/{pid}/stat text: comm (between the first '(' and the last ')')
 * into comm, and field 22 (starttime) counted after the last ')'. 0 or -EINVAL. */
int dn_parse_stat(const char *buf, size_t len, char *comm, size_t commlen, unsigned long long *ret_starttime);

/* Parses /proc/{pid}/status text: the real Uid and Gid, and the last field of
 * NSpid (fallback_pid when the kernel has no NSpid line). 0 or -EINVAL. */
int dn_parse_status(const char *buf, size_t len, pid_t fallback_pid, uid_t *ret_uid, gid_t *ret_gid, pid_t *ret_nspid);

/* Finds name=value in a NUL-separated environment block and copies value into
 * out. 0, -ENOENT when absent, -ENAMETOOLONG when it does not fit. */
int dn_environ_get(const char *env, size_t len, const char *name, char *out, size_t outlen);

/* Finds the diagnostics socket of nspid in dir as discovery_find does, for
 * a process of the given uid: among the names of nspid that are sockets of
 * that uid, the one whose key equals starttime (when starttime is not 0),
 * else the newest mtime made since the process started. o (may be NULL) as
 * for discovery_find_ex. Writes the file name into out. 0, -ENOENT, or
 * -errno from dir (-ENOTDIR). */
struct dn_find_opts;
int dn_find_socket_in_dir(const char *dir, pid_t nspid, unsigned long long starttime, uid_t uid, struct dn_find_opts *o,
                          char *out, size_t outlen);

/* The name rule of discovery_process_name with every input given:
 * cmdline is the raw NUL-separated /proc/{pid}/cmdline (may be NULL). */
void dn_process_name(const char *entry_assembly, const char *exe_name, const char *cmdline, size_t cmdline_len,
                     const char *comm, char *out, size_t outlen);

/* Cuts s to at most max_chars UTF-8 characters, ending in "..." when cut. */
void dn_truncate(char *s, size_t max_chars);

#endif
