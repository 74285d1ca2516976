/* One step of ComDetective's Algorithm 1: see comdetective.h. */
#include "comdetective.h"

/* TryArmWatchpoint (Algorithm 1, lines 29-34). */
void cd_try_arm(const struct cd_rules *c, uint32_t self, const struct cd_history *h,
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

/* Was the line at `line` armed earlier in this step? */
static bool armed_now(const struct cd_step *out, uint64_t line)
{
	for (unsigned i = 0; i < out->narms; i++)
		if (out->arms[i].arm.wp_addr[0] == line)
			return true;
	return false;
}

/* Line watches: every candidate among the last logged store samples (see
 * comdetective.h); sampled: the line of the sample that arms (none:
 * UINT64_MAX). */
void cd_arm_lines(const struct cd_rules *c, uint32_t self, struct cd_history *h,
                  uint64_t now, uint64_t sampled, struct cd_lines *l, struct cd_step *out)
{
	struct board_view v[CD_ARMS_STEP];
	unsigned max = c->wp_lines < CD_ARMS_STEP ? c->wp_lines : CD_ARMS_STEP;
	unsigned n = board_pick_logged(c->board, self, &h->log_seen, now, v, max);
	for (unsigned i = 0; i < n; i++) {
		uint64_t line = board_line(c->board, v[i].addr);
		if (line == sampled || armed_now(out, line))
			continue;           /* the board's lookup decides about the sampled line;
			                       a line logged twice: its newest sample */
		struct cd_line_arm *la = &out->arms[out->narms++];
		la->arm.pub_time = v[i].time;
		la->arm.pub_addr = v[i].addr;
		la->arm.pub_len = v[i].len;
		la->arm.publisher = v[i].thread;
		cd_line_registers(&la->arm, line, c->line_size);
		la->slot = cd_lines_add(c, h, l, &la->arm);
	}
}

void cd_step(const struct cd_rules *c, uint32_t self, struct cd_history *h,
             const struct cd_access *a, const struct cd_watch *w, uint64_t *rnd,
             struct cd_step *out)
{
	if (!w) {                   /* (cd_step_inline leaves them) */
		out->disarm = out->lines_changed = false;
		out->arm.nwp = 0;
		out->narms = 0;
	}
	cd_step_inline(c, self, h, a, w, rnd, out);
}

void cd_lines_catch_up(const struct cd_rules *c, uint32_t self, struct cd_history *h,
                       uint64_t now, struct cd_lines *l, struct cd_step *out)
{
	out->detected = out->disarm = out->published = out->lines_changed = false;
	out->arm.nwp = 0;
	out->narms = 0;
	if (c->board && c->wp_lines && h->nsamples &&
	    board_logged(c->board) != h->log_seen)
		cd_arm_lines(c, self, h, now, UINT64_MAX, l, out);
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
	if (c->wp_lines && c->expiry == CD_EXPIRY_INTERVAL)
		return true;            /* the recorder ended the old ones (wp_life) */
	return cd_within(c, cd_age(time, n->pub_time), h->nsamples - n->nsamples, n->interval);
}

bool cd_lines_expire(const struct cd_rules *c, const struct cd_history *h, struct cd_lines *l)
{
	uint64_t before = l->live;
	for (uint64_t m = l->live; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		if (h->nsamples - l->born[i] >= c->wp_life)
			cd_lines_drop(l, i);
	}
	return l->live != before;
}

bool cd_lines_hit(struct cd_lines *l, unsigned slot, uint64_t lo, unsigned n, bool store,
                  bool one_hit)
{
	bool first = !cd_lines_was_hit(l, slot);
	bool overwrite = cd_lines_overwrite(l, slot, lo, n, store);
	if (overwrite || one_hit)
		cd_lines_drop(l, slot);
	else
		l->hit |= 1ull << slot;
	return first || overwrite;
}

unsigned cd_lines_add(const struct cd_rules *c, const struct cd_history *h, struct cd_lines *l,
                      const struct ct_wp_arm *arm)
{
	uint64_t line = arm->wp_addr[0];
	unsigned cap = c->wp_lines < CD_LINES_MAX ? c->wp_lines : CD_LINES_MAX;
	unsigned slot = cap, oldest = cap;
	for (unsigned i = 0; i < cap; i++) {
		bool live = l->live >> i & 1;
		if (live && l->line[i] == line) {
			slot = i;           /* the newer entry takes the line's watch */
			break;
		}
		if (!live && slot == cap)
			slot = i;
		/* the oldest gives way, one that waits for its overwrite first */
		bool hit = cd_lines_was_hit(l, i);
		if (live && (oldest == cap || hit > cd_lines_was_hit(l, oldest) ||
		             (hit == cd_lines_was_hit(l, oldest) && l->born[i] < l->born[oldest])))
			oldest = i;
	}
	if (slot == cap)
		slot = oldest < cap ? oldest : 0;
	l->live |= 1ull << slot;
	l->hit &= ~(1ull << slot);      /* a new watch: its first hit is to come */
	l->line[slot] = line;
	l->pub[slot] = arm->pub_addr;
	l->pub_len[slot] = arm->pub_len;
	l->born[slot] = h->nsamples;
	return slot;
}

int cd_lines_find(const struct cd_lines *l, unsigned line_size, uint64_t addr, uint64_t len,
                  uint64_t *lo, unsigned *n)
{
	for (uint64_t m = l->live; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		uint64_t line = l->line[i], end = line + line_size;
		if (addr >= end || addr + len <= line)
			continue;
		uint64_t a = addr > line ? addr : line, b = addr + len < end ? addr + len : end;
		if (lo)
			*lo = a;
		if (n)
			*n = b - a < 255 ? (unsigned)(b - a) : 255;
		return (int)i;
	}
	return -1;
}

void cd_line_registers(struct ct_wp_arm *arm, uint64_t line, unsigned line_size)
{
	unsigned n = 0;
	for (unsigned off = 0; off < line_size && n < CT_WP_MAX; off += CD_REG_BYTES, n++) {
		unsigned left = line_size - off;
		arm->wp_addr[n] = line + off;
		arm->wp_len[n] = (uint8_t)(left < CD_REG_BYTES ? left : CD_REG_BYTES);
	}
	arm->nwp = (uint8_t)n;
}

void cd_writer_note(struct board *w, const struct board_view *v)
{
	struct board_view old;
	struct board_slot slot;
	board_lookup(w, v->addr, &old, &slot);
	board_replace(w, &slot, v);
}

bool cd_credit(const struct board *w, uint32_t self, uint64_t now, struct board_view *src)
{
	struct board_view x;
	if (!board_get(w, src->addr, &x) || board_line(w, x.addr) != board_line(w, src->addr) ||
	    x.time <= src->time || x.time > now)
		return true;            /* nothing known since the publication */
	if (x.thread == self)
		return false;
	*src = x;
	return true;
}
