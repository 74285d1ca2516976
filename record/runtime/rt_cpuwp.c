/* The soft sampler's per-CPU watchpoints, armed off the program's threads.
 *
 * With the per-CPU sample rings (rt_cpusamp.c) the writer thread decodes
 * every thread's samples; it also runs the online part of ComDetective's
 * Algorithm 1 on them (cd_step, formats/comdetective.h: the board, the
 * detection, TryArmWatchpoint), in time order over all threads, and arms
 * what cd_step picks on breakpoint events opened per CPU (pid -1): they
 * live in the CPU's perf context, so a context switch of a program thread
 * pays nothing for them (a thread's own breakpoints cost it 2.6-3.9 us per
 * switch here, armed).  A register is the same event on every CPU, all
 * re-targeted together (PERF_EVENT_IOC_MODIFY_ATTRIBUTES); the four
 * registers are shared by all the threads (wp_pool.h: the watches, their
 * owners and what a hit means).
 *
 * Each event fires once and then stops (PERF_EVENT_IOC_REFRESH 1: no
 * signal, the kernel disables it), so a hot line traps once per CPU and
 * pass, not at every access.  An event is never re-targeted or enabled
 * again once it has fired: on this VM's kernel (6.18) such an event keeps
 * its debug register armed but drops every trap after, and a hot word then
 * costs the program a trap of about 4 us per access, unseen (a loop over
 * 8 KiB ran 10x slower).  So every arm, and every re-arm after another
 * thread's hit, opens fresh events (and closes the old ones), which write
 * into the CPU's ring through a software dummy event that owns it (a fifth
 * breakpoint would not fit in the four registers).  Its sample (tid, time,
 * ip, the watched address, the user registers) goes to that ring, which
 * the writer drains at its next pass: a hit of the owner is its WP_HIT; another
 * thread's (the publisher's, a third's, another process's), or a system
 * call's access in the kernel, is no communication of the owner's, and the
 * writer enables the event again.
 *
 * Only a thread's last sample of a pass may arm: earlier ones would be
 * replaced before the writer could arm them.  So a watch lives from the
 * pass that armed it to the pass where its owner has taken two more
 * samples (cd_step's rule: armed before the thread's previous sample), or
 * to its hit, or until a newer watch takes its registers.  The writer arms
 * late (up to a pass after the sample), so the publication a watch waits
 * for is older than one sample interval when it hits: the trace says so
 * (SUMMARY watchpoint_arming=cpu, format 6), and the comdetective model
 * then counts every recorded hit (the recorder ended the old watches). */
#include "rt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/hw_breakpoint.h>

#include "soft_sample.h"
#include "wp_pool.h"

#define CPU_MAX 1024
#define HIT_RING_PAGES 8         /* 32 KiB per CPU: hits are rare, one per event and pass */

struct cpu_regs {
	int cpu;
	int ring_fd;                 /* the software dummy event that owns the ring */
	int fd[CT_WP_MAX];
	uint64_t id[CT_WP_MAX];
	bool fired[CT_WP_MAX];       /* its event fired: a fresh one for the next arm */
	void *map;
	size_t map_len, data_len;
};

static struct cpu_regs cpus[CPU_MAX];
static int ncpus;
static unsigned nregs;
static struct perf_event_attr tmpl;              /* bp_addr set per open */
static struct perf_sample_fmt hit_fmt;
static struct wp_pool pool;
static _Atomic int active;
static bool stopping;                            /* the final passes: nothing armed again */
static uint64_t dummy_word;                      /* registers out of use watch this */
static uint8_t scratch[4096];

/* what happened, for rt_cpuwp_log_stats */
static uint64_t st_arms, st_evicted, st_owner_hits, st_other_hits, st_foreign_hits, st_stale,
                st_lost, st_fail, st_opens, st_unknown, st_kernel_hits;

bool rt_cpuwp_active(void)
{
	return atomic_load(&active) != 0;
}

static void attr_init(struct perf_event_attr *a)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_BREAKPOINT;
	a->bp_type = HW_BREAKPOINT_RW;
	a->bp_addr = (uintptr_t)&dummy_word;
	a->bp_len = HW_BREAKPOINT_LEN_8;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
	                 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_REGS_USER;
	a->sample_regs_user = DEC_PERF_REGS_MASK;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* kernel accesses too: the debug registers trap on them anyway (a
	 * futex word: every futex call, about 4 us here), and excluded they
	 * would trap without end and unseen; counted, they use up the event's
	 * one hit like any other thread's access */
	a->exclude_kernel = 0;
	a->exclude_hv = 1;
	a->disabled = 1;
}

