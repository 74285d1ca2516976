/* Attribution (analyze/attrib.h): the replay state (heap blocks with free,
 * realloc and reuse, mmap regions, stacks, TLS), objects and fields of
 * events, the cache-line view, symbols embedded or missing or damaged, and
 * the ELF/DWARF builder on this very test program. */
#include <stdarg.h>
#include <stdlib.h>

#include "ana_common.h"
#include "attrib.h"

/* ---- a hand-built program: module /bin/app at bias 0 --------------------------
 *   funcs:  main [0x401000,+0x100)  alloc_a [0x401100,+0x40)
 *           alloc_b [0x401140,+0x40)  worker [0x401200,+0x100)
 *   lines:  0x401110 app.c:41 (in alloc_a), 0x401150 app.c:46 (alloc_b),
 *           0x401010 app.c:93, 0x401020 app.c:94 (main),
 *           0x401200 app.c:66, 0x401210 app.c:76 (worker)
 *   eval [0x401300,+0x80): two calls of an inlined allocation helper, all
 *           of it app.h:113; their sites 0x401318 store the block in bvc,
 *           0x401328 in pbvc (long int); 0x401338 and 0x401348: no
 *           variable known
 *   data:   struct queue { long lock; long count; } q @0x404000 */
#define APP_LO 0x400000ull
#define APP_HI 0x405000ull
#define Q 0x404000ull
#define IP_LOCK 0x401204ull   /* worker, app.c:66 */
#define IP_COUNT 0x401214ull  /* worker, app.c:76 */

static void *app_symbols(size_t *len)
{
	struct symtab s;
	symtab_init(&s);
	struct st_module *m = symtab_add_module(&s, "/bin/app");
	m->lo = APP_LO;
	m->hi = APP_HI;
	m->flags = ST_MOD_ELF_SYMS | ST_MOD_DWARF;
	st_add_func(m, 0x401000, 0x100, "main");
	st_add_func(m, 0x401100, 0x40, "alloc_a");
	st_add_func(m, 0x401140, 0x40, "alloc_b");
	st_add_func(m, 0x401200, 0x100, "worker");
	uint32_t f = st_add_file(m, "/src/app.c");
	st_add_line(m, 0x401110, 0x10, f, 41);
	st_add_line(m, 0x401150, 0x10, f, 46);
	st_add_line(m, 0x401010, 0x10, f, 93);
	st_add_line(m, 0x401020, 0x10, f, 94);
	st_add_line(m, 0x401200, 0x10, f, 66);
	st_add_line(m, 0x401210, 0x10, f, 76);
	uint32_t tl = st_add_type(m, ST_T_BASE, "long int", 8, ST_NONE, 0);
	uint32_t tq = st_add_type(m, ST_T_STRUCT, "struct queue", 16, ST_NONE, 0);
	st_add_member(m, tq, "lock", 0, 8, tl);
	st_add_member(m, tq, "count", 8, 8, tl);
	st_add_var(m, Q, 16, "q", tq);
	st_add_func(m, 0x401300, 0x80, "eval");
	st_add_line(m, 0x401300, 0x80, st_add_file(m, "/src/app.h"), 113);
	st_add_alloc(m, 0x401318, "bvc", tl);
	st_add_alloc(m, 0x401328, "pbvc", tl);
	symtab_finish(&s);
	void *p = NULL;
	if (symtab_serialize(&s, &p, len))
		p = NULL;
	symtab_free(&s);
	return p;
}

struct fixture {
	struct tb b;
	struct ct_trace *t;
	struct attrib *a;
	struct record_consumer rc;
	struct event_consumer ec;
};

/* Open the trace and create the attribution, symbols embedded unless
 * from_binaries. */
