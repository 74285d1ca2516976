/* The inst sampler: the __tsan_* entry points of compiler instrumentation
 * (gcc and clang -fsanitize=thread) implemented by commtrace.
 *
 * Hot path: every instrumented access decrements a per-thread countdown
 * (one for loads, one for stores) and calls out only when it reaches 0:
 *   sampled mode  the countdown takes one access in each block of N
 *                 (COMMTRACE_PERIOD, inst_owner_countdown): one in N
 *                 loads and one in N stores of a thread becomes a SAMPLE record
 *                 (period N, CT_SAMPLE_EXACT) through rt_sample(), so the
 *                 bulletin board and the watchpoints work as for the PMU
 *                 samplers;
 *                 With software watchpoints (COMMTRACE_WP_SOFT=1) every
 *                 access is also tested against the thread's watched lines
 *                 or words (one byte of a per-thread filter: inst_tls.w_map);
 *   full mode     (COMMTRACE_FULL=1) the countdown is 1: every access is a
 *                 SAMPLE record with period 1, written straight into the
 *                 thread's record ring (no board, no watchpoints), with
 *                 blocking backpressure when the ring is full (an exact
 *                 trace with holes would not be exact), plus FUNC_ENTER /
 *                 FUNC_EXIT records.
 * Threads that are not recorded (before the runtime starts, after their
 * end, the runtime's own threads, a forked child) get a countdown that
 * never expires.
 *
 * Timestamps: sampled mode uses CLOCK_MONOTONIC (rt_now: cost irrelevant at
 * one sample per N accesses).  Full mode uses the TSC when it is invariant
 * and the kernel's clocksource (constant_tsc, nonstop_tsc, clocksource tsc),
 * mapped to CLOCK_MONOTONIC ns by one process-wide linear function that is
 * recalibrated every 10 ms by whichever thread notices it is due: the new
 * function starts where the old one ends (continuous, monotonic) and its
 * slope (long-baseline rate + correction of the measured offset over the
 * next 10 ms) pulls it back onto CLOCK_MONOTONIC.  All threads use the same
 * function of a synchronized counter, so the cross-thread order of the
 * timestamps is that of the TSC reads.  COMMTRACE_INST_CLOCK=mono|tsc
 * overrides the choice.  Numbers: commrec(1), "The inst sampler". */
#include "inst.h"

#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

#include "rtconfig.h"

#define BIG (INT64_MAX / 4)
#define INST_RING_UNITS_FULL 16384     /* 1 MiB per thread */

/* Marker for commrec: a program that defines it (the static runtime; commrec-cc
 * exports it with --export-dynamic-symbol) or needs libcommrec-inst.so
 * carries the runtime, and must not get libcommrec.so preloaded too. */
RT_EXPORT const char commtrace_inst_runtime[] = "commtrace inst runtime " CT_VERSION;

RT_TLS struct inst_tls inst_t;
bool inst_full;
bool inst_funcs = true;
uint64_t inst_period = 1;
bool inst_in_so;
static bool inst_active;          /* process_init ran: the inst sampler records */

/* ---- statistics ----------------------------------------------------------------- */

static _Atomic uint64_t g_stat[IS_MAX];
static _Atomic uint64_t g_acc[2];        /* countdown totals: loads, stores */
static _Atomic uint64_t g_threads;
static struct inst_tls *_Atomic live[RT_MAX_THREADS];

static const char *const stat_name[IS_MAX] = {
	[IS_BULK_RANGED] = "bulk_parts_already_ranged",
	[IS_ATOMIC_LOAD] = "atomic_loads", [IS_ATOMIC_STORE] = "atomic_stores",
	[IS_ATOMIC_RMW] = "atomic_rmw", [IS_ATOMIC_CAS] = "atomic_cas",
	[IS_ATOMIC_FENCE] = "atomic_fences",
	[IS_RANGE_READ] = "range_reads", [IS_RANGE_READ_BYTES] = "range_read_bytes",
	[IS_RANGE_WRITE] = "range_writes", [IS_RANGE_WRITE_BYTES] = "range_write_bytes",
	[IS_MEMCPY] = "memcpy_calls", [IS_MEMCPY_BYTES] = "memcpy_bytes",
	[IS_MEMMOVE] = "memmove_calls", [IS_MEMMOVE_BYTES] = "memmove_bytes",
	[IS_MEMSET] = "memset_calls", [IS_MEMSET_BYTES] = "memset_bytes",
	[IS_UNALIGNED] = "unaligned", [IS_VOLATILE] = "volatile", [IS_VPTR] = "vptr",
	[IS_FUNC_ENTER] = "func_enter", [IS_FUNC_EXIT] = "func_exit",
	[IS_UNRECORDED] = "unrecorded", [IS_WAITS] = "full_waits", [IS_WAIT_NS] = "full_wait_ns",
	[IS_FILTERED] = "full_filtered", [IS_SYNC] = "sync_accesses", [IS_MERGED] = "full_merged",
	[IS_FILTERED_READS] = "full_filtered_reads",
};

static inline uint64_t counted(const struct inst_tls *T, int idx)
{
	return T->done[idx] + (uint64_t)(T->refill[idx] - T->left[idx]);
}

static void set_countdown(struct inst_tls *T, int idx, int64_t v)
{
	if (T->on)
		T->done[idx] += (uint64_t)(T->refill[idx] - T->left[idx]);
	T->left[idx] = T->refill[idx] = v;
}

static int64_t catch_up_every;    /* INST_CATCH_UP with line watches, else 0 */

/* Kind idx's next n accesses up to its sample: the countdown stops after
 * the first catch_up_every of them, or at the sample. */
static void countdown_split(struct inst_tls *T, int idx, int64_t n)
{
	int64_t stop = catch_up_every && n > catch_up_every ? catch_up_every : n;
	T->rest[idx] = n - stop;
	set_countdown(T, idx, stop);
}

static void countdown_draw(struct inst_tls *T, int idx)
{
	countdown_split(T, idx, inst_owner_countdown(&T->block_rest[idx]));
}

/* Sampled mode: kind idx's countdown stopped at an access of t: true if
 * it is the sample (a new draw follows); else the line watches catch up. */
static bool countdown_due(struct inst_tls *T, struct rt_thread *t, int idx)
{
	if (!T->rest[idx]) {
		countdown_draw(T, idx);
		return true;
	}
	countdown_split(T, idx, T->rest[idx]);
	rt_guard++;
	rt_lines_catch_up(t);
	rt_guard--;
	return false;
}

static void fold_thread(struct inst_tls *T)
{
	for (int k = 0; k < 2; k++)
		atomic_fetch_add(&g_acc[k], counted(T, k));
	for (int i = 0; i < IS_MAX; i++)
		atomic_fetch_add(&g_stat[i], T->stat[i]);
}

/* ---- software watchpoints' filter ------------------------------------------------ */

static void map_clear(struct inst_tls *T)
{
	if (!T->w_any)
		return;
	T->w_any = false;
	for (unsigned i = 0; i < INST_WMAP; i++)
		T->w_map[i] = 0;
}

/* The filter's bytes of [lo, hi) (see inst_tls.w_map) get the bits. */
static void map_set(struct inst_tls *T, uintptr_t lo, uintptr_t hi, uint8_t bits)
{
	for (uintptr_t g = (lo - (INST_MAX_LEN - 1)) >> 6; g <= (hi - 1) >> 6; g++)
		T->w_map[g % INST_WMAP] |= bits;
	T->w_any = true;
}

/* This thread stops being recorded (its end, fork child, runtime gone). */
static void thread_off(struct inst_tls *T, uint32_t index, bool fold)
{
	if (T->on && fold) {
		fold_thread(T);
		struct inst_tls *expect = T;
		atomic_compare_exchange_strong(&live[index % RT_MAX_THREADS], &expect, NULL);
	}
	T->on = false;
	T->filt_fast = false;
	for (int k = 0; k < 2; k++) {
		T->left[k] = T->refill[k] = BIG;
		T->rest[k] = 0;
	}
	map_clear(T);
}

/* ---- clock ------------------------------------------------------------------------ */

static bool clk_tsc;
/* The mapping, in a ring of 8 versions: a writer fills the next one, then
 * advances the generation; a reader takes the current one and retries only
 * if 7 newer ones were published meanwhile.  Nothing ever waits for a
 * writer, so a signal handler that interrupts a recalibration (or a read)
 * on the same thread just uses the current version. */
#define CLK_VERSIONS 8
static struct clk_params {
	_Atomic int64_t tsc0, ns0, mult;   /* ns = ns0 + (tsc - tsc0) * mult / 2^32 */
	_Atomic uint64_t next;             /* tsc of the next recalibration */
} clkp[CLK_VERSIONS];
static _Atomic uint64_t clk_gen;
static _Atomic int clk_lock;
static int64_t cal_tsc, cal_ns;        /* first calibration point (long baseline) */
static int64_t clk_interval;           /* ticks between recalibrations */
static _Atomic uint64_t clk_recals, clk_max_err, clk_last_err;
static double clk_ghz;

#if HAVE_TSC
/* The TSC, ordered like the kernel's vDSO reads it: lfence first, so that
 * the read does not execute before the loads that precede it (an acquire
 * load must not be stamped before the value it saw was stored).
 * COMMTRACE_INST_TSC=plain: rdtsc alone (measurements only). */
static bool tsc_plain;
static inline uint64_t tsc_read(void)
{
	if (tsc_plain)
		return __rdtsc();
	_mm_lfence();
	return __rdtsc();
}

/* A (tsc, ns) pair: the TSC read on both sides of clock_gettime, the middle
 * taken; retried while the bracket is wide (preemption). */
static void tsc_pair(int64_t *tsc, int64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t a = __rdtsc();
		int64_t n = (int64_t)rt_now();
		uint64_t b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = (int64_t)(a + (b - a) / 2);
			*ns = n;
		}
		if (best < 400)
			break;
	}
}

static inline int64_t clk_map(int64_t c, int64_t tsc0, int64_t ns0, int64_t mult)
{
	return ns0 + (int64_t)(((__int128)(c - tsc0) * mult) >> 32);
}

static void clk_publish(int64_t tsc0, int64_t ns0, int64_t mult)
{
	uint64_t g = atomic_load_explicit(&clk_gen, memory_order_relaxed) + 1;
	struct clk_params *p = &clkp[g % CLK_VERSIONS];
	atomic_store_explicit(&p->tsc0, tsc0, memory_order_relaxed);
	atomic_store_explicit(&p->ns0, ns0, memory_order_relaxed);
	atomic_store_explicit(&p->mult, mult, memory_order_relaxed);
	atomic_store_explicit(&p->next, (uint64_t)(tsc0 + clk_interval), memory_order_relaxed);
	atomic_store_explicit(&clk_gen, g, memory_order_release);
}

