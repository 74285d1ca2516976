/* Instruction decoding for address reconstruction: see decode.h and
 * commrec(1), "Address reconstruction (soft)", for the rules.
 * Async-signal-safe: no allocation, no locks, no stdio; errno is preserved. */
#include "decode.h"
#include "commtrace.h"

#include <errno.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/uio.h>
#include <Zydis/Zydis.h>

/* ---- decoder ---------------------------------------------------------------- */

/* The decoder is a small plain struct; ZydisDecoderInit only fills it in.  One
 * shared copy is published with a compare-and-swap; a caller that loses the
 * race (or comes while another initialises) uses a private copy on its
 * stack, so no one ever waits. */
struct decoders {
	ZydisDecoder full;     /* operands and all */
	ZydisDecoder minimal;  /* lengths only: the synchronisation chains */
};
static struct decoders g_dec;
static int g_dec_state; /* 0 none, 1 being initialised, 2 ready */

static void decoder_init(struct decoders *d)
{
	ZydisDecoderInit(&d->full, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	d->minimal = d->full;
	ZydisDecoderEnableMode(&d->minimal, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
}

static const struct decoders *decoders(struct decoders *local)
{
	int st = __atomic_load_n(&g_dec_state, __ATOMIC_ACQUIRE);
	if (st == 2)
		return &g_dec;
	if (st == 0) {
		int zero = 0;
		if (__atomic_compare_exchange_n(&g_dec_state, &zero, 1, 0,
		                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			decoder_init(&g_dec);
			__atomic_store_n(&g_dec_state, 2, __ATOMIC_RELEASE);
			return &g_dec;
		}
	}
	decoder_init(local);
	return local;
}

void dec_init(void)
{
	struct decoders local;
	(void)decoders(&local);
}

/* ---- registers ------------------------------------------------------------------ */

void dec_regs_from_perf(struct dec_regs *r, const uint64_t *vals, uint64_t mask)
{
	/* perf order -> dec_gpr; -1 for IP, -2 for registers we do not keep */
	static const signed char map[PERF_REG_X86_64_MAX] = {
		[PERF_REG_X86_AX] = DEC_RAX, [PERF_REG_X86_BX] = DEC_RBX,
		[PERF_REG_X86_CX] = DEC_RCX, [PERF_REG_X86_DX] = DEC_RDX,
		[PERF_REG_X86_SI] = DEC_RSI, [PERF_REG_X86_DI] = DEC_RDI,
		[PERF_REG_X86_BP] = DEC_RBP, [PERF_REG_X86_SP] = DEC_RSP,
		[PERF_REG_X86_IP] = -1, [PERF_REG_X86_FLAGS] = -2,
		[PERF_REG_X86_CS] = -2, [PERF_REG_X86_SS] = -2,
		[PERF_REG_X86_DS] = -2, [PERF_REG_X86_ES] = -2,
		[PERF_REG_X86_FS] = -2, [PERF_REG_X86_GS] = -2,
		[PERF_REG_X86_R8] = DEC_R8, [PERF_REG_X86_R9] = DEC_R9,
		[PERF_REG_X86_R10] = DEC_R10, [PERF_REG_X86_R11] = DEC_R11,
		[PERF_REG_X86_R12] = DEC_R12, [PERF_REG_X86_R13] = DEC_R13,
		[PERF_REG_X86_R14] = DEC_R14, [PERF_REG_X86_R15] = DEC_R15,
	};
	size_t k = 0;
	for (int i = 0; i < DEC_NGPR; i++)
		r->gpr[i] = 0;
	r->rip = 0;
	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(mask & (1ULL << bit)))
			continue;
		uint64_t v = vals[k++];
		if (bit >= PERF_REG_X86_64_MAX)
			continue; /* XMM halves etc.: consumed, not kept */
		int d = map[bit];
		if (d >= 0)
			r->gpr[d] = v;
		else if (d == -1)
			r->rip = v;
	}
}

void dec_regs_from_ucontext(struct dec_regs *r, const void *ucv)
{
	const ucontext_t *uc = ucv;
	const greg_t *g = uc->uc_mcontext.gregs;
	r->gpr[DEC_RAX] = (uint64_t)g[REG_RAX];
	r->gpr[DEC_RCX] = (uint64_t)g[REG_RCX];
	r->gpr[DEC_RDX] = (uint64_t)g[REG_RDX];
	r->gpr[DEC_RBX] = (uint64_t)g[REG_RBX];
	r->gpr[DEC_RSP] = (uint64_t)g[REG_RSP];
	r->gpr[DEC_RBP] = (uint64_t)g[REG_RBP];
	r->gpr[DEC_RSI] = (uint64_t)g[REG_RSI];
	r->gpr[DEC_RDI] = (uint64_t)g[REG_RDI];
	r->gpr[DEC_R8] = (uint64_t)g[REG_R8];
	r->gpr[DEC_R9] = (uint64_t)g[REG_R9];
	r->gpr[DEC_R10] = (uint64_t)g[REG_R10];
	r->gpr[DEC_R11] = (uint64_t)g[REG_R11];
	r->gpr[DEC_R12] = (uint64_t)g[REG_R12];
	r->gpr[DEC_R13] = (uint64_t)g[REG_R13];
	r->gpr[DEC_R14] = (uint64_t)g[REG_R14];
	r->gpr[DEC_R15] = (uint64_t)g[REG_R15];
	r->rip = (uint64_t)g[REG_RIP];
}

/* dec_gpr index of a general-purpose register of any width (al, ax, eax,
 * rax, ...), -1 for rip/eip, -2 for none, -3 for anything else. */
static int gpr_index(ZydisRegister reg)
{
	if (reg == ZYDIS_REGISTER_NONE)
		return -2;
	if (reg >= ZYDIS_REGISTER_RAX && reg <= ZYDIS_REGISTER_R15)
		return (int)(reg - ZYDIS_REGISTER_RAX);
	if (reg == ZYDIS_REGISTER_RIP || reg == ZYDIS_REGISTER_EIP)
		return -1;
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
	if (big >= ZYDIS_REGISTER_RAX && big <= ZYDIS_REGISTER_R15)
		return (int)(big - ZYDIS_REGISTER_RAX);
	return -3;
}

/* Value of an address register (64- or 32-bit GPR, rip/eip, none). */
static int addr_reg_value(ZydisRegister reg, const struct dec_regs *r,
                          uint64_t next_ip, uint64_t *v)
{
	if (reg == ZYDIS_REGISTER_NONE) { *v = 0; return 0; }
	if (reg >= ZYDIS_REGISTER_RAX && reg <= ZYDIS_REGISTER_R15) {
		*v = r->gpr[reg - ZYDIS_REGISTER_RAX];
		return 0;
	}
	if (reg >= ZYDIS_REGISTER_EAX && reg <= ZYDIS_REGISTER_R15D) {
		*v = (uint32_t)r->gpr[reg - ZYDIS_REGISTER_EAX];
		return 0;
	}
	if (reg == ZYDIS_REGISTER_RIP) { *v = next_ip; return 0; }
	if (reg == ZYDIS_REGISTER_EIP) { *v = (uint32_t)next_ip; return 0; }
	return -1;
}

/* ---- one instruction ------------------------------------------------------------ */

static int is_hint(const ZydisDecodedInstruction *in)
{
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_NOP:
	case ZYDIS_CATEGORY_WIDENOP:
	case ZYDIS_CATEGORY_PREFETCH:
	case ZYDIS_CATEGORY_PREFETCHWT1:
		return 1;
	default:
		break;
	}
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_NOP:
	case ZYDIS_MNEMONIC_PREFETCH: case ZYDIS_MNEMONIC_PREFETCHNTA:
	case ZYDIS_MNEMONIC_PREFETCHT0: case ZYDIS_MNEMONIC_PREFETCHT1:
	case ZYDIS_MNEMONIC_PREFETCHT2: case ZYDIS_MNEMONIC_PREFETCHW:
	case ZYDIS_MNEMONIC_PREFETCHWT1:
	case ZYDIS_MNEMONIC_CLFLUSH: case ZYDIS_MNEMONIC_CLFLUSHOPT:
	case ZYDIS_MNEMONIC_CLWB: case ZYDIS_MNEMONIC_CLDEMOTE:
		return 1;
	default:
		return 0;
	}
}

