/* The matrices consumer: directed thread, core and socket matrices of
 * communication events (row dst, column src) for all, true and false
 * sharing, weights summed; plus event counts by via and kind.
 *
 * An index of up to dense_max rows is kept dense (an array index per
 * event); a larger one sparse: an open-addressing hash table from (row,
 * column) to the cell's slot in the list of cells that received weight,
 * and the three kinds' values by slot, so memory grows with the pairs that
 * communicate (a ring of 10,000 threads: 10,000 cells, not 10^8). */
#include <stdlib.h>
#include <string.h>

#include "ana.h"

const char *const mx_kind_names[3] = { "all", "true", "false" };
const char *const mx_index_names[3] = { "thread", "core", "socket" };

#define IDENTITY_CPU_MAX 1024  /* cpus beyond this are "unmapped" without a map */

/* The cells that ever received weight, per index: the communicating pairs,
 * walked instead of all n x n cells (thousands of threads).  When the index
 * is sparse, also where each cell's values are. */
struct mx_sparse {
	uint32_t (*rc)[2];
	size_t n, cap;
	/* sparse only: slot + 1 of a cell by hash (0: empty), tcap a power of 2
	 * at least twice n; the values of slot k are v[kind][k] */
	uint32_t *table;
	size_t tcap;
	double *v[3];
};

struct matrices {
	struct matrix m[3][3];   /* [index][kind] */
	struct mx_sparse cells[3];
	bool sparse[3];
	size_t dense_max;
	const struct topology *topo;
	struct mx_totals tot;
};

static size_t stride_of(const struct matrix *m)
{
	return m->stride ? m->stride : m->n;
}

/* Dense storage for n rows (n <= max), growing by half again at least (a
 * cpu index met one by one would otherwise copy the matrix each time), to
 * at most max rows. */
static int mat_resize(struct matrix *m, size_t n, size_t max)
{
	size_t old = stride_of(m);
	if (n <= old && m->cell) {
		if (n > m->n)
			m->n = n;
		return 0;
	}
	size_t cap = old + old / 2 > n ? old + old / 2 : n;
	if (cap > max)
		cap = n > max ? n : max;
	double *c = calloc(cap ? cap * cap : 1, sizeof *c);
	if (!c)
		return -1;
	for (size_t r = 0; m->cell && r < m->n; r++)
		memcpy(c + r * cap, m->cell + r * old, m->n * sizeof *c);
	free(m->cell);
	m->cell = c;
	m->stride = cap;
	m->n = n;
	return 0;
}

static uint32_t slot_hash(uint32_t row, uint32_t col, size_t tcap)
{
	uint64_t key = (uint64_t)row << 32 | col;
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (uint32_t)(tcap - 1);
}

/* Where (row, col) is in the table: its entry, or the empty one to fill. */
static uint32_t *slot_find(const struct mx_sparse *s, uint32_t row, uint32_t col)
{
	for (uint32_t h = slot_hash(row, col, s->tcap);; h = (h + 1) & (uint32_t)(s->tcap - 1)) {
		uint32_t *e = &s->table[h];
		if (!*e || (s->rc[*e - 1][0] == row && s->rc[*e - 1][1] == col))
			return e;
	}
}

/* A table of twice tcap entries (at least twice the cells), the cells
 * entered again. */
static int table_grow(struct mx_sparse *s)
{
	size_t tcap = s->tcap ? s->tcap * 2 : 16;
	while (tcap < 2 * s->n + 2)
		tcap *= 2;
	uint32_t *t = calloc(tcap, sizeof *t);
	if (!t)
		return -1;
	free(s->table);
	s->table = t;
	s->tcap = tcap;
	for (size_t k = 0; k < s->n; k++)
		*slot_find(s, s->rc[k][0], s->rc[k][1]) = (uint32_t)k + 1;
	return 0;
}

/* Room for one more cell in the list (and its values when sparse). */
static int cells_reserve(struct mx_sparse *c, bool sparse)
{
	if (c->n < c->cap)
		return 0;
	size_t nc = c->cap ? c->cap * 2 : 64;
	void *p = realloc(c->rc, nc * sizeof *c->rc);
	if (!p)
		return -1;
	c->rc = p;
	for (int k = 0; sparse && k < 3; k++) {
		double *v = realloc(c->v[k], nc * sizeof *v);
		if (!v)
			return -1;
		c->v[k] = v;
	}
	c->cap = nc;
	return 0;
}

