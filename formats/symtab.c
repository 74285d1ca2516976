/* Symbol tables: building, sorting, the SYMBOLS section codec and lookups.
 * The payload layout is in formats/FORMAT.md, "SYMBOLS (kind 8)". */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symtab.h"

/* ---- building ------------------------------------------------------------ */

void symtab_init(struct symtab *s)
{
	memset(s, 0, sizeof *s);
}

static void module_free(struct st_module *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->str);
	free(m->files);
	free(m->funcs);
	free(m->lines);
	free(m->vars);
	free(m->types);
	free(m->members);
	free(m->allocs);
	free(m->strhash);
	free(m);
}

void symtab_clear_module(struct st_module *m)
{
	m->nfiles = m->nfuncs = m->nlines = m->nvars = m->ntypes = m->nmembers = m->nallocs = 0;
	m->flags &= ~(uint32_t)(ST_MOD_ELF_SYMS | ST_MOD_DYNSYM | ST_MOD_DWARF | ST_MOD_LINES_SUBSET);
}

void symtab_free(struct symtab *s)
{
	for (size_t i = 0; i < s->n; i++)
		module_free(s->mods[i]);
	free(s->mods);
	memset(s, 0, sizeof *s);
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc <= n)
		nc *= 2;
	if (nc > SIZE_MAX / elem)
		return -1;
	void *q = realloc(*p, nc * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}
#define GROW(m, arr, n, cap) grow((void **)&(m)->arr, &(m)->cap, (m)->n, sizeof *(m)->arr)

struct st_module *symtab_add_module(struct symtab *s, const char *path)
{
	if (grow((void **)&s->mods, &s->cap, s->n, sizeof *s->mods))
		return NULL;
	struct st_module *m = calloc(1, sizeof *m);
	if (!m || !(m->path = strdup(path ? path : ""))) {
		free(m);
		return NULL;
	}
	s->mods[s->n++] = m;
	return m;
}

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Open-addressing set of string offsets (value+1, 0 empty). */
static int strhash_insert(struct st_module *m, uint32_t off)
{
	uint32_t *t = m->strhash;
	size_t mask = m->strhash_cap - 1;
	for (size_t i = hash_str(m->str + off) & mask;; i = (i + 1) & mask)
		if (!t[i]) {
			t[i] = off + 1;
			m->strhash_n++;
			return 0;
		}
}

static int strhash_grow(struct st_module *m)
{
	size_t nc = m->strhash_cap ? m->strhash_cap * 2 : 1024;
	uint32_t *old = m->strhash;
	size_t oc = m->strhash_cap;
	uint32_t *t = calloc(nc, sizeof *t);
	if (!t)
		return -1;
	m->strhash = t;
	m->strhash_cap = nc;
	m->strhash_n = 0;
	for (size_t i = 0; i < oc; i++)
		if (old[i])
			strhash_insert(m, old[i] - 1);
	free(old);
	return 0;
}

uint32_t st_intern(struct st_module *m, const char *str)
{
	if (!str)
		return ST_NONE;
	size_t l = strlen(str);
	if (l > 4096)
		l = 4096;
	if ((m->strhash_n + 1) * 2 > m->strhash_cap && strhash_grow(m))
		return ST_NONE;
	uint32_t *t = m->strhash;
	size_t mask = m->strhash_cap - 1;
	size_t i;
	for (i = hash_str(str) & mask; t[i]; i = (i + 1) & mask) {
		const char *c = m->str + t[i] - 1;
		if (!strncmp(c, str, l) && c[l] == 0)
			return t[i] - 1;
	}
	if (m->str_len + l + 1 > ST_MAX_STRTAB)
		return ST_NONE;
	while (m->str_len + l + 1 > m->str_cap) {
		size_t nc = m->str_cap ? m->str_cap * 2 : 4096;
		char *p = realloc(m->str, nc);
		if (!p)
			return ST_NONE;
		m->str = p;
		m->str_cap = nc;
	}
	uint32_t off = (uint32_t)m->str_len;
	memcpy(m->str + off, str, l);
	m->str[off + l] = 0;
	m->str_len += l + 1;
	t[i] = off + 1;
	m->strhash_n++;
	return off;
}

uint32_t st_add_file(struct st_module *m, const char *name)
{
	uint32_t s = st_intern(m, name);
	if (s == ST_NONE)
		return ST_NONE;
	for (size_t i = m->nfiles; i-- > 0;)   /* few files; recent first */
		if (m->files[i] == s)
			return (uint32_t)i;
	if (GROW(m, files, nfiles, cap_files))
		return ST_NONE;
	m->files[m->nfiles] = s;
	return (uint32_t)m->nfiles++;
}

int st_add_func(struct st_module *m, uint64_t start, uint64_t size, const char *name)
{
	uint32_t n = st_intern(m, name);
	if (n == ST_NONE || GROW(m, funcs, nfuncs, cap_funcs))
		return -1;
	m->funcs[m->nfuncs++] = (struct st_func){ start, size, n };
	return 0;
}

int st_add_line(struct st_module *m, uint64_t addr, uint32_t len, uint32_t file, uint32_t line)
{
	if (GROW(m, lines, nlines, cap_lines))
		return -1;
	m->lines[m->nlines++] = (struct st_line){ addr, len, file, line };
	return 0;
}

int st_add_var(struct st_module *m, uint64_t addr, uint64_t size, const char *name, uint32_t type)
{
	uint32_t n = st_intern(m, name);
	if (n == ST_NONE || GROW(m, vars, nvars, cap_vars))
		return -1;
	m->vars[m->nvars++] = (struct st_var){ addr, size, n, type };
	return 0;
}

