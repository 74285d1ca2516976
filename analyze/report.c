/* commanalyze [report] TRACE: the readable report, in sections (trace,
 * model, totals, top thread pairs, cores and sockets, lost and skipped,
 * warnings, where to look next).  Each section is one function taking the
 * report; warnings found anywhere are collected and printed together. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib.h"
#include "out_util.h"
#include "regions.h"

#define TOP_PAIRS 10
#define TOP_CORE_PAIRS 5
#define REPORT_TOP_ATTRIB 10  /* objects and lines in the report */
#define FEW_SAMPLES 100       /* per thread */
#define FEW_EVENTS 100        /* effective events (interval.c) */
#define TOO_FEW_EVENTS 10
#define Z_LAG 3.09            /* the lag test's one-sided 0.001 (owner_lag_test) */
#define Z90_SHARE 1.645       /* a share's 90% half width: z sqrt(p(1-p)/n), at most z/sqrt(4n) */
#define HIGH_LOSS 0.05
#define HIGH_SKIP 0.20
#define HIGH_RUNTIME 0.05     /* samples in the recorder's runtime */
#define MANY_ARMS 100         /* watchpoint arms without any hit: suspicious */

/* Sampling periods the runtime lengthened (MARKER records of kind
 * throttle), per thread: collected while the model runs. */
struct throttled {
	size_t nthreads;
	uint64_t *period;         /* per thread: the longest, 0 if never throttled */
};

struct report {
	struct analysis *a;
	double total, tr, fa;     /* weights */
	double var;               /* their estimated variance (0: nothing estimated) */
	double unit_max;          /* the largest weight one sampled unit can carry */
	uint64_t events;
	uint64_t duration;        /* ns, 0 if unknown */
	bool cpu_time;            /* sample periods are CPU time (soft), not counts */
	char sampler[64];
	char warn[16][640];
	FILE *f;                  /* where the sections write their text */
	struct regions *regions;  /* marked and OpenMP regions, NULL: none */
	/* figures the sections find, for --format json */
	uint64_t via[3];          /* events by source (enum comm_via) */
	uint64_t arms, hits;
	bool complete;
	char incomplete_why[512];
	double same_core, same_socket, core_all;
	size_t nwarn;
	struct throttled thr;
};

static void warn(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct report *r, const char *fmt, ...)
{
	if (r->nwarn >= sizeof r->warn / sizeof *r->warn)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->warn[r->nwarn++], sizeof r->warn[0], fmt, ap);
	va_end(ap);
}

static void section(struct report *r, const char *title)
{
	fprintf(r->f, "\n== %s ==\n", title);
}

/* text on lines of at most WRAP columns, broken at spaces: first line
 * prefixed with first, the others with cont */
