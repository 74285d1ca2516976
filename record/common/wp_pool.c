/* The CPUs' debug registers shared by the program's threads (wp_pool.h). */
#include "wp_pool.h"

#include <string.h>

void wp_pool_init(struct wp_pool *p, unsigned n)
{
	memset(p, 0, sizeof *p);
	p->n = n < CT_WP_MAX ? n : CT_WP_MAX;
}

unsigned wp_pool_share(const struct wp_pool *p, unsigned watchers)
{
	unsigned k = watchers ? p->n / watchers : p->n;
	return k ? k : 1;
}

unsigned wp_pool_release(struct wp_pool *p, const void *owner)
{
	unsigned k = 0;
	for (unsigned i = 0; i < p->n; i++)
		if (p->s[i].owner == owner) {
			p->s[i].owner = NULL;
			k++;
		}
	return k;
}

unsigned wp_pool_held(const struct wp_pool *p, const void *owner)
{
	unsigned k = 0;
	for (unsigned i = 0; i < p->n; i++)
		k += p->s[i].owner == owner;
	return k;
}

/* The register for a new word: a free one, else the oldest watch's. */
static unsigned pick(const struct wp_pool *p)
{
	unsigned best = 0;
	for (unsigned i = 0; i < p->n; i++) {
		if (!p->s[i].owner)
			return i;
		if (p->s[i].seq < p->s[best].seq)
			best = i;
	}
	return best;
}

static void note_evicted(const void *owner, const void **evicted, unsigned *n)
{
	for (unsigned i = 0; i < *n; i++)
		if (evicted[i] == owner)
			return;
	if (*n < CT_WP_MAX)
		evicted[(*n)++] = owner;
}

unsigned wp_pool_take(struct wp_pool *p, const void *owner, const uint64_t *addr, unsigned k,
                      unsigned *reg, const void **evicted, unsigned *nevicted)
{
	*nevicted = 0;
	wp_pool_release(p, owner);
	if (k > p->n)
		k = p->n;
	uint64_t seq = ++p->seq;
	for (unsigned i = 0; i < k; i++) {
		unsigned r = pick(p);
		if (p->s[r].owner)
			note_evicted(p->s[r].owner, evicted, nevicted);
		p->s[r] = (struct wp_pool_slot){ .owner = owner, .addr = addr[i], .seq = seq,
		                                 .reg = (uint8_t)i };
		reg[i] = r;
	}
	return k;
}

enum wp_pool_hit wp_pool_hit(struct wp_pool *p, unsigned r, uint64_t addr, const void *who,
                             unsigned *reg_out)
{
	if (r >= p->n || !p->s[r].owner || p->s[r].addr != addr)
		return WP_POOL_STALE;
	if (p->s[r].owner != who)
		return WP_POOL_OTHER;
	*reg_out = p->s[r].reg;
	wp_pool_release(p, who);
	return WP_POOL_OWNER;
}
