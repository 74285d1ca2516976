/* The owner estimator (model_exact.c: exact_owner_*, emulate --estimator
 * owner) and the report's 90% intervals (interval.c).
 *
 *   - its value, true/false split and variance on a hand-built sequence,
 *     worked out by hand below;
 *   - every access sampled with weight 1: exactly exact's counts, on a
 *     random full trace;
 *   - unbiased: accesses sampled with probability 1/P, R independent runs;
 *     the mean is within z = 4.42 standard errors (two-sided 1e-5) of
 *     exact's count, the standard error sqrt((P-1) sum Z_s^2 / R) computed
 *     from the trace itself, not fitted; the variance estimator's mean and
 *     the spread of the estimates against (P-1) sum Z_s^2, and the 90%
 *     interval's coverage against a binomial bound;
 *   - the intervals' values by hand; the option's parsing and where it runs;
 *     the emulate model with --estimator owner and period 1 equals exact;
 *     the comdetective estimator's variance part on a sampled trace;
 *   - the owner estimator on the line monitor's records of a hand-built
 *     inst-sampled trace (values by hand), and its refusals. */
#include <math.h>

#include "check.h"
#include "tracebuild.h"
#include "ana.h"
#include "model_common.h"

extern const struct model_ops model_exact;
extern const struct model_ops model_emulate;

#define ST CT_ACCESS_STORE
#define LD CT_ACCESS_LOAD
#define A 0x10000ull
#define Z5 4.42           /* two-sided 1e-5 of N(0, 1) */

/* ---- the estimator on records in memory ------------------------------------- */

struct sums {
	double all, tr, fa, var, unit_max;
	size_t n;
	struct comm_event ev[16];    /* the first events */
};

static void sum_event(void *self, const struct comm_event *ev)
{
	struct sums *s = self;
	s->all += ev->weight;
	s->var += ev->var;
	if (ev->unit_max > s->unit_max)
		s->unit_max = ev->unit_max;
	if (ev->true_sharing)
		s->tr += ev->weight;
	else
		s->fa += ev->weight;
	if (s->n < 16)
		s->ev[s->n] = *ev;
	s->n++;
}

struct acc {
	uint32_t t;
	uint64_t addr;
	uint8_t len, kind;
};

static struct ct_record rec_of(const struct acc *a, uint64_t time)
{
	struct ct_record r = { .type = CT_REC_SAMPLE, .thread = a->t, .time = time };
	r.u.sample.addr = a->addr;
	r.u.sample.len = a->len;
	r.u.sample.kind = a->kind;
	r.u.sample.period = 1;
	r.u.sample.cpu = a->t;
	return r;
}

static struct model_setup setup_for(struct model_opts *o, size_t nthreads,
                                    struct event_consumer *ec)
{
	model_opts_default(o);
	return (struct model_setup){ .opts = o, .nthreads = nthreads, .line_size = 64,
	                             .out = ec, .nout = 1 };
}

/* The owner estimator with window J over acc[0..n) with owner weights w[]
 * (0: that access was not sampled). */
static void owner_run_j(const struct acc *acc, const double *w, size_t n, size_t nthreads,
                        unsigned j, struct sums *s)
{
	memset(s, 0, sizeof *s);
	struct event_consumer ec = { s, sum_event };
	struct model_opts o;
	struct model_setup su = setup_for(&o, nthreads, &ec);
	o.owner_window = j;
	void *x = exact_owner_create(&su);
	CHECK(x != NULL);
	if (!x)
		return;
	for (size_t i = 0; i < n; i++) {
		struct ct_record r = rec_of(&acc[i], 10 * (i + 1));
		exact_owner_access(x, &r, w[i]);
	}
	model_exact.destroy(x);
}

/* J = 1: a sampled access counts the transfers of the next access to its line. */
static void owner_run(const struct acc *acc, const double *w, size_t n, size_t nthreads,
                      struct sums *s)
{
	owner_run_j(acc, w, n, nthreads, 1, s);
}

/* The exact model over the same accesses. */
static void exact_run(const struct acc *acc, size_t n, size_t nthreads, struct sums *s)
{
	memset(s, 0, sizeof *s);
	struct event_consumer ec = { s, sum_event };
	struct model_opts o;
	struct model_setup su = setup_for(&o, nthreads, &ec);
	void *x = model_exact.create(&su);
	CHECK(x != NULL);
	if (!x)
		return;
	for (size_t i = 0; i < n; i++) {
		struct ct_record r = rec_of(&acc[i], 10 * (i + 1));
		model_exact.record(x, &r);
	}
	model_exact.destroy(x);
}

