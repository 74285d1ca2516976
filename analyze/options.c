/* Model options: one table (opt_table) from which their defaults, the one
 * parser shared by every command, their canonical text, the usage text and
 * the sweep's parameters are derived; and the commands' messages. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ana.h"
#include "comdetective.h"

/* ---- the table ------------------------------------------------------------
 * One row per model option: everything else (parsing, canonical text,
 * defaults, usage, the sweep's parameters and its finest point, which
 * models an option concerns) is derived from it.  Adding an option: a field
 * in struct model_opts (analysis.h), a row here, the model that reads it,
 * the man page. */
enum opt_type {
	OPT_MODEL,      /* const char *, a model_find name */
	OPT_EXPIRY,     /* enum expiry_kind + expiry_value: comdetective|ns:N|samples:N */
	OPT_UINT,       /* unsigned in [min, max]; 0 means `unset` when unset is given */
	OPT_POW2,       /* unsigned power of two in [min, max] */
	OPT_WATCHPOINTS,/* unsigned 0..max: 0 is MODEL_WP_NONE, unset (0) "recorded" */
	OPT_HASH,       /* enum hash_kind: mod|murmur */
	OPT_TIME,       /* uint64_t ns >= min, with a unit ns, us, ms, s */
	OPT_PROB,       /* double in (0, 1); 0 means `unset` */
	OPT_ESTIMATOR,  /* enum estimator_kind: estimator_names */
	OPT_SYNC,       /* enum sync_kind: sync_names */
};

struct model_opt {
	const char *name;         /* --name, and the sweep parameter */
	enum opt_type type;
	size_t field;             /* offsetof(struct model_opts, ...) */
	uint64_t min, max;
	const char *dflt;         /* parsed into model_opts_default; NULL: the field's 0 */
	const char *unset;        /* canonical text of the field's 0, NULL: "0" */
	int finest;               /* sweep's finest point: +1 the largest value, -1 the smallest */
	const char *arg, *help;   /* usage: --name ARG  help (default DFLT) */
	const char *models;       /* the models it concerns, " a b " */
};

#define MODEL_OPTIONS(X) \
	X("model", OPT_MODEL, model, 0, 0, "comdetective", NULL, 0, "NAME", \
	  "detector", "") \
	X("expiry", OPT_EXPIRY, expiry, 1, UINT64_MAX, "comdetective", NULL, 0, \
	  "comdetective|ns:N|samples:N", \
	  "how long a published line or an armed\nwatchpoint stays recent", \
	  " comdetective emulate ") \
	X("board-size", OPT_UINT, board_size, 1, 1u << 26, "127", NULL, 1, "N", \
	  "bulletin board entries", " comdetective emulate ") \
	X("hash", OPT_HASH, hash, 0, 0, NULL, NULL, 0, "mod|murmur", \
	  "board index: line number mod N, or murmur3 mix", " comdetective emulate ") \
	X("line-size", OPT_POW2, line_size, 8, 4096, NULL, "recorded", 0, "N", \
	  "bytes (default: recorded, else 64)", \
	  " comdetective window exact emulate ") \
	X("watchpoints", OPT_WATCHPOINTS, watchpoints, 0, CT_WP_MAX, NULL, "recorded", 1, "D", \
	  "use hits on registers < D only, scale as D\n(0: no watchpoint hits)", \
	  " comdetective emulate ") \
	X("period-multiplier", OPT_UINT, period_multiplier, 1, 1000000, "1", NULL, -1, "K", \
	  "keep every Kth sample per thread and kind\n(not on inst traces: line watches)", \
	  " comdetective window ") \
	X("window", OPT_TIME, window_ns, 1, UINT64_MAX, "1ms", NULL, 0, "NS", \
	  "window model: pair distance, ns or with\na unit: us, ms, s", " window ") \
	X("signature-size", OPT_UINT, signature_size, 1, 1u << 30, NULL, "default", 0, "N", \
	  "signature model: slots", " signature ") \
	X("fp-rate", OPT_PROB, fp_rate, 0, 0, NULL, "default", 0, "P", \
	  "signature model: false positive rate", " signature ") \
	X("emulate-period", OPT_UINT, emulate_period, 1, 1u << 31, NULL, "default", 0, "N", \
	  "emulate model: sample every Nth access per kind", " emulate ") \
	X("estimator", OPT_ESTIMATOR, estimator, 0, 0, "auto", NULL, 0, "NAME", \
	  "how detected transfers are weighted", " comdetective emulate ") \
	X("seed", OPT_UINT, seed, 0, UINT32_MAX, NULL, NULL, 0, "N", \
	  "emulate model: seed of its random draws", " emulate ") \
	X("owner-window", OPT_UINT, owner_window, 1, OWNER_WINDOW_MAX, NULL, "default", 0, "J", \
	  "owner estimator: a sampled access stands for\nthe transfers of its line's next J accesses\n" \
	  "(default 64 x the emulate period)", " emulate ") \
	X("line-watches", OPT_UINT, watch_lines, 0, CD_LINES_MAX, NULL, "registers", 0, "S", \
	  "emulate model: software watchpoints, S whole\nlines per thread (commrec --line-watches)", \
	  " emulate ") \
	X("line-watch-life", OPT_UINT, watch_life, 1, 1000000, "16", NULL, 0, "N", \
	  "emulate model: a line watch ends N samples\nafter it armed (commrec --line-watch-life)", \
	  " emulate ") \
	X("sync", OPT_SYNC, sync, 0, 0, "include", NULL, 0, "include|exclude|only", \
	  "exact model: the accesses synchronization\ncalls imply (commrec --full)", " exact ")