static int fx_open(struct fixture *fx, const void *sym, size_t symlen, const char *maps,
                   bool from_binaries)
{
	const char *path = tb_write_with(&fx->b, sym, symlen, maps);
	if (!path)
		return -1;
	struct ct_error err;
	fx->t = ct_trace_open(path, &err);
	if (!fx->t) {
		printf("# %s\n", err.msg);
		return -1;
	}
	struct attrib_opts o = { .from_binaries = from_binaries, .line_size = 64,
	                         .nthreads = fx->b.nthreads };
	fx->a = attrib_create(fx->t, &o);
	if (!fx->a)
		return -1;
	fx->rc = attrib_record_consumer(fx->a);
	fx->ec = attrib_event_consumer(fx->a);
	return 0;
}

static void fx_close(struct fixture *fx)
{
	attrib_free(fx->a);
	if (fx->t)
		ct_trace_close(fx->t);
	tb_free(&fx->b);
}

/* A fixture of nthreads with the app's symbols embedded: false (closed)
 * when it cannot be opened. */
static bool fx_open_app(struct fixture *fx, size_t nthreads)
{
	tb_init(&fx->b, nthreads);
	size_t len;
	void *sym = app_symbols(&len);
	CHECK(sym && fx_open(fx, sym, len, NULL, false) == 0);
	free(sym);
	if (!fx->a)
		fx_close(fx);
	return fx->a != NULL;
}

static void rec(struct fixture *fx, const struct ct_record *r)
{
	fx->rc.record(fx->rc.self, r);
}

static void callsite(struct fixture *fx, uint32_t thread, uint32_t id, uint64_t pc0, uint64_t pc1)
{
	struct ct_record r = { .type = CT_REC_CALLSITE, .thread = thread };
	r.u.callsite.id = id;
	r.u.callsite.depth = 3;
	r.u.callsite.pc[0] = 0x7f0000001234;   /* in no module: the allocator */
	r.u.callsite.pc[1] = pc0;
	r.u.callsite.pc[2] = pc1;
	rec(fx, &r);
}

static void alloc(struct fixture *fx, uint64_t addr, uint64_t size, uint32_t cs, uint8_t kind,
                  uint64_t old)
{
	struct ct_record r = { .type = CT_REC_ALLOC };
	r.u.alloc.addr = addr;
	r.u.alloc.size = size;
	r.u.alloc.callsite = cs;
	r.u.alloc.kind = kind;
	r.u.alloc.old_addr = old;
	rec(fx, &r);
}

static void freerec(struct fixture *fx, uint64_t addr, uint64_t size, uint8_t kind)
{
	struct ct_record r = { .type = CT_REC_FREE };
	r.u.free.addr = addr;
	r.u.free.size = size;
	r.u.free.kind = kind;
	rec(fx, &r);
}

static void thread_start(struct fixture *fx, uint32_t t, uint64_t slo, uint64_t shi, uint64_t tlo,
                         uint64_t thi)
{
	struct ct_record r = { .type = CT_REC_THREAD_START, .thread = t };
	r.u.start.stack_lo = slo;
	r.u.start.stack_hi = shi;
	r.u.start.tls_lo = tlo;
	r.u.start.tls_hi = thi;
	rec(fx, &r);
}

/* dst loads or stores addr, src stored src_addr, one event of weight w */
static void event(struct fixture *fx, uint32_t dst, uint64_t addr, uint8_t kind, uint64_t ip,
                  uint32_t src, uint64_t src_addr, uint64_t src_ip, double w, uint8_t via)
{
	struct comm_event e = {
		.dst = dst, .src = src, .dst_cpu = UINT32_MAX, .src_cpu = UINT32_MAX,
		.line = addr & ~63ull, .addr = addr, .src_addr = src_addr, .len = 8, .src_len = 8,
		.dst_kind = kind, .via = via, .ip = ip, .src_ip = src_ip, .weight = w,
	};
	e.true_sharing = addr < src_addr + 8 && src_addr < addr + 8;
	fx->ec.event(fx->ec.self, &e);
}

static const char *name_at(struct fixture *fx, uint64_t addr)
{
	static char buf[256];
	return attrib_object_name(fx->a, addr, buf, sizeof buf);
}

static char *objects_out(struct fixture *fx, enum attrib_format fmt)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (!f)
		return NULL;
	attrib_write_objects(fx->a, f, fmt, 0);
	fclose(f);
	return s;
}

