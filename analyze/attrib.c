/* Attribution of communication events to data objects and code: the replay
 * state (heap blocks, call sites, mmap regions, stacks, TLS) and the
 * per-object and per-cache-line accumulators.  Output: attrib_out.c. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "attrib.h"
#include "attrib_int.h"

const char *obj_kind_name(unsigned kind)
{
	static const char *const n[] = { "static", "heap", "stack", "tls", "mmap", "unknown" };
	return kind <= OBJ_UNKNOWN ? n[kind] : "?";
}

/* ---- u64 -> u32 hash map ---------------------------------------------------- */

bool u64map_get(const struct u64map *m, uint64_t k, uint32_t *v)
{
	if (!m->cap)
		return false;
	size_t mask = m->cap - 1;
	for (size_t i = fmix64(k) & mask;; i = (i + 1) & mask) {
		if (m->v[i] == UINT32_MAX)
			return false;
		if (m->k[i] == k) {
			*v = m->v[i];
			return true;
		}
	}
}

int u64map_put(struct u64map *m, uint64_t k, uint32_t v)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 64;
		uint64_t *nk = malloc(nc * sizeof *nk);
		uint32_t *nv = malloc(nc * sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -1;
		}
		memset(nv, 0xff, nc * sizeof *nv);
		for (size_t i = 0; i < m->cap; i++)
			if (m->v[i] != UINT32_MAX) {
				size_t j = fmix64(m->k[i]) & (nc - 1);
				while (nv[j] != UINT32_MAX)
					j = (j + 1) & (nc - 1);
				nk[j] = m->k[i];
				nv[j] = m->v[i];
			}
		free(m->k);
		free(m->v);
		m->k = nk;
		m->v = nv;
		m->cap = nc;
	}
	size_t mask = m->cap - 1;
	size_t i;
	for (i = fmix64(k) & mask; m->v[i] != UINT32_MAX; i = (i + 1) & mask)
		if (m->k[i] == k) {
			m->v[i] = v;
			return 0;
		}
	m->k[i] = k;
	m->v[i] = v;
	m->n++;
	return 0;
}

void u64map_free(struct u64map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

static uint64_t hash_str64(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* ---- interval treap: live blocks keyed by start address --------------------- */

static void iv_init(struct ivtree *t)
{
	memset(t, 0, sizeof *t);
	t->root = t->freelist = -1;
	t->seed = 0x12345678u;
}

static uint32_t iv_rand(struct ivtree *t)
{
	t->seed ^= t->seed << 13;
	t->seed ^= t->seed >> 17;
	t->seed ^= t->seed << 5;
	return t->seed;
}

/* split t into keys < k (*a) and >= k (*b) */
static void iv_split(struct ivtree *t, int32_t x, uint64_t k, int32_t *a, int32_t *b)
{
	/* iterative split with "hanging" pointers */
	int32_t *la = a, *rb = b;
	while (x >= 0) {
		if (t->n[x].lo < k) {
			*la = x;
			la = &t->n[x].r;
			x = t->n[x].r;
		} else {
			*rb = x;
			rb = &t->n[x].l;
			x = t->n[x].l;
		}
	}
	*la = -1;
	*rb = -1;
}

static int32_t iv_merge(struct ivtree *t, int32_t a, int32_t b)
{
	int32_t root = -1, *slot = &root;
	while (a >= 0 && b >= 0) {
		if (t->n[a].prio > t->n[b].prio) {
			*slot = a;
			slot = &t->n[a].r;
			a = t->n[a].r;
		} else {
			*slot = b;
			slot = &t->n[b].l;
			b = t->n[b].l;
		}
	}
	*slot = a >= 0 ? a : b;
	return root;
}

static int32_t iv_find_exact(const struct ivtree *t, uint64_t k)
{
	int32_t x = t->root;
	while (x >= 0) {
		if (t->n[x].lo == k)
			return x;
		x = k < t->n[x].lo ? t->n[x].l : t->n[x].r;
	}
	return -1;
}

/* the node with the largest lo <= k */
static int32_t iv_floor(const struct ivtree *t, uint64_t k)
{
	int32_t x = t->root, best = -1;
	while (x >= 0) {
		if (t->n[x].lo <= k) {
			best = x;
			x = t->n[x].r;
		} else {
			x = t->n[x].l;
		}
	}
	return best;
}

/* the node with the smallest lo >= k */
static int32_t iv_ceil(const struct ivtree *t, uint64_t k)
{
	int32_t x = t->root, best = -1;
	while (x >= 0) {
		if (t->n[x].lo >= k) {
			best = x;
			x = t->n[x].l;
		} else {
			x = t->n[x].r;
		}
	}
	return best;
}

static void iv_remove(struct ivtree *t, uint64_t k)
{
	int32_t a, b, c = -1, d = -1;
	iv_split(t, t->root, k, &a, &b);
	if (k == UINT64_MAX)
		c = b;                          /* every key >= k is k */
	else
		iv_split(t, b, k + 1, &c, &d);  /* c: the node with key k, if any */
	if (c >= 0) {
		/* keys are unique: c is one node */
		t->n[c].l = t->freelist;
		t->freelist = c;
		t->live--;
	}
	t->root = iv_merge(t, a, d);
}

static int iv_insert(struct ivtree *t, uint64_t lo, uint64_t size, uint32_t obj)
{
	int32_t x = iv_find_exact(t, lo);
	if (x >= 0) {   /* address reused without a free we saw */
		t->n[x].size = size;
		t->n[x].obj = obj;
		return 0;
	}
	if (t->freelist >= 0) {
		x = t->freelist;
		t->freelist = t->n[x].l;
	} else {
		if (t->len == t->cap) {
			size_t nc = t->cap ? t->cap * 2 : 1024;
			if (nc > INT32_MAX)
				return -1;
			struct iv_node *q = realloc(t->n, nc * sizeof *q);
			if (!q)
				return -1;
			t->n = q;
			t->cap = nc;
		}
		x = (int32_t)t->len++;
	}
	t->n[x] = (struct iv_node){ lo, size, obj, iv_rand(t), -1, -1 };
	int32_t a, b;
	iv_split(t, t->root, lo, &a, &b);
	t->root = iv_merge(t, iv_merge(t, a, x), b);
	t->live++;
	return 0;
}

static const struct iv_node *iv_lookup(const struct ivtree *t, uint64_t addr)
{
	int32_t x = iv_floor(t, addr);
	if (x < 0)
		return NULL;
	const struct iv_node *nd = &t->n[x];
	return addr - nd->lo < (nd->size ? nd->size : 1) ? nd : NULL;
}

/* Remove [lo, lo+len): blocks starting inside go, a block reaching into it
 * from before is cut. */
static void iv_unmap(struct ivtree *t, uint64_t lo, uint64_t len)
{
	uint64_t hi = lo + len < lo ? UINT64_MAX : lo + len;
	int32_t x = iv_floor(t, lo);
	if (x >= 0 && t->n[x].lo < lo && t->n[x].lo + t->n[x].size > lo)
		t->n[x].size = lo - t->n[x].lo;
	for (int guard = 0; guard < 1 << 20; guard++) {
		x = iv_ceil(t, lo);
		if (x < 0 || t->n[x].lo >= hi)
			break;
		iv_remove(t, t->n[x].lo);
	}
}

static void iv_free(struct ivtree *t)
{
	free(t->n);
	memset(t, 0, sizeof *t);
}

/* ---- objects ---------------------------------------------------------------- */

static void tset_add(struct tset *s, uint32_t t)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->t[i] == t)
			return;
	if (s->n < TSET_MAX)
		s->t[s->n++] = t;
	else
		s->more = true;
}

