/* Samplers of the preloaded runtime: one interface so that soft, pebs, ibs
 * (and later inst) plug into the same per-thread lifecycle and the same
 * sample -> SAMPLE record -> bulletin board -> watchpoint arm path.
 *
 * A perf-based sampler (soft with task-clock, pebs, ibs) usually only
 * supplies the perf_event_attr (fill_attr) and the data access of a parsed
 * ring record (rec_access); the generic code (rt_perf_*) opens the event per
 * thread, maps its ring, routes its signal to the thread, drains the ring in
 * the signal handler and feeds every sample to rt_sample(). */
#ifndef CT_RT_SAMPLER_H
#define CT_RT_SAMPLER_H

#include <signal.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "decode.h"
#include "perf_ring.h"

struct rt_thread;
struct ct_record;

struct sampler_ops {
	const char *name;
	/* Once per process, before any thread_start; 0 or -errno (the runtime
	 * then records without samples and says why). */
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
	/* Throttling (may be NULL: the sampler cannot): on the thread itself,
	 * in its signal handler, double the thread's sampling period; returns
	 * the new period in the unit of the SAMPLE records' period field, or 0
	 * when it is already at its longest. */
	uint64_t (*lengthen_period)(struct rt_thread *t);

	/* Software watchpoints (may be NULL: the sampler has none; needs a
	 * sampler that sees every access of the thread): on the thread itself,
	 * its watched words changed: t->wp_armed == 0, or register i watches
	 * the 8 bytes at t->wp_addr[i] where t->wp_slot[i] >= 0.  The sampler
	 * calls rt_wp_soft_hit on the thread's first access to one of them. */
	void (*watch)(struct rt_thread *t);

	/* Once per process, after the writer thread exists and before the main
	 * thread's thread_start (may be NULL): events opened here with inherit
	 * follow the program's threads, not the writer.  0 or -errno. */
	int (*process_start)(void);

	/* For the generic perf path (rt_perf_thread_start): */
	/* Fill the event attr (type, config, period, sample_type...). The
	 * generic code sets disabled, exclude_kernel/hv, wakeup_events,
	 * use_clockid+clockid itself. */
	void (*fill_attr)(struct perf_event_attr *attr);
	/* Data access of one parsed sample; 0 or an enum ct_skip_reason. */
	int (*rec_access)(struct rt_thread *t, const struct perf_rec *r, struct dec_access *a);
	/* The record's period field for a perf sample (events or ns). */
	uint64_t (*rec_period)(struct rt_thread *t, const struct perf_rec *r);
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

/* Generic path: process one sample (signal handler context of thread t):
 * SAMPLE record or skip count, then bulletin board and watchpoints. */
void rt_sample(struct rt_thread *t, const struct rt_sample_in *s);
/* Where a sample's records go: rt_push (the thread's own ring, from the
 * thread) or the writer's merge (samples the writer decodes, rt_cpusamp.c). */
typedef int (*rt_emit_fn)(struct rt_thread *t, const struct ct_record *r);
/* rt_sample with the records sent to emit (rt_sample: emit = rt_push). */
void rt_sample_to(struct rt_thread *t, const struct rt_sample_in *s, rt_emit_fn emit);

/* Generic perf-ring sampler pieces (rt_perf.c). */
int rt_perf_thread_start(struct rt_thread *t, const struct sampler_ops *ops);
void rt_perf_thread_stop(struct rt_thread *t, int self);
int rt_perf_on_signal(struct rt_thread *t, siginfo_t *si, void *uc, const struct sampler_ops *ops);

#endif
