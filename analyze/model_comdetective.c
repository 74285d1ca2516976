/* The comdetective model: Algorithm 1 of the ComDetective paper (SC'19,
 * sections 3.2-3.3) replayed offline over the merged record stream, with
 * the recorder's own step (formats/comdetective.h, cd_step) on a board of
 * its own (formats/board.h) and the analyzer's knobs: board size, hash,
 * expiry, period multiplier.
 *
 * Samples: a bulletin board of board_size entries, indexed by a hash of the
 * line number (address / line size).  For a sample of thread T1 on line L1:
 *   - the entry at hash(L1) matches when it holds line L1, was published by
 *     another thread T2, after T1's t_prev, and is still recent (expiry of
 *     its publisher): a communication T2 -> T1, true sharing when the byte
 *     ranges overlap, weight = period x K; then t_prev(T1) = publish time;
 *   - a store (or atomic) publishes itself when the entry is empty or
 *     expired (TryAtomicPut: a recent entry, of any line, stays).
 * Expiry of a board entry (the publisher's):
 *   comdetective  age <= the time between the publisher's last two store
 *                 samples (no expiry before its second store sample)
 *   ns:N          age <= N
 *   samples:N     the publisher has taken fewer than N store samples since
 * Watchpoints are not simulated: the recorded WP_ARM / WP_HIT records are
 * used.  A hit is a communication from the arm's publisher to the hitting
 * thread, weight = period x K x L / (D x 8) (at least period x K), period of
 * the sample that armed, D = registers armed (at most --watchpoints);
 * hits on registers >= --watchpoints are ignored, and only the first
 * counted hit of an arm counts (the runtime disarms on a trap);
 * --watchpoints 0 ignores every hit.  A hit
 * counts when it is recent (the watcher's expiry):
 *   comdetective  hit time - publish time <= the watcher's interval between
 *                 its last two samples (loads too) when it armed
 *   ns:N          hit time - publish time <= N
 *   samples:N     the watcher took fewer than N samples since it armed
 * except in a trace whose watchpoints the recorder armed per CPU from its
 * writer thread (SUMMARY watchpoint_arming=cpu, format 6): it armed them
 * late, up to a writer pass after the sample, and ended the old ones
 * itself, so every recorded hit counts.
 * Samples, arms and hits thinned by --period-multiplier are never seen.
 *
 * Software line watches (CONFIG line_watches > 0, the inst sampler; the
 * emulate model's --line-watches): each
 * WP_ARM watches one line in a slot of the watcher's, kept as the recorder
 * keeps them (formats/comdetective.h, cd_lines_*: the same slots, the same
 * line_watch_life expiry at its samples); a hit names its slot (reg) and
 * carries the bytes the access touched: true sharing when they overlap the
 * published bytes; weight = period x K x L / (bytes watched) (1 x for a
 * whole line); with the comdetective expiry every recorded hit counts (the
 * recorder ended the old watches); --watchpoints 0 ignores them.  A watch
 * lives on after its first hit until the watcher overwrites the bytes of
 * its publication, reported as a hit too (format 5, header bit
 * CT_FEAT_LINE_WRITERS; before, every hit ended its watch): an overwrite
 * makes the watcher the line's latest known writer, and a second hit is no
 * event.  Each detection and each first hit is credited to its line's
 * latest known writer (the newest store sample or overwrite on the line,
 * cd_writer_note; formats/comdetective.h says why) when that came after the
 * publication (cd_credit), and counts nothing when that writer is the
 * watcher itself.
 *
 * --estimator owner (a trace recorded with commrec --owner-window J: the
 * inst runtime's line monitor, record/inst/inst_owner.c) replaces all of
 * the above: every OWNER_XFER record is a transfer of the exact model seen
 * in the windows of the sampled stores (each sampled with probability
 * 1/P) among the J stores to its line before it, and weighs P / J per
 * such window: windows x P / J.  Its
 * variance part is that of model_exact.c's owner estimator with m = J:
 * each window w's Z_w grows by 1/J, so sum P (P - 1) Z_w^2 grows by
 * P (P - 1) (2 prior + windows) / J^2, prior = sum of the windows'
 * earlier transfers (the record's).  m = J assumes the line had J stores
 * before the transfer: on a line's first J stores the estimate is low
 * (FORMAT.md, "Line monitor").  One window stands for at most
 * (threads - 1) P transfers (comm_event.unit_max): between two stores of
 * the line each other thread receives it at most once (a load, or its
 * store when it had not loaded), so its J stores see at most J (threads - 1).
 *
 * Windows the monitor could not open (OWNER_WIN dropped: its table slot
 * held by another line's window, or the line at its most windows) are
 * accounted for by inverse-probability weighting (Horvitz-Thompson): a
 * sampled store opens its window with probability q, so the store, sampled
 * with probability 1/P, has its window with probability q / P, and each
 * opened window stands for P' = P / q stores: the weights above with P'
 * for P (windows x P' / J, variance part P' (P' - 1) (2 prior + windows)
 * / J^2, the unbiased estimate of the variance of a Horvitz-Thompson sum
 * whose units are included with probability 1 / P').  q is the share of
 * opened windows among the sampled stores so far (all threads, OWNER_WIN
 * records in time order), taken when the transfer is weighed.  Not a rate
 * of the recent past: a window lives until 2J stores of its line, which on
 * a line stored slowly is long after the table's state that opened it
 * (LULESH: a rate over the last 4096 sampled stores weighed 1.2-1.8 x
 * exact's volume, the running rate 0.86-1.05 x).  The assumption: a
 * missed window would have held what an opened one holds, i.e. a drop
 * does not depend on the transfers its window would have seen.  A slot
 * held by another line's window is that; a line at its most windows is
 * not (the line is busy), and is rare (64 windows open on one line need
 * its stores sampled more than once in J / 32). */
