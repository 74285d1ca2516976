/* commanalyze info TRACE: what the trace holds and whether it is whole. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ana.h"
#include "out_util.h"

/* The next line of [*p, end) without its newline: its start, with *len;
 * NULL at the end. */
static const char *next_line(const char **p, const char *end, size_t *len)
{
	if (*p >= end)
		return NULL;
	const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
	*len = (size_t)((nl ? nl : end) - s);
	*p = nl ? nl + 1 : end;
	return s;
}

/* Print the key=value lines of a text section, indented, skipping the keys
 * that start with skip_prefix (NULL: none). */
static void print_kv_section(struct ct_trace *t, enum ct_section kind, const char *title,
                             const char *skip_prefix)
{
	size_t len = 0;
	const char *p = ct_trace_section(t, kind, &len);
	if (!p) {
		printf("%s: (none)\n", title);
		return;
	}
	printf("%s:\n", title);
	const char *end = p + len, *line;
	size_t l;
	while ((line = next_line(&p, end, &l)))
		if (l && !(skip_prefix && l > strlen(skip_prefix) &&
		           !memcmp(line, skip_prefix, strlen(skip_prefix)))) {
			fputs("  ", stdout);
			for (size_t i = 0; i < l; i++)
				putchar((unsigned char)line[i] >= 0x20 && line[i] != 0x7f ? line[i] : '?');
			putchar('\n');
		}
}

bool trace_is_complete(struct ct_trace *t, char *why, size_t cap)
{
	char v[64];
	if (!ct_trace_complete(t)) {
		snprintf(why, cap, "recording cut off: the trace has no end summary (the launcher "
		         "did not finish: killed, crashed, or out of disk)");
		return false;
	}
	if (ct_trace_meta(t, CT_SEC_SUMMARY, "recording", v, sizeof v) && strcmp(v, "complete")) {
		char sig[16] = "";
		ct_trace_meta(t, CT_SEC_SUMMARY, "exit_signal", sig, sizeof sig);
		if (ct_trace_meta(t, CT_SEC_SUMMARY, "incomplete", why, cap)) {
			/* the recorder's own words (threads it could not record) */
		} else if (!strcmp(v, "recovered")) {
			snprintf(why, cap, "recovered from the spool of a recording that did not finish "
			         "(commrec --recover): the last records of its threads may be missing");
		} else if (sig[0] && strcmp(sig, "0")) {
			int s = atoi(sig);
			snprintf(why, cap, "the program was killed by signal %s (%s): its last records may be missing",
			         sig, s > 0 && s < 65 ? strsignal(s) : "?");
		} else {
			snprintf(why, cap, "the recorder says recording=%s", v);
		}
		return false;
	}
	snprintf(why, cap, "the recording finished and was joined");
	return true;
}

static void print_cmdline(struct ct_trace *t)
{
	char buf[4096];
	trace_command(t, buf, sizeof buf);
	printf("command: %s\n", buf[0] ? buf : "(unknown)");
}

/* The name of feature bit i ("bitN" for one we do not know) into buf. */
static const char *feature_name(unsigned i, char *buf, size_t cap)
{
	static const char *const n[] = { "samples", "watchpoints", "allocs", "full", "funcs", "symbols",
	                                 "owner" };
	if (i < sizeof n / sizeof *n)
		return n[i];
	if (1ull << i == CT_FEAT_FILTERED)
		return "filtered";
	if (1ull << i == CT_FEAT_LINE_WATCHES)
		return "line-watches";
	if (1ull << i == CT_FEAT_LINE_WRITERS)
		return "line-writers";
	snprintf(buf, cap, "bit%u", i);
	return buf;
}

static void print_features(uint64_t f)
{
	bool any = false;
	for (unsigned i = 0; i < 64; i++) {
		char b[8];
		if (!(f & (1ull << i)))
			continue;
		printf("%s%s", any ? "," : "", feature_name(i, b, sizeof b));
		any = true;
	}
	if (!any)
		printf("none");
}

/* ---- --format json (schema commtrace-info/1: commanalyze(1)) ---------------- */

/* A text section as a JSON object of its key=value lines (numbers as
 * numbers), or null. */
