/* The exact model: an idealized coherence protocol over a full trace
 * (every access recorded).  Private caches of unlimited size, one per
 * thread; per line (setup->line_size bytes) the last writer, the set of
 * threads holding a valid copy, and the bytes the last writer has written
 * since it became the writer.
 *
 * For each access of thread T to line L (an access that spans lines is
 * split, one piece per line; an atomic counts as a store):
 *   - T holds no valid copy of L and L was last written by another thread
 *     W: a transfer W -> T (one event, row T, column W), true sharing when
 *     the bytes T accesses overlap the bytes W wrote since it became the
 *     writer, false sharing otherwise; weight = the record's period (1 in
 *     a full trace);
 *   - T holds no valid copy and nobody wrote L yet: a cold miss, not
 *     communication (no event);
 *   - then a load adds T to the holders; a store makes T the last writer
 *     and the only holder (the other copies are invalidated); the written
 *     bytes accumulate while T stays the writer and restart from this
 *     store's bytes when the writer changes.
 * A store by a thread that still holds a valid copy is an upgrade, not a
 * transfer (no data moves), even if another thread wrote the line last.
 *
 * Memory is proportional to the lines touched: an open-addressing hash
 * table from line number to a 32-byte state (plus 24 bytes, in a parallel
 * array, for the last store's address, ip, cpu and length); holders among threads 0..63
 * are a bit mask in the state, holders from thread 64 on use a bitset from
 * a pool, attached only to lines such a thread touched.  Lines above 64
 * bytes keep their written-bytes mask in a parallel array.
 *
 * The owner estimator (exact_owner_create, used by emulate --estimator
 * owner) runs the same states over every access but counts a transfer only
 * through the sampled accesses that stand for it.  With the window J
 * (--owner-window), a transfer x is stood for by the J accesses to its line
 * (loads and stores, by any thread) before the access that receives it,
 * or on a young line the last half of its accesses so far: A(x),
 * m_x = |A(x)| = min(J, ceil(k / 2)), k the line's accesses before x.  (J = 1 and
 * stores only would be x's owner, the store that invalidated the
 * receiver's copy.)  Each access s is sampled independently with
 * probability 1/P_s and weighs P_s, and x counts with weight sum over the
 * sampled s in A(x) of P_s / m_x, so
 *   E[estimate] = sum_x sum_{s in A(x)} (1/P_s) P_s / m_x = sum_x 1
 * = exact's count, and its true/false split is exact's (the same bytes
 * decide each x).  Per access, Z_s = sum of 1/m_x over the x whose A(x)
 * holds s; the estimate is sum_s I_s P_s Z_s with independent I_s, so its
 * variance is sum_s (P_s - 1) Z_s^2, estimated without bias by sum of
 * P_s (P_s - 1) Z_s^2 over the sampled accesses: a transfer adds to
 * comm_event.var what it adds to that sum (Z_s grows by 1/m for every
 * sampled s in the window: sum P (P - 1) (2 Z_s / m + 1 / m^2), Z_s =
 * c - c(s), c the line's running sum of 1/m).  The samplers that feed it
 * (emulate's, the inst recorder's) take one access in each block of P_s
 * (sample_gap_stratified), not independent ones: the same probability
 * 1/P_s, so the same expectation, and since every Z_s >= 0 a variance of
 * at most the independent one, which var (and so the intervals) keeps as a
 * bound.  Why a window: where a
 * thread touches a line many times between two transfers (bursts), only
 * the access just before a transfer would stand for it with J = 1; the
 * window lets any of the J accesses before it stand for it, at weight
 * P / J: with a steady rate r of transfers per access, Z_s ~ r and the
 * variance is ~ (P - 1) r^2 per access instead of (P - 1) r, r times less.
 * Why loads too: a line's loads are often far more than its stores (a
 * vector read by every thread, written by one), and each sampled one is
 * one more term of the sum: at most the line's sampled accesses stand for
 * its transfers, so the variance is at least ~ P T^2 / (its accesses).
 * Why half on a young line: with all k accesses (m_x = k), the line's
 * first access would stand for every transfer of its first J accesses,
 * Z_1 ~ r ln J: a line with fewer accesses than the period is then sampled
 * about once, at a weight up to P ln J, and the estimate's distribution has
 * a long tail (omp_reduce: one run in 25 at 1.9x exact's volume).  With
 * the last ceil(k / 2), the x whose window holds s have k < 2 s (young) or
 * are among the J after s (each 1 / J): Z_s <= 1/2 + 1 on s = 2, about
 * 2 ln 2 = 1.39 from there, and never more than OWNER_Z_MAX = 3/2 (every
 * access a transfer; checked numerically for J = 1 to 1000), so one sampled
 * access of weight P stands for at most 1.5 P transfers: the interval's
 * allowance for an unsampled one (comm_event.unit_max, interval.c).  The
 * variance there is ~ 1.2 (P - 1) r^2 per access, against 2 (P - 1) r^2
 * with m_x = k.
 * The emulate model's default J is 64 x its period (analysis.h).
 * Memory: 48 bytes per line, plus 32 bytes per sampled access while it is
 * among its line's last J accesses.
 *
 * Only SAMPLE records are used.  Allocation and free records do not reset
 * lines: memory reused by another thread after free() is a transfer, as it
 * is in the hardware. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model_common.h"

#define NO_THREAD UINT32_MAX
#define TABLE_MIN 4096
#define BIG_BYTES (4u << 20)     /* arrays from this size: mmap, huge pages */

