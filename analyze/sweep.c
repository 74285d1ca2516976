/* commanalyze sweep: every point of a parameter grid from one decode pass.
 *
 * Each point of the grid is one model of the replay pipeline (pipeline.c,
 * analysis_replay): the engine (engine.c) decodes the trace once and fans
 * each batch of records out to the points, -j workers.  Each point sees
 * exactly the record sequence a single `commanalyze matrix` run sees, so
 * its matrices are the same, cell for cell, for any -j. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compare.h"
#include "out_util.h"
#include "sweep.h"

#define SWEEP_RANGE_MAX 10000     /* values one range may expand to */

/* ---- building ------------------------------------------------------------ */

static const char *model_name(const struct model_opts *o)
{
	return o->model ? o->model : "comdetective";
}

void sweep_init(struct sweep *s)
{
	memset(s, 0, sizeof *s);
	model_opts_default(&s->base);
	s->jobs = 1;
}

void sweep_mats_free(struct sweep_mats *m)
{
	matrices_free(m->mx);
	memset(m, 0, sizeof *m);
}

static void trace_info_free(struct sweep_trace *t)
{
	for (size_t i = 0; t->thread_labels && i < t->nthreads; i++)
		free(t->thread_labels[i]);
	free(t->thread_labels);
	for (size_t i = 0; t->core_labels && i < t->ncores; i++)
		free(t->core_labels[i]);
	free(t->core_labels);
	t->thread_labels = t->core_labels = NULL;
}

void sweep_free(struct sweep *s)
{
	for (size_t k = 0; k < s->nparams; k++) {
		for (size_t v = 0; v < s->params[k].nvalues; v++)
			free(s->params[k].values[v]);
		free(s->params[k].values);
	}
	if (s->res)
		for (size_t i = 0; i < s->ntraces * s->npoints; i++)
			sweep_mats_free(&s->res[i]);
	for (size_t t = 0; t < s->ntraces; t++)
		trace_info_free(&s->traces[t]);
	trace_info_free(&s->ref_info);
	sweep_mats_free(&s->ref_mats);
	free(s->traces);
	free(s->res);
	free(s->metrics);
	free(s->opts);
	free(s->coord);
	memset(s, 0, sizeof *s);
}

/* Validate one value of parameter p and append its canonical text. */
static int add_value(struct sweep_param *p, const char *v, char *err, size_t cap)
{
	struct model_opts o;
	model_opts_default(&o);
	char e[256], buf[128];
	int r = model_opts_parse(&o, p->name, v, e, sizeof e);
	if (r) {
		snprintf(err, cap, "--param %s: %s", p->name, r < 0 ? e : "not a model option");
		return -1;
	}
	const char *c = model_opts_format(&o, p->name, buf, sizeof buf);
	if (!c)
		c = v;
	/* line-size: a value the user gave, never "0" */
	for (size_t i = 0; i < p->nvalues; i++)
		if (!strcmp(p->values[i], c)) {
			snprintf(err, cap, "--param %s: value '%s' listed twice", p->name, c);
			return -1;
		}
	if (p->nvalues >= SWEEP_MAX_POINTS) {
		snprintf(err, cap, "--param %s: more than %d values", p->name, SWEEP_MAX_POINTS);
		return -1;
	}
	char **nv = realloc(p->values, (p->nvalues + 1) * sizeof *nv);
	if (!nv || !(nv[p->nvalues] = strdup(c))) {
		if (nv)
			p->values = nv;
		snprintf(err, cap, "out of memory");
		return -1;
	}
	p->values = nv;
	p->nvalues++;
	return 0;
}

/* "PREFIX A..B[:STEP|:xFACTOR]" -> values; 1 if item is not a range. */
static int add_range(struct sweep_param *p, const char *item, char *err, size_t cap)
{
	const char *dots = strstr(item, "..");
	if (!dots)
		return 1;
	size_t pl = (size_t)(dots - item);
	size_t d = pl;
	while (d > 0 && item[d - 1] >= '0' && item[d - 1] <= '9')
		d--;
	char prefix[64], num[32];
	if (d == pl || d >= sizeof prefix || pl - d >= sizeof num)
		goto bad;
	memcpy(prefix, item, d);
	prefix[d] = 0;
	memcpy(num, item + d, pl - d);
	num[pl - d] = 0;
	uint64_t a, b, step = 1;
	bool mul = false;
	if (!parse_u64(num, &a))
		goto bad;
	const char *rest = dots + 2;
	const char *colon = strchr(rest, ':');
	size_t bl = colon ? (size_t)(colon - rest) : strlen(rest);
	if (!bl || bl >= sizeof num)
		goto bad;
	memcpy(num, rest, bl);
	num[bl] = 0;
	if (!parse_u64(num, &b))
		goto bad;
	if (colon) {
		const char *st = colon + 1;
		if (*st == 'x' || *st == '*') {
			mul = true;
			st++;
		}
		if (!parse_u64(st, &step) || step < 1 || (mul && step < 2))
			goto bad;
	}
	if (b < a) {
		snprintf(err, cap, "--param %s: range '%s' runs backwards", p->name, item);
		return -1;
	}
	if (mul && a == 0) {
		snprintf(err, cap, "--param %s: range '%s' multiplies from 0", p->name, item);
		return -1;
	}
	size_t count = 0;
	for (uint64_t v = a; v <= b; count++) {
		if (count >= SWEEP_RANGE_MAX) {
			snprintf(err, cap, "--param %s: range '%s' has more than %d values", p->name, item,
			         SWEEP_RANGE_MAX);
			return -1;
		}
		char val[128];
		snprintf(val, sizeof val, "%s%" PRIu64, prefix, v);
		if (add_value(p, val, err, cap))
			return -1;
		uint64_t nx = mul ? v * step : v + step;
		if (nx <= v)
			break;  /* overflow */
		v = nx;
	}
	return 0;
bad:
	snprintf(err, cap, "--param %s: '%s' is not a range A..B, A..B:STEP or A..B:xFACTOR",
	         p->name, item);
	return -1;
}

