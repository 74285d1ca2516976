/* Running the program: find it and the runtime, set the COMMTRACE_*
 * environment (record/common/rtconfig.h), fork, exec, forward signals, wait. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commrec.h"

#define RUNTIME_NAME "libcommrec.so"

uint64_t rec_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 0 executable regular file, else errno (EACCES for directories). */
static int check_exec(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
		return EACCES;
	return 0;
}

int rec_find_program(const char *name, char *out, size_t cap)
{
	int err;
	if (strchr(name, '/')) {
		err = check_exec(name);
		if (!err) {
			snprintf(out, cap, "%s", name);
			return 0;
		}
		rec_err("%s: %s", name, err == EISDIR ? "is a directory" : strerror(err));
		return err == ENOENT || err == ENOTDIR ? REC_EXIT_NOTFOUND : REC_EXIT_NOEXEC;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	bool denied = false;
	for (const char *p = path;; ) {
		const char *colon = strchr(p, ':');
		size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
		char cand[PATH_MAX];
		int n = dlen ? snprintf(cand, sizeof cand, "%.*s/%s", (int)dlen, p, name)
		             : snprintf(cand, sizeof cand, "./%s", name);
		if (n > 0 && (size_t)n < sizeof cand) {
			err = check_exec(cand);
			if (!err) {
				snprintf(out, cap, "%s", cand);
				return 0;
			}
			if (err == EACCES)
				denied = true;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	if (denied) {
		rec_err("%s: permission denied", name);
		return REC_EXIT_NOEXEC;
	}
	rec_err("%s: command not found", name);
	return REC_EXIT_NOTFOUND;
}

static bool usable_runtime(const char *cand, char *out, size_t cap)
{
	char real[PATH_MAX];
	if (access(cand, R_OK) < 0 || !realpath(cand, real))
		return false;
	snprintf(out, cap, "%s", real);
	return true;
}

int rec_find_runtime(char *out, size_t cap)
{
	const char *env = getenv(CT_ENV_RUNTIME);
	if (env && *env) {
		if (usable_runtime(env, out, cap))
			return 0;
		rec_err("%s=%s: %s", CT_ENV_RUNTIME, env, strerror(errno));
		return -1;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		rec_err("cannot find the runtime %s (/proc/self/exe: %s): set %s to its path",
		        RUNTIME_NAME, strerror(errno), CT_ENV_RUNTIME);
		return -1;
	}
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	char cand1[PATH_MAX + 32], cand2[PATH_MAX + 32];
	snprintf(cand1, sizeof cand1, "%s/%s", exe, RUNTIME_NAME);
	snprintf(cand2, sizeof cand2, "%s/../lib/commtrace/%s", exe, RUNTIME_NAME);
	if (usable_runtime(cand1, out, cap) || usable_runtime(cand2, out, cap))
		return 0;
	rec_err("cannot find the runtime %s (looked for %s and %s): build it (make) or set %s",
	        RUNTIME_NAME, cand1, cand2, CT_ENV_RUNTIME);
	return -1;
}

/* Does the program at path carry the commtrace runtime itself?  True if it
 * needs libcommrec-inst.so (DT_NEEDED) or defines the marker symbol
 * commtrace_inst_runtime in .dynsym (commrec-cc --static-runtime exports
 * it).  Reads the section headers (.dynamic, .dynsym and their string
 * tables survive strip). */
bool rec_program_has_inst_runtime(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	bool found = false;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return false;
	}
	size_t n = (size_t)st.st_size;
	const unsigned char *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return false;
	const Elf64_Ehdr *eh = (const void *)m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > n ||
	    (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > n - eh->e_shoff)
		goto out;
	const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
#define SEC_OK(s) ((s)->sh_offset <= n && (s)->sh_size <= n - (s)->sh_offset)
	for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
		const Elf64_Shdr *s = &sh[i];
		if ((s->sh_type != SHT_DYNAMIC && s->sh_type != SHT_DYNSYM) || !SEC_OK(s) ||
		    s->sh_link >= eh->e_shnum || !SEC_OK(&sh[s->sh_link]))
			continue;
		const char *str = (const char *)m + sh[s->sh_link].sh_offset;
		size_t strsz = sh[s->sh_link].sh_size;
		if (s->sh_type == SHT_DYNAMIC) {
			const Elf64_Dyn *d = (const void *)(m + s->sh_offset);
			for (size_t k = 0; k < s->sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++)
				if (d[k].d_tag == DT_NEEDED && d[k].d_un.d_val < strsz &&
				    !strncmp(str + d[k].d_un.d_val, "libcommrec-inst.so",
				             strsz - d[k].d_un.d_val))
					found = true;
		} else {
			const Elf64_Sym *y = (const void *)(m + s->sh_offset);
			for (size_t k = 0; k < s->sh_size / sizeof *y; k++)
				if (y[k].st_shndx != SHN_UNDEF && y[k].st_name < strsz &&
				    !strncmp(str + y[k].st_name, "commtrace_inst_runtime",
				             strsz - y[k].st_name))
					found = true;
		}
	}
#undef SEC_OK
out:
	munmap((void *)m, n);
	return found;
}

/* ---- signals ------------------------------------------------------------ */

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NFWD (sizeof forwarded / sizeof forwarded[0])
static volatile sig_atomic_t child_pid;

/* A signal sent to commrec alone (kill, timeout(1), a supervisor) is passed
 * on to the program.  Signals from the terminal (^C, ^\) are not: they go to
 * the whole foreground process group, so the program got its own. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	pid_t pid = child_pid;
	if (pid > 0 && si && si->si_code != SI_KERNEL && si->si_pid != pid)
		kill(pid, sig);
	errno = saved;
}

/* ---- environment -------------------------------------------------------- */

static const char *const contract_vars[] = {
	CT_ENV_SPOOL, CT_ENV_SAMPLER, CT_ENV_PERIOD, CT_ENV_EVENTS, CT_ENV_PMU_ATTRS, CT_ENV_WATCHPOINTS,
	CT_ENV_WP_SOFT, CT_ENV_WP_LINES, CT_ENV_WP_LIFE, CT_ENV_WP_SWITCH_NS, CT_ENV_WP_OPEN_SWITCH_NS,
	CT_ENV_SOFT_EVENT_SWITCH_NS, CT_ENV_THROTTLE, CT_ENV_BOARD, CT_ENV_LINE_SIZE, CT_ENV_NO_ALLOC, CT_ENV_FULL, CT_ENV_VERBOSE,
	CT_ENV_PID, CT_ENV_OWNER_WINDOW, CT_ENV_WP_CPU, CT_ENV_SOFT_CPU_WIDE,
};

static int setenv_int(const char *name, long long v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", v);
	return setenv(name, buf, 1);
}

/* In the child, before exec. 0 or -1 (errno set). */
static int child_env(const struct rec_opts *o, const char *spool, const char *runtime)
{
	for (size_t i = 0; i < sizeof contract_vars / sizeof contract_vars[0]; i++)
		unsetenv(contract_vars[i]);
	int verbose = o->verbose < 0 ? 0 : 1 + o->verbose;
	if (setenv(CT_ENV_SPOOL, spool, 1) || setenv(CT_ENV_SAMPLER, o->sampler_used, 1) ||
	    setenv_int(CT_ENV_PERIOD, (long long)o->period_used) ||
	    (o->events_joined[0] && setenv(CT_ENV_EVENTS, o->events_joined, 1)) ||
	    (o->pmu_attrs[0] && setenv(CT_ENV_PMU_ATTRS, o->pmu_attrs, 1)) ||
	    setenv_int(CT_ENV_WATCHPOINTS, o->wp_used) ||
	    (o->wp_soft && (setenv(CT_ENV_WP_SOFT, "1", 1) ||
	                    setenv_int(CT_ENV_WP_LINES, o->watch_lines) ||
	                    setenv_int(CT_ENV_WP_LIFE, o->watch_life))) ||
	    setenv_int(CT_ENV_WP_SWITCH_NS, (long long)o->wp_switch_ns) ||
	    setenv_int(CT_ENV_WP_OPEN_SWITCH_NS, (long long)o->wp_open_switch_ns) ||
	    setenv_int(CT_ENV_SOFT_EVENT_SWITCH_NS, (long long)o->soft_event_switch_ns) ||
	    (!strcmp(o->sampler_used, "soft") && setenv(CT_ENV_SOFT_TIMER, o->soft_timer ? "1" : "0", 1)) ||
	    (!strcmp(o->sampler_used, "soft") &&
	     setenv(CT_ENV_SOFT_CPU_WIDE, o->soft_cpu_wide ? "1" : "0", 1)) ||
	    (o->wp_cpu && setenv(CT_ENV_WP_CPU, "1", 1)) ||
	    setenv_int(CT_ENV_THROTTLE, (long long)(o->throttle_share * 100 + 0.5)) ||
	    setenv_int(CT_ENV_BOARD, o->board_size) ||
	    setenv_int(CT_ENV_LINE_SIZE, o->line_size_used) ||
	    (o->no_alloc && setenv(CT_ENV_NO_ALLOC, "1", 1)) ||
	    (o->full && setenv(CT_ENV_FULL, o->full_all ? "all" : "1", 1)) ||
	    (o->owner_window && setenv_int(CT_ENV_OWNER_WINDOW, (long long)o->owner_window)) ||
	    setenv_int(CT_ENV_VERBOSE, verbose) ||
	    setenv_int(CT_ENV_PID, getpid()))
		return -1;
	if (!runtime)
		return 0;            /* the program links the runtime (commrec-cc) */
	const char *old = getenv("LD_PRELOAD");
	if (old && *old) {
		size_t n = strlen(runtime) + 1 + strlen(old) + 1;
		char *v = malloc(n);
		if (!v)
			return -1;
		snprintf(v, n, "%s:%s", runtime, old);
		return setenv("LD_PRELOAD", v, 1);
	}
	return setenv("LD_PRELOAD", runtime, 1);
}

int rec_run_program(const struct rec_opts *o, const char *path, const char *spool,
                    const char *runtime, struct rec_run *run)
{
	memset(run, 0, sizeof *run);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		rec_err("pipe: %s", strerror(errno));
		return -1;
	}
	struct sigaction sa, old_sa[NFWD];
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigset_t block, old_mask;
	sigemptyset(&block);
	for (size_t i = 0; i < NFWD; i++) {
		sigaddset(&block, forwarded[i]);
		sigaddset(&sa.sa_mask, forwarded[i]);
	}
	/* Blocked across fork: the child restores the defaults before any of
	 * them can reach it, the parent knows the child's pid before its
	 * handler can run. */
	sigprocmask(SIG_BLOCK, &block, &old_mask);
	for (size_t i = 0; i < NFWD; i++)
		sigaction(forwarded[i], &sa, &old_sa[i]);

	fflush(NULL);
	run->start_ns = rec_now_ns();
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		for (size_t i = 0; i < NFWD; i++)
			sigaction(forwarded[i], &old_sa[i], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		close(pfd[0]);
		close(pfd[1]);
		rec_err("fork: %s", strerror(err));
		return -1;
	}
	if (pid == 0) {
		for (size_t i = 0; i < NFWD; i++)
			sigaction(forwarded[i], &old_sa[i], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		close(pfd[0]);
		int err = 0;
		if (child_env(o, spool, runtime) < 0)
			err = errno ? errno : ENOMEM;
		else {
			execv(path, o->argv);
			err = errno;
			if (err == ENOEXEC) {
				/* Like a shell (and execvp): an executable text file
				 * without #! is a shell script. */
				char **av = calloc((size_t)o->argc + 2, sizeof *av);
				if (av) {
					av[0] = (char *)"/bin/sh";
					av[1] = (char *)path;
					for (int i = 1; i < o->argc; i++)
						av[i + 1] = o->argv[i];
					execv("/bin/sh", av);
				}
			}
		}
		ssize_t w = write(pfd[1], &err, sizeof err);
		(void)w;
		_exit(err == ENOENT ? REC_EXIT_NOTFOUND : REC_EXIT_NOEXEC);
	}
	child_pid = pid;
	run->pid = pid;
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	close(pfd[1]);
	rec_info(1, "started %s (pid %d)", path, (int)pid);

	int err = 0;
	ssize_t n;
	do
		n = read(pfd[0], &err, sizeof err);
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == (ssize_t)sizeof err)
		run->exec_errno = err ? err : EINVAL;

	int status = 0;
	struct rusage ru;
	pid_t w;
	memset(&ru, 0, sizeof ru);
	do
		w = wait4(pid, &status, 0, &ru);
	while (w < 0 && errno == EINTR);
	run->end_ns = rec_now_ns();
	child_pid = 0;
	for (size_t i = 0; i < NFWD; i++)
		sigaction(forwarded[i], &old_sa[i], NULL);
	if (w < 0) {
		rec_err("wait4: %s", strerror(errno));
		return -1;
	}
	run->status = status;
	run->utime_ns = (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u;
	run->stime_ns = (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u;
	run->maxrss_kb = ru.ru_maxrss;
	return 0;
}
