/* Regions, phases and time windows (analyze/regions.c) on hand-built full
 * traces replayed by the exact model, whose transfers are worked out by
 * hand below; cells are directed [dst][src], line size 64. */
#include <stdarg.h>

#include "ana_common.h"
#include "loops.h"
#include "regions.h"
#include "symtab.h"

#define A 0x10000ull
#define B 0x10040ull
#define C 0x10080ull

static void full_init(struct tb *b, size_t nthreads)
{
	tb_init(b, nthreads);
	b->features = CT_FEAT_SAMPLES | CT_FEAT_FULL;
	tb_config(b, "sampler=inst\nperiod=1\nperiod_unit=events\nfull=1\nline_size=64\n");
}

static void mark(struct tb *b, uint32_t t, uint64_t time, int kind, const char *name)
{
	struct ct_record *r = tb_add(b, t, CT_REC_MARKER, time);
	r->u.marker.kind = (uint8_t)kind;
	snprintf(r->u.marker.name, sizeof r->u.marker.name, "%s", name);
}

static void acc(struct tb *b, uint32_t t, uint64_t time, uint64_t addr, uint8_t kind)
{
	tb_sample(b, t, time, addr, 8, kind, 1);
}

/* Replay b with the exact model and the regions consumer. */
static struct regions *run_regions(struct tb *b, struct analysis *an, uint64_t window_ns)
{
	struct model_opts o;
	model_opts_default(&o);
	o.model = "exact";
	const char *path = b->written ? b->path : tb_write(b);
	struct analysis_hooks h;
	struct regions_hook rh;
	regions_hooks_init(&h, &rh, window_ns);
	if (!path || analysis_run_hooks(an, path, &o, false, &h) || an->damaged) {
		printf("# analysis failed\n");
		regions_free(rh.r);
		return NULL;
	}
	return rh.r;
}

static double node_cell(const struct regions *r, const char *name, enum mx_kind k, size_t dst,
                        size_t src)
{
	bool amb;
	size_t i = regions_find(r, name, &amb);
	return i == REGION_NONE ? -1 : matrix_at(matrices_get(r->node[i].mx, MX_THREAD, k), dst, src);
}

/* Cell (dst, src) of a time slot (all events). */
static double slot_cell(const struct time_slot *s, size_t dst, size_t src)
{
	return matrix_at(matrices_get(s->mx, MX_THREAD, MX_ALL), dst, src);
}

static double node_total(const struct regions *r, const char *name)
{
	bool amb;
	size_t i = regions_find(r, name, &amb);
	return i == REGION_NONE ? -1 : r->node[i].total[MX_ALL];
}

/* Three threads, all in "solve"; T0 and T1 also in "solve/ring", then in
 * "solve/gather" after the phase "gather":
 *   10..50  stores to A by T0, T1, T0, T1, T0 (10 is a cold miss):
 *           20 T1, 30 T0, 40 T1, 50 T0: [1][0] 2 (20, 40), [0][1] 2 (30, 50)
 *                                                           ring (dst in ring)
 *   60      T2 stores B (cold); 70 T0 stores B: [0][2] 1     ring
 *   80      T2 loads A (last written by T0 at 50): [2][0] 1  solve (T2 not in ring)
 *   100     phase "gather" (T1)
 *   110     T1 stores C (cold); 120 T0 loads C: [0][1] 1      gather
 *   130     T2 loads C: [2][1] 1                              solve
 *   150     everyone leaves solve; 155 T2 ends a region it never began
 *   160     T2 stores A: it holds a copy (upgrade, no transfer)
 *   170     T1 loads A: [1][2] 1                              (program) only
 *   175     T1 begins "late"; T2 begins "other" (178), then "ring" in it (180):
 *           a second "ring", other/ring.  None of them ends.
 * Totals: ring 5, gather 1, solve 8, (program) 9. */
