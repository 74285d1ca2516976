/* SVG heatmap writer.
 *
 * Row i is drawn top to bottom, column j left to right; row labels on the
 * left, column labels under the matrix.  Axis titles come from the
 * render settings row_axis and col_axis when set; otherwise a symmetric
 * matrix gets the index ("thread", "core", ...) on both axes and a directed
 * one "receiver <index>" (rows) and "sender <index>" (columns).
 *
 * Size: cells are floor(768 / n) pixels, between 3 and 40, so the matrix is
 * at most about 768 pixels wide from 2 to 256 rows.  Tick labels use a font
 * of 0.6 cell (8 to 12 px); when cells are smaller than a line of text only
 * every k-th label is shown, k the smallest power of two that leaves room.
 * Column labels are turned upright when they do not fit across k cells.
 *
 * Colours: a linear scale from 0 to the largest finite value through a
 * viridis-like ramp (dark blue-violet -> teal -> green -> yellow),
 * interpolated linearly in RGB between nine control points, so colours are
 * proportional to volume (51M next to 72M reads as 70%, not as "nothing").
 * The render settings (struct matrix_render, out_render) change the scale:
 *   scale_from   from 0 (default) or from the smallest non-zero cell
 *                (attribute "color_min" = "min"), which spreads the colours
 *                over the range the cells use (differences look larger);
 *   scale_max    a positive number (attribute "color_max"): the top of the
 *                scale instead of the largest cell, so several pictures can
 *                share one scale; larger cells take the top colour and the
 *                legend says ">=";
 *   scale_min    a positive number (attribute "color_min"): the bottom of
 *                a scale from the minimum or of a log scale (shared scales);
 *                smaller non-zero cells take the bottom colour, "<=";
 *   color_scale  log (attribute "color_scale"): colours by log(v) from the
 *                smallest non-zero cell to the largest, for volumes that
 *                span orders of magnitude (the legend's middle is their
 *                geometric mean; the subtitle says "log colour scale");
 *                linear when a cell is negative.
 * The legend is a gradient bar with the same stops, labelled with the
 * bottom, middle and top of the scale; its height follows the matrix
 * (between 80 and 400 pixels).  Zero cells are light grey (#ebebeb), so
 * they stand apart from the darkest colour of the ramp; non-finite cells
 * are drawn like zero cells and counted in a note.
 *
 * Header: the title (matrix name, kind, index); a subtitle with the units,
 * the sum of the cells (of a symmetric matrix: each pair once, the cells on
 * and above the diagonal) and the largest cell; and
 * a line for each of the attributes "trace" and "command" when present,
 * shortened with "..." when long (the trace to 60 characters, keeping its
 * end; the command to 70, keeping its beginning).
 *
 * Up to 64 rows every cell is one <rect> with a <title> tooltip (visible
 * when the SVG is opened in a browser); above, a grey background is drawn
 * and non-zero cells of the same colour that touch along a row are merged
 * into one rect, which keeps a 256 x 256 picture small.
 *
 * More than OUT_BINS (256) rows: a density map (out_bin), the cells summed
 * over bins of k x k, k = ceil(n / 256), drawn as the matrix of at most
 * 256 x 256 bins above, labelled by index range ("0-39"), the bin size in
 * the subtitle and the axis titles: the picture has a bounded number of
 * elements whatever n (10,000 threads: 250 x 250 bins of 40). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out_util.h"

#define ZERO_FILL "#ebebeb"
#define EACH_CELL_MAX 64

static const unsigned char ramp[][3] = {
	{ 68, 1, 84 },   { 72, 40, 120 }, { 62, 73, 137 },  { 49, 104, 142 }, { 38, 130, 142 },
	{ 31, 158, 137 }, { 53, 183, 121 }, { 110, 206, 88 }, { 253, 231, 37 },
};
#define NRAMP (sizeof ramp / sizeof ramp[0])

static void colour(double t, char out[8])
{
	if (!(t >= 0))
		t = 0;
	if (t > 1)
		t = 1;
	double x = t * (double)(NRAMP - 1);
	size_t k = (size_t)x;
	if (k >= NRAMP - 1)
		k = NRAMP - 2;
	double u = x - (double)k;
	int rgb[3];
	for (int c = 0; c < 3; c++)
		rgb[c] = (int)lround(ramp[k][c] + u * (ramp[k + 1][c] - ramp[k][c]));
	snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* Number of characters of s (UTF-8 code points), for width estimates. */
