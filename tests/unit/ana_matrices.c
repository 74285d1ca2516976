/* The matrices consumer (analyze/matrices.c): cells summed per index and
 * kind, and the list of cells that received weight (matrices_cells), which
 * the report walks instead of n x n cells; the dense and the sparse storage
 * (past dense_max rows) hold the same cells. */
#include "ana_common.h"

static void ev_cpu(struct event_consumer *c, uint32_t dst, uint32_t src, uint32_t dcpu,
                   uint32_t scpu, bool tru, double w)
{
	struct comm_event e = { .dst = dst, .src = src, .dst_cpu = dcpu, .src_cpu = scpu,
	                        .true_sharing = tru, .weight = w };
	c->event(c->self, &e);
}

static void ev(struct event_consumer *c, uint32_t dst, uint32_t src, bool tru, double w)
{
	ev_cpu(c, dst, src, UINT32_MAX, UINT32_MAX, tru, w);
}

static void test_cells(void)
{
	struct matrices *m = matrices_create(10000, NULL);
	CHECK(m != NULL);
	if (!m)
		return;
	struct event_consumer c = matrices_consumer(m);
	ev(&c, 5, 9000, true, 2);
	ev(&c, 9000, 5, false, 1);
	ev(&c, 5, 9000, false, 3);    /* the same cell again: listed once */
	ev(&c, 7, 7, true, 0);        /* no weight: not listed */
	ev(&c, 7, 7, true, 4);
	const uint32_t(*rc)[2];
	size_t n = matrices_cells(m, MX_THREAD, &rc);
	CHECK_EQ_U(n, 3);
	if (n == 3) {
		CHECK(rc[0][0] == 5 && rc[0][1] == 9000);
		CHECK(rc[1][0] == 9000 && rc[1][1] == 5);
		CHECK(rc[2][0] == 7 && rc[2][1] == 7);
	}
	const struct matrix *all = matrices_get(m, MX_THREAD, MX_ALL);
	const struct matrix *tru = matrices_get(m, MX_THREAD, MX_TRUE);
	const struct matrix *fal = matrices_get(m, MX_THREAD, MX_FALSE);
	CHECK_EQ_U(all->n, 10000);
	CHECK(all->cell == NULL);     /* 10,000 > MX_DENSE_MAX: sparse */
	CHECK_NEAR(matrix_at(all, 5, 9000), 5, 0);
	CHECK_NEAR(matrix_at(tru, 5, 9000), 2, 0);
	CHECK_NEAR(matrix_at(fal, 5, 9000), 3, 0);
	CHECK_NEAR(matrix_at(all, 9000, 5), 1, 0);
	CHECK_NEAR(matrix_at(all, 7, 7), 4, 0);
	CHECK_NEAR(matrix_at(all, 9000, 9000), 0, 0);
	CHECK_NEAR(matrix_at(all, 10000, 5), 0, 0);   /* outside */
	CHECK_EQ_U(matrices_cells(m, MX_CORE, &rc), 0);   /* no topology */

	/* the non-zero cells, directed and M + M^T, by row then column */
	struct mx_triplet *t;
	CHECK(matrices_triplets(m, MX_THREAD, MX_ALL, false, &t) == 3);
	CHECK(t && t[0].row == 5 && t[0].col == 9000 && t[0].v == 5);
	CHECK(t && t[1].row == 7 && t[1].col == 7 && t[1].v == 4);
	CHECK(t && t[2].row == 9000 && t[2].col == 5 && t[2].v == 1);
	free(t);
	CHECK(matrices_triplets(m, MX_THREAD, MX_ALL, true, &t) == 3);
	CHECK(t && t[0].row == 5 && t[0].col == 9000 && t[0].v == 6);
	CHECK(t && t[1].row == 7 && t[1].col == 7 && t[1].v == 4);   /* the diagonal not doubled */
	CHECK(t && t[2].row == 9000 && t[2].col == 5 && t[2].v == 6);
	free(t);
	/* true sharing: (9000, 5) has only false weight, its pair still sums */
	CHECK(matrices_triplets(m, MX_THREAD, MX_TRUE, true, &t) == 3);
	CHECK(t && t[0].v == 2 && t[1].v == 4 && t[2].row == 9000 && t[2].v == 2);
	free(t);
	CHECK(matrices_triplets(m, MX_THREAD, MX_FALSE, false, &t) == 2);
	CHECK(t && t[0].row == 5 && t[0].v == 3 && t[1].row == 9000 && t[1].v == 1);
	free(t);
	matrices_free(m);
}

