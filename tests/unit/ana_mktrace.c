/* Writes hand-built traces for tests/e2e/analyze_cli.sh and for throughput
 * measurements:
 *   ana_mktrace OUT basic        every record type, 3 threads, cpu map, small frames
 *   ana_mktrace OUT incomplete   the same without the end summary
 *   ana_mktrace OUT long         the same, its summary saying the run took 5 s
 *   ana_mktrace OUT unrecorded   the same, its summary saying 5 threads started
 *   ana_mktrace OUT big N        N samples over 4 threads (and arms/hits), streamed
 *   ana_mktrace OUT nofire       recorded where watchpoints do not fire (none armed),
 *                                a throttled thread, many samples in the runtime
 *   ana_mktrace OUT armsnohit    150 watchpoint arms, not one hit
 *   ana_mktrace OUT armsnohitsoft  the same with software watchpoints (inst)
 *   ana_mktrace OUT fullwp0      a full trace (every access), watchpoints off
 *   ana_mktrace OUT nosamples    2 threads that start and end, not one sample
 *   ana_mktrace OUT owner        the line monitor's records (--owner-window 4, period
 *                                10, 3 threads): 1 window opened, 2 not, 45 transfers
 *   ana_mktrace OUT ownernone    the same, no window opened (its table full), no transfer
 *   ana_mktrace OUT ownerlw      owner, its CONFIG saying line_watches=8 (as the inst
 *                                sampler records it: --period-multiplier cannot thin it)
 *   ana_mktrace OUT cpus         3 threads on 4 logical cpus (two per physical
 *                                core): ComDetective's cpu-indexed files
 *   ana_mktrace OUT threads N    N threads in a ring: thread i stores a word of
 *                                line i, thread i+1 then loads it (N pairs
 *                                communicate, of N x N): analysis memory at scale
 *   ana_mktrace OUT regions N    the same ring (N even) with markers: a thread
 *                                whose index is a multiple of 3 loads inside
 *                                region "a"; thread 0 marks phase "second"
 *                                after the first N/2 loads (tests/e2e/sparse.sh)
 *   ana_mktrace OUT quiet        2 threads: thread 1 loads thread 0's word inside
 *                                region "busy", then enters region "quiet" and
 *                                loads nothing (a region without communication)
 * Without arguments (as tests/run.sh runs it) it checks that the basic
 * trace reads back. */
#include <inttypes.h>
#include <stdarg.h>

#include "ana_common.h"

