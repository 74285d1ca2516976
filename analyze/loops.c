/* Loops from the binary: each communication event attributed to the
 * innermost loop around its receiving access (the event's ip), as a tree
 * (program) -> function -> loops, nested as in the code (DiscoPoP's
 * per-loop matrices, from the binary instead of the source).
 *
 * How loops are found: the functions that events fall in are decoded with
 * Zydis from the binaries named in the trace's MAPS section (the files must
 * be those that ran, on this machine); every relative jump or conditional
 * branch to an earlier address of the same function is a back edge, and the
 * loop is the address range [target, end of the branch].  Back edges to the
 * same header make one loop (the widest range).  This is the natural loop
 * of compiler-laid-out code when the loop body is contiguous; code that the
 * compiler moved out of the range (cold paths) counts in the enclosing loop
 * or the function.  A loop is named by the first line of its range that is
 * its function's own, not an inlined callee's ("loop:23"; ranges with the
 * same first line, versions of one source loop side by side or nested, are
 * one node) and located by those lines ("file.c:23-31", DWARF lines). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "ana.h"
#include "attrib.h"
#include "loops.h"
#include "symtab.h"

struct loop_iv {
	uint64_t lo, hi;            /* runtime addresses */
	size_t node;
};

struct loop_fn {
	uint64_t lo, hi;            /* runtime addresses of the function */
	size_t node;
	struct loop_iv *lp;         /* outer loops first (by lo, then widest) */
	size_t nlp;
};

struct loops {
	struct regions *r;
	struct symtab syms;
	bool have_syms;
	struct loop_fn *fn;
	size_t nfn, cap;
	size_t last;                /* the last function hit */
	ZydisDecoder dec;
	uint64_t no_function;       /* events whose ip is in no known function */
	uint64_t no_code;           /* functions whose code could not be read */
};

/* Back edges of the code at runtime address base: loops into *lp. */
static size_t find_loops(const ZydisDecoder *dec, const uint8_t *code, size_t len, uint64_t base,
                         struct loop_iv **lp)
{
	size_t n = 0, cap = 0;
	*lp = NULL;
	for (size_t off = 0; off < len;) {
		ZydisDecodedInstruction in;
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, code + off, len - off, &in))) {
			off++;              /* padding or data: resynchronize */
			continue;
		}
		uint64_t end = base + off + in.length;
		if ((in.meta.category == ZYDIS_CATEGORY_COND_BR ||
		     in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) &&
		    in.raw.imm[0].is_relative) {
			int64_t d = in.raw.imm[0].value.s;
			uint64_t target = end + (uint64_t)d;
			if (d < 0 && target >= base && target < end) {
				size_t k;
				for (k = 0; k < n && (*lp)[k].lo != target; k++)
					;
				if (k < n) {
					if (end > (*lp)[k].hi)
						(*lp)[k].hi = end;
				} else {
					if (n == cap) {
						cap = cap ? 2 * cap : 8;
						struct loop_iv *v = realloc(*lp, cap * sizeof *v);
						if (!v)
							return n;
						*lp = v;
					}
					(*lp)[n++] = (struct loop_iv){ target, end, REGION_NONE };
				}
			}
		}
		off += in.length;
	}
	return n;
}

size_t loops_in_code(const uint8_t *code, size_t len, uint64_t base, uint64_t (*range)[2],
                     size_t cap)
{
	ZydisDecoder dec;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	struct loop_iv *lp;
	size_t n = find_loops(&dec, code, len, base, &lp);
	for (size_t i = 0; i < n && i < cap; i++) {
		range[i][0] = lp[i].lo;
		range[i][1] = lp[i].hi;
	}
	free(lp);
	return n;
}

static int cmp_outer_first(const void *x, const void *y)
{
	const struct loop_iv *a = x, *b = y;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->hi > b->hi ? -1 : a->hi < b->hi;
}

/* The source lines that are a function's own: in its file, from its first
 * line up to the start of the next function there (its code's lines in
 * other files, or outside that span, are those of inlined callees).
 * Outlined OpenMP regions lie inside their parent's span: they do not end
 * it. */
struct own_lines {
	const char *file;           /* NULL: unknown */
	unsigned first, end;        /* [first, end) */
};

