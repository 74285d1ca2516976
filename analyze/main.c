/* commanalyze: replay a commtrace trace and show how its threads
 * communicate.  One file per command (info.c, dump.c, report.c,
 * cmd_matrix.c, cmd_objects.c, cmd_lines.c, functions.c, sweep.c); this file only
 * dispatches and holds the usage texts: `commanalyze --help`, and
 * `commanalyze CMD --help` (or -h, or `commanalyze help CMD`) for every
 * command, on standard output with exit status 0. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ana.h"
#include "attrib.h"
#include "sweep.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: commanalyze [report] TRACE [--format text|json] [-o FILE] [model options]\n"
"       commanalyze info TRACE [--format text|json]\n"
"       commanalyze dump TRACE [--thread N] [--type TYPE[,TYPE...]] [--limit N] [--raw]\n"
"       commanalyze matrix TRACE [--kind all|true|false] [--index thread|core|socket]\n"
"                   [--format text|csv|json|h5|svg] [--directed] [-o FILE]\n"
"                   [--comdetective-csv DIR] [model options]\n"
"       commanalyze objects|lines|functions TRACE [options] [model options]\n"
"       commanalyze regions|loops TRACE [--node NAME] [--format FMT] [options]\n"
"       commanalyze timeline TRACE [--interval DURATION] [--changes] [options]\n"
"       commanalyze sweep TRACE --param NAME=V1,V2,... [options]\n"
"       commanalyze html TRACE [-o FILE] [--color-scale linear|log] [model options]\n"
"       commanalyze COMMAND --help | --help | --version\n"
"\n"
"Commands:\n"
"  report   the readable report: totals, true/false sharing, top thread pairs,\n"
"           cores and sockets, lost samples, warnings (default command)\n"
"  info     what the trace holds: version, completeness, machine, configuration,\n"
"           command line, per-thread record counts, lost and skipped samples\n"
"  dump     one line per record in time order: TIME T<thread> TYPE key=value...\n"
"  matrix   communication matrices (row: receiving thread, column: publisher),\n"
"           symmetric (M + M^T) unless --directed\n"
"  objects  data objects (globals and fields, heap call paths, stacks, TLS)\n"
"           ranked by communication\n"
"  lines    cache lines ranked by communication, with per-offset detail\n"
"  regions  communication by code region (commrec.h markers, OpenMP parallel\n"
"           regions): a tree with totals, top pairs and thread load\n"
"  loops    communication by function and loop (found in the binaries), nested\n"
"  timeline communication over time: by phase, --interval or detected --changes\n"
"  functions  dataflow between functions: producer -> consumer (bytes and\n"
"           reuse on full traces), as a table or a Graphviz graph\n"
"  sweep    the same trace under many model option values, one decode pass\n"
"  html     one self-contained page: the report, heatmaps, phase timeline, top objects\n"
"           and lines\n"
"\n"
"TRACE defaults to trace.zst (commrec's default output).  Options and the trace\n"
"come in any order, as for GNU tools: --name=VALUE or --name VALUE, any\n"
"unambiguous prefix of a long name, short options clustered (-qo FILE); \"--\"\n"
"ends the options.  Every command takes:\n"
"  -h, --help     the command's usage        -q, --quiet    errors only\n"
"  -v, --verbose  say what is being done (records replayed, time)\n"
"  -j, --jobs N   threads that replay the trace (default: every online cpu;\n"
"                 the output is the same for every N; sweep: its own -j)\n"
"\n");
	model_opts_usage(f);
	fprintf(f,
"(accepted by report, matrix, objects, lines, functions, regions, loops,\n"
"timeline and, as fixed options, sweep)\n"
"\n"
"Exit status: 0 success, 1 usage error, 2 unreadable or invalid trace.\n"
"See commanalyze(1).\n");
}

static void sweep_help(FILE *f)
{
	sweep_usage(f, true);
}

/* The commands: the first is the default one (no command word). */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *text;              /* its usage text, or NULL: help() */
	bool model;                    /* it takes the model options */
	void (*help)(FILE *f);
} commands[] = {
		{ "report", cmd_report,
"usage: commanalyze [report] TRACE [--format text|json] [-o FILE]\n"
"                   [--symbols-from-binaries] [model options]\n"
"\n"
"The readable report: trace and sampler, model, totals (estimated line\n"
"transfers, true/false sharing), top thread pairs, cores and sockets, lost and\n"
"skipped samples, warnings.  Estimated figures carry a 90% interval: the volume\n"
"Fay and Feuer's gamma interval, which allows for one unsampled access of the\n"
"largest weight the estimator gives one; shares Wilson's (commanalyze(1)).\n"
"  --format text|json       (default text) json: one object, for scripts and\n"
"                           CI (schema commtrace-report/1: commanalyze(1))\n"
"  -o FILE                  write to FILE instead of standard output\n"
"  --symbols-from-binaries  read symbols from the binaries on this machine\n"
"  --no-demangle            C++ names as in the binary\n", true, NULL },
		{ "html", cmd_html,
"usage: commanalyze html TRACE [-o FILE] [--color-scale linear|log]\n"
"                   [--symbols-from-binaries] [--no-demangle] [model options]\n"
"\n"
"One self-contained HTML page (inline SVG and CSS, nothing loaded from the\n"
"network): the report, the all/true/false heatmaps by thread and by core\n"
"(one colour scale per index), the top objects and cache lines.\n"
"  -o FILE                  write to FILE instead of standard output\n"
"  --color-scale linear|log heatmap colours by volume (default) or its log\n"
"  --symbols-from-binaries  read symbols from the binaries on this machine\n"
"  --no-demangle            C++ names as in the binary\n", true, NULL },
		{ "info", cmd_info,
"usage: commanalyze info TRACE [--format text|json] [-o FILE]\n"
"\n"
"What the trace holds: format version and features, completeness, machine,\n"
"configuration, command line, per-thread record counts, lost and skipped\n"
"samples, exit status.\n"
"  --format text|json   (default text) json: one object (schema\n"
"                       commtrace-info/1: commanalyze(1))\n"
"  -o FILE              write to FILE instead of standard output\n", false, NULL },
		{ "dump", cmd_dump,
"usage: commanalyze dump TRACE [--thread N] [--type TYPE[,TYPE...]] [--limit N] [--raw]\n"
"                        [-o FILE]\n"
"\n"
"One line per record in time order: TIME T<thread> TYPE key=value..., as perf\n"
"script: TIME in seconds since the recording began, code addresses with their\n"
"symbol (sym=func+0x12, callsites syms=...) from the trace's embedded symbols.\n"
"  --thread N        one thread (N or TN: the thread index)\n"
"  --type LIST       record types, comma separated: sample, wp_arm, wp_hit, alloc,\n"
"                    free, callsite, thread_start, thread_end, marker, lost,\n"
"                    skipped, func_enter, func_exit\n"
"  --limit N         the first N lines shown\n"
"  --raw             TIME in the recorded monotonic nanoseconds, no symbols\n"
"  -o FILE           write to FILE instead of standard output\n", false, NULL },
		{ "matrix", cmd_matrix,
"usage: commanalyze matrix TRACE [--kind all|true|false] [--index thread|core|socket]\n"
"                   [--format text|csv|json|h5|svg] [--directed] [-o FILE]\n"
"                   [--cells auto|dense|sparse] [--color-max N|shared] [--color-min zero|min]\n"
"                   [--color-scale linear|log] [--comdetective-csv DIR] [model options]\n"
"\n"
"A communication matrix in estimated line transfers (row: receiving thread,\n"
"column: publisher), symmetric (M + M^T) unless --directed.\n"
"  --kind all|true|false          which events (default all)\n"
"  --index thread|core|socket     rows and columns (default thread)\n"
"  --format text|csv|json|h5|svg  (default text; h5 needs -o)\n"
"  --directed                     as kept: row dst, column src\n"
"  -o FILE                        write to FILE instead of standard output\n"
"  --cells auto|dense|sparse      csv, json, h5: every cell, or (row, column,\n"
"                                 value) triplets of the non-zero ones; auto\n"
"                                 (default): triplets past 1024 rows\n"
"  --color-max N|shared           svg: top of the colour scale: N, or shared: the\n"
"                                 largest cell of --kind all, so that the all,\n"
"                                 true and false pictures compare by colour\n"
"  --color-min zero|min           svg: colours from 0 (default) or the smallest\n"
"                                 non-zero cell\n"
"  --color-scale linear|log       svg: colours by volume (default) or its log;\n"
"                                 with --color-max shared both ends are shared\n"
"  --comdetective-csv DIR         also ComDetective's files in DIR: EXE-PID-\n"
"                                 as/ts/fs_matrix.csv (threads), _core_ variants\n"
"                                 (logical cpus, same-cpu events left out) and\n"
"                                 EXE-PID-comdetective.log (its STATS line);\n"
"                                 alone: only these\n", true, NULL },
		{ "objects", cmd_objects,
"usage: commanalyze objects TRACE [--top N] [--kind all|true|false] [--object NAME]\n"
"                   [--format text|csv|json] [-o FILE] [--symbols-from-binaries]\n"
"                   [--no-demangle] [model options]\n"
"\n"
"Data objects (globals and their fields, heap allocations by call path,\n"
"stacks, TLS) ranked by the communication on them, with thread pairs and code.\n"
"Heap fields are named through the blocks' type where the allocation site\n"
"gives it (c[3].y), else \"untyped\" and byte offsets (+8).\n"
"  --top N                  objects shown (default 20, 0: all)\n"
"  --kind all|true|false    which events rank them (default all)\n"
"  --object NAME            that object's thread matrix\n"
"  --format text|csv|json   (default text)\n"
"  -o FILE                  write to FILE instead of standard output\n"
"  --no-demangle            C++ names as in the binary\n"
"  --symbols-from-binaries  read symbols from the binaries on this machine\n"
"                           (default: the trace's SYMBOLS section)\n", true, NULL },
		{ "lines", cmd_lines,
"usage: commanalyze lines TRACE [--top N] [--format text|csv|json] [-o FILE]\n"
"                   [--symbols-from-binaries] [--no-demangle] [model options]\n"
"\n"
"Cache lines ranked by the communication on them, with per-offset detail.\n"
"  --top N                  lines shown (default 20, 0: all)\n"
"  --format text|csv|json   (default text)\n"
"  -o FILE                  write to FILE instead of standard output\n"
"  --no-demangle            C++ names as in the binary\n"
"  --symbols-from-binaries  read symbols from the binaries on this machine\n"
"                           (default: the trace's SYMBOLS section)\n", true, NULL },
		{ "regions", cmd_regions,
"usage: commanalyze regions TRACE [--node NAME] [--kind all|true|false] [--directed]\n"
"                   [--format text|csv|json|h5|svg] [-o FILE] [--color-scale linear|log]\n"
"                   [--no-demangle] [model options]\n"
"\n"
"Communication by code region: the regions a program marks with commrec.h\n"
"(commrec_region_begin/end) and the OpenMP parallel regions of unmodified\n"
"programs (named by outlined function or by function and line), as a tree.\n"
"Each event counts in the region open on its receiving thread and in the\n"
"regions around it; the root, (program), holds every event.  Per region:\n"
"begin markers, threads that entered it, total, true and false sharing, the\n"
"imbalance (the largest thread load over the mean) and the top thread pair;\n"
"then each thread's share of each region's communication.  Regions without\n"
"communication are named after the tree, not given rows (csv and json have them).\n"
"  --node NAME                    that region's thread matrix (NAME: its name, or\n"
"                                 its path a/b when names repeat)\n"
"  --kind all|true|false          --node: which events (default all)\n"
"  --directed                     --node: row dst, column src (default M + M^T)\n"
"  --color-scale linear|log       --node --format svg: heatmap colours (matrix)\n"
"  --format text|csv|json|h5|svg  (default text; h5 and svg only with --node,\n"
"                                 and need -o)\n"
"  -o FILE                        write to FILE instead of standard output\n"
"  --no-demangle                  OpenMP regions' C++ names as in the binary\n", true, NULL },
		{ "loops", cmd_loops,
"usage: commanalyze loops TRACE [--node NAME] [--kind all|true|false] [--directed]\n"
"                   [--format text|csv|json|h5|svg] [-o FILE] [--color-scale linear|log]\n"
"                   [--no-demangle] [model options]\n"
"\n"
"Communication by function and loop, as a tree like regions': each event counts\n"
"in the innermost loop around its receiving access (its instruction address)\n"
"and in the loops and function around it.  Loops are found in the code of the\n"
"binaries that ran (they must be on this machine, as the trace's memory map\n"
"names them): each backward jump in a function closes a loop, named by its\n"
"first line (loop:23) and located by its lines (file.c:23-31).  Same options\n"
"as regions.\n", true, NULL },
		{ "timeline", cmd_timeline,
"usage: commanalyze timeline TRACE [--interval DURATION] [--changes]\n"
"                   [--format text|csv|json|h5|svg] [-o FILE] [model options]\n"
"\n"
"Communication over time: one slice per phase (commrec_phase markers; the\n"
"whole trace is one slice without them) or, with --interval, per fixed window.\n"
"Per slice: start and end (ms from the first record), the phase, total, true\n"
"and false sharing, the top thread pair.\n"
"  --interval DURATION            windows of that length (ns, us, ms, s: 10ms;\n"
"                                 --window is the window model's option), at\n"
"                                 most 100000 of the run (else a usage error)\n"
"  --changes                      phases detected from the pattern: the windows\n"
"                                 (of --interval, default 10ms) grouped while\n"
"                                 their thread pairs stay alike (chi-square\n"
"                                 test, p < 0.001, windows of 10+ events)\n"
"  --format text|csv|json|h5|svg  (default text) h5: one directed thread matrix\n"
"                                 per slice; svg: transfers per ms of the top\n"
"                                 thread pairs over time, phases marked (h5 and\n"
"                                 svg need -o)\n"
"  -o FILE                        write to FILE instead of standard output\n", true, NULL },
		{ "functions", cmd_functions,
"usage: commanalyze functions TRACE [--top N] [--kind all|true|false] [--threads]\n"
"                   [--by function|object] [--format text|csv|json|dot] [-o FILE]\n"
"                   [--no-demangle]\n"
"                   [--symbols-from-binaries] [model options]\n"
"\n"
"Dataflow between functions: which function's writes are read by which.\n"
"Sampled traces: the function of the publishing access -> the function of the\n"
"detecting access of every communication event, in estimated line transfers.\n"
"Full traces (inst --full): also every byte read credited to the function and\n"
"thread that last wrote it: bytes, unique bytes (first read by a function\n"
"since the write), cross-thread bytes, local flows (a function to itself), and\n"
"per function (or per data object) the reuse of the bytes it writes (reads\n"
"before overwrite, lifetime from write to last read).\n"
"  --top N                      flows shown (default 20, 0: all)\n"
"  --kind all|true|false        rank by those events' transfers (default all:\n"
"                               bytes on full traces, transfers otherwise)\n"
"  --threads                    one flow per thread pair (default: merged)\n"
"  --by function|object         the reuse table (text) and CSV by function (the\n"
"                               flows) or by object (default function)\n"
"  --format text|csv|json|dot   (default text; dot: a Graphviz graph, render\n"
"                               it with dot -Tsvg)\n"
"  -o FILE                      write to FILE instead of standard output\n"
"  --no-demangle                C++ names as in the binary\n"
"  --symbols-from-binaries      read symbols from the binaries on this machine\n", true, NULL },
		{ "sweep", cmd_sweep, NULL, false, sweep_help },
};

