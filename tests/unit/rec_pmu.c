/* Sampler probes, PMU attr builders and the COMMTRACE_PMU_ATTRS round trip.
 *
 * PEBS encodings are checked with libpfm4's forced PMUs (LIBPFM_FORCE_PMU=skl,
 * icl, hsw, bdw, ... with LIBPFM_ENCODE_INACTIVE=1), so they need no Intel
 * hardware.  Each forced case runs in a child process: libpfm4 4.13 reads
 * LIBPFM_FORCE_PMU only in pfm_initialize(), and after pfm_terminate() a PMU
 * forced earlier stays marked present, so pfm_terminate/pfm_initialize in one
 * process would leave two "present" PMUs (seen with 4.13: forcing icl after
 * hsw lists both).
 *
 * Expected configs (event code | umask << 8) are Intel's event numbers, as
 * libpfm4 4.13 encodes them (its tables lib/events/intel_{skl,icl,spr}_events.h
 * for MEM_INST_RETIRED, intel_{hsw,bdw,snb}_events.h for MEM_UOPS_RETIRED /
 * MEM_TRANS_RETIRED):
 *   MEM_INST_RETIRED.ALL_LOADS  D0H umask 81H -> 0x81d0   (skl, icl, spr)
 *   MEM_INST_RETIRED.ALL_STORES D0H umask 82H -> 0x82d0
 *   MEM_UOPS_RETIRED.ALL_LOADS  D0H umask 81H -> 0x81d0   (hsw, bdw, glm)
 *   MEM_UOPS_RETIRED.ALL_STORES D0H umask 82H -> 0x82d0
 *   MEM_TRANS_RETIRED.LOAD_LATENCY CDH umask 01H -> 0x1cd, ldlat in config1 (snb, ivb)
 *   MEM_TRANS_RETIRED.PRECISE_STORE CDH umask 02H -> 0x2cd (snb, ivb)
 * PERF_TYPE_RAW is 4. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "ibs.h"
#include "perf_ring.h"
#include "pmu.h"
#include "pmu_sample.h"

#ifdef HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#define PEBS_BASE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                   PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC)

static bool contains(const char *s, const char *sub)
{
	return s && strstr(s, sub) != NULL;
}

/* ---- probes on this machine ---------------------------------------------- */

static void test_probe_soft(void)
{
	char why[512] = "x";
	CHECK(pmu_probe_sampler("soft", why, sizeof why));
	CHECK(why[0] != 0);
	printf("  soft: %s\n", why);
}

static void test_probe_pebs_ibs(void)
{
	char why[512];
	/* On a machine without PEBS / IBS (this VM) both say no, with a reason
	 * that names the fallback.  On real hardware they may say yes. */
	bool pebs = pmu_probe_sampler("pebs", why, sizeof why);
	printf("  pebs: %s: %s\n", pebs ? "yes" : "no", why);
	CHECK(why[0] != 0);
	if (!pebs)
		CHECK(contains(why, "soft"));
	bool ibs = pmu_probe_sampler("ibs", why, sizeof why);
	printf("  ibs: %s: %s\n", ibs ? "yes" : "no", why);
	CHECK(why[0] != 0);
	if (!ibs)
		CHECK(contains(why, "soft"));
	/* this VM has no CPU PMU at all */
	struct stat st;
	if (stat("/sys/bus/event_source/devices/cpu", &st) != 0 &&
	    stat("/sys/bus/event_source/devices/cpu_core", &st) != 0) {
		CHECK(!pebs);
		CHECK(pmu_probe_sampler("pebs", why, sizeof why) == false);
		CHECK(contains(why, "no CPU PMU"));
	}
	if (stat("/sys/bus/event_source/devices/ibs_op", &st) != 0)
		CHECK(!ibs);
}

