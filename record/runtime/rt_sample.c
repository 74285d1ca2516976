/* The generic sample path, shared by every sampler (signal handler context):
 *
 *   sample -> SAMPLE record (or a skip count)
 *          -> ComDetective Algorithm 1, online part: look the line up on the
 *             bulletin board; if that is not a detection, try to (re)arm the
 *             watchpoints on an unexpired line published by another thread
 *             (WP_ARM right after the SAMPLE); a store or atomic sample
 *             publishes itself where the entry has expired.
 *
 * Only usable samples (a SAMPLE record) take part: the inter-sample
 * intervals that define expiry are those of the SAMPLE records in the
 * thread's stream, so the analyzer can replay exactly this logic. */
#include "rt.h"

#define SKIP_FLUSH_EVERY 256   /* skipped samples between SKIPPED records */

void rt_sample(struct rt_thread *t, const struct rt_sample_in *s)
{
	if (s->skip) {
		if (rt_cfg.verbose >= 4)
			rt_log(4, "thread %u: sample at ip %#llx skipped (%d)", t->index,
			       (unsigned long long)s->ip, s->skip);
		unsigned k = (unsigned)s->skip < 16 ? (unsigned)s->skip : 0;
		t->skip[k]++;
		if (++t->skip_pending >= SKIP_FLUSH_EVERY)
			rt_flush_skips(t, s->time);
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
	rt_push(t, &r);

	if (rt_board_ok && rt_cfg.watchpoints > 0 && !atomic_load(&rt_exiting)) {
		uint64_t now = s->time;
		struct board_view v;
		bool detect = false;
		if (board_get(&rt_board, s->acc.addr, &v) &&
		    board_line(&rt_board, v.addr) == board_line(&rt_board, s->acc.addr) &&
		    v.thread != t->index && v.time > t->prev_detect) {
			detect = true;          /* Algorithm 1, lines 11-17 */
			t->prev_detect = v.time;
		}
		if (!detect && t->nwp > 0)
			rt_wp_try_arm(t, now);
		if (s->acc.kind != CT_ACCESS_LOAD) {
			uint64_t older = t->prev_store ? t->prev_store : t->prev_sample;
			board_publish(&rt_board, s->acc.addr, r.u.sample.len, t->index, now, older);
		}
	}
	t->prev_sample = s->time;
	if (s->acc.kind != CT_ACCESS_LOAD)
		t->prev_store = s->time;
}
