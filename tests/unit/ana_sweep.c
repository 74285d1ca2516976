/* commanalyze sweep: the grid, the reference, the shared replay (every point
 * equals the single analysis with its options, cell for cell, for any -j),
 * the predicted effects of board size, period multiplier and watchpoints,
 * the distances, and the HDF5 file. */
#include <math.h>
#include <stdarg.h>

#include "ana_common.h"
#include "sweep.h"

#ifdef HAVE_HDF5
#include <hdf5.h>
#endif

/* A sweep over the trace at path with the given --param specs
 * (NULL-terminated), fixed options from base (NULL: defaults). */
static int make_sweep(struct sweep *s, const char *path, unsigned jobs, const char *ref, ...)
	__attribute__((sentinel));
static int make_sweep(struct sweep *s, const char *path, unsigned jobs, const char *ref, ...)
{
	sweep_init(s);
	s->jobs = jobs;
	char err[512];
	va_list ap;
	va_start(ap, ref);
	const char *spec;
	while ((spec = va_arg(ap, const char *)))
		if (sweep_add_param(s, spec, err, sizeof err)) {
			printf("# %s\n", err);
			va_end(ap);
			return -1;
		}
	va_end(ap);
	if (sweep_build_grid(s, err, sizeof err) ||
	    sweep_set_reference(s, ref, NULL, err, sizeof err)) {
		printf("# %s\n", err);
		return -1;
	}
	if (sweep_add_trace(s, path) || sweep_alloc_results(s))
		return -1;
	if (sweep_run_trace(s, 0, NULL, 0))
		return -1;
	return sweep_compute_metrics(s);
}

/* Random multi-thread trace like ana_mktrace's "big", with a cpu map, arms
 * and hits, and several store/load mixes. */
static void build_random(struct tb *b, uint64_t n, unsigned nthreads)
{
	tb_init(b, nthreads);
	tb_machine(b, "cpu.0=core 0 socket 0\ncpu.1=core 1 socket 0\n"
	              "cpu.2=core 0 socket 1\ncpu.3=core 1 socket 1\n");
	b->block_cap = 4096;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t th = (uint32_t)(i % nthreads);
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t addr = (x & 7) == 0 ? 0x100000 + ((x >> 8) & 255) * 64 + ((x >> 20) & 7) * 8
		                             : 0x10000000ull * (th + 1) + ((x >> 8) & 0xffff) * 8;
		uint8_t kind = ((x >> 40) & 3) == 0 ? ST : (((x >> 40) & 15) == 1 ? CT_ACCESS_ATOMIC : LD);
		uint64_t t = 1000 + i * 37 + ((x >> 50) & 15);
		tb_sample_cpu(b, th, t, addr, (uint8_t)(1u << ((x >> 44) & 3)), kind, 1000 + (x & 7),
		              th & 3);
		if ((i & 31) == 5) {
			uint8_t nwp = (uint8_t)(1 + ((x >> 30) & 3));
			tb_arm(b, th, t, (th + 1) % nthreads, t - 200, 0x100000 + ((x >> 8) & 255) * 64, 8, nwp);
			tb_hit(b, th, t + 20, 0x100000 + ((x >> 8) & 255) * 64 + 8 * ((x >> 33) % nwp), 8,
			       (uint8_t)((x >> 33) % nwp));
		}
	}
}

/* Equal sizes and cells, bit for bit. */
static bool same_cells(const struct matrix *a, const struct matrix *m)
{
	if (a->n != m->n)
		return false;
	for (size_t r = 0; r < a->n; r++)
		for (size_t c = 0; c < a->n; c++) {
			double x = matrix_at(a, r, c), y = matrix_at(m, r, c);
			if (memcmp(&x, &y, sizeof x))
				return false;
		}
	return true;
}

/* A sweep result's directed matrix. */
static const struct matrix *res_matrix(const struct sweep_mats *r, int ix, int k)
{
	return matrices_get(r->mx, ix, k);
}

