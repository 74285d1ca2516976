/* The line monitor: what the owner estimator needs from an inst-sampled
 * recording (commrec --owner-window J, COMMTRACE_OWNER_WINDOW; FORMAT.md,
 * "Line monitor").
 *
 * A sampled store opens a window on its line.  While a line has an open
 * window, every instrumented access to it (any thread) plays the exact
 * model's coherence state of that one line (analyze/model_exact.c): the
 * last writer, the holders of a valid copy, the bytes the writer wrote
 * since it became the writer.  A sampled store leaves that state known but
 * for the bytes its thread wrote before it in the same tenure as writer.
 * An access by a thread that holds no valid copy of a line another thread
 * wrote is a transfer, true sharing when its bytes overlap the writer's;
 * it is an OWNER_XFER record in the receiving thread's stream, with the
 * number of windows that hold it and the transfers those windows held
 * before it (the estimator's weight and variance, FORMAT.md).
 *
 * The lag: the window of the line's store number s holds the transfers
 * received after the line's store s + J and up to its store s + 2J - 1
 * (it closes at store s + 2J); the slot follows the line from s on.  A
 * transfer still has J stores whose sampling puts it in a window (those J
 * before the lag), so the volume's expectation is unchanged, and the bytes
 * are exact's whenever the writer's tenure began at most J stores before
 * the transfer (the slot saw it begin): in particular wherever the line
 * changes writer within J stores (a pipeline's buffer line, 8 stores a
 * visit).  A transfer from a longer tenure counts as false sharing only if
 * the bytes it receives were stored by the writer more than J of the
 * line's stores before it, and not since (FORMAT.md says so).  Without the
 * lag the first transfer of each window came from a tenure the window had
 * not seen begin, and was false sharing whenever the sampled store was not
 * the writer's store of the receiver's bytes (the pipeline kernel: 11.0%
 * false against exact's 0.0% on one execution).
 *
 * The lag's count: a transfer seen while windows are in their lag is not
 * recorded, but counted once for each of them (SUMMARY
 * inst.owner_lag_transfers).  Over the same windows its expectation equals
 * the recorded windows' where every transfer had 2J stores to its line
 * before it, and exceeds it where lines are stored fewer times (SPLASH-3
 * radix: 16 to 47 stores a line in all): the analysis warns then
 * (analyze/report.c, owner_lag_test).
 *
 * Memory is fixed: OWN_SLOTS lines (direct-mapped by line number), each with
 * at most OWN_WIN open windows.  A sampled store whose line's slot holds
 * another line, or whose line has OWN_WIN windows open, opens none: an
 * OWNER_WIN record says so (dropped), and the analysis reports how many.
 *
 * Sampling: a thread's countdowns (loads and stores, monitor or not) take
 * one access in each block of N of the kind, at a place drawn uniformly
 * afresh for every block (sample_gap_stratified, formats/board.h), not
 * every Nth: every access is then sampled with probability exactly 1/N,
 * which the estimate's expectation needs; every Nth store can fall on the
 * same place of the program's loop each time (a pipeline's 8 stores per
 * line and N = 1000: always the line's first store), and threads that run
 * the same loop sample in step.  One per block rather than independent
 * draws: the number of samples in any stretch of the run is fixed up to
 * one, which removes most of the volume's variance (emulate on one
 * false_sharing trace: 0.94-1.06 of exact's volume over 10 seeds with
 * independent draws, 0.995-1.004 with blocks).
 *
 * Full mode (commrec --full --owner-window J -c N): every access is
 * recorded and, besides, a countdown of the same draws (period N) opens
 * the windows: one execution holds both the exact model's ground truth
 * and the monitor's estimate of it (scripts/accuracy.sh compares them),
 * so that the monitor's error is measured apart from the differences
 * between executions.
 *
 * Cost: every instrumented access reads inst_own_open (0: nothing
 * monitored, one load and a branch); while some line is monitored, one
 * more load from inst_own_key (the slot of the access's line).  Only
 * accesses to a monitored line take the slot's spin lock (ours: never one
 * the program holds).  An access from a signal handler that interrupted
 * its own thread inside the slot's lock is left out (counted).  Threads
 * from index 64 on are not tracked as holders (their accesses are left
 * out, counted: SUMMARY inst.owner_left_out). */
#include "inst.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "rtconfig.h"

#define OWN_WIN 64               /* open windows per line */
#define OWN_SPINS 4096           /* lock attempts before yielding the cpu */
#define OWN_NO_WRITER UINT32_MAX

