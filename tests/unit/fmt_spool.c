/* Spool directory and join: meta.zst + thread files + maps files ->
 * trace.zst with a SUMMARY; the spool directory read directly; torn thread
 * files; thousands of threads. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "commtrace.h"

static char root[256];

static int write_meta(const char *dir)
{
	char p[600], kvb[512];
	struct ct_kv kv;
	snprintf(p, sizeof p, "%s/meta.zst", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1,
		.features = CT_FEAT_SAMPLES | CT_FEAT_ALLOCS, .created_ns = 42 };
	int rc = ct_write_header(fd, &h);
	ct_kv_init(&kv, kvb, sizeof kvb);
	ct_kv_add(&kv, "cpu.model", "Spool CPU");
	rc |= ct_write_section(fd, CT_SEC_MACHINE, kv.buf, kv.len);
	ct_kv_init(&kv, kvb, sizeof kvb);
	ct_kv_add(&kv, "sampler", "soft");
	ct_kv_add(&kv, "period", "%d", 1000);
	rc |= ct_write_section(fd, CT_SEC_CONFIG, kv.buf, kv.len);
	rc |= ct_write_section(fd, CT_SEC_CMDLINE, "./app\0", 6);
	close(fd);
	return rc;
}

/* Thread th: THREAD section, THREAD_START, n samples, one LOST record of
 * lost_count, THREAD_END; blocks of `block` bytes. */
static int write_thread(const char *dir, uint32_t th, unsigned n, uint64_t lost_count, size_t block)
{
	char p[600];
	ct_spool_thread_path(p, sizeof p, dir, th);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	struct ct_thread_info ti = { .index = th, .parent = th ? 0 : UINT32_MAX, .tid = 1000 + (int)th,
		.pid = 1000, .start_ns = th };
	snprintf(ti.name, sizeof ti.name, "t%u", th);
	struct ct_sink s;
	int rc = ct_write_thread_info(fd, &ti);
	rc |= ct_sink_init(&s, fd, block, 3);
	struct ct_record r = { .type = CT_REC_THREAD_START, .time = th };
	r.u.start.stack_lo = 0x7f0000000000 + th * 0x100000;
	r.u.start.stack_hi = r.u.start.stack_lo + 0x100000;
	rc |= ct_sink_append(&s, &r);
	for (unsigned i = 0; i < n; i++) {
		r = (struct ct_record){ .type = CT_REC_SAMPLE, .time = 10 + th + 10 * (uint64_t)i };
		r.u.sample = (struct ct_sample){ .ip = 0x401000 + (i % 7), .addr = 0x600000 + 8 * (uint64_t)i,
			.period = 1000, .len = 4, .kind = (uint8_t)(i % 3) };
		rc |= ct_sink_append(&s, &r);
	}
	if (lost_count) {
		r = (struct ct_record){ .type = CT_REC_LOST, .time = 10 * (uint64_t)n + 20 };
		r.u.lost = (struct ct_lost){ CT_LOST_BUFFER_FULL, lost_count };
		rc |= ct_sink_append(&s, &r);
	}
	r = (struct ct_record){ .type = CT_REC_THREAD_END, .time = 10 * (uint64_t)n + 30 };
	rc |= ct_sink_append(&s, &r);
	rc |= ct_sink_flush(&s);
	ct_sink_destroy(&s);
	close(fd);
	return rc;
}

static int write_text(const char *p, const char *text, time_t mtime)
{
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	return utimensat(AT_FDCWD, p, ts, 0);
}

static const char *MAPS_NEW = "400000-401000 r-xp 00000000 0123abcd /bin/app\n"
                              "7f0000000000-7f0000021000 rw-p 00000000 - [heap]\n";

