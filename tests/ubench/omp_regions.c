/* omp_regions: an unmodified OpenMP program (no markers) with two
 * `#pragma omp parallel` regions of different patterns (issue 14):
 *   ring_update: thread i stores, with probability 1/2, to line i (shared
 *                with thread i+1), else to line i-1: ring neighbours only;
 *   gather:      thread 0 stores to the line of a random other thread j,
 *                thread j > 0 to its own line: 0 with every other thread.
 * and a third, `parallel for schedule(dynamic)` (GOMP_parallel_loop_*), with
 * no sharing but a reduction: scale_sum.
 * Under commrec, each region is recorded as a region named by its outlined
 * function (ring_update._omp_fn.0, gather._omp_fn.0, scale_sum._omp_fn.0).  Built with -fopenmp
 * (the Makefile's build/ubench/omp_% rule).  Prints "bench omp_regions
 * threads=N iters=N" and "thread I tid=T" per OpenMP thread of each region. */
#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAXT 64
struct slot {
	_Alignas(128) _Atomic uint64_t w[16];
};
static struct slot line[MAXT];

static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void ring_update(int n, uint64_t iters)
{
#pragma omp parallel num_threads(n)
	{
		int i = omp_get_thread_num();
		uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		for (uint64_t k = 0; k < iters; k++) {
			uint64_t x = next(&s);
			int j = (x >> 63) ? i : (i + n - 1) % n;
			atomic_store_explicit(&line[j].w[0], x, memory_order_relaxed);
		}
	}
}

static void gather(int n, uint64_t iters)
{
#pragma omp parallel num_threads(n)
	{
		int i = omp_get_thread_num();
		uint64_t s = 0x2545f4914f6cdd1dull * (uint64_t)(i + 7);
		for (uint64_t k = 0; k < iters; k++) {
			uint64_t x = next(&s);
			int j = i ? i : 1 + (int)((x >> 32) % (uint64_t)(n - 1));
			atomic_store_explicit(&line[j].w[0], x, memory_order_relaxed);
		}
	}
}

static double scale_sum(int n, uint64_t iters)
{
	double sum = 0;
#pragma omp parallel for schedule(dynamic, 4096) num_threads(n) reduction(+ : sum)
	for (uint64_t k = 0; k < iters / 16; k++)
		sum += (double)(k % 7);
	return sum;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 10) : 60000000;
	if (n < 3 || n > MAXT) {
		fprintf(stderr, "usage: omp_regions [THREADS (3..%d)] [ITERS]\n", MAXT);
		return 2;
	}
	omp_set_dynamic(0);
	ring_update(n, iters);
	gather(n, iters);
	double sum = scale_sum(n, iters);
	printf("bench omp_regions threads=%d iters=%llu sum=%.0f\n", n, (unsigned long long)iters,
	       sum);
#pragma omp parallel num_threads(n)
	printf("thread %d tid=%d\n", omp_get_thread_num(), (int)gettid());
	return 0;
}
