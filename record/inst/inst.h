/* The inst sampler: programs compiled with -fsanitize=thread and linked with
 * libcommrec-inst (commrec-cc) call the __tsan_* entry points defined here
 * for every load, store, atomic and function entry/exit.  See commrec(1),
 * "The inst sampler", and commrec-cc(1).
 *
 *   inst_rt.c      the sampler (struct sampler_ops rt_sampler_inst), the
 *                  per-thread countdowns, the plain access / function hooks,
 *                  sampled and full recording, the clock, the statistics.
 *   inst_atomic.c  __tsan_atomic*: performed here with the requested order.
 *   inst_mem.c     memcpy / memmove / memset (and their __tsan_ and _chk
 *                  forms): recorded as line-sized accesses, then done by libc.
 *   inst_sync.c    pthread mutexes, spin locks, barriers, condition variables,
 *                  semaphores: the accesses they imply, flagged as sync.
 *   inst_omp.c     the same for libgomp: barriers, parallel regions, locks,
 *                  critical sections, GOMP_atomic.
 */
#ifndef CT_INST_H
#define CT_INST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"

#define INST_LD 0   /* countdown index: loads */
#define INST_ST 1   /* countdown index: stores, atomic stores and read-modify-writes */

/* Statistics, per thread (folded into process totals at the thread's end). */
enum inst_stat {
	IS_BULK_RANGED,        /* memcpy/memset parts already recorded by a range */
	IS_ATOMIC_LOAD, IS_ATOMIC_STORE, IS_ATOMIC_RMW, IS_ATOMIC_CAS, IS_ATOMIC_FENCE,
	IS_RANGE_READ, IS_RANGE_READ_BYTES, IS_RANGE_WRITE, IS_RANGE_WRITE_BYTES,
	IS_MEMCPY, IS_MEMCPY_BYTES, IS_MEMMOVE, IS_MEMMOVE_BYTES, IS_MEMSET, IS_MEMSET_BYTES,
	IS_UNALIGNED, IS_VOLATILE, IS_VPTR, IS_FUNC_ENTER, IS_FUNC_EXIT,
	IS_UNRECORDED,         /* accesses seen while the thread was not recorded */
	IS_WAITS,              /* full mode: times the ring was full and the thread waited */
	IS_WAIT_NS,
	IS_FILTERED,           /* full mode: accesses the filter left out (FORMAT.md) */
	IS_SYNC,               /* full mode: accesses implied by synchronization calls */
	IS_MERGED,             /* full mode: loads whose record became their store's (FORMAT.md) */
	IS_FILTERED_READS,     /* full mode: of IS_FILTERED, the loads left out by a reader bit */
	IS_MAX
};

/* Sampled mode with software line watches: a thread's countdowns also stop
 * every INST_CATCH_UP accesses between its samples, where it arms the
 * store samples other threads logged since its last arms (rt_lines_catch_up)
 * instead of at its next sample only. */
#define INST_CATCH_UP 64
#define INST_WMAP 4096         /* granules of the software watchpoints' filter (a byte each) */

#define INST_HOLD_IPS 64        /* loads whose records are held back, by ip (inst_tls) */

struct inst_tls {
	int64_t left[2];       /* countdown to the next recorded access, per kind */
	int64_t refill[2];     /* the value left[] was last set to */
	uint64_t done[2];      /* accesses counted before the last refill */
	int64_t rest[2];       /* sampled mode: accesses from the countdown's stop to
	                          the sample (> 0: the stop is a line watch catch-up) */
	uint64_t block_rest[2]; /* sampled mode: the countdown's block state
	                          (inst_owner_countdown) */
	uintptr_t rd_addr, wr_addr; /* the last __tsan_{read,write}_range (gcc then */
	size_t rd_len, wr_len;      /* copies with a memcpy call: not twice) */
	/* Software watchpoints (rt_wp.c): an access starting in a 64-byte
	 * granule whose byte (INST_WATCHED: granule number mod INST_WMAP) has
	 * a bit of its kind set may touch a watched byte: the one test every access pays (a
	 * byte map: fewer instructions than a bit map); the slow path checks
	 * the thread's watched words or lines.  A watched range sets the bytes
	 * of its granules and of the one before it (an access of up to
	 * INST_MAX_LEN bytes that starts there may reach it).  w_any: one is
	 * set. */
	bool w_any;
	uint8_t w_map[INST_WMAP];
	bool on;               /* this thread is recorded by the inst sampler */
	bool in_push;          /* full mode: a push is in progress (signal nesting) */
	uint32_t filt_owner;   /* full mode: owner id in the filter table, 0: none */
	uint64_t filt_rbit;    /* full mode: its reader bit in the table, 0: none */
	uint64_t *filt_lc;     /* full mode: the reader cache (with a reader bit) */
	uint8_t filt_lc_busy;  /* full mode: claims between their swap and their cache note
	                        * (more than one: a signal handler's, nested) */
	bool filt_lc_dirty;    /* full mode: a nested claim dropped a cache entry */
	bool filt_fast;        /* full mode: the hooks ask the filter themselves (the
	                        * thread is on, has an owner id, no line monitor,
	                        * 64-byte filter lines) */
	struct ct_record *held; /* full mode: this thread's last record, held back in its
	                        * ring: a load that a store of the same bytes may
	                        * replace (full_merge_store), NULL: none */
	uintptr_t ld_addr, ld_ip; /* full mode: this thread's last recorded load */
	unsigned ld_len;
	uintptr_t hold_ip[INST_HOLD_IPS]; /* full mode: loads (by ip, direct-mapped) that a
	                        * store of the same bytes followed last time: the
	                        * ones held back (holding costs an atomic operation) */
	uint64_t stamp;        /* full mode: the time of this thread's last new stamp */
	uint32_t cpu;          /* full mode: the CPU read with it */
	uint64_t stat[IS_MAX];
};

