/* The replay pipeline: open a trace, create models with their matrices
 * (one for report, matrix, objects, lines; one per point for sweep),
 * replay the trace once into all of them (engine.c), note the damage. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ana.h"

int analysis_hooks_add(struct analysis_hooks *h, const struct record_consumer *rc,
                       const struct event_consumer *ec)
{
	if ((rc && h->npre >= ANALYSIS_HOOKS_MAX) || (ec && h->nevents >= ANALYSIS_HOOKS_MAX)) {
		ana_err("internal error: more than %d hook consumers", ANALYSIS_HOOKS_MAX);
		return EXIT_BADTRACE;
	}
	if (rc)
		h->pre[h->npre++] = *rc;
	if (ec)
		h->events[h->nevents++] = *ec;
	return 0;
}

int analysis_open(struct analysis *a, const char *path)
{
	a->path = path;
	a->trace = ana_trace_open(path, &a->err);
	if (!a->trace) {
		fprintf(stderr, "commanalyze: %s\n", a->err.msg);
		return EXIT_BADTRACE;
	}
	/* refuse absurd thread indices before sizing anything by them (a
	 * hostile trace could ask for n x n matrices of a million rows) */
	char why[320];
	if (!thread_space_sane(a->trace, why, sizeof why)) {
		fprintf(stderr, "commanalyze: %s\n", why);
		return EXIT_BADTRACE;
	}
	a->nthreads = thread_space(a->trace);
	topology_load(&a->topo, a->trace);
	return 0;
}

/* The model of point p with its event consumers (the matrices first). */
static int point_create(struct analysis *a, struct analysis_point *p)
{
	const struct model_opts *o = p->opts;
	p->model = model_find(o->model ? o->model : "comdetective");
	if (!p->model) {
		ana_err("unknown model '%s'", o->model);
		return EXIT_USAGE;
	}
	char why[256];
	if (!model_opts_usable(o, p->model->name, a->trace, why, sizeof why)) {
		ana_err("%s", why);
		return EXIT_USAGE;
	}
	p->line_size = resolve_line_size(o, a->trace, &p->line_size_source);
	if (!filtered_trace_fits(a->trace, p->model->name, p->line_size, why, sizeof why)) {
		ana_err("%s: %s", a->path, why);
		return EXIT_USAGE;
	}
	p->mx = matrices_create(a->nthreads, &a->topo);
	const struct analysis_hooks *h = p->hooks;
	size_t nec = 0;
	if (p->mx)
		p->ec[nec++] = matrices_consumer(p->mx);
	for (size_t i = 0; h && i < h->nevents; i++)
		p->ec[nec++] = h->events[i];
	struct model_setup setup = {
		.opts = o, .trace = a->trace, .nthreads = a->nthreads,
		.line_size = p->line_size, .out = p->ec, .nout = nec,
	};
	p->m = p->mx ? p->model->create(&setup) : NULL;
	if (!p->m) {
		ana_err("%s: cannot create the %s model (out of memory)", a->path, p->model->name);
		return EXIT_BADTRACE;
	}
	return 0;
}

/* Point p's consumers of one replay set: its hooks' record consumers, then
 * the model. */
static struct replay_set point_set(struct analysis_point *p)
{
	const struct analysis_hooks *h = p->hooks;
	size_t n = 0;
	for (size_t i = 0; h && i < h->npre; i++)
		p->rc[n++] = h->pre[i];
	p->rc[n++] = (struct record_consumer){ .self = p->m, .record = p->model->record,
	                                       .finish = p->model->finish };
	return (struct replay_set){ .c = p->rc, .n = n,
	                            .records = n == 1 ? p->model->records : NULL };
}