/* The access a monitor sees. */
struct own_acc {
	uintptr_t addr, ip;
	unsigned kind;
};

struct own_win {
	uint64_t first;          /* the line's store number that opened it */
	uint64_t nx;             /* active: the line's transfers when it became so */
};

struct own_slot {
	_Atomic uint32_t lock;   /* 0 free, else the holding thread's index + 1 */
	uint32_t writer;
	uint64_t hold;           /* holders among threads 0..63 */
	uint64_t wmask[2];       /* written bytes (lines up to 128 bytes) */
	uint64_t nst, nx;        /* stores and transfers since the slot opened */
	uint64_t sum_nx;         /* sum over the active windows of win.nx */
	uint64_t lag_xfers;      /* transfers x windows in their lag, all its lines (never reset) */
	uint32_t head, n;        /* the open windows: a ring, oldest first */
	uint32_t nact;           /* the first nact of them are active (past their lag) */
	struct own_win win[OWN_WIN];
};

RT_HIDDEN unsigned inst_own_open;
RT_HIDDEN unsigned inst_own_shift = 6;
RT_HIDDEN uint64_t inst_own_key[INST_OWN_SLOTS];
RT_HIDDEN uint64_t inst_own_window;          /* J; 0: no monitor */
static struct own_slot own_slot[INST_OWN_SLOTS];
static _Atomic uint64_t own_left_out;        /* accesses left out (see above) */

static RT_TLS uint64_t own_rng;          /* this thread's draws (xorshift64) */
static RT_TLS unsigned own_depth;        /* this thread is taking or holds a slot's lock */
static RT_TLS int64_t own_full_left;     /* full mode: stores to the next window, 0 not drawn */
static RT_TLS uint64_t own_full_rest;    /* full mode: its block state (sample_gap_stratified) */

/* A countdown to this thread's next sample of one kind (its block state
 * *block_rest): sample_gap_stratified with this thread's draws. */
static int64_t own_draw(uint64_t period, uint64_t *block_rest)
{
	uint64_t x = own_rng;
	if (!x)                       /* first draw: seeded by the thread's TLS address */
		x = (uint64_t)(uintptr_t)&own_rng * 0x9e3779b97f4a7c15ull | 1;
	x = board_random(&x);
	own_rng = x;
	return (int64_t)sample_gap_stratified(x, period, block_rest);
}

int64_t inst_owner_countdown(uint64_t *block_rest)
{
	if (inst_period < 2)
		return (int64_t)inst_period;
	return own_draw(inst_period, block_rest);
}

void inst_owner_full_access(struct rt_thread *t, uintptr_t addr, unsigned len, unsigned kind)
{
	if (kind == CT_ACCESS_LOAD || rt_cfg.period < 2)
		return;
	if (!own_full_left)
		own_full_left = own_draw(rt_cfg.period, &own_full_rest);
	if (--own_full_left > 0)
		return;
	own_full_left = own_draw(rt_cfg.period, &own_full_rest);
	inst_owner_sampled(t, addr, len, kind);
}

void inst_owner_init(void)
{
	const char *v = getenv(CT_ENV_OWNER_WINDOW);
	uint64_t j = v ? strtoull(v, NULL, 10) : 0;
	inst_own_window = j > CT_OWNER_WINDOW_MAX ? CT_OWNER_WINDOW_MAX : j;
	unsigned line = rt_cfg.line_size ? rt_cfg.line_size : 64;
	if (line > CT_OWNER_LINE_MAX)
		inst_own_window = 0;     /* the written mask holds 128 bytes (commrec refuses) */
	inst_own_shift = (unsigned)__builtin_ctz(line);
}

uint64_t inst_owner_left_out(void)
{
	return atomic_load_explicit(&own_left_out, memory_order_relaxed);
}

/* The slots' counts summed (a plain count per slot, under its lock: no
 * atomic shared by all threads on the monitored accesses' path). */