static int cells_append(struct mx_sparse *c, size_t row, size_t col, bool sparse)
{
	if (cells_reserve(c, sparse))
		return -1;
	c->rc[c->n][0] = (uint32_t)row;
	c->rc[c->n][1] = (uint32_t)col;
	c->n++;
	return 0;
}

/* The index's values in the sparse form: from its dense matrices, which
 * are freed; the index then has any number of rows. */
static int make_sparse(struct matrices *m, int index)
{
	struct mx_sparse *s = &m->cells[index];
	for (int k = 0; k < 3; k++) {
		double *v = malloc((s->cap ? s->cap : 1) * sizeof *v);
		if (!v)
			return -1;
		free(s->v[k]);
		s->v[k] = v;
	}
	while (s->tcap < 2 * s->cap + 2)
		if (table_grow(s))
			return -1;
	for (int k = 0; k < 3; k++) {
		struct matrix *a = &m->m[index][k];
		for (size_t x = 0; x < s->n; x++)
			s->v[k][x] = a->cell ? a->cell[s->rc[x][0] * stride_of(a) + s->rc[x][1]] : 0;
		free(a->cell);
		*a = (struct matrix){ .n = a->n, .sp = s, .kind = (unsigned)k };
	}
	m->sparse[index] = true;
	return 0;
}

/* Size n for the index: dense up to dense_max, else sparse. */
static int index_resize(struct matrices *m, int index, size_t n)
{
	if (!m->sparse[index] && n > m->dense_max && make_sparse(m, index))
		return -1;
	for (int k = 0; k < 3; k++) {
		struct matrix *a = &m->m[index][k];
		if (m->sparse[index]) {
			if (n > a->n)
				a->n = n;
		} else if (mat_resize(a, n, m->dense_max)) {
			return -1;
		}
	}
	return 0;
}

struct matrices *matrices_create_dense_max(size_t nthreads, const struct topology *topo,
                                           size_t dense_max)
{
	struct matrices *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->topo = topo;
	m->dense_max = dense_max;
	size_t n[3] = { nthreads, 0, 0 };
	if (topo && !topo->identity) {
		n[1] = topo->ncores;
		n[2] = topo->nsockets;
	} else if (topo) {
		n[2] = 1;
	}
	for (int i = 0; i < 3; i++)
		if (index_resize(m, i, n[i])) {
			matrices_free(m);
			return NULL;
		}
	return m;
}

struct matrices *matrices_create(size_t nthreads, const struct topology *topo)
{
	return matrices_create_dense_max(nthreads, topo, MX_DENSE_MAX);
}

void matrices_free(struct matrices *m)
{
	if (!m)
		return;
	for (int i = 0; i < 3; i++) {
		for (int k = 0; k < 3; k++) {
			free(m->m[i][k].cell);
			free(m->cells[i].v[k]);
		}
		free(m->cells[i].rc);
		free(m->cells[i].table);
	}
	free(m);
}

/* Values v (by kind) to cell (row, col) of a sparse index. */
static void add_sparse(struct mx_sparse *s, size_t row, size_t col, const double v[3])
{
	uint32_t *e = slot_find(s, (uint32_t)row, (uint32_t)col);
	if (!*e) {
		if (v[MX_ALL] == 0)
			return;  /* as dense: a cell is listed from its first weight */
		if (2 * (s->n + 1) > s->tcap) {
			if (table_grow(s))
				return;
			e = slot_find(s, (uint32_t)row, (uint32_t)col);
		}
		if (cells_append(s, row, col, true))
			return;
		*e = (uint32_t)s->n;
		for (int k = 0; k < 3; k++)
			s->v[k][s->n - 1] = 0;
	}
	for (int k = 0; k < 3; k++)
		s->v[k][*e - 1] += v[k];
}

/* Values v (by kind: all, true, false) to cell (row, col), the index grown
 * to hold it.  An event adds its weight to all and to its kind and 0 to the
 * other kind, which leaves that one as it was. */
static int add_values(struct matrices *m, int index, size_t row, size_t col, const double v[3])
{
	struct matrix *a = &m->m[index][MX_ALL];
	if ((row >= a->n || col >= a->n) && index_resize(m, index, (row > col ? row : col) + 1))
		return -1;
	if (m->sparse[index]) {
		add_sparse(&m->cells[index], row, col, v);
		return 0;
	}
	size_t at = row * a->stride + col;
	if (a->cell[at] == 0 && v[MX_ALL] != 0 && cells_append(&m->cells[index], row, col, false))
		return -1;
	for (int k = 0; k < 3; k++)
		m->m[index][k].cell[at] += v[k];
	return 0;
}

