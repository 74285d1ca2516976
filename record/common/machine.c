/* Machine metadata read from /proc and /sys (or a fake tree under a root
 * directory, for the tests).  See machine.h. */
#include "machine.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "commtrace.h"

#define CPU_DIR "/sys/devices/system/cpu"
#define NODE_DIR "/sys/devices/system/node"
#define MAX_CPUS 8192

static const char *root_or_slash(const char *root)
{
	return (root && *root) ? root : "/";
}

static bool root_is_slash(const char *root)
{
	return !root || !*root || strcmp(root, "/") == 0;
}

/* ROOT + rel into out; rel starts with '/'. */
static void join_path(char *out, size_t cap, const char *root, const char *rel)
{
	root = root_or_slash(root);
	size_t n = strlen(root);
	while (n > 0 && root[n - 1] == '/')
		n--;
	snprintf(out, cap, "%.*s%s", (int)n, root, rel);
}

/* Read a small text file (first cap-1 bytes), strip trailing white space.
 * 0 or -1. */
static int read_text(const char *root, const char *rel, char *out, size_t cap)
{
	char path[PATH_MAX];
	join_path(path, sizeof path, root, rel);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = '\0';
	while (n > 0 && isspace((unsigned char)out[n - 1]))
		out[--n] = '\0';
	return 0;
}

static int read_int(const char *root, const char *rel, int *out)
{
	char buf[64], *end;
	if (read_text(root, rel, buf, sizeof buf) < 0)
		return -1;
	errno = 0;
	long v = strtol(buf, &end, 10);
	if (end == buf || *end || errno || v < INT_MIN || v > INT_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

int machine_parse_cpulist(const char *text, unsigned char *bits, int max)
{
	int count = 0;
	const char *p = text;
	while (*p && isspace((unsigned char)*p))
		p++;
	if (!*p)
		return 0;
	for (;;) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return -1;
		long lo = strtol(p, &end, 10), hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -1;
			hi = strtol(p, &end, 10);
			p = end;
		}
		if (hi < lo || hi > INT_MAX / 2)
			return -1;
		for (long c = lo; c <= hi; c++) {
			count++;
			if (bits && c < max)
				bits[c / 8] |= (unsigned char)(1u << (c % 8));
		}
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			return count;
		if (*p != ',')
			return -1;
		p++;
	}
}

static bool bit_isset(const unsigned char *bits, int c)
{
	return bits[c / 8] & (1u << (c % 8));
}

static void copy_trimmed(char *out, size_t cap, const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* The first "model name" (x86) or "cpu model"/"Hardware"/"uarch" (others)
 * line of /proc/cpuinfo, and "vendor_id". */
static void read_cpuinfo(struct machine *m, const char *root)
{
	char path[PATH_MAX], line[512];
	join_path(path, sizeof path, root, "/proc/cpuinfo");
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char fallback[sizeof m->cpu_model] = "";
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		size_t klen = (size_t)(colon - line);
		while (klen > 0 && isspace((unsigned char)line[klen - 1]))
			klen--;
		const char *val = colon + 1;
		if (klen == 10 && !strncmp(line, "model name", 10) && !m->cpu_model[0])
			copy_trimmed(m->cpu_model, sizeof m->cpu_model, val);
		else if (klen == 9 && !strncmp(line, "vendor_id", 9) && !m->cpu_vendor[0])
			copy_trimmed(m->cpu_vendor, sizeof m->cpu_vendor, val);
		else if (!fallback[0] && ((klen == 9 && !strncmp(line, "cpu model", 9)) ||
		                          (klen == 8 && !strncmp(line, "Hardware", 8)) ||
		                          (klen == 5 && !strncmp(line, "uarch", 5))))
			copy_trimmed(fallback, sizeof fallback, val);
	}
	fclose(f);
	if (!m->cpu_model[0] && fallback[0])
		memcpy(m->cpu_model, fallback, sizeof fallback);
}