/* What every access looks at (32 bytes)... */
struct xline {
	uint64_t key;            /* line number + 1; 0: empty slot */
	uint64_t hold;           /* holders among threads 0..63 */
	uint64_t wmask;          /* written bytes (lines of at most 64 bytes) */
	uint32_t writer;         /* NO_THREAD: never written */
	uint32_t ext;            /* holders >= 64: pool index + 1, 0 none */
};

/* ... what only stores and transfers do, in a parallel array ... */
struct xsrc {
	uint64_t waddr, wip;     /* the last writer's last store */
	uint32_t wcpu;
	uint8_t wlen;
};

/* ... and, for the owner estimator only, the window of the line's last J
 * accesses: its sampled accesses (a queue, oldest first), their weights'
 * sums, and the line's running sum of 1/m over its transfers (the top
 * comment). */
struct xown {
	uint64_t nacc;           /* the line's accesses so far */
	double a, b, d;          /* sums over the queue: P, P (P - 1), P (P - 1) c(store) */
	double c;                /* sum of 1/m over the line's transfers so far */
	uint32_t head, tail;     /* the queue: blocks of x->win, 0 none */
};

/* A sampled access in its line's window. */
struct xwin {
	uint64_t n;              /* its number among the line's accesses */
	double p, c;             /* its weight, c when it was made */
	uint32_t next;           /* the next younger one, 0 none */
};

/* Blocks of `unit` bytes, numbered from 1 (0: none), freed blocks reused. */
struct xpool {
	unsigned char *mem;
	size_t unit, n, cap;     /* n, cap: in blocks */
	uint32_t *freel;
	size_t nfree, free_cap;
};

struct exact {
	unsigned line_size, line_shift;
	size_t nthreads;
	struct event_consumer *out;
	size_t nout;
	struct xline *tab;
	struct xsrc *src;        /* parallel to tab */
	struct xown *own;        /* parallel to tab, the owner estimator only */
	size_t cap, used;        /* cap: power of two */
	unsigned cap_bits;
	unsigned mwords;         /* 64-bit words of a written mask (1 if line <= 64) */
	uint64_t *wide;          /* cap * mwords when mwords > 1 */
	unsigned xwords;         /* words of an extension bitset (threads 64..) */
	struct xpool ext;        /* extension bitsets */
	struct xpool win;        /* sampled accesses in their window (struct xwin) */
	uint64_t owner_window;   /* J: the owner estimator's window */
	double owner_pmax;       /* the largest weight of a sampled access so far */
	struct xcache {          /* per thread: its last two lines (a copy */
		uint64_t key[2]; /* loop reads one array, writes another) */
		size_t slot[2];
	} *tc;
	enum sync_kind sync;     /* --sync */
	bool oom;
};

