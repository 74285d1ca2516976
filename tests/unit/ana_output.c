/* Output writers (analyze/out_*.c): every format is written to a temporary
 * file and read back: CSV by a small RFC 4180 reader here, JSON and SVG by
 * python3 (json, xml.etree; SKIP when python3 is missing), HDF5 with the
 * HDF5 library and h5dump (SKIP when missing), ComDetective's files by
 * reading the numbers back. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "check.h"
#include "out_util.h"
#ifdef HAVE_HDF5
#include <hdf5.h>
#include <hdf5_hl.h>
#endif

static char tmpdir[128];

static const char *tpath(const char *name)
{
	static char buf[8][512];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
	return buf[k];
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *s = malloc(cap);
	size_t r;
	while (s && (r = fread(s + len, 1, cap - len - 1, f)) > 0) {
		len += r;
		if (cap - len < 2) {
			char *t = realloc(s, cap *= 2);
			if (!t) {
				free(s);
				s = NULL;
			}
			s = t;
		}
	}
	fclose(f);
	if (s)
		s[len] = 0;
	return s;
}

static bool have_prog(const char *name)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

/* ---- test matrices ------------------------------------------------------ */

struct tm_ {
	struct matrix_out m;
	double *cell;
	char **labels;
};

static const char *const odd_label = "a,\"b\"<c>&";

/* n x n matrix; cell (i,j) = i*n + j, some non-integral, some zero. */
static struct tm_ make(size_t n, const char *name, const char *kind, const char *index)
{
	static const struct attr attrs[] = { { "model", "comdetective" }, { "board_size", "127" },
	                                     { "note", "x<y & \"q\"" } };
	struct tm_ t = { 0 };
	t.cell = calloc(n * n + 1, sizeof *t.cell);
	t.labels = calloc(n + 1, sizeof *t.labels);
	for (size_t i = 0; i < n; i++) {
		t.labels[i] = malloc(32);
		snprintf(t.labels[i], 32, "T%zu", i);
		for (size_t j = 0; j < n; j++) {
			double v = (double)(i * n + j);
			if ((i + j) % 3 == 1)
				v = v / 3.0 + 1e-7;
			if ((i + 2 * j) % 5 == 0)
				v = 0;
			t.cell[i * n + j] = v;
		}
	}
	t.m = (struct matrix_out){ .name = name, .kind = kind, .index = index,
	                           .units = "estimated line transfers", .n = n, .cell = t.cell,
	                           .labels = (const char *const *)t.labels, .attrs = attrs, .nattrs = 3 };
	return t;
}

static void unmake(struct tm_ *t)
{
	for (size_t i = 0; i < t->m.n; i++)
		free(t->labels[i]);
	free(t->labels);
	free(t->cell);
}

/* ---- a small RFC 4180 reader -------------------------------------------- */

/* Reads one field at *p into out; returns false at end of input.  Sets *eol
 * when the field ended its line. */
static bool csv_field(const char **p, char *out, size_t len, bool *eol)
{
	const char *s = *p;
	size_t o = 0;
	if (!*s)
		return false;
	if (*s == '"') {
		s++;
		for (;;) {
			if (!*s)
				break;
			if (*s == '"') {
				if (s[1] == '"') {
					if (o + 1 < len) out[o++] = '"';
					s += 2;
					continue;
				}
				s++;
				break;
			}
			if (o + 1 < len) out[o++] = *s;
			s++;
		}
	} else {
		while (*s && *s != ',' && *s != '\n' && *s != '\r') {
			if (o + 1 < len) out[o++] = *s;
			s++;
		}
	}
	out[o] = 0;
	*eol = *s != ',';
	if (*s == ',')
		s++;
	else if (*s == '\r' && s[1] == '\n')
		s += 2;
	else if (*s)
		s++;
	*p = s;
	return true;
}

static void check_csv_back(const struct matrix_out *m, const char *text)
{
	const char *p = text;
	char fld[256];
	bool eol = false;
	size_t n = m->n;
	/* header: empty first cell then the labels */
	CHECK(csv_field(&p, fld, sizeof fld, &eol));
	CHECK_STR(fld, "");
	for (size_t j = 0; j < n; j++) {
		CHECK(!eol);
		CHECK(csv_field(&p, fld, sizeof fld, &eol));
		CHECK_STR(fld, m->labels[j]);
	}
	CHECK(eol);
	for (size_t i = 0; i < n; i++) {
		CHECK(csv_field(&p, fld, sizeof fld, &eol));
		CHECK_STR(fld, m->labels[i]);
		for (size_t j = 0; j < n; j++) {
			CHECK(!eol);
			CHECK(csv_field(&p, fld, sizeof fld, &eol));
			char *end;
			double v = strtod(fld, &end);
			CHECK(*fld && !*end);
			CHECK(v == m->cell[i * n + j]);
			if (v != m->cell[i * n + j])
				printf("  cell %zu,%zu: read %s, expected %.17g\n", i, j, fld, m->cell[i * n + j]);
		}
		CHECK(eol);
	}
	CHECK(!*p);
}

static char *write_to_file(int (*w)(FILE *, const struct matrix_out *), const struct matrix_out *m,
                           const char *name, int *rc)
{
	FILE *f = fopen(tpath(name), "w");
	CHECK(f != NULL);
	if (!f)
		return NULL;
	*rc = w(f, m);
	fclose(f);
	return slurp(tpath(name));
}

/* ---- CSV ----------------------------------------------------------------- */

static void test_csv_roundtrip(void)
{
	struct tm_ t = make(5, "thread_all", "all", "thread");
	t.cell[1] = 1.0 / 3.0;
	t.cell[2] = 123456789012.0;
	t.cell[3] = 0.1;
	t.cell[4] = 2.5e300;
	t.cell[5] = 9007199254740993.0; /* above 2^53 */
	t.cell[6] = 1e-300;
	free(t.labels[2]);
	t.labels[2] = strdup(odd_label);
	free(t.labels[3]);
	t.labels[3] = strdup("line\nbreak");
	int rc = -1;
	char *s = write_to_file(write_matrix_csv, &t.m, "m.csv", &rc);
	CHECK_EQ_U(rc, 0);
	CHECK(s != NULL);
	if (s) {
		check_csv_back(&t.m, s);
		CHECK(strstr(s, "\"a,\"\"b\"\"<c>&\"") != NULL);
		CHECK(strstr(s, ",T0,T1,") == s); /* plain labels are not quoted */
	}
	free(s);
	unmake(&t);
}

