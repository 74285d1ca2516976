/* The soft sampler's per-CPU rings: one sampling event per CPU, each
 * writing into its own ring, no signal: the writer thread drains the rings
 * at each pass, gives every record to the thread whose tid it carries (and
 * whose life holds its time), turns it into that thread's records through
 * the one perf sample path (rt_perf_rec: the registers are in the sample,
 * the code bytes are read from this process, late) and merges them by time
 * into the thread's stream.
 *
 * Two kinds of event:
 *
 * - Inherited task-clock events (the default): opened once on the main
 *   thread (pid 0, cpu c) with inherit and inherit_thread, so that every
 *   thread the program creates afterwards carries a copy writing into that
 *   CPU's ring, and remove_on_exec.  A task-clock event counts its
 *   thread's own CPU time: a sample every period of it, whatever the
 *   thread's timing.  Copies of one inherited event make the threads' perf
 *   contexts equivalent, and the kernel swaps them at a switch between two
 *   of the program's threads instead of rescheduling the events (about
 *   0.4 us per switch, measured); a switch to another process or to the
 *   idle task still stops and starts the thread's timer (10-15 us on PVM).
 *
 * - CPU-wide (pid -1, cpu c), only where COMMTRACE_SOFT_CPU_WIDE=1 asks
 *   (commrec passes it on where its probe opens one): a cpu-clock event
 *   per CPU, which needs CAP_PERFMON, root or kernel.perf_event_paranoid
 *   <= 0.  It lives in the CPU's perf context, so a context switch costs
 *   nothing for it (LULESH, 160,000 switches a second on PVM: about 1.05x
 *   program CPU with -w 0, where the inherited events cost 1.13x to 1.29x),
 *   but its timer fires on a fixed grid of the CPU's clock, every period,
 *   idle or not: a thread that wakes on a timer whose interval is a
 *   multiple of the period meets the grid at the same phase at every
 *   wake-up, and takes 0 or 1 sample per wake-up by that phase, not one
 *   per period of its CPU time (tests/ubench/periodic: 2x or 0.1x).  A
 *   period changed with PERF_EVENT_IOC_PERIOD restarts the timer from the
 *   call (measured on kernel 6.18: the first sample a new period after the
 *   ioctl, 8 of 8 times; PERF_SAMPLE_PERIOD still says the first period),
 *   so a dither the writer set at its passes would leave no sample in the
 *   first half period after each pass, biased again for a program whose
 *   wake-ups follow the writer's.  Opened on the CPUs of the program's
 *   affinity at the start only (a later widening is not sampled there);
 *   a CPU offline at the start, or one that goes offline (its event then
 *   stops for good), is opened again by the writer once it is online
 *   (check_cpus).  Samples of other processes are dropped here; a loss
 *   or throttle the kernel wrote while another process ran goes to the
 *   program's main thread (it may be the program's: the kernel writes it
 *   at its next output), its losses counted in SUMMARY sampler_lost_foreign.
 *
 * Watchpoints: not the threads' own (a thread with per-thread events of
 * its own, breakpoints, loses the cheap switch), but per-CPU breakpoint
 * events the writer arms from the samples it decodes (rt_cpuwp.c), where
 * they open and fire; elsewhere the per-thread path arms each thread's
 * registers at its sample, in its handler (sampler_soft.c). */
#include "rt.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "soft_sample.h"

#define CPU_MAX 1024
#define CPU_CHECK_NS 1000000000ull   /* CPU-wide: offline CPUs looked at once a second */

struct cpu_ring {
	int cpu;
	int fd;                  /* -1: the CPU is offline (CPU-wide events only) */
	void *map;
	size_t map_len, data_len;
	uint64_t enabled_ns;     /* CPU-wide: the event's enabled time at the last check */
};

static struct cpu_ring rings[CPU_MAX];
static int nrings;
static _Atomic int active;
static struct perf_sample_fmt fmt;
static bool cpu_wide;            /* CPU-wide cpu-clock events, not inherited ones */
static struct perf_event_attr ring_attr;
static size_t ring_npages;
static bool stopped;             /* (the writer's final passes: nothing reopened) */
static uint64_t next_check;
static pid_t writer_tid;         /* the runtime's writer: its samples are dropped */
static uint64_t foreign, own_samples, reopened;

/* writer-side state: the tid map of the pass, and the collected records */
struct pending {
	struct rt_thread *t;
	uint32_t slot, seq;
	struct ct_record r;
};
static struct soft_tid_entry map_e[RT_MAX_THREADS];
static struct soft_tid_map map = { map_e, 0 };
static struct rt_thread *main_t;          /* the main thread, for LOST records without a tid */
static struct pending *pend;
static size_t pend_n, pend_cap, pend_pos;
static uint32_t pend_seq;
static uint64_t unattributed, lost_unattributed, lost_foreign, pend_nomem;
static uint8_t scratch[4096];

