/* The replay engine: one pass over the time-merged record stream of a
 * trace, every record to every consumer, like perf's struct perf_tool.
 *
 * The calling thread decodes the stream into batches (REPLAY_BATCH records
 * between threads, REPLAY_BATCH_INLINE when it runs the sets itself)
 * held in a small ring and fans each batch out to the consumer sets: with
 * one worker it runs them itself; with N workers, worker w owns the sets
 * w, w + N, w + 2N, ... and runs every batch, in order, through each of
 * them.  A batch is reused once the last worker is done with it (a count
 * per batch), so memory stays at ring x batch records whatever the number
 * of sets.  Within a batch the records go set by set over sub-blocks
 * (REPLAY_SUB records) small enough to stay in the first cache levels
 * while every set runs through them; a set with a records() function
 * (replay_set) gets a sub-block in one call.  Each set sees every record in order
 * and the sets share nothing, so the results do not depend on N. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ana.h"

#define REPLAY_BATCH 4096         /* records per batch (threaded) */
#define REPLAY_BATCH_INLINE 64    /* ... in one thread: the batch stays in cache */
#define REPLAY_SUB 128            /* records per sub-block (run_batch) */
#define REPLAY_RING_PER_WORKER 4
#define REPLAY_RING_MAX 32

struct batch {
	struct ct_record *r;
	size_t n;
	unsigned pending;            /* workers that have not consumed it yet */
};

struct pipe {
	pthread_mutex_t mu;
	pthread_cond_t cv_data, cv_free;
	struct batch *ring;
	size_t nring;
	uint64_t produced;           /* batches published */
	bool eof;
	const struct replay_set *sets;
};

struct worker {
	struct pipe *p;
	size_t *sets;                /* indices into pipe->sets */
	size_t n;
	pthread_t th;
	bool started;
};

static void run_batch(const struct replay_set *sets, const size_t *idx, size_t n,
                      const struct batch *b)
{
	for (size_t lo = 0; lo < b->n; lo += REPLAY_SUB) {
		size_t hi = lo + REPLAY_SUB < b->n ? lo + REPLAY_SUB : b->n;
		for (size_t k = 0; k < n; k++) {
			const struct replay_set *s = &sets[idx[k]];
			if (s->n == 1 && s->records) {   /* the usual set: one call */
				s->records(s->c[0].self, &b->r[lo], hi - lo);
				continue;
			}
			if (s->n == 1) {
				void (*record)(void *, const struct ct_record *) = s->c[0].record;
				void *self = s->c[0].self;
				for (size_t i = lo; i < hi; i++)
					record(self, &b->r[i]);
				continue;
			}
			for (size_t i = lo; i < hi; i++)
				for (size_t c = 0; c < s->n; c++)
					s->c[c].record(s->c[c].self, &b->r[i]);
		}
	}
}

static void finish_sets(const struct replay_set *sets, const size_t *idx, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct replay_set *s = &sets[idx[k]];
		for (size_t c = 0; c < s->n; c++)
			if (s->c[c].finish)
				s->c[c].finish(s->c[c].self);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pipe *p = w->p;
	uint64_t seq = 0;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (seq >= p->produced && !p->eof)
			pthread_cond_wait(&p->cv_data, &p->mu);
		if (seq >= p->produced) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		struct batch *b = &p->ring[seq % p->nring];
		pthread_mutex_unlock(&p->mu);
		run_batch(p->sets, w->sets, w->n, b);
		pthread_mutex_lock(&p->mu);
		if (--b->pending == 0)
			pthread_cond_signal(&p->cv_free);
		pthread_mutex_unlock(&p->mu);
		seq++;
	}
	finish_sets(p->sets, w->sets, w->n);
	return NULL;
}

/* Start the worker threads (threaded); a worker whose thread does not
 * start is run by the decoding thread.  Returns the threads started. */
static unsigned start_workers(struct worker *ws, unsigned jobs, bool threaded)
{
	unsigned started = 0;
	for (unsigned w = 0; threaded && w < jobs; w++) {
		ws[w].started = pthread_create(&ws[w].th, NULL, worker_main, &ws[w]) == 0;
		started += ws[w].started;
	}
	return started;
}

/* Decode t into the ring until the end or damage; each batch to the
 * started workers and to the others inline.  Returns ct_cursor_read's
 * last status (0 end, -1 damage). */
static int decode(struct ct_cursor *c, struct pipe *p, struct worker *ws, unsigned jobs,
                  unsigned started, struct progress *prog, uint64_t *done, struct ct_error *err)
{
	uint64_t seq = 0;
	int rc = 1;
	while (rc == 1) {
		struct batch *b = &p->ring[seq % p->nring];
		if (started) {
			pthread_mutex_lock(&p->mu);
			while (b->pending)
				pthread_cond_wait(&p->cv_free, &p->mu);
			pthread_mutex_unlock(&p->mu);
		}
		size_t k;
		rc = ct_cursor_read(c, b->r, started ? REPLAY_BATCH : REPLAY_BATCH_INLINE, &k, err);
		if (!k)
			break;
		b->n = k;
		*done += k;
		if (started) {
			pthread_mutex_lock(&p->mu);
			b->pending = started;
			p->produced++;
			pthread_cond_broadcast(&p->cv_data);
			pthread_mutex_unlock(&p->mu);
		}
		for (unsigned w = 0; w < jobs; w++)
			if (!ws[w].started)
				run_batch(p->sets, ws[w].sets, ws[w].n, b);
		seq++;
		progress_update(prog, *done);
	}
	return rc < 0 ? -1 : 0;
}