static uint32_t obj_get(struct attrib *a, uint64_t key, uint8_t kind, const char *name,
                        const char *desc, const char *type)
{
	uint32_t i;
	if (u64map_get(&a->obj_by_key, key, &i))
		return i;
	if (a->nobjs == a->cap_objs) {
		size_t nc = a->cap_objs ? a->cap_objs * 2 : 64;
		struct aobj *q = realloc(a->objs, nc * sizeof *q);
		if (!q)
			return UINT32_MAX;
		a->objs = q;
		a->cap_objs = nc;
	}
	i = (uint32_t)a->nobjs;
	struct aobj *o = &a->objs[i];
	memset(o, 0, sizeof *o);
	o->kind = kind;
	o->name = strdup(name);
	o->desc = desc ? strdup(desc) : NULL;
	o->type = type ? strdup(type) : NULL;
	if (!o->name || u64map_put(&a->obj_by_key, key, i)) {
		free(o->name);
		free(o->desc);
		free(o->type);
		return UINT32_MAX;
	}
	a->nobjs++;
	return i;
}

/* A unique display name: base, or base#2, base#3... when another object
 * (different key) already has it. */
static void unique_name(struct attrib *a, const char *base, char *out, size_t cap)
{
	uint32_t dummy;
	snprintf(out, cap, "%s", base);
	for (int k = 2; u64map_get(&a->obj_by_name, hash_str64(out), &dummy) && k < 100000; k++)
		snprintf(out, cap, "%s#%d", base, k);
}

static uint32_t obj_named(struct attrib *a, uint64_t key, uint8_t kind, const char *base,
                          const char *desc, const char *type)
{
	uint32_t i;
	if (u64map_get(&a->obj_by_key, key, &i))
		return i;
	char name[512];
	unique_name(a, base, name, sizeof name);
	i = obj_get(a, key, kind, name, desc, type);
	if (i != UINT32_MAX)
		u64map_put(&a->obj_by_name, hash_str64(name), i);
	return i;
}

/* ---- call sites ------------------------------------------------------------- */

static bool alloc_function(const char *f)
{
	static const char *const n[] = {
		"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign",
		"valloc", "pvalloc", "mmap", "mmap64", "reallocarray", "_Znwm",
		"_Znam", "_ZnwmSt11align_val_t", "strdup", "strndup", NULL,
	};
	for (int i = 0; n[i]; i++)
		if (!strcmp(f, n[i]))
			return true;
	/* demangled: "operator new(unsigned long)", "operator new[](...)" */
	return !strncmp(f, "operator new", 12) || !strncmp(f, "__libc_", 7) ||
	       !strncmp(f, "ct_", 3) || !strncmp(f, "rt_", 3);
}

static bool runtime_module(const struct st_module *m)
{
	const char *b = strrchr(m->path, '/');
	b = b ? b + 1 : m->path;
	return !strncmp(b, "libcommrec", 10);
}

/* A call path as the heap groups see it (callsite_obj). */
struct cpath {
	char text[1024];         /* "f (file:line) < g (file:line) < ...", "" */
	size_t first_len;        /* the first frame's part of text */
	char first[256];         /* the first frame's function (or address) */
	char key[1100];          /* the frames' return addresses */
	struct st_code c0;       /* the first frame's code (c0.func NULL: unknown) */
	const struct st_module *bmod;   /* the first frame's allocation site, */
	const struct st_alloc *balloc;  /* NULL: untyped */
};

/* The frames of cs outside the allocator and the runtime, up to main or
 * a thread's start routine. */
