/* Malformed traces, generated at test time from a good trace: every one
 * must either be refused by ct_trace_open (NULL and a message with the file
 * name and "offset") or open with its damage stated, and reading it must
 * end in 0 or -1 with such a message.  Never a crash; run it under ASAN
 * (make ASAN=1) to catch over-reads.  The corpus is described in
 * tests/malformed/README; CT_MALFORMED_DUMP=dir writes the generated files
 * there for the fuzzer's seed corpus. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "check.h"
#include "commtrace.h"
#include "tracebuild.h"

static char dir[256];
static char good_path[600];
static uint8_t *good;
static size_t good_len;

static void put32(uint8_t *o, uint32_t v)
{
	o[0] = (uint8_t)v; o[1] = (uint8_t)(v >> 8); o[2] = (uint8_t)(v >> 16); o[3] = (uint8_t)(v >> 24);
}

static int write_good(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1,
		.features = CT_FEAT_SAMPLES, .created_ns = 1 };
	int rc = ct_write_header(fd, &h);
	rc |= ct_write_section(fd, CT_SEC_MACHINE, "cpu=x\nline=64\n", 14);
	for (uint32_t th = 0; th < 2; th++) {
		struct ct_thread_info ti = { .index = th, .parent = UINT32_MAX, .tid = 5, .name = "t" };
		struct ct_sink s;
		rc |= ct_write_thread_info(fd, &ti);
		rc |= ct_sink_init(&s, fd, 300, 3);
		for (int i = 0; i < 60; i++) {
			struct ct_record r = { .type = CT_REC_SAMPLE, .time = 100 + (uint64_t)i * 5 + th };
			r.u.sample = (struct ct_sample){ .ip = 0x401000 + (uint64_t)(i % 5) * 4,
				.addr = 0x600000 + (uint64_t)i * 24, .period = 100, .len = 8, .kind = (uint8_t)(i % 2) };
			if (i == 30) {
				r.type = CT_REC_MARKER;
				memset(&r.u, 0, sizeof r.u);
				strcpy(r.u.marker.name, "middle");
			}
			rc |= ct_sink_append(&s, &r);
		}
		rc |= ct_sink_flush(&s);
		ct_sink_destroy(&s);
	}
	rc |= ct_write_section(fd, CT_SEC_SUMMARY, "records=120\n", 12);
	close(fd);
	return rc;
}

static int dump_n;
static const char *named;   /* corpus name of the next file written */

static void write_file(const char *p, const uint8_t *b, size_t n)
{
	const char *nd = getenv("CT_MALFORMED_NAMED");
	if (named && nd && *nd) {
		char q[700];
		snprintf(q, sizeof q, "%s/%s.zst", nd, named);
		int fd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			if (n && write(fd, b, n) != (ssize_t)n)
				printf("short write\n");
			close(fd);
		}
	}
	named = NULL;
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (n && write(fd, b, n) != (ssize_t)n)
		printf("short write\n");
	close(fd);
	const char *dump = getenv("CT_MALFORMED_DUMP");
	if (dump && *dump) {
		char q[700];
		snprintf(q, sizeof q, "%s/gen-%05d.zst", dump, dump_n++);
		fd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			if (n && write(fd, b, n) != (ssize_t)n)
				printf("short write\n");
			close(fd);
		}
	}
}

/* Outcome of reading one malformed file. */
enum { REFUSED, DAMAGED, READ_ERROR, CLEAN };

static bool msg_ok(const char *msg, const char *p)
{
	return msg && strstr(msg, p) && strstr(msg, "offset");
}

/* Opens p (or the n bytes at mem), reads every record per thread and
 * merged (with and without decoding workers); checks the messages. */
