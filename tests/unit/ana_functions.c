/* Dataflow between functions (analyze/functions.h) and readable names
 * (analyze/demangle.c): a hand-built three-stage pipeline, full and
 * sampled, run through the functions command, with exact expected flows,
 * unique bytes, reuse, and demangled (or, with --no-demangle, raw) names. */
#include <stdarg.h>
#include <stdlib.h>

#include "ana_common.h"
#include "functions.h"

/* ---- the program: module /bin/pipe at bias 0 -------------------------------------
 *   stage1 [0x401000,+0x100)  stage2 [0x401100,+0x100)
 *   _ZN7physics4Grid6createEv [0x401200,+0x100)  (stage 3, a C++ method)
 *   _Z4workv._omp_fn.0 [0x401300,+0x100)        (an outlined OpenMP region)
 * and a stripped /usr/lib/libgomp.so.1 at 0x7f0000000000: only the exported
 * GOMP_barrier [0x1000,+0x40) in its dynamic symbol table. */
#define IP1 0x401010ull
#define IP2_LOAD 0x401110ull
#define IP2_STORE 0x401120ull
#define IP3 0x401210ull
#define IP_OMP 0x401310ull
#define GOMP_BASE 0x7f0000000000ull
#define IP_GOMP (GOMP_BASE + 0x1800)   /* past GOMP_barrier: no symbol */
#define BUF1 0x10000ull
#define BUF2 0x20000ull
#define TMP 0x30000ull
#define B 16u                 /* buffer bytes */
#define ROUNDS 3u

static void *pipe_symbols(size_t *len)
{
	struct symtab s;
	symtab_init(&s);
	struct st_module *m = symtab_add_module(&s, "/bin/pipe");
	m->lo = 0x400000;
	m->hi = 0x405000;
	m->flags = ST_MOD_ELF_SYMS;
	st_add_func(m, 0x401000, 0x100, "stage1");
	st_add_func(m, 0x401100, 0x100, "stage2");
	st_add_func(m, 0x401200, 0x100, "_ZN7physics4Grid6createEv");
	st_add_func(m, 0x401300, 0x100, "_Z4workv._omp_fn.0");
	uint32_t f = st_add_file(m, "/src/pipe.c");
	st_add_line(m, 0x401010, 0x10, f, 10);
	/* the buffers: statics of a data module */
	struct st_module *d = symtab_add_module(&s, "/bin/pipe.data");
	d->lo = BUF1;
	d->hi = TMP + 0x1000;
	d->flags = ST_MOD_ELF_SYMS;
	st_add_var(d, BUF1, B, "buf1", ST_NONE);
	st_add_var(d, BUF2, B, "buf2", ST_NONE);
	st_add_var(d, TMP, 8, "tmp", ST_NONE);
	struct st_module *g = symtab_add_module(&s, "/usr/lib/libgomp.so.1");
	g->lo = GOMP_BASE;
	g->hi = GOMP_BASE + 0x10000;
	g->bias = GOMP_BASE;
	g->flags = ST_MOD_DYNSYM;
	st_add_func(g, 0x1000, 0x40, "GOMP_barrier");
	symtab_finish(&s);
	void *p = NULL;
	if (symtab_serialize(&s, &p, len))
		p = NULL;
	symtab_free(&s);
	return p;
}

static void acc(struct tb *b, uint32_t t, uint64_t time, uint64_t ip, uint64_t addr,
                   uint8_t kind)
{
	struct ct_record *r = tb_sample(b, t, time, addr, 8, kind, 1);
	r->u.sample.ip = ip;
}

/* Write b with the program's symbols: its path, NULL on failure. */
static const char *write_with_symbols(struct tb *b)
{
	size_t len;
	void *sym = pipe_symbols(&len);
	const char *path = sym ? tb_write_with(b, sym, len, NULL) : NULL;
	free(sym);
	return path;
}

/* Each round: stage1 (T0) writes buf1, stage2 (T1) reads it and writes
 * buf2, stage3 (T2) reads buf2 twice and writes and reads back its own
 * scratch word.  In 8-byte accesses. */
