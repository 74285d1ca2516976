/* commanalyze sweep: sensitivity sweeps from one recording.
 *
 *   commanalyze sweep TRACE --param NAME=V1,V2,... [--param ...] [-j N]
 *                     [-o sweep.h5] [--reference POINT|TRACE] [--csv FILE]
 *                     [--plot FILE.svg] [fixed model options]
 *
 * The grid is the product of the --param lists (NAME: any model option,
 * model_opt_names).  Every point of the grid is one model instance, and all
 * of them consume the same merged record stream: one decode pass per trace
 * (sweep.c).  One decoder thread fills batches of records; N workers each
 * own a fixed subset of the points and run every batch through them, in
 * record order, so the results do not depend on N.
 *
 *   sweep.c        options, grid, decode/worker pipeline, metrics, table
 *   sweep_h5.c     the HDF5 file (groups per point, grid, summary)
 *   sweep_plot.c   the SVG plot of the metrics against the swept parameter
 *   sweep_mpi.c    the MPI driver (build with MPI=1: commanalyze-mpi)
 */
#ifndef CT_SWEEP_H
#define CT_SWEEP_H

#include "ana.h"

#define SWEEP_TOPK 5              /* top pairs of the reference to recover */
#define SWEEP_MAX_POINTS 100000   /* grid size limit */
#define SWEEP_MAX_PARAMS 8

struct sweep_param {
	char name[32];
	size_t nvalues;
	char **values;                /* canonical text (model_opts_format) */
	bool numeric;                 /* every value is a plain number */
};

/* Matrices of one point of one trace: the point's matrices consumer, kept
 * (directed, row dst, column src; sparse past MX_DENSE_MAX rows); the
 * sweep writes its thread and core matrices, n[MX_THREAD or MX_CORE] rows. */
struct sweep_mats {
	size_t n[2];
	struct matrices *mx;
	struct mx_totals tot;
	unsigned line_size;           /* resolved */
	bool done;
};

/* The comparison of a point with the reference: matrix_compare_opts
 * (compare.h) on the thread matrices (kind all), symmetric (pairs i < j of
 * M + M^T), k = SWEEP_TOPK; see compare.h for the definitions. */
struct sweep_metrics {
	double volume;                /* sum of the directed thread matrix (all) */
	double true_frac, false_frac; /* of volume; NaN when volume is 0 */
	double l1;                    /* sum |a - r| / R: volume error */
	double l1_shape;              /* sum |a/A - r/R|, 0..2: pattern error */
	double pearson;               /* of the pair cells */
	double excess;                /* share of the point's weight the reference lacks */
	double missing;               /* share of the reference's weight the point lacks */
	double ratio;                 /* A / R */
	double topk;                  /* share of the reference's top-k pairs recovered */
	unsigned k;                   /* k used (fewer when the reference has fewer pairs) */
};

struct sweep_trace {
	const char *path;
	size_t nthreads;              /* thread index space */
	char **thread_labels;         /* nthreads */
	size_t ncores;                /* core index space (core matrices) */
	char **core_labels;
	bool identity_topology;
	bool owner_monitor;           /* line monitor records (--estimator auto: owner) */
	uint64_t records;             /* records replayed */
	bool damaged;
	char damage[512];
};

enum sweep_ref_kind { SWEEP_REF_POINT = 0, SWEEP_REF_TRACE = 1 };

struct sweep {
	/* configuration */
	struct model_opts base;       /* the fixed options */
	size_t nparams;
	struct sweep_param params[SWEEP_MAX_PARAMS];
	size_t ngrid;                 /* points of the grid */
	size_t npoints;               /* ngrid, + 1 when the reference point is off the grid */
	struct model_opts *opts;      /* npoints option sets */
	size_t *coord;                /* ngrid x nparams value indices (row-major, first param slowest) */
	unsigned jobs;                /* worker threads (>= 1) */
	bool progress;
	bool directed;                /* write directed matrices (default: M + M^T) */
	/* reference */
	enum sweep_ref_kind ref_kind;
	size_t ref_point;             /* a point index (< npoints) */
	char ref_desc[512];           /* how the reference was chosen, for the output */
	const char *ref_trace;        /* SWEEP_REF_TRACE */
	struct model_opts ref_opts;   /* options of the reference (point or trace) */
	struct sweep_mats ref_mats;   /* SWEEP_REF_TRACE: its matrices */
	struct sweep_trace ref_info;
	/* traces and results */
	size_t ntraces;
	struct sweep_trace *traces;
	struct sweep_mats *res;       /* ntraces x npoints */
	struct sweep_metrics *metrics;/* ntraces x ngrid */
	double seconds;               /* wall time of the replay passes */
	char **argv_text;             /* unused; reserved */
};

/* ---- building the sweep ---------------------------------------------- */

void sweep_init(struct sweep *s);
void sweep_free(struct sweep *s);
/* "NAME=V1,V2,..." with integer ranges A..B, A..B:STEP, A..B:xFACTOR (a
 * value may carry a prefix: samples:1..8).  0, or -1 with err filled. */