static void callsite_path(const struct attrib *a, const struct acallsite *cs, struct cpath *p)
{
	size_t pl = 0, kl = 2;
	for (unsigned k = 0; k < cs->depth; k++) {
		uint64_t pc = cs->pc[k];
		struct st_code c;
		bool known = symtab_code(&a->syms, pc - 1, &c);
		if (known && (runtime_module(c.mod) || (c.func && alloc_function(c.func))))
			continue;
		/* innermost frames in no known module (the allocator's
		 * own, in an unnamed mapping) say nothing */
		if (!known && !pl && k + 1 < cs->depth)
			continue;
		if (kl < sizeof p->key)
			kl += (size_t)snprintf(p->key + kl, sizeof p->key - kl, "%" PRIx64 " ", pc);
		char w[300];
		if (known && c.func && c.file)
			snprintf(w, sizeof w, "%s (%s:%u)", c.func,
			         strrchr(c.file, '/') ? strrchr(c.file, '/') + 1 : c.file, c.line);
		else
			symtab_code_str(&a->syms, pc - 1, true, w, sizeof w);
		if (!p->first[0]) {
			/* the block's type: that of this call's site */
			if (known && (p->balloc = symtab_alloc(c.mod, pc - c.mod->bias)))
				p->bmod = c.mod;
			if (known && c.func)
				snprintf(p->first, sizeof p->first, "%s", c.func);
			else
				symtab_code_str(&a->syms, pc - 1, true, p->first, sizeof p->first);
			if (known && c.func && c.file)
				p->c0 = c;
		}
		int l = snprintf(p->text + pl, sizeof p->text - pl, "%s%s", pl ? " < " : "", w);
		if (l < 0 || (size_t)l >= sizeof p->text - pl)
			break;
		pl += (size_t)l;
		if (!p->first_len)
			p->first_len = pl;
		/* frames above main (libc start-up) or a thread's start
		 * routine say nothing */
		if (known && c.func && (!strcmp(c.func, "main") || !strcmp(c.func, "start_thread")))
			break;
	}
}

/* The description of a group whose name another group has: its first
 * frame with the return address's offset, "f+0x1a4 (file:line) < ...",
 * as `dump --type callsite` shows it (the paths of two calls on one line,
 * or of two inlined calls of one helper, read the same without it). */
static void path_with_offset(const struct cpath *p, char *out, size_t cap)
{
	const char *f = strrchr(p->c0.file, '/') ? strrchr(p->c0.file, '/') + 1 : p->c0.file;
	snprintf(out, cap, "%s+0x%" PRIx64 " (%s:%u)%s", p->c0.func, p->c0.func_off + 1, f,
	         p->c0.line, p->text + p->first_len);
}

/* The object of allocations made at call site id (heap or mmap group).
 * Groups are the call paths by return address (the frames outside the
 * allocator and the runtime): two calls on one source line, or two
 * inlined calls of one allocation helper, are two objects, although their
 * symbolized paths may read the same.  A group is named by its first
 * frame, and the variable its site stores the block in when the symbols
 * say: "heap:alloc_a", "heap:setup:buf"; the whole symbolized path is the
 * description. */
static uint32_t callsite_obj(struct attrib *a, uint32_t id, bool mmap)
{
	uint32_t ci;
	struct acallsite *cs = NULL;
	if (u64map_get(&a->cs_by_id, id, &ci))
		cs = &a->cs[ci];
	if (cs && (mmap ? cs->obj_mmap : cs->obj_heap) != UINT32_MAX)
		return mmap ? cs->obj_mmap : cs->obj_heap;
	struct cpath p = { 0 };
	snprintf(p.key, sizeof p.key, "%c:", mmap ? 'M' : 'H');
	if (cs)
		callsite_path(a, cs, &p);
	if (!p.first[0])
		snprintf(p.first, sizeof p.first, "%s", cs ? "?" : "unknown-callsite");
	const char *var = p.balloc ? st_str(p.bmod, p.balloc->name) : NULL;
	if (var && !var[0])
		var = NULL;
	char base[500];
	snprintf(base, sizeof base, "%s:%s%s%s", mmap ? "mmap" : "heap", p.first, var ? ":" : "",
	         var ? var : "");
	if (!p.text[0])   /* no frame kept: one group per first frame's text */
		snprintf(p.key + 2, sizeof p.key - 2, "%s", p.first);
	char type[300] = "untyped", desc[1100];
	if (p.balloc) {
		const struct st_module *m = p.bmod;
		const struct st_type *t = p.balloc->type < m->ntypes ? &m->types[p.balloc->type] : NULL;
		const char *tn = t ? st_str(m, t->name) : NULL;
		snprintf(type, sizeof type, "%s", tn ? tn : "?");
	}
	uint32_t o;
	snprintf(desc, sizeof desc, "%s", p.text);
	if (p.c0.func && !u64map_get(&a->obj_by_key, hash_str64(p.key), &o) &&
	    u64map_get(&a->obj_by_name, hash_str64(base), &o))
		path_with_offset(&p, desc, sizeof desc);
	o = obj_named(a, hash_str64(p.key), mmap ? OBJ_MMAP : OBJ_HEAP, base,
	              desc[0] ? desc : NULL, type);
	if (o != UINT32_MAX && !a->objs[o].balloc) {
		a->objs[o].bmod = p.bmod;
		a->objs[o].balloc = p.balloc;
	}
	if (cs) {
		if (mmap)
			cs->obj_mmap = o;
		else
			cs->obj_heap = o;
	}
	return o;
}

static void add_callsite(struct attrib *a, const struct ct_callsite *c)
{
	uint32_t ci;
	if (u64map_get(&a->cs_by_id, c->id, &ci))
		return;   /* ids are unique in a trace: keep the first definition */
	if (a->ncs == a->cap_cs) {
		size_t nc = a->cap_cs ? a->cap_cs * 2 : 64;
		struct acallsite *q = realloc(a->cs, nc * sizeof *q);
		if (!q)
			return;
		a->cs = q;
		a->cap_cs = nc;
	}
	struct acallsite *s = &a->cs[a->ncs];
	s->depth = c->depth <= CT_CALLSITE_MAX_DEPTH ? c->depth : CT_CALLSITE_MAX_DEPTH;
	memcpy(s->pc, c->pc, sizeof s->pc);
	s->obj_heap = s->obj_mmap = UINT32_MAX;
	if (u64map_put(&a->cs_by_id, c->id, (uint32_t)a->ncs) == 0)
		a->ncs++;
}

/* ---- publishers of watchpoint events ------------------------------------------ */

static struct apub *pub_slot(const struct attrib *a, uint32_t thread, uint64_t time)
{
	return &a->pubs[fmix64(time ^ (uint64_t)thread << 44) & (PUB_SAMPLES - 1)];
}

static void pub_sample(struct attrib *a, const struct ct_record *r)
{
	if (!a->pubs && !(a->pubs = calloc(PUB_SAMPLES, sizeof *a->pubs))) {
		a->oom = true;
		return;
	}
	*pub_slot(a, r->thread, r->time) =
		(struct apub){ .time = r->time, .ip = r->u.sample.ip, .thread = r->thread };
}

