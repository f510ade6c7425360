/* `dumpwatch status`, the client side: asks the running guard on its status
 * socket (control.h) what it is doing and prints the answer, as text for
 * people or as JSON for programs. The transport (status_query) and the
 * rendering (status_print, pure: bytes in, text out) are separate so each can
 * be tested alone. The document's fields are described in docs/status.md. */
#ifndef DUMPWATCH_STATUS_H
#define DUMPWATCH_STATUS_H

#include <stddef.h>
#include <stdio.h>

#define STATUS_SOCKET_NAME "status.sock" /* in the guard's state directory */
#define STATUS_DEFAULT_SOCKET "/var/lib/dumpwatch/status.sock"
#define STATUS_TIMEOUT_MS 5000
#define STATUS_ANSWER_MAX (64u * 1024 * 1024)

/* Connects to the guard at socket_path and reads its answer until EOF, all
 * within timeout_ms (negative: no deadline, for a caller that waits on
 * something else, such as a test on a loaded machine). The server must run as
 * root or as our own user. On
 * success *ret_text is a malloc'd NUL-terminated copy (the caller frees it)
 * of *ret_len bytes. Returns 0 or, with a one-line sentence in err:
 * -ENOENT (no guard is running: the socket does not exist), -EACCES (not
 * allowed to connect), -ECONNREFUSED (a stale socket), -ETIMEDOUT, -ENODATA
 * (closed without an answer: the guard refused us), -EPERM (served by
 * another user), -EFBIG (more than STATUS_ANSWER_MAX bytes), other -errno. */
int status_query(const char *socket_path, int timeout_ms, char **ret_text, size_t *ret_len, char *err, size_t errlen);

/* Prints the status document text[0..len): json != 0 re-serialized pretty,
 * else as the text view. Strings that came from the guard (process names,
 * error texts, paths) are escaped so they cannot drive the terminal; missing
 * or unexpected fields are left out, never guessed. Returns 0, -EBADMSG with a
 * sentence in err when the text is not a JSON object, or -EIO when out
 * failed. */
int status_print(const char *text, size_t len, int json, FILE *out, char *err, size_t errlen);

/* status_query with STATUS_TIMEOUT_MS, then status_print. 0 or the -errno of
 * the step that failed, with a one-line sentence in err for the caller to log. */
int status_run(const char *socket_path, int json, FILE *out, char *err, size_t errlen);

#endif
