/* Uploads: every published dump and its context files shipped to S3-compatible
 * object storage, off the node, through a queue that survives a restart.
 *
 * A dump enqueued is written at once as one entry file in the queue
 * directory (STATE_DIR/uploads, root's, 0700) before anything is sent; each
 * file of it is uploaded by the upload helper (dumpwatch-upload), one at a
 * time, as a transient uid of its own, watched through a pidfd on the shared
 * loop, so that a slow or dead
 * server delays nothing else. A file uploaded is marked so in the entry
 * before the next starts: a retry, or a restart, sends only what has not
 * arrived. A failure is retried with backoff (5 s doubling to 10 min) for as
 * long as it takes, unless s3.c judges it permanent (no such bucket, refused
 * credentials: a retry cannot help), which ends the entry with the local
 * files kept; an answer s3.c refuses (past a bound, malformed) is retried. A
 * child that dies, or says an -errno this does not know as permanent, is
 * retried too. Each end is journaled: "upload" (keys, bytes, attempts),
 * "upload-failed" (the reason, and whether it is retried). When all of an
 * entry's files are up, the local copies are removed unless kept. */
#ifndef DUMPWATCH_UPLOAD_H
#define DUMPWATCH_UPLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/journal.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/s3.h"

#define UPLOAD_FILES_MAX 4    /* a dump and its context files */
#define UPLOAD_QUEUE_MAX 1000 /* entries waiting; more are refused (journaled) */
#define UPLOAD_RETRY_MIN_NS (5LL * 1000000000LL)
#define UPLOAD_RETRY_MAX_NS (600LL * 1000000000LL)

/* The daemon's --upload settings. */
struct upload_options {
	char endpoint[512];
	char region[64];
	char bucket[256];
	char prefix[512]; /* the daemon's key prefix ("" none); a rule's replaces it */
	enum s3_addressing addressing;
	uint64_t part_size;    /* 0: the default */
	int keep_local;        /* keep the local files after they are uploaded */
	const char *queue_dir; /* where the queue is kept; NULL: in memory only (lost at exit) */
	struct s3_credentials creds;
};

/* Parses "s3://BUCKET[/PREFIX]" into o->bucket and o->prefix (a prefix gets
 * a trailing '/'). 0, or -EINVAL with a sentence. Pure. */
int upload_parse_url(const char *url, struct upload_options *o, char *err, size_t errlen);

/* One published dump to ship. */
struct upload_item {
	const char *files[UPLOAD_FILES_MAX]; /* absolute paths; the dump first */
	size_t n_files;
	const char *prefix; /* the rule's key prefix; NULL: the daemon's */
	int keep_local;     /* -1: the daemon's setting */
	pid_t pid;
	const char *process;
	const char *rule;
};

struct uploader;

/* Called when an entry ends: ok 1 uploaded, 0 failed for good. */
typedef void (*upload_done_fn)(void *ctx, int ok);

/* An uploader on loop l, journaling to j, that takes over the entries o's
 * queue directory holds (created when missing; they are started at once).
 * NULL with a sentence in err (a queue directory that cannot be used, a bad
 * configuration). o is copied. */
struct uploader *uploader_new(struct loop *l, struct journal *j, const struct upload_options *o, upload_done_fn done,
                              void *done_ctx, char *err, size_t errlen);

/* Stops: an upload in progress is killed and stays queued (it starts again,
 * from its first file not yet uploaded, at the next start). Clears the
 * credentials. NULL is a no-op. */
void uploader_free(struct uploader *u);

/* Queues it (written to the queue directory before this returns). 0, or
 * -errno with a sentence in err (journaled here as "upload-failed"). */
int uploader_enqueue(struct uploader *u, const struct upload_item *it, char *err, size_t errlen);

/* Entries waiting or under way. */
size_t uploader_pending(const struct uploader *u);

#endif
