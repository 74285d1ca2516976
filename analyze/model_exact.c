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
 * when the line's last store before it (the store that invalidated the
 * receiver's copy: its owner; every transfer has exactly one) was sampled,
 * with that sample's weight P.  A store s owns Y_s transfers: the distinct
 * other threads that access the line after s, up to and including the
 * next store to it (that store too when its thread had no copy).  So the
 * estimate sum P Y_s over the sampled stores has the expectation sum Y_s =
 * exact's count when each store is sampled with probability 1/P, and its
 * true/false split is exact's (the same bytes decide).  Its variance,
 * sum (P - 1) Y_s^2 under independent sampling, is estimated by
 * sum (P - 1) P Y_s^2 over the sampled stores: the k-th transfer of a
 * sampled store adds (P - 1) P (2k - 1) to comm_event.var, so that a
 * store's events add up to (P - 1) P Y_s^2.
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

/* ... and, for the owner estimator only, the last store's sampling. */
struct xown {
	double weight;           /* 0: the last store was not sampled */
	uint64_t owned;          /* transfers it owns so far */
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
	uint64_t *pool;          /* extension bitsets */
	size_t pool_n, pool_cap; /* in bitsets */
	uint32_t *pool_free;
	size_t nfree, free_cap;
	struct xcache {          /* per thread: its last line */
		uint64_t key;
		size_t slot;
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
	if (x && !(x->own = big_calloc(x->cap, sizeof *x->own))) {
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

/* The state of line number ln, created (never written, no holders) if new;
 * *fresh says so.  NULL when out of memory. */
static struct xline *lookup(struct exact *x, uint32_t t, uint64_t ln, bool *fresh,
                            size_t *slot)
{
	uint64_t key = ln + 1;
	struct xcache *c = &x->tc[t];
	*fresh = false;
	if (key == c->key) {
		*slot = c->slot;
		return &x->tab[c->slot];
	}
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
	c->key = key;
	c->slot = i;
	*slot = i;
	return &x->tab[i];
}

/* ---- holders ------------------------------------------------------------ */

static uint64_t *ext_words(struct exact *x, const struct xline *l)
{
	return l->ext ? x->pool + (size_t)(l->ext - 1) * x->xwords : NULL;
}

static int ext_alloc(struct exact *x, struct xline *l)
{
	uint32_t idx;
	if (x->nfree) {
		idx = x->pool_free[--x->nfree];
	} else {
		if (x->pool_n == x->pool_cap) {
			size_t nc = x->pool_cap ? x->pool_cap * 2 : 1024;
			if (nc > UINT32_MAX - 1)
				return -1;
			uint64_t *np = realloc(x->pool, nc * x->xwords * sizeof *np);
			if (!np)
				return -1;
			x->pool = np;
			x->pool_cap = nc;
		}
		idx = (uint32_t)x->pool_n++;
	}
	memset(x->pool + (size_t)idx * x->xwords, 0, x->xwords * sizeof *x->pool);
	l->ext = idx + 1;
	return 0;
}

static void ext_release(struct exact *x, struct xline *l)
{
	if (!l->ext)
		return;
	if (x->nfree == x->free_cap) {
		size_t nc = x->free_cap ? x->free_cap * 2 : 256;
		uint32_t *nf = realloc(x->pool_free, nc * sizeof *nf);
		if (!nf) {               /* leak the bitset rather than fail */
			l->ext = 0;
			return;
		}
		x->pool_free = nf;
		x->free_cap = nc;
	}
	x->pool_free[x->nfree++] = l->ext - 1;
	l->ext = 0;
}

static bool holds(struct exact *x, const struct xline *l, uint32_t t)
{
	if (t < 64)
		return (l->hold >> t) & 1;
	const uint64_t *w = ext_words(x, l);
	t -= 64;
	return w && ((w[t / 64] >> (t % 64)) & 1);
}

static void add_holder(struct exact *x, struct xline *l, uint32_t t)
{
	if (t < 64) {
		l->hold |= 1ull << t;
		return;
	}
	if (!l->ext && ext_alloc(x, l)) {
		x->oom = true;
		return;
	}
	t -= 64;
	ext_words(x, l)[t / 64] |= 1ull << (t % 64);
}

static void sole_holder(struct exact *x, struct xline *l, uint32_t t)
{
	l->hold = 0;
	if (l->ext) {
		if (t >= 64)
			memset(ext_words(x, l), 0, x->xwords * sizeof *x->pool);
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

/* The weight and variance part of a transfer on the line in slot: the
 * receiver's weight, or the owner estimator's (false: its owner was not
 * sampled, no event). */
static bool transfer_weight(struct exact *x, size_t slot, double weight, struct comm_event *ev)
{
	if (!x->own) {
		ev->weight = weight;
		ev->var = sampled_var(weight);
		return true;
	}
	struct xown *o = &x->own[slot];
	if (!(o->weight > 0))
		return false;
	o->owned++;
	ev->weight = o->weight;
	ev->var = (o->weight - 1) * o->weight * (double)(2 * o->owned - 1);
	ev->via = COMM_VIA_SAMPLE;
	return true;
}

/* One access of r to one line; weight: the receiver's (exact), owner_w:
 * this access's weight as an owner (the owner estimator). */
static void piece(struct exact *x, const struct ct_record *r, uint64_t addr, unsigned len,
                  double weight, double owner_w)
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
	uint64_t *wide = x->mwords > 1 ? x->wide + slot * x->mwords : NULL;
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
		if (transfer_weight(x, slot, weight, &ev))
			emit(x->out, x->nout, &ev);
	}
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
	if (x->own)
		x->own[slot] = (struct xown){ .weight = owner_w };
	sole_holder(x, l, t);
}

static void access_pieces(struct exact *x, const struct ct_record *r, double owner_w)
{
	if (r->type != CT_REC_SAMPLE || r->thread >= x->nthreads)
		return;
	const struct ct_sample *s = &r->u.sample;
	double w = s->period ? (double)s->period : 1.0;
	uint64_t addr = s->addr;
	unsigned len = s->len ? s->len : 1;
	while (len) {
		unsigned room = x->line_size - (unsigned)(addr & (x->line_size - 1));
		unsigned n = len < room ? len : room;
		piece(x, r, addr, n, w, owner_w);
		len -= n;
		addr += n;
		if (!addr)               /* wrapped past the top of the address space */
			break;
	}
}

static void exact_record(void *self, const struct ct_record *r)
{
	const struct exact *x = self;
	if (x->sync != SYNC_INCLUDE && r->type == CT_REC_SAMPLE &&
	    !(r->u.sample.flags & CT_SAMPLE_SYNC) != (x->sync == SYNC_EXCLUDE))
		return;
	access_pieces(self, r, 0);
}

void exact_owner_access(void *exact, const struct ct_record *r, double owner_weight)
{
	access_pieces(exact, r, owner_weight);
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
	free(x->pool);
	free(x->pool_free);
	free(x->tc);
	free(x);
}

const struct model_ops model_exact = {
	.name = "exact",
	.summary = "full traces: ideal coherence (unlimited private caches), ground truth",
	.create = exact_create,
	.record = exact_record,
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