#include <stdlib.h>
#include <string.h>

#include "comdetective.h"
#include "model_common.h"

struct cd_thread {
	uint64_t last_period;                /* period x K of the last kept sample */
	uint32_t last_cpu;
	/* the current watchpoint arm */
	bool armed, hit_done;
	struct ct_wp_arm arm;
	uint64_t arm_period;
	struct cd_arm_note note;
};

/* A thread's software line watches: the slots, and each slot's arm. */
struct cd_lwatch {
	struct cd_lines lines;
	struct ct_wp_arm arm[CD_LINES_MAX];
	uint64_t period[CD_LINES_MAX];
	struct cd_arm_note note[CD_LINES_MAX];
};

struct cd {
	struct model_opts o;
	unsigned line_size;
	size_t nthreads;
	struct board board;
	void *board_mem;
	struct cd_rules rules;
	struct cd_history *hist;             /* Algorithm 1's state of each thread */
	struct cd_thread *t;
	struct cd_lwatch *lw;                /* rules.wp_lines: each thread's line watches */
	struct board writers;                /* rules.wp_lines: the lines' latest known writers */
	void *writers_mem;
	struct kfilter kf;
	struct event_consumer *out;
	size_t nout;
	bool hits_all;                       /* SUMMARY watchpoint_arming=cpu: every recorded hit */
	bool owner;                          /* --estimator owner: OWNER_XFER records only */
	double owner_p, owner_j;             /* the monitor's P and J */
	double owner_others;                 /* threads - 1 (at least 1) */
	uint64_t rate_opened, rate_sampled;  /* OWNER_WIN records so far (owner_rate) */
	uint64_t windows[CT_OWNER_OPEN_MAX + 1]; /* OWNER_WIN records by status */
	uint64_t owner_left_out;    /* accesses the monitor could not follow (SUMMARY) */
};

/* Lines whose latest known writer is kept (line watches): a slot is about
 * 56 bytes. */
#define CD_WRITERS 4096u

static void cd_destroy(void *self);

