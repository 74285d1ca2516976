/* Unit tests of record/common/machine.c (on a fake /proc + /sys tree under a
 * temporary directory) and formats/buildid.c (on real binaries against
 * `readelf -n`, and on synthetic ELF files). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid.h"
#include "check.h"
#include "commtrace.h"
#include "machine.h"

static char root[1024];  /* short enough that ROOT/rel always fits PATH_MAX */

/* Create ROOT/rel (and its directories) holding text. */
static void put(const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		printf("cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static void rm_tree(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("could not remove %s\n", dir);
}

static void new_root(void)
{
	if (root[0])
		rm_tree(root);
	if (!mkdtemp(check_tmp_path(root, sizeof root, "rec_machine.XXXXXX"))) {
		printf("mkdtemp: %s\n", strerror(errno));
		exit(1);
	}
}

/* Two sockets, two cores each, two threads per core; cpu 7 offline. */
static void fake_two_sockets(void)
{
	new_root();
	put("proc/cpuinfo",
	    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
	    "model name\t: Intel(R) Xeon(R) Fake CPU @ 2.00GHz  \nflags\t\t: fpu\n\n"
	    "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: second line ignored\n");
	put("proc/sys/kernel/osrelease", "6.1.0-fake-amd64\n");
	put("proc/sys/kernel/hostname", "testhost\n");
	put("sys/devices/system/cpu/online", "0-6\n");
	put("sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size", "128\n");
	static const int core[8] = {0, 0, 1, 1, 0, 0, 1, 1}, sock[8] = {0, 0, 0, 0, 1, 1, 1, 1};
	for (int c = 0; c < 8; c++) {
		char rel[128];
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/core_id", c);
		put(rel, "%d\n", core[c]);
		snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		put(rel, "%d\n", sock[c]);
	}
	put("sys/devices/system/node/node0/cpulist", "0-3\n");
	put("sys/devices/system/node/node1/cpulist", "4-7\n");
	put("sys/devices/system/node/node2/cpulist", "\n");  /* memory-only node */
}

static void test_cpulist(void)
{
	unsigned char bits[4] = {0};
	CHECK_EQ_U(machine_parse_cpulist("0-3,8,10-11\n", bits, 32), 7);
	CHECK_EQ_U(bits[0], 0x0f);
	CHECK_EQ_U(bits[1], 0x0d);
	CHECK_EQ_U(machine_parse_cpulist("", NULL, 0), 0);
	CHECK_EQ_U(machine_parse_cpulist("5", NULL, 0), 1);
	CHECK(machine_parse_cpulist("3-1", NULL, 0) == -1);
	CHECK(machine_parse_cpulist("1,,2", NULL, 0) == -1);
	CHECK(machine_parse_cpulist("a", NULL, 0) == -1);
	CHECK(machine_parse_cpulist("1-", NULL, 0) == -1);
	memset(bits, 0, sizeof bits);
	CHECK_EQ_U(machine_parse_cpulist("30-40", bits, 32), 11);  /* counted, stored below 32 */
	CHECK_EQ_U(bits[3], 0xc0);
}

static void test_topology(void)
{
	struct machine m;
	fake_two_sockets();
	CHECK(machine_read(&m, root) == 0);
	CHECK_STR(m.cpu_model, "Intel(R) Xeon(R) Fake CPU @ 2.00GHz");
	CHECK_STR(m.cpu_vendor, "GenuineIntel");
	CHECK_STR(m.kernel, "6.1.0-fake-amd64");
	CHECK_STR(m.hostname, "testhost");
	CHECK_STR(m.arch, "");  /* not read from a fake root */
	CHECK_EQ_U(m.nproc, 7);
	CHECK_EQ_U(m.ncpus, 7);
	CHECK_EQ_U(m.line_size, 128);
	CHECK(m.line_size_known);
	CHECK_EQ_U(m.nsockets, 2);
	CHECK_EQ_U(m.ncores, 4);
	CHECK_EQ_U(m.nnodes, 2);
	CHECK_EQ_U(m.cpus[5].cpu, 5);
	CHECK_EQ_U(m.cpus[5].core, 0);
	CHECK_EQ_U(m.cpus[5].socket, 1);
	CHECK_EQ_U(m.cpus[5].node, 1);
	CHECK_EQ_U(m.cpus[2].node, 0);
	CHECK_EQ_U(machine_line_size(root), 128);
	machine_free(&m);
}

static void test_kv(void)
{
	static char buf[8192];
	struct machine m;
	struct ct_kv kv;
	char v[256];
	fake_two_sockets();
	machine_read(&m, root);
	ct_kv_init(&kv, buf, sizeof buf);
	machine_to_kv(&m, &kv);
	machine_free(&m);
	CHECK(!kv.overflow);
	CHECK(ct_kv_get(buf, kv.len, "cpu_model", v, sizeof v));
	CHECK_STR(v, "Intel(R) Xeon(R) Fake CPU @ 2.00GHz");
	CHECK(ct_kv_get(buf, kv.len, "nproc", v, sizeof v));
	CHECK_STR(v, "7");
	CHECK(ct_kv_get(buf, kv.len, "cache_line_size", v, sizeof v));
	CHECK_STR(v, "128");
	CHECK(ct_kv_get(buf, kv.len, "sockets", v, sizeof v));
	CHECK_STR(v, "2");
	CHECK(ct_kv_get(buf, kv.len, "cores", v, sizeof v));
	CHECK_STR(v, "4");
	CHECK(ct_kv_get(buf, kv.len, "numa_nodes", v, sizeof v));
	CHECK_STR(v, "2");
	CHECK(ct_kv_get(buf, kv.len, "cpu.0", v, sizeof v));
	CHECK_STR(v, "core 0 socket 0");
	CHECK(ct_kv_get(buf, kv.len, "cpu.6", v, sizeof v));
	CHECK_STR(v, "core 1 socket 1");
	CHECK(!ct_kv_get(buf, kv.len, "cpu.7", v, sizeof v));  /* offline */
	CHECK(ct_kv_get(buf, kv.len, "node.0", v, sizeof v));
	CHECK_STR(v, "0-3");
	CHECK(ct_kv_get(buf, kv.len, "node.1", v, sizeof v));
	CHECK_STR(v, "4-6");
	CHECK(!ct_kv_get(buf, kv.len, "node.2", v, sizeof v));
	CHECK(ct_kv_get(buf, kv.len, "kernel_release", v, sizeof v));
	CHECK_STR(v, "6.1.0-fake-amd64");
	CHECK(ct_kv_get(buf, kv.len, "hostname", v, sizeof v));
	CHECK_STR(v, "testhost");
}

/* No online list, odd files: fall back to cpuN directories and defaults. */
static void test_fallbacks(void)
{
	struct machine m;
	new_root();
	put("proc/cpuinfo", "processor\t: 0\nHardware\t: Fake ARM board\n");
	put("sys/devices/system/cpu/cpu0/topology/core_id", "0\n");
	put("sys/devices/system/cpu/cpu1/topology/core_id", "garbage\n");
	put("sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size", "0\n");
	put("sys/devices/system/cpu/cpufreq/x", "");
	CHECK(machine_read(&m, root) == 0);
	CHECK_STR(m.cpu_model, "Fake ARM board");
	CHECK_EQ_U(m.nproc, 2);
	CHECK_EQ_U(m.line_size, 64);
	CHECK(!m.line_size_known);
	CHECK(m.cpus[0].core == 0 && m.cpus[0].socket == -1);
	CHECK(m.cpus[1].core == -1);
	CHECK_EQ_U(m.nnodes, 0);
	CHECK_EQ_U(m.nsockets, 0);
	machine_free(&m);

	new_root();  /* nothing at all */
	CHECK(machine_read(&m, root) == 0);
	CHECK_EQ_U(m.nproc, 0);
	CHECK_EQ_U(m.line_size, 64);
	CHECK_STR(m.cpu_model, "");
	machine_free(&m);
}

/* The real machine: at least one cpu, a sane line size. */
static void test_real_machine(void)
{
	struct machine m;
	CHECK(machine_read(&m, NULL) == 0);
	CHECK(m.nproc >= 1);
	CHECK(m.line_size >= 8 && (m.line_size & (m.line_size - 1)) == 0);
	CHECK(m.arch[0] != '\0');
	CHECK(m.kernel[0] != '\0');
	machine_free(&m);
}

/* ---- build-ids ---------------------------------------------------------- */

/* Build-id of path according to `readelf -n`: 1 found, 0 none, -1 no readelf. */
static int readelf_buildid(const char *path, char *hex, size_t cap)
{
	char cmd[PATH_MAX + 64], line[512];
	snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	int found = 0, any = 0;
	while (fgets(line, sizeof line, p)) {
		any = 1;
		char *b = strstr(line, "Build ID: ");
		if (b && !found) {
			b += 10;
			size_t n = strspn(b, "0123456789abcdef");
			if (n >= cap)
				n = cap - 1;
			memcpy(hex, b, n);
			hex[n] = '\0';
			found = 1;
		}
	}
	int st = pclose(p);
	if (!any && st != 0)
		return -1;
	return found;
}

static void check_against_readelf(const char *path)
{
	char want[2 * BUILDID_MAX + 1], got[2 * BUILDID_MAX + 1];
	uint8_t id[BUILDID_MAX];
	int r = readelf_buildid(path, want, sizeof want);
	int n = buildid_read(path, id);
	if (r < 0) {
		SKIP("readelf not found (binutils)");
		return;
	}
	if (r == 0) {
		CHECK_EQ_U(n, 0);
		return;
	}
	CHECK(n > 0);
	buildid_hex(id, n > 0 ? n : 0, got);
	CHECK_STR(got, want);
}

static void test_buildid_self(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n > 0 ? n : 0] = '\0';
	check_against_readelf(self);
}

