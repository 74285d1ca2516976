/* After the program: build-ids into the spool's maps files, the join with
 * the SUMMARY keys, the line of totals, removing the spool. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buildid.h"
#include "commrec.h"
#include "symbols.h"
#include "commtrace.h"
#include "rtstatus.h"

#ifndef CT_VERSION
#define CT_VERSION "0.0.0"
#endif

static bool is_thread_file(const char *name)
{
	return !strncmp(name, "thread-", 7) && strlen(name) > 11 &&
	       !strcmp(name + strlen(name) - 4, ".zst");
}

int rec_spool_threads(const char *spool)
{
	DIR *d = opendir(spool);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += is_thread_file(e->d_name);
	closedir(d);
	return n;
}

/* ---- build-ids ---------------------------------------------------------- */

/* One cache of path -> build-id hex for all maps files (a few hundred
 * distinct files at most; a linear list is enough). */
struct bid_cache {
	struct bid_entry {
		char *path;
		char hex[2 * BUILDID_MAX + 1];  /* "" if none */
	} *v;
	size_t n, cap;
};

static const char *bid_lookup(struct bid_cache *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].path, path))
			return c->v[i].hex;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct bid_entry *v = realloc(c->v, cap * sizeof *v);
		if (!v)
			return "";
		c->v = v;
		c->cap = cap;
	}
	struct bid_entry *e = &c->v[c->n];
	e->path = strdup(path);
	if (!e->path)
		return "";
	uint8_t id[BUILDID_MAX];
	int len = buildid_read(path, id);
	buildid_hex(id, len > 0 ? len : 0, e->hex);
	c->n++;
	return e->hex;
}

/* The runtime writes maps-PID.txt lines as
 *     start-end perms offset buildid [path]
 * with buildid "-" (record/runtime/rt_maps.c).  Field i of line (0-based):
 * its start, and its length in *len; NULL if the line has fewer fields. */
static const char *field(const char *line, int i, size_t *len)
{
	const char *p = line;
	for (int k = 0;; k++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return NULL;
		const char *start = p;
		while (*p && *p != ' ')
			p++;
		if (k == i) {
			*len = (size_t)(p - start);
			return start;
		}
	}
}

/* fopen that never follows a symbolic link (the spool's files are ours:
 * a link there was put by someone else). */
static FILE *fopen_nofollow(const char *path, int flags, const char *mode)
{
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, mode);
	if (!f)
		close(fd);
	return f;
}

/* Rewrite one maps file: the "-" build-id of every line that maps an ELF
 * file with a build-id note becomes its hex.  0 or -1. */
static int enrich_maps(const char *path, struct bid_cache *cache)
{
	FILE *in = fopen_nofollow(path, O_RDONLY, "r");
	if (!in)
		return -1;
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	/* a new file: a leftover of ours goes first, and whatever is there then
	 * (a link someone planted) makes the exclusive create fail */
	unlink(tmp);
	FILE *out = fopen_nofollow(tmp, O_WRONLY | O_CREAT | O_EXCL, "w");
	if (!out) {
		fclose(in);
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, in)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		size_t blen = 0;
		const char *bid = field(line, 3, &blen);
		const char *name = bid ? bid + blen : NULL;
		while (name && *name == ' ')
			name++;
		const char *hex = "";
		if (bid && blen == 1 && *bid == '-' && name && *name == '/') {
			/* " (deleted)" files are gone: no build-id to read. */
			size_t nlen = strlen(name);
			if (nlen < 10 || strcmp(name + nlen - 10, " (deleted)"))
				hex = bid_lookup(cache, name);
		}
		if (*hex)
			fprintf(out, "%.*s%s%s\n", (int)(bid - line), line, hex, bid + 1);
		else
			fprintf(out, "%s\n", line);
	}
	free(line);
	bool bad = ferror(in);
	fclose(in);
	if (fclose(out) != 0 || bad || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int rec_add_buildids(const char *spool)
{
	DIR *d = opendir(spool);
	if (!d)
		return 0;
	struct bid_cache cache = {0};
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "maps-", 5) || l < 10 || strcmp(e->d_name + l - 4, ".txt"))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
		/* keep the mtime: the join picks the newest maps file by it */
		struct stat st;
		bool have = stat(path, &st) == 0;
		if (enrich_maps(path, &cache) == 0) {
			n++;
			if (have) {
				struct timespec ts[2] = {st.st_atim, st.st_mtim};
				utimensat(AT_FDCWD, path, ts, 0);
			}
		} else {
			rec_warn("could not add build-ids to %s: %s", path, strerror(errno));
		}
	}
	closedir(d);
	for (size_t i = 0; i < cache.n; i++)
		free(cache.v[i].path);
	free(cache.v);
	return n;
}