int sweep_add_param(struct sweep *s, const char *spec, char *err, size_t cap)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || !eq[1]) {
		snprintf(err, cap, "--param: '%s' is not NAME=V1,V2,...", spec);
		return -1;
	}
	size_t nl = (size_t)(eq - spec);
	char name[32];
	if (nl >= sizeof name) {
		snprintf(err, cap, "--param: unknown model option '%.*s'", (int)nl, spec);
		return -1;
	}
	memcpy(name, spec, nl);
	name[nl] = 0;
	if (!model_opt_known(name)) {
		char list[512] = "";
		for (size_t k = 0; model_opt_names[k]; k++) {
			if (k)
				strncat(list, ", ", sizeof list - strlen(list) - 1);
			strncat(list, model_opt_names[k], sizeof list - strlen(list) - 1);
		}
		snprintf(err, cap, "--param: unknown model option '%s' (known: %s)", name, list);
		return -1;
	}
	if (sweep_swept(s, name)) {
		snprintf(err, cap, "--param %s given twice (list every value in one --param)", name);
		return -1;
	}
	if (s->nparams >= SWEEP_MAX_PARAMS) {
		snprintf(err, cap, "--param: at most %d parameters", SWEEP_MAX_PARAMS);
		return -1;
	}
	struct sweep_param *p = &s->params[s->nparams];
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "%s", name);
	s->nparams++;   /* owned by s from here (freed by sweep_free) */
	char *list = strdup(eq + 1);
	if (!list) {
		snprintf(err, cap, "out of memory");
		return -1;
	}
	int rc = 0;
	char *save = NULL;
	for (char *item = strtok_r(list, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
		int r = add_range(p, item, err, cap);
		if (r == 1)
			r = add_value(p, item, err, cap);
		rc = r;
	}
	free(list);
	if (!rc && !p->nvalues) {
		snprintf(err, cap, "--param %s: no values", name);
		rc = -1;
	}
	if (rc) {
		/* leave s as it was */
		for (size_t v = 0; v < p->nvalues; v++)
			free(p->values[v]);
		free(p->values);
		memset(p, 0, sizeof *p);
		s->nparams--;
		return -1;
	}
	p->numeric = true;
	for (size_t v = 0; v < p->nvalues; v++) {
		uint64_t x;
		if (!parse_u64(p->values[v], &x))
			p->numeric = false;
	}
	return 0;
}

int sweep_build_grid(struct sweep *s, char *err, size_t cap)
{
	size_t n = 1;
	for (size_t k = 0; k < s->nparams; k++) {
		if (n > SWEEP_MAX_POINTS / s->params[k].nvalues) {
			snprintf(err, cap, "the grid has more than %d points", SWEEP_MAX_POINTS);
			return -1;
		}
		n *= s->params[k].nvalues;
	}
	free(s->opts);
	free(s->coord);
	s->ngrid = s->npoints = n;
	s->opts = calloc(n + 1, sizeof *s->opts);   /* + an off-grid reference */
	s->coord = calloc(n * (s->nparams ? s->nparams : 1), sizeof *s->coord);
	if (!s->opts || !s->coord) {
		snprintf(err, cap, "out of memory");
		return -1;
	}
	for (size_t p = 0; p < n; p++) {
		size_t rest = p;
		for (size_t k = s->nparams; k-- > 0;) {
			s->coord[p * s->nparams + k] = rest % s->params[k].nvalues;
			rest /= s->params[k].nvalues;
		}
		s->opts[p] = s->base;
		for (size_t k = 0; k < s->nparams; k++) {
			char e[256];
			if (model_opts_parse(&s->opts[p], s->params[k].name, sweep_value(s, p, k), e,
			                     sizeof e)) {
				snprintf(err, cap, "%s", e);
				return -1;
			}
		}
	}
	return 0;
}

size_t sweep_finest_point(const struct sweep *s)
{
	size_t idx = 0;
	for (size_t k = 0; k < s->nparams; k++) {
		const struct sweep_param *p = &s->params[k];
		int dir = model_opt_finest(p->name);   /* +1: largest, -1: smallest, 0: first */
		size_t best = 0;
		if (dir && p->numeric) {
			uint64_t bv = 0;
			for (size_t v = 0; v < p->nvalues; v++) {
				uint64_t x = 0;
				parse_u64(p->values[v], &x);
				if (v == 0 || (dir > 0 ? x > bv : x < bv)) {
					bv = x;
					best = v;
				}
			}
		}
		idx = idx * p->nvalues + best;
	}
	return idx;
}

bool sweep_swept(const struct sweep *s, const char *name)
{
	for (size_t k = 0; k < s->nparams; k++)
		if (!strcmp(s->params[k].name, name))
			return true;
	return false;
}

enum estimator_kind sweep_estimator(const struct sweep_trace *ti, const struct model_opts *o)
{
	return estimator_pick(o->estimator, model_name(o), ti->owner_monitor);
}

