/* The window model: the ideal sampled detector.  Every pair of samples of
 * two different threads on the same line, at most --window ns apart, at
 * least one of them a store (or atomic), is a communication from the
 * earlier sample's thread (src) to the later one's (dst), true sharing when
 * the byte ranges overlap, weight = the later sample's period x K.  No
 * hashing, no watchpoints.
 *
 * Memory is bounded: each line keeps its last WIN_RING samples (older pairs
 * within the window are missed, see the man page), and lines whose newest
 * sample is older than the window are dropped when the table fills. */
#include <stdlib.h>
#include <string.h>

#include "model_common.h"

#define WIN_RING 32          /* samples remembered per line */
#define WIN_TABLE_MIN 1024

struct wsample {
	uint64_t time, addr, ip;
	uint32_t thread, cpu;
	uint8_t len, kind;
};

#define NO_RING UINT32_MAX

/* A line holds its only sample inline; a ring from the pool is attached
 * when a second sample arrives within the window (most lines never get
 * one: private data). */
struct wline {
	_Alignas(64) uint64_t line;  /* one cache line per entry */
	struct wsample one;      /* the sample, while ring == NO_RING */
	uint32_t ring;           /* index of its ring in the pool, or NO_RING */
	uint16_t head, count;    /* ring: next write position; samples held (0: free slot) */
};

struct win {
	struct model_opts o;
	unsigned line_shift;
	size_t nthreads;
	struct kfilter kf;
	struct event_consumer *out;
	size_t nout;
	struct wline *tab;
	size_t cap, used;        /* cap: power of two */
	struct wsample *pool;    /* rings, WIN_RING each */
	size_t pool_rings;
	uint32_t *free_rings;
	size_t nfree;
	uint64_t now;
};

static uint64_t hash_line(uint64_t ln)
{
	ln ^= ln >> 33;
	ln *= 0xff51afd7ed558ccdull;
	ln ^= ln >> 33;
	return ln;
}

static struct wline *alloc_table(size_t cap)
{
	struct wline *t = aligned_alloc(64, cap * sizeof *t);
	if (t)
		memset(t, 0, cap * sizeof *t);
	return t;
}

static void *win_create(const struct model_setup *s)
{
	struct win *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->o = *s->opts;
	w->line_shift = log2u(s->line_size ? s->line_size : 64);
	w->nthreads = s->nthreads;
	w->out = s->out;
	w->nout = s->nout;
	w->cap = WIN_TABLE_MIN;
	w->tab = alloc_table(w->cap);
	if (!w->tab || kfilter_init(&w->kf, w->o.period_multiplier, s->nthreads)) {
		free(w->tab);
		free(w);
		return NULL;
	}
	return w;
}

/* Time of the line's newest sample. */
static uint64_t newest(const struct win *w, const struct wline *l)
{
	if (l->ring == NO_RING)
		return l->one.time;
	return w->pool[(size_t)l->ring * WIN_RING + (l->head + WIN_RING - 1) % WIN_RING].time;
}