static void test_probe_inst_unknown(void)
{
	char why[256];
	CHECK(pmu_probe_sampler("inst", why, sizeof why));
	CHECK(contains(why, "fsanitize=thread"));
	CHECK(!pmu_probe_sampler("bogus", why, sizeof why));
	CHECK(contains(why, "bogus"));
	CHECK(!pmu_probe_sampler(NULL, why, sizeof why));
	/* a zero-capacity why is fine */
	CHECK(pmu_probe_sampler("soft", NULL, 0));
}

/* perf_event_open refused by a seccomp filter (as in some containers): soft
 * still works, through POSIX CPU-time timers, and says why. */
static void denied(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		SKIP("cannot install a seccomp filter here");
		return;
	}
	char why[512];
	CHECK(pmu_probe_sampler("soft", why, sizeof why));
	printf("  soft under seccomp: %s\n", why);
	CHECK(contains(why, "POSIX CPU-time timers"));
	CHECK(contains(why, "seccomp"));
	CHECK(contains(why, "denied"));
	CHECK_EQ_U(pmu_weight_sample_type(), PERF_SAMPLE_WEIGHT);
}
static void test_probe_soft_denied(void) { check_in_child(denied); }

static void test_weight_type(void)
{
	uint64_t w = pmu_weight_sample_type();
	CHECK(w == PERF_SAMPLE_WEIGHT || w == PERF_SAMPLE_WEIGHT_STRUCT);
	CHECK_EQ_U(pmu_weight_sample_type(), w); /* cached, stable */
	printf("  weight: %s\n", w == PERF_SAMPLE_WEIGHT_STRUCT ? "WEIGHT_STRUCT" : "WEIGHT");
}

/* ---- COMMTRACE_PMU_ATTRS: attrs -> string -> attrs ------------------------ */

/* Format a[0..n) with kinds, parse it back, and check the same attrs and
 * kinds come out (the runtime's attrs are the launcher's). */
static void roundtrip(const struct perf_event_attr *a, const uint8_t *kinds, size_t n)
{
	char env[PMU_CONV_MAX_EVENTS * PMU_ATTRS_ITEM_MAX];
	int len = pmu_pebs_attrs_format(a, kinds, n, env, sizeof env);
	CHECK(len > 0);
	CHECK_EQ_U(strlen(env), (unsigned long long)len);
	struct perf_event_attr b[PMU_CONV_MAX_EVENTS];
	uint8_t k[PMU_CONV_MAX_EVENTS];
	char why[256] = "";
	memset(b, 0xa5, sizeof b);
	int m = pmu_pebs_attrs_parse(env, b, k, PMU_CONV_MAX_EVENTS, why, sizeof why);
	if (m != (int)n)
		printf("  \"%s\": %d attrs (%s)\n", env, m, why);
	CHECK_EQ_U(m, n);
	for (size_t i = 0; i < n && m == (int)n; i++) {
		CHECK(memcmp(&a[i], &b[i], sizeof b[i]) == 0);
		CHECK_EQ_U(k[i], kinds[i]);
	}
}

