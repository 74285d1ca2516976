/* cpu -> core and socket from the MACHINE section, and the line size. */
#include <stdlib.h>
#include <string.h>

#include "ana.h"

#define CPU_MAX 8192   /* cpu numbers from here on are ignored (hostile input) */

struct cpu_ent {
	long core, socket;  /* -1 unknown */
	bool seen;
};

/* Parse "cpu.N=core C socket S", "cpu.N.core=C", "cpu.N.socket=S" lines. */
static size_t parse_cpus(const char *text, size_t len, struct cpu_ent **out)
{
	struct cpu_ent *e = NULL;
	size_t n = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		char line[160];
		size_t l = (size_t)(le - p);
		p = nl ? nl + 1 : end;
		if (l >= sizeof line || l < 5 || memcmp(le - l, "cpu.", 4))
			continue;
		memcpy(line, le - l, l);
		line[l] = 0;
		char *q = line + 4, *eq = strchr(line, '=');
		if (!eq || *q < '0' || *q > '9')
			continue;
		char *r;
		long cpu = strtol(q, &r, 10);
		if (cpu < 0 || cpu >= CPU_MAX)
			continue;
		long core = -2, socket = -2;
		if (r == eq) {
			if (sscanf(eq + 1, "core %ld socket %ld", &core, &socket) != 2)
				continue;
		} else if (!strncmp(r, ".core=", 6)) {
			core = strtol(r + 6, NULL, 10);
		} else if (!strncmp(r, ".socket=", 8)) {
			socket = strtol(r + 8, NULL, 10);
		} else {
			continue;
		}
		if ((size_t)cpu >= n) {
			size_t nn = (size_t)cpu + 1;
			struct cpu_ent *ne = realloc(e, nn * sizeof *e);
			if (!ne)
				break;
			for (size_t i = n; i < nn; i++)
				ne[i] = (struct cpu_ent){ -1, -1, false };
			e = ne;
			n = nn;
		}
		e[cpu].seen = true;
		if (core != -2)
			e[cpu].core = core < 0 ? -1 : core;
		if (socket != -2)
			e[cpu].socket = socket < 0 ? -1 : socket;
	}
	*out = e;
	return n;
}

static int cmp_pair(const void *a, const void *b)
{
	const long *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	if (x[1] != y[1])
		return x[1] < y[1] ? -1 : 1;
	return 0;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

static char *dupf(const char *fmt, long a, long b)
{
	char buf[64];
	snprintf(buf, sizeof buf, fmt, a, b);
	return strdup(buf);
}

int topology_load(struct topology *t, struct ct_trace *tr)
{
	memset(t, 0, sizeof *t);
	size_t len = 0;
	const char *text = ct_trace_section(tr, CT_SEC_MACHINE, &len);
	struct cpu_ent *e = NULL;
	size_t n = text ? parse_cpus(text, len, &e) : 0;
	size_t seen = 0;
	for (size_t i = 0; i < n; i++)
		seen += e[i].seen;
	if (!seen) {
		free(e);
		t->identity = true;
		return 0;
	}
	/* cores: distinct (socket, core) pairs, unknown core = own core;
	 * sockets: distinct socket ids, unknown = 0 */
	long (*pairs)[2] = calloc(n, sizeof *pairs);
	long *socks = calloc(n, sizeof *socks);
	t->core = malloc(n * sizeof *t->core);
	t->socket = malloc(n * sizeof *t->socket);
	if (!pairs || !socks || !t->core || !t->socket)
		goto oom;
	t->ncpus = n;
	size_t np = 0, ns = 0;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].seen)
			continue;
		long s = e[i].socket < 0 ? 0 : e[i].socket;
		long c = e[i].core < 0 ? -1 - (long)i : e[i].core;
		pairs[np][0] = s;
		pairs[np][1] = c;
		np++;
		socks[ns++] = s;
	}
	qsort(pairs, np, sizeof *pairs, cmp_pair);
	qsort(socks, ns, sizeof *socks, cmp_long);
	size_t ucores = 0, usocks = 0;
	for (size_t i = 0; i < np; i++)
		if (!ucores || cmp_pair(pairs[ucores - 1], pairs[i]))
			memcpy(pairs[ucores++], pairs[i], sizeof *pairs);
	for (size_t i = 0; i < ns; i++)
		if (!usocks || socks[usocks - 1] != socks[i])
			socks[usocks++] = socks[i];
	t->ncores = ucores;
	t->nsockets = usocks;
	t->core_label = calloc(ucores, sizeof *t->core_label);
	t->socket_label = calloc(usocks, sizeof *t->socket_label);
	if (!t->core_label || !t->socket_label)
		goto oom;
	for (size_t i = 0; i < ucores; i++) {
		t->core_label[i] = pairs[i][1] < 0 ? dupf("cpu%ld", -1 - pairs[i][1], 0)
		                                   : dupf("S%ldC%ld", pairs[i][0], pairs[i][1]);
		if (!t->core_label[i])
			goto oom;
	}
	for (size_t i = 0; i < usocks; i++)
		if (!(t->socket_label[i] = dupf("S%ld", socks[i], 0)))
			goto oom;
	for (size_t i = 0; i < n; i++) {
		t->core[i] = t->socket[i] = UINT32_MAX;
		if (!e[i].seen)
			continue;
		long key[2] = { e[i].socket < 0 ? 0 : e[i].socket,
		                e[i].core < 0 ? -1 - (long)i : e[i].core };
		long (*f)[2] = bsearch(key, pairs, ucores, sizeof *pairs, cmp_pair);
		t->core[i] = (uint32_t)(f - pairs);
		for (size_t s = 0; s < usocks; s++)
			if (socks[s] == key[0])
				t->socket[i] = (uint32_t)s;
	}
	free(pairs);
	free(socks);
	free(e);
	return 0;