/* The ip of thread's store sample taken at time, 0 when the table no
 * longer holds it. */
static uint64_t pub_ip_at(const struct attrib *a, uint32_t thread, uint64_t time)
{
	const struct apub *p = a->pubs ? pub_slot(a, thread, time) : NULL;
	return p && p->time == time && p->thread == thread ? p->ip : 0;
}

static struct aarm *arm_slot(const struct attrib *a, uint32_t watcher, uint32_t publisher,
                             uint64_t addr)
{
	uint64_t k = fmix64((uint64_t)watcher << 32 | publisher) ^ fmix64(addr);
	return &a->arms[k & (PUB_ARMS - 1)];
}

/* The arm of watcher on publisher's store at addr, NULL if the table does
 * not hold it. */
static const struct aarm *arm_find(const struct attrib *a, uint32_t watcher, uint32_t publisher,
                                   uint64_t addr)
{
	const struct aarm *m = a->arms ? arm_slot(a, watcher, publisher, addr) : NULL;
	return m && m->ip && m->watcher == watcher && m->publisher == publisher && m->addr == addr
	       ? m : NULL;
}

static void pub_arm(struct attrib *a, const struct ct_record *r)
{
	const struct ct_wp_arm *w = &r->u.arm;
	if (!a->arms && !(a->arms = calloc(PUB_ARMS, sizeof *a->arms))) {
		a->oom = true;
		return;
	}
	*arm_slot(a, r->thread, w->publisher, w->pub_addr) = (struct aarm){
		.addr = w->pub_addr, .ip = pub_ip_at(a, w->publisher, w->pub_time),
		.watcher = r->thread, .publisher = w->publisher,
	};
}

uint64_t attrib_src_ip(const struct attrib *a, const struct comm_event *ev)
{
	uint64_t ip = ev->src_ip;
	if (!ip && ev->via == COMM_VIA_WATCHPOINT) {
		const struct aarm *m = arm_find(a, ev->dst, ev->src, ev->src_addr);
		ip = m ? m->ip : 0;
	}
	return attrib_code_ip(a, ip, false);
}

/* ---- the record consumer ---------------------------------------------------- */

static void on_record(void *self, const struct ct_record *r)
{
	struct attrib *a = self;
	switch (r->type) {
	case CT_REC_CALLSITE:
		add_callsite(a, &r->u.callsite);
		break;
	case CT_REC_WP_ARM:
		pub_arm(a, r);
		break;
	case CT_REC_SAMPLE: {
		if (r->u.sample.kind != CT_ACCESS_LOAD)
			pub_sample(a, r);
		/* soft samples: did the instruction before ip make the access?
		 * Votes per ip, so that events (which carry only the ip) can be
		 * placed on the right source line. */
		uint64_t ip = r->u.sample.ip;
		if (!ip || !(r->u.sample.flags & CT_SAMPLE_RECONSTRUCTED))
			break;
		uint32_t v = 0;
		u64map_get(&a->prev_votes, ip, &v);
		uint32_t prev = v >> 16, cur = v & 0xffff;
		if (r->u.sample.flags & CT_SAMPLE_PREV_INSN)
			prev += prev < 0x7fff;
		else
			cur += cur < 0xffff;
		if (u64map_put(&a->prev_votes, ip, prev << 16 | cur))
			a->oom = true;
		break;
	}
	case CT_REC_ALLOC: {
		const struct ct_alloc *al = &r->u.alloc;
		bool mm = al->kind == CT_ALLOC_MMAP;
		if (al->kind == CT_ALLOC_REALLOC && al->old_addr)
			iv_remove(&a->heap, al->old_addr);
		if (!al->addr)
			break;
		uint32_t o = callsite_obj(a, al->callsite, mm);
		if (o == UINT32_MAX)
			break;
		a->objs[o].nallocs++;
		if (al->size > a->objs[o].size)
			a->objs[o].size = al->size;
		if (iv_insert(mm ? &a->mmaps : &a->heap, al->addr, al->size, o))
			a->oom = true;
		break;
	}
	case CT_REC_FREE:
		if (r->u.free.kind == 1)
			iv_unmap(&a->mmaps, r->u.free.addr, r->u.free.size);
		else
			iv_remove(&a->heap, r->u.free.addr);
		break;
	case CT_REC_THREAD_START: {
		/* a new thread's stack and TLS replace whatever (ended) thread
		 * had that memory before */
		const struct ct_thread_start *ts = &r->u.start;
		if (ts->stack_lo < ts->stack_hi && ts->stack_hi - ts->stack_lo < (1ull << 40)) {
			iv_unmap(&a->stacks, ts->stack_lo, ts->stack_hi - ts->stack_lo);
			if (iv_insert(&a->stacks, ts->stack_lo, ts->stack_hi - ts->stack_lo, r->thread))
				a->oom = true;
		}
		if (ts->tls_lo < ts->tls_hi && ts->tls_hi - ts->tls_lo < (1ull << 40)) {
			iv_unmap(&a->tls, ts->tls_lo, ts->tls_hi - ts->tls_lo);
			if (iv_insert(&a->tls, ts->tls_lo, ts->tls_hi - ts->tls_lo, r->thread))
				a->oom = true;
		}
		break;
	}
	default:
		break;
	}
}

struct record_consumer attrib_record_consumer(struct attrib *a)
{
	return (struct record_consumer){ .self = a, .record = on_record, .finish = NULL };
}

/* ---- attribution of one address ---------------------------------------------- */

static const char *mod_base(const struct st_module *m)
{
	const char *b = strrchr(m->path, '/');
	return b ? b + 1 : m->path;
}

/* Where an address is: its object, and a key for the field inside it (the
 * same key, the same field path).  Fast: no strings, except when an object
 * is seen for the first time; where_path() makes the path. */
