/* libcommrec.so: configuration, process and thread lifecycle, exit paths.
 *
 * Lifecycle:
 *   constructor   read COMMTRACE_* (disabled when COMMTRACE_SPOOL is unset or
 *                 COMMTRACE_PID names another process), signal handlers,
 *                 sampler, writer thread, main thread = index 0, maps file.
 *   pthread_create (interposed): the new thread runs a trampoline that sets
 *                 up its state (spool file, record ring, sigaltstack, sampler,
 *                 watchpoints) and tears it down at its end (return,
 *                 pthread_exit, cancellation: a cleanup handler).
 *   exit          destructor (or _exit/_Exit, interposed): stop sampling in
 *                 every thread, THREAD_END for the live ones, final drain and
 *                 flush by the writer, maps rewritten.
 *   fatal signal  (rt_signal.c) the writer flushes, then the default action.
 *   fork          the child is not recorded (pthread_atfork).
 *   exec          (rt_exec.c) flush and stop, then exec without the runtime.
 */
#include "rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <asm/prctl.h>

#include "rtconfig.h"

struct rt_config rt_cfg;
_Atomic int rt_active;
_Atomic int rt_exiting;
struct board rt_board;
bool rt_board_ok;
pid_t rt_pid;
RT_TLS struct rt_thread *rt_self;
RT_TLS int rt_guard;
struct rt_thread *_Atomic rt_threads[RT_MAX_THREADS];
_Atomic uint32_t rt_threads_hw;

static _Atomic uint32_t next_index;
/* Program threads alive (created through pthread_create while recording,
 * plus the main thread), and whether the main thread left by pthread_exit:
 * glibc ends the process when its last thread exits, but the writer thread
 * counts as one, so the writer does that itself (rt_writer.c). */
_Atomic int rt_live_threads;
_Atomic int rt_main_exited;
static const struct sampler_ops *sampler;
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static void (*real__exit)(int) __attribute__((noreturn));
static size_t (*get_tls_static_info)(size_t *, size_t *);

/* ---- logging (async-signal-safe: snprintf into a stack buffer + write) --- */

void rt_log(int level, const char *fmt, ...)
{
	if (rt_cfg.verbose < level)
		return;
	char buf[512];
	int n = snprintf(buf, sizeof buf, "commrec[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	ssize_t w = write(2, buf, (size_t)n);
	(void)w;
}

/* ---- configuration ------------------------------------------------------- */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	return *end ? def : (uint64_t)v;
}

static bool env_flag(const char *name)
{
	const char *s = getenv(name);
	return s && s[0] == '1';
}

static int parse_signal(const char *s)
{
	int base = 0;
	if (!s || !*s)
		return SIGRTMIN + 7;
	if (!strncmp(s, "SIGRTMIN", 8) || !strncmp(s, "RTMIN", 5)) {
		s += s[0] == 'S' ? 8 : 5;
		base = SIGRTMIN;
		if (*s == '+')
			s++;
	}
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || (base && !*s))
		v = base ? 0 : 7, base = base ? base : SIGRTMIN;
	int sig = base + (int)v;
	if (sig < SIGRTMIN || sig > SIGRTMAX)
		sig = SIGRTMIN + 7;
	return sig;
}