uint32_t st_add_type(struct st_module *m, uint8_t kind, const char *name, uint64_t size,
                     uint32_t elem, uint64_t count)
{
	uint32_t n = name ? st_intern(m, name) : ST_NONE;
	if (GROW(m, types, ntypes, cap_types))
		return ST_NONE;
	m->types[m->ntypes] = (struct st_type){
		.kind = kind, .name = n, .size = size, .elem = elem, .count = count,
		.first_member = (uint32_t)m->nmembers, .nmembers = 0,
	};
	return (uint32_t)m->ntypes++;
}

int st_add_member(struct st_module *m, uint32_t type, const char *name, uint64_t offset,
                  uint64_t size, uint32_t mtype)
{
	if (type >= m->ntypes)
		return -1;
	struct st_type *t = &m->types[type];
	if (t->first_member + t->nmembers != m->nmembers)
		return -1;   /* members of one type must be contiguous */
	uint32_t n = name ? st_intern(m, name) : ST_NONE;
	if (GROW(m, members, nmembers, cap_members))
		return -1;
	m->members[m->nmembers++] = (struct st_member){ n, offset, size, mtype };
	m->types[type].nmembers++;
	return 0;
}

int st_add_alloc(struct st_module *m, uint64_t site, const char *name, uint32_t type)
{
	uint32_t n = name ? st_intern(m, name) : ST_NONE;
	if ((name && n == ST_NONE) || GROW(m, allocs, nallocs, cap_allocs))
		return -1;
	m->allocs[m->nallocs++] = (struct st_alloc){ site, n, type };
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct st_func *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;   /* sized first */
}

static int cmp_line(const void *a, const void *b)
{
	const struct st_line *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->len > y->len ? -1 : x->len < y->len;
}

static int cmp_var(const void *a, const void *b)
{
	const struct st_var *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* typed (DWARF) first, then larger */
	if ((x->type == ST_NONE) != (y->type == ST_NONE))
		return x->type == ST_NONE ? 1 : -1;
	return x->size > y->size ? -1 : x->size < y->size;
}

static int cmp_alloc(const void *a, const void *b)
{
	const struct st_alloc *x = a, *y = b;
	return x->site < y->site ? -1 : x->site > y->site;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct st_module *x = *(struct st_module *const *)a, *y = *(struct st_module *const *)b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

/* Sort n elements whose key is the u64 they start with (functions, variables,
 * allocation sites) and keep the first of each key (cmp orders the preferred
 * one first).  Returns the new count. */
static size_t sort_first_per_key(void *v, size_t n, size_t elem, int (*cmp)(const void *, const void *))
{
	if (!n)
		return 0;
	qsort(v, n, elem, cmp);
	char *p = v;
	size_t o = 1;
	for (size_t i = 1; i < n; i++)
		if (memcmp(p + (o - 1) * elem, p + i * elem, sizeof(uint64_t))) {
			if (o != i)
				memcpy(p + o * elem, p + i * elem, elem);
			o++;
		}
	return o;
}

_Static_assert(offsetof(struct st_func, start) == 0 && offsetof(struct st_var, addr) == 0 &&
               offsetof(struct st_alloc, site) == 0, "sort_first_per_key: keys first");

static void module_finish(struct st_module *m)
{
	m->nfuncs = sort_first_per_key(m->funcs, m->nfuncs, sizeof *m->funcs, cmp_func);
	if (m->nlines) {
		qsort(m->lines, m->nlines, sizeof *m->lines, cmp_line);
		size_t o = 0;
		for (size_t i = 0; i < m->nlines; i++) {
			struct st_line *l = &m->lines[i];
			if (!l->len)
				continue;
			if (o && m->lines[o - 1].addr == l->addr)
				continue;
			/* cut an overlapping predecessor */
			if (o && m->lines[o - 1].addr + m->lines[o - 1].len > l->addr)
				m->lines[o - 1].len = (uint32_t)(l->addr - m->lines[o - 1].addr);
			m->lines[o++] = *l;
		}
		m->nlines = o;
	}
	m->nvars = sort_first_per_key(m->vars, m->nvars, sizeof *m->vars, cmp_var);
	m->nallocs = sort_first_per_key(m->allocs, m->nallocs, sizeof *m->allocs, cmp_alloc);
}

void symtab_finish(struct symtab *s)
{
	for (size_t i = 0; i < s->n; i++)
		module_finish(s->mods[i]);
	if (s->n > 1)
		qsort(s->mods, s->n, sizeof *s->mods, cmp_mod);
}

/* ---- the tables of a module, as the SYMBOLS payload lays them out --------------
 * Each table is a u32 count, then that many records of little-endian fields
 * (FORMAT.md, "SYMBOLS"); one description serves the writer and the reader. */

struct st_field {
	uint8_t bytes;             /* 1, 4 or 8 */
	uint8_t off;               /* offset in the element */
};

#define FIELD(type, member) { sizeof(((type *)0)->member), offsetof(type, member) }
#define MAX_FIELDS 7

struct st_table {
	const char *what;          /* for messages: "file", "function", ... */
	size_t elem;               /* bytes of one element in memory */
	size_t v, n, cap;          /* offsets in struct st_module: array, count, capacity */
	struct st_field f[MAX_FIELDS];
	unsigned nf;
};

#define TABLE(what, type, arr, cnt, cap, ...) \
	{ what, sizeof(type), offsetof(struct st_module, arr), offsetof(struct st_module, cnt), \
	  offsetof(struct st_module, cap), { __VA_ARGS__ }, \
	  sizeof((struct st_field[]){ __VA_ARGS__ }) / sizeof(struct st_field) }

static const struct st_table tables[] = {
	TABLE("file", uint32_t, files, nfiles, cap_files, { 4, 0 }),
	TABLE("function", struct st_func, funcs, nfuncs, cap_funcs,
	      FIELD(struct st_func, start), FIELD(struct st_func, size), FIELD(struct st_func, name)),
	TABLE("line", struct st_line, lines, nlines, cap_lines,
	      FIELD(struct st_line, addr), FIELD(struct st_line, len), FIELD(struct st_line, file),
	      FIELD(struct st_line, line)),
	TABLE("type", struct st_type, types, ntypes, cap_types,
	      FIELD(struct st_type, kind), FIELD(struct st_type, name), FIELD(struct st_type, size),
	      FIELD(struct st_type, elem), FIELD(struct st_type, count),
	      FIELD(struct st_type, first_member), FIELD(struct st_type, nmembers)),
	TABLE("member", struct st_member, members, nmembers, cap_members,
	      FIELD(struct st_member, name), FIELD(struct st_member, offset),
	      FIELD(struct st_member, size), FIELD(struct st_member, type)),
	TABLE("variable", struct st_var, vars, nvars, cap_vars,
	      FIELD(struct st_var, addr), FIELD(struct st_var, size), FIELD(struct st_var, name),
	      FIELD(struct st_var, type)),
	/* payload version 2 */
	TABLE("allocation site", struct st_alloc, allocs, nallocs, cap_allocs,
	      FIELD(struct st_alloc, site), FIELD(struct st_alloc, name),
	      FIELD(struct st_alloc, type)),
};
#define NTABLES (sizeof tables / sizeof tables[0])
/* The tables a payload version has: version 1 lacks the last one. */
static size_t ntables(unsigned version)
{
	return version >= 2 ? NTABLES : NTABLES - 1;
}

static void **table_array(const struct st_table *t, const struct st_module *m)
{
	return (void **)((char *)m + t->v);
}

static size_t *table_count(const struct st_module *m, size_t off)
{
	return (size_t *)((char *)m + off);
}

static size_t record_bytes(const struct st_table *t)
{
	size_t n = 0;
	for (unsigned i = 0; i < t->nf; i++)
		n += t->f[i].bytes;
	return n;
}

static uint64_t field_get(const void *elem, struct st_field f)
{
	const char *p = (const char *)elem + f.off;
	switch (f.bytes) {
	case 1: return *(const uint8_t *)p;
	case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
	default: { uint64_t v; memcpy(&v, p, 8); return v; }
	}
}

static void field_set(void *elem, struct st_field f, uint64_t v)
{
	char *p = (char *)elem + f.off;
	switch (f.bytes) {
	case 1: *(uint8_t *)p = (uint8_t)v; break;
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: memcpy(p, &v, 8); break;
	}
}

/* ---- serialization -------------------------------------------------------- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void wb_put(struct wbuf *w, const void *src, size_t n)
{
	if (w->err)
		return;
	if (w->len + n > w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 65536;
		while (nc < w->len + n)
			nc *= 2;
		uint8_t *q = realloc(w->p, nc);
		if (!q) {
			w->err = 1;
			return;
		}
		w->p = q;
		w->cap = nc;
	}
	if (n) /* src may be NULL for an empty field */
		memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void wb_u8(struct wbuf *w, uint8_t v)
{
	wb_put(w, &v, 1);
}

static void wb_u16(struct wbuf *w, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
	wb_put(w, b, 2);
}

static void wb_u32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	wb_put(w, b, 4);
}

