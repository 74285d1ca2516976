/* manythreads: thousands of short threads.  Creates THREADS threads (at most
 * CONCURRENT alive at a time when -c is given, else all before the first
 * join); each adds 1 to a shared atomic counter ITERS times and stores to a
 * shared line.  Prints
 *   manythreads threads=T iters=N counter=C expected=E ok|FAILED
 * and exits 0 iff every thread was created and counter == expected. */
#include "ubench.h"

static _Atomic uint64_t counter;
static struct ub_slot shared;
static uint64_t iters = 1000;

static void *body(void *arg)
{
	uintptr_t idx = (uintptr_t)arg;
	for (uint64_t i = 0; i < iters; i++) {
		atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
		shared.w[idx % 8] = i;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t threads = 1000, conc = 0;
	const struct ub_opt opts[] = {
		{ 't', "THREADS", "threads to create", UB_UINT, &threads, 1, 100000, NULL },
		{ 'n', "ITERS", "counter increments per thread", UB_UINT, &iters, 0, 1000000000,
		  NULL },
		{ 'c', "CONCURRENT", "at most this many alive at once (0: no limit)", UB_UINT, &conc,
		  0, 100000, NULL },
	};
	const struct ub_cli cli = { "manythreads",
		"Creates and joins many short threads that update a shared counter.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);

	pthread_t *th = calloc(threads, sizeof *th);
	if (!th) {
		perror("calloc");
		return 1;
	}
	uint64_t wave = conc ? conc : threads, created = 0, joined = 0;
	int err = 0;
	while (created < threads && !err) {
		uint64_t end = created + wave < threads ? created + wave : threads;
		for (; created < end; created++) {
			err = pthread_create(&th[created], NULL, body, (void *)(uintptr_t)created);
			if (err) {
				fprintf(stderr, "manythreads: pthread_create #%" PRIu64 ": %s\n", created,
				        strerror(err));
				break;
			}
		}
		for (; joined < created; joined++)
			pthread_join(th[joined], NULL);
	}
	uint64_t got = atomic_load(&counter), want = threads * iters;
	int ok = !err && got == want;
	printf("manythreads threads=%" PRIu64 " iters=%" PRIu64 " counter=%" PRIu64
	       " expected=%" PRIu64 " %s\n", created, iters, got, want, ok ? "ok" : "FAILED");
	free(th);
	return ok ? 0 : 1;
}
