/* Markers: the commrec.h API (record/include/commrec.h) and the OpenMP
 * parallel regions of GCC's libgomp (interposed) and LLVM's libomp (OMPT).
 *
 * commrec_marker() is what the header's inline functions call when the
 * runtime is loaded: one MARKER record on the calling thread's ring (lock
 * free, no allocation: safe in the program's signal handlers too); nothing
 * when the thread is not recorded.
 *
 * OpenMP: libgomp has no OMPT interface (Debian's gcc 12 libgomp exports no
 * ompt_* symbol), so the runtime interposes the entry points that gcc emits
 * for `#pragma omp parallel` (GOMP_parallel; also `parallel for` with a
 * static schedule), `parallel for` with a schedule clause
 * (GOMP_parallel_loop_*) and `parallel sections`, and runs the outlined
 * function through a trampoline that writes a region begin and end on each
 * thread of the team: the workers belong to the region they run.  The region's name is
 * "omp:0xADDR" (ct_marker_omp_name), the outlined function's address: the
 * analyzer names it from the trace's symbols (`f._omp_fn.0`, file:line).
 * rt_omp_sync, when set (the inst sampler's full mode, inst_omp.c), is
 * told of the region's fork and join (the starting thread) and of each
 * thread's begin and end of the region's body. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "rtconfig.h"

static void push_marker(struct rt_thread *t, int kind, const char *name)
{
	struct ct_record r = { .type = CT_REC_MARKER, .time = rt_now() };
	r.u.marker.kind = (uint8_t)kind;
	size_t n = name ? strnlen(name, CT_MARKER_NAME_MAX) : 0;
	memcpy(r.u.marker.name, name, n);
	r.u.marker.name[n] = 0;
	rt_wait_room(t, CT_REC_MARKER);
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
	uintptr_t ip;            /* the call that starts the region */
	bool on;                 /* the trampoline runs */
	char name[CT_MARKER_NAME_MAX + 1];
};

void (*rt_omp_sync)(enum rt_omp_phase phase, uintptr_t ip);

static inline void omp_sync(enum rt_omp_phase phase, uintptr_t ip)
{
	void (*f)(enum rt_omp_phase, uintptr_t) = rt_omp_sync;
	if (f)
		f(phase, ip);
}

static void omp_trampoline(void *arg)
{
	const struct omp_region *o = arg;
	commrec_marker(CT_MARK_REGION_BEGIN, o->name);
	omp_sync(RT_OMP_BEGIN, o->ip);
	o->fn(o->data);
	omp_sync(RT_OMP_END, o->ip);
	commrec_marker(CT_MARK_REGION_END, "");
}

/* When this thread is recorded: the region in o, and *fn, *data replaced
 * by the trampoline and o.  The libgomp entry points return when the whole
 * team is done, so o (on the caller's stack) outlives every use. */
static void omp_enter(struct omp_region *o, void (**fn)(void *), void **data, uintptr_t ip)
{
	o->on = false;
	if (!atomic_load_explicit(&rt_active, memory_order_relaxed) || !rt_self)
		return;
	o->on = true;
	o->fn = *fn;
	o->data = *data;
	o->ip = ip;
	ct_marker_omp_name(o->name, sizeof o->name, (uint64_t)(uintptr_t)*fn);
	*fn = omp_trampoline;
	*data = o;
	omp_sync(RT_OMP_FORK, ip);
}

/* After the region (the team is done). */
static void omp_leave(const struct omp_region *o)
{
	if (o->on)
		omp_sync(RT_OMP_JOIN, o->ip);
}

#define OMP_CALLER() ((uintptr_t)__builtin_return_address(0) - 1)

/* libgomp's function `name` (looked up once). */
static void *omp_real(void *_Atomic *cache, const char *name)
{
	void *f = atomic_load_explicit(cache, memory_order_relaxed);
	if (!f) {
		f = rt_real(name);
		if (!f)
			rt_no_real(name);
		atomic_store_explicit(cache, f, memory_order_relaxed);
	}
	return f;
}

typedef void (*omp_fn)(void *);

/* #pragma omp parallel, and parallel for with a static schedule */
RT_EXPORT void GOMP_parallel(omp_fn fn, void *data, unsigned nthreads, unsigned flags)
{
	static void *_Atomic real;
	struct omp_region o;
	omp_enter(&o, &fn, &data, OMP_CALLER());
	((void (*)(omp_fn, void *, unsigned, unsigned))omp_real(&real, __func__))(fn, data, nthreads,
	                                                                           flags);
	omp_leave(&o);
}

/* #pragma omp parallel sections */
RT_EXPORT void GOMP_parallel_sections(omp_fn fn, void *data, unsigned nthreads, unsigned count,
                                      unsigned flags)
{
	static void *_Atomic real;
	struct omp_region o;
	omp_enter(&o, &fn, &data, OMP_CALLER());
	((void (*)(omp_fn, void *, unsigned, unsigned, unsigned))omp_real(&real, __func__))(
		fn, data, nthreads, count, flags);
	omp_leave(&o);
}

/* #pragma omp parallel for with a schedule clause: with a chunk size
 * (static, dynamic, guided), or without (runtime). */
typedef void (*omp_loop_chunk)(omp_fn, void *, unsigned, long, long, long, long, unsigned);
typedef void (*omp_loop)(omp_fn, void *, unsigned, long, long, long, unsigned);

