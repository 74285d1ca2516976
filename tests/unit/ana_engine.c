/* The replay engine: every record to every consumer in merged time order,
 * finish() once, damage reported after the records before it. */
#include <stdarg.h>
#include <sys/stat.h>

#include "ana_common.h"

struct counter {
	uint64_t n, last_time, finished;
	bool ordered;
};

static void count_rec(void *self, const struct ct_record *r)
{
	struct counter *c = self;
	c->ordered &= r->time >= c->last_time;
	c->last_time = r->time;
	c->n++;
}

static void count_fin(void *self)
{
	((struct counter *)self)->finished++;
}

static void build(struct tb *b, unsigned n)
{
	tb_init(b, 3);
	b->block_cap = 256;   /* many frames per thread */
	for (unsigned i = 0; i < n; i++)
		tb_sample(b, i % 3, 1000 + (uint64_t)(i * 7919 % n) * 10 + i % 3, 0x10000 + 8 * (i % 64),
		          8, i % 4 ? CT_ACCESS_LOAD : CT_ACCESS_STORE, 100);
	/* per thread, times must not go backwards: sort each thread's records */
	for (size_t t = 0; t < 3; t++)
		for (size_t i = 1; i < b->t[t].n; i++)
			for (size_t k = i; k > 0 && b->t[t].r[k - 1].time > b->t[t].r[k].time; k--) {
				struct ct_record x = b->t[t].r[k];
				b->t[t].r[k] = b->t[t].r[k - 1];
				b->t[t].r[k - 1] = x;
			}
}

static void test_replay_all(void)
{
	struct tb b;
	build(&b, 3000);
	const char *path = tb_write(&b);
	struct ct_error err = {{0}};
	struct ct_trace *t = ct_trace_open(path, &err);
	CHECK(t != NULL);
	if (!t) {
		tb_free(&b);
		return;
	}
	CHECK(ct_trace_thread_frames(t, 0) > 2);
	struct counter c1 = { .ordered = true }, c2 = { .ordered = true };
	struct record_consumer rc[2] = { { &c1, count_rec, count_fin }, { &c2, count_rec, count_fin } };
	CHECK(replay(t, rc, 2, false, &err) == 0);
	CHECK_EQ_U(c1.n, 3000);
	CHECK_EQ_U(c2.n, 3000);
	CHECK(c1.ordered);
	CHECK_EQ_U(c1.finished, 1);
	CHECK_EQ_U(c2.finished, 1);
	ct_trace_close(t);
	tb_free(&b);
}

/* A corrupted frame in the middle: replay returns -1 with a message naming
 * the file, the consumers saw the records before it, finish() ran. */
static void test_replay_damage(void)
{
	struct tb b;
	build(&b, 3000);
	const char *path = tb_write(&b);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	FILE *f = fopen(path, "r+b");
	CHECK(f != NULL);
	if (!f) {
		tb_free(&b);
		return;
	}
	fseek(f, (long)(st.st_size * 2 / 3), SEEK_SET);
	int ch = fgetc(f);
	fseek(f, (long)(st.st_size * 2 / 3), SEEK_SET);
	fputc(ch ^ 0x5a, f);
	fclose(f);
	struct ct_error err = {{0}};
	struct ct_trace *t = ct_trace_open(path, &err);
	CHECK(t != NULL);
	if (!t) {
		tb_free(&b);
		return;
	}
	struct counter c = { .ordered = true };
	struct record_consumer rc = { &c, count_rec, count_fin };
	int r = replay(t, &rc, 1, false, &err);
	bool damaged = r < 0 || ct_trace_damage(t);
	CHECK(damaged);
	if (r < 0) {
		CHECK(strstr(err.msg, path) != NULL);
		CHECK(strstr(err.msg, "offset") != NULL);
	}
	CHECK(c.n < 3000);
	CHECK_EQ_U(c.finished, 1);
	ct_trace_close(t);
	tb_free(&b);
}

/* The analysis on a damaged trace: results kept, damaged flag set. */
static void test_analysis_damage(void)
{
	struct tb b;
	build(&b, 3000);
	const char *path = tb_write(&b);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	CHECK(truncate(path, st.st_size - 300) == 0);
	struct analysis a;
	struct model_opts o;
	model_opts_default(&o);
	CHECK(analysis_run(&a, path, &o, false) == 0);
	CHECK(a.damaged);
	CHECK(strstr(a.err.msg, "offset") != NULL);
	CHECK(a.stats.records > 0 && a.stats.records < 3000);
	analysis_free(&a);
	tb_free(&b);
}

/* ---- the merged stream against a reference merge -------------------------------------
 * Seven threads (not a power of two: the loser tree's odd shape), one of
 * them empty, many frames each, times tied across threads and within one,
 * every record type the replay decodes in bulk (samples with near and far
 * addresses, repeated and new code addresses; arms, hits, allocations,
 * markers); then forty threads, more than a pool of frames decoded ahead
 * holds (some frames decoded ahead, others a chunk at a time).  The
 * reference is the obvious merge: every record the trace builder wrote,
 * sorted by (time, thread) with a stable sort.  The serial cursor, the
 * cursor with decoding workers (one: the merging thread decodes frames
 * too when it would wait; two) and the engine at -j1 to -j4 (at -j2 the
 * merging thread runs the consumers, at -j3 a thread of their own) must
 * give exactly that sequence. */

#define MERGE_THREADS_MAX 40
#define MERGE_RECORDS 20000

struct seq {
	struct ct_record *r;
	size_t n, cap;
};

static void seq_add(struct seq *s, const struct ct_record *r)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->r = realloc(s->r, s->cap * sizeof *s->r);
		if (!s->r)
			abort();
	}
	s->r[s->n++] = *r;
}

