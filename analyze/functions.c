/* commanalyze functions TRACE: dataflow between functions (functions.h).
 * The consumers, the tables (text, CSV, JSON) and the Graphviz graph. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib_int.h"
#include "functions.h"
#include "out_util.h"

#define NONE UINT32_MAX
#define REUSE_BUCKETS 40         /* log2 buckets: 0, 1, 2-3, 4-7, ... */
#define CHUNK_BYTES 64           /* shadow memory granule */

struct ffunc {
	char *name;
	char where[160];         /* "file.c:12" of the first address seen, or "" */
	double produced, consumed;            /* event weights */
	uint64_t bytes_written, bytes_read;   /* full traces */
	uint64_t reads[REUSE_BUCKETS];        /* written bytes by reads before overwrite */
	uint64_t life[REUSE_BUCKETS];         /* read bytes by ns from write to last read */
};

/* The reuse of the bytes of one object (full traces; index: the
 * attribution's object). */
struct oreuse {
	uint64_t bytes_written, bytes_read;
	uint64_t reads[REUSE_BUCKETS];        /* written bytes by reads before overwrite */
	uint64_t life[REUSE_BUCKETS];         /* read bytes by ns from write to last read */
};

struct fedge {
	uint32_t src, dst;       /* producer, consumer functions */
	uint32_t ts, td;         /* producer, consumer threads (NONE: merged) */
	double w[3];             /* enum mx_kind */
	uint64_t events;
	uint64_t bytes, unique, cross_bytes, cross_unique;
};

/* edges by (src, dst, ts, td): open addressing over indices + 1 */
struct etable {
	struct fedge *e;
	size_t n, cap;
	uint32_t *slot;
	size_t nslots;
};

/* One byte of shadow memory: its last writer and who read it since. */
struct sbyte {
	uint32_t wfn, wth;       /* NONE: never written in the trace */
	uint32_t rfn;            /* function of the last read since the write, NONE */
	uint32_t nreads;
	uint32_t wobj;           /* object written (attribution index), NONE */
	uint64_t wtime, rtime;
};

struct fnflow {
	struct attrib *a;
	struct ct_trace *trace;
	bool full;
	struct ffunc *fn;
	size_t nfn, capfn;
	struct u64map fn_by_key, fn_by_ip;
	struct etable edges;
	struct sbyte (*chunk)[CHUNK_BYTES];
	size_t nchunks, capchunks;
	struct u64map chunk_by_addr;
	struct oreuse *obj;       /* by object index */
	size_t nobj;
	bool oom;
};

/* The reuse counters of object o (NULL: none, or out of memory). */
static struct oreuse *obj_reuse(struct fnflow *f, uint32_t o)
{
	if (o == NONE)
		return NULL;
	if (o >= f->nobj) {
		size_t nn = f->nobj ? f->nobj : 64;
		while (nn <= o)
			nn *= 2;
		struct oreuse *p = realloc(f->obj, nn * sizeof *p);
		if (!p) {
			f->oom = true;
			return NULL;
		}
		memset(p + f->nobj, 0, (nn - f->nobj) * sizeof *p);
		f->obj = p;
		f->nobj = nn;
	}
	return &f->obj[o];
}

/* ---- functions ------------------------------------------------------------------ */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static uint32_t fn_new(struct fnflow *f, uint64_t key, const struct st_code *c, uint64_t ip)
{
	if (f->nfn == f->capfn) {
		size_t nc = f->capfn ? f->capfn * 2 : 64;
		struct ffunc *p = realloc(f->fn, nc * sizeof *p);
		if (!p)
			return NONE;
		f->fn = p;
		f->capfn = nc;
	}
	struct ffunc *x = &f->fn[f->nfn];
	memset(x, 0, sizeof *x);
	char name[512];
	if (!ip)
		snprintf(name, sizeof name, "(unknown code)");
	else if (c->func)
		snprintf(name, sizeof name, "%s", c->func);
	else if (c->mod)   /* no symbol covers it: the module and offset, never a neighbour */
		snprintf(name, sizeof name, "%s+0x%" PRIx64, base_name(c->mod->path), ip - c->mod->bias);
	else
		snprintf(name, sizeof name, "0x%" PRIx64, ip);
	if (c->file)
		snprintf(x->where, sizeof x->where, "%s:%u", base_name(c->file), c->line);
	if (!(x->name = strdup(name)) || u64map_put(&f->fn_by_key, key, (uint32_t)f->nfn)) {
		free(x->name);
		return NONE;
	}
	return (uint32_t)f->nfn++;
}