static void read_config(void)
{
	const char *s = getenv(CT_ENV_SPOOL);
	snprintf(rt_cfg.spool, sizeof rt_cfg.spool, "%s", s ? s : "");
	s = getenv(CT_ENV_SAMPLER);
	snprintf(rt_cfg.sampler, sizeof rt_cfg.sampler, "%s", s && *s ? s : "soft");
	rt_cfg.period = env_u64(CT_ENV_PERIOD, 1000);
	if (rt_cfg.period == 0)
		rt_cfg.period = 1000;
	if (!strcmp(rt_cfg.sampler, "soft") && rt_cfg.period < CT_SOFT_PERIOD_MIN)
		rt_cfg.period = CT_SOFT_PERIOD_MIN;   /* the floor, as commrec -c */
	rt_cfg.watchpoints = (int)env_u64(CT_ENV_WATCHPOINTS, 4);
	if (rt_cfg.watchpoints > CT_WP_MAX)
		rt_cfg.watchpoints = CT_WP_MAX;
	rt_cfg.throttle = (uint32_t)env_u64(CT_ENV_THROTTLE, 25);
	if (rt_cfg.throttle > 100)
		rt_cfg.throttle = 100;
	rt_cfg.board_size = (uint32_t)env_u64(CT_ENV_BOARD, 1024);
	if (rt_cfg.board_size == 0 || rt_cfg.board_size > (1u << 24))
		rt_cfg.board_size = 1024;
	rt_cfg.line_size = (uint32_t)env_u64(CT_ENV_LINE_SIZE, 64);
	if (rt_cfg.line_size < 8 || (rt_cfg.line_size & (rt_cfg.line_size - 1)) || rt_cfg.line_size > 4096)
		rt_cfg.line_size = 64;
	rt_cfg.no_alloc = env_flag(CT_ENV_NO_ALLOC);
	rt_cfg.soft_timer = env_flag(CT_ENV_SOFT_TIMER);
	rt_cfg.soft_cpu_wide = env_flag(CT_ENV_SOFT_CPU_WIDE);
	rt_cfg.wp_async = env_flag(CT_ENV_WP_ASYNC);
	rt_cfg.wp_cpu = env_flag(CT_ENV_WP_CPU);
	rt_cfg.wp_soft = env_flag(CT_ENV_WP_SOFT);
	rt_cfg.wp_lines = rt_cfg.wp_soft ? (uint32_t)env_u64(CT_ENV_WP_LINES, 0) : 0;
	if (rt_cfg.wp_lines > CD_LINES_MAX)
		rt_cfg.wp_lines = CD_LINES_MAX;
	rt_cfg.wp_life = (uint32_t)env_u64(CT_ENV_WP_LIFE, 2);
	if (rt_cfg.wp_life == 0)
		rt_cfg.wp_life = 1;
	rt_cfg.wp_switch_ns = env_u64(CT_ENV_WP_SWITCH_NS, 0);
	rt_cfg.wp_open_switch_ns = env_u64(CT_ENV_WP_OPEN_SWITCH_NS, 0);
	rt_cfg.soft_event_switch_ns = env_u64(CT_ENV_SOFT_EVENT_SWITCH_NS, 0);
	rt_cfg.wp_budget = (uint32_t)env_u64(CT_ENV_WP_BUDGET, 5);
	rt_cfg.verbose = (int)env_u64(CT_ENV_VERBOSE, 1);
	rt_cfg.sig = parse_signal(getenv(CT_ENV_SIGNAL));
	uint64_t slots = env_u64(CT_ENV_RING_UNITS, RT_RING_UNITS_DEFAULT);
	uint32_t cap = 64;
	while (cap < slots && cap < (1u << 20))
		cap <<= 1;
	rt_cfg.ring_slots = cap;
	rt_cfg.zlevel = (int)env_u64(CT_ENV_ZLEVEL, 1);
}

/* ---- records --------------------------------------------------------------- */

uint32_t rt_poke_mark;

int rt_push(struct rt_thread *t, const struct ct_record *r)
{
	uint32_t fill;
	rt_guard++;     /* the ring copy is the runtime's, not the program's */
	int rc = recring_push(&t->ring, r, &fill);
	rt_poke_if(fill);
	rt_guard--;
	return rc;
}

/* Wait until a record of `type` fits in t's ring, poking the writer; give up
 * when the writer made no progress for ~0.5 s (it may be gone, or stuck in a
 * write): then no more waits until it frees something of this ring.  On a
 * loaded machine the writer thread may not run for longer than a ring
 * takes to fill. */
static void wait_room(struct rt_thread *t, unsigned type)
{
	if (recring_has_room(&t->ring, type))
		return;
	uint64_t seen = atomic_load_explicit(&t->ring.tail, memory_order_acquire);
	if (t->ring_stalled_at == seen + 1)
		return;
	t->ring_waits++;
	for (int idle = 0; idle < 500; idle++) {
		rt_writer_poke();
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		if (recring_has_room(&t->ring, type))
			return;
		uint64_t now = atomic_load_explicit(&t->ring.tail, memory_order_acquire);
		if (now != seen) {
			seen = now;
			idle = 0;
		}
	}
	t->ring_stalled_at = seen + 1;
}

/* Records that describe the program instead of sampling it (allocations,
 * frees, call sites, markers) are waited for rather than dropped: a lost
 * ALLOC misattributes every later access to its block.  Not once the
 * process exits (the writer is stopping).  Normal context or the program's
 * own signal handlers (nanosleep is async-signal-safe). */
