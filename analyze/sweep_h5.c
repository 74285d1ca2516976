/* The sweep's HDF5 file, written with the helpers of out_h5.h (float64
 * matrices n x n row-major, scalar UTF-8 string attributes, a "labels"
 * attribute of n strings; automatic error printing off while writing).
 *
 *   Attributes whose value is a number are stored as numbers (uint64 or
 *   float64: h5w_attr_value), others as strings.
 *   /                 attributes: creator, format ("commtrace sweep"), tool,
 *                     traces, model, fixed options ("fixed:NAME"), params
 *                     (names in grid order), ngrid, npoints, reference,
 *                     reference_point (-1: a trace), symmetric, directed,
 *                     units, topk, distances, replay_seconds
 *   /grid/NAME        1-D: the values of parameter NAME (an axis), uint64 or
 *                     float64 when they are numbers, else strings;
 *                     attribute numeric yes/no; a dimension scale of the
 *                     summary datasets
 *   /grid/trace       1-D strings, with several traces: the trace axis
 *   /grid/index       uint32 [ngrid][nparams]: value index of every point
 *   /summary/METRIC   float64 with the grid's shape ([ntraces] first when
 *                     there are several traces; [1] without parameters):
 *                     volume true_fraction false_fraction l1 l1_shape
 *                     pearson excess missing ratio topk_recovered, and
 *                     uint64 events; attribute dims (the axes' names) and
 *                     the grid datasets attached as their dimension scales
 *   /points/NNNN      one group per point (NNNN = trace x ngrid + point):
 *                     attributes trace, trace_index, point, every swept
 *                     parameter, every option ("opt:NAME", resolved
 *                     line-size), totals (events_VIA_true|false,
 *                     weight_VIA_true|false, unmapped_cpu), the point's
 *                     metrics; datasets thread_all thread_true
 *                     thread_false core_all core_true core_false
 *   /reference        the reference when it is not a grid point (an off-grid
 *                     point of trace 0, or another trace): same layout */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

#ifndef HAVE_HDF5

int sweep_write_h5(const struct sweep *s, const char *path, struct ct_error *err)
{
	(void)s, (void)path;
	snprintf(err->msg, sizeof err->msg, "built without HDF5: install libhdf5-dev and rebuild");
	errno = ENOTSUP;
	return -1;
}

#else

#include "out_h5.h"

static const char *const via_names[] = { "sample", "watchpoint", "exact" };

static const char *core_label(const struct sweep_trace *ti, size_t i, char *buf, size_t cap)
{
	if (!ti->identity_topology && i < ti->ncores && ti->core_labels)
		return ti->core_labels[i];
	snprintf(buf, cap, ti->identity_topology ? "cpu%zu" : "core%zu", i);
	return buf;
}

/* The fixed estimator as the traces resolve it (--estimator auto: owner on
 * those with line monitor records): auto when they differ, or when the
 * model or the estimator is swept. */
static enum estimator_kind fixed_estimator(const struct sweep *s)
{
	if (!s->ntraces || sweep_swept(s, "model") || sweep_swept(s, "estimator"))
		return ESTIMATOR_AUTO;
	enum estimator_kind e = sweep_estimator(&s->traces[0], &s->base);
	for (size_t t = 1; t < s->ntraces; t++)
		if (sweep_estimator(&s->traces[t], &s->base) != e)
			return ESTIMATOR_AUTO;
	return e;
}

