/* pipeline: a producer/consumer chain of THREADS stages.  Stage 0 fills a
 * buffer of LEN doubles, each middle stage transforms it in place, the last
 * stage consumes it (sums and clears it) and returns it to stage 0; buffers
 * (BUFFERS of them) travel through mailboxes (a mutex, a condition variable
 * and a ring of pointers) between consecutive stages.  Stage s reads and
 * overwrites what stage s-1 wrote, stage 0 overwrites what the last stage
 * cleared: a directed ring, the pairs (s, s+1 mod THREADS) carry all the
 * volume; stages two apart never touch the same data.  See
 * tests/kernels/README.md. */
#include "../ubench/ubench.h"

#define MAX_BUFFERS 64

/* Aligned to two lines: neighbouring mailboxes never share a line, so that
 * stages two apart never touch the same line. */
struct mailbox {
	_Alignas(2 * UB_LINE) pthread_mutex_t mu;
	pthread_cond_t cv;
	double *ring[MAX_BUFFERS];
	unsigned head, count;
};

struct chain {
	struct mailbox *box;    /* box[s]: the buffers stage s takes */
	uint64_t items, len;
	unsigned stages;
	double *sum;            /* the last stage's checksum */
};

static void put(struct mailbox *m, double *buf)
{
	pthread_mutex_lock(&m->mu);
	m->ring[(m->head + m->count++) % MAX_BUFFERS] = buf;
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static double *take(struct mailbox *m)
{
	pthread_mutex_lock(&m->mu);
	while (m->count == 0)
		pthread_cond_wait(&m->cv, &m->mu);
	double *buf = m->ring[m->head];
	m->head = (m->head + 1) % MAX_BUFFERS;
	m->count--;
	pthread_mutex_unlock(&m->mu);
	return buf;
}

static void stage(struct ub_thread *t, void *ctx)
{
	struct chain *c = ctx;
	unsigned s = t->idx, last = c->stages - 1;
	double sum = 0;
	for (uint64_t it = 0; it < c->items; it++) {
		double *buf = take(&c->box[s]);
		if (s == 0)
			for (uint64_t i = 0; i < c->len; i++)
				buf[i] = (double)((it + i) % 101);
		else if (s < last)
			for (uint64_t i = 0; i < c->len; i++)
				buf[i] = buf[i] * 0.5 + (double)s;
		else
			for (uint64_t i = 0; i < c->len; i++) {
				sum += buf[i];
				buf[i] = 0;   /* consumed */
			}
		put(&c->box[s == last ? 0 : s + 1], buf);
	}
	if (s == last)
		*c->sum = sum;
	t->c.extra[0] = c->items;
}

int main(int argc, char **argv)
{
	uint64_t threads = 4, buffers = 4, items = 2000, len = 1024;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, 64),
		{ 'b', "BUFFERS", "buffers in flight", UB_UINT, &buffers, 1, MAX_BUFFERS, NULL },
		{ 'i', "ITEMS", "buffers each stage handles", UB_UINT, &items, 1,
		  UINT64_C(1) << 30, NULL },
		{ 'l', "LEN", "doubles per buffer", UB_UINT, &len, 1, UINT64_C(1) << 24, NULL },
	};
	const struct ub_cli cli = { "pipeline",
		"Producer/consumer chain of stages passing buffers through mailboxes\n"
		"(communication between consecutive stages, and last to first).",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);
	if (threads < 2)
		ub_bad_usage(&cli, "-t must be at least 2 (a producer and a consumer)");

	double sum = 0;
	struct chain c = { .items = items, .len = len, .stages = (unsigned)threads, .sum = &sum };
	c.box = aligned_alloc(_Alignof(struct mailbox), threads * sizeof *c.box);
	/* buffers start on their own pair of lines, for the same reason */
	uint64_t stride = (len + 2 * UB_LINE / sizeof(double) - 1) & ~(uint64_t)(2 * UB_LINE / sizeof(double) - 1);
	double *mem = aligned_alloc(2 * UB_LINE, sizeof *mem * buffers * stride);
	if (!c.box || !mem) {
		perror("malloc");
		return 1;
	}
	memset(c.box, 0, threads * sizeof *c.box);
	for (unsigned s = 0; s < c.stages; s++) {
		pthread_mutex_init(&c.box[s].mu, NULL);
		pthread_cond_init(&c.box[s].cv, NULL);
	}
	for (uint64_t k = 0; k < buffers; k++)
		put(&c.box[0], mem + k * stride);
	struct ub_thread *t = ub_run(c.stages, items, 0, stage, &c);
	printf("kernel pipeline threads=%u buffers=%" PRIu64 " items=%" PRIu64 " len=%" PRIu64
	       " checksum=%.6e\n", c.stages, buffers, items, len, sum);
	ub_object("buffers", mem, sizeof *mem * buffers * stride, "malloc", ub_all_threads(c.stages),
	          NULL);
	ub_print_threads(t, c.stages, "items", NULL);
	for (unsigned s = 0; s < c.stages; s++) {
		pthread_mutex_destroy(&c.box[s].mu);
		pthread_cond_destroy(&c.box[s].cv);
	}
	free(t);
	free(mem);
	free(c.box);
	return 0;
}