static int try_open(const char *p, const uint8_t *mem, size_t n, bool verbose)
{
	struct ct_error err = { "" };
	struct ct_trace *t = mem ? ct_trace_open_mem(mem, n, p, &err) : ct_trace_open(p, &err);
	if (!t) {
		if (verbose)
			printf("refused: %s\n", err.msg);
		CHECK(msg_ok(err.msg, p));
		if (!msg_ok(err.msg, p))
			printf("bad message: %s\n", err.msg);
		return REFUSED;
	}
	int outcome = CLEAN;
	const char *dmg = ct_trace_damage(t);
	if (dmg) {
		if (verbose)
			printf("damage: %s\n", dmg);
		CHECK(msg_ok(dmg, p));
		outcome = DAMAGED;
	}
	/* metadata access on a damaged trace is safe */
	char v[32];
	ct_trace_meta(t, CT_SEC_MACHINE, "line", v, sizeof v);
	ct_trace_complete(t);
	for (size_t i = 0; i < ct_trace_nthreads(t); i++) {
		struct ct_cursor *c = ct_cursor_thread(t, i);
		struct ct_record r;
		int rc;
		size_t n = 0;
		while ((rc = ct_cursor_next(c, &r, &err)) == 1)
			n++;
		if (rc < 0) {
			if (verbose)
				printf("read error: %s\n", err.msg);
			CHECK(msg_ok(err.msg, p) && strstr(err.msg, "thread") && strstr(err.msg, "frame"));
			CHECK(ct_cursor_next(c, &r, &err) == -1);     /* stays failed */
			outcome = outcome == CLEAN ? READ_ERROR : outcome;
		}
		ct_cursor_free(c);
	}
	/* merged, and merged with frames decoded by workers: the same records,
	 * the same end, the same message */
	struct ct_cursor *c = ct_cursor_merged(t), *cj = ct_cursor_merged_jobs(t, 4);
	struct ct_error errj = { "" };
	struct ct_record r, rj;
	int rc, rcj;
	CHECK(c && cj);
	for (;;) {
		rc = ct_cursor_next(c, &r, &err);
		rcj = ct_cursor_next(cj, &rj, &errj);
		CHECK_EQ_U(rcj, rc);
		if (rc != 1 || rcj != 1)
			break;
		CHECK(tb_same_record(&r, &rj));
	}
	if (rc < 0) {
		CHECK(msg_ok(err.msg, p));
		CHECK_STR(errj.msg, err.msg);
	}
	ct_cursor_free(c);
	ct_cursor_free(cj);
	ct_trace_close(t);
	return outcome;
}

static int try_read(const char *p, bool verbose)
{
	return try_open(p, NULL, 0, verbose);
}

/* Through a file, and from an exact-size heap copy (so that ASAN sees any
 * read past the end); both must agree. */
static int try_bytes(const uint8_t *b, size_t n, bool verbose)
{
	char p[700];
	snprintf(p, sizeof p, "%s/bad.zst", dir);
	write_file(p, b, n);
	int o = try_read(p, verbose);
	uint8_t *h = malloc(n ? n : 1);
	memcpy(h, b, n);
	int o2 = try_open(p, h, n, false);
	free(h);
	CHECK_EQ_U(o2, o);
	return o;
}

static void test_good_reads_clean(void)
{
	CHECK_EQ_U(try_read(good_path, true), CLEAN);
}

static void test_zero_length(void)
{
	named = "empty";
	CHECK_EQ_U(try_bytes(good, 0, true), REFUSED);
}

static void test_wrong_magic(void)
{
	uint8_t *b = malloc(good_len);
	memcpy(b, good, good_len);
	b[0] ^= 0xff;
	named = "wrong-magic";
	CHECK_EQ_U(try_bytes(b, good_len, true), REFUSED);
	memcpy(b, good, good_len);
	b[8] = 'X';                                      /* section magic */
	named = "wrong-section-magic";
	CHECK_EQ_U(try_bytes(b, good_len, true), REFUSED);
	/* a plain zstd file is not a trace */
	size_t zc = ZSTD_compress(b, good_len, "hello", 5, 1);
	CHECK_EQ_U(try_bytes(b, zc, true), REFUSED);
	/* a text file */
	CHECK_EQ_U(try_bytes((const uint8_t *)"hello world\n", 12, true), REFUSED);
	free(b);
}

/* Header body starts at byte 16: version u16, min_version u16, reserved,
 * features u64 at 24. */
static void test_too_new_version(void)
{
	uint8_t *b = malloc(good_len);
	char p[700];
	memcpy(b, good, good_len);
	b[16] = CT_FORMAT_VERSION + 1;
	b[18] = CT_FORMAT_VERSION + 1;
	snprintf(p, sizeof p, "%s/bad.zst", dir);
	named = "too-new-version";
	write_file(p, b, good_len);
	struct ct_error err;
	CHECK(ct_trace_open(p, &err) == NULL);
	char want[128];
	snprintf(want, sizeof want, "needs commtrace format version %d, this reader supports up to %d",
	         CT_FORMAT_VERSION + 1, CT_FORMAT_VERSION);
	CHECK(strstr(err.msg, want) && msg_ok(err.msg, p));
	printf("%s\n", err.msg);
	/* a newer version that older readers may still read is accepted */
	b[18] = 1;
	CHECK_EQ_U(try_bytes(b, good_len, true), CLEAN);
	/* version 0 */
	b[16] = 0;
	b[18] = 0;
	CHECK_EQ_U(try_bytes(b, good_len, true), REFUSED);
	free(b);
}

