/* commanalyze html TRACE [-o FILE]: one self-contained HTML page (no
 * network: inline SVG and CSS, no fonts or scripts from elsewhere) with
 *   - the report (report.c's text, one <section> per "== Title ==" part),
 *   - the heatmaps: all, true and false sharing by thread and by core, one
 *     colour scale per index shared by the three kinds (--color-max shared),
 *     linear or log (--color-scale), from the matrix writer table's svg
 *     writer, inline,
 *   - the top objects and cache lines: the attribution's CSV writers turned
 *     into tables.
 * Regions (marked and OpenMP) are in the report's own section when the
 * trace has them.  One replay (report_run) serves everything. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib.h"
#include "out_util.h"
#include "regions.h"

#define HTML_TOP 20           /* objects and lines in the tables */
#define WIDE_MAP 16           /* heatmaps of more rows are drawn larger */

struct html_opts {
	const char *out;          /* NULL: standard output */
	bool log;                 /* heatmap colours by log(volume) */
};

/* A memory stream for a writer's output. */
struct capture {
	FILE *f;
	char *buf;
	size_t len;
};

static int capture_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	return c->f ? 0 : -1;
}

/* Ends the stream: 0 with c->buf holding the text, or -1. */
static int capture_close(struct capture *c)
{
	int rc = fclose(c->f) ? -1 : 0;
	c->f = NULL;
	return c->buf ? rc : -1;
}

static void html_text(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(s[i], f);
		}
	}
}

static void html_str(FILE *f, const char *s)
{
	html_text(f, s, strlen(s));
}

/* ---- the report ------------------------------------------------------------ */

/* "== Title ==" at line start: the title's bounds. */
static bool section_title(const char *line, size_t len, const char **t, size_t *tl)
{
	if (len < 6 || strncmp(line, "== ", 3) || strncmp(line + len - 3, " ==", 3))
		return false;
	*t = line + 3;
	*tl = len - 6;
	return true;
}

/* The report text: its first line as the page's heading, then each
 * "== Title ==" part as a section with its text preformatted. */
static void put_report(FILE *f, const char *text)
{
	const char *p = text, *nl = strchr(p, '\n');
	size_t l = nl ? (size_t)(nl - p) : strlen(p);
	fputs("<h1 class=\"headline\">", f);
	html_text(f, p, l);
	fputs("</h1>\n<div class=\"report\">\n", f);
	p += l + (nl ? 1 : 0);
	bool open = false;
	while (*p) {
		nl = strchr(p, '\n');
		l = nl ? (size_t)(nl - p) : strlen(p);
		const char *t;
		size_t tl;
		if (section_title(p, l, &t, &tl)) {
			if (open)
				fputs("</pre></section>\n", f);
			fputs("<section class=\"report-part\"><h2>", f);
			html_text(f, t, tl);
			fputs("</h2><pre>", f);
			open = true;
		} else if (open && l) {
			html_text(f, p, l);
			fputc('\n', f);
		}
		p += l + (nl ? 1 : 0);
	}
	if (open)
		fputs("</pre></section>\n", f);
	fputs("</div>\n", f);
}

/* ---- heatmaps --------------------------------------------------------------- */

/* An SVG picture inline: without its XML declaration, its gradient's id
 * made unique in the page (every picture defines one). */
static void put_svg(FILE *f, const char *svg, unsigned n)
{
	const char *p = strstr(svg, "<svg");
	if (!p)
		return;
	char id[32], ref[40];
	snprintf(id, sizeof id, "id=\"ramp-%u\"", n);
	snprintf(ref, sizeof ref, "url(#ramp-%u)", n);
	while (*p) {
		if (!strncmp(p, "id=\"ramp\"", 9)) {
			fputs(id, f);
			p += 9;
		} else if (!strncmp(p, "url(#ramp)", 10)) {
			fputs(ref, f);
			p += 10;
		} else {
			fputc(*p++, f);
		}
	}
}