static const char *pipeline_trace(struct tb *b, bool full)
{
	tb_init(b, 3);
	if (full)
		b->features |= CT_FEAT_FULL;
	uint64_t t = 100;
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned o = 0; o < B; o += 8)
			acc(b, 0, t++, IP1, BUF1 + o, CT_ACCESS_STORE);
		for (unsigned o = 0; o < B; o += 8)
			acc(b, 1, t++, IP2_LOAD, BUF1 + o, CT_ACCESS_LOAD);
		for (unsigned o = 0; o < B; o += 8)
			acc(b, 1, t++, IP2_STORE, BUF2 + o, CT_ACCESS_STORE);
		for (unsigned k = 0; k < 2; k++)
			for (unsigned o = 0; o < B; o += 8)
				acc(b, 2, t++, IP3, BUF2 + o, CT_ACCESS_LOAD);
		acc(b, 2, t++, IP3, TMP, CT_ACCESS_STORE);
		acc(b, 2, t++, IP3, TMP, CT_ACCESS_LOAD);
	}
	/* the OpenMP region reads stage1's buffer once at the end (same thread) */
	acc(b, 0, t++, IP_OMP, BUF1, CT_ACCESS_LOAD);
	/* code of the stripped library reads stage2's buffer (same thread) */
	acc(b, 1, t++, IP_GOMP, BUF2, CT_ACCESS_LOAD);
	return write_with_symbols(b);
}

/* Run `commanalyze functions PATH ARGS...` into a string (NULL on failure). */
static char *functions_out(const char *path, ...) __attribute__((sentinel));
static char *functions_out(const char *path, ...)
{
	char out[256];
	const char *tmp = getenv("TMPDIR");
	snprintf(out, sizeof out, "%s/ct-fn-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(out);
	if (fd < 0)
		return NULL;
	close(fd);
	char *argv[32];
	int argc = 0;
	argv[argc++] = (char *)path;
	va_list ap;
	va_start(ap, path);
	const char *a;
	while ((a = va_arg(ap, const char *)) && argc < 28)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc++] = (char *)"-o";
	argv[argc++] = out;
	argv[argc] = NULL;
	int rc = cmd_functions(argc, argv);
	char *s = NULL;
	FILE *f = fopen(out, "r");
	if (!rc && f) {
		s = calloc(1, 1 << 16);
		if (s)
			s[fread(s, 1, (1 << 16) - 1, f)] = 0;
	}
	if (f)
		fclose(f);
	unlink(out);
	if (rc)
		printf("# functions exited %d\n", rc);
	return s;
}

#define CHECK_HAS(s, sub) do { const char *s_ = (s); if (!s_ || !strstr(s_, sub)) { \
	if (!check_case_failed) printf("FAIL %s: %s:%d: missing \"%s\" in:\n%s\n", check_case_name, \
		__FILE__, __LINE__, sub, s_ ? s_ : "(null)"); check_case_failed = 1; } } while (0)
#define CHECK_LACKS(s, sub) do { const char *s_ = (s); if (s_ && strstr(s_, sub)) { \
	if (!check_case_failed) printf("FAIL %s: %s:%d: unexpected \"%s\" in:\n%s\n", check_case_name, \
		__FILE__, __LINE__, sub, s_); check_case_failed = 1; } } while (0)