int sweep_add_param(struct sweep *s, const char *spec, char *err, size_t cap);
/* After the parameters and s->base are set: build the grid (npoints,
 * opts, coord).  0 or -1 with err filled. */
int sweep_build_grid(struct sweep *s, char *err, size_t cap);
/* The reference: NULL (the finest point), "NAME=V,NAME=V" (a point, added
 * off the grid if it is not on it) or a trace path (analyzed with
 * ref_model, NULL: exact for a full trace if that model exists, else the
 * base model).  Call after sweep_build_grid.  0 or -1 with err filled. */
int sweep_set_reference(struct sweep *s, const char *ref, const char *ref_model,
                        char *err, size_t cap);
/* The finest point of the grid: for every parameter the largest
 * board-size, the most watchpoints, the smallest period-multiplier; the
 * first value listed for any other parameter. */
size_t sweep_finest_point(const struct sweep *s);
/* Add trace paths (before sweep_alloc_results). */
int sweep_add_trace(struct sweep *s, const char *path);
/* Results storage for ntraces x npoints; 0 or -1. */
int sweep_alloc_results(struct sweep *s);
/* Is model option name one of the --param (not a fixed option)? */
bool sweep_swept(const struct sweep *s, const char *name);
/* The estimator options o run with on trace ti (--estimator auto resolved). */
enum estimator_kind sweep_estimator(const struct sweep_trace *ti, const struct model_opts *o);
/* The models of the grid's points, in order of first use, comma-separated
 * ("exact", "exact,window"): what the outputs name as the sweep's model. */
const char *sweep_models(const struct sweep *s, char *buf, size_t cap);

/* ---- running ----------------------------------------------------------- */

/* Replay trace t once for the listed points (indices < npoints; NULL and
 * n = npoints: all), s->jobs workers.  Fills s->res[t][point] and
 * s->traces[t].  Returns 0, EXIT_BADTRACE when the trace cannot be opened
 * (message printed); a damaged trace returns 0 with traces[t].damaged set
 * (results cover the records before the damage). */
int sweep_run_trace(struct sweep *s, size_t t, const size_t *points, size_t n);
/* Trace metadata only (labels, sizes) without replaying; 0 or exit status. */
int sweep_trace_info(struct sweep *s, size_t t);
/* Analyze the reference trace (SWEEP_REF_TRACE); 0 or exit status. */
int sweep_run_reference(struct sweep *s);
/* Compute s->metrics from s->res and the reference. */
int sweep_compute_metrics(struct sweep *s);

static inline struct sweep_mats *sweep_res(const struct sweep *s, size_t t, size_t p)
{
	return &s->res[t * s->npoints + p];
}
static inline const struct sweep_metrics *sweep_metric(const struct sweep *s, size_t t, size_t p)
{
	return &s->metrics[t * s->ngrid + p];
}
/* Value text of parameter k at grid point p. */
static inline const char *sweep_value(const struct sweep *s, size_t p, size_t k)
{
	return s->params[k].values[s->coord[p * s->nparams + k]];
}

/* ---- comparing two matrices -------------------------------------------- */

/* m and ref: directed (sizes may differ: missing rows are zeros); fills
 * everything but true_frac/false_frac.  0 or -1 (out of memory). */
int sweep_compare(const struct matrix *m, const struct matrix *ref, unsigned k,
                  struct sweep_metrics *out);

/* ---- outputs ----------------------------------------------------------- */

/* Text table (stdout) and CSV. */
void sweep_print_table(const struct sweep *s, FILE *f);
int sweep_write_csv(const struct sweep *s, const char *path);
/* HDF5 (sweep_h5.c): 0 or -1 with err filled. */
int sweep_write_h5(const struct sweep *s, const char *path, struct ct_error *err);
/* SVG plot (sweep_plot.c): 0 or -1 (errno). */
int sweep_write_plot(const struct sweep *s, const char *path);

/* Frees a sweep_mats. */
void sweep_mats_free(struct sweep_mats *m);
/* Keep a matrices consumer's results: out takes *mx (and sets it NULL). */
void sweep_mats_take(struct sweep_mats *out, struct matrices **mx, unsigned line_size);

/* ---- command -------------------------------------------------------------- */

/* Parse the command line into s (shared by cmd_sweep and the MPI main).
 * Returns 0, or an exit status (message printed).  Outputs go to *h5,
 * *csv, *plot (NULL when not asked). */
struct sweep_cli {
	const char *h5, *csv, *plot;
	const char *reference, *reference_model;
	bool quiet;                   /* no table on stdout */
	bool jobs_set;                /* -j given */
};
int sweep_parse_args(struct sweep *s, struct sweep_cli *cli, int argc, char **argv);
/* After the runs: metrics, table, CSV, HDF5, plot.  Returns the exit status. */
int sweep_finish_outputs(struct sweep *s, const struct sweep_cli *cli);

int cmd_sweep(int argc, char **argv);

/* The MPI driver (sweep_mpi.c, built with -DHAVE_MPI): argv after the
 * program name (an optional leading "sweep" word is skipped); call between
 * MPI_Init_thread and MPI_Finalize.  Returns the exit status. */
int sweep_mpi_main(int argc, char **argv);

#endif
