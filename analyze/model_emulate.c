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
 * Online part (what the recorder's sample handler does, record/runtime
 * rt_sample.c, on the recorder's own bulletin board, formats/board.h): a
 * board of --board-size entries indexed by line number mod size; on a
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
 *
 * Randomness: one xorshift generator per thread, seeded from its index:
 * runs are reproducible. */
#include <stdlib.h>
#include <string.h>

#include "board.h"
#include "model_common.h"

#define EMU_DEFAULT_PERIOD 10000u
#define EMU_DEFAULT_WP 4u
#define WORD 8

extern const struct model_ops model_comdetective;

struct emu_thread {
	uint64_t nload, nstore;
	uint64_t prev_sample, prev_store, prev_detect;
	uint64_t rnd;
	bool armed, hit;
	uint64_t arm_time;
	unsigned nwp;
	uint64_t wp[CT_WP_MAX];
};

struct emu {
	const struct model_ops *inner;
	void *in;
	struct model_opts o;     /* given to the inner model */
	uint64_t period;         /* N */
	unsigned nwp;            /* D, 0: no watchpoints */
	unsigned line_size;
	size_t nthreads;
	struct board board;
	void *board_mem;
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
	e->line_size = s->line_size ? s->line_size : 64;
	e->nthreads = s->nthreads;
	uint32_t board_size = e->o.board_size ? e->o.board_size : 127;
	e->board_mem = calloc(1, board_bytes(board_size));
	e->t = calloc(s->nthreads ? s->nthreads : 1, sizeof *e->t);
	if (!e->board_mem || !e->t) {
		emu_destroy(e);
		return NULL;
	}
	board_init(&e->board, e->board_mem, board_size, e->line_size);
	for (size_t i = 0; i < s->nthreads; i++)
		e->t[i].rnd = (((uint64_t)i + 1) << 32) ^ 0x9e3779b97f4a7c15ull;
	struct model_setup in = *s;
	in.opts = &e->o;
	e->inner = &model_comdetective;
	e->in = e->inner->create(&in);
	if (!e->in) {
		emu_destroy(e);
		return NULL;
	}
	return e;
}

static void try_arm(struct emu *e, struct emu_thread *th, uint32_t t, uint64_t now)
{
	bool old = !th->armed || th->hit || th->arm_time < th->prev_sample;
	if (!old)
		return;
	th->armed = false;
	struct board_view v;
	if (!board_pick(&e->board, t, th->prev_sample, now, board_random(&th->rnd), BOARD_RECENT, &v))
		return;
	uint64_t line = board_line(&e->board, v.addr);
	uint32_t chosen[CT_WP_MAX];
	unsigned n = board_choose_words(&th->rnd, e->line_size / WORD, e->nwp, chosen);
	if (!n)
		return;
	struct ct_record r = { .type = CT_REC_WP_ARM, .thread = t, .time = now };
	struct ct_wp_arm *a = &r.u.arm;
	a->pub_time = v.time;
	a->pub_addr = v.addr;
	a->pub_len = v.len;
	a->publisher = v.thread;
	a->nwp = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		th->wp[i] = line + (uint64_t)chosen[i] * WORD;
		a->wp_addr[i] = th->wp[i];
		a->wp_len[i] = WORD;
	}
	th->nwp = n;
	th->armed = true;
	th->hit = false;
	th->arm_time = now;
	e->inner->record(e->in, &r);
}

/* The watcher's access [addr, addr+len): a trap on the first watched word
 * it touches. */
static void check_hit(struct emu *e, struct emu_thread *th, const struct ct_record *r)
{
	const struct ct_sample *s = &r->u.sample;
	unsigned len = s->len ? s->len : 1;
	for (unsigned i = 0; i < th->nwp; i++) {
		if (!ranges_overlap(s->addr, len, th->wp[i], WORD))
			continue;
		struct ct_record h = { .type = CT_REC_WP_HIT, .thread = r->thread, .time = r->time };
		h.u.hit.ip = s->ip;
		h.u.hit.addr = th->wp[i];
		h.u.hit.len = WORD;
		h.u.hit.reg = (uint8_t)i;
		h.u.hit.cpu = s->cpu;
		h.u.hit.kind = s->kind;
		th->hit = true;
		e->inner->record(e->in, &h);
		return;
	}
}

static void emu_record(void *self, const struct ct_record *r)
{
	struct emu *e = self;
	if (r->type != CT_REC_SAMPLE || r->thread >= e->nthreads)
		return;
	const struct ct_sample *s = &r->u.sample;
	struct emu_thread *th = &e->t[r->thread];
	if (th->armed && !th->hit)
		check_hit(e, th, r);

	bool store = s->kind != CT_ACCESS_LOAD;
	uint64_t n = store ? ++th->nstore : ++th->nload;
	if (n % e->period)
		return;

	struct ct_record smp = *r;
	smp.u.sample.period = e->period * (s->period ? s->period : 1);
	e->inner->record(e->in, &smp);

	uint64_t now = r->time;
	if (e->nwp) {
		uint32_t t = r->thread;
		struct board_view v;
		bool detect = false;
		if (board_get(&e->board, s->addr, &v) &&
		    board_line(&e->board, v.addr) == board_line(&e->board, s->addr) &&
		    v.thread != t && v.time > th->prev_detect) {
			detect = true;
			th->prev_detect = v.time;
		}
		if (!detect)
			try_arm(e, th, t, now);
		if (store) {
			uint64_t older = th->prev_store ? th->prev_store : th->prev_sample;
			board_publish(&e->board, s->addr, s->len ? s->len : 1, t, now, older);
		}
	}
	th->prev_sample = now;
	if (store)
		th->prev_store = now;
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