/* One line, three threads (worked out by hand), J = 1: a transfer is
 * stood for by the access just before it:
 *   0 T0 ST A+0..7    sampled, P = 4: stands for 1
 *   1 T1 LD A+0..7    transfer T0 -> T1, true (T0 wrote 0..7): 4, var 3*4*1 = 12
 *   2 T1 LD A+0..7    T1 holds a copy: nothing; sampled, P = 4: stands for 3
 *   3 T2 LD A+8..15   transfer T0 -> T2, false: 4, var 12
 *   4 T1 ST A+16..23  an upgrade (T1 holds a copy); not sampled
 *   5 T0 LD A+0..7    transfer T1 -> T0 (false): 4 not sampled, no event
 *   6 T2 ST A+8..15   transfer T1 -> T2 (false, no event); sampled, P = 2: stands for 7
 *   7 T0 LD A+8..15   transfer T2 -> T0, true (T2 wrote 8..15): 2, var 1*2*1 = 2
 * Estimate 4 + 4 + 2 = 10, true 6, false 4; variance sum (P-1) P Z_s^2 =
 * 12 + 12 + 2 = 26.  exact: 5 transfers. */
static const struct acc by_hand[] = {
	{ 0, A, 8, ST }, { 1, A, 8, LD }, { 1, A, 8, LD }, { 2, A + 8, 8, LD },
	{ 1, A + 16, 8, ST }, { 0, A, 8, LD }, { 2, A + 8, 8, ST }, { 0, A + 8, 8, LD },
};
static const double by_hand_w[] = { 4, 0, 4, 0, 0, 0, 2, 0 };

static void test_owner_by_hand(void)
{
	struct sums s, x;
	owner_run(by_hand, by_hand_w, 8, 3, &s);
	CHECK_NEAR(s.all, 10, 1e-12);
	CHECK_NEAR(s.tr, 6, 1e-12);
	CHECK_NEAR(s.fa, 4, 1e-12);
	CHECK_NEAR(s.var, 26, 1e-12);
	CHECK_EQ_U(s.n, 3);
	CHECK(s.ev[0].dst == 1 && s.ev[0].src == 0 && s.ev[0].true_sharing && s.ev[0].var == 12 &&
	      s.ev[0].via == COMM_VIA_SAMPLE && s.ev[0].time == 20);
	CHECK(s.ev[1].dst == 2 && s.ev[1].src == 0 && !s.ev[1].true_sharing && s.ev[1].var == 12);
	CHECK(s.ev[2].dst == 0 && s.ev[2].src == 2 && s.ev[2].true_sharing && s.ev[2].weight == 2 &&
	      s.ev[2].var == 2 && s.ev[2].time == 80);
	exact_run(by_hand, 8, 3, &x);
	CHECK_NEAR(x.all, 5, 1e-12);
	CHECK_NEAR(x.var, 0, 1e-12);
}

/* The same with J = 2: sampled s0 (P = 4), s2 (P = 4), s6 (P = 2);
 * transfers x1, x3, x5, x6, x7 (at the access that receives them).
 *   A(x1) = {0}, m = 1 (the line's first access): s0: 4 (true);
 *   A(x3) = {1, 2}, m = 2: s2: 4 / 2 = 2 (false);
 *   A(x5) = {3, 4}, A(x6) = {4, 5}: none sampled, no event;
 *   A(x7) = {5, 6}, m = 2: s6: 2 / 2 = 1 (true).
 * Estimate 7, true 5, false 2.  Z_s0 = 1, Z_s2 = 1/2, Z_s6 = 1/2: variance
 * estimate 3*4*1 + 3*4/4 + 1*2/4 = 15.5, per event 12, 3, 0.5. */
static void test_owner_window_by_hand(void)
{
	struct sums s;
	owner_run_j(by_hand, by_hand_w, 8, 3, 2, &s);
	CHECK_NEAR(s.all, 7, 1e-12);
	CHECK_NEAR(s.tr, 5, 1e-12);
	CHECK_NEAR(s.fa, 2, 1e-12);
	CHECK_NEAR(s.var, 15.5, 1e-9);
	CHECK_EQ_U(s.n, 3);
	static const double w[3] = { 4, 2, 1 }, v[3] = { 12, 3, 0.5 };
	for (int i = 0; i < 3 && i < (int)s.n; i++) {
		CHECK_NEAR(s.ev[i].weight, w[i], 1e-12);
		CHECK_NEAR(s.ev[i].var, v[i], 1e-9);
	}
	CHECK(s.ev[1].dst == 2 && s.ev[1].src == 0 && !s.ev[1].true_sharing);
}