static void seq_rec(void *self, const struct ct_record *r)
{
	seq_add(self, r);
}

static const struct ct_record *sort_base;

static int cmp_time_thread_pos(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct ct_record *x = &sort_base[i], *y = &sort_base[j];
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return i < j ? -1 : i > j;
}

static size_t first_difference(const struct seq *got, const struct seq *want)
{
	size_t i = 0;
	while (i < got->n && i < want->n && tb_same_record(&got->r[i], &want->r[i]))
		i++;
	return i;
}

static void build_mixed(struct tb *b, struct seq *ref, uint32_t nthreads)
{
	tb_init(b, nthreads);
	b->block_cap = 512;
	uint64_t x = 0x9e3779b97f4a7c15ull, now[MERGE_THREADS_MAX] = { 0 };
	for (unsigned i = 0; i < MERGE_RECORDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t th = (uint32_t)(x % (nthreads - 1));    /* the last one stays empty */
		now[th] += (x >> 8) % 4 == 0 ? 0 : (x >> 10) % 3 * 5;    /* ties, within and across */
		uint64_t t = 1000 + now[th];
		unsigned kind = (unsigned)(x >> 20) % 16;
		struct ct_record *r;
		if (kind < 11) {
			uint64_t addr = kind < 6 ? 0x10000 + 8 * ((x >> 24) % 64)
			                         : 0x7f0000000000ull + ((x >> 24) & 0xffffff) * 8;
			r = tb_sample(b, th, t, addr, (uint8_t)(1u << (x >> 30) % 4),
			              (x >> 33) % 4 ? CT_ACCESS_LOAD : CT_ACCESS_STORE, 100 + (x >> 40) % 3);
			r->u.sample.ip = 0x400000 + (x >> 36) % (kind < 8 ? 4 : 100000);
		} else if (kind == 11) {
			r = tb_arm(b, th, t, (th + 1) % nthreads, t > 50 ? t - 50 : 0,
			           0x10000 + 8 * ((x >> 24) % 64), 8, (uint8_t)(1 + (x >> 40) % 4));
		} else if (kind == 12) {
			r = tb_hit(b, th, t, 0x10000 + 8 * ((x >> 24) % 64), 8, (uint8_t)((x >> 40) % 4));
		} else if (kind == 13) {
			r = tb_add(b, th, CT_REC_ALLOC, t);
			r->u.alloc = (struct ct_alloc){ .addr = 0x600000 + (x >> 24) % 4096 * 16,
			                                .size = 16 + (x >> 40) % 200, .callsite = 3 };
		} else if (kind == 14) {
			r = tb_add(b, th, CT_REC_MARKER, t);
			r->u.marker.kind = 1;
			snprintf(r->u.marker.name, sizeof r->u.marker.name, "m%u", i);
		} else {
			r = tb_add(b, th, CT_REC_FREE, t);
			r->u.free = (struct ct_free){ .addr = 0x600000, .size = 16 };
		}
		seq_add(ref, r);
	}
	/* records of one thread keep their order on a tie: sorted by (time,
	 * thread, position) through an index */
	size_t *idx = malloc(ref->n * sizeof *idx);
	struct ct_record *sorted = malloc(ref->n * sizeof *sorted);
	if (!idx || !sorted)
		abort();
	for (size_t i = 0; i < ref->n; i++)
		idx[i] = i;
	sort_base = ref->r;
	qsort(idx, ref->n, sizeof *idx, cmp_time_thread_pos);
	for (size_t i = 0; i < ref->n; i++)
		sorted[i] = ref->r[idx[i]];
	free(ref->r);
	free(idx);
	ref->r = sorted;
}

static void merge_matches_reference(uint32_t nthreads)
{
	struct tb b;
	struct seq ref = { 0 };
	build_mixed(&b, &ref, nthreads);
	const char *path = tb_write(&b);
	struct ct_error err = {{0}};
	struct ct_trace *t = path ? ct_trace_open(path, &err) : NULL;
	CHECK(t != NULL);
	if (!t) {
		tb_free(&b);
		free(ref.r);
		return;
	}
	CHECK(ct_trace_thread_frames(t, 0) > 2);
	for (unsigned jobs = 1; jobs <= 3; jobs++) {
		struct ct_cursor *c = ct_cursor_merged_jobs(t, jobs);
		struct seq got = { 0 };
		struct ct_record r;
		int rc;
		while ((rc = ct_cursor_next(c, &r, &err)) == 1)
			seq_add(&got, &r);
		CHECK_EQ_U(rc, 0);
		CHECK_EQ_U(got.n, ref.n);
		CHECK_EQ_U(first_difference(&got, &ref), ref.n);
		ct_cursor_free(c);
		free(got.r);
	}
	unsigned saved = ana_jobs;
	for (ana_jobs = 1; ana_jobs <= 4; ana_jobs++) {
		struct seq eng = { 0 };
		struct record_consumer rc = { &eng, seq_rec, NULL };
		CHECK(replay(t, &rc, 1, false, &err) == 0);
		CHECK_EQ_U(eng.n, ref.n);
		CHECK_EQ_U(first_difference(&eng, &ref), ref.n);
		free(eng.r);
	}
	ana_jobs = saved;
	ct_trace_close(t);
	tb_free(&b);
	free(ref.r);
}

static void test_merge_matches_reference(void)
{
	merge_matches_reference(7);
	merge_matches_reference(MERGE_THREADS_MAX);
}

int main(void)
{
	RUN(test_replay_all);
	RUN(test_replay_damage);
	RUN(test_analysis_damage);
	RUN(test_merge_matches_reference);
	return check_summary();
}