/* ---- the runtime's status ------------------------------------------------------ */

/* The runtime's status pages of the spool (status-PID.bin), added up into
 * *sum; the number of them. */
int rec_runtime_status(const char *spool, struct rt_status *sum)
{
	memset(sum, 0, sizeof *sum);
	DIR *d = opendir(spool);
	if (!d)
		return 0;
	int n = 0, ring_procs = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid;
		char tail[8];
		if (sscanf(e->d_name, "status-%d.bi%1s", &pid, tail) != 2 || strcmp(tail, "n"))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
		struct rt_status st;
		FILE *f = fopen_nofollow(path, O_RDONLY, "r");
		bool ok = f && fread(&st, sizeof st, 1, f) == 1 && st.magic == RT_STATUS_MAGIC &&
		          st.version == RT_STATUS_VERSION;
		if (f)
			fclose(f);
		if (!ok)
			continue;
		sum->fd_soft = st.fd_soft;
		sum->fd_hard = st.fd_hard;
		sum->fd_mode = st.fd_mode;
		sum->threads_started += st.threads_started;
		sum->threads_unrecorded += st.threads_unrecorded;
		for (int i = 0; i < RT_UNREC_WHYS; i++)
			sum->unrecorded[i] += st.unrecorded[i];
		if (st.timer_threads && !sum->timer_threads)
			sum->timer_errno = st.timer_errno;
		sum->timer_threads += st.timer_threads;
		sum->timer_samples += st.timer_samples;
		sum->timer_cpu_ns += st.timer_cpu_ns;
		if (st.cpu_rings > sum->cpu_rings)
			sum->cpu_rings = st.cpu_rings;
		if (st.cpu_rings)    /* inherited if any process's were */
			sum->cpu_ring_wide = (!ring_procs++ || sum->cpu_ring_wide) && st.cpu_ring_wide;
		sum->ring_unattributed += st.ring_unattributed;
		sum->ring_lost_unattributed += st.ring_lost_unattributed;
		sum->ring_lost_foreign += st.ring_lost_foreign;
		if (st.cpu_wp > sum->cpu_wp)
			sum->cpu_wp = st.cpu_wp;
		sum->cpu_wp_arms += st.cpu_wp_arms;
		sum->cpu_wp_hits += st.cpu_wp_hits;
		sum->cpu_wp_other_hits += st.cpu_wp_other_hits;
		n++;
	}
	closedir(d);
	return n;
}

/* SUMMARY keys from the runtime's status: threads it could not record
 * (the recording is then incomplete), the soft sampler's per-CPU rings, its
 * timer fallback with the sampling period it measured. */
