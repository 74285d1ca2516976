/* Per-thread record counts (FORMAT.md, COUNTS; issue 17): the COUNTS
 * section codec, the sink's count of dropped records, and the join's
 * SUMMARY keys from hand-built spools (live and stale counts, a thread in
 * two files, a torn frame), exact values.
 *
 * With arguments it is the check the end-to-end tests run on recorded
 * traces:
 *     fmt_counts TRACE NAME [--all-counted]
 * per thread: the records the trace holds, counted here by decoding, equal
 * thread.N.records, and, where the recorder kept counts, produced =
 * records + lost.buffer_full + lost.write_error + lost.unflushed, with no
 * count_error.  --all-counted: every thread has counts.  Prints one line
 * "counts NAME T<i> produced=... records=... buffer_full=... write_error=...
 * unflushed=..." per thread, then "PASS NAME" or "FAIL NAME: why". */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "commtrace.h"

static char root[1024];

/* ---- the checker ---------------------------------------------------------- */

static bool meta_u64(struct ct_trace *t, const char *key, uint64_t *v)
{
	char buf[64];
	if (!ct_trace_meta(t, CT_SEC_SUMMARY, key, buf, sizeof buf))
		return false;
	*v = strtoull(buf, NULL, 10);
	return true;
}

static bool thread_u64(struct ct_trace *t, uint32_t index, const char *what, uint64_t *v)
{
	char key[96];
	snprintf(key, sizeof key, "thread.%u.%s", index, what);
	return meta_u64(t, key, v);
}

static int check_trace(const char *path, const char *name, bool all_counted, bool verbose)
{
	struct ct_error err = { "" };
	struct ct_trace *t = ct_trace_open(path, &err);
	if (!t) {
		if (verbose)
			printf("FAIL %s: %s\n", name, err.msg);
		return 1;
	}
	char why[512] = "";
	char cerr[256];
	if (ct_trace_meta(t, CT_SEC_SUMMARY, "count_errors", cerr, sizeof cerr))
		snprintf(why, sizeof why, "count_errors=%s", cerr);
	for (size_t i = 0; i < ct_trace_nthreads(t) && !why[0]; i++) {
		uint32_t index = ct_trace_thread(t, i)->index;
		struct ct_cursor *c = ct_cursor_thread(t, i);
		struct ct_record r;
		uint64_t decoded = 0;
		int rc;
		while ((rc = ct_cursor_next(c, &r, &err)) > 0)
			decoded++;
		ct_cursor_free(c);
		uint64_t records, produced, bf = 0, we = 0, un = 0;
		if (rc < 0) {
			snprintf(why, sizeof why, "T%u: %s", index, err.msg);
		} else if (!thread_u64(t, index, "records", &records) || records != decoded) {
			snprintf(why, sizeof why, "T%u: the trace holds %llu records, thread.%u.records says otherwise",
			         index, (unsigned long long)decoded, index);
		} else if (!thread_u64(t, index, "produced", &produced)) {
			if (all_counted)
				snprintf(why, sizeof why, "T%u: no counts (thread.%u.produced)", index, index);
			if (verbose)
				printf("counts %s T%u records=%llu (no counts)\n", name, index,
				       (unsigned long long)records);
		} else if (!thread_u64(t, index, "lost.buffer_full", &bf) ||
		           !thread_u64(t, index, "lost.write_error", &we) ||
		           !thread_u64(t, index, "lost.unflushed", &un)) {
			snprintf(why, sizeof why, "T%u: produced without its lost.* keys", index);
		} else {
			if (verbose)
				printf("counts %s T%u produced=%llu records=%llu buffer_full=%llu "
				       "write_error=%llu unflushed=%llu\n", name, index,
				       (unsigned long long)produced, (unsigned long long)records,
				       (unsigned long long)bf, (unsigned long long)we, (unsigned long long)un);
			if (records + bf + we + un != produced)
				snprintf(why, sizeof why, "T%u: records %llu + lost %llu + %llu + %llu != produced %llu",
				         index, (unsigned long long)records, (unsigned long long)bf,
				         (unsigned long long)we, (unsigned long long)un,
				         (unsigned long long)produced);
		}
	}
	ct_trace_close(t);
	if (verbose)
		printf(why[0] ? "FAIL %s: %s\n" : "PASS %s\n", name, why);
	return why[0] ? 1 : 0;
}

/* ---- hand-built spools ------------------------------------------------------ */

static int write_meta(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/meta.zst", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1,
		.features = CT_FEAT_SAMPLES };
	int rc = ct_write_header(fd, &h);
	close(fd);
	return rc;
}

/* A thread file (or a second one, name suffix): THREAD + COUNTS (live or
 * not, with counts c), then n samples in frames of `block` bytes; the last
 * `tear` bytes cut off. */
