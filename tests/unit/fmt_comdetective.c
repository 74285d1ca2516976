/* One step of ComDetective's Algorithm 1 (formats/comdetective.c): the
 * recorder's rule (what record/runtime/rt_sample.c and the emulate model
 * run), the offline expiry rules (the comdetective model's), the arming
 * decision and its order with publishing, the watchpoint expiry.  Line
 * size 64; lines A, B on different slots of a 16-entry board, A2 on A's. */
#include <stdlib.h>

#include "check.h"
#include "comdetective.h"

#define A 0x10000ull
#define B 0x10040ull
#define A2 (0x10000ull + 16 * 64)

struct fix {
	struct board b;
	void *mem;
	struct cd_history h[4];
	struct cd_rules r;
	uint64_t rnd;
};

static void fix_init(struct fix *f, uint32_t size, enum cd_expiry e, uint64_t value)
{
	memset(f, 0, sizeof *f);
	f->mem = calloc(1, board_bytes(size));
	board_init(&f->b, f->mem, size, 64);
	f->r = (struct cd_rules){ .board = &f->b, .expiry = e, .expiry_value = value,
	                          .line_size = 64, .threads = f->h, .nthreads = 4 };
	f->rnd = 0x9e3779b97f4a7c15ull;
}

static void fix_again(struct fix *f, uint32_t size, enum cd_expiry e, uint64_t value)
{
	free(f->mem);
	fix_init(f, size, e, value);
}

/* A sample of thread t; w: its watchpoints or NULL. */
static struct cd_step step(struct fix *f, uint32_t t, uint64_t time, uint64_t addr, bool store,
                           const struct cd_watch *w)
{
	struct cd_access a = { .time = time, .addr = addr, .ip = 0x400000 + time, .cpu = t,
	                       .len = 8, .store = store };
	struct cd_step s;
	cd_step(&f->r, t, &f->h[t], &a, w, &f->rnd, &s);
	return s;
}

/* The history: last two samples and store samples, counts. */
static void test_history(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_RECORDER, 0);
	f.r.board = NULL;   /* history only */
	struct cd_step s = step(&f, 0, 100, A, true, NULL);
	CHECK(!s.detected && !s.published && !s.disarm && !s.arm.nwp);
	step(&f, 0, 200, A, false, NULL);
	step(&f, 0, 300, B, true, NULL);
	CHECK_EQ_U(f.h[0].s_last, 300);
	CHECK_EQ_U(f.h[0].s_prev, 200);
	CHECK_EQ_U(f.h[0].st_last, 300);
	CHECK_EQ_U(f.h[0].st_prev, 100);
	CHECK_EQ_U(f.h[0].nsamples, 3);
	CHECK_EQ_U(f.h[0].nstores, 2);
	struct board_view v;
	CHECK(!board_get(&f.b, A, &v));
	free(f.mem);
}

/* Detection: same line, another thread, after t_prev; once per entry. */
static void test_detection(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_RECORDER, 0);
	struct cd_step s = step(&f, 1, 100, A + 8, true, NULL);
	CHECK(s.published);
	s = step(&f, 0, 150, A, false, NULL);          /* T1 -> T0 */
	CHECK(s.detected);
	CHECK_EQ_U(s.src.thread, 1);
	CHECK_EQ_U(s.src.addr, A + 8);
	CHECK_EQ_U(s.src.time, 100);
	CHECK_EQ_U(s.src.ip, 0x400000 + 100);
	CHECK_EQ_U(s.src.cpu, 1);
	CHECK_EQ_U(s.src.count, 1);
	CHECK_EQ_U(f.h[0].t_prev, 100);
	s = step(&f, 0, 160, A, false, NULL);          /* the same entry: not again */
	CHECK(!s.detected);
	s = step(&f, 1, 170, A2, false, NULL);         /* own slot, other line */
	CHECK(!s.detected);
	s = step(&f, 1, 180, A, false, NULL);          /* its own entry */
	CHECK(!s.detected);
	s = step(&f, 2, 190, A2, false, NULL);         /* A2 maps to A's slot: another line */
	CHECK(!s.detected);
	free(f.mem);
}

/* The recorder's replacement: only entries published before the
 * replacing thread's previous store sample (else its previous sample). */
