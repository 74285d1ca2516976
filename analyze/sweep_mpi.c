/* The sweep across MPI ranks (commanalyze-mpi, built with MPI=1).
 *
 * Every rank parses the same command line (so every rank has the same grid
 * and reference).  The work items are (trace, point) pairs, numbered
 * trace x npoints + point (npoints includes an off-grid reference point);
 * rank r takes the contiguous block [r N / R, (r + 1) N / R), so a rank
 * decodes each of its traces once and at most a few traces in all.  Within
 * a rank the usual pipeline runs with -j workers (default: the node's cores
 * divided by the ranks on the node).
 *
 * Results go to rank 0 by point-to-point messages, in item order per
 * sender (MPI keeps the order of messages between two ranks with one tag):
 * a fixed header (item, sizes, cell counts, totals, records, damage) then
 * the cells that received weight, thread then core, each as five doubles
 * (row, column, all, true, false; directed): as many as the pairs that
 * communicate, not n x n.  Rank 0 analyzes
 * a reference trace itself, computes the distances and writes every output
 * exactly as the single-machine command does.  The exit status is the
 * largest of all ranks'. */
#include "sweep.h"

#ifdef HAVE_MPI

#include <fcntl.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG_HDR 11
#define TAG_CELLS 12

struct wire_hdr {
	uint64_t item;
	uint64_t n[2];
	uint64_t ncells[2];           /* cells sent, by index */
	uint64_t line_size;
	uint64_t events[3][2];
	double weight[3][2];
	uint64_t unmapped_cpu;
	uint64_t records;
	uint64_t done, damaged;
	double seconds;
	char damage[512];
};

static size_t block_lo(size_t n, int r, int R)
{
	return (size_t)((unsigned long long)n * (unsigned)r / (unsigned)R);
}

#define CELL_DOUBLES 5

static void send_item(struct sweep *s, size_t item)
{
	size_t t = item / s->npoints, p = item % s->npoints;
	const struct sweep_mats *m = sweep_res(s, t, p);
	struct wire_hdr h;
	memset(&h, 0, sizeof h);
	h.item = item;
	h.done = m->done;
	if (m->done) {
		const uint32_t(*rc)[2];
		for (int ix = 0; ix < 2; ix++) {
			h.n[ix] = m->n[ix];
			h.ncells[ix] = matrices_cells(m->mx, ix, &rc);
		}
		h.line_size = m->line_size;
		memcpy(h.events, m->tot.events, sizeof h.events);
		memcpy(h.weight, m->tot.weight, sizeof h.weight);
		h.unmapped_cpu = m->tot.unmapped_cpu;
	}
	h.records = s->traces[t].records;
	h.damaged = s->traces[t].damaged;
	h.seconds = s->seconds;
	snprintf(h.damage, sizeof h.damage, "%s", s->traces[t].damage);
	MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, TAG_HDR, MPI_COMM_WORLD);
	if (!m->done)
		return;
	size_t nc = CELL_DOUBLES * (h.ncells[0] + h.ncells[1]);
	double *buf = malloc((nc ? nc : 1) * sizeof *buf);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, EXIT_BADTRACE);
	double *at = buf;
	for (int ix = 0; ix < 2; ix++) {
		const uint32_t(*rc)[2];
		size_t n = matrices_cells(m->mx, ix, &rc);
		for (size_t x = 0; x < n; x++, at += CELL_DOUBLES) {
			at[0] = rc[x][0];
			at[1] = rc[x][1];
			for (int k = 0; k < 3; k++)
				at[2 + k] = matrix_at(matrices_get(m->mx, ix, k), rc[x][0], rc[x][1]);
		}
	}
	/* counts beyond INT_MAX doubles would need chunks: 400 M communicating pairs */
	MPI_Send(buf, (int)nc, MPI_DOUBLE, 0, TAG_CELLS, MPI_COMM_WORLD);
	free(buf);
}

