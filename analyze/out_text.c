/* Text writer: a matrix readable in a terminal.
 *
 * Numbers follow one rule everywhere in the text output (fmt_si): three
 * significant digits with an SI suffix from 1000 on (59.4k, 8.89k, 1.23M,
 * 4.5G), plain %.3g below (567, 12.5, 0.333).  Exact values are in the
 * CSV/JSON/HDF5 outputs; the text is for reading.
 *
 * n <= 16: a grid, one column per sender, a "total" column (row sums) and
 * a "total" row (column sums); exact zeros are '.' so the pattern of a
 * sparse matrix stands out; columns as wide as their widest entry (at
 * least 5).  When a label is longer than 6 characters, columns are headed
 * by their number ([0], [1], ...) and rows by "[i] label", so long thread
 * names do not widen every column.  Row labels are cut with '~' beyond 16
 * characters.  About 110 columns for 16 threads.
 *
 *   thread_all: all sharing, by thread (estimated line transfers)
 *     model: comdetective
 *   rows: receiver thread, columns: sender thread; '.' = 0
 *
 *            T0     T1     T2  total
 *   T0        .  59.4k  8.89k  68.3k
 *   ...
 *   total ...
 *
 * n > 16: numbers no longer fit across a terminal, so the matrix is drawn
 * as a character map, one character per cell ('.' for 0, then :-=+*#%@
 * for (0, max] in eight equal steps), two characters per cell up to 64 rows
 * (terminal cells are twice as tall as wide), one up to 128; beyond 128 the
 * map is left out.  Then the TEXT_TOP largest cells follow (each unordered
 * pair once when the matrix is symmetric), with their share of the total,
 * and a note that the other outputs hold every cell; found among the
 * non-zero cells (a sparse matrix of 10,000 threads is never made n x n). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out_util.h"

#define TEXT_GRID_MAX 16
#define TEXT_MAP_MAX 128
#define TEXT_TOP 32
#define COL_LABEL_MAX 6
#define ROW_LABEL_MAX 16

/* Copies s for a terminal: at most max characters (the last replaced by
 * '~' when cut), control characters as '?'.  Returns the character count. */
static size_t tlabel(char *dst, size_t dstlen, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t chars = 0, o = 0;
	size_t total = 0;
	for (const unsigned char *q = p; *q;) {
		unsigned cp;
		q += out_utf8_next(q, &cp);
		total++;
	}
	while (*p && o + 5 < dstlen) {
		unsigned cp;
		size_t k = out_utf8_next(p, &cp);
		if (total > max && chars == max - 1) {
			dst[o++] = '~';
			chars++;
			break;
		}
		if (chars == max)
			break;
		if (cp < 0x20 || cp == 0x7F || cp == 0xFFFD) {
			dst[o++] = '?';
			p += k;
		} else {
			while (k--)
				dst[o++] = (char)*p++;
		}
		chars++;
	}
	dst[o] = 0;
	return chars;
}

static void fmt_si(char *buf, size_t len, double v)
{
	static const char suffix[] = "kMGTPE";
	if (v == 0) {
		snprintf(buf, len, "0");
		return;
	}
	if (!isfinite(v) || fabs(v) < 999.5) {
		snprintf(buf, len, "%.3g", v);
		return;
	}
	double x = v;
	for (size_t k = 0; k < sizeof suffix - 1; k++) {
		x /= 1000;
		if (fabs(x) < 999.5) {
			snprintf(buf, len, "%.3g%c", x, suffix[k]);
			return;
		}
	}
	snprintf(buf, len, "%.3g", v);
}

static void pad(FILE *f, size_t n)
{
	while (n--)
		putc(' ', f);
}

