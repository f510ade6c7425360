/* Text helpers shared by the wire decoders and the rule parser: strict UTF-8
 * decoding, UTF-16LE (as the runtime sends strings) to UTF-8 with truncation
 * on a character boundary, and ASCII case folding. Pure. */
#ifndef DUMPWATCH_TEXT_H
#define DUMPWATCH_TEXT_H

#include <stddef.h>
#include <stdint.h>

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

/* Reads a NUL-terminated UTF-16LE string at p with avail bytes left. Returns
 * the bytes it occupies including the NUL, or 0 when no NUL lies within avail.
 * When out is not NULL (and outlen > 0) it receives the string as UTF-8, as
 * text_utf16_to_utf8 converts it. */
size_t text_utf16_read(const uint8_t *p, size_t avail, char *out, size_t outlen);

/* ASCII lower case of c; other bytes unchanged. */
char text_lower(char c);

/* Equal ignoring ASCII case. */
int text_eq_nocase(const char *a, const char *b);

#endif