/* A hidden operand addressed by rsp: the stack slot of push/pop/call/ret. */
static int is_stack_op(const ZydisDecodedOperand *op)
{
	return op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
	       (op->mem.base == ZYDIS_REGISTER_RSP || op->mem.base == ZYDIS_REGISTER_ESP);
}

struct analysis {
	const ZydisDecodedOperand *op;  /* chosen memory operand */
	int stack;                      /* op is the implicit stack slot */
	int xlat;                       /* index is al (xlat) */
	int bitreg;                     /* bt* with register offset: operand index */
};

/* Pick the memory operand.  Returns 0 or a skip reason. */
static int pick_operand(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                        struct analysis *an)
{
	int best = -1, best_score = 0, saw_agen = 0, saw_vsib = 0;
	memset(an, 0, sizeof *an);
	an->bitreg = -1;
	for (int i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		switch (op->mem.type) {
		case ZYDIS_MEMOP_TYPE_MEM:
			break;
		case ZYDIS_MEMOP_TYPE_VSIB:
			saw_vsib = 1;
			continue;
		default: /* AGEN (lea), MIB (bndldx/bndstx) */
			saw_agen = 1;
			continue;
		}
		if (!op->actions)
			continue;
		int score = is_stack_op(op) ? 1
		          : op->visibility == ZYDIS_OPERAND_VISIBILITY_EXPLICIT ? 3 : 2;
		if (score > best_score) {
			best = i;
			best_score = score;
		}
	}
	if (saw_vsib)
		return CT_SKIP_GATHER_SCATTER;
	if (best < 0)
		return saw_agen ? CT_SKIP_LEA_NOP : CT_SKIP_NO_MEMORY_OPERAND;
	if (is_hint(in))
		return CT_SKIP_LEA_NOP;
	an->op = &ops[best];
	an->stack = best_score == 1;
	an->xlat = in->mnemonic == ZYDIS_MNEMONIC_XLAT;
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_BT: case ZYDIS_MNEMONIC_BTS:
	case ZYDIS_MNEMONIC_BTR: case ZYDIS_MNEMONIC_BTC:
		for (int i = 0; i < in->operand_count_visible; i++)
			if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER)
				an->bitreg = i;
		break;
	default:
		break;
	}
	return 0;
}

