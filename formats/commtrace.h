/* commtrace trace format: the one library that writes and reads traces.
 *
 * Both record/ and analyze/ include this header and link libctformat.a;
 * neither has any other way to touch a trace.  The byte layout is specified in
 * formats/FORMAT.md; this header is its C face.
 *
 * Layers, bottom up:
 *   codec    ct_encode_record / ct_decode_record: one record <-> bytes, with
 *            per-frame delta state (struct ct_codec).  No allocation.
 *   frames   ct_frame_sink: a block of encoded records compressed as one
 *            independent zstd frame; skippable frames for metadata.
 *   spool    ct_spool_*: one file per thread while recording.
 *   join     ct_join: spool directory -> one trace.zst, no recompression.
 *   reader   ct_trace_open (trace.zst or spool directory), per-thread and
 *            time-merged cursors.
 */
#ifndef COMMTRACE_FORMAT_H
#define COMMTRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions ---------------------------------------------------------- */

#define CT_FORMAT_VERSION 9     /* written by this library (FORMAT.md, Changelog) */
#define CT_FORMAT_MIN_READ 1    /* oldest version this library reads */
#define CT_FORMAT_SHORT_SAMPLES 8 /* the encoder writes short SAMPLE records: the
                                     min_version of what it writes (FORMAT.md) */

/* Feature bits in the header: what kinds of content a trace may hold.  A
 * reader refuses a trace with a feature bit it does not know in
 * CT_FEATURES_REQUIRED_MASK; other unknown bits are ignored. */
#define CT_FEAT_SAMPLES      (1ull << 0)
#define CT_FEAT_WATCHPOINTS  (1ull << 1)
#define CT_FEAT_ALLOCS       (1ull << 2)
#define CT_FEAT_FULL         (1ull << 3)  /* every access recorded (inst --full) */
#define CT_FEAT_FUNCS        (1ull << 4)  /* function entry/exit records */
#define CT_FEAT_SYMBOLS      (1ull << 5)  /* embedded symbol sections */
#define CT_FEAT_OWNER        (1ull << 6)  /* v4: line monitor records (OWNER_XFER, OWNER_WIN) */
#define CT_FEAT_FILTERED     (1ull << 32) /* required: a filtered full trace (FORMAT.md) */
#define CT_FEAT_LINE_WATCHES (1ull << 33) /* required: software line watches (FORMAT.md) */
#define CT_FEAT_LINE_WRITERS (1ull << 34) /* required: a load's hit leaves its line watch
                                             for the watcher's store (FORMAT.md) */
#define CT_FEATURES_KNOWN    (((1ull << 7) - 1) | CT_FEAT_FILTERED | CT_FEAT_LINE_WATCHES | \
                              CT_FEAT_LINE_WRITERS)
#define CT_FEATURES_REQUIRED_MASK 0xffffffff00000000ull

/* ---- records ----------------------------------------------------------- */

enum ct_rec_type {
	CT_REC_SAMPLE = 1,       /* one sampled (or, in full traces, every) access */
	CT_REC_WP_ARM = 2,       /* a thread armed its watchpoints */
	CT_REC_WP_HIT = 3,       /* a watchpoint trapped */
	CT_REC_ALLOC = 4,
	CT_REC_FREE = 5,
	CT_REC_CALLSITE = 6,     /* definition of an allocation call-site id */
	CT_REC_THREAD_START = 7,
	CT_REC_THREAD_END = 8,
	CT_REC_MARKER = 9,       /* user region / phase marker */
	CT_REC_LOST = 10,        /* records that could not be recorded */
	CT_REC_FUNC_ENTER = 11,  /* exact mode only */
	CT_REC_FUNC_EXIT = 12,   /* exact mode only */
	CT_REC_SKIPPED = 13,     /* samples taken but not usable, by reason */
	CT_REC_OWNER_XFER = 14,  /* v4: a transfer a line monitor saw (inst --owner-window) */
	CT_REC_OWNER_WIN = 15,   /* v4: a line monitor's window opened (or could not) */
	CT_REC_TYPE_MAX = 15
};

