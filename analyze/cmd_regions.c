/* commanalyze regions TRACE: communication by code region (commrec.h
 * markers and the OpenMP parallel regions the recorder marks), as a tree
 * with totals, the true/false split, the top pair and the thread load;
 * --node NAME: that region's matrix in any matrix format.
 * commanalyze timeline TRACE: communication over time, by phase or by
 * fixed intervals (--interval; --window is the window model's option), as
 * a table, one matrix per slice (h5) or a picture (svg). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "out_util.h"
#include "loops.h"
#include "regions.h"

/* timeline --changes without --interval: windows of 10 ms */
#define CHANGES_INTERVAL_NS 10000000ull
/* The most windows --interval may make: each costs about 2.2 KB (its slot
 * and two sparse matrix sets; measured: 108k windows of a 4-thread trace,
 * 265 MB), so at most some 220 MB, and more rows than a table or a picture
 * can show. */
#define TIMELINE_MAX_WINDOWS 100000ull

enum rfmt { RF_TEXT, RF_CSV, RF_JSON, RF_H5, RF_SVG };
static const char *const rfmt_names[] = { "text", "csv", "json", "h5", "svg" };

struct regions_cli {
	const char *cmd;
	const char *path, *out, *node;
	int fmt;
	int kind;
	bool directed;
	uint64_t window_ns;
	bool changes;                 /* timeline --changes */
	bool no_demangle;             /* regions, loops --no-demangle */
	int color_log;                /* --color-scale log (svg heatmaps) */
	struct model_opts o;
};

enum {
	O_FORMAT = 1, O_OUTPUT, O_KIND, O_NODE, O_DIRECTED, O_INTERVAL, O_CHANGES, O_COLOR_SCALE,
	O_NO_DEMANGLE,
};
static const char *const color_scale_names[] = { "linear", "log" };
/* regions and loops; timeline */
static const struct cli_opt regions_opts[] = {
	{ "format", 0, true, O_FORMAT }, { "output", 'o', true, O_OUTPUT },
	{ "kind", 0, true, O_KIND }, { "node", 0, true, O_NODE },
	{ "directed", 0, false, O_DIRECTED }, { "color-scale", 0, true, O_COLOR_SCALE },
	{ "no-demangle", 0, false, O_NO_DEMANGLE },
};
static const struct cli_opt timeline_opts[] = {
	{ "format", 0, true, O_FORMAT }, { "output", 'o', true, O_OUTPUT },
	{ "interval", 0, true, O_INTERVAL }, { "changes", 0, false, O_CHANGES },
};

/* One option of regions, loops or timeline: 0, or -1 (message printed). */
static int parse_option(struct regions_cli *c, struct cli *p, int id, const char *v)
{
	switch (id) {
	case O_FORMAT:
		return cli_choice(p, v, rfmt_names, 5, &c->fmt);
	case O_KIND:
		return cli_choice(p, v, mx_kind_names, 3, &c->kind);
	case O_OUTPUT:
		c->out = v;
		return 0;
	case O_NODE:
		c->node = v;
		return 0;
	case O_DIRECTED:
		c->directed = true;
		return 0;
	case O_INTERVAL:
		if (!parse_ns(v, &c->window_ns) || !c->window_ns) {
			ana_err("timeline: --interval: '%s' is not a duration above 0 (e.g. 10ms)", v);
			return -1;
		}
		return 0;
	case O_CHANGES:
		c->changes = true;
		return 0;
	case O_NO_DEMANGLE:
		c->no_demangle = true;
		return 0;
	case O_COLOR_SCALE:
		return cli_choice(p, v, color_scale_names, 2, &c->color_log);
	}
	return -1;
}

/* Options of regions and loops (--node, --kind, --directed) and timeline
 * (--interval, --changes; h5 and svg).  0 or EXIT_USAGE (message printed). */
static int parse(struct regions_cli *c, int argc, char **argv)
{
	bool timeline = !strcmp(c->cmd, "timeline");
	struct cli p;
	if (timeline)
		cli_init(&p, c->cmd, argc, argv, timeline_opts,
		         sizeof timeline_opts / sizeof *timeline_opts, &c->o);
	else
		cli_init(&p, c->cmd, argc, argv, regions_opts,
		         sizeof regions_opts / sizeof *regions_opts, &c->o);
	int id;
	const char *v;
	while ((id = cli_next(&p, &v)) > 0)
		if (parse_option(c, &p, id, v))
			return EXIT_USAGE;
	if (id < 0 || cli_trace(&p, &c->path))
		return EXIT_USAGE;
	if (c->changes && !c->window_ns)
		c->window_ns = CHANGES_INTERVAL_NS;
	bool matrices = timeline || c->node;
	if (!matrices && c->fmt > RF_JSON) {
		ana_err("%s: --format %s needs --node (the tree is text, csv or json)", c->cmd,
		        rfmt_names[c->fmt]);
		return EXIT_USAGE;
	}
	if ((c->fmt == RF_H5 || c->fmt == RF_SVG) && !c->out) {
		ana_err("%s: --format %s needs -o FILE", c->cmd, rfmt_names[c->fmt]);
		return EXIT_USAGE;
	}
	return 0;
}

static void labels_free(char **l, size_t n)
{
	for (size_t i = 0; l && i < n; i++)
		free(l[i]);
	free(l);
}

