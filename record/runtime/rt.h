/* libcommrec.so internals: shared by the runtime sources. */
#ifndef CT_RT_H
#define CT_RT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <linux/perf_event.h>

#include "commtrace.h"
#include "comdetective.h"
#include "recring.h"
#include "perf_ring.h"
#include "sampler.h"
#include "rtstatus.h"

#define RT_EXPORT __attribute__((visibility("default")))
#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

#define RT_RING_UNITS_DEFAULT 4096   /* 64-byte units: 260 KiB per thread */
#define RT_MAX_THREADS 8192      /* registry slots (live + not yet drained) */
#define RT_ALTSTACK_BYTES (64 * 1024)
#define RT_SIG_MAGIC 0x43540000u  /* sigev_value / sig_data tag: "CT" */

enum rt_thread_state {
	RT_T_RUNNING = 1,
	RT_T_ENDED = 2,            /* the thread is gone: the writer finishes it */
};

struct rt_thread {
	uint32_t index, parent;
	uint32_t slot;             /* in rt_threads[] */
	pid_t tid;
	uint64_t start_ns, end_ns; /* its THREAD_START time; THREAD_END's (set before end_pushed) */
	int spool_fd;
	uint64_t spool_dev, spool_ino; /* identity of spool_fd (see rt_fd_is) */
	_Atomic int state;
	uint64_t fs_base, stack_lo, stack_hi;
	size_t map_bytes;          /* this struct + ring slots, one mmap */
	struct recring ring;

	/* sampler (owned by the thread) */
	const struct sampler_ops *sampler;
	int samp_fd;               /* perf event (the first: owns the ring), or -1 */
	int samp_more_fd[RT_PERF_MAX_EVENTS - 1]; /* the others, writing into its ring */
	_Atomic int samp_nmore;
	struct pmu_conv samp_conv; /* the events' ids, kinds and periods (rt_perf.c) */
	uint64_t samp_period_max;  /* throttling: the first event's longest period */
	void *samp_map;            /* perf mmap (meta page + data) */
	size_t samp_map_len, samp_data_len;
	struct perf_sample_fmt samp_fmt;
	timer_t timer;
	bool timer_ok;
	uint64_t period_ns;        /* soft: ns per sample */
	uint64_t timer_cpu_prev;   /* soft, timer: thread CPU time at the last expiration */
	uint64_t hnd_start, hnd_end; /* last handler run (CLOCK_MONOTONIC) */
	_Atomic int stopped;       /* no more sampling (thread end, exit, fork) */
	/* soft, inherited path (rt_cpusamp.c): the writer decodes this
	 * thread's samples and owns its sample state (history, skip counts) */
	_Atomic bool samp_by_writer;
	bool w_end_seen;           /* writer: end_pushed seen before this pass's collect */
	bool w_closed;             /* writer: THREAD_END written */
	uint64_t w_pass;           /* writer: the last pass with a sample of it (rt_cpusamp.c) */

	/* sample state (signal handler context) */
	struct cd_history cd;              /* Algorithm 1 state: usable samples, t_prev */
	uint64_t skip[16];                 /* pending skip counts by reason */
	uint64_t skip_pending;
	uint64_t skip_runtime;             /* samples in the runtime itself */
	uint64_t nsamples, pmu_lost, pmu_throttle;
	uint64_t hnd_ns, hnd_runs;         /* time in sampler handlers (stats, verbose 3) */
	uint64_t trap_ns, traps, arms, arm_ns;
	uint64_t rnd;

	/* the runtime's own cost on this thread, and throttling (rt_signal.c) */
	_Atomic int in_handler;            /* in the runtime's signal handler now */
	uint32_t cost_runs;                /* our signals handled in this window */
	uint32_t cost_timed;               /* of them, timed in thread CPU time */
	uint64_t cost_ns;                  /* the CPU time of the timed ones */
	uint64_t cost_cpu0;                /* thread CPU time at the window's start */
	uint32_t throttles;                /* times the period was lengthened */
	uint32_t peak_share;               /* highest runtime share seen, percent */
	bool queue_throttled;              /* throttled for a full queue in this window */

