/* Which samplers work on this machine (pmu_probe_sampler, in
 * record/common/pmu_pfm.c, probes all four), whether debug-register
 * watchpoints work here (wp_probe.h: armed on a word, written, counted),
 * --list-samplers, the choice made by --sampler auto, and the period with
 * its floor. */
#include <stdbool.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commrec.h"
#include "commtrace.h"
#include "pmu.h"
#include "pmu_sample.h"

bool rec_sampler_works(const char *name, char *why, size_t cap)
{
	why[0] = '\0';
	bool ok = pmu_probe_sampler(name, why, cap);
	if (!why[0])
		snprintf(why, cap, ok ? "works" : "does not work here");
	return ok;
}

/* What the probe's verdict means, in plain words, for --list-samplers and
 * the warning of a recording. */
static const char *wp_meaning(enum wp_verdict v)
{
	switch (v) {
	case WP_NO_FIRE:
		return "the debug registers do not work on this machine (likely a virtual machine "
		       "whose hypervisor does not virtualize them), so commrec records without "
		       "watchpoints and sees communication only where samples of both threads catch "
		       "it (far fewer events); for watchpoints, record on bare metal or a machine "
		       "with a PMU, or build the program with commrec-cc and use --sampler inst, "
		       "whose watchpoints are software ones (or record every access: --sampler inst "
		       "--full, analyzed with the exact or emulate model; commrec-cc(1)); "
		       "--force-watchpoints arms them anyway";
	case WP_NO_OPEN:
		return "perf breakpoints are refused here (kernel.perf_event_paranoid, seccomp, or "
		       "no debug registers): recording works without them, use -w 0 to silence this";
	default:
		return "";
	}
}

bool rec_soft_timer_used(const struct rec_opts *o)
{
	return o->soft_timer || (o->soft_probed && o->soft_probe.open_errno);
}

/* How the soft sampler's samples are taken, as choose_soft_path chose
 * (its reason says why). */
static const char *soft_path_words(const struct rec_opts *o)
{
	if (rec_soft_timer_used(o))
		return "POSIX CPU-time timers per thread (a signal per sample)";
	if (o->wp_used > 0 && !o->wp_cpu)
		return "perf task-clock events per thread (a signal per sample, which arms the "
		       "thread's debug registers)";
	if (o->soft_cpu_wide)
		return "perf cpu-clock events per CPU, CPU-wide, into rings the writer drains, the "
		       "program's samples kept (no signal, no cost at context switches)";
	return "perf task-clock events per CPU, inherited by the threads, into rings the writer "
	       "drains (no signal)";
}

/* What a soft recording does here, at the default period or with -c
 * period: the choice a recording makes (rec_choose_sampler: the same
 * probes), its messages silenced. */
static void list_soft_choice(uint64_t period)
{
	struct rec_opts o;
	rec_default_options(&o);
	o.sampler = "soft";
	o.period = period;
	int verbose = rec_verbose;
	rec_verbose = -1;
	int r = rec_choose_sampler(&o);
	rec_verbose = verbose;
	char at[48] = "the default period";
	if (period)
		snprintf(at, sizeof at, "-c %llu", (unsigned long long)period);
	if (r < 0) {
		printf("soft at %s: cannot record (see soft above)\n", at);
		return;
	}
	printf("soft at %s: %s; why: %s\n", at, soft_path_words(&o), o.soft_path_reason);
	if (o.wp_used > 0)
		printf("soft at %s: %d watchpoint%s %s; why: %s\n", at, o.wp_used,
		       o.wp_used == 1 ? "" : "s", o.wp_cpu ? "per CPU, armed by the writer from the "
		       "per-CPU rings" : "per thread", o.wp_cpu_reason[0] ? o.wp_cpu_reason :
		       "per-CPU breakpoints not probed");
}

