/* read_write: ComDetective section 4.1.3, as specified for commtrace: thread 0
 * only writes one shared word, every iteration; every other thread reads that
 * word with probability READ_FRACTION and otherwise stores to its private
 * line.  Communication is from thread 0 to each reader (loads of a line that
 * thread 0 keeps invalidating); readers do not communicate with each other.
 * Output: tests/ubench/README.md. */
#include "ubench.h"

static struct ub_slot shared;      /* word 0: written by thread 0, read by the others */

static uint64_t threshold;

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	struct ub_rng r = t->rng;
	volatile uint64_t *sh = &shared.w[0];
	volatile uint64_t *mine = &ub_private[t->idx].w[0];
	const uint64_t th = threshold, n = t->iters;
	if (t->idx == 0) {
		for (uint64_t i = 0; i < n; i++)
			*sh = ub_next(&r);
		t->c.shared_stores = n;
		return;
	}
	uint64_t nl = 0, acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = ub_next(&r);
		if (ub_hit(x, th)) {
			acc += *sh;
			nl++;
		} else {
			*mine = x;
		}
	}
	ub_private[t->idx].w[1] = acc;   /* keeps the loads meaningful */
	t->c.shared_loads = nl;
	t->c.private_stores = n - nl;
}

int main(int argc, char **argv)
{
	uint64_t threads = 2, iters = 100000000, seed = 1;
	double frac = 0.5;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, UB_MAX_THREADS),
		UB_OPT_ITERS(&iters),
		{ 'r', "READ_FRACTION", "probability that a reader thread loads the shared word",
		  UB_FRAC, &frac, 0, 0, NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "read_write",
		"Thread 0 only stores to a shared word; the other threads load it\n"
		"(probability r) or store to their private line.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	threshold = ub_threshold(frac);

	struct ub_thread *t = ub_run((unsigned)threads, iters, seed, work, NULL);
	printf("bench read_write threads=%" PRIu64 " iters=%" PRIu64 " seed=%" PRIu64
	       " r=%g\n", threads, iters, seed, frac);
	ub_object("shared", shared.w, UB_LINE, "global", ub_all_threads((unsigned)threads),
	          "word=0x%" PRIxPTR ":8", (uintptr_t)&shared.w[0]);
	/* thread 0 has no private data */
	for (unsigned i = 1; i < threads; i++) {
		char name[32], who[16];
		snprintf(name, sizeof name, "private.%u", i);
		snprintf(who, sizeof who, "%u", i);
		ub_object(name, ub_private[i].w, UB_LINE, "global", who, NULL);
	}
	ub_print_threads(t, (unsigned)threads, NULL, NULL);
	free(t);
	return 0;
}
