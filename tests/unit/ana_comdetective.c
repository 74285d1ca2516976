/* The comdetective model's rules, each on a hand-built trace whose matrix
 * is computed by hand in the comments.  Line size 64 (from CONFIG), period
 * 1000 unless said otherwise.  Cells are directed: [dst][src]. */
#include <stdarg.h>

#include "ana_common.h"

/* line numbers 1024, 1025, 1026 and 1202: entries 8, 9, 10 and 59 of a
 * 127-entry board with the mod hash */
#define A 0x10000ull
#define B 0x10040ull
#define C 0x10080ull
#define FAR 0x12c80ull  /* a line nobody shares */

/* A load never publishes; a store does.  T0 loads A, T1 loads A: nothing.
 * T1 stores A at 300 (publishes), T0 loads A at 400: T1 -> T0, true. */
static void test_publication(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, LD, 1000);
	tb_sample(&b, 1, 200, A, 8, LD, 1000);
	tb_sample(&b, 1, 300, A, 8, ST, 1000);
	tb_sample(&b, 0, 400, A, 8, LD, 1000);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 0, 1), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 0, 1), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 0, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 1000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_SAMPLE), 1);
	analysis_free(&a);
	tb_free(&b);
}

/* A thread never communicates with itself. */
static void test_self(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 0, 200, A, 8, LD, 1000);
	tb_sample(&b, 0, 300, A, 8, ST, 1000);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 0, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* True vs false sharing by byte-range overlap against the published
 * [A, A+8): T1 reads [A, A+8) (true), T2 [A+8, A+16) (false), T3 [A+4,
 * A+12) (partial overlap: true), T4 [A+7, A+8) 1 byte (true), T5 [A-1...]
 * is another line, so T5 reads [A+8, A+9) (false).  Weight = each
 * reader's period. */
static void test_true_false(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 6);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 200, A, 8, LD, 10);
	tb_sample(&b, 2, 210, A + 8, 8, LD, 20);
	tb_sample(&b, 3, 220, A + 4, 8, LD, 30);
	tb_sample(&b, 4, 230, A + 7, 1, LD, 40);
	tb_sample(&b, 5, 240, A + 8, 1, LD, 50);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 10, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 2, 0), 20, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 3, 0), 30, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 4, 0), 40, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 5, 0), 50, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_TRUE), 80, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_FALSE), 70, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 150, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* comdetective expiry: the publisher's last store interval.  T0 stores A
 * at 100 and B at 200: interval 100.  T1 at 250 loads A (age 150 > 100:
 * expired) and at 290 B (age 90: recent).  One event of 1000. */
static void build_expiry(struct tb *b)
{
	tb_init(b, 2);
	tb_sample(b, 0, 100, A, 8, ST, 1000);
	tb_sample(b, 0, 200, B, 8, ST, 1000);
	tb_sample(b, 1, 250, A, 8, LD, 1000);
	tb_sample(b, 1, 290, B, 8, LD, 1000);
}

static void test_expiry_comdetective(void)
{
	struct tb b;
	struct analysis a;
	build_expiry(&b);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 1000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_SAMPLE), 1);
	analysis_free(&a);
	tb_free(&b);
}

/* ns:N: A is 150 old, B 90.  ns:200 both (B's 200 > t_prev 100), ns:100
 * only B, ns:50 none. */
