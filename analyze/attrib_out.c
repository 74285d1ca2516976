/* Attribution results as tables: objects (ranked, with fields, thread
 * pairs and code) and cache lines (per-offset detail, like perf c2c), in
 * text, CSV and JSON; the report's "Top objects" and "Top lines". */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib_int.h"
#include "out_util.h"

void attrib_rank_by(struct attrib *a, enum mx_kind kind)
{
	a->rank_kind = kind <= MX_FALSE ? kind : MX_ALL;
}

/* ---- helpers ------------------------------------------------------------------ */

static const char *num(double v, char *buf, size_t cap)
{
	out_fmt_exact(buf, cap, v);
	return buf;
}

static const char *cnum(double v, char *buf, size_t cap)
{
	out_fmt_compact(buf, cap, v);
	return buf;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

/* "T1,T3" or "-" */
/* "T1,T2,...": TSET_MAX threads of up to 7 digits, and ",..." */
#define TSET_STR_MAX (TSET_MAX * 9 + 8)
static const char *tset_str(const struct tset *s, char *buf, size_t cap)
{
	uint32_t t[TSET_MAX];
	memcpy(t, s->t, s->n * sizeof *t);
	if (s->n > 1)
		qsort(t, s->n, sizeof *t, cmp_u32);
	size_t l = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < s->n && l + 1 < cap; i++)
		l += (size_t)snprintf(buf + l, cap - l, "%sT%u", i ? "," : "", t[i]);
	if (s->more && l + 1 < cap)
		snprintf(buf + l, cap - l, ",...");
	if (!s->n)
		snprintf(buf, cap, "-");
	return buf;
}

static void tset_json(FILE *f, const struct tset *s)
{
	uint32_t t[TSET_MAX];
	memcpy(t, s->t, s->n * sizeof *t);
	if (s->n > 1)
		qsort(t, s->n, sizeof *t, cmp_u32);
	fputc('[', f);
	for (unsigned i = 0; i < s->n; i++)
		fprintf(f, "%s%u", i ? "," : "", t[i]);
	fputc(']', f);
}

static const struct attrib *sort_ctx;

