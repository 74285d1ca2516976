/* Hardware samplers' conversion (record/common/pmu_sample.c) without a PMU:
 * synthetic perf rings holding PEBS-style samples (two events, told apart
 * by PERF_SAMPLE_IDENTIFIER) and IBS raw samples, drained with
 * perf_ring_drain through pmu_conv_on_rec, as the runtime drains a real
 * ring.  Access lengths and kinds come from decoding real instruction
 * bytes placed in a buffer of this process, the samples' ip pointing there. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "commtrace.h"
#include "ibs.h"
#include "perf_ring.h"
#include "pmu.h"
#include "pmu_sample.h"

#ifdef HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#ifndef PERF_RECORD_LOST_SAMPLES
#define PERF_RECORD_LOST_SAMPLES 13
#endif

/* ---- instructions ---------------------------------------------------------- */

/* Each instruction at a 16-byte slot, preceded by int3 padding. */
enum {
	I_LOAD4,      /* mov eax, [rbp-8]            8b 45 f8 */
	I_STORE4,     /* mov [rax+rcx*4+0x10], edx   89 54 88 10 */
	I_STORE8,     /* mov [rdi], rax              48 89 07 */
	I_LOCKADD,    /* lock add [rdi], eax         f0 01 07 */
	I_RMW,        /* add [rdi], eax              01 07 */
	I_VLOAD32,    /* vmovdqu ymm0, [rdi]         c5 fe 6f 07 */
	I_FSLOAD,     /* mov eax, fs:[rax]           64 8b 00 */
	I_NOMEM,      /* add eax, ebx                01 d8 */
	I_LOAD2,      /* movzx eax, word [rsi]       0f b7 06 */
	I_STORE1,     /* mov byte [rdi], 1           c6 07 01 */
	I_COUNT
};
static const struct { uint8_t n; uint8_t b[15]; } insn[I_COUNT] = {
	[I_LOAD4] = { 3, { 0x8b, 0x45, 0xf8 } },
	[I_STORE4] = { 4, { 0x89, 0x54, 0x88, 0x10 } },
	[I_STORE8] = { 3, { 0x48, 0x89, 0x07 } },
	[I_LOCKADD] = { 3, { 0xf0, 0x01, 0x07 } },
	[I_RMW] = { 2, { 0x01, 0x07 } },
	[I_VLOAD32] = { 4, { 0xc5, 0xfe, 0x6f, 0x07 } },
	[I_FSLOAD] = { 3, { 0x64, 0x8b, 0x00 } },
	[I_NOMEM] = { 2, { 0x01, 0xd8 } },
	[I_LOAD2] = { 3, { 0x0f, 0xb7, 0x06 } },
	[I_STORE1] = { 3, { 0xc6, 0x07, 0x01 } },
};
#define SLOT 32
#define SLOT_AT 16     /* instruction offset in its slot: 16 bytes of int3 before */
static uint8_t code[I_COUNT * SLOT + 64];
static uint8_t *noaccess;   /* a PROT_NONE page: an unreadable ip */

static void code_setup(void)
{
	memset(code, 0xcc, sizeof code);
	for (int i = 0; i < I_COUNT; i++)
		memcpy(code + i * SLOT + SLOT_AT, insn[i].b, insn[i].n);
	if (!noaccess) {
		void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		noaccess = p == MAP_FAILED ? NULL : p;
	}
}
static uint64_t ip_of(int i) { return (uint64_t)(uintptr_t)(code + i * SLOT + SLOT_AT); }
static uint64_t ip_after(int i) { return ip_of(i) + insn[i].n; }

/* ---- synthetic records -------------------------------------------------------- */

struct smp {
	uint16_t misc;
	uint64_t id, ip, time, addr, period, weight, data_src;
	uint32_t pid, tid, cpu;
	const void *raw;
	uint32_t raw_size;
};

struct bld {
	uint8_t b[1024];
	size_t n;
};
static void put64(struct bld *b, uint64_t v) { memcpy(b->b + b->n, &v, 8); b->n += 8; }
static void put32x2(struct bld *b, uint32_t x, uint32_t y) { memcpy(b->b + b->n, &x, 4); memcpy(b->b + b->n + 4, &y, 4); b->n += 8; }
static void begin(struct bld *b, uint32_t type, uint16_t misc)
{
	memset(b, 0, sizeof *b);
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };
	memcpy(b->b, &h, sizeof h);
	b->n = sizeof h;
}
static void end(struct bld *b)
{
	uint16_t sz = (uint16_t)b->n;
	memcpy(b->b + 6, &sz, 2);
}

/* A PERF_RECORD_SAMPLE with the fields of sample_type st, in the kernel's
 * order (perf_output_sample). */
static void sample(struct bld *b, uint64_t st, const struct smp *s)
{
	begin(b, PERF_RECORD_SAMPLE, s->misc ? s->misc : PERF_RECORD_MISC_USER);
	if (st & PERF_SAMPLE_IDENTIFIER) put64(b, s->id);
	if (st & PERF_SAMPLE_IP) put64(b, s->ip);
	if (st & PERF_SAMPLE_TID) put32x2(b, s->pid, s->tid);
	if (st & PERF_SAMPLE_TIME) put64(b, s->time);
	if (st & PERF_SAMPLE_ADDR) put64(b, s->addr);
	if (st & PERF_SAMPLE_ID) put64(b, s->id);
	if (st & PERF_SAMPLE_STREAM_ID) put64(b, s->id);
	if (st & PERF_SAMPLE_CPU) put32x2(b, s->cpu, 0);
	if (st & PERF_SAMPLE_PERIOD) put64(b, s->period);
	if (st & PERF_SAMPLE_RAW) {
		uint32_t padded = (uint32_t)(((4 + s->raw_size + 7) & ~7u) - 4);
		memcpy(b->b + b->n, &padded, 4);
		memset(b->b + b->n + 4, 0, padded);
		memcpy(b->b + b->n + 4, s->raw, s->raw_size);
		b->n += 4 + padded;
	}
	if (st & PERF_SAMPLE_WEIGHT_STRUCT) put64(b, s->weight);
	else if (st & PERF_SAMPLE_WEIGHT) put64(b, s->weight);
	if (st & PERF_SAMPLE_DATA_SRC) put64(b, s->data_src);
	end(b);
}