/* The full trace: bytes, unique bytes, cross-thread, local, reuse. */
static void test_full_pipeline(void)
{
	struct tb b;
	const char *path = pipeline_trace(&b, true);
	CHECK(path != NULL);
	char *csv = functions_out(path, "--format", "csv", "--model", "exact", "--top", "0", NULL);
	/* stage1 -> stage2: every byte once per round (3 x 16), all unique,
	 * all cross-thread; exact transfers: one per round (one line) */
	CHECK_HAS(csv, "stage1,stage2,,,3,3,0,3,48,48,48,48\n");
	/* stage2 -> stage3: read twice per round: 96 bytes, 48 unique */
	CHECK_HAS(csv, "stage2,physics::Grid::create(),,,3,3,0,3,96,48,96,48\n");
	/* stage3's scratch word: local, same thread, no transfer */
	CHECK_HAS(csv, "physics::Grid::create(),physics::Grid::create(),,,0,0,0,0,24,24,0,0\n");
	/* the OpenMP region named after its parent; stage1's last buffer, same thread */
	CHECK_HAS(csv, "stage1,work()._omp_fn.0,,,0,0,0,0,8,8,0,0\n");
	/* the stripped library's code by module and offset, not GOMP_barrier */
	CHECK_HAS(csv, "stage2,libgomp.so.1+0x1800,,,0,0,0,0,8,8,0,0\n");
	CHECK_LACKS(csv, "GOMP_barrier");
	free(csv);

	char *json = functions_out(path, "--format", "json", "--model", "exact", NULL);
	/* stage1 wrote 48 bytes: 40 read once, 8 (the last round's first word)
	 * twice; stage2's 48 read twice each; the scratch word once per round */
	CHECK_HAS(json, "{\"name\":\"stage1\",\"where\":\"pipe.c:10\",\"produced\":3,\"consumed\":0,"
	                "\"bytes_written\":48,\"bytes_read\":0,\"reads_per_written_byte\":[0,40,8],");
	CHECK_HAS(json, "{\"name\":\"stage2\",\"where\":null,\"produced\":3,\"consumed\":3,"
	                "\"bytes_written\":48,\"bytes_read\":48,\"reads_per_written_byte\":[0,0,48],");
	CHECK_HAS(json, "\"bytes_written\":24,\"bytes_read\":120,\"reads_per_written_byte\":[0,24],");
	free(json);

	char *txt = functions_out(path, "--threads", "--model", "exact", NULL);
	CHECK_HAS(txt, "stage1 -> stage2  [T0(1000) -> T1(1001)]");
	CHECK_HAS(txt, "physics::Grid::create() -> physics::Grid::create() (local)");
	CHECK_HAS(txt, "local (same function) 24 bytes, cross-function 160 bytes");
	free(txt);

	char *raw = functions_out(path, "--no-demangle", "--format", "csv", "--model", "exact", NULL);
	CHECK_HAS(raw, "stage2,_ZN7physics4Grid6createEv,");
	CHECK_LACKS(raw, "physics::Grid::create()");
	free(raw);

	char *dot = functions_out(path, "--format", "dot", "--top", "2", "--model", "exact", NULL);
	CHECK_HAS(dot, "digraph functions {");
	CHECK_HAS(dot, "[label=\"stage1\\npipe.c:10\"");
	CHECK_HAS(dot, "[label=\"96 B (48 unique)\"");
	CHECK_HAS(dot, "[label=\"48 B (48 unique)\"");
	CHECK_LACKS(dot, "_omp_fn");   /* not among the top 2 flows */
	free(dot);
	tb_free(&b);
}

/* A sampled trace: the events of the model, weighted like the matrices. */
/* Reuse per object (--by object) on the full trace, exact.  Per round t
 * advances by 12 (2 stores buf1, 2 loads, 2 stores buf2, 4 loads, tmp's
 * store and load), then the OpenMP region reads buf1[0..8) at t = 136 and
 * libgomp buf2[0..8) at t = 137.
 *   buf1  48 bytes written, 56 read.  Reads before overwrite: rounds 1-2 and
 *         round 3's [8,16): once (40 bytes, bucket 1); round 3's [0,8):
 *         twice (8, bucket 2-3).  Lifetime: 2 ns (store at t, load at t+2:
 *         40 bytes, bucket 2-3); round 3's [0,8): written at 124, last read
 *         at 136: 12 ns (8 bytes, bucket 8-15).
 *   buf2  48 written, 104 read (2 x 16 a round + 8): every byte twice or
 *         three times (48, bucket 2-3); last read 5 or 7 ns after the write
 *         in rounds 1-2 and round 3's [8,16) (bucket 4-7, 40 bytes), round
 *         3's [0,8) at 137 - 128 = 9 ns (bucket 8-15, 8 bytes).
 *   tmp   24 written, 24 read, each byte once, 1 ns after its write. */