static char *lines_out(struct fixture *fx, enum attrib_format fmt)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (!f)
		return NULL;
	attrib_write_lines(fx->a, f, fmt, 0);
	fclose(f);
	return s;
}

#define CHECK_HAS(s, sub) do { const char *s_ = (s); if (!s_ || !strstr(s_, sub)) { \
	if (!check_case_failed) printf("FAIL %s: %s:%d: missing \"%s\" in:\n%s\n", check_case_name, \
		__FILE__, __LINE__, sub, s_ ? s_ : "(null)"); check_case_failed = 1; } } while (0)

/* Heap blocks: grouped by call path; free, reuse by another call path,
 * realloc moving a block, mmap and partial munmap. */
static void test_heap(void)
{
	struct fixture fx = { 0 };
	if (!fx_open_app(&fx, 2))
		return;
	callsite(&fx, 0, 1, 0x401118, 0x401018);   /* alloc_a < main:93 */
	callsite(&fx, 0, 2, 0x401158, 0x401028);   /* alloc_b < main:94 */
	alloc(&fx, 0x10000, 64, 1, CT_ALLOC_MALLOC, 0);
	alloc(&fx, 0x20000, 64, 2, CT_ALLOC_MALLOC, 0);
	CHECK_STR(name_at(&fx, 0x10008), "heap:alloc_a +8");
	CHECK_STR(name_at(&fx, 0x2003f), "heap:alloc_b +63");
	CHECK_STR(name_at(&fx, 0x20040), "unknown 0x20040");
	freerec(&fx, 0x10000, 0, 0);
	CHECK_STR(name_at(&fx, 0x10008), "unknown 0x10008");
	alloc(&fx, 0x10000, 32, 2, CT_ALLOC_MALLOC, 0);          /* reuse, other path */
	CHECK_STR(name_at(&fx, 0x10008), "heap:alloc_b +8");
	alloc(&fx, 0x30000, 128, 1, CT_ALLOC_REALLOC, 0x20000);  /* moved */
	CHECK_STR(name_at(&fx, 0x20008), "unknown 0x20008");
	CHECK_STR(name_at(&fx, 0x30070), "heap:alloc_a +112");
	alloc(&fx, 0x30000, 256, 1, CT_ALLOC_REALLOC, 0x30000);  /* grown in place */
	CHECK_STR(name_at(&fx, 0x300f0), "heap:alloc_a +240");
	alloc(&fx, 0x7000000, 0x10000, 2, CT_ALLOC_MMAP, 0);
	CHECK_STR(name_at(&fx, 0x7008000), "mmap:alloc_b +32768");
	freerec(&fx, 0x7008000, 0x8000, 1);                       /* upper half */
	CHECK_STR(name_at(&fx, 0x7008000), "unknown 0x7008000");
	CHECK_STR(name_at(&fx, 0x7000010), "mmap:alloc_b +16");
	alloc(&fx, 0x50000, 8, 99, CT_ALLOC_MALLOC, 0);           /* undefined call site */
	CHECK_STR(name_at(&fx, 0x50000), "heap:unknown-callsite +0");
	/* many blocks: the tree stays consistent through inserts and frees */
	for (uint64_t i = 0; i < 5000; i++)
		alloc(&fx, 0x1000000 + i * 64, 48, (uint32_t)(1 + i % 2), CT_ALLOC_MALLOC, 0);
	for (uint64_t i = 0; i < 5000; i += 2)
		freerec(&fx, 0x1000000 + i * 64, 0, 0);
	CHECK_STR(name_at(&fx, 0x1000000 + 4 * 64 + 8), "unknown 0x1000108");
	CHECK_STR(name_at(&fx, 0x1000000 + 3 * 64 + 8), "heap:alloc_b +8");
	CHECK_STR(name_at(&fx, 0x1000000 + 3 * 64 + 50), "unknown 0x10000f2");

	/* events: T0 stores +8 of alloc_a's block, T1 +16: false sharing */
	alloc(&fx, 0x60000, 64, 1, CT_ALLOC_MALLOC, 0);
	event(&fx, 1, 0x60010, CT_ACCESS_STORE, IP_COUNT, 0, 0x60008, IP_LOCK, 1000, COMM_VIA_SAMPLE);
	char *o = objects_out(&fx, AF_TEXT);
	CHECK_HAS(o, "heap:alloc_a");
	CHECK_HAS(o, "allocated at: alloc_a (app.c:41) < main (app.c:93)");
	CHECK_HAS(o, "+8");
	CHECK_HAS(o, "+16");
	free(o);
	o = objects_out(&fx, AF_JSON);
	CHECK_HAS(o, "\"name\":\"heap:alloc_a\",\"kind\":\"heap\"");
	CHECK_HAS(o, "\"call_path\":\"alloc_a (app.c:41) < main (app.c:93)\"");
	CHECK_HAS(o, "{\"path\":\"+8\",\"offset\":8,\"size\":8,\"writers\":[0]");
	CHECK_HAS(o, "{\"path\":\"+16\",\"offset\":16,\"size\":8,\"writers\":[1]");
	free(o);
	fx_close(&fx);
}

