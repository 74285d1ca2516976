/* commrec: record a program's memory communication into a trace.
 *
 *   commrec [options] [--] PROGRAM [ARGS...]
 *
 * The steps, in order: options; the output must not exist (-f); find the
 * program (127/126 like a shell); choose the sampler (--sampler auto: pebs,
 * ibs, soft); find the runtime; make OUTPUT.spool/ and write meta.zst in it;
 * run the program with the runtime preloaded; add build-ids to the maps;
 * join the spool into OUTPUT; remove the spool; one line of totals.
 * commrec --recover SPOOL joins what a recording that did not finish left.
 * See doc/commrec.1. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buildid.h"
#include "commrec.h"
#include "commtrace.h"
#include "machine.h"
#include "rtstatus.h"

/* Why the runtime may not have loaded into the program at path, which
 * exited with status (-1: not yet run). */
static void explain_no_runtime(const char *path, int status, char *why, size_t cap)
{
	struct stat st;
	struct elf_kind k;
	if (stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) && getuid() != 0) {
		snprintf(why, cap, "%s is set-user-ID or set-group-ID: the dynamic loader ignores "
		         "LD_PRELOAD for it", path);
		return;
	}
	if (elf_kind_read(path, &k) == 0 && k.is_elf && !k.has_interp) {
		snprintf(why, cap, "%s is statically linked: LD_PRELOAD cannot load the runtime "
		         "into it; link it dynamically", path);
		return;
	}
	if (status == 127) {
		/* the dynamic loader's status; it said why on the program's stderr
		 * (e.g. libcommrec-inst.so, where the program's RUNPATH points to
		 * a build directory since removed) */
		snprintf(why, cap, "the program could not start: a shared library was not found "
		         "(exit 127; see the loader's message above; for --sampler inst programs: "
		         "libcommrec-inst.so, set LD_LIBRARY_PATH or rebuild)");
		return;
	}
	snprintf(why, cap, "the runtime did not start in %s (statically linked? set-user-ID? "
	         "LD_PRELOAD removed by a wrapper script? killed before it started?)", path);
}

static void warn_before_run(const char *path)
{
	char why[512];
	struct stat st;
	struct elf_kind k;
	bool suspicious = (stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) &&
	                   getuid() != 0) ||
	                  (elf_kind_read(path, &k) == 0 && k.is_elf && !k.has_interp);
	if (suspicious) {
		explain_no_runtime(path, -1, why, sizeof why);
		rec_warn("warning: nothing will be recorded: %s", why);
	}
}

static const char *file_kind(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a FIFO" :
	       S_ISSOCK(m) ? "a socket" : "not a plain file";
}