/* The current version (consistent: see clkp). */
static inline void clk_get(int64_t *tsc0, int64_t *ns0, int64_t *mult, uint64_t *next)
{
	for (;;) {
		uint64_t g = atomic_load_explicit(&clk_gen, memory_order_acquire);
		const struct clk_params *p = &clkp[g % CLK_VERSIONS];
		*tsc0 = atomic_load_explicit(&p->tsc0, memory_order_relaxed);
		*ns0 = atomic_load_explicit(&p->ns0, memory_order_relaxed);
		*mult = atomic_load_explicit(&p->mult, memory_order_relaxed);
		*next = atomic_load_explicit(&p->next, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&clk_gen, memory_order_relaxed) - g < CLK_VERSIONS - 1)
			return;
	}
}

static __attribute__((noinline)) void clk_recal(void)
{
	if (atomic_exchange_explicit(&clk_lock, 1, memory_order_acquire))
		return;
	int64_t c, ns;
	tsc_pair(&c, &ns);
	int64_t tsc0, ns0, mult;
	uint64_t next;
	clk_get(&tsc0, &ns0, &mult, &next);
	int64_t m = clk_map(c, tsc0, ns0, mult);
	int64_t err = ns - m;
	int64_t lb = (int64_t)(((__int128)(ns - cal_ns) << 32) / (c - cal_tsc));
	uint64_t aerr = (uint64_t)(err < 0 ? -err : err);
	if (aerr > 1000000) {
		/* more than 1 ms off (a suspended VM?): start again from here */
		clk_publish(c, ns, lb);
	} else {
		int64_t corr = (int64_t)(((__int128)err << 32) / clk_interval);
		int64_t nm = lb + corr;
		if (nm < lb / 2)
			nm = lb / 2;
		clk_publish(c, m, nm);
	}
	uint64_t n = atomic_fetch_add(&clk_recals, 1);
	atomic_store(&clk_last_err, aerr);
	if (n >= 2 && aerr > atomic_load(&clk_max_err))   /* after the start-up settles */
		atomic_store(&clk_max_err, aerr);
	atomic_store_explicit(&clk_lock, 0, memory_order_release);
}
#endif

/* The time of an access in full mode. */
static inline uint64_t inst_time(void)
{
#if HAVE_TSC
	if (__builtin_expect(clk_tsc, 1)) {
		int64_t c = (int64_t)tsc_read();
		int64_t tsc0, ns0, mult;
		uint64_t next;
		clk_get(&tsc0, &ns0, &mult, &next);
		if (__builtin_expect((uint64_t)c >= next, 0)) {
			/* due: one thread recalibrates (the others, and a signal
			 * handler interrupting it, go on with the current version) */
			clk_recal();
			clk_get(&tsc0, &ns0, &mult, &next);
		}
		return (uint64_t)clk_map(c, tsc0, ns0, mult);
	}
#endif
	return rt_now();
}

static bool tsc_usable(char *why, size_t cap)
{
#if HAVE_TSC
	bool cons = false, nonstop = false, reliable = false;
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (f) {
		char line[4096];
		while (fgets(line, sizeof line, f)) {
			if (strncmp(line, "flags", 5))
				continue;
			cons = strstr(line, " constant_tsc") != NULL;
			nonstop = strstr(line, " nonstop_tsc") != NULL;
			reliable = strstr(line, " tsc_reliable") != NULL;
			break;
		}
		fclose(f);
	}
	char cs[64] = "";
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
	              O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cs, sizeof cs - 1);
		close(fd);
		cs[n > 0 ? n : 0] = 0;
		char *nl = strchr(cs, '\n');
		if (nl)
			*nl = 0;
	}
	if (!cons || !nonstop) {
		snprintf(why, cap, "the TSC is not invariant (constant_tsc %d, nonstop_tsc %d)", cons, nonstop);
		return false;
	}
	/* A guest's kernel may prefer its hypervisor's clock (kvm-clock) even
	 * where the host says the TSC is synchronized across CPUs
	 * (tsc_reliable): the TSC then serves as well, read directly. */
	if (strcmp(cs, "tsc") && !reliable) {
		snprintf(why, cap, "the kernel's clocksource is %s, not tsc, and the TSC is not marked reliable",
		         cs[0] ? cs : "unknown");
		return false;
	}
	snprintf(why, cap, "invariant TSC, %s", strcmp(cs, "tsc") ? "tsc_reliable" : "clocksource tsc");
	return true;
#else
	snprintf(why, cap, "no TSC on this architecture");
	return false;
#endif
}

static void clock_init(void)
{
	char why[128];
	const char *want = getenv("COMMTRACE_INST_CLOCK");
	clk_tsc = false;
#if HAVE_TSC
	const char *tp = getenv("COMMTRACE_INST_TSC");
	tsc_plain = tp && !strcmp(tp, "plain");
#endif
	if (want && !strcmp(want, "mono")) {
		snprintf(why, sizeof why, "COMMTRACE_INST_CLOCK=mono");
	} else if (tsc_usable(why, sizeof why) || (want && !strcmp(want, "tsc"))) {
#if HAVE_TSC
		/* two pairs 2 ms apart (busy: no sleep at start-up), then the
		 * recalibrations refine the rate over the whole run */
		int64_t t1, n1, t2, n2;
		tsc_pair(&t1, &n1);
		do
			tsc_pair(&t2, &n2);
		while (n2 - n1 < 2000000);
		int64_t mult = (int64_t)(((__int128)(n2 - n1) << 32) / (t2 - t1));
		if (mult > 0) {
			cal_tsc = t1;
			cal_ns = n1;
			clk_ghz = (double)(t2 - t1) / (double)(n2 - n1);
			clk_interval = (int64_t)(clk_ghz * 1e7);   /* 10 ms */
			clk_publish(t2, n2, mult);
			clk_tsc = true;
		}
#endif
	}
	rt_log(2, "inst: clock %s (%s)%s", clk_tsc ? "tsc" : "CLOCK_MONOTONIC", why,
	       clk_tsc ? "" : "");
}

/* ---- recording -------------------------------------------------------------------- */

/* The recording thread, or NULL (and the countdowns stop) if this thread is
 * not (or no longer) recorded. */
static inline struct rt_thread *rec_thread(struct inst_tls *T)
{
	struct rt_thread *t = rt_self;
	if (__builtin_expect(T->on && t && !atomic_load_explicit(&t->stopped, memory_order_relaxed) &&
	                     atomic_load_explicit(&rt_active, memory_order_relaxed), 1))
		return t;
	if (T->on)
		thread_off(T, t ? t->index : 0, t != NULL);
	return NULL;
}

/* Full mode: a new time for a record of this thread, kept as its last stamp
 * with the CPU it runs on (the filter reuses both, see filt_stamp). */
static __attribute__((noinline)) uint64_t full_now(struct inst_tls *T)
{
	uint64_t now = inst_time();
	T->stamp = now;
	T->cpu = (uint32_t)sched_getcpu();
	return now;
}

/* ---- the full-mode filter (FORMAT.md, "Filtered full traces") -------------------- */

/* An access by thread T to a filter line (F = the recording's line size,
 * 8 granules of F/8 bytes) is left out of the trace when no other thread
 * accessed that line since T's first access of its current ownership and
 * T already accessed every granule it touches in that ownership (a load)
 * or already stored every byte of them (a store: granules some single
 * store of T covered).  A load is also left out when T touched its
 * granules since the line's last recorded store of another thread (T is
 * one of the line's readers, below; version 9).  The exact model at every
 * line size from F/8 to F then sees no difference: T holds a valid copy
 * of the line (no event), is already its writer and sole holder (a store),
 * and its written bytes already include the store's.
 *
 * One table, shared by the threads, direct-mapped by line number, one
 * word per line: tag | owner | stored granules | touched granules |
 * readers.  A reader bit (threads with owner ids 1 to FILT_READERS) says
 * that the thread's own reader cache (inst_tls.filt_lc: line, granules)
 * holds only granules it touched since the line's last recorded store of
 * another thread: a recorded store clears the other threads' bits, a
 * recorded load adds the loading thread's and the former owner's.  A
 * thread notes its granules in its cache at its recorded loads and at its
 * claims (filt_lc_note: what it held stays if its copy was valid), not at
 * the other records of its ownership (a subset of what it touched is
 * enough: a store is not noted, nor a load whose store takes its record
 * over).  So threads that only read a line do not take it from each other
 * at every access.  The
 * claim that makes T the owner reads the word, takes the record's time,
 * then swaps the word in by compare-and-swap (retried, with a new time,
 * when another thread changed it): if U claims the line after T, U read
 * T's word after T's swap, so U's time is later than T's, and the trace
 * order of the records of a line is that of the table.  A recorded access
 * of T to a line T still owns (a granule new to this ownership) takes no new
 * time but T's last stamp: that was read at or after T's claim of the line
 * and before this swap, so it lies between the claim and the next claim by
 * another thread (ties within T: stream order), and the CPU read with it.
 * Most records of a line are of that kind, and reading the TSC in order
 * costs 30-45 ns here.  Writes that make nobody the owner (accesses across
 * lines, atomics that read, threads without an owner id) only lose
 * filtering and need no order. */
/* 2^20 lines, 8 MiB touched lazily (2^17 forgot lines of LULESH -s 20 whose
 * entries collided: 22% more records) */
#define FILT_BITS 20
#define FILT_MASK ((1u << FILT_BITS) - 1)
#define FILT_OWNER_MAX ((1u << 14) - 1)
#define FILT_ADDR_END (1ull << 47)           /* user addresses below: tag fits */
/* The word: touched granules (bits 0-7), stored granules (8-15), readers
 * (16-25), owner id (26-39), tag: line >> FILT_BITS (40-63: lines of 8
 * bytes and more below FILT_ADDR_END). */
#define FILT_TOUCHED 0
#define FILT_STORED 8
#define FILT_GRANULES 0xffffull
#define FILT_READERS 10
#define FILT_RSHIFT 16
#define FILT_RMASK (((1ull << FILT_READERS) - 1) << FILT_RSHIFT)
#define FILT_OWNER 26
#define FILT_TAG 40
#define FILT_LC_BITS 12                      /* reader cache: 4096 lines, 32 KiB */
static _Atomic uint64_t *filt_tab;           /* NULL: no filter */
static unsigned filt_shift, filt_gshift;     /* log2 of F and of a granule */

