/* Helpers shared by the output writers (out_*.c, attrib_out.c, sweep*.c):
 * number formatting, string escaping for CSV/JSON/XML (one CSV field
 * writer), the render settings, the SVG frame and text, attribute look-up.
 * The HDF5 helpers are in out_h5.h. */
#ifndef CT_OUT_UTIL_H
#define CT_OUT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis.h"

/* Shortest decimal form that reads back to exactly v (tries %.15g..%.17g);
 * integral values below 2^53 as plain integers.  "nan", "inf", "-inf" for
 * non-finite values (callers that must not emit them check first). */
void out_fmt_exact(char *buf, size_t len, double v);

/* Compact, human-oriented form (text report and SVG legend):
 *   |v| >= 999.5        rounded integer with thousands grouping: 1,234,567
 *   otherwise           %.3g: 0.333, 12.5, 999 (1e-05 for tiny values)
 * Exact zero is "0". */
void out_fmt_compact(char *buf, size_t len, double v);

/* Label i of m, never NULL: the given one, or the index when m->labels or
 * m->labels[i] is NULL. buf must hold at least 24 bytes. */
const char *out_label(const struct matrix_out *m, size_t i, char *buf, size_t len);

/* Cell (i, j) of m, dense or sparse (m->nz: a binary search). */
double out_cell_sparse(const struct matrix_out *m, size_t i, size_t j);
static inline double out_cell(const struct matrix_out *m, size_t i, size_t j)
{
	return m->cell ? m->cell[i * m->n + j] : out_cell_sparse(m, i, j);
}

/* Are m's cells written as sparse triplets (m->form, OUT_DENSE_MAX)? */
bool out_sparse(const struct matrix_out *m);
/* The cells of m that are not 0 (non-finite ones too), by row then column:
 * m->nz, or from m->cell into *owned (free it; NULL when not made).
 * Their number, or -1: out of memory. */
ptrdiff_t out_nonzero(const struct matrix_out *m, const struct mx_triplet **t,
                      struct mx_triplet **owned);

/* A matrix of more than OUT_BINS rows is drawn (svg, the html heatmaps) as
 * a density map: its cells summed over bins of k x k cells, k =
 * ceil(n / OUT_BINS), so at most OUT_BINS x OUT_BINS bins whatever n.  The
 * binned matrix is labelled by index ranges ("0-39"), keeps m's name,
 * kind, index, attributes and render settings (resolved, with axis titles
 * saying the bin size) and says the bin size in its units. */
#define OUT_BINS 256
struct out_binned {
	struct matrix_out m;
	size_t k;                   /* cells a bin, each way */
	double total;               /* of m's finite cells (symmetric: each pair once) */
	double *cell;
	char (*label)[48];
	const char **labels;
	char units[160], row_axis[160], col_axis[160];
};
int out_bin(const struct matrix_out *m, struct out_binned *b);   /* 0, -1: memory */
void out_binned_free(struct out_binned *b);

/* Finishes a FILE writer: 0, or -1 with errno from the failing write. */
int out_finish(FILE *f);

/* Value of attribute key, or NULL. */
const char *out_attr(const struct matrix_out *m, const char *key);

/* m->render with every field resolved (struct matrix_render): an unset
 * field from the attribute of the same name ("symmetric" yes/true/1 or
 * no/false/0, "color_min" zero/min, "color_max" a positive number,
 * "row_axis" and "col_axis" both), else symmetric when every cell equals
 * its mirror, colours from 0, no top, no axis titles. */
void out_render(const struct matrix_out *m, struct matrix_render *r);

/* Is the matrix meant to be read as symmetric? (out_render) */
bool out_is_symmetric(const struct matrix_out *m);

/* Decodes one UTF-8 character at s (s[0] != 0).  Returns its length and sets
 * *cp, or returns 1 with *cp = 0xFFFD for an invalid or truncated sequence. */
size_t out_utf8_next(const unsigned char *s, unsigned *cp);

/* Writers of escaped strings; return <0 on I/O error like fputs. */
int out_csv_field(FILE *f, const char *s);   /* RFC 4180 quoting when needed */
int out_json_string(FILE *f, const char *s); /* with the quotes; NULL -> null */
/* text as a JSON value: a number when it is a decimal integer, else a string. */
int out_json_value(FILE *f, const char *text);
int out_xml_text(FILE *f, const char *s);    /* text or attribute content */

/* The frame of every SVG picture: the XML declaration and the <svg>
 * element (w x h, one font family), and its end (then out_finish). */
void out_svg_begin(FILE *f, double w, double h);
int out_svg_end(FILE *f);
/* A background rectangle of the whole picture (white). */
void out_svg_background(FILE *f, double w, double h);

/* An SVG <text> element at (x, y) with the font size and text-anchor
 * ("start", "middle", "end"), extra attributes (NULL for none) and s
 * escaped as its content, then a newline. */
void out_svg_text(FILE *f, double x, double y, double size, const char *anchor,
                  const char *extra, const char *s);

#endif
