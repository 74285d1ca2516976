/* inst sampler: how well full-trace timestamps order accesses of different
 * threads (tests/inst/order.py reads the trace).  Two threads hand a token
 * back and forth ROUNDS times through one atomic word: thread A stores
 * 2i+1 after seeing 2i, thread B stores 2i+2 after seeing 2i+1 (acquire
 * loads in a spin, release stores).  In a correct order every store comes
 * before the load that saw it.  The spin yields: where the other thread is
 * not running (a loaded machine) a plain spin would record millions of
 * loads per time slice. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic long turn;
static long rounds = 20000;

static void *player(void *arg)
{
	long me = (long)arg;     /* 0: A, 1: B */
	for (long i = 0; i < rounds; i++) {
		long want = 2 * i + me;
		while (atomic_load_explicit(&turn, memory_order_acquire) != want)
			sched_yield();
		atomic_store_explicit(&turn, want + 1, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	fprintf(stderr, "RANGE turn %p %p\n", (void *)&turn, (void *)(&turn + 1));
	pthread_t a, b;
	pthread_create(&a, NULL, player, (void *)0);
	pthread_create(&b, NULL, player, (void *)1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("turn %ld\n", atomic_load(&turn));
	return 0;
}