static size_t nchars(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned cp;
		p += out_utf8_next(p, &cp);
		n++;
	}
	return n;
}

static const char *nz(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

/* Byte offset of the first character after the first c characters of s. */
static size_t char_offset(const char *s, size_t c)
{
	size_t o = 0;
	unsigned cp;
	while (s[o] && c--)
		o += out_utf8_next((const unsigned char *)s + o, &cp);
	return o;
}

/* Appends s to out (size cap, holding a string), at most max characters:
 * a longer s keeps its end (tail) or its beginning, with "..." for the rest.
 * Control characters become spaces. */
static void append_short(char *out, size_t cap, const char *s, size_t max, bool tail)
{
	size_t l = strlen(out);
	if (l + 1 >= cap)
		return;
	size_t n = nchars(s);
	const char *from = s, *dots = "";
	size_t bytes = strlen(s);
	if (n > max && max > 3) {
		dots = "...";
		if (tail) {
			from = s + char_offset(s, n - (max - 3));
			bytes = strlen(from);
		} else {
			bytes = char_offset(s, max - 3);
		}
	}
	if (tail && *dots && l + 4 <= cap) {
		memcpy(out + l, dots, 3);
		l += 3;
	}
	for (size_t b = 0; b < bytes && l + 1 < cap;) {
		/* whole characters only */
		unsigned cp;
		size_t cl = out_utf8_next((const unsigned char *)from + b, &cp);
		if (l + cl + 1 > cap)
			break;
		for (size_t q = 0; q < cl; q++) {
			unsigned char ch = (unsigned char)from[b + q];
			out[l++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
		}
		b += cl;
	}
	out[l] = 0;
	if (!tail && *dots && l + 4 <= cap)
		snprintf(out + l, cap - l, "%s", dots);
}

/* The colour scale: a cell v maps to cscale_t(v) in [0, 1] of the ramp. */
struct cscale {
	double lo, hi;
	bool log;                   /* log(v) between log(lo) and log(hi) */
	bool clip_lo, clip_hi;      /* cells below lo / above hi take the end colours */
};

/* From the render settings and the range [lo, hi] of the non-zero finite
 * cells: linear from 0 (or from the smallest cell, or scale_min, with
 * scale_from min; from lo when cells are negative) to the largest cell or
 * scale_max; log (only when every non-zero cell is positive) from the
 * smallest cell or scale_min to the largest or scale_max. */
static void cscale_init(struct cscale *c, const struct matrix_render *rd, double lo, double hi,
                        bool anyval)
{
	*c = (struct cscale){ .lo = 0, .hi = hi };
	if (!anyval)
		return;
	c->log = rd->color_scale == OUT_CSCALE_LOG && lo > 0;
	if (c->log || rd->scale_from == OUT_SCALE_FROM_MIN || lo < 0)
		c->lo = lo;
	if ((c->log || rd->scale_from == OUT_SCALE_FROM_MIN) && lo > 0 && rd->scale_min > 0 &&
	    rd->scale_min < hi) {
		c->lo = rd->scale_min;
		c->clip_lo = lo < c->lo;
	}
	if (rd->scale_max > 0 && rd->scale_max > c->lo) {
		c->hi = rd->scale_max;
		c->clip_hi = hi > c->hi;
	}
	/* a scale from 0 of negative values: from the minimum up to 0 */
	if (c->hi <= 0) {
		c->lo = lo;
		c->hi = hi;
		c->clip_lo = c->clip_hi = false;
	}
}

static double cscale_t(const struct cscale *c, double v)
{
	if (!(c->hi > c->lo))
		return 1;
	if (c->log)
		return v > 0 ? (log(v) - log(c->lo)) / (log(c->hi) - log(c->lo)) : 0;
	return (v - c->lo) / (c->hi - c->lo);
}

/* The picture of m; total: the sum in the subtitle, NAN: from m's cells (a
 * density map's bins would count a symmetric pair twice in a diagonal bin). */
static int write_svg(FILE *f, const struct matrix_out *m, double total_given)
{
	size_t n = m->n;
	char lb[32], num[48], col[8];

	/* value range over non-zero finite cells, and their sum (a symmetric
	 * matrix: each pair once, the cells on and above the diagonal) */
	struct matrix_render rd;
	out_render(m, &rd);
	bool sym = rd.symmetric == OUT_SYM_YES;
	double lo = INFINITY, hi = -INFINITY, total = 0;
	size_t nonfinite = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			double v = out_cell(m, i, j);
			if (!isfinite(v))
				nonfinite++;
			else if (v != 0) {
				if (v < lo) lo = v;
				if (v > hi) hi = v;
				if (!sym || j >= i)
					total += v;
			}
		}
	bool anyval = lo <= hi;
	if (!isnan(total_given))
		total = total_given;

	struct cscale sc;
	cscale_init(&sc, &rd, lo, hi, anyval);
	double slo = sc.lo, shi = sc.hi;

	/* header lines */
	char sub[400], src[400], cmdl[400];
	{
		char t1[48], t2[48];
		snprintf(sub, sizeof sub, "%s", nz(m->units, "values"));
		if (anyval) {
			out_fmt_compact(t1, sizeof t1, total);
			out_fmt_compact(t2, sizeof t2, hi);
			size_t l = strlen(sub);
			snprintf(sub + l, sizeof sub - l, "; total %s%s, max %s%s", t1,
			         sym ? " (each pair once)" : "", t2, sc.log ? "; log colour scale" : "");
		} else if (n) {
			size_t l = strlen(sub);
			snprintf(sub + l, sizeof sub - l, "; total 0");
		}
		src[0] = cmdl[0] = 0;
		const char *tr = out_attr(m, "trace"), *cmd = out_attr(m, "command");
		if (tr && *tr) {
			append_short(src, sizeof src, "trace: ", 10, false);
			append_short(src, sizeof src, tr, 60, true);
		}
		if (cmd && *cmd) {
			append_short(cmdl, sizeof cmdl, "command: ", 20, false);
			append_short(cmdl, sizeof cmdl, cmd, 70, false);
		}
	}

	const char *idx = nz(m->index, "thread");
	char rtitle[200], ctitle[200];
	if (rd.row_axis) {
		snprintf(rtitle, sizeof rtitle, "%s", rd.row_axis);
		snprintf(ctitle, sizeof ctitle, "%s", rd.col_axis);
	} else if (sym) {
		snprintf(rtitle, sizeof rtitle, "%s", idx);
		snprintf(ctitle, sizeof ctitle, "%s", idx);
	} else {
		snprintf(rtitle, sizeof rtitle, "receiver %s (row)", idx);
		snprintf(ctitle, sizeof ctitle, "sender %s (column)", idx);
	}

	/* geometry */
	double cell = n ? floor(768.0 / (double)n) : 0;
	if (cell > 40) cell = 40;
	if (cell < 3) cell = 3;
	{
		/* a tiny matrix must still be as long as its axis titles */
		size_t tl = nchars(rtitle) > nchars(ctitle) ? nchars(rtitle) : nchars(ctitle);
		double need = (double)tl * 12 * 0.6 + 10;
		if (n && cell * (double)n < need)
			cell = ceil(need / (double)n);
	}
	double fs = cell * 0.6;
	if (fs < 8) fs = 8;
	if (fs > 12) fs = 12;
	size_t k = 1;
	while (cell * (double)k < fs * 1.25)
		k *= 2;
	double cw = fs * 0.6; /* average character width */
	size_t maxl = 0;
	for (size_t i = 0; i < n; i += k) {
		size_t l = nchars(out_label(m, i, lb, sizeof lb));
		if (l > maxl) maxl = l;
	}
	if (maxl > 24) maxl = 24;
	double lw = (double)maxl * cw;
	bool upright = lw > cell * (double)k - 2;

	const double margin = 12, tfs = 16, sfs = 11, afs = 12;
	double S = (double)n * cell;
	double y0 = margin + tfs + 6 + sfs + (*src ? sfs + 4 : 0) + (*cmdl ? sfs + 4 : 0) + 14;
	double x0 = margin + afs + 8 + lw + 6;
	double colh = upright ? lw + 6 : fs + 6;
	double legx = x0 + S + 28, legw = 16;
	double legh = S < 80 ? 80 : (S > 400 ? 400 : S);

	char title[600];
	snprintf(title, sizeof title, "%s%s%s%s%s%s%s", nz(m->name, "matrix"),
	         m->kind && *m->kind ? ": " : "", m->kind && *m->kind ? m->kind : "",
	         m->kind && *m->kind ? " sharing" : "",
	         m->index && *m->index ? (m->kind && *m->kind ? ", by " : ": by ") : "",
	         m->index && *m->index ? m->index : "", "");
	double legtext = 0;
	if (anyval) {
		const double vals[3] = { slo, (slo + shi) / 2, shi };
		for (int q = 0; q < 3; q++) {
			out_fmt_compact(num, sizeof num, vals[q]);
			double w = ((double)strlen(num) + ((q == 2 && sc.clip_hi) || (!q && sc.clip_lo) ? 2 : 0)) * 6.6;
			if (w > legtext) legtext = w;
		}
	}
	if (legtext < 60) legtext = 60;
	double W = legx + legw + 6 + legtext + margin;
	double tw = (double)nchars(title) * tfs * 0.6 + 2 * margin;
	if (W < tw) W = tw;
	const char *lines[3] = { sub, src, cmdl };
	for (int q = 0; q < 3; q++) {
		tw = (double)nchars(lines[q]) * sfs * 0.6 + 2 * margin;
		if (W < tw) W = tw;
	}
	double Hm = y0 + S + colh + afs + 12;
	double Hl = anyval ? y0 + legh + 40 : y0 + 20;
	double H = (Hm > Hl ? Hm : Hl) + margin;
	if (nonfinite) H += 16;

	out_svg_begin(f, W, H);
	fputs("<title>", f);
	out_xml_text(f, title);
	fputs("</title>\n<desc>", f);
	out_xml_text(f, nz(m->units, ""));
	for (size_t a = 0; m->attrs && a < m->nattrs; a++) {
		if (!m->attrs[a].key)
			continue;
		fputs("; ", f);
		out_xml_text(f, m->attrs[a].key);
		fputs("=", f);
		out_xml_text(f, nz(m->attrs[a].value, ""));
	}
	fputs("</desc>\n", f);
	fputs("<defs><linearGradient id=\"ramp\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", f);
	for (size_t s = 0; s < NRAMP; s++) {
		colour((double)s / (double)(NRAMP - 1), col);
		fprintf(f, "<stop offset=\"%.4f\" stop-color=\"%s\"/>", (double)s / (double)(NRAMP - 1), col);
	}
	fputs("</linearGradient></defs>\n", f);
	out_svg_background(f, W, H);

	out_svg_text(f, margin, margin + tfs, tfs, "start", "font-weight=\"bold\"", title);
	out_svg_text(f, margin, margin + tfs + 6 + sfs, sfs, "start",
	             "class=\"subtitle\" fill=\"#444444\"", sub);
	{
		double ly = margin + tfs + 6 + sfs;
		if (*src)
			out_svg_text(f, margin, ly += sfs + 4, sfs, "start", "class=\"trace\" fill=\"#444444\"", src);
		if (*cmdl)
			out_svg_text(f, margin, ly += sfs + 4, sfs, "start", "class=\"command\" fill=\"#444444\"", cmdl);
	}

	if (n == 0) {
		out_svg_text(f, margin, y0 + 20, afs, "start", NULL, "(empty matrix)");
		return out_svg_end(f);
	}

	/* cells */
	fprintf(f, "<g class=\"cells\"%s>\n",
	        cell >= 12 ? " stroke=\"#ffffff\" stroke-width=\"1\"" : " shape-rendering=\"crispEdges\"");
	if (n > EACH_CELL_MAX)
		fprintf(f, "<rect class=\"zero\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
		        x0, y0, S, S, ZERO_FILL);
	for (size_t i = 0; i < n; i++) {
		double y = y0 + (double)i * cell;
		if (n <= EACH_CELL_MAX) {
			char rl[32], cl[32];
			const char *rlab = out_label(m, i, rl, sizeof rl);
			for (size_t j = 0; j < n; j++) {
				double v = out_cell(m, i, j);
				bool val = isfinite(v) && v != 0;
				if (val)
					colour(cscale_t(&sc, v), col);
				fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
				        x0 + (double)j * cell, y, cell, cell, val ? col : ZERO_FILL);
				out_xml_text(f, rlab);
				fputs(" \xe2\x86\x90 ", f); /* left arrow: row receives from column */
				out_xml_text(f, out_label(m, j, cl, sizeof cl));
				out_fmt_exact(num, sizeof num, v);
				fprintf(f, ": %s</title></rect>\n", num);
			}
		} else {
			size_t j = 0;
			while (j < n) {
				double v = out_cell(m, i, j);
				if (!isfinite(v) || v == 0) {
					j++;
					continue;
				}
				colour(cscale_t(&sc, v), col);
				size_t e = j + 1;
				while (e < n) {
					double u = out_cell(m, i, e);
					char c2[8];
					if (!isfinite(u) || u == 0)
						break;
					colour(cscale_t(&sc, u), c2);
					if (strcmp(c2, col))
						break;
					e++;
				}
				fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
				        x0 + (double)j * cell, y, (double)(e - j) * cell, cell, col);
				j = e;
			}
		}
		if (ferror(f))
			return -1;
	}
	fputs("</g>\n", f);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
	           "stroke=\"#999999\" stroke-width=\"1\"/>\n", x0 - 0.5, y0 - 0.5, S + 1, S + 1);

	/* tick labels: rows on the left, columns below */
	fprintf(f, "<g class=\"labels\" fill=\"#222222\">\n");
	for (size_t i = 0; i < n; i += k) {
		char buf[128];
		const char *l = out_label(m, i, lb, sizeof lb);
		snprintf(buf, sizeof buf, "%s", l);
		if (nchars(buf) > 24) {
			/* cut at 23 characters, on a character boundary, and mark it */
			size_t o = 0, c = 0;
			unsigned cp;
			while (buf[o] && c < 23)
				o += out_utf8_next((const unsigned char *)buf + o, &cp), c++;
			snprintf(buf + o, sizeof buf - o, "~");
		}
		double yc = y0 + ((double)i + 0.5) * cell, xc = x0 + ((double)i + 0.5) * cell;
		out_svg_text(f, x0 - 4, yc, fs, "end", "dy=\"0.35em\"", buf);
		if (upright) {
			char tr[96];
			snprintf(tr, sizeof tr, "dy=\"0.35em\" transform=\"rotate(-90 %.1f %.1f)\"", xc, y0 + S + 4);
			out_svg_text(f, xc, y0 + S + 4, fs, "end", tr, buf);
		} else {
			out_svg_text(f, xc, y0 + S + 4 + fs, fs, "middle", NULL, buf);
		}
	}
	fputs("</g>\n", f);

	/* axis titles */
	{
		char tr[96];
		double ry = y0 + S / 2, rx = margin + afs;
		snprintf(tr, sizeof tr, "font-weight=\"bold\" transform=\"rotate(-90 %.1f %.1f)\"", rx, ry);
		out_svg_text(f, rx, ry, afs, "middle", tr, rtitle);
		out_svg_text(f, x0 + S / 2, y0 + S + colh + afs + 2, afs, "middle",
		             "font-weight=\"bold\"", ctitle);
	}

	/* legend */
	if (anyval) {
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#ramp)\" "
		           "stroke=\"#999999\" stroke-width=\"0.5\"/>\n", legx, y0, legw, legh);
		/* top of the scale, middle, bottom (one label when equal) */
		const double vals[3] = { shi, sc.log ? sqrt(slo * shi) : (slo + shi) / 2, slo };
		for (int q = 0; q < (slo < shi ? 3 : 1); q++) {
			if ((q == 0 && sc.clip_hi) || (q == 2 && sc.clip_lo)) {
				/* cells beyond are drawn in the end colour: >= N, <= N */
				snprintf(num, sizeof num, q ? "\xe2\x89\xa4 " : "\xe2\x89\xa5 ");
				out_fmt_compact(num + 4, sizeof num - 4, vals[q]);
			} else {
				out_fmt_compact(num, sizeof num, vals[q]);
			}
			double ly = y0 + legh * (double)q / 2.0;
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\"/>\n",
			        legx + legw, ly, legx + legw + 3, ly);
			out_svg_text(f, legx + legw + 5, ly, 11, "start", "dy=\"0.35em\"", num);
		}
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"10\" fill=\"%s\" "
		           "stroke=\"#999999\" stroke-width=\"0.5\"/>\n", legx, y0 + legh + 14, legw, ZERO_FILL);
		out_svg_text(f, legx + legw + 5, y0 + legh + 19, 11, "start", "dy=\"0.35em\"", "0 (none)");
	} else {
		out_svg_text(f, legx, y0 + 12, 11, "start", NULL, "all cells 0");
	}
	if (nonfinite) {
		char s[96];
		snprintf(s, sizeof s, "%zu non-finite cell%s drawn as 0", nonfinite, nonfinite == 1 ? "" : "s");
		out_svg_text(f, margin, H - margin, 11, "start", "fill=\"#aa0000\"", s);
	}
	return out_svg_end(f);
}

int write_matrix_svg(FILE *f, const struct matrix_out *m)
{
	if (m->n <= OUT_BINS)
		return write_svg(f, m, NAN);
	struct out_binned b;
	if (out_bin(m, &b))
		return -1;
	int rc = write_svg(f, &b.m, b.total);
	out_binned_free(&b);
	return rc;
}