/* T<i>(tid) labels of the thread index space; NULL when out of memory. */
static char **thread_labels(const struct analysis *an)
{
	char **l = calloc(an->nthreads ? an->nthreads : 1, sizeof *l);
	for (size_t i = 0; l && i < an->nthreads; i++) {
		char buf[64];
		if (!(l[i] = strdup(thread_label(an->trace, i, buf, sizeof buf)))) {
			labels_free(l, i);
			return NULL;
		}
	}
	return l;
}

static const char *pair_text(const struct analysis *an, const struct matrices *mx, char *buf,
                             size_t cap)
{
	size_t a, b;
	double w;
	int found = top_pair(mx, &a, &b, &w);
	if (found <= 0)
		return snprintf(buf, cap, found ? "(out of memory)" : "-"), buf;
	char la[64], lb[64], v[32];
	out_fmt_compact(v, sizeof v, w);
	snprintf(buf, cap, "%s-%s %s", thread_label(an->trace, a, la, sizeof la),
	         thread_label(an->trace, b, lb, sizeof lb), v);
	return buf;
}

/* ---- regions: the tree ------------------------------------------------------ */

/* A region's label in the text tree: indented name and, for OpenMP, the
 * file's base name and line. */
static const char *node_label(const struct region_node *nd, char *buf, size_t cap)
{
	const char *base = strrchr(nd->where, '/');
	snprintf(buf, cap, "%*s%s%s%s", 2 * (int)nd->depth, "", nd->name, nd->where[0] ? " " : "",
	         base ? base + 1 : nd->where);
	return buf;
}

/* Whether the text tree shows node i: the root, and every region with
 * communication (a region's counts include its children's: a silent
 * region's subtree is silent).  The others are named after the tree. */
static bool text_shown(const struct regions *r, size_t i)
{
	return i == 0 || r->node[i].total[MX_ALL] > 0;
}

/* The node's line and its children's; 0, -1: memory (errno). */
static int text_node(FILE *f, const struct analysis *an, const struct regions *r, size_t i,
                     int width, double *load)
{
	const struct region_node *nd = &r->node[i];
	if (!text_shown(r, i))
		return 0;
	char name[400], tot[32], tr[32], fl[32], pair[160], imb[32];
	node_label(nd, name, sizeof name);
	out_fmt_compact(tot, sizeof tot, nd->total[MX_ALL]);
	out_fmt_compact(tr, sizeof tr, nd->total[MX_TRUE]);
	out_fmt_compact(fl, sizeof fl, nd->total[MX_FALSE]);
	if (region_load(r, nd->mx, load))
		return errno = ENOMEM, -1;
	double im = region_imbalance(r, i, load);
	if (im > 0)
		snprintf(imb, sizeof imb, "%.2f", im);
	else
		snprintf(imb, sizeof imb, "-");
	size_t threads = 0;
	for (size_t t = 0; t < r->n; t++)
		threads += nd->entered[t];
	char entries[32];
	snprintf(entries, sizeof entries, nd->entries ? "%llu" : "-", (unsigned long long)nd->entries);
	fprintf(f, "%-*s %8s %7zu %12s %12s %12s %9s  %s\n", width, name, entries, threads, tot, tr,
	        fl, imb, pair_text(an, nd->mx, pair, sizeof pair));
	size_t it = 0, ch;
	while ((ch = regions_next_child(r, i, &it)) != REGION_NONE)
		if (text_node(f, an, r, ch, width, load))
			return -1;
	return 0;
}

/* Thread load: each thread's share of each region's communication.  0, -1:
 * memory (errno). */
static int text_load(FILE *f, const struct analysis *an, const struct regions *r, double *load)
{
	fprintf(f, "\nThread load (share of each region's communication a thread took part in):\n");
	for (size_t i = 0; i < r->nnodes; i++) {
		const struct region_node *nd = &r->node[i];
		if (nd->total[MX_ALL] <= 0)
			continue;
		if (region_load(r, nd->mx, load))
			return errno = ENOMEM, -1;
		fprintf(f, "  %s:", nd->path);
		for (size_t t = 0; t < r->n; t++) {
			if (!nd->entered[t] && load[t] == 0)
				continue;
			char l[64];
			fprintf(f, " %s %.0f%%", thread_label(an->trace, t, l, sizeof l),
			        100.0 * load[t] / nd->total[MX_ALL]);
		}
		fputc('\n', f);
	}
	return 0;
}

/* The regions without communication, after the tree: how many, and the
 * first few by name (csv and json have their rows). */
#define SILENT_NAMED 8
static void text_silent(FILE *f, const struct regions *r, bool loops)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nnodes; i++)
		n += !text_shown(r, i);
	if (!n)
		return;
	fprintf(f, "\n%zu %s without communication, not shown above (csv and json list them):", n,
	        loops ? (n == 1 ? "loop or function" : "loops or functions")
	              : (n == 1 ? "region" : "regions"));
	size_t named = 0;
	for (size_t i = 0; i < r->nnodes && named < SILENT_NAMED; i++)
		if (!text_shown(r, i))
			fprintf(f, "%s %s", named++ ? "," : "", r->node[i].path);
	fprintf(f, "%s\n", n > named ? ", ..." : "");
}