static void close_cpus(void)
{
	for (int c = 0; c < ncpus; c++) {
		struct cpu_regs *r = &cpus[c];
		for (unsigned k = 0; k < nregs; k++)
			rt_perf_close(r->fd[k]);
		if (r->map)
			munmap(r->map, r->map_len);
		rt_perf_close(r->ring_fd);
	}
	ncpus = 0;
}

static int open_fd(struct perf_event_attr *a, int cpu)
{
	int fd = rt_fd_high((int)syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
	if (fd >= 0) {
		rt_perf_fd_opened(fd);
		rt_perf_mark_fd(fd);
	}
	return fd;
}

/* Register k of CPU r: a fresh event on addr (the old one closed), writing
 * into the CPU's ring, enabled for one hit when `arm`; 0 or -errno. */
static int reopen(struct cpu_regs *r, unsigned k, uint64_t addr, bool arm)
{
	rt_perf_close(r->fd[k]);
	r->fd[k] = -1;
	r->fired[k] = false;
	tmpl.bp_addr = addr;
	st_opens++;
	int fd = open_fd(&tmpl, r->cpu);
	if (fd < 0)
		return -errno;
	r->fd[k] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->ring_fd) < 0 ||
	    ioctl(fd, PERF_EVENT_IOC_ID, &r->id[k]) < 0 ||
	    (arm && ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) < 0))
		return -errno;
	return 0;
}

/* CPU c into cpus[ncpus]: its ring's owner (mapped before the registers
 * write into it) and its registers on the dummy word, disabled (they
 * reserve the CPU's debug registers); 0, 1 (no such CPU: not kept) or
 * -errno (what opened is left for close_cpus). */