static void build_basic(struct tb *b)
{
	tb_init(b, 3);
	tb_machine(b, "cpu_model=Test CPU\ncache_line_size=64\nnproc=4\n"
	              "cpu.0=core 0 socket 0\ncpu.1=core 1 socket 0\n"
	              "cpu.2=core 0 socket 1\ncpu.3=core 1 socket 1\n");
	b->block_cap = 64;  /* a few records per frame: many frames */
	struct ct_record *r;
	r = tb_add(b, 0, CT_REC_THREAD_START, 10);
	r->u.start = (struct ct_thread_start){ 0x7ff000000000, 0x7ff000800000, 0x7f0000001000,
	                                       0x7f0000000f00, 0x7f0000001100 };
	r = tb_add(b, 0, CT_REC_CALLSITE, 20);
	r->u.callsite.id = 7;
	r->u.callsite.depth = 3;
	r->u.callsite.pc[0] = 0x401000;
	r->u.callsite.pc[1] = 0x402abc;
	r->u.callsite.pc[2] = 0x7f00deadbeef;
	r = tb_add(b, 0, CT_REC_ALLOC, 30);
	r->u.alloc = (struct ct_alloc){ .addr = 0x10000, .size = 4096, .callsite = 7,
	                                .kind = CT_ALLOC_MALLOC };
	tb_sample(b, 0, 100, 0x10000, 8, CT_ACCESS_STORE, 1000);
	r = tb_add(b, 0, CT_REC_MARKER, 110);
	r->u.marker.kind = CT_MARK_REGION_BEGIN;
	snprintf(r->u.marker.name, sizeof r->u.marker.name, "solve");
	r = tb_add(b, 0, CT_REC_LOST, 120);
	r->u.lost = (struct ct_lost){ CT_LOST_BUFFER_FULL, 5 };
	r = tb_add(b, 0, CT_REC_SKIPPED, 130);
	r->u.skipped = (struct ct_skipped){ CT_SKIP_DECODE_FAILED, 3 };
	r = tb_add(b, 0, CT_REC_FUNC_ENTER, 150);
	r->u.func.addr = 0x401100;
	r = tb_add(b, 0, CT_REC_FUNC_EXIT, 160);
	r->u.func.addr = 0;
	r = tb_add(b, 0, CT_REC_FREE, 900);
	r->u.free = (struct ct_free){ .addr = 0x10000, .size = 0, .kind = 0 };
	r = tb_add(b, 0, CT_REC_THREAD_END, 1000);
	r->u.end.status = 0;

	r = tb_add(b, 1, CT_REC_THREAD_START, 15);
	r->u.start = (struct ct_thread_start){ 0x7fe000000000, 0x7fe000800000, 0x7e0000001000, 0, 0 };
	r = tb_sample(b, 1, 200, 0x10008, 4, CT_ACCESS_LOAD, 1000);
	r->u.sample.flags = CT_SAMPLE_EXACT | CT_SAMPLE_HAS_DATA_SRC | CT_SAMPLE_HAS_WEIGHT;
	r->u.sample.data_src = 0x68100142;
	r->u.sample.weight = 57;
	tb_arm(b, 1, 200, 0, 100, 0x10000, 8, 2);
	tb_hit(b, 1, 250, 0x10000, 8, 0);
	r = tb_sample(b, 1, 300, 0x10000, 8, CT_ACCESS_ATOMIC, 1000);
	r->u.sample.flags = CT_SAMPLE_RECONSTRUCTED | CT_SAMPLE_PREV_INSN | CT_SAMPLE_FS_BASED;
	r = tb_add(b, 1, CT_REC_THREAD_END, 990);
	r->u.end.status = 11;

	r = tb_add(b, 2, CT_REC_ALLOC, 400);
	r->u.alloc = (struct ct_alloc){ .addr = 0x20000, .size = 64, .old_addr = 0x10000,
	                                .callsite = 7, .kind = CT_ALLOC_REALLOC };
	r = tb_add(b, 2, CT_REC_ALLOC, 410);
	r->u.alloc = (struct ct_alloc){ .addr = 0x7f1000000000, .size = 1 << 20, .callsite = 0,
	                                .kind = CT_ALLOC_MMAP };
	r = tb_add(b, 2, CT_REC_FREE, 420);
	r->u.free = (struct ct_free){ .addr = 0x7f1000000000, .size = 1 << 20, .kind = 1 };
	r = tb_add(b, 2, CT_REC_MARKER, 430);
	r->u.marker.kind = CT_MARK_PHASE;
	snprintf(r->u.marker.name, sizeof r->u.marker.name, "phase 2");
	tb_sample_cpu(b, 2, 500, 0x10004, 2, CT_ACCESS_LOAD, 1000, 3);
	r = tb_add(b, 2, CT_REC_SKIPPED, 510);
	r->u.skipped = (struct ct_skipped){ CT_SKIP_KERNEL, 1 };
}

/* Two threads writing and reading one line in turn (40 samples each, 1 us
 * apart; an arm after each with arms), for the report's warnings about the
 * recording machine. */
static void build_pingpong(struct tb *b, const char *config, uint64_t period, bool arms)
{
	tb_init(b, 2);
	tb_config(b, config);
	for (uint32_t i = 0; i < 80; i++) {
		uint64_t t = 1000 + 1000 * (uint64_t)i;
		tb_sample(b, i & 1, t, 0x10000 + 8 * (i & 1), 8, i & 2 ? CT_ACCESS_STORE : CT_ACCESS_LOAD,
		          period);
		if (arms)
			for (uint32_t k = 0; k < 2; k++)
				tb_arm(b, i & 1, t + 100 * k, (i + 1) & 1, t - 500, 0x20000, 8, 4);
	}
}

