/* Writing: data frames (ct_sink), metadata sections, key=value text.
 * Errors are returned as -errno; nothing here aborts or prints. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#include "commtrace.h"

static void put32le(uint8_t *o, uint32_t v)
{
	o[0] = (uint8_t)v; o[1] = (uint8_t)(v >> 8); o[2] = (uint8_t)(v >> 16); o[3] = (uint8_t)(v >> 24);
}

/* Write all iovecs or fail; on failure returns -errno and *done = bytes that
 * did reach the file. */
static int write_all_v(int fd, struct iovec *iov, int n, size_t *done)
{
	*done = 0;
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		*done += (size_t)w;
		size_t left = (size_t)w;
		while (n > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

/* A failed write may leave part of a frame in the file; cut it off again
 * (best effort: only for seekable files) so the file stays a sequence of
 * whole frames and later frames remain readable. */
static void undo_partial(int fd, size_t done)
{
	if (!done)
		return;
	off_t cur = lseek(fd, 0, SEEK_CUR);
	if (cur >= (off_t)done && ftruncate(fd, cur - (off_t)done) == 0)
		(void)lseek(fd, cur - (off_t)done, SEEK_SET);
}

/* ---- sink -------------------------------------------------------------------- */

int ct_sink_init(struct ct_sink *s, int fd, size_t block_cap, int level)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->level = level;
	if (block_cap == 0)
		block_cap = CT_BLOCK_DEFAULT;
	if (block_cap < CT_BLOCK_HEADER_BYTES + CT_RECORD_MAX_BYTES)
		block_cap = CT_BLOCK_HEADER_BYTES + CT_RECORD_MAX_BYTES;
	if (block_cap > CT_BLOCK_MAX)
		block_cap = CT_BLOCK_MAX;
	s->block_cap = block_cap;
	s->block = malloc(block_cap);
	s->zbuf_cap = ZSTD_compressBound(block_cap);
	s->zbuf = malloc(s->zbuf_cap);
	s->cctx = ZSTD_createCCtx();
	if (!s->block || !s->zbuf || !s->cctx) {
		ct_sink_destroy(s);
		return -ENOMEM;
	}
	/* Content size in the frame header (readers bound their buffer with it)
	 * and a content checksum (a flipped bit is an error, not a wrong answer). */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_contentSizeFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_checksumFlag, 1))) {
		ct_sink_destroy(s);
		return -EINVAL;
	}
	s->block_len = CT_BLOCK_HEADER_BYTES;
	ct_codec_reset(&s->codec);
	return 0;
}

void ct_sink_destroy(struct ct_sink *s)
{
	free(s->block);
	free(s->zbuf);
	ZSTD_freeCCtx(s->cctx);
	s->block = NULL;
	s->zbuf = NULL;
	s->cctx = NULL;
	s->block_cap = s->block_len = s->zbuf_cap = 0;
}

int ct_sink_flush(struct ct_sink *s)
{
	if (!s->block)
		return -EINVAL;
	if (s->block_records == 0)
		return 0;
	put32le(s->block, CT_BLOCK_MAGIC);
	put32le(s->block + 4, s->block_records);
	size_t z = ZSTD_compress2(s->cctx, s->zbuf, s->zbuf_cap, s->block, s->block_len);
	/* The block is consumed whatever happens next: a frame is the unit of loss. */
	uint32_t nrec = s->block_records;
	s->block_len = CT_BLOCK_HEADER_BYTES;
	s->block_records = 0;
	ct_codec_reset(&s->codec);
	int rc;
	if (ZSTD_isError(z)) {
		rc = -EIO;
	} else {
		struct iovec iov = { s->zbuf, z };
		size_t done;
		rc = write_all_v(s->fd, &iov, 1, &done);
		if (rc == 0) {
			s->bytes_written += z;
			s->frames++;
			return 0;
		}
		undo_partial(s->fd, done);
	}
	s->dropped += nrec;
	if (!s->error)
		s->error = -rc;
	return rc;
}

void ct_sink_discard(struct ct_sink *s)
{
	s->dropped += s->block_records;
	s->block_len = CT_BLOCK_HEADER_BYTES;
	s->block_records = 0;
	ct_codec_reset(&s->codec);
}

int ct_sink_append(struct ct_sink *s, const struct ct_record *r)
{
	int rc = 0;
	if (!s->block)
		return -EINVAL;
	if (s->block_len + CT_RECORD_MAX_BYTES > s->block_cap)
		rc = ct_sink_flush(s);
	size_t n = ct_encode_record(&s->codec, r, s->block + s->block_len);
	if (n == 0)
		return rc ? rc : -EINVAL;
	s->block_len += n;
	s->block_records++;
	s->records++;
	return rc;
}

size_t ct_sink_append_samples(struct ct_sink *s, const void *recs, size_t stride, size_t n)
{
	if (!s->block || s->block_len > s->block_cap)
		return 0;
	size_t taken;
	s->block_len += ct_encode_samples(&s->codec, recs, stride, n, s->block + s->block_len,
	                                  s->block_cap - s->block_len, &taken);
	s->block_records += (uint32_t)taken;
	s->records += taken;
	return taken;
}

/* ---- sections ------------------------------------------------------------------ */