extern RT_TLS struct inst_tls inst_t;
extern bool inst_full;          /* --full: every access */
extern bool inst_funcs;         /* FUNC_ENTER/EXIT records (full mode) */
extern uint64_t inst_period;    /* sampled mode: N */
extern bool inst_in_so;         /* the runtime is libcommrec-inst.so (not linked statically) */

/* One access of len bytes at addr (kind enum ct_access_kind, which countdown
 * idx) that brought left[idx] to 0 or below: record or sample it. */
void inst_hit(uintptr_t addr, unsigned len, unsigned kind, int idx, uintptr_t ip);
/* Atomics that read: inst_pre when the countdown expired (before the
 * operation), inst_post after it if inst_pre returned true. */
struct inst_pend {
	struct rt_thread *t;
	struct ct_record *r;     /* full mode: the reserved slot */
	uintptr_t addr, ip;
	uint8_t len, kind;
	bool nested;
};
bool inst_pre(struct inst_pend *p, uintptr_t addr, unsigned len, unsigned kind, int idx,
              uintptr_t ip);
void inst_post(struct inst_pend *p);
/* n consecutive bytes from addr accessed by one operation at ip: one access
 * per touched cache line (len = bytes in that line). */
void inst_range(uintptr_t addr, size_t n, unsigned kind, uintptr_t ip);
/* Software watchpoints: the thread's access of len bytes at addr (kind, at
 * ip) may touch a watched word or line: a WP_HIT if it does. */
void inst_watch_hit(uintptr_t addr, size_t len, unsigned kind, uintptr_t ip);
/* The same, then the access's countdown (idx): the plain hooks' slow path,
 * a tail call that keeps their fast path free of a stack frame. */
void inst_watched_access(uintptr_t addr, unsigned len, unsigned kind, int idx, uintptr_t ip);
#define INST_MAX_LEN 16        /* the longest access of one hook */
/* A filter byte's bits: a watch there that any access hits; one that only
 * a store can end (a line watch that has reported its first hit and waits
 * for the overwrite: loads go by). */
#define INST_WATCH_ANY 1
#define INST_WATCH_STORE 2
#define INST_WATCHED_BY(addr, bits) \
	__builtin_expect((inst_t.w_map[((uintptr_t)(addr) >> 6) % INST_WMAP] & (bits)) != 0, 0)
/* May an access of that kind at addr touch a watch? */
#define INST_WATCHED(addr, kind)                                                             \
	INST_WATCHED_BY(addr, (kind) == CT_ACCESS_LOAD ? INST_WATCH_ANY                         \
	                                              : INST_WATCH_ANY | INST_WATCH_STORE)
#define INST_WATCH(addr, len, kind, ip)                                                      \
	do {                                                                                   \
		if (INST_WATCHED(addr, kind))                                                  \
			inst_watch_hit((uintptr_t)(addr), len, kind, ip);                      \
	} while (0)
/* The caller is this thread's recorded program code (not the runtime). */
static inline bool inst_thread_on(void)
{
	return inst_t.on && !rt_guard;
}

/* The line monitor (inst_owner.c; sampled mode, COMMTRACE_OWNER_WINDOW):
 * the lines with open windows, direct-mapped by line number.  Every access
 * checks inst_own_open (0: nothing monitored) and then its line's key. */