/* Every point equals analysis_run with its options, cell for cell. */
static void check_points_equal_single(const char *path, struct sweep *s)
{
	for (size_t p = 0; p < s->npoints; p++) {
		struct analysis a;
		int rc = analysis_run(&a, path, &s->opts[p], false);
		CHECK(rc == 0);
		if (rc) {
			analysis_free(&a);
			return;
		}
		const struct sweep_mats *r = sweep_res(s, 0, p);
		CHECK(r->done);
		for (int ix = 0; ix < 2; ix++)
			for (int k = 0; k < 3; k++)
				CHECK(same_cells(res_matrix(r, ix, k), matrices_get(a.mx, ix, k)));
		CHECK(memcmp(&r->tot, matrices_totals(a.mx), sizeof r->tot) == 0);
		CHECK_EQ_U(r->line_size, a.line_size);
		analysis_free(&a);
	}
}

static void test_point_equals_single_analysis(void)
{
	struct tb b;
	build_random(&b, 30000, 4);
	const char *path = tb_write(&b);
	CHECK(path != NULL);
	struct sweep s;
	int rc = make_sweep(&s, path, 1, NULL, "board-size=5,17,127", "period-multiplier=1..3",
	                    "expiry=comdetective,ns:5000,samples:3", "hash=mod,murmur", NULL);
	CHECK(rc == 0);
	CHECK_EQ_U(s.ngrid, 54);
	if (!rc)
		check_points_equal_single(path, &s);
	sweep_free(&s);
	/* other parameters: model, window, line-size, watchpoints */
	rc = make_sweep(&s, path, 2, NULL, "model=comdetective,window", "line-size=32,64,128",
	                "watchpoints=1..4", "window=1us,100us", NULL);
	CHECK(rc == 0);
	CHECK_EQ_U(s.ngrid, 48);
	if (!rc)
		check_points_equal_single(path, &s);
	sweep_free(&s);
	/* the full-trace models and their options, when they exist */
	if (model_find("exact") && model_find("signature") && model_find("emulate")) {
		rc = make_sweep(&s, path, 3, NULL, "model=exact,signature,emulate",
		                "signature-size=64,4096", "emulate-period=1,7", NULL);
		CHECK(rc == 0);
		CHECK_EQ_U(s.ngrid, 12);
		if (!rc)
			check_points_equal_single(path, &s);
		sweep_free(&s);
	}
	tb_free(&b);
}

static void test_jobs_identical(void)
{
	struct tb b;
	build_random(&b, 40000, 6);
	const char *path = tb_write(&b);
	CHECK(path != NULL);
	struct sweep s1, s4, s7;
	int r1 = make_sweep(&s1, path, 1, NULL, "board-size=3,31,127", "period-multiplier=1..4",
	                    "expiry=comdetective,ns:20000", NULL);
	int r4 = make_sweep(&s4, path, 4, NULL, "board-size=3,31,127", "period-multiplier=1..4",
	                    "expiry=comdetective,ns:20000", NULL);
	int r7 = make_sweep(&s7, path, 7, NULL, "board-size=3,31,127", "period-multiplier=1..4",
	                    "expiry=comdetective,ns:20000", NULL);
	CHECK(r1 == 0 && r4 == 0 && r7 == 0);
	if (!r1 && !r4 && !r7) {
		CHECK_EQ_U(s1.traces[0].records, s4.traces[0].records);
		for (size_t p = 0; p < s1.npoints; p++) {
			const struct sweep_mats *a = sweep_res(&s1, 0, p), *c = sweep_res(&s4, 0, p),
			                        *d = sweep_res(&s7, 0, p);
			for (int ix = 0; ix < 2; ix++)
				for (int k = 0; k < 3; k++) {
					size_t n = a->n[ix];
					CHECK(n == c->n[ix] && n == d->n[ix]);
					CHECK(same_cells(res_matrix(a, ix, k), res_matrix(c, ix, k)));
					CHECK(same_cells(res_matrix(a, ix, k), res_matrix(d, ix, k)));
				}
			CHECK(memcmp(sweep_metric(&s1, 0, p), sweep_metric(&s4, 0, p),
			             sizeof(struct sweep_metrics)) == 0);
		}
	}
	sweep_free(&s1);
	sweep_free(&s4);
	sweep_free(&s7);
	tb_free(&b);
}