static void test_csv_small(void)
{
	for (size_t n = 0; n <= 2; n++) {
		struct tm_ t = make(n, "thread_all", "all", "thread");
		int rc = -1;
		char *s = write_to_file(write_matrix_csv, &t.m, "small.csv", &rc);
		CHECK_EQ_U(rc, 0);
		if (s)
			check_csv_back(&t.m, s);
		if (n == 0)
			CHECK_STR(s, "\n");
		if (n == 1)
			CHECK_STR(s, ",T0\nT0,0\n");
		free(s);
		unmake(&t);
	}
}

/* ---- I/O errors ----------------------------------------------------------- */

static void test_io_error(void)
{
	FILE *f = fopen("/dev/full", "w");
	if (!f) {
		SKIP("no /dev/full");
		return;
	}
	struct tm_ t = make(64, "thread_all", "all", "thread");
	int (*const w[])(FILE *, const struct matrix_out *) = { write_matrix_text, write_matrix_csv,
	                                                         write_matrix_svg };
	for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
		clearerr(f);
		errno = 0;
		CHECK(w[k](f, &t.m) == -1);
		CHECK_EQ_U(errno, ENOSPC);
	}
	clearerr(f);
	errno = 0;
	CHECK(write_matrices_json(f, &t.m, 1) == -1);
	CHECK_EQ_U(errno, ENOSPC);
	fclose(f);
	unmake(&t);
}

/* ---- JSON ----------------------------------------------------------------- */

/* Python prints, per matrix: name, n, null_cells, labels as JSON, attributes
 * as JSON, then every cell as repr() (or None), one per line. */
static const char json_dump_py[] =
	"import json,sys\n"
	"d=json.load(open(sys.argv[1]),parse_constant=lambda c: sys.exit('constant '+c))\n"
	"assert set(d)=={'matrices'}\n"
	"for m in d['matrices']:\n"
	"  print(m['name']); print(m['n']); print(m['null_cells'])\n"
	"  print(json.dumps(m['labels'])); print(json.dumps(m['attributes'],sort_keys=True))\n"
	"  print(m['kind'], m['index'], m['units'], sep='|')\n"
	"  assert len(m['data'])==m['n']\n"
	"  for r in m['data']:\n"
	"    assert len(r)==m['n']\n"
	"    for v in r: print(repr(float(v)) if v is not None else 'None')\n";

static void test_json_roundtrip(void)
{
	if (!have_prog("python3")) {
		SKIP("python3 not installed");
		return;
	}
	struct tm_ a = make(4, "thread_all", "all", "thread");
	struct tm_ b = make(3, "thread_false", "false", "thread");
	a.cell[1] = 1.0 / 3.0;
	a.cell[2] = 123456789012.0;
	a.cell[3] = 2.5e300;
	b.cell[0] = NAN;
	b.cell[4] = INFINITY;
	b.cell[5] = -INFINITY;
	free(a.labels[1]);
	a.labels[1] = strdup(odd_label);
	free(a.labels[2]);
	a.labels[2] = strdup("tab\there\x01 \xff bad utf8 \xc3\xa9");
	struct matrix_out ms[3] = { a.m, b.m, a.m };
	ms[2].n = 0;
	ms[2].name = "empty";
	FILE *f = fopen(tpath("m.json"), "w");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_U(write_matrices_json(f, ms, 3), 0);
	fclose(f);
	FILE *py = fopen(tpath("dump.py"), "w");
	fputs(json_dump_py, py);
	fclose(py);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "python3 %s %s > %s 2>&1", tpath("dump.py"), tpath("m.json"),
	         tpath("json.out"));
	CHECK_EQ_U(system(cmd), 0);
	char *out = slurp(tpath("json.out"));
	CHECK(out != NULL);
	if (!out)
		return;
	char *save = NULL, *line = strtok_r(out, "\n", &save);
	for (size_t k = 0; k < 3 && line; k++) {
		const struct matrix_out *m = &ms[k];
		CHECK_STR(line, m->name);
		line = strtok_r(NULL, "\n", &save);
		CHECK_EQ_U(strtoul(line, NULL, 10), m->n);
		line = strtok_r(NULL, "\n", &save);
		size_t nulls = 0;
		for (size_t c = 0; c < m->n * m->n; c++)
			nulls += !isfinite(m->cell[c]);
		CHECK_EQ_U(strtoul(line, NULL, 10), nulls);
		line = strtok_r(NULL, "\n", &save); /* labels */
		if (k == 0) {
			CHECK(strstr(line, "\"a,\\\"b\\\"<c>&\"") != NULL);
			CHECK(strstr(line, "\"tab\\there\\u0001 \\ufffd bad utf8 \\u00e9\"") != NULL);
		}
		line = strtok_r(NULL, "\n", &save); /* attributes */
		CHECK_STR(line, "{\"board_size\": \"127\", \"model\": \"comdetective\", \"note\": \"x<y & \\\"q\\\"\"}");
		line = strtok_r(NULL, "\n", &save);
		char kiu[200];
		snprintf(kiu, sizeof kiu, "%s|%s|%s", m->kind, m->index, m->units);
		CHECK_STR(line, kiu);
		for (size_t c = 0; c < m->n * m->n; c++) {
			line = strtok_r(NULL, "\n", &save);
			CHECK(line != NULL);
			if (!line)
				break;
			if (!isfinite(m->cell[c])) {
				CHECK_STR(line, "None");
			} else {
				CHECK(strtod(line, NULL) == m->cell[c]);
			}
		}
		line = strtok_r(NULL, "\n", &save);
	}
	CHECK(line == NULL);
	free(out);
	unmake(&a);
	unmake(&b);
}

static void test_json_empty_list(void)
{
	FILE *f = fopen(tpath("e.json"), "w");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_U(write_matrices_json(f, NULL, 0), 0);
	fclose(f);
	char *s = slurp(tpath("e.json"));
	CHECK_STR(s, "{\n  \"matrices\": []\n}\n");
	free(s);
}

/* ---- SVG ------------------------------------------------------------------ */

