/* matrix_compare (analyze/compare.c) on small hand-made matrices, every
 * value worked out by hand from the definitions in compare.h. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "compare.h"

static struct matrix mk(size_t n, double *cells)
{
	return (struct matrix){ .n = n, .cell = cells };
}

/* Off-diagonal cells in order (0,1) (0,2) (1,0) (1,2) (2,0) (2,1):
 *   ref 4 0 2 0 1 0   R = 7, mean 7/6
 *   a   3 0 2 1 0 0   A = 6, mean 1   (a's diagonal 9 is ignored)
 * a - ref: -1 0 0 1 -1 0
 *   l1 = 3/7, excess = 1/6, missing = 2/7, ratio = 6/7
 *   l1_shape = |1/2 - 4/7| + |1/3 - 2/7| + 1/6 + 1/7 = 1/14 + 1/21 + 1/6 + 1/7 = 3/7
 *   pearson: sum (a-1)(r-7/6) = (2*17 + 7 + 5 + 1 + 7)/6 = 9,
 *            sum (a-1)^2 = 8, sum (r-7/6)^2 = 462/36  ->  9 / sqrt(8 * 462/36)
 *   top-2 of ref: (0,1), (1,0); a's 2nd largest is 2: both in -> 1
 *   top-3 of ref adds (2,0) = 0 in a: 2/3; top-10: only 3 nonzero in ref: 2/3 */
static void test_hand(void)
{
	double r[9] = { 0, 4, 0, 2, 0, 0, 1, 0, 0 };
	double a[9] = { 9, 3, 0, 2, 0, 1, 0, 0, 0 };
	struct matrix ma = mk(3, a), mr = mk(3, r);
	struct matrix_cmp c;
	CHECK(matrix_compare(&ma, &mr, &c) == 0);
	CHECK_EQ_U(c.n, 3);
	CHECK_NEAR(c.sum_a, 6, 1e-12);
	CHECK_NEAR(c.sum_ref, 7, 1e-12);
	CHECK_NEAR(c.l1, 3.0 / 7, 1e-12);
	CHECK_NEAR(c.l1_shape, 3.0 / 7, 1e-12);
	CHECK_NEAR(c.excess, 1.0 / 6, 1e-12);
	CHECK_NEAR(c.missing, 2.0 / 7, 1e-12);
	CHECK_NEAR(c.ratio, 6.0 / 7, 1e-12);
	CHECK_NEAR(c.pearson, 9 / sqrt(8 * 462.0 / 36), 1e-12);
	CHECK_EQ_U(c.k, 3);
	CHECK_NEAR(c.topk_recall, 2.0 / 3, 1e-12);
	struct matrix_cmp_opts o = { .topk = 2 };
	CHECK(matrix_compare_opts(&ma, &mr, &o, &c) == 0);
	CHECK_EQ_U(c.k, 2);
	CHECK_NEAR(c.topk_recall, 1, 1e-12);
	o.topk = 3;
	CHECK(matrix_compare_opts(&ma, &mr, &o, &c) == 0);
	CHECK_NEAR(c.topk_recall, 2.0 / 3, 1e-12);
}

/* Symmetric: pairs i < j of M + M^T.  ref (0,1) = 6, (0,2) = 1, (1,2) = 0;
 * a (0,1) = 5, (0,2) = 0, (1,2) = 1.  l1 = 3/7, excess = 1/6, missing = 2/7;
 * means 7/3 and 2: sum (a-2)(r-7/3) = (3*11 + 2*4 + 1*7)/3 = 16,
 * sum (a-2)^2 = 14, sum (r-7/3)^2 = (121 + 16 + 49)/9 = 62/3; top-1: (0,1)
 * in both: 1. */
static void test_symmetric(void)
{
	double r[9] = { 0, 4, 0, 2, 0, 0, 1, 0, 0 };
	double a[9] = { 0, 3, 0, 2, 0, 1, 0, 0, 0 };
	struct matrix ma = mk(3, a), mr = mk(3, r);
	struct matrix_cmp c;
	struct matrix_cmp_opts o = { .topk = 1, .symmetric = true };
	CHECK(matrix_compare_opts(&ma, &mr, &o, &c) == 0);
	CHECK_NEAR(c.sum_a, 6, 1e-12);
	CHECK_NEAR(c.sum_ref, 7, 1e-12);
	CHECK_NEAR(c.l1, 3.0 / 7, 1e-12);
	CHECK_NEAR(c.excess, 1.0 / 6, 1e-12);
	CHECK_NEAR(c.missing, 2.0 / 7, 1e-12);
	CHECK_NEAR(c.pearson, 16 / sqrt(14 * 62.0 / 3), 1e-12);
	CHECK_NEAR(c.topk_recall, 1, 1e-12);
}

