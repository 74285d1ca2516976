/* The full-trace models (exact, signature, emulate) on hand-built full
 * traces whose results are worked out by hand in the comments.  Line size
 * 64 (from CONFIG) unless said otherwise; cells are directed [dst][src].
 *
 * The models are run directly through their model_ops (not through
 * model_find), with the matrices consumer and an event log.
 *
 *   ana_fullmodels                 the tests
 *   ana_fullmodels --bench [N [seq]]  replay speed of exact (and
 *                                  signature, emulate) on a generated full
 *                                  trace of N records (default 20000000),
 *                                  8 threads; "seq": private data swept in
 *                                  order rather than at random
 *   ana_fullmodels --write-trace PATH N [seq]   only write that trace */
#include <math.h>
#include <stdarg.h>
#include <time.h>

#include "check.h"
#include "tracebuild.h"
#include "ana.h"
#include "compare.h"

extern const struct model_ops model_exact;
extern const struct model_ops model_signature;
extern const struct model_ops model_emulate;
extern const struct model_ops model_comdetective;

#define ST CT_ACCESS_STORE
#define LD CT_ACCESS_LOAD
#define AT CT_ACCESS_ATOMIC

/* line numbers 1024, 1025 and 1202: board entries 8, 9 and 59 of 127 */
#define A 0x10000ull
#define B 0x10040ull
#define FAR 0x12c80ull

/* ---- running a model ------------------------------------------------------ */

struct evlog {
	struct comm_event *ev;
	size_t n, cap;
};

static void log_event(void *self, const struct comm_event *ev)
{
	struct evlog *l = self;
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		struct comm_event *ne = realloc(l->ev, nc * sizeof *ne);
		if (!ne)
			abort();
		l->ev = ne;
		l->cap = nc;
	}
	l->ev[l->n++] = *ev;
}

struct frun {
	struct ct_trace *tr;
	struct matrices *mx;
	struct evlog log;
	size_t n;
};

static void frun_free(struct frun *f)
{
	matrices_free(f->mx);
	if (f->tr)
		ct_trace_close(f->tr);
	free(f->log.ev);
	memset(f, 0, sizeof *f);
}

static int frun(struct tb *b, const struct model_ops *ops, const struct model_opts *o,
                struct frun *f)
{
	memset(f, 0, sizeof *f);
	const char *path = b->written ? b->path : tb_write(b);
	struct ct_error err = { "" };
	if (!path) {
		printf("# cannot write the trace\n");
		return -1;
	}
	f->tr = ct_trace_open(path, &err);
	if (!f->tr) {
		printf("# %s\n", err.msg);
		return -1;
	}
	f->n = thread_space(f->tr);
	f->mx = matrices_create(f->n, NULL);
	struct event_consumer ec[2] = { matrices_consumer(f->mx), { &f->log, log_event } };
	struct model_setup s = {
		.opts = o, .trace = f->tr, .nthreads = f->n,
		.line_size = resolve_line_size(o, f->tr, NULL), .out = ec, .nout = 2,
	};
	void *m = ops->create(&s);
	if (!m) {
		printf("# cannot create %s\n", ops->name);
		return -1;
	}
	struct record_consumer rc = { m, ops->record, ops->finish };
	int r = replay(f->tr, &rc, 1, false, &err);
	ops->destroy(m);
	if (r)
		printf("# replay: %s\n", err.msg);
	return r;
}

static double cellv(const struct frun *f, enum mx_kind k, size_t dst, size_t src)
{
	const struct matrix *m = matrices_get(f->mx, MX_THREAD, k);
	return dst < m->n && src < m->n ? m->cell[dst * m->n + src] : 0;
}

static double totalv(const struct frun *f, enum mx_kind k)
{
	const struct matrix *m = matrices_get(f->mx, MX_THREAD, k);
	double s = 0;
	for (size_t i = 0; i < m->n * m->n; i++)
		s += m->cell[i];
	return s;
}

static size_t count_via(const struct frun *f, enum comm_via via)
{
	size_t n = 0;
	for (size_t i = 0; i < f->log.n; i++)
		n += f->log.ev[i].via == via;
	return n;
}

/* A full trace: FULL feature, inst sampler, period 1; accesses get times
 * 10, 20, 30, ... in the order they are added. */
static uint64_t now;

