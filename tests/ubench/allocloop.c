/* allocloop: every thread calls malloc and free in a loop (a record each
 * for the recorder: with a small ring, far more than the writer drains),
 * and prints "thread I allocs=N"; then "done".  The recorder's ring
 * overrun test (tests/e2e/record_faults.sh). */
#include "ubench.h"

static uint64_t nthreads = 2, iters = 2000000;

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	uint64_t n = 0;
	for (uint64_t i = 0; i < iters; i++) {
		volatile char *p = malloc(16 + (i & 63));
		if (p) {
			p[0] = (char)i;
			n++;
		}
		free((void *)p);
	}
	printf("thread %u allocs=%" PRIu64 "\n", me, n);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&nthreads, UB_MAX_THREADS),
		UB_OPT_ITERS(&iters),
	};
	const struct ub_cli cli = { "allocloop", "malloc and free in a loop, in every thread.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	pthread_t th[UB_MAX_THREADS];
	for (uint64_t i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i)) {
			printf("allocloop: pthread_create failed\n");
			return 1;
		}
	for (uint64_t i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("done threads=%u\n", (unsigned)nthreads);
	return 0;
}
