/* commanalyze: the interfaces between the replay engine, the models, the
 * event consumers and the output writers.
 *
 *   trace --(engine: merged records)--> model(s) --(comm_event)--> consumers
 *                                                   (matrices, objects, lines)
 *   consumers --(matrix_out / tables)--> writers (text, csv, json, h5, svg)
 *
 * One replay engine (engine.c) feeds records to any number of record
 * consumers through a callback table, like perf's struct perf_tool.  A
 * model is a record consumer that emits communication events. */
#ifndef CT_ANALYSIS_H
#define CT_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "commtrace.h"
#include "comdetective.h"

/* ---- exit status of commanalyze -------------------------------------- */
#define EXIT_USAGE 1
#define EXIT_BADTRACE 2

/* ---- record consumers and the engine ---------------------------------- */

struct record_consumer {
	void *self;
	/* called for every record, in global (merged) time order */
	void (*record)(void *self, const struct ct_record *r);
	/* called once after the last record */
	void (*finish)(void *self);
};

/* Replays the merged stream of t into every consumer.  Shows a progress
 * indication on stderr when stderr is a terminal and show_progress is set.
 * Returns 0, or -1 with err filled when the trace is damaged (the consumers
 * have seen every record before the damage, and finish() was called). */
int replay(struct ct_trace *t, struct record_consumer *consumers, size_t n,
           bool show_progress, struct ct_error *err);

/* Consumers that share state, replayed together: each record reaches them
 * all, in array order, before the next record does. */
struct replay_set {
	struct record_consumer *c;
	size_t n;
	/* may be NULL; with one consumer: its record() on each of r[0..n-1]
	 * in turn, called instead (one call per block of records, not an
	 * indirect call per record) */
	void (*records)(void *self, const struct ct_record *r, size_t n);
};
/* replay into sets that share nothing (the points of a sweep), fanned out
 * to `jobs` worker threads (each set on one of them); the same results for
 * any jobs.  *records (may be NULL): records replayed. */
int replay_sets(struct ct_trace *t, const struct replay_set *sets, size_t nsets, unsigned jobs,
                bool show_progress, uint64_t *records, struct ct_error *err);

/* ---- communication events --------------------------------------------- */

enum comm_via { COMM_VIA_SAMPLE = 0, COMM_VIA_WATCHPOINT = 1, COMM_VIA_EXACT = 2 };

/* One detected transfer of a line to `dst` from `src`.  Matrices are kept
 * directed: row dst (the thread that received the line: the sampling,
 * trapping or accessing thread), column src (publisher or last writer). */
struct comm_event {
	uint64_t time;
	uint32_t dst, src;          /* thread indices */
	uint32_t dst_cpu, src_cpu;  /* UINT32_MAX when unknown */
	uint64_t line;              /* line base address */
	uint64_t addr, src_addr;    /* the two accesses */
	uint8_t len, src_len;
	uint8_t dst_kind;           /* enum ct_access_kind of dst's access */
	uint8_t via;                /* enum comm_via */
	bool true_sharing;          /* byte ranges overlap */
	uint64_t ip, src_ip;        /* instruction addresses, 0 when unknown */
	double weight;              /* estimated line transfers this event stands for */
	/* this event's part of the estimated variance of the sum of weights
	 * (the report's intervals): sampled_var(weight) for an event that stands
	 * alone, 0 for an event that is not an estimate (full traces) */
	double var;
	/* the largest weight one sampled unit behind this event (a sampled
	 * access, a window) can carry, whether or not it was sampled: the
	 * interval's allowance for a unit the sampler missed (interval.c);
	 * 0 when nothing is estimated */
	double unit_max;
};

struct event_consumer {
	void *self;
	void (*event)(void *self, const struct comm_event *ev);
};

/* ---- models ------------------------------------------------------------ */

/* The comdetective model's expiry rules are cd_step's (formats/comdetective.h). */
enum expiry_kind {
	EXPIRY_COMDETECTIVE = CD_EXPIRY_INTERVAL,
	EXPIRY_NS = CD_EXPIRY_NS,
	EXPIRY_SAMPLES = CD_EXPIRY_SAMPLES,
};
enum hash_kind { HASH_MOD = 0, HASH_MURMUR = 1 };
/* Which accesses the exact model replays (--sync): all, those that
 * synchronization calls imply (SAMPLE flag CT_SAMPLE_SYNC) left out, or
 * only those. */
