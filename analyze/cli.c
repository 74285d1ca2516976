/* The command line: one parser for every command, with GNU getopt_long's
 * conventions (what users of perf, uftrace and coreutils expect):
 *   - options and operands in any order; "--" ends the options;
 *   - "--name=VALUE" or "--name VALUE"; a long name may be shortened to
 *     any unambiguous prefix ("--dir" for --directed);
 *   - short options cluster: "-qv", "-ofile", "-o file", "-j2";
 *   - a value is taken as it is, even when it starts with '-'.
 * Every command also takes -h/--help, -q/--quiet, -v/--verbose and
 * -j/--jobs (decoding threads; a command's own -j comes first); the
 * commands that take model options take every row of the model options'
 * table (options.c), with -b (--board-size) and -w (--watchpoints) as
 * commrec spells them.  We do not use getopt_long itself: its state is
 * global, and its messages cannot name the command or list the candidates
 * of an ambiguous prefix. */
#include <stdlib.h>
#include <string.h>

#include "ana.h"

int ana_verbosity;
unsigned ana_jobs;
void (*cli_help)(FILE *f, const char *cmd);

enum { ID_HELP = -10, ID_QUIET, ID_VERBOSE, ID_JOBS, ID_MODEL };

static const struct cli_opt common_opts[] = {
	{ "help", 'h', false, ID_HELP },
	{ "quiet", 'q', false, ID_QUIET },
	{ "verbose", 'v', false, ID_VERBOSE },
	{ "jobs", 'j', true, ID_JOBS },
};
#define NCOMMON (sizeof common_opts / sizeof *common_opts)

/* Model options with a short name (as commrec's -b and -w). */
static const struct { char letter; const char *name; } model_letters[] = {
	{ 'b', "board-size" }, { 'w', "watchpoints" },
};

char cli_model_letter(const char *name)
{
	for (size_t i = 0; i < sizeof model_letters / sizeof *model_letters; i++)
		if (!strcmp(model_letters[i].name, name))
			return model_letters[i].letter;
	return 0;
}

/* The k-th option p accepts (the command's, the common ones, the model
 * options); false past the last. */
static bool option_at(const struct cli *p, size_t k, struct cli_opt *o)
{
	if (k < p->nopts) {
		*o = p->opts[k];
		return true;
	}
	k -= p->nopts;
	if (k < NCOMMON) {
		*o = common_opts[k];
		return true;
	}
	k -= NCOMMON;
	if (!p->model || !model_opt_names[k])
		return false;
	*o = (struct cli_opt){ model_opt_names[k], cli_model_letter(model_opt_names[k]), true,
	                       ID_MODEL };
	return true;
}

void cli_init(struct cli *p, const char *cmd, int argc, char **argv,
              const struct cli_opt *opts, size_t nopts, struct model_opts *model)
{
	*p = (struct cli){ .cmd = cmd, .argc = argc, .argv = argv, .opts = opts,
	                   .nopts = nopts, .model = model };
}

/* The long option named by the n characters at s: an exact name, else the
 * one option whose name starts with them.  false: unknown or ambiguous
 * (message printed). */
static bool find_long(struct cli *p, const char *s, size_t n, struct cli_opt *out)
{
	struct cli_opt o;
	size_t matches = 0;
	char list[512] = "";
	for (size_t k = 0; option_at(p, k, &o); k++) {
		if (strncmp(o.name, s, n) || (matches && !strcmp(o.name, out->name)))
			continue;           /* (a command's own option hides a common one) */
		if (!o.name[n]) {
			*out = o;
			return true;
		}
		size_t l = strlen(list);
		snprintf(list + l, sizeof list - l, "%s--%s", matches ? ", " : "", o.name);
		if (!matches++)
			*out = o;
	}
	if (matches == 1)
		return true;
	if (matches)
		ana_err("%s: option '--%.*s' is ambiguous (%s)", p->cmd, (int)n, s, list);
	else
		ana_err("%s: unknown option '--%.*s' (see commanalyze %s --help)", p->cmd, (int)n, s,
		        p->cmd);
	return false;
}

static bool find_short(struct cli *p, char c, struct cli_opt *out)
{
	for (size_t k = 0; option_at(p, k, out); k++)
		if (out->letter == c)
			return true;
	ana_err("%s: unknown option '-%c' (see commanalyze %s --help)", p->cmd, c, p->cmd);
	return false;
}