#define WRAP 96
static void print_wrapped(FILE *f, const char *first, const char *cont, const char *text)
{
	const char *p = text, *pre = first;
	while (*p) {
		size_t room = WRAP - strlen(pre), n = strlen(p);
		if (n > room) {
			n = room;
			while (n > 0 && p[n] != ' ')
				n--;
			if (!n)   /* one long word: break it after all */
				n = room;
		}
		fprintf(f, "%s%.*s\n", pre, (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
		pre = cont;
	}
}

static double pct(double a, double b)
{
	return b > 0 ? 100.0 * a / b : 0.0;
}

/* "soft: a sample every 1000 us of CPU time per thread; 4 watchpoints" */
static void sampler_line(struct report *r)
{
	struct ct_trace *t = r->a->trace;
	char period[32] = "?", unit[32] = "", wp[16] = "?", what[160], measured[32];
	snprintf(r->sampler, sizeof r->sampler, "?");
	ct_trace_meta(t, CT_SEC_CONFIG, "sampler", r->sampler, sizeof r->sampler);
	ct_trace_meta(t, CT_SEC_CONFIG, "period", period, sizeof period);
	ct_trace_meta(t, CT_SEC_CONFIG, "period_unit", unit, sizeof unit);
	ct_trace_meta(t, CT_SEC_CONFIG, "watchpoints", wp, sizeof wp);
	r->cpu_time = !strcmp(unit, "us-cpu");
	const struct ct_header *h = ct_trace_header(t);
	if (h && (h->features & CT_FEAT_FULL))
		snprintf(what, sizeof what, "every access (full trace)");
	else if (r->cpu_time && ct_trace_meta(t, CT_SEC_SUMMARY, "period_measured_ns", measured,
	                                      sizeof measured))
		snprintf(what, sizeof what, "a sample every %.0f us of CPU time per thread (measured: "
		         "POSIX-timer fallback; %s us asked)", strtod(measured, NULL) / 1e3, period);
	else if (r->cpu_time)
		snprintf(what, sizeof what, "a sample every %s us of CPU time per thread", period);
	else if (unit[0])
		snprintf(what, sizeof what, "a sample every %s %s", period, unit);
	else
		snprintf(what, sizeof what, "period %s", period);
	fprintf(r->f, "  %-13s %s: %s; %s watchpoint registers\n", "sampler", r->sampler, what, wp);
}

/* Do the recorded watchpoints matter to this analysis?  Only to the model
 * that replays them (comdetective) on a sampled trace: exact and emulate on
 * a full trace need none, window and signature use none. */
static bool recorded_watchpoints_matter(const struct analysis *a)
{
	const struct ct_header *h = ct_trace_header(a->trace);
	return !strcmp(a->model->name, "comdetective") && !(h && (h->features & CT_FEAT_FULL));
}

/* Were the trace's watchpoints software ones (inst: the instrumented
 * accesses check the watched lines; no debug register involved)? */
static bool software_watchpoints(struct ct_trace *t)
{
	char kind[16] = "";
	ct_trace_meta(t, CT_SEC_CONFIG, "watchpoint_kind", kind, sizeof kind);
	return !strcmp(kind, "software");
}

/* The debug-register probe's verdict ("" when the trace's watchpoints were
 * software ones: the probe does not concern them). */
static void debug_register_probe(struct ct_trace *t, char *probe, size_t cap)
{
	probe[0] = '\0';
	if (!software_watchpoints(t))
		ct_trace_meta(t, CT_SEC_CONFIG, "watchpoint_probe", probe, cap);
}

/* What the trace says about watchpoints, where it matters. */
static void watchpoint_warnings(struct report *r, uint64_t arms, uint64_t hits)
{
	struct analysis *a = r->a;
	struct ct_trace *t = a->trace;
	char v[64], probe[32] = "", detail[256] = "", forced[8] = "0";
	uint64_t w;
	if (!recorded_watchpoints_matter(a) ||
	    !ct_trace_meta(t, CT_SEC_CONFIG, "watchpoints", v, sizeof v) || !parse_u64(v, &w))
		return;
	debug_register_probe(t, probe, sizeof probe);
	ct_trace_meta(t, CT_SEC_CONFIG, "watchpoint_probe_detail", detail, sizeof detail);
	ct_trace_meta(t, CT_SEC_CONFIG, "watchpoints_forced", forced, sizeof forced);
	if (!strcmp(probe, "no-fire")) {
		if (w == 0)
			warn(r, "watchpoints do not fire on the machine this trace was recorded on "
			        "(commrec's probe: %s), so commrec armed none: communication that only one "
			        "thread's samples see is missed, the figures come from samples alone. For "
			        "watchpoints record on bare metal or on a machine with a PMU; or record every "
			        "access (commrec --sampler inst --full, commrec-cc(1)) and use --model exact "
			        "or emulate", detail);
		else
			warn(r, "watchpoints were armed although commrec's probe found they do not fire "
			        "on the recording machine (%s; commrec --force-watchpoints): %" PRIu64
			        " arms, %" PRIu64 " hits", detail, arms, hits);
		return;
	}
	if (w == 0)
		warn(r, "watchpoints were off when recording: communication seen by only one "
		        "sample side is missed (commrec -w 4)");
	else if (a->opts.watchpoints > w && a->opts.watchpoints != MODEL_WP_NONE)
		warn(r, "--watchpoints %u is more than the %" PRIu64 " registers recorded: hits "
		        "are scaled as the registers actually armed", a->opts.watchpoints, w);
	else if (!arms && a->stats.samples)
		warn(r, "no watchpoint was armed although %" PRIu64 " registers were configured", w);
	else if (arms >= MANY_ARMS && !hits && software_watchpoints(t))
		warn(r, "%" PRIu64 " software watchpoint arms and not one hit: software watchpoints "
		        "are checked by the instrumented accesses themselves, so this simply means that "
		        "no other thread touched the watched lines before they expired", arms);
	else if (arms >= MANY_ARMS && !hits)
		warn(r, "%" PRIu64 " watchpoint arms and not one hit: the debug registers may not "
		        "fire on the recording machine%s ('commrec --list-samplers' probes them), or "
		        "no other thread touched the watched lines before they expired", arms,
		        forced[0] == '1' ? " (armed with --force-watchpoints)" : "");
}

/* ---- throttling ------------------------------------------------------------ */

static void throttled_record(void *self, const struct ct_record *rec)
{
	struct throttled *th = self;
	unsigned long long p;
	if (rec->type != CT_REC_MARKER || rec->u.marker.kind != CT_MARK_THROTTLE ||
	    rec->thread >= th->nthreads || sscanf(rec->u.marker.name, "period=%llu", &p) != 1)
		return;
	if (p > th->period[rec->thread])
		th->period[rec->thread] = p;
}

static void throttled_finish(void *self)
{
	(void)self;
}

/* The analysis' setup, then the throttle consumer beside its consumers. */
struct report_setup {
	struct analysis_hooks *h;
	int (*inner)(void *, struct analysis *);
	void *inner_arg;
	struct throttled *thr;
	struct regions_hook *rg;
};

static int report_hook_setup(void *arg, struct analysis *an)
{
	struct report_setup *rs = arg;
	int rc = rs->inner ? rs->inner(rs->inner_arg, an) : 0;
	if (rc || (rc = regions_hook_setup(rs->rg, an)))
		return rc;
	rs->thr->nthreads = thread_space(an->trace);
	rs->thr->period = calloc(rs->thr->nthreads ? rs->thr->nthreads : 1, sizeof *rs->thr->period);
	if (!rs->thr->period) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	struct record_consumer thr = { rs->thr, throttled_record, throttled_finish };
	return analysis_hooks_add(rs->h, &thr, NULL);
}

/* "throttled  2 of 5 threads, period lengthened up to 400 us ..." */
static void throttle_line(struct report *r)
{
	const struct throttled *th = &r->thr;
	size_t n = 0;
	uint64_t longest = 0;
	for (size_t i = 0; i < th->nthreads; i++) {
		n += th->period[i] > 0;
		if (th->period[i] > longest)
			longest = th->period[i];
	}
	if (!n)
		return;
	char limit[16] = "?", when[64];
	ct_trace_meta(r->a->trace, CT_SEC_CONFIG, "throttle", limit, sizeof limit);
	if (r->cpu_time)
		snprintf(when, sizeof when, "%.0f us of CPU time", (double)longest / 1e3);
	else
		snprintf(when, sizeof when, "%" PRIu64, longest);
	fprintf(r->f, "  %-13s %zu of %zu threads: period lengthened up to %s\n", "throttled", n,
	       ct_trace_nthreads(r->a->trace), when);
	warn(r, "the recorder throttled the sampling of %zu thread%s: its signal handlers took "
	        "more than %s%% of their CPU time (or the signal queue was full), so it lengthened "
	        "their period, up to %s. Their samples carry the longer period (the weights stay "
	        "right), but there are fewer of them: a longer commrec -c avoids it", n,
	     n == 1 ? "" : "s", limit, when);
}

/* Threads the trace lacks: fewer than the program started (SUMMARY
 * threads_started), or, in a trace cut off before that summary, how many
 * are there and how many were cut (no end record): threads whose records
 * all came after the cut leave no trace at all. */
static void missing_threads(struct report *r, bool complete)
{
	const struct analysis *a = r->a;
	size_t k = ct_trace_nthreads(a->trace), cut = 0;
	char v[32];
	uint64_t n;
	if (ct_trace_meta(a->trace, CT_SEC_SUMMARY, "threads_started", v, sizeof v) &&
	    parse_u64(v, &n)) {
		if (n > k)
			warn(r, "%" PRIu64 " of the %" PRIu64 " threads the program started have no records "
			        "in the trace (its summary: threads_started=%" PRIu64 "): what they "
			        "communicated is missing", n - (uint64_t)k, n, n);
		return;
	}
	if (complete)
		return;
	for (size_t i = 0; i < a->stats.nthreads; i++)
		cut += thread_by_index(a->trace, i) && !a->stats.th[i].ended;
	warn(r, "threads may be missing: the trace holds %zu thread%s (%zu without an end record: "
	        "cut off), but the summary that says how many the program started is lost with the "
	        "end of the recording; a thread whose records all came after the cut is not in the "
	        "trace at all", k, k == 1 ? "" : "s", cut);
}

static void sec_trace(struct report *r)
{
	struct analysis *a = r->a;
	struct ct_trace *t = a->trace;
	char buf[512], b2[64], v[128];
	fprintf(r->f, "commtrace report: %s\n", a->path);
	section(r, "Trace");
	trace_command(t, buf, sizeof buf);
	fprintf(r->f, "  %-13s %s\n", "program", buf[0] ? buf : "(unknown)");
	size_t with = 0;
	for (size_t i = 0; i < a->stats.nthreads; i++)
		with += a->stats.th[i].samples > 0;
	fprintf(r->f, "  %-13s %zu (%zu with samples)\n", "threads", ct_trace_nthreads(t), with);
	uint64_t dur = 0;
	if (ct_trace_meta(t, CT_SEC_SUMMARY, "duration_ns", v, sizeof v) && parse_u64(v, &dur)) {
		fprintf(r->f, "  %-13s %s\n", "duration", fmt_duration(dur, b2, sizeof b2));
	} else if (a->stats.first_time != UINT64_MAX) {
		dur = a->stats.last_time - a->stats.first_time;
		fprintf(r->f, "  %-13s %s (first to last record)\n", "duration", fmt_duration(dur, b2, sizeof b2));
	}
	r->duration = dur;
	sampler_line(r);
	fprintf(r->f, "  %-13s %u bytes (%s)\n", "line size", a->line_size, a->line_size_source);
	bool complete = trace_is_complete(t, buf, sizeof buf);
	r->complete = complete;
	snprintf(r->incomplete_why, sizeof r->incomplete_why, "%s", complete ? "" : buf);
	fprintf(r->f, "  %-13s %s%s%s\n", "complete", complete ? "yes" : "NO: ", complete ? "" : buf, "");
	if (!complete)
		warn(r, "incomplete trace: %s", buf);
	missing_threads(r, complete);
	uint64_t arms = 0, hits = 0;
	for (size_t i = 0; i < a->stats.nthreads; i++) {
		arms += a->stats.th[i].wp_arm;
		hits += a->stats.th[i].wp_hit;
	}
	fprintf(r->f, "  %-13s %" PRIu64 " (samples %" PRIu64 ", watchpoint arms %" PRIu64 ", hits %" PRIu64
	       ")\n", "records", a->stats.records, a->stats.samples, arms, hits);
	r->arms = arms;
	r->hits = hits;
	watchpoint_warnings(r, arms, hits);
	throttle_line(r);
}

/* Why that estimator: "option" (--estimator given), "monitor" (auto, on a
 * trace with line monitor records) or "default". */
static const char *estimator_source(const struct analysis *a)
{
	if (a->opts.estimator != ESTIMATOR_AUTO)
		return "option";
	return analysis_estimator(a) == ESTIMATOR_OWNER ? "monitor" : "default";
}

/* Model option i's value as the analysis used it (line size and estimator
 * resolved), or NULL when the model does not use it, or its estimator does
 * not (estimator_ignores). */
static const char *option_used(const struct analysis *a, size_t i, char *v, size_t cap)
{
	const char *n = model_opt_names[i];
	if (!model_opt_relevant(a->model->name, n) || estimator_ignores(analysis_estimator(a), n))
		return NULL;
	if (!strcmp(n, "line-size"))
		snprintf(v, cap, "%u", a->line_size);
	else if (!strcmp(n, "estimator"))
		snprintf(v, cap, "%s", estimator_names[analysis_estimator(a)]);
	else
		model_opts_format(&a->opts, n, v, cap);
	return v;
}

static void sec_model(struct report *r)
{
	struct analysis *a = r->a;
	char v[64], line[1024];
	size_t l = 0;
	section(r, "Model");
	l += (size_t)snprintf(line, sizeof line, "%s:", a->model->name);
	for (size_t i = 1; model_opt_names[i] && l < sizeof line; i++)
		if (option_used(a, i, v, sizeof v))
			l += (size_t)snprintf(line + l, sizeof line - l, " %s=%s", model_opt_names[i], v);
	print_wrapped(r->f, "  ", "    ", line);
	if (!strcmp(estimator_source(a), "monitor"))
		fprintf(r->f, "  (estimator owner: the trace has the line monitor's records, commrec\n"
		        "   --sampler inst; --estimator comdetective for ComDetective's weighting)\n");
}

/* "  (90%: 41.2-47.0%)" for the share part / total, "" when not estimated */
static const char *share_ci(const struct report *r, double part, double total, char *buf,
                            size_t cap)
{
	if (!(r->var > 0) || !(total > 0))
		return buf[0] = 0, buf;
	struct interval ci = share_interval(part, total, r->var);
	snprintf(buf, cap, "  (90%%: %.1f-%.1f%%)", 100 * ci.lo, 100 * ci.hi);
	return buf;
}

/* Does the owner estimate weigh the recorded line monitor's records (the
 * comdetective model)?  The emulate model's runs windows of its own
 * (--owner-window, --emulate-period), which the recorded monitor's counts
 * (OWNER_WIN, OWNER_XFER, SUMMARY) do not describe. */
static bool owner_from_records(const struct analysis *a)
{
	return analysis_estimator(a) == ESTIMATOR_OWNER && !strcmp(a->model->name, "comdetective");
}

/* Sampled stores whose window the line monitor could not open (the owner
 * estimator weighs the opened ones for them: model_comdetective.c). */
static uint64_t owner_windows_missed(const struct analysis *a)
{
	const uint64_t *w = a->stats.owner_windows;
	return owner_from_records(a) ? w[CT_OWNER_DROP_TABLE] + w[CT_OWNER_DROP_LINE] : 0;
}

/* The monitor's inclusion rate over the run: opened / sampled stores. */
static double owner_inclusion(const struct analysis *a)
{
	const uint64_t *w = a->stats.owner_windows;
	uint64_t all = w[CT_OWNER_OPENED] + w[CT_OWNER_DROP_TABLE] + w[CT_OWNER_DROP_LINE];
	return all ? (double)w[CT_OWNER_OPENED] / (double)all : 1;
}

/* The owner estimate with missed windows: how it was corrected, under
 * which assumption, and what breaks it. */
static void owner_windows_warning(struct report *r)
{
	const uint64_t *w = r->a->stats.owner_windows;
	uint64_t missed = owner_windows_missed(r->a), opened = w[CT_OWNER_OPENED];
	if (!missed)
		return;
	if (!opened) {
		warn(r, "the line monitor opened no window for any of the %" PRIu64 " sampled stores "
		        "(%" PRIu64 ": its table was full, %" PRIu64 ": their line had its most windows "
		        "open): the owner estimate has nothing to weigh (--estimator comdetective reads "
		        "the samples)", missed, w[CT_OWNER_DROP_TABLE], w[CT_OWNER_DROP_LINE]);
		return;
	}
	double q = owner_inclusion(r->a);
	char line[128] = "";
	if (w[CT_OWNER_DROP_LINE])
		snprintf(line, sizeof line, " A line at its most windows is busy: its %" PRIu64
		         " missed windows may have held more.", w[CT_OWNER_DROP_LINE]);
	warn(r, "the line monitor opened no window for %" PRIu64 " of %" PRIu64 " sampled stores "
	        "(%" PRIu64 ": its table was full, %" PRIu64 ": their line had its most windows "
	        "open): the owner estimate weighs each opened window's transfers x 1/q for them, q "
	        "the share of the sampled stores so far whose window opened (%.3g%% over the run: "
	        "x %.1f), assuming a missed window would have seen what an opened one saw (another "
	        "line's window in its table slot says nothing of its own line). The 90%% interval "
	        "is the sampling's only.%s Fewer windows at once: a longer commrec -c period or a "
	        "smaller --owner-window", missed, missed + opened, w[CT_OWNER_DROP_TABLE],
	     w[CT_OWNER_DROP_LINE], 100 * q, 1 / q, line);
}

/* The line monitor's lag test.  A window holds the transfers of its line's
 * stores J to 2J - 1 after its sampled store; the runtime also counts,
 * without recording them, those of stores 0 to J - 1, its lag (SUMMARY
 * inst.owner_lag_transfers: transfers x the windows in their lag).  Over
 * the same opened windows, with n_x the stores to x's line before x, the
 * held count has expectation (q / P) sum_x min(J, max(0, n_x - J)) and the
 * lag's (q / P) sum_x min(J, n_x): equal where every transfer had 2J
 * stores before it (what the weights assume), the lag's larger where lines
 * were stored fewer times before their transfers, and then the estimate
 * is low.  The lag's count weighed as the held are (the estimate's mean
 * weight per held transfer; P / (J q) over the run when none was held)
 * has expectation about sum_x min(J, n_x) / J, between the estimate's and
 * exact's (under the same assumption on missed windows).  `short_lines`:
 * the held count lies below the lag's by more than Z_LAG times the sum of
 * the two standard deviations (a bound on the difference's for any correlation of
 * the two; the held one from the estimate's variance, the lag's with the
 * same variance per counted transfer, at least Poisson's): one-sided
 * 0.001, so that a program whose lines are stored often enough is warned
 * of about once in 1000 reports. */
struct owner_lag {
	uint64_t lag, held;       /* transfers x windows: in their lag, held */
	uint64_t j;               /* the monitor's window J (its lag's stores) */
	double lower;             /* the lag's count weighed as the held are */
	bool short_lines;
};

static bool owner_lag_test(const struct analysis *a, double total, double var,
                           struct owner_lag *o)
{
	char v[32];
	uint64_t j, p;
	if (!owner_from_records(a) || !owner_monitor_params(a->trace, &j, &p) ||
	    !ct_trace_meta(a->trace, CT_SEC_SUMMARY, "inst.owner_lag_transfers", v, sizeof v))
		return false;
	o->j = j;
	o->lag = strtoull(v, NULL, 10);
	o->held = a->stats.owner_held;
	double unit = o->held && total > 0 ? total / (double)o->held   /* one held transfer's weight */
	                                   : (double)p / ((double)j * owner_inclusion(a));
	o->lower = (double)o->lag * unit;
	double sd_held = sqrt(var > 0 ? var : 0) / unit;
	double per = o->held && sd_held * sd_held > (double)o->held ? sd_held * sd_held / (double)o->held
	                                                           : 1;
	double sd_lag = sqrt((double)o->lag * per);
	o->short_lines = (double)o->lag - (double)o->held > Z_LAG * (sd_held + sd_lag);
	return true;
}

static void owner_lag_warning(struct report *r)
{
	struct owner_lag o;
	if (!owner_lag_test(r->a, r->total, r->var, &o) || !o.short_lines)
		return;
	uint64_t j = o.j;
	char low[32];
	warn(r, "the owner estimate is low on this program: the line monitor's windows saw %" PRIu64
	        " transfers in their lag (the %" PRIu64 " stores to their line from their sampled "
	        "store on) and only %" PRIu64 " in the %" PRIu64 " stores after, the ones the estimate "
	        "counts. A transfer counts in full only when its line had %" PRIu64 " stores before "
	        "it, and here lines were stored fewer times before their transfers. Weighed alike, "
	        "the lags' count gives %s transfers, itself low where lines had fewer than %" PRIu64
	        " stores (commanalyze(1), --estimator owner; a smaller --owner-window counts more of "
	        "them, with a split that leans to false sharing)", o.lag, j, o.held, j, 2 * j, fmt_count(o.lower, low, sizeof low),
	     j);
}

/* The volume's interval line, and the warning when few events are behind it. */
static void volume_ci(struct report *r)
{
	if (!(r->var > 0) || !(r->total > 0))
		return;
	char lo[32], hi[32];
	double n = effective_events(r->total, r->var);
	struct interval ci = volume_interval(r->total, r->var, r->unit_max);
	fmt_count(ci.lo, lo, sizeof lo);
	fmt_count(ci.hi, hi, sizeof hi);
	fprintf(r->f, "  %-26s %s to %s (from %.0f effective events%s)\n", "  90% interval", lo, hi, n,
	        owner_windows_missed(r->a) ? ", the missed windows weighed for" : "");
	char count[96];
	snprintf(count, sizeof count, "%" PRIu64 " communication events (%.0f effective: the "
	         "weights differ)", r->events, n);
	if (fabs(n - (double)r->events) < 0.5 || n > (double)r->events)
		snprintf(count, sizeof count, "%" PRIu64 " communication events", r->events);
	if (n < TOO_FEW_EVENTS)
		warn(r, "too few events to say anything: %s, so the volume lies anywhere from %s "
		        "to %s (90%%) and the shares are as uncertain (a smaller commrec -c period, "
		        "or a longer run)", count, lo, hi);
	else if (n < FEW_EVENTS)
		warn(r, "only %s: the volume is known to within %s to %s (90%%), shares to about "
		        "+-%.0f points (a smaller commrec -c period, or a longer run)", count, lo, hi,
		     100 * Z90_SHARE / sqrt(4 * n));
}

static void sec_totals(struct report *r)
{
	struct analysis *a = r->a;
	const struct mx_totals *t = matrices_totals(a->mx);
	char b1[32], b2[32], b3[32];
	uint64_t via[3];
	r->events = 0;
	r->tr = r->fa = r->var = 0;
	for (int v = 0; v < 3; v++) {
		via[v] = t->events[v][0] + t->events[v][1];
		r->events += via[v];
		r->tr += t->weight[v][1];
		r->fa += t->weight[v][0];
		r->var += t->var[v][0] + t->var[v][1];
	}
	r->unit_max = t->unit_max;
	r->total = r->tr + r->fa;
	memcpy(r->via, via, sizeof via);
	section(r, "Totals");
	fprintf(r->f, "  %-26s %" PRIu64, "communication events", r->events);
	if (via[COMM_VIA_EXACT])
		fprintf(r->f, " (%" PRIu64 " from the %s model's replay of every access)", via[COMM_VIA_EXACT],
		       a->model->name);
	else
		fprintf(r->f, " (%" PRIu64 " from samples, %" PRIu64 " from watchpoint hits)",
		       via[COMM_VIA_SAMPLE], via[COMM_VIA_WATCHPOINT]);
	fprintf(r->f, "\n");
	fprintf(r->f, "  %-26s %-9s", "estimated line transfers", fmt_count(r->total, b1, sizeof b1));
	if (r->cpu_time)
		fprintf(r->f, " relative only: soft sampler periods are CPU time (see warnings)\n");
	else if (r->duration && r->total > 0)
		fprintf(r->f, " %s/s over the run\n", fmt_count(r->total * 1e9 / (double)r->duration, b2, sizeof b2));
	else
		fprintf(r->f, "\n");
	volume_ci(r);
	owner_windows_warning(r);
	owner_lag_warning(r);
	fprintf(r->f, "  %-26s %-9s transfers x %u bytes\n", "estimated bytes",
	       fmt_bytes(r->total * a->line_size, b2, sizeof b2), a->line_size);
	char ci[48];
	fprintf(r->f, "  %-26s %5.1f%%  %-8s same bytes touched by both threads%s\n", "true sharing",
	       pct(r->tr, r->total), fmt_count(r->tr, b3, sizeof b3),
	       share_ci(r, r->tr, r->total, ci, sizeof ci));
	fprintf(r->f, "  %-26s %5.1f%%  %-8s different bytes of one line%s\n", "false sharing",
	       pct(r->fa, r->total), fmt_count(r->fa, b3, sizeof b3),
	       share_ci(r, r->fa, r->total, ci, sizeof ci));
	fprintf(r->f, "  (a line transfer: a cache line moving from the thread that wrote it to another\n"
	       "   thread that accesses it; each detected event counts for its sample's period%s)\n",
	       analysis_estimator(a) == ESTIMATOR_OWNER ? ",\n   as the estimator 'owner' weighs "
	       "them" : "");
	if (r->var > 0)
		fprintf(r->f, "  (90%%: intervals from the number of events behind each figure, sampling "
		       "error only;\n   a biased estimator's error is not in them: --estimator)\n");
	char probe[32] = "";
	debug_register_probe(a->trace, probe, sizeof probe);
	if (!a->stats.samples && ct_trace_nthreads(a->trace))
		warn(r, "no access was sampled: %zu thread%s recorded, not one sample, so there is "
		        "nothing to analyze. Usual causes: the program exec'd another program (commrec "
		        "records the program it starts, not what that one execs), it was not "
		        "instrumented (--sampler inst samples only code built with commrec-cc), or it "
		        "ran too briefly, or mostly blocked, for one sampling period (a smaller "
		        "commrec -c)", ct_trace_nthreads(a->trace),
		     ct_trace_nthreads(a->trace) == 1 ? "" : "s");
	else if (!r->events && a->stats.samples && !strcmp(probe, "no-fire") &&
	    recorded_watchpoints_matter(a))
		warn(r, "no communication detected: without watchpoints (see below) the samples of "
		        "two threads must meet on a line; try --model window, which pairs samples "
		        "of different threads, or a smaller commrec -c period");
	else if (!r->events && a->stats.samples && owner_from_records(a))
		warn(r, "no communication detected: the line monitor's windows held no transfer "
		        "(--expiry does not apply to the owner estimator; where lines are stored "
		        "fewer than 2J times before they move, a smaller commrec --owner-window J "
		        "sees them; --estimator comdetective weighs the same trace's watchpoint "
		        "hits instead)");
	else if (!r->events && a->stats.samples && analysis_estimator(a) == ESTIMATOR_OWNER)
		warn(r, "no communication detected: the emulated windows held no transfer "
		        "(--expiry does not apply to the owner estimator; a smaller --emulate-period "
		        "samples more of the accesses)");
	else if (!r->events && a->stats.samples)
		warn(r, "no communication detected (try a longer --expiry, e.g. ns:1000000, or the "
		        "window model)");
	if (r->cpu_time && r->events)
		warn(r, "%s sampler: a sample stands for CPU time, not for a number of accesses, so the "
		        "transfer and byte estimates are CPU-time weights: compare shares and pairs, "
		        "not absolute values", r->sampler);
}

struct pair {
	size_t i, j;
	double w, tr, ij, ji;
};

static int cmp_pair_w(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;
	if (a->w != b->w)
		return a->w < b->w ? 1 : -1;
	/* ties in row-major order (the same on every run) */
	return a->i != b->i ? (a->i < b->i ? -1 : 1) : a->j != b->j ? (a->j < b->j ? -1 : 1) : 0;
}

/* The pairs of index's matrices with transfers, heaviest first: from the
 * cells that received weight (matrices_cells), not all n x n. */
static struct pair *top_pairs(const struct matrices *mx, enum mx_index index, size_t *np)
{
	const struct matrix *all = matrices_get(mx, index, MX_ALL);
	const struct matrix *tru = matrices_get(mx, index, MX_TRUE);
	const uint32_t(*rc)[2];
	size_t k = 0, nc = matrices_cells(mx, index, &rc);
	struct pair *p = malloc((nc + 1) * sizeof *p);
	if (!p)
		return NULL;
	for (size_t x = 0; x < nc; x++) {
		size_t i = rc[x][0] < rc[x][1] ? rc[x][0] : rc[x][1];
		size_t j = rc[x][0] < rc[x][1] ? rc[x][1] : rc[x][0];
		double ij = matrix_at(all, i, j), ji = matrix_at(all, j, i);
		/* a pair with both directions is listed twice: keep it once */
		if (rc[x][0] > rc[x][1] && ij > 0)
			continue;
		double w = i == j ? ij : ij + ji;
		if (w <= 0)
			continue;
		double t = i == j ? matrix_at(tru, i, j) : matrix_at(tru, i, j) + matrix_at(tru, j, i);
		p[k++] = (struct pair){ i, j, w, t, ij, ji };
	}
	qsort(p, k, sizeof *p, cmp_pair_w);
	*np = k;
	return p;
}

static void sec_pairs(struct report *r)
{
	struct analysis *a = r->a;
	section(r, "Top thread pairs");
	size_t np;
	struct pair *p = top_pairs(a->mx, MX_THREAD, &np);
	if (!p || !np) {
		fprintf(r->f, "  (none)\n");
		free(p);
		return;
	}
	bool ci = r->var > 0;
	fprintf(r->f, "  %-4s %-32s %12s %7s %7s %12s %12s%s\n", "rank", "pair", "transfers", "share",
	       "true%", "a<-b", "b<-a", ci ? "  share 90%" : "");
	for (size_t k = 0; k < np && k < TOP_PAIRS; k++) {
		char la[48], lb[48], pr[100], w[32], ij[32], ji[32], sh[32] = "";
		thread_label(a->trace, p[k].i, la, sizeof la);
		thread_label(a->trace, p[k].j, lb, sizeof lb);
		snprintf(pr, sizeof pr, "%s <-> %s", la, lb);
		if (ci) {
			struct interval s = share_interval(p[k].w, r->total, r->var);
			snprintf(sh, sizeof sh, "  %.1f-%.1f%%", 100 * s.lo, 100 * s.hi);
		}
		fprintf(r->f, "  %-4zu %-32s %12s %6.1f%% %6.1f%% %12s %12s%s\n", k + 1, pr,
		       fmt_count(p[k].w, w, sizeof w), pct(p[k].w, r->total), pct(p[k].tr, p[k].w),
		       fmt_count(p[k].ij, ij, sizeof ij), fmt_count(p[k].ji, ji, sizeof ji), sh);
	}
	if (np > TOP_PAIRS)
		fprintf(r->f, "  (%zu more pairs; commanalyze matrix for all)\n", np - TOP_PAIRS);
	fprintf(r->f, "  (share: of all transfers; a<-b: transfers to the first thread of the pair from "
	       "the second)\n");
	free(p);
}

static void sec_cores(struct report *r)
{
	struct analysis *a = r->a;
	section(r, "Cores and sockets");
	const struct matrix *c = matrices_get(a->mx, MX_CORE, MX_ALL);
	const struct matrix *s = matrices_get(a->mx, MX_SOCKET, MX_ALL);
	double same_core = 0, same_socket = 0, all = 0;
	const uint32_t(*rc)[2];
	size_t nc = matrices_cells(a->mx, MX_CORE, &rc);
	for (size_t x = 0; x < nc; x++) {
		double v = matrix_at(c, rc[x][0], rc[x][1]);
		all += v;
		if (rc[x][0] == rc[x][1])
			same_core += v;
	}
	for (size_t i = 0; i < s->n; i++)
		same_socket += matrix_at(s, i, i);
	r->same_core = same_core;
	r->same_socket = same_socket;
	r->core_all = all;
	if (a->topo.identity) {
		fprintf(r->f, "  no cpu map in the trace: cores are cpu numbers, one socket assumed\n");
		warn(r, "no cpu topology in the trace: core and socket figures use cpu numbers");
	} else {
		fprintf(r->f, "  %zu cpu%s, %zu core%s, %zu socket%s\n", a->topo.ncpus,
		       a->topo.ncpus == 1 ? "" : "s", a->topo.ncores, a->topo.ncores == 1 ? "" : "s",
		       a->topo.nsockets, a->topo.nsockets == 1 ? "" : "s");
	}
	char b[32];
	fprintf(r->f, "  %-26s %5.1f%%  %s\n", "same core", pct(same_core, all),
	       fmt_count(same_core, b, sizeof b));
	fprintf(r->f, "  %-26s %5.1f%%  %s\n", "other core, same socket", pct(same_socket - same_core, all),
	       fmt_count(same_socket - same_core, b, sizeof b));
	fprintf(r->f, "  %-26s %5.1f%%  %s\n", "other socket", pct(all - same_socket, all),
	       fmt_count(all - same_socket, b, sizeof b));
	uint64_t um = matrices_totals(a->mx)->unmapped_cpu;
	if (um) {
		fprintf(r->f, "  %" PRIu64 " events with an unknown cpu are left out here\n", um);
	}
	size_t np;
	struct pair *p = top_pairs(a->mx, MX_CORE, &np);
	if (p && np) {
		fprintf(r->f, "  top core pairs:");
		for (size_t k = 0; k < np && k < TOP_CORE_PAIRS; k++) {
			char la[32], lb[32];
			if (a->topo.identity) {
				snprintf(la, sizeof la, "cpu%zu", p[k].i);
				snprintf(lb, sizeof lb, "cpu%zu", p[k].j);
			} else {
				snprintf(la, sizeof la, "%s", a->topo.core_label[p[k].i]);
				snprintf(lb, sizeof lb, "%s", a->topo.core_label[p[k].j]);
			}
			fprintf(r->f, "%s %s<->%s %.1f%%", k ? "," : "", la, lb, pct(p[k].w, all));
		}
		fprintf(r->f, "\n");
	}
	free(p);
}

/* Skipped samples that are not accesses at all (the sampled instruction
 * made no user memory access): normal, not a loss of information. */
static bool skip_not_access(unsigned reason)
{
	return reason == CT_SKIP_NO_MEMORY_OPERAND || reason == CT_SKIP_LEA_NOP ||
	       reason == CT_SKIP_NOT_LOAD_STORE || reason == CT_SKIP_KERNEL;
}

static void sec_lost(struct report *r)
{
	struct analysis *a = r->a;
	const struct trace_stats *s = &a->stats;
	section(r, "Lost and skipped");
	double lost_frac = (double)s->lost_total / (double)(s->records + s->lost_total ? s->records + s->lost_total : 1);
	double skip_frac = (double)s->skipped_total /
	                   (double)(s->samples + s->skipped_total ? s->samples + s->skipped_total : 1);
	fprintf(r->f, "  %-26s %" PRIu64 " (%.2f%% of records)", "lost records", s->lost_total, 100 * lost_frac);
	for (unsigned k = 0; k < LOST_REASONS; k++)
		if (s->lost_by_reason[k]) {
			const char *n = k ? ct_lost_reason_name(k) : NULL;
			fprintf(r->f, " %s=%" PRIu64, n ? n : "unknown", s->lost_by_reason[k]);
		}
	fprintf(r->f, "\n");
	fprintf(r->f, "  %-26s %" PRIu64 " (%.2f%% of samples taken)", "skipped samples", s->skipped_total,
	       100 * skip_frac);
	uint64_t not_access = 0;
	for (unsigned k = 0; k <= CT_SKIP_REASON_MAX; k++)
		if (s->skipped_by_reason[k]) {
			const char *n = k ? ct_skip_reason_name(k) : NULL;
			fprintf(r->f, " %s=%" PRIu64, n ? n : "unknown", s->skipped_by_reason[k]);
			if (skip_not_access(k))
				not_access += s->skipped_by_reason[k];
		}
	fprintf(r->f, "\n");
	/* the accesses whose address was lost: a bias, unlike non-accesses;
	 * samples in the runtime are neither: the recorder's own cost */
	uint64_t in_rt = s->skipped_by_reason[CT_SKIP_RUNTIME];
	uint64_t failed = s->skipped_total - not_access - in_rt;
	double fail_frac = (double)failed / (double)(s->samples + failed ? s->samples + failed : 1);
	double rt_frac = (double)in_rt / (double)(s->samples + s->skipped_total ? s->samples + s->skipped_total : 1);
	if (not_access || in_rt)
		fprintf(r->f, "  %-26s %" PRIu64 " not user memory accesses (normal), %" PRIu64
		       " in the recorder's runtime, %" PRIu64 " accesses without an address\n", "",
		       not_access, in_rt, failed);
	if (rt_frac > HIGH_RUNTIME)
		warn(r, "%.1f%% of the samples fell inside the recorder's runtime (its signal "
		        "handlers), not in the program: the sampling period is too short for this "
		        "machine (a longer commrec -c; the recorder throttles itself above --throttle)",
		     100 * rt_frac);
	if (lost_frac > HIGH_LOSS)
		warn(r, "high loss: %.1f%% of records were lost (larger buffers, a longer period)",
		     100 * lost_frac);
	if (fail_frac > HIGH_SKIP)
		warn(r, "%.1f%% of the sampled memory accesses had no usable address", 100 * fail_frac);
	size_t few = 0, sampled = 0;
	uint64_t nsamples = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		if (!thread_by_index(a->trace, i) || !s->th[i].samples)
			continue;
		sampled++;
		nsamples += s->th[i].samples;
		few += s->th[i].samples < FEW_SAMPLES;
	}
	if (few)
		warn(r, "%zu of %zu sampled threads have fewer than %d samples (%.0f on average): their "
		        "figures are rough (a smaller commrec -c period, or a longer run)", few,
		     sampled, FEW_SAMPLES, (double)nsamples / (double)sampled);
	if (s->bad_thread)
		warn(r, "%" PRIu64 " records name an unknown thread and were ignored", s->bad_thread);
}

static void sec_next(struct report *r)
{
	static const char *const cmd[] = { "matrix", "objects", "lines", "regions", "timeline" };
	static const char *const what[] = {
		"all thread pairs; --index core|socket, --kind false, --format svg",
		"which data: globals and their fields, heap call paths, stacks",
		"which cache lines, and which bytes of them",
		"which code: marked and OpenMP regions, thread load",
		"when: per phase or --interval, --format svg",
	};
	const int ncmd = (int)(sizeof cmd / sizeof *cmd);
	const char *p = r->a->path;
	int w = 0;
	for (int i = 0; i < ncmd; i++) {
		int l = (int)(strlen(cmd[i]) + strlen(p)) + 1;
		w = l > w ? l : w;
	}
	section(r, "More");
	for (int i = 0; i < ncmd; i++)
		fprintf(r->f, "  commanalyze %s %-*s  %s\n", cmd[i], w - (int)strlen(cmd[i]) - 1, p, what[i]);
	fprintf(r->f, "  (give them the same model options; commanalyze COMMAND --help)\n");
}

static void sec_warnings(struct report *r)
{
	section(r, "Warnings");
	if (!r->nwarn)
		fprintf(r->f, "  none\n");
	for (size_t i = 0; i < r->nwarn; i++)
		print_wrapped(r->f, "  - ", "    ", r->warn[i]);
}

/* ---- --format json (schema: commanalyze(1), REPORT JSON) ---------------- */

static void json_num(FILE *f, double v)
{
	char b[40];
	out_fmt_exact(b, sizeof b, isfinite(v) ? v : 0);
	fputs(b, f);
}

/* ,"name":[lo,hi], or null when the figure is not estimated (no variance:
 * every event seen with certainty, or nothing detected) */
static void json_interval(FILE *f, const char *name, bool have, struct interval ci)
{
	fprintf(f, ",\"%s\":", name);
	if (!have) {
		fputs("null", f);
		return;
	}
	fputc('[', f);
	json_num(f, ci.lo);
	fputc(',', f);
	json_num(f, ci.hi);
	fputc(']', f);
}

static void json_model(FILE *f, const struct report *r)
{
	const struct analysis *a = r->a;
	fprintf(f, "\"model\":{\"name\":");
	out_json_string(f, a->model->name);
	fprintf(f, ",\"options\":{");
	bool first = true;
	for (size_t i = 1; model_opt_names[i]; i++) {
		char v[64];
		if (!option_used(a, i, v, sizeof v))
			continue;
		fputs(first ? "" : ",", f);
		out_json_string(f, model_opt_names[i]);
		fputc(':', f);
		out_json_value(f, v);
		first = false;
	}
	fputc('}', f);
	if (model_opt_relevant(a->model->name, "estimator")) {
		fprintf(f, ",\"estimator_source\":");
		out_json_string(f, estimator_source(a));
	}
	if (owner_from_records(a)) {
		const uint64_t *w = a->stats.owner_windows;
		fprintf(f, ",\"owner_windows\":{\"opened\":%" PRIu64 ",\"dropped_table_full\":%" PRIu64
		        ",\"dropped_line_full\":%" PRIu64 ",\"inclusion\":", w[CT_OWNER_OPENED],
		        w[CT_OWNER_DROP_TABLE], w[CT_OWNER_DROP_LINE]);
		json_num(f, owner_inclusion(a));
		struct owner_lag o;
		if (owner_lag_test(a, r->total, r->var, &o)) {
			fprintf(f, ",\"held_transfers\":%" PRIu64 ",\"lag_transfers\":%" PRIu64
			        ",\"lag_estimate\":", o.held, o.lag);
			json_num(f, o.lower);
			fprintf(f, ",\"short_lines\":%s", o.short_lines ? "true" : "false");
		}
		fputc('}', f);
	}
	fprintf(f, "},\n");
}

static void json_pairs(FILE *f, struct report *r)
{
	struct analysis *a = r->a;
	size_t np = 0;
	struct pair *p = top_pairs(a->mx, MX_THREAD, &np);
	fprintf(f, "\"pairs\":[");
	for (size_t k = 0; p && k < np; k++) {
		char la[48], lb[48];
		fprintf(f, "%s\n {\"a\":%zu,\"b\":%zu,\"a_label\":", k ? "," : "", p[k].i, p[k].j);
		out_json_string(f, thread_label(a->trace, p[k].i, la, sizeof la));
		fprintf(f, ",\"b_label\":");
		out_json_string(f, thread_label(a->trace, p[k].j, lb, sizeof lb));
		fprintf(f, ",\"transfers\":");
		json_num(f, p[k].w);
		fprintf(f, ",\"true\":");
		json_num(f, p[k].tr);
		fprintf(f, ",\"a_from_b\":");
		json_num(f, p[k].ij);
		fprintf(f, ",\"b_from_a\":");
		json_num(f, p[k].ji);
		json_interval(f, "share_90", r->var > 0 && r->total > 0,
		              share_interval(p[k].w, r->total, r->var));
		fputc('}', f);
	}
	fprintf(f, "],\n");
	free(p);
}

/* The report as one JSON object, from the figures the sections found. */
static void report_json(FILE *f, struct report *r, struct attrib *at)
{
	struct analysis *a = r->a;
	const struct trace_stats *st = &a->stats;
	char buf[512];
	fprintf(f, "{\"schema\":\"commtrace-report/1\",\"tool\":\"commanalyze %s\",\"trace\":",
	        CT_VERSION);
	out_json_string(f, a->path);
	fprintf(f, ",\n\"program\":");
	out_json_string(f, trace_command(a->trace, buf, sizeof buf));
	size_t with = 0;
	for (size_t i = 0; i < st->nthreads; i++)
		with += st->th[i].samples > 0;
	fprintf(f, ",\"threads\":%zu,\"threads_with_samples\":%zu,\"duration_ns\":%" PRIu64
	        ",\n\"sampler\":", ct_trace_nthreads(a->trace), with, r->duration);
	out_json_string(f, r->sampler);
	fprintf(f, ",\"cpu_time_periods\":%s,\"line_size\":%u,\"line_size_source\":",
	        r->cpu_time ? "true" : "false", a->line_size);
	out_json_string(f, a->line_size_source);
	fprintf(f, ",\"complete\":%s,\"incomplete_why\":", r->complete ? "true" : "false");
	out_json_string(f, r->complete ? NULL : r->incomplete_why);
	fprintf(f, ",\n\"records\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"watchpoint_arms\":%"
	        PRIu64 ",\"watchpoint_hits\":%" PRIu64 ",\n", st->records, st->samples, r->arms,
	        r->hits);
	json_model(f, r);
	fprintf(f, "\"totals\":{\"events\":%" PRIu64 ",\"events_from_samples\":%" PRIu64
	        ",\"events_from_watchpoints\":%" PRIu64 ",\"events_exact\":%" PRIu64
	        ",\"transfers\":", r->events, r->via[COMM_VIA_SAMPLE], r->via[COMM_VIA_WATCHPOINT],
	        r->via[COMM_VIA_EXACT]);
	json_num(f, r->total);
	fprintf(f, ",\"true\":");
	json_num(f, r->tr);
	fprintf(f, ",\"false\":");
	json_num(f, r->fa);
	fprintf(f, ",\"bytes\":");
	json_num(f, r->total * a->line_size);
	fprintf(f, ",\"true_share\":");
	json_num(f, r->total > 0 ? r->tr / r->total : 0);
	bool est = r->var > 0 && r->total > 0;
	fprintf(f, ",\"variance\":");
	json_num(f, r->var);
	fprintf(f, ",\"effective_events\":");
	if (est)
		json_num(f, effective_events(r->total, r->var));
	else
		fputs("null", f);
	json_interval(f, "transfers_90", est, volume_interval(r->total, r->var, r->unit_max));
	json_interval(f, "true_share_90", est, share_interval(r->tr, r->total, r->var));
	fprintf(f, "},\n");
	json_pairs(f, r);
	fprintf(f, "\"cores\":{\"cpu_map\":%s,\"same_core\":", a->topo.identity ? "false" : "true");
	json_num(f, r->same_core);
	fprintf(f, ",\"same_socket_other_core\":");
	json_num(f, r->same_socket - r->same_core);
	fprintf(f, ",\"other_socket\":");
	json_num(f, r->core_all - r->same_socket);
	fprintf(f, ",\"unmapped_cpu_events\":%" PRIu64 "},\n",
	        matrices_totals(a->mx)->unmapped_cpu);
	trace_stats_json(f, st);
	fprintf(f, ",\n");
	if (at) {
		fprintf(f, "\"objects\":");
		attrib_write_objects(at, f, AF_JSON, REPORT_TOP_ATTRIB);
		fprintf(f, ",\"lines\":");
		attrib_write_lines(at, f, AF_JSON, REPORT_TOP_ATTRIB);
		fprintf(f, ",\n");
	}
	fprintf(f, "\"damaged\":");
	out_json_string(f, a->damaged ? a->err.msg : NULL);
	fprintf(f, ",\n\"warnings\":[");
	for (size_t i = 0; i < r->nwarn; i++) {
		fprintf(f, "%s\n ", i ? "," : "");
		out_json_string(f, r->warn[i]);
	}
	fprintf(f, "]}\n");
}

enum { O_FROM_BINARIES = 1, O_FORMAT, O_OUTPUT, O_NO_DEMANGLE };
static const struct cli_opt report_opts[] = {
	{ "symbols-from-binaries", 0, false, O_FROM_BINARIES },
	{ "no-demangle", 0, false, O_NO_DEMANGLE },
	{ "format", 0, true, O_FORMAT }, { "output", 'o', true, O_OUTPUT },
};
static const char *const report_formats[] = { "text", "json" };

/* The sections in text to r->f; with json, the same sections find the
 * figures and the warnings (their text goes to /dev/null), then the JSON
 * object to out. */
static void report_write(struct report *r, struct attrib *at, bool json, FILE *out)
{
	r->f = json ? fopen("/dev/null", "w") : out;
	if (!r->f) {
		ana_err("cannot open /dev/null: %s", strerror(errno));
		return;
	}
	if (r->a->warning[0])
		warn(r, "%s", r->a->warning);
	sec_trace(r);
	sec_model(r);
	sec_totals(r);
	sec_pairs(r);
	sec_cores(r);
	if (r->regions)
		regions_report_section(r->regions, r->a, REPORT_TOP_ATTRIB, r->f);
	if (at && !json) {
		fflush(r->f);
		attrib_report_sections(at, r->f, REPORT_TOP_ATTRIB, REPORT_TOP_ATTRIB);
	}
	sec_lost(r);
	if (r->a->damaged)
		warn(r, "damaged trace: the figures cover the records before the damage (%s)",
		     r->a->err.msg);
	sec_warnings(r);
	sec_next(r);
	if (json) {
		fclose(r->f);
		report_json(out, r, at);
	}
}

/* The report command's show: the report as text or JSON into a file or
 * standard output. */
struct report_out {
	const char *path;         /* NULL: standard output */
	bool json;
};

static int report_to_file(void *arg, const struct report_result *res)
{
	const struct report_out *ro = arg;
	FILE *f = ro->path ? fopen(ro->path, "w") : stdout;
	if (!f) {
		ana_err("cannot write %s: %s", ro->path, strerror(errno));
		return EXIT_BADTRACE;
	}
	report_result_write(res, ro->json, f);
	if (ro->path ? fclose(f) : fflush(f)) {
		ana_err("cannot write %s: %s", ro->path ? ro->path : "standard output", strerror(errno));
		return EXIT_BADTRACE;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	const char *path, *v, *out = NULL;
	struct model_opts o;
	bool from_binaries = false, no_demangle = false;
	int format = 0;
	model_opts_default(&o);
	struct cli p;
	cli_init(&p, "report", argc, argv, report_opts, sizeof report_opts / sizeof *report_opts, &o);
	int id, bad = 0;
	while (!bad && (id = cli_next(&p, &v)) > 0) {
		if (id == O_FROM_BINARIES)
			from_binaries = true;
		else if (id == O_FORMAT)
			bad = cli_choice(&p, v, report_formats, 2, &format);
		else if (id == O_OUTPUT)
			out = v;
		else if (id == O_NO_DEMANGLE)
			no_demangle = true;
	}
	if (bad || id < 0 || cli_trace(&p, &path))
		return EXIT_USAGE;
	struct report_out ro = { out, format == 1 };
	return report_run(path, &o, from_binaries, no_demangle, report_to_file, &ro);
}

void report_result_write(const struct report_result *res, bool json, FILE *f)
{
	struct report r = { .a = res->an, .thr = *res->throttle, .regions = res->regions };
	report_write(&r, res->at, json, f);
}

int report_run(const char *path, const struct model_opts *o, bool from_binaries, bool no_demangle,
               int (*show)(void *arg, const struct report_result *res), void *arg)
{
	struct analysis an;
	struct analysis_hooks hooks;
	struct attrib_hook ah;
	attrib_hooks_init(&hooks, &ah, from_binaries);
	ah.no_demangle = no_demangle;
	struct throttled thr = { 0, NULL };
	struct regions_hook rg = { .h = &hooks, .no_demangle = no_demangle };
	struct report_setup rs = { &hooks, hooks.setup, hooks.arg, &thr, &rg };
	hooks.setup = report_hook_setup;
	hooks.arg = &rs;
	int status = analysis_run_hooks(&an, path, o, true, &hooks);
	if (!status) {
		struct report_result res = { &an, ah.a, rg.r, &thr };
		status = show(arg, &res);
		if (an.damaged) {
			fprintf(stderr, "commanalyze: %s\n", an.err.msg);
			status = EXIT_BADTRACE;
		}
	}
	free(thr.period);
	attrib_free(ah.a);
	regions_free(rg.r);
	analysis_free(&an);
	return status;
}
