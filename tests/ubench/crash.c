/* crash: the program dies of a signal while threads are running.  THREADS
 * workers store to a shared line and their private lines; after its first
 * ITERS iterations worker 0 prints "crash: thread 0 crashing (segv|abort)"
 * and dereferences NULL (SIGSEGV), or calls abort() with -a (SIGABRT), while
 * the other workers keep running.  Never exits normally. */
#include <signal.h>

#include "ubench.h"

static struct ub_slot shared;
static int use_abort;
static int *volatile null_ptr;

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	struct ub_rng r = t->rng;
	for (uint64_t i = 0; t->idx != 0 || i < t->iters; i++) {
		uint64_t x = ub_next(&r);
		if (x & 1)
			shared.w[0] = x;
		else
			ub_private[t->idx].w[0] = x;
	}
	printf("crash: thread 0 crashing (%s)\n", use_abort ? "abort" : "segv");
	fflush(stdout);
	if (use_abort)
		abort();
	*null_ptr = 1;
	raise(SIGSEGV);     /* not reached */
}

int main(int argc, char **argv)
{
	uint64_t threads = 3, iters = 20000000;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, UB_MAX_THREADS),
		UB_OPT_ITERS(&iters),
		{ 'a', "", "abort() instead of a NULL dereference", UB_FLAG, &use_abort, 0, 0, NULL },
	};
	const struct ub_cli cli = { "crash",
		"Runs threads, then thread 0 dereferences NULL (or calls abort with -a).",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	ub_run((unsigned)threads, iters, 1, work, NULL);
	return 0;   /* not reached */
}