/* The same events into a dense and a sparse store (dense_max 0) agree cell
 * for cell, thread and core (identity map, grown by the events), and list
 * their cells in the same order. */
static void test_dense_sparse_agree(void)
{
	struct topology topo = { .identity = true };
	struct matrices *d = matrices_create_dense_max(40, &topo, 1000);
	struct matrices *s = matrices_create_dense_max(40, &topo, 0);
	CHECK(d && s);
	if (!d || !s)
		goto out;
	struct event_consumer cd = matrices_consumer(d), cs = matrices_consumer(s);
	uint32_t x = 12345;
	for (int k = 0; k < 5000; k++) {
		x = x * 1103515245u + 12345u;
		uint32_t dst = (x >> 8) % 40, src = (x >> 16) % 40;
		double w = (double)(x % 7);   /* some events weigh 0 */
		bool tru = x & 0x10000000;
		ev_cpu(&cd, dst, src, dst % 13, src % 13, tru, w);
		ev_cpu(&cs, dst, src, dst % 13, src % 13, tru, w);
	}
	for (int ix = MX_THREAD; ix <= MX_SOCKET; ix++) {
		const uint32_t(*rd)[2], (*rs)[2];
		size_t nd = matrices_cells(d, ix, &rd), ns = matrices_cells(s, ix, &rs);
		CHECK_EQ_U(nd, ns);
		CHECK(nd == ns && memcmp(rd, rs, nd * sizeof *rd) == 0);
		for (int k = MX_ALL; k <= MX_FALSE; k++) {
			const struct matrix *a = matrices_get(d, ix, k), *b = matrices_get(s, ix, k);
			CHECK(a->cell != NULL && b->cell == NULL);
			CHECK_EQ_U(a->n, b->n);
			size_t diff = 0;
			for (size_t i = 0; i < a->n; i++)
				for (size_t j = 0; j < a->n; j++)
					diff += matrix_at(a, i, j) != matrix_at(b, i, j);
			CHECK_EQ_U(diff, 0);
		}
	}
	CHECK_EQ_U(matrices_get(d, MX_CORE, MX_ALL)->n, 13);
	CHECK_EQ_U(matrices_get(d, MX_SOCKET, MX_ALL)->n, 1);
out:
	matrices_free(d);
	matrices_free(s);
}

/* An index that grows past dense_max (cpus met one by one) turns sparse
 * and keeps the cells it had. */
static void test_grow_to_sparse(void)
{
	struct topology topo = { .identity = true };
	struct matrices *m = matrices_create_dense_max(2, &topo, 8);
	CHECK(m != NULL);
	if (!m)
		return;
	struct event_consumer c = matrices_consumer(m);
	for (uint32_t cpu = 1; cpu < 20; cpu++)
		ev_cpu(&c, 0, 1, cpu, cpu - 1, cpu & 1, cpu);
	const struct matrix *all = matrices_get(m, MX_CORE, MX_ALL);
	const struct matrix *tru = matrices_get(m, MX_CORE, MX_TRUE);
	CHECK_EQ_U(all->n, 20);
	CHECK(all->cell == NULL);
	for (uint32_t cpu = 1; cpu < 20; cpu++) {
		CHECK_NEAR(matrix_at(all, cpu, cpu - 1), cpu, 0);
		CHECK_NEAR(matrix_at(tru, cpu, cpu - 1), cpu & 1 ? cpu : 0, 0);
		CHECK_NEAR(matrix_at(all, cpu - 1, cpu), 0, 0);
	}
	/* the thread matrix stayed dense: 2 rows */
	CHECK(matrices_get(m, MX_THREAD, MX_ALL)->cell != NULL);
	CHECK_NEAR(matrix_at(matrices_get(m, MX_THREAD, MX_ALL), 0, 1), 190, 0);
	matrices_free(m);
}

int main(void)
{
	RUN(test_cells);
	RUN(test_dense_sparse_agree);
	RUN(test_grow_to_sparse);
	return check_summary();
}