static void build(struct tb *b)
{
	full_init(b, 3);
	for (uint32_t t = 0; t < 3; t++)
		mark(b, t, 5 + t, CT_MARK_REGION_BEGIN, "solve");
	mark(b, 0, 8, CT_MARK_REGION_BEGIN, "ring");
	mark(b, 1, 9, CT_MARK_REGION_BEGIN, "ring");
	for (int i = 0; i < 5; i++)
		acc(b, (uint32_t)(i % 2), 10 + 10 * (uint64_t)i, A, ST);
	acc(b, 2, 60, B, ST);
	acc(b, 0, 70, B, ST);
	acc(b, 2, 80, A, LD);
	mark(b, 0, 90, CT_MARK_REGION_END, "");
	mark(b, 1, 91, CT_MARK_REGION_END, "");
	mark(b, 1, 100, CT_MARK_PHASE, "gather");
	mark(b, 0, 101, CT_MARK_REGION_BEGIN, "gather");
	mark(b, 1, 102, CT_MARK_REGION_BEGIN, "gather");
	acc(b, 1, 110, C, ST);
	acc(b, 0, 120, C, LD);
	acc(b, 2, 130, C, LD);
	mark(b, 0, 140, CT_MARK_REGION_END, "");
	mark(b, 1, 141, CT_MARK_REGION_END, "");
	for (uint32_t t = 0; t < 3; t++)
		mark(b, t, 150, CT_MARK_REGION_END, "");
	mark(b, 2, 155, CT_MARK_REGION_END, "");
	acc(b, 2, 160, A, ST);
	acc(b, 1, 170, A, LD);
	mark(b, 1, 175, CT_MARK_REGION_BEGIN, "late");
	mark(b, 2, 178, CT_MARK_REGION_BEGIN, "other");
	mark(b, 2, 180, CT_MARK_REGION_BEGIN, "ring");
}

static void test_regions_tree(void)
{
	struct tb b;
	struct analysis an;
	build(&b);
	struct regions *r = run_regions(&b, &an, 0);
	CHECK(r != NULL);
	if (!r)
		goto out;
	CHECK_EQ_U(r->nnodes, 7);   /* (program), solve, solve/ring, solve/gather, late, other,
	                               other/ring */
	CHECK_NEAR(node_total(r, "(program)"), 9, 1e-9);
	CHECK_NEAR(node_total(r, "solve"), 8, 1e-9);
	CHECK_NEAR(node_total(r, "solve/ring"), 5, 1e-9);
	CHECK_NEAR(node_total(r, "gather"), 1, 1e-9);
	CHECK_NEAR(node_total(r, "late"), 0, 1e-9);
	/* the root holds every event: its matrix is the analysis' matrix */
	const struct matrix *m = matrices_get(an.mx, MX_THREAD, MX_ALL);
	for (size_t i = 0; i < 9; i++)
		CHECK_NEAR(node_cell(r, "(program)", MX_ALL, i / 3, i % 3), m->cell[i], 1e-9);
	CHECK_NEAR(node_cell(r, "solve/ring", MX_ALL, 1, 0), 2, 1e-9);
	CHECK_NEAR(node_cell(r, "solve/ring", MX_ALL, 0, 1), 2, 1e-9);
	CHECK_NEAR(node_cell(r, "solve/ring", MX_ALL, 0, 2), 1, 1e-9);
	CHECK_NEAR(node_cell(r, "solve/ring", MX_ALL, 2, 0), 0, 1e-9);
	CHECK_NEAR(node_cell(r, "solve", MX_ALL, 2, 0), 1, 1e-9);
	CHECK_NEAR(node_cell(r, "solve", MX_ALL, 2, 1), 1, 1e-9);
	CHECK_NEAR(node_cell(r, "gather", MX_TRUE, 0, 1), 1, 1e-9);
	CHECK_NEAR(node_cell(r, "gather", MX_FALSE, 0, 1), 0, 1e-9);
	CHECK_NEAR(node_cell(r, "(program)", MX_ALL, 1, 2), 1, 1e-9);
	CHECK_NEAR(node_cell(r, "solve", MX_ALL, 1, 2), 0, 1e-9);
	/* entries, and who entered */
	bool amb;
	size_t ring = regions_find(r, "solve/ring", &amb);
	CHECK(ring != REGION_NONE && r->node[ring].entries == 2 && r->node[ring].depth == 2);
	CHECK(ring != REGION_NONE && r->node[ring].entered[0] && r->node[ring].entered[1] &&
	      !r->node[ring].entered[2]);
	/* "ring" names two nodes: ambiguous; "late" one; a path is never */
	CHECK(regions_find(r, "ring", &amb) == REGION_NONE && amb);
	CHECK(regions_find(r, "late", &amb) != REGION_NONE && !amb);
	CHECK(regions_find(r, "nothing", &amb) == REGION_NONE && !amb);
	CHECK(regions_find(r, "other/ring", &amb) != REGION_NONE && !amb);
	/* children in order of creation */
	size_t it = 0, solve = regions_find(r, "solve", &amb);
	CHECK_EQ_U(regions_next_child(r, solve, &it), ring);
	CHECK_STR(r->node[regions_next_child(r, solve, &it)].path, "solve/gather");
	CHECK(regions_next_child(r, solve, &it) == REGION_NONE);
	CHECK_EQ_U(r->unmatched_ends, 1);
	CHECK_EQ_U(r->unclosed, 3);
	/* thread load of ring: T0 5 (rows 3, column 2), T1 4, T2 1; the
	 * imbalance is 5 over the mean 10/3 */
	double load[3];
	CHECK(region_load(r, r->node[ring].mx, load) == 0);
	CHECK_NEAR(load[0], 5, 1e-9);
	CHECK_NEAR(load[1], 4, 1e-9);
	CHECK_NEAR(load[2], 1, 1e-9);
	CHECK_NEAR(region_imbalance(r, ring, load), 1.5, 1e-9);
	size_t pa, pb;
	double w;
	CHECK(top_pair(r->node[ring].mx, &pa, &pb, &w) == 1 && pa == 0 && pb == 1);
	CHECK_NEAR(w, 4, 1e-9);
	regions_free(r);
out:
	analysis_free(&an);
	tb_free(&b);
}