static void exact_destroy(void *self);

/* Zeroed arrays; the large ones on their own mapping with transparent huge
 * pages (the table is accessed at random: fewer TLB misses). */
static void *big_calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	size_t bytes = n * size;
	if (bytes < BIG_BYTES)
		return calloc(n ? n : 1, size ? size : 1);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, bytes, MADV_HUGEPAGE);
#endif
	return p;
}

static void big_free(void *p, size_t n, size_t size)
{
	if (!p)
		return;
	if (n * size < BIG_BYTES)
		free(p);
	else
		munmap(p, n * size);
}

/* Groups of 8 consecutive lines hash together and keep their order, so
 * that a sweep through memory walks through the table. */
static inline size_t slot_hash(uint64_t key, unsigned bits)
{
	uint64_t g = ((key >> 3) * 0x9e3779b97f4a7c15ull) >> (64 - (bits - 3));
	return (size_t)(g << 3 | (key & 7));
}

static void *exact_create(const struct model_setup *s)
{
	struct exact *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	x->line_size = s->line_size ? s->line_size : 64;
	x->line_shift = log2u(x->line_size);
	x->line_size = 1u << x->line_shift;
	x->nthreads = s->nthreads;
	x->sync = s->opts ? s->opts->sync : SYNC_INCLUDE;
	x->out = s->out;
	x->nout = s->nout;
	x->mwords = x->line_size > 64 ? x->line_size / 64 : 1;
	x->xwords = s->nthreads > 64 ? (unsigned)((s->nthreads - 64 + 63) / 64) : 0;
	x->ext.unit = x->xwords * sizeof(uint64_t);
	x->cap = TABLE_MIN;
	x->cap_bits = log2u(TABLE_MIN);
	x->tab = big_calloc(x->cap, sizeof *x->tab);
	x->src = big_calloc(x->cap, sizeof *x->src);
	if (x->mwords > 1)
		x->wide = big_calloc(x->cap * x->mwords, sizeof *x->wide);
	x->tc = calloc(s->nthreads ? s->nthreads : 1, sizeof *x->tc);
	if (!x->tab || !x->src || (x->mwords > 1 && !x->wide) || !x->tc) {
		exact_destroy(x);
		return NULL;
	}
	return x;
}

void *exact_owner_create(const struct model_setup *s)
{
	struct exact *x = exact_create(s);
	if (!x)
		return NULL;
	unsigned j = s->opts ? s->opts->owner_window : 0;
	x->owner_window = j ? j : 1;     /* (the emulate model sets its default) */
	x->win.unit = sizeof(struct xwin);
	if (!(x->own = big_calloc(x->cap, sizeof *x->own))) {
		exact_destroy(x);
		return NULL;
	}
	return x;
}

static int grow(struct exact *x)
{
	size_t ncap = x->cap * 2;
	unsigned nbits = x->cap_bits + 1;
	struct xline *nt = big_calloc(ncap, sizeof *nt);
	struct xsrc *ns = big_calloc(ncap, sizeof *ns);
	uint64_t *nw = x->mwords > 1 ? big_calloc(ncap * x->mwords, sizeof *nw) : NULL;
	struct xown *no = x->own ? big_calloc(ncap, sizeof *no) : NULL;
	if (!nt || !ns || (x->mwords > 1 && !nw) || (x->own && !no)) {
		big_free(nt, ncap, sizeof *nt);
		big_free(ns, ncap, sizeof *ns);
		big_free(nw, ncap * x->mwords, sizeof *nw);
		big_free(no, ncap, sizeof *no);
		return -1;
	}
	for (size_t i = 0; i < x->cap; i++) {
		if (!x->tab[i].key)
			continue;
		size_t j = slot_hash(x->tab[i].key, nbits);
		while (nt[j].key)
			j = (j + 1) & (ncap - 1);
		nt[j] = x->tab[i];
		ns[j] = x->src[i];
		if (no)
			no[j] = x->own[i];
		if (nw)
			memcpy(nw + j * x->mwords, x->wide + i * x->mwords, x->mwords * sizeof *nw);
	}
	big_free(x->tab, x->cap, sizeof *x->tab);
	big_free(x->src, x->cap, sizeof *x->src);
	big_free(x->wide, x->cap * x->mwords, sizeof *x->wide);
	big_free(x->own, x->cap, sizeof *x->own);
	x->own = no;
	x->tab = nt;
	x->src = ns;
	x->wide = nw;
	x->cap = ncap;
	x->cap_bits = nbits;
	memset(x->tc, 0, (x->nthreads ? x->nthreads : 1) * sizeof *x->tc);
	return 0;
}