/* The function of code address ip (as attrib_code_ip gives it). */
static uint32_t fn_of(struct fnflow *f, uint64_t ip)
{
	uint32_t v;
	if (u64map_get(&f->fn_by_ip, ip, &v))
		return v;
	struct st_code c = { 0 };
	if (ip)
		symtab_code(&f->a->syms, ip, &c);
	/* key: the function's start, else the address itself */
	uint64_t key = c.func ? ip - c.func_off : ip;
	if (!u64map_get(&f->fn_by_key, key, &v) && (v = fn_new(f, key, &c, ip)) == NONE) {
		f->oom = true;
		return NONE;
	}
	if (u64map_put(&f->fn_by_ip, ip, v))
		f->oom = true;
	return v;
}

/* ---- edges ------------------------------------------------------------------------ */

static size_t edge_hash(uint32_t s, uint32_t d, uint32_t ts, uint32_t td)
{
	return (size_t)fmix64(((uint64_t)s << 32 | d) ^ fmix64((uint64_t)ts << 32 | td));
}

static int etable_grow(struct etable *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 256;
	uint32_t *slot = calloc(ns, sizeof *slot);
	if (!slot)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		const struct fedge *e = &t->e[i];
		size_t j = edge_hash(e->src, e->dst, e->ts, e->td) & (ns - 1);
		while (slot[j])
			j = (j + 1) & (ns - 1);
		slot[j] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return 0;
}

/* The edge (s -> d, thread ts -> td), created zeroed; NULL when out of memory. */
static struct fedge *edge_get(struct etable *t, uint32_t s, uint32_t d, uint32_t ts, uint32_t td)
{
	if ((t->n + 1) * 2 > t->nslots && etable_grow(t))
		return NULL;
	size_t mask = t->nslots - 1, j;
	for (j = edge_hash(s, d, ts, td) & mask; t->slot[j]; j = (j + 1) & mask) {
		struct fedge *e = &t->e[t->slot[j] - 1];
		if (e->src == s && e->dst == d && e->ts == ts && e->td == td)
			return e;
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		struct fedge *p = realloc(t->e, nc * sizeof *p);
		if (!p)
			return NULL;
		t->e = p;
		t->cap = nc;
	}
	struct fedge *e = &t->e[t->n];
	*e = (struct fedge){ .src = s, .dst = d, .ts = ts, .td = td };
	t->slot[j] = (uint32_t)++t->n;
	return e;
}

static void etable_free(struct etable *t)
{
	free(t->e);
	free(t->slot);
	memset(t, 0, sizeof *t);
}

/* ---- the event consumer: sampled (and any model's) transfers ------------------------ */

static void on_event(void *self, const struct comm_event *ev)
{
	struct fnflow *f = self;
	uint32_t s = fn_of(f, attrib_src_ip(f->a, ev));
	uint32_t d = fn_of(f, attrib_code_ip(f->a, ev->ip, ev->via == COMM_VIA_WATCHPOINT));
	if (s == NONE || d == NONE)
		return;
	struct fedge *e = edge_get(&f->edges, s, d, ev->src, ev->dst);
	if (!e) {
		f->oom = true;
		return;
	}
	e->w[MX_ALL] += ev->weight;
	e->w[ev->true_sharing ? MX_TRUE : MX_FALSE] += ev->weight;
	e->events++;
	f->fn[s].produced += ev->weight;
	f->fn[d].consumed += ev->weight;
}

struct event_consumer fnflow_event_consumer(struct fnflow *f)
{
	return (struct event_consumer){ .self = f, .event = on_event };
}

/* ---- the record consumer: byte flows of a full trace -------------------------------- */

static unsigned log2_bucket(uint64_t v)
{
	unsigned b = v ? 64u - (unsigned)__builtin_clzll(v) : 0;
	return b < REUSE_BUCKETS ? b : REUSE_BUCKETS - 1;
}

static struct sbyte *shadow(struct fnflow *f, uint64_t chunk_addr)
{
	uint32_t v;
	if (u64map_get(&f->chunk_by_addr, chunk_addr, &v))
		return f->chunk[v];
	if (f->nchunks == f->capchunks) {
		size_t nc = f->capchunks ? f->capchunks * 2 : 256;
		void *p = realloc(f->chunk, nc * sizeof *f->chunk);
		if (!p)
			return NULL;
		f->chunk = p;
		f->capchunks = nc;
	}
	struct sbyte *c = f->chunk[f->nchunks];
	for (unsigned i = 0; i < CHUNK_BYTES; i++)
		c[i] = (struct sbyte){ .wfn = NONE, .wth = NONE, .rfn = NONE, .wobj = NONE };
	if (u64map_put(&f->chunk_by_addr, chunk_addr, (uint32_t)f->nchunks))
		return NULL;
	f->nchunks++;
	return c;
}