static unsigned op_bytes(const ZydisDecodedOperand *op)
{
	unsigned b = op->size / 8u;
	if (!b)
		b = op->element_size / 8u;
	if (!b)
		b = 1;
	return b > 255 ? 255 : b;
}

/* Effective address and kind of the picked operand with registers r taken
 * as the state before the instruction. */
static int compute(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                   const struct analysis *an, uint64_t ip, const struct dec_regs *r,
                   struct dec_access *a)
{
	const ZydisDecodedOperand *op = an->op;
	uint64_t next_ip = ip + in->length, base, index, addr;
	unsigned bytes = op->size / 8u;

	if (addr_reg_value(op->mem.base, r, next_ip, &base) ||
	    addr_reg_value(op->mem.index, r, next_ip, &index))
		return CT_SKIP_DECODE_FAILED;
	if (an->xlat)
		index = r->gpr[DEC_RAX] & 0xff;
	addr = base + index * (op->mem.scale ? op->mem.scale : 1) + (uint64_t)op->mem.disp.value;
	if (an->stack && (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
		addr -= bytes; /* push/call/enter: the slot below rsp */
	else if (op->mem.base == ZYDIS_REGISTER_RSP && in->mnemonic == ZYDIS_MNEMONIC_POP &&
	         !an->stack)
		addr += bytes; /* pop [rsp+d]: address computed after the increment */
	if (an->bitreg >= 0 && bytes) {
		/* bt m, reg: the bit offset is signed and may leave the operand */
		const ZydisDecodedOperand *ro = &ops[an->bitreg];
		int gi = gpr_index(ro->reg.value);
		if (gi < 0)
			return CT_SKIP_DECODE_FAILED;
		int64_t off = (int64_t)r->gpr[gi];
		if (ro->size == 32)
			off = (int32_t)off;
		else if (ro->size == 16)
			off = (int16_t)off;
		int64_t bits = (int64_t)bytes * 8;
		int64_t q = off >= 0 ? off / bits : -((-off + bits - 1) / bits);
		addr += (uint64_t)(q * (int64_t)bytes);
	}
	if (in->address_width == 32)
		addr = (uint32_t)addr;
	a->flags = 0;
	if (op->mem.segment == ZYDIS_REGISTER_FS) {
		addr += r->fs_base;
		a->flags |= CT_SAMPLE_FS_BASED;
	} else if (op->mem.segment == ZYDIS_REGISTER_GS) {
		addr += r->gs_base;
		a->flags |= CT_SAMPLE_FS_BASED;
	}
	a->addr = addr;
	a->len = (uint8_t)op_bytes(op);
	if (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
		a->kind = (in->attributes & ZYDIS_ATTRIB_HAS_LOCK) || in->mnemonic == ZYDIS_MNEMONIC_XCHG
		        ? CT_ACCESS_ATOMIC : CT_ACCESS_STORE;
	else
		a->kind = CT_ACCESS_LOAD;
	return 0;
}

int dec_access_at(const uint8_t *bytes, size_t n, uint64_t ip,
                  const struct dec_regs *r, struct dec_access *a, size_t *insn_len)
{
	struct decoders local;
	const ZydisDecoder *d = &decoders(&local)->full;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct analysis an;
	int rc;

	if (insn_len)
		*insn_len = 0;
	if (!bytes || !n || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, bytes, n, &in, ops)))
		return CT_SKIP_DECODE_FAILED;
	if (insn_len)
		*insn_len = in.length;
	if ((rc = pick_operand(&in, ops, &an)))
		return rc;
	return compute(&in, ops, &an, ip, r, a);
}

/* ---- the previous instruction ------------------------------------------------------ */

/* Registers before an instruction that has executed, from the registers
 * after it, for the address registers of its memory operand.  Returns 0 or
 * -1 when the address can no longer be computed (the instruction wrote one of
 * its own address registers in a way we cannot undo). */
static int undo_regs(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                     const struct analysis *an, const struct dec_regs *after,
                     struct dec_regs *before)
{
	const ZydisDecodedOperand *op = an->op;
	int bi = gpr_index(op->mem.base), xi = gpr_index(op->mem.index);
	int ai = an->xlat ? DEC_RAX : -9; /* xlat also reads al */
	int ri = an->bitreg >= 0 ? gpr_index(ops[an->bitreg].reg.value) : -9;

