/* The `soft` sampler: per-thread CPU-time sampling, any Linux, no PMU.
 *
 * Three paths.  The two perf ones share one sample conversion
 * (soft_convert, soft_sample_access) on the runtime's one perf path:
 *
 * Where no watchpoint is armed (-w 0, or the probe says they do not fire),
 * or the watchpoints are per CPU (COMMTRACE_WP_CPU=1: commrec's per-CPU
 * probe): one sampling event per CPU (inherited task-clock; CPU-wide
 * cpu-clock where COMMTRACE_SOFT_CPU_WIDE=1 asks and it opens), opened once, no signal, drained and decoded
 * by the writer thread (rt_cpusamp.c), which also arms the per-CPU
 * watchpoints (rt_cpuwp.c): nothing done in the program's threads beyond
 * the timer interrupt.
 *
 * Where watchpoints are armed per thread: a perf task-clock event per thread
 * (sample_period = period in ns, user registers in every sample,
 * CLOCK_MONOTONIC timestamps), drained in the thread's own signal handler
 * by the one perf sample path (rt_perf.c), because the online part of
 * Algorithm 1 arms that thread's debug registers at the sample
 * (rt_sample.c).  At the default period a thread starts on its timer and
 * gets its event and registers when its context switches leave room for
 * them, and goes back to the timer where they stop doing so (start_late,
 * rt_check_switch_cost).
 *
 * With COMMTRACE_SOFT_TIMER=1 (commrec sets it where its probe finds the
 * perf events costly at context switches, record/switch_probe.c), or where
 * perf_event_open is denied (EACCES, EPERM, ENOSYS, ENOENT: paranoid
 * settings, seccomp, old kernels): a POSIX per-thread CPU-time timer
 * (CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID to the thread), no cost at a
 * context switch, and the registers of the interrupted context decoded in
 * the handler (dec_sample_access). */
#include "rt.h"
#include "soft_sample.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int use_timer;     /* 1 after the first perf failure */
static _Atomic int timer_logged;
static _Atomic int timer_why;     /* errno of the perf failure */

static size_t soft_events(struct perf_event_attr *attrs, uint8_t *kinds, size_t max)
{
	(void)max;
	soft_sample_attr(&attrs[0], rt_cfg.period * 1000);
	kinds[0] = PMU_KIND_UNKNOWN;
	return 1;
}

static int soft_open(struct perf_event_attr *a, pid_t pid, int cpu, int group_fd,
                     unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group_fd, flags);
}

/* No data address in the sample: decoded from the registers and the code
 * at the ip (late when the writer decodes it). */
static void soft_convert(struct rt_thread *t, const struct perf_rec *r, struct rt_sample_in *s)
{
	s->period = t->period_ns;
	s->skip = soft_sample_access(r, t->samp_fmt.regs_user_mask, t->fs_base,
	                             atomic_load(&t->samp_by_writer), &s->acc);
}

static int timer_set(struct rt_thread *t)
{
	struct itimerspec its;
	its.it_interval.tv_sec = (time_t)(t->period_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(t->period_ns % 1000000000ull);
	its.it_value = its.it_interval;
	return timer_settime(t->timer, 0, &its, NULL);
}

/* The thread's CPU-time timer, not yet set; 0 or -errno. */
static int timer_make(struct rt_thread *t)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = rt_cfg.sig;
	sev.sigev_value.sival_int = (int)(RT_SIG_MAGIC | 1);
	sev._sigev_un._tid = t->tid;
	return timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) < 0 ? -errno : 0;
}

/* Set the thread's timer going (on the thread); 0 or -errno. */
static int timer_run(struct rt_thread *t)
{
	/* the handler reads timer_cpu_prev once it sees timer_ok: set before */
	t->timer_cpu_prev = rt_thread_cpu_ns();
	atomic_signal_fence(memory_order_release);
	return timer_set(t) < 0 ? -errno : 0;
}

/* The thread's timer made and set going (timer_ok); 0 or -errno. */
static int timer_begin(struct rt_thread *t)
{
	int rc = timer_make(t);
	if (rc < 0)
		return rc;
	if ((rc = timer_run(t)) < 0) {
		timer_delete(t->timer);
		return rc;
	}
	t->timer_ok = true;
	return 0;
}

/* The thread's timer stopped (async-signal-safe: timer_settime). */
static void timer_stop(struct rt_thread *t)
{
	struct itimerspec off;
	memset(&off, 0, sizeof off);
	timer_settime(t->timer, 0, &off, NULL);
}