/* A written byte's life ends (overwritten, or the end of the trace). */
static void byte_retire(struct fnflow *f, const struct sbyte *b)
{
	if (b->wfn == NONE)
		return;
	struct ffunc *w = &f->fn[b->wfn];
	w->reads[log2_bucket(b->nreads)]++;
	if (b->nreads)
		w->life[log2_bucket(b->rtime - b->wtime)]++;
	struct oreuse *o = obj_reuse(f, b->wobj);
	if (o) {
		o->reads[log2_bucket(b->nreads)]++;
		if (b->nreads)
			o->life[log2_bucket(b->rtime - b->wtime)]++;
	}
}

/* Consecutive bytes of one access usually share their writer: one edge
 * look-up per run. */
struct run {
	uint32_t wfn, wth;
	uint64_t bytes, unique;
};

static void run_flush(struct fnflow *f, struct run *r, uint32_t fn, uint32_t th)
{
	if (!r->bytes)
		return;
	struct fedge *e = edge_get(&f->edges, r->wfn, fn, r->wth, th);
	if (!e) {
		f->oom = true;
	} else {
		e->bytes += r->bytes;
		e->unique += r->unique;
		if (r->wth != th) {
			e->cross_bytes += r->bytes;
			e->cross_unique += r->unique;
		}
	}
	r->bytes = r->unique = 0;
}

static void byte_read(struct fnflow *f, struct sbyte *b, uint32_t fn, uint32_t th, uint64_t t,
                      struct run *r)
{
	f->fn[fn].bytes_read++;
	if (b->wfn == NONE)
		return;   /* written before the trace began: no producer */
	if (r->bytes && (r->wfn != b->wfn || r->wth != b->wth))
		run_flush(f, r, fn, th);
	r->wfn = b->wfn;
	r->wth = b->wth;
	r->bytes++;
	if (b->rfn != fn)
		r->unique++;
	b->rfn = fn;
	b->nreads++;
	b->rtime = t;
}

static void byte_write(struct fnflow *f, struct sbyte *b, uint32_t fn, uint32_t th, uint64_t t,
                       uint32_t obj)
{
	f->fn[fn].bytes_written++;
	byte_retire(f, b);
	*b = (struct sbyte){ .wfn = fn, .wth = th, .rfn = NONE, .wobj = obj, .wtime = t };
}

static void on_record(void *self, const struct ct_record *rec)
{
	struct fnflow *f = self;
	if (rec->type != CT_REC_SAMPLE || !f->full)
		return;
	const struct ct_sample *s = &rec->u.sample;
	uint32_t fn = fn_of(f, attrib_code_ip(f->a, s->ip, false));
	if (fn == NONE || !s->len)
		return;
	bool reads = s->kind != CT_ACCESS_STORE, writes = s->kind != CT_ACCESS_LOAD;
	/* the object of the access (its first byte), as it is now */
	uint32_t obj = attrib_object(f->a, s->addr);
	struct oreuse *o = obj_reuse(f, obj);
	if (o) {
		o->bytes_read += reads ? s->len : 0;
		o->bytes_written += writes ? s->len : 0;
	}
	struct run r = { 0 };
	for (uint64_t p = s->addr, end = s->addr + s->len; p < end;) {
		uint64_t base = p & ~(uint64_t)(CHUNK_BYTES - 1);
		struct sbyte *c = shadow(f, base);
		if (!c) {
			f->oom = true;
			return;
		}
		for (; p < end && p < base + CHUNK_BYTES; p++) {
			struct sbyte *b = &c[p - base];
			if (reads)
				byte_read(f, b, fn, rec->thread, rec->time, &r);
			if (writes)
				byte_write(f, b, fn, rec->thread, rec->time, obj);
		}
	}
	run_flush(f, &r, fn, rec->thread);
}

static void on_finish(void *self)
{
	struct fnflow *f = self;
	for (size_t i = 0; i < f->nchunks; i++)
		for (unsigned k = 0; k < CHUNK_BYTES; k++)
			byte_retire(f, &f->chunk[i][k]);
}

struct record_consumer fnflow_record_consumer(struct fnflow *f)
{
	return (struct record_consumer){ .self = f, .record = on_record, .finish = on_finish };
}

struct fnflow *fnflow_create(struct attrib *a, struct ct_trace *t, bool full)
{
	struct fnflow *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->a = a;
	f->trace = t;
	f->full = full;
	return f;
}

