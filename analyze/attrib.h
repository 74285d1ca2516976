/* Attribution: every communication event named by its data and its code.
 *
 *   record consumer   follows the replay: live heap blocks (by address, with
 *                     free, realloc and reuse), allocation call sites, mmap
 *                     regions, thread stacks and TLS blocks.  Put it BEFORE
 *                     the model in the consumer array, so that the state is
 *                     current when the model emits events for a record.
 *   event consumer    attributes each comm_event (both accesses) to an
 *                     object (static variable and member, heap group by
 *                     allocation call path, stack or TLS of a thread, mmap
 *                     region, unknown) and to code (function, file:line),
 *                     and accumulates per-object and per-cache-line detail.
 *
 * Symbols come from the trace's SYMBOLS section, or, with
 * from_binaries, from the files named in the MAPS section. */
#ifndef CT_ATTRIB_H
#define CT_ATTRIB_H

#include <stdio.h>

#include "analysis.h"
#include "symtab.h"

enum obj_kind {
	OBJ_STATIC = 0, OBJ_HEAP = 1, OBJ_STACK = 2, OBJ_TLS = 3, OBJ_MMAP = 4, OBJ_UNKNOWN = 5,
};
const char *obj_kind_name(unsigned kind);  /* "static", "heap", ... */

struct attrib_opts {
	bool from_binaries;      /* --symbols-from-binaries */
	bool no_demangle;        /* --no-demangle: names as in the binary */
	unsigned line_size;      /* resolved line size */
	size_t nthreads;         /* thread index space */
};

struct attrib;

/* Readable symbol names (demangle.c): C++ names demangled, OpenMP regions
 * outlined by GCC as "parent()._omp_fn.N", gfortran module procedures as
 * "module::name".  A malloc'ed string, or NULL when name is not mangled
 * (then it is shown as it is). */
char *symbol_demangle(const char *name);
/* Every function and variable name of s made readable, in place. */
void symtab_demangle(struct symtab *s);

/* Symbols are loaded here; problems become notes (attrib_notes), never
 * errors.  NULL only when out of memory. */
struct attrib *attrib_create(struct ct_trace *t, const struct attrib_opts *o);
void attrib_free(struct attrib *a);
struct record_consumer attrib_record_consumer(struct attrib *a);
struct event_consumer attrib_event_consumer(struct attrib *a);

/* Remarks about missing symbols ("p: stripped", "no embedded symbols ..."),
 * one per line; "" when none. */
const char *attrib_notes(const struct attrib *a);

/* The object (an index of the attribution's objects) at addr now, during
 * the replay (UINT32_MAX: none). */
uint32_t attrib_object(struct attrib *a, uint64_t addr);

/* Name of the object at addr now (after the replay: as it was last seen).
 * For tests and the dump command. */
const char *attrib_object_name(struct attrib *a, uint64_t addr, char *buf, size_t cap);

/* ---- results -------------------------------------------------------------- */

enum attrib_format { AF_TEXT = 0, AF_CSV = 1, AF_JSON = 2, AF_DOT = 3 /* functions only */ };
int attrib_format_parse(const char *s, enum attrib_format *f);
const char *attrib_format_name(enum attrib_format f);   /* "text", "csv", "json", "dot" */

/* Objects ranked by the weight of all events (default), or of the true or
 * the false sharing events only (then objects without them are left out). */
void attrib_rank_by(struct attrib *a, enum mx_kind kind);
/* Objects, ranked (top 0 = all). */
int attrib_write_objects(struct attrib *a, FILE *f, enum attrib_format fmt, size_t top);
/* The thread matrices of one object (directed, row dst, column src; sparse
 * past MX_DENSE_MAX rows): NULL if no object has that name (or out of
 * memory).  Free with matrices_free(). */
struct matrices *attrib_object_matrix(struct attrib *a, const char *name);
/* Cache lines ranked by weight, with per-offset detail. */
int attrib_write_lines(struct attrib *a, FILE *f, enum attrib_format fmt, size_t top);
/* For the report: "Top objects" and "Top lines" sections in text. */
void attrib_report_sections(struct attrib *a, FILE *f, size_t top_objects, size_t top_lines);

/* ---- running it with an analysis (ana.h: analysis_run_hooks) ------------------ */

struct analysis;
struct analysis_hooks;
/* attrib_hooks_init(&h, &ah, from_binaries) then analysis_run_hooks(..., &h):
 * ah.a holds the attribution afterwards (NULL if the run failed before the
 * replay); free it with attrib_free. */
struct attrib_hook {
	struct attrib *a;
	bool from_binaries;
	bool no_demangle;        /* set after attrib_hooks_init */
	struct fnflow *ff;       /* the functions command: its flows, else NULL */
	bool functions;          /* set after attrib_hooks_init: also create ff */
	bool by_threads;         /* ff: per thread pair */
	struct analysis_hooks *h;
};
void attrib_hooks_init(struct analysis_hooks *h, struct attrib_hook *ah, bool from_binaries);

/* ---- commands (cmd_objects.c, cmd_lines.c, functions.c) ------------------- */
int cmd_objects(int argc, char **argv);
int cmd_functions(int argc, char **argv);
int cmd_lines(int argc, char **argv);

#endif