static void full_init(struct tb *b, size_t nthreads, unsigned line)
{
	tb_init(b, nthreads);
	b->features = CT_FEAT_SAMPLES | CT_FEAT_FULL | CT_FEAT_FUNCS;
	char cfg[256];
	snprintf(cfg, sizeof cfg, "sampler=inst\nperiod=1\nperiod_unit=events\nfull=1\nline_size=%u\n",
	         line);
	tb_config(b, cfg);
	now = 0;
}

static void acc(struct tb *b, uint32_t t, uint64_t addr, uint8_t len, uint8_t kind)
{
	now += 10;
	tb_sample(b, t, now, addr, len, kind, 1);
}

static struct model_opts opts(void)
{
	struct model_opts o;
	model_opts_default(&o);
	return o;
}

/* ---- exact -------------------------------------------------------------------- */

/* Two threads store one word alternately, 10 stores: the first is a cold
 * miss, each of the 9 others a transfer from the other thread, all true:
 * T0 -> T1 at stores 2, 4, 6, 8, 10 (5), T1 -> T0 at 3, 5, 7, 9 (4). */
static void test_exact_pingpong(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	for (int i = 0; i < 10; i++)
		acc(&b, i % 2, A, 8, ST);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(totalv(&f, MX_ALL), 9, 1e-9);
	CHECK_NEAR(totalv(&f, MX_TRUE), 9, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 1, 0), 5, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 0, 1), 4, 1e-9);
	CHECK_EQ_U(count_via(&f, COMM_VIA_EXACT), 9);
	CHECK(f.log.n > 0 && f.log.ev[0].src_addr == A && f.log.ev[0].dst_kind == ST);
	frun_free(&f);
	tb_free(&b);
}

/* The same with T0 on bytes 0-7 and T1 on bytes 8-15 of the line: 9
 * transfers, all false sharing. */
static void test_exact_false(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	for (int i = 0; i < 10; i++)
		acc(&b, i % 2, A + 8 * (i % 2), 8, ST);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(totalv(&f, MX_FALSE), 9, 1e-9);
	CHECK_NEAR(totalv(&f, MX_TRUE), 0, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* A reader after a writer: one true transfer; its repeated reads and the
 * writer's own reads afterwards: nothing more (both hold valid copies). */
static void test_exact_reader_repeated(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	acc(&b, 0, A, 8, ST);
	for (int i = 0; i < 5; i++)
		acc(&b, 1, A, 8, LD);
	acc(&b, 0, A, 8, LD);
	acc(&b, 1, A + 4, 4, LD);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 1, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* T0 stores, T1 and T2 read: one transfer each from T0.  T1 then stores:
 * it holds a copy (an upgrade, no transfer) and invalidates T0 and T2;
 * T2 reads again: T1 -> T2; T0 reads: T1 -> T0.  Total 4, all true. */
static void test_exact_third(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 3, 64);
	acc(&b, 0, A, 8, ST);
	acc(&b, 1, A, 8, LD);
	acc(&b, 2, A, 8, LD);
	acc(&b, 1, A, 8, ST);
	acc(&b, 2, A, 8, LD);
	acc(&b, 0, A, 8, LD);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 2, 0), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 2, 1), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 0, 1), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 4, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* Cold misses are not communication: T0 and T1 read a line nobody wrote;
 * T1 stores (it holds a copy: no transfer); T0 reads: T1 -> T0.  A first
 * store to a new line: nothing. */
static void test_exact_cold(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	acc(&b, 0, A, 8, LD);
	acc(&b, 1, A, 8, LD);
	acc(&b, 1, A, 8, ST);
	acc(&b, 0, A, 8, LD);
	acc(&b, 0, FAR, 8, ST);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 0, 1), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 1, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* Line-spanning accesses are split.  T0 stores 8 bytes at A+60: bytes
 * 60-63 of A and 0-3 of B.  T1 loads the same 8 bytes: two transfers, both
 * true.  T2 loads B+4..B+7 (false) and A+56..A+59 (false). */
static void test_exact_span(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 3, 64);
	acc(&b, 0, A + 60, 8, ST);
	acc(&b, 1, A + 60, 8, LD);
	acc(&b, 2, B + 4, 4, LD);
	acc(&b, 2, A + 56, 4, LD);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 2, 1e-9);
	CHECK_NEAR(cellv(&f, MX_FALSE, 2, 0), 2, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 4, 1e-9);
	CHECK(f.log.n == 4 && f.log.ev[0].line == A && f.log.ev[1].line == B &&
	      f.log.ev[0].len == 4 && f.log.ev[1].addr == B);
	frun_free(&f);
	tb_free(&b);
}

