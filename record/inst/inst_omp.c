/* Synchronization through GCC's OpenMP runtime (libgomp), seen by the inst
 * sampler's full mode: like inst_sync.c for libc, these wrappers interpose
 * libgomp's entry points (the program links this runtime before libgomp)
 * and record the accesses each call implies, as SAMPLE records flagged
 * CT_SAMPLE_SYNC, then call libgomp's function:
 *   GOMP_barrier, GOMP_barrier_cancel, GOMP_loop_end, GOMP_loop_end_cancel,
 *   GOMP_sections_end, GOMP_sections_end_cancel (the barrier of a
 *   worksharing construct)
 *                    on the team's word: a read-modify-write (arrival)
 *                    before, a load (departure) after
 *   GOMP_parallel, GOMP_parallel_loop_*, GOMP_parallel_sections (wrapped
 *   by rt_marker.c, which tells region_sync)
 *                    the master's read-modify-write of the team's word
 *                    before (it publishes the region's data); every thread
 *                    of the team a load of it when it starts the region's
 *                    body and a read-modify-write when it ends it (arrival
 *                    at the region's closing barrier, which libgomp runs
 *                    inside, out of reach); the master's load after
 *   omp_set_lock, omp_set_nest_lock, omp_test_lock, omp_test_nest_lock
 *   (taken)          a read-modify-write of the lock, after
 *   omp_unset_lock, omp_unset_nest_lock   a store to the lock, before
 *   GOMP_critical_start, GOMP_atomic_start   a read-modify-write, after,
 *   GOMP_critical_end, GOMP_atomic_end       a store, before, of a word of
 *                    this runtime that stands for libgomp's lock of unnamed
 *                    critical sections (of GOMP_atomic: its one lock)
 *   GOMP_critical_name_start / _end   the same on the named section's
 *                    pointer (the program's variable libgomp locks)
 * The team's word is one word of this runtime for every team (libgomp's
 * team barrier is internal): threads of different nested teams seem to
 * share it.  Not wrapped: the pre-4.9 entry points (GOMP_parallel_start /
 * GOMP_parallel_end), tasks (GOMP_taskwait, GOMP_taskgroup_*), ordered
 * sections, GOMP_single_*, cancellation points, and LLVM's OpenMP runtime
 * (libomp's __kmpc_*).  Only in full mode, only on recorded threads. */
#include "inst.h"

#include <dlfcn.h>

#define RMW CT_ACCESS_ATOMIC
#define ST CT_ACCESS_STORE
#define LD CT_ACCESS_LOAD

/* The words that stand for libgomp's internal objects, each on its own line. */
static _Alignas(128) uint32_t omp_team;
static _Alignas(128) uint32_t omp_critical;
static _Alignas(128) uint32_t omp_atomic;

INST_REAL(void, GOMP_barrier, void)
INST_REAL(bool, GOMP_barrier_cancel, void)
INST_REAL(void, GOMP_loop_end, void)
INST_REAL(bool, GOMP_loop_end_cancel, void)
INST_REAL(void, GOMP_sections_end, void)
INST_REAL(bool, GOMP_sections_end_cancel, void)
INST_REAL(void, omp_set_lock, void *)
INST_REAL(void, omp_unset_lock, void *)
INST_REAL(int, omp_test_lock, void *)
INST_REAL(void, omp_set_nest_lock, void *)
INST_REAL(void, omp_unset_nest_lock, void *)
INST_REAL(int, omp_test_nest_lock, void *)
INST_REAL(void, GOMP_critical_start, void)
INST_REAL(void, GOMP_critical_end, void)
INST_REAL(void, GOMP_critical_name_start, void **)
INST_REAL(void, GOMP_critical_name_end, void **)
INST_REAL(void, GOMP_atomic_start, void)
INST_REAL(void, GOMP_atomic_end, void)

/* At load time (see inst_sync.c's sync_resolve): NULL for a program
 * without libgomp, whose code never calls these. */
__attribute__((constructor)) static void omp_resolve(void)
{
	resolve_GOMP_barrier();
	resolve_GOMP_barrier_cancel();
	resolve_GOMP_loop_end();
	resolve_GOMP_loop_end_cancel();
	resolve_GOMP_sections_end();
	resolve_GOMP_sections_end_cancel();
	resolve_omp_set_lock();
	resolve_omp_unset_lock();
	resolve_omp_test_lock();
	resolve_omp_set_nest_lock();
	resolve_omp_unset_nest_lock();
	resolve_omp_test_nest_lock();
	resolve_GOMP_critical_start();
	resolve_GOMP_critical_end();
	resolve_GOMP_critical_name_start();
	resolve_GOMP_critical_name_end();
	resolve_GOMP_atomic_start();
	resolve_GOMP_atomic_end();
}

