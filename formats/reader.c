/* Reading traces (a joined trace.zst or a spool directory), cursors, and the
 * join.  Every input is untrusted: every length is checked against what is
 * really there, every count against what the bytes could hold, and nothing
 * is allocated from an untrusted length beyond CT_BLOCK_MAX.
 *
 * Opening scans the frame structure once (frame headers only, never the
 * data) and builds a per-thread list of frame offsets plus the table of
 * metadata sections.  Cursors decompress one frame per thread at a time. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "commtrace.h"

#define FMT(a, b) __attribute__((format(printf, a, b)))

static void seterr(struct ct_error *err, const char *fmt, ...) FMT(2, 3);
static void seterr(struct ct_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | (uint32_t)rd16(p + 2) << 16; }

/* ---- mapped files ------------------------------------------------------------ */

struct src {
	char *path;
	const uint8_t *map;     /* NULL for an empty file */
	size_t size;
	size_t valid_end;       /* end of the last whole frame indexed */
	bool borrowed;          /* map belongs to the caller */
};

/* Files inside a spool directory are the recorder's own: a symbolic link
 * there was put by someone else and is not followed (in_spool). */
static int map_file(const char *path, bool in_spool, struct src *s, struct ct_error *err)
{
	memset(s, 0, sizeof *s);
	int fd = open(path, O_RDONLY | O_CLOEXEC | (in_spool ? O_NOFOLLOW : 0));
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		seterr(err, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	s->size = (size_t)st.st_size;
	if (s->size) {
		void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			seterr(err, "%s: mmap: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		s->map = m;
	}
	close(fd);
	s->path = strdup(path);
	if (!s->path) {
		if (s->map)
			munmap((void *)s->map, s->size);
		seterr(err, "%s: out of memory", path);
		return -1;
	}
	return 0;
}

static void unmap_file(struct src *s)
{
	if (s->map && !s->borrowed)
		munmap((void *)s->map, s->size);
	free(s->path);
	memset(s, 0, sizeof *s);
}

/* ---- frame scanner (shared by the reader and the join) ----------------------- */

enum { FR_SECTION, FR_FOREIGN, FR_DATA };

struct frame_scan {
	int what;               /* FR_* */
	uint64_t size;          /* whole frame, header included */
	uint16_t kind;          /* FR_SECTION */
	const uint8_t *payload; /* FR_SECTION: body after the section header */
	size_t plen;
	uint64_t content;       /* FR_DATA: decompressed size */
};

/* One frame at off.  1 with *f filled, 0 at the end of the file, -1 with why
 * filled if the bytes at off are not a whole, acceptable frame. */
static int scan_frame(const uint8_t *base, size_t total, size_t off, struct frame_scan *f,
                      char *why, size_t whycap)
{
	size_t left = total - off;
	memset(f, 0, sizeof *f);
	if (left == 0)
		return 0;
	if (left < 4) {
		snprintf(why, whycap, "truncated frame header (%zu bytes left)", left);
		return -1;
	}
	const uint8_t *p = base + off;
	uint32_t magic = rd32(p);
	if ((magic & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START) {
		if (left < 8) {
			snprintf(why, whycap, "truncated skippable frame header (%zu bytes left)", left);
			return -1;
		}
		uint64_t sz = rd32(p + 4);
		if (sz > left - 8) {
			snprintf(why, whycap, "skippable frame of %llu bytes extends past the end of the file (%zu bytes left)",
			         (unsigned long long)sz, left - 8);
			return -1;
		}
		f->size = 8 + sz;
		if (magic == CT_SKIPPABLE_MAGIC && sz >= CT_SECTION_HEADER_BYTES &&
		    rd32(p + 8) == CT_SECTION_MAGIC) {
			f->what = FR_SECTION;
			f->kind = rd16(p + 12);
			f->payload = p + 8 + CT_SECTION_HEADER_BYTES;
			f->plen = (size_t)sz - CT_SECTION_HEADER_BYTES;
		} else {
			f->what = FR_FOREIGN;
		}
		return 1;
	}
	if (magic == ZSTD_MAGICNUMBER) {
		unsigned long long cs = ZSTD_getFrameContentSize(p, left);
		if (cs == ZSTD_CONTENTSIZE_ERROR) {
			snprintf(why, whycap, "bad data frame header");
			return -1;
		}
		if (cs == ZSTD_CONTENTSIZE_UNKNOWN) {
			snprintf(why, whycap, "data frame without a content size");
			return -1;
		}
		if (cs > CT_BLOCK_MAX) {
			snprintf(why, whycap, "data frame claims %llu bytes of content (limit %u)",
			         cs, (unsigned)CT_BLOCK_MAX);
			return -1;
		}
		if (cs < CT_BLOCK_HEADER_BYTES) {
			snprintf(why, whycap, "data frame of %llu bytes is shorter than a block header", cs);
			return -1;
		}
		size_t fs = ZSTD_findFrameCompressedSize(p, left);
		if (ZSTD_isError(fs)) {
			snprintf(why, whycap, "truncated or damaged data frame (%s)", ZSTD_getErrorName(fs));
			return -1;
		}
		f->what = FR_DATA;
		f->size = fs;
		f->content = cs;
		return 1;
	}
	snprintf(why, whycap, "unknown frame magic 0x%08x", magic);
	return -1;
}

/* Checks a HEADER section body; -1 with why filled if this reader must refuse. */
static int check_header(const uint8_t *p, size_t len, struct ct_header *h, char *why, size_t cap)
{
	if (ct_header_decode(p, len, h) < 0) {
		snprintf(why, cap, "HEADER section of %zu bytes is too short (%d needed)", len, CT_HEADER_BYTES);
		return -1;
	}
	if (h->min_version > CT_FORMAT_VERSION) {
		snprintf(why, cap, "needs commtrace format version %u, this reader supports up to %u",
		         h->min_version, CT_FORMAT_VERSION);
		return -1;
	}
	if (h->version < CT_FORMAT_MIN_READ) {
		snprintf(why, cap, "format version %u is older than this reader supports (%u)",
		         h->version, CT_FORMAT_MIN_READ);
		return -1;
	}
	uint64_t unknown = h->features & CT_FEATURES_REQUIRED_MASK & ~CT_FEATURES_KNOWN;
	if (unknown) {
		snprintf(why, cap, "uses required features this reader does not know (bits 0x%016llx)",
		         (unsigned long long)unknown);
		return -1;
	}
	return 0;
}

/* The first frame of a trace or meta.zst must be a valid HEADER section. */
static int read_first_header(const struct src *s, struct ct_header *h, size_t *next,
                             struct ct_error *err)
{
	char why[256];
	struct frame_scan f;
	if (s->size == 0) {
		seterr(err, "%s: offset 0: empty file, not a commtrace trace", s->path);
		return -1;
	}
	if (s->size < 4 || rd32(s->map) != CT_SKIPPABLE_MAGIC) {
		seterr(err, "%s: offset 0: not a commtrace trace (bad magic)", s->path);
		return -1;
	}
	int rc = scan_frame(s->map, s->size, 0, &f, why, sizeof why);
	if (rc <= 0) {
		seterr(err, "%s: offset 0: %s", s->path, rc < 0 ? why : "empty");
		return -1;
	}
	if (f.what != FR_SECTION) {
		seterr(err, "%s: offset 0: not a commtrace trace (bad section magic)", s->path);
		return -1;
	}
	if (f.kind != CT_SEC_HEADER) {
		seterr(err, "%s: offset 0: first section is %u, not HEADER", s->path, f.kind);
		return -1;
	}
	if (check_header(f.payload, f.plen, h, why, sizeof why) < 0) {
		seterr(err, "%s: offset 0: %s", s->path, why);
		return -1;
	}
	*next = (size_t)f.size;
	return 0;
}

/* ---- the trace ------------------------------------------------------------------ */

struct frame_ref {
	uint32_t src;
	uint32_t content;
	uint64_t off, size;
};

struct thr {
	struct ct_thread_info info;
	struct frame_ref *f;
	size_t n, cap;
};

struct sec {
	uint16_t kind;
	const uint8_t *p;
	size_t len;
};

struct ct_trace {
	char *path;
	struct src *src;
	size_t nsrc, srccap;
	struct ct_header hdr;
	struct sec *sec;
	size_t nsec, seccap;
	struct thr *thr;        /* in index order once open returns */
	size_t nthr, thrcap;
	uint32_t *hash;         /* while indexing: thread index -> slot + 1, open addressing */
	size_t hcap;
	bool complete;
	unsigned ndamage;
	char damage[600];
	char *maps_text;        /* spool directory: the maps file's content */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	void *q = realloc(*p, nc * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

static void add_damage(struct ct_trace *t, const char *path, size_t off, const char *why)
{
	if (t->ndamage++ == 0)
		snprintf(t->damage, sizeof t->damage, "%s: offset %zu: %s", path, off, why);
}

static size_t hash_u32(uint32_t x, size_t cap)
{
	return (size_t)((x * 0x9E3779B1u) >> 7) & (cap - 1);
}

/* Slot of thread ti->index, created (in order of appearance) if new; -1
 * when out of memory.  A hash keeps this O(1) however many threads a
 * (possibly hostile) trace names; sort_threads puts them in index order. */
static long thread_slot(struct ct_trace *t, const struct ct_thread_info *ti)
{
	if (t->nthr + 1 > t->hcap / 2) {
		size_t nc = t->hcap ? t->hcap * 2 : 64;
		uint32_t *h = calloc(nc, sizeof *h);
		if (!h)
			return -1;
		for (size_t i = 0; i < t->nthr; i++) {
			size_t k = hash_u32(t->thr[i].info.index, nc);
			while (h[k])
				k = (k + 1) & (nc - 1);
			h[k] = (uint32_t)(i + 1);
		}
		free(t->hash);
		t->hash = h;
		t->hcap = nc;
	}
	size_t k = hash_u32(ti->index, t->hcap);
	while (t->hash[k]) {
		if (t->thr[t->hash[k] - 1].info.index == ti->index)
			return (long)t->hash[k] - 1;
		k = (k + 1) & (t->hcap - 1);
	}
	if (t->nthr >= UINT32_MAX - 1 ||
	    grow((void **)&t->thr, &t->thrcap, t->nthr + 1, sizeof *t->thr) < 0)
		return -1;
	memset(&t->thr[t->nthr], 0, sizeof t->thr[t->nthr]);
	t->thr[t->nthr].info = *ti;
	t->hash[k] = (uint32_t)(t->nthr + 1);
	return (long)t->nthr++;
}

static int cmp_thr(const void *a, const void *b)
{
	uint32_t x = ((const struct thr *)a)->info.index, y = ((const struct thr *)b)->info.index;
	return x < y ? -1 : x > y;
}

/* After indexing: threads in index order, the hash no longer needed. */
static void sort_threads(struct ct_trace *t)
{
	bool sorted = true;
	for (size_t i = 1; i < t->nthr && sorted; i++)
		sorted = t->thr[i - 1].info.index < t->thr[i].info.index;
	if (!sorted)
		qsort(t->thr, t->nthr, sizeof *t->thr, cmp_thr);
	free(t->hash);
	t->hash = NULL;
	t->hcap = 0;
}

static int add_section(struct ct_trace *t, uint16_t kind, const uint8_t *p, size_t len)
{
	if (grow((void **)&t->sec, &t->seccap, t->nsec + 1, sizeof *t->sec) < 0)
		return -1;
	t->sec[t->nsec++] = (struct sec){ kind, p, len };
	if (kind == CT_SEC_SUMMARY)
		t->complete = true;
	return 0;
}

/* What a file may contribute (FORMAT.md, "Spool directory"): a trace file
 * everything; a spool's meta.zst its trace-wide sections (no THREAD, no
 * SUMMARY, no data); a spool thread file its THREAD sections and data
 * frames.  Anything else in a spool file is skipped. */
enum role { ROLE_TRACE, ROLE_META, ROLE_THREAD };

static bool role_takes_section(enum role role, uint16_t kind)
{
	if (kind == CT_SEC_HEADER)
		return false;           /* only the first frame of a trace or meta.zst */
	switch (role) {
	case ROLE_META: return kind != CT_SEC_THREAD && kind != CT_SEC_SUMMARY;
	case ROLE_THREAD: return kind == CT_SEC_THREAD;
	default: return true;
	}
}

/* Index the frames of source si from off on.  Damage stops the indexing of
 * this source (recorded, not fatal); -1 only when out of memory. */
static int index_source(struct ct_trace *t, uint32_t si, size_t off, enum role role,
                        struct ct_error *err)
{
	struct src *s = &t->src[si];
	long slot = -1;
	char why[256];
	for (;;) {
		struct frame_scan f;
		int rc = scan_frame(s->map, s->size, off, &f, why, sizeof why);
		if (rc == 0)
			break;
		if (rc < 0) {
			add_damage(t, s->path, off, why);
			break;
		}
		if (f.what == FR_SECTION && !role_takes_section(role, f.kind)) {
			/* skipped */
		} else if (f.what == FR_SECTION && f.kind == CT_SEC_THREAD) {
			struct ct_thread_info ti;
			if (ct_thread_info_decode(f.payload, f.plen, &ti) < 0) {
				snprintf(why, sizeof why, "THREAD section of %zu bytes is too short", f.plen);
				add_damage(t, s->path, off, why);
				break;
			}
			ti.name[sizeof ti.name - 1] = 0;
			slot = thread_slot(t, &ti);
			if (slot < 0)
				goto oom;
		} else if (f.what == FR_SECTION) {
			if (add_section(t, f.kind, f.payload, f.plen) < 0)
				goto oom;
		} else if (f.what == FR_DATA) {
			if (slot < 0) {
				add_damage(t, s->path, off, "data frame before any THREAD section");
				break;
			}
			struct thr *th = &t->thr[slot];
			if (grow((void **)&th->f, &th->cap, th->n + 1, sizeof *th->f) < 0)
				goto oom;
			th->f[th->n++] = (struct frame_ref){ si, (uint32_t)f.content, off, f.size };
		}
		off += (size_t)f.size;
	}
	s->valid_end = off;
	return 0;
oom:
	seterr(err, "%s: out of memory", s->path);
	return -1;
}

static struct src *new_src(struct ct_trace *t)
{
	if (grow((void **)&t->src, &t->srccap, t->nsrc + 1, sizeof *t->src) < 0)
		return NULL;
	return &t->src[t->nsrc];
}

/* ---- spool directory listing -------------------------------------------------------- */

struct tfile {
	uint32_t index;
	char *path;
};

static int cmp_tfile(const void *a, const void *b)
{
	uint32_t x = ((const struct tfile *)a)->index, y = ((const struct tfile *)b)->index;
	return x < y ? -1 : x > y;
}

/* "thread-<digits>.zst" -> index */
static bool parse_thread_name(const char *n, uint32_t *index)
{
	if (strncmp(n, "thread-", 7))
		return false;
	const char *p = n + 7;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (uint64_t)(*p++ - '0');
		if (v > UINT32_MAX)
			return false;
	}
	if (strcmp(p, ".zst"))
		return false;
	*index = (uint32_t)v;
	return true;
}

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Thread files sorted by index, and the newest maps-PID.txt (by mtime, then
 * by the larger PID).  -1 with err on failure. */
static int list_spool(const char *dir, struct tfile **out, size_t *nout, char **maps_path,
                      struct ct_error *err)
{
	DIR *d = opendir(dir);
	struct tfile *v = NULL;
	size_t n = 0, cap = 0;
	struct timespec best = { 0, 0 };
	unsigned long best_pid = 0;
	*maps_path = NULL;
	if (!d) {
		seterr(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		uint32_t idx;
		if (parse_thread_name(e->d_name, &idx)) {
			char *p = path_join(dir, e->d_name);
			if (!p || grow((void **)&v, &cap, n + 1, sizeof *v) < 0) {
				free(p);
				goto oom;
			}
			v[n++] = (struct tfile){ idx, p };
		} else if (!strncmp(e->d_name, "maps-", 5)) {
			char *end;
			unsigned long pid = strtoul(e->d_name + 5, &end, 10);
			if (end == e->d_name + 5 || strcmp(end, ".txt"))
				continue;
			char *p = path_join(dir, e->d_name);
			struct stat st;
			if (!p)
				goto oom;
			if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
				free(p);
				continue;
			}
			bool newer = !*maps_path || st.st_mtim.tv_sec > best.tv_sec ||
			             (st.st_mtim.tv_sec == best.tv_sec &&
			              (st.st_mtim.tv_nsec > best.tv_nsec ||
			               (st.st_mtim.tv_nsec == best.tv_nsec && pid > best_pid)));
			if (newer) {
				free(*maps_path);
				*maps_path = p;
				best = st.st_mtim;
				best_pid = pid;
			} else {
				free(p);
			}
		}
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof *v, cmp_tfile);
	*out = v;
	*nout = n;
	return 0;
oom:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	free(*maps_path);
	*maps_path = NULL;
	seterr(err, "%s: out of memory", dir);
	return -1;
}

static void free_tfiles(struct tfile *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

/* Whole small text file, NUL-terminated; NULL on error. */
static char *read_text(const char *path, size_t *len)
{
	struct src s;
	if (map_file(path, true, &s, NULL) < 0)
		return NULL;
	char *b = malloc(s.size + 1);
	if (b) {
		if (s.size)
			memcpy(b, s.map, s.size);
		b[s.size] = 0;
		*len = s.size;
	}
	unmap_file(&s);
	return b;
}

/* ---- open / close ----------------------------------------------------------------- */

void ct_trace_close(struct ct_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nsrc; i++)
		unmap_file(&t->src[i]);
	for (size_t i = 0; i < t->nthr; i++)
		free(t->thr[i].f);
	free(t->src);
	free(t->sec);
	free(t->thr);
	free(t->hash);
	free(t->maps_text);
	free(t->path);
	free(t);
}

static int open_dir(struct ct_trace *t, const char *dir, struct ct_error *err)
{
	char *meta = path_join(dir, "meta.zst");
	struct src *s = new_src(t);
	if (!meta || !s) {
		free(meta);
		seterr(err, "%s: out of memory", dir);
		return -1;
	}
	int rc = map_file(meta, true, s, err);
	free(meta);
	if (rc < 0)
		return -1;
	t->nsrc++;
	size_t off;
	if (read_first_header(s, &t->hdr, &off, err) < 0 || index_source(t, 0, off, ROLE_META, err) < 0)
		return -1;

	struct tfile *tf;
	size_t ntf;
	char *maps_path;
	if (list_spool(dir, &tf, &ntf, &maps_path, err) < 0)
		return -1;
	for (size_t i = 0; i < ntf; i++) {
		s = new_src(t);
		if (!s) {
			seterr(err, "%s: out of memory", dir);
			goto fail;
		}
		if (map_file(tf[i].path, true, s, err) < 0)
			goto fail;
		t->nsrc++;
		if (index_source(t, (uint32_t)(t->nsrc - 1), 0, ROLE_THREAD, err) < 0)
			goto fail;
	}
	if (maps_path) {
		size_t len;
		t->maps_text = read_text(maps_path, &len);
		if (t->maps_text && add_section(t, CT_SEC_MAPS, (const uint8_t *)t->maps_text, len) < 0) {
			seterr(err, "%s: out of memory", dir);
			goto fail;
		}
	}
	free(maps_path);
	free_tfiles(tf, ntf);
	return 0;
fail:
	free(maps_path);
	free_tfiles(tf, ntf);
	return -1;
}

struct ct_trace *ct_trace_open(const char *path, struct ct_error *err)
{
	struct ct_trace *t = calloc(1, sizeof *t);
	struct stat st;
	if (!t || !(t->path = strdup(path))) {
		free(t);
		seterr(err, "%s: out of memory", path);
		return NULL;
	}
	if (stat(path, &st) < 0) {
		seterr(err, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		if (open_dir(t, path, err) < 0)
			goto fail;
	} else {
		struct src *s = new_src(t);
		if (!s) {
			seterr(err, "%s: out of memory", path);
			goto fail;
		}
		if (map_file(path, false, s, err) < 0)
			goto fail;
		t->nsrc++;
		size_t off;
		if (read_first_header(s, &t->hdr, &off, err) < 0 ||
		    index_source(t, 0, off, ROLE_TRACE, err) < 0)
			goto fail;
	}
	sort_threads(t);
	if (t->ndamage > 1) {
		size_t l = strlen(t->damage);
		snprintf(t->damage + l, sizeof t->damage - l, " (and %u more damaged places)", t->ndamage - 1);
	}
	return t;
fail:
	ct_trace_close(t);
	return NULL;
}

struct ct_trace *ct_trace_open_mem(const void *buf, size_t len, const char *name,
                                   struct ct_error *err)
{
	struct ct_trace *t = calloc(1, sizeof *t);
	struct src *s;
	size_t off;
	if (!name)
		name = "(memory)";
	if (!t || !(t->path = strdup(name)) || !(s = new_src(t))) {
		seterr(err, "%s: out of memory", name);
		ct_trace_close(t);
		return NULL;
	}
	memset(s, 0, sizeof *s);
	s->path = strdup(name);
	s->map = len ? buf : NULL;
	s->size = len;
	s->borrowed = true;
	t->nsrc++;
	if (!s->path) {
		seterr(err, "%s: out of memory", name);
		goto fail;
	}
	if (read_first_header(s, &t->hdr, &off, err) < 0 ||
	    index_source(t, 0, off, ROLE_TRACE, err) < 0)
		goto fail;
	sort_threads(t);
	if (t->ndamage > 1) {
		size_t l = strlen(t->damage);
		snprintf(t->damage + l, sizeof t->damage - l, " (and %u more damaged places)", t->ndamage - 1);
	}
	return t;
fail:
	ct_trace_close(t);
	return NULL;
}

const char *ct_trace_path(const struct ct_trace *t) { return t->path; }
const struct ct_header *ct_trace_header(const struct ct_trace *t) { return &t->hdr; }
bool ct_trace_complete(const struct ct_trace *t) { return t->complete; }
const char *ct_trace_damage(const struct ct_trace *t) { return t->ndamage ? t->damage : NULL; }
size_t ct_trace_nthreads(const struct ct_trace *t) { return t->nthr; }

const struct ct_thread_info *ct_trace_thread(const struct ct_trace *t, size_t i)
{
	return i < t->nthr ? &t->thr[i].info : NULL;
}

size_t ct_trace_thread_frames(const struct ct_trace *t, size_t i)
{
	return i < t->nthr ? t->thr[i].n : 0;
}

uint64_t ct_trace_thread_bytes(const struct ct_trace *t, size_t i)
{
	uint64_t sum = 0;
	for (size_t k = 0; i < t->nthr && k < t->thr[i].n; k++)
		sum += t->thr[i].f[k].size;
	return sum;
}

const void *ct_trace_section(const struct ct_trace *t, enum ct_section kind, size_t *len)
{
	if (kind == CT_SEC_HEADER) {
		/* the header is parsed; hand out the original bytes of source 0 */
		if (len)
			*len = CT_HEADER_BYTES;
		return t->src[0].map + 8 + CT_SECTION_HEADER_BYTES;
	}
	for (size_t i = t->nsec; i-- > 0;)
		if (t->sec[i].kind == kind) {
			if (len)
				*len = t->sec[i].len;
			return t->sec[i].p;
		}
	if (len)
		*len = 0;
	return NULL;
}

bool ct_trace_meta(const struct ct_trace *t, enum ct_section kind, const char *key,
                   char *out, size_t cap)
{
	size_t len;
	const char *p = ct_trace_section(t, kind, &len);
	return p && ct_kv_get(p, len, key, out, cap);
}

/* ---- frame decoding ------------------------------------------------------------------ */

/* Decompress frame fr into *buf (grown as needed, at most CT_BLOCK_MAX) and
 * check its block header.  Returns 0 with *count and the record bytes
 * [*rp, *rend), or -1 with why filled. */
static int load_frame(ZSTD_DCtx *dctx, const uint8_t *src, uint64_t size, uint32_t content,
                      uint8_t **buf, size_t *bufcap, const uint8_t **rp, const uint8_t **rend,
                      uint32_t *count, char *why, size_t whycap)
{
	if (content > CT_BLOCK_MAX || content < CT_BLOCK_HEADER_BYTES) {
		snprintf(why, whycap, "bad content size %u", content);
		return -1;
	}
	if (*bufcap < content) {
		uint8_t *b = realloc(*buf, content);
		if (!b) {
			snprintf(why, whycap, "out of memory");
			return -1;
		}
		*buf = b;
		*bufcap = content;
	}
	size_t d = ZSTD_decompressDCtx(dctx, *buf, content, src, (size_t)size);
	if (ZSTD_isError(d)) {
		snprintf(why, whycap, "cannot decompress (%s)", ZSTD_getErrorName(d));
		return -1;
	}
	if (d != content) {
		snprintf(why, whycap, "decompressed to %zu bytes, header said %u", d, content);
		return -1;
	}
	if (rd32(*buf) != CT_BLOCK_MAGIC) {
		snprintf(why, whycap, "bad block magic 0x%08x", rd32(*buf));
		return -1;
	}
	*count = rd32(*buf + 4);
	/* the smallest record is 2 bytes (type, time delta) */
	if (*count > (content - CT_BLOCK_HEADER_BYTES) / 2) {
		snprintf(why, whycap, "block claims %u records in %u bytes", *count, content);
		return -1;
	}
	*rp = *buf + CT_BLOCK_HEADER_BYTES;
	*rend = *buf + content;
	return 0;
}

/* ---- cursors ---------------------------------------------------------------------------- */

struct tcur {
	struct ct_trace *t;
	size_t slot;
	size_t k;               /* next frame to load */
	uint8_t *buf;
	size_t bufcap;
	const uint8_t *p, *end;
	uint32_t left, nrec;
	struct ct_codec codec;
	ZSTD_DCtx *dctx;        /* shared */
};

struct ct_cursor {
	struct ct_trace *t;
	ZSTD_DCtx *dctx;
	bool merged, started;
	int failed;             /* 1: the next call returns -1 with ferr */
	struct ct_error ferr;
	struct tcur one;        /* per-thread cursor */
	size_t nsub;
	struct tcur *sub;       /* merged: one per thread */
	struct ct_record *head; /* merged: the next record of each thread */
	size_t *heap, nheap;
};

static int tcur_fail(struct tcur *c, size_t k, const char *why, struct ct_error *err)
{
	const struct frame_ref *fr = &c->t->thr[c->slot].f[k];
	seterr(err, "%s: offset %llu: thread %u frame %zu: %s", c->t->src[fr->src].path,
	       (unsigned long long)fr->off, c->t->thr[c->slot].info.index, k, why);
	free(c->buf);
	c->buf = NULL;
	c->bufcap = 0;
	return -1;
}

static int tcur_next(struct tcur *c, struct ct_record *r, struct ct_error *err)
{
	const struct thr *th = &c->t->thr[c->slot];
	char why[256];
	while (c->left == 0) {
		if (c->p != c->end) {
			snprintf(why, sizeof why, "%zu bytes after the last of %u records",
			         (size_t)(c->end - c->p), c->nrec);
			return tcur_fail(c, c->k - 1, why, err);
		}
		if (c->k >= th->n) {
			free(c->buf);           /* done: give the memory back */
			c->buf = NULL;
			c->bufcap = 0;
			return 0;
		}
		const struct frame_ref *fr = &th->f[c->k];
		const struct src *s = &c->t->src[fr->src];
		if (load_frame(c->dctx, s->map + fr->off, fr->size, fr->content, &c->buf, &c->bufcap,
		               &c->p, &c->end, &c->left, why, sizeof why) < 0)
			return tcur_fail(c, c->k, why, err);
		c->nrec = c->left;
		ct_codec_reset(&c->codec);
		c->k++;
	}
	size_t n = ct_decode_record(&c->codec, c->p, c->end, r);
	if (n == 0) {
		snprintf(why, sizeof why, "record %u of %u: malformed (type %u)", c->nrec - c->left,
		         c->nrec, c->p < c->end ? *c->p : 0);
		return tcur_fail(c, c->k - 1, why, err);
	}
	c->p += n;
	c->left--;
	r->thread = th->info.index;
	return 1;
}

static struct ct_cursor *cursor_new(struct ct_trace *t)
{
	struct ct_cursor *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->t = t;
	c->dctx = ZSTD_createDCtx();
	if (!c->dctx) {
		free(c);
		return NULL;
	}
	return c;
}

struct ct_cursor *ct_cursor_thread(struct ct_trace *t, size_t i)
{
	if (i >= t->nthr)
		return NULL;
	struct ct_cursor *c = cursor_new(t);
	if (!c)
		return NULL;
	c->one = (struct tcur){ .t = t, .slot = i, .dctx = c->dctx };
	return c;
}

struct ct_cursor *ct_cursor_merged(struct ct_trace *t)
{
	struct ct_cursor *c = cursor_new(t);
	if (!c)
		return NULL;
	c->merged = true;
	c->nsub = t->nthr;
	if (t->nthr) {
		c->sub = calloc(t->nthr, sizeof *c->sub);
		c->head = calloc(t->nthr, sizeof *c->head);
		c->heap = calloc(t->nthr, sizeof *c->heap);
		if (!c->sub || !c->head || !c->heap) {
			ct_cursor_free(c);
			return NULL;
		}
	}
	for (size_t i = 0; i < t->nthr; i++)
		c->sub[i] = (struct tcur){ .t = t, .slot = i, .dctx = c->dctx };
	return c;
}

void ct_cursor_free(struct ct_cursor *c)
{
	if (!c)
		return;
	free(c->one.buf);
	for (size_t i = 0; i < c->nsub && c->sub; i++)
		free(c->sub[i].buf);
	free(c->sub);
	free(c->head);
	free(c->heap);
	ZSTD_freeDCtx(c->dctx);
	free(c);
}

/* heap order: time, then thread slot (slots are in thread index order) */
static bool before(const struct ct_cursor *c, size_t a, size_t b)
{
	uint64_t ta = c->head[a].time, tb = c->head[b].time;
	return ta < tb || (ta == tb && a < b);
}

static void sift_down(struct ct_cursor *c, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < c->nheap && before(c, c->heap[l], c->heap[m])) m = l;
		if (r < c->nheap && before(c, c->heap[r], c->heap[m])) m = r;
		if (m == i)
			return;
		size_t tmp = c->heap[i];
		c->heap[i] = c->heap[m];
		c->heap[m] = tmp;
		i = m;
	}
}

static void sift_up(struct ct_cursor *c, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(c, c->heap[i], c->heap[p]))
			return;
		size_t tmp = c->heap[i];
		c->heap[i] = c->heap[p];
		c->heap[p] = tmp;
		i = p;
	}
}

int ct_cursor_next(struct ct_cursor *c, struct ct_record *r, struct ct_error *err)
{
	if (c->failed) {
		if (err)
			*err = c->ferr;
		return -1;
	}
	if (!c->merged) {
		int rc = tcur_next(&c->one, r, &c->ferr);
		if (rc < 0) {
			c->failed = 1;
			if (err)
				*err = c->ferr;
		}
		return rc;
	}
	if (!c->started) {
		c->started = true;
		for (size_t i = 0; i < c->nsub; i++) {
			int rc = tcur_next(&c->sub[i], &c->head[i], &c->ferr);
			if (rc < 0) {
				c->failed = 1;
				if (err)
					*err = c->ferr;
				return -1;
			}
			if (rc > 0) {
				c->heap[c->nheap++] = i;
				sift_up(c, c->nheap - 1);
			}
		}
	}
	if (c->nheap == 0)
		return 0;
	size_t top = c->heap[0];
	*r = c->head[top];
	int rc = tcur_next(&c->sub[top], &c->head[top], &c->ferr);
	if (rc > 0) {
		sift_down(c, 0);
	} else {
		c->heap[0] = c->heap[--c->nheap];
		sift_down(c, 0);
		if (rc < 0)
			c->failed = 1;    /* reported by the next call */
	}
	return 1;
}

/* ---- join ------------------------------------------------------------------------------------- */

struct tstat {
	uint32_t index;
	uint64_t records, frames, lost;
};

static int cmp_tstat(const void *a, const void *b)
{
	uint32_t x = ((const struct tstat *)a)->index, y = ((const struct tstat *)b)->index;
	return x < y ? -1 : x > y;
}

struct jout {
	int fd;
	const char *path;
	int err;                /* errno of the first failure */
};

static void jwrite(struct jout *o, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n && !o->err) {
		ssize_t w = write(o->fd, b, n > (1u << 30) ? (1u << 30) : n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			o->err = w < 0 ? errno : EIO;
			return;
		}
		b += w;
		n -= (size_t)w;
	}
}

