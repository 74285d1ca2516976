/* write_volume: ComDetective section 4.1.1.  Each thread, every iteration,
 * stores a random number either to one word of a shared cache line (with
 * probability SHARED_FRACTION) or to its own private line.  All shared
 * traffic is true sharing on one line; the communication volume grows with
 * the fraction and the thread count.  Output: tests/ubench/README.md. */
#include "ubench.h"

/* The shared line: every thread stores to word 0. */
static struct ub_slot shared;

static uint64_t threshold;

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	ub_store_mix(t, (_Atomic uint64_t *)&shared.w[0], threshold);
}

int main(int argc, char **argv)
{
	uint64_t threads = 2, iters = 150000000, seed = 1;
	double frac = 0.5;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, UB_MAX_THREADS),
		UB_OPT_ITERS(&iters),
		{ 's', "SHARED_FRACTION", "probability of a store to the shared line", UB_FRAC,
		  &frac, 0, 0, NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "write_volume",
		"Each thread stores to a shared line (probability s) or to its private line.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	threshold = ub_threshold(frac);

	struct ub_thread *t = ub_run((unsigned)threads, iters, seed, work, NULL);
	printf("bench write_volume threads=%" PRIu64 " iters=%" PRIu64 " seed=%" PRIu64
	       " s=%g\n", threads, iters, seed, frac);
	ub_object("shared", shared.w, UB_LINE, "global", ub_all_threads((unsigned)threads),
	          "word=0x%" PRIxPTR ":8", (uintptr_t)&shared.w[0]);
	ub_print_private((unsigned)threads);
	ub_print_threads(t, (unsigned)threads, NULL, NULL);
	free(t);
	return 0;
}
