/* The matrices consumer: directed thread, core and socket matrices of
 * communication events (row dst, column src) for all, true and false
 * sharing, weights summed; plus event counts by via and kind. */
#include <stdlib.h>
#include <string.h>

#include "ana.h"

const char *const mx_kind_names[3] = { "all", "true", "false" };
const char *const mx_index_names[3] = { "thread", "core", "socket" };

#define IDENTITY_CPU_MAX 1024  /* cpus beyond this are "unmapped" without a map */

/* The cells that ever received weight, per index: the communicating pairs,
 * walked instead of all n x n cells (thousands of threads). */
struct mx_cells {
	uint32_t (*rc)[2];
	size_t n, cap;
};

struct matrices {
	struct matrix m[3][3];   /* [index][kind] */
	struct mx_cells cells[3];
	const struct topology *topo;
	struct mx_totals tot;
};

static int mat_resize(struct matrix *m, size_t n)
{
	if (n <= m->n && m->cell)
		return 0;
	double *c = calloc(n ? n * n : 1, sizeof *c);
	if (!c)
		return -1;
	for (size_t r = 0; r < m->n; r++)
		memcpy(c + r * n, m->cell + r * m->n, m->n * sizeof *c);
	free(m->cell);
	m->cell = c;
	m->n = n;
	return 0;
}

struct matrices *matrices_create(size_t nthreads, const struct topology *topo)
{
	struct matrices *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->topo = topo;
	size_t n[3] = { nthreads, 0, 0 };
	if (topo && !topo->identity) {
		n[1] = topo->ncores;
		n[2] = topo->nsockets;
	} else if (topo) {
		n[2] = 1;
	}
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 3; k++)
			if (mat_resize(&m->m[i][k], n[i])) {
				matrices_free(m);
				return NULL;
			}
	return m;
}

void matrices_free(struct matrices *m)
{
	if (!m)
		return;
	for (int i = 0; i < 3; i++) {
		for (int k = 0; k < 3; k++)
			free(m->m[i][k].cell);
		free(m->cells[i].rc);
	}
	free(m);
}

static void add(struct matrices *m, int index, size_t row, size_t col, bool tr, double w)
{
	struct matrix *a = &m->m[index][MX_ALL], *b = &m->m[index][tr ? MX_TRUE : MX_FALSE];
	if (row >= a->n || col >= a->n) {
		size_t need = (row > col ? row : col) + 1;
		for (int k = 0; k < 3; k++)
			if (mat_resize(&m->m[index][k], need))
				return;
	}
	double *cell = &a->cell[row * a->n + col];
	if (*cell == 0 && w != 0) {
		struct mx_cells *c = &m->cells[index];
		if (c->n == c->cap) {
			size_t nc = c->cap ? c->cap * 2 : 64;
			void *p = realloc(c->rc, nc * sizeof *c->rc);
			if (!p)
				return;
			c->rc = p;
			c->cap = nc;
		}
		c->rc[c->n][0] = (uint32_t)row;
		c->rc[c->n++][1] = (uint32_t)col;
	}
	*cell += w;
	b->cell[row * b->n + col] += w;
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

static void mx_event(void *self, const struct comm_event *ev)
{
	struct matrices *m = self;
	unsigned via = ev->via < 3 ? ev->via : 0;
	m->tot.events[via][ev->true_sharing]++;
	m->tot.weight[via][ev->true_sharing] += ev->weight;
	m->tot.var[via][ev->true_sharing] += ev->var;
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

struct event_consumer matrices_consumer(struct matrices *m)
{
	return (struct event_consumer){ .self = m, .event = mx_event };
}

const struct matrix *matrices_get(const struct matrices *m, enum mx_index index,
                                  enum mx_kind kind)
{
	return &m->m[index][kind];
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
	for (size_t r = 0; r < n; r++)
		for (size_t c = 0; c < n; c++)
			out[r * n + c] = r == c ? m->cell[r * n + c]
			                        : m->cell[r * n + c] + m->cell[c * n + r];
}