static void wb_u64(struct wbuf *w, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	wb_put(w, b, 8);
}

static void put_u32_at(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void write_table(struct wbuf *w, const struct st_table *t, const struct st_module *m)
{
	size_t n = *table_count(m, t->n);
	const char *v = *table_array(t, m);
	wb_u32(w, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < t->nf; k++) {
			uint64_t x = field_get(v + i * t->elem, t->f[k]);
			if (t->f[k].bytes == 1)
				wb_u8(w, (uint8_t)x);
			else if (t->f[k].bytes == 4)
				wb_u32(w, (uint32_t)x);
			else
				wb_u64(w, x);
		}
}

int symtab_serialize(const struct symtab *s, void **out, size_t *len)
{
	struct wbuf w = { 0 };
	wb_u32(&w, SYMTAB_MAGIC);
	wb_u16(&w, SYMTAB_VERSION);
	wb_u16(&w, 0);
	wb_u32(&w, (uint32_t)s->n);
	for (size_t k = 0; k < s->n; k++) {
		const struct st_module *m = s->mods[k];
		size_t at = w.len;
		wb_u32(&w, 0);   /* body length, patched below */
		size_t pl = strlen(m->path);
		if (pl > 4095)
			pl = 4095;
		wb_u16(&w, (uint16_t)pl);
		wb_put(&w, m->path, pl);
		wb_u8(&w, m->buildid_len);
		wb_put(&w, m->buildid, m->buildid_len);
		wb_u64(&w, m->bias);
		wb_u64(&w, m->lo);
		wb_u64(&w, m->hi);
		wb_u32(&w, m->flags);
		wb_u32(&w, (uint32_t)m->str_len);
		wb_put(&w, m->str, m->str_len);
		for (size_t k2 = 0; k2 < NTABLES; k2++)
			write_table(&w, &tables[k2], m);
		if (!w.err)
			put_u32_at(w.p + at, (uint32_t)(w.len - at - 4));
	}
	if (w.err) {
		free(w.p);
		return -1;
	}
	*out = w.p;
	*len = w.len;
	return 0;
}

/* ---- parsing (untrusted input) -------------------------------------------- */

struct rbuf {
	const uint8_t *p, *end;
	int bad;
};

static bool rb_need(struct rbuf *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return false;
	}
	return true;
}

