/* The contract between the launcher (commrec) and the preloaded runtime
 * (libcommrec.so): environment variables, set by the launcher, read once by
 * the runtime at load time.  Like uftrace's UFTRACE_* variables: simple and
 * debuggable (a user can set them by hand with LD_PRELOAD). */
#ifndef CT_RTCONFIG_H
#define CT_RTCONFIG_H

#define CT_ENV_SPOOL       "COMMTRACE_SPOOL"        /* spool directory (required) */
#define CT_ENV_SAMPLER     "COMMTRACE_SAMPLER"      /* soft | pebs | ibs | inst (resolved, never auto) */
#define CT_ENV_PERIOD      "COMMTRACE_PERIOD"       /* soft: CPU us; event samplers: events */
#define CT_ENV_EVENTS      "COMMTRACE_EVENTS"       /* pebs: comma list of libpfm4 names[@period] */
/* pebs: the encoded events, so that the runtime needs no libpfm4: a comma list
 * of kind:type:config:config1:config2:period:precise, kind load|store|any,
 * configs in hex (pmu_pebs_attrs_format in record/common/pmu.h); precise is
 * the highest precise_ip to try: the runtime probes what opens with
 * pmu_open_precise.  Computed by commrec from COMMTRACE_EVENTS (or the
 * default events) and COMMTRACE_PERIOD. */
#define CT_ENV_PMU_ATTRS   "COMMTRACE_PMU_ATTRS"
#define CT_ENV_WATCHPOINTS "COMMTRACE_WATCHPOINTS"  /* 0..4 */
/* Percent of a thread's CPU time the runtime's signal handlers may take
 * before the runtime lengthens that thread's sampling period (soft sampler);
 * 0: never.  [25] */
#define CT_ENV_THROTTLE    "COMMTRACE_THROTTLE"
#define CT_ENV_BOARD       "COMMTRACE_BOARD_SIZE"   /* online bulletin board entries */
#define CT_ENV_LINE_SIZE   "COMMTRACE_LINE_SIZE"    /* bytes */
#define CT_ENV_NO_ALLOC    "COMMTRACE_NO_ALLOC"     /* "1": no allocation records */
#define CT_ENV_FULL        "COMMTRACE_FULL"         /* inst: "1": every access */
#define CT_ENV_VERBOSE     "COMMTRACE_VERBOSE"      /* 0 quiet, 1 normal, 2+ debug */
#define CT_ENV_WP_LINES    "COMMTRACE_WP_LINES"     /* software watchpoints: lines watched per thread (0: words) */
#define CT_ENV_WP_LIFE     "COMMTRACE_WP_LIFE"      /* software line watches: samples a watch lives */
#define CT_ENV_WP_SOFT     "COMMTRACE_WP_SOFT"      /* "1": software watchpoints (a sampler that sees every access: inst) */
#define CT_ENV_WP_SWITCH_NS "COMMTRACE_WP_SWITCH_NS" /* ns the armed debug registers add to a context switch (commrec's measurement) */
#define CT_ENV_WP_OPEN_SWITCH_NS "COMMTRACE_WP_OPEN_SWITCH_NS" /* ns they add open but disabled */
#define CT_ENV_SOFT_EVENT_SWITCH_NS "COMMTRACE_SOFT_EVENT_SWITCH_NS" /* soft: ns a per-thread sampling event adds (0: keep it) */
#define CT_ENV_SOFT_CPU_WIDE "COMMTRACE_SOFT_CPU_WIDE" /* soft: "1": the per-CPU rings' events CPU-wide (cpu-clock, pid -1) where they open (a user asks commrec; its probe tells the runtime), else inherited task-clock */
#define CT_ENV_WP_CPU      "COMMTRACE_WP_CPU"       /* soft: "1": watchpoints per CPU, armed by the writer from the per-CPU sample rings (commrec's probe: they open and fire; a user may set 0 or 1 for commrec) */
#define CT_ENV_PID         "COMMTRACE_PID"          /* pid the settings are for: a forked child ignores them */

/* Tuning, not set by the launcher (a user may set them; defaults in brackets). */
#define CT_ENV_SOFT_TIMER  "COMMTRACE_SOFT_TIMER"   /* soft: "1": POSIX per-thread CPU-time timer instead of perf task-clock */
#define CT_ENV_WP_BUDGET   "COMMTRACE_WP_BUDGET"    /* percent of a thread's CPU time its armed debug registers may cost at context switches, 0 no limit [5] */
#define CT_ENV_WP_ASYNC    "COMMTRACE_WP_ASYNC"     /* "1": watchpoint traps by O_ASYNC real-time signal, not attr.sigtrap SIGTRAP */
#define CT_ENV_SIGNAL      "COMMTRACE_SIGNAL"       /* the runtime's signal: a number or RTMIN+k [SIGRTMIN+7] */
#define CT_ENV_RING_UNITS  "COMMTRACE_RING_UNITS"   /* record ring per thread, 64-byte units, power of 2 [4096] */
#define CT_ENV_BLOCK       "COMMTRACE_BLOCK"        /* raw bytes per compressed frame [65536] */
#define CT_ENV_ZLEVEL      "COMMTRACE_ZLEVEL"       /* zstd level of the spool files [1] */
#define CT_ENV_FLUSH_MS    "COMMTRACE_FLUSH_MS"     /* a record waits at most this long before it is in the spool file [1000] */
#define CT_ENV_INST_CLOCK  "COMMTRACE_INST_CLOCK"   /* inst full mode: "mono" or "tsc" timestamps [tsc when usable] */
#define CT_ENV_INST_FUNCS  "COMMTRACE_INST_FUNCS"   /* inst full mode: "0": no function entry/exit records */
#define CT_ENV_OWNER_WINDOW "COMMTRACE_OWNER_WINDOW" /* inst sampled mode: the line monitor's window J, stores [0: off] */
#define CT_OWNER_WINDOW_MAX (1u << 30)
#define CT_OWNER_LINE_MAX 128       /* --owner-window: the longest line the monitor follows (bytes) */

/* Read by the launcher only: path of libcommrec.so (else next to commrec, then ../lib/commtrace/). */
#define CT_ENV_RUNTIME     "COMMTRACE_RUNTIME"

/* The soft sampler's shortest period, CPU microseconds: the launcher raises
 * -c to it, the runtime a smaller COMMTRACE_PERIOD (see commrec(1)). */
#define CT_SOFT_PERIOD_MIN 100

/* Exit status of commrec when it could not record (the program's own status
 * is returned otherwise).  Chosen outside the range shells use for signals
 * (128+n) and the common 0..3 of programs. */
#define CT_EXIT_RECORD_FAILED 125

#endif