#define OMP_LOOP_CHUNK(NAME)                                                              \
	RT_EXPORT void NAME(omp_fn fn, void *data, unsigned nthreads, long start, long end,  \
	                    long incr, long chunk, unsigned flags)                           \
	{                                                                                    \
		static void *_Atomic real;                                                   \
		struct omp_region o;                                                         \
		omp_enter(&o, &fn, &data, OMP_CALLER());                                     \
		((omp_loop_chunk)omp_real(&real, #NAME))(fn, data, nthreads, start, end, incr, \
		                                         chunk, flags);                      \
		omp_leave(&o);                                                               \
	}
#define OMP_LOOP(NAME)                                                                    \
	RT_EXPORT void NAME(omp_fn fn, void *data, unsigned nthreads, long start, long end,  \
	                    long incr, unsigned flags)                                       \
	{                                                                                    \
		static void *_Atomic real;                                                   \
		struct omp_region o;                                                         \
		omp_enter(&o, &fn, &data, OMP_CALLER());                                     \
		((omp_loop)omp_real(&real, #NAME))(fn, data, nthreads, start, end, incr, flags); \
		omp_leave(&o);                                                               \
	}

OMP_LOOP_CHUNK(GOMP_parallel_loop_static)
OMP_LOOP_CHUNK(GOMP_parallel_loop_dynamic)
OMP_LOOP_CHUNK(GOMP_parallel_loop_guided)
OMP_LOOP_CHUNK(GOMP_parallel_loop_nonmonotonic_dynamic)
OMP_LOOP_CHUNK(GOMP_parallel_loop_nonmonotonic_guided)
OMP_LOOP(GOMP_parallel_loop_runtime)
OMP_LOOP(GOMP_parallel_loop_nonmonotonic_runtime)
OMP_LOOP(GOMP_parallel_loop_maybe_nonmonotonic_runtime)

/* ---- OpenMP (LLVM's libomp): OMPT ------------------------------------------
 * libomp looks for a tool's ompt_start_tool (OpenMP 5.0, section 4.2.1) in
 * the process: the runtime's, preloaded, is found first.  It registers two
 * callbacks: parallel_begin keeps the region's code address (the return
 * address into the function that has the pragma) in the parallel data;
 * implicit_task begin and end, on each thread of the team, write the region
 * begin and end.  The region is named "omp:0xADDR" with ADDR one byte before
 * that return address (inside the call, so that its line is the pragma's):
 * the analyzer shows the function with the pragma and the line.  The
 * types and values below are the OMPT ABI's (omp-tools.h). */
typedef union {
	uint64_t value;
	void *ptr;
} ompt_data;
typedef void (*ompt_cb)(void);
typedef int (*ompt_set_callback_fn)(int event, ompt_cb callback);
typedef ompt_cb (*ompt_lookup_fn)(const char *name);
struct ompt_start_tool_result {
	int (*initialize)(ompt_lookup_fn lookup, int initial_device, ompt_data *tool_data);
	void (*finalize)(ompt_data *tool_data);
	ompt_data tool_data;
};
enum {
	OMPT_CB_PARALLEL_BEGIN = 3, OMPT_CB_IMPLICIT_TASK = 7,   /* ompt_callbacks_t */
	OMPT_SCOPE_BEGIN = 1, OMPT_SCOPE_END = 2,                 /* ompt_scope_endpoint_t */
	OMPT_TASK_INITIAL = 1,                                    /* ompt_task_flag_t */
};

static void ompt_parallel_begin(ompt_data *task, const void *frame, ompt_data *parallel,
                                unsigned requested, int flags, const void *codeptr_ra)
{
	(void)task, (void)frame, (void)requested, (void)flags;
	parallel->value = codeptr_ra ? (uint64_t)(uintptr_t)codeptr_ra - 1 : 0;
}

static void ompt_implicit_task(int endpoint, ompt_data *parallel, ompt_data *task,
                               unsigned nthreads, unsigned index, int flags)
{
	(void)task, (void)nthreads, (void)index;
	if (flags & OMPT_TASK_INITIAL)
		return;                 /* the program's initial task, not a region */
	if (endpoint == OMPT_SCOPE_BEGIN && parallel && parallel->value) {
		char name[CT_MARKER_NAME_MAX + 1];
		ct_marker_omp_name(name, sizeof name, parallel->value);
		commrec_marker(CT_MARK_REGION_BEGIN, name);
	} else if (endpoint == OMPT_SCOPE_END) {
		commrec_marker(CT_MARK_REGION_END, "");
	}
}

static int ompt_initialize(ompt_lookup_fn lookup, int initial_device, ompt_data *tool_data)
{
	(void)initial_device, (void)tool_data;
	ompt_set_callback_fn set = (ompt_set_callback_fn)lookup("ompt_set_callback");
	if (!set)
		return 0;
	set(OMPT_CB_PARALLEL_BEGIN, (ompt_cb)ompt_parallel_begin);
	set(OMPT_CB_IMPLICIT_TASK, (ompt_cb)ompt_implicit_task);
	return 1;
}

static void ompt_finalize(ompt_data *tool_data)
{
	(void)tool_data;
}

RT_EXPORT struct ompt_start_tool_result *ompt_start_tool(unsigned omp_version,
                                                         const char *runtime_version)
{
	(void)omp_version, (void)runtime_version;
	static struct ompt_start_tool_result tool = { ompt_initialize, ompt_finalize, { 0 } };
	/* not under commrec (a commrec-cc program run alone): no tool, no cost */
	return getenv(CT_ENV_SPOOL) ? &tool : NULL;
}