/* Bursts: two threads take turns storing B times each to one word.  Only
 * the last store of a burst owns a transfer (Y = 1, the others 0): with
 * J = 1 the variance is (P - 1) per transfer; with J <= B every store of
 * the burst before a transfer stands for it at 1/J: sum Z_s^2 = J (1/J)^2
 * per transfer, J times less (the first transfer: B / 2 stores).  Exact for every J (all sampled, weight 1). */
static void test_owner_window_bursts(void)
{
	enum { B = 100, TURNS = 40, N = B * TURNS };
	static struct acc acc[N];
	static double w[N];
	for (size_t i = 0; i < N; i++) {
		acc[i] = (struct acc){ (uint32_t)(i / B % 2), A, 8, ST };
		w[i] = 2;    /* each store adds (2 - 1) 2 Z_s^2: the variance / 2 is sum Z^2 */
	}
	struct sums s1, s64;
	owner_run_j(acc, w, N, 2, 1, &s1);
	owner_run_j(acc, w, N, 2, 64, &s64);
	CHECK_NEAR(s1.all, 2 * (TURNS - 1), 1e-9);      /* weight 2 x 39 transfers */
	CHECK_NEAR(s64.all, 2 * (TURNS - 1), 1e-9);
	CHECK_NEAR(s1.var / 2, TURNS - 1, 1e-9);
	/* the first transfer follows the line's first B accesses: its window is
	 * their last B / 2 = 50 (model_exact.c), 50 (1/50)^2; the others 1/64 */
	CHECK_NEAR(s64.var / 2, 1.0 / (B / 2) + (TURNS - 2) / 64.0, 1e-9);
	for (size_t i = 0; i < N; i++)
		w[i] = 1;
	owner_run_j(acc, w, N, 2, 64, &s64);
	CHECK_NEAR(s64.all, TURNS - 1, 1e-9);           /* exact's count */
	CHECK_NEAR(s64.var, 0, 1e-9);
}

/* ---- a random full trace ---------------------------------------------------- */

#define RT_N 20000
#define RT_THREADS 4

/* 4 threads on 8 lines: 30% stores, 1 to 8 bytes at random offsets (some
 * span two lines), so that transfers, upgrades, cold misses, true and false
 * sharing all occur. */
static void random_trace(struct acc *acc, size_t n)
{
	uint64_t st = 0x243f6a8885a308d3ull;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = check_xorshift(&st);
		acc[i] = (struct acc){
			.t = (uint32_t)(r % RT_THREADS),
			.addr = A + (r >> 8) % (8 * 64),
			.len = (uint8_t)(1 + (r >> 20) % 8),
			.kind = (r >> 32) % 10 < 3 ? ST : LD,
		};
	}
}

/* Every access sampled with weight 1: exactly exact's volume and split. */
static void test_owner_all_sampled_is_exact(void)
{
	static struct acc acc[RT_N];
	static double w[RT_N];
	random_trace(acc, RT_N);
	for (size_t i = 0; i < RT_N; i++)
		w[i] = 1;
	struct sums s, x;
	owner_run(acc, w, RT_N, RT_THREADS, &s);
	exact_run(acc, RT_N, RT_THREADS, &x);
	CHECK(x.all > 1000 && x.tr > 100 && x.fa > 100);
	CHECK_NEAR(s.all, x.all, 1e-9);
	CHECK_NEAR(s.tr, x.tr, 1e-9);
	CHECK_NEAR(s.fa, x.fa, 1e-9);
	CHECK_NEAR(s.var, 0, 1e-9);
	owner_run_j(acc, w, RT_N, RT_THREADS, 64, &s);
	CHECK_NEAR(s.all, x.all, 1e-9);
	CHECK_NEAR(s.tr, x.tr, 1e-9);
	CHECK_NEAR(s.var, 0, 1e-9);
}

