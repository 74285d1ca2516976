/* phases: two marked loops of different patterns in two phases, with the
 * commrec.h markers (issue 14).  Every thread runs, inside the region
 * "solve":
 *   phase "ring",   region "ring":   with probability 1/2 a relaxed store to
 *                   word 0 of line i (shared with thread i+1), else to line
 *                   i-1 (shared with thread i-1): communication only between
 *                   ring neighbours i, i+1 (mod THREADS);
 *   phase "gather", region "gather": thread 0 stores to the line of a random
 *                   other thread j (master line j), thread j > 0 to its own
 *                   master line: communication only between 0 and the others.
 * The threads meet on a barrier before and after each phase marker (thread 0
 * sets the phase).  Without commrec the markers do nothing.  Output:
 * tests/ubench/README.md. */
#include "ubench.h"
#include "commrec.h"

static struct ub_slot ring_line[UB_MAX_THREADS];   /* line i: threads i and i+1 */
static struct ub_slot master_line[UB_MAX_THREADS]; /* line j: threads 0 and j */
static pthread_barrier_t phase_bar;
static unsigned nthreads;

static uint64_t ring(struct ub_thread *t)
{
	struct ub_rng r = t->rng;
	unsigned i = t->idx, n = nthreads;
	void *mine = (void *)ring_line[i].w, *left = (void *)ring_line[(i + n - 1) % n].w;
	uint64_t ns = 0;
	for (uint64_t k = 0; k < t->iters; k++) {
		uint64_t x = ub_next(&r);
		atomic_store_explicit((_Atomic uint64_t *)ub_select((int)(x >> 63), mine, left), x,
		                      memory_order_relaxed);
		ns++;
	}
	t->rng = r;
	return ns;
}

static uint64_t gather(struct ub_thread *t)
{
	struct ub_rng r = t->rng;
	unsigned n = nthreads;
	uint64_t ns = 0;
	for (uint64_t k = 0; k < t->iters; k++) {
		uint64_t x = ub_next(&r);
		unsigned j = t->idx ? t->idx : 1 + (unsigned)((x >> 32) % (n - 1));
		atomic_store_explicit((_Atomic uint64_t *)master_line[j].w, x, memory_order_relaxed);
		ns++;
	}
	t->rng = r;
	return ns;
}

static void phase(struct ub_thread *t, const char *name)
{
	pthread_barrier_wait(&phase_bar);
	if (t->idx == 0)
		commrec_phase(name);
	pthread_barrier_wait(&phase_bar);
}

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	commrec_region_begin("solve");
	phase(t, "ring");
	commrec_region_begin("ring");
	t->c.extra[0] = ring(t);
	commrec_region_end();
	phase(t, "gather");
	commrec_region_begin("gather");
	t->c.extra[1] = gather(t);
	commrec_region_end();
	commrec_region_end();
	t->c.shared_stores = t->c.extra[0] + t->c.extra[1];
}

int main(int argc, char **argv)
{
	uint64_t threads = 4, iters = 60000000, seed = 1;
	const struct ub_opt opts[] = {
		{ 't', "THREADS", "threads to create (3 or more)", UB_UINT, &threads, 3,
		  UB_MAX_THREADS, NULL },
		UB_OPT_ITERS(&iters),
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "phases",
		"Two marked loops in two phases: a ring (neighbours share lines), then\n"
		"all-to-master (thread 0 shares a line with each other thread).",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	nthreads = (unsigned)threads;
	pthread_barrier_init(&phase_bar, NULL, nthreads);
	struct ub_thread *t = ub_run(nthreads, iters, seed, work, NULL);
	printf("bench phases threads=%" PRIu64 " iters=%" PRIu64 " seed=%" PRIu64 "\n", threads,
	       iters, seed);
	ub_print_threads(t, nthreads, "ring_stores", "gather_stores");
	free(t);
	return 0;
}