void fnflow_free(struct fnflow *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nfn; i++)
		free(f->fn[i].name);
	free(f->fn);
	u64map_free(&f->fn_by_key);
	u64map_free(&f->fn_by_ip);
	u64map_free(&f->chunk_by_addr);
	etable_free(&f->edges);
	free(f->chunk);
	free(f->obj);
	free(f);
}

/* ---- ranking -------------------------------------------------------------------------- */

struct view {
	struct fnflow *f;
	struct etable merged;     /* by_threads: unused */
	const struct fedge *e;    /* the edges shown from */
	size_t n;
	uint32_t *ix;             /* ranked, filtered */
	size_t nix;
	uint32_t *fns;            /* the functions of the flows shown, by work */
	size_t nfns;
	enum mx_kind kind;
	bool by_threads;
	uint32_t *objs;           /* --by object: the objects shown, by bytes */
	size_t nobjs;
	bool by_object;
};

static double edge_rank(const struct view *v, const struct fedge *e)
{
	return v->f->full && v->kind == MX_ALL ? (double)e->bytes : e->w[v->kind];
}

/* What a function did: bytes read and written (full), else transfers. */
static double fn_work(const struct fnflow *f, const struct ffunc *x)
{
	return f->full ? (double)(x->bytes_read + x->bytes_written) : x->produced + x->consumed;
}

