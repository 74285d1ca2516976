/* The soft sampler's pure part (soft_sample.h). */
#include "soft_sample.h"

#include <string.h>
#include <time.h>

#include "commtrace.h"

void soft_sample_attr(struct perf_event_attr *a, uint64_t period_ns)
{
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = period_ns;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
	                 PERF_SAMPLE_REGS_USER;
	a->sample_regs_user = DEC_PERF_REGS_MASK;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

/* Ring data pages: half a second of samples at the period (a soft sample
 * is 184 bytes; the writer drains every 10 ms, later on a loaded machine);
 * what overflows is counted (LOST records). */
#define RING_PAGES_MAX 256
#define SAMPLE_BYTES 184

static size_t ring_pages(uint64_t period_ns, size_t page_size)
{
	uint64_t want = 500000000ull / (period_ns ? period_ns : 1) * SAMPLE_BYTES / page_size;
	size_t p = SOFT_RING_PAGES_MIN;
	while (p < want && p < RING_PAGES_MAX)
		p <<= 1;
	return p;
}

size_t soft_ring_attr(struct perf_event_attr *a, bool wide, uint64_t period_ns, size_t page_size)
{
	memset(a, 0, sizeof *a);
	soft_sample_attr(a, period_ns);
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	if (wide) {
		a->config = PERF_COUNT_SW_CPU_CLOCK;
		a->exclude_idle = 1;
		a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;   /* (offline CPUs: check_cpus) */
	} else {
		a->inherit = 1;
		a->inherit_thread = 1;     /* threads, not forked children */
		a->remove_on_exec = 1;
	}
	a->sample_id_all = 1;      /* LOST records carry the tid they hit */
	a->disabled = 1;
	size_t pages = ring_pages(period_ns, page_size);
	/* no wake-up wanted (the writer drains on its own cadence): the
	 * watermark at the ring's size asks for as few as the kernel allows */
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(pages * page_size / 2);
	return pages;
}

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