static void kv_section_json(FILE *f, struct ct_trace *t, enum ct_section kind)
{
	size_t len = 0;
	const char *p = ct_trace_section(t, kind, &len);
	if (!p) {
		fputs("null", f);
		return;
	}
	fputc('{', f);
	const char *end = p + len, *line;
	size_t l;
	bool first = true;
	while ((line = next_line(&p, end, &l))) {
		const char *eq = memchr(line, '=', l);
		if (eq && eq > line) {
			char *key = strndup(line, (size_t)(eq - line));
			char *val = strndup(eq + 1, l - (size_t)(eq - line) - 1);
			if (key && val) {
				fputs(first ? "" : ",", f);
				out_json_string(f, key);
				fputc(':', f);
				out_json_value(f, val);
				first = false;
			}
			free(key);
			free(val);
		}
	}
	fputc('}', f);
}

static void info_json(FILE *f, struct ct_trace *t, const struct trace_stats *st, size_t n)
{
	const struct ct_header *h = ct_trace_header(t);
	char why[256], buf[4096];
	bool complete = trace_is_complete(t, why, sizeof why);
	fprintf(f, "{\"schema\":\"commtrace-info/1\",\"tool\":\"commanalyze %s\",\"trace\":",
	        CT_VERSION);
	out_json_string(f, ct_trace_path(t));
	fprintf(f, ",\n\"format_version\":%u,\"readable_from\":%u,\"features\":[", h->version,
	        h->min_version);
	for (unsigned i = 0, k = 0; i < 64; i++)
		if (h->features & (1ull << i)) {
			char b[8];
			fputs(k++ ? "," : "", f);
			out_json_string(f, feature_name(i, b, sizeof b));
		}
	fprintf(f, "],\"created_ns\":%" PRIu64 ",\"complete\":%s,\"completeness\":",
	        (uint64_t)h->created_ns, complete ? "true" : "false");
	out_json_string(f, why);
	fprintf(f, ",\"damage\":");
	out_json_string(f, ct_trace_damage(t));
	fprintf(f, ",\n\"command\":");
	out_json_string(f, trace_command(t, buf, sizeof buf));
	fprintf(f, ",\n\"machine\":");
	kv_section_json(f, t, CT_SEC_MACHINE);
	fprintf(f, ",\n\"config\":");
	kv_section_json(f, t, CT_SEC_CONFIG);
	fprintf(f, ",\n\"summary\":");
	kv_section_json(f, t, CT_SEC_SUMMARY);
	fprintf(f, ",\n\"threads\":[");
	for (size_t i = 0; i < ct_trace_nthreads(t); i++) {
		const struct ct_thread_info *ti = ct_trace_thread(t, i);
		static const struct thread_stats none = { .first_time = UINT64_MAX };
		const struct thread_stats *s = ti->index < n ? &st->th[ti->index] : &none;
		char name[sizeof ti->name + 1];
		snprintf(name, sizeof name, "%.*s", (int)sizeof ti->name, ti->name);
		fprintf(f, "%s\n {\"index\":%u,\"tid\":%d,\"parent\":", i ? "," : "", ti->index,
		        (int)ti->tid);
		if (ti->parent == UINT32_MAX)
			fputs("null", f);
		else
			fprintf(f, "%u", ti->parent);
		fprintf(f, ",\"name\":");
		out_json_string(f, name);
		fprintf(f, ",\"records\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"loads\":%" PRIu64
		        ",\"stores\":%" PRIu64 ",\"atomics\":%" PRIu64 ",\"wp_arm\":%" PRIu64
		        ",\"wp_hit\":%" PRIu64 ",\"alloc\":%" PRIu64 ",\"free\":%" PRIu64
		        ",\"lost\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"span_ns\":%" PRIu64
		        ",\"end_status\":", s->records, s->samples, s->loads, s->stores, s->atomics,
		        s->wp_arm, s->wp_hit, s->alloc, s->free, s->lost, s->skipped,
		        s->first_time == UINT64_MAX ? 0 : s->last_time - s->first_time);
		if (s->ended)
			fprintf(f, "%d}", (int)s->end_status);
		else
			fputs("null}", f);
	}
	fprintf(f, "],\n\"records\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"unknown_thread_records\":%"
	        PRIu64 ",\n", st->records, st->samples, st->bad_thread);
	trace_stats_json(f, st);
	fprintf(f, "}\n");
}

