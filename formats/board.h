/* The bulletin board of ComDetective's Algorithm 1: a global array of
 * `size` entries indexed by the line number (address / line_size) mod size,
 * or by a mix of it (BOARD_HASH_MURMUR).  An entry holds the address,
 * length, instruction and cpu of a sampled store (or atomic), the
 * publishing thread's index, its store count and the time of publishing.
 *
 * One implementation serves every board there is: the recorder's
 * (record/runtime), and the analyzer's comdetective and emulate models,
 * through the one step of Algorithm 1 in comdetective.h, which decides
 * what is published and what is watched.  No allocation (the caller gives
 * the memory), no locks, no stdio.
 *
 * Lock-free: every entry has a sequence number, odd while a publisher writes
 * it.  A publisher claims an entry by CAS on the sequence number it read
 * when it decided the entry was replaceable (so two publishers never both
 * write, and a decision is never made on a stale entry); readers retry never:
 * an entry being written, or changed while read, reads as empty.
 * Async-signal-safe (publishing and reading happen in sample handlers).
 *
 * Replacing an entry is two steps: board_lookup reads it (and its sequence
 * number), the caller decides on that consistent copy (the expiry rules of
 * comdetective.h), board_replace claims it by CAS on that sequence number.
 * board_publish is both for the recorder's rule. */
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
	_Atomic uint64_t ip;
	_Atomic uint64_t count;
	_Atomic uint32_t thread;
	_Atomic uint32_t len;
	_Atomic uint32_t cpu;
};

enum board_hash {
	BOARD_HASH_MOD = 0,         /* line number mod size */
	BOARD_HASH_MURMUR = 1,      /* fmix64(line number) mod size */
};

#define BOARD_RECENT 64         /* recently published slots remembered */

struct board {
	struct board_entry *e;
	uint32_t size;
	uint32_t line_shift;        /* log2 line size */
	enum board_hash hash;       /* BOARD_HASH_MOD unless set after board_init */
	/* Slot indices of the last BOARD_RECENT publications (a ring): where
	 * board_pick looks for unexpired entries without scanning the board. */
	_Atomic uint64_t recent_n;
	_Atomic uint32_t recent[BOARD_RECENT];
	/* The last BOARD_RECENT store samples offered to other threads' line
	 * watches (board_log), whether the board took them or not (a ring). */
	_Atomic uint64_t log_n;
	struct board_entry log[BOARD_RECENT];
};

struct board_view {             /* a consistent copy of one entry */
	uint64_t addr, time;
	uint64_t ip;                /* the publishing sample's instruction */
	uint64_t count;             /* the publisher's store samples when it published */
	uint32_t thread;
	uint32_t cpu;
	uint8_t len;
};

/* MurmurHash3's 64-bit finalizer: every input bit moves every output bit
 * (the board's BOARD_HASH_MURMUR, the analyzer's hash tables). */
static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

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

/* Where board_lookup found an entry, for board_replace. */
struct board_slot {
	uint32_t i;                 /* slot index */
	uint64_t seq;               /* 0: empty; odd: being written or changed while
	                               read (it cannot be replaced now) */
};

static inline uint32_t board_slot_of(const struct board *b, uint64_t addr)
{
	uint64_t ln = addr >> b->line_shift;
	return (uint32_t)((b->hash == BOARD_HASH_MURMUR ? fmix64(ln) : ln) % b->size);
}

/* The rest of a consistent read of entry e, whose sequence number s1 the
 * caller has just read (acquire): s1 (even, nonzero) with *v, or 0 if
 * empty, being written or changed under us. */
static inline uint64_t board_read_from(const struct board_entry *e, uint64_t s1,
                                       struct board_view *v)
{
	if (s1 == 0 || (s1 & 1))
		return 0;
	v->addr = atomic_load_explicit(&e->addr, memory_order_relaxed);
	v->time = atomic_load_explicit(&e->time, memory_order_relaxed);
	v->ip = atomic_load_explicit(&e->ip, memory_order_relaxed);
	v->count = atomic_load_explicit(&e->count, memory_order_relaxed);
	v->thread = atomic_load_explicit(&e->thread, memory_order_relaxed);
	v->cpu = atomic_load_explicit(&e->cpu, memory_order_relaxed);
	v->len = (uint8_t)atomic_load_explicit(&e->len, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	uint64_t s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
	return s1 == s2 ? s1 : 0;
}

/* Consistent read of entry e: board_read_from its sequence number now. */
static inline uint64_t board_read_entry(const struct board_entry *e, struct board_view *v)
{
	return board_read_from(e, atomic_load_explicit(&e->seq, memory_order_acquire), v);
}

/* Read the entry addr's slot to decide whether to replace it: true with *v
 * when it holds a stable entry; *slot for board_replace either way.
 * (Always inlined: the analyzer's replay looks up every sample.) */
static inline __attribute__((always_inline)) bool
board_lookup(const struct board *b, uint64_t addr, struct board_view *v, struct board_slot *slot)
{
	slot->i = board_slot_of(b, addr);
	const struct board_entry *e = &b->e[slot->i];
	uint64_t s = atomic_load_explicit(&e->seq, memory_order_acquire);
	slot->seq = s == 0 ? 0 : 1;
	if (board_read_from(e, s, v) == 0)
		return false;               /* empty, or being written, or changed under us */
	slot->seq = s;
	return true;
}

/* Does addr's slot hold addr's line, as a plain read of its address says?
 * (false: it does not, or not yet where another thread writes it.) */
static inline bool board_has_line(const struct board *b, uint64_t addr)
{
	const struct board_entry *e = &b->e[board_slot_of(b, addr)];
	return (atomic_load_explicit(&e->addr, memory_order_relaxed) ^ addr) >> b->line_shift == 0;
}

/* Write *v into e if its sequence number is still seq (even): claimed by
 * CAS (odd while written), then stable again at seq + 2. */
static inline bool board_entry_write(struct board_entry *e, uint64_t seq,
                                     const struct board_view *v)
{
	if (seq & 1)
		return false;
	if (!atomic_compare_exchange_strong_explicit(&e->seq, &seq, seq + 1,
	                                             memory_order_acquire,
	                                             memory_order_relaxed))
		return false;
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->addr, v->addr, memory_order_relaxed);
	atomic_store_explicit(&e->time, v->time, memory_order_relaxed);
	atomic_store_explicit(&e->ip, v->ip, memory_order_relaxed);
	atomic_store_explicit(&e->count, v->count, memory_order_relaxed);
	atomic_store_explicit(&e->thread, v->thread, memory_order_relaxed);
	atomic_store_explicit(&e->cpu, v->cpu, memory_order_relaxed);
	atomic_store_explicit(&e->len, v->len, memory_order_relaxed);
	atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
	return true;
}