enum sync_kind { SYNC_INCLUDE = 0, SYNC_EXCLUDE = 1, SYNC_ONLY = 2 };
extern const char *const sync_names[3];
/* How detected transfers are weighted (--estimator; doc/commanalyze.1):
 *   comdetective  each detected event weighs its sample's period
 *   owner         a sampled access weighs its period / J x the transfers of
 *                 its line's next J accesses (model_exact.c: exact_owner_*);
 *                 needs every access after the sample: the emulate model,
 *                 or the line monitor's records of an inst-sampled trace
 *                 (there P / q for P where windows could not open:
 *                 model_comdetective.c)
 *   auto          the default: owner for the comdetective model on a trace
 *                 with line monitor records, else comdetective
 *                 (estimator_resolve) */
enum estimator_kind { ESTIMATOR_COMDETECTIVE = 0, ESTIMATOR_OWNER = 1, ESTIMATOR_AUTO = 2 };
/* --owner-window J: a sampled access stands for the transfers of the next J
 * accesses to its line (itself included), each weighed P / J
 * (model_exact.c); default (0): OWNER_WINDOW_PER_PERIOD x the emulate
 * period */
#define OWNER_WINDOW_MAX (1u << 30)
#define OWNER_WINDOW_PER_PERIOD 64
#define ESTIMATORS 3
extern const char *const estimator_names[ESTIMATORS];
extern const char *const estimator_summaries[ESTIMATORS];

/* Every knob of every model; each has a command-line option of the same
 * name (--board-size ...) and a sweep parameter name. */
struct model_opts {
	enum expiry_kind expiry;
	uint64_t expiry_value;      /* ns for EXPIRY_NS, samples for EXPIRY_SAMPLES */
	unsigned board_size;        /* default 127 */
	enum hash_kind hash;        /* default HASH_MOD */
	unsigned line_size;         /* 0: the recorded one */
	unsigned watchpoints;       /* use hits on registers < D; 0: as recorded */
	unsigned period_multiplier; /* default 1 */
	uint64_t window_ns;         /* window model */
	unsigned signature_size;    /* signature model */
	double fp_rate;             /* signature model */
	unsigned emulate_period;    /* emulate model: every Nth access */
	enum estimator_kind estimator; /* comdetective, emulate: default auto */
	unsigned seed;              /* emulate model: its random draws (default 0) */
	unsigned owner_window;      /* owner estimator: its window J (0: the default) */
	unsigned watch_lines;       /* emulate: software line watches per thread (0: registers) */
	unsigned watch_life;        /* emulate: samples a line watch lives */
	enum sync_kind sync;        /* exact model: default SYNC_INCLUDE */
	const char *model;          /* --model name (default "comdetective") */
};

void model_opts_default(struct model_opts *o);

/* What a model is told when it is created. */
struct model_setup {
	const struct model_opts *opts;
	struct ct_trace *trace;     /* for metadata (line size, config); not for reading records */
	size_t nthreads;
	unsigned line_size;         /* resolved: option, else recorded, else 64 */
	struct event_consumer *out; /* where events go */
	size_t nout;
};

struct model_ops {
	const char *name;
	const char *summary;        /* one line for --help */
	void *(*create)(const struct model_setup *setup);
	void (*record)(void *self, const struct ct_record *r);
	/* may be NULL: record() on a block (struct record_consumer) */
	void (*records)(void *self, const struct ct_record *r, size_t n);
	void (*finish)(void *self);  /* after the last record; may be NULL */
	void (*destroy)(void *self);
};

const struct model_ops *model_find(const char *name);
/* NULL-terminated list of every model */
extern const struct model_ops *const all_models[];

/* ---- matrices ---------------------------------------------------------- */

/* An n x n matrix, dense or sparse.  Dense: cell[row * stride + col]
 * (stride 0: n), which is how callers build their own.  Sparse (the
 * matrices consumer's past MX_DENSE_MAX rows): cell is NULL and the
 * non-zero cells are in a hash table (matrices.c).  matrix_at reads
 * either. */
struct mx_sparse;
struct matrix {
	size_t n;
	double *cell;
	size_t stride;
	const struct mx_sparse *sp; /* sparse: the cells of the index */
	unsigned kind;              /* sparse: which of the index's values */
};
/* Cell (row, col); 0 outside the matrix. */
double matrix_at(const struct matrix *m, size_t row, size_t col);
/* *sum = the sum of the cells, row by row (the order of a dense loop, so
 * dense and sparse storage give the same sum).  0, -1: memory. */