	/* watchpoints */
	int nwp;                   /* registers opened */
	int wp_fd[CT_WP_MAX];
	struct perf_event_attr wp_attr[CT_WP_MAX]; /* templates: only bp_addr changes */
	uint64_t wp_addr[CT_WP_MAX];
	int8_t wp_slot[CT_WP_MAX]; /* register i is index wp_slot[i] in the last arm, -1: not armed */
	int wp_armed;              /* registers armed now (0 = none) */
	bool wp_group;             /* registers opened as one group (register 0 leads) */
	bool wp_hit;
	uint64_t wp_arm_time;
	uint64_t wp_dummy;         /* disabled breakpoints point here */
	uint64_t wp_setup_fail;
	struct cd_lines wlines;    /* software line watches (rt_cfg.wp_lines) */
	uint64_t wp_closed_cpu;    /* rt_check_switch_cost closed the registers: thread CPU ns then */
	uint64_t wp_closed_switches; /* and its context switches then */
	/* the perf events' cost at context switches (rt_check_switch_cost) */
	uint64_t wp_acct_switches; /* the thread's context switches at its last sample */
	uint64_t wp_acct_cpu;      /* its CPU ns then */
	uint64_t wp_spent_ns;      /* what its registers have cost so far (estimated) */
	bool wp_armed_since;       /* armed at some time since its last sample */
	uint64_t wp_judged, wp_allowed; /* samples judged, and those that allowed an arming */
	/* soft with watchpoints at the default period: the thread starts on its
	 * timer, without perf events of its own; it asks for them where its
	 * context switches leave room (rt_check_switch_cost), the writer opens
	 * them (rt_soft_open_late), its handler adopts them (sampler_soft.c) */
	_Atomic int ev_state;      /* RT_EV_* */
	int ev_nwp;                /* registers the writer opened */
	uint64_t ev_asked_cpu, ev_asked_switches; /* its CPU ns and switches when it asked */
	bool samp_leave;           /* soft: leave the per-thread event for the timer, at the
	                            * end of this handler (rt_check_switch_cost) */
	uint64_t samp_left_cpu;    /* ... left: thread CPU ns then */
	uint64_t samp_left_switches; /* and its context switches then */
	uint64_t samp_left_each;   /* and what each cost with the event (registers open included) */

	/* allocation call-site cache: (caller, stack depth) -> id */
#define RT_CS_CACHE 256
	struct { uint64_t key; uint32_t id; } cs_cache[RT_CS_CACHE];
	uint64_t cs_hits, cs_misses;
	uint64_t ring_waits;       /* rt_wait_room found the ring full */
	uint64_t ring_stalled_at;  /* 1 + the ring's tail when a wait gave up, else 0 */

	/* signal stack */
	void *altstack;

	/* writer side */
	struct ct_sink *sink;
	void *counts_page;         /* the spool file's first page, mapped shared (COUNTS) */
	uint64_t block_since;      /* when the sink's block got its first record */
	uint64_t dropped_unsunk;   /* records dropped before reaching the sink */
	uint64_t last_time;
	uint64_t written, lost_write;
	uint64_t lost_in_block;    /* losses reported by LOST records in the current block */
	uint32_t lostrecs_in_block;
	bool sink_failed, write_error_logged, spool_lost;
	_Atomic int end_pushed;    /* THREAD_END pushed */

	uint8_t scratch[4096];     /* perf ring wrap-around copies */
};

struct rt_config {
	char spool[4096];
	char sampler[16];
	uint64_t period;           /* soft: us */
	int watchpoints;           /* 0..4 */
	uint32_t throttle;         /* percent of CPU time, 0: never throttle */
	uint32_t board_size, line_size;
	bool no_alloc;
	bool soft_timer;           /* COMMTRACE_SOFT_TIMER=1 */
	bool soft_cpu_wide;        /* COMMTRACE_SOFT_CPU_WIDE=1: CPU-wide rings tried first */
	bool wp_async;             /* COMMTRACE_WP_ASYNC=1: O_ASYNC signal instead of sigtrap */
	bool wp_cpu;               /* COMMTRACE_WP_CPU=1: soft: per-CPU watchpoints armed by the writer */
	bool wp_soft;              /* COMMTRACE_WP_SOFT=1: software watchpoints (sampler_ops.watch) */
	uint32_t wp_lines, wp_life; /* software: line watches per thread (0: words), their life */
	uint64_t wp_switch_ns;     /* COMMTRACE_WP_SWITCH_NS: armed registers' cost per context switch */
	uint64_t wp_open_switch_ns; /* COMMTRACE_WP_OPEN_SWITCH_NS: the same, open but disabled */
	uint64_t soft_event_switch_ns; /* COMMTRACE_SOFT_EVENT_SWITCH_NS: a per-thread soft event's */
	uint32_t wp_budget;        /* COMMTRACE_WP_BUDGET: percent of a thread's CPU time, 0 no limit */
	int verbose;
	int sig;                   /* the runtime's real-time signal */
	uint32_t ring_slots;       /* record ring units (COMMTRACE_RING_UNITS) */
	int zlevel;
};