/* The all, true and false heatmaps of one index, on the scale they share. */
static int put_heatmaps(FILE *f, const struct analysis *an, enum mx_index ix, bool log,
                        unsigned *nsvg)
{
	struct attr_set attrs;
	analysis_attrs(an, &attrs);
	attr_add(&attrs, "symmetric", "yes");
	double max, min;
	if (matrix_shared_scale(an, ix, false, &attrs, &max, &min))
		return -1;
	const struct matrix_writer *w = matrix_writer_find("svg");
	/* more than WIDE_MAP rows: two pictures a row, so that labels stay legible */
	bool wide = matrices_get(an->mx, ix, MX_ALL)->n > WIDE_MAP;
	fprintf(f, "<section class=\"heatmaps\" id=\"heatmaps-%s\"><h2>Heatmaps by %s</h2>\n"
	           "<p class=\"note\">M + M<sup>T</sup>, estimated line transfers; one %s colour "
	           "scale for all, true and false sharing</p>\n<div class=\"maps%s\">\n",
	        mx_index_names[ix], mx_index_names[ix], log ? "log" : "linear", wide ? " wide" : "");
	for (int k = MX_ALL; k <= MX_FALSE; k++) {
		struct matrix_built b;
		struct capture c;
		struct ct_error err = { { 0 } };
		if (matrix_build(an, ix, k, false, OUT_FORM_AUTO, &attrs, &b) || capture_open(&c)) {
			matrix_built_free(&b);
			return -1;
		}
		b.m.render.scale_max = max;
		b.m.render.scale_min = min;
		b.m.render.color_scale = log ? OUT_CSCALE_LOG : OUT_CSCALE_LINEAR;
		int rc = w->write(&(struct out_dest){ .f = c.f, .path = "html", .err = &err }, &b.m, 1);
		matrix_built_free(&b);
		if (capture_close(&c) || rc) {
			free(c.buf);
			return -1;
		}
		fprintf(f, "<figure class=\"heatmap\" data-index=\"%s\" data-kind=\"%s\">\n",
		        mx_index_names[ix], mx_kind_names[k]);
		put_svg(f, c.buf, ++*nsvg);
		fprintf(f, "<figcaption>%s sharing by %s</figcaption></figure>\n", mx_kind_names[k],
		        mx_index_names[ix]);
		free(c.buf);
	}
	fputs("</div></section>\n", f);
	return 0;
}

/* ---- objects and lines ------------------------------------------------------- */

/* One CSV field (RFC 4180) from *p: into f as HTML text; *p moves past its
 * separator.  Returns the separator: ',', '\n' or 0 at the end. */
static char csv_field(FILE *f, const char **p)
{
	const char *s = *p;
	if (*s == '"') {
		for (s++; *s; s++) {
			if (*s == '"' && s[1] == '"')
				fputc('"', f), s++;
			else if (*s == '"')
				break;
			else
				html_text(f, s, 1);
		}
		if (*s == '"')
			s++;
	} else {
		size_t n = strcspn(s, ",\r\n");
		html_text(f, s, n);
		s += n;
	}
	if (*s == '\r')
		s++;
	char sep = *s;
	*p = sep ? s + 1 : s;
	return sep;
}