static void jsection(struct jout *o, enum ct_section kind, const void *p, size_t len)
{
	if (o->err)
		return;
	int rc = ct_write_section(o->fd, kind, p, len);
	if (rc)
		o->err = -rc;
}

/* growing text buffer for the summary */
struct tbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void tprintf(struct tbuf *b, const char *fmt, ...) FMT(2, 3);
static void tprintf(struct tbuf *b, const char *fmt, ...)
{
	for (;;) {
		if (b->oom)
			return;
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		if (grow((void **)&b->p, &b->cap, b->len + (size_t)n + 1, 1) < 0)
			b->oom = true;
	}
}

struct jstate {
	ZSTD_DCtx *dctx;
	uint8_t *buf;
	size_t bufcap;
	struct tstat *st;
	size_t nst, stcap;
	uint64_t torn, dropped_bytes;
	struct ct_error first_damage;
	bool damaged;
};

static void jdamage(struct jstate *j, const char *path, size_t off, const char *why, size_t dropped)
{
	j->torn++;
	j->dropped_bytes += dropped;
	if (!j->damaged) {
		j->damaged = true;
		seterr(&j->first_damage, "%s: offset %zu: %s", path, off, why);
	}
}

/* Copy the frames of one spool file that its role allows (byte for byte,
 * contiguous runs in one write), decoding data frames to count records.
 * Stops at the first frame that is torn or does not decode. */
