/* Shared runtime part of the hardware samplers (pebs, ibs):
 * sampler_pmu_common.c.  Private to sampler_pebs.c and sampler_ibs.c.
 *
 * Per thread, on the thread: one or more perf events opened with
 * pid 0 / cpu -1 (the calling thread), the first one (the "leader", kept in
 * t->samp_fd / t->samp_map like the generic path) owning the ring, the
 * others redirected into it with PERF_EVENT_IOC_SET_OUTPUT; every event
 * signals the thread itself on each sample (wakeup_events = 1, O_ASYNC,
 * F_SETSIG, F_SETOWN_EX F_OWNER_TID).  The handler drains the one ring
 * through pmu_conv_on_rec() (record/common/pmu_sample.c) into rt_sample()
 * and LOST records. */
#ifndef CT_SAMPLER_PMU_H
#define CT_SAMPLER_PMU_H

#include "rt.h"
#include "pmu_sample.h"

/* Opens an attr on the calling thread: pmu_open_precise or pmu_open_ibs
 * (same signature); may lower a->precise_ip or clear a->exclude_kernel. */
typedef int (*rt_pmu_open_fn)(struct perf_event_attr *a, pid_t tid, int cpu, int group_fd,
                              unsigned long flags);

/* Open attrs[0..n) on the calling thread (t == rt_self) sharing one ring,
 * kinds[i] = PMU_KIND_* of each, mode = PMU_CONV_PEBS / PMU_CONV_IBS.
 * Events after the first that fail to open are left out (logged once per
 * process).  Returns 0, or -errno when the first event cannot be used. */
int rt_pmu_thread_start(struct rt_thread *t, const struct perf_event_attr *attrs,
                        const uint8_t *kinds, size_t n, int mode, rt_pmu_open_fn open_fn,
                        const char *name);
void rt_pmu_thread_stop(struct rt_thread *t, int self);
/* Returns 1 if si is the signal of one of t's events (the ring is then
 * drained), 0 otherwise. */
int rt_pmu_on_signal(struct rt_thread *t, siginfo_t *si, void *uc);

/* The period to configure: COMMTRACE_PERIOD when set (events / ops),
 * else RT_PMU_PERIOD_DEFAULT (rt_cfg.period defaults to the soft
 * sampler's microseconds, far too small a count for a PMU event). */
#define RT_PMU_PERIOD_DEFAULT 500000
uint64_t rt_pmu_period(void);

/* Close every extra event fd in a forked child (pthread_atfork child
 * handler, registered once by rt_pmu_process_setup). */
void rt_pmu_process_setup(void);

#endif
