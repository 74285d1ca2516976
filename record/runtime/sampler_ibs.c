/* The `ibs` sampler: AMD instruction-based sampling of ops.
 *
 * One ibs_op event per thread (pmu_ibs_attr: every COMMTRACE_PERIOD
 * dispatched ops when the PMU offers cnt_ctl, else cycles), raw samples
 * decoded with ibs_decode_raw (pmu_ibs_sample in
 * record/common/pmu_sample.c): ops that are neither loads nor stores, or
 * have no valid data address, are counted as SKIPPED
 * CT_SKIP_NOT_LOAD_STORE; the address is IBS's (CT_SAMPLE_EXACT); the
 * length is IbsOpMemWidth, or the decoded instruction's when IBS gives none.
 *
 * The attr is probed once in process_init (pmu_open_ibs: whether this
 * kernel honours exclude_kernel); every thread reuses the result.  The
 * event is opened, drained and filtered by the one perf sample path
 * (rt_perf.c); this file is its converter. */
#include "rt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmu.h"
#include "rtconfig.h"

/* Ops per sample: COMMTRACE_PERIOD when set, else this (rt_cfg.period
 * defaults to the soft sampler's microseconds, far too small a count). */
#define IBS_PERIOD_DEFAULT 500000

static struct perf_event_attr ibs_attr;

static uint64_t ibs_period(void)
{
	const char *e = getenv(CT_ENV_PERIOD);
	return e && *e && rt_cfg.period ? rt_cfg.period : IBS_PERIOD_DEFAULT;
}

static int ibs_process_init(void)
{
	char why[512];
	struct perf_event_attr a;
	if (pmu_ibs_attr(ibs_period(), &a, why, sizeof why) < 0) {
		rt_log(1, "ibs: %s", why[0] ? why : "no IBS op PMU");
		return -ENOENT;
	}
	if (why[0])
		rt_log(2, "ibs: %s", why);
	int fd = pmu_open_ibs(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		rt_log(1, "ibs: the IBS op event does not open on this thread: %s%s", strerror(e),
		       e == EINVAL ? " (kernels that only allow CPU-wide IBS events refuse per-thread ones)"
		                   : "");
		return -e;
	}
	close(fd);
	if (!a.exclude_kernel)
		rt_log(2, "ibs: this kernel cannot filter kernel samples: they are dropped here");
	ibs_attr = a;     /* exclude_kernel as the probe settled it: no retry per thread */
	return 0;
}

static size_t ibs_events(struct perf_event_attr *attrs, uint8_t *kinds, size_t max)
{
	(void)max;
	attrs[0] = ibs_attr;
	kinds[0] = PMU_KIND_UNKNOWN;    /* each sample says */
	return 1;
}

/* Everything from the raw IBS op payload (address, width, load/store). */
static void ibs_convert(struct rt_thread *t, const struct perf_rec *r, struct rt_sample_in *s)
{
	struct pmu_sample p;
	pmu_ibs_sample(&t->samp_conv, r, &p);
	rt_sample_from_pmu(&p, s);
}

const struct sampler_ops rt_sampler_ibs = {
	.name = "ibs",
	.process_init = ibs_process_init,
	.thread_start = rt_perf_thread_start,  /* after a successful process_init only */
	.thread_stop = rt_perf_thread_stop,
	.on_signal = rt_perf_on_signal,
	.lengthen_period = rt_perf_lengthen_period,
	.perf_events = ibs_events,
	.perf_open = pmu_open_ibs,
	.perf_convert = ibs_convert,
};