/* Parses the SVG; prints the number of rects in the cells group, the number
 * of <text> elements, and every text content on its own line; then
 * "fill F" for every cell rect, "legend H" for the height of the colour bar
 * and "frame H" for the height of the matrix frame. */
static const char svg_check_py[] =
	"import sys, xml.etree.ElementTree as ET\n"
	"ns='{http://www.w3.org/2000/svg}'\n"
	"r=ET.parse(sys.argv[1]).getroot()\n"
	"assert r.tag==ns+'svg'\n"
	"g=[e for e in r.iter(ns+'g') if e.get('class')=='cells']\n"
	"print(sum(1 for e in g[0].iter(ns+'rect') if e.get('class')!='zero') if g else 0)\n"
	"ts=list(r.iter(ns+'text')); print(len(ts))\n"
	"for t in ts: print(t.text or '')\n"
	"for e in (g[0].iter(ns+'rect') if g else []):\n"
	"  if e.get('class')!='zero': print('fill',e.get('fill'))\n"
	"for e in r.iter(ns+'rect'):\n"
	"  if e.get('fill')=='url(#ramp)': print('legend',e.get('height'))\n"
	"  if e.get('fill')=='none': print('frame',e.get('height'))\n";

static void write_svg_py(void)
{
	FILE *py = fopen(tpath("svg.py"), "w");
	CHECK(py != NULL);
	if (py) {
		fputs(svg_check_py, py);
		fclose(py);
	}
}

/* The number after "\nkey " in out, or -1. */
static double svg_num(const char *out, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "\n%s ", key);
	const char *p = out ? strstr(out, pat) : NULL;
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

static char *svg_parse(const struct matrix_out *m, const char *name, int *rc)
{
	char *s = write_to_file(write_matrix_svg, m, name, rc);
	free(s);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "python3 %s %s > %s.out 2>&1", tpath("svg.py"), tpath(name), tpath(name));
	int st = system(cmd);
	CHECK_EQ_U(st, 0);
	if (st != 0) {
		snprintf(cmd, sizeof cmd, "%s.out", tpath(name));
		char *o = slurp(cmd);
		printf("  %s: %s\n", name, o ? o : "?");
		free(o);
		return NULL;
	}
	snprintf(cmd, sizeof cmd, "%s.out", tpath(name));
	return slurp(cmd);
}

static void test_svg(void)
{
	if (!have_prog("python3")) {
		SKIP("python3 not installed");
		return;
	}
	write_svg_py();
	static const size_t sizes[] = { 0, 1, 2, 4, 16, 64, 65, 128, 256 };
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t n = sizes[k];
		struct tm_ t = make(n, "thread_all", "all", "thread");
		if (n == 4) {
			free(t.labels[1]);
			t.labels[1] = strdup(odd_label);
		}
		char name[32];
		snprintf(name, sizeof name, "m%zu.svg", n);
		int rc = -1;
		char *out = svg_parse(&t.m, name, &rc);
		CHECK_EQ_U(rc, 0);
		if (out) {
			unsigned long rects = strtoul(out, NULL, 10);
			if (n <= 64)
				CHECK_EQ_U(rects, n * n);       /* one rect per cell */
			else
				CHECK(rects > 0 && rects <= n * n);
			if (n == 4) {
				CHECK(strstr(out, "\na,\"b\"<c>&\n") != NULL); /* label survives escaping */
				CHECK(strstr(out, "\nreceiver thread (row)\n") != NULL);
				CHECK(strstr(out, "\nsender thread (column)\n") != NULL);
			}
			if (n == 0)
				CHECK(strstr(out, "(empty matrix)") != NULL);
		}
		free(out);
		unmake(&t);
	}
}

static void test_svg_symmetric_and_axes(void)
{
	if (!have_prog("python3")) {
		SKIP("python3 not installed");
		return;
	}
	struct tm_ t = make(3, "core_true", "true", "core");
	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < i; j++)
			t.cell[i * 3 + j] = t.cell[j * 3 + i];
	int rc = -1;
	char *out = svg_parse(&t.m, "sym.svg", &rc);
	CHECK_EQ_U(rc, 0);
	CHECK(out && strstr(out, "\ncore\ncore\n"));
	free(out);
	struct attr ax[] = { { "row_axis", "reader" }, { "col_axis", "writer" } };
	t.m.attrs = ax;
	t.m.nattrs = 2;
	out = svg_parse(&t.m, "axes.svg", &rc);
	CHECK(out && strstr(out, "\nreader\nwriter\n"));
	free(out);
	/* all zero: no scale, still well formed */
	for (size_t c = 0; c < 9; c++)
		t.cell[c] = 0;
	out = svg_parse(&t.m, "zero.svg", &rc);
	CHECK(out && strstr(out, "all cells 0"));
	free(out);
	unmake(&t);
}

/* The colour scale starts at 0 (51M next to 72M is not "dark vs bright");
 * "color_min" = "min" and "color_max" change it; the subtitle gives the
 * total, the maximum, the trace and the command; the legend is as tall as
 * a small matrix. */
