/* One step of ComDetective's Algorithm 1: see comdetective.h. */
#include "comdetective.h"

static void history_add(struct cd_history *h, uint64_t time, bool store)
{
	h->s_prev = h->s_last;
	h->s_last = time;
	h->nsamples++;
	if (store) {
		h->st_prev = h->st_last;
		h->st_last = time;
		h->nstores++;
	}
}

static uint64_t age(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static const struct cd_history *publisher(const struct cd_rules *c, const struct board_view *v)
{
	return c->threads && v->thread < c->nthreads ? &c->threads[v->thread] : NULL;
}

/* The expiry rule for something of that age, `since` samples old (the
 * rule's count), against an interval (UINT64_MAX: none yet). */
static bool within(const struct cd_rules *c, uint64_t age, uint64_t since, uint64_t interval)
{
	switch (c->expiry) {
	case CD_EXPIRY_RECORDER:
		return true;
	case CD_EXPIRY_NS:
		return age <= c->expiry_value;
	case CD_EXPIRY_SAMPLES:
		return since < c->expiry_value;
	case CD_EXPIRY_INTERVAL:
	default:
		return age <= interval;
	}
}

/* Is entry v still recent at `now`?  Its publisher's store samples since
 * and last store interval count; a publisher the caller does not know of
 * leaves it recent. */
static bool entry_recent(const struct cd_rules *c, const struct board_view *v, uint64_t now)
{
	const struct cd_history *p = publisher(c, v);
	uint64_t since = p ? p->nstores - v->count : 0;
	uint64_t interval = p && p->nstores >= 2 ? p->st_last - p->st_prev : UINT64_MAX;
	return within(c, age(now, v->time), since, interval);
}

/* May the store sample whose history h has just taken replace the stable
 * entry v (recent: entry_recent)? */
static bool may_replace(const struct cd_rules *c, const struct cd_history *h,
                        const struct board_view *v, bool recent)
{
	if (c->expiry != CD_EXPIRY_RECORDER)
		return !recent;
	uint64_t older = h->st_prev ? h->st_prev : h->s_prev;  /* before this sample */
	return v->time < older;
}

/* TryArmWatchpoint (Algorithm 1, lines 29-34). */
static void try_arm(const struct cd_rules *c, uint32_t self, const struct cd_history *h,
                    uint64_t now, const struct cd_watch *w, uint64_t *rnd, struct cd_step *out)
{
	if (!w || !w->nwp || !rnd)
		return;
	uint64_t prev = h->s_prev;
	if (w->armed && !w->hit && w->arm_time >= prev)
		return;                 /* still recent */
	out->disarm = true;
	struct board_view v;
	if (!board_pick(c->board, self, prev, now, board_random(rnd), BOARD_RECENT, &v))
		return;
	uint64_t line = board_line(c->board, v.addr);
	uint32_t words = c->line_size / CD_WORD_BYTES;
	uint32_t chosen[CT_WP_MAX];
	unsigned want = w->nwp < CT_WP_MAX ? w->nwp : CT_WP_MAX;
	unsigned n = board_choose_words(rnd, words ? words : 1, want, chosen);
	struct ct_wp_arm *arm = &out->arm;
	arm->pub_time = v.time;
	arm->pub_addr = v.addr;
	arm->pub_len = v.len;
	arm->publisher = v.thread;
	arm->nwp = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		arm->wp_addr[i] = line + (uint64_t)chosen[i] * CD_WORD_BYTES;
		arm->wp_len[i] = CD_WORD_BYTES;
	}
}

void cd_step(const struct cd_rules *c, uint32_t self, struct cd_history *h,
             const struct cd_access *a, const struct cd_watch *w, uint64_t *rnd,
             struct cd_step *out)
{
	out->detected = out->disarm = out->published = false;
	out->arm.nwp = 0;           /* (a memset of *out costs more than the rest) */
	history_add(h, a->time, a->store);
	if (!c->board)
		return;
	struct board_view v;
	struct board_slot slot;
	bool have = board_lookup(c->board, a->addr, &v, &slot);
	bool recent = have && entry_recent(c, &v, a->time);
	if (recent && board_line(c->board, v.addr) == board_line(c->board, a->addr) &&
	    v.thread != self && v.time > h->t_prev) {
		out->detected = true;   /* lines 11-17 */
		out->src = v;
		h->t_prev = v.time;
	} else {
		try_arm(c, self, h, a->time, w, rnd, out);
	}
	if (a->store && (!have || may_replace(c, h, &v, recent))) {
		struct board_view mine = {
			.addr = a->addr, .time = a->time, .ip = a->ip, .count = h->nstores,
			.thread = self, .cpu = a->cpu, .len = a->len,
		};
		out->published = board_replace(c->board, &slot, &mine);  /* lines 22-26 */
	}
}

void cd_arm_noted(const struct cd_history *h, uint64_t pub_time, struct cd_arm_note *n)
{
	n->pub_time = pub_time;
	n->interval = h->nsamples >= 2 ? h->s_last - h->s_prev : UINT64_MAX;
	n->nsamples = h->nsamples;
}

bool cd_hit_recent(const struct cd_rules *c, const struct cd_history *h,
                   const struct cd_arm_note *n, uint64_t time)
{
	return within(c, age(time, n->pub_time), h->nsamples - n->nsamples, n->interval);
}