/* A CSV text as a table: the first record as its header. */
static void put_csv_table(FILE *f, const char *csv, const char *cls)
{
	fprintf(f, "<table class=\"%s\">\n", cls);
	const char *p = csv;
	for (bool head = true; *p; head = false) {
		fputs(head ? "<thead><tr>" : "<tr>", f);
		char sep;
		do {
			fputs(head ? "<th>" : "<td>", f);
			sep = csv_field(f, &p);
			fputs(head ? "</th>" : "</td>", f);
		} while (sep == ',');
		fputs(head ? "</tr></thead><tbody>\n" : "</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
}

/* One attribution table: its CSV writer's output, as a table. */
static int put_attrib(FILE *f, struct attrib *at, const char *id, const char *title,
                      int (*write)(struct attrib *, FILE *, enum attrib_format, size_t))
{
	fprintf(f, "<section class=\"attrib\" id=\"%s\"><h2>%s</h2>\n", id, title);
	struct capture c;
	if (!at) {
		fputs("<p class=\"note\">no attribution</p></section>\n", f);
		return 0;
	}
	if (capture_open(&c))
		return -1;
	int rc = write(at, c.f, AF_CSV, HTML_TOP);
	if (capture_close(&c) || rc) {
		free(c.buf);
		return -1;
	}
	if (strchr(c.buf, '\n') && strchr(c.buf, '\n')[1])
		put_csv_table(f, c.buf, id);
	else
		fputs("<p class=\"note\">none</p>\n", f);
	free(c.buf);
	fputs("</section>\n", f);
	return 0;
}

/* ---- the page ------------------------------------------------------------------ */

static const char page_style[] =
	"body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
	"margin:0 auto;max-width:1500px;padding:16px 24px;color:#222;background:#fff}"
	"h1{font-size:1.5em;margin:0.2em 0 0.6em}h2{font-size:1.15em;margin:1.2em 0 0.4em;"
	"border-bottom:1px solid #ddd;padding-bottom:2px}"
	"nav a{margin-right:1em}pre{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;"
	"font-size:12.5px;line-height:1.35;background:#f7f7f7;padding:8px 10px;overflow-x:auto;"
	"margin:0}.note{color:#555;font-size:0.9em}"
	".maps{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:12px}"
	".maps.wide{grid-template-columns:repeat(auto-fit,minmax(680px,1fr))}"
	"figure{margin:0;border:1px solid #e4e4e4;padding:4px}figure svg{max-width:100%;height:auto;margin:0 auto;"
	"display:block}figcaption{text-align:center;font-size:0.9em;color:#444}"
	"table{border-collapse:collapse;font-size:12.5px;display:block;overflow-x:auto}"
	"th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;white-space:nowrap}"
	"th{background:#f0f0f0}tbody tr:nth-child(even){background:#fafafa}";

/* ---- the timeline ------------------------------------------------------------ */

/* Phase markers were recorded: the slice before the first one and more. */
static bool has_phases(const struct regions *r)
{
	return r && r->nphases > 1;
}

/* Communication over time by phase, the picture of commanalyze timeline. */
static int put_timeline(FILE *f, const struct report_result *res, unsigned n)
{
	struct capture c;
	if (capture_open(&c))
		return -1;
	int rc = regions_timeline_svg(c.f, res->an, res->regions);
	if (capture_close(&c) || rc) {
		free(c.buf);
		return -1;
	}
	fputs("<section class=\"timeline\" id=\"timeline\"><h2>Timeline by phase</h2>\n"
	      "<p class=\"note\">line transfers per ms of the busiest thread pairs, between the "
	      "program's phase markers</p>\n<figure class=\"timeline\">\n", f);
	put_svg(f, c.buf, n);
	fputs("</figure></section>\n", f);
	free(c.buf);
	return 0;
}

static int write_page(FILE *f, const struct report_result *res, bool log)
{
	struct capture rep;
	if (capture_open(&rep))
		return -1;
	report_result_write(res, false, rep.f);
	if (capture_close(&rep)) {
		free(rep.buf);
		return -1;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", f);
	html_str(f, "commtrace: ");
	html_str(f, res->an->path);
	fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n", page_style);
	fprintf(f, "<nav><a href=\"#heatmaps-thread\">heatmaps</a>%s<a href=\"#objects\">objects</a>"
	           "<a href=\"#lines\">cache lines</a></nav>\n",
	        has_phases(res->regions) ? "<a href=\"#timeline\">timeline</a>" : "");
	put_report(f, rep.buf);
	free(rep.buf);
	unsigned nsvg = 0;
	int rc = 0;
	for (int ix = MX_THREAD; ix <= MX_CORE && !rc; ix++)
		rc = put_heatmaps(f, res->an, ix, log, &nsvg);
	if (!rc && has_phases(res->regions))
		rc = put_timeline(f, res, nsvg + 1);
	if (!rc)
		rc = put_attrib(f, res->at, "objects", "Top objects", attrib_write_objects);
	if (!rc)
		rc = put_attrib(f, res->at, "lines", "Top cache lines", attrib_write_lines);
	fputs("</body></html>\n", f);
	return rc;
}

static int html_show(void *arg, const struct report_result *res)
{
	const struct html_opts *ho = arg;
	FILE *f = ho->out ? fopen(ho->out, "w") : stdout;
	if (!f) {
		ana_err("cannot write %s: %s", ho->out, strerror(errno));
		return EXIT_BADTRACE;
	}
	int rc = write_page(f, res, ho->log);
	if (rc)
		ana_err("html: out of memory");
	if ((ho->out ? fclose(f) : fflush(f)) && !rc) {
		ana_err("cannot write %s: %s", ho->out ? ho->out : "standard output", strerror(errno));
		rc = -1;
	}
	return rc ? EXIT_BADTRACE : 0;
}

enum { O_OUTPUT = 1, O_FROM_BINARIES, O_NO_DEMANGLE, O_COLOR_SCALE };
static const struct cli_opt html_opts_table[] = {
	{ "output", 'o', true, O_OUTPUT }, { "symbols-from-binaries", 0, false, O_FROM_BINARIES },
	{ "no-demangle", 0, false, O_NO_DEMANGLE }, { "color-scale", 0, true, O_COLOR_SCALE },
};
static const char *const color_scales[] = { "linear", "log" };

int cmd_html(int argc, char **argv)
{
	const char *path, *v;
	struct model_opts o;
	model_opts_default(&o);
	bool from_binaries = false, no_demangle = false;
	int log = 0;
	struct html_opts ho = { NULL, false };
	struct cli p;
	cli_init(&p, "html", argc, argv, html_opts_table,
	         sizeof html_opts_table / sizeof *html_opts_table, &o);
	int id, bad = 0;
	while (!bad && (id = cli_next(&p, &v)) > 0) {
		if (id == O_OUTPUT)
			ho.out = v;
		else if (id == O_FROM_BINARIES)
			from_binaries = true;
		else if (id == O_NO_DEMANGLE)
			no_demangle = true;
		else if (id == O_COLOR_SCALE)
			bad = cli_choice(&p, v, color_scales, 2, &log);
	}
	if (bad || id < 0 || cli_trace(&p, &path))
		return EXIT_USAGE;
	ho.log = log == 1;
	return report_run(path, &o, from_binaries, no_demangle, html_show, &ho);
}
