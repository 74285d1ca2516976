/* stencil: a 1-D relaxation (asynchronous Jacobi) for `commanalyze loops`
 * (issue 14).  The array is split into chunks of CHUNK words, one per
 * thread, each chunk one line when CHUNK is 8 (the default); every thread
 * sweeps its chunk ITERS times, each word becoming the mean of itself and
 * its two neighbours, so that it reads the last word of the previous
 * thread's chunk and the first of the next: communication only between
 * threads i and i+1 (no wrap), all of it in the sweep loop (the line marked
 * "sweep loop" below), inside the time loop.  Output: tests/ubench/README.md. */
#include "ubench.h"

static _Atomic uint64_t *grid;   /* CHUNK * THREADS words + one on each side */
static uint64_t chunk = 8;

static __attribute__((noinline)) void relax(struct ub_thread *t)
{
	_Atomic uint64_t *a = grid + 1 + t->idx * chunk;
	uint64_t n = chunk;
	for (uint64_t it = 0; it < t->iters; it++) {           /* time loop */
		for (uint64_t i = 0; i < n; i++) {                /* sweep loop */
			uint64_t l = atomic_load_explicit(&a[i - 1], memory_order_relaxed);
			uint64_t c = atomic_load_explicit(&a[i], memory_order_relaxed);
			uint64_t r = atomic_load_explicit(&a[i + 1], memory_order_relaxed);
			atomic_store_explicit(&a[i], (l + c + r) / 3 + it, memory_order_relaxed);
		}
	}
}

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	relax(t);
	t->c.shared_loads = 2 * t->iters;
	t->c.private_stores = chunk * t->iters;
}

int main(int argc, char **argv)
{
	uint64_t threads = 4, iters = 4000000, seed = 1;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, UB_MAX_THREADS),
		UB_OPT_ITERS(&iters),
		{ 'c', "CHUNK", "words per thread (8: one line)", UB_UINT, &chunk, 1, 4096, NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "stencil",
		"A 1-D relaxation: each thread sweeps its chunk, reading its neighbours'\n"
		"boundary words; communication between threads i and i+1 only.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	size_t words = chunk * threads + 2;
	grid = aligned_alloc(UB_LINE, (words * 8 + 2 * UB_LINE) & ~(size_t)(UB_LINE - 1));
	if (!grid) {
		perror("aligned_alloc");
		return 1;
	}
	/* chunk 0 starts on a line: grid[1] is line-aligned */
	grid = (_Atomic uint64_t *)((char *)grid + UB_LINE - 8);
	for (size_t i = 0; i < words; i++)
		atomic_init(&grid[i], i);
	struct ub_thread *t = ub_run((unsigned)threads, iters, seed, work, NULL);
	printf("bench stencil threads=%" PRIu64 " iters=%" PRIu64 " chunk=%" PRIu64 "\n", threads,
	       iters, chunk);
	ub_print_threads(t, (unsigned)threads, NULL, NULL);
	free(t);
	return 0;
}
