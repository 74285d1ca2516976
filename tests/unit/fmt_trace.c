/* A trace written with the public API (header, thread infos, sinks,
 * sections, summary) reads back field by field; cursors per thread and
 * merged across threads. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "commtrace.h"

static char dir[256];
static char path[512];

static struct ct_record sample(uint64_t time, uint64_t ip, uint64_t addr)
{
	struct ct_record r = { .type = CT_REC_SAMPLE, .time = time };
	r.u.sample = (struct ct_sample){ .ip = ip, .addr = addr, .period = 1000, .cpu = 1, .len = 8,
		.kind = CT_ACCESS_LOAD, .flags = CT_SAMPLE_EXACT };
	return r;
}

/* Three threads written as segments: thread 0, thread 2, thread 1, then
 * thread 0 again.  Times interleave; thread 0 and 1 have equal times at
 * 500 to test the tie break.  Small blocks so threads have many frames. */
#define NT 3
#define PER 2000
static uint64_t t_of(unsigned th, unsigned i)
{
	return th == 2 ? 1000 + 7 * (uint64_t)i : 500 + 3 * (uint64_t)i;  /* 0 and 1 tie */
}

static int write_segment(int fd, unsigned th, unsigned from, unsigned to, size_t block)
{
	struct ct_thread_info ti = { .index = th, .parent = th ? 0 : UINT32_MAX, .tid = 100 + (int)th,
		.pid = 100, .start_ns = th * 10 };
	snprintf(ti.name, sizeof ti.name, "worker-%u", th);
	if (ct_write_thread_info(fd, &ti))
		return -1;
	struct ct_sink s;
	if (ct_sink_init(&s, fd, block, 3))
		return -1;
	for (unsigned i = from; i < to; i++) {
		struct ct_record r = sample(t_of(th, i), 0x400000 + th, 0x10000 * (th + 1) + i);
		if (i % 500 == 7) {
			r.type = CT_REC_MARKER;
			r.u.marker.kind = CT_MARK_PHASE;
			snprintf(r.u.marker.name, sizeof r.u.marker.name, "phase-%u-%u", th, i);
		}
		if (ct_sink_append(&s, &r))
			return -1;
	}
	int rc = ct_sink_flush(&s);
	ct_sink_destroy(&s);
	return rc;
}

static int write_trace(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1,
		.features = CT_FEAT_SAMPLES | (1ull << 20) /* unknown optional bit: ignored */,
		.created_ns = 123456789 };
	char kvb[256];
	struct ct_kv kv;
	int rc = ct_write_header(fd, &h);
	ct_kv_init(&kv, kvb, sizeof kvb);
	ct_kv_add(&kv, "cpu.model", "Test CPU");
	ct_kv_add(&kv, "line_size", "%d", 64);
	rc |= ct_write_section(fd, CT_SEC_MACHINE, kv.buf, kv.len);
	rc |= ct_write_section(fd, CT_SEC_CMDLINE, "./app\0-x\0", 9);
	rc |= ct_write_section(fd, (enum ct_section)200, "future", 6);   /* unknown: skipped */
	rc |= write_segment(fd, 0, 0, PER / 2, 1024);
	rc |= write_segment(fd, 2, 0, PER, 4096);
	rc |= write_segment(fd, 1, 0, PER, 0);
	rc |= write_segment(fd, 0, PER / 2, PER, 1024);
	rc |= ct_write_section(fd, CT_SEC_MAPS, "400000-401000 r-xp 0 abcdef /bin/app\n", 37);
	ct_kv_init(&kv, kvb, sizeof kvb);
	ct_kv_add(&kv, "exit_status", "%d", 0);
	rc |= ct_write_section(fd, CT_SEC_SUMMARY, kv.buf, kv.len);
	close(fd);
	return rc;
}

