/* Hand-built traces for the analyzer tests, written with the format API
 * (formats/commtrace.h) to a temporary file.  The one place tests build
 * traces; reuse it.
 *
 *   struct tb b;
 *   tb_init(&b, 2);                           // 2 threads, indices 0 and 1
 *   tb_machine(&b, "cpu.0=core 0 socket 0\n"); // optional sections
 *   tb_sample(&b, 0, 100, 0x1000, 8, CT_ACCESS_STORE, 1000);
 *   tb_sample(&b, 1, 150, 0x1000, 8, CT_ACCESS_LOAD, 1000);
 *   const char *path = tb_write(&b);          // NULL on failure
 *   ... ct_trace_open(path) / analysis_run(...) ...
 *   tb_free(&b);                              // removes the file
 *
 * Records are kept per thread in the order added (add them in time order
 * per thread).  Every thread gets a THREAD section (tid 1000+index, parent
 * index-1); the trace is complete (has a SUMMARY) unless b.complete is
 * cleared before tb_write.  b.block_cap sets the raw bytes per data frame
 * (small values give many frames). */
#ifndef CT_TRACEBUILD_H
#define CT_TRACEBUILD_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commtrace.h"

struct tb_thread {
	struct ct_thread_info info;
	struct ct_record *r;
	size_t n, cap;
};

struct tb {
	char path[256];
	size_t nthreads;
	struct tb_thread *t;
	char machine[8192], config[4096], summary[4096];
	char cmdline[512];
	size_t cmdline_len;
	uint64_t features;
	uint16_t version, min_version;
	bool complete;
	size_t block_cap;
	bool written;
};

static inline void tb_appendf(char *buf, size_t cap, const char *s)
{
	size_t l = strlen(buf);
	snprintf(buf + l, cap - l, "%s", s);
}

static inline int tb_init(struct tb *b, size_t nthreads)
{
	memset(b, 0, sizeof *b);
	b->nthreads = nthreads;
	b->t = (struct tb_thread *)calloc(nthreads ? nthreads : 1, sizeof *b->t);
	if (!b->t)
		return -1;
	for (size_t i = 0; i < nthreads; i++) {
		struct ct_thread_info *ti = &b->t[i].info;
		ti->index = (uint32_t)i;
		ti->parent = i ? (uint32_t)(i - 1) : UINT32_MAX;
		ti->tid = (int32_t)(1000 + i);
		ti->pid = 1000;
		ti->start_ns = 1;
		snprintf(ti->name, sizeof ti->name, "t%u", (unsigned)i);   /* indices fit 32 bits */
	}
	b->features = CT_FEAT_SAMPLES | CT_FEAT_WATCHPOINTS;
	b->version = CT_FORMAT_VERSION;
	b->min_version = CT_FORMAT_MIN_READ;
	b->complete = true;
	b->block_cap = CT_BLOCK_DEFAULT;
	const char *tmp = getenv("TMPDIR");
	snprintf(b->path, sizeof b->path, "%s/ct-tb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(b->path);
	if (fd < 0)
		return -1;
	close(fd);
	static const char argv0[] = "./app\0--threads\0002";
	memcpy(b->cmdline, argv0, sizeof argv0);
	b->cmdline_len = sizeof argv0;
	snprintf(b->config, sizeof b->config, "sampler=soft\nperiod=1000\nperiod_unit=events\n"
	         "watchpoints=4\nboard_size=127\nline_size=64\n");
	snprintf(b->summary, sizeof b->summary, "exit_status=0\nexit_signal=0\nrecording=complete\n");
	return 0;
}

/* Replace (not append) a key=value text section.  NULL: leave out. */
static inline void tb_machine(struct tb *b, const char *text)
{
	snprintf(b->machine, sizeof b->machine, "%s", text ? text : "");
}
static inline void tb_config(struct tb *b, const char *text)
{
	snprintf(b->config, sizeof b->config, "%s", text ? text : "");
}

static inline struct ct_record *tb_add(struct tb *b, uint32_t thread, uint8_t type, uint64_t time)
{
	if (thread >= b->nthreads)
		abort();
	struct tb_thread *t = &b->t[thread];
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		struct ct_record *r = (struct ct_record *)realloc(t->r, nc * sizeof *r);
		if (!r)
			abort();
		t->r = r;
		t->cap = nc;
	}
	struct ct_record *r = &t->r[t->n++];
	memset(r, 0, sizeof *r);
	r->type = type;
	r->thread = thread;
	r->time = time;
	return r;
}

/* A sample on cpu = thread index (tb_sample_cpu for another cpu). */
static inline struct ct_record *tb_sample_cpu(struct tb *b, uint32_t thread, uint64_t time,
                                              uint64_t addr, uint8_t len, uint8_t kind,
                                              uint64_t period, uint32_t cpu)
{
	struct ct_record *r = tb_add(b, thread, CT_REC_SAMPLE, time);
	r->u.sample.ip = 0x400000 + (addr & 0xfff);
	r->u.sample.addr = addr;
	r->u.sample.len = len;
	r->u.sample.kind = kind;
	r->u.sample.period = period;
	r->u.sample.cpu = cpu;
	r->u.sample.flags = CT_SAMPLE_EXACT;
	return r;
}

