/* Markers: the commrec.h API (record/include/commrec.h) and the OpenMP
 * parallel regions of GCC's libgomp.
 *
 * commrec_marker() is what the header's inline functions call when the
 * runtime is loaded: one MARKER record on the calling thread's ring (lock
 * free, no allocation: safe in the program's signal handlers too); nothing
 * when the thread is not recorded.
 *
 * OpenMP: libgomp has no OMPT interface (Debian's gcc 12 libgomp exports no
 * ompt_* symbol), so the runtime interposes GOMP_parallel, the entry point
 * of every `#pragma omp parallel` (and `parallel for` with a static
 * schedule) that gcc emits, and runs the outlined function through a
 * trampoline that writes a region begin and end on each thread of the team:
 * the workers belong to the region they run.  The region's name is
 * "omp:0xADDR" (ct_marker_omp_name), the outlined function's address: the
 * analyzer names it from the trace's symbols (`f._omp_fn.0`, file:line). */
#include <dlfcn.h>
#include <string.h>

#include "rt.h"

static void push_marker(struct rt_thread *t, int kind, const char *name)
{
	struct ct_record r = { .type = CT_REC_MARKER, .time = rt_now() };
	r.u.marker.kind = (uint8_t)kind;
	size_t n = name ? strnlen(name, CT_MARKER_NAME_MAX) : 0;
	memcpy(r.u.marker.name, name, n);
	r.u.marker.name[n] = 0;
	rt_push(t, &r);
}

RT_EXPORT void commrec_marker(int kind, const char *name)
{
	struct rt_thread *t = rt_self;
	if (!t || !atomic_load_explicit(&rt_active, memory_order_relaxed))
		return;
	/* kind 3 (throttle) and above are the runtime's own */
	if (kind < CT_MARK_REGION_BEGIN || kind > CT_MARK_PHASE)
		return;
	push_marker(t, kind, name);
}

/* ---- OpenMP (libgomp) ---------------------------------------------------- */

struct omp_region {
	void (*fn)(void *);
	void *data;
	char name[CT_MARKER_NAME_MAX + 1];
};

static void omp_trampoline(void *arg)
{
	const struct omp_region *o = arg;
	commrec_marker(CT_MARK_REGION_BEGIN, o->name);
	o->fn(o->data);
	commrec_marker(CT_MARK_REGION_END, "");
}

typedef void (*gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);

RT_EXPORT void GOMP_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags)
{
	static _Atomic gomp_parallel_fn real;
	if (!real)
		real = (gomp_parallel_fn)dlsym(RTLD_NEXT, "GOMP_parallel");
	if (!atomic_load_explicit(&rt_active, memory_order_relaxed) || !rt_self) {
		real(fn, data, nthreads, flags);
		return;
	}
	/* GOMP_parallel returns when the whole team is done: o outlives it */
	struct omp_region o = { .fn = fn, .data = data };
	ct_marker_omp_name(o.name, sizeof o.name, (uint64_t)(uintptr_t)fn);
	real(omp_trampoline, &o, nthreads, flags);
}
