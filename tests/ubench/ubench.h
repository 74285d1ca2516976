/* Shared code of the microbenchmarks and recorder test programs in
 * tests/ubench/: option parsing, a per-thread PRNG, the thread runner and the
 * machine-parsable output lines documented in tests/ubench/README.md.
 *
 * Header-only on purpose: every program is one .c file built by the
 * Makefile's `tests/ubench/%` rule, which depends on this header. */
#ifndef UBENCH_H
#define UBENCH_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UB_LINE 64
#define UB_MAX_THREADS 256

#if defined(__GNUC__)
#define UB_UNUSED __attribute__((unused))
#define UB_NORETURN __attribute__((noreturn))
#define UB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define UB_UNUSED
#define UB_NORETURN
#define UB_PRINTF(a, b)
#endif

/* ---- options -------------------------------------------------------------- */

enum ub_opt_type {
	UB_UINT,   /* unsigned decimal (or 0x hex) in [min, max] -> uint64_t */
	UB_FRAC,   /* real number in [0, 1] -> double */
	UB_CHOICE, /* one of choices[] -> int index */
	UB_FLAG,   /* no argument -> int set to 1 */
};

struct ub_opt {
	int letter;
	const char *metavar;
	const char *help;
	enum ub_opt_type type;
	void *dst;                      /* uint64_t*, double*, int* by type */
	uint64_t min, max;              /* UB_UINT */
	const char *const *choices;     /* UB_CHOICE, NULL-terminated */
};

struct ub_cli {
	const char *name;               /* program name for messages */
	const char *purpose;            /* one line */
	const struct ub_opt *opts;
	size_t nopts;
};

static UB_UNUSED void ub_render_usage(const struct ub_cli *cli, FILE *f)
{
	fprintf(f, "usage: %s", cli->name);
	for (size_t i = 0; i < cli->nopts; i++) {
		const struct ub_opt *o = &cli->opts[i];
		if (o->type == UB_FLAG)
			fprintf(f, " [-%c]", o->letter);
		else
			fprintf(f, " [-%c %s]", o->letter, o->metavar);
	}
	fprintf(f, "\n%s\n", cli->purpose);
	for (size_t i = 0; i < cli->nopts; i++) {
		const struct ub_opt *o = &cli->opts[i];
		char def[128] = "";
		switch (o->type) {
		case UB_UINT:
			snprintf(def, sizeof def, "default %" PRIu64 ", %" PRIu64 "..%" PRIu64,
			         *(uint64_t *)o->dst, o->min, o->max);
			break;
		case UB_FRAC:
			snprintf(def, sizeof def, "default %g, 0..1", *(double *)o->dst);
			break;
		case UB_CHOICE: {
			size_t len = 0;
			len += (size_t)snprintf(def, sizeof def, "default %s; one of",
			                        o->choices[*(int *)o->dst]);
			for (size_t k = 0; o->choices[k] && len < sizeof def; k++)
				len += (size_t)snprintf(def + len, sizeof def - len, " %s", o->choices[k]);
			break;
		}
		case UB_FLAG:
			break;
		}
		fprintf(f, "  -%c %-10s %s%s%s%s\n", o->letter,
		        o->type == UB_FLAG ? "" : o->metavar, o->help,
		        def[0] ? " (" : "", def, def[0] ? ")" : "");
	}
	fprintf(f, "  -h            this help\n");
}

/* Usage text rendered before any option is parsed, so that it shows the
 * defaults, not the values given so far. */
static char *ub_usage_text UB_UNUSED;

static UB_UNUSED void ub_usage(const struct ub_cli *cli, FILE *f)
{
	if (ub_usage_text)
		fputs(ub_usage_text, f);
	else
		ub_render_usage(cli, f);
}

static UB_UNUSED UB_NORETURN UB_PRINTF(2, 3)
void ub_bad_usage(const struct ub_cli *cli, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", cli->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	ub_usage(cli, stderr);
	exit(2);
}

