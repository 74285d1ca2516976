/* commanalyze objects TRACE: data objects ranked by communication, with
 * their fields, thread pairs and code (--kind true|false: ranked by those
 * events only); --object NAME: that object's thread matrix (of --kind).
 * Also the option parsing and the run shared with cmd_lines.c and
 * functions.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib_int.h"
#include "functions.h"

static int hook_setup(void *arg, struct analysis *an)
{
	struct attrib_hook *ah = arg;
	struct attrib_opts ao = {
		.from_binaries = ah->from_binaries,
		.no_demangle = ah->no_demangle,
		.line_size = an->line_size,
		.nthreads = thread_space(an->trace),
	};
	ah->a = attrib_create(an->trace, &ao);
	if (!ah->a) {
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	struct record_consumer rc = attrib_record_consumer(ah->a);
	struct event_consumer ec = attrib_event_consumer(ah->a);
	int err = analysis_hooks_add(ah->h, &rc, &ec);
	if (!err && ah->functions) {
		const struct ct_header *hd = ct_trace_header(an->trace);
		ah->ff = fnflow_create(ah->a, an->trace, hd && (hd->features & CT_FEAT_FULL));
		if (!ah->ff) {
			ana_err("out of memory");
			return EXIT_BADTRACE;
		}
		rc = fnflow_record_consumer(ah->ff);
		ec = fnflow_event_consumer(ah->ff);
		err = analysis_hooks_add(ah->h, &rc, &ec);
	}
	return err;
}

void attrib_hooks_init(struct analysis_hooks *h, struct attrib_hook *ah, bool from_binaries)
{
	memset(h, 0, sizeof *h);
	memset(ah, 0, sizeof *ah);
	ah->from_binaries = from_binaries;
	ah->h = h;
	h->setup = hook_setup;
	h->arg = ah;
}

enum { O_FORMAT = 1, O_OUTPUT, O_TOP, O_FROM_BINARIES, O_NO_DEMANGLE, O_OBJECT, O_KIND,
       O_THREADS, O_BY };
static const struct cli_opt attrib_opts[] = {
	{ "format", 0, true, O_FORMAT }, { "output", 'o', true, O_OUTPUT },
	{ "top", 0, true, O_TOP }, { "symbols-from-binaries", 0, false, O_FROM_BINARIES },
	{ "no-demangle", 0, false, O_NO_DEMANGLE },
	{ "object", 0, true, O_OBJECT }, { "kind", 0, true, O_KIND },
	{ "threads", 0, false, O_THREADS }, { "by", 0, true, O_BY },
};
/* The commands each option of attrib_opts belongs to (bits 1 << ACMD_*). */
#define ACMD_ALL ((1u << ACMD_OBJECTS) | (1u << ACMD_LINES) | (1u << ACMD_FUNCTIONS))
static const unsigned attrib_opt_cmds[] = {
	ACMD_ALL, ACMD_ALL, ACMD_ALL, ACMD_ALL, ACMD_ALL,
	1u << ACMD_OBJECTS, (1u << ACMD_OBJECTS) | (1u << ACMD_FUNCTIONS), 1u << ACMD_FUNCTIONS,
	1u << ACMD_FUNCTIONS,
};

/* One option of objects, lines or functions: 0, or -1 (message printed). */
static int attrib_cli_option(struct cli *p, struct attrib_cli *c, int id, const char *v)
{
	uint64_t n;
	int kind;
	switch (id) {
	case O_FORMAT:
		if (attrib_format_parse(v, &c->fmt) ||
		    (c->fmt == AF_DOT && c->cmd != ACMD_FUNCTIONS)) {
			ana_err("%s: --format: '%s' is not text, csv or json%s", p->cmd, v,
			        c->cmd == ACMD_FUNCTIONS ? " or dot" : "");
			return -1;
		}
		return 0;
	case O_OUTPUT:
		c->out = v;
		return 0;
	case O_TOP:
		if (!parse_u64(v, &n)) {
			ana_err("%s: --top: '%s' is not a number (0: all)", p->cmd, v);
			return -1;
		}
		c->top = (size_t)n;
		return 0;
	case O_FROM_BINARIES:
		c->from_binaries = true;
		return 0;
	case O_NO_DEMANGLE:
		c->no_demangle = true;
		return 0;
	case O_OBJECT:
		c->object = v;
		return 0;
	case O_KIND:
		if (cli_choice(p, v, mx_kind_names, 3, &kind))
			return -1;
		c->kind = (enum mx_kind)kind;
		return 0;
	case O_THREADS:
		c->by_threads = true;
		return 0;
	case O_BY: {
		static const char *const by[] = { "function", "object" };
		if (cli_choice(p, v, by, 2, &kind))
			return -1;
		c->by_object = kind == 1;
		return 0;
	}
	}
	return -1;
}

/* Options of objects, lines and functions.  Returns 0, or EXIT_USAGE
 * (message printed). */
static int attrib_cli_parse(const char *cmd, enum attrib_cmd which, int argc, char **argv,
                            struct attrib_cli *c)
{
	memset(c, 0, sizeof *c);
	c->cmd = which;
	model_opts_default(&c->o);
	c->top = 20;
	c->kind = MX_ALL;
	struct cli_opt opts[sizeof attrib_opts / sizeof *attrib_opts];
	size_t nopts = 0;
	for (size_t k = 0; k < sizeof attrib_opts / sizeof *attrib_opts; k++)
		if (attrib_opt_cmds[k] & (1u << which))
			opts[nopts++] = attrib_opts[k];
	struct cli p;
	cli_init(&p, cmd, argc, argv, opts, nopts, &c->o);
	int id;
	const char *v;
	while ((id = cli_next(&p, &v)) > 0)
		if (attrib_cli_option(&p, c, id, v))
			return EXIT_USAGE;
	return id < 0 || cli_trace(&p, &c->path) ? EXIT_USAGE : 0;
}

