/* sigprog: the program's own signal handling must survive recording.
 * Installs handlers for SIGTRAP, SIGIO and SIGRTMIN..SIGRTMIN+3 (signals a
 * recorder may use itself), then for each signal checks that
 *   - sigaction reports the handler back,
 *   - raise() runs it once in the raising thread, with si_code SI_TKILL,
 *   - pthread_kill() to a busy worker thread runs it in that thread,
 *   - a blocked signal stays pending until unblocked,
 *   - (real-time signals) sigqueue() to the process delivers its value.
 * Prints "signal NAME ok" or "signal NAME FAILED: why" per signal and
 * "sigprog ok" at the end; exit status 0 iff every check passed. */
#include <signal.h>

#include "ubench.h"

#define NSIG_TESTED 6

static _Atomic int hits[NSIG_TESTED];
static _Atomic int last_code[NSIG_TESTED];
static _Atomic int last_value[NSIG_TESTED];
static _Atomic pid_t last_tid[NSIG_TESTED];
static int signo[NSIG_TESTED];
static const char *names[NSIG_TESTED];

static _Atomic int stop_worker;
static _Atomic pid_t worker_tid;
static volatile uint64_t sink;

static int slot_of(int sig)
{
	for (int i = 0; i < NSIG_TESTED; i++)
		if (signo[i] == sig)
			return i;
	return -1;
}

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int i = slot_of(sig);
	if (i < 0 || si->si_signo != sig)
		return;
	atomic_store(&last_code[i], si->si_code);
	atomic_store(&last_value[i], si->si_value.sival_int);
	atomic_store(&last_tid[i], gettid());
	atomic_fetch_add(&hits[i], 1);
}

static void *worker(void *arg)
{
	(void)arg;
	struct ub_rng r;
	ub_rng_seed(&r, 7, 0);
	atomic_store(&worker_tid, gettid());
	while (!atomic_load_explicit(&stop_worker, memory_order_relaxed))
		sink = ub_next(&r);    /* busy, so samplers have something to sample */
	return NULL;
}

/* Waits up to ~2 s for hits[i] to reach want (delivery to another thread is
 * asynchronous). */
static int wait_hits(int i, int want)
{
	for (int k = 0; k < 2000 && atomic_load(&hits[i]) < want; k++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return atomic_load(&hits[i]);
}

int main(int argc, char **argv)
{
	const struct ub_cli cli = { "sigprog",
		"Checks that the program's own handlers for SIGTRAP, SIGIO and\n"
		"SIGRTMIN..SIGRTMIN+3 keep working (exit 0 iff they all do).", NULL, 0 };
	ub_parse(&cli, argc, argv);

	static char rtname[4][16];
	signo[0] = SIGTRAP; names[0] = "SIGTRAP";
	signo[1] = SIGIO; names[1] = "SIGIO";
	for (int k = 0; k < 4; k++) {
		signo[2 + k] = SIGRTMIN + k;
		snprintf(rtname[k], sizeof rtname[k], "SIGRTMIN+%d", k);
		names[2 + k] = rtname[k];
	}

	pthread_t wt;
	if (pthread_create(&wt, NULL, worker, NULL)) {
		perror("pthread_create");
		return 1;
	}
	while (!atomic_load(&worker_tid))
		sched_yield();

	int failures = 0;
	for (int i = 0; i < NSIG_TESTED; i++) {
		int sig = signo[i];
		char why[200] = "";
		struct sigaction sa, cur;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(sig, &sa, NULL) != 0) {
			snprintf(why, sizeof why, "sigaction: %s", strerror(errno));
			goto done;
		}
		if (sigaction(sig, NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) ||
		    cur.sa_sigaction != handler) {
			snprintf(why, sizeof why, "sigaction does not report the handler back");
			goto done;
		}
		/* 1. raise in this thread: synchronous */
		raise(sig);
		if (atomic_load(&hits[i]) != 1) {
			snprintf(why, sizeof why, "raise: handler ran %d times, want 1",
			         atomic_load(&hits[i]));
			goto done;
		}
		if (atomic_load(&last_code[i]) != SI_TKILL || atomic_load(&last_tid[i]) != gettid()) {
			snprintf(why, sizeof why, "raise: si_code %d tid %d, want %d tid %d",
			         atomic_load(&last_code[i]), (int)atomic_load(&last_tid[i]),
			         SI_TKILL, (int)gettid());
			goto done;
		}
		/* 2. to the busy worker */
		pthread_kill(wt, sig);
		if (wait_hits(i, 2) != 2 || atomic_load(&last_tid[i]) != atomic_load(&worker_tid)) {
			snprintf(why, sizeof why, "pthread_kill: handler ran %d times (want 2), in tid %d "
			         "(want the worker's %d)", atomic_load(&hits[i]),
			         (int)atomic_load(&last_tid[i]), (int)atomic_load(&worker_tid));
			goto done;
		}
		/* 3. blocked: pending until unblocked */
		sigset_t set, old;
		sigemptyset(&set);
		sigaddset(&set, sig);
		pthread_sigmask(SIG_BLOCK, &set, &old);
		raise(sig);
		sigset_t pend;
		sigpending(&pend);
		int early = atomic_load(&hits[i]) != 2 || !sigismember(&pend, sig);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (early || atomic_load(&hits[i]) != 3) {
			snprintf(why, sizeof why, "blocked signal: %s (handler ran %d times, want 3)",
			         early ? "ran or was not pending while blocked" : "lost after unblocking",
			         atomic_load(&hits[i]));
			goto done;
		}
		/* 4. real-time: sigqueue to the process with a value */
		if (sig >= SIGRTMIN) {
			union sigval v = { .sival_int = 1000 + i };
			if (sigqueue(getpid(), sig, v) != 0) {
				snprintf(why, sizeof why, "sigqueue: %s", strerror(errno));
				goto done;
			}
			if (wait_hits(i, 4) != 4 || atomic_load(&last_code[i]) != SI_QUEUE ||
			    atomic_load(&last_value[i]) != 1000 + i) {
				snprintf(why, sizeof why, "sigqueue: ran %d times (want 4), si_code %d (want "
				         "%d), value %d (want %d)", atomic_load(&hits[i]),
				         atomic_load(&last_code[i]), SI_QUEUE, atomic_load(&last_value[i]),
				         1000 + i);
				goto done;
			}
		}
	done:
		if (why[0]) {
			printf("signal %s FAILED: %s\n", names[i], why);
			failures++;
		} else {
			printf("signal %s ok\n", names[i]);
		}
	}
	atomic_store(&stop_worker, 1);
	pthread_join(wt, NULL);
	printf(failures ? "sigprog FAILED: %d signal(s)\n" : "sigprog ok\n", failures);
	return failures ? 1 : 0;
}
