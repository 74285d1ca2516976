/* perf ring parsing: synthetic records and rings built in memory, plus one
 * real task-clock ring (software event, needs no PMU). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "perf_ring.h"

/* ---- record builder ------------------------------------------------------ */

struct bld {
	uint8_t buf[2048];
	size_t len;
};

static void b_begin(struct bld *b, uint32_t type, uint16_t misc)
{
	memset(b, 0, sizeof *b);
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };
	memcpy(b->buf, &h, sizeof h);
	b->len = sizeof h;
}
static void b64(struct bld *b, uint64_t v) { memcpy(b->buf + b->len, &v, 8); b->len += 8; }
static void b32(struct bld *b, uint32_t v) { memcpy(b->buf + b->len, &v, 4); b->len += 4; }
static void bbytes(struct bld *b, const void *p, size_t n) { memcpy(b->buf + b->len, p, n); b->len += n; }
static size_t b_end(struct bld *b)
{
	uint16_t sz = (uint16_t)b->len;
	memcpy(b->buf + 6, &sz, 2);
	return b->len;
}

/* ---- sample_type sets -------------------------------------------------- */

#define SOFT_SET (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
                  PERF_SAMPLE_REGS_USER)
#define PEBS_SET (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | \
                  PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_WEIGHT)
/* x86-64 perf regs: AX=0, BX=1, SP=7, IP=8, R15=23 */
#define SOFT_REGS ((1ull << 0) | (1ull << 1) | (1ull << 7) | (1ull << 8) | (1ull << 23))

static size_t soft_sample(struct bld *b, uint64_t ip, uint32_t tid, uint64_t time, uint32_t cpu)
{
	b_begin(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	b64(b, ip);
	b32(b, 100); b32(b, tid);
	b64(b, time);
	b32(b, cpu); b32(b, 0);
	b64(b, PERF_SAMPLE_REGS_ABI_64);
	for (int i = 0; i < 5; i++)
		b64(b, 0x1000 + (uint64_t)i);
	return b_end(b);
}

static void test_soft_sample(void)
{
	struct perf_sample_fmt f = { .sample_type = SOFT_SET, .regs_user_mask = SOFT_REGS };
	struct bld b;
	size_t n = soft_sample(&b, 0x401234, 4242, 123456789, 1);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_SAMPLE);
	CHECK_EQ_U(r.type, PERF_RECORD_SAMPLE);
	CHECK_EQ_U(r.misc, PERF_RECORD_MISC_USER);
	CHECK_EQ_U(r.ip, 0x401234);
	CHECK_EQ_U(r.pid, 100);
	CHECK_EQ_U(r.tid, 4242);
	CHECK_EQ_U(r.time, 123456789);
	CHECK_EQ_U(r.cpu, 1);
	CHECK_EQ_U(r.regs_abi, PERF_SAMPLE_REGS_ABI_64);
	CHECK_EQ_U(r.nregs, 5);
	CHECK_EQ_U(r.regs[0], 0x1000);
	CHECK_EQ_U(r.regs[4], 0x1004);
	CHECK_EQ_U(r.addr, 0);
	CHECK_EQ_U(r.period, 0);
	/* one byte short: malformed */
	CHECK(perf_parse_record(&f, b.buf, n - 8, &r) == -1);
}

static void test_regs_abi_none(void)
{
	/* A sample taken in a kernel thread has abi NONE and no registers. */
	struct perf_sample_fmt f = { .sample_type = SOFT_SET, .regs_user_mask = SOFT_REGS };
	struct bld b;
	b_begin(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
	b64(&b, 0xffffffff81000000ull);
	b32(&b, 0); b32(&b, 0);
	b64(&b, 5);
	b32(&b, 0); b32(&b, 0);
	b64(&b, PERF_SAMPLE_REGS_ABI_NONE);
	size_t n = b_end(&b);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.regs_abi, 0);
	CHECK_EQ_U(r.nregs, 0);
	CHECK_EQ_U(r.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL);
}

static size_t pebs_sample(struct bld *b, uint64_t st)
{
	b_begin(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_EXACT_IP);
	b64(b, 0x400500);                 /* ip */
	b32(b, 7); b32(b, 8);             /* pid tid */
	b64(b, 999);                      /* time */
	b64(b, 0x7ffd0000beefull);        /* addr */
	b32(b, 3); b32(b, 0);             /* cpu */
	b64(b, 20011);                    /* period */
	if (st & PERF_SAMPLE_WEIGHT_STRUCT)
		b64(b, 0x0003000200000123ull); /* var3=3 var2=2 var1=0x123 */
	else
		b64(b, 0x123);
	b64(b, 0x68100142ull);            /* data_src */
	return b_end(b);
}

