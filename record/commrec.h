/* commrec, the launcher: shared declarations of the record/ *.c files.
 *
 *   commrec.c   main: the steps of a recording, in order
 *   options.c   command line -> struct rec_opts, --help, --version
 *   sampler.c   which samplers work here, --list-samplers, the choice for auto
 *   meta.c      meta.zst in the spool: HEADER, MACHINE, CONFIG, CMDLINE
 *   launch.c    runtime lookup, environment, fork/exec, signal forwarding, wait
 *   finish.c    build-ids into maps-PID.txt, ct_join, the SUMMARY, the last line
 */
#ifndef COMMREC_H
#define COMMREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtconfig.h"
#include "wp_probe.h"
#include "switch_probe.h"

/* Exit statuses of commrec itself (otherwise it returns the program's). */
#define REC_EXIT_FAILED CT_EXIT_RECORD_FAILED  /* 125: could not record */
#define REC_EXIT_NOEXEC 126                    /* program found but not executable */
#define REC_EXIT_NOTFOUND 127                  /* program not found */

#define REC_MAX_EVENTS 16

/* Sampling periods (sampler.c): defaults, and the floors below which the
 * runtime's signal handler would take over the program. */
#define REC_SOFT_PERIOD_DEFAULT 1000     /* soft: CPU microseconds */
#define REC_SOFT_PERIOD_MIN CT_SOFT_PERIOD_MIN
#define REC_EVENT_PERIOD_DEFAULT 500000  /* pebs, ibs: events */
/* inst: accesses.  A sample with software watchpoints costs about 1.3 us
 * here (1.3 ns per access at this period); debug-register-like watches
 * (a life of 2 samples) caught the kernels' neighbour exchanges only at
 * this period or shorter, line watches live 16 samples (doc/commrec.1). */
#define REC_INST_PERIOD_DEFAULT 1000
/* inst (sampled): the line monitor's window J, in stores, unless
 * --owner-window is given (0: none).  Measured against 16, 64 and 128 on
 * the kernels (README, commrec(1)): 32 held the stencil's r >= 0.95 in 10
 * of 10 runs, with fewer windows lost to a full table than 64. */
#define REC_OWNER_WINDOW_DEFAULT 32
#define REC_EVENT_PERIOD_MIN 10000       /* pebs, ibs */
#define REC_THROTTLE_DEFAULT 25          /* percent of a thread's CPU time */
/* inst's software watchpoints: lines watched per thread, and the life of a
 * watch in its thread's accesses: a thread with a accesses takes a / N
 * samples (one countdown of mean N for loads, one for stores), so the
 * default life is this over the period, in samples (16 at the default
 * period; measured on the kernels and third-party programs: doc/commrec.1,
 * The inst sampler) */
#define REC_WATCH_LINES_DEFAULT 16
#define REC_WATCH_LIFE_ACCESSES 16000

struct rec_opts {
	const char *output;          /* -o (default "trace.zst") */
	bool force;                  /* -f */
	const char *sampler;         /* -s as given: auto pebs ibs soft inst */
	uint64_t period;             /* -c, 0 = default of the sampler */
	bool force_wp;               /* --force-watchpoints: arm even if they do not fire */
	const char *events[REC_MAX_EVENTS]; /* -e NAME[@PERIOD] */
	int nevents;
	int watchpoints;             /* -w, -1 = as many as the machine gives */
	const char *wp_kind;         /* --watchpoint-kind: software, debug, NULL = by sampler */
	int watch_lines;             /* --line-watches: software line watches per thread (-1: default) */
	int watch_life;              /* --line-watch-life: samples a line watch lives (0: default,
	                                REC_WATCH_LIFE_ACCESSES over the period) */
	int board_size;              /* -b */
	int line_size;               /* --line-size, 0 = from sysfs */
	bool no_alloc;               /* --no-alloc */
	bool full;                   /* --full (inst) */
	bool full_all;               /* --full=all: no filter (FORMAT.md) */
	uint64_t owner_window;       /* --owner-window J (inst), 0: none; not given: the
	                                default for inst sampled, rec_default_owner_window */
	bool owner_window_given;     /* --owner-window */
	bool keep_spool;             /* --keep-spool */
	const char *recover;         /* --recover SPOOL */
	bool output_given;           /* -o */
	int verbose;                 /* -q: -1, default 0, -v: 1, -vv: 2 */
	char **argv;                 /* the program and its arguments */
	int argc;
	/* what the launcher decided */
	const char *sampler_used;    /* resolved: pebs ibs soft inst */
	char sampler_reason[1024];
	struct wp_probe wp_probe;    /* do watchpoints work here (wp_probe.h) */
	uint64_t wp_switch_ns;       /* what the armed registers add to a context switch (0: unknown) */
	uint64_t wp_open_switch_ns;  /* what they add open but disabled */
	uint64_t soft_event_switch_ns; /* what a per-thread soft sampling event adds (0: unknown) */
	struct switch_probe soft_probe; /* soft: what perf events cost per switch (switch_probe.h) */
	bool soft_probed;            /* soft_probe was run (not COMMTRACE_SOFT_TIMER) */
	bool soft_timer;             /* soft: POSIX CPU-time timers, not perf events */
	bool soft_cpu_wide;          /* soft: the per-CPU rings' events are CPU-wide (they open here) */
	int soft_cpu_wide_errno;     /* ... else why not (0: not tried) */
	char soft_path_reason[256];  /* soft: why that path (CONFIG soft_path_reason) */
	int wp_available;            /* debug registers that open and fire here, 0..4 */
	int wp_used;                 /* watchpoints passed to the runtime */
	bool wp_soft;                /* they are software watchpoints (inst) */
	struct wp_probe wp_cpu_probe; /* soft: do per-CPU breakpoints open and fire (wp_probe.h) */
	bool wp_cpu;                 /* soft: watchpoints per CPU, armed by the writer */
	char wp_cpu_reason[512];     /* why (CONFIG watchpoint_cpu_reason) */
	int line_size_used;
	bool line_size_from_sysfs;
	uint64_t period_used;        /* -c or the default, raised to the floor */
	uint64_t period_floor;       /* the sampler's shortest period (0: none) */
	double throttle_share;       /* runtime CPU share that lengthens the period (0: off) */
	const char *period_unit;     /* "us-cpu" or "events" */
	char events_joined[1024];    /* comma list for COMMTRACE_EVENTS */
	char pmu_attrs[1024];        /* pebs: COMMTRACE_PMU_ATTRS (pmu_pebs_attrs_format) */
};

