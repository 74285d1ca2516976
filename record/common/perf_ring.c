/* perf_event ring buffer parsing.  See perf_ring.h.
 *
 * Layout of PERF_RECORD_SAMPLE (from include/uapi/linux/perf_event.h and the
 * perf_event_open(2) man page; the order of the last fields follows
 * perf_output_sample() in kernel/events/core.c, which puts CGROUP after
 * PHYS_ADDR and AUX last):
 *
 *   header
 *   u64 id                     IDENTIFIER
 *   u64 ip                     IP
 *   u32 pid, tid               TID
 *   u64 time                   TIME
 *   u64 addr                   ADDR
 *   u64 id                     ID
 *   u64 stream_id              STREAM_ID
 *   u32 cpu, res               CPU
 *   u64 period                 PERIOD
 *   read_format                READ            (refused here)
 *   u64 nr, ips[nr]            CALLCHAIN       (skipped)
 *   u32 size, data[size]       RAW             (size counts the padding)
 *   u64 nr, [hw_idx],          BRANCH_STACK    (skipped; hw_idx if
 *     {from,to,flags}[nr],       branch_sample_type has HW_INDEX, counters[nr]
 *     [counters[nr]]             if it has COUNTERS)
 *   u64 abi, regs[popcount]    REGS_USER       (regs absent when abi == 0)
 *   u64 size, data[size],      STACK_USER      (skipped; dyn_size only when
 *     [dyn_size]                 size != 0)
 *   u64 weight                 WEIGHT or WEIGHT_STRUCT (u32 var1, u16 var2, u16 var3)
 *   u64 data_src               DATA_SRC
 *   u64 transaction            TRANSACTION     (skipped)
 *   u64 abi, regs[popcount]    REGS_INTR       (skipped)
 *   u64 phys_addr              PHYS_ADDR
 *   u64 cgroup                 CGROUP          (skipped)
 *   u64 data_page_size         DATA_PAGE_SIZE  (skipped)
 *   u64 code_page_size         CODE_PAGE_SIZE  (skipped)
 *   u64 size, data[size]       AUX             (skipped)
 *
 * Other records, with attr.sample_id_all, end with the sample_id trailer:
 *   { u32 pid, tid } TID, { u64 time } TIME, { u64 id } ID,
 *   { u64 stream_id } STREAM_ID, { u32 cpu, res } CPU, { u64 id } IDENTIFIER
 *
 *   PERF_RECORD_LOST (2):         u64 id, u64 lost, sample_id
 *   PERF_RECORD_THROTTLE (5),
 *   PERF_RECORD_UNTHROTTLE (6):   u64 time, u64 id, u64 stream_id, sample_id
 *   PERF_RECORD_LOST_SAMPLES (13): u64 lost, sample_id
 *
 * Everything here is async-signal-safe: fixed-size reads with memcpy (which
 * compilers inline), no allocation, no locks. */
#include "perf_ring.h"

#include <string.h>

#define CT_RECORD_LOST_SAMPLES 13