const char *sweep_models(const struct sweep *s, char *buf, size_t cap)
{
	size_t l = 0;
	buf[0] = 0;
	for (size_t p = 0; p < s->ngrid; p++) {
		bool seen = false;
		for (size_t q = 0; q < p && !seen; q++)
			seen = !strcmp(model_name(&s->opts[q]), model_name(&s->opts[p]));
		if (!seen && l < cap)
			l += (size_t)snprintf(buf + l, cap - l, "%s%s", l ? "," : "", model_name(&s->opts[p]));
	}
	return s->ngrid ? buf : model_name(&s->base);
}

static bool same_opts(const struct model_opts *a, const struct model_opts *b)
{
	char x[128], y[128];
	for (size_t k = 0; model_opt_names[k]; k++) {
		const char *fa = model_opts_format(a, model_opt_names[k], x, sizeof x);
		const char *fb = model_opts_format(b, model_opt_names[k], y, sizeof y);
		if (!fa || !fb || strcmp(fa, fb))
			return false;
	}
	return true;
}

/* "name=value,name=value" of the swept parameters of point p */
static void point_text(const struct sweep *s, size_t p, char *buf, size_t cap)
{
	size_t l = 0;
	buf[0] = 0;
	for (size_t k = 0; k < s->nparams && l < cap; k++) {
		int w = snprintf(buf + l, cap - l, "%s%s=%s", k ? "," : "", s->params[k].name,
		                 sweep_value(s, p, k));
		if (w < 0)
			break;
		l += (size_t)w;
	}
}

/* A full trace: the FULL feature bit, or full=1 in the CONFIG section. */
static bool config_full(struct ct_trace *t)
{
	const struct ct_header *h = ct_trace_header(t);
	if (h && (h->features & CT_FEAT_FULL))
		return true;
	char v[32];
	return ct_trace_meta(t, CT_SEC_CONFIG, "full", v, sizeof v) && strcmp(v, "0") != 0 &&
	       strcmp(v, "no") != 0;
}

/* The reference is point o: the grid point with the same options, else an
 * off-grid point (replayed in the same pass).  how: why it was chosen (on
 * the grid); label, base: what it is off the grid ("board-size=1021",
 * "the finest point with it"). */
static void set_ref_point(struct sweep *s, const struct model_opts *o, const char *how,
                          const char *label, const char *base)
{
	char txt[400];
	s->ref_kind = SWEEP_REF_POINT;
	s->ref_opts = *o;
	for (size_t p = 0; p < s->ngrid; p++)
		if (same_opts(&s->opts[p], o)) {
			s->ref_point = p;
			point_text(s, p, txt, sizeof txt);
			snprintf(s->ref_desc, sizeof s->ref_desc, "point %zu (%s): %s", p,
			         s->nparams ? txt : "the only point", how);
			return;
		}
	s->ref_point = s->ngrid;
	s->opts[s->ngrid] = *o;
	s->npoints = s->ngrid + 1;
	snprintf(s->ref_desc, sizeof s->ref_desc, "off-grid point %s (%s; replayed in the same pass)",
	         label, base);
}

int sweep_set_reference(struct sweep *s, const char *ref, const char *ref_model,
                        char *err, size_t cap)
{
	s->npoints = s->ngrid;
	char how[200], label[400], e[256];
	const char *base = "the finest point with it";
	label[0] = 0;
	if (ref && *ref && strcmp(ref, "finest") && strcmp(ref, "first") && access(ref, R_OK) == 0) {
		s->ref_kind = SWEEP_REF_TRACE;
		s->ref_trace = ref;
		s->ref_opts = s->base;
		const char *model = ref_model;
		if (!model) {
			struct ct_error ce = {{0}};
			struct ct_trace *t = ana_trace_open(ref, &ce);
			if (!t) {
				snprintf(err, cap, "--reference: %s", ce.msg);
				return -1;
			}
			if (config_full(t) && model_find("exact"))
				model = "exact";
			ct_trace_close(t);
		}
		if (model && model_opts_parse(&s->ref_opts, "model", model, e, sizeof e)) {
			snprintf(err, cap, "--reference-model: %s", e);
			return -1;
		}
		snprintf(s->ref_desc, sizeof s->ref_desc, "trace %s analyzed with the %s model", ref,
		         model_name(&s->ref_opts));
		return 0;
	}
	/* a point: the finest or the first, or the finest with the options
	 * named changed; --reference-model M replaces its model (the same
	 * trace analyzed with M: `--reference-model exact` on a full trace
	 * compares every point with the ground truth) */
	struct model_opts o;
	if (!ref || !*ref || !strcmp(ref, "finest")) {
		o = s->opts[sweep_finest_point(s)];
		snprintf(how, sizeof how, "the finest of the grid");
	} else if (!strcmp(ref, "first")) {
		o = s->opts[0];
		snprintf(how, sizeof how, "the first of the grid");
		base = "the first point with it";
	} else if (!strchr(ref, '=')) {
		snprintf(err, cap, "--reference: '%s' is neither a readable trace nor a point NAME=V,...",
		         ref);
		return -1;
	} else {
		o = s->opts[sweep_finest_point(s)];
		char *list = strdup(ref);
		if (!list) {
			snprintf(err, cap, "out of memory");
			return -1;
		}
		char *save = NULL;
		int rc = 0;
		for (char *it = strtok_r(list, ",", &save); it && !rc; it = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(it, '=');
			if (!eq) {
				snprintf(err, cap, "--reference: '%s' is not NAME=VALUE", it);
				rc = -1;
				break;
			}
			*eq = 0;
			int r = model_opts_parse(&o, it, eq + 1, e, sizeof e);
			if (r) {
				snprintf(err, cap, "--reference: %s", r < 0 ? e : "unknown model option");
				if (r > 0) {
					size_t l = strlen(err);
					snprintf(err + l, cap - l, " '%s'", it);
				}
				rc = -1;
			}
		}
		free(list);
		if (rc)
			return -1;
		snprintf(how, sizeof how, "given with --reference");
		snprintf(label, sizeof label, "%s", ref);
	}
	if (ref_model) {
		if (model_opts_parse(&o, "model", ref_model, e, sizeof e)) {
			snprintf(err, cap, "--reference-model: %s", e);
			return -1;
		}
		size_t l = strlen(how);
		snprintf(how + l, sizeof how - l, ", model %s (--reference-model)", o.model);
		l = strlen(label);
		snprintf(label + l, sizeof label - l, "%smodel=%s", l ? "," : "", o.model);
	}
	set_ref_point(s, &o, how, label, base);
	return 0;
}

