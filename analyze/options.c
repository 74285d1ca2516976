/* Model options: defaults, the one parser shared by report, matrix and
 * (later) sweep, and their canonical text. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"

#define WINDOW_DEFAULT_NS 1000000ull  /* 1 ms */
#define BOARD_SIZE_MAX (1u << 26)

const char *const model_opt_names[] = {
	"model", "expiry", "board-size", "hash", "line-size", "watchpoints",
	"period-multiplier", "window", "signature-size", "fp-rate", "emulate-period", NULL,
};

bool model_opt_relevant(const char *model, const char *opt)
{
	static const struct { const char *model, *opts; } rel[] = {
		{ "comdetective", " expiry board-size hash line-size watchpoints period-multiplier " },
		{ "window", " line-size period-multiplier window " },
		{ "exact", " line-size " },
		{ "signature", " signature-size fp-rate " },
		{ "emulate", " expiry board-size hash line-size watchpoints emulate-period " },
	};
	char key[40];
	snprintf(key, sizeof key, " %s ", opt);
	for (size_t i = 0; i < sizeof rel / sizeof *rel; i++)
		if (model && !strcmp(model, rel[i].model))
			return strstr(rel[i].opts, key) != NULL;
	return true;
}

void model_opts_default(struct model_opts *o)
{
	memset(o, 0, sizeof *o);
	o->expiry = EXPIRY_COMDETECTIVE;
	o->board_size = 127;
	o->hash = HASH_MOD;
	o->line_size = 0;
	o->watchpoints = 0;
	o->period_multiplier = 1;
	o->window_ns = WINDOW_DEFAULT_NS;
	o->model = "comdetective";
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
static bool parse_ns(const char *s, uint64_t *out)
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

int model_opts_parse(struct model_opts *o, const char *name, const char *value,
                     char *err, size_t errcap)
{
	uint64_t v;
	if (!value)
		value = "";
	if (!strcmp(name, "model")) {
		const struct model_ops *m = model_find(value);
		if (!m) {
			char list[256] = "";
			for (size_t i = 0; all_models[i]; i++) {
				if (i)
					strncat(list, ", ", sizeof list - strlen(list) - 1);
				strncat(list, all_models[i]->name, sizeof list - strlen(list) - 1);
			}
			return bad(err, errcap, "--model: unknown model '%s' (known: %s)", value, list);
		}
		o->model = m->name;
		return 0;
	}
	if (!strcmp(name, "expiry")) {
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
			return bad(err, errcap, "--expiry: '%s' is not comdetective, ns:N or samples:N (N >= 1)",
			           value);
		}
		return 0;
	}
	if (!strcmp(name, "board-size")) {
		if (!parse_u64(value, &v) || v < 1 || v > BOARD_SIZE_MAX)
			return bad(err, errcap, "--board-size: '%s' is not a number from 1 to %u", value,
			           BOARD_SIZE_MAX);
		o->board_size = (unsigned)v;
		return 0;
	}
	if (!strcmp(name, "hash")) {
		if (!strcmp(value, "mod"))
			o->hash = HASH_MOD;
		else if (!strcmp(value, "murmur"))
			o->hash = HASH_MURMUR;
		else
			return bad(err, errcap, "--hash: '%s' is not mod or murmur", value);
		return 0;
	}
	if (!strcmp(name, "line-size")) {
		if (!parse_u64(value, &v) || v < 8 || v > 4096 || (v & (v - 1)))
			return bad(err, errcap, "--line-size: '%s' is not a power of two from 8 to 4096", value);
		o->line_size = (unsigned)v;
		return 0;
	}
	if (!strcmp(name, "watchpoints")) {
		if (!parse_u64(value, &v) || v > CT_WP_MAX)
			return bad(err, errcap, "--watchpoints: '%s' is not a number from 0 to %d", value,
			           CT_WP_MAX);
		o->watchpoints = v ? (unsigned)v : MODEL_WP_NONE;
		return 0;
	}
	if (!strcmp(name, "period-multiplier")) {
		if (!parse_u64(value, &v) || v < 1 || v > 1000000)
			return bad(err, errcap, "--period-multiplier: '%s' is not a number from 1 to 1000000",
			           value);
		o->period_multiplier = (unsigned)v;
		return 0;
	}
	if (!strcmp(name, "window")) {
		if (!parse_ns(value, &v) || v < 1)
			return bad(err, errcap, "--window: '%s' is not a time above 0 (ns, or with a unit: us, ms, s)",
			           value);
		o->window_ns = v;
		return 0;
	}
	if (!strcmp(name, "signature-size")) {
		if (!parse_u64(value, &v) || v < 1 || v > (1u << 30))
			return bad(err, errcap, "--signature-size: '%s' is not a number from 1 to %u", value,
			           1u << 30);
		o->signature_size = (unsigned)v;
		return 0;
	}
	if (!strcmp(name, "fp-rate")) {
		char *end;
		errno = 0;
		double d = strtod(value, &end);
		if (!*value || *end || errno || !(d > 0 && d < 1))
			return bad(err, errcap, "--fp-rate: '%s' is not a probability between 0 and 1", value);
		o->fp_rate = d;
		return 0;
	}
	if (!strcmp(name, "emulate-period")) {
		if (!parse_u64(value, &v) || v < 1 || v > (1u << 31))
			return bad(err, errcap, "--emulate-period: '%s' is not a number from 1 to %u", value,
			           1u << 31);
		o->emulate_period = (unsigned)v;
		return 0;
	}
	return 1;
}

