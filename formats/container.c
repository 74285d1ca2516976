/* The container (container.h): mapped files, the frame scanner, HEADER
 * checks, the spool listing and block loading.  Every input is untrusted:
 * every length is checked against what is really there, and nothing is
 * allocated from an untrusted length beyond CT_BLOCK_MAX. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container.h"

void cti_seterr(struct ct_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
}

/* ---- mapped files ------------------------------------------------------------ */

static const char *not_regular(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" :
	       S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISSOCK(m) ? "a socket" :
	       S_ISDIR(m) ? "a directory" : "not a regular file";
}

/* Files inside a spool directory are the recorder's own: a symbolic link
 * there was put by someone else and is not followed (in_spool).  The open
 * never blocks (O_NONBLOCK: a FIFO without a writer, a device), and
 * anything but a regular file is refused. */
int cti_map_file(const char *path, bool in_spool, struct src *s, struct ct_error *err)
{
	memset(s, 0, sizeof *s);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (in_spool ? O_NOFOLLOW : 0));
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		cti_seterr(err, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		cti_seterr(err, "%s: %s, not a trace file%s", path, not_regular(st.st_mode),
		           S_ISFIFO(st.st_mode) ? " (traces are read in place: save one to a file first)" : "");
		close(fd);
		return -1;
	}
	s->size = (size_t)st.st_size;
	if (s->size) {
		void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			cti_seterr(err, "%s: mmap: %s", path, strerror(errno));
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
		cti_seterr(err, "%s: out of memory", path);
		return -1;
	}
	return 0;
}

void cti_unmap_file(struct src *s)
{
	if (s->map && !s->borrowed)
		munmap((void *)s->map, s->size);
	free(s->path);
	memset(s, 0, sizeof *s);
}

/* ---- frame scanner (shared by the reader and the join) ----------------------- */

/* One frame at off.  1 with *f filled, 0 at the end of the file, -1 with why
 * filled if the bytes at off are not a whole, acceptable frame. */
int cti_scan_frame(const uint8_t *base, size_t total, size_t off, struct frame_scan *f,
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
int cti_read_first_header(const struct src *s, struct ct_header *h, size_t *next,
                             struct ct_error *err)
{
	char why[256];
	struct frame_scan f;
	if (s->size == 0) {
		cti_seterr(err, "%s: offset 0: empty file, not a commtrace trace", s->path);
		return -1;
	}
	if (s->size < 4 || rd32(s->map) != CT_SKIPPABLE_MAGIC) {
		cti_seterr(err, "%s: offset 0: not a commtrace trace (bad magic)", s->path);
		return -1;
	}
	int rc = cti_scan_frame(s->map, s->size, 0, &f, why, sizeof why);
	if (rc <= 0) {
		cti_seterr(err, "%s: offset 0: %s", s->path, rc < 0 ? why : "empty");
		return -1;
	}
	if (f.what != FR_SECTION) {
		cti_seterr(err, "%s: offset 0: not a commtrace trace (bad section magic)", s->path);
		return -1;
	}
	if (f.kind != CT_SEC_HEADER) {
		cti_seterr(err, "%s: offset 0: first section is %u, not HEADER", s->path, f.kind);
		return -1;
	}
	if (check_header(f.payload, f.plen, h, why, sizeof why) < 0) {
		cti_seterr(err, "%s: offset 0: %s", s->path, why);
		return -1;
	}
	*next = (size_t)f.size;
	return 0;
}

int cti_grow(void **p, size_t *cap, size_t need, size_t elem)
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

bool cti_role_takes_section(enum role role, uint16_t kind)
{
	if (kind == CT_SEC_HEADER)
		return false;           /* only the first frame of a trace or meta.zst */
	switch (role) {
	case ROLE_META: return kind != CT_SEC_THREAD && kind != CT_SEC_SUMMARY;
	case ROLE_THREAD: return kind == CT_SEC_THREAD;
	default: return true;
	}
}

void cti_iter_init(struct frame_iter *it, const struct src *s, size_t off, enum role role)
{
	*it = (struct frame_iter){ .base = s->map, .total = s->size, .off = off, .next = off,
	                           .role = role };
}

int cti_iter_next(struct frame_iter *it, struct frame_item *item, char *why, size_t whycap)
{
	struct frame_scan *f = &item->f;
	it->off = it->next;
	int rc = cti_scan_frame(it->base, it->total, it->off, f, why, whycap);
	if (rc <= 0)
		return rc;
	if (f->what == FR_SECTION && !cti_role_takes_section(it->role, f->kind)) {
		item->what = FI_SKIP;
	} else if (f->what == FR_SECTION && f->kind == CT_SEC_THREAD) {
		if (ct_thread_info_decode(f->payload, f->plen, &item->ti) < 0) {
			snprintf(why, whycap, "THREAD section of %zu bytes is too short", f->plen);
			return -1;
		}
		item->ti.name[sizeof item->ti.name - 1] = 0;
		it->in_thread = true;
		item->what = FI_THREAD;
	} else if (f->what == FR_SECTION) {
		item->what = FI_SECTION;
	} else if (f->what == FR_DATA) {
		if (!it->in_thread) {
			snprintf(why, whycap, "data frame before any THREAD section");
			return -1;
		}
		item->what = FI_DATA;
	} else {
		item->what = FI_SKIP;
	}
	it->next = it->off + (size_t)f->size;
	return 1;
}

/* ---- spool directory listing -------------------------------------------------------- */

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

char *cti_path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Thread files sorted by index, and the newest maps-PID.txt (by mtime, then
 * by the larger PID).  -1 with err on failure. */
int cti_list_spool(const char *dir, struct tfile **out, size_t *nout, char **maps_path,
                      struct ct_error *err)
{
	DIR *d = opendir(dir);
	struct tfile *v = NULL;
	size_t n = 0, cap = 0;
	struct timespec best = { 0, 0 };
	unsigned long best_pid = 0;
	*maps_path = NULL;
	if (!d) {
		cti_seterr(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		uint32_t idx;
		if (parse_thread_name(e->d_name, &idx)) {
			char *p = cti_path_join(dir, e->d_name);
			if (!p || cti_grow((void **)&v, &cap, n + 1, sizeof *v) < 0) {
				free(p);
				goto oom;
			}
			v[n++] = (struct tfile){ idx, p };
		} else if (!strncmp(e->d_name, "maps-", 5)) {
			char *end;
			unsigned long pid = strtoul(e->d_name + 5, &end, 10);
			if (end == e->d_name + 5 || strcmp(end, ".txt"))
				continue;
			char *p = cti_path_join(dir, e->d_name);
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
	cti_seterr(err, "%s: out of memory", dir);
	return -1;
}

void cti_free_tfiles(struct tfile *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

/* Whole small text file, NUL-terminated; NULL on error. */
char *cti_read_text(const char *path, size_t *len)
{
	struct src s;
	if (cti_map_file(path, true, &s, NULL) < 0)
		return NULL;
	char *b = malloc(s.size + 1);
	if (b) {
		if (s.size)
			memcpy(b, s.map, s.size);
		b[s.size] = 0;
		*len = s.size;
	}
	cti_unmap_file(&s);
	return b;
}

/* ---- frame decoding ------------------------------------------------------------------ */

/* Decompress frame fr into *buf (grown as needed, at most CT_BLOCK_MAX) and
 * check its block header.  Returns 0 with *count and the record bytes
 * [*rp, *rend), or -1 with why filled. */
int cti_load_frame(ZSTD_DCtx *dctx, const uint8_t *src, uint64_t size, uint32_t content,
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
