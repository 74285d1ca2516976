/* Line monitor test (tests/e2e/owner_monitor.sh, owner/split): two threads
 * take turns on one data line, handed on through a flag on another line.
 * In its turn a thread loads word 0 of the data line (a transfer from the
 * thread whose turn came before, true sharing: that thread stored all
 * eight words in its turn), stores the eight words in order, and passes
 * the turn.  Every transfer of the program is true sharing (exact model),
 * and a writer's tenure on the data line is its eight stores, so a monitor
 * window that opened at one of those stores after word 0 knows word 0 only
 * if it saw the tenure begin.
 * usage: relay [rounds]; stdout: a checksum. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static long data[8] __attribute__((aligned(64)));
static _Atomic int turn __attribute__((aligned(64)));
static int rounds = 2000;

static void *run(void *arg)
{
	int me = (int)(long)arg;
	long sum = 0;
	for (int r = 0; r < rounds; r++) {
		while (atomic_load_explicit(&turn, memory_order_acquire) != me)
			sched_yield();
		sum += data[0];
		for (int k = 0; k < 8; k++)
			data[k] = sum + k + r;
		atomic_store_explicit(&turn, 1 - me, memory_order_release);
	}
	return (void *)sum;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, run, (void *)i);
	long s = 0;
	for (int i = 0; i < 2; i++) {
		void *v;
		pthread_join(t[i], &v);
		s += (long)v;
	}
	printf("%ld\n", s);
	return 0;
}