/* Wait for the workers, finish the inline ones. */
static void stop_workers(struct pipe *p, struct worker *ws, unsigned jobs, unsigned started)
{
	if (started) {
		pthread_mutex_lock(&p->mu);
		p->eof = true;
		pthread_cond_broadcast(&p->cv_data);
		pthread_mutex_unlock(&p->mu);
	}
	for (unsigned w = 0; w < jobs; w++)
		if (ws[w].started)
			pthread_join(ws[w].th, NULL);
		else
			finish_sets(p->sets, ws[w].sets, ws[w].n);
}

static void finish_all(const struct replay_set *sets, size_t n)
{
	for (size_t k = 0; k < n; k++)
		finish_sets(sets, &k, 1);
}

/* Threads decoding frames (-j; the decoding thread is one of them). */
static unsigned decode_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return ana_jobs ? ana_jobs : n > 0 ? (unsigned)n : 1;
}

int replay_sets(struct ct_trace *t, const struct replay_set *sets, size_t nsets, unsigned jobs,
                bool show_progress, uint64_t *records, struct ct_error *err)
{
	if (records)
		*records = 0;
	if (!jobs)
		jobs = 1;
	if (jobs > nsets)
		jobs = nsets ? (unsigned)nsets : 1;
	/* with three cpus or more the sets run in threads of their own even
	 * when there is one: the decoding thread merges the next batch
	 * meanwhile.  With two, the second decodes frames (zstd and the
	 * decoder, more than half of the work) and this thread merges and
	 * runs the set, decoding frames itself when it would wait: two
	 * threads for two cpus, a hand-off a frame instead of a batch */
	unsigned djobs = decode_jobs();
	bool threaded = jobs > 1 || djobs > 2;
	size_t nring = threaded ? jobs * REPLAY_RING_PER_WORKER : 1;
	if (nring > REPLAY_RING_MAX)
		nring = REPLAY_RING_MAX;
	struct pipe p = { .nring = nring, .sets = sets };
	struct worker *ws = calloc(jobs, sizeof *ws);
	size_t *widx = calloc(nsets ? nsets : 1, sizeof *widx);
	p.ring = calloc(nring, sizeof *p.ring);
	bool oom = !ws || !widx || !p.ring;
	for (size_t i = 0; !oom && i < nring; i++)
		oom = !(p.ring[i].r = malloc(REPLAY_BATCH * sizeof *p.ring[i].r));
	struct ct_cursor *c = oom ? NULL : ct_cursor_merged_jobs(t, djobs);
	if (!c) {
		snprintf(err->msg, sizeof err->msg, "%s: cannot create a cursor (out of memory)",
		         ct_trace_path(t));
		finish_all(sets, nsets);
		for (size_t i = 0; p.ring && i < nring; i++)
			free(p.ring[i].r);
		free(p.ring);
		free(ws);
		free(widx);
		return -1;
	}
	/* set i -> worker i mod jobs */
	size_t at = 0;
	for (unsigned w = 0; w < jobs; w++) {
		ws[w].p = &p;
		ws[w].sets = widx + at;
		for (size_t i = w; i < nsets; i += jobs)
			widx[at++] = i;
		ws[w].n = (size_t)(widx + at - ws[w].sets);
	}
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv_data, NULL);
	pthread_cond_init(&p.cv_free, NULL);
	unsigned started = start_workers(ws, jobs, threaded);
	struct progress prog;
	progress_start(&prog, t, show_progress);
	uint64_t done = 0;
	int rc = decode(c, &p, ws, jobs, started, &prog, &done, err);
	stop_workers(&p, ws, jobs, started);
	progress_end(&prog);
	ct_cursor_free(c);
	pthread_cond_destroy(&p.cv_free);
	pthread_cond_destroy(&p.cv_data);
	pthread_mutex_destroy(&p.mu);
	for (size_t i = 0; i < nring; i++)
		free(p.ring[i].r);
	free(p.ring);
	free(ws);
	free(widx);
	if (records)
		*records = done;
	if (rc < 0 && !err->msg[0])
		snprintf(err->msg, sizeof err->msg, "%s: damaged data", ct_trace_path(t));
	return rc;
}

int replay(struct ct_trace *t, struct record_consumer *consumers, size_t n,
           bool show_progress, struct ct_error *err)
{
	struct replay_set one = { .c = consumers, .n = n };
	return replay_sets(t, &one, 1, 1, show_progress, NULL, err);
}