static void check_record(const struct ct_record *r, unsigned th, unsigned i)
{
	CHECK_EQ_U(r->thread, th);
	CHECK_EQ_U(r->time, t_of(th, i));
	if (i % 500 == 7) {
		char want[64];
		snprintf(want, sizeof want, "phase-%u-%u", th, i);
		CHECK_EQ_U(r->type, CT_REC_MARKER);
		CHECK_STR(r->u.marker.name, want);
		CHECK_EQ_U(r->u.marker.kind, CT_MARK_PHASE);
	} else {
		CHECK_EQ_U(r->type, CT_REC_SAMPLE);
		CHECK_EQ_U(r->u.sample.ip, 0x400000 + th);
		CHECK_EQ_U(r->u.sample.addr, 0x10000 * (th + 1) + i);
		CHECK_EQ_U(r->u.sample.period, 1000);
		CHECK_EQ_U(r->u.sample.cpu, 1);
		CHECK_EQ_U(r->u.sample.len, 8);
		CHECK_EQ_U(r->u.sample.flags, CT_SAMPLE_EXACT);
	}
}

static void test_metadata(void)
{
	struct ct_error err = { "" };
	CHECK(write_trace(path) == 0);
	struct ct_trace *t = ct_trace_open(path, &err);
	CHECK(t != NULL);
	if (!t) {
		printf("%s\n", err.msg);
		return;
	}
	CHECK_STR(ct_trace_path(t), path);
	CHECK(ct_trace_complete(t));
	CHECK(ct_trace_damage(t) == NULL);
	const struct ct_header *h = ct_trace_header(t);
	CHECK_EQ_U(h->version, CT_FORMAT_VERSION);
	CHECK_EQ_U(h->min_version, 1);
	CHECK_EQ_U(h->features, CT_FEAT_SAMPLES | (1ull << 20));
	CHECK_EQ_U(h->created_ns, 123456789);
	CHECK_EQ_U(ct_trace_nthreads(t), NT);
	for (unsigned i = 0; i < NT; i++) {
		const struct ct_thread_info *ti = ct_trace_thread(t, i);
		char name[16];
		snprintf(name, sizeof name, "worker-%u", i);
		CHECK_EQ_U(ti->index, i);
		CHECK_EQ_U(ti->parent, i ? 0 : UINT32_MAX);
		CHECK_EQ_U(ti->tid, 100 + i);
		CHECK_EQ_U(ti->pid, 100);
		CHECK_EQ_U(ti->start_ns, i * 10);
		CHECK_STR(ti->name, name);
		CHECK(ct_trace_thread_frames(t, i) >= (i == 1 ? 1u : 2u));
	}
	CHECK(ct_trace_thread(t, NT) == NULL);
	CHECK_EQ_U(ct_trace_thread_frames(t, NT), 0);
	char v[64];
	CHECK(ct_trace_meta(t, CT_SEC_MACHINE, "cpu.model", v, sizeof v));
	CHECK_STR(v, "Test CPU");
	CHECK(ct_trace_meta(t, CT_SEC_MACHINE, "line_size", v, sizeof v));
	CHECK_STR(v, "64");
	CHECK(ct_trace_meta(t, CT_SEC_SUMMARY, "exit_status", v, sizeof v));
	CHECK_STR(v, "0");
	CHECK(!ct_trace_meta(t, CT_SEC_CONFIG, "anything", v, sizeof v));
	size_t len;
	const char *cmd = ct_trace_section(t, CT_SEC_CMDLINE, &len);
	CHECK(cmd && len == 9 && !memcmp(cmd, "./app\0-x\0", 9));
	const char *maps = ct_trace_section(t, CT_SEC_MAPS, &len);
	CHECK(maps && len == 37 && !memcmp(maps, "400000-401000", 13));
	const char *fut = ct_trace_section(t, (enum ct_section)200, &len);
	CHECK(fut && len == 6);
	CHECK(ct_trace_section(t, CT_SEC_SYMBOLS, &len) == NULL && len == 0);
	const uint8_t *hb = ct_trace_section(t, CT_SEC_HEADER, &len);
	CHECK(hb && len == CT_HEADER_BYTES && hb[0] == CT_FORMAT_VERSION);
	ct_trace_close(t);
}

