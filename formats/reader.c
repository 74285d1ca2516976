/* Reading traces (a joined trace.zst or a spool directory) and cursors.
 * Every input is untrusted: every length is checked against what is
 * really there, every count against what the bytes could hold, and nothing
 * is allocated from an untrusted length beyond CT_BLOCK_MAX.
 *
 * Opening scans the frame structure once (frame headers only, never the
 * data) and builds a per-thread list of frame offsets plus the table of
 * metadata sections.  Cursors decompress one frame per thread at a time and
 * decode its records a chunk at a time (cti_decode_packed). */
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

/* Frames of a thread requested ahead of the one merged. */
#define PAR_AHEAD 2

struct tcur {
	struct ct_trace *t;
	size_t slot;
	size_t k;               /* next frame to load */
	const uint8_t *at;      /* packed records decoded (the chunk or cur's): */
	const uint8_t *stop;    /* the next one at `at`, their end */
	uint8_t *buf;
	size_t bufcap;
	const uint8_t *p, *end; /* the frame read a chunk at a time: its bytes left, */
	uint32_t left, nrec;    /* records left, records in it */
	bool malformed;         /* its record nrec - left is malformed */
	struct ct_codec codec;
	uint8_t *chunk;         /* records decoded from it, packed */
	size_t chunkcap;
	ZSTD_DCtx *dctx;        /* shared */
	struct par *par;        /* merged with decoding workers, else NULL */
	struct dframe *cur;     /* the decoded frame k - 1 being merged, or NULL */
	struct dframe *ahead[PAR_AHEAD]; /* frames k, k + 1, ... requested from the workers */
	unsigned nahead;
};

/* A merged cursor picks the next record from the threads' next ones with a
 * loser tree (Knuth, TAOCP 5.4.1): node n of 1..nsub - 1 holds the thread
 * that lost the match there, tree[0] the overall winner; thread i is leaf
 * nsub + i.  Taking the winner's next record replays one path, a
 * comparison a level (the binary heap it replaced made two). */
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
	const struct ct_record **next; /* merged: each thread's next record (decoded) */
	uint64_t *key;          /* merged: its time, UINT64_MAX when the thread is done */
	bool *done;             /* merged: the thread has no record left */
	size_t *tree;           /* merged: the loser tree */
};

/* ---- frames decoded ahead by worker threads ----------------------------------
 *
 * A merged cursor with workers (ct_cursor_merged_jobs) keeps a pool of
 * decoded frames (struct dframe: every record of one frame, decoded).  When
 * a thread's cursor starts on frame k it asks for frames k + 1 and k + 2
 * (PAR_AHEAD) where pool entries are free; a worker decompresses and
 * decodes them meanwhile.  When the merge reaches a frame that no one has
 * started yet, the merging thread decodes it itself, and while it waits for
 * one a worker is decoding, it decodes the oldest other frames asked for; a
 * frame that was never requested (the pool was in use)
 * is decoded a chunk at a time as without workers.  The records, their order
 * and the errors are the same as without workers: each frame is decoded
 * from a reset codec state by the same decoder either way, and a frame's
 * error is reported after the records before it, as the serial path does. */

enum { DF_FREE, DF_QUEUED, DF_BUSY, DF_DONE };

/* A decoded frame holds its records packed (cti_packed_bytes: a sample in
 * 64 bytes instead of the whole struct's 152, the memory traffic of
 * decoding ahead). */
struct dframe {
	int state;
	uint64_t seq;           /* request order: workers take the oldest */
	size_t slot, k;         /* thread slot, frame index */
	uint8_t *rec;
	size_t used, cap;       /* bytes of records, room */
	bool bad;               /* the frame fails after its records: why */
	char why[200];
};

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
	for (uint32_t i = 0; i < count;) {
		/* room for the rest as samples, and for one of any type */
		size_t need = d->used + (size_t)(count - i) * cti_packed_bytes[CT_REC_SAMPLE] +
		              sizeof(struct ct_record);
		if (d->cap < need && cti_grow((void **)&d->rec, &d->cap, need, 1) < 0) {
			snprintf(d->why, sizeof d->why, "out of memory");
			d->bad = true;
			return;
		}
		size_t used;
		uint32_t n = cti_decode_packed(&codec, &p, end, th->info.index, count - i,
		                               d->rec + d->used, d->cap - d->used, &used);
		d->used += used;
		i += n;
		if (i < count && d->cap - d->used >= sizeof(struct ct_record)) {
			snprintf(d->why, sizeof d->why, "record %u of %u: malformed (type %u)", i,
			         count, p < end ? *p : 0);
			d->bad = true;
			return;
		}
	}
	if (p != end) {
		snprintf(d->why, sizeof d->why, "%zu bytes after the last of %u records",
		         (size_t)(end - p), count);
		d->bad = true;
	}
}