/* Thread 0 stores to lines A and A+5; thread 1 loads both.  With a board of
 * 5 entries (line mod 5) both map to one entry: A's recent entry stays
 * (TryAtomicPut), B is never published and its load finds A: one event.
 * With 127 entries: two. */
static void test_small_board_collides(void)
{
	struct tb b;
	tb_init(&b, 2);
	uint64_t a = 0x40000, bb = a + 5 * 64;   /* line numbers differ by 5 */
	tb_sample(&b, 0, 100, a, 8, ST, 1000);
	tb_sample(&b, 0, 200, bb, 8, ST, 1000);
	tb_sample(&b, 1, 300, a, 8, LD, 1000);
	tb_sample(&b, 1, 400, bb, 8, LD, 1000);
	const char *path = tb_write(&b);
	struct sweep s;
	int rc = make_sweep(&s, path, 2, NULL, "board-size=5,6,127", "expiry=ns:1000000", NULL);
	CHECK(rc == 0);
	if (!rc) {
		/* points: 5, 6, 127 */
		CHECK_EQ_U(sweep_res(&s, 0, 0)->tot.events[COMM_VIA_SAMPLE][1], 1);
		CHECK_EQ_U(sweep_res(&s, 0, 1)->tot.events[COMM_VIA_SAMPLE][1], 2);
		CHECK_EQ_U(sweep_res(&s, 0, 2)->tot.events[COMM_VIA_SAMPLE][1], 2);
		const struct sweep_mats *m = sweep_res(&s, 0, 0);
		CHECK_NEAR(matrix_at(res_matrix(m, MX_THREAD, MX_ALL), 1, 0), 1000, 0);
		CHECK_NEAR(matrix_at(res_matrix(sweep_res(&s, 0, 2), MX_THREAD, MX_ALL), 1, 0), 2000, 0);
		/* the finest point is the largest board */
		CHECK_EQ_U(s.ref_point, 2);
		CHECK_NEAR(sweep_metric(&s, 0, 0)->l1_shape, 0, 0);   /* one pair: same shape */
		CHECK_NEAR(sweep_metric(&s, 0, 0)->l1, 0.5, 1e-12);   /* half the volume */
	}
	sweep_free(&s);
	tb_free(&b);
}

/* Thread 0 stores line i at 1000 i, thread 1 loads it 10 ns later.  Period
 * multiplier K keeps the samples whose per-thread, per-kind index is a
 * multiple of K: pairs 0, K, 2K...: ceil(N/K) events of weight period x K. */
static void test_period_multiplier_keeps_every_kth(void)
{
	struct tb b;
	tb_init(&b, 2);
	const unsigned n = 24;
	for (unsigned i = 0; i < n; i++) {
		tb_sample(&b, 0, 1000 * (i + 1), 0x80000 + 64 * i, 8, ST, 500);
		tb_sample(&b, 1, 1000 * (i + 1) + 10, 0x80000 + 64 * i, 8, LD, 500);
	}
	const char *path = tb_write(&b);
	struct sweep s;
	int rc = make_sweep(&s, path, 3, NULL, "model=comdetective,window", "period-multiplier=1..8",
	                    "expiry=ns:100", "window=100", NULL);
	CHECK(rc == 0);
	if (!rc) {
		for (size_t p = 0; p < s.ngrid; p++) {
			unsigned k = (unsigned)(s.coord[p * s.nparams + 1] + 1);
			const struct sweep_mats *m = sweep_res(&s, 0, p);
			uint64_t want = (n + k - 1) / k;
			CHECK_EQ_U(m->tot.events[COMM_VIA_SAMPLE][1], want);
			CHECK_NEAR(matrix_at(res_matrix(m, MX_THREAD, MX_ALL), 1, 0), (double)want * 500 * k, 0);
		}
		CHECK_EQ_U(s.ref_point, 0);   /* comdetective, K = 1 */
	}
	sweep_free(&s);
	tb_free(&b);
}

