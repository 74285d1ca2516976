/* Symbol tables for attribution: functions, line tables, static objects and
 * their type layouts, per loaded module (program or shared library).
 *
 * A `struct symtab` holds modules; each module keeps its addresses as in the
 * ELF file (link-time virtual addresses) and says where it was loaded:
 * runtime address = file address + bias, for runtime addresses in [lo, hi).
 *
 * Sources:
 *   symtab_add_elf()     an ELF file: .symtab/.dynsym (functions, objects),
 *                        the build-id, and with libdwarf (HAVE_LIBDWARF) the
 *                        DWARF line tables, variables and type layouts.
 *   symtab_parse()       the CT_SEC_SYMBOLS payload written by
 *                        symtab_serialize() (layout: formats/FORMAT.md, SYMBOLS).
 *                        The payload is untrusted: every count, length,
 *                        offset and index is checked.
 * Lookups take runtime addresses. */
#ifndef CT_SYMTAB_H
#define CT_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buildid.h"

#define SYMTAB_MAGIC 0x59535443u   /* bytes "CTSY" */
#define SYMTAB_VERSION 2           /* payload version written; 1 is still read */
#define SYMTAB_VERSION_MIN 1
#define ST_NONE UINT32_MAX         /* no type / no file / no name */
#define ST_TYPE_DEPTH_MAX 16       /* member paths deeper than this are cut */

/* Limits the parser enforces (hostile payloads). */
#define ST_MAX_MODULES 4096
#define ST_MAX_STRTAB (256u << 20)
#define ST_MAX_ITEMS (64u << 20)   /* any one table */

enum st_type_kind {
	ST_T_BASE = 0,     /* int, double, pointer, enum: a leaf */
	ST_T_STRUCT = 1,
	ST_T_UNION = 2,
	ST_T_ARRAY = 3,    /* elem type, count (0: unknown/flexible) */
	ST_T_KIND_MAX = 3
};

struct st_func {
	uint64_t start, size;      /* file addresses; size 0: unknown (to the next) */
	uint32_t name;             /* string offset */
};

/* [addr, addr+len) -> file:line */
struct st_line {
	uint64_t addr;
	uint32_t len;
	uint32_t file;             /* index into files[] */
	uint32_t line;
};

struct st_var {
	uint64_t addr, size;
	uint32_t name;
	uint32_t type;             /* index into types[] or ST_NONE */
};

struct st_type {
	uint8_t kind;              /* enum st_type_kind */
	uint32_t name;             /* "struct queue", "int", ... or ST_NONE */
	uint64_t size;
	uint32_t elem;             /* array element type or ST_NONE */
	uint64_t count;            /* array element count */
	uint32_t first_member, nmembers;  /* into members[] */
};

struct st_member {
	uint32_t name;             /* ST_NONE for anonymous members */
	uint64_t offset, size;
	uint32_t type;
};

/* A heap allocation site: the return address of an allocator call (file
 * address) and the type of the block it returns (version 2), inferred from
 * the debug information (symtab_dwarf.c, "allocation sites"). */
struct st_alloc {
	uint64_t site;
	uint32_t name;             /* the variable the result is stored in, or ST_NONE */
	uint32_t type;             /* index into types[]: the block is one T or an array of T */
};

/* Module flags */
#define ST_MOD_ELF_SYMS   0x01 /* functions/objects from .symtab */
#define ST_MOD_DYNSYM     0x02 /* only .dynsym was available (stripped) */
#define ST_MOD_DWARF      0x04 /* DWARF lines, variables and types */
#define ST_MOD_LINES_SUBSET 0x08 /* line table restricted to the addresses seen */
#define ST_MOD_MISSING    0x10 /* the file could not be read: no symbols */
#define ST_MOD_NOT_READ   0x20 /* no recorded address in its range: tables not read */

struct st_module {
	char *path;
	uint8_t buildid[BUILDID_MAX];
	uint8_t buildid_len;
	uint64_t bias, lo, hi;     /* runtime = file address + bias, in [lo, hi) */
	uint32_t flags;            /* ST_MOD_* */
	char *str;                 /* string table: NUL-terminated strings */
	size_t str_len, str_cap;
	uint32_t *files;           /* string offsets */
	size_t nfiles, cap_files;
	struct st_func *funcs;     /* sorted by start */
	size_t nfuncs, cap_funcs;
	struct st_line *lines;     /* sorted by addr, not overlapping */
	size_t nlines, cap_lines;
	struct st_var *vars;       /* sorted by addr */
	size_t nvars, cap_vars;
	struct st_type *types;
	size_t ntypes, cap_types;
	struct st_member *members;
	size_t nmembers, cap_members;
	struct st_alloc *allocs;   /* sorted by site */
	size_t nallocs, cap_allocs;
	void *strhash;             /* builder's string dedup (not serialized) */
	size_t strhash_cap, strhash_n;
};

struct symtab {
	struct st_module **mods;   /* sorted by lo after symtab_finish() */
	size_t n, cap;
};