enum where_how { W_TLS, W_STACK, W_BLOCK, W_STATIC, W_MODULE, W_UNKNOWN };
struct where {
	uint32_t obj;
	uint8_t how;
	uint64_t key;            /* field key: offset of the leaf/word in the object */
	uint64_t size;           /* leaf size, 0 unknown */
	uint64_t lo, hi;         /* the block, stack or TLS range */
	const struct st_module *mod;
};

static uint32_t cached_obj(struct attrib *a, uint64_t ck, uint64_t key, uint8_t kind,
                           const char *name, const char *desc, const char *type)
{
	uint32_t o;
	if (u64map_get(&a->obj_cache, ck, &o))
		return o;
	o = obj_named(a, key, kind, name, desc, type);
	if (o != UINT32_MAX && u64map_put(&a->obj_cache, ck, o))
		a->oom = true;
	return o;
}

static void attribute(struct attrib *a, uint64_t addr, struct where *w)
{
	memset(w, 0, sizeof *w);
	/* thread TLS blocks, then stacks (TLS may sit at a stack's top) */
	for (int pass = 0; pass < 2; pass++) {
		const struct iv_node *t = iv_lookup(pass ? &a->stacks : &a->tls, addr);
		if (!t)
			continue;
		w->how = pass ? W_STACK : W_TLS;
		w->lo = t->lo;
		w->hi = t->lo + t->size;
		w->key = addr - t->lo;
		uint64_t ck = (uint64_t)(pass + 1) << 40 | t->obj;
		uint32_t o;
		if (!u64map_get(&a->obj_cache, ck, &o)) {
			char name[32], key[40];
			snprintf(name, sizeof name, "%s:T%u", pass ? "stack" : "tls", t->obj);
			snprintf(key, sizeof key, "%c:%u", pass ? 'K' : 'T', t->obj);
			o = cached_obj(a, ck, hash_str64(key), pass ? OBJ_STACK : OBJ_TLS, name, NULL, NULL);
		}
		w->obj = o;
		return;
	}
	const struct iv_node *nd = iv_lookup(&a->heap, addr);
	if (!nd)
		nd = iv_lookup(&a->mmaps, addr);
	if (nd) {
		w->how = W_BLOCK;
		w->lo = nd->lo;
		w->hi = nd->lo + nd->size;
		w->key = addr - nd->lo;
		w->obj = nd->obj;
		const struct aobj *o = &a->objs[nd->obj];
		if (o->balloc)
			w->key = symtab_block_path(o->bmod, o->balloc, nd->size, w->key, NULL, 0, &w->size);
		return;
	}
	const struct st_module *m;
	const struct st_var *v = symtab_var(&a->syms, addr, &m);
	w->mod = m;
	if (v && st_str(m, v->name)) {
		w->how = W_STATIC;
		uint64_t off = addr - m->bias - v->addr;
		w->size = v->size;
		if (v->type < m->ntypes)
			w->key = symtab_type_path(m, v->type, off, NULL, 0, &w->size, NULL, NULL);
		uint64_t ck = (uint64_t)(uintptr_t)v;   /* pointers: low bits 0 */
		uint32_t o;
		if (!u64map_get(&a->obj_cache, ck, &o)) {
			struct st_data d;
			symtab_data(&a->syms, addr, &d);
			char key[600], name[400];
			snprintf(key, sizeof key, "S:%s:%" PRIx64, m->path, v->addr);
			if (m == a->main_mod || !a->main_mod)
				snprintf(name, sizeof name, "%s", d.name);
			else
				snprintf(name, sizeof name, "%s@%s", d.name, mod_base(m));
			o = cached_obj(a, ck, hash_str64(key), OBJ_STATIC, name,
			               m == a->main_mod ? NULL : m->path, d.type_name);
			if (o != UINT32_MAX && !a->objs[o].size)
				a->objs[o].size = v->size;
		}
		w->obj = o;
		return;
	}
	if (m) {
		/* in a module's image, no symbol: one object per module, fields
		 * by word */
		w->how = W_MODULE;
		w->key = (addr - m->bias) & ~7ull;
		uint64_t ck = (uint64_t)(uintptr_t)m | 1;
		uint32_t o;
		if (!u64map_get(&a->obj_cache, ck, &o)) {
			char key[600], name[400];
			snprintf(key, sizeof key, "U:%s", m->path);
			snprintf(name, sizeof name, "unknown@%s", mod_base(m));
			o = cached_obj(a, ck, hash_str64(key), OBJ_UNKNOWN, name, m->path, NULL);
		}
		w->obj = o;
		return;
	}
	w->how = W_UNKNOWN;
	w->obj = cached_obj(a, 2, hash_str64("U"), OBJ_UNKNOWN, "unknown", NULL, NULL);
}

/* The field path of an address: "q.count", "cells[2].y", "+8" (block),
 * "top-0x40" (stack), "+0x10" (TLS), "+0x4010" (module), "0x1234". */
static void where_path(struct attrib *a, const struct where *w, uint64_t addr, char *out,
                       size_t cap)
{
	struct st_data d;
	switch (w->how) {
	case W_TLS:
		snprintf(out, cap, "+0x%" PRIx64, addr - w->lo);
		break;
	case W_STACK:
		/* stacks grow down: offsets from the top stay the same between runs */
		snprintf(out, cap, "top-0x%" PRIx64, w->hi - addr);
		break;
	case W_BLOCK: {
		const struct aobj *o = &a->objs[w->obj];
		uint64_t leaf;
		if (!o->balloc)
			snprintf(out, cap, "+%" PRIu64, addr - w->lo);
		else if (cap) {
			out[0] = 0;
			symtab_block_path(o->bmod, o->balloc, w->hi - w->lo, addr - w->lo, out, cap, &leaf);
			if (!out[0])   /* one leaf, no variable name */
				snprintf(out, cap, "+%" PRIu64, addr - w->lo);
		}
		break;
	}
	case W_STATIC:
		symtab_data(&a->syms, addr, &d);
		snprintf(out, cap, "%s", d.path);
		break;
	case W_MODULE:
		snprintf(out, cap, "+0x%" PRIx64, w->key);
		break;
	default:
		snprintf(out, cap, "0x%" PRIx64, addr);
		break;
	}
}