int sweep_add_trace(struct sweep *s, const char *path)
{
	struct sweep_trace *t = realloc(s->traces, (s->ntraces + 1) * sizeof *t);
	if (!t)
		return -1;
	s->traces = t;
	memset(&t[s->ntraces], 0, sizeof *t);
	t[s->ntraces].path = path;
	s->ntraces++;
	return 0;
}

int sweep_alloc_results(struct sweep *s)
{
	s->res = calloc(s->ntraces * s->npoints + 1, sizeof *s->res);
	s->metrics = calloc(s->ntraces * s->ngrid + 1, sizeof *s->metrics);
	return s->res && s->metrics ? 0 : -1;
}

/* ---- trace metadata -------------------------------------------------------- */

static int fill_info(struct sweep_trace *ti, struct ct_trace *tr, const struct topology *topo)
{
	trace_info_free(ti);
	ti->nthreads = thread_space(tr);
	ti->thread_labels = calloc(ti->nthreads + 1, sizeof *ti->thread_labels);
	if (!ti->thread_labels)
		return -1;
	for (size_t i = 0; i < ti->nthreads; i++) {
		char buf[64];
		if (!(ti->thread_labels[i] = strdup(thread_label(tr, i, buf, sizeof buf))))
			return -1;
	}
	ti->identity_topology = topo->identity;
	ti->ncores = topo->identity ? 0 : topo->ncores;
	ti->core_labels = calloc(ti->ncores + 1, sizeof *ti->core_labels);
	if (!ti->core_labels)
		return -1;
	for (size_t i = 0; i < ti->ncores; i++)
		if (!(ti->core_labels[i] = strdup(topo->core_label[i] ? topo->core_label[i] : "?")))
			return -1;
	return 0;
}

int sweep_trace_info(struct sweep *s, size_t t)
{
	struct sweep_trace *ti = &s->traces[t];
	struct analysis a;
	memset(&a, 0, sizeof a);
	int rc = analysis_open(&a, ti->path);
	if (!rc && fill_info(ti, a.trace, &a.topo)) {
		ana_err("out of memory");
		rc = EXIT_BADTRACE;
	}
	analysis_free(&a);
	return rc;
}

/* ---- the replay --------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sweep_mats_take(struct sweep_mats *out, struct matrices **mx, unsigned line_size)
{
	sweep_mats_free(out);
	out->mx = *mx;
	*mx = NULL;
	for (int i = 0; i < 2; i++)
		out->n[i] = matrices_get(out->mx, (enum mx_index)i, MX_ALL)->n;
	out->tot = *matrices_totals(out->mx);
	out->line_size = line_size;
	out->done = true;
}

/* A full-trace model on a sampled trace: one warning per model and trace,
 * from the run holding the first point with that model (so that MPI ranks
 * do not repeat it). */
static void warn_full_trace_models(const struct sweep *s, struct ct_trace *tr, const char *path,
                                   const size_t *points, size_t n)
{
	char why[320];
	for (size_t m = 0; all_models[m]; m++) {
		const char *name = all_models[m]->name;
		if (full_trace_check(tr, name, why, sizeof why))
			continue;
		size_t q = 0;
		while (q < s->npoints && strcmp(model_name(&s->opts[q]), name))
			q++;
		for (size_t i = 0; q < s->npoints && i < n; i++)
			if (points[i] == q) {
				ana_warn("%s: %s", path, why);
				break;
			}
	}
}

/* A period multiplier that cannot stand for a longer period on this trace
 * (kfilter_trace_check): one warning, for the largest of the run's points. */
static void warn_period_multiplier(const struct sweep *s, const struct ct_trace *tr,
                                   const char *path, const size_t *points, size_t n)
{
	unsigned k = 1;
	for (size_t i = 0; i < n; i++) {
		const struct model_opts *o = &s->opts[points[i]];
		if (o->period_multiplier > k &&
		    !estimator_ignores(estimator_resolve(o->estimator, model_name(o), tr),
		                       "period-multiplier"))
			k = o->period_multiplier;
	}
	char why[320];
	if (!kfilter_trace_check(tr, k, why, sizeof why))
		ana_warn("%s: %s", path, why);
}

