/* The debug registers of the CPUs, shared by every thread of the program:
 * the soft sampler's per-CPU watchpoints (record/runtime/rt_cpuwp.c).
 *
 * Register k is one perf breakpoint event per CPU (pid -1), every CPU's
 * programmed alike, so that it watches its word whichever CPU the thread
 * runs on; it fires for any thread there.  The writer thread arms them for
 * the threads (ComDetective's Algorithm 1 on the samples it decodes, off
 * the program's threads): a watch is one thread's (its owner, the watcher
 * of Algorithm 1) on up to its share of the registers, the words cd_step
 * chose; only the owner's own access is its hit (a communication from the
 * publisher to the owner), which ends the whole watch; another thread's
 * access (the publisher's, or a third thread's) is not the owner's and
 * leaves the watch armed.  With more watchers than registers the newest
 * arm takes the registers of the oldest watch (which loses them: the
 * capacity of four registers per CPU for the whole program).
 *
 * Pure bookkeeping, callable on synthetic hits (tests/unit/rec_wp_pool.c);
 * must not depend on record/runtime. */
#ifndef CT_WP_POOL_H
#define CT_WP_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "commtrace.h"

struct wp_pool_slot {
	const void *owner;   /* the watching thread (NULL: free) */
	uint64_t addr;       /* the watched word */
	uint64_t seq;        /* arm order: the oldest watch gives way */
	uint8_t reg;         /* its index in the owner's WP_ARM */
};

struct wp_pool {
	unsigned n;          /* registers (at most CT_WP_MAX) */
	uint64_t seq;
	struct wp_pool_slot s[CT_WP_MAX];
};

enum wp_pool_hit {
	WP_POOL_STALE = 0,   /* no live watch of that word in the register (ended, re-targeted) */
	WP_POOL_OWNER = 1,   /* the owner's access: its hit; the watch ended */
	WP_POOL_OTHER = 2,   /* another thread's access: the watch goes on */
};

void wp_pool_init(struct wp_pool *p, unsigned n);
/* Registers one watcher may take when `watchers` threads watch: n / watchers,
 * at least 1. */
unsigned wp_pool_share(const struct wp_pool *p, unsigned watchers);
/* End owner's watch: its registers are free; how many it held. */
unsigned wp_pool_release(struct wp_pool *p, const void *owner);
/* How many registers owner's watch holds now. */
unsigned wp_pool_held(const struct wp_pool *p, const void *owner);
/* A new watch of owner on the words addr[0..k-1] (owner's own watch ended
 * first): free registers, then the oldest other watches' registers, one per
 * word; reg[i] the register given word i.  Owners that lost a register to
 * it are written to evicted (at most CT_WP_MAX entries, each once), their
 * number to *nevicted.  Returns the words placed (k, or n if k > n). */
unsigned wp_pool_take(struct wp_pool *p, const void *owner, const uint64_t *addr, unsigned k,
                      unsigned *reg, const void **evicted, unsigned *nevicted);
/* Register r fired on word addr for thread who: what it was; WP_POOL_OWNER
 * ends the owner's watch (*reg_out: the word's index in its arm). */
enum wp_pool_hit wp_pool_hit(struct wp_pool *p, unsigned r, uint64_t addr, const void *who,
                             unsigned *reg_out);

#endif