/* ---- accumulation ---------------------------------------------------------------- */

static void add_w(double w[3], uint64_t ev[3], bool tru, double weight)
{
	w[0] += weight;
	w[tru ? 1 : 2] += weight;
	ev[0]++;
	ev[tru ? 1 : 2]++;
}

static void code_add(struct acode *c, unsigned *n, unsigned max, uint64_t *other, uint64_t ip,
                     double w)
{
	for (unsigned i = 0; i < *n; i++)
		if (c[i].ip == ip) {
			c[i].events++;
			c[i].weight += w;
			return;
		}
	if (*n < max) {
		c[*n] = (struct acode){ ip, 1, w };
		(*n)++;
	} else {
		(*other)++;
	}
}

static void obj_field(struct attrib *a, struct aobj *o, const struct where *wh, uint64_t addr,
                      uint8_t len, uint32_t thread, bool store, bool tru, double w)
{
	struct afield *f = NULL;
	uint32_t fi;
	/* all unknown addresses are one field */
	uint64_t key = wh->how == W_UNKNOWN ? 0 : wh->key;
	if (u64map_get(&o->field_idx, key, &fi)) {
		f = &o->fields[fi];
	} else {
		if (o->nfields == o->cap_fields) {
			if (o->nfields >= FIELDS_MAX) {
				o->fields_other++;
				return;
			}
			unsigned nc = o->cap_fields ? o->cap_fields * 2 : 4;
			struct afield *q = realloc(o->fields, nc * sizeof *q);
			if (!q)
				return;
			o->fields = q;
			o->cap_fields = nc;
		}
		if (u64map_put(&o->field_idx, key, o->nfields))
			return;
		f = &o->fields[o->nfields++];
		memset(f, 0, sizeof *f);
		if (wh->how == W_UNKNOWN)
			snprintf(f->path, sizeof f->path, "(addresses without an object)");
		else
			where_path(a, wh, addr, f->path, sizeof f->path);
		f->off = wh->key;
		f->size = wh->size ? wh->size : len;
	}
	if (store) {
		f->stores++;
		tset_add(&f->writers, thread);
	} else {
		f->loads++;
		tset_add(&f->readers, thread);
	}
	f->weight += w;
	if (tru)
		f->true_events++;
	else
		f->false_events++;
}

static void obj_pair(struct aobj *o, uint32_t dst, uint32_t src, bool tru, double w)
{
	uint64_t k = (uint64_t)dst << 32 | src;
	uint32_t i;
	if (!u64map_get(&o->pair_idx, k, &i)) {
		if (o->npairs == o->cap_pairs) {
			size_t nc = o->cap_pairs ? o->cap_pairs * 2 : 4;
			struct apair *q = realloc(o->pairs, nc * sizeof *q);
			if (!q)
				return;
			o->pairs = q;
			o->cap_pairs = nc;
		}
		i = (uint32_t)o->npairs;
		if (u64map_put(&o->pair_idx, k, i))
			return;
		o->pairs[o->npairs++] = (struct apair){ dst, src, { 0, 0, 0 } };
	}
	o->pairs[i].w[0] += w;
	o->pairs[i].w[tru ? 1 : 2] += w;
}

static struct aline *line_get(struct attrib *a, uint64_t line)
{
	uint32_t i;
	if (u64map_get(&a->line_idx, line, &i))
		return &a->lines[i];
	if (a->nlines == a->cap_lines) {
		size_t nc = a->cap_lines ? a->cap_lines * 2 : 256;
		struct aline *q = realloc(a->lines, nc * sizeof *q);
		if (!q)
			return NULL;
		a->lines = q;
		a->cap_lines = nc;
	}
	i = (uint32_t)a->nlines;
	if (u64map_put(&a->line_idx, line, i))
		return NULL;
	struct aline *l = &a->lines[a->nlines++];
	memset(l, 0, sizeof *l);
	l->line = line;
	return l;
}

static void line_access(struct attrib *a, struct aline *l, uint64_t addr, uint8_t len,
                        uint32_t thread, bool store, bool tru, double w, uint64_t ip,
                        const struct where *wh)
{
	uint64_t off = addr - l->line;
	if (off >= a->line_size)
		off = a->line_size - 1;
	struct aoff *o = NULL;
	for (unsigned i = 0; i < l->noffs; i++)
		if (l->offs[i].off == off) {
			o = &l->offs[i];
			break;
		}
	if (!o) {
		if (l->noffs == l->cap_offs) {
			unsigned nc = l->cap_offs ? l->cap_offs * 2 : 4;
			struct aoff *q = realloc(l->offs, nc * sizeof *q);
			if (!q)
				return;
			l->offs = q;
			l->cap_offs = nc;
		}
		o = &l->offs[l->noffs++];
		memset(o, 0, sizeof *o);
		o->off = (uint32_t)off;
		o->obj = wh->obj;
		where_path(a, wh, addr, o->field, sizeof o->field);
	}
	if (len > o->len)
		o->len = len;
	if (store) {
		o->stores++;
		tset_add(&o->writers, thread);
	} else {
		o->loads++;
		tset_add(&o->readers, thread);
	}
	if (tru)
		o->true_events++;
	else
		o->false_events++;
	o->weight += w;
	if (ip) {
		uint64_t other = 0;
		code_add(o->code, &o->ncode, OFF_CODE_MAX, &other, ip, w);
		o->code_other += other;
	}
}

/* The code address to look up for an access reported at ip: watchpoint
 * hits trap after the access, soft samples often stand for the instruction
 * before ip; the byte before ip lies in that instruction. */
uint64_t attrib_code_ip(const struct attrib *a, uint64_t ip, bool hit)
{
	if (!ip)
		return 0;
	if (hit)
		return ip - 1;
	uint32_t v;
	if (u64map_get(&a->prev_votes, ip, &v) && (v >> 16) >= (v & 0xffff))
		return ip - 1;
	return ip;
}