static void test_svg_scale_and_header(void)
{
	if (!have_prog("python3")) {
		SKIP("python3 not installed");
		return;
	}
	write_svg_py();
	struct tm_ t = make(2, "thread_all", "all", "thread");
	t.cell[0] = 0;
	t.cell[1] = 51e6; /* T0 <- T1 */
	t.cell[2] = 72e6; /* T1 <- T0 */
	t.cell[3] = 0;
	char longtrace[200];
	snprintf(longtrace, sizeof longtrace, "/home/user/%s/run-false-sharing-4t.zst",
	         "a-very-long-directory-name/another-long-directory-name/and-one-more");
	struct attr at[] = { { "trace", longtrace },
	                     { "command", "tests/ubench/p2p -t 4 -n 300000000" },
	                     { "color_min", NULL }, { "color_max", NULL } };
	t.m.attrs = at;
	t.m.nattrs = 2;
	int rc = -1;
	char *out = svg_parse(&t.m, "scale.svg", &rc);
	CHECK_EQ_U(rc, 0);
	CHECK(out != NULL);
	if (out) {
		/* directed: the plain sum of the cells */
		CHECK(strstr(out, "\nestimated line transfers; total 123,000,000, max 72,000,000\n"));
		/* the trace keeps its end, shortened; then the command */
		char want[300];
		snprintf(want, sizeof want, "\ntrace: ...%s\ncommand: tests/ubench/p2p -t 4 -n 300000000\n",
		         longtrace + strlen(longtrace) - 57); /* 60 characters with the dots */
		CHECK(strstr(out, want) != NULL);
		CHECK(strstr(out, "/home/user/a-very") == NULL);
		/* legend: top, middle, bottom = 0, then the zero swatch */
		CHECK(strstr(out, "\n72,000,000\n36,000,000\n0\n0 (none)\n"));
		/* cells: zero grey, 72M the top colour, 51M well above the bottom */
		CHECK(strstr(out, "\nfill #ebebeb\nfill ") != NULL);
		CHECK(strstr(out, "\nfill #fde725\n") != NULL);
		CHECK(strstr(out, "\nfill #440154\n") == NULL);
		/* a 2 x 2 legend is not much taller than the matrix */
		double legh = svg_num(out, "legend"), fh = svg_num(out, "frame");
		CHECK(legh > 0 && fh > 0);
		CHECK(legh <= (fh > 80 ? fh : 80) + 1);
	}
	free(out);

	/* color_min=min: the old min..max scale; a long command keeps its start */
	at[1] = (struct attr){ "command", "./app --first-option 1 --second-option 2 --third-option 3 "
	                                  "--fourth-option 4 --fifth 5" };
	at[2] = (struct attr){ "color_min", "min" };
	t.m.nattrs = 3;
	out = svg_parse(&t.m, "scale_min.svg", &rc);
	CHECK(out && strstr(out, "\n72,000,000\n61,500,000\n51,000,000\n0 (none)\n"));
	CHECK(out && strstr(out, "\nfill #440154\n"));
	CHECK(out && strstr(out, "\ncommand: ./app --first-option 1 --second-option 2 --third-option 3 "
	                         "--fourth-...\n")); /* 67 + "..." */
	free(out);

	/* color_max: a shared scale; smaller than the max: ">=" and clipped */
	at[2] = (struct attr){ "color_min", "zero" };
	at[3] = (struct attr){ "color_max", "1e8" };
	t.m.nattrs = 4;
	out = svg_parse(&t.m, "scale_max.svg", &rc);
	CHECK(out && strstr(out, "\n100,000,000\n50,000,000\n0\n0 (none)\n"));
	CHECK(out && !strstr(out, "\nfill #fde725\n"));
	CHECK(out && strstr(out, "max 72,000,000\n")); /* the subtitle keeps the data's max */
	free(out);
	at[3] = (struct attr){ "color_max", "60000000" };
	out = svg_parse(&t.m, "scale_clip.svg", &rc);
	CHECK(out && strstr(out, "\n\xe2\x89\xa5 60,000,000\n30,000,000\n0\n"));
	free(out);
	at[3] = (struct attr){ "color_max", "junk" }; /* ignored */
	out = svg_parse(&t.m, "scale_bad.svg", &rc);
	CHECK(out && strstr(out, "\n72,000,000\n36,000,000\n0\n"));
	free(out);

	/* symmetric: each pair counted once in the total */
	t.cell[1] = t.cell[2] = 50e6;
	t.m.nattrs = 0;
	out = svg_parse(&t.m, "scale_sym.svg", &rc);
	CHECK(out && strstr(out, "; total 50,000,000 (each pair once), max 50,000,000\n"));
	CHECK(out && !strstr(out, "trace: ") && !strstr(out, "command: "));
	free(out);
	unmake(&t);
}

/* ---- text ----------------------------------------------------------------- */

static void test_text(void)
{
	struct tm_ t = make(4, "thread_all", "all", "thread");
	free(t.labels[1]);
	t.labels[1] = strdup("bad\nlabel");
	int rc = -1;
	char *s = write_to_file(write_matrix_text, &t.m, "m.txt", &rc);
	CHECK_EQ_U(rc, 0);
	CHECK(s && strstr(s, "thread_all: all sharing, by thread (estimated line transfers)\n"));
	CHECK(s && strstr(s, "  model: comdetective\n"));
	CHECK(s && strstr(s, "rows: receiver thread, columns: sender thread"));
	CHECK(s && strstr(s, "bad?label"));
	CHECK(s && strstr(s, "total"));
	/* every grid line has the same length */
	if (s) {
		char *g = strstr(s, "\n\n");
		size_t len0 = 0, lines = 0;
		for (char *l = g ? g + 2 : NULL; l && *l; lines++) {
			char *e = strchr(l, '\n');
			size_t len = e ? (size_t)(e - l) : strlen(l);
			if (!lines)
				len0 = len;
			CHECK_EQ_U(len, len0);
			l = e ? e + 1 : NULL;
		}
		CHECK_EQ_U(lines, 6); /* labels, 4 rows, total */
	}
	free(s);
	t.cell[5] = 1234567; /* (1,1) */
	s = write_to_file(write_matrix_text, &t.m, "m2.txt", &rc);
	CHECK(s && strstr(s, " 1.23M "));
	free(s);
	unmake(&t);

	static const size_t sizes[] = { 0, 1, 16, 17, 64, 65, 128, 129, 256 };
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		struct tm_ u = make(sizes[k], "thread_all", "all", "thread");
		s = write_to_file(write_matrix_text, &u.m, "n.txt", &rc);
		CHECK_EQ_U(rc, 0);
		CHECK(s != NULL);
		if (s && sizes[k] > 16)
			CHECK(strstr(s, "the 32 largest follow") != NULL);
		if (s && sizes[k] == 0)
			CHECK(strstr(s, "(empty matrix)") != NULL);
		free(s);
		unmake(&u);
	}
}

/* ---- HDF5 ----------------------------------------------------------------- */

#ifdef HAVE_HDF5
static char *read_str_attr(hid_t obj, const char *name)
{
	hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
	if (a < 0)
		return NULL;
	hid_t t = H5Aget_type(a);
	char *res = NULL;
	if (H5Tis_variable_str(t) > 0) {
		char *v = NULL;
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		H5Tset_cset(mt, H5T_CSET_UTF8);
		if (H5Aread(a, mt, &v) >= 0 && v) {
			res = strdup(v);
			H5free_memory(v);
		}
		H5Tclose(mt);
	}
	H5Tclose(t);
	H5Aclose(a);
	return res;
}
#endif

