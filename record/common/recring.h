/* Per-thread record ring of the preloaded runtime.
 *
 * Producers: one program thread in normal context (allocation hooks) AND its
 * signal handlers, which may interrupt a push at any point (the reservation
 * is a CAS, so any number of producers is safe).  Consumer: the runtime's
 * writer thread.  No locks, no allocation: async-signal-safe.
 *
 * Storage: `cap` units of 64 bytes plus one ready byte per unit.  A record
 * is stored as the prefix of struct ct_record that its type uses
 * (recring_rec_bytes: 20 to 152 bytes): one unit for samples, allocations,
 * frees, hits, thread start/end, lost and skipped counts; two for watchpoint
 * arms and markers; three for call sites.  A record never wraps around the
 * end: the units left at the end are filled with a pad.
 *
 *   push: reserve units by CAS on head (fails when they are not free), fill
 *         them, then set the first unit's ready byte to the unit count
 *         (release).
 *   pop:  the consumer takes records in order from tail while ready
 *         (acquire), clears the ready byte and advances tail (release).
 *
 * A push interrupted between reserve and commit by a handler that pushes too
 * leaves an earlier record not ready behind a ready one: the consumer stops
 * at the first record that is not ready, so the stream keeps reservation
 * order.  A full ring drops the record and counts it (lost); the consumer
 * reports the count (recring_take_lost).
 *
 * Every reservation, made or refused, is also counted in *counts
 * (produced, and buffer_full when refused): in the runtime a shared mapping
 * of the thread's spool file, so that the counts outlive the process. */
#ifndef CT_RECRING_H
#define CT_RECRING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commtrace.h"

#define RECRING_UNIT 64
#define RECRING_PAD 0x80            /* ready byte of a pad: 0x80 | units */

struct recring {
	/* producer side (the thread and its handlers) */
	_Alignas(64) _Atomic uint64_t head;  /* next unit to reserve */
	_Atomic uint64_t lost;      /* records dropped since last reported */
	_Atomic uint64_t lost_total;
	uint64_t tail_cache;        /* producer's last view of tail (only ever too old) */
	uint32_t cap;               /* units, a power of two >= 4 */
	uint8_t *data;              /* cap * RECRING_UNIT bytes */
	_Atomic uint8_t *ready;     /* cap bytes: units of the committed record starting here */
	uint8_t *units;             /* cap bytes: units reserved for the record starting here */
	struct ct_counts *counts;   /* produced, buffer_full (&own_counts until redirected) */
	struct ct_counts own_counts;
	_Atomic uint32_t held;      /* unit + 1 of a record held back (recring_hold), 0: none */
	/* consumer side (the writer), on its own cache line */
	_Alignas(64) _Atomic uint64_t tail;  /* next unit to consume */
};

/* +1 on a counter that this thread and its signal handlers update, and
 * other threads only read: one add instruction cannot be cut by a signal
 * (no lock prefix needed, the line is this thread's). */
static inline void recring_count(uint64_t *c)
{
#if defined(__x86_64__)
	__asm__ volatile("addq $1, %0" : "+m"(*c));
#else
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
#endif
}

/* Bytes of struct ct_record a record of this type uses (its prefix). */
size_t recring_rec_bytes(unsigned type);
/* Units a record of this type takes. */
static inline uint32_t recring_rec_units(unsigned type)
{
	return (uint32_t)((recring_rec_bytes(type) + RECRING_UNIT - 1) / RECRING_UNIT);
}

/* Bytes of memory needed for cap units. */
size_t recring_bytes(uint32_t cap);
/* mem: recring_bytes(cap) zeroed bytes, 64-byte aligned; cap a power of
 * two >= 4. */
void recring_init(struct recring *r, void *mem, uint32_t cap);

/* Reserve room for a record of `type`; NULL when full (the loss is
 * counted).  Only the first recring_rec_bytes(type) bytes of the returned
 * record are storage: set type and the fields of that type only (the type
 * may change before commit to one that fits in the same units).
 * *fill_level (if not NULL) receives the units in use including these
 * (relative to a possibly stale view of the consumer: never less than the
 * truth), or, when full, r->cap if this is the first loss since the
 * consumer last took the loss count (time to wake it), else 0. */