/* An unsigned value of the trace's CONFIG or SUMMARY, or 0. */
static uint64_t meta_u64(const struct ct_trace *t, enum ct_section sec, const char *key)
{
	char v[32];
	if (!t || !ct_trace_meta(t, sec, key, v, sizeof v))
		return 0;
	return strtoull(v, NULL, 10);
}

/* A CONFIG value, at most 1000000 (slots, lives). */
static unsigned config_uint(const struct ct_trace *t, const char *key)
{
	uint64_t x = meta_u64(t, CT_SEC_CONFIG, key);
	return x > 1000000 ? 1000000 : (unsigned)x;
}

bool owner_monitor_params(const struct ct_trace *t, uint64_t *window, uint64_t *period)
{
	const struct ct_header *h = ct_trace_header(t);
	*window = *period = 0;
	if (!h || !(h->features & CT_FEAT_OWNER))
		return false;
	*window = meta_u64(t, CT_SEC_CONFIG, "owner_window");
	*period = meta_u64(t, CT_SEC_CONFIG, "period");
	return *window && *period;
}

bool owner_monitor_trace(const struct ct_trace *t)
{
	uint64_t j, p;
	return t && owner_monitor_params(t, &j, &p);
}

static void *cd_create(const struct model_setup *s)
{
	struct cd *cd = calloc(1, sizeof *cd);
	if (!cd)
		return NULL;
	cd->o = *s->opts;
	cd->o.estimator = estimator_resolve(cd->o.estimator, "comdetective", s->trace);
	cd->line_size = s->line_size ? s->line_size : 64;
	cd->nthreads = s->nthreads;
	cd->out = s->out;
	cd->nout = s->nout;
	if (!cd->o.board_size)
		cd->o.board_size = 127;
	size_t nt = s->nthreads ? s->nthreads : 1;
	cd->board_mem = calloc(1, board_bytes(cd->o.board_size));
	cd->hist = calloc(nt, sizeof *cd->hist);
	cd->t = calloc(nt, sizeof *cd->t);
	if (!cd->board_mem || !cd->hist || !cd->t ||
	    kfilter_init(&cd->kf, cd->o.period_multiplier, s->nthreads)) {
		cd_destroy(cd);
		return NULL;
	}
	board_init(&cd->board, cd->board_mem, cd->o.board_size, cd->line_size);
	cd->board.hash = cd->o.hash == HASH_MURMUR ? BOARD_HASH_MURMUR : BOARD_HASH_MOD;
	cd->rules = (struct cd_rules){
		.board = &cd->board, .expiry = (enum cd_expiry)cd->o.expiry,
		.expiry_value = cd->o.expiry_value, .line_size = cd->line_size,
		.threads = cd->hist, .nthreads = s->nthreads,
	};
	/* the recorder's line watches; the emulate model's (its options) */
	unsigned lines = config_uint(s->trace, "line_watches");
	unsigned life = config_uint(s->trace, "line_watch_life");
	if (!lines) {
		lines = cd->o.watch_lines;
		life = cd->o.watch_life;
	}
	if (lines) {
		const struct ct_header *h = s->trace ? ct_trace_header(s->trace) : NULL;
		cd->rules.wp_lines = lines < CD_LINES_MAX ? lines : CD_LINES_MAX;
		cd->rules.wp_life = life;
		if (!cd->rules.wp_life)
			cd->rules.wp_life = 1;
		cd->rules.wp_one_hit = h && (h->features & CT_FEAT_LINE_WATCHES) &&
		                       !(h->features & CT_FEAT_LINE_WRITERS);
		cd->lw = calloc(nt, sizeof *cd->lw);
		cd->writers_mem = calloc(1, board_bytes(CD_WRITERS));
		if (!cd->lw || !cd->writers_mem) {
			cd_destroy(cd);
			return NULL;
		}
		board_init(&cd->writers, cd->writers_mem, CD_WRITERS, cd->line_size);
		cd->writers.hash = BOARD_HASH_MURMUR;
	}
	for (size_t i = 0; i < s->nthreads; i++)
		cd->t[i].last_cpu = UINT32_MAX;
	char arming[16];
	cd->hits_all = s->trace && ct_trace_meta(s->trace, CT_SEC_SUMMARY, "watchpoint_arming", arming,
	                                         sizeof arming) && !strcmp(arming, "cpu");
	uint64_t j, p;
	if (cd->o.estimator == ESTIMATOR_OWNER && s->trace && owner_monitor_params(s->trace, &j, &p)) {
		cd->owner = true;
		cd->owner_left_out = meta_u64(s->trace, CT_SEC_SUMMARY, "inst.owner_left_out");
		cd->owner_p = (double)p;
		cd->owner_j = (double)j;
		cd->owner_others = (double)(s->nthreads > 2 ? s->nthreads - 1 : 1);
	}
	return cd;
}

