/* Allocation records: interposed malloc family and anonymous mmap/munmap.
 *
 *   ALLOC  address, size, kind, old address (realloc), call-site id
 *   FREE   address (free), or address and length (munmap)
 *   CALLSITE  the first time a call path is seen anywhere in the process,
 *          in the stream of the thread that saw it, before its ALLOC
 *
 * Call sites: glibc backtrace() (the libgcc unwinder: correct without frame
 * pointers; warmed up once at init because its first call loads libgcc_s),
 * the runtime's own frames dropped, at most CT_CALLSITE_MAX_DEPTH return
 * addresses.  Dedup: a lock-free global table call-path hash -> id; ids
 * come from one atomic counter, so they are unique in the trace.
 *
 * Recursion: dlsym() (used to find the real functions) itself allocates;
 * those calls are served from a static bootstrap arena (never freed).  The
 * runtime's own allocations (rt_guard > 0: zstd, the writer thread, thread
 * setup) and those of unrecorded threads (rt_self == NULL) are not recorded.
 * No lock is held across a call into the allocator.
 *
 * munmap is recorded for every range (FREE kind 1 with its length): the
 * runtime does not track which ranges were anonymous; the analyzer matches
 * them against ALLOC kind mmap. */
#include "rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);

static bool alloc_on;
#define RET ((uintptr_t)__builtin_return_address(0))

/* ---- bootstrap arena ------------------------------------------------------------ */

#define BOOT_BYTES (256 * 1024)
static _Alignas(64) char boot[BOOT_BYTES];
static _Atomic size_t boot_used;

static inline bool in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + BOOT_BYTES;
}

void *rt_boot_alloc(size_t size)
{
	size_t need = ((size + 15) & ~(size_t)15) + 16;
	size_t off = atomic_fetch_add(&boot_used, need);
	if (off + need > BOOT_BYTES)
		return NULL;
	char *p = boot + off;
	memcpy(p, &size, sizeof size);
	return p + 16;      /* zeroed: static storage, never reused */
}

static size_t boot_size(const void *p)
{
	size_t s;
	memcpy(&s, (const char *)p - 16, sizeof s);
	return s;
}

static _Atomic int resolving;

static void resolve(void)
{
	if (atomic_exchange(&resolving, 1))
		return;
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_free = dlsym(RTLD_NEXT, "free");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = dlsym(RTLD_NEXT, "memalign");
	real_valloc = dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	real_mmap = dlsym(RTLD_NEXT, "mmap");
	real_munmap = dlsym(RTLD_NEXT, "munmap");
	atomic_store(&resolving, 2);
}

static inline bool ready(void)
{
	if (__builtin_expect(real_free != NULL, 1))
		return true;
	if (atomic_load(&resolving) == 1)
		return false;           /* inside dlsym: bootstrap */
	resolve();
	return real_free != NULL;
}

/* ---- call sites ------------------------------------------------------------------- */

#define CS_TABLE (1u << 16)
struct cs_slot {
	_Atomic uint64_t key;
	_Atomic uint32_t id;
	_Atomic uint32_t defined;  /* 0 no CALLSITE record yet, 1 pushed, 2 being pushed */
};
static struct cs_slot *cs_table;
static _Atomic uint32_t cs_next = 1;
static uint64_t cs_dropped;