static void test_pmu_attrs_roundtrip(void)
{
	struct perf_event_attr a[PMU_CONV_MAX_EVENTS];
	uint8_t kinds[PMU_CONV_MAX_EVENTS];
	pmu_pebs_attr_init(&a[0], PERF_TYPE_RAW, 0x81d0, 0, 0, 500000, 0);
	pmu_pebs_attr_init(&a[1], PERF_TYPE_RAW, 0x82d0, 0, 0, 500000, 3);
	kinds[0] = PMU_KIND_LOAD;
	kinds[1] = PMU_KIND_STORE;
	/* the builder: what pmu_pebs_attrs gives (see check_pebs_attr) */
	CHECK_EQ_U(a[0].precise_ip, 3);
	CHECK_EQ_U(a[0].sample_type, PEBS_BASE | pmu_weight_sample_type());
	CHECK_EQ_U(a[0].exclude_guest, 1);
	CHECK_EQ_U(a[0].disabled, 1);
	CHECK_EQ_U(a[0].clockid, CLOCK_MONOTONIC);
	char env[512];
	CHECK(pmu_pebs_attrs_format(a, kinds, 2, env, sizeof env) > 0);
	CHECK_STR(env, "load:4:0x81d0:0:0:500000:3,store:4:0x82d0:0:0:500000:3");
	roundtrip(a, kinds, 2);

	/* every field at an edge: load latency with ldlat in config1, a
	 * 64-bit config2, hybrid PMU type, huge period, lower precision,
	 * an expert event of unknown kind; the most events the runtime takes */
	pmu_pebs_attr_init(&a[0], PERF_TYPE_RAW, 0x1cd, 3, 0, 1, 3);
	pmu_pebs_attr_init(&a[1], 8, 0x82d0, 0, UINT64_MAX, UINT64_MAX, 2);
	pmu_pebs_attr_init(&a[2], UINT32_MAX, UINT64_MAX, UINT64_MAX, 1, 7, 1);
	kinds[0] = PMU_KIND_LOAD;
	kinds[1] = PMU_KIND_STORE;
	kinds[2] = PMU_KIND_UNKNOWN;
	for (size_t i = 3; i < PMU_CONV_MAX_EVENTS; i++) {
		pmu_pebs_attr_init(&a[i], PERF_TYPE_RAW, 0x81d0 + i, i, 0, 1000 + i, 1 + i % 3);
		kinds[i] = (uint8_t)(i % 2);
	}
	roundtrip(a, kinds, 3);
	roundtrip(a, kinds, PMU_CONV_MAX_EVENTS);
	CHECK(pmu_pebs_attrs_format(a, kinds, 3, env, sizeof env) > 0);
	CHECK(contains(env, "any:4294967295:0xffffffffffffffff:0xffffffffffffffff:0x1:7:1"));
	/* every event fits in PMU_ATTRS_ITEM_MAX */
	CHECK(pmu_pebs_attrs_format(a, kinds, 3, env, 3 * PMU_ATTRS_ITEM_MAX) > 0);
	/* too small a buffer */
	CHECK(pmu_pebs_attrs_format(a, kinds, 2, env, 20) == -1);
	CHECK_EQ_U(env[0], 0);

	/* precise may be left out (3); decimal configs are accepted too */
	struct perf_event_attr b[4];
	uint8_t k[4];
	char why[256];
	CHECK_EQ_U(pmu_pebs_attrs_parse("load:4:33232:0:0:100", b, k, 4, why, sizeof why), 1);
	pmu_pebs_attr_init(&a[0], PERF_TYPE_RAW, 0x81d0, 0, 0, 100, 3);
	CHECK(memcmp(&a[0], &b[0], sizeof b[0]) == 0);
	CHECK_EQ_U(k[0], PMU_KIND_LOAD);
}

