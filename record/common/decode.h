/* Instruction decoding for address reconstruction (soft sampler) and for the
 * access length and kind of precise samples (pebs, ibs).  Built on Zydis.
 *
 * Everything here is async-signal-safe: no allocation, no locks, no stdio;
 * it runs in the sampling signal handler. */
#ifndef CT_DECODE_H
#define CT_DECODE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <asm/perf_regs.h>

/* General-purpose registers in x86 encoding order (rax rcx rdx rbx rsp rbp
 * rsi rdi r8..r15), plus rip and the segment bases. */
enum dec_gpr {
	DEC_RAX, DEC_RCX, DEC_RDX, DEC_RBX, DEC_RSP, DEC_RBP, DEC_RSI, DEC_RDI,
	DEC_R8, DEC_R9, DEC_R10, DEC_R11, DEC_R12, DEC_R13, DEC_R14, DEC_R15,
	DEC_NGPR
};

struct dec_regs {
	uint64_t gpr[DEC_NGPR];
	uint64_t rip;
	uint64_t fs_base, gs_base;
	/* Decoded after the fact, on another thread (the soft sampler's
	 * writer-side decode): the code may have been unmapped since the
	 * sample, so its bytes are read only through the syscall. */
	bool late;
	/* Sampled by a clock that also runs in the kernel (the POSIX CPU-time
	 * timers): an expiry during a system call is delivered at its return,
	 * so a sample just after a syscall instruction stands for kernel time
	 * (CT_SKIP_KERNEL), not for the instructions around it. */
	bool cpu_clock;
};

/* perf_event_attr.sample_regs_user for the soft sampler: AX..SP, IP and
 * R8..R15 (bits 0-8 and 16-23 of enum perf_event_x86_regs).  FLAGS and the
 * segment registers are left out: PERF_REG_X86_FS/GS are selectors, not
 * bases; the runtime records the fs base itself (arch_prctl/rdfsbase at
 * thread start) and fills dec_regs.fs_base. */
#define DEC_PERF_REG_BIT(n) (1ULL << (n))
#define DEC_PERF_REGS_MASK ( \
	DEC_PERF_REG_BIT(PERF_REG_X86_AX) | DEC_PERF_REG_BIT(PERF_REG_X86_BX) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_CX) | DEC_PERF_REG_BIT(PERF_REG_X86_DX) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_SI) | DEC_PERF_REG_BIT(PERF_REG_X86_DI) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_BP) | DEC_PERF_REG_BIT(PERF_REG_X86_SP) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_IP) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_R8) | DEC_PERF_REG_BIT(PERF_REG_X86_R9) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_R10) | DEC_PERF_REG_BIT(PERF_REG_X86_R11) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_R12) | DEC_PERF_REG_BIT(PERF_REG_X86_R13) | \
	DEC_PERF_REG_BIT(PERF_REG_X86_R14) | DEC_PERF_REG_BIT(PERF_REG_X86_R15))

/* Fill dec_regs from a perf PERF_SAMPLE_REGS_USER dump taken with mask
 * (normally DEC_PERF_REGS_MASK; values in perf's enum perf_event_x86_regs
 * order, one u64 per set bit, lowest bit first).  Registers missing from
 * mask are set to 0; extra bits in mask are skipped over correctly.
 * fs_base and gs_base are left untouched (the caller fills them). */
void dec_regs_from_perf(struct dec_regs *r, const uint64_t *vals, uint64_t mask);
/* Fill dec_regs from a signal context (ucontext_t *): the 16 GPRs and rip.
 * fs_base and gs_base are left untouched (the caller fills them). */
void dec_regs_from_ucontext(struct dec_regs *r, const void *uc);

/* Optional: initialise the shared decoder up front (otherwise the first
 * decode does it, lock-free).  Async-signal-safe, idempotent; nothing needs
 * redoing after fork(). */
void dec_init(void);

/* Whether the safe code reader works here: process_vm_readv on the process
 * itself, which some seccomp profiles (old container defaults) forbid.
 * Returns 0, or the errno (EPERM, ENOSYS, ...); without it every soft sample
 * would be skipped as CT_SKIP_UNREADABLE_IP.  For commrec --list-samplers. */
int dec_check_reader(void);

struct dec_access {
	uint64_t addr;      /* effective data address */
	uint8_t len;        /* bytes accessed */
	uint8_t kind;       /* enum ct_access_kind */
	uint8_t flags;      /* CT_SAMPLE_RECONSTRUCTED, CT_SAMPLE_PREV_INSN, CT_SAMPLE_FS_BASED */
};

/* Decode the one instruction in bytes[0..n) located at address ip and
 * compute the memory access it makes with registers r (r->rip is ignored;
 * ip is used for rip-relative operands).  Returns 0 with *a filled, or an
 * enum ct_skip_reason: no memory operand, LEA/NOP/prefetch, gather/scatter,
 * undecodable.  *insn_len receives the instruction length when non-NULL
 * (also on a skip, 0 when undecodable).  a->flags gets only
 * CT_SAMPLE_FS_BASED; the caller adds EXACT/RECONSTRUCTED.  The registers are
 * taken as the state *before* the instruction executes.  Rules:
 * commrec(1), SAMPLERS, "Address reconstruction (soft)". */
int dec_access_at(const uint8_t *bytes, size_t n, uint64_t ip,
                  const struct dec_regs *r, struct dec_access *a, size_t *insn_len);

/* The soft sampler's rule for a timer sample at r->rip: the instruction at
 * rip has not executed yet, the one before it has, and a stalled load is
 * usually the one before.  Reads the code bytes itself (safely: never faults
 * on an unmapped or unreadable page).  Prefers the previous instruction when
 * forward decoding from 32 bytes back finds it unambiguously, it falls
 * through to rip, and it did not overwrite its own address registers (r is
 * the state after it); flags CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN.
 * Otherwise the instruction at rip, or where it makes no memory access, the
 * next one that does, with the registers as the instructions in between
 * change them, where the walk can compute them and the branches on the way
 * (the forward rule): CT_SAMPLE_RECONSTRUCTED.  With r->cpu_clock, a sample
 * right after a syscall is CT_SKIP_KERNEL.  r->fs_base and
 * r->gs_base must be filled for fs:/gs: operands.  Returns 0 or an enum
 * ct_skip_reason (also CT_SKIP_UNREADABLE_IP, CT_SKIP_KERNEL).  errno is
 * preserved.  Rules and measured accuracy: commrec(1), SAMPLERS,
 * "Address reconstruction (soft)". */
int dec_sample_access(const struct dec_regs *r, struct dec_access *a);

#endif