static const char *nz(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

static void header(FILE *f, const struct matrix_out *m, const struct matrix_render *rd)
{
	char buf[256];
	tlabel(buf, sizeof buf, nz(m->name, "matrix"), 200);
	fprintf(f, "%s:", buf);
	if (m->kind && *m->kind) {
		tlabel(buf, sizeof buf, m->kind, 60);
		fprintf(f, " %s sharing", buf);
	}
	if (m->index && *m->index) {
		tlabel(buf, sizeof buf, m->index, 60);
		fprintf(f, "%s by %s", m->kind && *m->kind ? "," : "", buf);
	}
	if (m->units && *m->units) {
		tlabel(buf, sizeof buf, m->units, 100);
		fprintf(f, " (%s)", buf);
	}
	putc('\n', f);
	for (size_t i = 0; m->attrs && i < m->nattrs; i++) {
		if (!m->attrs[i].key)
			continue;
		char v[256];
		tlabel(buf, sizeof buf, m->attrs[i].key, 60);
		tlabel(v, sizeof v, nz(m->attrs[i].value, ""), 160);
		fprintf(f, "  %s: %s\n", buf, v);
	}
	const char *idx = nz(m->index, "thread");
	char r[128], c[128];
	if (rd->row_axis) {
		tlabel(r, sizeof r, rd->row_axis, 100), tlabel(c, sizeof c, rd->col_axis, 100);
		fprintf(f, "rows: %s, columns: %s", r, c);
	} else if (rd->symmetric == OUT_SYM_YES) {
		tlabel(r, sizeof r, idx, 60);
		fprintf(f, "symmetric: rows and columns are %ss", r);
	} else {
		tlabel(r, sizeof r, idx, 60);
		fprintf(f, "rows: receiver %s, columns: sender %s", r, r);
	}
}

static void cellstr(char *buf, size_t len, double v)
{
	if (v == 0)
		snprintf(buf, len, ".");
	else
		fmt_si(buf, len, v);
}

/* Grid label of row or column i: the label, or its number when numbered. */
/* Are columns headed by number ([0], [1], ...)?  When a label is longer
 * than COL_LABEL_MAX. */
static bool labels_numbered(const struct matrix_out *m)
{
	char tmp[256], lb[32];
	for (size_t i = 0; i < m->n; i++)
		if (tlabel(tmp, sizeof tmp, out_label(m, i, lb, sizeof lb), 1000) > COL_LABEL_MAX)
			return true;
	return false;
}

static size_t glabel(char *tmp, size_t len, const struct matrix_out *m, size_t i, bool col,
                     bool numbered)
{
	char lb[32];
	const char *l = out_label(m, i, lb, sizeof lb);
	if (!numbered)
		return tlabel(tmp, len, l, col ? COL_LABEL_MAX : ROW_LABEL_MAX);
	int k = snprintf(tmp, len, col ? "[%zu]" : "[%zu] ", i);
	if (col)
		return (size_t)k;
	return (size_t)k + tlabel(tmp + k, len - (size_t)k, l, ROW_LABEL_MAX);
}

static int grid(FILE *f, const struct matrix_out *m)
{
	size_t n = m->n;
	char tmp[256], num[48];
	size_t *w = calloc(n + 1, sizeof *w);
	double *colsum = calloc(n + 1, sizeof *colsum);
	if (!w || !colsum) {
		free(w), free(colsum);
		return -1;
	}
	size_t rw = strlen("total");
	for (size_t j = 0; j <= n; j++)
		w[j] = 5;
	bool numbered = labels_numbered(m);
	double grand = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = glabel(tmp, sizeof tmp, m, i, false, numbered);
		if (l > rw)
			rw = l;
		l = glabel(tmp, sizeof tmp, m, i, true, numbered);
		if (l > w[i])
			w[i] = l;
		double rs = 0;
		for (size_t j = 0; j < n; j++)
			rs += out_cell(m, i, j), colsum[j] += out_cell(m, i, j);
		grand += rs;
		cellstr(num, sizeof num, rs);
		if (strlen(num) > w[n])
			w[n] = strlen(num);
	}
	for (size_t j = 0; j < n; j++) {
		for (size_t i = 0; i < n; i++) {
			cellstr(num, sizeof num, out_cell(m, i, j));
			if (strlen(num) > w[j])
				w[j] = strlen(num);
		}
		cellstr(num, sizeof num, colsum[j]);
		if (strlen(num) > w[j])
			w[j] = strlen(num);
	}
	cellstr(num, sizeof num, grand);
	if (strlen(num) > w[n])
		w[n] = strlen(num);

	/* column labels */
	pad(f, rw);
	for (size_t j = 0; j <= n; j++) {
		size_t l = j < n ? glabel(tmp, sizeof tmp, m, j, true, numbered)
		                 : (strcpy(tmp, "total"), 5);
		pad(f, 1 + w[j] - l);
		fputs(tmp, f);
	}
	putc('\n', f);
	/* rows, then the totals row */
	for (size_t i = 0; i <= n; i++) {
		size_t l = i < n ? glabel(tmp, sizeof tmp, m, i, false, numbered)
		                 : (strcpy(tmp, "total"), 5);
		fputs(tmp, f);
		pad(f, rw - l);
		double rs = 0;
		for (size_t j = 0; j <= n; j++) {
			double v;
			if (j < n)
				v = i < n ? out_cell(m, i, j) : colsum[j], rs += v;
			else
				v = i < n ? rs : grand;
			cellstr(num, sizeof num, v);
			pad(f, 1 + w[j] - strlen(num));
			fputs(num, f);
		}
		if (putc('\n', f) == EOF)
			break;
	}
	free(w);
	free(colsum);
	return 0;
}

