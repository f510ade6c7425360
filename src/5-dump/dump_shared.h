/* What the files of the dump library share (dump.c, stage.c, storedir.c):
 * opening a path inside a process's root without following links, and the
 * staging directory a runtime of another user writes a dump in. Not a
 * public header. */
#ifndef DUMPWATCH_DUMP_SHARED_H
#define DUMPWATCH_DUMP_SHARED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "dumpwatch/dump.h"
#include "dumpwatch/store.h"

/* ---- storedir.c ------------------------------------------------------- */

/* Opens path below rootfd (a process's root, /proc/PID/root, or "/") as that
 * process would resolve it, but never through a symbolic link. -errno on
 * failure. */
int dump_open_in_root(int rootfd, const char *path, int flags);

/* Whether a directory with st may be written by the process pid of uid/gid,
 * going by its permission bits (and pid's supplementary groups). */
int dump_writable_by(const struct stat *st, pid_t pid, uid_t uid, gid_t gid);

/* ---- stage.c ---------------------------------------------------------- */

/* Where a runtime running as another user writes the dump, when not in the
 * store itself: DIR/.incoming/UID (stage_open_incoming), or a directory made
 * in the target's TMPDIR through /proc/PID/root (stage_open_in_target). The
 * finished file is taken from there (stage_take) and linked into the store
 * (stage_link), or copied when it lies on another file system
 * (stage_copy_start). */
struct dump_stage {
	int fd;        /* the staging directory; -1: none, the dump is written in the store */
	int parent_fd; /* a directory made in the target's file system: the TMPDIR it is in, else -1 */
	char name[32]; /* ... and its name there */
};

/* No staging directory. */
void stage_init(struct dump_stage *s);

/* Closes s; a directory made in the target's file system is removed (it is
 * empty by then unless its user put something there). */
void stage_close(struct dump_stage *s);

/* As root, for a runtime of req->uid sharing our mount namespace: the
 * directory DIR/.incoming/UID (0700, that user's) below the store behind
 * store_fd (req->dir), where it writes tmp_name; tmp_path (tmp_pathlen)
 * becomes that file's path. 0 or -errno with a sentence in err. */
int stage_open_incoming(struct dump_stage *s, const struct dump_request *req, int store_fd, const char *tmp_name,
                        char *tmp_path, size_t tmp_pathlen, char *err, size_t errlen);

/* For a process in another mount namespace: a directory of its user made in
 * its TMPDIR (req->tmpdir), reached through /proc/PID/root without following
 * links; tmp_path becomes the path of tmp_name there as the process sees it.
 * 0 or -errno with a sentence in err; what was made is removed by
 * stage_close. */
int stage_open_in_target(struct dump_stage *s, const struct dump_request *req, const char *tmp_name, char *tmp_path,
                         size_t tmp_pathlen, char *err, size_t errlen);

/* Whether the process req->pid, in another mount namespace, reaches the
 * store behind store_fd by its path req->dir. */
int stage_sees_store(const struct dump_request *req, int store_fd);

/* The disk guards l on the file system of the staging directory (in the
 * target's namespace), for a dump of estimate bytes: 0, or -ENOSPC with the
 * reason in err. */
int stage_check_free(const struct dump_stage *s, const struct dump_request *req, const struct store_limits *l,
                     uint64_t estimate, char *err, size_t errlen);

/* Opens the staged file tmp_name (tmp_path in messages) without following
 * links or crossing a mount, checks that it is a regular, non-empty file of
 * req->uid with one link, and makes it ours (0600) unless a writer still
 * holds it. *ret_fd is the file (-1 when it could not be opened; the caller
 * closes it either way) and *ret_size its size. 0, or -errno with a sentence
 * in err. */
int stage_take(const struct dump_stage *s, const struct dump_request *req, const char *tmp_name, const char *tmp_path,
               int *ret_fd, uint64_t *ret_size, char *err, size_t errlen);

/* A staged file taken and then refused goes back to its user (req->uid). */
void stage_give_back(int fd, const struct dump_request *req);

/* Links the file behind fd into dir as name. 0, -EXDEV when it lies on
 * another file system, or another -errno. */
int stage_link(int fd, int dir, const char *name);

/* Starts a child that copies n bytes from src to dst, from their starts,
 * and syncs dst; it exits 0 or with an errno value. The child's pid, or
 * -errno. */
pid_t stage_copy_start(int src, int dst, uint64_t n);

#endif