static int cmp_obj(const void *x, const void *y)
{
	const struct aobj *a = &sort_ctx->objs[*(const uint32_t *)x];
	const struct aobj *b = &sort_ctx->objs[*(const uint32_t *)y];
	unsigned k = sort_ctx->rank_kind;
	if (a->w[k] != b->w[k])
		return a->w[k] > b->w[k] ? -1 : 1;
	if (a->w[0] != b->w[0])
		return a->w[0] > b->w[0] ? -1 : 1;
	if (a->ev[0] != b->ev[0])
		return a->ev[0] > b->ev[0] ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_line(const void *x, const void *y)
{
	const struct aline *a = &sort_ctx->lines[*(const uint32_t *)x];
	const struct aline *b = &sort_ctx->lines[*(const uint32_t *)y];
	if (a->w[0] != b->w[0])
		return a->w[0] > b->w[0] ? -1 : 1;
	if (a->ev[0] != b->ev[0])
		return a->ev[0] > b->ev[0] ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static int cmp_field(const void *x, const void *y)
{
	const struct afield *a = x, *b = y;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return strcmp(a->path, b->path);
}

static int cmp_off(const void *x, const void *y)
{
	const struct aoff *a = x, *b = y;
	return a->off < b->off ? -1 : a->off > b->off;
}

static int cmp_code(const void *x, const void *y)
{
	const struct acode *a = x, *b = y;
	if (a->weight != b->weight)
		return a->weight > b->weight ? -1 : 1;
	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

static int cmp_pair(const void *x, const void *y)
{
	const struct apair *a = x, *b = y;
	if (a->w[0] != b->w[0])
		return a->w[0] > b->w[0] ? -1 : 1;
	if (a->dst != b->dst)
		return a->dst < b->dst ? -1 : 1;
	return a->src < b->src ? -1 : a->src > b->src;
}

/* Sorted index of objects (n: how many have events) */
static uint32_t *sorted_objs(const struct attrib *a, size_t *n)
{
	uint32_t *ix = malloc((a->nobjs ? a->nobjs : 1) * sizeof *ix);
	if (!ix)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < a->nobjs; i++)
		if (a->objs[i].ev[a->rank_kind])
			ix[k++] = (uint32_t)i;
	sort_ctx = a;
	if (k > 1)
		qsort(ix, k, sizeof *ix, cmp_obj);
	*n = k;
	return ix;
}

static uint32_t *sorted_lines(const struct attrib *a, size_t *n)
{
	uint32_t *ix = malloc((a->nlines ? a->nlines : 1) * sizeof *ix);
	if (!ix)
		return NULL;
	for (size_t i = 0; i < a->nlines; i++)
		ix[i] = (uint32_t)i;
	sort_ctx = a;
	if (a->nlines > 1)
		qsort(ix, a->nlines, sizeof *ix, cmp_line);
	*n = a->nlines;
	return ix;
}

/* Sort the details of every object and line (fields by offset, pairs and
 * code by weight) once before writing. */
static void sort_details(struct attrib *a)
{
	for (size_t i = 0; i < a->nobjs; i++) {
		struct aobj *o = &a->objs[i];
		if (o->nfields > 1)
			qsort(o->fields, o->nfields, sizeof *o->fields, cmp_field);   /* by offset */
		if (o->ncode > 1)
			qsort(o->code, o->ncode, sizeof *o->code, cmp_code);
		/* pair_idx holds indices into pairs: dropped once they are sorted
		 * (results are final by now) */
		if (o->npairs > 1)
			qsort(o->pairs, o->npairs, sizeof *o->pairs, cmp_pair);
		free(o->pair_idx.k);
		free(o->pair_idx.v);
		memset(&o->pair_idx, 0, sizeof o->pair_idx);
		if (o->nfields > 1) {   /* field_idx too: fields were sorted */
			free(o->field_idx.k);
			free(o->field_idx.v);
			memset(&o->field_idx, 0, sizeof o->field_idx);
		}
	}
	for (size_t i = 0; i < a->nlines; i++) {
		struct aline *l = &a->lines[i];
		if (l->noffs > 1)
			qsort(l->offs, l->noffs, sizeof *l->offs, cmp_off);
		for (unsigned k = 0; k < l->noffs; k++)
			if (l->offs[k].ncode > 1)
				qsort(l->offs[k].code, l->offs[k].ncode, sizeof *l->offs[k].code, cmp_code);
	}
}

/* Undirected pairs "T1<->T2 1,234" of an object, top k, into buf. */
static const char *pairs_str(const struct aobj *o, size_t k, bool exact, char *buf, size_t cap)
{
	/* fold directed pairs into unordered ones */
	struct up { uint32_t i, j; double w; } u[16];
	size_t nu = 0;
	for (size_t p = 0; p < o->npairs; p++) {
		uint32_t i = o->pairs[p].dst < o->pairs[p].src ? o->pairs[p].dst : o->pairs[p].src;
		uint32_t j = o->pairs[p].dst ^ o->pairs[p].src ^ i;
		size_t q;
		for (q = 0; q < nu; q++)
			if (u[q].i == i && u[q].j == j)
				break;
		if (q == nu) {
			if (nu == 16)
				continue;
			u[nu++] = (struct up){ i, j, 0 };
		}
		u[q].w += o->pairs[p].w[0];
	}
	for (size_t x = 1; x < nu; x++)   /* insertion sort by weight */
		for (size_t y = x; y > 0 && u[y].w > u[y - 1].w; y--) {
			struct up t = u[y];
			u[y] = u[y - 1];
			u[y - 1] = t;
		}
	size_t l = 0;
	buf[0] = 0;
	for (size_t q = 0; q < nu && q < k && l + 1 < cap; q++) {
		char w[40];
		if (exact)   /* CSV: "T1-T2:1234;T1-T3:5" */
			l += (size_t)snprintf(buf + l, cap - l, "%sT%u-T%u:%s", q ? ";" : "", u[q].i,
			                      u[q].j, num(u[q].w, w, sizeof w));
		else if (u[q].i == u[q].j)
			l += (size_t)snprintf(buf + l, cap - l, "%sT%u %s", q ? ", " : "", u[q].i,
			                      cnum(u[q].w, w, sizeof w));
		else
			l += (size_t)snprintf(buf + l, cap - l, "%sT%u<->T%u %s", q ? ", " : "", u[q].i,
			                      u[q].j, cnum(u[q].w, w, sizeof w));
	}
	if (nu > k && l + 1 < cap)
		snprintf(buf + l, cap - l, "%s...", exact ? ";" : ", ");
	return buf;
}

static const char *code_str(const struct attrib *a, uint64_t ip, char *buf, size_t cap)
{
	return symtab_code_str(&a->syms, ip, false, buf, cap);
}

/* Code addresses as text, the ones that read the same merged (several
 * instructions of one source line), heaviest first. */
struct code_line {
	char where[200];
	double weight;
};

static size_t merge_code(const struct attrib *a, const struct acode *c, size_t n,
                         struct code_line *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char w[200];
		code_str(a, c[i].ip, w, sizeof w);
		size_t j;
		for (j = 0; j < k; j++)
			if (!strcmp(out[j].where, w))
				break;
		if (j == k) {
			snprintf(out[k].where, sizeof out[k].where, "%s", w);
			out[k++].weight = 0;
		}
		out[j].weight += c[i].weight;
	}
	for (size_t x = 1; x < k; x++)
		for (size_t y = x; y > 0 && out[y].weight > out[y - 1].weight; y--) {
			struct code_line t = out[y];
			out[y] = out[y - 1];
			out[y - 1] = t;
		}
	return k;
}

static void code_json(FILE *f, const struct attrib *a, const struct acode *c)
{
	struct st_code sc;
	char ipb[32], w[40], where[400];
	snprintf(ipb, sizeof ipb, "0x%" PRIx64, c->ip);
	fprintf(f, "{\"ip\":\"%s\",\"where\":", ipb);
	out_json_string(f, code_str(a, c->ip, where, sizeof where));
	symtab_code(&a->syms, c->ip, &sc);
	fprintf(f, ",\"function\":");
	out_json_string(f, sc.func);
	fprintf(f, ",\"file\":");
	out_json_string(f, sc.file);
	fprintf(f, ",\"line\":%u,\"events\":%" PRIu64 ",\"weight\":%s}", sc.line, c->events,
	        num(c->weight, w, sizeof w));
}

static void notes_json(FILE *f, const struct attrib *a)
{
	fprintf(f, "\"notes\":[");
	const char *p = attrib_notes(a);
	bool first = true;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		char line[700];
		snprintf(line, sizeof line, "%.*s", (int)(l < 699 ? l : 699), p);
		fprintf(f, "%s", first ? "" : ",");
		out_json_string(f, line);
		first = false;
		p += l + (nl ? 1 : 0);
	}
	fprintf(f, "]");
}