static void test_pmu_attrs_parse_errors(void)
{
	static const char *const bad[] = {
		"", "load", "load:", "loads:4:0x81d0:0:0:100:3", ":4:0x81d0:0:0:100:3",
		"load:4:0x81d0:0:0", "load:4:0x81d0:0:0:0:3", "load:4:0x81d0:0:0:100:0",
		"load:4:0x81d0:0:0:100:4", "load:4:0x81d0:0:0:100:3:1", "load:4:0x81d0:0:0:100:",
		"load:4:0x81d0:0:0:-100:3", "load:4:0x81d0:0:zero:100:3", "load:4:0x81d0::0:100:3",
		"load:4294967296:0x81d0:0:0:100:3", "load:4:0x1ffffffffffffffff:0:0:100:3",
		"load:4:0x81d0:0:0:100:3,", ",load:4:0x81d0:0:0:100:3",
		"load:4:0x81d0:0:0:100:3,,store:4:0x82d0:0:0:100:3", "load:4:0x81d0:0:0:12x:3",
		"load: 4:0x81d0:0:0:100:3", "load:4:0x81d0:0:0:100:3 ",
	};
	struct perf_event_attr b[2];
	uint8_t k[2];
	char why[256];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why[0] = 0;
		int r = pmu_pebs_attrs_parse(bad[i], b, k, 2, why, sizeof why);
		if (r != -1)
			printf("  accepted bad COMMTRACE_PMU_ATTRS \"%s\"\n", bad[i]);
		CHECK_EQ_U(r, (unsigned long long)-1);
		CHECK(why[0] != 0);
	}
	CHECK(pmu_pebs_attrs_parse(NULL, b, k, 2, why, sizeof why) == -1);
	CHECK(contains(why, "COMMTRACE_PMU_ATTRS"));
	/* more events than room */
	CHECK(pmu_pebs_attrs_parse("load:4:1:0:0:9,store:4:2:0:0:9,any:4:3:0:0:9", b, k, 2, why,
	                           sizeof why) == -1);
	CHECK(contains(why, "more than 2"));
	/* kinds may be NULL */
	CHECK_EQ_U(pmu_pebs_attrs_parse("store:4:2:0:0:9:2", b, NULL, 2, why, sizeof why), 1);
	CHECK_EQ_U(b[0].precise_ip, 2);
}

/* ---- PEBS encodings with forced libpfm4 PMUs ---------------------------- */

#ifdef HAVE_LIBPFM
static const char *forced_pmu;

static bool force(const char *pmu)
{
	setenv("LIBPFM_FORCE_PMU", pmu, 1);
	setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
	pfm_terminate();
	int r = pfm_initialize();
	if (r != PFM_SUCCESS) {
		char why[128];
		snprintf(why, sizeof why, "libpfm4 refuses LIBPFM_FORCE_PMU=%s: %s", pmu,
		         pfm_strerror(r));
		SKIP(why);
		return false;
	}
	/* is the forced PMU really active? */
	bool found = false;
	pfm_pmu_t p;
	pfm_for_all_pmus(p) {
		pfm_pmu_info_t info;
		memset(&info, 0, sizeof info);
		info.size = sizeof info;
		if (pfm_get_pmu_info(p, &info) == PFM_SUCCESS && info.is_present &&
		    !strcmp(info.name, pmu))
			found = true;
	}
	if (!found) {
		char why[128];
		snprintf(why, sizeof why, "libpfm4 did not activate forced PMU %s", pmu);
		SKIP(why);
		return false;
	}
	return true;
}

static void check_pebs_attr(const struct perf_event_attr *a, uint64_t config, uint64_t period)
{
	CHECK_EQ_U(a->type, PERF_TYPE_RAW);
	CHECK_EQ_U(a->config, config);
	CHECK_EQ_U(a->size, sizeof *a);
	CHECK_EQ_U(a->sample_period, period);
	CHECK_EQ_U(a->freq, 0);
	CHECK_EQ_U(a->sample_type, PEBS_BASE | pmu_weight_sample_type());
	CHECK_EQ_U(a->precise_ip, 3);
	CHECK_EQ_U(a->exclude_kernel, 1);
	CHECK_EQ_U(a->exclude_hv, 1);
	CHECK_EQ_U(a->exclude_user, 0);
	CHECK_EQ_U(a->exclude_guest, 1);
	CHECK_EQ_U(a->use_clockid, 1);
	CHECK_EQ_U(a->clockid, CLOCK_MONOTONIC);
	CHECK_EQ_U(a->disabled, 1);
	CHECK_EQ_U(a->sample_id_all, 1);
}