/* Run the analysis with attribution.  0 with *an and *a set (free both), or
 * an exit status. */
static int attrib_cli_run(struct attrib_cli *c, struct analysis *an, struct attrib **a)
{
	struct analysis_hooks h;
	struct attrib_hook ah;
	attrib_hooks_init(&h, &ah, c->from_binaries);
	ah.no_demangle = c->no_demangle;
	ah.functions = c->cmd == ACMD_FUNCTIONS;
	int rc = analysis_run_hooks(an, c->path, &c->o, true, &h);
	*a = ah.a;
	c->ff = ah.ff;
	if (rc) {
		fnflow_free(ah.ff);
		c->ff = NULL;
		attrib_free(ah.a);
		*a = NULL;
		analysis_free(an);
	}
	return rc;
}

/* Write with fn to -o FILE or stdout; the final status, damaged traces
 * included. */
static int attrib_cli_finish(struct attrib_cli *c, struct analysis *an, struct attrib *a,
                             attrib_cli_writer *fn)
{
	int status = 0;
	FILE *f = c->out ? fopen(c->out, "w") : stdout;
	if (!f) {
		ana_err("cannot write %s: %s", c->out, strerror(errno));
		status = EXIT_BADTRACE;
	} else {
		int r = fn(c, an, a, f);
		if (c->out ? fclose(f) : fflush(f))
			r = r ? r : -1;
		if (r > 0)
			status = r;
		else if (r < 0) {
			ana_err("cannot write %s: %s", c->out ? c->out : "standard output", strerror(errno));
			status = EXIT_BADTRACE;
		}
	}
	if (an->damaged) {
		fprintf(stderr, "commanalyze: %s\n", an->err.msg);
		if (!status)
			status = EXIT_BADTRACE;
	}
	fnflow_free(c->ff);
	attrib_free(a);
	analysis_free(an);
	return status;
}

int attrib_cli_main(const char *cmd, enum attrib_cmd which, int argc, char **argv,
                    attrib_cli_writer *fn)
{
	struct attrib_cli c;
	int rc = attrib_cli_parse(cmd, which, argc, argv, &c);
	if (rc)
		return rc;
	struct analysis an;
	struct attrib *a;
	if ((rc = attrib_cli_run(&c, &an, &a)))
		return rc;
	return attrib_cli_finish(&c, &an, a, fn);
}

static int write_object_matrix(struct attrib_cli *c, struct analysis *an, struct attrib *a, FILE *f)
{
	struct matrices *m = attrib_object_matrix(a, c->object);
	if (!m) {
		ana_err("objects: no object named '%s' took part in communication "
		        "(commanalyze objects %s lists them)", c->object, c->path);
		return EXIT_USAGE;
	}
	size_t n = matrices_get(m, MX_THREAD, MX_ALL)->n;
	struct matrix_built b = { .m.n = n };
	char **labels = calloc(n ? n : 1, sizeof *labels);
	bool ok = labels && !matrix_build_cells(m, MX_THREAD, c->kind, true, OUT_FORM_AUTO, &b);
	for (size_t i = 0; ok && i < n; i++) {
		char buf[64];
		ok = (labels[i] = strdup(thread_label(an->trace, i, buf, sizeof buf))) != NULL;
	}
	int r = -1;
	if (ok) {
		struct attr_set attrs;
		analysis_attrs(an, &attrs);
		attr_add(&attrs, "object", "%s", c->object);
		attr_add(&attrs, "directed", "yes (row: receiving thread, column: publisher)");
		attr_add(&attrs, "symmetric", "no");
		char name[300];
		snprintf(name, sizeof name, "object_%s", mx_kind_names[c->kind]);
		struct matrix_out mo = {
			.name = name, .kind = mx_kind_names[c->kind], .index = "thread",
			.units = "estimated line transfers", .n = n, .cell = b.m.cell, .nz = b.m.nz,
			.nnz = b.m.nnz,
			.labels = (const char *const *)labels, .attrs = attrs.a, .nattrs = attrs.n,
			.render = { .symmetric = OUT_SYM_NO },
		};
		struct ct_error err = {{0}};
		struct out_dest d = { .f = f, .path = c->out, .err = &err };
		r = matrix_writer_find(attrib_format_name(c->fmt))->write(&d, &mo, 1);
	} else {
		ana_err("out of memory");
	}
	for (size_t i = 0; labels && i < n; i++)
		free(labels[i]);
	free(labels);
	matrix_built_free(&b);
	matrices_free(m);
	return r;
}

static int write_objects(struct attrib_cli *c, struct analysis *an, struct attrib *a, FILE *f)
{
	if (c->object)
		return write_object_matrix(c, an, a, f);
	attrib_rank_by(a, c->kind);
	return attrib_write_objects(a, f, c->fmt, c->top);
}

int cmd_objects(int argc, char **argv)
{
	return attrib_cli_main("objects", ACMD_OBJECTS, argc, argv, write_objects);
}