static void status_kv(struct ct_kv *kv, const char *spool)
{
	struct rt_status st;
	if (!rec_runtime_status(spool, &st))
		return;
	static const char *const why[RT_UNREC_WHYS] = {
		[RT_UNREC_NO_FD] = "no_fd", [RT_UNREC_SPOOL] = "spool",
		[RT_UNREC_MEMORY] = "memory", [RT_UNREC_REGISTRY] = "registry",
	};
	ct_kv_add(kv, "threads_started", "%llu", (unsigned long long)st.threads_started);
	ct_kv_add(kv, "threads_unrecorded", "%llu", (unsigned long long)st.threads_unrecorded);
	for (int i = 0; i < RT_UNREC_WHYS; i++) {
		char key[64];
		snprintf(key, sizeof key, "threads_unrecorded.%s", why[i]);
		if (st.unrecorded[i])
			ct_kv_add(kv, key, "%llu", (unsigned long long)st.unrecorded[i]);
	}
	static const char *const mode[] = {
		[RT_FD_NONE] = "none", [RT_FD_ABOVE] = "above-limit", [RT_FD_TOP] = "top-of-limit",
	};
	ct_kv_add(kv, "fd_limit", "%llu/%llu", (unsigned long long)st.fd_soft,
	          (unsigned long long)st.fd_hard);
	ct_kv_add(kv, "fd_mode", "%s", st.fd_mode <= RT_FD_TOP ? mode[st.fd_mode] : "?");
	if (st.threads_unrecorded) {
		ct_kv_add(kv, "recording", "incomplete");
		if (st.unrecorded[RT_UNREC_NO_FD])
			ct_kv_add(kv, "incomplete", "%llu of %llu threads not recorded: no file descriptor "
			          "above the program's limit (open files: soft %llu, hard %llu; raise the "
			          "hard limit: ulimit -Hn)", (unsigned long long)st.threads_unrecorded,
			          (unsigned long long)st.threads_started, (unsigned long long)st.fd_soft,
			          (unsigned long long)st.fd_hard);
		else
			ct_kv_add(kv, "incomplete", "%llu of %llu threads not recorded (see "
			          "threads_unrecorded.*)", (unsigned long long)st.threads_unrecorded,
			          (unsigned long long)st.threads_started);
	}
	if (st.cpu_rings) {
		ct_kv_add(kv, "sampler_delivery", "cpu-rings");
		ct_kv_add(kv, "sampler_cpu_rings", "%u", st.cpu_rings);
		ct_kv_add(kv, "sampler_rings", "%s", st.cpu_ring_wide ? "cpu-wide" : "inherited");
		ct_kv_add(kv, "sampler_unattributed", "%llu", (unsigned long long)st.ring_unattributed);
		ct_kv_add(kv, "sampler_lost_unattributed", "%llu",
		          (unsigned long long)st.ring_lost_unattributed);
		if (st.cpu_ring_wide)
			ct_kv_add(kv, "sampler_lost_foreign", "%llu",
			          (unsigned long long)st.ring_lost_foreign);
	}
	if (st.cpu_wp) {
		/* format 6: the comdetective model counts every recorded hit */
		ct_kv_add(kv, "watchpoint_arming", "cpu");
		ct_kv_add(kv, "cpu_watchpoints", "%u", st.cpu_wp);
		ct_kv_add(kv, "cpu_watchpoint_arms", "%llu", (unsigned long long)st.cpu_wp_arms);
		ct_kv_add(kv, "cpu_watchpoint_hits", "%llu", (unsigned long long)st.cpu_wp_hits);
		ct_kv_add(kv, "cpu_watchpoint_other_hits", "%llu",
		          (unsigned long long)st.cpu_wp_other_hits);
	}
	if (st.timer_threads) {
		ct_kv_add(kv, "sampler_fallback", "posix-timer");
		ct_kv_add(kv, "sampler_fallback_reason", "%s",
		          st.timer_errno ? strerror(st.timer_errno)
		                          : "chosen (soft_path, COMMTRACE_SOFT_TIMER=1)");
		ct_kv_add(kv, "sampler_fallback_threads", "%llu", (unsigned long long)st.timer_threads);
		ct_kv_add(kv, "sampler_fallback_signals", "%llu", (unsigned long long)st.timer_samples);
		ct_kv_add(kv, "sampler_fallback_cpu_ns", "%llu", (unsigned long long)st.timer_cpu_ns);
		if (st.timer_samples)
			ct_kv_add(kv, "period_measured_ns", "%llu",
			          (unsigned long long)(st.timer_cpu_ns / st.timer_samples));
	}
}

/* ---- join ----------------------------------------------------------------- */

static void symbol_note(void *arg, const char *path, const char *what)
{
	(void)arg;
	rec_info(1, "symbols: %s: %s", path, what);
}

/* The inst runtime's counts (SPOOL/inst-PID.txt, key=value lines, keys
 * already "inst."): appended to the summary as they are. */
static void add_inst_counts(struct ct_kv *kv, const char *spool)
{
	DIR *d = opendir(spool);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "inst-", 5) || l < 10 || strcmp(e->d_name + l - 4, ".txt"))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
		FILE *f = fopen_nofollow(path, O_RDONLY, "r");
		if (!f)
			continue;
		char line[256];
		while (fgets(line, sizeof line, f)) {
			char *eq = strchr(line, '=');
			if (!eq || strncmp(line, "inst.", 5))
				continue;
			*eq = '\0';
			eq[1 + strcspn(eq + 1, "\n")] = '\0';
			ct_kv_add(kv, line, "%s", eq + 1);
		}
		fclose(f);
	}
	closedir(d);
}