static void test_recorder_replacement(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_RECORDER, 0);
	CHECK(step(&f, 1, 100, A, true, NULL).published);
	/* T2's first sample: previous sample 0, nothing is older */
	CHECK(!step(&f, 2, 150, A2, true, NULL).published);
	/* T2's previous sample (150, a store) is after 100: replace */
	struct cd_step s = step(&f, 2, 160, A2, true, NULL);
	CHECK(s.published);
	struct board_view v;
	CHECK(board_get(&f.b, A, &v) && v.thread == 2 && v.addr == A2 && v.time == 160);
	/* T1: loads at 170 and 180, store at 190: previous store 100 < 160: kept */
	step(&f, 1, 170, B, false, NULL);
	CHECK(!step(&f, 1, 190, A, true, NULL).published);
	/* T1 again at 200: previous store 190 > 160: replaced */
	CHECK(step(&f, 1, 200, A, true, NULL).published);
	free(f.mem);
}

/* The interval rule: recent while the age is within the publisher's last
 * store interval; a store replaces what is not recent, of any line. */
static void test_interval_rule(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_INTERVAL, 0);
	step(&f, 1, 100, B, true, NULL);
	step(&f, 1, 200, A, true, NULL);                 /* T1's interval: 100 */
	CHECK(step(&f, 0, 290, A, false, NULL).detected);   /* age 90 */
	fix_again(&f, 16, CD_EXPIRY_INTERVAL, 0);
	step(&f, 1, 100, B, true, NULL);
	step(&f, 1, 200, A, true, NULL);
	CHECK(!step(&f, 0, 310, A, false, NULL).detected);  /* age 110: expired */
	/* an expired entry gives way to any store, another line included */
	CHECK(step(&f, 2, 320, A2, true, NULL).published);
	/* T2 has one store sample: its entry stays recent */
	CHECK(!step(&f, 3, 100000, A, true, NULL).published);
	CHECK(step(&f, 3, 100001, A2, false, NULL).detected);
	free(f.mem);
}

static void test_ns_and_samples_rules(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_NS, 50);
	step(&f, 1, 100, A, true, NULL);
	CHECK(!step(&f, 0, 151, A, false, NULL).detected);
	fix_again(&f, 16, CD_EXPIRY_NS, 50);
	step(&f, 1, 100, A, true, NULL);
	CHECK(step(&f, 0, 150, A, false, NULL).detected);
	/* samples:2: recent until the publisher has taken 2 more store samples */
	fix_again(&f, 16, CD_EXPIRY_SAMPLES, 2);
	step(&f, 1, 100, A, true, NULL);
	step(&f, 1, 110, B, true, NULL);
	CHECK(step(&f, 0, 120, A, false, NULL).detected);
	fix_again(&f, 16, CD_EXPIRY_SAMPLES, 2);
	step(&f, 1, 100, A, true, NULL);
	step(&f, 1, 110, B, true, NULL);
	step(&f, 1, 115, B + 64, true, NULL);
	CHECK(!step(&f, 0, 120, A, false, NULL).detected);
	free(f.mem);
}

/* TryArmWatchpoint: an entry of another thread published at or after the
 * previous sample; words of its line; not when detecting or still recent. */
static void test_arming(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_RECORDER, 0);
	struct cd_watch w = { .nwp = 4 };
	step(&f, 0, 50, B, false, &w);                 /* T0's previous sample: 50 */
	step(&f, 1, 100, A + 16, true, NULL);
	struct cd_step s = step(&f, 0, 120, B, false, &w);
	CHECK(!s.detected && s.disarm);
	CHECK_EQ_U(s.arm.nwp, 4);
	CHECK_EQ_U(s.arm.publisher, 1);
	CHECK_EQ_U(s.arm.pub_addr, A + 16);
	CHECK_EQ_U(s.arm.pub_time, 100);
	for (unsigned i = 0; i < 4; i++) {
		CHECK(s.arm.wp_addr[i] >= A && s.arm.wp_addr[i] < A + 64);
		CHECK_EQ_U(s.arm.wp_addr[i] % 8, 0);
		CHECK_EQ_U(s.arm.wp_len[i], 8);
		for (unsigned j = 0; j < i; j++)
			CHECK(s.arm.wp_addr[i] != s.arm.wp_addr[j]);
	}
	/* armed at 120, T0's previous sample is then 120: still recent */
	w = (struct cd_watch){ .nwp = 4, .armed = true, .arm_time = 120 };
	s = step(&f, 0, 130, B, false, &w);
	CHECK(!s.disarm && !s.arm.nwp);
	/* previous sample 130 > 120: old; nothing published since 130 */
	s = step(&f, 0, 140, B, false, &w);
	CHECK(s.disarm && !s.arm.nwp);
	/* a trap makes them old at once; T1 republishes A (its previous store
	 * sample, 141, is after its entry's 100) */
	step(&f, 1, 141, B + 64, true, NULL);
	CHECK(step(&f, 1, 145, A + 24, true, NULL).published);
	w = (struct cd_watch){ .nwp = 2, .armed = true, .hit = true, .arm_time = 141 };
	s = step(&f, 0, 146, B, false, &w);
	CHECK(s.disarm);
	CHECK_EQ_U(s.arm.nwp, 2);
	CHECK_EQ_U(s.arm.publisher, 1);
	/* a detection does not arm */
	s = step(&f, 0, 150, A, false, &(struct cd_watch){ .nwp = 4 });
	CHECK(s.detected && !s.disarm && !s.arm.nwp);
	/* no registers: never */
	step(&f, 2, 160, A + 32, true, NULL);
	s = step(&f, 3, 170, B, false, &(struct cd_watch){ .nwp = 0 });
	CHECK(!s.disarm && !s.arm.nwp);
	free(f.mem);
}