static int join_file(struct jstate *j, struct jout *o, const struct src *s, size_t off,
                     enum role role)
{
	char why[256];
	long cur = -1;
	size_t run = off, run_end = off;        /* pending bytes to copy */
	for (;;) {
		struct frame_scan f;
		int rc = scan_frame(s->map, s->size, off, &f, why, sizeof why);
		if (rc == 0)
			break;
		if (rc < 0) {
			jdamage(j, s->path, off, why, s->size - off);
			break;
		}
		bool take = false;
		if (f.what == FR_SECTION && !role_takes_section(role, f.kind)) {
			/* skipped */
		} else if (f.what == FR_SECTION && f.kind == CT_SEC_THREAD) {
			struct ct_thread_info ti;
			if (ct_thread_info_decode(f.payload, f.plen, &ti) < 0) {
				jdamage(j, s->path, off, "THREAD section too short", s->size - off);
				break;
			}
			if (grow((void **)&j->st, &j->stcap, j->nst + 1, sizeof *j->st) < 0)
				return -1;
			j->st[j->nst] = (struct tstat){ .index = ti.index };
			cur = (long)j->nst++;
			take = true;
		} else if (f.what == FR_SECTION) {
			take = true;
		} else if (f.what == FR_DATA) {
			const uint8_t *p, *end;
			uint32_t count;
			if (cur < 0) {
				jdamage(j, s->path, off, "data frame before any THREAD section", s->size - off);
				break;
			}
			if (load_frame(j->dctx, s->map + off, f.size, (uint32_t)f.content, &j->buf, &j->bufcap,
			               &p, &end, &count, why, sizeof why) < 0) {
				jdamage(j, s->path, off, why, s->size - off);
				break;
			}
			struct ct_codec codec;
			struct ct_record r;
			uint64_t lost = 0;
			uint32_t i;
			ct_codec_reset(&codec);
			for (i = 0; i < count; i++) {
				size_t n = ct_decode_record(&codec, p, end, &r);
				if (!n)
					break;
				p += n;
				if (r.type == CT_REC_LOST)
					lost += r.u.lost.count;
			}
			if (i < count || p != end) {
				snprintf(why, sizeof why, "malformed record %u of %u in data frame", i, count);
				jdamage(j, s->path, off, why, s->size - off);
				break;
			}
			j->st[cur].records += count;
			j->st[cur].frames++;
			j->st[cur].lost += lost;
			take = true;
		}
		if (take && off != run_end) {
			jwrite(o, s->map + run, run_end - run);
			run = off;
		}
		off += (size_t)f.size;
		if (take)
			run_end = off;
	}
	jwrite(o, s->map + run, run_end - run);
	return 0;
}

