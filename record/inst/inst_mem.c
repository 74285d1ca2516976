/* Bulk copies the compiler leaves to libc: gcc and clang emit plain calls to
 * memcpy, memmove and memset for struct copies, large initializations and
 * explicit calls, and do not instrument them (newer clang calls
 * __tsan_memcpy / __tsan_memmove / __tsan_memset instead; -D_FORTIFY_SOURCE
 * calls the __*_chk forms).  The runtime defines them all: when the calling
 * thread is recorded, the source bytes are loads and the destination bytes
 * stores, one access per touched cache line (inst_range), then the real
 * function does the work.
 *
 * The real functions are resolved with dlsym(RTLD_NEXT) at the runtime's
 * start (or at the first call, whichever is first); before that, and while
 * dlsym itself runs (it may copy), rep movsb / rep stosb do the work, so
 * there is no recursion.  Calls made by the runtime itself are not recorded:
 * rt_guard > 0, or (shared runtime) a return address inside the runtime's
 * own code, or in the decoder library it calls from signal handlers
 * (libZydis).  Calls from uninstrumented libraries through the PLT are
 * recorded (they are the thread's accesses); copies made inside libc
 * (qsort, stdio, string functions) are not seen.  strcpy, memcmp & co are
 * not intercepted (see commrec(1), "The inst sampler"). */
#include "inst.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

/* Code of libraries the runtime itself calls from a program thread (the
 * decoder, from signal handlers): their copies are not the program's. */
#define NSKIP 4
static uintptr_t skip_lo[NSKIP], skip_hi[NSKIP];
static int nskip;

static int find_skip(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libZydis") || nskip >= NSKIP)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && nskip < NSKIP; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			skip_lo[nskip] = info->dlpi_addr + ph->p_vaddr;
			skip_hi[nskip] = skip_lo[nskip] + ph->p_memsz;
			nskip++;
		}
	}
	return 0;
}

static void *(*real_memcpy)(void *, const void *, size_t);
static void *(*real_memmove)(void *, const void *, size_t);
static void *(*real_memset)(void *, int, size_t);
static _Atomic int resolving;

static void resolve(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&resolving, &expect, 1))
		return;
	void *cpy = dlsym(RTLD_NEXT, "memcpy");
	void *mov = dlsym(RTLD_NEXT, "memmove");
	void *set = dlsym(RTLD_NEXT, "memset");
	__atomic_store_n(&real_memmove, (void *(*)(void *, const void *, size_t))mov, __ATOMIC_RELEASE);
	__atomic_store_n(&real_memset, (void *(*)(void *, int, size_t))set, __ATOMIC_RELEASE);
	__atomic_store_n(&real_memcpy, (void *(*)(void *, const void *, size_t))cpy, __ATOMIC_RELEASE);
	atomic_store(&resolving, 2);
}

void inst_mem_init(void)
{
	resolve();
	dl_iterate_phdr(find_skip, NULL);
}

/* ---- fallbacks (no call to any mem function, whatever the optimizer does) ---- */

static void *fb_copy(void *d, const void *s, size_t n)
{
#if defined(__x86_64__)
	void *dd = d;
	__asm__ __volatile__("rep movsb" : "+D"(dd), "+S"(s), "+c"(n) : : "memory");
#else
	volatile unsigned char *p = d;
	const volatile unsigned char *q = s;
	for (size_t i = 0; i < n; i++)
		p[i] = q[i];
#endif
	return d;
}

static void *fb_move(void *d, const void *s, size_t n)
{
	if ((uintptr_t)d <= (uintptr_t)s || (uintptr_t)d >= (uintptr_t)s + n)
		return fb_copy(d, s, n);
#if defined(__x86_64__)
	unsigned char *dd = (unsigned char *)d + n - 1;
	const unsigned char *ss = (const unsigned char *)s + n - 1;
	__asm__ __volatile__("std\n\trep movsb\n\tcld" : "+D"(dd), "+S"(ss), "+c"(n) : : "memory");
#else
	volatile unsigned char *p = d;
	const volatile unsigned char *q = s;
	for (size_t i = n; i-- > 0;)
		p[i] = q[i];
#endif
	return d;
}

static void *fb_set(void *d, int c, size_t n)
{
#if defined(__x86_64__)
	void *dd = d;
	__asm__ __volatile__("rep stosb" : "+D"(dd), "+c"(n) : "a"(c) : "memory");
#else
	volatile unsigned char *p = d;
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)c;
#endif
	return d;
}

static inline void *do_copy(void *d, const void *s, size_t n)
{
	void *(*f)(void *, const void *, size_t) = __atomic_load_n(&real_memcpy, __ATOMIC_ACQUIRE);
	if (__builtin_expect(!f, 0)) {
		resolve();
		f = __atomic_load_n(&real_memcpy, __ATOMIC_ACQUIRE);
		if (!f)
			return fb_copy(d, s, n);
	}
	return f(d, s, n);
}

