/* The one perf sample path of the runtime, for every perf-based sampler
 * (soft's per-thread events, pebs, ibs): open the sampler's events on the
 * calling thread, the first one owning the ring and the others writing into
 * it (PERF_EVENT_IOC_SET_OUTPUT), have every overflow signal the thread
 * itself (F_SETOWN_EX F_OWNER_TID + F_SETSIG + O_ASYNC, wakeup_events=1),
 * and in the handler drain the ring: every record goes through rt_perf_rec,
 * which drops the runtime's own samples and hands the rest to the
 * sampler's converter (perf_convert) and rt_sample().  The soft sampler's
 * per-CPU rings (rt_cpusamp.c) use rt_perf_rec too. */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RT_PERF_PAGES_PER_EVENT 4  /* ring data pages per event (a power of two) */
#define KERNEL_IP 0x800000000000ull

extern _Atomic uint8_t rt_fd_ours[65536];

static _Atomic int partial_logged;

void rt_perf_mark_fd(int fd)
{
	if (fd >= 0 && fd < 65536)
		atomic_store(&rt_fd_ours[fd], 1);
}

int rt_perf_route_signal(int fd, pid_t tid)
{
	struct f_owner_ex own = { .type = F_OWNER_TID, .pid = tid };
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETOWN_EX, &own) < 0 || fcntl(fd, F_SETSIG, rt_cfg.sig) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_ASYNC | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* One of the sampler's events on thread t (t itself at its start, or the
 * writer for it), above the program's descriptors and marked ours: its fd,
 * or -errno. */
static int open_event(const struct rt_thread *t, struct perf_event_attr *a)
{
	const struct sampler_ops *ops = t->sampler;
	a->size = sizeof *a;
	a->disabled = 1;
	a->wakeup_events = 1;     /* a signal per sample: watchpoints are armed at it
	                           * (and it keeps PEBS out of its multi-record mode) */
	a->watermark = 0;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->inherit = 0;
	int fd = rt_fd_high(ops->perf_open(a, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
	if (fd < 0)
		return -errno;
	rt_perf_fd_opened(fd);
	rt_perf_mark_fd(fd);
	return fd;
}

static size_t ring_pages(size_t nev)
{
	size_t p = RT_PERF_PAGES_PER_EVENT;
	while (p < RT_PERF_PAGES_PER_EVENT * nev)
		p <<= 1;
	return p;
}

/* The first event: opened, its ring mapped, its signal routed; 0 or -errno. */
static int start_leader(struct rt_thread *t, struct perf_event_attr *a, size_t nev)
{
	int fd = open_event(t, a);
	if (fd < 0)
		return fd;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = ring_pages(nev);
	size_t len = page * (1 + pages);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int rc = m == MAP_FAILED ? -errno : rt_perf_route_signal(fd, t->tid);
	if (rc < 0) {
		if (m != MAP_FAILED)
			munmap(m, len);
		rt_perf_close(fd);
		return rc;
	}
	t->samp_map = m;
	t->samp_map_len = len;
	t->samp_data_len = page * pages;
	perf_sample_fmt_from_attr(a, &t->samp_fmt);
	t->samp_fd = fd;
	return 0;
}

/* Another event, writing into the leader's ring: its fd, or -errno (it is
 * left out: the ring is parsed with the leader's format, so an event that
 * writes other fields cannot share it). */
static int start_follower(struct rt_thread *t, struct perf_event_attr *a,
                          const struct perf_event_attr *lead)
{
	int fd = open_event(t, a);
	if (fd < 0)
		return fd;
	int rc = 0;
	if (a->sample_type != lead->sample_type || a->sample_id_all != lead->sample_id_all)
		rc = -EINVAL;
	else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, t->samp_fd) < 0)
		rc = -errno;
	else
		rc = rt_perf_route_signal(fd, t->tid);
	if (rc < 0) {
		rt_perf_close(fd);
		return rc;
	}
	return fd;
}

/* Remember event fd: its id tells its samples apart in the shared ring
 * (without one, data_src or the decoder give the kind). */
static void add_event(struct rt_thread *t, int fd, uint8_t kind, uint64_t period)
{
	uint64_t id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		id = 0;
	pmu_conv_add_event(&t->samp_conv, id, id ? kind : PMU_KIND_UNKNOWN, period);
}

int rt_perf_thread_start(struct rt_thread *t)
{
	int rc = rt_perf_thread_open(t);
	return rc < 0 ? rc : rt_perf_thread_enable(t);
}

int rt_perf_thread_enable(struct rt_thread *t)
{
	int nmore = atomic_load(&t->samp_nmore);
	for (int i = -1; i < nmore; i++) {
		if (ioctl(i < 0 ? t->samp_fd : t->samp_more_fd[i], PERF_EVENT_IOC_ENABLE, 0) < 0) {
			int e = errno;
			rt_perf_thread_stop(t, 1);
			return -e;
		}
	}
	return 0;
}