int sweep_run_trace(struct sweep *s, size_t t, const size_t *points, size_t n)
{
	struct sweep_trace *ti = &s->traces[t];
	struct analysis a;
	memset(&a, 0, sizeof a);
	int status = analysis_open(&a, ti->path);
	size_t *all = NULL;
	if (!status && !points) {
		n = s->npoints;
		all = malloc((n ? n : 1) * sizeof *all);
		for (size_t i = 0; all && i < n; i++)
			all[i] = i;
		points = all;
	}
	struct analysis_point *pts = status ? NULL : calloc(n ? n : 1, sizeof *pts);
	if (!status && (!pts || !points || fill_info(ti, a.trace, &a.topo))) {
		ana_err("out of memory");
		status = EXIT_BADTRACE;
	}
	if (!status) {
		warn_full_trace_models(s, a.trace, ti->path, points, n);
		warn_period_multiplier(s, a.trace, ti->path, points, n);
		for (size_t i = 0; i < n; i++)
			pts[i].opts = &s->opts[points[i]];
		double t0 = now_s();
		status = analysis_replay(&a, pts, n, s->jobs, false, s->progress);
		s->seconds += now_s() - t0;
		ti->records = a.records;
		ti->damaged = a.damaged;
		if (a.damaged)
			snprintf(ti->damage, sizeof ti->damage, "%s", a.err.msg);
	}
	for (size_t i = 0; !status && i < n; i++)
		sweep_mats_take(sweep_res(s, t, points[i]), &pts[i].mx, pts[i].line_size);
	analysis_points_free(pts, n);
	free(pts);
	free(all);
	analysis_free(&a);
	return status;
}

int sweep_run_reference(struct sweep *s)
{
	if (s->ref_kind != SWEEP_REF_TRACE)
		return 0;
	struct analysis an;
	int rc = analysis_run(&an, s->ref_trace, &s->ref_opts, s->progress);
	if (rc) {
		analysis_free(&an);
		return rc;
	}
	if (an.warning[0])
		ana_warn("reference %s: %s", s->ref_trace, an.warning);
	s->ref_info.path = s->ref_trace;
	s->ref_info.owner_monitor = owner_monitor_trace(an.trace);
	if (fill_info(&s->ref_info, an.trace, &an.topo)) {
		analysis_free(&an);
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	sweep_mats_take(&s->ref_mats, &an.mx, an.line_size);
	if (an.damaged) {
		s->ref_info.damaged = true;
		snprintf(s->ref_info.damage, sizeof s->ref_info.damage, "%s", an.err.msg);
	}
	analysis_free(&an);
	return 0;
}

/* ---- comparing ----------------------------------------------------------------- */

int sweep_compare(const struct matrix *m, const struct matrix *ref, unsigned k,
                  struct sweep_metrics *out)
{
	struct matrix_cmp_opts o = { .topk = k ? k : SWEEP_TOPK, .symmetric = true };
	struct matrix_cmp c;
	int rc = matrix_compare_opts(m, ref, &o, &c);
	if (matrix_sum(m, &out->volume))
		rc = -1;
	out->l1 = c.l1;
	out->l1_shape = c.l1_shape;
	out->pearson = c.pearson;
	out->excess = c.excess;
	out->missing = c.missing;
	out->ratio = c.ratio;
	out->topk = c.topk_recall;
	out->k = (unsigned)c.k;
	if (rc) {
		out->l1 = out->l1_shape = out->pearson = out->excess = NAN;
		out->missing = out->ratio = out->topk = NAN;
	}
	return rc;
}

int sweep_compute_metrics(struct sweep *s)
{
	for (size_t t = 0; t < s->ntraces; t++) {
		const struct sweep_mats *ref;
		if (s->ref_kind == SWEEP_REF_TRACE)
			ref = &s->ref_mats;
		else
			ref = sweep_res(s, t, s->ref_point);
		for (size_t p = 0; p < s->ngrid; p++) {
			const struct sweep_mats *m = sweep_res(s, t, p);
			struct sweep_metrics *out = &s->metrics[t * s->ngrid + p];
			if (!m->done || !ref->done) {
				out->volume = out->true_frac = out->false_frac = NAN;
				out->l1 = out->l1_shape = out->pearson = out->excess = NAN;
				out->missing = out->ratio = out->topk = NAN;
				continue;
			}
			if (sweep_compare(matrices_get(m->mx, MX_THREAD, MX_ALL),
			                  matrices_get(ref->mx, MX_THREAD, MX_ALL), SWEEP_TOPK, out))
				return -1;
			double tv, fv;
			if (matrix_sum(matrices_get(m->mx, MX_THREAD, MX_TRUE), &tv) ||
			    matrix_sum(matrices_get(m->mx, MX_THREAD, MX_FALSE), &fv))
				return -1;
			out->true_frac = out->volume > 0 ? tv / out->volume : NAN;
			out->false_frac = out->volume > 0 ? fv / out->volume : NAN;
		}
	}
	return 0;
}

/* ---- table and CSV --------------------------------------------------------------- */

static uint64_t events_of(const struct mx_totals *t)
{
	uint64_t e = 0;
	for (int v = 0; v < 3; v++)
		e += t->events[v][0] + t->events[v][1];
	return e;
}

static const char *fnum(double v, const char *fmt, char *buf, size_t cap)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, fmt, v);
	return buf;
}