/* Static data with fields, stacks, TLS: false sharing reads as fields of
 * the struct written by two threads; code on source lines. */
/* Heap groups are call paths by return address: two inlined calls of one
 * helper (one source line) are two objects, each named after its own
 * variable; blocks from one site (several call site ids, as from several
 * threads) are one object. */
static void test_heap_inlined_sites(void)
{
	struct fixture fx = { 0 };
	if (!fx_open_app(&fx, 2))
		return;
	callsite(&fx, 0, 1, 0x401318, 0x401018);   /* bvc = Allocate() < main:93 */
	callsite(&fx, 0, 2, 0x401328, 0x401018);   /* pbvc = Allocate() < main:93 */
	callsite(&fx, 1, 3, 0x401318, 0x401018);   /* bvc's site again */
	alloc(&fx, 0x10000, 64, 1, CT_ALLOC_MALLOC, 0);
	alloc(&fx, 0x20000, 64, 2, CT_ALLOC_MALLOC, 0);
	alloc(&fx, 0x30000, 64, 3, CT_ALLOC_MALLOC, 0);
	CHECK_STR(name_at(&fx, 0x10008), "heap:eval:bvc bvc[1]");
	CHECK_STR(name_at(&fx, 0x20010), "heap:eval:pbvc pbvc[2]");
	CHECK_STR(name_at(&fx, 0x30018), "heap:eval:bvc bvc[3]");
	event(&fx, 1, 0x20010, CT_ACCESS_STORE, IP_COUNT, 0, 0x20008, IP_LOCK, 1000, COMM_VIA_SAMPLE);
	char *o = objects_out(&fx, AF_TEXT);
	CHECK_HAS(o, "allocated at: eval (app.h:113) < main (app.c:93) (1 block)");
	free(o);
	/* two untyped sites: two objects, the second's path with its return
	 * address's offset */
	callsite(&fx, 0, 4, 0x401338, 0x401018);
	callsite(&fx, 0, 5, 0x401348, 0x401018);
	alloc(&fx, 0x40000, 64, 4, CT_ALLOC_MALLOC, 0);
	alloc(&fx, 0x50000, 64, 5, CT_ALLOC_MALLOC, 0);
	CHECK_STR(name_at(&fx, 0x40008), "heap:eval +8");
	CHECK_STR(name_at(&fx, 0x50008), "heap:eval#2 +8");
	event(&fx, 1, 0x40010, CT_ACCESS_STORE, IP_COUNT, 0, 0x40008, IP_LOCK, 1000, COMM_VIA_SAMPLE);
	event(&fx, 1, 0x50010, CT_ACCESS_STORE, IP_COUNT, 0, 0x50008, IP_LOCK, 1000, COMM_VIA_SAMPLE);
	o = objects_out(&fx, AF_TEXT);
	CHECK_HAS(o, "allocated at: eval (app.h:113) < main (app.c:93) (1 block)");
	CHECK_HAS(o, "allocated at: eval+0x48 (app.h:113) < main (app.c:93) (1 block)");
	free(o);
	fx_close(&fx);
}