/* Written bytes accumulate while the writer stays and restart with a new
 * writer.  T0 stores words 0 and 1; T1 loads word 1: true.  T1 stores word
 * 2 (an upgrade; T1's written bytes are word 2 only); T0 loads word 0:
 * T1 -> T0, false. */
static void test_exact_mask(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	acc(&b, 0, A, 8, ST);
	acc(&b, 0, A + 8, 8, ST);
	acc(&b, 1, A + 8, 8, LD);
	acc(&b, 1, A + 16, 8, ST);
	acc(&b, 0, A, 8, LD);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_FALSE, 0, 1), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 2, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* An atomic is a store: T0 stores, T1's atomic is a transfer (kind
 * atomic), T0's load then one from T1. */
static void test_exact_atomic(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	acc(&b, 0, A, 8, ST);
	acc(&b, 1, A, 8, AT);
	acc(&b, 0, A, 8, LD);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 0, 1), 1, 1e-9);
	CHECK(f.log.n == 2 && f.log.ev[0].dst_kind == AT && f.log.ev[1].dst_kind == LD);
	frun_free(&f);
	tb_free(&b);
}

/* 100 threads (holders beyond 64 use the extension bitsets).  T0 stores;
 * T1..T99 load: 99 transfers; T99 again: none; T70 stores (holder: none);
 * T0 and T80 load: T70 -> each; T65 stores: T70 -> T65; T3 stores:
 * T65 -> T3; T99 loads: T3 -> T99; T70 loads: T3 -> T70.  Total 105. */
static void test_exact_many_threads(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 100, 64);
	acc(&b, 0, A, 8, ST);
	for (uint32_t t = 1; t < 100; t++)
		acc(&b, t, A, 8, LD);
	acc(&b, 99, A, 8, LD);
	acc(&b, 70, A, 8, ST);
	acc(&b, 0, A, 8, LD);
	acc(&b, 80, A, 8, LD);
	acc(&b, 65, A, 8, ST);
	acc(&b, 3, A, 8, ST);
	acc(&b, 99, A, 8, LD);
	acc(&b, 70, A, 8, LD);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	for (uint32_t t = 1; t < 100; t++)
		CHECK_NEAR(cellv(&f, MX_ALL, t, 0), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 0, 70), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 80, 70), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 65, 70), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 3, 65), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 99, 3), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_ALL, 70, 3), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 105, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* 128-byte lines (written masks beyond 64 bits): T0 stores A+100; T1
 * loads A+100 (true), T2 A+8 (false), T3 A+64 (false, same 128-byte line).
 * Then many lines (the table grows) keep their masks: T0 stores byte 120
 * of 5000 lines, T1 loads byte 120 (true) and T2 byte 0 (false) of each. */
static void test_exact_line128(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 4, 128);
	acc(&b, 0, A + 100, 8, ST);
	acc(&b, 1, A + 100, 8, LD);
	acc(&b, 2, A + 8, 8, LD);
	acc(&b, 3, A + 64, 8, LD);
	for (uint64_t i = 0; i < 5000; i++)
		acc(&b, 0, 0x100000 + i * 128 + 120, 8, ST);
	for (uint64_t i = 0; i < 5000; i++) {
		acc(&b, 1, 0x100000 + i * 128 + 120, 8, LD);
		acc(&b, 2, 0x100000 + i * 128, 8, LD);
	}
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 5001, 1e-9);
	CHECK_NEAR(cellv(&f, MX_FALSE, 2, 0), 5001, 1e-9);
	CHECK_NEAR(cellv(&f, MX_FALSE, 3, 0), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 10003, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* A sampled (not full) trace: still runs, weights by period; the check
 * says it is not ground truth. */
static void test_exact_not_full(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	char why[512];
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 200, A, 8, LD, 1000);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 1000, 1e-9);
	CHECK(!full_trace_check(f.tr, "exact", why, sizeof why));
	CHECK(strstr(why, "full trace") != NULL);
	CHECK(full_trace_check(f.tr, "comdetective", why, sizeof why));
	CHECK(!model_needs_full_trace("window") && model_needs_full_trace("emulate") &&
	      model_needs_full_trace("signature"));
	frun_free(&f);
	tb_free(&b);
	full_init(&b, 2, 64);
	acc(&b, 0, A, 8, ST);
	CHECK(frun(&b, &model_exact, &o, &f) == 0);
	CHECK(full_trace_check(f.tr, "exact", why, sizeof why) && !why[0]);
	frun_free(&f);
	tb_free(&b);
}

