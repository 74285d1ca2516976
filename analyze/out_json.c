/* JSON writer:
 *   {"matrices": [{"name": ..., "kind": ..., "index": ..., "units": ...,
 *                  "n": N, "labels": [...], "attributes": {...},
 *                  "data": [[row 0], [row 1], ...], "null_cells": K}, ...]}
 * data[i][j] is cell (row i, column j).  NaN and infinities have no JSON
 * form: they are written null and counted in null_cells.  Strings are
 * escaped, and invalid UTF-8 is replaced by U+FFFD so the output always
 * parses.  Numbers read back exactly (shortest round-trip form).
 *
 * Sparse (out_sparse: past OUT_DENSE_MAX rows, or --cells sparse): "data"
 * is replaced by
 *   "layout": "sparse", "nnz": K, "cells": [[i, j, v], ...]
 * the K non-zero cells (row i, column j, value v; null for NaN and
 * infinities, counted in null_cells) by row then column; the dense form
 * has no "layout" key. */
#include <math.h>
#include <stdlib.h>

#include "out_util.h"

static void key(FILE *f, const char *k)
{
	fprintf(f, "      \"%s\": ", k);
}

/* "data": [[row 0], ...], every cell. */
static int write_data(FILE *f, const struct matrix_out *m, size_t *nulls)
{
	char num[40];
	key(f, "data"), putc('[', f);
	for (size_t i = 0; i < m->n; i++) {
		fputs(i ? ",\n        [" : "\n        [", f);
		for (size_t j = 0; j < m->n; j++) {
			double v = out_cell(m, i, j);
			if (j)
				putc(',', f);
			if (!isfinite(v)) {
				fputs("null", f);
				++*nulls;
				continue;
			}
			out_fmt_exact(num, sizeof num, v);
			fputs(num, f);
		}
		putc(']', f);
		if (ferror(f))
			return -1;
	}
	fputs(m->n ? "\n      ],\n" : "],\n", f);
	return 0;
}

/* "layout": "sparse", "nnz": K, "cells": [[i, j, v], ...]: the non-zero cells. */
static int write_cells(FILE *f, const struct matrix_out *m, size_t *nulls)
{
	const struct mx_triplet *t;
	struct mx_triplet *owned;
	ptrdiff_t nt = out_nonzero(m, &t, &owned);
	if (nt < 0)
		return -1;
	char num[40];
	key(f, "layout"), fputs("\"sparse\",\n", f);
	key(f, "nnz"), fprintf(f, "%td,\n", nt);
	key(f, "cells"), putc('[', f);
	for (ptrdiff_t k = 0; k < nt && !ferror(f); k++) {
		fprintf(f, "%s[%u, %u, ", k ? ",\n        " : "\n        ", (unsigned)t[k].row,
		        (unsigned)t[k].col);
		if (isfinite(t[k].v))
			out_fmt_exact(num, sizeof num, t[k].v);
		else
			snprintf(num, sizeof num, "null"), ++*nulls;
		fprintf(f, "%s]", num);
	}
	fputs(nt ? "\n      ],\n" : "],\n", f);
	free(owned);
	return ferror(f) ? -1 : 0;
}

static int write_one(FILE *f, const struct matrix_out *m)
{
	char lb[32];
	fputs("    {\n", f);
	key(f, "name"), out_json_string(f, m->name), fputs(",\n", f);
	key(f, "kind"), out_json_string(f, m->kind), fputs(",\n", f);
	key(f, "index"), out_json_string(f, m->index), fputs(",\n", f);
	key(f, "units"), out_json_string(f, m->units), fputs(",\n", f);
	key(f, "n"), fprintf(f, "%zu,\n", m->n);
	key(f, "labels"), putc('[', f);
	for (size_t i = 0; i < m->n; i++) {
		if (i)
			fputs(", ", f);
		out_json_string(f, out_label(m, i, lb, sizeof lb));
	}
	fputs("],\n", f);
	key(f, "attributes"), putc('{', f);
	size_t na = 0;
	for (size_t i = 0; m->attrs && i < m->nattrs; i++) {
		if (!m->attrs[i].key)
			continue;
		fputs(na++ ? ",\n        " : "\n        ", f);
		out_json_string(f, m->attrs[i].key);
		fputs(": ", f);
		out_json_string(f, m->attrs[i].value);
	}
	fputs(na ? "\n      },\n" : "},\n", f);
	size_t nulls = 0;
	int rc = out_sparse(m) ? write_cells(f, m, &nulls) : write_data(f, m, &nulls);
	if (rc < 0)
		return -1;
	key(f, "null_cells"), fprintf(f, "%zu\n", nulls);
	fputs("    }", f);
	return ferror(f) ? -1 : 0;
}

int write_matrices_json(FILE *f, const struct matrix_out *m, size_t nm)
{
	fputs("{\n  \"matrices\": [", f);
	for (size_t k = 0; k < nm; k++) {
		fputs(k ? ",\n" : "\n", f);
		if (write_one(f, &m[k]) < 0)
			return -1;
	}
	fputs(nm ? "\n  ]\n}\n" : "]\n}\n", f);
	return out_finish(f);
}
