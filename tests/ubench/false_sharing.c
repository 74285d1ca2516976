/* false_sharing: ComDetective section 4.1.2 (listing 2).  Each thread, every
 * iteration, atomically adds a random number either to its own word of one
 * shared line (probability FALSE_FRACTION: false sharing, the threads touch
 * different bytes of the line) or to one common word that lives on a second
 * shared line (true sharing).  The fraction of false sharing among the
 * detected communication should follow FALSE_FRACTION.  Output:
 * tests/ubench/README.md. */
#include "ubench.h"

#define FS_MAX_THREADS (UB_LINE / 8)

static struct ub_slot false_line;  /* word i belongs to thread i */
static struct ub_slot true_line;   /* word 0 is common to all threads */

static uint64_t threshold;

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	struct ub_rng r = t->rng;
	_Atomic uint64_t *own = (_Atomic uint64_t *)&false_line.w[t->idx];
	_Atomic uint64_t *common = (_Atomic uint64_t *)&true_line.w[0];
	const uint64_t th = threshold, n = t->iters;
	uint64_t nf = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = ub_next(&r);
		int h = ub_hit(x, th);
		_Atomic uint64_t *p = ub_select(h, (void *)own, (void *)common);
		atomic_fetch_add_explicit(p, x, memory_order_relaxed);
		nf += (uint64_t)h;
	}
	t->c.shared_atomics = n;
	t->c.extra[0] = nf;
	t->c.extra[1] = n - nf;
}

int main(int argc, char **argv)
{
	uint64_t threads = 2, iters = 100000000, seed = 1;
	double frac = 0.5;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, FS_MAX_THREADS),
		UB_OPT_ITERS(&iters),
		{ 'f', "FALSE_FRACTION", "probability of an update of the thread's own word",
		  UB_FRAC, &frac, 0, 0, NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "false_sharing",
		"Threads atomically update their own word of one shared line (probability f,\n"
		"false sharing) or one common word on another line (true sharing).",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	threshold = ub_threshold(frac);

	struct ub_thread *t = ub_run((unsigned)threads, iters, seed, work, NULL);
	printf("bench false_sharing threads=%" PRIu64 " iters=%" PRIu64 " seed=%" PRIu64
	       " f=%g\n", threads, iters, seed, frac);
	const char *all = ub_all_threads((unsigned)threads);
	ub_object("shared.false", false_line.w, UB_LINE, "global", all,
	          "word=0x%" PRIxPTR ":8*%" PRIu64, (uintptr_t)&false_line.w[0], threads);
	ub_object("shared.true", true_line.w, UB_LINE, "global", all,
	          "word=0x%" PRIxPTR ":8", (uintptr_t)&true_line.w[0]);
	ub_print_threads(t, (unsigned)threads, "false_atomics", "true_atomics");
	free(t);
	return 0;
}