static int write_tree_text(FILE *f, const char *c_cmd, const struct analysis *an,
                           const struct regions *r,
                           double *load)
{
	if (!strcmp(c_cmd, "loops"))
		fprintf(f, "Loops of %s (estimated line transfers, each counted in the innermost loop "
		           "around the receiving access and in the loops and function around it)\n\n",
		        an->path);
	else
		fprintf(f, "Regions of %s (estimated line transfers, each counted in the region open "
		           "on its receiving thread and in the regions around it)\n\n", an->path);
	int width = 24;
	for (size_t i = 0; i < r->nnodes; i++) {
		if (!text_shown(r, i))
			continue;
		char name[400];
		int w = (int)strlen(node_label(&r->node[i], name, sizeof name));
		width = w > width ? w : width;
	}
	fprintf(f, "%-*s %8s %7s %12s %12s %12s %9s  %s\n", width, "region", "entries", "threads",
	        "total", "true", "false", "imbalance", "top pair");
	if (text_node(f, an, r, 0, width, load) || text_load(f, an, r, load))
		return -1;
	text_silent(f, r, !strcmp(c_cmd, "loops"));
	if (r->nnodes == 1 && !strcmp(c_cmd, "loops"))
		fprintf(f, "\nNo functions: no event has an instruction address in a known function.\n");
	else if (r->nnodes == 1)
		fprintf(f, "\nNo regions: the program used no commrec.h markers and no OpenMP parallel "
		           "region was recorded.\n");
	if (r->unmatched_ends || r->unclosed)
		fprintf(f, "\nwarning: %llu region end markers without a begin, %llu regions never "
		           "closed (counted until their thread ended)\n",
		        (unsigned long long)r->unmatched_ends, (unsigned long long)r->unclosed);
	return out_finish(f);
}

static int write_tree_csv(FILE *f, const struct regions *r, double *load)
{
	fprintf(f, "path,name,where,depth,entries,threads,total,true,false,imbalance,"
	           "top_a,top_b,top_weight,load\n");
	for (size_t i = 0; i < r->nnodes; i++) {
		const struct region_node *nd = &r->node[i];
		char v[3][40], im[40], tw[40];
		for (int k = 0; k < 3; k++)
			out_fmt_exact(v[k], sizeof v[k], nd->total[k]);
		size_t a = 0, b = 0, threads = 0;
		double w;
		int has = top_pair(nd->mx, &a, &b, &w);
		if (has < 0 || region_load(r, nd->mx, load))
			return errno = ENOMEM, -1;
		out_fmt_exact(im, sizeof im, region_imbalance(r, i, load));
		out_fmt_exact(tw, sizeof tw, w);
		for (size_t t = 0; t < r->n; t++)
			threads += nd->entered[t];
		out_csv_field(f, nd->path);
		fputc(',', f);
		out_csv_field(f, nd->name);
		fputc(',', f);
		out_csv_field(f, nd->where);
		fprintf(f, ",%u,%llu,%zu,%s,%s,%s,%s,", nd->depth, (unsigned long long)nd->entries,
		        threads, v[0], v[1], v[2], im);
		if (has)
			fprintf(f, "%zu,%zu,%s,", a, b, tw);
		else
			fprintf(f, ",,0,");
		/* load: T=share pairs separated by spaces */
		char cellv[64];
		fputc('"', f);
		for (size_t t = 0, first = 1; t < r->n; t++) {
			if (!nd->entered[t] && load[t] == 0)
				continue;
			out_fmt_exact(cellv, sizeof cellv, load[t]);
			fprintf(f, "%s%zu=%s", first ? "" : " ", t, cellv);
			first = 0;
		}
		fputs("\"\n", f);
	}
	return out_finish(f);
}

static int write_tree_json(FILE *f, const struct analysis *an, const struct regions *r,
                           double *load)
{
	fputs("{\"trace\": ", f);
	out_json_string(f, an->path);
	fprintf(f, ", \"units\": \"estimated line transfers\", \"unmatched_ends\": %llu, "
	           "\"unclosed\": %llu, \"regions\": [\n",
	        (unsigned long long)r->unmatched_ends, (unsigned long long)r->unclosed);
	for (size_t i = 0; i < r->nnodes; i++) {
		const struct region_node *nd = &r->node[i];
		char v[3][40], im[40];
		for (int k = 0; k < 3; k++)
			out_fmt_exact(v[k], sizeof v[k], nd->total[k]);
		if (region_load(r, nd->mx, load))
			return errno = ENOMEM, -1;
		out_fmt_exact(im, sizeof im, region_imbalance(r, i, load));
		fputs("  {\"path\": ", f);
		out_json_string(f, nd->path);
		fputs(", \"name\": ", f);
		out_json_string(f, nd->name);
		fputs(", \"where\": ", f);
		out_json_string(f, nd->where);
		fputs(", \"parent\": ", f);
		out_json_string(f, nd->parent == REGION_NONE ? NULL : r->node[nd->parent].path);
		fprintf(f, ", \"depth\": %u, \"entries\": %llu, \"total\": %s, \"true\": %s, "
		           "\"false\": %s, \"imbalance\": %s, \"load\": {",
		        nd->depth, (unsigned long long)nd->entries, v[0], v[1], v[2], im);
		for (size_t t = 0, first = 1; t < r->n; t++) {
			if (!nd->entered[t] && load[t] == 0)
				continue;
			char l[64], lv[40];
			out_fmt_exact(lv, sizeof lv, load[t]);
			fprintf(f, "%s", first ? "" : ", ");
			out_json_string(f, thread_label(an->trace, t, l, sizeof l));
			fprintf(f, ": %s", lv);
			first = 0;
		}
		fprintf(f, "}}%s\n", i + 1 < r->nnodes ? "," : "");
	}
	fputs("]}\n", f);
	return out_finish(f);
}