	*before = *after;
	for (int i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *o = &ops[i];
		if (o->type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		int g = gpr_index(o->reg.value);
		if (g < 0)
			continue; /* flags, vector registers, ... */
		if (g != bi && g != xi && g != ai && g != ri)
			continue;
		if (g == DEC_RSP && g == bi && g != xi && g != ri &&
		    o->visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT && /* not pop rsp */
		    (in->meta.category == ZYDIS_CATEGORY_PUSH ||
		     in->meta.category == ZYDIS_CATEGORY_POP)) {
			/* push moved rsp down by the slot size, pop up */
			uint64_t sz = op->size / 8u;
			if (in->meta.category == ZYDIS_CATEGORY_PUSH)
				before->gpr[DEC_RSP] = after->gpr[DEC_RSP] + sz;
			else
				before->gpr[DEC_RSP] = after->gpr[DEC_RSP] - sz;
			continue;
		}
		if (in->mnemonic == ZYDIS_MNEMONIC_LEAVE && g == DEC_RBP && bi == DEC_RBP) {
			/* leave: rsp = rbp + 8 afterwards, the load was at the old rbp */
			before->gpr[DEC_RBP] = after->gpr[DEC_RSP] - 8;
			continue;
		}
		return -1;
	}
	return 0;
}

static int is_fallthrough(const ZydisDecodedInstruction *in)
{
	if (in->meta.branch_type != ZYDIS_BRANCH_TYPE_NONE)
		return 0; /* jmp/jcc/call/ret/loop: did not just fall into rip */
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_CALL: case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_UNCOND_BR: case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_INTERRUPT: case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET: case ZYDIS_CATEGORY_SYSTEM:
		return 0;
	default:
		break;
	}
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_ENTER:
		return 0;
	default:
		return !(in->attributes & ZYDIS_ATTRIB_IS_PRIVILEGED);
	}
}

#define DEC_BACK 32   /* bytes read before rip: the synchronisation window */
#define DEC_INSN 15   /* the longest instruction */
#define DEC_AHEAD 48  /* bytes read from rip on: the forward rule's window */
#define DEC_FORWARD 8 /* instructions the forward rule looks at, rip's included */
#define DEC_STARTS 8  /* decoding chains start at rip-32 .. rip-25 */

/* Where the instruction ending exactly at rip starts, found by forward
 * synchronisation (commrec(1), "Which instruction"): x86 cannot be
 * decoded backwards, but linear decoding started at almost any byte falls
 * into step with the real instruction boundaries within a few instructions.
 * Chains are started at DEC_STARTS consecutive bytes at the far end of the
 * window (from code[from]); each decodes forward using only the bytes before
 * rip.  Chains that land exactly on rip name the instruction before it; all
 * of them must name the same one.  Chains that overshoot rip or hit
 * undecodable bytes abstain.  Memoised: once a chain reaches an offset
 * another chain has walked, it shares that chain's outcome, so all chains
 * together cost about one pass over the window plus a decode or two each.
 * Returns the offset in code[] of the previous instruction, or -1. */
static int prev_start(const ZydisDecoder *d, const uint8_t *code, int from)
{
	signed char memo[DEC_BACK]; /* -2 unknown, -1 abstains, else landing start */
	int walk[DEC_BACK];
	int consensus = -1;

	memset(memo, -2, sizeof memo);
	for (int s = from; s < from + DEC_STARTS && s < DEC_BACK; s++) {
		int n = 0, o = s, res;
		for (;;) {
			if (memo[o] != -2) {
				res = memo[o];
				break;
			}
			walk[n++] = o;
			ZydisDecodedInstruction in;
			if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(d, NULL, code + o,
			                                                (ZyanUSize)(DEC_BACK - o), &in))) {
				res = -1; /* undecodable, or runs past rip */
				break;
			}
			if (o + in.length == DEC_BACK) {
				res = o;
				break;
			}
			o += in.length;
		}
		while (n)
			memo[walk[--n]] = (signed char)res;
		if (res < 0)
			continue;
		if (consensus >= 0 && consensus != res)
			return -1; /* two readings of the bytes before rip: ambiguous */
		consensus = res;
	}
	return consensus;
}

/* Memo of prev_start() results.  The result is a pure function of the
 * window bytes (and of where the readable part starts), so an entry is
 * keyed by the window itself: a hit needs the same 32 bytes, which also
 * makes it immune to code being replaced (JIT, dlclose+dlopen).  Hot loops
 * are sampled at the same few rips over and over; a hit saves the ~16
 * length decodes.  Lock-free: a sequence counter per entry, odd while it is
 * written; readers that see it change treat the entry as a miss, writers
 * that find it odd (another thread, or a handler they interrupted) skip. */
#define DEC_MEMO 512
struct prev_memo {
	uint32_t seq;
	uint32_t meta;             /* from | (result + 1) << 8 | 1 << 16 (valid) */
	uint64_t w[DEC_BACK / 8];
};
static struct prev_memo g_memo[DEC_MEMO];

static struct prev_memo *memo_slot(uint64_t rip)
{
	uint64_t h = rip * 0x9e3779b97f4a7c15ULL;
	return &g_memo[(h >> 40) % DEC_MEMO];
}