void sweep_print_table(const struct sweep *s, FILE *f)
{
	char txt[400];
	fprintf(f, "sweep: %zu point%s", s->ngrid, s->ngrid == 1 ? "" : "s");
	if (s->nparams) {
		fprintf(f, " (");
		for (size_t k = 0; k < s->nparams; k++)
			fprintf(f, "%s%s: %zu", k ? " x " : "", s->params[k].name, s->params[k].nvalues);
		fprintf(f, ")");
	}
	char models[200];
	fprintf(f, ", model %s", sweep_models(s, models, sizeof models));
	if (s->ntraces == 1)
		fprintf(f, ", trace %s", s->traces[0].path);
	else
		fprintf(f, ", %zu traces", s->ntraces);
	fprintf(f, "\nreference: %s\n", s->ref_desc);
	uint64_t rec = 0;
	for (size_t t = 0; t < s->ntraces; t++)
		rec += s->traces[t].records;
	if (s->seconds > 0 && rec)
		fprintf(f, "replay: %s records x %zu points in %.2f s (%s record-points/s, %u worker%s)\n",
		        fmt_count((double)rec, txt, sizeof txt), s->npoints, s->seconds,
		        fmt_count((double)rec * (double)s->npoints / s->seconds, txt + 100, 100),
		        s->jobs, s->jobs == 1 ? "" : "s");
	fprintf(f, "distances to the reference: thread matrices (all, M + M^T, thread pairs):\n"
	           "  L1 = sum|p-r|/R, shape = sum|p/P-r/R| (0..2), pearson of pairs, excess = share of\n"
	           "  the point's weight the reference lacks, top-k = reference's top-%d pairs recovered\n\n",
	        SWEEP_TOPK);
	/* column widths */
	int w[SWEEP_MAX_PARAMS];
	for (size_t k = 0; k < s->nparams; k++) {
		w[k] = (int)strlen(s->params[k].name);
		for (size_t v = 0; v < s->params[k].nvalues; v++)
			if ((int)strlen(s->params[k].values[v]) > w[k])
				w[k] = (int)strlen(s->params[k].values[v]);
	}
	if (s->ntraces > 1)
		fprintf(f, "%-5s ", "trace");
	fprintf(f, "%5s ", "point");
	for (size_t k = 0; k < s->nparams; k++)
		fprintf(f, " %*s", w[k], s->params[k].name);
	fprintf(f, "  %9s %6s %6s %9s %7s %7s %7s %7s %6s\n", "volume", "true%", "false%", "events",
	        "L1", "shape", "pearson", "excess", "top-k");
	for (size_t t = 0; t < s->ntraces; t++)
		for (size_t p = 0; p < s->ngrid; p++) {
			const struct sweep_metrics *m = sweep_metric(s, t, p);
			const struct sweep_mats *r = sweep_res(s, t, p);
			char a[32], b[32], c[32], d[32], e[32], g[32], h[32], k[32], sh[32];
			if (s->ntraces > 1)
				fprintf(f, "%-5zu ", t);
			bool isref = s->ref_kind == SWEEP_REF_POINT && p == s->ref_point;
			fprintf(f, "%4zu%c ", p, isref ? '*' : ' ');
			for (size_t q = 0; q < s->nparams; q++)
				fprintf(f, " %*s", w[q], sweep_value(s, p, q));
			if (!isnan(m->topk) && m->k)
				snprintf(k, sizeof k, "%.0f/%u", m->topk * m->k, m->k);
			else
				snprintf(k, sizeof k, "-");
			fprintf(f, "  %9s %6s %6s %9s %7s %7s %7s %7s %6s\n",
			        isnan(m->volume) ? "-" : fmt_count(m->volume, a, sizeof a),
			        fnum(m->true_frac * 100, "%.1f", b, sizeof b),
			        fnum(m->false_frac * 100, "%.1f", c, sizeof c),
			        fmt_count((double)events_of(&r->tot), d, sizeof d),
			        fnum(m->l1, "%.4f", e, sizeof e), fnum(m->l1_shape, "%.4f", sh, sizeof sh),
			        fnum(m->pearson, "%.4f", g, sizeof g),
			        fnum(m->excess, "%.4f", h, sizeof h), k);
		}
	if (s->ref_kind == SWEEP_REF_POINT && s->ref_point < s->ngrid)
		fprintf(f, "(* the reference point)\n");
	if (s->ref_kind == SWEEP_REF_POINT && s->ref_point >= s->ngrid)
		fprintf(f, "(the reference is off the grid: %s)\n", s->ref_desc);
}

static void csv_num(FILE *f, double v)
{
	if (isnan(v))
		fputs(",nan", f);
	else
		fprintf(f, ",%.17g", v);
}

int sweep_write_csv(const struct sweep *s, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f)
		return -1;
	fputs("trace,point", f);
	for (size_t k = 0; k < s->nparams; k++) {
		fputc(',', f);
		out_csv_field(f, s->params[k].name);
	}
	fputs(",volume,true_fraction,false_fraction,events,sample_events,watchpoint_events,"
	      "l1,l1_shape,pearson,excess,missing,ratio,topk_recovered,topk,reference\n", f);
	for (size_t t = 0; t < s->ntraces; t++)
		for (size_t p = 0; p < s->ngrid; p++) {
			const struct sweep_metrics *m = sweep_metric(s, t, p);
			const struct mx_totals *tot = &sweep_res(s, t, p)->tot;
			out_csv_field(f, s->traces[t].path);
			fprintf(f, ",%zu", p);
			for (size_t k = 0; k < s->nparams; k++) {
				fputc(',', f);
				out_csv_field(f, sweep_value(s, p, k));
			}
			csv_num(f, m->volume);
			csv_num(f, m->true_frac);
			csv_num(f, m->false_frac);
			fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, events_of(tot),
			        tot->events[COMM_VIA_SAMPLE][0] + tot->events[COMM_VIA_SAMPLE][1],
			        tot->events[COMM_VIA_WATCHPOINT][0] + tot->events[COMM_VIA_WATCHPOINT][1]);
			csv_num(f, m->l1);
			csv_num(f, m->l1_shape);
			csv_num(f, m->pearson);
			csv_num(f, m->excess);
			csv_num(f, m->missing);
			csv_num(f, m->ratio);
			csv_num(f, m->topk);
			fprintf(f, ",%u,%d\n", m->k, s->ref_kind == SWEEP_REF_POINT && p == s->ref_point);
		}
	int bad = ferror(f);
	if (f != stdout ? fclose(f) : fflush(f))
		bad = 1;
	return bad ? -1 : 0;
}

