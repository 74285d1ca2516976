/* The `soft` sampler: per-thread CPU-time sampling, any Linux, no PMU.
 *
 * Three paths, one sample conversion (rt_perf_rec, soft_sample_access):
 *
 * Where no watchpoint is armed (-w 0, or the probe says they do not fire):
 * one inherited task-clock event per CPU, opened once, no signal, drained
 * and decoded by the writer thread (rt_cpusamp.c): no per-switch hrtimer
 * and nothing done in the program's threads beyond the timer interrupt.
 *
 * Where watchpoints are armed: a perf task-clock event per thread
 * (sample_period = period in ns, user registers in every sample,
 * CLOCK_MONOTONIC timestamps), drained in the thread's own signal handler
 * by the generic perf path, because the online part of Algorithm 1 arms
 * that thread's debug registers at the sample (rt_sample.c).
 *
 * Where perf_event_open is denied (EACCES, EPERM,
 * ENOSYS, ENOENT: paranoid settings, seccomp, old kernels) or when
 * COMMTRACE_SOFT_TIMER=1: a POSIX per-thread CPU-time timer
 * (CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID to the thread) and the
 * registers of the interrupted context.  Either way the data address is
 * reconstructed by decoding (dec_sample_access). */
#include "rt.h"
#include "soft_sample.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SOFT_THROTTLE_MAX 1024     /* longest period: this times the configured one */

static _Atomic int use_timer;     /* 1 after the first perf failure */
static _Atomic int timer_logged;
static _Atomic int timer_why;     /* errno of the perf failure */

static void soft_fill_attr(struct perf_event_attr *a)
{
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = rt_cfg.period * 1000;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
	                 PERF_SAMPLE_REGS_USER;
	a->sample_regs_user = DEC_PERF_REGS_MASK;
}

static int soft_rec_access(struct rt_thread *t, const struct perf_rec *r, struct dec_access *a)
{
	return soft_sample_access(r, t->samp_fmt.regs_user_mask, t->fs_base,
	                          atomic_load(&t->samp_by_writer), a);
}

static uint64_t soft_rec_period(struct rt_thread *t, const struct perf_rec *r)
{
	(void)r;
	return t->period_ns;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int timer_set(struct rt_thread *t)
{
	struct itimerspec its;
	its.it_interval.tv_sec = (time_t)(t->period_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(t->period_ns % 1000000000ull);
	its.it_value = its.it_interval;
	return timer_settime(t->timer, 0, &its, NULL);
}

static int timer_start(struct rt_thread *t, int why_errno)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = rt_cfg.sig;
	sev.sigev_value.sival_int = (int)(RT_SIG_MAGIC | 1);
	sev._sigev_un._tid = t->tid;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) < 0)
		return -errno;
	if (timer_set(t) < 0) {
		int e = errno;
		timer_delete(t->timer);
		return -e;
	}
	t->timer_ok = true;
	t->timer_cpu_prev = thread_cpu_ns();
	rt_status_timer_thread(why_errno);
	return 0;
}

/* The inherited path where it applies: no watchpoints (their arming runs
 * in the sampled thread, at its sample) and no timer asked for.  A failure
 * leaves the per-thread path. */
static int soft_process_start(void)
{
	if (rt_cfg.soft_timer || rt_cfg.watchpoints > 0)
		return 0;
	int rc = rt_cpusamp_open(rt_cfg.period * 1000);
	if (rc < 0)
		rt_log(2, "soft sampler: inherited per-CPU events unavailable (%s): one event per thread",
		       strerror(-rc));
	return 0;
}

