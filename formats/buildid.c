/* ELF build-id notes and program kind, read with pread().  See buildid.h. */
#include "buildid.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PHDRS 4096
#define MAX_SHDRS 32768
#define MAX_NOTE_BYTES (1u << 20)

struct elf_file {
	int fd;
	off_t size;
	bool is64, big;
	uint16_t type, machine;
	uint64_t phoff, shoff;
	uint16_t phentsize, phnum, shentsize, shnum;
};

static uint16_t get16(const struct elf_file *e, const uint8_t *p)
{
	return e->big ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t get32(const struct elf_file *e, const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[e->big ? i : 3 - i] << (8 * (3 - i));
	return v;
}

static uint64_t get64(const struct elf_file *e, const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[e->big ? i : 7 - i] << (8 * (7 - i));
	return v;
}

/* Word of the class's natural size (addresses, offsets). */
static uint64_t getw(const struct elf_file *e, const uint8_t *p)
{
	return e->is64 ? get64(e, p) : get32(e, p);
}

static bool read_at(const struct elf_file *e, uint64_t off, void *buf, size_t len)
{
	if (off > (uint64_t)e->size || len > (uint64_t)e->size - off)
		return false;
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(e->fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* 1 ELF, 0 not ELF, -1 unreadable. */
static int elf_open(struct elf_file *e, int fd)
{
	uint8_t h[64];
	memset(e, 0, sizeof *e);
	e->fd = fd;
	e->size = lseek(fd, 0, SEEK_END);
	if (e->size < 0)
		return -1;
	if (e->size < 52 || !read_at(e, 0, h, 52) || memcmp(h, ELFMAG, SELFMAG))
		return 0;
	if (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64)
		return 0;
	if (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB)
		return 0;
	e->is64 = h[EI_CLASS] == ELFCLASS64;
	e->big = h[EI_DATA] == ELFDATA2MSB;
	if (e->is64 && (e->size < 64 || !read_at(e, 0, h, 64)))
		return 0;
	e->type = get16(e, h + 16);
	e->machine = get16(e, h + 18);
	if (e->is64) {
		e->phoff = get64(e, h + 32);
		e->shoff = get64(e, h + 40);
		e->phentsize = get16(e, h + 54);
		e->phnum = get16(e, h + 56);
		e->shentsize = get16(e, h + 58);
		e->shnum = get16(e, h + 60);
	} else {
		e->phoff = get32(e, h + 28);
		e->shoff = get32(e, h + 32);
		e->phentsize = get16(e, h + 42);
		e->phnum = get16(e, h + 44);
		e->shentsize = get16(e, h + 46);
		e->shnum = get16(e, h + 48);
	}
	size_t need_ph = e->is64 ? 56 : 32, need_sh = e->is64 ? 64 : 40;
	if (e->phentsize < need_ph || e->phnum > MAX_PHDRS)
		e->phnum = 0;
	if (e->shentsize < need_sh || e->shnum > MAX_SHDRS)
		e->shnum = 0;
	return 1;
}

/* Look for NT_GNU_BUILD_ID "GNU" in the notes at [off, off+size). */
static int scan_notes(const struct elf_file *e, uint64_t off, uint64_t size, uint64_t align,
                      uint8_t id[BUILDID_MAX])
{
	static const uint8_t gnu[4] = "GNU";
	if (size < 12 || size > MAX_NOTE_BYTES)
		return 0;
	uint8_t buf[8 + BUILDID_MAX];
	uint64_t pos = 0;
	align = align == 8 ? 8 : 4;
	while (pos + 12 <= size) {
		uint8_t nh[12];
		if (!read_at(e, off + pos, nh, 12))
			return 0;
		uint32_t namesz = get32(e, nh), descsz = get32(e, nh + 4), type = get32(e, nh + 8);
		/* Offsets are aligned from the start of the note (gABI; the
		 * binutils reading for 8-aligned PT_NOTE segments). */
		uint64_t desc_off = (12 + (uint64_t)namesz + align - 1) & ~(align - 1);
		uint64_t next = (desc_off + descsz + align - 1) & ~(align - 1);
		if (pos + desc_off + descsz > size)
			return 0;
		next = pos + next > size ? size : pos + next;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && descsz >= 1 && descsz <= BUILDID_MAX &&
		    desc_off - 12 <= 8) {
			if (!read_at(e, off + pos + 12, buf, desc_off - 12 + descsz))
				return 0;
			if (!memcmp(buf, gnu, 4)) {
				memcpy(id, buf + desc_off - 12, descsz);
				return (int)descsz;
			}
		}
		pos = next;
	}
	return 0;
}

static int buildid_read_fd(int fd, uint8_t id[BUILDID_MAX])
{
	struct elf_file e;
	int r = elf_open(&e, fd);
	if (r <= 0)
		return -1;
	/* Program headers first: PT_NOTE segments are what a loaded file has. */
	for (unsigned i = 0; i < e.phnum; i++) {
		uint8_t ph[56];
		if (!read_at(&e, e.phoff + (uint64_t)i * e.phentsize, ph, e.is64 ? 56 : 32))
			break;
		uint32_t type = get32(&e, ph);
		if (type != PT_NOTE)
			continue;
		uint64_t off = e.is64 ? get64(&e, ph + 8) : get32(&e, ph + 4);
		uint64_t size = e.is64 ? get64(&e, ph + 32) : get32(&e, ph + 16);
		uint64_t align = e.is64 ? get64(&e, ph + 48) : get32(&e, ph + 28);
		int n = scan_notes(&e, off, size, align, id);
		if (n > 0)
			return n;
	}
	/* Then SHT_NOTE sections (relocatable objects, odd linkers). */
	for (unsigned i = 0; i < e.shnum; i++) {
		uint8_t sh[64];
		if (!read_at(&e, e.shoff + (uint64_t)i * e.shentsize, sh, e.is64 ? 64 : 40))
			break;
		if (get32(&e, sh + 4) != SHT_NOTE)
			continue;
		uint64_t off = getw(&e, sh + (e.is64 ? 24 : 16));
		uint64_t size = getw(&e, sh + (e.is64 ? 32 : 20));
		uint64_t align = getw(&e, sh + (e.is64 ? 48 : 32));
		int n = scan_notes(&e, off, size, align, id);
		if (n > 0)
			return n;
	}
	return 0;
}

/* Only regular files: opening a device that a program mapped could have
 * side effects. */
static int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

int buildid_read(const char *path, uint8_t id[BUILDID_MAX])
{
	int fd = open_regular(path);
	if (fd < 0)
		return -1;
	int n = buildid_read_fd(fd, id);
	close(fd);
	return n;
}

void buildid_hex(const uint8_t *id, int len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < len; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * (len > 0 ? len : 0)] = '\0';
}

int elf_kind_read(const char *path, struct elf_kind *k)
{
	memset(k, 0, sizeof *k);
	int fd = open_regular(path);
	if (fd < 0)
		return -1;
	struct elf_file e;
	int r = elf_open(&e, fd);
	if (r < 0) {
		close(fd);
		return -1;
	}
	if (r > 0) {
		k->is_elf = true;
		k->elf_class = e.is64 ? 64 : 32;
		k->machine = e.machine;
		k->is_dyn = e.type == ET_DYN;
		for (unsigned i = 0; i < e.phnum; i++) {
			uint8_t ph[4];
			if (!read_at(&e, e.phoff + (uint64_t)i * e.phentsize, ph, 4))
				break;
			if (get32(&e, ph) == PT_INTERP) {
				k->has_interp = true;
				break;
			}
		}
	}
	close(fd);
	return 0;
}