/* One character per cell (two when n <= 64): '.' zero, :-=+*#%@ in eight
 * equal steps up to the largest magnitude, '?' not finite. */
static int charmap(FILE *f, const struct matrix_out *m)
{
	static const char ramp[] = ":-=+*#%@";
	size_t n = m->n, cw = n <= 64 ? 2 : 1;
	char lb[32], tmp[256], num[48];
	double max = 0;
	for (size_t c = 0; c < n * n; c++) {
		double v = fabs(out_cell(m, c / n, c % n));
		if (isfinite(v) && v > max)
			max = v;
	}
	bool numbered = labels_numbered(m);
	size_t rw = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = glabel(tmp, sizeof tmp, m, i, false, numbered);
		if (l > rw)
			rw = l;
	}
	/* column labels every 8 columns */
	char *line = malloc(n * cw + 1);
	if (!line)
		return -1;
	memset(line, ' ', n * cw);
	line[n * cw] = 0;
	for (size_t j = 0; j < n; j += 8) {
		size_t room = 8 * cw - 1, k = 0;
		/* ASCII only here: a multi-byte character would shift the line */
		const char *l = numbered ? (snprintf(lb, sizeof lb, "[%zu]", j), lb) : out_label(m, j, lb, sizeof lb);
		for (; l[k] && k < room && j * cw + k < n * cw; k++)
			line[j * cw + k] = (l[k] & 0x80) || l[k] < 0x20 ? '?' : l[k];
	}
	size_t hl = n * cw;
	while (hl > 0 && line[hl - 1] == ' ')
		hl--;
	pad(f, rw + 1);
	fprintf(f, "%.*s\n", (int)hl, line);
	for (size_t i = 0; i < n; i++) {
		size_t l = glabel(tmp, sizeof tmp, m, i, false, numbered);
		fputs(tmp, f);
		pad(f, rw - l + 1);
		for (size_t j = 0; j < n; j++) {
			double v = out_cell(m, i, j);
			char c;
			if (!isfinite(v))
				c = '?';
			else if (v == 0)
				c = '.';
			else {
				int lev = (int)ceil(8 * fabs(v) / max) - 1;
				c = ramp[lev < 0 ? 0 : lev > 7 ? 7 : lev];
			}
			for (size_t q = 0; q < cw; q++)
				line[j * cw + q] = c;
		}
		fprintf(f, "%s\n", line);
	}
	free(line);
	fmt_si(num, sizeof num, max);
	fprintf(f, "'.' = 0; %s = up to 1/8, 2/8, ... 8/8 of the largest cell (%s)\n\n", ramp, num);
	return 0;
}

struct top {
	double v;
	size_t i, j;
};

static int cmp_top(const void *a, const void *b)
{
	const struct top *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;
	if (x->i != y->i)
		return x->i < y->i ? -1 : 1;
	return x->j < y->j ? -1 : x->j > y->j;
}

