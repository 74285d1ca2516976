/* periodic: threads that wake on a timer and work briefly.  Each thread
 * sleeps to the next multiple of INTERVAL us of CLOCK_MONOTONIC (absolute:
 * every thread wakes on the same grid), then stores to its private line for
 * BUSY us of wall time, ITERS times.  A sampler whose samples fall on a
 * fixed grid of the clock (a CPU-wide cpu-clock event: its period divides
 * the interval) meets every wake-up at the same phase, and the threads'
 * samples no longer follow their CPU time; tests/e2e/soft_sampler.sh checks
 * that they do.  Output: tests/ubench/README.md. */
#include "ubench.h"

static uint64_t busy_us = 300, interval_us = 10000;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
	                       .tv_nsec = (long)(ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void work(struct ub_thread *t, void *ctx)
{
	(void)ctx;
	volatile uint64_t *mine = &ub_private[t->idx].w[0];
	const uint64_t step = interval_us * 1000, busy = busy_us * 1000;
	uint64_t next = (mono_ns() / step + 1) * step, stores = 0;
	for (uint64_t k = 0; k < t->iters; k++, next += step) {
		sleep_until(next);
		uint64_t t0 = mono_ns();
		while (mono_ns() - t0 < busy)
			for (int i = 0; i < 64; i++, stores++)
				*mine = stores;
	}
	t->c.private_stores = stores;
}

int main(int argc, char **argv)
{
	uint64_t threads = 2, iters = 300, seed = 1;
	const struct ub_opt opts[] = {
		{ 't', "THREADS", "threads to create", UB_UINT, &threads, 1, UB_MAX_THREADS, NULL },
		{ 'n', "WAKES", "wake-ups per thread", UB_UINT, &iters, 1, UINT64_C(1) << 32, NULL },
		{ 'b', "BUSY", "us of work after each wake-up", UB_UINT, &busy_us, 1, 1000000, NULL },
		{ 'i', "INTERVAL", "us between two wake-ups", UB_UINT, &interval_us, 1, 10000000,
		  NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "periodic",
		"Threads wake at every multiple of INTERVAL us and store to their private line\n"
		"for BUSY us.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	if (busy_us >= interval_us)
		ub_bad_usage(&cli, "-b must be less than -i, got %" PRIu64 " >= %" PRIu64, busy_us,
		             interval_us);

	struct ub_thread *t = ub_run((unsigned)threads, iters, seed, work, NULL);
	printf("bench periodic threads=%" PRIu64 " wakes=%" PRIu64 " busy_us=%" PRIu64
	       " interval_us=%" PRIu64 "\n", threads, iters, busy_us, interval_us);
	ub_print_private((unsigned)threads);
	ub_print_threads(t, (unsigned)threads, NULL, NULL);
	free(t);
	return 0;
}