/* Two arms of 4 registers by thread 1 on thread 0's line, hit on register 0
 * and on register 3.  Weight of a hit: period x L / (D x 8), D = registers
 * used = min(armed, --watchpoints); hits on registers >= D are ignored.
 *   D = 4: 2P + 2P     D = 3: 64/24 P (reg 0 only)     D = 2: 4P     D = 1: 8P */
static void test_watchpoints_rescale(void)
{
	struct tb b;
	tb_init(&b, 2);
	const double P = 1000;
	tb_sample(&b, 0, 100, 0x50000, 8, ST, 1000);
	tb_sample(&b, 1, 150, 0x90000, 8, LD, 1000);
	tb_arm(&b, 1, 150, 0, 100, 0x50000, 8, 4);
	tb_hit(&b, 1, 160, 0x50000, 8, 0);
	tb_sample(&b, 1, 170, 0x90040, 8, LD, 1000);
	tb_arm(&b, 1, 170, 0, 100, 0x50000, 8, 4);
	tb_hit(&b, 1, 180, 0x50018, 8, 3);
	const char *path = tb_write(&b);
	struct sweep s;
	int rc = make_sweep(&s, path, 2, NULL, "watchpoints=1..4", "expiry=ns:100000", NULL);
	CHECK(rc == 0);
	if (!rc) {
		double want[4] = { 8 * P, 4 * P, 64.0 / 24 * P, 4 * P };
		uint64_t ev[4] = { 1, 1, 1, 2 };
		for (size_t p = 0; p < 4; p++) {
			const struct sweep_mats *m = sweep_res(&s, 0, p);
			CHECK_EQ_U(m->tot.events[COMM_VIA_WATCHPOINT][0] + m->tot.events[COMM_VIA_WATCHPOINT][1],
			           ev[p]);
			CHECK_NEAR(matrix_at(res_matrix(m, MX_THREAD, MX_ALL), 1, 0), want[p], 1e-9);
		}
		CHECK_EQ_U(s.ref_point, 3);   /* the most watchpoints */
	}
	sweep_free(&s);
	tb_free(&b);
}