int matrix_sum(const struct matrix *m, double *sum);
/* The off-diagonal cells of m (NULL: none) that are not 0, as keys
 * row * n + col in ascending order (n >= m->n, the caller's size); with
 * sym the pairs row < col of m + m^T.  The count, *keys to free; -1:
 * memory.  Visits the stored cells only, so sparse matrices cost their
 * pairs, not n x n. */
ptrdiff_t matrix_support(const struct matrix *m, size_t n, bool sym, uint64_t **keys);

/* A non-zero cell, for sparse outputs. */
struct mx_triplet {
	uint32_t row, col;
	double v;
};

/* ---- output writers ---------------------------------------------------- */

struct attr {
	const char *key;
	const char *value;
};

/* How a matrix is to be read and drawn, set by whoever builds it.  A field
 * left 0 is unset: the writers then take the attribute of the same name
 * ("symmetric" yes/no, "color_min" zero/min, "color_max" N, "row_axis",
 * "col_axis"), else look at the cells (symmetric) or use their default. */
enum out_sym { OUT_SYM_UNSET = 0, OUT_SYM_YES = 1, OUT_SYM_NO = 2 };
enum out_scale { OUT_SCALE_UNSET = 0, OUT_SCALE_FROM_ZERO = 1, OUT_SCALE_FROM_MIN = 2 };
enum out_cscale { OUT_CSCALE_UNSET = 0, OUT_CSCALE_LINEAR = 1, OUT_CSCALE_LOG = 2 };
struct matrix_render {
	enum out_sym symmetric;     /* M + M^T (each pair once in totals), or directed */
	enum out_scale scale_from;  /* svg: colours from 0 (default) or the smallest non-zero cell */
	double scale_max;           /* svg: > 0, the top of the colour scale (shared scales) */
	double scale_min;           /* svg: > 0, the bottom of a scale from the minimum or a log one */
	enum out_cscale color_scale;  /* svg: linear (default) or log colours */
	const char *row_axis, *col_axis;  /* axis titles (both, or neither) */
};

/* How the CSV, JSON and HDF5 writers lay out a matrix: dense (every cell)
 * up to OUT_DENSE_MAX rows, else sparse triplets (row, column, value) of
 * the non-zero cells (doc/commanalyze.1, Output formats); or either by
 * choice.  The text view lists the top cells and the SVG bins cells into a
 * density map from sizes of their own (out_text.c, out_svg.c). */
#define OUT_DENSE_MAX 1024
enum out_form { OUT_FORM_AUTO = 0, OUT_FORM_DENSE = 1, OUT_FORM_SPARSE = 2 };

/* One matrix ready to be written: labels for rows and columns (same order),
 * what it counts, and attributes saying how it was made. */
struct matrix_out {
	const char *name;           /* e.g. "thread_all", used as dataset/file name */
	const char *kind;           /* "all", "true", "false" */
	const char *index;          /* "thread", "core", "socket" */
	const char *units;          /* e.g. "estimated line transfers" */
	size_t n;
	const double *cell;         /* n*n row-major, or NULL: the cells are nz */
	const struct mx_triplet *nz;  /* when cell is NULL: the non-zero cells, by row then column */
	size_t nnz;
	const char *const *labels;  /* n labels */
	const struct attr *attrs;
	size_t nattrs;
	struct matrix_render render;
	enum out_form form;         /* how CSV, JSON and HDF5 write the cells */
};

/* The output writers, by --format name (writers.c): text, csv, json, h5,
 * svg.  A writer that writes_to_file creates the file itself (it needs a
 * path); the others write to a stream (standard output or -o FILE). */
struct out_dest {
	FILE *f;                    /* stream writers */
	const char *path;           /* file writers; for messages otherwise (NULL: standard output) */
	struct ct_error *err;       /* the message of a failure */
};
struct matrix_writer {
	const char *name;
	bool writes_to_file;
	/* 0, or -1 with d->err filled */
	int (*write)(const struct out_dest *d, const struct matrix_out *m, size_t nm);
};
const struct matrix_writer *matrix_writer_find(const char *name);
/* "text, csv, json, h5 or svg" */
const char *matrix_writer_names(char *buf, size_t cap);
/* Write the nm matrices with w to path (NULL: standard output for a stream
 * writer).  0, or -1 with err->msg saying what could not be written. */
