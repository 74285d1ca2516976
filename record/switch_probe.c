/* The soft sampler's path probe.  See switch_probe.h. */
#include "switch_probe.h"
#include "soft_attr.h"
#include "wp_probe.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#define CPU_MAX 1024

static uint64_t ns_of(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pthread_barrier_t barrier;

/* The workers start when all of them exist (gate 1), or leave (gate -1). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate;

static void gate_set(int v)
{
	pthread_mutex_lock(&gate_mu);
	gate = v;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

/* A barrier-heavy program in small: a little work, a barrier, again. */
static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&gate_mu);
	while (!gate)
		pthread_cond_wait(&gate_cv, &gate_mu);
	int go = gate > 0;
	pthread_mutex_unlock(&gate_mu);
	if (!go)
		return NULL;
	volatile uint64_t x = 0;
	for (int i = 0; i < SWITCH_PROBE_SWEEPS; i++) {
		for (int k = 0; k < SWITCH_PROBE_WORK; k++)
			x += (uint64_t)k;
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

/* One run: the process CPU time of SWITCH_PROBE_THREADS workers doing
 * SWITCH_PROBE_SWEEPS sweeps, and the context switches they made; 0 when
 * the threads could not run. */
static uint64_t run_once(uint64_t *switches)
{
	pthread_t th[SWITCH_PROBE_THREADS];
	if (pthread_barrier_init(&barrier, NULL, SWITCH_PROBE_THREADS + 1) != 0)
		return 0;
	gate_set(0);
	int n = 0;
	for (; n < SWITCH_PROBE_THREADS; n++)
		if (pthread_create(&th[n], NULL, worker, NULL) != 0)
			break;
	if (n < SWITCH_PROBE_THREADS) {
		/* never start short: the started ones leave before the barrier */
		gate_set(-1);
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&barrier);
		return 0;
	}
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	gate_set(1);
	for (int i = 0; i < SWITCH_PROBE_SWEEPS; i++)
		pthread_barrier_wait(&barrier);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	getrusage(RUSAGE_SELF, &r1);
	pthread_barrier_destroy(&barrier);
	*switches = (uint64_t)(r1.ru_nvcsw - r0.ru_nvcsw + r1.ru_nivcsw - r0.ru_nivcsw);
	return ns_of(r1.ru_utime) + ns_of(r1.ru_stime) - ns_of(r0.ru_utime) - ns_of(r0.ru_stime);
}

/* One inherited task-clock sampling event per CPU (as the runtime's
 * rt_cpusamp.c opens them, at the recording's period, no ring: the samples
 * are dropped); the count opened, or -errno. */
static int open_events(int *fds, int max, uint64_t period_ns)
{
	struct perf_event_attr a;
	probe_task_clock_attr(&a, period_ns);
	a.sample_type |= PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.inherit = 1;
	a.inherit_thread = 1;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int n = 0;
	for (int c = 0; c < ncpu && n < max; c++) {
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue;
			int e = errno;
			while (n > 0)
				close(fds[--n]);
			return -e;
		}
		fds[n++] = fd;
	}
	return n;
}

/* Open and map one CPU-wide ring on CPU c as the runtime does; 0 or errno. */
static int try_cpu_wide(const struct perf_event_attr *a, int c, size_t pages, size_t page)
{
	int fd = (int)syscall(SYS_perf_event_open, a, -1, c, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno;
	void *m = soft_ring_map(fd, &pages, page);
	int e = m == MAP_FAILED ? errno : 0;
	if (m != MAP_FAILED)
		munmap(m, page * (1 + pages));
	close(fd);
	return e;
}

int switch_probe_cpu_wide(uint64_t period_ns)
{
	struct perf_event_attr a;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = soft_ring_attr(&a, true, period_ns, page);
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int e = ENODEV;
	for (int c = 0; c < ncpu && e == ENODEV; c++)
		e = try_cpu_wide(&a, c, pages, page);
	return e;
}

static uint64_t best(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

void switch_probe_run(struct switch_probe *p, uint64_t period_ns)
{
	memset(p, 0, sizeof *p);
	p->period_ns = period_ns;
	uint64_t t0 = mono_ns();
	static int fds[CPU_MAX];
	uint64_t sw = 0;
	for (int round = 0; round < SWITCH_PROBE_ROUNDS; round++) {
		uint64_t cpu = run_once(&sw);
		if (cpu && (!p->plain_ns || cpu < p->plain_ns)) {
			p->plain_ns = cpu;
			p->switches = sw;
		}
		int n = open_events(fds, CPU_MAX, period_ns);
		if (n <= 0) {
			p->open_errno = n < 0 ? -n : ENODEV;
			break;
		}
		p->event_ns = best(p->event_ns, run_once(&sw));
		for (int i = 0; i < n; i++)
			close(fds[i]);
	}
	switch_probe_decide(p);
	p->ns = mono_ns() - t0;
}

void switch_probe_decide(struct switch_probe *p)
{
	int64_t added = p->plain_ns && p->event_ns ? (int64_t)p->event_ns - (int64_t)p->plain_ns : 0;
	/* the best run with the events took less CPU time than the best without:
	 * the difference is the runs' noise, the events cost nothing measurable */
	p->noise = added < 0;
	if (p->noise)
		added = 0;
	p->added_ns = p->switches ? added / (int64_t)p->switches : 0;
	p->added_pct = p->plain_ns ? (int)(added * 100 / (int64_t)p->plain_ns) : 0;
	/* events that do not open: the runtime's own fallback takes the timers
	 * then, and says why (SUMMARY sampler_fallback_reason) */
	p->timer = !p->open_errno && p->added_pct > SWITCH_PROBE_LIMIT_PCT;
}

void switch_probe_detail(const struct switch_probe *p, char *buf, size_t cap)
{
	if (p->open_errno)
		snprintf(buf, cap, "inherited task-clock events do not open (%s): the runtime "
		         "falls back to the timers", strerror(p->open_errno));
	else if (p->noise)
		snprintf(buf, cap, "inherited task-clock events at a %.0f us period: no measurable "
		         "cost (within noise: %.1f ms with them against %.1f ms without, %llu "
		         "switches); limit %d%%", (double)p->period_ns / 1e3, (double)p->event_ns / 1e6,
		         (double)p->plain_ns / 1e6, (unsigned long long)p->switches,
		         SWITCH_PROBE_LIMIT_PCT);
	else
		snprintf(buf, cap, "inherited task-clock events at a %.0f us period add %d%% CPU "
		         "time, %.1f us per context switch (%llu switches: %.1f ms against %.1f ms); "
		         "limit %d%%", (double)p->period_ns / 1e3, p->added_pct,
		         (double)p->added_ns / 1e3, (unsigned long long)p->switches,
		         (double)p->event_ns / 1e6, (double)p->plain_ns / 1e6, SWITCH_PROBE_LIMIT_PCT);
}