/* One matrix through the matrix writers (--node, and the timeline's h5). */
static int write_matrices(const struct regions_cli *c, FILE *f, const struct matrix_out *m,
                          size_t nm)
{
	struct ct_error err = {{0}};
	struct out_dest d = { .f = f, .path = c->out, .err = &err };
	struct matrix_out *mc = malloc((nm ? nm : 1) * sizeof *mc);
	if (!mc) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	for (size_t i = 0; i < nm; i++) {
		mc[i] = m[i];
		mc[i].render.color_scale = c->color_log ? OUT_CSCALE_LOG : OUT_CSCALE_LINEAR;
	}
	int rc = matrix_writer_find(rfmt_names[c->fmt])->write(&d, mc, nm);
	free(mc);
	if (rc && err.msg[0])
		ana_err("%s", err.msg);
	return rc ? EXIT_BADTRACE : 0;
}

static int write_node(const struct regions_cli *c, FILE *f, const struct analysis *an,
                      const struct regions *r, char **labels)
{
	bool amb;
	size_t i = regions_find(r, c->node, &amb);
	if (i == REGION_NONE) {
		ana_err(amb ? "%s: several nodes are named '%s': give its path (commanalyze "
		              "%s %s --format csv lists them)"
		            : "%s: nothing is named '%s' (commanalyze %s %s lists them)",
		        c->cmd, c->node, c->cmd, c->path);
		return EXIT_USAGE;
	}
	const struct region_node *nd = &r->node[i];
	struct matrix_built b = { .m.n = r->n };
	if (matrix_build_cells(nd->mx, MX_THREAD, c->kind, c->directed, OUT_FORM_AUTO, &b)) {
		matrix_built_free(&b);
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	struct attr_set attrs;
	analysis_attrs(an, &attrs);
	attr_add(&attrs, "region", "%s", nd->path);
	if (nd->where[0])
		attr_add(&attrs, "where", "%s", nd->where);
	attr_add(&attrs, "symmetric", "%s", c->directed ? "no" : "yes");
	char name[64];
	snprintf(name, sizeof name, "region_%s", mx_kind_names[c->kind]);
	struct matrix_out mo = {
		.name = name, .kind = mx_kind_names[c->kind], .index = "thread",
		.units = "estimated line transfers", .n = r->n, .cell = b.m.cell, .nz = b.m.nz,
		.nnz = b.m.nnz, .labels = (const char *const *)labels, .attrs = attrs.a,
		.nattrs = attrs.n, .render = { .symmetric = c->directed ? OUT_SYM_NO : OUT_SYM_YES },
	};
	int rc = write_matrices(c, f, &mo, 1);
	matrix_built_free(&b);
	return rc;
}

/* ---- the report's section ---------------------------------------------------- */

static const struct regions *rank_regions;
static int cmp_region_total(const void *x, const void *y)
{
	double a = rank_regions->node[*(const size_t *)x].total[MX_ALL];
	double b = rank_regions->node[*(const size_t *)y].total[MX_ALL];
	return a < b ? 1 : a > b ? -1 : (*(const size_t *)x > *(const size_t *)y) - (*(const size_t *)x < *(const size_t *)y);
}

void regions_report_section(struct regions *r, const struct analysis *an, size_t top, FILE *f)
{
	if (r->nnodes < 2)
		return;
	regions_name_omp(r, an->trace);
	size_t n = r->nnodes - 1, *ix = malloc(n * sizeof *ix);
	double *load = calloc(r->n ? r->n : 1, sizeof *load);
	if (!ix || !load) {
		free(ix);
		free(load);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ix[i] = i + 1;
	rank_regions = r;
	qsort(ix, n, sizeof *ix, cmp_region_total);
	double all = r->node[0].total[MX_ALL];
	fprintf(f, "\n== Top regions (of %zu; commanalyze regions) ==\n", n);
	fprintf(f, "  %-36s %12s %6s %7s %9s  %s\n", "region", "total", "share", "false", "imbalance",
	       "top pair");
	for (size_t k = 0; k < n && k < top; k++) {
		const struct region_node *nd = &r->node[ix[k]];
		char name[400], tot[32], pair[160], imb[16] = "-";
		double im = region_load(r, nd->mx, load) ? 0 : region_imbalance(r, ix[k], load);
		if (im > 0)
			snprintf(imb, sizeof imb, "%.2f", im);
		out_fmt_compact(tot, sizeof tot, nd->total[MX_ALL]);
		const char *base = strrchr(nd->where, '/');
		snprintf(name, sizeof name, "%s%s%s", nd->path, nd->where[0] ? " " : "",
		         base ? base + 1 : nd->where);
		fprintf(f, "  %-36s %12s %5.1f%% %6.1f%% %9s  %s\n", name, tot,
		       all > 0 ? 100 * nd->total[MX_ALL] / all : 0,
		       nd->total[MX_ALL] > 0 ? 100 * nd->total[MX_FALSE] / nd->total[MX_ALL] : 0, imb,
		       pair_text(an, nd->mx, pair, sizeof pair));
	}
	fprintf(f, "  (share: of the whole program's total; regions nest, so shares add up to more)\n");
	free(ix);
	free(load);
}

/* ---- timeline ----------------------------------------------------------------- */

/* A slice's phase: its own name (phases, detected changes), else the
 * phase marker's at its start (windows); "(start)" before the first. */
static const char *slot_phase(const struct regions *r, const struct time_slot *s)
{
	const char *p = s->name[0] ? s->name : regions_phase_at(r, s->start);
	return p[0] ? p : "(start)";
}

static int write_slots_text(FILE *f, const struct analysis *an, const struct regions *r,
                            const struct time_slot *s, size_t ns, const char *by)
{
	fprintf(f, "Timeline of %s by %s (estimated line transfers; times from the first record)\n\n",
	        an->path, by);
	fprintf(f, "%5s %12s %12s  %-20s %12s %12s %12s  %s\n", "slice", "start_ms", "end_ms",
	        "phase", "total", "true", "false", "top pair");
	for (size_t i = 0; i < ns; i++) {
		char v[3][32], pair[160];
		for (int k = 0; k < 3; k++)
			out_fmt_compact(v[k], sizeof v[k], s[i].total[k]);
		fprintf(f, "%5zu %12.3f %12.3f  %-20s %12s %12s %12s  %s\n", i,
		        (s[i].start - r->first_time) / 1e6, (s[i].end - r->first_time) / 1e6,
		        slot_phase(r, &s[i]), v[0], v[1], v[2],
		        pair_text(an, s[i].mx, pair, sizeof pair));
	}
	return out_finish(f);
}

static int write_slots_csv(FILE *f, const struct regions *r, const struct time_slot *s, size_t ns)
{
	fprintf(f, "slice,start_ns,end_ns,phase,total,true,false,top_a,top_b,top_weight\n");
	for (size_t i = 0; i < ns; i++) {
		char v[3][40], tw[40];
		for (int k = 0; k < 3; k++)
			out_fmt_exact(v[k], sizeof v[k], s[i].total[k]);
		fprintf(f, "%zu,%llu,%llu,", i, (unsigned long long)(s[i].start - r->first_time),
		        (unsigned long long)(s[i].end - r->first_time));
		out_csv_field(f, slot_phase(r, &s[i]));
		fprintf(f, ",%s,%s,%s,", v[0], v[1], v[2]);
		size_t a, b;
		double w;
		int found = top_pair(s[i].mx, &a, &b, &w);
		if (found < 0)
			return errno = ENOMEM, -1;
		if (found) {
			out_fmt_exact(tw, sizeof tw, w);
			fprintf(f, "%zu,%zu,%s\n", a, b, tw);
		} else {
			fprintf(f, ",,0\n");
		}
	}
	return out_finish(f);
}

static int write_slots_json(FILE *f, const struct analysis *an, const struct regions *r,
                            const struct time_slot *s, size_t ns, const char *by)
{
	fputs("{\"trace\": ", f);
	out_json_string(f, an->path);
	fprintf(f, ", \"by\": \"%s\", \"units\": \"estimated line transfers\", \"slices\": [\n",
	        by);
	for (size_t i = 0; i < ns; i++) {
		char v[3][40];
		for (int k = 0; k < 3; k++)
			out_fmt_exact(v[k], sizeof v[k], s[i].total[k]);
		fprintf(f, "  {\"start_ns\": %llu, \"end_ns\": %llu, \"phase\": ",
		        (unsigned long long)(s[i].start - r->first_time),
		        (unsigned long long)(s[i].end - r->first_time));
		out_json_string(f, slot_phase(r, &s[i]));
		fprintf(f, ", \"total\": %s, \"true\": %s, \"false\": %s}%s\n", v[0], v[1], v[2],
		        i + 1 < ns ? "," : "");
	}
	fputs("]}\n", f);
	return out_finish(f);
}

/* One matrix per slice (directed, all events) in one HDF5 file. */
static int write_slots_h5(const struct regions_cli *c, const struct analysis *an,
                          const struct regions *r, const struct time_slot *s, size_t ns,
                          const char *by, char **labels)
{
	struct matrix_out *mo = calloc(ns ? ns : 1, sizeof *mo);
	struct matrix_built *b = calloc(ns ? ns : 1, sizeof *b);
	struct attr_set *as = calloc(ns ? ns : 1, sizeof *as);
	char (*names)[32] = calloc(ns ? ns : 1, sizeof *names);
	int rc = EXIT_BADTRACE;
	if (!mo || !b || !as || !names) {
		ana_err("out of memory");
		goto out;
	}
	for (size_t i = 0; i < ns; i++) {
		b[i].m.n = r->n;
		if (matrix_build_cells(s[i].mx, MX_THREAD, MX_ALL, true, OUT_FORM_AUTO, &b[i])) {
			ana_err("out of memory");
			goto out;
		}
		analysis_attrs(an, &as[i]);
		attr_add(&as[i], "start_ns", "%llu", (unsigned long long)(s[i].start - r->first_time));
		attr_add(&as[i], "end_ns", "%llu", (unsigned long long)(s[i].end - r->first_time));
		attr_add(&as[i], "phase", "%s", slot_phase(r, &s[i]));
		attr_add(&as[i], "symmetric", "no");
		snprintf(names[i], sizeof names[i], "%s_%04zu", by, i);
		mo[i] = (struct matrix_out){
			.name = names[i], .kind = "all", .index = "thread",
			.units = "estimated line transfers", .n = r->n, .cell = b[i].m.cell,
			.nz = b[i].m.nz, .nnz = b[i].m.nnz,
			.labels = (const char *const *)labels, .attrs = as[i].a, .nattrs = as[i].n,
			.render = { .symmetric = OUT_SYM_NO },
		};
	}
	rc = write_matrices(c, NULL, mo, ns);
out:
	for (size_t i = 0; b && i < ns; i++)
		matrix_built_free(&b[i]);
	free(b);
	free(mo);
	free(as);
	free(names);
	return rc;
}

/* ---- timeline picture ---------------------------------------------------------- */

#define SVG_PAIRS 6
static const char *const pair_colours[SVG_PAIRS + 1] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#7f7f7f",
};

/* Cell (i, j) of slot s (all events). */
static double slot_at(const struct time_slot *s, size_t i, size_t j)
{
	return matrix_at(matrices_get(s->mx, MX_THREAD, MX_ALL), i, j);
}

/* The pairs drawn: the SVG_PAIRS with the most communication over the whole
 * timeline (both directions), the rest as one "other pairs" line.  Found
 * among the pairs of all slots together; -1: memory. */
static ptrdiff_t svg_pairs(const struct regions *r, const struct time_slot *s, size_t ns,
                           size_t *pa, size_t *pb)
{
	struct matrices *all = regions_matrices(r);
	for (size_t k = 0; all && k < ns; k++)
		if (matrices_merge(all, s[k].mx)) {
			matrices_free(all);
			all = NULL;
		}
	struct mx_triplet *c = NULL;
	ptrdiff_t nc = all ? matrices_triplets(all, MX_THREAD, MX_ALL, true, &c) : -1;
	matrices_free(all);
	size_t np = 0;
	double best[SVG_PAIRS];
	for (ptrdiff_t x = 0; x < nc; x++) {
		size_t i = c[x].row, j = c[x].col;
		if (i >= j)
			continue;
		double w = 0;
		for (size_t k = 0; k < ns; k++)
			w += slot_at(&s[k], i, j) + slot_at(&s[k], j, i);
		if (w <= 0)
			continue;
		size_t at = np < SVG_PAIRS ? np++ : SVG_PAIRS;
		if (at == SVG_PAIRS) {
			if (w <= best[SVG_PAIRS - 1])
				continue;
			at = SVG_PAIRS - 1;
		}
		while (at > 0 && best[at - 1] < w) {
			best[at] = best[at - 1];
			pa[at] = pa[at - 1];
			pb[at] = pb[at - 1];
			at--;
		}
		best[at] = w;
		pa[at] = i;
		pb[at] = j;
	}
	free(c);
	return nc < 0 ? -1 : (ptrdiff_t)np;
}

/* Rate of pair p (p == np: every other pair, and same-thread cells) in slot s,
 * in transfers per ms. */
static double pair_rate(const struct time_slot *s, const size_t *pa, const size_t *pb, size_t np,
                        size_t p)
{
	double ms = (s->end - s->start) / 1e6, w = 0;
	if (ms <= 0)
		return 0;
	if (p < np)
		return (slot_at(s, pa[p], pb[p]) + slot_at(s, pb[p], pa[p])) / ms;
	w = s->total[MX_ALL];
	for (size_t q = 0; q < np; q++)
		w -= slot_at(s, pa[q], pb[q]) + slot_at(s, pb[q], pa[q]);
	return (w > 0 ? w : 0) / ms;
}

static int write_slots_svg(FILE *f, const struct analysis *an, const struct regions *r,
                           const struct time_slot *s, size_t ns, const char *by)
{
	size_t pa[SVG_PAIRS], pb[SVG_PAIRS];
	ptrdiff_t found = svg_pairs(r, s, ns, pa, pb);
	if (found < 0)
		return errno = ENOMEM, -1;
	size_t np = (size_t)found;
	bool other = false;
	double ymax = 0;
	for (size_t k = 0; k < ns; k++)
		for (size_t p = 0; p <= np; p++) {
			double v = pair_rate(&s[k], pa, pb, np, p);
			if (p == np && v > 0)
				other = true;
			ymax = v > ymax ? v : ymax;
		}
	ymax = ymax > 0 ? ymax * 1.1 : 1;
	const double W = 860, H = 420, L = 70, R = 180, T = 50, B = 50;
	double span = r->last_time > r->first_time ? (r->last_time - r->first_time) / 1e6 : 1;
	double pw = W - L - R, ph = H - T - B;
#define X(ms) (L + pw * (ms) / span)
#define Y(v) (T + ph - ph * (v) / ymax)
	out_svg_begin(f, W, H);
	out_svg_background(f, W, H);
	char title[400];
	snprintf(title, sizeof title, "Communication over time by %s: %s", by, an->path);
	out_svg_text(f, L, 24, 14, "start", NULL, title);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
	           "stroke=\"#444\"/>\n", L, T, pw, ph);
	for (int t = 0; t <= 4; t++) {
		char v[32];
		out_fmt_compact(v, sizeof v, ymax * t / 4);
		out_svg_text(f, L - 6, Y(ymax * t / 4) + 4, 10, "end", NULL, v);
		out_svg_text(f, X(span * t / 4), T + ph + 16, 10, "middle", NULL,
		             (snprintf(v, sizeof v, "%.1f", span * t / 4), v));
	}
	out_svg_text(f, L + pw / 2, H - 12, 11, "middle", "class=\"x-axis\"",
	             "time (ms from the first record)");
	/* turned about its own anchor: about another point it leaves the picture */
	char turn[96];
	snprintf(turn, sizeof turn, "class=\"y-axis\" transform=\"rotate(-90 16 %.1f)\"", T + ph / 2);
	out_svg_text(f, 16, T + ph / 2, 11, "middle", turn, "line transfers per ms");
	/* phase boundaries */
	fputs("<g class=\"phases\">\n", f);
	/* phase markers; or, by change, the detected ones */
	bool changes = !strcmp(by, "change");
	const struct time_slot *mark = changes ? s : r->phase;
	for (size_t i = changes ? 1 : 0; i < (changes ? ns : r->nphases); i++) {
		if (!mark[i].name[0])
			continue;
		double x = X((mark[i].start - r->first_time) / 1e6);
		fprintf(f, "<line class=\"phase\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		           "stroke=\"#000\" stroke-dasharray=\"4 3\"/>\n", x, T, x, T + ph);
		out_svg_text(f, x + 3, T - 6, 10, "start", "class=\"phase-name\"", mark[i].name);
	}
	fputs("</g>\n", f);
	/* one step line per pair */
	for (size_t p = 0; p <= np; p++) {
		if (p == np && !other)
			break;
		char label[160], la[64], lb[64];
		if (p < np)
			snprintf(label, sizeof label, "%s-%s", thread_label(an->trace, pa[p], la, sizeof la),
			         thread_label(an->trace, pb[p], lb, sizeof lb));
		else
			snprintf(label, sizeof label, "other pairs");
		fprintf(f, "<g class=\"series\" data-pair=\"");
		out_xml_text(f, label);
		fprintf(f, "\">\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"",
		        pair_colours[p < np ? p : SVG_PAIRS]);
		for (size_t k = 0; k < ns; k++) {
			double v = pair_rate(&s[k], pa, pb, np, p);
			fprintf(f, "%.1f,%.1f %.1f,%.1f ", X((s[k].start - r->first_time) / 1e6), Y(v),
			        X((s[k].end - r->first_time) / 1e6), Y(v));
		}
		fputs("\"/>\n</g>\n", f);
		double ly = T + 14 + 18.0 * (double)p;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		           "stroke-width=\"3\"/>\n", W - R + 12, ly - 4, W - R + 32, ly - 4,
		        pair_colours[p < np ? p : SVG_PAIRS]);
		out_svg_text(f, W - R + 38, ly, 11, "start", "class=\"legend\"", label);
	}
	if (!np)
		out_svg_text(f, L + pw / 2, T + ph / 2, 12, "middle", NULL, "no communication");
