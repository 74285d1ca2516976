/* Per-thread record ring: see recring.h. */
#include "recring.h"

#include <string.h>

#define END_OF(type, field) (offsetof(struct ct_record, u) + offsetof(type, field) + \
                             sizeof(((type *)0)->field))

size_t recring_rec_bytes(unsigned type)
{
	switch (type) {
	case CT_REC_SAMPLE:       return END_OF(struct ct_sample, flags);
	case CT_REC_WP_ARM:       return END_OF(struct ct_wp_arm, wp_addr);
	case CT_REC_WP_HIT:       return END_OF(struct ct_wp_hit, kind);
	case CT_REC_ALLOC:        return END_OF(struct ct_alloc, kind);
	case CT_REC_FREE:         return END_OF(struct ct_free, kind);
	case CT_REC_CALLSITE:     return END_OF(struct ct_callsite, pc);
	case CT_REC_THREAD_START: return END_OF(struct ct_thread_start, tls_hi);
	case CT_REC_THREAD_END:   return END_OF(struct ct_thread_end, status);
	case CT_REC_MARKER:       return END_OF(struct ct_marker, name);
	case CT_REC_LOST:         return END_OF(struct ct_lost, count);
	case CT_REC_FUNC_ENTER:
	case CT_REC_FUNC_EXIT:    return END_OF(struct ct_func, addr);
	case CT_REC_SKIPPED:      return END_OF(struct ct_skipped, count);
	case CT_REC_OWNER_XFER:   return END_OF(struct ct_owner_xfer, flags);
	case CT_REC_OWNER_WIN:    return END_OF(struct ct_owner_win, status);
	default:                  return sizeof(struct ct_record);
	}
}

size_t recring_bytes(uint32_t cap)
{
	return (size_t)cap * RECRING_UNIT + 2 * (size_t)cap;
}

void recring_init(struct recring *r, void *mem, uint32_t cap)
{
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	atomic_init(&r->lost, 0);
	atomic_init(&r->lost_total, 0);
	r->tail_cache = 0;
	atomic_init(&r->held, 0);
	r->cap = cap;
	r->data = mem;
	r->ready = (_Atomic uint8_t *)((uint8_t *)mem + (size_t)cap * RECRING_UNIT);
	r->units = (uint8_t *)mem + (size_t)cap * RECRING_UNIT + cap;
	memset(&r->own_counts, 0, sizeof r->own_counts);
	r->counts = &r->own_counts;
}

bool recring_take_held(struct recring *r, uint64_t cur)
{
	uint32_t at = (uint32_t)(cur & (r->cap - 1)), want = at + 1;
	if (atomic_load_explicit(&r->held, memory_order_relaxed) != want ||
	    !atomic_compare_exchange_strong_explicit(&r->held, &want, 0, memory_order_acquire,
	                                             memory_order_relaxed))
		return false;
	atomic_store_explicit(&r->ready[at], r->units[at], memory_order_relaxed);
	return true;
}

struct ct_record *recring_reserve_type(struct recring *r, unsigned type, uint32_t *fill_level)
{
	return recring_reserve_units(r, recring_rec_units(type), fill_level);
}

struct ct_record *recring_reserve(struct recring *r, uint32_t *fill_level)
{
	return recring_reserve_units(r, 1, fill_level);
}

bool recring_has_room(const struct recring *r, unsigned type)
{
	uint32_t k = recring_rec_units(type);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint32_t pos = (uint32_t)(head & (r->cap - 1));
	uint32_t pad = pos + k > r->cap ? r->cap - pos : 0;
	return head + pad + k - tail <= r->cap;
}

int recring_push(struct recring *r, const struct ct_record *rec, uint32_t *fill_level)
{
	struct ct_record *slot = recring_reserve_type(r, rec->type, fill_level);
	if (!slot)
		return -1;
	memcpy(slot, rec, recring_rec_bytes(rec->type));
	recring_commit(r, slot);
	return 0;
}

int recring_pop(struct recring *r, struct ct_record *out)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	for (;;) {
		uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
		if (tail == head)
			return 0;
		uint32_t pos = (uint32_t)(tail & (r->cap - 1));
		uint8_t k = atomic_load_explicit(&r->ready[pos], memory_order_acquire);
		if (!k) {
			if (!recring_take_held(r, tail))
				return 0;
			k = atomic_load_explicit(&r->ready[pos], memory_order_relaxed);
		}
		atomic_store_explicit(&r->ready[pos], 0, memory_order_relaxed);
		if (k & RECRING_PAD) {
			tail += k & ~RECRING_PAD;
			atomic_store_explicit(&r->tail, tail, memory_order_release);
			continue;
		}
		const struct ct_record *src = (const struct ct_record *)(r->data + (size_t)pos * RECRING_UNIT);
		size_t n = recring_rec_bytes(src->type);
		if (n > (size_t)k * RECRING_UNIT)
			n = (size_t)k * RECRING_UNIT;   /* never read past the record's units */
		memset(out, 0, sizeof *out);
		memcpy(out, src, n);
		/* release: the producer that sees the new tail may reuse the
		 * units, and our reads of them (and the flag clear) come before */
		atomic_store_explicit(&r->tail, tail + k, memory_order_release);
		return 1;
	}
}

void recring_release(struct recring *r, uint64_t cur)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (cur == tail)
		return;
	/* Clear the ready bytes of the consumed units (only the first unit of
	 * each record and of each pad has one set; the producer reuses none of
	 * them before it sees the new tail). */
	uint32_t mask = r->cap - 1, from = (uint32_t)(tail & mask);
	uint64_t n = cur - tail;
	uint8_t *ready = (uint8_t *)r->ready;
	if (from + n <= r->cap) {
		memset(ready + from, 0, n);
	} else {
		memset(ready + from, 0, r->cap - from);
		memset(ready, 0, n - (r->cap - from));
	}
	/* release: our reads of the units and the clears come before */
	atomic_store_explicit(&r->tail, cur, memory_order_release);
}

uint32_t recring_used(const struct recring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	return (uint32_t)(head - tail);
}

uint64_t recring_take_lost(struct recring *r)
{
	return atomic_exchange_explicit(&r->lost, 0, memory_order_relaxed);
}

void recring_return_lost(struct recring *r, uint64_t n)
{
	if (n)
		atomic_fetch_add_explicit(&r->lost, n, memory_order_relaxed);
}