static void test_unknown_required_feature(void)
{
	uint8_t *b = malloc(good_len);
	memcpy(b, good, good_len);
	b[24 + 4] |= 0x08;                               /* bit 35 (32 to 34 are known) */
	named = "unknown-required-feature";
	CHECK_EQ_U(try_bytes(b, good_len, true), REFUSED);
	memcpy(b, good, good_len);
	b[24 + 7] |= 0x80;                               /* bit 63 */
	CHECK_EQ_U(try_bytes(b, good_len, true), REFUSED);
	memcpy(b, good, good_len);
	b[24 + 2] |= 0x01;                               /* bit 16: optional, ignored */
	CHECK_EQ_U(try_bytes(b, good_len, true), CLEAN);
	free(b);
}

static void test_short_header(void)
{
	/* a HEADER section with a 4-byte body */
	uint8_t b[20] = { 0 };
	put32(b, CT_SKIPPABLE_MAGIC);
	put32(b + 4, 12);
	memcpy(b + 8, "CTRC", 4);
	b[12] = CT_SEC_HEADER;
	named = "short-header";
	CHECK_EQ_U(try_bytes(b, sizeof b, true), REFUSED);
	/* first section is not a HEADER */
	b[12] = CT_SEC_MACHINE;
	CHECK_EQ_U(try_bytes(b, sizeof b, true), REFUSED);
}

/* Every prefix of the good trace: refused (inside the header) or usable
 * with the damage stated (or clean at a frame boundary). */
static void test_truncated_everywhere(void)
{
	unsigned counts[4] = { 0 };
	for (size_t n = 0; n < good_len; n++) {
		if (n == good_len - 7)
			named = "truncated-last-frame";
		int o = try_bytes(good, n, false);
		counts[o]++;
		if (check_case_failed) {
			printf("at length %zu\n", n);
			break;
		}
	}
	printf("truncations: %u refused, %u damaged, %u clean prefixes\n", counts[REFUSED],
	       counts[DAMAGED], counts[CLEAN]);
	CHECK_EQ_U(counts[READ_ERROR], 0);
	CHECK(counts[REFUSED] >= 8 + CT_SECTION_HEADER_BYTES + CT_HEADER_BYTES);
	CHECK(counts[DAMAGED] > good_len / 2);
}

/* Single-bit flips at every byte offset (one bit per byte, rotating) and
 * byte stomps: nothing may crash, and the data frames' checksums turn
 * flipped data into read errors, not wrong records. */
static void test_bit_flips(void)
{
	uint8_t *b = malloc(good_len);
	unsigned counts[4] = { 0 };
	for (size_t i = 0; i < good_len; i++) {
		for (int k = 0; k < 2; k++) {
			memcpy(b, good, good_len);
			if (k == 0)
				b[i] ^= (uint8_t)(1u << (i % 8));
			else
				b[i] = (uint8_t)(0xff - b[i] / 2);
			if (k == 0 && i == good_len - 40)
				named = "bit-flip-in-data";
			counts[try_bytes(b, good_len, false)]++;
			if (check_case_failed) {
				printf("at offset %zu variant %d\n", i, k);
				free(b);
				return;
			}
		}
	}
	printf("bit flips: %u refused, %u damaged, %u read errors, %u clean\n", counts[REFUSED],
	       counts[DAMAGED], counts[READ_ERROR], counts[CLEAN]);
	free(b);
}

/* Hostile length fields: skippable frame size 0xFFFFFFFF, a data frame
 * whose header claims 1 GB of content, a data frame without content size,
 * a block that claims more records than it holds. */