static void notes_text(FILE *f, const struct attrib *a, const char *prefix)
{
	const char *p = attrib_notes(a);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		fprintf(f, "%snote: %.*s\n", prefix, (int)l, p);
		p += l + (nl ? 1 : 0);
	}
}

/* ---- objects ----------------------------------------------------------------- */

static void object_text(FILE *f, struct attrib *a, const struct aobj *o, size_t rank)
{
	char w0[32], w1[32], w2[32], pairs[512];
	fprintf(f, "%-4zu %-24s %-7s %8" PRIu64 " %12s %12s %12s %9" PRIu64 "  %s\n", rank, o->name,
	        obj_kind_name(o->kind), o->size, cnum(o->w[0], w0, sizeof w0),
	        cnum(o->w[1], w1, sizeof w1), cnum(o->w[2], w2, sizeof w2), o->ev[0],
	        pairs_str(o, 4, false, pairs, sizeof pairs));
	if (o->type && o->type[0])
		fprintf(f, "       type: %s\n", o->type);
	/* false sharing in a sentence: the fields written by different threads */
	if (o->w[2] > 0 && o->nfields >= 2) {
		char line[600];
		size_t l = 0, nw = 0;
		for (unsigned i = 0; i < o->nfields && nw < 4; i++) {
			const struct afield *fl = &o->fields[i];
			if (!fl->writers.n || !fl->false_events)
				continue;
			char wr[TSET_STR_MAX], at[40] = "";
			if (o->kind == OBJ_STATIC)   /* other paths are offsets already */
				snprintf(at, sizeof at, "offset %" PRIu64 ", ", fl->off);
			l += (size_t)snprintf(line + l, sizeof line - l, "%s%s (%swritten by %s)",
			                      nw ? " and " : "", fl->path, at,
			                      tset_str(&fl->writers, wr, sizeof wr));
			nw++;
			if (l >= sizeof line)
				break;
		}
		if (nw >= 2)
			fprintf(f, "       false sharing between %s\n", line);
	}
	if (o->kind == OBJ_HEAP || o->kind == OBJ_MMAP)
		fprintf(f, "       allocated at: %s (%" PRIu64 " block%s)\n",
		        o->desc ? o->desc : "unknown call path", o->nallocs, o->nallocs == 1 ? "" : "s");
	else if (o->desc)
		fprintf(f, "       in: %s\n", o->desc);
	if (o->nfields) {
		fprintf(f, "       %-28s %7s %5s %-12s %-12s %9s %9s %12s\n", "field", "offset", "size",
		        "writers", "readers", "stores", "loads", "weight");
		for (unsigned i = 0; i < o->nfields; i++) {
			const struct afield *fl = &o->fields[i];
			char wr[TSET_STR_MAX], rd[TSET_STR_MAX], w[32];
			fprintf(f, "       %-28s %7" PRIu64 " %5" PRIu64 " %-12s %-12s %9" PRIu64 " %9" PRIu64
			        " %12s\n", fl->path, fl->off, fl->size, tset_str(&fl->writers, wr, sizeof wr),
			        tset_str(&fl->readers, rd, sizeof rd), fl->stores, fl->loads,
			        cnum(fl->weight, w, sizeof w));
		}
		if (o->fields_other)
			fprintf(f, "       (%" PRIu64 " accesses to further fields not listed)\n",
			        o->fields_other);
	}
	struct code_line cl[OBJ_CODE_MAX];
	size_t ncl = merge_code(a, o->code, o->ncode, cl);
	for (size_t i = 0; i < ncl && i < 4; i++) {
		char w[32];
		fprintf(f, "       %s %s (%s)\n", i ? "    " : "code", cl[i].where,
		        cnum(cl[i].weight, w, sizeof w));
	}
}

