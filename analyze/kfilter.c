/* --period-multiplier K: emulate a K times longer sampling period by
 * keeping every Kth sample of each thread and kind (loads apart from stores
 * and atomics, as the PMU counts them apart), the watchpoint arms made by
 * the kept samples (an arm belongs to the sample just before it in its
 * thread's stream) and the hits of kept arms (a hit belongs to its thread's
 * last arm). */
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