/* The same trace by phase: (start) 5..100 holds 6 transfers, "gather"
 * 100..180 holds 3; by 100 ns windows from the first record (5): [5, 105)
 * 6, [105, 180] 3. */
static void test_regions_timeline(void)
{
	struct tb b;
	struct analysis an;
	build(&b);
	struct regions *r = run_regions(&b, &an, 100);
	CHECK(r != NULL);
	if (!r)
		goto out;
	CHECK_EQ_U(r->nphases, 2);
	CHECK(r->nphases == 2 && r->phase[0].start == 5 && r->phase[0].end == 100 &&
	      r->phase[1].start == 100 && r->phase[1].end == 180);
	CHECK_NEAR(r->phase[0].total[MX_ALL], 6, 1e-9);
	CHECK_NEAR(r->phase[1].total[MX_ALL], 3, 1e-9);
	CHECK_STR(r->phase[1].name, "gather");
	CHECK_NEAR(slot_cell(&r->phase[1], 0, 1), 1, 1e-9);
	CHECK_NEAR(slot_cell(&r->phase[1], 2, 1), 1, 1e-9);
	CHECK_NEAR(slot_cell(&r->phase[1], 1, 2), 1, 1e-9);
	CHECK_EQ_U(r->nwin, 2);
	CHECK(r->nwin == 2 && r->win[0].start == 5 && r->win[0].end == 105 &&
	      r->win[1].start == 105 && r->win[1].end == 180);
	CHECK_NEAR(r->win[0].total[MX_ALL], 6, 1e-9);
	CHECK_NEAR(r->win[1].total[MX_ALL], 3, 1e-9);
	CHECK_STR(regions_phase_at(r, r->win[0].start), "");
	CHECK_STR(regions_phase_at(r, r->win[1].start), "gather");
	regions_free(r);
out:
	analysis_free(&an);
	tb_free(&b);
}

/* A trace without markers (as recorded before markers existed): the root
 * alone, one phase, both equal to the analysis' matrix. */