/* The output is written to a fresh file beside it, created exclusively
 * under a random name (O_EXCL: never a file, FIFO or symlink someone put
 * there, and no name another user can take first), then put in place. */
static int create_fresh(const char *out_path, char **tmp_path, struct ct_error *err)
{
	size_t tl = strlen(out_path) + 32;
	char *tmp = malloc(tl);
	if (!tmp) {
		seterr(err, "%s: out of memory", out_path);
		return -1;
	}
	for (int attempt = 0; attempt < 100; attempt++) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
			r = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ ((uint64_t)attempt << 48) ^
			    (uint64_t)(uintptr_t)tmp;
		snprintf(tmp, tl, "%s.%012llx.tmp", out_path, (unsigned long long)(r & 0xffffffffffffull));
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			*tmp_path = tmp;
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	seterr(err, "%s: %s", tmp, strerror(errno));
	free(tmp);
	return -1;
}

/* Only a regular file is ever replaced, and only when asked to: a device
 * node, FIFO, socket, directory or symbolic link at out_path stays. */
static int check_replaceable(const char *out_path, unsigned flags, struct ct_error *err)
{
	struct stat st;
	if (lstat(out_path, &st) < 0)
		return 0;
	if (!(flags & CT_JOIN_REPLACE)) {
		seterr(err, "%s: exists (not replaced)", out_path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, "%s: not a regular file (%s): not replaced", out_path,
		       S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" :
		       S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" :
		       S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "special");
		return -1;
	}
	return 0;
}

