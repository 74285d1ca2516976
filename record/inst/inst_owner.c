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
 * the writer's store of the receiver's bytes (the pipeline kernel: 10.8%
 * false against exact's 0.0% on one execution).
 *
 * Memory is fixed: OWN_SLOTS lines (direct-mapped by line number), each with
 * at most OWN_WIN open windows.  A sampled store whose line's slot holds
 * another line, or whose line has OWN_WIN windows open, opens none: an
 * OWNER_WIN record says so (dropped), and the analysis reports how many.
 *
 * Sampling: with the monitor on, a thread's store countdown is refilled
 * with a uniform draw from 1 to 2N - 1 (mean N), not N: every store is then
 * sampled with probability 1/N (a renewal process independent of the
 * program), which the estimate's expectation needs; every Nth store can
 * fall on the same place of the program's loop each time (a pipeline's
 * 8 stores per line and N = 1000: always the line's first store).
 *
 * Full mode (commrec --full --owner-window J -c N): every access is
 * recorded and, besides, a countdown of the same draws (period N) opens
 * the windows: one execution holds both the exact model's ground truth
 * and the monitor's estimate of it (scripts/accuracy.sh compares them),
 * so that the monitor's error is measured apart from the differences
 * between executions.
 *
 * Order without a lock.  An access to a monitored line takes its place in
 * the line's order with one atomic fetch-add on the slot's sequence and
 * writes itself into the slot's log at that place; the model's steps are
 * applied in that order by whichever thread finds the slot's applier flag
 * free (only ever tried, never waited for), which applies every entry
 * written so far, the others' too, and leaves each one's outcome in its
 * entry.  The access then waits until its own entry is applied, and
 * pushes its record (OWNER_XFER into its own stream).  Threads are thus
 * ordered by when they reach the line, not by who takes a lock next: the
 * slot lock this replaces made two threads that hammer a line alternate at
 * every access (each waiting one took the lock the moment it was released,
 * before its holder came back), so that inside windows the line changed
 * writer ~1.5x as often per store as outside (doc/accuracy.md).  A thread
 * has at most one entry in flight, so a log of OWN_LOG = 64 entries (the
 * tracked threads) is never overrun.  An access waits only for entries
 * before its own (a thread between its fetch-add and its write, a few
 * instructions, or one preempted there).
 *
 * Cost: every instrumented access reads inst_own_open (0: nothing
 * monitored, one load and a branch); while some line is monitored, one
 * more load from inst_own_key (the slot of the access's line).  Only
 * accesses to a monitored line take a place in its order.  An access from
 * a signal handler that interrupted its own thread inside the monitor is
 * left out (counted), as are those of threads from index 64 on (SUMMARY
 * inst.owner_left_out): their entries could wait on their own thread. */
#include "inst.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "rtconfig.h"

#define OWN_WIN 64               /* open windows per line */
#define OWN_LOG 256              /* a slot's log (entries not yet applied or harvested) */
#define OWN_PEND 16              /* a thread's entries whose outcome it has not taken */
#define OWN_SPINS 4096           /* waits for the log before yielding the cpu */
#define OWN_NO_WRITER UINT32_MAX

struct own_win {
	uint64_t first;          /* the line's store number that opened it */
	uint64_t nx;             /* active: the line's transfers when it became so */
};

/* What an entry asks the applier for. */
enum own_op {
	OWN_ACCESS,              /* a step of the model */
	OWN_OPEN,                /* a window for the sampled store (its step came before) */
	OWN_CLAIM,               /* the slot for the sampled store's line (the claimer won its key) */
};

/* An access in a slot's log, and its outcome. */
struct own_entry {
	_Atomic uint64_t tag;    /* its place in the order + 1, once written */
	uint64_t line;           /* line number + 1 */
	uint32_t thread;
	uint8_t op, kind, off, len;
	/* the applier's outcome */
	bool xfer;               /* a transfer: the fields below */
	uint8_t flags;           /* CT_OWNER_TRUE; OWNER_WIN: its status */
	uint32_t src, windows;
	uint64_t prior;
};

/* The exact model's state of the slot's line (the applier's alone). */
struct own_state {
	uint64_t line;           /* line number + 1, 0: the slot is free */
	uint32_t writer;
	uint64_t hold;           /* holders among threads 0..63 */
	uint64_t wmask[2];       /* written bytes (lines up to 128 bytes) */
	uint64_t nst, nx;        /* stores and transfers since the slot opened */
	uint64_t sum_nx;         /* sum over the active windows of win.nx */
	uint32_t head, n;        /* the open windows: a ring, oldest first */
	uint32_t nact;           /* the first nact of them are active (past their lag) */
	struct own_win win[OWN_WIN];
};

struct own_slot {
	_Alignas(64) _Atomic uint64_t seq;   /* places taken */
	_Alignas(64) _Atomic uint64_t applied; /* entries applied (the next one's place) */
	_Atomic uint32_t busy;               /* the applier's flag */
	struct own_state st;
	struct own_entry log[OWN_LOG];
};

RT_HIDDEN unsigned inst_own_open;
RT_HIDDEN unsigned inst_own_shift = 6;
RT_HIDDEN uint64_t inst_own_key[INST_OWN_SLOTS];
RT_HIDDEN uint64_t inst_own_window;          /* J; 0: no monitor */
static struct own_slot own_slot[INST_OWN_SLOTS];
static _Atomic uint64_t own_left_out;        /* accesses left out (see above) */

static RT_TLS uint64_t own_rng;          /* this thread's draws (xorshift64) */
static RT_TLS unsigned own_depth;        /* this thread is in a slot's order */
static RT_TLS int64_t own_full_left;     /* full mode: stores to the next window, 0 not drawn */

/* A thread's access whose outcome (a transfer record or none) it has not
 * taken yet: entry k of slot i. */
struct own_pend {
	uint64_t k;
	uintptr_t addr, ip;
	uint32_t slot;
};
static RT_TLS struct own_pend own_pend[OWN_PEND];   /* a ring, oldest first */
static RT_TLS unsigned own_pend_head, own_pend_n;

/* A store countdown uniform in 1..2 period - 1 (this thread's draws). */
static int64_t own_draw(uint64_t period)
{
	uint64_t x = own_rng;
	if (!x)                       /* first draw: seeded by the thread's TLS address */
		x = (uint64_t)(uintptr_t)&own_rng * 0x9e3779b97f4a7c15ull | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	own_rng = x;
	return (int64_t)(1 + x % (2 * period - 1));
}

int64_t inst_owner_countdown(int idx)
{
	if (!inst_own_window || idx != INST_ST || inst_period < 2)
		return (int64_t)inst_period;
	return own_draw(inst_period);
}

void inst_owner_full_access(struct rt_thread *t, uintptr_t addr, unsigned len, unsigned kind)
{
	if (kind == CT_ACCESS_LOAD || rt_cfg.period < 2)
		return;
	if (!own_full_left)
		own_full_left = own_draw(rt_cfg.period);
	if (--own_full_left > 0)
		return;
	own_full_left = own_draw(rt_cfg.period);
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

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
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

/* A transfer into entry e's thread on the state's line: its outcome. */
static void own_transfer(struct own_state *st, struct own_entry *e)
{
	e->xfer = true;
	e->src = st->writer;
	e->windows = st->nact;
	e->prior = st->nact * st->nx - st->sum_nx;
	e->flags = mask_overlap(st->wmask, e->off, e->len) ? CT_OWNER_TRUE : 0;
	st->nx++;
}

/* The state's windows whose lag the line's store number st->nst has ended
 * become active (they hold the transfers from now on); those it has closed
 * leave, and the slot i is freed with its last one. */
static void own_advance(struct own_state *st, size_t i)
{
	uint64_t j = inst_own_window;
	for (; st->nact < st->n; st->nact++) {
		struct own_win *w = &st->win[(st->head + st->nact) % OWN_WIN];
		if (w->first + j > st->nst)
			break;
		w->nx = st->nx;
		st->sum_nx += st->nx;
	}
	while (st->nact && st->win[st->head].first + 2 * j <= st->nst) {
		st->sum_nx -= st->win[st->head].nx;
		st->head = (st->head + 1) % OWN_WIN;
		st->n--;
		st->nact--;
	}
	if (!st->n) {
		st->line = 0;
		__atomic_store_n(&inst_own_key[i], 0, __ATOMIC_RELEASE);
		__atomic_fetch_sub(&inst_own_open, 1, __ATOMIC_RELAXED);
	}
}

/* One access of the state's line: the exact model's step (model_exact.c,
 * piece). */
static void own_step(struct own_state *st, size_t i, struct own_entry *e)
{
	uint64_t bit = 1ull << e->thread;
	if (st->writer != OWN_NO_WRITER && st->writer != e->thread && !(st->hold & bit)) {
		if (st->nact)
			own_transfer(st, e);
		else
			st->nx++;        /* in no window (all in their lag) */
	}
	if (e->kind == CT_ACCESS_LOAD) {
		st->hold |= bit;
		return;
	}
	if (st->writer != e->thread)
		st->wmask[0] = st->wmask[1] = 0;
	mask_set(st->wmask, e->off, e->len);
	st->writer = e->thread;
	st->hold = bit;
	st->nst++;
	own_advance(st, i);
}

/* A window for the sampled store of entry e, whose step came before it:
 * the line's store number st->nst. */
static uint8_t own_window(struct own_state *st)
{
	if (st->n == OWN_WIN)
		return CT_OWNER_DROP_LINE;
	st->win[(st->head + st->n) % OWN_WIN] = (struct own_win){ .first = st->nst };
	st->n++;
	return CT_OWNER_OPENED;
}

/* The state the sampled store of entry e leaves on its line (a new slot). */
static void own_claim(struct own_state *st, const struct own_entry *e)
{
	*st = (struct own_state){ .line = e->line, .writer = e->thread, .hold = 1ull << e->thread,
	                          .nst = 1 };
	mask_set(st->wmask, e->off, e->len);
	own_window(st);
}

/* Entry e applied to slot i's state.  An entry of a line the slot no
 * longer (or not yet) follows is an access to an unmonitored line. */
static void own_apply_one(struct own_state *st, size_t i, struct own_entry *e)
{
	e->xfer = false;
	e->flags = CT_OWNER_OPENED;
	if (e->op == OWN_CLAIM)
		own_claim(st, e);
	else if (st->line != e->line)
		e->flags = CT_OWNER_DROP_TABLE;   /* (an OPEN: the slot was freed) */
	else if (e->op == OWN_OPEN)
		e->flags = own_window(st);
	else
		own_step(st, i, e);
}

/* Every entry of slot i written so far, in order (the caller holds busy). */
static void own_apply(struct own_slot *s, size_t i)
{
	uint64_t k = atomic_load_explicit(&s->applied, memory_order_relaxed);
	for (;; k++) {
		struct own_entry *e = &s->log[k % OWN_LOG];
		if (atomic_load_explicit(&e->tag, memory_order_acquire) != k + 1)
			break;
		own_apply_one(&s->st, i, e);
		atomic_store_explicit(&s->applied, k + 1, memory_order_release);
	}
}

/* Slot i's written entries applied, unless another thread is applying
 * them (never waited for). */
static void own_try_apply(size_t i)
{
	struct own_slot *s = &own_slot[i];
	if (atomic_load_explicit(&s->busy, memory_order_relaxed) ||
	    atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
		return;
	own_apply(s, i);
	atomic_store_explicit(&s->busy, 0, memory_order_release);
}

/* Wait until slot i has applied its entries before number k, applying them
 * whenever no other thread is. */
static void own_wait(size_t i, uint64_t k)
{
	struct own_slot *s = &own_slot[i];
	for (unsigned spins = 0; atomic_load_explicit(&s->applied, memory_order_acquire) < k;
	     spins++) {
		own_try_apply(i);
		if (spins < OWN_SPINS)
			cpu_relax();
		else
			sched_yield();   /* an earlier entry's thread is preempted before writing it */
	}
}

/* Thread me's entry (op, line ln + 1, its access's kind and bytes) at place
 * k of slot i's order.  The place OWN_LOG before it must have been applied:
 * a harvest that finds its entry written over takes it as lost (the tag). */
static void own_write(size_t i, uint64_t k, enum own_op op, uint64_t ln, uint32_t me,
                      unsigned kind, unsigned off, unsigned len)
{
	struct own_entry *e = &own_slot[i].log[k % OWN_LOG];
	if (k >= OWN_LOG)
		own_wait(i, k - OWN_LOG + 1);
	atomic_store_explicit(&e->tag, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	e->line = ln + 1;
	e->thread = me;
	e->op = (uint8_t)op;
	e->kind = (uint8_t)kind;
	e->off = (uint8_t)off;
	e->len = (uint8_t)len;
	atomic_store_explicit(&e->tag, k + 1, memory_order_release);
}

/* The outcome of entry k of slot i, applied: false if it was written over
 * since (read as a seqlock: the tag before and after). */
static bool own_outcome(size_t i, uint64_t k, struct own_entry *out)
{
	struct own_entry *e = &own_slot[i].log[k % OWN_LOG];
	if (atomic_load_explicit(&e->tag, memory_order_acquire) != k + 1)
		return false;
	out->xfer = e->xfer;
	out->flags = e->flags;
	out->src = e->src;
	out->windows = e->windows;
	out->prior = e->prior;
	out->len = e->len;
	out->kind = e->kind;
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&e->tag, memory_order_relaxed) == k + 1;
}

/* Thread me's entry at a new place in slot i's order, applied, its outcome
 * in *out (a window's opening: rare, so waited for). */
static void own_submit(size_t i, enum own_op op, uint64_t ln, uint32_t me, unsigned kind,
                       unsigned off, unsigned len, struct own_entry *out)
{
	own_depth++;
	uint64_t k = atomic_fetch_add_explicit(&own_slot[i].seq, 1, memory_order_relaxed);
	own_write(i, k, op, ln, me, kind, off, len);
	own_wait(i, k + 1);
	if (!own_outcome(i, k, out))
		out->flags = CT_OWNER_DROP_TABLE;
	own_depth--;
}

/* This thread may take a place in an order: not nested in the monitor
 * (a signal handler that interrupted it there), tracked as a holder. */
static bool own_may_enter(const struct rt_thread *t)
{
	return t->index < 64 && !own_depth;
}

static void push_xfer(struct rt_thread *t, uintptr_t addr, uintptr_t ip, const struct own_entry *o)
{
	struct ct_record r = { .type = CT_REC_OWNER_XFER };
	r.u.oxfer = (struct ct_owner_xfer){
		.ip = ip, .addr = addr, .src = o->src, .windows = o->windows, .prior = o->prior,
		.len = o->len, .kind = o->kind, .flags = o->flags,
	};
	push_record(t, &r);
}

/* This thread's accesses whose entries have been applied, oldest first:
 * their transfer records (all of them: wait). */
static void own_harvest(struct rt_thread *t, bool all)
{
	for (; own_pend_n; own_pend_n--, own_pend_head = (own_pend_head + 1) % OWN_PEND) {
		const struct own_pend *p = &own_pend[own_pend_head];
		struct own_slot *s = &own_slot[p->slot];
		if (atomic_load_explicit(&s->applied, memory_order_acquire) <= p->k) {
			if (!all)
				return;
			own_wait(p->slot, p->k + 1);
		}
		struct own_entry o;
		if (!own_outcome(p->slot, p->k, &o))
			atomic_fetch_add_explicit(&own_left_out, 1, memory_order_relaxed);
		else if (o.xfer)
			push_xfer(t, p->addr, p->ip, &o);
	}
}

/* The piece [addr, addr + len) of an access on line ln, if that line is
 * monitored: its place in the line's order, not waited for. */
static void own_piece(struct rt_thread *t, uint64_t ln, uintptr_t addr, unsigned len,
                      unsigned kind, uintptr_t ip)
{
	size_t i = ln & (INST_OWN_SLOTS - 1);
	if (__atomic_load_n(&inst_own_key[i], __ATOMIC_RELAXED) != ln + 1)
		return;
	if (!own_may_enter(t)) {
		atomic_fetch_add_explicit(&own_left_out, 1, memory_order_relaxed);
		return;
	}
	own_depth++;
	if (own_pend_n == OWN_PEND) {   /* the oldest waited for, its outcome taken */
		own_wait(own_pend[own_pend_head].slot, own_pend[own_pend_head].k + 1);
		own_harvest(t, false);
	}
	uint64_t k = atomic_fetch_add_explicit(&own_slot[i].seq, 1, memory_order_relaxed);
	own_write(i, k, OWN_ACCESS, ln, t->index, kind, (unsigned)(addr - (ln << inst_own_shift)),
	          len);
	own_pend[(own_pend_head + own_pend_n++) % OWN_PEND] =
		(struct own_pend){ .k = k, .addr = addr, .ip = ip, .slot = (uint32_t)i };
	own_try_apply(i);
	own_harvest(t, false);
	own_depth--;
}

void inst_owner_access(uintptr_t addr, size_t len, unsigned kind, uintptr_t ip)
{
	struct rt_thread *t = rt_self;
	if (!t || rt_guard || !inst_t.on)
		return;
	rt_guard++;
	uintptr_t line = (uintptr_t)1 << inst_own_shift;
	for (len = len ? len : 1; len; ) {      /* each line piece */
		size_t room = line - (addr & (line - 1));
		size_t n = len < room ? len : room;
		own_piece(t, addr >> inst_own_shift, addr, (unsigned)n, kind, ip);
		len -= n;
		addr += n;
	}
	rt_guard--;
}

/* A window for the sampled store of t at addr (its first line piece):
 * the slot's status (enum ct_owner_open). */
static uint8_t own_open(struct rt_thread *t, uintptr_t addr, unsigned len)
{
	uint64_t ln = addr >> inst_own_shift;
	unsigned off = (unsigned)(addr & (((uintptr_t)1 << inst_own_shift) - 1));
	unsigned room = (1u << inst_own_shift) - off;
	size_t i = ln & (INST_OWN_SLOTS - 1);
	if (!own_may_enter(t))
		return CT_OWNER_DROP_TABLE;
	enum own_op op = OWN_OPEN;
	uint64_t key = __atomic_load_n(&inst_own_key[i], __ATOMIC_RELAXED);
	if (key != ln + 1) {
		if (key || !__atomic_compare_exchange_n(&inst_own_key[i], &key, ln + 1, false,
		                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return CT_OWNER_DROP_TABLE;
		__atomic_fetch_add(&inst_own_open, 1, __ATOMIC_RELAXED);
		op = OWN_CLAIM;
	}
	struct own_entry o;
	own_submit(i, op, ln, t->index, CT_ACCESS_STORE, off, len < room ? len : room, &o);
	return o.flags;
}

void inst_owner_sampled(struct rt_thread *t, uintptr_t addr, unsigned len, unsigned kind)
{
	if (!inst_own_window || kind == CT_ACCESS_LOAD)
		return;
	rt_guard++;
	if (own_pend_n && !own_depth) {
		own_depth++;
		own_harvest(t, true);
		own_depth--;
	}
	struct ct_record r = { .type = CT_REC_OWNER_WIN };
	r.u.owin.addr = addr;
	r.u.owin.status = own_open(t, addr, len ? len : 1);
	push_record(t, &r);
	rt_guard--;
}