static void test_param_parsing(void)
{
	struct sweep s;
	char err[512];
	sweep_init(&s);
	CHECK(sweep_add_param(&s, "period-multiplier=1..8", err, sizeof err) == 0);
	CHECK_EQ_U(s.params[0].nvalues, 8);
	CHECK_STR(s.params[0].values[7], "8");
	CHECK(s.params[0].numeric);
	CHECK(sweep_add_param(&s, "board-size=1..64:x2,127", err, sizeof err) == 0);
	CHECK_EQ_U(s.params[1].nvalues, 8);
	CHECK_STR(s.params[1].values[6], "64");
	CHECK_STR(s.params[1].values[7], "127");
	CHECK(sweep_add_param(&s, "expiry=samples:1..3,comdetective,ns:1ms", err, sizeof err) == 0);
	CHECK_EQ_U(s.params[2].nvalues, 5);
	CHECK_STR(s.params[2].values[0], "samples:1");
	CHECK_STR(s.params[2].values[4], "ns:1000000");
	CHECK(!s.params[2].numeric);
	CHECK(sweep_add_param(&s, "window=10..30:10", err, sizeof err) == 0);
	CHECK_EQ_U(s.params[3].nvalues, 3);
	CHECK_STR(s.params[3].values[2], "30");
	CHECK(sweep_add_param(&s, "board-size=3", err, sizeof err) < 0);          /* twice */
	CHECK(sweep_add_param(&s, "bogus=1,2", err, sizeof err) < 0);
	CHECK(strstr(err, "unknown model option") != NULL);
	CHECK(sweep_add_param(&s, "hash=mod,sha1", err, sizeof err) < 0);
	CHECK(strstr(err, "sha1") != NULL);
	CHECK(sweep_add_param(&s, "watchpoints=4..1", err, sizeof err) < 0);
	CHECK(sweep_add_param(&s, "line-size=8..64:x1", err, sizeof err) < 0);
	CHECK(sweep_add_param(&s, "hash=mod,mod", err, sizeof err) < 0);
	CHECK(sweep_add_param(&s, "hash", err, sizeof err) < 0);
	CHECK(sweep_build_grid(&s, err, sizeof err) == 0);
	CHECK_EQ_U(s.ngrid, 8 * 8 * 5 * 3);
	/* last parameter fastest */
	CHECK_STR(sweep_value(&s, 1, 3), "20");
	CHECK_STR(sweep_value(&s, 1, 0), "1");
	CHECK_EQ_U(s.opts[1].window_ns, 20);
	/* finest: period-multiplier 1, board 127, first expiry, first window */
	size_t f = sweep_finest_point(&s);
	CHECK_STR(sweep_value(&s, f, 0), "1");
	CHECK_STR(sweep_value(&s, f, 1), "127");
	CHECK_STR(sweep_value(&s, f, 2), "samples:1");
	CHECK_STR(sweep_value(&s, f, 3), "10");
	/* a reference on the grid, one off it */
	CHECK(sweep_set_reference(&s, "board-size=4,expiry=comdetective", NULL, err, sizeof err) == 0);
	CHECK(s.ref_point < s.ngrid);
	CHECK_STR(sweep_value(&s, s.ref_point, 1), "4");
	CHECK_STR(sweep_value(&s, s.ref_point, 2), "comdetective");
	CHECK_EQ_U(s.npoints, s.ngrid);
	CHECK(sweep_set_reference(&s, "board-size=1021", NULL, err, sizeof err) == 0);
	CHECK_EQ_U(s.ref_point, s.ngrid);
	CHECK_EQ_U(s.npoints, s.ngrid + 1);
	CHECK_EQ_U(s.opts[s.ngrid].board_size, 1021);
	CHECK(sweep_set_reference(&s, "board-size=x", NULL, err, sizeof err) < 0);
	CHECK(sweep_set_reference(&s, "nosuchfile", NULL, err, sizeof err) < 0);
	CHECK(sweep_set_reference(&s, "first", NULL, err, sizeof err) == 0);
	CHECK_EQ_U(s.ref_point, 0);
	sweep_free(&s);

	sweep_init(&s);
	CHECK(sweep_add_param(&s, "board-size=1..200", err, sizeof err) == 0);
	CHECK(sweep_add_param(&s, "window=1..1000", err, sizeof err) == 0);
	CHECK(sweep_build_grid(&s, err, sizeof err) < 0);   /* 200000 points */
	sweep_free(&s);
}

/* A dense n x n matrix of cells c. */
#define DENSE(n_, c) (&(struct matrix){ .n = (n_), .cell = (c) })

/* The definitions of compare.h, on pairs of the symmetric form. */
static void test_distances(void)
{
	/* 3 threads, directed; pairs (0,1) (0,2) (1,2) */
	double ref[9] = { 0, 10, 0,   0, 0, 5,   1, 0, 0 };   /* pairs: 10, 1, 5 */
	double same[9] = { 0, 20, 0,  0, 0, 10,  2, 0, 0 };   /* scaled x2 */
	double other[9] = { 0, 0, 0,  0, 0, 0,   0, 8, 0 };   /* pair (1,2) only */
	struct sweep_metrics m;
	CHECK(sweep_compare(DENSE(3, same), DENSE(3, ref), 5, &m) == 0);
	CHECK_NEAR(m.volume, 32, 0);
	CHECK_NEAR(m.l1, 1, 1e-12);           /* sum |a - r| / R = 16 / 16 */
	CHECK_NEAR(m.l1_shape, 0, 1e-12);
	CHECK_NEAR(m.pearson, 1, 1e-12);
	CHECK_NEAR(m.excess, 0.5, 1e-12);     /* 16 / 32 */
	CHECK_NEAR(m.ratio, 2, 1e-12);
	CHECK_EQ_U(m.k, 3);
	CHECK_NEAR(m.topk, 1, 0);
	CHECK(sweep_compare(DENSE(3, other), DENSE(3, ref), 1, &m) == 0);
	CHECK_NEAR(m.l1_shape, 10.0 / 16 + 1.0 / 16 + 11.0 / 16, 1e-12);
	CHECK_EQ_U(m.k, 1);
	CHECK_NEAR(m.topk, 0, 0);   /* reference's top pair (0,1) missing */
	double z[9] = { 0 };
	CHECK(sweep_compare(DENSE(3, z), DENSE(3, ref), 5, &m) == 0);
	CHECK_NEAR(m.l1, 1, 0);
	CHECK_NEAR(m.l1_shape, 2, 0);
	CHECK_NEAR(m.topk, 0, 0);
	CHECK(!isnan(m.pearson));
	/* sizes differ: the missing thread counts as zeros */
	double small[4] = { 0, 10, 0, 0 };
	CHECK(sweep_compare(DENSE(2, small), DENSE(3, ref), 1, &m) == 0);
	CHECK_EQ_U(m.k, 1);
	CHECK_NEAR(m.topk, 1, 0);
	CHECK_NEAR(m.excess, 0, 0);
	double extra[9] = { 0, 10, 0, 0, 0, 0, 0, 0, 0 };
	double r2[9] = { 0, 0, 0, 0, 0, 3, 0, 0, 0 };
	CHECK(sweep_compare(DENSE(3, extra), DENSE(3, r2), 5, &m) == 0);
	CHECK_NEAR(m.excess, 1, 0);
	CHECK_NEAR(m.missing, 1, 0);
}

