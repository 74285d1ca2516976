/* commanalyze matrix TRACE: communication matrices in text, CSV, JSON,
 * HDF5 or SVG, and ComDetective's CSV layout. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "out_util.h"


void matrix_built_free(struct matrix_built *b)
{
	free(b->cell);
	free(b->nz);
	for (size_t i = 0; i < b->nlabels; i++)
		free(b->labels[i]);
	free(b->labels);
}

/* Labels of an index: T<i>(tid), the topology's core/socket labels, or
 * cpuN / S0 for the identity map. */
static char **make_labels(const struct analysis *a, enum mx_index index, size_t n)
{
	char **l = calloc(n ? n : 1, sizeof *l);
	if (!l)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char buf[64];
		if (index == MX_THREAD)
			thread_label(a->trace, i, buf, sizeof buf);
		else if (a->topo.identity)
			snprintf(buf, sizeof buf, index == MX_CORE ? "cpu%zu" : "S%zu", i);
		else
			snprintf(buf, sizeof buf, "%s",
			         index == MX_CORE ? (i < a->topo.ncores ? a->topo.core_label[i] : "?")
			                          : (i < a->topo.nsockets ? a->topo.socket_label[i] : "?"));
		if (!(l[i] = strdup(buf))) {
			for (size_t k = 0; k < i; k++)
				free(l[k]);
			free(l);
			return NULL;
		}
	}
	return l;
}

int matrix_build_cells(const struct matrices *mx, enum mx_index index, enum mx_kind kind,
                       bool directed, enum out_form form, struct matrix_built *b)
{
	const struct matrix *src = matrices_get(mx, index, kind);
	size_t n = src->n;
	if (form == OUT_FORM_SPARSE || (form == OUT_FORM_AUTO && n > OUT_DENSE_MAX)) {
		ptrdiff_t k = matrices_triplets(mx, index, kind, !directed, &b->nz);
		b->m.nnz = k > 0 ? (size_t)k : 0;
		b->m.nz = b->nz;
		return k < 0 ? -1 : 0;
	}
	if (!(b->cell = calloc(n ? n * n : 1, sizeof *b->cell)))
		return -1;
	if (directed)
		matrix_directed(src, b->cell);
	else
		matrix_symmetric(src, b->cell);
	b->m.cell = b->cell;
	return 0;
}

int matrix_build(const struct analysis *a, enum mx_index index, enum mx_kind kind,
                 bool directed, enum out_form form, const struct attr_set *attrs,
                 struct matrix_built *b)
{
	memset(b, 0, sizeof *b);
	size_t n = matrices_get(a->mx, index, kind)->n;
	snprintf(b->name, sizeof b->name, "%s_%s", mx_index_names[index], mx_kind_names[kind]);
	b->m = (struct matrix_out){
		.name = b->name, .kind = mx_kind_names[kind], .index = mx_index_names[index],
		.units = "estimated line transfers", .n = n,
		.attrs = attrs->a, .nattrs = attrs->n,
		.render = { .symmetric = directed ? OUT_SYM_NO : OUT_SYM_YES }, .form = form,
	};
	b->labels = make_labels(a, index, n);
	b->nlabels = b->labels ? n : 0;
	b->m.labels = (const char *const *)b->labels;
	if (!b->labels)
		return -1;
	return matrix_build_cells(a->mx, index, kind, directed, form, b);
}

int matrix_shared_scale(const struct analysis *a, enum mx_index index, bool directed,
                        const struct attr_set *attrs, double *max, double *min)
{
	*max = 0;
	*min = INFINITY;
	for (int k = MX_ALL; k <= MX_FALSE; k++) {
		struct matrix_built b;
		struct out_binned bins = { 0 };
		/* as drawn: the bins of a density map (out_bin), else the cells */
		int rc = matrix_build(a, index, k, directed, OUT_FORM_SPARSE, attrs, &b);
		if (!rc && b.m.n > OUT_BINS)
			rc = out_bin(&b.m, &bins);
		const struct matrix_out *drawn = b.m.n > OUT_BINS ? &bins.m : &b.m;
		for (size_t i = 0; !rc && i < (drawn->cell ? drawn->n * drawn->n : drawn->nnz); i++) {
			double v = drawn->cell ? drawn->cell[i] : drawn->nz[i].v;
			if (k == MX_ALL && v > *max)
				*max = v;
			if (v > 0 && v < *min)
				*min = v;
		}
		out_binned_free(&bins);
		matrix_built_free(&b);
		if (rc)
			return rc;
	}
	if (*min == INFINITY)
		*min = 0;
	return 0;
}

/* --color-max N|shared: N > 0, or shared (-1); 0 or -1 (message printed). */
static int parse_color_max(const char *v, double *out)
{
	char *end;
	if (!strcmp(v, "shared")) {
		*out = -1;
		return 0;
	}
	errno = 0;
	*out = strtod(v, &end);
	if (*v && !*end && !errno && *out > 0 && *out < 1e300)
		return 0;
	ana_err("matrix: --color-max: '%s' is not a positive number or shared", v);
	return -1;
}