/* ---- command line ------------------------------------------------------------------ */

void sweep_usage(FILE *f, bool full)
{
	fprintf(f,
"usage: commanalyze sweep TRACE --param NAME=V1,V2,... [--param ...] [-j N]\n"
"                   [-o FILE.h5] [--csv FILE] [--plot FILE.svg] [--directed]\n"
"                   [--reference finest|first|NAME=V,...|TRACE] [--reference-model M]\n"
"                   [--traces T1,T2,...] [--quiet] [--no-progress] [fixed model options]\n");
	if (!full)
		return;
	fprintf(f,
"\n"
"The trace under every point of a grid of model options, from one decode pass;\n"
"each point is compared with a reference (thread matrices, M + M^T).\n"
"  -p, --param NAME=V,...  a model option and its values:");
	model_opt_list(f, 26, 58);
	fprintf(f,
"                          ranges A..B, A..B:STEP, A..B:xFACTOR (samples:1..8);\n"
"                          the grid is the product of the lists\n"
"  -j, --jobs N            worker threads (default: every online cpu)\n"
"  -o FILE.h5              HDF5: grid, summary metrics, every point's matrices\n"
"  --csv FILE              one row per point: parameters, volume, distances\n"
"  --plot FILE.svg         the metrics against the first swept parameter\n"
"  --directed              write directed matrices (default M + M^T)\n"
"  --reference R           finest (default: largest board-size, most watchpoints,\n"
"                          smallest period-multiplier), first, NAME=V,... (the\n"
"                          finest with those values; off the grid if need be),\n"
"                          or another TRACE\n"
"  --reference-model M     the reference's model: for a TRACE, how it is analyzed\n"
"                          (default exact if it is a full trace); otherwise the\n"
"                          same trace analyzed with M (e.g. exact on a full trace)\n"
"  --traces T1,T2,...      several traces, same grid\n"
"  -q, --quiet             errors only: no table on standard output, no warnings\n"
"  --no-progress           no progress line on standard error\n"
"Other model options (--expiry ns:5000 ...) are fixed for every point.  A\n"
"parameter the owner estimator ignores at every point (board-size on a trace\n"
"with line monitor records, where auto picks owner) is refused: add\n"
"--estimator comdetective.  Each warning is printed once.  TRACE\n"
"defaults to trace.zst; options as for every command (see commanalyze --help).\n"
"\n"
"Exit status: 0 success, 1 usage error, 2 unreadable or damaged trace, or an\n"
"output that could not be written.  See commanalyze(1), SWEEP.\n");
}

static int add_traces(struct sweep *s, char *list)
{
	char *save = NULL;
	for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save))
		if (*p && sweep_add_trace(s, p))
			return -1;
	return 0;
}

enum { O_PARAM = 1, O_JOBS, O_OUTPUT, O_CSV, O_PLOT, O_REFERENCE_MODEL, O_REFERENCE,
       O_TRACES, O_DIRECTED, O_NO_PROGRESS };
static const struct cli_opt sweep_opts[] = {
	{ "param", 'p', true, O_PARAM }, { "jobs", 'j', true, O_JOBS },
	{ "output", 'o', true, O_OUTPUT }, { "csv", 0, true, O_CSV }, { "plot", 0, true, O_PLOT },
	{ "reference-model", 0, true, O_REFERENCE_MODEL }, { "reference", 0, true, O_REFERENCE },
	{ "traces", 0, true, O_TRACES }, { "directed", 0, false, O_DIRECTED },
	{ "no-progress", 0, false, O_NO_PROGRESS },
};

/* One option of the sweep (--param values are kept in params[] until the
 * fixed options are all known): 0, or EXIT_USAGE (message printed). */
static int sweep_option(struct sweep *s, struct sweep_cli *cli, int id, const char *v,
                        const char **params, size_t *nparams)
{
	uint64_t j;
	switch (id) {
	case O_PARAM:
		params[(*nparams)++] = v;
		return 0;
	case O_JOBS:
		if (!parse_u64(v, &j) || j < 1 || j > 4096) {
			ana_err("sweep: -j: '%s' is not a number from 1 to 4096", v);
			return EXIT_USAGE;
		}
		s->jobs = (unsigned)j;
		cli->jobs_set = true;
		return 0;
	case O_OUTPUT:
		cli->h5 = v;
		return 0;
	case O_CSV:
		cli->csv = v;
		return 0;
	case O_PLOT:
		cli->plot = v;
		return 0;
	case O_REFERENCE_MODEL:
		cli->reference_model = v;
		return 0;
	case O_REFERENCE:
		cli->reference = v;
		return 0;
	case O_TRACES:
		if (add_traces(s, (char *)v)) {
			ana_err("out of memory");
			return EXIT_USAGE;
		}
		return 0;
	case O_DIRECTED:
		s->directed = true;
		return 0;
	case O_NO_PROGRESS:
		s->progress = false;
		return 0;
	}
	return EXIT_USAGE;
}

/* Whether each trace has line monitor records (sweep_trace.owner_monitor);
 * a trace that does not open is left to the replay's message. */
static void note_owner_monitors(struct sweep *s)
{
	for (size_t t = 0; t < s->ntraces; t++) {
		struct ct_error e = {{0}};
		struct ct_trace *tr = ana_trace_open(s->traces[t].path, &e);
		s->traces[t].owner_monitor = owner_monitor_trace(tr);
		if (tr)
			ct_trace_close(tr);
	}
}

/* A parameter that the estimator of every point ignores on some trace
 * (estimator_ignores: the owner estimator, which --estimator auto picks on
 * a trace with line monitor records) would give points all alike there:
 * refused.  A fixed option it ignores is warned about (as in the other
 * commands) where every point has the fixed model and estimator.  -1
 * (message printed) or 0. */
