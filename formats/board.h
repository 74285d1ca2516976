/* The online bulletin board of the watchpoint machinery (ComDetective,
 * Algorithm 1): a global array of `size` entries indexed by
 * (address / line_size) mod size.  An entry holds the address and length of
 * a sampled store (or atomic), the publishing thread's index and the time of
 * publishing.
 *
 * One implementation serves the recorder's sample handler (record/runtime)
 * and the analyzer's emulate model, which replays the recorder on a full
 * trace: the rules below decide which WP_ARM records a trace holds.  No
 * allocation (the caller gives the memory), no locks, no stdio.
 *
 * Lock-free: every entry has a sequence number, odd while a publisher writes
 * it.  A publisher claims an entry by CAS on the sequence number it read
 * when it decided the entry was replaceable (so two publishers never both
 * write, and a decision is never made on a stale entry); readers retry never:
 * an entry being written, or changed while read, reads as empty.
 * Async-signal-safe (publishing and reading happen in sample handlers).
 *
 * Expiry:
 *   - An entry counts as unexpired for thread T at the time of T's sample if
 *     it was published at or after T's previous sample (any kind): "published
 *     between its current sample and its previous sample" (paper, 3.2).
 *   - A store sample of T may replace an entry only if the slot is empty or
 *     the entry was published before T's previous *store* sample: the
 *     entry has survived longer than T's own store inter-sample interval
 *     (the paper: "deemed expired if it survived for more than two store
 *     events from the same thread").  This holds for T's own entries too.
 *   - A thread with no previous store sample uses its previous sample of
 *     any kind instead (0 for its very first sample: only empty slots).
 */
#ifndef CT_BOARD_H
#define CT_BOARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct board_entry {
	_Atomic uint64_t seq;       /* even: stable; odd: being written; 0: never written */
	_Atomic uint64_t addr;
	_Atomic uint64_t time;
	_Atomic uint32_t thread;
	_Atomic uint32_t len;
};

#define BOARD_RECENT 64         /* recently published slots remembered */

struct board {
	struct board_entry *e;
	uint32_t size;
	uint32_t line_shift;        /* log2 line size */
	/* Slot indices of the last BOARD_RECENT publications (a ring): where
	 * board_pick looks for unexpired entries without scanning the board. */
	_Atomic uint64_t recent_n;
	_Atomic uint32_t recent[BOARD_RECENT];
};

struct board_view {             /* a consistent copy of one entry */
	uint64_t addr, time;
	uint32_t thread;
	uint8_t len;
};

size_t board_bytes(uint32_t size);
/* mem: board_bytes(size) zeroed bytes.  line_size: a power of two. */
void board_init(struct board *b, void *mem, uint32_t size, uint32_t line_size);

static inline uint64_t board_line(const struct board *b, uint64_t addr)
{
	return addr >> b->line_shift << b->line_shift;
}

/* Read the entry addr's line maps to.  true with *v when the slot holds a
 * stable entry (of any line: compare board_line(v->addr) yourself). */
bool board_get(const struct board *b, uint64_t addr, struct board_view *v);
/* Read entry i (0..size-1). */
bool board_get_slot(const struct board *b, uint32_t i, struct board_view *v);

/* Publish <addr, len, thread, now> if the slot is empty or its entry was
 * published before `older_than` (the publisher's previous store sample).
 * true if published. */
bool board_publish(struct board *b, uint64_t addr, uint8_t len, uint32_t thread,
                   uint64_t now, uint64_t older_than);

/* Pick an entry to watch for thread `self`: published by another thread at
 * or after `since` and not after `now`, among the entries of the last
 * `probes` (<= BOARD_RECENT) publications; a random one of the candidates
 * (rnd: a random number).  true with *v if one was found. */
bool board_pick(const struct board *b, uint32_t self, uint64_t since, uint64_t now,
                uint64_t rnd, unsigned probes, struct board_view *v);

/* The watchpoints' random numbers: one xorshift64 step of *state (nonzero). */
static inline uint64_t board_random(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* The words of a picked line to watch: up to `want` distinct word indices
 * (0..words-1) drawn with board_random(rnd) into chosen[], giving up after
 * 64 draws.  Returns how many were chosen. */
unsigned board_choose_words(uint64_t *rnd, uint32_t words, unsigned want, uint32_t *chosen);

#endif