static int memo_get(uint64_t rip, const uint64_t *w, int from, int *res)
{
	struct prev_memo *m = memo_slot(rip);
	uint32_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
	if (s1 & 1)
		return 0;
	uint32_t meta = __atomic_load_n(&m->meta, __ATOMIC_RELAXED);
	int same = (meta & 0x100ffu) == (0x10000u | (uint32_t)from);
	for (int i = 0; i < DEC_BACK / 8; i++)
		same &= __atomic_load_n(&m->w[i], __ATOMIC_RELAXED) == w[i];
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&m->seq, __ATOMIC_RELAXED) != s1 || !same)
		return 0;
	*res = (int)((meta >> 8) & 0xff) - 1;
	return 1;
}

static void memo_put(uint64_t rip, const uint64_t *w, int from, int res)
{
	struct prev_memo *m = memo_slot(rip);
	uint32_t s = __atomic_load_n(&m->seq, __ATOMIC_RELAXED);
	if ((s & 1) || !__atomic_compare_exchange_n(&m->seq, &s, s + 1, 0,
	                                            __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < DEC_BACK / 8; i++)
		__atomic_store_n(&m->w[i], w[i], __ATOMIC_RELAXED);
	__atomic_store_n(&m->meta, (uint32_t)from | (uint32_t)(res + 1) << 8 | 1u << 16,
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&m->seq, s + 2, __ATOMIC_RELEASE);
}

/* The access of the instruction at code[off..DEC_BACK), executed just before
 * rip, computed from the registers after it.  Returns 0 or -1. */
static int prev_access(const ZydisDecoder *d, const uint8_t *code, int off,
                       const struct dec_regs *r, struct dec_access *a)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct analysis an;
	struct dec_regs before;
	int len = DEC_BACK - off;

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, code + off, (ZyanUSize)len, &in, ops)) ||
	    in.length != len || !is_fallthrough(&in) || pick_operand(&in, ops, &an) ||
	    undo_regs(&in, ops, &an, r, &before) ||
	    compute(&in, ops, &an, r->rip - (uint64_t)len, &before, a))
		return -1;
	return 0;
}

/* ---- the next memory instruction ------------------------------------------------- */

/* The registers the picked operand's address is computed from, a bit each. */
static uint32_t address_gprs(const ZydisDecodedOperand *ops, const struct analysis *an)
{
	uint32_t m = 0;
	int b = gpr_index(an->op->mem.base), x = gpr_index(an->op->mem.index);
	if (b >= 0)
		m |= 1u << b;
	if (x >= 0)
		m |= 1u << x;
	if (an->xlat)
		m |= 1u << DEC_RAX;
	if (an->bitreg >= 0) {
		int g = gpr_index(ops[an->bitreg].reg.value);
		if (g >= 0)
			m |= 1u << g;
	}
	return m;
}

/* The forward walk's state: the sampled registers as the instructions it
 * steps over change them, where that is simple to compute (mov, lea, add,
 * sub, inc, dec and the xor zeroing idiom on a 32- or 64-bit register; a
 * bit in unknown for any other write), and the flags the last instruction
 * set, when it was one of those or a cmp or test of known values. */
struct walk {
	struct dec_regs regs;
	uint32_t unknown;
	bool have_cc, cf_known;
	bool cf, zf, sf, of;
};

static int known_value(const struct walk *w, const ZydisDecodedOperand *op, uint64_t *v)
{
	if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		*v = (uint64_t)op->imm.value.s;
		return 0;
	}
	int g = op->type == ZYDIS_OPERAND_TYPE_REGISTER ? gpr_index(op->reg.value) : -1;
	if (g < 0 || (w->unknown & 1u << g) ||
	    (op->reg.value >= ZYDIS_REGISTER_AH && op->reg.value <= ZYDIS_REGISTER_BH))
		return -1;
	*v = w->regs.gpr[g];
	return 0;
}

static void set_flags(struct walk *w, uint64_t res, unsigned bits, bool cf, bool of, bool cf_known)
{
	w->have_cc = true;
	w->cf_known = cf_known;
	w->cf = cf;
	w->of = of;
	w->zf = res == 0;
	w->sf = (res >> (bits - 1)) & 1;
}

/* lea's address from the walk's registers: 0, or -1 (unknown, segment). */
static int agen_value(const struct walk *w, const ZydisDecodedOperand *op, uint64_t next_ip,
                      uint64_t *v)
{
	int b = gpr_index(op->mem.base), x = gpr_index(op->mem.index);
	uint64_t base, index;
	if ((b >= 0 && (w->unknown & 1u << b)) || (x >= 0 && (w->unknown & 1u << x)) ||
	    op->mem.segment == ZYDIS_REGISTER_FS || op->mem.segment == ZYDIS_REGISTER_GS ||
	    addr_reg_value(op->mem.base, &w->regs, next_ip, &base) ||
	    addr_reg_value(op->mem.index, &w->regs, next_ip, &index))
		return -1;
	*v = base + index * (op->mem.scale ? op->mem.scale : 1) + (uint64_t)op->mem.disp.value;
	return 0;
}

/* What an instruction without a memory access does to the registers and
 * flags of the walk: *dst gets the dec_gpr it computed (-1: none) and *val
 * its new value.  Flags are known after it only when set here. */
