/* Helpers for the analyzer unit tests: run a model over a hand-built trace
 * and read matrix cells. */
#ifndef CT_ANA_COMMON_H
#define CT_ANA_COMMON_H

#include <stdarg.h>

#include "check.h"
#include "tracebuild.h"
#include "ana.h"

/* Write b, run the analysis with options given as name, value pairs
 * (NULL-terminated), e.g. run(&b, &a, "expiry", "ns:100", NULL). */
static __attribute__((unused)) int run(struct tb *b, struct analysis *a, ...)
	__attribute__((sentinel));
static __attribute__((unused)) int run(struct tb *b, struct analysis *a, ...)
{
	struct model_opts o;
	model_opts_default(&o);
	va_list ap;
	va_start(ap, a);
	const char *name;
	while ((name = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		char err[256];
		if (model_opts_parse(&o, name, value, err, sizeof err)) {
			printf("# bad option %s=%s: %s\n", name, value, err);
			va_end(ap);
			return -1;
		}
	}
	va_end(ap);
	const char *path = b->written ? b->path : tb_write(b);
	if (!path) {
		printf("# cannot write the trace\n");
		return -1;
	}
	int rc = analysis_run(a, path, &o, false);
	if (rc || a->damaged) {
		printf("# analysis failed: %d %s\n", rc, a->err.msg);
		return -1;
	}
	return 0;
}

/* Directed cell: row dst, column src. */
static __attribute__((unused)) double cell(const struct analysis *a, enum mx_index ix, enum mx_kind k, size_t dst,
                   size_t src)
{
	const struct matrix *m = matrices_get(a->mx, ix, k);
	if (dst >= m->n || src >= m->n)
		return 0;
	return m->cell[dst * m->n + src];
}

/* Sum of all cells of a matrix. */
static __attribute__((unused)) double total(const struct analysis *a, enum mx_index ix, enum mx_kind k)
{
	const struct matrix *m = matrices_get(a->mx, ix, k);
	double s = 0;
	for (size_t i = 0; i < m->n * m->n; i++)
		s += m->cell[i];
	return s;
}

static __attribute__((unused)) uint64_t nevents(const struct analysis *a, enum comm_via via)
{
	const struct mx_totals *t = matrices_totals(a->mx);
	return t->events[via][0] + t->events[via][1];
}

#define L(x) ((uint64_t)(x))
#define ST CT_ACCESS_STORE
#define LD CT_ACCESS_LOAD

#endif
