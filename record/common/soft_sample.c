/* The soft sampler's pure part (soft_sample.h). */
#include "soft_sample.h"

#include <string.h>

#include "commtrace.h"

int soft_sample_access(const struct perf_rec *r, uint64_t regs_mask, uint64_t fs_base, bool late,
                       struct dec_access *a)
{
	memset(a, 0, sizeof *a);
	if (r->ip >= 0x800000000000ull || r->regs_abi == 0 || r->nregs == 0)
		return CT_SKIP_KERNEL;     /* no user registers: a kernel context */
	struct dec_regs regs;
	memset(&regs, 0, sizeof regs);
	dec_regs_from_perf(&regs, r->regs, regs_mask);
	regs.fs_base = fs_base;
	regs.late = late;
	return dec_sample_access(&regs, a);
}

/* By tid, then start: insertion sort (async-signal-safe, and the map is
 * rebuilt from a registry that changes little between two builds). */
void soft_tid_map_sort(struct soft_tid_map *m)
{
	for (size_t i = 1; i < m->n; i++) {
		struct soft_tid_entry x = m->e[i];
		size_t j = i;
		while (j > 0 && (m->e[j - 1].tid > x.tid ||
		                 (m->e[j - 1].tid == x.tid && m->e[j - 1].start > x.start))) {
			m->e[j] = m->e[j - 1];
			j--;
		}
		m->e[j] = x;
	}
}

void *soft_tid_map_find(const struct soft_tid_map *m, uint32_t tid, uint64_t time)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {              /* first entry with this tid */
		size_t mid = lo + (hi - lo) / 2;
		if (m->e[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < m->n && m->e[i].tid == tid; i++)
		if (time >= m->e[i].start && time <= m->e[i].end)
			return m->e[i].owner;
	return NULL;
}