static void test_huge_lengths(void)
{
	/* header + MACHINE section whose size field is 0xFFFFFFFF */
	size_t hdr_len = 8 + CT_SECTION_HEADER_BYTES + CT_HEADER_BYTES;
	uint8_t *b = malloc(good_len + 64);
	memcpy(b, good, good_len);
	put32(b + hdr_len + 4, 0xffffffffu);
	named = "huge-skippable-size";
	CHECK_EQ_U(try_bytes(b, good_len, true), DAMAGED);

	/* the THREAD section's size field is huge */
	memcpy(b, good, good_len);
	size_t machine_len = 8 + CT_SECTION_HEADER_BYTES + 14;
	put32(b + hdr_len + machine_len + 4, 0xfffffff0u);
	CHECK_EQ_U(try_bytes(b, good_len, true), DAMAGED);

	/* data frame claiming 1 GB: a zstd frame header with an 8-byte content
	 * size field (FHD 0xC0: FCS size 8, single segment), then a raw block */
	uint8_t fr[32];
	size_t n = 0;
	put32(fr, 0xFD2FB528u);
	n = 4;
	fr[n++] = 0xE0;                                  /* FCS 8 bytes, single segment */
	uint64_t gb = 1ull << 30;
	for (int i = 0; i < 8; i++)
		fr[n++] = (uint8_t)(gb >> (8 * i));
	fr[n++] = 0x01; fr[n++] = 0x00; fr[n++] = 0x00; /* last raw block of 0 bytes */
	size_t cut = hdr_len + machine_len + 8 + CT_SECTION_HEADER_BYTES + CT_THREAD_INFO_BYTES;
	memcpy(b, good, cut);
	memcpy(b + cut, fr, n);
	named = "content-size-1gb";
	int o = try_bytes(b, cut + n, true);
	CHECK_EQ_U(o, DAMAGED);
	struct ct_error err;
	char p[700];
	snprintf(p, sizeof p, "%s/bad.zst", dir);
	struct ct_trace *t = ct_trace_open(p, &err);
	CHECK(t && ct_trace_damage(t) && strstr(ct_trace_damage(t), "1073741824"));
	ct_trace_close(t);

	/* frame without a content size (streaming compression) */
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
	uint8_t blk[16] = { 'C', 'B', 'L', 'K', 0, 0, 0, 0 };
	size_t z = ZSTD_compress2(cc, b + cut, 64, blk, 8);
	CHECK(!ZSTD_isError(z));
	named = "no-content-size";
	CHECK_EQ_U(try_bytes(b, cut + z, true), DAMAGED);

	/* a whole frame whose block claims 1000 records in 8 bytes */
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
	put32(blk + 4, 1000);
	z = ZSTD_compress2(cc, b + cut, 64, blk, 16);
	named = "record-count-too-large";
	CHECK_EQ_U(try_bytes(b, cut + z, true), READ_ERROR);
	/* wrong block magic */
	memcpy(blk, "XBLK", 4);
	put32(blk + 4, 0);
	z = ZSTD_compress2(cc, b + cut, 64, blk, 8);
	CHECK_EQ_U(try_bytes(b, cut + z, true), READ_ERROR);
	/* trailing bytes after the last record */
	memcpy(blk, "CBLK", 4);
	put32(blk + 4, 1);
	uint8_t rec[] = { CT_REC_LOST, 2, 1, 5, 0xaa };
	memcpy(blk + 8, rec, sizeof rec);
	z = ZSTD_compress2(cc, b + cut, 64, blk, 8 + sizeof rec);
	CHECK_EQ_U(try_bytes(b, cut + z, true), READ_ERROR);
	/* ... and without them it is fine */
	z = ZSTD_compress2(cc, b + cut, 64, blk, 8 + sizeof rec - 1);
	CHECK_EQ_U(try_bytes(b, cut + z, true), CLEAN);
	/* a data frame before any THREAD section */
	memcpy(b + hdr_len, b + cut, z);
	CHECK_EQ_U(try_bytes(b, hdr_len + z, true), DAMAGED);
	/* an unknown frame magic after the header */
	memset(b + hdr_len, 0x42, 16);
	named = "unknown-frame-magic";
	CHECK_EQ_U(try_bytes(b, hdr_len + 16, true), DAMAGED);
	/* a THREAD section that is too short */
	memcpy(b, good, good_len);
	put32(b + hdr_len + machine_len + 4, CT_SECTION_HEADER_BYTES + 4);
	CHECK_EQ_U(try_bytes(b, hdr_len + machine_len + 8 + CT_SECTION_HEADER_BYTES + 4, true), DAMAGED);
	ZSTD_freeCCtx(cc);
	free(b);
}

/* Foreign skippable frames (other magics, or without CTRC) are skipped. */
static void test_foreign_skippable(void)
{
	size_t hdr_len = 8 + CT_SECTION_HEADER_BYTES + CT_HEADER_BYTES;
	uint8_t *b = malloc(good_len + 32);
	memcpy(b, good, hdr_len);
	put32(b + hdr_len, 0x184D2A5Fu);
	put32(b + hdr_len + 4, 4);
	memcpy(b + hdr_len + 8, "abcd", 4);
	memcpy(b + hdr_len + 12, good + hdr_len, good_len - hdr_len);
	CHECK_EQ_U(try_bytes(b, good_len + 12, true), CLEAN);
	free(b);
}