/* ---- --comdetective-csv ---------------------------------------------------- */

struct cd_hook {
	struct analysis_hooks *h;
	struct cd_cpus cpus;
};

static int cd_hook_setup(void *arg, struct analysis *a)
{
	struct cd_hook *c = arg;
	if (cd_cpus_init(&c->cpus, a->topo.identity ? 0 : a->topo.ncpus)) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	struct event_consumer ec = cd_cpus_consumer(&c->cpus);
	return analysis_hooks_add(c->h, NULL, &ec);
}

/* The name ComDetective's files start with: the recorded program's
 * basename ("unknown" without a command line), then its pid (the first
 * thread's, 0 if unknown). */
static void cd_files_of(const struct analysis *a, struct cd_files *id, char *exe, size_t cap)
{
	size_t len = 0;
	const char *argv0 = ct_trace_section(a->trace, CT_SEC_CMDLINE, &len);
	const char *end = argv0 ? memchr(argv0, 0, len) : NULL;
	size_t l = argv0 ? (end ? (size_t)(end - argv0) : len) : 0;
	const char *base = argv0;
	for (size_t i = 0; i < l; i++)
		if (argv0[i] == '/')
			base = argv0 + i + 1;
	l = base ? l - (size_t)(base - argv0) : 0;
	if (!l || l >= cap)
		snprintf(exe, cap, "unknown");
	else
		memcpy(exe, base, l), exe[l] = 0;
	const struct ct_thread_info *t0 = thread_by_index(a->trace, 0);
	*id = (struct cd_files){ .exe = exe, .pid = t0 ? t0->pid : 0, .line_size = a->line_size };
}

/* ComDetective's six matrices and stats line into dir: 0 or an exit status
 * (message printed). */
static int write_cd_files(const struct analysis *a, const char *dir, const struct cd_cpus *cpus,
                          const struct attr_set *attrs)
{
	if (cpus->oom) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	if (cpus->same_cpu || cpus->unknown)
		ana_warn("%s: %llu events within one cpu and %llu without a known cpu are not in "
		         "ComDetective's core files", dir, (unsigned long long)cpus->same_cpu,
		         (unsigned long long)cpus->unknown);
	struct matrix_built bs[3];
	struct matrix_out mo[6];
	int status = 0;
	memset(bs, 0, sizeof bs);
	for (int k = MX_ALL; k <= MX_FALSE; k++) {
		if (!status && matrix_build(a, MX_THREAD, k, true, OUT_FORM_AUTO, attrs, &bs[k]))
			status = EXIT_BADTRACE;
		mo[k] = bs[k].m;
		mo[3 + k] = (struct matrix_out){
			.name = mx_kind_names[k], .kind = mx_kind_names[k], .index = "cpu",
			.units = "estimated line transfers", .n = cpus->n, .cell = cpus->cell[k],
			.render = { .symmetric = OUT_SYM_NO },
		};
	}
	char exe[256];
	struct cd_files id;
	cd_files_of(a, &id, exe, sizeof exe);
	struct ct_error err = {{0}};
	if (status)
		ana_err("out of memory");
	else if (write_comdetective_csv(dir, &id, mo, 6, &err)) {
		ana_err("%s", err.msg);
		status = EXIT_BADTRACE;
	}
	for (int k = MX_ALL; k <= MX_FALSE; k++)
		matrix_built_free(&bs[k]);
	return status;
}

enum { O_KIND = 1, O_INDEX, O_FORMAT, O_DIRECTED, O_OUTPUT, O_CDCSV, O_COLOR_MIN, O_COLOR_MAX,
       O_COLOR_SCALE, O_CELLS };
static const struct cli_opt matrix_opts[] = {
	{ "kind", 0, true, O_KIND }, { "index", 0, true, O_INDEX },
	{ "format", 0, true, O_FORMAT }, { "directed", 0, false, O_DIRECTED },
	{ "output", 'o', true, O_OUTPUT }, { "comdetective-csv", 0, true, O_CDCSV },
	{ "color-min", 0, true, O_COLOR_MIN }, { "color-max", 0, true, O_COLOR_MAX },
	{ "color-scale", 0, true, O_COLOR_SCALE }, { "cells", 0, true, O_CELLS },
};
/* --cells, in the order of enum out_form */
static const char *const cells_names[] = { "auto", "dense", "sparse" };
static const char *const color_min_names[] = { "zero", "min" };
static const char *const color_scale_names[] = { "linear", "log" };

