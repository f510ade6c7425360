/* Text helpers shared by the wire decoders, the rule parser and every place
 * that prints: strict UTF-8 decoding, UTF-16LE (as the runtime sends strings)
 * to UTF-8 with truncation on a character boundary, escaping text that came
 * from outside so it prints as one line with no control character, and ASCII
 * case folding. Pure. */
#ifndef DUMPWATCH_TEXT_H
#define DUMPWATCH_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decodes one strict UTF-8 sequence from s[0..len): returns its length (1-4)
 * and stores the code point, or returns 0 for an invalid, overlong, truncated
 * or surrogate sequence. */
size_t text_utf8_decode(const unsigned char *s, size_t len, uint32_t *ret_cp);

/* Appends the UTF-8 encoding of cp to out[*pos..) when it fits whole with room
 * left for a NUL (out has outlen bytes). Returns 0, or -1 when it does not fit. */
int text_utf8_put(char *out, size_t outlen, size_t *pos, uint32_t cp);

/* Converts up to units UTF-16LE code units at p into NUL-terminated UTF-8 in
 * out (outlen > 0), stopping at an embedded NUL. An unpaired surrogate becomes
 * U+FFFD; the result is cut on a character boundary when out is too small. */
void text_utf16_to_utf8(const uint8_t *p, size_t units, char *out, size_t outlen);

/* Finds the NUL-terminated UTF-16LE string at p with avail bytes left,
 * looking at no more than max_units code units before its NUL (a decoder's
 * bound on what a peer may send). Returns 0 with the units before the NUL in
 * *ret_units (the string occupies 2 * *ret_units + 2 bytes) and, when
 * ret_utf8_len is not NULL, the length of its UTF-8 form without the NUL (what
 * text_utf16_to_utf8 writes given one byte more); -E2BIG when more than
 * max_units units come before any NUL; -ENODATA when avail ends first. */
int text_utf16_scan(const uint8_t *p, size_t avail, size_t max_units, size_t *ret_units, size_t *ret_utf8_len);

/* Reads a NUL-terminated UTF-16LE string at p with avail bytes left. Returns
 * the bytes it occupies including the NUL, or 0 when no NUL lies within avail.
 * When out is not NULL (and outlen > 0) it receives the string as UTF-8, as
 * text_utf16_to_utf8 converts it. */
size_t text_utf16_read(const uint8_t *p, size_t avail, char *out, size_t outlen);

/* Whether cp must never reach a terminal or a log line as it is: the C0
 * controls, DEL, the C1 controls (U+0080-U+009F), the line and paragraph
 * separators (U+2028, U+2029) and the bidirectional formatting characters
 * (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which would end a
 * line, drive the terminal, or reorder what is shown. */
int text_is_control(uint32_t cp);

/* Escapes len bytes at s (NULs included) into one line of printable text:
 * a backslash is doubled; newline, carriage return and tab become "\n" "\r" "\t";
 * the other C0 controls and DEL "\xNN"; the other characters of
 * text_is_control "\uNNNN"; each byte that does not begin a valid UTF-8
 * sequence "\xNN" (lower-case hex). Valid printable UTF-8 is copied as it is,
 * so the result is valid UTF-8 and the bytes can be told back from it. Writes
 * a NUL-terminated result into out (outlen bytes), cut only between whole
 * characters or escapes when it does not fit. Returns the length of the whole
 * escaped text (a result >= outlen means it was cut), as snprintf does. */
size_t text_escape(const char *s, size_t len, char *out, size_t outlen);

/* text_escape of the NUL-terminated s ("" for NULL) into out; returns out,
 * for use as a printf argument. */
const char *text_escape_str(const char *s, char *out, size_t outlen);

/* Writes len bytes at s to out as text_escape escapes them, whatever their
 * length (cut, still escaped, only when out of memory). */
void text_put_escaped(FILE *out, const char *s, size_t len);

/* How text_put_markup writes what markup cannot hold as it is. */
struct text_markup {
	const char *apos;    /* the entity for ': "&apos;" (XML), "&#39;" (HTML) */
	const char *control; /* what stands for a text_is_control character, U+FFFE
	                      * or U+FFFF: "" leaves it out, or U+FFFD */
	size_t maxwidth;     /* past this width (a character from U+1100 on counts
	                      * two) the rest is cut and an ellipsis shown; SIZE_MAX:
	                      * never */
};

/* Writes len bytes at s to out as XML or HTML character data, fit also for
 * a quoted attribute value: & < > " ' as entities; tab, newline and carriage
 * return as a space; each byte that begins no valid UTF-8 sequence as U+FFFD;
 * controls and the noncharacters U+FFFE, U+FFFF as m->control. */
void text_put_markup(FILE *out, const char *s, size_t len, const struct text_markup *m);

/* The length of s[0..len) without a truncated UTF-8 sequence at its end (a
 * lead byte followed by fewer continuation bytes than it announces): where a
 * string cut on a byte count should end. */
size_t text_utf8_trim(const char *s, size_t len);

/* ASCII lower case of c; other bytes unchanged. */
char text_lower(char c);

/* Equal ignoring ASCII case. */
int text_eq_nocase(const char *a, const char *b);

/* Whether the len bytes at s end with suffix: exactly, or ignoring ASCII
 * case when nocase. A suffix as long as s counts. */
int text_ends_with(const char *s, size_t len, const char *suffix, int nocase);

/* Copies at most srclen bytes of src (up to a NUL), cut to max characters,
 * into dst for quoting in a message: bytes that are not printable ASCII
 * shown as '?', "..." when cut. */
void text_quote(char *dst, size_t dstlen, const char *src, size_t srclen, size_t max);

/* Optimal-string-alignment distance between a and b, ignoring ASCII case:
 * Levenshtein plus the transposition of two neighbours ("szie" is one edit
 * from "size"). Strings longer than TEXT_EDIT_MAX bytes are far from
 * everything (SIZE_MAX). For "did you mean" suggestions. */
#define TEXT_EDIT_MAX 128
size_t text_edit_distance(const char *a, const char *b);

#endif