static void object_json(FILE *f, struct attrib *a, const struct aobj *o, size_t rank)
{
	char b[3][40];
	fprintf(f, "{\"rank\":%zu,\"name\":", rank);
	out_json_string(f, o->name);
	fprintf(f, ",\"kind\":\"%s\",\"type\":", obj_kind_name(o->kind));
	out_json_string(f, o->type);
	fprintf(f, ",\"size\":%" PRIu64 ",", o->size);
	fprintf(f, "\"%s\":", o->kind == OBJ_HEAP || o->kind == OBJ_MMAP ? "call_path" : "module");
	out_json_string(f, o->desc);
	fprintf(f, ",\"allocations\":%" PRIu64 ",\"all\":%s,\"true\":%s,\"false\":%s,"
	        "\"events\":%" PRIu64 ",\"true_events\":%" PRIu64 ",\"false_events\":%" PRIu64
	        ",\"pairs\":[", o->nallocs, num(o->w[0], b[0], 40), num(o->w[1], b[1], 40),
	        num(o->w[2], b[2], 40), o->ev[0], o->ev[1], o->ev[2]);
	for (size_t i = 0; i < o->npairs; i++)
		fprintf(f, "%s{\"dst\":%u,\"src\":%u,\"all\":%s,\"true\":%s,\"false\":%s}", i ? "," : "",
		        o->pairs[i].dst, o->pairs[i].src, num(o->pairs[i].w[0], b[0], 40),
		        num(o->pairs[i].w[1], b[1], 40), num(o->pairs[i].w[2], b[2], 40));
	fprintf(f, "],\"fields\":[");
	for (unsigned i = 0; i < o->nfields; i++) {
		const struct afield *fl = &o->fields[i];
		fprintf(f, "%s{\"path\":", i ? "," : "");
		out_json_string(f, fl->path);
		fprintf(f, ",\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"writers\":", fl->off, fl->size);
		tset_json(f, &fl->writers);
		fprintf(f, ",\"readers\":");
		tset_json(f, &fl->readers);
		fprintf(f, ",\"stores\":%" PRIu64 ",\"loads\":%" PRIu64 ",\"true_events\":%" PRIu64
		        ",\"false_events\":%" PRIu64 ",\"weight\":%s}", fl->stores, fl->loads,
		        fl->true_events, fl->false_events, num(fl->weight, b[0], 40));
	}
	fprintf(f, "],\"code\":[");
	for (unsigned i = 0; i < o->ncode; i++) {
		fprintf(f, "%s", i ? "," : "");
		code_json(f, a, &o->code[i]);
	}
	fprintf(f, "]}");
}

