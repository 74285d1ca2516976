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

static inline unsigned log2u(unsigned v)
{
	unsigned s = 0;
	while ((1u << s) < v)
		s++;
	return s;
}

#endif