static void test_reference_trace(void)
{
	struct tb b;
	build_random(&b, 10000, 4);
	const char *path = tb_write(&b);
	struct sweep s;
	sweep_init(&s);
	s.jobs = 2;
	char err[512];
	CHECK(sweep_add_param(&s, "board-size=7,127", err, sizeof err) == 0);
	CHECK(sweep_build_grid(&s, err, sizeof err) == 0);
	/* the trace itself, analyzed with the window model */
	CHECK(sweep_set_reference(&s, path, "window", err, sizeof err) == 0);
	CHECK(s.ref_kind == SWEEP_REF_TRACE);
	CHECK(sweep_add_trace(&s, path) == 0 && sweep_alloc_results(&s) == 0);
	CHECK(sweep_run_trace(&s, 0, NULL, 0) == 0);
	CHECK(sweep_run_reference(&s) == 0);
	CHECK(sweep_compute_metrics(&s) == 0);
	CHECK(s.ref_mats.done);
	struct analysis a;
	struct model_opts o;
	model_opts_default(&o);
	o.model = "window";
	CHECK(analysis_run(&a, path, &o, false) == 0);
	CHECK(same_cells(res_matrix(&s.ref_mats, MX_THREAD, MX_ALL),
	                 matrices_get(a.mx, MX_THREAD, MX_ALL)));
	struct sweep_metrics m;
	const struct sweep_mats *p1 = sweep_res(&s, 0, 1);
	CHECK(sweep_compare(res_matrix(p1, MX_THREAD, MX_ALL), res_matrix(&s.ref_mats, MX_THREAD, MX_ALL),
	                    SWEEP_TOPK, &m) == 0);
	CHECK(memcmp(&m.l1, &sweep_metric(&s, 0, 1)->l1, sizeof m.l1) == 0);
	analysis_free(&a);
	sweep_free(&s);
	tb_free(&b);

	/* a full trace is analyzed with the exact model by default */
	if (model_find("exact")) {
		build_random(&b, 2000, 2);
		b.features |= CT_FEAT_FULL;
		path = tb_write(&b);
		sweep_init(&s);
		CHECK(sweep_add_param(&s, "board-size=7,127", err, sizeof err) == 0);
		CHECK(sweep_build_grid(&s, err, sizeof err) == 0);
		CHECK(sweep_set_reference(&s, path, NULL, err, sizeof err) == 0);
		CHECK_STR(s.ref_opts.model, "exact");
		CHECK(strstr(s.ref_desc, "exact") != NULL);
		sweep_free(&s);
		tb_free(&b);
	}
}