static void object_csv(FILE *f, const struct aobj *o, size_t rank)
{
	char b[3][40], pairs[1024];   /* 16 pairs of up to 60 bytes */
	/* every field, however many: "path@offset:writers;..." */
	char *fields = NULL;
	size_t flen = 0;
	FILE *fs = open_memstream(&fields, &flen);
	for (unsigned i = 0; fs && i < o->nfields; i++) {
		char wr[TSET_STR_MAX];
		fprintf(fs, "%s%s@%" PRIu64 ":%s", i ? ";" : "", o->fields[i].path, o->fields[i].off,
		        tset_str(&o->fields[i].writers, wr, sizeof wr));
	}
	if (fs)
		fclose(fs);
	fprintf(f, "%zu,", rank);
	out_csv_field(f, o->name);
	fprintf(f, ",%s,", obj_kind_name(o->kind));
	out_csv_field(f, o->type ? o->type : "");
	fprintf(f, ",%" PRIu64 ",%s,%s,%s,%" PRIu64 ",", o->size, num(o->w[0], b[0], 40),
	        num(o->w[1], b[1], 40), num(o->w[2], b[2], 40), o->ev[0]);
	out_csv_field(f, pairs_str(o, 16, true, pairs, sizeof pairs));
	fputc(',', f);
	out_csv_field(f, fields ? fields : "");
	free(fields);
	fputc(',', f);
	out_csv_field(f, o->desc ? o->desc : "");
	fputc('\n', f);
}

static void objects_text(FILE *f, struct attrib *a, const uint32_t *ix, size_t n, size_t shown)
{
	char w0[32];
	fprintf(f, "Objects by %scommunication: %zu object%s, %" PRIu64 " events, weight %s "
	        "(symbols: %s)\n", a->rank_kind == MX_TRUE ? "true sharing " :
	        a->rank_kind == MX_FALSE ? "false sharing " : "", n, n == 1 ? "" : "s", a->events,
	        cnum(a->weight, w0, sizeof w0), a->symbols_source);
	notes_text(f, a, "");
	for (size_t i = 0; i < a->nobjs; i++)
		if (a->objs[i].as_src_only) {
			fprintf(f, "(an event whose two accesses lie in two objects counts for both)\n");
			break;
		}
	fprintf(f, "%-4s %-24s %-7s %8s %12s %12s %12s %9s  %s\n", "rank", "object", "kind",
	        "size", "all", "true", "false", "events", "thread pairs");
	for (size_t i = 0; i < shown; i++)
		object_text(f, a, &a->objs[ix[i]], i + 1);
	if (shown < n)
		fprintf(f, "(%zu more objects)\n", n - shown);
}

static void objects_csv(FILE *f, struct attrib *a, const uint32_t *ix, size_t n, size_t shown)
{
	(void)n;
	fprintf(f, "rank,object,kind,type,size,all,true,false,events,pairs,fields,where\n");
	for (size_t i = 0; i < shown; i++)
		object_csv(f, &a->objs[ix[i]], i + 1);
}

static void objects_json(FILE *f, struct attrib *a, const uint32_t *ix, size_t n, size_t shown)
{
	(void)n;
	char w0[32];
	fprintf(f, "{\"symbols\":\"%s\",\"events\":%" PRIu64 ",\"weight\":%s,", a->symbols_source,
	        a->events, num(a->weight, w0, sizeof w0));
	notes_json(f, a);
	fprintf(f, ",\"objects\":[");
	for (size_t i = 0; i < shown; i++) {
		fprintf(f, "%s\n", i ? "," : "");
		object_json(f, a, &a->objs[ix[i]], i + 1);
	}
	fprintf(f, "\n]}\n");
}

/* ---- lines --------------------------------------------------------------------- */

static const char *line_objects(const struct attrib *a, const struct aline *l, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	uint32_t seen[8];
	unsigned ns = 0;
	for (unsigned i = 0; i < l->noffs && len + 1 < cap; i++) {
		uint32_t o = l->offs[i].obj;
		bool dup = false;
		for (unsigned k = 0; k < ns; k++)
			dup |= seen[k] == o;
		if (dup || o >= a->nobjs)
			continue;
		if (ns < 8)
			seen[ns++] = o;
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", a->objs[o].name);
	}
	return buf;
}

