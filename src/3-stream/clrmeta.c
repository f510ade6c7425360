/* ECMA-335 metadata, read only as far as the static fields and the classes
 * that declare them (clrmeta.h). Section numbers are partition II of
 * ECMA-335, 6th edition.
 *
 * Design note: the tables are laid out one after another, each row of a
 * fixed size that depends on the row counts of other tables (an index is 2
 * bytes while what it points into is small, else 4). Reaching NestedClass
 * (0x29) therefore needs the column layout of every table before it; the
 * schema below gives it, and a table whose rows do not fit in the stream
 * stops the walk before any of its bytes is read. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/clrmeta.h"
#include "dumpwatch/le.h"

/* Tables (22.2 onwards) named where they are used. */
enum {
	T_MODULE = 0x00,
	T_TYPEREF = 0x01,
	T_TYPEDEF = 0x02,
	T_FIELDPTR = 0x03,
	T_FIELD = 0x04,
	T_METHODDEF = 0x06,
	T_PARAM = 0x08,
	T_INTERFACEIMPL = 0x09,
	T_MEMBERREF = 0x0a,
	T_DECLSECURITY = 0x0e,
	T_STANDALONESIG = 0x11,
	T_EVENT = 0x14,
	T_PROPERTY = 0x17,
	T_MODULEREF = 0x1a,
	T_TYPESPEC = 0x1b,
	T_ASSEMBLY = 0x20,
	T_ASSEMBLYREF = 0x23,
	T_FILE = 0x26,
	T_EXPORTEDTYPE = 0x27,
	T_MANIFESTRESOURCE = 0x28,
	T_NESTEDCLASS = 0x29,
	T_GENERICPARAM = 0x2a,
	T_METHODSPEC = 0x2b,
	T_GENERICPARAMCONSTRAINT = 0x2c,
	N_KNOWN = 0x2d,
	T_UNUSED = 0xff,
};

/* Column kinds: fixed sizes, heap indices, a simple index into one table
 * (C_IDX + table), or a coded index (C_CODED + enum coded). */
enum { C_END = 0, C_U16, C_U32, C_STR, C_GUID, C_BLOB, C_IDX = 0x100, C_CODED = 0x200 };

/* Coded indices (24.2.6): the tables a tag selects. */
enum coded {
	TYPEDEFORREF,
	HASCONSTANT,
	HASCUSTOMATTRIBUTE,
	HASFIELDMARSHAL,
	HASDECLSECURITY,
	MEMBERREFPARENT,
	HASSEMANTICS,
	METHODDEFORREF,
	MEMBERFORWARDED,
	IMPLEMENTATION,
	CUSTOMATTRIBUTETYPE,
	RESOLUTIONSCOPE,
	TYPEORMETHODDEF,
	N_CODED,
};

static const struct {
	int bits;
	uint8_t tables[22];
	int n;
} coded[N_CODED] = {
    [TYPEDEFORREF] = {2, {T_TYPEDEF, T_TYPEREF, T_TYPESPEC}, 3},
    [HASCONSTANT] = {2, {T_FIELD, T_PARAM, T_PROPERTY}, 3},
    [HASCUSTOMATTRIBUTE] = {5,
                            {T_METHODDEF,        T_FIELD,        T_TYPEREF,
                             T_TYPEDEF,          T_PARAM,        T_INTERFACEIMPL,
                             T_MEMBERREF,        T_MODULE,       T_DECLSECURITY,
                             T_PROPERTY,         T_EVENT,        T_STANDALONESIG,
                             T_MODULEREF,        T_TYPESPEC,     T_ASSEMBLY,
                             T_ASSEMBLYREF,      T_FILE,         T_EXPORTEDTYPE,
                             T_MANIFESTRESOURCE, T_GENERICPARAM, T_GENERICPARAMCONSTRAINT,
                             T_METHODSPEC},
                            22},
    [HASFIELDMARSHAL] = {1, {T_FIELD, T_PARAM}, 2},
    [HASDECLSECURITY] = {2, {T_TYPEDEF, T_METHODDEF, T_ASSEMBLY}, 3},
    [MEMBERREFPARENT] = {3, {T_TYPEDEF, T_TYPEREF, T_MODULEREF, T_METHODDEF, T_TYPESPEC}, 5},
    [HASSEMANTICS] = {1, {T_EVENT, T_PROPERTY}, 2},
    [METHODDEFORREF] = {1, {T_METHODDEF, T_MEMBERREF}, 2},
    [MEMBERFORWARDED] = {1, {T_FIELD, T_METHODDEF}, 2},
    [IMPLEMENTATION] = {2, {T_FILE, T_ASSEMBLYREF, T_EXPORTEDTYPE}, 3},
    [CUSTOMATTRIBUTETYPE] = {3, {T_UNUSED, T_UNUSED, T_METHODDEF, T_MEMBERREF, T_UNUSED}, 5},
    [RESOLUTIONSCOPE] = {2, {T_MODULE, T_MODULEREF, T_ASSEMBLYREF, T_TYPEREF}, 4},
    [TYPEORMETHODDEF] = {1, {T_TYPEDEF, T_METHODDEF}, 2},
};

