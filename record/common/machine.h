/* Machine metadata for the MACHINE section of a trace: cpu model, online
 * cpus, cache line size, the cpu -> core -> socket (and numa node) map, kernel
 * release and host name.
 *
 * Everything is read from files under a root directory ("/" on a real
 * machine, a fake tree in the unit tests):
 *   ROOT/proc/cpuinfo                                  model name, vendor_id
 *   ROOT/proc/sys/kernel/osrelease, .../hostname       kernel release, host
 *   ROOT/sys/devices/system/cpu/online                 online cpu list
 *   ROOT/sys/devices/system/cpu/cpuN/topology/{physical_package_id,core_id}
 *   ROOT/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size
 *   ROOT/sys/devices/system/node/nodeK/cpulist          numa nodes
 * Missing files are not errors: the field keeps its "unknown" value. */
#ifndef CT_MACHINE_H
#define CT_MACHINE_H

#include <stdbool.h>
#include <stddef.h>

struct ct_kv;

#define MACHINE_LINE_SIZE_DEFAULT 64

struct machine_cpu {
	int cpu;                 /* logical cpu number */
	int core;                /* topology/core_id, -1 if unknown */
	int socket;              /* topology/physical_package_id, -1 if unknown */
	int node;                /* numa node, -1 if unknown */
};

struct machine {
	char cpu_model[128];     /* "model name" ("" if unknown) */
	char cpu_vendor[32];     /* "vendor_id" ("" if unknown) */
	char arch[72];           /* uname machine when root is "/", else "" */
	char kernel[128];        /* kernel release ("" if unknown) */
	char hostname[128];      /* ("" if unknown) */
	int nproc;               /* online cpus */
	int line_size;           /* bytes (MACHINE_LINE_SIZE_DEFAULT if unknown) */
	bool line_size_known;    /* read from sysfs */
	int nsockets, ncores;    /* distinct sockets, distinct (socket, core) */
	int nnodes;              /* numa nodes with cpus, 0 if unknown */
	size_t ncpus;            /* entries in cpus, ascending by cpu */
	struct machine_cpu *cpus;
};

/* Fill m from the files under root (NULL means "/").  0, or -1 only when
 * memory ran out (m is then still valid, with fewer cpus). */
int machine_read(struct machine *m, const char *root);
void machine_free(struct machine *m);

/* Cache line size only (the cheap part of machine_read). */
int machine_line_size(const char *root);

/* Append the MACHINE keys (see doc/commrec.1) to kv. */
void machine_to_kv(const struct machine *m, struct ct_kv *kv);

/* Parse a sysfs cpu list ("0-3,8,10-11") into a bitmap of max bits:
 * returns the number of cpus set, or -1 if the text is malformed.  Numbers at
 * or above max are counted but not stored. */
int machine_parse_cpulist(const char *text, unsigned char *bits, int max);

#endif