static void test_static_stack_tls(void)
{
	struct fixture fx = { 0 };
	if (!fx_open_app(&fx, 3))
		return;
	thread_start(&fx, 1, 0x7ff000000, 0x7ff800000, 0x7ff7ff000, 0x7ff800000);
	thread_start(&fx, 2, 0x7fe000000, 0x7fe800000, 0, 0);
	CHECK_STR(name_at(&fx, Q + 8), "q q.count");
	CHECK_STR(name_at(&fx, Q + 12), "q q.count");
	CHECK_STR(name_at(&fx, Q + 16), "unknown@app +0x404010");
	CHECK_STR(name_at(&fx, 0x7ff7ff010), "tls:T1 +0x10");
	CHECK_STR(name_at(&fx, 0x7ff000010), "stack:T1 top-0x7ffff0");
	CHECK_STR(name_at(&fx, 0x7fe7ffff8), "stack:T2 top-0x8");
	CHECK_STR(name_at(&fx, 0x1234), "unknown 0x1234");
	/* T2 ended; T0 (say) gets its stack memory, shifted by a page */
	thread_start(&fx, 0, 0x7fe001000, 0x7fe801000, 0, 0);
	CHECK_STR(name_at(&fx, 0x7fe7ffff8), "stack:T0 top-0x1008");
	CHECK(!strncmp(name_at(&fx, 0x7fe000800), "stack:T2 ", 9));   /* the rest stays T2's */

	/* T1 stores q.lock, T2 stores q.count: each the other's src */
	for (int i = 0; i < 3; i++) {
		event(&fx, 2, Q + 8, CT_ACCESS_STORE, IP_COUNT, 1, Q, IP_LOCK, 1000, COMM_VIA_SAMPLE);
		event(&fx, 1, Q, CT_ACCESS_STORE, IP_LOCK + 1, 2, Q + 8, IP_COUNT, 500,
		      COMM_VIA_WATCHPOINT);
	}
	/* true sharing on a stack word */
	event(&fx, 2, 0x7ff000ff0, CT_ACCESS_LOAD, IP_COUNT, 1, 0x7ff000ff0, IP_LOCK, 250,
	      COMM_VIA_SAMPLE);
	char *o = objects_out(&fx, AF_JSON);
	CHECK_HAS(o, "\"name\":\"q\",\"kind\":\"static\",\"type\":\"struct queue\",\"size\":16");
	CHECK_HAS(o, "\"all\":4500,\"true\":0,\"false\":4500,\"events\":6");
	CHECK_HAS(o, "{\"path\":\"q.lock\",\"offset\":0,\"size\":8,\"writers\":[1],\"readers\":[]");
	CHECK_HAS(o, "{\"path\":\"q.count\",\"offset\":8,\"size\":8,\"writers\":[2],\"readers\":[]");
	CHECK_HAS(o, "\"where\":\"worker (app.c:66)\"");
	CHECK_HAS(o, "\"where\":\"worker (app.c:76)\"");
	CHECK_HAS(o, "{\"dst\":2,\"src\":1,\"all\":3000,\"true\":0,\"false\":3000}");
	CHECK_HAS(o, "\"name\":\"stack:T1\",\"kind\":\"stack\"");
	CHECK_HAS(o, "\"true\":250,\"false\":0");
	free(o);
	o = objects_out(&fx, AF_TEXT);
	CHECK_HAS(o, "false sharing between q.lock (offset 0, written by T1) and q.count "
	             "(offset 8, written by T2)");
	free(o);
	/* ranking: q first */
	o = objects_out(&fx, AF_CSV);
	CHECK_HAS(o, "rank,object,kind,type,size,all,true,false,events,pairs,fields,where\n1,q,static,");
	CHECK_HAS(o, "q.lock@0:T1;q.count@8:T2");
	free(o);
	o = lines_out(&fx, AF_TEXT);
	CHECK_HAS(o, "#1 line 0x404000");
	CHECK_HAS(o, "objects: q");
	CHECK_HAS(o, "q.lock");
	CHECK_HAS(o, "worker (app.c:66)");
	free(o);
	o = lines_out(&fx, AF_JSON);
	CHECK_HAS(o, "{\"offset\":0,\"size\":8,\"object\":\"q\",\"field\":\"q.lock\",\"writers\":[1],"
	             "\"readers\":[],\"stores\":6,\"loads\":0,\"true_events\":0,\"false_events\":6");
	free(o);
	/* the object's own matrix */
	struct matrices *mx = attrib_object_matrix(fx.a, "q");
	const struct matrix *m = mx ? matrices_get(mx, MX_THREAD, MX_FALSE) : NULL;
	CHECK(m != NULL && m->n == 3);
	if (m && m->n == 3) {
		CHECK_NEAR(matrix_at(m, 2, 1), 3000, 1e-9);
		CHECK_NEAR(matrix_at(m, 1, 2), 1500, 1e-9);
	}
	matrices_free(mx);
	CHECK(attrib_object_matrix(fx.a, "nosuch") == NULL);
	char *rep = NULL;
	size_t rl = 0;
	FILE *f = open_memstream(&rep, &rl);
	attrib_report_sections(fx.a, f, 5, 5);
	fclose(f);
	CHECK_HAS(rep, "== Top objects ==");
	CHECK_HAS(rep, "q.lock@0 by T1, q.count@8 by T2");
	CHECK_HAS(rep, "== Top lines ==");
	free(rep);
	fx_close(&fx);
}

