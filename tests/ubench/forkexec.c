/* forkexec: fork and exec must work under recording.  While a worker thread
 * computes, forks a child that execs /bin/echo (status 0 expected) and then a
 * child that computes a little and exits with status 3 through exit().  The
 * parent checks both statuses.  Output (deterministic):
 *   forkexec start
 *   forkexec: echo child says hello        (printed by /bin/echo)
 *   child echo status=0 ok
 *   child compute status=3 ok
 *   forkexec ok
 * Exit 0 iff both children ended as expected. */
#include <sys/wait.h>

#include "ubench.h"

static _Atomic int stop;
static struct ub_slot shared;

static void *worker(void *arg)
{
	(void)arg;
	struct ub_rng r;
	ub_rng_seed(&r, 3, 0);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		shared.w[0] = ub_next(&r);
	return NULL;
}

static int check_child(const char *what, pid_t pid, int want)
{
	int st;
	if (waitpid(pid, &st, 0) != pid) {
		printf("child %s FAILED: waitpid: %s\n", what, strerror(errno));
		return 1;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == want) {
		printf("child %s status=%d ok\n", what, want);
		return 0;
	}
	if (WIFSIGNALED(st))
		printf("child %s FAILED: killed by signal %d, want status %d\n", what, WTERMSIG(st),
		       want);
	else
		printf("child %s FAILED: status %d, want %d\n", what, WEXITSTATUS(st), want);
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t iters = 20000000;
	const struct ub_opt opts[] = { UB_OPT_ITERS(&iters) };
	const struct ub_cli cli = { "forkexec",
		"Forks a child that execs /bin/echo and one that computes and exits 3;\n"
		"-n sets the compute child's loop iterations.", opts, 1 };
	ub_parse(&cli, argc, argv);

	pthread_t wt;
	if (pthread_create(&wt, NULL, worker, NULL)) {
		perror("pthread_create");
		return 1;
	}
	printf("forkexec start\n");
	fflush(stdout);
	int failures = 0;

	pid_t a = fork();
	if (a < 0) {
		perror("fork");
		return 1;
	}
	if (a == 0) {
		execl("/bin/echo", "echo", "forkexec: echo child says hello", (char *)NULL);
		perror("execl /bin/echo");
		_exit(127);
	}
	failures += check_child("echo", a, 0);
	fflush(stdout);

	pid_t b = fork();
	if (b < 0) {
		perror("fork");
		return 1;
	}
	if (b == 0) {
		struct ub_rng r;
		ub_rng_seed(&r, 5, 0);
		for (uint64_t i = 0; i < iters; i++)
			ub_private[0].w[0] = ub_next(&r);
		exit(3);
	}
	failures += check_child("compute", b, 3);

	atomic_store(&stop, 1);
	pthread_join(wt, NULL);
	printf(failures ? "forkexec FAILED\n" : "forkexec ok\n");
	return failures ? 1 : 0;
}
