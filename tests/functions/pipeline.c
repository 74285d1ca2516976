/* A three-stage pipeline for the functions view (tests/e2e/functions.sh):
 * stage1 (thread 1) fills buf1, stage2 (thread 2) reads it and fills
 * buf2, stage3 (thread 3) reads buf2 twice; a barrier between the stages
 * of every round (the C library's: not instrumented, so only the buffers
 * carry data between the stage functions).  Usage: pipeline [ROUNDS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF 256   /* bytes per buffer */

static unsigned char buf1[BUF], buf2[BUF];
static unsigned long sum;
static pthread_barrier_t bar;
static int rounds = 4;

__attribute__((noinline)) static void stage1(int r)
{
	for (int i = 0; i < BUF; i++)
		buf1[i] = (unsigned char)(i + r);
}

__attribute__((noinline)) static void stage2(void)
{
	for (int i = 0; i < BUF; i++)
		buf2[i] = (unsigned char)(buf1[i] * 3);
}

__attribute__((noinline)) static unsigned long stage3(void)
{
	unsigned long s = 0;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < BUF; i++)
			s += buf2[i];
	return s;
}

static void *run(void *arg)
{
	long id = (long)arg;
	unsigned long s = 0;
	for (int r = 0; r < rounds; r++) {
		if (id == 1)
			stage1(r);
		pthread_barrier_wait(&bar);
		if (id == 2)
			stage2();
		pthread_barrier_wait(&bar);
		if (id == 3)
			s += stage3();
		pthread_barrier_wait(&bar);
	}
	if (id == 3)
		sum = s;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	pthread_t t[3];
	pthread_barrier_init(&bar, NULL, 3);
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, run, (void *)(i + 1));
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("sum %lu\n", sum);
	return 0;
}