/* No symbols, damaged symbols, missing binaries: names degrade with a
 * note, never a crash. */
static void test_degraded(void)
{
	struct fixture fx = { 0 };
	tb_init(&fx.b, 2);
	CHECK(fx_open(&fx, NULL, 0, NULL, false) == 0);
	if (fx.a) {
		CHECK_HAS(attrib_notes(fx.a), "no embedded symbols");
		CHECK_STR(name_at(&fx, Q), "unknown 0x404000");
		event(&fx, 1, Q, CT_ACCESS_STORE, IP_LOCK, 0, Q + 8, IP_COUNT, 10, COMM_VIA_SAMPLE);
		char *o = objects_out(&fx, AF_TEXT);
		CHECK_HAS(o, "unknown");
		CHECK_HAS(o, "0x401204");
		free(o);
	}
	fx_close(&fx);

	size_t len;
	uint8_t *sym = app_symbols(&len);
	for (size_t cut = 0; sym && cut < len; cut += 7) {
		struct fixture g = { 0 };
		tb_init(&g.b, 2);
		sym[cut] ^= 0x5a;
		CHECK(fx_open(&g, sym, len - cut / 3, NULL, false) == 0);
		if (g.a) {
			name_at(&g, Q + 8);
			event(&g, 1, Q, CT_ACCESS_STORE, IP_LOCK, 0, Q + 8, IP_COUNT, 10, COMM_VIA_SAMPLE);
			free(objects_out(&g, AF_JSON));
			free(lines_out(&g, AF_TEXT));
		}
		sym[cut] ^= 0x5a;
		fx_close(&g);
	}
	free(sym);

	/* --symbols-from-binaries with files that are gone */
	struct fixture h = { 0 };
	tb_init(&h.b, 2);
	CHECK(fx_open(&h, NULL, 0, "400000-405000 r-xp 0 - /nonexistent/app\n"
	                        "7f0000-7f1000 r-xp 0 abcd /nonexistent/libx.so\n", true) == 0);
	if (h.a) {
		CHECK_HAS(attrib_notes(h.a), "/nonexistent/app: cannot open");
		CHECK_STR(name_at(&h, Q), "unknown@app +0x4000");   /* in its range, no symbols */
		CHECK_STR(name_at(&h, 0x500000), "unknown 0x500000");
	}
	fx_close(&h);
}

/* The ELF and DWARF builder on this test program (built with -g). */
struct probe_rec {
	long head;
	int flag;
	struct { short a, b; } inner[3];
	long tail;
} attrib_probe[2];