static int make_spool(const char *dir)
{
	char p[600];
	if (mkdir(dir, 0755) < 0)
		return -1;
	int rc = write_meta(dir);
	rc |= write_thread(dir, 0, 3000, 0, 2048);
	rc |= write_thread(dir, 1, 5000, 17, 2048);
	rc |= write_thread(dir, 2, 10, 5, 0);
	snprintf(p, sizeof p, "%s/maps-100.txt", dir);
	rc |= write_text(p, "old-old\n", 1000000);
	snprintf(p, sizeof p, "%s/maps-99.txt", dir);
	rc |= write_text(p, MAPS_NEW, 2000000);
	return rc;
}

static unsigned long long meta_u(struct ct_trace *t, const char *key)
{
	char v[64];
	if (!ct_trace_meta(t, CT_SEC_SUMMARY, key, v, sizeof v))
		return ~0ull;
	return strtoull(v, NULL, 10);
}

static unsigned count_records(struct ct_trace *t, int *rc_out)
{
	struct ct_cursor *c = ct_cursor_merged(t);
	struct ct_record r;
	struct ct_error err;
	unsigned n = 0;
	int rc;
	while ((rc = ct_cursor_next(c, &r, &err)) == 1)
		n++;
	*rc_out = rc;
	ct_cursor_free(c);
	return n;
}

/* Files named *.tmp in dir (a join leaves none behind). */
static unsigned count_tmp_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		n += l > 4 && !strcmp(e->d_name + l - 4, ".tmp");
	}
	if (d)
		closedir(d);
	return n;
}

