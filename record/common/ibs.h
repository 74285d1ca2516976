/* AMD IBS (instruction-based sampling) op samples: decoding the
 * PERF_SAMPLE_RAW payload the kernel's ibs_op PMU writes.
 *
 * Raw payload layout (arch/x86/events/amd/ibs.c, perf_ibs_handle_irq(), and
 * struct perf_ibs_data in arch/x86/include/asm/amd-ibs.h; the same order is
 * documented in tools/perf/util/amd-sample-raw.c):
 *
 *   offset 0   u32 caps            IBS capabilities (CPUID Fn8000_001B EAX)
 *   offset 4   u64 IBS_OP_CTL      MSR C001_1033
 *   offset 12  u64 IBS_OP_RIP      MSR C001_1034
 *   offset 20  u64 IBS_OP_DATA     MSR C001_1035
 *   offset 28  u64 IBS_OP_DATA2    MSR C001_1036
 *   offset 36  u64 IBS_OP_DATA3    MSR C001_1037
 *   offset 44  u64 IBS_DC_LINADDR  MSR C001_1038
 *   offset 52  u64 IBS_DC_PHYSADDR MSR C001_1039 (zeroed by the kernel for
 *                                  unprivileged users, PhyAddrValid cleared)
 *   then, only if caps has BRNTRGT (bit 5): u64 IBS_BR_TARGET (C001_103B)
 *   then, only if caps has OPDATA4 (bit 10): u64 IBS_OP_DATA4 (C001_103D)
 *
 * The u64 values are not 8-byte aligned within the payload (the u32 caps
 * comes first): they are read with memcpy.
 *
 * Bits used (AMD PPR for family 19h, as transcribed in amd-ibs.h):
 *   IBS_OP_CTL   bit 17 IbsOpEn, bit 18 IbsOpVal, bit 19 IbsOpCntCtl
 *   IBS_OP_DATA  bit 38 IbsRipInvalid (meaningful when caps has
 *                RIPINVALIDCHK, bit 7)
 *   IBS_OP_DATA3 bit 0 IbsLdOp, bit 1 IbsStOp, bit 7 IbsDcMiss,
 *                bit 15 IbsDcLockedOp, bit 17 IbsDcLinAddrValid,
 *                bit 18 IbsDcPhyAddrValid, bits 22-25 IbsOpMemWidth
 *                (0 = not reported, else 1 << (n - 1) bytes; reserved and
 *                read as 0 on families before 19h), bits 32-47 IbsDcMissLat
 *
 * Async-signal-safe. */
#ifndef CT_IBS_H
#define CT_IBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IBS_RAW_MIN_BYTES (4 + 6 * 8)  /* caps .. IBS_DC_LINADDR */

/* caps bits (CPUID Fn8000_001B EAX; bit 0 = IBS present) */
#define IBS_CAPS_RIPINVALIDCHK (1u << 7)
#define IBS_CAPS_BRNTRGT       (1u << 5)
#define IBS_CAPS_OPDATA4       (1u << 10)

/* IBS_OP_CTL */
#define IBS_OPCTL_EN      (1ull << 17)
#define IBS_OPCTL_VAL     (1ull << 18)
#define IBS_OPCTL_CNT_CTL (1ull << 19)
/* IBS_OP_DATA */
#define IBS_OPDATA_RIP_INVALID (1ull << 38)
/* IBS_OP_DATA3 */
#define IBS_OPDATA3_LD          (1ull << 0)
#define IBS_OPDATA3_ST          (1ull << 1)
#define IBS_OPDATA3_DC_MISS     (1ull << 7)
#define IBS_OPDATA3_LOCKED      (1ull << 15)
#define IBS_OPDATA3_LIN_VALID   (1ull << 17)
#define IBS_OPDATA3_PHYS_VALID  (1ull << 18)
#define IBS_OPDATA3_WIDTH_SHIFT 22
#define IBS_OPDATA3_WIDTH_MASK  0xfull

struct ibs_op_sample {
	uint32_t caps;
	uint64_t op_ctl, op_data, op_data2, op_data3;
	uint64_t ip;            /* IbsOpRip */
	bool ip_valid;          /* false when IbsRipInvalid is set: use the perf
	                         * sample's ip instead */
	bool load, store;       /* IbsLdOp, IbsStOp (both: a locked RMW) */
	bool locked;            /* IbsDcLockedOp */
	bool addr_valid;        /* IbsDcLinAddrValid */
	uint64_t addr;          /* IbsDcLinAd, when addr_valid */
	bool phys_valid;
	uint64_t phys_addr;
	uint8_t width;          /* access bytes from IbsOpMemWidth, 0 = unknown */
	bool dc_miss;
	uint16_t dc_miss_lat;   /* cycles, when dc_miss and load */
	uint8_t skip_reason;    /* when not usable: CT_SKIP_NOT_LOAD_STORE (neither
	                         * load nor store, or no valid address) or
	                         * CT_SKIP_KERNEL (kernel data address or ip) */
};

/* Decode one raw payload (r.raw, r.raw_size of a PERF_RECORD_SAMPLE from the
 * ibs_op PMU).  Returns 1 when it is a load or store with a valid user-space
 * linear address (out->addr), 0 when the op is valid but not usable (see
 * out->skip_reason), -1 when the payload is not an IBS op record (shorter
 * than IBS_RAW_MIN_BYTES, or IbsOpVal clear). */
int ibs_decode_raw(const void *raw, size_t size, struct ibs_op_sample *out);

#endif