/* Identical matrices: no distance, correlation 1, full recall. */
static void test_identical(void)
{
	double r[4] = { 0, 5, 1, 0 };
	struct matrix m = mk(2, r);
	struct matrix_cmp c;
	CHECK(matrix_compare(&m, &m, &c) == 0);
	CHECK_NEAR(c.l1, 0, 1e-12);
	CHECK_NEAR(c.l1_shape, 0, 1e-12);
	CHECK_NEAR(c.pearson, 1, 1e-12);
	CHECK_NEAR(c.excess, 0, 1e-12);
	CHECK_NEAR(c.missing, 0, 1e-12);
	CHECK_NEAR(c.ratio, 1, 1e-12);
	CHECK_NEAR(c.topk_recall, 1, 1e-12);
}

/* Sizes differ: a is 2x2, ref 3x3 (a's missing cells are 0).  ref (0,1) = 1,
 * (2,1) = 3; a (0,1) = 1, (1,0) = 1.  A = 2, R = 4, l1 = (1 + 3)/4 = 1,
 * excess = 1/2, missing = 3/4; top-1 of ref (2,1) is 0 in a: 0. */
static void test_sizes(void)
{
	double a[4] = { 0, 1, 1, 0 };
	double r[9] = { 0, 1, 0, 0, 0, 0, 0, 3, 0 };
	struct matrix ma = mk(2, a), mr = mk(3, r);
	struct matrix_cmp c;
	struct matrix_cmp_opts o = { .topk = 1 };
	CHECK(matrix_compare_opts(&ma, &mr, &o, &c) == 0);
	CHECK_EQ_U(c.n, 3);
	CHECK_NEAR(c.l1, 1, 1e-12);
	CHECK_NEAR(c.excess, 0.5, 1e-12);
	CHECK_NEAR(c.missing, 0.75, 1e-12);
	CHECK_NEAR(c.topk_recall, 0, 1e-12);
}

/* Empty sides: both zero -> l1 0, shape 0, pearson 1, recall 1.  ref zero,
 * a not -> l1 1, shape 2, excess 1, pearson 0, ratio 0, recall 1 (k' = 0).
 * a zero, ref not -> l1 1, missing 1, excess 0, recall 0. */
static void test_empty(void)
{
	double z[4] = { 0 }, x[4] = { 0, 2, 0, 0 };
	struct matrix mz = mk(2, z), mx = mk(2, x);
	struct matrix_cmp c;
	CHECK(matrix_compare(&mz, &mz, &c) == 0);
	CHECK_NEAR(c.l1, 0, 0);
	CHECK_NEAR(c.l1_shape, 0, 0);
	CHECK_NEAR(c.pearson, 1, 0);
	CHECK_NEAR(c.topk_recall, 1, 0);
	CHECK(matrix_compare(&mx, &mz, &c) == 0);
	CHECK_NEAR(c.l1, 1, 0);
	CHECK_NEAR(c.l1_shape, 2, 0);
	CHECK_NEAR(c.excess, 1, 0);
	CHECK_NEAR(c.pearson, 0, 0);
	CHECK_NEAR(c.ratio, 0, 0);
	CHECK_NEAR(c.topk_recall, 1, 0);
	CHECK(matrix_compare(&mz, &mx, &c) == 0);
	CHECK_NEAR(c.l1, 1, 0);
	CHECK_NEAR(c.missing, 1, 0);
	CHECK_NEAR(c.excess, 0, 0);
	CHECK_NEAR(c.topk_recall, 0, 0);
	struct matrix none = { .n = 0 };
	CHECK(matrix_compare(&none, &none, &c) == 0);
	CHECK_EQ_U(c.n, 0);
	CHECK_NEAR(c.topk_recall, 1, 0);
}

/* Ties: ref's top 2 by value then index: (0,1) = 5 and (0,2) = 5 before
 * (1,0) = 5.  a has (0,1) = 1, (0,2) = 1, (1,0) = 1: a's 2nd largest is 1,
 * and ties at that place count: recall 1.  A scaled copy of ref has shape
 * distance 0, correlation 1, excess 1/2 (a = 2 ref). */
static void test_ties_scale(void)
{
	double r[9] = { 0, 5, 5, 5, 0, 0, 0, 0, 0 };
	double a[9] = { 0, 1, 1, 1, 0, 0, 0, 0, 0 };
	double s[9] = { 0, 10, 10, 10, 0, 0, 0, 0, 0 };
	struct matrix ma = mk(3, a), mr = mk(3, r), ms = mk(3, s);
	struct matrix_cmp c;
	struct matrix_cmp_opts o = { .topk = 2 };
	CHECK(matrix_compare_opts(&ma, &mr, &o, &c) == 0);
	CHECK_NEAR(c.topk_recall, 1, 1e-12);
	CHECK(matrix_compare(&ms, &mr, &c) == 0);
	CHECK_NEAR(c.l1_shape, 0, 1e-12);
	CHECK_NEAR(c.pearson, 1, 1e-12);
	CHECK_NEAR(c.excess, 0.5, 1e-12);
	CHECK_NEAR(c.l1, 1, 1e-12);
	CHECK_NEAR(c.ratio, 2, 1e-12);
}

