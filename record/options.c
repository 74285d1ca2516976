/* commrec's command line: options -> struct rec_opts, --help, --version,
 * and the message helpers. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commrec.h"
#include "commtrace.h"
#include "comdetective.h"

#ifndef CT_VERSION
#define CT_VERSION "0.0.0"
#endif

int rec_verbose;

static void vmsg(const char *fmt, va_list ap)
{
	char buf[2048];
	vsnprintf(buf, sizeof buf, fmt, ap);
	fprintf(stderr, "commrec: %s\n", buf);
}

void rec_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void rec_warn(const char *fmt, ...)
{
	if (rec_verbose < 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void rec_info(int level, const char *fmt, ...)
{
	if (rec_verbose < level)
		return;
	va_list ap;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: commrec [options] [--] PROGRAM [ARGS...]\n"
"       commrec --recover SPOOL [-o FILE] [-f] [--keep-spool]\n"
"Record how the threads of PROGRAM communicate through memory into a trace\n"
"file for commanalyze.\n"
"\n"
"  -o, --output FILE       trace file to write (default trace.zst)\n"
"  -f, --force             overwrite FILE (and a leftover FILE.spool/)\n"
"  -s, --sampler NAME      auto|pebs|ibs|soft|inst (default auto: pebs, then\n"
"                          ibs, then soft; see --list-samplers)\n"
"  -c, --period N          soft: CPU microseconds between samples of a thread\n"
"                          (default %d, at least %d; without watchpoints, or\n"
"                          with per-CPU ones, the samples go to per-CPU rings,\n"
"                          no signal, from inherited events (CPU-wide ones\n"
"                          with COMMTRACE_SOFT_CPU_WIDE=1: no cost at context\n"
"                          switches, but on a grid of the clock); see\n"
"                          commrec(1), The soft sampler; the\n"
"                          default is the cheapest of 1000 to 100 measured,\n"
"                          where a sample cost 28-77 us of program CPU on a\n"
"                          2-core PVM VM: commrec(1), Costs); pebs,\n"
"                          ibs: events per sample (default %d, at least\n"
"                          %d); inst:\n"
"                          accesses per sample (default %d)\n"
"      --throttle PCT      lengthen a thread's sampling period when the\n"
"                          runtime takes more than PCT%% of its CPU time\n"
"                          (where it samples by signals: soft's timers or\n"
"                          watchpoints, pebs, ibs; default %d, 0 never)\n"
"  -e, --event NAME[@N]    pebs: libpfm4 event to sample (repeatable)\n"
"  -w, --watchpoints N     watchpoints per thread, 0..%d (default: all the\n"
"                          machine gives; 0 disables watchpoints).  Where\n"
"                          debug registers open but do not fire (some\n"
"                          virtual machines; see --list-samplers) none are\n"
"                          armed, unless they are software watchpoints.\n"
"                          soft: where breakpoints opened per CPU fire,\n"
"                          the CPUs' registers, shared by all threads and\n"
"                          armed by the writer thread from the per-CPU\n"
"                          sample rings (COMMTRACE_WP_CPU; commrec(1))\n"
"      --watchpoint-kind K software (inst only: the instrumentation checks\n"
"                          every access against the watched lines or words;\n"
"                          works on every machine; the default with\n"
"                          --sampler inst) or\n"
"                          debug (debug registers; the default otherwise)\n"

"      --line-watches N    software watchpoints: whole lines watched per\n"
"                          thread, 0..%d (default %d; 0: the debug registers'\n"
"                          way, -w words of one line)\n"
"      --line-watch-life N software line watches: a watch ends when its\n"
"                          thread has taken N samples since it armed, or\n"
"                          when the thread overwrites the published bytes\n"
"                          (default: %d accesses of the thread over the\n"
"                          period, 16 samples at -c 1000)\n"
"      --force-watchpoints arm debug registers even where the probe says they\n"
"                          do not fire\n"
"  -b, --board-size N      bulletin board entries (default %d)\n"
"      --line-size N       cache line size in bytes (default: from sysfs,\n"
"                          else 64)\n"
"      --no-alloc          do not record allocations\n"
"      --full[=all]        inst: record every access, not a sample; without\n"
"                          =all, leave out a thread's repeats on a line no\n"
"                          other thread touched meanwhile, and its loads of\n"
"                          bytes it touched since another thread last stored\n"
"                          to their line (exact unchanged);\n"
"                          a load and the store of its bytes after it may be\n"
"                          one record (exact unchanged); pthread and libgomp\n"
"                          synchronization calls add the accesses they imply\n"
"                          (flagged sync, commrec(1))\n"
"      --owner-window J    inst: after each sampled store, follow its line for\n"
"                          its next 2J stores by any thread and record the\n"
"                          transfers of the last J (the line monitor: what\n"
"                          commanalyze's owner estimator needs; its default\n"
"                          on such a trace); default %d without --full, 0:\n"
"                          no monitor (default with --full); with --full,\n"
"                          -c N samples the monitor's stores, so that exact\n"
"                          and owner measure one execution\n"
"      --keep-spool        keep FILE.spool/ after joining\n"
"      --recover SPOOL     join what a recording that did not finish left in\n"
"                          SPOOL (commrec or the program killed) into a trace\n"
"                          (default FILE: SPOOL without .spool)\n"
"  -q, --quiet             print only errors\n"
"  -v, --verbose           say what is being done (repeat for more)\n"
"      --list-samplers     which samplers work on this machine, and why not;\n"
"                          how a soft recording samples here, and why\n"
"  -h, --help              this text\n"
"  -V, --version           version\n"
"\n"
"Exit status: the program's own; 128+N if it was killed by signal N;\n"
"%d if commrec could not record (bad option, no sampler, runtime not\n"
"loaded, join failed); 126 if PROGRAM is not executable; 127 if not found.\n"
"See commrec(1).\n",
		REC_SOFT_PERIOD_DEFAULT, REC_SOFT_PERIOD_MIN, REC_EVENT_PERIOD_DEFAULT,
		REC_EVENT_PERIOD_MIN, REC_INST_PERIOD_DEFAULT, REC_THROTTLE_DEFAULT, CT_WP_MAX,
		CD_LINES_MAX, REC_WATCH_LINES_DEFAULT, REC_WATCH_LIFE_ACCESSES, 127, REC_OWNER_WINDOW_DEFAULT, REC_EXIT_FAILED);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'commrec --help' for more information.\n");
	return -1;
}

/* Decimal integer in [lo, hi]; false if not. */
static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

