/* Attribution test program (tests/e2e/attrib.sh): two worker threads share
 * known data, one kind of sharing per phase so that each gets its share of
 * samples (each marked line repeats its access so that most samples of a
 * phase fall on the shared data).  Every access the test checks is on a
 * line marked "@NAME" so that the script can find its line number.
 *
 *   phase 0  q.lock / q.count    false sharing: T1 writes lock, T2 count
 *   phase 1  cells[2].x / .y     false sharing inside an array of structs
 *   phase 2  heap A              blocks from alloc_a: T1 +8, T2 +16
 *   phase 3  heap B              blocks from alloc_b: T1 +0, T2 +24
 *   phase 4  stackbuf            main's stack, shared by pointer
 *   phase 5  counter             true sharing: both threads add to it (atomic)
 * Usage: attrib_prog [SECONDS_PER_PHASE]  (default 0.4) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct queue {
	long lock;
	long count;
};

struct cell {
	long x;
	long y;
};

struct queue q __attribute__((aligned(64)));
struct cell cells[8] __attribute__((aligned(64)));
long counter __attribute__((aligned(64)));
volatile int allocated;

struct work {
	volatile long *heap_a;
	volatile long *heap_b;
	volatile long *stackbuf;
	int id;
};

static double seconds = 0.4;
static pthread_barrier_t barrier;

/* Not tail calls: the allocation call path keeps these frames. */
__attribute__((noinline)) static long *alloc_a(void)
{
	long *p = aligned_alloc(64, 64 * 4);   /* @ALLOC_A */
	allocated++;
	return p;
}

__attribute__((noinline)) static long *alloc_b(void)
{
	long *p = aligned_alloc(64, 64 * 5);   /* @ALLOC_B */
	allocated++;
	return p;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	struct work *w = arg;
	volatile struct queue *vq = &q;
	volatile struct cell *vc = cells;
	volatile long *vcounter = &counter;
	int one = w->id == 1;
	for (int phase = 0; phase < 6; phase++) {
		pthread_barrier_wait(&barrier);
		double end = now() + seconds;
		for (long i = 0; (i & 1023) || now() < end; i++) {
			switch (phase) {
			case 0:
				if (one)
					{ vq->lock = i; vq->lock = i; vq->lock = i; vq->lock = i; }   /* @Q_LOCK */
				else
					{ vq->count = i; vq->count = i; vq->count = i; vq->count = i; }   /* @Q_COUNT */
				break;
			case 1:
				if (one)
					{ vc[2].x = i; vc[2].x = i; vc[2].x = i; vc[2].x = i; }   /* @CELL_X */
				else
					{ vc[2].y = i; vc[2].y = i; vc[2].y = i; vc[2].y = i; }   /* @CELL_Y */
				break;
			case 2:
				if (one)
					{ w->heap_a[1] = i; w->heap_a[1] = i; w->heap_a[1] = i; w->heap_a[1] = i; }   /* @HEAP_A1 */
				else
					{ w->heap_a[2] = i; w->heap_a[2] = i; w->heap_a[2] = i; w->heap_a[2] = i; }   /* @HEAP_A2 */
				break;
			case 3:
				if (one)
					{ w->heap_b[0] = i; w->heap_b[0] = i; w->heap_b[0] = i; w->heap_b[0] = i; }   /* @HEAP_B1 */
				else
					{ w->heap_b[3] = i; w->heap_b[3] = i; w->heap_b[3] = i; w->heap_b[3] = i; }   /* @HEAP_B2 */
				break;
			case 4:
				if (one)
					{ w->stackbuf[0] = i; w->stackbuf[0] = i; w->stackbuf[0] = i; w->stackbuf[0] = i; }   /* @STACK1 */
				else
					{ w->stackbuf[1] = i; w->stackbuf[1] = i; w->stackbuf[1] = i; w->stackbuf[1] = i; }   /* @STACK2 */
				break;
			default:
				__atomic_fetch_add(vcounter, 1, __ATOMIC_RELAXED); __atomic_fetch_add(vcounter, 2, __ATOMIC_RELAXED);   /* @COUNTER */
				break;
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	long stackbuf[8] __attribute__((aligned(64))) = { 0 };
	long *a = alloc_a();                     /* @CALL_A */
	long *b = alloc_b();                     /* @CALL_B */
	if (!a || !b)
		return 1;
	struct work w[2] = {
		{ a, b, stackbuf, 1 },
		{ a, b, stackbuf, 2 },
	};
	pthread_barrier_init(&barrier, NULL, 2);
	pthread_t t[2];
	for (int k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, worker, &w[k]);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("%ld %ld %ld %ld %ld\n", q.lock + q.count, cells[2].x + cells[2].y, counter,
	       a[1] + a[2] + b[0] + b[3], stackbuf[0] + stackbuf[1]);
	free(a);
	free(b);
	return 0;
}
