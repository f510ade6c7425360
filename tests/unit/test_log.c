/* Unit tests of the log: one line per call whatever the message holds, with
 * control characters and invalid UTF-8 escaped, under both prefixes. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/log.h"

/* stderr goes to a temporary file between capture_begin and capture_end,
 * which returns what was written. */
static char out[65536];

static void capture_begin(int *saved, FILE **f)
{
	fflush(stderr);
	*f = tmpfile();
	*saved = dup(STDERR_FILENO);
	dup2(fileno(*f), STDERR_FILENO);
}

static const char *capture_end(int saved, FILE *f)
{
	size_t n;

	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	return out;
}

static int count(const char *s, char c)
{
	int n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

int main(void)
{
	const char *hostile = "MemSpike\n<0>dumpwatch: rule X fired\x1b[31m\x1b]0;pwned\x07\xC2\x9B\xC3\x28\xFF\\";
	int saved;
	FILE *f;

	capture_begin(&saved, &f);
	log_set_journald(1);
	log_info("attached to pid %d (%s)", 42, hostile);
	log_error("%s", "two\nlines\r");
	const char *s = capture_end(saved, f);
	CHECK_STR(s,
	          "<6>attached to pid 42 (MemSpike\\n<0>dumpwatch: rule X fired\\x1b[31m\\x1b]0;pwned\\x07\\u009b\\xc3("
	          "\\xff\\\\)\n<3>two\\nlines\\r\n");

	capture_begin(&saved, &f);
	log_set_journald(0);
	log_warn("%s", hostile);
	s = capture_end(saved, f);
	CHECK(strncmp(s, "dumpwatch: warning: MemSpike\\n<0>", 33) == 0);
	CHECK(count(s, '\n') == 1 && count(s, '\x1b') == 0);

	/* A message longer than the line is cut on a character, still one line. */
	char *big = malloc(5000);
	memset(big, 'a', 5000);
	for (int i = 2040; i < 2060; i += 2) {
		big[i] = '\xC3';
		big[i + 1] = '\xA9';
	}
	big[4999] = '\0';
	capture_begin(&saved, &f);
	log_info("%s", big);
	s = capture_end(saved, f);
	CHECK(count(s, '\n') == 1 && strstr(s, "\\x") == NULL);
	free(big);

	log_set_level(LOG_LVL_WARN);
	capture_begin(&saved, &f);
	log_info("not shown");
	s = capture_end(saved, f);
	CHECK_STR(s, "");
	return check_done();
}