/* The six matrices, totals and options of one result into group g. */
static void write_mats(struct h5w *h, hid_t g, const struct sweep *s, const struct sweep_mats *m,
                       const struct sweep_trace *ti, const struct model_opts *o)
{
	char buf[256], key[64];
	enum estimator_kind est = sweep_estimator(ti, o);
	for (size_t k = 0; model_opt_names[k]; k++) {
		if (estimator_ignores(est, model_opt_names[k]))
			continue;
		snprintf(key, sizeof key, "opt:%s", model_opt_names[k]);
		if (!strcmp(model_opt_names[k], "line-size")) {
			snprintf(buf, sizeof buf, "%u", m->line_size);
			h5w_attr_value(h, g, key, buf);
		} else if (!strcmp(model_opt_names[k], "estimator")) {
			h5w_attr_value(h, g, key, estimator_names[est]);
		} else {
			h5w_attr_value(h, g, key, model_opts_format(o, model_opt_names[k], buf, sizeof buf));
		}
	}
	for (int v = 0; v < 3; v++)
		for (int t = 0; t < 2; t++) {
			snprintf(key, sizeof key, "events_%s_%s", via_names[v], t ? "true" : "false");
			h5w_attr_u64(h, g, key, m->tot.events[v][t]);
			snprintf(key, sizeof key, "weight_%s_%s", via_names[v], t ? "true" : "false");
			h5w_attr_f64(h, g, key, m->tot.weight[v][t]);
		}
	h5w_attr_u64(h, g, "unmapped_cpu", m->tot.unmapped_cpu);
	for (int ix = 0; ix < 2; ix++) {
		size_t n = m->n[ix];
		const char **labels = calloc(n ? n : 1, sizeof *labels);
		char (*lb)[32] = calloc(n ? n : 1, sizeof *lb);
		if (!labels || !lb) {
			h5w_fail(h);
			free(labels);
			free(lb);
			return;
		}
		for (size_t i = 0; i < n; i++) {
			if (ix == 0)
				labels[i] = i < ti->nthreads && ti->thread_labels ? ti->thread_labels[i] : "?";
			else
				labels[i] = core_label(ti, i, lb[i], sizeof lb[i]);
		}
		for (int k = 0; k < 3; k++) {
			struct matrix_built b = { .m.n = n };
			if (matrix_build_cells(m->mx, ix, k, s->directed, OUT_FORM_AUTO, &b)) {
				matrix_built_free(&b);
				h5w_fail(h);
				break;
			}
			snprintf(key, sizeof key, "%s_%s", mx_index_names[ix], mx_kind_names[k]);
			struct matrix_out mo = {
				.name = key, .kind = mx_kind_names[k], .index = mx_index_names[ix],
				.units = "estimated line transfers", .n = n, .cell = b.m.cell, .nz = b.m.nz,
				.nnz = b.m.nnz, .labels = labels,
			};
			hid_t d = h5w_matrix(h, g, key, &mo);
			matrix_built_free(&b);
			if (d < 0)
				continue;
			h5w_attr_str(h, d, "symmetric", s->directed ? "no" : "yes");
			H5Dclose(d);
		}
		free(labels);
		free(lb);
	}
}

static void write_metrics_attrs(struct h5w *h, hid_t g, const struct sweep_metrics *m)
{
	h5w_attr_f64(h, g, "volume", m->volume);
	h5w_attr_f64(h, g, "true_fraction", m->true_frac);
	h5w_attr_f64(h, g, "false_fraction", m->false_frac);
	h5w_attr_f64(h, g, "l1", m->l1);
	h5w_attr_f64(h, g, "l1_shape", m->l1_shape);
	h5w_attr_f64(h, g, "pearson", m->pearson);
	h5w_attr_f64(h, g, "excess", m->excess);
	h5w_attr_f64(h, g, "missing", m->missing);
	h5w_attr_f64(h, g, "ratio", m->ratio);
	h5w_attr_f64(h, g, "topk_recovered", m->topk);
	h5w_attr_u64(h, g, "topk", m->k);
}

/* The axes of summary dataset d: /grid/trace (several traces), then
 * /grid/NAME of each parameter, as its dimension scales. */
static void attach_axes(struct h5w *h, hid_t file, hid_t d, const struct sweep *s)
{
	unsigned dim = 0;
	for (size_t k = s->ntraces > 1 ? 0 : 1; k <= s->nparams; k++, dim++) {
		char path[96];
		snprintf(path, sizeof path, "grid/%s", k ? s->params[k - 1].name : "trace");
		hid_t sc = H5Dopen2(file, path, H5P_DEFAULT);
		if (sc < 0) {
			h5w_fail(h);
			continue;
		}
		h5w_attach_scale(h, d, sc, dim);
		H5Dclose(sc);
	}
}