/* A store of thread `self` (a store sample, a store's hit): the latest
 * known writer of its line. */
static void note_writer(struct cd *cd, uint32_t self, uint64_t time, uint64_t addr, unsigned len,
                        uint32_t cpu, uint64_t ip)
{
	struct board_view v = {
		.addr = addr, .time = time, .ip = ip, .thread = self, .cpu = cpu, .len = (uint8_t)len,
	};
	cd_writer_note(&cd->writers, &v);
}

/* The event of sample r (weight w) that found publication pub on the
 * board, credited to e (pub, or a later writer of the line: cd_credit).
 * True sharing is decided against pub's bytes: they are a sample of what
 * was stored since, whereas a later writer's known bytes are chosen (an
 * overwrite's overlap pub's by definition) and would lean the split to
 * true sharing. */
static void sample_event(struct cd *cd, const struct ct_record *r, const struct board_view *e,
                         const struct board_view *pub, uint64_t w)
{
	const struct ct_sample *s = &r->u.sample;
	struct comm_event ev = {
		.time = r->time, .dst = r->thread, .src = e->thread,
		.dst_cpu = s->cpu, .src_cpu = e->cpu, .line = board_line(&cd->board, s->addr),
		.addr = s->addr, .src_addr = e->addr, .len = s->len, .src_len = e->len,
		.dst_kind = s->kind, .via = COMM_VIA_SAMPLE,
		.true_sharing = ranges_overlap(s->addr, s->len, pub->addr, pub->len),
		.ip = s->ip, .src_ip = e->ip, .weight = (double)w, .var = sampled_var((double)w),
		.unit_max = (double)w,
	};
	emit(cd->out, cd->nout, &ev);
}

/* A sample; all: the kind filter keeps every record (its k is 1).  (r is
 * restrict: no store here changes the record, so its fields need not all
 * be read before the model's state is written.) */
static inline __attribute__((always_inline)) void
cd_sample(struct cd *cd, const struct cd_rules *rules, bool all,
          const struct ct_record *restrict r)
{
	const struct ct_sample *s = &r->u.sample;
	struct cd_thread *th = &cd->t[r->thread];
	uint64_t w = all ? s->period : s->period * cd->kf.k;
	th->last_period = w;
	th->last_cpu = s->cpu;
	struct cd_access a = {
		.time = r->time, .addr = s->addr, .ip = s->ip, .cpu = s->cpu, .len = s->len,
		.store = s->kind != CT_ACCESS_LOAD,
	};
	struct cd_step st;
	cd_step_inline(rules, r->thread, &cd->hist[r->thread], &a, NULL, NULL, &st);
	if (rules->wp_lines) {      /* (cd->lw is there) */
		struct board_view src;
		cd_lines_expire(rules, &cd->hist[r->thread], &cd->lw[r->thread].lines);
		bool counted = st.detected;
		if (counted) {
			src = st.src;
			counted = cd_credit(&cd->writers, r->thread, r->time, &src);
		}
		if (a.store)
			note_writer(cd, r->thread, r->time, s->addr, s->len, s->cpu, s->ip);
		if (counted)
			sample_event(cd, r, &src, &st.src, w);
	} else if (st.detected) {
		struct board_view src = st.src;   /* (a copy: st stays out of memory) */
		sample_event(cd, r, &src, &src, w);
	}
}

