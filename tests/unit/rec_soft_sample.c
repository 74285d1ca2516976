/* The soft sampler's conversion (record/common/soft_sample.c) on synthetic
 * perf rings, as the runtime's writer drains a CPU ring of the inherited
 * path: samples of several threads (one tid reused by a later thread), a
 * kernel sample, a sample without user registers, a LOST record carrying
 * the tid it hit.  Each record is attributed through a soft_tid_map and
 * decoded from real instruction bytes placed in this process, with the
 * registers the sample carries. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "commtrace.h"
#include "decode.h"
#include "perf_ring.h"
#include "pmu_sample.h"
#include "soft_sample.h"

/* ---- instructions: each in a 64-byte slot after int3 padding ---------------- */

enum {
	I_LOAD4,      /* mov eax, [rdi+8]      8b 47 08 */
	I_STORE8,     /* mov [rsi+rcx*8], rdx  48 89 14 ce */
	I_NOMEM,      /* add eax, ebx          01 d8 */
	I_COUNT
};
static const struct { uint8_t n; uint8_t b[8]; } insn[I_COUNT] = {
	[I_LOAD4] = { 3, { 0x8b, 0x47, 0x08 } },
	[I_STORE8] = { 4, { 0x48, 0x89, 0x14, 0xce } },
	[I_NOMEM] = { 2, { 0x01, 0xd8 } },
};
#define SLOT 64
#define SLOT_AT 40      /* the decoder reads 32 bytes before the ip */
static uint8_t code[I_COUNT * SLOT + 32];

static void code_setup(void)
{
	memset(code, 0xcc, sizeof code);
	for (int i = 0; i < I_COUNT; i++)
		memcpy(code + i * SLOT + SLOT_AT, insn[i].b, insn[i].n);
}
static uint64_t ip_of(int i) { return (uint64_t)(uintptr_t)(code + i * SLOT + SLOT_AT); }

/* ---- synthetic ring records (the inherited path's sample_type) ------------------- */

#define SOFT_ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
                 PERF_SAMPLE_REGS_USER)
/* values in DEC_PERF_REGS_MASK order: AX BX CX DX SI DI BP SP IP R8..R15 */
enum { V_AX, V_BX, V_CX, V_DX, V_SI, V_DI, V_BP, V_SP, V_IP, V_N = 17 };

struct bld {
	uint8_t b[512];
	size_t n;
};
static void put64(struct bld *b, uint64_t v) { memcpy(b->b + b->n, &v, 8); b->n += 8; }
static void put32x2(struct bld *b, uint32_t x, uint32_t y)
{
	memcpy(b->b + b->n, &x, 4);
	memcpy(b->b + b->n + 4, &y, 4);
	b->n += 8;
}
static void begin(struct bld *b, uint32_t type)
{
	memset(b, 0, sizeof *b);
	struct perf_event_header h = { .type = type, .misc = PERF_RECORD_MISC_USER };
	memcpy(b->b, &h, sizeof h);
	b->n = sizeof h;
}
static void end(struct bld *b)
{
	uint16_t sz = (uint16_t)b->n;
	memcpy(b->b + 6, &sz, 2);
}

static void sample(struct bld *b, uint64_t ip, uint32_t tid, uint64_t time, uint32_t cpu,
                   const uint64_t *vals)
{
	begin(b, PERF_RECORD_SAMPLE);
	put64(b, ip);
	put32x2(b, 4000, tid);
	put64(b, time);
	put32x2(b, cpu, 0);
	put64(b, vals ? PERF_SAMPLE_REGS_ABI_64 : PERF_SAMPLE_REGS_ABI_NONE);
	for (int i = 0; vals && i < V_N; i++)
		put64(b, vals[i]);
	end(b);
}

/* PERF_RECORD_LOST with the sample_id trailer (tid, time, cpu) */
static void lost(struct bld *b, uint64_t n, uint32_t tid, uint64_t time, uint32_t cpu)
{
	begin(b, PERF_RECORD_LOST);
	put64(b, 7);
	put64(b, n);
	put32x2(b, 4000, tid);
	put64(b, time);
	put32x2(b, cpu, 0);
	end(b);
}

#define RING 4096
static struct {
	struct perf_event_mmap_page meta;
	uint8_t data[RING];
} ring;
static uint8_t scratch[4096];

static void ring_put(const struct bld *b)
{
	for (size_t i = 0; i < b->n; i++)
		ring.data[(ring.meta.data_head + i) & (RING - 1)] = b->b[i];
	ring.meta.data_head += b->n;
}

/* ---- what the writer does with each record --------------------------------------- */

struct thr {
	const char *name;
	uint64_t fs_base;
	int samples, skipped[16], lost;
	struct dec_access last;
	uint64_t last_time;
	uint32_t last_cpu;
	uint8_t last_flags;
};

struct ctx {
	struct soft_tid_map *map;
	int unattributed;
	bool late;
};

