/* Matrix comparison: see compare.h for the definitions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

static double at(const struct matrix *m, size_t r, size_t c)
{
	return m ? matrix_at(m, r, c) : 0;
}

/* The compared value of cell (r, c) of m. */
static double val(const struct matrix *m, size_t r, size_t c, bool sym)
{
	return sym ? at(m, r, c) + at(m, c, r) : at(m, r, c);
}

struct kcell {
	double v;
	size_t idx;
};

/* descending value, then ascending index */
static int kcell_cmp(const void *x, const void *y)
{
	const struct kcell *a = x, *b = y;
	if (a->v > b->v)
		return -1;
	if (a->v < b->v)
		return 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* x into top, the nt (<= k) largest values so far in descending order. */
static void keep_largest(double *top, size_t *nt, size_t k, double x)
{
	if (*nt == k && !(x > top[k - 1]))
		return;
	size_t at = *nt < k ? (*nt)++ : k - 1;
	for (; at > 0 && top[at - 1] < x; at--)
		top[at] = top[at - 1];
	top[at] = x;
}

int matrix_compare_opts(const struct matrix *a, const struct matrix *ref,
                        const struct matrix_cmp_opts *o, struct matrix_cmp *out)
{
	memset(out, 0, sizeof *out);
	bool sym = o && o->symmetric;
	size_t k = o && o->topk ? o->topk : MATRIX_CMP_TOPK;
	size_t n = a ? a->n : 0;
	if (ref && ref->n > n)
		n = ref->n;
	out->n = n;

	/* pass 1: sums and means */
	size_t ncells = 0, nref = 0;
	double A = 0, R = 0;
	for (size_t r = 0; r < n; r++)
		for (size_t c = sym ? r + 1 : 0; c < n; c++) {
			if (r == c)
				continue;
			double x = val(a, r, c, sym), y = val(ref, r, c, sym);
			A += x;
			R += y;
			ncells++;
			nref += y > 0;
		}
	out->sum_a = A;
	out->sum_ref = R;
	double ma = ncells ? A / (double)ncells : 0, mr = ncells ? R / (double)ncells : 0;

	/* pass 2: distances, correlation */
	double l1 = 0, shape = 0, exc = 0, mis = 0, sab = 0, saa = 0, srr = 0;
	bool equal = true;
	for (size_t r = 0; r < n; r++)
		for (size_t c = sym ? r + 1 : 0; c < n; c++) {
			if (r == c)
				continue;
			double x = val(a, r, c, sym), y = val(ref, r, c, sym);
			double d = x - y;
			l1 += fabs(d);
			if (A > 0 && R > 0)
				shape += fabs(x / A - y / R);
			if (d > 0)
				exc += d;
			else
				mis -= d;
			equal &= x == y;
			sab += (x - ma) * (y - mr);
			saa += (x - ma) * (x - ma);
			srr += (y - mr) * (y - mr);
		}
	if (R > 0)
		out->l1 = l1 / R;
	else
		out->l1 = A > 0 ? 1 : 0;
	if (A > 0 && R > 0)
		out->l1_shape = shape;
	else
		out->l1_shape = (A > 0) != (R > 0) ? 2 : 0;
	out->excess = A > 0 ? exc / A : 0;
	out->missing = R > 0 ? mis / R : 0;
	out->ratio = R > 0 ? A / R : 0;
	if (saa > 0 && srr > 0) {
		double p = sab / sqrt(saa * srr);
		out->pearson = p > 1 ? 1 : p < -1 ? -1 : p;
	} else {
		out->pearson = equal ? 1 : 0;
	}

	/* top-k pairs */
	size_t kk = k < nref ? k : nref;
	out->k = kk;
	if (!kk) {
		out->topk_recall = 1;
		return 0;
	}
	/* ref's cells with r_c > 0, and a's kk largest values (not all cells:
	 * memory grows with the pairs, not with n x n) */
	struct kcell *cr = malloc(nref * sizeof *cr);
	double *top = malloc(kk * sizeof *top);
	if (!cr || !top) {
		free(cr);
		free(top);
		memset(out, 0, sizeof *out);
		return -1;
	}
	size_t nr = 0, nt = 0;
	for (size_t r = 0; r < n; r++)
		for (size_t c = sym ? r + 1 : 0; c < n; c++) {
			if (r == c)
				continue;
			double y = val(ref, r, c, sym);
			if (y > 0)
				cr[nr++] = (struct kcell){ y, r * n + c };
			keep_largest(top, &nt, kk, val(a, r, c, sym));
		}
	qsort(cr, nr, sizeof *cr, kcell_cmp);
	double vk = top[kk - 1];
	size_t hit = 0;
	for (size_t i = 0; i < kk; i++) {
		size_t r = cr[i].idx / n, c = cr[i].idx % n;
		double x = val(a, r, c, sym);
		hit += x > 0 && x >= vk;
	}
	out->topk_recall = (double)hit / (double)kk;
	free(cr);
	free(top);
	return 0;
}

int matrix_compare(const struct matrix *a, const struct matrix *ref, struct matrix_cmp *out)
{
	return matrix_compare_opts(a, ref, NULL, out);
}