static UB_UNUSED int ub_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static UB_UNUSED int ub_parse_frac(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= 0.0 && v <= 1.0))
		return -1;
	*out = v;
	return 0;
}

/* Parses argv with getopt semantics (options only; any operand is an error).
 * Bad input: message and usage on stderr, exit 2.  -h: usage on stdout, exit 0. */
static UB_UNUSED void ub_parse(const struct ub_cli *cli, int argc, char **argv)
{
	size_t ulen = 0;
	FILE *mem = open_memstream(&ub_usage_text, &ulen);
	if (mem) {
		ub_render_usage(cli, mem);
		fclose(mem);
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			if (i + 1 < argc)
				ub_bad_usage(cli, "unexpected argument '%s'", argv[i + 1]);
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			ub_bad_usage(cli, "unexpected argument '%s'", a);
		if (a[1] == 'h' && a[2] == '\0') {
			ub_usage(cli, stdout);
			exit(0);
		}
		const struct ub_opt *o = NULL;
		for (size_t k = 0; k < cli->nopts; k++)
			if (cli->opts[k].letter == a[1])
				o = &cli->opts[k];
		if (!o)
			ub_bad_usage(cli, "unknown option '%s'", a);
		if (o->type == UB_FLAG) {
			if (a[2])
				ub_bad_usage(cli, "option -%c takes no value", o->letter);
			*(int *)o->dst = 1;
			continue;
		}
		const char *v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
		if (!v)
			ub_bad_usage(cli, "option -%c needs a value (%s)", o->letter, o->metavar);
		switch (o->type) {
		case UB_UINT: {
			uint64_t u;
			if (ub_parse_u64(v, &u) || u < o->min || u > o->max)
				ub_bad_usage(cli, "bad value for -%c: '%s' (want an integer in %" PRIu64
				             "..%" PRIu64 ")", o->letter, v, o->min, o->max);
			*(uint64_t *)o->dst = u;
			break;
		}
		case UB_FRAC:
			if (ub_parse_frac(v, (double *)o->dst))
				ub_bad_usage(cli, "bad value for -%c: '%s' (want a number in 0..1)",
				             o->letter, v);
			break;
		case UB_CHOICE: {
			int found = -1;
			for (int k = 0; o->choices[k]; k++)
				if (strcmp(o->choices[k], v) == 0)
					found = k;
			if (found < 0)
				ub_bad_usage(cli, "bad value for -%c: '%s'", o->letter, v);
			*(int *)o->dst = found;
			break;
		}
		case UB_FLAG:
			break;
		}
	}
}

/* The options every microbenchmark has. */
#define UB_OPT_THREADS(p, maxt) \
	{ 't', "THREADS", "threads to create", UB_UINT, (p), 1, (maxt), NULL }
#define UB_OPT_ITERS(p) \
	{ 'n', "ITERS", "loop iterations per thread", UB_UINT, (p), 1, UINT64_C(1) << 40, NULL }
#define UB_OPT_SEED(p) \
	{ 'S', "SEED", "PRNG seed (thread i uses SEED and i)", UB_UINT, (p), 0, UINT64_MAX, NULL }

/* ---- PRNG: xorshift64* seeded through splitmix64 -------------------------- */

struct ub_rng {
	uint64_t s;
};

