/* Small helpers shared by the models. */
#ifndef CT_MODEL_COMMON_H
#define CT_MODEL_COMMON_H

#include "ana.h"

/* [a, a+la) and [b, b+lb) overlap; a length of 0 counts as 1. */
static inline bool ranges_overlap(uint64_t a, unsigned la, uint64_t b, unsigned lb)
{
	if (!la)
		la = 1;
	if (!lb)
		lb = 1;
	return a < b + lb && b < a + la;
}

static inline void emit(struct event_consumer *out, size_t nout, const struct comm_event *ev)
{
	for (size_t i = 0; i < nout; i++)
		out[i].event(out[i].self, ev);
}

/* The variance part of an event of weight w that stands alone, as if it
 * had been sampled with probability 1/w (comm_event.var): w (w - 1), 0 for
 * w <= 1 (an event seen with certainty). */
static inline double sampled_var(double w)
{
	return w > 1 ? w * (w - 1) : 0;
}

/* The owner estimator (model_exact.c): the exact model's line states over
 * every access, where a transfer counts through the sampled accesses among
 * the J before it on its line, each with its sample's weight / J.
 * exact_owner_access: one access r, owner_weight its sampling weight if it
 * was sampled, else 0.  finish and destroy: model_exact's. */
void *exact_owner_create(const struct model_setup *s);
void exact_owner_access(void *exact, const struct ct_record *r, double owner_weight);

/* A model's records(): its record() on each of a block, inlined in one
 * loop (struct record_consumer). */
#define MODEL_RECORDS(name, one)                                                  \
	static void name(void *self, const struct ct_record *r, size_t n)         \
	{                                                                         \
		for (size_t i = 0; i < n; i++)                                    \
			one(self, &r[i]);                                         \
	}

static inline unsigned log2u(unsigned v)
{
	unsigned s = 0;
	while ((1u << s) < v)
		s++;
	return s;
}

#endif