int rt_perf_thread_open(struct rt_thread *t)
{
	const struct sampler_ops *ops = t->sampler;
	struct perf_event_attr attrs[RT_PERF_MAX_EVENTS];
	uint8_t kinds[RT_PERF_MAX_EVENTS];
	memset(attrs, 0, sizeof attrs);
	memset(kinds, 0, sizeof kinds);
	size_t n = ops->perf_events(attrs, kinds, RT_PERF_MAX_EVENTS);
	if (n == 0 || n > RT_PERF_MAX_EVENTS)
		return -EINVAL;
	pmu_conv_init(&t->samp_conv, 0);
	atomic_store(&t->samp_nmore, 0);
	int rc = start_leader(t, &attrs[0], n);
	if (rc < 0)
		return rc;
	add_event(t, t->samp_fd, kinds[0], attrs[0].sample_period);
	t->samp_period_max = attrs[0].sample_period * RT_PERF_THROTTLE_MAX;
	int nmore = 0;
	for (size_t i = 1; i < n; i++) {
		int fd = start_follower(t, &attrs[i], &attrs[0]);
		if (fd < 0) {
			if (!atomic_exchange(&partial_logged, 1))
				rt_log(1, "%s: event %zu of %zu left out on thread %u (%s): recording "
				       "without it", ops->name, i + 1, n, t->index, strerror(-fd));
			continue;
		}
		add_event(t, fd, kinds[i], attrs[i].sample_period);
		t->samp_more_fd[nmore++] = fd;
	}
	atomic_store(&t->samp_nmore, nmore);
	return 0;
}

void rt_perf_thread_stop(struct rt_thread *t, int self)
{
	if (t->samp_fd < 0)
		return;
	int nmore = atomic_load(&t->samp_nmore);
	ioctl(t->samp_fd, PERF_EVENT_IOC_DISABLE, 0);
	for (int i = 0; i < nmore; i++)
		ioctl(t->samp_more_fd[i], PERF_EVENT_IOC_DISABLE, 0);
	if (!self)
		return;       /* another thread: a handler may still read the ring */
	atomic_store(&t->samp_nmore, 0);
	for (int i = 0; i < nmore; i++)
		rt_perf_close(t->samp_more_fd[i]);
	int fd = t->samp_fd;
	t->samp_fd = -1;
	if (t->samp_map)
		munmap(t->samp_map, t->samp_map_len);
	t->samp_map = NULL;
	rt_perf_close(fd);
}

void rt_perf_fork_child(struct rt_thread *t)
{
	int nmore = atomic_exchange(&t->samp_nmore, 0);
	for (int i = 0; i < nmore; i++)
		rt_perf_close(t->samp_more_fd[i]);
	rt_perf_close(t->samp_fd);
}

uint64_t rt_perf_lengthen_period(struct rt_thread *t)
{
	struct pmu_conv *c = &t->samp_conv;
	if (t->samp_fd < 0 || c->nev == 0 || c->periods[0] * 2 > t->samp_period_max)
		return 0;
	int nmore = atomic_load(&t->samp_nmore);
	for (int i = -1; i < nmore && (size_t)(i + 1) < c->nev; i++) {
		uint64_t p = c->periods[i + 1] * 2;
		if (ioctl(i < 0 ? t->samp_fd : t->samp_more_fd[i], PERF_EVENT_IOC_PERIOD, &p) < 0)
			return i < 0 ? 0 : c->periods[0];
		c->periods[i + 1] = p;
	}
	return c->periods[0];
}

bool rt_sample_is_runtime(uint64_t ip, uint64_t time, uint64_t prev_start, uint64_t prev_end)
{
	return (ip >= rt_text_lo && ip < rt_text_hi) ||
	       (time && time >= prev_start && time <= prev_end);
}

void rt_perf_rec(struct rt_thread *t, const struct perf_rec *r, uint64_t prev_start,
                 uint64_t prev_end, rt_emit_fn emit)
{
	switch (r->kind) {
	case PERF_REC_SAMPLE: {
		if (rt_sample_is_runtime(r->ip, r->time, prev_start, prev_end)) {
			t->skip_runtime++;
			return;
		}
		struct rt_sample_in s;
		memset(&s, 0, sizeof s);
		s.time = r->time ? r->time : rt_now();
		s.ip = r->ip;
		s.cpu = r->cpu;
		if (r->ip >= KERNEL_IP)
			s.skip = CT_SKIP_KERNEL;
		else
			t->sampler->perf_convert(t, r, &s);
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

void rt_sample_from_pmu(const struct pmu_sample *p, struct rt_sample_in *s)
{
	if (p->time)
		s->time = p->time;
	s->ip = p->ip;
	s->period = p->period;
	s->cpu = p->cpu;
	s->data_src = p->data_src;
	s->weight = p->weight;
	s->skip = p->skip;
	s->acc = p->acc;
	s->extra_flags = p->extra_flags;
}

static void on_rec(void *p, const struct perf_rec *r)
{
	struct rt_thread *t = p;
	rt_perf_rec(t, r, t->hnd_start, t->hnd_end, rt_push);
}

/* One of t's events: its signal carries the event's fd (POLL_*). */
static bool is_ours(const struct rt_thread *t, const siginfo_t *si)
{
	if (si->si_code < POLL_IN || si->si_code > POLL_HUP)
		return false;
	if (si->si_fd == t->samp_fd)
		return true;
	int nmore = atomic_load(&t->samp_nmore);
	for (int i = 0; i < nmore; i++)
		if (si->si_fd == t->samp_more_fd[i])
			return true;
	return false;
}

int rt_perf_on_signal(struct rt_thread *t, siginfo_t *si, void *uc)
{
	(void)uc;
	if (t->samp_fd < 0 || !is_ours(t, si))
		return 0;
	if (!t->samp_map)
		return 1;
	uint64_t start = rt_now();
	perf_ring_drain(t->samp_map, (uint8_t *)t->samp_map + (t->samp_map_len - t->samp_data_len),
	                t->samp_data_len, &t->samp_fmt, t->scratch, sizeof t->scratch, on_rec, t);
	t->hnd_start = start;
	t->hnd_end = rt_now();
	t->hnd_ns += t->hnd_end - start;
	t->hnd_runs++;
	return 1;
}