static void forced_default(uint64_t ld, uint64_t st, uint64_t ld_config1)
{
	if (!force(forced_pmu))
		return;
	struct perf_event_attr a[4];
	uint8_t kinds[4];
	char why[256] = "";
	int n = pmu_pebs_attrs_kinds(NULL, 10007, a, kinds, 4, why, sizeof why);
	if (n != 2)
		printf("  %s: n=%d why=%s\n", forced_pmu, n, why);
	CHECK_EQ_U(n, 2);
	if (n != 2)
		return;
	check_pebs_attr(&a[0], ld, 10007);
	check_pebs_attr(&a[1], st, 10007);
	CHECK_EQ_U(a[0].config1, ld_config1);
	CHECK_EQ_U(kinds[0], PMU_KIND_LOAD);
	CHECK_EQ_U(kinds[1], PMU_KIND_STORE);
	/* what the launcher passes the runtime gives the same attrs */
	roundtrip(a, kinds, 2);
	/* the same through pmu_pebs_attrs */
	struct perf_event_attr b[2];
	CHECK_EQ_U(pmu_pebs_attrs(NULL, 10007, b, 2, why, sizeof why), 2);
	CHECK(memcmp(a, b, sizeof b) == 0);
	/* room for only one event */
	CHECK(pmu_pebs_attrs(NULL, 10007, b, 1, why, sizeof why) == -1);
	CHECK(why[0] != 0);
}

static void skl_default(void) { forced_pmu = "skl"; forced_default(0x81d0, 0x82d0, 0); }
static void icl_default(void) { forced_pmu = "icl"; forced_default(0x81d0, 0x82d0, 0); }
static void spr_default(void) { forced_pmu = "spr"; forced_default(0x81d0, 0x82d0, 0); }
static void hsw_default(void) { forced_pmu = "hsw"; forced_default(0x81d0, 0x82d0, 0); }
static void bdw_default(void) { forced_pmu = "bdw"; forced_default(0x81d0, 0x82d0, 0); }
static void snb_default(void) { forced_pmu = "snb"; forced_default(0x1cd, 0x2cd, 3); }

static void test_pebs_forced_skl(void) { check_in_child(skl_default); }
static void test_pebs_forced_icl(void) { check_in_child(icl_default); }
static void test_pebs_forced_spr(void) { check_in_child(spr_default); }
static void test_pebs_forced_hsw(void) { check_in_child(hsw_default); }
static void test_pebs_forced_bdw(void) { check_in_child(bdw_default); }
static void test_pebs_forced_snb(void) { check_in_child(snb_default); }

/* The default picks MEM_INST_RETIRED where it exists: on Skylake the
 * MEM_UOPS_RETIRED alias is not used, on Haswell MEM_INST_RETIRED is not
 * known.  Checked through the events' canonical names. */
static void which_names(void)
{
	if (!force("hsw"))
		return;
	char why[256];
	/* explicit hsw:: names work, skl-only names do not */
	struct perf_event_attr a[2];
	CHECK_EQ_U(pmu_pebs_attrs("hsw::MEM_UOPS_RETIRED:ALL_LOADS@2000", 1000, a, 2, why,
	                          sizeof why), 1);
	CHECK_EQ_U(a[0].config, 0x81d0);
	CHECK_EQ_U(a[0].sample_period, 2000);
	CHECK(pmu_pebs_attrs("hsw::MEM_INST_RETIRED:ALL_LOADS", 1000, a, 2, why, sizeof why) == -1);
	CHECK(contains(why, "MEM_INST_RETIRED"));
}
static void test_pebs_forced_names(void) { check_in_child(which_names); }