void rec_list_samplers(void)
{
	static const char *const names[] = {"pebs", "ibs", "soft", "inst"};
	const char *pick = NULL;
	bool soft_ok = false;
	printf("%-8s %-6s %s\n", "SAMPLER", "WORKS", "WHY, AND WHAT TO DO");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char why[512];
		bool ok = rec_sampler_works(names[i], why, sizeof why);
		if (ok && !pick && strcmp(names[i], "inst"))
			pick = names[i];
		soft_ok |= ok && !strcmp(names[i], "soft");
		printf("%-8s %-6s %s\n", names[i], ok ? "yes" : "no", why);
	}
	printf("%-8s %-6s %s\n", "auto", pick ? "yes" : "no",
	       pick ? pick : "no sampler works here (see the reasons above)");
	struct wp_probe p;
	char detail[256];
	wp_probe_run(&p, CT_WP_MAX);
	wp_probe_detail(&p, detail, sizeof detail);
	if (p.verdict == WP_FIRE)
		printf("watchpoints: %d debug register%s per thread (probe: %s, %.2f ms)\n", p.fired,
		       p.fired == 1 ? "" : "s", detail, (double)p.ns / 1e6);
	else
		printf("watchpoints: %s here (probe: %s, %.2f ms): %s\n",
		       p.verdict == WP_NO_FIRE ? "do not fire" : "none", detail, (double)p.ns / 1e6,
		       wp_meaning(p.verdict));
	if (soft_ok) {
		list_soft_choice(0);
		list_soft_choice(REC_SOFT_PERIOD_DEFAULT);
	}
	printf("software watchpoints: with --sampler inst (its default): the instrumentation "
	       "compares every access with the watched words; no debug registers needed, on any "
	       "machine\n");
}

/* The why of a refused sampler, with the way out if it lacks one. */
static void refuse(const char *name, const char *why)
{
	if (strstr(why, "--sampler soft") || !strcmp(name, "soft"))
		rec_err("sampler %s does not work here: %s", name, why);
	else
		rec_err("sampler %s does not work here: %s; use --sampler soft", name, why);
	rec_err("'commrec --list-samplers' shows what works on this machine");
}

/* The period, its unit and its floor: below the floor a sample costs the
 * runtime's signal handler about as much CPU time as the program gets
 * between two samples, and the signals queue up faster than they are
 * handled (measured on a 2-cpu VM: -c 20 made a 0.2 s program run 13 s). */
static void choose_period(struct rec_opts *o)
{
	bool soft = !strcmp(o->sampler_used, "soft");
	bool inst = !strcmp(o->sampler_used, "inst");
	o->period_unit = soft ? "us-cpu" : inst ? "accesses" : "events";
	o->period_used = o->period ? o->period : soft ? REC_SOFT_PERIOD_DEFAULT :
	                 inst ? REC_INST_PERIOD_DEFAULT : REC_EVENT_PERIOD_DEFAULT;
	/* inst samples without signals: its cost per sample is a function call */
	o->period_floor = soft ? REC_SOFT_PERIOD_MIN : inst ? 0 : REC_EVENT_PERIOD_MIN;
	if (o->full && !o->owner_window)
		o->period_used = 1;      /* with the line monitor: its store period */
	else if (o->period_used < o->period_floor) {
		rec_warn("-c %" PRIu64 " is below the %s sampler's shortest period, %" PRIu64 " %s: "
		         "each sample costs the runtime's signal handler several microseconds, and "
		         "shorter periods let it take over the program; using %" PRIu64,
		         o->period_used, o->sampler_used, o->period_floor,
		         soft ? "us of CPU time" : "events", o->period_floor);
		o->period_used = o->period_floor;
	}
	if (inst)
		o->throttle_share = 0;   /* inst samples without signals: nothing to lengthen */
	if (!o->watch_life) {
		/* the same horizon in the watcher's accesses at any period */
		uint64_t life = (REC_WATCH_LIFE_ACCESSES + o->period_used / 2) / o->period_used;
		o->watch_life = life < 1 ? 1 : life > 1000000 ? 1000000 : (int)life;
	}
}

/* soft: watchpoints per CPU, armed by the writer from the per-CPU sample
 * rings (record/runtime/rt_cpuwp.c), where breakpoints opened per CPU fire
 * (wp_probe_cpu_run) and no timer is asked for, at every period: the
 * per-thread path arms a thread's registers only once its context switches
 * leave room in its budget, which in a program that waits at barriers
 * (LULESH, OpenMP) is never (0 arms, 0 events), while the rings cost such
 * programs 1.07-1.25x (commrec(1), Costs).  COMMTRACE_WP_CPU=0 or 1 decides
 * instead.  Else each thread's own registers (the per-thread path). */
