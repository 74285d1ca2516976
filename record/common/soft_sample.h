/* The soft sampler's pure part: a task-clock perf sample (user registers,
 * no data address) turned into a data access, and the attribution of
 * samples from per-CPU rings to the program's threads.  Shared by both
 * paths of the soft sampler (record/runtime/sampler_soft.c):
 *
 *   per-thread   one event per thread, drained in that thread's signal
 *                handler (where watchpoints are armed: the online part of
 *                ComDetective's Algorithm 1 must run at the sample);
 *   per-CPU      one event per CPU (inherited task-clock, or CPU-wide
 *                cpu-clock where asked for), opened once, no signal,
 *                drained and decoded by the writer thread
 *                (record/runtime/rt_cpusamp.c).
 *
 * Callable on synthetic records (tests/unit/rec_soft_sample.c).
 * Async-signal-safe: no allocation, no locks.  Must not depend on
 * record/runtime. */
#ifndef CT_SOFT_SAMPLE_H
#define CT_SOFT_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "perf_ring.h"
#include "soft_attr.h"

/* The data access of one PERF_RECORD_SAMPLE of a soft event opened with
 * sample_regs_user = regs_mask, for a thread whose fs base is fs_base.
 * late: decoded on another thread after the fact (dec_regs.late).  Returns
 * 0 with *a filled (flags include CT_SAMPLE_RECONSTRUCTED), or an enum
 * ct_skip_reason (CT_SKIP_KERNEL for a kernel ip or a sample without user
 * registers). */
int soft_sample_access(const struct perf_rec *r, uint64_t regs_mask, uint64_t fs_base, bool late,
                       struct dec_access *a);

/* Which recorded thread a sample of a per-CPU ring belongs to: the one
 * whose tid it carries and whose life [start, end] holds its time (a tid
 * may be reused by a later thread).  The caller fills entries (owner is
 * its own pointer, end UINT64_MAX while the thread runs), then sorts. */
struct soft_tid_entry {
	uint32_t tid;
	uint64_t start, end;
	void *owner;
};

struct soft_tid_map {
	struct soft_tid_entry *e;
	size_t n;
};

void soft_tid_map_sort(struct soft_tid_map *m);
/* The owner, or NULL: no recorded thread had this tid at that time. */
void *soft_tid_map_find(const struct soft_tid_map *m, uint32_t tid, uint64_t time);

#endif