/* Accesses sampled with probability 1/P, R runs, window J. */
static void owner_unbiased(unsigned j)
{
	enum { R = 400 };
	const double P = 10;
	static struct acc acc[RT_N];
	static double w[RT_N];
	random_trace(acc, RT_N);
	struct sums x, s;
	exact_run(acc, RT_N, RT_THREADS, &x);
	/* sum Z_s^2: every access of weight 2 adds (2-1) 2 Z_s^2 */
	for (size_t i = 0; i < RT_N; i++)
		w[i] = 2;
	owner_run_j(acc, w, RT_N, RT_THREADS, j, &s);
	double sumy2 = s.var / 2, var_true = (P - 1) * sumy2;
	double mean = 0, mean_tr = 0, m2 = 0, mean_vhat = 0;
	unsigned covered = 0;
	uint64_t st = 0x13198a2e03707344ull;
	double est[R];
	for (int k = 0; k < R; k++) {
		for (size_t i = 0; i < RT_N; i++)
			w[i] = check_xorshift(&st) % (uint64_t)P == 0 ? P : 0;
		owner_run_j(acc, w, RT_N, RT_THREADS, j, &s);
		est[k] = s.all;
		mean += s.all / R;
		mean_tr += s.tr / R;
		mean_vhat += s.var / R;
		struct interval ci = volume_interval(s.all, s.var, s.unit_max);
		covered += ci.lo <= x.all && x.all <= ci.hi;
	}
	for (int k = 0; k < R; k++)
		m2 += (est[k] - mean) * (est[k] - mean) / (R - 1);
	double se = sqrt(var_true / R);
	printf("# J = %u: exact %.0f (true %.0f), owner mean %.1f (true %.1f), se %.2f; var: true %.0f, "
	       "mean estimate %.0f, spread %.0f; 90%% coverage %u/%d\n", j, x.all, x.tr, mean, mean_tr,
	       se, var_true, mean_vhat, m2, covered, R);
	CHECK(fabs(mean - x.all) <= Z5 * se);
	/* the true part: its variance is at most the volume's (Z_s counts its
	 * true transfers among all) */
	CHECK(fabs(mean_tr - x.tr) <= Z5 * se);
	/* the variance estimator is unbiased too: its own spread is at most
	 * (P-1) P sum over sampled Z_s^4, whose mean is (P-1)^2 P sum Z_s^4 <=
	 * (P-1)^2 P max(Z)^2 sum Z_s^2: each of the J accesses of an access's
	 * window receives at most one transfer on the line, which makes
	 * Z_s <= 3/2 on one line (model_exact.c), and an access spans at most
	 * two lines: max(Z) <= 3 */
	double zmax = 3;
	double se_vhat = sqrt((P - 1) * (P - 1) * P * zmax * zmax * sumy2 / R);
	CHECK(fabs(mean_vhat - var_true) <= Z5 * se_vhat);
	/* the estimates' spread: sample variance / variance ~ chi2(R-1)/(R-1),
	 * standard deviation sqrt(2/(R-1)) (a sum of many sampled accesses: near
	 * normal) */
	CHECK(fabs(m2 / var_true - 1) <= Z5 * sqrt(2.0 / (R - 1)));
	/* coverage of the 90% interval: binomial(R, 0.9), lower bound at z */
	CHECK(covered >= 0.9 * R - Z5 * sqrt(R * 0.9 * 0.1));
}

static void test_owner_unbiased(void)
{
	owner_unbiased(1);
	owner_unbiased(64);
	owner_unbiased(OWNER_WINDOW_PER_PERIOD * 10);   /* the emulate default at P = 10 */
}

/* ---- intervals -------------------------------------------------------------- */

/* The volume's interval is Fay and Feuer's (interval.c).  Events of equal
 * weight P that stand alone (var n P^2, unit_max P) give the exact Poisson
 * interval of their number n, times P; from the tables (90%): n = 10: 5.4254
 * to 16.9622; n = 4: 1.3663 to 9.1535.  At n = 10^6 the cube-root branch:
 * lo ~ n - z sqrt(n) + (z^2 - 1) / 3 = 998355.7.  The upper limit allows
 * for one more unit of weight unit_max: 0 (no allowance) gives the gamma
 * of n both ways, whose 95th percentile at n = 10 is 15.7052 (chi2 of 20
 * degrees, halved).  Share 30 of 100 over n = 100 (Wilson): 0.2307 to
 * 0.3798.  Nothing estimated (var 0): the figure itself. */
static void test_interval_values(void)
{
	struct interval v = volume_interval(10, 10, 1);
	CHECK_NEAR(effective_events(1000, 10000), 100, 1e-9);
	CHECK_NEAR(v.lo, 5.4254, 1e-4);
	CHECK_NEAR(v.hi, 16.9622, 1e-4);
	v = volume_interval(10, 25, 2.5);
	CHECK_NEAR(v.lo, 2.5 * 1.3663, 1e-3);
	CHECK_NEAR(v.hi, 2.5 * 9.1535, 1e-3);
	v = volume_interval(1e6, 1e6, 1);
	CHECK_NEAR(v.lo, 998355.7, 1);
	v = volume_interval(10, 10, 0);
	CHECK_NEAR(v.hi, 15.7052, 1e-4);
	v = share_interval(30, 100, 100);
	CHECK_NEAR(v.lo, 0.230705, 1e-6);
	CHECK_NEAR(v.hi, 0.379832, 1e-6);
	v = volume_interval(62, 0, 1);
	CHECK(v.lo == 62 && v.hi == 62);
	v = share_interval(0, 5, 25);      /* n = 1: from 0, never below */
	CHECK(v.lo == 0 && v.hi > 0.5 && v.hi < 1);
	CHECK(effective_events(0, 5) == 0);
	CHECK(isinf(effective_events(5, 0)));
}

