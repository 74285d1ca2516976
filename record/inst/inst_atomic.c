/* __tsan_atomic*: the instrumented program's atomics, recorded and then
 * performed here (the compiler replaced the instruction by the call).
 *
 * The memory order is the tsan ABI's int: 0 relaxed, 1 consume, 2 acquire,
 * 3 release, 4 acq_rel, 5 seq_cst (gcc may add flag bits above bit 14:
 * __sync builtins, HLE hints; they are masked off).  Each operation is done
 * with the __atomic builtin at a constant order chosen by a switch, never
 * weaker than the one asked for (an order that is invalid for the
 * operation, like a release load, is strengthened; consume is acquire).
 * Compare-exchange uses one order pair at least as strong as both the
 * success and the failure order.  128-bit operations use lock cmpxchg16b
 * (x86-64), so no libatomic is needed.
 *
 * Recorded as: loads CT_ACCESS_LOAD (load countdown), stores
 * CT_ACCESS_STORE, exchange / fetch_op / compare-exchange (also a failed
 * one: the instruction takes the line exclusive) CT_ACCESS_ATOMIC (store
 * countdown).  Fences are counted, not recorded (they access no memory).
 * Time: a store is stamped just before it is made, an operation that reads
 * just after it (a reader is never stamped before the store it saw; a
 * writer never after a reader that saw it, unless preempted in between). */
#include "inst.h"

/* A store: recorded before it is made (like a plain access). */
static inline void acc(const volatile void *a, unsigned len, unsigned kind, int idx, uintptr_t ip,
                       int stat)
{
	inst_t.stat[stat]++;
	INST_OWN(a, len, kind, ip);
	INST_WATCH(a, len, kind, ip);
	if (__builtin_expect(--inst_t.left[idx] <= 0, 0))
		inst_hit((uintptr_t)a, len, kind, idx, ip);
}

/* An operation that reads: OP (an expression) is evaluated between
 * inst_pre and inst_post when the countdown expires. */
#define READING(T, a, len, kind, idx, which, OP)                                              \
	do {                                                                                   \
		inst_t.stat[which]++;                                                          \
		INST_OWN(a, len, kind, RET1);                                                  \
		INST_WATCH(a, len, kind, RET1);                                                \
		if (__builtin_expect(--inst_t.left[idx] > 0, 1))                               \
			return OP;                                                             \
		struct inst_pend p_;                                                           \
		bool post_ = inst_pre(&p_, (uintptr_t)(a), len, kind, idx, RET1);              \
		T v_ = OP;                                                                     \
		if (post_)                                                                     \
			inst_post(&p_);                                                        \
		return v_;                                                                     \
	} while (0)

#define MO(mo) ((mo) & 0x7fff)

/* order switches: E(order) is a statement that returns */
#define SW_LOAD(mo, E)                                                                       \
	switch (MO(mo)) {                                                                      \
	case 0: E(__ATOMIC_RELAXED);                                                           \
	case 1: case 2: case 3: case 4: E(__ATOMIC_ACQUIRE);                                   \
	default: E(__ATOMIC_SEQ_CST);                                                          \
	}
#define SW_STORE(mo, E)                                                                      \
	switch (MO(mo)) {                                                                      \
	case 0: E(__ATOMIC_RELAXED);                                                           \
	case 1: case 2: case 3: case 4: E(__ATOMIC_RELEASE);                                   \
	default: E(__ATOMIC_SEQ_CST);                                                          \
	}
#define SW_RMW(mo, E)                                                                        \
	switch (MO(mo)) {                                                                      \
	case 0: E(__ATOMIC_RELAXED);                                                           \
	case 1: case 2: E(__ATOMIC_ACQUIRE);                                                   \
	case 3: E(__ATOMIC_RELEASE);                                                           \
	case 4: E(__ATOMIC_ACQ_REL);                                                           \
	default: E(__ATOMIC_SEQ_CST);                                                          \
	}

