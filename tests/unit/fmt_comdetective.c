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

/* Line watches (software watchpoints): rules with 4 slots, a life of 3
 * samples.  T1 stores A+8 at 100, T2 B+16 at 110; T0's first sample (C, a
 * load, at 200) watches both lines, newest first: B (T2) in slot 0, A (T1)
 * in slot 1, each a WP_ARM of one 64-byte register on the whole line. */
#define C 0x20000ull
static void line_rules(struct fix *f, unsigned lines, unsigned life)
{
	fix_init(f, 16, CD_EXPIRY_RECORDER, 0);
	f->r.wp_lines = lines;
	f->r.wp_life = life;
}

static void test_line_arming(void)
{
	struct fix f;
	struct cd_lines l0;
	memset(&l0, 0, sizeof l0);
	struct cd_watch w = { .nwp = 4, .lines = &l0 };
	line_rules(&f, 4, 3);
	step(&f, 1, 100, A + 8, true, NULL);
	step(&f, 2, 110, B + 16, true, NULL);
	struct cd_step s = step(&f, 0, 200, C, false, &w);
	CHECK_EQ_U(s.narms, 2);
	CHECK(!s.arm.nwp && !s.disarm);
	CHECK_EQ_U(s.arms[0].slot, 0);
	CHECK_EQ_U(s.arms[0].arm.publisher, 2);
	CHECK_EQ_U(s.arms[0].arm.pub_time, 110);
	CHECK_EQ_U(s.arms[0].arm.pub_addr, B + 16);
	CHECK_EQ_U(s.arms[0].arm.nwp, 1);
	CHECK_EQ_U(s.arms[0].arm.wp_addr[0], B);
	CHECK_EQ_U(s.arms[0].arm.wp_len[0], 64);
	CHECK_EQ_U(s.arms[1].slot, 1);
	CHECK_EQ_U(s.arms[1].arm.publisher, 1);
	CHECK_EQ_U(s.arms[1].arm.wp_addr[0], A);
	CHECK_EQ_U(l0.live, 3);
	CHECK_EQ_U(l0.born[0], 1);
	/* nothing logged since T0's previous sample (200): no arm; the watches
	 * live on (2 - 1 < 3 samples) */
	s = step(&f, 0, 300, C, false, &w);
	CHECK_EQ_U(s.narms, 0);
	CHECK(!s.lines_changed);
	s = step(&f, 0, 400, C, false, &w);
	CHECK(!s.lines_changed);
	/* the third sample since the arm ends both */
	s = step(&f, 0, 500, C, false, &w);
	CHECK(s.lines_changed);
	CHECK_EQ_U(l0.live, 0);
	/* a store sample of T0 itself is never watched by T0 */
	step(&f, 0, 600, C + 64, true, &w);
	s = step(&f, 0, 700, C, false, &w);
	CHECK_EQ_U(s.narms, 0);
	free(f.mem);
}

/* Arming at a detection too, but not the sampled line; a store sample the
 * board did not take (its slot holds a recent entry) is still watched. */
static void test_line_detection_and_log(void)
{
	struct fix f;
	struct cd_lines l0;
	memset(&l0, 0, sizeof l0);
	struct cd_watch w = { .nwp = 4, .lines = &l0 };
	line_rules(&f, 4, 3);
	step(&f, 0, 50, C, false, &w);
	step(&f, 2, 110, B, true, NULL);
	step(&f, 1, 120, A, true, NULL);
	struct cd_step s = step(&f, 0, 200, A + 8, false, &w);
	CHECK(s.detected);
	CHECK_EQ_U(s.src.thread, 1);
	CHECK_EQ_U(s.narms, 1);                      /* B only: A is the sampled line */
	CHECK_EQ_U(s.arms[0].arm.wp_addr[0], B);
	/* T2 stores A2 (A's slot) at 300: T1's entry (120) is not older than
	 * T2's previous store sample (110): not published, but logged */
	s = step(&f, 2, 300, A2 + 8, true, NULL);
	CHECK(!s.published);
	s = step(&f, 0, 400, C, false, &w);
	CHECK_EQ_U(s.narms, 1);
	CHECK_EQ_U(s.arms[0].arm.publisher, 2);
	CHECK_EQ_U(s.arms[0].arm.wp_addr[0], A2);
	CHECK_EQ_U(s.arms[0].arm.pub_addr, A2 + 8);
	free(f.mem);
}

/* Between samples: nothing before the thread's first sample; then the
 * store samples logged since its last arms, its own left out, the line of
 * none excluded (a sample's own line is); each one once (a later sample
 * arms only what came after); its history's samples do not move. */
