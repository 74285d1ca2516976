/* Heap arrays allocated through an inlined helper (tests/e2e/heap_types.sh,
 * heap_types/inline_O2), as LULESH's Allocate<T>: the call to malloc is in
 * the caller, whose pointers live in stack slots (their addresses escape to
 * publish()).  At -O2 the slots are addressed from rsp while DWARF locates
 * the variables from the frame base (the CFA): each array must be named
 * after its variable (lo[5], hi[7]), not left untyped.  A third array is
 * stored into a structure's member through the structure's pointer (in a
 * register): it is named after the member (xs[2]). */
#include <pthread.h>
#include <stdlib.h>

struct mesh {
	long n;
	double *xs;
};

static double *g_lo, *g_hi;
static struct mesh g_mesh;
static pthread_barrier_t barrier;
static volatile double sink;

static inline __attribute__((always_inline)) double *alloc_doubles(size_t n)
{
	return malloc(n * sizeof(double));
}

__attribute__((noipa)) static void publish(double **lo, double **hi)
{
	g_lo = *lo;
	g_hi = *hi;
}

__attribute__((noipa)) static void mesh_init(struct mesh *m, size_t n)
{
	m->n = (long)n;
	m->xs = alloc_doubles(n);
}

__attribute__((noipa)) static void setup(size_t n)
{
	double *lo = alloc_doubles(n);
	double *hi = alloc_doubles(n);
	publish(&lo, &hi);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int r = 0; r < 4; r++) {
		if (id == 1) {
			g_lo[5] = r;
			g_hi[7] = r;
			g_mesh.xs[2] = r;
		}
		pthread_barrier_wait(&barrier);
		if (id == 2)
			sink = g_lo[5] + g_hi[7] + g_mesh.xs[2];
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

int main(void)
{
	setup(16);
	mesh_init(&g_mesh, 16);
	pthread_barrier_init(&barrier, NULL, 2);
	pthread_t t1, t2;
	pthread_create(&t1, NULL, worker, (void *)1L);
	pthread_create(&t2, NULL, worker, (void *)2L);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	return 0;
}
