/* Reading traces (a joined trace.zst or a spool directory) and cursors.
 * Every input is untrusted: every length is checked against what is
 * really there, every count against what the bytes could hold, and nothing
 * is allocated from an untrusted length beyond CT_BLOCK_MAX.
 *
 * Opening scans the frame structure once (frame headers only, never the
 * data) and builds a per-thread list of frame offsets plus the table of
 * metadata sections.  Cursors decompress one frame per thread at a time. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "container.h"

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
	    cti_grow((void **)&t->thr, &t->thrcap, t->nthr + 1, sizeof *t->thr) < 0)
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
	if (cti_grow((void **)&t->sec, &t->seccap, t->nsec + 1, sizeof *t->sec) < 0)
		return -1;
	t->sec[t->nsec++] = (struct sec){ kind, p, len };
	if (kind == CT_SEC_SUMMARY)
		t->complete = true;
	return 0;
}

/* Index the frames of source si from off on.  Damage stops the indexing of
 * this source (recorded, not fatal); -1 only when out of memory. */
static int index_source(struct ct_trace *t, uint32_t si, size_t off, enum role role,
                        struct ct_error *err)
{
	struct src *s = &t->src[si];
	long slot = -1;
	char why[256];
	struct frame_iter it;
	struct frame_item fi;
	int rc;
	cti_iter_init(&it, s, off, role);
	while ((rc = cti_iter_next(&it, &fi, why, sizeof why)) > 0) {
		const struct frame_scan *f = &fi.f;
		if (fi.what == FI_THREAD) {
			if ((slot = thread_slot(t, &fi.ti)) < 0)
				goto oom;
		} else if (fi.what == FI_SECTION) {
			if (add_section(t, f->kind, f->payload, f->plen) < 0)
				goto oom;
		} else if (fi.what == FI_DATA) {
			struct thr *th = &t->thr[slot];
			if (cti_grow((void **)&th->f, &th->cap, th->n + 1, sizeof *th->f) < 0)
				goto oom;
			th->f[th->n++] = (struct frame_ref){ si, (uint32_t)f->content, it.off, f->size };
		}
	}
	if (rc < 0)
		add_damage(t, s->path, it.off, why);
	s->valid_end = it.off;
	return 0;
oom:
	cti_seterr(err, "%s: out of memory", s->path);
	return -1;
}

static struct src *new_src(struct ct_trace *t)
{
	if (cti_grow((void **)&t->src, &t->srccap, t->nsrc + 1, sizeof *t->src) < 0)
		return NULL;
	memset(&t->src[t->nsrc], 0, sizeof t->src[t->nsrc]);
	return &t->src[t->nsrc];
}

/* ---- open / close ----------------------------------------------------------------- */

void ct_trace_close(struct ct_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nsrc; i++)
		cti_unmap_file(&t->src[i]);
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
	char *meta = cti_path_join(dir, "meta.zst");
	struct src *s = new_src(t);
	if (!meta || !s) {
		free(meta);
		cti_seterr(err, "%s: out of memory", dir);
		return -1;
	}
	int rc = cti_map_file(meta, true, s, err);
	free(meta);
	if (rc < 0)
		return -1;
	t->nsrc++;
	size_t off;
	if (cti_read_first_header(s, &t->hdr, &off, err) < 0 || index_source(t, 0, off, ROLE_META, err) < 0)
		return -1;

	struct tfile *tf;
	size_t ntf;
	char *maps_path;
	if (cti_list_spool(dir, &tf, &ntf, &maps_path, err) < 0)
		return -1;
	for (size_t i = 0; i < ntf; i++) {
		s = new_src(t);
		if (!s) {
			cti_seterr(err, "%s: out of memory", dir);
			goto fail;
		}
		struct ct_error why;
		if (cti_map_file(tf[i].path, true, s, &why) < 0) {
			add_damage(t, tf[i].path, 0, why.msg);     /* (not a file of ours) */
			continue;
		}
		t->nsrc++;
		if (index_source(t, (uint32_t)(t->nsrc - 1), 0, ROLE_THREAD, err) < 0)
			goto fail;
	}
	if (maps_path) {
		size_t len;
		t->maps_text = cti_read_text(maps_path, &len);
		if (t->maps_text && add_section(t, CT_SEC_MAPS, (const uint8_t *)t->maps_text, len) < 0) {
			cti_seterr(err, "%s: out of memory", dir);
			goto fail;
		}
	}
	free(maps_path);
	cti_free_tfiles(tf, ntf);
	return 0;
fail:
	free(maps_path);
	cti_free_tfiles(tf, ntf);
	return -1;
}