static void test_reuse_by_object(void)
{
	struct tb b;
	const char *path = pipeline_trace(&b, true);
	CHECK(path != NULL);
	char *csv = functions_out(path, "--by", "object", "--format", "csv", "--model", "exact",
	                          "--top", "0", NULL);
	CHECK_HAS(csv, "rank,object,kind,bytes_written,bytes_read,unread_bytes,reads_median,"
	               "lifetime_median_ns,reads_per_written_byte,lifetime_ns\n");
	CHECK_HAS(csv, "1,buf2,static,48,104,0,2,4,0;0;48,0;0;0;40;8\n");
	CHECK_HAS(csv, "2,buf1,static,48,56,0,1,2,0;40;8,0;0;40;0;8\n");
	CHECK_HAS(csv, "3,tmp,static,24,24,0,1,1,0;24,0;24\n");
	char *json = functions_out(path, "--format", "json", "--model", "exact", NULL);
	CHECK_HAS(json, "{\"name\":\"buf1\",\"kind\":\"static\",\"bytes_written\":48,"
	                "\"bytes_read\":56,\"reads_per_written_byte\":[0,40,8],"
	                "\"lifetime_ns\":[0,0,40,0,8]}");
	char *txt = functions_out(path, "--by", "object", "--model", "exact", "--top", "2", NULL);
	CHECK_HAS(txt, "Objects, reuse of their bytes:");
	CHECK_HAS(txt, "buf2 (static)");
	CHECK_LACKS(txt, "tmp (static)");
	CHECK_LACKS(txt, "Functions of these flows");
	char *bad = functions_out(path, "--by", "thread", NULL);
	CHECK(bad == NULL);
	free(csv);
	free(json);
	free(txt);
	free(bad);
	tb_free(&b);
}

static void test_sampled_events(void)
{
	struct tb b;
	const char *path = pipeline_trace(&b, false);
	CHECK(path != NULL);
	/* the exact model on the (not full) trace: one transfer per round on
	 * each of the two buffers' lines, weight = the period (1) */
	char *csv = functions_out(path, "--format", "csv", "--model", "exact", NULL);
	/* equal weights: ranked by producer name */
	CHECK_HAS(csv, "\n1,stage1,stage2,,,3,3,0,3,0,0,0,0\n");
	CHECK_HAS(csv, "\n2,stage2,physics::Grid::create(),,,3,3,0,3,0,0,0,0\n");
	CHECK_LACKS(csv, "(local)");
	free(csv);
	char *txt = functions_out(path, "--model", "exact", "--kind", "false", NULL);
	CHECK_HAS(txt, "0 of 2 flows shown");
	free(txt);
	tb_free(&b);
}

/* A watchpoint event credits the publisher's function: its arm names the
 * publisher's store sample (thread, time), whose ip the event lacks.  T0
 * (stage1) stores buf1; T1's sample in stage2 arms on it, and T1's load
 * (stage2) hits. */
static void test_watchpoint_publisher(void)
{
	struct tb b;
	tb_init(&b, 2);
	acc(&b, 0, 100, IP1, BUF1, CT_ACCESS_STORE);
	acc(&b, 0, 150, IP3, TMP, CT_ACCESS_STORE);        /* a later sample of T0 */
	acc(&b, 1, 200, IP2_STORE, BUF2, CT_ACCESS_STORE);
	tb_arm(&b, 1, 200, 0, 100, BUF1, 8, 2);
	tb_hit(&b, 1, 300, BUF1 + 8, 8, 1)->u.hit.ip = IP2_LOAD + 1;
	const char *path = write_with_symbols(&b);
	CHECK(path != NULL);
	char *csv = functions_out(path, "--format", "csv", "--model", "comdetective", NULL);
	CHECK_HAS(csv, ",stage1,stage2,");
	CHECK_LACKS(csv, "(unknown code)");
	free(csv);
	tb_free(&b);
}

static void test_demangle(void)
{
	struct { const char *in, *out; } cases[] = {
		{ "_ZN7physics4Grid6createEv", "physics::Grid::create()" },
		{ "_Z4workv._omp_fn.3", "work()._omp_fn.3" },
		{ "_ZN7physics4GridC2Ei.constprop.0", "physics::Grid::Grid(int) [clone .constprop.0]" },
		{ "__grid_MOD_step", "grid::step" },
		{ "main", NULL },
		{ "main._omp_fn.0", NULL },
		{ "_Znot_mangled", NULL },
		{ "__x_MOD_", NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *d = symbol_demangle(cases[i].in);
		if (cases[i].out)
			CHECK_STR(d, cases[i].out);
		else
			CHECK(d == NULL);
		free(d);
	}
}

int main(void)
{
	RUN(test_demangle);
	RUN(test_full_pipeline);
	RUN(test_reuse_by_object);
	RUN(test_sampled_events);
	RUN(test_watchpoint_publisher);
	return check_summary();
}