static struct wline *find_slot(struct wline *tab, size_t cap, uint64_t line)
{
	size_t i = hash_line(line) & (cap - 1);
	while (tab[i].count && tab[i].line != line)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static bool alloc_ring(struct win *w, uint32_t *id)
{
	if (w->nfree) {
		*id = w->free_rings[--w->nfree];
		return true;
	}
	size_t n = w->pool_rings ? w->pool_rings * 2 : 256;
	struct wsample *p = realloc(w->pool, n * WIN_RING * sizeof *p);
	uint32_t *f = realloc(w->free_rings, n * sizeof *f);
	if (p)
		w->pool = p;
	if (f)
		w->free_rings = f;
	if (!p || !f || n > UINT32_MAX)
		return false;
	for (size_t i = n; i > w->pool_rings + 1; i--)
		w->free_rings[w->nfree++] = (uint32_t)(i - 1);
	*id = (uint32_t)w->pool_rings;
	w->pool_rings = n;
	return true;
}

/* Drop lines with nothing inside the window; grow when still crowded. */
static int rebuild(struct win *w)
{
	size_t live = 0;
	for (size_t i = 0; i < w->cap; i++)
		if (w->tab[i].count && w->now - newest(w, &w->tab[i]) <= w->o.window_ns)
			live++;
	size_t cap = w->cap;
	while (live * 3 > cap)
		cap *= 2;
	struct wline *nt = alloc_table(cap);
	if (!nt)
		return -1;
	for (size_t i = 0; i < w->cap; i++) {
		struct wline *l = &w->tab[i];
		if (!l->count)
			continue;
		if (w->now - newest(w, l) <= w->o.window_ns)
			*find_slot(nt, cap, l->line) = *l;
		else if (l->ring != NO_RING)
			w->free_rings[w->nfree++] = l->ring;
	}
	free(w->tab);
	w->tab = nt;
	w->cap = cap;
	w->used = live;
	return 0;
}

static void win_sample(struct win *w, const struct ct_record *r)
{
	const struct ct_sample *s = &r->u.sample;
	uint64_t ln = s->addr >> w->line_shift;
	uint64_t line = ln << w->line_shift;
	if (r->time > w->now)
		w->now = r->time;
	struct wline *l = find_slot(w->tab, w->cap, line);
	if (!l->count) {
		if ((w->used + 1) * 3 > w->cap * 2) {
			if (rebuild(w))
				return;
			l = find_slot(w->tab, w->cap, line);
		}
		*l = (struct wline){ .line = line, .ring = NO_RING };
		w->used++;
	} else if (r->time >= newest(w, l) && r->time - newest(w, l) > w->o.window_ns) {
		/* everything it holds is out of the window: start afresh */
		if (l->ring != NO_RING)
			w->free_rings[w->nfree++] = l->ring;
		l->ring = NO_RING;
		l->count = l->head = 0;
	}
	struct wsample *ring = l->ring == NO_RING ? NULL : w->pool + (size_t)l->ring * WIN_RING;
	bool store = s->kind != CT_ACCESS_LOAD;
	double weight = (double)s->period * w->kf.k;
	/* newest first; stream order is time order */
	for (unsigned k = 0; k < l->count; k++) {
		const struct wsample *p = ring ? &ring[(l->head + WIN_RING - 1 - k) % WIN_RING] : &l->one;
		if (r->time - p->time > w->o.window_ns && r->time >= p->time)
			break;
		if (p->thread == r->thread || (!store && p->kind == CT_ACCESS_LOAD))
			continue;
		struct comm_event ev = {
			.time = r->time, .dst = r->thread, .src = p->thread,
			.dst_cpu = s->cpu, .src_cpu = p->cpu, .line = line,
			.addr = s->addr, .src_addr = p->addr, .len = s->len, .src_len = p->len,
			.dst_kind = s->kind, .via = COMM_VIA_SAMPLE,
			.true_sharing = ranges_overlap(s->addr, s->len, p->addr, p->len),
			.ip = s->ip, .src_ip = p->ip, .weight = weight, .var = sampled_var(weight),
			.unit_max = weight,
		};
		emit(w->out, w->nout, &ev);
	}
	struct wsample ns = {
		.time = r->time, .addr = s->addr, .ip = s->ip, .thread = r->thread,
		.cpu = s->cpu, .len = s->len, .kind = s->kind,
	};
	if (!l->count) {
		l->one = ns;
		l->count = 1;
		return;
	}
	if (!ring) {
		uint32_t id;
		if (!alloc_ring(w, &id))
			return;
		l->ring = id;
		ring = w->pool + (size_t)id * WIN_RING;
		ring[0] = l->one;
		l->head = 1;
	}
	ring[l->head] = ns;
	l->head = (uint16_t)((l->head + 1) % WIN_RING);
	if (l->count < WIN_RING)
		l->count++;
}

/* (inlined in win_records' loop) */
static inline __attribute__((always_inline)) void
win_record(void *self, const struct ct_record *r)
{
	struct win *w = self;
	if (r->type != CT_REC_SAMPLE || r->thread >= w->nthreads)
		return;
	if (w->kf.k != 1 && !kfilter_keep(&w->kf, r))
		return;
	win_sample(w, r);
}

static void win_destroy(void *self)
{
	struct win *w = self;
	if (!w)
		return;
	kfilter_free(&w->kf);
	free(w->tab);
	free(w->pool);
	free(w->free_rings);
	free(w);
}

MODEL_RECORDS(win_records, win_record)

const struct model_ops model_window = {
	.name = "window",
	.summary = "every pair of samples of two threads on a line within --window ns, one a store",
	.create = win_create,
	.record = win_record,
	.records = win_records,
	.destroy = win_destroy,
};
