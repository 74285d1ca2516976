/* The CPUs' debug registers shared by the program's threads
 * (record/common/wp_pool.c), the bookkeeping of the soft sampler's per-CPU
 * watchpoints: each register's watch and its owner, what a hit by the
 * owner, by another thread or on a re-targeted register means, and which
 * watch gives way when more threads watch than there are registers. */
#include <stdint.h>

#include "check.h"
#include "wp_pool.h"

static const int A, B, C;    /* three threads (their addresses) */

static void test_share(void)
{
	struct wp_pool p;
	wp_pool_init(&p, 4);
	CHECK_EQ_U(wp_pool_share(&p, 0), 4);
	CHECK_EQ_U(wp_pool_share(&p, 1), 4);
	CHECK_EQ_U(wp_pool_share(&p, 2), 2);
	CHECK_EQ_U(wp_pool_share(&p, 3), 1);
	CHECK_EQ_U(wp_pool_share(&p, 6), 1);   /* at least one */
	wp_pool_init(&p, 9);
	CHECK_EQ_U(p.n, CT_WP_MAX);
}

static void test_take_and_evict(void)
{
	struct wp_pool p;
	wp_pool_init(&p, 4);
	unsigned reg[CT_WP_MAX], nev = 99;
	const void *ev[CT_WP_MAX];
	const uint64_t a[2] = { 0x1000, 0x1008 }, b[2] = { 0x2000, 0x2010 }, c[1] = { 0x3018 };
	CHECK_EQ_U(wp_pool_take(&p, &A, a, 2, reg, ev, &nev), 2);
	CHECK_EQ_U(nev, 0);
	CHECK_EQ_U(reg[0], 0);
	CHECK_EQ_U(reg[1], 1);
	CHECK_EQ_U(wp_pool_take(&p, &B, b, 2, reg, ev, &nev), 2);
	CHECK_EQ_U(reg[0], 2);
	CHECK_EQ_U(reg[1], 3);
	CHECK_EQ_U(nev, 0);
	/* full: C takes a register of the oldest watch, A's */
	CHECK_EQ_U(wp_pool_take(&p, &C, c, 1, reg, ev, &nev), 1);
	CHECK_EQ_U(nev, 1);
	CHECK(ev[0] == &A);
	CHECK(reg[0] == 0 || reg[0] == 1);
	CHECK_EQ_U(wp_pool_held(&p, &A), 1);
	CHECK_EQ_U(wp_pool_held(&p, &B), 2);
	CHECK_EQ_U(wp_pool_held(&p, &C), 1);
	/* B arms again: its own registers first, nobody else loses one */
	const uint64_t b2[2] = { 0x4000, 0x4008 };
	CHECK_EQ_U(wp_pool_take(&p, &B, b2, 2, reg, ev, &nev), 2);
	CHECK_EQ_U(nev, 0);
	CHECK_EQ_U(reg[0], 2);
	CHECK_EQ_U(reg[1], 3);
	CHECK_EQ_U(wp_pool_held(&p, &A), 1);
	/* more words than registers: n */
	const uint64_t many[CT_WP_MAX + 1] = { 1, 2, 3, 4, 5 };
	CHECK_EQ_U(wp_pool_take(&p, &A, many, CT_WP_MAX + 1, reg, ev, &nev), 4);
	CHECK_EQ_U(nev, 2);      /* B and C, each once */
	CHECK_EQ_U(wp_pool_held(&p, &B) + wp_pool_held(&p, &C), 0);
}

static void test_hits(void)
{
	struct wp_pool p;
	wp_pool_init(&p, 4);
	unsigned reg[CT_WP_MAX], nev, r = 77;
	const void *ev[CT_WP_MAX];
	const uint64_t a[2] = { 0x1000, 0x1008 }, b[1] = { 0x2000 };
	wp_pool_take(&p, &A, a, 2, reg, ev, &nev);
	wp_pool_take(&p, &B, b, 1, reg + 2, ev, &nev);
	/* another thread's access (the publisher's, a third's, one not
	 * recorded): the watch goes on */
	CHECK_EQ_U(wp_pool_hit(&p, reg[1], 0x1008, &C, &r), WP_POOL_OTHER);
	CHECK_EQ_U(wp_pool_hit(&p, reg[1], 0x1008, NULL, &r), WP_POOL_OTHER);
	CHECK_EQ_U(wp_pool_held(&p, &A), 2);
	CHECK_EQ_U(r, 77);
	/* a register re-targeted since (its old word): stale */
	CHECK_EQ_U(wp_pool_hit(&p, reg[0], 0x1008, &A, &r), WP_POOL_STALE);
	CHECK_EQ_U(wp_pool_hit(&p, 9, 0x1000, &A, &r), WP_POOL_STALE);
	/* the owner's: its hit on the arm's word 1, the whole watch ends */
	CHECK_EQ_U(wp_pool_hit(&p, reg[1], 0x1008, &A, &r), WP_POOL_OWNER);
	CHECK_EQ_U(r, 1);
	CHECK_EQ_U(wp_pool_held(&p, &A), 0);
	CHECK_EQ_U(wp_pool_hit(&p, reg[0], 0x1000, &A, &r), WP_POOL_STALE);   /* ended */
	CHECK_EQ_U(wp_pool_held(&p, &B), 1);
	/* released: its registers are stale, and free for the next arm */
	CHECK_EQ_U(wp_pool_release(&p, &B), 1);
	CHECK_EQ_U(wp_pool_hit(&p, reg[2], 0x2000, &B, &r), WP_POOL_STALE);
	const uint64_t c[4] = { 1, 2, 3, 4 };
	CHECK_EQ_U(wp_pool_take(&p, &C, c, 4, reg, ev, &nev), 4);
	CHECK_EQ_U(nev, 0);
}

int main(void)
{
	RUN(test_share);
	RUN(test_take_and_evict);
	RUN(test_hits);
	return check_summary();
}