__attribute__((noinline)) static long probe_fn(long x)
{
	attrib_probe[1].inner[2].b = (short)x;
	return x * 3;
}

static void test_elf_self(void)
{
	struct symtab s;
	symtab_init(&s);
	char note[256];
	uint64_t fn = (uint64_t)(uintptr_t)&probe_fn;
	/* bias: runtime address of a known symbol minus its file address */
	struct st_module *m0 = symtab_add_elf(&s, "/proc/self/exe", 0, UINT64_MAX, 0, NULL, note,
	                                      sizeof note);
	CHECK(m0 != NULL);
	uint64_t file_fn = 0;
	for (size_t i = 0; m0 && i < m0->nfuncs; i++)
		if (!strcmp(st_str(m0, m0->funcs[i].name), "probe_fn"))
			file_fn = m0->funcs[i].start;
	symtab_free(&s);
	CHECK(file_fn != 0);
	if (!file_fn)
		return;
	uint64_t bias = fn - file_fn;
	symtab_init(&s);
	struct st_module *m = symtab_add_elf(&s, "/proc/self/exe", bias, bias + (1ull << 32), bias,
	                                     NULL, note, sizeof note);
	symtab_finish(&s);
	CHECK(m && m->buildid_len > 0);
	struct st_code c;
	struct st_data d;
	uint64_t at = (uint64_t)(uintptr_t)&attrib_probe[1].inner[2].b;
	/* the ELF symbol table alone: functions, variables without types */
	CHECK(symtab_code(&s, fn + 1, &c));
	CHECK_STR(c.func, "probe_fn");
	CHECK(symtab_data(&s, at, &d));
	CHECK_STR(d.name, "attrib_probe");
#ifdef HAVE_LIBDWARF
	CHECK(m && (m->flags & ST_MOD_DWARF));
	CHECK(symtab_data(&s, at, &d));
	CHECK_STR(d.path, "attrib_probe[1].inner[2].b");
	CHECK_STR(d.type_name, "struct probe_rec[2]");
	CHECK_EQ_U(d.field_off, (uint64_t)((char *)&attrib_probe[1].inner[2].b - (char *)attrib_probe));
	CHECK_EQ_U(d.field_size, 2);
	CHECK(symtab_data(&s, (uint64_t)(uintptr_t)&attrib_probe[0].tail + 3, &d));
	CHECK_STR(d.path, "attrib_probe[0].tail");
	CHECK_EQ_U(d.leaf_off, 3);
	CHECK(symtab_code(&s, fn, &c));
	CHECK_STR(c.func, "probe_fn");
	CHECK(c.file && strstr(c.file, "ana_attrib.c"));
	CHECK(c.line > 0);
	/* restricted to a set of addresses: only the rows that cover them,
	 * and the pruned table keeps what the addresses need */
	struct symtab r;
	symtab_init(&r);
	uint64_t ips[1] = { fn };
	struct st_addrs set = { .v = ips, .n = 1 };
	struct st_module *rm = symtab_add_elf(&r, "/proc/self/exe", bias, bias + (1ull << 32), bias,
	                                      &set, note, sizeof note);
	CHECK(rm && rm->nlines >= 1 && rm->nlines < m->nlines);
	uint64_t daddr[1] = { at };
	struct st_addrs dset = { .v = daddr, .n = 1 };
	CHECK(symtab_prune(&r, &set, &dset) == 0);
	CHECK(rm->nvars == 1 && rm->nfuncs >= 1 && rm->nfuncs <= 2);
	CHECK(symtab_data(&r, at, &d));
	CHECK_STR(d.path, "attrib_probe[1].inner[2].b");
	CHECK(symtab_code(&r, fn, &c));
	CHECK_STR(c.func, "probe_fn");
	symtab_free(&r);
	/* the set holds other modules' addresses too, some below this one's:
	 * the rows covering fn are still found */
	symtab_init(&r);
	uint64_t mixed[3] = { 0x1000, fn, UINT64_MAX - 1 };
	struct st_addrs mset = { .v = mixed, .n = 3 };
	rm = symtab_add_elf(&r, "/proc/self/exe", bias, bias + (1ull << 32), bias, &mset, note,
	                    sizeof note);
	CHECK(rm && rm->nlines >= 1 && rm->nlines < m->nlines);
	CHECK(symtab_code(&r, fn, &c) && c.line > 0);
	symtab_free(&r);
	/* no address in this module's code: no line rows, no functions from
	 * DWARF, but the variables at fixed addresses, with their types */
	symtab_init(&r);
	uint64_t other[1] = { 0x1000 };
	struct st_addrs oset = { .v = other, .n = 1 };
	rm = symtab_add_elf(&r, "/proc/self/exe", bias, bias + (1ull << 32), bias, &oset, note,
	                    sizeof note);
	CHECK(rm && rm->nlines == 0);
	CHECK(symtab_prune(&r, &oset, &dset) == 0);
	CHECK(symtab_data(&r, at, &d));
	CHECK_STR(d.path, "attrib_probe[1].inner[2].b");
	CHECK_STR(d.type_name, "struct probe_rec[2]");
	symtab_free(&r);
	/* a recording's sets (data given): a data address alone gets the module
	 * read; no address of either set in its range leaves it unread */
	symtab_init(&r);
	struct st_addrs wdata = { .v = other, .n = 1, .data = &dset };
	rm = symtab_add_elf(&r, "/proc/self/exe", bias, bias + (1ull << 32), bias, &wdata, note,
	                    sizeof note);
	CHECK(rm && !(rm->flags & ST_MOD_NOT_READ) && (rm->flags & ST_MOD_DWARF));
	CHECK(symtab_prune(&r, &wdata, &dset) == 0);
	CHECK(symtab_data(&r, at, &d));
	CHECK_STR(d.path, "attrib_probe[1].inner[2].b");
	symtab_free(&r);
	symtab_init(&r);
	struct st_addrs odata = { .v = other, .n = 1 };
	struct st_addrs none = { .v = other, .n = 1, .data = &odata };
	rm = symtab_add_elf(&r, "/proc/self/exe", bias, bias + (1ull << 32), bias, &none, note,
	                    sizeof note);
	CHECK(rm && rm->flags == ST_MOD_NOT_READ && rm->nfuncs == 0 && rm->nvars == 0);
	CHECK(rm && rm->buildid_len > 0 && rm->lo == bias);
	CHECK(!symtab_code(&r, fn, &c) || !c.func);
	symtab_free(&r);
#else
	SKIP("built without libdwarf: ELF symbols only");
#endif
	symtab_free(&s);
	CHECK(probe_fn(2) == 6);
}