static inline uint64_t filt_key(uint64_t line, uint32_t owner)
{
	return ((line >> FILT_BITS) << FILT_TAG) | ((uint64_t)owner << FILT_OWNER);
}

/* The reader bit of an owner id (0: none). */
static inline uint64_t filt_rbit(uint64_t owner)
{
	return owner - 1 < FILT_READERS ? 1ull << (owner - 1 + FILT_RSHIFT) : 0;
}

/* The word is line's (its slot holds no other line). */
static inline bool filt_tag_is(uint64_t e, uint64_t line)
{
	return e >> FILT_TAG == line >> FILT_BITS;
}

/* An access of a power of two bytes, at most a granule, aligned to its
 * size: it lies in one granule (the hooks' usual case, where len and
 * gshift are constants: a test of the address). */
static inline __attribute__((always_inline)) bool
filt_in_granule(uintptr_t addr, unsigned len, unsigned gshift)
{
	return len <= (1u << gshift) && (len & (len - 1)) == 0 && (addr & (len - 1)) == 0;
}

/* The granules [addr, addr+len) touches (lines of 2^shift bytes, granules
 * of 2^gshift). */
static inline __attribute__((always_inline)) unsigned
filt_touch(uintptr_t addr, unsigned len, unsigned shift, unsigned gshift)
{
	unsigned off = (unsigned)(addr & ((1u << shift) - 1));
	if (filt_in_granule(addr, len, gshift))
		return 1u << (off >> gshift);
	return (2u << ((off + len - 1) >> gshift)) - (1u << (off >> gshift));
}

/* The granules [addr, addr+len) touches, and those it covers entirely. */
static inline __attribute__((always_inline)) void
filt_granules(uintptr_t addr, unsigned len, unsigned shift, unsigned gshift, unsigned *touch,
              unsigned *cover)
{
	unsigned off = (unsigned)(addr & ((1u << shift) - 1));
	unsigned g = 1u << gshift;
	unsigned cf = (off + g - 1) >> gshift, cl = (off + len) >> gshift;
	*touch = filt_touch(addr, len, shift, gshift);
	if (filt_in_granule(addr, len, gshift))
		*cover = len == g ? *touch : 0;
	else
		*cover = cl > cf ? (1u << cl) - (1u << cf) : 0;
}

/* One line, this thread may own it (owner id, address below FILT_ADDR_END). */
static inline bool filt_single(const struct inst_tls *T, uintptr_t addr, unsigned len)
{
	return T->filt_owner && addr < FILT_ADDR_END &&
	       ((addr + len - 1) >> filt_shift) == (addr >> filt_shift);
}

/* T owns the line of addr (lines of 2^shift bytes): the table's word for it
 * in *e.  The word's key without its low 16 bits (filt_key >> 16), computed
 * so that it does not overflow: an address at or above FILT_ADDR_END has a
 * tag no word holds (their lines are never claimed), so it owns nothing. */
static inline __attribute__((always_inline)) bool
filt_owns(const struct inst_tls *T, uintptr_t addr, unsigned shift, uint64_t *e)
{
	uint64_t line = addr >> shift;
	*e = atomic_load_explicit(&filt_tab[line & FILT_MASK], memory_order_relaxed);
	return *e >> FILT_OWNER == ((line >> FILT_BITS) << (FILT_TAG - FILT_OWNER) | T->filt_owner);
}

/* The word e already holds the granules that the access touches (a load)
 * or has stored (a store). */
static inline __attribute__((always_inline)) bool
filt_has(uint64_t e, uintptr_t addr, unsigned len, unsigned kind, unsigned shift, unsigned gshift)
{
	/* (one granule: its bit, tested in place) */
	unsigned at = kind == CT_ACCESS_LOAD ? FILT_TOUCHED : FILT_STORED;
	if (filt_in_granule(addr, len, gshift))
		return (e >> (((addr >> gshift) & 7) + at)) & 1;
	unsigned touch = filt_touch(addr, len, shift, gshift);
	unsigned have = (unsigned)(e >> at) & 0xff;
	return (have & touch) == touch;
}

/* ---- the reader cache: per thread, direct-mapped, line << 8 | granules ---- */

/* The granules T's reader cache holds for line (0: none). */
static inline unsigned filt_lc_has(const struct inst_tls *T, uint64_t line)
{
	uint64_t c = T->filt_lc[line & ((1u << FILT_LC_BITS) - 1)];
	return c >> 8 == line ? (unsigned)c & 0xff : 0;
}

/* A load of T that its reader bit in e and its reader cache let out: T
 * touched the granules since the line's last recorded store of another
 * thread.  (No reader bit: no cache.) */
static inline bool filt_reader_has(const struct inst_tls *T, uint64_t e, uint64_t line,
                                   unsigned touch)
{
	return (e & T->filt_rbit) && !T->filt_lc_busy && filt_tag_is(e, line) &&
	       (filt_lc_has(T, line) & touch) == touch;
}

/* Signal handlers.  Between a claim's swap, which may give T its reader
 * bit, and its note of the cache, T's entry for the line can be stale: a
 * handler that ran there must not leave a load out by it (filt_reader_has
 * says no while a claim is busy), and its own claims do not note the cache
 * but drop the line's entry and mark the cache dirty.  The interrupted note
 * then drops what it wrote: the handler's claim may have followed another
 * thread's store that made the note's granules stale. */
static inline void filt_lc_begin(struct inst_tls *T)
{
	T->filt_lc_busy++;
	T->filt_lc_dirty = false;
}

static inline void filt_lc_end(struct inst_tls *T)
{
	T->filt_lc_busy--;
}

/* Writes v to T's cache entry c of line, as a claim's note (see above). */
static inline void filt_lc_write(struct inst_tls *T, uint64_t *c, uint64_t line, uint64_t v)
{
	if (T->filt_lc_busy > 1) {         /* a handler's claim, nested */
		if (*c >> 8 == line)
			*c = 0;
		T->filt_lc_dirty = true;
		return;
	}
	*c = v;
	if (T->filt_lc_dirty)
		*c = 0;
}

/* T's claim of line (granules touch) over the word e, which did not have
 * T as its owner: T's cache keeps what it held for the line when e has T's
 * reader bit (T's copy was valid), else starts again. */
static inline void filt_lc_note(struct inst_tls *T, uint64_t e, uint64_t line, unsigned touch)
{
	if (!T->filt_rbit)
		return;
	uint64_t *c = &T->filt_lc[line & ((1u << FILT_LC_BITS) - 1)];
	unsigned keep = (e & T->filt_rbit) && filt_tag_is(e, line) && *c >> 8 == line ? (unsigned)*c & 0xff : 0;
	filt_lc_write(T, c, line, line << 8 | keep | touch);
}

/* T's recorded load (granules touch) of a line it owns: its copy is valid,
 * its cache keeps what it held for the line. */
static inline void filt_lc_note_owned(struct inst_tls *T, uint64_t line, unsigned touch)
{
	if (!T->filt_rbit)
		return;
	uint64_t *c = &T->filt_lc[line & ((1u << FILT_LC_BITS) - 1)];
	filt_lc_write(T, c, line, (*c >> 8 == line ? *c : line << 8) | touch);
}

/* The readers of the word that T's record swaps in over e: a store leaves
 * T alone; a load adds T and, if T takes the line from an owner, that
 * owner. */
static inline uint64_t filt_readers(const struct inst_tls *T, uint64_t e, uint64_t line, bool store)
{
	if (store || !filt_tag_is(e, line))
		return T->filt_rbit;
	return (e & FILT_RMASK) | filt_rbit((e >> FILT_OWNER) & FILT_OWNER_MAX) | T->filt_rbit;
}

/* A plain load or store (len >= 1) may be left out: the thread's own repeat
 * (see above).  Written for the hot path: an access across lines touches a
 * granule numbered 8 or more, which no entry holds; a thread without an
 * owner id never matches an entry it could leave out (entries of owner 0
 * are always 0: filt_stamp clears them). */
static inline __attribute__((always_inline)) bool
filt_repeat_at(const struct inst_tls *T, uintptr_t addr, unsigned len, unsigned kind,
               unsigned shift, unsigned gshift)
{
	uint64_t e;
	return filt_owns(T, addr, shift, &e) && filt_has(e, addr, len, kind, shift, gshift);
}

/* (64-byte lines, the usual size, with constant shifts) */
static inline __attribute__((always_inline)) bool
filt_repeat(const struct inst_tls *T, uintptr_t addr, unsigned len, unsigned kind)
{
	if (__builtin_expect(filt_shift == 6, 1))
		return filt_repeat_at(T, addr, len, kind, 6, 3);
	return filt_repeat_at(T, addr, len, kind, filt_shift, filt_gshift);
}

/* A load left out because T holds a valid copy of its granules (a reader
 * of its line, see above; T has no repeat of its own there): counted. */
static inline void filt_count_read(struct inst_tls *T)
{
	T->stat[IS_FILTERED]++;
	T->stat[IS_FILTERED_READS]++;
}

/* A plain access that filt_repeat does not leave out: a load that T's
 * reader bit and cache do (counted), within one line. */
static __attribute__((noinline)) bool filt_reads_again(struct inst_tls *T, uintptr_t addr,
                                                       unsigned len, unsigned kind)
{
	if (kind != CT_ACCESS_LOAD || !T->filt_rbit || !len || !filt_single(T, addr, len))
		return false;
	uint64_t line = addr >> filt_shift;
	uint64_t e = atomic_load_explicit(&filt_tab[line & FILT_MASK], memory_order_relaxed);
	if (!filt_reader_has(T, e, line, filt_touch(addr, len, filt_shift, filt_gshift)))
		return false;
	filt_count_read(T);
	return true;
}

/* The access may be left out (the thread's own repeat, see above). */
static inline bool filt_skip(const struct inst_tls *T, uintptr_t addr, unsigned len, unsigned kind)
{
	return filt_tab && kind != CT_ACCESS_ATOMIC && len && filt_repeat(T, addr, len, kind);
}

