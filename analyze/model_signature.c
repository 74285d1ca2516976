/* The signature model: DiscoPoP's asymmetric signature memory (Mazaheri et
 * al., section IV.D, Algorithm 1) over a full trace, read-after-write
 * communication only.
 *
 * Write signature: n slots (--signature-size), each the thread index of the
 * last writer of any address hashing there (one level).  Read signature:
 * the same n slots, each a bloom filter of the threads that read an address
 * hashing there since the last write to the slot (two levels).  Slot of an address:
 * MurmurHash3's 64-bit finalizer of the address, modulo n.
 *
 * For an access of thread T to address a (the access's start address: the
 * paper works on addresses, not lines; an atomic is a read then a write):
 *   read:  if the write slot holds a writer W != T and T is not in the
 *          slot's read filter: a communication W -> T (row T, column W),
 *          weight = the record's period (1 in a full trace); then T is
 *          added to the read filter;
 *   write: the slot's read filter is cleared and T becomes its writer.
 * (The paper's pseudo-code adds the reader to the read signature only when
 * the address is not in the write signature; read literally, repeated
 * reads of written data would all count.  Its text says the filter keeps
 * "the list of threads which accessed" the location, so every read is
 * added here: a thread's repeated reads count once per write.)
 *
 * Errors: two addresses in one slot share a writer and a read filter
 * (collisions: false communications, and missed ones when a write of
 * another address clears the filter); a bloom filter false positive makes
 * a first read look repeated (a missed communication).
 * Bloom filter (the paper's equation 2): for t threads and false positive
 * rate P (--fp-rate, default 0.001 as in the paper's evaluation),
 * m = ceil(-t ln P / (ln 2)^2) bits, rounded up to a multiple of 64, and
 * k = round(-ln P / ln 2) hash functions (at least 1), the i-th bit of
 * thread T being (h1(T) + i h2(T)) mod m (a linear combination of two
 * hashes, as the paper says).
 * Memory: the paper's layout, SigMem(n, t) = n (8 + m/8) bytes here (one
 * record per slot: the writer, then the filter), mapped lazily; when that
 * would exceed 1 GiB (many threads), 8 bytes per slot plus m/8 bytes per
 * slot that was ever read (filters allocated on first read).
 *
 * The model sees addresses, not lines: false sharing is not observable, and
 * every event is classified as true sharing.  Its src_addr is the read
 * address (the signature keeps no addresses) and src_cpu the writer's cpu
 * at its most recent access. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model_common.h"

#define SIG_DEFAULT_SIZE 10000000u   /* the paper's evaluation */
#define SIG_DEFAULT_FP 0.001

#define SIG_DIRECT_MAX (1ull << 30)  /* bytes: filters inline up to this */

struct sig {
	unsigned line_shift;
	size_t nthreads;
	struct event_consumer *out;
	size_t nout;
	size_t n;                /* slots */
	/* Slot i is slot[i * stride ...]: word 0 holds the writer (thread + 1,
	 * 0: none) in its low half; with inline filters (direct) the filter
	 * follows in words 1..words, else the high half is the filter's index
	 * + 1 in the pool (0: none yet). */
	uint64_t *slot;
	size_t slot_bytes, stride;
	bool direct;
	uint64_t *pool;          /* filters, `words` each */
	size_t pool_n, pool_cap;
	unsigned m, k, words;    /* bloom bits, hashes, 64-bit words */
	uint32_t *pos;           /* nthreads * k bit positions */
	uint32_t *last_cpu;
	bool oom;
};

/* Bloom filter geometry for t threads at false positive rate p. */
static void bloom_size(size_t t, double p, unsigned *m, unsigned *k)
{
	if (!(p > 0 && p < 1))
		p = SIG_DEFAULT_FP;
	if (!t)
		t = 1;
	double bits = ceil(-(double)t * log(p) / (M_LN2 * M_LN2));
	if (bits < 64)
		bits = 64;
	if (bits > (double)(1u << 30))
		bits = (double)(1u << 30);
	*m = ((unsigned)bits + 63) / 64 * 64;
	double kk = floor(-log(p) / M_LN2 + 0.5);
	*k = kk < 1 ? 1 : kk > 64 ? 64 : (unsigned)kk;
}

static void sig_destroy(void *self);

