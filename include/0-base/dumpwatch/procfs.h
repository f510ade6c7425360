/* The processes in /proc, and one of a process's files read whole into a
 * bounded buffer: what the hooks' supervisor and the transient uids look
 * through. A process may end between the listing and the read: a read then
 * fails, and the caller goes on. */
#ifndef DUMPWATCH_PROCFS_H
#define DUMPWATCH_PROCFS_H

#include <stddef.h>
#include <sys/types.h>

/* Calls fn(pid, ctx) for every process /proc lists, until fn returns
 * nonzero. 0, or -errno when /proc cannot be listed. */
int procfs_each_pid(int (*fn)(pid_t pid, void *ctx), void *ctx);

/* Reads /proc/PID/NAME into buf, at most len - 1 bytes, NUL-terminated. Its
 * length, or -errno. */
ssize_t procfs_read(pid_t pid, const char *name, char *buf, size_t len);

#endif
