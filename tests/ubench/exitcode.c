/* exitcode: exit() called by a thread other than the main one, while the
 * main thread waits in pthread_join and a second worker still computes.
 * Prints "exitcode: thread 0 calls exit(N)" and, from an atexit handler,
 * "exitcode: atexit ran"; the process exit status is N. */
#include "ubench.h"

static uint64_t code = 7, iters = 5000000;
static _Atomic int spin = 1;
static struct ub_slot shared;

static void at_exit_handler(void)
{
	printf("exitcode: atexit ran\n");
	fflush(stdout);
}

/* A draw, mixed by a chain of multiplies that touches no memory: longer
 * than the soft sampler's forward window (commrec(1), "Which instruction"),
 * so that some of the samples in these loops are skipped and the workers'
 * SKIPPED counts, still running at exit, have something to show
 * (tests/e2e/record_robust.sh). */
static uint64_t mixed_draw(struct ub_rng *r)
{
	uint64_t x = ub_next(r);
	for (int k = 0; k < 8; k++)
		x = x * UINT64_C(6364136223846793005) + 1;
	return x;
}

static void *spinner(void *arg)
{
	(void)arg;
	struct ub_rng r;
	ub_rng_seed(&r, 11, 1);
	while (atomic_load_explicit(&spin, memory_order_relaxed))
		shared.w[1] = mixed_draw(&r);
	return NULL;
}

static void *exiter(void *arg)
{
	(void)arg;
	struct ub_rng r;
	ub_rng_seed(&r, 11, 0);
	for (uint64_t i = 0; i < iters; i++)
		shared.w[0] = mixed_draw(&r);
	printf("exitcode: thread 0 calls exit(%d)\n", (int)code);
	exit((int)code);
}

int main(int argc, char **argv)
{
	const struct ub_opt opts[] = {
		{ 'x', "N", "exit status", UB_UINT, &code, 0, 255, NULL },
		UB_OPT_ITERS(&iters),
	};
	const struct ub_cli cli = { "exitcode",
		"A non-main thread calls exit(N) while main waits in pthread_join.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	atexit(at_exit_handler);
	pthread_t a, b;
	if (pthread_create(&a, NULL, exiter, NULL) || pthread_create(&b, NULL, spinner, NULL)) {
		perror("pthread_create");
		return 1;
	}
	pthread_join(a, NULL);
	return 100;   /* not reached: thread 0 exits the process */
}