static uint64_t rb_le(struct rbuf *r, int n)
{
	if (!rb_need(r, (size_t)n))
		return 0;
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}
#define rb_u8(r) ((uint8_t)rb_le(r, 1))
#define rb_u16(r) ((uint16_t)rb_le(r, 2))
#define rb_u32(r) ((uint32_t)rb_le(r, 4))
#define rb_u64(r) rb_le(r, 8)

/* A count of items of `size` bytes each that must fit in what is left. */
static bool rb_count(struct rbuf *r, size_t size, uint32_t *n)
{
	*n = rb_u32(r);
	if (r->bad || *n > ST_MAX_ITEMS || (size_t)(r->end - r->p) / size < *n) {
		r->bad = 1;
		return false;
	}
	return true;
}

#define FAIL(...) do { snprintf(err, errcap, __VA_ARGS__); goto fail; } while (0)

static bool str_ok(const struct st_module *m, uint32_t off, bool none_ok)
{
	return (none_ok && off == ST_NONE) || off < m->str_len;
}

/* One table: its count (checked against what is left), the allocation, the
 * records.  -1 on a bad count or no memory. */
static int read_table(struct rbuf *r, const struct st_table *t, struct st_module *m)
{
	uint32_t n;
	if (!rb_count(r, record_bytes(t), &n))
		return -1;
	void **v = table_array(t, m);
	if (n && !(*v = malloc(n * t->elem)))
		return -1;
	*table_count(m, t->n) = *table_count(m, t->cap) = n;
	for (uint32_t i = 0; i < n; i++) {
		char *e = (char *)*v + i * t->elem;
		memset(e, 0, t->elem);
		for (unsigned k = 0; k < t->nf; k++)
			field_set(e, t->f[k], rb_le(r, t->f[k].bytes));
	}
	return 0;
}

/* The references between the tables (string offsets, indices, ranges):
 * every one inside what it points into. */
static int check_tables(const struct st_module *m, char *err, size_t errcap)
{
	for (size_t i = 0; i < m->nfiles; i++)
		if (!str_ok(m, m->files[i], false))
			FAIL("file %zu: bad name offset", i);
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct st_func *f = &m->funcs[i];
		if (!str_ok(m, f->name, false))
			FAIL("function %zu: bad name offset", i);
		if (f->start + f->size < f->start)
			FAIL("function %zu: size wraps", i);
	}
	for (size_t i = 0; i < m->nlines; i++) {
		const struct st_line *l = &m->lines[i];
		if (l->file != ST_NONE && l->file >= m->nfiles)
			FAIL("line %zu: bad file index", i);
		if (l->addr + l->len < l->addr)
			FAIL("line %zu: range wraps", i);
	}
	for (size_t i = 0; i < m->nmembers; i++) {
		const struct st_member *mb = &m->members[i];
		if (!str_ok(m, mb->name, true))
			FAIL("member %zu: bad name offset", i);
		if (mb->type != ST_NONE && mb->type >= m->ntypes)
			FAIL("member %zu: bad type index", i);
	}
	for (size_t i = 0; i < m->ntypes; i++) {
		const struct st_type *t = &m->types[i];
		if (t->kind > ST_T_KIND_MAX)
			FAIL("type %zu: unknown kind %u", i, t->kind);
		if (!str_ok(m, t->name, true))
			FAIL("type %zu: bad name offset", i);
		if (t->elem != ST_NONE && t->elem >= m->ntypes)
			FAIL("type %zu: bad element type", i);
		if (t->first_member > m->nmembers || t->nmembers > m->nmembers - t->first_member)
			FAIL("type %zu: bad member range", i);
	}
	for (size_t i = 0; i < m->nvars; i++) {
		const struct st_var *v = &m->vars[i];
		if (!str_ok(m, v->name, false))
			FAIL("variable %zu: bad name offset", i);
		if (v->type != ST_NONE && v->type >= m->ntypes)
			FAIL("variable %zu: bad type index", i);
		if (v->addr + v->size < v->addr)
			FAIL("variable %zu: size wraps", i);
	}
	for (size_t i = 0; i < m->nallocs; i++) {
		if (!str_ok(m, m->allocs[i].name, true))
			FAIL("allocation site %zu: bad name offset", i);
		if (m->allocs[i].type != ST_NONE && m->allocs[i].type >= m->ntypes)
			FAIL("allocation site %zu: bad type index", i);
	}
	return 0;
fail:
	return -1;
}

static int parse_module(struct st_module *m, struct rbuf *r, unsigned version, char *err,
                        size_t errcap)
{
	uint16_t pl = rb_u16(r);
	if (!rb_need(r, pl) || pl > 4095)
		FAIL("bad path length");
	char *path = malloc((size_t)pl + 1);
	if (!path)
		FAIL("out of memory");
	memcpy(path, r->p, pl);
	path[pl] = 0;
	r->p += pl;
	free(m->path);
	m->path = path;
	if (strlen(path) != pl)
		FAIL("NUL in module path");
	m->buildid_len = rb_u8(r);
	if (m->buildid_len > BUILDID_MAX || !rb_need(r, m->buildid_len))
		FAIL("bad build-id length");
	memcpy(m->buildid, r->p, m->buildid_len);
	r->p += m->buildid_len;
	m->bias = rb_u64(r);
	m->lo = rb_u64(r);
	m->hi = rb_u64(r);
	m->flags = rb_u32(r);
	uint32_t sl = rb_u32(r);
	if (r->bad || sl > ST_MAX_STRTAB || !rb_need(r, sl))
		FAIL("bad string table length");
	if (m->lo > m->hi)
		FAIL("module range ends before it starts");
	if (sl && r->p[sl - 1] != 0)
		FAIL("string table not NUL-terminated");
	m->str = malloc(sl ? sl : 1);
	if (!m->str)
		FAIL("out of memory");
	memcpy(m->str, r->p, sl);
	m->str_len = m->str_cap = sl;
	r->p += sl;

	for (size_t k = 0; k < ntables(version); k++)
		if (read_table(r, &tables[k], m) < 0)
			FAIL("bad %s count", tables[k].what);
	if (check_tables(m, err, errcap) < 0)
		return -1;
	if (r->bad)
		FAIL("truncated");
	if (r->p != r->end)
		FAIL("%zu bytes left over", (size_t)(r->end - r->p));
	module_finish(m);
	return 0;
fail:
	return -1;
}

