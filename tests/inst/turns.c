/* inst full-mode filter test: threads that take turns (one runs at a time,
 * handed on with semaphores), so that the order of every access is fixed
 * and two recordings of the program give the same exact matrices
 * (tests/e2e/inst_filter.sh compares commrec --full with --full=all).
 *
 * In its turn, thread i (1..NT) runs the pattern of (round, i) over shared
 * arrays: loads and stores of 1, 2, 4 and 8 bytes, repeated (what the
 * filter leaves out), stores that cover a granule only in part, unaligned
 * 8-byte stores that cross a line, memcpy ranges, and atomics; and a table
 * that the threads mostly read (a thread's loads of lines it read in an
 * earlier turn are left out while nobody stored to them: format version 9),
 * which one of them sometimes stores to.
 * usage: turns [rounds]; stdout: a checksum. */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 4
#define CELLS 512
#define TABLE 256

static long grid[CELLS] __attribute__((aligned(64)));
static unsigned char bytes[4 * CELLS] __attribute__((aligned(64)));
static long counter __attribute__((aligned(64)));
static long table[TABLE] __attribute__((aligned(64)));
static sem_t go[NT + 1];
static int rounds = 20;
static long sums[NT + 1];
size_t copy_len = 200;       /* not constant for the compiler: a memcpy call */

__attribute__((noinline)) static long turn(int i, int r)
{
	long s = 0;
	int base = (r * 37 + i * 53) % (CELLS - 96);
	/* a window of whole cells: loaded three times, stored twice */
	for (int rep = 0; rep < 3; rep++)
		for (int k = 0; k < 64; k++)
			s += grid[base + k];
	for (int rep = 0; rep < 2; rep++)
		for (int k = 0; k < 64; k += 1 + (i & 1))
			grid[base + k] = s + k + rep;
	/* bytes: 1-, 2- and 4-byte stores that cover granules in part */
	int b = (r * 131 + i * 7) % (4 * CELLS - 300);
	for (int k = 0; k < 40; k++)
		bytes[b + 3 * k] = (unsigned char)(s + k);
	for (int k = 0; k < 20; k++)
		*(uint16_t *)&bytes[(b + 4 * k) & ~1] += (uint16_t)k;
	for (int k = 0; k < 20; k++)
		*(uint32_t *)&bytes[(b + 128 + 4 * k) & ~3] ^= (uint32_t)(k * i);
	for (int k = 0; k < 60; k++)
		s += bytes[b + k];
	/* an unaligned 8-byte store across a line, then loads of both lines */
	uint64_t v = (uint64_t)s;
	memcpy(&bytes[(b | 63) - 3], &v, sizeof v);
	s += bytes[(b | 63) - 3] + bytes[(b | 63) + 4];
	/* a range: another thread's cells copied over */
	memcpy(&bytes[(b + 512) % (3 * CELLS)], &grid[(base + 128) % (CELLS - 32)], copy_len);
	/* the table: a window read twice, a cell stored in one turn of five */
	int tb = (r * 29 + i * 61) % (TABLE - 64);
	for (int rep = 0; rep < 2; rep++)
		for (int k = 0; k < 64; k++)
			s += table[tb + k];
	if ((r + i) % 5 == 0)
		table[(tb + 7 * i) % TABLE] = s;
	__atomic_fetch_add(&counter, i, __ATOMIC_RELAXED);
	s += __atomic_load_n(&counter, __ATOMIC_ACQUIRE);
	return s;
}

static void *worker(void *p)
{
	int i = (int)(intptr_t)p;
	for (int r = 0; r < rounds; r++) {
		sem_wait(&go[i]);
		sums[i] += turn(i, r);
		sem_post(&go[i == NT ? 0 : i + 1]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	for (int k = 0; k < CELLS; k++)
		grid[k] = k;
	for (int k = 0; k < TABLE; k++)
		table[k] = 3 * k;
	for (int i = 0; i <= NT; i++)
		sem_init(&go[i], 0, 0);
	pthread_t th[NT + 1];
	for (int i = 1; i <= NT; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (int r = 0; r < rounds; r++) {
		sem_post(&go[1]);
		sem_wait(&go[0]);
	}
	long s = 0;
	for (int i = 1; i <= NT; i++) {
		pthread_join(th[i], NULL);
		s += sums[i];
	}
	printf("checksum %ld\n", s);
	return 0;
}