#undef X
#undef Y
	return out_svg_end(f);
}

/* The phases worth showing: without the slice before the first phase
 * marker when it holds nothing. */
static const struct time_slot *shown_phases(const struct regions *r, size_t *ns)
{
	const struct time_slot *s = r->phase;
	*ns = r->nphases;
	if (*ns > 1 && !s[0].events) {
		s++;
		(*ns)--;
	}
	return s;
}

int regions_timeline_svg(FILE *f, const struct analysis *an, const struct regions *r)
{
	size_t ns;
	const struct time_slot *s = shown_phases(r, &ns);
	return write_slots_svg(f, an, r, s, ns, "phase");
}

/* ---- the commands ------------------------------------------------------------ */

static void loops_notes(struct loops *l, const char *path);

/* The setup of the regions hooks, after a check that the trace's
 * duration (SUMMARY duration_ns; none: not checked) makes at most
 * TIMELINE_MAX_WINDOWS windows of --interval: refused before the replay,
 * not out of memory after it. */
struct interval_check {
	int (*inner)(void *, struct analysis *);
	void *inner_arg;
	uint64_t window_ns;
};

/* The shortest interval that makes at most TIMELINE_MAX_WINDOWS windows
 * of ns, rounded up to 2 significant digits, as --interval takes it
 * ("11us"). */