static void build_variant(struct tb *b, const char *kind)
{
	if (!strcmp(kind, "nofire")) {
		build_pingpong(b, "sampler=soft\nperiod=100\nperiod_unit=us-cpu\nthrottle=25\n"
		               "watchpoints=0\nwatchpoints_available=0\nwatchpoint_probe=no-fire\n"
		               "watchpoint_probe_detail=4 of 4 debug registers opened; none counted any "
		               "of 16 writes to its word\nwatchpoints_forced=0\nline_size=64\n", 100000,
		               false);
		struct ct_record *r = tb_add(b, 1, CT_REC_MARKER, 90000);
		r->u.marker.kind = CT_MARK_THROTTLE;
		snprintf(r->u.marker.name, sizeof r->u.marker.name, "period=200000 share=31%%");
		r = tb_add(b, 1, CT_REC_SKIPPED, 90001);
		r->u.skipped = (struct ct_skipped){ CT_SKIP_RUNTIME, 30 };
		b->features &= ~(uint64_t)CT_FEAT_WATCHPOINTS;
	} else if (!strcmp(kind, "armsnohit")) {
		build_pingpong(b, "sampler=soft\nperiod=1000\nperiod_unit=us-cpu\nwatchpoints=4\n"
		               "watchpoint_probe=fires\nline_size=64\n", 1000000, true);
	} else if (!strcmp(kind, "armsnohitsoft")) {
		build_pingpong(b, "sampler=inst\nperiod=1000\nperiod_unit=accesses\nwatchpoints=4\n"
		               "watchpoint_kind=software\nwatchpoint_probe=fires\nline_size=64\n", 1000,
		               true);
	} else {
		build_pingpong(b, "sampler=inst\nperiod=1\nperiod_unit=accesses\nwatchpoints=0\n"
		               "watchpoint_probe=no-fire\nfull=1\nline_size=64\n", 1, false);
		b->features = CT_FEAT_SAMPLES | CT_FEAT_FULL;
	}
}

/* N samples, streamed (not kept in memory): 4 threads with interleaved
 * times, each mostly on its own lines, every 16th access on one of 64
 * shared lines, a quarter stores; an arm and a hit after every 64th
 * sample. */