static inline void *do_move(void *d, const void *s, size_t n)
{
	void *(*f)(void *, const void *, size_t) = __atomic_load_n(&real_memmove, __ATOMIC_ACQUIRE);
	if (__builtin_expect(!f, 0)) {
		resolve();
		f = __atomic_load_n(&real_memmove, __ATOMIC_ACQUIRE);
		if (!f)
			return fb_move(d, s, n);
	}
	return f(d, s, n);
}

static inline void *do_set(void *d, int c, size_t n)
{
	void *(*f)(void *, int, size_t) = __atomic_load_n(&real_memset, __ATOMIC_ACQUIRE);
	if (__builtin_expect(!f, 0)) {
		resolve();
		f = __atomic_load_n(&real_memset, __ATOMIC_ACQUIRE);
		if (!f)
			return fb_set(d, c, n);
	}
	return f(d, c, n);
}

/* ---- recording ---------------------------------------------------------------- */

static __attribute__((noinline)) void note(void *d, const void *s, size_t n, int stat, uintptr_t ret)
{
	if (rt_guard || !n)
		return;
	if (inst_in_so && ret >= rt_text_lo && ret < rt_text_hi)
		return;                  /* the runtime's own copy */
	for (int i = 0; i < nskip; i++)
		if (ret >= skip_lo[i] && ret < skip_hi[i])
			return;
	inst_t.stat[stat]++;
	inst_t.stat[stat + 1] += n;
	/* gcc (-mstringop-strategy=libcall) instruments an aggregate copy with
	 * __tsan_read_range / __tsan_write_range and then calls memcpy for it:
	 * the parts the ranges just covered are not recorded again */
	bool rd_done = s && inst_t.rd_addr == (uintptr_t)s && inst_t.rd_len == n;
	bool wr_done = inst_t.wr_addr == (uintptr_t)d && inst_t.wr_len == n;
	inst_t.rd_addr = inst_t.wr_addr = 0;
	inst_t.stat[IS_BULK_RANGED] += (uint64_t)rd_done + (uint64_t)wr_done;
	if (s && !rd_done)
		inst_range((uintptr_t)s, n, CT_ACCESS_LOAD, ret - 1);
	if (!wr_done)
		inst_range((uintptr_t)d, n, CT_ACCESS_STORE, ret - 1);
}

#define NOTE(d, s, n, stat)                                                                  \
	do {                                                                                   \
		if (inst_t.on)                                                                 \
			note(d, s, n, stat, INST_RET());                                       \
	} while (0)

RT_EXPORT void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
	NOTE(d, s, n, IS_MEMCPY);
	return do_copy(d, s, n);
}

RT_EXPORT void *memmove(void *d, const void *s, size_t n)
{
	NOTE(d, s, n, IS_MEMMOVE);
	return do_move(d, s, n);
}

RT_EXPORT void *memset(void *d, int c, size_t n)
{
	NOTE(d, NULL, n, IS_MEMSET);
	return do_set(d, c, n);
}

RT_EXPORT void *__tsan_memcpy(void *d, const void *s, size_t n)
{
	NOTE(d, s, n, IS_MEMCPY);
	return do_copy(d, s, n);
}

RT_EXPORT void *__tsan_memmove(void *d, const void *s, size_t n)
{
	NOTE(d, s, n, IS_MEMMOVE);
	return do_move(d, s, n);
}

RT_EXPORT void *__tsan_memset(void *d, int c, size_t n)
{
	NOTE(d, NULL, n, IS_MEMSET);
	return do_set(d, c, n);
}

/* -D_FORTIFY_SOURCE: the checked forms (glibc's own would call its internal
 * copy, unseen).  An overflow is reported like glibc does. */
static void __attribute__((noreturn)) chk_fail(void)
{
	void (*f)(void) = (void (*)(void))dlsym(RTLD_NEXT, "__chk_fail");
	if (f)
		f();
	__builtin_trap();
}

RT_EXPORT void *__memcpy_chk(void *d, const void *s, size_t n, size_t dn)
{
	if (n > dn)
		chk_fail();
	NOTE(d, s, n, IS_MEMCPY);
	return do_copy(d, s, n);
}

RT_EXPORT void *__memmove_chk(void *d, const void *s, size_t n, size_t dn)
{
	if (n > dn)
		chk_fail();
	NOTE(d, s, n, IS_MEMMOVE);
	return do_move(d, s, n);
}

RT_EXPORT void *__memset_chk(void *d, int c, size_t n, size_t dn)
{
	if (n > dn)
		chk_fail();
	NOTE(d, NULL, n, IS_MEMSET);
	return do_set(d, c, n);
}
