/* Minimal unit-test support: one program per area, one line per case.
 *
 *   static void test_roundtrip(void) { CHECK(x == 1); CHECK_EQ_U(a, b); }
 *   int main(void) { RUN(test_roundtrip); return check_summary(); }
 *
 * Output follows tests/run.sh: "PASS name", "FAIL name: file:line: why",
 * "SKIP name: reason" (call SKIP("reason") and return from the case). */
#ifndef CT_CHECK_H
#define CT_CHECK_H
#include <stdio.h>
#include <string.h>
#include <inttypes.h>

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

#define RUN(fn) do { check_case_name = #fn; check_case_failed = 0; check_case_skipped = 0; fn(); \
	if (check_case_failed) check_failed_cases++; \
	else if (!check_case_skipped) printf("PASS %s\n", #fn); } while (0)

static inline int check_summary(void) { return check_failed_cases ? 1 : 0; }
#endif