static void emulate(struct walk *w, const ZydisDecodedInstruction *in,
                    const ZydisDecodedOperand *ops, uint64_t next_ip, int *dst, uint64_t *val)
{
	const ZydisDecodedOperand *d = &ops[0];
	unsigned bits = d->size;
	uint64_t a = 0, b = 0, mask = bits == 64 ? ~0ULL : bits ? (1ULL << bits) - 1 : 0, res;
	int nvis = in->operand_count_visible;

	*dst = -1;
	w->have_cc = false;
	if (!bits || bits > 64 || d->type != ZYDIS_OPERAND_TYPE_REGISTER)
		return;
	if (in->mnemonic == ZYDIS_MNEMONIC_CMP || in->mnemonic == ZYDIS_MNEMONIC_TEST) {
		if (nvis != 2 || known_value(w, &ops[0], &a) || known_value(w, &ops[1], &b))
			return;
		a &= mask;
		b &= mask;
		if (in->mnemonic == ZYDIS_MNEMONIC_TEST) {
			set_flags(w, a & b, bits, false, false, true);
		} else {
			res = (a - b) & mask;
			set_flags(w, res, bits, a < b, (((a ^ b) & (a ^ res)) >> (bits - 1)) & 1, true);
		}
		return;
	}
	if (bits < 32) /* a partial write keeps the register's upper bits: not followed */
		return;
	int g = gpr_index(d->reg.value);
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_MOV:
		if (nvis != 2 || known_value(w, &ops[1], &res))
			return;
		break;
	case ZYDIS_MNEMONIC_LEA:
		if (nvis != 2 || agen_value(w, &ops[1], next_ip, &res))
			return;
		if (in->address_width == 32)
			res = (uint32_t)res;
		break;
	case ZYDIS_MNEMONIC_XOR:
		if (nvis != 2 || ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    ops[1].reg.value != d->reg.value)
			return;
		res = 0;
		set_flags(w, 0, bits, false, false, true);
		break;
	case ZYDIS_MNEMONIC_ADD: case ZYDIS_MNEMONIC_SUB:
	case ZYDIS_MNEMONIC_INC: case ZYDIS_MNEMONIC_DEC: {
		bool incdec = in->mnemonic == ZYDIS_MNEMONIC_INC || in->mnemonic == ZYDIS_MNEMONIC_DEC;
		bool sub = in->mnemonic == ZYDIS_MNEMONIC_SUB || in->mnemonic == ZYDIS_MNEMONIC_DEC;
		if (known_value(w, d, &a) || (incdec ? nvis != 1 : nvis != 2 || known_value(w, &ops[1], &b)))
			return;
		if (incdec)
			b = 1;
		a &= mask;
		b &= mask;
		res = (sub ? a - b : a + b) & mask;
		bool cf = sub ? a < b : res < a;
		bool of = ((sub ? (a ^ b) & (a ^ res) : ~(a ^ b) & (a ^ res)) >> (bits - 1)) & 1;
		set_flags(w, res, bits, cf, of, !incdec); /* inc and dec leave CF alone */
		break;
	}
	default:
		return;
	}
	*dst = g;
	*val = res & mask;
}

/* Whether a conditional branch is taken under the walk's flags: 1, 0, or -1
 * (not known, or a condition on other flags or registers). */
static int branch_taken(ZydisMnemonic m, const struct walk *w)
{
	bool cf = w->cf, zf = w->zf, sf = w->sf, of = w->of;
	if (!w->have_cc)
		return -1;
	switch (m) {
	case ZYDIS_MNEMONIC_JO: return of;
	case ZYDIS_MNEMONIC_JNO: return !of;
	case ZYDIS_MNEMONIC_JZ: return zf;
	case ZYDIS_MNEMONIC_JNZ: return !zf;
	case ZYDIS_MNEMONIC_JS: return sf;
	case ZYDIS_MNEMONIC_JNS: return !sf;
	case ZYDIS_MNEMONIC_JL: return sf != of;
	case ZYDIS_MNEMONIC_JNL: return sf == of;
	case ZYDIS_MNEMONIC_JLE: return zf || sf != of;
	case ZYDIS_MNEMONIC_JNLE: return !zf && sf == of;
	default: break;
	}
	if (!w->cf_known)
		return -1;
	switch (m) {
	case ZYDIS_MNEMONIC_JB: return cf;
	case ZYDIS_MNEMONIC_JNB: return !cf;
	case ZYDIS_MNEMONIC_JBE: return cf || zf;
	case ZYDIS_MNEMONIC_JNBE: return !cf && !zf;
	default: return -1;
	}
}

/* Where a direct jmp, or a conditional branch whose flags the walk knows,
 * goes next: the offset in code[], or -1 (an indirect or unknown branch, or
 * a target outside the bytes read). */
static int branch_next(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, int pos,
                       const struct walk *w, int from, int end)
{
	if (in->operand_count_visible != 1 || ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
	    !ops[0].imm.is_relative)
		return -1;
	int fall = pos + in->length, taken = 1;
	if (in->meta.category == ZYDIS_CATEGORY_COND_BR)
		taken = branch_taken(in->mnemonic, w);
	else if (in->meta.category != ZYDIS_CATEGORY_UNCOND_BR)
		return -1;
	if (taken < 0)
		return -1;
	int64_t next = taken ? fall + ops[0].imm.value.s : fall;
	return next >= from && next < end ? (int)next : -1;
}