static void test_h5(void)
{
#ifndef HAVE_HDF5
	struct ct_error err = { { 0 } };
	CHECK(write_matrices_h5(tpath("m.h5"), NULL, 0, &err) == -1);
	CHECK(strstr(err.msg, "built without HDF5: install libhdf5-dev and rebuild") != NULL);
	SKIP("built without HDF5");
#else
	struct tm_ a = make(4, "thread_all", "all", "thread");
	struct tm_ b = make(1, "core/true", "true", "core");
	struct tm_ c = make(0, "socket_all", "all", "socket");
	a.cell[3] = 1.0 / 3.0;
	a.cell[4] = NAN;
	free(a.labels[1]);
	a.labels[1] = strdup(odd_label);
	struct matrix_out ms[4] = { a.m, b.m, c.m, a.m }; /* the last repeats a name */
	struct ct_error err = { { 0 } };
	CHECK_EQ_U(write_matrices_h5(tpath("m.h5"), ms, 4, &err), 0);
	/* overwrite: the second write replaces the file */
	CHECK_EQ_U(write_matrices_h5(tpath("m.h5"), ms, 4, &err), 0);

	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t f = H5Fopen(tpath("m.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
	CHECK(f >= 0);
	if (f < 0)
		return;
	char *s = read_str_attr(f, "format");
	CHECK_STR(s, "commtrace matrices");
	free(s);
	/* a number stored as a number */
	uint64_t nmat = 0;
	hid_t na = H5Aopen(f, "matrices", H5P_DEFAULT);
	CHECK(na >= 0 && H5Aread(na, H5T_NATIVE_UINT64, &nmat) >= 0);
	CHECK_EQ_U(nmat, 4);
	if (na >= 0)
		H5Aclose(na);
	static const char *const names[4] = { "thread_all", "core_true", "socket_all", "thread_all_2" };
	for (size_t k = 0; k < 4; k++) {
		const struct matrix_out *m = &ms[k];
		hid_t d = H5Dopen2(f, names[k], H5P_DEFAULT);
		CHECK(d >= 0);
		if (d < 0)
			continue;
		hid_t sp = H5Dget_space(d);
		hsize_t dims[2] = { 99, 99 };
		CHECK_EQ_U(H5Sget_simple_extent_ndims(sp), 2);
		H5Sget_simple_extent_dims(sp, dims, NULL);
		CHECK_EQ_U(dims[0], m->n);
		CHECK_EQ_U(dims[1], m->n);
		hid_t dt = H5Dget_type(d);
		CHECK(H5Tequal(dt, H5T_IEEE_F64LE) > 0);
		H5Tclose(dt);
		if (m->n) {
			double *v = calloc(m->n * m->n, sizeof *v);
			CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
			for (size_t q = 0; q < m->n * m->n; q++)
				CHECK(v[q] == m->cell[q] || (isnan(v[q]) && isnan(m->cell[q])));
			free(v);
		}
		H5Sclose(sp);
		/* the labels as the scales of both dimensions (INDEX_row, INDEX_column) */
		if (m->n) {
			CHECK_EQ_U(H5DSget_num_scales(d, 0), 1);
			CHECK_EQ_U(H5DSget_num_scales(d, 1), 1);
			hid_t sc = H5Dopen2(f, k == 1 ? "core_column" : k == 2 ? "socket_column" :
			                                                     "thread_column", H5P_DEFAULT);
			CHECK(sc >= 0 && H5DSis_attached(d, sc, 1) > 0);
			if (sc >= 0)
				H5Dclose(sc);
		}
				s = read_str_attr(d, "kind"); CHECK_STR(s, m->kind); free(s);
		s = read_str_attr(d, "index"); CHECK_STR(s, m->index); free(s);
		s = read_str_attr(d, "units"); CHECK_STR(s, m->units); free(s);
		s = read_str_attr(d, "model"); CHECK_STR(s, "comdetective"); free(s);
		s = read_str_attr(d, "note"); CHECK_STR(s, "x<y & \"q\""); free(s);
		/* labels */
		hid_t la = H5Aopen(d, "labels", H5P_DEFAULT);
		CHECK(la >= 0);
		if (la >= 0 && m->n) {
			hid_t lsp = H5Aget_space(la);
			hsize_t ln = 0;
			H5Sget_simple_extent_dims(lsp, &ln, NULL);
			CHECK_EQ_U(ln, m->n);
			char **lv = calloc(m->n, sizeof *lv);
			hid_t mt = H5Tcopy(H5T_C_S1);
			H5Tset_size(mt, H5T_VARIABLE);
			H5Tset_cset(mt, H5T_CSET_UTF8);
			CHECK(H5Aread(la, mt, lv) >= 0);
			for (size_t i = 0; i < m->n; i++)
				CHECK_STR(lv[i], m->labels[i]);
			H5Dvlen_reclaim(mt, lsp, H5P_DEFAULT, lv);
			free(lv);
			H5Tclose(mt);
			H5Sclose(lsp);
		}
		if (la >= 0)
			H5Aclose(la);
		H5Dclose(d);
	}
	H5Fclose(f);

	if (have_prog("h5dump")) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "h5dump -A %s > %s 2>&1", tpath("m.h5"), tpath("h5dump.out"));
		CHECK_EQ_U(system(cmd), 0);
		char *d = slurp(tpath("h5dump.out"));
		CHECK(d && strstr(d, "DATASET \"thread_all\""));
		CHECK(d && strstr(d, "DATASPACE  SIMPLE { ( 4, 4 ) / ( 4, 4 ) }"));
		CHECK(d && strstr(d, "ATTRIBUTE \"labels\""));
		CHECK(d && strstr(d, "\"comdetective\""));
		free(d);
	} else {
		printf("SKIP test_h5_h5dump: h5dump not installed\n");
	}

	/* unwritable path: -1, the message names the file, nothing printed */
	err.msg[0] = 0;
	CHECK(write_matrices_h5("/nonexistent-dir-ct/sub/m.h5", ms, 1, &err) == -1);
	CHECK(strstr(err.msg, "/nonexistent-dir-ct/sub/m.h5") != NULL);
	CHECK(errno != 0);

	/* n = 256 */
	struct tm_ big = make(256, "thread_all", "all", "thread");
	CHECK_EQ_U(write_matrices_h5(tpath("big.h5"), &big.m, 1, &err), 0);
	unmake(&big);
	unmake(&a);
	unmake(&b);
	unmake(&c);
#endif
}

