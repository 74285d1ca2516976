/* objects: write_volume (default s=0.5) with the shared line inside an object
 * of a chosen kind, to check that the recorder and analyzer attribute the
 * communication to the right object: a global, a local of the main thread
 * (passed by pointer), or a heap block from malloc, calloc, realloc (grown
 * from a smaller malloc), posix_memalign, aligned_alloc or an anonymous
 * mmap.  Output: tests/ubench/README.md. */
#include <sys/mman.h>

#include "ubench.h"

enum { K_GLOBAL, K_STACK, K_MALLOC, K_CALLOC, K_REALLOC, K_MEMALIGN, K_ALIGNED_ALLOC, K_MMAP };
static const char *const kinds[] = { "global", "stack", "malloc", "calloc", "realloc",
                                     "memalign", "aligned_alloc", "mmap", NULL };

#define HEAP_SIZE 256       /* heap objects: room for one whole aligned line */
#define REALLOC_FIRST 32    /* realloc: the first, smaller malloc */
#define MMAP_SIZE 4096
/* Heap blocks are filled with this, not 0: GCC turns malloc + memset(0) into
 * calloc, which would change the allocation the benchmark is about. */
#define FILL 0x5a

static struct ub_slot global_line;

struct ctx {
	_Atomic uint64_t *word;  /* the shared word, at the start of an aligned line */
	uint64_t threshold;
};

static void work(struct ub_thread *t, void *arg)
{
	const struct ctx *c = arg;
	ub_store_mix(t, c->word, c->threshold);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	uint64_t threads = 2, iters = 150000000, seed = 1;
	double frac = 0.5;
	int kind = K_MALLOC;
	const struct ub_opt opts[] = {
		UB_OPT_THREADS(&threads, UB_MAX_THREADS),
		UB_OPT_ITERS(&iters),
		{ 'k', "KIND", "kind of object holding the shared line", UB_CHOICE, &kind, 0, 0,
		  kinds },
		{ 's', "SHARED_FRACTION", "probability of a store to the shared line", UB_FRAC,
		  &frac, 0, 0, NULL },
		UB_OPT_SEED(&seed),
	};
	const struct ub_cli cli = { "objects",
		"write_volume with the shared line in a global, a main-thread local, or a\n"
		"malloc/calloc/realloc/posix_memalign/aligned_alloc/mmap block.",
		opts, sizeof opts / sizeof opts[0] };
	ub_parse(&cli, argc, argv);

	struct ub_slot stack_line;   /* the main thread's local, for -k stack */
	void *obj = NULL, *old = NULL, *blocker = NULL;
	size_t size = 0;
	switch (kind) {
	case K_GLOBAL:
		obj = (void *)global_line.w;
		size = UB_LINE;
		break;
	case K_STACK:
		memset((void *)stack_line.w, 0, sizeof stack_line.w);
		obj = (void *)stack_line.w;
		size = UB_LINE;
		break;
	case K_MALLOC:
		size = HEAP_SIZE;
		if (!(obj = malloc(size)))
			die("malloc");
		memset(obj, FILL, size);
		break;
	case K_CALLOC:
		size = HEAP_SIZE;
		if (!(obj = calloc(HEAP_SIZE / UB_LINE, UB_LINE)))
			die("calloc");
		break;
	case K_REALLOC:
		/* a second block right after the first keeps realloc from growing
		 * in place: the block moves and old != new */
		if (!(old = malloc(REALLOC_FIRST)) || !(blocker = malloc(REALLOC_FIRST)))
			die("malloc");
		memset(old, FILL, REALLOC_FIRST);
		memset(blocker, FILL, REALLOC_FIRST);
		size = HEAP_SIZE;
		if (!(obj = realloc(old, size)))
			die("realloc");
		memset(obj, FILL, size);
		break;
	case K_MEMALIGN: {
		size = HEAP_SIZE;
		int e = posix_memalign(&obj, UB_LINE, size);
		if (e) {
			errno = e;
			die("posix_memalign");
		}
		memset(obj, FILL, size);
		break;
	}
	case K_ALIGNED_ALLOC:
		size = HEAP_SIZE;
		if (!(obj = aligned_alloc(UB_LINE, size)))
			die("aligned_alloc");
		memset(obj, FILL, size);
		break;
	case K_MMAP:
		size = MMAP_SIZE;
		obj = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (obj == MAP_FAILED)
			die("mmap");
		break;
	}
	uintptr_t line = ((uintptr_t)obj + UB_LINE - 1) & ~(uintptr_t)(UB_LINE - 1);
	struct ctx c = { (_Atomic uint64_t *)line, ub_threshold(frac) };

	struct ub_thread *t = ub_run((unsigned)threads, iters, seed, work, &c);
	printf("bench objects threads=%" PRIu64 " iters=%" PRIu64 " seed=%" PRIu64
	       " s=%g k=%s\n", threads, iters, seed, frac, kinds[kind]);
	char oldtxt[64] = "";
	if (kind == K_REALLOC)
		snprintf(oldtxt, sizeof oldtxt, " old=0x%" PRIxPTR, (uintptr_t)old);
	ub_object("shared", obj, size, kinds[kind], ub_all_threads((unsigned)threads),
	          "size=%zu line=0x%" PRIxPTR ":%d word=0x%" PRIxPTR ":8%s", size, line, UB_LINE,
	          line, oldtxt);
	ub_print_private((unsigned)threads);
	ub_print_threads(t, (unsigned)threads, NULL, NULL);
	free(t);
	free(blocker);

	switch (kind) {
	case K_MALLOC: case K_CALLOC: case K_REALLOC: case K_MEMALIGN: case K_ALIGNED_ALLOC:
		free(obj);
		break;
	case K_MMAP:
		munmap(obj, size);
		break;
	default:
		break;
	}
	return 0;
}