static void expert(void)
{
	if (!force("skl"))
		return;
	struct perf_event_attr a[4];
	uint8_t kinds[4];
	char why[256] = "";
	int n = pmu_pebs_attrs_kinds("MEM_INST_RETIRED:ALL_LOADS@100000,MEM_INST_RETIRED:ALL_STORES",
	                             5003, a, kinds, 4, why, sizeof why);
	CHECK_EQ_U(n, 2);
	if (n == 2) {
		check_pebs_attr(&a[0], 0x81d0, 100000);
		check_pebs_attr(&a[1], 0x82d0, 5003);
		CHECK_EQ_U(kinds[0], PMU_KIND_LOAD);
		CHECK_EQ_U(kinds[1], PMU_KIND_STORE);
	}
	/* precise level from the event string, hex period */
	n = pmu_pebs_attrs_kinds("skl::MEM_INST_RETIRED:ALL_LOADS:precise=2@0x1000", 5003, a, kinds,
	                         4, why, sizeof why);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(a[0].precise_ip, 2);
	CHECK_EQ_U(a[0].sample_period, 0x1000);
	CHECK_EQ_U(a[0].config, 0x81d0);
	roundtrip(a, kinds, 1);
	/* an event that is neither: kind unknown */
	n = pmu_pebs_attrs_kinds("MEM_LOAD_RETIRED:L1_HIT,BR_INST_RETIRED:ALL_BRANCHES@7", 5003, a,
	                         kinds, 4, why, sizeof why);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(kinds[0], PMU_KIND_LOAD);
	CHECK_EQ_U(kinds[1], PMU_KIND_UNKNOWN);
	CHECK_EQ_U(a[1].sample_period, 7);
	roundtrip(a, kinds, 2);

	/* errors */
	static const char *const bad[] = {
		"NO_SUCH_EVENT", "MEM_INST_RETIRED:ALL_LOADS@", "MEM_INST_RETIRED:ALL_LOADS@0",
		"MEM_INST_RETIRED:ALL_LOADS@12x", "MEM_INST_RETIRED:ALL_LOADS@-5", ",",
		"MEM_INST_RETIRED:ALL_LOADS,,MEM_INST_RETIRED:ALL_STORES",
		"MEM_INST_RETIRED:ALL_LOADS:NOT_A_UMASK",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why[0] = 0;
		int r = pmu_pebs_attrs(bad[i], 1000, a, 4, why, sizeof why);
		if (r != -1)
			printf("  accepted bad spec \"%s\"\n", bad[i]);
		CHECK_EQ_U(r, (unsigned long long)-1);
		CHECK(why[0] != 0);
	}
	/* more events than room */
	CHECK(pmu_pebs_attrs("MEM_INST_RETIRED:ALL_LOADS,MEM_INST_RETIRED:ALL_STORES", 1000, a, 1,
	                     why, sizeof why) == -1);
	CHECK(contains(why, "too many"));
	/* period 0 */
	CHECK(pmu_pebs_attrs(NULL, 0, a, 4, why, sizeof why) == -1);
}
static void test_pebs_expert_spec(void) { check_in_child(expert); }

/* Unforced on this machine: whatever libpfm4 finds.  On a non-Intel CPU
 * (this VM: AMD) there is no PEBS event and the reason says so. */
static void native(void)
{
	struct perf_event_attr a[4];
	char why[256] = "";
	int n = pmu_pebs_attrs(NULL, 1000, a, 4, why, sizeof why);
	printf("  native: n=%d %s\n", n, why);
	char vendor[64] = "";
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "vendor_id", 9)) {
			sscanf(line, "vendor_id : %63s", vendor);
			break;
		}
	if (f)
		fclose(f);
	if (strcmp(vendor, "GenuineIntel") != 0) {
		CHECK(n == -1);
		CHECK(contains(why, "PEBS") || contains(why, "PMU"));
	} else {
		CHECK(n >= 2 || why[0]);
	}
}
static void test_pebs_native(void) { check_in_child(native); }
#else
static void test_pebs_without_libpfm(void)
{
	struct perf_event_attr a[2];
	char why[256];
	CHECK(pmu_pebs_attrs(NULL, 1000, a, 2, why, sizeof why) == -1);
	CHECK(contains(why, "libpfm4"));
}
#endif

/* ---- IBS attr from a fake sysfs ------------------------------------------ */

static char fake_root[128];

