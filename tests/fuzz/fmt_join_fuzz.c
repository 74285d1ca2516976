/* Fuzz target for the join (formats/join.c): the input is a spool thread
 * file (THREAD, COUNTS, data frames, or anything else) beside a valid
 * meta.zst; the join must either refuse or write a trace that reads back
 * whole, with per-thread counts that add up or a count_error.
 *
 * Built and run by `make fuzz` (clang, libFuzzer); `make check` replays the
 * corpus tests/fuzz/corpus/fmt_join/ through the same entry point built
 * with -DCT_FUZZ_MAIN (tests/e2e/fuzz_corpus.sh).  Files go to a directory
 * under TMPDIR made once per process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[512], spool[600], thread[700], out[700];

static int setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/ct-join-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(spool, sizeof spool, "%s/spool", dir);
	snprintf(out, sizeof out, "%s/out.zst", dir);
	ct_spool_thread_path(thread, sizeof thread, spool, 0);
	char meta[700];
	snprintf(meta, sizeof meta, "%s/meta.zst", spool);
	if (mkdir(spool, 0700) < 0)
		return -1;
	int fd = open(meta, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct ct_header h = { .version = CT_FORMAT_VERSION, .min_version = 1 };
	int rc = fd < 0 ? -1 : ct_write_header(fd, &h);
	if (fd >= 0)
		close(fd);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready && setup() < 0)
		abort();
	ready = 1;
	int fd = open(thread, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
	struct ct_error err;
	if (ct_join(spool, out, NULL, 0, "recording=complete\n", CT_JOIN_REPLACE, &err) < 0)
		return 0;
	/* what the join writes, the reader reads without damage */
	struct ct_trace *t = ct_trace_open(out, &err);
	if (!t || ct_trace_damage(t) || !ct_trace_complete(t))
		abort();
	struct ct_cursor *c = ct_cursor_merged(t);
	struct ct_record r;
	int rc;
	while (c && (rc = ct_cursor_next(c, &r, &err)) == 1)
		;
	if (!c || rc < 0)
		abort();
	ct_cursor_free(c);
	ct_trace_close(t);
	return 0;
}

/* the replay driver's end: the spool and trace go */
void fuzz_replay_done(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

#include "replay_main.h"