/* Bitmap of the cpus to describe: the online list, else every cpuN
 * directory.  Returns the bitmap (calloc'd) or NULL. */
static unsigned char *online_cpus(const char *root)
{
	unsigned char *bits = calloc(MAX_CPUS / 8, 1);
	if (!bits)
		return NULL;
	char text[4096];
	if (read_text(root, CPU_DIR "/online", text, sizeof text) == 0 &&
	    machine_parse_cpulist(text, bits, MAX_CPUS) > 0)
		return bits;
	memset(bits, 0, MAX_CPUS / 8);
	char path[PATH_MAX];
	join_path(path, sizeof path, root, CPU_DIR);
	DIR *d = opendir(path);
	if (!d)
		return bits;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, "cpu", 3) || !isdigit((unsigned char)e->d_name[3]))
			continue;
		long c = strtol(e->d_name + 3, &end, 10);
		if (!*end && c >= 0 && c < MAX_CPUS)
			bits[c / 8] |= (unsigned char)(1u << (c % 8));
	}
	closedir(d);
	return bits;
}

static void read_nodes(struct machine *m, const char *root)
{
	char path[PATH_MAX];
	join_path(path, sizeof path, root, NODE_DIR);
	DIR *d = opendir(path);
	if (!d)
		return;
	unsigned char *bits = calloc(MAX_CPUS / 8, 1);
	if (!bits) {
		closedir(d);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end, rel[PATH_MAX], text[4096];
		if (strncmp(e->d_name, "node", 4) || !isdigit((unsigned char)e->d_name[4]))
			continue;
		long node = strtol(e->d_name + 4, &end, 10);
		if (*end || node < 0 || node > INT_MAX)
			continue;
		snprintf(rel, sizeof rel, NODE_DIR "/%s/cpulist", e->d_name);
		if (read_text(root, rel, text, sizeof text) < 0)
			continue;
		memset(bits, 0, MAX_CPUS / 8);
		int n = machine_parse_cpulist(text, bits, MAX_CPUS);
		if (n <= 0)
			continue;
		m->nnodes++;
		for (size_t i = 0; i < m->ncpus; i++)
			if (m->cpus[i].cpu < MAX_CPUS && bit_isset(bits, m->cpus[i].cpu))
				m->cpus[i].node = (int)node;
	}
	free(bits);
	closedir(d);
}

int machine_line_size(const char *root)
{
	int v;
	if (read_int(root, CPU_DIR "/cpu0/cache/index0/coherency_line_size", &v) == 0 &&
	    v >= 8 && v <= 4096 && (v & (v - 1)) == 0)
		return v;
	return MACHINE_LINE_SIZE_DEFAULT;
}

static int count_distinct(const struct machine *m, bool with_core)
{
	int n = 0;
	for (size_t i = 0; i < m->ncpus; i++) {
		const struct machine_cpu *c = &m->cpus[i];
		if (c->socket < 0 || (with_core && c->core < 0))
			continue;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = m->cpus[j].socket == c->socket &&
			       (!with_core || m->cpus[j].core == c->core);
		n += !seen;
	}
	return n;
}

