/* The soft sampler's perf event attributes, shared by the runtime
 * (record/runtime/sampler_soft.c, rt_cpusamp.c) and commrec's probe of the
 * CPU-wide events (record/switch_probe.c), so that both open the same. */
#ifndef CT_SOFT_ATTR_H
#define CT_SOFT_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

/* A soft sample event's attributes (task-clock, user registers, at
 * period_ns), on zeroed *a. */
void soft_sample_attr(struct perf_event_attr *a, uint64_t period_ns);

/* The per-CPU rings' events (rt_cpusamp.c): wide, a CPU-wide cpu-clock
 * event (pid -1), else an inherited task-clock one (pid 0), disabled,
 * timestamps CLOCK_MONOTONIC.  Fills *a (zeroed first); returns the ring's
 * data pages to map (half a second of samples at the period, 16 to 256:
 * soft_ring_map). */
size_t soft_ring_attr(struct perf_event_attr *a, bool wide, uint64_t period_ns, size_t page_size);
#define SOFT_RING_PAGES_MIN 16

/* Map fd's ring: the header page and *pages data pages, halved while the
 * kernel refuses them (EPERM: perf_event_mlock_kb) down to
 * SOFT_RING_PAGES_MIN / 2, *pages set to what was mapped; MAP_FAILED (errno
 * set) when none could be. */
void *soft_ring_map(int fd, size_t *pages, size_t page_size);

#endif
