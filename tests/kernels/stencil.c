/* stencil: a 1-D Jacobi stencil.  THREADS workers own contiguous chunks of
 * two arrays of CELLS doubles (each worker first touches its own chunk) and
 * sweep SWEEPS times, reading cells i-1, i, i+1 of one array and writing cell
 * i of the other, with one pthread barrier per sweep.  Worker w reads the
 * last cell of w-1 and the first cell of w+1, which those wrote one sweep
 * before: nearest-neighbour communication, the pairs (w, w+1) and nothing
 * else (the barrier itself is libc's, not part of the program).  See
 * tests/kernels/README.md. */
#include "../ubench/ubench.h"

struct grid {
	double *a, *b;
	double *sum;            /* per worker: its chunk's sum after the last sweep */
	uint64_t cells, sweeps;
	unsigned threads;
	pthread_barrier_t sweep;
};

/* n doubles on lines of their own: the two arrays never share a line (the
 * end of one and the start of the other would be false sharing between the
 * first and the last worker).  Not cleared: the main thread writes the two
 * boundary cells, each worker first touches its own chunk. */
static double *lines_of_doubles(uint64_t n)
{
	size_t size = (n * sizeof(double) + 2 * UB_LINE - 1) & ~(size_t)(2 * UB_LINE - 1);
	return aligned_alloc(2 * UB_LINE, size);
}

static void chunk(const struct grid *g, unsigned w, uint64_t *lo, uint64_t *hi)
{
	uint64_t inner = g->cells - 2;
	*lo = 1 + inner * w / g->threads;
	*hi = 1 + inner * (w + 1) / g->threads;
}

static void work(struct ub_thread *t, void *ctx)
{
	struct grid *g = ctx;
	uint64_t lo, hi;
	chunk(g, t->idx, &lo, &hi);
	for (uint64_t i = lo; i < hi; i++)
		g->a[i] = g->b[i] = (double)(i % 7);
	pthread_barrier_wait(&g->sweep);
	double *src = g->a, *dst = g->b;
	for (uint64_t s = 0; s < g->sweeps; s++) {
		for (uint64_t i = lo; i < hi; i++)
			dst[i] = (src[i - 1] + src[i] + src[i + 1]) * (1.0 / 3.0);
		double *x = src;
		src = dst;
		dst = x;
		pthread_barrier_wait(&g->sweep);
	}
	double sum = 0;
	for (uint64_t i = lo; i < hi; i++)
		sum += src[i];
	g->sum[t->idx] = sum;   /* each worker reads only its own chunk at the end */
	t->c.extra[0] = (hi - lo) * g->sweeps;   /* cells updated */
}

int main(int argc, char **argv)
{
	uint64_t threads = 4, cells = 4096, sweeps = 2000;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, 64),
		{ 'c', "CELLS", "cells per array (two fixed boundary cells)", UB_UINT, &cells, 3,
		  UINT64_C(1) << 30, NULL },
		{ 's', "SWEEPS", "sweeps (one barrier each)", UB_UINT, &sweeps, 1,
		  UINT64_C(1) << 30, NULL },
	};
	const struct ub_cli cli = { "stencil",
		"1-D Jacobi stencil, one chunk per thread, one barrier per sweep\n"
		"(nearest-neighbour communication).",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	if (cells - 2 < threads)
		ub_bad_usage(&cli, "-c must leave at least one inner cell per thread");

	struct grid g = { .cells = cells, .sweeps = sweeps, .threads = (unsigned)threads };
	g.a = lines_of_doubles(cells);
	g.b = lines_of_doubles(cells);
	g.sum = calloc(threads, sizeof *g.sum);
	if (!g.a || !g.b || !g.sum) {
		perror("calloc");
		return 1;
	}
	g.a[0] = g.b[0] = 1000.0;
	g.a[cells - 1] = g.b[cells - 1] = -1000.0;
	pthread_barrier_init(&g.sweep, NULL, g.threads);
	struct ub_thread *t = ub_run(g.threads, sweeps, 0, work, &g);

	double sum = 0;
	for (unsigned w = 0; w < g.threads; w++)
		sum += g.sum[w];
	printf("kernel stencil threads=%u cells=%" PRIu64 " sweeps=%" PRIu64 " checksum=%.6f\n",
	       g.threads, cells, sweeps, sum);
	ub_object("grid.a", g.a, cells * sizeof *g.a, "malloc", ub_all_threads(g.threads), NULL);
	ub_object("grid.b", g.b, cells * sizeof *g.b, "malloc", ub_all_threads(g.threads), NULL);
	ub_print_threads(t, g.threads, "cells", NULL);
	pthread_barrier_destroy(&g.sweep);
	free(t);
	free(g.a);
	free(g.b);
	free(g.sum);
	return 0;
}