/* A bounded reader over one record. */
struct cur {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t get64(struct cur *c)
{
	uint64_t v = 0;
	if (c->bad || (size_t)(c->end - c->p) < 8) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static uint32_t get32(struct cur *c)
{
	uint32_t v = 0;
	if (c->bad || (size_t)(c->end - c->p) < 4) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

/* Skip n items of `unit` bytes, checking for overflow and bounds. */
static void skip(struct cur *c, uint64_t n, uint64_t unit)
{
	if (c->bad)
		return;
	size_t left = (size_t)(c->end - c->p);
	if (unit && n > left / unit) {
		c->bad = 1;
		return;
	}
	c->p += n * unit;
}

static unsigned popcount64(uint64_t v)
{
	return (unsigned)__builtin_popcountll(v);
}

/* The sample_id trailer at the end of a non-sample record: its size follows
 * from sample_type alone, so it is read from the end of the record. */
static size_t sample_id_bytes(uint64_t st)
{
	size_t n = 0;
	if (st & PERF_SAMPLE_TID) n += 8;
	if (st & PERF_SAMPLE_TIME) n += 8;
	if (st & PERF_SAMPLE_ID) n += 8;
	if (st & PERF_SAMPLE_STREAM_ID) n += 8;
	if (st & PERF_SAMPLE_CPU) n += 8;
	if (st & PERF_SAMPLE_IDENTIFIER) n += 8;
	return n;
}

/* Parse the trailer in [c->p, c->end) (exactly sample_id_bytes long).  Only
 * fields the body did not give are filled (the body's id and time win). */
static void parse_sample_id(const struct perf_sample_fmt *fmt, struct cur *c,
                            struct perf_rec *out, int body_has_time, int body_has_id)
{
	uint64_t st = fmt->sample_type;
	if (st & PERF_SAMPLE_TID) {
		out->pid = get32(c);
		out->tid = get32(c);
	}
	if (st & PERF_SAMPLE_TIME) {
		uint64_t t = get64(c);
		if (!body_has_time)
			out->time = t;
	}
	if (st & PERF_SAMPLE_ID) {
		uint64_t id = get64(c);
		if (!body_has_id)
			out->id = id;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		uint64_t sid = get64(c);
		if (!body_has_id)
			out->stream_id = sid;
	}
	if (st & PERF_SAMPLE_CPU) {
		out->cpu = get32(c);
		(void)get32(c);
	}
	if (st & PERF_SAMPLE_IDENTIFIER) {
		uint64_t id = get64(c);
		if (!body_has_id && !(st & PERF_SAMPLE_ID))
			out->id = id;
	}
}

static int parse_sample(const struct perf_sample_fmt *fmt, struct cur *c, struct perf_rec *out)
{
	uint64_t st = fmt->sample_type;

	if (st & PERF_SAMPLE_READ)
		return -1; /* not supported: the layout depends on the group */
	if (st & PERF_SAMPLE_IDENTIFIER)
		out->id = get64(c);
	if (st & PERF_SAMPLE_IP)
		out->ip = get64(c);
	if (st & PERF_SAMPLE_TID) {
		out->pid = get32(c);
		out->tid = get32(c);
	}
	if (st & PERF_SAMPLE_TIME)
		out->time = get64(c);
	if (st & PERF_SAMPLE_ADDR)
		out->addr = get64(c);
	if (st & PERF_SAMPLE_ID)
		out->id = get64(c);
	if (st & PERF_SAMPLE_STREAM_ID)
		out->stream_id = get64(c);
	if (st & PERF_SAMPLE_CPU) {
		out->cpu = get32(c);
		(void)get32(c);
	}
	if (st & PERF_SAMPLE_PERIOD)
		out->period = get64(c);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr = get64(c);
		skip(c, nr, 8);
	}
	if (st & PERF_SAMPLE_RAW) {
		/* u32 size then size bytes; size includes the padding that
		 * keeps the record 8-byte aligned. */
		uint32_t sz = get32(c);
		if (!c->bad && (size_t)(c->end - c->p) < sz)
			c->bad = 1;
		if (!c->bad) {
			out->raw = c->p;
			out->raw_size = sz;
			c->p += sz;
		}
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		uint64_t nr = get64(c);
		if (fmt->branch_sample_type & CT_BRANCH_HW_INDEX)
			(void)get64(c);
		skip(c, nr, 24);
		if (fmt->branch_sample_type & CT_BRANCH_COUNTERS)
			skip(c, nr, 8);
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		out->regs_abi = get64(c);
		if (out->regs_abi != 0 && !c->bad) {
			unsigned n = popcount64(fmt->regs_user_mask);
			for (unsigned i = 0; i < n && !c->bad; i++) {
				uint64_t v = get64(c);
				if (i < PERF_RING_MAX_REGS)
					out->regs[i] = v;
			}
			out->nregs = n < PERF_RING_MAX_REGS ? n : PERF_RING_MAX_REGS;
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		uint64_t sz = get64(c);
		skip(c, sz, 1);
		if (sz != 0)
			(void)get64(c); /* dyn_size */
	}
	if (st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) {
		uint64_t w = get64(c);
		if (st & PERF_SAMPLE_WEIGHT_STRUCT) {
			/* little endian: u32 var1_dw, u16 var2_w, u16 var3_w */
			out->weight = (uint32_t)w;
			out->weight_var2 = (uint16_t)(w >> 32);
			out->weight_var3 = (uint16_t)(w >> 48);
		} else {
			out->weight = w;
		}
	}
	if (st & PERF_SAMPLE_DATA_SRC)
		out->data_src = get64(c);
	if (st & PERF_SAMPLE_TRANSACTION)
		(void)get64(c);
	if (st & PERF_SAMPLE_REGS_INTR) {
		uint64_t abi = get64(c);
		if (abi != 0)
			skip(c, popcount64(fmt->regs_intr_mask), 8);
	}
	if (st & PERF_SAMPLE_PHYS_ADDR)
		out->phys_addr = get64(c);
	if (st & PERF_SAMPLE_CGROUP)
		(void)get64(c);
	if (st & PERF_SAMPLE_DATA_PAGE_SIZE)
		(void)get64(c);
	if (st & PERF_SAMPLE_CODE_PAGE_SIZE)
		(void)get64(c);
	if (st & PERF_SAMPLE_AUX) {
		uint64_t sz = get64(c);
		skip(c, sz, 1);
	}
	return c->bad ? -1 : 0;
}

/* Non-sample records with a fixed body of `body` bytes then (with
 * sample_id_all) the trailer. */
static int trailer_cur(const struct perf_sample_fmt *fmt, const uint8_t *rec, size_t size,
                       size_t body, struct cur *tr)
{
	size_t tsz = fmt->sample_id_all ? sample_id_bytes(fmt->sample_type) : 0;
	if (size < 8 + body + tsz)
		return -1;
	tr->p = rec + size - tsz;
	tr->end = rec + size;
	tr->bad = 0;
	return 0;
}

int perf_parse_record(const struct perf_sample_fmt *fmt, const void *rec, size_t size,
                      struct perf_rec *out)
{
	const uint8_t *r = rec;
	struct perf_event_header h;

	memset(out, 0, sizeof *out);
	if (!fmt || !rec || size < sizeof h)
		return -1;
	memcpy(&h, r, sizeof h);
	if (h.size < sizeof h || h.size > size)
		return -1;
	size = h.size;
	out->type = h.type;
	out->misc = h.misc;

	struct cur c = { r + sizeof h, r + size, 0 };
	struct cur tr;

	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		out->kind = PERF_REC_SAMPLE;
		return parse_sample(fmt, &c, out);
	case PERF_RECORD_LOST:
		out->kind = PERF_REC_LOST;
		if (trailer_cur(fmt, r, size, 16, &tr) < 0)
			return -1;
		out->id = get64(&c);
		out->lost = get64(&c);
		if (fmt->sample_id_all)
			parse_sample_id(fmt, &tr, out, 0, 1);
		return c.bad || tr.bad ? -1 : 0;
	case CT_RECORD_LOST_SAMPLES:
		out->kind = PERF_REC_LOST;
		if (trailer_cur(fmt, r, size, 8, &tr) < 0)
			return -1;
		out->lost = get64(&c);
		if (fmt->sample_id_all)
			parse_sample_id(fmt, &tr, out, 0, 0);
		return c.bad || tr.bad ? -1 : 0;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		out->kind = h.type == PERF_RECORD_THROTTLE ? PERF_REC_THROTTLE : PERF_REC_UNTHROTTLE;
		if (trailer_cur(fmt, r, size, 24, &tr) < 0)
			return -1;
		out->time = get64(&c);
		out->id = get64(&c);
		out->stream_id = get64(&c);
		if (fmt->sample_id_all)
			parse_sample_id(fmt, &tr, out, 1, 1);
		return c.bad || tr.bad ? -1 : 0;
	default:
		out->kind = PERF_REC_OTHER;
		return 0;
	}
}

/* Copy n bytes starting at ring offset off (may wrap) into dst. */
static void ring_copy(const uint8_t *data, size_t data_size, uint64_t off, void *dst, size_t n)
{
	size_t o = (size_t)(off & (data_size - 1));
	size_t first = data_size - o;
	if (first >= n) {
		memcpy(dst, data + o, n);
	} else {
		memcpy(dst, data + o, first);
		memcpy((uint8_t *)dst + first, data, n - first);
	}
}

int perf_ring_drain(struct perf_event_mmap_page *meta, uint8_t *data, size_t data_size,
                    const struct perf_sample_fmt *fmt, void *scratch, size_t scratch_size,
                    perf_rec_cb cb, void *ctx)
{
	if (!meta || !data || !fmt || data_size < 8 || (data_size & (data_size - 1)))
		return -1;

	/* The kernel writes records, then publishes data_head (a release on
	 * its side): this acquire load orders our reads of the records after
	 * it.  We are the only writer of data_tail. */
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	int delivered = 0;
	int bad = 0;

	if (head - tail > data_size) {
		/* More than the ring holds (corrupt meta page, or an overwritten
		 * ring): nothing in it can be trusted. */
		bad = 1;
		tail = head;
	}

	while (!bad && tail != head) {
		uint64_t avail = head - tail;
		struct perf_event_header h;

		if (avail < sizeof h) {
			bad = 1;
			break;
		}
		ring_copy(data, data_size, tail, &h, sizeof h);
		/* Every record the kernel writes is a multiple of 8 bytes and at
		 * least a header: anything else means the ring is corrupt (and a
		 * size of 0 would never advance). */
		if (h.size < sizeof h || (h.size & 7) || h.size > avail) {
			bad = 1;
			break;
		}

		size_t off = (size_t)(tail & (data_size - 1));
		const void *rec;
		if (off + h.size <= data_size) {
			rec = data + off;
		} else if (scratch && h.size <= scratch_size) {
			ring_copy(data, data_size, tail, scratch, h.size);
			rec = scratch;
		} else {
			rec = NULL; /* wraps and does not fit in scratch: dropped */
		}

		if (rec) {
			struct perf_rec r;
			if (perf_parse_record(fmt, rec, h.size, &r) < 0) {
				bad = 1;
				break;
			}
			if (cb)
				cb(ctx, &r);
			delivered++;
		}
		tail += h.size;
	}
	if (bad)
		tail = head;

	/* Release: our reads of the records happen before the kernel may
	 * overwrite them. */
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return bad ? -1 : delivered;
}

void perf_sample_fmt_from_attr(const struct perf_event_attr *a, struct perf_sample_fmt *f)
{
	memset(f, 0, sizeof *f);
	f->sample_type = a->sample_type;
	f->regs_user_mask = a->sample_regs_user;
	f->read_format = a->read_format;
	f->sample_id_all = a->sample_id_all;
	f->branch_sample_type = a->branch_sample_type;
	f->regs_intr_mask = a->sample_regs_intr;
}
