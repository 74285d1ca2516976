/* Symbol tables (formats/symtab.h): lookups on a hand-built table, the
 * SYMBOLS payload round trip, and malformed payloads refused cleanly. */
#include <stdlib.h>

#include "check.h"
#include "symtab.h"

/* A module like a small program loaded at bias 0x10000:
 *   funcs main [0x1000,0x1100), worker [0x1100,0x1180), unsized tail 0x1200
 *   struct queue { long lock; long count; } q @0x4000
 *   struct cell { long x; long y; } cells[8] @0x4100
 *   int plain @0x4200 (from the ELF symbol table: no type)
 *   allocation sites (return addresses): 0x1050 struct cell stored to
 *   `blocks`, 0x1060 struct queue with no variable (a constructor's) */
static void build(struct symtab *s)
{
	symtab_init(s);
	struct st_module *m = symtab_add_module(s, "/bin/app");
	m->lo = 0x10000;
	m->hi = 0x20000;
	m->bias = 0x10000;
	m->buildid_len = 4;
	memcpy(m->buildid, "\x01\x02\x03\x04", 4);
	st_add_func(m, 0x1100, 0x80, "worker");
	st_add_func(m, 0x1000, 0x100, "main");
	st_add_func(m, 0x1200, 0, "tail");
	st_add_func(m, 0x1300, 0x10, "last");
	uint32_t f = st_add_file(m, "/src/app.c");
	st_add_line(m, 0x1000, 0x10, f, 10);
	st_add_line(m, 0x1010, 0x20, f, 11);
	st_add_line(m, 0x1100, 0x8, f, 40);
	uint32_t tlong = st_add_type(m, ST_T_BASE, "long int", 8, ST_NONE, 0);
	uint32_t tq = st_add_type(m, ST_T_STRUCT, "struct queue", 16, ST_NONE, 0);
	st_add_member(m, tq, "lock", 0, 8, tlong);
	st_add_member(m, tq, "count", 8, 8, tlong);
	uint32_t tc = st_add_type(m, ST_T_STRUCT, "struct cell", 16, ST_NONE, 0);
	st_add_member(m, tc, "x", 0, 8, tlong);
	st_add_member(m, tc, "y", 8, 8, tlong);
	uint32_t ta = st_add_type(m, ST_T_ARRAY, NULL, 128, tc, 8);
	st_add_var(m, 0x4000, 16, "q", tq);
	st_add_var(m, 0x4100, 128, "cells", ta);
	st_add_var(m, 0x4200, 4, "plain", ST_NONE);
	st_add_alloc(m, 0x1060, NULL, tq);
	st_add_alloc(m, 0x1050, "blocks", tc);
	struct st_module *l = symtab_add_module(s, "/lib/libx.so");
	l->lo = 0x7f0000;
	l->hi = 0x800000;
	l->bias = 0x7f0000;
	st_add_func(l, 0x100, 0x10, "x_func");
	symtab_finish(s);
}

