/* omp_reduce: an OpenMP loop nest with a reduction.  Every iteration the
 * master thread (OpenMP thread 0, the program's main thread) refreshes a
 * vector x of N doubles; then all THREADS threads share the rows of an N x N
 * matrix (schedule(static)), each row's dot product with x is reduced with
 * `reduction(+:sum)` into the master's variable, and the master folds sum
 * into x for the next iteration.  Every thread reads the x the master
 * wrote, and the reduction's combining step writes the master's sum from
 * every thread: master-plus-all communication (row and column of the master;
 * little between the other threads).  Built with -fopenmp (the Makefile
 * does so for tests/kernels/omp_*.c).  See tests/kernels/README.md. */
#include <omp.h>

#include "../ubench/ubench.h"

static double dot_rows(const double *m, const double *x, int n)
{
	double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
	for (int i = 0; i < n; i++) {
		double row = 0;
		for (int j = 0; j < n; j++)
			row += m[(size_t)i * n + j] * x[j];
		sum += row;
	}
	return sum;
}

int main(int argc, char **argv)
{
	uint64_t threads = 4, n = 256, iters = 200;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, 64),
		{ 'm', "N", "matrix and vector size", UB_UINT, &n, 1, 16384, NULL },
		{ 'i', "ITERS", "iterations (one parallel loop each)", UB_UINT, &iters, 1,
		  UINT64_C(1) << 30, NULL },
	};
	const struct ub_cli cli = { "omp_reduce",
		"OpenMP matrix-vector loop nest with a reduction; the master refreshes the\n"
		"vector between iterations (master-plus-all communication).",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	omp_set_num_threads((int)threads);
	omp_set_dynamic(0);

	int sz = (int)n;
	double *m = malloc(sizeof *m * (size_t)sz * (size_t)sz);
	double *x = malloc(sizeof *x * (size_t)sz);
	if (!m || !x) {
		perror("malloc");
		return 1;
	}
	/* the matrix is filled in parallel, each thread its rows (first touch) */
#pragma omp parallel for schedule(static)
	for (int i = 0; i < sz; i++)
		for (int j = 0; j < sz; j++)
			m[(size_t)i * sz + j] = (double)((i + j) % 17) / 17.0;
	double total = 0;
	double w0 = ub_now_ms(CLOCK_MONOTONIC);
	for (uint64_t it = 0; it < iters; it++) {
		for (int j = 0; j < sz; j++)
			x[j] = (double)((j + (int)it) % 13) + total * 1e-9;
		total = dot_rows(m, x, sz) * 1e-6;
	}
	double wall = ub_now_ms(CLOCK_MONOTONIC) - w0;
	int nt = omp_get_max_threads();
	pid_t *tid = calloc((size_t)nt, sizeof *tid);
	if (!tid) {
		perror("calloc");
		return 1;
	}
#pragma omp parallel
	tid[omp_get_thread_num()] = gettid();   /* the same pool ran the loops */
	printf("kernel omp_reduce threads=%d n=%d iters=%" PRIu64 " total=%.9e\n", nt, sz, iters,
	       total);
	ub_object("matrix", m, sizeof *m * (size_t)sz * (size_t)sz, "malloc", ub_all_threads((unsigned)nt),
	          NULL);
	ub_object("vector", x, sizeof *x * (size_t)sz, "malloc", ub_all_threads((unsigned)nt), NULL);
	for (int w = 0; w < nt; w++)
		printf("thread_info %d tid=%d\n", w, (int)tid[w]);
	printf("done threads=%d wall_ms=%.1f\n", nt, wall);
	free(tid);
	free(m);
	free(x);
	return 0;
}