static inline struct ct_record *tb_sample(struct tb *b, uint32_t thread, uint64_t time,
                                          uint64_t addr, uint8_t len, uint8_t kind, uint64_t period)
{
	return tb_sample_cpu(b, thread, time, addr, len, kind, period, thread);
}

/* An arm of nwp registers on consecutive 8-byte words of pub_addr's 64-byte
 * line, from the line start. */
static inline struct ct_record *tb_arm(struct tb *b, uint32_t thread, uint64_t time,
                                       uint32_t publisher, uint64_t pub_time, uint64_t pub_addr,
                                       uint8_t pub_len, uint8_t nwp)
{
	struct ct_record *r = tb_add(b, thread, CT_REC_WP_ARM, time);
	r->u.arm.publisher = publisher;
	r->u.arm.pub_time = pub_time;
	r->u.arm.pub_addr = pub_addr;
	r->u.arm.pub_len = pub_len;
	r->u.arm.nwp = nwp;
	for (unsigned i = 0; i < nwp && i < CT_WP_MAX; i++) {
		r->u.arm.wp_addr[i] = (pub_addr & ~63ull) + 8 * i;
		r->u.arm.wp_len[i] = 8;
	}
	return r;
}

static inline struct ct_record *tb_hit(struct tb *b, uint32_t thread, uint64_t time,
                                       uint64_t addr, uint8_t len, uint8_t reg)
{
	struct ct_record *r = tb_add(b, thread, CT_REC_WP_HIT, time);
	r->u.hit.ip = 0x401000;
	r->u.hit.addr = addr;
	r->u.hit.len = len;
	r->u.hit.reg = reg;
	r->u.hit.cpu = thread;
	r->u.hit.kind = CT_ACCESS_LOAD;
	return r;
}

/* Records equal field by field: the same thread and the same encoding
 * (from a reset codec state: every field a type has, and no padding). */
static inline bool tb_same_record(const struct ct_record *a, const struct ct_record *b)
{
	uint8_t ea[CT_RECORD_MAX_BYTES], eb[CT_RECORD_MAX_BYTES];
	struct ct_codec ca, cb;
	ct_codec_reset(&ca);
	ct_codec_reset(&cb);
	size_t na = ct_encode_record(&ca, a, ea), nb = ct_encode_record(&cb, b, eb);
	return a->thread == b->thread && na == nb && !memcmp(ea, eb, na);
}

/* Write the trace file; returns its path or NULL. */
static inline const char *tb_write(struct tb *b)
{
	int fd = open(b->path, O_WRONLY | O_TRUNC | O_CREAT, 0644);
	if (fd < 0)
		return NULL;
	struct ct_header h = { .version = b->version, .min_version = b->min_version,
	                       .features = b->features, .created_ns = 1700000000000000000ull };
	int bad = ct_write_header(fd, &h) < 0;
	if (b->machine[0])
		bad |= ct_write_section(fd, CT_SEC_MACHINE, b->machine, strlen(b->machine)) < 0;
	if (b->config[0])
		bad |= ct_write_section(fd, CT_SEC_CONFIG, b->config, strlen(b->config)) < 0;
	if (b->cmdline_len)
		bad |= ct_write_section(fd, CT_SEC_CMDLINE, b->cmdline, b->cmdline_len) < 0;
	for (size_t i = 0; i < b->nthreads && !bad; i++) {
		struct tb_thread *t = &b->t[i];
		bad |= ct_write_thread_info(fd, &t->info) < 0;
		struct ct_sink s;
		if (ct_sink_init(&s, fd, b->block_cap, 1) < 0) {
			bad = 1;
			break;
		}
		for (size_t k = 0; k < t->n && !bad; k++)
			bad |= ct_sink_append(&s, &t->r[k]) < 0;
		bad |= ct_sink_flush(&s) < 0;
		ct_sink_destroy(&s);
	}
	if (b->complete && !bad) {
		char sum[sizeof b->summary + 256];
		snprintf(sum, sizeof sum, "%s", b->summary);
		bad |= ct_write_section(fd, CT_SEC_SUMMARY, sum, strlen(sum)) < 0;
	}
	if (close(fd) < 0)
		bad = 1;
	b->written = true;
	return bad ? NULL : b->path;
}

/* Write b, then append a MAPS and a SYMBOLS section where given (after the
 * SUMMARY: readers take sections wherever they are); its path or NULL. */
static inline const char *tb_write_with(struct tb *b, const void *sym, size_t symlen,
                                        const char *maps)
{
	const char *path = tb_write(b);
	if (!path)
		return NULL;
	int fd = open(path, O_WRONLY | O_APPEND);
	if (fd < 0)
		return NULL;
	int bad = 0;
	if (maps)
		bad |= ct_write_section(fd, CT_SEC_MAPS, maps, strlen(maps)) < 0;
	if (sym)
		bad |= ct_write_section(fd, CT_SEC_SYMBOLS, sym, symlen) < 0;
	if (close(fd) < 0)
		bad = 1;
	return bad ? NULL : path;
}

static inline void tb_free(struct tb *b)
{
	if (b->path[0])
		unlink(b->path);
	for (size_t i = 0; i < b->nthreads; i++)
		free(b->t[i].r);
	free(b->t);
	memset(b, 0, sizeof *b);
}

#endif