int matrix_write(const struct matrix_writer *w, const char *path, const struct matrix_out *m,
                 size_t nm, struct ct_error *err);

int write_matrix_text(FILE *f, const struct matrix_out *m);
int write_matrix_csv(FILE *f, const struct matrix_out *m);
int write_matrices_json(FILE *f, const struct matrix_out *m, size_t nm);
int write_matrix_svg(FILE *f, const struct matrix_out *m);
/* HDF5: one dataset per matrix, attributes on each; returns 0 or -1 (err). */
int write_matrices_h5(const char *path, const struct matrix_out *m, size_t nm,
                      struct ct_error *err);
/* ComDetective's layout (out_comdetective.c): files <exe>-<pid>-as/ts/fs
 * (+ _core) _matrix.csv in dir, from the matrices of index "thread" and
 * "cpu", and <exe>-<pid>-comdetective.log with its stats line. */
struct cd_files {
	const char *exe;            /* the program's name, no '/' */
	long pid;
	unsigned line_size;         /* bytes, for cache_line_transfer_gbytes */
};
int write_comdetective_csv(const char *dir, const struct cd_files *id, const struct matrix_out *m,
                           size_t nm, struct ct_error *err);
/* ComDetective's "core" matrices: directed (row: receiving cpu), indexed by
 * the logical cpu of each access; events on one cpu, or with a cpu unknown
 * or >= CD_CPUS_MAX, are left out (counted).  n grows to the largest cpu
 * seen + 1. */
#define CD_CPUS_MAX 1024
struct cd_cpus {
	size_t n;
	double *cell[3];            /* all, true, false: n x n */
	uint64_t same_cpu, unknown; /* events left out */
	bool oom;                   /* an event was lost: out of memory */
};
int cd_cpus_init(struct cd_cpus *c, size_t ncpus);  /* 0 or -1 (memory) */
void cd_cpus_free(struct cd_cpus *c);
struct event_consumer cd_cpus_consumer(struct cd_cpus *c);

/* ---- additions (analyzer core) ------------------------------------------- */

/* model_opts.watchpoints for --watchpoints 0: use no watchpoint hits at all
 * (0 in the struct means "as recorded"). */
#define MODEL_WP_NONE 0xffu

/* Parse one model option by name, without the leading "--" ("model",
 * "expiry", "board-size", "hash", "line-size", "watchpoints",
 * "period-multiplier", "window", "signature-size", "fp-rate",
 * "emulate-period", "estimator", "seed").  Returns 0 done, 1 not a model option,
 * -1 bad value (err filled with a one-line message).  "model" sets
 * o->model (checked with model_find). */
int model_opts_parse(struct model_opts *o, const char *name, const char *value,
                     char *err, size_t errcap);
/* Canonical text of one option value (as accepted by model_opts_parse),
 * for attributes and sweep labels; NULL if the name is unknown. */
const char *model_opts_format(const struct model_opts *o, const char *name,
                              char *buf, size_t cap);
/* The option names model_opts_parse knows, NULL-terminated ("model" first). */
extern const char *const model_opt_names[];
bool model_opt_known(const char *name);
/* Does option opt change what model computes? (for reports; unknown
 * models: true) */
bool model_opt_relevant(const char *model, const char *opt);
/* Can model run with the options o on trace t?
 * false with a one-line reason in why (the owner estimator needs the
 * emulate model, or the comdetective model on a trace with line monitor
 * records). */
bool model_opts_usable(const struct model_opts *o, const char *model, const struct ct_trace *t,
                       char *why, size_t cap);
/* The line monitor of an inst-sampled trace (commrec --owner-window): its
 * window J and the sampling period P; false when the trace has none. */
bool owner_monitor_params(const struct ct_trace *t, uint64_t *window, uint64_t *period);
/* Has t (NULL: no) the line monitor's records? */
bool owner_monitor_trace(const struct ct_trace *t);
/* The estimator that model runs with on trace t when asked for e: e itself
 * unless it is ESTIMATOR_AUTO, which is owner for the comdetective model
 * (model NULL: the default) on a trace with line monitor records, and
 * comdetective otherwise (older traces analyze as before). */
enum estimator_kind estimator_resolve(enum estimator_kind e, const char *model,
                                      const struct ct_trace *t);