/* The pick comes before the sample's own publication: the last BOARD_RECENT
 * publications are those before the sample. */
static void test_arm_before_publish(void)
{
	struct fix f;
	fix_init(&f, 1024, CD_EXPIRY_RECORDER, 0);
	struct cd_watch w = { .nwp = 1 };
	step(&f, 0, 10, 0x900000, false, &w);          /* T0's previous sample: 10 */
	step(&f, 1, 100, A, true, NULL);               /* the only candidate */
	/* BOARD_RECENT - 1 publications of T0 itself, on their own lines */
	for (unsigned i = 0; i < BOARD_RECENT - 1; i++)
		CHECK(board_publish(&f.b, 0x200040 + (uint64_t)i * 64, 8, 0, 101 + i, 0));
	/* T0's store on a fresh line: picks A, then publishes (A drops out) */
	struct cd_step s = step(&f, 0, 300, 0x800000 + 100 * 64, true, &w);
	CHECK(s.published);
	CHECK_EQ_U(s.arm.nwp, 1);
	CHECK_EQ_U(s.arm.pub_addr, A);
	struct board_view v;
	CHECK(!board_pick(&f.b, 0, 10, 400, 1, BOARD_RECENT, &v));
	free(f.mem);
}

/* Watchpoint expiry of the offline rules. */
static void test_hit_expiry(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_INTERVAL, 0);
	struct cd_arm_note n;
	step(&f, 0, 100, B, false, NULL);
	cd_arm_noted(&f.h[0], 90, &n);                  /* one sample: no limit */
	CHECK(cd_hit_recent(&f.r, &f.h[0], &n, 1000000));
	step(&f, 0, 140, B, false, NULL);
	cd_arm_noted(&f.h[0], 120, &n);                 /* interval 40 */
	CHECK(cd_hit_recent(&f.r, &f.h[0], &n, 160));
	CHECK(!cd_hit_recent(&f.r, &f.h[0], &n, 161));
	f.r.expiry = CD_EXPIRY_NS;
	f.r.expiry_value = 10;
	CHECK(cd_hit_recent(&f.r, &f.h[0], &n, 130));
	CHECK(!cd_hit_recent(&f.r, &f.h[0], &n, 131));
	f.r.expiry = CD_EXPIRY_SAMPLES;
	f.r.expiry_value = 1;
	CHECK(cd_hit_recent(&f.r, &f.h[0], &n, 1000));
	step(&f, 0, 150, B, false, NULL);
	CHECK(!cd_hit_recent(&f.r, &f.h[0], &n, 1000));
	f.r.expiry = CD_EXPIRY_RECORDER;
	CHECK(cd_hit_recent(&f.r, &f.h[0], &n, UINT64_MAX));
	free(f.mem);
}

/* The murmur hash spreads lines that collide under mod (A and A2: slots 15
 * and 11 of 16). */
static void test_murmur_slots(void)
{
	struct fix f;
	fix_init(&f, 16, CD_EXPIRY_INTERVAL, 0);
	f.b.hash = BOARD_HASH_MURMUR;
	CHECK(step(&f, 1, 100, A, true, NULL).published);
	CHECK(step(&f, 2, 110, A2, true, NULL).published);   /* another slot now */
	CHECK(step(&f, 0, 120, A, false, NULL).detected);
	CHECK(step(&f, 0, 130, A2, false, NULL).detected);
	CHECK(board_slot_of(&f.b, A) != board_slot_of(&f.b, A2));
	free(f.mem);
}

int main(void)
{
	RUN(test_history);
	RUN(test_detection);
	RUN(test_recorder_replacement);
	RUN(test_interval_rule);
	RUN(test_ns_and_samples_rules);
	RUN(test_arming);
	RUN(test_arm_before_publish);
	RUN(test_hit_expiry);
	RUN(test_murmur_slots);
	return check_summary();
}
