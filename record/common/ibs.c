/* AMD IBS op raw sample decoding.  See ibs.h for the layout and sources. */
#include "ibs.h"

#include <string.h>

#include "commtrace.h"

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* x86-64 canonical kernel half */
static bool kernel_addr(uint64_t a)
{
	return a >= 0xffff800000000000ull;
}

int ibs_decode_raw(const void *raw, size_t size, struct ibs_op_sample *out)
{
	const uint8_t *p = raw;

	memset(out, 0, sizeof *out);
	if (!raw || size < IBS_RAW_MIN_BYTES)
		return -1;
	memcpy(&out->caps, p, 4);
	out->op_ctl = rd64(p + 4);
	out->ip = rd64(p + 4 + 8);
	out->op_data = rd64(p + 4 + 16);
	out->op_data2 = rd64(p + 4 + 24);
	out->op_data3 = rd64(p + 4 + 32);
	uint64_t lin = rd64(p + 4 + 40);
	if (size >= 4 + 7 * 8)
		out->phys_addr = rd64(p + 4 + 48);

	if (!(out->op_ctl & IBS_OPCTL_VAL))
		return -1;

	out->ip_valid = !((out->caps & IBS_CAPS_RIPINVALIDCHK) &&
	                  (out->op_data & IBS_OPDATA_RIP_INVALID));
	uint64_t d3 = out->op_data3;
	out->load = (d3 & IBS_OPDATA3_LD) != 0;
	out->store = (d3 & IBS_OPDATA3_ST) != 0;
	out->locked = (d3 & IBS_OPDATA3_LOCKED) != 0;
	out->addr_valid = (d3 & IBS_OPDATA3_LIN_VALID) != 0;
	out->phys_valid = (d3 & IBS_OPDATA3_PHYS_VALID) != 0 && size >= 4 + 7 * 8;
	if (!out->phys_valid)
		out->phys_addr = 0;
	out->dc_miss = (d3 & IBS_OPDATA3_DC_MISS) != 0;
	if (out->dc_miss && out->load)
		out->dc_miss_lat = (uint16_t)(d3 >> 32);
	unsigned w = (unsigned)((d3 >> IBS_OPDATA3_WIDTH_SHIFT) & IBS_OPDATA3_WIDTH_MASK);
	if (w >= 1 && w <= 8)
		out->width = (uint8_t)(1u << (w - 1)); /* 1 .. 128 bytes */
	if (out->addr_valid)
		out->addr = lin;

	if (!out->load && !out->store) {
		out->skip_reason = CT_SKIP_NOT_LOAD_STORE;
		return 0;
	}
	if (!out->addr_valid) {
		out->skip_reason = CT_SKIP_NOT_LOAD_STORE;
		return 0;
	}
	if (kernel_addr(out->addr) || (out->ip_valid && kernel_addr(out->ip))) {
		out->skip_reason = CT_SKIP_KERNEL;
		return 0;
	}
	return 1;
}