/* The same, told whether the trace has line monitor records. */
enum estimator_kind estimator_pick(enum estimator_kind e, const char *model, bool monitor);
/* Does estimator e leave option opt without effect? (the owner estimator
 * replaces ComDetective's step: --expiry, --board-size, --hash,
 * --watchpoints, --period-multiplier, --line-watches, --line-watch-life) */
bool estimator_ignores(enum estimator_kind e, const char *opt);
/* One warning for each option of o that estimator e ignores and that
 * differs from its default (given on the command line). */
void warn_ignored_options(const struct model_opts *o, enum estimator_kind e);
/* Which value of option opt gives the finest sweep point: +1 the largest
 * (board-size, watchpoints), -1 the smallest (period-multiplier), 0 none. */
int model_opt_finest(const char *opt);
/* The "Model options:" part of the usage texts. */
void model_opts_usage(FILE *f);
/* " model, expiry, ...;": the option names, wrapped before column 81 at
 * column col; the first line continues at column at. */
void model_opt_list(FILE *f, int col, int at);

/* The matrices consumer (matrices.c): accumulates directed thread, core and
 * socket matrices for all/true/false events (weights summed), and counts of
 * events by via and kind. */
enum mx_kind { MX_ALL = 0, MX_TRUE = 1, MX_FALSE = 2 };
enum mx_index { MX_THREAD = 0, MX_CORE = 1, MX_SOCKET = 2 };
extern const char *const mx_kind_names[3];    /* "all", "true", "false" */
extern const char *const mx_index_names[3];   /* "thread", "core", "socket" */
struct topology;
struct matrices;
/* topo may be NULL (then only thread matrices are kept).  An index of more
 * than MX_DENSE_MAX rows is kept sparse: memory grows with the pairs that
 * communicate, not with n x n (matrices_create_dense_max: another limit). */
#define MX_DENSE_MAX 256
struct matrices *matrices_create(size_t nthreads, const struct topology *topo);
struct matrices *matrices_create_dense_max(size_t nthreads, const struct topology *topo,
                                           size_t dense_max);
void matrices_free(struct matrices *m);
struct event_consumer matrices_consumer(struct matrices *m);
/* What the consumer does with one event. */
void matrices_add_event(struct matrices *m, const struct comm_event *ev);
/* Values v (all, true, false) added to cell (row, col) of the index, which
 * grows to hold it; matrices_grow: the index to n rows at least (to rebuild
 * matrices sent elsewhere).  0, -1: memory. */
int matrices_add_cell(struct matrices *m, enum mx_index index, size_t row, size_t col,
                      const double v[3]);
int matrices_grow(struct matrices *m, enum mx_index index, size_t n);
/* into += from: each cell of every index and kind (from's value added once
 * to into's), and the totals.  0, -1: memory. */
int matrices_merge(struct matrices *into, const struct matrices *from);

/* The directed matrix (row dst, column src); n is its size.  Read its cells
 * with matrix_at (it may be sparse); valid until the next event. */
const struct matrix *matrices_get(const struct matrices *m, enum mx_index index,
                                  enum mx_kind kind);
/* The cells (row, column) of the index's matrices that received weight, in
 * the order of their first event: the communicating pairs, to walk instead
 * of all n x n cells.  Returns their number. */
size_t matrices_cells(const struct matrices *m, enum mx_index index, const uint32_t (**rc)[2]);
struct mx_totals {
	uint64_t events[3][2];      /* [via][true_sharing] */
	double weight[3][2];
	double var[3][2];           /* the events' variance parts (comm_event.var) */
	double unit_max;            /* the largest comm_event.unit_max */
	uint64_t unmapped_cpu;      /* events whose cpu is not in the map */
};
const struct mx_totals *matrices_totals(const struct matrices *m);
/* out (n*n) = M + M^T off the diagonal, M's diagonal kept (transfers
 * inside one core or socket are not doubled): the symmetric form written
 * by default. */
void matrix_symmetric(const struct matrix *m, double *out);
/* out (n*n, row-major) = M: a dense copy. */
void matrix_directed(const struct matrix *m, double *out);
/* The non-zero cells of the index's matrix of kind (M + M^T when sym, as
 * matrix_symmetric), by row then column, in a new array (*out, free it;
 * NULL when there are none).  Their number, or -1: out of memory. */
ptrdiff_t matrices_triplets(const struct matrices *m, enum mx_index index, enum mx_kind kind,
                            bool sym, struct mx_triplet **out);

#endif
