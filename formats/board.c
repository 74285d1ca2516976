/* Online bulletin board: see board.h. */
#include "board.h"

size_t board_bytes(uint32_t size)
{
	return (size_t)size * sizeof(struct board_entry);
}

void board_init(struct board *b, void *mem, uint32_t size, uint32_t line_size)
{
	b->e = mem;
	atomic_init(&b->recent_n, 0);
	atomic_init(&b->log_n, 0);
	for (unsigned i = 0; i < BOARD_RECENT; i++) {
		atomic_init(&b->recent[i], UINT32_MAX);
		atomic_init(&b->log[i].seq, 0);
	}
	b->size = size ? size : 1;
	b->hash = BOARD_HASH_MOD;
	b->line_shift = 0;
	while ((1u << b->line_shift) < line_size && b->line_shift < 31)
		b->line_shift++;
}

bool board_get(const struct board *b, uint64_t addr, struct board_view *v)
{
	return board_read_entry(&b->e[board_slot_of(b, addr)], v) != 0;
}

bool board_get_slot(const struct board *b, uint32_t i, struct board_view *v)
{
	if (i >= b->size)
		return false;
	return board_read_entry(&b->e[i], v) != 0;
}

bool board_publish(struct board *b, uint64_t addr, uint8_t len, uint32_t thread,
                   uint64_t now, uint64_t older_than)
{
	struct board_view v;
	struct board_slot slot;
	if (board_lookup(b, addr, &v, &slot) && v.time >= older_than)
		return false;               /* not expired yet */
	v = (struct board_view){ .addr = addr, .time = now, .thread = thread, .len = len };
	return board_replace(b, &slot, &v);
}

bool board_pick(const struct board *b, uint32_t self, uint64_t since, uint64_t now,
                uint64_t rnd, unsigned probes, struct board_view *out)
{
	uint64_t n = atomic_load_explicit(&b->recent_n, memory_order_acquire);
	unsigned found = 0;
	uint32_t seen[BOARD_RECENT];    /* the candidates' slots */
	if (probes > BOARD_RECENT)
		probes = BOARD_RECENT;
	if (probes > n)
		probes = (unsigned)n;
	for (unsigned k = 0; k < probes; k++) {
		uint32_t i = atomic_load_explicit(&b->recent[(n - 1 - k) % BOARD_RECENT],
		                                  memory_order_relaxed);
		struct board_view v;
		if (i >= b->size || !board_read_entry(&b->e[i], &v))
			continue;
		if (v.thread == self || v.time < since || v.time > now)
			continue;
		/* a slot published twice among the last ones is one candidate
		 * (its second look reads the same entry: only candidates need
		 * the comparison, which made the pick quadratic in probes) */
		bool dup = false;
		for (unsigned j = 0; j < found && !dup; j++)
			dup = seen[j] == i;
		if (dup)
			continue;
		seen[found] = i;
		/* reservoir sampling: each candidate kept with probability 1/found */
		found++;
		if (found == 1 || (rnd = rnd * 6364136223846793005ull + 1442695040888963407ull,
		                   (rnd >> 33) % found == 0))
			*out = v;
	}
	return found != 0;
}

void board_log(struct board *b, const struct board_view *v)
{
	uint64_t k = atomic_fetch_add_explicit(&b->log_n, 1, memory_order_relaxed);
	struct board_entry *e = &b->log[k % BOARD_RECENT];
	board_entry_write(e, atomic_load_explicit(&e->seq, memory_order_acquire), v);
}

unsigned board_pick_logged(const struct board *b, uint32_t self, uint64_t *seen, uint64_t now,
                           struct board_view *out, unsigned max)
{
	uint64_t n = atomic_load_explicit(&b->log_n, memory_order_acquire);
	uint64_t from = n - *seen < BOARD_RECENT ? *seen : n - BOARD_RECENT;
	unsigned got = 0;
	*seen = n;
	for (uint64_t k = n; k > from && got < max; k--) {
		struct board_view v;
		if (!board_read_entry(&b->log[(k - 1) % BOARD_RECENT], &v))
			continue;
		if (v.thread != self && v.time <= now)
			out[got++] = v;
	}
	return got;
}

unsigned board_choose_words(uint64_t *rnd, uint32_t words, unsigned want, uint32_t *chosen)
{
	unsigned n = 0;
	if (want > words)
		want = words;
	for (int tries = 0; n < want && tries < 64; tries++) {
		uint32_t w = (uint32_t)(board_random(rnd) % words);
		bool dup = false;
		for (unsigned k = 0; k < n; k++)
			dup |= chosen[k] == w;
		if (!dup)
			chosen[n++] = w;
	}
	return n;
}