const char *model_opts_format(const struct model_opts *o, const char *name,
                              char *buf, size_t cap)
{
	if (!strcmp(name, "model"))
		snprintf(buf, cap, "%s", o->model ? o->model : "comdetective");
	else if (!strcmp(name, "expiry")) {
		if (o->expiry == EXPIRY_NS)
			snprintf(buf, cap, "ns:%" PRIu64, o->expiry_value);
		else if (o->expiry == EXPIRY_SAMPLES)
			snprintf(buf, cap, "samples:%" PRIu64, o->expiry_value);
		else
			snprintf(buf, cap, "comdetective");
	} else if (!strcmp(name, "board-size"))
		snprintf(buf, cap, "%u", o->board_size);
	else if (!strcmp(name, "hash"))
		snprintf(buf, cap, "%s", o->hash == HASH_MURMUR ? "murmur" : "mod");
	else if (!strcmp(name, "line-size"))
		snprintf(buf, cap, "%u", o->line_size);
	else if (!strcmp(name, "watchpoints")) {
		if (o->watchpoints == MODEL_WP_NONE)
			snprintf(buf, cap, "0");
		else if (o->watchpoints)
			snprintf(buf, cap, "%u", o->watchpoints);
		else
			snprintf(buf, cap, "recorded");
	} else if (!strcmp(name, "period-multiplier"))
		snprintf(buf, cap, "%u", o->period_multiplier);
	else if (!strcmp(name, "window"))
		snprintf(buf, cap, "%" PRIu64, o->window_ns);
	else if (!strcmp(name, "signature-size")) {
		if (o->signature_size)
			snprintf(buf, cap, "%u", o->signature_size);
		else
			snprintf(buf, cap, "default");
	} else if (!strcmp(name, "fp-rate")) {
		if (o->fp_rate > 0)
			snprintf(buf, cap, "%g", o->fp_rate);
		else
			snprintf(buf, cap, "default");
	} else if (!strcmp(name, "emulate-period")) {
		if (o->emulate_period)
			snprintf(buf, cap, "%u", o->emulate_period);
		else
			snprintf(buf, cap, "default");
	} else
		return NULL;
	return buf;
}

int arg_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=') {
		*value = a + n + 1;
		return 1;
	}
	if (a[n])
		return 0;
	if (*i + 1 >= argc) {
		ana_err("%s needs a value", name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

int arg_trace(const char *cmd, const char *a, const char **path)
{
	if (a[0] == '-' && a[1]) {
		ana_err("%s: unknown option '%s'", cmd, a);
		return EXIT_USAGE;
	}
	if (*path) {
		ana_err("%s: one trace only ('%s' and '%s')", cmd, *path, a);
		return EXIT_USAGE;
	}
	*path = a;
	return 0;
}

int arg_trace_given(const char *cmd, const char *path, const char *usage)
{
	if (path)
		return 0;
	ana_err("%s: which trace? usage: commanalyze %s", cmd, usage);
	return EXIT_USAGE;
}

struct ct_trace *ana_open_trace(const char *path)
{
	struct ct_error err = {{0}};
	struct ct_trace *t = ct_trace_open(path, &err);
	if (!t)
		fprintf(stderr, "commanalyze: %s\n", err.msg);
	return t;
}

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "commanalyze: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void ana_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void ana_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

int model_args(struct model_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	if (a[0] != '-' || a[1] != '-')
		return 0;
	char name[64], err[256];
	const char *eq = strchr(a, '=');
	size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
	snprintf(name, sizeof name, "%.*s", (int)nl, a + 2);
	bool known = false;
	for (size_t k = 0; model_opt_names[k]; k++)
		known |= !strcmp(model_opt_names[k], name);
	if (!known)
		return 0;
	const char *val = eq ? eq + 1 : (*i + 1 < argc ? argv[*i + 1] : NULL);
	if (!val) {
		ana_err("--%s needs a value", name);
		return -1;
	}
	if (model_opts_parse(o, name, val, err, sizeof err)) {
		ana_err("%s", err);
		return -1;
	}
	if (!eq)
		++*i;
	return 1;
}
