/* Compressed bytes per sample for a realistic sampled stream: 100k
 * samples, data addresses spread over a few MB, a few hundred hot
 * instructions, one sample every ~1 ms with jitter, occasional cpu
 * migration.  The design target is at most 8 bytes per sample (measured
 * by `make bench`); this test only guards against regressions (< 16). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "commtrace.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	return check_xorshift(&rng);
}

static double measure(int level, uint64_t heap_span, bool full)
{
	char path[512];
	int fd = mkstemp(check_tmp_path(path, sizeof path, "ct-fmt-size.XXXXXX"));
	struct ct_sink s;
	uint64_t ips[256];
	for (int i = 0; i < 256; i++)
		ips[i] = 0x401000 + (rnd() % 0x10000);
	if (fd < 0 || ct_sink_init(&s, fd, 0, level))
		return 1e9;
	unlink(path);
	struct ct_record r = { .type = CT_REC_SAMPLE, .time = 1000000000 };
	uint32_t cpu = 3;
	for (int i = 0; i < 100000; i++) {
		if (full)
			r.time += 2 + rnd() % 8;
		else
			r.time += 900000 + rnd() % 200000;              /* 1 ms +- 10% */
		if (rnd() % 1000 == 0)
			cpu = (uint32_t)(rnd() % 16);
		uint64_t addr;
		if (rnd() % 4 == 0)                                  /* stack */
			addr = 0x7ffd12340000 + (rnd() % 4096 & ~7ull);
		else                                                 /* heap / globals */
			addr = 0x55d0c0000000 + (rnd() % heap_span & ~3ull);
		r.u.sample = (struct ct_sample){ .ip = ips[rnd() % (full ? 16 : 256)], .addr = addr,
			.period = full ? 1 : 10007, .cpu = cpu, .len = rnd() % 8 ? 8 : 4,
			.kind = rnd() % 10 < 7 ? CT_ACCESS_LOAD : CT_ACCESS_STORE, .flags = CT_SAMPLE_EXACT };
		if (ct_sink_append(&s, &r))
			return 1e9;
	}
	ct_sink_flush(&s);
	double per = (double)s.bytes_written / (double)s.records;
	ct_sink_destroy(&s);
	close(fd);
	return per;
}

static void test_bytes_per_sample(void)
{
	double per = measure(3, 4 << 20, false);
	printf("sampled stream, 4 MB of data, level 3: %.2f bytes/sample\n", per);
	CHECK(per < 16);
	per = measure(3, 64 << 20, false);
	printf("sampled stream, 64 MB of data, level 3: %.2f bytes/sample\n", per);
	CHECK(per < 16);
	per = measure(1, 4 << 20, false);
	printf("sampled stream, 4 MB of data, level 1: %.2f bytes/sample\n", per);
	CHECK(per < 16);
}

/* Closer to a real program: a few hot instructions dominate (skewed),
 * most accesses walk three arrays in order, a quarter hit the stack. */
static double measure_skewed(void)
{
	char path[512];
	int fd = mkstemp(check_tmp_path(path, sizeof path, "ct-fmt-size.XXXXXX"));
	struct ct_sink s;
	uint64_t ips[64], cursor[3] = { 0x55d0c0000000, 0x55d0c1000000, 0x55d0c2000000 };
	for (int i = 0; i < 64; i++)
		ips[i] = 0x401000 + (rnd() % 0x4000);
	if (fd < 0 || ct_sink_init(&s, fd, 0, 3))
		return 1e9;
	unlink(path);
	struct ct_record r = { .type = CT_REC_SAMPLE, .time = 1000000000 };
	for (int i = 0; i < 100000; i++) {
		r.time += 900000 + rnd() % 200000;
		unsigned hot = (unsigned)(rnd() % 64);
		hot = hot * hot / 64;                                /* skewed to the first ones */
		uint64_t addr, x = rnd() % 100;
		if (x < 60) {
			unsigned a = hot % 3;
			cursor[a] += 8 * (1000 + rnd() % 500);       /* ~1 sample per 1000 iterations */
			addr = cursor[a];
		} else if (x < 85) {
			addr = 0x7ffd12340000 + (rnd() % 512) * 8;
		} else {
			addr = 0x55d0c0000000 + (rnd() % (64 << 20) & ~7ull);
		}
		r.u.sample = (struct ct_sample){ .ip = ips[hot], .addr = addr, .period = 10007, .cpu = 3,
			.len = 8, .kind = hot % 4 == 0 ? CT_ACCESS_STORE : CT_ACCESS_LOAD,
			.flags = CT_SAMPLE_EXACT };
		if (ct_sink_append(&s, &r))
			return 1e9;
	}
	ct_sink_flush(&s);
	double per = (double)s.bytes_written / (double)s.records;
	ct_sink_destroy(&s);
	close(fd);
	return per;
}

static void test_bytes_per_sample_skewed(void)
{
	double per = measure_skewed();
	printf("sampled stream, skewed ips, array walks, level 3: %.2f bytes/sample\n", per);
	CHECK(per < 16);
}

static void test_bytes_per_access_full(void)
{
	double per = measure(3, 64 << 10, true);
	printf("full trace, 64 KB of data, level 3: %.2f bytes/access\n", per);
	CHECK(per < 8);
}

int main(void)
{
	RUN(test_bytes_per_sample);
	RUN(test_bytes_per_sample_skewed);
	RUN(test_bytes_per_access_full);
	return check_summary();
}
