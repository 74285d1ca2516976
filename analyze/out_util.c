/* Helpers shared by the output writers: see out_util.h. */
#include "out_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void out_fmt_exact(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v < 0 ? "-inf" : "inf");
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void out_fmt_compact(char *buf, size_t len, double v)
{
	if (!isfinite(v) || v == 0 || fabs(v) < 999.5 || fabs(v) >= 1e15) {
		if (v == 0)
			snprintf(buf, len, "0");
		else
			snprintf(buf, len, "%.3g", v);
		return;
	}
	char digits[32];
	snprintf(digits, sizeof digits, "%.0f", fabs(v));
	size_t nd = strlen(digits), o = 0;
	char tmp[48];
	if (v < 0)
		tmp[o++] = '-';
	for (size_t i = 0; i < nd; i++) {
		if (i > 0 && (nd - i) % 3 == 0)
			tmp[o++] = ',';
		tmp[o++] = digits[i];
	}
	tmp[o] = 0;
	snprintf(buf, len, "%s", tmp);
}

const char *out_label(const struct matrix_out *m, size_t i, char *buf, size_t len)
{
	if (m->labels && m->labels[i])
		return m->labels[i];
	snprintf(buf, len, "%zu", i);
	return buf;
}

double out_cell_sparse(const struct matrix_out *m, size_t i, size_t j)
{
	size_t lo = 0, hi = m->nz ? m->nnz : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mx_triplet *t = &m->nz[mid];
		if (t->row == i && t->col == j)
			return t->v;
		if (t->row < i || (t->row == i && t->col < j))
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0.0;
}

bool out_sparse(const struct matrix_out *m)
{
	return m->form == OUT_FORM_SPARSE || (m->form == OUT_FORM_AUTO && m->n > OUT_DENSE_MAX);
}

ptrdiff_t out_nonzero(const struct matrix_out *m, const struct mx_triplet **t,
                      struct mx_triplet **owned)
{
	*owned = NULL;
	if (!m->cell) {
		*t = m->nz;
		return m->nz ? (ptrdiff_t)m->nnz : 0;
	}
	size_t k = 0, n = m->n;
	for (size_t c = 0; c < n * n; c++)
		k += m->cell[c] != 0;
	struct mx_triplet *o = malloc((k ? k : 1) * sizeof *o);
	if (!o)
		return -1;
	k = 0;
	for (size_t c = 0; c < n * n; c++)
		if (m->cell[c] != 0)
			o[k++] = (struct mx_triplet){ (uint32_t)(c / n), (uint32_t)(c % n), m->cell[c] };
	*t = *owned = o;
	return (ptrdiff_t)k;
}

int out_bin(const struct matrix_out *m, struct out_binned *b)
{
	memset(b, 0, sizeof *b);
	size_t k = m->n > OUT_BINS ? (m->n + OUT_BINS - 1) / OUT_BINS : 1, nb = (m->n + k - 1) / k;
	const struct mx_triplet *t;
	struct mx_triplet *owned;
	ptrdiff_t nt = out_nonzero(m, &t, &owned);
	b->k = k;
	b->cell = calloc(nb ? nb * nb : 1, sizeof *b->cell);
	b->label = calloc(nb ? nb : 1, sizeof *b->label);
	b->labels = calloc(nb ? nb : 1, sizeof *b->labels);
	if (nt < 0 || !b->cell || !b->label || !b->labels) {
		free(owned);
		out_binned_free(b);
		return -1;
	}
	struct matrix_render rd;
	out_render(m, &rd);
	for (ptrdiff_t x = 0; x < nt; x++) {
		b->cell[t[x].row / k * nb + t[x].col / k] += t[x].v;
		if (isfinite(t[x].v) && (rd.symmetric != OUT_SYM_YES || t[x].col >= t[x].row))
			b->total += t[x].v;
	}
	free(owned);
	for (size_t i = 0; i < nb; i++) {
		size_t last = (i + 1) * k < m->n ? (i + 1) * k - 1 : m->n - 1;
		snprintf(b->label[i], sizeof b->label[i], "%zu-%zu", i * k, last);
		b->labels[i] = b->label[i];
	}
	const char *idx = m->index && *m->index ? m->index : "thread";
	if (rd.row_axis) {
		snprintf(b->row_axis, sizeof b->row_axis, "%s (bins of %zu)", rd.row_axis, k);
		snprintf(b->col_axis, sizeof b->col_axis, "%s (bins of %zu)", rd.col_axis, k);
	} else if (rd.symmetric == OUT_SYM_YES) {
		snprintf(b->row_axis, sizeof b->row_axis, "%s (bins of %zu)", idx, k);
		snprintf(b->col_axis, sizeof b->col_axis, "%s (bins of %zu)", idx, k);
	} else {
		snprintf(b->row_axis, sizeof b->row_axis, "receiver %s (row; bins of %zu)", idx, k);
		snprintf(b->col_axis, sizeof b->col_axis, "sender %s (column; bins of %zu)", idx, k);
	}
	rd.row_axis = b->row_axis;
	rd.col_axis = b->col_axis;
	snprintf(b->units, sizeof b->units, "%s, summed over %zu x %zu cells a bin",
	         m->units && *m->units ? m->units : "values", k, k);
	b->m = *m;
	b->m.n = nb;
	b->m.cell = b->cell;
	b->m.nz = NULL;
	b->m.nnz = 0;
	b->m.labels = b->labels;
	b->m.units = b->units;
	b->m.render = rd;
	return 0;
}

