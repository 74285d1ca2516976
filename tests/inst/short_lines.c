/* Line monitor test (tests/e2e/owner_monitor.sh, owner/lag): lines stored
 * fewer times than the monitor's lag.  A writer thread stores the eight
 * words of each of LINES fresh lines once (eight stores a line, never
 * again), then a reader thread loads word 0 of each: one transfer a line,
 * after eight stores to it.  With --owner-window J >= 8 no window becomes
 * active (a window holds the transfers from its line's Jth store after its
 * sampled store on), so the owner estimate holds none of them, while the
 * windows' lags see every one.
 * usage: short_lines [lines]; stdout: a checksum. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long (*data)[8];
static long lines = 4096;

static void *writer(void *arg)
{
	(void)arg;
	for (long i = 0; i < lines; i++)
		for (int k = 0; k < 8; k++)
			data[i][k] = i + k;
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	long sum = 0;
	for (long i = 0; i < lines; i++)
		sum += data[i][0];
	return (void *)sum;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		lines = atol(argv[1]);
	if (lines < 1 || posix_memalign((void **)&data, 64, (size_t)lines * sizeof *data))
		return 2;
	pthread_t t;
	void *sum;
	pthread_create(&t, NULL, writer, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, reader, NULL);
	pthread_join(t, &sum);
	printf("%ld\n", (long)sum);
	return 0;
}
