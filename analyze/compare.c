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

/* The keys of the cells where a or ref is not 0 (matrix_support), in
 * ascending order: the only cells whose terms are not those of a zero
 * cell.  The count, *keys to free; -1: memory. */
static ptrdiff_t union_support(const struct matrix *a, const struct matrix *ref, size_t n,
                               bool sym, uint64_t **keys)
{
	uint64_t *ka, *kr;
	ptrdiff_t na = matrix_support(a, n, sym, &ka), nr = matrix_support(ref, n, sym, &kr);
	uint64_t *u = na < 0 || nr < 0 ? NULL : malloc(((size_t)(na + nr) + 1) * sizeof *u);
	size_t nu = 0, i = 0, j = 0;
	while (u && (i < (size_t)na || j < (size_t)nr)) {
		uint64_t x = j == (size_t)nr || (i < (size_t)na && ka[i] <= kr[j]) ? ka[i] : kr[j];
		u[nu++] = x;
		i += i < (size_t)na && ka[i] == x;
		j += j < (size_t)nr && kr[j] == x;
	}
	free(ka);
	free(kr);
	*keys = u;
	return u ? (ptrdiff_t)nu : -1;
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

	/* Only the cells where a or ref is not 0 are visited, in the order of
	 * a row-major loop (so sums are those of the loop); the Z cells where
	 * both are 0 add their terms at once. */
	uint64_t *key;
	ptrdiff_t nk = union_support(a, ref, n, sym, &key);
	if (nk < 0)
		return -1;
	size_t ncells = n < 2 ? 0 : sym ? n * (n - 1) / 2 : n * (n - 1);
	double zeros = (double)(ncells - (size_t)nk);

	/* pass 1: sums and means */
	size_t nref = 0;
	double A = 0, R = 0;
	for (ptrdiff_t x = 0; x < nk; x++) {
		size_t r = key[x] / n, c = key[x] % n;
		double xa = val(a, r, c, sym), y = val(ref, r, c, sym);
		A += xa;
		R += y;
		nref += y > 0;
	}
	out->sum_a = A;
	out->sum_ref = R;
	double ma = ncells ? A / (double)ncells : 0, mr = ncells ? R / (double)ncells : 0;

	/* pass 2: distances, correlation */
	/* the correlation's sums in long double: the zero cells' terms come
	 * in one product each, so rounding must not depend on their count */
	double l1 = 0, shape = 0, exc = 0, mis = 0;
	long double sab = 0, saa = 0, srr = 0;
	bool equal = true;
	for (ptrdiff_t x = 0; x < nk; x++) {
		size_t r = key[x] / n, c = key[x] % n;
		double xa = val(a, r, c, sym), y = val(ref, r, c, sym);
		double d = xa - y;
		l1 += fabs(d);
		if (A > 0 && R > 0)
			shape += fabs(xa / A - y / R);
		if (d > 0)
			exc += d;
		else
			mis -= d;
		equal &= xa == y;
		sab += (long double)(xa - ma) * (y - mr);
		saa += (long double)(xa - ma) * (xa - ma);
		srr += (long double)(y - mr) * (y - mr);
	}
	sab += (long double)zeros * ma * mr;
	saa += (long double)zeros * ma * ma;
	srr += (long double)zeros * mr * mr;
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
		double p = (double)(sab / sqrtl(saa * srr));
		out->pearson = p > 1 ? 1 : p < -1 ? -1 : p;
	} else {
		out->pearson = equal ? 1 : 0;
	}

	/* top-k pairs */
	size_t kk = k < nref ? k : nref;
	out->k = kk;
	if (!kk) {
		free(key);
		out->topk_recall = 1;
		return 0;
	}
	/* ref's cells with r_c > 0, and a's kk largest values */
	struct kcell *cr = malloc(nref * sizeof *cr);
	double *top = malloc(kk * sizeof *top);
	if (!cr || !top) {
		free(key);
		free(cr);
		free(top);
		memset(out, 0, sizeof *out);
		return -1;
	}
	size_t nr = 0, nt = 0;
	for (ptrdiff_t x = 0; x < nk; x++) {
		size_t r = key[x] / n, c = key[x] % n;
		double y = val(ref, r, c, sym);
		if (y > 0)
			cr[nr++] = (struct kcell){ y, (size_t)key[x] };
		keep_largest(top, &nt, kk, val(a, r, c, sym));
	}
	for (double z = 0; nt < kk && z < zeros; z++)
		keep_largest(top, &nt, kk, 0);
	free(key);
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