/* ---- signature ----------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	return check_xorshift(&rng);
}

/* A random program on words that each have a line of their own (no false
 * sharing, one address per line): with a large signature (no collisions
 * among 32 addresses) the signature's RAW communications are exactly
 * exact's transfers to loads and atomics (a read of a line the reader has
 * no valid copy of, written last by another thread, is both). */
static void test_sig_equals_exact_raw(void)
{
	struct tb b;
	struct frun fx, fs;
	struct model_opts o = opts();
	full_init(&b, 4, 64);
	for (int i = 0; i < 20000; i++) {
		uint32_t t = (uint32_t)(rnd() % 4);
		uint64_t addr = 0x200000 + (rnd() % 32) * 64;
		unsigned k = (unsigned)(rnd() % 10);
		acc(&b, t, addr, 8, k < 6 ? LD : k < 9 ? ST : AT);
	}
	CHECK(frun(&b, &model_exact, &o, &fx) == 0);
	double raw[4][4] = { { 0 } }, sum = 0;
	for (size_t i = 0; i < fx.log.n; i++) {
		const struct comm_event *e = &fx.log.ev[i];
		if (e->dst_kind != ST) {
			raw[e->dst][e->src] += e->weight;
			sum += e->weight;
		}
	}
	CHECK(sum > 1000);
	/* 2^20 slots: filters inline; 2^27 slots (over 1 GiB with inline
	 * filters): filters from the pool */
	for (unsigned bits = 20; bits <= 27; bits += 7) {
		o.signature_size = 1u << bits;
		o.fp_rate = 1e-6;
		CHECK(frun(&b, &model_signature, &o, &fs) == 0);
		for (int r = 0; r < 4; r++)
			for (int c = 0; c < 4; c++)
				CHECK_NEAR(cellv(&fs, MX_ALL, r, c), raw[r][c], 1e-9);
		CHECK_NEAR(totalv(&fs, MX_TRUE), sum, 1e-9);
		CHECK_NEAR(totalv(&fs, MX_FALSE), 0, 1e-9);
		frun_free(&fs);
	}
	frun_free(&fx);
	tb_free(&b);
}

/* Repeated reads count once per write; a thread's reads of its own
 * writes never count.  T0 st X; T1 ld X x3 (1); T0 st X; T1 ld X x2 (2);
 * T1 st X; T1 ld X (own); T0 ld X (3: T1 -> T0). */
static void test_sig_repeated(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	acc(&b, 0, A, 8, ST);
	for (int i = 0; i < 3; i++)
		acc(&b, 1, A, 8, LD);
	acc(&b, 0, A, 8, ST);
	acc(&b, 1, A, 8, LD);
	acc(&b, 1, A, 8, LD);
	acc(&b, 1, A, 8, ST);
	acc(&b, 1, A, 8, LD);
	acc(&b, 0, A, 8, LD);
	CHECK(frun(&b, &model_signature, &o, &f) == 0);   /* default size and fp rate */
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 2, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 0, 1), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 3, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* A signature of one slot: every address collides.  T0 stores X; T1 reads
 * Y (never written): T0 -> T1 (false positive); T1 reads Y again: in the
 * filter, nothing; T2 reads Z: T0 -> T2; T0 reads Y: its own write, nothing;
 * T1 stores W: filter cleared, writer T1; T2 reads Z: T1 -> T2.  Exact sees
 * no communication at all (cold misses), so the excess against exact is 1. */