/* ---- the option --------------------------------------------------------------- */

static void test_estimator_option(void)
{
	struct model_opts o;
	char err[256], buf[32];
	model_opts_default(&o);
	CHECK(o.estimator == ESTIMATOR_AUTO);
	CHECK_STR(model_opts_format(&o, "estimator", buf, sizeof buf), "auto");
	/* auto: comdetective without a monitor trace, and always under emulate */
	CHECK(estimator_resolve(o.estimator, NULL, NULL) == ESTIMATOR_COMDETECTIVE);
	CHECK(estimator_resolve(o.estimator, "emulate", NULL) == ESTIMATOR_COMDETECTIVE);
	CHECK(model_opts_usable(&o, "comdetective", NULL, err, sizeof err));
	CHECK(model_opts_parse(&o, "estimator", "comdetective", err, sizeof err) == 0);
	CHECK(o.estimator == ESTIMATOR_COMDETECTIVE);
	CHECK_STR(model_opts_format(&o, "estimator", buf, sizeof buf), "comdetective");
	CHECK(model_opts_parse(&o, "estimator", "owner", err, sizeof err) == 0);
	CHECK(o.estimator == ESTIMATOR_OWNER);
	CHECK_STR(model_opts_format(&o, "estimator", buf, sizeof buf), "owner");
	CHECK(model_opts_parse(&o, "estimator", "fair", err, sizeof err) == -1);
	CHECK(strstr(err, "--estimator: 'fair' is not comdetective, owner or auto") != NULL);
	CHECK(model_opts_usable(&o, "emulate", NULL, err, sizeof err));
	CHECK(!model_opts_usable(&o, "comdetective", NULL, err, sizeof err));
	CHECK(strstr(err, "--model emulate") != NULL);
	CHECK(model_opt_relevant("emulate", "estimator") && model_opt_relevant("comdetective", "estimator"));
	CHECK(!model_opt_relevant("exact", "estimator"));
	CHECK(model_opts_parse(&o, "seed", "7", err, sizeof err) == 0 && o.seed == 7);
	/* auto picks owner for the comdetective model where the trace has a monitor */
	CHECK(estimator_pick(ESTIMATOR_AUTO, NULL, true) == ESTIMATOR_OWNER);
	CHECK(estimator_pick(ESTIMATOR_AUTO, "comdetective", true) == ESTIMATOR_OWNER);
	CHECK(estimator_pick(ESTIMATOR_AUTO, "emulate", true) == ESTIMATOR_COMDETECTIVE);
	CHECK(estimator_pick(ESTIMATOR_AUTO, "comdetective", false) == ESTIMATOR_COMDETECTIVE);
	CHECK(estimator_pick(ESTIMATOR_COMDETECTIVE, NULL, true) == ESTIMATOR_COMDETECTIVE);
}

/* The options the owner estimator leaves without effect: those only
 * ComDetective's step reads (model_comdetective.c's owner path reads the
 * monitor's records; emulate's owner path runs no board and arms nothing). */
static void test_estimator_ignores(void)
{
	static const char *const ignored[] = { "expiry", "board-size", "hash", "watchpoints",
	                                       "period-multiplier", "line-watches",
	                                       "line-watch-life" };
	static const char *const used[] = { "model", "line-size", "estimator", "emulate-period",
	                                    "seed", "owner-window", "window" };
	for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++) {
		CHECK(estimator_ignores(ESTIMATOR_OWNER, ignored[i]));
		CHECK(!estimator_ignores(ESTIMATOR_COMDETECTIVE, ignored[i]));
		CHECK(!estimator_ignores(ESTIMATOR_AUTO, ignored[i]));
	}
	for (size_t i = 0; i < sizeof used / sizeof *used; i++)
		CHECK(!estimator_ignores(ESTIMATOR_OWNER, used[i]));
}

/* A full trace (inst --full, 64-byte lines) of `threads` threads. */
static void full_trace_init(struct tb *b, size_t threads)
{
	tb_init(b, threads);
	b->features = CT_FEAT_SAMPLES | CT_FEAT_FULL;
	tb_config(b, "sampler=inst\nperiod=1\nperiod_unit=events\nfull=1\nline_size=64\n");
}

