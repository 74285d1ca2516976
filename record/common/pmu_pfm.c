/* The launcher's half of the PMU code (pmu.h): the libpfm4 encoding of
 * PEBS events (pmu_pebs_attrs*) and the sampler probes, which need it (the
 * pebs probe encodes and opens the default events).  Only commrec and the
 * unit tests link this file; the preloaded runtime links pmu.c alone and
 * gets the encoded attrs from COMMTRACE_PMU_ATTRS, so it does not load
 * libpfm4 (about 2 MB resident in every recorded process).
 * See commrec(1), "Hardware samplers (pebs, ibs)". */
#include "pmu.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#ifndef PERF_FLAG_FD_CLOEXEC
#define PERF_FLAG_FD_CLOEXEC (1UL << 3)
#endif

#define SOFT_SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                          PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER)

/* ---- PEBS encoding (libpfm4) ---------------------------------------------- */

#ifdef HAVE_LIBPFM
static uint8_t kind_from_name(const char *ev)
{
	char up[256];
	size_t i;
	for (i = 0; ev[i] && i + 1 < sizeof up; i++)
		up[i] = (char)((ev[i] >= 'a' && ev[i] <= 'z') ? ev[i] - 32 : ev[i]);
	up[i] = 0;
	bool st = strstr(up, "STORE") != NULL;
	bool ld = strstr(up, "LOAD") != NULL;
	if (st && !ld)
		return PMU_KIND_STORE;
	if (ld && !st)
		return PMU_KIND_LOAD;
	return PMU_KIND_UNKNOWN;
}

static int pfm_ready(char *why, size_t cap)
{
	int r = pfm_initialize();
	if (r != PFM_SUCCESS) {
		pmu_say(why, cap, "libpfm4 initialization failed: %s", pfm_strerror(r));
		return -1;
	}
	return 0;
}

/* Encode one libpfm4 event string into *a: libpfm4's type and configs (and
 * precise level, from ":precise=N"), the rest from pmu_pebs_attr_init, so
 * that COMMTRACE_PMU_ATTRS carries the whole attr. */
static int encode_event(const char *ev, uint64_t period, struct perf_event_attr *a,
                        char *why, size_t cap)
{
	struct perf_event_attr e;
	pfm_perf_encode_arg_t arg;
	memset(&e, 0, sizeof e);
	memset(&arg, 0, sizeof arg);
	arg.attr = &e;
	arg.size = sizeof arg;
	int r = pfm_get_os_event_encoding(ev, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (r != PFM_SUCCESS) {
		pmu_say(why, cap, "libpfm4 cannot encode event %s: %s", ev, pfm_strerror(r));
		return -1;
	}
	pmu_pebs_attr_init(a, e.type, e.config, e.config1, e.config2, period, e.precise_ip);
	return 0;
}

/* Is name one of the comma-separated names in list? */
static bool name_in_list(const char *name, const char *list)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

/* The default events: loads and stores of each active Intel core PMU. */
static int default_events(uint64_t period, struct perf_event_attr *out, uint8_t *kinds,
                          size_t max, char *why, size_t cap)
{
	/* In order of preference; the first pair the PMU knows is used.
	 * Sandy Bridge and Ivy Bridge PEBS gives no data address for
	 * MEM_UOPS_RETIRED (DataLA came with Haswell): there the load-latency
	 * event (threshold 3 cycles: every load) and the precise-store event
	 * carry it. */
	static const struct { const char *only, *ld, *st; } pairs[] = {
		{ "snb,ivb", "MEM_TRANS_RETIRED:LATENCY_ABOVE_THRESHOLD:ldlat=3",
		  "MEM_TRANS_RETIRED:PRECISE_STORE" },
		{ NULL, "MEM_INST_RETIRED:ALL_LOADS", "MEM_INST_RETIRED:ALL_STORES" },
		{ NULL, "MEM_UOPS_RETIRED:ALL_LOADS", "MEM_UOPS_RETIRED:ALL_STORES" },
	};
	int n = 0;
	char seen_core[128] = "";
	pfm_pmu_t p;

	pfm_for_all_pmus(p) {
		pfm_pmu_info_t info;
		memset(&info, 0, sizeof info);
		info.size = sizeof info;
		if (pfm_get_pmu_info(p, &info) != PFM_SUCCESS || !info.is_present ||
		    info.type != PFM_PMU_TYPE_CORE)
			continue;
		if (!seen_core[0])
			snprintf(seen_core, sizeof seen_core, "%s (%s)", info.desc, info.name);
		for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
			char ld[160], st[160];
			if (pairs[k].only && !name_in_list(info.name, pairs[k].only))
				continue;
			snprintf(ld, sizeof ld, "%s::%s", info.name, pairs[k].ld);
			snprintf(st, sizeof st, "%s::%s", info.name, pairs[k].st);
			if (pfm_find_event(ld) < 0 || pfm_find_event(st) < 0)
				continue;
			if ((size_t)n + 2 > max) {
				pmu_say(why, cap, "more PEBS events than the %zu allowed", max);
				return -1;
			}
			if (encode_event(ld, period, &out[n], why, cap) < 0 ||
			    encode_event(st, period, &out[n + 1], why, cap) < 0)
				return -1;
			if (kinds) {
				kinds[n] = PMU_KIND_LOAD;
				kinds[n + 1] = PMU_KIND_STORE;
			}
			n += 2;
			break;
		}
	}
	if (n == 0) {
		if (seen_core[0])
			pmu_say(why, cap, "libpfm4 knows no PEBS memory events (MEM_INST_RETIRED or "
			    "MEM_UOPS_RETIRED ALL_LOADS/ALL_STORES) for %s", seen_core);
		else
			pmu_say(why, cap, "libpfm4 found no CPU PMU for this processor");
		return -1;
	}
	return n;
}