void rt_wait_room(struct rt_thread *t, unsigned type)
{
	if (!atomic_load(&rt_exiting))
		wait_room(t, type);
}

/* For the records that must not be lost (THREAD_END): wait for the writer
 * even while the process exits, in normal context only. */
int rt_push_wait(struct rt_thread *t, const struct ct_record *r)
{
	wait_room(t, r->type);
	return rt_push(t, r);
}

void rt_flush_skips(struct rt_thread *t, uint64_t now)
{
	if (!t->samp_by_writer)      /* (those the writer counts, it flushes) */
		rt_flush_skips_to(t, now, rt_push);
}

void rt_flush_skips_to(struct rt_thread *t, uint64_t now, rt_emit_fn emit)
{
	/* samples taken while the runtime itself ran (its code, its handlers) */
	if (t->skip_runtime) {
		t->skip[CT_SKIP_RUNTIME] += t->skip_runtime;
		t->skip_runtime = 0;
		t->skip_pending++;
	}
	if (!t->skip_pending)
		return;
	for (unsigned i = 1; i <= CT_SKIP_REASON_MAX && i < 16; i++) {
		if (!t->skip[i])
			continue;
		struct ct_record r = { .type = CT_REC_SKIPPED, .time = now };
		r.u.skipped.reason = (uint8_t)i;
		r.u.skipped.count = t->skip[i];
		if (emit(t, &r) == 0)
			t->skip[i] = 0;
	}
	t->skip_pending = 0;
}

/* ---- threads ----------------------------------------------------------------- */

static void thread_stack(struct rt_thread *t)
{
	pthread_attr_t a;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		void *addr;
		size_t size;
		if (pthread_attr_getstack(&a, &addr, &size) == 0) {
			t->stack_lo = (uintptr_t)addr;
			t->stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&a);
	}
}

/* File descriptors: every live thread holds up to 6 of the runtime's (its
 * spool file, the sampler event, 4 breakpoints).  They must not take
 * numbers the program uses (a program that opens files up to its limit
 * must open as many as without commrec):
 *   - where the hard RLIMIT_NOFILE leaves room, each is moved above the
 *     program's soft limit (raised for the move only, then put back: the
 *     program sees its own limit);
 *   - where soft = hard (common in containers) and the limit is large
 *     (>= RT_FD_TOP_MIN), into its top eighth, which a program reaches
 *     last (the trace says so: fd_mode);
 *   - otherwise nowhere: the descriptor is closed and the thread is not
 *     recorded (counted in the status page, said in the trace). */
static enum rt_fd_mode fd_mode(const struct rlimit *rl)
{
	if (rl->rlim_cur == RLIM_INFINITY || rl->rlim_max > rl->rlim_cur)
		return RT_FD_ABOVE;
	return rl->rlim_cur >= RT_FD_TOP_MIN ? RT_FD_TOP : RT_FD_NONE;
}

static void fd_setup(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rt_st->fd_soft = rl.rlim_cur;
	rt_st->fd_hard = rl.rlim_max;
	rt_st->fd_mode = fd_mode(&rl);
	if (rt_st->fd_mode == RT_FD_NONE)
		rt_log(1, "the limit on open files (ulimit -n %llu, hard limit the same) leaves no "
		       "descriptor for the recorder that the program might not need: threads are "
		       "not recorded (raise the hard limit: ulimit -Hn)", (unsigned long long)rl.rlim_max);
}

bool rt_fd_room(void)
{
	return rt_st->fd_mode != RT_FD_NONE;
}

/* The window in which the runtime opens descriptors: one thread at a time
 * (a lock the program never holds), the soft limit raised to the hard one
 * (RT_FD_ABOVE) so that an open succeeds even when the program uses every
 * number it may, put back at the end.  Nests on the owning thread. */
static atomic_flag fd_lock = ATOMIC_FLAG_INIT;
static _Atomic pid_t fd_owner;
static int fd_depth;
static struct rlimit fd_saved;   /* the program's limit while the window is open */
static bool fd_raised;