enum ct_access_kind {
	CT_ACCESS_LOAD = 0,
	CT_ACCESS_STORE = 1,
	CT_ACCESS_ATOMIC = 2,    /* atomic read-modify-write: counts as a store */
};

/* ct_sample.flags */
#define CT_SAMPLE_EXACT         0x01 /* address from the PMU or instrumentation */
#define CT_SAMPLE_RECONSTRUCTED 0x02 /* address computed by decoding (soft) */
#define CT_SAMPLE_PREV_INSN     0x04 /* soft: the instruction before the sampled ip */
#define CT_SAMPLE_HAS_DATA_SRC  0x08 /* data_src is valid (PEBS/IBS) */
#define CT_SAMPLE_HAS_WEIGHT    0x10 /* weight is valid (PEBS load latency) */
#define CT_SAMPLE_FS_BASED      0x20 /* address used the fs/gs segment base */
#define CT_SAMPLE_SYNC          0x40 /* v3: implied by a synchronization call (inst full mode) */

#define CT_WP_MAX 4              /* debug registers per thread (x86) */
#define CT_CALLSITE_MAX_DEPTH 16
#define CT_MARKER_NAME_MAX 63

struct ct_sample {
	uint64_t ip;             /* instruction address */
	uint64_t addr;           /* data address */
	uint64_t period;         /* events (or CPU ns for soft) this sample stands for */
	uint64_t data_src;       /* PERF_SAMPLE_DATA_SRC encoding, if flagged */
	uint32_t weight;         /* PERF_SAMPLE_WEIGHT, if flagged */
	uint32_t cpu;
	uint8_t len;             /* access length in bytes, 1..255 */
	uint8_t kind;            /* enum ct_access_kind */
	uint8_t flags;           /* CT_SAMPLE_* */
};

/* A watchpoint arm belongs to the thread's SAMPLE record just before it in
 * that thread's stream (the sample whose handler armed it). */
struct ct_wp_arm {
	uint64_t pub_time;       /* when the publisher published the entry */
	uint64_t pub_addr;       /* the published address and length */
	uint32_t publisher;      /* thread index of the publisher */
	uint8_t pub_len;
	uint8_t nwp;             /* registers armed, 1..CT_WP_MAX */
	uint8_t wp_len[CT_WP_MAX];
	uint64_t wp_addr[CT_WP_MAX]; /* register i watches [wp_addr[i], +wp_len[i]) */
};

/* A hit refers to the thread's most recent WP_ARM record. */
struct ct_wp_hit {
	uint64_t ip;             /* trapping instruction (after the access on x86) */
	uint64_t addr;           /* watched address that trapped */
	uint32_t cpu;
	uint8_t reg;             /* register index 0..nwp-1 in the arm record */
	uint8_t len;             /* length of the watched word */
	uint8_t kind;            /* enum ct_access_kind if known, else LOAD */
};

enum ct_alloc_kind {
	CT_ALLOC_MALLOC = 0, CT_ALLOC_CALLOC = 1, CT_ALLOC_REALLOC = 2,
	CT_ALLOC_MEMALIGN = 3,   /* posix_memalign, aligned_alloc, memalign, valloc */
	CT_ALLOC_MMAP = 4,
};

struct ct_alloc {
	uint64_t addr;
	uint64_t size;
	uint64_t old_addr;       /* realloc: the block it replaced (0 if none) */
	uint32_t callsite;       /* id defined by a CALLSITE record before it */
	uint8_t kind;            /* enum ct_alloc_kind */
};

struct ct_free {
	uint64_t addr;
	uint64_t size;           /* munmap length; 0 for free() */
	uint8_t kind;            /* 0 free, 1 munmap */
};

struct ct_callsite {
	uint32_t id;             /* unique within the trace (not only the thread) */
	uint8_t depth;           /* 1..CT_CALLSITE_MAX_DEPTH */
	uint64_t pc[CT_CALLSITE_MAX_DEPTH]; /* innermost first */
};

