/* The emulate model: ComDetective emulated on a full trace.  It plays the
 * recorder with an ideal sampler and ideal debug registers, and feeds what
 * that recorder would have written (SAMPLE, WP_ARM and WP_HIT records)
 * into the comdetective model, whose Algorithm 1 (board, expiry, t_prev,
 * publication, watchpoint weighting) is used unchanged, through its
 * model_ops.  Compared with exact on the same trace, its matrices give the
 * sampling error without measurement noise.
 *
 * Sampler: every Nth load, and every Nth store or atomic, of each thread
 * (counted apart, as the PMU counts them; N = --emulate-period, default
 * EMU_DEFAULT_PERIOD): the Nth, 2Nth, ... access of the kind is sampled,
 * with period N x the record's period (1 in a full trace).
 *
 * Online part: the recorder's own step (formats/comdetective.h, cd_step
 * with the recorder's expiry rule, as record/runtime/rt_sample.c runs it)
 * on a board of --board-size entries indexed by line number mod size; on a
 * sample of thread T:
 *   - detection: the entry of T's line holds that line, from another
 *     thread, published after T's last detection (then no arm);
 *   - otherwise TryArmWatchpoint: when T's watchpoints are old (none, hit,
 *     or armed before T's previous sample), pick at random an entry among
 *     the last 64 publications, from another thread, published at or after
 *     T's previous sample; arm D = --watchpoints registers (default 4) on D
 *     distinct random 8-byte words of its line (fewer if the line has fewer
 *     words); a WP_ARM record follows the SAMPLE;
 *   - a store or atomic sample publishes itself when the entry is empty or
 *     was published before T's previous store sample (its previous sample
 *     of any kind if none).
 * Watchpoints are resolved exactly: the watcher's next access (any access
 * of the full stream, sampled or not) that touches one of the watched words
 * is a WP_HIT (register, watched word, the access's time, ip, cpu, kind),
 * after which the registers are off until the next arm.  The comdetective
 * model then applies its expiry and weighs the hit period x L / (D x 8).
 * A hit is checked before the sample of the same access (the trap comes
 * with the access, the PMU interrupt after it).
 * --watchpoints 0 (MODEL_WP_NONE in analysis.h) runs without watchpoints: no
 * arms, samples only.
 * --line-watches S plays the inst sampler's software watchpoints instead
 * (commrec --line-watches, --line-watch-life; the same cd_step): at every sample
 * the thread watches the whole lines of the store samples that other
 * threads took since its previous one, in S slots, each until its first
 * hit (reported) and the thread's store to the bytes of the watched
 * publication (reported too: an overwrite), or --line-watch-life samples;
 * a hit carries the slot and the bytes the access touched in the line.
 *
 * --estimator owner replaces the ComDetective step and its weighting by
 * the owner estimator (model_exact.c, exact_owner_*): a sampled access
 * stands for the transfers of its line's next J accesses, which the full
 * trace shows exactly (on a sampled recording the inst runtime's line
 * monitor records them for windows of stores, record/inst/inst_owner.c,
 * and the comdetective model weighs them).  Its sampler is the recorder's:
 * one load in each block of N loads of the thread and one store in each
 * block of N stores, at a random place in the block (sample_gap_stratified
 * in formats/board.h), not every Nth: then its expectation is exact's
 * volume and split whatever the program's loops (every Nth store aliased
 * with false_sharing's loop: +33% at N = 100, +6% at N = 2, on one full
 * trace), and its variance is smaller than with independent draws.
 *
 * Randomness: one xorshift generator per thread, seeded from its index
 * and --seed: runs are reproducible, and --seed gives other draws. */
#include <stdlib.h>
#include <string.h>

#include "comdetective.h"
#include "model_common.h"

#define EMU_DEFAULT_PERIOD 10000u
#define EMU_DEFAULT_WP 4u

extern const struct model_ops model_comdetective;
extern const struct model_ops model_exact;

struct emu_thread {
	uint64_t nload, nstore;
	struct cd_history hist;  /* the recorder's Algorithm 1 state */
	uint64_t rnd;
	uint64_t own_left[2], own_rest[2]; /* the owner sampler: loads, stores */
	bool armed, hit;
	uint64_t arm_time;
	unsigned nwp;
	uint64_t wp[CT_WP_MAX];
	struct cd_lines lines;   /* --line-watches */
};

