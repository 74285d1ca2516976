/* Unit tests for record/common/decode.c: hand-assembled instructions with
 * known registers (bytes checked against GNU as), the soft sampler's
 * previous-instruction rule on code-like buffers, register dumps, and a live
 * SIGPROF run over an asm loop. */
#include "check.h"
#include "commtrace.h"
#include "decode.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define RAXV 0x10000ULL
#define RCXV 3ULL
#define RDXV 0x5555ULL
#define RBXV 0x20000ULL
#define RSPV 0x7fff0000ULL
#define RBPV 0x7fff0100ULL
#define RSIV 0x30000ULL
#define RDIV 0x40000ULL
#define FSV 0x7f0000001000ULL
#define GSV 0x7f0000002000ULL

static struct dec_regs regs(void)
{
	struct dec_regs r;
	memset(&r, 0, sizeof r);
	r.gpr[DEC_RAX] = RAXV; r.gpr[DEC_RCX] = RCXV; r.gpr[DEC_RDX] = RDXV;
	r.gpr[DEC_RBX] = RBXV; r.gpr[DEC_RSP] = RSPV; r.gpr[DEC_RBP] = RBPV;
	r.gpr[DEC_RSI] = RSIV; r.gpr[DEC_RDI] = RDIV;
	for (int i = DEC_R8; i < DEC_NGPR; i++)
		r.gpr[i] = 0x100000ULL * (uint64_t)i;
	r.fs_base = FSV;
	r.gs_base = GSV;
	return r;
}

#define IP 0x400000ULL

/* decode one instruction at IP with regs() */
static int dec1(const uint8_t *b, size_t n, struct dec_access *a, size_t *len)
{
	struct dec_regs r = regs();
	memset(a, 0xee, sizeof *a);
	return dec_access_at(b, n, IP, &r, a, len);
}

#define ACCESS(name, expect_addr, expect_len, expect_kind, ...) do { \
	static const uint8_t b_[] = { __VA_ARGS__ }; \
	struct dec_access a_; size_t l_ = 99; \
	int rc_ = dec1(b_, sizeof b_, &a_, &l_); \
	if (rc_) printf("  (%s: rc %d)\n", name, rc_); \
	CHECK_EQ_U(rc_, 0); \
	CHECK_EQ_U(l_, sizeof b_); \
	CHECK_EQ_U(a_.addr, (expect_addr)); \
	CHECK_EQ_U(a_.len, (expect_len)); \
	CHECK_EQ_U(a_.kind, (expect_kind)); \
} while (0)

#define SKIPPED(name, expect_rc, ...) do { \
	static const uint8_t b_[] = { __VA_ARGS__ }; \
	struct dec_access a_; \
	int rc_ = dec1(b_, sizeof b_, &a_, NULL); \
	if (rc_ != (expect_rc)) printf("  (%s: rc %d)\n", name, rc_); \
	CHECK_EQ_U(rc_, (expect_rc)); \
} while (0)

static void test_mov_load_sizes(void)
{
	ACCESS("mov al,[rbx]", RBXV, 1, CT_ACCESS_LOAD, 0x8a, 0x03);
	ACCESS("mov ax,[rbx+8]", RBXV + 8, 2, CT_ACCESS_LOAD, 0x66, 0x8b, 0x43, 0x08);
	ACCESS("mov eax,[rbx+rcx*4+0x10]", RBXV + RCXV * 4 + 0x10, 4, CT_ACCESS_LOAD,
	       0x8b, 0x44, 0x8b, 0x10);
	ACCESS("mov rax,[rbx+rcx*8-8]", RBXV + RCXV * 8 - 8, 8, CT_ACCESS_LOAD,
	       0x48, 0x8b, 0x44, 0xcb, 0xf8);
	/* r12 base needs a SIB, r13 base a displacement: mov r8,[r12+r13*2+0x7f] */
	ACCESS("mov r8,[r12+r13*2+0x7f]", 0x100000ULL * DEC_R12 + 0x100000ULL * DEC_R13 * 2 + 0x7f,
	       8, CT_ACCESS_LOAD, 0x4f, 0x8b, 0x44, 0x6c, 0x7f);
}

static void test_mov_store_sizes(void)
{
	ACCESS("mov [rbx],dl", RBXV, 1, CT_ACCESS_STORE, 0x88, 0x13);
	ACCESS("mov [rbx+2],dx", RBXV + 2, 2, CT_ACCESS_STORE, 0x66, 0x89, 0x53, 0x02);
	ACCESS("mov [rbx+rcx*2],edx", RBXV + RCXV * 2, 4, CT_ACCESS_STORE, 0x89, 0x14, 0x4b);
	ACCESS("mov [rbx+0x100],rdx", RBXV + 0x100, 8, CT_ACCESS_STORE,
	       0x48, 0x89, 0x93, 0x00, 0x01, 0x00, 0x00);
	ACCESS("mov dword [rbx],imm", RBXV, 4, CT_ACCESS_STORE,
	       0xc7, 0x03, 0x01, 0x00, 0x00, 0x00);
}

static void test_rip_relative(void)
{
	/* mov rax,[rip+0x1000]: relative to the end of the instruction */
	ACCESS("mov rax,[rip+0x1000]", IP + 7 + 0x1000, 8, CT_ACCESS_LOAD,
	       0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00);
	/* negative displacement: mov [rip-0x10],ecx */
	ACCESS("mov [rip-0x10],ecx", IP + 6 - 0x10, 4, CT_ACCESS_STORE,
	       0x89, 0x0d, 0xf0, 0xff, 0xff, 0xff);
}

static void test_segment_bases(void)
{
	static const uint8_t fs28[] = { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00 };
	static const uint8_t fsrbx[] = { 0x64, 0x48, 0x8b, 0x03 };
	static const uint8_t gs8[] = { 0x65, 0x48, 0x8b, 0x04, 0x25, 0x08, 0x00, 0x00, 0x00 };
	static const uint8_t plain[] = { 0x48, 0x8b, 0x03 };
	struct dec_access a;
	CHECK_EQ_U(dec1(fs28, sizeof fs28, &a, NULL), 0);
	CHECK_EQ_U(a.addr, FSV + 0x28);
	CHECK_EQ_U(a.flags, CT_SAMPLE_FS_BASED);
	CHECK_EQ_U(a.len, 8);
	CHECK_EQ_U(dec1(fsrbx, sizeof fsrbx, &a, NULL), 0);
	CHECK_EQ_U(a.addr, FSV + RBXV);
	CHECK_EQ_U(a.flags, CT_SAMPLE_FS_BASED);
	CHECK_EQ_U(dec1(gs8, sizeof gs8, &a, NULL), 0);
	CHECK_EQ_U(a.addr, GSV + 8);
	CHECK_EQ_U(a.flags, CT_SAMPLE_FS_BASED);
	CHECK_EQ_U(dec1(plain, sizeof plain, &a, NULL), 0);
	CHECK_EQ_U(a.addr, RBXV);
	CHECK_EQ_U(a.flags, 0);
}