void out_binned_free(struct out_binned *b)
{
	free(b->cell);
	free(b->label);
	free(b->labels);
}

const char *out_attr(const struct matrix_out *m, const char *key)
{
	if (!m->attrs)
		return NULL;
	for (size_t i = 0; i < m->nattrs; i++)
		if (m->attrs[i].key && !strcmp(m->attrs[i].key, key))
			return m->attrs[i].value;
	return NULL;
}

static enum out_sym symmetric_attr(const struct matrix_out *m)
{
	const char *a = out_attr(m, "symmetric");
	if (!a)
		return OUT_SYM_UNSET;
	if (!strcasecmp(a, "yes") || !strcasecmp(a, "true") || !strcmp(a, "1"))
		return OUT_SYM_YES;
	if (!strcasecmp(a, "no") || !strcasecmp(a, "false") || !strcmp(a, "0"))
		return OUT_SYM_NO;
	return OUT_SYM_UNSET;
}

static enum out_sym symmetric_cells(const struct matrix_out *m)
{
	for (size_t k = 0; !m->cell && m->nz && k < m->nnz; k++) {
		double x = m->nz[k].v, y = out_cell_sparse(m, m->nz[k].col, m->nz[k].row);
		if (x != y && !(isnan(x) && isnan(y)))
			return OUT_SYM_NO;
	}
	for (size_t i = 0; m->cell && i < m->n; i++)
		for (size_t j = i + 1; j < m->n; j++) {
			double x = m->cell[i * m->n + j], y = m->cell[j * m->n + i];
			if (x != y && !(isnan(x) && isnan(y)))
				return OUT_SYM_NO;
		}
	return OUT_SYM_YES;
}

/* The attribute key as a positive finite number, else 0. */
static double positive_attr(const struct matrix_out *m, const char *key)
{
	const char *v = out_attr(m, key);
	char *e;
	double x = v && *v ? strtod(v, &e) : 0;
	return x > 0 && isfinite(x) && !*e ? x : 0;
}

void out_render(const struct matrix_out *m, struct matrix_render *r)
{
	*r = m->render;
	if (r->symmetric == OUT_SYM_UNSET)
		r->symmetric = symmetric_attr(m);
	if (r->symmetric == OUT_SYM_UNSET)
		r->symmetric = symmetric_cells(m);
	if (r->scale_from == OUT_SCALE_UNSET) {
		const char *cm = out_attr(m, "color_min");
		r->scale_from = cm && !strcmp(cm, "min") ? OUT_SCALE_FROM_MIN : OUT_SCALE_FROM_ZERO;
	}
	if (!(r->scale_max > 0))
		r->scale_max = positive_attr(m, "color_max");
	if (!(r->scale_min > 0))
		r->scale_min = positive_attr(m, "color_min");
	if (r->color_scale == OUT_CSCALE_UNSET) {
		const char *cs = out_attr(m, "color_scale");
		r->color_scale = cs && !strcmp(cs, "log") ? OUT_CSCALE_LOG : OUT_CSCALE_LINEAR;
	}
	if (!r->row_axis || !r->col_axis) {
		r->row_axis = out_attr(m, "row_axis");
		r->col_axis = out_attr(m, "col_axis");
		if (!r->row_axis || !r->col_axis)
			r->row_axis = r->col_axis = NULL;
	}
}

bool out_is_symmetric(const struct matrix_out *m)
{
	struct matrix_render r;
	out_render(m, &r);
	return r.symmetric == OUT_SYM_YES;
}

