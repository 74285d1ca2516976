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
 * kernel honours exclude_kernel); every thread reuses the result. */
#include "sampler_pmu.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pmu.h"

static struct perf_event_attr ibs_attr;
static bool ibs_ready;

static int ibs_process_init(void)
{
	char why[512];
	struct perf_event_attr a;
	if (pmu_ibs_attr(rt_pmu_period(), &a, why, sizeof why) < 0) {
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
	ibs_ready = true;
	rt_pmu_process_setup();
	return 0;
}

static int ibs_thread_start(struct rt_thread *t)
{
	if (!ibs_ready)
		return -ENOENT;
	static const uint8_t kind = PMU_KIND_UNKNOWN;   /* each sample says */
	return rt_pmu_thread_start(t, &ibs_attr, &kind, 1, PMU_CONV_IBS, pmu_open_ibs, "ibs");
}

static void ibs_thread_stop(struct rt_thread *t, int self)
{
	rt_pmu_thread_stop(t, self);
}

static int ibs_on_signal(struct rt_thread *t, siginfo_t *si, void *uc)
{
	return rt_pmu_on_signal(t, si, uc);
}

const struct sampler_ops rt_sampler_ibs = {
	.name = "ibs",
	.process_init = ibs_process_init,
	.thread_start = ibs_thread_start,
	.thread_stop = ibs_thread_stop,
	.on_signal = ibs_on_signal,
	/* not on the generic rt_perf path (see sampler_pmu_common.c) */
	.fill_attr = NULL,
	.rec_access = NULL,
	.rec_period = NULL,
};
