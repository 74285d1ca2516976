/* The window model, and the model option parser. */
#include <stdarg.h>

#include "ana_common.h"

#define A 0x10000ull

/* --window 1000, periods 1000:
 *   100  T0 stores A
 *   500  T1 loads A      pairs: T0@100 store  -> [1][0] true
 *   600  T2 loads A+8    pairs: T1@500 (load-load: no), T0@100 -> [2][0] false
 *   700  T0 loads A      pairs: T2, T1 loads (no), own (no)
 *   800  T1 stores A     pairs: T0@700 -> [1][0] true, T2@600 -> [1][2] false,
 *                        T0@100 -> [1][0] true
 *   2000 T1 loads A      nothing within 1000 but its own store
 * [1][0] = 3000 true, [2][0] = 1000 false, [1][2] = 1000 false */
static void build(struct tb *b)
{
	tb_init(b, 3);
	tb_sample(b, 0, 100, A, 8, ST, 1000);
	tb_sample(b, 1, 500, A, 8, LD, 1000);
	tb_sample(b, 2, 600, A + 8, 8, LD, 1000);
	tb_sample(b, 0, 700, A, 8, LD, 1000);
	tb_sample(b, 1, 800, A, 8, ST, 1000);
	tb_sample(b, 1, 2000, A, 8, LD, 1000);
}

static void test_window_pairs(void)
{
	struct tb b;
	struct analysis a;
	build(&b);
	CHECK(run(&b, &a, "model", "window", "window", "1000", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 3000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 2, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 1, 2), 1000, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 5000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_SAMPLE), 5);
	analysis_free(&a);
	/* window 300: 500-100 too far; 600-100 too far; 800: T0@700 and
	 * T2@600 only -> [1][0] 1000 true, [1][2] 1000 false */
	CHECK(run(&b, &a, "model", "window", "window", "300", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 1, 2), 1000, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 2000, 1e-9);
	analysis_free(&a);
	/* 2 us window: the load at 2000 also pairs with T0's store at 100 (1900
	 * apart): one more true event [1][0] */
	CHECK(run(&b, &a, "model", "window", "window", "2us", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 4000, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 6000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Weight is the later sample's period (x K). */
static void test_window_weight(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, ST, 7);
	tb_sample(&b, 1, 200, A, 8, LD, 1000);
	tb_sample(&b, 1, 300, A + 64, 8, ST, 1000);   /* another line */
	tb_sample(&b, 0, 400, A + 64, 8, LD, 3);
	CHECK(run(&b, &a, "model", "window", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 0, 1), 3, 1e-9);
	analysis_free(&a);
	/* K=2 keeps load #0 and store #0 of each thread: all four; weights x2 */
	CHECK(run(&b, &a, "model", "window", "period-multiplier", "2", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 2000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 0, 1), 6, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Many lines, far apart in time: the line table is pruned and stays
 * correct (one event per line). */
static void test_window_many_lines(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	const unsigned n = 50000;
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = 1000 + (uint64_t)i * 10000;
		tb_sample(&b, 0, t, A + 64ull * i, 8, ST, 1);
		tb_sample(&b, 1, t + 10, A + 64ull * i, 8, LD, 1);
	}
	CHECK(run(&b, &a, "model", "window", "window", "100", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), n, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), n, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

static void test_options(void)
{
	struct model_opts o;
	char err[256], buf[64];
	model_opts_default(&o);
	CHECK_STR(o.model, "comdetective");
	CHECK_EQ_U(o.board_size, 127);
	CHECK_EQ_U(o.period_multiplier, 1);
	CHECK(model_opts_parse(&o, "expiry", "ns:500", err, sizeof err) == 0);
	CHECK(o.expiry == EXPIRY_NS && o.expiry_value == 500);
	CHECK(model_opts_parse(&o, "expiry", "ns:2ms", err, sizeof err) == 0);
	CHECK_EQ_U(o.expiry_value, 2000000);
	CHECK(model_opts_parse(&o, "expiry", "samples:3", err, sizeof err) == 0);
	CHECK(o.expiry == EXPIRY_SAMPLES && o.expiry_value == 3);
	CHECK_STR(model_opts_format(&o, "expiry", buf, sizeof buf), "samples:3");
	CHECK(model_opts_parse(&o, "expiry", "samples:0", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "expiry", "soon", err, sizeof err) < 0);
	CHECK(strstr(err, "--expiry") != NULL);
	CHECK(model_opts_parse(&o, "expiry", "comdetective", err, sizeof err) == 0);
	CHECK(o.expiry == EXPIRY_COMDETECTIVE);
	CHECK(model_opts_parse(&o, "board-size", "0", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "board-size", "12x", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "board-size", "1", err, sizeof err) == 0);
	CHECK(model_opts_parse(&o, "hash", "murmur", err, sizeof err) == 0);
	CHECK(o.hash == HASH_MURMUR);
	CHECK(model_opts_parse(&o, "hash", "sha1", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "line-size", "96", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "line-size", "128", err, sizeof err) == 0);
	CHECK(model_opts_parse(&o, "watchpoints", "5", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "watchpoints", "0", err, sizeof err) == 0);
	CHECK_EQ_U(o.watchpoints, MODEL_WP_NONE);
	CHECK_STR(model_opts_format(&o, "watchpoints", buf, sizeof buf), "0");
	CHECK(model_opts_parse(&o, "signature-size", "4096", err, sizeof err) == 0);
	CHECK_EQ_U(o.signature_size, 4096);
	CHECK(model_opts_parse(&o, "fp-rate", "0.01", err, sizeof err) == 0);
	CHECK(o.fp_rate == 0.01);
	CHECK(model_opts_parse(&o, "fp-rate", "1.5", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "emulate-period", "0", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "emulate-period", "100", err, sizeof err) == 0);
	CHECK(model_opts_parse(&o, "watchpoints", "2", err, sizeof err) == 0);
	CHECK(model_opts_parse(&o, "period-multiplier", "0", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "period-multiplier", "-2", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "period-multiplier", "4", err, sizeof err) == 0);
	CHECK(model_opts_parse(&o, "window", "0", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "window", "5us", err, sizeof err) == 0);
	CHECK_EQ_U(o.window_ns, 5000);
	CHECK(model_opts_parse(&o, "model", "window", err, sizeof err) == 0);
	CHECK_STR(o.model, "window");
	CHECK(model_opts_parse(&o, "model", "oracle", err, sizeof err) < 0);
	CHECK(model_opts_parse(&o, "colour", "red", err, sizeof err) == 1);
	for (size_t i = 0; model_opt_names[i]; i++)
		CHECK(model_opts_format(&o, model_opt_names[i], buf, sizeof buf) != NULL);
}

int main(void)
{
	RUN(test_window_pairs);
	RUN(test_window_weight);
	RUN(test_window_many_lines);
	RUN(test_options);
	return check_summary();
}