int symtab_parse(struct symtab *s, const void *buf, size_t len, char *err, size_t errcap)
{
	struct rbuf r = { buf, (const uint8_t *)buf + len, 0 };
	uint32_t magic = rb_u32(&r);
	uint16_t ver = rb_u16(&r);
	(void)rb_u16(&r);   /* flags */
	uint32_t n = rb_u32(&r);
	if (r.bad) {
		snprintf(err, errcap, "symbols: payload too short (%zu bytes)", len);
		return -1;
	}
	if (magic != SYMTAB_MAGIC) {
		snprintf(err, errcap, "symbols: bad magic 0x%08x", magic);
		return -1;
	}
	if (ver < SYMTAB_VERSION_MIN || ver > SYMTAB_VERSION) {
		snprintf(err, errcap, "symbols: version %u not supported (this reader knows %u to %u)",
		         ver, SYMTAB_VERSION_MIN, SYMTAB_VERSION);
		return -1;
	}
	if (n > ST_MAX_MODULES) {
		snprintf(err, errcap, "symbols: too many modules (%u)", n);
		return -1;
	}
	for (uint32_t k = 0; k < n; k++) {
		size_t off = (size_t)(r.p - (const uint8_t *)buf);
		uint32_t bl = rb_u32(&r);
		if (r.bad || !rb_need(&r, bl)) {
			snprintf(err, errcap, "symbols: module %u at byte %zu: length %u beyond the end",
			         k, off, bl);
			goto fail;
		}
		struct st_module *m = symtab_add_module(s, "");
		if (!m) {
			snprintf(err, errcap, "symbols: out of memory");
			goto fail;
		}
		struct rbuf mr = { r.p, r.p + bl, 0 };
		char why[200];
		if (parse_module(m, &mr, ver, why, sizeof why)) {
			snprintf(err, errcap, "symbols: module %u at byte %zu: %s", k, off, why);
			module_free(m);
			s->n--;
			goto fail;
		}
		r.p += bl;
	}
	if (r.p != r.end) {
		snprintf(err, errcap, "symbols: %zu bytes after the last module",
		         (size_t)(r.end - r.p));
		goto fail;
	}
	symtab_finish(s);
	return 0;
fail:
	symtab_finish(s);
	return -1;
}

/* ---- lookups ------------------------------------------------------------- */

const struct st_module *symtab_module(const struct symtab *s, uint64_t addr)
{
	/* last module with lo <= addr; ranges may nest (rare), so look back a bit */
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->mods[mid]->lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++)
		if (addr >= s->mods[i]->lo && addr < s->mods[i]->hi)
			return s->mods[i];
	return NULL;
}

