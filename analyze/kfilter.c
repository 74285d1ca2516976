/* --period-multiplier K: emulate a K times longer sampling period by
 * keeping every Kth sample of each thread and kind (loads apart from stores
 * and atomics, as the PMU counts them apart), the watchpoint arms made by
 * the kept samples (an arm belongs to the sample just before it in its
 * thread's stream) and the hits of kept arms (a hit belongs to its thread's
 * last arm).
 *
 * Not on traces with software line watches (CONFIG line_watches, the inst
 * sampler): there a sample watches the lines of every store sample other
 * threads took since its thread's previous sample, so its arms follow the
 * interval between samples.  A kept sample keeps the watches of one
 * recorded interval where a K times longer period would arm those of K:
 * the thinned trace finds about 1/K of the events (and fewer still: a
 * watch's life is counted in samples), whatever the weights.  LULESH,
 * inst -c 1000: 1.30M transfers at K = 1, 194k at K = 2, against 1.16M
 * recorded at -c 2000.  kfilter_trace_check says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"

int kfilter_init(struct kfilter *f, unsigned k, size_t nthreads)
{
	memset(f, 0, sizeof *f);
	f->k = k ? k : 1;
	f->nthreads = nthreads;
	f->t = calloc(nthreads ? nthreads : 1, sizeof *f->t);
	if (!f->t)
		return -1;
	for (size_t i = 0; i < nthreads; i++)
		f->t[i].sample_kept = f->t[i].arm_kept = true;
	return 0;
}

void kfilter_free(struct kfilter *f)
{
	free(f->t);
	f->t = NULL;
}

bool kfilter_trace_check(const struct ct_trace *t, unsigned k, char *why, size_t cap)
{
	char v[32];
	if (k <= 1 || !t || !ct_trace_meta(t, CT_SEC_CONFIG, "line_watches", v, sizeof v) ||
	    !strtoull(v, NULL, 10))
		return true;
	snprintf(why, cap, "--period-multiplier %u cannot stand for a %u times longer period on this "
	         "trace: its software line watches (inst) watch every line published since the "
	         "thread's previous sample, and a thinned trace keeps about 1/%u of what that "
	         "period would watch, so its volume is far too low; record at a longer -c instead",
	         k, k, k);
	return false;
}

bool kfilter_keep(struct kfilter *f, const struct ct_record *r)
{
	if (r->thread >= f->nthreads)
		return false;
	struct kf_thread *t = &f->t[r->thread];
	switch (r->type) {
	case CT_REC_SAMPLE: {
		uint64_t n = r->u.sample.kind == CT_ACCESS_LOAD ? t->nload++ : t->nstore++;
		t->sample_kept = f->k == 1 || n % f->k == 0;
		return t->sample_kept;
	}
	case CT_REC_WP_ARM:
		t->arm_kept = t->sample_kept;
		return t->arm_kept;
	case CT_REC_WP_HIT:
		return t->arm_kept;
	default:
		return true;
	}
}
