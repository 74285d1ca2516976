/* The soft sampler's event attributes (soft_attr.h): apart from
 * soft_sample.c so that commrec's probe links them without the decoder. */
#include "soft_attr.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "decode.h"

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

void *soft_ring_map(int fd, size_t *pages, size_t page_size)
{
	void *m = mmap(NULL, page_size * (1 + *pages), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	while (m == MAP_FAILED && errno == EPERM && *pages > SOFT_RING_PAGES_MIN / 2) {
		*pages /= 2;
		m = mmap(NULL, page_size * (1 + *pages), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	}
	return m;
}
