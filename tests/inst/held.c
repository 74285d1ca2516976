/* inst full mode, a held load (FORMAT.md, "Merged loads"): the worker loads
 * and stores each element of an array in turn (`x += ...`), so that the
 * recorder holds its loads back (their store takes over the record), then
 * loads one more element as its last access, tells main through a pipe
 * (write() is not instrumented: no record) and blocks in read() on a pipe
 * nobody writes: that load stays held until the process ends (main calls
 * exit), when the writer thread must write it itself.  stdout: the last
 * element's address; tests/e2e/inst_filter.sh looks for that load in the
 * trace. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 4096

static long cells[N + 1];
static int idle[2], parked[2];

static void *worker(void *arg)
{
	(void)arg;
	int to_main = parked[1], from_nobody = idle[0];   /* (loaded now, not after) */
	char buf[8] = { 0 };
	long s = 0;
	/* one load and one store instruction for all elements (the recorder
	 * learns which loads to hold by their ip) */
	for (long i = 0; i <= N; i++) {
		long x = cells[i];
		if (i == N) {
			s += x;
			break;
		}
		cells[i] = x + i + 1;
	}
	/* no instrumented access from here on: the load above stays held */
	if (write(to_main, buf, 1) != 1 || read(from_nobody, buf, 1) < 0)   /* blocks */
		s++;
	return (void *)s;
}

int main(void)
{
	pthread_t t;
	char c;
	if (pipe(idle) || pipe(parked) || pthread_create(&t, NULL, worker, NULL))
		return 1;
	if (read(parked[0], &c, 1) != 1)
		return 1;
	usleep(20000);
	printf("%p\n", (void *)&cells[N]);
	fflush(stdout);
	exit(0);             /* the worker is still blocked */
}