/* ---- ComDetective --------------------------------------------------------- */

/* Reads a headerless CSV of numbers into v (row-major, as in the file). */
static size_t read_plain_csv(const char *path, double *v, size_t max, size_t *rows)
{
	char *s = slurp(path);
	size_t k = 0;
	*rows = 0;
	if (!s)
		return 0;
	for (char *p = s; *p;) {
		char *end;
		double x = strtod(p, &end);
		if (end == p)
			break;
		if (k < max)
			v[k] = x;
		k++;
		p = end;
		if (*p == ',')
			p++;
		else if (*p == '\n')
			p++, (*rows)++;
		else
			break;
	}
	free(s);
	return k;
}

static void test_comdetective(void)
{
	struct tm_ ta = make(3, "thread_all", "all", "thread");   /* directed */
	struct tm_ tt = make(3, "thread_true", "true", "thread");
	struct tm_ tf = make(3, "thread_false", "false", "thread");
	struct tm_ ca = make(2, "cpu_all", "all", "cpu");
	struct tm_ pc = make(2, "core_all", "all", "core");     /* physical cores: no file */
	struct tm_ sa = make(2, "socket_all", "all", "socket");
	const struct cd_files id = { "app", 4242, 128 };
	/* a symmetric one is written as is */
	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < i; j++)
			tt.cell[i * 3 + j] = tt.cell[j * 3 + i];
	ta.cell[1] = 1.0 / 3.0;
	struct matrix_out ms[6] = { pc.m, ta.m, tt.m, tf.m, ca.m, sa.m };
	struct ct_error err = { { 0 } };
	const char *dir = tpath("cd/nested");
	CHECK_EQ_U(write_comdetective_csv(dir, &id, ms, 6, &err), 0);
	static const char *const files[] = { "app-4242-as_matrix.csv", "app-4242-ts_matrix.csv",
	                                     "app-4242-fs_matrix.csv", "app-4242-as_core_matrix.csv" };
	for (size_t k = 0; k < 4; k++) {
		char path[400];
		snprintf(path, sizeof path, "%s/%s", dir, files[k]);
		const struct matrix_out *m = &ms[k + 1];
		size_t n = m->n, rows;
		double v[16];
		CHECK_EQ_U(read_plain_csv(path, v, 16, &rows), n * n);
		CHECK_EQ_U(rows, n);
		bool sym = k == 1;
		for (size_t r = 0; r < n; r++)
			for (size_t j = 0; j < n; j++) {
				size_t i = n - 1 - r; /* last row first */
				double want = m->cell[i * n + j] + (sym ? 0 : m->cell[j * n + i]);
				CHECK_NEAR(v[r * n + j], want, 0.005 + 1e-9);
			}
	}
	char path[400], *s;
	struct stat st;
	snprintf(path, sizeof path, "%s/app-4242-ts_core_matrix.csv", dir);
	CHECK(stat(path, &st) < 0); /* no cpu true-sharing matrix given */
	snprintf(path, sizeof path, "%s/as_matrix.csv", dir);
	CHECK(stat(path, &st) < 0); /* always with ComDetective's prefix */
	/* the stats line: volumes are the directed sums (half the symmetric
	 * one's), missing files count 0; gbytes with the line size (128) */
	double vol[4] = { 0 };
	for (size_t i = 0; i < 9; i++) {
		vol[0] += ta.cell[i];
		vol[1] += tt.cell[i] / 2;
		vol[2] += tf.cell[i];
	}
	for (size_t i = 0; i < 4; i++)
		vol[3] += ca.cell[i];
	char want[400];
	snprintf(want, sizeof want,
	         "COMDETECTIVE STATS: fs_volume:%.2f, fs_core_volume:0.00, ts_volume:%.2f, "
	         "ts_core_volume:0.00, as_volume:%.2f, as_core_volume:4.00, "
	         "cache_line_transfer:4.00, cache_line_transfer_millions:0.00, "
	         "cache_line_transfer_gbytes:0.00\n", vol[2], vol[1], vol[0]);
	CHECK_NEAR(vol[3], 4.0000002, 1e-9);
	snprintf(path, sizeof path, "%s/app-4242-comdetective.log", dir);
	s = slurp(path);
	CHECK_STR(s, want);
	free(s);
	snprintf(path, sizeof path, "%s/app-4242-as_matrix.csv", dir);
	s = slurp(path);
	/* 3x3, row 2 first: directed cells summed with their mirror, %.2f */
	CHECK(s && strchr(s, ' ') == NULL && strstr(s, ",\n") == NULL);
	free(s);
	snprintf(path, sizeof path, "%s/app-4242-as_core_matrix.csv", dir);
	s = slurp(path);
	/* core 2x2 is [[0, 1/3+1e-7], [2/3+1e-7, 3]]: M + M^T, last row first */
	CHECK_STR(s, "1.00,6.00\n0.00,1.00\n");
	free(s);

	/* n = 0, n = 1, n = 256 */
	struct tm_ z = make(0, "thread_all", "all", "thread");
	struct tm_ o = make(1, "thread_all", "all", "thread");
	struct tm_ big = make(256, "thread_all", "all", "cpu");
	struct matrix_out ms2[3] = { z.m, o.m, big.m };
	CHECK_EQ_U(write_comdetective_csv(tpath("cd2"), &id, ms2, 3, &err), 0);
	s = slurp(tpath("cd2/app-4242-as_matrix.csv"));
	CHECK_STR(s, "");
	free(s);
	CHECK_EQ_U(write_comdetective_csv(tpath("cd3"), &id, ms2 + 1, 1, &err), 0);
	s = slurp(tpath("cd3/app-4242-as_matrix.csv"));
	CHECK_STR(s, "0.00\n");
	free(s);
	s = slurp(tpath("cd2/app-4242-as_core_matrix.csv"));
	CHECK(s && strlen(s) > 256 * 256 * 4);
	free(s);

	/* nothing to write */
	CHECK(write_comdetective_csv(tpath("cd4"), &id, &sa.m, 1, &err) == -1);
	CHECK(strstr(err.msg, "cd4") != NULL);

	/* unwritable: a path below a regular file */
	FILE *f = fopen(tpath("plainfile"), "w");
	if (f)
		fclose(f);
	err.msg[0] = 0;
	errno = 0;
	CHECK(write_comdetective_csv(tpath("plainfile/sub"), &id, ms + 1, 1, &err) == -1);
	CHECK_EQ_U(errno, ENOTDIR);
	CHECK(strstr(err.msg, "plainfile/sub") != NULL);

	unmake(&z), unmake(&o), unmake(&big);
	unmake(&ta), unmake(&tt), unmake(&tf), unmake(&ca), unmake(&pc), unmake(&sa);
}