static void write_file(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof p, "%s%s", fake_root, rel);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void mkdirs(const char *rel)
{
	char p[256];
	snprintf(p, sizeof p, "%s%s", fake_root, rel);
	for (char *s = p + strlen(fake_root) + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void test_ibs_attr_fake_sysfs(void)
{
	char name[64];
	snprintf(name, sizeof name, "ct-pmu-test-%d", (int)getpid());
	check_tmp_path(fake_root, sizeof fake_root, name);
	mkdir(fake_root, 0755);
	struct perf_event_attr a;
	char why[256];

	pmu_set_sysfs_root(fake_root);
	CHECK(pmu_ibs_attr(100003, &a, why, sizeof why) == -1);
	CHECK(contains(why, "IBS"));

	/* a Zen 4-like ibs_op: cnt_ctl and swfilt */
	mkdirs("/sys/bus/event_source/devices/ibs_op/format");
	write_file("/sys/bus/event_source/devices/ibs_op/type", "11\n");
	write_file("/sys/bus/event_source/devices/ibs_op/format/cnt_ctl", "config:19\n");
	write_file("/sys/bus/event_source/devices/ibs_op/format/swfilt", "config2:0\n");
	CHECK(pmu_ibs_attr(100003, &a, why, sizeof why) == 0);
	CHECK_EQ_U(a.type, 11);
	CHECK_EQ_U(a.config, 1ull << 19);
	CHECK_EQ_U(a.config2, 1);
	CHECK_EQ_U(a.sample_period, 100000); /* 0x186a3 & ~0xf */
	CHECK_EQ_U(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	           PERF_SAMPLE_CPU | PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD);
	CHECK_EQ_U(a.exclude_kernel, 1);
	CHECK_EQ_U(a.use_clockid, 1);
	CHECK_EQ_U(a.clockid, CLOCK_MONOTONIC);
	CHECK_EQ_U(a.size, sizeof a);
	CHECK_EQ_U(a.precise_ip, 0);
	CHECK_EQ_U(a.exclude_guest, 0); /* the IBS PMU refuses exclude_guest */
	CHECK_EQ_U(a.disabled, 1);
	CHECK_EQ_U(why[0], 0);
	/* tiny period: the minimum, 16 */
	CHECK(pmu_ibs_attr(5, &a, why, sizeof why) == 0);
	CHECK_EQ_U(a.sample_period, 16);

	/* an older ibs_op: neither cnt_ctl nor swfilt */
	char p[256];
	snprintf(p, sizeof p, "%s/sys/bus/event_source/devices/ibs_op/format/cnt_ctl", fake_root);
	unlink(p);
	snprintf(p, sizeof p, "%s/sys/bus/event_source/devices/ibs_op/format/swfilt", fake_root);
	unlink(p);
	CHECK(pmu_ibs_attr(65536, &a, why, sizeof why) == 0);
	CHECK_EQ_U(a.config, 0);
	CHECK_EQ_U(a.config2, 0);
	CHECK_EQ_U(a.sample_period, 65536);
	CHECK(contains(why, "cycles"));

	/* the pebs probe sees no CPU PMU under the fake root */
	CHECK(!pmu_probe_sampler("pebs", why, sizeof why));
	CHECK(contains(why, "no CPU PMU"));
	CHECK(contains(why, "soft"));

	pmu_set_sysfs_root(NULL);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", fake_root);
	if (system(cmd) != 0)
		printf("  (could not remove %s)\n", fake_root);
}

/* ---- real hardware (skipped without PEBS / IBS) -------------------------- */

struct got {
	int n, with_addr, in_buf;
	uint64_t lo, hi;
	int ibs_ok;
};

static void pebs_cb(void *ctx, const struct perf_rec *r)
{
	struct got *g = ctx;
	if (r->kind != PERF_REC_SAMPLE)
		return;
	g->n++;
	if (r->addr)
		g->with_addr++;
	if (r->addr >= g->lo && r->addr < g->hi)
		g->in_buf++;
}

static void ibs_cb(void *ctx, const struct perf_rec *r)
{
	struct got *g = ctx;
	if (r->kind != PERF_REC_SAMPLE)
		return;
	g->n++;
	struct ibs_op_sample s;
	if (ibs_decode_raw(r->raw, r->raw_size, &s) == 1) {
		g->ibs_ok++;
		if (s.addr >= g->lo && s.addr < g->hi)
			g->in_buf++;
	}
}

static volatile uint64_t hw_buf[1 << 16];

static void run_real(struct perf_event_attr *a, int fd, perf_rec_cb cb)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)pg * 65;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	struct perf_event_mmap_page *meta = m;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (int rep = 0; rep < 200; rep++)
		for (size_t i = 0; i < sizeof hw_buf / sizeof hw_buf[0]; i++)
			hw_buf[i] = hw_buf[i] + 1;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	struct perf_sample_fmt f;
	perf_sample_fmt_from_attr(a, &f);
	static uint8_t scratch[65536];
	struct got g = { 0 };
	g.lo = (uint64_t)(uintptr_t)hw_buf;
	g.hi = g.lo + sizeof hw_buf;
	int r = perf_ring_drain(meta, (uint8_t *)m + pg, (size_t)pg * 64, &f, scratch,
	                        sizeof scratch, cb, &g);
	printf("  drained %d records, %d samples, %d with address, %d in the buffer, %d ibs\n",
	       r, g.n, g.with_addr, g.in_buf, g.ibs_ok);
	CHECK(r > 0);
	CHECK(g.n > 0);
	CHECK(g.in_buf > 0);
	munmap(m, len);
}