struct ct_record *recring_reserve_type(struct recring *r, unsigned type, uint32_t *fill_level);
/* recring_reserve_type for k units, inline (full recording reserves one
 * unit per access). */
static inline struct ct_record *recring_reserve_units(struct recring *r, uint32_t k, uint32_t *fill_level)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	recring_count(&r->counts->produced);
	for (;;) {
		uint32_t pos = (uint32_t)(head & (r->cap - 1));
		/* (one unit never needs a pad: the compiler drops it for k = 1) */
		uint32_t pad = k > 1 && pos + k > r->cap ? r->cap - pos : 0;
		uint64_t need = pad + k;
		/* Read the consumer's line only when the cached view says full. */
		uint64_t tail = __atomic_load_n(&r->tail_cache, __ATOMIC_RELAXED);
		if (head + need - tail > r->cap) {
			tail = atomic_load_explicit(&r->tail, memory_order_acquire);
			__atomic_store_n(&r->tail_cache, tail, __ATOMIC_RELAXED);
		}
		if (__builtin_expect(head + need - tail > r->cap, 0)) {
			uint64_t before = atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&r->lost_total, 1, memory_order_relaxed);
			recring_count(&r->counts->buffer_full);
			if (fill_level)
				*fill_level = before == 0 ? r->cap : 0;
			return NULL;
		}
		/* A signal handler of this thread may push between the load and
		 * the CAS: the CAS then fails and we retry with the new head. */
		if (atomic_compare_exchange_weak_explicit(&r->head, &head, head + need,
		                                          memory_order_acquire,
		                                          memory_order_relaxed)) {
			if (pad)
				atomic_store_explicit(&r->ready[pos], (uint8_t)(RECRING_PAD | pad),
				                      memory_order_release);
			if (fill_level)
				*fill_level = (uint32_t)(head + need - tail);
			uint32_t at = (uint32_t)((head + pad) & (r->cap - 1));
			r->units[at] = (uint8_t)k;
			return (struct ct_record *)(r->data + (size_t)at * RECRING_UNIT);
		}
	}
}

/* Reserve one unit: room for a record of any type but WP_ARM, CALLSITE
 * and MARKER (the untyped form of recring_reserve_type). */
struct ct_record *recring_reserve(struct recring *r, uint32_t *fill_level);
/* Would a record of `type` fit now (reservation could still fail if a
 * signal handler of the producer pushes in between)? */
bool recring_has_room(const struct recring *r, unsigned type);
/* Producer side: reserve one unit (SAMPLE, FUNC_*...) if the producer's
 * cached view of tail says it fits; NULL, with nothing counted, when that
 * view says full (recring_has_room and recring_reserve_units, which read
 * the consumer's line, decide then).  Full recording reserves one unit per
 * access: reading the consumer's line every time made it bounce between
 * the CPUs. */
static inline struct ct_record *recring_reserve1_cached(struct recring *r, uint32_t *fill_level)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = __atomic_load_n(&r->tail_cache, __ATOMIC_RELAXED);
	/* (a signal handler of this thread may push in between: see
	 * recring_reserve_units) */
	do {
		if (head + 1 - tail > r->cap)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(&r->head, &head, head + 1, memory_order_acquire,
	                                                memory_order_relaxed));
	recring_count(&r->counts->produced);
	uint32_t at = (uint32_t)(head & (r->cap - 1));
	r->units[at] = 1;
	*fill_level = (uint32_t)(head + 1 - tail);
	return (struct ct_record *)(r->data + (size_t)at * RECRING_UNIT);
}
/* The unit a reserved record starts at. */
static inline uint32_t recring_unit_of(const struct recring *r, const struct ct_record *rec)
{
	/* (unsigned: a shift; the signed difference took a rounding fix-up) */
	return (uint32_t)(((uintptr_t)rec - (uintptr_t)r->data) / RECRING_UNIT);
}
/* Publish a reserved record. */
static inline void recring_commit(struct recring *r, struct ct_record *rec)
{
	uint32_t at = recring_unit_of(r, rec);
	atomic_store_explicit(&r->ready[at], r->units[at], memory_order_release);
}
/* Hold back a filled record instead of committing it: its producer may
 * still change it (recring_unhold) until either the producer commits it or
 * the consumer, stopped at it, takes it (recring_take_held).  At most one
 * record is held at a time. */
