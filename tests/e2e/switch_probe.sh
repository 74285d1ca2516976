#!/usr/bin/env bash
# The soft path probe's verdict and words (record/switch_probe.c) from
# measurements built by hand: a harness compiled here against the launcher's
# source calls switch_probe_decide and switch_probe_detail.
#   - events whose best run took less CPU time than the best plain run: no
#     measurable cost (noise), never a negative one; the perf path
#   - a cost above the limit: the timers, with the exact percent and
#     per-switch cost; one at the limit: not
. "$(dirname "$0")/../lib.sh"

require switch_probe "$CT_BUILD/librecord-common.a" "$CT_BUILD/libctformat.a" cc
cat >"$WORK/harness.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "switch_probe.h"

static int failed;

static void expect(const char *name, int ok, const char *detail)
{
	if (ok)
		printf("PASS %s\n", name);
	else {
		printf("FAIL %s: %s\n", name, detail);
		failed = 1;
	}
}

static void probe(struct switch_probe *p, double plain_ms, double event_ms, unsigned sw,
                  char *d, size_t cap)
{
	memset(p, 0, sizeof *p);
	p->period_ns = 1000000;
	p->plain_ns = (uint64_t)(plain_ms * 1e6);
	p->event_ns = (uint64_t)(event_ms * 1e6);
	p->switches = sw;
	switch_probe_decide(p);
	switch_probe_detail(p, d, cap);
}

int main(void)
{
	struct switch_probe p;
	char d[256];
	/* the tester's case: 13.2 ms with the events against 15.1 ms without */
	probe(&p, 15.1, 13.2, 1981, d, sizeof d);
	expect("switch_probe_noise_no_cost", p.noise && p.added_ns == 0 && p.added_pct == 0 &&
	       !p.timer, d);
	expect("switch_probe_noise_words", !strcmp(d, "inherited task-clock events at a 1000 us "
	       "period: no measurable cost (within noise: 13.2 ms with them against 15.1 ms "
	       "without, 1981 switches); limit 5%"), d);
	/* 20 ms against 16 ms over 1000 switches: +25%, 4 us per switch */
	probe(&p, 16.0, 20.0, 1000, d, sizeof d);
	expect("switch_probe_cost_timer", !p.noise && p.added_pct == 25 && p.added_ns == 4000 &&
	       p.timer, d);
	expect("switch_probe_cost_words", !strcmp(d, "inherited task-clock events at a 1000 us "
	       "period add 25% CPU time, 4.0 us per context switch (1000 switches: 20.0 ms "
	       "against 16.0 ms); limit 5%"), d);
	/* exactly the limit, 5%: the perf path */
	probe(&p, 20.0, 21.0, 500, d, sizeof d);
	expect("switch_probe_at_limit_perf", p.added_pct == 5 && !p.timer, d);
	return failed;
}
C
# the build's sanitizers (make check ASAN=1): its libraries need their runtime
san=$(sed -n 's/.*\(-fsanitize=[^ ]*\).*/\1/p' "$CT_BUILD/build-config" 2>/dev/null)
# shellcheck disable=SC2086
if cc -std=c11 -D_GNU_SOURCE -Wall -Wextra $san -I"$CT_ROOT/record" -I"$CT_ROOT/record/common" \
	-I"$CT_ROOT/formats" -o "$WORK/harness" "$WORK/harness.c" "$CT_ROOT/record/switch_probe.c" \
	"$CT_BUILD/librecord-common.a" "$CT_BUILD/libctformat.a" -lpthread 2>"$WORK/cc.err"; then
	# its FAIL lines fail the script (done_tests, tests/lib.sh)
	# shellcheck disable=SC2034
	"$WORK/harness" || ct_failed=1
else
	fail switch_probe_build "$(head -c 400 "$WORK/cc.err")"
fi
done_tests
