/* Generic perf-ring sampling for one thread: open the sampler's event on
 * the calling thread, map its ring, have every overflow signal the thread
 * itself (F_SETOWN_EX F_OWNER_TID + F_SETSIG + O_ASYNC, wakeup_events=1),
 * and in the handler drain the ring and feed each sample to rt_sample(). */
#include "rt.h"
#include "pmu_sample.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RT_PERF_DATA_PAGES 4

extern _Atomic uint8_t rt_fd_ours[65536];

void rt_perf_mark_fd(int fd)
{
	if (fd >= 0 && fd < 65536)
		atomic_store(&rt_fd_ours[fd], 1);
}

int rt_perf_open(struct perf_event_attr *a, pid_t tid)
{
	int fd = rt_fd_high((int)syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
	(void)tid;
	rt_perf_fd_opened(fd);
	if (fd >= 0 && fd < 65536)
		atomic_store(&rt_fd_ours[fd], 1);
	return fd;
}

int rt_perf_route_signal(int fd, pid_t tid)
{
	struct f_owner_ex own = { .type = F_OWNER_TID, .pid = tid };
	if (fcntl(fd, F_SETOWN_EX, &own) < 0 || fcntl(fd, F_SETSIG, rt_cfg.sig) < 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int rt_perf_thread_start(struct rt_thread *t, const struct sampler_ops *ops)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	ops->fill_attr(&a);
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	int fd = rt_perf_open(&a, t->tid);
	if (fd < 0)
		return -errno;
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)page * (1 + RT_PERF_DATA_PAGES);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	int rc = rt_perf_route_signal(fd, t->tid);
	if (rc < 0) {
		munmap(m, len);
		close(fd);
		return rc;
	}
	t->samp_map = m;
	t->samp_map_len = len;
	t->samp_data_len = (size_t)page * RT_PERF_DATA_PAGES;
	t->samp_fmt.sample_type = a.sample_type;
	t->samp_fmt.regs_user_mask = a.sample_regs_user;
	t->samp_fmt.read_format = a.read_format;
	t->samp_fmt.sample_id_all = a.sample_id_all;
	t->samp_fd = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		int e = errno;
		rt_perf_thread_stop(t, 1);
		return -e;
	}
	return 0;
}

void rt_perf_thread_stop(struct rt_thread *t, int self)
{
	if (t->samp_fd < 0)
		return;
	ioctl(t->samp_fd, PERF_EVENT_IOC_DISABLE, 0);
	if (!self)
		return;       /* another thread: a handler may still read the ring */
	int fd = t->samp_fd;
	t->samp_fd = -1;
	if (t->samp_map)
		munmap(t->samp_map, t->samp_map_len);
	t->samp_map = NULL;
	rt_perf_close(fd);
}

/* One record of thread t's perf samples, from either path: its own ring in
 * its signal handler (emit = rt_push), or a CPU ring in the writer
 * (rt_cpusamp.c).  Samples inside [prev_start, prev_end] (the thread's
 * previous handler run) or in the runtime's code are the runtime's own. */
void rt_perf_rec(struct rt_thread *t, const struct sampler_ops *ops, const struct perf_rec *r,
                 uint64_t prev_start, uint64_t prev_end, rt_emit_fn emit)
{
	switch (r->kind) {
	case PERF_REC_SAMPLE: {
		struct rt_sample_in s;
		memset(&s, 0, sizeof s);
		s.time = r->time;
		s.ip = r->ip;
		s.cpu = r->cpu;
		s.period = ops->rec_period(t, r);
		if (r->ip >= 0x800000000000ull) {
			s.skip = CT_SKIP_KERNEL;
		} else if ((r->ip >= rt_text_lo && r->ip < rt_text_hi) ||
		           (r->time >= prev_start && r->time <= prev_end)) {
			/* in the runtime itself (its code, or during its previous
			 * signal handler): not the program's access */
			t->skip_runtime++;
			return;
		} else {
			s.skip = ops->rec_access(t, r, &s.acc);
		}
		rt_sample_to(t, &s, emit);
		break;
	}
	case PERF_REC_LOST:
	case PERF_REC_THROTTLE: {
		struct ct_record l;
		pmu_lost_record(r, rt_now(), &l);
		if (r->kind == PERF_REC_LOST)
			t->pmu_lost += r->lost;
		else
			t->pmu_throttle++;
		emit(t, &l);
		break;
	}
	default:
		break;
	}
}

struct drain_ctx {
	struct rt_thread *t;
	const struct sampler_ops *ops;
	uint64_t prev_start, prev_end;
};

static void on_rec(void *p, const struct perf_rec *r)
{
	struct drain_ctx *c = p;
	rt_perf_rec(c->t, c->ops, r, c->prev_start, c->prev_end, rt_push);
}

int rt_perf_on_signal(struct rt_thread *t, siginfo_t *si, void *uc, const struct sampler_ops *ops)
{
	(void)uc;
	if (si->si_fd != t->samp_fd || !t->samp_map)
		return 0;
	struct drain_ctx c = { t, ops, t->hnd_start, t->hnd_end };
	uint64_t start = rt_now();
	perf_ring_drain(t->samp_map, (uint8_t *)t->samp_map + (t->samp_map_len - t->samp_data_len),
	                t->samp_data_len, &t->samp_fmt,
	                t->scratch, sizeof t->scratch, on_rec, &c);
	t->hnd_start = start;
	t->hnd_end = rt_now();
	t->hnd_ns += t->hnd_end - start;
	t->hnd_runs++;
	return 1;
}
