/* Comparing two communication matrices: a model's result `a` against a
 * reference `ref` (normally the exact model on the same full trace).  Used
 * by the accuracy tooling and the sweep command.
 *
 * Cells.  The matrices are taken as given (directed, row dst, column src,
 * or symmetric if the caller made them so, see `symmetric` below).  Sizes
 * may differ: the missing cells of the smaller one count as 0.  The
 * diagonal (a thread with itself) is left out of every measure: no model
 * produces it, and its zeros would inflate the correlation.  So the cells
 * compared are C = { (i, j) : i != j } (with `symmetric`, the pairs i < j
 * of M + M^T instead).  Write a_c, r_c for the cells of a and ref,
 * A = sum a_c, R = sum r_c.
 *
 *   l1         sum |a_c - r_c| / R                  volume error (0 best);
 *              0 when A = R = 0, 1 when R = 0 < A
 *   l1_shape   sum |a_c / A - r_c / R|              pattern error, scale-free,
 *              in [0, 2] (0 best); 0 if A = R = 0, 2 if only one is 0
 *   pearson    sum (a_c - ma)(r_c - mr) /
 *              sqrt(sum (a_c - ma)^2 * sum (r_c - mr)^2)     over C,
 *              ma, mr the means; when either side is constant it is 1 if
 *              a_c = r_c for every c, else 0
 *   excess     sum max(0, a_c - r_c) / A            the share of a's weight
 *              that ref does not have: false-positive-like (0 if A = 0).
 *              For the signature model against exact this is its false
 *              positive rate (the paper measures it against a collision-free
 *              signature; see commanalyze(1), "signature" and "Distances").
 *   missing    sum max(0, r_c - a_c) / R            the share of ref's weight
 *              a does not have: false-negative-like (0 if R = 0)
 *   ratio      A / R                                total volume ratio (0 if R = 0)
 *   topk_recall  Let k' = min(k, number of cells with r_c > 0).  T_ref is
 *              the k' largest cells of ref with r_c > 0 (ties broken by
 *              cell index, row-major, lowest first).  v_k is the k'-th
 *              largest value of a over C.  topk_recall = |{ c in T_ref :
 *              a_c > 0 and a_c >= v_k }| / k': the fraction of ref's top
 *              pairs that are also top pairs of a (a tie at a's k'-th place
 *              counts as in).  1 when k' = 0 (nothing to recover).
 *
 * No measure is ever NaN or infinite. */
#ifndef CT_COMPARE_H
#define CT_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis.h"

#define MATRIX_CMP_TOPK 10   /* default k of topk_recall */

struct matrix_cmp {
	size_t n;                /* cells compared: max size of the two */
	size_t k;                /* k' used by topk_recall */
	double sum_a, sum_ref;   /* A, R */
	double l1, l1_shape, pearson, excess, missing, ratio, topk_recall;
};

struct matrix_cmp_opts {
	size_t topk;             /* k (0: MATRIX_CMP_TOPK) */
	bool symmetric;          /* compare pairs i < j of M + M^T */
};

/* Directed cells, k = MATRIX_CMP_TOPK.  0, or -1 when out of memory (out
 * is then zeroed). */
int matrix_compare(const struct matrix *a, const struct matrix *ref, struct matrix_cmp *out);
/* o may be NULL (the defaults). */
int matrix_compare_opts(const struct matrix *a, const struct matrix *ref,
                        const struct matrix_cmp_opts *o, struct matrix_cmp *out);

/* model_needs_full_trace and full_trace_check: see ana.h. */

#endif