/* lookup() past thread t's last lines: the line of key ln + 1 in the
 * table, which becomes t's last. */
static __attribute__((noinline)) struct xline *lookup_table(struct exact *x, uint32_t t,
                                                              uint64_t key, bool *fresh,
                                                              size_t *slot)
{
	struct xcache *c = &x->tc[t];
	size_t i = slot_hash(key, x->cap_bits);
	while (x->tab[i].key && x->tab[i].key != key)
		i = (i + 1) & (x->cap - 1);
	if (!x->tab[i].key) {
		if ((x->used + 1) * 8 > x->cap * 5) {     /* load factor 5/8 */
			if (grow(x))
				return NULL;
			i = slot_hash(key, x->cap_bits);
			while (x->tab[i].key)
				i = (i + 1) & (x->cap - 1);
		}
		struct xline *l = &x->tab[i];
		memset(l, 0, sizeof *l);
		l->key = key;
		l->writer = NO_THREAD;
		x->used++;
		*fresh = true;
	}
	c->key[1] = c->key[0];
	c->slot[1] = c->slot[0];
	c->key[0] = key;
	c->slot[0] = i;
	*slot = i;
	return &x->tab[i];
}

/* The state of line number ln, created (never written, no holders) if new;
 * *fresh says so.  NULL when out of memory.  Thread t's last two lines
 * inline, the table in lookup_table. */
static inline struct xline *lookup(struct exact *x, uint32_t t, uint64_t ln, bool *fresh,
                                   size_t *slot)
{
	uint64_t key = ln + 1;
	const struct xcache *c = &x->tc[t];
	*fresh = false;
	if (key == c->key[0] || key == c->key[1]) {
		*slot = c->slot[key != c->key[0]];
		return &x->tab[*slot];
	}
	return lookup_table(x, t, key, fresh, slot);
}

/* ---- holders ------------------------------------------------------------ */

static void *pool_at(const struct xpool *p, uint32_t id)
{
	return p->mem + (size_t)(id - 1) * p->unit;
}

/* A zeroed block: its number, 0 when out of memory. */
static uint32_t pool_alloc(struct xpool *p)
{
	uint32_t idx;
	if (p->nfree) {
		idx = p->freel[--p->nfree];
	} else {
		if (p->n == p->cap) {
			size_t nc = p->cap ? p->cap * 2 : 1024;
			if (nc > UINT32_MAX - 1)
				return 0;
			unsigned char *nm = realloc(p->mem, nc * p->unit);
			if (!nm)
				return 0;
			p->mem = nm;
			p->cap = nc;
		}
		idx = (uint32_t)p->n++;
	}
	memset(p->mem + (size_t)idx * p->unit, 0, p->unit);
	return idx + 1;
}

static void pool_release(struct xpool *p, uint32_t id)
{
	if (p->nfree == p->free_cap) {
		size_t nc = p->free_cap ? p->free_cap * 2 : 256;
		uint32_t *nf = realloc(p->freel, nc * sizeof *nf);
		if (!nf)                 /* leak the block rather than fail */
			return;
		p->freel = nf;
		p->free_cap = nc;
	}
	p->freel[p->nfree++] = id - 1;
}

static void pool_free(struct xpool *p)
{
	free(p->mem);
	free(p->freel);
}

static uint64_t *ext_words(struct exact *x, const struct xline *l)
{
	return l->ext ? pool_at(&x->ext, l->ext) : NULL;
}