/* emulate --estimator owner --emulate-period 1 (every access sampled, with
 * weight 1) on the hand-built sequence as a full trace: exact's 5. */
static void test_emulate_owner_period1(void)
{
	struct tb b;
	full_trace_init(&b, 3);
	for (size_t i = 0; i < 8; i++)
		tb_sample(&b, by_hand[i].t, 10 * (i + 1), by_hand[i].addr, by_hand[i].len,
		          by_hand[i].kind, 1);
	struct analysis a;
	struct model_opts o;
	model_opts_default(&o);
	o.model = "emulate";
	o.estimator = ESTIMATOR_OWNER;
	o.emulate_period = 1;
	const char *path = tb_write(&b);
	CHECK(path && analysis_run(&a, path, &o, false) == 0 && !a.damaged);
	const struct mx_totals *t = matrices_totals(a.mx);
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][0] + t->weight[COMM_VIA_SAMPLE][1], 5, 1e-12);
	CHECK_NEAR(t->var[COMM_VIA_SAMPLE][0] + t->var[COMM_VIA_SAMPLE][1], 0, 1e-12);
	analysis_free(&a);
	tb_free(&b);
}

/* The owner estimator on a trace recorded with the line monitor (inst,
 * --owner-window J = 4, period P = 10): each OWNER_XFER weighs
 * windows x P' / J, variance P' (P' - 1) (2 prior + windows) / J^2, with
 * P' = P / q, q the share of the OWNER_WIN records so far that opened a
 * window (model_comdetective.c).  By hand:
 *   T1 <- T0, true,  windows 1, prior 0, q 1/1 (P' 10): 2.5,
 *      var 90 x 1 / 16 = 5.625
 *   (T1's sampled store drops its window: the line was full)
 *   T2 <- T0, false, windows 2, prior 1, q 1/2 (P' 20): 10,
 *      var 380 x 4 / 16 = 95
 *   T0 <- T2, true,  windows 3, prior 5, q 1/2 (P' 20): 15,
 *      var 380 x 13 / 16 = 308.75
 * Total 27.5 (true 17.5, false 10), variance 409.375; the SAMPLE, the
 * OWNER_WIN records and a transfer from a thread to itself (not possible:
 * ignored) add nothing.  The same trace refuses --model window, and a
 * trace without monitor records refuses --estimator owner with the
 * comdetective model. */
static void owner_xfer(struct tb *b, uint32_t t, uint64_t time, uint32_t src, uint32_t win,
                       uint64_t prior, bool tr)
{
	struct ct_record *r = tb_add(b, t, CT_REC_OWNER_XFER, time);
	r->u.oxfer = (struct ct_owner_xfer){ .ip = 0x401000, .addr = A + 8, .src = src,
		.windows = win, .prior = prior, .len = 8, .kind = LD,
		.flags = tr ? CT_OWNER_TRUE : 0 };
}

/* A line monitor trace of `threads` threads (inst, --owner-window J = 4,
 * period P = 10), no record yet. */
static void owner_trace_begin(struct tb *b, size_t threads)
{
	tb_init(b, threads);
	b->features = CT_FEAT_SAMPLES | CT_FEAT_OWNER;
	tb_config(b, "sampler=inst\nperiod=10\nperiod_unit=events\nline_size=64\nowner_window=4\n");
}

/* owner_trace_begin's trace whose thread 0's sampled store at A, time 10,
 * opened a window. */
static void owner_trace_init(struct tb *b, size_t threads)
{
	owner_trace_begin(b, threads);
	tb_sample(b, 0, 10, A, 8, ST, 10);
	tb_add(b, 0, CT_REC_OWNER_WIN, 11)->u.owin = (struct ct_owner_win){ A, CT_OWNER_OPENED };
}

