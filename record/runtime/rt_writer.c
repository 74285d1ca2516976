/* The writer thread: drains every registered thread's record ring into that
 * thread's ct_sink (its spool file), finishes threads that ended, and does
 * the final work at process end (also after a fatal signal).
 *
 * It is the only thread that frees a struct rt_thread (after the thread
 * ended and its ring is empty), so it also does the end-of-process work
 * that walks all threads.  It never runs program code, is created with
 * every signal blocked, and its allocations are not recorded (rt_guard). */
#include "rt.h"
#include "rtconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <zstd.h>
#include <unistd.h>

#define WRITER_PERIOD_MS 10
/* A record waits at most this long in a thread's block before the block is
 * written as a frame (COMMTRACE_FLUSH_MS): what a SIGKILL can lose. */
#define FLUSH_AGE_MS_DEFAULT 1000

/* Wake-ups: a futex word, not an eventfd: the runtime holds as few file
 * descriptors as it can (a program that closes descriptors it did not open
 * and reuses the numbers must never get pokes written into its files). */
static _Atomic uint32_t wake_word;
static _Atomic uint32_t writer_sleeping;
static _Atomic uint64_t st_pokes;
static uint64_t st_loops, st_max_gap_ns, st_last_pass_ns;
static pthread_t writer;
static bool writer_running;
static bool writer_exiting;
static _Atomic int stop_req;     /* 1: normal end; 2: emergency */
static _Atomic int stop_done;
static _Atomic int emerg_sig;
static _Atomic uint64_t sinks_live, sinks_peak;
static uint64_t w_busy_ns, w_records, w_cpu_ns;

/* A spool write beyond RLIMIT_FSIZE makes the kernel send SIGXFSZ to the
 * whole process: the runtime's SIGXFSZ handler ignores it while the writer
 * writes or shortly after a failed write (rt_signal.c). */
_Atomic int rt_writer_writing;
_Atomic uint64_t rt_write_fail_ns;