static int recv_item(struct sweep *s, int from, size_t want, double *max_seconds)
{
	struct wire_hdr h;
	MPI_Recv(&h, (int)sizeof h, MPI_BYTE, from, TAG_HDR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (h.item != want) {
		ana_err("mpi: rank %d sent item %llu, expected %zu", from, (unsigned long long)h.item,
		        want);
		return -1;
	}
	size_t t = want / s->npoints, p = want % s->npoints;
	struct sweep_trace *ti = &s->traces[t];
	if (h.records > ti->records)
		ti->records = h.records;
	if (h.damaged && !ti->damaged) {
		ti->damaged = true;
		snprintf(ti->damage, sizeof ti->damage, "%s", h.damage);
	}
	if (h.seconds > *max_seconds)
		*max_seconds = h.seconds;
	struct sweep_mats *m = sweep_res(s, t, p);
	sweep_mats_free(m);
	if (!h.done)
		return 0;
	m->n[0] = h.n[0];
	m->n[1] = h.n[1];
	m->line_size = (unsigned)h.line_size;
	memcpy(m->tot.events, h.events, sizeof h.events);
	memcpy(m->tot.weight, h.weight, sizeof h.weight);
	m->tot.unmapped_cpu = h.unmapped_cpu;
	size_t nc = CELL_DOUBLES * (h.ncells[0] + h.ncells[1]);
	double *buf = malloc((nc ? nc : 1) * sizeof *buf);
	/* as the pipeline makes them: dense up to MX_DENSE_MAX rows */
	m->mx = matrices_create(m->n[0], NULL);
	if (!buf || !m->mx || matrices_grow(m->mx, MX_CORE, m->n[1]))
		MPI_Abort(MPI_COMM_WORLD, EXIT_BADTRACE);
	MPI_Recv(buf, (int)nc, MPI_DOUBLE, from, TAG_CELLS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	const double *at = buf;
	for (int ix = 0; ix < 2; ix++)
		for (uint64_t x = 0; x < h.ncells[ix]; x++, at += CELL_DOUBLES)
			if (matrices_add_cell(m->mx, ix, (size_t)at[0], (size_t)at[1], at + 2))
				MPI_Abort(MPI_COMM_WORLD, EXIT_BADTRACE);
	free(buf);
	m->done = true;
	return 0;
}

/* Ranks on this node, for the default -j. */
static int local_ranks(void)
{
	MPI_Comm node;
	int n = 1;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
	    MPI_SUCCESS) {
		MPI_Comm_size(node, &n);
		MPI_Comm_free(&node);
	}
	return n > 0 ? n : 1;
}

int sweep_mpi_main(int argc, char **argv)
{
	int rank = 0, size = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 0 && !strcmp(argv[0], "sweep")) {
		argc--;
		argv++;
	}
	struct sweep s;
	struct sweep_cli cli;
	sweep_init(&s);
	ana_warn_once(true);    /* each warning once per rank, not once per point */
	/* every rank parses; only rank 0 speaks */
	int saved = -1;
	if (rank) {
		fflush(stderr);
		saved = dup(2);
		int nul = open("/dev/null", O_WRONLY);
		if (nul >= 0) {
			dup2(nul, 2);
			close(nul);
		}
	}
	int status = sweep_parse_args(&s, &cli, argc, argv);
	if (saved >= 0) {
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
	}
	int lr = local_ranks();
	if (!status && !cli.jobs_set && lr > 1) {
		unsigned j = s.jobs / (unsigned)lr;
		s.jobs = j ? j : 1;
	}
	s.progress = s.progress && rank == 0;
	if (status) {
		sweep_free(&s);
		return status;   /* every rank saw the same arguments */
	}
	size_t nitems = s.ntraces * s.npoints;
	size_t lo = block_lo(nitems, rank, size), hi = block_lo(nitems, rank + 1, size);
	/* run my block, trace by trace */
	size_t *pts = malloc((s.npoints ? s.npoints : 1) * sizeof *pts);
	if (!pts)
		MPI_Abort(MPI_COMM_WORLD, EXIT_BADTRACE);
	for (size_t i = lo; i < hi && !status;) {
		size_t t = i / s.npoints, n = 0;
		while (i < hi && i / s.npoints == t)
			pts[n++] = i++ % s.npoints;
		status = sweep_run_trace(&s, t, pts, n);
	}
	free(pts);
	/* gather on rank 0 */
	if (rank) {
		for (size_t i = lo; i < hi; i++)
			send_item(&s, i);
	} else {
		double max_seconds = s.seconds;
		for (int r = 1; r < size; r++)
			for (size_t i = block_lo(nitems, r, size); i < block_lo(nitems, r + 1, size); i++)
				if (recv_item(&s, r, i, &max_seconds))
					MPI_Abort(MPI_COMM_WORLD, EXIT_BADTRACE);
		s.seconds = max_seconds;
		/* labels of the traces rank 0 did not replay */
		for (size_t t = 0; t < s.ntraces; t++)
			if (!s.traces[t].thread_labels) {
				int rc = sweep_trace_info(&s, t);
				if (rc && !status)
					status = rc;
			}
		int rc = sweep_run_reference(&s);
		if (!status)
			status = rc;
		if (!rc) {
			rc = sweep_finish_outputs(&s, &cli);
			if (!status)
				status = rc;
			if (!cli.quiet)
				printf("mpi: %d rank%s, %zu items (trace x point), replay wall time %.2f s "
				       "(slowest rank)\n", size, size == 1 ? "" : "s", nitems, s.seconds);
		}
	}
	int all = 0;
	MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	sweep_free(&s);
	return all;
}

#else

/* Built without MPI: nothing here (commanalyze-mpi needs MPI=1). */
typedef int sweep_mpi_unused;

#endif