/* sample_id trailer of non-sample records (sample_id_all) */
static void sample_id(struct bld *b, uint64_t st, uint64_t time, uint64_t id)
{
	if (st & PERF_SAMPLE_TID) put32x2(b, 7, 8);
	if (st & PERF_SAMPLE_TIME) put64(b, time);
	if (st & PERF_SAMPLE_ID) put64(b, id);
	if (st & PERF_SAMPLE_STREAM_ID) put64(b, id);
	if (st & PERF_SAMPLE_CPU) put32x2(b, 1, 0);
	if (st & PERF_SAMPLE_IDENTIFIER) put64(b, id);
}

static void lost(struct bld *b, uint64_t st, uint64_t id, uint64_t count, uint64_t time)
{
	begin(b, PERF_RECORD_LOST, 0);
	put64(b, id);
	put64(b, count);
	sample_id(b, st, time, id);
	end(b);
}
static void lost_samples(struct bld *b, uint64_t st, uint64_t count, uint64_t time)
{
	begin(b, PERF_RECORD_LOST_SAMPLES, 0);
	put64(b, count);
	sample_id(b, st, time, 0);
	end(b);
}
static void throttle(struct bld *b, uint64_t st, uint32_t type, uint64_t id, uint64_t time)
{
	begin(b, type, 0);
	put64(b, time);
	put64(b, id);
	put64(b, id);
	sample_id(b, st, time, id);
	end(b);
}

/* ---- a ring and a sink ---------------------------------------------------------------- */

#define RING 4096
static struct {
	struct perf_event_mmap_page meta;
	uint8_t data[RING];
} ring;

static void ring_reset(uint64_t at)
{
	memset(&ring, 0, sizeof ring);
	ring.meta.data_head = ring.meta.data_tail = at;
}
static void ring_put(const struct bld *b)
{
	for (size_t i = 0; i < b->n; i++)
		ring.data[(ring.meta.data_head + i) & (RING - 1)] = b->b[i];
	ring.meta.data_head += b->n;
}

#define MAXS 64
static struct sink {
	int ns, nl;
	struct pmu_sample s[MAXS];
	struct ct_record l[MAXS];
} sink;

static void on_sample(void *ctx, const struct pmu_sample *s)
{
	struct sink *k = ctx;
	if (k->ns < MAXS)
		k->s[k->ns++] = *s;
}
static void on_lost(void *ctx, const struct ct_record *l)
{
	struct sink *k = ctx;
	if (k->nl < MAXS)
		k->l[k->nl++] = *l;
}

static uint8_t scratch[65536];

/* Drain the ring through the converter into the sink. */
static int drain(struct pmu_conv *c, const struct perf_sample_fmt *f)
{
	memset(&sink, 0, sizeof sink);
	c->on_sample = on_sample;
	c->on_lost = on_lost;
	c->ctx = &sink;
	return perf_ring_drain(&ring.meta, ring.data, RING, f, scratch, sizeof scratch,
	                       pmu_conv_on_rec, c);
}

/* ---- PEBS --------------------------------------------------------------------------------- */

#define PEBS_ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                 PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC | \
                 PERF_SAMPLE_WEIGHT_STRUCT)
#define ID_LD 0x101
#define ID_ST 0x202
/* data_src: mem_op LOAD (2) / STORE (4) in bits 0-4, level bits above */
#define DS_LOAD 0x68100142ull
#define DS_STORE 0x000000244ull

static struct perf_sample_fmt pebs_fmt(uint64_t st)
{
	struct perf_sample_fmt f;
	memset(&f, 0, sizeof f);
	f.sample_type = st;
	f.sample_id_all = true;
	return f;
}

static void pebs_conv(struct pmu_conv *c)
{
	pmu_conv_init(c, PMU_CONV_PEBS);
	pmu_conv_add_event(c, ID_LD, PMU_KIND_LOAD, 20011);
	pmu_conv_add_event(c, ID_ST, PMU_KIND_STORE, 30011);
}

static struct smp pebs(uint64_t id, int ins, uint64_t addr)
{
	struct smp s = {
		.misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_EXACT_IP,
		.id = id, .ip = ip_of(ins), .time = 1000000 + (uint64_t)ins, .addr = addr,
		.period = id == ID_LD ? 20011 : 30011,
		.weight = id == ID_LD ? 0x0003000200000123ull : 0, /* var1 0x123, var2 2, var3 3 */
		.data_src = id == ID_LD ? DS_LOAD : DS_STORE,
		.pid = 100, .tid = 101, .cpu = 3,
	};
	return s;
}

