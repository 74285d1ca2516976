/* The `pebs` sampler: Intel precise memory sampling.
 *
 * Two events per thread (loads and stores: MEM_INST_RETIRED.ALL_LOADS /
 * ALL_STORES or what pmu_pebs_attrs_kinds picks for this core, or the
 * COMMTRACE_EVENTS spec), each sampling every COMMTRACE_PERIOD events, the
 * stores event writing into the loads event's ring (SET_OUTPUT).  The
 * launcher encodes the events with libpfm4 and passes them in
 * COMMTRACE_PMU_ATTRS (pmu_pebs_attrs_parse): the runtime does not link
 * libpfm4, which would cost every recorded process about 2 MB.  The data
 * address is the PMU's (CT_SAMPLE_EXACT); length and kind come from
 * decoding the instruction at the precise ip (pmu_pebs_sample in
 * record/common/pmu_sample.c).
 *
 * precise_ip is probed once, in process_init, on the main thread: the
 * highest level each event opens with (pmu_open_precise steps 3 -> 2 -> 1);
 * every thread then opens with that level.  The events are opened, drained
 * and filtered by the one perf sample path (rt_perf.c); this file is their
 * converter. */
#include "rt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmu.h"
#include "rtconfig.h"

static struct perf_event_attr pebs_attr[PMU_CONV_MAX_EVENTS];
static uint8_t pebs_kind[PMU_CONV_MAX_EVENTS];
static size_t pebs_n;

static int pebs_process_init(void)
{
	char why[512];
	struct perf_event_attr a[PMU_CONV_MAX_EVENTS];
	uint8_t k[PMU_CONV_MAX_EVENTS];
	int n = pmu_pebs_attrs_parse(getenv(CT_ENV_PMU_ATTRS), a, k, PMU_CONV_MAX_EVENTS, why,
	                             sizeof why);
	if (n <= 0) {
		rt_log(1, "pebs: %s: %s", CT_ENV_PMU_ATTRS, why[0] ? why : "no PEBS events");
		return -ENOENT;
	}
	/* Probe each event's precise_ip here, once, with the calling thread as
	 * target; keep the events that open. */
	int first_err = 0;
	pebs_n = 0;
	for (int i = 0; i < n; i++) {
		unsigned want = a[i].precise_ip;
		int fd = pmu_open_precise(&a[i], 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			if (!first_err)
				first_err = e;
			rt_log(1, "pebs: event %d of %d (config %#llx) does not open: %s%s", i + 1, n,
			       (unsigned long long)a[i].config, strerror(e),
			       e == EACCES || e == EPERM ? " (perf_event_paranoid or seccomp)" : "");
			continue;
		}
		close(fd);
		rt_log(2, "pebs: event %d (config %#llx, period %llu): precise_ip %u%s", i + 1,
		       (unsigned long long)a[i].config, (unsigned long long)a[i].sample_period,
		       (unsigned)a[i].precise_ip, a[i].precise_ip < want ? " (lowered)" : "");
		pebs_attr[pebs_n] = a[i];
		pebs_kind[pebs_n] = k[i];
		pebs_n++;
	}
	if (!pebs_n)
		return -(first_err ? first_err : ENOENT);
	return 0;
}

static size_t pebs_events(struct perf_event_attr *attrs, uint8_t *kinds, size_t max)
{
	size_t n = pebs_n < max ? pebs_n : max;
	memcpy(attrs, pebs_attr, n * sizeof *attrs);
	memcpy(kinds, pebs_kind, n);
	return n;
}

/* The address is the PMU's, length and kind decoded at the precise ip. */
static void pebs_convert(struct rt_thread *t, const struct perf_rec *r, struct rt_sample_in *s)
{
	struct pmu_sample p;
	pmu_pebs_sample(&t->samp_conv, r, &p);
	rt_sample_from_pmu(&p, s);
}

const struct sampler_ops rt_sampler_pebs = {
	.name = "pebs",
	.process_init = pebs_process_init,
	.thread_start = rt_perf_thread_start,  /* after a successful process_init only */
	.thread_stop = rt_perf_thread_stop,
	.on_signal = rt_perf_on_signal,
	.lengthen_period = rt_perf_lengthen_period,
	.perf_events = pebs_events,
	.perf_open = pmu_open_precise,
	.perf_convert = pebs_convert,
};
