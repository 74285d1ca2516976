/* Attribution internals shared by attrib.c (state, accumulation) and
 * attrib_out.c (tables in text, CSV, JSON). */
#ifndef CT_ATTRIB_INT_H
#define CT_ATTRIB_INT_H

#include "attrib.h"

struct u64map {
	uint64_t *k;
	uint32_t *v;             /* UINT32_MAX: empty slot */
	size_t cap, n;
};
bool u64map_get(const struct u64map *m, uint64_t k, uint32_t *v);
int u64map_put(struct u64map *m, uint64_t k, uint32_t v);   /* 0, or -1 out of memory */
void u64map_free(struct u64map *m);

#define TSET_MAX 8
struct tset {
	uint32_t t[TSET_MAX];
	uint8_t n;
	bool more;               /* more threads than TSET_MAX */
};

struct acode {
	uint64_t ip;             /* code address as looked up (hits: ip - 1) */
	uint64_t events;
	double weight;
};

#define FIELDS_MAX 256
struct afield {
	char path[128];          /* "q.count", "cells[2].y", "+8" (heap), "top-0x40" (stack) */
	uint64_t off, size;      /* within the object */
	struct tset writers, readers;
	uint64_t loads, stores;
	uint64_t true_events, false_events;
	double weight;
};

struct apair {
	uint32_t dst, src;
	double w[3];             /* enum mx_kind */
};

#define OBJ_CODE_MAX 16
struct aobj {
	uint8_t kind;            /* enum obj_kind */
	char *name;              /* unique display name: "q", "heap:alloc_a", "stack:T0" */
	char *desc;              /* heap/mmap: the call path; static in a library: its path */
	char *type;              /* static: the type name; heap/mmap: the blocks' type or "untyped" */
	const struct st_module *bmod;   /* heap/mmap: the allocation site's module and */
	const struct st_alloc *balloc;  /* type (SYMBOLS), NULL: untyped */
	uint64_t size;           /* static: variable size; heap: largest block */
	uint64_t nallocs;        /* heap/mmap: blocks allocated */
	double w[3];
	uint64_t ev[3];
	uint64_t as_src_only;    /* events counted because only the publisher's access was here */
	struct afield *fields;
	unsigned nfields, cap_fields;
	uint64_t fields_other;
	struct u64map field_idx;  /* field key -> index in fields */
	struct apair *pairs;
	size_t npairs, cap_pairs;
	struct u64map pair_idx;
	struct acode code[OBJ_CODE_MAX];
	unsigned ncode;
	uint64_t code_other;
};

#define OFF_CODE_MAX 4
struct aoff {
	uint32_t off;            /* byte offset in the line of the access start */
	uint8_t len;
	uint32_t obj;
	char field[128];
	struct tset writers, readers;
	uint64_t loads, stores, true_events, false_events;
	double weight;
	struct acode code[OFF_CODE_MAX];
	unsigned ncode;
	uint64_t code_other;
};

struct aline {
	uint64_t line;
	double w[3];
	uint64_t ev[3];
	struct aoff *offs;
	unsigned noffs, cap_offs;
};

struct acallsite {
	uint8_t depth;
	uint64_t pc[CT_CALLSITE_MAX_DEPTH];
	uint32_t obj_heap, obj_mmap;
};

/* The publishers' store samples and the watchpoint arms that name them
 * (attrib.c): a watchpoint event carries no publisher's code address, its
 * arm (WP_ARM) names the publisher's sample by thread and time.  Samples
 * are remembered in a table of PUB_SAMPLES slots by (thread, time), a
 * later sample taking an earlier one's slot: the memory does not grow with
 * the threads, and a publication is almost always armed on within a few
 * dozen of its publisher's samples (LULESH: at most 52). */
#define PUB_SAMPLES (1u << 16)
struct apub {
	uint64_t time, ip;
	uint32_t thread;
};
/* The arms, in a table of PUB_ARMS slots by (watcher, publisher, published
 * address), a later arm taking an earlier one's slot: a hit follows its arm
 * within the arms of a few samples of all threads. */
#define PUB_ARMS (1u << 16)
struct aarm {                /* the newest arm of one watcher on one publication */
	uint64_t addr, ip;       /* the published address, the publisher's sample ip */
	uint32_t watcher, publisher;
};

/* Live blocks keyed by start address: a treap in an array (attrib.c). */
struct iv_node {
	uint64_t lo, size;
	uint32_t obj;            /* object index (heap/mmap group) */
	uint32_t prio;
	int32_t l, r;
};
struct ivtree {
	struct iv_node *n;
	size_t len, cap;
	int32_t root, freelist;
	uint32_t seed;
	size_t live;
};

struct attrib {
	struct ct_trace *trace;
	unsigned line_size;
	bool from_binaries;
	const char *symbols_source;
	size_t nth_space;
	struct symtab syms;
	const struct st_module *main_mod;
	/* replay state */
	struct ivtree heap, mmaps;
	struct ivtree stacks, tls;   /* obj: the thread index */
	struct acallsite *cs;
	size_t ncs, cap_cs;
	struct u64map cs_by_id;
	struct u64map prev_votes;   /* sample ip -> prev-insn votes << 16 | at-ip votes */
	struct apub *pubs;          /* [PUB_SAMPLES], allocated at the first store sample */
	struct aarm *arms;          /* [PUB_ARMS], allocated at the first arm */
	/* results */
	struct aobj *objs;
	size_t nobjs, cap_objs;
	struct u64map obj_by_key, obj_by_name;
	struct u64map obj_cache;  /* var pointer, module pointer|1, thread keys, 2 -> object */
	struct aline *lines;
	size_t nlines, cap_lines;
	struct u64map line_idx;
	uint64_t events;
	double weight;
	unsigned rank_kind;       /* enum mx_kind: objects ranked and listed by it */
	bool oom;
	char *notes;
	size_t notes_len, notes_cap;
};

/* The objects, lines and functions commands (cmd_objects.c). */
enum attrib_cmd { ACMD_OBJECTS, ACMD_LINES, ACMD_FUNCTIONS };
struct fnflow;
struct attrib_cli {
	const char *path, *out, *object;
	enum attrib_format fmt;
	size_t top;              /* 0: all */
	enum attrib_cmd cmd;
	bool from_binaries, no_demangle, by_threads;
	bool by_object;          /* functions --by object: reuse per object */
	struct fnflow *ff;       /* functions: the flows */
	enum mx_kind kind;
	struct model_opts o;
};
struct analysis;
/* Writes the command's output to f: 0, >0 an exit status, <0 a write error
 * (errno set). */
typedef int attrib_cli_writer(struct attrib_cli *c, struct analysis *an, struct attrib *a,
                              FILE *f);
/* The whole command: parse the options (--object only for objects, --kind
 * for objects and functions, --threads and --format dot for functions), run
 * the analysis with attribution, write with fn to -o FILE or stdout.
 * Returns the exit status. */
int attrib_cli_main(const char *cmd, enum attrib_cmd which, int argc, char **argv,
                    attrib_cli_writer *fn);

/* The code address to look up for an access reported at ip (hit: a
 * watchpoint trap, reported after the access); 0 stays 0. */
uint64_t attrib_code_ip(const struct attrib *a, uint64_t ip, bool hit);

/* The code address to look up for the publisher's access of ev: its
 * src_ip, or for a watchpoint event without one, the ip of the publisher's
 * store sample its arm names (when the tables still hold both); 0 unknown. */
uint64_t attrib_src_ip(const struct attrib *a, const struct comm_event *ev);

void attrib_note(struct attrib *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int attrib_find_object(const struct attrib *a, const char *name);

#endif