static void test_buildid_system(void)
{
	static const char *const bins[] = {"/bin/true", "/bin/sh", "/usr/bin/env"};
	int done = 0;
	for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++) {
		char real[PATH_MAX];
		if (!realpath(bins[i], real))
			continue;
		check_against_readelf(real);
		done++;
		if (check_case_failed || check_case_skipped)
			return;
	}
	if (!done)
		SKIP("no /bin/true, /bin/sh or /usr/bin/env");
}

/* A synthetic ELF with one PT_NOTE holding an unrelated note and then a
 * build-id, in the given class and byte order. */
static size_t synth_elf(uint8_t *out, bool is64, bool big, bool with_interp, int note_align)
{
	memset(out, 0, 512);
	uint8_t *p = out;
#define W16(at, v) do { uint16_t v_ = (v); if (big) { (at)[0] = v_ >> 8; (at)[1] = (uint8_t)v_; } \
                        else { (at)[0] = (uint8_t)v_; (at)[1] = v_ >> 8; } } while (0)
#define W32(at, v) do { uint32_t v_ = (v); for (int i_ = 0; i_ < 4; i_++) \
                        (at)[big ? i_ : 3 - i_] = (uint8_t)(v_ >> (8 * (3 - i_))); } while (0)
#define W64(at, v) do { uint64_t v_ = (v); for (int i_ = 0; i_ < 8; i_++) \
                        (at)[big ? i_ : 7 - i_] = (uint8_t)(v_ >> (8 * (7 - i_))); } while (0)
	memcpy(p, ELFMAG, SELFMAG);
	p[EI_CLASS] = is64 ? ELFCLASS64 : ELFCLASS32;
	p[EI_DATA] = big ? ELFDATA2MSB : ELFDATA2LSB;
	p[EI_VERSION] = EV_CURRENT;
	size_t ehsize = is64 ? 64 : 52, phsize = is64 ? 56 : 32;
	int nph = with_interp ? 2 : 1;
	size_t note_off = ehsize + nph * phsize;
	note_off = (note_off + 7) & ~(size_t)7;
	W16(p + 16, ET_EXEC);
	W16(p + 18, is64 ? EM_X86_64 : EM_386);
	if (is64) {
		W64(p + 32, ehsize);
		W16(p + 54, phsize);
		W16(p + 56, nph);
		W16(p + 58, 64);
	} else {
		W32(p + 28, ehsize);
		W16(p + 42, phsize);
		W16(p + 44, nph);
		W16(p + 46, 40);
	}
	/* notes: "XYZ" type 1 with 5 bytes, then GNU build-id 20 bytes */
	uint8_t *n = out + note_off;
	size_t a = (size_t)note_align;
	W32(n, 4); W32(n + 4, 5); W32(n + 8, 1);
	memcpy(n + 12, "XYZ", 4);
	size_t d = (12 + 4 + a - 1) & ~(a - 1);
	memcpy(n + d, "\x01\x02\x03\x04\x05", 5);
	size_t next = (d + 5 + a - 1) & ~(a - 1);
	n += next;
	W32(n, 4); W32(n + 4, 20); W32(n + 8, NT_GNU_BUILD_ID);
	memcpy(n + 12, "GNU", 4);
	d = (12 + 4 + a - 1) & ~(a - 1);
	for (int i = 0; i < 20; i++)
		n[d + i] = (uint8_t)(0xa0 + i);
	size_t note_size = (size_t)(n + d + 20 - (out + note_off));
	uint8_t *ph = out + ehsize;
	if (is64) {
		W32(ph, PT_NOTE); W64(ph + 8, note_off); W64(ph + 32, note_size); W64(ph + 48, a);
	} else {
		W32(ph, PT_NOTE); W32(ph + 4, note_off); W32(ph + 16, note_size); W32(ph + 28, a);
	}
	if (with_interp) {
		ph += phsize;
		W32(ph, PT_INTERP);
	}
	return note_off + note_size;
