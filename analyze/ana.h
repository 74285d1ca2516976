/* commanalyze internals shared by the commands (not by the output writers):
 * command entry points, trace statistics, cpu topology, the period
 * multiplier filter, the analysis pipeline and small printing helpers.
 *
 *   main.c         command dispatch, --help, --version
 *   options.c      the model options' table: parsing, text, usage
 *   cli.c          the command line: one getopt_long-like parser for every command
 *   engine.c       replay(), replay_sets(): merged cursor -> consumer sets,
 *                  fanned out to worker threads
 *   pipeline.c     open a trace, create models with their matrices, replay
 *                  (report, matrix, objects, lines: one model; sweep: many)
 *   progress.c     progress line on stderr
 *   stats.c        per-thread record counts (info, report)
 *   interval.c     the report's 90% intervals from the events' count
 *   topology.c     cpu -> core/socket from the MACHINE section, line size
 *   kfilter.c      --period-multiplier: which samples, arms and hits stay
 *   models.c       all_models[], model_find
 *   model_*.c      one model each
 *   matrices.c     event consumer: thread/core/socket matrices
 *   writers.c      the matrix writers by --format name (out_*.c)
 *   info.c dump.c report.c cmd_*.c sweep*.c: the commands
 *   out_html.c     html: the report, heatmaps and tables on one page
 * See doc/ARCHITECTURE.md. */
#ifndef CT_ANA_H
#define CT_ANA_H

#include "analysis.h"

/* ---- commands: argc/argv start after the command word; return the exit
 * status ---------------------------------------------------------------- */
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_matrix(int argc, char **argv);
int cmd_regions(int argc, char **argv);   /* cmd_regions.c */
int cmd_timeline(int argc, char **argv);
int cmd_loops(int argc, char **argv);
/* The sweep command's usage (sweep.c); full: with every option explained. */
void sweep_usage(FILE *f, bool full);
/* The report's replay of path (the model with attribution, regions and the
 * throttle markers; report.c), then show(arg, res) with its results, which
 * report_result_write writes as the report (text, or JSON).  Returns show's
 * status or an exit status; a damaged trace: its message printed after
 * show, EXIT_BADTRACE. */
struct throttled;
struct report_result {
	struct analysis *an;
	struct attrib *at;                 /* objects and lines, NULL: none */
	struct regions *regions;           /* NULL: none */
	const struct throttled *throttle;
};
int report_run(const char *path, const struct model_opts *o, bool from_binaries, bool no_demangle,
               int (*show)(void *arg, const struct report_result *res), void *arg);
void report_result_write(const struct report_result *res, bool json, FILE *f);
int cmd_html(int argc, char **argv);      /* out_html.c */
/* The timeline of r's phases as an SVG picture (cmd_regions.c): 0, or -1
 * on a write error. */
int regions_timeline_svg(FILE *f, const struct analysis *an, const struct regions *r);
/* One dump line for r (dump.c). */
void dump_record(FILE *f, const struct ct_record *r);