static void ext_release(struct exact *x, struct xline *l)
{
	if (l->ext)
		pool_release(&x->ext, l->ext);
	l->ext = 0;
}

static inline bool holds(struct exact *x, const struct xline *l, uint32_t t)
{
	if (t < 64)
		return (l->hold >> t) & 1;
	const uint64_t *w = ext_words(x, l);
	t -= 64;
	return w && ((w[t / 64] >> (t % 64)) & 1);
}

/* Thread t >= 64 into the line's extension bitset. */
static void add_wide_holder(struct exact *x, struct xline *l, uint32_t t)
{
	if (!l->ext && !(l->ext = pool_alloc(&x->ext))) {
		x->oom = true;
		return;
	}
	t -= 64;
	ext_words(x, l)[t / 64] |= 1ull << (t % 64);
}

static inline void add_holder(struct exact *x, struct xline *l, uint32_t t)
{
	if (t < 64)
		l->hold |= 1ull << t;
	else
		add_wide_holder(x, l, t);
}

static inline void sole_holder(struct exact *x, struct xline *l, uint32_t t)
{
	l->hold = 0;
	if (__builtin_expect(l->ext != 0, 0)) {
		if (t >= 64)
			memset(ext_words(x, l), 0, x->ext.unit);
		else
			ext_release(x, l);
	}
	add_holder(x, l, t);
}

/* ---- written bytes ------------------------------------------------------ */

/* Bytes [off, off+len) of a line of at most 64 bytes as a mask. */
static inline uint64_t byte_mask(unsigned off, unsigned len)
{
	uint64_t m = len >= 64 ? ~0ull : (1ull << len) - 1;
	return m << off;
}

static bool wide_overlap(const uint64_t *m, unsigned off, unsigned len)
{
	for (unsigned b = off; b < off + len; ) {
		unsigned w = b / 64, o = b % 64, n = 64 - o;
		if (n > off + len - b)
			n = off + len - b;
		if (m[w] & byte_mask(o, n))
			return true;
		b += n;
	}
	return false;
}

static void wide_set(uint64_t *m, unsigned off, unsigned len)
{
	for (unsigned b = off; b < off + len; ) {
		unsigned w = b / 64, o = b % 64, n = 64 - o;
		if (n > off + len - b)
			n = off + len - b;
		m[w] |= byte_mask(o, n);
		b += n;
	}
}

/* ---- accesses ----------------------------------------------------------- */

/* The largest Z_s, whatever the transfers (the top comment): a sampled
 * access of weight P stands for at most OWNER_Z_MAX x P transfers. */
#define OWNER_Z_MAX 1.5

/* The size of the window of a transfer received by the access that
 * follows a line's first k accesses: the last ceil(k / 2) of them, at most
 * J (the top comment). */
static inline uint64_t owner_span(uint64_t k, uint64_t j)
{
	uint64_t half = k - k / 2;
	return half < j ? half : j;
}

/* The weight and variance part of a transfer on the line in slot: the
 * receiver's weight, or the owner estimator's (false: its owner was not
 * sampled, no event). */
static bool transfer_weight(struct exact *x, size_t slot, double weight, struct comm_event *ev)
{
	if (!x->own) {
		ev->weight = weight;
		ev->var = sampled_var(weight);
		ev->unit_max = weight;
		return true;
	}
	struct xown *o = &x->own[slot];
	if (!o->head)
		return false;
	/* each sampled access s of the window: Z_s += 1/m, so sum P (P - 1) Z_s^2
	 * grows by sum P (P - 1) (2 Z_s / m + 1 / m^2), Z_s = c - c(s) */
	double m = (double)owner_span(o->nacc, x->owner_window);
	ev->weight = o->a / m;
	ev->unit_max = OWNER_Z_MAX * x->owner_pmax;
	ev->var = (2 * (o->b * o->c - o->d) / m + o->b / (m * m));
	if (ev->var < 0)
		ev->var = 0;             /* rounding */
	o->c += 1 / m;
	ev->via = COMM_VIA_SAMPLE;
	return true;
}