static int write_big(const char *path, uint64_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = CT_FORMAT_MIN_READ,
	                       .features = CT_FEAT_SAMPLES | CT_FEAT_WATCHPOINTS,
	                       .created_ns = 1700000000000000000ull };
	const char machine[] = "cpu.0=core 0 socket 0\ncpu.1=core 1 socket 0\n"
	                       "cpu.2=core 0 socket 1\ncpu.3=core 1 socket 1\n";
	const char config[] = "sampler=pebs\nperiod=10007\nperiod_unit=events\nwatchpoints=4\n"
	                      "line_size=64\n";
	int bad = ct_write_header(fd, &h) < 0;
	bad |= ct_write_section(fd, CT_SEC_MACHINE, machine, sizeof machine - 1) < 0;
	bad |= ct_write_section(fd, CT_SEC_CONFIG, config, sizeof config - 1) < 0;
	uint64_t records = 0;
	for (uint32_t th = 0; th < 4 && !bad; th++) {
		struct ct_thread_info ti = { .index = th, .parent = th ? 0 : UINT32_MAX,
		                             .tid = (int32_t)(2000 + th), .pid = 2000, .start_ns = 1 };
		bad |= ct_write_thread_info(fd, &ti) < 0;
		struct ct_sink sk;
		if (ct_sink_init(&sk, fd, CT_BLOCK_DEFAULT, 1) < 0)
			return -1;
		uint64_t x = 88172645463325252ull + th;
		for (uint64_t i = th; i < n && !bad; i += 4) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint64_t shared = 0x100000 + ((x >> 8) & 63) * 64;
			uint64_t addr = (x & 15) == 0 ? shared + ((x >> 20) & 7) * 8
			                              : 0x10000000ull * (th + 1) + ((x >> 8) & 0xfffff) * 8;
			struct ct_record r = { .type = CT_REC_SAMPLE, .thread = th, .time = 1000 + i * 50 };
			r.u.sample = (struct ct_sample){ .ip = 0x400000 + (x & 0xfff), .addr = addr,
			                                 .period = 10007, .cpu = th, .len = 8,
			                                 .kind = ((x >> 40) & 3) == 0 ? CT_ACCESS_STORE
			                                                              : CT_ACCESS_LOAD,
			                                 .flags = CT_SAMPLE_EXACT };
			bad |= ct_sink_append(&sk, &r) < 0;
			records++;
			if ((i & 63) == 3) {
				struct ct_record a = { .type = CT_REC_WP_ARM, .thread = th, .time = r.time };
				a.u.arm.publisher = (th + 1) & 3;
				a.u.arm.pub_time = r.time - 100;
				a.u.arm.pub_addr = shared;
				a.u.arm.pub_len = 8;
				a.u.arm.nwp = 4;
				for (int k = 0; k < 4; k++) {
					a.u.arm.wp_addr[k] = shared + 8 * k;
					a.u.arm.wp_len[k] = 8;
				}
				struct ct_record hh = { .type = CT_REC_WP_HIT, .thread = th, .time = r.time + 20 };
				hh.u.hit = (struct ct_wp_hit){ .ip = 0x401000, .addr = shared + 8, .cpu = th,
				                               .reg = 1, .len = 8 };
				bad |= ct_sink_append(&sk, &a) < 0;
				bad |= ct_sink_append(&sk, &hh) < 0;
				records += 2;
			}
		}
		bad |= ct_sink_flush(&sk) < 0;
		ct_sink_destroy(&sk);
	}
	char sum[128];
	snprintf(sum, sizeof sum, "exit_status=0\nexit_signal=0\nrecording=complete\nrecords=%llu\n",
	         (unsigned long long)records);
	bad |= ct_write_section(fd, CT_SEC_SUMMARY, sum, strlen(sum)) < 0;
	bad |= close(fd) < 0;
	return bad ? -1 : 0;
}

static void test_basic_reads_back(void)
{
	struct tb b;
	build_basic(&b);
	const char *path = tb_write(&b);
	CHECK(path != NULL);
	struct ct_error err = {{0}};
	struct ct_trace *t = path ? ct_trace_open(path, &err) : NULL;
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ_U(ct_trace_nthreads(t), 3);
		CHECK(ct_trace_complete(t));
		CHECK(ct_trace_thread_frames(t, 0) > 1);
		struct ct_cursor *c = ct_cursor_merged(t);
		struct ct_record r;
		uint64_t n = 0, last = 0;
		bool ordered = true;
		while (ct_cursor_next(c, &r, &err) == 1) {
			ordered &= r.time >= last;
			last = r.time;
			n++;
		}
		CHECK(ordered);
		size_t want = b.t[0].n + b.t[1].n + b.t[2].n;
		CHECK_EQ_U(n, want);
		ct_cursor_free(c);
		ct_trace_close(t);
	}
	tb_free(&b);
}

/* Six samples (comdetective model): T0 -> T1 true 1000 (cpu 0 -> 1, one
 * physical core), T0 -> T2 false 500 (both on cpu 0), T2 -> T0 true 1000
 * and T2 -> T1 false 1000 (cpu 3 -> 2). */
