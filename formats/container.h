/* The container, internal to formats/: mapped files, the frame scanner,
 * HEADER checks, the spool directory listing and block loading, shared by
 * the reader (reader.c) and the join (join.c).  Not installed: the public
 * face of the format is commtrace.h. */
#ifndef CT_CONTAINER_H
#define CT_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "commtrace.h"

#define FMT(a, b) __attribute__((format(printf, a, b)))

/* err->msg = the formatted message (err may be NULL). */
void cti_seterr(struct ct_error *err, const char *fmt, ...) FMT(2, 3);

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd32(const uint8_t *p) { return rd16(p) | (uint32_t)rd16(p + 2) << 16; }

/* Grow *p (elements of elem bytes) to hold need; 0, or -1 out of memory. */
int cti_grow(void **p, size_t *cap, size_t need, size_t elem);

/* ---- mapped files ---- */

struct src {
	char *path;
	const uint8_t *map;     /* NULL for an empty file */
	size_t size;
	size_t valid_end;       /* end of the last whole frame indexed */
	bool borrowed;          /* map belongs to the caller */
};

/* Map a regular file read-only (in_spool: never through a symbolic link). */
int cti_map_file(const char *path, bool in_spool, struct src *s, struct ct_error *err);
void cti_unmap_file(struct src *s);

/* ---- frames ---- */

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
int cti_scan_frame(const uint8_t *base, size_t total, size_t off, struct frame_scan *f,
                   char *why, size_t whycap);
/* The first frame of a trace or meta.zst must be a HEADER section this
 * reader accepts: 0 with *h and the offset after it, else -1 with err. */
int cti_read_first_header(const struct src *s, struct ct_header *h, size_t *next,
                          struct ct_error *err);
/* Decompress a data frame into *buf (grown, at most CT_BLOCK_MAX) and check
 * its block header: 0 with *count and the record bytes [*rp, *rend), or -1
 * with why filled. */
int cti_load_frame(ZSTD_DCtx *dctx, const uint8_t *src, uint64_t size, uint32_t content,
                   uint8_t **buf, size_t *bufcap, const uint8_t **rp, const uint8_t **rend,
                   uint32_t *count, char *why, size_t whycap);

/* ---- records decoded in bulk ---- */

/* A packed record (decoded frames, reader.c) takes the bytes of its struct
 * ct_record up to the end of the union member its type uses, rounded up to
 * the struct's alignment (a sample: 64 bytes instead of the struct's 152),
 * so that the next one starts aligned. */
extern const uint8_t cti_packed_bytes[CT_REC_TYPE_MAX + 1];
/* Decode up to n records from *pp (up to end, with c's state) into out,
 * packed, each with thread as its thread, while out[*used, cap) has room
 * for a whole struct ct_record.  Returns the records decoded, *pp after
 * them, *used the bytes of out they take; a malformed record stops the
 * loop with *pp at it (fewer than n, and room left). */
uint32_t cti_decode_packed(struct ct_codec *c, const uint8_t **pp, const uint8_t *end,
                           uint32_t thread, uint32_t n, uint8_t *out, size_t cap, size_t *used);

/* What a file may contribute (FORMAT.md, "Spool directory"): a trace file
 * everything; a spool's meta.zst its trace-wide sections (no THREAD, no
 * SUMMARY, no data); a spool thread file its THREAD sections and data
 * frames.  Anything else in a spool file is skipped. */
enum role { ROLE_TRACE, ROLE_META, ROLE_THREAD };
bool cti_role_takes_section(enum role role, uint16_t kind);

/* Walking the frames of a file as its role allows: the one loop that the
 * reader (which indexes the frames) and the join (which copies them) share.
 * FI_SKIP: a section the role does not take, or a foreign skippable frame;
 * FI_THREAD: a THREAD section (item->ti decoded); FI_SECTION: any other
 * section the role takes; FI_DATA: a data frame (after a THREAD section). */
enum { FI_SKIP, FI_THREAD, FI_SECTION, FI_DATA };
struct frame_iter {
	const uint8_t *base;
	size_t total;
	size_t off;             /* where the frame last returned (or refused) starts */
	size_t next;
	enum role role;
	bool in_thread;         /* a THREAD section came before */
};
struct frame_item {
	int what;               /* FI_* */
	struct frame_scan f;
	struct ct_thread_info ti;
};
void cti_iter_init(struct frame_iter *it, const struct src *s, size_t off, enum role role);
/* The next frame: 1 with *item, 0 at the end of the file, -1 with why when
 * the frame at it->off is damaged or out of place (the walk ends there). */
int cti_iter_next(struct frame_iter *it, struct frame_item *item, char *why, size_t whycap);

/* ---- spool directory ---- */

struct tfile {
	uint32_t index;
	char *path;
};

/* "dir/name", malloc'd (NULL when out of memory). */
char *cti_path_join(const char *dir, const char *name);
/* Thread files sorted by index, and the newest maps-PID.txt (by mtime, then
 * by the larger PID).  -1 with err on failure. */
int cti_list_spool(const char *dir, struct tfile **out, size_t *nout, char **maps_path,
                   struct ct_error *err);
void cti_free_tfiles(struct tfile *v, size_t n);
/* Whole small file of the spool, NUL-terminated; NULL on error. */
char *cti_read_text(const char *path, size_t *len);

#endif