static void test_line_catch_up(void)
{
	struct fix f;
	struct cd_lines l0;
	memset(&l0, 0, sizeof l0);
	struct cd_watch w = { .nwp = 4, .lines = &l0 };
	struct cd_step s;
	line_rules(&f, 4, 3);
	step(&f, 1, 100, A + 8, true, NULL);
	cd_lines_catch_up(&f.r, 0, &f.h[0], 150, &l0, &s);
	CHECK_EQ_U(s.narms, 0);                      /* T0 has not sampled */
	step(&f, 0, 200, C, false, &w);              /* arms A */
	CHECK_EQ_U(l0.live, 1);
	step(&f, 0, 210, C + 64, true, &w);          /* T0's own store sample */
	step(&f, 2, 220, C + 8, true, NULL);         /* the line T0 sampled at 200 */
	step(&f, 1, 230, B + 16, true, NULL);
	cd_lines_catch_up(&f.r, 0, &f.h[0], 240, &l0, &s);
	CHECK_EQ_U(s.narms, 2);
	CHECK(!s.detected && !s.published && !s.arm.nwp);
	CHECK_EQ_U(s.arms[0].arm.publisher, 1);
	CHECK_EQ_U(s.arms[0].arm.wp_addr[0], B);
	CHECK_EQ_U(s.arms[1].arm.publisher, 2);
	CHECK_EQ_U(s.arms[1].arm.wp_addr[0], C);
	CHECK_EQ_U(f.h[0].nsamples, 2);
	CHECK_EQ_U(l0.born[s.arms[0].slot], 2);
	cd_lines_catch_up(&f.r, 0, &f.h[0], 250, &l0, &s);
	CHECK_EQ_U(s.narms, 0);                      /* nothing new */
	s = step(&f, 0, 300, C + 128, false, &w);
	CHECK_EQ_U(s.narms, 0);                      /* the sample does not arm them again */
	free(f.mem);
}

/* A watch of `line` for a publication of its bytes 8..15, armed now. */
static unsigned add(const struct fix *f, const struct cd_history *h, struct cd_lines *l,
                    uint64_t line)
{
	struct ct_wp_arm a = { .pub_addr = line + 8, .pub_len = 8 };
	cd_line_registers(&a, line, 64);
	return cd_lines_add(&f->r, h, l, &a);
}

/* The slots: a line already watched takes the newer arm in its slot; when
 * full, the oldest watch gives way (the lowest slot among equals); a step
 * arms at most wp_lines lines (the newest samples). */
static void test_line_slots(void)
{
	struct fix f;
	struct cd_lines l;
	memset(&l, 0, sizeof l);
	line_rules(&f, 2, 100);
	struct cd_history h = { .nsamples = 5 };
	CHECK_EQ_U(add(&f, &h, &l, A), 0);
	h.nsamples = 6;
	CHECK_EQ_U(add(&f, &h, &l, B), 1);
	h.nsamples = 7;
	CHECK_EQ_U(add(&f, &h, &l, A), 0);   /* same line: its slot, born again */
	CHECK_EQ_U(l.born[0], 7);
	CHECK_EQ_U(add(&f, &h, &l, C), 1);   /* full: B (born 6) gives way */
	CHECK_EQ_U(l.line[1], C);
	CHECK_EQ_U(l.live, 3);
	/* find: an access that touches the line, from before it too */
	uint64_t lo = 0;
	unsigned n = 0;
	CHECK_EQ_U(cd_lines_find(&l, 64, A + 63, 1, &lo, &n), 0);
	CHECK_EQ_U(lo, A + 63);
	CHECK_EQ_U(n, 1);
	/* the bytes on the line: from before it, past its end, longer than a u8 */
	CHECK_EQ_U(cd_lines_find(&l, 64, A - 4, 8, &lo, &n), 0);
	CHECK_EQ_U(lo, A);
	CHECK_EQ_U(n, 4);
	CHECK_EQ_U(cd_lines_find(&l, 64, A + 60, 16, &lo, &n), 0);
	CHECK_EQ_U(n, 4);
	CHECK_EQ_U(cd_lines_find(&l, 512, A, 400, &lo, &n), 0);
	CHECK_EQ_U(n, 255);
	CHECK(cd_lines_find(&l, 64, A - 8, 8, NULL, NULL) == -1);
	CHECK(cd_lines_find(&l, 64, A + 64, 8, NULL, NULL) == -1);
	cd_lines_drop(&l, 0);
	CHECK(cd_lines_find(&l, 64, A, 8, NULL, NULL) == -1);
	CHECK_EQ_U(cd_lines_find(&l, 64, C + 8, 8, NULL, NULL), 1);
	/* three candidates, two slots: the two newest */
	struct cd_lines l0;
	memset(&l0, 0, sizeof l0);
	struct cd_watch w = { .nwp = 4, .lines = &l0 };
	step(&f, 1, 100, A, true, NULL);
	step(&f, 2, 110, B, true, NULL);
	step(&f, 3, 120, A2 + 64, true, NULL);
	struct cd_step s = step(&f, 0, 200, C, false, &w);
	CHECK_EQ_U(s.narms, 2);
	CHECK_EQ_U(s.arms[0].arm.publisher, 3);
	CHECK_EQ_U(s.arms[1].arm.publisher, 2);
	free(f.mem);
}

