/* commanalyze dump TRACE: one line per record, in global time order:
 *   TIME T<thread-index> TYPE key=value ...
 * As perf script prints them: TIME in seconds since the recording began
 * (the earliest thread start; 9 decimals) and code addresses followed by
 * their symbol (sym=func+0xOFF from the trace's embedded symbols,
 * demangled; callsites: syms=...).  --raw: TIME in the recorded monotonic
 * nanoseconds and no symbols.  The exact keys are listed in commanalyze(1);
 * tests grep them. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib.h"

/* How times and addresses are shown. */
struct dump_view {
	bool raw;
	uint64_t base;              /* time zero (ns) */
	const struct symtab *syms;  /* NULL: no symbols */
};

static void put_flags(FILE *f, unsigned fl)
{
	static const struct { unsigned bit; const char *name; } n[] = {
		{ CT_SAMPLE_EXACT, "exact" }, { CT_SAMPLE_RECONSTRUCTED, "reconstructed" },
		{ CT_SAMPLE_PREV_INSN, "prev" }, { CT_SAMPLE_FS_BASED, "fs" },
		{ CT_SAMPLE_SYNC, "sync" },
		{ CT_SAMPLE_HAS_DATA_SRC, "data_src" }, { CT_SAMPLE_HAS_WEIGHT, "weight" },
	};
	bool any = false;
	for (size_t i = 0; i < sizeof n / sizeof *n; i++)
		if (fl & n[i].bit) {
			fprintf(f, "%s%s", any ? "," : "", n[i].name);
			any = true;
		}
	if (!any)
		fputc('-', f);
}

/* Names from the trace: printable ASCII except space and backslash as is,
 * other bytes as \xNN, so a line always splits on spaces. */
static void put_name(FILE *f, const char *s, size_t max)
{
	if (!*s)
		fputc('-', f);
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c > 0x20 && c < 0x7f && c != '\\')
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

static void put_time(FILE *f, const struct dump_view *v, uint64_t t)
{
	if (v->raw) {
		fprintf(f, "%" PRIu64, t);
		return;
	}
	uint64_t d = t >= v->base ? t - v->base : v->base - t;
	fprintf(f, "%s%" PRIu64 ".%09" PRIu64, t >= v->base ? "" : "-", d / 1000000000u,
	        d % 1000000000u);
}

/* The code at addr, when the symbols cover it. */
static bool code_at(const struct dump_view *v, uint64_t addr, struct st_code *c)
{
	return !v->raw && v->syms && addr && symtab_code(v->syms, addr, c) && c->mod;
}

/* "func+0xOFF", or "module+0xOFF" (file address) without a function */
static void put_symbol(FILE *f, const struct st_code *c, uint64_t addr)
{
	if (c->func) {
		put_name(f, c->func, SIZE_MAX);
		fprintf(f, "+0x%" PRIx64, c->func_off);
		return;
	}
	const char *path = c->mod->path, *base = path ? strrchr(path, '/') : NULL;
	put_name(f, base ? base + 1 : path ? path : "?", SIZE_MAX);
	fprintf(f, "+0x%" PRIx64, addr - c->mod->bias);
}

/* " sym=..." after a code address, when known */
static void put_sym_key(FILE *f, const struct dump_view *v, uint64_t addr)
{
	struct st_code c;
	if (!code_at(v, addr, &c))
		return;
	fputs(" sym=", f);
	put_symbol(f, &c, addr);
}

static const char *kind_name(unsigned k)
{
	const char *n = ct_access_kind_name(k);
	return n ? n : "unknown";
}

/* " reason=NAME count=N" (the number when the reason has no name) */
static void put_reason(FILE *f, const char *name, unsigned reason, uint64_t count)
{
	if (name)
		fprintf(f, " reason=%s", name);
	else
		fprintf(f, " reason=%u", reason);
	fprintf(f, " count=%" PRIu64, count);
}

