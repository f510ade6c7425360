/* Capturing a core dump of one process with the runtime's createdump.
 *
 * Root never executes a file that anyone but the host's root could have
 * written, and never anything from inside a target's root or mount namespace
 * (DESIGN.md "Dump safety"). Two paths (PROTOCOL.md section 6):
 * - runtime (default, and the only one for a process in another mount
 *   namespace): the dump command over the diagnostics socket (checked to be
 *   served by the target, SO_PEERCRED); the runtime forks createdump as the
 *   target's own user, inside its namespaces.
 * - exec: dumpwatch runs createdump itself: the one given with --createdump,
 *   or the host's own runtime of exactly the version the target reports.
 *   As root, that file and every directory above it must be root's and
 *   writable by no one else; never one below /proc/PID/root.
 *
 * The store (the dump directory) must be ours, writable by no one else, below
 * directories only root can change. The caller decides once where a dump
 * goes: it opens and checks the store (dump_open_store) and names the file
 * (dump_file_name_ids), and hands both to the dump and to the writer of its
 * context files (store_put_context). Every file in it is created without
 * following links: a temporary ".NAME.partial" (O_CREAT|O_EXCL|O_NOFOLLOW,
 * 0600) that createdump fills and that is renamed to NAME only when createdump
 * succeeded. As root, a runtime running as another user writes instead in a
 * staging directory of that user: DIR/.incoming/UID (0700) when the target
 * shares our mount namespace; for a target in another one, a directory that
 * dumpwatch creates in the target's TMPDIR through /proc/PID/root (walked
 * without following links), gives to the target's user and removes
 * afterwards. The finished file is opened without following links and checked
 * (regular, that user's, one link, no writer left, an ELF core whose program
 * headers fit the file, a size within reason of the estimate); it is made
 * root's 0600 and linked into the store, or copied there when it lies on
 * another file system. A failed, timed-out or abandoned dump leaves no file
 * behind, neither in the store nor in the target's file system.
 *
 * Before every dump the disk guards (store.h) are checked, on the store and
 * on the file system the runtime writes to; a dump they refuse is skipped
 * (-ENOSPC) with the reason, after deleting the oldest stored dumps when so
 * configured.
 *
 * A gcdump (DUMP_GCDUMP) is no core: a child of ours takes a heap snapshot
 * over the target's diagnostics socket (heapdump.h) and writes it in the
 * store as ".NAME.partial" itself, renamed to NAME when it is whole; it
 * brings the heap summary too. dump_heap_summary_start takes the summary
 * alone, after a core dump, for its context.
 *
 * A dump runs asynchronously: dump_start returns a job whose descriptor becomes
 * readable when createdump has finished or its time is up. */
#ifndef DUMPWATCH_DUMP_H
#define DUMPWATCH_DUMP_H

#include <json-c/json.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/rules.h"
#include "dumpwatch/store.h"

enum dump_via { DUMP_VIA_AUTO = 0, DUMP_VIA_RUNTIME, DUMP_VIA_EXEC };

/* --dump-via by default: auto is the runtime's dump command: the target's
 * runtime forks the createdump it ships, as the target's user inside its
 * namespaces, and root executes no file. */
#define DUMP_VIA_DEFAULT DUMP_VIA_AUTO

struct dump_request {
	pid_t pid; /* host pid */
	uid_t uid; /* the target's real uid and gid */
	gid_t gid;
	int other_mount_ns;      /* the target sees another file system tree */
	const char *socket_path; /* its diagnostics socket */
	const char *tmpdir;      /* its TMPDIR as it sees it (dn_target.tmpdir) */
	/* The runtime version it reported (ProcessInfo2), "" or NULL when
	 * unknown: the exec path runs the host's createdump of that version. */
	const char *runtime_version;
	const char *createdump; /* exec path: the operator's createdump; NULL: the host's runtime */
	const char *dir;        /* dump directory, absolute, as given to dump_open_store */
	/* The store: dir opened by dump_open_store. Lent to the job: the caller
	 * keeps it open until the job is freed. */
	int store_fd;
	const char *name; /* the file's name in dir (dump_file_name_ids): dump_file_name_ok */
	enum dump_type type;
	enum dump_via via;
	const struct store_limits *limits; /* NULL: none */
	int64_t timeout_ns;                /* createdump is killed past it; 0: no limit */
	/* Called for each stored dump deleted to make room (delete_oldest),
	 * with its context files; context_only: the context files of a dump
	 * that was not taken (path names its JSON). */
	void (*deleted)(void *ctx, const char *path, uint64_t bytes, int context_only);
	void *ctx;
};

struct dump_result {
	char path[PATH_MAX];
	uint64_t bytes;
	double duration_ms;
	const char *via; /* "runtime", "exec", or "eventpipe" for a heap snapshot */
	/* The heap summary (heapdump_json) of a gcdump or of
	 * dump_heap_summary_start, NULL otherwise: the caller puts it. */
	struct json_object *heap;
};

struct dump_job;

/* Starts a dump of req->name in the store req->store_fd. Returns 0 with a
 * job; -ENOSPC when the disk guards skip it; or -errno with a sentence in err
 * that says what to do (e.g. how to fix the dump directory's permissions). */
int dump_start(const struct dump_request *req, struct dump_job **ret, char *err, size_t errlen);

