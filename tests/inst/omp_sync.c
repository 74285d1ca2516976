/* omp_sync: every libgomp synchronization entry point the inst runtime
 * wraps, a known number of times (tests/e2e/inst_omp.sh).  Each lock guards
 * a counter of its own (two sections under different locks may run at the
 * same time): every count must come out whole. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4, rounds = argc > 2 ? atoi(argv[2]) : 10;
	omp_lock_t lock;
	omp_nest_lock_t nest;
	long c_lock = 0, c_nest = 0, c_crit = 0, c_named = 0;
	long double ld = 0;
	long part[64] = { 0 };
	omp_init_lock(&lock);
	omp_init_nest_lock(&nest);
	omp_set_dynamic(0);
#pragma omp parallel num_threads(threads)
	{
		for (int r = 0; r < rounds; r++) {
			omp_set_lock(&lock);
			c_lock++;
			omp_unset_lock(&lock);
			omp_set_nest_lock(&nest);
			c_nest++;
			omp_unset_nest_lock(&nest);
#pragma omp critical
			c_crit++;
#pragma omp critical(named)
			c_named++;
#pragma omp atomic
			ld += 1;
#pragma omp barrier
#pragma omp for schedule(dynamic)
			for (int i = 0; i < 64; i++)
				part[i]++;
		}
	}
	long counter = c_lock + c_nest + c_crit + c_named, each = (long)threads * rounds;
	printf("omp_sync threads=%d rounds=%d counter=%ld ld=%.0Lf part=%ld\n", threads, rounds,
	       counter, ld, part[0]);
	return c_lock != each || c_nest != each || c_crit != each || c_named != each;
}