static void own_lines_of(const struct loops *L, const struct st_module *m,
                         const struct st_func *f, struct own_lines *o)
{
	struct st_code c, g;
	*o = (struct own_lines){ NULL, 0, UINT_MAX };
	if (!symtab_code(&L->syms, f->start + m->bias, &c) || !c.file || !c.line)
		return;
	o->file = c.file;
	o->first = c.line;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const char *name = st_str(m, m->funcs[i].name);
		if (name && !strstr(name, "._omp_fn.") &&
		    symtab_code(&L->syms, m->funcs[i].start + m->bias, &g) && g.file &&
		    g.line > o->first && g.line < o->end && !strcmp(g.file, o->file))
			o->end = g.line;
	}
}

/* The lines [first, last] of [lo, hi): those of its function's own code
 * (own), or for a loop of inlined code only, those in the header's file:
 * "file.c:23-31" (the header's line is not always the first: compilers
 * often put the condition at the bottom and enter the loop there). */
static void loop_where(const struct loops *L, const struct own_lines *own, uint64_t lo,
                       uint64_t hi, char *buf, size_t cap, unsigned *first_line)
{
	struct st_code c;
	*first_line = 0;
	buf[0] = 0;
	if (!symtab_code(&L->syms, lo, &c) || !c.file)
		return;
	unsigned first = c.line, last = c.line, ofirst = UINT_MAX, olast = 0;
	const struct st_module *m = c.mod;
	for (size_t i = 0; i < m->nlines; i++) {
		const struct st_line *l = &m->lines[i];
		uint64_t a = l->addr + m->bias;
		if (a < lo || a >= hi || l->file >= m->nfiles || !l->line)
			continue;
		const char *f = st_str(m, m->files[l->file]);
		if (!f)
			continue;
		if (!strcmp(f, c.file)) {
			first = l->line < first ? l->line : first;
			last = l->line > last ? l->line : last;
		}
		if (own->file && l->line >= own->first && l->line < own->end &&
		    !strcmp(f, own->file)) {
			ofirst = l->line < ofirst ? l->line : ofirst;
			olast = l->line > olast ? l->line : olast;
		}
	}
	const char *file = c.file;
	if (olast) {
		file = own->file;
		first = ofirst;
		last = olast;
	}
	*first_line = first;
	if (first == last)
		snprintf(buf, cap, "%s:%u", file, first);
	else
		snprintf(buf, cap, "%s:%u-%u", file, first, last);
}

static void set_where(struct regions *r, size_t node, const char *where)
{
	char *w = strdup(where);
	if (!w) {
		r->oom = true;
		return;
	}
	free(r->node[node].where);
	r->node[node].where = w;
}

/* The loop node named name around a new loop (parent and the loops
 * around it, up to the function's node fn_node) or beside it (a child of
 * parent), or REGION_NONE. */
static size_t same_named_loop(const struct regions *r, size_t fn_node, size_t parent,
                              const char *name)
{
	for (size_t up = parent; up != fn_node; up = r->node[up].parent)
		if (!strcmp(r->node[up].name, name))
			return up;
	size_t it = 0, ch;
	while ((ch = regions_next_child(r, parent, &it)) != REGION_NONE)
		if (!strcmp(r->node[ch].name, name))
			return ch;
	return REGION_NONE;
}

/* The function around ip, its loops found and its nodes made; NULL when ip
 * is in no known function. */