static void test_regions_no_markers(void)
{
	struct tb b;
	struct analysis an;
	full_init(&b, 2);
	for (int i = 0; i < 6; i++)
		acc(&b, (uint32_t)(i % 2), 10 + 10 * (uint64_t)i, A, ST);
	struct regions *r = run_regions(&b, &an, 0);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_U(r->nnodes, 1);
		CHECK_EQ_U(r->nphases, 1);
		CHECK_NEAR(r->node[0].total[MX_ALL], 5, 1e-9);
		CHECK_NEAR(r->phase[0].total[MX_ALL], 5, 1e-9);
		CHECK_EQ_U(r->nwin, 0);
	}
	regions_free(r);
	analysis_free(&an);
	tb_free(&b);
}

/* OpenMP region names: "omp:0xADDR" both ways; other names are not. */
static void test_regions_omp_names(void)
{
	char buf[32];
	uint64_t fn = 0;
	ct_marker_omp_name(buf, sizeof buf, 0x5613a459a2d0ull);
	CHECK_STR(buf, "omp:0x5613a459a2d0");
	CHECK(ct_marker_omp_fn(buf, &fn) && fn == 0x5613a459a2d0ull);
	CHECK(!ct_marker_omp_fn("omp:0x", &fn));
	CHECK(!ct_marker_omp_fn("omp:0x-1", &fn));
	CHECK(!ct_marker_omp_fn("omp:0x12g", &fn));
	CHECK(!ct_marker_omp_fn("omp:12", &fn));
	CHECK(!ct_marker_omp_fn("solve", &fn));
	/* an OpenMP region without symbols keeps its address name */
	struct tb b;
	struct analysis an;
	full_init(&b, 2);
	mark(&b, 0, 5, CT_MARK_REGION_BEGIN, "omp:0x401000");
	mark(&b, 1, 6, CT_MARK_REGION_BEGIN, "omp:0x401000");
	acc(&b, 0, 10, A, ST);
	acc(&b, 1, 20, A, LD);
	struct regions *r = run_regions(&b, &an, 0);
	CHECK(r != NULL);
	if (r) {
		regions_name_omp(r, an.trace);
		CHECK_EQ_U(r->nnodes, 2);
		CHECK(r->nnodes == 2 && r->node[1].omp_fn == 0x401000 && r->node[1].entries == 2);
		CHECK_STR(r->node[1].name, "omp:0x401000");
		CHECK_EQ_U(r->omp_markers, 2);
		CHECK_NEAR(r->node[1].total[MX_ALL], 1, 1e-9);
	}
	regions_free(r);
	analysis_free(&an);
	tb_free(&b);
}

/* OpenMP regions of C++ and Fortran are named demangled, like every view's
 * functions (r->no_demangle: as in the binary), and found by either name. */
static void test_regions_omp_demangled(void)
{
	static const char *const raw[2] = { "_ZL17CalcForceForNodesR6Domain._omp_fn.0",
	                                    "__grid_MOD_step._omp_fn.1" };
	static const char *const readable[2] = { "CalcForceForNodes(Domain&)._omp_fn.0",
	                                         "grid::step._omp_fn.1" };
	for (int keep = 0; keep < 2; keep++) {
		struct tb b;
		struct analysis an;
		full_init(&b, 2);
		mark(&b, 0, 5, CT_MARK_REGION_BEGIN, "omp:0x401000");
		mark(&b, 1, 6, CT_MARK_REGION_BEGIN, "omp:0x402000");
		acc(&b, 0, 10, A, ST);
		acc(&b, 1, 20, A, LD);
		struct symtab st;
		symtab_init(&st);
		struct st_module *m = symtab_add_module(&st, "/bin/app");
		m->lo = 0x400000;
		m->hi = 0x405000;
		m->flags = ST_MOD_ELF_SYMS;
		st_add_func(m, 0x401000, 0x100, raw[0]);
		st_add_func(m, 0x402000, 0x100, raw[1]);
		symtab_finish(&st);
		void *sym = NULL;
		size_t len = 0;
		CHECK(symtab_serialize(&st, &sym, &len) == 0);
		symtab_free(&st);
		CHECK(sym && tb_write_with(&b, sym, len, NULL) != NULL);
		free(sym);
		struct regions *r = run_regions(&b, &an, 0);
		CHECK(r != NULL && r->nnodes == 3);
		if (r && r->nnodes == 3) {
			r->no_demangle = keep;
			regions_name_omp(r, an.trace);
			for (int k = 0; k < 2; k++) {
				CHECK_STR(r->node[1 + k].name, keep ? raw[k] : readable[k]);
				bool amb;
				CHECK_EQ_U(regions_find(r, raw[k], &amb), 1 + k);
				if (!keep)
					CHECK_EQ_U(regions_find(r, readable[k], &amb), 1 + k);
			}
		}
		regions_free(r);
		analysis_free(&an);
		tb_free(&b);
	}
}

