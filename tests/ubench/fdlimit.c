/* fdlimit: opens /dev/null until the descriptor limit (EMFILE), prints how
 * many it got ("fdlimit: opened N files"), then, with all of them still
 * open, runs THREADS threads that compute ("thread I sum=S") and prints
 * "done".  Recorded, it must open as many files as without the recorder
 * (tests/e2e/record_faults.sh, under ulimit -n). */
#include <fcntl.h>

#include "ubench.h"

static uint64_t nthreads = 4, iters = 20000000;

static void *worker(void *arg)
{
	struct ub_rng r;
	ub_rng_seed(&r, 5, (unsigned)(uintptr_t)arg);
	volatile uint64_t sum = 0;
	for (uint64_t i = 0; i < iters; i++)
		sum += ub_next(&r) & 0xff;
	printf("thread %u sum=%" PRIu64 "\n", (unsigned)(uintptr_t)arg, (uint64_t)sum);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&nthreads, UB_MAX_THREADS),
		UB_OPT_ITERS(&iters),
	};
	const struct ub_cli cli = { "fdlimit",
		"Open files up to the descriptor limit, then run threads.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	unsigned n = 0;
	int e = 0;
	for (;;) {
		if (open("/dev/null", O_RDONLY) < 0) {
			e = errno;
			break;
		}
		n++;
	}
	printf("fdlimit: opened %u files (then: %s)\n", n, strerror(e));
	fflush(stdout);
	pthread_t th[UB_MAX_THREADS];
	for (uint64_t i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i)) {
			printf("fdlimit: pthread_create failed\n");
			return 1;
		}
	for (uint64_t i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("done threads=%u\n", (unsigned)nthreads);
	return 0;
}