static int expert_events(const char *spec, uint64_t period, struct perf_event_attr *out,
                         uint8_t *kinds, size_t max, char *why, size_t cap)
{
	int n = 0;
	const char *s = spec;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char ev[256];
		if (len == 0) {
			pmu_say(why, cap, "empty event name in \"%s\"", spec);
			return -1;
		}
		if (len >= sizeof ev) {
			pmu_say(why, cap, "event name too long in \"%s\"", spec);
			return -1;
		}
		memcpy(ev, s, len);
		ev[len] = 0;
		uint64_t p = period;
		char *at = strrchr(ev, '@');
		if (at) {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(at + 1, &end, 0);
			if (at[1] == 0 || *end || errno || v == 0 || at[1] == '-') {
				pmu_say(why, cap, "bad period \"%s\" for event %.*s (want a positive "
				    "integer after @)", at + 1, (int)(at - ev), ev);
				return -1;
			}
			p = v;
			*at = 0;
		}
		if ((size_t)n >= max) {
			pmu_say(why, cap, "too many events in \"%s\" (at most %zu)", spec, max);
			return -1;
		}
		if (encode_event(ev, p, &out[n], why, cap) < 0)
			return -1;
		if (kinds)
			kinds[n] = kind_from_name(ev);
		n++;
		s += len;
		if (*s == ',')
			s++;
	}
	if (n == 0) {
		pmu_say(why, cap, "no events in \"%s\"", spec);
		return -1;
	}
	return n;
}
#endif

int pmu_pebs_attrs_kinds(const char *spec, uint64_t period, struct perf_event_attr *out,
                         uint8_t *kinds, size_t max, char *why, size_t cap)
{
	if (why && cap)
		why[0] = 0;
	if (!out || max == 0) {
		pmu_say(why, cap, "no room for events");
		return -1;
	}
	if (period == 0) {
		pmu_say(why, cap, "sampling period must be positive");
		return -1;
	}
#ifdef HAVE_LIBPFM
	if (pfm_ready(why, cap) < 0)
		return -1;
	if (!spec || !*spec)
		return default_events(period, out, kinds, max, why, cap);
	return expert_events(spec, period, out, kinds, max, why, cap);
#else
	(void)spec;
	(void)kinds;
	pmu_say(why, cap, "commtrace was built without libpfm4 (needed to encode PEBS events): "
	    "install libpfm4-dev and rebuild");
	return -1;
#endif
}

