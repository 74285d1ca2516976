/* AMD IBS op raw payload decoding, on synthetic payloads laid out as the
 * kernel writes them (see ibs.h): u32 caps, then IBS_OP_CTL, IBS_OP_RIP,
 * IBS_OP_DATA, IBS_OP_DATA2, IBS_OP_DATA3, IBS_DC_LINADDR, IBS_DC_PHYSADDR,
 * [IBS_BR_TARGET], [IBS_OP_DATA4]. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "commtrace.h"
#include "ibs.h"
#include "perf_ring.h"

struct raw {
	uint8_t b[128];
	size_t len;
};

static void raw_build(struct raw *r, uint32_t caps, uint64_t ctl, uint64_t rip, uint64_t data,
                      uint64_t data3, uint64_t lin, uint64_t phys, int extra)
{
	uint64_t regs[9] = { ctl, rip, data, 0x21 /* data2 */, data3, lin, phys,
	                     0xb0b0 /* br target */, 0xd4 /* data4 */ };
	memset(r, 0, sizeof *r);
	memcpy(r->b, &caps, 4);
	memcpy(r->b + 4, regs, (size_t)(7 + extra) * 8);
	r->len = 4 + (size_t)(7 + extra) * 8;
}

#define CTL_OK (IBS_OPCTL_EN | IBS_OPCTL_VAL | IBS_OPCTL_CNT_CTL | 0x1000)
#define WIDTH(n) ((uint64_t)(n) << IBS_OPDATA3_WIDTH_SHIFT)
#define CAPS 0x7ffu /* Zen 2-like: AVAIL..OPDATA4, RIPINVALIDCHK, BRNTRGT */

static void test_load(void)
{
	struct raw r;
	struct ibs_op_sample s;
	raw_build(&r, CAPS, CTL_OK, 0x401000, 0,
	          IBS_OPDATA3_LD | IBS_OPDATA3_LIN_VALID | WIDTH(3), 0x7f0000001000ull, 0, 2);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 1);
	CHECK(s.load);
	CHECK(!s.store);
	CHECK(s.ip_valid);
	CHECK_EQ_U(s.ip, 0x401000);
	CHECK(s.addr_valid);
	CHECK_EQ_U(s.addr, 0x7f0000001000ull);
	CHECK_EQ_U(s.width, 4);
	CHECK_EQ_U(s.caps, CAPS);
	CHECK_EQ_U(s.op_data2, 0x21);
	CHECK(!s.phys_valid);
	CHECK_EQ_U(s.phys_addr, 0);
	CHECK_EQ_U(s.skip_reason, 0);
}

static void test_store(void)
{
	struct raw r;
	struct ibs_op_sample s;
	raw_build(&r, CAPS, CTL_OK, 0x402000, 0,
	          IBS_OPDATA3_ST | IBS_OPDATA3_LIN_VALID | IBS_OPDATA3_PHYS_VALID | WIDTH(4),
	          0x55550008ull, 0x12345008ull, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 1);
	CHECK(s.store);
	CHECK(!s.load);
	CHECK_EQ_U(s.addr, 0x55550008ull);
	CHECK_EQ_U(s.width, 8);
	CHECK(s.phys_valid);
	CHECK_EQ_U(s.phys_addr, 0x12345008ull);
}

static void test_widths(void)
{
	struct raw r;
	struct ibs_op_sample s;
	static const uint8_t want[] = { 0, 1, 2, 4, 8, 16, 32, 64, 128, 0, 0 };
	for (unsigned w = 0; w <= 10; w++) {
		raw_build(&r, CAPS, CTL_OK, 0x400000, 0,
		          IBS_OPDATA3_LD | IBS_OPDATA3_LIN_VALID | WIDTH(w), 0x1000, 0, 0);
		CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 1);
		CHECK_EQ_U(s.width, want[w]);
	}
}

static void test_locked_rmw_and_latency(void)
{
	struct raw r;
	struct ibs_op_sample s;
	uint64_t d3 = IBS_OPDATA3_LD | IBS_OPDATA3_ST | IBS_OPDATA3_LOCKED | IBS_OPDATA3_LIN_VALID |
	              IBS_OPDATA3_DC_MISS | ((uint64_t)250 << 32) | WIDTH(4);
	raw_build(&r, CAPS, CTL_OK, 0x403000, 0, d3, 0x6000, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 1);
	CHECK(s.load && s.store && s.locked);
	CHECK(s.dc_miss);
	CHECK_EQ_U(s.dc_miss_lat, 250);
}

static void test_neither(void)
{
	struct raw r;
	struct ibs_op_sample s;
	/* an ALU op: neither load nor store, even with a stale address */
	raw_build(&r, CAPS, CTL_OK, 0x404000, 0, IBS_OPDATA3_LIN_VALID, 0x7000, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 0);
	CHECK(!s.load && !s.store);
	CHECK_EQ_U(s.skip_reason, CT_SKIP_NOT_LOAD_STORE);
}

static void test_invalid_linear_address(void)
{
	struct raw r;
	struct ibs_op_sample s;
	raw_build(&r, CAPS, CTL_OK, 0x405000, 0, IBS_OPDATA3_LD | WIDTH(4), 0xdeadbeef, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 0);
	CHECK(s.load);
	CHECK(!s.addr_valid);
	CHECK_EQ_U(s.addr, 0);
	CHECK_EQ_U(s.skip_reason, CT_SKIP_NOT_LOAD_STORE);
}