static int soft_thread_start(struct rt_thread *t)
{
	t->period_ns = rt_cfg.period * 1000;
	if (rt_cpusamp_active()) {
		t->samp_fmt = *rt_cpusamp_fmt();
		atomic_store(&t->samp_by_writer, true);
		return 0;
	}
	if (!rt_cfg.soft_timer && !atomic_load(&use_timer)) {
		int rc = rt_perf_thread_start(t, &rt_sampler_soft);
		if (rc == 0)
			return 0;
		if (rc != -EACCES && rc != -EPERM && rc != -ENOSYS && rc != -ENOENT && rc != -EOPNOTSUPP)
			rt_log(1, "thread %u: perf task-clock sampling failed (%s): using a CPU timer",
			       t->index, strerror(-rc));
		atomic_store(&timer_why, -rc);
		atomic_store(&use_timer, 1);
		if (!atomic_exchange(&timer_logged, 1))
			rt_log(2, "perf_event_open denied (%s): soft sampler uses POSIX CPU timers",
			       strerror(-rc));
	}
	return timer_start(t, atomic_load(&timer_why));
}

static void soft_thread_stop(struct rt_thread *t, int self)
{
	if (t->timer_ok) {
		struct itimerspec off;
		memset(&off, 0, sizeof off);
		timer_settime(t->timer, 0, &off, NULL);
		if (self) {
			timer_delete(t->timer);
			t->timer_ok = false;
		}
	}
	rt_perf_thread_stop(t, self);
}

static int soft_on_signal(struct rt_thread *t, siginfo_t *si, void *uc)
{
	if (si->si_code != SI_TIMER)
		return rt_perf_on_signal(t, si, uc, &rt_sampler_soft);
	if (!t->timer_ok)
		return 1;
	struct rt_sample_in s;
	memset(&s, 0, sizeof s);
	struct dec_regs regs;
	memset(&regs, 0, sizeof regs);
	dec_regs_from_ucontext(&regs, uc);
	regs.fs_base = t->fs_base;
	s.time = rt_now();
	s.ip = regs.rip;
	s.cpu = (uint32_t)sched_getcpu();
	/* The timer fires at the scheduler tick, not every period (seen: one
	 * expiration per 5.8 ms for 1 ms asked, overruns undercounted): the
	 * sample stands for the CPU time measured since the last one. */
	uint64_t cpu = thread_cpu_ns();
	s.period = cpu - t->timer_cpu_prev;
	t->timer_cpu_prev = cpu;
	rt_status_timer_sample(s.period);
	if (s.ip >= rt_text_lo && s.ip < rt_text_hi) {
		t->skip_runtime++;
		return 1;
	}
	s.skip = dec_sample_access(&regs, &s.acc);
	if (s.skip == 0)
		s.acc.flags |= CT_SAMPLE_RECONSTRUCTED;
	rt_sample(t, &s);
	t->hnd_ns += rt_now() - s.time;
	t->hnd_runs++;
	return 1;
}

/* Throttling: twice the period, for the perf event (PERF_EVENT_IOC_PERIOD,
 * from its next sample on) or the timer.  Samples still in the perf ring
 * when the period changes are recorded with the new one. */
static uint64_t soft_lengthen_period(struct rt_thread *t)
{
	uint64_t p = t->period_ns * 2, old = t->period_ns;
	if (p > rt_cfg.period * 1000 * SOFT_THROTTLE_MAX)
		return 0;
	if (t->samp_fd >= 0) {
		if (ioctl(t->samp_fd, PERF_EVENT_IOC_PERIOD, &p) < 0)
			return 0;
		t->period_ns = p;
		return p;
	}
	if (!t->timer_ok)
		return 0;
	t->period_ns = p;
	if (timer_set(t) < 0) {
		t->period_ns = old;
		return 0;
	}
	return p;
}

const struct sampler_ops rt_sampler_soft = {
	.name = "soft",
	.process_init = NULL,
	.process_start = soft_process_start,
	.thread_start = soft_thread_start,
	.thread_stop = soft_thread_stop,
	.on_signal = soft_on_signal,
	.fill_attr = soft_fill_attr,
	.rec_access = soft_rec_access,
	.rec_period = soft_rec_period,
	.lengthen_period = soft_lengthen_period,
};
