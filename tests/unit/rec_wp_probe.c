/* The functional watchpoint probe (record/common/wp_probe.h): its verdict is
 * consistent with what it measured on this machine, whatever that is, and
 * its words (CONFIG watchpoint_probe, watchpoint_probe_detail) are exact for
 * each kind of machine, built by hand. */
#include <sched.h>

#include "check.h"
#include "commtrace.h"
#include "wp_probe.h"

static void test_live_probe_consistent(void)
{
	struct wp_probe p;
	wp_probe_run(&p, CT_WP_MAX);
	char d[256];
	wp_probe_detail(&p, d, sizeof d);
	printf("  (this machine: %s: %s, %.3f ms)\n", wp_verdict_name(p.verdict), d, (double)p.ns / 1e6);
	CHECK_EQ_U(p.want, CT_WP_MAX);
	CHECK(p.opened <= p.want);
	CHECK(p.retargeted <= p.opened);
	CHECK(p.fired <= p.retargeted);
	int counted = 0;
	for (int i = 0; i < CT_WP_MAX; i++)
		counted += p.counts[i] >= WP_PROBE_WRITES;
	CHECK_EQ_U(counted, p.fired);
	CHECK_EQ_U(p.verdict, !p.opened ? WP_NO_OPEN : p.fired ? WP_FIRE : WP_NO_FIRE);
	if (p.opened == 0)
		CHECK(p.open_errno != 0);
}

/* The per-CPU kind (pid -1 on the calling thread's CPU): the same
 * consistency, whatever this machine allows (per-CPU events need
 * perf_event_paranoid <= 0 or CAP_PERFMON; registers another process holds
 * make them ENOSPC), and the thread's CPU affinity is as before. */
static void test_live_cpu_probe_consistent(void)
{
	cpu_set_t before, after;
	CHECK(sched_getaffinity(0, sizeof before, &before) == 0);
	struct wp_probe p;
	wp_probe_cpu_run(&p, CT_WP_MAX);
	CHECK(sched_getaffinity(0, sizeof after, &after) == 0);
	CHECK(CPU_EQUAL(&before, &after));
	char d[256];
	wp_probe_detail(&p, d, sizeof d);
	printf("  (this machine, per CPU: %s: %s)\n", wp_verdict_name(p.verdict), d);
	CHECK(p.opened <= p.want);
	CHECK(p.retargeted <= p.opened);
	CHECK(p.fired <= p.retargeted);
	CHECK_EQ_U(p.verdict, !p.opened ? WP_NO_OPEN : p.fired ? WP_FIRE : WP_NO_FIRE);
	if (p.opened == 0)
		CHECK(p.open_errno != 0);
}

static void test_live_probe_clamps_want(void)
{
	struct wp_probe p;
	wp_probe_run(&p, 99);
	CHECK_EQ_U(p.want, CT_WP_MAX);
	wp_probe_run(&p, 1);
	CHECK_EQ_U(p.want, 1);
	CHECK(p.opened <= 1);
	wp_probe_run(&p, 0);
	CHECK_EQ_U(p.opened, 0);
	char d[256];
	wp_probe_detail(&p, d, sizeof d);
	CHECK_STR(d, "not probed (no watchpoints asked for)");
}

static void test_words(void)
{
	CHECK_STR(wp_verdict_name(WP_FIRE), "fires");
	CHECK_STR(wp_verdict_name(WP_NO_FIRE), "no-fire");
	CHECK_STR(wp_verdict_name(WP_NO_OPEN), "no-open");
	char d[256];
	struct wp_probe vm = { .want = 4, .opened = 4, .retargeted = 4, .fired = 0,
	                       .verdict = WP_NO_FIRE };
	wp_probe_detail(&vm, d, sizeof d);
	CHECK_STR(d, "4 of 4 debug registers opened; none counted any of 16 writes to its word");
	struct wp_probe metal = { .want = 4, .opened = 4, .retargeted = 4, .fired = 4,
	                          .verdict = WP_FIRE };
	wp_probe_detail(&metal, d, sizeof d);
	CHECK_STR(d, "4 of 4 debug registers opened; 4 counted all 16 writes to its word");
	struct wp_probe old = { .want = 4, .opened = 2, .retargeted = 0, .verdict = WP_NO_FIRE };
	wp_probe_detail(&old, d, sizeof d);
	CHECK_STR(d, "2 of 4 debug registers opened, 0 re-targeted (PERF_EVENT_IOC_MODIFY_ATTRIBUTES); "
	             "none counted any of 16 writes to its word");
	struct wp_probe denied = { .want = 4, .open_errno = 13, .verdict = WP_NO_OPEN };
	wp_probe_detail(&denied, d, sizeof d);
	CHECK_STR(d, "perf breakpoints cannot be opened here (Permission denied)");
	/* a short buffer is cut, never overrun */
	char small[12];
	wp_probe_detail(&vm, small, sizeof small);
	CHECK_EQ_U(strlen(small), sizeof small - 1);
}

int main(void)
{
	RUN(test_live_probe_consistent);
	RUN(test_live_cpu_probe_consistent);
	RUN(test_live_probe_clamps_want);
	RUN(test_words);
	return check_summary();
}