static void test_sig_collisions(void)
{
	struct tb b;
	struct frun f, fx;
	struct model_opts o = opts();
	full_init(&b, 3, 64);
	acc(&b, 0, 0x1000, 8, ST);
	acc(&b, 1, 0x2000, 8, LD);
	acc(&b, 1, 0x2000, 8, LD);
	acc(&b, 2, 0x3000, 8, LD);
	acc(&b, 0, 0x2000, 8, LD);
	acc(&b, 1, 0x4000, 8, ST);
	acc(&b, 2, 0x3000, 8, LD);
	CHECK(frun(&b, &model_exact, &o, &fx) == 0);
	o.signature_size = 1;
	o.fp_rate = 1e-6;
	CHECK(frun(&b, &model_signature, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 2, 0), 1, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 2, 1), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 3, 1e-9);
	CHECK_NEAR(totalv(&fx, MX_ALL), 0, 1e-9);
	struct matrix_cmp c;
	CHECK(matrix_compare(matrices_get(f.mx, MX_THREAD, MX_ALL),
	                     matrices_get(fx.mx, MX_THREAD, MX_ALL), &c) == 0);
	CHECK_NEAR(c.excess, 1, 1e-12);
	frun_free(&f);
	frun_free(&fx);
	tb_free(&b);
}

/* ---- emulate ------------------------------------------------------------------- */

/* Ping-pong, 8 alternating stores at 10, 20, ..., 80, every access sampled
 * (N = 1), no watchpoints.  The comdetective rules by hand (expiry of an
 * entry: the publisher's last store interval, 20 here from its 2nd store):
 *   10 T0: publishes {T0, 10}
 *   20 T1: T0 has 1 store: recent; T0 -> T1; t_prev(T1) = 10
 *   30 T0: own entry (age 20 <= 20), nothing
 *   40 T1: age 30 > 20: expired; publishes {T1, 40}
 *   50 T0: T1 -> T0 (age 10); t_prev(T0) = 40
 *   60 T1: own
 *   70 T0: age 30 > 20: publishes {T0, 70}
 *   80 T1: T0 -> T1 (70 > t_prev 10)
 * [1][0] = 2, [0][1] = 1: the same as the comdetective model on the trace
 * itself (every record is a sample of period 1). */
static void test_emu_pingpong(void)
{
	struct tb b;
	struct frun f, fc;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	for (int i = 0; i < 8; i++)
		acc(&b, i % 2, A, 8, ST);
	o.emulate_period = 1;
	o.watchpoints = MODEL_WP_NONE;
	CHECK(frun(&b, &model_emulate, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 2, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 0, 1), 1, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 3, 1e-9);
	CHECK_EQ_U(count_via(&f, COMM_VIA_WATCHPOINT), 0);
	struct model_opts oc = opts();
	CHECK(frun(&b, &model_comdetective, &oc, &fc) == 0);
	struct matrix_cmp c;
	matrix_compare(matrices_get(f.mx, MX_THREAD, MX_ALL), matrices_get(fc.mx, MX_THREAD, MX_ALL),
	               &c);
	CHECK_NEAR(c.l1, 0, 1e-12);
	CHECK_NEAR(c.sum_ref, 3, 1e-12);
	frun_free(&f);
	frun_free(&fc);
	tb_free(&b);
}

/* Every Nth access of each kind is sampled, with period N.  N = 2: T0
 * stores A twice (the 2nd, at 20, is sampled and publishes), T1 loads A
 * twice (the 2nd, at 40, sees the entry): T0 -> T1, weight 2. */