static const char *shortest_interval(uint64_t ns, char *buf, size_t cap)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	uint64_t least = ns / TIMELINE_MAX_WINDOWS + 1, p = 1;
	while (least / p >= 100)
		p *= 10;
	least = (least + p - 1) / p * p;
	int u = 0;
	for (; u < 3 && least % 1000 == 0; u++)
		least /= 1000;
	snprintf(buf, cap, "%llu%s", (unsigned long long)least, unit[u]);
	return buf;
}

static int check_interval(void *arg, struct analysis *an)
{
	const struct interval_check *ic = arg;
	char v[32], len[32], dur[32], least[32];
	uint64_t ns;
	if (ct_trace_meta(an->trace, CT_SEC_SUMMARY, "duration_ns", v, sizeof v) && parse_u64(v, &ns) &&
	    ns / ic->window_ns >= TIMELINE_MAX_WINDOWS) {
		ana_err("timeline: --interval %s makes %llu windows of the %s trace, at most %llu: "
		        "give --interval %s or longer", fmt_duration(ic->window_ns, len, sizeof len),
		        (unsigned long long)(ns / ic->window_ns + 1), fmt_duration(ns, dur, sizeof dur),
		        TIMELINE_MAX_WINDOWS,
		        shortest_interval(ns, least, sizeof least));
		return EXIT_USAGE;
	}
	return ic->inner(ic->inner_arg, an);
}