static void test_expiry_ns(void)
{
	struct tb b;
	struct analysis a;
	build_expiry(&b);
	CHECK(run(&b, &a, "expiry", "ns:200", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 2000, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "ns:100", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 1000, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "ns:50", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 0, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* samples:N: expired once the publisher took N more store samples.  T0
 * stores A (100), B (200), C (300) and loads FAR (320, not counted).  At
 * 350 T1 reads A: 2 stores since; at 360 B: 1 store since; at 370 C: 0.
 *   samples:1 -> C only; samples:2 -> B, C; samples:3 -> A, B, C. */
static void test_expiry_samples(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 0, 200, B, 8, ST, 1000);
	tb_sample(&b, 0, 300, C, 8, ST, 1000);
	tb_sample(&b, 0, 320, FAR, 8, LD, 1000);
	tb_sample(&b, 1, 350, A, 8, LD, 1);
	tb_sample(&b, 1, 360, B, 8, LD, 10);
	tb_sample(&b, 1, 370, C, 8, LD, 100);
	CHECK(run(&b, &a, "expiry", "samples:1", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 100, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "samples:2", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 110, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "samples:3", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 111, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Until the publisher's second store sample its entry does not expire
 * (comdetective expiry has no interval yet). */
static void test_expiry_first_store(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 0, 5000, FAR, 8, LD, 1000);
	tb_sample(&b, 1, 1000000, A, 8, LD, 1000);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 1000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* t_prev: two samples of T1 matching the same entry count once.  T0
 * stores A at 100; T1 reads A at 200 (event), A+8 at 300 (same entry,
 * published at 100 <= t_prev 100: no event).  T0 stores B at 350, T1 reads
 * B at 360: a newer entry, counted.  With ns expiry to keep all recent. */
static void test_tprev(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 200, A, 8, LD, 1000);
	tb_sample(&b, 1, 300, A + 8, 8, LD, 1000);
	tb_sample(&b, 0, 350, B, 8, ST, 1000);
	tb_sample(&b, 1, 360, B, 8, LD, 1000);
	CHECK(run(&b, &a, "expiry", "ns:1000000", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 2000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 2000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_SAMPLE), 2);
	analysis_free(&a);
	tb_free(&b);
}

/* TryAtomicPut: a store replaces only an expired entry, of any line.  With
 * --board-size 1 (one entry for every line), --expiry ns:1000:
 *   100  T0 stores A        -> board: A/T0
 *   200  T1 stores B        -> A recent: B not published
 *   300  T2 reads A         -> event T0 -> T2 (t_prev = 100)
 *   310  T2 reads B         -> entry is A: nothing
 *   1250 T1 stores B        -> A is 1150 old: B/T1 replaces it
 *   1300 T2 reads B         -> event T1 -> T2
 *   1310 T2 reads A         -> entry is B: nothing
 * board 1:   [2][0] = 1000, [2][1] = 1000
 * board 127: A and B have their own entries: 300 A (T0), 310 B (T1,
 * published 200 > t_prev 100), 1300 B: the B/T1 entry of 200 was 1050 old
 * at 1250, expired, so T1 republished it: event; 1310 A: A is 1210 old:
 * nothing.
 *            [2][0] = 1000, [2][1] = 2000 */
static void build_board(struct tb *b)
{
	tb_init(b, 3);
	tb_sample(b, 0, 100, A, 8, ST, 1000);
	tb_sample(b, 1, 200, B, 8, ST, 1000);
	tb_sample(b, 2, 300, A, 8, LD, 1000);
	tb_sample(b, 2, 310, B, 8, LD, 1000);
	tb_sample(b, 1, 1250, B, 8, ST, 1000);
	tb_sample(b, 2, 1300, B, 8, LD, 1000);
	tb_sample(b, 2, 1310, A, 8, LD, 1000);
}

static void test_board_collisions(void)
{
	struct tb b;
	struct analysis a;
	build_board(&b);
	CHECK(run(&b, &a, "board-size", "1", "expiry", "ns:1000", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 1), 1000, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 2000, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "board-size", "127", "expiry", "ns:1000", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 1), 2000, 1e-9);
	analysis_free(&a);
	/* murmur: A and B land in different entries of 127 too */
	CHECK(run(&b, &a, "board-size", "127", "expiry", "ns:1000", "hash", "murmur", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 1), 2000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* mod hash: line numbers 1024 and 1024 + 127 share an entry of a 127
 * board: the second line's store is blocked while the first is recent, so
 * T2 only sees A.  With 128 entries both are published; T2 reads X first
 * (t_prev = 200), and then A, published at 100 <= t_prev, does not count:
 * t_prev is per reading thread, not per publisher (Algorithm 1, line 11). */
static void test_board_mod_collision(void)
{
	struct tb b;
	struct analysis a;
	uint64_t X = A + 127 * 64;
	tb_init(&b, 3);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 200, X, 8, ST, 1000);
	tb_sample(&b, 2, 300, X, 8, LD, 1000);
	tb_sample(&b, 2, 310, A, 8, LD, 1000);
	CHECK(run(&b, &a, "expiry", "ns:1000", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 1), 0, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 0), 1000, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "ns:1000", "board-size", "128", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 1), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 0), 0, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Watchpoints: recorded arms and hits.  T0 stores A at 100 and 200.  T1
 * samples FAR at 150 (period 1000), arms 4 registers on T0's A (published
 * 100) and traps on register 3 (A+24, false sharing) at 160; a second trap
 * on the same arm at 170 is ignored.  T1 samples FAR at 250, arms on A
 * (published 200), traps on register 1 (A+8, false) at 260.
 *   D = 4: weight = 1000 * 64 / (4 * 8) = 2000 per hit: [1][0] = 4000 false
 *   --watchpoints 2: register 3 ignored; 1000 * 64 / 16 = 4000: [1][0] = 4000
 *   --watchpoints 1: register 1 ignored too: 0
 * Expiry (comdetective): T1's interval at the second arm is 100, the hit
 * is 60 after the publication: recent. */
static void build_wp(struct tb *b)
{
	tb_init(b, 2);
	tb_sample(b, 0, 100, A, 8, ST, 1000);
	tb_sample(b, 1, 150, FAR, 8, LD, 1000);
	tb_arm(b, 1, 150, 0, 100, A, 8, 4);
	tb_hit(b, 1, 160, A + 24, 8, 3);
	tb_hit(b, 1, 170, A + 16, 8, 2);
	tb_sample(b, 0, 200, A, 8, ST, 1000);
	tb_sample(b, 1, 250, FAR, 8, LD, 1000);
	tb_arm(b, 1, 250, 0, 200, A, 8, 4);
	tb_hit(b, 1, 260, A + 8, 8, 1);
}

static void test_watchpoint_weight(void)
{
	struct tb b;
	struct analysis a;
	build_wp(&b);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 1, 0), 4000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 0, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 2);
	CHECK_EQ_U(nevents(&a, COMM_VIA_SAMPLE), 0);
	analysis_free(&a);
	CHECK(run(&b, &a, "watchpoints", "2", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 4000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 1);
	analysis_free(&a);
	CHECK(run(&b, &a, "watchpoints", "1", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 0, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "watchpoints", "0", NULL) == 0);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 0);
	analysis_free(&a);
	/* line size 128: 1000 * 128 / 32 = 4000 per hit */
	CHECK(run(&b, &a, "line-size", "128", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 8000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* A hit on the published bytes is true sharing; fewer registers armed
 * scale up: nwp = 2 -> 1000 * 64 / 16 = 4000. */
static void test_watchpoint_true(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A + 8, 8, ST, 1000);
	tb_sample(&b, 1, 150, FAR, 8, ST, 1000);
	tb_arm(&b, 1, 150, 0, 100, A + 8, 8, 2);
	tb_hit(&b, 1, 160, A + 8, 8, 1);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 4000, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 4000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Watchpoint expiry.  T1 samples at 100 and 200 (interval 100), arms at
 * 200 on an entry published at 150, traps at 300 (250 - 150... age 150).
 *   comdetective: 150 > 100: not counted
 *   ns:200: counted (2000); ns:100: not
 *   samples:1: T1 takes one more sample (250) before the hit: not counted;
 *   samples:2: counted */
static void expiry_trace(struct tb *b)
{
	tb_sample(b, 0, 150, A, 8, ST, 1000);
	tb_sample(b, 1, 100, FAR, 8, LD, 1000);
	tb_sample(b, 1, 200, FAR, 8, LD, 1000);
	tb_arm(b, 1, 200, 0, 150, A, 8, 4);
	tb_sample(b, 1, 250, FAR + 64, 8, LD, 1000);
	tb_hit(b, 1, 300, A + 8, 8, 1);
}

static void test_watchpoint_expiry(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	expiry_trace(&b);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 0, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "ns:200", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 2000, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "ns:100", NULL) == 0);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 0, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "samples:1", NULL) == 0);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 0, 1e-9);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "samples:2", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 2000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Watchpoints armed per CPU by the recorder's writer (SUMMARY
 * watchpoint_arming=cpu, format 6): the arm comes late, so every first hit
 * of an arm counts, whatever the expiry.  The trace of
 * test_watchpoint_expiry: its hit, 150 after the publication against an
 * interval of 100, counts (1000 x 64 / (4 x 8) = 2000), and only once. */
