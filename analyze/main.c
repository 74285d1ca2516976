/* commanalyze: replay a commtrace trace and show how its threads
 * communicate.  One file per command (info.c, dump.c, report.c,
 * cmd_matrix.c); this file only dispatches. */
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib.h"
#include "sweep.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: commanalyze [report] TRACE [model options]\n"
"       commanalyze info TRACE\n"
"       commanalyze dump TRACE [--thread N] [--type TYPE[,TYPE...]] [--limit N]\n"
"       commanalyze matrix TRACE [--kind all|true|false] [--index thread|core|socket]\n"
"                   [--format text|csv|json|h5|svg] [--directed] [-o FILE]\n"
"                   [--comdetective-csv DIR] [model options]\n"
"       commanalyze objects|lines TRACE [options] (see commanalyze(1))\n"
"       commanalyze sweep TRACE --param NAME=V1,V2,... [options] (see commanalyze(1))\n"
"       commanalyze --help | --version\n"
"\n"
"Commands:\n"
"  report   the readable report: totals, true/false sharing, top thread pairs,\n"
"           cores and sockets, lost samples, warnings (default command)\n"
"  info     what the trace holds: version, completeness, machine, configuration,\n"
"           command line, per-thread record counts, lost and skipped samples\n"
"  dump     one line per record in time order: TIME_NS T<thread> TYPE key=value...\n"
"  matrix   communication matrices (row: receiving thread, column: publisher),\n"
"           symmetric (M + M^T) unless --directed\n"
"  objects  data objects (globals and fields, heap call paths, stacks, TLS)\n"
"           ranked by communication\n"
"  lines    cache lines ranked by communication, with per-offset detail\n"
"  sweep    the same trace under many model option values, one decode pass\n"
"\n"
"Model options (report, matrix):\n"
"  --model NAME                   detector (default comdetective):\n");
	for (size_t i = 0; all_models[i]; i++)
		fprintf(f, "      %-14s %s\n", all_models[i]->name, all_models[i]->summary);
	fprintf(f,
"  --expiry comdetective|ns:N|samples:N   how long a published line or an armed\n"
"                                 watchpoint stays recent (default comdetective)\n"
"  --board-size N                 bulletin board entries (default 127)\n"
"  --hash mod|murmur              board index: line number mod N, or murmur3 mix\n"
"  --line-size N                  bytes (default: recorded, else 64)\n"
"  --watchpoints D                use hits on registers < D only, scale as D\n"
"                                 (0: no watchpoint hits)\n"
"  --period-multiplier K          keep every Kth sample per thread and kind\n"
"  --window NS                    window model: pair distance (default 1ms;\n"
"                                 units ns, us, ms, s accepted)\n"
"  --signature-size N             signature model: slots\n"
"  --fp-rate P                    signature model: bloom filter false positive rate\n"
"  --emulate-period N             emulate model: sample every Nth access per kind\n"
"\n"
"Exit status: 0 success, 1 usage error, 2 unreadable or invalid trace.\n"
"See commanalyze(1).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("commanalyze %s (trace format %d, reads %d..%d)\n", CT_VERSION,
		       CT_FORMAT_VERSION, CT_FORMAT_MIN_READ, CT_FORMAT_VERSION);
		return 0;
	}
	/* commands with their own --help */
	if (!strcmp(cmd, "objects"))
		return cmd_objects(argc - 2, argv + 2);
	if (!strcmp(cmd, "lines"))
		return cmd_lines(argc - 2, argv + 2);
	if (!strcmp(cmd, "sweep"))
		return cmd_sweep(argc - 2, argv + 2);
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
	if (!strcmp(cmd, "info"))
		return cmd_info(argc - 2, argv + 2);
	if (!strcmp(cmd, "dump"))
		return cmd_dump(argc - 2, argv + 2);
	if (!strcmp(cmd, "matrix"))
		return cmd_matrix(argc - 2, argv + 2);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 2, argv + 2);
	if (cmd[0] == '-') {
		ana_err("unknown option '%s' (a command or a trace comes first; see --help)", cmd);
		return EXIT_USAGE;
	}
	return cmd_report(argc - 1, argv + 1);
}