static struct ct_trace *trace_new(const char *name, struct ct_error *err)
{
	struct ct_trace *t = calloc(1, sizeof *t);
	if (!t || !(t->path = strdup(name))) {
		free(t);
		cti_seterr(err, "%s: out of memory", name);
		return NULL;
	}
	return t;
}

/* A whole trace in the source just added: its header, then its frames. */
static int index_trace(struct ct_trace *t, struct ct_error *err)
{
	size_t off;
	t->nsrc++;
	if (cti_read_first_header(&t->src[0], &t->hdr, &off, err) < 0)
		return -1;
	return index_source(t, 0, off, ROLE_TRACE, err);
}

/* The common end of both opens: threads in index order, damage counted. */
static struct ct_trace *trace_opened(struct ct_trace *t, int rc)
{
	if (rc < 0) {
		ct_trace_close(t);
		return NULL;
	}
	sort_threads(t);
	if (t->ndamage > 1) {
		size_t l = strlen(t->damage);
		snprintf(t->damage + l, sizeof t->damage - l, " (and %u more damaged places)", t->ndamage - 1);
	}
	return t;
}

struct ct_trace *ct_trace_open(const char *path, struct ct_error *err)
{
	struct ct_trace *t = trace_new(path, err);
	struct stat st;
	if (!t)
		return NULL;
	if (stat(path, &st) < 0) {
		cti_seterr(err, "%s: %s", path, strerror(errno));
		return trace_opened(t, -1);
	}
	if (S_ISDIR(st.st_mode))
		return trace_opened(t, open_dir(t, path, err));
	struct src *s = new_src(t);
	if (!s) {
		cti_seterr(err, "%s: out of memory", path);
		return trace_opened(t, -1);
	}
	if (cti_map_file(path, false, s, err) < 0)
		return trace_opened(t, -1);
	return trace_opened(t, index_trace(t, err));
}

struct ct_trace *ct_trace_open_mem(const void *buf, size_t len, const char *name,
                                   struct ct_error *err)
{
	if (!name)
		name = "(memory)";
	struct ct_trace *t = trace_new(name, err);
	if (!t)
		return NULL;
	struct src *s = new_src(t);
	if (!s || !(s->path = strdup(name))) {
		cti_seterr(err, "%s: out of memory", name);
		return trace_opened(t, -1);
	}
	s->map = len ? buf : NULL;
	s->size = len;
	s->borrowed = true;
	return trace_opened(t, index_trace(t, err));
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

/* ---- cursors ---------------------------------------------------------------------------- */

struct dframe;
struct par;

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
	struct par *par;        /* merged with decoding workers, else NULL */
	struct dframe *cur;     /* the decoded frame k - 1 being merged, or NULL */
	struct dframe *ahead;   /* frame k, requested from the workers, or NULL */
};

struct ct_cursor {
	struct par *par;        /* decoding workers (ct_cursor_merged_jobs), or NULL */
	struct ct_trace *t;
	ZSTD_DCtx *dctx;
	bool merged, started;
	int failed;             /* 1: the next call returns -1 with ferr */
	struct ct_error ferr;
	struct tcur one;        /* per-thread cursor */
	size_t nsub;
	struct tcur *sub;       /* merged: one per thread */
	struct ct_record *head; /* merged: room for the next record of each thread */
	const struct ct_record **next; /* merged: it (in head or in a decoded frame) */
	uint64_t *key;          /* merged: its time */
	size_t *heap, nheap;
};

/* ---- frames decoded ahead by worker threads ----------------------------------
 *
 * A merged cursor with workers (ct_cursor_merged_jobs) keeps a pool of
 * decoded frames (struct dframe: every record of one frame, decoded).  When
 * a thread's cursor starts on frame k it asks for frame k + 1 if a pool
 * entry is free; a worker decompresses and decodes it meanwhile.  When the
 * merge reaches a frame that no one has started yet, the merging thread
 * decodes it itself; a frame that was never requested (the pool was in use)
 * is read record by record as without workers.  The records, their order
 * and the errors are the same as without workers: each frame is decoded
 * from a reset codec state by the same decoder either way, and a frame's
 * error is reported after the records before it, as the serial path does. */

enum { DF_FREE, DF_QUEUED, DF_BUSY, DF_DONE };

/* A decoded frame holds its records packed: each one's bytes up to the end
 * of the union member its type uses (rec_bytes), a sample in 64 bytes
 * instead of the whole struct's 152 (the memory traffic of decoding ahead). */