#undef W16
#undef W32
#undef W64
}

static int write_file(const char *name, const void *data, size_t len, char *path)
{
	snprintf(path, PATH_MAX, "%s/%s", root, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, data, len);
	close(fd);
	return w == (ssize_t)len ? 0 : -1;
}

static void test_buildid_synthetic(void)
{
	static const char want[] = "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3";
	new_root();
	for (int variant = 0; variant < 8; variant++) {
		bool is64 = variant & 1, big = variant & 2;
		int align = (variant & 4) ? 8 : 4;
		uint8_t elf[512];
		char path[PATH_MAX], hex[2 * BUILDID_MAX + 1];
		uint8_t id[BUILDID_MAX];
		size_t len = synth_elf(elf, is64, big, variant == 1, align);
		CHECK(write_file("synth", elf, len, path) == 0);
		int n = buildid_read(path, id);
		CHECK_EQ_U(n, 20);
		buildid_hex(id, n > 0 ? n : 0, hex);
		CHECK_STR(hex, want);
		struct elf_kind k;
		CHECK(elf_kind_read(path, &k) == 0);
		CHECK(k.is_elf);
		CHECK(k.has_interp == (variant == 1));
		CHECK_EQ_U(k.elf_class, is64 ? 64 : 32);
		/* every truncation fails cleanly: -1 or 0, never a wrong id */
		for (size_t cut = 0; cut < len; cut++) {
			CHECK(write_file("cut", elf, cut, path) == 0);
			int m = buildid_read(path, id);
			CHECK(m <= 0);
		}
		if (check_case_failed)
			return;
	}
}

