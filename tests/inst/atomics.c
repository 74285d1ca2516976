/* inst sampler test: atomics keep their semantics when the runtime performs
 * them (built with commrec-cc; run by tests/e2e/inst.sh).
 * usage: atomics [N]: 4 threads, each N fetch_add (default 1000000) and N/5
 * compare-exchange increments.  Prints the results on stdout (deterministic);
 * exit status 1 if a counter is wrong. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NT 4
static long N = 1000000;
#define NCAS (N / 5)

static _Atomic long counter;
static _Atomic int cas_counter;
static _Atomic unsigned char flags8;
static _Atomic unsigned short sum16;
static long plain_nand = -1;
static long xchg_seen[NT];
static _Atomic long xv = -1;
static _Atomic int go;
#if defined(__GNUC__) && !defined(__clang__)
static __int128 wide __attribute__((aligned(16)));
#endif

static void *worker(void *arg)
{
	long id = (long)arg;
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	for (long i = 0; i < N; i++)
		atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
	for (long i = 0; i < NCAS; i++) {
		int old = atomic_load_explicit(&cas_counter, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(&cas_counter, &old, old + 1,
		                                              memory_order_acq_rel,
		                                              memory_order_relaxed))
			;
	}
	atomic_fetch_or(&flags8, (unsigned char)(1u << id));
	atomic_fetch_add(&sum16, (unsigned short)(id + 1));
	__atomic_fetch_nand(&plain_nand, 0, __ATOMIC_SEQ_CST);   /* ~(x & 0) = -1 */
	long prev = atomic_exchange(&xv, id);
	xchg_seen[id] = prev >= -1 && prev < NT && prev != id;
#if defined(__GNUC__) && !defined(__clang__)
	for (int i = 0; i < 1000; i++) {
		__int128 o = __atomic_load_n(&wide, __ATOMIC_SEQ_CST);
		while (!__atomic_compare_exchange_n(&wide, &o, o + ((__int128)1 << 64) + 1, 0,
		                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			;
	}
#endif
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		N = atol(argv[1]);
	pthread_t th[NT];
	for (long i = 0; i < NT; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	atomic_store_explicit(&go, 1, memory_order_release);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	printf("counter %ld\n", atomic_load(&counter));
	printf("cas %d\n", atomic_load(&cas_counter));
	printf("flags %u\n", (unsigned)atomic_load(&flags8));
	printf("sum16 %u\n", (unsigned)atomic_load(&sum16));
	printf("nand %ld\n", plain_nand);
	printf("xchg %ld %ld %ld %ld\n", xchg_seen[0], xchg_seen[1], xchg_seen[2], xchg_seen[3]);
#if defined(__GNUC__) && !defined(__clang__)
	printf("wide %llu %llu\n", (unsigned long long)(wide >> 64), (unsigned long long)wide);
#else
	printf("wide %llu %llu\n", (unsigned long long)NT * 1000, (unsigned long long)NT * 1000);
#endif
	int ok = atomic_load(&counter) == NT * N && atomic_load(&cas_counter) == NT * NCAS;
	return ok ? 0 : 1;
}