static void test_pebs_sample(void)
{
	struct perf_sample_fmt f = { .sample_type = PEBS_SET };
	struct bld b;
	size_t n = pebs_sample(&b, f.sample_type);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_SAMPLE);
	CHECK(r.misc & PERF_RECORD_MISC_EXACT_IP);
	CHECK_EQ_U(r.ip, 0x400500);
	CHECK_EQ_U(r.pid, 7);
	CHECK_EQ_U(r.tid, 8);
	CHECK_EQ_U(r.time, 999);
	CHECK_EQ_U(r.addr, 0x7ffd0000beefull);
	CHECK_EQ_U(r.cpu, 3);
	CHECK_EQ_U(r.period, 20011);
	CHECK_EQ_U(r.weight, 0x123);
	CHECK_EQ_U(r.data_src, 0x68100142ull);
	CHECK_EQ_U(r.nregs, 0);
}

static void test_pebs_weight_struct(void)
{
	struct perf_sample_fmt f = {
		.sample_type = (PEBS_SET & ~(uint64_t)PERF_SAMPLE_WEIGHT) | PERF_SAMPLE_WEIGHT_STRUCT };
	struct bld b;
	size_t n = pebs_sample(&b, f.sample_type);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.weight, 0x123);
	CHECK_EQ_U(r.weight_var2, 2);
	CHECK_EQ_U(r.weight_var3, 3);
	CHECK_EQ_U(r.data_src, 0x68100142ull);
}

/* Every field we know, in kernel order, with values that would land in the
 * wrong place if any skip were off by one word. */
static void test_every_field(void)
{
	uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	              PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
	              PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
	              PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
	              PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION |
	              PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP |
	              PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_AUX;
	struct perf_sample_fmt f = {
		.sample_type = st, .regs_user_mask = 0x3, .regs_intr_mask = 0x7,
		.branch_sample_type = CT_BRANCH_HW_INDEX | CT_BRANCH_COUNTERS,
	};
	struct bld b;
	b_begin(&b, PERF_RECORD_SAMPLE, 0);
	b64(&b, 77);                          /* identifier */
	b64(&b, 0x1111);                      /* ip */
	b32(&b, 1); b32(&b, 2);               /* pid tid */
	b64(&b, 3);                           /* time */
	b64(&b, 0x4444);                      /* addr */
	b64(&b, 77);                          /* id */
	b64(&b, 78);                          /* stream_id */
	b32(&b, 1); b32(&b, 0);               /* cpu */
	b64(&b, 9);                           /* period */
	b64(&b, 3);                           /* callchain nr */
	b64(&b, 0xdead1); b64(&b, 0xdead2); b64(&b, 0xdead3);
	uint8_t raw[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	b32(&b, 12); bbytes(&b, raw, 12);     /* raw: 4 + 12 = 16, aligned */
	b64(&b, 2);                           /* branch nr */
	b64(&b, 0xbad0);                      /* hw_idx */
	for (int i = 0; i < 6; i++) b64(&b, 0xbad1);
	b64(&b, 0xbad2); b64(&b, 0xbad3);     /* counters[2] */
	b64(&b, PERF_SAMPLE_REGS_ABI_64);     /* regs_user */
	b64(&b, 0xaa); b64(&b, 0xbb);
	b64(&b, 16);                          /* stack_user size */
	b64(&b, 0xcafe); b64(&b, 0xcafe);
	b64(&b, 8);                           /* dyn_size */
	b64(&b, 55);                          /* weight */
	b64(&b, 0x5555);                      /* data_src */
	b64(&b, 0x77);                        /* transaction */
	b64(&b, PERF_SAMPLE_REGS_ABI_64);     /* regs_intr */
	b64(&b, 0xee); b64(&b, 0xee); b64(&b, 0xee);
	b64(&b, 0x9999000);                   /* phys_addr */
	b64(&b, 0xc6);                        /* cgroup */
	b64(&b, 4096);                        /* data_page_size */
	b64(&b, 2097152);                     /* code_page_size */
	b64(&b, 8); b64(&b, 0xa0a0);          /* aux size + data */
	size_t n = b_end(&b);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.id, 77);
	CHECK_EQ_U(r.ip, 0x1111);
	CHECK_EQ_U(r.tid, 2);
	CHECK_EQ_U(r.time, 3);
	CHECK_EQ_U(r.addr, 0x4444);
	CHECK_EQ_U(r.stream_id, 78);
	CHECK_EQ_U(r.cpu, 1);
	CHECK_EQ_U(r.period, 9);
	CHECK_EQ_U(r.raw_size, 12);
	CHECK(r.raw && memcmp(r.raw, raw, 12) == 0);
	CHECK_EQ_U(r.regs_abi, PERF_SAMPLE_REGS_ABI_64);
	CHECK_EQ_U(r.nregs, 2);
	CHECK_EQ_U(r.regs[0], 0xaa);
	CHECK_EQ_U(r.regs[1], 0xbb);
	CHECK_EQ_U(r.weight, 55);
	CHECK_EQ_U(r.data_src, 0x5555);
	CHECK_EQ_U(r.phys_addr, 0x9999000);

	/* The same record without AUX in sample_type parses the same, and
	 * truncating the AUX payload makes it malformed. */
	CHECK(perf_parse_record(&f, b.buf, n - 8, &r) == -1);
	/* Without COUNTERS the branch stack is two words shorter: the
	 * registers then come out wrong (this is why the field exists). */
	struct perf_sample_fmt f2 = f;
	f2.branch_sample_type = CT_BRANCH_HW_INDEX;
	if (perf_parse_record(&f2, b.buf, n, &r) == 0)
		CHECK(r.regs[0] != 0xaa);
}