extern struct rt_config rt_cfg;

/* rt_thread.ev_state: a thread's own perf events (sampling event, debug
 * registers) */
enum {
	RT_EV_AT_START,   /* opened at its start, or none to open (not the case below) */
	RT_EV_TIMER,      /* sampled by its timer, none open yet */
	RT_EV_WANTED,     /* asked for them (its handler) */
	RT_EV_OPENING,    /* the writer opens them */
	RT_EV_READY,      /* open and disabled: for its handler to take */
	RT_EV_ADOPTED,    /* its handler took them, the timer stopped */
	RT_EV_DONE,       /* none from now on (refused, left, or stopping) */
};
extern _Atomic int rt_active;     /* recording this process (0 after fork/exec/exit) */
extern _Atomic int rt_exiting;
extern struct board rt_board;
extern bool rt_board_ok;
extern uintptr_t rt_text_lo, rt_text_hi;  /* libcommrec.so's code */
extern pid_t rt_pid;
extern _Atomic int rt_live_threads, rt_main_exited;

extern RT_TLS struct rt_thread *rt_self;
extern RT_TLS int rt_guard;       /* >0: runtime code on this thread: no recording */

/* time */
static inline uint64_t rt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time, ns (async-signal-safe). */
static inline uint64_t rt_thread_cpu_ns(void)
{
	struct timespec ts = { 0, 0 };   /* 0 if the clock fails */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* rt_marker.c: a libgomp parallel region, told to rt_omp_sync when it is
 * set (the inst sampler's full mode, record/inst/inst_omp.c): the fork and
 * the join on the thread that starts the region (before and after it), the
 * begin and end of the region's body on each thread of the team. */
enum rt_omp_phase { RT_OMP_FORK, RT_OMP_BEGIN, RT_OMP_END, RT_OMP_JOIN };
extern void (*rt_omp_sync)(enum rt_omp_phase phase, uintptr_t ip);

/* rt_real.c: the next definition of a wrapped function (also in a library
 * opened with RTLD_LOCAL), or NULL; rt_no_real stops the program with the
 * reason (a wrapper called with nowhere to go). */
void *rt_real(const char *name);
_Noreturn void rt_no_real(const char *name);

/* rt_main.c */
void rt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rt_push(struct rt_thread *t, const struct ct_record *r);
int rt_push_wait(struct rt_thread *t, const struct ct_record *r);
void rt_wait_room(struct rt_thread *t, unsigned type);
struct rt_thread *rt_thread_begin(uint32_t parent, uint32_t index);
void rt_thread_finish(struct rt_thread *t, int status);
void rt_thread_stop_sampling(struct rt_thread *t, int self);
void rt_thread_stats(struct rt_thread *t);
void rt_shutdown(int status);
extern struct rt_thread *_Atomic rt_threads[RT_MAX_THREADS];
extern _Atomic uint32_t rt_threads_hw;   /* high-water mark of used registry slots */
void rt_flush_skips(struct rt_thread *t, uint64_t now);
void rt_flush_skips_to(struct rt_thread *t, uint64_t now, rt_emit_fn emit);
/* Where the runtime's descriptors go (rt_main.c): open them between
 * rt_fd_window_begin and _end, then move each with rt_fd_high (which
 * closes it and returns -1, errno EMFILE, where there is no room). */
void rt_fd_window_begin(void);
void rt_fd_window_end(void);
int rt_fd_high(int fd);
bool rt_fd_room(void);
bool rt_fd_is(int fd, uint64_t dev, uint64_t ino);
void rt_fd_id(int fd, uint64_t *dev, uint64_t *ino);
void rt_perf_fd_opened(int fd);
void rt_perf_close(int fd);
int rt_create_internal_thread(pthread_t *th, void *(*fn)(void *), void *arg);

/* Wake the writer when a ring is half full.  fill is relative to a
 * possibly stale view of the writer's progress: poke at every quarter of
 * the ring above half of that view. */
extern uint32_t rt_poke_mark;
void rt_writer_poke(void);
static inline void rt_poke_if(uint32_t fill)
{
	if (fill >= rt_poke_mark && (fill & (rt_poke_mark - 1)) == 0)
		rt_writer_poke();
}

/* rt_writer.c */
/* The thread's spool file: created (exclusively), its THREAD and COUNTS
 * sections written, the counts mapped so that the ring counts into the
 * file.  0, or -1 with errno (the thread is then not recorded). */
int rt_spool_open(struct rt_thread *t, const struct ct_thread_info *ti);
/* A thread that will not be recorded after all: its spool file goes. */
void rt_spool_abandon(struct rt_thread *t);
int rt_writer_start(void);
void rt_writer_poke(void);
void rt_writer_stop(void);           /* final drain, flush, join */
void rt_writer_emergency(int sig);      /* from a fatal signal handler */
/* full-mode backpressure (inst --full): producers waiting for ring room
 * sleep on the writer's room word until it has drained a ring to half */
extern _Atomic uint32_t rt_full_waiters;
uint32_t rt_writer_room_word(void);
void rt_writer_wait_room(uint32_t word, long max_ns);

/* rt_signal.c */
int rt_signals_init(void);
int rt_altstack_setup(struct rt_thread *t);
void rt_altstack_teardown(struct rt_thread *t);
int rt_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void rt_block_our_signals(sigset_t *old);

/* rt_wp.c */
int rt_wp_thread_start(struct rt_thread *t);
/* The writer, for a thread that asked (RT_EV_OPENING): its registers,
 * opened disabled on its tid, into wp_fd[] and ev_nwp; how many. */
int rt_wp_open_late(struct rt_thread *t);
void rt_wp_thread_stop(struct rt_thread *t, int self);
/* Arm the watchpoints on the words cd_step chose (plan); WP_ARM record. */
void rt_wp_arm(struct rt_thread *t, const struct ct_wp_arm *plan, uint64_t now);
void rt_wp_disarm(struct rt_thread *t);
/* Keep what the thread's perf events cost at its context switches (its
 * debug registers; soft: its own sampling event) within rt_cfg.wp_budget %
 * of its CPU time (on the thread, at each sample): false if the registers
 * must not be armed at this sample (then they are disarmed); closes them
 * for good where being open alone costs more; asks the soft sampler to
 * leave its event for the thread's timer (samp_leave) where the event
 * costs more. */
bool rt_check_switch_cost(struct rt_thread *t);
int rt_wp_on_sigtrap(struct rt_thread *t, siginfo_t *si, void *uc);
/* Software watchpoints: the thread's own access (kind, at ip) touched the
 * word of register i: WP_HIT, then everything is disarmed, as for a trap. */
void rt_wp_soft_hit(struct rt_thread *t, int i, uint64_t ip, unsigned kind);
/* A trap's access kind from the instruction before its ip (decoded: 0 when
 * dec_sample_access or soft_sample_access decoded it into a): set only where
 * that instruction's address is on the watched line, since its registers may
 * have changed since the access. */
struct dec_access;
void rt_wp_hit_kind(int decoded, const struct dec_access *a, uint64_t watched, uint8_t *kind);
/* Software line watches: the WP_ARM records of the watches cd_step armed
 * (and the sampler told of every change); a hit of watch `slot` by the
 * access's bytes [addr, addr+len) in that line (the sampler has updated
 * the slots: cd_lines_hit). */
void rt_wp_lines_step(struct rt_thread *t, const struct cd_step *st, uint64_t now);
/* Software line watches between two samples of t (its own thread): arm the
 * store samples logged since its last arms (cd_lines_catch_up), if any. */
void rt_lines_catch_up(struct rt_thread *t);
/* Algorithm 1's rules as the recorder applies them (rt_sample.c) */
struct cd_rules rt_recorder_rules(void);
void rt_wp_line_hit(struct rt_thread *t, unsigned slot, uint64_t addr, unsigned len, uint64_t ip,
                    unsigned kind);
int rt_wp_on_async(struct rt_thread *t, siginfo_t *si, void *uc);
extern bool rt_wp_sigtrap;         /* trap delivery: sigtrap (true) or O_ASYNC */

/* rt_perf.c: the runtime's perf descriptors */
void rt_perf_mark_fd(int fd);
int rt_perf_route_signal(int fd, pid_t tid);
/* rt_perf.c: one perf record of thread t -> its records, through
 * t->sampler's perf_convert: from the thread's own ring in its handler
 * (emit = rt_push) or from a CPU ring in the writer (rt_cpusamp.c).
 * Samples in the kernel, in the runtime's code or inside [prev_start,
 * prev_end] (the thread's previous handler run) are not the program's. */
void rt_perf_rec(struct rt_thread *t, const struct perf_rec *r, uint64_t prev_start,
                 uint64_t prev_end, rt_emit_fn emit);
/* rt_perf.c: a sample that is the runtime's own, not the program's access:
 * its ip in the runtime's code, or its time (0: unknown) inside
 * [prev_start, prev_end], the thread's previous signal handler run.  The one
 * filter of every sampler that samples by interrupts (counted as
 * skip_runtime). */
bool rt_sample_is_runtime(uint64_t ip, uint64_t time, uint64_t prev_start, uint64_t prev_end);
/* rt_perf.c: close thread t's sample events in a forked child */
void rt_perf_fork_child(struct rt_thread *t);

/* sampler_soft.c, writer, at each pass: open the perf events of the
 * threads that asked for them (RT_EV_WANTED) */
void rt_soft_open_late(void);

/* rt_cpusamp.c: the soft sampler's inherited per-CPU path */
int rt_cpusamp_open(uint64_t period_ns);     /* main thread, after the writer exists */
bool rt_cpusamp_active(void);
const struct perf_sample_fmt *rt_cpusamp_fmt(void);
void rt_cpusamp_stop(void);                  /* writer, final pass: no more samples */
void rt_cpusamp_forget(void);                /* fork child: not ours */
/* Writer, at the start of a pass: drain the CPU rings into per-thread
 * records sorted by time; true when a ring was half full. */
bool rt_cpusamp_collect(void);
/* Writer: the next collected record of t with time <= until, or NULL
 * (threads are visited in slot order within a pass). */
const struct ct_record *rt_cpusamp_next(struct rt_thread *t, uint64_t until);
void rt_cpusamp_log_stats(void);

/* rt_cpuwp.c: its per-CPU watchpoints, armed by the writer */
int rt_cpuwp_open(unsigned nregs);           /* main thread, before rt_cpusamp_open; 0 or -errno */
bool rt_cpuwp_active(void);
void rt_cpuwp_stop(void);                    /* writer, final pass */
void rt_cpuwp_forget(void);                  /* fork child */
/* writer: t's watch ends with it (before its memory is unmapped, so that a
 * later thread at the same address does not inherit it) */
void rt_cpuwp_thread_gone(const struct rt_thread *t);
/* Writer, each pass, before the samples: the hits in the CPUs' rings (the
 * watchers' WP_HIT records through emit); live watches enabled again. */
struct soft_tid_map;
void rt_cpuwp_hits(const struct soft_tid_map *map, rt_emit_fn emit);
/* Writer: Algorithm 1 on sample record s of t, the pass's samples in time
 * order; last: t's last of the pass (only it may arm); watchers: threads
 * with samples in the pass (they share the registers). */
void rt_cpuwp_sample(struct rt_thread *t, const struct ct_record *s, bool last, unsigned watchers,
                     rt_emit_fn emit);
void rt_cpuwp_log_stats(void);

/* rt_alloc.c */
void rt_alloc_init(void);
void *rt_boot_alloc(size_t size);

/* rt_status.c: the status page for the launcher (rtstatus.h) */
extern struct rt_status *rt_st;
void rt_status_init(void);
void rt_status_thread_started(void);
void rt_status_unrecorded(enum rt_unrecorded_why why);
void rt_status_timer_thread(int why_errno);
void rt_status_timer_sample(uint64_t cpu_ns);
void rt_status_cpu_rings(uint32_t n, bool cpu_wide);
void rt_status_ring_unattributed(uint64_t n);
void rt_status_ring_lost_unattributed(uint64_t n);
void rt_status_ring_lost_foreign(uint64_t n);
void rt_status_cpu_wp(uint32_t nregs, uint64_t arms, uint64_t hits, uint64_t other);

/* rt_maps.c */
void rt_write_maps(void);
void rt_find_own_text(void);

#endif
