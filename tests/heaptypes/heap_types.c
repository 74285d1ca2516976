/* Heap blocks typed by their allocation site (tests/e2e/heap_types.sh).
 * Two threads write known fields of blocks whose type the program states in
 * different ways; the analyzer must name the fields like a static's:
 *   cells   struct cell *cells = malloc(N * sizeof *cells): an array, in a local
 *   g_grid  a global struct grid * (the result stored to it)
 *   wrapped allocated through xmalloc(): untyped (the type of the wrapper's
 *           void * result is not followed to its caller)
 * Thread 1 writes cells[3].y, g_grid->h and wrapped +8; thread 2 then reads them. */
#include <pthread.h>
#include <stdlib.h>

struct cell {
	double x, y;
	long n;
};

struct grid {
	int w, h;
	struct cell *cells;
};

struct grid *g_grid;
static struct cell *cells;
static long *wrapped;
static pthread_barrier_t barrier;
static volatile double sink;

__attribute__((noinline)) static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	return p;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int r = 0; r < 4; r++) {
		if (id == 1) {
			cells[3].y = r;
			g_grid->h = r;
			wrapped[1] = r;
		}
		pthread_barrier_wait(&barrier);
		if (id == 2)
			sink = cells[3].y + g_grid->h + wrapped[1];
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

__attribute__((noinline)) static void setup(void)
{
	struct cell *c = malloc(16 * sizeof *c);
	cells = c;
	g_grid = malloc(sizeof *g_grid);
	wrapped = xmalloc(4 * sizeof *wrapped);
}

int main(void)
{
	setup();
	pthread_barrier_init(&barrier, NULL, 2);
	pthread_t t1, t2;
	pthread_create(&t1, NULL, worker, (void *)1L);
	pthread_create(&t2, NULL, worker, (void *)2L);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	return 0;
}