static void on_event(void *self, const struct comm_event *ev)
{
	struct attrib *a = self;
	a->events++;
	a->weight += ev->weight;
	/* the two accesses: the receiver's (dst) and the publisher's (src, a
	 * store in the sampled models) */
	struct {
		uint64_t addr, ip;
		uint8_t len;
		uint32_t thread;
		bool store;
	} acc[2] = {
		{ ev->addr, attrib_code_ip(a, ev->ip, ev->via == COMM_VIA_WATCHPOINT), ev->len,
		  ev->dst, ev->dst_kind != CT_ACCESS_LOAD },
		{ ev->src_addr, attrib_src_ip(a, ev), ev->src_len, ev->src, true },
	};
	/* a source access of unknown address and size (the line monitor's
	 * transfers name only the receiver's) is in no object */
	int nacc = ev->src_addr || ev->src_len ? 2 : 1;
	struct where wh[2] = { [1] = { .obj = UINT32_MAX } };
	for (int k = 0; k < nacc; k++)
		attribute(a, acc[k].addr, &wh[k]);
	for (int k = 0; k < nacc; k++) {
		if (wh[k].obj == UINT32_MAX)
			continue;
		struct aobj *o = &a->objs[wh[k].obj];
		if (k == 0 || wh[1].obj != wh[0].obj) {
			add_w(o->w, o->ev, ev->true_sharing, ev->weight);
			obj_pair(o, ev->dst, ev->src, ev->true_sharing, ev->weight);
			if (k == 1)
				o->as_src_only++;
		}
		obj_field(a, o, &wh[k], acc[k].addr, acc[k].len, acc[k].thread, acc[k].store,
		          ev->true_sharing, ev->weight);
		if (acc[k].ip) {
			uint64_t other = 0;
			code_add(o->code, &o->ncode, OBJ_CODE_MAX, &other, acc[k].ip, ev->weight);
			o->code_other += other;
		}
	}
	struct aline *l = line_get(a, ev->line);
	if (!l)
		return;
	add_w(l->w, l->ev, ev->true_sharing, ev->weight);
	for (int k = 0; k < nacc; k++) {
		uint64_t addr = acc[k].addr;
		if (addr < ev->line || addr - ev->line >= a->line_size)
			continue;   /* src on another line (should not happen) */
		if (wh[k].obj != UINT32_MAX)
			line_access(a, l, addr, acc[k].len, acc[k].thread, acc[k].store,
			            ev->true_sharing, ev->weight, acc[k].ip, &wh[k]);
	}
}

struct event_consumer attrib_event_consumer(struct attrib *a)
{
	return (struct event_consumer){ .self = a, .event = on_event };
}

/* ---- setup ------------------------------------------------------------------------ */

void attrib_note(struct attrib *a, const char *fmt, ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	size_t l = strlen(line);
	if (a->notes_len + l + 2 > a->notes_cap) {
		size_t nc = a->notes_cap ? a->notes_cap * 2 : 1024;
		while (nc < a->notes_len + l + 2)
			nc *= 2;
		char *q = realloc(a->notes, nc);
		if (!q)
			return;
		a->notes = q;
		a->notes_cap = nc;
	}
	memcpy(a->notes + a->notes_len, line, l);
	a->notes[a->notes_len + l] = '\n';
	a->notes_len += l + 1;
	a->notes[a->notes_len] = 0;
}

/* Notes about the binaries: kept until the program is known; then those
 * about the program, and missing or changed files, are shown (system
 * libraries without DWARF are the normal case and not worth a line). */
struct pending_notes {
	char *buf;
	size_t len, cap;
};

static void maps_note(void *arg, const char *path, const char *what)
{
	struct pending_notes *p = arg;
	size_t need = strlen(path) + strlen(what) + 3;
	if (p->len + need + 1 > p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 1024;
		while (nc < p->len + need + 1)
			nc *= 2;
		char *q = realloc(p->buf, nc);
		if (!q)
			return;
		p->buf = q;
		p->cap = nc;
	}
	p->len += (size_t)sprintf(p->buf + p->len, "%s\t%s\n", path, what);
}

static void flush_notes(struct attrib *a, struct pending_notes *p)
{
	const char *prog = a->main_mod ? a->main_mod->path : "";
	for (char *line = p->buf; line && line < p->buf + p->len;) {
		char *nl = strchr(line, '\n'), *tab = strchr(line, '\t');
		if (!nl || !tab || tab > nl)
			break;
		*nl = *tab = 0;
		if (!strcmp(line, prog) || strstr(tab + 1, "cannot open") || strstr(tab + 1, "differs"))
			attrib_note(a, "%s: %s", line, tab + 1);
		line = nl + 1;
	}
	free(p->buf);
}

/* The program: the first executable file mapping in MAPS (fallback: the
 * lowest module). */
static void find_main(struct attrib *a, struct ct_trace *t)
{
	size_t len;
	const char *maps = ct_trace_section(t, CT_SEC_MAPS, &len);
	char prog[4096] = "";
	if (maps) {
		const char *p = maps, *end = maps + len;
		while (p < end && !prog[0]) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
			struct st_mapping m;
			if (symtab_maps_line(p, l, &m) == 0 && m.path[0] == '/' && m.exec &&
			    !strstr(m.path, "/ld-linux") && !strstr(m.path, "libcommrec"))
				snprintf(prog, sizeof prog, "%s", m.path);
			p += l + 1;
		}
	}
	for (size_t i = 0; i < a->syms.n; i++)
		if (prog[0] && !strcmp(a->syms.mods[i]->path, prog))
			a->main_mod = a->syms.mods[i];
	if (!a->main_mod && a->syms.n)
		a->main_mod = a->syms.mods[0];
}

/* Notes from the module flags (embedded tables say what the launcher
 * found). */
static void flag_notes(struct attrib *a)
{
	for (size_t i = 0; i < a->syms.n; i++) {
		const struct st_module *m = a->syms.mods[i];
		if (runtime_module(m))
			continue;
		if (m->flags & ST_MOD_MISSING)
			attrib_note(a, "%s: no symbols (file missing or changed at recording)", m->path);
		else if (!(m->flags & (ST_MOD_DWARF | ST_MOD_NOT_READ)) && (m == a->main_mod))
			attrib_note(a, "%s: %s, no DWARF: no types, fields or line numbers", m->path,
			            m->flags & ST_MOD_ELF_SYMS ? "symbols only" : "stripped");
	}
}