static int write_thread(const char *dir, const char *suffix, uint32_t index, bool live,
                        struct ct_counts c, unsigned n, size_t block, size_t tear)
{
	char p[1200];
	snprintf(p, sizeof p, "%s/thread-%06u%s.zst", dir, index, suffix);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	struct ct_thread_info ti = { .index = index, .parent = UINT32_MAX, .tid = 100 + (int)index };
	int rc = ct_spool_thread_start(fd, &ti);
	uint8_t body[CT_COUNTS_BYTES];
	ct_counts_encode(index, live ? CT_COUNTS_LIVE : 0, &c, body);
	/* in place, as the runtime does through its mapping */
	if (pwrite(fd, body, sizeof body, CT_SPOOL_COUNTS_OFFSET - 8) != (ssize_t)sizeof body)
		rc = -1;
	struct ct_sink s;
	rc |= ct_sink_init(&s, fd, block, 1);
	for (unsigned i = 0; i < n; i++) {
		struct ct_record r = { .type = CT_REC_SAMPLE, .time = 100 + i };
		r.u.sample = (struct ct_sample){ .ip = 0x1000 + i, .addr = 0x8000 + 8 * i, .period = 1,
			.len = 8 };
		rc |= ct_sink_append(&s, &r);
	}
	rc |= ct_sink_flush(&s);
	ct_sink_destroy(&s);
	struct stat st;
	if (tear && fstat(fd, &st) == 0)
		rc |= ftruncate(fd, st.st_size - (off_t)tear);
	close(fd);
	return rc;
}

static struct ct_trace *join(const char *dir, const char *out)
{
	struct ct_error err = { "" };
	if (ct_join(dir, out, NULL, 0, "recording=complete\n", CT_JOIN_REPLACE, &err) < 0) {
		printf("join: %s\n", err.msg);
		return NULL;
	}
	return ct_trace_open(out, &err);
}

static uint64_t tkey(struct ct_trace *t, uint32_t index, const char *what)
{
	uint64_t v;
	return thread_u64(t, index, what, &v) ? v : ~0ull;
}

static void test_codec(void)
{
	struct ct_counts c = { 1ull << 40, 7, 3, 0xfedcba9876543210ull }, d;
	uint8_t b[CT_COUNTS_BYTES];
	uint32_t index, flags;
	ct_counts_encode(42, CT_COUNTS_LIVE, &c, b);
	CHECK(ct_counts_decode(b, sizeof b, &index, &flags, &d) == 0);
	CHECK_EQ_U(index, 42);
	CHECK_EQ_U(flags, CT_COUNTS_LIVE);
	CHECK(!memcmp(&c, &d, sizeof c));
	CHECK(ct_counts_decode(b, sizeof b - 1, &index, &flags, &d) == -1);
	/* little-endian at fixed offsets: produced is bytes 8..15 */
	CHECK_EQ_U(b[8 + 5], 1);
	CHECK_EQ_U(b[0], 42);
}

/* The thread file's layout: the counts sit where CT_SPOOL_COUNTS_OFFSET
 * says (the runtime maps that page and writes there). */
static void test_spool_layout(void)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/layout.zst", root);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	struct ct_thread_info ti = { .index = 9, .parent = UINT32_MAX };
	CHECK(ct_spool_thread_start(fd, &ti) == 0);
	uint64_t produced = 12345;
	CHECK(pwrite(fd, &produced, 8, CT_SPOOL_COUNTS_OFFSET) == 8);
	uint8_t all[256];
	ssize_t n = pread(fd, all, sizeof all, 0);
	close(fd);
	CHECK_EQ_U(n, CT_SPOOL_COUNTS_OFFSET + 32);
	uint32_t index, flags;
	struct ct_counts c;
	CHECK(ct_counts_decode(all + CT_SPOOL_COUNTS_OFFSET - 8, 40, &index, &flags, &c) == 0);
	CHECK_EQ_U(index, 9);
	CHECK_EQ_U(flags, 0);
	CHECK_EQ_U(c.produced, 12345);
	CHECK_EQ_U(c.buffer_full + c.added + c.write_error, 0);
}

/* ct_sink counts the records of blocks it could not write, and of a block
 * discarded. */
static void test_sink_dropped(void)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/ro.zst", root);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	close(fd);
	fd = open(p, O_RDONLY);                 /* writes fail: EBADF */
	struct ct_sink s;
	CHECK(ct_sink_init(&s, fd, 0, 1) == 0);
	struct ct_record r = { .type = CT_REC_SAMPLE, .time = 1 };
	for (int i = 0; i < 10; i++)
		CHECK(ct_sink_append(&s, &r) == 0);
	CHECK(ct_sink_flush(&s) < 0);
	CHECK_EQ_U(s.dropped, 10);
	for (int i = 0; i < 4; i++)
		ct_sink_append(&s, &r);
	ct_sink_discard(&s);
	CHECK_EQ_U(s.dropped, 14);
	CHECK_EQ_U(s.block_records, 0);
	CHECK(ct_sink_flush(&s) == 0);          /* nothing left to write */
	ct_sink_destroy(&s);
	close(fd);
}

/* The join's keys, exact: thread 0 live counts that add up; thread 1 in
 * two files (both live); thread 2 stale counts (flags 0): no keys; thread
 * 3 live, its last frame torn: the torn records are unflushed. */
