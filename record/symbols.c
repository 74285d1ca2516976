/* Symbols for portable traces: the instruction addresses the spool's records
 * hold, the executable mappings of the maps files, their ELF and DWARF, one
 * serialized symbol table (formats/symtab.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commtrace.h"
#include "symbols.h"
#include "symtab.h"

/* A set of addresses: open addressing with linear probing while the spool is
 * scanned (a full trace holds millions of records but few distinct code
 * addresses), then the distinct ones sorted in place.  0 marks an empty
 * slot: address 0 is never added. */
struct addrs {
	uint64_t *v;
	size_t n, cap;   /* cap: 0 or a power of two */
	int oom;
};

static size_t addr_slot(uint64_t x, size_t cap)
{
	return (size_t)((x * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static int addr_grow(struct addrs *a)
{
	size_t nc = a->cap ? a->cap * 2 : 4096;
	uint64_t *q = calloc(nc, sizeof *q);
	if (!q)
		return -1;
	for (size_t i = 0; i < a->cap; i++) {
		uint64_t x = a->v[i];
		if (!x)
			continue;
		size_t h = addr_slot(x, nc);
		while (q[h])
			h = (h + 1) & (nc - 1);
		q[h] = x;
	}
	free(a->v);
	a->v = q;
	a->cap = nc;
	return 0;
}

static void addr_add(struct addrs *a, uint64_t x)
{
	if (!x || a->oom)
		return;
	/* at most half full */
	if (2 * (a->n + 1) > a->cap && addr_grow(a)) {
		a->oom = 1;
		return;
	}
	size_t h = addr_slot(x, a->cap);
	while (a->v[h]) {
		if (a->v[h] == x)
			return;
		h = (h + 1) & (a->cap - 1);
	}
	a->v[h] = x;
	a->n++;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Sort v (n values) with an LSD radix sort, 8 bits a pass over the bytes
 * in which the values differ: a recording's data addresses can be a few
 * hundred thousand, where qsort's compare calls cost several times more.
 * qsort when the buffer cannot be had. */
static void sort_u64(uint64_t *v, size_t n)
{
	uint64_t *tmp = n > 64 ? malloc(n * sizeof *tmp) : NULL;
	if (!tmp) {
		qsort(v, n, sizeof *v, cmp_u64);
		return;
	}
	uint64_t differ = 0;
	for (size_t i = 1; i < n; i++)
		differ |= v[i] ^ v[0];
	uint64_t *src = v, *dst = tmp;
	for (unsigned sh = 0; sh < 64; sh += 8) {
		if (!(differ >> sh & 0xff))
			continue;
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> sh & 0xff) + 1]++;
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (size_t i = 0; i < n; i++)
			dst[count[src[i] >> sh & 0xff]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(tmp);
}

/* The set becomes a sorted array of its n distinct addresses. */
static void addr_sort_unique(struct addrs *a)
{
	size_t o = 0;
	for (size_t i = 0; i < a->cap; i++)
		if (a->v[i])
			a->v[o++] = a->v[i];
	a->n = o;
	if (o)
		sort_u64(a->v, o);
}

static void data_add(struct addrs *d, struct st_ranges *r, uint64_t x)
{
	if (symtab_ranges_has(r, x))
		addr_add(d, x);
}

/* Every code address of the spool's records.  Watchpoint hits report the
 * instruction after the access, call sites return addresses: the byte
 * before belongs to the instruction of interest, so both are kept.  A
 * damaged thread file ends its addresses there; the rest still counts.
 * Soft samples that stand for the previous instruction add ip - 1 too, and
 * OpenMP region markers their outlined function.  Data addresses (samples,
 * watchpoints) that can be in a variable (vr) go to d, the call sites'
 * return addresses (allocation sites, whose blocks get a type) to s. */
static int collect_ips(const char *spool, struct st_ranges *vr, struct addrs *a, struct addrs *d,
                       struct addrs *s, char *err, size_t cap)
{
	struct ct_error e;
	struct ct_trace *t = ct_trace_open(spool, &e);
	if (!t) {
		snprintf(err, cap, "%s", e.msg);
		return -1;
	}
	size_t n = ct_trace_nthreads(t);
	for (size_t i = 0; i < n; i++) {
		struct ct_cursor *c = ct_cursor_thread(t, i);
		if (!c)
			continue;
		struct ct_record r;
		while (ct_cursor_next(c, &r, &e) == 1) {
			switch (r.type) {
			case CT_REC_SAMPLE:
				data_add(d, vr, r.u.sample.addr);
				addr_add(a, r.u.sample.ip);
				if (r.u.sample.flags & CT_SAMPLE_PREV_INSN)
					addr_add(a, r.u.sample.ip - 1);
				break;
			case CT_REC_WP_ARM:
				data_add(d, vr, r.u.arm.pub_addr);
				for (unsigned k = 0; k < r.u.arm.nwp && k < CT_WP_MAX; k++)
					data_add(d, vr, r.u.arm.wp_addr[k]);
				break;
			case CT_REC_WP_HIT:
				data_add(d, vr, r.u.hit.addr);
				addr_add(a, r.u.hit.ip);
				addr_add(a, r.u.hit.ip - 1);
				break;
			case CT_REC_MARKER: {
				/* an OpenMP region's outlined function: named by the analyzer */
				uint64_t fn;
				if (r.u.marker.kind == CT_MARK_REGION_BEGIN &&
				    ct_marker_omp_fn(r.u.marker.name, &fn))
					addr_add(a, fn);
				break;
			}
			case CT_REC_OWNER_XFER:
				data_add(d, vr, r.u.oxfer.addr);
				addr_add(a, r.u.oxfer.ip);
				break;
			case CT_REC_OWNER_WIN:
				data_add(d, vr, r.u.owin.addr);
				break;
			case CT_REC_CALLSITE:
				for (unsigned k = 0; k < r.u.callsite.depth && k < CT_CALLSITE_MAX_DEPTH; k++) {
					addr_add(a, r.u.callsite.pc[k]);
					addr_add(a, r.u.callsite.pc[k] - 1);
					addr_add(s, r.u.callsite.pc[k]);
				}
				break;
			default:
				break;
			}
		}
		ct_cursor_free(c);
	}
	ct_trace_close(t);
	if (a->oom || d->oom || s->oom) {
		snprintf(err, cap, "out of memory collecting instruction addresses");
		return -1;
	}
	addr_sort_unique(a);
	addr_sort_unique(d);
	addr_sort_unique(s);
	return 0;
}

/* All maps-*.txt files of the spool, concatenated. */
static char *read_maps(const char *spool, size_t *len, char *err, size_t cap)
{
	DIR *d = opendir(spool);
	if (!d) {
		snprintf(err, cap, "%s: %s", spool, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t n = 0;
	int files = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "maps-", 5) || l < 10 || strcmp(de->d_name + l - 4, ".txt"))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", spool, de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		char chunk[65536];
		size_t got;
		while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
			char *q = realloc(buf, n + got + 2);
			if (!q) {
				fclose(f);
				closedir(d);
				free(buf);
				snprintf(err, cap, "out of memory reading the maps");
				return NULL;
			}
			buf = q;
			memcpy(buf + n, chunk, got);
			n += got;
		}
		fclose(f);
		if (n && buf[n - 1] != '\n')
			buf[n++] = '\n';
		files++;
	}
	closedir(d);
	if (!files) {
		free(buf);
		snprintf(err, cap, "%s: no maps file: no symbols to embed", spool);
		return NULL;
	}
	*len = n;
	return buf ? buf : calloc(1, 1);
}

int embed_symbols(const char *spool_dir, void **payload, size_t *len,
                  void (*note)(void *arg, const char *path, const char *what),
                  void *arg, char *err, size_t cap)
{
	*payload = NULL;
	*len = 0;
	struct addrs a = { 0 }, d = { 0 }, cs = { 0 };
	struct st_ranges vr = { 0 };
	size_t mlen = 0;
	char *maps = read_maps(spool_dir, &mlen, err, cap);
	if (maps && symtab_var_ranges(&vr, maps, mlen))
		snprintf(err, cap, "out of memory reading the maps");
	if (!maps || !vr.v || collect_ips(spool_dir, &vr, &a, &d, &cs, err, cap)) {
		free(maps);
		free(vr.v);
		free(a.v);
		free(d.v);
		free(cs.v);
		return -1;
	}
	free(vr.v);
	struct symtab s;
	symtab_init(&s);
	struct st_addrs sites = { .v = cs.v, .n = cs.n };
	struct st_addrs data = { .v = d.v, .n = d.n };
	struct st_addrs ips = { .v = a.v, .n = a.n, .sites = &sites, .data = &data };
	int rc = symtab_from_maps(&s, maps, mlen, &ips, note, arg);
	/* only what the recorded addresses need: the functions and lines of
	 * the code addresses, the variables (and their types) the data
	 * addresses fall in */
	if (rc == 0)
		rc = symtab_prune(&s, &ips, &data);
	free(maps);
	free(a.v);
	free(d.v);
	free(cs.v);
	if (rc == 0)
		rc = symtab_serialize(&s, payload, len);
	symtab_free(&s);
	if (rc)
		snprintf(err, cap, "out of memory building the symbol tables");
	return rc;
}
