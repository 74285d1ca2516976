/* alltoall: a radix-sort-like permutation.  THREADS workers own equal chunks
 * of two arrays of KEYS 16-bit keys.  Each round every worker fills its chunk
 * with random keys, then two counting-sort passes (8 bits each) move every
 * key to its rank in the other array: a worker counts its keys per digit
 * (its own histogram row), waits on a barrier, reads every worker's row to
 * find where its keys go, scatters them, waits again.  The keys are uniform,
 * so each worker writes about 1/THREADS of its keys into each worker's chunk,
 * which that worker reads in the next pass: all-to-all communication, the
 * same volume on every pair.  See tests/kernels/README.md. */
#include "../ubench/ubench.h"

#define RADIX 256

struct sort {
	uint16_t *a, *b;
	uint32_t (*hist)[RADIX];    /* one row per worker */
	uint64_t keys, rounds;
	unsigned threads;
	pthread_barrier_t pass;
};

static void chunk(const struct sort *s, unsigned w, uint64_t *lo, uint64_t *hi)
{
	*lo = s->keys * w / s->threads;
	*hi = s->keys * (w + 1) / s->threads;
}

/* One counting-sort pass on the digit at shift: src[lo, hi) of worker w go
 * to their ranks in dst. */
static void pass(struct sort *s, unsigned w, const uint16_t *src, uint16_t *dst, unsigned shift)
{
	uint64_t lo, hi;
	chunk(s, w, &lo, &hi);
	uint32_t *mine = s->hist[w];
	memset(mine, 0, sizeof s->hist[w]);
	for (uint64_t i = lo; i < hi; i++)
		mine[(src[i] >> shift) & (RADIX - 1)]++;
	pthread_barrier_wait(&s->pass);
	uint64_t off[RADIX], at = 0;
	for (unsigned d = 0; d < RADIX; d++)
		for (unsigned v = 0; v < s->threads; v++) {
			if (v == w)
				off[d] = at;
			at += s->hist[v][d];
		}
	for (uint64_t i = lo; i < hi; i++)
		dst[off[(src[i] >> shift) & (RADIX - 1)]++] = src[i];
	pthread_barrier_wait(&s->pass);
}

static void work(struct ub_thread *t, void *ctx)
{
	struct sort *s = ctx;
	uint64_t lo, hi, unsorted = 0;
	chunk(s, t->idx, &lo, &hi);
	for (uint64_t r = 0; r < s->rounds; r++) {
		for (uint64_t i = lo; i < hi; i++)
			s->a[i] = (uint16_t)(ub_next(&t->rng) >> 48);
		pthread_barrier_wait(&s->pass);
		pass(s, t->idx, s->a, s->b, 0);
		pass(s, t->idx, s->b, s->a, 8);
		for (uint64_t i = lo + 1; i < hi; i++)
			unsorted += s->a[i - 1] > s->a[i];
	}
	t->c.extra[0] = unsorted;   /* 0 when the sort is right */
}

int main(int argc, char **argv)
{
	uint64_t threads = 4, keys = 65536, rounds = 50, seed = 1;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, 64),
		{ 'k', "KEYS", "keys in the array", UB_UINT, &keys, 1, UINT64_C(1) << 30, NULL },
		{ 'r', "ROUNDS", "rounds (fresh keys, two passes each)", UB_UINT, &rounds, 1,
		  UINT64_C(1) << 30, NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "alltoall",
		"Radix-sort-like permutation of random 16-bit keys between the threads'\n"
		"chunks (all-to-all communication).",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	if (keys < threads)
		ub_bad_usage(&cli, "-k must give every thread at least one key");

	struct sort s = { .keys = keys, .rounds = rounds, .threads = (unsigned)threads };
	s.a = malloc(sizeof *s.a * keys);
	s.b = malloc(sizeof *s.b * keys);
	s.hist = calloc(threads, sizeof *s.hist);
	if (!s.a || !s.b || !s.hist) {
		perror("malloc");
		return 1;
	}
	pthread_barrier_init(&s.pass, NULL, s.threads);
	struct ub_thread *t = ub_run(s.threads, rounds, seed, work, &s);
	uint64_t unsorted = 0;
	for (unsigned w = 0; w < s.threads; w++)
		unsorted += t[w].c.extra[0];
	printf("kernel alltoall threads=%u keys=%" PRIu64 " rounds=%" PRIu64 " seed=%" PRIu64
	       " unsorted=%" PRIu64 "\n", s.threads, keys, rounds, seed, unsorted);
	ub_object("keys.a", s.a, sizeof *s.a * keys, "malloc", ub_all_threads(s.threads), NULL);
	ub_object("keys.b", s.b, sizeof *s.b * keys, "malloc", ub_all_threads(s.threads), NULL);
	ub_print_threads(t, s.threads, "unsorted", NULL);
	pthread_barrier_destroy(&s.pass);
	free(t);
	free(s.a);
	free(s.b);
	free(s.hist);
	return unsorted != 0;
}