static void line_text(FILE *f, struct attrib *a, const struct aline *l, size_t rank)
{
	char w[3][32], objs[512];
	fprintf(f, "\n#%zu line 0x%" PRIx64 "  all %s  true %s  false %s  events %" PRIu64
	        "  objects: %s\n", rank, l->line, cnum(l->w[0], w[0], 32), cnum(l->w[1], w[1], 32),
	        cnum(l->w[2], w[2], 32), l->ev[0], line_objects(a, l, objs, sizeof objs));
	fprintf(f, "  %6s %4s %-28s %-12s %-12s %8s %8s %8s %8s  %s\n", "offset", "size",
	        "object.field", "writers", "readers", "stores", "loads", "true", "false", "source");
	for (unsigned i = 0; i < l->noffs; i++) {
		const struct aoff *o = &l->offs[i];
		char name[300], wr[TSET_STR_MAX], rd[TSET_STR_MAX];
		const char *on = o->obj < a->nobjs ? a->objs[o->obj].name : "?";
		if (o->obj < a->nobjs && a->objs[o->obj].kind == OBJ_STATIC)
			snprintf(name, sizeof name, "%s", o->field);
		else
			snprintf(name, sizeof name, "%s %s", on, o->field);
		struct code_line cl[OFF_CODE_MAX];
		size_t ncl = merge_code(a, o->code, o->ncode, cl);
		fprintf(f, "  %6u %4u %-28s %-12s %-12s %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		        "  %s\n", o->off, o->len, name, tset_str(&o->writers, wr, sizeof wr),
		        tset_str(&o->readers, rd, sizeof rd), o->stores, o->loads, o->true_events,
		        o->false_events, ncl ? cl[0].where : "-");
		for (size_t k = 1; k < ncl; k++)
			fprintf(f, "  %6s %4s %-28s %-12s %-12s %8s %8s %8s %8s  %s\n", "", "", "", "", "",
			        "", "", "", "", cl[k].where);
	}
}

static void line_json(FILE *f, struct attrib *a, const struct aline *l, size_t rank)
{
	char b[3][40];
	fprintf(f, "{\"rank\":%zu,\"line\":\"0x%" PRIx64 "\",\"all\":%s,\"true\":%s,\"false\":%s,"
	        "\"events\":%" PRIu64 ",\"true_events\":%" PRIu64 ",\"false_events\":%" PRIu64
	        ",\"offsets\":[", rank, l->line, num(l->w[0], b[0], 40), num(l->w[1], b[1], 40),
	        num(l->w[2], b[2], 40), l->ev[0], l->ev[1], l->ev[2]);
	for (unsigned i = 0; i < l->noffs; i++) {
		const struct aoff *o = &l->offs[i];
		fprintf(f, "%s{\"offset\":%u,\"size\":%u,\"object\":", i ? "," : "", o->off, o->len);
		out_json_string(f, o->obj < a->nobjs ? a->objs[o->obj].name : NULL);
		fprintf(f, ",\"field\":");
		out_json_string(f, o->field);
		fprintf(f, ",\"writers\":");
		tset_json(f, &o->writers);
		fprintf(f, ",\"readers\":");
		tset_json(f, &o->readers);
		fprintf(f, ",\"stores\":%" PRIu64 ",\"loads\":%" PRIu64 ",\"true_events\":%" PRIu64
		        ",\"false_events\":%" PRIu64 ",\"weight\":%s,\"code\":[", o->stores, o->loads,
		        o->true_events, o->false_events, num(o->weight, b[0], 40));
		for (unsigned k = 0; k < o->ncode; k++) {
			fprintf(f, "%s", k ? "," : "");
			code_json(f, a, &o->code[k]);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}");
}

static void line_csv(FILE *f, struct attrib *a, const struct aline *l, size_t rank)
{
	char b[3][40];
	for (unsigned i = 0; i < l->noffs; i++) {
		const struct aoff *o = &l->offs[i];
		char wr[TSET_STR_MAX], rd[TSET_STR_MAX], src[400];
		fprintf(f, "%zu,0x%" PRIx64 ",%s,%s,%s,%" PRIu64 ",%u,%u,", rank, l->line,
		        num(l->w[0], b[0], 40), num(l->w[1], b[1], 40), num(l->w[2], b[2], 40), l->ev[0],
		        o->off, o->len);
		out_csv_field(f, o->obj < a->nobjs ? a->objs[o->obj].name : "");
		fputc(',', f);
		out_csv_field(f, o->field);
		fputc(',', f);
		out_csv_field(f, tset_str(&o->writers, wr, sizeof wr));
		fputc(',', f);
		out_csv_field(f, tset_str(&o->readers, rd, sizeof rd));
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",",
		        o->stores, o->loads, o->true_events, o->false_events);
		out_csv_field(f, o->ncode ? code_str(a, o->code[0].ip, src, sizeof src) : "");
		fputc('\n', f);
	}
}