/* Changes detected in the pattern: T0 and T1 store A alternately every 5 ns
 * from 0 to 295 (59 transfers between them), then T1 and T2 store B from 300
 * to 595 (59 between them).  100 ns windows: 19 or 20 events each, all on
 * one pair; the first three windows are alike (chi-square 0), the fourth
 * has only the other pair: two runs, [0, 300) and [300, 595]. */
static void test_regions_changes(void)
{
	struct tb b;
	struct analysis an;
	full_init(&b, 3);
	for (int i = 0; i < 60; i++)
		acc(&b, (uint32_t)(i % 2), 5 * (uint64_t)i, A, ST);
	for (int i = 0; i < 60; i++)
		acc(&b, 1 + (uint32_t)(i % 2), 300 + 5 * (uint64_t)i, B, ST);
	struct regions *r = run_regions(&b, &an, 100);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_U(r->nwin, 6);
		struct time_slot *v = NULL;
		long n = regions_detect_changes(r, &v);
		CHECK_EQ_U(n, 2);
		if (n == 2) {
			CHECK(v[0].start == 0 && v[0].end == 300 && v[1].start == 300 && v[1].end == 595);
			CHECK_EQ_U(v[0].events, 59);
			CHECK_EQ_U(v[1].events, 59);
			CHECK_NEAR(slot_cell(&v[0], 1, 0) + slot_cell(&v[0], 0, 1), 59, 1e-9);
			CHECK_NEAR(slot_cell(&v[1], 2, 1) + slot_cell(&v[1], 1, 2), 59, 1e-9);
			CHECK_STR(v[1].name, "change 1");
		}
		regions_slots_free(v, n > 0 ? (size_t)n : 0);
		/* windows of 9 events or fewer (5 here) never start a run */
		regions_free(r);
		analysis_free(&an);
		r = run_regions(&b, &an, 25);
		CHECK(r != NULL);
		if (r) {
			n = regions_detect_changes(r, &v);
			CHECK_EQ_U(n, 1);
			regions_slots_free(v, n > 0 ? (size_t)n : 0);
		}
	}
	regions_free(r);
	analysis_free(&an);
	tb_free(&b);
}

/* Loops from code: two nested loops (back edges to 0x1004 and 0x1002), a
 * second back edge to the inner header (the widest range wins), a forward
 * branch and an indirect jump (no loops), undecodable bytes skipped.
 *   1000 xor eax,eax   1002 inc eax   1004 inc ecx   1006 jne 1004
 *   1008 je 100c       100a jne 1004  100c jne 1002  100e jmp rax   1010 ret */
static void test_loops_in_code(void)
{
	static const uint8_t code[] = {
		0x31, 0xc0, 0xff, 0xc0, 0xff, 0xc1, 0x75, 0xfc, 0x74, 0x02, 0x75, 0xf8,
		0x75, 0xf4, 0xff, 0xe0, 0xc3,
	};
	uint64_t r[4][2];
	size_t n = loops_in_code(code, sizeof code, 0x1000, r, 4);
	CHECK_EQ_U(n, 2);
	CHECK(n == 2 && r[0][0] == 0x1004 && r[0][1] == 0x100c);
	CHECK(n == 2 && r[1][0] == 0x1002 && r[1][1] == 0x100e);
	/* a jump to before the function's start is no loop */
	CHECK_EQ_U(loops_in_code(code + 6, sizeof code - 6, 0x1006, r, 4), 0);
}

int main(void)
{
	RUN(test_regions_tree);
	RUN(test_regions_timeline);
	RUN(test_regions_no_markers);
	RUN(test_regions_omp_names);
	RUN(test_regions_omp_demangled);
	RUN(test_regions_changes);
	RUN(test_loops_in_code);
	return check_summary();
}