static const struct view *sort_view;
static int cmp_fns(const void *x, const void *y)
{
	const struct fnflow *f = sort_view->f;
	const struct ffunc *a = &f->fn[*(const uint32_t *)x], *b = &f->fn[*(const uint32_t *)y];
	double wa = fn_work(f, a), wb = fn_work(f, b);
	if (wa != wb)
		return wa < wb ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int cmp_edges(const void *x, const void *y)
{
	const struct fedge *a = &sort_view->e[*(const uint32_t *)x];
	const struct fedge *b = &sort_view->e[*(const uint32_t *)y];
	double ra = edge_rank(sort_view, a), rb = edge_rank(sort_view, b);
	if (ra != rb)
		return ra < rb ? 1 : -1;
	/* ties: producer, consumer, threads (the same order on every run) */
	int c = strcmp(sort_view->f->fn[a->src].name, sort_view->f->fn[b->src].name);
	if (!c)
		c = strcmp(sort_view->f->fn[a->dst].name, sort_view->f->fn[b->dst].name);
	if (!c)
		c = a->ts != b->ts ? (a->ts < b->ts ? -1 : 1) : a->td != b->td ? (a->td < b->td ? -1 : 1) : 0;
	return c;
}

static int view_build(struct view *v, struct fnflow *f, size_t top, enum mx_kind kind,
                      bool by_threads)
{
	memset(v, 0, sizeof *v);
	v->f = f;
	v->kind = kind;
	v->by_threads = by_threads;
	v->e = f->edges.e;
	v->n = f->edges.n;
	if (!by_threads) {
		for (size_t i = 0; i < f->edges.n; i++) {
			const struct fedge *s = &f->edges.e[i];
			struct fedge *m = edge_get(&v->merged, s->src, s->dst, NONE, NONE);
			if (!m)
				return -1;
			for (int k = 0; k < 3; k++)
				m->w[k] += s->w[k];
			m->events += s->events;
			m->bytes += s->bytes;
			m->unique += s->unique;
			m->cross_bytes += s->cross_bytes;
			m->cross_unique += s->cross_unique;
		}
		v->e = v->merged.e;
		v->n = v->merged.n;
	}
	v->ix = malloc((v->n ? v->n : 1) * sizeof *v->ix);
	if (!v->ix)
		return -1;
	for (size_t i = 0; i < v->n; i++)
		if (edge_rank(v, &v->e[i]) > 0)
			v->ix[v->nix++] = (uint32_t)i;
	sort_view = v;
	qsort(v->ix, v->nix, sizeof *v->ix, cmp_edges);
	if (top && top < v->nix)
		v->nix = top;
	bool *in = calloc(f->nfn ? f->nfn : 1, sizeof *in);
	v->fns = malloc((f->nfn ? f->nfn : 1) * sizeof *v->fns);
	if (!in || !v->fns) {
		free(in);
		return -1;
	}
	for (size_t i = 0; i < v->nix; i++)
		in[v->e[v->ix[i]].src] = in[v->e[v->ix[i]].dst] = true;
	for (size_t i = 0; i < f->nfn; i++)
		if (in[i])
			v->fns[v->nfns++] = (uint32_t)i;
	free(in);
	qsort(v->fns, v->nfns, sizeof *v->fns, cmp_fns);
	return 0;
}

static void view_free(struct view *v)
{
	etable_free(&v->merged);
	free(v->ix);
	free(v->fns);
	free(v->objs);
}

/* ---- writers ------------------------------------------------------------------------- */

static const char *num(double v, char *buf, size_t cap)
{
	out_fmt_exact(buf, cap, v);
	return buf;
}

static const char *thr(const struct fnflow *f, uint32_t t, char *buf, size_t cap)
{
	if (t == NONE)
		return "";
	return thread_label(f->trace, t, buf, cap);
}

/* The lower bound of the bucket holding the median of h (UINT64_MAX: empty). */
static uint64_t hist_median(const uint64_t *h)
{
	uint64_t total = 0, acc = 0;
	for (unsigned b = 0; b < REUSE_BUCKETS; b++)
		total += h[b];
	for (unsigned b = 0; b < REUSE_BUCKETS; b++)
		if ((acc += h[b]) * 2 >= total && total)
			return b ? (uint64_t)1 << (b - 1) : 0;
	return UINT64_MAX;
}

static void text_edges(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	char a[32], b[32], c[32], d[32], t1[64], t2[64];
	if (f->full)
		fprintf(o, "  %14s %14s %14s %12s  %s\n", "bytes", "unique", "cross-thread",
		        "transfers", "producer -> consumer");
	else
		fprintf(o, "  %12s %12s %12s %8s  %s\n", "transfers", "true", "false", "events",
		        "producer -> consumer");
	for (size_t i = 0; i < v->nix; i++) {
		const struct fedge *e = &v->e[v->ix[i]];
		if (f->full) {
			out_fmt_compact(a, sizeof a, (double)e->bytes);
			out_fmt_compact(b, sizeof b, (double)e->unique);
			out_fmt_compact(c, sizeof c, (double)e->cross_bytes);
			out_fmt_compact(d, sizeof d, e->w[MX_ALL]);
			fprintf(o, "  %14s %14s %14s %12s  ", a, b, c, d);
		} else {
			out_fmt_compact(a, sizeof a, e->w[MX_ALL]);
			out_fmt_compact(b, sizeof b, e->w[MX_TRUE]);
			out_fmt_compact(c, sizeof c, e->w[MX_FALSE]);
			fprintf(o, "  %12s %12s %12s %8" PRIu64 "  ", a, b, c, e->events);
		}
		fprintf(o, "%s -> %s%s", f->fn[e->src].name, f->fn[e->dst].name,
		        e->src == e->dst ? " (local)" : "");
		if (v->by_threads)
			fprintf(o, "  [%s -> %s]", thr(f, e->ts, t1, sizeof t1), thr(f, e->td, t2, sizeof t2));
		fputc('\n', o);
	}
}

/* ---- reuse by object ------------------------------------------------------------------ */

static uint64_t obj_bytes(const struct fnflow *f, uint32_t o)
{
	return f->obj[o].bytes_read + f->obj[o].bytes_written;
}

static int cmp_objs(const void *x, const void *y)
{
	const struct fnflow *f = sort_view->f;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	uint64_t wa = obj_bytes(f, a), wb = obj_bytes(f, b);
	if (wa != wb)
		return wa < wb ? 1 : -1;
	return strcmp(f->a->objs[a].name, f->a->objs[b].name);
}

/* The objects whose bytes the trace touched, most bytes first; top 0: all. */
static int objs_rank(struct view *v, size_t top)
{
	const struct fnflow *f = v->f;
	v->by_object = true;
	v->objs = malloc((f->nobj ? f->nobj : 1) * sizeof *v->objs);
	if (!v->objs)
		return -1;
	for (size_t i = 0; i < f->nobj && i < f->a->nobjs; i++)
		if (obj_bytes(f, (uint32_t)i))
			v->objs[v->nobjs++] = (uint32_t)i;
	sort_view = v;
	qsort(v->objs, v->nobjs, sizeof *v->objs, cmp_objs);
	if (top && top < v->nobjs)
		v->nobjs = top;
	return 0;
}

/* Written bytes never read (%), and the medians, as text ("-": none). */
struct reuse_cols {
	char unread[32], reads[32], life[32];
};

static void reuse_cols(const uint64_t *reads, const uint64_t *life, struct reuse_cols *c)
{
	uint64_t written = 0;
	for (unsigned k = 0; k < REUSE_BUCKETS; k++)
		written += reads[k];
	uint64_t mr = hist_median(reads), ml = hist_median(life);
	snprintf(c->unread, sizeof c->unread, "-");
	snprintf(c->reads, sizeof c->reads, "-");
	snprintf(c->life, sizeof c->life, "-");
	if (written)
		snprintf(c->unread, sizeof c->unread, "%.1f", 100.0 * (double)reads[0] / (double)written);
	if (mr != UINT64_MAX)
		snprintf(c->reads, sizeof c->reads, "%" PRIu64, mr);
	if (ml != UINT64_MAX)
		snprintf(c->life, sizeof c->life, "%" PRIu64, ml);
}

static void text_objects(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	fprintf(o, "\nObjects, reuse of their bytes:\n");
	fprintf(o, "  %14s %14s %10s %10s %12s  %s\n", "written", "read", "unread%", "reads(med)",
	        "life(med,ns)", "object (kind)");
	for (size_t i = 0; i < v->nobjs; i++) {
		const struct oreuse *x = &f->obj[v->objs[i]];
		const struct aobj *ob = &f->a->objs[v->objs[i]];
		struct reuse_cols c;
		char a[32], b[32];
		reuse_cols(x->reads, x->life, &c);
		out_fmt_compact(a, sizeof a, (double)x->bytes_written);
		out_fmt_compact(b, sizeof b, (double)x->bytes_read);
		fprintf(o, "  %14s %14s %10s %10s %12s  %s (%s)\n", a, b, c.unread, c.reads, c.life,
		        ob->name, obj_kind_name(ob->kind));
	}
}

/* A histogram as one CSV field: counts per log2 bucket, ';'-separated. */
static void csv_hist(FILE *o, const uint64_t *h)
{
	unsigned last = 0;
	for (unsigned b = 0; b < REUSE_BUCKETS; b++)
		if (h[b])
			last = b + 1;
	for (unsigned b = 0; b < last; b++)
		fprintf(o, "%s%" PRIu64, b ? ";" : "", h[b]);
}

static void csv_objects(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	fprintf(o, "rank,object,kind,bytes_written,bytes_read,unread_bytes,reads_median,"
	           "lifetime_median_ns,reads_per_written_byte,lifetime_ns\n");
	for (size_t i = 0; i < v->nobjs; i++) {
		const struct oreuse *x = &f->obj[v->objs[i]];
		const struct aobj *ob = &f->a->objs[v->objs[i]];
		uint64_t mr = hist_median(x->reads), ml = hist_median(x->life);
		fprintf(o, "%zu,", i + 1);
		out_csv_field(o, ob->name);
		fprintf(o, ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", obj_kind_name(ob->kind),
		        x->bytes_written, x->bytes_read, x->reads[0]);
		if (mr != UINT64_MAX)
			fprintf(o, "%" PRIu64, mr);
		fputc(',', o);
		if (ml != UINT64_MAX)
			fprintf(o, "%" PRIu64, ml);
		fputc(',', o);
		csv_hist(o, x->reads);
		fputc(',', o);
		csv_hist(o, x->life);
		fputc('\n', o);
	}
}

static void text_functions(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	fprintf(o, "\nFunctions of these flows:\n");
	if (f->full)
		fprintf(o, "  %14s %14s %10s %10s %12s  %s\n", "written", "read", "unread%",
		        "reads(med)", "life(med,ns)", "function (where)");
	else
		fprintf(o, "  %12s %12s  %s\n", "produced", "consumed", "function (where)");
	for (size_t i = 0; i < v->nfns; i++) {
		const struct ffunc *x = &f->fn[v->fns[i]];
		char a[32], b[32];
		if (f->full) {
			struct reuse_cols c;
			reuse_cols(x->reads, x->life, &c);
			out_fmt_compact(a, sizeof a, (double)x->bytes_written);
			out_fmt_compact(b, sizeof b, (double)x->bytes_read);
			fprintf(o, "  %14s %14s %10s %10s %12s  ", a, b, c.unread, c.reads, c.life);
		} else {
			out_fmt_compact(a, sizeof a, x->produced);
			out_fmt_compact(b, sizeof b, x->consumed);
			fprintf(o, "  %12s %12s  ", a, b);
		}
		fprintf(o, "%s%s%s%s\n", x->name, *x->where ? " (" : "", x->where, *x->where ? ")" : "");
	}
}

static void write_text(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	uint64_t local = 0, cross_fn = 0;
	for (size_t i = 0; i < v->n; i++)
		*(v->e[i].src == v->e[i].dst ? &local : &cross_fn) += v->e[i].bytes;
	fprintf(o, "Function dataflow (producer -> consumer): %zu functions, %zu of %zu flows shown\n",
	        f->nfn, v->nix, v->n);
	fprintf(o, "%s\n", f->full ? "full trace: bytes read from their last writer; transfers: the model's"
	                           : "transfers: the model's events, publishing access -> detecting access");
	if (f->full)
		fprintf(o, "local (same function) %" PRIu64 " bytes, cross-function %" PRIu64 " bytes\n",
		        local, cross_fn);
	const char *notes = attrib_notes(f->a);
	if (*notes)
		fprintf(o, "%s", notes);
	text_edges(o, v);
	if (v->by_object)
		text_objects(o, v);
	else
		text_functions(o, v);
}

static void write_csv(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	fprintf(o, "rank,producer,consumer,producer_thread,consumer_thread,transfers,true,false,"
	           "events,bytes,unique_bytes,cross_thread_bytes,cross_thread_unique_bytes\n");
	for (size_t i = 0; i < v->nix; i++) {
		const struct fedge *e = &v->e[v->ix[i]];
		char a[32], b[32], c[32], t1[64], t2[64];
		fprintf(o, "%zu,", i + 1);
		out_csv_field(o, f->fn[e->src].name);
		fputc(',', o);
		out_csv_field(o, f->fn[e->dst].name);
		fprintf(o, ",%s,%s,%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
		        thr(f, e->ts, t1, sizeof t1), thr(f, e->td, t2, sizeof t2),
		        num(e->w[MX_ALL], a, sizeof a), num(e->w[MX_TRUE], b, sizeof b),
		        num(e->w[MX_FALSE], c, sizeof c), e->events, e->bytes, e->unique,
		        e->cross_bytes, e->cross_unique);
	}
}

static void json_hist(FILE *o, const char *key, const uint64_t *h)
{
	unsigned last = 0;
	for (unsigned b = 0; b < REUSE_BUCKETS; b++)
		if (h[b])
			last = b + 1;
	fprintf(o, "\"%s\":[", key);
	for (unsigned b = 0; b < last; b++)
		fprintf(o, "%s%" PRIu64, b ? "," : "", h[b]);
	fputc(']', o);
}

static void write_json(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	fprintf(o, "{\"full\":%s,\"reuse_buckets\":\"log2: 0, 1, 2-3, 4-7, ...\",\"functions\":[",
	        f->full ? "true" : "false");
	for (size_t i = 0; i < f->nfn; i++) {
		const struct ffunc *x = &f->fn[i];
		char a[32], b[32];
		fprintf(o, "%s\n{\"name\":", i ? "," : "");
		out_json_string(o, x->name);
		fprintf(o, ",\"where\":");
		out_json_string(o, *x->where ? x->where : NULL);
		fprintf(o, ",\"produced\":%s,\"consumed\":%s,\"bytes_written\":%" PRIu64
		           ",\"bytes_read\":%" PRIu64 ",",
		        num(x->produced, a, sizeof a), num(x->consumed, b, sizeof b), x->bytes_written,
		        x->bytes_read);
		json_hist(o, "reads_per_written_byte", x->reads);
		fputc(',', o);
		json_hist(o, "lifetime_ns", x->life);
		fputc('}', o);
	}
	fprintf(o, "\n],\"objects\":[");
	for (size_t i = 0, k = 0; f->full && i < f->nobj && i < f->a->nobjs; i++) {
		const struct oreuse *x = &f->obj[i];
		if (!obj_bytes(f, (uint32_t)i))
			continue;
		fprintf(o, "%s\n{\"name\":", k++ ? "," : "");
		out_json_string(o, f->a->objs[i].name);
		fprintf(o, ",\"kind\":\"%s\",\"bytes_written\":%" PRIu64 ",\"bytes_read\":%" PRIu64 ",",
		        obj_kind_name(f->a->objs[i].kind), x->bytes_written, x->bytes_read);
		json_hist(o, "reads_per_written_byte", x->reads);
		fputc(',', o);
		json_hist(o, "lifetime_ns", x->life);
		fputc('}', o);
	}
	fprintf(o, "\n],\"flows\":[");
	for (size_t i = 0; i < v->nix; i++) {
		const struct fedge *e = &v->e[v->ix[i]];
		char a[32], b[32], c[32], t1[64], t2[64];
		fprintf(o, "%s\n{\"producer\":", i ? "," : "");
		out_json_string(o, f->fn[e->src].name);
		fprintf(o, ",\"consumer\":");
		out_json_string(o, f->fn[e->dst].name);
		if (v->by_threads) {
			fprintf(o, ",\"producer_thread\":");
			out_json_string(o, thr(f, e->ts, t1, sizeof t1));
			fprintf(o, ",\"consumer_thread\":");
			out_json_string(o, thr(f, e->td, t2, sizeof t2));
		}
		fprintf(o, ",\"transfers\":%s,\"true\":%s,\"false\":%s,\"events\":%" PRIu64
		           ",\"bytes\":%" PRIu64 ",\"unique_bytes\":%" PRIu64
		           ",\"cross_thread_bytes\":%" PRIu64 ",\"cross_thread_unique_bytes\":%" PRIu64 "}",
		        num(e->w[MX_ALL], a, sizeof a), num(e->w[MX_TRUE], b, sizeof b),
		        num(e->w[MX_FALSE], c, sizeof c), e->events, e->bytes, e->unique,
		        e->cross_bytes, e->cross_unique);
	}
	fprintf(o, "\n]}\n");
}

/* Text inside a DOT string: quotes and backslashes escaped. */
static void dot_escaped(FILE *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', o);
		fputc(*s == '\n' ? ' ' : *s, o);
	}
}