static void check_lookups(const struct symtab *s)
{
	struct st_code c;
	CHECK(symtab_code(s, 0x11010, &c));
	CHECK_STR(c.func, "main");
	CHECK_EQ_U(c.func_off, 0x10);
	CHECK_STR(c.file, "/src/app.c");
	CHECK_EQ_U(c.line, 11);
	CHECK(symtab_code(s, 0x11104, &c));
	CHECK_STR(c.func, "worker");
	CHECK_EQ_U(c.line, 40);
	CHECK(symtab_code(s, 0x11108, &c));   /* past the line row */
	CHECK(c.file == NULL);
	CHECK(symtab_code(s, 0x11250, &c));   /* unsized: to the next function */
	CHECK_STR(c.func, "tail");
	CHECK(symtab_code(s, 0x11400, &c));   /* after the last: nothing */
	CHECK(c.func == NULL);
	CHECK(!symtab_code(s, 0x5000, &c));   /* no module */
	char buf[128];
	CHECK_STR(symtab_code_str(s, 0x11010, true, buf, sizeof buf), "main+0x10 (app.c:11)");
	CHECK_STR(symtab_code_str(s, 0x7f0104, false, buf, sizeof buf), "x_func");
	CHECK_STR(symtab_code_str(s, 0x7f0204, true, buf, sizeof buf), "libx.so+0x204");
	CHECK_STR(symtab_code_str(s, 0x42, true, buf, sizeof buf), "0x42");

	struct st_data d;
	CHECK(symtab_data(s, 0x14008, &d));
	CHECK_STR(d.path, "q.count");
	CHECK_STR(d.name, "q");
	CHECK_STR(d.type_name, "struct queue");
	CHECK_STR(d.field, "count");
	CHECK_STR(d.field_type, "struct queue");
	CHECK_EQ_U(d.field_off, 8);
	CHECK_EQ_U(d.field_size, 8);
	CHECK(symtab_data(s, 0x1400c, &d));
	CHECK_EQ_U(d.leaf_off, 4);
	CHECK(symtab_data(s, 0x14100 + 2 * 16 + 8, &d));
	CHECK_STR(d.path, "cells[2].y");
	CHECK_STR(d.type_name, "struct cell[8]");
	CHECK_EQ_U(d.field_off, 40);
	CHECK(symtab_data(s, 0x14202, &d));
	CHECK_STR(d.path, "plain");
	CHECK_EQ_U(d.var_off, 2);
	CHECK(symtab_data(s, 0x14300, &d));
	CHECK(d.var == NULL);

	/* heap blocks: an array of the site's type when larger than one */
	const struct st_module *m = symtab_module(s, 0x11050);
	CHECK(m != NULL);
	if (!m)
		return;
	const struct st_alloc *al = symtab_alloc(m, 0x1050);
	CHECK(al != NULL);
	CHECK(symtab_alloc(m, 0x1070) == NULL);   /* untyped */
	uint64_t leaf = 0;
	char path[64] = "";
	if (al) {
		CHECK_EQ_U(symtab_block_path(m, al, 64, 40, path, sizeof path, &leaf), 40);
		CHECK_STR(path, "blocks[2].y");
		CHECK_EQ_U(leaf, 8);
		path[0] = 0;
		symtab_block_path(m, al, 16, 3, path, sizeof path, &leaf);   /* one cell */
		CHECK_STR(path, "blocks.x");
	}
	al = symtab_alloc(m, 0x1060);
	CHECK(al != NULL);
	if (al) {
		path[0] = 0;
		CHECK_EQ_U(symtab_block_path(m, al, 16, 12, path, sizeof path, &leaf), 8);
		CHECK_STR(path, ".count");
	}
}

static void test_lookups(void)
{
	struct symtab s;
	build(&s);
	check_lookups(&s);
	symtab_free(&s);
}

static void test_roundtrip(void)
{
	struct symtab s, r;
	build(&s);
	void *p;
	size_t len;
	CHECK(symtab_serialize(&s, &p, &len) == 0);
	symtab_init(&r);
	char err[256] = "";
	CHECK(symtab_parse(&r, p, len, err, sizeof err) == 0);
	CHECK_STR(err, "");
	CHECK_EQ_U(r.n, 2);
	if (r.n == 2) {
		CHECK_STR(r.mods[0]->path, "/bin/app");
		CHECK_EQ_U(r.mods[0]->buildid_len, 4);
		CHECK_EQ_U(r.mods[0]->nfuncs, 4);
		CHECK_EQ_U(r.mods[0]->nvars, 3);
		CHECK_EQ_U(r.mods[0]->nallocs, 2);
		check_lookups(&r);
		/* serializing the parsed table gives the same bytes */
		void *p2;
		size_t len2;
		CHECK(symtab_serialize(&r, &p2, &len2) == 0);
		CHECK(len2 == len && !memcmp(p, p2, len));
		free(p2);
	}
	symtab_free(&r);
	symtab_free(&s);
	free(p);
}

static void test_empty(void)
{
	struct symtab s, r;
	symtab_init(&s);
	void *p;
	size_t len;
	CHECK(symtab_serialize(&s, &p, &len) == 0);
	CHECK_EQ_U(len, 12);
	symtab_init(&r);
	char err[128];
	CHECK(symtab_parse(&r, p, len, err, sizeof err) == 0);
	CHECK_EQ_U(r.n, 0);
	struct st_data d;
	CHECK(!symtab_data(&r, 0x1000, &d));
	free(p);
	symtab_free(&r);
}

/* Every truncation, every single-byte corruption at every offset, and
 * random multi-byte damage: parse fails cleanly or gives a table whose
 * lookups work (run under ASan/UBSan by make ASAN=1 check). */
