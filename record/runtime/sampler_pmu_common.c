/* Hardware samplers (pebs, ibs): per-thread events sharing one ring, the
 * signal of every event routed to its thread, the ring drained in the
 * handler through the pure converter of record/common/pmu_sample.c.
 * See sampler_pmu.h and commrec(1), section "Hardware samplers".
 *
 * Why not the generic rt_perf path: it opens one event per thread from
 * fill_attr (no precise_ip fallback, no IBS exclude_kernel retry), its
 * on_signal only accepts t->samp_fd, and its sample callback has no room
 * for data_src / weight.  The leader event still lives in t->samp_fd /
 * t->samp_map / t->samp_fmt, so the rest of the runtime (fork handler,
 * signal dispatch by si_fd == t->samp_fd) treats it as it treats the soft
 * sampler's event. */
#include "sampler_pmu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pmu.h"
#include "rtconfig.h"

#define RT_PMU_DATA_PAGES 8        /* ring data pages (two events may share it) */

extern _Atomic uint8_t rt_fd_ours[65536];   /* rt_signal.c */

/* One thread's events and converter.  Reached from the signal handler
 * through thr_self (TLS), from other threads (stop at process exit, fork)
 * through slots[].  States are never unmapped, only recycled (owner NULL =
 * free): a thread stopping another one at process exit may still be
 * looking at a state while its owner ends. */
struct pmu_thr {
	struct rt_thread *_Atomic owner;
	struct rt_thread *t;           /* == owner while in use */
	_Atomic int nfd;
	int fd[PMU_CONV_MAX_EVENTS];   /* fd[0]: the leader (== t->samp_fd) */
	uint64_t prev_start, prev_end; /* the previous handler run */
	struct pmu_conv conv;
};

#define THR_BYTES ((sizeof(struct pmu_thr) + 4095) & ~(size_t)4095)

static struct pmu_thr *_Atomic slots[RT_MAX_THREADS];
static RT_TLS struct pmu_thr *thr_self;
static _Atomic int partial_logged;

uint64_t rt_pmu_period(void)
{
	const char *s = getenv(CT_ENV_PERIOD);
	if (s && *s && rt_cfg.period)
		return rt_cfg.period;
	return RT_PMU_PERIOD_DEFAULT;
}

static void fd_mark(int fd)
{
	if (fd >= 0 && fd < 65536)
		atomic_store(&rt_fd_ours[fd], 1);
}