static void test_damaged_trace(void)
{
	struct tb b;
	build_random(&b, 20000, 3);
	b.block_cap = 1024;
	const char *path = tb_write(&b);
	/* cut the file in the middle of the data */
	FILE *f = fopen(path, "r+");
	CHECK(f != NULL);
	if (!f) {
		tb_free(&b);
		return;
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fclose(f);
	CHECK(truncate(path, len / 2) == 0);
	struct sweep s;
	sweep_init(&s);
	char err[512];
	CHECK(sweep_add_param(&s, "board-size=7,127", err, sizeof err) == 0);
	CHECK(sweep_build_grid(&s, err, sizeof err) == 0);
	CHECK(sweep_set_reference(&s, NULL, NULL, err, sizeof err) == 0);
	CHECK(sweep_add_trace(&s, path) == 0 && sweep_alloc_results(&s) == 0);
	int rc = sweep_run_trace(&s, 0, NULL, 0);
	/* either unreadable (exit status) or damaged with partial results */
	CHECK(rc == EXIT_BADTRACE || (rc == 0 && s.traces[0].damaged && s.traces[0].damage[0]));
	sweep_free(&s);
	tb_free(&b);
}

static void test_h5_file(void)
{
#ifndef HAVE_HDF5
	SKIP("built without HDF5");
#else
	struct tb b;
	build_random(&b, 8000, 4);
	const char *path = tb_write(&b);
	struct sweep s;
	int rc = make_sweep(&s, path, 2, "board-size=1021", "board-size=7,127", "hash=mod,murmur", NULL);
	CHECK(rc == 0);
	char out[300];
	snprintf(out, sizeof out, "%s.h5", path);
	struct ct_error err = {{0}};
	s.directed = true;
	CHECK(sweep_write_h5(&s, out, &err) == 0);
	hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
	CHECK(f >= 0);
	if (f >= 0 && !rc) {
		const struct sweep_mats *m = sweep_res(&s, 0, 3);
		size_t n = m->n[MX_THREAD];
		double *buf = calloc(n * n + 1, sizeof *buf);
		hid_t d = H5Dopen2(f, "/points/0003/thread_false", H5P_DEFAULT);
		CHECK(d >= 0);
		CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
		double *want = calloc(n * n + 1, sizeof *want);
		matrix_directed(res_matrix(m, MX_THREAD, MX_FALSE), want);
		CHECK(memcmp(buf, want, n * n * sizeof *buf) == 0);
		free(want);
		H5Dclose(d);
		/* summary with the grid's shape */
		d = H5Dopen2(f, "/summary/l1", H5P_DEFAULT);
		CHECK(d >= 0);
		hid_t sp = H5Dget_space(d);
		hsize_t dims[4];
		CHECK_EQ_U(H5Sget_simple_extent_ndims(sp), 2);
		H5Sget_simple_extent_dims(sp, dims, NULL);
		CHECK_EQ_U(dims[0], 2);
		CHECK_EQ_U(dims[1], 2);
		double l1[4];
		CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, l1) >= 0);
		CHECK(memcmp(&l1[2], &sweep_metric(&s, 0, 2)->l1, sizeof(double)) == 0);
		H5Sclose(sp);
		H5Dclose(d);
		CHECK(H5Lexists(f, "/reference", H5P_DEFAULT) > 0);     /* off-grid reference */
		CHECK(H5Lexists(f, "/grid/board-size", H5P_DEFAULT) > 0);
		CHECK(H5Aexists_by_name(f, "/points/0001", "hash", H5P_DEFAULT) > 0);
		free(buf);
		H5Fclose(f);
	}
	unlink(out);
	sweep_free(&s);
	tb_free(&b);
#endif
}

/* The plot: series stay apart (distinct marker shapes and dash patterns,
 * markers drawn after every line of a panel, the legend shows both); panels
 * have a light frame and dark axes.  Parsed by python3 like the other SVG
 * tests; prints "ok" or what is wrong. */