static void dump_line(FILE *f, const struct dump_view *v, const struct ct_record *r)
{
	const char *type = ct_rec_type_name(r->type);
	put_time(f, v, r->time);
	fprintf(f, " T%" PRIu32 " %s", r->thread, type ? type : "unknown");
	switch (r->type) {
	case CT_REC_SAMPLE: {
		const struct ct_sample *s = &r->u.sample;
		fprintf(f, " ip=0x%" PRIx64, s->ip);
		put_sym_key(f, v, s->ip);
		fprintf(f, " addr=0x%" PRIx64 " len=%u kind=%s cpu=%" PRIu32 " period=%" PRIu64 " flags=",
		        s->addr, s->len, kind_name(s->kind), s->cpu, s->period);
		put_flags(f, s->flags);
		if (s->flags & CT_SAMPLE_HAS_DATA_SRC)
			fprintf(f, " data_src=0x%" PRIx64, s->data_src);
		if (s->flags & CT_SAMPLE_HAS_WEIGHT)
			fprintf(f, " weight=%" PRIu32, s->weight);
		break;
	}
	case CT_REC_WP_ARM: {
		const struct ct_wp_arm *a = &r->u.arm;
		fprintf(f, " publisher=%" PRIu32 " pub_time=", a->publisher);
		put_time(f, v, a->pub_time);
		fprintf(f, " pub_addr=0x%" PRIx64 " pub_len=%u wp=", a->pub_addr, a->pub_len);
		unsigned n = a->nwp <= CT_WP_MAX ? a->nwp : CT_WP_MAX;
		for (unsigned i = 0; i < n; i++)
			fprintf(f, "%s0x%" PRIx64 ":%u", i ? "," : "", a->wp_addr[i], a->wp_len[i]);
		if (!n)
			fputc('-', f);
		break;
	}
	case CT_REC_WP_HIT: {
		const struct ct_wp_hit *h = &r->u.hit;
		fprintf(f, " ip=0x%" PRIx64, h->ip);
		put_sym_key(f, v, h->ip);
		fprintf(f, " addr=0x%" PRIx64 " len=%u reg=%u cpu=%" PRIu32 " kind=%s", h->addr, h->len,
		        h->reg, h->cpu, kind_name(h->kind));
		break;
	}
	case CT_REC_ALLOC: {
		static const char *const kn[] = { "malloc", "calloc", "realloc", "memalign", "mmap" };
		const struct ct_alloc *a = &r->u.alloc;
		fprintf(f, " addr=0x%" PRIx64 " size=%" PRIu64 " kind=%s callsite=%" PRIu32, a->addr,
		        a->size, a->kind < 5 ? kn[a->kind] : "unknown", a->callsite);
		if (a->kind == CT_ALLOC_REALLOC)
			fprintf(f, " old=0x%" PRIx64, a->old_addr);
		break;
	}
	case CT_REC_FREE:
		fprintf(f, " addr=0x%" PRIx64 " size=%" PRIu64 " kind=%s", r->u.free.addr,
		        r->u.free.size, r->u.free.kind == 0 ? "free" : r->u.free.kind == 1 ? "munmap" : "unknown");
		break;
	case CT_REC_CALLSITE: {
		const struct ct_callsite *c = &r->u.callsite;
		fprintf(f, " id=%" PRIu32 " pcs=", c->id);
		unsigned n = c->depth <= CT_CALLSITE_MAX_DEPTH ? c->depth : CT_CALLSITE_MAX_DEPTH;
		for (unsigned i = 0; i < n; i++)
			fprintf(f, "%s0x%" PRIx64, i ? "," : "", c->pc[i]);
		if (!n)
			fputc('-', f);
		struct st_code sc;
		bool known = false;
		for (unsigned i = 0; i < n && !known; i++)
			known = code_at(v, c->pc[i], &sc);
		for (unsigned i = 0; known && i < n; i++) {
			fputs(i ? "," : " syms=", f);
			if (code_at(v, c->pc[i], &sc))
				put_symbol(f, &sc, c->pc[i]);
			else
				fputc('?', f);
		}
		break;
	}
	case CT_REC_THREAD_START: {
		const struct ct_thread_start *s = &r->u.start;
		fprintf(f, " stack=0x%" PRIx64 "-0x%" PRIx64 " fs=0x%" PRIx64 " tls=0x%" PRIx64 "-0x%" PRIx64,
		        s->stack_lo, s->stack_hi, s->fs_base, s->tls_lo, s->tls_hi);
		break;
	}
	case CT_REC_THREAD_END:
		fprintf(f, " status=%" PRId32, r->u.end.status);
		break;
	case CT_REC_MARKER: {
		static const char *const kn[] = { "begin", "end", "phase", "throttle" };
		fprintf(f, " kind=%s name=", r->u.marker.kind < 4 ? kn[r->u.marker.kind] : "unknown");
		put_name(f, r->u.marker.name, sizeof r->u.marker.name);
		break;
	}
	case CT_REC_LOST:
		put_reason(f, ct_lost_reason_name(r->u.lost.reason), r->u.lost.reason, r->u.lost.count);
		break;
	case CT_REC_SKIPPED:
		put_reason(f, ct_skip_reason_name(r->u.skipped.reason), r->u.skipped.reason,
		           r->u.skipped.count);
		break;
	case CT_REC_FUNC_ENTER:
	case CT_REC_FUNC_EXIT:
		fprintf(f, " addr=0x%" PRIx64, r->u.func.addr);
		put_sym_key(f, v, r->u.func.addr);
		break;
	case CT_REC_OWNER_XFER: {
		const struct ct_owner_xfer *x = &r->u.oxfer;
		fprintf(f, " ip=0x%" PRIx64 " addr=0x%" PRIx64 " len=%u kind=%s src=T%" PRIu32
		        " windows=%" PRIu32 " prior=%" PRIu64 " %s", x->ip, x->addr, x->len,
		        ct_access_kind_name(x->kind), x->src, x->windows, x->prior,
		        x->flags & CT_OWNER_TRUE ? "true" : "false");
		break;
	}
	case CT_REC_OWNER_WIN: {
		static const char *const sn[] = { "opened", "dropped_table_full", "dropped_line_full" };
		fprintf(f, " addr=0x%" PRIx64 " %s", r->u.owin.addr,
		        r->u.owin.status <= CT_OWNER_OPEN_MAX ? sn[r->u.owin.status] : "unknown");
		break;
	}
	default:
		break;
	}
	fputc('\n', f);
}