static int open_cpu(int c)
{
	struct cpu_regs *r = &cpus[ncpus++];
	memset(r, 0, sizeof *r);
	r->cpu = c;
	for (unsigned k = 0; k < CT_WP_MAX; k++)
		r->fd[k] = -1;
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.use_clockid = 1;            /* one ring, one clock */
	a.clockid = CLOCK_MONOTONIC;
	a.disabled = 1;
	r->ring_fd = open_fd(&a, c);
	if (r->ring_fd < 0) {
		int e = errno;
		if (e == ENODEV)
			ncpus--;
		return e == ENODEV ? 1 : -e;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	r->data_len = page * HIT_RING_PAGES;
	r->map_len = page + r->data_len;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->ring_fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	for (unsigned k = 0; k < nregs; k++) {
		int rc = reopen(r, k, (uintptr_t)&dummy_word, false);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int rt_cpuwp_open(unsigned n)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1 || ncpu > CPU_MAX)
		return -ERANGE;
	nregs = n < CT_WP_MAX ? n : CT_WP_MAX;
	attr_init(&tmpl);
	perf_sample_fmt_from_attr(&tmpl, &hit_fmt);
	wp_pool_init(&pool, nregs);
	rt_fd_window_begin();
	int rc = 0;
	for (int c = 0; c < ncpu && rc >= 0; c++)
		rc = open_cpu(c);
	rt_fd_window_end();
	if (rc < 0 || ncpus == 0) {
		close_cpus();
		return rc < 0 ? rc : -ENODEV;
	}
	atomic_store(&active, 1);
	rt_status_cpu_wp(nregs, 0, 0, 0);
	rt_log(2, "soft sampler: %u watchpoint registers per CPU (%d CPUs), shared by the threads, "
	       "armed by the writer", nregs, ncpus);
	return 0;
}

void rt_cpuwp_stop(void)
{
	if (!rt_cpuwp_active())
		return;
	stopping = true;
	for (int c = 0; c < ncpus; c++)
		for (unsigned k = 0; k < nregs; k++)
			if (cpus[c].fd[k] >= 0)
				ioctl(cpus[c].fd[k], PERF_EVENT_IOC_DISABLE, 0);
}

void rt_cpuwp_forget(void)
{
	if (atomic_exchange(&active, 0))
		close_cpus();
}

/* ---- the writer's side ------------------------------------------------------ */

/* Register k on every CPU watching addr, for one hit (the caller holds
 * the descriptors' window: rt_fd_window_begin). */
static void program(unsigned k, uint64_t addr)
{
	for (int c = 0; c < ncpus; c++)
		if (reopen(&cpus[c], k, addr, true) < 0)
			st_fail++;
}

/* Live watches whose event fired for another thread: fresh events (in the
 * descriptors' window, opened at the first: the program's own descriptors
 * stay below its limit). */
static void refresh_live(void)
{
	bool window = false;
	for (unsigned k = 0; k < nregs && !stopping; k++) {
		if (!pool.s[k].owner)
			continue;
		for (int c = 0; c < ncpus; c++) {
			if (!cpus[c].fired[k])
				continue;
			if (!window) {
				rt_fd_window_begin();
				window = true;
			}
			if (reopen(&cpus[c], k, pool.s[k].addr, true) < 0)
				st_fail++;
		}
	}
	if (window)
		rt_fd_window_end();
}

struct hit_ctx {
	const struct soft_tid_map *map;
	int cpu;
};

/* A hit of the program's own code, kept until the pass's rings are all
 * drained: the hits are then taken in time order (a watcher that hit on two
 * CPUs in one pass: its first hit ends the watch). */
struct pass_hit {
	uint64_t time, ip, addr;
	struct rt_thread *who;       /* NULL: not a recorded thread */
	uint32_t cpu;
	uint8_t k, kind;
};

#define PASS_HITS (CT_WP_MAX * CPU_MAX)   /* each event fires once a pass */
static struct pass_hit phit[PASS_HITS];
static size_t nphit;

static int reg_of(const struct cpu_regs *r, uint64_t id)
{
	for (unsigned k = 0; k < nregs; k++)
		if (r->id[k] == id)
			return (int)k;
	return -1;
}

static int by_hit_time(const void *a, const void *b)
{
	const struct pass_hit *x = a, *y = b;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* The kept hits in time order: the owner's is its WP_HIT (the kind decoded
 * when the hit was kept), another thread's leaves the watch armed. */
static void take_hits(rt_emit_fn emit)
{
	qsort(phit, nphit, sizeof *phit, by_hit_time);
	for (size_t i = 0; i < nphit; i++) {
		const struct pass_hit *x = &phit[i];
		unsigned reg = 0;
		switch (wp_pool_hit(&pool, x->k, x->addr, x->who, &reg)) {
		case WP_POOL_OWNER: {
			st_owner_hits++;
			struct ct_record h = { .type = CT_REC_WP_HIT, .time = x->time };
			h.u.hit.ip = x->ip;
			h.u.hit.addr = x->addr;
			h.u.hit.len = CD_WORD_BYTES;
			h.u.hit.reg = (uint8_t)reg;
			h.u.hit.cpu = x->cpu;
			h.u.hit.kind = x->kind;
			x->who->wp_hit = true;
			x->who->traps++;
			emit(x->who, &h);
			break;
		}
		case WP_POOL_OTHER:
			st_other_hits++;
			break;
		case WP_POOL_STALE:
			st_stale++;
			break;
		}
	}
	nphit = 0;
}

static void on_hit(void *ctx, const struct perf_rec *r)
{
	struct hit_ctx *x = ctx;
	if (r->kind == PERF_REC_LOST) {
		st_lost += r->lost;
		return;
	}
	struct cpu_regs *cr = &cpus[x->cpu];
	int k = r->kind == PERF_REC_SAMPLE ? reg_of(cr, r->id) : -1;
	if (k < 0) {
		st_unknown++;
		return;
	}
	cr->fired[k] = true;             /* disabled by the kernel: not to be used again */
	if ((pid_t)r->pid != rt_pid) {
		st_foreign_hits++;
		return;
	}
	if (r->ip >= 0x800000000000ull || (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
	                                      PERF_RECORD_MISC_KERNEL) {
		st_kernel_hits++;    /* a system call's access: not the program's own */
		return;
	}
	if (nphit == PASS_HITS) {
		st_lost++;               /* (more than the events can give) */
		return;
	}
	struct pass_hit *h = &phit[nphit++];
	*h = (struct pass_hit){
		.time = r->time, .ip = r->ip, .addr = r->addr, .cpu = r->cpu, .k = (uint8_t)k,
		.who = soft_tid_map_find(x->map, r->tid, r->time), .kind = CT_ACCESS_LOAD,
	};
	/* the kind from the instruction before ip, decoded now: r's registers
	 * are the ring's until the next record */
	struct dec_access a;
	if (h->who)
		rt_wp_hit_kind(soft_sample_access(r, hit_fmt.regs_user_mask, h->who->fs_base, true,
		                                  &a), &a, r->addr, &h->kind);
}

void rt_cpuwp_hits(const struct soft_tid_map *map, rt_emit_fn emit)
{
	if (!rt_cpuwp_active())
		return;
	struct hit_ctx x = { .map = map };
	for (x.cpu = 0; x.cpu < ncpus; x.cpu++) {
		struct cpu_regs *r = &cpus[x.cpu];
		perf_ring_drain(r->map, (uint8_t *)r->map + (r->map_len - r->data_len), r->data_len,
		                &hit_fmt, scratch, sizeof scratch, on_hit, &x);
	}
	take_hits(emit);
	refresh_live();
}

/* Arm t's watch on what cd_step chose (its sample at `logical`): WP_ARM at
 * the time the registers are re-targeted. */
static void arm(struct rt_thread *t, const struct ct_wp_arm *plan, uint64_t logical,
                rt_emit_fn emit)
{
	struct ct_record r = { .type = CT_REC_WP_ARM, .time = rt_now() };
	unsigned reg[CT_WP_MAX], nev;
	const void *ev[CT_WP_MAX];
	unsigned k = wp_pool_take(&pool, t, plan->wp_addr, plan->nwp, reg, ev, &nev);
	rt_fd_window_begin();
	for (unsigned i = 0; i < k; i++)
		program(reg[i], plan->wp_addr[i]);
	rt_fd_window_end();
	st_evicted += nev;
	st_arms++;
	r.u.arm = *plan;
	r.u.arm.nwp = (uint8_t)k;
	for (unsigned i = 0; i < k; i++)
		r.u.arm.wp_len[i] = CD_WORD_BYTES;
	t->wp_hit = false;
	t->wp_arm_time = logical;
	t->arms++;
	emit(t, &r);
}

void rt_cpuwp_sample(struct rt_thread *t, const struct ct_record *s, bool last, unsigned watchers,
                     rt_emit_fn emit)
{
	struct cd_rules rules = rt_recorder_rules();   /* (no line watches: soft) */
	const struct ct_sample *x = &s->u.sample;
	struct cd_access a = {
		.time = s->time, .addr = x->addr, .ip = x->ip, .cpu = x->cpu, .len = x->len,
		.store = x->kind != CT_ACCESS_LOAD,
	};
	struct cd_watch w = {
		.nwp = wp_pool_share(&pool, watchers), .armed = wp_pool_held(&pool, t) != 0,
		.hit = t->wp_hit, .arm_time = t->wp_arm_time,
	};
	struct cd_step st;
	cd_step(&rules, t->index, &t->cd, &a, last ? &w : NULL, &t->rnd, &st);
	if (st.disarm)
		wp_pool_release(&pool, t);
	if (st.arm.nwp && !stopping)
		arm(t, &st.arm, s->time, emit);
}

void rt_cpuwp_thread_gone(const struct rt_thread *t)
{
	if (rt_cpuwp_active())
		wp_pool_release(&pool, t);   /* (its registers' next hit is stale) */
}

void rt_cpuwp_log_stats(void)
{
	if (!rt_cpuwp_active())
		return;
	rt_log(2, "soft sampler, per-CPU watchpoints: %llu arms (%llu registers taken from an older "
	       "watch), hits: %llu by the watching thread, %llu by other threads, %llu in the kernel, "
	       "%llu by other processes, %llu stale, %llu of events closed since; %llu events opened "
	       "(%llu failed), %llu hits lost",
	       (unsigned long long)st_arms, (unsigned long long)st_evicted,
	       (unsigned long long)st_owner_hits, (unsigned long long)st_other_hits,
	       (unsigned long long)st_kernel_hits,
	       (unsigned long long)st_foreign_hits, (unsigned long long)st_stale,
	       (unsigned long long)st_unknown, (unsigned long long)st_opens,
	       (unsigned long long)st_fail,
	       (unsigned long long)st_lost);
	rt_status_cpu_wp(nregs, st_arms, st_owner_hits, st_other_hits + st_kernel_hits);
}