static void on_rec(void *p, const struct perf_rec *r)
{
	struct ctx *c = p;
	struct thr *t = soft_tid_map_find(c->map, r->tid, r->time);
	if (!t) {
		c->unattributed++;
		return;
	}
	if (r->kind == PERF_REC_LOST) {
		struct ct_record l;
		CHECK(pmu_lost_record(r, 1, &l) == 1);
		CHECK_EQ_U(l.type, CT_REC_LOST);
		CHECK_EQ_U(l.u.lost.reason, CT_LOST_PMU);
		CHECK_EQ_U(l.time, r->time);
		t->lost += (int)l.u.lost.count;
		return;
	}
	if (r->kind != PERF_REC_SAMPLE)
		return;
	struct dec_access a;
	int skip = soft_sample_access(r, DEC_PERF_REGS_MASK, t->fs_base, c->late, &a);
	if (skip) {
		t->skipped[skip & 15]++;
		return;
	}
	t->samples++;
	t->last = a;
	t->last_time = r->time;
	t->last_cpu = r->cpu;
}

static uint64_t vals[V_N];

static void regs_for(uint64_t ip, uint64_t rdi, uint64_t rsi, uint64_t rcx)
{
	memset(vals, 0, sizeof vals);
	vals[V_IP] = ip;
	vals[V_DI] = rdi;
	vals[V_SI] = rsi;
	vals[V_CX] = rcx;
	vals[V_SP] = 0x7ffd0000;
}

static void run_ring(bool late)
{
	code_setup();
	/* tid 101: thread A [100, 500]; tid 101 again: thread C from 600 on
	 * (the tid reused); tid 102: thread B from 50 on */
	struct thr A = { .name = "A" }, B = { .name = "B" }, C = { .name = "C" };
	struct soft_tid_entry e[3] = {
		{ 102, 50, UINT64_MAX, &B }, { 101, 600, UINT64_MAX, &C }, { 101, 100, 500, &A },
	};
	struct soft_tid_map map = { e, 3 };
	soft_tid_map_sort(&map);
	memset(&ring, 0, sizeof ring);
	struct bld b;
	regs_for(ip_of(I_LOAD4), 0x10000, 0, 0);
	sample(&b, ip_of(I_LOAD4), 101, 200, 1, vals);           /* A: load of rdi+8 */
	ring_put(&b);
	regs_for(ip_of(I_STORE8), 0, 0x20000, 3);
	sample(&b, ip_of(I_STORE8), 102, 210, 0, vals);          /* B: store to rsi+rcx*8 */
	ring_put(&b);
	regs_for(ip_of(I_NOMEM), 0, 0, 0);
	sample(&b, ip_of(I_NOMEM), 101, 300, 1, vals);           /* A: no memory operand */
	ring_put(&b);
	sample(&b, 0xffffffff81000000ull, 102, 310, 0, vals);    /* B: a kernel ip */
	ring_put(&b);
	sample(&b, ip_of(I_LOAD4), 102, 320, 0, NULL);           /* B: no user registers */
	ring_put(&b);
	regs_for(ip_of(I_LOAD4), 0x30000, 0, 0);
	sample(&b, ip_of(I_LOAD4), 101, 550, 1, vals);           /* tid 101 between A and C */
	ring_put(&b);
	sample(&b, ip_of(I_LOAD4), 101, 700, 1, vals);           /* C: load of rdi+8 */
	ring_put(&b);
	lost(&b, 9, 102, 710, 0);                                /* B lost 9 */
	ring_put(&b);
	sample(&b, ip_of(I_LOAD4), 999, 720, 1, vals);           /* a thread not recorded */
	ring_put(&b);

	struct perf_sample_fmt f = { .sample_type = SOFT_ST, .regs_user_mask = DEC_PERF_REGS_MASK,
	                             .sample_id_all = true };
	struct ctx c = { &map, 0, late };
	perf_ring_drain(&ring.meta, ring.data, RING, &f, scratch, sizeof scratch, on_rec, &c);
	CHECK_EQ_U(ring.meta.data_tail, ring.meta.data_head);

	CHECK_EQ_U(A.samples, 1);
	CHECK_EQ_U(A.last.addr, 0x10008);
	CHECK_EQ_U(A.last.len, 4);
	CHECK_EQ_U(A.last.kind, CT_ACCESS_LOAD);
	CHECK(A.last.flags & CT_SAMPLE_RECONSTRUCTED);
	CHECK_EQ_U(A.last_time, 200);
	CHECK_EQ_U(A.last_cpu, 1);
	CHECK_EQ_U(A.skipped[CT_SKIP_NO_MEMORY_OPERAND], 1);

	CHECK_EQ_U(B.samples, 1);
	CHECK_EQ_U(B.last.addr, 0x20000 + 3 * 8);
	CHECK_EQ_U(B.last.len, 8);
	CHECK_EQ_U(B.last.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(B.last_cpu, 0);
	CHECK_EQ_U(B.skipped[CT_SKIP_KERNEL], 2);
	CHECK_EQ_U(B.lost, 9);

	CHECK_EQ_U(C.samples, 1);
	CHECK_EQ_U(C.last.addr, 0x30008);
	CHECK_EQ_U(C.last_time, 700);
	CHECK_EQ_U(c.unattributed, 2);   /* tid 101 at 550, tid 999 */
}

static void test_ring_in_thread(void) { run_ring(false); }
static void test_ring_late(void) { run_ring(true); }

/* A decoded perf sample at ip with user registers, rdi as given, the
 * others 0. */
static void user_sample(struct perf_rec *r, const uint8_t *ip, uint64_t rdi)
{
	memset(r, 0, sizeof *r);
	r->kind = PERF_REC_SAMPLE;
	r->regs_abi = PERF_SAMPLE_REGS_ABI_64;
	r->nregs = V_N;
	r->ip = r->regs[V_IP] = (uint64_t)(uintptr_t)ip;
	r->regs[V_DI] = rdi;
}

/* A late decode reads nothing directly: code unmapped since the sample (a
 * dlclose between the sample and the writer's pass) is a skip, not a
 * crash, even where an earlier decode in the thread learned its page. */
static void test_late_unmapped(void)
{
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		SKIP("no memory for a code page");
		return;
	}
	memset(page, 0xcc, 4096);
	memcpy(page + 64, insn[I_LOAD4].b, insn[I_LOAD4].n);
	struct perf_rec r;
	user_sample(&r, page + 64, 0x5000);
	struct dec_access a;
	CHECK_EQ_U(soft_sample_access(&r, DEC_PERF_REGS_MASK, 0, false, &a), 0);   /* learns the page */
	CHECK_EQ_U(a.addr, 0x5008);
	munmap(page, 4096);
	CHECK_EQ_U(soft_sample_access(&r, DEC_PERF_REGS_MASK, 0, true, &a), CT_SKIP_UNREADABLE_IP);
	r.ip = r.regs[V_IP] = 0x10;
	CHECK_EQ_U(soft_sample_access(&r, DEC_PERF_REGS_MASK, 0, true, &a), CT_SKIP_UNREADABLE_IP);
}