/* Through the engine: the attribution hooks on a hand-built trace with the
 * comdetective model. */
static void test_engine(void)
{
	struct tb b;
	tb_init(&b, 2);
	tb_sample(&b, 1, 300, Q, 8, ST, 1000);
	tb_sample(&b, 0, 400, Q + 8, 8, LD, 1000);
	size_t len;
	void *sym = app_symbols(&len);
	const char *path = tb_write_with(&b, sym, len, NULL);
	free(sym);
	CHECK(path != NULL);
	struct model_opts o;
	model_opts_default(&o);
	struct analysis an;
	struct analysis_hooks h;
	struct attrib_hook ah;
	attrib_hooks_init(&h, &ah, false);
	int rc = analysis_run_hooks(&an, path, &o, false, &h);
	CHECK(rc == 0 && ah.a);
	if (!rc && ah.a) {
		char *s = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&s, &n);
		attrib_write_objects(ah.a, f, AF_JSON, 0);
		fclose(f);
		CHECK_HAS(s, "\"name\":\"q\"");
		CHECK_HAS(s, "\"false\":1000");
		CHECK_HAS(s, "\"path\":\"q.count\"");
		free(s);
	}
	attrib_free(ah.a);
	analysis_free(&an);
	tb_free(&b);
}

int main(void)
{
	RUN(test_heap);
	RUN(test_heap_inlined_sites);
	RUN(test_static_stack_tls);
	RUN(test_degraded);
	RUN(test_elf_self);
	RUN(test_engine);
	return check_summary();
}