/* An access to the line in slot enters its owner window (weight p:
 * sampled with probability 1/p; 0 not sampled); the accesses the next
 * transfer's window no longer holds leave. */
static void owner_enter(struct exact *x, size_t slot, double p)
{
	struct xown *o = &x->own[slot];
	o->nacc++;
	while (o->head) {                     /* the access J before this one leaves */
		struct xwin *w = pool_at(&x->win, o->head);
		if (w->n + owner_span(o->nacc, x->owner_window) > o->nacc)
			break;
		double q = w->p * (w->p - 1);
		o->a -= w->p;
		o->b -= q;
		o->d -= q * w->c;
		uint32_t next = w->next;
		pool_release(&x->win, o->head);
		o->head = next;
	}
	if (!o->head) {                       /* an empty window: its sums restart from 0 */
		o->tail = 0;
		o->a = o->b = o->d = o->c = 0;
	}
	if (!(p > 0))
		return;
	if (p > x->owner_pmax)
		x->owner_pmax = p;
	uint32_t id = pool_alloc(&x->win);
	if (!id) {
		x->oom = true;
		return;
	}
	struct xwin *w = pool_at(&x->win, id);
	*w = (struct xwin){ .n = o->nacc, .p = p, .c = o->c };
	if (o->tail)
		((struct xwin *)pool_at(&x->win, o->tail))->next = id;
	else
		o->head = id;
	o->tail = id;
	double q = p * (p - 1);
	o->a += p;
	o->b += q;
	o->d += q * o->c;
}

/* One access of r to one line; its period: the receiver's weight (exact,
 * 0 as 1), owner_w: this access's weight in its line's owner window (the
 * owner estimator).  plain (a constant where it is true): x has no owner
 * windows and lines of at most 64 bytes, so that their code drops out. */
static inline __attribute__((always_inline)) void
piece(struct exact *x, const struct ct_record *r, uint64_t addr, unsigned len, uint64_t period,
      double owner_w, bool plain)
{
	const struct ct_sample *s = &r->u.sample;
	uint32_t t = r->thread;
	uint64_t ln = addr >> x->line_shift;
	unsigned off = (unsigned)(addr & (x->line_size - 1));
	bool fresh;
	size_t slot;
	struct xline *l = lookup(x, t, ln, &fresh, &slot);
	if (!l) {
		x->oom = true;
		return;
	}
	uint64_t *wide = !plain && x->mwords > 1 ? x->wide + slot * x->mwords : NULL;
	if (!fresh && l->writer != NO_THREAD && l->writer != t && !holds(x, l, t)) {
		bool tr = wide ? wide_overlap(wide, off, len) : (l->wmask & byte_mask(off, len)) != 0;
		const struct xsrc *w = &x->src[slot];
		struct comm_event ev = {
			.time = r->time, .dst = t, .src = l->writer,
			.dst_cpu = s->cpu, .src_cpu = w->wcpu,
			.line = ln << x->line_shift,
			.addr = addr, .src_addr = w->waddr, .len = (uint8_t)len, .src_len = w->wlen,
			.dst_kind = s->kind, .via = COMM_VIA_EXACT, .true_sharing = tr,
			.ip = s->ip, .src_ip = w->wip,
		};
		if (transfer_weight(x, slot, period ? (double)period : 1.0, &ev))
			emit(x->out, x->nout, &ev);
	}
	if (!plain && x->own)
		owner_enter(x, slot, owner_w);
	if (s->kind == CT_ACCESS_LOAD) {
		add_holder(x, l, t);
		return;
	}
	if (l->writer != t) {
		l->wmask = 0;
		if (wide)
			memset(wide, 0, x->mwords * sizeof *wide);
	}
	if (wide)
		wide_set(wide, off, len);
	else
		l->wmask |= byte_mask(off, len);
	l->writer = t;
	x->src[slot] = (struct xsrc){ .waddr = addr, .wip = s->ip, .wcpu = s->cpu,
	                              .wlen = (uint8_t)len };
	sole_holder(x, l, t);
}