#define OPT_ROW(n, ty, fld, lo, hi, df, un, fi, arg, help, models) \
	{ n, ty, offsetof(struct model_opts, fld), lo, hi, df, un, fi, arg, help, models },
#define OPT_NAME(n, ...) n,

static const struct model_opt opt_table[] = { MODEL_OPTIONS(OPT_ROW) };
#define NOPTS (sizeof opt_table / sizeof *opt_table)
const char *const model_opt_names[] = { MODEL_OPTIONS(OPT_NAME) NULL };

static const struct model_opt *opt_find(const char *name)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (!strcmp(opt_table[i].name, name))
			return &opt_table[i];
	return NULL;
}

bool model_opt_known(const char *name)
{
	return opt_find(name) != NULL;
}

bool model_opt_relevant(const char *model, const char *opt)
{
	if (!model || !model_find(model))
		return true;
	const struct model_opt *d = opt_find(opt);
	char key[40];
	snprintf(key, sizeof key, " %s ", model);
	return d && strstr(d->models, key) != NULL;
}

int model_opt_finest(const char *opt)
{
	const struct model_opt *d = opt_find(opt);
	return d ? d->finest : 0;
}

bool parse_u64(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static int bad(char *err, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t cap, const char *fmt, ...)
{
	if (cap) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, cap, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Number with an optional time unit (ns, us, ms, s); plain numbers are ns. */
bool parse_ns(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return false;
	uint64_t mul = 1;
	if (!*end || !strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1000;
	else if (!strcmp(end, "ms"))
		mul = 1000000;
	else if (!strcmp(end, "s"))
		mul = 1000000000;
	else
		return false;
	if (v > UINT64_MAX / mul)
		return false;
	*out = v * mul;
	return true;
}

static const char *const hash_names[] = { "mod", "murmur" };
const char *const estimator_names[ESTIMATORS] = { "comdetective", "owner", "auto" };
const char *const sync_names[3] = { "include", "exclude", "only" };
const char *const estimator_summaries[ESTIMATORS] = {
	"a detected event weighs its sample's period (ComDetective's)",
	"a sampled access: P/J x its line's transfers over J accesses (emulate, monitor traces;\n"
	"                     there P/q for P, q the share of sampled stores whose window opened;\n"
	"                     without effect: --expiry, --board-size, --hash, --watchpoints,\n"
	"                     --period-multiplier, --line-watches, --line-watch-life)",
	"owner on a trace with line monitor records (commrec --sampler inst), else comdetective",
};

enum estimator_kind estimator_pick(enum estimator_kind e, const char *model, bool monitor)
{
	if (e != ESTIMATOR_AUTO)
		return e;
	bool cd = !model || !strcmp(model, "comdetective");
	return cd && monitor ? ESTIMATOR_OWNER : ESTIMATOR_COMDETECTIVE;
}

enum estimator_kind estimator_resolve(enum estimator_kind e, const char *model,
                                      const struct ct_trace *t)
{
	return estimator_pick(e, model, owner_monitor_trace(t));
}

/* The options only ComDetective's step reads (the bulletin board, the
 * watchpoints and line watches, the kind filter): the owner estimator
 * replaces that step, in the comdetective model (model_comdetective.c:
 * the monitor's records only) and in the emulate model (model_emulate.c:
 * the exact model's owner windows, no arms). */
static const char owner_ignored[] =
	" expiry board-size hash watchpoints period-multiplier line-watches line-watch-life ";

bool estimator_ignores(enum estimator_kind e, const char *opt)
{
	char key[40];
	snprintf(key, sizeof key, " %s ", opt);
	return e == ESTIMATOR_OWNER && strstr(owner_ignored, key) != NULL;
}

void warn_ignored_options(const struct model_opts *o, enum estimator_kind e)
{
	struct model_opts d;
	model_opts_default(&d);
	char v[64], dv[64];
	for (size_t i = 0; model_opt_names[i]; i++) {
		const char *n = model_opt_names[i];
		if (estimator_ignores(e, n) && strcmp(model_opts_format(o, n, v, sizeof v),
		                                      model_opts_format(&d, n, dv, sizeof dv)))
			ana_warn("--%s %s has no effect with the owner estimator; --estimator "
			         "comdetective to use it", n, v);
	}
}

bool model_opts_usable(const struct model_opts *o, const char *model, const struct ct_trace *t,
                       char *why, size_t cap)
{
	if (estimator_resolve(o->estimator, model, t) != ESTIMATOR_OWNER ||
	    (model && !strcmp(model, "emulate")))
		return true;
	uint64_t j, p;
	bool cd = !model || !strcmp(model, "comdetective");
	if (cd && t && owner_monitor_params(t, &j, &p))
		return true;
	snprintf(why, cap, "--estimator owner needs every access after a sampled store: it runs "
	         "with --model emulate on a full trace, or with --model comdetective on a trace "
	         "recorded with the line monitor (commrec --sampler inst --owner-window J)%s",
	         cd ? "; this trace has no line monitor records" : "");
	return false;
}

static int parse_model(struct model_opts *o, const char *value, char *err, size_t cap)
{
	const struct model_ops *m = model_find(value);
	if (m) {
		o->model = m->name;
		return 0;
	}
	char list[256] = "";
	for (size_t i = 0; all_models[i]; i++) {
		if (i)
			strncat(list, ", ", sizeof list - strlen(list) - 1);
		strncat(list, all_models[i]->name, sizeof list - strlen(list) - 1);
	}
	return bad(err, cap, "--model: unknown model '%s' (known: %s)", value, list);
}

static int parse_expiry(struct model_opts *o, const char *value, char *err, size_t cap)
{
	uint64_t v;
	if (!strcmp(value, "comdetective")) {
		o->expiry = EXPIRY_COMDETECTIVE;
		o->expiry_value = 0;
	} else if (!strncmp(value, "ns:", 3) && parse_ns(value + 3, &v)) {
		o->expiry = EXPIRY_NS;
		o->expiry_value = v;
	} else if (!strncmp(value, "samples:", 8) && parse_u64(value + 8, &v) && v >= 1) {
		o->expiry = EXPIRY_SAMPLES;
		o->expiry_value = v;
	} else {
		return bad(err, cap, "--expiry: '%s' is not comdetective, ns:N or samples:N (N >= 1)",
		           value);
	}
	return 0;
}

static int parse_opt(const struct model_opt *d, struct model_opts *o, const char *value,
                     char *err, size_t cap)
{
	char *at = (char *)o + d->field;
	uint64_t v;
	switch (d->type) {
	case OPT_MODEL:
		return parse_model(o, value, err, cap);
	case OPT_EXPIRY:
		return parse_expiry(o, value, err, cap);
	case OPT_UINT:
	case OPT_WATCHPOINTS:
		if (!parse_u64(value, &v) || v < d->min || v > d->max)
			return bad(err, cap, "--%s: '%s' is not a number from %" PRIu64 " to %" PRIu64,
			           d->name, value, d->min, d->max);
		*(unsigned *)at = d->type == OPT_WATCHPOINTS && !v ? MODEL_WP_NONE : (unsigned)v;
		return 0;
	case OPT_POW2:
		if (!parse_u64(value, &v) || v < d->min || v > d->max || (v & (v - 1)))
			return bad(err, cap, "--%s: '%s' is not a power of two from %" PRIu64 " to %" PRIu64,
			           d->name, value, d->min, d->max);
		*(unsigned *)at = (unsigned)v;
		return 0;
	case OPT_HASH:
		for (size_t i = 0; i < sizeof hash_names / sizeof *hash_names; i++)
			if (!strcmp(value, hash_names[i])) {
				*(enum hash_kind *)at = (enum hash_kind)i;
				return 0;
			}
		return bad(err, cap, "--%s: '%s' is not mod or murmur", d->name, value);
	case OPT_ESTIMATOR:
		for (size_t i = 0; i < ESTIMATORS; i++)
			if (!strcmp(value, estimator_names[i])) {
				*(enum estimator_kind *)at = (enum estimator_kind)i;
				return 0;
			}
		return bad(err, cap, "--%s: '%s' is not comdetective, owner or auto", d->name, value);
	case OPT_SYNC:
		for (size_t i = 0; i < 3; i++)
			if (!strcmp(value, sync_names[i])) {
				*(enum sync_kind *)at = (enum sync_kind)i;
				return 0;
			}
		return bad(err, cap, "--%s: '%s' is not include, exclude or only", d->name, value);
	case OPT_TIME:
		if (!parse_ns(value, &v) || v < d->min)
			return bad(err, cap, "--%s: '%s' is not a time above 0 (ns, or with a unit: us, ms, s)",
			           d->name, value);
		*(uint64_t *)at = v;
		return 0;
	case OPT_PROB: {
		char *end;
		errno = 0;
		double x = strtod(value, &end);
		if (!*value || *end || errno || !(x > 0 && x < 1))
			return bad(err, cap, "--%s: '%s' is not a probability between 0 and 1", d->name, value);
		*(double *)at = x;
		return 0;
	}
	}
	return 1;
}

static void format_opt(const struct model_opt *d, const struct model_opts *o, char *buf,
                       size_t cap)
{
	const char *at = (const char *)o + d->field;
	switch (d->type) {
	case OPT_MODEL:
		snprintf(buf, cap, "%s", o->model ? o->model : "comdetective");
		return;
	case OPT_EXPIRY:
		if (o->expiry == EXPIRY_NS)
			snprintf(buf, cap, "ns:%" PRIu64, o->expiry_value);
		else if (o->expiry == EXPIRY_SAMPLES)
			snprintf(buf, cap, "samples:%" PRIu64, o->expiry_value);
		else
			snprintf(buf, cap, "comdetective");
		return;
	case OPT_UINT:
	case OPT_POW2:
	case OPT_WATCHPOINTS: {
		unsigned v = *(const unsigned *)at;
		if (d->type == OPT_WATCHPOINTS && v == MODEL_WP_NONE)
			v = 0;
		else if (!v && d->unset) {
			snprintf(buf, cap, "%s", d->unset);
			return;
		}
		snprintf(buf, cap, "%u", v);
		return;
	}
	case OPT_HASH:
		snprintf(buf, cap, "%s", hash_names[*(const enum hash_kind *)at == HASH_MURMUR]);
		return;
	case OPT_ESTIMATOR:
		snprintf(buf, cap, "%s", estimator_names[*(const enum estimator_kind *)at % ESTIMATORS]);
		return;
	case OPT_SYNC:
		snprintf(buf, cap, "%s", sync_names[*(const enum sync_kind *)at % 3]);
		return;
	case OPT_TIME:
		snprintf(buf, cap, "%" PRIu64, *(const uint64_t *)at);
		return;
	case OPT_PROB: {
		double x = *(const double *)at;
		if (x > 0)
			snprintf(buf, cap, "%g", x);
		else
			snprintf(buf, cap, "%s", d->unset ? d->unset : "0");
		return;
	}
	}
}

void model_opts_default(struct model_opts *o)
{
	memset(o, 0, sizeof *o);
	for (size_t i = 0; i < NOPTS; i++)
		if (opt_table[i].dflt)
			parse_opt(&opt_table[i], o, opt_table[i].dflt, NULL, 0);
}

int model_opts_parse(struct model_opts *o, const char *name, const char *value,
                     char *err, size_t errcap)
{
	const struct model_opt *d = opt_find(name);
	return d ? parse_opt(d, o, value ? value : "", err, errcap) : 1;
}

const char *model_opts_format(const struct model_opts *o, const char *name,
                              char *buf, size_t cap)
{
	const struct model_opt *d = opt_find(name);
	if (!d)
		return NULL;
	format_opt(d, o, buf, cap);
	return buf;
}

/* Words of text from column `col` on, wrapped before column 81 and at
 * '\n'; the first line continues where the caller left off (column at). */
static void print_wrapped_at(FILE *f, const char *text, int at, int col)
{
	bool first = true;
	for (const char *p = text; *p;) {
		size_t wl = strcspn(p, " \n");
		if (!first && at + 1 + (int)wl > 80) {
			fprintf(f, "\n%*s", col, "");
			at = col;
		} else if (!first) {
			fputc(' ', f);
			at++;
		}
		fprintf(f, "%.*s", (int)wl, p);
		at += (int)wl;
		first = false;
		p += wl;
		if (*p == '\n')
			at = 80;   /* break before the next word */
		p += strspn(p, " \n");
	}
	fputc('\n', f);
}

void model_opts_usage(FILE *f)
{
	fprintf(f, "Model options:\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const struct model_opt *d = &opt_table[i];
		char head[64], help[256];
		char letter = cli_model_letter(d->name);
		char shortname[8] = "";
		if (letter)
			snprintf(shortname, sizeof shortname, "-%c, ", letter);
		snprintf(head, sizeof head, "%s--%s %s", shortname, d->name, d->arg);
		if (d->dflt)
			snprintf(help, sizeof help, "%s (default %s)%s", d->help, d->dflt,
			         d->type == OPT_MODEL || d->type == OPT_ESTIMATOR ? ":" : "");
		else
			snprintf(help, sizeof help, "%s", d->help);
		int at = fprintf(f, "  %-31s%s", head, strlen(head) > 31 ? "   " : "");
		print_wrapped_at(f, help, at, 33);
		for (size_t m = 0; d->type == OPT_MODEL && all_models[m]; m++)
			fprintf(f, "      %-14s %s\n", all_models[m]->name, all_models[m]->summary);
		for (size_t k = 0; d->type == OPT_ESTIMATOR && k < ESTIMATORS; k++)
			fprintf(f, "      %-14s %s\n", estimator_names[k], estimator_summaries[k]);
	}
}

void model_opt_list(FILE *f, int col, int at)
{
	char list[512] = "";
	for (size_t i = 0; i < NOPTS; i++) {
		size_t l = strlen(list);
		snprintf(list + l, sizeof list - l, "%s%s", opt_table[i].name, i + 1 < NOPTS ? ", " : ";");
	}
	fputc(' ', f);
	print_wrapped_at(f, list, at + 1, col);
}

struct ct_trace *ana_trace_open(const char *path, struct ct_error *err)
{
	struct ct_trace *t = ct_trace_open(path, err);
	struct stat st;
	char meta[4096];
	if (!t && !stat(path, &st) && S_ISDIR(st.st_mode) &&
	    (size_t)snprintf(meta, sizeof meta, "%s/meta.zst", path) < sizeof meta &&
	    access(meta, F_OK))
		snprintf(err->msg, sizeof err->msg, "%s: a directory that is neither a trace nor a "
		         "commrec spool (a spool holds meta.zst and the threads' files)", path);
	return t;
}

struct ct_trace *ana_open_trace(const char *path)
{
	struct ct_error err = {{0}};
	struct ct_trace *t = ana_trace_open(path, &err);
	if (!t)
		fprintf(stderr, "commanalyze: %s\n", err.msg);
	return t;
}

int ana_stdout_to(const char *path)
{
	if (!path || freopen(path, "w", stdout))
		return 0;
	ana_err("cannot write %s: %s", path, strerror(errno));
	return EXIT_BADTRACE;
}

int ana_stdout_done(const char *path)
{
	if (!fflush(stdout) && !ferror(stdout))
		return 0;
	ana_err("cannot write %s: %s", path ? path : "standard output", strerror(errno));
	return EXIT_BADTRACE;
}

/* Messages are written whole, with one fputs on the unbuffered stderr (one
 * write: a sweep's workers, and MPI ranks sharing a terminal, do not cut
 * into each other's lines), under msg_lock, which also guards the warnings
 * already printed while ana_warn_once is on. */
static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;
static bool msg_once;
static char *msg_seen[64];       /* the warnings printed (copies) */
static size_t msg_nseen;

void ana_warn_once(bool on)
{
	pthread_mutex_lock(&msg_lock);
	msg_once = on;
	while (msg_nseen)
		free(msg_seen[--msg_nseen]);
	pthread_mutex_unlock(&msg_lock);
}

/* Is text a warning already printed (ana_warn_once)?  Notes it if not.
 * Under msg_lock. */
static bool msg_repeated(const char *text)
{
	if (!msg_once)
		return false;
	for (size_t i = 0; i < msg_nseen; i++)
		if (!strcmp(msg_seen[i], text))
			return true;
	if (msg_nseen < sizeof msg_seen / sizeof *msg_seen && (msg_seen[msg_nseen] = strdup(text)))
		msg_nseen++;
	return false;
}

static void vmsg(const char *prefix, bool warning, const char *fmt, va_list ap)
{
	char small[1024], *buf = small;
	va_list aq;
	va_copy(aq, ap);
	int pl = snprintf(small, sizeof small, "commanalyze: %s", prefix);
	int l = vsnprintf(small + pl, sizeof small - (size_t)pl, fmt, ap);
	size_t len = l < 0 ? (size_t)pl : (size_t)pl + (size_t)l;   /* without the newline */
	if (len + 2 > sizeof small && (buf = malloc(len + 2)) != NULL) {
		memcpy(buf, small, (size_t)pl);
		vsnprintf(buf + pl, len + 1 - (size_t)pl, fmt, aq);
	} else if (len + 2 > sizeof small) {
		buf = small;                 /* no memory: the message cut */
		len = sizeof small - 2;
	}
	va_end(aq);
	buf[len] = '\n';
	buf[len + 1] = 0;
	pthread_mutex_lock(&msg_lock);
	if (!warning || !msg_repeated(buf))
		fputs(buf, stderr);
	pthread_mutex_unlock(&msg_lock);
	if (buf != small)
		free(buf);
}

void ana_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", false, fmt, ap);
	va_end(ap);
}

void ana_warn(const char *fmt, ...)
{
	if (ana_verbosity < 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning: ", true, fmt, ap);
	va_end(ap);
}