/* The register writes of an instruction stepped over: the one emulate()
 * computed takes its value, any other general-purpose register becomes
 * unknown; flags, x87, vector and mask registers are harmless; anything
 * else (segment, control, rip) ends the walk (-1). */
static int apply_writes(struct walk *w, const ZydisDecodedInstruction *in,
                        const ZydisDecodedOperand *ops, int dst, uint64_t val)
{
	if (in->mnemonic == ZYDIS_MNEMONIC_WRFSBASE || in->mnemonic == ZYDIS_MNEMONIC_WRGSBASE)
		return -1; /* the segment bases fs:/gs: operands add */
	for (int i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *o = &ops[i];
		if (o->type != ZYDIS_OPERAND_TYPE_REGISTER || !(o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		int g = gpr_index(o->reg.value);
		if (g >= 0 && g == dst) {
			w->regs.gpr[g] = val;
			w->unknown &= ~(1u << g);
		} else if (g >= 0) {
			w->unknown |= 1u << g;
		} else {
			switch (ZydisRegisterGetClass(o->reg.value)) {
			case ZYDIS_REGCLASS_FLAGS: case ZYDIS_REGCLASS_X87: case ZYDIS_REGCLASS_MMX:
			case ZYDIS_REGCLASS_XMM: case ZYDIS_REGCLASS_YMM: case ZYDIS_REGCLASS_ZMM:
			case ZYDIS_REGCLASS_MASK:
				break;
			default:
				return -1;
			}
		}
	}
	return 0;
}

/* The forward rule (commrec(1), "Which instruction"): the instruction at rip
 * makes no memory access (rip_rc: why), so take the next one that does, with
 * the registers it will compute its address with: the sampled ones, as the
 * instructions in between change them.  The walk stops (rip_rc) at a
 * system call, trap or indirect branch, at a write to a segment or control
 * register, at a conditional branch whose flags it cannot compute, and when
 * the access's address registers took values it cannot compute.  Looks at
 * DEC_FORWARD instructions at most, rip's included, within code[from..end)
 * (rip at code[DEC_BACK]).  Returns 0 with *a filled, or rip_rc. */
static int next_access(const ZydisDecoder *d, const uint8_t *code, int from, int end,
                       const struct dec_regs *r, int rip_rc, struct dec_access *a)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct analysis an;
	struct walk w;
	int pos = DEC_BACK;

	memset(&w, 0, sizeof w);
	w.regs = *r;
	for (int k = 0; k < DEC_FORWARD; k++) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, code + pos, (ZyanUSize)(end - pos), &in, ops)))
			return rip_rc;
		uint64_t ip = r->rip + (uint64_t)(pos - DEC_BACK);
		int rc = pick_operand(&in, ops, &an);
		if (k > 0 && rc == 0) {
			if (address_gprs(ops, &an) & w.unknown || compute(&in, ops, &an, ip, &w.regs, a))
				return rip_rc;
			return 0;
		}
		if (rc != CT_SKIP_NO_MEMORY_OPERAND && rc != CT_SKIP_LEA_NOP)
			return rip_rc;
		if (!is_fallthrough(&in)) {
			pos = branch_next(&in, ops, pos, &w, from, end);
			if (pos < 0)
				return rip_rc;
			w.have_cc = false;
			continue;
		}
		int dst;
		uint64_t val = 0;
		emulate(&w, &in, ops, ip + in.length, &dst, &val);
		if (apply_writes(&w, &in, ops, dst, val))
			return rip_rc;
		pos += in.length;
	}
	return rip_rc;
}

/* ---- reading code safely ------------------------------------------------------------ */

#define DEC_PAGE 4096u
#define DEC_PAGE_CACHE 256

static const uint8_t dec_check_reader_probe[16] = { 1 };

/* Pages that process_vm_readv has read successfully (page number + 1, 0 =
 * empty), direct-mapped, racy by design (relaxed atomics: a lost update
 * only costs one more syscall).  Only rip's own page is ever read directly,
 * and only when it is in here: the thread was executing in that page when
 * it was interrupted, so it is still mapped unless the program is about to
 * crash on its own, and it was readable when validated (execute-only pages
 * never get in).  Bytes on any other page always go through the syscall,
 * and so does every byte of a late decode (dec_regs.late). */
static uint64_t g_pages[DEC_PAGE_CACHE];

static int page_known(uint64_t page)
{
	uint64_t pn = page / DEC_PAGE;
	return __atomic_load_n(&g_pages[pn % DEC_PAGE_CACHE], __ATOMIC_RELAXED) == pn + 1;
}

static void page_learn(uint64_t page)
{
	uint64_t pn = page / DEC_PAGE;
	__atomic_store_n(&g_pages[pn % DEC_PAGE_CACHE], pn + 1, __ATOMIC_RELAXED);
}

/* Read [addr, addr+len) (within one page) without faulting:
 * process_vm_readv on ourselves returns EFAULT instead of crashing.
 * Returns 1 when every byte was read. */
