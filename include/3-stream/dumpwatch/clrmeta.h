/* The static fields an assembly declares, read from its ECMA-335 metadata,
 * so that a heap snapshot's static roots can be named with the class that
 * declares them. The runtime's GCBulkRootStaticVar gives a static's field
 * name and the type of the object it holds, not its class; the class is in
 * the metadata of the assemblies the process has mapped.
 *
 * Pure: bytes in, callbacks out; every offset, index and length read from
 * the file is checked against the bytes given (the file is the target's and
 * may be hostile). Follows ECMA-335 6th edition, partition II: 25 (the PE
 * file and its CLI header), 24.2 (the metadata root, its streams and heaps),
 * 22 (the tables) and 23.2 (signatures). */
#ifndef DUMPWATCH_CLRMETA_H
#define DUMPWATCH_CLRMETA_H

#include <stddef.h>
#include <stdint.h>

/* The longest class or type name given to a callback, without its NUL;
 * longer ones are cut. */
#define CLRMETA_NAME_MAX 511

/* The file offset of the CLI header, from the first bytes of a PE file
 * (its DOS and PE headers and its section table; the first 4 KiB hold them
 * in any file a compiler writes). 0 with *ret_off and *ret_size set,
 * -ENOEXEC when it is not a PE file, -ENOENT when it has no CLI header (a
 * native library), -EBADMSG when the headers contradict themselves. */
int clrmeta_cli_header(const uint8_t *head, size_t len, uint64_t *ret_off, uint32_t *ret_size);

/* The file offset and size of the metadata, from the same first bytes and
 * the CLI header's (at least 16). 0, -EBADMSG. */
int clrmeta_metadata_at(const uint8_t *head, size_t len, const uint8_t *cli, size_t cli_len, uint64_t *ret_off,
                        uint32_t *ret_size);

/* One static field: its name, the class that declares it ("Namespace.Outer+Inner",
 * generic arity dropped: "Ns.Cache`1" is "Ns.Cache"), and the type it is
 * declared with as a key ("System.Collections.Generic.List" for a
 * List<T> of any T, "System.Byte[]", "System.String"; "" when the
 * signature names no class, such as a type parameter). Strings are the
 * callback's for the call only. A non-zero return ends the walk with it. */
typedef int (*clrmeta_static_fn)(void *ctx, const char *field, const char *owner, const char *type_key);

/* Calls fn for each static field that is not a constant, in table order.
 * md is the metadata (from its root signature "BSJB"). 0, what fn
 * returned, or -EBADMSG with a sentence in err. */
int clrmeta_each_static(const uint8_t *md, size_t len, clrmeta_static_fn fn, void *ctx, char *err, size_t errlen);

/* A type name as the heap summary shows it ("System.Collections.Generic.List<System.Byte[]>[]"),
 * reduced to the key clrmeta_each_static gives for the field that would
 * declare it: every "<...>" dropped ("System.Collections.Generic.List[]").
 * out has room for len bytes; cut when longer. */
void clrmeta_type_key(const char *display_name, char *out, size_t len);

#endif
