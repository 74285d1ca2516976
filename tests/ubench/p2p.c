/* p2p: ComDetective section 4.1.4 (listing 4).  Threads form pairs (0-1,
 * 2-3, ...); each pair has its own shared line (separate, padded lines) and
 * both threads of a pair store to its word 0 with probability FRACTION, else
 * to their private lines.  Expected matrix: communication only in the pair
 * cells (0,1), (2,3), ...; nothing between pairs.  Output:
 * tests/ubench/README.md. */
#include "ubench.h"

static struct ub_slot pair_line[UB_MAX_THREADS / 2];

static uint64_t threshold;

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	ub_store_mix(t, (_Atomic uint64_t *)&pair_line[t->idx / 2].w[0], threshold);
}

int main(int argc, char **argv)
{
	uint64_t threads = 4, iters = 150000000, seed = 1;
	double frac = 0.5;
	const struct ub_opt opts[] = {
		{ 't', "THREADS", "threads to create (even)", UB_UINT, &threads, 2,
		  UB_MAX_THREADS, NULL },
		UB_OPT_ITERS(&iters),
		{ 's', "FRACTION", "probability of a store to the pair's line", UB_FRAC, &frac,
		  0, 0, NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "p2p",
		"Threads in pairs (0-1, 2-3, ...) store to their pair's line (probability s)\n"
		"or to their private line.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	if (threads % 2)
		ub_bad_usage(&cli, "-t must be even (threads work in pairs), got %" PRIu64, threads);
	threshold = ub_threshold(frac);

	struct ub_thread *t = ub_run((unsigned)threads, iters, seed, work, NULL);
	printf("bench p2p threads=%" PRIu64 " iters=%" PRIu64 " seed=%" PRIu64 " s=%g\n",
	       threads, iters, seed, frac);
	for (unsigned p = 0; p < threads / 2; p++) {
		char name[32], who[32];
		snprintf(name, sizeof name, "shared.%u", p);
		snprintf(who, sizeof who, "%u,%u", 2 * p, 2 * p + 1);
		ub_object(name, pair_line[p].w, UB_LINE, "global", who,
		          "word=0x%" PRIxPTR ":8", (uintptr_t)&pair_line[p].w[0]);
	}
	ub_print_private((unsigned)threads);
	ub_print_threads(t, (unsigned)threads, NULL, NULL);
	free(t);
	return 0;
}
