/* Communication by code region, by phase and by time window: see regions.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib.h"
#include "regions.h"
#include "symtab.h"

static char *dup_or_flag(struct regions *r, const char *s)
{
	char *d = strdup(s);
	if (!d)
		r->oom = true;
	return d;
}

struct matrices *regions_matrices(const struct regions *r)
{
	return matrices_create_dense_max(r->n, NULL, 0);
}

static void node_free(struct region_node *nd)
{
	matrices_free(nd->mx);
	free(nd->entered);
	free(nd->name);
	free(nd->where);
	free(nd->path);
}

/* A new node under parent (REGION_NONE: the root). */
size_t regions_node_add(struct regions *r, size_t parent, const char *name)
{
	if (r->nnodes == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct region_node *v = realloc(r->node, cap * sizeof *v);
		if (!v) {
			r->oom = true;
			return REGION_NONE;
		}
		r->node = v;
		r->cap = cap;
	}
	struct region_node *nd = &r->node[r->nnodes];
	memset(nd, 0, sizeof *nd);
	nd->parent = parent;
	nd->depth = parent == REGION_NONE ? 0 : r->node[parent].depth + 1;
	nd->name = dup_or_flag(r, name);
	nd->where = dup_or_flag(r, "");
	nd->path = dup_or_flag(r, name);
	if (parent != REGION_NONE && parent != 0 && nd->path) {
		const char *pp = r->node[parent].path;
		char *p = malloc(strlen(pp) + strlen(name) + 2);
		if (p)
			sprintf(p, "%s/%s", pp, name);
		free(nd->path);
		nd->path = p;
	}
	uint64_t fn;
	if (ct_marker_omp_fn(name, &fn))
		nd->omp_fn = fn;
	nd->mx = regions_matrices(r);
	nd->entered = calloc(r->n ? r->n : 1, 1);
	if (!nd->name || !nd->where || !nd->path || !nd->mx || !nd->entered) {
		r->oom = true;
		node_free(nd);
		return REGION_NONE;
	}
	return r->nnodes++;
}

static size_t child_named(struct regions *r, size_t parent, const char *name)
{
	for (size_t i = parent + 1; i < r->nnodes; i++)
		if (r->node[i].parent == parent && !strcmp(r->node[i].name, name))
			return i;
	return regions_node_add(r, parent, name);
}

/* A new time slot at the end of *v; NULL when out of memory. */
static struct time_slot *slot_add(struct regions *r, struct time_slot **v, size_t *nv,
                                  size_t *cap, uint64_t start, const char *name)
{
	if (*nv == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		struct time_slot *p = realloc(*v, c * sizeof *p);
		if (!p) {
			r->oom = true;
			return NULL;
		}
		*v = p;
		*cap = c;
	}
	struct time_slot *s = &(*v)[*nv];
	memset(s, 0, sizeof *s);
	s->start = s->end = start;
	snprintf(s->name, sizeof s->name, "%s", name);
	s->mx = regions_matrices(r);
	s->count = regions_matrices(r);
	if (!s->mx || !s->count) {
		matrices_free(s->mx);
		matrices_free(s->count);
		r->oom = true;
		return NULL;
	}
	(*nv)++;
	return s;
}

struct regions *regions_create(size_t nthreads, uint64_t window_ns)
{
	struct regions *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->n = nthreads;
	r->window_ns = window_ns;
	r->th = calloc(nthreads ? nthreads : 1, sizeof *r->th);
	if (!r->th || regions_node_add(r, REGION_NONE, "(program)") != 0) {
		regions_free(r);
		return NULL;
	}
	return r;
}

void regions_slots_free(struct time_slot *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		matrices_free(v[i].mx);
		matrices_free(v[i].count);
	}
	free(v);
}

void regions_free(struct regions *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nnodes; i++)
		node_free(&r->node[i]);
	free(r->node);
	for (size_t i = 0; r->th && i < r->n; i++)
		free(r->th[i].stack);
	free(r->th);
	regions_slots_free(r->phase, r->nphases);
	regions_slots_free(r->win, r->nwin);
	free(r);
}

static void push_region(struct regions *r, struct region_thread *t, size_t node)
{
	if (t->depth == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 8;
		size_t *s = realloc(t->stack, cap * sizeof *s);
		if (!s) {
			r->oom = true;
			return;
		}
		t->stack = s;
		t->cap = cap;
	}
	t->stack[t->depth++] = node;
}

static size_t innermost(const struct regions *r, uint32_t thread)
{
	const struct region_thread *t = &r->th[thread];
	return t->depth ? t->stack[t->depth - 1] : 0;
}

