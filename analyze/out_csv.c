/* CSV writer: one header row (an empty first cell, then the column labels)
 * and one header column (the row labels), rows and columns in the same
 * order; numbers in full precision (the shortest form that reads back
 * exactly, integers without a decimal point); labels quoted per RFC 4180
 * when they hold a comma, a quote or a line break.  Lines end in LF.
 * Non-finite cells are written nan, inf, -inf (read by numpy and pandas).
 *
 * Sparse (out_sparse: past OUT_DENSE_MAX rows, or --cells sparse): one
 * line per non-zero cell, by row then column, under the header
 *   row,column,row_label,column_label,value
 * row and column counted from 0 (the dense form's order), the labels as in
 * the dense form's header. */
#include <stdlib.h>

#include "out_util.h"

static int write_triplets(FILE *f, const struct matrix_out *m)
{
	const struct mx_triplet *t;
	struct mx_triplet *owned;
	ptrdiff_t nt = out_nonzero(m, &t, &owned);
	if (nt < 0)
		return -1;
	char lb[32], num[40];
	fputs("row,column,row_label,column_label,value\n", f);
	for (ptrdiff_t k = 0; k < nt; k++) {
		fprintf(f, "%u,%u,", (unsigned)t[k].row, (unsigned)t[k].col);
		out_csv_field(f, out_label(m, t[k].row, lb, sizeof lb));
		putc(',', f);
		out_csv_field(f, out_label(m, t[k].col, lb, sizeof lb));
		out_fmt_exact(num, sizeof num, t[k].v);
		fprintf(f, ",%s\n", num);
		if (ferror(f))
			break;
	}
	free(owned);
	return out_finish(f);
}

int write_matrix_csv(FILE *f, const struct matrix_out *m)
{
	if (out_sparse(m))
		return write_triplets(f, m);
	char lb[32], num[40];
	for (size_t j = 0; j < m->n; j++) {
		putc(',', f);
		if (out_csv_field(f, out_label(m, j, lb, sizeof lb)) < 0)
			return -1;
	}
	putc('\n', f);
	for (size_t i = 0; i < m->n; i++) {
		if (out_csv_field(f, out_label(m, i, lb, sizeof lb)) < 0)
			return -1;
		for (size_t j = 0; j < m->n; j++) {
			out_fmt_exact(num, sizeof num, out_cell(m, i, j));
			putc(',', f);
			fputs(num, f);
		}
		if (putc('\n', f) == EOF)
			return -1;
	}
	return out_finish(f);
}
