/* Signals of the runtime, without disturbing the program's.
 *
 *   rt_cfg.sig (SIGRTMIN+7 unless COMMTRACE_SIGNAL says otherwise): sampler
 *       signals (perf fd O_ASYNC with F_SETSIG: si_code POLL_*, si_fd; or the
 *       POSIX CPU timer: SI_TIMER with our tag in si_value) and the O_ASYNC
 *       watchpoint fallback.
 *   SIGTRAP: watchpoint traps with si_code TRAP_PERF and our tag in
 *       si_perf_data.
 *   SIGIO: what the kernel sends instead of rt_cfg.sig when the real-time
 *       signal queue is full (RLIMIT_SIGPENDING; si_code SI_KERNEL, or
 *       SI_USER from pid 0 when not even its siginfo fits).  Its
 *       default action ends the process, so it is always handled: this
 *       thread's sample ring is drained, and the signal goes on to the
 *       program's own SIGIO handler if it has one (a plain SIGIO of the
 *       program's O_ASYNC descriptors looks the same); without one a SIGIO
 *       from the kernel is dropped, one sent by a process (kill) keeps its
 *       default action.
 *   SIGSEGV SIGBUS SIGILL SIGFPE SIGABRT SIGSYS, and the other signals
 *       whose default action terminates (SIGTERM SIGINT SIGHUP SIGQUIT
 *       SIGPIPE SIGALRM SIGXCPU SIGXFSZ SIGUSR1 SIGUSR2 SIGVTALRM SIGPROF):
 *       only while the program has no handler of its own: flush what can
 *       be flushed, then the default action (re-raised).
 *
 * sigaction() and signal() are interposed: for SIGTRAP and rt_cfg.sig the
 * program's handler is remembered and called from ours for every signal
 * that is not the runtime's; the program always sees its own settings.
 * Our handlers run on a per-thread sigaltstack (mmap'd), unless the program
 * set one itself, with our three signals blocked.
 *
 * Cost: every handler run is counted, and every RT_COST_EVERY-th one timed
 * in thread CPU time (a system call: 2 us on a VM, so not every run).  Once
 * a window of RT_COST_WINDOW_NS of the thread's CPU time has passed, the
 * runs times the mean timed cost, over the window, is the runtime's share of
 * the thread's CPU time; above rt_cfg.throttle percent the sampler doubles
 * the thread's period (a MARKER record of kind throttle says so), and the
 * next window judges the new period.  This bounds what a too short period
 * can cost: signals handled more slowly than they come pile up in the
 * kernel's queue, and each of their handlers makes the thread use more CPU
 * time, which brings more signals (measured on a 2-cpu VM at a 20 us
 * period: a 0.2 s program ran 13 s).  The kernel's part of delivering a
 * signal is not in the measure.
 *
 * The program's signal masks are left alone: a thread that blocks our
 * signal loses its samples meanwhile (the kernel ring may then overflow:
 * LOST records). */
#include "rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

#define RT_COST_EVERY 8                    /* handler runs per timed run */
#define RT_COST_WINDOW_NS 50000000ull      /* thread CPU time per judgement */
#define RT_COST_MIN_TIMED 4                /* timed runs a judgement needs */

static int (*real_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static _Atomic int sigio_logged, throttle_logged;

/* Signals whose default action ends the process: the program's faults, and
 * the usual ways a program gets stopped (Ctrl-C, kill, a closed pipe,
 * limits). */
#define NFATAL 18
static const int fatal_sigs[NFATAL] = {
	SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS,
	SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGXCPU, SIGXFSZ,
	SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF,
};

enum { M_NONE = 0, M_OURS = 1, M_FATAL_OURS = 2, M_FATAL_PROG = 3 };
static _Atomic int managed[_NSIG];
static struct sigaction prog_act[_NSIG];   /* what the program believes is installed */
_Atomic uint8_t rt_fd_ours[65536];

int rt_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction_fn)
		real_sigaction_fn = dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaction_fn) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction_fn(sig, act, old);
}

void rt_block_our_signals(sigset_t *old)
{
	sigset_t s;
	sigemptyset(&s);
	if (rt_cfg.sig)
		sigaddset(&s, rt_cfg.sig);
	sigaddset(&s, SIGTRAP);
	sigaddset(&s, SIGIO);
	pthread_sigmask(SIG_BLOCK, &s, old);
}

/* ---- chaining to the program's handler ---------------------------------------- */