static void choose_wp_cpu(struct rec_opts *o)
{
	o->wp_cpu = false;
	const char *env = getenv(CT_ENV_WP_CPU);
	const char *timer = getenv(CT_ENV_SOFT_TIMER);
	if (strcmp(o->sampler_used, "soft") || !o->wp_used || o->wp_soft)
		return;
	if (timer && timer[0] == '1') {
		snprintf(o->wp_cpu_reason, sizeof o->wp_cpu_reason, "timers asked for (%s=1): "
		         "watchpoints per thread", CT_ENV_SOFT_TIMER);
	} else if (env && *env) {
		o->wp_cpu = env[0] == '1';
		snprintf(o->wp_cpu_reason, sizeof o->wp_cpu_reason, "asked for with %s=%s",
		         CT_ENV_WP_CPU, env);
	} else {
		struct wp_probe *p = &o->wp_cpu_probe;
		wp_probe_cpu_run(p, o->wp_used);
		char detail[200];
		wp_probe_detail(p, detail, sizeof detail);
		o->wp_cpu = p->verdict == WP_FIRE && p->fired >= o->wp_used;
		snprintf(o->wp_cpu_reason, sizeof o->wp_cpu_reason, "per-CPU probe: %s: %s",
		         wp_verdict_name(p->verdict), detail);
	}
	rec_info(1, "watchpoints %s (%s)", o->wp_cpu ? "per CPU, armed by the writer"
	                                              : "per thread", o->wp_cpu_reason);
}

/* Watchpoints: probe whether debug registers open and fire here (full
 * traces need none; the probe still runs: its verdict goes into the trace).
 * The inst sampler watches in software by default: exact, on any machine. */
static void choose_watchpoints(struct rec_opts *o)
{
	int want = o->watchpoints >= 0 ? o->watchpoints : (o->full ? 0 : CT_WP_MAX);
	struct wp_probe *p = &o->wp_probe;
	wp_probe_run(p, CT_WP_MAX);
	char detail[256];
	wp_probe_detail(p, detail, sizeof detail);
	rec_info(1, "watchpoint probe: %s: %s (%.2f ms)", wp_verdict_name(p->verdict), detail,
	         (double)p->ns / 1e6);
	o->wp_available = p->fired;
	o->wp_soft = !strcmp(o->sampler_used, "inst") &&
	             (!o->wp_kind || !strcmp(o->wp_kind, "software"));
	if (o->wp_soft) {
		o->wp_used = want;
		rec_info(1, "watchpoints: %d software watchpoint%s per thread", want,
		         want == 1 ? "" : "s");
		return;
	}
	int usable = o->force_wp ? p->retargeted : p->fired;
	o->wp_used = want < usable ? want : usable;
	if (!want)
		return;
	choose_wp_cpu(o);
	if (o->wp_used && !o->wp_cpu) {
		/* soft at the default period: its per-thread events too (see
		 * choose_soft_path) */
		bool soft = !strcmp(o->sampler_used, "soft") && !o->period;
		struct wp_switch_cost c = wp_switch_cost(o->wp_used, soft ? o->period_used * 1000 : 0);
		o->wp_switch_ns = c.armed_ns;
		o->wp_open_switch_ns = c.open_ns;
		o->soft_event_switch_ns = c.sampling_ns;
		rec_info(1, "watchpoints: %d registers add %.2f us to a context switch here armed, "
		         "%.2f us open but disabled", o->wp_used, (double)c.armed_ns / 1e3,
		         (double)c.open_ns / 1e3);
		if (soft)
			rec_info(1, "soft: a per-thread sampling event adds %.2f us to a context switch "
			         "here", (double)c.sampling_ns / 1e3);
	}
	if (p->verdict == WP_NO_FIRE && !o->force_wp) {
		rec_warn("watchpoints do not fire on this machine (%s): %s", detail,
		         wp_meaning(p->verdict));
	} else if (p->verdict == WP_NO_FIRE) {
		rec_warn("watchpoints do not fire on this machine (%s): arming %d anyway "
		         "(--force-watchpoints); expect no hits", detail, o->wp_used);
	} else if (want > usable) {
		if (o->watchpoints >= 0)
			rec_warn("only %d of the %d watchpoints asked for work here (%s); using %d",
			         usable, want, detail, usable);
		else
			rec_info(1, "watchpoints: %d usable here", usable);
	}
}

/* Whether the per-CPU rings' events can be CPU-wide here (they open:
 * switch_probe_cpu_wide), where the rings are used (no watchpoints, or
 * watchpoints per CPU) and COMMTRACE_SOFT_CPU_WIDE=1 asks for them: not by
 * default, because a CPU-wide cpu-clock event samples a fixed grid of the
 * CPU's clock, which a program waking on a timer whose interval is a
 * multiple of the period meets at the same phase at every wake-up (its
 * samples then do not stand for its CPU time: commrec(1), "The soft
 * sampler"). */
