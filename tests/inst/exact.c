/* inst sampler test: a program whose accesses to its own globals are known
 * exactly (built with commrec-cc at -O0 by tests/e2e/inst.sh).
 *
 *   thread t (1..NT, trace thread index t): K*t stores to st[t][*] and
 *       L*t loads from ld[t][*], through work() called t*CALLS times
 *   main (trace thread 0): memcpy(dst, src, 4096) with a size the compiler
 *       does not know (a call to the runtime's memcpy), memset(dst, 0, 1000),
 *       a 4 KiB struct assignment, a 24-byte memcpy the compiler could inline
 *
 * stdout: the results (deterministic); stderr: the address ranges
 * "RANGE name lo hi" and the expected counts "EXPECT ..." for the test. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 3
#define K 1000
#define L 700
#define CALLS 10

static long st[NT + 1][8] __attribute__((aligned(64)));
static long ld[NT + 1][8] __attribute__((aligned(64)));
static char src[4096] __attribute__((aligned(64)));
static char dst[4096] __attribute__((aligned(64)));
static long result[NT + 1];
/* copies the compiler may do inline (gcc: uninstrumented unless commrec-cc
 * turns them into calls) or instrument as ranges and then copy */
struct big { char b[4096]; };
static struct big bga __attribute__((aligned(64))), bgb __attribute__((aligned(64)));
static char smd[64] __attribute__((aligned(64))), sms[64] __attribute__((aligned(64)));

__attribute__((noinline)) static void copy24(char *d, const char *s)
{
	memcpy(d, s, 24);
}
size_t copy_len = 4096;    /* not constant for the compiler */

__attribute__((noinline)) static long work(long t, long nst, long nld)
{
	long sum = 0;
	for (long i = 0; i < nst; i++)
		st[t][i & 7] = i;
	for (long i = 0; i < nld; i++)
		sum += ld[t][i & 7];
	return sum;
}

static void *thread_main(void *arg)
{
	long t = (long)arg;
	long sum = 0;
	for (long c = 0; c < t * CALLS; c++)
		sum += work(t, K / CALLS, L / CALLS);
	result[t] = sum;
	return NULL;
}

int main(void)
{
	fprintf(stderr, "RANGE st %p %p\n", (void *)st, (void *)(st + NT + 1));
	fprintf(stderr, "RANGE ld %p %p\n", (void *)ld, (void *)(ld + NT + 1));
	fprintf(stderr, "RANGE src %p %p\n", (void *)src, (void *)(src + sizeof src));
	fprintf(stderr, "RANGE dst %p %p\n", (void *)dst, (void *)(dst + sizeof dst));
	fprintf(stderr, "RANGE bga %p %p\n", (void *)&bga, (void *)(&bga + 1));
	fprintf(stderr, "RANGE bgb %p %p\n", (void *)&bgb, (void *)(&bgb + 1));
	fprintf(stderr, "RANGE smd %p %p\n", (void *)smd, (void *)(smd + sizeof smd));
	fprintf(stderr, "RANGE sms %p %p\n", (void *)sms, (void *)(sms + sizeof sms));
	for (int t = 1; t <= NT; t++)
		fprintf(stderr, "EXPECT T%d stores=%d loads=%d calls=%d\n", t, K * t, L * t, CALLS * t);
	/* fill ld[] without instrumented accesses of the threads' own */
	for (int t = 0; t <= NT; t++)
		for (int i = 0; i < 8; i++)
			ld[t][i] = t * 10 + i;
	for (int i = 0; i < 4096; i++)
		src[i] = (char)i;
	/* the copies (after the fills: the main thread's exact counts are the
	 * lines of the two calls) */
	memcpy(dst, src, copy_len);
	memset(dst, 0, copy_len / 4 - 24);
	bga = bgb;                 /* 64 line loads on bgb, 64 line stores on bga */
	copy24(smd, sms);          /* one 24-byte load and store */
	pthread_t th[NT + 1];
	for (long t = 1; t <= NT; t++)
		if (pthread_create(&th[t], NULL, thread_main, (void *)t)) {
			perror("pthread_create");
			return 1;
		}
	for (long t = 1; t <= NT; t++)
		pthread_join(th[t], NULL);
	for (int t = 1; t <= NT; t++)
		printf("thread %d sum %ld last %ld\n", t, result[t], st[t][7]);
	long check = 0;
	for (int i = 0; i < 4096; i++)
		check += dst[i];
	printf("copy %ld\n", check);
	return 0;
}