static const struct command *command_find(const char *name)
{
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* One command's usage. */
static void command_usage(FILE *f, const struct command *c)
{
	if (c->help) {
		c->help(f);
		return;
	}
	fputs(c->text, f);
	if (c->model) {
		fputc('\n', f);
		model_opts_usage(f);
	}
	fprintf(f, "\nTRACE defaults to trace.zst.  Options in any order, GNU style (--name=VALUE,\n"
	           "prefixes, -qo FILE, \"--\"); also -h/--help, -q/--quiet, -v/--verbose,\n"
	           "-j/--jobs N (replay threads, default: every online cpu).\n"
	           "\nExit status: 0 success, 1 usage error, 2 unreadable or invalid trace.\n"
	           "See commanalyze(1).\n");
}

static bool is_help(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h");
}

static void help_for(FILE *f, const char *cmd)
{
	const struct command *c = command_find(cmd);
	if (c)
		command_usage(f, c);
	else
		usage(f);
}

/* Edit distance of a and b (insertions, deletions, substitutions and
 * swaps of neighbours), up to 3: enough to tell a typo of a command. */
static int typo_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 16 || lb > 16)
		return 3;
	int d[17][17];
	for (size_t i = 0; i <= la; i++)
		for (size_t j = 0; j <= lb; j++) {
			if (!i || !j) {
				d[i][j] = (int)(i + j);
				continue;
			}
			int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb] < 3 ? d[la][lb] : 3;
}

