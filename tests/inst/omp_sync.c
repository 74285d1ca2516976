/* omp_sync: every libgomp synchronization entry point the inst runtime
 * wraps, a known number of times (tests/e2e/inst_omp.sh). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4, rounds = argc > 2 ? atoi(argv[2]) : 10;
	omp_lock_t lock;
	omp_nest_lock_t nest;
	long counter = 0;
	long double ld = 0;
	long part[64] = { 0 };
	omp_init_lock(&lock);
	omp_init_nest_lock(&nest);
	omp_set_dynamic(0);
#pragma omp parallel num_threads(threads)
	{
		for (int r = 0; r < rounds; r++) {
			omp_set_lock(&lock);
			counter++;
			omp_unset_lock(&lock);
			omp_set_nest_lock(&nest);
			counter++;
			omp_unset_nest_lock(&nest);
#pragma omp critical
			counter++;
#pragma omp critical(named)
			counter++;
#pragma omp atomic
			ld += 1;
#pragma omp barrier
#pragma omp for schedule(dynamic)
			for (int i = 0; i < 64; i++)
				part[i]++;
		}
	}
	printf("omp_sync threads=%d rounds=%d counter=%ld ld=%.0Lf part=%ld\n", threads, rounds,
	       counter, ld, part[0]);
	return counter != 4L * threads * rounds;
}