enum {
	OPT_LINE_SIZE = 256, OPT_NO_ALLOC, OPT_FULL, OPT_OWNER_WINDOW, OPT_KEEP_SPOOL, OPT_LIST_SAMPLERS,
	OPT_RECOVER, OPT_FORCE_WP, OPT_THROTTLE, OPT_WP_KIND, OPT_WATCH_LINES, OPT_WATCH_LIFE,
};

static const struct option long_opts[] = {
	{"output", required_argument, NULL, 'o'},
	{"force", no_argument, NULL, 'f'},
	{"sampler", required_argument, NULL, 's'},
	{"period", required_argument, NULL, 'c'},
	{"event", required_argument, NULL, 'e'},
	{"watchpoints", required_argument, NULL, 'w'},
	{"force-watchpoints", no_argument, NULL, OPT_FORCE_WP},
	{"watchpoint-kind", required_argument, NULL, OPT_WP_KIND},
	{"line-watches", required_argument, NULL, OPT_WATCH_LINES},
	{"line-watch-life", required_argument, NULL, OPT_WATCH_LIFE},
	{"throttle", required_argument, NULL, OPT_THROTTLE},
	{"board-size", required_argument, NULL, 'b'},
	{"line-size", required_argument, NULL, OPT_LINE_SIZE},
	{"no-alloc", no_argument, NULL, OPT_NO_ALLOC},
	{"full", optional_argument, NULL, OPT_FULL},
	{"owner-window", required_argument, NULL, OPT_OWNER_WINDOW},
	{"keep-spool", no_argument, NULL, OPT_KEEP_SPOOL},
	{"recover", required_argument, NULL, OPT_RECOVER},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"list-samplers", no_argument, NULL, OPT_LIST_SAMPLERS},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static bool known_sampler(const char *s)
{
	static const char *const names[] = {"auto", "pebs", "ibs", "soft", "inst"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i]))
			return true;
	return false;
}

/* NAME[@PERIOD]: a non-empty name of [A-Za-z0-9_.:=,-] without commas (they
 * separate events in COMMTRACE_EVENTS), an optional positive period. */
static bool valid_event(const char *s)
{
	const char *at = strchr(s, '@');
	size_t nlen = at ? (size_t)(at - s) : strlen(s);
	if (!nlen)
		return false;
	for (size_t i = 0; i < nlen; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == ':' || c == '=' || c == '-'))
			return false;
	}
	uint64_t p;
	return !at || parse_u64(at + 1, 1, UINT64_MAX, &p);
}

void rec_default_options(struct rec_opts *o)
{
	memset(o, 0, sizeof *o);
	o->output = "trace.zst";
	o->sampler = "auto";
	o->watchpoints = -1;
	o->watch_lines = REC_WATCH_LINES_DEFAULT;
	o->throttle_share = REC_THROTTLE_DEFAULT / 100.0;
	o->board_size = 127;
}