static uint64_t hash_path(const uint64_t *pc, int n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
	for (int i = 0; i < n; i++) {
		h ^= pc[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* Returns the id and its slot (NULL if the table is full). */
static uint32_t cs_lookup(uint64_t h, struct cs_slot **slot)
{
	*slot = NULL;
	if (!cs_table)
		return 0;
	uint32_t i = (uint32_t)(h ^ (h >> 32)) & (CS_TABLE - 1);
	for (uint32_t k = 0; k < 256; k++, i = (i + 1) & (CS_TABLE - 1)) {
		struct cs_slot *s = &cs_table[i];
		uint64_t key = atomic_load_explicit(&s->key, memory_order_acquire);
		if (key == 0) {
			uint64_t expect = 0;
			if (atomic_compare_exchange_strong(&s->key, &expect, h)) {
				uint32_t id = atomic_fetch_add(&cs_next, 1);
				atomic_store_explicit(&s->id, id, memory_order_release);
				*slot = s;
				return id;
			}
			key = expect;
		}
		if (key == h) {
			uint32_t id;
			for (int spin = 0; (id = atomic_load_explicit(&s->id, memory_order_acquire)) == 0 && spin < 1000; spin++)
				sched_yield();   /* its definer was preempted between CAS and store */
			*slot = s;
			return id;
		}
	}
	cs_dropped++;
	return 0;
}

/* The full path: backtrace, dedup, CALLSITE record if nobody has pushed
 * one yet.  Returns the id, 0 if unknown; *cacheable when the id is defined
 * in the trace. */
static uint32_t callsite_slow(struct rt_thread *t, bool *cacheable)
{
	uint64_t now = rt_now();
	void *raw[CT_CALLSITE_MAX_DEPTH + 4];
	int n = backtrace(raw, CT_CALLSITE_MAX_DEPTH + 4);
	uint64_t pc[CT_CALLSITE_MAX_DEPTH];
	int d = 0;
	*cacheable = false;
	for (int i = 0; i < n && d < CT_CALLSITE_MAX_DEPTH; i++) {
		uintptr_t a = (uintptr_t)raw[i];
		if (d == 0 && a >= rt_text_lo && a < rt_text_hi)
			continue;            /* the runtime's own frames */
		pc[d++] = a;
	}
	if (d == 0)
		return 0;
	struct cs_slot *s;
	uint32_t id = cs_lookup(hash_path(pc, d), &s);
	if (!s || !id)
		return 0;
	uint32_t def = atomic_load_explicit(&s->defined, memory_order_acquire);
	if (def == 1) {
		*cacheable = true;
		return id;
	}
	uint32_t expect = 0;
	if (def == 0 && atomic_compare_exchange_strong(&s->defined, &expect, 2)) {
		/* ours to define (the first to see it, or an earlier push was
		 * lost to a full ring) */
		struct ct_record r = { .type = CT_REC_CALLSITE, .time = now };
		r.u.callsite.id = id;
		r.u.callsite.depth = (uint8_t)d;
		memcpy(r.u.callsite.pc, pc, (size_t)d * sizeof pc[0]);
		rt_wait_room(t, CT_REC_CALLSITE);
		bool ok = rt_push(t, &r) == 0;
		atomic_store_explicit(&s->defined, ok ? 1 : 0, memory_order_release);
		*cacheable = ok;
		return ok ? id : 0;
	}
	/* another thread is pushing the definition right now: its record
	 * precedes our ALLOC in time. */
	return id;
}

/* Call-site id of an allocation called from return address ret.  A
 * per-thread cache keyed by (ret, stack depth) skips the backtrace: call
 * paths that reach the same call instruction at the same stack depth are
 * taken to be the same path (measured: a backtrace costs ~1.2 us, a cache
 * hit a few ns). */
static uint32_t callsite(struct rt_thread *t, uintptr_t ret)
{
	char here;
	uint64_t depth = t->stack_hi ? (uint64_t)(t->stack_hi - (uintptr_t)&here) : (uintptr_t)&here;
	uint64_t key = ((uint64_t)ret * 0x9e3779b97f4a7c15ull) ^ depth;
	key = key ? key : 1;
	unsigned i = (unsigned)((key >> 40) ^ key) & (RT_CS_CACHE - 1);
	if (t->cs_cache[i].key == key) {
		t->cs_hits++;
		return t->cs_cache[i].id;
	}
	t->cs_misses++;
	bool cacheable;
	uint32_t id = callsite_slow(t, &cacheable);
	if (cacheable) {
		t->cs_cache[i].key = key;
		t->cs_cache[i].id = id;
	}
	return id;
}

static inline struct rt_thread *recording(void)
{
	struct rt_thread *t = rt_self;
	if (__builtin_expect(!t || rt_guard || !alloc_on, 1))
		return NULL;
	return t;
}

/* The slot is reserved before the clock is read: a full ring costs no
 * clock read (measured: clock_gettime is ~64 ns in this VM, the rest of
 * the hook ~20 ns). */
static void rec_alloc(struct rt_thread *t, void *p, size_t size, void *old, int kind, uintptr_t ret)
{
	rt_guard++;
	uint32_t cs = callsite(t, ret);   /* may push a CALLSITE first */
	uint32_t fill;
	rt_wait_room(t, CT_REC_ALLOC);
	struct ct_record *r = recring_reserve_type(&t->ring, CT_REC_ALLOC, &fill);
	if (r) {
		r->type = CT_REC_ALLOC;
		r->time = rt_now();
		r->u.alloc.addr = (uintptr_t)p;
		r->u.alloc.size = size;
		r->u.alloc.old_addr = (uintptr_t)old;
		r->u.alloc.kind = (uint8_t)kind;
		r->u.alloc.callsite = cs;
		recring_commit(&t->ring, r);
	}
	rt_poke_if(fill);
	rt_guard--;
}

static void rec_free(struct rt_thread *t, void *p, size_t len, int kind)
{
	uint32_t fill;
	rt_wait_room(t, CT_REC_FREE);
	struct ct_record *r = recring_reserve_type(&t->ring, CT_REC_FREE, &fill);
	if (r) {
		r->type = CT_REC_FREE;
		r->time = rt_now();
		r->u.free.addr = (uintptr_t)p;
		r->u.free.size = len;
		r->u.free.kind = (uint8_t)kind;
		recring_commit(&t->ring, r);
	}
	rt_poke_if(fill);
}

/* ---- the interposed functions ------------------------------------------------------ */

RT_EXPORT void *malloc(size_t size)
{
	if (!ready())
		return rt_boot_alloc(size);
	void *p = real_malloc(size);
	struct rt_thread *t = recording();
	if (t && p)
		rec_alloc(t, p, size, NULL, CT_ALLOC_MALLOC, RET);
	return p;
}

RT_EXPORT void *calloc(size_t n, size_t size)
{
	if (!ready()) {
		if (size && n > SIZE_MAX / size)
			return NULL;
		return rt_boot_alloc(n * size);
	}
	void *p = real_calloc(n, size);
	struct rt_thread *t = recording();
	if (t && p)
		rec_alloc(t, p, n * size, NULL, CT_ALLOC_CALLOC, RET);
	return p;
}

RT_EXPORT void free(void *p)
{
	if (!p || in_boot(p))
		return;
	if (!ready())
		return;               /* can not happen: p came from somewhere */
	struct rt_thread *t = recording();
	if (t)
		rec_free(t, p, 0, 0);
	real_free(p);
}

RT_EXPORT void *realloc(void *old, size_t size)
{
	if (!ready() || in_boot(old)) {
		void *p = ready() ? real_malloc(size) : rt_boot_alloc(size);
		if (p && old) {
			size_t o = boot_size(old);
			memcpy(p, old, o < size ? o : size);
		}
		return p;
	}
	struct rt_thread *t = recording();
	if (t && old && size == 0) {
		rec_free(t, old, 0, 0);
		return real_realloc(old, size);
	}
	void *p = real_realloc(old, size);
	if (t && p)
		rec_alloc(t, p, size, old, CT_ALLOC_REALLOC, RET);
	return p;
}

RT_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (!ready())
		return ENOMEM;
	int rc = real_posix_memalign(out, align, size);
	struct rt_thread *t = recording();
	if (t && rc == 0)
		rec_alloc(t, *out, size, NULL, CT_ALLOC_MEMALIGN, RET);
	return rc;
}

RT_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (!ready())
		return NULL;
	void *p = real_aligned_alloc(align, size);
	struct rt_thread *t = recording();
	if (t && p)
		rec_alloc(t, p, size, NULL, CT_ALLOC_MEMALIGN, RET);
	return p;
}

RT_EXPORT void *memalign(size_t align, size_t size)
{
	if (!ready())
		return NULL;
	void *p = real_memalign(align, size);
	struct rt_thread *t = recording();
	if (t && p)
		rec_alloc(t, p, size, NULL, CT_ALLOC_MEMALIGN, RET);
	return p;
}

RT_EXPORT void *valloc(size_t size)
{
	if (!ready())
		return NULL;
	void *p = real_valloc(size);
	struct rt_thread *t = recording();
	if (t && p)
		rec_alloc(t, p, size, NULL, CT_ALLOC_MEMALIGN, RET);
	return p;
}

RT_EXPORT void *pvalloc(size_t size)
{
	if (!ready() || !real_pvalloc)
		return NULL;
	void *p = real_pvalloc(size);
	struct rt_thread *t = recording();
	if (t && p)
		rec_alloc(t, p, size, NULL, CT_ALLOC_MEMALIGN, RET);
	return p;
}

RT_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!ready())
		return MAP_FAILED;
	void *p = real_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && (flags & MAP_ANONYMOUS)) {
		struct rt_thread *t = recording();
		if (t)
			rec_alloc(t, p, len, NULL, CT_ALLOC_MMAP, RET);
	}
	return p;
}

RT_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

RT_EXPORT int munmap(void *addr, size_t len)
{
	if (!ready())
		return -1;
	struct rt_thread *t = recording();
	if (t)
		rec_free(t, addr, len, 1);
	return real_munmap(addr, len);
}

void rt_alloc_init(void)
{
	ready();
	alloc_on = !rt_cfg.no_alloc;
	if (!alloc_on)
		return;
	void *m = real_mmap(NULL, CS_TABLE * sizeof(struct cs_slot), PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		alloc_on = false;
		return;
	}
	cs_table = m;
	/* warm up the unwinder (its first call loads libgcc_s and allocates) */
	void *warm[4];
	backtrace(warm, 4);
}