/* The 16 bytes before a section's body: skippable frame header, section
 * header. */
static void section_header(uint8_t *hdr, enum ct_section kind, size_t len)
{
	put32le(hdr, CT_SKIPPABLE_MAGIC);
	put32le(hdr + 4, (uint32_t)(len + CT_SECTION_HEADER_BYTES));
	put32le(hdr + 8, CT_SECTION_MAGIC);
	hdr[12] = (uint8_t)kind;
	hdr[13] = (uint8_t)((unsigned)kind >> 8);
	hdr[14] = hdr[15] = 0;
}

int ct_write_section(int fd, enum ct_section kind, const void *payload, size_t len)
{
	uint8_t hdr[8 + CT_SECTION_HEADER_BYTES];
	if (len > UINT32_MAX - CT_SECTION_HEADER_BYTES)
		return -EFBIG;
	section_header(hdr, kind, len);
	struct iovec iov[2] = { { hdr, sizeof hdr }, { (void *)payload, len } };
	size_t done;
	int rc = write_all_v(fd, iov, len ? 2 : 1, &done);
	if (rc)
		undo_partial(fd, done);
	return rc;
}

int ct_write_header(int fd, const struct ct_header *h)
{
	uint8_t b[CT_HEADER_BYTES];
	ct_header_encode(h, b);
	return ct_write_section(fd, CT_SEC_HEADER, b, sizeof b);
}

int ct_write_thread_info(int fd, const struct ct_thread_info *ti)
{
	uint8_t b[CT_THREAD_INFO_BYTES];
	ct_thread_info_encode(ti, b);
	return ct_write_section(fd, CT_SEC_THREAD, b, sizeof b);
}

int ct_spool_thread_start(int fd, const struct ct_thread_info *ti)
{
	/* two sections, built here so that the offsets are this layout's */
	enum { SEC = 8 + CT_SECTION_HEADER_BYTES };
	uint8_t b[2 * SEC + CT_THREAD_INFO_BYTES + CT_COUNTS_BYTES];
	const struct ct_counts zero = { 0, 0, 0, 0 };
	section_header(b, CT_SEC_THREAD, CT_THREAD_INFO_BYTES);
	ct_thread_info_encode(ti, b + SEC);
	section_header(b + SEC + CT_THREAD_INFO_BYTES, CT_SEC_COUNTS, CT_COUNTS_BYTES);
	ct_counts_encode(ti->index, 0, &zero, b + 2 * SEC + CT_THREAD_INFO_BYTES);
	_Static_assert(2 * SEC + CT_THREAD_INFO_BYTES + 8 == CT_SPOOL_COUNTS_OFFSET, "counts offset");
	struct iovec iov = { b, sizeof b };
	size_t done;
	int rc = write_all_v(fd, &iov, 1, &done);
	if (rc)
		undo_partial(fd, done);
	return rc;
}

/* ---- key=value text ---------------------------------------------------------------- */

void ct_kv_init(struct ct_kv *kv, char *buf, size_t cap)
{
	kv->buf = buf;
	kv->len = 0;
	kv->cap = cap;
	kv->overflow = false;
	if (cap)
		buf[0] = 0;
}

/* Appends "key=value\n"; a line that does not fit is left out whole and sets
 * overflow.  '=' and control characters in the key, and newlines in the
 * value, become '_' and ' ' so that every line parses back. */
void ct_kv_add(struct ct_kv *kv, const char *key, const char *fmt, ...)
{
	size_t start = kv->len, klen = strlen(key);
	if (kv->cap == 0 || start + klen + 2 >= kv->cap) {
		kv->overflow = true;
		return;
	}
	char *o = kv->buf + start;
	for (size_t i = 0; i < klen; i++)
		o[i] = (key[i] == '=' || (unsigned char)key[i] < 0x20) ? '_' : key[i];
	o[klen] = '=';
	size_t pos = start + klen + 1;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(kv->buf + pos, kv->cap - pos, fmt, ap);
	va_end(ap);
	if (n < 0 || pos + (size_t)n + 1 >= kv->cap) {   /* need room for '\n' and NUL */
		kv->overflow = true;
		kv->buf[start] = 0;
		return;
	}
	for (char *v = kv->buf + pos; v < kv->buf + pos + n; v++)
		if (*v == '\n' || *v == '\r')
			*v = ' ';
	pos += (size_t)n;
	kv->buf[pos++] = '\n';
	kv->buf[pos] = 0;
	kv->len = pos;
}

bool ct_kv_get(const char *text, size_t len, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);
	const char *p = text, *end = text + len, *found = NULL, *fend = NULL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if ((size_t)(le - p) > klen && p[klen] == '=' && !memcmp(p, key, klen)) {
			found = p + klen + 1;
			fend = le;
		}
		p = nl ? nl + 1 : end;
	}
	if (!found)
		return false;
	if (cap) {
		size_t n = (size_t)(fend - found);
		if (n > cap - 1)
			n = cap - 1;
		memcpy(out, found, n);
		out[n] = 0;
	}
	return true;
}

/* ---- spool ---------------------------------------------------------------------------- */

void ct_spool_thread_path(char *out, size_t cap, const char *dir, uint32_t index)
{
	snprintf(out, cap, "%s/thread-%06u.zst", dir, (unsigned)index);
}
