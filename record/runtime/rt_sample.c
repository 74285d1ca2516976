/* The generic sample path, shared by every sampler (signal handler context):
 *
 *   sample -> SAMPLE record (or a skip count)
 *          -> ComDetective Algorithm 1, online part (cd_step,
 *             formats/comdetective.h): look the line up on the bulletin
 *             board; if that is not a detection, (re)arm the watchpoints
 *             on an unexpired line published by another thread (WP_ARM
 *             right after the SAMPLE); a store or atomic sample publishes
 *             itself where the entry has expired.
 *
 * Only usable samples (a SAMPLE record) take part: the inter-sample
 * intervals that define expiry are those of the SAMPLE records in the
 * thread's stream, so the analyzer can replay exactly this logic. */
#include "rt.h"

#define SKIP_FLUSH_EVERY 256   /* skipped samples between SKIPPED records */

/* Algorithm 1 (formats/comdetective.h): the recorder's expiry rule;
 * without watchpoints, no board (the history only) */
struct cd_rules rt_recorder_rules(void)
{
	return (struct cd_rules){
		.board = rt_board_ok && rt_cfg.watchpoints > 0 && !atomic_load(&rt_exiting)
		         ? &rt_board : NULL,
		.expiry = CD_EXPIRY_RECORDER, .line_size = rt_cfg.line_size,
		.wp_lines = rt_cfg.wp_lines, .wp_life = rt_cfg.wp_life,
	};
}

void rt_lines_catch_up(struct rt_thread *t)
{
	struct cd_rules rules = rt_recorder_rules();
	if (!rules.board || board_logged(rules.board) == t->cd.log_seen)
		return;
	uint64_t now = rt_now();
	struct cd_step st;
	cd_lines_catch_up(&rules, t->index, &t->cd, now, &t->wlines, &st);
	if (st.narms)
		rt_wp_lines_step(t, &st, now);
}

void rt_sample(struct rt_thread *t, const struct rt_sample_in *s)
{
	rt_sample_to(t, s, rt_push);
}

void rt_sample_to(struct rt_thread *t, const struct rt_sample_in *s, rt_emit_fn emit)
{
	bool may_arm = rt_check_switch_cost(t);   /* at every sample, skipped ones too */
	if (s->skip) {
		if (rt_cfg.verbose >= 4)
			rt_log(4, "thread %u: sample at ip %#llx skipped (%d)", t->index,
			       (unsigned long long)s->ip, s->skip);
		unsigned k = (unsigned)s->skip < 16 ? (unsigned)s->skip : 0;
		t->skip[k]++;
		if (++t->skip_pending >= SKIP_FLUSH_EVERY)
			rt_flush_skips_to(t, s->time, emit);
		return;
	}
	t->nsamples++;
	struct ct_record r = { .type = CT_REC_SAMPLE, .time = s->time };
	r.u.sample.ip = s->ip;
	r.u.sample.addr = s->acc.addr;
	r.u.sample.period = s->period;
	r.u.sample.data_src = s->data_src;
	r.u.sample.weight = s->weight;
	r.u.sample.cpu = s->cpu;
	r.u.sample.len = s->acc.len ? s->acc.len : 1;
	r.u.sample.kind = s->acc.kind;
	r.u.sample.flags = (uint8_t)(s->acc.flags | s->extra_flags);
	emit(t, &r);
	if (rt_cpuwp_active() && atomic_load(&t->samp_by_writer))
		return;   /* the writer runs Algorithm 1 on all threads' samples in time order */

	struct cd_rules rules = rt_recorder_rules();
	struct cd_access a = {
		.time = s->time, .addr = s->acc.addr, .ip = s->ip, .cpu = s->cpu,
		.len = r.u.sample.len, .store = s->acc.kind != CT_ACCESS_LOAD,
	};
	struct cd_watch w = { .nwp = may_arm ? (unsigned)t->nwp : 0, .armed = t->wp_armed != 0,
	                      .hit = t->wp_hit, .arm_time = t->wp_arm_time, .lines = &t->wlines };
	struct cd_step st;
	cd_step(&rules, t->index, &t->cd, &a, &w, &t->rnd, &st);
	if (st.disarm && t->wp_armed)
		rt_wp_disarm(t);
	if (st.arm.nwp)
		rt_wp_arm(t, &st.arm, s->time);
	if (st.narms || st.lines_changed)
		rt_wp_lines_step(t, &st, s->time);
}