void rt_fd_window_begin(void)
{
	pid_t me = (pid_t)syscall(SYS_gettid);
	if (atomic_load(&fd_owner) == me) {
		fd_depth++;
		return;
	}
	while (atomic_flag_test_and_set_explicit(&fd_lock, memory_order_acquire))
		sched_yield();
	atomic_store(&fd_owner, me);
	fd_depth = 1;
	fd_raised = false;
	if (getrlimit(RLIMIT_NOFILE, &fd_saved) < 0) {
		fd_saved.rlim_cur = fd_saved.rlim_max = RLIM_INFINITY;
		return;
	}
	if (fd_mode(&fd_saved) == RT_FD_ABOVE && fd_saved.rlim_cur != RLIM_INFINITY) {
		struct rlimit up = { fd_saved.rlim_max, fd_saved.rlim_max };
		fd_raised = setrlimit(RLIMIT_NOFILE, &up) == 0;
	}
}

void rt_fd_window_end(void)
{
	if (--fd_depth > 0)
		return;
	if (fd_raised)
		setrlimit(RLIMIT_NOFILE, &fd_saved);
	atomic_store(&fd_owner, 0);
	atomic_flag_clear_explicit(&fd_lock, memory_order_release);
}

int rt_fd_high(int fd)
{
	if (fd < 0)
		return fd;
	rt_fd_window_begin();
	const struct rlimit *rl = &fd_saved;
	int hi = -1, err = EMFILE;
	if (rl->rlim_cur == RLIM_INFINITY || rl->rlim_cur > INT32_MAX || (rlim_t)fd >= rl->rlim_cur) {
		hi = fd;                 /* nothing to move, or already above */
	} else if (fd_mode(rl) == RT_FD_ABOVE) {
		if (fd_raised) {
			hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)rl->rlim_cur);
			err = errno;
		}
	} else if (fd_mode(rl) == RT_FD_TOP) {
		int top = (int)(rl->rlim_cur - rl->rlim_cur / 8);
		hi = fd >= top ? fd : fcntl(fd, F_DUPFD_CLOEXEC, top);
		err = errno;
	}
	if (hi != fd)
		close(fd);
	rt_fd_window_end();
	if (hi < 0)
		errno = err;
	return hi;
}

/* Is fd still the file we opened (dev, ino)?  The program may have closed
 * it and got the number back for a file of its own. */
bool rt_fd_is(int fd, uint64_t dev, uint64_t ino)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

void rt_fd_id(int fd, uint64_t *dev, uint64_t *ino)
{
	struct stat st;
	*dev = *ino = 0;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		*dev = (uint64_t)st.st_dev;
		*ino = (uint64_t)st.st_ino;
	}
}

/* perf event descriptors all share one anonymous inode: remembered at the
 * first one, checked before any close */
static uint64_t perf_dev, perf_ino;
static _Atomic int perf_id_known;

void rt_perf_fd_opened(int fd)
{
	if (fd >= 0 && !atomic_load(&perf_id_known)) {
		rt_fd_id(fd, &perf_dev, &perf_ino);
		atomic_store(&perf_id_known, 1);
	}
}

void rt_perf_close(int fd)
{
	if (fd >= 0 && atomic_load(&perf_id_known) && rt_fd_is(fd, perf_dev, perf_ino))
		close(fd);
}

static bool registry_add(struct rt_thread *t)
{
	for (uint32_t i = 0; i < RT_MAX_THREADS; i++) {
		struct rt_thread *expect = NULL;
		t->slot = i;         /* before it is visible to the writer */
		if (atomic_load_explicit(&rt_threads[i], memory_order_relaxed) == NULL &&
		    atomic_compare_exchange_strong(&rt_threads[i], &expect, t)) {
			uint32_t hw = atomic_load(&rt_threads_hw);
			while (hw < i + 1 && !atomic_compare_exchange_weak(&rt_threads_hw, &hw, i + 1))
				;
			return true;
		}
	}
	return false;
}