static void test_watchpoint_cpu_arming(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	strcat(b.summary, "watchpoint_arming=cpu\n");
	expiry_trace(&b);
	tb_hit(&b, 1, 310, A + 16, 8, 2);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 2000, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 2000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* --period-multiplier 2 keeps samples 0, 2, 4... of each thread and kind,
 * the arms they made and those arms' hits; weights use period x 2.
 * Expiry ns:100000 keeps everything recent.
 *   T0 stores A (100, #0 kept), B (200, #1 dropped), C (300, #2 kept)
 *   T1 loads  A (310, #0), B (320, #1), C (330, #2), FAR (400, #3) + arm on
 *             C + hit at 410, FAR (500, #4) + arm on C + hit at 510.
 * K=1: samples A, B, C: 3 x 1000; hits 2 x 1000 * 2 = 4000: total 7000.
 * K=2: B never published; samples A, C: 2 x 2000; hit 410 dropped (its arm
 *      belongs to dropped sample #3), hit 510: 2000 * 2 = 4000: total 8000. */
static void test_period_multiplier(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 0, 200, B, 8, ST, 1000);
	tb_sample(&b, 0, 300, C, 8, ST, 1000);
	tb_sample(&b, 1, 310, A, 8, LD, 1000);
	tb_sample(&b, 1, 320, B, 8, LD, 1000);
	tb_sample(&b, 1, 330, C, 8, LD, 1000);
	tb_sample(&b, 1, 400, FAR, 8, LD, 1000);
	tb_arm(&b, 1, 400, 0, 300, C, 8, 4);
	tb_hit(&b, 1, 410, C, 8, 0);
	tb_sample(&b, 1, 500, FAR, 8, LD, 1000);
	tb_arm(&b, 1, 500, 0, 300, C, 8, 4);
	tb_hit(&b, 1, 510, C, 8, 0);
	CHECK(run(&b, &a, "expiry", "ns:100000", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 7000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_SAMPLE), 3);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 2);
	analysis_free(&a);
	CHECK(run(&b, &a, "expiry", "ns:100000", "period-multiplier", "2", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 8000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_SAMPLE), 2);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 1);
	analysis_free(&a);
	tb_free(&b);
}

/* Loads and stores are counted apart by the multiplier: a thread's store
 * #0 and load #0 are both kept with K=2. */
static void test_period_multiplier_kinds(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_sample(&b, 0, 100, FAR, 8, LD, 1000);   /* load #0 */
	tb_sample(&b, 0, 110, A, 8, ST, 1000);     /* store #0: publishes */
	tb_sample(&b, 1, 200, FAR + 64, 8, ST, 1000); /* store #0 */
	tb_sample(&b, 1, 210, A, 8, LD, 1000);     /* load #0: event 2000 */
	CHECK(run(&b, &a, "expiry", "ns:100000", "period-multiplier", "2", NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 1, 0), 2000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Core and socket matrices through the MACHINE cpu map, both key styles.
 * cpus 0,1 on socket 0 (cores 0, 1), cpus 2,3 on socket 1 (cores 0, 1).
 * T0 on cpu 0 stores A; T1 (cpu 1), T2 (cpu 2), T3 (cpu 3) read it.
 * Core indices: S0C0=0 S0C1=1 S1C0=2 S1C1=3. */
static void topo_case(const char *machine)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 4);
	tb_machine(&b, machine);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 200, A, 8, LD, 1000);
	tb_sample(&b, 2, 210, A, 8, LD, 1000);
	tb_sample(&b, 3, 220, A + 8, 8, LD, 1000);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK(!a.topo.identity);
	CHECK_EQ_U(a.topo.ncores, 4);
	CHECK_EQ_U(a.topo.nsockets, 2);
	CHECK_NEAR(cell(&a, MX_CORE, MX_ALL, 1, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_CORE, MX_ALL, 2, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_CORE, MX_FALSE, 3, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_SOCKET, MX_ALL, 0, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_SOCKET, MX_ALL, 1, 0), 2000, 1e-9);
	CHECK_NEAR(cell(&a, MX_SOCKET, MX_TRUE, 1, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_SOCKET, MX_FALSE, 1, 0), 1000, 1e-9);
	CHECK_STR(a.topo.core_label[2], "S1C0");
	CHECK_STR(a.topo.socket_label[1], "S1");
	analysis_free(&a);
	tb_free(&b);
}

static void test_topology(void)
{
	topo_case("cpu_model=test\ncpu.0=core 0 socket 0\ncpu.1=core 1 socket 0\n"
	          "cpu.2=core 0 socket 1\ncpu.3=core 1 socket 1\n");
}

static void test_topology_keys(void)
{
	topo_case("cpu.0.core=0\ncpu.0.socket=0\ncpu.1.core=1\ncpu.1.socket=0\n"
	          "cpu.2.core=0\ncpu.2.socket=1\ncpu.3.core=1\ncpu.3.socket=1\n");
}

/* Hyperthreads: cpus 0 and 1 are one core: their traffic is on the core
 * diagonal.  No map at all: core = cpu number, one socket. */
static void test_topology_smt_and_identity(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_machine(&b, "cpu.0=core 0 socket 0\ncpu.1=core 0 socket 0\n");
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 200, A, 8, LD, 1000);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_EQ_U(a.topo.ncores, 1);
	CHECK_NEAR(cell(&a, MX_CORE, MX_ALL, 0, 0), 1000, 1e-9);
	double s[1];
	matrix_symmetric(matrices_get(a.mx, MX_CORE, MX_ALL), s);
	CHECK_NEAR(s[0], 1000, 1e-9);   /* the diagonal is not doubled */
	analysis_free(&a);
	tb_free(&b);

	tb_init(&b, 2);
	tb_sample_cpu(&b, 0, 100, A, 8, ST, 1000, 5);
	tb_sample_cpu(&b, 1, 200, A, 8, LD, 1000, 2);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK(a.topo.identity);
	CHECK_NEAR(cell(&a, MX_CORE, MX_ALL, 2, 5), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_SOCKET, MX_ALL, 0, 0), 1000, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Written symmetric by default (M + M^T); --directed keeps rows dst. */
static void test_symmetric(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 3);
	tb_sample(&b, 0, 100, A, 8, ST, 1000);
	tb_sample(&b, 1, 200, A, 8, LD, 10);       /* [1][0] += 10 */
	tb_sample(&b, 1, 300, B, 8, ST, 1000);
	tb_sample(&b, 0, 400, B, 8, LD, 20);       /* [0][1] += 20 */
	tb_sample(&b, 2, 500, B + 8, 8, LD, 40);   /* [2][1] += 40 false */
	CHECK(run(&b, &a, "expiry", "ns:100000", NULL) == 0);
	const struct matrix *m = matrices_get(a.mx, MX_THREAD, MX_ALL);
	CHECK_EQ_U(m->n, 3);
	CHECK_NEAR(m->cell[1 * 3 + 0], 10, 1e-9);
	CHECK_NEAR(m->cell[0 * 3 + 1], 20, 1e-9);
	CHECK_NEAR(m->cell[2 * 3 + 1], 40, 1e-9);
	CHECK_NEAR(m->cell[1 * 3 + 2], 0, 1e-9);
	double s[9];
	matrix_symmetric(m, s);
	CHECK_NEAR(s[0 * 3 + 1], 30, 1e-9);
	CHECK_NEAR(s[1 * 3 + 0], 30, 1e-9);
	CHECK_NEAR(s[1 * 3 + 2], 40, 1e-9);
	CHECK_NEAR(s[2 * 3 + 1], 40, 1e-9);
	CHECK_NEAR(s[0 * 3 + 0], 0, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* Hostile records: a publisher out of range, a register beyond the arm,
 * a hit without an arm: ignored, no crash. */
static void test_hostile(void)
{
	struct tb b;
	struct analysis a;
	tb_init(&b, 2);
	tb_hit(&b, 1, 50, A, 8, 0);
	tb_sample(&b, 0, 100, A, 0, ST, 1000);
	tb_sample(&b, 1, 150, FAR, 8, LD, 1000);
	tb_arm(&b, 1, 150, 7, 100, A, 8, 4);
	tb_hit(&b, 1, 160, A, 8, 0);
	tb_sample(&b, 1, 250, FAR, 8, LD, 1000);
	tb_arm(&b, 1, 250, 0, 100, A, 8, 2);
	tb_hit(&b, 1, 260, A, 8, 3);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 0, 1e-9);
	analysis_free(&a);
	tb_free(&b);
}

/* A line watch's arm: T's watch of pub_addr's whole line (an inst trace
 * with software line watches). */
static void line_arm(struct tb *b, uint32_t t, uint64_t time, uint32_t publisher,
                     uint64_t pub_time, uint64_t pub_addr)
{
	struct ct_record *r = tb_arm(b, t, time, publisher, pub_time, pub_addr, 8, 1);
	r->u.arm.wp_len[0] = 64;
}

/* Software line watches (CONFIG line_watches=4, line_watch_life=3), period 1000:
 *   T0 stores A+8 at 120; T1 (a load of FAR at 150) watches A's line in
 *   slot 0; its hit at 160 by 8 bytes at A+8: T0 -> T1, true, 1000 x 64 / 64
 *   T0 stores B at 200; T1 (250) watches B's line: slot 0 again (free);
 *   hit at 260 by 4 bytes at B+32: false, 1000
 *   T0 stores C at 290; T1 (300) watches C's line in slot 0; T1 samples at
 *   400, 500, 600: the third sample since the arm ends it (life 3), so
 *   the hit at 610 names a slot no longer watched: nothing
 *   a hit of a live slot outside its line (B at 320 on slot 1's D line):
 *   nothing
 * [1][0] = 2000 (true 1000, false 1000), two watchpoint events.  A version 4
 * trace (header bit 33 without 34): every hit ends its watch. */
static void build_lines(struct tb *b)
{
	tb_init(b, 2);
	tb_config(b, "sampler=inst\nperiod=1000\nperiod_unit=accesses\nwatchpoints=4\n"
	          "watchpoint_kind=software\nline_watches=4\nline_watch_life=3\nboard_size=127\n"
	          "line_size=64\n");
	b->features |= CT_FEAT_LINE_WATCHES;
	tb_sample(b, 0, 120, A + 8, 8, ST, 1000);
	tb_sample(b, 1, 150, FAR, 8, LD, 1000);
	line_arm(b, 1, 150, 0, 120, A + 8);
	tb_hit(b, 1, 160, A + 8, 8, 0);
	tb_sample(b, 0, 200, B, 8, ST, 1000);
	tb_sample(b, 1, 250, FAR, 8, LD, 1000);
	line_arm(b, 1, 250, 0, 200, B);
	tb_hit(b, 1, 260, B + 32, 4, 0);
	tb_sample(b, 0, 290, C, 8, ST, 1000);
	tb_sample(b, 1, 300, FAR, 8, LD, 1000);
	line_arm(b, 1, 300, 0, 290, C);
	line_arm(b, 1, 300, 0, 295, FAR + 64);
	tb_hit(b, 1, 320, B, 8, 1);
	tb_sample(b, 1, 400, FAR, 8, LD, 1000);
	tb_sample(b, 1, 500, FAR, 8, LD, 1000);
	tb_sample(b, 1, 600, FAR, 8, LD, 1000);
	tb_hit(b, 1, 610, C, 8, 0);
}

static void test_line_watches(void)
{
	struct tb b;
	struct analysis a;
	build_lines(&b);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 1, 0), 1000, 1e-9);
	CHECK_NEAR(total(&a, MX_THREAD, MX_ALL), 2000, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 2);
	analysis_free(&a);
	CHECK(run(&b, &a, "watchpoints", "0", NULL) == 0);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 0);
	analysis_free(&a);
	/* ns:50: the first hit (160 - 120 = 40) counts, the second (260 - 200
	 * = 60) is too late */
	CHECK(run(&b, &a, "expiry", "ns:50", NULL) == 0);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 1);
	analysis_free(&a);
	tb_free(&b);
}

