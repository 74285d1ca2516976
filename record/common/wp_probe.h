/* Do debug-register watchpoints work here?  A functional probe, not just an
 * open: some hypervisors let perf breakpoints (PERF_TYPE_BREAKPOINT) open,
 * re-target (PERF_EVENT_IOC_MODIFY_ATTRIBUTES) and enable without error but
 * never make them fire, because they do not virtualize the debug registers.
 * Arming such watchpoints costs real time (an ioctl per arm) for nothing.
 *
 * The probe does on the calling thread what the runtime does on each of its
 * threads: it opens up to `want` breakpoints (read/write, 8 bytes, user
 * space only) on a dummy word, re-targets each to a word of its own with
 * PERF_EVENT_IOC_MODIFY_ATTRIBUTES, enables them, writes every word
 * WP_PROBE_WRITES times and reads how often each breakpoint counted.  It
 * takes some tens of microseconds (commrec runs it once per recording and
 * for --list-samplers; the cost is in commrec(1)). */
#ifndef CT_WP_PROBE_H
#define CT_WP_PROBE_H

#include <stddef.h>
#include <stdint.h>

#define WP_PROBE_WRITES 16

enum wp_verdict {
	WP_FIRE = 0,        /* registers open and count the writes */
	WP_NO_FIRE = 1,     /* they open (and re-target) but never count */
	WP_NO_OPEN = 2,     /* perf breakpoints cannot be opened here */
};

struct wp_probe {
	int want;           /* registers asked for (0..CT_WP_MAX) */
	int opened;         /* that opened */
	int retargeted;     /* of those, that accepted MODIFY_ATTRIBUTES */
	int fired;          /* of those, that counted every write */
	int open_errno;     /* why the first failed open failed, else 0 */
	uint64_t counts[4]; /* what each register counted (WP_PROBE_WRITES expected) */
	uint64_t ns;        /* wall time of the probe */
	enum wp_verdict verdict;
};

/* Run the probe for up to want (<= CT_WP_MAX) registers; fills *p. */
void wp_probe_run(struct wp_probe *p, int want);
/* The same with breakpoints opened per CPU (pid -1, on the CPU the calling
 * thread runs on, which it is pinned to meanwhile): what the soft sampler's
 * per-CPU watchpoints need (record/runtime/rt_cpuwp.c); they open only
 * where perf_event_paranoid allows per-CPU events (<= 0, or
 * CAP_PERFMON/CAP_SYS_ADMIN). */
void wp_probe_cpu_run(struct wp_probe *p, int want);

/* The verdict as stored in the trace (CONFIG watchpoint_probe): "fires",
 * "no-fire" or "no-open". */
const char *wp_verdict_name(enum wp_verdict v);

/* One line of what was measured, e.g. "4 of 4 debug registers opened and
 * were re-targeted; none counted any of 16 writes to its word" (CONFIG
 * watchpoint_probe_detail). */
void wp_probe_detail(const struct wp_probe *p, char *buf, size_t cap);

/* What nregs registers add to each context switch of a thread, in ns of
 * its CPU time, enabled (armed_ns) and open but disabled (open_ns), and,
 * with a sampling period, what a task-clock sampling event of the thread's
 * own at that period adds (sampling_ns: the soft sampler's per-thread
 * event): two threads on the calling thread's cpu take turns (sched_yield)
 * carrying nothing, and each of these; a thread's CPU time per context
 * switch it made (getrusage; a measurement where a tenth of the yields
 * switched nothing, the other thread not there, is left out); the least of
 * 3 rounds (6 when the base is missing or above the armed registers or the
 * event: other work's noise) of up to 1000 turns or 20 ms each (at most
 * 480 ms).  A hypervisor that traps every write of the debug registers
 * makes armed_ns microseconds; open ones still make the thread's perf
 * context switch with it; a sampling event starts and stops a kernel timer
 * at each switch.  All 0 when it cannot be measured (no perf breakpoints,
 * the cpu cannot be pinned); sampling_ns 0 where such an event does not
 * open. */
struct wp_switch_cost {
	uint64_t armed_ns, open_ns, sampling_ns;
};
struct wp_switch_cost wp_switch_cost(int nregs, uint64_t sampling_period_ns);

/* The probes' task-clock sampling event: the soft sampler's
 * (soft_sample_attr), the ip only (this and record/switch_probe.c). */
struct perf_event_attr;
void probe_task_clock_attr(struct perf_event_attr *a, uint64_t period_ns);

#endif
