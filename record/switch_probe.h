/* What does a context switch cost with the soft sampler's inherited perf
 * events?  On some virtual machines (PVM guests) the kernel's perf work at
 * every switch of a sampled thread traps to the host: 10-15 us per switch,
 * several times the CPU time of programs that synchronize often, even when
 * no sample is ever taken.  POSIX per-thread CPU-time timers have no
 * per-switch cost (they are checked at the scheduler tick), but fire at most
 * once per tick and land kernel time on the instruction after the system
 * call.  commrec measures which path costs less here and tells the runtime
 * (COMMTRACE_SOFT_TIMER).  Where CPU-wide events are asked for and open
 * (privileged), the rings use those instead, which cost nothing at a
 * switch: no probe then (switch_probe_cpu_wide).
 *
 * The probe: a barrier-heavy program in small, run by the calling process:
 * SWITCH_PROBE_THREADS threads and the caller do a little work and meet at
 * a barrier, SWITCH_PROBE_SWEEPS times; first plain, then with one
 * task-clock sampling event per CPU opened as the runtime opens them
 * (inherit, the recording's period: no ring, the samples are dropped);
 * SWITCH_PROBE_ROUNDS times each, alternated; the process's CPU time (user +
 * system: what the program would pay, whatever the load) of the best run
 * of each kind, per context switch of the plain run.  About 0.1 to 0.3 s
 * on a loaded 2-core VM. */
#ifndef CT_SWITCH_PROBE_H
#define CT_SWITCH_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWITCH_PROBE_THREADS 3
#define SWITCH_PROBE_SWEEPS 500
#define SWITCH_PROBE_WORK 2000       /* additions between two barriers */
#define SWITCH_PROBE_ROUNDS 5
/* The timer path is chosen when the events add more than this share (in
 * percent) to the probe program's CPU time: half the 10% that a recording
 * may cost a barrier-heavy program (the probe switches about every 3 us of
 * CPU time, as the stencil kernel with a barrier per sweep does), the other
 * half left to the samples themselves. */
#define SWITCH_PROBE_LIMIT_PCT 5

struct switch_probe {
	uint64_t period_ns;       /* the events' sampling period */
	uint64_t switches;        /* context switches of the best plain run */
	uint64_t plain_ns;        /* best process CPU time without the events */
	uint64_t event_ns;        /* best with them */
	int64_t added_ns;         /* per switch: (event - plain) / switches, 0 if noise */
	int added_pct;            /* (event - plain) / plain, percent, 0 if noise */
	bool noise;               /* event < plain: no measurable cost (the runs' noise) */
	int open_errno;           /* the events could not be opened (then not timer: the
	                           * runtime falls back to the timers itself, saying why) */
	uint64_t ns;              /* wall time of the probe */
	bool timer;               /* verdict: the POSIX-timer path costs less here */
};

/* Whether the soft sampler's CPU-wide events open here (on the first
 * online CPU, with the runtime's attributes, soft_ring_attr, and a ring of
 * the runtime's size mapped; it needs CAP_PERFMON, root or
 * kernel.perf_event_paranoid <= 0): 0, or the errno.  Tried only where
 * COMMTRACE_SOFT_CPU_WIDE=1 asks for them (commrec(1), "The soft
 * sampler": their samples fall on a fixed grid of the CPU's clock). */
int switch_probe_cpu_wide(uint64_t period_ns);

/* Run the probe with events of that period; fills *p. */
void switch_probe_run(struct switch_probe *p, uint64_t period_ns);

/* From what was measured (plain_ns, event_ns, switches, open_errno): the
 * costs added_ns, added_pct, noise, and the verdict, timer. */
void switch_probe_decide(struct switch_probe *p);

/* One line of what was measured (CONFIG soft_probe_detail), e.g.
 * "inherited task-clock events at a 1000 us period add 12% CPU time, 0.4 us
 * per context switch (7253 switches: 25.9 ms against 23.1 ms); limit 5%", or
 * where the events' runs took less CPU time "...: no measurable cost (within
 * noise: 13.2 ms with them against 15.1 ms without, 1981 switches); limit 5%". */
void switch_probe_detail(const struct switch_probe *p, char *buf, size_t cap);

#endif