static const struct st_func *find_func(const struct st_module *m, uint64_t a)
{
	size_t lo = 0, hi = m->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->funcs[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct st_func *f = &m->funcs[lo - 1];
	/* an unsized symbol runs to the next function (never past the last) */
	if (f->size ? a < f->start + f->size : (lo < m->nfuncs && a < m->funcs[lo].start))
		return f;
	/* nested: a sized function before may still contain it */
	for (size_t i = lo - 1, k = 0; i-- > 0 && k < 4; k++)
		if (m->funcs[i].size && a < m->funcs[i].start + m->funcs[i].size)
			return &m->funcs[i];
	return NULL;
}

const struct st_func *symtab_func(const struct st_module *m, uint64_t file_addr)
{
	return find_func(m, file_addr);
}

static const struct st_line *find_line(const struct st_module *m, uint64_t a)
{
	size_t lo = 0, hi = m->nlines;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->lines[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct st_line *l = &m->lines[lo - 1];
	return a - l->addr < l->len ? l : NULL;
}

bool symtab_code(const struct symtab *s, uint64_t addr, struct st_code *out)
{
	memset(out, 0, sizeof *out);
	const struct st_module *m = symtab_module(s, addr);
	if (!m)
		return false;
	out->mod = m;
	uint64_t a = addr - m->bias;
	const struct st_func *f = find_func(m, a);
	if (f) {
		out->func = st_str(m, f->name);
		out->func_off = a - f->start;
	}
	const struct st_line *l = find_line(m, a);
	if (l) {
		out->file = l->file < m->nfiles ? st_str(m, m->files[l->file]) : NULL;
		out->line = l->line;
	}
	return true;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

const char *symtab_code_str(const struct symtab *s, uint64_t addr, bool with_offset,
                            char *buf, size_t cap)
{
	struct st_code c;
	if (!s || !symtab_code(s, addr, &c)) {
		snprintf(buf, cap, "0x%" PRIx64, addr);
		return buf;
	}
	char where[300] = "";
	if (c.file)
		snprintf(where, sizeof where, " (%s:%u)", base_name(c.file), c.line);
	if (c.func && with_offset && c.func_off)
		snprintf(buf, cap, "%s+0x%" PRIx64 "%s", c.func, c.func_off, where);
	else if (c.func)
		snprintf(buf, cap, "%s%s", c.func, where);
	else
		snprintf(buf, cap, "%s+0x%" PRIx64 "%s", base_name(c.mod->path),
		         addr - c.mod->bias, where);
	return buf;
}

static void app(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void app(char *out, size_t cap, const char *fmt, ...)
{
	if (!out)
		return;
	size_t l = strlen(out);
	if (l + 1 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + l, cap - l, fmt, ap);
	va_end(ap);
}

uint64_t symtab_type_path(const struct st_module *m, uint32_t t, uint64_t off,
                          char *out, size_t cap, uint64_t *leaf_size,
                          const char **field, const char **field_type)
{
	uint64_t base = 0;
	*leaf_size = 0;
	for (int depth = 0; depth < ST_TYPE_DEPTH_MAX && t < m->ntypes; depth++) {
		const struct st_type *ty = &m->types[t];
		*leaf_size = ty->size;
		if (ty->kind == ST_T_ARRAY) {
			if (ty->elem >= m->ntypes)
				break;
			uint64_t es = m->types[ty->elem].size;
			if (!es)
				break;
			uint64_t i = off / es;
			if (ty->count && i >= ty->count)
				break;
			app(out, cap, "[%" PRIu64 "]", i);
			base += i * es;
			off -= i * es;
			t = ty->elem;
			continue;
		}
		if (ty->kind != ST_T_STRUCT && ty->kind != ST_T_UNION)
			break;
		/* the member containing off (the last one starting at or before it,
		 * that covers it; unions: the first covering member) */
		const struct st_member *best = NULL;
		for (uint32_t i = 0; i < ty->nmembers; i++) {
			const struct st_member *mb = &m->members[ty->first_member + i];
			uint64_t ms = mb->size;
			if (mb->offset <= off && (off - mb->offset < ms || (!ms && !best))) {
				if (!best || mb->offset > best->offset)
					best = mb;
				if (ty->kind == ST_T_UNION)
					break;
			}
		}
		if (!best)
			break;   /* padding */
		const char *n = st_str(m, best->name);
		if (n)
			app(out, cap, ".%s", n);
		if (field && n)
			*field = n;
		if (field_type)
			*field_type = st_str(m, ty->name);
		base += best->offset;
		off -= best->offset;
		*leaf_size = best->size;
		t = best->type;
		if (t == ST_NONE)
			break;
	}
	return base;
}

static const struct st_var *find_var(const struct st_module *m, uint64_t a)
{
	size_t lo = 0, hi = m->nvars;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->vars[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i-- > 0 && k < 4; k++) {
		const struct st_var *v = &m->vars[i];
		if (a - v->addr < (v->size ? v->size : 1))
			return v;
	}
	return NULL;
}

const struct st_var *symtab_var(const struct symtab *s, uint64_t addr,
                                const struct st_module **mod)
{
	const struct st_module *m = s ? symtab_module(s, addr) : NULL;
	if (mod)
		*mod = m;
	return m ? find_var(m, addr - m->bias) : NULL;
}

bool symtab_data(const struct symtab *s, uint64_t addr, struct st_data *out)
{
	memset(out, 0, sizeof *out);
	const struct st_module *m = s ? symtab_module(s, addr) : NULL;
	if (!m)
		return false;
	out->mod = m;
	uint64_t a = addr - m->bias;
	const struct st_var *v = find_var(m, a);
	if (!v)
		return true;
	out->var = v;
	out->name = st_str(m, v->name);
	out->var_off = a - v->addr;
	snprintf(out->path, sizeof out->path, "%s", out->name ? out->name : "?");
	out->field_off = 0;
	out->field_size = v->size;
	if (v->type < m->ntypes) {
		const struct st_type *t = &m->types[v->type];
		out->type_name = st_str(m, t->name);
		if (!out->type_name && t->kind == ST_T_ARRAY) {
			/* "struct cell[8]", "long int[4][2]" */
			char dims[64] = "";
			const struct st_type *e = t;
			for (int k = 0; k < 4 && e->kind == ST_T_ARRAY && e->elem < m->ntypes; k++) {
				app(dims, sizeof dims, "[%" PRIu64 "]", e->count);
				e = &m->types[e->elem];
			}
			const char *en = e->kind == ST_T_ARRAY ? NULL : st_str(m, e->name);
			snprintf(out->type_buf, sizeof out->type_buf, "%s%s", en ? en : "?", dims);
			out->type_name = out->type_buf;
		}
		uint64_t leaf_size;
		out->field_off = symtab_type_path(m, v->type, out->var_off, out->path,
		                                  sizeof out->path, &leaf_size, &out->field,
		                                  &out->field_type);
		out->field_size = leaf_size;
	}
	out->leaf_off = out->var_off - out->field_off;
	return true;
}

const struct st_alloc *symtab_alloc(const struct st_module *m, uint64_t file_addr)
{
	size_t a = 0, b = m->nallocs;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (m->allocs[mid].site < file_addr)
			a = mid + 1;
		else
			b = mid;
	}
	return a < m->nallocs && m->allocs[a].site == file_addr ? &m->allocs[a] : NULL;
}

uint64_t symtab_block_path(const struct st_module *m, const struct st_alloc *al,
                           uint64_t block_size, uint64_t off, char *out, size_t cap,
                           uint64_t *leaf_size)
{
	if (out && cap)
		app(out, cap, "%s", al->name != ST_NONE && st_str(m, al->name) ? st_str(m, al->name) : "");
	uint64_t es = al->type < m->ntypes ? m->types[al->type].size : 0;
	if (!es) {
		*leaf_size = 0;
		return off;
	}
	uint64_t base = 0;
	if (block_size > es) {   /* p = malloc(n * sizeof *p): an array */
		app(out, cap, "[%" PRIu64 "]", off / es);
		base = off / es * es;
		off %= es;
	}
	return base + symtab_type_path(m, al->type, off, out, cap, leaf_size, NULL, NULL);
}

/* ---- pruning ------------------------------------------------------------------- */

static uint32_t copy_type(struct st_module *to, const struct st_module *from, uint32_t t,
                          uint32_t *map, int depth)
{
	if (t >= from->ntypes)
		return ST_NONE;
	if (map[t] != ST_NONE)
		return map[t];
	if (depth > ST_TYPE_DEPTH_MAX)
		return ST_NONE;
	const struct st_type *ty = &from->types[t];
	uint32_t elem = ty->elem != ST_NONE ? copy_type(to, from, ty->elem, map, depth + 1) : ST_NONE;
	uint32_t n = ty->nmembers, *mt = NULL;
	if (n && !(mt = malloc(n * sizeof *mt)))
		return ST_NONE;
	for (uint32_t i = 0; i < n; i++)
		mt[i] = copy_type(to, from, from->members[ty->first_member + i].type, map, depth + 1);
	if (map[t] != ST_NONE) {   /* reached through a member (hostile cycle) */
		free(mt);
		return map[t];
	}
	uint32_t nt = st_add_type(to, ty->kind, st_str(from, ty->name), ty->size, elem, ty->count);
	for (uint32_t i = 0; nt != ST_NONE && i < n; i++) {
		const struct st_member *mb = &from->members[ty->first_member + i];
		st_add_member(to, nt, st_str(from, mb->name), mb->offset, mb->size, mt[i]);
	}
	free(mt);
	map[t] = nt;
	return nt;
}

bool symtab_addrs_in(const struct st_addrs *s, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = s->n;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (s->v[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < s->n && s->v[a] < hi;
}

/* Keep only what the given (runtime) addresses need. */
static int prune_module(struct st_module *m, const struct st_addrs *ips, const struct st_addrs *data)
{
	struct st_module n;
	memset(&n, 0, sizeof n);
	n.flags = m->flags;
	int rc = -1;
	uint32_t *map = NULL;
	if (m->ntypes && !(map = malloc(m->ntypes * sizeof *map)))
		return -1;
	for (size_t i = 0; i < m->ntypes; i++)
		map[i] = ST_NONE;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct st_func *f = &m->funcs[i];
		uint64_t hi = f->size ? f->start + f->size
		            : i + 1 < m->nfuncs ? m->funcs[i + 1].start : f->start + 1;
		if (ips && !symtab_addrs_in(ips, f->start + m->bias, hi + m->bias))
			continue;
		if (st_add_func(&n, f->start, f->size, st_str(m, f->name)))
			goto out;
		/* an unsized symbol needs its successor to stay bounded */
		if (!f->size && i + 1 < m->nfuncs &&
		    st_add_func(&n, m->funcs[i + 1].start, m->funcs[i + 1].size,
		                st_str(m, m->funcs[i + 1].name)))
			goto out;
	}
	for (size_t i = 0; i < m->nlines; i++) {
		const struct st_line *l = &m->lines[i];
		if (ips && !symtab_addrs_in(ips, l->addr + m->bias, l->addr + l->len + m->bias))
			continue;
		uint32_t f = l->file < m->nfiles ? st_add_file(&n, st_str(m, m->files[l->file])) : ST_NONE;
		if (st_add_line(&n, l->addr, l->len, f, l->line))
			goto out;
	}
	for (size_t i = 0; i < m->nvars; i++) {
		const struct st_var *v = &m->vars[i];
		if (data && !symtab_addrs_in(data, v->addr + m->bias, v->addr + (v->size ? v->size : 1) + m->bias))
			continue;
		uint32_t t = copy_type(&n, m, v->type, map, 0);
		if (st_add_var(&n, v->addr, v->size, st_str(m, v->name), t))
			goto out;
	}
	/* allocation sites are inferred only for recorded call sites: all kept */
	for (size_t i = 0; i < m->nallocs; i++)
		if (st_add_alloc(&n, m->allocs[i].site, st_str(m, m->allocs[i].name),
		                 copy_type(&n, m, m->allocs[i].type, map, 0)))
			goto out;
	/* swap the tables, keep identity */
	free(m->str);
	free(m->files);
	free(m->funcs);
	free(m->lines);
	free(m->vars);
	free(m->types);
	free(m->members);
	free(m->allocs);
	free(m->strhash);
#define TAKE(f) m->f = n.f
	TAKE(str); TAKE(str_len); TAKE(str_cap); TAKE(files); TAKE(nfiles); TAKE(cap_files);
	TAKE(funcs); TAKE(nfuncs); TAKE(cap_funcs); TAKE(lines); TAKE(nlines); TAKE(cap_lines);
	TAKE(vars); TAKE(nvars); TAKE(cap_vars); TAKE(types); TAKE(ntypes); TAKE(cap_types);
	TAKE(members); TAKE(nmembers); TAKE(cap_members); TAKE(allocs); TAKE(nallocs);
	TAKE(cap_allocs); TAKE(strhash); TAKE(strhash_cap);
	TAKE(strhash_n);
#undef TAKE
	memset(&n, 0, sizeof n);
	module_finish(m);
	rc = 0;
out:
	free(map);
	free(n.str);
	free(n.files);
	free(n.funcs);
	free(n.lines);
	free(n.vars);
	free(n.types);
	free(n.members);
	free(n.allocs);
	free(n.strhash);
	return rc;
}

int symtab_prune(struct symtab *s, const struct st_addrs *ips, const struct st_addrs *data)
{
	for (size_t i = 0; i < s->n; i++)
		if (prune_module(s->mods[i], ips, data))
			return -1;
	return 0;
}

/* ---- memory maps ------------------------------------------------------------ */

int symtab_maps_line(const char *line, size_t len, struct st_mapping *out)
{
	char buf[4352];
	if (len >= sizeof buf)
		return -1;
	memcpy(buf, line, len);
	buf[len] = 0;
	unsigned long long start, end, off;
	char perms[8], bid[2 * BUILDID_MAX + 1];
	int n = 0;
	if (sscanf(buf, "%llx-%llx %7s %llx %128s %n", &start, &end, perms, &off, bid, &n) < 5)
		return -1;
	if (end < start)
		return -1;
	memset(out, 0, sizeof *out);
	out->start = start;
	out->end = end;
	out->offset = off;
	out->exec = strchr(perms, 'x') != NULL;
	snprintf(out->buildid, sizeof out->buildid, "%s", bid);
	const char *p = n ? buf + n : "";
	while (*p == ' ')
		p++;
	snprintf(out->path, sizeof out->path, "%s", p);
	return 0;
}

bool symtab_mapping_is_file(const struct st_mapping *m)
{
	return m->path[0] == '/' && !strstr(m->path, " (deleted)");
}

static int cmp_vrange(const void *x, const void *y)
{
	uint64_t a = ((const struct st_range *)x)->lo, b = ((const struct st_range *)y)->lo;
	return a < b ? -1 : a > b;
}

int symtab_each_mapping(const char *text, size_t len,
                        int (*f)(void *arg, const struct st_mapping *m), void *arg)
{
	struct st_mapping m;
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		int rc = symtab_maps_line(p, l, &m) == 0 ? f(arg, &m) : 0;
		if (rc)
			return rc;
		p += l + 1;
	}
	return 0;
}

/* What symtab_var_ranges gathers: the modules' paths (files with an
 * executable mapping: a few dozen), then their mappings' ranges and ends,
 * and the anonymous mappings (candidates for a .bss). */
struct var_scan {
	char **mods;
	size_t nmod, capmod;
	struct st_range *file, *anon;
	size_t nfile, capfile, nanon, capanon;
};

static bool is_module_path(const struct var_scan *v, const char *path)
{
	for (size_t i = 0; i < v->nmod; i++)
		if (!strcmp(v->mods[i], path))
			return true;
	return false;
}

static int scan_modules(void *arg, const struct st_mapping *m)
{
	struct var_scan *v = arg;
	if (!m->exec || !symtab_mapping_is_file(m) || is_module_path(v, m->path))
		return 0;
	char *d = strdup(m->path);
	if (!d || GROW(v, mods, nmod, capmod)) {
		free(d);
		return -1;
	}
	v->mods[v->nmod++] = d;
	return 0;
}

static int scan_ranges(void *arg, const struct st_mapping *m)
{
	struct var_scan *v = arg;
	struct st_range r = { m->start, m->end };
	if (symtab_mapping_is_file(m)) {
		if (!is_module_path(v, m->path))
			return 0;
		if (GROW(v, file, nfile, capfile))
			return -1;
		v->file[v->nfile++] = r;
	} else if (!m->path[0] || !strcmp(m->path, "[heap]")) {
		/* the kernel joins a .bss and a brk heap that starts right after
		 * it (address randomization off) into one mapping named [heap] */
		if (GROW(v, anon, nanon, capanon))
			return -1;
		v->anon[v->nanon++] = r;
	}
	return 0;
}

static int cmp_range_hi(const void *x, const void *y)
{
	uint64_t a = ((const struct st_range *)x)->hi, b = ((const struct st_range *)y)->hi;
	return a < b ? -1 : a > b;
}

/* Whether one of the n ranges (sorted by hi) ends at x. */
static bool ends_at(const struct st_range *v, size_t n, uint64_t x)
{
	struct st_range key = { 0, x };
	return bsearch(&key, v, n, sizeof *v, cmp_range_hi) != NULL;
}

/* r's ranges sorted, and the overlapping or touching ones joined. */
static void ranges_merge(struct st_ranges *r)
{
	qsort(r->v, r->n, sizeof *r->v, cmp_vrange);
	size_t o = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (o && r->v[i].lo <= r->v[o - 1].hi) {
			if (r->v[i].hi > r->v[o - 1].hi)
				r->v[o - 1].hi = r->v[i].hi;
		} else {
			r->v[o++] = r->v[i];
		}
	}
	r->n = o;
}

int symtab_var_ranges(struct st_ranges *r, const char *text, size_t len)
{
	struct var_scan v = { 0 };
	int rc = symtab_each_mapping(text, len, scan_modules, &v);
	if (!rc)
		rc = symtab_each_mapping(text, len, scan_ranges, &v);
	r->n = r->last = 0;
	r->v = rc ? NULL : malloc((v.nfile + v.nanon + 1) * sizeof *r->v);
	if (r->v) {
		qsort(v.file, v.nfile, sizeof *v.file, cmp_range_hi);
		memcpy(r->v, v.file, v.nfile * sizeof *v.file);
		r->n = v.nfile;
		for (size_t i = 0; i < v.nanon; i++)
			if (ends_at(v.file, v.nfile, v.anon[i].lo))
				r->v[r->n++] = v.anon[i];
		ranges_merge(r);
	}
	for (size_t i = 0; i < v.nmod; i++)
		free(v.mods[i]);
	free(v.mods);
	free(v.file);
	free(v.anon);
	return r->v ? 0 : -1;
}

bool symtab_ranges_has(struct st_ranges *r, uint64_t x)
{
	if (r->n && x >= r->v[r->last].lo && x < r->v[r->last].hi)
		return true;
	size_t lo = 0, hi = r->n;   /* the first range with lo > x is at hi */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->v[mid].lo <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || x >= r->v[lo - 1].hi)
		return false;
	r->last = lo - 1;
	return true;
}