static void *sig_create(const struct model_setup *s)
{
	struct sig *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->line_shift = log2u(s->line_size ? s->line_size : 64);
	g->nthreads = s->nthreads;
	g->out = s->out;
	g->nout = s->nout;
	g->n = s->opts->signature_size ? s->opts->signature_size : SIG_DEFAULT_SIZE;
	bloom_size(s->nthreads, s->opts->fp_rate, &g->m, &g->k);
	g->words = g->m / 64;
	size_t nt = s->nthreads ? s->nthreads : 1;
	void *p = MAP_FAILED;
	if ((double)g->n * (1 + g->words) * 8 <= (double)SIG_DIRECT_MAX) {
		g->stride = 1 + g->words;
		g->slot_bytes = g->n * g->stride * 8;
		p = mmap(NULL, g->slot_bytes, PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		g->direct = p != MAP_FAILED;
	}
	if (p == MAP_FAILED) {
		g->stride = 1;
		g->slot_bytes = g->n * 8;
		p = mmap(NULL, g->slot_bytes, PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	}
	if (p != MAP_FAILED) {
		g->slot = p;
#ifdef MADV_HUGEPAGE
		if (g->slot_bytes >= (2u << 20))
			madvise(p, g->slot_bytes, MADV_HUGEPAGE);
#endif
	}
	g->pos = malloc(nt * g->k * sizeof *g->pos);
	g->last_cpu = malloc(nt * sizeof *g->last_cpu);
	if (!g->slot || !g->pos || !g->last_cpu) {
		sig_destroy(g);
		return NULL;
	}
	for (size_t t = 0; t < nt; t++) {
		uint64_t h = fmix64((uint64_t)t + 0x9e3779b97f4a7c15ull);
		uint64_t h1 = h & 0xffffffffu, h2 = (h >> 32) | 1;
		for (unsigned i = 0; i < g->k; i++)
			g->pos[t * g->k + i] = (uint32_t)((h1 + (uint64_t)i * h2) % g->m);
		g->last_cpu[t] = UINT32_MAX;
	}
	return g;
}

static uint64_t *filter_of(struct sig *g, uint64_t *rec, bool create)
{
	if (g->direct)
		return rec + 1;
	uint32_t f = (uint32_t)(rec[0] >> 32);
	if (f)
		return g->pool + (size_t)(f - 1) * g->words;
	if (!create)
		return NULL;
	if (g->pool_n == g->pool_cap) {
		size_t nc = g->pool_cap ? g->pool_cap * 2 : 4096;
		if (nc > UINT32_MAX - 1)
			return NULL;
		uint64_t *np = realloc(g->pool, nc * g->words * sizeof *np);
		if (!np)
			return NULL;
		g->pool = np;
		g->pool_cap = nc;
	}
	size_t idx = g->pool_n++;
	uint64_t *w = g->pool + idx * g->words;
	memset(w, 0, g->words * sizeof *w);
	rec[0] = (rec[0] & 0xffffffffu) | (uint64_t)(idx + 1) << 32;
	return w;
}

static bool bloom_has(const struct sig *g, const uint64_t *w, uint32_t t)
{
	if (!w)
		return false;
	const uint32_t *p = g->pos + (size_t)t * g->k;
	for (unsigned i = 0; i < g->k; i++)
		if (!((w[p[i] / 64] >> (p[i] % 64)) & 1))
			return false;
	return true;
}

static void bloom_add(const struct sig *g, uint64_t *w, uint32_t t)
{
	const uint32_t *p = g->pos + (size_t)t * g->k;
	for (unsigned i = 0; i < g->k; i++)
		w[p[i] / 64] |= 1ull << (p[i] % 64);
}

/* (inlined in sig_records' loop) */
static inline __attribute__((always_inline)) void
sig_record(void *self, const struct ct_record *r)
{
	struct sig *g = self;
	if (r->type != CT_REC_SAMPLE || r->thread >= g->nthreads)
		return;
	const struct ct_sample *s = &r->u.sample;
	uint32_t t = r->thread;
	uint64_t *rec = g->slot + (size_t)(fmix64(s->addr) % g->n) * g->stride;
	g->last_cpu[t] = s->cpu;
	if (s->kind != CT_ACCESS_STORE) {          /* load, or the read of an atomic */
		uint64_t *w = filter_of(g, rec, true);
		uint32_t wr = (uint32_t)rec[0];
		if (wr && wr - 1 != t && !bloom_has(g, w, t)) {
			uint32_t src = wr - 1;
			struct comm_event ev = {
				.time = r->time, .dst = t, .src = src,
				.dst_cpu = s->cpu, .src_cpu = g->last_cpu[src],
				.line = s->addr >> g->line_shift << g->line_shift,
				.addr = s->addr, .src_addr = s->addr, .len = s->len, .src_len = s->len,
				.dst_kind = s->kind, .via = COMM_VIA_EXACT, .true_sharing = true,
				.ip = s->ip, .src_ip = 0,
				.weight = s->period ? (double)s->period : 1.0,
				.var = sampled_var(s->period ? (double)s->period : 1.0),
				.unit_max = s->period ? (double)s->period : 1.0,
			};
			emit(g->out, g->nout, &ev);
		}
		if (w)
			bloom_add(g, w, t);
		else
			g->oom = true;
	}
	if (s->kind != CT_ACCESS_LOAD) {           /* store, or the write of an atomic */
		uint64_t *w = filter_of(g, rec, false);
		if (w)
			memset(w, 0, g->words * sizeof *w);
		rec[0] = (rec[0] & ~0xffffffffull) | (t + 1);
	}
}

static void sig_finish(void *self)
{
	struct sig *g = self;
	if (g->oom)
		ana_warn("signature model: out of memory: some read filters were not kept, "
		         "the matrices are incomplete");
}

static void sig_destroy(void *self)
{
	struct sig *g = self;
	if (!g)
		return;
	if (g->slot)
		munmap(g->slot, g->slot_bytes);
	free(g->pool);
	free(g->pos);
	free(g->last_cpu);
	free(g);
}

MODEL_RECORDS(sig_records, sig_record)

const struct model_ops model_signature = {
	.name = "signature",
	.summary = "full traces: DiscoPoP's asymmetric signature memory (read after write)",
	.create = sig_create,
	.record = sig_record,
	.records = sig_records,
	.finish = sig_finish,
	.destroy = sig_destroy,
};