void dump_record(FILE *f, const struct ct_record *r)
{
	const struct dump_view raw = { .raw = true };
	dump_line(f, &raw, r);
}

/* Time zero: the earliest thread start (the first record's time when no
 * thread has one). */
static uint64_t time_base(struct ct_trace *t)
{
	uint64_t base = UINT64_MAX;
	for (size_t i = 0; i < ct_trace_nthreads(t); i++) {
		const struct ct_thread_info *ti = ct_trace_thread(t, i);
		if (ti && ti->start_ns && ti->start_ns < base)
			base = ti->start_ns;
	}
	return base;
}

/* The trace's embedded symbols, demangled, into s: true when there are any. */
static bool load_symbols(struct ct_trace *t, struct symtab *s)
{
	size_t len;
	const void *p = ct_trace_section(t, CT_SEC_SYMBOLS, &len);
	char err[300];
	symtab_init(s);
	if (!p)
		return false;
	if (symtab_parse(s, p, len, err, sizeof err))
		ana_warn("embedded %s (modules before it are used)", err);
	symtab_demangle(s);
	return true;
}

enum { O_THREAD = 1, O_TYPE, O_LIMIT, O_RAW, O_OUTPUT };
static const struct cli_opt dump_opts[] = {
	{ "thread", 0, true, O_THREAD }, { "type", 0, true, O_TYPE }, { "limit", 0, true, O_LIMIT },
	{ "raw", 0, false, O_RAW }, { "output", 'o', true, O_OUTPUT },
};

/* --type LIST: the bits of the record types named into *types; 0 or -1
 * (message printed). */