/* A perf sample is user time: right after a syscall it is the user code's
 * (not kernel time, as a CPU-time timer's would be), and where the
 * instruction there makes no memory access the next one does (the forward
 * rule), in the thread and late alike:
 *   syscall ; add eax,ebx ; mov eax,[rdi+8]   sampled at the add */
static void test_after_syscall_next_insn(void)
{
	static uint8_t buf[128];
	static const uint8_t c[] = { 0x0f, 0x05, 0x01, 0xd8, 0x8b, 0x47, 0x08 };
	memset(buf, 0xcc, sizeof buf);
	memcpy(buf + 64, c, sizeof c);
	struct perf_rec r;
	user_sample(&r, buf + 66, 0x5000);
	for (int late = 0; late < 2; late++) {
		struct dec_access a;
		memset(&a, 0xee, sizeof a);
		CHECK_EQ_U(soft_sample_access(&r, DEC_PERF_REGS_MASK, 0, late, &a), 0);
		CHECK_EQ_U(a.addr, 0x5008);
		CHECK_EQ_U(a.len, 4);
		CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
		CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	}
}

static void test_tid_map(void)
{
	int x[5];
	struct soft_tid_entry e[5] = {
		{ 30, 0, UINT64_MAX, &x[0] }, { 10, 500, UINT64_MAX, &x[1] }, { 10, 0, 400, &x[2] },
		{ 20, 100, 200, &x[3] }, { 5, 7, 7, &x[4] },
	};
	struct soft_tid_map m = { e, 5 };
	soft_tid_map_sort(&m);
	for (size_t i = 1; i < m.n; i++)
		CHECK(e[i - 1].tid < e[i].tid || (e[i - 1].tid == e[i].tid && e[i - 1].start <= e[i].start));
	CHECK(soft_tid_map_find(&m, 10, 0) == &x[2]);
	CHECK(soft_tid_map_find(&m, 10, 400) == &x[2]);
	CHECK(soft_tid_map_find(&m, 10, 450) == NULL);
	CHECK(soft_tid_map_find(&m, 10, 500) == &x[1]);
	CHECK(soft_tid_map_find(&m, 20, 99) == NULL);
	CHECK(soft_tid_map_find(&m, 20, 150) == &x[3]);
	CHECK(soft_tid_map_find(&m, 20, 201) == NULL);
	CHECK(soft_tid_map_find(&m, 5, 7) == &x[4]);
	CHECK(soft_tid_map_find(&m, 30, UINT64_MAX) == &x[0]);
	CHECK(soft_tid_map_find(&m, 31, 1) == NULL);
	CHECK(soft_tid_map_find(&m, 1, 1) == NULL);
	struct soft_tid_map empty = { e, 0 };
	CHECK(soft_tid_map_find(&empty, 10, 0) == NULL);
}

int main(void)
{
	RUN(test_ring_in_thread);
	RUN(test_ring_late);
	RUN(test_late_unmapped);
	RUN(test_after_syscall_next_insn);
	RUN(test_tid_map);
	return check_summary();
}