int cmd_info(int argc, char **argv)
{
	enum { O_FORMAT = 1, O_OUTPUT };
	static const struct cli_opt opts[] = { { "format", 0, true, O_FORMAT },
	                                        { "output", 'o', true, O_OUTPUT } };
	static const char *const formats[] = { "text", "json" };
	const char *path, *v, *out = NULL;
	struct cli p;
	cli_init(&p, "info", argc, argv, opts, 2, NULL);
	int id, format = 0, bad = 0;
	while (!bad && (id = cli_next(&p, &v)) > 0) {
		if (id == O_FORMAT)
			bad = cli_choice(&p, v, formats, 2, &format);
		else
			out = v;
	}
	if (bad || id < 0 || cli_trace(&p, &path))
		return EXIT_USAGE;
	struct ct_trace *t = ana_open_trace(path);
	if (!t)
		return EXIT_BADTRACE;
	if (ana_stdout_to(out)) {
		ct_trace_close(t);
		return EXIT_BADTRACE;
	}
	struct ct_error err = {{0}};
	size_t n = thread_space(t);
	struct trace_stats st;
	if (trace_stats_init(&st, n)) {
		ct_trace_close(t);
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	struct record_consumer rc = trace_stats_consumer(&st);
	bad = replay(t, &rc, 1, true, &err);
	if (format == 1) {
		info_json(stdout, t, &st, n);
		if (bad)
			fprintf(stderr, "commanalyze: %s\n", err.msg);
		else if (ct_trace_damage(t))
			fprintf(stderr, "commanalyze: %s\n", ct_trace_damage(t));
		bad = bad || ct_trace_damage(t);
		trace_stats_free(&st);
		ct_trace_close(t);
		return ana_stdout_done(out) || bad ? EXIT_BADTRACE : 0;
	}

	const struct ct_header *h = ct_trace_header(t);
	char why[256], buf[64];
	printf("trace: %s\n", ct_trace_path(t));
	printf("format: version %u (readable by %u and later), features ", h->version,
	       h->min_version);
	print_features(h->features);
	putchar('\n');
	if (h->created_ns) {
		time_t s = (time_t)(h->created_ns / 1000000000ull);
		struct tm tm;
		if (gmtime_r(&s, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm))
			printf("created: %s\n", buf);
	}
	bool complete = trace_is_complete(t, why, sizeof why);
	printf("complete: %s\n", complete ? "yes" : "no");
	printf("  %s\n", why);
	const char *dmg = ct_trace_damage(t);
	char damage[600] = "";
	if (dmg) {
		printf("damage: %s\n", dmg);
		snprintf(damage, sizeof damage, "%s", dmg);
	}
	print_kv_section(t, CT_SEC_MACHINE, "machine", "cpu.");
	struct topology topo;
	topology_load(&topo, t);
	if (topo.identity)
		printf("  cpu map: none (core and socket matrices use cpu numbers)\n");
	else
		printf("  cpu map: %zu cpu%s, %zu core%s, %zu socket%s\n", topo.ncpus,
		       topo.ncpus == 1 ? "" : "s", topo.ncores, topo.ncores == 1 ? "" : "s",
		       topo.nsockets, topo.nsockets == 1 ? "" : "s");
	topology_free(&topo);
	print_kv_section(t, CT_SEC_CONFIG, "config", NULL);
	print_cmdline(t);

	printf("threads: %zu\n", ct_trace_nthreads(t));
	printf("  %5s %8s %6s %-15s %10s %10s %8s %8s %8s %8s %8s %8s %10s %s\n", "index", "tid",
	       "parent", "name", "records", "samples", "wp_arm", "wp_hit", "alloc", "free", "lost",
	       "skipped", "span", "end");
	for (size_t i = 0; i < ct_trace_nthreads(t); i++) {
		const struct ct_thread_info *ti = ct_trace_thread(t, i);
		static const struct thread_stats none = { .first_time = UINT64_MAX };
		const struct thread_stats *s = ti->index < n ? &st.th[ti->index] : &none;
		char par[16], name[sizeof ti->name + 1], span[32], end[32];
		if (ti->parent == UINT32_MAX)
			snprintf(par, sizeof par, "-");
		else
			snprintf(par, sizeof par, "%u", ti->parent);
		size_t k = 0;
		for (; k < sizeof ti->name && ti->name[k]; k++)
			name[k] = (unsigned char)ti->name[k] > 0x20 && ti->name[k] != 0x7f ? ti->name[k] : '_';
		name[k] = 0;
		if (!k)
			snprintf(name, sizeof name, "-");
		if (s->first_time == UINT64_MAX)
			snprintf(span, sizeof span, "-");
		else
			fmt_duration(s->last_time - s->first_time, span, sizeof span);
		if (s->ended)
			snprintf(end, sizeof end, "status=%d", (int)s->end_status);
		else
			snprintf(end, sizeof end, "no end");
		printf("  %5u %8d %6s %-15s %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8" PRIu64
		       " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %10s %s\n",
		       ti->index, (int)ti->tid, par, name, s->records, s->samples, s->wp_arm, s->wp_hit,
		       s->alloc, s->free, s->lost, s->skipped, span, end);
	}
	if (st.first_time != UINT64_MAX)
		printf("time span: %s (%" PRIu64 " .. %" PRIu64 " ns)\n",
		       fmt_duration(st.last_time - st.first_time, buf, sizeof buf), st.first_time,
		       st.last_time);
	printf("records: %" PRIu64 ", samples: %" PRIu64 "\n", st.records, st.samples);
	uint64_t data = 0, frames = 0;
	for (size_t i = 0; i < ct_trace_nthreads(t); i++) {
		data += ct_trace_thread_bytes(t, i);
		frames += ct_trace_thread_frames(t, i);
	}
	printf("record data: %" PRIu64 " bytes compressed in %" PRIu64 " frames, %.2f bytes per record\n",
	       data, frames, st.records ? (double)data / (double)st.records : 0.0);
	printf("lost records: %" PRIu64 "\n", st.lost_total);
	for (unsigned r = 0; r < LOST_REASONS; r++)
		if (st.lost_by_reason[r]) {
			const char *nm = r ? ct_lost_reason_name(r) : NULL;
			printf("  %-20s %" PRIu64 "\n", nm ? nm : "unknown", st.lost_by_reason[r]);
		}
	printf("skipped samples: %" PRIu64 "\n", st.skipped_total);
	for (unsigned r = 0; r <= CT_SKIP_REASON_MAX; r++)
		if (st.skipped_by_reason[r]) {
			const char *nm = r ? ct_skip_reason_name(r) : NULL;
			printf("  %-20s %" PRIu64 "\n", nm ? nm : "unknown", st.skipped_by_reason[r]);
		}
	if (st.bad_thread)
		printf("records with an unknown thread: %" PRIu64 "\n", st.bad_thread);
	char es[32], sig[32];
	if (ct_trace_meta(t, CT_SEC_SUMMARY, "exit_status", es, sizeof es)) {
		if (ct_trace_meta(t, CT_SEC_SUMMARY, "exit_signal", sig, sizeof sig) && strcmp(sig, "0"))
			printf("exit status: %s (killed by signal %s)\n", es, sig);
		else
			printf("exit status: %s\n", es);
	} else {
		printf("exit status: unknown (no end summary)\n");
	}
	print_kv_section(t, CT_SEC_SUMMARY, "summary", "thread.");
	trace_stats_free(&st);
	ct_trace_close(t);
	if (ana_stdout_done(out))
		return EXIT_BADTRACE;
	if (bad) {
		fprintf(stderr, "commanalyze: %s\n", err.msg);
		return EXIT_BADTRACE;
	}
	if (damage[0]) {
		fprintf(stderr, "commanalyze: %s\n", damage);
		return EXIT_BADTRACE;
	}
	return 0;
}
