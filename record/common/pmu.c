/* perf_event_attr builders and open helpers for the PMU samplers, and the
 * COMMTRACE_PMU_ATTRS encoding of PEBS attrs: the part the runtime links
 * (no libpfm4; the encoding and the probes are in pmu_pfm.c).
 * See pmu.h and commrec(1), "Hardware samplers (pebs, ibs)". */
#include "pmu.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PERF_SAMPLE_WEIGHT_STRUCT
#define PERF_SAMPLE_WEIGHT_STRUCT (1U << 24)
#endif
#ifndef PERF_FLAG_FD_CLOEXEC
#define PERF_FLAG_FD_CLOEXEC (1UL << 3)
#endif

#define PEBS_BASE_SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
                               PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | \
                               PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC)
#define IBS_SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                         PERF_SAMPLE_CPU | PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD)

/* ---- small helpers ----------------------------------------------------- */

void pmu_say(char *why, size_t cap, const char *fmt, ...)
{
	if (!why || !cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
}

static char sysfs_root[256];

void pmu_set_sysfs_root(const char *root)
{
	if (!root)
		sysfs_root[0] = 0;
	else
		snprintf(sysfs_root, sizeof sysfs_root, "%s", root);
}

static void sysfs_path(char *out, size_t cap, const char *rel)
{
	snprintf(out, cap, "%s%s", sysfs_root, rel);
}

bool pmu_sysfs_exists(const char *rel)
{
	char p[512];
	struct stat st;
	sysfs_path(p, sizeof p, rel);
	return stat(p, &st) == 0;
}

/* First line of a file, trailing newline removed; false if unreadable. */
bool pmu_read_line(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(out, (int)cap, f) != NULL;
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok;
}

int pmu_sys_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group,
                            unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

/* ---- weight type --------------------------------------------------------- */

uint64_t pmu_weight_sample_type(void)
{
	static int cached; /* 0 unknown, 1 struct, 2 plain */
	if (cached)
		return cached == 1 ? PERF_SAMPLE_WEIGHT_STRUCT : PERF_SAMPLE_WEIGHT;
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_period = 1000000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_WEIGHT_STRUCT;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = pmu_sys_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		cached = 1;
	} else {
		/* EINVAL: the kernel does not know the bit.  Anything else
		 * (denied): WEIGHT, which every kernel with PEBS accepts. */
		cached = 2;
	}
	return cached == 1 ? PERF_SAMPLE_WEIGHT_STRUCT : PERF_SAMPLE_WEIGHT;
}

/* ---- PEBS ------------------------------------------------------------- */

static void common_sampling_attr(struct perf_event_attr *a)
{
	a->size = sizeof *a;
	a->disabled = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

void pmu_pebs_attr_init(struct perf_event_attr *a, uint32_t type, uint64_t config,
                        uint64_t config1, uint64_t config2, uint64_t period, unsigned precise)
{
	memset(a, 0, sizeof *a);
	a->type = type;
	a->config = config;
	a->config1 = config1;
	a->config2 = config2;
	common_sampling_attr(a);
	a->freq = 0;
	a->sample_period = period;
	a->sample_type = PEBS_BASE_SAMPLE_TYPE | pmu_weight_sample_type();
	a->precise_ip = precise ? (precise > 3 ? 3 : precise) : 3;
	/* PEBS does not sample guests (and some kernels refuse precise events
	 * without this); IBS, by contrast, refuses exclude_guest. */
	a->exclude_guest = 1;
}

/* ---- COMMTRACE_PMU_ATTRS ------------------------------------------------ */

static const char *kind_name(uint8_t k)
{
	return k == PMU_KIND_LOAD ? "load" : k == PMU_KIND_STORE ? "store" : "any";
}

int pmu_pebs_attrs_format(const struct perf_event_attr *a, const uint8_t *kinds, size_t n,
                          char *out, size_t cap)
{
	size_t len = 0;
	if (!out || !cap)
		return -1;
	out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(out + len, cap - len, "%s%s:%u:%#llx:%#llx:%#llx:%llu:%u",
		                 i ? "," : "", kind_name(kinds ? kinds[i] : PMU_KIND_UNKNOWN),
		                 (unsigned)a[i].type, (unsigned long long)a[i].config,
		                 (unsigned long long)a[i].config1, (unsigned long long)a[i].config2,
		                 (unsigned long long)a[i].sample_period, (unsigned)a[i].precise_ip);
		if (w < 0 || (size_t)w >= cap - len) {
			out[0] = 0;
			return -1;
		}
		len += (size_t)w;
	}
	return (int)len;
}

/* One unsigned field of an item, ending at ':' or at the item's end. */
static bool parse_field(const char **p, const char *end, uint64_t max, uint64_t *v)
{
	const char *s = *p;
	if (s >= end || *s == ':' || *s == '-' || *s == '+' || *s == ' ')
		return false;
	char *e;
	errno = 0;
	unsigned long long x = strtoull(s, &e, 0);
	if (errno || e == s || e > end || (e < end && *e != ':') || x > max)
		return false;
	*v = x;
	*p = e < end ? e + 1 : e;
	return true;
}

