/* The functional watchpoint probe (wp_probe.h). */
#include "wp_probe.h"
#include "soft_attr.h"

#include <stdbool.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "commtrace.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The runtime's template (record/runtime/rt_wp.c): read/write, 8 bytes,
 * user space only, disabled, on a dummy word; counting only here.  On the
 * calling thread (cpu -1), or per CPU on CPU cpu (pid -1). */
static int open_on(volatile uint64_t *word, struct perf_event_attr *a, int cpu)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_BREAKPOINT;
	a->bp_type = HW_BREAKPOINT_RW;
	a->bp_addr = (uint64_t)(uintptr_t)word;
	a->bp_len = HW_BREAKPOINT_LEN_8;
	a->disabled = 1;
	a->exclude_kernel = cpu < 0;    /* per CPU the runtime counts kernel accesses too */
	a->exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, a, cpu < 0 ? 0 : -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void probe(struct wp_probe *p, int want, int cpu)
{
	/* on the stack: each probe (and each thread) its own words */
	volatile uint64_t dummy = 0, words[CT_WP_MAX];
	struct perf_event_attr attr[CT_WP_MAX];
	int fd[CT_WP_MAX];
	uint64_t t0 = now_ns();

	memset(p, 0, sizeof *p);
	if (want > CT_WP_MAX)
		want = CT_WP_MAX;
	p->want = want < 0 ? 0 : want;
	for (int i = 0; i < p->want; i++) {
		words[i] = 0;
		fd[i] = open_on(&dummy, &attr[i], cpu);
		if (fd[i] < 0) {
			p->open_errno = errno;
			break;
		}
		p->opened++;
	}
	for (int i = 0; i < p->opened; i++) {
		attr[i].bp_addr = (uint64_t)(uintptr_t)&words[i];
		if (ioctl(fd[i], PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &attr[i]) < 0 ||
		    ioctl(fd[i], PERF_EVENT_IOC_ENABLE, 0) < 0) {
			close(fd[i]);
			fd[i] = -1;
			continue;
		}
		p->retargeted++;
	}
	for (int k = 0; k < WP_PROBE_WRITES; k++)
		for (int i = 0; i < p->opened; i++)
			words[i] = words[i] + 1;
	for (int i = 0; i < p->opened; i++) {
		if (fd[i] < 0)
			continue;
		ioctl(fd[i], PERF_EVENT_IOC_DISABLE, 0);
		uint64_t n = 0;
		if (read(fd[i], &n, sizeof n) == (ssize_t)sizeof n)
			p->counts[i] = n;
		/* each increment is a load and a store: at least one hit each */
		if (p->counts[i] >= WP_PROBE_WRITES)
			p->fired++;
		close(fd[i]);
	}
	p->verdict = !p->opened ? WP_NO_OPEN : p->fired ? WP_FIRE : WP_NO_FIRE;
	p->ns = now_ns() - t0;
}

void wp_probe_run(struct wp_probe *p, int want)
{
	probe(p, want, -1);
}

void wp_probe_cpu_run(struct wp_probe *p, int want)
{
	cpu_set_t old, one;
	int cpu = sched_getcpu();
	if (cpu < 0 || sched_getaffinity(0, sizeof old, &old) < 0) {
		memset(p, 0, sizeof *p);
		p->want = want;
		p->open_errno = errno;
		p->verdict = WP_NO_OPEN;
		return;
	}
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof one, &one);   /* the writes happen on that CPU */
	probe(p, want, cpu);
	sched_setaffinity(0, sizeof old, &old);
}

const char *wp_verdict_name(enum wp_verdict v)
{
	switch (v) {
	case WP_FIRE:
		return "fires";
	case WP_NO_FIRE:
		return "no-fire";
	default:
		return "no-open";
	}
}

void wp_probe_detail(const struct wp_probe *p, char *buf, size_t cap)
{
	if (!p->want) {
		snprintf(buf, cap, "not probed (no watchpoints asked for)");
		return;
	}
	if (!p->opened) {
		snprintf(buf, cap, "perf breakpoints cannot be opened here (%s)",
		         strerror(p->open_errno ? p->open_errno : ENODEV));
		return;
	}
	int n = snprintf(buf, cap, "%d of %d debug registers opened", p->opened, p->want);
	if (n < 0 || (size_t)n >= cap)
		return;
	if (p->retargeted < p->opened)
		n += snprintf(buf + n, cap - (size_t)n, ", %d re-targeted (PERF_EVENT_IOC_MODIFY_ATTRIBUTES)",
		              p->retargeted);
	if (n < 0 || (size_t)n >= cap)
		return;
	if (!p->fired)
		snprintf(buf + n, cap - (size_t)n, "; none counted any of %d writes to its word",
		         WP_PROBE_WRITES);
	else
		snprintf(buf + n, cap - (size_t)n, "; %d counted all %d writes to its word", p->fired,
		         WP_PROBE_WRITES);
}

/* ---- the cost of armed registers at a context switch -------------------- */

#define SWITCH_TURNS 1000     /* sched_yield turns per measurement */
#define SWITCH_ROUNDS 3       /* measurements with and without registers */
#define SWITCH_WALL_NS 20000000ull /* the longest a measurement takes */

/* What a turn-taking thread carries: nothing, its registers open, enabled,
 * or a task-clock sampling event of its own. */
enum turn_kind { TURN_NONE, TURN_REGS_OPEN, TURN_REGS_ARMED, TURN_SAMPLING };

