/* Transient uids: see uidpool.h. */
#include "dumpwatch/uidpool.h"

#include "dumpwatch/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

static uid_t leases[UIDPOOL_LEASES_MAX];
static size_t n_leases;
static uint32_t next_off;
static int seeded;

int uidpool_has(uid_t uid)
{
	return uid >= UIDPOOL_BASE && uid - UIDPOOL_BASE < UIDPOOL_COUNT;
}

struct each_uid {
	void (*fn)(uid_t uid, void *ctx);
	void *ctx;
};

static int process_uids(pid_t pid, void *ctx)
{
	const struct each_uid *eu = ctx;
	char buf[2048];
	unsigned long ids[4];

	if (procfs_read(pid, "status", buf, sizeof(buf)) <= 0)
		return 0;
	const char *l = strstr(buf, "\nUid:");
	if (l && sscanf(l + 5, "%lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]) == 4)
		for (int i = 0; i < 4; i++)
			eu->fn((uid_t)ids[i], eu->ctx);
	return 0;
}

void uidpool_each_process_uid(void (*fn)(uid_t uid, void *ctx), void *ctx)
{
	struct each_uid eu = {fn, ctx};
	procfs_each_pid(process_uids, &eu);
}

struct used {
	uint8_t bits[UIDPOOL_COUNT / 8];
};

static void mark(uid_t uid, void *ctx)
{
	struct used *u = ctx;
	if (uidpool_has(uid))
		u->bits[(uid - UIDPOOL_BASE) / 8] |= (uint8_t)(1u << ((uid - UIDPOOL_BASE) % 8));
}

int uidpool_lease(uid_t *ret, char *err, size_t errlen)
{
	if (n_leases == UIDPOOL_LEASES_MAX) {
		snprintf(err, errlen, "%d transient uids are in use already", UIDPOOL_LEASES_MAX);
		return -EBUSY;
	}
	/* Taken from a place no start repeats, so that a file an earlier run
	 * left behind names a uid the next runs are unlikely to have. */
	if (!seeded) {
		if (getrandom(&next_off, sizeof(next_off), GRND_NONBLOCK) != (ssize_t)sizeof(next_off))
			next_off = (uint32_t)getpid() * 2654435761u;
		seeded = 1;
	}
	struct used *used = calloc(1, sizeof(*used));
	if (!used) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	uidpool_each_process_uid(mark, used);
	for (size_t i = 0; i < n_leases; i++)
		mark(leases[i], used);
	for (uint32_t k = 0; k < UIDPOOL_COUNT; k++) {
		uint32_t off = (next_off + k) % UIDPOOL_COUNT;
		uid_t uid = UIDPOOL_BASE + off;
		struct passwd pw, *pwp = NULL;
		struct group gr, *grp = NULL;
		char buf[4096];
		if (used->bits[off / 8] & (1u << (off % 8)))
			continue;
		if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp) == 0 && pwp)
			continue;
		if (getgrgid_r(uid, &gr, buf, sizeof(buf), &grp) == 0 && grp)
			continue;
		next_off = (off + 1) % UIDPOOL_COUNT;
		leases[n_leases++] = uid;
		free(used);
		*ret = uid;
		return 0;
	}
	free(used);
	snprintf(err, errlen, "no transient uid is free (all %u from %u are taken)", UIDPOOL_COUNT, UIDPOOL_BASE);
	return -EAGAIN;
}

int uidpool_become(uid_t uid)
{
	gid_t gid = (gid_t)uid;

	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	return 0;
}

void uidpool_kill_all(uid_t uid)
{
	pid_t k = fork();

	if (k == 0) {
		if (uidpool_become(uid) == 0)
			kill(-1, SIGKILL);
		_exit(0);
	}
	while (k > 0 && waitpid(k, NULL, 0) < 0 && errno == EINTR)
		;
}

void uidpool_release(uid_t uid, int kill_all)
{
	for (size_t i = 0; i < n_leases; i++)
		if (leases[i] == uid) {
			if (kill_all && geteuid() == 0)
				uidpool_kill_all(uid);
			leases[i] = leases[--n_leases];
			return;
		}
}