bool rt_cpusamp_active(void)
{
	return atomic_load(&active) != 0;
}

const struct perf_sample_fmt *rt_cpusamp_fmt(void)
{
	return &fmt;
}

static void close_ring(struct cpu_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
	rt_perf_close(r->fd);
	r->fd = -1;
}

static void close_rings(void)
{
	for (int i = 0; i < nrings; i++)
		close_ring(&rings[i]);
	nrings = 0;
}

/* Open and map ring r's event on its CPU (ring_attr); 0, 1 (no such CPU, or
 * offline) or -errno. */
static int open_cpu(struct cpu_ring *r, size_t pages)
{
	int fd = rt_fd_high((int)syscall(SYS_perf_event_open, &ring_attr, cpu_wide ? -1 : 0,
	                                 r->cpu, -1, PERF_FLAG_FD_CLOEXEC));
	if (fd < 0)
		return errno == ENODEV ? 1 : -errno;
	rt_perf_fd_opened(fd);
	rt_perf_mark_fd(fd);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *m = soft_ring_map(fd, &pages, page);
	if (m == MAP_FAILED) {
		int e = errno;
		rt_perf_close(fd);
		return -e;
	}
	r->fd = fd;
	r->map = m;
	r->data_len = page * pages;
	r->map_len = page + r->data_len;
	r->enabled_ns = 0;
	return 0;
}

/* The events' attributes, CPU-wide or inherited (see the top). */
static void ring_attr_init(bool wide, uint64_t period_ns)
{
	ring_npages = soft_ring_attr(&ring_attr, wide, period_ns, (size_t)sysconf(_SC_PAGESIZE));
	cpu_wide = wide;
}

/* Whether CPU c gets a ring: inherited events, every CPU (a thread
 * samples only where it runs); CPU-wide ones, the CPUs of the program's
 * affinity at the start (the others' timers would fire for nothing: the
 * cost is CPUs x 1/period interrupts a second, idle or not). */
static bool ring_wanted(const cpu_set_t *mask, int c)
{
	return !cpu_wide || !mask || CPU_ISSET(c, mask);   /* (CPU_MAX: CPU_SETSIZE) */
}

/* A ring per CPU, enabled (CPU-wide: a CPU offline now keeps its slot, for
 * check_cpus); the number of rings opened, or -errno (then none is). */
static int open_rings(long ncpu, const cpu_set_t *mask)
{
	rt_fd_window_begin();
	int rc = 0, live = 0;
	for (int c = 0; c < ncpu && rc >= 0; c++) {
		if (!ring_wanted(mask, c))
			continue;
		struct cpu_ring *r = &rings[nrings];
		*r = (struct cpu_ring){ .cpu = c, .fd = -1 };
		rc = open_cpu(r, ring_npages);
		if (rc == 0 || (rc == 1 && cpu_wide))
			nrings++;
		live += rc == 0;
	}
	rt_fd_window_end();
	for (int i = 0; i < nrings && rc >= 0; i++)
		if (rings[i].fd >= 0 && ioctl(rings[i].fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
			rc = -errno;
	if (rc < 0 || live == 0) {
		close_rings();
		return rc < 0 ? rc : -ENODEV;
	}
	return live;
}

int rt_cpusamp_open(uint64_t period_ns)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1 || ncpu > CPU_MAX)
		return -ERANGE;
	int live = -EPERM;
	if (rt_cfg.soft_cpu_wide) {
		ring_attr_init(true, period_ns);
		cpu_set_t mask;
		bool have = sched_getaffinity(0, sizeof mask, &mask) == 0;
		live = open_rings(ncpu, have ? &mask : NULL);
		if (live < 0)
			rt_log(2, "soft sampler: CPU-wide events unavailable (%s): inherited ones",
			       strerror(-live));
	}
	if (live < 0) {
		ring_attr_init(false, period_ns);
		live = open_rings(ncpu, NULL);
	}
	if (live < 0)
		return live;
	perf_sample_fmt_from_attr(&ring_attr, &fmt);
	next_check = rt_now() + CPU_CHECK_NS;
	atomic_store(&active, 1);
	rt_status_cpu_rings((uint32_t)live, cpu_wide);
	rt_log(2, "soft sampler: %s event per CPU (%d of %d), %zu KiB rings, decoded by the writer",
	       cpu_wide ? "one CPU-wide cpu-clock" : "one inherited task-clock", live, nrings,
	       ring_npages * (size_t)sysconf(_SC_PAGESIZE) / 1024);
	return 0;
}