static void test_identifier_callchain(void)
{
	/* The soft set plus IDENTIFIER and CALLCHAIN: both must be skipped. */
	struct perf_sample_fmt f = {
		.sample_type = SOFT_SET | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_CALLCHAIN,
		.regs_user_mask = 0x1 };
	struct bld b;
	b_begin(&b, PERF_RECORD_SAMPLE, 0);
	b64(&b, 0x55);                        /* identifier */
	b64(&b, 0x401000);                    /* ip */
	b32(&b, 10); b32(&b, 11);
	b64(&b, 12);
	b32(&b, 0); b32(&b, 0);
	b64(&b, 4);                           /* callchain */
	b64(&b, 0xfffffffffffffe00ull); b64(&b, 0x401000); b64(&b, 0x402000); b64(&b, 0x403000);
	b64(&b, PERF_SAMPLE_REGS_ABI_64);
	b64(&b, 0xabc);
	size_t n = b_end(&b);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.id, 0x55);
	CHECK_EQ_U(r.ip, 0x401000);
	CHECK_EQ_U(r.tid, 11);
	CHECK_EQ_U(r.nregs, 1);
	CHECK_EQ_U(r.regs[0], 0xabc);

	/* a callchain nr that does not fit */
	uint64_t huge = 0x2000000000000000ull;
	memcpy(b.buf + 8 + 8 + 8 + 8 + 8 + 8, &huge, 8);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == -1);
}

static void test_raw_bounds(void)
{
	struct perf_sample_fmt f = { .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_RAW };
	struct bld b;
	b_begin(&b, PERF_RECORD_SAMPLE, 0);
	b64(&b, 0x1);
	b32(&b, 1000);                        /* claims 1000 bytes */
	b32(&b, 0);
	size_t n = b_end(&b);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == -1);
}

static void test_read_refused(void)
{
	struct perf_sample_fmt f = { .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_READ };
	struct bld b;
	b_begin(&b, PERF_RECORD_SAMPLE, 0);
	b64(&b, 1); b64(&b, 2);
	size_t n = b_end(&b);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, n, &r) == -1);
}

static void test_header_size_checks(void)
{
	struct perf_sample_fmt f = { .sample_type = PERF_SAMPLE_IP };
	struct bld b;
	b_begin(&b, PERF_RECORD_SAMPLE, 0);
	b64(&b, 1);
	size_t n = b_end(&b);
	struct perf_rec r;
	CHECK(perf_parse_record(&f, b.buf, 4, &r) == -1);      /* shorter than a header */
	CHECK(perf_parse_record(&f, b.buf, n - 1, &r) == -1);  /* header.size > size */
	uint16_t zero = 0;
	memcpy(b.buf + 6, &zero, 2);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == -1);      /* header.size 0 */
	/* A longer buffer than header.size: only header.size is used. */
	b_end(&b);
	CHECK(perf_parse_record(&f, b.buf, sizeof b.buf, &r) == 0);
	CHECK_EQ_U(r.ip, 1);
}

