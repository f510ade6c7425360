/* A minimal test harness for the unit tests: CHECK records a failure with its
 * location and goes on; check_done prints "N passed, N failed" and gives the
 * exit status. */
#ifndef DUMPWATCH_TEST_CHECK_H
#define DUMPWATCH_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                                                    \
	do {                                                                                                           \
		if (cond) {                                                                                            \
			check_passed++;                                                                                \
		} else {                                                                                               \
			check_failed++;                                                                                \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                       \
		}                                                                                                      \
	} while (0)

#define CHECK_MSG(cond, ...)                                                                                           \
	do {                                                                                                           \
		if (cond) {                                                                                            \
			check_passed++;                                                                                \
		} else {                                                                                               \
			check_failed++;                                                                                \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                       \
			fprintf(stderr, __VA_ARGS__);                                                                  \
			fputc('\n', stderr);                                                                           \
		}                                                                                                      \
	} while (0)

#define CHECK_STR(a, b) CHECK_MSG(strcmp((a), (b)) == 0, "\"%s\" != \"%s\"", (a), (b))

static inline int check_done(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed == 0 && check_passed > 0 ? 0 : 1;
}

#endif