/* An access over more than one line: a piece per line. */
static __attribute__((noinline)) void access_lines(struct exact *x, const struct ct_record *r,
                                                   double owner_w)
{
	const struct ct_sample *s = &r->u.sample;
	uint64_t addr = s->addr;
	unsigned len = s->len;
	while (len) {
		unsigned room = x->line_size - (unsigned)(addr & (x->line_size - 1));
		unsigned n = len < room ? len : room;
		piece(x, r, addr, n, s->period, owner_w, false);
		len -= n;
		addr += n;
		if (!addr)               /* wrapped past the top of the address space */
			break;
	}
}

/* Sample r's access, a piece per line (inlined in the record loop; plain:
 * piece). */
static inline __attribute__((always_inline)) void
access_pieces(struct exact *x, const struct ct_record *r, double owner_w, bool plain)
{
	if (r->type != CT_REC_SAMPLE || r->thread >= x->nthreads)
		return;
	const struct ct_sample *s = &r->u.sample;
	unsigned len = s->len ? s->len : 1;
	if (len <= x->line_size - (s->addr & (x->line_size - 1)))   /* one line: the usual */
		piece(x, r, s->addr, len, s->period, owner_w, plain);
	else
		access_lines(x, r, owner_w);
}

static inline __attribute__((always_inline)) void
exact_record(void *self, const struct ct_record *r)
{
	const struct exact *x = self;
	if (x->sync != SYNC_INCLUDE && r->type == CT_REC_SAMPLE &&
	    !(r->u.sample.flags & CT_SAMPLE_SYNC) != (x->sync == SYNC_EXCLUDE))
		return;
	access_pieces(self, r, 0, false);
}

void exact_owner_access(void *exact, const struct ct_record *r, double owner_weight)
{
	access_pieces(exact, r, owner_weight, false);
}

static void exact_finish(void *self)
{
	struct exact *x = self;
	if (x->oom)
		ana_warn("exact model: out of memory: some lines or holders were not tracked, "
		         "the matrices are incomplete");
}

static void exact_destroy(void *self)
{
	struct exact *x = self;
	if (!x)
		return;
	big_free(x->tab, x->cap, sizeof *x->tab);
	big_free(x->src, x->cap, sizeof *x->src);
	big_free(x->wide, x->cap * x->mwords, sizeof *x->wide);
	big_free(x->own, x->cap, sizeof *x->own);
	pool_free(&x->ext);
	pool_free(&x->win);
	free(x->tc);
	free(x);
}

/* A block of records; in the usual case (no owner windows, lines of at
 * most 64 bytes, --sync include) through a loop where that is constant. */
static void exact_records(void *self, const struct ct_record *r, size_t n)
{
	struct exact *x = self;
	if (!x->own && x->mwords == 1 && x->sync == SYNC_INCLUDE) {
		for (size_t i = 0; i < n; i++)
			access_pieces(x, &r[i], 0, true);
		return;
	}
	for (size_t i = 0; i < n; i++)
		exact_record(x, &r[i]);
}

const struct model_ops model_exact = {
	.name = "exact",
	.summary = "full traces: ideal coherence (unlimited private caches), ground truth",
	.create = exact_create,
	.record = exact_record,
	.records = exact_records,
	.finish = exact_finish,
	.destroy = exact_destroy,
};

/* ---- full-trace check (ana.h) -------------------------------------------- */

bool model_needs_full_trace(const char *model)
{
	return model && (!strcmp(model, "exact") || !strcmp(model, "signature") ||
	                 !strcmp(model, "emulate"));
}

bool full_trace_check(const struct ct_trace *t, const char *model, char *why, size_t cap)
{
	if (cap)
		why[0] = 0;
	if (!model_needs_full_trace(model))
		return true;
	const struct ct_header *h = t ? ct_trace_header(t) : NULL;
	if (h && (h->features & CT_FEAT_FULL))
		return true;
	if (cap)
		snprintf(why, cap, "the %s model needs a full trace (commrec --sampler inst --full); "
		         "this trace is sampled: every sample was taken as one access weighted by its "
		         "period, which is not ground truth", model);
	return false;
}