static inline uint64_t ub_splitmix(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline void ub_rng_seed(struct ub_rng *r, uint64_t seed, unsigned idx)
{
	uint64_t x = seed ^ ((uint64_t)(idx + 1) * UINT64_C(0xd1b54a32d192ed03));
	r->s = ub_splitmix(&x);
	if (r->s == 0)
		r->s = UINT64_C(0x853c49e6748fea9b);
}

static inline uint64_t ub_next(struct ub_rng *r)
{
	uint64_t x = r->s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/* Probability p as a threshold on the top 32 bits of a draw:
 * ub_hit(x, ub_threshold(p)) is true with probability p (exactly 0 and 1 at
 * the ends). */
static inline uint64_t ub_threshold(double p)
{
	if (p <= 0.0)
		return 0;
	if (p >= 1.0)
		return UINT64_C(1) << 32;
	return (uint64_t)(p * 4294967296.0);
}

static inline int ub_hit(uint64_t draw, uint64_t threshold)
{
	return (draw >> 32) < threshold;
}

/* cond ? a : b without a branch.  The benchmarks pick the target of their one
 * store (or atomic) per iteration with this, so that both choices run the
 * same instructions: a sampler that interrupts on a timer (commrec's soft
 * sampler) lands disproportionately just after a mispredicted branch, and
 * with a branch the rarer path would collect most of the samples.  With one
 * store instruction whose address register is picked here, the sampled
 * addresses follow the real mix of accesses. */
static inline void *ub_select(int cond, void *a, void *b)
{
	uintptr_t m = (uintptr_t)0 - (uintptr_t)(cond != 0);
	__asm__("" : "+r"(m));   /* keep the compiler from turning it back into a branch */
	return (void *)(((uintptr_t)a & m) | ((uintptr_t)b & ~m));
}

/* ---- memory objects ------------------------------------------------------- */

/* One cache line, padded to two lines so that neighbours in an array never
 * share a line nor an adjacent-line prefetch pair. */
struct ub_slot {
	_Alignas(2 * UB_LINE) volatile uint64_t w[UB_LINE / 8];
};

/* Each thread's private data: slot i belongs to benchmark thread i. */
static struct ub_slot ub_private[UB_MAX_THREADS] UB_UNUSED;

/* ---- output --------------------------------------------------------------- */

/* "object NAME 0xLO-0xHI kind=KIND threads=LIST[ EXTRA]" with [LO, HI). */
static UB_UNUSED UB_PRINTF(6, 7)
void ub_object(const char *name, const volatile void *lo, size_t len, const char *kind,
               const char *threads, const char *extra_fmt, ...)
{
	uintptr_t a = (uintptr_t)lo;
	printf("object %s 0x%" PRIxPTR "-0x%" PRIxPTR " kind=%s threads=%s", name, a,
	       a + len, kind, threads);
	if (extra_fmt && *extra_fmt) {
		va_list ap;
		va_start(ap, extra_fmt);
		putchar(' ');
		vprintf(extra_fmt, ap);
		va_end(ap);
	}
	putchar('\n');
}

/* "0,1,2,...,n-1" */
static UB_UNUSED const char *ub_all_threads(unsigned n)
{
	static char buf[UB_MAX_THREADS * 4 + 8];
	size_t len = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < n && len + 8 < sizeof buf; i++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%u", i ? "," : "", i);
	return buf;
}

static UB_UNUSED void ub_print_private(unsigned nthreads)
{
	for (unsigned i = 0; i < nthreads; i++) {
		char name[32], who[16];
		snprintf(name, sizeof name, "private.%u", i);
		snprintf(who, sizeof who, "%u", i);
		ub_object(name, ub_private[i].w, UB_LINE, "global", who, NULL);
	}
}

/* ---- threads -------------------------------------------------------------- */

struct ub_counts {
	uint64_t shared_stores, shared_loads, shared_atomics;
	uint64_t private_stores, private_loads;
	uint64_t extra[2];              /* program-specific, see ub_print_threads */
};

struct ub_thread;
typedef void (*ub_work_fn)(struct ub_thread *t, void *ctx);

struct ub_thread {
	unsigned idx;                   /* benchmark thread index: creation order */
	pid_t tid;
	struct ub_rng rng;              /* seeded from (seed, idx) */
	uint64_t iters;
	struct ub_counts c;             /* filled by the work function at its end */
	double cpu_ms;
	ub_work_fn fn;
	void *ctx;
	pthread_barrier_t *start;
	pthread_t th;
};

/* The work of write_volume, p2p and objects: per iteration one relaxed store
 * of a fresh draw, to *shared with probability threshold (ub_threshold),
 * else to the thread's private line; the counts go to t->c. */
static inline void ub_store_mix(struct ub_thread *t, _Atomic uint64_t *shared, uint64_t threshold)
{
	struct ub_rng r = t->rng;
	volatile uint64_t *mine = &ub_private[t->idx].w[0];
	const uint64_t th = threshold, n = t->iters;
	uint64_t ns = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = ub_next(&r);
		int h = ub_hit(x, th);
		_Atomic uint64_t *p = ub_select(h, (void *)shared, (void *)mine);
		atomic_store_explicit(p, x, memory_order_relaxed);
		ns += (uint64_t)h;
	}
	t->c.shared_stores = ns;
	t->c.private_stores = n - ns;
}

static UB_UNUSED double ub_now_ms(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static UB_UNUSED void *ub_thread_main(void *arg)
{
	struct ub_thread *t = arg;
	t->tid = gettid();
	pthread_barrier_wait(t->start);
	double c0 = ub_now_ms(CLOCK_THREAD_CPUTIME_ID);
	t->fn(t, t->ctx);
	t->cpu_ms = ub_now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

static double ub_wall_ms UB_UNUSED;

/* Creates n threads (thread i is the i-th created), starts them together on
 * a barrier, joins them.  The main thread does nothing else meanwhile. */
static UB_UNUSED struct ub_thread *ub_run(unsigned n, uint64_t iters, uint64_t seed,
                                          ub_work_fn fn, void *ctx)
{
	struct ub_thread *t = calloc(n, sizeof *t);
	pthread_barrier_t *bar = malloc(sizeof *bar);
	if (!t || !bar) {
		perror("calloc");
		exit(1);
	}
	pthread_barrier_init(bar, NULL, n);
	double w0 = ub_now_ms(CLOCK_MONOTONIC);
	for (unsigned i = 0; i < n; i++) {
		t[i].idx = i;
		t[i].iters = iters;
		ub_rng_seed(&t[i].rng, seed, i);
		t[i].fn = fn;
		t[i].ctx = ctx;
		t[i].start = bar;
		int e = pthread_create(&t[i].th, NULL, ub_thread_main, &t[i]);
		if (e) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			exit(1);
		}
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i].th, NULL);
	ub_wall_ms = ub_now_ms(CLOCK_MONOTONIC) - w0;
	pthread_barrier_destroy(bar);
	free(bar);
	return t;
}

/* "thread T shared_stores=N ..." (deterministic for a given seed) then
 * "thread_info T tid=N cpu_ms=X" (varies run to run) per thread, and a final
 * "done threads=N wall_ms=X cpu_ms=X".  extra_names name c.extra[0..1]
 * (NULL: not printed). */
static UB_UNUSED void ub_print_threads(const struct ub_thread *t, unsigned n, const char *extra0,
                             const char *extra1)
{
	double cpu = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct ub_counts *c = &t[i].c;
		printf("thread %u shared_stores=%" PRIu64 " shared_loads=%" PRIu64
		       " shared_atomics=%" PRIu64 " private_stores=%" PRIu64
		       " private_loads=%" PRIu64, i, c->shared_stores, c->shared_loads,
		       c->shared_atomics, c->private_stores, c->private_loads);
		if (extra0)
			printf(" %s=%" PRIu64, extra0, c->extra[0]);
		if (extra1)
			printf(" %s=%" PRIu64, extra1, c->extra[1]);
		putchar('\n');
	}
	for (unsigned i = 0; i < n; i++) {
		printf("thread_info %u tid=%d cpu_ms=%.1f\n", i, (int)t[i].tid, t[i].cpu_ms);
		cpu += t[i].cpu_ms;
	}
	printf("done threads=%u wall_ms=%.1f cpu_ms=%.1f\n", n, ub_wall_ms, cpu);
	fflush(stdout);
}

#endif