static void build_cpus(struct tb *b)
{
	tb_init(b, 3);
	tb_machine(b, "cache_line_size=64\nnproc=4\ncpu.0=core 0 socket 0\n"
	              "cpu.1=core 0 socket 0\ncpu.2=core 1 socket 0\ncpu.3=core 1 socket 0\n");
	tb_sample_cpu(b, 0, 100, 0x1000, 8, CT_ACCESS_STORE, 1000, 0);
	tb_sample_cpu(b, 1, 200, 0x1000, 8, CT_ACCESS_LOAD, 1000, 1);
	tb_sample_cpu(b, 2, 300, 0x1008, 8, CT_ACCESS_LOAD, 500, 0);
	tb_sample_cpu(b, 2, 400, 0x2000, 4, CT_ACCESS_STORE, 500, 3);
	tb_sample_cpu(b, 0, 500, 0x2000, 4, CT_ACCESS_LOAD, 1000, 2);
	tb_sample_cpu(b, 1, 600, 0x2004, 4, CT_ACCESS_LOAD, 1000, 2);
}

/* Two threads that start and end, and nothing between (a program that
 * exec'd, or was not instrumented). */
static void build_nosamples(struct tb *b)
{
	tb_init(b, 2);
	for (uint32_t t = 0; t < 2; t++) {
		tb_add(b, t, CT_REC_THREAD_START, 10 + t);
		tb_add(b, t, CT_REC_THREAD_END, 1000 + t);
	}
}

/* The line monitor (J = 4, P = 10): one sampled store opens its window,
 * two find the table full or their line's windows all open (q = 1/3 when
 * the transfers come, P' = P / q = 30); transfers of windows x P' / J:
 * T1 <- T0 1 window (7.5), T2 <- T0 2 (15), T0 <- T2 3 (22.5), 45 in all
 * (15 without the missed windows).  none_opened: every sampled store
 * finds the table full, and no transfer is seen. */
static void build_owner(struct tb *b, bool none_opened, bool line_watches)
{
	tb_init(b, 3);
	b->features = CT_FEAT_SAMPLES | CT_FEAT_OWNER;
	tb_config(b, line_watches ? "sampler=inst\nperiod=10\nperiod_unit=events\nline_size=64\n"
	                            "owner_window=4\nline_watches=8\n"
	                          : "sampler=inst\nperiod=10\nperiod_unit=events\nline_size=64\n"
	                            "owner_window=4\n");
	static const uint8_t status[3] = { CT_OWNER_OPENED, CT_OWNER_DROP_TABLE, CT_OWNER_DROP_LINE };
	for (uint32_t t = 0; t < 3; t++) {
		tb_sample(b, t, 10 + t, 0x10000, 8, CT_ACCESS_STORE, 10);
		tb_add(b, t, CT_REC_OWNER_WIN, 20 + t)->u.owin =
			(struct ct_owner_win){ 0x10000, none_opened ? CT_OWNER_DROP_TABLE : status[t] };
		if (none_opened)
			continue;
		struct ct_record *r = tb_add(b, t, CT_REC_OWNER_XFER, 30 + t);
		r->u.oxfer = (struct ct_owner_xfer){ .ip = 0x401000, .addr = 0x10008, .src = t ? 0 : 2,
			.windows = t + 1, .len = 8, .kind = CT_ACCESS_LOAD, .flags = CT_OWNER_TRUE };
	}
}

static void marker(struct tb *b, uint32_t t, uint64_t time, int kind, const char *name)
{
	struct ct_record *r = tb_add(b, t, CT_REC_MARKER, time);
	r->u.marker.kind = (uint8_t)kind;
	snprintf(r->u.marker.name, sizeof r->u.marker.name, "%s", name);
}

/* Thread i stores a word of line i at 1000 + 10 i, thread i + 1 (mod n)
 * loads it 5 ns later.  With markers: a loading thread whose index is a
 * multiple of 3 does so inside region "a", and thread 0 marks phase
 * "second" at 1002 + 10 n/2, after the loads of lines 0 .. n/2 - 1.  Each
 * thread's records are added in time order. */