struct ct_thread_start {
	uint64_t stack_lo, stack_hi; /* [lo, hi) */
	uint64_t fs_base;
	uint64_t tls_lo, tls_hi;     /* static TLS block, if known, else 0 */
};

struct ct_thread_end {
	int32_t status;          /* 0, or the fatal signal number if killed */
};

enum ct_marker_kind {
	CT_MARK_REGION_BEGIN = 0, CT_MARK_REGION_END = 1, CT_MARK_PHASE = 2,
	/* the runtime lengthened the thread's sampling period (throttling):
	 * name "period=N share=P%", N the new period in the SAMPLE period unit,
	 * P the runtime's share of the thread's CPU time that triggered it */
	CT_MARK_THROTTLE = 3,
};

struct ct_marker {
	uint8_t kind;            /* enum ct_marker_kind */
	char name[CT_MARKER_NAME_MAX + 1]; /* NUL-terminated */
};

enum ct_lost_reason {
	CT_LOST_BUFFER_FULL = 1, /* runtime ring full: writer fell behind */
	CT_LOST_WRITE_ERROR = 2, /* spool write failed (disk full, ...) */
	CT_LOST_PMU = 3,         /* kernel reported lost samples */
	CT_LOST_THROTTLE = 4,    /* kernel throttled the event */
	CT_LOST_WP_SETUP = 5,    /* watchpoint could not be armed */
};

struct ct_lost {
	uint8_t reason;          /* enum ct_lost_reason */
	uint64_t count;
};

enum ct_skip_reason {
	CT_SKIP_NO_MEMORY_OPERAND = 1,
	CT_SKIP_LEA_NOP = 2,
	CT_SKIP_GATHER_SCATTER = 3,
	CT_SKIP_DECODE_FAILED = 4,
	CT_SKIP_UNREADABLE_IP = 5,
	CT_SKIP_NOT_LOAD_STORE = 6,  /* IBS: op was neither */
	CT_SKIP_KERNEL = 7,          /* sample in kernel space */
	CT_SKIP_RUNTIME = 8,         /* sample in the recorder's own code */
	CT_SKIP_REASON_MAX = 8
};

struct ct_skipped {
	uint8_t reason;          /* enum ct_skip_reason */
	uint64_t count;
};

struct ct_func {
	uint64_t addr;           /* function (entry) or return address (exit: 0) */
};

/* The line monitor (inst sampled mode, commrec --owner-window J; FORMAT.md
 * "Line monitor"): a sampled store opens a window on its line, which holds
 * the transfers from the line's Jth store after it to its 2Jth (any thread's
 * stores); meanwhile the runtime plays the exact model's coherence state of
 * that line.  A transfer it sees is an OWNER_XFER in the
 * receiving thread's stream. */
#define CT_OWNER_TRUE 0x01       /* ct_owner_xfer.flags: true sharing */
struct ct_owner_xfer {
	uint64_t ip;             /* the receiving access's instruction */
	uint64_t addr;           /* the receiving access */
	uint64_t prior;          /* over the open windows: the transfers each saw before this one */
	uint32_t src;            /* thread index of the line's last writer */
	uint32_t windows;        /* the line's open windows (this transfer is in each), >= 1 */
	uint8_t len;             /* the receiving access's bytes on the line, 1..128 */
	uint8_t kind;            /* enum ct_access_kind */
	uint8_t flags;           /* CT_OWNER_* */
};

enum ct_owner_open {
	CT_OWNER_OPENED = 0,     /* the window opened */
	CT_OWNER_DROP_TABLE = 1, /* not opened: every slot of the monitor table was in use */
	CT_OWNER_DROP_LINE = 2,  /* not opened: the line had its most windows open */
	CT_OWNER_OPEN_MAX = 2
};