static void test_real_pebs_sample(void)
{
	char why[512];
	if (!pmu_probe_sampler("pebs", why, sizeof why)) {
		char s[600];
		snprintf(s, sizeof s, "needs PEBS hardware: %s", why);
		SKIP(s);
		return;
	}
	struct perf_event_attr a[8];
	int n = pmu_pebs_attrs(NULL, 2003, a, 8, why, sizeof why);
	CHECK(n >= 2);
	if (n < 2)
		return;
	int fd = pmu_open_precise(&a[1], 0, -1, -1, 0); /* stores */
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	run_real(&a[1], fd, pebs_cb);
	close(fd);
}

static void test_real_ibs_sample(void)
{
	char why[512];
	if (!pmu_probe_sampler("ibs", why, sizeof why)) {
		char s[600];
		snprintf(s, sizeof s, "needs AMD IBS hardware: %s", why);
		SKIP(s);
		return;
	}
	struct perf_event_attr a;
	CHECK(pmu_ibs_attr(4096, &a, why, sizeof why) == 0);
	int fd = pmu_open_ibs(&a, 0, -1, -1, 0);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	run_real(&a, fd, ibs_cb);
	close(fd);
}

int main(void)
{
	RUN(test_probe_soft);
	RUN(test_probe_pebs_ibs);
	RUN(test_probe_inst_unknown);
	RUN(test_probe_soft_denied);
	RUN(test_weight_type);
	RUN(test_pmu_attrs_roundtrip);
	RUN(test_pmu_attrs_parse_errors);
#ifdef HAVE_LIBPFM
	RUN(test_pebs_forced_skl);
	RUN(test_pebs_forced_icl);
	RUN(test_pebs_forced_spr);
	RUN(test_pebs_forced_hsw);
	RUN(test_pebs_forced_bdw);
	RUN(test_pebs_forced_snb);
	RUN(test_pebs_forced_names);
	RUN(test_pebs_expert_spec);
	RUN(test_pebs_native);
#else
	RUN(test_pebs_without_libpfm);
	printf("SKIP test_pebs_forced: built without libpfm4 (forced encodings not tested)\n");
#endif
	RUN(test_ibs_attr_fake_sysfs);
	RUN(test_real_pebs_sample);
	RUN(test_real_ibs_sample);
	return check_summary();
}