static int timer_start(struct rt_thread *t, int why_errno)
{
	int rc = timer_begin(t);
	if (rc == 0)
		rt_status_timer_thread(why_errno);
	return rc;
}

/* Where commrec measured what a thread's own sampling event costs at a
 * context switch (debug registers armed, the default period): the thread
 * starts on its timer, without perf events of its own, and asks for its
 * sampling event and registers when its switches leave room for them
 * (rt_check_switch_cost); the writer opens them (rt_soft_open_late) and
 * its handler takes them (adopt_events).  A thread that switches often
 * never has any: even closed, they would leave the kernel a perf context
 * to switch with the thread (0.25 to 0.3 us per switch measured here). */
static bool start_late(struct rt_thread *t)
{
	if (!rt_cfg.soft_event_switch_ns || !rt_cfg.wp_budget || rt_cfg.watchpoints <= 0 ||
	    rt_cfg.wp_soft)
		return false;   /* (no budget: events from the start) */
	if (timer_begin(t) < 0)
		return false;
	atomic_store(&t->ev_state, RT_EV_TIMER);
	return true;
}

/* Samples by its own perf event (and its period is the event's): opened
 * at its start, or taken from the writer. */
static bool on_event(const struct rt_thread *t)
{
	int st = atomic_load(&t->ev_state);
	return t->samp_fd >= 0 && (st == RT_EV_AT_START || st == RT_EV_ADOPTED);
}

/* In the thread's handler: the events the writer opened for it; its timer
 * stopped (timer_settime is async-signal-safe), its sampling event
 * enabled, its registers in use.  If the event does not enable (then it is
 * closed), the thread stays on its timer, with the registers. */
static void adopt_events(struct rt_thread *t)
{
	timer_stop(t);
	int rc = rt_perf_thread_enable(t);
	if (atomic_load(&t->stopped)) {
		/* the writer stopped the thread meanwhile (it sets stopped before
		 * it disables): its disable may have come before this enable */
		if (rc == 0)
			rt_perf_thread_stop(t, 0);
		atomic_store(&t->ev_state, RT_EV_DONE);
		return;
	}
	if (rc < 0)
		timer_run(t);
	t->nwp = t->ev_nwp;
	atomic_store(&t->ev_state, rc < 0 ? RT_EV_DONE : RT_EV_ADOPTED);
}

/* In the thread's handler, after the samples of its event: the timer
 * from now on, the event closed, for good. */
static void leave_event(struct rt_thread *t)
{
	t->samp_leave = false;
	if (atomic_load(&t->stopped) || !t->timer_ok)
		return;
	if (timer_run(t) == 0) {
		rt_perf_thread_stop(t, 1);
		atomic_store(&t->ev_state, RT_EV_DONE);
	}
}

void rt_soft_open_late(void)
{
	uint32_t hw = atomic_load(&rt_threads_hw);
	for (uint32_t i = 0; i < hw; i++) {
		struct rt_thread *t = atomic_load(&rt_threads[i]);
		int expect = RT_EV_WANTED;
		if (!t || !atomic_compare_exchange_strong(&t->ev_state, &expect, RT_EV_OPENING))
			continue;
		int rc = rt_perf_thread_open(t);
		if (rc < 0) {
			rt_log(2, "thread %u: its perf sampling event did not open (%s): it stays on its "
			       "timer, without watchpoints", t->index, strerror(-rc));
			atomic_store(&t->ev_state, RT_EV_DONE);
			continue;
		}
		rt_wp_open_late(t);
		atomic_store_explicit(&t->ev_state, RT_EV_READY, memory_order_release);
	}
}

/* At the thread's stop: no events opened for it from now on (a writer
 * opening them is waited for; what it opened the stop closes). */
static void settle_late(struct rt_thread *t)
{
	for (;;) {
		int st = atomic_load(&t->ev_state);
		if (st == RT_EV_OPENING) {
			sched_yield();
			continue;
		}
		if ((st != RT_EV_TIMER && st != RT_EV_WANTED) ||
		    atomic_compare_exchange_strong(&t->ev_state, &st, RT_EV_DONE))
			return;
	}
}

