/* The runtime's status, for the launcher (part of the contract of
 * rtconfig.h): SPOOL/status-PID.bin, created by the runtime when it starts
 * and kept up to date in place through a shared mapping, so that it
 * outlives the process (a SIGKILL leaves the last values).  Fixed layout,
 * little-endian (the runtime's own byte order: x86-64).  The launcher turns
 * it into SUMMARY keys (record/finish.c, doc/commtrace-format.5). */
#ifndef CT_RTSTATUS_H
#define CT_RTSTATUS_H

#include <stdint.h>

#define RT_STATUS_MAGIC 0x53545243u   /* bytes "CRTS" */
#define RT_STATUS_VERSION 2

/* Where the runtime keeps its file descriptors (rt_main.c, rt_fd_high). */
enum rt_fd_mode {
	RT_FD_NONE = 0,            /* nowhere: no thread is recorded */
	RT_FD_ABOVE = 1,           /* above the program's soft limit (the hard limit allows) */
	RT_FD_TOP = 2,             /* soft = hard: in the top eighth of a limit >= RT_FD_TOP_MIN */
};
#define RT_FD_TOP_MIN 1024

enum rt_unrecorded_why {
	RT_UNREC_NO_FD = 0,        /* no descriptor above the program's limit (RLIMIT_NOFILE) */
	RT_UNREC_SPOOL = 1,        /* its spool file could not be created */
	RT_UNREC_MEMORY = 2,       /* no memory for its ring */
	RT_UNREC_REGISTRY = 3,     /* more threads alive than the runtime tracks */
	RT_UNREC_WHYS = 4
};

struct rt_status {
	uint32_t magic, version;
	int32_t pid;
	uint32_t fd_mode;              /* where the runtime's descriptors go: RT_FD_* */
	uint64_t fd_soft, fd_hard;     /* RLIMIT_NOFILE when the runtime started */
	uint64_t threads_started;      /* threads seen starting (recorded or not) */
	uint64_t threads_unrecorded;   /* of them, not recorded */
	uint64_t unrecorded[RT_UNREC_WHYS]; /* ... by reason */
	uint64_t timer_threads;        /* threads sampled by the POSIX CPU-timer fallback */
	int32_t timer_errno;           /* why perf_event_open was not used (0: asked for) */
	uint32_t pad;
	uint64_t timer_samples;        /* timer signals handled */
	uint64_t timer_cpu_ns;         /* the thread CPU time they stand for */
	uint32_t cpu_rings;            /* soft: per-CPU sampling events used (their number), 0: not */
	uint32_t cpu_ring_wide;        /* ... 1: CPU-wide cpu-clock events, 0: inherited task-clock */
	uint64_t ring_unattributed;    /* soft, per-CPU rings: samples of threads not recorded */
	uint64_t ring_lost_unattributed; /* soft, per-CPU rings: records the kernel lost that no
	                                  * recorded thread could take (no tid, main thread ended) */
	uint64_t ring_lost_foreign;    /* soft, CPU-wide rings: records lost while another
	                                * process ran (not the program's) */
	uint32_t cpu_wp;               /* soft: watchpoint registers per CPU armed by the writer, 0: not */
	uint32_t pad3;
	uint64_t cpu_wp_arms;          /* ... its arms */
	uint64_t cpu_wp_hits;          /* ... hits by the watching thread (WP_HIT records) */
	uint64_t cpu_wp_other_hits;    /* ... by other threads of the program or the kernel (no communication) */
};

#define RT_STATUS_NAME "status-%d.bin"  /* in the spool, %d the pid */

#endif