/* The oldest frame requested and not started, or NULL (w->mu held). */
static struct dframe *par_oldest_queued(struct par *w)
{
	struct dframe *d = NULL;
	for (size_t i = 0; i < w->npool; i++)
		if (w->pool[i].state == DF_QUEUED && (!d || w->pool[i].seq < d->seq))
			d = &w->pool[i];
	return d;
}

/* Decode the queued frame d, w->mu held (released meanwhile). */
static void par_decode(struct par *w, ZSTD_DCtx *dctx, uint8_t **buf, size_t *bufcap,
                       struct dframe *d)
{
	d->state = DF_BUSY;
	pthread_mutex_unlock(&w->mu);
	decode_frame(w->t, dctx, buf, bufcap, d);
	pthread_mutex_lock(&w->mu);
	d->state = DF_DONE;
	pthread_cond_broadcast(&w->cv_done);
}

static void *par_worker(void *arg)
{
	struct par *w = arg;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	uint8_t *buf = NULL;
	size_t bufcap = 0;
	pthread_mutex_lock(&w->mu);
	while (dctx && !w->stop) {   /* stopped: what is still queued is not wanted */
		struct dframe *d = par_oldest_queued(w);
		if (d)
			par_decode(w, dctx, &buf, &bufcap, d);
		else
			pthread_cond_wait(&w->cv_work, &w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	free(buf);
	ZSTD_freeDCtx(dctx);
	return NULL;
}

/* Ask for c's next frame not requested yet, if there is one, c has fewer
 * than PAR_AHEAD requested and a pool entry is free: true if asked. */
static bool par_request(struct tcur *c)
{
	struct par *w = c->par;
	size_t k = c->k + c->nahead;
	bool asked = false;
	if (k >= c->t->thr[c->slot].n || c->nahead >= PAR_AHEAD)
		return false;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->npool && !asked; i++)
		if (w->pool[i].state == DF_FREE) {
			struct dframe *d = &w->pool[i];
			d->state = DF_QUEUED;
			d->seq = w->seq++;
			d->slot = c->slot;
			d->k = k;
			c->ahead[c->nahead++] = d;
			pthread_cond_signal(&w->cv_work);
			asked = true;
		}
	pthread_mutex_unlock(&w->mu);
	return asked;
}

/* c's requested frame, decoded: by this thread if no worker has started
 * it, else when its worker is done; meanwhile this thread decodes the
 * oldest other frames requested (the work it waits for is theirs). */
static struct dframe *par_take(struct tcur *c)
{
	struct par *w = c->par;
	struct dframe *d = c->ahead[0];
	memmove(c->ahead, c->ahead + 1, --c->nahead * sizeof *c->ahead);
	pthread_mutex_lock(&w->mu);
	struct dframe *job;
	while ((job = d->state == DF_QUEUED ? d : d->state == DF_BUSY ? par_oldest_queued(w) : NULL))
		par_decode(w, c->dctx, &w->buf, &w->bufcap, job);
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

/* Pool entries: 1 + PAR_AHEAD frames per thread (the one merged, those
 * asked for ahead), at most
 * PAR_POOL_PER_JOB per decoding thread: the memory is the pool's frames. */
#define PAR_POOL_PER_JOB 8

static struct par *par_new(struct ct_trace *t, unsigned jobs)
{
	struct par *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->t = t;
	w->npool = (1 + PAR_AHEAD) * t->nthr;
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

/* A thread cursor at its end or failed gives its buffers back. */
static void tcur_release(struct tcur *c)
{
	free(c->buf);
	c->buf = NULL;
	c->bufcap = 0;
	free(c->chunk);
	c->chunk = NULL;
	c->chunkcap = 0;
	c->at = c->stop = NULL;
}

static int tcur_fail(struct tcur *c, size_t k, const char *why, struct ct_error *err)
{
	const struct frame_ref *fr = &c->t->thr[c->slot].f[k];
	cti_seterr(err, "%s: offset %llu: thread %u frame %zu: %s", c->t->src[fr->src].path,
	       (unsigned long long)fr->off, c->t->thr[c->slot].info.index, k, why);
	tcur_release(c);
	return -1;
}

/* The bytes of h, packed.  A SAMPLE on a predicted branch: the next
 * record's address then does not wait for two loads (h's type, the table;
 * merge_run's walk is a chain of them). */
static inline size_t packed_size(const struct ct_record *h)
{
	if (__builtin_expect(h->type == CT_REC_SAMPLE, 1))
		return cti_packed_bytes[CT_REC_SAMPLE];
	return cti_packed_bytes[h->type];
}

/* *r = *h, at least the bytes that h's packed type takes (a sample's: a
 * third of the whole record), in a copy of a constant size: every decoded
 * record has a whole struct's room after its start (cti_decode_packed), so
 * the bytes past a short one are there to be read (and never used). */
#define COPY_SHORT 64
_Static_assert(offsetof(struct ct_record, u) + sizeof(struct ct_sample) <= COPY_SHORT,
               "a sample is a short record");
static inline void copy_record(struct ct_record *r, const struct ct_record *h)
{
	if (__builtin_expect(cti_packed_bytes[h->type] <= COPY_SHORT, 1))
		memcpy(r, h, COPY_SHORT);
	else
		memcpy(r, h, sizeof *r);
}

/* The next frame of c (k): decoded ahead (c->cur) or loaded to be decoded
 * a chunk at a time; with workers, the one after it is requested.  0, or
 * -1 on damage. */
static int tcur_load(struct tcur *c, struct ct_error *err)
{
	const struct thr *th = &c->t->thr[c->slot];
	char why[256];
	if (c->nahead) {
		c->cur = par_take(c);
		c->at = c->cur->rec;
		c->stop = c->at + c->cur->used;
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
	while (c->par && par_request(c))
		;
	return 0;
}

/* Records decoded a chunk at a time (a few KiB that stay in the first cache
 * levels; at most what the frame has left, for traces of many threads). */
#define TCUR_CHUNK_RECORDS 64

/* The next chunk of c's frame into c->chunk: 0, or -1 out of memory. */
static int tcur_decode_chunk(struct tcur *c, struct ct_error *err)
{
	uint32_t n = c->left < TCUR_CHUNK_RECORDS ? c->left : TCUR_CHUNK_RECORDS;
	size_t need = (size_t)n * sizeof(struct ct_record);
	if (c->chunkcap < need && cti_grow((void **)&c->chunk, &c->chunkcap, need, 1) < 0)
		return tcur_fail(c, c->k - 1, "out of memory", err);
	size_t used;
	uint32_t got = cti_decode_packed(&c->codec, &c->p, c->end, c->t->thr[c->slot].info.index, n,
	                                 c->chunk, c->chunkcap, &used);
	c->malformed = got < n;    /* (the chunk always has room for n records) */
	c->left -= got;
	c->at = c->chunk;
	c->stop = c->chunk + used;
	return 0;
}

/* Past c's records decoded: the next ones, or the end, or the damage of
 * the frame after its records.  1, 0 at the end, -1 on damage. */
static int tcur_refill(struct tcur *c, struct ct_error *err)
{
	const struct thr *th = &c->t->thr[c->slot];
	char why[256];
	for (;;) {
		if (c->cur) {
			struct dframe *d = c->cur;
			if (d->bad) {
				snprintf(why, sizeof why, "%s", d->why);
				return tcur_fail(c, c->k - 1, why, err);
			}
			par_release(c->par, d);
			c->cur = NULL;
			c->at = c->stop = NULL;
		} else if (c->malformed) {
			snprintf(why, sizeof why, "record %u of %u: malformed (type %u)",
			         c->nrec - c->left, c->nrec, c->p < c->end ? *c->p : 0);
			return tcur_fail(c, c->k - 1, why, err);
		} else if (c->left) {
			if (tcur_decode_chunk(c, err) < 0)
				return -1;
			if (c->at < c->stop)
				return 1;
			continue;
		} else if (c->p != c->end) {
			snprintf(why, sizeof why, "%zu bytes after the last of %u records",
			         (size_t)(c->end - c->p), c->nrec);
			return tcur_fail(c, c->k - 1, why, err);
		}
		if (c->k >= th->n) {
			tcur_release(c);        /* done: give the memory back */
			return 0;
		}
		if (tcur_load(c, err) < 0)
			return -1;
		if (c->at < c->stop)
			return 1;
	}
}

/* The next record of c: *out points to it among c's records decoded (valid
 * until the next call).  1, 0 at the end, -1 on damage. */
static inline int tcur_next(struct tcur *c, const struct ct_record **out, struct ct_error *err)
{
	if (__builtin_expect(c->at >= c->stop, 0)) {
		int rc = tcur_refill(c, err);
		if (rc <= 0)
			return rc;
	}
	const struct ct_record *h = (const void *)c->at;
	c->at += cti_packed_bytes[h->type];
	*out = h;
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
		c->next = calloc(t->nthr, sizeof *c->next);
		c->key = calloc(t->nthr, sizeof *c->key);
		c->done = calloc(t->nthr, sizeof *c->done);
		c->tree = calloc(t->nthr, sizeof *c->tree);
		if (!c->sub || !c->next || !c->key || !c->done || !c->tree) {
			ct_cursor_free(c);
			return NULL;
		}
	}
	for (size_t i = 0; i < t->nthr; i++)
		c->sub[i] = (struct tcur){ .t = t, .slot = i, .dctx = c->dctx, .par = c->par };
	/* the first frames of every thread, then the second ones, while the
	 * pool lasts */
	for (unsigned a = 0; c->par && a < PAR_AHEAD; a++)
		for (size_t i = 0; i < t->nthr; i++)
			par_request(&c->sub[i]);
	return c;
}

void ct_cursor_free(struct ct_cursor *c)
{
	if (!c)
		return;
	tcur_release(&c->one);
	for (size_t i = 0; i < c->nsub && c->sub; i++)
		tcur_release(&c->sub[i]);
	free(c->sub);
	free(c->next);
	free(c->key);
	free(c->done);
	free(c->tree);
	par_free(c->par);
	ZSTD_freeDCtx(c->dctx);
	free(c);
}

/* The merge's arrays, copied from the cursor into a local of merge_read:
 * in the cursor, every store into them (or into a record) could change
 * its fields, which the loop then reloaded for each record. */
struct mview {
	struct tcur *sub;
	const struct ct_record **next;
	uint64_t *key;
	bool *done;
	size_t *tree;
	size_t nsub;
	struct ct_error *ferr;
};

static inline struct mview mview_of(struct ct_cursor *c)
{
	return (struct mview){ c->sub, c->next, c->key, c->done, c->tree, c->nsub, &c->ferr };
}

/* Merge order: time, then thread slot (slots are in thread index order); a
 * thread that is done after every other.  The times in their own array
 * (key), away from the records. */
static inline bool before(const struct mview *m, size_t a, size_t b)
{
	uint64_t ta = m->key[a], tb = m->key[b];
	if (ta != tb)
		return ta < tb;
	return m->done[a] != m->done[b] ? m->done[b] : a < b;
}

/* The winner of the subtree at node n, the losers stored on the way. */
static size_t tree_build(const struct mview *m, size_t n)
{
	if (n >= m->nsub)
		return n - m->nsub;
	size_t l = tree_build(m, 2 * n), r = tree_build(m, 2 * n + 1);
	bool lw = before(m, l, r);
	m->tree[n] = lw ? r : l;
	return lw ? l : r;
}

/* Thread w's key changed (it was the winner): its path to the root. */
static inline void tree_replay(const struct mview *m, size_t w)
{
	for (size_t n = (w + m->nsub) / 2; n > 0; n /= 2)
		if (before(m, m->tree[n], w)) {
			size_t l = m->tree[n];
			m->tree[n] = w;
			w = l;
		}
	m->tree[0] = w;
}

/* Thread i's next record into next[i] and key[i] (done at the end): 0, or
 * -1 on damage (ferr). */
static inline int merge_advance(const struct mview *m, size_t i)
{
	int rc = tcur_next(&m->sub[i], &m->next[i], m->ferr);
	if (__builtin_expect(rc > 0, 1)) {
		m->key[i] = m->next[i]->time;
		return 0;
	}
	m->done[i] = true;
	m->key[i] = UINT64_MAX;
	return rc;
}

/* The first record of every thread, the tree built: 0, or -1 on damage. */
static int merge_start(struct ct_cursor *c)
{
	struct mview m = mview_of(c);
	c->started = true;
	for (size_t i = 0; i < m.nsub; i++)
		if (merge_advance(&m, i) < 0)
			return -1;
	m.tree[0] = tree_build(&m, 1);
	return 0;
}

/* The best of the threads other than the winner w (the tree is built):
 * the best of those that lost to w on its path; w itself when it is the
 * only thread. */
static inline size_t runner_up(const struct mview *m, size_t w)
{
	size_t best = w;
	for (size_t n = (w + m->nsub) / 2; n > 0; n /= 2)
		if (best == w || before(m, m->tree[n], best))
			best = m->tree[n];
	return best;
}

/* Winner w's records into r from k on (up to n) while they come before
 * the runner-up's next one: the new k (*failed on damage).  The records w
 * has decoded are walked with locals (a store into r could change the
 * cursor's fields: the compiler would reload them for each record). */
static __attribute__((noinline)) size_t merge_run(const struct mview *m, size_t w,
                                                  struct ct_record *r, size_t k, size_t n,
                                                  bool *failed)
{
	size_t ru = runner_up(m, w);
	uint64_t limit = ru == w ? UINT64_MAX : m->key[ru];
	bool ties = ru == w || m->done[ru] || w < ru;   /* w wins a tie with it */
	struct tcur *c = &m->sub[w];
	while (k < n && !m->done[w]) {
		const struct ct_record *h = m->next[w];     /* c is past it */
		const uint8_t *at = c->at, *stop = c->stop;
		bool decoded = true;                        /* h is w's next, decoded */
		while (h->time < limit || (h->time == limit && ties)) {
			copy_record(&r[k++], h);
			if (at >= stop) {
				decoded = false;
				break;
			}
			h = (const void *)at;
			at += packed_size(h);
			if (k == n)
				break;
		}
		c->at = at;
		if (decoded) {
			m->next[w] = h;
			m->key[w] = h->time;
			break;
		}
		if (merge_advance(m, w) < 0) {
			*failed = true;
			break;
		}
	}
	return k;
}

/* Up to n merged records into r: 1 (n of them), 0 at the end, -1 at a
 * failure (start: damage before any record of a thread).  A thread that
 * wins twice in a row is likely in a run of records before every other
 * thread's next one (a full trace: a thread's accesses between two of
 * another's): its records are taken while they come before the runner-up's
 * next one, without replaying the tree for each. */
static int merge_read(struct ct_cursor *c, struct ct_record *r, size_t n, size_t *got)
{
	int rc = 1;
	if (!c->started && merge_start(c) < 0)
		c->failed = 1;
	struct mview m = mview_of(c);
	bool failed = c->failed;
	size_t prev = SIZE_MAX;
	struct ct_record *o = r, *end = r + n;    /* (a pointer: no index times 152) */
	while (o < end) {
		if (failed) {
			rc = -1;
			break;
		}
		size_t top = m.tree[0];
		/* (done: its key is the largest; a record's time can be that too) */
		if (m.key[top] == UINT64_MAX && m.done[top]) {
			rc = 0;
			break;
		}
		copy_record(o++, m.next[top]);
		if (merge_advance(&m, top) < 0)
			failed = true;    /* reported after the records before it */
		if (top == prev && !failed)
			o = r + merge_run(&m, top, r, (size_t)(o - r), n, &failed);
		prev = top;
		tree_replay(&m, top);
	}
	c->failed = failed;
	*got = (size_t)(o - r);
	return rc;
}

/* Up to n records of one thread into r, as merge_read. */
static int thread_read(struct ct_cursor *c, struct ct_record *r, size_t n, size_t *got)
{
	size_t k = 0;
	int rc = 1;
	while (k < n) {
		const struct ct_record *h;
		if ((rc = tcur_next(&c->one, &h, &c->ferr)) <= 0) {
			c->failed = rc < 0;
			break;
		}
		copy_record(&r[k++], h);
	}
	*got = k;
	return rc;
}

int ct_cursor_read(struct ct_cursor *c, struct ct_record *r, size_t n, size_t *got,
                   struct ct_error *err)
{
	int rc;
	*got = 0;
	if (c->failed)
		rc = -1;
	else if (!c->merged)
		rc = thread_read(c, r, n, got);
	else if (!c->nsub)
		rc = 0;
	else
		rc = merge_read(c, r, n, got);
	if (rc < 0 && err)
		*err = c->ferr;
	return rc;
}

int ct_cursor_next(struct ct_cursor *c, struct ct_record *r, struct ct_error *err)
{
	size_t got;
	int rc = ct_cursor_read(c, r, 1, &got, err);
	return got ? 1 : rc;
}