/* A line watch's arm: into the slot the recorder gave it. */
static void line_arm(struct cd *cd, const struct ct_record *r)
{
	struct cd_lwatch *lw = &cd->lw[r->thread];
	unsigned slot = cd_lines_add(&cd->rules, &cd->hist[r->thread], &lw->lines, &r->u.arm);
	lw->arm[slot] = r->u.arm;
	lw->period[slot] = cd->t[r->thread].last_period;
	cd_arm_noted(&cd->hist[r->thread], r->u.arm.pub_time, &lw->note[slot]);
}

static void cd_arm(struct cd *cd, const struct ct_record *r)
{
	const struct ct_wp_arm *a = &r->u.arm;
	struct cd_thread *th = &cd->t[r->thread];
	const struct cd_history *h = &cd->hist[r->thread];
	th->armed = false;
	if (a->publisher >= cd->nthreads || a->publisher == r->thread || a->nwp < 1 ||
	    a->nwp > CT_WP_MAX || !h->nsamples)
		return;
	if (cd->lw) {
		line_arm(cd, r);
		return;
	}
	th->armed = true;
	th->hit_done = false;
	th->arm = *a;
	th->arm_period = th->last_period;
	cd_arm_noted(h, a->pub_time, &th->note);
}

/* The publication arm a watches (its publisher's last cpu). */
static struct board_view arm_source(const struct cd *cd, const struct ct_wp_arm *a)
{
	return (struct board_view){
		.addr = a->pub_addr, .time = a->pub_time, .thread = a->publisher,
		.cpu = cd->t[a->publisher].last_cpu, .len = a->pub_len,
	};
}

/* The event of hit r on a watch of the store pub, credited to src (pub or
 * a later writer: sample_event says why the split is pub's), armed by a
 * sample of weight `period`; watched: the bytes of the line it watched. */
static void hit_event(struct cd *cd, const struct ct_record *r, const struct board_view *src,
                      const struct board_view *pub, uint64_t period, unsigned watched)
{
	const struct ct_wp_hit *h = &r->u.hit;
	double scale = (double)cd->line_size / (double)(watched ? watched : 1);
	if (scale < 1)
		scale = 1;
	struct comm_event ev = {
		.time = r->time, .dst = r->thread, .src = src->thread,
		.dst_cpu = h->cpu, .src_cpu = src->cpu,
		.line = board_line(&cd->board, h->addr),
		.addr = h->addr, .src_addr = src->addr, .len = h->len, .src_len = src->len,
		.dst_kind = h->kind, .via = COMM_VIA_WATCHPOINT,
		.true_sharing = ranges_overlap(h->addr, h->len, pub->addr, pub->len),
		.ip = h->ip, .src_ip = src->ip, .weight = (double)period * scale,
		.var = sampled_var((double)period * scale), .unit_max = (double)period * scale,
	};
	emit(cd->out, cd->nout, &ev);
}

/* A hit of a line watch: its slot's arm, once. */
static void line_hit(struct cd *cd, const struct ct_record *r)
{
	const struct ct_wp_hit *h = &r->u.hit;
	struct cd_lwatch *lw = &cd->lw[r->thread];
	unsigned slot = h->reg;
	if (slot >= CD_LINES_MAX || !(lw->lines.live >> slot & 1))
		return;
	const struct ct_wp_arm *a = &lw->arm[slot];
	unsigned watched = 0;
	for (unsigned i = 0; i < a->nwp; i++)
		watched += a->wp_len[i];
	if (h->addr < a->wp_addr[0] || h->addr >= a->wp_addr[0] + watched)
		return;
	bool first = !cd_lines_was_hit(&lw->lines, slot), store = h->kind != CT_ACCESS_LOAD;
	bool overwrite = cd_lines_overwrite(&lw->lines, slot, h->addr, h->len, store);
	if (!cd_lines_hit(&lw->lines, slot, h->addr, h->len, store, cd->rules.wp_one_hit) ||
	    cd->o.watchpoints == MODEL_WP_NONE)
		return;
	const struct board_view pub = arm_source(cd, a);
	struct board_view src = pub;
	bool counted = first && h->len && h->addr + h->len <= a->wp_addr[0] + watched &&
	               cd_hit_recent(&cd->rules, &cd->hist[r->thread], &lw->note[slot], r->time) &&
	               cd_credit(&cd->writers, r->thread, r->time, &src);
	if (overwrite)
		note_writer(cd, r->thread, r->time, h->addr, h->len, h->cpu, h->ip);
	if (counted)
		hit_event(cd, r, &src, &pub, lw->period[slot], watched);
}