uint64_t inst_owner_lag_transfers(void)
{
	uint64_t n = 0;
	for (size_t i = 0; i < INST_OWN_SLOTS; i++)
		n += __atomic_load_n(&own_slot[i].lag_xfers, __ATOMIC_RELAXED);
	return n;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* The slot's lock for thread index me; false if this thread holds it
 * already, or is nested in a signal handler that interrupted it while it
 * took or held some slot's lock and the lock is not free at once (two
 * threads doing so on each other's slots would wait forever).  It is held
 * for one model step (~100 instructions): spin; yield the cpu only when the
 * holder seems preempted (a yield at every contention descheduled the
 * threads of a line under load, and they stopped communicating). */
static bool own_lock(struct own_slot *s, uint32_t me)
{
	bool nested = own_depth++ > 0;
	for (unsigned spins = 0;; spins++) {
		uint32_t cur = 0;
		if (atomic_compare_exchange_weak_explicit(&s->lock, &cur, me + 1, memory_order_acquire,
		                                          memory_order_relaxed))
			return true;
		if (cur == me + 1 || (nested && cur != 0)) {
			own_depth--;
			return false;
		}
		if (spins < OWN_SPINS)
			cpu_relax();
		else
			sched_yield();
	}
}

static void own_unlock(struct own_slot *s)
{
	atomic_store_explicit(&s->lock, 0, memory_order_release);
	own_depth--;
}

/* Bytes [off, off + len) of a line of at most 128 bytes, word w of its mask. */
static inline uint64_t mask_word(unsigned off, unsigned len, unsigned w)
{
	unsigned lo = w * 64, hi = lo + 64, a = off > lo ? off : lo, b = off + len < hi ? off + len : hi;
	if (a >= b)
		return 0;
	uint64_t m = b - a >= 64 ? ~0ull : (1ull << (b - a)) - 1;
	return m << (a - lo);
}

static inline void mask_set(uint64_t m[2], unsigned off, unsigned len)
{
	m[0] |= mask_word(off, len, 0);
	m[1] |= mask_word(off, len, 1);
}

static inline bool mask_overlap(const uint64_t m[2], unsigned off, unsigned len)
{
	return (m[0] & mask_word(off, len, 0)) | (m[1] & mask_word(off, len, 1));
}

static void push_record(struct rt_thread *t, struct ct_record *r)
{
	r->thread = t->index;
	r->time = rt_now();
	rt_push(t, r);
}

/* A transfer into the thread on the slot's line: its record (pushed once
 * the slot's lock is released). */
static void own_transfer(struct own_slot *s, const struct own_acc *a, unsigned off, unsigned len,
                         struct ct_record *r)
{
	*r = (struct ct_record){ .type = CT_REC_OWNER_XFER };
	r->u.oxfer = (struct ct_owner_xfer){
		.ip = a->ip, .addr = a->addr, .src = s->writer, .windows = s->nact,
		.prior = s->nact * s->nx - s->sum_nx,
		.len = (uint8_t)len, .kind = (uint8_t)a->kind,
		.flags = mask_overlap(s->wmask, off, len) ? CT_OWNER_TRUE : 0,
	};
	s->nx++;
}

/* The slot's windows whose lag the line's store number s->nst has ended
 * become active (they hold the transfers from now on); those it has closed
 * leave, and the slot is freed with its last one. */
static void own_advance(struct own_slot *s, size_t i)
{
	uint64_t j = inst_own_window;
	for (; s->nact < s->n; s->nact++) {
		struct own_win *w = &s->win[(s->head + s->nact) % OWN_WIN];
		if (w->first + j > s->nst)
			break;
		w->nx = s->nx;
		s->sum_nx += s->nx;
	}
	while (s->nact && s->win[s->head].first + 2 * j <= s->nst) {
		s->sum_nx -= s->win[s->head].nx;
		s->head = (s->head + 1) % OWN_WIN;
		s->n--;
		s->nact--;
	}
	if (!s->n) {
		__atomic_store_n(&inst_own_key[i], 0, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&inst_own_open, 1, __ATOMIC_RELAXED);
	}
}

/* One access of thread t to the monitored line of slot i: the exact model's
 * step (model_exact.c, piece).  True: a transfer, its record in *r. */
static bool own_step(struct rt_thread *t, struct own_slot *s, size_t i, const struct own_acc *a,
                     unsigned off, unsigned len, struct ct_record *r)
{
	uint32_t me = t->index;
	uint64_t bit = 1ull << me;
	bool xfer = s->writer != OWN_NO_WRITER && s->writer != me && !(s->hold & bit);
	if (xfer && s->n > s->nact)      /* windows in their lag: counted, not recorded */
		__atomic_store_n(&s->lag_xfers, s->lag_xfers + s->n - s->nact, __ATOMIC_RELAXED);
	if (xfer && !s->nact) {          /* in no window (all in their lag) */
		s->nx++;
		xfer = false;
	} else if (xfer)
		own_transfer(s, a, off, len, r);
	if (a->kind == CT_ACCESS_LOAD) {
		s->hold |= bit;
		return xfer;
	}
	if (s->writer != me)
		s->wmask[0] = s->wmask[1] = 0;
	mask_set(s->wmask, off, len);
	s->writer = me;
	s->hold = bit;
	s->nst++;
	own_advance(s, i);
	return xfer;
}

/* The piece [addr, addr + len) of access a on line ln, if that line is
 * monitored. */
static void own_piece(struct rt_thread *t, const struct own_acc *a, uint64_t ln, uintptr_t addr,
                      unsigned len)
{
	size_t i = ln & (INST_OWN_SLOTS - 1);
	if (__atomic_load_n(&inst_own_key[i], __ATOMIC_RELAXED) != ln + 1)
		return;
	struct own_slot *s = &own_slot[i];
	if (t->index >= 64 || !own_lock(s, t->index)) {
		atomic_fetch_add_explicit(&own_left_out, 1, memory_order_relaxed);
		return;
	}
	struct ct_record r;
	bool xfer = __atomic_load_n(&inst_own_key[i], __ATOMIC_RELAXED) == ln + 1 &&  /* still it */
	            own_step(t, s, i, a, (unsigned)(addr - (ln << inst_own_shift)), len, &r);
	own_unlock(s);
	/* the record out of the lock: the other threads' accesses to the line
	 * wait for the lock, and a longer hold makes them alternate more finely
	 * than they do unmonitored (more transfers in the windows than out) */
	if (xfer)
		push_record(t, &r);
}

void inst_owner_access(uintptr_t addr, size_t len, unsigned kind, uintptr_t ip)
{
	struct rt_thread *t = rt_self;
	if (!t || rt_guard || !inst_t.on)
		return;
	rt_guard++;
	struct own_acc a = { .addr = addr, .ip = ip, .kind = kind };
	uintptr_t line = (uintptr_t)1 << inst_own_shift;
	for (len = len ? len : 1; len; ) {      /* each line piece */
		size_t room = line - (addr & (line - 1));
		size_t n = len < room ? len : room;
		own_piece(t, &a, addr >> inst_own_shift, addr, (unsigned)n);
		len -= n;
		addr += n;
	}
	rt_guard--;
}

/* A new slot for line ln holding the state the store of thread me leaves. */
static void own_claim(struct own_slot *s, size_t i, uint64_t ln, uint32_t me, unsigned off,
                      unsigned len)
{
	s->writer = me;
	s->hold = 1ull << me;
	s->wmask[0] = s->wmask[1] = 0;
	mask_set(s->wmask, off, len);
	s->nst = 1;
	s->nx = s->sum_nx = 0;
	s->head = s->n = s->nact = 0;
	__atomic_fetch_add(&inst_own_open, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&inst_own_key[i], ln + 1, __ATOMIC_RELEASE);
}

/* A window for the sampled store of t at addr (its first line piece):
 * the slot's status (enum ct_owner_open). */
static uint8_t own_open(struct rt_thread *t, uintptr_t addr, unsigned len)
{
	uint64_t ln = addr >> inst_own_shift;
	unsigned off = (unsigned)(addr & (((uintptr_t)1 << inst_own_shift) - 1));
	unsigned room = (1u << inst_own_shift) - off;
	size_t i = ln & (INST_OWN_SLOTS - 1);
	struct own_slot *s = &own_slot[i];
	if (t->index >= 64 || !own_lock(s, t->index))
		return CT_OWNER_DROP_TABLE;
	uint8_t st = CT_OWNER_OPENED;
	uint64_t key = __atomic_load_n(&inst_own_key[i], __ATOMIC_RELAXED);
	if (!key)
		own_claim(s, i, ln, t->index, off, len < room ? len : room);
	else if (key != ln + 1)
		st = CT_OWNER_DROP_TABLE;
	else if (s->n == OWN_WIN)
		st = CT_OWNER_DROP_LINE;
	if (st == CT_OWNER_OPENED) {
		/* the store itself went through own_step already when the line
		 * was monitored: it is the slot's store number nst */
		s->win[(s->head + s->n) % OWN_WIN] = (struct own_win){ .first = s->nst };
		s->n++;
	}
	own_unlock(s);
	return st;
}

void inst_owner_sampled(struct rt_thread *t, uintptr_t addr, unsigned len, unsigned kind)
{
	if (!inst_own_window || kind == CT_ACCESS_LOAD)
		return;
	rt_guard++;
	struct ct_record r = { .type = CT_REC_OWNER_WIN };
	r.u.owin.addr = addr;
	r.u.owin.status = own_open(t, addr, len ? len : 1);
	push_record(t, &r);
	rt_guard--;
}
