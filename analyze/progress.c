/* A progress line on stderr while a long replay runs ("records done /
 * estimated total, percent"), only when stderr is a terminal. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ana.h"

#define RECORDS_PER_FRAME_GUESS 30000  /* when the trace has no SUMMARY */
#define SHOW_AFTER_NS 500000000ull     /* quiet for short analyses */
#define REFRESH_NS 200000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void progress_start(struct progress *p, struct ct_trace *t, bool want)
{
	memset(p, 0, sizeof *p);
	p->on = want && ana_verbosity >= 0 && isatty(2);
	if (!p->on)
		return;
	char v[32];
	uint64_t total;
	if (ct_trace_meta(t, CT_SEC_SUMMARY, "records", v, sizeof v) && parse_u64(v, &total)) {
		p->total = total;
	} else {
		uint64_t frames = 0;
		for (size_t i = 0; i < ct_trace_nthreads(t); i++)
			frames += ct_trace_thread_frames(t, i);
		p->total = frames * RECORDS_PER_FRAME_GUESS;
	}
	p->last_ns = now_ns();
	p->next_check = p->last_ns + SHOW_AFTER_NS;
}

void progress_update(struct progress *p, uint64_t done)
{
	if (!p->on)
		return;
	uint64_t now = now_ns();
	if (now < p->next_check)
		return;
	p->next_check = now + REFRESH_NS;
	char a[32], b[32];
	if (p->total) {
		double pct = 100.0 * (double)done / (double)p->total;
		if (pct > 99)
			pct = 99;
		fprintf(stderr, "\rcommanalyze: %s / ~%s records (%2.0f%%)   ",
		        fmt_count((double)done, a, sizeof a), fmt_count((double)p->total, b, sizeof b), pct);
	} else {
		fprintf(stderr, "\rcommanalyze: %s records   ", fmt_count((double)done, a, sizeof a));
	}
	p->shown = true;
}

void progress_end(struct progress *p)
{
	if (p->on && p->shown)
		fprintf(stderr, "\r%60s\r", "");
	p->shown = false;
}

/* v scaled down by `base` while it is that large: "%.0f" unscaled, else 3
 * significant digits, then sep and the unit's suffix. */
static const char *fmt_scaled(double v, double base, const char *const suf[6], const char *sep,
                              char *buf, size_t cap)
{
	int i = 0;
	double a = v < 0 ? -v : v;
	while (a >= base && i < 5) {
		a /= base;
		v /= base;
		i++;
	}
	if (i == 0)
		snprintf(buf, cap, "%.0f%s%s", v, *suf[0] ? sep : "", suf[0]);
	else
		snprintf(buf, cap, "%.*f%s%s", a < 10 ? 2 : a < 100 ? 1 : 0, v, sep, suf[i]);
	return buf;
}

const char *fmt_count(double v, char *buf, size_t cap)
{
	static const char *const suf[6] = { "", "k", "M", "G", "T", "P" };
	return fmt_scaled(v, 1000, suf, "", buf, cap);
}

const char *fmt_bytes(double v, char *buf, size_t cap)
{
	static const char *const suf[6] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	return fmt_scaled(v, 1024, suf, " ", buf, cap);
}

const char *fmt_duration(uint64_t ns, char *buf, size_t cap)
{
	if (ns < 1000)
		snprintf(buf, cap, "%" PRIu64 " ns", ns);
	else if (ns < 999950)
		snprintf(buf, cap, "%.1f us", ns / 1e3);
	else if (ns < 999950000)
		snprintf(buf, cap, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, cap, "%.3f s", ns / 1e9);
	return buf;
}