struct emu {
	const struct model_ops *inner;
	void *in;
	struct model_opts o;     /* given to the inner model */
	uint64_t period;         /* N */
	unsigned nwp;            /* D, 0: no watchpoints */
	size_t nthreads;
	struct board board;
	void *board_mem;
	struct cd_rules rules;   /* the recorder's: its board (none without watchpoints) */
	struct emu_thread *t;
};

static void emu_destroy(void *self);

static void *emu_create(const struct model_setup *s)
{
	struct emu *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->o = *s->opts;
	e->period = e->o.emulate_period ? e->o.emulate_period : EMU_DEFAULT_PERIOD;
	if (e->o.watchpoints == MODEL_WP_NONE)
		e->nwp = 0;
	else if (e->o.watchpoints >= 1 && e->o.watchpoints <= CT_WP_MAX)
		e->nwp = e->o.watchpoints;
	else
		e->nwp = EMU_DEFAULT_WP;
	e->o.watchpoints = e->nwp ? e->nwp : 0;
	unsigned line_size = s->line_size ? s->line_size : 64;
	e->nthreads = s->nthreads;
	uint32_t board_size = e->o.board_size ? e->o.board_size : 127;
	e->board_mem = calloc(1, board_bytes(board_size));
	e->t = calloc(s->nthreads ? s->nthreads : 1, sizeof *e->t);
	if (!e->board_mem || !e->t) {
		emu_destroy(e);
		return NULL;
	}
	board_init(&e->board, e->board_mem, board_size, line_size);
	e->rules = (struct cd_rules){
		.board = e->nwp ? &e->board : NULL, .expiry = CD_EXPIRY_RECORDER,
		.line_size = line_size,
		.wp_lines = e->o.watch_lines < CD_LINES_MAX ? e->o.watch_lines : CD_LINES_MAX,
		.wp_life = e->o.watch_life ? e->o.watch_life : 1,
	};
	for (size_t i = 0; i < s->nthreads; i++) {
		e->t[i].rnd = (((uint64_t)i + 1) << 32) ^ 0x9e3779b97f4a7c15ull ^
		              (uint64_t)e->o.seed * 0x2545f4914f6cdd1dull;
		if (!e->t[i].rnd)        /* xorshift's one forbidden state */
			e->t[i].rnd = 0x9e3779b97f4a7c15ull;
	}
	if (!e->o.owner_window) {     /* the default window: OWNER_WINDOW_PER_PERIOD x N */
		uint64_t j = (uint64_t)OWNER_WINDOW_PER_PERIOD * e->period;
		e->o.owner_window = j < OWNER_WINDOW_MAX ? (unsigned)j : OWNER_WINDOW_MAX;
	}
	struct model_setup in = *s;
	in.opts = &e->o;
	/* auto is comdetective here: the inner model must not pick the owner
	 * estimator from a full trace's line monitor records */
	e->o.estimator = estimator_resolve(e->o.estimator, "emulate", s->trace);
	bool owner = e->o.estimator == ESTIMATOR_OWNER;
	e->inner = owner ? &model_exact : &model_comdetective;
	e->in = owner ? exact_owner_create(&in) : e->inner->create(&in);
	if (!e->in) {
		emu_destroy(e);
		return NULL;
	}
	return e;
}

/* The arm cd_step chose: a WP_ARM record for the inner model, and exact
 * watchpoints on its words. */
static void arm(struct emu *e, struct emu_thread *th, const struct ct_record *r,
                const struct ct_wp_arm *a)
{
	struct ct_record rec = { .type = CT_REC_WP_ARM, .thread = r->thread, .time = r->time };
	rec.u.arm = *a;
	th->nwp = a->nwp;
	memcpy(th->wp, a->wp_addr, a->nwp * sizeof *th->wp);
	th->armed = true;
	th->hit = false;
	th->arm_time = r->time;
	e->inner->record(e->in, &rec);
}

/* A WP_HIT of the watcher's access r for the inner model. */
static void hit_record(struct emu *e, const struct ct_record *r, uint64_t addr, unsigned len,
                       unsigned reg)
{
	const struct ct_sample *s = &r->u.sample;
	struct ct_record h = { .type = CT_REC_WP_HIT, .thread = r->thread, .time = r->time };
	h.u.hit.ip = s->ip;
	h.u.hit.addr = addr;
	h.u.hit.len = (uint8_t)len;
	h.u.hit.reg = (uint8_t)reg;
	h.u.hit.cpu = s->cpu;
	h.u.hit.kind = s->kind;
	e->inner->record(e->in, &h);
}