static const char plot_check_py[] =
	"import sys, xml.etree.ElementTree as ET\n"
	"ns='{http://www.w3.org/2000/svg}'\n"
	"r=ET.parse(sys.argv[1]).getroot(); n=int(sys.argv[2])\n"
	"assert r.tag==ns+'svg'\n"
	"gs=[g for g in r.iter(ns+'g') if g.get('class') in ('series','markers')]\n"
	"seq=''.join(g.get('class')[0] for g in gs)\n"
	"assert seq==('s'*n+'m'*n)*6, 'order '+seq\n"
	"ser=[g for g in gs if g.get('class')=='series'][:n]\n"
	"mk=[g.get('data-marker') for g in ser]\n"
	"assert len(set(mk))==n, 'markers %s'%mk\n"
	"da=[g.find(ns+'polyline').get('stroke-dasharray') for g in ser]\n"
	"assert len(set(da))==n, 'dashes %s'%da\n"
	"for g in [g for g in gs if g.get('class')=='markers'][:n]:\n"
	"  ps=g.findall(ns+'path')\n"
	"  assert ps and all(p.get('class')=='marker' for p in ps)\n"
	"  assert len(set(p.get('d').split()[0][0] for p in ps))==1\n"
	"shapes=[g.findall(ns+'path')[0].get('d') for g in gs if g.get('class')=='markers'][:n]\n"
	"import re\n"
	"norm=[re.sub(r'-?[0-9.]+','#',d) for d in shapes]\n"
	"assert len(set(norm))==n, 'marker paths alike %s'%norm\n"
	"lk=[g for g in r.iter(ns+'g') if g.get('class')=='legend-key']\n"
	"assert [g.get('data-marker') for g in lk]==mk, 'legend markers'\n"
	"assert [g.find(ns+'line').get('stroke-dasharray') for g in lk]==da, 'legend dashes'\n"
	"assert all(g.find(ns+'path') is not None for g in lk)\n"
	"fr=[e for e in r.iter(ns+'rect') if e.get('class')=='frame']\n"
	"assert len(fr)==6 and all(e.get('stroke')=='#d4d4d4' for e in fr), 'frames'\n"
	"assert len([e for e in r.iter(ns+'path') if e.get('class')=='axes'])==6, 'axes'\n"
	"print('ok')\n";

static void test_plot(void)
{
	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		SKIP("python3 not installed");
		return;
	}
	struct tb b;
	build_random(&b, 4000, 4);
	const char *path = tb_write(&b);
	struct sweep s;
	/* x: board-size; four lines: watchpoints */
	int rc = make_sweep(&s, path, 2, NULL, "board-size=7,31,127", "watchpoints=1..4", NULL);
	CHECK(rc == 0);
	char svg[300], py[300], out[300], cmd[1200];
	snprintf(svg, sizeof svg, "%s.svg", path);
	snprintf(py, sizeof py, "%s.py", path);
	snprintf(out, sizeof out, "%s.out", path);
	if (!rc) {
		CHECK(sweep_write_plot(&s, svg) == 0);
		FILE *f = fopen(py, "w");
		CHECK(f != NULL);
		if (f) {
			fputs(plot_check_py, f);
			fclose(f);
			snprintf(cmd, sizeof cmd, "python3 %s %s 4 > %s 2>&1", py, svg, out);
			int st = system(cmd);
			CHECK_EQ_U(st, 0);
			FILE *o = fopen(out, "r");
			char line[600] = "";
			if (o) {
				if (!fgets(line, sizeof line, o))
					line[0] = 0;
				fclose(o);
			}
			if (strcmp(line, "ok\n"))
				printf("# plot: %s", line);
			CHECK(strcmp(line, "ok\n") == 0);
		}
	}
	unlink(svg);
	unlink(py);
	unlink(out);
	sweep_free(&s);
	tb_free(&b);
}

int main(void)
{
	RUN(test_param_parsing);
	RUN(test_distances);
	RUN(test_point_equals_single_analysis);
	RUN(test_jobs_identical);
	RUN(test_small_board_collides);
	RUN(test_period_multiplier_keeps_every_kth);
	RUN(test_watchpoints_rescale);
	RUN(test_reference_trace);
	RUN(test_damaged_trace);
	RUN(test_h5_file);
	RUN(test_plot);
	return check_summary();
}
