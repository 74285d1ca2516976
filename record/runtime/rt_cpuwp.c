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
 * pass, not at every access; its sample (tid, time, ip, the watched
 * address, the user registers) goes to its CPU's ring, which the writer
 * drains at its next pass: a hit of the owner is its WP_HIT; another
 * thread's (the publisher's, a third's, another process's) is no
 * communication of the owner's, and the writer enables the event again.
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
	int fd[CT_WP_MAX];
	uint64_t id[CT_WP_MAX];
	bool pending[CT_WP_MAX];     /* enabled for one more hit, not seen firing since */
	bool overrun[CT_WP_MAX];     /* seen firing while not pending: disabled in this pass */
	void *map;
	size_t map_len, data_len;
};

static struct cpu_regs cpus[CPU_MAX];
static int ncpus;
static unsigned nregs;
static struct perf_event_attr tmpl[CT_WP_MAX];   /* only bp_addr changes */
static struct perf_sample_fmt hit_fmt;
static struct wp_pool pool;
static _Atomic int active;
static uint64_t dummy_word;                      /* registers out of use watch this */
static uint8_t scratch[4096];

/* what happened, for rt_cpuwp_log_stats */
static uint64_t st_arms, st_evicted, st_owner_hits, st_other_hits, st_foreign_hits, st_stale,
                st_lost, st_fail, st_ioctls, st_unknown,
                st_overruns;

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
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->disabled = 1;
	a->watermark = 1;
	a->wakeup_watermark = HIT_RING_PAGES * 4096 / 2;   /* nobody waits: few wake-ups */
}

static void close_cpus(void)
{
	for (int c = 0; c < ncpus; c++) {
		struct cpu_regs *r = &cpus[c];
		if (r->map)
			munmap(r->map, r->map_len);
		r->map = NULL;
		for (unsigned k = 0; k < nregs; k++)
			rt_perf_close(r->fd[k]);
	}
	ncpus = 0;
}

/* Open CPU c's registers into cpus[ncpus], the first with the ring (mapped
 * before the others can write into it); 0, 1 (no such CPU: not kept) or
 * -errno (what opened is left for close_cpus). */
static int open_cpu(int c)
{
	struct cpu_regs *r = &cpus[ncpus++];
	memset(r, 0, sizeof *r);
	for (unsigned k = 0; k < CT_WP_MAX; k++)
		r->fd[k] = -1;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (unsigned k = 0; k < nregs; k++) {
		int fd = rt_fd_high((int)syscall(SYS_perf_event_open, &tmpl[k], -1, c, -1,
		                                 PERF_FLAG_FD_CLOEXEC));
		if (fd < 0 && k == 0 && errno == ENODEV) {
			ncpus--;
			return 1;
		}
		if (fd < 0)
			return -errno;
		rt_perf_fd_opened(fd);
		rt_perf_mark_fd(fd);
		r->fd[k] = fd;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &r->id[k]) < 0)
			return -errno;
		if (k && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd[0]) < 0)
			return -errno;
		if (k)
			continue;
		r->data_len = page * HIT_RING_PAGES;
		r->map_len = page + r->data_len;
		r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r->map == MAP_FAILED) {
			r->map = NULL;
			return -errno;
		}
	}
	return 0;
}

int rt_cpuwp_open(unsigned n)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1 || ncpu > CPU_MAX)
		return -ERANGE;
	nregs = n < CT_WP_MAX ? n : CT_WP_MAX;
	for (unsigned k = 0; k < nregs; k++)
		attr_init(&tmpl[k]);
	perf_sample_fmt_from_attr(&tmpl[0], &hit_fmt);
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
	for (int c = 0; c < ncpus; c++)
		for (unsigned k = 0; k < nregs; k++)
			ioctl(cpus[c].fd[k], PERF_EVENT_IOC_DISABLE, 0);
}

void rt_cpuwp_forget(void)
{
	if (atomic_exchange(&active, 0))
		close_cpus();
}

/* ---- the writer's side ------------------------------------------------------ */

/* Register k on every CPU re-targeted to addr (MODIFY_ATTRIBUTES takes
 * attr.disabled too: it leaves the event off) and enabled for one hit: a
 * REFRESH adds one to the event's hits before it stops, so an event still
 * waiting for its one hit is only enabled again. */
static void program(unsigned k, uint64_t addr)
{
	tmpl[k].bp_addr = addr;
	for (int c = 0; c < ncpus; c++) {
		struct cpu_regs *r = &cpus[c];
		st_ioctls += 2;
		if (ioctl(r->fd[k], PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &tmpl[k]) < 0) {
			st_fail++;
			continue;
		}
		if (r->pending[k] ? ioctl(r->fd[k], PERF_EVENT_IOC_ENABLE, 0) < 0
		                  : ioctl(r->fd[k], PERF_EVENT_IOC_REFRESH, 1) < 0)
			st_fail++;
		else
			r->pending[k] = true;
	}
}