static void on_marker(struct regions *r, const struct ct_record *rec)
{
	struct region_thread *t = &r->th[rec->thread];
	const struct ct_marker *m = &rec->u.marker;
	switch (m->kind) {
	case CT_MARK_REGION_BEGIN: {
		size_t node = child_named(r, innermost(r, rec->thread), m->name);
		if (node == REGION_NONE)
			return;
		r->node[node].entries++;
		r->node[node].entered[rec->thread] = 1;
		if (r->node[node].omp_fn)
			r->omp_markers++;
		push_region(r, t, node);
		break;
	}
	case CT_MARK_REGION_END:
		if (t->depth)
			t->depth--;
		else
			r->unmatched_ends++;
		break;
	case CT_MARK_PHASE:
		if (r->nphases)
			r->phase[r->nphases - 1].end = rec->time;
		slot_add(r, &r->phase, &r->nphases, &r->phase_cap, rec->time, m->name);
		break;
	default:
		break;              /* throttle, and kinds of later versions */
	}
}

static void regions_record(void *self, const struct ct_record *rec)
{
	struct regions *r = self;
	if (!r->seen) {
		r->seen = true;
		r->first_time = rec->time;
		slot_add(r, &r->phase, &r->nphases, &r->phase_cap, rec->time, "");
	}
	if (rec->time > r->last_time)
		r->last_time = rec->time;
	if (rec->thread >= r->n)
		return;
	r->node[0].entered[rec->thread] = 1;
	if (rec->type == CT_REC_MARKER)
		on_marker(r, rec);
	else if (rec->type == CT_REC_THREAD_END) {
		r->unclosed += r->th[rec->thread].depth;
		r->th[rec->thread].depth = 0;
	}
}

static struct time_slot *window_of(struct regions *r, uint64_t t);

static void regions_finish(void *self)
{
	struct regions *r = self;
	for (size_t i = 0; i < r->n; i++)
		r->unclosed += r->th[i].depth;
	if (r->nphases)
		r->phase[r->nphases - 1].end = r->last_time;
	/* the windows cover the whole trace, the last one up to its end */
	if (r->window_ns && r->seen && window_of(r, r->last_time) && r->win[r->nwin - 1].end > r->last_time)
		r->win[r->nwin - 1].end = r->last_time;
}

struct record_consumer regions_record_consumer(struct regions *r)
{
	return (struct record_consumer){ r, regions_record, regions_finish };
}

static void slot_event(struct time_slot *s, const struct comm_event *ev)
{
	s->events++;
	s->total[MX_ALL] += ev->weight;
	s->total[ev->true_sharing ? MX_TRUE : MX_FALSE] += ev->weight;
	matrices_add_event(s->mx, ev);
	struct comm_event one = *ev;
	one.weight = 1;
	one.var = 0;
	matrices_add_event(s->count, &one);
}

/* The window of time t, created (with the ones before it) when needed. */
static struct time_slot *window_of(struct regions *r, uint64_t t)
{
	uint64_t rel = t > r->first_time ? t - r->first_time : 0;
	uint64_t idx = rel / r->window_ns;
	if (idx > 1000000) {            /* a window far too short for the trace */
		r->oom = true;
		return NULL;
	}
	while (r->nwin <= idx) {
		uint64_t start = r->first_time + r->nwin * r->window_ns;
		struct time_slot *s = slot_add(r, &r->win, &r->nwin, &r->win_cap, start, "");
		if (!s)
			return NULL;
		s->end = start + r->window_ns;
	}
	return &r->win[idx];
}

void regions_count(struct regions *r, size_t node, const struct comm_event *ev)
{
	int kind = ev->true_sharing ? MX_TRUE : MX_FALSE;
	for (; node != REGION_NONE; node = r->node[node].parent) {
		struct region_node *nd = &r->node[node];
		nd->events++;
		nd->total[MX_ALL] += ev->weight;
		nd->total[kind] += ev->weight;
		matrices_add_event(nd->mx, ev);
	}
}

static void regions_event(void *self, const struct comm_event *ev)
{
	struct regions *r = self;
	if (ev->dst >= r->n || ev->src >= r->n)
		return;
	regions_count(r, innermost(r, ev->dst), ev);
	if (r->nphases)
		slot_event(&r->phase[r->nphases - 1], ev);
	struct time_slot *w;
	if (r->window_ns && r->seen && (w = window_of(r, ev->time)))
		slot_event(w, ev);
}

struct event_consumer regions_event_consumer(struct regions *r)
{
	return (struct event_consumer){ r, regions_event };
}

