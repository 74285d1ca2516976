/* The sweep's SVG plot: small multiples, one panel per metric (estimated
 * volume, true-sharing fraction, L1, shape distance, Pearson correlation,
 * top-k pairs recovered), each against the swept parameter.
 *
 * x: the first parameter with more than one value that is numeric (else
 * the first with more than one value).  Numbers on a linear axis, or a
 * log2 axis when they are all positive and span 16x or more; other values
 * (hash, expiry, model) are categories, evenly spaced, in the order given.
 * Lines: one per value of the next parameter with more than one value; or,
 * with a single swept parameter and several traces, one per trace.  Every
 * other parameter is held at the reference point's value (the finest point
 * when the reference is not a grid point), as the subtitle says.
 * Undefined values (NaN) break the line.
 *
 * Series stay apart where they overlap: each has its own colour (a fixed
 * qualitative palette of ten), marker shape (eight, hollow, so that shapes
 * drawn on the same point stay visible) and dash pattern (six), and earlier
 * series are drawn with wider strokes so that a later line on top of one
 * leaves its edges showing.  Every line of a panel is drawn before any
 * marker, so markers are never hidden by lines.  Each series is a
 * <g class="series" data-series="I" data-marker="SHAPE">; the legend shows
 * the same marker and dash.  Panels have a light frame, with the y axis
 * (left) and x axis (bottom) drawn dark. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out_util.h"
#include "sweep.h"

#define PW 380.0          /* panel size */
#define PH 250.0
#define ML 64.0           /* panel margins */
#define MR 16.0
#define MT 30.0
#define MB 46.0
#define COLS 2
#define NPANELS 6
#define TOP 78.0          /* title block */

static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
#define NPAL (sizeof palette / sizeof *palette)

/* Marker shapes, in order of use. */
static const char *const marker_name[] = {
	"circle", "square", "triangle", "diamond", "triangle-down", "plus", "cross", "star",
};
#define NMARK (sizeof marker_name / sizeof *marker_name)

/* Dash patterns: solid first. */
static const char *const dash[] = { NULL, "7,3", "2,2.5", "9,3,2,3", "4,4", "12,3,2,3,2,3" };
#define NDASH (sizeof dash / sizeof *dash)

/* Stroke width of series sv among n: earlier series wider. */
static double line_width(size_t sv, size_t n)
{
	size_t below = n - 1 - sv;
	return 1.6 + 0.9 * (double)(below < 3 ? below : 3);
}

/* Marker `shape` (an index into marker_name) of colour c centred at (x, y);
 * tip: a tooltip text or NULL. */
static void marker(FILE *f, size_t shape, double x, double y, const char *c, const char *tip)
{
	const double r = 4.2;
	fprintf(f, "<path class=\"marker\" fill=\"white\" fill-opacity=\"0\" stroke=\"%s\" "
	           "stroke-width=\"1.6\" d=\"", c);
	switch (shape % NMARK) {
	case 0: /* circle: two arcs; larger, so that it rings the shapes inside */
		fprintf(f, "M%.1f,%.1f a%.1f,%.1f 0 1,0 %.1f,0 a%.1f,%.1f 0 1,0 %.1f,0 Z", x - 1.25 * r, y,
		        1.25 * r, 1.25 * r, 2.5 * r, 1.25 * r, 1.25 * r, -2.5 * r);
		break;
	case 1: /* square */
		fprintf(f, "M%.1f,%.1f h%.1f v%.1f h%.1f Z", x - r * 0.85, y - r * 0.85, 1.7 * r, 1.7 * r,
		        -1.7 * r);
		break;
	case 2: /* triangle, point up */
		fprintf(f, "M%.1f,%.1f L%.1f,%.1f L%.1f,%.1f Z", x, y - 1.15 * r, x + r, y + 0.75 * r, x - r,
		        y + 0.75 * r);
		break;
	case 3: /* diamond */
		fprintf(f, "M%.1f,%.1f L%.1f,%.1f L%.1f,%.1f L%.1f,%.1f Z", x, y - 1.2 * r, x + r, y, x,
		        y + 1.2 * r, x - r, y);
		break;
	case 4: /* triangle, point down */
		fprintf(f, "M%.1f,%.1f L%.1f,%.1f L%.1f,%.1f Z", x, y + 1.15 * r, x + r, y - 0.75 * r, x - r,
		        y - 0.75 * r);
		break;
	case 5: /* plus */
		fprintf(f, "M%.1f,%.1f h%.1f M%.1f,%.1f v%.1f", x - 1.2 * r, y, 2.4 * r, x, y - 1.2 * r,
		        2.4 * r);
		break;
	case 6: /* cross */
		fprintf(f, "M%.1f,%.1f l%.1f,%.1f M%.1f,%.1f l%.1f,%.1f", x - r, y - r, 2 * r, 2 * r, x - r,
		        y + r, 2 * r, -2 * r);
		break;
	default: /* star: six strokes */
		fprintf(f, "M%.1f,%.1f v%.1f M%.1f,%.1f l%.1f,%.1f M%.1f,%.1f l%.1f,%.1f", x, y - 1.2 * r,
		        2.4 * r, x - r, y - 0.6 * r, 2 * r, 1.2 * r, x - r, y + 0.6 * r, 2 * r, -1.2 * r);
		break;
	}
	fputs("\"", f);
	if (tip) {
		fputs("><title>", f);
		out_xml_text(f, tip);
		fputs("</title></path>\n", f);
	} else {
		fputs("/>\n", f);
	}
}

