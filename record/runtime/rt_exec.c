/* exec: the exec'd image is not recorded.
 *
 * exec keeps the pid, so COMMTRACE_PID alone would not stop the new image
 * from recording into the same spool: the interposed exec functions first
 * stop recording (like exit: THREAD_END for every thread, final flush,
 * maps) and then exec with an environment without the COMMTRACE_*
 * variables and without libcommrec.so in LD_PRELOAD.  If the exec fails the
 * program goes on unrecorded (the trace ends there).
 *
 * Other children (fork, posix_spawn, system, popen) get a new pid: the
 * runtime in them sees COMMTRACE_PID != getpid() and stays off (a manual run
 * without COMMTRACE_PID gets it set at start, see rt_main.c). */
#include "rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

static bool is_runtime_path(const char *s, size_t n)
{
	static const char name[] = "libcommrec.so";
	size_t k = sizeof name - 1;
	if (n < k)
		return false;
	/* ".../libcommrec.so" exactly, or the bare name */
	return !memcmp(s + n - k, name, k) && (n == k || s[n - k - 1] == '/');
}

/* env without COMMTRACE_* and without our library in LD_PRELOAD (entries
 * separated by ':' or ' '), built in caller-provided storage: no malloc, so
 * that this is also safe in a vfork() child.  Returns env itself when it
 * does not fit (more than EXEC_ENV_MAX entries, LD_PRELOAD longer than the
 * buffer). */
#define EXEC_ENV_MAX 1024        /* on the stack; larger environments: mmap */
#define EXEC_PRELOAD_MAX 4096

static char *const *clean_env(char *const *env, char **out, char *preload)
{
	size_t n = 0;
	while (env && env[n])
		n++;
	if (n >= EXEC_ENV_MAX) {
		void *m = mmap(NULL, (n + 1) * sizeof *out, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return env;
		out = m;      /* not unmapped if exec fails: rare, small */
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *e = env[i];
		if (!strncmp(e, "COMMTRACE_", 10))
			continue;
		if (!strncmp(e, "LD_PRELOAD=", 11) && strlen(e) < EXEC_PRELOAD_MAX) {
			const char *v = e + 11;
			size_t len = 11, kept = 0;
			memcpy(preload, "LD_PRELOAD=", 11);
			while (*v) {
				size_t w = strcspn(v, ": ");
				if (w && !is_runtime_path(v, w)) {
					if (kept++)
						preload[len++] = ':';
					memcpy(preload + len, v, w);
					len += w;
				}
				v += w;
				if (*v)
					v++;
			}
			preload[len] = 0;
			if (kept)
				out[k++] = preload;
			continue;
		}
		out[k++] = (char *)e;
	}
	out[k] = NULL;
	return out;
}

static void before_exec(void)
{
	if (atomic_load(&rt_active) && getpid() == rt_pid)
		rt_shutdown(0);
}

static int (*real_execve_fn)(const char *, char *const[], char *const[]);
static int (*real_execvpe_fn)(const char *, char *const[], char *const[]);
static int (*real_fexecve_fn)(int, char *const[], char *const[]);

static int do_execve(const char *path, char *const argv[], char *const envp[])
{
	if (!real_execve_fn)
		real_execve_fn = dlsym(RTLD_NEXT, "execve");
	before_exec();
	char *out[EXEC_ENV_MAX], preload[EXEC_PRELOAD_MAX];
	return real_execve_fn(path, argv, clean_env(envp, out, preload));
}

static int do_execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (!real_execvpe_fn)
		real_execvpe_fn = dlsym(RTLD_NEXT, "execvpe");
	before_exec();
	char *out[EXEC_ENV_MAX], preload[EXEC_PRELOAD_MAX];
	return real_execvpe_fn(file, argv, clean_env(envp, out, preload));
}

RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return do_execve(path, argv, envp);
}

RT_EXPORT int execv(const char *path, char *const argv[])
{
	return do_execve(path, argv, environ);
}

RT_EXPORT int execvp(const char *file, char *const argv[])
{
	return do_execvpe(file, argv, environ);
}

RT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return do_execvpe(file, argv, envp);
}

RT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!real_fexecve_fn)
		real_fexecve_fn = dlsym(RTLD_NEXT, "fexecve");
	before_exec();
	char *out[EXEC_ENV_MAX], preload[EXEC_PRELOAD_MAX];
	return real_fexecve_fn(fd, argv, clean_env(envp, out, preload));
}

/* execl*: collect the arguments (on the stack: the count is bounded by
 * ARG_MAX anyway; refuse absurd counts) */
#define EXECL_MAX 4096

#define COLLECT_ARGS(first, ap, argv, n, ok)                       \
	do {                                                          \
		char *f_;  /* declared nonnull, may be NULL in practice */ \
		memcpy(&f_, &(first), sizeof f_);                         \
		(argv)[0] = f_;                                           \
		(n) = 1;                                                  \
		(ok) = true;                                              \
		if (f_)                                                   \
			for (;;) {                                            \
				char *a_ = va_arg(ap, char *);                    \
				if ((n) >= EXECL_MAX) { (ok) = false; break; }   \
				(argv)[(n)++] = a_;                               \
				if (!a_) break;                                   \
			}                                                     \
	} while (0)

RT_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *argv[EXECL_MAX];
	size_t n;
	bool ok;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n, ok);
	va_end(ap);
	if (!ok) {
		errno = E2BIG;
		return -1;
	}
	return do_execve(path, argv, environ);
}

RT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *argv[EXECL_MAX];
	size_t n;
	bool ok;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n, ok);
	va_end(ap);
	if (!ok) {
		errno = E2BIG;
		return -1;
	}
	return do_execvpe(file, argv, environ);
}

RT_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *argv[EXECL_MAX];
	size_t n;
	bool ok;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n, ok);
	char *const *envp = ok ? va_arg(ap, char *const *) : NULL;
	va_end(ap);
	if (!ok) {
		errno = E2BIG;
		return -1;
	}
	return do_execve(path, argv, envp);
}
