/* Watchpoints (x86 debug registers through perf breakpoint events).
 *
 * Each thread opens its D breakpoints ONCE at its start (disabled, RW, 8
 * bytes, on a dummy word of its own state) and re-targets them with
 * PERF_EVENT_IOC_MODIFY_ATTRIBUTES, which only accepts an attr equal to the
 * original except for the breakpoint fields: every register keeps its
 * template attr and only bp_addr changes.  A register that could not be
 * re-targeted is left out of the arm (LOST records with CT_LOST_WP_SETUP at
 * the thread's end count them).
 *
 * Trap delivery: a synchronous SIGTRAP (attr.sigtrap, remove_on_exec;
 * si_code TRAP_PERF, si_perf_data = RT_SIG_MAGIC | register), or where the
 * kernel refuses sigtrap (or COMMTRACE_WP_ASYNC=1) the runtime's real-time
 * signal through O_ASYNC on each breakpoint fd (si_fd says which).
 *
 * On a trap: WP_HIT (time, ip after the access, watched word, register,
 * cpu, kind if the instruction before ip decodes to that line), then all of
 * the thread's registers are disabled until its next arm.
 *
 * Software watchpoints (rt_cfg.wp_soft, COMMTRACE_WP_SOFT=1; the inst
 * sampler, which sees every access): no perf events, no signals.  Arming
 * and disarming only set the thread's words and tell the sampler
 * (sampler_ops.watch); the sampler reports the thread's first access to a
 * watched word (rt_wp_soft_hit) with its exact ip and kind.  The same
 * WP_ARM and WP_HIT records, the same one-hit-then-disarmed rule.  With
 * line watches (rt_cfg.wp_lines > 0, the inst default) the thread watches
 * whole lines in wp_lines slots (t->wlines, kept by cd_step: see
 * formats/comdetective.h): a WP_ARM per watched line, and a hit carries
 * the bytes of the access in the line and the watch's slot (reg). */
#include "rt.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>
#include <linux/hw_breakpoint.h>

bool rt_wp_sigtrap = true;
static _Atomic int sigtrap_refused;
static _Atomic int setup_logged;