/* In the sampling thread's stream, right after its SAMPLE (a store). */
struct ct_owner_win {
	uint64_t addr;           /* the sampled store's address */
	uint8_t status;          /* enum ct_owner_open */
};

/* One record, decoded.  `thread` is the thread index (creation order, 0 is
 * the first thread recorded); it is implied by the stream and is filled in by
 * the reader; writers ignore it. */
struct ct_record {
	uint8_t type;            /* enum ct_rec_type */
	uint32_t thread;
	uint64_t time;           /* CLOCK_MONOTONIC ns */
	union {
		struct ct_sample sample;
		struct ct_wp_arm arm;
		struct ct_wp_hit hit;
		struct ct_alloc alloc;
		struct ct_free free;
		struct ct_callsite callsite;
		struct ct_thread_start start;
		struct ct_thread_end end;
		struct ct_marker marker;
		struct ct_lost lost;
		struct ct_skipped skipped;
		struct ct_func func;
		struct ct_owner_xfer oxfer;
		struct ct_owner_win owin;
	} u;
};

const char *ct_rec_type_name(unsigned type);     /* "sample", ... or NULL */
int ct_rec_type_from_name(const char *name);     /* -1 if unknown */
const char *ct_access_kind_name(unsigned kind);  /* "load", "store", "atomic" */
const char *ct_lost_reason_name(unsigned reason);
const char *ct_skip_reason_name(unsigned reason);
/* OpenMP parallel regions that the recorder's runtime marks itself are
 * region markers named "omp:0xADDR", ADDR the region's outlined function
 * (FORMAT.md, MARKER).  The name for fn into buf (cap >= 24); and whether
 * a name is one, with *fn its address. */
#define CT_MARKER_OMP_PREFIX "omp:"
void ct_marker_omp_name(char *buf, size_t cap, uint64_t fn);
bool ct_marker_omp_fn(const char *name, uint64_t *fn);

/* ---- codec ------------------------------------------------------------- */

/* Delta state, reset at the start of every frame.  ip and addr are the most
 * recent code and data addresses; ip_old and addr_old the ones before them
 * (most recent first), which SAMPLE records may refer to (FORMAT.md). */
struct ct_codec {
	uint64_t time, ip, addr;
	uint64_t period;
	uint32_t cpu;
	uint8_t len, kind, flags;
	uint64_t ip_old[7], addr_old[3];
};

#define CT_RECORD_MAX_BYTES 256  /* an encoded record never exceeds this */

void ct_codec_reset(struct ct_codec *c);
/* Encode r into out (at least CT_RECORD_MAX_BYTES); returns bytes written.
 * Async-signal-safe, no allocation. */
size_t ct_encode_record(struct ct_codec *c, const struct ct_record *r, uint8_t *out);
/* ct_encode_record for a run of SAMPLE records: the n records at recs,
 * recs + stride, ..., into out while room - (bytes written) >= CT_RECORD_MAX_BYTES
 * (the same bytes, one call).  Returns bytes written, *taken the records. */
size_t ct_encode_samples(struct ct_codec *c, const void *recs, size_t stride, size_t n,
                         uint8_t *out, size_t room, size_t *taken);
/* Decode one record from [p, end); returns bytes consumed, 0 on malformed
 * input (never reads past end; the codec state is then unchanged).
 * r->thread is left unchanged; r->type, r->time and the whole union member
 * of that type are written (fields the encoding leaves out are 0); the
 * bytes of the other union members are not touched. */
size_t ct_decode_record(struct ct_codec *c, const uint8_t *p, const uint8_t *end,
                        struct ct_record *r);

/* ---- errors ------------------------------------------------------------ */

/* Every failing call fills one of these with a one-line message that names
 * the file and, for damaged input, the byte offset. */
struct ct_error {
	char msg[512];
};

/* ---- metadata sections (zstd skippable frames) ------------------------- */