/* ---- barriers --------------------------------------------------------------------- */

#define BARRIER(name)                                                                        \
	RT_EXPORT void name(void)                                                              \
	{                                                                                      \
		uintptr_t ip = INST_RET() - 1;                                                 \
		inst_sync_acc(&omp_team, RMW, ip);                                             \
		get_##name()();                                                                \
		inst_sync_acc(&omp_team, LD, ip);                                              \
	}
#define BARRIER_CANCEL(name)                                                                 \
	RT_EXPORT bool name(void)                                                              \
	{                                                                                      \
		uintptr_t ip = INST_RET() - 1;                                                 \
		inst_sync_acc(&omp_team, RMW, ip);                                             \
		bool cancelled = get_##name()();                                               \
		inst_sync_acc(&omp_team, LD, ip);                                              \
		return cancelled;                                                              \
	}

BARRIER(GOMP_barrier)
BARRIER(GOMP_loop_end)
BARRIER(GOMP_sections_end)
BARRIER_CANCEL(GOMP_barrier_cancel)
BARRIER_CANCEL(GOMP_loop_end_cancel)
BARRIER_CANCEL(GOMP_sections_end_cancel)

/* ---- parallel regions (rt_marker.c wraps GOMP_parallel*) ------------------------- */

static void region_sync(enum rt_omp_phase phase, uintptr_t ip)
{
	static const unsigned kind[] = {
		[RT_OMP_FORK] = RMW,    /* the master publishes the region's data */
		[RT_OMP_BEGIN] = LD,    /* each thread of the team takes it */
		[RT_OMP_END] = RMW,     /* arrival at the region's closing barrier */
		[RT_OMP_JOIN] = LD,     /* the master's departure from it */
	};
	inst_sync_acc(&omp_team, kind[phase], ip);
}

void inst_omp_init(void)
{
	if (inst_full && !inst_sync_off)
		rt_omp_sync = region_sync;
}

/* ---- locks, critical sections, GOMP_atomic ----------------------------------------- */

#define ACQUIRE(name, param, obj)                                                            \
	RT_EXPORT void name(param)                                                             \
	{                                                                                      \
		get_##name()(obj);                                                             \
		inst_sync_acc(obj, RMW, INST_RET() - 1);                                       \
	}
#define RELEASE(name, param, obj)                                                            \
	RT_EXPORT void name(param)                                                             \
	{                                                                                      \
		inst_sync_acc(obj, ST, INST_RET() - 1);                                        \
		get_##name()(obj);                                                             \
	}
#define ANON(name, kind, word)                                                               \
	RT_EXPORT void name(void)                                                              \
	{                                                                                      \
		if ((kind) == ST)                                                              \
			inst_sync_acc(&(word), ST, INST_RET() - 1);                            \
		get_##name()();                                                                \
		if ((kind) == RMW)                                                             \
			inst_sync_acc(&(word), RMW, INST_RET() - 1);                           \
	}

ACQUIRE(omp_set_lock, void *lock, lock)
ACQUIRE(omp_set_nest_lock, void *lock, lock)
RELEASE(omp_unset_lock, void *lock, lock)
RELEASE(omp_unset_nest_lock, void *lock, lock)
ACQUIRE(GOMP_critical_name_start, void **pptr, pptr)
RELEASE(GOMP_critical_name_end, void **pptr, pptr)
ANON(GOMP_critical_start, RMW, omp_critical)
ANON(GOMP_critical_end, ST, omp_critical)
ANON(GOMP_atomic_start, RMW, omp_atomic)
ANON(GOMP_atomic_end, ST, omp_atomic)

RT_EXPORT int omp_test_lock(void *lock)
{
	int r = get_omp_test_lock()(lock);
	if (r)
		inst_sync_acc(lock, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int omp_test_nest_lock(void *lock)
{
	int r = get_omp_test_nest_lock()(lock);
	if (r)
		inst_sync_acc(lock, RMW, INST_RET() - 1);
	return r;
}