/* Version 5 (bits 33 and 34): a pipeline.  T0 stores A+8 at 100; T1 (110)
 * and T2 (115) watch A's line in their slot 0; T1 loads A+8 at 120 (its
 * first hit: T0 -> T1, true) and overwrites it at 130 (a second hit: no
 * event, T1 is the line's newer writer); T2 loads A+16 at 140: T1 -> T2
 * (false: T1 wrote A+8), not T0 -> T2.  Read as version 4 (without bit
 * 34), T1's store ends nothing (its watch ended at 120) and T2's hit is
 * T0's. */
static void build_writers(struct tb *b, bool v5)
{
	tb_init(b, 3);
	tb_config(b, "sampler=inst\nperiod=1000\nperiod_unit=accesses\nwatchpoints=4\n"
	          "watchpoint_kind=software\nline_watches=4\nline_watch_life=16\nboard_size=127\n"
	          "line_size=64\n");
	b->features |= CT_FEAT_LINE_WATCHES | (v5 ? CT_FEAT_LINE_WRITERS : 0);
	tb_sample(b, 0, 100, A + 8, 8, ST, 1000);
	tb_sample(b, 1, 110, FAR, 8, LD, 1000);
	line_arm(b, 1, 110, 0, 100, A + 8);
	tb_sample(b, 2, 115, FAR + 128, 8, LD, 1000);
	line_arm(b, 2, 115, 0, 100, A + 8);
	tb_hit(b, 1, 120, A + 8, 8, 0);
	tb_hit(b, 1, 130, A + 8, 8, 0)->u.hit.kind = CT_ACCESS_STORE;
	tb_hit(b, 2, 140, A + 16, 8, 0);
}