void regions_name_omp(struct regions *r, struct ct_trace *t)
{
	size_t len;
	const void *p = ct_trace_section(t, CT_SEC_SYMBOLS, &len);
	if (!p)
		return;
	struct symtab s;
	symtab_init(&s);
	char err[300];
	if (!symtab_parse(&s, p, len, err, sizeof err)) {
		if (!r->no_demangle)
			symtab_demangle(&s);
		for (size_t i = 0; i < r->nnodes; i++) {
			struct region_node *nd = &r->node[i];
			struct st_code c;
			if (!nd->omp_fn || !symtab_code(&s, nd->omp_fn, &c) || !c.func)
				continue;
			char where[300] = "";
			if (c.file)
				snprintf(where, sizeof where, "%s:%u", c.file, c.line);
			char *name = strdup(c.func), *w = strdup(where);
			if (!name || !w) {
				free(name);
				free(w);
				continue;
			}
			free(nd->name);
			free(nd->where);
			nd->name = name;
			nd->where = w;
		}
	}
	symtab_free(&s);
	/* paths from the new names, parents first (they come first) */
	for (size_t i = 1; i < r->nnodes; i++) {
		struct region_node *nd = &r->node[i];
		const char *pp = nd->parent ? r->node[nd->parent].path : NULL;
		char *path = malloc((pp ? strlen(pp) + 1 : 0) + strlen(nd->name) + 1);
		if (!path)
			continue;
		sprintf(path, "%s%s%s", pp ? pp : "", pp ? "/" : "", nd->name);
		free(nd->path);
		nd->path = path;
	}
}

static size_t find_path_or_name(const struct regions *r, const char *s, bool *ambiguous)
{
	*ambiguous = false;
	for (size_t i = 0; i < r->nnodes; i++)
		if (!strcmp(r->node[i].path, s))
			return i;
	size_t found = REGION_NONE;
	for (size_t i = 0; i < r->nnodes; i++) {
		if (strcmp(r->node[i].name, s))
			continue;
		if (found != REGION_NONE) {
			*ambiguous = true;
			return REGION_NONE;
		}
		found = i;
	}
	return found;
}

size_t regions_find(const struct regions *r, const char *s, bool *ambiguous)
{
	size_t i = find_path_or_name(r, s, ambiguous);
	char *d = i == REGION_NONE && !*ambiguous ? symbol_demangle(s) : NULL;
	if (d)
		i = find_path_or_name(r, d, ambiguous);
	free(d);
	return i;
}

size_t regions_next_child(const struct regions *r, size_t node, size_t *it)
{
	for (size_t i = *it ? *it : node + 1; i < r->nnodes; i++)
		if (r->node[i].parent == node) {
			*it = i + 1;
			return i;
		}
	*it = r->nnodes;
	return REGION_NONE;
}

int region_load(const struct regions *r, const struct matrices *mx, double *load)
{
	for (size_t t = 0; t < r->n; t++)
		load[t] = 0;
	struct mx_triplet *c;
	ptrdiff_t nc = matrices_triplets(mx, MX_THREAD, MX_ALL, false, &c);
	for (ptrdiff_t x = 0; x < nc; x++) {
		load[c[x].row] += c[x].v;
		if (c[x].col != c[x].row)
			load[c[x].col] += c[x].v;
	}
	free(c);
	return nc < 0 ? -1 : 0;
}

double region_imbalance(const struct regions *r, size_t node, const double *load)
{
	double sum = 0, max = 0;
	size_t k = 0;
	for (size_t t = 0; t < r->n; t++) {
		if (!r->node[node].entered[t] && load[t] == 0)
			continue;
		k++;
		sum += load[t];
		if (load[t] > max)
			max = load[t];
	}
	return k && sum > 0 ? max / (sum / (double)k) : 0;
}

int top_pair(const struct matrices *mx, size_t *a, size_t *b, double *w)
{
	*w = 0;
	struct mx_triplet *c;
	ptrdiff_t nc = matrices_triplets(mx, MX_THREAD, MX_ALL, true, &c);
	for (ptrdiff_t x = 0; x < nc; x++)
		if (c[x].row <= c[x].col && c[x].v > *w) {
			*w = c[x].v;
			*a = c[x].row;
			*b = c[x].col;
		}
	free(c);
	return nc < 0 ? -1 : *w > 0;
}

const char *regions_phase_at(const struct regions *r, uint64_t t)
{
	const char *name = "";
	for (size_t i = 0; i < r->nphases && r->phase[i].start <= t; i++)
		name = r->phase[i].name;
	return name;
}