/* Hits (format 5): the first is reported, then only the overwrite of the
 * publication's bytes (8..15), which ends the watch; a store elsewhere on
 * the line and later loads are not; a first hit that overwrites ends it at
 * once; with one_hit (older traces) every hit ends it. */
static void test_line_hits(void)
{
	struct fix f;
	struct cd_lines l;
	memset(&l, 0, sizeof l);
	line_rules(&f, 4, 100);
	struct cd_history h = { .nsamples = 1 };
	unsigned s = add(&f, &h, &l, A);
	CHECK(cd_lines_hit(&l, s, A, 8, false, false));         /* first: a load */
	CHECK(cd_lines_was_hit(&l, s));
	CHECK(!cd_lines_hit(&l, s, A + 8, 8, false, false));    /* a load of the bytes */
	CHECK(!cd_lines_hit(&l, s, A + 16, 8, true, false));    /* a store beside them */
	CHECK(l.live >> s & 1);
	CHECK(cd_lines_hit(&l, s, A + 12, 8, true, false));     /* the overwrite */
	CHECK(!(l.live >> s & 1) && !cd_lines_was_hit(&l, s));
	s = add(&f, &h, &l, B);
	CHECK(cd_lines_hit(&l, s, B + 15, 1, true, false));     /* first and overwrite */
	CHECK(!(l.live >> s & 1));
	s = add(&f, &h, &l, B);
	CHECK(cd_lines_hit(&l, s, B, 8, true, false));          /* first, not an overwrite */
	CHECK(l.live >> s & 1);
	s = add(&f, &h, &l, B);                                 /* re-armed: a new first hit */
	CHECK(!cd_lines_was_hit(&l, s));
	CHECK(cd_lines_hit(&l, s, B, 8, false, true));          /* one_hit */
	CHECK(!(l.live >> s & 1));
	/* full slots: one waiting for its overwrite gives way before an older unhit one */
	struct cd_lines m;
	memset(&m, 0, sizeof m);
	free(f.mem);
	line_rules(&f, 2, 100);
	h.nsamples = 1;
	CHECK_EQ_U(add(&f, &h, &m, A), 0);
	h.nsamples = 2;
	CHECK_EQ_U(add(&f, &h, &m, B), 1);
	CHECK(cd_lines_hit(&m, 1, B, 8, false, false));
	CHECK_EQ_U(add(&f, &h, &m, C), 1);
	CHECK_EQ_U(m.line[0], A);
	free(f.mem);
}

/* The latest known writers: a later store on the line replaces the
 * publication, the watcher's own one cancels the event, an older one, one
 * after `now` and one of another line on the same slot change nothing. */
static void test_credit(void)
{
	struct board w;
	void *mem = calloc(1, board_bytes(16));
	board_init(&w, mem, 16, 64);
	struct board_view pub = { .addr = A + 8, .time = 100, .thread = 1, .len = 8 };
	struct board_view src = pub;
	CHECK(cd_credit(&w, 0, 200, &src) && src.thread == 1);   /* nothing known */
	cd_writer_note(&w, &(struct board_view){ .addr = A + 16, .time = 90, .thread = 2 });
	CHECK(cd_credit(&w, 0, 200, &src) && src.thread == 1);   /* older */
	cd_writer_note(&w, &(struct board_view){ .addr = A + 16, .time = 150, .thread = 2, .len = 8 });
	CHECK(cd_credit(&w, 0, 140, &src) && src.thread == 1);   /* after now */
	CHECK(cd_credit(&w, 0, 200, &src) && src.thread == 2 && src.addr == A + 16);
	src = pub;
	CHECK(!cd_credit(&w, 2, 200, &src));                     /* the watcher's own */
	cd_writer_note(&w, &(struct board_view){ .addr = A2, .time = 160, .thread = 3 });
	src = pub;
	CHECK(cd_credit(&w, 0, 200, &src) && src.thread == 1);   /* A2 took A's slot */
	free(mem);
}

/* A line longer than a register's u8 length: consecutive 128-byte ranges. */
static void test_line_registers(void)
{
	struct ct_wp_arm a;
	memset(&a, 0, sizeof a);
	cd_line_registers(&a, 0x1000, 256);
	CHECK_EQ_U(a.nwp, 2);
	CHECK_EQ_U(a.wp_addr[1], 0x1080);
	CHECK_EQ_U(a.wp_len[0], 128);
	CHECK_EQ_U(a.wp_len[1], 128);
	cd_line_registers(&a, 0x1000, 64);
	CHECK_EQ_U(a.nwp, 1);
	CHECK_EQ_U(a.wp_len[0], 64);
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
	RUN(test_line_arming);
	RUN(test_line_detection_and_log);
	RUN(test_line_catch_up);
	RUN(test_line_slots);
	RUN(test_line_hits);
	RUN(test_credit);
	RUN(test_line_registers);
	return check_summary();
}