static void add(struct matrices *m, int index, size_t row, size_t col, bool tr, double w)
{
	double v[3] = { w, tr ? w : 0, tr ? 0 : w };
	add_values(m, index, row, col, v);
}

/* cpu -> core/socket index, false if unknown */
static bool map_cpu(const struct topology *t, uint32_t cpu, uint32_t *core, uint32_t *socket)
{
	if (cpu == UINT32_MAX)
		return false;
	if (t->identity) {
		if (cpu >= IDENTITY_CPU_MAX)
			return false;
		*core = cpu;
		*socket = 0;
		return true;
	}
	if (cpu >= t->ncpus || t->core[cpu] == UINT32_MAX)
		return false;
	*core = t->core[cpu];
	*socket = t->socket[cpu];
	return true;
}

void matrices_add_event(struct matrices *m, const struct comm_event *ev)
{
	unsigned via = ev->via < 3 ? ev->via : 0;
	m->tot.events[via][ev->true_sharing]++;
	m->tot.weight[via][ev->true_sharing] += ev->weight;
	m->tot.var[via][ev->true_sharing] += ev->var;
	if (ev->unit_max > m->tot.unit_max)
		m->tot.unit_max = ev->unit_max;
	if (ev->dst < m->m[MX_THREAD][MX_ALL].n && ev->src < m->m[MX_THREAD][MX_ALL].n)
		add(m, MX_THREAD, ev->dst, ev->src, ev->true_sharing, ev->weight);
	if (!m->topo)
		return;
	uint32_t dc, ds, sc, ss;
	if (!map_cpu(m->topo, ev->dst_cpu, &dc, &ds) || !map_cpu(m->topo, ev->src_cpu, &sc, &ss)) {
		m->tot.unmapped_cpu++;
		return;
	}
	add(m, MX_CORE, dc, sc, ev->true_sharing, ev->weight);
	add(m, MX_SOCKET, ds, ss, ev->true_sharing, ev->weight);
}

static void mx_event(void *self, const struct comm_event *ev)
{
	matrices_add_event(self, ev);
}

struct event_consumer matrices_consumer(struct matrices *m)
{
	return (struct event_consumer){ .self = m, .event = mx_event };
}

int matrices_grow(struct matrices *m, enum mx_index index, size_t n)
{
	return n > m->m[index][MX_ALL].n ? index_resize(m, index, n) : 0;
}

int matrices_add_cell(struct matrices *m, enum mx_index index, size_t row, size_t col,
                      const double v[3])
{
	return add_values(m, index, row, col, v);
}

int matrices_merge(struct matrices *into, const struct matrices *from)
{
	for (int i = 0; i < 3; i++) {
		if (matrices_grow(into, i, from->m[i][MX_ALL].n))
			return -1;
		const struct mx_sparse *c = &from->cells[i];
		for (size_t x = 0; x < c->n; x++) {
			double v[3];
			for (int k = 0; k < 3; k++)
				v[k] = matrix_at(&from->m[i][k], c->rc[x][0], c->rc[x][1]);
			if (add_values(into, i, c->rc[x][0], c->rc[x][1], v))
				return -1;
		}
	}
	struct mx_totals *t = &into->tot;
	const struct mx_totals *f = &from->tot;
	for (int v = 0; v < 3; v++)
		for (int k = 0; k < 2; k++) {
			t->events[v][k] += f->events[v][k];
			t->weight[v][k] += f->weight[v][k];
			t->var[v][k] += f->var[v][k];
		}
	t->unmapped_cpu += f->unmapped_cpu;
	if (f->unit_max > t->unit_max)
		t->unit_max = f->unit_max;
	return 0;
}

const struct matrix *matrices_get(const struct matrices *m, enum mx_index index,
                                  enum mx_kind kind)
{
	return &m->m[index][kind];
}

double matrix_at(const struct matrix *m, size_t row, size_t col)
{
	if (row >= m->n || col >= m->n)
		return 0;
	if (m->cell)
		return m->cell[row * stride_of(m) + col];
	if (!m->sp || !m->sp->tcap)
		return 0;
	uint32_t e = *slot_find(m->sp, (uint32_t)row, (uint32_t)col);
	return e ? m->sp->v[m->kind][e - 1] : 0;
}

size_t matrices_cells(const struct matrices *m, enum mx_index index, const uint32_t (**rc)[2])
{
	*rc = (const uint32_t (*)[2])m->cells[index].rc;
	return m->cells[index].n;
}

const struct mx_totals *matrices_totals(const struct matrices *m)
{
	return &m->tot;
}

