/* Where and when: communication by code region and over time.
 *
 *   record consumer   follows the MARKER records: each thread's stack of
 *                     open regions (begin/end, nestable; OpenMP parallel
 *                     regions that the runtime marks, "omp:0xADDR") and the
 *                     program-wide phases.  Put it BEFORE the model in the
 *                     consumer array, so that the state is current when the
 *                     model emits events for a record.
 *   event consumer    adds each comm_event to the innermost region open on
 *                     its receiving thread (dst) and to every region around
 *                     it (inclusive totals; the tree's root is the whole
 *                     program), to the current phase and, with a window
 *                     length, to its time window.
 *
 * Traces without markers have the root only and one phase. */
#ifndef CT_REGIONS_H
#define CT_REGIONS_H

#include <stdio.h>

#include "analysis.h"

#define REGION_NONE SIZE_MAX

struct region_node {
	char *name;                 /* as marked; OpenMP: the outlined function once named */
	char *where;                /* OpenMP: "file.c:17" (or ""), markers: "" */
	char *path;                 /* names from the root's child down, joined by '/' */
	size_t parent;              /* REGION_NONE for the root */
	unsigned depth;             /* root 0 */
	uint64_t omp_fn;            /* OpenMP: the outlined function, else 0 */
	uint64_t entries;           /* begin markers (all threads) */
	uint64_t events;
	double total[3];            /* by enum mx_kind */
	struct matrices *mx;        /* its thread matrices (directed, by kind), sparse */
	uint8_t *entered;           /* n: the thread entered it (root: recorded a record) */
};

/* A slice of time: a phase or a fixed window. */
struct time_slot {
	uint64_t start, end;        /* ns, [start, end) */
	char name[CT_MARKER_NAME_MAX + 1]; /* the phase (at the slot's start) */
	uint64_t events;
	double total[3];
	struct matrices *mx;        /* its thread matrices (directed), sparse */
	struct matrices *count;     /* the same of events (each of weight 1) */
};

struct region_thread {
	size_t *stack;              /* open regions, innermost last */
	size_t depth, cap;
};

struct regions {
	size_t n;                   /* thread index space */
	struct region_node *node;   /* node[0] is the root */
	size_t nnodes, cap;
	struct region_thread *th;
	struct time_slot *phase;    /* phase[0]: from the first record to the first phase marker */
	size_t nphases, phase_cap;
	uint64_t window_ns;         /* 0: no windows */
	struct time_slot *win;
	size_t nwin, win_cap;
	uint64_t first_time, last_time;
	bool seen;                  /* a record was seen (first_time valid) */
	uint64_t unmatched_ends;    /* end markers with no region open */
	uint64_t unclosed;          /* regions still open at thread end or trace end */
	uint64_t omp_markers;       /* begin markers of OpenMP regions */
	bool no_demangle;           /* OpenMP regions named as in the binary */
	bool oom;
};

/* window_ns: length of the timeline's windows (0: phases only).  NULL when
 * out of memory. */
struct regions *regions_create(size_t nthreads, uint64_t window_ns);
void regions_free(struct regions *r);
struct record_consumer regions_record_consumer(struct regions *r);
struct event_consumer regions_event_consumer(struct regions *r);
/* New thread matrices for a node or slot of r: sparse at any size, so that
 * memory grows with the pairs that communicate there, not with threads
 * squared.  NULL: out of memory. */
struct matrices *regions_matrices(const struct regions *r);
/* For other trees of code (loops.c): a new node under parent (REGION_NONE
 * on failure, r->oom set), and an event counted in node and the nodes
 * around it (dst and src checked by the caller). */
size_t regions_node_add(struct regions *r, size_t parent, const char *name);
void regions_count(struct regions *r, size_t node, const struct comm_event *ev);

/* Running it with an analysis (ana.h): regions_hooks_init(&h, &rh, window)
 * then analysis_run_hooks(..., &h); rh.r holds the regions afterwards (NULL
 * if the run failed before the replay); free it with regions_free. */
struct analysis_hooks;
struct regions_hook {
	struct analysis_hooks *h;
	uint64_t window_ns;
	bool no_demangle;           /* set after regions_hooks_init: r->no_demangle */
	struct regions *r;
};
void regions_hooks_init(struct analysis_hooks *h, struct regions_hook *rh, uint64_t window_ns);
/* The setup that regions_hooks_init installs: creates rh->r and adds its
 * consumers to rh->h (for a caller that chains several setups). */
int regions_hook_setup(void *rh, struct analysis *an);
/* The report's section of the top regions by communication (nothing when
 * the trace has no regions); names OpenMP regions first. */
void regions_report_section(struct regions *r, const struct analysis *an, size_t top, FILE *f);

/* After the replay: name OpenMP regions from the trace's SYMBOLS section
 * ("f._omp_fn.0", where "file.c:17"; demangled by symbol_demangle unless
 * r->no_demangle: "f(int)._omp_fn.0"); without symbols they keep their
 * "omp:0xADDR" name. */
void regions_name_omp(struct regions *r, struct ct_trace *t);

/* Phases detected from the pattern: the windows (r->win) grouped into runs
 * while each window's events are distributed over the thread pairs like the
 * run's so far: a chi-square test of homogeneity on the event counts per
 * (unordered) pair, a new run when p < 0.001; windows with fewer than
 * CHANGE_MIN_EVENTS events, or a run with fewer, never start one (too few
 * for the test).  *out: the runs as slots named "change N" (free with
 * regions_slots_free); their number, or -1 when out of memory. */
#define CHANGE_MIN_EVENTS 10
long regions_detect_changes(struct regions *r, struct time_slot **out);
void regions_slots_free(struct time_slot *v, size_t n);
/* The name of the phase at time t ("" before the first phase marker). */
const char *regions_phase_at(const struct regions *r, uint64_t t);
/* The node whose path or name is s, or (a mangled name) its demangled
 * form (a name shared by several nodes is ambiguous: REGION_NONE,
 * *ambiguous set). */
size_t regions_find(const struct regions *r, const char *s, bool *ambiguous);
/* Children of node in order of creation: call with *it = 0, then again
 * while it returns a node (REGION_NONE at the end). */
size_t regions_next_child(const struct regions *r, size_t node, size_t *it);

/* A node's (or slot's) thread load from its matrices mx: load[t] = the
 * weight of the events t took part in (as receiver or publisher); 0, -1:
 * memory.  The imbalance is the largest load over the mean load of the
 * threads that entered the node (1: even; 0 when nothing was communicated). */
int region_load(const struct regions *r, const struct matrices *mx, double *load);
double region_imbalance(const struct regions *r, size_t node, const double *load);
/* The thread pair with the most communication (both directions) in mx,
 * the first of equals in row-major order: 1, 0 when there is none, -1:
 * memory. */
int top_pair(const struct matrices *mx, size_t *a, size_t *b, double *w);

#endif