/* The stroke-dasharray attribute of series sv ("" when solid). */
static void dash_attr(char *buf, size_t cap, size_t sv)
{
	const char *d = dash[sv % NDASH];
	if (d)
		snprintf(buf, cap, " stroke-dasharray=\"%s\"", d);
	else
		buf[0] = 0;
}

static const char *const metric_title[NPANELS] = {
	"estimated volume (line transfers)", "true-sharing fraction", "L1 distance (sum|p-r|/R)",
	"shape distance (sum|p/P-r/R|)", "Pearson correlation", "top-k pairs recovered",
};

static double metric_value(const struct sweep_metrics *m, int q)
{
	switch (q) {
	case 0: return m->volume;
	case 1: return m->true_frac;
	case 2: return m->l1;
	case 3: return m->l1_shape;
	case 4: return m->pearson;
	default: return m->topk;
	}
}

/* Ticks: a 1-2-5 step giving about 5 intervals over [lo, hi]. */
static double nice_step(double range)
{
	if (!(range > 0))
		return 1;
	double raw = range / 5, p = pow(10, floor(log10(raw))), f = raw / p;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* A tick label with as many decimals as the step needs. */
static void fmt_tick(double v, double step, char *buf, size_t cap)
{
	double a = fabs(v);
	char t[32];
	if (a == 0) {
		snprintf(buf, cap, "0");
	} else if (a >= 1e4) {
		snprintf(buf, cap, "%s%s", v < 0 ? "-" : "", fmt_count(a, t, sizeof t));
	} else {
		int dec = step < 1 ? (int)ceil(-log10(step) - 1e-9) : 0;
		if (dec > 9)
			snprintf(buf, cap, "%.3g", v);
		else
			snprintf(buf, cap, "%.*f", dec, v);
	}
}

struct xaxis {
	int kind;                 /* 0 categorical, 1 linear, 2 log2 */
	double lo, hi;
	size_t n;                 /* values */
	double *v;                /* numeric values (kind 1, 2) */
};

static double xpos(const struct xaxis *ax, size_t i, double x0, double w)
{
	if (ax->kind == 0)
		return x0 + w * ((double)i + 0.5) / (double)ax->n;
	double v = ax->kind == 2 ? log2(ax->v[i]) : ax->v[i];
	double lo = ax->kind == 2 ? log2(ax->lo) : ax->lo, hi = ax->kind == 2 ? log2(ax->hi) : ax->hi;
	if (hi <= lo)
		return x0 + w / 2;
	return x0 + w * (v - lo) / (hi - lo);
}

int sweep_write_plot(const struct sweep *s, const char *path)
{
	/* axes: x parameter, series parameter */
	int xk = -1, sk = -1;
	for (size_t k = 0; k < s->nparams && xk < 0; k++)
		if (s->params[k].nvalues > 1 && s->params[k].numeric)
			xk = (int)k;
	for (size_t k = 0; k < s->nparams && xk < 0; k++)
		if (s->params[k].nvalues > 1)
			xk = (int)k;
	for (size_t k = 0; k < s->nparams && sk < 0; k++)
		if ((int)k != xk && s->params[k].nvalues > 1)
			sk = (int)k;
	if (xk < 0 && s->nparams)
		xk = 0;
	bool by_trace = sk < 0 && s->ntraces > 1;
	size_t nser = sk >= 0 ? s->params[sk].nvalues : by_trace ? s->ntraces : 1;
	size_t nx = xk >= 0 ? s->params[xk].nvalues : 1;
	/* the point held for the other parameters */
	size_t hold = s->ref_kind == SWEEP_REF_POINT && s->ref_point < s->ngrid ? s->ref_point
	                                                                         : sweep_finest_point(s);

	struct xaxis ax = { .n = nx };
	ax.v = calloc(nx, sizeof *ax.v);
	size_t *pt = calloc(nx * nser, sizeof *pt);      /* grid point of (series, x) */
	size_t *tr = calloc(nser, sizeof *tr);            /* trace of a series */
	if (!ax.v || !pt || !tr) {
		free(ax.v);
		free(pt);
		free(tr);
		errno = ENOMEM;
		return -1;
	}
	if (xk >= 0 && s->params[xk].numeric) {
		ax.kind = 1;
		for (size_t i = 0; i < nx; i++) {
			uint64_t u = 0;
			parse_u64(s->params[xk].values[i], &u);
			ax.v[i] = (double)u;
			if (i == 0 || ax.v[i] < ax.lo)
				ax.lo = ax.v[i];
			if (i == 0 || ax.v[i] > ax.hi)
				ax.hi = ax.v[i];
		}
		if (ax.lo > 0 && ax.hi >= 16 * ax.lo)
			ax.kind = 2;
	}
	for (size_t sv = 0; sv < nser; sv++)
		for (size_t i = 0; i < nx; i++) {
			/* coordinates of hold, with x and series replaced */
			size_t idx = 0;
			for (size_t k = 0; k < s->nparams; k++) {
				size_t c = s->coord[hold * s->nparams + k];
				if ((int)k == xk)
					c = i;
				else if ((int)k == sk)
					c = sv;
				idx = idx * s->params[k].nvalues + c;
			}
			pt[sv * nx + i] = idx;
			tr[sv] = by_trace ? sv : 0;
		}

	FILE *f = fopen(path, "w");
	if (!f) {
		int e = errno;
		free(ax.v);
		free(pt);
		free(tr);
		errno = e;
		return -1;
	}
	double legend_h = nser > 1 ? 18.0 * (double)((nser + 3) / 4) + 8 : 0;
	double W = COLS * PW + 20, H = TOP + legend_h + (NPANELS / COLS) * PH + 10;
	out_svg_begin(f, W, H);
	out_svg_background(f, W, H);
	char buf[1024], b2[600], models[200];
	sweep_models(s, models, sizeof models);
	if (s->ntraces == 1)
		snprintf(buf, sizeof buf, "commanalyze sweep: %s (model %s)", s->traces[0].path, models);
	else
		snprintf(buf, sizeof buf, "commanalyze sweep: %zu traces (model %s)%s", s->ntraces, models,
		         by_trace ? "" : ", first trace shown");
	out_svg_text(f, 10, 22, 15, "start", "font-weight=\"bold\"", buf);
	snprintf(buf, sizeof buf, "reference: %s", s->ref_desc);
	out_svg_text(f, 10, 40, 11, "start", NULL, buf);
	/* what is held */
	size_t l = 0;
	b2[0] = 0;
	for (size_t k = 0; k < s->nparams; k++) {
		if ((int)k == xk || (int)k == sk || s->params[k].nvalues < 2)
			continue;
		int w = snprintf(b2 + l, sizeof b2 - l, "%s%s=%s", l ? ", " : "", s->params[k].name,
		                 sweep_value(s, hold, k));
		if (w < 0 || (size_t)w >= sizeof b2 - l)
			break;
		l += (size_t)w;
	}
	snprintf(buf, sizeof buf, "x: %s%s%s%s%s", xk >= 0 ? s->params[xk].name : "(no parameter)",
	         ax.kind == 2 ? " (log scale)" : "",
	         sk >= 0 ? "; lines: " : by_trace ? "; lines: traces" : "",
	         sk >= 0 ? s->params[sk].name : "", l ? "" : "");
	if (l) {
		size_t bl = strlen(buf);
		snprintf(buf + bl, sizeof buf - bl, "; held at %s", b2);
	}
	out_svg_text(f, 10, 56, 11, "start", NULL, buf);
	/* legend */
	if (nser > 1)
		for (size_t sv = 0; sv < nser; sv++) {
			double lx = 14 + (double)(sv % 4) * (W - 20) / 4, ly = TOP + 18.0 * (double)(sv / 4);
			const char *c = palette[sv % NPAL];
			char da[48];
			dash_attr(da, sizeof da, sv);
			fprintf(f, "<g class=\"legend-key\" data-series=\"%zu\" data-marker=\"%s\">\n", sv,
			        marker_name[sv % NMARK]);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			           "stroke-width=\"%.1f\"%s/>\n", lx, ly - 4, lx + 34, ly - 4, c,
			        line_width(sv, nser), da);
			marker(f, sv, lx + 17, ly - 4, c, NULL);
			fputs("</g>\n", f);
			if (sk >= 0)
				snprintf(buf, sizeof buf, "%s=%s", s->params[sk].name, s->params[sk].values[sv]);
			else
				snprintf(buf, sizeof buf, "%s", s->traces[sv].path);
			out_svg_text(f, lx + 40, ly, 11, "start", NULL, buf);
		}

	for (int q = 0; q < NPANELS; q++) {
		double px = 10 + (double)(q % COLS) * PW, py = TOP + legend_h + (double)(q / COLS) * PH;
		double x0 = px + ML, y0 = py + MT, w = PW - ML - MR, h = PH - MT - MB;
		/* y range */
		double lo = INFINITY, hi = -INFINITY;
		for (size_t sv = 0; sv < nser; sv++)
			for (size_t i = 0; i < nx; i++) {
				double v = metric_value(sweep_metric(s, tr[sv], pt[sv * nx + i]), q);
				if (isfinite(v)) {
					lo = v < lo ? v : lo;
					hi = v > hi ? v : hi;
				}
			}
		if (!isfinite(lo)) {
			lo = 0;
			hi = 1;
		}
		if (q == 1 || q == 5) {       /* fractions */
			lo = 0;
			hi = hi > 1 ? hi : 1;
		} else if (q == 4) {          /* correlation: the whole scale */
			lo = lo < 0 ? -1 : 0;
			hi = 1;
		} else if (lo > 0 && q != 4) {
			lo = 0;
		}
		if (hi <= lo)
			hi = lo + (lo ? fabs(lo) * 0.1 : 1);
		double step = nice_step(hi - lo);
		double tlo = floor(lo / step) * step, thi = ceil(hi / step - 1e-9) * step;
		if (thi <= tlo)
			thi = tlo + step;
		lo = tlo;
		hi = thi;
#define YP(v) (y0 + h - h * ((v) - lo) / (hi - lo))
		out_svg_text(f, px + PW / 2, py + 18, 12, "middle", "font-weight=\"bold\"", metric_title[q]);
		/* light frame; the axes are drawn dark after the grid */
		fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		           "fill=\"none\" stroke=\"#d4d4d4\" stroke-width=\"1\" shape-rendering=\"crispEdges\"/>\n",
		        x0, y0, w, h);
		/* y ticks and grid */
		for (double t = lo; t <= hi + step * 1e-6; t += step) {
			double y = YP(t);
			char tb[48];
			fmt_tick(fabs(t) < step * 1e-9 ? 0 : t, step, tb, sizeof tb);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\" "
			           "shape-rendering=\"crispEdges\"/>\n", x0, y, x0 + w, y);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n",
			        x0 - 4, y, x0, y);
			out_svg_text(f, x0 - 6, y + 4, 10, "end", NULL, tb);
		}
		/* x ticks: every value (thinned when crowded) */
		size_t every = 1;
		while (nx / every > 12)
			every *= 2;
		for (size_t i = 0; i < nx; i += every) {
			double x = xpos(&ax, i, x0, w);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n",
			        x, y0 + h, x, y0 + h + 4);
			const char *lab = xk >= 0 ? s->params[xk].values[i] : "point";
			out_svg_text(f, x, y0 + h + 16, 10, "middle", NULL, lab);
		}
		out_svg_text(f, x0 + w / 2, y0 + h + 34, 11, "middle", NULL,
		             xk >= 0 ? s->params[xk].name : "");
		/* axes: left and bottom */
		fprintf(f, "<path class=\"axes\" fill=\"none\" stroke=\"#444\" stroke-width=\"1\" "
		           "shape-rendering=\"crispEdges\" d=\"M%.1f,%.1f V%.1f H%.1f\"/>\n",
		        x0, y0, y0 + h, x0 + w);
		/* lines of every series, then markers on top */
		for (int pass = 0; pass < 2; pass++)
			for (size_t sv = 0; sv < nser; sv++) {
				const char *c = palette[sv % NPAL];
				fprintf(f, "<g class=\"%s\" data-series=\"%zu\" data-marker=\"%s\">\n",
				        pass ? "markers" : "series", sv, marker_name[sv % NMARK]);
				bool open = false;
				char da[48];
				dash_attr(da, sizeof da, sv);
				for (size_t i = 0; i < nx; i++) {
					double v = metric_value(sweep_metric(s, tr[sv], pt[sv * nx + i]), q);
					if (!isfinite(v)) {
						if (pass == 0 && open)
							fputs("\"/>\n", f);
						open = false;
						continue;
					}
					double x = xpos(&ax, i, x0, w), y = YP(v);
					if (pass) {
						snprintf(buf, sizeof buf, "point %zu: %g", pt[sv * nx + i], v);
						marker(f, sv, x, y, c, buf);
						continue;
					}
					if (!open)
						fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s "
						           "stroke-linejoin=\"round\" points=\"", c, line_width(sv, nser), da);
					fprintf(f, "%s%.1f,%.1f", open ? " " : "", x, y);
					open = true;
				}
				if (open)
					fputs("\"/>\n", f);
				fputs("</g>\n", f);
			}
#undef YP
	}
	free(ax.v);
	free(pt);
	free(tr);
	int bad = out_svg_end(f);
	if (fclose(f))
		bad = -1;
	if (bad && !errno)
		errno = EIO;
	return bad ? -1 : 0;
}