/* The command a word that is neither a command nor a file was probably
 * meant to be, or NULL. */
static const struct command *command_like(const char *word)
{
	if (!access(word, F_OK))
		return NULL;
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (typo_distance(word, commands[i].name) <= (strlen(word) > 4 ? 2 : 1))
			return &commands[i];
	return NULL;
}

/* A word in the command's place that is no file, and either looks like
 * a command (no '/' or '.') or is followed by another operand that could
 * be the trace: "commanalyze compare a.zst b.zst" is not a report of two
 * traces. */
static bool unknown_command(const char *word, int argc, char **argv)
{
	if (word[0] == '-' || !access(word, F_OK))
		return false;
	if (!strpbrk(word, "/."))
		return true;
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (argv[i][0] != '-' && !access(argv[i], F_OK))
			return true;
	return false;
}

static void say_unknown_command(const char *word)
{
	char list[256];
	size_t l = 0;
	for (size_t i = 0; i < sizeof commands / sizeof *commands && l < sizeof list; i++)
		l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", commands[i].name);
	ana_err("'%s' is neither a command nor a trace (commands: %s; see --help)", word, list);
}

int main(int argc, char **argv)
{
	cli_help = help_for;
	const char *cmd = argc > 1 ? argv[1] : "report";
	if (is_help(cmd) || !strcmp(cmd, "help")) {
		const struct command *c = argc > 2 && !is_help(cmd) ? command_find(argv[2]) : NULL;
		if (argc > 2 && !is_help(cmd) && !c) {
			ana_err("help: unknown command '%s'", argv[2]);
			return EXIT_USAGE;
		}
		if (c)
			command_usage(stdout, c);
		else
			usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("commanalyze %s (trace format %d, reads %d..%d)\n", CT_VERSION,
		       CT_FORMAT_VERSION, CT_FORMAT_MIN_READ, CT_FORMAT_VERSION);
		return 0;
	}
	/* the command word, or none: the report (of trace.zst if no trace) */
	const struct command *c = command_find(cmd);
	int first = c && argc > 1 ? 2 : 1;
	if (!c && cmd[0] != '-' && (c = command_like(cmd))) {
		ana_err("'%s' is not a command and not a file: did you mean '%s'? (see --help)", cmd,
		        c->name);
		return EXIT_USAGE;
	}
	if (!c && unknown_command(cmd, argc, argv)) {
		say_unknown_command(cmd);
		return EXIT_USAGE;
	}
	if (!c)
		c = &commands[0];
	/* --help before "--": that command's usage, whatever else is given */
	for (int i = first; i < argc && strcmp(argv[i], "--"); i++)
		if (is_help(argv[i])) {
			command_usage(stdout, c);
			return 0;
		}
	return c->run(argc - first, argv + first);
}