static void test_emu_period(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	acc(&b, 0, A, 8, ST);
	acc(&b, 0, A, 8, ST);
	acc(&b, 1, A, 8, LD);
	acc(&b, 1, A, 8, LD);
	o.emulate_period = 2;
	o.watchpoints = MODEL_WP_NONE;
	CHECK(frun(&b, &model_emulate, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 2, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 2, 1e-9);
	CHECK(f.log.n == 1 && f.log.ev[0].time == 40);
	frun_free(&f);
	tb_free(&b);
}

/* Watchpoints resolved on the full stream.  N = 8.  T0 stores A 8 times
 * (the 8th, at 80, is sampled and publishes A).  T1 loads FAR 8 times (its
 * 8th load, at 160, is sampled: no entry for FAR, so it arms D registers on
 * D random distinct words of A's line, publisher T0).  T1 then loads words
 * 0..6 of A (not sampled: loads 9..15): at least one of them is watched
 * (D >= 1 distinct words cannot all be word 7... for D = 1 it may be, so D
 * is 2 and 4 here), the first watched one traps, once.  The comdetective
 * model counts the hit (T1 has one sample: no expiry yet) with weight
 * period x L / (D x M) = 8 x 64 / (D x 8): 16 for D = 4, 32 for D = 2. */
static void test_emu_watchpoint(void)
{
	for (unsigned d = 2; d <= 4; d += 2) {
		struct tb b;
		struct frun f;
		struct model_opts o = opts();
		full_init(&b, 2, 64);
		for (int i = 0; i < 8; i++)
			acc(&b, 0, A, 8, ST);
		for (int i = 0; i < 8; i++)
			acc(&b, 1, FAR, 8, LD);
		for (int w = 0; w < 7; w++)
			acc(&b, 1, A + 8 * (uint64_t)w, 8, LD);
		o.emulate_period = 8;
		if (d != 4)
			o.watchpoints = d;        /* 4 is the default */
		CHECK(frun(&b, &model_emulate, &o, &f) == 0);
		CHECK_EQ_U(count_via(&f, COMM_VIA_WATCHPOINT), 1);
		CHECK_EQ_U(f.log.n, 1);
		if (f.log.n == 1) {
			const struct comm_event *e = &f.log.ev[0];
			CHECK_NEAR(e->weight, 8.0 * 64 / (d * 8), 1e-9);
			CHECK(e->dst == 1 && e->src == 0 && e->line == A && e->src_addr == A);
			CHECK(e->time > 160 && e->time <= 230);
		}
		frun_free(&f);
		tb_free(&b);
	}
}

/* The hit goes through the comdetective model's expiry (default: the
 * watcher's interval between its last two samples when it armed).  N = 8.
 * T1 loads FAR 8 times (sample at 8, nothing to arm); T0 stores A 8 times
 * (sample at 18 publishes); T1 loads FAR 8 times (sample at 28 arms on A:
 * interval 28 - 8 = 20); T1 loads words 0..6 of A from time `start`: the
 * trap at start + 0..6 is recent when its age since the publication (18)
 * is at most 20: counted (weight 16) for start = 30, not for 1000. */
static void test_emu_wp_expiry(void)
{
	for (int late = 0; late < 2; late++) {
		struct tb b;
		struct frun f;
		struct model_opts o = opts();
		full_init(&b, 2, 64);
		for (uint64_t i = 1; i <= 8; i++)
			tb_sample(&b, 1, i, FAR, 8, LD, 1);
		for (uint64_t i = 11; i <= 18; i++)
			tb_sample(&b, 0, i, A, 8, ST, 1);
		for (uint64_t i = 21; i <= 28; i++)
			tb_sample(&b, 1, i, FAR, 8, LD, 1);
		uint64_t start = late ? 1000 : 30;
		for (uint64_t w = 0; w < 7; w++)
			tb_sample(&b, 1, start + w, A + 8 * w, 8, LD, 1);
		o.emulate_period = 8;
		CHECK(frun(&b, &model_emulate, &o, &f) == 0);
		CHECK_EQ_U(f.log.n, late ? 0 : 1);
		CHECK_NEAR(totalv(&f, MX_ALL), late ? 0 : 16, 1e-9);
		frun_free(&f);
		tb_free(&b);
	}
}

/* Without a publication from another thread nothing is armed, and the
 * default period (10000) samples nothing in a short trace. */
static void test_emu_defaults(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	for (int i = 0; i < 100; i++)
		acc(&b, i % 2, A, 8, ST);
	CHECK(frun(&b, &model_emulate, &o, &f) == 0);
	CHECK_NEAR(totalv(&f, MX_ALL), 0, 1e-9);
	frun_free(&f);
	tb_free(&b);
}

/* The inst sampler's software line watches (--line-watches 4), N = 2:
 *   10, 20 T0 stores A+8 twice: the 2nd is sampled, published and logged
 *   30, 40 T1 loads FAR twice: the 2nd is sampled and watches A's whole
 *          line (T0's sample since T1's previous one): slot 0
 *   50     T1 loads A+24 (not sampled): the hit, T0 -> T1, false sharing
 *          (A+24..32 against A+8..16), weight 2 x 64 / 64 = 2
 *   60     T1 loads A+8 (sampled): the board's entry, T0 -> T1, true, 2
 * The watch ended at its hit: one watchpoint event. */
static void test_emu_line_watch(void)
{
	struct tb b;
	struct frun f;
	struct model_opts o = opts();
	full_init(&b, 2, 64);
	acc(&b, 0, A + 8, 8, ST);
	acc(&b, 0, A + 8, 8, ST);
	acc(&b, 1, FAR, 8, LD);
	acc(&b, 1, FAR, 8, LD);
	acc(&b, 1, A + 24, 8, LD);
	acc(&b, 1, A + 8, 8, LD);
	o.emulate_period = 2;
	o.watch_lines = 4;
	o.watch_life = 3;
	CHECK(frun(&b, &model_emulate, &o, &f) == 0);
	CHECK_NEAR(cellv(&f, MX_FALSE, 1, 0), 2, 1e-9);
	CHECK_NEAR(cellv(&f, MX_TRUE, 1, 0), 2, 1e-9);
	CHECK_NEAR(totalv(&f, MX_ALL), 4, 1e-9);
	CHECK_EQ_U(count_via(&f, COMM_VIA_WATCHPOINT), 1);
	frun_free(&f);
	/* a life of 1 sample: the watch ends at T1's next sample (60), after
	 * the hit at 50: the same */
	o.watch_life = 1;
	CHECK(frun(&b, &model_emulate, &o, &f) == 0);
	CHECK_EQ_U(count_via(&f, COMM_VIA_WATCHPOINT), 1);
	frun_free(&f);
	tb_free(&b);
}

/* ---- bench ------------------------------------------------------------------------ */

static double secs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void null_rec(void *self, const struct ct_record *r)
{
	(void)r;
	++*(uint64_t *)self;
}

static void null_ev(void *self, const struct comm_event *ev)
{
	(void)self;
	(void)ev;
}

/* 8 threads; each access: 90% its private 1 MiB region (random words, or
 * swept in order with "seq"), 10% random words of a shared 256 KiB array;
 * 20% stores. */
static uint64_t bench_addr(unsigned t, uint64_t i, uint64_t x, bool seq)
{
	bool shared = x % 10 == 0;
	if (shared)
		return 0x10000000ull + (x >> 8) % 32768 * 8;
	uint64_t off = seq ? i * 8 % (1u << 20) : (x >> 8) % 131072 * 8;
	return 0x40000000ull + (uint64_t)t * 0x1000000 + off;
}

/* The generated full trace, written to fd (closed). */
static int write_bench_trace(int fd, unsigned nt, uint64_t nrec, bool seq)
{
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = CT_FORMAT_MIN_READ,
	                       .features = CT_FEAT_SAMPLES | CT_FEAT_FULL };
	ct_write_header(fd, &h);
	const char *cfg = "sampler=inst\nperiod=1\nline_size=64\n";
	ct_write_section(fd, CT_SEC_CONFIG, cfg, strlen(cfg));
	for (unsigned t = 0; t < nt; t++) {
		struct ct_thread_info ti = { .index = t, .parent = t ? 0 : UINT32_MAX,
		                             .tid = (int32_t)(100 + t), .pid = 100, .start_ns = 1 };
		ct_write_thread_info(fd, &ti);
		struct ct_sink s;
		if (ct_sink_init(&s, fd, CT_BLOCK_DEFAULT, 1) < 0)
			return 1;
		struct ct_record r = { .type = CT_REC_SAMPLE, .thread = t };
		for (uint64_t i = 0; i < nrec / nt; i++) {
			uint64_t x = rnd();
			r.time = 1000 + i * nt + t;
			r.u.sample.addr = bench_addr(t, i, x, seq);
			r.u.sample.ip = 0x400000 + (x >> 40) % 4096;
			r.u.sample.len = 8;
			r.u.sample.kind = (x >> 32) % 5 == 0 ? ST : LD;
			r.u.sample.period = 1;
			r.u.sample.cpu = t;
			r.u.sample.flags = CT_SAMPLE_EXACT;
			ct_sink_append(&s, &r);
		}
		ct_sink_flush(&s);
		ct_sink_destroy(&s);
	}
	return close(fd);
}