/* Starts a heap snapshot of req->pid for its summary alone (no file; the
 * name, the store and the disk guards are not used). Finished like a dump:
 * dump_job_finish gives res->heap, with no path and 0 bytes. 0, or -errno with
 * a sentence in err. */
int dump_heap_summary_start(const struct dump_request *req, struct dump_job **ret, char *err, size_t errlen);

/* The descriptor to poll for readability. It can change after dump_job_finish
 * returns -EAGAIN (the job moved on to an older protocol version). */
int dump_job_fd(const struct dump_job *job);

/* Called when the job's descriptor is readable. Returns 0 when the dump was
 * published (res filled), -EAGAIN when still running (poll dump_job_fd again),
 * -ETIMEDOUT when createdump ran past the time limit and was killed, or
 * another -errno with a sentence in err (nothing is left on disk either way). */
int dump_job_finish(struct dump_job *job, struct dump_result *res, char *err, size_t errlen);

/* Stops a dump in progress (kills a createdump child), removes its partial
 * file and frees the job. NULL is a no-op. */
void dump_job_abort(struct dump_job *job);

/* Frees a finished job. NULL is a no-op. */
void dump_job_free(struct dump_job *job);

/* The final path the job publishes to. */
const char *dump_job_path(const struct dump_job *job);

/* How far the dump has got: the bytes of the file being written (for
 * display only: it is not checked here) and the size expected (0: unknown). */
int dump_job_progress(const struct dump_job *job, uint64_t *written, uint64_t *estimate);

/* Builds the file name "{name}-{pid}-{rule}-{YYYYmmddTHHMMSS.mmmZ}.core" with
 * every part restricted to [A-Za-z0-9._-]. */
void dump_file_name(const char *process_name, pid_t pid, const char *rule_name, int64_t unix_ns, char *out,
                    size_t outlen);

/* Expands a file name template ({name} {pid} {rule} {time}, as rule files
 * allow) with the same restrictions as dump_file_name; NULL or "" is
 * DW_DEFAULT_DUMP_NAME_TEMPLATE (defaults.h). A '/' becomes '_', a leading '.' too.
 * {container} and {pod} expand to "". */
void dump_file_name_template(const char *tmpl, const char *process_name, pid_t pid, const char *rule_name,
                             int64_t unix_ns, char *out, size_t outlen);

/* dump_file_name_template for a process whose container id and pod uid
 * (cgroup.h; NULL or "" when none) are known: {container} is the id's first
 * 12 characters, {pod} the uid, each restricted like the other parts. NULL or
 * "" as tmpl is DW_DEFAULT_DUMP_NAME_TEMPLATE_CONTAINER when there is a
 * container id, else DW_DEFAULT_DUMP_NAME_TEMPLATE. */
void dump_file_name_ids(const char *tmpl, const char *process_name, pid_t pid, const char *rule_name,
                        const char *container, const char *pod, int64_t unix_ns, char *out, size_t outlen);

/* A name made by the functions above for a dump of type: a gcdump's
 * ".core" becomes ".gcdump" (".gcdump" is added when it has neither).
 * Other types keep the name. */
void dump_file_name_for_type(char *name, size_t len, enum dump_type type);

/* Whether name can be a dump's file name in the store, as the functions
 * above make them: not empty, at most NAME_MAX bytes, no '/', not starting
 * with '.' (hidden, and the store's temporary names). Pure. */
int dump_file_name_ok(const char *name);

/* Opens the store directory dir without following links and checks it as
 * every dump does: ours (or, under sudo, the invoking user's), writable by
 * no one else, below directories only root can change. dir is absolute and
 * has no ".." component (the front resolved --dump-dir to its real path
 * once; a rule file's dump.dir is checked so): with no link on the way, its
 * directories above are those of its normalized form. The descriptor, or
 * -errno with a sentence in err (-EINVAL: dir is relative or has ".."). */
int dump_open_store(const char *dir, char *err, size_t errlen);

/* Whether a process with uid/gid (and supplementary groups of pid) may create
 * files in dir. 0 when it may, -EACCES with a sentence saying how to fix it. */
int dump_dir_writable_by(const char *dir, pid_t pid, uid_t uid, gid_t gid, char *err, size_t errlen);

/* The createdump the exec path runs for a target of runtime_version: the
 * configured one when not NULL, else the one of the host's runtime of exactly
 * that version (shared/Microsoft.NETCore.App/VERSION/createdump below
 * /usr/share/dotnet, /usr/lib/dotnet, /usr/lib64/dotnet, /usr/local/share/dotnet,
 * /opt/dotnet, $DOTNET_ROOT and the directory of the dotnet on our PATH).
 * It must not lie below /proc, and, when we are root, it and every directory
 * above it must be root's and writable by no one else (a root-owned sticky
 * directory excepted); otherwise, by root or us. 0 with the path, or -errno
 * with a sentence that says what to install or pass. */
int dump_find_createdump(const char *runtime_version, const char *configured, char *out, size_t outlen, char *err,
                         size_t errlen);

/* Whether v is a runtime version as a runtime reports it and a directory of
 * the shared framework is named: "10.0.12", "9.0.0-rc.2.24473.5"; digits,
 * letters, '.', '-' and '+' only, starting with a digit, no "..". Pure. */
int dump_version_ok(const char *v);

#endif