/* The granules of an access that its thread's table word gets. */
static inline __attribute__((always_inline)) uint64_t
filt_mine(uintptr_t addr, unsigned len, unsigned kind, unsigned shift, unsigned gshift)
{
	unsigned touch, cover;
	filt_granules(addr, len, shift, gshift, &touch, &cover);
	return (uint64_t)touch << FILT_TOUCHED | (kind == CT_ACCESS_LOAD ? 0 : (uint64_t)cover << FILT_STORED);
}

/* The word that T's record (granules mine, a store or not) swaps in over
 * e, a word of T's ownership: the granules added, and a store leaves T the
 * only reader. */
static inline uint64_t filt_word_owned(const struct inst_tls *T, uint64_t e, uint64_t mine, bool store)
{
	return store ? (e & ~FILT_RMASK) | mine | T->filt_rbit : e | mine;
}

/* The word of T's claim of line (granules mine, a store or not) over e. */
static inline uint64_t filt_word_claim(const struct inst_tls *T, uint64_t e, uint64_t line,
                                       uint64_t mine, bool store)
{
	return filt_key(line, T->filt_owner) | mine | filt_readers(T, e, line, store);
}

/* The claim of line by T (its table word at slot), from the word last seen
 * (e), adding the granules mine: the record's time. */
static inline __attribute__((always_inline)) uint64_t
filt_swap(struct inst_tls *T, _Atomic uint64_t *slot, uint64_t line, uint64_t mine, bool store,
          uint64_t e)
{
	uint64_t key = filt_key(line, T->filt_owner);
	for (;;) {
		/* T continues its ownership: its last stamp serves (see above) */
		bool owned = e >> FILT_OWNER == key >> FILT_OWNER;
		uint64_t time = owned ? T->stamp : full_now(T);
#if HAVE_TSC
		if (!owned)
			_mm_lfence();     /* a new time is read before the swap */
#endif
		uint64_t w = owned ? filt_word_owned(T, e, mine, store) : filt_word_claim(T, e, line, mine, store);
		filt_lc_begin(T);
		if (atomic_compare_exchange_weak_explicit(slot, &e, w, memory_order_relaxed,
		                                          memory_order_relaxed)) {
			unsigned touch = (unsigned)(mine >> FILT_TOUCHED) & 0xff;
			if (!owned)
				filt_lc_note(T, e, line, touch);
			else if (!store)
				filt_lc_note_owned(T, line, touch);
			filt_lc_end(T);
			return time;
		}
		filt_lc_end(T);
	}
}

/* T's claim of the single line of an access (filt_single), its record's
 * time (see above); lines of 2^shift bytes. */
static inline __attribute__((always_inline)) uint64_t
filt_claim(struct inst_tls *T, uintptr_t addr, unsigned len, unsigned kind, unsigned shift,
           unsigned gshift)
{
	uint64_t line = addr >> shift;
	_Atomic uint64_t *slot = &filt_tab[line & FILT_MASK];
	return filt_swap(T, slot, line, filt_mine(addr, len, kind, shift, gshift),
	                 kind != CT_ACCESS_LOAD, atomic_load_explicit(slot, memory_order_relaxed));
}

static __attribute__((noinline)) uint64_t filt_claim_any(struct inst_tls *T, uintptr_t addr,
                                                         unsigned len, unsigned kind)
{
	return filt_claim(T, addr, len, kind, filt_shift, filt_gshift);
}

/* The time of a record of this access, after the table says who owns the
 * lines it touches (see above). */
static inline uint64_t filt_stamp(struct inst_tls *T, uintptr_t addr, unsigned len, unsigned kind)
{
	if (!filt_tab)
		return full_now(T);
	if (!filt_single(T, addr, len) || kind == CT_ACCESS_ATOMIC) {
		uint64_t last = (addr + (len ? len : 1) - 1) >> filt_shift;
		for (uint64_t l = addr >> filt_shift; l <= last; l++)
			atomic_store_explicit(&filt_tab[l & FILT_MASK], 0, memory_order_relaxed);
		return full_now(T);
	}
	/* (64-byte lines, the usual size, with constant shifts) */
	if (__builtin_expect(filt_shift == 6, 1))
		return filt_claim(T, addr, len, kind, 6, 3);
	return filt_claim_any(T, addr, len, kind);
}

/* The thread's reader cache, if it has a reader bit (kept for good: at
 * most FILT_READERS threads of a process have one; a signal handler may
 * use it at any time). */