static void build_ring(struct tb *b, size_t n, bool markers)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t dst = (uint32_t)((i + 1) % n);
		uint64_t at = 1005 + 10 * i;
		tb_sample(b, (uint32_t)i, 1000 + 10 * i, 0x100000 + 64 * i, 8, CT_ACCESS_STORE, 1000);
		if (markers && i == 0)
			marker(b, 0, 1002 + 10 * (n / 2), CT_MARK_PHASE, "second");
		bool in_a = markers && dst % 3 == 0;
		if (in_a)
			marker(b, dst, at - 1, CT_MARK_REGION_BEGIN, "a");
		tb_sample(b, dst, at, 0x100000 + 64 * i, 8, CT_ACCESS_LOAD, 1000);
		if (in_a)
			marker(b, dst, at + 1, CT_MARK_REGION_END, "a");
	}
}

static void build_quiet(struct tb *b)
{
	tb_init(b, 2);
	tb_sample(b, 0, 1000, 0x100000, 8, CT_ACCESS_STORE, 1000);
	marker(b, 1, 1004, CT_MARK_REGION_BEGIN, "busy");
	tb_sample(b, 1, 1005, 0x100000, 8, CT_ACCESS_LOAD, 1000);
	marker(b, 1, 1006, CT_MARK_REGION_END, "busy");
	marker(b, 1, 1010, CT_MARK_REGION_BEGIN, "quiet");
	marker(b, 1, 1020, CT_MARK_REGION_END, "quiet");
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		RUN(test_basic_reads_back);
		return check_summary();
	}
	struct tb b;
	if (!strcmp(argv[2], "basic") || !strcmp(argv[2], "incomplete") || !strcmp(argv[2], "long") ||
	    !strcmp(argv[2], "unrecorded")) {
		build_basic(&b);
		b.complete = strcmp(argv[2], "incomplete");
		if (!strcmp(argv[2], "long"))
			strcat(b.summary, "duration_ns=5000000000\n");
		if (!strcmp(argv[2], "unrecorded"))
			strcat(b.summary, "threads_started=5\n");
	} else if (!strcmp(argv[2], "cpus")) {
		build_cpus(&b);
	} else if (!strcmp(argv[2], "nosamples")) {
		build_nosamples(&b);
	} else if (!strcmp(argv[2], "owner") || !strcmp(argv[2], "ownernone") ||
	           !strcmp(argv[2], "ownerlw")) {
		build_owner(&b, !strcmp(argv[2], "ownernone"), !strcmp(argv[2], "ownerlw"));
	} else if (!strcmp(argv[2], "quiet")) {
		build_quiet(&b);
	} else if (!strcmp(argv[2], "big") && argc > 3) {
		if (write_big(argv[1], strtoull(argv[3], NULL, 10)) < 0) {
			perror(argv[1]);
			return 1;
		}
		return 0;
	} else if ((!strcmp(argv[2], "threads") || !strcmp(argv[2], "regions")) && argc > 3) {
		size_t n = strtoull(argv[3], NULL, 10);
		if (n < 2 || tb_init(&b, n))
			return 1;
		build_ring(&b, n, !strcmp(argv[2], "regions"));
	} else if (!strcmp(argv[2], "nofire") || !strcmp(argv[2], "armsnohit") ||
	           !strcmp(argv[2], "armsnohitsoft") || !strcmp(argv[2], "fullwp0")) {
		build_variant(&b, argv[2]);
	} else {
		fprintf(stderr, "usage: ana_mktrace OUT basic|incomplete|long|unrecorded|cpus|nofire|armsnohit|armsnohitsoft|fullwp0|nosamples|owner|ownernone|quiet|ownerlw|big N|threads N|regions N\n");
		return 1;
	}
	unlink(b.path);
	snprintf(b.path, sizeof b.path, "%s", argv[1]);
	bool ok = tb_write(&b) != NULL;
	if (!ok)
		perror(argv[1]);
	b.path[0] = 0;   /* tb_free must not remove the output */
	tb_free(&b);
	return ok ? 0 : 1;
}