static struct loop_fn *function_of(struct loops *L, uint64_t ip)
{
	if (L->last < L->nfn && ip >= L->fn[L->last].lo && ip < L->fn[L->last].hi)
		return &L->fn[L->last];
	for (size_t i = 0; i < L->nfn; i++)
		if (ip >= L->fn[i].lo && ip < L->fn[i].hi)
			return &L->fn[L->last = i];
	const struct st_module *m = L->have_syms ? symtab_module(&L->syms, ip) : NULL;
	const struct st_func *f = m ? symtab_func(m, ip - m->bias) : NULL;
	if (!f)
		return NULL;
	uint64_t end = f->size ? f->start + f->size : 0;
	if (!end) {                 /* unsized: to the next function */
		size_t k = (size_t)(f - m->funcs);
		end = k + 1 < m->nfuncs ? m->funcs[k + 1].start : f->start + 1;
	}
	if (L->nfn == L->cap) {
		size_t cap = L->cap ? 2 * L->cap : 16;
		struct loop_fn *v = realloc(L->fn, cap * sizeof *v);
		if (!v) {
			L->r->oom = true;
			return NULL;
		}
		L->fn = v;
		L->cap = cap;
	}
	struct loop_fn *fn = &L->fn[L->nfn];
	memset(fn, 0, sizeof *fn);
	fn->lo = f->start + m->bias;
	fn->hi = end + m->bias;
	fn->node = regions_node_add(L->r, 0, st_str(m, f->name) ? st_str(m, f->name) : "?");
	if (fn->node == REGION_NONE)
		return NULL;
	char where[320];
	struct st_code c;
	if (symtab_code(&L->syms, fn->lo, &c) && c.file) {
		snprintf(where, sizeof where, "%s:%u", c.file, c.line);
		set_where(L->r, fn->node, where);
	}
	uint8_t *code = symtab_elf_code(m->path, f->start, end);
	if (!code)
		L->no_code++;
	else {
		fn->nlp = find_loops(&L->dec, code, (size_t)(end - f->start), fn->lo, &fn->lp);
		free(code);
		qsort(fn->lp, fn->nlp, sizeof *fn->lp, cmp_outer_first);
		struct own_lines own;
		own_lines_of(L, m, f, &own);
		for (size_t i = 0; i < fn->nlp; i++) {
			size_t parent = fn->node;   /* the innermost earlier loop around it */
			for (size_t k = i; k-- > 0;)
				if (fn->lp[k].lo <= fn->lp[i].lo && fn->lp[i].hi <= fn->lp[k].hi) {
					parent = fn->lp[k].node;
					break;
				}
			unsigned line;
			loop_where(L, &own, fn->lp[i].lo, fn->lp[i].hi, where, sizeof where, &line);
			char name[64];
			if (line)
				snprintf(name, sizeof name, "loop:%u", line);
			else
				snprintf(name, sizeof name, "loop:+0x%llx",
				         (unsigned long long)(fn->lp[i].lo - fn->lo));
			/* loops of the same first line (versions of one source loop
			 * that the compiler made, side by side or one inside
			 * another) are one node */
			size_t same = same_named_loop(L->r, fn->node, parent, name);
			if (same == REGION_NONE &&
			    (same = regions_node_add(L->r, parent, name)) == REGION_NONE)
				return NULL;
			if (strlen(where) > strlen(L->r->node[same].where))
				set_where(L->r, same, where);
			fn->lp[i].node = same;
		}
	}
	L->last = L->nfn;
	return &L->fn[L->nfn++];
}

static void loops_event(void *self, const struct comm_event *ev)
{
	struct loops *L = self;
	struct regions *r = L->r;
	if (ev->dst >= r->n || ev->src >= r->n)
		return;
	size_t node = 0;
	struct loop_fn *fn = ev->ip ? function_of(L, ev->ip) : NULL;
	if (!fn)
		L->no_function++;
	else {
		node = fn->node;
		uint64_t span = UINT64_MAX;
		for (size_t i = 0; i < fn->nlp; i++)
			if (ev->ip >= fn->lp[i].lo && ev->ip < fn->lp[i].hi &&
			    fn->lp[i].hi - fn->lp[i].lo < span) {
				span = fn->lp[i].hi - fn->lp[i].lo;
				node = fn->lp[i].node;
			}
	}
	for (size_t n = node; n != REGION_NONE; n = r->node[n].parent)
		r->node[n].entered[ev->dst] = r->node[n].entered[ev->src] = 1;
	regions_count(r, node, ev);
}

static int loops_setup(void *arg, struct analysis *an)
{
	struct loops_hook *lh = arg;
	struct loops *L = calloc(1, sizeof *L);
	if (!L || !(L->r = regions_create(an->nthreads, 0))) {
		free(L);
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	lh->l = L;
	ZydisDecoderInit(&L->dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	symtab_init(&L->syms);
	size_t len;
	const char *maps = ct_trace_section(an->trace, CT_SEC_MAPS, &len);
	L->have_syms = maps && !symtab_from_maps(&L->syms, maps, len, NULL, NULL, NULL);
	if (L->have_syms && !lh->no_demangle)
		symtab_demangle(&L->syms);
	lh->h->events[lh->h->nevents++] = (struct event_consumer){ L, loops_event };
	return 0;
}

void loops_hooks_init(struct analysis_hooks *h, struct loops_hook *lh)
{
	memset(h, 0, sizeof *h);
	memset(lh, 0, sizeof *lh);
	lh->h = h;
	h->setup = loops_setup;
	h->arg = lh;
}

struct regions *loops_regions(struct loops *l)
{
	return l ? l->r : NULL;
}

void loops_counts(const struct loops *l, uint64_t *no_function, uint64_t *no_code, bool *have_maps)
{
	*no_function = l->no_function;
	*no_code = l->no_code;
	*have_maps = l->have_syms;
}

void loops_free(struct loops *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nfn; i++)
		free(l->fn[i].lp);
	free(l->fn);
	symtab_free(&l->syms);
	regions_free(l->r);
	free(l);
}