int machine_read(struct machine *m, const char *root)
{
	int rc = 0;
	memset(m, 0, sizeof *m);
	read_cpuinfo(m, root);
	read_text(root, "/proc/sys/kernel/osrelease", m->kernel, sizeof m->kernel);
	read_text(root, "/proc/sys/kernel/hostname", m->hostname, sizeof m->hostname);
	if (root_is_slash(root)) {
		struct utsname u;
		if (uname(&u) == 0) {
			snprintf(m->arch, sizeof m->arch, "%s", u.machine);
			if (!m->kernel[0])
				snprintf(m->kernel, sizeof m->kernel, "%s", u.release);
			if (!m->hostname[0])
				snprintf(m->hostname, sizeof m->hostname, "%s", u.nodename);
		}
	}

	int v;
	m->line_size = MACHINE_LINE_SIZE_DEFAULT;
	if (read_int(root, CPU_DIR "/cpu0/cache/index0/coherency_line_size", &v) == 0 &&
	    v >= 8 && v <= 4096 && (v & (v - 1)) == 0) {
		m->line_size = v;
		m->line_size_known = true;
	}

	unsigned char *bits = online_cpus(root);
	if (!bits)
		return -1;
	size_t count = 0;
	for (int c = 0; c < MAX_CPUS; c++)
		count += bit_isset(bits, c);
	m->nproc = (int)count;
	if (count) {
		m->cpus = calloc(count, sizeof *m->cpus);
		if (!m->cpus)
			rc = -1;
	}
	for (int c = 0; c < MAX_CPUS && m->cpus; c++) {
		if (!bit_isset(bits, c))
			continue;
		struct machine_cpu *mc = &m->cpus[m->ncpus++];
		char rel[128];
		mc->cpu = c;
		mc->core = mc->socket = mc->node = -1;
		snprintf(rel, sizeof rel, CPU_DIR "/cpu%d/topology/core_id", c);
		if (read_int(root, rel, &v) == 0)
			mc->core = v;
		snprintf(rel, sizeof rel, CPU_DIR "/cpu%d/topology/physical_package_id", c);
		if (read_int(root, rel, &v) == 0)
			mc->socket = v;
	}
	free(bits);
	read_nodes(m, root);
	m->nsockets = count_distinct(m, false);
	m->ncores = count_distinct(m, true);
	return rc;
}

void machine_free(struct machine *m)
{
	free(m->cpus);
	m->cpus = NULL;
	m->ncpus = 0;
}

void machine_to_kv(const struct machine *m, struct ct_kv *kv)
{
	ct_kv_add(kv, "cpu_model", "%s", m->cpu_model);
	ct_kv_add(kv, "cpu_vendor", "%s", m->cpu_vendor);
	ct_kv_add(kv, "arch", "%s", m->arch);
	ct_kv_add(kv, "nproc", "%d", m->nproc);
	ct_kv_add(kv, "cache_line_size", "%d", m->line_size);
	ct_kv_add(kv, "sockets", "%d", m->nsockets);
	ct_kv_add(kv, "cores", "%d", m->ncores);
	ct_kv_add(kv, "numa_nodes", "%d", m->nnodes);
	for (size_t i = 0; i < m->ncpus; i++) {
		const struct machine_cpu *c = &m->cpus[i];
		char key[32];
		snprintf(key, sizeof key, "cpu.%d", c->cpu);
		/* -1 means unknown; the analyzer then treats the cpu as its own
		 * core and socket 0. */
		ct_kv_add(kv, key, "core %d socket %d", c->core, c->socket);
	}
	/* node.K=cpu list of numa node K, in sysfs list syntax */
	for (int node = 0, seen = 0; seen < m->nnodes && node < MAX_CPUS; node++) {
		char list[1024], key[32];
		size_t len = 0;
		list[0] = '\0';
		for (size_t i = 0; i < m->ncpus; i++) {
			if (m->cpus[i].node != node)
				continue;
			size_t j = i;
			while (j + 1 < m->ncpus && m->cpus[j + 1].node == node &&
			       m->cpus[j + 1].cpu == m->cpus[j].cpu + 1)
				j++;
			int w = j > i ? snprintf(list + len, sizeof list - len, "%s%d-%d", len ? "," : "",
			                         m->cpus[i].cpu, m->cpus[j].cpu)
			              : snprintf(list + len, sizeof list - len, "%s%d", len ? "," : "",
			                         m->cpus[i].cpu);
			if (w < 0 || (size_t)w >= sizeof list - len)
				break;
			len += (size_t)w;
			i = j;
		}
		if (!len)
			continue;
		seen++;
		snprintf(key, sizeof key, "node.%d", node);
		ct_kv_add(kv, key, "%s", list);
	}
	ct_kv_add(kv, "kernel_release", "%s", m->kernel);
	ct_kv_add(kv, "hostname", "%s", m->hostname);
}