int regions_hook_setup(void *arg, struct analysis *an)
{
	struct regions_hook *rh = arg;
	if (!(rh->r = regions_create(an->nthreads, rh->window_ns))) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	rh->r->no_demangle = rh->no_demangle;
	struct record_consumer rc = regions_record_consumer(rh->r);
	struct event_consumer ec = regions_event_consumer(rh->r);
	return analysis_hooks_add(rh->h, &rc, &ec);
}

void regions_hooks_init(struct analysis_hooks *h, struct regions_hook *rh, uint64_t window_ns)
{
	memset(h, 0, sizeof *h);
	memset(rh, 0, sizeof *rh);
	rh->h = h;
	rh->window_ns = window_ns;
	h->setup = regions_hook_setup;
	h->arg = rh;
}

/* The events of a slot by unordered pair (i <= j), in row-major order;
 * their number, -1: memory. */
static ptrdiff_t pair_counts(const struct time_slot *s, struct mx_triplet **out)
{
	ptrdiff_t n = matrices_triplets(s->count, MX_THREAD, MX_ALL, true, out), k = 0;
	for (ptrdiff_t x = 0; x < n; x++)
		if ((*out)[x].row <= (*out)[x].col)
			(*out)[k++] = (*out)[x];
	return n < 0 ? -1 : k;
}

/* Walks the pairs of run (a) and window (b) with events in either, in
 * row-major order: the counts of the next pair in *x, *y; false at the end. */
static bool next_pair(const struct mx_triplet *a, ptrdiff_t na, ptrdiff_t *ia,
                      const struct mx_triplet *b, ptrdiff_t nb, ptrdiff_t *ib, double *x, double *y)
{
	if (*ia >= na && *ib >= nb)
		return false;
	int cmp = *ia >= na ? 1 : *ib >= nb ? -1
	        : a[*ia].row != b[*ib].row ? (a[*ia].row < b[*ib].row ? -1 : 1)
	        : a[*ia].col != b[*ib].col ? (a[*ia].col < b[*ib].col ? -1 : 1) : 0;
	*x = cmp <= 0 ? a[(*ia)++].v : 0;
	*y = cmp >= 0 ? b[(*ib)++].v : 0;
	return true;
}

/* Is window w distributed over the pairs unlike run (chi-square test of
 * homogeneity of the 2 x k table, p < 0.001)?  -1: memory. */
static int pattern_changes(const struct time_slot *run, const struct time_slot *w)
{
	struct mx_triplet *a = NULL, *b = NULL;
	ptrdiff_t na = pair_counts(run, &a), nb = na < 0 ? -1 : pair_counts(w, &b), ia = 0, ib = 0;
	double nr = 0, nw = 0, x, y;
	while (next_pair(a, na, &ia, b, nb, &ib, &x, &y)) {
		nr += x;
		nw += y;
	}
	int changes = na < 0 || nb < 0 ? -1 : 0;
	double chi2 = 0;
	int k = 0;
	ia = ib = 0;
	while (!changes && nr >= CHANGE_MIN_EVENTS && nw >= CHANGE_MIN_EVENTS &&
	       next_pair(a, na, &ia, b, nb, &ib, &x, &y)) {
		double col = x + y;
		if (col == 0)
			continue;
		k++;
		double ex = col * nr / (nr + nw), ey = col * nw / (nr + nw);
		chi2 += (x - ex) * (x - ex) / ex + (y - ey) * (y - ey) / ey;
	}
	free(a);
	free(b);
	if (changes || k < 2)
		return changes;
	/* the 0.999 quantile of chi-square with k-1 degrees of freedom
	 * (Wilson-Hilferty; z = 3.090 is the normal 0.999 quantile) */
	double df = k - 1, c = 2 / (9 * df), q = 1 - c + 3.090 * sqrt(c);
	return chi2 > df * q * q * q;
}

static int slot_merge(struct time_slot *into, const struct time_slot *s)
{
	into->end = s->end;
	into->events += s->events;
	for (int k = 0; k < 3; k++)
		into->total[k] += s->total[k];
	return matrices_merge(into->mx, s->mx) || matrices_merge(into->count, s->count) ? -1 : 0;
}

long regions_detect_changes(struct regions *r, struct time_slot **out)
{
	struct time_slot *v = NULL;
	size_t nv = 0, cap = 0;
	for (size_t i = 0; i < r->nwin; i++) {
		const struct time_slot *w = &r->win[i];
		int change = nv ? pattern_changes(&v[nv - 1], w) : 1;
		char name[32];
		snprintf(name, sizeof name, "change %zu", nv);
		if (change < 0 || (change && !slot_add(r, &v, &nv, &cap, w->start, name)) ||
		    slot_merge(&v[nv - 1], w)) {
			regions_slots_free(v, nv);
			return -1;
		}
	}
	*out = v;
	return (long)nv;
}