static void test_owner_monitor_trace(void)
{
	struct tb b;
	owner_trace_init(&b, 3);
	owner_xfer(&b, 1, 20, 0, 1, 0, true);
	tb_add(&b, 1, CT_REC_OWNER_WIN, 21)->u.owin = (struct ct_owner_win){ A, CT_OWNER_DROP_LINE };
	owner_xfer(&b, 2, 30, 0, 2, 1, false);
	owner_xfer(&b, 0, 40, 2, 3, 5, true);
	owner_xfer(&b, 1, 50, 1, 1, 0, true);    /* from itself */
	const char *path = tb_write(&b);
	struct analysis a;
	struct model_opts o;
	model_opts_default(&o);
	o.estimator = ESTIMATOR_OWNER;
	CHECK(path && analysis_run(&a, path, &o, false) == 0 && !a.damaged);
	const struct mx_totals *t = matrices_totals(a.mx);
	CHECK_EQ_U(t->events[COMM_VIA_SAMPLE][0] + t->events[COMM_VIA_SAMPLE][1], 3);
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][1], 17.5, 1e-12);   /* [1]: true sharing */
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][0], 10, 1e-12);
	CHECK_NEAR(t->var[COMM_VIA_SAMPLE][0] + t->var[COMM_VIA_SAMPLE][1], 409.375, 1e-9);
	analysis_free(&a);
	/* the default (auto) picks owner on this trace: the same figures */
	o.estimator = ESTIMATOR_AUTO;
	CHECK(analysis_run(&a, path, &o, false) == 0 && !a.damaged);
	CHECK(estimator_resolve(o.estimator, NULL, a.trace) == ESTIMATOR_OWNER);
	CHECK(estimator_resolve(o.estimator, "emulate", a.trace) == ESTIMATOR_COMDETECTIVE);
	t = matrices_totals(a.mx);
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][1], 17.5, 1e-12);
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][0], 10, 1e-12);
	analysis_free(&a);
	/* comdetective, asked for, reads the samples only: one store, no event */
	o.estimator = ESTIMATOR_COMDETECTIVE;
	CHECK(analysis_run(&a, path, &o, false) == 0 && !a.damaged);
	t = matrices_totals(a.mx);
	CHECK_EQ_U(t->events[COMM_VIA_SAMPLE][0] + t->events[COMM_VIA_SAMPLE][1], 0);
	analysis_free(&a);
	o.estimator = ESTIMATOR_OWNER;
	o.model = "window";
	CHECK(analysis_run(&a, path, &o, false) != 0);
	analysis_free(&a);     /* (a refused run keeps what it opened: the caller frees) */
	tb_free(&b);

	tb_init(&b, 2);
	tb_config(&b, "sampler=inst\nperiod=10\nperiod_unit=events\nline_size=64\n");
	tb_sample(&b, 0, 10, A, 8, ST, 10);
	path = tb_write(&b);
	o.model = NULL;
	CHECK(path && analysis_run(&a, path, &o, false) != 0);
	analysis_free(&a);
	o.estimator = ESTIMATOR_AUTO;    /* no monitor records: comdetective */
	CHECK(analysis_run(&a, path, &o, false) == 0 &&
	      estimator_resolve(o.estimator, NULL, a.trace) == ESTIMATOR_COMDETECTIVE);
	analysis_free(&a);
	tb_free(&b);
}

/* Dropped windows: the weights follow the running inclusion rate q, in
 * every output (here the thread matrix's cell, besides the totals).
 * J = 4, P = 10, one line.  T0's three sampled stores find the table
 * full, the fourth opens (q = 1/4, P' = 40):
 *   T1 <- T0, true, windows 1, prior 0: 1 x 40 / 4 = 10,
 *      var 40 x 39 x 1 / 16 = 97.5
 * T0 opens again (q = 2/5, P' = 25):
 *   T1 <- T0, false, windows 2, prior 1: 2 x 25 / 4 = 12.5,
 *      var 25 x 24 x 4 / 16 = 150
 * Total 22.5 (true 10, false 12.5), variance 247.5, all of it in the cell
 * (row T1, column T0); without the drops it would be 2.5 + 5 = 7.5. */
static void test_owner_monitor_drops(void)
{
	struct tb b;
	owner_trace_begin(&b, 2);
	for (uint64_t i = 0; i < 3; i++)
		tb_add(&b, 0, CT_REC_OWNER_WIN, 10 + i)->u.owin =
			(struct ct_owner_win){ A + 64 * 256, CT_OWNER_DROP_TABLE };
	tb_add(&b, 0, CT_REC_OWNER_WIN, 13)->u.owin = (struct ct_owner_win){ A, CT_OWNER_OPENED };
	owner_xfer(&b, 1, 20, 0, 1, 0, true);
	tb_add(&b, 0, CT_REC_OWNER_WIN, 21)->u.owin = (struct ct_owner_win){ A, CT_OWNER_OPENED };
	owner_xfer(&b, 1, 30, 0, 2, 1, false);
	const char *path = tb_write(&b);
	struct analysis a;
	struct model_opts o;
	model_opts_default(&o);
	CHECK(path && analysis_run(&a, path, &o, false) == 0 && !a.damaged);
	const struct mx_totals *t = matrices_totals(a.mx);
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][1], 10, 1e-12);
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][0], 12.5, 1e-12);
	CHECK_NEAR(t->var[COMM_VIA_SAMPLE][0] + t->var[COMM_VIA_SAMPLE][1], 247.5, 1e-9);
	const struct matrix *m = matrices_get(a.mx, MX_THREAD, MX_ALL);
	CHECK(m && fabs(matrix_at(m, 1, 0) - 22.5) < 1e-12 && matrix_at(m, 0, 1) == 0);
	CHECK_EQ_U(a.stats.owner_windows[CT_OWNER_DROP_TABLE], 3);
	CHECK_EQ_U(a.stats.owner_windows[CT_OWNER_OPENED], 2);
	CHECK_EQ_U(a.stats.owner_held, 3);    /* the records' windows: 1 + 2 (the lag test's) */
	analysis_free(&a);
	tb_free(&b);
}