static int route_signal(int fd, pid_t tid)
{
	struct f_owner_ex own = { .type = F_OWNER_TID, .pid = tid };
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETOWN_EX, &own) < 0 || fcntl(fd, F_SETSIG, rt_cfg.sig) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_ASYNC | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* A free state (recycled, or a new one), owned by t; NULL when none. */
static struct pmu_thr *thr_get(struct rt_thread *t)
{
	struct pmu_thr *s = NULL;
	for (size_t i = 0; i < RT_MAX_THREADS && !s; i++) {
		struct pmu_thr *c = atomic_load(&slots[i]);
		if (!c)
			break;
		struct rt_thread *none = NULL;
		if (atomic_compare_exchange_strong(&c->owner, &none, t))
			s = c;
	}
	if (!s) {
		struct pmu_thr *c = mmap(NULL, THR_BYTES, PROT_READ | PROT_WRITE,
		                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
		atomic_store(&c->owner, t);
		for (size_t i = 0; i < RT_MAX_THREADS && !s; i++) {
			struct pmu_thr *none = NULL;
			if (atomic_compare_exchange_strong(&slots[i], &none, c))
				s = c;
		}
		if (!s) {
			munmap(c, THR_BYTES);
			return NULL;
		}
	}
	s->t = t;
	atomic_store(&s->nfd, 0);
	s->prev_start = s->prev_end = 0;
	return s;
}

static void thr_put(struct pmu_thr *s)
{
	s->t = NULL;
	atomic_store(&s->owner, NULL);
}

static struct pmu_thr *find_thr(struct rt_thread *t)
{
	struct pmu_thr *s = thr_self;
	if (s && s->t == t)
		return s;
	for (size_t i = 0; i < RT_MAX_THREADS; i++) {
		s = atomic_load(&slots[i]);
		if (!s)
			break;
		if (atomic_load(&s->owner) == t)
			return s;
	}
	return NULL;
}

/* ---- drain callbacks (signal handler context) ------------------------------------ */

static bool drop_runtime(void *ctx, const struct perf_rec *r)
{
	struct pmu_thr *s = ctx;
	struct rt_thread *t = s->t;
	if ((r->ip >= rt_text_lo && r->ip < rt_text_hi) ||
	    (r->time && r->time >= s->prev_start && r->time <= s->prev_end)) {
		/* in the runtime itself (its code, or during its previous
		 * signal handler): not the program's access */
		t->skip_runtime++;
		return true;
	}
	return false;
}

static void on_sample(void *ctx, const struct pmu_sample *p)
{
	struct pmu_thr *s = ctx;
	struct rt_sample_in in;
	memset(&in, 0, sizeof in);
	in.time = p->time ? p->time : rt_now();
	in.ip = p->ip;
	in.period = p->period;
	in.cpu = p->cpu;
	in.data_src = p->data_src;
	in.weight = p->weight;
	in.skip = p->skip;
	in.acc = p->acc;
	in.extra_flags = p->extra_flags;
	rt_sample(s->t, &in);
}

static void on_lost(void *ctx, const struct ct_record *l)
{
	struct pmu_thr *s = ctx;
	if (l->u.lost.reason == CT_LOST_THROTTLE)
		s->t->pmu_throttle++;
	else
		s->t->pmu_lost += l->u.lost.count;
	rt_push(s->t, l);
}

/* ---- thread start / stop ------------------------------------------------------------ */

int rt_pmu_thread_start(struct rt_thread *t, const struct perf_event_attr *attrs,
                        const uint8_t *kinds, size_t n, int mode, rt_pmu_open_fn open_fn,
                        const char *name)
{
	if (n == 0)
		return -EINVAL;
	if (n > PMU_CONV_MAX_EVENTS)
		n = PMU_CONV_MAX_EVENTS;
	struct pmu_thr *s = thr_get(t);
	if (!s)
		return -ENOMEM;
	int nfd = 0;
	pmu_conv_init(&s->conv, mode);
	s->conv.pre = drop_runtime;
	s->conv.on_sample = on_sample;
	s->conv.on_lost = on_lost;
	s->conv.ctx = s;

	long page = sysconf(_SC_PAGESIZE);
	size_t map_len = (size_t)page * (1 + RT_PMU_DATA_PAGES);
	void *map = NULL;
	struct perf_event_attr lead;
	memset(&lead, 0, sizeof lead);
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		struct perf_event_attr a = attrs[i];
		a.size = sizeof a;
		a.disabled = 1;
		a.wakeup_events = 1;     /* a signal per sample: watchpoints need it now
		                          * (and it keeps PEBS out of its multi-record mode) */
		a.watermark = 0;
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC;
		a.inherit = 0;
		int fd = open_fn(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = errno;
			if (i == 0)
				break;
			if (!atomic_exchange(&partial_logged, 1))
				rt_log(1, "%s: event %zu of %zu did not open on thread %u (%s): "
				       "recording without it", name, i + 1, n, t->index, strerror(err));
			continue;
		}
		fd_mark(fd);
		uint64_t id = 0;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
			id = 0;
		if (i == 0) {
			map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (map == MAP_FAILED) {
				err = errno;
				map = NULL;
				close(fd);
				break;
			}
			lead = a;
		} else if (a.sample_type != lead.sample_type || a.sample_id_all != lead.sample_id_all ||
		           ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->fd[0]) < 0) {
			/* the ring is parsed with the leader's format: events
			 * sharing it must write the same fields */
			err = a.sample_type != lead.sample_type ? EINVAL : errno;
			if (!atomic_exchange(&partial_logged, 1))
				rt_log(1, "%s: event %zu of %zu cannot share the ring on thread %u (%s): "
				       "recording without it", name, i + 1, n, t->index, strerror(err));
			close(fd);
			continue;
		}
		int rc = route_signal(fd, t->tid);
		if (rc < 0) {
			err = -rc;
			close(fd);
			if (i == 0) {
				munmap(map, map_len);
				map = NULL;
				break;
			}
			continue;
		}
		s->fd[nfd++] = fd;
		/* without an id (PERF_EVENT_IOC_ID failed) samples cannot be
		 * told apart: data_src / the decoder give the kind */
		pmu_conv_add_event(&s->conv, id, kinds && id ? kinds[i] : PMU_KIND_UNKNOWN,
		                   a.sample_period);
	}
	if (nfd == 0) {
		if (map)
			munmap(map, map_len);
		thr_put(s);
		return -(err ? err : EINVAL);
	}
	atomic_store(&s->nfd, nfd);
	t->samp_map = map;
	t->samp_map_len = map_len;
	t->samp_data_len = (size_t)page * RT_PMU_DATA_PAGES;
	perf_sample_fmt_from_attr(&lead, &t->samp_fmt);
	t->samp_fd = s->fd[0];
	thr_self = s;
	for (int i = 0; i < nfd; i++) {
		if (ioctl(s->fd[i], PERF_EVENT_IOC_ENABLE, 0) < 0) {
			err = errno;
			rt_pmu_thread_stop(t, 1);
			return -err;
		}
	}
	return 0;
}

