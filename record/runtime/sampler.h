/* Samplers of the preloaded runtime: one interface so that soft, pebs, ibs
 * and inst plug into the same per-thread lifecycle and the same
 * sample -> SAMPLE record -> bulletin board -> watchpoint arm path.
 *
 * The perf-based samplers (soft with task-clock, pebs, ibs) share one perf
 * sample path (rt_perf.c) and are converters on it: a sampler says which
 * events a thread opens (perf_events) and how (perf_open), and turns one
 * parsed ring record into a sample (perf_convert).  rt_perf.c opens the
 * events on each thread into one ring, routes their signal to the thread,
 * drains the ring in the handler, drops the samples that are the runtime's
 * own (once, for every sampler) and feeds the rest to rt_sample().  The
 * soft sampler's inherited per-CPU rings (rt_cpusamp.c, drained by the
 * writer) go through the same record function.  See doc/ARCHITECTURE.md,
 * "How a sample travels". */
#ifndef CT_RT_SAMPLER_H
#define CT_RT_SAMPLER_H

#include <signal.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "decode.h"
#include "perf_ring.h"
#include "pmu_sample.h"

struct rt_thread;
struct ct_record;
struct rt_sample_in;

struct sampler_ops {
	const char *name;
	/* Once per process, before any thread_start (NULL: nothing to probe
	 * before the writer exists, soft); 0 or -errno (the runtime then
	 * records without samples and says why). */
	int (*process_init)(void);
	/* On the thread itself, at its start; 0 or -errno (the thread then
	 * runs without samples; counted). */
	int (*thread_start)(struct rt_thread *t);
	/* On the thread itself at its end, or from another thread at process
	 * exit (stop only: must not free what a running handler may use). */
	void (*thread_stop)(struct rt_thread *t, int self);
	/* A signal that may be this sampler's for thread t: the runtime's
	 * signal with si_code SI_TIMER and our tag, or any POLL_* code (check
	 * si_fd against your fds); returns 1 if it was this sampler's. */
	int (*on_signal)(struct rt_thread *t, siginfo_t *si, void *uc);
	/* Throttling (NULL only for inst, which samples without signals): on
	 * the thread itself, in its signal handler, double the thread's
	 * sampling period; returns the new period in the unit of the SAMPLE
	 * records' period field, or 0 when it is already at its longest. */
	uint64_t (*lengthen_period)(struct rt_thread *t);

	/* Software watchpoints (may be NULL: the sampler has none; needs a
	 * sampler that sees every access of the thread): on the thread itself,
	 * its watched words or lines changed: words (rt_cfg.wp_lines 0):
	 * t->wp_armed == 0, or register i watches the 8 bytes at t->wp_addr[i]
	 * where t->wp_slot[i] >= 0, and the sampler calls rt_wp_soft_hit on the
	 * thread's first access to one of them; lines: the live slots of
	 * t->wlines, and rt_wp_line_hit on each hit cd_lines_hit reports. */
	void (*watch)(struct rt_thread *t);

	/* Once per process, after the writer thread exists and before the main
	 * thread's thread_start (NULL: nothing to open there; soft opens its
	 * per-CPU rings here): events opened here with inherit
	 * follow the program's threads, not the writer.  0 or -errno. */
	int (*process_start)(void);

	/* The one perf sample path (rt_perf.c); NULL only for a sampler that
	 * does not sample through perf (inst). */
	/* The events every thread opens, sharing the first one's ring: fills
	 * attrs[0..n) (type, config, period, sample_type, exclude_*; the path
	 * sets disabled, wakeup_events, clockid, inherit itself) and kinds[i]
	 * (PMU_KIND_* of pmu.h: what event i counts); returns n, 1..max. */
	size_t (*perf_events)(struct perf_event_attr *attrs, uint8_t *kinds, size_t max);
	/* Opens one of them on a thread (perf_event_open's arguments); may
	 * lower a->precise_ip or clear a->exclude_kernel where the PMU asks. */
	int (*perf_open)(struct perf_event_attr *a, pid_t pid, int cpu, int group_fd,
	                 unsigned long flags);
	/* One PERF_RECORD_SAMPLE of thread t, not the runtime's own and not in
	 * the kernel: fills *s (time, ip, cpu are set; the converter sets period,
	 * skip, acc and may override the rest). */
	void (*perf_convert)(struct rt_thread *t, const struct perf_rec *r, struct rt_sample_in *s);
};

extern const struct sampler_ops rt_sampler_soft;
extern const struct sampler_ops rt_sampler_pebs;   /* sampler_pebs.c */
extern const struct sampler_ops rt_sampler_ibs;    /* sampler_ibs.c */
/* record/inst/inst_rt.c: linked into libcommrec-inst only (weak here) */
extern const struct sampler_ops rt_sampler_inst __attribute__((weak, visibility("hidden")));

/* One generic sample, as the samplers hand it to the runtime. */
struct rt_sample_in {
	uint64_t time, ip, period;
	uint32_t cpu;
	uint64_t data_src;
	uint32_t weight;
	int skip;                /* 0, or an enum ct_skip_reason */
	struct dec_access acc;   /* valid when skip == 0 */
	uint8_t extra_flags;     /* CT_SAMPLE_EXACT, HAS_DATA_SRC, HAS_WEIGHT */
};

/* A hardware sampler's converted sample (record/common/pmu_sample.c) as
 * the runtime's: every field but a zero time (s->time is kept then). */
void rt_sample_from_pmu(const struct pmu_sample *p, struct rt_sample_in *s);

/* Generic path: process one sample (signal handler context of thread t):
 * SAMPLE record or skip count, then bulletin board and watchpoints. */
void rt_sample(struct rt_thread *t, const struct rt_sample_in *s);
/* Where a sample's records go: rt_push (the thread's own ring, from the
 * thread) or the writer's merge (samples the writer decodes, rt_cpusamp.c). */
typedef int (*rt_emit_fn)(struct rt_thread *t, const struct ct_record *r);
/* rt_sample with the records sent to emit (rt_sample: emit = rt_push). */
void rt_sample_to(struct rt_thread *t, const struct rt_sample_in *s, rt_emit_fn emit);

/* The one perf sample path (rt_perf.c), for the sampler t->sampler:
 * open its events on t (t == rt_self, or see below), stop them (self:
 * on t itself; else only disable: a handler may still read the ring),
 * drain the ring on its signal (1 if si was one of t's events, 0 otherwise),
 * and double every event's period (throttling; the new period of the first
 * event, or 0 at its longest: RT_PERF_THROTTLE_MAX times the first). */
#define RT_PERF_MAX_EVENTS PMU_CONV_MAX_EVENTS
#define RT_PERF_THROTTLE_MAX 1024
int rt_perf_thread_start(struct rt_thread *t);
/* rt_perf_thread_start in two steps: open them disabled on t's tid (the
 * writer may do it for t), enable them (on t: else a failure would close
 * them from another thread) */
int rt_perf_thread_open(struct rt_thread *t);
int rt_perf_thread_enable(struct rt_thread *t);
void rt_perf_thread_stop(struct rt_thread *t, int self);
int rt_perf_on_signal(struct rt_thread *t, siginfo_t *si, void *uc);
uint64_t rt_perf_lengthen_period(struct rt_thread *t);

#endif