static void cd_hit(struct cd *cd, const struct ct_record *r)
{
	const struct ct_wp_hit *h = &r->u.hit;
	struct cd_thread *th = &cd->t[r->thread];
	if (cd->lw) {
		line_hit(cd, r);
		return;
	}
	if (!th->armed || th->hit_done || h->reg >= th->arm.nwp)
		return;
	unsigned d = th->arm.nwp;
	if (cd->o.watchpoints == MODEL_WP_NONE)
		return;
	if (cd->o.watchpoints) {
		if (h->reg >= cd->o.watchpoints)
			return;
		if (cd->o.watchpoints < d)
			d = cd->o.watchpoints;
	}
	if (!cd->hits_all && !cd_hit_recent(&cd->rules, &cd->hist[r->thread], &th->note, r->time))
		return;
	struct board_view src = arm_source(cd, &th->arm);
	hit_event(cd, r, &src, &src, th->arm_period, d * CD_WORD_BYTES);
	th->hit_done = true;
}

/* An OWNER_WIN record into the running counts of the inclusion rate. */
static void owner_rate_note(struct cd *cd, const struct ct_owner_win *w)
{
	cd->rate_opened += w->status == CT_OWNER_OPENED;
	cd->rate_sampled++;
}

/* q: the share of the sampled stores so far whose window opened (1 before
 * any opened: a transfer's windows opened before it, so that does not
 * happen in a well-formed trace). */
static double owner_rate(const struct cd *cd)
{
	return cd->rate_opened ? (double)cd->rate_opened / (double)cd->rate_sampled : 1;
}

/* A transfer the line monitor saw (--estimator owner), weighed with
 * P' = P / q (the comment at the top). */
static void cd_owner_xfer(struct cd *cd, const struct ct_record *r)
{
	const struct ct_owner_xfer *x = &r->u.oxfer;
	if (x->src >= cd->nthreads || x->src == r->thread)
		return;
	double p = cd->owner_p / owner_rate(cd), j = cd->owner_j;
	struct comm_event ev = {
		.time = r->time, .dst = r->thread, .src = x->src,
		.dst_cpu = UINT32_MAX, .src_cpu = UINT32_MAX,
		.line = board_line(&cd->board, x->addr), .addr = x->addr, .len = x->len,
		.dst_kind = x->kind, .via = COMM_VIA_SAMPLE,
		.true_sharing = (x->flags & CT_OWNER_TRUE) != 0, .ip = x->ip,
		.weight = x->windows * p / j,
		.var = (2 * (double)x->prior + x->windows) * p * (p - 1) / (j * j),
		.unit_max = p * cd->owner_others,
	};
	emit(cd->out, cd->nout, &ev);
}

/* Does the kind filter (kfilter) keep record r (all: it keeps every
 * record)?  An arm it drops leaves its thread unarmed. */
static inline bool cd_kept(struct cd *cd, bool all, const struct ct_record *r)
{
	if (all || kfilter_keep(&cd->kf, r))
		return true;
	if (r->type == CT_REC_WP_ARM)
		cd->t[r->thread].armed = false;
	return false;
}