static void filt_lc_init(struct inst_tls *T)
{
	T->filt_rbit = filt_tab ? filt_rbit(T->filt_owner) : 0;
	if (!T->filt_rbit || T->filt_lc)
		return;
	void *m = mmap(NULL, sizeof(uint64_t) << FILT_LC_BITS, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		T->filt_rbit = 0;
	else
		T->filt_lc = m;
}

static void filt_init(void)
{
	const char *full = getenv(CT_ENV_FULL);
	unsigned line = rt_cfg.line_size ? rt_cfg.line_size : 64;
	if (!full || strcmp(full, "1"))
		return;                   /* "all": every access */
	void *m = mmap(NULL, sizeof(uint64_t) << FILT_BITS, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		rt_log(1, "inst: no memory for the full-mode filter: every access is recorded");
		return;
	}
	filt_shift = (unsigned)__builtin_ctz(line);
	filt_gshift = filt_shift - 3;
	filt_tab = m;
}

/* Full-mode waits (record/runtime/rt_writer.c; to be declared in rt.h). */

/* Full mode: wait for room in the ring, until it is half empty (waiting for
 * one slot at a time would wake the writer for every record).  A few yields
 * first (the writer is usually running, and a wake-up on another CPU comes
 * back within microseconds), then sleeps on the writer's progress word
 * (futex: the writer wakes us when the ring is half empty; 200 us timeout):
 * yielding in a loop took the CPU from the writer when the program has as
 * many threads as there are CPUs.  Not when nested in a push of this thread
 * (a signal handler of the program: the writer may be waiting for the slot
 * the interrupted push reserved) nor while the process ends. */
static __attribute__((noinline)) void full_wait(struct rt_thread *t, struct inst_tls *T, bool nested)
{
	if (nested || atomic_load(&rt_exiting))
		return;
	struct recring *r = &t->ring;
	if (recring_has_room(r, CT_REC_SAMPLE))
		return;
	T->stat[IS_WAITS]++;
	uint64_t t0 = rt_now(), last_move = t0;
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	rt_writer_poke();
	atomic_fetch_add(&rt_full_waiters, 1);
	for (unsigned i = 0;; i++) {
		/* the word before the look at the ring (seq_cst: the writer
		 * stores tail, then reads the waiters count) */
		uint32_t w = rt_writer_room_word();
		if (!(recring_used(r) > r->cap / 2 || !recring_has_room(r, CT_REC_SAMPLE)))
			break;
		if (atomic_load(&rt_exiting))
			break;
		if (i < 16) {
			sched_yield();
			continue;
		}
		rt_writer_wait_room(w, 200000);
		uint64_t now = rt_now(), nt = atomic_load_explicit(&r->tail, memory_order_relaxed);
		if (nt != tail) {
			tail = nt;
			last_move = now;
		} else if (now - last_move > 5000000000ull) {
			/* no progress for 5 s: the writer is gone; the record is lost
			 * (and counted), the program runs on */
			break;
		}
		if ((i & 15) == 0)
			rt_writer_poke();
	}
	atomic_fetch_sub(&rt_full_waiters, 1);
	T->stat[IS_WAIT_NS] += rt_now() - t0;
}

/* The slot of a load's ip in inst_tls.hold_ip. */
static inline unsigned hold_slot(uintptr_t ip)
{
	return (unsigned)(ip ^ ip >> 6) & (INST_HOLD_IPS - 1);
}

/* Commit the record this thread holds back, if any (full_publish), unless
 * the writer took it; its load's ip is held no longer (no store of the same
 * bytes followed).  Called with in_push set, not nested: a signal handler
 * that interrupts it then neither holds nor commits one. */
static inline void full_release(struct rt_thread *t, struct inst_tls *T)
{
	struct ct_record *h = T->held;
	if (h) {
		T->held = NULL;
		T->hold_ip[hold_slot(h->u.sample.ip)] = 0;
		if (recring_unhold(&t->ring, h))
			recring_commit(&t->ring, h);
	}
}

/* A ring slot for the next record (after the held one, committed now),
 * with in_push set; nested: in a push this signal handler interrupted. */
static inline __attribute__((always_inline)) struct ct_record *
full_reserve(struct rt_thread *t, struct inst_tls *T, bool nested)
{
	struct recring *r = &t->ring;
	if (!nested)
		full_release(t, T);
	/* one unit: SAMPLE, FUNC_ENTER and FUNC_EXIT records all fit */
	uint32_t fill;
	struct ct_record *rec = recring_reserve1_cached(r, &fill);
	if (__builtin_expect(!rec, 0)) {
		full_wait(t, T, nested);
		rec = recring_reserve_units(r, 1, &fill);
	}
	rt_poke_if(fill);
	return rec;
}

/* Fill a reserved SAMPLE slot (full_publish publishes it).  The time is
 * read here, after the slot was reserved (a wait for the writer would
 * otherwise sit between the timestamp and the access). */
static inline void full_put(struct ct_record *r, uint64_t time, uintptr_t addr, unsigned len,
                            unsigned kind, uintptr_t ip, unsigned flags)
{
	r->type = CT_REC_SAMPLE;
	r->thread = 0;
	r->time = time;
	r->u.sample.ip = ip;
	r->u.sample.addr = addr;
	r->u.sample.period = 1;
	r->u.sample.data_src = 0;
	r->u.sample.weight = 0;
	r->u.sample.cpu = inst_t.cpu;
	r->u.sample.len = (uint8_t)len;
	r->u.sample.kind = (uint8_t)kind;
	r->u.sample.flags = (uint8_t)flags;
}

/* What a plain hook saw: its 64-byte line's table word, whether it says
 * that the thread owns the line, and the granules the access adds (see
 * full_owned). */
struct filt_seen {
	uint64_t e, mine;
	bool owned;
};

/* The claim of a plain hook's line (filt_swap) from the word it saw.  When
 * that word says that the thread owns the line, the word with the new
 * granules is the one to swap in (key | mine | the old granules), and the
 * thread's last stamp the time, unless another thread changed the word
 * meanwhile. */
static inline __attribute__((always_inline)) uint64_t
filt_swap_seen(struct inst_tls *T, uintptr_t addr, unsigned kind,
               const struct filt_seen *seen)
{
	uint64_t line = addr >> 6, e = seen->e;
	bool store = kind != CT_ACCESS_LOAD;
	_Atomic uint64_t *slot = &filt_tab[line & FILT_MASK];
	if (seen->owned) {
		filt_lc_begin(T);
		if (atomic_compare_exchange_weak_explicit(slot, &e, filt_word_owned(T, e, seen->mine, store),
		                                          memory_order_relaxed, memory_order_relaxed)) {
			if (!store)
				filt_lc_note_owned(T, line, (unsigned)(seen->mine >> FILT_TOUCHED) & 0xff);
			filt_lc_end(T);
			return T->stamp;
		}
		filt_lc_end(T);
	}
	return filt_swap(T, slot, line, seen->mine, store, e);
}

/* The plain hook's load (seen) that full_publish will hold back, to a line
 * the thread owns: its record takes the thread's last stamp and no swap of
 * the table word.  The word the hook saw says that no other thread claimed
 * the line since that stamp (see the filter above); the store that takes
 * the record over sets the load's granule (full_merge_store), and if none
 * does, the granule is only recorded again (one swap less per load and
 * store pair, the usual `x += ...`). */
static inline bool full_held_owned(const struct inst_tls *T, const struct filt_seen *seen,
                                   unsigned kind, uintptr_t ip, bool nested)
{
	return seen && seen->owned && kind == CT_ACCESS_LOAD && !nested &&
	       T->hold_ip[hold_slot(ip)] == ip;
}

static inline __attribute__((always_inline)) void
full_fill(struct ct_record *r, uintptr_t addr, unsigned len, unsigned kind,
          uintptr_t ip, unsigned flags, const struct filt_seen *seen, bool nested)
{
	struct inst_tls *T = &inst_t;
	uint64_t time;
	if (full_held_owned(T, seen, kind, ip, nested))
		time = T->stamp;
	else if (seen)
		time = filt_swap_seen(T, addr, kind, seen);
	else
		/* a synchronization access counts as a read-modify-write for the
		 * filter: never left out, it ends every ownership of its line and
		 * starts none, so that the rule holds with or without such records
		 * (--sync exclude) */
		time = filt_stamp(T, addr, len, flags & CT_SAMPLE_SYNC ? CT_ACCESS_ATOMIC : kind);
	full_put(r, time, addr, len, kind, ip, flags);
}

/* Publish a filled SAMPLE record of this access, or hold it back (not
 * nested): a plain load within one 64-byte line of the filter, whose record
 * the store of the same bytes that may follow takes over
 * (full_merge_store), at an ip where that happened last time
 * (full_learn_hold).  The writer takes a held record itself when it
 * reaches it (recring_hold).  seen: a plain hook's access (full_fill),
 * which is such a load if it is a load. */
static inline __attribute__((always_inline)) void
full_publish(struct rt_thread *t, struct inst_tls *T, struct ct_record *r, bool nested,
             uintptr_t addr, unsigned len, unsigned kind, uintptr_t ip, unsigned flags,
             const struct filt_seen *seen)
{
	if (!nested && kind == CT_ACCESS_LOAD &&
	    (seen || (flags == CT_SAMPLE_EXACT && filt_tab && filt_shift == 6 && (addr & 63) + len <= 64))) {
		T->ld_addr = addr;
		T->ld_len = len;
		T->ld_ip = ip;
		if (T->hold_ip[hold_slot(ip)] == ip) {
			recring_hold(&t->ring, r);
			T->held = r;
			return;
		}
	}
	recring_commit(&t->ring, r);
}

/* A store recorded on its own: if it stores the bytes of the thread's last
 * recorded load, that load's ip is held back from now on (full_publish). */
static inline void full_learn_hold(struct inst_tls *T, uintptr_t addr, unsigned len)
{
	if (addr == T->ld_addr && len == T->ld_len)
		T->hold_ip[hold_slot(T->ld_ip)] = T->ld_ip;
}

/* A store of exactly the bytes of the load this thread holds back, to a
 * 64-byte line it owns (seen, full_owned): the load's record becomes the
 * store's, at the load's time and place in the stream (FORMAT.md,
 * "Filtered full traces", version 7).  Only while the load is the thread's
 * last reservation and the line still the thread's (the swap of the word
 * it saw fails if another thread claimed it since).  True when done. */
static inline bool full_merge_store(struct rt_thread *t, struct inst_tls *T, uintptr_t addr,
                                    unsigned len, uintptr_t ip, const struct filt_seen *seen)
{
	struct ct_record *h = T->held;
	if (h->u.sample.addr != addr || h->u.sample.len != len || !recring_is_last(&t->ring, h))
		return false;
	T->held = NULL;
	if (!recring_unhold(&t->ring, h))
		return false;                   /* the writer took it */
	uint64_t e = seen->e;
	if (!atomic_compare_exchange_strong_explicit(&filt_tab[(addr >> 6) & FILT_MASK], &e,
	                                             filt_word_owned(T, e, seen->mine, true),
	                                             memory_order_relaxed, memory_order_relaxed)) {
		recring_commit(&t->ring, h);
		return false;
	}
	h->u.sample.kind = CT_ACCESS_STORE;
	h->u.sample.ip = ip;
	recring_commit(&t->ring, h);
	T->stat[IS_MERGED]++;
	return true;
}

/* A SAMPLE record of an access the filter does not leave out (seen: see
 * full_fill). */
static inline __attribute__((always_inline)) void
full_record(struct rt_thread *t, struct inst_tls *T, uintptr_t addr, unsigned len, unsigned kind,
            uintptr_t ip, unsigned flags, const struct filt_seen *seen)
{
	bool nested = T->in_push;
	T->in_push = true;
	if (!nested && seen && seen->owned && kind == CT_ACCESS_STORE) {
		if (T->held && full_merge_store(t, T, addr, len, ip, seen)) {
			T->in_push = false;
			return;
		}
		full_learn_hold(T, addr, len);
	}
	struct ct_record *r = full_reserve(t, T, nested);
	if (r) {
		full_fill(r, addr, len, kind, ip, flags, seen, nested);
		full_publish(t, T, r, nested, addr, len, kind, ip, flags, seen);
	}
	T->in_push = nested;
}

static inline void full_sample(struct rt_thread *t, struct inst_tls *T, uintptr_t addr,
                               unsigned len, unsigned kind, uintptr_t ip, unsigned flags)
{
	if (!(flags & CT_SAMPLE_SYNC) && filt_skip(T, addr, len, kind)) {
		T->stat[IS_FILTERED]++;
		return;
	}
	if (!(flags & CT_SAMPLE_SYNC) && filt_tab && filt_reads_again(T, addr, len, kind))
		return;
	full_record(t, T, addr, len, kind, ip, flags, NULL);
}

static void full_func(struct rt_thread *t, struct inst_tls *T, unsigned type, uintptr_t addr)
{
	bool nested = T->in_push;
	T->in_push = true;
	struct ct_record *r = full_reserve(t, T, nested);
	if (!r) {
		T->in_push = nested;
		return;
	}
	r->type = (uint8_t)type;
	r->thread = 0;
	r->time = full_now(T);
	r->u.func.addr = addr;
	recring_commit(&t->ring, r);
	T->in_push = nested;
}

/* Sampled mode: one sample through the generic path (board, watchpoints). */
static void sample_one(struct rt_thread *t, uintptr_t addr, unsigned len, unsigned kind,
                       uintptr_t ip)
{
	rt_guard++;
	struct rt_sample_in s;
	memset(&s, 0, sizeof s);
	s.time = rt_now();
	s.ip = ip;
	s.period = inst_period;
	s.cpu = (uint32_t)sched_getcpu();
	s.acc.addr = addr;
	s.acc.len = (uint8_t)(len ? len : 1);
	s.acc.kind = (uint8_t)kind;
	s.extra_flags = CT_SAMPLE_EXACT;
	/* A synchronous watchpoint trap can not hit rt_sample (it touches no
	 * program data); the asynchronous fallback signal could: block it. */
	bool block = !rt_cfg.wp_soft && !rt_wp_sigtrap && t->nwp > 0;
	sigset_t old;
	if (block)
		rt_block_our_signals(&old);
	rt_sample(t, &s);
	if (block)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	rt_guard--;
}

/* Full mode: the accesses the countdown counted since the last record go to
 * done (every access is a record or left out: the countdown stays at 1). */
static inline void full_fold(struct inst_tls *T, int idx)
{
	T->done[idx] += (uint64_t)(T->refill[idx] - T->left[idx]);
	T->left[idx] = T->refill[idx] = 1;
}

/* A countdown that expired where nothing is recorded (no recording thread):
 * it does not expire again. */
static inline void countdown_off(struct inst_tls *T, int idx)
{
	T->left[idx] = T->refill[idx] = BIG;
}

/* Program code run by the runtime (a signal handler that interrupted it):
 * the access is not recorded, not counted. */
static inline void skip_unrecorded(struct inst_tls *T, int idx)
{
	T->done[idx] += (uint64_t)(T->refill[idx] - T->left[idx]) - 1;
	T->left[idx] = T->refill[idx] = 1;
	T->stat[IS_UNRECORDED]++;
}

/* The plain hooks' record of an access within one 64-byte line (below
 * FILT_ADDR_END), its table word last seen e, which says whether the
 * thread owns the line (owned; then mine: the granules new to its
 * ownership): hit_record and filt_stamp's case, with what the hook knows. */
static inline __attribute__((always_inline)) void
full_seen(uintptr_t addr, unsigned len, unsigned kind, uintptr_t ip, uint64_t e, uint64_t mine,
          bool owned)
{
	struct inst_tls *T = &inst_t;
	struct rt_thread *t = rec_thread(T);
	if (!t) {
		countdown_off(T, kind == CT_ACCESS_LOAD ? INST_LD : INST_ST);
		return;
	}
	/* (no full_fold: the hooks of filt_fast count down without a test, and
	 * counted() is right at any value of the countdown) */
	const struct filt_seen seen = { e, mine, owned };
	full_record(t, T, addr, len, kind, ip, CT_SAMPLE_EXACT, &seen);
}

/* full_seen of a line the thread owns. */
static __attribute__((noinline)) void full_owned(uintptr_t addr, unsigned len, unsigned kind,
                                                 uintptr_t ip, uint64_t e, uint64_t mine)
{
	full_seen(addr, len, kind, ip, e, mine, true);
}

/* full_seen of a line the thread claims, unless it only reads granules of
 * it that it holds a valid copy of (filt_reader_has; apart from the hooks,
 * whose owner's path it would lengthen). */
static __attribute__((noinline)) void full_claims(uintptr_t addr, unsigned len, unsigned kind,
                                                  uintptr_t ip, uint64_t e, uint64_t mine)
{
	struct inst_tls *T = &inst_t;
	if (kind == CT_ACCESS_LOAD &&
	    filt_reader_has(T, e, addr >> 6, (unsigned)(mine >> FILT_TOUCHED) & 0xff)) {
		filt_count_read(T);
		return;
	}
	full_seen(addr, len, kind, ip, e, mine, false);
}

/* The countdown expired: the access is recorded (or, see inst_hit, not). */
static __attribute__((noinline)) void hit_record(uintptr_t addr, unsigned len, unsigned kind,
                                                 int idx, uintptr_t ip)
{
	struct inst_tls *T = &inst_t;
	struct rt_thread *t = rec_thread(T);
	if (!t) {
		countdown_off(T, idx);
		return;
	}
	if (rt_guard) {
		skip_unrecorded(T, idx);
		return;
	}
	if (inst_full) {
		full_fold(T, idx);
		/* (inst_hit asked the filter) */
		full_record(t, T, addr, len, kind, ip, CT_SAMPLE_EXACT, NULL);
		if (inst_own_window)
			inst_owner_full_access(t, addr, len, kind);
		return;
	}
	if (!countdown_due(T, t, idx))
		return;
	sample_one(t, addr, len, kind, ip);
	inst_owner_sampled(t, addr, len, kind);
}

/* A store the filter left out, shown to the line monitor (it draws its
 * own samples among all stores). */
static __attribute__((noinline)) void left_out_to_monitor(struct inst_tls *T, uintptr_t addr,
                                                          unsigned len, unsigned kind)
{
	struct rt_thread *t = rec_thread(T);
	if (t)
		inst_owner_full_access(t, addr, len, kind);
}

void inst_hit(uintptr_t addr, unsigned len, unsigned kind, int idx, uintptr_t ip)
{
	struct inst_tls *T = &inst_t;
	if (inst_full && filt_tab && T->on && !rt_guard && filt_repeat(T, addr, len, kind)) {
		/* full mode's common case, apart and short (no frame): the filter
		 * leaves the access out.  The countdown, left below 0, counts it
		 * (counted(): refill - left grows by one per access; the next
		 * record folds it into done). */
		T->stat[IS_FILTERED]++;
		if (inst_own_window)
			left_out_to_monitor(T, addr, len, kind);
		return;
	}
	if (inst_full && filt_tab && T->on && !rt_guard && filt_reads_again(T, addr, len, kind))
		return;
	hit_record(addr, len, kind, idx, ip);
}

/* Full mode with the filter (inst_tls.filt_fast): a plain hook's access,
 * whose len and kind are constants.  The common case (the filter leaves the
 * access out) inline in the hook, with no call and no frame; an access
 * within one line goes straight to its record (full_owned, full_claims),
 * any other to inst_hit.  ip 0: the hook's return address, read only there (read
 * before, it took a register that the hook saved on the stack in every
 * mode). */
static inline __attribute__((always_inline)) void full_hot(uintptr_t addr, unsigned len,
                                                           unsigned kind, int idx, uintptr_t ip)
{
	struct inst_tls *T = &inst_t;
	uint64_t e;
	if (__builtin_expect(!rt_guard, 1) &&
	    (filt_in_granule(addr, len, 3) || (addr & 63) + len <= 64)) {
		if (filt_owns(T, addr, 6, &e)) {
			if (filt_has(e, addr, len, kind, 6, 3))
				T->stat[IS_FILTERED]++;
			else
				full_owned(addr, len, kind, ip ? ip : INST_RET() - 1, e,
				           filt_mine(addr, len, kind, 6, 3));
			return;
		}
		if (addr < FILT_ADDR_END) {
			full_claims(addr, len, kind, ip ? ip : INST_RET() - 1, e,
			            filt_mine(addr, len, kind, 6, 3));
			return;
		}
	}
	inst_hit(addr, len, kind, idx, ip ? ip : INST_RET() - 1);
}

/* A plain hook's access whose countdown expired (len and kind constants). */
static inline __attribute__((always_inline)) void hot_hit(uintptr_t addr, unsigned len,
                                                          unsigned kind, int idx, uintptr_t ip)
{
	if (inst_t.filt_fast)
		full_hot(addr, len, kind, idx, ip);
	else
		inst_hit(addr, len, kind, idx, ip);
}

void inst_sync_access(uintptr_t addr, unsigned len, unsigned kind, uintptr_t ip)
{
	struct inst_tls *T = &inst_t;
	struct rt_thread *t = rec_thread(T);
	if (!t)
		return;
	T->stat[IS_SYNC]++;
	full_sample(t, T, addr, len, kind, ip, CT_SAMPLE_EXACT | CT_SAMPLE_SYNC);
}

/* ---- software watchpoints ------------------------------------------------------- */

/* sampler_ops.watch: the thread's watched words or lines changed (rt_wp.c). */
static void inst_watch(struct rt_thread *t)
{
	struct inst_tls *T = &inst_t;
	map_clear(T);
	if (rt_cfg.wp_lines) {
		for (uint64_t m = t->wlines.live; m; m &= m - 1) {
			unsigned i = (unsigned)__builtin_ctzll(m);
			uintptr_t line = (uintptr_t)t->wlines.line[i];
			map_set(T, line, line + rt_cfg.line_size,
			        cd_lines_was_hit(&t->wlines, i) ? INST_WATCH_STORE : INST_WATCH_ANY);
		}
		return;
	}
	for (int i = 0; t->wp_armed && i < t->nwp; i++)
		if (t->wp_slot[i] >= 0)
			map_set(T, (uintptr_t)t->wp_addr[i], (uintptr_t)t->wp_addr[i] + CD_WORD_BYTES,
			        INST_WATCH_ANY);
}

/* The watch [addr, addr+len) touches, if any: a hit (which disarms it; a
 * line watch waits for the overwrite of its publication: cd_lines_hit). */
static void watch_check(struct rt_thread *t, uintptr_t addr, size_t len, unsigned kind,
                        uintptr_t ip)
{
	if (rt_cfg.wp_lines) {
		uint64_t lo;
		unsigned n;
		int slot = cd_lines_find(&t->wlines, rt_cfg.line_size, addr, len, &lo, &n);
		if (slot >= 0 &&
		    cd_lines_hit(&t->wlines, (unsigned)slot, lo, n, kind != CT_ACCESS_LOAD, false))
			rt_wp_line_hit(t, (unsigned)slot, lo, n, ip, kind);
		return;
	}
	for (int i = 0; t->wp_armed && i < t->nwp; i++) {
		uintptr_t w = (uintptr_t)t->wp_addr[i];
		if (t->wp_slot[i] >= 0 && addr < w + CD_WORD_BYTES && addr + len > w) {
			rt_wp_soft_hit(t, i, ip, kind);
			return;
		}
	}
}

__attribute__((noinline)) void inst_watch_hit(uintptr_t addr, size_t len, unsigned kind,
                                              uintptr_t ip)
{
	struct inst_tls *T = &inst_t;
	if (rt_guard || !T->w_any)
		return;                  /* program code run by the runtime; nothing watched */
	struct rt_thread *t = rec_thread(T);
	if (!t)
		return;
	rt_guard++;
	watch_check(t, addr, len, kind, ip);   /* a hit changes the watches: inst_watch */
	rt_guard--;
}

__attribute__((noinline)) void inst_watched_access(uintptr_t addr, unsigned len, unsigned kind,
                                                   int idx, uintptr_t ip)
{
	inst_watch_hit(addr, len, kind, ip);
	if (--inst_t.left[idx] <= 0)
		inst_hit(addr, len, kind, idx, ip);
}

/* The plain hooks' path for an access that may touch a monitored line
 * (inst_owner.c), then the rest of the hook. */
__attribute__((noinline)) void inst_owned_access(uintptr_t addr, unsigned len, unsigned kind,
                                                 int idx, uintptr_t ip)
{
	inst_owner_access(addr, len, kind, ip);
	if (INST_WATCHED(addr, kind))
		inst_watched_access(addr, len, kind, idx, ip);
	else if (--inst_t.left[idx] <= 0)
		inst_hit(addr, len, kind, idx, ip);
}

/* Atomics that read (loads, read-modify-writes): the record's time is taken
 * right after the operation, so that a load is never stamped before the
 * store it saw was made (the hook of a plain access runs before it).
 * inst_pre: the countdown expired; returns true if inst_post must follow
 * the operation (full mode: a ring slot is reserved now, before it). */
bool inst_pre(struct inst_pend *p, uintptr_t addr, unsigned len, unsigned kind, int idx,
              uintptr_t ip)
{
	struct inst_tls *T = &inst_t;
	struct rt_thread *t = rec_thread(T);
	if (!t) {
		countdown_off(T, idx);
		return false;
	}
	if (rt_guard) {
		skip_unrecorded(T, idx);
		return false;
	}
	p->t = t;
	p->addr = addr;
	p->ip = ip;
	p->len = (uint8_t)len;
	p->kind = (uint8_t)kind;
	if (inst_full) {
		full_fold(T, idx);
		p->nested = T->in_push;
		T->in_push = true;
		p->r = full_reserve(t, T, p->nested);
		if (!p->r) {
			T->in_push = p->nested;
			return false;
		}
		return true;
	}
	p->r = NULL;
	return countdown_due(T, t, idx);
}

void inst_post(struct inst_pend *p)
{
	if (p->r) {
		full_fill(p->r, p->addr, p->len, p->kind, p->ip, CT_SAMPLE_EXACT, NULL, p->nested);
		recring_commit(&p->t->ring, p->r);
		inst_t.in_push = p->nested;
		if (inst_own_window)
			inst_owner_full_access(p->t, p->addr, p->len, p->kind);
	} else {
		sample_one(p->t, p->addr, p->len, p->kind, p->ip);
		inst_owner_sampled(p->t, p->addr, p->len, p->kind);
	}
}

/* The lines of [addr, addr+n): the k-th (0-based) chunk. */
static inline void chunk(uintptr_t addr, size_t n, size_t k, uintptr_t *ca, unsigned *cl)
{
	uintptr_t line = rt_cfg.line_size ? rt_cfg.line_size : 64;
	if (line > 128)
		line = 128;          /* a record's len is at most 255 */
	uintptr_t first = addr & ~(line - 1);
	uintptr_t lo = first + k * line;
	uintptr_t hi = lo + line;
	if (lo < addr)
		lo = addr;
	if (hi > addr + n)
		hi = addr + n;
	*ca = lo;
	*cl = (unsigned)(hi - lo);
}

static inline size_t nchunks(uintptr_t addr, size_t n)
{
	uintptr_t line = rt_cfg.line_size ? rt_cfg.line_size : 64;
	if (line > 128)
		line = 128;
	return (size_t)(((addr + n - 1) & ~(line - 1)) - (addr & ~(line - 1))) / line + 1;
}

void inst_range(uintptr_t addr, size_t n, unsigned kind, uintptr_t ip)
{
	if (!n)
		return;
	struct inst_tls *T = &inst_t;
	if (__atomic_load_n(&inst_own_open, __ATOMIC_RELAXED))
		inst_owner_access(addr, n, kind, ip);
	if (T->w_any)
		inst_watch_hit(addr, n, kind, ip);
	struct rt_thread *t = rec_thread(T);
	if (!t || rt_guard)
		return;
	int idx = kind == CT_ACCESS_LOAD ? INST_LD : INST_ST;
	size_t lines = nchunks(addr, n);
	uintptr_t ca;
	unsigned cl;
	if (inst_full) {
		for (size_t k = 0; k < lines; k++) {
			chunk(addr, n, k, &ca, &cl);
			full_sample(t, T, ca, cl, kind, ip, CT_SAMPLE_EXACT);
			if (inst_own_window)
				inst_owner_full_access(t, ca, cl, kind);
		}
		T->done[idx] += lines;
		return;
	}
	/* sampled: each line is one access toward the period */
	size_t k = 0;
	while (lines - k >= (uint64_t)T->left[idx] && T->left[idx] > 0) {
		k += (size_t)T->left[idx];
		T->left[idx] = 0;
		if (!countdown_due(T, t, idx))
			continue;
		chunk(addr, n, k - 1, &ca, &cl);
		sample_one(t, ca, cl, kind, ip);
		inst_owner_sampled(t, ca, cl, kind);
	}
	T->left[idx] -= (int64_t)(lines - k);
}

/* ---- the plain access entry points ------------------------------------------------ */

#define HOT(...) HOT_(__VA_ARGS__)
#define HOT_PC(...) HOT_PC_(__VA_ARGS__)
/* Full mode with the filter (filt_fast: no line monitor, no watches) asks
 * the filter first; the countdown still counts the access (counted()). */
#define HOT_(name, len, kind, idx, extra)                                                    \
	RT_EXPORT void name(void *a)                                                           \
	{                                                                                      \
		extra;                                                                         \
		if (inst_t.filt_fast) {                                                        \
			inst_t.left[idx]--;                                                    \
			full_hot((uintptr_t)a, len, kind, idx, 0);                             \
		} else if (INST_OWNED(a, len))                                                 \
			inst_owned_access((uintptr_t)a, len, kind, idx, INST_RET() - 1);       \
		else if (INST_WATCHED(a, kind))                                                \
			inst_watched_access((uintptr_t)a, len, kind, idx, INST_RET() - 1);     \
		else if (__builtin_expect(--inst_t.left[idx] <= 0, 0))                         \
			inst_hit((uintptr_t)a, len, kind, idx, INST_RET() - 1);                \
	}
#define HOT_PC_(name, len, kind, idx)                                                        \
	RT_EXPORT void name(void *a, void *pc)                                                 \
	{                                                                                      \
		if (inst_t.filt_fast) {                                                        \
			inst_t.left[idx]--;                                                    \
			full_hot((uintptr_t)a, len, kind, idx, (uintptr_t)pc);                 \
		} else if (INST_OWNED(a, len))                                                 \
			inst_owned_access((uintptr_t)a, len, kind, idx, (uintptr_t)pc);        \
		else if (INST_WATCHED(a, kind))                                                \
			inst_watched_access((uintptr_t)a, len, kind, idx, (uintptr_t)pc);      \
		else if (__builtin_expect(--inst_t.left[idx] <= 0, 0))                         \
			inst_hit((uintptr_t)a, len, kind, idx, (uintptr_t)pc);                 \
	}
#define NOTHING ((void)0)
#define UNAL inst_t.stat[IS_UNALIGNED]++
#define VOL inst_t.stat[IS_VOLATILE]++
#define L CT_ACCESS_LOAD, INST_LD
#define S CT_ACCESS_STORE, INST_ST

HOT(__tsan_read1, 1, L, NOTHING)
HOT(__tsan_read2, 2, L, NOTHING)
HOT(__tsan_read4, 4, L, NOTHING)
HOT(__tsan_read8, 8, L, NOTHING)
HOT(__tsan_read16, 16, L, NOTHING)
HOT(__tsan_write1, 1, S, NOTHING)
HOT(__tsan_write2, 2, S, NOTHING)
HOT(__tsan_write4, 4, S, NOTHING)
HOT(__tsan_write8, 8, S, NOTHING)
HOT(__tsan_write16, 16, S, NOTHING)
/* clang's compound read-modify-write of plain memory: a store */
HOT(__tsan_read_write1, 1, S, NOTHING)
HOT(__tsan_read_write2, 2, S, NOTHING)
HOT(__tsan_read_write4, 4, S, NOTHING)
HOT(__tsan_read_write8, 8, S, NOTHING)
HOT(__tsan_read_write16, 16, S, NOTHING)
HOT(__tsan_unaligned_read2, 2, L, UNAL)
HOT(__tsan_unaligned_read4, 4, L, UNAL)
HOT(__tsan_unaligned_read8, 8, L, UNAL)
HOT(__tsan_unaligned_read16, 16, L, UNAL)
HOT(__tsan_unaligned_write2, 2, S, UNAL)
HOT(__tsan_unaligned_write4, 4, S, UNAL)
HOT(__tsan_unaligned_write8, 8, S, UNAL)
HOT(__tsan_unaligned_write16, 16, S, UNAL)
HOT(__tsan_unaligned_read_write2, 2, S, UNAL)
HOT(__tsan_unaligned_read_write4, 4, S, UNAL)
HOT(__tsan_unaligned_read_write8, 8, S, UNAL)
HOT(__tsan_unaligned_read_write16, 16, S, UNAL)
HOT(__tsan_volatile_read1, 1, L, VOL)
HOT(__tsan_volatile_read2, 2, L, VOL)
HOT(__tsan_volatile_read4, 4, L, VOL)
HOT(__tsan_volatile_read8, 8, L, VOL)
HOT(__tsan_volatile_read16, 16, L, VOL)
HOT(__tsan_volatile_write1, 1, S, VOL)
HOT(__tsan_volatile_write2, 2, S, VOL)
HOT(__tsan_volatile_write4, 4, S, VOL)
HOT(__tsan_volatile_write8, 8, S, VOL)
HOT(__tsan_volatile_write16, 16, S, VOL)
HOT(__tsan_unaligned_volatile_read2, 2, L, (UNAL, VOL))
HOT(__tsan_unaligned_volatile_read4, 4, L, (UNAL, VOL))
HOT(__tsan_unaligned_volatile_read8, 8, L, (UNAL, VOL))
HOT(__tsan_unaligned_volatile_read16, 16, L, (UNAL, VOL))
HOT(__tsan_unaligned_volatile_write2, 2, S, (UNAL, VOL))
HOT(__tsan_unaligned_volatile_write4, 4, S, (UNAL, VOL))
HOT(__tsan_unaligned_volatile_write8, 8, S, (UNAL, VOL))
HOT(__tsan_unaligned_volatile_write16, 16, S, (UNAL, VOL))
HOT_PC(__tsan_read1_pc, 1, L)
HOT_PC(__tsan_read2_pc, 2, L)
HOT_PC(__tsan_read4_pc, 4, L)
HOT_PC(__tsan_read8_pc, 8, L)
HOT_PC(__tsan_read16_pc, 16, L)
HOT_PC(__tsan_write1_pc, 1, S)
HOT_PC(__tsan_write2_pc, 2, S)
HOT_PC(__tsan_write4_pc, 4, S)
HOT_PC(__tsan_write8_pc, 8, S)
HOT_PC(__tsan_write16_pc, 16, S)

RT_EXPORT void __tsan_read_range(void *a, unsigned long size)
{
	inst_t.rd_addr = (uintptr_t)a;
	inst_t.rd_len = size;
	inst_t.stat[IS_RANGE_READ]++;
	inst_t.stat[IS_RANGE_READ_BYTES] += size;
	if (inst_thread_on())
		inst_range((uintptr_t)a, size, CT_ACCESS_LOAD, INST_RET() - 1);
}

RT_EXPORT void __tsan_write_range(void *a, unsigned long size)
{
	inst_t.wr_addr = (uintptr_t)a;
	inst_t.wr_len = size;
	inst_t.stat[IS_RANGE_WRITE]++;
	inst_t.stat[IS_RANGE_WRITE_BYTES] += size;
	if (inst_thread_on())
		inst_range((uintptr_t)a, size, CT_ACCESS_STORE, INST_RET() - 1);
}

RT_EXPORT void __tsan_read_range_pc(void *a, unsigned long size, void *pc)
{
	inst_t.stat[IS_RANGE_READ]++;
	inst_t.stat[IS_RANGE_READ_BYTES] += size;
	if (inst_thread_on())
		inst_range((uintptr_t)a, size, CT_ACCESS_LOAD, (uintptr_t)pc);
}

RT_EXPORT void __tsan_write_range_pc(void *a, unsigned long size, void *pc)
{
	inst_t.stat[IS_RANGE_WRITE]++;
	inst_t.stat[IS_RANGE_WRITE_BYTES] += size;
	if (inst_thread_on())
		inst_range((uintptr_t)a, size, CT_ACCESS_STORE, (uintptr_t)pc);
}

/* C++ virtual table pointer: an 8-byte store / load of the object's first word. */
RT_EXPORT void __tsan_vptr_update(void **p, void *new_val)
{
	(void)new_val;
	inst_t.stat[IS_VPTR]++;
	INST_OWN(p, sizeof *p, CT_ACCESS_STORE, INST_RET() - 1);
	INST_WATCH(p, sizeof *p, CT_ACCESS_STORE, INST_RET() - 1);
	if (__builtin_expect(--inst_t.left[INST_ST] <= 0, 0))
		hot_hit((uintptr_t)p, sizeof *p, CT_ACCESS_STORE, INST_ST, INST_RET() - 1);
}

RT_EXPORT void __tsan_vptr_read(void **p)
{
	inst_t.stat[IS_VPTR]++;
	INST_OWN(p, sizeof *p, CT_ACCESS_LOAD, INST_RET() - 1);
	INST_WATCH(p, sizeof *p, CT_ACCESS_LOAD, INST_RET() - 1);
	if (__builtin_expect(--inst_t.left[INST_LD] <= 0, 0))
		hot_hit((uintptr_t)p, sizeof *p, CT_ACCESS_LOAD, INST_LD, INST_RET() - 1);
}

/* ---- functions ---------------------------------------------------------------------- */

/* FUNC_ENTER.addr: an address inside the entered function (the return
 * address of its __tsan_func_entry call, minus one); FUNC_EXIT.addr: 0. */
RT_EXPORT void __tsan_func_entry(void *caller_pc)
{
	(void)caller_pc;
	struct inst_tls *T = &inst_t;
	T->stat[IS_FUNC_ENTER]++;
	if (inst_full && inst_funcs && T->on && !rt_guard) {
		struct rt_thread *t = rec_thread(T);
		if (t)
			full_func(t, T, CT_REC_FUNC_ENTER, INST_RET() - 1);
	}
}

RT_EXPORT void __tsan_func_exit(void)
{
	struct inst_tls *T = &inst_t;
	T->stat[IS_FUNC_EXIT]++;
	if (inst_full && inst_funcs && T->on && !rt_guard) {
		struct rt_thread *t = rec_thread(T);
		if (t)
			full_func(t, T, CT_REC_FUNC_EXIT, 0);
	}
}

/* Called by every instrumented module's constructor: nothing to do, the
 * runtime starts in its own constructor (COMMTRACE_SPOOL) or stays passive. */
RT_EXPORT void __tsan_init(void)
{
}

/* Other entry points an instrumented program may reference. */
RT_EXPORT void __tsan_ignore_thread_begin(void) { }
RT_EXPORT void __tsan_ignore_thread_end(void) { }

/* ---- the sampler -------------------------------------------------------------------- */

static int inst_process_init(void)
{
	const char *full = getenv(CT_ENV_FULL);
	inst_full = full && (!strcmp(full, "1") || !strcmp(full, "all"));
	const char *funcs = getenv("COMMTRACE_INST_FUNCS");
	inst_funcs = !(funcs && funcs[0] == '0');
	inst_period = inst_full ? 1 : rt_cfg.period;
	if (inst_period == 0)
		inst_period = 1;
	Dl_info di;
	inst_in_so = dladdr((void *)(uintptr_t)&inst_process_init, &di) && di.dli_fname &&
	             strstr(di.dli_fname, "libcommrec-inst") != NULL;
	if (inst_full) {
		/* no board, no watchpoints: every access is in the trace */
		rt_cfg.watchpoints = 0;
		if (!getenv(CT_ENV_RING_UNITS) && rt_cfg.ring_slots < INST_RING_UNITS_FULL) {
			rt_cfg.ring_slots = INST_RING_UNITS_FULL;
			rt_poke_mark = rt_cfg.ring_slots / 4;
		}
		clock_init();
		filt_init();
	}
	if (!inst_full && rt_cfg.wp_soft && rt_cfg.wp_lines && rt_cfg.watchpoints > 0)
		catch_up_every = INST_CATCH_UP;
	inst_owner_init();
	inst_mem_init();
	inst_sync_init();
	inst_omp_init();
	inst_active = true;
	rt_log(2, "inst: %s mode%s, period %llu, runtime %s", inst_full ? "full" : "sampled",
	       inst_full ? (inst_funcs ? " with functions" : " without functions") : "",
	       (unsigned long long)inst_period, inst_in_so ? "shared" : "static");
	return 0;
}

static int inst_thread_start(struct rt_thread *t)
{
	struct inst_tls *T = &inst_t;
	if (!inst_active)
		return -ENOSYS;
	memset(T->stat, 0, sizeof T->stat);
	T->done[0] = T->done[1] = 0;
	T->in_push = false;
	T->held = NULL;
	memset(T->hold_ip, 0, sizeof T->hold_ip);
	map_clear(T);
	T->filt_owner = t->index + 1 < FILT_OWNER_MAX ? t->index + 1 : 0;
	filt_lc_init(T);
	T->stamp = 0;
	for (int k = 0; k < 2; k++)
		countdown_draw(T, k);
	struct inst_tls *expect = NULL;
	atomic_compare_exchange_strong(&live[t->index % RT_MAX_THREADS], &expect, T);
	atomic_fetch_add(&g_threads, 1);
	T->on = true;
	/* (64-byte lines, the usual size: the hooks' shifts are constants) */
	T->filt_fast = filt_tab && T->filt_owner && !inst_own_window && filt_shift == 6;
	return 0;
}

static void inst_thread_stop(struct rt_thread *t, int self)
{
	/* Another thread (the writer at process end): t->stopped is set, the
	 * thread's own hooks notice it at their next call. */
	if (self)
		thread_off(&inst_t, t->index, true);
}

static int inst_on_signal(struct rt_thread *t, siginfo_t *si, void *uc)
{
	(void)t;
	(void)si;
	(void)uc;
	return 0;
}

const struct sampler_ops rt_sampler_inst = {
	.name = "inst",
	.process_init = inst_process_init,
	.thread_start = inst_thread_start,
	.thread_stop = inst_thread_stop,
	.on_signal = inst_on_signal,
	.watch = inst_watch,
};

/* ---- the counts: inst-PID.txt in the spool, and the log with -v -------------------- */

static void write_stats(void)
{
	uint64_t acc[2], st[IS_MAX];
	for (int k = 0; k < 2; k++)
		acc[k] = atomic_load(&g_acc[k]);
	for (int i = 0; i < IS_MAX; i++)
		st[i] = atomic_load(&g_stat[i]);
	/* threads still running: their counts so far (read without stopping them) */
	uint64_t running = 0;
	for (uint32_t i = 0; i < RT_MAX_THREADS; i++) {
		struct inst_tls *T = atomic_load(&live[i]);
		if (!T)
			continue;
		running++;
		for (int k = 0; k < 2; k++)
			acc[k] += counted(T, k);
		for (int j = 0; j < IS_MAX; j++)
			st[j] += T->stat[j];
	}
	char buf[4096];
	struct ct_kv kv;
	ct_kv_init(&kv, buf, sizeof buf);
	ct_kv_add(&kv, "inst.mode", "%s", inst_full ? "full" : "sampled");
	ct_kv_add(&kv, "inst.period", "%llu", (unsigned long long)inst_period);
	ct_kv_add(&kv, "inst.runtime", "%s", inst_in_so ? "shared" : "static");
	ct_kv_add(&kv, "inst.funcs", "%d", inst_full && inst_funcs);
	ct_kv_add(&kv, "inst.filter_line", "%u", filt_tab ? 1u << filt_shift : 0);
	ct_kv_add(&kv, "inst.clock", "%s", clk_tsc ? "tsc" : "monotonic");
	if (clk_tsc) {
		ct_kv_add(&kv, "inst.clock_ghz", "%.6f", clk_ghz);
		ct_kv_add(&kv, "inst.clock_recalibrations", "%llu",
		          (unsigned long long)atomic_load(&clk_recals));
		ct_kv_add(&kv, "inst.clock_max_offset_ns", "%llu",
		          (unsigned long long)atomic_load(&clk_max_err));
	}
	ct_kv_add(&kv, "inst.threads", "%llu", (unsigned long long)atomic_load(&g_threads));
	ct_kv_add(&kv, "inst.threads_running_at_exit", "%llu", (unsigned long long)running);
	ct_kv_add(&kv, "inst.loads", "%llu", (unsigned long long)acc[INST_LD]);
	ct_kv_add(&kv, "inst.stores", "%llu", (unsigned long long)acc[INST_ST]);
	for (int i = 0; i < IS_MAX; i++)
		ct_kv_add(&kv, stat_name[i], "%llu", (unsigned long long)st[i]);
	if (inst_own_window) {
		ct_kv_add(&kv, "inst.owner_left_out", "%llu", (unsigned long long)inst_owner_left_out());
		ct_kv_add(&kv, "inst.owner_lag_transfers", "%llu",
		          (unsigned long long)inst_owner_lag_transfers());
	}
	/* the names above have no prefix: add it in place */
	size_t len = kv.len < sizeof buf ? kv.len : sizeof buf - 1;
	char out[6144];
	size_t o = 0;
	for (size_t i = 0; i < len && o + 8 < sizeof out;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (buf + i)) + 1 : len - i;
		if (strncmp(buf + i, "inst.", 5)) {
			memcpy(out + o, "inst.", 5);
			o += 5;
		}
		if (o + l > sizeof out)
			break;
		memcpy(out + o, buf + i, l);
		o += l;
		i += l;
	}
	if (rt_cfg.verbose >= 2) {
		char line[512];
		snprintf(line, sizeof line,
		         "inst: %llu loads, %llu stores (%llu atomic, %llu memcpy/memmove/memset calls, "
		         "%llu range accesses), %llu function entries; full-mode waits %llu (%.3f s)",
		         (unsigned long long)acc[INST_LD], (unsigned long long)acc[INST_ST],
		         (unsigned long long)(st[IS_ATOMIC_LOAD] + st[IS_ATOMIC_STORE] +
		                              st[IS_ATOMIC_RMW] + st[IS_ATOMIC_CAS]),
		         (unsigned long long)(st[IS_MEMCPY] + st[IS_MEMMOVE] + st[IS_MEMSET]),
		         (unsigned long long)(st[IS_RANGE_READ] + st[IS_RANGE_WRITE]),
		         (unsigned long long)st[IS_FUNC_ENTER], (unsigned long long)st[IS_WAITS],
		         (double)st[IS_WAIT_NS] / 1e9);
		rt_log(2, "%s", line);
	}
	char path[4200];
	snprintf(path, sizeof path, "%s/inst-%d.txt", rt_cfg.spool, (int)rt_pid);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rt_log(1, "inst: cannot write %s: %s", path, strerror(errno));
		return;
	}
	ssize_t w = write(fd, out, o);
	(void)w;
	close(fd);
}

/* Before rt_fini (priority 101: destructors with larger numbers run first). */
__attribute__((destructor(102))) static void inst_fini(void)
{
	if (!inst_active || !atomic_load(&rt_active) || getpid() != rt_pid)
		return;
	rt_guard++;
	write_stats();
	rt_guard--;
}