#define IDX(t) (C_IDX + (t))
#define CODED(c) (C_CODED + (c))

/* The columns of tables 0x00-0x2c (22.2-22.39, by table number). */
static const int schema[N_KNOWN][10] = {
    [0x00] = {C_U16, C_STR, C_GUID, C_GUID, C_GUID},                              /* Module */
    [0x01] = {CODED(RESOLUTIONSCOPE), C_STR, C_STR},                              /* TypeRef */
    [0x02] = {C_U32, C_STR, C_STR, CODED(TYPEDEFORREF), IDX(T_FIELD), IDX(0x06)}, /* TypeDef */
    [0x03] = {IDX(T_FIELD)},                                                      /* FieldPtr */
    [0x04] = {C_U16, C_STR, C_BLOB},                                              /* Field */
    [0x05] = {IDX(0x06)},                                                         /* MethodPtr */
    [0x06] = {C_U32, C_U16, C_U16, C_STR, C_BLOB, IDX(T_PARAM)},                  /* MethodDef */
    [0x07] = {IDX(T_PARAM)},                                                      /* ParamPtr */
    [0x08] = {C_U16, C_U16, C_STR},                                               /* Param */
    [0x09] = {IDX(T_TYPEDEF), CODED(TYPEDEFORREF)},                               /* InterfaceImpl */
    [0x0a] = {CODED(MEMBERREFPARENT), C_STR, C_BLOB},                             /* MemberRef */
    [0x0b] = {C_U16, CODED(HASCONSTANT), C_BLOB},                                 /* Constant */
    [0x0c] = {CODED(HASCUSTOMATTRIBUTE), CODED(CUSTOMATTRIBUTETYPE), C_BLOB},     /* CustomAttribute */
    [0x0d] = {CODED(HASFIELDMARSHAL), C_BLOB},                                    /* FieldMarshal */
    [0x0e] = {C_U16, CODED(HASDECLSECURITY), C_BLOB},                             /* DeclSecurity */
    [0x0f] = {C_U16, C_U32, IDX(T_TYPEDEF)},                                      /* ClassLayout */
    [0x10] = {C_U32, IDX(T_FIELD)},                                               /* FieldLayout */
    [0x11] = {C_BLOB},                                                            /* StandAloneSig */
    [0x12] = {IDX(T_TYPEDEF), IDX(T_EVENT)},                                      /* EventMap */
    [0x13] = {IDX(T_EVENT)},                                                      /* EventPtr */
    [0x14] = {C_U16, C_STR, CODED(TYPEDEFORREF)},                                 /* Event */
    [0x15] = {IDX(T_TYPEDEF), IDX(T_PROPERTY)},                                   /* PropertyMap */
    [0x16] = {IDX(T_PROPERTY)},                                                   /* PropertyPtr */
    [0x17] = {C_U16, C_STR, C_BLOB},                                              /* Property */
    [0x18] = {C_U16, IDX(0x06), CODED(HASSEMANTICS)},                             /* MethodSemantics */
    [0x19] = {IDX(T_TYPEDEF), CODED(METHODDEFORREF), CODED(METHODDEFORREF)},      /* MethodImpl */
    [0x1a] = {C_STR},                                                             /* ModuleRef */
    [0x1b] = {C_BLOB},                                                            /* TypeSpec */
    [0x1c] = {C_U16, CODED(MEMBERFORWARDED), C_STR, IDX(T_MODULEREF)},            /* ImplMap */
    [0x1d] = {C_U32, IDX(T_FIELD)},                                               /* FieldRVA */
    [0x1e] = {C_U32, C_U32},                                                      /* ENCLog */
    [0x1f] = {C_U32},                                                             /* ENCMap */
    [0x20] = {C_U32, C_U16, C_U16, C_U16, C_U16, C_U32, C_BLOB, C_STR, C_STR},    /* Assembly */
    [0x21] = {C_U32},                                                             /* AssemblyProcessor */
    [0x22] = {C_U32, C_U32, C_U32},                                               /* AssemblyOS */
    [0x23] = {C_U16, C_U16, C_U16, C_U16, C_U32, C_BLOB, C_STR, C_STR, C_BLOB},   /* AssemblyRef */
    [0x24] = {C_U32, IDX(T_ASSEMBLYREF)},                                         /* AssemblyRefProcessor */
    [0x25] = {C_U32, C_U32, C_U32, IDX(T_ASSEMBLYREF)},                           /* AssemblyRefOS */
    [0x26] = {C_U32, C_STR, C_BLOB},                                              /* File */
    [0x27] = {C_U32, C_U32, C_STR, C_STR, CODED(IMPLEMENTATION)},                 /* ExportedType */
    [0x28] = {C_U32, C_U32, C_STR, CODED(IMPLEMENTATION)},                        /* ManifestResource */
    [0x29] = {IDX(T_TYPEDEF), IDX(T_TYPEDEF)},                                    /* NestedClass */
    [0x2a] = {C_U16, C_U16, CODED(TYPEORMETHODDEF), C_STR},                       /* GenericParam */
    [0x2b] = {CODED(METHODDEFORREF), C_BLOB},                                     /* MethodSpec */
    [0x2c] = {IDX(T_GENERICPARAM), CODED(TYPEDEFORREF)},                          /* GenericParamConstraint */
};