/* Open a missing file, a directory that is not a spool. */
static void test_missing(void)
{
	struct ct_error err;
	char p[700];
	snprintf(p, sizeof p, "%s/does-not-exist.zst", dir);
	CHECK(ct_trace_open(p, &err) == NULL);
	CHECK(strstr(err.msg, p) != NULL);
	CHECK(ct_trace_open(dir, &err) == NULL);          /* no meta.zst */
	CHECK(strstr(err.msg, "meta.zst") != NULL);
}

/* A hostile spool directory: garbage thread files, thread file names that
 * overflow, an empty meta.zst. */
static void test_hostile_spool(void)
{
	char sp[700], p[800];
	struct ct_error err;
	snprintf(sp, sizeof sp, "%s/spool", dir);
	mkdir(sp, 0755);
	snprintf(p, sizeof p, "%s/meta.zst", sp);
	write_file(p, good, 0);
	CHECK(ct_trace_open(sp, &err) == NULL && msg_ok(err.msg, p));
	write_file(p, good, 8 + CT_SECTION_HEADER_BYTES + CT_HEADER_BYTES);
	snprintf(p, sizeof p, "%s/thread-000000.zst", sp);
	write_file(p, good + 5, 100);
	snprintf(p, sizeof p, "%s/thread-99999999999999999999.zst", sp);
	write_file(p, good, good_len);
	snprintf(p, sizeof p, "%s/thread-000001.zst", sp);
	write_file(p, (const uint8_t *)"", 0);
	snprintf(p, sizeof p, "%s/thread-000002.zst", sp);
	write_file(p, good, good_len);                   /* a whole trace as a thread file */
	struct ct_trace *t = ct_trace_open(sp, &err);
	CHECK(t != NULL);
	if (t) {
		CHECK(ct_trace_damage(t) && strstr(ct_trace_damage(t), "thread-000000.zst"));
		printf("%s\n", ct_trace_damage(t));
		ct_trace_close(t);
	}
	CHECK(try_read(sp, false) == DAMAGED);
	snprintf(p, sizeof p, "%s/out.zst", dir);
	CHECK(ct_join(sp, p, NULL, 0, NULL, 0, &err) == 0);
	CHECK(try_read(p, true) == CLEAN);
}

/* The committed corpus (tests/malformed/[a-z]*.zst): each file is refused or
 * read with its damage or read error stated. */
static void test_corpus(void)
{
	const char *root = getenv("CT_ROOT");
	char d[600], cmd[700];
	snprintf(d, sizeof d, "%s/tests/malformed", root && *root ? root : ".");
	snprintf(cmd, sizeof cmd, "ls %s/*.zst 2>/dev/null", d);
	FILE *f = popen(cmd, "r");
	char line[800];
	int n = 0;
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		int o = try_read(line, false);
		CHECK(o != CLEAN);
		n++;
	}
	if (f)
		pclose(f);
	if (n == 0)
		SKIP("no corpus found (run from the repository root or set CT_ROOT)");
	else
		printf("corpus: %d files\n", n);
}

int main(void)
{
	if (!mkdtemp(check_tmp_path(dir, sizeof dir, "ct-fmt-malformed.XXXXXX"))) {
		printf("FAIL setup: mkdtemp\n");
		return 1;
	}
	snprintf(good_path, sizeof good_path, "%s/good.zst", dir);
	if (write_good(good_path)) {
		printf("FAIL setup: write_good\n");
		return 1;
	}
	struct stat st;
	stat(good_path, &st);
	good_len = (size_t)st.st_size;
	good = malloc(good_len);
	FILE *f = fopen(good_path, "rb");
	if (!f || fread(good, 1, good_len, f) != good_len) {
		printf("FAIL setup: read good\n");
		return 1;
	}
	fclose(f);
	printf("good trace: %zu bytes\n", good_len);
	RUN(test_good_reads_clean);
	RUN(test_zero_length);
	RUN(test_wrong_magic);
	RUN(test_too_new_version);
	RUN(test_unknown_required_feature);
	RUN(test_short_header);
	RUN(test_truncated_everywhere);
	RUN(test_bit_flips);
	RUN(test_huge_lengths);
	RUN(test_foreign_skippable);
	RUN(test_missing);
	RUN(test_hostile_spool);
	RUN(test_corpus);
	free(good);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd)) { /* best effort */ }
	return check_summary();
}
