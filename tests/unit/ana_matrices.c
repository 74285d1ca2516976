/* The matrices consumer (analyze/matrices.c): cells summed per index and
 * kind, and the list of cells that received weight (matrices_cells), which
 * the report walks instead of n x n cells. */
#include "ana_common.h"

static void ev(struct event_consumer *c, uint32_t dst, uint32_t src, bool tru, double w)
{
	struct comm_event e = { .dst = dst, .src = src, .dst_cpu = UINT32_MAX,
	                        .src_cpu = UINT32_MAX, .true_sharing = tru, .weight = w };
	c->event(c->self, &e);
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
	CHECK_NEAR(all->cell[5 * all->n + 9000], 5, 0);
	CHECK_NEAR(tru->cell[5 * tru->n + 9000], 2, 0);
	CHECK_NEAR(all->cell[9000 * all->n + 5], 1, 0);
	CHECK_EQ_U(matrices_cells(m, MX_CORE, &rc), 0);   /* no topology */
	matrices_free(m);
}

int main(void)
{
	RUN(test_cells);
	return check_summary();
}
