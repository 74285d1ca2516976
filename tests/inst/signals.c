/* inst sampler test: the program's own signal handler (instrumented) runs
 * while the thread is inside the runtime (a record being pushed, a wait for
 * the writer in full mode).  A 100 us interval timer; the handler reads and
 * writes globals and copies a small buffer.  The main loop's stores to arr[]
 * are counted exactly (RANGE / EXPECT on stderr, tests/e2e/inst.sh). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define STORES 500000

static long arr[16] __attribute__((aligned(64)));
static volatile long ticks;
static char hbuf[2][128];
static size_t hlen = 128;

static void on_alarm(int sig)
{
	(void)sig;
	ticks = ticks + 1;
	memcpy(hbuf[0], hbuf[1], hlen);
}

int main(void)
{
	fprintf(stderr, "RANGE arr %p %p\n", (void *)arr, (void *)(arr + 16));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < STORES; i++)
		arr[i & 15] = i;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("done %ld %s\n", arr[15], ticks > 0 ? "ticked" : "no ticks");
	return 0;
}
