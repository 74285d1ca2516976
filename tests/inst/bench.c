/* inst sampler cost: a small multi-threaded kernel measured plain, with the
 * inst runtime passive, sampled and full (tests/inst/bench.sh).
 * usage: bench [threads] [rounds] [kernel]
 *   kernel stream: b[i] = 3*a[i] + b[i-1] over 256 KB per thread (loads and
 *                  stores every few instructions)
 *   kernel hash:   a few dozen arithmetic instructions per access (a hash
 *                  table update), closer to ordinary code
 * Prints a checksum (deterministic) and the time of the parallel part. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ELEMS (32 * 1024)
#define HBUCKETS 4096

static int nthreads = 2, rounds = 200;
static const char *kernel = "stream";
static long shared_sum[64] __attribute__((aligned(64)));

struct arg {
	long id;
	long *a, *b;
	long out;
};

__attribute__((noinline)) static long stream_round(long *a, long *b, long r)
{
	long prev = r;
	for (long i = 0; i < ELEMS; i++) {
		b[i] = 3 * a[i] + prev;
		prev = b[i] & 0xff;
	}
	return prev;
}

__attribute__((noinline)) static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

__attribute__((noinline)) static long hash_round(long *table, long r)
{
	long s = 0;
	for (long i = 0; i < ELEMS / 4; i++) {
		uint64_t h = mix((uint64_t)(i + r * ELEMS));
		long *slot = &table[h % HBUCKETS];
		*slot += (long)(h & 7);
		s += *slot;
	}
	return s;
}

static void *worker(void *p)
{
	struct arg *a = p;
	long s = 0;
	for (long r = 0; r < rounds; r++) {
		if (!strcmp(kernel, "hash"))
			s += hash_round(a->a, r);
		else
			s += stream_round(a->a, a->b, r);
		__atomic_fetch_add(&shared_sum[0], 1, __ATOMIC_RELAXED);
	}
	a->out = s;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		nthreads = atoi(argv[1]);
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (argc > 3)
		kernel = argv[3];
	if (nthreads < 1 || nthreads > 64)
		nthreads = 2;
	struct arg args[64];
	pthread_t th[64];
	for (int t = 0; t < nthreads; t++) {
		args[t].id = t;
		args[t].a = calloc(ELEMS, sizeof(long));
		args[t].b = calloc(ELEMS, sizeof(long));
		if (!args[t].a || !args[t].b)
			return 1;
		for (long i = 0; i < ELEMS; i++)
			args[t].a[i] = i * (t + 1);
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, worker, &args[t]);
	long sum = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(th[t], NULL);
		sum += args[t].out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("checksum %ld rounds %ld\n", sum, shared_sum[0]);
	fprintf(stderr, "time %.6f\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