/* One order for a compare-exchange: 0 relaxed, 2 acquire, 3 release,
 * 4 acq_rel, 5 seq_cst. */
static inline int cas_order(int mo, int fmo)
{
	mo = MO(mo);
	fmo = MO(fmo);
	if (mo >= 5 || fmo >= 5)
		return 5;
	bool acq = mo == 1 || mo == 2 || mo == 4 || (fmo >= 1 && fmo <= 4);
	bool rel = mo == 3 || mo == 4;
	return acq && rel ? 4 : acq ? 2 : rel ? 3 : 0;
}

#define SW_CAS(o, E)                                                                         \
	switch (o) {                                                                           \
	case 0: E(__ATOMIC_RELAXED, __ATOMIC_RELAXED);                                         \
	case 2: E(__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE);                                         \
	case 3: E(__ATOMIC_RELEASE, __ATOMIC_RELAXED);                                         \
	case 4: E(__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);                                         \
	default: E(__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                                        \
	}

#define RET1 (INST_RET() - 1)

#define E_exchange(o) return __atomic_exchange_n(a, v, o)
#define E_fetch_add(o) return __atomic_fetch_add(a, v, o)
#define E_fetch_sub(o) return __atomic_fetch_sub(a, v, o)
#define E_fetch_and(o) return __atomic_fetch_and(a, v, o)
#define E_fetch_or(o) return __atomic_fetch_or(a, v, o)
#define E_fetch_xor(o) return __atomic_fetch_xor(a, v, o)
#define E_fetch_nand(o) return __atomic_fetch_nand(a, v, o)

#define E_load(o) return __atomic_load_n(a, o)
#define E_store(o) do { __atomic_store_n(a, v, o); return; } while (0)
#define E_cas_strong(o, f) return __atomic_compare_exchange_n(a, c, v, false, o, f)
#define E_cas_weak(o, f) return __atomic_compare_exchange_n(a, c, v, true, o, f)
#define E_cas_val(o, f) do { __atomic_compare_exchange_n(a, &c, v, false, o, f); return c; } while (0)

/* The operations themselves, one static function each. */
#define DO_FETCH(bits, T, op)                                                                \
	static inline T do_##op##bits(volatile T *a, T v, int mo)                              \
	{                                                                                      \
		SW_RMW(mo, E_##op)                                                             \
	}
#define FETCH(bits, T, op)                                                                   \
	RT_EXPORT T __tsan_atomic##bits##_##op(volatile T *a, T v, int mo)                     \
	{                                                                                      \
		READING(T, a, sizeof(T), CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_RMW,             \
		        do_##op##bits(a, v, mo));                                              \
	}

#define OPS(bits, T)                                                                         \
	static inline T do_load##bits(const volatile T *a, int mo)                             \
	{                                                                                      \
		SW_LOAD(mo, E_load)                                                            \
	}                                                                                      \
	static inline void do_store##bits(volatile T *a, T v, int mo)                          \
	{                                                                                      \
		SW_STORE(mo, E_store)                                                          \
	}                                                                                      \
	static inline int do_cas_strong##bits(volatile T *a, T *c, T v, int o)                 \
	{                                                                                      \
		SW_CAS(o, E_cas_strong)                                                        \
	}                                                                                      \
	static inline int do_cas_weak##bits(volatile T *a, T *c, T v, int o)                   \
	{                                                                                      \
		SW_CAS(o, E_cas_weak)                                                          \
	}                                                                                      \
	static inline T do_cas_val##bits(volatile T *a, T c, T v, int o)                       \
	{                                                                                      \
		SW_CAS(o, E_cas_val)                                                           \
	}                                                                                      \
	DO_FETCH(bits, T, exchange)                                                            \
	DO_FETCH(bits, T, fetch_add)                                                           \
	DO_FETCH(bits, T, fetch_sub)                                                           \
	DO_FETCH(bits, T, fetch_and)                                                           \
	DO_FETCH(bits, T, fetch_or)                                                            \
	DO_FETCH(bits, T, fetch_xor)                                                           \
	DO_FETCH(bits, T, fetch_nand)                                                          \
	RT_EXPORT T __tsan_atomic##bits##_load(const volatile T *a, int mo)                    \
	{                                                                                      \
		READING(T, a, sizeof(T), CT_ACCESS_LOAD, INST_LD, IS_ATOMIC_LOAD,              \
		        do_load##bits(a, mo));                                                 \
	}                                                                                      \
	RT_EXPORT void __tsan_atomic##bits##_store(volatile T *a, T v, int mo)                 \
	{                                                                                      \
		acc(a, sizeof(T), CT_ACCESS_STORE, INST_ST, RET1, IS_ATOMIC_STORE);            \
		do_store##bits(a, v, mo);                                                      \
	}                                                                                      \
	FETCH(bits, T, exchange)                                                               \
	FETCH(bits, T, fetch_add)                                                              \
	FETCH(bits, T, fetch_sub)                                                              \
	FETCH(bits, T, fetch_and)                                                              \
	FETCH(bits, T, fetch_or)                                                               \
	FETCH(bits, T, fetch_xor)                                                              \
	FETCH(bits, T, fetch_nand)                                                             \
	RT_EXPORT int __tsan_atomic##bits##_compare_exchange_strong(volatile T *a, T *c, T v,  \
	                                                            int mo, int fmo)           \
	{                                                                                      \
		READING(int, a, sizeof(T), CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_CAS,           \
		        do_cas_strong##bits(a, c, v, cas_order(mo, fmo)));                     \
	}                                                                                      \
	RT_EXPORT int __tsan_atomic##bits##_compare_exchange_weak(volatile T *a, T *c, T v,    \
	                                                          int mo, int fmo)             \
	{                                                                                      \
		READING(int, a, sizeof(T), CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_CAS,           \
		        do_cas_weak##bits(a, c, v, cas_order(mo, fmo)));                       \
	}                                                                                      \
	RT_EXPORT T __tsan_atomic##bits##_compare_exchange_val(volatile T *a, T c, T v,        \
	                                                       int mo, int fmo)                \
	{                                                                                      \
		READING(T, a, sizeof(T), CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_CAS,             \
		        do_cas_val##bits(a, c, v, cas_order(mo, fmo)));                        \
	}

OPS(8, uint8_t)
OPS(16, uint16_t)
OPS(32, uint32_t)
OPS(64, uint64_t)

/* ---- 128 bits ------------------------------------------------------------------------ */

typedef unsigned __int128 u128;

#if defined(__x86_64__)
/* lock cmpxchg16b: a full barrier, so every order is honoured. */
static inline bool cas16(volatile u128 *p, u128 *expected, u128 desired)
{
	uint64_t lo = (uint64_t)*expected, hi = (uint64_t)(*expected >> 64);
	bool ok;
	__asm__ __volatile__("lock cmpxchg16b %1"
	                     : "=@ccz"(ok), "+m"(*p), "+a"(lo), "+d"(hi)
	                     : "b"((uint64_t)desired), "c"((uint64_t)(desired >> 64))
	                     : "memory");
	*expected = ((u128)hi << 64) | lo;
	return ok;
}
#else
static inline bool cas16(volatile u128 *p, u128 *expected, u128 desired)
{
	return __atomic_compare_exchange_n(p, expected, desired, false, __ATOMIC_SEQ_CST,
	                                   __ATOMIC_SEQ_CST);
}
#endif

static inline u128 load16(volatile u128 *p)
{
	u128 v = 0;
	cas16(p, &v, 0);      /* fails (v = *p) or writes back the 0 it found */
	return v;
}

/* Apply f to *p atomically; returns the old value. */
#define RMW16(p, old, newexpr)                                                               \
	u128 old = load16(p);                                                                  \
	while (!cas16(p, &old, (newexpr)))                                                     \
		;                                                                              \
	return old;

static inline u128 store16(volatile u128 *a, u128 v)
{
	u128 old = load16(a);
	while (!cas16(a, &old, v))
		;
	return old;
}

RT_EXPORT u128 __tsan_atomic128_load(const volatile u128 *a, int mo)
{
	(void)mo;
	READING(u128, a, 16, CT_ACCESS_LOAD, INST_LD, IS_ATOMIC_LOAD, load16((volatile u128 *)a));
}

RT_EXPORT void __tsan_atomic128_store(volatile u128 *a, u128 v, int mo)
{
	(void)mo;
	acc(a, 16, CT_ACCESS_STORE, INST_ST, RET1, IS_ATOMIC_STORE);
	store16(a, v);
}

#define FETCH16(op, expr)                                                                    \
	static inline u128 do_##op##128(volatile u128 *a, u128 v)                              \
	{                                                                                      \
		RMW16(a, old, expr)                                                            \
	}                                                                                      \
	RT_EXPORT u128 __tsan_atomic128_##op(volatile u128 *a, u128 v, int mo)                 \
	{                                                                                      \
		(void)mo;                                                                      \
		READING(u128, a, 16, CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_RMW,                 \
		        do_##op##128(a, v));                                                   \
	}
FETCH16(exchange, v)
FETCH16(fetch_add, old + v)
FETCH16(fetch_sub, old - v)
FETCH16(fetch_and, old & v)
FETCH16(fetch_or, old | v)
FETCH16(fetch_xor, old ^ v)
FETCH16(fetch_nand, ~(old & v))

static inline u128 cas_val16(volatile u128 *a, u128 c, u128 v)
{
	cas16(a, &c, v);
	return c;
}

RT_EXPORT int __tsan_atomic128_compare_exchange_strong(volatile u128 *a, u128 *c, u128 v, int mo,
                                                       int fmo)
{
	(void)mo;
	(void)fmo;
	READING(int, a, 16, CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_CAS, cas16(a, c, v));
}

RT_EXPORT int __tsan_atomic128_compare_exchange_weak(volatile u128 *a, u128 *c, u128 v, int mo,
                                                     int fmo)
{
	(void)mo;
	(void)fmo;
	READING(int, a, 16, CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_CAS, cas16(a, c, v));
}

RT_EXPORT u128 __tsan_atomic128_compare_exchange_val(volatile u128 *a, u128 c, u128 v, int mo,
                                                     int fmo)
{
	(void)mo;
	(void)fmo;
	READING(u128, a, 16, CT_ACCESS_ATOMIC, INST_ST, IS_ATOMIC_CAS, cas_val16(a, c, v));
}

/* ---- fences -------------------------------------------------------------------------- */

RT_EXPORT void __tsan_atomic_thread_fence(int mo)
{
	inst_t.stat[IS_ATOMIC_FENCE]++;
	switch (MO(mo)) {
	case 0: break;
	case 1: case 2: __atomic_thread_fence(__ATOMIC_ACQUIRE); break;
	case 3: __atomic_thread_fence(__ATOMIC_RELEASE); break;
	case 4: __atomic_thread_fence(__ATOMIC_ACQ_REL); break;
	default: __atomic_thread_fence(__ATOMIC_SEQ_CST); break;
	}
}

RT_EXPORT void __tsan_atomic_signal_fence(int mo)
{
	inst_t.stat[IS_ATOMIC_FENCE]++;
	switch (MO(mo)) {
	case 0: break;
	case 1: case 2: __atomic_signal_fence(__ATOMIC_ACQUIRE); break;
	case 3: __atomic_signal_fence(__ATOMIC_RELEASE); break;
	case 4: __atomic_signal_fence(__ATOMIC_ACQ_REL); break;
	default: __atomic_signal_fence(__ATOMIC_SEQ_CST); break;
	}
}