enum ct_section {
	CT_SEC_HEADER = 1,       /* binary: struct ct_header */
	CT_SEC_THREAD = 2,       /* binary: struct ct_thread_info; data frames after it are that thread's */
	CT_SEC_MACHINE = 3,      /* text: key=value lines */
	CT_SEC_CONFIG = 4,       /* text: key=value lines */
	CT_SEC_CMDLINE = 5,      /* argv, each NUL-terminated */
	CT_SEC_MAPS = 6,         /* text: one mapping a line, see FORMAT.md */
	CT_SEC_SUMMARY = 7,      /* text: key=value lines; present only in a complete trace */
	CT_SEC_SYMBOLS = 8,      /* symbol tables for portable analysis (FORMAT.md) */
	CT_SEC_COUNTS = 9,       /* spool thread files only: struct ct_counts (the join sums it into SUMMARY) */
	CT_SEC_MAX = 9
};

struct ct_header {
	uint16_t version;
	uint16_t min_version;    /* oldest reader version that can read this trace */
	uint64_t features;       /* CT_FEAT_* */
	uint64_t created_ns;     /* CLOCK_REALTIME at the start of recording */
};

struct ct_thread_info {
	uint32_t index;          /* creation order, 0 first */
	uint32_t parent;         /* index of the creating thread, UINT32_MAX if none */
	int32_t tid;             /* OS thread id */
	int32_t pid;
	uint64_t start_ns;       /* CLOCK_MONOTONIC */
	char name[16];           /* comm, NUL-terminated, may be empty */
};

/* How many records were made for a thread and what became of them
 * (FORMAT.md, "COUNTS").  written + buffer_full + write_error + unflushed
 * = produced + added, where written is what the trace holds and unflushed
 * what was still in memory when the process died. */
struct ct_counts {
	uint64_t produced;       /* records the thread's code made (pushed or dropped) */
	uint64_t buffer_full;    /* of those, dropped: the thread's ring was full */
	uint64_t added;          /* records the writer added to the stream (LOST) */
	uint64_t write_error;    /* records in frames that could not be written */
};

#define CT_COUNTS_BYTES 40       /* u32 index, u32 flags, 4 x u64 */
#define CT_COUNTS_LIVE 1u        /* flags: the counts are kept up to date */
void ct_counts_encode(uint32_t index, uint32_t flags, const struct ct_counts *c,
                      uint8_t out[CT_COUNTS_BYTES]);
/* 0, or -1 if len < CT_COUNTS_BYTES. */
int ct_counts_decode(const void *p, size_t len, uint32_t *index, uint32_t *flags,
                     struct ct_counts *c);

/* ---- writing ----------------------------------------------------------- */

/* Encodes records into blocks and writes each block as one zstd frame to fd.
 * The buffers are allocated once by ct_sink_init; appending never allocates
 * (but appending compresses and writes when a block is full: call it from a
 * writer thread, not from a signal handler). */
struct ct_sink {
	int fd;
	int level;               /* zstd level */
	uint8_t *block;          /* raw records of the current frame */
	size_t block_len, block_cap;
	uint32_t block_records;
	void *zbuf;              /* compressed output */
	size_t zbuf_cap;
	void *cctx;              /* ZSTD_CCtx */
	struct ct_codec codec;
	uint64_t records, bytes_written, frames;
	uint64_t dropped;        /* records of blocks that could not be written */
	int error;               /* errno of the first write failure, 0 if none */
};

#define CT_BLOCK_DEFAULT (256 * 1024)  /* raw bytes per frame */
#define CT_BLOCK_MAX (4 * 1024 * 1024) /* readers refuse larger frames */

int ct_sink_init(struct ct_sink *s, int fd, size_t block_cap, int level);
int ct_sink_append(struct ct_sink *s, const struct ct_record *r);  /* 0 or -errno */
/* ct_sink_append for a run of SAMPLE records (ct_encode_samples) while the
 * block has room for them, never flushing: returns how many it took (0:
 * the block is full, or there is none). */
size_t ct_sink_append_samples(struct ct_sink *s, const void *recs, size_t stride, size_t n);
int ct_sink_flush(struct ct_sink *s);                               /* 0 or -errno */
/* Drop the block being built (its frame may already be half in the file):
 * its records count as dropped. */