static void test_thread_cursor(void)
{
	struct ct_error err = { "" };
	struct ct_trace *t = ct_trace_open(path, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	for (unsigned th = 0; th < NT; th++) {
		struct ct_cursor *c = ct_cursor_thread(t, th);
		struct ct_record r;
		unsigned i = 0;
		int rc;
		CHECK(c != NULL);
		while ((rc = ct_cursor_next(c, &r, &err)) == 1) {
			check_record(&r, th, i);
			i++;
		}
		CHECK_EQ_U(rc, 0);
		CHECK_EQ_U(i, PER);
		CHECK_EQ_U(ct_cursor_next(c, &r, &err), 0);     /* stays at the end */
		ct_cursor_free(c);
	}
	CHECK(ct_cursor_thread(t, NT) == NULL);
	ct_trace_close(t);
}

/* Merged, without and with decoding workers (frames of 1 KiB and 4 KiB:
 * many frames per thread, more than the workers' pool holds): the records
 * in (time, thread) order, each thread's in its order. */
static void check_merged(struct ct_trace *t, unsigned jobs)
{
	struct ct_error err = { "" };
	struct ct_cursor *c = ct_cursor_merged_jobs(t, jobs);
	struct ct_record r;
	unsigned next[NT] = { 0 }, n = 0;
	uint64_t last_time = 0;
	uint32_t last_thread = 0;
	int rc;
	while ((rc = ct_cursor_next(c, &r, &err)) == 1) {
		CHECK(r.thread < NT);
		if (r.thread >= NT)
			break;
		check_record(&r, r.thread, next[r.thread]);
		next[r.thread]++;
		CHECK(r.time > last_time || (r.time == last_time && (n == 0 || r.thread > last_thread)));
		last_time = r.time;
		last_thread = r.thread;
		n++;
	}
	CHECK_EQ_U(rc, 0);
	CHECK_EQ_U(n, NT * PER);
	CHECK_EQ_U(ct_cursor_next(c, &r, &err), 0);     /* stays at the end */
	ct_cursor_free(c);
}

static void test_merged_cursor(void)
{
	struct ct_error err = { "" };
	struct ct_trace *t = ct_trace_open(path, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	for (unsigned jobs = 1; jobs <= 8; jobs *= 2)
		check_merged(t, jobs);
	ct_trace_close(t);
}

/* Several cursors read one open trace at once from several threads. */
struct par {
	struct ct_trace *t;
	int merged;
	unsigned long n;
	int rc;
};

static void *par_read(void *arg)
{
	struct par *p = arg;
	struct ct_error err;
	struct ct_record r;
	for (int round = 0; round < 5; round++) {
		struct ct_cursor *c = p->merged ? ct_cursor_merged_jobs(p->t, (unsigned)round + 1) :
		                                  ct_cursor_thread(p->t, 1);
		while ((p->rc = ct_cursor_next(c, &r, &err)) == 1)
			p->n++;
		ct_cursor_free(c);
	}
	return NULL;
}

static void test_parallel_cursors(void)
{
	struct ct_error err;
	struct ct_trace *t = ct_trace_open(path, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	pthread_t th[4];
	struct par p[4];
	for (int i = 0; i < 4; i++) {
		p[i] = (struct par){ t, i % 2, 0, 0 };
		CHECK(pthread_create(&th[i], NULL, par_read, &p[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ_U(p[i].rc, 0);
		CHECK_EQ_U(p[i].n, 5ul * (p[i].merged ? NT * PER : PER));
	}
	ct_trace_close(t);
}

/* Many THREAD sections in random index order (a hostile trace could hold
 * millions): indexing stays linear and the threads come out sorted. */
static void test_many_thread_sections(void)
{
	enum { N = 200000, REC = 8 + CT_SECTION_HEADER_BYTES + CT_THREAD_INFO_BYTES };
	size_t hl = 8 + CT_SECTION_HEADER_BYTES + CT_HEADER_BYTES;
	uint8_t *b = calloc(1, hl + (size_t)N * REC);
	uint32_t *idx = malloc(N * sizeof *idx);
	uint64_t x = 12345;
	for (uint32_t i = 0; i < N; i++)
		idx[i] = i * 7919u;                             /* distinct, spread out */
	for (uint32_t i = N - 1; i > 0; i--) {              /* shuffle */
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t j = (uint32_t)((x >> 33) % (i + 1)), tmp = idx[i];
		idx[i] = idx[j];
		idx[j] = tmp;
	}
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1 };
	uint8_t *o = b;
	memcpy(o, "\x50\x2a\x4d\x18", 4);
	o[4] = CT_SECTION_HEADER_BYTES + CT_HEADER_BYTES;
	memcpy(o + 8, "CTRC", 4);
	o[12] = CT_SEC_HEADER;
	ct_header_encode(&h, o + 16);
	o += hl;
	for (uint32_t i = 0; i < N; i++, o += REC) {
		struct ct_thread_info ti = { .index = idx[i], .parent = UINT32_MAX };
		memcpy(o, "\x50\x2a\x4d\x18", 4);
		o[4] = CT_SECTION_HEADER_BYTES + CT_THREAD_INFO_BYTES;
		memcpy(o + 8, "CTRC", 4);
		o[12] = CT_SEC_THREAD;
		ct_thread_info_encode(&ti, o + 16);
	}
	struct ct_error err;
	struct ct_trace *t = ct_trace_open_mem(b, (size_t)(o - b), "many", &err);
	CHECK(t != NULL);
	if (t) {
		CHECK(ct_trace_damage(t) == NULL);
		CHECK_EQ_U(ct_trace_nthreads(t), N);
		for (size_t i = 0; i < ct_trace_nthreads(t); i++)
			if (ct_trace_thread(t, i)->index != (uint32_t)i * 7919u) {
				CHECK(!"threads in index order");
				break;
			}
		struct ct_cursor *c = ct_cursor_merged(t);
		struct ct_record r;
		CHECK(c && ct_cursor_next(c, &r, &err) == 0);
		ct_cursor_free(c);
		ct_trace_close(t);
	}
	free(idx);
	free(b);
}

/* A trace with no threads at all is valid and empty. */
static void test_empty_trace(void)
{
	char p[600];
	snprintf(p, sizeof p, "%s/empty.zst", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1 };
	CHECK(ct_write_header(fd, &h) == 0);
	close(fd);
	struct ct_error err;
	struct ct_trace *t = ct_trace_open(p, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(!ct_trace_complete(t));
	CHECK_EQ_U(ct_trace_nthreads(t), 0);
	struct ct_cursor *c = ct_cursor_merged(t);
	struct ct_record r;
	CHECK(c && ct_cursor_next(c, &r, &err) == 0);
	ct_cursor_free(c);
	ct_trace_close(t);
}

/* A FIFO without a writer (and a device) is refused at once, with a
 * message naming it, instead of blocking in open() (issue 17).  A child
 * process with an alarm: a hang fails the case instead of the suite. */
static void fifo_case(void)
{
	char p[600];
	struct ct_error err = { "" };
	snprintf(p, sizeof p, "%s/fifo.zst", dir);
	CHECK(mkfifo(p, 0600) == 0);
	alarm(10);
	CHECK(ct_trace_open(p, &err) == NULL);
	CHECK(strstr(err.msg, p) && strstr(err.msg, "FIFO"));
	CHECK(ct_trace_open("/dev/null", &err) == NULL);
	CHECK(strstr(err.msg, "device") != NULL);
	alarm(0);
	unlink(p);
}

static void test_fifo_refused(void)
{
	check_in_child(fifo_case);
}

/* The sink reports write errors (here: a read-only descriptor) without
 * aborting, and keeps working. */
static void test_sink_write_error(void)
{
	char p[600];
	snprintf(p, sizeof p, "%s/ro.zst", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	fd = open(p, O_RDONLY);
	struct ct_sink s;
	CHECK(ct_sink_init(&s, fd, 0, 1) == 0);
	struct ct_record r = sample(1, 2, 3);
	CHECK(ct_sink_append(&s, &r) == 0);
	int rc = ct_sink_flush(&s);
	CHECK(rc == -EBADF);
	CHECK_EQ_U(s.error, EBADF);
	CHECK(ct_sink_flush(&s) == 0);                   /* nothing pending */
	CHECK(ct_write_section(fd, CT_SEC_CONFIG, "a=b\n", 4) == -EBADF);
	ct_sink_destroy(&s);
	close(fd);
}

/* A full disk (here a file size limit) in the middle of a frame: the sink
 * reports the error, cuts the partial frame off again, and the file keeps
 * only whole frames, all readable. */
static void test_sink_disk_full(void)
{
	char p[600];
	snprintf(p, sizeof p, "%s/full.zst", dir);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl = { 20000, 20000 };
		setrlimit(RLIMIT_FSIZE, &rl);
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1 };
		struct ct_thread_info ti = { .index = 0 };
		struct ct_sink s;
		if (ct_write_header(fd, &h) || ct_write_thread_info(fd, &ti) || ct_sink_init(&s, fd, 4096, 1))
			_exit(2);
		int errors = 0;
		uint64_t x = 1;
		for (int i = 0; i < 20000; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			struct ct_record r = sample((uint64_t)i * 1000 + (x >> 50), x >> 20, x >> 10);
			if (ct_sink_append(&s, &r))
				errors++;
		}
		if (ct_sink_flush(&s))
			errors++;
		_exit(errors > 0 && s.error == EFBIG ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct stat sb;
	CHECK(stat(p, &sb) == 0 && sb.st_size <= 20000 && sb.st_size > 10000);
	struct ct_error err;
	struct ct_trace *t = ct_trace_open(p, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(ct_trace_damage(t) == NULL);               /* no partial frame left behind */
	struct ct_cursor *c = ct_cursor_thread(t, 0);
	struct ct_record r;
	int rc, n = 0;
	while ((rc = ct_cursor_next(c, &r, &err)) == 1)
		n++;
	CHECK_EQ_U(rc, 0);
	CHECK(n > 100);
	ct_cursor_free(c);
	ct_trace_close(t);
}

/* Blocks fill up and get written as several frames; sink counters add up. */
static void test_sink_counters(void)
{
	char p[600];
	snprintf(p, sizeof p, "%s/count.zst", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1 };
	struct ct_thread_info ti = { .index = 0 };
	struct ct_sink s;
	CHECK(ct_write_header(fd, &h) == 0 && ct_write_thread_info(fd, &ti) == 0);
	CHECK(ct_sink_init(&s, fd, 1, 3) == 0);           /* clamped up to one record */
	CHECK(s.block_cap >= CT_RECORD_MAX_BYTES);
	for (int i = 0; i < 100; i++) {
		struct ct_record r = sample((uint64_t)i, 0x400000, 0x1000 + (uint64_t)i * 64);
		CHECK(ct_sink_append(&s, &r) == 0);
	}
	CHECK(ct_sink_flush(&s) == 0);
	CHECK_EQ_U(s.records, 100);
	CHECK(s.frames >= 2);
	struct stat st;
	fstat(fd, &st);
	CHECK_EQ_U(s.bytes_written + 8 + 8 + CT_HEADER_BYTES + 8 + 8 + CT_THREAD_INFO_BYTES, st.st_size);
	ct_sink_destroy(&s);
	close(fd);
	struct ct_error err;
	struct ct_trace *t = ct_trace_open(p, &err);
	CHECK(t && ct_trace_thread_frames(t, 0) == s.frames);
	ct_trace_close(t);
}

/* The trace is a valid zstd stream: zstd -dc outputs the raw blocks. */
static void test_zstd_cli(void)
{
	char cmd[1400], out[600];
	if (system("zstd --version >/dev/null 2>&1")) {
		SKIP("zstd command not installed");
		return;
	}
	snprintf(out, sizeof out, "%s/raw.bin", dir);
	snprintf(cmd, sizeof cmd, "zstd -q -dc %s > %s", path, out);
	CHECK(system(cmd) == 0);
	FILE *f = fopen(out, "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	uint8_t b[8];
	CHECK(fread(b, 1, 8, f) == 8);
	CHECK(!memcmp(b, "CBLK", 4));
	fclose(f);
}

int main(void)
{
	if (!mkdtemp(check_tmp_path(dir, sizeof dir, "ct-fmt-trace.XXXXXX"))) {
		printf("FAIL setup: mkdtemp\n");
		return 1;
	}
	snprintf(path, sizeof path, "%s/trace.zst", dir);
	RUN(test_metadata);
	RUN(test_thread_cursor);
	RUN(test_merged_cursor);
	RUN(test_parallel_cursors);
	RUN(test_many_thread_sections);
	RUN(test_zstd_cli);
	RUN(test_empty_trace);
	RUN(test_fifo_refused);
	RUN(test_sink_write_error);
	RUN(test_sink_counters);
	RUN(test_sink_disk_full);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd)) { /* best effort */ }
	return check_summary();
}