/* ---- LOST / THROTTLE ------------------------------------------------------ */

static void trailer(struct bld *b)
{
	/* sample_id for SOFT_SET | IDENTIFIER: tid, time, cpu, identifier */
	b32(b, 500); b32(b, 501);
	b64(b, 777000);
	b32(b, 1); b32(b, 0);
	b64(b, 0x99);
}

static void test_lost(void)
{
	struct perf_sample_fmt f = { .sample_type = SOFT_SET, .regs_user_mask = SOFT_REGS };
	struct bld b;
	struct perf_rec r;

	b_begin(&b, PERF_RECORD_LOST, 0);
	b64(&b, 0x42); b64(&b, 17);
	size_t n = b_end(&b);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_LOST);
	CHECK_EQ_U(r.id, 0x42);
	CHECK_EQ_U(r.lost, 17);
	CHECK_EQ_U(r.tid, 0);

	/* with sample_id_all */
	f.sample_type |= PERF_SAMPLE_IDENTIFIER;
	f.sample_id_all = true;
	b_begin(&b, PERF_RECORD_LOST, 0);
	b64(&b, 0x42); b64(&b, 18);
	trailer(&b);
	n = b_end(&b);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_LOST);
	CHECK_EQ_U(r.id, 0x42);
	CHECK_EQ_U(r.lost, 18);
	CHECK_EQ_U(r.pid, 500);
	CHECK_EQ_U(r.tid, 501);
	CHECK_EQ_U(r.time, 777000);
	CHECK_EQ_U(r.cpu, 1);
	/* trailer missing: malformed */
	CHECK(perf_parse_record(&f, b.buf, n - 8, &r) == -1);
	uint16_t sz = 8 + 16;
	memcpy(b.buf + 6, &sz, 2);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == -1);

	/* PERF_RECORD_LOST_SAMPLES (13): u64 lost + trailer */
	b_begin(&b, 13, 0);
	b64(&b, 5);
	trailer(&b);
	n = b_end(&b);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_LOST);
	CHECK_EQ_U(r.lost, 5);
	CHECK_EQ_U(r.id, 0x99);
	CHECK_EQ_U(r.tid, 501);
}

static void test_throttle(void)
{
	struct perf_sample_fmt f = { .sample_type = PEBS_SET };
	struct bld b;
	struct perf_rec r;

	b_begin(&b, PERF_RECORD_THROTTLE, 0);
	b64(&b, 1000); b64(&b, 3); b64(&b, 4);
	size_t n = b_end(&b);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_THROTTLE);
	CHECK_EQ_U(r.time, 1000);
	CHECK_EQ_U(r.id, 3);
	CHECK_EQ_U(r.stream_id, 4);
	CHECK(perf_parse_record(&f, b.buf, n - 8, &r) == -1);

	f.sample_type = SOFT_SET | PERF_SAMPLE_IDENTIFIER;
	f.sample_id_all = true;
	b_begin(&b, PERF_RECORD_UNTHROTTLE, 0);
	b64(&b, 2000); b64(&b, 3); b64(&b, 4);
	trailer(&b);
	n = b_end(&b);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_UNTHROTTLE);
	CHECK_EQ_U(r.time, 2000);   /* body time wins over the trailer's */
	CHECK_EQ_U(r.id, 3);
	CHECK_EQ_U(r.tid, 501);
	CHECK_EQ_U(r.cpu, 1);

	/* other record types are reported as OTHER */
	b_begin(&b, PERF_RECORD_COMM, 0);
	b32(&b, 1); b32(&b, 1); b64(&b, 0x656d616e);
	n = b_end(&b);
	CHECK(perf_parse_record(&f, b.buf, n, &r) == 0);
	CHECK_EQ_U(r.kind, PERF_REC_OTHER);
	CHECK_EQ_U(r.type, PERF_RECORD_COMM);
}

/* ---- rings ------------------------------------------------------------- */

#define RING 4096

static struct fake_ring {
	struct perf_event_mmap_page meta;
	uint8_t data[RING];
} ring;

static uint8_t scratch[65536];

/* Append bytes at data_head (wrapping). */
static void ring_put(const void *p, size_t n)
{
	const uint8_t *s = p;
	for (size_t i = 0; i < n; i++)
		ring.data[(ring.meta.data_head + i) & (RING - 1)] = s[i];
	ring.meta.data_head += n;
}