void ct_sink_discard(struct ct_sink *s);
void ct_sink_destroy(struct ct_sink *s);   /* does not flush, does not close fd */

/* Write one skippable metadata frame. 0 or -errno. */
int ct_write_section(int fd, enum ct_section kind, const void *payload, size_t len);
int ct_write_header(int fd, const struct ct_header *h);
int ct_write_thread_info(int fd, const struct ct_thread_info *ti);

/* Key=value text sections: a small builder with a fixed buffer. */
struct ct_kv {
	char *buf;
	size_t len, cap;
	bool overflow;
};
void ct_kv_init(struct ct_kv *kv, char *buf, size_t cap);
void ct_kv_add(struct ct_kv *kv, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Value of key in key=value text (the last line for key wins), copied into
 * out and NUL-terminated (truncated to cap-1 bytes); false if absent. */
bool ct_kv_get(const char *text, size_t len, const char *key, char *out, size_t cap);

/* ---- low-level layout (FORMAT.md), for tools, tests and fuzzers --------- */

#define CT_SKIPPABLE_MAGIC 0x184D2A50u /* zstd skippable frame used for sections */
#define CT_SECTION_MAGIC   0x43525443u /* bytes "CTRC": section header magic */
#define CT_BLOCK_MAGIC     0x4B4C4243u /* bytes "CBLK": data block header magic */
#define CT_SECTION_HEADER_BYTES 8      /* u32 magic, u16 kind, u16 flags */
#define CT_HEADER_BYTES 24             /* encoded struct ct_header */
#define CT_THREAD_INFO_BYTES 40        /* encoded struct ct_thread_info */
#define CT_BLOCK_HEADER_BYTES 8        /* u32 magic, u32 record count */

const char *ct_section_name(unsigned kind);      /* "header", ... or NULL */
void ct_header_encode(const struct ct_header *h, uint8_t out[CT_HEADER_BYTES]);
/* 0, or -1 if len < CT_HEADER_BYTES.  Longer bodies are accepted (growth). */
int ct_header_decode(const void *p, size_t len, struct ct_header *h);
void ct_thread_info_encode(const struct ct_thread_info *ti, uint8_t out[CT_THREAD_INFO_BYTES]);
int ct_thread_info_decode(const void *p, size_t len, struct ct_thread_info *ti);

/* ---- spool and join ---------------------------------------------------- */

/* While recording, a spool directory holds:
 *   meta.zst            header and trace-wide metadata (written first)
 *   thread-NNNNNN.zst   per thread: THREAD section, COUNTS section, then
 *                       data frames
 *   maps-PID.txt        the memory map (CT_SEC_MAPS text), rewritten at exit
 * Thread file names for a given index: */
void ct_spool_thread_path(char *out, size_t cap, const char *dir, uint32_t index);
/* The start of a thread file: its THREAD section and a COUNTS section of
 * zeros (flags 0), in one write.  The counts' fields then sit at
 * CT_SPOOL_COUNTS_OFFSET (their flags word 4 bytes before): the runtime
 * maps the page and keeps them up to date in place, so that they survive
 * the process.  0 or -errno. */
int ct_spool_thread_start(int fd, const struct ct_thread_info *ti);
#define CT_SPOOL_COUNTS_OFFSET (2 * (8 + CT_SECTION_HEADER_BYTES) + CT_THREAD_INFO_BYTES + 8)

/* Join a spool directory into one trace file: meta.zst, the thread files in
 * index order (each cut at its last whole frame), the maps, the extra
 * sections given (for example symbols), then a SUMMARY section built from
 * summary_kv (the join adds per-thread records/lost counts itself).  The
 * output is written to a fresh file created exclusively beside out_path
 * (random name, never following a symbolic link) and moved to out_path at
 * the end.  An existing out_path is replaced only with CT_JOIN_REPLACE and
 * only if it is a regular file.  Returns 0, or -1 with err filled. */
struct ct_join_section {
	enum ct_section kind;
	const void *data;
	size_t len;
};
#define CT_JOIN_REPLACE 1u   /* replace out_path if it is a regular file */
int ct_join(const char *spool_dir, const char *out_path,
            const struct ct_join_section *extra, size_t nextra,
            const char *summary_kv, unsigned flags, struct ct_error *err);

/* ---- reading ----------------------------------------------------------- */

struct ct_trace;

/* Opens a trace.zst file or a spool directory.  NULL with err filled on
 * failure: missing file, empty file, wrong magic, version too new, unknown
 * required feature, bad HEADER section.  Damaged structure after the header
 * is not fatal: indexing stops there and ct_trace_damage() says where. */
struct ct_trace *ct_trace_open(const char *path, struct ct_error *err);
void ct_trace_close(struct ct_trace *t);
/* The same for a joined trace already in memory (fuzzers, tests, pipes):
 * buf must stay valid until ct_trace_close; name stands for the file name
 * in messages. */
struct ct_trace *ct_trace_open_mem(const void *buf, size_t len, const char *name,
                                   struct ct_error *err);

const char *ct_trace_path(const struct ct_trace *t);
const struct ct_header *ct_trace_header(const struct ct_trace *t);
/* true only when the trace has a SUMMARY section (the join finished). */
bool ct_trace_complete(const struct ct_trace *t);
/* Problems found while indexing (for example a truncated last frame):
 * NULL when none, else a one-line message.  The trace is still usable. */
const char *ct_trace_damage(const struct ct_trace *t);

size_t ct_trace_nthreads(const struct ct_trace *t);
/* i-th thread in index order (0..nthreads-1). */
const struct ct_thread_info *ct_trace_thread(const struct ct_trace *t, size_t i);
/* Number of data frames indexed for thread i (cheap). */
size_t ct_trace_thread_frames(const struct ct_trace *t, size_t i);
/* Compressed bytes of thread i's data frames (cheap: from the index). */
uint64_t ct_trace_thread_bytes(const struct ct_trace *t, size_t i);

/* Payload of a metadata section, NULL if absent (the last one wins if
 * several).  Owned by the trace. */
const void *ct_trace_section(const struct ct_trace *t, enum ct_section kind, size_t *len);
/* Value of key in a key=value section, copied into out; false if absent. */
bool ct_trace_meta(const struct ct_trace *t, enum ct_section kind, const char *key,
                   char *out, size_t cap);

/* Cursors.  ct_cursor_next returns 1 with a record, 0 at the end, -1 on
 * damaged data (err filled; the records before it were delivered; it keeps
 * returning -1).  An open trace is not modified by reading: several cursors
 * may read it at once, from different threads (one cursor per thread). */
struct ct_cursor;
struct ct_cursor *ct_cursor_thread(struct ct_trace *t, size_t i);
/* All threads merged in (time, thread index, stream order) order, with one
 * decoded frame per thread in memory at a time. */
struct ct_cursor *ct_cursor_merged(struct ct_trace *t);
/* The same records in the same order, with frames decompressed and decoded
 * ahead by jobs - 1 worker threads (jobs <= 1: ct_cursor_merged).  Holds up
 * to min(2 x threads, 8 x jobs) decoded frames. */
struct ct_cursor *ct_cursor_merged_jobs(struct ct_trace *t, unsigned jobs);
int ct_cursor_next(struct ct_cursor *c, struct ct_record *r, struct ct_error *err);
/* Up to n records into r[0..n), *got of them (the loop of ct_cursor_next
 * without a call per record): 1 when *got = n, 0 at the end, -1 on damaged
 * data (err filled) after the *got records before it. */
int ct_cursor_read(struct ct_cursor *c, struct ct_record *r, size_t n, size_t *got,
                   struct ct_error *err);
void ct_cursor_free(struct ct_cursor *c);

#ifdef __cplusplus
}
#endif
#endif