void rt_cpusamp_stop(void)
{
	rt_cpuwp_stop();
	stopped = true;
	for (int i = 0; i < nrings; i++)
		if (rings[i].fd >= 0)
			ioctl(rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
}

void rt_cpusamp_forget(void)
{
	rt_cpuwp_forget();
	if (!atomic_exchange(&active, 0))
		return;
	close_rings();
}

/* ---- the writer's side --------------------------------------------------------- */

static int pend_emit(struct rt_thread *t, const struct ct_record *r)
{
	if (pend_n == pend_cap) {
		size_t cap = pend_cap ? pend_cap * 2 : 1024;
		struct pending *p = realloc(pend, cap * sizeof *p);
		if (!p) {
			if (!pend_nomem++)
				rt_log(1, "soft sampler: no memory for the samples of the CPU rings: "
				       "samples are lost");
			return -1;
		}
		pend = p;
		pend_cap = cap;
	}
	pend[pend_n++] = (struct pending){ .t = t, .slot = t->slot, .seq = pend_seq++, .r = *r };
	return 0;
}

static void on_cpu_rec(void *ctx, const struct perf_rec *r)
{
	(void)ctx;
	/* the kernel writes a loss or a throttle with the task that runs at
	 * its next output, not the one whose samples it lost (and a throttle
	 * stops the CPU's event for every task): another process's goes to
	 * the program's main thread, counted apart (maybe not the program's) */
	bool foreign_loss = cpu_wide && r->kind != PERF_REC_SAMPLE && (pid_t)r->pid != rt_pid;
	if (foreign_loss && r->kind == PERF_REC_LOST)
		rt_status_ring_lost_foreign(lost_foreign += r->lost);
	if (cpu_wide && r->kind == PERF_REC_SAMPLE) {
		/* another process, or the runtime's writer: not the program */
		if ((pid_t)r->pid != rt_pid) {
			foreign++;
			return;
		}
		if ((pid_t)r->tid == writer_tid) {
			own_samples++;
			return;
		}
	}
	uint64_t time = r->time ? r->time : rt_now();
	struct rt_thread *t = foreign_loss ? NULL : soft_tid_map_find(&map, r->tid, time);
	if (!t && r->kind != PERF_REC_SAMPLE)
		t = main_t;           /* a loss the kernel could not place */
	if (!t) {
		/* a thread that is not recorded, or a loss after the main
		 * thread ended: counted, in the SUMMARY */
		if (r->kind == PERF_REC_SAMPLE)
			rt_status_ring_unattributed(++unattributed);
		else if (r->kind == PERF_REC_LOST)
			rt_status_ring_lost_unattributed(lost_unattributed += r->lost);
		return;
	}
	rt_perf_rec(t, r, 0, 0, pend_emit);
}

static void build_map(void)
{
	map.n = 0;
	main_t = NULL;
	uint32_t hw = atomic_load(&rt_threads_hw);
	for (uint32_t i = 0; i < hw; i++) {
		struct rt_thread *t = atomic_load(&rt_threads[i]);
		if (!t)
			continue;
		t->w_end_seen = atomic_load(&t->end_pushed) != 0;
		if (!t->samp_by_writer || t->w_closed)
			continue;
		map_e[map.n++] = (struct soft_tid_entry){
			.tid = (uint32_t)t->tid, .start = t->start_ns,
			.end = t->w_end_seen ? t->end_ns : UINT64_MAX, .owner = t,
		};
		if (t->index == 0 && !t->w_end_seen)
			main_t = t;
	}
	soft_tid_map_sort(&map);
}

static int by_slot_time(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->r.time != y->r.time)
		return x->r.time < y->r.time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The pass's samples in time order (all threads), for Algorithm 1 on the
 * writer: indices into pend, each thread's last of the pass marked. */
struct order {
	uint32_t i;
	bool last;
};
static struct order *ord;
static size_t ord_cap;
static uint64_t pass_no;

static int by_time(const void *a, const void *b)
{
	const struct pending *x = &pend[((const struct order *)a)->i];
	const struct pending *y = &pend[((const struct order *)b)->i];
	if (x->r.time != y->r.time)
		return x->r.time < y->r.time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Algorithm 1's online part on the pass's samples (rt_cpuwp.c arms the
 * per-CPU watchpoints and adds WP_ARM records to pend). */
static void watch_step(void)
{
	if (pend_n > ord_cap) {
		struct order *o = realloc(ord, pend_n * sizeof *o);
		if (!o)
			return;           /* (no arms in this pass) */
		ord = o;
		ord_cap = pend_n;
	}
	size_t n = 0;
	for (size_t i = 0; i < pend_n; i++)
		if (pend[i].r.type == CT_REC_SAMPLE)
			ord[n++] = (struct order){ .i = (uint32_t)i };
	qsort(ord, n, sizeof *ord, by_time);
	pass_no++;
	unsigned watchers = 0;
	for (size_t j = n; j-- > 0;) {
		struct rt_thread *t = pend[ord[j].i].t;
		if (t->w_pass != pass_no) {
			t->w_pass = pass_no;
			ord[j].last = !t->w_end_seen;   /* (its arm would come after its end) */
			watchers += ord[j].last;
		}
	}
	for (size_t j = 0; j < n; j++) {
		struct ct_record r = pend[ord[j].i].r;   /* (pend grows: a copy) */
		rt_cpuwp_sample(pend[ord[j].i].t, &r, ord[j].last, watchers, pend_emit);
	}
}

/* CPU-wide: a CPU's event stops for good when the CPU goes offline (its
 * enabled time no longer grows), and a CPU offline at the start has none:
 * opened again here once the CPU is online (drained first: after the
 * pass's drain). */
static void check_cpus(void)
{
	uint64_t now = rt_now();
	if (!cpu_wide || stopped || now < next_check)
		return;
	next_check = now + CPU_CHECK_NS;
	for (int i = 0; i < nrings; i++) {
		struct cpu_ring *r = &rings[i];
		uint64_t v[2];
		if (r->fd >= 0 && read(r->fd, v, sizeof v) == (ssize_t)sizeof v && v[1] != r->enabled_ns) {
			r->enabled_ns = v[1];
			continue;
		}
		close_ring(r);
		rt_fd_window_begin();
		int rc = open_cpu(r, ring_npages);
		rt_fd_window_end();
		if (rc == 0 && ioctl(r->fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
			close_ring(r);
		if (r->fd >= 0) {
			reopened++;
			rt_log(2, "soft sampler: CPU %d sampled again (it was offline)", r->cpu);
		}
	}
}

bool rt_cpusamp_collect(void)
{
	pend_n = pend_pos = 0;
	if (!rt_cpusamp_active())
		return false;
	if (!writer_tid)
		writer_tid = (pid_t)syscall(SYS_gettid);   /* (the writer calls) */
	/* the ends first: a thread seen ending now has all its samples up to
	 * its THREAD_END in the rings drained below */
	build_map();
	rt_cpuwp_hits(&map, pend_emit);
	bool busy = false;
	for (int i = 0; i < nrings; i++) {
		struct cpu_ring *c = &rings[i];
		if (c->fd < 0)
			continue;
		struct perf_event_mmap_page *mp = c->map;
		uint64_t used = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE) - mp->data_tail;
		busy |= used >= c->data_len / 2;
		perf_ring_drain(c->map, (uint8_t *)c->map + (c->map_len - c->data_len), c->data_len, &fmt,
		                scratch, sizeof scratch, on_cpu_rec, NULL);
	}
	check_cpus();
	if (rt_cpuwp_active())
		watch_step();
	qsort(pend, pend_n, sizeof *pend, by_slot_time);
	return busy;
}

const struct ct_record *rt_cpusamp_next(struct rt_thread *t, uint64_t until)
{
	while (pend_pos < pend_n && pend[pend_pos].slot < t->slot)
		pend_pos++;        /* (a thread that left the registry: none do in a pass) */
	if (pend_pos < pend_n && pend[pend_pos].t == t && pend[pend_pos].r.time <= until)
		return &pend[pend_pos++].r;
	return NULL;
}

void rt_cpusamp_log_stats(void)
{
	rt_cpuwp_log_stats();
	if (rt_cpusamp_active() && cpu_wide)
		rt_log(2, "soft sampler: CPU-wide rings: %llu samples of other processes and %llu of "
		       "the runtime's writer dropped, %llu lost while other processes ran, %llu "
		       "events opened again after their CPU was offline", (unsigned long long)foreign,
		       (unsigned long long)own_samples, (unsigned long long)lost_foreign,
		       (unsigned long long)reopened);
	if (rt_cpusamp_active() && (unattributed || lost_unattributed || pend_nomem))
		rt_log(2, "soft sampler: %llu samples of threads that are not recorded, %llu lost by "
		       "the kernel with no recorded thread to take them, %llu not kept (no memory)",
		       (unsigned long long)unattributed, (unsigned long long)lost_unattributed,
		       (unsigned long long)pend_nomem);
}