/* What the launcher saw of the run (none for a recovered spool: the
 * launcher that ran the program is gone). */
static void run_kv(struct ct_kv *kv, const struct rec_run *run)
{
	if (!run) {
		ct_kv_add(kv, "recording", "recovered");
		return;
	}
	int exit_status = 0, exit_signal = 0;
	if (WIFEXITED(run->status))
		exit_status = WEXITSTATUS(run->status);
	else if (WIFSIGNALED(run->status)) {
		exit_signal = WTERMSIG(run->status);
		exit_status = 128 + exit_signal;
	}
	ct_kv_add(kv, "exit_status", "%d", exit_status);
	ct_kv_add(kv, "exit_signal", "%d", exit_signal);
	ct_kv_add(kv, "recording", "%s", exit_signal ? "incomplete" : "complete");
	ct_kv_add(kv, "duration_ns", "%llu", (unsigned long long)(run->end_ns - run->start_ns));
	ct_kv_add(kv, "program_wall_ns", "%llu", (unsigned long long)(run->end_ns - run->start_ns));
	ct_kv_add(kv, "program_utime_ns", "%llu", (unsigned long long)run->utime_ns);
	ct_kv_add(kv, "program_stime_ns", "%llu", (unsigned long long)run->stime_ns);
	ct_kv_add(kv, "program_maxrss_kb", "%ld", run->maxrss_kb);
}

int rec_join(const struct rec_opts *o, const char *spool, const struct rec_run *run)
{
	char summary[8192];
	struct ct_kv kv;
	ct_kv_init(&kv, summary, sizeof summary);
	run_kv(&kv, run);
	status_kv(&kv, spool);
	ct_kv_add(&kv, "commrec_version", "%s", CT_VERSION);
	add_inst_counts(&kv, spool);
	if (kv.overflow || kv.len >= sizeof summary) {
		rec_err("internal error: summary too long");
		return -1;
	}
	summary[kv.len] = '\0';

	struct ct_error err = {{0}};
	uint64_t t0 = rec_now_ns();
	rec_info(1, "joining %s into %s", spool, o->output);
	/* portable traces: the symbols the analysis needs go into the trace */
	void *sym = NULL;
	size_t symlen = 0;
	char serr[512];
	struct ct_join_section extra[1];
	size_t nextra = 0;
	uint64_t ts = rec_now_ns();
	if (embed_symbols(spool, &sym, &symlen, symbol_note, NULL, serr, sizeof serr) == 0) {
		extra[nextra++] = (struct ct_join_section){ CT_SEC_SYMBOLS, sym, symlen };
		rec_info(1, "symbols: %zu bytes in %.3f s", symlen, (double)(rec_now_ns() - ts) / 1e9);
	} else {
		rec_warn("no symbols in the trace (%s): analyze it on this machine with "
		         "--symbols-from-binaries", serr);
	}
	int jr = ct_join(spool, o->output, extra, nextra, summary, o->force ? CT_JOIN_REPLACE : 0, &err);
	free(sym);
	if (jr < 0) {
		struct rlimit fsize;
		char why[128] = "";
		if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY)
			snprintf(why, sizeof why, " (the file size limit, ulimit -f, is %llu bytes)",
			         (unsigned long long)fsize.rlim_cur);
		rec_err("cannot write %s: %s%s", o->output, err.msg[0] ? err.msg : "join failed", why);
		return -1;
	}
	rec_info(1, "joined in %.3f s", (double)(rec_now_ns() - t0) / 1e9);
	return 0;
}

/* ---- the last line ------------------------------------------------------------ */

/* Decoding every record to count samples costs about a second per 20
 * million records: beyond this, the line gives the record count instead. */
#define COUNT_RECORDS_MAX 20000000ull

/* A recording whose threads ran but took no sample: why it likely is so,
 * from the trace's own CONFIG (a --recover has no sampler chosen). */