oom:
	free(pairs);
	free(socks);
	free(e);
	topology_free(t);
	t->identity = true;
	return -1;
}

void topology_free(struct topology *t)
{
	for (size_t i = 0; t->core_label && i < t->ncores; i++)
		free(t->core_label[i]);
	for (size_t i = 0; t->socket_label && i < t->nsockets; i++)
		free(t->socket_label[i]);
	free(t->core_label);
	free(t->socket_label);
	free(t->core);
	free(t->socket);
	memset(t, 0, sizeof *t);
}

bool filtered_trace_fits(struct ct_trace *tr, const char *model, unsigned line_size, char *why,
                         size_t cap)
{
	const struct ct_header *h = ct_trace_header(tr);
	char v[32];
	uint64_t f;
	if (!h || !(h->features & CT_FEAT_FILTERED))
		return true;
	if (strcmp(model, "exact") && model_needs_full_trace(model)) {
		snprintf(why, cap, "the %s model counts accesses: it needs every access "
		         "(commrec --full=all); this full trace left out the repeats that cannot "
		         "change the exact model (commrec --full)", model);
		return false;
	}
	if (!ct_trace_meta(tr, CT_SEC_CONFIG, "full_filter_line", v, sizeof v) || !parse_u64(v, &f) ||
	    f < 8 || f > 4096 || (f & (f - 1))) {
		snprintf(why, cap, "a filtered full trace without a valid full_filter_line in its CONFIG");
		return false;
	}
	if (line_size > f || line_size < f / 8) {
		snprintf(why, cap,
		         "--line-size %u: this full trace was filtered at %llu-byte lines (commrec --full): "
		         "it replays exactly at %llu to %llu bytes (record with --full=all for any size)",
		         line_size, (unsigned long long)f, (unsigned long long)(f / 8 < 8 ? 8 : f / 8),
		         (unsigned long long)f);
		return false;
	}
	return true;
}

unsigned resolve_line_size(const struct model_opts *o, struct ct_trace *tr,
                           const char **source)
{
	const char *src = "default";
	unsigned ls = 64;
	char v[32];
	uint64_t x;
	if (o && o->line_size) {
		ls = o->line_size;
		src = "option";
	} else if (ct_trace_meta(tr, CT_SEC_CONFIG, "line_size", v, sizeof v) && parse_u64(v, &x) &&
	           x >= 8 && x <= 4096 && !(x & (x - 1))) {
		ls = (unsigned)x;
		src = "config";
	} else if (ct_trace_meta(tr, CT_SEC_MACHINE, "cache_line_size", v, sizeof v) &&
	           parse_u64(v, &x) && x >= 8 && x <= 4096 && !(x & (x - 1))) {
		ls = (unsigned)x;
		src = "machine";
	}
	if (source)
		*source = src;
	return ls;
}