static int bench(uint64_t nrec, bool seq)
{
	const unsigned nt = 8;
	char path[512];
	int fd = mkstemp(check_tmp_path(path, sizeof path, "ct-fullbench-XXXXXX"));
	if (fd < 0 || write_bench_trace(fd, nt, nrec, seq))
		return 1;
	struct ct_error err;
	struct ct_trace *tr = ct_trace_open(path, &err);
	if (!tr) {
		printf("%s\n", err.msg);
		return 1;
	}
	uint64_t count = 0;
	struct record_consumer nc = { &count, null_rec, NULL };
	double t0 = secs();
	replay(tr, &nc, 1, false, &err);
	double base = secs() - t0;
	printf("decode only      %8.2f M records/s (%" PRIu64 " records, %.2f s)\n",
	       count / base / 1e6, count, base);
	const struct model_ops *ms[] = { &model_exact, &model_signature, &model_emulate };
	for (size_t i = 0; i < 3; i++) {
		struct model_opts o;
		model_opts_default(&o);
		struct event_consumer ec = { NULL, null_ev };
		struct model_setup s = { .opts = &o, .trace = tr, .nthreads = nt, .line_size = 64,
		                         .out = &ec, .nout = 1 };
		void *m = ms[i]->create(&s);
		struct record_consumer rc = { m, ms[i]->record, ms[i]->finish };
		t0 = secs();
		replay(tr, &rc, 1, false, &err);
		double dt = secs() - t0;
		ms[i]->destroy(m);
		printf("%-16s %8.2f M records/s (%.2f s; model alone ~%.1f M/s)\n", ms[i]->name,
		       count / dt / 1e6, dt, dt > base ? count / (dt - base) / 1e6 : 0.0);
	}
	ct_trace_close(tr);
	unlink(path);

	/* the models alone: records from memory, no decoding */
	size_t nm = 2000000;
	struct ct_record *rec = malloc(nm * sizeof *rec);
	if (!rec)
		return 1;
	rng = 88172645463325252ull;
	for (size_t i = 0; i < nm; i++) {
		uint64_t x = rnd();
		unsigned t = (unsigned)(i % nt);
		rec[i] = (struct ct_record){ .type = CT_REC_SAMPLE, .thread = t, .time = 1000 + i };
		rec[i].u.sample.addr = bench_addr(t, i / nt, x, seq);
		rec[i].u.sample.len = 8;
		rec[i].u.sample.kind = (x >> 32) % 5 == 0 ? ST : LD;
		rec[i].u.sample.period = 1;
		rec[i].u.sample.cpu = t;
	}
	for (size_t i = 0; i < 3; i++) {
		struct model_opts o;
		model_opts_default(&o);
		struct event_consumer ec = { NULL, null_ev };
		struct model_setup s = { .opts = &o, .trace = NULL, .nthreads = nt, .line_size = 64,
		                         .out = &ec, .nout = 1 };
		void *m = ms[i]->create(&s);
		double best = 1e30;
		for (int rep = 0; rep < 5; rep++) {   /* best of 5: the machine may be busy */
			t0 = secs();
			for (size_t k = 0; k < nm; k++)
				ms[i]->record(m, &rec[k]);
			double dt = secs() - t0;
			if (dt < best)
				best = dt;
		}
		ms[i]->destroy(m);
		printf("%-16s %8.2f M records/s from memory (model alone, best of 5)\n", ms[i]->name,
		       nm / best / 1e6);
	}
	free(rec);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 3 && !strcmp(argv[1], "--write-trace")) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return fd < 0 || write_bench_trace(fd, 8, strtoull(argv[3], NULL, 10),
		                                   argc > 4 && !strcmp(argv[4], "seq"));
	}
	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return bench(argc > 2 ? strtoull(argv[2], NULL, 10) : 20000000ull,
		             argc > 3 && !strcmp(argv[3], "seq"));
	RUN(test_exact_pingpong);
	RUN(test_exact_false);
	RUN(test_exact_reader_repeated);
	RUN(test_exact_third);
	RUN(test_exact_cold);
	RUN(test_exact_span);
	RUN(test_exact_mask);
	RUN(test_exact_atomic);
	RUN(test_exact_many_threads);
	RUN(test_exact_line128);
	RUN(test_exact_not_full);
	RUN(test_sig_equals_exact_raw);
	RUN(test_sig_repeated);
	RUN(test_sig_collisions);
	RUN(test_emu_pingpong);
	RUN(test_emu_period);
	RUN(test_emu_watchpoint);
	RUN(test_emu_wp_expiry);
	RUN(test_emu_defaults);
	RUN(test_emu_line_watch);
	return check_summary();
}
