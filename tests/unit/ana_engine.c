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

int main(void)
{
	RUN(test_replay_all);
	RUN(test_replay_damage);
	RUN(test_analysis_damage);
	return check_summary();
}