struct rt_thread *rt_thread_begin(uint32_t parent, uint32_t index)
{
	rt_guard++;
	rt_status_thread_started();
	size_t head = (sizeof(struct rt_thread) + 63) & ~(size_t)63;
	size_t bytes = head + recring_bytes(rt_cfg.ring_slots);
	bytes = (bytes + 4095) & ~(size_t)4095;
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		rt_status_unrecorded(RT_UNREC_MEMORY);
		rt_guard--;
		return NULL;
	}
	struct rt_thread *t = mem;
	t->map_bytes = bytes;
	recring_init(&t->ring, (char *)mem + head, rt_cfg.ring_slots);
	t->index = index;
	t->parent = parent;
	t->tid = (pid_t)syscall(SYS_gettid);
	t->samp_fd = -1;
	for (int i = 0; i < CT_WP_MAX; i++) {
		t->wp_fd[i] = -1;
		t->wp_slot[i] = -1;
	}
	t->rnd = ((uint64_t)t->tid << 32) ^ rt_now() ^ 0x9e3779b97f4a7c15ull;
	unsigned long fs = 0;
	syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
	t->fs_base = fs;
	thread_stack(t);
	atomic_store(&t->state, RT_T_RUNNING);

	struct ct_thread_info ti = {
		.index = t->index, .parent = parent, .tid = t->tid, .pid = rt_pid,
		.start_ns = rt_now(),
	};
	t->start_ns = ti.start_ns;
	prctl(PR_GET_NAME, ti.name, 0, 0, 0);
	ti.name[15] = 0;
	/* the thread's descriptors (spool file, sampler, watchpoints) are
	 * opened in one window: above the program's limit (rt_fd_high) */
	rt_fd_window_begin();
	if (rt_spool_open(t, &ti) < 0) {
		rt_fd_window_end();
		bool no_fd = errno == EMFILE;
		if (!no_fd || rt_fd_room())    /* (no room at all: said once at start) */
			rt_log(1, "cannot create the spool file of thread %u in %s: %s: it is not "
			       "recorded", t->index, rt_cfg.spool, strerror(errno));
		munmap(mem, bytes);
		rt_status_unrecorded(no_fd ? RT_UNREC_NO_FD : RT_UNREC_SPOOL);
		rt_guard--;
		return NULL;
	}

	struct ct_record r = { .type = CT_REC_THREAD_START, .time = ti.start_ns };
	r.u.start.stack_lo = t->stack_lo;
	r.u.start.stack_hi = t->stack_hi;
	r.u.start.fs_base = t->fs_base;
	if (get_tls_static_info && t->fs_base) {
		size_t size = 0, align = 0;
		get_tls_static_info(&size, &align);
		/* x86-64 glibc: the static TLS block (with its surplus) ends at the
		 * thread pointer. */
		if (size && size < t->fs_base) {
			r.u.start.tls_lo = t->fs_base - size;
			r.u.start.tls_hi = t->fs_base;
		}
	}
	rt_push(t, &r);

	if (!registry_add(t)) {
		rt_log(1, "more than %d threads alive: thread %u is not recorded", RT_MAX_THREADS, t->index);
		rt_spool_abandon(t);
		rt_fd_window_end();
		munmap(mem, bytes);
		rt_status_unrecorded(RT_UNREC_REGISTRY);
		rt_guard--;
		return NULL;
	}
	rt_altstack_setup(t);
	t->sampler = sampler;
	rt_self = t;
	int src;
	if (sampler && (src = sampler->thread_start(t)) < 0)
		rt_log(1, "thread %u: not sampled (%s)", t->index, strerror(-src));
	if (rt_cfg.watchpoints > 0 && rt_board_ok)
		rt_wp_thread_start(t);
	rt_fd_window_end();
	rt_guard--;
	return t;
}

/* Wait (bounded, ~20 ms) until t, another thread that was just stopped, is
 * out of the runtime's signal handler: a handler that had begun before the
 * stop may still be counting skipped samples.  (seq_cst: the handler sets
 * in_handler before it reads stopped, we set stopped before we read
 * in_handler, so one of the two sees the other.)  False if it is not out. */