/* Messages on stderr, prefixed "commanalyze: ". */
void ana_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ana_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* on: from now on a warning equal to one printed since is left out (a
 * sweep: each point's model warns as it finishes); off: all again. */
void ana_warn_once(bool on);

/* ---- the command line (cli.c) ---------------------------------------------
 * One parser for every command, with GNU getopt_long's conventions: options
 * and operands in any order, "--" ends the options, "--name=VALUE" or
 * "--name VALUE", unambiguous prefixes of long names, clustered short
 * options ("-qv", "-ofile").  Every command also takes -h/--help (the
 * command's usage through cli_help, exit 0), -q/--quiet and -v/--verbose
 * (ana_verbosity); with a model_opts, every model option too. */
struct cli_opt {
	const char *name;   /* long name, without "--" */
	char letter;        /* short name, 0: none */
	bool value;         /* takes a value */
	int id;             /* > 0: what cli_next returns for it */
};
struct cli {
	const char *cmd;
	int argc;
	char **argv;
	const struct cli_opt *opts;
	size_t nopts;
	struct model_opts *model;   /* NULL: no model options */
	int next;                   /* the next argument */
	const char *cluster;        /* the rest of a short-option cluster */
	bool operands_only;         /* after "--" */
	int noperands;              /* the operands, moved to argv[0..noperands-1] */
	char name[48];              /* the last option, "--name" or "-x", for messages */
};
/* commrec's default output, read when no trace is given (as perf and uftrace
 * read theirs). */
#define CLI_DEFAULT_TRACE "trace.zst"
/* -1 --quiet (errors only: no warnings, no progress), 0, >0 --verbose. */
extern int ana_verbosity;
/* -j/--jobs: threads that decode the trace (engine.c); 0: every online cpu. */
extern unsigned ana_jobs;
/* Prints command cmd's usage (set by main). */
extern void (*cli_help)(FILE *f, const char *cmd);
void cli_init(struct cli *p, const char *cmd, int argc, char **argv,
              const struct cli_opt *opts, size_t nopts, struct model_opts *model);
/* The next option of the command: its id with *value (NULL if it takes
 * none); 0 at the end (the operands in argv[0..noperands-1]); -1 a usage
 * error (message printed, prefixed "cmd: "). */
int cli_next(struct cli *p, const char **value);
/* value (of the option just returned) is one of the n names[]: 0 with *out
 * its index, else -1 with "cmd: --name: 'V' is not A, B or C" printed. */
int cli_choice(const struct cli *p, const char *value, const char *const *names, size_t n,
               int *out);
/* The trace: the one operand, or CLI_DEFAULT_TRACE when none.  0, or
 * EXIT_USAGE when there are several (message printed). */
int cli_trace(const struct cli *p, const char **path);
/* The short name of model option `name` (-b, -w as for commrec), or 0. */
char cli_model_letter(const char *name);
/* "A, B or C" of the n names into buf. */
const char *names_list(const char *const *names, size_t n, char *buf, size_t cap);
/* ct_trace_open; a directory without meta.zst is said to be neither a
 * trace nor a commrec spool (not "DIR/meta.zst: No such file"). */
struct ct_trace *ana_trace_open(const char *path, struct ct_error *err);
/* ana_trace_open, with the reason printed when it fails (then NULL: exit
 * with EXIT_BADTRACE). */
struct ct_trace *ana_open_trace(const char *path);
/* -o FILE of the commands that print to standard output (info, dump):
 * ana_stdout_to sends it to path (NULL: leaves it), ana_stdout_done
 * flushes it.  0, or EXIT_BADTRACE (message printed). */
int ana_stdout_to(const char *path);
int ana_stdout_done(const char *path);
/* Parse an unsigned decimal number; false if not a number or out of range. */
bool parse_u64(const char *s, uint64_t *out);
/* A duration: a number with an optional unit (ns, us, ms, s; plain: ns). */
bool parse_ns(const char *s, uint64_t *out);

/* Whether the trace is whole: it has an end summary and the recorder says
 * the recording completed.  why: one line either way. (info.c) */
bool trace_is_complete(struct ct_trace *t, char *why, size_t cap);

/* ---- 90% intervals (interval.c) ------------------------------------------ */

struct interval {
	double lo, hi;
};
/* The effective number of events behind an estimate total with the
 * estimated variance var: total^2 / var (INFINITY when var is 0: nothing
 * was estimated; 0 when total is 0). */
double effective_events(double total, double var);
/* 90% interval of an estimated volume: Fay and Feuer's gamma interval of a
 * weighted sum of Poisson counts, its upper limit allowing for one unsampled
 * unit of weight unit_max; [total, total] when var is 0. */
struct interval volume_interval(double total, double var, double unit_max);
/* 90% interval of the share part / total: Wilson's, over the effective
 * number of events of total. */
struct interval share_interval(double part, double total, double var);

/* ---- per-thread statistics --------------------------------------------- */

struct thread_stats {
	uint64_t records, samples, loads, stores, atomics;
	uint64_t wp_arm, wp_hit, alloc, free, lost, skipped;
	uint64_t first_time, last_time;   /* of its records; first_time UINT64_MAX if none */
	uint64_t period_sum;              /* sum of sample periods */
	bool ended;
	int32_t end_status;
};

#define LOST_REASONS 8
struct trace_stats {
	size_t nthreads;
	struct thread_stats *th;
	uint64_t records, samples;
	uint64_t lost_by_reason[LOST_REASONS];      /* [0]: unknown reasons */
	uint64_t skipped_by_reason[CT_SKIP_REASON_MAX + 1];
	uint64_t lost_total, skipped_total;
	uint64_t first_time, last_time;
	uint64_t bad_thread;              /* records naming a thread out of range */
	uint64_t owner_windows[CT_OWNER_OPEN_MAX + 1]; /* the line monitor's OWNER_WIN, by status */
	uint64_t owner_held;              /* the windows of its OWNER_XFER records, summed */
};

int trace_stats_init(struct trace_stats *s, size_t nthreads);
void trace_stats_free(struct trace_stats *s);
struct record_consumer trace_stats_consumer(struct trace_stats *s);
/* its record() on each of a block (struct replay_set) */
void trace_stats_records(void *self, const struct ct_record *r, size_t n);
/* "lost_records":{"total":N,"by_reason":{...}},"skipped_samples":{...}
 * (report and info --format json). */
void trace_stats_json(FILE *f, const struct trace_stats *s);

/* ---- cpu topology ------------------------------------------------------- */

struct topology {
	size_t ncpus;             /* entries in core[]/socket[] (cpu numbers 0..ncpus-1) */
	uint32_t *core;           /* cpu -> core index, UINT32_MAX if unknown cpu */
	uint32_t *socket;         /* cpu -> socket index */
	size_t ncores, nsockets;
	char **core_label;        /* ncores labels, "S0C3" or "cpu5" */
	char **socket_label;      /* nsockets labels, "S0" */
	bool identity;            /* no cpu map in MACHINE: core = cpu, socket = 0 */
};

/* Load the cpu map from the MACHINE section.  Understands the launcher's
 * "cpu.N=core C socket S" and "cpu.N.core=C" / "cpu.N.socket=S". */
int topology_load(struct topology *t, struct ct_trace *tr);
void topology_free(struct topology *t);

/* Line size: the option, else CONFIG line_size, else MACHINE
 * cache_line_size, else 64.  *source says which ("option", "config",
 * "machine", "default"). */
unsigned resolve_line_size(const struct model_opts *o, struct ct_trace *tr,
                           const char **source);
/* A filtered full trace (CT_FEAT_FILTERED) replays exactly with the exact
 * model at line sizes from F/8 to F, F its CONFIG full_filter_line; the
 * other models that need a full trace need every access.  False with a
 * message otherwise. */
bool filtered_trace_fits(struct ct_trace *tr, const char *model, unsigned line_size, char *why,
                         size_t cap);

/* ---- --period-multiplier ------------------------------------------------ */

/* Keeps every Kth sample of each thread and kind (loads; stores and
 * atomics), the watchpoint arms those samples made, and the hits of those
 * arms. */
struct kfilter {
	unsigned k;
	size_t nthreads;
	struct kf_thread {
		uint64_t nload, nstore;
		bool sample_kept, arm_kept;
	} *t;
};
int kfilter_init(struct kfilter *f, unsigned k, size_t nthreads);
void kfilter_free(struct kfilter *f);
/* true: keep the record.  Records of other types are always kept. */
bool kfilter_keep(struct kfilter *f, const struct ct_record *r);
/* false, with why, where a multiplier k > 1 cannot stand for a longer
 * period on trace t (software line watches: kfilter.c). */
bool kfilter_trace_check(const struct ct_trace *t, unsigned k, char *why, size_t cap);

/* ---- running an analysis ----------------------------------------------- */

struct analysis {
	const char *path;
	struct ct_trace *trace;
	size_t nthreads;              /* thread index space (thread_space) */
	uint64_t records;             /* records replayed */
	const struct model_ops *model;
	struct model_opts opts;
	unsigned line_size;
	const char *line_size_source;
	struct topology topo;
	struct trace_stats stats;
	struct matrices *mx;
	bool damaged;                 /* replay stopped at damaged data */
	struct ct_error err;
	/* Set by analysis_run when the model needs a full trace and this one
	 * is sampled (full_trace_check): one line, "" otherwise.  report shows
	 * it among its warnings, matrix on stderr; analysis_attrs adds it as
	 * the attribute "warning". */
	char warning[320];
};

/* Open path, run the model over it with the matrices consumer and the
 * trace statistics.  Returns 0, or an exit status (message printed) when
 * the trace cannot be opened.  A damaged trace returns 0 with a->damaged
 * set and a->err saying where: the results cover the records before the
 * damage; the caller shows them, then the message, and exits with
 * EXIT_BADTRACE. */
int analysis_run(struct analysis *a, const char *path, const struct model_opts *o,
                 bool progress);

/* More consumers on the same replay (attribution, ...).  setup() is called
 * once the trace is open and a->line_size, a->topo and a->stats are set,
 * before the model is created; it fills pre[] (record consumers that see
 * each record before the model does) and events[] (event consumers besides
 * the matrices), and returns 0 or an exit status (message printed). */
#define ANALYSIS_HOOKS_MAX 4
struct analysis_hooks {
	int (*setup)(void *arg, struct analysis *a);
	void *arg;
	struct record_consumer pre[ANALYSIS_HOOKS_MAX];
	size_t npre;
	struct event_consumer events[ANALYSIS_HOOKS_MAX];
	size_t nevents;
	bool no_stats;           /* the caller does not read a->stats: not filled */
};
/* Adds a record consumer and an event consumer (either NULL) to h: 0, or
 * EXIT_BADTRACE when h is full (message printed). */
int analysis_hooks_add(struct analysis_hooks *h, const struct record_consumer *rc,
                       const struct event_consumer *ec);
/* analysis_run with hooks (h may be NULL). */
int analysis_run_hooks(struct analysis *a, const char *path, const struct model_opts *o,
                       bool progress, struct analysis_hooks *h);
void analysis_free(struct analysis *a);

/* The steps of analysis_run, for several models on one replay (sweep). */

/* One model on the replay, with its matrices: the model of report, matrix,
 * objects and lines, or a point of a sweep. */
struct analysis_point {
	const struct model_opts *opts;      /* in */
	const struct analysis_hooks *hooks; /* in: more consumers with this model, or NULL */
	const struct model_ops *model;      /* out */
	unsigned line_size;
	const char *line_size_source;
	struct matrices *mx;                /* analysis_points_free */
	/* during the replay */
	void *m;
	struct event_consumer ec[1 + ANALYSIS_HOOKS_MAX];
	struct record_consumer rc[1 + ANALYSIS_HOOKS_MAX];
};
/* Open path (a zeroed): the trace, its thread index space (an absurd one
 * is refused), its topology.  0 or an exit status (message printed). */
int analysis_open(struct analysis *a, const char *path);
/* Create the models of the n points, replay a's trace once into all of
 * them (and into a->stats when with_stats) with `jobs` workers, destroy
 * the models (the matrices stay).  A damaged trace sets a->damaged and
 * a->err (the results cover the records before the damage).  0, or an
 * exit status (message printed). */
int analysis_replay(struct analysis *a, struct analysis_point *p, size_t n, unsigned jobs,
                    bool with_stats, bool progress);
void analysis_points_free(struct analysis_point *p, size_t n);

/* ---- full-trace models (exact, signature, emulate) ----------------------
 * These models are meant for full traces (CT_FEAT_FULL in the header: every
 * access is a SAMPLE record with period 1).  On another trace they still
 * run (every record is taken as an access, weighted by its period), but the
 * result is not ground truth.  full_trace_check returns true when `model`
 * does not need a full trace or the trace is full; otherwise false with a
 * one-line warning in why (cap may be 0).  Defined in model_exact.c;
 * analysis_run calls it for every command that uses it (report, matrix,
 * objects, lines) and sweep for each trace. */
bool model_needs_full_trace(const char *model);
bool full_trace_check(const struct ct_trace *t, const char *model, char *why, size_t cap);

/* Attributes describing how results were made (model, options, trace,
 * version, units); storage lives in the returned block, free with free(). */
struct attr_set {
	struct attr a[24];
	size_t n;
	char buf[2048];
	size_t used;
};
/* The estimator a's model runs with (--estimator auto resolved:
 * estimator_resolve): what every output names. */
enum estimator_kind analysis_estimator(const struct analysis *a);
void analysis_attrs(const struct analysis *a, struct attr_set *s);
void attr_add(struct attr_set *s, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Thread indices are creation order and normally dense (0..n-1); the index
 * space is max index + 1 (indices from THREAD_INDEX_MAX on are ignored). */
#define THREAD_INDEX_MAX (1u << 20)
size_t thread_space(const struct ct_trace *t);
const struct ct_thread_info *thread_by_index(const struct ct_trace *t, size_t index);
/* false (why: one line naming the file) when the indices are so sparse
 * that index-space matrices would be absurd (max index >= 16 x threads +
 * 1024, or >= THREAD_INDEX_MAX): a damaged or hostile trace. */
bool thread_space_sane(const struct ct_trace *t, char *why, size_t cap);
/* Thread label "T<index>(<tid>)" into buf ("T<index>" if unknown). */
const char *thread_label(const struct ct_trace *t, size_t i, char *buf, size_t cap);
/* The recorded command line, printable, arguments quoted where needed; "" if absent. */
const char *trace_command(struct ct_trace *t, char *out, size_t cap);

/* ---- progress ------------------------------------------------------------ */

struct progress {
	bool on;
	uint64_t total;           /* estimate, 0 if unknown */
	uint64_t next_check;
	uint64_t last_ns;
	bool shown;
};
void progress_start(struct progress *p, struct ct_trace *t, bool want);
void progress_update(struct progress *p, uint64_t done);
void progress_end(struct progress *p);

/* Human-readable numbers. */
const char *fmt_count(double v, char *buf, size_t cap);   /* 1234567 -> "1.23M" */
const char *fmt_bytes(double v, char *buf, size_t cap);   /* "1.5 MiB" */
const char *fmt_duration(uint64_t ns, char *buf, size_t cap);
/* Sorts v[0..n) in ascending order and drops repeats: the count left
 * (matrices.c). */
size_t u64_sort_unique(uint64_t *v, size_t n);

/* ---- matrices for the writers (cmd_matrix.c) ------------------------------ */

/* A matrix of an analysis ready for the writers (cmd_matrix.c): directed
 * as kept or M + M^T, labelled (threads T<i>(tid), the topology's cores and
 * sockets), with the attributes attrs. */
struct matrix_built {
	struct matrix_out m;
	double *cell;               /* dense cells, or */
	struct mx_triplet *nz;      /* the non-zero ones */
	char **labels;
	size_t nlabels;
	char name[32];
};
/* form: how the matrix is to be written (m.form); it is built sparse when
 * it will be written so (struct matrix_out), dense otherwise.  0, -1: memory. */
int matrix_build(const struct analysis *a, enum mx_index index, enum mx_kind kind, bool directed,
                 enum out_form form, const struct attr_set *attrs, struct matrix_built *b);
void matrix_built_free(struct matrix_built *b);
/* The cells of b (b->m.n set by the caller) from the index's matrix of kind
 * in mx: dense n x n, or the non-zero ones when it is written sparse (form,
 * or AUTO past OUT_DENSE_MAX rows: too large to hold dense).  0, -1: memory. */
int matrix_build_cells(const struct matrices *mx, enum mx_index index, enum mx_kind kind,
                       bool directed, enum out_form form, struct matrix_built *b);
/* The colour scale shared by the three kinds of one index: its top is the
 * largest cell of the `all` matrix (true + false), its bottom (of a log
 * scale or one from the minimum) the smallest non-zero cell of the three,
 * as written.  0, -1: memory. */
int matrix_shared_scale(const struct analysis *a, enum mx_index index, bool directed,
                        const struct attr_set *attrs, double *max, double *min);

#endif