static void test_kernel(void)
{
	struct raw r;
	struct ibs_op_sample s;
	raw_build(&r, CAPS, CTL_OK, 0x406000, 0, IBS_OPDATA3_LD | IBS_OPDATA3_LIN_VALID,
	          0xffff888000001000ull, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 0);
	CHECK_EQ_U(s.skip_reason, CT_SKIP_KERNEL);
	raw_build(&r, CAPS, CTL_OK, 0xffffffff81000000ull, 0,
	          IBS_OPDATA3_LD | IBS_OPDATA3_LIN_VALID, 0x1000, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 0);
	CHECK_EQ_U(s.skip_reason, CT_SKIP_KERNEL);
}

static void test_rip_invalid(void)
{
	struct raw r;
	struct ibs_op_sample s;
	raw_build(&r, CAPS, CTL_OK, 0, IBS_OPDATA_RIP_INVALID,
	          IBS_OPDATA3_ST | IBS_OPDATA3_LIN_VALID, 0x8000, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 1);
	CHECK(!s.ip_valid);
	/* without RIPINVALIDCHK in caps the bit means nothing */
	raw_build(&r, CAPS & ~IBS_CAPS_RIPINVALIDCHK, CTL_OK, 0x407000, IBS_OPDATA_RIP_INVALID,
	          IBS_OPDATA3_ST | IBS_OPDATA3_LIN_VALID, 0x8000, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), 1);
	CHECK(s.ip_valid);
}

static void test_malformed(void)
{
	struct raw r;
	struct ibs_op_sample s;
	raw_build(&r, CAPS, CTL_OK, 0x408000, 0, IBS_OPDATA3_LD | IBS_OPDATA3_LIN_VALID, 0x9000, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, IBS_RAW_MIN_BYTES - 1, &s), (unsigned long long)-1);
	CHECK_EQ_U(ibs_decode_raw(NULL, 100, &s), (unsigned long long)-1);
	/* exactly up to IBS_DC_LINADDR: still decodes, no physical address */
	CHECK_EQ_U(ibs_decode_raw(r.b, IBS_RAW_MIN_BYTES, &s), 1);
	CHECK_EQ_U(s.addr, 0x9000);
	CHECK(!s.phys_valid);
	/* IbsOpVal clear */
	raw_build(&r, CAPS, IBS_OPCTL_EN, 0x408000, 0, IBS_OPDATA3_LD | IBS_OPDATA3_LIN_VALID,
	          0x9000, 0, 0);
	CHECK_EQ_U(ibs_decode_raw(r.b, r.len, &s), (unsigned long long)-1);
}

/* The payload inside a PERF_RECORD_SAMPLE as the ibs_op PMU writes it
 * (sample_type IP|TID|TIME|CPU|RAW|PERIOD), through the ring parser: the
 * raw size field is 4 + 7 * 8 = 60, so the u64 registers sit at offsets
 * 4 mod 8 in the record and the record is 8-byte aligned. */
static void test_through_perf_record(void)
{
	struct raw r;
	raw_build(&r, CAPS & ~IBS_CAPS_BRNTRGT & ~IBS_CAPS_OPDATA4, CTL_OK, 0x409000, 0,
	          IBS_OPDATA3_LD | IBS_OPDATA3_LIN_VALID | WIDTH(2), 0x7ffc0010ull, 0, 0);
	uint8_t rec[256];
	size_t n = 0;
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
	                               .size = 0 };
	n += sizeof h;
	uint64_t ip = 0x409000, time = 55, period = 4096;
	uint32_t pidtid[2] = { 10, 11 }, cpu[2] = { 1, 0 }, rsz = (uint32_t)r.len;
	memcpy(rec + n, &ip, 8); n += 8;
	memcpy(rec + n, pidtid, 8); n += 8;
	memcpy(rec + n, &time, 8); n += 8;
	memcpy(rec + n, cpu, 8); n += 8;
	memcpy(rec + n, &period, 8); n += 8;
	memcpy(rec + n, &rsz, 4); n += 4;
	memcpy(rec + n, r.b, r.len); n += r.len;
	CHECK_EQ_U(n % 8, 0);
	h.size = (uint16_t)n;
	memcpy(rec, &h, sizeof h);

	struct perf_sample_fmt f = {
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
		               PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD };
	struct perf_rec pr;
	CHECK(perf_parse_record(&f, rec, n, &pr) == 0);
	CHECK_EQ_U(pr.raw_size, 60);
	CHECK_EQ_U(pr.period, 4096);
	struct ibs_op_sample s;
	CHECK_EQ_U(ibs_decode_raw(pr.raw, pr.raw_size, &s), 1);
	CHECK_EQ_U(s.addr, 0x7ffc0010ull);
	CHECK_EQ_U(s.width, 2);
	CHECK_EQ_U(s.ip, pr.ip);
}

int main(void)
{
	RUN(test_load);
	RUN(test_store);
	RUN(test_widths);
	RUN(test_locked_rmw_and_latency);
	RUN(test_neither);
	RUN(test_invalid_linear_address);
	RUN(test_kernel);
	RUN(test_rip_invalid);
	RUN(test_malformed);
	RUN(test_through_perf_record);
	return check_summary();
}