static void test_pebs_load_and_store(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	struct bld b;
	struct smp s1 = pebs(ID_LD, I_LOAD4, 0x7f0000001008ull);
	struct smp s2 = pebs(ID_ST, I_STORE4, 0x7f0000002010ull);
	sample(&b, PEBS_ST, &s1); ring_put(&b);
	sample(&b, PEBS_ST, &s2); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 2);
	CHECK_EQ_U(sink.ns, 2);
	const struct pmu_sample *a = &sink.s[0], *z = &sink.s[1];
	CHECK_EQ_U(a->skip, 0);
	CHECK_EQ_U(a->acc.addr, 0x7f0000001008ull);
	CHECK_EQ_U(a->ip, ip_of(I_LOAD4));
	CHECK_EQ_U(a->time, 1000000 + I_LOAD4);
	CHECK_EQ_U(a->cpu, 3);
	CHECK_EQ_U(a->period, 20011);
	CHECK_EQ_U(a->data_src, DS_LOAD);
	CHECK_EQ_U(a->weight, 0x123);
	CHECK_EQ_U(a->acc.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(a->acc.len, 4);
	CHECK_EQ_U(a->acc.flags, CT_SAMPLE_EXACT);
	CHECK_EQ_U(a->extra_flags, CT_SAMPLE_HAS_DATA_SRC | CT_SAMPLE_HAS_WEIGHT);

	CHECK_EQ_U(z->skip, 0);
	CHECK_EQ_U(z->acc.addr, 0x7f0000002010ull);
	CHECK_EQ_U(z->ip, ip_of(I_STORE4));
	CHECK_EQ_U(z->period, 30011);
	CHECK_EQ_U(z->acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(z->acc.len, 4);
	CHECK_EQ_U(z->acc.flags, CT_SAMPLE_EXACT);
	CHECK_EQ_U(z->weight, 0);                             /* stores: no latency */
	CHECK_EQ_U(z->extra_flags, CT_SAMPLE_HAS_DATA_SRC);
	CHECK_EQ_U(c.st.samples, 2);
	CHECK_EQ_U(c.st.usable, 2);
	CHECK_EQ_U(c.st.kind_mismatch, 0);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);
}

/* Lengths and kinds of several instructions, each through the ring. */
static void test_pebs_lengths_and_kinds(void)
{
	code_setup();
	static const struct { int ins; uint64_t id; uint8_t len, kind, flags; } t[] = {
		{ I_STORE8, ID_ST, 8, CT_ACCESS_STORE, CT_SAMPLE_EXACT },
		{ I_LOCKADD, ID_ST, 4, CT_ACCESS_ATOMIC, CT_SAMPLE_EXACT },
		{ I_LOCKADD, ID_LD, 4, CT_ACCESS_ATOMIC, CT_SAMPLE_EXACT },  /* counted by both events */
		{ I_RMW, ID_LD, 4, CT_ACCESS_LOAD, CT_SAMPLE_EXACT },        /* the load part of an RMW */
		{ I_RMW, ID_ST, 4, CT_ACCESS_STORE, CT_SAMPLE_EXACT },
		{ I_VLOAD32, ID_LD, 32, CT_ACCESS_LOAD, CT_SAMPLE_EXACT },
		{ I_FSLOAD, ID_LD, 4, CT_ACCESS_LOAD, CT_SAMPLE_EXACT | CT_SAMPLE_FS_BASED },
		{ I_LOAD2, ID_LD, 2, CT_ACCESS_LOAD, CT_SAMPLE_EXACT },
		{ I_STORE1, ID_ST, 1, CT_ACCESS_STORE, CT_SAMPLE_EXACT },
	};
	size_t n = sizeof t / sizeof t[0];
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	for (size_t i = 0; i < n; i++) {
		struct bld b;
		struct smp s = pebs(t[i].id, t[i].ins, 0x7f0000010000ull + i * 64);
		sample(&b, PEBS_ST, &s);
		ring_put(&b);
	}
	CHECK_EQ_U(drain(&c, &f), n);
	CHECK_EQ_U(sink.ns, n);
	for (size_t i = 0; i < n && i < (size_t)sink.ns; i++) {
		const struct pmu_sample *s = &sink.s[i];
		if (s->skip || s->acc.len != t[i].len || s->acc.kind != t[i].kind ||
		    s->acc.flags != t[i].flags || s->acc.addr != 0x7f0000010000ull + i * 64)
			printf("  case %zu: skip %d len %u kind %u flags %#x\n", i, s->skip, s->acc.len,
			       s->acc.kind, s->acc.flags);
		CHECK_EQ_U(s->skip, 0);
		CHECK_EQ_U(s->acc.len, t[i].len);
		CHECK_EQ_U(s->acc.kind, t[i].kind);
		CHECK_EQ_U(s->acc.flags, t[i].flags);
		CHECK_EQ_U(s->acc.addr, 0x7f0000010000ull + i * 64);
	}
	CHECK_EQ_U(c.st.kind_mismatch, 0);
}

/* A store event on an instruction that only reads: the PMU's kind wins, the
 * disagreement is counted. */
static void test_pebs_kind_mismatch(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	struct bld b;
	struct smp s = pebs(ID_ST, I_LOAD4, 0x7f0000003000ull);
	sample(&b, PEBS_ST, &s);
	ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 1);
	CHECK_EQ_U(sink.ns, 1);
	CHECK_EQ_U(sink.s[0].skip, 0);
	CHECK_EQ_U(sink.s[0].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(sink.s[0].acc.len, 4);
	CHECK_EQ_U(c.st.kind_mismatch, 1);
}

/* PEBS could not capture the address: skipped with a reason; and kernel
 * ips or addresses. */
