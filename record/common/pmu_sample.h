/* PMU samples (pebs, ibs) turned into commtrace samples: the pure part of the
 * hardware samplers, callable without a live event so that unit tests can
 * feed it synthetic perf rings.
 *
 * The runtime's converters (record/runtime/sampler_pebs.c, sampler_ibs.c)
 * call pmu_pebs_sample / pmu_ibs_sample on each sample that the runtime's
 * one perf sample path (rt_perf.c) hands them, with a struct pmu_conv per
 * thread that holds the events' ids, kinds and periods.  Standalone (tools,
 * the tests' synthetic rings), perf_ring_drain() with pmu_conv_on_rec() as
 * the callback turns each parsed record into
 *   - a sample (struct pmu_sample, handed to conv->on_sample), usable or
 *     with a skip reason (enum ct_skip_reason), or
 *   - a LOST record (PERF_RECORD_LOST / LOST_SAMPLES -> CT_LOST_PMU,
 *     PERF_RECORD_THROTTLE -> CT_LOST_THROTTLE, handed to conv->on_lost), or
 *   - nothing (UNTHROTTLE and other record types).
 *
 * Access length and kind come from decoding the instruction at the sample's
 * ip (dec_access_at on bytes read without faulting through process_vm_readv
 * of the process itself); the address is the PMU's (CT_SAMPLE_EXACT).
 *
 * Everything here is async-signal-safe (no allocation, no locks, no stdio):
 * it runs in the sampling signal handler.  Must not depend on
 * record/runtime. */
#ifndef CT_PMU_SAMPLE_H
#define CT_PMU_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commtrace.h"
#include "decode.h"
#include "perf_ring.h"
#include "pmu.h"             /* PMU_KIND_* */

#define PMU_CONV_MAX_EVENTS 8

/* One converted sample: the same fields as the runtime's struct
 * rt_sample_in (record/runtime/sampler.h), which the runtime copies. */
struct pmu_sample {
	uint64_t time, ip, period;
	uint32_t cpu;
	uint64_t data_src;
	uint32_t weight;
	int skip;                 /* 0, or an enum ct_skip_reason */
	struct dec_access acc;    /* addr, len (0 = unknown), kind, flags (EXACT, FS_BASED, PREV_INSN) */
	uint8_t extra_flags;      /* CT_SAMPLE_HAS_DATA_SRC, CT_SAMPLE_HAS_WEIGHT */
};

/* Counters of one converter (one thread): what was decided and why. */
struct pmu_conv_stats {
	uint64_t samples;         /* SAMPLE records seen */
	uint64_t usable;          /* handed on with skip == 0 */
	uint64_t dropped;         /* refused by the pre hook (runtime's own code) */
	uint64_t zero_addr;       /* pebs: no data address (skipped) */
	uint64_t len_unknown;     /* usable, but the instruction could not be decoded */
	uint64_t kind_mismatch;   /* the event's kind contradicts the decoder's */
	uint64_t not_exact_ip;    /* ip without PERF_RECORD_MISC_EXACT_IP */
	uint64_t unknown_id;      /* sample id not among the configured events */
	uint64_t lost;            /* records the kernel said it lost */
	uint64_t throttled;       /* throttle notifications */
};

enum pmu_conv_mode {
	PMU_CONV_PEBS = 1,        /* address in PERF_SAMPLE_ADDR, kind from the event */
	PMU_CONV_IBS = 2,         /* everything in the PERF_SAMPLE_RAW IBS op payload */
};

struct pmu_conv {
	int mode;                 /* enum pmu_conv_mode */
	/* The events writing into the ring (pebs: loads and stores events
	 * sharing one ring).  A sample's id (PERF_SAMPLE_IDENTIFIER or ID) is
	 * looked up in ids[] to find its kind (PMU_KIND_* of pmu.h) and the
	 * period it was opened with (used when the sample has no PERIOD). */
	size_t nev;
	uint64_t ids[PMU_CONV_MAX_EVENTS];
	uint8_t kinds[PMU_CONV_MAX_EVENTS];
	uint64_t periods[PMU_CONV_MAX_EVENTS];

	/* Optional: called first for every SAMPLE record; return true to drop
	 * it silently (the runtime drops samples of its own code and of its
	 * previous signal handler run, and counts them itself). */
	bool (*pre)(void *ctx, const struct perf_rec *r);
	/* Where the results go (either may be NULL). */
	void (*on_sample)(void *ctx, const struct pmu_sample *s);
	void (*on_lost)(void *ctx, const struct ct_record *lost);
	void *ctx;

	struct pmu_conv_stats st;
};

/* Set up a converter (zeroes everything, sets mode). */
void pmu_conv_init(struct pmu_conv *c, int mode);
/* Add one event: its id (PERF_EVENT_IOC_ID), kind (PMU_KIND_LOAD, _STORE,
 * _UNKNOWN) and sample period.  Returns 0, or -1 when full. */
int pmu_conv_add_event(struct pmu_conv *c, uint64_t id, uint8_t kind, uint64_t period);

/* The perf_rec_cb for perf_ring_drain(): ctx is a struct pmu_conv *. */
void pmu_conv_on_rec(void *ctx, const struct perf_rec *r);

/* The conversions themselves (pmu_conv_on_rec calls them for SAMPLE records
 * after the pre hook).  Fill *out completely; return out->skip (0 = usable). */
int pmu_pebs_sample(struct pmu_conv *c, const struct perf_rec *r, struct pmu_sample *out);
int pmu_ibs_sample(struct pmu_conv *c, const struct perf_rec *r, struct pmu_sample *out);

/* A LOST record for a PERF_REC_LOST or PERF_REC_THROTTLE record: reason
 * CT_LOST_PMU with the kernel's count, or CT_LOST_THROTTLE with count 1;
 * time is the record's (sample_id_all) or now when it has none.  Returns 1
 * with *out filled, 0 for any other record. */
int pmu_lost_record(const struct perf_rec *r, uint64_t now, struct ct_record *out);

/* Access length and kind of the instruction at ip of this process, read
 * without faulting.  exact: ip is the instruction that made the access
 * (PERF_RECORD_MISC_EXACT_IP); otherwise ip is the one after it (skid of
 * one instruction, precise_ip 1) and the instruction ending at ip is
 * searched for (*prev set to 1 when it was found).  want_kind: the
 * event's PMU_KIND_* to prefer among ambiguous candidates of the backward
 * search.  Returns 0 with a->len, a->kind, a->flags (FS_BASED) set (a->addr
 * is meaningless: no registers), or an enum ct_skip_reason. */
int pmu_decode_at(uint64_t ip, bool exact, uint8_t want_kind, struct dec_access *a, int *prev);

/* Read n bytes at addr of this process without faulting (process_vm_readv
 * on itself, page by page).  Returns the number of leading bytes read. */
size_t pmu_read_self(void *dst, uint64_t addr, size_t n);

#endif
