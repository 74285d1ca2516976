/* Which samplers work on this machine (pmu_probe_sampler, in
 * record/common/pmu_pfm.c, probes all four), how many debug registers open here
 * (probed by opening perf breakpoints, as the runtime will), --list-samplers
 * and the choice made by --sampler auto. */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "commrec.h"
#include "commtrace.h"
#include "pmu.h"
#include "pmu_sample.h"

#define SOFT_PERIOD_DEFAULT 1000      /* CPU microseconds */
#define EVENT_PERIOD_DEFAULT 500000   /* events (pebs, ibs) or accesses (inst) */

static int perf_open(struct perf_event_attr *a)
{
	return (int)syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

bool rec_sampler_works(const char *name, char *why, size_t cap)
{
	why[0] = '\0';
	bool ok = pmu_probe_sampler(name, why, cap);
	if (!why[0])
		snprintf(why, cap, ok ? "works" : "does not work here");
	return ok;
}

static volatile uint64_t wp_probe_words[CT_WP_MAX];

int rec_probe_watchpoints(int want)
{
	int fds[CT_WP_MAX], n = 0;
	if (want > CT_WP_MAX)
		want = CT_WP_MAX;
	for (; n < want; n++) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_RW;
		a.bp_addr = (uint64_t)(uintptr_t)&wp_probe_words[n];
		a.bp_len = HW_BREAKPOINT_LEN_8;
		a.sample_period = 1;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		a.disabled = 1;
		fds[n] = perf_open(&a);
		if (fds[n] < 0) {
			rec_info(2, "watchpoint probe: breakpoint %d: %s", n, strerror(errno));
			break;
		}
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return n;
}

void rec_list_samplers(void)
{
	static const char *const names[] = {"pebs", "ibs", "soft", "inst"};
	const char *pick = NULL;
	printf("%-8s %-6s %s\n", "SAMPLER", "WORKS", "WHY, AND WHAT TO DO");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char why[512];
		bool ok = rec_sampler_works(names[i], why, sizeof why);
		if (ok && !pick && strcmp(names[i], "inst"))
			pick = names[i];
		printf("%-8s %-6s %s\n", names[i], ok ? "yes" : "no", why);
	}
	printf("%-8s %-6s %s\n", "auto", pick ? "yes" : "no",
	       pick ? pick : "no sampler works here (see the reasons above)");
	int wp = rec_probe_watchpoints(CT_WP_MAX);
	if (wp)
		printf("watchpoints: %d debug register%s per thread\n", wp, wp == 1 ? "" : "s");
	else
		printf("watchpoints: none (perf breakpoints cannot be opened here; "
		       "recording works without them, use -w 0 to silence this)\n");
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

	bool soft = !strcmp(o->sampler_used, "soft");
	bool inst = !strcmp(o->sampler_used, "inst");
	o->period_unit = soft ? "us-cpu" : inst ? "accesses" : "events";
	o->period_used = o->period ? o->period : soft ? SOFT_PERIOD_DEFAULT : EVENT_PERIOD_DEFAULT;
	if (o->full)
		o->period_used = 1;

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

	/* Watchpoints: probe what the machine gives; full traces need none. */
	int want = o->watchpoints >= 0 ? o->watchpoints : (o->full ? 0 : CT_WP_MAX);
	o->wp_available = rec_probe_watchpoints(CT_WP_MAX);
	if (want > o->wp_available) {
		if (o->watchpoints >= 0)
			rec_warn("only %d of the %d watchpoints asked for can be opened here; using %d",
			         o->wp_available, want, o->wp_available);
		else
			rec_info(1, "watchpoints: %d usable here", o->wp_available);
	}
	o->wp_used = want < o->wp_available ? want : o->wp_available;
	return 0;
}