/* options.c: 0 ok, 1 done (--help, --version, --list-samplers printed; exit
 * 0), -1 usage error (message printed; exit REC_EXIT_FAILED). */
int rec_parse_options(struct rec_opts *o, int argc, char **argv, bool *list_samplers);
/* The options of a command line with none given. */
void rec_default_options(struct rec_opts *o);

/* Messages on stderr, prefixed "commrec: ". */
extern int rec_verbose;
void rec_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rec_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* not with -q */
void rec_info(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sampler.c */
bool rec_sampler_works(const char *name, char *why, size_t cap);
void rec_list_samplers(void);
/* Fill o->sampler_used, sampler_reason, period_used (the floor applied),
 * period_unit, throttle_share, from the watchpoint probe wp_probe,
 * wp_available and wp_used, and for soft the path (soft_timer: by
 * COMMTRACE_SOFT_TIMER, perf events with -c, else by soft_probe); 0 or -1 with a message printed. */
int rec_choose_sampler(struct rec_opts *o);
/* After the sampler and the line size are known: --sampler inst without
 * --full records with the line monitor (REC_OWNER_WINDOW_DEFAULT) unless
 * --owner-window was given, and where its lines fit (CT_OWNER_LINE_MAX). */
void rec_default_owner_window(struct rec_opts *o);
/* soft, after rec_choose_sampler: the recording samples with the timers
 * (chosen, or the perf events do not open: the runtime falls back). */
bool rec_soft_timer_used(const struct rec_opts *o);

/* meta.c: write SPOOL/meta.zst; 0 or -1 with a message printed. */
int rec_write_meta(const struct rec_opts *o, const char *spool);

/* launch.c */
/* Resolve the program like execvp: 0 with the path in out, else the exit
 * status (126/127) after printing why. */
int rec_find_program(const char *name, char *out, size_t cap);
/* Path of libcommrec.so, 0 or -1 with a message. */
int rec_find_runtime(char *out, size_t cap);
/* The program carries the runtime itself (built with commrec-cc): it needs
 * libcommrec-inst.so, or exports commtrace_inst_runtime (static runtime). */
bool rec_program_has_inst_runtime(const char *path);
struct rec_run {
	int status;                  /* waitpid status */
	uint64_t start_ns, end_ns;   /* CLOCK_MONOTONIC */
	int exec_errno;              /* exec failed in the child: errno, else 0 */
	int pid;
	/* the program's own resource usage (wait4; with its waited-for children) */
	uint64_t utime_ns, stime_ns;
	long maxrss_kb;              /* peak resident set, KiB */
};
/* fork, set up the environment, exec, forward signals, wait. 0 or -1. */
int rec_run_program(const struct rec_opts *o, const char *path, const char *spool,
                    const char *runtime, struct rec_run *run);

/* finish.c */
/* Number of thread files in the spool. */
int rec_spool_threads(const char *spool);
/* The runtime's status pages of the spool added up; how many there were. */
struct rt_status;
int rec_runtime_status(const char *spool, struct rt_status *sum);
/* Rewrite every maps-PID.txt with build-ids; the number of files done. */
int rec_add_buildids(const char *spool);
/* Join to o->output with the summary (run: what the launcher saw; NULL for
 * a recovered spool); 0 or -1 with a message printed. */
int rec_join(const struct rec_opts *o, const char *spool, const struct rec_run *run);
/* The one line "commrec: wrote ..." (reads the trace back). */
void rec_report(const struct rec_opts *o);
/* Remove the spool directory (only the files a spool holds). 0 or -1. */
int rec_remove_spool(const char *spool);

uint64_t rec_now_ns(void);

#endif