static void test_pebs_skips(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	struct bld b;
	struct smp s = pebs(ID_LD, I_LOAD4, 0);
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(ID_LD, I_LOAD4, 0xffff888000001000ull);           /* kernel address */
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(ID_ST, I_STORE4, 0x7f0000001000ull);
	s.ip = 0xffffffff81000000ull;                              /* kernel ip */
	s.misc = PERF_RECORD_MISC_KERNEL | PERF_RECORD_MISC_EXACT_IP;
	sample(&b, PEBS_ST, &s); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 3);
	CHECK_EQ_U(sink.ns, 3);
	CHECK_EQ_U(sink.s[0].skip, CT_SKIP_NOT_LOAD_STORE);
	CHECK_EQ_U(sink.s[1].skip, CT_SKIP_KERNEL);
	CHECK_EQ_U(sink.s[2].skip, CT_SKIP_KERNEL);
	CHECK_EQ_U(sink.s[0].time, 1000000 + I_LOAD4);             /* skips keep their time */
	CHECK_EQ_U(c.st.zero_addr, 1);
	CHECK_EQ_U(c.st.usable, 0);
	CHECK_EQ_U(c.st.samples, 3);
}

/* precise_ip 1: the ip is the instruction after the access.  The
 * instruction ending there is found (the longest candidate: "88 10",
 * mov [rax], dl, also ends there), flagged PREV_INSN. */