static void test_line_writers(void)
{
	struct tb b;
	struct analysis a;
	build_writers(&b, true);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_TRUE, 1, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_FALSE, 2, 1), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 0), 0, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 2);
	analysis_free(&a);
	tb_free(&b);
	build_writers(&b, false);
	CHECK(run(&b, &a, NULL) == 0);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 0), 1000, 1e-9);
	CHECK_NEAR(cell(&a, MX_THREAD, MX_ALL, 2, 1), 0, 1e-9);
	CHECK_EQ_U(nevents(&a, COMM_VIA_WATCHPOINT), 2);
	analysis_free(&a);
	tb_free(&b);
}

int main(void)
{
	RUN(test_publication);
	RUN(test_self);
	RUN(test_true_false);
	RUN(test_expiry_comdetective);
	RUN(test_expiry_ns);
	RUN(test_expiry_samples);
	RUN(test_expiry_first_store);
	RUN(test_tprev);
	RUN(test_board_collisions);
	RUN(test_board_mod_collision);
	RUN(test_watchpoint_weight);
	RUN(test_watchpoint_true);
	RUN(test_watchpoint_expiry);
	RUN(test_watchpoint_cpu_arming);
	RUN(test_line_watches);
	RUN(test_line_writers);
	RUN(test_period_multiplier);
	RUN(test_period_multiplier_kinds);
	RUN(test_topology);
	RUN(test_topology_keys);
	RUN(test_topology_smt_and_identity);
	RUN(test_symmetric);
	RUN(test_hostile);
	return check_summary();
}
