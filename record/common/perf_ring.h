/* perf_event ring buffers: parse the records the kernel writes into a
 * perf_event mmap buffer (PERF_RECORD_SAMPLE, _LOST, _THROTTLE, _UNTHROTTLE)
 * for any sample_type this project uses.  Shared by every sampler that reads
 * a ring (soft: task-clock with user registers; pebs; ibs).
 *
 * Async-signal-safe: no allocation, no locks, no stdio; the caller provides
 * every buffer.  Works on a real mmapped ring or on a synthetic one (tests). */
#ifndef CT_PERF_RING_H
#define CT_PERF_RING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* sample_type bits newer than some system headers (values from the uapi
 * header). */
#ifndef PERF_SAMPLE_WEIGHT_STRUCT
#define PERF_SAMPLE_WEIGHT_STRUCT (1U << 24)
#endif
#ifndef PERF_SAMPLE_CGROUP
#define PERF_SAMPLE_CGROUP (1U << 21)
#endif
#ifndef PERF_SAMPLE_DATA_PAGE_SIZE
#define PERF_SAMPLE_DATA_PAGE_SIZE (1U << 22)
#endif
#ifndef PERF_SAMPLE_CODE_PAGE_SIZE
#define PERF_SAMPLE_CODE_PAGE_SIZE (1U << 23)
#endif
#ifndef PERF_SAMPLE_AUX
#define PERF_SAMPLE_AUX (1U << 20)
#endif
/* branch_sample_type bits (values from the uapi header; older system
 * headers lack COUNTERS). */
#define CT_BRANCH_HW_INDEX (1ull << 17)
#define CT_BRANCH_COUNTERS (1ull << 19)

/* What the event was opened with: needed to know which fields a sample has. */
struct perf_sample_fmt {
	uint64_t sample_type;    /* PERF_SAMPLE_* bits */
	uint64_t regs_user_mask; /* attr.sample_regs_user */
	uint64_t read_format;    /* attr.read_format (PERF_SAMPLE_READ is refused) */
	bool sample_id_all;      /* attr.sample_id_all: LOST/THROTTLE carry an id trailer */
	/* Added fields (zero = not used): */
	uint64_t branch_sample_type; /* attr.branch_sample_type (PERF_SAMPLE_BRANCH_STACK:
	                              * HW_INDEX adds a u64, COUNTERS (1 << 19) a u64 per entry) */
	uint64_t regs_intr_mask; /* attr.sample_regs_intr (PERF_SAMPLE_REGS_INTR, skipped) */
};

enum perf_rec_kind {
	PERF_REC_SAMPLE = 1,
	PERF_REC_LOST = 2,       /* lost = number of records the kernel dropped
	                          * (PERF_RECORD_LOST; also PERF_RECORD_LOST_SAMPLES,
	                          * which PEBS drains use, with id 0) */
	PERF_REC_THROTTLE = 3,
	PERF_REC_UNTHROTTLE = 4,
	PERF_REC_OTHER = 5,      /* any other record type: ignored by callers */
};

#define PERF_RING_MAX_REGS 32

/* One parsed record.  Fields absent from sample_type are 0. */
struct perf_rec {
	uint8_t kind;            /* enum perf_rec_kind */
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint64_t id, stream_id;
	uint32_t cpu;
	uint64_t period;
	uint64_t regs_abi;       /* PERF_SAMPLE_REGS_USER: abi, 0 = none */
	uint32_t nregs;
	uint64_t regs[PERF_RING_MAX_REGS]; /* in mask bit order */
	uint64_t weight;         /* PERF_SAMPLE_WEIGHT or WEIGHT_STRUCT low 32 bits */
	uint64_t data_src;
	const void *raw;         /* PERF_SAMPLE_RAW payload (points into the caller's copy) */
	uint32_t raw_size;
	uint64_t lost;           /* PERF_REC_LOST */
	/* Added fields: */
	uint32_t type;           /* perf_event_header.type (PERF_RECORD_*) */
	uint16_t misc;           /* perf_event_header.misc: PERF_RECORD_MISC_CPUMODE_MASK
	                          * (user/kernel), PERF_RECORD_MISC_EXACT_IP (precise ip) */
	uint16_t weight_var2;    /* PERF_SAMPLE_WEIGHT_STRUCT var2_w (e.g. instruction latency) */
	uint16_t weight_var3;    /* PERF_SAMPLE_WEIGHT_STRUCT var3_w */
	uint64_t phys_addr;      /* PERF_SAMPLE_PHYS_ADDR */
};

/* Parse one record (header included) of `size` bytes at rec.  Returns 0, or
 * -1 when the record is malformed (shorter than its fields say, header.size
 * < 8 or > size) or fmt has PERF_SAMPLE_READ.  Only header.size bytes are
 * read.  Records other than SAMPLE/LOST/LOST_SAMPLES/THROTTLE/UNTHROTTLE are
 * returned as PERF_REC_OTHER with only type and misc set. */
int perf_parse_record(const struct perf_sample_fmt *fmt, const void *rec, size_t size,
                      struct perf_rec *out);

/* Added: the format of the events opened with attr a. */
struct perf_event_attr;
void perf_sample_fmt_from_attr(const struct perf_event_attr *a, struct perf_sample_fmt *f);

/* Consume every complete record between data_tail and data_head of a ring
 * (data: the data area, data_size: a power of two), calling cb for each
 * parsed record; records that wrap around the end are copied into scratch
 * (scratch_size >= the largest record, 64 KiB is always enough).  Updates
 * data_tail with the right memory ordering.  Returns the number of records
 * delivered, or -1 if a malformed record was found (the ring is then
 * skipped to data_head).  Malformed: a header.size < 8, not a multiple of 8
 * or beyond data_head, data_head more than data_size ahead of data_tail, a
 * record perf_parse_record refuses.  A record that wraps and is larger than
 * scratch_size is dropped without being delivered. */
typedef void (*perf_rec_cb)(void *ctx, const struct perf_rec *r);
int perf_ring_drain(struct perf_event_mmap_page *meta, uint8_t *data, size_t data_size,
                    const struct perf_sample_fmt *fmt, void *scratch, size_t scratch_size,
                    perf_rec_cb cb, void *ctx);

#endif