int cmd_matrix(int argc, char **argv)
{
	const char *path, *out = NULL, *cdir = NULL, *v;
	int kind = MX_ALL, index = MX_THREAD, color_min = 0, color_log = 0, form = OUT_FORM_AUTO;
	double color_max = 0, shared_min = 0;   /* color_max 0: the largest cell, -1: shared */
	const struct matrix_writer *w = matrix_writer_find("text");
	bool directed = false;
	struct model_opts o;
	model_opts_default(&o);
	struct cli p;
	cli_init(&p, "matrix", argc, argv, matrix_opts, sizeof matrix_opts / sizeof *matrix_opts, &o);
	int id, bad = 0;
	while (!bad && (id = cli_next(&p, &v)) > 0) {
		switch (id) {
		case O_KIND:
			bad = cli_choice(&p, v, mx_kind_names, 3, &kind);
			break;
		case O_INDEX:
			bad = cli_choice(&p, v, mx_index_names, 3, &index);
			break;
		case O_FORMAT:
			if (!(w = matrix_writer_find(v))) {
				char names[128];
				ana_err("matrix: --format: '%s' is not %s", v,
				        matrix_writer_names(names, sizeof names));
				bad = -1;
			}
			break;
		case O_DIRECTED:
			directed = true;
			break;
		case O_OUTPUT:
			out = v;
			break;
		case O_CDCSV:
			cdir = v;
			break;
		case O_COLOR_MIN:
			bad = cli_choice(&p, v, color_min_names, 2, &color_min);
			break;
		case O_COLOR_MAX:
			bad = parse_color_max(v, &color_max);
			break;
		case O_COLOR_SCALE:
			bad = cli_choice(&p, v, color_scale_names, 2, &color_log);
			break;
		case O_CELLS:
			bad = cli_choice(&p, v, cells_names, 3, &form);
			break;
		}
	}
	if (bad || id < 0 || cli_trace(&p, &path))
		return EXIT_USAGE;
	if (w->writes_to_file && !out) {
		ana_err("matrix: --format %s needs -o FILE", w->name);
		return EXIT_USAGE;
	}

	struct analysis an;
	/* the matrices do not show the trace statistics: no pass for them */
	struct analysis_hooks none = { .no_stats = true };
	struct analysis_hooks hooks = { .setup = cd_hook_setup, .no_stats = true };
	struct cd_hook cdh = { .h = &hooks };
	hooks.arg = &cdh;
	int rc = analysis_run_hooks(&an, path, &o, true, cdir ? &hooks : &none);
	if (rc) {
		cd_cpus_free(&cdh.cpus);
		analysis_free(&an);
		return rc;
	}
	if (an.warning[0])
		ana_warn("%s: %s", path, an.warning);
	if (an.topo.identity && index != MX_THREAD)
		ana_warn("%s has no cpu map in its MACHINE section: %s matrix indexed by cpu number",
		         path, mx_index_names[index]);
	if (index != MX_THREAD && matrices_totals(an.mx)->unmapped_cpu)
		ana_warn("%llu events with a cpu outside the cpu map are not in the %s matrix",
		         (unsigned long long)matrices_totals(an.mx)->unmapped_cpu, mx_index_names[index]);

	struct attr_set attrs;
	analysis_attrs(&an, &attrs);
	attr_add(&attrs, "symmetric", "%s", directed ? "no" : "yes");
	attr_add(&attrs, "directed", "%s", directed ? "yes (row: receiving thread, column: publisher)"
	                                            : "no (M + M^T)");
	int status = 0;
	struct ct_error err = {{0}};
	if (cdir) {
		status = write_cd_files(&an, cdir, &cdh.cpus, &attrs);
		if (status || (!out && w == matrix_writer_find("text"))) {
			/* --comdetective-csv alone writes only the directory */
			if (!status && an.damaged) {
				fprintf(stderr, "commanalyze: %s\n", an.err.msg);
				status = EXIT_BADTRACE;
			}
			cd_cpus_free(&cdh.cpus);
			analysis_free(&an);
			return status;
		}
	}
	struct matrix_built b = { 0 };
	if ((color_max < 0 && matrix_shared_scale(&an, index, directed, &attrs, &color_max, &shared_min)) ||
	    matrix_build(&an, index, kind, directed, (enum out_form)form, &attrs, &b)) {
		matrix_built_free(&b);
		analysis_free(&an);
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	b.m.render.scale_from = color_min ? OUT_SCALE_FROM_MIN : OUT_SCALE_FROM_ZERO;
	b.m.render.scale_max = color_max;
	b.m.render.scale_min = shared_min;
	b.m.render.color_scale = color_log ? OUT_CSCALE_LOG : OUT_CSCALE_LINEAR;
	if (matrix_write(w, out, &b.m, 1, &err)) {
		ana_err("%s", err.msg);
		status = EXIT_BADTRACE;
	}
	matrix_built_free(&b);
	cd_cpus_free(&cdh.cpus);
	if (an.damaged) {
		fprintf(stderr, "commanalyze: %s\n", an.err.msg);
		if (!status)
			status = EXIT_BADTRACE;
	}
	analysis_free(&an);
	return status;
}