static int run(const char *cmd, int argc, char **argv)
{
	struct regions_cli c = { .cmd = cmd, .fmt = RF_TEXT, .kind = MX_ALL };
	model_opts_default(&c.o);
	int rc = parse(&c, argc, argv);
	if (rc)
		return rc;
	bool timeline = !strcmp(cmd, "timeline"), loops = !strcmp(cmd, "loops");
	struct analysis_hooks h;
	struct regions_hook rh;
	struct loops_hook lh;
	if (loops) {
		loops_hooks_init(&h, &lh);
		lh.no_demangle = c.no_demangle;
	} else {
		regions_hooks_init(&h, &rh, c.window_ns);
		rh.no_demangle = c.no_demangle;
	}
	struct interval_check ic = { h.setup, h.arg, c.window_ns };
	if (c.window_ns) {
		h.setup = check_interval;
		h.arg = &ic;
	}
	struct analysis an;
	rc = analysis_run_hooks(&an, c.path, &c.o, true, &h);
	struct regions *r = loops ? loops_regions(lh.l) : rh.r;
	if (rc) {
		if (loops)
			loops_free(lh.l);
		else
			regions_free(r);
		analysis_free(&an);
		return rc;
	}
	if (an.warning[0])
		ana_warn("%s: %s", c.path, an.warning);
	if (loops)
		loops_notes(lh.l, c.path);
	int status = 0;
	if (r->oom) {
		ana_err(c.window_ns ? "out of memory (or --interval far too short for the trace)"
		                    : "out of memory");
		status = EXIT_BADTRACE;
		goto done;
	}
	if (!loops)
		regions_name_omp(r, an.trace);
	struct time_slot *changed = NULL;
	long nchanged = 0;
	char **labels = thread_labels(&an);
	double *load = calloc(r->n ? r->n : 1, sizeof *load);
	bool to_file = c.fmt == RF_H5;
	FILE *f = to_file ? NULL : c.out ? fopen(c.out, "w") : stdout;
	if (!labels || !load) {
		ana_err("out of memory");
		status = EXIT_BADTRACE;
	} else if (!to_file && !f) {
		ana_err("cannot write %s: %s", c.out, strerror(errno));
		status = EXIT_BADTRACE;
	} else {
		size_t ns = r->nwin;
		const struct time_slot *s = c.window_ns ? r->win : shown_phases(r, &ns);
		const char *w = c.changes ? "change" : c.window_ns ? "window" : "phase";
		int wr = 0;
		if (c.changes && (nchanged = regions_detect_changes(r, &changed)) < 0) {
			ana_err("out of memory");
			wr = EXIT_BADTRACE;
		} else if (c.changes) {
			s = changed;
			ns = (size_t)nchanged;
		}
		if (wr)
			;
		else if (!timeline && c.node)
			wr = write_node(&c, f, &an, r, labels);
		else if (!timeline)
			wr = c.fmt == RF_CSV ? write_tree_csv(f, r, load)
			   : c.fmt == RF_JSON ? write_tree_json(f, &an, r, load)
			   : write_tree_text(f, cmd, &an, r, load);
		else if (c.fmt == RF_H5)
			wr = write_slots_h5(&c, &an, r, s, ns, w, labels);
		else
			wr = c.fmt == RF_CSV ? write_slots_csv(f, r, s, ns)
			   : c.fmt == RF_JSON ? write_slots_json(f, &an, r, s, ns, w)
			   : c.fmt == RF_SVG ? write_slots_svg(f, &an, r, s, ns, w)
			   : write_slots_text(f, &an, r, s, ns, w);
		if (f && (c.out ? fclose(f) : fflush(f)) && !wr)
			wr = -1;
		f = NULL;
		if (wr > 0)
			status = wr;
		else if (wr < 0) {
			ana_err("cannot write %s: %s", c.out ? c.out : "standard output", strerror(errno));
			status = EXIT_BADTRACE;
		}
	}
	if (f && c.out)
		fclose(f);
	regions_slots_free(changed, (size_t)(changed ? nchanged : 0));
	labels_free(labels, an.nthreads);
	free(load);
done:
	if (an.damaged) {
		fprintf(stderr, "commanalyze: %s\n", an.err.msg);
		if (!status)
			status = EXIT_BADTRACE;
	}
	if (loops)
		loops_free(lh.l);
	else
		regions_free(r);
	analysis_free(&an);
	return status;
}

int cmd_regions(int argc, char **argv)
{
	return run("regions", argc, argv);
}

int cmd_loops(int argc, char **argv)
{
	return run("loops", argc, argv);
}

/* What loops could not see, on stderr. */
static void loops_notes(struct loops *l, const char *path)
{
	uint64_t nofn, nocode;
	bool maps;
	loops_counts(l, &nofn, &nocode, &maps);
	if (!maps)
		ana_warn("%s: no memory map, or its binaries cannot be read here: no functions or "
		         "loops (loops reads the binaries that ran, on this machine)", path);
	else if (nocode)
		ana_warn("%s: the code of %llu functions could not be read: their loops are unknown",
		         path, (unsigned long long)nocode);
	if (nofn)
		ana_warn("%s: %llu events in no known function count in (program) only", path,
		         (unsigned long long)nofn);
}

int cmd_timeline(int argc, char **argv)
{
	return run("timeline", argc, argv);
}