static void warn_no_samples(struct ct_trace *t)
{
	char sampler[32] = "", period[32] = "", unit[32] = "", full[8] = "";
	ct_trace_meta(t, CT_SEC_CONFIG, "sampler", sampler, sizeof sampler);
	ct_trace_meta(t, CT_SEC_CONFIG, "period", period, sizeof period);
	ct_trace_meta(t, CT_SEC_CONFIG, "period_unit", unit, sizeof unit);
	ct_trace_meta(t, CT_SEC_CONFIG, "full", full, sizeof full);
	char brief[160] = "";      /* the recording was shorter than one period */
	if (!strcmp(unit, "us-cpu"))
		snprintf(brief, sizeof brief, "each thread ran less than one period (-c %s: %s us of "
		         "CPU time; a shorter -c samples more often), ", period, period);
	else if (full[0] != '1')
		snprintf(brief, sizeof brief, "each thread made fewer than one period of %s (-c %s), ",
		         unit, period);
	rec_warn("warning: no samples: %s%sor it exec'd another program (sh -c 'exec PROG', a "
	         "wrapper script: the exec'd image is not recorded; record PROG itself)",
	         !strcmp(sampler, "inst") ? "the program's code is likely not instrumented (only "
	         "linked by commrec-cc, or compiled by a plain compiler: see commrec-cc(1)), " : "",
	         brief);
}

void rec_report(const struct rec_opts *o)
{
	struct stat st;
	unsigned long long kib = stat(o->output, &st) == 0 ? ((unsigned long long)st.st_size + 1023) / 1024 : 0;
	struct ct_error err = {{0}};
	struct ct_trace *t = ct_trace_open(o->output, &err);
	if (!t) {
		rec_warn("wrote %s (%llu KiB), but cannot read it back: %s", o->output, kib, err.msg);
		return;
	}
	size_t nthreads = ct_trace_nthreads(t);
	char buf[64];
	unsigned long long records = 0, lost = 0, samples = 0, hits = 0;
	if (ct_trace_meta(t, CT_SEC_SUMMARY, "records", buf, sizeof buf))
		records = strtoull(buf, NULL, 10);
	if (ct_trace_meta(t, CT_SEC_SUMMARY, "lost", buf, sizeof buf))
		lost = strtoull(buf, NULL, 10);
	bool counted = records <= COUNT_RECORDS_MAX;
	for (size_t i = 0; counted && i < nthreads; i++) {
		struct ct_cursor *c = ct_cursor_thread(t, i);
		if (!c) {
			counted = false;
			break;
		}
		struct ct_record r;
		int rc;
		while ((rc = ct_cursor_next(c, &r, &err)) > 0) {
			samples += r.type == CT_REC_SAMPLE;
			hits += r.type == CT_REC_WP_HIT;
		}
		ct_cursor_free(c);
	}
	if (counted && nthreads && !samples)
		warn_no_samples(t);
	char lost_txt[64] = "";
	if (lost)
		snprintf(lost_txt, sizeof lost_txt, ", %llu lost", lost);
	if (counted)
		fprintf(stderr, "commrec: wrote %s (%zu thread%s, %llu samples, %llu watchpoint hits%s, "
		        "%llu KiB)\n", o->output, nthreads, nthreads == 1 ? "" : "s", samples, hits,
		        lost_txt, kib);
	else
		fprintf(stderr, "commrec: wrote %s (%zu thread%s, %llu records%s, %llu KiB)\n", o->output,
		        nthreads, nthreads == 1 ? "" : "s", records, lost_txt, kib);
	ct_trace_close(t);
}

/* ---- spool removal ---------------------------------------------------------- */

/* Only what a spool holds: meta.zst, thread-*.zst, maps-*.txt, inst-*.txt,
 * status-*.bin, *.tmp. */
static bool spool_file(const char *name)
{
	size_t l = strlen(name);
	return !strcmp(name, "meta.zst") || is_thread_file(name) ||
	       (!strncmp(name, "maps-", 5) && l > 9 && !strcmp(name + l - 4, ".txt")) ||
	       (!strncmp(name, "inst-", 5) && l > 9 && !strcmp(name + l - 4, ".txt")) ||
	       (!strncmp(name, "status-", 7) && l > 11 && !strcmp(name + l - 4, ".bin")) ||
	       (l > 4 && !strcmp(name + l - 4, ".tmp"));
}

int rec_remove_spool(const char *spool)
{
	DIR *d = opendir(spool);
	if (!d)
		return errno == ENOENT ? 0 : -1;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!spool_file(e->d_name)) {
			rec_warn("%s/%s is not a spool file: left alone", spool, e->d_name);
			rc = -1;
			continue;
		}
		if (unlinkat(dirfd(d), e->d_name, 0) < 0)
			rc = -1;
	}
	closedir(d);
	if (rmdir(spool) < 0)
		rc = -1;
	return rc;
}