static void lines_text(FILE *f, struct attrib *a, const uint32_t *ix, size_t n, size_t shown)
{
	char w0[32];
	fprintf(f, "Cache lines by communication: %zu line%s, %" PRIu64 " events, weight %s, "
	        "line size %u (symbols: %s)\n", n, n == 1 ? "" : "s", a->events,
	        cnum(a->weight, w0, sizeof w0), a->line_size, a->symbols_source);
	notes_text(f, a, "");
	for (size_t i = 0; i < shown; i++)
		line_text(f, a, &a->lines[ix[i]], i + 1);
	if (shown < n)
		fprintf(f, "\n(%zu more lines)\n", n - shown);
}

static void lines_csv(FILE *f, struct attrib *a, const uint32_t *ix, size_t n, size_t shown)
{
	(void)n;
	fprintf(f, "rank,line,all,true,false,events,offset,size,object,field,writers,readers,"
	        "stores,loads,true_events,false_events,source\n");
	for (size_t i = 0; i < shown; i++)
		line_csv(f, a, &a->lines[ix[i]], i + 1);
}

static void lines_json(FILE *f, struct attrib *a, const uint32_t *ix, size_t n, size_t shown)
{
	(void)n;
	char w0[32];
	fprintf(f, "{\"symbols\":\"%s\",\"line_size\":%u,\"events\":%" PRIu64 ",\"weight\":%s,",
	        a->symbols_source, a->line_size, a->events, num(a->weight, w0, sizeof w0));
	notes_json(f, a);
	fprintf(f, ",\"lines\":[");
	for (size_t i = 0; i < shown; i++) {
		fprintf(f, "%s\n", i ? "," : "");
		line_json(f, a, &a->lines[ix[i]], i + 1);
	}
	fprintf(f, "\n]}\n");
}

/* ---- the formats ------------------------------------------------------------------ */

/* A table writer: the ranked items ix[0..shown-1] of the n there are. */
typedef void table_writer(FILE *f, struct attrib *a, const uint32_t *ix, size_t n, size_t shown);

static const struct {
	const char *name;
	table_writer *objects, *lines;
} formats[] = {
	[AF_TEXT] = { "text", objects_text, lines_text },
	[AF_CSV] = { "csv", objects_csv, lines_csv },
	[AF_JSON] = { "json", objects_json, lines_json },
	[AF_DOT] = { "dot", NULL, NULL },   /* the functions graph (functions.c) */
};

int attrib_format_parse(const char *s, enum attrib_format *f)
{
	for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
		if (!strcmp(s, formats[i].name)) {
			*f = (enum attrib_format)i;
			return 0;
		}
	return -1;
}

const char *attrib_format_name(enum attrib_format f)
{
	return formats[f].name;
}

/* Sort, rank with sorted(), write with the format's table writer. */
static int write_table(struct attrib *a, FILE *f, enum attrib_format fmt, size_t top, bool objects)
{
	sort_details(a);
	size_t n;
	uint32_t *ix = objects ? sorted_objs(a, &n) : sorted_lines(a, &n);
	if (!ix)
		return -1;
	size_t shown = top && top < n ? top : n;
	table_writer *w = objects ? formats[fmt].objects : formats[fmt].lines;
	if (!w) {   /* refused by the command's options already */
		free(ix);
		return -1;
	}
	w(f, a, ix, n, shown);
	free(ix);
	return ferror(f) ? -1 : 0;
}

