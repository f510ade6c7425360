/* Defaults, named once and side by side: of the command line (the one-process
 * watch, the guard, record, the views, check) and of rule files. The
 * commands (src/9-front/cmd_*.c) start from these and print them in --help;
 * rulefile.c fills a rule's missing keys from them. Each says why it is what
 * it is; where the command line and rule files differ (the cooldown), it is
 * because a person at a terminal and an unattended service want different
 * things. The man pages state the values for readers (test_manpages.sh holds
 * dumpwatch(8)'s against --help's). */
#ifndef DUMPWATCH_DEFAULTS_H
#define DUMPWATCH_DEFAULTS_H

/* Values of this layer's kind only (numbers, durations, paths, names): a
 * default that is another layer's value (a dump type, a way of dumping) is
 * defined beside its type, in that layer's header. */

#define DW_NS_PER_SEC 1000000000LL

/* The version --version prints and every dump context carries. */
#define DW_VERSION "0.1.0"

/* --cooldown, the one-process watch: an operator watching one incident wants
 * the next dump soon (two dumps seconds apart show what grows), and stops the
 * watch by hand or with --max-dumps; 10 s lets the target, frozen while
 * createdump runs, thaw and its metrics move before it is frozen again. */
#define DW_DEFAULT_WATCH_COOLDOWN_NS (10 * DW_NS_PER_SEC)

/* limits.cooldown of a rule file: an unattended guard must not fill the disk
 * with dumps of one episode. A heap that stays over its threshold keeps the
 * rule firing, each withheap dump is about the size of the heap, and no one
 * is there to stop it; ten minutes makes one episode one dump, not dozens. */
#define DW_DEFAULT_RULE_COOLDOWN_NS (10 * 60 * DW_NS_PER_SEC)

/* --max-dumps and limits.max-dumps: one dump answers most questions, and each
 * freezes the target for seconds to minutes; more must be asked for. */
#define DW_DEFAULT_MAX_DUMPS 1

/* limits.window: 0 counts max-dumps over the life of the process, so a
 * process dumped once is dumped again only after it restarts (a new pid). */
#define DW_DEFAULT_RULE_WINDOW_NS 0

/* --dump-dir of the one-process watch: it is run by hand, so dumps land where
 * the operator stands. The guard is given its directory (the service's is
 * DW_SERVICE_DUMP_DIR). */
#define DW_DEFAULT_DUMP_DIR "."

/* The installed service's --dump-dir, as scripts/dumpwatch.service.in has it
 * (keep the two the same): what `check` allows a rule's dump.dir to lie in
 * when it is given no --dump-dir. */
#define DW_SERVICE_DUMP_DIR "/var/lib/dumpwatch/dumps"

/* dump.name, and the file names of the one-process watch: sorted by name, a
 * process's dumps stand together; {time} keeps names unique. */
#define DW_DEFAULT_DUMP_NAME_TEMPLATE "{name}-{pid}-{rule}-{time}.core"
/* The same for a process in a container: the container's short id follows
 * the name, since pids repeat across containers and hosts. */
#define DW_DEFAULT_DUMP_NAME_TEMPLATE_CONTAINER "{name}-{container}-{pid}-{rule}-{time}.core"

/* --history: the metric history a dump's context shows. Five minutes holds
 * the minute before an incident with room for a sustain window of a few
 * minutes, and costs at most 19 KB per metric at 250 ms (history.h). */
#define DW_DEFAULT_HISTORY_NS (5 * 60 * DW_NS_PER_SEC)
/* Points per metric: the history's slot is its window over this (250 ms for
 * five minutes), and never finer than DW_HISTORY_SLOT_MIN_NS: the runtime
 * flushes its event buffers every 100 ms. */
#define DW_HISTORY_POINTS 1200
#define DW_HISTORY_SLOT_MIN_NS (100 * 1000000LL)
/* The longest --history: an hour is 3 s per point. */
#define DW_HISTORY_MAX_NS (60 * 60 * DW_NS_PER_SEC)

/* --proc-interval: how often rss, private-memory, swap, threads and fds are
 * read from /proc for a process whose rules use them. 100 ms matches the
 * runtime's event flush; 10 ms is the finest, where a poll costs about
 * 0.1 % of a core per process (docs/benchmarks.md). */
#define DW_DEFAULT_PROC_INTERVAL_NS (100 * 1000000LL)
#define DW_PROC_INTERVAL_MIN_NS (10 * 1000000LL)
#define DW_PROC_INTERVAL_MAX_NS (60 * DW_NS_PER_SEC)

/* --metrics-interval: how often --metrics-file is rewritten. node_exporter
 * reads it at each of its scrapes, commonly every 15 s. */
#define DW_DEFAULT_METRICS_INTERVAL_NS (15 * DW_NS_PER_SEC)
#define DW_METRICS_INTERVAL_MIN_NS (1 * DW_NS_PER_SEC)
#define DW_METRICS_INTERVAL_MAX_NS (3600 * DW_NS_PER_SEC)

/* --counter-interval: EventCounters report in whole seconds and 1 s is the
 * finest, so a "for 2s" condition sees at least two samples; in the target
 * it costs one small event per counter per second. */
#define DW_DEFAULT_COUNTER_INTERVAL_NS (1 * DW_NS_PER_SEC)
/* Shorter intervals are sent as milliseconds with an exponent (session.c). */
#define DW_COUNTER_INTERVAL_MIN_NS (50 * 1000000LL)

/* --dump-timeout: a heap dump of tens of GB takes minutes, and the target is
 * frozen meanwhile; past ten minutes createdump is taken to be stuck. */
#define DW_DEFAULT_DUMP_TIMEOUT_NS (10 * 60 * DW_NS_PER_SEC)

/* --stop-timeout: on SIGTERM, how long a dump in progress may take. systemd
 * sends SIGKILL after TimeoutStopSec=20 (dumpwatch.service.in); 5 s lets a
 * small dump finish and leaves the rest for removing a partial one and
 * writing the state and journal. */
#define DW_DEFAULT_STOP_TIMEOUT_NS (5 * DW_NS_PER_SEC)

/* --min-free: the share of a file system ext4 keeps for root (mke2fs -m 5).
 * dumpwatch runs as root and could eat into it; leaving it keeps room for the
 * services that log to the same file system. No size or count bound on the
 * store by default (--store-max-size, --store-max-count). */
#define DW_DEFAULT_MIN_FREE_PCT 5.0

/* record --duration: several EventCounters samples (one a second) and, in a
 * busy process, several GCs, in a file small enough to attach to a report. */
#define DW_DEFAULT_RECORD_DURATION_NS (5 * DW_NS_PER_SEC)

/* counters --interval: dotnet-counters' refresh, and the finest interval
 * EventCounters have. */
#define DW_DEFAULT_VIEW_INTERVAL_NS (1 * DW_NS_PER_SEC)

/* --hook-timeout: long enough for a hook that pages someone or copies a
 * context file; a hook that ships a whole dump should be given more. */
#define DW_DEFAULT_HOOK_TIMEOUT_NS (30 * DW_NS_PER_SEC)

#endif