static void choose_cpu_wide(struct rec_opts *o)
{
	const char *env = getenv(CT_ENV_SOFT_CPU_WIDE);
	o->soft_cpu_wide = false;
	o->soft_cpu_wide_errno = 0;
	if ((o->wp_used > 0 && !o->wp_cpu) || !env || env[0] != '1')
		return;
	o->soft_cpu_wide_errno = switch_probe_cpu_wide(o->period_used * 1000);
	o->soft_cpu_wide = !o->soft_cpu_wide_errno;
	rec_info(1, "soft: CPU-wide sampling events %s", o->soft_cpu_wide ? "open" :
	         strerror(o->soft_cpu_wide_errno));
}

/* The soft sampler's path: COMMTRACE_SOFT_TIMER when set (1: timers, 0:
 * perf events); where CPU-wide events open, per-CPU rings of them (no cost
 * at a context switch, samples at the period: nothing to probe); perf
 * events when -c asks for a period (the timers fire at most once per
 * scheduler tick: they cannot honour a short one); where debug registers
 * are armed, a perf event per thread (their arming needs a signal per
 * sample in the thread), which a thread gets, with its registers, once its
 * context switches leave room for them in its budget at the costs
 * measured with the registers' (soft_event_switch_ns), and leaves where
 * they stop doing so; a timer of its own until then
 * (record/runtime/sampler_soft.c, rt_wp.c); else, at the default period,
 * what the switch probe measures as cheaper here. */
static void choose_soft_path(struct rec_opts *o)
{
	const char *env = getenv(CT_ENV_SOFT_TIMER);
	choose_cpu_wide(o);
	if (env && *env) {
		o->soft_timer = env[0] == '1';
		o->soft_event_switch_ns = 0;   /* the path as asked, for every thread */
		snprintf(o->soft_path_reason, sizeof o->soft_path_reason, "asked for with %s=%s",
		         CT_ENV_SOFT_TIMER, env);
		rec_info(1, "soft path: %s (%s)", o->soft_timer ? "timers" : "perf events",
		         o->soft_path_reason);
		return;
	}
	if (o->soft_cpu_wide) {
		o->soft_timer = false;
		snprintf(o->soft_path_reason, sizeof o->soft_path_reason, "CPU-wide cpu-clock events "
		         "asked for (" CT_ENV_SOFT_CPU_WIDE "=1) and open in commrec's probe: per-CPU "
		         "rings decoded by the writer%s (sampler_rings: the runtime's)",
		         o->wp_cpu ? ", which arms the CPUs' debug registers (watchpoint_cpu_reason)"
		                   : "");
		rec_info(1, "soft path: perf events (%s)", o->soft_path_reason);
		return;
	}
	if (o->wp_cpu) {
		o->soft_timer = false;
		snprintf(o->soft_path_reason, sizeof o->soft_path_reason, "watchpoints per CPU: "
		         "per-CPU sample rings of inherited events (CPU-wide ones: %s) decoded by the "
		         "writer, which arms the CPUs' debug registers (watchpoint_cpu_reason)",
		         o->soft_cpu_wide_errno ? strerror(o->soft_cpu_wide_errno) :
		         "not asked for, " CT_ENV_SOFT_CPU_WIDE "=1 asks");
		rec_info(1, "soft path: perf events (%s)", o->soft_path_reason);
		return;
	}
	if (o->wp_used > 0 && !o->wp_soft && !o->period && o->soft_event_switch_ns) {
		o->soft_timer = false;
		snprintf(o->soft_path_reason, sizeof o->soft_path_reason, "debug registers armed: a "
		         "perf event per thread (its registers too) once its context switches leave "
		         "room in its budget (the event adds %.2f us to each), its own timer until "
		         "then", (double)o->soft_event_switch_ns / 1e3);
		rec_info(1, "soft path: perf events (%s)", o->soft_path_reason);
		return;
	}
	if (o->period && !o->full) {
		o->soft_timer = false;
		snprintf(o->soft_path_reason, sizeof o->soft_path_reason, "-c %llu asked for: perf "
		         "events (the timers fire at most once per scheduler tick)",
		         (unsigned long long)o->period);
		rec_info(1, "soft path: perf events (%s)", o->soft_path_reason);
		return;
	}
	switch_probe_run(&o->soft_probe, o->period_used * 1000);
	o->soft_probed = true;
	o->soft_timer = o->soft_probe.timer;
	switch_probe_detail(&o->soft_probe, o->soft_path_reason, sizeof o->soft_path_reason);
	rec_info(1, "soft path: %s (probe: %s, %.0f ms)", o->soft_timer ? "timers" : "perf events",
	         o->soft_path_reason, (double)o->soft_probe.ns / 1e6);
}