static void test_atomics_and_rmw(void)
{
	ACCESS("lock add [rbx],rax", RBXV, 8, CT_ACCESS_ATOMIC, 0xf0, 0x48, 0x01, 0x03);
	ACCESS("lock cmpxchg [rbx+rcx*8],rdx", RBXV + RCXV * 8, 8, CT_ACCESS_ATOMIC,
	       0xf0, 0x48, 0x0f, 0xb1, 0x14, 0xcb);
	ACCESS("xchg [rbx],rax (implicit lock)", RBXV, 8, CT_ACCESS_ATOMIC, 0x48, 0x87, 0x03);
	ACCESS("lock xadd [rbx],eax", RBXV, 4, CT_ACCESS_ATOMIC, 0xf0, 0x0f, 0xc1, 0x03);
	ACCESS("lock cmpxchg16b [rbx]", RBXV, 16, CT_ACCESS_ATOMIC, 0xf0, 0x48, 0x0f, 0xc7, 0x0b);
	/* without lock: read-modify-write counts as a store */
	ACCESS("cmpxchg [rbx],rdx", RBXV, 8, CT_ACCESS_STORE, 0x48, 0x0f, 0xb1, 0x13);
	ACCESS("add [rbx+4],ecx", RBXV + 4, 4, CT_ACCESS_STORE, 0x01, 0x4b, 0x04);
	ACCESS("inc dword [rbx]", RBXV, 4, CT_ACCESS_STORE, 0xff, 0x03);
	/* reads only */
	ACCESS("add ecx,[rbx]", RBXV, 4, CT_ACCESS_LOAD, 0x03, 0x0b);
	ACCESS("cmp [rbx],ecx", RBXV, 4, CT_ACCESS_LOAD, 0x39, 0x0b);
}

static void test_sse_avx_lengths(void)
{
	ACCESS("movss xmm0,[rbx]", RBXV, 4, CT_ACCESS_LOAD, 0xf3, 0x0f, 0x10, 0x03);
	ACCESS("movsd [rbx+8],xmm1", RBXV + 8, 8, CT_ACCESS_STORE, 0xf2, 0x0f, 0x11, 0x4b, 0x08);
	ACCESS("movdqu xmm2,[rbx]", RBXV, 16, CT_ACCESS_LOAD, 0xf3, 0x0f, 0x6f, 0x13);
	ACCESS("vmovdqu ymm0,[rbx]", RBXV, 32, CT_ACCESS_LOAD, 0xc5, 0xfe, 0x6f, 0x03);
	ACCESS("vmovdqu [rbx],ymm0", RBXV, 32, CT_ACCESS_STORE, 0xc5, 0xfe, 0x7f, 0x03);
	/* vmovdqu64 zmm0,[rbx] (EVEX): 64 bytes */
	ACCESS("vmovdqu64 zmm0,[rbx]", RBXV, 64, CT_ACCESS_LOAD,
	       0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x03);
	/* fxsave [rbx] writes 512 bytes: capped at 255 */
	ACCESS("fxsave [rbx]", RBXV, 255, CT_ACCESS_STORE, 0x0f, 0xae, 0x03);
}

static void test_skips(void)
{
	SKIPPED("lea rax,[rbx+rcx*8]", CT_SKIP_LEA_NOP, 0x48, 0x8d, 0x04, 0xcb);
	SKIPPED("nop", CT_SKIP_NO_MEMORY_OPERAND, 0x90);
	SKIPPED("nop dword [rax+rax]", CT_SKIP_LEA_NOP, 0x0f, 0x1f, 0x04, 0x00);
	SKIPPED("nopw [rax+rax+0]", CT_SKIP_LEA_NOP, 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00);
	SKIPPED("prefetcht0 [rbx]", CT_SKIP_LEA_NOP, 0x0f, 0x18, 0x0b);
	SKIPPED("prefetchnta [rbx]", CT_SKIP_LEA_NOP, 0x0f, 0x18, 0x03);
	SKIPPED("prefetchw [rbx]", CT_SKIP_LEA_NOP, 0x0f, 0x0d, 0x0b);
	SKIPPED("clflush [rbx]", CT_SKIP_LEA_NOP, 0x0f, 0xae, 0x3b);
	SKIPPED("clflushopt [rbx]", CT_SKIP_LEA_NOP, 0x66, 0x0f, 0xae, 0x3b);
	SKIPPED("bndldx bnd0,[rax+rcx]", CT_SKIP_LEA_NOP, 0x0f, 0x1a, 0x04, 0x08);
	SKIPPED("vpgatherdd ymm0,[rax+ymm2*4],ymm1", CT_SKIP_GATHER_SCATTER,
	        0xc4, 0xe2, 0x75, 0x90, 0x04, 0x90);
	SKIPPED("add ecx,1", CT_SKIP_NO_MEMORY_OPERAND, 0x83, 0xc1, 0x01);
	SKIPPED("jmp rax", CT_SKIP_NO_MEMORY_OPERAND, 0xff, 0xe0);
	SKIPPED("endbr64", CT_SKIP_NO_MEMORY_OPERAND, 0xf3, 0x0f, 0x1e, 0xfa);
}