int analysis_replay(struct analysis *a, struct analysis_point *p, size_t n, unsigned jobs,
                    bool with_stats, bool progress)
{
	struct replay_set *sets = calloc(n + 1, sizeof *sets);
	struct record_consumer stats = trace_stats_consumer(&a->stats);
	int status = sets ? 0 : EXIT_BADTRACE;
	if (!sets)
		ana_err("out of memory");
	for (size_t i = 0; !status && i < n; i++)
		if (!(status = point_create(a, &p[i])))
			sets[i] = point_set(&p[i]);
	if (!status) {
		size_t nsets = n;
		if (with_stats)
			sets[nsets++] = (struct replay_set){ .c = &stats, .n = 1,
			                                     .records = trace_stats_records };
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (replay_sets(a->trace, sets, nsets, jobs, progress, &a->records, &a->err)) {
			a->damaged = true;
		} else if (ct_trace_damage(a->trace)) {
			a->damaged = true;
			snprintf(a->err.msg, sizeof a->err.msg, "%s", ct_trace_damage(a->trace));
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (ana_verbosity > 0)
			fprintf(stderr, "commanalyze: %s: %" PRIu64 " records replayed into %zu "
			        "point%s (model %s) with %u worker%s in %.3f s\n", a->path, a->records, n,
			        n == 1 ? "" : "s", n ? p[0].model->name : "-", jobs, jobs == 1 ? "" : "s",
			        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	for (size_t i = 0; i < n; i++)
		if (p[i].m) {
			p[i].model->destroy(p[i].m);
			p[i].m = NULL;
		}
	free(sets);
	return status;
}

void analysis_points_free(struct analysis_point *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		matrices_free(p[i].mx);
		p[i].mx = NULL;
	}
}

int analysis_run(struct analysis *a, const char *path, const struct model_opts *o,
                 bool progress)
{
	return analysis_run_hooks(a, path, o, progress, NULL);
}

int analysis_run_hooks(struct analysis *a, const char *path, const struct model_opts *o,
                       bool progress, struct analysis_hooks *h)
{
	memset(a, 0, sizeof *a);
	a->path = path;
	a->opts = *o;
	a->model = model_find(o->model ? o->model : "comdetective");
	if (!a->model) {
		ana_err("unknown model '%s'", o->model);
		return EXIT_USAGE;
	}
	int st = analysis_open(a, path);
	if (st)
		return st;
	enum estimator_kind est = analysis_estimator(a);
	warn_ignored_options(o, est);
	if (full_trace_check(a->trace, a->model->name, a->warning, sizeof a->warning) &&
	    !estimator_ignores(est, "period-multiplier"))
		kfilter_trace_check(a->trace, o->period_multiplier, a->warning, sizeof a->warning);
	a->line_size = resolve_line_size(o, a->trace, &a->line_size_source);
	if (trace_stats_init(&a->stats, a->nthreads)) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	if (h && h->setup && (st = h->setup(h->arg, a)))
		return st;
	struct analysis_point p = { .opts = &a->opts, .hooks = h };
	st = analysis_replay(a, &p, 1, 1, !(h && h->no_stats), progress);
	a->mx = p.mx;
	return st;
}

void analysis_free(struct analysis *a)
{
	matrices_free(a->mx);
	trace_stats_free(&a->stats);
	topology_free(&a->topo);
	if (a->trace)
		ct_trace_close(a->trace);
	memset(a, 0, sizeof *a);
}

void attr_add(struct attr_set *s, const char *key, const char *fmt, ...)
{
	if (s->n >= sizeof s->a / sizeof *s->a || s->used >= sizeof s->buf)
		return;
	char *p = s->buf + s->used;
	va_list ap;
	va_start(ap, fmt);
	int l = vsnprintf(p, sizeof s->buf - s->used, fmt, ap);
	va_end(ap);
	if (l < 0 || (size_t)l >= sizeof s->buf - s->used)
		return;
	s->used += (size_t)l + 1;
	s->a[s->n].key = key;
	s->a[s->n].value = p;
	s->n++;
}

enum estimator_kind analysis_estimator(const struct analysis *a)
{
	return estimator_resolve(a->opts.estimator, a->model->name, a->trace);
}

void analysis_attrs(const struct analysis *a, struct attr_set *s)
{
	memset(s, 0, sizeof *s);
	char v[64];
	enum estimator_kind est = analysis_estimator(a);
	for (size_t i = 0; model_opt_names[i]; i++) {
		const char *name = model_opt_names[i];
		if (estimator_ignores(est, name))
			continue;
		if (!strcmp(name, "line-size"))
			attr_add(s, name, "%u", a->line_size);
		else if (!strcmp(name, "estimator"))
			attr_add(s, name, "%s", estimator_names[est]);
		else
			attr_add(s, name, "%s", model_opts_format(&a->opts, name, v, sizeof v));
	}
	attr_add(s, "line-size-source", "%s", a->line_size_source);
	attr_add(s, "trace", "%s", a->path);
	char cmd[1024];
	if (trace_command(a->trace, cmd, sizeof cmd)[0])
		attr_add(s, "command", "%s", cmd);
	attr_add(s, "tool", "commanalyze %s", CT_VERSION);
	attr_add(s, "units", "estimated line transfers");
	attr_add(s, "topology", "%s", a->topo.identity ? "identity (no cpu map in the trace)"
	                                                : "machine section");
	if (a->damaged)
		attr_add(s, "damaged", "%s", a->err.msg);
	if (a->warning[0])
		attr_add(s, "warning", "%s", a->warning);
}

const char *trace_command(struct ct_trace *t, char *out, size_t cap)
{
	size_t len = 0, o = 0;
	const char *p = ct_trace_section(t, CT_SEC_CMDLINE, &len);
	const char *end = p ? p + len : NULL;
	out[0] = 0;
	/* arguments separated by blanks, quoted when they hold blanks or quotes,
	 * control characters shown as '?' */
	while (p && p < end && o + 4 < cap) {
		const char *z = memchr(p, 0, (size_t)(end - p));
		size_t l = z ? (size_t)(z - p) : (size_t)(end - p);
		bool quote = !l || memchr(p, ' ', l) || memchr(p, '\t', l) || memchr(p, '\'', l) ||
		             memchr(p, '"', l);
		if (o)
			out[o++] = ' ';
		if (quote)
			out[o++] = '\'';
		for (size_t i = 0; i < l && o + 2 < cap; i++)
			out[o++] = (unsigned char)p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\'' ? p[i] : '?';
		if (quote && o + 1 < cap)
			out[o++] = '\'';
		p += l + 1;
	}
	out[o] = 0;
	return out;
}

size_t thread_space(const struct ct_trace *t)
{
	size_t n = ct_trace_nthreads(t), max = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ct_thread_info *ti = ct_trace_thread(t, i);
		if (ti && ti->index < THREAD_INDEX_MAX && (size_t)ti->index + 1 > max)
			max = (size_t)ti->index + 1;
	}
	return max;
}

bool thread_space_sane(const struct ct_trace *t, char *why, size_t cap)
{
	size_t n = ct_trace_nthreads(t), space = thread_space(t), max = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ct_thread_info *ti = ct_trace_thread(t, i);
		if (ti && ti->index > max)
			max = ti->index;
	}
	if (max >= THREAD_INDEX_MAX || space > 16 * n + 1024) {
		snprintf(why, cap, "%s: thread index %zu with only %zu threads: damaged thread "
		         "sections (matrices would need %zu rows)", ct_trace_path(t), max, n, max + 1);
		return false;
	}
	return true;
}

const struct ct_thread_info *thread_by_index(const struct ct_trace *t, size_t index)
{
	size_t n = ct_trace_nthreads(t);
	const struct ct_thread_info *ti = index < n ? ct_trace_thread(t, index) : NULL;
	if (ti && ti->index == index)
		return ti;
	size_t lo = 0, hi = n;   /* slots are in index order */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		ti = ct_trace_thread(t, mid);
		if (!ti)
			return NULL;
		if (ti->index == index)
			return ti;
		if (ti->index < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *thread_label(const struct ct_trace *t, size_t i, char *buf, size_t cap)
{
	const struct ct_thread_info *ti = thread_by_index(t, i);
	if (ti)
		snprintf(buf, cap, "T%zu(%d)", i, (int)ti->tid);
	else
		snprintf(buf, cap, "T%zu", i);
	return buf;
}