static void die_by(int sig)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	rt_real_sigaction(sig, &dfl, NULL);
	/* pending until our handler returns (sig is blocked in it), then the
	 * default action */
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static void emergency_flush(int sig)
{
	if (!atomic_load(&rt_active) || getpid() != rt_pid)
		return;
	rt_guard++;
	struct rt_thread *t = rt_self;
	if (t) {
		atomic_store(&t->stopped, 1);
		int expect = 0;
		if (atomic_compare_exchange_strong(&t->end_pushed, &expect, 1)) {
			struct ct_record r = { .type = CT_REC_THREAD_END, .time = rt_now() };
			r.u.end.status = sig;
			rt_push(t, &r);
		}
	}
	rt_writer_emergency(sig);
	rt_write_maps();
	atomic_store(&rt_active, 0);
	rt_guard--;
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = prog_act[sig];
	if (a.sa_handler == SIG_IGN)
		return;
	if (a.sa_handler == SIG_DFL) {
		if (sig == SIGTRAP) {        /* default: core dump */
			emergency_flush(sig);
			die_by(sig);
		}
		/* Our real-time signal, or SIGIO, with no program handler: the
		 * default would terminate the program; from the kernel it can
		 * only be a late signal of ours or the queue-full fallback, so
		 * keep the default semantics only for signals sent by a process
		 * (SI_USER from pid 0 is the kernel's, see sigio_fallback). */
		else if ((si->si_code == SI_USER && si->si_pid) || si->si_code == SI_QUEUE ||
		         si->si_code == SI_TKILL) {
			emergency_flush(sig);
			die_by(sig);
		}
		return;
	}
	if (a.sa_flags & SA_RESETHAND) {
		prog_act[sig].sa_handler = SIG_DFL;
		prog_act[sig].sa_flags &= ~SA_SIGINFO;
	}
	sigset_t old;
	pthread_sigmask(SIG_BLOCK, &a.sa_mask, &old);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		a.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- our handlers ------------------------------------------------------------------ */

static bool is_poll_code(int code)
{
	return code >= POLL_IN && code <= POLL_HUP;
}

/* SIGIO from the kernel: maybe the fallback for a signal of ours that did
 * not fit in the queue.  Drain this thread's sample ring as that signal
 * would have; the SIGIO itself is then passed on (it may also be the
 * program's).  True if it drained. */
static bool sigio_fallback(siginfo_t *si, void *uc, struct rt_thread *t)
{
	/* SI_KERNEL; or, when the queue has no room even for the SIGIO's
	 * siginfo, the kernel delivers it as SI_USER from pid 0 */
	bool from_kernel = si->si_code == SI_KERNEL || (si->si_code == SI_USER && si->si_pid == 0);
	if (!from_kernel || !t || atomic_load(&t->stopped) || !t->sampler || t->samp_fd < 0)
		return false;
	siginfo_t as_ours = *si;
	as_ours.si_code = POLL_IN;
	as_ours.si_fd = t->samp_fd;
	t->sampler->on_signal(t, &as_ours, uc);
	if (!atomic_exchange(&sigio_logged, 1))
		rt_log(2, "thread %u: the real-time signal queue was full (the kernel sent SIGIO "
		       "instead): handled", t->index);
	return true;
}

/* The runtime's part of a signal: true when the signal was ours (handled). */
static bool handle_ours(int sig, siginfo_t *si, void *uc, struct rt_thread *t)
{
	if (sig == SIGTRAP) {
		if (si->si_code != TRAP_PERF)
			return false;
		/* siginfo _sigfault: _addr at 16, then _perf._data at 24 */
		uint64_t data;
		memcpy(&data, (char *)si + 24, sizeof data);
		if ((data & 0xffff0000u) != RT_SIG_MAGIC)
			return false;
		if (t && !atomic_load(&t->stopped))
			rt_wp_on_sigtrap(t, si, uc);
		return true;
	}
	if (si->si_code == SI_TIMER && (si->si_value.sival_int & 0xffff0000) == (int)RT_SIG_MAGIC) {
		if (t && !atomic_load(&t->stopped) && t->sampler)
			t->sampler->on_signal(t, si, uc);
		return true;
	}
	if (!is_poll_code(si->si_code))
		return false;
	int fd = si->si_fd;
	if (t && !atomic_load(&t->stopped)) {
		/* the sampler decides whether si_fd is one of its events */
		if (t->sampler && t->sampler->on_signal(t, si, uc))
			return true;
		if (rt_wp_on_async(t, si, uc))
			return true;
	}
	/* a late signal of an event we closed */
	return fd >= 0 && fd < 65536 && atomic_load(&rt_fd_ours[fd]);
}

/* Lengthen t's period (in its signal handler): a MARKER record, and one
 * line on stderr for the whole process.  share: the runtime's share of the
 * thread's CPU time, percent; 0 when the queue was full. */
static void throttle(struct rt_thread *t, uint32_t share)
{
	uint64_t period = t->sampler->lengthen_period(t);
	if (!period)
		return;
	t->throttles++;
	struct ct_record r = { .type = CT_REC_MARKER, .time = rt_now() };
	r.u.marker.kind = CT_MARK_THROTTLE;
	snprintf(r.u.marker.name, sizeof r.u.marker.name, "period=%llu share=%u%%",
	         (unsigned long long)period, share);
	rt_push(t, &r);
	if (atomic_exchange(&throttle_logged, 1))
		return;
	/* the unit of the SAMPLE records' period: ns of CPU time (soft), events */
	const char *unit = strcmp(t->sampler->name, "soft") ? "events" : "ns";
	if (share)
		rt_log(1, "the runtime took %u%% of thread %u's CPU time (limit %u%%, --throttle): its "
		       "sampling period is lengthened to %llu %s (the trace records it)", share,
		       t->index, rt_cfg.throttle, (unsigned long long)period, unit);
	else
		rt_log(1, "thread %u: the real-time signal queue was full: its sampling period is "
		       "lengthened to %llu %s (the trace records it)", t->index,
		       (unsigned long long)period, unit);
}

/* One handler run of ours on t: count it, and judge the window when it is
 * over (see the head of this file).  c0: thread CPU time at the start of
 * the run if it was timed, else 0. */
static void account(struct rt_thread *t, uint64_t c0)
{
	t->cost_runs++;
	if (!c0)
		return;
	uint64_t c1 = rt_thread_cpu_ns();
	if (!t->cost_cpu0 || c0 < t->cost_cpu0) {
		t->cost_cpu0 = c0;
		t->cost_runs = 1;
		t->cost_timed = 0;
		t->cost_ns = 0;
	}
	t->cost_timed++;
	t->cost_ns += c1 - c0;
	uint64_t window = c1 - t->cost_cpu0;
	if (window < RT_COST_WINDOW_NS || t->cost_timed < RT_COST_MIN_TIMED)
		return;
	uint64_t spent = t->cost_ns / t->cost_timed * t->cost_runs;
	uint32_t share = (uint32_t)(spent >= window ? 100 : spent * 100 / window);
	if (share > t->peak_share)
		t->peak_share = share;
	if (rt_cfg.throttle && share > rt_cfg.throttle && t->sampler && t->sampler->lengthen_period &&
	    !atomic_load(&t->stopped))
		throttle(t, share);
	t->cost_cpu0 = c1;
	t->queue_throttled = false;
	t->cost_runs = 0;
	t->cost_timed = 0;
	t->cost_ns = 0;
}

/* A SIGIO fallback: the signals come faster than they are handled, so
 * lengthen t's period at once (once per window), unless the SIGIO may be
 * the program's own (it has a handler for it). */
static void queue_was_full(struct rt_thread *t)
{
	struct sigaction *pa = &prog_act[SIGIO];
	if ((pa->sa_handler == SIG_DFL || pa->sa_handler == SIG_IGN) && rt_cfg.throttle &&
	    t->sampler->lengthen_period && !t->queue_throttled) {
		t->queue_throttled = true;
		throttle(t, 0);
	}
}

static void rt_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	/* guarded: the runtime's own copies (memcpy in the static inst
	 * runtime) must not be recorded as the program's */
	rt_guard++;
	struct rt_thread *t = rt_self;
	if (t)
		atomic_store(&t->in_handler, 1);
	uint64_t c0 = t && (t->cost_runs % RT_COST_EVERY) == 0 ? rt_thread_cpu_ns() : 0;
	bool ours = false, fallback = false;
	if (sig == SIGIO)
		fallback = sigio_fallback(si, uc, t);
	else
		ours = handle_ours(sig, si, uc, t);
	if (t && (ours || fallback))
		account(t, c0);
	if (fallback)
		queue_was_full(t);
	if (t)
		atomic_store(&t->in_handler, 0);
	rt_guard--;
	if (!ours)
		chain(sig, si, uc);
	errno = saved;
}