int pmu_pebs_attrs(const char *spec, uint64_t period, struct perf_event_attr *out,
                   size_t max, char *why, size_t cap)
{
	return pmu_pebs_attrs_kinds(spec, period, out, NULL, max, why, cap);
}

/* ---- probes ------------------------------------------------------------- */

static int read_paranoid(void)
{
	char b[32];
	if (!pmu_read_line("/proc/sys/kernel/perf_event_paranoid", b, sizeof b))
		return -100; /* unknown */
	return atoi(b);
}

/* Seccomp field of /proc/self/status: 0 none, 1 strict, 2 filter; -1 unknown. */
static int read_seccomp(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -1;
	char line[256];
	int v = -1;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "Seccomp:", 8)) {
			v = atoi(line + 8);
			break;
		}
	}
	fclose(f);
	return v;
}

static void cpu_vendor(char *out, size_t cap)
{
	snprintf(out, cap, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "vendor_id", 9)) {
			char *c = strchr(line, ':');
			if (c) {
				c++;
				while (*c == ' ' || *c == '\t')
					c++;
				c[strcspn(c, "\n")] = 0;
				snprintf(out, cap, "%s", c);
			}
			break;
		}
	}
	fclose(f);
}

/* Why perf_event_open was denied (EACCES/EPERM), with what to do. */
static void denied_reason(char *buf, size_t cap, int err)
{
	int par = read_paranoid();
	int sec = read_seccomp();
	if (sec == 2)
		snprintf(buf, cap, "%s; a seccomp filter is active (container runtime?): "
		         "allow perf_event_open in its profile", strerror(err));
	else if (par >= 2)
		snprintf(buf, cap, "%s; perf_event_paranoid is %d: run sysctl "
		         "kernel.perf_event_paranoid=%d", strerror(err), par, par >= 3 ? 2 : 1);
	else if (par == -100)
		snprintf(buf, cap, "%s; perf_event_paranoid unreadable", strerror(err));
	else
		snprintf(buf, cap, "%s; perf_event_paranoid is %d", strerror(err), par);
}


static bool probe_soft(char *why, size_t cap)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 1000000;
	a.sample_type = SOFT_SAMPLE_TYPE;
	a.sample_regs_user = 1ull << 8; /* IP */
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	int fd = pmu_sys_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		pmu_say(why, cap, "perf task-clock events open here; a recording samples through "
		        "them or through POSIX CPU-time timers (commrec --list-samplers: the lines "
		        "'soft at ...' say which)");
		return true;
	}
	int err = errno;
	char r[256];
	if (err == EACCES || err == EPERM)
		denied_reason(r, sizeof r, err);
	else if (err == ENOSYS)
		snprintf(r, sizeof r, "%s (kernel without perf events, or blocked by seccomp: "
		         "Seccomp %d)", strerror(err), read_seccomp());
	else
		snprintf(r, sizeof r, "%s", strerror(err));

	/* The fallback: a per-thread CPU-time POSIX timer delivering a signal. */
	timer_t t;
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_NONE;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) == 0) {
		timer_delete(t);
		pmu_say(why, cap, "perf_event_open %s (%s): will use POSIX CPU-time timers "
		    "(no user registers from the kernel: the handler's context is used)",
		    err == EACCES || err == EPERM ? "denied" : "unavailable", r);
		return true;
	}
	pmu_say(why, cap, "perf_event_open failed (%s) and POSIX CPU-time timers are unavailable "
	    "(%s): use --sampler inst", r, strerror(errno));
	return false;
}