/* The inherited path where it applies: no timer asked for, and either no
 * watchpoints or watchpoints per CPU (commrec's probe: they open and fire
 * there), which the writer arms (rt_cpuwp.c).  A failure leaves the
 * per-thread path; watchpoints asked for per CPU that cannot be had are
 * none (commrec measured no switch cost for per-thread registers then, so
 * no budget would bound theirs). */
static int soft_process_start(void)
{
	if (rt_cfg.soft_timer || (rt_cfg.watchpoints > 0 && (!rt_cfg.wp_cpu || !rt_board_ok)))
		return 0;
	bool cpu_wp = rt_cfg.watchpoints > 0;
	int rc = cpu_wp ? rt_cpuwp_open((unsigned)rt_cfg.watchpoints) : 0;
	if (rc < 0)
		rt_log(2, "soft sampler: watchpoints per CPU unavailable (%s): sampling without "
		       "watchpoints", strerror(-rc));
	rc = rt_cpusamp_open(rt_cfg.period * 1000);
	if (rc < 0) {
		rt_log(2, "soft sampler: per-CPU events unavailable (%s%s): one event per thread%s",
		       rt_cfg.soft_cpu_wide ? "CPU-wide and inherited ones: " : "", strerror(-rc),
		       cpu_wp ? ", without watchpoints" : "");
		rt_cpuwp_forget();
	}
	if (cpu_wp && !rt_cpuwp_active())
		rt_cfg.watchpoints = 0;
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
		if (start_late(t))
			return 0;
		int rc = rt_perf_thread_start(t);
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
	int rc = timer_start(t, atomic_load(&timer_why));
	/* timers chosen (not forced by a perf denial) but none to be had, e.g.
	 * RLIMIT_SIGPENDING: the perf events are the next best */
	if (rc < 0 && !atomic_load(&use_timer) && rt_perf_thread_start(t) == 0) {
		rt_log(1, "thread %u: no POSIX CPU timer (%s): sampled by a perf task-clock event",
		       t->index, strerror(-rc));
		return 0;
	}
	return rc;
}

static void soft_thread_stop(struct rt_thread *t, int self)
{
	settle_late(t);
	if (t->timer_ok) {
		timer_stop(t);
		if (self) {
			timer_delete(t->timer);
			t->timer_ok = false;
		}
	}
	rt_perf_thread_stop(t, self);
}

static int soft_on_signal(struct rt_thread *t, siginfo_t *si, void *uc)
{
	if (atomic_load_explicit(&t->ev_state, memory_order_acquire) == RT_EV_READY)
		adopt_events(t);
	if (si->si_code != SI_TIMER) {
		int rc = rt_perf_on_signal(t, si, uc);
		if (t->samp_leave)
			leave_event(t);
		return rc;
	}
	if (!t->timer_ok)
		return 1;
	struct rt_sample_in s;
	memset(&s, 0, sizeof s);
	struct dec_regs regs;
	memset(&regs, 0, sizeof regs);
	dec_regs_from_ucontext(&regs, uc);
	regs.fs_base = t->fs_base;
	regs.cpu_clock = true;
	s.time = rt_now();
	s.ip = regs.rip;
	s.cpu = (uint32_t)sched_getcpu();
	/* The timer fires at the scheduler tick, not every period (seen: one
	 * expiration per 5.8 ms for 1 ms asked, overruns undercounted): the
	 * sample stands for the CPU time measured since the last one. */
	uint64_t cpu = rt_thread_cpu_ns();
	s.period = cpu - t->timer_cpu_prev;
	t->timer_cpu_prev = cpu;
	rt_status_timer_sample(s.period);
	if (rt_sample_is_runtime(s.ip, 0, 0, 0)) {
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

/* Throttling: twice the period, for the perf event (from its next sample
 * on: samples still in the ring when it changes are recorded with the new
 * one) or the timer. */
static uint64_t soft_lengthen_period(struct rt_thread *t)
{
	if (on_event(t)) {
		uint64_t p = rt_perf_lengthen_period(t);
		if (p)
			t->period_ns = p;
		return p;
	}
	uint64_t p = t->period_ns * 2, old = t->period_ns;
	if (!t->timer_ok || p > rt_cfg.period * 1000 * RT_PERF_THROTTLE_MAX)
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
	.process_start = soft_process_start,
	.thread_start = soft_thread_start,
	.thread_stop = soft_thread_stop,
	.on_signal = soft_on_signal,
	.lengthen_period = soft_lengthen_period,
	.perf_events = soft_events,
	.perf_open = soft_open,
	.perf_convert = soft_convert,
};