struct dframe {
	int state;
	uint64_t seq;           /* request order: workers take the oldest */
	size_t slot, k;         /* thread slot, frame index */
	uint8_t *rec;
	size_t used, cap, pos;  /* bytes of records, room, next to merge */
	bool bad;               /* the frame fails after its records: why */
	char why[200];
};

#define MEMBER_BYTES(m) (offsetof(struct ct_record, u) + sizeof ((struct ct_record *)0)->u.m)
static const uint8_t rec_member_bytes[CT_REC_TYPE_MAX + 1] = {
	[CT_REC_SAMPLE] = MEMBER_BYTES(sample), [CT_REC_WP_ARM] = MEMBER_BYTES(arm),
	[CT_REC_WP_HIT] = MEMBER_BYTES(hit), [CT_REC_ALLOC] = MEMBER_BYTES(alloc),
	[CT_REC_FREE] = MEMBER_BYTES(free), [CT_REC_CALLSITE] = MEMBER_BYTES(callsite),
	[CT_REC_THREAD_START] = MEMBER_BYTES(start), [CT_REC_THREAD_END] = MEMBER_BYTES(end),
	[CT_REC_MARKER] = MEMBER_BYTES(marker), [CT_REC_LOST] = MEMBER_BYTES(lost),
	[CT_REC_FUNC_ENTER] = MEMBER_BYTES(func), [CT_REC_FUNC_EXIT] = MEMBER_BYTES(func),
	[CT_REC_SKIPPED] = MEMBER_BYTES(skipped),
	[CT_REC_OWNER_XFER] = MEMBER_BYTES(oxfer), [CT_REC_OWNER_WIN] = MEMBER_BYTES(owin),
};

/* The bytes of a decoded record of this type, a multiple of the struct's
 * alignment so that the next one starts aligned. */
static inline size_t rec_bytes(unsigned type)
{
	size_t a = _Alignof(struct ct_record);
	return ((size_t)rec_member_bytes[type] + a - 1) / a * a;
}

struct par {
	struct ct_trace *t;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;
	struct dframe *pool;
	size_t npool;
	uint64_t seq;
	bool stop;
	pthread_t *th;
	unsigned nth;
	uint8_t *buf;           /* the merging thread's scratch (claimed frames) */
	size_t bufcap;
};

/* Decompress and decode frame k of thread slot into d (d->bad with why
 * when it is damaged, after the records that decoded). */
static void decode_frame(const struct ct_trace *t, ZSTD_DCtx *dctx, uint8_t **buf,
                         size_t *bufcap, struct dframe *d)
{
	const struct thr *th = &t->thr[d->slot];
	const struct frame_ref *fr = &th->f[d->k];
	const uint8_t *p, *end;
	uint32_t count;
	d->used = 0;
	d->bad = false;
	if (cti_load_frame(dctx, t->src[fr->src].map + fr->off, fr->size, fr->content, buf, bufcap,
	                   &p, &end, &count, d->why, sizeof d->why) < 0) {
		d->bad = true;
		return;
	}
	struct ct_codec codec;
	ct_codec_reset(&codec);
	for (uint32_t i = 0; i < count; i++) {
		if (d->cap - d->used < sizeof(struct ct_record) &&
		    cti_grow((void **)&d->rec, &d->cap, d->used + sizeof(struct ct_record), 1) < 0) {
			snprintf(d->why, sizeof d->why, "out of memory");
			d->bad = true;
			return;
		}
		/* the decoder writes the type's member only: the record ends there */
		struct ct_record *r = (struct ct_record *)(void *)(d->rec + d->used);
		size_t n = ct_decode_record(&codec, p, end, r);
		if (n == 0) {
			snprintf(d->why, sizeof d->why, "record %u of %u: malformed (type %u)", i,
			         count, p < end ? *p : 0);
			d->bad = true;
			return;
		}
		r->thread = th->info.index;
		d->used += rec_bytes(r->type);
		p += n;
	}
	if (p != end) {
		snprintf(d->why, sizeof d->why, "%zu bytes after the last of %u records",
		         (size_t)(end - p), count);
		d->bad = true;
	}
}

static void *par_worker(void *arg)
{
	struct par *w = arg;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	uint8_t *buf = NULL;
	size_t bufcap = 0;
	pthread_mutex_lock(&w->mu);
	while (dctx) {
		struct dframe *d = NULL;
		for (size_t i = 0; i < w->npool; i++)
			if (w->pool[i].state == DF_QUEUED && (!d || w->pool[i].seq < d->seq))
				d = &w->pool[i];
		if (!d) {
			if (w->stop)
				break;
			pthread_cond_wait(&w->cv_work, &w->mu);
			continue;
		}
		d->state = DF_BUSY;
		pthread_mutex_unlock(&w->mu);
		decode_frame(w->t, dctx, &buf, &bufcap, d);
		pthread_mutex_lock(&w->mu);
		d->state = DF_DONE;
		pthread_cond_broadcast(&w->cv_done);
	}
	pthread_mutex_unlock(&w->mu);
	free(buf);
	ZSTD_freeDCtx(dctx);
	return NULL;
}

