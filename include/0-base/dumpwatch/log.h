/* Leveled logging: one line per event, to stderr (with a priority prefix that
 * journald understands) or to syslog. Only the caller that decides what to do
 * with an error logs it. */
#ifndef DUMPWATCH_LOG_H
#define DUMPWATCH_LOG_H

enum log_level { LOG_LVL_ERROR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

/* Sets the most verbose level printed (default LOG_LVL_INFO). */
void log_set_level(enum log_level level);
/* Prefix lines with "<N>" for journald (sd-daemon convention) instead of "dumpwatch: ". */
void log_set_journald(int on);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