struct turn_arg {
	int cpu, nregs;
	enum turn_kind kind;
	uint64_t period_ns;       /* TURN_SAMPLING: the event's period */
	uint64_t ns;              /* thread CPU time per context switch (0: not measured) */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_switches(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

void probe_task_clock_attr(struct perf_event_attr *a, uint64_t period_ns)
{
	memset(a, 0, sizeof *a);
	soft_sample_attr(a, period_ns);
	a->sample_type = PERF_SAMPLE_IP;
	a->sample_regs_user = 0;
}

/* A task-clock sampling event on the calling thread, as the soft sampler
 * opens one per thread (no ring: its samples are dropped); fd or -1. */
static int open_sampling(uint64_t period_ns)
{
	struct perf_event_attr a;
	probe_task_clock_attr(&a, period_ns);
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Open what a turn of this kind carries into fd; how many, or -1. */
static int open_kind(const struct turn_arg *a, volatile uint64_t *word, int *fd)
{
	if (a->kind == TURN_SAMPLING) {
		fd[0] = open_sampling(a->period_ns);
		return fd[0] < 0 ? -1 : 1;
	}
	int n = 0;
	for (; a->kind != TURN_NONE && n < a->nregs; n++) {
		struct perf_event_attr attr;
		fd[n] = open_on(word, &attr, -1);
		if (fd[n] < 0 ||
		    (a->kind == TURN_REGS_ARMED && ioctl(fd[n], PERF_EVENT_IOC_ENABLE, 0) < 0))
			break;
	}
	if (n == (a->kind == TURN_NONE ? 0 : a->nregs))
		return n;
	for (int i = 0; i <= n && i < a->nregs; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return -1;
}

/* One of two threads on one cpu that take turns: its CPU time per turn,
 * carrying what its kind says (registers on a word of its own, never
 * written). */
static void *take_turns(void *arg)
{
	struct turn_arg *a = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	volatile uint64_t word = 0;
	int fd[CT_WP_MAX];
	int n = sched_setaffinity(0, sizeof set, &set) == 0 ? open_kind(a, &word, fd) : -1;
	if (n >= 0) {
		/* at most SWITCH_WALL_NS of wall time: on a loaded cpu each
		 * turn may hand the cpu to other work for a whole slice */
		uint64_t sw0 = thread_switches(), t0 = thread_cpu_ns(), w0 = now_ns();
		uint64_t turns = 0;
		while (turns < SWITCH_TURNS && now_ns() - w0 < SWITCH_WALL_NS) {
			sched_yield();
			turns++;
		}
		uint64_t cpu = thread_cpu_ns() - t0, sw = thread_switches() - sw0;
		/* a yield while the other thread is not there (not started yet,
		 * or done) switches nothing and costs a fraction: only turns
		 * that nearly all switched measure a switch */
		a->ns = sw && sw * 10 >= turns * 9 ? cpu / sw : 0;
	}
	for (int i = 0; i < n; i++)
		close(fd[i]);
	return NULL;
}

/* Two threads taking turns on this cpu, each carrying what kind says: the
 * smaller of their CPU times per turn (0: could not measure). */
static uint64_t turn_ns(int nregs, enum turn_kind kind, uint64_t period_ns)
{
	struct turn_arg a[2];
	pthread_t th[2];
	int cpu = sched_getcpu(), started = 0;
	if (cpu < 0)
		return 0;
	for (int i = 0; i < 2; i++) {
		a[i] = (struct turn_arg){ .cpu = cpu, .nregs = nregs, .kind = kind,
		                          .period_ns = period_ns };
		if (pthread_create(&th[i], NULL, take_turns, &a[i]) == 0)
			started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (started < 2 || !a[0].ns || !a[1].ns)
		return 0;
	return a[0].ns < a[1].ns ? a[0].ns : a[1].ns;
}

/* The smaller, 0 being none. */
static uint64_t least(uint64_t best, uint64_t x)
{
	return !best || (x && x < best) ? x : best;
}

static uint64_t above(uint64_t x, uint64_t base)
{
	return x > base && base ? x - base : 0;
}

/* Armed registers (and a sampling event, if measured) cost something at a
 * switch: not measured, or a least base above them (other work's noise),
 * is worth more rounds. */
static bool costs_seen(uint64_t none, uint64_t on, uint64_t smp, uint64_t sampling_period_ns)
{
	return none && on > none && (!sampling_period_ns || smp > none);
}

struct wp_switch_cost wp_switch_cost(int nregs, uint64_t sampling_period_ns)
{
	struct wp_switch_cost c = { 0, 0, 0 };
	if (nregs <= 0)
		return c;
	if (nregs > CT_WP_MAX)
		nregs = CT_WP_MAX;
	/* the least of each (a round that could not measure one leaves it
	 * out): other work on the cpu only adds */
	uint64_t none = 0, open = 0, on = 0, smp = 0;
	for (int r = 0; r < SWITCH_ROUNDS || (r < 2 * SWITCH_ROUNDS && !costs_seen(none, on, smp,
	                                                                         sampling_period_ns));
	     r++) {
		none = least(none, turn_ns(0, TURN_NONE, 0));
		on = least(on, turn_ns(nregs, TURN_REGS_ARMED, 0));
		open = least(open, turn_ns(nregs, TURN_REGS_OPEN, 0));
		if (sampling_period_ns)
			smp = least(smp, turn_ns(0, TURN_SAMPLING, sampling_period_ns));
	}
	if (!none || !on)
		return c;
	c.armed_ns = above(on, none);
	c.open_ns = above(open, none);
	c.sampling_ns = above(smp, none);
	/* disabled registers cannot cost more than enabled ones: noise */
	if (c.open_ns > c.armed_ns)
		c.open_ns = c.armed_ns;
	return c;
}