/* Ask for frame k of c's thread if there is one and a pool entry is free. */
static void par_request(struct tcur *c, size_t k)
{
	struct par *w = c->par;
	if (k >= c->t->thr[c->slot].n)
		return;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->npool; i++)
		if (w->pool[i].state == DF_FREE) {
			struct dframe *d = &w->pool[i];
			d->state = DF_QUEUED;
			d->seq = w->seq++;
			d->slot = c->slot;
			d->k = k;
			d->pos = 0;
			c->ahead = d;
			pthread_cond_signal(&w->cv_work);
			break;
		}
	pthread_mutex_unlock(&w->mu);
}

/* c's requested frame, decoded: by this thread if no worker has started
 * it, else when its worker is done. */
static struct dframe *par_take(struct tcur *c)
{
	struct par *w = c->par;
	struct dframe *d = c->ahead;
	c->ahead = NULL;
	pthread_mutex_lock(&w->mu);
	if (d->state == DF_QUEUED) {
		d->state = DF_BUSY;
		pthread_mutex_unlock(&w->mu);
		decode_frame(w->t, c->dctx, &w->buf, &w->bufcap, d);
		pthread_mutex_lock(&w->mu);
		d->state = DF_DONE;
	}
	while (d->state != DF_DONE)
		pthread_cond_wait(&w->cv_done, &w->mu);
	pthread_mutex_unlock(&w->mu);
	return d;
}

static void par_release(struct par *w, struct dframe *d)
{
	pthread_mutex_lock(&w->mu);
	d->state = DF_FREE;
	pthread_mutex_unlock(&w->mu);
}

static void par_free(struct par *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cv_work);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->nth; i++)
		pthread_join(w->th[i], NULL);
	for (size_t i = 0; i < w->npool; i++)
		free(w->pool[i].rec);
	pthread_cond_destroy(&w->cv_done);
	pthread_cond_destroy(&w->cv_work);
	pthread_mutex_destroy(&w->mu);
	free(w->pool);
	free(w->th);
	free(w->buf);
	free(w);
}

/* Pool entries: two frames per thread (the one merged, the next), at most
 * PAR_POOL_PER_JOB per decoding thread: the memory is the pool's frames. */
#define PAR_POOL_PER_JOB 8

static struct par *par_new(struct ct_trace *t, unsigned jobs)
{
	struct par *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->t = t;
	w->npool = 2 * t->nthr;
	if (w->npool > (size_t)PAR_POOL_PER_JOB * jobs)
		w->npool = (size_t)PAR_POOL_PER_JOB * jobs;
	w->pool = calloc(w->npool ? w->npool : 1, sizeof *w->pool);
	w->th = calloc(jobs, sizeof *w->th);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv_work, NULL);
	pthread_cond_init(&w->cv_done, NULL);
	if (!w->pool || !w->th) {
		par_free(w);
		return NULL;
	}
	/* jobs - 1 workers (the merging thread decodes too: par_take), no more
	 * than there are pool entries to decode into */
	for (unsigned i = 0; i + 1 < jobs && i < w->npool; i++) {
		if (pthread_create(&w->th[w->nth], NULL, par_worker, w) != 0)
			break;
		w->nth++;
	}
	return w;
}

static int tcur_fail(struct tcur *c, size_t k, const char *why, struct ct_error *err)
{
	const struct frame_ref *fr = &c->t->thr[c->slot].f[k];
	cti_seterr(err, "%s: offset %llu: thread %u frame %zu: %s", c->t->src[fr->src].path,
	       (unsigned long long)fr->off, c->t->thr[c->slot].info.index, k, why);
	free(c->buf);
	c->buf = NULL;
	c->bufcap = 0;
	return -1;
}

/* *r = *h, the bytes that h's type uses (a sample's: a third of the whole
 * record); h may be packed in a decoded frame. */
static inline void copy_record(struct ct_record *r, const struct ct_record *h)
{
	if (h->type == CT_REC_SAMPLE)      /* a constant size: copied inline */
		memcpy(r, h, MEMBER_BYTES(sample));
	else
		memcpy(r, h, rec_bytes(h->type));
}

/* The next frame of c (k): decoded ahead (c->cur) or loaded to be read
 * record by record; with workers, the one after it is requested.  0, or -1
 * on damage. */