/* ---- building ------------------------------------------------------------ */

void symtab_init(struct symtab *s);
void symtab_free(struct symtab *s);
/* A new empty module (path copied); NULL when out of memory. */
struct st_module *symtab_add_module(struct symtab *s, const char *path);
/* Strings are deduplicated; returns the offset, ST_NONE when out of memory. */
uint32_t st_intern(struct st_module *m, const char *str);
uint32_t st_add_file(struct st_module *m, const char *name);   /* file index */
int st_add_func(struct st_module *m, uint64_t start, uint64_t size, const char *name);
int st_add_line(struct st_module *m, uint64_t addr, uint32_t len, uint32_t file, uint32_t line);
int st_add_var(struct st_module *m, uint64_t addr, uint64_t size, const char *name, uint32_t type);
/* Types: add the type, then its members (they must follow each other). */
uint32_t st_add_type(struct st_module *m, uint8_t kind, const char *name, uint64_t size,
                     uint32_t elem, uint64_t count);
int st_add_member(struct st_module *m, uint32_t type, const char *name, uint64_t offset,
                  uint64_t size, uint32_t mtype);
int st_add_alloc(struct st_module *m, uint64_t site, const char *name, uint32_t type);
/* Sort and deduplicate the tables of every module, sort modules by lo.
 * Call after building and before lookups (symtab_parse does it). */
void symtab_finish(struct symtab *s);

/* The addresses (runtime) the line table should cover; NULL (the set, or
 * its v) for all.
 * sites (may be NULL): the return addresses of the recorded allocation call
 * stacks, sorted and unique: the DWARF loader infers the type of the block
 * each one returns (struct st_alloc).
 * data (may be NULL): the recorded data addresses.  Given (a recording's
 * join), a module that neither set touches is not read at all: whatever
 * its tables held, pruning to the recorded addresses would drop it
 * (flag ST_MOD_NOT_READ). */
struct st_addrs {
	const uint64_t *v;         /* sorted, unique */
	size_t n;
	const struct st_addrs *sites;
	const struct st_addrs *data;
};

/* Whether the set holds an address in [lo, hi). */
bool symtab_addrs_in(const struct st_addrs *s, uint64_t lo, uint64_t hi);

/* Load the ELF file at path into a new module with load range [lo, hi)
 * and bias.  Missing or unreadable files still give a module (flag
 * ST_MOD_MISSING) so that lookups say which file it was.  note (may be
 * NULL) gets a one-line remark about what was missing ("no DWARF",
 * "stripped", "cannot open").  Returns the module or NULL (out of memory). */
struct st_module *symtab_add_elf(struct symtab *s, const char *path, uint64_t lo,
                                 uint64_t hi, uint64_t bias, const struct st_addrs *ips,
                                 char *note, size_t notecap);

/* The bytes of file addresses [a, b) of the ELF file at path, from its
 * PT_LOAD segments (malloc'ed); NULL when they cannot be read. */
uint8_t *symtab_elf_code(const char *path, uint64_t a, uint64_t b);

/* Bias of a mapping of path: map_start, map_offset as in /proc/PID/maps.
 * 0 on success with *bias set; -1 when the file cannot be read. */
int symtab_elf_bias(const char *path, uint64_t map_start, uint64_t map_offset,
                    uint64_t *bias);

/* One line of a MAPS section / maps-PID.txt file
 * ("start-end perms offset buildid path"); 0 or -1 if malformed. */
struct st_mapping {
	uint64_t start, end, offset;
	bool exec;
	char buildid[2 * BUILDID_MAX + 1];   /* hex or "-" */
	char path[4096];
};
int symtab_maps_line(const char *line, size_t len, struct st_mapping *out);
/* Calls f(arg, m) for each mapping of the MAPS text, in order (lines that
 * are not mappings skipped); stops at f's first nonzero return and returns
 * it, else 0.  One line is parsed at a time: a maps file can have tens of
 * thousands of lines. */
int symtab_each_mapping(const char *text, size_t len,
                        int (*f)(void *arg, const struct st_mapping *m), void *arg);
/* Whether m maps a file that still exists under its path. */
bool symtab_mapping_is_file(const struct st_mapping *m);
/* Where a data address can fall in a variable of a module (a file with an
 * executable mapping, as symtab_from_maps takes them): the file's mappings
 * and an anonymous mapping (or [heap]) that continues one of them (the
 * .bss past the file's last page).  Heap, stacks and other anonymous memory hold no
 * variables: a full trace has millions of distinct addresses there, which
 * the join need not collect.  Sorted, disjoint ranges. */
struct st_ranges {
	struct st_range { uint64_t lo, hi; } *v;
	size_t n;
	size_t last;      /* the range of the previous lookup */
};
/* The ranges of the MAPS text into r (free r->v).  0, or -1 when out of
 * memory. */