#define INST_OWN_SLOTS 256
extern unsigned inst_own_open;          /* slots in use */
extern unsigned inst_own_shift;         /* log2 of the line size */
extern uint64_t inst_own_key[INST_OWN_SLOTS]; /* line number + 1, 0: free */
extern uint64_t inst_own_window;        /* J, 0: no monitor */
void inst_owner_init(void);
/* The next sampling countdown of one kind (loads and stores alike), with
 * that kind's block state *block_rest: one access in each block of
 * inst_period, at a random place (sample_gap_stratified), so that every
 * access is sampled with probability 1/inst_period whatever the program's
 * loops, and threads that run the same loop do not sample in step
 * (inst_owner.c). */
int64_t inst_owner_countdown(uint64_t *block_rest);
uint64_t inst_owner_left_out(void);
uint64_t inst_owner_lag_transfers(void);
/* An access (any thread) that may touch a monitored line. */
void inst_owner_access(uintptr_t addr, size_t len, unsigned kind, uintptr_t ip);
/* The same, then the access's watch check and countdown: the plain hooks'
 * path while their line may be monitored (a tail call, as
 * inst_watched_access). */
void inst_owned_access(uintptr_t addr, unsigned len, unsigned kind, int idx, uintptr_t ip);
/* t's sampled access (after its SAMPLE record): a store opens a window. */
struct rt_thread;
void inst_owner_sampled(struct rt_thread *t, uintptr_t addr, unsigned len, unsigned kind);
/* Full mode: t's recorded access; a store counts down the monitor's own
 * sampler (period COMMTRACE_PERIOD, drawn as inst_owner_countdown's) and
 * opens a window when it expires. */
void inst_owner_full_access(struct rt_thread *t, uintptr_t addr, unsigned len, unsigned kind);
/* [a, a + len) may touch a monitored line: its first byte's line is one,
 * or it ends on another line (rare; inst_owner_access looks at each). */
static inline bool inst_owned_line(uintptr_t a, unsigned len)
{
	uint64_t ln = (uint64_t)a >> inst_own_shift;
	return __atomic_load_n(&inst_own_key[ln & (INST_OWN_SLOTS - 1)], __ATOMIC_RELAXED) == ln + 1 ||
	       ((uint64_t)a + len - 1) >> inst_own_shift != ln;
}
#define INST_OWNED(a, len)                                                                   \
	(__builtin_expect(__atomic_load_n(&inst_own_open, __ATOMIC_RELAXED) != 0, 0) &&         \
	 inst_owned_line((uintptr_t)(a), len))
#define INST_OWN(a, len, kind, ip)                                                           \
	do {                                                                                   \
		if (INST_OWNED(a, len))                                                        \
			inst_owner_access((uintptr_t)(a), len, kind, ip);                      \
	} while (0)

/* inst_mem.c */
void inst_mem_init(void);
/* inst_sync.c: the wrappers of libc's synchronization functions. */
void inst_sync_init(void);
/* inst_omp.c: libgomp's (after inst_sync_init). */
void inst_omp_init(void);
/* Full mode: record an access that a synchronization call implies
 * (CT_SAMPLE_SYNC). */
void inst_sync_access(uintptr_t addr, unsigned len, unsigned kind, uintptr_t ip);
extern bool inst_sync_off;      /* COMMTRACE_INST_SYNC=0: the wrappers only call */
#define INST_SYNC_LEN 4         /* the lock word of glibc's and libgomp's objects */
/* The wrappers' access: one implied access of the calling thread to obj's
 * first word, at ip (full mode, recorded threads only). */
static inline void inst_sync_acc(const void *obj, unsigned kind, uintptr_t ip)
{
	if (inst_full && !inst_sync_off && inst_thread_on())
		inst_sync_access((uintptr_t)obj, INST_SYNC_LEN, kind, ip);
}
/* The wrapped library's function `name`, looked up once (RTLD_NEXT: the
 * next definition after this runtime's): get_name() returns it. */
/* The function the wrapper `name` stands in front of (rt_real):
 * resolve_NAME looks it up (load time), get_NAME is the wrapper's. */
#define INST_REAL(ret, name, ...)                                                            \
	static ret (*real_##name)(__VA_ARGS__);                                                \
	static void resolve_##name(void)                                                       \
	{                                                                                      \
		if (!real_##name)                                                              \
			real_##name = (ret(*)(__VA_ARGS__))rt_real(#name);                     \
	}                                                                                      \
	static ret (*get_##name(void))(__VA_ARGS__)                                            \
	{                                                                                      \
		if (__builtin_expect(!real_##name, 0)) {                                       \
			resolve_##name();                                                      \
			if (!real_##name)                                                      \
				rt_no_real(#name);                                             \
		}                                                                              \
		return real_##name;                                                            \
	}

#define INST_RET() ((uintptr_t)__builtin_return_address(0))

#endif