static void test_join_counts(void)
{
	char dir[1100], out[1100];
	snprintf(dir, sizeof dir, "%s/spool", root);
	snprintf(out, sizeof out, "%s/counted.zst", root);
	CHECK(mkdir(dir, 0700) == 0 && write_meta(dir) == 0);
	/* T0: 100 made by the thread, 5 dropped (ring full), 2 LOST added by
	 * the writer, 7 in frames that failed: 100 + 2 - 5 - 7 = 90 written */
	CHECK(write_thread(dir, "", 0, true, (struct ct_counts){ 100, 5, 2, 7 }, 90, 0, 0) == 0);
	/* T1: 30 + 20 made, all written, in two files */
	CHECK(write_thread(dir, "", 1, true, (struct ct_counts){ 30, 0, 0, 0 }, 30, 0, 0) == 0);
	CHECK(write_thread(dir, "b", 1, true, (struct ct_counts){ 20, 0, 0, 0 }, 20, 0, 0) == 0);
	/* the spool listing takes thread-<digits>.zst only: name it so */
	char from[1200], to[1200];
	snprintf(from, sizeof from, "%s/thread-000001b.zst", dir);
	snprintf(to, sizeof to, "%s/thread-1.zst", dir);
	CHECK(rename(from, to) == 0);
	CHECK(write_thread(dir, "", 2, false, (struct ct_counts){ 999, 0, 0, 0 }, 10, 0, 0) == 0);
	/* T3: 3000 samples in small frames, 12 bytes torn off the last one */
	CHECK(write_thread(dir, "", 3, true, (struct ct_counts){ 3000, 0, 0, 0 }, 3000, 1024, 12) == 0);
	snprintf(out, sizeof out, "%s/counted.zst", root);
	struct ct_trace *t = join(dir, out);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U(tkey(t, 0, "records"), 90);
	CHECK_EQ_U(tkey(t, 0, "produced"), 102);
	CHECK_EQ_U(tkey(t, 0, "lost.buffer_full"), 5);
	CHECK_EQ_U(tkey(t, 0, "lost.write_error"), 7);
	CHECK_EQ_U(tkey(t, 0, "lost.unflushed"), 0);
	CHECK_EQ_U(tkey(t, 1, "records"), 50);
	CHECK_EQ_U(tkey(t, 1, "produced"), 50);
	CHECK_EQ_U(tkey(t, 1, "lost.unflushed"), 0);
	CHECK_EQ_U(tkey(t, 2, "records"), 10);
	CHECK_EQ_U(tkey(t, 2, "produced"), ~0ull);       /* stale: unknown */
	uint64_t rec3 = tkey(t, 3, "records");
	CHECK(rec3 < 3000 && rec3 > 2000);
	CHECK_EQ_U(tkey(t, 3, "lost.unflushed"), 3000 - rec3);
	uint64_t v = 0;
	CHECK(meta_u64(t, "threads_counted", &v) && v == 3);
	CHECK(meta_u64(t, "produced", &v) && v == 102 + 50 + 3000);
	CHECK(meta_u64(t, "lost.unflushed", &v) && v == 3000 - rec3);
	CHECK(!meta_u64(t, "count_errors", &v));
	ct_trace_close(t);
	/* the checker agrees */
	CHECK(check_trace(out, "join-counts", false, false) == 0);
	CHECK(check_trace(out, "join-counts", true, false) == 1);   /* T2 has none */
}

/* Counts that cannot be right (more written than made) are reported, not
 * turned into a negative loss. */
static void test_count_error(void)
{
	char dir[4200], out[4200];
	snprintf(dir, sizeof dir, "%s/bad", root);
	snprintf(out, sizeof out, "%s/bad.zst", root);
	CHECK(mkdir(dir, 0700) == 0 && write_meta(dir) == 0);
	CHECK(write_thread(dir, "", 0, true, (struct ct_counts){ 10, 0, 0, 0 }, 12, 0, 0) == 0);
	struct ct_trace *t = join(dir, out);
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t v;
	CHECK(meta_u64(t, "count_errors", &v) && v == 1);
	CHECK_EQ_U(tkey(t, 0, "lost.unflushed"), ~0ull);
	char msg[256];
	CHECK(ct_trace_meta(t, CT_SEC_SUMMARY, "thread.0.count_error", msg, sizeof msg) &&
	      strstr(msg, "2 more"));
	ct_trace_close(t);
	CHECK(check_trace(out, "count-error", false, false) == 1);
}

int main(int argc, char **argv)
{
	if (argc >= 3)
		return check_trace(argv[1], argv[2], argc > 3 && !strcmp(argv[3], "--all-counted"), true);
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof root, "%s/ct-fmt-counts.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root)) {
		printf("FAIL setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	RUN(test_codec);
	RUN(test_spool_layout);
	RUN(test_sink_dropped);
	RUN(test_join_counts);
	RUN(test_count_error);
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("note: could not remove %s\n", root);
	return check_summary();
}
