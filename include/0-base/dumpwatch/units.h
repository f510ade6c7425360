/* Quantities with units, as operators write them in rules: sizes ("500MB",
 * "1.5GiB", "4096B"), durations ("200ms", "10s", "5m", "1h"), rates ("50MB/s",
 * "10/min") and percentages ("90%"). Decimal prefixes are powers of 1000
 * (MB = 1,000,000 bytes, as the runtime's own counters use), binary prefixes
 * powers of 1024 (MiB). Pure functions.
 *
 * Syntax: a decimal number ("200", "1.5", ".5"; no exponent, no
 * thousands separator), optional spaces, the unit; spaces are allowed around
 * the '/' of a rate ("50 MB / s"). Units are matched without regard to case:
 * dumpwatch never measures bits, so "mb" and "Mb" are megabytes. Size units:
 * B (or byte, bytes), KB, MB, GB, TB, KiB, MiB, GiB, TiB; a lone K, M, G or T
 * is refused as ambiguous. Duration units: ms, s (sec), m (min), h (hr), d.
 * Rate denominators: /s, /min (/m), /h, /d. A bare 0 needs no unit. Sizes,
 * durations, rates, percentages and counts cannot be negative; only UNIT_NONE
 * takes a sign. Percentages are 0..100. A value that does not fit in 2^63 of
 * its base unit is refused. */
#ifndef DUMPWATCH_UNITS_H
#define DUMPWATCH_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* The unit a metric is measured in; values are held in the base unit named. */
enum unit_kind {
	UNIT_NONE = 0,      /* a plain number (counter in its own display units) */
	UNIT_BYTES,         /* bytes */
	UNIT_BYTES_PER_SEC, /* bytes per second */
	UNIT_MS,            /* milliseconds (durations measured by the runtime) */
	UNIT_PERCENT,       /* 0..100 */
	UNIT_COUNT,         /* a count */
	UNIT_PER_SEC,       /* events per second ("10/min" = 0.1667) */
};

/* Parses a duration into nanoseconds. "0" and units ms, s, m (or min), h, d.
 * Returns 0 or -EINVAL with a sentence in err. */
int units_parse_duration(const char *text, int64_t *out_ns, char *err, size_t errlen);

/* Parses text as a quantity of the given kind into its base unit. A unit is
 * required for UNIT_BYTES, UNIT_BYTES_PER_SEC, UNIT_MS, UNIT_PER_SEC and
 * UNIT_PERCENT; UNIT_NONE and UNIT_COUNT take a plain number. Returns 0 or
 * -EINVAL with a sentence in err that says which units are accepted. */
int units_parse_value(const char *text, enum unit_kind kind, double *out, char *err, size_t errlen);

/* Formats a base-unit value for humans ("512.0MB", "12ms", "1.5s", "3.5MB/s",
 * "91%", "10/min"); sizes with decimal prefixes and one decimal, the others
 * without trailing zeros. units_parse_value reads a finite value's text back.
 * Returns buf. */
const char *units_format(double value, enum unit_kind kind, char *buf, size_t buflen);

/* Formats a duration (ns, >= 0) in the largest of d, h, m, s and ms that
 * holds it exactly ("10m", "5s", "250ms", "0"), else as units_format does
 * with UNIT_MS; units_parse_duration reads it back. For help text showing a
 * default as an operator would write it. Returns buf. */
const char *units_format_duration(int64_t ns, char *buf, size_t buflen);

/* "bytes", "bytes/s", "ms" ... for JSON and help output. */
const char *units_name(enum unit_kind kind);

#endif