static void test_join(void)
{
	char dir[600], out[600], tmp[700];
	struct ct_error err = { "" };
	snprintf(dir, sizeof dir, "%s/spool1", root);
	snprintf(out, sizeof out, "%s/trace1.zst", root);
	CHECK(make_spool(dir) == 0);
	struct ct_join_section extra[] = { { CT_SEC_SYMBOLS, "symbols!", 8 } };
	int rc = ct_join(dir, out, extra, 1, "exit_status=3\nsignal=0", 0, &err);
	CHECK(rc == 0);
	if (rc) {
		printf("%s\n", err.msg);
		return;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	CHECK(access(tmp, F_OK) != 0);                   /* renamed away */
	CHECK_EQ_U(count_tmp_files(root), 0);
	struct ct_trace *t = ct_trace_open(out, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(ct_trace_complete(t));
	CHECK(ct_trace_damage(t) == NULL);
	CHECK_EQ_U(ct_trace_header(t)->created_ns, 42);
	CHECK_EQ_U(ct_trace_nthreads(t), 3);
	CHECK_EQ_U(meta_u(t, "exit_status"), 3);
	CHECK_EQ_U(meta_u(t, "signal"), 0);
	CHECK_EQ_U(meta_u(t, "threads"), 3);
	CHECK_EQ_U(meta_u(t, "thread.0.records"), 3002);
	CHECK_EQ_U(meta_u(t, "thread.1.records"), 5003);
	CHECK_EQ_U(meta_u(t, "thread.2.records"), 13);
	CHECK_EQ_U(meta_u(t, "thread.0.lost"), 0);
	CHECK_EQ_U(meta_u(t, "thread.1.lost"), 17);
	CHECK_EQ_U(meta_u(t, "thread.2.lost"), 5);
	CHECK_EQ_U(meta_u(t, "lost"), 22);
	CHECK_EQ_U(meta_u(t, "records"), 3002 + 5003 + 13);
	CHECK_EQ_U(meta_u(t, "torn_frames"), 0);
	CHECK_EQ_U(meta_u(t, "thread.2.frames"), 1);
	for (unsigned i = 0; i < 3; i++) {
		char k[64];
		snprintf(k, sizeof k, "thread.%u.frames", i);
		CHECK_EQ_U(meta_u(t, k), ct_trace_thread_frames(t, i));
	}
	CHECK(meta_u(t, "thread.0.frames") > 3);
	char v[64];
	CHECK(ct_trace_meta(t, CT_SEC_CONFIG, "sampler", v, sizeof v));
	CHECK_STR(v, "soft");
	CHECK(ct_trace_meta(t, CT_SEC_MACHINE, "cpu.model", v, sizeof v));
	CHECK_STR(v, "Spool CPU");
	size_t len;
	const char *maps = ct_trace_section(t, CT_SEC_MAPS, &len);
	CHECK(maps && len == strlen(MAPS_NEW) && !memcmp(maps, MAPS_NEW, len));
	const char *sym = ct_trace_section(t, CT_SEC_SYMBOLS, &len);
	CHECK(sym && len == 8 && !memcmp(sym, "symbols!", 8));
	const char *sum = ct_trace_section(t, CT_SEC_SUMMARY, &len);
	CHECK_STR(ct_trace_thread(t, 1)->name, "t1");
	int crc;
	CHECK_EQ_U(count_records(t, &crc), 3002 + 5003 + 13);
	CHECK_EQ_U(crc, 0);
	/* SUMMARY is the last frame of the file */
	struct stat st;
	CHECK(stat(out, &st) == 0);
	FILE *f = fopen(out, "rb");
	char *all = malloc((size_t)st.st_size);
	CHECK(f && fread(all, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
	CHECK(sum && len < (size_t)st.st_size && !memcmp(all + st.st_size - len, sum, len));
	free(all);
	if (f)
		fclose(f);
	ct_trace_close(t);
	if (!system("zstd --version >/dev/null 2>&1")) {
		char cmd[1400];
		snprintf(cmd, sizeof cmd, "zstd -q -dc %s >/dev/null", out);
		CHECK(system(cmd) == 0);
	}
}

/* The spool directory itself is a readable, incomplete trace. */
static void test_open_spool_dir(void)
{
	char dir[600];
	struct ct_error err = { "" };
	snprintf(dir, sizeof dir, "%s/spool1", root);
	struct ct_trace *t = ct_trace_open(dir, &err);
	CHECK(t != NULL);
	if (!t) {
		printf("%s\n", err.msg);
		return;
	}
	CHECK(!ct_trace_complete(t));
	CHECK(ct_trace_damage(t) == NULL);
	CHECK_EQ_U(ct_trace_nthreads(t), 3);
	char v[64];
	CHECK(ct_trace_meta(t, CT_SEC_CONFIG, "period", v, sizeof v));
	CHECK_STR(v, "1000");
	CHECK(!ct_trace_meta(t, CT_SEC_SUMMARY, "records", v, sizeof v));
	size_t len;
	const char *maps = ct_trace_section(t, CT_SEC_MAPS, &len);
	CHECK(maps && len == strlen(MAPS_NEW) && !memcmp(maps, MAPS_NEW, len));
	int crc;
	CHECK_EQ_U(count_records(t, &crc), 3002 + 5003 + 13);
	CHECK_EQ_U(crc, 0);
	ct_trace_close(t);
}

/* A thread file cut in the middle of its last frame: the spool reads up
 * to the last whole frame and says where it is damaged; the join keeps the
 * whole frames and counts the torn one. */
static void test_torn_thread_file(void)
{
	char dir[600], p[700], out[600];
	struct ct_error err = { "" };
	snprintf(dir, sizeof dir, "%s/spool2", root);
	snprintf(out, sizeof out, "%s/trace2.zst", root);
	CHECK(make_spool(dir) == 0);
	struct ct_trace *t = ct_trace_open(dir, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	size_t frames1 = ct_trace_thread_frames(t, 1);
	ct_trace_close(t);

	ct_spool_thread_path(p, sizeof p, dir, 1);
	struct stat st;
	CHECK(stat(p, &st) == 0);
	CHECK(truncate(p, st.st_size - 5) == 0);

	t = ct_trace_open(dir, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	const char *dmg = ct_trace_damage(t);
	CHECK(dmg && strstr(dmg, "thread-000001.zst") && strstr(dmg, "offset"));
	if (dmg)
		printf("damage: %s\n", dmg);
	CHECK_EQ_U(ct_trace_thread_frames(t, 1), frames1 - 1);
	int crc;
	unsigned n = count_records(t, &crc);
	CHECK_EQ_U(crc, 0);
	CHECK(n < 3002 + 5003 + 13 && n > 3002 + 13);
	ct_trace_close(t);

	CHECK(ct_join(dir, out, NULL, 0, NULL, 0, &err) == 0);
	t = ct_trace_open(out, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(ct_trace_complete(t));
	CHECK(ct_trace_damage(t) == NULL);
	CHECK_EQ_U(meta_u(t, "torn_frames"), 1);
	CHECK(meta_u(t, "dropped_bytes") > 0);
	CHECK_EQ_U(meta_u(t, "thread.1.frames"), frames1 - 1);
	CHECK_EQ_U(meta_u(t, "thread.1.lost"), 0);         /* the LOST record was in the torn frame */
	CHECK_EQ_U(meta_u(t, "thread.0.records"), 3002);
	CHECK_EQ_U(count_records(t, &crc), n);
	CHECK_EQ_U(meta_u(t, "records"), n);
	char v[600];
	CHECK(ct_trace_meta(t, CT_SEC_SUMMARY, "damage", v, sizeof v) && strstr(v, "thread-000001.zst"));
	ct_trace_close(t);
}

/* Join refuses a spool without meta.zst and leaves no output behind. */
static void test_join_errors(void)
{
	char dir[600], out[600];
	struct ct_error err = { "" };
	snprintf(dir, sizeof dir, "%s/nometa", root);
	snprintf(out, sizeof out, "%s/nometa.zst", root);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(ct_join(dir, out, NULL, 0, NULL, 0, &err) == -1);
	CHECK(strstr(err.msg, "meta.zst") != NULL);
	CHECK(access(out, F_OK) != 0);
	CHECK(ct_trace_open(dir, &err) == NULL);
	CHECK(ct_join("/nonexistent/dir", out, NULL, 0, NULL, 0, &err) == -1);
	/* unwritable output directory */
	snprintf(dir, sizeof dir, "%s/spool1", root);
	CHECK(ct_join(dir, "/nonexistent/dir/out.zst", NULL, 0, NULL, 0, &err) == -1);
	CHECK(strstr(err.msg, "/nonexistent/dir/out.zst") != NULL);
}

/* The temporary file is created exclusively: a symbolic link planted at the
 * old fixed name OUT.tmp (or at OUT) never leads the join to write through
 * it, and no file other than a regular one is ever replaced (issue 17). */
static void test_join_never_follows(void)
{
	char dir[600], out[600], tmp[700], victim[600], buf[64];
	struct ct_error err = { "" };
	snprintf(dir, sizeof dir, "%s/spool1", root);
	snprintf(victim, sizeof victim, "%s/victim", root);
	CHECK(write_text(victim, "precious\n", 1000) == 0);
	chmod(victim, 0600);

	/* OUT.tmp -> victim: the join writes elsewhere, the victim stays */
	snprintf(out, sizeof out, "%s/planted.zst", root);
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	CHECK(symlink(victim, tmp) == 0);
	CHECK(ct_join(dir, out, NULL, 0, NULL, 0, &err) == 0);
	FILE *f = fopen(victim, "r");
	CHECK(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "precious\n"));
	if (f)
		fclose(f);
	struct stat st;
	CHECK(lstat(tmp, &st) == 0 && S_ISLNK(st.st_mode));   /* left as it was */
	CHECK(lstat(out, &st) == 0 && S_ISREG(st.st_mode));
	unlink(tmp);

	/* OUT is a symbolic link, a FIFO: never replaced, even when asked to */
	snprintf(out, sizeof out, "%s/link.zst", root);
	CHECK(symlink(victim, out) == 0);
	CHECK(ct_join(dir, out, NULL, 0, NULL, CT_JOIN_REPLACE, &err) == -1);
	CHECK(strstr(err.msg, "not a regular file") != NULL);
	CHECK(lstat(out, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(ct_join(dir, out, NULL, 0, NULL, 0, &err) == -1);
	CHECK(strstr(err.msg, "exists") != NULL);
	snprintf(out, sizeof out, "%s/fifo.zst", root);
	CHECK(mkfifo(out, 0600) == 0);
	CHECK(ct_join(dir, out, NULL, 0, NULL, CT_JOIN_REPLACE, &err) == -1);
	CHECK(lstat(out, &st) == 0 && S_ISFIFO(st.st_mode));
	f = fopen(victim, "r");
	CHECK(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "precious\n"));
	if (f)
		fclose(f);

	/* a regular file is replaced with CT_JOIN_REPLACE only */
	snprintf(out, sizeof out, "%s/regular.zst", root);
	CHECK(write_text(out, "old\n", 1000) == 0);
	CHECK(ct_join(dir, out, NULL, 0, NULL, 0, &err) == -1);
	CHECK(stat(out, &st) == 0 && st.st_size == 4);
	CHECK(ct_join(dir, out, NULL, 0, NULL, CT_JOIN_REPLACE, &err) == 0);
	CHECK(stat(out, &st) == 0 && st.st_size > 4);
	CHECK_EQ_U(count_tmp_files(root), 0);
}

/* Thousands of thread files, including empty ones (threads that never
 * wrote anything). */
static void test_many_threads(void)
{
	enum { N = 3000 };
	char dir[600], out[600], p[700];
	struct ct_error err = { "" };
	snprintf(dir, sizeof dir, "%s/many", root);
	snprintf(out, sizeof out, "%s/many.zst", root);
	CHECK(mkdir(dir, 0755) == 0 && write_meta(dir) == 0);
	for (uint32_t i = 0; i < N; i++) {
		if (i % 100 == 99) {                         /* empty file */
			ct_spool_thread_path(p, sizeof p, dir, i);
			close(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
			continue;
		}
		CHECK(write_thread(dir, i, 2, 0, 0) == 0);
	}
	CHECK(ct_join(dir, out, NULL, 0, NULL, 0, &err) == 0);
	struct ct_trace *t = ct_trace_open(out, &err);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U(ct_trace_nthreads(t), N - N / 100);
	CHECK_EQ_U(meta_u(t, "threads"), N - N / 100);
	CHECK_EQ_U(meta_u(t, "records"), 4 * (N - N / 100));
	int crc;
	CHECK_EQ_U(count_records(t, &crc), 4 * (N - N / 100));
	CHECK_EQ_U(crc, 0);
	CHECK_EQ_U(ct_trace_thread(t, 200)->index, 202);
	ct_trace_close(t);
	t = ct_trace_open(dir, &err);
	CHECK(t && ct_trace_nthreads(t) == N - N / 100);
	ct_trace_close(t);
}

static void test_spool_path(void)
{
	char p[64];
	ct_spool_thread_path(p, sizeof p, "/s", 7);
	CHECK_STR(p, "/s/thread-000007.zst");
	ct_spool_thread_path(p, sizeof p, "d", 1234567);
	CHECK_STR(p, "d/thread-1234567.zst");
}

int main(void)
{
	if (!mkdtemp(check_tmp_path(root, sizeof root, "ct-fmt-spool.XXXXXX"))) {
		printf("FAIL setup: mkdtemp\n");
		return 1;
	}
	RUN(test_spool_path);
	RUN(test_join);
	RUN(test_open_spool_dir);
	RUN(test_torn_thread_file);
	RUN(test_join_errors);
	RUN(test_join_never_follows);
	RUN(test_many_threads);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd)) { /* best effort */ }
	return check_summary();
}