int attrib_write_objects(struct attrib *a, FILE *f, enum attrib_format fmt, size_t top)
{
	return write_table(a, f, fmt, top, true);
}

int attrib_write_lines(struct attrib *a, FILE *f, enum attrib_format fmt, size_t top)
{
	return write_table(a, f, fmt, top, false);
}

/* ---- report sections --------------------------------------------------------------- */

void attrib_report_sections(struct attrib *a, FILE *f, size_t top_objects, size_t top_lines)
{
	sort_details(a);
	fprintf(f, "\n== Top objects ==\n");
	notes_text(f, a, "  ");
	size_t n;
	uint32_t *ix = sorted_objs(a, &n);
	if (!ix || !n) {
		fprintf(f, "  (none)\n");
	} else {
		fprintf(f, "  %-4s %-24s %-7s %12s %7s %7s  %s\n", "rank", "object", "kind", "transfers",
		        "share", "false%", "fields / allocated at");
		for (size_t i = 0; i < n && i < top_objects; i++) {
			const struct aobj *o = &a->objs[ix[i]];
			char w[32], what[512] = "";
			size_t l = 0;
			if (o->kind == OBJ_HEAP || o->kind == OBJ_MMAP)
				snprintf(what, sizeof what, "%s", o->desc ? o->desc : "");
			else
				for (unsigned k = 0; k < o->nfields && k < 4 && l + 1 < sizeof what; k++) {
					char wr[TSET_STR_MAX];
					/* static fields say their offset; stack and TLS
					 * paths are offsets already */
					char at[32] = "";
					if (o->kind == OBJ_STATIC)
						snprintf(at, sizeof at, "@%" PRIu64, o->fields[k].off);
					l += (size_t)snprintf(what + l, sizeof what - l, "%s%s%s by %s",
					                      k ? ", " : "", o->fields[k].path, at,
					                      tset_str(&o->fields[k].writers, wr, sizeof wr));
				}
			fprintf(f, "  %-4zu %-24s %-7s %12s %6.1f%% %6.1f%%  %s\n", i + 1, o->name,
			        obj_kind_name(o->kind), cnum(o->w[0], w, sizeof w),
			        a->weight > 0 ? 100.0 * o->w[0] / a->weight : 0.0,
			        o->w[0] > 0 ? 100.0 * o->w[2] / o->w[0] : 0.0, what);
		}
		if (n > top_objects)
			fprintf(f, "  (%zu more; commanalyze objects for all)\n", n - top_objects);
	}
	free(ix);
	fprintf(f, "\n== Top lines ==\n");
	ix = sorted_lines(a, &n);
	if (!ix || !n) {
		fprintf(f, "  (none)\n");
	} else {
		fprintf(f, "  %-4s %-18s %12s %7s %7s  %s\n", "rank", "line", "transfers", "share",
		        "false%", "offsets: field (writers)");
		for (size_t i = 0; i < n && i < top_lines; i++) {
			const struct aline *ln = &a->lines[ix[i]];
			char w[32], what[512] = "";
			size_t l = 0;
			for (unsigned k = 0; k < ln->noffs && k < 4 && l + 1 < sizeof what; k++) {
				const struct aoff *o = &ln->offs[k];
				char wr[TSET_STR_MAX];
				const char *on = o->obj < a->nobjs ? a->objs[o->obj].name : "?";
				bool st = o->obj < a->nobjs && a->objs[o->obj].kind == OBJ_STATIC;
				l += (size_t)snprintf(what + l, sizeof what - l, "%s%u: %s%s%s (%s)",
				                      k ? ", " : "", o->off, st ? "" : on, st ? "" : " ",
				                      o->field, tset_str(&o->writers, wr, sizeof wr));
			}
			fprintf(f, "  %-4zu 0x%-16" PRIx64 " %12s %6.1f%% %6.1f%%  %s\n", i + 1, ln->line,
			        cnum(ln->w[0], w, sizeof w),
			        a->weight > 0 ? 100.0 * ln->w[0] / a->weight : 0.0,
			        ln->w[0] > 0 ? 100.0 * ln->w[2] / ln->w[0] : 0.0, what);
		}
		if (n > top_lines)
			fprintf(f, "  (%zu more; commanalyze lines for all)\n", n - top_lines);
	}
	free(ix);
}