static int parse_types(const char *v, uint32_t *types)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", v);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int ty = ct_rec_type_from_name(tok);
		if (ty < 0) {
			ana_err("dump: --type: unknown record type '%s' (sample, wp_arm, wp_hit, "
			        "alloc, free, callsite, thread_start, thread_end, marker, lost, "
			        "skipped, func_enter, func_exit)", tok);
			return -1;
		}
		*types |= 1u << ty;
	}
	if (!*types) {
		ana_err("dump: --type needs a record type");
		return -1;
	}
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	const char *path, *v, *out = NULL;
	uint64_t thread = UINT64_MAX, limit = UINT64_MAX;
	uint32_t types = 0;   /* bit per type, 0: all */
	bool raw = false;
	struct cli p;
	cli_init(&p, "dump", argc, argv, dump_opts, sizeof dump_opts / sizeof *dump_opts, NULL);
	int id, bad = 0;
	while (!bad && (id = cli_next(&p, &v)) > 0) {
		const char *n = v && v[0] == 'T' ? v + 1 : v;
		if (id == O_THREAD && (!parse_u64(n, &thread) || thread > UINT32_MAX)) {
			ana_err("dump: --thread: '%s' is not a thread index", v);
			bad = 1;
		} else if (id == O_TYPE) {
			bad = parse_types(v, &types);
		} else if (id == O_RAW) {
			raw = true;
		} else if (id == O_OUTPUT) {
			out = v;
		} else if (id == O_LIMIT && !parse_u64(v, &limit)) {
			ana_err("dump: --limit: '%s' is not a number", v);
			bad = 1;
		}
	}
	if (bad || id < 0 || cli_trace(&p, &path))
		return EXIT_USAGE;
	struct ct_trace *t = ana_open_trace(path);
	if (!t)
		return EXIT_BADTRACE;
	if (ana_stdout_to(out)) {
		ct_trace_close(t);
		return EXIT_BADTRACE;
	}
	struct ct_error err = {{0}};
	static char obuf[1 << 16];
	setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
	struct ct_cursor *c = thread != UINT64_MAX ? NULL : ct_cursor_merged(t);
	if (thread != UINT64_MAX) {
		for (size_t i = 0; i < ct_trace_nthreads(t); i++)
			if (ct_trace_thread(t, i)->index == thread)
				c = ct_cursor_thread(t, i);
		if (!c) {
			ana_err("dump: %s has no thread %" PRIu64 " (%zu threads)", path, thread,
			        ct_trace_nthreads(t));
			ct_trace_close(t);
			return EXIT_USAGE;
		}
	}
	if (!c) {
		ct_trace_close(t);
		ana_err("out of memory");
		return EXIT_BADTRACE;
	}
	struct symtab syms;
	struct dump_view view = { .raw = raw, .base = time_base(t) };
	if (!raw && load_symbols(t, &syms))
		view.syms = &syms;
	struct ct_record r;
	uint64_t shown = 0;
	int rc = 0;
	while (shown < limit && (rc = ct_cursor_next(c, &r, &err)) == 1) {
		if (types && (r.type > 31 || !(types & (1u << r.type))))
			continue;
		if (view.base == UINT64_MAX)
			view.base = r.time;
		dump_line(stdout, &view, &r);
		shown++;
	}
	ct_cursor_free(c);
	if (!raw)
		symtab_free(&syms);
	char damage[600] = "";
	/* damage found while indexing ends the data early: say so once the
	 * records before it are out (not when --limit stopped first) */
	if (rc == 0 && ct_trace_damage(t))
		snprintf(damage, sizeof damage, "%s", ct_trace_damage(t));
	ct_trace_close(t);
	if (ana_stdout_done(out))
		return EXIT_BADTRACE;
	if (rc < 0) {
		fprintf(stderr, "commanalyze: %s\n", err.msg[0] ? err.msg : "damaged trace");
		return EXIT_BADTRACE;
	}
	if (damage[0]) {
		fprintf(stderr, "commanalyze: %s\n", damage);
		return EXIT_BADTRACE;
	}
	return 0;
}