/* The same matrices stored dense and sparse (matrices_create_dense_max 0,
 * where only the pairs are kept) compare alike, directed and symmetric,
 * the correlation with the zero cells' terms taken at once (compare.c):
 * 60 threads, a pseudo-random tenth of the cells non-zero, a correlated
 * with ref but not a multiple of it. */
/* Pearson's r of the off-diagonal cells of two n x n arrays (sym: the cells
 * r < c, each the sum of (r, c) and (c, r)), every cell visited: the
 * definition, as a reference for the comparison's folding of zero cells. */
static double brute_pearson(size_t n, const double *a, const double *b, bool sym)
{
	double sa = 0, sb = 0, cells = 0;
	for (size_t r = 0; r < n; r++)
		for (size_t c = sym ? r + 1 : 0; c < n; c++)
			if (r != c) {
				sa += a[r * n + c] + (sym ? a[c * n + r] : 0);
				sb += b[r * n + c] + (sym ? b[c * n + r] : 0);
				cells++;
			}
	double ma = sa / cells, mb = sb / cells, sab = 0, saa = 0, sbb = 0;
	for (size_t r = 0; r < n; r++)
		for (size_t c = sym ? r + 1 : 0; c < n; c++)
			if (r != c) {
				double x = a[r * n + c] + (sym ? a[c * n + r] : 0) - ma;
				double y = b[r * n + c] + (sym ? b[c * n + r] : 0) - mb;
				sab += x * y;
				saa += x * x;
				sbb += y * y;
			}
	return sab / sqrt(saa * sbb);
}

static void test_sparse_as_dense(void)
{
	enum { N = 60 };
	static double a[N * N], r[N * N];
	struct matrices *sa = matrices_create_dense_max(N, NULL, 0);
	struct matrices *sr = matrices_create_dense_max(N, NULL, 0);
	CHECK(sa && sr);
	if (!sa || !sr)
		return;
	uint32_t x = 12345;
	for (size_t i = 0; i < N * N; i++) {
		x = x * 1103515245u + 12345u;
		if ((x >> 16) % 10)
			continue;
		r[i] = 1 + (x >> 20) % 50;
		a[i] = (x >> 8) % 3 ? r[i] * 2 + (x >> 24) % 7 : 0;
		double va[3] = { a[i], 0, 0 }, vr[3] = { r[i], 0, 0 };
		CHECK(matrices_add_cell(sa, MX_THREAD, i / N, i % N, va) == 0);
		CHECK(matrices_add_cell(sr, MX_THREAD, i / N, i % N, vr) == 0);
	}
	const struct matrix *ma = matrices_get(sa, MX_THREAD, MX_ALL);
	const struct matrix *mr = matrices_get(sr, MX_THREAD, MX_ALL);
	CHECK(ma->cell == NULL && mr->cell == NULL);
	struct matrix da = mk(N, a), dr = mk(N, r);
	for (int sym = 0; sym < 2; sym++) {
		struct matrix_cmp_opts o = { .topk = 7, .symmetric = sym };
		struct matrix_cmp d, s;
		CHECK(matrix_compare_opts(&da, &dr, &o, &d) == 0);
		CHECK(matrix_compare_opts(ma, mr, &o, &s) == 0);
		CHECK(d.pearson > 0.5 && d.pearson < 1);
		CHECK_NEAR(s.pearson, d.pearson, 1e-12);
		CHECK_NEAR(d.pearson, brute_pearson(N, a, r, sym), 1e-12);
		CHECK_NEAR(s.l1, d.l1, 1e-12);
		CHECK_NEAR(s.l1_shape, d.l1_shape, 1e-12);
		CHECK_NEAR(s.excess, d.excess, 1e-12);
		CHECK_NEAR(s.missing, d.missing, 1e-12);
		CHECK_NEAR(s.topk_recall, d.topk_recall, 0);
		CHECK_EQ_U(s.k, d.k);
	}
	matrices_free(sa);
	matrices_free(sr);
}

int main(void)
{
	RUN(test_hand);
	RUN(test_symmetric);
	RUN(test_identical);
	RUN(test_sizes);
	RUN(test_empty);
	RUN(test_ties_scale);
	RUN(test_sparse_as_dense);
	return check_summary();
}