size_t out_utf8_next(const unsigned char *s, unsigned *cp)
{
	unsigned c = s[0];
	size_t n;
	unsigned min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xE0) == 0xC0) {
		n = 2, min = 0x80, c &= 0x1F;
	} else if ((c & 0xF0) == 0xE0) {
		n = 3, min = 0x800, c &= 0x0F;
	} else if ((c & 0xF8) == 0xF0) {
		n = 4, min = 0x10000, c &= 0x07;
	} else {
		*cp = 0xFFFD;
		return 1;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			*cp = 0xFFFD;
			return 1;
		}
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
		*cp = 0xFFFD;
		return 1;
	}
	*cp = c;
	return n;
}

int out_csv_field(FILE *f, const char *s)
{
	if (!s)
		return 0;
	if (!strpbrk(s, ",\"\r\n"))
		return fputs(s, f);
	if (putc('"', f) == EOF)
		return -1;
	for (; *s; s++) {
		if (*s == '"' && putc('"', f) == EOF)
			return -1;
		if (putc(*s, f) == EOF)
			return -1;
	}
	return putc('"', f) == EOF ? -1 : 0;
}

/* Writes code point cp as UTF-8. */
static int put_utf8(FILE *f, unsigned cp)
{
	char b[4];
	int n;
	if (cp < 0x80)
		b[0] = (char)cp, n = 1;
	else if (cp < 0x800)
		b[0] = (char)(0xC0 | (cp >> 6)), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
	else if (cp < 0x10000)
		b[0] = (char)(0xE0 | (cp >> 12)), b[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
		b[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
	else
		b[0] = (char)(0xF0 | (cp >> 18)), b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
	return fwrite(b, 1, (size_t)n, f) == (size_t)n ? 0 : -1;
}

/* s decoded code point by code point (invalid UTF-8: U+FFFD), each
 * written by put; <0 on an I/O error. */
static int put_each(FILE *f, const char *s, int (*put)(FILE *f, unsigned cp))
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned cp;
		p += out_utf8_next(p, &cp);
		if (put(f, cp) < 0)
			return -1;
	}
	return 0;
}

static int put_json(FILE *f, unsigned cp)
{
	switch (cp) {
	case '"': return fputs("\\\"", f);
	case '\\': return fputs("\\\\", f);
	case '\n': return fputs("\\n", f);
	case '\r': return fputs("\\r", f);
	case '\t': return fputs("\\t", f);
	default:
		if (cp < 0x20 || cp == 0x7F)
			return fprintf(f, "\\u%04x", cp);
		return put_utf8(f, cp);
	}
}

static int put_xml(FILE *f, unsigned cp)
{
	switch (cp) {
	case '&': return fputs("&amp;", f);
	case '<': return fputs("&lt;", f);
	case '>': return fputs("&gt;", f);
	case '"': return fputs("&quot;", f);
	case '\'': return fputs("&apos;", f);
	case '\t':
	case '\n':
	case '\r':
		return fprintf(f, "&#%u;", cp);
	default:
		/* XML 1.0 forbids most control characters, even escaped */
		if (cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF)
			cp = 0xFFFD;
		return put_utf8(f, cp);
	}
}

int out_json_value(FILE *f, const char *text)
{
	size_t n = text ? strspn(text, "0123456789") : 0;
	if (n && !text[n] && n < 20 && (text[0] != '0' || n == 1))
		return fputs(text, f);
	return out_json_string(f, text);
}

int out_json_string(FILE *f, const char *s)
{
	if (!s)
		return fputs("null", f);
	if (putc('"', f) == EOF || put_each(f, s, put_json) < 0)
		return -1;
	return putc('"', f) == EOF ? -1 : 0;
}

int out_xml_text(FILE *f, const char *s)
{
	return s ? put_each(f, s, put_xml) : 0;
}

int out_finish(FILE *f)
{
	if (fflush(f) != 0)
		return -1;
	if (ferror(f)) {
		if (errno == 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

void out_svg_text(FILE *f, double x, double y, double size, const char *anchor,
                  const char *extra, const char *s)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y,
	        size, anchor, extra ? " " : "", extra ? extra : "");
	out_xml_text(f, s);
	fputs("</text>\n", f);
}

void out_svg_begin(FILE *f, double w, double h)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
	           "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
	        w, h, w, h);
}

void out_svg_background(FILE *f, double w, double h)
{
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", w, h);
}

int out_svg_end(FILE *f)
{
	fputs("</svg>\n", f);
	return out_finish(f);
}