/* ---- sparse forms (past OUT_DENSE_MAX rows, or asked for) ------------------ */

/* A 2,000 x 2,000 matrix held as its four non-zero cells. */
static const struct mx_triplet sparse_cells[] = {
	{ 0, 1999, 2.5 }, { 5, 5, 7 }, { 5, 1000, 1e-3 }, { 1999, 0, 2.5 },
};
static const char *sparse_label(size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "T%zu", i);
	return buf;
}

static struct tm_ make_sparse(void)
{
	struct tm_ t = { 0 };
	size_t n = 2000;
	t.labels = calloc(n, sizeof *t.labels);
	char buf[32];
	for (size_t i = 0; t.labels && i < n; i++)
		t.labels[i] = strdup(sparse_label(i, buf, sizeof buf));
	t.m = (struct matrix_out){ .name = "thread_all", .kind = "all", .index = "thread",
	                           .units = "estimated line transfers", .n = n,
	                           .nz = sparse_cells, .nnz = 4,
	                           .labels = (const char *const *)t.labels };
	return t;
}

static void unmake_labels(struct tm_ *t)
{
	for (size_t i = 0; t->labels && i < t->m.n; i++)
		free(t->labels[i]);
	free(t->labels);
}

static void test_sparse_csv_json(void)
{
	struct tm_ t = make_sparse();
	int rc = -1;
	char *s = write_to_file(write_matrix_csv, &t.m, "sp.csv", &rc);
	CHECK_EQ_U(rc, 0);
	CHECK_STR(s, "row,column,row_label,column_label,value\n"
	             "0,1999,T0,T1999,2.5\n5,5,T5,T5,7\n5,1000,T5,T1000,0.001\n1999,0,T1999,T0,2.5\n");
	free(s);
	FILE *f = fopen(tpath("sp.json"), "w");
	CHECK(f && write_matrices_json(f, &t.m, 1) == 0);
	if (f)
		fclose(f);
	s = slurp(tpath("sp.json"));
	CHECK(s && strstr(s, "\"n\": 2000,\n") != NULL);
	CHECK(s && strstr(s, "\"layout\": \"sparse\",\n      \"nnz\": 4,\n      \"cells\": [\n"
	                     "        [0, 1999, 2.5],\n        [5, 5, 7],\n        [5, 1000, 0.001],\n"
	                     "        [1999, 0, 2.5]\n      ],\n      \"null_cells\": 0\n") != NULL);
	CHECK(s && strstr(s, "\"data\"") == NULL);
	free(s);
	/* cells read back from either form: a binary search in the sparse one */
	CHECK_NEAR(out_cell_sparse(&t.m, 5, 1000), 1e-3, 0);
	CHECK_NEAR(out_cell_sparse(&t.m, 1999, 0), 2.5, 0);
	CHECK_NEAR(out_cell_sparse(&t.m, 1000, 5), 0, 0);
	unmake_labels(&t);
}

/* The form follows m->form: a small dense matrix as triplets, a sparse one
 * in the dense layout, the same text as the dense matrix's. */
static void test_forms_either_way(void)
{
	struct tm_ t = make(3, "thread_all", "all", "thread");
	int rc = -1;
	char *dense = write_to_file(write_matrix_csv, &t.m, "d.csv", &rc);
	struct mx_triplet nz[9];
	size_t k = 0;
	for (size_t c = 0; c < 9; c++)
		if (t.cell[c] != 0)
			nz[k++] = (struct mx_triplet){ (uint32_t)(c / 3), (uint32_t)(c % 3), t.cell[c] };
	struct matrix_out sp = t.m;
	sp.cell = NULL;
	sp.nz = nz;
	sp.nnz = k;
	CHECK(!out_sparse(&sp));          /* 3 rows: dense unless asked */
	char *d2 = write_to_file(write_matrix_csv, &sp, "d2.csv", &rc);
	CHECK(dense && d2 && !strcmp(dense, d2));
	t.m.form = sp.form = OUT_FORM_SPARSE;
	char *s1 = write_to_file(write_matrix_csv, &t.m, "s1.csv", &rc);
	char *s2 = write_to_file(write_matrix_csv, &sp, "s2.csv", &rc);
	CHECK(s1 && s2 && !strcmp(s1, s2));
	/* one line per non-zero cell under the header */
	size_t lines = 0;
	for (const char *p = s1; p && *p; p++)
		lines += *p == '\n';
	CHECK_EQ_U(lines, k + 1);
	free(dense), free(d2), free(s1), free(s2);
	unmake(&t);
}

/* Text: the top cells, each pair once; SVG: a density map of at most
 * OUT_BINS x OUT_BINS bins whatever n. */