static int tcur_load(struct tcur *c, struct ct_error *err)
{
	const struct thr *th = &c->t->thr[c->slot];
	char why[256];
	if (c->ahead) {
		c->cur = par_take(c);
	} else {
		const struct frame_ref *fr = &th->f[c->k];
		const struct src *s = &c->t->src[fr->src];
		if (cti_load_frame(c->dctx, s->map + fr->off, fr->size, fr->content, &c->buf, &c->bufcap,
		                   &c->p, &c->end, &c->left, why, sizeof why) < 0)
			return tcur_fail(c, c->k, why, err);
		c->nrec = c->left;
		ct_codec_reset(&c->codec);
	}
	c->k++;
	if (c->par)
		par_request(c, c->k);
	return 0;
}

/* The next record of c: *out points to it, in a decoded frame (valid until
 * the next call) or decoded into *r.  1, 0 at the end, -1 on damage. */
static int tcur_next(struct tcur *c, struct ct_record *r, const struct ct_record **out,
                     struct ct_error *err)
{
	const struct thr *th = &c->t->thr[c->slot];
	char why[256];
	*out = r;
	for (;;) {
		if (c->cur) {
			struct dframe *d = c->cur;
			if (d->pos < d->used) {
				const struct ct_record *h = (const void *)(d->rec + d->pos);
				*out = h;
				d->pos += rec_bytes(h->type);
				return 1;
			}
			if (d->bad) {
				snprintf(why, sizeof why, "%s", d->why);
				return tcur_fail(c, c->k - 1, why, err);
			}
			par_release(c->par, d);
			c->cur = NULL;
		} else if (c->left) {
			break;
		} else if (c->p != c->end) {
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
		if (tcur_load(c, err) < 0)
			return -1;
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
	return ct_cursor_merged_jobs(t, 1);
}

struct ct_cursor *ct_cursor_merged_jobs(struct ct_trace *t, unsigned jobs)
{
	struct ct_cursor *c = cursor_new(t);
	if (!c)
		return NULL;
	if (jobs > 1 && t->nthr && !(c->par = par_new(t, jobs))) {
		ct_cursor_free(c);
		return NULL;
	}
	c->merged = true;
	c->nsub = t->nthr;
	if (t->nthr) {
		c->sub = calloc(t->nthr, sizeof *c->sub);
		c->head = calloc(t->nthr, sizeof *c->head);
		c->next = calloc(t->nthr, sizeof *c->next);
		c->heap = calloc(t->nthr, sizeof *c->heap);
		c->key = calloc(t->nthr, sizeof *c->key);
		if (!c->sub || !c->head || !c->next || !c->heap || !c->key) {
			ct_cursor_free(c);
			return NULL;
		}
	}
	for (size_t i = 0; i < t->nthr; i++)
		c->sub[i] = (struct tcur){ .t = t, .slot = i, .dctx = c->dctx, .par = c->par };
	for (size_t i = 0; c->par && i < t->nthr; i++)
		par_request(&c->sub[i], 0);     /* the first frames, while the pool lasts */
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
	free(c->next);
	free(c->heap);
	free(c->key);
	par_free(c->par);
	ZSTD_freeDCtx(c->dctx);
	free(c);
}

/* heap order: time, then thread slot (slots are in thread index order);
 * the times in their own array (key), away from the records */
static bool before(const struct ct_cursor *c, size_t a, size_t b)
{
	uint64_t ta = c->key[a], tb = c->key[b];
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
		const struct ct_record *h;
		int rc = tcur_next(&c->one, r, &h, &c->ferr);
		if (rc > 0 && h != r)
			copy_record(r, h);
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
			int rc = tcur_next(&c->sub[i], &c->head[i], &c->next[i], &c->ferr);
			if (rc < 0) {
				c->failed = 1;
				if (err)
					*err = c->ferr;
				return -1;
			}
			if (rc > 0) {
				c->key[i] = c->next[i]->time;
				c->heap[c->nheap++] = i;
				sift_up(c, c->nheap - 1);
			}
		}
	}
	if (c->nheap == 0)
		return 0;
	size_t top = c->heap[0];
	copy_record(r, c->next[top]);
	int rc = tcur_next(&c->sub[top], &c->head[top], &c->next[top], &c->ferr);
	if (rc > 0) {
		c->key[top] = c->next[top]->time;
		sift_down(c, 0);
	} else {
		c->heap[0] = c->heap[--c->nheap];
		sift_down(c, 0);
		if (rc < 0)
			c->failed = 1;    /* reported by the next call */
	}
	return 1;
}