/* The value of option o from the next argument; NULL (message printed) if
 * there is none. */
static const char *next_value(struct cli *p)
{
	if (p->next < p->argc)
		return p->argv[p->next++];
	ana_err("%s: %s needs a value", p->cmd, p->name);
	return NULL;
}

/* One option (o, its value): the common and model options are handled
 * here (0 done, -1 usage error); otherwise its id for the command. */
static int handle(struct cli *p, const struct cli_opt *o, const char *value)
{
	char err[256];
	switch (o->id) {
	case ID_HELP:
		if (cli_help)
			cli_help(stdout, p->cmd);
		exit(0);
	case ID_QUIET:
		ana_verbosity = -1;
		return 0;
	case ID_VERBOSE:
		ana_verbosity = ana_verbosity < 0 ? 1 : ana_verbosity + 1;
		return 0;
	case ID_JOBS: {
		uint64_t j;
		if (!parse_u64(value, &j) || j < 1 || j > 4096) {
			ana_err("%s: %s: '%s' is not a number from 1 to 4096", p->cmd, p->name, value);
			return -1;
		}
		ana_jobs = (unsigned)j;
		return 0;
	}
	case ID_MODEL:
		if (model_opts_parse(p->model, o->name, value, err, sizeof err)) {
			ana_err("%s: %s", p->cmd, err);
			return -1;
		}
		return 0;
	}
	return o->id;
}

/* The option starting at argv[p->next - 1] (after its dashes: s), or the
 * rest of a short-option cluster. */
static int parse_long(struct cli *p, const char *s, const char **value)
{
	const char *eq = strchr(s, '=');
	struct cli_opt o;
	if (!find_long(p, s, eq ? (size_t)(eq - s) : strlen(s), &o))
		return -1;
	snprintf(p->name, sizeof p->name, "--%s", o.name);
	*value = NULL;
	if (o.value)
		*value = eq ? eq + 1 : next_value(p);
	else if (eq) {
		ana_err("%s: %s takes no value", p->cmd, p->name);
		return -1;
	}
	if (o.value && !*value)
		return -1;
	return handle(p, &o, *value);
}

static int parse_short(struct cli *p, const char **value)
{
	struct cli_opt o;
	char c = *p->cluster++;
	if (!find_short(p, c, &o))
		return -1;
	snprintf(p->name, sizeof p->name, "-%c", c);
	*value = NULL;
	if (o.value) {
		*value = *p->cluster ? p->cluster : next_value(p);
		p->cluster = "";
		if (!*value)
			return -1;
	}
	return handle(p, &o, *value);
}

int cli_next(struct cli *p, const char **value)
{
	for (;;) {
		int r;
		if (p->cluster && *p->cluster) {
			r = parse_short(p, value);
		} else {
			if (p->next >= p->argc)
				return 0;
			char *a = p->argv[p->next++];
			if (p->operands_only || a[0] != '-' || !a[1]) {
				p->argv[p->noperands++] = a;   /* never ahead of p->next */
				continue;
			}
			if (!strcmp(a, "--")) {
				p->operands_only = true;
				continue;
			}
			if (a[1] == '-') {
				r = parse_long(p, a + 2, value);
			} else {
				p->cluster = a + 1;
				r = parse_short(p, value);
			}
		}
		if (r)
			return r;
	}
}

int cli_choice(const struct cli *p, const char *value, const char *const *names, size_t n,
               int *out)
{
	for (size_t k = 0; k < n; k++)
		if (!strcmp(value, names[k])) {
			*out = (int)k;
			return 0;
		}
	char list[256];
	ana_err("%s: %s: '%s' is not %s", p->cmd, p->name, value, names_list(names, n, list, sizeof list));
	return -1;
}

int cli_trace(const struct cli *p, const char **path)
{
	if (p->noperands > 1) {
		ana_err("%s: one trace only ('%s' and '%s')", p->cmd, p->argv[0], p->argv[1]);
		return EXIT_USAGE;
	}
	*path = p->noperands ? p->argv[0] : CLI_DEFAULT_TRACE;
	return 0;
}

const char *names_list(const char *const *names, size_t n, char *buf, size_t cap)
{
	size_t l = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && l < cap; i++)
		l += (size_t)snprintf(buf + l, cap - l, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " or ",
		                      names[i]);
	return buf;
}