static int open_one(struct rt_thread *t, int i, bool sigtrap, int group_fd)
{
	struct perf_event_attr *a = &t->wp_attr[i];
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_BREAKPOINT;
	a->bp_type = HW_BREAKPOINT_RW;
	a->bp_addr = (uintptr_t)&t->wp_dummy;
	a->bp_len = HW_BREAKPOINT_LEN_8;
	a->sample_period = 1;
	/* grouped: the leader (register 0) is disabled and switches the whole
	 * group; the members are "enabled" and follow it */
	a->disabled = group_fd < 0;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	if (sigtrap) {
		a->sigtrap = 1;
		a->remove_on_exec = 1;
		a->sig_data = RT_SIG_MAGIC | (uint64_t)i;
	} else {
		a->wakeup_events = 1;
	}
	/* on the thread's tid: the thread itself at its start, or the writer
	 * for it (rt_wp_open_late) */
	int fd = (int)syscall(SYS_perf_event_open, a, t->tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	fd = rt_fd_high(fd);
	rt_perf_fd_opened(fd);
	rt_perf_mark_fd(fd);
	if (!sigtrap) {
		int rc = rt_perf_route_signal(fd, t->tid);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	return fd;
}

static void close_all(struct rt_thread *t)
{
	t->nwp = 0;
	for (int i = 0; i < CT_WP_MAX; i++) {
		int fd = t->wp_fd[i];
		t->wp_fd[i] = -1;
		rt_perf_close(fd);
	}
}

/* Open registers 0..want-1; grouped (register 0 leads) when group; *n:
 * how many are open. */
static int open_all(struct rt_thread *t, int want, bool group, int *n)
{
	for (int i = 0; i < want; i++) {
		bool st = !rt_cfg.wp_async && !atomic_load(&sigtrap_refused);
		int gfd = group && i ? t->wp_fd[0] : -1;
		int fd = open_one(t, i, st, gfd);
		if (fd == -EINVAL && st) {
			/* kernel without sigtrap: fall back to O_ASYNC for everyone */
			atomic_store(&sigtrap_refused, 1);
			fd = open_one(t, i, false, gfd);
		}
		if (fd < 0)
			return fd;
		t->wp_fd[i] = fd;
		*n = i + 1;
	}
	return 0;
}

/* Software watchpoints: "registers" without a limit of the hardware's
 * (CT_WP_MAX: what a WP_ARM record holds). */
static int soft_start(struct rt_thread *t)
{
	if (!t->sampler || !t->sampler->watch) {
		if (!atomic_exchange(&setup_logged, 1))
			rt_log(1, "software watchpoints need the inst sampler: recording without "
			       "watchpoints");
		return 0;
	}
	t->nwp = rt_cfg.watchpoints < CT_WP_MAX ? rt_cfg.watchpoints : CT_WP_MAX;
	for (int i = 0; i < t->nwp; i++)
		t->wp_slot[i] = -1;
	return t->nwp;
}

/* The sampler's view of the thread's watched words (on the thread only). */
static void soft_tell(struct rt_thread *t)
{
	if (rt_cfg.wp_soft && t->sampler && t->sampler->watch && t == rt_self)
		t->sampler->watch(t);
}

/* Open the thread's registers, disabled; *n: how many. */
static void open_regs(struct rt_thread *t, int *n)
{
	int want = rt_cfg.watchpoints;
	/* A group costs one ioctl to switch all registers on or off (measured
	 * here: an arm+disarm cycle of 4 registers 10-12 us grouped, 19-20 us
	 * separately).  If the group does not open, separate events. */
	t->wp_group = want > 1;
	*n = 0;
	int rc = open_all(t, want, t->wp_group, n);
	if (rc < 0 && t->wp_group) {
		close_all(t);
		*n = 0;
		t->wp_group = false;
		rc = open_all(t, want, false, n);
	}
	if (rc < 0 && !atomic_exchange(&setup_logged, 1))
		rt_log(1, "thread %u: watchpoint %d not available (%s)%s", t->index, *n,
		       strerror(-rc), *n ? "" : ": recording without watchpoints");
	rt_wp_sigtrap = !rt_cfg.wp_async && !atomic_load(&sigtrap_refused);
}

int rt_wp_thread_start(struct rt_thread *t)
{
	if (rt_cfg.wp_soft)
		return soft_start(t);
	if (atomic_load(&t->ev_state) == RT_EV_TIMER)
		return 0;   /* the writer opens them later, if its switches leave room */
	if (atomic_load(&t->samp_by_writer))
		return 0;   /* the CPUs' registers, armed by the writer (rt_cpuwp.c) */
	open_regs(t, &t->nwp);
	return t->nwp;
}

int rt_wp_open_late(struct rt_thread *t)
{
	/* without the board nothing is armed (as at a thread's start) */
	if (rt_board_ok)
		open_regs(t, &t->ev_nwp);
	else
		t->ev_nwp = 0;
	return t->ev_nwp;
}

static void regs_off(struct rt_thread *t)
{
	if (t->wp_group) {
		if (t->wp_armed)
			ioctl(t->wp_fd[0], PERF_EVENT_IOC_DISABLE, 0);
	} else {
		for (int i = 0; i < t->nwp; i++)
			if (t->wp_slot[i] >= 0)
				ioctl(t->wp_fd[i], PERF_EVENT_IOC_DISABLE, 0);
	}
}

void rt_wp_disarm(struct rt_thread *t)
{
	if (!rt_cfg.wp_soft)
		regs_off(t);
	for (int i = 0; i < t->nwp; i++)
		t->wp_slot[i] = -1;
	t->wp_armed = 0;
	soft_tell(t);
}

/* Per-thread perf events cost their thread at each of its context
 * switches: its debug registers rt_cfg.wp_switch_ns armed and
 * rt_cfg.wp_open_switch_ns open but disabled, and the soft sampler's own
 * event rt_cfg.soft_event_switch_ns (a kernel timer started and stopped at
 * each switch; commrec measures all three; a hypervisor that traps the
 * registers' writes and timer programming makes them microseconds, and a
 * thread that waits at barriers switches tens of thousands of times a
 * second).  Together they get rt_cfg.wp_budget % of the thread's CPU time.
 * At each of its samples (skipped ones too: a thread that waits in the
 * kernel or spins in an OpenMP runtime has few usable ones) the switches
 * since its last sample are charged at the cost of what it carried
 * meanwhile (registers armed at any time: armed).  Then, in this order:
 *   - a thread on its timer since its start (sampler_soft.c) asks for its
 *     event and registers where they would cost at most half the budget
 *     (ask_events);
 *   - where the sampling event (with the registers open) passes the budget
 *     over the thread's life, the thread leaves it for its timer (no cost
 *     at a switch, a sample per tick at most), at the end of this handler;
 *   - where the registers, open alone, pass it after RT_WP_JUDGE_NS of
 *     CPU time, they are closed for good (reopening them here would take
 *     the runtime's descriptor lock in a signal handler);
 *   - the registers may be armed at this sample only if the next interval,
 *     with as many switches armed, still fits: a thread that switches often
 *     arms at a share of its samples (a duty cycle), not at none.
 * On the thread, in its sample's handler, before the arming; not once the
 * thread is stopped (the writer then disables its events:
 * rt_thread_stop_sampling waits for this handler first). */
#define RT_WP_JUDGE_NS 5000000ull
#define RT_EVENT_JUDGE_NS 2000000ull

/* soft: the thread samples by its own perf event and has its timer to
 * fall back on (sampler_soft.c) */
static bool event_leavable(const struct rt_thread *t)
{
	return atomic_load(&t->ev_state) == RT_EV_ADOPTED && t->samp_fd >= 0 && t->timer_ok &&
	       !t->samp_leave;
}

static void close_for_good(struct rt_thread *t, uint64_t cpu, uint64_t sw)
{
	if (t->wp_armed)
		rt_wp_disarm(t);
	close_all(t);
	t->wp_closed_cpu = cpu;
	t->wp_closed_switches = sw;
}

/* A thread on its timer since its start asks the writer for its events
 * where its switches so far, with them (the sampling event and the open
 * registers), cost at most half its budget: room for arming, and for
 * switching more often later. */
static void ask_events(struct rt_thread *t, uint64_t cpu, uint64_t sw, uint64_t allowance)
{
	if (cpu < RT_EVENT_JUDGE_NS ||
	    sw * (rt_cfg.soft_event_switch_ns + rt_cfg.wp_open_switch_ns) * 2 > allowance)
		return;
	int expect = RT_EV_TIMER;
	if (atomic_compare_exchange_strong(&t->ev_state, &expect, RT_EV_WANTED)) {
		t->ev_asked_cpu = cpu;
		t->ev_asked_switches = sw;
	}
}

bool rt_check_switch_cost(struct rt_thread *t)
{
	bool regs = !rt_cfg.wp_soft && rt_cfg.wp_switch_ns && t->nwp;
	bool event = event_leavable(t);
	bool asking = atomic_load(&t->ev_state) == RT_EV_TIMER;
	if (!rt_cfg.wp_budget || (!regs && !event && !asking) || t != rt_self ||
	    atomic_load(&t->stopped))
		return true;
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return true;
	uint64_t cpu = rt_thread_cpu_ns();
	uint64_t sw = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
	uint64_t since = sw - t->wp_acct_switches;
	uint64_t ev = event ? rt_cfg.soft_event_switch_ns : 0;
	uint64_t open = regs ? rt_cfg.wp_open_switch_ns : 0;
	t->wp_spent_ns += since * (ev + (regs && t->wp_armed_since ? rt_cfg.wp_switch_ns : open));
	t->wp_acct_switches = sw;
	t->wp_acct_cpu = cpu;
	t->wp_armed_since = t->wp_armed != 0;
	uint64_t allowance = cpu * rt_cfg.wp_budget / 100;
	if (asking) {
		ask_events(t, cpu, sw, allowance);
		return true;
	}
	if (event && cpu >= RT_EVENT_JUDGE_NS && sw * (ev + open) > allowance) {
		t->samp_leave = true;
		t->samp_left_cpu = cpu;
		t->samp_left_switches = sw;
		t->samp_left_each = ev + open;
		ev = 0;
	}
	if (!regs)
		return true;
	t->wp_judged++;
	if (cpu >= RT_WP_JUDGE_NS && sw * open > allowance) {
		close_for_good(t, cpu, sw);
		return false;
	}
	if (cpu < RT_WP_JUDGE_NS || t->wp_spent_ns + since * (rt_cfg.wp_switch_ns + ev) <= allowance) {
		t->wp_allowed++;
		return true;
	}
	if (t->wp_armed)
		rt_wp_disarm(t);
	t->wp_armed_since = false;
	return false;
}

void rt_wp_thread_stop(struct rt_thread *t, int self)
{
	for (int i = 0; i < t->nwp; i++)
		if (t->wp_fd[i] >= 0)
			ioctl(t->wp_fd[i], PERF_EVENT_IOC_DISABLE, 0);
	t->wp_armed = 0;
	if (self) {
		t->wlines.live = 0;
		soft_tell(t);   /* (another thread: the sampler stops the thread's checks) */
	}
	if (!self)
		return;
	close_all(t);
	if (t->wp_setup_fail) {
		struct ct_record r = { .type = CT_REC_LOST, .time = rt_now() };
		r.u.lost.reason = CT_LOST_WP_SETUP;
		r.u.lost.count = t->wp_setup_fail;
		if (rt_push(t, &r) == 0)
			t->wp_setup_fail = 0;
	}
}

/* Software watchpoints: register i watches plan word i. */
static int soft_program(struct rt_thread *t, const struct ct_wp_arm *plan, struct ct_wp_arm *arm)
{
	int n = plan->nwp < t->nwp ? plan->nwp : t->nwp;
	for (int i = 0; i < n; i++) {
		t->wp_addr[i] = plan->wp_addr[i];
		t->wp_slot[i] = (int8_t)i;
		arm->wp_addr[i] = plan->wp_addr[i];
		arm->wp_len[i] = 8;
	}
	return n;
}

/* Debug registers: re-target them (and enable them unless grouped) on the
 * plan's words; the ones that worked, in order, into arm; how many. */
static int regs_program(struct rt_thread *t, const struct ct_wp_arm *plan, struct ct_wp_arm *arm)
{
	int n = plan->nwp;
	int k = 0;
	for (int i = 0; i < t->nwp; i++) {
		/* grouped, every member follows the leader: the registers this
		 * arm does not use (or that fail) must watch the dummy word */
		uint64_t addr = i < n ? plan->wp_addr[i] : (uintptr_t)&t->wp_dummy;
		if (i >= n && !t->wp_group)
			break;
		if (t->wp_attr[i].bp_addr != addr) {
			t->wp_attr[i].bp_addr = addr;
			if (ioctl(t->wp_fd[i], PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &t->wp_attr[i]) < 0) {
				t->wp_setup_fail++;
				if (t->wp_group) {
					/* a member left on an old line would report false hits */
					t->wp_attr[i].bp_addr = (uintptr_t)&t->wp_dummy;
					if (ioctl(t->wp_fd[i], PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &t->wp_attr[i]) < 0)
						return 0;   /* the group stays off */
				}
				continue;
			}
		}
		if (i >= n)
			continue;
		if (!t->wp_group && ioctl(t->wp_fd[i], PERF_EVENT_IOC_ENABLE, 0) < 0) {
			t->wp_setup_fail++;
			continue;
		}
		t->wp_addr[i] = addr;
		t->wp_slot[i] = (int8_t)k;
		arm->wp_addr[k] = addr;
		arm->wp_len[k] = 8;
		k++;
	}
	if (k && t->wp_group && ioctl(t->wp_fd[0], PERF_EVENT_IOC_ENABLE, 0) < 0) {
		t->wp_setup_fail++;
		for (int i = 0; i < t->nwp; i++)
			t->wp_slot[i] = -1;
		return 0;
	}
	return k;
}

void rt_wp_arm(struct rt_thread *t, const struct ct_wp_arm *plan, uint64_t now)
{
	uint64_t t0 = rt_cfg.verbose >= 3 ? rt_now() : 0;
	struct ct_record r = { .type = CT_REC_WP_ARM, .time = now };
	struct ct_wp_arm *arm = &r.u.arm;
	arm->pub_time = plan->pub_time;
	arm->pub_addr = plan->pub_addr;
	arm->pub_len = plan->pub_len;
	arm->publisher = plan->publisher;
	int k = rt_cfg.wp_soft ? soft_program(t, plan, arm) : regs_program(t, plan, arm);
	if (!k)
		return;
	arm->nwp = (uint8_t)k;
	t->wp_armed = k;
	t->wp_armed_since = true;
	t->wp_hit = false;
	t->wp_arm_time = now;
	rt_push(t, &r);
	soft_tell(t);
	if (t0) {
		t->arm_ns += rt_now() - t0;
		t->arms++;
	}
}

/* A WP_HIT for register i at ip (kind filled by the caller), or false if
 * the register is no longer armed (a late trap). */
static bool hit_start(struct rt_thread *t, int i, uint64_t ip, struct ct_record *r)
{
	if (i < 0 || i >= t->nwp || t->wp_slot[i] < 0 || !t->wp_armed)
		return false;
	memset(r, 0, sizeof *r);
	r->type = CT_REC_WP_HIT;
	r->time = rt_now();
	struct ct_wp_hit *h = &r->u.hit;
	h->ip = ip;
	h->addr = t->wp_addr[i];
	h->len = 8;
	h->reg = (uint8_t)t->wp_slot[i];
	h->cpu = (uint32_t)sched_getcpu();
	h->kind = CT_ACCESS_LOAD;
	return true;
}

/* One hit and then nothing armed until the next arm (Algorithm 1). */
static void hit_end(struct rt_thread *t, struct ct_record *r)
{
	rt_wp_disarm(t);
	t->wp_hit = true;
	rt_push(t, r);
	t->trap_ns += rt_now() - r->time;
	t->traps++;
}

void rt_wp_soft_hit(struct rt_thread *t, int i, uint64_t ip, unsigned kind)
{
	struct ct_record r;
	if (!hit_start(t, i, ip, &r))
		return;
	r.u.hit.kind = (uint8_t)kind;
	hit_end(t, &r);
}

void rt_wp_lines_step(struct rt_thread *t, const struct cd_step *st, uint64_t now)
{
	for (unsigned i = 0; i < st->narms; i++) {
		struct ct_record r = { .type = CT_REC_WP_ARM, .time = now };
		r.u.arm = st->arms[i].arm;
		rt_push(t, &r);
	}
	soft_tell(t);
}

void rt_wp_line_hit(struct rt_thread *t, unsigned slot, uint64_t addr, unsigned len, uint64_t ip,
                    unsigned kind)
{
	struct ct_record r = { .type = CT_REC_WP_HIT, .time = rt_now() };
	struct ct_wp_hit *h = &r.u.hit;
	h->ip = ip;
	h->addr = addr;
	h->len = (uint8_t)len;
	h->reg = (uint8_t)slot;
	h->cpu = (uint32_t)sched_getcpu();
	h->kind = (uint8_t)kind;
	rt_push(t, &r);
	soft_tell(t);
}

void rt_wp_hit_kind(int decoded, const struct dec_access *a, uint64_t watched, uint8_t *kind)
{
	if (decoded == 0 && (a->flags & CT_SAMPLE_PREV_INSN) &&
	    board_line(&rt_board, a->addr) == board_line(&rt_board, watched))
		*kind = a->kind;
}

static void hit(struct rt_thread *t, int i, void *uc)
{
	ucontext_t *u = uc;
	struct ct_record r;
	if (!hit_start(t, i, (uint64_t)u->uc_mcontext.gregs[REG_RIP], &r))
		return;                 /* late: already disarmed */
	struct ct_wp_hit *h = &r.u.hit;
	/* The access is done: the instruction before ip made it (rt_wp_hit_kind). */
	struct dec_regs regs;
	memset(&regs, 0, sizeof regs);
	dec_regs_from_ucontext(&regs, uc);
	regs.fs_base = t->fs_base;
	struct dec_access a;
	rt_wp_hit_kind(dec_sample_access(&regs, &a), &a, h->addr, &h->kind);
	hit_end(t, &r);
}

int rt_wp_on_sigtrap(struct rt_thread *t, siginfo_t *si, void *uc)
{
	uint64_t data;
	memcpy(&data, (char *)si + 24, sizeof data);
	hit(t, (int)(data & 0xff), uc);
	return 1;
}

int rt_wp_on_async(struct rt_thread *t, siginfo_t *si, void *uc)
{
	for (int i = 0; i < t->nwp; i++)
		if (t->wp_fd[i] == si->si_fd) {
			hit(t, i, uc);
			return 1;
		}
	return 0;
}