int rec_parse_options(struct rec_opts *o, int argc, char **argv, bool *list_samplers)
{
	rec_default_options(o);
	*list_samplers = false;
	uint64_t v;
	int c;

	opterr = 0;
	optind = 1;
	/* '+': stop at the program name, so its own options are left alone. */
	while ((c = getopt_long(argc, argv, "+:o:fs:c:e:w:b:qvhV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return bad("empty output file name");
			o->output = optarg;
			o->output_given = true;
			break;
		case 'f':
			o->force = true;
			break;
		case 's':
			if (!known_sampler(optarg))
				return bad("unknown sampler '%s': expected auto, pebs, ibs, soft or inst",
				           optarg);
			o->sampler = optarg;
			break;
		case 'c':
			if (!parse_u64(optarg, 1, UINT64_C(1) << 48, &v))
				return bad("invalid period '%s': expected a positive integer", optarg);
			o->period = v;
			break;
		case 'e':
			if (!valid_event(optarg))
				return bad("invalid event '%s': expected NAME or NAME@PERIOD", optarg);
			if (o->nevents == REC_MAX_EVENTS)
				return bad("too many events (at most %d)", REC_MAX_EVENTS);
			o->events[o->nevents++] = optarg;
			break;
		case 'w':
			if (!parse_u64(optarg, 0, CT_WP_MAX, &v))
				return bad("invalid number of watchpoints '%s': expected 0..%d", optarg,
				           CT_WP_MAX);
			o->watchpoints = (int)v;
			break;
		case OPT_FORCE_WP:
			o->force_wp = true;
			break;
		case OPT_WP_KIND:
			if (strcmp(optarg, "software") && strcmp(optarg, "debug"))
				return bad("unknown watchpoint kind '%s': expected software or debug",
				           optarg);
			o->wp_kind = optarg;
			break;
		case OPT_WATCH_LINES:
			if (!parse_u64(optarg, 0, CD_LINES_MAX, &v))
				return bad("invalid number of watched lines '%s': expected 0..%d", optarg,
				           CD_LINES_MAX);
			o->watch_lines = (int)v;
			break;
		case OPT_WATCH_LIFE:
			if (!parse_u64(optarg, 1, 1000000, &v))
				return bad("invalid watch life '%s': expected 1..1000000 samples", optarg);
			o->watch_life = (int)v;
			break;
		case OPT_THROTTLE:
			if (!parse_u64(optarg, 0, 100, &v))
				return bad("invalid --throttle '%s': expected a percentage 0..100", optarg);
			o->throttle_share = (double)v / 100.0;
			break;
		case 'b':
			if (!parse_u64(optarg, 1, 1u << 20, &v))
				return bad("invalid board size '%s': expected 1..%u", optarg, 1u << 20);
			o->board_size = (int)v;
			break;
		case OPT_LINE_SIZE:
			if (!parse_u64(optarg, 8, 4096, &v) || (v & (v - 1)))
				return bad("invalid line size '%s': expected a power of two in 8..4096",
				           optarg);
			o->line_size = (int)v;
			break;
		case OPT_NO_ALLOC:
			o->no_alloc = true;
			break;
		case OPT_FULL:
			if (optarg && strcmp(optarg, "all"))
				return bad("--full=%s: the only value is 'all'", optarg);
			o->full = true;
			o->full_all = optarg != NULL;
			break;
		case OPT_OWNER_WINDOW:
			if (!parse_u64(optarg, 0, CT_OWNER_WINDOW_MAX, &v))
				return bad("invalid --owner-window '%s': expected 0 (none) or 1..%u stores",
				           optarg, CT_OWNER_WINDOW_MAX);
			o->owner_window = v;
			o->owner_window_given = true;
			break;
		case OPT_KEEP_SPOOL:
			o->keep_spool = true;
			break;
		case OPT_RECOVER:
			if (!*optarg)
				return bad("empty spool directory name");
			o->recover = optarg;
			break;
		case 'q':
			o->verbose = -1;
			break;
		case 'v':
			o->verbose = o->verbose < 0 ? 1 : o->verbose + 1;
			break;
		case OPT_LIST_SAMPLERS:
			*list_samplers = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("commrec (commtrace) %s, trace format %d\n", CT_VERSION, CT_FORMAT_VERSION);
			return 1;
		case ':':
			if (optopt && optopt < 256)
				return bad("option '-%c' needs a value", optopt);
			return bad("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt && optopt < 256)
				return bad("unknown option '-%c'", optopt);
			return bad("unknown option '%s'", argv[optind - 1]);
		}
	}
	rec_verbose = o->verbose;
	if (*list_samplers)
		return 0;
	if (o->recover) {
		if (optind < argc)
			return bad("--recover joins a spool: no program to run ('%s')", argv[optind]);
		return 0;
	}
	if (optind >= argc)
		return bad("no program to record: commrec [options] [--] PROGRAM [ARGS...]");
	if (!argv[optind][0])
		return bad("empty program name");
	o->argv = argv + optind;
	o->argc = argc - optind;
	if (o->full && strcmp(o->sampler, "inst"))
		return bad("--full records every access: it needs --sampler inst");
	if (o->owner_window && strcmp(o->sampler, "inst"))
		return bad("--owner-window follows lines through every access of an instrumented "
		           "program: it needs --sampler inst");
	if (o->wp_kind && !strcmp(o->wp_kind, "software") && strcmp(o->sampler, "inst"))
		return bad("software watchpoints check every access of an instrumented program: "
		           "they need --sampler inst");
	if (o->nevents && strcmp(o->sampler, "auto") && strcmp(o->sampler, "pebs"))
		return bad("--event chooses PMU events for the pebs sampler, not %s", o->sampler);
	return 0;
}