/* A record of the line monitor (--estimator owner reads only those). */
static void cd_owner_record(struct cd *cd, const struct ct_record *r)
{
	if (r->type == CT_REC_OWNER_XFER)
		cd_owner_xfer(cd, r);
	else if (r->type == CT_REC_OWNER_WIN) {
		cd->windows[r->u.owin.status]++;
		owner_rate_note(cd, &r->u.owin);
	}
}

/* A record of Algorithm 1, under rules (cd->rules, or cd_records' copy):
 * a sample is asked for first (the bulk of every trace). */
static inline __attribute__((always_inline)) void
cd_board_record(struct cd *cd, const struct cd_rules *rules, bool all,
                const struct ct_record *r)
{
	if (r->type == CT_REC_SAMPLE) {
		if (cd_kept(cd, all, r))
			cd_sample(cd, rules, all, r);
	} else if (r->type == CT_REC_WP_ARM) {
		if (cd_kept(cd, all, r))
			cd_arm(cd, r);
	} else if (r->type == CT_REC_WP_HIT) {
		if (cd_kept(cd, all, r))
			cd_hit(cd, r);
	}
}

static void cd_finish(void *self)
{
	const struct cd *cd = self;
	uint64_t drop = cd->windows[CT_OWNER_DROP_TABLE] + cd->windows[CT_OWNER_DROP_LINE];
	uint64_t all = drop + cd->windows[CT_OWNER_OPENED];
	if (cd->owner && drop)
		ana_warn("line monitor: %llu of %llu sampled stores opened no window (%llu: the "
		         "monitor table was full, %llu: their line had its most windows open); "
		         "the owner estimate weighs the opened ones for them (x 1/q, q the share "
		         "of the sampled stores so far whose window opened)",
		         (unsigned long long)drop, (unsigned long long)all,
		         (unsigned long long)cd->windows[CT_OWNER_DROP_TABLE],
		         (unsigned long long)cd->windows[CT_OWNER_DROP_LINE]);
	if (cd->owner && cd->owner_left_out)
		ana_warn("line monitor: %llu accesses to monitored lines were not followed (threads "
		         "from the 65th on, or a signal handler that interrupted its thread inside "
		         "the monitor): the owner estimate leaves out the transfers they made",
		         (unsigned long long)cd->owner_left_out);
}

static void cd_destroy(void *self)
{
	struct cd *cd = self;
	if (!cd)
		return;
	kfilter_free(&cd->kf);
	free(cd->board_mem);
	free(cd->hist);
	free(cd->t);
	free(cd->lw);
	free(cd->writers_mem);
	free(cd);
}

static void cd_record(void *self, const struct ct_record *r)
{
	struct cd *cd = self;
	if (r->thread >= cd->nthreads)
		return;
	if (cd->owner)
		cd_owner_record(cd, r);
	else
		cd_board_record(cd, &cd->rules, cd->kf.k == 1, r);
}

/* A block: the estimator asked once, the rules in a local copy, which no
 * store into the model's state can change (the compiler keeps them
 * instead of reloading them for each sample), and whether the kind filter
 * keeps every record asked once too (a loop for each answer). */
static void cd_records(void *self, const struct ct_record *r, size_t n)
{
	struct cd *cd = self;
	if (cd->owner) {
		for (size_t i = 0; i < n; i++)
			cd_record(cd, &r[i]);
		return;
	}
	const struct cd_rules rules = cd->rules;
	if (cd->kf.k == 1) {
		for (size_t i = 0; i < n; i++)
			if (r[i].thread < cd->nthreads)
				cd_board_record(cd, &rules, true, &r[i]);
	} else {
		for (size_t i = 0; i < n; i++)
			if (r[i].thread < cd->nthreads)
				cd_board_record(cd, &rules, false, &r[i]);
	}
}

const struct model_ops model_comdetective = {
	.name = "comdetective",
	.summary = "ComDetective's Algorithm 1 (bulletin board + recorded watchpoints), offline",
	.create = cd_create,
	.record = cd_record,
	.records = cd_records,
	.finish = cd_finish,
	.destroy = cd_destroy,
};
