/* meta.zst: the trace-wide metadata commrec knows before the program runs:
 * HEADER, MACHINE, CONFIG, CMDLINE (ct_join puts it first in the trace). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commrec.h"
#include "commtrace.h"
#include "machine.h"

#ifndef CT_VERSION
#define CT_VERSION "0.0.0"
#endif

#define KV_CAP (1u << 20)

static uint64_t features(const struct rec_opts *o)
{
	/* the launcher embeds symbols at the end (it may fail: the bit says a
	 * SYMBOLS section may be present, readers check for the section) */
	uint64_t f = CT_FEAT_SAMPLES | CT_FEAT_SYMBOLS;
	if (o->wp_used > 0)
		f |= CT_FEAT_WATCHPOINTS;
	if (o->wp_used > 0 && o->wp_soft && o->watch_lines > 0 && !o->full)
		f |= CT_FEAT_LINE_WATCHES | CT_FEAT_LINE_WRITERS;
	if (!o->no_alloc)
		f |= CT_FEAT_ALLOCS;
	if (o->full)
		f |= CT_FEAT_FULL;
	if (o->full && !o->full_all)
		f |= CT_FEAT_FILTERED;
	if (!strcmp(o->sampler_used, "inst"))
		f |= CT_FEAT_FUNCS;
	if (o->owner_window)
		f |= CT_FEAT_OWNER;
	return f;
}

static int put_kv(int fd, enum ct_section kind, struct ct_kv *kv, const char *what,
                  const char *path)
{
	if (kv->overflow)
		rec_warn("%s section too long: truncated", what);
	int r = ct_write_section(fd, kind, kv->buf, kv->len);
	if (r < 0)
		rec_err("cannot write %s: %s", path, strerror(-r));
	return r < 0 ? -1 : 0;
}

static void config_kv(const struct rec_opts *o, struct ct_kv *kv)
{
	ct_kv_add(kv, "sampler", "%s", o->sampler_used);
	ct_kv_add(kv, "sampler_requested", "%s", o->sampler);
	ct_kv_add(kv, "sampler_reason", "%s", o->sampler_reason);
	ct_kv_add(kv, "period", "%llu", (unsigned long long)o->period_used);
	ct_kv_add(kv, "period_unit", "%s", o->period_unit);
	ct_kv_add(kv, "period_requested", "%llu", (unsigned long long)o->period);
	ct_kv_add(kv, "period_floor", "%llu", (unsigned long long)o->period_floor);
	ct_kv_add(kv, "throttle", "%d", (int)(o->throttle_share * 100 + 0.5));
	ct_kv_add(kv, "events", "%s", o->events_joined);
	ct_kv_add(kv, "watchpoints", "%d", o->wp_used);
	ct_kv_add(kv, "watchpoints_available", "%d", o->wp_available);
	ct_kv_add(kv, "watchpoint_kind", "%s", o->wp_soft ? "software" : "debug");
	if (o->wp_soft) {
		ct_kv_add(kv, "line_watches", "%d", o->watch_lines);
		ct_kv_add(kv, "line_watch_life", "%d", o->watch_life);
	}
	char detail[256];
	wp_probe_detail(&o->wp_probe, detail, sizeof detail);
	ct_kv_add(kv, "watchpoint_probe", "%s", wp_verdict_name(o->wp_probe.verdict));
	ct_kv_add(kv, "watchpoint_probe_detail", "%s", detail);
	ct_kv_add(kv, "watchpoints_forced", "%d", o->force_wp);
	ct_kv_add(kv, "watchpoint_switch_ns", "%llu", (unsigned long long)o->wp_switch_ns);
	ct_kv_add(kv, "watchpoint_open_switch_ns", "%llu", (unsigned long long)o->wp_open_switch_ns);
	ct_kv_add(kv, "soft_event_switch_ns", "%llu", (unsigned long long)o->soft_event_switch_ns);
	if (!strcmp(o->sampler_used, "soft")) {
		ct_kv_add(kv, "soft_path", "%s", rec_soft_timer_used(o) ? "timer" : "perf");
		ct_kv_add(kv, "soft_path_reason", "%s", o->soft_path_reason);
		if (o->wp_used)
			ct_kv_add(kv, "watchpoint_cpu_reason", "%s", o->wp_cpu_reason);
	}
	ct_kv_add(kv, "board_size", "%d", o->board_size);
	ct_kv_add(kv, "line_size", "%d", o->line_size_used);
	ct_kv_add(kv, "line_size_source", "%s",
	          o->line_size ? "option" : o->line_size_from_sysfs ? "sysfs" : "default");
	ct_kv_add(kv, "alloc", "%d", !o->no_alloc);
	ct_kv_add(kv, "full", "%d", o->full);
	ct_kv_add(kv, "owner_window", "%llu", (unsigned long long)o->owner_window);
	if (o->full && !o->full_all)
		ct_kv_add(kv, "full_filter_line", "%d", o->line_size_used);
	ct_kv_add(kv, "commrec_version", "%s", CT_VERSION);
}

int rec_write_meta(const struct rec_opts *o, const char *spool)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/meta.zst", spool);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rec_err("cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	char *buf = malloc(KV_CAP);
	if (!buf) {
		rec_err("out of memory");
		close(fd);
		return -1;
	}
	int rc = -1;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct ct_header h = {
		.version = CT_FORMAT_VERSION,
		/* every trace may hold short SAMPLE records (version 8), and
		 * min_version 4 and 6 of the line monitor and per-CPU watchpoints
		 * are below it */
		.min_version = CT_FORMAT_SHORT_SAMPLES,
		.features = features(o),
		.created_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
	};
	int r = ct_write_header(fd, &h);
	if (r < 0) {
		rec_err("cannot write %s: %s", path, strerror(-r));
		goto out;
	}

	struct machine m;
	struct ct_kv kv;
	machine_read(&m, "/");
	ct_kv_init(&kv, buf, KV_CAP);
	machine_to_kv(&m, &kv);
#define PLURAL(n) (n) == 1 ? "" : "s"
	rec_info(1, "machine: %s, %d cpu%s, %d core%s, %d socket%s, %d numa node%s, %d-byte lines",
	         m.cpu_model[0] ? m.cpu_model : "unknown cpu", m.nproc, PLURAL(m.nproc), m.ncores,
	         PLURAL(m.ncores), m.nsockets, PLURAL(m.nsockets), m.nnodes, PLURAL(m.nnodes),
	         m.line_size);
#undef PLURAL
	machine_free(&m);
	if (put_kv(fd, CT_SEC_MACHINE, &kv, "MACHINE", path) < 0)
		goto out;

	ct_kv_init(&kv, buf, KV_CAP);
	config_kv(o, &kv);
	if (put_kv(fd, CT_SEC_CONFIG, &kv, "CONFIG", path) < 0)
		goto out;

	size_t len = 0;
	for (int i = 0; i < o->argc; i++) {
		size_t n = strlen(o->argv[i]) + 1;
		if (len + n > KV_CAP) {
			rec_warn("command line too long for the CMDLINE section: truncated");
			break;
		}
		memcpy(buf + len, o->argv[i], n);
		len += n;
	}
	r = ct_write_section(fd, CT_SEC_CMDLINE, buf, len);
	if (r < 0) {
		rec_err("cannot write %s: %s", path, strerror(-r));
		goto out;
	}
	rc = 0;
out:
	free(buf);
	if (close(fd) < 0 && rc == 0) {
		rec_err("cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	return rc;
}
