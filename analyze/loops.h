/* Loops from the binary (loops.c): communication by function and loop,
 * nested as in the code, in the tree of regions.h (root (program), then a
 * node per function, then its loops: "loop:LINE", where "file.c:L1-L2").
 * An event counts in the innermost loop around its receiving access's
 * instruction (comm_event.ip) and in everything around it; an event without
 * an ip, or in no known function, counts in the root only. */
#ifndef CT_LOOPS_H
#define CT_LOOPS_H

#include "regions.h"

struct loops;
struct analysis_hooks;
/* loops_hooks_init(&h, &lh) then analysis_run_hooks(..., &h): lh.l holds
 * the loops afterwards (NULL if the run failed before the replay). */
struct loops_hook {
	struct analysis_hooks *h;
	bool no_demangle;           /* set after loops_hooks_init: names as in the binary */
	struct loops *l;
};
void loops_hooks_init(struct analysis_hooks *h, struct loops_hook *lh);
struct regions *loops_regions(struct loops *l);
/* Events in no known function, functions whose code could not be read,
 * whether the binaries' symbols could be loaded at all. */
void loops_counts(const struct loops *l, uint64_t *no_function, uint64_t *no_code, bool *have_maps);
void loops_free(struct loops *l);
/* The loops of x86-64 code at runtime address base, as [lo, hi) ranges in
 * the order their back edges appear (at most cap written); their number. */
size_t loops_in_code(const uint8_t *code, size_t len, uint64_t base, uint64_t (*range)[2],
                     size_t cap);

#endif