static void test_pebs_ip_after(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	struct bld b;
	struct smp s = pebs(ID_ST, I_STORE4, 0x7f0000004000ull);
	s.ip = ip_after(I_STORE4);
	s.misc = PERF_RECORD_MISC_USER;                             /* no EXACT_IP */
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(ID_LD, I_LOAD4, 0x7f0000004100ull);
	s.ip = ip_after(I_LOAD4);
	s.misc = PERF_RECORD_MISC_USER;
	sample(&b, PEBS_ST, &s); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 2);
	CHECK_EQ_U(sink.ns, 2);
	CHECK_EQ_U(sink.s[0].skip, 0);
	CHECK_EQ_U(sink.s[0].ip, ip_after(I_STORE4));             /* the PMU's ip is kept */
	CHECK_EQ_U(sink.s[0].acc.len, 4);
	CHECK_EQ_U(sink.s[0].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(sink.s[0].acc.flags, CT_SAMPLE_EXACT | CT_SAMPLE_PREV_INSN);
	CHECK_EQ_U(sink.s[1].acc.len, 4);
	CHECK_EQ_U(sink.s[1].acc.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(sink.s[1].acc.flags, CT_SAMPLE_EXACT | CT_SAMPLE_PREV_INSN);
	CHECK_EQ_U(c.st.not_exact_ip, 2);

	/* the decoder alone, both ways */
	struct dec_access a;
	int prev = -1;
	CHECK_EQ_U(pmu_decode_at(ip_of(I_VLOAD32), true, PMU_KIND_LOAD, &a, &prev), 0);
	CHECK_EQ_U(a.len, 32);
	CHECK_EQ_U(prev, 0);
	CHECK_EQ_U(pmu_decode_at(ip_after(I_VLOAD32), false, PMU_KIND_LOAD, &a, &prev), 0);
	CHECK_EQ_U(a.len, 32);
	CHECK_EQ_U(prev, 1);
	CHECK_EQ_U(a.addr, 0);
}

/* The instruction cannot be decoded (unreadable ip, no memory operand):
 * the PMU's address and event kind are still good, the length is unknown;
 * with no event kind either, the sample is skipped with the decoder's
 * reason. */
static void test_pebs_undecodable(void)
{
	code_setup();
	if (!noaccess) {
		SKIP("cannot map a PROT_NONE page");
		return;
	}
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	struct bld b;
	struct smp s = pebs(ID_LD, I_LOAD4, 0x7f0000005000ull);
	s.ip = (uint64_t)(uintptr_t)noaccess + 16;
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(ID_ST, I_NOMEM, 0x7f0000005040ull);
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(0x999, I_NOMEM, 0x7f0000005080ull);              /* unknown id */
	s.data_src = 0x1;                                          /* mem_op NA */
	sample(&b, PEBS_ST, &s); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 3);
	CHECK_EQ_U(sink.ns, 3);
	CHECK_EQ_U(sink.s[0].skip, 0);
	CHECK_EQ_U(sink.s[0].acc.len, 0);
	CHECK_EQ_U(sink.s[0].acc.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(sink.s[0].acc.addr, 0x7f0000005000ull);
	CHECK_EQ_U(sink.s[0].acc.flags, CT_SAMPLE_EXACT);
	CHECK_EQ_U(sink.s[1].skip, 0);
	CHECK_EQ_U(sink.s[1].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(sink.s[1].acc.len, 0);
	CHECK_EQ_U(sink.s[2].skip, CT_SKIP_NO_MEMORY_OPERAND);
	CHECK_EQ_U(c.st.len_unknown, 2);
	CHECK_EQ_U(c.st.unknown_id, 1);

	struct dec_access a;
	CHECK_EQ_U(pmu_decode_at((uint64_t)(uintptr_t)noaccess + 16, true, PMU_KIND_LOAD, &a, NULL),
	           CT_SKIP_UNREADABLE_IP);
	CHECK_EQ_U(pmu_decode_at(16, true, PMU_KIND_LOAD, &a, NULL), CT_SKIP_UNREADABLE_IP);
	CHECK_EQ_U(pmu_decode_at(0xffffffff81000000ull, true, PMU_KIND_LOAD, &a, NULL), CT_SKIP_KERNEL);
	/* ip at the start of a readable page after an unreadable one: the
	 * backward search has no bytes */
	CHECK(pmu_decode_at((uint64_t)(uintptr_t)noaccess + 4096, false, PMU_KIND_LOAD, &a, NULL) != 0);
}

/* Events of an expert spec without a known kind: data_src.mem_op decides,
 * else the decoder. */
static void test_pebs_kind_from_data_src(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pmu_conv_init(&c, PMU_CONV_PEBS);
	pmu_conv_add_event(&c, 0x33, PMU_KIND_UNKNOWN, 1000);
	ring_reset(0);
	struct bld b;
	struct smp s = pebs(0x33, I_STORE8, 0x7f0000006000ull);
	s.data_src = DS_STORE;
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(0x33, I_STORE8, 0x7f0000006040ull);
	s.data_src = 0;                                            /* nothing: the decoder says store */
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(0x33, I_LOAD2, 0x7f0000006080ull);
	s.data_src = DS_LOAD;
	sample(&b, PEBS_ST, &s); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 3);
	CHECK_EQ_U(sink.ns, 3);
	CHECK_EQ_U(sink.s[0].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(sink.s[0].acc.len, 8);
	CHECK_EQ_U(sink.s[1].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(sink.s[1].extra_flags & CT_SAMPLE_HAS_DATA_SRC, 0);
	CHECK_EQ_U(sink.s[2].acc.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(sink.s[2].acc.len, 2);
}

/* Plain WEIGHT, no PERIOD and no IDENTIFIER but ID: the event's own period;
 * an unknown event: period 0 and kind from the decoder. */
static void test_pebs_other_formats(void)
{
	code_setup();
	uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
	              PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC;
	struct perf_sample_fmt f = pebs_fmt(st);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(RING - 24);                                     /* the first record wraps */
	struct bld b;
	struct smp s = pebs(ID_LD, I_LOAD4, 0x7f0000007000ull);
	s.weight = 77;
	sample(&b, st, &s); ring_put(&b);
	s = pebs(ID_ST, I_STORE1, 0x7f0000007040ull);
	s.weight = 0;
	sample(&b, st, &s); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 2);
	CHECK_EQ_U(sink.ns, 2);
	CHECK_EQ_U(sink.s[0].period, 20011);
	CHECK_EQ_U(sink.s[0].weight, 77);
	CHECK_EQ_U(sink.s[0].extra_flags, CT_SAMPLE_HAS_DATA_SRC | CT_SAMPLE_HAS_WEIGHT);
	CHECK_EQ_U(sink.s[0].acc.len, 4);
	CHECK_EQ_U(sink.s[1].period, 30011);
	CHECK_EQ_U(sink.s[1].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(sink.s[1].acc.len, 1);
	CHECK_EQ_U(sink.s[1].extra_flags, CT_SAMPLE_HAS_DATA_SRC);
}

/* Lost and throttle notifications become LOST records with their reason. */
static void test_lost_and_throttle(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	struct bld b;
	lost(&b, PEBS_ST, ID_LD, 17, 5000); ring_put(&b);
	lost_samples(&b, PEBS_ST, 4, 6000); ring_put(&b);
	throttle(&b, PEBS_ST, PERF_RECORD_THROTTLE, ID_ST, 7000); ring_put(&b);
	throttle(&b, PEBS_ST, PERF_RECORD_UNTHROTTLE, ID_ST, 8000); ring_put(&b);
	struct smp s = pebs(ID_LD, I_LOAD4, 0x7f0000008000ull);
	sample(&b, PEBS_ST, &s); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 5);
	CHECK_EQ_U(sink.nl, 3);
	CHECK_EQ_U(sink.ns, 1);
	CHECK_EQ_U(sink.l[0].type, CT_REC_LOST);
	CHECK_EQ_U(sink.l[0].u.lost.reason, CT_LOST_PMU);
	CHECK_EQ_U(sink.l[0].u.lost.count, 17);
	CHECK_EQ_U(sink.l[0].time, 5000);
	CHECK_EQ_U(sink.l[1].u.lost.reason, CT_LOST_PMU);
	CHECK_EQ_U(sink.l[1].u.lost.count, 4);
	CHECK_EQ_U(sink.l[1].time, 6000);
	CHECK_EQ_U(sink.l[2].u.lost.reason, CT_LOST_THROTTLE);
	CHECK_EQ_U(sink.l[2].u.lost.count, 1);
	CHECK_EQ_U(sink.l[2].time, 7000);
	CHECK_EQ_U(c.st.lost, 21);
	CHECK_EQ_U(c.st.throttled, 1);

	/* without sample_id_all the record has no time: now */
	struct perf_rec r;
	memset(&r, 0, sizeof r);
	r.kind = PERF_REC_LOST;
	r.lost = 3;
	struct ct_record l;
	CHECK_EQ_U(pmu_lost_record(&r, 424242, &l), 1);
	CHECK_EQ_U(l.time, 424242);
	CHECK_EQ_U(l.u.lost.count, 3);
	r.kind = PERF_REC_SAMPLE;
	CHECK_EQ_U(pmu_lost_record(&r, 1, &l), 0);
}

/* The runtime's pre hook drops its own samples before conversion. */
static uint64_t drop_lo, drop_hi;
static bool drop_range(void *ctx, const struct perf_rec *r)
{
	(void)ctx;
	return r->ip >= drop_lo && r->ip < drop_hi;
}

static void test_pre_hook(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	struct bld b;
	struct smp s = pebs(ID_LD, I_LOAD4, 0x7f0000009000ull);
	sample(&b, PEBS_ST, &s); ring_put(&b);
	s = pebs(ID_ST, I_STORE4, 0x7f0000009040ull);
	sample(&b, PEBS_ST, &s); ring_put(&b);
	drop_lo = ip_of(I_STORE4);
	drop_hi = drop_lo + 1;
	memset(&sink, 0, sizeof sink);
	c.pre = drop_range;
	CHECK_EQ_U(drain(&c, &f), 2);
	CHECK_EQ_U(sink.ns, 1);
	CHECK_EQ_U(sink.s[0].acc.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(c.st.dropped, 1);
	CHECK_EQ_U(c.st.samples, 2);
}

/* Many samples through a ring that wraps several times, drained in
 * batches, as the handler would. */
static void test_pebs_many_wrapping(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(PEBS_ST);
	struct pmu_conv c;
	pebs_conv(&c);
	ring_reset(0);
	uint64_t total = 0, good = 0;
	for (int round = 0; round < 40; round++) {
		for (int k = 0; k < 7; k++) {
			struct bld b;
			int ins = (round + k) % 2 ? I_STORE4 : I_LOAD4;
			struct smp s = pebs(ins == I_STORE4 ? ID_ST : ID_LD, ins,
			                    0x7f0000100000ull + (uint64_t)(round * 7 + k) * 8);
			s.time = (uint64_t)(round * 7 + k);
			sample(&b, PEBS_ST, &s);
			ring_put(&b);
		}
		int got = drain(&c, &f);
		total += (uint64_t)got;
		for (int i = 0; i < sink.ns; i++) {
			const struct pmu_sample *s = &sink.s[i];
			uint64_t n = (uint64_t)(round * 7 + i);
			bool st = (round + i) % 2;
			if (s->time == n && s->acc.addr == 0x7f0000100000ull + n * 8 && !s->skip &&
			    s->acc.kind == (st ? CT_ACCESS_STORE : CT_ACCESS_LOAD) && s->acc.len == 4)
				good++;
		}
	}
	CHECK_EQ_U(total, 280);
	CHECK_EQ_U(good, 280);
	CHECK(ring.meta.data_head > RING * 3);
}

/* ---- PEBS attrs from the real builder (libpfm4, forced Skylake PMU) ------------------------- */

#ifdef HAVE_LIBPFM
static void skl_attrs(void)
{
	setenv("LIBPFM_FORCE_PMU", "skl", 1);
	setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
	pfm_terminate();
	if (pfm_initialize() != PFM_SUCCESS) {
		SKIP("libpfm4 refuses LIBPFM_FORCE_PMU=skl");
		return;
	}
	struct perf_event_attr a[4];
	uint8_t k[4];
	char why[256];
	int n = pmu_pebs_attrs_kinds(NULL, 20011, a, k, 4, why, sizeof why);
	if (n != 2) {
		printf("  pmu_pebs_attrs_kinds: %d: %s\n", n, why);
		SKIP("no two skl events from libpfm4 here");
		return;
	}
	CHECK(a[0].sample_type == a[1].sample_type);   /* they can share one ring */
	CHECK(a[0].sample_type & PERF_SAMPLE_IDENTIFIER);
	CHECK(a[0].sample_id_all);
	code_setup();
	struct perf_sample_fmt f;
	perf_sample_fmt_from_attr(&a[0], &f);
	struct pmu_conv c;
	pmu_conv_init(&c, PMU_CONV_PEBS);
	pmu_conv_add_event(&c, 11, k[0], a[0].sample_period);
	pmu_conv_add_event(&c, 12, k[1], a[1].sample_period);
	ring_reset(0);
	struct bld b;
	struct smp s = pebs(11, I_RMW, 0x7f000000a000ull);
	s.period = 0;     /* absent or zero: the event's */
	sample(&b, a[0].sample_type, &s); ring_put(&b);
	s = pebs(12, I_RMW, 0x7f000000a008ull);
	sample(&b, a[1].sample_type, &s); ring_put(&b);
	lost(&b, a[0].sample_type, 11, 2, 99); ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 3);
	CHECK_EQ_U(sink.ns, 2);
	CHECK_EQ_U(sink.nl, 1);
	/* which event is the loads one: kinds[] says */
	int ld = k[0] == PMU_KIND_LOAD ? 0 : 1;
	CHECK_EQ_U(k[ld], PMU_KIND_LOAD);
	CHECK_EQ_U(k[1 - ld], PMU_KIND_STORE);
	CHECK_EQ_U(sink.s[ld].acc.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(sink.s[1 - ld].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(sink.s[0].period, 20011);
	CHECK_EQ_U(sink.s[0].acc.len, 4);
	CHECK_EQ_U(sink.s[0].acc.addr, 0x7f000000a000ull);
	CHECK_EQ_U(sink.s[0].acc.flags, CT_SAMPLE_EXACT);
	CHECK_EQ_U(sink.s[0].extra_flags & CT_SAMPLE_HAS_DATA_SRC, CT_SAMPLE_HAS_DATA_SRC);
	CHECK_EQ_U(sink.l[0].u.lost.reason, CT_LOST_PMU);
	CHECK_EQ_U(sink.l[0].u.lost.count, 2);
	CHECK_EQ_U(sink.l[0].time, 99);
}

static void test_pebs_forced_skl_attrs(void) { check_in_child(skl_attrs); }
#endif

/* ---- IBS ---------------------------------------------------------------------------------- */

#define IBS_ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
                PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD)

struct ibs_raw {
	uint8_t b[4 + 7 * 8];
};

static void ibs_raw(struct ibs_raw *r, uint32_t caps, uint64_t rip, uint64_t data,
                    uint64_t data3, uint64_t lin)
{
	uint64_t v[7] = { IBS_OPCTL_VAL | IBS_OPCTL_EN, rip, data, 0, data3, lin, 0 };
	memcpy(r->b, &caps, 4);
	memcpy(r->b + 4, v, sizeof v);
}

#define D3_LD IBS_OPDATA3_LD
#define D3_ST IBS_OPDATA3_ST
#define D3_LIN IBS_OPDATA3_LIN_VALID
#define D3_WIDTH(n) ((uint64_t)(n) << IBS_OPDATA3_WIDTH_SHIFT)

static struct smp ibs_smp(const struct ibs_raw *raw, uint64_t ip, uint64_t time)
{
	struct smp s = {
		.misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_EXACT_IP,
		.ip = ip, .time = time, .period = 65536, .pid = 10, .tid = 11, .cpu = 5,
		.raw = raw->b, .raw_size = sizeof raw->b,
	};
	return s;
}

static void ibs_put(const struct ibs_raw *raw, uint64_t ip, uint64_t time)
{
	struct bld b;
	struct smp s = ibs_smp(raw, ip, time);
	sample(&b, IBS_ST, &s);
	ring_put(&b);
}

static void test_ibs_samples(void)
{
	code_setup();
	struct perf_sample_fmt f = pebs_fmt(IBS_ST);
	f.sample_id_all = true;
	struct pmu_conv c;
	pmu_conv_init(&c, PMU_CONV_IBS);
	pmu_conv_add_event(&c, 0, PMU_KIND_UNKNOWN, 65536);
	ring_reset(0);
	struct ibs_raw r;
	/* 0: a load, no width from IBS (pre-Zen 4): decoded length */
	ibs_raw(&r, 0, ip_of(I_LOAD4), 0, D3_LD | D3_LIN, 0x7f0000020000ull);
	ibs_put(&r, ip_of(I_LOAD4), 100);
	/* 1: a store with IbsOpMemWidth 8 bytes (n = 4): IBS's width wins over
	 * the decoder's (the ip points at a 1-byte store) */
	ibs_raw(&r, 0, ip_of(I_STORE1), 0, D3_ST | D3_LIN | D3_WIDTH(4), 0x7f0000020040ull);
	ibs_put(&r, ip_of(I_STORE1), 200);
	/* 2: a locked RMW */
	ibs_raw(&r, 0, ip_of(I_LOCKADD), 0, D3_LD | D3_ST | IBS_OPDATA3_LOCKED | D3_LIN,
	        0x7f0000020080ull);
	ibs_put(&r, ip_of(I_LOCKADD), 300);
	/* 3: neither load nor store (an ALU op): skipped */
	ibs_raw(&r, 0, ip_of(I_NOMEM), 0, 0, 0);
	ibs_put(&r, ip_of(I_NOMEM), 400);
	/* 4: a load without a valid linear address: skipped */
	ibs_raw(&r, 0, ip_of(I_LOAD4), 0, D3_LD, 0x7f00000200c0ull);
	ibs_put(&r, ip_of(I_LOAD4), 500);
	/* 5: a load missing the data cache, 321 cycles: the weight */
	ibs_raw(&r, 0, ip_of(I_LOAD2), 0, D3_LD | D3_LIN | IBS_OPDATA3_DC_MISS | (321ull << 32),
	        0x7f0000020100ull);
	ibs_put(&r, ip_of(I_LOAD2), 600);
	/* 6: IbsRipInvalid: the perf sample's ip (here the instruction after
	 * the access, not exact): decoded backwards */
	ibs_raw(&r, IBS_CAPS_RIPINVALIDCHK, 0x1234, IBS_OPDATA_RIP_INVALID, D3_ST | D3_LIN,
	        0x7f0000020140ull);
	{
		struct bld b;
		struct smp s = ibs_smp(&r, ip_after(I_STORE8), 700);
		s.misc = PERF_RECORD_MISC_USER;
		sample(&b, IBS_ST, &s);
		ring_put(&b);
	}
	/* 7: a kernel data address */
	ibs_raw(&r, 0, ip_of(I_LOAD4), 0, D3_LD | D3_LIN, 0xffff888000000000ull);
	ibs_put(&r, ip_of(I_LOAD4), 800);
	/* 8: a payload too short to be IBS */
	{
		struct bld b;
		struct smp s = ibs_smp(&r, ip_of(I_LOAD4), 900);
		s.raw_size = 20;
		sample(&b, IBS_ST, &s);
		ring_put(&b);
	}
	CHECK_EQ_U(drain(&c, &f), 9);
	CHECK_EQ_U(sink.ns, 9);
	const struct pmu_sample *s = sink.s;
	CHECK_EQ_U(s[0].skip, 0);
	CHECK_EQ_U(s[0].acc.addr, 0x7f0000020000ull);
	CHECK_EQ_U(s[0].ip, ip_of(I_LOAD4));
	CHECK_EQ_U(s[0].time, 100);
	CHECK_EQ_U(s[0].cpu, 5);
	CHECK_EQ_U(s[0].period, 65536);
	CHECK_EQ_U(s[0].acc.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(s[0].acc.len, 4);
	CHECK_EQ_U(s[0].acc.flags, CT_SAMPLE_EXACT);
	CHECK_EQ_U(s[0].extra_flags, 0);
	CHECK_EQ_U(s[1].skip, 0);
	CHECK_EQ_U(s[1].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(s[1].acc.len, 8);
	CHECK_EQ_U(s[2].acc.kind, CT_ACCESS_ATOMIC);
	CHECK_EQ_U(s[2].acc.len, 4);
	CHECK_EQ_U(s[3].skip, CT_SKIP_NOT_LOAD_STORE);
	CHECK_EQ_U(s[4].skip, CT_SKIP_NOT_LOAD_STORE);
	CHECK_EQ_U(s[5].skip, 0);
	CHECK_EQ_U(s[5].acc.len, 2);
	CHECK_EQ_U(s[5].weight, 321);
	CHECK_EQ_U(s[5].extra_flags, CT_SAMPLE_HAS_WEIGHT);
	CHECK_EQ_U(s[6].skip, 0);
	CHECK_EQ_U(s[6].ip, ip_after(I_STORE8));
	CHECK_EQ_U(s[6].acc.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(s[6].acc.len, 8);
	CHECK_EQ_U(s[6].acc.flags, CT_SAMPLE_EXACT | CT_SAMPLE_PREV_INSN);
	CHECK_EQ_U(s[7].skip, CT_SKIP_KERNEL);
	CHECK_EQ_U(s[8].skip, CT_SKIP_DECODE_FAILED);
	CHECK_EQ_U(c.st.usable, 5);
	CHECK_EQ_U(c.st.samples, 9);
}

/* The IBS attr from pmu_ibs_attr (fake sysfs) gives the ring's format. */
static void test_ibs_attr_ring(void)
{
	char root[256], p[512], name[64];
	snprintf(name, sizeof name, "ct-pmu-sample-%d", (int)getpid());
	check_tmp_path(root, sizeof root, name);
	const char *dirs[] = { "", "/sys", "/sys/bus", "/sys/bus/event_source",
	                       "/sys/bus/event_source/devices", "/sys/bus/event_source/devices/ibs_op",
	                       "/sys/bus/event_source/devices/ibs_op/format" };
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(p, sizeof p, "%s%s", root, dirs[i]);
		mkdir(p, 0755);
	}
	const char *files[][2] = {
		{ "/sys/bus/event_source/devices/ibs_op/type", "11\n" },
		{ "/sys/bus/event_source/devices/ibs_op/format/cnt_ctl", "config:19\n" },
		{ "/sys/bus/event_source/devices/ibs_op/format/swfilt", "config2:0\n" },
	};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s%s", root, files[i][0]);
		FILE *fp = fopen(p, "w");
		if (fp) {
			fputs(files[i][1], fp);
			fclose(fp);
		}
	}
	pmu_set_sysfs_root(root);
	struct perf_event_attr a;
	char why[256];
	int rc = pmu_ibs_attr(4096, &a, why, sizeof why);
	pmu_set_sysfs_root(NULL);
	snprintf(p, sizeof p, "rm -rf %s", root);
	if (system(p) != 0)
		printf("  (could not remove %s)\n", root);
	CHECK_EQ_U(rc, 0);
	if (rc)
		return;
	code_setup();
	struct perf_sample_fmt f;
	perf_sample_fmt_from_attr(&a, &f);
	struct pmu_conv c;
	pmu_conv_init(&c, PMU_CONV_IBS);
	pmu_conv_add_event(&c, 0, PMU_KIND_UNKNOWN, a.sample_period);
	ring_reset(100);
	struct ibs_raw r;
	ibs_raw(&r, 0, ip_of(I_VLOAD32), 0, D3_LD | D3_LIN, 0x7f0000030000ull);
	struct bld b;
	struct smp s = ibs_smp(&r, ip_of(I_VLOAD32), 1234);
	s.period = 4096;
	sample(&b, a.sample_type, &s);
	ring_put(&b);
	throttle(&b, a.sample_type, PERF_RECORD_THROTTLE, 0, 1300);
	ring_put(&b);
	CHECK_EQ_U(drain(&c, &f), 2);
	CHECK_EQ_U(sink.ns, 1);
	CHECK_EQ_U(sink.nl, 1);
	CHECK_EQ_U(sink.s[0].skip, 0);
	CHECK_EQ_U(sink.s[0].acc.len, 32);
	CHECK_EQ_U(sink.s[0].acc.addr, 0x7f0000030000ull);
	CHECK_EQ_U(sink.s[0].period, 4096);
	CHECK_EQ_U(sink.l[0].u.lost.reason, CT_LOST_THROTTLE);
	CHECK_EQ_U(sink.l[0].time, 1300);
}

/* ---- the code reader -------------------------------------------------------------------- */

static void test_read_self(void)
{
	code_setup();
	uint8_t b[64];
	CHECK_EQ_U(pmu_read_self(b, ip_of(I_STORE4), 4), 4);
	CHECK(!memcmp(b, insn[I_STORE4].b, 4));
	if (!noaccess) {
		SKIP("cannot map a PROT_NONE page");
		return;
	}
	CHECK_EQ_U(pmu_read_self(b, (uint64_t)(uintptr_t)noaccess, 8), 0);
	/* a readable page followed by an unreadable one: the leading bytes */
	uint8_t *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED) {
		SKIP("mmap failed");
		return;
	}
	mprotect(two + 4096, 4096, PROT_NONE);
	memset(two + 4096 - 10, 0x5a, 10);
	CHECK_EQ_U(pmu_read_self(b, (uint64_t)(uintptr_t)(two + 4096 - 10), 30), 10);
	CHECK_EQ_U(b[9], 0x5a);
	errno = 1234;
	pmu_read_self(b, 8, 8);
	CHECK_EQ_U(errno, 1234);                 /* errno preserved (signal handler) */
	munmap(two, 8192);
}

int main(void)
{
	RUN(test_pebs_load_and_store);
	RUN(test_pebs_lengths_and_kinds);
	RUN(test_pebs_kind_mismatch);
	RUN(test_pebs_skips);
	RUN(test_pebs_ip_after);
	RUN(test_pebs_undecodable);
	RUN(test_pebs_kind_from_data_src);
	RUN(test_pebs_other_formats);
	RUN(test_lost_and_throttle);
	RUN(test_pre_hook);
	RUN(test_pebs_many_wrapping);
#ifdef HAVE_LIBPFM
	RUN(test_pebs_forced_skl_attrs);
#endif
	RUN(test_ibs_samples);
	RUN(test_ibs_attr_ring);
	RUN(test_read_self);
	return check_summary();
}