/* Live watches whose event fired for another thread: enabled again. */
static void refresh_live(void)
{
	for (unsigned k = 0; k < nregs; k++) {
		if (!pool.s[k].owner)
			continue;
		for (int c = 0; c < ncpus; c++) {
			struct cpu_regs *r = &cpus[c];
			if (r->pending[k])
				continue;
			st_ioctls++;
			if (ioctl(r->fd[k], PERF_EVENT_IOC_REFRESH, 1) == 0)
				r->pending[k] = true;
			else
				st_fail++;
		}
	}
}

struct hit_ctx {
	const struct soft_tid_map *map;
	rt_emit_fn emit;
	int cpu;
};

static int reg_of(const struct cpu_regs *r, uint64_t id)
{
	for (unsigned k = 0; k < nregs; k++)
		if (r->id[k] == id)
			return (int)k;
	return -1;
}

/* The owner's hit: its WP_HIT, the kind from the instruction before ip
 * when it decodes to the watched line (as rt_wp.c's trap handler). */
static void owner_hit(struct rt_thread *t, const struct perf_rec *r, unsigned reg, rt_emit_fn emit)
{
	struct ct_record h = { .type = CT_REC_WP_HIT, .time = r->time };
	h.u.hit.ip = r->ip;
	h.u.hit.addr = r->addr;
	h.u.hit.len = CD_WORD_BYTES;
	h.u.hit.reg = (uint8_t)reg;
	h.u.hit.cpu = r->cpu;
	h.u.hit.kind = CT_ACCESS_LOAD;
	struct dec_access a;
	if (soft_sample_access(r, hit_fmt.regs_user_mask, t->fs_base, true, &a) == 0 &&
	    (a.flags & CT_SAMPLE_PREV_INSN) &&
	    board_line(&rt_board, a.addr) == board_line(&rt_board, r->addr))
		h.u.hit.kind = a.kind;
	t->wp_hit = true;
	t->traps++;
	emit(t, &h);
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
	if (cr->pending[k])
		cr->pending[k] = false;      /* it fired: disabled by the kernel */
	else if (!cr->overrun[k]) {
		/* it fired past its one hit (it fired after a drain and was
		 * then enabled again as if waiting): off until a REFRESH */
		ioctl(cr->fd[k], PERF_EVENT_IOC_DISABLE, 0);
		cr->overrun[k] = true;
		st_overruns++;
	}
	if ((pid_t)r->pid != rt_pid) {
		st_foreign_hits++;
		return;
	}
	struct rt_thread *who = soft_tid_map_find(x->map, r->tid, r->time);
	unsigned reg = 0;
	switch (wp_pool_hit(&pool, (unsigned)k, r->addr, who, &reg)) {
	case WP_POOL_OWNER:
		st_owner_hits++;
		owner_hit(who, r, reg, x->emit);
		break;
	case WP_POOL_OTHER:
		st_other_hits++;
		break;
	case WP_POOL_STALE:
		st_stale++;
		break;
	}
}

void rt_cpuwp_hits(const struct soft_tid_map *map, rt_emit_fn emit)
{
	if (!rt_cpuwp_active())
		return;
	struct hit_ctx x = { .map = map, .emit = emit };
	for (x.cpu = 0; x.cpu < ncpus; x.cpu++) {
		struct cpu_regs *r = &cpus[x.cpu];
		memset(r->overrun, 0, sizeof r->overrun);
		perf_ring_drain(r->map, (uint8_t *)r->map + (r->map_len - r->data_len), r->data_len,
		                &hit_fmt, scratch, sizeof scratch, on_hit, &x);
	}
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
	for (unsigned i = 0; i < k; i++)
		program(reg[i], plan->wp_addr[i]);
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
	struct cd_rules rules = {
		.board = rt_board_ok && !atomic_load(&rt_exiting) ? &rt_board : NULL,
		.expiry = CD_EXPIRY_RECORDER, .line_size = rt_cfg.line_size,
	};
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
	if (st.arm.nwp)
		arm(t, &st.arm, s->time, emit);
}

void rt_cpuwp_log_stats(void)
{
	if (!rt_cpuwp_active())
		return;
	rt_log(2, "soft sampler, per-CPU watchpoints: %llu arms (%llu registers taken from an older "
	       "watch), hits: %llu by the watching thread, %llu by other threads, %llu by other "
	       "processes, %llu stale, %llu unknown, %llu past their one; %llu ioctls (%llu "
	       "failed), %llu hits lost",
	       (unsigned long long)st_arms, (unsigned long long)st_evicted,
	       (unsigned long long)st_owner_hits, (unsigned long long)st_other_hits,
	       (unsigned long long)st_foreign_hits, (unsigned long long)st_stale,
	       (unsigned long long)st_unknown, (unsigned long long)st_overruns,
	       (unsigned long long)st_ioctls, (unsigned long long)st_fail,
	       (unsigned long long)st_lost);
	rt_status_cpu_wp(nregs, st_arms, st_owner_hits, st_other_hits);
}