static void test_malformed(void)
{
	struct symtab s;
	build(&s);
	uint8_t *p;
	size_t len;
	CHECK(symtab_serialize(&s, (void **)&p, &len) == 0);
	symtab_free(&s);
	uint8_t *q = malloc(len);
	char err[256];
	size_t refused = 0;
	for (size_t cut = 0; cut < len; cut++) {
		struct symtab r;
		symtab_init(&r);
		memcpy(q, p, cut);
		if (symtab_parse(&r, q, cut, err, sizeof err))
			refused++;
		CHECK(err[0]);
		symtab_free(&r);
	}
	CHECK_EQ_U(refused, len);
	static const uint8_t vals[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
	for (size_t at = 0; at < len; at++)
		for (size_t v = 0; v < sizeof vals; v++) {
			memcpy(q, p, len);
			q[at] = vals[v];
			struct symtab r;
			symtab_init(&r);
			(void)symtab_parse(&r, q, len, err, sizeof err);
			struct st_data d;
			struct st_code c;
			char b[64];
			for (uint64_t a = 0x10000; a < 0x20000; a += 0x100) {
				symtab_data(&r, a + 8, &d);
				symtab_code(&r, a + 0x10, &c);
				symtab_code_str(&r, a, true, b, sizeof b);
			}
			symtab_free(&r);
		}
	unsigned seed = 12345;
	for (int iter = 0; iter < 20000; iter++) {
		memcpy(q, p, len);
		int k = 1 + (int)(rand_r(&seed) % 6);
		for (int j = 0; j < k; j++)
			q[rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
		struct symtab r;
		symtab_init(&r);
		(void)symtab_parse(&r, q, len, err, sizeof err);
		struct st_data d;
		for (uint64_t a = 0x14000; a < 0x14300; a += 8)
			symtab_data(&r, a, &d);
		symtab_free(&r);
	}
	/* specific hostile values */
	struct symtab r;
	symtab_init(&r);
	memcpy(q, p, len);
	q[0] ^= 1;
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	CHECK(strstr(err, "magic") != NULL);
	memcpy(q, p, len);
	q[4] = 9;
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	CHECK(strstr(err, "version") != NULL);
	memcpy(q, p, len);
	q[8] = 0xff; q[9] = 0xff; q[10] = 0xff; q[11] = 0x7f;
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	memcpy(q, p, len);
	q[12] = 0xff; q[13] = 0xff; q[14] = 0xff; q[15] = 0xff;   /* module length */
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	CHECK(strstr(err, "beyond the end") != NULL);
	CHECK_EQ_U(r.n, 0);
	symtab_free(&r);
	/* trailing garbage */
	uint8_t *big = malloc(len + 3);
	memcpy(big, p, len);
	memset(big + len, 0, 3);
	symtab_init(&r);
	CHECK(symtab_parse(&r, big, len + 3, err, sizeof err) == -1);
	CHECK_EQ_U(r.n, 2);   /* the whole modules before it stay */
	symtab_free(&r);
	free(big);
	free(q);
	free(p);
}

/* One module with one type and one allocation site: the site's record is
 * the payload's last 16 bytes (u64 site, u32 name, u32 type). */
static uint8_t *one_site(size_t *len)
{
	struct symtab s;
	symtab_init(&s);
	struct st_module *m = symtab_add_module(&s, "a");
	m->hi = 0x10000;
	uint32_t t = st_add_type(m, ST_T_BASE, "double", 8, ST_NONE, 0);
	st_add_alloc(m, 0x400, "v", t);
	symtab_finish(&s);
	void *p = NULL;
	CHECK(symtab_serialize(&s, &p, len) == 0);
	symtab_free(&s);
	return p;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The allocation-site table (payload version 2): bad indices and
 * truncation are refused; a version 1 payload (no such table) reads. */
static void test_alloc_sites(void)
{
	size_t len;
	uint8_t *p = one_site(&len);
	if (!p)
		return;
	char err[256];
	struct symtab r;
	symtab_init(&r);
	CHECK(symtab_parse(&r, p, len, err, sizeof err) == 0);
	CHECK(r.n == 1 && r.mods[0]->nallocs == 1 && r.mods[0]->allocs[0].site == 0x400);
	symtab_free(&r);
	uint8_t *q = malloc(len);
	memcpy(q, p, len);
	put32(q + len - 4, 7);   /* type index past the table */
	symtab_init(&r);
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	CHECK(strstr(err, "allocation site 0: bad type index") != NULL);
	symtab_free(&r);
	memcpy(q, p, len);
	put32(q + len - 8, 0x7ffffff0);   /* name outside the strings */
	symtab_init(&r);
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	CHECK(strstr(err, "allocation site 0: bad name offset") != NULL);
	symtab_free(&r);
	memcpy(q, p, len);
	put32(q + len - 20, 2);   /* two sites, one's bytes */
	symtab_init(&r);
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	CHECK(strstr(err, "bad allocation site count") != NULL);
	symtab_free(&r);
	/* version 1: the same module without the table's count */
	memcpy(q, p, len);
	q[4] = 1;
	put32(q + 12, (uint32_t)(len - 16 - 4 - 16));
	symtab_init(&r);
	CHECK(symtab_parse(&r, q, len - 20, err, sizeof err) == 0);
	CHECK(r.n == 1 && r.mods[0]->nallocs == 0 && r.mods[0]->ntypes == 1);
	symtab_free(&r);
	/* version 1 with the table present: bytes left over */
	memcpy(q, p, len);
	q[4] = 1;
	symtab_init(&r);
	CHECK(symtab_parse(&r, q, len, err, sizeof err) == -1);
	CHECK(strstr(err, "left over") != NULL);
	symtab_free(&r);
	free(q);
	free(p);
}

/* A cyclic type graph (hostile payload) must not loop. */
static void test_type_cycle(void)
{
	struct symtab s;
	symtab_init(&s);
	struct st_module *m = symtab_add_module(&s, "x");
	m->hi = 0x10000;
	uint32_t a = st_add_type(m, ST_T_ARRAY, NULL, 64, ST_NONE, 4);
	m->types[a].elem = a;   /* array of itself */
	uint32_t t = st_add_type(m, ST_T_STRUCT, "struct s", 64, ST_NONE, 0);
	st_add_member(m, t, "self", 0, 64, t);
	st_add_var(m, 0x100, 64, "v", a);
	st_add_var(m, 0x200, 64, "w", t);
	symtab_finish(&s);
	struct st_data d;
	CHECK(symtab_data(&s, 0x108, &d));
	CHECK(strlen(d.path) < sizeof d.path);
	CHECK(symtab_data(&s, 0x208, &d));
	CHECK(!strncmp(d.path, "w.self.self", 11));
	symtab_free(&s);
}

/* The ranges where a recorded data address can be in a variable: a
 * module's file mappings and the anonymous mapping that continues one of
 * them (its .bss, also when the kernel joined it with the brk heap); not
 * the heap elsewhere, a stack, an anonymous mapping elsewhere,
 * a file without an executable mapping, or a deleted file. */
static void test_var_ranges(void)
{
	static const char maps[] =
	    "1000-2000 r--p 00000000 ab /bin/prog\n"
	    "2000-3000 r-xp 00001000 ab /bin/prog\n"
	    "3000-4000 rw-p 00002000 ab /bin/prog\n"
	    "4000-6000 rw-p 00000000 -\n"                 /* prog's .bss */
	    "7000-8000 rw-p 00000000 - [heap]\n"
	    "9000-a000 rw-p 00000000 -\n"                 /* after a gap: not .bss */
	    "a000-b000 r--p 00000000 cd /data/input\n"    /* no executable mapping */
	    "b000-c000 rw-p 00000000 -\n"                 /* continues a data file */
	    "c000-d000 r-xp 00000000 ef /lib/gone (deleted)\n"
	    "d000-e000 rw-p 00000000 -\n"
	    "not a maps line\n"
	    "20000-21000 r-xp 00000000 12 /lib/libx.so\n"
	    "21000-22000 rw-p 00001000 12 /lib/libx.so\n"
	    "30000-31000 r-xp 00000000 34 /bin/norand\n"
	    "31000-35000 rw-p 00000000 - [heap]";    /* .bss and brk joined; no final newline */
	struct st_ranges r = { 0 };
	CHECK(symtab_var_ranges(&r, maps, sizeof maps - 1) == 0);
	CHECK(r.n == 3);          /* 1000-6000 merged, 20000-22000, 30000-35000 */
	static const struct { uint64_t x; bool in; } cases[] = {
		{ 0xfff, false }, { 0x1000, true }, { 0x3fff, true }, { 0x4000, true },
		{ 0x5fff, true }, { 0x6000, false }, { 0x7800, false }, { 0x9800, false },
		{ 0xa800, false }, { 0xb800, false }, { 0xc800, false }, { 0xd800, false },
		{ 0x20000, true }, { 0x21fff, true }, { 0x22000, false }, { 0x4800, true },
		{ 0x34fff, true }, { 0x35000, false },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK(symtab_ranges_has(&r, cases[i].x) == cases[i].in);
	free(r.v);
	/* no maps at all: nothing is in a variable */
	CHECK(symtab_var_ranges(&r, "", 0) == 0);
	CHECK(r.n == 0 && !symtab_ranges_has(&r, 0x1000));
	free(r.v);
}

int main(void)
{
	RUN(test_var_ranges);
	RUN(test_lookups);
	RUN(test_roundtrip);
	RUN(test_empty);
	RUN(test_malformed);
	RUN(test_type_cycle);
	RUN(test_alloc_sites);
	return check_summary();
}
