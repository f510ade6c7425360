/* Transient uids: a uid of its own for each program dumpwatch runs on
 * behalf of the operator (a hook, an upload), so that no other process
 * shares it. Tracing a process and taking its descriptors (ptrace,
 * pidfd_getfd, /proc/PID/fd) need its uid or privileges: a program under a
 * uid no other process has can be reached by its own processes and root
 * alone, and when it is done everything running under that uid is its own
 * and can be killed.
 *
 * The uids (and gids of the same number) are the 65,536 from 2,102,853,632
 * (0x7D570000), in a range that systemd's table of uid ranges leaves unused
 * (1879048192-2147483647: above container ranges, below 2^31). One is
 * leased only when no lease, user, group or process has it; leases are the
 * daemon's (one process, one loop), so two programs started together never
 * share one. */
#ifndef DUMPWATCH_UIDPOOL_H
#define DUMPWATCH_UIDPOOL_H

#include <stddef.h>
#include <sys/types.h>

#define UIDPOOL_BASE 0x7D570000u
#define UIDPOOL_COUNT 65536u
#define UIDPOOL_LEASES_MAX 64 /* leased at once */

/* Leases a uid into *ret. 0, or -errno with a sentence in err (-EBUSY: as
 * many leased as may be; -EAGAIN: none free). */
int uidpool_lease(uid_t *ret, char *err, size_t errlen);

/* Gives uid back. kill_all: first every process running as uid is killed
 * (SIGKILL from a child that takes the uid, waited for). */
void uidpool_release(uid_t uid, int kill_all);

/* In a child: becomes uid (and gid uid, no supplementary group) for good.
 * 0, or -errno. */
int uidpool_become(uid_t uid);

/* In a child that holds root: kills every process running as uid, from a
 * child of its own that takes the uid (kill(-1) then reaches exactly those),
 * and waits for that child. */
void uidpool_kill_all(uid_t uid);

/* Whether uid lies in the pool's range. */
int uidpool_has(uid_t uid);

/* Calls fn(uid, ctx) for every uid (real, effective, saved, filesystem) of
 * every process in /proc. */
void uidpool_each_process_uid(void (*fn)(uid_t uid, void *ctx), void *ctx);

#endif