static inline void recring_hold(struct recring *r, struct ct_record *rec)
{
	atomic_store_explicit(&r->held, recring_unit_of(r, rec) + 1, memory_order_release);
}
/* The producer takes its held record back: true if the consumer did not
 * take it (the producer then changes it and commits it), false if the
 * consumer did (it is committed and may be consumed: hands off). */
static inline bool recring_unhold(struct recring *r, struct ct_record *rec)
{
	uint32_t want = recring_unit_of(r, rec) + 1;
	return atomic_compare_exchange_strong_explicit(&r->held, &want, 0, memory_order_acquire,
	                                               memory_order_relaxed);
}
/* The record is the producer's last reservation (nothing reserved after
 * it).  Producer side only. */
static inline bool recring_is_last(const struct recring *r, const struct ct_record *rec)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	return ((head - 1) & (r->cap - 1)) == recring_unit_of(r, rec);
}
/* Consumer: the record at unit cur is not committed; if its producer holds
 * it back, commit it (true: recring_peek can go on). */
bool recring_take_held(struct recring *r, uint64_t cur);
/* reserve + copy + commit; 0, or -1 when full. */
int recring_push(struct recring *r, const struct ct_record *rec, uint32_t *fill_level);

/* Consumer: copy the next ready record into *out (the bytes its type does
 * not use are zero) and release its units.  1 with a record, 0 when the
 * next record is not there or not yet committed. */
int recring_pop(struct recring *r, struct ct_record *out);
/* Batch consumer: read records in place, release their units later.
 *   uint64_t cur = recring_cursor(r);
 *   while ((rec = recring_peek(r, &cur, &k)) != NULL) { use rec (k units) }
 *   recring_release(r, cur);
 * recring_peek returns the next committed record at *cur (skipping pads),
 * or NULL when the next one is not committed (a record its producer holds
 * back is committed here, recring_take_held) (or the ring is empty: the
 * consumer does not read head, only the ready bytes, or a whole ring has
 * been read since the last release), and advances *cur past it.  The record stays valid until recring_release(r, cur') with
 * cur' beyond it; release clears the ready bytes of [tail, cur) and
 * publishes the new tail (release every few hundred units: the producer
 * sees the room only then).  Only the first recring_rec_bytes(type) bytes
 * of a record are its own, capped at its units. */
static inline uint64_t recring_cursor(const struct recring *r)
{
	return atomic_load_explicit(&r->tail, memory_order_relaxed);
}
static inline const struct ct_record *recring_peek(struct recring *r, uint64_t *cur, uint32_t *units)
{
	/* a whole ring read since the last release: the units ahead are the
	 * ones read first (their ready bytes are cleared only at release) */
	uint64_t lap_end = atomic_load_explicit(&r->tail, memory_order_relaxed) + r->cap;
	for (;;) {
		if (*cur >= lap_end)
			return NULL;
		uint32_t pos = (uint32_t)(*cur & (r->cap - 1));
		uint8_t k = atomic_load_explicit(&r->ready[pos], memory_order_acquire);
		if (!k) {
			if (!recring_take_held(r, *cur))
				return NULL;
			continue;
		}
		if (k & RECRING_PAD) {
			*cur += k & ~RECRING_PAD;
			continue;
		}
		*cur += k;
		*units = k;
		return (const struct ct_record *)(r->data + (size_t)pos * RECRING_UNIT);
	}
}
void recring_release(struct recring *r, uint64_t cur);
/* Units in use (reserved, committed or not). */
uint32_t recring_used(const struct recring *r);

/* Fetch and clear the count of records dropped since the last call (to be
 * reported in a LOST record). */
uint64_t recring_take_lost(struct recring *r);
/* Give back a taken count that could not be reported. */
void recring_return_lost(struct recring *r, uint64_t n);

#endif