/* The comdetective estimator's variance part: an event of weight w stands
 * alone, w (w - 1).  A sampled trace (period 1000): T0 stores A (publishes),
 * T1 loads A: one detection, weight 1000, var 999000; n = 1000^2 / 999000
 * = 1.001 effective events. */
static void test_comdetective_var(void)
{
	struct tb b;
	tb_init(&b, 2);
	tb_config(&b, "sampler=inst\nperiod=1000\nperiod_unit=events\nline_size=64\n");
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 150, A, 8, LD, 1000);
	struct analysis a;
	struct model_opts o;
	model_opts_default(&o);
	const char *path = tb_write(&b);
	CHECK(path && analysis_run(&a, path, &o, false) == 0 && !a.damaged);
	const struct mx_totals *t = matrices_totals(a.mx);
	CHECK_EQ_U(t->events[COMM_VIA_SAMPLE][1], 1);
	CHECK_NEAR(t->weight[COMM_VIA_SAMPLE][1], 1000, 1e-9);
	CHECK_NEAR(t->var[COMM_VIA_SAMPLE][1], 999000, 1e-6);
	CHECK_NEAR(effective_events(1000, 999000), 1.001001, 1e-6);
	analysis_free(&a);
	tb_free(&b);
}

/* report_run's show: the text report into the string buffer arg. */
static int report_to_text(void *arg, const struct report_result *res)
{
	char **text = arg;
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	if (!f)
		return 1;
	report_result_write(res, false, f);
	fclose(f);
	return 0;
}

/* A monitor trace whose one window held no transfer: the report says no
 * communication was detected and why for the owner estimator (not the
 * comdetective's advice of a longer --expiry, an option owner ignores);
 * comdetective on the same trace keeps its advice. */
static void test_owner_nothing_detected(void)
{
	struct tb b;
	owner_trace_init(&b, 2);
	tb_sample(&b, 1, 20, A + 4096, 8, ST, 10);
	const char *path = tb_write(&b);
	struct model_opts o;
	model_opts_default(&o);
	char *text = NULL;
	CHECK(path && report_run(path, &o, false, true, report_to_text, &text) == 0 && text);
	CHECK(text && strstr(text, "no communication detected: the line monitor's windows held no") &&
	      !strstr(text, "try a longer --expiry"));
	free(text);
	text = NULL;
	o.estimator = ESTIMATOR_COMDETECTIVE;
	CHECK(report_run(path, &o, false, true, report_to_text, &text) == 0 && text);
	CHECK(text && strstr(text, "try a longer --expiry") && !strstr(text, "windows held no"));
	free(text);
	tb_free(&b);

	/* emulate's owner estimate: its own windows, its own options */
	full_trace_init(&b, 2);
	tb_sample(&b, 0, 10, A, 8, ST, 1);
	tb_sample(&b, 1, 20, A + 4096, 8, ST, 1);
	path = tb_write(&b);
	o.model = "emulate";
	o.estimator = ESTIMATOR_OWNER;
	text = NULL;
	CHECK(path && report_run(path, &o, false, true, report_to_text, &text) == 0 && text);
	CHECK(text && strstr(text, "no communication detected: the emulated windows held no") &&
	      !strstr(text, "commrec --owner-window") && !strstr(text, "try a longer --expiry"));
	free(text);
	tb_free(&b);
}

int main(void)
{
	RUN(test_owner_nothing_detected);
	RUN(test_owner_by_hand);
	RUN(test_owner_window_by_hand);
	RUN(test_owner_window_bursts);
	RUN(test_owner_all_sampled_is_exact);
	RUN(test_owner_unbiased);
	RUN(test_interval_values);
	RUN(test_estimator_option);
	RUN(test_estimator_ignores);
	RUN(test_emulate_owner_period1);
	RUN(test_comdetective_var);
	RUN(test_owner_monitor_trace);
	RUN(test_owner_monitor_drops);
	return check_summary();
}