/* The return addresses of the trace's allocation call stacks, sorted and
 * unique (the sites whose blocks the DWARF loader types; the recorder
 * collects the same ones for the embedded symbols).  NULL when there are
 * none or memory is short: the blocks are then untyped. */
static uint64_t *callsite_pcs(struct ct_trace *t, size_t *np)
{
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	struct ct_error e;
	for (size_t i = 0; i < ct_trace_nthreads(t); i++) {
		struct ct_cursor *c = ct_cursor_thread(t, i);
		struct ct_record r;
		while (c && ct_cursor_next(c, &r, &e) == 1) {
			if (r.type != CT_REC_CALLSITE)
				continue;
			for (unsigned k = 0; k < r.u.callsite.depth && k < CT_CALLSITE_MAX_DEPTH; k++) {
				if (n == cap) {
					size_t nc = cap ? cap * 2 : 256;
					uint64_t *q = realloc(v, nc * sizeof *q);
					if (!q) {
						ct_cursor_free(c);
						free(v);
						return NULL;
					}
					v = q;
					cap = nc;
				}
				v[n++] = r.u.callsite.pc[k];
			}
		}
		if (c)
			ct_cursor_free(c);
	}
	*np = u64_sort_unique(v, n);
	return v;
}

struct attrib *attrib_create(struct ct_trace *t, const struct attrib_opts *o)
{
	struct attrib *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->trace = t;
	a->line_size = o->line_size ? o->line_size : 64;
	a->from_binaries = o->from_binaries;
	a->nth_space = o->nthreads;
	symtab_init(&a->syms);
	iv_init(&a->heap);
	iv_init(&a->mmaps);
	iv_init(&a->stacks);
	iv_init(&a->tls);
	a->notes = calloc(1, 1);
	a->notes_cap = a->notes ? 1 : 0;
	size_t len;
	struct pending_notes pn = { 0 };
	if (o->from_binaries) {
		const char *maps = ct_trace_section(t, CT_SEC_MAPS, &len);
		if (!maps)
			attrib_note(a, "the trace has no memory map: no symbols");
		else {
			/* everything (NULL sets), with the allocation sites typed */
			size_t ns = 0;
			uint64_t *pcs = callsite_pcs(t, &ns);
			struct st_addrs sites = { .v = pcs, .n = ns };
			struct st_addrs all = { .v = NULL, .n = 0, .sites = &sites };
			if (symtab_from_maps(&a->syms, maps, len, pcs ? &all : NULL, maps_note, &pn))
				attrib_note(a, "out of memory loading symbols");
			free(pcs);
		}
		a->symbols_source = "binaries";
	} else {
		const void *p = ct_trace_section(t, CT_SEC_SYMBOLS, &len);
		char err[300];
		if (!p) {
			attrib_note(a, "the trace has no embedded symbols: names need "
			               "--symbols-from-binaries (on the machine that recorded it)");
			a->symbols_source = "none";
		} else if (symtab_parse(&a->syms, p, len, err, sizeof err)) {
			attrib_note(a, "embedded %s (modules before it are used)", err);
			a->symbols_source = "embedded (damaged)";
		} else {
			a->symbols_source = "embedded";
		}
	}
	if (!o->no_demangle)
		symtab_demangle(&a->syms);
	find_main(a, t);
	if (!o->from_binaries)
		flag_notes(a);
	else
		flush_notes(a, &pn);
	return a;
}

void attrib_free(struct attrib *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nobjs; i++) {
		struct aobj *o = &a->objs[i];
		free(o->name);
		free(o->desc);
		free(o->type);
		free(o->fields);
		free(o->pairs);
		u64map_free(&o->pair_idx);
		u64map_free(&o->field_idx);
	}
	free(a->objs);
	for (size_t i = 0; i < a->nlines; i++)
		free(a->lines[i].offs);
	free(a->lines);
	u64map_free(&a->line_idx);
	u64map_free(&a->obj_by_key);
	u64map_free(&a->obj_by_name);
	u64map_free(&a->obj_cache);
	u64map_free(&a->cs_by_id);
	u64map_free(&a->prev_votes);
	free(a->pubs);
	free(a->arms);
	free(a->cs);
	iv_free(&a->heap);
	iv_free(&a->mmaps);
	iv_free(&a->stacks);
	iv_free(&a->tls);
	symtab_free(&a->syms);
	free(a->notes);
	free(a);
}

const char *attrib_notes(const struct attrib *a)
{
	return a->notes ? a->notes : "";
}

uint32_t attrib_object(struct attrib *a, uint64_t addr)
{
	struct where w;
	attribute(a, addr, &w);
	return w.obj;
}

const char *attrib_object_name(struct attrib *a, uint64_t addr, char *buf, size_t cap)
{
	struct where w;
	char field[256];
	attribute(a, addr, &w);
	where_path(a, &w, addr, field, sizeof field);
	snprintf(buf, cap, "%s %s", w.obj == UINT32_MAX ? "?" : a->objs[w.obj].name, field);
	return buf;
}

int attrib_find_object(const struct attrib *a, const char *name)
{
	uint32_t i;
	if (u64map_get(&a->obj_by_name, hash_str64(name), &i) && !strcmp(a->objs[i].name, name))
		return (int)i;
	for (size_t k = 0; k < a->nobjs; k++)
		if (!strcmp(a->objs[k].name, name))
			return (int)k;
	return -1;
}

struct matrices *attrib_object_matrix(struct attrib *a, const char *name)
{
	int i = attrib_find_object(a, name);
	if (i < 0)
		return NULL;
	const struct aobj *o = &a->objs[i];
	struct matrices *m = matrices_create(a->nth_space, NULL);
	for (size_t k = 0; m && k < o->npairs; k++)
		if (matrices_add_cell(m, MX_THREAD, o->pairs[k].dst, o->pairs[k].src, o->pairs[k].w)) {
			matrices_free(m);
			m = NULL;
		}
	return m;
}