static void write_dot(FILE *o, const struct view *v)
{
	const struct fnflow *f = v->f;
	double maxw = 0, maxe = 0;
	for (size_t i = 0; i < v->nix; i++)
		maxe = fmax(maxe, edge_rank(v, &v->e[v->ix[i]]));
	for (size_t k = 0; k < v->nfns; k++)
		maxw = fmax(maxw, fn_work(f, &f->fn[v->fns[k]]));
	fprintf(o, "digraph functions {\n  rankdir=LR;\n  node [shape=box, style=filled, "
	           "fillcolor=\"#e8eef7\", fontname=\"Helvetica\"];\n"
	           "  edge [fontname=\"Helvetica\", fontsize=10];\n");
	for (size_t k = 0; k < v->nfns; k++) {
		size_t i = v->fns[k];
		const struct ffunc *x = &f->fn[i];
		double w = fn_work(f, x);
		fprintf(o, "  f%zu [label=\"", i);
		dot_escaped(o, x->name);
		if (*x->where) {
			fputs("\\n", o);   /* a line break in the label */
			dot_escaped(o, x->where);
		}
		fprintf(o, "\", fontsize=%.1f];\n", 10.0 + (maxw > 0 ? 14.0 * w / maxw : 0));
	}
	for (size_t i = 0; i < v->nix; i++) {
		const struct fedge *e = &v->e[v->ix[i]];
		char lab[200], a[32], b[32], t1[64], t2[64];
		if (f->full) {
			out_fmt_compact(a, sizeof a, (double)e->bytes);
			out_fmt_compact(b, sizeof b, (double)e->unique);
			snprintf(lab, sizeof lab, "%s B (%s unique)", a, b);
		} else {
			out_fmt_compact(a, sizeof a, e->w[v->kind]);
			snprintf(lab, sizeof lab, "%s", a);
		}
		if (v->by_threads) {
			size_t l = strlen(lab);
			snprintf(lab + l, sizeof lab - l, " %s->%s", thr(f, e->ts, t1, sizeof t1),
			         thr(f, e->td, t2, sizeof t2));
		}
		fprintf(o, "  f%u -> f%u [label=\"", e->src, e->dst);
		dot_escaped(o, lab);
		fprintf(o, "\", penwidth=%.2f];\n", 1.0 + (maxe > 0 ? 5.0 * edge_rank(v, e) / maxe : 0));
	}
	fprintf(o, "}\n");
}

int fnflow_write(struct fnflow *f, FILE *out, enum attrib_format fmt, size_t top,
                 enum mx_kind kind, bool by_threads, bool by_object)
{
	struct view v = { 0 };
	if (f->oom || view_build(&v, f, top, kind, by_threads) ||
	    (by_object && objs_rank(&v, top))) {
		view_free(&v);
		ana_err("functions: out of memory");
		return EXIT_BADTRACE;
	}
	switch (fmt) {
	case AF_TEXT: write_text(out, &v); break;
	case AF_CSV: (by_object ? csv_objects : write_csv)(out, &v); break;
	case AF_JSON: write_json(out, &v); break;
	case AF_DOT: write_dot(out, &v); break;
	}
	view_free(&v);
	return ferror(out) ? -1 : 0;
}

/* ---- the command ---------------------------------------------------------------------- */

static int write_functions(struct attrib_cli *c, struct analysis *an, struct attrib *a, FILE *f)
{
	(void)an;
	(void)a;
	return fnflow_write(c->ff, f, c->fmt, c->top, c->kind, c->by_threads, c->by_object);
}

int cmd_functions(int argc, char **argv)
{
	return attrib_cli_main("functions", ACMD_FUNCTIONS, argc, argv, write_functions);
}