/* The output may be written: absent, or a regular file and -f. */
static int check_output(const struct rec_opts *o)
{
	struct stat st;
	if (lstat(o->output, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		rec_err("%s is a directory: give a file name with -o", o->output);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		rec_err("%s is not a regular file (%s): commrec never replaces it, even with -f; "
		        "give another name with -o", o->output, file_kind(st.st_mode));
		return -1;
	}
	if (!o->force) {
		rec_err("%s exists: use -f to overwrite it, or -o to write another file", o->output);
		return -1;
	}
	return 0;
}

/* A process still recording into spool: one whose maps file is there and
 * whose environment names the spool (a pid reused since is not).  Its pid,
 * or 0. */
static int live_recorder(const char *spool)
{
	char real[PATH_MAX];
	DIR *d = opendir(spool);
	if (!d || !realpath(spool, real)) {
		if (d)
			closedir(d);
		return 0;
	}
	char want[PATH_MAX + 32];
	int wl = snprintf(want, sizeof want, "%s=%s", CT_ENV_SPOOL, real);
	int live = 0;
	struct dirent *e;
	while (!live && (e = readdir(d))) {
		char *end;
		long pid = strncmp(e->d_name, "maps-", 5) ? 0 : strtol(e->d_name + 5, &end, 10);
		if (pid <= 0 || strcmp(end, ".txt") || (kill((pid_t)pid, 0) < 0 && errno != EPERM))
			continue;
		char path[64], env[65536];
		snprintf(path, sizeof path, "/proc/%ld/environ", pid);
		FILE *f = fopen(path, "re");
		if (!f) {
			live = (int)pid;         /* cannot tell: assume it is */
			continue;
		}
		size_t n = fread(env, 1, sizeof env - 1, f);
		fclose(f);
		for (size_t i = 0; i < n && !live; i += strlen(env + i) + 1) {
			env[n] = 0;
			if (!strncmp(env + i, want, (size_t)wl) && env[i + (size_t)wl] == 0)
				live = (int)pid;
		}
	}
	closedir(d);
	return live;
}

/* --recover SPOOL: join what a recording that did not finish left (commrec
 * killed, or the machine's OOM killer took both) into a trace. */
static int recover(struct rec_opts *o)
{
	char spool[PATH_MAX], out[PATH_MAX];
	size_t n = strlen(o->recover);
	while (n > 1 && o->recover[n - 1] == '/')
		n--;
	if (n >= sizeof spool) {
		rec_err("spool directory name too long");
		return REC_EXIT_FAILED;
	}
	memcpy(spool, o->recover, n);
	spool[n] = 0;
	if (!o->output_given) {
		if (n <= 6 || strcmp(spool + n - 6, ".spool")) {
			rec_err("%s does not end in .spool: give the trace file to write with -o", spool);
			return REC_EXIT_FAILED;
		}
		snprintf(out, sizeof out, "%.*s", (int)(n - 6), spool);
		o->output = out;
	}
	struct stat st;
	char meta[PATH_MAX + 16];
	snprintf(meta, sizeof meta, "%s/meta.zst", spool);
	if (lstat(spool, &st) < 0 || !S_ISDIR(st.st_mode) || lstat(meta, &st) < 0) {
		rec_err("%s is not a spool directory (no %s): nothing to recover", spool, meta);
		return REC_EXIT_FAILED;
	}
	if (check_output(o) < 0)
		return REC_EXIT_FAILED;
	int pid = live_recorder(spool);
	if (pid) {
		rec_err("process %d is still recording into %s: wait for it to end (or stop it), "
		        "then recover", pid, spool);
		return REC_EXIT_FAILED;
	}
	signal(SIGXFSZ, SIG_IGN);    /* EFBIG is reported (see main) */
	if (rec_spool_threads(spool) <= 0)
		rec_warn("%s holds no thread files: the trace will have no records", spool);
	rec_add_buildids(spool);
	if (rec_join(o, spool, NULL) < 0) {
		rec_err("the spool is kept in %s", spool);
		return REC_EXIT_FAILED;
	}
	if (!o->keep_spool && rec_remove_spool(spool) < 0)
		rec_warn("could not remove %s", spool);
	if (o->verbose >= 0)
		rec_report(o);
	return 0;
}

static const char *signame(int sig)
{
	const char *s = sigdescr_np(sig);
	return s ? s : "unknown signal";
}

int main(int argc, char **argv)
{
	struct rec_opts o;
	bool list = false;
	int r = rec_parse_options(&o, argc, argv, &list);
	if (r < 0)
		return REC_EXIT_FAILED;
	if (r > 0)
		return 0;
	if (list) {
		rec_list_samplers();
		return 0;
	}

	if (o.recover)
		return recover(&o);
	if (check_output(&o) < 0)
		return REC_EXIT_FAILED;
	struct stat st;

	/* The spool: OUTPUT.spool/ beside the output. */
	char spool_rel[PATH_MAX], spool[PATH_MAX];
	if ((size_t)snprintf(spool_rel, sizeof spool_rel, "%s.spool", o.output) >= sizeof spool_rel) {
		rec_err("output file name too long");
		return REC_EXIT_FAILED;
	}
	if (lstat(spool_rel, &st) == 0 && !o.force) {
		rec_err("%s exists (left by an earlier recording? commrec --recover %s makes a "
		        "trace of it): remove it, or use -f", spool_rel, spool_rel);
		return REC_EXIT_FAILED;
	}

	char prog[PATH_MAX];
	r = rec_find_program(o.argv[0], prog, sizeof prog);
	if (r)
		return r;
	if (rec_choose_sampler(&o) < 0)
		return REC_EXIT_FAILED;
	if (o.line_size) {
		o.line_size_used = o.line_size;
	} else {
		struct machine m;
		machine_read(&m, "/");
		o.line_size_used = m.line_size;
		o.line_size_from_sysfs = m.line_size_known;
		machine_free(&m);
	}
	rec_default_owner_window(&o);
	if (o.owner_window && o.line_size_used > CT_OWNER_LINE_MAX) {
		rec_err("--owner-window follows lines of at most %d bytes; the line size is %u "
		        "(--line-size)", CT_OWNER_LINE_MAX, o.line_size_used);
		return REC_EXIT_FAILED;
	}

	/* A program built with commrec-cc carries the runtime (libcommrec-inst,
	 * shared or static): preloading libcommrec.so too would start two. */
	char runtime[PATH_MAX] = "";
	bool own_runtime = rec_program_has_inst_runtime(prog);
	if (!strcmp(o.sampler_used, "inst") && !own_runtime) {
		rec_err("%s was not built with commrec-cc (it does not carry libcommrec-inst): "
		        "--sampler inst needs the compiler's instrumentation; see commrec-cc(1)", prog);
		return REC_EXIT_FAILED;
	}
	if (own_runtime) {
		rec_info(1, "runtime: linked into %s (commrec-cc): nothing preloaded", prog);
	} else {
		if (rec_find_runtime(runtime, sizeof runtime) < 0)
			return REC_EXIT_FAILED;
		rec_info(1, "runtime: %s", runtime);
	}

	if (lstat(spool_rel, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || rec_remove_spool(spool_rel) < 0) {
			rec_err("cannot remove %s: remove it by hand", spool_rel);
			return REC_EXIT_FAILED;
		}
	}
	/* private: nobody else can put files (or links) into it */
	if (mkdir(spool_rel, 0700) < 0) {
		rec_err("cannot create %s: %s", spool_rel, strerror(errno));
		return REC_EXIT_FAILED;
	}
	if (!realpath(spool_rel, spool)) {
		rec_err("%s: %s", spool_rel, strerror(errno));
		rmdir(spool_rel);
		return REC_EXIT_FAILED;
	}
	rec_info(1, "spool: %s", spool);
	if (rec_write_meta(&o, spool) < 0) {
		rec_remove_spool(spool);
		return REC_EXIT_FAILED;
	}

	warn_before_run(prog);
	struct rec_run run;
	if (rec_run_program(&o, prog, spool, own_runtime ? NULL : runtime, &run) < 0) {
		rec_remove_spool(spool);
		return REC_EXIT_FAILED;
	}
	if (run.exec_errno) {
		rec_err("cannot run %s: %s", prog, strerror(run.exec_errno));
		rec_remove_spool(spool);
		return run.exec_errno == ENOENT ? REC_EXIT_NOTFOUND : REC_EXIT_NOEXEC;
	}

	int status = 0;
	if (WIFEXITED(run.status)) {
		status = WEXITSTATUS(run.status);
		rec_info(1, "%s exited with status %d after %.3f s", o.argv[0], status,
		         (double)(run.end_ns - run.start_ns) / 1e9);
	} else if (WIFSIGNALED(run.status)) {
		int sig = WTERMSIG(run.status);
		status = 128 + sig;
		rec_warn("%s was killed by signal %d (%s)%s: the trace is marked incomplete", o.argv[0],
		         sig, signame(sig), WCOREDUMP(run.status) ? ", core dumped" : "");
	}

	int nthreads = rec_spool_threads(spool);
	struct rt_status rst;
	if (nthreads <= 0 && rec_runtime_status(spool, &rst) && rst.threads_unrecorded) {
		/* the runtime ran but could record no thread: a trace that says so */
		rec_warn("no thread of %s was recorded (%llu not recorded%s): the trace says so",
		         o.argv[0], (unsigned long long)rst.threads_unrecorded,
		         rst.unrecorded[RT_UNREC_NO_FD] ? ": no file descriptor above the program's "
		         "limit; raise the hard limit, ulimit -Hn" : "");
	} else if (nthreads <= 0) {
		char why[512];
		explain_no_runtime(prog, status, why, sizeof why);
		rec_err("nothing was recorded (the program's exit status: %d): %s", status, why);
		if (o.keep_spool)
			rec_err("spool kept in %s", spool_rel);
		else
			rec_remove_spool(spool);
		return REC_EXIT_FAILED;
	}
	rec_info(1, "%d thread file%s in the spool", nthreads, nthreads == 1 ? "" : "s");

	/* From here on commrec writes files (the maps, the trace): beyond the
	 * file size limit (ulimit -f) a write must fail with EFBIG and be
	 * reported, not kill commrec with SIGXFSZ. */
	signal(SIGXFSZ, SIG_IGN);
	int nmaps = rec_add_buildids(spool);
	rec_info(1, "build-ids added to %d maps file%s", nmaps, nmaps == 1 ? "" : "s");

	if (rec_join(&o, spool, &run) < 0) {
		rec_err("the spool is kept in %s: commrec --recover %s joins it into a trace "
		        "(commanalyze can also read it as it is)", spool_rel, spool_rel);
		return REC_EXIT_FAILED;
	}
	if (!o.keep_spool && rec_remove_spool(spool) < 0)
		rec_warn("could not remove %s", spool_rel);
	if (o.verbose >= 0)
		rec_report(&o);
	return status;
}