static void test_undecodable(void)
{
	static const uint8_t pushes[] = { 0x06 };            /* push es: invalid in 64-bit */
	static const uint8_t cut[] = { 0x48, 0x8b };         /* truncated mov */
	static const uint8_t lockmov[] = { 0xf0, 0x8b, 0x03 }; /* lock on a plain load: #UD */
	static const uint8_t longp[16] = { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
	                                   0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x8b, 0x03 };
	struct dec_access a;
	size_t len = 99;
	CHECK_EQ_U(dec1(pushes, sizeof pushes, &a, &len), CT_SKIP_DECODE_FAILED);
	CHECK_EQ_U(len, 0);
	CHECK_EQ_U(dec1(cut, sizeof cut, &a, NULL), CT_SKIP_DECODE_FAILED);
	CHECK_EQ_U(dec1(lockmov, sizeof lockmov, &a, NULL), CT_SKIP_DECODE_FAILED);
	CHECK_EQ_U(dec1(longp, sizeof longp, &a, NULL), CT_SKIP_DECODE_FAILED);
	CHECK_EQ_U(dec1(cut, 0, &a, NULL), CT_SKIP_DECODE_FAILED);
}

static void test_stack_accesses(void)
{
	/* the address actually accessed: push writes below rsp, pop reads at rsp */
	ACCESS("push rax", RSPV - 8, 8, CT_ACCESS_STORE, 0x50);
	ACCESS("push imm8", RSPV - 8, 8, CT_ACCESS_STORE, 0x6a, 0x01);
	ACCESS("pushfq", RSPV - 8, 8, CT_ACCESS_STORE, 0x9c);
	ACCESS("pop rcx", RSPV, 8, CT_ACCESS_LOAD, 0x59);
	ACCESS("ret", RSPV, 8, CT_ACCESS_LOAD, 0xc3);
	ACCESS("call rel32", RSPV - 8, 8, CT_ACCESS_STORE, 0xe8, 0x00, 0x00, 0x00, 0x00);
	ACCESS("leave (reads [rbp])", RBPV, 8, CT_ACCESS_LOAD, 0xc9);
	/* two memory operands: the explicit one wins over the stack slot */
	ACCESS("push qword [rbx]", RBXV, 8, CT_ACCESS_LOAD, 0xff, 0x33);
	ACCESS("pop qword [rbx]", RBXV, 8, CT_ACCESS_STORE, 0x8f, 0x03);
	ACCESS("call [rip+0x10]", IP + 6 + 0x10, 8, CT_ACCESS_LOAD,
	       0xff, 0x15, 0x10, 0x00, 0x00, 0x00);
	/* pop [rsp+8] computes its address after the increment */
	ACCESS("pop qword [rsp+8]", RSPV + 8 + 8, 8, CT_ACCESS_STORE, 0x8f, 0x44, 0x24, 0x08);
	ACCESS("mov [rsp+8],rax", RSPV + 8, 8, CT_ACCESS_STORE, 0x48, 0x89, 0x44, 0x24, 0x08);
}

static void test_string_ops(void)
{
	/* one element at the current rdi/rsi; movs: the destination */
	ACCESS("rep movsb", RDIV, 1, CT_ACCESS_STORE, 0xf3, 0xa4);
	ACCESS("rep movsq", RDIV, 8, CT_ACCESS_STORE, 0xf3, 0x48, 0xa5);
	ACCESS("rep stosd", RDIV, 4, CT_ACCESS_STORE, 0xf3, 0xab);
	ACCESS("lodsb", RSIV, 1, CT_ACCESS_LOAD, 0xac);
	ACCESS("repe cmpsb", RSIV, 1, CT_ACCESS_LOAD, 0xf3, 0xa6);
	ACCESS("repne scasb", RDIV, 1, CT_ACCESS_LOAD, 0xf2, 0xae);
}

static void test_special_addressing(void)
{
	/* xlat reads [rbx + al] */
	ACCESS("xlatb", RBXV + (RAXV & 0xff), 1, CT_ACCESS_LOAD, 0xd7);
	/* 32-bit addressing wraps: mov eax,[ebx] with rbx above 4 GiB */
	{
		static const uint8_t b[] = { 0x67, 0x8b, 0x03 };
		struct dec_regs r = regs();
		struct dec_access a;
		r.gpr[DEC_RBX] = 0x100002000ULL;
		CHECK_EQ_U(dec_access_at(b, sizeof b, IP, &r, &a, NULL), 0);
		CHECK_EQ_U(a.addr, 0x2000);
	}
	/* bt [rbx],rcx: the bit offset selects the qword (signed) */
	{
		static const uint8_t b[] = { 0x48, 0x0f, 0xa3, 0x0b };
		struct dec_regs r = regs();
		struct dec_access a;
		CHECK_EQ_U(dec_access_at(b, sizeof b, IP, &r, &a, NULL), 0);
		CHECK_EQ_U(a.addr, RBXV);
		r.gpr[DEC_RCX] = 130;
		CHECK_EQ_U(dec_access_at(b, sizeof b, IP, &r, &a, NULL), 0);
		CHECK_EQ_U(a.addr, RBXV + 16);
		r.gpr[DEC_RCX] = (uint64_t)-1;
		CHECK_EQ_U(dec_access_at(b, sizeof b, IP, &r, &a, NULL), 0);
		CHECK_EQ_U(a.addr, RBXV - 8);
		CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	}
	/* bt [rbx],imm8: the immediate does not move the address */
	ACCESS("bt dword [rbx],5", RBXV, 4, CT_ACCESS_LOAD, 0x0f, 0xba, 0x23, 0x05);
}

/* ---- dec_sample_access ---------------------------------------------------- */

/* Place code at the end of a buffer preceded by int3 padding (a 1-byte
 * instruction that never combines with what follows) and return the address
 * of byte rip_off within code. */
static uint8_t g_codebuf[256];

static uint64_t place(const uint8_t *code, size_t n, size_t rip_off)
{
	memset(g_codebuf, 0xcc, sizeof g_codebuf);
	memcpy(g_codebuf + 64, code, n);
	return (uint64_t)(uintptr_t)(g_codebuf + 64 + rip_off);
}

static int sample(uint64_t rip, struct dec_regs *r, struct dec_access *a)
{
	r->rip = rip;
	memset(a, 0xee, sizeof *a);
	return dec_sample_access(r, a);
}