extern _Atomic int rt_writer_writing;
extern _Atomic uint64_t rt_write_fail_ns;

static void rt_fatal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	if (sig == SIGXFSZ && si->si_code == SI_USER && si->si_pid == getpid() &&
	    (atomic_load(&rt_writer_writing) ||
	     rt_now() - atomic_load(&rt_write_fail_ns) < 2000000000ull)) {
		errno = saved;
		return;     /* the spool hit RLIMIT_FSIZE, not the program */
	}
	if (atomic_load(&managed[sig]) == M_FATAL_OURS) {
		emergency_flush(sig);
		die_by(sig);
	}
	errno = saved;
}

static int install(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, rt_cfg.sig);
	sigaddset(&sa.sa_mask, SIGTRAP);
	sigaddset(&sa.sa_mask, SIGIO);
	return rt_real_sigaction(sig, &sa, NULL);
}

int rt_signals_init(void)
{
	int rc = 0;
	int ours[3] = { rt_cfg.sig, SIGTRAP, SIGIO };
	for (int i = 0; i < 3; i++) {
		int sig = ours[i];
		rt_real_sigaction(sig, NULL, &prog_act[sig]);
		atomic_store(&managed[sig], M_OURS);
		if (install(sig, rt_handler) < 0)
			rc = -1;
	}
	for (int i = 0; i < NFATAL; i++) {
		int sig = fatal_sigs[i];
		struct sigaction cur;
		if (rt_real_sigaction(sig, NULL, &cur) < 0)
			continue;
		prog_act[sig] = cur;
		if (cur.sa_handler != SIG_DFL) {
			atomic_store(&managed[sig], M_FATAL_PROG);
			continue;
		}
		atomic_store(&managed[sig], M_FATAL_OURS);
		install(sig, rt_fatal);
	}
	return rc;
}