static int check_estimator_params(struct sweep *s)
{
	note_owner_monitors(s);
	bool fixed = !sweep_swept(s, "model") && !sweep_swept(s, "estimator");
	for (size_t t = 0; t < s->ntraces; t++) {
		if (fixed)
			warn_ignored_options(&s->base, sweep_estimator(&s->traces[t], &s->base));
		for (size_t k = 0; k < s->nparams; k++) {
			const char *name = s->params[k].name;
			bool used = false;
			for (size_t p = 0; p < s->ngrid && !used; p++)
				used = !estimator_ignores(sweep_estimator(&s->traces[t], &s->opts[p]), name);
			if (used)
				continue;
			ana_err("sweep: --param %s has no effect with the owner estimator, which every "
			        "point runs with on %s%s; --estimator comdetective to sweep it", name,
			        s->traces[t].path, s->base.estimator == ESTIMATOR_AUTO
			                               ? " (--estimator auto: its line monitor records)" : "");
			return -1;
		}
	}
	return 0;
}

int sweep_parse_args(struct sweep *s, struct sweep_cli *cli, int argc, char **argv)
{
	memset(cli, 0, sizeof *cli);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	s->jobs = ncpu > 0 ? (unsigned)ncpu : 1;
	s->progress = true;
	char err[512];
	const char *v;
	const char **params = calloc((size_t)argc + 1, sizeof *params);
	size_t nparams = 0;
	if (!params) {
		ana_err("out of memory");
		return EXIT_USAGE;
	}
	struct cli p;
	cli_init(&p, "sweep", argc, argv, sweep_opts, sizeof sweep_opts / sizeof *sweep_opts,
	         &s->base);
	int id, status = 0;
	while (!status && (id = cli_next(&p, &v)) > 0)
		status = sweep_option(s, cli, id, v, params, &nparams);
	if (!status && id < 0)
		status = EXIT_USAGE;
	cli->quiet = ana_verbosity < 0;
	for (int k = 0; k < p.noperands && !status; k++)
		if (sweep_add_trace(s, p.argv[k])) {
			ana_err("out of memory");
			status = EXIT_USAGE;
		}
	if (!status && !s->ntraces && sweep_add_trace(s, CLI_DEFAULT_TRACE)) {
		ana_err("out of memory");
		status = EXIT_USAGE;
	}
	for (size_t k = 0; k < nparams && !status; k++)
		if (sweep_add_param(s, params[k], err, sizeof err)) {
			ana_err("sweep: %s", err);
			status = EXIT_USAGE;
		}
	free(params);
	if (status)
		return status;
	if (!s->nparams)
		ana_warn("sweep: no --param: one point (the fixed options)");
	if (sweep_build_grid(s, err, sizeof err) ||
	    sweep_set_reference(s, cli->reference, cli->reference_model, err, sizeof err)) {
		ana_err("sweep: %s", err);
		return EXIT_USAGE;
	}
	/* a parameter no point's model uses changes nothing: say so */
	char models[200];
	for (size_t k = 0; k < s->nparams; k++) {
		bool used = !strcmp(s->params[k].name, "model");
		for (size_t p = 0; p < s->ngrid && !used; p++)
			used = model_opt_relevant(s->opts[p].model, s->params[k].name);
		if (!used)
			ana_warn("sweep: --param %s: not used by the %s model (its points are all alike)",
			         s->params[k].name, sweep_models(s, models, sizeof models));
	}
	if (check_estimator_params(s))
		return EXIT_USAGE;
	if (sweep_alloc_results(s)) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	return 0;
}

int sweep_finish_outputs(struct sweep *s, const struct sweep_cli *cli)
{
	int status = 0;
	sweep_compute_metrics(s);
	if (!cli->quiet) {
		sweep_print_table(s, stdout);
		fflush(stdout);
	}
	if (cli->csv && sweep_write_csv(s, cli->csv)) {
		ana_err("cannot write %s: %s", cli->csv, strerror(errno));
		status = EXIT_BADTRACE;
	}
	if (cli->h5) {
		struct ct_error err = {{0}};
		if (sweep_write_h5(s, cli->h5, &err)) {
			ana_err("%s", err.msg);
			status = EXIT_BADTRACE;
		}
	}
	if (cli->plot && sweep_write_plot(s, cli->plot)) {
		ana_err("cannot write %s: %s", cli->plot, strerror(errno));
		status = EXIT_BADTRACE;
	}
	for (size_t t = 0; t < s->ntraces; t++)
		if (s->traces[t].damaged) {
			fprintf(stderr, "commanalyze: %s\n", s->traces[t].damage);
			status = EXIT_BADTRACE;
		}
	if (s->ref_info.damaged) {
		fprintf(stderr, "commanalyze: reference: %s\n", s->ref_info.damage);
		status = EXIT_BADTRACE;
	}
	return status;
}

int cmd_sweep(int argc, char **argv)
{
	struct sweep s;
	struct sweep_cli cli;
	sweep_init(&s);
	ana_warn_once(true);    /* each warning once, not once per point */
	int rc = sweep_parse_args(&s, &cli, argc, argv);
	for (size_t t = 0; !rc && t < s.ntraces; t++)
		rc = sweep_run_trace(&s, t, NULL, 0);
	if (!rc)
		rc = sweep_run_reference(&s);
	if (!rc)
		rc = sweep_finish_outputs(&s, &cli);
	sweep_free(&s);
	ana_warn_once(false);
	return rc;
}