static int syscall_read(uint8_t *buf, uint64_t addr, size_t len)
{
	struct iovec loc = { buf, len }, rem = { (void *)(uintptr_t)addr, len };
	/* getpid() every time (no cache): correct after fork, and this path is
	 * taken once per new page */
	return process_vm_readv(getpid(), &loc, 1, &rem, 1, 0) == (ssize_t)len;
}

int dec_check_reader(void)
{
	int saved = errno, rc = 0;
	uint8_t b[16];
	if (!syscall_read(b, (uint64_t)(uintptr_t)dec_check_reader_probe, sizeof b))
		rc = errno ? errno : EIO;
	errno = saved;
	return rc;
}

/* Code bytes around rip into code[DEC_BACK + DEC_AHEAD], code[DEC_BACK] at
 * rip.  Sets *from (first valid byte) and returns the number of valid bytes
 * from rip on (0: rip unreadable). */
static size_t read_code(uint8_t *code, uint64_t rip, bool late, int *from)
{
	uint64_t page = rip & ~(uint64_t)(DEC_PAGE - 1);
	uint64_t lo = rip - DEC_BACK, hi = rip + DEC_AHEAD;
	uint64_t plo = lo > page ? lo : page;              /* rip's page part */
	uint64_t phi = hi < page + DEC_PAGE ? hi : page + DEC_PAGE;
	uint8_t *dst = code + (plo - lo);

	if (!late && page_known(page)) {
		memcpy(dst, (const void *)(uintptr_t)plo, (size_t)(phi - plo));
	} else {
		if (!syscall_read(dst, plo, (size_t)(phi - plo)))
			return 0;
		page_learn(page);
	}
	*from = (int)(plo - lo);
	size_t ahead = (size_t)(phi - rip);
	/* the rare straddling cases: the neighbour page through the syscall
	 * only, and after rip only where the instruction at rip may need it
	 * (the forward rule makes do with what rip's page holds); failing
	 * there just loses those bytes */
	if (lo < page && syscall_read(code, lo, (size_t)(page - lo)))
		*from = 0;
	if (ahead < DEC_INSN && syscall_read(code + (phi - lo), phi, (size_t)(hi - phi)))
		ahead = DEC_AHEAD;
	return ahead;
}

int dec_sample_access(const struct dec_regs *r, struct dec_access *a)
{
	int saved = errno;
	union {
		uint8_t b[DEC_BACK + DEC_AHEAD];
		uint64_t w[(DEC_BACK + DEC_AHEAD + 7) / 8];
	} buf;
	uint8_t *code = buf.b;
	uint64_t rip = r->rip;
	int have_from = DEC_BACK; /* first valid byte of code[] */
	size_t ahead;
	int rc;

	if ((int64_t)rip < 0) {
		errno = saved;
		return CT_SKIP_KERNEL;
	}
	if (rip < DEC_PAGE) {
		errno = saved;
		return CT_SKIP_UNREADABLE_IP;
	}
	memset(code, 0, DEC_BACK); /* the unreadable part is part of the memo key */
	ahead = read_code(code, rip, r->late, &have_from);
	if (!ahead) {
		errno = saved;
		return CT_SKIP_UNREADABLE_IP;
	}

	struct decoders local;
	const struct decoders *ds = decoders(&local);
	const ZydisDecoder *d = &ds->full;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct analysis an;

	/* an endbr64/endbr32 at rip marks a branch target: what precedes it in
	 * memory (padding, the end of another function) did not just run */
	static const uint8_t endbr[3] = { 0xf3, 0x0f, 0x1e };
	int target = ahead >= 4 && !memcmp(code + DEC_BACK, endbr, sizeof endbr) &&
	             (code[DEC_BACK + 3] == 0xfa || code[DEC_BACK + 3] == 0xfb);
	if (!target && have_from < DEC_BACK) {
		int off;
		if (!memo_get(rip, buf.w, have_from, &off)) {
			off = prev_start(&ds->minimal, code, have_from);
			memo_put(rip, buf.w, have_from, off);
		}
		if (r->cpu_clock && off == DEC_BACK - 2 && code[off] == 0x0f && code[off + 1] == 0x05) {
			errno = saved;
			return CT_SKIP_KERNEL; /* just after a syscall: kernel time */
		}
		if (off >= 0 && !prev_access(d, code, off, r, a)) {
			a->flags |= CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN;
			errno = saved;
			return 0;
		}
	}
	int at_rip_ok = ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, code + DEC_BACK, ahead, &in, ops));
	if (!at_rip_ok) {
		errno = saved;
		return CT_SKIP_DECODE_FAILED;
	}
	rc = pick_operand(&in, ops, &an);
	if (!rc)
		rc = compute(&in, ops, &an, rip, r, a);
	else if (rc == CT_SKIP_NO_MEMORY_OPERAND || rc == CT_SKIP_LEA_NOP)
		rc = next_access(d, code, have_from, DEC_BACK + (int)ahead, r, rc, a);
	if (!rc)
		a->flags |= CT_SAMPLE_RECONSTRUCTED;
	errno = saved;
	return rc;
}
