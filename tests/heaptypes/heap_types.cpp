// Heap blocks typed by their allocation site, C++ (tests/e2e/heap_types.sh):
// `new Cell()` in make(), whose constructor is called on the result (-O0) or
// inlined with `this` in the result's register (-O2).  Thread 1 writes
// cell->y, thread 2 then reads it: the field is named Cell's y.
// With -DCTOR_ELSEWHERE the constructor is defined in heap_types_ctor.cpp,
// a unit built without instrumentation: none of its code is recorded.
#include <pthread.h>

#include "heap_types.h"

static Cell *cell;
static pthread_barrier_t barrier;
static volatile double sink;

__attribute__((noinline)) static Cell *make()
{
	return new Cell();
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int r = 0; r < 4; r++) {
		if (id == 1)
			cell->y = r;
		pthread_barrier_wait(&barrier);
		if (id == 2)
			sink = cell->y;
		pthread_barrier_wait(&barrier);
	}
	return nullptr;
}

int main()
{
	cell = make();
	pthread_barrier_init(&barrier, nullptr, 2);
	pthread_t t1, t2;
	pthread_create(&t1, nullptr, worker, (void *)1L);
	pthread_create(&t2, nullptr, worker, (void *)2L);
	pthread_join(t1, nullptr);
	pthread_join(t2, nullptr);
	return 0;
}