static void test_not_elf(void)
{
	char path[PATH_MAX];
	uint8_t id[BUILDID_MAX];
	struct elf_kind k;
	new_root();
	CHECK(write_file("script", "#!/bin/sh\necho hi\n", 18, path) == 0);
	CHECK(buildid_read(path, id) == -1);
	CHECK(elf_kind_read(path, &k) == 0);
	CHECK(!k.is_elf);
	CHECK(buildid_read("/nonexistent/file", id) == -1);
	CHECK(elf_kind_read("/nonexistent/file", &k) == -1);
	CHECK(buildid_read("/dev/null", id) == -1);  /* not a regular file */
	char real[PATH_MAX];
	if (realpath("/bin/sh", real)) {
		CHECK(elf_kind_read(real, &k) == 0);
		CHECK(k.is_elf && k.has_interp);
	}
	char hex[8];
	buildid_hex(id, 0, hex);
	CHECK_STR(hex, "");
}

int main(void)
{
	RUN(test_cpulist);
	RUN(test_topology);
	RUN(test_kv);
	RUN(test_fallbacks);
	RUN(test_real_machine);
	RUN(test_buildid_self);
	RUN(test_buildid_system);
	RUN(test_buildid_synthetic);
	RUN(test_not_elf);
	if (root[0])
		rm_tree(root);
	return check_summary();
}
