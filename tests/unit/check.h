/* Minimal unit-test support: one program per area, one line per case.
 *
 *   static void test_roundtrip(void) { CHECK(x == 1); CHECK_EQ_U(a, b); }
 *   int main(void) { RUN(test_roundtrip); return check_summary(); }
 *
 * Output follows tests/run.sh: "PASS name", "FAIL name: file:line: why",
 * "SKIP name: reason" (call SKIP("reason") and return from the case).
 *
 * CASE=PATTERN[,PATTERN...] in the environment runs only the cases whose
 * names match one of the shell patterns (fnmatch), e.g.
 *   CASE=test_svg_scale_and_header build/tests/ana_output
 *   CASE='test_h5*,test_csv*' make check TESTS=ana_output
 * Scratch files go under $TMPDIR (else /tmp): check_tmp_path. */
#ifndef CT_CHECK_H
#define CT_CHECK_H
#include <stdio.h>
#include <string.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int check_failed_cases, check_case_failed, check_case_skipped;
static const char *check_case_name;

#define CHECK(cond) do { if (!(cond)) { \
	if (!check_case_failed) printf("FAIL %s: %s:%d: %s\n", check_case_name, __FILE__, __LINE__, #cond); \
	check_case_failed = 1; } } while (0)
#define CHECK_EQ_U(a, b) do { unsigned long long check_a_ = (a), check_b_ = (b); if (check_a_ != check_b_) { \
	if (!check_case_failed) printf("FAIL %s: %s:%d: %s == %llu, expected %s == %llu\n", check_case_name, \
		__FILE__, __LINE__, #a, check_a_, #b, check_b_); \
	check_case_failed = 1; } } while (0)
#define CHECK_NEAR(a, b, eps) do { double check_a_ = (a), check_b_ = (b); \
	if (!(check_a_ - check_b_ <= (eps) && check_b_ - check_a_ <= (eps))) { \
	if (!check_case_failed) printf("FAIL %s: %s:%d: %s == %g, expected %g\n", check_case_name, \
		__FILE__, __LINE__, #a, check_a_, check_b_); \
	check_case_failed = 1; } } while (0)
#define CHECK_STR(a, b) do { const char *check_a_ = (a), *check_b_ = (b); \
	if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_)) { \
	if (!check_case_failed) printf("FAIL %s: %s:%d: %s == \"%s\", expected \"%s\"\n", check_case_name, \
		__FILE__, __LINE__, #a, check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)"); \
	check_case_failed = 1; } } while (0)
#define SKIP(reason) do { printf("SKIP %s: %s\n", check_case_name, reason); check_case_skipped = 1; } while (0)

/* Is case `name` selected by $CASE? */
static inline int check_case_wanted(const char *name)
{
	const char *want = getenv("CASE");
	if (!want || !*want)
		return 1;
	char pat[256];
	for (const char *p = want; *p;) {
		size_t l = strcspn(p, ",");
		snprintf(pat, sizeof pat, "%.*s", (int)(l < sizeof pat ? l : sizeof pat - 1), p);
		if (l && fnmatch(pat, name, 0) == 0)
			return 1;
		p += l + (p[l] == ',');
	}
	return 0;
}

/* "$TMPDIR/name" (TMPDIR unset or empty: /tmp) into buf; returns buf. */
static inline char *check_tmp_path(char *buf, size_t cap, const char *name)
{
	const char *t = getenv("TMPDIR");
	snprintf(buf, cap, "%s/%s", t && *t ? t : "/tmp", name);
	return buf;
}

#define RUN(fn) do { if (!check_case_wanted(#fn)) break; check_case_name = #fn; check_case_failed = 0; check_case_skipped = 0; fn(); \
	if (check_case_failed) check_failed_cases++; \
	else if (!check_case_skipped) printf("PASS %s\n", #fn); } while (0)

static inline int check_summary(void) { return check_failed_cases ? 1 : 0; }

/* Test data: one xorshift64 step of *state (nonzero); the same sequence on
 * every machine. */
static inline uint64_t check_xorshift(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* Run the body of a case in a child process (for what must not leak into
 * the next cases: environment variables, a library's global state).  Its
 * FAIL and SKIP lines are printed by the child; its verdict comes back in
 * the exit status (0 pass, 1 fail, 2 skip). */
static inline void check_in_child(void (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		fn();
		fflush(stdout);
		_exit(check_case_failed ? 1 : check_case_skipped ? 2 : 0);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		printf("FAIL %s: child did not exit normally\n", check_case_name);
		check_case_failed = 1;
		return;
	}
	if (WEXITSTATUS(st) == 1)
		check_case_failed = 1;
	else if (WEXITSTATUS(st) == 2)
		check_case_skipped = 1;
}
#endif