void rt_writer_poke(void)
{
	/* seq_cst on both sides (Dekker): either the writer sees the new word
	 * and does not sleep, or we see it sleeping and wake it */
	atomic_fetch_add(&wake_word, 1);
	atomic_fetch_add_explicit(&st_pokes, 1, memory_order_relaxed);
	if (atomic_load(&writer_sleeping))
		syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static bool spool_still_ours(struct rt_thread *t);

/* ---- full-mode backpressure ---------------------------------------------------
 * A thread whose ring is full (inst --full: no record may be dropped) sleeps
 * on rt_full_word until the writer has made room (rt_writer_wait_room, from
 * record/inst/inst_rt.c), instead of yielding in a loop: with more program
 * threads than CPUs the spinning took the CPU the writer needed.  The
 * writer bumps the word and wakes the sleepers when a ring with waiters is
 * at most half full again, and after each pass (a timeout bounds any missed
 * wake-up). */
_Atomic uint32_t rt_full_waiters;
static _Atomic uint32_t rt_full_word;

static void wake_full_waiters(void)
{
	atomic_fetch_add(&rt_full_word, 1);
	syscall(SYS_futex, &rt_full_word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

/* Program thread (never in a signal handler): sleep until the writer makes
 * progress or max_ns pass.  Returns the word seen, for the next call. */
uint32_t rt_writer_room_word(void)
{
	return atomic_load(&rt_full_word);
}

void rt_writer_wait_room(uint32_t word, long max_ns)
{
	struct timespec ts = { 0, max_ns };
	syscall(SYS_futex, &rt_full_word, FUTEX_WAIT_PRIVATE, word, &ts, NULL, 0);
}

/* ---- spool files ------------------------------------------------------------- */

/* The counts of a thread as the file holds them (flags word first). */
static struct ct_counts *file_counts(void *page)
{
	return (struct ct_counts *)((char *)page + CT_SPOOL_COUNTS_OFFSET);
}

int rt_spool_open(struct rt_thread *t, const struct ct_thread_info *ti)
{
	char path[4200];
	if (!rt_fd_room()) {
		errno = EMFILE;          /* never a descriptor the program may use */
		return -1;
	}
	ct_spool_thread_path(path, sizeof path, rt_cfg.spool, t->index);
	/* a new file, never one (or a link) someone put there */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	fd = rt_fd_high(fd);
	if (fd < 0) {
		int e = errno;
		unlink(path);
		errno = e;
		return -1;
	}
	int rc = ct_spool_thread_start(fd, ti);
	if (rc < 0) {
		close(fd);
		unlink(path);
		errno = -rc;
		return -1;
	}
	t->spool_fd = fd;
	rt_fd_id(fd, &t->spool_dev, &t->spool_ino);
	/* The counts are kept in the file itself (a shared mapping of its first
	 * page: no descriptor held, and they survive a SIGKILL).  Without the
	 * mapping the thread is recorded with its counts unknown (flags 0). */
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page != MAP_FAILED) {
		t->counts_page = page;
		t->ring.counts = file_counts(page);
		uint32_t live = CT_COUNTS_LIVE;
		memcpy((char *)page + CT_SPOOL_COUNTS_OFFSET - 4, &live, sizeof live);
	}
	return 0;
}

void rt_spool_abandon(struct rt_thread *t)
{
	char path[4200];
	t->ring.counts = &t->ring.own_counts;
	if (t->counts_page)
		munmap(t->counts_page, 4096);
	t->counts_page = NULL;
	ct_spool_thread_path(path, sizeof path, rt_cfg.spool, t->index);
	unlink(path);
	close(t->spool_fd);
	t->spool_fd = -1;
}

/* The writer's share of the counts: the records it added, those it could
 * not write (frames that failed, records that never reached the sink). */
static void sync_counts(struct rt_thread *t)
{
	t->ring.counts->write_error = t->dropped_unsunk + (t->sink ? t->sink->dropped : 0);
}

static uint64_t flush_age_ns = FLUSH_AGE_MS_DEFAULT * 1000000ull;
static uint64_t pass_now;        /* the time of the current pass */

/* ---- sink with loss accounting ---------------------------------------------- */

/* Append r to the thread's sink, with the accounting of the counts: a
 * record of the writer's own (own: LOST) is added, a record the sink did
 * not take is dropped, and a block that starts gets its time (the age
 * flush).  Returns what ct_sink_append returns. */
static int append(struct rt_thread *t, const struct ct_record *r, bool own)
{
	struct ct_sink *s = t->sink;
	uint64_t before = s->records;
	if (own)
		t->ring.counts->added++;     /* written by the writer only */
	int rc = ct_sink_append(s, r);
	if (s->records == before)
		t->dropped_unsunk++;
	else if (s->block_records == 1)
		t->block_since = pass_now;
	return rc;
}

static void report_write_loss(struct rt_thread *t, uint32_t pending)
{
	atomic_store(&rt_write_fail_ns, rt_now());
	uint64_t real = pending >= t->lostrecs_in_block ? pending - t->lostrecs_in_block : 0;
	uint64_t total = real + t->lost_in_block;
	t->lost_write += real;
	struct ct_record r = { .type = CT_REC_LOST, .time = t->last_time };
	r.u.lost.reason = CT_LOST_WRITE_ERROR;
	r.u.lost.count = total;
	/* Goes into the fresh block: no flush is triggered by it. */
	if (append(t, &r, true) == 0) {
		t->lost_in_block = total;
		t->lostrecs_in_block = 1;
	} else {
		t->lost_in_block = 0;
		t->lostrecs_in_block = 0;
	}
	if (!t->write_error_logged) {
		t->write_error_logged = true;
		rt_log(1, "thread %u: writing its spool file failed (%s): records are lost",
		       t->index, strerror(t->sink->error ? t->sink->error : EIO));
	}
}

static void sink_put(struct rt_thread *t, const struct ct_record *r, bool own)
{
	struct ct_sink *s = t->sink;
	bool will_flush = s->block_len + CT_RECORD_MAX_BYTES > s->block_cap;
	uint32_t pending = s->block_records;
	int rc = append(t, r, own);
	if (will_flush) {
		if (rc < 0 && pending)
			report_write_loss(t, pending);
		else if (rc == 0) {
			t->lost_in_block = 0;
			t->lostrecs_in_block = 0;
		}
	} else if (rc < 0) {
		t->lost_write++;
	}
	if (r->type == CT_REC_LOST)
		t->lostrecs_in_block++, t->lost_in_block += r->u.lost.count;
}

static void sink_flush(struct rt_thread *t)
{
	if (!t->sink || !spool_still_ours(t))
		return;
	uint32_t pending = t->sink->block_records;
	if (!pending)
		return;
	if (ct_sink_flush(t->sink) < 0) {
		report_write_loss(t, pending);
		/* try once more to get the LOST record out */
		ct_sink_flush(t->sink);   /* (if it fails too, its records count as dropped) */
	} else {
		t->lost_in_block = 0;
		t->lostrecs_in_block = 0;
	}
	sync_counts(t);
}

/* All sinks share one compression context and one output buffer: only the
 * writer thread compresses, one frame at a time, with the same settings
 * (measured: a level-1 context for 64 KiB blocks is ~300 KiB, which per
 * thread was half the runtime's memory).  The sink's own ones are freed
 * right after ct_sink_init and detached again before ct_sink_destroy. */
static void *shared_cctx, *shared_zbuf;
static size_t shared_zbuf_cap;

static void sink_share(struct ct_sink *s)
{
	if (!shared_cctx) {
		shared_cctx = s->cctx;
		shared_zbuf = s->zbuf;
		shared_zbuf_cap = s->zbuf_cap;
		return;
	}
	if (s->zbuf_cap != shared_zbuf_cap)
		return;              /* (never: one block size per process) */
	ZSTD_freeCCtx(s->cctx);
	free(s->zbuf);
	s->cctx = shared_cctx;
	s->zbuf = shared_zbuf;
}

static void sink_free(struct ct_sink *s)
{
	if (s->cctx == shared_cctx) {
		/* keep the shared ones for the next sinks */
		s->cctx = NULL;
		s->zbuf = NULL;
	}
	ct_sink_destroy(s);
	free(s);
}

static size_t block_cap(void)
{
	const char *s = getenv(CT_ENV_BLOCK);
	size_t v = s ? (size_t)strtoull(s, NULL, 0) : 0;
	return v ? v : 64 * 1024;
}

/* The spool file must still be ours before anything is written to it
 * (checked once per pass and thread that has records). */
static bool spool_still_ours(struct rt_thread *t)
{
	if (t->spool_lost)
		return false;
	if (rt_fd_is(t->spool_fd, t->spool_dev, t->spool_ino))
		return true;
	/* The program closed our descriptor (and may have the number back for
	 * a file of its own: never write to it, never close it).  Reopen the
	 * spool file by name, appending: it holds whole frames only. */
	char path[4200];
	ct_spool_thread_path(path, sizeof path, rt_cfg.spool, t->index);
	rt_fd_window_begin();
	int fd = rt_fd_high(open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
	rt_fd_window_end();
	uint64_t dev, ino;
	rt_fd_id(fd, &dev, &ino);
	if (fd >= 0 && (dev != t->spool_dev || ino != t->spool_ino)) {
		close(fd);           /* not the file we created: never write to it */
		fd = -1;
	}
	uint32_t pending = t->sink ? t->sink->block_records : 0;
	if (t->sink)
		ct_sink_discard(t->sink);   /* its frame may have been half written */
	if (fd < 0) {
		t->spool_lost = true;
		t->lost_write += pending;
		rt_log(1, "thread %u: the program closed its spool file and it can not be reopened: "
		       "the rest of its records are lost", t->index);
		return false;
	}
	rt_log(2, "thread %u: the program closed its spool file: reopened", t->index);
	t->spool_fd = fd;
	if (t->sink) {
		t->sink->fd = fd;
		if (pending)
			report_write_loss(t, pending);
	}
	return true;
}

static bool make_sink(struct rt_thread *t)
{
	if (t->sink)
		return true;
	if (t->sink_failed)
		return false;
	t->sink = malloc(sizeof *t->sink);
	if (!t->sink || ct_sink_init(t->sink, t->spool_fd, block_cap(), rt_cfg.zlevel) < 0) {
		free(t->sink);
		t->sink = NULL;
		t->sink_failed = true;
		rt_log(1, "thread %u: no memory for its writer", t->index);
		return false;
	}
	sink_share(t->sink);
	uint64_t n = atomic_fetch_add(&sinks_live, 1) + 1;
	if (n > atomic_load(&sinks_peak))
		atomic_store(&sinks_peak, n);
	return true;
}

/* The thread's stream is in time order: a record stamped before the last
 * one written gets its time (see DESIGN). */
static inline void keep_time_order(struct rt_thread *t, struct ct_record *r)
{
	if (r->time < t->last_time)
		r->time = t->last_time;
	else
		t->last_time = r->time;
}

/* One record into the thread's stream (keep_time_order). */
static void put(struct rt_thread *t, struct ct_record *r, bool own)
{
	keep_time_order(t, r);
	sink_put(t, r, own);
	t->written++;
	w_records++;
}

/* Records of one unit read in place and encoded in one call (put_samples). */
#define SAMPLE_RUN 64

/* put() for the SAMPLE records of one unit each from unit at on (the first
 * one peeked: the units are ours until released), up to SAMPLE_RUN of them,
 * the ring's end, the first other or uncommitted unit, the units read before
 * (end: the last release + the ring's size) and as many as the sink's block
 * surely has room for (no flush: nothing can fail or be dropped), encoded in
 * one call.  Returns the unit after the last one. */
static uint64_t put_samples(struct rt_thread *t, struct recring *ring, uint64_t at, uint64_t end)
{
	struct ct_sink *s = t->sink;
	uint32_t pos = (uint32_t)(at & (ring->cap - 1));
	uint64_t max = (s->block_cap - s->block_len - CT_RECORD_MAX_BYTES) / CT_RECORD_MAX_BYTES + 1;
	if (max > SAMPLE_RUN)
		max = SAMPLE_RUN;
	if (max > ring->cap - pos)
		max = ring->cap - pos;
	if (max > end - at)
		max = end - at;
	uint8_t *first = ring->data + (size_t)pos * RECRING_UNIT;
	uint32_t n = 0;
	do {
		struct ct_record *r = (struct ct_record *)(first + (size_t)n * RECRING_UNIT);
		keep_time_order(t, r);
		n++;
	} while (n < max && atomic_load_explicit(&ring->ready[pos + n], memory_order_acquire) == 1 &&
	         ((struct ct_record *)(first + (size_t)n * RECRING_UNIT))->type == CT_REC_SAMPLE);
	if (s->block_records == 0)
		t->block_since = pass_now;
	ct_sink_append_samples(s, first, RECRING_UNIT, n);   /* (takes all n: max) */
	t->written += n;
	w_records += n;
	return at + n;
}

static int put_own(struct rt_thread *t, const struct ct_record *r)
{
	struct ct_record c = *r;
	put(t, &c, true);
	return 0;
}

/* The records the writer made from the CPU rings for t (rt_cpusamp.c) up to
 * time until, merged in before the thread's own. */
static void put_collected(struct rt_thread *t, uint64_t until)
{
	const struct ct_record *c;
	while ((c = rt_cpusamp_next(t, until)) != NULL)
		if (!t->w_closed && make_sink(t))
			put_own(t, c);
}

/* THREAD_END of a thread whose samples the writer decodes: its skip counts
 * first (the writer keeps them), and nothing of it after (samples past its
 * end are its exit in the runtime). */
static void close_collected(struct rt_thread *t, uint64_t end)
{
	rt_flush_skips_to(t, end, put_own);
	t->w_closed = true;
	put_collected(t, UINT64_MAX);   /* (dropped) */
}

/* Units consumed between two releases of ring space to the producer: one
 * store to the consumer's line and one clear of the ready bytes per batch,
 * not per record (the producer reads tail only when its view says full). */
#define DRAIN_BATCH 256

static void drain(struct rt_thread *t)
{
	struct ct_record r;
	struct recring *ring = &t->ring;
	if (recring_used(ring) && !spool_still_ours(t)) {
		while (recring_pop(ring, &r))
			t->lost_write++, t->dropped_unsunk++;
		recring_take_lost(ring);
		sync_counts(t);
		return;
	}
	uint64_t cur = recring_cursor(ring), released = cur, at = cur;
	bool woke = false, merge = atomic_load(&t->samp_by_writer);
	const struct ct_record *src;
	uint32_t k;
	while ((src = recring_peek(ring, &cur, &k)) != NULL) {
		unsigned type = src->type;
		if (type == CT_REC_THREAD_END && merge && !t->w_end_seen) {
			/* its last samples may not be collected yet: next pass */
			cur = at;
			break;
		}
		at = cur;
		/* the next units are most likely written by now: fetch them while
		 * this one is encoded */
		__builtin_prefetch(ring->data + (size_t)((cur + 4) & (ring->cap - 1)) * RECRING_UNIT);
		if (k == 1 && type == CT_REC_SAMPLE && !merge && t->sink &&
		    t->sink->block_len + CT_RECORD_MAX_BYTES <= t->sink->block_cap) {
			/* the bulk of a full trace (this record is at cur - 1) */
			cur = put_samples(t, ring, cur - 1, released + ring->cap);
		} else if (__builtin_expect(!make_sink(t), 0)) {
			t->lost_write++;
			t->dropped_unsunk++;
		} else {
			if (k == 1 && (type == CT_REC_SAMPLE || type == CT_REC_FUNC_ENTER ||
			               type == CT_REC_FUNC_EXIT)) {
				/* the hot types: their fields are all in the first unit,
				 * and the encoder reads no other byte of r */
				memcpy(&r, src, RECRING_UNIT);
			} else {
				size_t n = recring_rec_bytes(type);
				if (n > (size_t)k * RECRING_UNIT)
					n = (size_t)k * RECRING_UNIT;   /* never read past the record's units */
				memset(&r, 0, sizeof r);
				memcpy(&r, src, n);
			}
			if (merge) {
				put_collected(t, r.time);
				if (type == CT_REC_THREAD_END)
					close_collected(t, r.time);
			}
			put(t, &r, false);
		}
		if (cur - released >= DRAIN_BATCH) {
			recring_release(ring, cur);
			released = cur;
			/* the thread may wait for half of its ring (seq_cst: our
			 * tail store before the look at the waiters, Dekker) */
			if (!woke) {
				atomic_thread_fence(memory_order_seq_cst);
				if (atomic_load_explicit(&rt_full_waiters, memory_order_relaxed) &&
				    recring_used(ring) <= ring->cap / 2) {
					wake_full_waiters();
					woke = true;
				}
			}
		}
	}
	recring_release(ring, cur);
	if (merge)
		put_collected(t, UINT64_MAX);
	uint64_t lost = recring_take_lost(ring);
	if (lost && t->sink) {
		r = (struct ct_record){ .type = CT_REC_LOST, .time = t->last_time };
		r.u.lost.reason = CT_LOST_BUFFER_FULL;
		r.u.lost.count = lost;
		sink_put(t, &r, true);
	}
	sync_counts(t);
}

/* A block whose first record waited flush_age_ns is written now, full or
 * not: a process killed without warning (SIGKILL, the OOM killer) loses at
 * most that much of each thread's records. */
static void flush_if_old(struct rt_thread *t)
{
	if (t->sink && t->sink->block_records && pass_now - t->block_since >= flush_age_ns)
		sink_flush(t);
}

static void finish_thread(uint32_t slot, struct rt_thread *t)
{
	sink_flush(t);
	if (t->sink) {
		sink_free(t->sink);
		t->sink = NULL;
		atomic_fetch_sub(&sinks_live, 1);
	}
	if (rt_fd_is(t->spool_fd, t->spool_dev, t->spool_ino))
		close(t->spool_fd);
	t->spool_fd = -1;
	if (t->counts_page)
		munmap(t->counts_page, 4096);   /* the counts are final */
	atomic_store(&rt_threads[slot], NULL);
	rt_cpuwp_thread_gone(t);
	munmap(t, t->map_bytes);
}

/* Returns true when some ring was at least half full: go again at once. */
static bool pass(void)
{
	uint32_t hw = atomic_load(&rt_threads_hw);
	pass_now = rt_now();
	rt_soft_open_late();
	bool busy = rt_cpusamp_collect();   /* (before the threads' own records) */
	for (uint32_t i = 0; i < hw; i++) {
		struct rt_thread *t = atomic_load(&rt_threads[i]);
		if (!t)
			continue;
		int st = atomic_load_explicit(&t->state, memory_order_acquire);
		busy |= recring_used(&t->ring) >= t->ring.cap / 2;
		drain(t);
		if (st == RT_T_ENDED && recring_used(&t->ring) == 0)
			finish_thread(i, t);
		else
			flush_if_old(t);
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&rt_full_waiters, memory_order_relaxed))
		wake_full_waiters();
	return busy;
}

/* End of the process: stop sampling in every live thread, close their
 * streams, drain and flush everything.  Files stay open (the process ends). */
static void final_pass(int emergency)
{
	rt_cpusamp_stop();
	uint64_t now = rt_now();
	uint32_t hw = atomic_load(&rt_threads_hw);
	for (uint32_t i = 0; i < hw; i++) {
		struct rt_thread *t = atomic_load(&rt_threads[i]);
		if (!t || atomic_load(&t->state) != RT_T_RUNNING)
			continue;
		rt_thread_stop_sampling(t, 0);
		rt_thread_stats(t);
		int expect = 0;
		t->end_ns = now;
		if (atomic_compare_exchange_strong(&t->end_pushed, &expect, 1)) {
			struct ct_record r = { .type = CT_REC_THREAD_END, .time = now };
			r.u.end.status = emergency ? atomic_load(&emerg_sig) : 0;
			rt_push(t, &r);
		}
	}
	/* Give handlers that are still running a moment to commit. */
	for (int k = 0; k < 3; k++) {
		pass();
		uint32_t busy = 0;
		for (uint32_t i = 0; i < hw; i++) {
			struct rt_thread *t = atomic_load(&rt_threads[i]);
			if (t && recring_used(&t->ring))
				busy++;
		}
		if (!busy)
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	for (uint32_t i = 0; i < hw; i++) {
		struct rt_thread *t = atomic_load(&rt_threads[i]);
		if (t)
			sink_flush(t);
	}
	rt_cpusamp_log_stats();
	rt_log(2, "writer: done (peak %llu sinks)", (unsigned long long)atomic_load(&sinks_peak));
	rt_log(3, "writer: %llu pokes, %llu passes, longest gap between passes %.3f ms",
	       (unsigned long long)atomic_load(&st_pokes), (unsigned long long)st_loops, st_max_gap_ns / 1e6);
	rt_log(3, "writer: %llu records, %.3f s in passes (%.3f s cpu): %.2f M records/s of cpu",
	       (unsigned long long)w_records, w_busy_ns / 1e9, w_cpu_ns / 1e9,
	       w_cpu_ns ? w_records * 1e3 / (double)w_cpu_ns : 0.0);
}

static void *writer_main(void *arg)
{
	(void)arg;
	rt_guard = 1;
	prctl(PR_SET_NAME, "commrec-writer", 0, 0, 0);
	bool busy = false;
	uint64_t last_records = 0;
	for (;;) {
		int req = atomic_load(&stop_req);
		if (req) {
			atomic_store(&rt_writer_writing, 1);
			final_pass(req == 2);
			atomic_store(&rt_writer_writing, 0);
			atomic_store(&stop_done, 1);
			return NULL;
		}
		if (!busy) {
			uint32_t w = atomic_load_explicit(&wake_word, memory_order_acquire);
			atomic_store(&writer_sleeping, 1);
			if (!atomic_load(&stop_req)) {
				/* heavy traffic (the last pass had over 1000 records):
				 * look again after 1 ms even without a poke: on a busy
				 * machine a wake-up can come late */
				long ms = w_records - last_records > 1000 ? 1 : WRITER_PERIOD_MS;
				last_records = w_records;
				struct timespec ts = { 0, ms * 1000000L };
				syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, w, &ts, NULL, 0);
			}
			atomic_store(&writer_sleeping, 0);
		}
		atomic_store(&rt_writer_writing, 1);
		uint64_t t0 = rt_now();
		st_loops++;
		if (st_last_pass_ns && t0 - st_last_pass_ns > st_max_gap_ns)
			st_max_gap_ns = t0 - st_last_pass_ns;
		struct timespec c0, c1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		busy = pass();
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
		st_last_pass_ns = rt_now();
		w_busy_ns += st_last_pass_ns - t0;
		w_cpu_ns += (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec));
		atomic_store(&rt_writer_writing, 0);
		if (atomic_load(&rt_main_exited) && atomic_load(&rt_live_threads) <= 0) {
			/* The main thread left by pthread_exit and the last program
			 * thread is gone: glibc would now exit(0), but we (a thread
			 * too) keep the process alive: finish and exit(0) here.  The
			 * program's atexit handlers run on this thread. */
			atomic_store(&rt_writer_writing, 1);
			final_pass(0);
			atomic_store(&rt_writer_writing, 0);
			atomic_store(&stop_done, 1);
			writer_exiting = true;
			exit(0);
		}
	}
}

int rt_writer_start(void)
{
	const char *ms = getenv(CT_ENV_FLUSH_MS);
	if (ms && *ms && strtoull(ms, NULL, 10) > 0)
		flush_age_ns = strtoull(ms, NULL, 10) * 1000000ull;
	if (rt_create_internal_thread(&writer, writer_main, NULL) != 0)
		return -1;
	writer_running = true;
	return 0;
}

void rt_writer_stop(void)
{
	if (!writer_running)
		return;
	if (pthread_equal(pthread_self(), writer) || writer_exiting)
		return;
	atomic_store(&stop_req, 1);
	rt_writer_poke();
	pthread_join(writer, NULL);
	writer_running = false;
}

/* From a fatal signal handler (async-signal-safe: atomics, write, nanosleep).
 * Waits at most ~2 s for the writer. */
void rt_writer_emergency(int sig)
{
	atomic_store(&emerg_sig, sig);
	if (!writer_running || pthread_equal(pthread_self(), writer))
		return;
	int expect = 0;
	if (!atomic_compare_exchange_strong(&stop_req, &expect, 2) && expect != 2)
		return;
	rt_writer_poke();
	for (int i = 0; i < 2000 && !atomic_load(&stop_done); i++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}