void rt_pmu_thread_stop(struct rt_thread *t, int self)
{
	struct pmu_thr *s = find_thr(t);
	if (!s)
		return;
	int nfd = atomic_load(&s->nfd);
	for (int i = 0; i < nfd; i++)
		ioctl(s->fd[i], PERF_EVENT_IOC_DISABLE, 0);
	if (!self)
		return;       /* another thread: a handler may still read the ring */
	atomic_store(&s->nfd, 0);
	if (thr_self == s)
		thr_self = NULL;
	/* the leader goes with t->samp_fd (closed below), the others here */
	for (int i = 1; i < nfd; i++)
		close(s->fd[i]);
	int fd = t->samp_fd;
	t->samp_fd = -1;
	if (t->samp_map)
		munmap(t->samp_map, t->samp_map_len);
	t->samp_map = NULL;
	if (fd >= 0)
		close(fd);
	thr_put(s);
}

/* ---- signal ------------------------------------------------------------------------------ */

int rt_pmu_on_signal(struct rt_thread *t, siginfo_t *si, void *uc)
{
	(void)uc;
	if (si->si_code == SI_TIMER)
		return 0;
	struct pmu_thr *s = thr_self;
	if (!s || s->t != t)
		return 0;
	bool mine = false;
	int nfd = atomic_load(&s->nfd);
	for (int i = 0; i < nfd; i++)
		if (si->si_fd == s->fd[i])
			mine = true;
	if (!mine)
		return 0;
	if (!t->samp_map)
		return 1;
	uint64_t start = rt_now();
	perf_ring_drain(t->samp_map, (uint8_t *)t->samp_map + (t->samp_map_len - t->samp_data_len),
	                t->samp_data_len, &t->samp_fmt, t->scratch, sizeof t->scratch,
	                pmu_conv_on_rec, &s->conv);
	s->prev_start = start;
	s->prev_end = rt_now();
	t->hnd_start = s->prev_start;
	t->hnd_end = s->prev_end;
	return 1;
}

/* ---- fork ----------------------------------------------------------------------------------- */

/* The child is not recorded (rt_main.c's handler stops it) and the events
 * it inherited as fds belong to the parent's threads: close them, so they
 * do not outlive the parent's own close.  The leaders are t->samp_fd,
 * which rt_main.c closes for the forking thread; the others' leaders and
 * every extra fd are closed here. */
static void atfork_child(void)
{
	for (size_t i = 0; i < RT_MAX_THREADS; i++) {
		struct pmu_thr *s = atomic_load(&slots[i]);
		if (!s)
			break;
		struct rt_thread *o = atomic_load(&s->owner);
		int nfd = atomic_load(&s->nfd);
		if (!o || !nfd)
			continue;
		if (o != rt_self)
			close(s->fd[0]);
		for (int k = 1; k < nfd; k++)
			close(s->fd[k]);
		atomic_store(&s->nfd, 0);
		thr_put(s);
	}
	thr_self = NULL;
}

void rt_pmu_process_setup(void)
{
	static _Atomic int done;
	if (!atomic_exchange(&done, 1))
		pthread_atfork(NULL, NULL, atfork_child);
}
