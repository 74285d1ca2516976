/* The join: a spool directory -> one trace file, by byte copies of whole
 * frames (no recompression), with the SUMMARY section (FORMAT.md, "Join").
 * The one writing operation on whole traces. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "container.h"

struct tstat {
	uint32_t index;
	uint64_t records, frames, lost;
	struct ct_counts c;     /* from the COUNTS sections of its segments */
	unsigned segments, counted;  /* segments, and those with live counts */
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
		if (cti_grow((void **)&b->p, &b->cap, b->len + (size_t)n + 1, 1) < 0)
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
		cti_seterr(&j->first_damage, "%s: offset %zu: %s", path, off, why);
	}
}

/* A COUNTS section after a THREAD section: that segment's counts (kept only
 * if the runtime kept them up to date, and for that thread). */
static void add_counts(struct tstat *st, const uint8_t *p, size_t len)
{
	uint32_t index, flags;
	struct ct_counts c;
	if (ct_counts_decode(p, len, &index, &flags, &c) < 0 || index != st->index ||
	    !(flags & CT_COUNTS_LIVE) || st->counted == st->segments)
		return;
	st->c.produced += c.produced;
	st->c.buffer_full += c.buffer_full;
	st->c.added += c.added;
	st->c.write_error += c.write_error;
	st->counted++;
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
	struct frame_iter it;
	struct frame_item fi;
	int rc;
	cti_iter_init(&it, s, off, role);
	while ((rc = cti_iter_next(&it, &fi, why, sizeof why)) > 0) {
		const struct frame_scan *f = &fi.f;
		bool take = false;
		off = it.off;
		if (f->what == FR_SECTION && f->kind == CT_SEC_COUNTS && role == ROLE_THREAD) {
			if (cur >= 0)
				add_counts(&j->st[cur], f->payload, f->plen);
		} else if (fi.what == FI_THREAD) {
			if (cti_grow((void **)&j->st, &j->stcap, j->nst + 1, sizeof *j->st) < 0)
				return -1;
			j->st[j->nst] = (struct tstat){ .index = fi.ti.index, .segments = 1 };
			cur = (long)j->nst++;
			take = true;
		} else if (fi.what == FI_SECTION) {
			take = true;
		} else if (fi.what == FI_DATA) {
			const uint8_t *p, *end;
			uint32_t count;
			if (cti_load_frame(j->dctx, s->map + off, f->size, (uint32_t)f->content, &j->buf, &j->bufcap,
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
		off += (size_t)f->size;
		if (take)
			run_end = off;
	}
	if (rc < 0)
		jdamage(j, s->path, it.off, why, s->size - it.off);
	jwrite(o, s->map + run, run_end - run);
	return 0;
}

/* The per-thread lines of the SUMMARY (thread index order; a thread's
 * segments, in one file or several, added up) and the totals. */
static void summarize_threads(struct jstate *j, struct tbuf *sum)
{
	uint64_t records = 0, frames = 0, lost = 0, nthreads = 0;
	struct ct_counts all = { 0, 0, 0, 0 };
	uint64_t produced = 0, unflushed = 0, counted = 0, count_errors = 0;
	for (size_t i = 0; i < j->nst;) {
		struct tstat a = j->st[i++];
		while (i < j->nst && j->st[i].index == a.index) {   /* same thread in several files */
			const struct tstat *b = &j->st[i++];
			a.records += b->records;
			a.frames += b->frames;
			a.lost += b->lost;
			a.c.produced += b->c.produced;
			a.c.buffer_full += b->c.buffer_full;
			a.c.added += b->c.added;
			a.c.write_error += b->c.write_error;
			a.segments += b->segments;
			a.counted += b->counted;
		}
		unsigned n = a.index;
		tprintf(sum, "thread.%u.records=%llu\nthread.%u.frames=%llu\nthread.%u.lost=%llu\n",
		        n, (unsigned long long)a.records, n, (unsigned long long)a.frames,
		        n, (unsigned long long)a.lost);
		records += a.records;
		frames += a.frames;
		lost += a.lost;
		nthreads++;
		if (a.counted != a.segments)
			continue;       /* counts unknown (a version 1 spool, or never kept) */
		/* produced = records + buffer_full + write_error + unflushed */
		uint64_t made = a.c.produced + a.c.added;
		uint64_t accounted = a.records + a.c.buffer_full + a.c.write_error;
		tprintf(sum, "thread.%u.produced=%llu\nthread.%u.lost.buffer_full=%llu\n"
		        "thread.%u.lost.write_error=%llu\n", n, (unsigned long long)made,
		        n, (unsigned long long)a.c.buffer_full, n, (unsigned long long)a.c.write_error);
		if (accounted <= made) {
			tprintf(sum, "thread.%u.lost.unflushed=%llu\n", n, (unsigned long long)(made - accounted));
			unflushed += made - accounted;
		} else {
			tprintf(sum, "thread.%u.count_error=the trace holds %llu records, %llu more than "
			        "were made and not lost\n", n, (unsigned long long)a.records,
			        (unsigned long long)(accounted - made));
			count_errors++;
		}
		produced += made;
		all.buffer_full += a.c.buffer_full;
		all.write_error += a.c.write_error;
		counted++;
	}
	tprintf(sum, "threads=%llu\nrecords=%llu\nframes=%llu\nlost=%llu\ntorn_frames=%llu\ndropped_bytes=%llu\n",
	        (unsigned long long)nthreads, (unsigned long long)records, (unsigned long long)frames,
	        (unsigned long long)lost, (unsigned long long)j->torn, (unsigned long long)j->dropped_bytes);
	tprintf(sum, "threads_counted=%llu\n", (unsigned long long)counted);
	if (counted)
		tprintf(sum, "produced=%llu\nlost.buffer_full=%llu\nlost.write_error=%llu\n"
		        "lost.unflushed=%llu\n", (unsigned long long)produced,
		        (unsigned long long)all.buffer_full, (unsigned long long)all.write_error,
		        (unsigned long long)unflushed);
	if (count_errors)
		tprintf(sum, "count_errors=%llu\n", (unsigned long long)count_errors);
}

/* The output is written to a fresh file beside it, created exclusively
 * under a random name (O_EXCL: never a file, FIFO or symlink someone put
 * there, and no name another user can take first), then put in place. */
static int create_fresh(const char *out_path, char **tmp_path, struct ct_error *err)
{
	size_t tl = strlen(out_path) + 32;
	char *tmp = malloc(tl);
	if (!tmp) {
		cti_seterr(err, "%s: out of memory", out_path);
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
	cti_seterr(err, "%s: %s", tmp, strerror(errno));
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
		cti_seterr(err, "%s: exists (not replaced)", out_path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		cti_seterr(err, "%s: not a regular file (%s): not replaced", out_path,
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
	cti_seterr(err, "%s: %s%s", out_path, strerror(errno),
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

	mpath = cti_path_join(spool_dir, "meta.zst");
	if (!mpath) {
		cti_seterr(err, "%s: out of memory", spool_dir);
		return -1;
	}
	if (cti_map_file(mpath, true, &meta, err) < 0) {
		free(mpath);
		return -1;
	}
	free(mpath);
	if (cti_read_first_header(&meta, &hdr, &off, err) < 0)
		goto out_meta;
	if (cti_list_spool(spool_dir, &tf, &ntf, &maps_path, err) < 0)
		goto out_meta;
	j.dctx = ZSTD_createDCtx();
	if (!j.dctx) {
		cti_seterr(err, "%s: out of memory", out_path);
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
		struct ct_error why;
		if (cti_map_file(tf[i].path, true, &s, &why) < 0) {
			jdamage(&j, tf[i].path, 0, why.msg, 0);     /* (not a file of ours) */
			continue;
		}
		int rc = join_file(&j, &o, &s, 0, ROLE_THREAD);
		cti_unmap_file(&s);
		if (rc < 0)
			goto oom;
	}

	if (maps_path) {
		size_t len;
		char *text = cti_read_text(maps_path, &len);
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
	summarize_threads(&j, &sum);
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
		cti_seterr(err, "%s: write: %s", tmp, strerror(o.err));
		goto out;
	}
	if (install_output(tmp, out_path, flags, err) < 0)
		goto out;
	ret = 0;
	goto out;
oom:
	cti_seterr(err, "%s: out of memory", out_path);
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
	cti_free_tfiles(tf, ntf);
out_meta:
	cti_unmap_file(&meta);
	return ret;
}
