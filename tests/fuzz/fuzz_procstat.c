/* Fuzz target: the /proc/PID/status parser (procstat_parse_status), which
 * reads text the kernel writes but whose one free field, the process's name,
 * the process chooses. Checked: only the fields it knows are reported, the
 * sizes are whole kB, and a second parse of the same bytes agrees. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/procstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const unsigned known = PROC_HAVE_RSS | PROC_HAVE_ANON | PROC_HAVE_SWAP | PROC_HAVE_THREADS;
	/* An exact copy, so that a read past the end is caught. */
	char *text = malloc(size ? size : 1);
	struct proc_sample a, b;

	if (!text)
		return 0;
	memcpy(text, data, size);
	memset(&a, 0, sizeof(a));
	memset(&b, 0xff, sizeof(b));
	b.have = 0;
	unsigned have = procstat_parse_status(text, size, &a);
	if ((have & ~known) || a.have != have)
		abort();
	if (((have & PROC_HAVE_RSS) && a.rss % 1024) || ((have & PROC_HAVE_ANON) && a.anon % 1024) ||
	    ((have & PROC_HAVE_SWAP) && a.swap % 1024))
		abort();
	if (procstat_parse_status(text, size, &b) != have || ((have & PROC_HAVE_RSS) && a.rss != b.rss) ||
	    ((have & PROC_HAVE_ANON) && a.anon != b.anon) || ((have & PROC_HAVE_SWAP) && a.swap != b.swap) ||
	    ((have & PROC_HAVE_THREADS) && a.threads != b.threads))
		abort();
	free(text);
	return 0;
}