int pmu_pebs_attrs_parse(const char *s, struct perf_event_attr *out, uint8_t *kinds,
                         size_t max, char *why, size_t cap)
{
	if (why && cap)
		why[0] = 0;
	if (!s || !*s) {
		pmu_say(why, cap, "no PEBS events given (COMMTRACE_PMU_ATTRS is set by commrec)");
		return -1;
	}
	size_t n = 0;
	for (const char *p = s; *p;) {
		const char *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		int ilen = (int)(end - p);
		if (n >= max) {
			pmu_say(why, cap, "more than %zu PEBS events in \"%s\"", max, s);
			return -1;
		}
		const char *colon = memchr(p, ':', (size_t)(end - p));
		size_t klen = colon ? (size_t)(colon - p) : 0;
		uint8_t kind;
		if (klen == 4 && !strncmp(p, "load", 4))
			kind = PMU_KIND_LOAD;
		else if (klen == 5 && !strncmp(p, "store", 5))
			kind = PMU_KIND_STORE;
		else if (klen == 3 && !strncmp(p, "any", 3))
			kind = PMU_KIND_UNKNOWN;
		else {
			pmu_say(why, cap, "bad PEBS event \"%.*s\": want load|store|any:type:config:"
			        "config1:config2:period[:precise]", ilen, p);
			return -1;
		}
		const char *q = colon + 1;
		uint64_t type, config, config1, config2, period, precise = 3;
		if (!parse_field(&q, end, UINT32_MAX, &type) ||
		    !parse_field(&q, end, UINT64_MAX, &config) ||
		    !parse_field(&q, end, UINT64_MAX, &config1) ||
		    !parse_field(&q, end, UINT64_MAX, &config2) ||
		    !parse_field(&q, end, UINT64_MAX, &period) || period == 0 ||
		    (q < end && (!parse_field(&q, end, 3, &precise) || precise == 0)) ||
		    q != end || end[-1] == ':') {
			pmu_say(why, cap, "bad PEBS event \"%.*s\": want load|store|any:type:config:"
			        "config1:config2:period[:precise] (period > 0, precise 1..3)", ilen, p);
			return -1;
		}
		pmu_pebs_attr_init(&out[n], (uint32_t)type, config, config1, config2, period,
		                   (unsigned)precise);
		if (kinds)
			kinds[n] = kind;
		n++;
		p = comma ? comma + 1 : end;
		if (comma && !*p) {
			pmu_say(why, cap, "empty PEBS event at the end of \"%s\"", s);
			return -1;
		}
	}
	return (int)n;
}

int pmu_open_precise(struct perf_event_attr *a, pid_t tid, int cpu, int group_fd,
                     unsigned long flags)
{
	unsigned top = a->precise_ip;
	int err = 0;
	for (unsigned p = top;; p--) {
		a->precise_ip = p;
		int fd = pmu_sys_perf_event_open(a, tid, cpu, group_fd, flags);
		if (fd >= 0)
			return fd;
		err = errno;
		if ((err != EINVAL && err != EOPNOTSUPP) || p <= 1)
			break;
	}
	a->precise_ip = top;
	errno = err;
	return -1;
}

/* ---- IBS ------------------------------------------------------------------ */

#define IBS_OP_DIR "/sys/bus/event_source/devices/ibs_op"

int pmu_ibs_attr(uint64_t period_ops, struct perf_event_attr *out, char *why, size_t cap)
{
	char path[512], line[64];
	if (why && cap)
		why[0] = 0;
	memset(out, 0, sizeof *out);
	sysfs_path(path, sizeof path, IBS_OP_DIR "/type");
	if (!pmu_read_line(path, line, sizeof line) || atoi(line) <= 0) {
		pmu_say(why, cap, "no AMD IBS op PMU (%s missing: not an AMD CPU with IBS, or a "
		    "virtual machine that does not expose it)", IBS_OP_DIR);
		return -1;
	}
	out->type = (uint32_t)atoi(line);
	common_sampling_attr(out);
	bool opcnt = pmu_sysfs_exists(IBS_OP_DIR "/format/cnt_ctl");
	bool swfilt = pmu_sysfs_exists(IBS_OP_DIR "/format/swfilt");
	out->config = opcnt ? (1ull << 19) : 0;  /* IbsOpCntCtl: count dispatched ops */
	uint64_t p = period_ops & ~0xfull;
	out->sample_period = p ? p : 0x10;
	out->sample_type = IBS_SAMPLE_TYPE;
	if (swfilt) {
		out->config2 = 1;  /* swfilt: the kernel honours exclude_kernel */
	} else {
		/* Kernels without swfilt either ignore exclude_kernel or refuse
		 * it (EINVAL): pmu_open_ibs retries without. */
	}
	if (!opcnt)
		pmu_say(why, cap, "IBS op counter counts cycles (no cnt_ctl): period is in cycles");
	return 0;
}

int pmu_open_ibs(struct perf_event_attr *a, pid_t tid, int cpu, int group_fd,
                 unsigned long flags)
{
	int fd = pmu_sys_perf_event_open(a, tid, cpu, group_fd, flags);
	if (fd >= 0 || errno != EINVAL || !a->exclude_kernel || (a->config2 & 1))
		return fd;
	int err = errno;
	struct perf_event_attr b = *a;
	b.exclude_kernel = 0;
	b.exclude_hv = 0;
	fd = pmu_sys_perf_event_open(&b, tid, cpu, group_fd, flags);
	if (fd >= 0) {
		*a = b;
		return fd;
	}
	if (errno != EACCES && errno != EPERM)
		errno = err;
	return -1;
}

