/* The runtime's status for the launcher (record/common/rtstatus.h): one
 * page of the spool mapped shared at start (the descriptor is closed at
 * once: nothing is held), updated with atomics from any thread. */
#include "rt.h"
#include "rtstatus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static struct rt_status fallback;        /* when the file cannot be made */
struct rt_status *rt_st = &fallback;

void rt_status_init(void)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/" RT_STATUS_NAME, rt_cfg.spool, (int)rt_pid);
	struct rt_status init = { .magic = RT_STATUS_MAGIC, .version = RT_STATUS_VERSION,
	                          .pid = rt_pid };
	/* a new file: a leftover goes first, a link someone put there fails */
	unlink(path);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto no_file;
	if (write(fd, &init, sizeof init) != (ssize_t)sizeof init) {
		close(fd);
		unlink(path);
		goto no_file;
	}
	void *m = mmap(NULL, sizeof init, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		goto no_file;
	rt_st = m;
	return;
no_file:
	fallback = init;
	rt_log(1, "cannot create %s (%s): the trace will not say which threads were not recorded",
	       path, strerror(errno));
}

void rt_status_unrecorded(enum rt_unrecorded_why why)
{
	__atomic_fetch_add(&rt_st->threads_unrecorded, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rt_st->unrecorded[why], 1, __ATOMIC_RELAXED);
}

void rt_status_thread_started(void)
{
	__atomic_fetch_add(&rt_st->threads_started, 1, __ATOMIC_RELAXED);
}

void rt_status_timer_thread(int why_errno)
{
	if (__atomic_fetch_add(&rt_st->timer_threads, 1, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&rt_st->timer_errno, why_errno, __ATOMIC_RELAXED);
}

void rt_status_timer_sample(uint64_t cpu_ns)
{
	__atomic_fetch_add(&rt_st->timer_samples, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rt_st->timer_cpu_ns, cpu_ns, __ATOMIC_RELAXED);
}

void rt_status_cpu_rings(uint32_t n, bool cpu_wide)
{
	__atomic_store_n(&rt_st->cpu_ring_wide, cpu_wide ? 1u : 0u, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_st->cpu_rings, n, __ATOMIC_RELAXED);
}

void rt_status_ring_unattributed(uint64_t n)
{
	__atomic_store_n(&rt_st->ring_unattributed, n, __ATOMIC_RELAXED);
}

void rt_status_ring_lost_unattributed(uint64_t n)
{
	__atomic_store_n(&rt_st->ring_lost_unattributed, n, __ATOMIC_RELAXED);
}

void rt_status_ring_lost_foreign(uint64_t n)
{
	__atomic_store_n(&rt_st->ring_lost_foreign, n, __ATOMIC_RELAXED);
}

void rt_status_cpu_wp(uint32_t nregs, uint64_t arms, uint64_t hits, uint64_t other)
{
	__atomic_store_n(&rt_st->cpu_wp, nregs, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_st->cpu_wp_arms, arms, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_st->cpu_wp_hits, hits, __ATOMIC_RELAXED);
	__atomic_store_n(&rt_st->cpu_wp_other_hits, other, __ATOMIC_RELAXED);
}