/* Line watches: the watch the access touches, if any, hit with the
 * access's bytes in its line when cd_lines_hit reports it (as the inst
 * runtime). */
static void check_line_hit(struct emu *e, struct emu_thread *th, const struct ct_record *r)
{
	const struct ct_sample *s = &r->u.sample;
	uint64_t len = s->len ? s->len : 1;
	uint64_t lo;
	unsigned n;
	int slot = cd_lines_find(&th->lines, e->rules.line_size, s->addr, len, &lo, &n);
	if (slot >= 0 &&
	    cd_lines_hit(&th->lines, (unsigned)slot, lo, n, s->kind != CT_ACCESS_LOAD, false))
		hit_record(e, r, lo, n, (unsigned)slot);
}

/* The watcher's access [addr, addr+len): a trap on the first watched word
 * it touches. */
static void check_hit(struct emu *e, struct emu_thread *th, const struct ct_record *r)
{
	const struct ct_sample *s = &r->u.sample;
	unsigned len = s->len ? s->len : 1;
	for (unsigned i = 0; i < th->nwp; i++) {
		if (!ranges_overlap(s->addr, len, th->wp[i], CD_WORD_BYTES))
			continue;
		th->hit = true;
		hit_record(e, r, th->wp[i], CD_WORD_BYTES, i);
		return;
	}
}

/* The owner estimator's sampler: the recorder's (sample_gap_stratified),
 * loads and stores counted apart. */
static bool owner_sampled(const struct emu *e, struct emu_thread *th, bool store)
{
	uint64_t *left = &th->own_left[store];
	if (*left == 0)
		*left = sample_gap_stratified(board_random(&th->rnd), e->period, &th->own_rest[store]);
	return --*left == 0;
}

static void emu_record(void *self, const struct ct_record *r)
{
	struct emu *e = self;
	if (r->type != CT_REC_SAMPLE || r->thread >= e->nthreads)
		return;
	const struct ct_sample *s = &r->u.sample;
	struct emu_thread *th = &e->t[r->thread];
	if (e->rules.wp_lines && th->lines.live)
		check_line_hit(e, th, r);
	else if (th->armed && !th->hit)
		check_hit(e, th, r);

	bool store = s->kind != CT_ACCESS_LOAD;
	uint64_t n = store ? ++th->nstore : ++th->nload;
	uint64_t period = e->period * (s->period ? s->period : 1);
	if (e->inner == &model_exact) {
		bool sampled = owner_sampled(e, th, store);
		exact_owner_access(e->in, r, sampled ? (double)period : 0);
		return;
	}
	if (n % e->period)
		return;

	struct ct_record smp = *r;
	smp.u.sample.period = period;
	e->inner->record(e->in, &smp);

	struct cd_access a = {
		.time = r->time, .addr = s->addr, .ip = s->ip, .cpu = s->cpu,
		.len = s->len ? s->len : 1, .store = store,
	};
	struct cd_watch w = { .nwp = e->nwp, .armed = th->armed, .hit = th->hit,
	                      .arm_time = th->arm_time, .lines = &th->lines };
	struct cd_step st;
	cd_step(&e->rules, r->thread, &th->hist, &a, &w, &th->rnd, &st);
	if (st.disarm)
		th->armed = false;
	if (st.arm.nwp)
		arm(e, th, r, &st.arm);
	for (unsigned i = 0; i < st.narms; i++) {
		struct ct_record rec = { .type = CT_REC_WP_ARM, .thread = r->thread, .time = r->time };
		rec.u.arm = st.arms[i].arm;
		e->inner->record(e->in, &rec);
	}
}

static void emu_finish(void *self)
{
	struct emu *e = self;
	if (e->inner->finish)
		e->inner->finish(e->in);
}

static void emu_destroy(void *self)
{
	struct emu *e = self;
	if (!e)
		return;
	if (e->in)
		e->inner->destroy(e->in);
	free(e->board_mem);
	free(e->t);
	free(e);
}

const struct model_ops model_emulate = {
	.name = "emulate",
	.summary = "full traces: ComDetective emulated (every Nth access sampled, exact watchpoints)",
	.create = emu_create,
	.record = emu_record,
	.finish = emu_finish,
	.destroy = emu_destroy,
};