int symtab_var_ranges(struct st_ranges *r, const char *text, size_t len);
bool symtab_ranges_has(struct st_ranges *r, uint64_t x);
/* A module (symtab_add_elf) for every file with an executable mapping in
 * the MAPS text; bias from its lowest mapping.  A file whose build-id
 * differs from the recorded one gets no symbols.  note() (may be NULL) is
 * told what is missing per file.  0, or -1 when out of memory. */
int symtab_from_maps(struct symtab *s, const char *text, size_t len, const struct st_addrs *ips,
                     void (*note)(void *arg, const char *path, const char *what), void *arg);
/* Drop every table of m (keeps path, range, build-id). */
void symtab_clear_module(struct st_module *m);

#ifdef HAVE_LIBDWARF
/* symtab_dwarf.c: DWARF of the file at path into m.  0, or -1 with a note
 * when there is no usable DWARF. */
int symtab_dwarf_load(struct st_module *m, const char *path, const struct st_addrs *ips,
                      char *note, size_t notecap);
#endif

/* Keep only the functions and line rows that cover an address of ips, and
 * the variables that contain an address of data (with the types they
 * use, and those of the allocation sites); NULL keeps a table whole.  Both sets hold runtime addresses, sorted
 * and unique.  0, or -1 when out of memory (s is then unchanged or
 * partly pruned, still valid). */
int symtab_prune(struct symtab *s, const struct st_addrs *ips, const struct st_addrs *data);

/* ---- serialization (CT_SEC_SYMBOLS payload) ------------------------------- */

/* Serialize into a malloc'ed buffer.  0, or -1 (out of memory). */
int symtab_serialize(const struct symtab *s, void **out, size_t *len);
/* Parse a payload into s (initialized, may already hold modules).
 * 0, or -1 with err set; s then holds the modules parsed before the error
 * (each complete and valid). */
int symtab_parse(struct symtab *s, const void *buf, size_t len, char *err, size_t errcap);

/* ---- lookups ------------------------------------------------------------- */

const struct st_module *symtab_module(const struct symtab *s, uint64_t addr);
static inline const char *st_str(const struct st_module *m, uint32_t off)
{
	return off < m->str_len ? m->str + off : NULL;
}

struct st_code {
	const struct st_module *mod;   /* NULL: no module covers the address */
	const char *func;              /* NULL if unknown */
	uint64_t func_off;             /* addr - function start */
	const char *file;              /* NULL if unknown */
	uint32_t line;
};
/* The function of m at a file address (not a runtime one), or NULL. */
const struct st_func *symtab_func(const struct st_module *m, uint64_t file_addr);
/* false when nothing at all is known (no module). */
bool symtab_code(const struct symtab *s, uint64_t addr, struct st_code *out);
/* "func+0x12 (file.c:34)", "func (file.c:34)", "libx.so+0x1234", "0x401234". */
const char *symtab_code_str(const struct symtab *s, uint64_t addr, bool with_offset,
                            char *buf, size_t cap);

struct st_data {
	const struct st_module *mod;
	const struct st_var *var;      /* NULL: no static object */
	const char *name;              /* variable name */
	const char *type_name;         /* of the variable, NULL if unknown */
	char type_buf[128];            /* storage for composed type names */
	uint64_t var_off;              /* addr - var start */
	char path[256];                /* member path: "q.count", "arr[3].lock", or name */
	const char *field_type;        /* name of the innermost struct/union, or NULL */
	const char *field;             /* innermost member name or NULL */
	uint64_t field_off;            /* offset of the innermost leaf within the variable */
	uint64_t field_size;           /* size of that leaf (0 unknown) */
	uint64_t leaf_off;             /* addr - leaf start */
};
bool symtab_data(const struct symtab *s, uint64_t addr, struct st_data *out);

/* The variable containing addr (no strings built: the fast path), and its
 * module (NULL if none covers addr). */
const struct st_var *symtab_var(const struct symtab *s, uint64_t addr,
                                const struct st_module **mod);

/* The allocation site whose return address is file_addr in m, or NULL
 * (untyped). */
const struct st_alloc *symtab_alloc(const struct st_module *m, uint64_t file_addr);

/* Member path of offset off in a block of block_size bytes allocated at
 * site al (an array of al's type when the block holds more than one):
 * "cells[3].x", "p[2]", or without a variable name "[3].x", ".x" (appended
 * to out; out may be NULL).  Returns the leaf's offset in the block and
 * sets *leaf_size (0 unknown). */
uint64_t symtab_block_path(const struct st_module *m, const struct st_alloc *al,
                           uint64_t block_size, uint64_t off, char *out, size_t cap,
                           uint64_t *leaf_size);

/* Member path inside type t at offset off (appended to out, starting with
 * "." or "["; out may be NULL: no path, only the offsets); returns the
 * leaf's offset from the start of t and sets *leaf_size, and *field,
 * *field_type unless NULL. */
uint64_t symtab_type_path(const struct st_module *m, uint32_t t, uint64_t off,
                          char *out, size_t cap, uint64_t *leaf_size,
                          const char **field, const char **field_type);

#endif
