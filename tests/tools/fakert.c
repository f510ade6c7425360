/* dw_fakert: a fake .NET runtime for the hostile-input tests. It listens on
 * a diagnostics socket under its own pid, as a runtime does
 * (${TMPDIR:-/tmp}/dotnet-diagnostic-{pid}-{starttime}-socket), answers
 * ProcessInfo (as "FakeRuntime", runtime 10.0.0) and CollectTracing correctly,
 * and then misbehaves as --mode says:
 *
 *   garbage   the start of a recorded trace, then random bytes
 *   stall     a recorded trace up to the middle of a block, then nothing
 *             (the connection stays open)
 *   truncate  the same, then it closes the connection
 *   huge      the trace header, then a block claiming 2 GB
 *   flood     the trace's blocks over and over, as fast as the reader takes them
 *   badreply  a reply to ProcessInfo with a broken header and absurd size
 *   replay    the recorded trace without its end tag, then nothing (the
 *             connection stays open, between blocks, until StopTracing
 *             ends it): a quiet runtime
 *   idle      nothing at all after the reply to CollectTracing: a runtime
 *             with nothing to say (the connection stays open until
 *             StopTracing); needs no trace
 *
 * usage: dw_fakert --mode MODE --trace FILE.nettrace (not for idle)
 *                  [--entry S] [--cmdline S] [--runtime-version S]
 *                  [--delay-ms N] [--map FILE]
 * --map keeps FILE mapped (as a runtime maps its assemblies) for readers of
 * /proc/PID/maps: an assembly whose metadata lies. The options choose what ProcessInfo reports (entry assembly, command
 * line, runtime version; "" is an empty string). S is taken as UTF-8 and sent as UTF-16; a byte that is not valid UTF-8
 * is sent as a lone surrogate (U+DC80-U+DCFF), which no valid string holds. --delay-ms makes a slow peer: every request
 * (ProcessInfo, CollectTracing, StopTracing, a dump, any other) is answered only N ms (0 to 600000) after it was read;
 * connections are served each on its own thread, so the delays of several run side by side, as in a runtime busy
 * elsewhere. Prints "ready pid=N" once listening. StopTracing is answered; a dump request is refused. Runs until
 * killed. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/nettrace.h"
#include "dumpwatch/text.h"

static const char *mode;
/* idle: the open streams, ended on StopTracing as a runtime ends its own. */
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static int idle_fds[64];
static size_t n_idle;
static uint8_t *trace;
static size_t trace_len;
static size_t cut_mid;       /* a length that ends inside a block */
static size_t blocks_start;  /* offset of the first block's begin tag */
static size_t first_size_at; /* offset of the first block's size field */
static size_t loop_end;      /* blocks [blocks_start, loop_end) repeat with the same 4-byte alignment */
static const char *info_entry = "FakeRuntime", *info_cmdline = "FakeRuntime --hostile", *info_runtime = "10.0.0";
static long delay_ms; /* --delay-ms: before every answer */

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = read(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A reply: header (set 0xFF, id) and payload. */
static int reply(int fd, uint8_t id, const void *payload, size_t n)
{
	uint8_t hdr[20] = "DOTNET_IPC_V1";
	uint16_t size = (uint16_t)(20 + n);
	memcpy(hdr + 14, &size, 2);
	hdr[16] = 0xFF;
	hdr[17] = id;
	return write_all(fd, hdr, 20) || write_all(fd, payload, n) ? -1 : 0;
}

static size_t put_str(uint8_t *out, const char *s)
{
	uint32_t n = (uint32_t)strlen(s) + 1;
	size_t k = 4;
	memcpy(out, &n, 4);
	for (uint32_t i = 0; i < n; i++) {
		out[k++] = (uint8_t)s[i];
		out[k++] = 0;
	}
	return k;
}

/* A string as the protocol sends it, from UTF-8 (see the head comment). */
static size_t put_str_utf8(uint8_t *out, const char *s)
{
	const unsigned char *b = (const unsigned char *)s;
	size_t len = strlen(s), k = 4, i = 0;
	uint32_t units = 0;

	while (i < len) {
		uint32_t cp, u[2];
		size_t n = text_utf8_decode(b + i, len - i, &cp), nu = 1;
		if (n == 0) {
			cp = 0xDC00u + b[i];
			n = 1;
		}
		if (cp >= 0x10000) {
			u[0] = 0xD800u + ((cp - 0x10000) >> 10);
			u[1] = 0xDC00u + ((cp - 0x10000) & 0x3FF);
			nu = 2;
		} else {
			u[0] = cp;
		}
		for (size_t j = 0; j < nu; j++) {
			out[k++] = (uint8_t)(u[j] & 0xFF);
			out[k++] = (uint8_t)(u[j] >> 8);
			units++;
		}
		i += n;
	}
	out[k++] = 0;
	out[k++] = 0;
	units++;
	memcpy(out, &units, 4);
	return k;
}

static void process_info2(int fd)
{
	uint8_t p[8192];
	uint64_t pid = (uint64_t)getpid();
	size_t k = 0;

	memcpy(p, &pid, 8);
	k = 8;
	memset(p + k, 0x42, 16); /* runtime cookie */
	k += 16;
	k += put_str_utf8(p + k, info_cmdline);
	k += put_str(p + k, "Linux");
	k += put_str(p + k, "x64");
	k += put_str_utf8(p + k, info_entry);
	k += put_str_utf8(p + k, info_runtime);
	reply(fd, 0x00, p, k);
}

static void stream(int fd)
{
	if (strcmp(mode, "garbage") == 0) {
		uint8_t junk[65536];
		unsigned seed = 12345;
		write_all(fd, trace, 100);
		for (;;) {
			for (size_t i = 0; i < sizeof(junk); i++)
				junk[i] = (uint8_t)(rand_r(&seed) >> 7);
			if (write_all(fd, junk, sizeof(junk)) < 0)
				return;
			usleep(100000);
		}
	} else if (strcmp(mode, "stall") == 0 || strcmp(mode, "truncate") == 0) {
		write_all(fd, trace, cut_mid);
		if (strcmp(mode, "stall") == 0)
			for (;;)
				pause();
	} else if (strcmp(mode, "huge") == 0) {
		uint8_t buf[64];
		uint32_t huge = 0x7FFFFFF0u;
		write_all(fd, trace, first_size_at);
		write_all(fd, &huge, 4);
		memset(buf, 0, sizeof(buf));
		for (int i = 0; i < 16; i++)
			if (write_all(fd, buf, sizeof(buf)) < 0)
				return;
		for (;;)
			pause();
	} else if (strcmp(mode, "idle") == 0 || strcmp(mode, "replay") == 0) {
		uint8_t b[256];
		size_t slot = SIZE_MAX;
		pthread_mutex_lock(&idle_lock);
		if (n_idle < sizeof(idle_fds) / sizeof(idle_fds[0])) {
			slot = n_idle;
			idle_fds[n_idle++] = fd;
		}
		pthread_mutex_unlock(&idle_lock);
		/* The last byte of a recording is the stream's end tag. */
		if (strcmp(mode, "replay") == 0)
			write_all(fd, trace, trace_len - 1);
		/* Until the reader goes away or stops the session. */
		while (read(fd, b, sizeof(b)) > 0)
			;
		pthread_mutex_lock(&idle_lock);
		if (slot != SIZE_MAX)
			idle_fds[slot] = -1;
		pthread_mutex_unlock(&idle_lock);
	} else if (strcmp(mode, "flood") == 0) {
		write_all(fd, trace, blocks_start);
		/* Whole blocks, over and over: a length that is a multiple of
		 * 4 keeps every block's padding right. */
		while (write_all(fd, trace + blocks_start, loop_end - blocks_start) == 0)
			;
	}
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t hdr[20], body[65536];
	uint16_t size;

	if (read_all(fd, hdr, 20) < 0)
		goto out;
	memcpy(&size, hdr + 14, 2);
	if (size < 20 || read_all(fd, body, size - 20u) < 0)
		goto out;
	if (delay_ms > 0) {
		struct timespec d = {.tv_sec = delay_ms / 1000, .tv_nsec = (delay_ms % 1000) * 1000000L};
		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
	}
	uint16_t cmd = (uint16_t)(hdr[16] << 8 | hdr[17]);
	uint32_t unknown = 0x80131385u;
	if (cmd == 0x0400 || cmd == 0x0404 || cmd == 0x0408) {
		if (strcmp(mode, "badreply") == 0) {
			uint8_t bad[20] = "DOTNET_IPC_V0";
			bad[14] = 0xFF;
			bad[15] = 0xFF;
			write_all(fd, bad, 20);
			write_all(fd, body, 200);
		} else if (cmd == 0x0404) {
			process_info2(fd);
		} else {
			reply(fd, 0xFF, &unknown, 4);
		}
	} else if (cmd >= 0x0202 && cmd <= 0x0206) {
		uint64_t session = 0x5e55;
		if (reply(fd, 0x00, &session, 8) == 0)
			stream(fd);
	} else if (cmd == 0x0201) {
		uint64_t session = 0x5e55;
		reply(fd, 0x00, &session, 8);
		pthread_mutex_lock(&idle_lock);
		for (size_t i = 0; i < n_idle; i++)
			if (idle_fds[i] >= 0)
				shutdown(idle_fds[i], SHUT_RDWR);
		pthread_mutex_unlock(&idle_lock);
	} else {
		uint32_t hr = 0x80004005u;
		reply(fd, 0xFF, &hr, 4);
	}
out:
	close(fd);
	return NULL;
}

static int load_trace(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 0, n;

	if (!f)
		return -1;
	do {
		if (trace_len == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			trace = realloc(trace, cap);
			if (!trace)
				return -1;
		}
		n = fread(trace + trace_len, 1, cap - trace_len, f);
		trace_len += n;
	} while (n > 0);
	fclose(f);
	/* The first block: its type name ends in "Block", followed by the end
	 * tag of the type and the block's size; the object begins 15 bytes
	 * before the name (begin tags, NullReference, version, min version,
	 * name length). */
	for (size_t i = 0; i + 6 < trace_len; i++) {
		if (memcmp(trace + i, "Block", 5) == 0 && trace[i + 5] == 6) {
			first_size_at = i + 6;
			size_t name_start = i;
			while (name_start > 0 && trace[name_start - 1] >= 'A' && trace[name_start - 1] <= 'z')
				name_start--;
			blocks_start = name_start - 15;
			break;
		}
	}
	/* Half way, then on until the parser is inside an object. */
	nettrace_parser *p = nettrace_new(NULL, NULL);
	if (!p || !first_size_at)
		return -1;
	nettrace_feed(p, trace, blocks_start);
	for (size_t i = blocks_start; i + 1 < trace_len; i++) {
		nettrace_feed(p, trace + i, 1);
		int mid = nettrace_mid_object(p);
		if (!mid && (i + 1 - blocks_start) % 4 == 0)
			loop_end = i + 1;
		if (mid && !cut_mid && i >= trace_len / 2)
			cut_mid = i + 1;
	}
	nettrace_free(p);
	return loop_end && cut_mid ? 0 : -1;
}

/* --map: keeps FILE mapped, as a runtime maps the assemblies it loads,
 * for the readers of /proc/PID/maps. */
static int map_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *trace_path = NULL, *map_path = NULL;
	int bad_delay = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--mode") == 0)
			mode = argv[i + 1];
		else if (strcmp(argv[i], "--trace") == 0)
			trace_path = argv[i + 1];
		else if (strcmp(argv[i], "--entry") == 0)
			info_entry = argv[i + 1];
		else if (strcmp(argv[i], "--cmdline") == 0)
			info_cmdline = argv[i + 1];
		else if (strcmp(argv[i], "--runtime-version") == 0)
			info_runtime = argv[i + 1];
		else if (strcmp(argv[i], "--map") == 0)
			map_path = argv[i + 1];
		else if (strcmp(argv[i], "--delay-ms") == 0) {
			char *end;
			errno = 0;
			delay_ms = strtol(argv[i + 1], &end, 10);
			bad_delay = errno || end == argv[i + 1] || *end || delay_ms < 0 || delay_ms > 600000;
		}
	}
	int idle = mode && strcmp(mode, "idle") == 0;
	if (!mode || (!idle && (!trace_path || load_trace(trace_path) < 0)) || strlen(info_entry) > 256 ||
	    strlen(info_cmdline) > 256 || strlen(info_runtime) > 256 || bad_delay ||
	    (map_path && map_file(map_path) < 0)) {
		fprintf(stderr,
		        "usage: dw_fakert --mode MODE --trace FILE.nettrace (a readable trace)\n"
		        "                 [--entry S] [--cmdline S] [--runtime-version S] (at most 256 bytes each)\n"
		        "                 [--delay-ms N] (0 to 600000) [--map FILE] (a readable file)\n");
		return 1;
	}

	char stat_path[64], buf[1024], path[256];
	unsigned long long start = 0;
	snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)getpid());
	int sfd = open(stat_path, O_RDONLY);
	ssize_t n = sfd >= 0 ? read(sfd, buf, sizeof(buf) - 1) : -1;
	if (sfd >= 0)
		close(sfd);
	if (n > 0) {
		buf[n] = '\0';
		char *q = strrchr(buf, ')');
		/* Field 22, starttime: after the 20th space following the last ")". */
		for (int field = 3; q && field <= 22; field++)
			q = strchr(q + 1, ' ');
		if (q)
			start = strtoull(q + 1, NULL, 10);
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/dotnet-diagnostic-%d-%llu-socket", tmp && *tmp ? tmp : "/tmp", (int)getpid(),
	         start);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: too long for a socket address\n", path);
		return 1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(path);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0) {
		perror(path);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	printf("ready pid=%d mode=%s cut=%zu blocks=%zu-%zu\n", (int)getpid(), mode, cut_mid, blocks_start, loop_end);
	fflush(stdout);
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		pthread_t th;
		if (pthread_create(&th, NULL, serve, (void *)(intptr_t)c) == 0)
			pthread_detach(th);
		else
			close(c);
	}
}