static void test_sample_prev_insn(void)
{
	/* mov rax,[rbx+8] ; add ecx,1 -- rip after the mov */
	static const uint8_t code[] = { 0x48, 0x8b, 0x43, 0x08, 0x83, 0xc1, 0x01 };
	struct dec_regs r = regs();
	struct dec_access a;
	CHECK_EQ_U(sample(place(code, sizeof code, 4), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 8);
	CHECK_EQ_U(a.len, 8); /* the REX-less reading agrees; the longest gives the length */
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
}

static void test_sample_prev_rip_relative(void)
{
	/* mov [rip+0x100],edx ; add ecx,1 -- rip-relative to rip itself */
	static const uint8_t code[] = { 0x89, 0x15, 0x00, 0x01, 0x00, 0x00, 0x83, 0xc1, 0x01 };
	struct dec_regs r = regs();
	struct dec_access a;
	uint64_t rip = place(code, sizeof code, 6);
	CHECK_EQ_U(sample(rip, &r, &a), 0);
	CHECK_EQ_U(a.addr, rip + 0x100);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
}

static void test_sample_overwritten_base(void)
{
	/* mov rax,[rax] ; mov [rbx+4],ecx -- rax is gone: use the insn at rip */
	static const uint8_t code[] = { 0x48, 0x8b, 0x00, 0x89, 0x4b, 0x04 };
	struct dec_regs r = regs();
	struct dec_access a;
	CHECK_EQ_U(sample(place(code, sizeof code, 3), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 4);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(a.len, 4);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* a partial write counts too: mov al,[rax] */
	static const uint8_t code2[] = { 0x8a, 0x00, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(code2, sizeof code2, 2), &r, &a), 0);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* index overwritten: mov rcx,[rbx+rcx*8] */
	static const uint8_t code3[] = { 0x48, 0x8b, 0x0c, 0xcb, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(code3, sizeof code3, 4), &r, &a), 0);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* but mov rax,[rbx+rcx*8] is fine */
	static const uint8_t code4[] = { 0x48, 0x8b, 0x04, 0xcb, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(code4, sizeof code4, 4), &r, &a), 0);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
	CHECK_EQ_U(a.addr, RBXV + RCXV * 8);
	/* the instruction at rip has no memory operand either: a skip */
	static const uint8_t code5[] = { 0x48, 0x8b, 0x00, 0x83, 0xc1, 0x01 };
	CHECK_EQ_U(sample(place(code5, sizeof code5, 3), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
}

static void test_sample_stack_prev(void)
{
	/* registers are after the instruction: push wrote at the new rsp, pop read
	 * just below it */
	static const uint8_t push[] = { 0x50, 0x83, 0xc1, 0x01 };
	static const uint8_t pop[] = { 0x58, 0x83, 0xc1, 0x01 };
	struct dec_regs r = regs();
	struct dec_access a;
	CHECK_EQ_U(sample(place(push, sizeof push, 1), &r, &a), 0);
	CHECK_EQ_U(a.addr, RSPV);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
	CHECK_EQ_U(sample(place(pop, sizeof pop, 1), &r, &a), 0);
	CHECK_EQ_U(a.addr, RSPV - 8);
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
}

static void test_sample_disp_tail(void)
{
	/* mov eax,[rip+0x5678] then mov [rbx+4],ecx at rip.  Decoding backwards
	 * one byte at a time, the displacement's tail "00 00" also reads as
	 * add [rax],al ending at rip; decoding forward from further back does
	 * not fall for it. */
	static const uint8_t code[] = { 0x8b, 0x05, 0x78, 0x56, 0x00, 0x00, 0x89, 0x4b, 0x04 };
	struct dec_regs r = regs();
	struct dec_access a;
	uint64_t rip = place(code, sizeof code, 6);
	CHECK_EQ_U(sample(rip, &r, &a), 0);
	CHECK_EQ_U(a.addr, rip + 0x5678);
	CHECK_EQ_U(a.len, 4);
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
	/* the tail "c3" (ret) of mov eax,[rbx-0x3d] is not taken for a ret */
	static const uint8_t code2[] = { 0x8b, 0x43, 0xc3, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(code2, sizeof code2, 3), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV - 0x3d);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
	/* SIB without displacement: the tail "04 cb" reads as add al,0xcb */
	static const uint8_t code3[] = { 0x48, 0x8b, 0x04, 0xcb, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(code3, sizeof code3, 4), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + RCXV * 8);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
}

static void test_sample_ambiguous(void)
{
	/* 31 bytes b0 then 50 before rip: from even offsets the bytes read as
	 * mov al,0xb0 ... mov al,0x50; from odd ones as mov al,0xb0 ... push
	 * rax.  Both end exactly at rip: two readings, so the previous
	 * instruction is not used and the one at rip is. */
	uint8_t code[32 + 3];
	memset(code, 0xb0, 31);
	code[31] = 0x50;
	code[32] = 0x89; code[33] = 0x4b; code[34] = 0x04; /* mov [rbx+4],ecx */
	struct dec_regs r = regs();
	struct dec_access a;
	CHECK_EQ_U(sample(place(code, sizeof code, 32), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 4);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* the same with one reading only (odd bytes b0 b0 ... 50 50): fine */
	code[30] = 0x50;
	memset(code, 0xcc, 30); /* int3 padding then push rax; push rax */
	CHECK_EQ_U(sample(place(code, sizeof code, 32), &r, &a), 0);
	CHECK_EQ_U(a.addr, RSPV);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);
}

static void test_sample_branch_before(void)
{
	/* call [rax] before rip: rip is a return address, the call did not fall
	 * through; use the instruction at rip */
	static const uint8_t code[] = { 0xff, 0x10, 0x8b, 0x43, 0x08 };
	struct dec_regs r = regs();
	struct dec_access a;
	CHECK_EQ_U(sample(place(code, sizeof code, 2), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 8);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* endbr64 at rip: a branch target, what precedes it did not just run */
	static const uint8_t code2[] = { 0x48, 0x8b, 0x43, 0x08, 0xf3, 0x0f, 0x1e, 0xfa };
	CHECK_EQ_U(sample(place(code2, sizeof code2, 4), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
}

/* The forward rule: no memory access at rip, the first one after it whose
 * address registers the instructions in between leave alone. */
static void test_sample_next_insn(void)
{
	struct dec_regs r = regs();
	struct dec_access a;
	/* add ecx,1 ; mov [rbx+4],ecx: ecx is data, not address */
	static const uint8_t c1[] = { 0x83, 0xc1, 0x01, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(c1, sizeof c1, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 4);
	CHECK_EQ_U(a.len, 4);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* the stencil kernel's loop: mulsd xmm0,xmm1 ; movsd [r13+rax*8-8],xmm0 */
	static const uint8_t c2[] = { 0xf2, 0x0f, 0x59, 0xc1,
	                              0xf2, 0x41, 0x0f, 0x11, 0x44, 0xc5, 0xf8 };
	CHECK_EQ_U(sample(place(c2, sizeof c2, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, 0x100000ULL * 13 + RAXV * 8 - 8);
	CHECK_EQ_U(a.len, 8);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* lea rax,[rbx+8] ; mov ecx,[rbx]: lea wrote rax only */
	static const uint8_t c3[] = { 0x48, 0x8d, 0x43, 0x08, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(c3, sizeof c3, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV);
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	/* seven steps are looked at past rip, not eight */
	uint8_t c4[8 * 3 + 3];
	for (int i = 0; i < 8; i++)
		memcpy(c4 + 3 * i, (const uint8_t[]){ 0x83, 0xc1, 0x01 }, 3);
	memcpy(c4 + 24, (const uint8_t[]){ 0x89, 0x4b, 0x04 }, 3);
	CHECK_EQ_U(sample(place(c4 + 3, sizeof c4 - 3, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 4);
	CHECK_EQ_U(sample(place(c4, sizeof c4, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
}

/* Branches on the way: a direct jmp, and a conditional branch right after a
 * cmp or test of registers the walk has not written, go where the sample's
 * registers say. */
static void test_sample_next_insn_branches(void)
{
	struct dec_regs r = regs();
	struct dec_access a;
	/* the omp_reduce kernel's dot product, sampled at the cmp closing it:
	 *   movsd xmm0,[rcx+rdx] ; mulsd xmm0,[rbx+rdx] ; add rdx,8 ;
	 *   addsd xmm1,xmm0 ; cmp rsi,rdx ; jne (the movsd)
	 * rsi != rdx: the loop goes on, the next access is the movsd's */
	static const uint8_t loop[] = { 0xf2, 0x0f, 0x10, 0x04, 0x11, 0xf2, 0x0f, 0x59, 0x04, 0x13,
	                                0x48, 0x83, 0xc2, 0x08, 0xf2, 0x0f, 0x58, 0xc8,
	                                0x48, 0x39, 0xd6, 0x75, 0xe9 };
	CHECK_EQ_U(sample(place(loop, sizeof loop, 18), &r, &a), 0);
	CHECK_EQ_U(a.addr, RCXV + RDXV);
	CHECK_EQ_U(a.len, 8);
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	/* rsi == rdx: the loop ends, into int3 padding */
	r.gpr[DEC_RSI] = RDXV;
	CHECK_EQ_U(sample(place(loop, sizeof loop, 18), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	r = regs();
	/* jmp +2 ; int3 ; int3 ; mov ecx,[rbx] */
	static const uint8_t j[] = { 0xeb, 0x02, 0xcc, 0xcc, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(j, sizeof j, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV);
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	/* ecx = -1: cmp ecx,5 ; jl +2 is taken (signed), jb +2 is not
	 * (unsigned), then int3 ; int3 ; mov ecx,[rbx] */
	r.gpr[DEC_RCX] = 0xffffffffULL;
	static const uint8_t jl[] = { 0x83, 0xf9, 0x05, 0x7c, 0x02, 0xcc, 0xcc, 0x8b, 0x0b };
	static const uint8_t jb[] = { 0x83, 0xf9, 0x05, 0x72, 0x02, 0xcc, 0xcc, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(jl, sizeof jl, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV);
	CHECK_EQ_U(sample(place(jb, sizeof jb, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	/* test ecx,ecx ; jz +2: ecx = 0 takes it */
	r.gpr[DEC_RCX] = 0;
	static const uint8_t jz[] = { 0x85, 0xc9, 0x74, 0x02, 0xcc, 0xcc, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(jz, sizeof jz, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV);
}

/* The registers as the instructions stepped over change them: mov, lea,
 * add, sub, inc, dec and xor-zeroing of 32- and 64-bit registers are
 * computed (a 32-bit write clears the upper half). */
static void test_sample_next_insn_emulated(void)
{
	struct dec_regs r = regs();
	struct dec_access a;
	/* add ebx,1 ; mov [rbx+4],ecx */
	static const uint8_t c1[] = { 0x83, 0xc3, 0x01, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(c1, sizeof c1, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 1 + 4);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	/* mov ecx,eax ; mov eax,[rbx+rcx*4] */
	r.gpr[DEC_RAX] = 0xffffffff00000010ULL;
	static const uint8_t c2[] = { 0x89, 0xc1, 0x8b, 0x04, 0x8b };
	CHECK_EQ_U(sample(place(c2, sizeof c2, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 0x10 * 4);
	r = regs();
	/* lea rax,[rbx+rcx*8+0x10] ; sub rax,8 ; mov ecx,[rax] */
	static const uint8_t c3[] = { 0x48, 0x8d, 0x44, 0xcb, 0x10, 0x48, 0x83, 0xe8, 0x08,
	                              0x8b, 0x08 };
	CHECK_EQ_U(sample(place(c3, sizeof c3, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + RCXV * 8 + 0x10 - 8);
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	/* xor esi,esi ; mov ecx,[rdi+rsi] */
	static const uint8_t c4[] = { 0x31, 0xf6, 0x8b, 0x0c, 0x37 };
	CHECK_EQ_U(sample(place(c4, sizeof c4, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RDIV);
	/* sub rsp,8 ; push rax: the slot below the new rsp */
	static const uint8_t c5[] = { 0x48, 0x83, 0xec, 0x08, 0x50 };
	CHECK_EQ_U(sample(place(c5, sizeof c5, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RSPV - 16);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	/* libgomp's spin: pause ; add rax,1 ; cmp rax,rdx ; je out ; mov ecx,[rbp]
	 * with rax + 1 != rdx: the spin goes on, to the load of the flag */
	static const uint8_t spin[] = { 0xf3, 0x90, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xd0,
	                                0x74, 0x2d, 0x8b, 0x4d, 0x00 };
	CHECK_EQ_U(sample(place(spin, sizeof spin, 2), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBPV);
	CHECK_EQ_U(a.kind, CT_ACCESS_LOAD);
	/* with rax + 1 == rdx it leaves (a target beyond the bytes read) */
	r.gpr[DEC_RDX] = RAXV + 1;
	CHECK_EQ_U(sample(place(spin, sizeof spin, 2), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	r = regs();
	/* dec ecx ; jnz +2 ; int3 ; int3 ; mov eax,[rbx]: ecx 3 -> 2, taken */
	static const uint8_t c6[] = { 0xff, 0xc9, 0x75, 0x02, 0xcc, 0xcc, 0x8b, 0x03 };
	CHECK_EQ_U(sample(place(c6, sizeof c6, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV);
	/* dec ecx ; jb +2: dec leaves CF alone, unknown */
	static const uint8_t c7[] = { 0xff, 0xc9, 0x72, 0x02, 0xcc, 0xcc, 0x8b, 0x03 };
	CHECK_EQ_U(sample(place(c7, sizeof c7, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
}

static void test_sample_next_insn_refused(void)
{
	struct dec_regs r = regs();
	struct dec_access a;
	/* imul ebx,ebx ; mov [rbx+4],ecx: a base the walk does not compute */
	static const uint8_t c1[] = { 0x0f, 0xaf, 0xdb, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(c1, sizeof c1, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	/* mov bl,1 ; mov [rbx+4],ecx: a partial write */
	static const uint8_t c2[] = { 0xb3, 0x01, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(c2, sizeof c2, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	/* jne +0 at rip ; mov [rbx+4],ecx: the flags were set before the sample */
	static const uint8_t c3[] = { 0x75, 0x00, 0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(c3, sizeof c3, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	/* imul ecx,ecx ; cmp ecx,4 ; jne +0 ; mov ...: a flag of an unknown value */
	static const uint8_t c3b[] = { 0x0f, 0xaf, 0xc9, 0x83, 0xf9, 0x04, 0x75, 0x00,
	                               0x89, 0x4b, 0x04 };
	CHECK_EQ_U(sample(place(c3b, sizeof c3b, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	/* jmp rax ; mov ecx,[rbx]: an indirect branch */
	static const uint8_t c3c[] = { 0xff, 0xe0, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(c3c, sizeof c3c, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	/* lea rbx,[rbx+8] ; mov ecx,[rbx]: computed, rip's reason is kept for
	 * nothing (the access is found) */
	static const uint8_t c5[] = { 0x48, 0x8d, 0x5b, 0x08, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(c5, sizeof c5, 0), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 8);
	/* lea rbx,[rbx+8] ; int3: rip's own reason stays */
	static const uint8_t c5b[] = { 0x48, 0x8d, 0x5b, 0x08, 0xcc };
	CHECK_EQ_U(sample(place(c5b, sizeof c5b, 0), &r, &a), CT_SKIP_LEA_NOP);
	/* syscall ; mov ecx,[rbx]: not a straight run */
	static const uint8_t c6[] = { 0x0f, 0x05, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(c6, sizeof c6, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
	/* a new fs base ends it: wrfsbase rax ; mov ecx,[rbx] */
	static const uint8_t c7[] = { 0xf3, 0x48, 0x0f, 0xae, 0xd0, 0x8b, 0x0b };
	CHECK_EQ_U(sample(place(c7, sizeof c7, 0), &r, &a), CT_SKIP_NO_MEMORY_OPERAND);
}

/* A CPU-time timer's sample just after a syscall is kernel time; a perf
 * sample there (user time only) is the instruction at rip. */
static void test_sample_after_syscall(void)
{
	static const uint8_t code[] = { 0x0f, 0x05, 0x48, 0x8b, 0x43, 0x08 };
	struct dec_regs r = regs();
	struct dec_access a;
	uint64_t rip = place(code, sizeof code, 2);
	CHECK_EQ_U(sample(rip, &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 8);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);
	r.cpu_clock = true;
	CHECK_EQ_U(sample(rip, &r, &a), CT_SKIP_KERNEL);
	/* the bytes 0f 05 as the tail of another instruction are not a syscall:
	 * mov eax,0x050f0000 ; mov rax,[rbx+8] */
	static const uint8_t code2[] = { 0xb8, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x8b, 0x43, 0x08 };
	CHECK_EQ_U(sample(place(code2, sizeof code2, 5), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 8);
}

static void test_sample_page_edges(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	uint8_t *p2 = m + pg;
	memset(p2, 0xcc, (size_t)pg);
	CHECK_EQ_U(munmap(m, (size_t)pg), 0);             /* page before: gone */
	CHECK_EQ_U(munmap(m + 2 * pg, (size_t)pg), 0);    /* page after: gone */
	struct dec_regs r = regs();
	struct dec_access a;

	/* rip at the very start of the page: no previous bytes, use rip */
	static const uint8_t ld[] = { 0x8b, 0x43, 0x08 };
	memcpy(p2, ld, sizeof ld);
	CHECK_EQ_U(sample((uint64_t)(uintptr_t)p2, &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 8);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED);

	/* rip two bytes in: the previous instruction lies wholly in the page */
	static const uint8_t st[] = { 0x89, 0x0b, 0x8b, 0x43, 0x08 };
	memcpy(p2, st, sizeof st);
	CHECK_EQ_U(sample((uint64_t)(uintptr_t)(p2 + 2), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV);
	CHECK_EQ_U(a.kind, CT_ACCESS_STORE);
	CHECK_EQ_U(a.flags, CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN);

	/* an instruction that ends exactly at the page end, next page unmapped */
	uint8_t *end = p2 + pg;
	memcpy(end - sizeof ld, ld, sizeof ld);
	CHECK_EQ_U(sample((uint64_t)(uintptr_t)(end - sizeof ld), &r, &a), 0);
	CHECK_EQ_U(a.addr, RBXV + 8);
	/* ... and one cut by the page end: undecodable, no crash */
	CHECK_EQ_U(sample((uint64_t)(uintptr_t)(end - 1), &r, &a), CT_SKIP_DECODE_FAILED);

	/* rip itself unmapped */
	int e = errno = 12345;
	CHECK_EQ_U(sample((uint64_t)(uintptr_t)m, &r, &a), CT_SKIP_UNREADABLE_IP);
	CHECK_EQ_U(sample((uint64_t)(uintptr_t)(m + 2 * pg + 100), &r, &a), CT_SKIP_UNREADABLE_IP);
	CHECK_EQ_U(errno, e); /* errno preserved */
	CHECK_EQ_U(sample(0x10, &r, &a), CT_SKIP_UNREADABLE_IP);
	CHECK_EQ_U(sample(0xffffffff81000000ULL, &r, &a), CT_SKIP_KERNEL);
	munmap(p2, (size_t)pg);
}

static void test_check_reader(void)
{
	CHECK_EQ_U(dec_check_reader(), 0);
}

static void test_sample_unreadable_page(void)
{
	/* a PROT_NONE page (mapped, not readable) is refused, not read */
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	struct dec_regs r = regs();
	struct dec_access a;
	CHECK_EQ_U(sample((uint64_t)(uintptr_t)(m + 100), &r, &a), CT_SKIP_UNREADABLE_IP);
	munmap(m, (size_t)pg);
}

/* ---- register dumps ----------------------------------------------------------- */

static void test_regs_from_perf(void)
{
	/* one value per set bit, lowest bit first, in perf's order */
	uint64_t vals[64];
	int k = 0;
	CHECK_EQ_U(DEC_PERF_REGS_MASK, 0xff01ffULL);
	for (int bit = 0; bit < 64; bit++)
		if (DEC_PERF_REGS_MASK & (1ULL << bit))
			vals[k++] = 0x1000 + (uint64_t)bit;
	CHECK_EQ_U(k, 17);
	struct dec_regs r;
	memset(&r, 0xab, sizeof r);
	r.fs_base = 77;
	dec_regs_from_perf(&r, vals, DEC_PERF_REGS_MASK);
	CHECK_EQ_U(r.gpr[DEC_RAX], 0x1000 + PERF_REG_X86_AX);
	CHECK_EQ_U(r.gpr[DEC_RBX], 0x1000 + PERF_REG_X86_BX);
	CHECK_EQ_U(r.gpr[DEC_RCX], 0x1000 + PERF_REG_X86_CX);
	CHECK_EQ_U(r.gpr[DEC_RDX], 0x1000 + PERF_REG_X86_DX);
	CHECK_EQ_U(r.gpr[DEC_RSI], 0x1000 + PERF_REG_X86_SI);
	CHECK_EQ_U(r.gpr[DEC_RDI], 0x1000 + PERF_REG_X86_DI);
	CHECK_EQ_U(r.gpr[DEC_RBP], 0x1000 + PERF_REG_X86_BP);
	CHECK_EQ_U(r.gpr[DEC_RSP], 0x1000 + PERF_REG_X86_SP);
	CHECK_EQ_U(r.rip, 0x1000 + PERF_REG_X86_IP);
	for (int i = 0; i < 8; i++)
		CHECK_EQ_U(r.gpr[DEC_R8 + i], 0x1000 + PERF_REG_X86_R8 + (unsigned)i);
	CHECK_EQ_U(r.fs_base, 77); /* untouched */

	/* a mask with extra registers (flags, segments) is skipped over */
	uint64_t mask = DEC_PERF_REGS_MASK | (1ULL << PERF_REG_X86_FLAGS) | (1ULL << PERF_REG_X86_FS);
	k = 0;
	for (int bit = 0; bit < 64; bit++)
		if (mask & (1ULL << bit))
			vals[k++] = 0x2000 + (uint64_t)bit;
	dec_regs_from_perf(&r, vals, mask);
	CHECK_EQ_U(r.rip, 0x2000 + PERF_REG_X86_IP);
	CHECK_EQ_U(r.gpr[DEC_R8], 0x2000 + PERF_REG_X86_R8);
	CHECK_EQ_U(r.gpr[DEC_R15], 0x2000 + PERF_REG_X86_R15);
	/* a smaller mask: missing registers read as 0 */
	uint64_t small[2] = { 5, 6 };
	dec_regs_from_perf(&r, small, (1ULL << PERF_REG_X86_BX) | (1ULL << PERF_REG_X86_IP));
	CHECK_EQ_U(r.gpr[DEC_RBX], 5);
	CHECK_EQ_U(r.rip, 6);
	CHECK_EQ_U(r.gpr[DEC_RAX], 0);
}

static void test_regs_from_ucontext(void)
{
	ucontext_t uc;
	memset(&uc, 0, sizeof uc);
	static const int order[DEC_NGPR] = {
		REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
	};
	for (int i = 0; i < DEC_NGPR; i++)
		uc.uc_mcontext.gregs[order[i]] = 0x3000 + i;
	uc.uc_mcontext.gregs[REG_RIP] = 0x401234;
	struct dec_regs r;
	memset(&r, 0, sizeof r);
	dec_regs_from_ucontext(&r, &uc);
	for (int i = 0; i < DEC_NGPR; i++)
		CHECK_EQ_U(r.gpr[i], 0x3000 + (unsigned)i);
	CHECK_EQ_U(r.rip, 0x401234);
}

/* ---- live: SIGPROF over an asm loop --------------------------------------------- */

/* A timer interrupt lands on some instruction of the loop; where depends on
 * the cpu and the hypervisor (and on the load), so the test asserts what
 * the decoder must make of each landing place, not how often each occurs:
 *   mov1   the load at rip                      decoded, not via prev
 *   add    rip after mov1: mov1                 decoded via prev
 *   mov2   the load at rip (add has no operand) decoded, not via prev
 *   imul   rip after mov2: mov2                 decoded via prev
 *   inc, and, and the mov after the loop: no memory operand here or just
 *          before (jnz does not fall through), and the forward rule stops
 *          at `and` (it does not compute it)     skipped
 *   dec, jnz  the same, or the forward rule follows dec's flags and the
 *          taken jnz back to mov1, with rcx as it is: mov1's load, not via
 *          prev (an iteration's last sample: skipped)
 * Every decoded address must be a 4-byte load from g_arr. */
extern const char ct_dec_loop_start[], ct_dec_loop_mov2[], ct_dec_loop_inc[], ct_dec_loop_dec[],
	ct_dec_loop_end[];
static uint32_t g_arr[1024];
static volatile int g_nsamples, g_inloop, g_ok, g_bad, g_prev, g_skip;
static volatile uint64_t g_bad_rip;

__asm__(".text\n"
        ".globl ct_dec_loop_run\n"
        ".type ct_dec_loop_run,@function\n"
        "ct_dec_loop_run:\n"          /* rdi = arr, rsi = iterations */
        "  xor %ecx, %ecx\n"
        "  xor %edx, %edx\n"
        ".globl ct_dec_loop_start\n"
        "ct_dec_loop_start:\n"
        "  mov (%rdi,%rcx,4), %eax\n"
        "  add %eax, %edx\n"
        ".globl ct_dec_loop_mov2\n"
        "ct_dec_loop_mov2:\n"
        "  mov 8(%rdi,%rcx,4), %r8d\n"
        "  imul %r8d, %edx\n"
        ".globl ct_dec_loop_inc\n"
        "ct_dec_loop_inc:\n"
        "  inc %rcx\n"
        "  and $1015, %rcx\n"
        ".globl ct_dec_loop_dec\n"
        "ct_dec_loop_dec:\n"
        "  dec %rsi\n"
        "  jnz ct_dec_loop_start\n"
        ".globl ct_dec_loop_end\n"
        "ct_dec_loop_end:\n"
        "  mov %edx, %eax\n"
        "  ret\n"
        ".size ct_dec_loop_run, .-ct_dec_loop_run\n");
uint32_t ct_dec_loop_run(const uint32_t *arr, uint64_t n);

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	(void)sig; (void)si;
	struct dec_regs r;
	struct dec_access a;
	memset(&r, 0, sizeof r);
	dec_regs_from_ucontext(&r, ucv);
	g_nsamples++;
	uint64_t start = (uint64_t)(uintptr_t)ct_dec_loop_start;
	uint64_t mov2 = (uint64_t)(uintptr_t)ct_dec_loop_mov2;
	uint64_t inc = (uint64_t)(uintptr_t)ct_dec_loop_inc;
	if (r.rip < start || r.rip > (uint64_t)(uintptr_t)ct_dec_loop_end)
		return;
	g_inloop++;
	int rc = dec_sample_access(&r, &a);
	bool want_load = r.rip < inc;
	bool may_load = r.rip >= (uint64_t)(uintptr_t)ct_dec_loop_dec &&
	                r.rip < (uint64_t)(uintptr_t)ct_dec_loop_end;
	bool want_prev = want_load && r.rip != start && r.rip != mov2;
	uint64_t lo = (uint64_t)(uintptr_t)g_arr, hi = lo + sizeof g_arr;
	bool loaded = rc == 0 && a.addr >= lo && a.addr + a.len <= hi &&
	              a.kind == CT_ACCESS_LOAD && a.len == 4 && (a.flags & CT_SAMPLE_RECONSTRUCTED) &&
	              !(a.flags & CT_SAMPLE_PREV_INSN) == !want_prev;
	bool good;
	if (!want_load && !(may_load && rc == 0)) {
		good = rc == CT_SKIP_NO_MEMORY_OPERAND;
		g_skip += good;
	} else {
		good = loaded;
		g_ok += good;
		g_prev += good && want_prev;
	}
	if (!good) {
		g_bad++;
		g_bad_rip = r.rip - start;
	}
}

/* The loop above, sampled at `dec` with registers set by hand: the forward
 * rule follows dec's flags; with rsi = 5 the jnz is taken and the next
 * access is mov1's load of arr[rcx] (not via the previous instruction, an
 * `and`); with rsi = 1 it falls through to the mov and ret after the loop:
 * the ret's stack read, not a load from arr. */
static void test_sample_loop_dec_forward(void)
{
	struct dec_regs r;
	struct dec_access a;
	memset(&r, 0, sizeof r);
	r.rip = (uint64_t)(uintptr_t)ct_dec_loop_dec;
	r.gpr[DEC_RDI] = (uint64_t)(uintptr_t)g_arr;
	r.gpr[DEC_RCX] = 7;
	r.gpr[DEC_RSI] = 5;
	r.gpr[DEC_RSP] = (uint64_t)(uintptr_t)&r;
	CHECK_EQ_U(dec_sample_access(&r, &a), 0);
	CHECK_EQ_U(a.addr, (uint64_t)(uintptr_t)&g_arr[7]);
	CHECK_EQ_U(a.len, 4);
	CHECK(a.kind == CT_ACCESS_LOAD && (a.flags & CT_SAMPLE_RECONSTRUCTED) &&
	      !(a.flags & CT_SAMPLE_PREV_INSN));
	r.gpr[DEC_RSI] = 1;
	int rc = dec_sample_access(&r, &a);
	CHECK(rc != 0 || a.addr < (uint64_t)(uintptr_t)g_arr ||
	      a.addr >= (uint64_t)(uintptr_t)(g_arr + 1024));
}

static void test_sample_live_sigprof(void)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, &old);
	struct itimerval it = { { 0, 500 }, { 0, 500 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &it, NULL);
	for (int round = 0; round < 40 && g_inloop < 200; round++)
		ct_dec_loop_run(g_arr, 20000000);
	setitimer(ITIMER_PROF, &off, NULL);
	sigaction(SIGPROF, &old, NULL);
	if (g_inloop < 20) {
		SKIP("too few timer samples inside the loop");
		return;
	}
	printf("  (live: %d samples, %d in the loop: %d decoded in g_arr (%d via the previous "
	       "instruction), %d skipped where no load is, %d wrong)\n", g_nsamples, g_inloop, g_ok,
	       g_prev, g_skip, g_bad);
	if (g_bad)
		printf("  (a wrong one at loop offset %llu)\n", (unsigned long long)g_bad_rip);
	CHECK_EQ_U(g_bad, 0);
}

int main(void)
{
	dec_init();
	RUN(test_mov_load_sizes);
	RUN(test_mov_store_sizes);
	RUN(test_rip_relative);
	RUN(test_segment_bases);
	RUN(test_atomics_and_rmw);
	RUN(test_sse_avx_lengths);
	RUN(test_skips);
	RUN(test_undecodable);
	RUN(test_stack_accesses);
	RUN(test_string_ops);
	RUN(test_special_addressing);
	RUN(test_sample_prev_insn);
	RUN(test_sample_prev_rip_relative);
	RUN(test_sample_overwritten_base);
	RUN(test_sample_stack_prev);
	RUN(test_sample_disp_tail);
	RUN(test_sample_ambiguous);
	RUN(test_sample_branch_before);
	RUN(test_sample_next_insn);
	RUN(test_sample_next_insn_branches);
	RUN(test_sample_next_insn_emulated);
	RUN(test_sample_next_insn_refused);
	RUN(test_sample_after_syscall);
	RUN(test_sample_page_edges);
	RUN(test_sample_unreadable_page);
	RUN(test_check_reader);
	RUN(test_regs_from_perf);
	RUN(test_regs_from_ucontext);
	RUN(test_sample_loop_dec_forward);
	RUN(test_sample_live_sigprof);
	return check_summary();
}
