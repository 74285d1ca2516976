/* CSV writer: one header row (an empty first cell, then the column labels)
 * and one header column (the row labels), rows and columns in the same
 * order; numbers in full precision (the shortest form that reads back
 * exactly, integers without a decimal point); labels quoted per RFC 4180
 * when they hold a comma, a quote or a line break.  Lines end in LF.
 * Non-finite cells are written nan, inf, -inf (read by numpy and pandas). */
#include "out_util.h"

int write_matrix_csv(FILE *f, const struct matrix_out *m)
{
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