static bool probe_pebs(char *why, size_t cap)
{
	if (!pmu_sysfs_exists("/sys/bus/event_source/devices/cpu") &&
	    !pmu_sysfs_exists("/sys/bus/event_source/devices/cpu_core")) {
		pmu_say(why, cap, "no CPU PMU exposed by this kernel (virtual machine without a "
		    "virtual PMU?): use --sampler soft");
		return false;
	}
	char vendor[64];
	cpu_vendor(vendor, sizeof vendor);
	if (strcmp(vendor, "GenuineIntel") != 0) {
		pmu_say(why, cap, "not an Intel CPU (%s): use --sampler ibs on AMD, or --sampler soft",
		    vendor);
		return false;
	}
	struct perf_event_attr at[8];
	char r[384];
	int n = pmu_pebs_attrs(NULL, 100003, at, 8, r, sizeof r);
	if (n < 0) {
		pmu_say(why, cap, "%s: use --sampler soft", r);
		return false;
	}
	unsigned best = 0;
	for (int i = 0; i < n; i++) {
		int fd = pmu_open_precise(&at[i], 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int err = errno;
			if (err == EACCES || err == EPERM) {
				denied_reason(r, sizeof r, err);
				pmu_say(why, cap, "perf_event_open of the PEBS event refused (%s), or use "
				    "--sampler soft", r);
			} else if (err == ENOENT || err == EOPNOTSUPP || err == EINVAL) {
				pmu_say(why, cap, "the CPU PMU refused the precise (PEBS) memory event: %s "
				    "(PEBS not available, e.g. in a virtual machine): use --sampler soft",
				    strerror(err));
			} else if (err == EBUSY) {
				pmu_say(why, cap, "PMU counters busy (another profiler, or the NMI "
				    "watchdog: sysctl kernel.nmi_watchdog=0): use --sampler soft");
			} else {
				pmu_say(why, cap, "perf_event_open of the PEBS event failed: %s: use "
				    "--sampler soft", strerror(err));
			}
			return false;
		}
		close(fd);
		if (i == 0 || at[i].precise_ip < best)
			best = at[i].precise_ip;
	}
	pmu_say(why, cap, "%d PEBS memory events open, precise_ip %u", n, best);
	return true;
}

static bool probe_ibs(char *why, size_t cap)
{
	struct perf_event_attr a;
	char r[256];
	if (pmu_ibs_attr(0x10000, &a, r, sizeof r) < 0) {
		pmu_say(why, cap, "%s: use --sampler soft", r);
		return false;
	}
	int fd = pmu_open_ibs(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		if (err == EACCES || err == EPERM) {
			denied_reason(r, sizeof r, err);
			pmu_say(why, cap, "perf_event_open of IBS refused (%s%s), or use --sampler soft", r,
			    a.config2 & 1 ? "" : "; this kernel cannot exclude kernel samples from "
			    "IBS, which needs perf_event_paranoid <= 1");
		} else {
			pmu_say(why, cap, "perf_event_open of the IBS op PMU failed: %s: use --sampler soft",
			    strerror(err));
		}
		return false;
	}
	close(fd);
	pmu_say(why, cap, "IBS op sampling%s", a.exclude_kernel ? "" :
	    " (kernel samples recorded by the PMU and dropped by commtrace)");
	return true;
}

bool pmu_probe_sampler(const char *name, char *why, size_t cap)
{
	if (why && cap)
		why[0] = 0;
	if (!name) {
		pmu_say(why, cap, "no sampler named");
		return false;
	}
	if (!strcmp(name, "soft"))
		return probe_soft(why, cap);
	if (!strcmp(name, "pebs"))
		return probe_pebs(why, cap);
	if (!strcmp(name, "ibs"))
		return probe_ibs(why, cap);
	if (!strcmp(name, "inst")) {
		pmu_say(why, cap, "works everywhere; the program must be compiled with "
		    "-fsanitize=thread and linked with commtrace's runtime (see commrec-cc(1))");
		return true;
	}
	pmu_say(why, cap, "unknown sampler \"%s\": choose pebs, ibs, soft or inst", name);
	return false;
}