static int top_cells(FILE *f, const struct matrix_out *m, bool sym)
{
	size_t cnt = 0, nonfinite = 0;
	double total = 0;
	const struct mx_triplet *cells;
	struct mx_triplet *owned;
	ptrdiff_t nnz = out_nonzero(m, &cells, &owned);
	struct top *t = nnz < 0 ? NULL : malloc(((size_t)nnz + 1) * sizeof *t);
	if (!t) {
		free(owned);
		return -1;
	}
	for (ptrdiff_t k = 0; k < nnz; k++) {
		size_t i = cells[k].row, j = cells[k].col;
		double v = cells[k].v;
		if (sym && j < i)
			continue;
		if (!isfinite(v)) {
			nonfinite++;
			continue;
		}
		total += (sym && i != j) ? 2 * v : v;
		t[cnt++] = (struct top){ v, i, j };
	}
	free(owned);
	qsort(t, cnt, sizeof *t, cmp_top);
	char num[48], a[64], b[64], lb[32];
	fmt_si(num, sizeof num, total);
	fprintf(f, "total %s in %zu non-zero %s", num, cnt, sym ? "pairs" : "cells");
	if (nonfinite)
		fprintf(f, ", %zu non-finite cells left out", nonfinite);
	fprintf(f, "; the %d largest follow (the CSV, JSON, HDF5 and SVG outputs hold every cell)\n\n",
	        TEXT_TOP);
	const char *idx = nz(m->index, "thread");
	char hr[80], hc[80];
	if (sym)
		snprintf(hr, sizeof hr, "%.60s", idx), snprintf(hc, sizeof hc, "%.60s", idx);
	else
		snprintf(hr, sizeof hr, "receiver"), snprintf(hc, sizeof hc, "sender");
	size_t wa = strlen(hr), wb = strlen(hc), wv = 5;
	size_t shown = cnt < TEXT_TOP ? cnt : TEXT_TOP;
	for (size_t k = 0; k < shown; k++) {
		size_t la = tlabel(a, sizeof a, out_label(m, t[k].i, lb, sizeof lb), ROW_LABEL_MAX);
		size_t lbn = tlabel(b, sizeof b, out_label(m, t[k].j, lb, sizeof lb), ROW_LABEL_MAX);
		fmt_si(num, sizeof num, t[k].v);
		if (la > wa) wa = la;
		if (lbn > wb) wb = lbn;
		if (strlen(num) > wv) wv = strlen(num);
	}
	fprintf(f, "   #  %-*s  %-*s  %*s   share\n", (int)wa, hr, (int)wb, hc, (int)wv, "value");
	for (size_t k = 0; k < shown; k++) {
		size_t la = tlabel(a, sizeof a, out_label(m, t[k].i, lb, sizeof lb), ROW_LABEL_MAX);
		size_t lbn = tlabel(b, sizeof b, out_label(m, t[k].j, lb, sizeof lb), ROW_LABEL_MAX);
		fmt_si(num, sizeof num, t[k].v);
		double share = total > 0 ? 100.0 * ((sym && t[k].i != t[k].j) ? 2 * t[k].v : t[k].v) / total : 0;
		fprintf(f, "%4zu  %s", k + 1, a);
		pad(f, wa - la + 2);
		fputs(b, f);
		pad(f, wb - lbn + 2);
		fprintf(f, "%*s  %5.1f%%\n", (int)wv, num, share);
	}
	if (cnt > shown)
		fprintf(f, "   ... %zu more\n", cnt - shown);
	free(t);
	return 0;
}

int write_matrix_text(FILE *f, const struct matrix_out *m)
{
	struct matrix_render rd;
	out_render(m, &rd);
	bool sym = rd.symmetric == OUT_SYM_YES;
	header(f, m, &rd);
	int rc;
	if (m->n == 0) {
		fputs("\n\n(empty matrix)\n", f);
		rc = 0;
	} else if (m->n <= TEXT_GRID_MAX) {
		fputs("; '.' = 0\n\n", f);
		rc = grid(f, m);
	} else {
		fputs("\n\n", f);
		rc = 0;
		if (m->n <= TEXT_MAP_MAX)
			rc = charmap(f, m);
		else
			fprintf(f, "(%zu x %zu: too large for a character map; see the SVG output)\n\n", m->n, m->n);
		if (rc == 0)
			rc = top_cells(f, m, sym);
	}
	if (rc < 0) {
		out_finish(f);
		return -1;
	}
	return out_finish(f);
}