/* ---- interposed sigaction / signal -------------------------------------------------- */

RT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int m = (sig > 0 && sig < _NSIG) ? atomic_load(&managed[sig]) : M_NONE;
	if (m == M_NONE)
		return rt_real_sigaction(sig, act, old);
	if (m == M_OURS) {
		struct sigaction prev = prog_act[sig];
		if (act)
			prog_act[sig] = *act;
		if (old)
			*old = prev;
		return 0;
	}
	/* fatal signals */
	struct sigaction prev = prog_act[sig];
	if (act) {
		if (act->sa_handler == SIG_DFL) {
			if (m == M_FATAL_PROG) {
				atomic_store(&managed[sig], M_FATAL_OURS);
				install(sig, rt_fatal);
			}
		} else {
			if (rt_real_sigaction(sig, act, NULL) < 0)
				return -1;
			atomic_store(&managed[sig], M_FATAL_PROG);
		}
		prog_act[sig] = *act;
	}
	if (old)
		*old = prev;
	return 0;
}

RT_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig > 0 && sig < _NSIG ? sig : 1);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* The other old interfaces glibc implements with its internal sigaction
 * (which the interposition above does not see). */
RT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return signal(sig, h);
}

RT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

RT_EXPORT sighandler_t sigset(int sig, sighandler_t h)
{
	sigset_t one, oldmask;
	sigemptyset(&one);
	if (sigaddset(&one, sig) < 0)
		return SIG_ERR;
	struct sigaction old;
	if (h == SIG_HOLD) {
		if (sigaction(sig, NULL, &old) < 0 || sigprocmask(SIG_BLOCK, &one, &oldmask) < 0)
			return SIG_ERR;
	} else {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = h;
		sigemptyset(&sa.sa_mask);
		if (sigaction(sig, &sa, &old) < 0 || sigprocmask(SIG_UNBLOCK, &one, &oldmask) < 0)
			return SIG_ERR;
	}
	return sigismember(&oldmask, sig) ? SIG_HOLD : old.sa_handler;
}

/* ---- per-thread signal stack --------------------------------------------------------- */

int rt_altstack_setup(struct rt_thread *t)
{
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE))
		return 0;                  /* the program has its own: use it */
	void *m = mmap(NULL, RT_ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	stack_t ss = { .ss_sp = m, .ss_size = RT_ALTSTACK_BYTES, .ss_flags = 0 };
	if (sigaltstack(&ss, NULL) < 0) {
		munmap(m, RT_ALTSTACK_BYTES);
		return -1;
	}
	t->altstack = m;
	return 0;
}

void rt_altstack_teardown(struct rt_thread *t)
{
	if (!t->altstack)
		return;
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == t->altstack && !(cur.ss_flags & SS_ONSTACK)) {
		stack_t off = { .ss_flags = SS_DISABLE };
		if (sigaltstack(&off, NULL) == 0) {
			munmap(t->altstack, RT_ALTSTACK_BYTES);
			t->altstack = NULL;
		}
	}
	/* else: the program replaced it, or we are on it: leave the mapping */
}