/* Write *v over the entry board_lookup read (it must hold v->addr's line's
 * slot); false when the slot could not be read or has changed since.  true
 * if published.  (Inline: the analyzer's replay publishes every few
 * samples.) */
static inline bool board_replace(struct board *b, const struct board_slot *slot,
                                 const struct board_view *v)
{
	if (!board_entry_write(&b->e[slot->i], slot->seq, v))
		return false;
	uint64_t k = atomic_fetch_add_explicit(&b->recent_n, 1, memory_order_relaxed);
	atomic_store_explicit(&b->recent[k % BOARD_RECENT], slot->i, memory_order_release);
	return true;
}

/* Publish <addr, len, thread, now> if the slot is empty or its entry was
 * published before `older_than` (the recorder's rule: the publisher's
 * previous store sample).  true if published. */
bool board_publish(struct board *b, uint64_t addr, uint8_t len, uint32_t thread,
                   uint64_t now, uint64_t older_than);

/* Pick an entry to watch for thread `self`: published by another thread at
 * or after `since` and not after `now`, among the entries of the last
 * `probes` (<= BOARD_RECENT) publications; a random one of the candidates
 * (rnd: a random number).  true with *v if one was found. */
bool board_pick(const struct board *b, uint32_t self, uint64_t since, uint64_t now,
                uint64_t rnd, unsigned probes, struct board_view *v);

/* Offer a store sample to line watches: into the log (an entry being
 * written by another thread is left alone: this one is then not logged). */
void board_log(struct board *b, const struct board_view *v);
/* How many store samples were ever logged (board_log calls): a thread's
 * arms are behind when this differs from its own count (*seen below). */
static inline uint64_t board_logged(const struct board *b)
{
	return atomic_load_explicit(&b->log_n, memory_order_relaxed);
}
/* The store samples of other threads than `self` logged since *seen (a
 * count of board_log calls; at most the last BOARD_RECENT), taken at or
 * before `now`, newest first: up to max of them into out[]; *seen becomes
 * the count now.  Returns how many. */
unsigned board_pick_logged(const struct board *b, uint32_t self, uint64_t *seen, uint64_t now,
                           struct board_view *out, unsigned max);

/* The watchpoints' random numbers: one xorshift64 step of *state (nonzero). */
static inline uint64_t board_random(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* The owner estimator's sampler (record/inst/inst_owner.c, and the emulate
 * model's): one access in each block of `period` consecutive accesses (of
 * one thread and kind), at a place drawn uniformly with the random number r
 * afresh for every block.  Every access is sampled with probability exactly
 * 1/period whatever the program's loops, and k consecutive blocks hold
 * exactly k samples, where independent draws hold k +- sqrt(k): for a sum
 * of nonnegative terms (the transfers a sampled access stands for) the
 * variance is at most that of independent sampling with the same
 * probability, which the reported intervals assume (commanalyze(1)).
 * *block_rest: the accesses of the current block after its sample (0 before
 * the first).  Returns the accesses up to and including the next sample:
 * 1 .. 2 period - 1. */
static inline uint64_t sample_gap_stratified(uint64_t r, uint64_t period, uint64_t *block_rest)
{
	uint64_t pick = r % period;
	uint64_t gap = *block_rest + pick + 1;
	*block_rest = period - 1 - pick;
	return gap;
}

/* The words of a picked line to watch: up to `want` distinct word indices
 * (0..words-1) drawn with board_random(rnd) into chosen[], giving up after
 * 64 draws.  Returns how many were chosen. */
unsigned board_choose_words(uint64_t *rnd, uint32_t words, unsigned want, uint32_t *chosen);

#endif