static bool wait_out_of_handler(struct rt_thread *t)
{
	for (int i = 0; i < 400 && atomic_load(&t->in_handler); i++) {
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
	return !atomic_load(&t->in_handler);
}

/* A decision taken where the thread's switches (sw by cpu ns of CPU time),
 * at each_ns apiece, passed its budget. */
static void log_passed(const struct rt_thread *t, const char *what, uint64_t cpu, uint64_t sw,
                       uint64_t each_ns, const char *with)
{
	rt_log(2, "thread %u: %s after %.1f ms of CPU time: its %llu context switches would have "
	       "cost %.1f%% of it with %s (%.2f us each; limit %u%%, " CT_ENV_WP_BUDGET ")",
	       t->index, what, (double)cpu / 1e6, (unsigned long long)sw,
	       100.0 * (double)(sw * each_ns) / (double)cpu, with, (double)each_ns / 1e3,
	       rt_cfg.wp_budget);
}

/* What rt_check_switch_cost decided for the thread (commrec -v). */
static void log_wp_budget(const struct rt_thread *t)
{
	if (t->ev_asked_cpu)
		rt_log(2, "thread %u: asked for its perf events after %.1f ms of CPU time (its %llu "
		       "context switches: %.1f%% of it with them; asks at up to half the limit, "
		       "%u%%, " CT_ENV_WP_BUDGET "): %s",
		       t->index, (double)t->ev_asked_cpu / 1e6,
		       (unsigned long long)t->ev_asked_switches,
		       100.0 * (double)(t->ev_asked_switches *
		                        (rt_cfg.soft_event_switch_ns + rt_cfg.wp_open_switch_ns)) /
		       (double)t->ev_asked_cpu, rt_cfg.wp_budget,
		       atomic_load(&t->ev_state) == RT_EV_ADOPTED || t->samp_left_cpu ? "taken"
		                                                                    : "not taken");
	if (t->samp_left_cpu)
		log_passed(t, "sampled by its timer", t->samp_left_cpu, t->samp_left_switches,
		           t->samp_left_each, "its own perf event and open registers");
	if (t->wp_closed_cpu)
		log_passed(t, "watchpoints closed", t->wp_closed_cpu, t->wp_closed_switches,
		           rt_cfg.wp_open_switch_ns, "the registers only open");
	else if (t->wp_allowed < t->wp_judged && t->wp_acct_cpu)
		rt_log(2, "thread %u: watchpoints armable at %llu of %llu samples: its %llu context "
		       "switches cost an estimated %.1f%% of its %.1f ms of CPU time with them (limit "
		       "%u%%, " CT_ENV_WP_BUDGET ")",
		       t->index, (unsigned long long)t->wp_allowed, (unsigned long long)t->wp_judged,
		       (unsigned long long)t->wp_acct_switches,
		       100.0 * (double)t->wp_spent_ns / (double)t->wp_acct_cpu,
		       (double)t->wp_acct_cpu / 1e6, rt_cfg.wp_budget);
}

/* On the thread itself (self), or at process end from the writer for a
 * thread that is still running (a worker never joined, an OpenMP thread):
 * then its skipped-sample counts are flushed here too, before its
 * THREAD_END, or they would be lost. */
void rt_thread_stop_sampling(struct rt_thread *t, int self)
{
	atomic_store(&t->stopped, 1);
	if (t->sampler)
		t->sampler->thread_stop(t, self);
	/* another thread's handler may be closing its registers
	 * (rt_check_switch_cost): after it, or never */
	bool out = self || wait_out_of_handler(t);
	if (out)
		rt_wp_thread_stop(t, self);
	if (!self && out)
		rt_flush_skips(t, rt_now());
	if (out)
		log_wp_budget(t);
}

void rt_thread_finish(struct rt_thread *t, int status)
{
	if (!t)
		return;
	rt_guard++;
	sigset_t old;
	rt_block_our_signals(&old);
	rt_thread_stop_sampling(t, 1);
	uint64_t now = rt_now();
	rt_thread_stats(t);
	rt_flush_skips(t, now);
	int expect = 0;
	t->end_ns = now;     /* before end_pushed: the writer's attribution reads it */
	if (atomic_compare_exchange_strong(&t->end_pushed, &expect, 1)) {
		struct ct_record r = { .type = CT_REC_THREAD_END, .time = now };
		r.u.end.status = status;
		rt_push_wait(t, &r);
	}
	rt_self = NULL;
	rt_altstack_teardown(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	atomic_store_explicit(&t->state, RT_T_ENDED, memory_order_release);
	rt_writer_poke();
	rt_guard--;
}

void rt_thread_stats(struct rt_thread *t)
{
	if (rt_cfg.verbose < 3)
		return;
	rt_log(3, "thread %u: %llu samples, %llu in the runtime, %llu kernel-lost, %llu throttled; "
	       "runtime share peak %u%%, period lengthened %u times; "
	       "handlers %llu runs %.2f us avg; arms %llu %.2f us avg; traps %llu %.2f us avg in handler; "
	       "callsite cache %llu hits %llu misses; ring lost %llu, waits for room %llu",
	       t->index, (unsigned long long)t->nsamples, (unsigned long long)t->skip_runtime,
	       (unsigned long long)t->pmu_lost, (unsigned long long)t->pmu_throttle,
	       t->peak_share, t->throttles,
	       (unsigned long long)t->hnd_runs, t->hnd_runs ? t->hnd_ns / 1e3 / (double)t->hnd_runs : 0.0,
	       (unsigned long long)t->arms, t->arms ? t->arm_ns / 1e3 / (double)t->arms : 0.0,
	       (unsigned long long)t->traps, t->traps ? t->trap_ns / 1e3 / (double)t->traps : 0.0,
	       (unsigned long long)t->cs_hits, (unsigned long long)t->cs_misses,
	       (unsigned long long)atomic_load(&t->ring.lost_total), (unsigned long long)t->ring_waits);
}

/* ---- pthread_create ------------------------------------------------------------ */

struct tramp_arg {
	void *(*fn)(void *);
	void *arg;
	uint32_t parent, index;
};

static void tramp_cleanup(void *p)
{
	rt_thread_finish(p, 0);
	atomic_fetch_sub(&rt_live_threads, 1);
	if (atomic_load(&rt_main_exited))
		rt_writer_poke();
}

static void *tramp(void *p)
{
	struct tramp_arg a = *(struct tramp_arg *)p;
	rt_guard++;
	free(p);
	rt_guard--;
	struct rt_thread *t = NULL;
	if (atomic_load(&rt_active))
		t = rt_thread_begin(a.parent, a.index);
	void *ret;
	pthread_cleanup_push(tramp_cleanup, t);
	ret = a.fn(a.arg);
	pthread_cleanup_pop(1);
	return ret;
}

RT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                             void *(*fn)(void *), void *arg)
{
	if (!real_pthread_create) {
		real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
		if (!real_pthread_create)
			return EAGAIN;
	}
	if (!atomic_load(&rt_active) || rt_guard)
		return real_pthread_create(th, attr, fn, arg);
	rt_guard++;
	struct tramp_arg *a = malloc(sizeof *a);
	rt_guard--;
	if (!a)
		return real_pthread_create(th, attr, fn, arg);
	a->fn = fn;
	a->arg = arg;
	a->parent = rt_self ? rt_self->index : UINT32_MAX;
	/* creation order: the index is taken here, by the creator (a failed
	 * creation leaves a gap in the indices) */
	a->index = atomic_fetch_add(&next_index, 1);
	atomic_fetch_add(&rt_live_threads, 1);
	int rc = real_pthread_create(th, attr, tramp, a);
	if (rc) {
		atomic_fetch_sub(&rt_live_threads, 1);
		rt_guard++;
		free(a);
		rt_guard--;
	}
	return rc;
}

/* The runtime's own threads (writer). */
int rt_create_internal_thread(pthread_t *th, void *(*fn)(void *), void *arg)
{
	if (!real_pthread_create)
		real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	if (!real_pthread_create)
		return ENOSYS;
	/* The new thread inherits the signal mask: block everything so that
	 * no signal of the program (or ours) is ever delivered to it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = real_pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* ---- process start and end ------------------------------------------------------ */

static _Atomic int shutdown_done;

void rt_shutdown(int status)
{
	(void)status;
	int expect = 0;
	if (!atomic_compare_exchange_strong(&shutdown_done, &expect, 1))
		return;
	if (!atomic_load(&rt_active))
		return;
	rt_guard++;
	atomic_store(&rt_exiting, 1);
	sigset_t old;
	rt_block_our_signals(&old);
	/* The writer stops sampling in every thread and closes their streams
	 * (it alone may touch other threads' state: it frees it). */
	if (rt_self) {
		atomic_store(&rt_self->stopped, 1);
		rt_flush_skips(rt_self, rt_now());
	}
	rt_writer_stop();
	rt_write_maps();
	atomic_store(&rt_active, 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	rt_guard--;
}

static void atfork_child(void)
{
	/* The child is not recorded: it must never write to the parent's spool,
	 * and the perf events it inherited as fds belong to the parent's threads. */
	atomic_store(&rt_active, 0);
	atomic_store(&shutdown_done, 1);
	struct rt_thread *t = rt_self;
	rt_self = NULL;
	rt_cpusamp_forget();
	if (t) {
		atomic_store(&t->stopped, 1);
		for (int i = 0; i < CT_WP_MAX; i++)
			rt_perf_close(t->wp_fd[i]);
	}
	uint32_t hw = atomic_load(&rt_threads_hw);
	for (uint32_t i = 0; i < hw; i++) {
		struct rt_thread *o = atomic_load(&rt_threads[i]);
		if (!o)
			continue;
		o->ring.counts = &o->ring.own_counts;   /* the mapping is the parent's file */
		rt_perf_fork_child(o);
		if (rt_fd_is(o->spool_fd, o->spool_dev, o->spool_ino))
			close(o->spool_fd);
	}
	dec_init();
}

__attribute__((constructor(101))) static void rt_init(void)
{
	rt_guard++;
	rt_pid = getpid();
	const char *want = getenv(CT_ENV_PID);
	const char *spool = getenv(CT_ENV_SPOOL);
	if (!spool || !*spool || (want && *want && atoi(want) != rt_pid)) {
		rt_guard--;
		return;
	}
	if (!want || !*want) {
		/* a manual run: record this process, and make sure its children
		 * (fork+exec, posix_spawn, system) do not record into our spool */
		char b[24];
		snprintf(b, sizeof b, "%d", (int)rt_pid);
		setenv(CT_ENV_PID, b, 1);
	}
	read_config();
	rt_status_init();
	fd_setup();
	rt_poke_mark = rt_cfg.ring_slots / 4;
	real__exit = dlsym(RTLD_NEXT, "_exit");
	real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	get_tls_static_info = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
	rt_alloc_init();
	rt_find_own_text();
	dec_init();

	if (rt_cfg.watchpoints > 0) {
		void *bm = mmap(NULL, board_bytes(rt_cfg.board_size), PROT_READ | PROT_WRITE,
		                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (bm != MAP_FAILED) {
			board_init(&rt_board, bm, rt_cfg.board_size, rt_cfg.line_size);
			rt_board_ok = true;
		}
	}
	if (!strcmp(rt_cfg.sampler, "soft"))
		sampler = &rt_sampler_soft;
	else if (!strcmp(rt_cfg.sampler, "pebs"))
		sampler = &rt_sampler_pebs;
	else if (!strcmp(rt_cfg.sampler, "ibs"))
		sampler = &rt_sampler_ibs;
	else if (!strcmp(rt_cfg.sampler, "inst") && &rt_sampler_inst != NULL)
		sampler = &rt_sampler_inst;    /* only in libcommrec-inst (weak) */
	else if (!strcmp(rt_cfg.sampler, "none"))
		sampler = NULL;      /* allocations and thread records only */
	else
		rt_log(1, "sampler %s is not available in this runtime: recording without samples",
		       rt_cfg.sampler);
	if (sampler && sampler->process_init && sampler->process_init() < 0) {
		rt_log(1, "sampler %s could not start: recording without samples", sampler->name);
		sampler = NULL;
	}
	if (rt_signals_init() < 0)
		rt_log(1, "cannot install the signal handlers");
	if (rt_writer_start() < 0) {
		rt_log(1, "cannot start the writer thread: not recording");
		rt_guard--;
		return;
	}
	if (sampler && sampler->process_start && sampler->process_start() < 0) {
		rt_log(1, "sampler %s could not start: recording without samples", sampler->name);
		sampler = NULL;
	}
	pthread_atfork(NULL, NULL, atfork_child);
	atomic_store(&rt_active, 1);
	rt_write_maps();
	atomic_store(&rt_live_threads, 1);
	rt_thread_begin(UINT32_MAX, atomic_fetch_add(&next_index, 1));
	rt_guard--;
}

__attribute__((destructor(101))) static void rt_fini(void)
{
	if (atomic_load(&rt_active) && getpid() == rt_pid)
		rt_shutdown(0);
}

RT_EXPORT void _exit(int status)
{
	if (atomic_load(&rt_active) && getpid() == rt_pid)
		rt_shutdown(status);
	if (!real__exit)
		real__exit = dlsym(RTLD_NEXT, "_exit");
	if (real__exit)
		real__exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

RT_EXPORT void pthread_exit(void *ret)
{
	static void (*real_pthread_exit)(void *) __attribute__((noreturn));
	if (!real_pthread_exit)
		real_pthread_exit = dlsym(RTLD_NEXT, "pthread_exit");
	/* Threads started by our trampoline finish in its cleanup handler; the
	 * main thread has none. */
	if (atomic_load(&rt_active) && getpid() == rt_pid && syscall(SYS_gettid) == rt_pid) {
		struct rt_thread *t = rt_self;
		if (t)
			rt_thread_finish(t, 0);
		atomic_store(&rt_main_exited, 1);
		atomic_fetch_sub(&rt_live_threads, 1);
		rt_writer_poke();
	}
	real_pthread_exit(ret);
}

RT_EXPORT void _Exit(int status)
{
	_exit(status);
}