void rec_default_owner_window(struct rec_opts *o)
{
	if (o->owner_window_given || o->full || strcmp(o->sampler_used, "inst"))
		return;
	if (o->line_size_used > CT_OWNER_LINE_MAX) {
		rec_info(1, "no line monitor: it follows lines of at most %d bytes, the line size "
		         "is %u", CT_OWNER_LINE_MAX, o->line_size_used);
		return;
	}
	o->owner_window = REC_OWNER_WINDOW_DEFAULT;
}

int rec_choose_sampler(struct rec_opts *o)
{
	char why[512];
	const char *s = o->sampler;
	if (!strcmp(s, "auto")) {
		static const char *const order[] = {"pebs", "ibs", "soft"};
		size_t len = 0;
		len += (size_t)snprintf(o->sampler_reason, sizeof o->sampler_reason, "auto:");
		for (size_t i = 0; i < 3 && !o->sampler_used; i++) {
			bool ok = rec_sampler_works(order[i], why, sizeof why);
			if (ok)
				o->sampler_used = order[i];
			if (len < sizeof o->sampler_reason)
				len += (size_t)snprintf(o->sampler_reason + len, sizeof o->sampler_reason - len,
				                        " %s %s%s%s", order[i], ok ? "works" : "does not work (",
				                        ok ? "" : why, ok ? "" : ");");
			rec_info(1, "sampler %s: %s: %s", order[i], ok ? "works" : "does not work", why);
			if (o->nevents && i == 0 && !ok) {
				rec_err("--event needs the pebs sampler, which does not work here: %s", why);
				return -1;
			}
		}
		if (!o->sampler_used) {
			rec_err("no sampler works on this machine: %s", o->sampler_reason);
			rec_err("'commrec --list-samplers' says why; programs built for --sampler inst "
			        "can still be recorded");
			return -1;
		}
	} else {
		if (!rec_sampler_works(s, why, sizeof why)) {
			refuse(s, why);
			return -1;
		}
		o->sampler_used = s;
		snprintf(o->sampler_reason, sizeof o->sampler_reason, "requested with --sampler %s", s);
	}
	rec_info(1, "sampler: %s (%s)", o->sampler_used, o->sampler_reason);

	choose_period(o);

	size_t len = 0;
	o->events_joined[0] = '\0';
	for (int i = 0; i < o->nevents; i++) {
		int w = snprintf(o->events_joined + len, sizeof o->events_joined - len, "%s%s",
		                 i ? "," : "", o->events[i]);
		if (w < 0 || (size_t)w >= sizeof o->events_joined - len) {
			rec_err("the --event list is too long");
			return -1;
		}
		len += (size_t)w;
	}

	/* pebs: encode the events here (libpfm4) and pass the attrs to the
	 * runtime, which does not link libpfm4. */
	o->pmu_attrs[0] = '\0';
	if (!strcmp(o->sampler_used, "pebs")) {
		struct perf_event_attr a[PMU_CONV_MAX_EVENTS];
		uint8_t kinds[PMU_CONV_MAX_EVENTS];
		int n = pmu_pebs_attrs_kinds(o->events_joined[0] ? o->events_joined : NULL,
		                             o->period_used, a, kinds, PMU_CONV_MAX_EVENTS, why,
		                             sizeof why);
		if (n <= 0) {
			rec_err("pebs: %s", why[0] ? why : "no PEBS events");
			return -1;
		}
		if (pmu_pebs_attrs_format(a, kinds, (size_t)n, o->pmu_attrs, sizeof o->pmu_attrs) < 0) {
			rec_err("pebs: too many events for %s", CT_ENV_PMU_ATTRS);
			return -1;
		}
		rec_info(2, "%s=%s", CT_ENV_PMU_ATTRS, o->pmu_attrs);
	}

	choose_watchpoints(o);
	if (!strcmp(o->sampler_used, "soft"))
		choose_soft_path(o);
	return 0;
}