static void ring_reset(uint64_t at)
{
	memset(&ring, 0xa5, sizeof ring);
	memset(&ring.meta, 0, sizeof ring.meta);
	ring.meta.data_head = ring.meta.data_tail = at;
}

struct collect {
	int n;
	struct perf_rec r[64];
};

static void collect_cb(void *ctx, const struct perf_rec *r)
{
	struct collect *c = ctx;
	if (c->n < 64)
		c->r[c->n] = *r;
	c->n++;
}

static void test_ring_basic(void)
{
	struct perf_sample_fmt f = { .sample_type = SOFT_SET, .regs_user_mask = SOFT_REGS };
	struct bld b;
	struct collect c = { 0 };

	ring_reset(0);
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), 0);
	for (int i = 0; i < 10; i++) {
		size_t n = soft_sample(&b, 0x400000 + (uint64_t)i, 9, (uint64_t)i, 0);
		ring_put(b.buf, n);
	}
	b_begin(&b, PERF_RECORD_LOST, 0);
	b64(&b, 1); b64(&b, 33);
	ring_put(b.buf, b_end(&b));
	int got = perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                          collect_cb, &c);
	CHECK_EQ_U(got, 11);
	CHECK_EQ_U(c.n, 11);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);
	CHECK_EQ_U(c.r[0].ip, 0x400000);
	CHECK_EQ_U(c.r[9].ip, 0x400009);
	CHECK_EQ_U(c.r[9].time, 9);
	CHECK_EQ_U(c.r[10].kind, PERF_REC_LOST);
	CHECK_EQ_U(c.r[10].lost, 33);
	/* draining again delivers nothing */
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), 0);
}

static void test_ring_wrap(void)
{
	struct perf_sample_fmt f = { .sample_type = SOFT_SET, .regs_user_mask = SOFT_REGS };
	struct bld b;
	size_t n = soft_sample(&b, 0, 0, 0, 0); /* 88 bytes */
	/* Start 40 bytes before the end of the ring (and many laps in, so the
	 * 64-bit head/tail are far from 0): the first record wraps. */
	uint64_t start = 7 * (uint64_t)RING + RING - 40;
	ring_reset(start);
	for (int i = 0; i < 3; i++) {
		n = soft_sample(&b, 0x500000 + (uint64_t)i, 77, 1000 + (uint64_t)i, 1);
		ring_put(b.buf, n);
	}
	struct collect c = { 0 };
	int got = perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                          collect_cb, &c);
	CHECK_EQ_U(got, 3);
	CHECK_EQ_U(c.r[0].ip, 0x500000);
	CHECK_EQ_U(c.r[0].tid, 77);
	CHECK_EQ_U(c.r[0].regs[4], 0x1004);
	CHECK_EQ_U(c.r[1].ip, 0x500001);
	CHECK_EQ_U(c.r[2].time, 1002);
	CHECK_EQ_U(ring.meta.data_tail, start + 3 * n);

	/* a header split across the end (start 4 bytes before it) */
	start = RING - 4;
	ring_reset(start);
	n = soft_sample(&b, 0x600000, 1, 2, 0);
	ring_put(b.buf, n);
	memset(&c, 0, sizeof c);
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), 1);
	CHECK_EQ_U(c.r[0].ip, 0x600000);

	/* a wrapped record that does not fit in scratch is dropped, the next
	 * one is delivered */
	ring_reset(RING - 40);
	ring_put(b.buf, n);
	n = soft_sample(&b, 0x700000, 1, 2, 0);
	ring_put(b.buf, n);
	memset(&c, 0, sizeof c);
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, 16,
	                           collect_cb, &c), 1);
	CHECK_EQ_U(c.r[0].ip, 0x700000);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);
}