static void write_summary(struct h5w *h, hid_t file, const struct sweep *s)
{
	hid_t g = H5Gcreate2(file, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (g < 0) {
		h5w_fail(h);
		return;
	}
	hsize_t dims[SWEEP_MAX_PARAMS + 1];
	int rank = 0;
	char dimtxt[512] = "";
	if (s->ntraces > 1) {
		dims[rank++] = s->ntraces;
		strcat(dimtxt, "trace");
	}
	for (size_t k = 0; k < s->nparams; k++) {
		dims[rank++] = s->params[k].nvalues;
		if (dimtxt[0])
			strncat(dimtxt, ",", sizeof dimtxt - strlen(dimtxt) - 1);
		strncat(dimtxt, s->params[k].name, sizeof dimtxt - strlen(dimtxt) - 1);
	}
	if (!rank) {
		dims[rank++] = 1;
		snprintf(dimtxt, sizeof dimtxt, "point");
	}
	size_t n = s->ntraces * s->ngrid;
	double *v = malloc((n ? n : 1) * sizeof *v);
	uint64_t *e = malloc((n ? n : 1) * sizeof *e);
	if (!v || !e) {
		h5w_fail(h);
		free(v);
		free(e);
		H5Gclose(g);
		return;
	}
	static const char *const names[] = { "volume", "true_fraction", "false_fraction", "l1",
	                                     "l1_shape", "pearson", "excess", "missing", "ratio",
	                                     "topk_recovered" };
	for (int q = 0; q < 10; q++) {
		for (size_t i = 0; i < n; i++) {
			const struct sweep_metrics *m = &s->metrics[i];
			double x[10] = { m->volume, m->true_frac, m->false_frac, m->l1, m->l1_shape,
			                 m->pearson, m->excess, m->missing, m->ratio, m->topk };
			v[i] = x[q];
		}
		hid_t d = h5w_dataset(h, g, names[q], rank, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v);
		if (d >= 0) {
			h5w_attr_str(h, d, "dims", dimtxt);
			attach_axes(h, file, d, s);
			H5Dclose(d);
		}
	}
	for (size_t t = 0; t < s->ntraces; t++)
		for (size_t p = 0; p < s->ngrid; p++) {
			const struct mx_totals *tot = &sweep_res(s, t, p)->tot;
			uint64_t ev = 0;
			for (int a = 0; a < 3; a++)
				ev += tot->events[a][0] + tot->events[a][1];
			e[t * s->ngrid + p] = ev;
		}
	hid_t d = h5w_dataset(h, g, "events", rank, dims, H5T_STD_U64LE, H5T_NATIVE_UINT64, e);
	if (d >= 0) {
		h5w_attr_str(h, d, "dims", dimtxt);
		attach_axes(h, file, d, s);
		H5Dclose(d);
	}
	h5w_attr_str(h, g, "dims", dimtxt);
	free(v);
	free(e);
	H5Gclose(g);
}

static void write_grid(struct h5w *h, hid_t file, const struct sweep *s)
{
	hid_t g = H5Gcreate2(file, "grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (g < 0) {
		h5w_fail(h);
		return;
	}
	for (size_t k = 0; k < s->nparams; k++) {
		const struct sweep_param *p = &s->params[k];
		hid_t d = h5w_dataset_values(h, g, p->name, (const char *const *)p->values, p->nvalues);
		if (d >= 0) {
			h5w_attr_str(h, d, "numeric", p->numeric ? "yes" : "no");
			h5w_attr_u64(h, d, "axis", k);
			H5Dclose(d);
		}
	}
	if (s->ntraces > 1) {   /* the first axis of the summary */
		const char **tp = calloc(s->ntraces, sizeof *tp);
		for (size_t t = 0; tp && t < s->ntraces; t++)
			tp[t] = s->traces[t].path;
		hsize_t nt = s->ntraces;
		hid_t d = tp ? h5w_dataset(h, g, "trace", 1, &nt, h->str, h->str, tp) : -1;
		if (d >= 0)
			H5Dclose(d);
		else
			h5w_fail(h);
		free(tp);
	}
	size_t np = s->nparams ? s->nparams : 1;
	uint32_t *idx = calloc(s->ngrid * np, sizeof *idx);
	if (!idx) {
		h5w_fail(h);
	} else {
		for (size_t p = 0; p < s->ngrid; p++)
			for (size_t k = 0; k < s->nparams; k++)
				idx[p * np + k] = (uint32_t)s->coord[p * s->nparams + k];
		hsize_t dims[2] = { s->ngrid, np };
		hid_t d = h5w_dataset(h, g, "index", 2, dims, H5T_STD_U32LE, H5T_NATIVE_UINT32, idx);
		if (d >= 0)
			H5Dclose(d);
		free(idx);
	}
	H5Gclose(g);
}

int sweep_write_h5(const struct sweep *s, const char *path, struct ct_error *err)
{
	struct h5w h;
	if (h5w_create(&h, path, err))
		return -1;
	hid_t file = h.file;

	/* provenance */
	h5w_attr_str(&h, file, "creator", "commtrace " CT_VERSION);
	h5w_attr_str(&h, file, "format", "commtrace sweep");
	h5w_attr_str(&h, file, "tool", "commanalyze " CT_VERSION);
	const char **tp = calloc(s->ntraces + 1, sizeof *tp);
	for (size_t t = 0; tp && t < s->ntraces; t++)
		tp[t] = s->traces[t].path;
	if (tp)
		h5w_attr_strs(&h, file, "traces", tp, s->ntraces);
	free(tp);
	if (s->ntraces == 1)
		h5w_attr_str(&h, file, "trace", s->traces[0].path);
	char models[200];
	h5w_attr_str(&h, file, "model", sweep_models(s, models, sizeof models));
	enum estimator_kind est = fixed_estimator(s);
	for (size_t k = 0; model_opt_names[k]; k++) {
		char key[64], v[128];
		if (sweep_swept(s, model_opt_names[k]) || estimator_ignores(est, model_opt_names[k]))
			continue;   /* not fixed: its values are /grid/NAME; or not used */
		snprintf(key, sizeof key, "fixed:%s", model_opt_names[k]);
		if (!strcmp(model_opt_names[k], "estimator"))
			h5w_attr_value(&h, file, key, estimator_names[est]);
		else
			h5w_attr_value(&h, file, key,
			               model_opts_format(&s->base, model_opt_names[k], v, sizeof v));
	}
	const char *pn[SWEEP_MAX_PARAMS];
	for (size_t k = 0; k < s->nparams; k++)
		pn[k] = s->params[k].name;
	h5w_attr_strs(&h, file, "params", pn, s->nparams);
	h5w_attr_u64(&h, file, "ngrid", s->ngrid);
	h5w_attr_u64(&h, file, "npoints", s->npoints);
	h5w_attr_str(&h, file, "reference", s->ref_desc);
	h5w_attr_i64(&h, file, "reference_point",
	      s->ref_kind == SWEEP_REF_POINT && s->ref_point < s->ngrid ? (int64_t)s->ref_point : -1);
	if (s->ref_kind == SWEEP_REF_TRACE)
		h5w_attr_str(&h, file, "reference_trace", s->ref_trace);
	h5w_attr_str(&h, file, "symmetric", s->directed ? "no" : "yes");
	h5w_attr_str(&h, file, "directed", s->directed ? "yes (row: receiving thread, column: publisher)"
	                                        : "no (M + M^T)");
	h5w_attr_str(&h, file, "units", "estimated line transfers");
	h5w_attr_u64(&h, file, "topk", SWEEP_TOPK);
	h5w_attr_str(&h, file, "distances",
	      "matrix_compare (compare.h) of the thread matrices, kind all, symmetric (pairs i < j "
	      "of M + M^T), point a against reference r, A and R their sums: l1 = sum |a - r| / R; "
	      "l1_shape = sum |a/A - r/R|; pearson of the pair cells; excess = sum max(0, a - r) / A; "
	      "missing = sum max(0, r - a) / R; ratio = A / R; topk_recovered = share of the "
	      "reference's top-k pairs among the point's top-k");
	h5w_attr_f64(&h, file, "replay_seconds", s->seconds);

	write_grid(&h, file, s);
	write_summary(&h, file, s);

	hid_t pg = H5Gcreate2(file, "points", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (pg < 0)
		h5w_fail(&h);
	for (size_t t = 0; pg >= 0 && t < s->ntraces && !h.bad; t++)
		for (size_t p = 0; p < s->ngrid && !h.bad; p++) {
			char name[32];
			snprintf(name, sizeof name, "%04zu", t * s->ngrid + p);
			hid_t g = H5Gcreate2(pg, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
			if (g < 0) {
				h5w_fail(&h);
				break;
			}
			h5w_attr_str(&h, g, "trace", s->traces[t].path);
			h5w_attr_u64(&h, g, "trace_index", t);
			h5w_attr_u64(&h, g, "point", p);
			for (size_t k = 0; k < s->nparams; k++)
				h5w_attr_value(&h, g, s->params[k].name, sweep_value(s, p, k));
			h5w_attr_str(&h, g, "is_reference",
			      s->ref_kind == SWEEP_REF_POINT && p == s->ref_point ? "yes" : "no");
			write_metrics_attrs(&h, g, sweep_metric(s, t, p));
			write_mats(&h, g, s, sweep_res(s, t, p), &s->traces[t], &s->opts[p]);
			H5Gclose(g);
		}
	if (pg >= 0)
		H5Gclose(pg);
	/* the reference, when it is not one of the points */
	const struct sweep_mats *rm = NULL;
	const struct sweep_trace *rt = NULL;
	if (s->ref_kind == SWEEP_REF_TRACE) {
		rm = &s->ref_mats;
		rt = &s->ref_info;
	} else if (s->ref_point >= s->ngrid && s->ntraces) {
		rm = sweep_res(s, 0, s->ref_point);
		rt = &s->traces[0];
	}
	if (rm && rm->done && !h.bad) {
		hid_t g = H5Gcreate2(file, "reference", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
		if (g < 0) {
			h5w_fail(&h);
		} else {
			h5w_attr_str(&h, g, "trace", rt->path);
			h5w_attr_str(&h, g, "reference", s->ref_desc);
			write_mats(&h, g, s, rm, rt, &s->ref_opts);
			H5Gclose(g);
		}
	}
	if (h5w_close(&h)) {
		snprintf(err->msg, sizeof err->msg, "cannot write HDF5 file '%s'", path);
		return -1;
	}
	return 0;
}

#endif