static void test_sparse_text_svg(void)
{
	struct tm_ t = make_sparse();
	int rc = -1;
	char *s = write_to_file(write_matrix_text, &t.m, "sp.txt", &rc);
	CHECK_EQ_U(rc, 0);
	CHECK(s && strstr(s, "(2000 x 2000: too large for a character map") != NULL);
	CHECK(s && strstr(s, "total 12 in 4 non-zero cells") != NULL);   /* directed: no mirror of (5, 1000) */
	CHECK(s && strstr(s, "   1  T5        T5          7   58.3%\n   2  T0        T1999     2.5   20.8%\n") != NULL);
	free(s);
	struct out_binned b;
	CHECK(out_bin(&t.m, &b) == 0);
	CHECK_EQ_U(b.k, 8);               /* ceil(2000 / 256) */
	CHECK_EQ_U(b.m.n, 250);
	CHECK_NEAR(b.cell[0 * 250 + 249], 2.5, 0);
	CHECK_NEAR(b.cell[0 * 250 + 0], 7, 0);
	CHECK_NEAR(b.cell[0 * 250 + 125], 1e-3, 0);
	CHECK_NEAR(b.cell[249 * 250 + 0], 2.5, 0);
	CHECK_STR(b.m.labels[249], "1992-1999");
	out_binned_free(&b);
	if (!have_prog("python3")) {
		SKIP("python3 not installed");
		unmake_labels(&t);
		return;
	}
	write_svg_py();
	char *out = svg_parse(&t.m, "sp.svg", &rc);
	CHECK_EQ_U(rc, 0);
	if (out) {
		unsigned long rects = strtoul(out, NULL, 10);
		CHECK(rects > 0 && rects <= (unsigned long)OUT_BINS * OUT_BINS);
		CHECK(strstr(out, "\nreceiver thread (row; bins of 8)\n") != NULL);
		CHECK(strstr(out, "\nsender thread (column; bins of 8)\n") != NULL);
	}
	free(out);
	unmake_labels(&t);
}

/* HDF5, sparse: the four cells as compound elements, n and layout as
 * attributes, the labels in the thread_row dataset. */
static void test_h5_sparse(void)
{
#ifndef HAVE_HDF5
	SKIP("built without HDF5");
#else
	struct tm_ t = make_sparse();
	struct ct_error err = { { 0 } };
	CHECK_EQ_U(write_matrices_h5(tpath("sp.h5"), &t.m, 1, &err), 0);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t f = H5Fopen(tpath("sp.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t d = f < 0 ? -1 : H5Dopen2(f, "thread_all", H5P_DEFAULT);
	CHECK(d >= 0);
	if (d >= 0) {
		hid_t sp = H5Dget_space(d);
		hsize_t dim = 0;
		CHECK(H5Sget_simple_extent_ndims(sp) == 1);
		H5Sget_simple_extent_dims(sp, &dim, NULL);
		CHECK_EQ_U(dim, 4);
		H5Sclose(sp);
		hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(struct mx_triplet));
		H5Tinsert(mt, "row", offsetof(struct mx_triplet, row), H5T_NATIVE_UINT32);
		H5Tinsert(mt, "column", offsetof(struct mx_triplet, col), H5T_NATIVE_UINT32);
		H5Tinsert(mt, "value", offsetof(struct mx_triplet, v), H5T_NATIVE_DOUBLE);
		struct mx_triplet back[4] = { { 0, 0, 0 } };
		CHECK(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
		H5Tclose(mt);
		CHECK(memcmp(back, sparse_cells, sizeof back) == 0);
		uint64_t n = 0;
		hid_t a = H5Aopen(d, "n", H5P_DEFAULT);
		CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_UINT64, &n) >= 0);
		CHECK_EQ_U(n, 2000);
		if (a >= 0)
			H5Aclose(a);
		char *layout = read_str_attr(d, "layout");
		CHECK_STR(layout, "sparse");
		free(layout);
		CHECK(H5Aexists(d, "labels") == 0);
		H5Dclose(d);
	}
	hid_t l = f < 0 ? -1 : H5Dopen2(f, "thread_row", H5P_DEFAULT);
	CHECK(l >= 0);
	if (l >= 0) {
		hid_t sp = H5Dget_space(l);
		CHECK_EQ_U(H5Sget_simple_extent_npoints(sp), 2000);
		H5Sclose(sp);
		H5Dclose(l);
	}
	if (f >= 0)
		H5Fclose(f);
	unmake_labels(&t);
#endif
}

/* ---- every writer on n = 0, 1, 256 and NULL labels ------------------------ */

static void test_sizes_all_writers(void)
{
	static const size_t sizes[] = { 0, 1, 256 };
	for (size_t k = 0; k < 3; k++) {
		struct tm_ t = make(sizes[k], "thread_all", "all", "thread");
		int rc = -1;
		char *s;
		s = write_to_file(write_matrix_csv, &t.m, "sz.csv", &rc); CHECK_EQ_U(rc, 0); free(s);
		s = write_to_file(write_matrix_text, &t.m, "sz.txt", &rc); CHECK_EQ_U(rc, 0); free(s);
		s = write_to_file(write_matrix_svg, &t.m, "sz.svg", &rc); CHECK_EQ_U(rc, 0); free(s);
		FILE *f = fopen(tpath("sz.json"), "w");
		CHECK_EQ_U(write_matrices_json(f, &t.m, 1), 0);
		fclose(f);
		/* labels missing: indices are used */
		struct matrix_out nl = t.m;
		nl.labels = NULL;
		nl.attrs = NULL;
		nl.nattrs = 0;
		nl.units = NULL;
		nl.kind = NULL;
		s = write_to_file(write_matrix_csv, &nl, "nl.csv", &rc); CHECK_EQ_U(rc, 0);
		if (sizes[k] == 1)
			CHECK_STR(s, ",0\n0,0\n");
		free(s);
		s = write_to_file(write_matrix_text, &nl, "nl.txt", &rc); CHECK_EQ_U(rc, 0); free(s);
		s = write_to_file(write_matrix_svg, &nl, "nl.svg", &rc); CHECK_EQ_U(rc, 0); free(s);
		unmake(&t);
	}
}

int main(void)
{
	check_tmp_path(tmpdir, sizeof tmpdir, "ana_output.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		printf("FAIL setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	RUN(test_csv_roundtrip);
	RUN(test_csv_small);
	RUN(test_io_error);
	RUN(test_json_roundtrip);
	RUN(test_json_empty_list);
	RUN(test_svg);
	RUN(test_svg_symmetric_and_axes);
	RUN(test_svg_scale_and_header);
	RUN(test_text);
	RUN(test_h5);
	RUN(test_comdetective);
	RUN(test_sizes_all_writers);
	RUN(test_sparse_csv_json);
	RUN(test_forms_either_way);
	RUN(test_sparse_text_svg);
	RUN(test_h5_sparse);
	if (!getenv("CT_KEEP_TMP")) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("note: could not remove %s\n", tmpdir);
	} else {
		printf("kept %s\n", tmpdir);
	}
	return check_summary();
}