/* Field attributes (23.1.5). */
#define FIELD_STATIC 0x0010
#define FIELD_LITERAL 0x0040

/* How deep names nest (Outer+Inner) and signatures wrap (arrays of
 * arrays) before the rest is left out: a loop in hostile tables ends here. */
#define MAX_NEST 8

struct md {
	const uint8_t *strings, *blob;
	size_t strings_len, blob_len;
	int str_sz, guid_sz, blob_sz;
	uint32_t rows[64];
	const uint8_t *table[N_KNOWN];
	uint32_t row_size[N_KNOWN];
	uint8_t col_off[N_KNOWN][10];
	uint8_t col_sz[N_KNOWN][10];
	uint32_t *enclosing; /* TypeDef row (1-based) -> its enclosing TypeDef row, 0 none */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct md *m, const char *fmt, ...)
{
	if (m->err && m->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(m->err, m->errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

/* --- the PE file (25.2, 25.3) --- */

struct pe {
	const uint8_t *sections;
	unsigned n_sections;
	const uint8_t *dirs;
	uint32_t n_dirs;
};

static int pe_headers(const uint8_t *h, size_t len, struct pe *pe)
{
	if (len < 0x40 || h[0] != 'M' || h[1] != 'Z')
		return -ENOEXEC;
	uint32_t at = le32_at(h + 0x3c);
	if (at > len || len - at < 24 || memcmp(h + at, "PE\0\0", 4) != 0)
		return -ENOEXEC;
	unsigned n_sections = le16_at(h + at + 6);
	uint32_t opt_size = le16_at(h + at + 20);
	size_t opt = (size_t)at + 24;
	if (len - opt < opt_size || opt_size < 2)
		return -EBADMSG;
	uint16_t magic = le16_at(h + opt);
	size_t dirs_at = magic == 0x20b ? 112 : magic == 0x10b ? 96 : 0;
	if (!dirs_at || opt_size < dirs_at)
		return -EBADMSG;
	uint32_t n_dirs = le32_at(h + opt + dirs_at - 4);
	if (n_dirs > (opt_size - dirs_at) / 8)
		n_dirs = (uint32_t)((opt_size - dirs_at) / 8);
	size_t sec = opt + opt_size;
	if ((len - sec) / 40 < n_sections)
		return -EBADMSG;
	*pe = (struct pe){.sections = h + sec, .n_sections = n_sections, .dirs = h + opt + dirs_at, .n_dirs = n_dirs};
	return 0;
}

/* The file offset of [rva, rva + size) when one section holds all of it. */
static int pe_offset(const struct pe *pe, uint32_t rva, uint32_t size, uint64_t *ret_off)
{
	for (unsigned i = 0; i < pe->n_sections; i++) {
		const uint8_t *s = pe->sections + (size_t)i * 40;
		uint32_t va = le32_at(s + 12), raw = le32_at(s + 16), ptr = le32_at(s + 20);
		if (rva >= va && rva - va < raw && size <= raw - (rva - va)) {
			*ret_off = (uint64_t)ptr + (rva - va);
			return 0;
		}
	}
	return -EBADMSG;
}

int clrmeta_cli_header(const uint8_t *head, size_t len, uint64_t *ret_off, uint32_t *ret_size)
{
	struct pe pe;
	int r = pe_headers(head, len, &pe);
	if (r < 0)
		return r;
	if (pe.n_dirs < 15) /* the CLI header is data directory 14 */
		return -ENOENT;
	uint32_t rva = le32_at(pe.dirs + 14 * 8), size = le32_at(pe.dirs + 14 * 8 + 4);
	if (!rva || !size)
		return -ENOENT;
	if (size < 16)
		return -EBADMSG;
	*ret_size = size;
	return pe_offset(&pe, rva, size, ret_off);
}

int clrmeta_metadata_at(const uint8_t *head, size_t len, const uint8_t *cli, size_t cli_len, uint64_t *ret_off,
                        uint32_t *ret_size)
{
	struct pe pe;
	int r = pe_headers(head, len, &pe);
	if (r < 0)
		return -EBADMSG;
	if (cli_len < 16)
		return -EBADMSG;
	uint32_t rva = le32_at(cli + 8), size = le32_at(cli + 12);
	if (!rva || size < 32)
		return -EBADMSG;
	*ret_size = size;
	return pe_offset(&pe, rva, size, ret_off);
}

/* --- the metadata root and the #~ stream (24.2.1, 24.2.2, 24.2.6) --- */

static uint32_t index_size(const struct md *m, int col)
{
	if (col >= C_CODED) {
		int c = col - C_CODED;
		uint32_t max = 0;
		for (int i = 0; i < coded[c].n; i++)
			if (coded[c].tables[i] != T_UNUSED && m->rows[coded[c].tables[i]] > max)
				max = m->rows[coded[c].tables[i]];
		return max < (1u << (16 - coded[c].bits)) ? 2 : 4;
	}
	return m->rows[col - C_IDX] < 0x10000 ? 2 : 4;
}

static uint32_t col_size(const struct md *m, int col)
{
	switch (col) {
	case C_U16:
		return 2;
	case C_U32:
		return 4;
	case C_STR:
		return (uint32_t)m->str_sz;
	case C_GUID:
		return (uint32_t)m->guid_sz;
	case C_BLOB:
		return (uint32_t)m->blob_sz;
	default:
		return index_size(m, col);
	}
}

static int read_streams(struct md *m, const uint8_t *md, size_t len, const uint8_t **ret_tables, size_t *ret_tlen)
{
	if (len < 20 || le32_at(md) != 0x424a5342)
		return fail(m, "no metadata signature (BSJB)");
	uint32_t vlen = le32_at(md + 12);
	if (vlen > len - 16 || (len - 16 - vlen) < 4)
		return fail(m, "metadata version string of %u bytes overruns the metadata", vlen);
	size_t at = 16 + (size_t)vlen;
	unsigned n = le16_at(md + at + 2);
	at += 4;
	*ret_tables = NULL;
	for (unsigned i = 0; i < n; i++) {
		if (len - at < 9)
			return fail(m, "stream header %u of %u overruns the metadata", i, n);
		uint32_t off = le32_at(md + at), size = le32_at(md + at + 4);
		const char *name = (const char *)md + at + 8;
		size_t room = len - at - 8, nl = strnlen(name, room < 32 ? room : 32);
		if (nl == room || nl == 32)
			return fail(m, "stream header %u of %u has an unterminated name", i, n);
		at += 8 + ((nl + 4) & ~(size_t)3);
		if (at > len)
			return fail(m, "stream header %u of %u overruns the metadata", i, n);
		if (off > len || size > len - off)
			return fail(m, "stream %.32s at %u (%u bytes) overruns the metadata of %zu bytes", name, off,
			            size, len);
		if (strcmp(name, "#~") == 0 || strcmp(name, "#-") == 0) {
			*ret_tables = md + off;
			*ret_tlen = size;
		} else if (strcmp(name, "#Strings") == 0) {
			m->strings = md + off;
			m->strings_len = size;
		} else if (strcmp(name, "#Blob") == 0) {
			m->blob = md + off;
			m->blob_len = size;
		}
	}
	if (!*ret_tables)
		return fail(m, "the metadata has no table stream");
	return 0;
}

static int layout(struct md *m, const uint8_t *t, size_t len)
{
	if (len < 24)
		return fail(m, "table stream of %zu bytes", len);
	uint8_t heaps = t[6];
	m->str_sz = heaps & 0x01 ? 4 : 2;
	m->guid_sz = heaps & 0x02 ? 4 : 2;
	m->blob_sz = heaps & 0x04 ? 4 : 2;
	uint64_t valid = le64_at(t + 8);
	size_t at = 24;
	for (int i = 0; i < 64; i++) {
		if (!(valid >> i & 1))
			continue;
		if (len - at < 4)
			return fail(m, "table stream ends in its row counts");
		m->rows[i] = le32_at(t + at);
		at += 4;
	}
	if (heaps & 0x40) { /* extra data (an uncompressed #- stream) */
		if (len - at < 4)
			return fail(m, "table stream ends in its row counts");
		at += 4;
	}
	for (int i = 0; i < N_KNOWN; i++) {
		uint32_t rs = 0;
		for (int c = 0; c < 10 && schema[i][c] != C_END; c++) {
			m->col_off[i][c] = (uint8_t)rs;
			m->col_sz[i][c] = (uint8_t)col_size(m, schema[i][c]);
			rs += m->col_sz[i][c];
		}
		m->row_size[i] = rs;
		if (!m->rows[i])
			continue;
		if ((uint64_t)m->rows[i] * rs > len - at)
			return fail(m, "table 0x%02x (%u rows of %u bytes) overruns the table stream", i, m->rows[i],
			            rs);
		m->table[i] = t + at;
		at += (size_t)m->rows[i] * rs;
		if (i == T_NESTEDCLASS)
			break; /* nothing after it is read */
	}
	return 0;
}

/* Column c of row (1-based) of table t; the caller checked row. */
static uint32_t col(const struct md *m, int t, uint32_t row, int c)
{
	const uint8_t *p = m->table[t] + (size_t)(row - 1) * m->row_size[t] + m->col_off[t][c];
	return m->col_sz[t][c] == 2 ? le16_at(p) : le32_at(p);
}

static const char *str_at(const struct md *m, uint32_t i)
{
	if (!m->strings || i >= m->strings_len || !memchr(m->strings + i, 0, m->strings_len - i))
		return "";
	return (const char *)m->strings + i;
}

/* --- names --- */

struct sb {
	char *p;
	size_t len, cap;
};

/* Appends s with every generic arity ("`1") dropped. */
static void sb_name(struct sb *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '`' && s[1] >= '0' && s[1] <= '9') {
			while (s[1] >= '0' && s[1] <= '9')
				s++;
			continue;
		}
		if (b->len + 1 < b->cap)
			b->p[b->len++] = *s;
	}
	b->p[b->len] = '\0';
}

static void sb_lit(struct sb *b, const char *s)
{
	size_t n = strlen(s);
	if (n > b->cap - 1 - b->len)
		n = b->cap - 1 - b->len;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* The name of row of TypeDef or TypeRef (both hold the name in column 1
 * and the namespace in column 2): "Namespace.Outer+Inner", the enclosing
 * type (NestedClass for a TypeDef, a TypeRef resolution scope for a TypeRef)
 * named first. */
static void type_name(const struct md *m, int table, uint32_t row, struct sb *b, int depth)
{
	if (!row || row > m->rows[table])
		return;
	uint32_t outer = 0;
	if (table == T_TYPEDEF) {
		outer = m->enclosing ? m->enclosing[row] : 0;
	} else {
		uint32_t scope = col(m, T_TYPEREF, row, 0);
		outer = (scope & 3) == 3 ? scope >> 2 : 0; /* nested in another TypeRef */
	}
	if (outer && depth < MAX_NEST) {
		type_name(m, table, outer, b, depth + 1);
		sb_lit(b, "+");
	} else {
		const char *ns = str_at(m, col(m, table, row, 2));
		if (*ns) {
			sb_name(b, ns);
			sb_lit(b, ".");
		}
	}
	sb_name(b, str_at(m, col(m, table, row, 1)));
}

/* --- field signatures (23.2.4, 23.2.12) --- */

/* A compressed unsigned integer (23.2); -1 when it does not fit. */
static int64_t uncompress(const uint8_t **p, const uint8_t *end)
{
	if (*p >= end)
		return -1;
	uint8_t b = **p;
	if (!(b & 0x80)) {
		*p += 1;
		return b;
	}
	if ((b & 0xc0) == 0x80) {
		if (end - *p < 2)
			return -1;
		int64_t v = (int64_t)(b & 0x3f) << 8 | (*p)[1];
		*p += 2;
		return v;
	}
	if ((b & 0xe0) == 0xc0) {
		if (end - *p < 4)
			return -1;
		int64_t v = (int64_t)(b & 0x1f) << 24 | (int64_t)(*p)[1] << 16 | (int64_t)(*p)[2] << 8 | (*p)[3];
		*p += 4;
		return v;
	}
	return -1;
}

static const char *primitive(uint8_t e)
{
	static const char *names[] = {
	    [0x02] = "System.Boolean", [0x03] = "System.Char",   [0x04] = "System.SByte",   [0x05] = "System.Byte",
	    [0x06] = "System.Int16",   [0x07] = "System.UInt16", [0x08] = "System.Int32",   [0x09] = "System.UInt32",
	    [0x0a] = "System.Int64",   [0x0b] = "System.UInt64", [0x0c] = "System.Single",  [0x0d] = "System.Double",
	    [0x0e] = "System.String",  [0x18] = "System.IntPtr", [0x19] = "System.UIntPtr", [0x1c] = "System.Object",
	};
	return e < sizeof(names) / sizeof(names[0]) ? names[e] : NULL;
}

/* The key of one Type (23.2.12) at *p, into b; 0, or -1 when the type names
 * no class or cannot be read (b is then left as it was). */
static int sig_type(const struct md *m, const uint8_t **p, const uint8_t *end, struct sb *b, int depth)
{
	if (*p >= end || depth > MAX_NEST)
		return -1;
	uint8_t e = *(*p)++;
	while (e == 0x1f || e == 0x20) { /* custom modifiers */
		if (uncompress(p, end) < 0 || *p >= end)
			return -1;
		e = *(*p)++;
	}
	const char *prim = primitive(e);
	if (prim) {
		sb_lit(b, prim);
		return 0;
	}
	switch (e) {
	case 0x11: /* VALUETYPE */
	case 0x12: /* CLASS */
	case 0x15: /* GENERICINST: CLASS or VALUETYPE, then the definition */
	{
		if (e == 0x15) {
			if (*p >= end || (**p != 0x11 && **p != 0x12))
				return -1;
			(*p)++;
		}
		int64_t tok = uncompress(p, end);
		if (tok < 0)
			return -1;
		uint32_t row = (uint32_t)(tok >> 2);
		size_t before = b->len;
		if ((tok & 3) == 0)
			type_name(m, T_TYPEDEF, row, b, 0);
		else if ((tok & 3) == 1)
			type_name(m, T_TYPEREF, row, b, 0);
		if (b->len == before)
			return -1;
		return 0;
	}
	case 0x1d: /* SZARRAY */
		if (sig_type(m, p, end, b, depth + 1) < 0)
			return -1;
		sb_lit(b, "[]");
		return 0;
	case 0x14: { /* ARRAY: type, rank, then sizes and bounds left unread */
		if (sig_type(m, p, end, b, depth + 1) < 0)
			return -1;
		int64_t rank = uncompress(p, end);
		if (rank < 1 || rank > 32)
			return -1;
		sb_lit(b, "[");
		for (int64_t i = 1; i < rank; i++)
			sb_lit(b, ",");
		sb_lit(b, "]");
		return 0;
	}
	default: /* type parameters, pointers, function pointers */
		return -1;
	}
}

static void field_key(const struct md *m, uint32_t blob_index, char *out, size_t len)
{
	out[0] = '\0';
	if (!m->blob || blob_index >= m->blob_len)
		return;
	const uint8_t *p = m->blob + blob_index, *end = m->blob + m->blob_len;
	int64_t n = uncompress(&p, end);
	if (n < 2 || n > end - p || *p != 0x06) /* FIELD */
		return;
	end = p + n;
	p++;
	struct sb b = {out, 0, len};
	if (sig_type(m, &p, end, &b, 0) < 0)
		out[0] = '\0';
}

/* --- the walk --- */

static int build_enclosing(struct md *m)
{
	uint32_t n = m->rows[T_NESTEDCLASS], types = m->rows[T_TYPEDEF];
	if (!n || !types || !m->table[T_NESTEDCLASS])
		return 0;
	m->enclosing = calloc((size_t)types + 1, sizeof(*m->enclosing));
	if (!m->enclosing)
		return -ENOMEM;
	for (uint32_t r = 1; r <= n; r++) {
		uint32_t inner = col(m, T_NESTEDCLASS, r, 0), outer = col(m, T_NESTEDCLASS, r, 1);
		if (inner && inner <= types && outer <= types && outer != inner)
			m->enclosing[inner] = outer;
	}
	return 0;
}

/* The Field row of position i (1-based) of the field list, through
 * FieldPtr when the stream has it; 0 when out of range. */
static uint32_t field_row(const struct md *m, uint32_t i)
{
	if (m->rows[T_FIELDPTR]) {
		if (!i || i > m->rows[T_FIELDPTR])
			return 0;
		i = col(m, T_FIELDPTR, i, 0);
	}
	return i && i <= m->rows[T_FIELD] ? i : 0;
}

int clrmeta_each_static(const uint8_t *md, size_t len, clrmeta_static_fn fn, void *ctx, char *err, size_t errlen)
{
	struct md m = {.err = err, .errlen = errlen};
	const uint8_t *tables = NULL;
	size_t tlen = 0;
	int r = read_streams(&m, md, len, &tables, &tlen);
	if (r < 0)
		return r;
	if ((r = layout(&m, tables, tlen)) < 0)
		return r;
	if ((r = build_enclosing(&m)) < 0)
		return r;
	uint32_t types = m.rows[T_TYPEDEF];
	uint32_t fields = m.rows[T_FIELDPTR] ? m.rows[T_FIELDPTR] : m.rows[T_FIELD];
	char owner[CLRMETA_NAME_MAX + 1], key[CLRMETA_NAME_MAX + 1];
	for (uint32_t t = 1; t <= types && r == 0; t++) {
		uint32_t first = col(&m, T_TYPEDEF, t, 4);
		uint32_t next = t < types ? col(&m, T_TYPEDEF, t + 1, 4) : fields + 1;
		if (next > fields + 1)
			next = fields + 1;
		int named = 0;
		for (uint32_t i = first; i < next && r == 0; i++) {
			uint32_t f = field_row(&m, i);
			if (!f)
				continue;
			uint32_t flags = col(&m, T_FIELD, f, 0);
			if (!(flags & FIELD_STATIC) || (flags & FIELD_LITERAL))
				continue;
			if (!named) {
				struct sb b = {owner, 0, sizeof(owner)};
				owner[0] = '\0';
				type_name(&m, T_TYPEDEF, t, &b, 0);
				named = 1;
			}
			field_key(&m, col(&m, T_FIELD, f, 2), key, sizeof(key));
			r = fn(ctx, str_at(&m, col(&m, T_FIELD, f, 1)), owner, key);
		}
	}
	free(m.enclosing);
	return r;
}

void clrmeta_type_key(const char *name, char *out, size_t len)
{
	if (!len)
		return;
	size_t w = 0;
	int depth = 0;
	for (const char *s = name; *s; s++) {
		if (*s == '<') {
			depth++;
			continue;
		}
		if (*s == '>' && depth > 0) {
			depth--;
			continue;
		}
		if (depth == 0 && w + 1 < len)
			out[w++] = *s;
	}
	out[w] = '\0';
}