static void test_ring_malformed(void)
{
	struct perf_sample_fmt f = { .sample_type = SOFT_SET, .regs_user_mask = SOFT_REGS };
	struct bld b;
	struct collect c = { 0 };
	size_t n;

	/* size 0 after one good record: must not loop */
	ring_reset(100 * 8);
	n = soft_sample(&b, 0x1, 1, 1, 0);
	ring_put(b.buf, n);
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = 0, .size = 0 };
	ring_put(&h, sizeof h);
	uint64_t pad = 0;
	ring_put(&pad, 8);
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), (unsigned long long)-1);
	CHECK_EQ_U(c.n, 1);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);

	/* huge size (larger than what is available and than the ring) */
	ring_reset(0);
	h.size = 0xfff8;
	ring_put(&h, sizeof h);
	ring_put(&pad, 8);
	memset(&c, 0, sizeof c);
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), (unsigned long long)-1);
	CHECK_EQ_U(c.n, 0);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);

	/* size not a multiple of 8 */
	ring_reset(0);
	h.size = 12;
	ring_put(&h, sizeof h);
	ring_put(&pad, 8);
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), (unsigned long long)-1);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);

	/* a sample whose fields overrun its size */
	ring_reset(0);
	b_begin(&b, PERF_RECORD_SAMPLE, 0);
	b64(&b, 1);
	ring_put(b.buf, b_end(&b));
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), (unsigned long long)-1);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);

	/* head more than a ring ahead of tail */
	ring_reset(0);
	ring.meta.data_head = 3 * RING;
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), (unsigned long long)-1);
	CHECK_EQ_U(ring.meta.data_tail, 3 * RING);

	/* partial header (4 bytes available) */
	ring_reset(0);
	ring.meta.data_head = 4;
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch,
	                           collect_cb, &c), (unsigned long long)-1);
	CHECK_EQ_U(ring.meta.data_tail, 4);

	/* bad arguments */
	CHECK_EQ_U(perf_ring_drain(&ring.meta, ring.data, 3000, &f, scratch, sizeof scratch,
	                           collect_cb, &c), (unsigned long long)-1);
}

/* ---- a real software-event ring (no PMU needed) ------------------------- */

static void real_cb(void *ctx, const struct perf_rec *r)
{
	struct collect *c = ctx;
	if (r->kind == PERF_REC_SAMPLE && c->n < 64)
		c->r[c->n++] = *r;
}

static void test_real_task_clock_ring(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 200000; /* 0.2 ms of CPU time */
	a.sample_type = SOFT_SET;
	a.sample_regs_user = SOFT_REGS;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		char why[128];
		snprintf(why, sizeof why, "perf_event_open(task-clock) failed: %s", strerror(errno));
		SKIP(why);
		return;
	}
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)pg * (1 + 8);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		SKIP("mmap of the perf ring failed");
		return;
	}
	struct perf_event_mmap_page *meta = m;
	uint8_t *data = (uint8_t *)m + pg;
	size_t dsz = (size_t)pg * 8;
	if (meta->data_size)
		dsz = (size_t)meta->data_size;
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		munmap(m, len);
		close(fd);
		SKIP("PERF_EVENT_IOC_ENABLE failed");
		return;
	}
	volatile uint64_t x = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 50000000L);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);

	struct perf_sample_fmt f = { .sample_type = SOFT_SET, .regs_user_mask = SOFT_REGS,
	                             .sample_id_all = true };
	struct collect c = { 0 };
	int got = perf_ring_drain(meta, data, dsz, &f, scratch, sizeof scratch, real_cb, &c);
	CHECK(got > 0);
	CHECK(c.n > 0);
	CHECK_EQ_U(meta->data_tail, meta->data_head);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < c.n; i++) {
		CHECK_EQ_U(c.r[i].tid, (uint32_t)tid);
		CHECK_EQ_U(c.r[i].pid, (uint32_t)getpid());
		CHECK(c.r[i].ip != 0);
		if (c.r[i].regs_abi) {
			CHECK_EQ_U(c.r[i].regs_abi, PERF_SAMPLE_REGS_ABI_64);
			CHECK_EQ_U(c.r[i].nregs, 5);
			CHECK_EQ_U(c.r[i].regs[3], c.r[i].ip); /* IP register == sample ip */
		}
		if (i)
			CHECK(c.r[i].time >= c.r[i - 1].time);
	}
	CHECK(c.r[0].time >= (uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec);
	munmap(m, len);
	close(fd);
}

int main(void)
{
	RUN(test_soft_sample);
	RUN(test_regs_abi_none);
	RUN(test_pebs_sample);
	RUN(test_pebs_weight_struct);
	RUN(test_every_field);
	RUN(test_identifier_callchain);
	RUN(test_raw_bounds);
	RUN(test_read_refused);
	RUN(test_header_size_checks);
	RUN(test_lost);
	RUN(test_throttle);
	RUN(test_ring_basic);
	RUN(test_ring_wrap);
	RUN(test_ring_malformed);
	RUN(test_real_task_clock_ring);
	return check_summary();
}