/* tmp -> out_path.  Without CT_JOIN_REPLACE nothing that appeared at
 * out_path meanwhile is replaced (renameat2 RENAME_NOREPLACE, or link
 * where the file system lacks it); with it, only a regular file is. */
static int install_output(const char *tmp, const char *out_path, unsigned flags,
                          struct ct_error *err)
{
	if (flags & CT_JOIN_REPLACE) {
		if (check_replaceable(out_path, flags, err) < 0)
			return -1;
		if (rename(tmp, out_path) == 0)
			return 0;
	} else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out_path, RENAME_NOREPLACE) == 0) {
		return 0;
	} else if ((errno == EINVAL || errno == ENOSYS) && link(tmp, out_path) == 0) {
		unlink(tmp);
		return 0;
	}
	seterr(err, "%s: %s%s", out_path, strerror(errno),
	       errno == EEXIST ? " (appeared while joining: not replaced)" : "");
	return -1;
}

int ct_join(const char *spool_dir, const char *out_path,
            const struct ct_join_section *extra, size_t nextra,
            const char *summary_kv, unsigned flags, struct ct_error *err)
{
	struct src meta;
	struct ct_header hdr;
	struct jstate j = { 0 };
	struct tfile *tf = NULL;
	size_t ntf = 0, off;
	char *maps_path = NULL, *tmp = NULL, *mpath = NULL;
	struct jout o = { .fd = -1 };
	struct tbuf sum = { 0 };
	int ret = -1;

	mpath = path_join(spool_dir, "meta.zst");
	if (!mpath) {
		seterr(err, "%s: out of memory", spool_dir);
		return -1;
	}
	if (map_file(mpath, true, &meta, err) < 0) {
		free(mpath);
		return -1;
	}
	free(mpath);
	if (read_first_header(&meta, &hdr, &off, err) < 0)
		goto out_meta;
	if (list_spool(spool_dir, &tf, &ntf, &maps_path, err) < 0)
		goto out_meta;
	j.dctx = ZSTD_createDCtx();
	if (!j.dctx) {
		seterr(err, "%s: out of memory", out_path);
		goto out;
	}
	if (check_replaceable(out_path, flags, err) < 0)
		goto out;
	o.fd = create_fresh(out_path, &tmp, err);
	o.path = tmp;
	if (o.fd < 0)
		goto out;

	/* meta.zst: the header and the trace-wide sections */
	jwrite(&o, meta.map, off);
	if (join_file(&j, &o, &meta, off, ROLE_META) < 0)
		goto oom;
	for (size_t i = 0; i < ntf && !o.err; i++) {
		struct src s;
		if (map_file(tf[i].path, true, &s, err) < 0)
			goto out;
		int rc = join_file(&j, &o, &s, 0, ROLE_THREAD);
		unmap_file(&s);
		if (rc < 0)
			goto oom;
	}

	if (maps_path) {
		size_t len;
		char *text = read_text(maps_path, &len);
		if (text)
			jsection(&o, CT_SEC_MAPS, text, len);
		free(text);
	}
	for (size_t i = 0; i < nextra; i++)
		jsection(&o, extra[i].kind, extra[i].data, extra[i].len);

	/* SUMMARY: the caller's lines, then what the join counted */
	if (j.nst)
		qsort(j.st, j.nst, sizeof *j.st, cmp_tstat);
	if (summary_kv && *summary_kv) {
		size_t l = strlen(summary_kv);
		tprintf(&sum, "%s%s", summary_kv, summary_kv[l - 1] == '\n' ? "" : "\n");
	}
	uint64_t records = 0, frames = 0, lost = 0, nthreads = 0;
	for (size_t i = 0; i < j.nst;) {
		struct tstat a = j.st[i++];
		while (i < j.nst && j.st[i].index == a.index) {   /* same thread in several files */
			a.records += j.st[i].records;
			a.frames += j.st[i].frames;
			a.lost += j.st[i].lost;
			i++;
		}
		tprintf(&sum, "thread.%u.records=%llu\nthread.%u.frames=%llu\nthread.%u.lost=%llu\n",
		        a.index, (unsigned long long)a.records, a.index, (unsigned long long)a.frames,
		        a.index, (unsigned long long)a.lost);
		records += a.records;
		frames += a.frames;
		lost += a.lost;
		nthreads++;
	}
	tprintf(&sum, "threads=%llu\nrecords=%llu\nframes=%llu\nlost=%llu\ntorn_frames=%llu\ndropped_bytes=%llu\n",
	        (unsigned long long)nthreads, (unsigned long long)records, (unsigned long long)frames,
	        (unsigned long long)lost, (unsigned long long)j.torn, (unsigned long long)j.dropped_bytes);
	if (j.damaged)
		tprintf(&sum, "damage=%s\n", j.first_damage.msg);
	if (sum.oom)
		goto oom;
	jsection(&o, CT_SEC_SUMMARY, sum.p, sum.len);

	if (!o.err && fsync(o.fd) < 0 && errno != EINVAL && errno != EROFS)
		o.err = errno;
	if (close(o.fd) < 0 && !o.err)
		o.err = errno;
	o.fd = -1;
	if (o.err) {
		seterr(err, "%s: write: %s", tmp, strerror(o.err));
		goto out;
	}
	if (install_output(tmp, out_path, flags, err) < 0)
		goto out;
	ret = 0;
	goto out;
oom:
	seterr(err, "%s: out of memory", out_path);
out:
	if (o.fd >= 0)
		close(o.fd);
	if (ret < 0 && tmp)
		unlink(tmp);
	free(tmp);
	free(sum.p);
	free(j.st);
	free(j.buf);
	ZSTD_freeDCtx(j.dctx);
	free(maps_path);
	free_tfiles(tf, ntf);
out_meta:
	unmap_file(&meta);
	return ret;
}