void matrix_symmetric(const struct matrix *m, double *out)
{
	size_t n = m->n;
	matrix_directed(m, out);
	for (size_t r = 0; r < n; r++)
		for (size_t c = r + 1; c < n; c++)
			out[r * n + c] = out[c * n + r] = out[r * n + c] + out[c * n + r];
}

void matrix_directed(const struct matrix *m, double *out)
{
	size_t n = m->n;
	if (m->cell) {
		for (size_t r = 0; r < n; r++)
			memcpy(out + r * n, m->cell + r * stride_of(m), n * sizeof *out);
		return;
	}
	memset(out, 0, n * n * sizeof *out);
	for (size_t x = 0; m->sp && x < m->sp->n; x++)
		out[m->sp->rc[x][0] * n + m->sp->rc[x][1]] = m->sp->v[m->kind][x];
}

static int cmp_triplet(const void *x, const void *y)
{
	const struct mx_triplet *a = x, *b = y;
	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	return a->col < b->col ? -1 : a->col > b->col;
}

ptrdiff_t matrices_triplets(const struct matrices *m, enum mx_index index, enum mx_kind kind,
                            bool sym, struct mx_triplet **out)
{
	const struct matrix *a = matrices_get(m, index, kind), *all = matrices_get(m, index, MX_ALL);
	const uint32_t(*rc)[2];
	size_t nc = matrices_cells(m, index, &rc), k = 0;
	*out = NULL;
	struct mx_triplet *t = malloc((sym ? 2 * nc : nc) * sizeof *t + 1);
	if (!t)
		return -1;
	for (size_t x = 0; x < nc; x++) {
		uint32_t r = rc[x][0], c = rc[x][1];
		double v = matrix_at(a, r, c);
		if (!sym) {
			if (v != 0)
				t[k++] = (struct mx_triplet){ r, c, v };
			continue;
		}
		/* a pair met in both directions is written from its cell r < c */
		if (r > c && matrix_at(all, c, r) != 0)
			continue;
		double s = r == c ? v : v + matrix_at(a, c, r);
		if (s == 0)
			continue;
		t[k++] = (struct mx_triplet){ r, c, s };
		if (r != c)
			t[k++] = (struct mx_triplet){ c, r, s };
	}
	qsort(t, k, sizeof *t, cmp_triplet);
	if (!k) {
		free(t);
		return 0;
	}
	*out = t;
	return (ptrdiff_t)k;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

size_t u64_sort_unique(uint64_t *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof *v, cmp_u64);
	size_t u = 0;
	for (size_t x = 0; x < n; x++)
		if (!u || v[u - 1] != v[x])
			v[u++] = v[x];
	return u;
}

ptrdiff_t matrix_support(const struct matrix *m, size_t n, bool sym, uint64_t **keys)
{
	*keys = NULL;
	size_t stored = !m ? 0 : m->cell ? m->n * m->n : m->sp ? m->sp->n : 0;
	uint64_t *k = malloc((stored ? stored : 1) * sizeof *k);
	if (!k)
		return -1;
	size_t nk = 0;
	for (size_t x = 0; x < stored; x++) {
		size_t r, c;
		double v;
		if (m->cell) {
			r = x / m->n;
			c = x % m->n;
			v = m->cell[r * stride_of(m) + c];
		} else {
			r = m->sp->rc[x][0];
			c = m->sp->rc[x][1];
			v = m->sp->v[m->kind][x];
		}
		if (r == c || v == 0)
			continue;
		if (sym && r > c) {
			size_t t = r;
			r = c;
			c = t;
		}
		k[nk++] = (uint64_t)r * n + c;
	}
	*keys = k;
	return (ptrdiff_t)u64_sort_unique(k, nk);
}

int matrix_sum(const struct matrix *m, double *sum)
{
	*sum = 0;
	if (m->cell) {
		for (size_t r = 0; r < m->n; r++)
			for (size_t c = 0; c < m->n; c++)
				*sum += m->cell[r * stride_of(m) + c];
		return 0;
	}
	size_t n = m->sp ? m->sp->n : 0;
	struct mx_triplet *t = malloc((n ? n : 1) * sizeof *t);
	if (!t)
		return -1;
	for (size_t x = 0; x < n; x++)
		t[x] = (struct mx_triplet){ m->sp->rc[x][0], m->sp->rc[x][1], m->sp->v[m->kind][x] };
	qsort(t, n, sizeof *t, cmp_triplet);
	for (size_t x = 0; x < n; x++)
		*sum += t[x].v;
	free(t);
	return 0;
}
