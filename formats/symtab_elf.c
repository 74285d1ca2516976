/* Symbol tables from ELF files: a small reader of our own (no libelf) for
 * the symbol tables and program headers (the build-id note: buildid.c, the
 * reader the launcher records build-ids with); DWARF through
 * symtab_dwarf.c when libdwarf is available.  ELF64 little-endian only
 * (x86-64, aarch64); other files give a module without symbols and a note.
 * Never trusts the file: every offset and size is checked against its size. */
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LZMA
#include <lzma.h>
#endif

#include "symtab.h"

struct elf_file {
	const uint8_t *p;
	size_t size;
	bool heap;              /* p is malloc'ed (a decompressed MiniDebugInfo), not mapped */
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;   /* NULL if no usable section headers */
	size_t shnum;
	const Elf64_Phdr *ph;
	size_t phnum;
};

static void elf_close(struct elf_file *e)
{
	if (e->p && e->heap)
		free((void *)e->p);
	else if (e->p)
		munmap((void *)e->p, e->size);
	memset(e, 0, sizeof *e);
}

static bool in_file(const struct elf_file *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

static int elf_headers(struct elf_file *e);

/* 0 ok, -1 cannot open/map, -2 not a supported ELF. */
static int elf_open(struct elf_file *e, const char *path)
{
	memset(e, 0, sizeof *e);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -2;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	e->p = p;
	e->size = (size_t)st.st_size;
	return elf_headers(e);
}

/* The headers of the image at e->p (e->size bytes, at least an Ehdr):
 * 0, or -2 (closed) when it is not a supported ELF. */
static int elf_headers(struct elf_file *e)
{
	e->eh = (const Elf64_Ehdr *)e->p;
	const unsigned char *id = e->eh->e_ident;
	if (memcmp(id, ELFMAG, SELFMAG) || id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB) {
		elf_close(e);
		return -2;
	}
	if (e->eh->e_shoff && e->eh->e_shentsize == sizeof(Elf64_Shdr) && e->eh->e_shnum &&
	    e->eh->e_shoff % 8 == 0 &&
	    in_file(e, e->eh->e_shoff, (uint64_t)e->eh->e_shnum * sizeof(Elf64_Shdr))) {
		e->sh = (const Elf64_Shdr *)(e->p + e->eh->e_shoff);
		e->shnum = e->eh->e_shnum;
	}
	if (e->eh->e_phoff && e->eh->e_phentsize == sizeof(Elf64_Phdr) && e->eh->e_phoff % 8 == 0 &&
	    in_file(e, e->eh->e_phoff, (uint64_t)e->eh->e_phnum * sizeof(Elf64_Phdr))) {
		e->ph = (const Elf64_Phdr *)(e->p + e->eh->e_phoff);
		e->phnum = e->eh->e_phnum;
	}
	return 0;
}

static const char *sec_name(const struct elf_file *e, const Elf64_Shdr *s)
{
	size_t si = e->eh->e_shstrndx;
	if (si >= e->shnum)
		return "";
	const Elf64_Shdr *ss = &e->sh[si];
	if (!in_file(e, ss->sh_offset, ss->sh_size) || s->sh_name >= ss->sh_size)
		return "";
	const char *n = (const char *)e->p + ss->sh_offset + s->sh_name;
	if (!memchr(n, 0, ss->sh_size - s->sh_name))
		return "";
	return n;
}

static const Elf64_Shdr *find_section(const struct elf_file *e, const char *name)
{
	for (size_t i = 0; i < e->shnum; i++)
		if (!strcmp(sec_name(e, &e->sh[i]), name))
			return &e->sh[i];
	return NULL;
}

uint8_t *symtab_elf_code(const char *path, uint64_t a, uint64_t b)
{
	struct elf_file e;
	if (b <= a || b - a > (64u << 20) || elf_open(&e, path))
		return NULL;
	uint8_t *buf = NULL;
	for (size_t i = 0; i < e.phnum; i++) {
		const Elf64_Phdr *p = &e.ph[i];
		if (p->p_type != PT_LOAD || a < p->p_vaddr || b > p->p_vaddr + p->p_filesz ||
		    !in_file(&e, p->p_offset + (a - p->p_vaddr), b - a))
			continue;
		if ((buf = malloc(b - a)))
			memcpy(buf, e.p + p->p_offset + (a - p->p_vaddr), b - a);
		break;
	}
	elf_close(&e);
	return buf;
}

int symtab_elf_bias(const char *path, uint64_t map_start, uint64_t map_offset, uint64_t *bias)
{
	struct elf_file e;
	if (elf_open(&e, path))
		return -1;
	int rc = -1;
	for (size_t i = 0; i < e.phnum; i++) {
		const Elf64_Phdr *p = &e.ph[i];
		if (p->p_type != PT_LOAD)
			continue;
		uint64_t align = p->p_align > 1 ? p->p_align : 4096;
		if (align & (align - 1))
			align = 4096;
		uint64_t aoff = p->p_offset & ~(align - 1);
		if (map_offset >= aoff && map_offset < p->p_offset + p->p_filesz + align) {
			*bias = map_start - map_offset - p->p_vaddr + p->p_offset;
			rc = 0;
			break;
		}
	}
	if (rc && e.eh->e_type == ET_EXEC) {
		*bias = 0;
		rc = 0;
	}
	elf_close(&e);
	return rc;
}

#ifdef HAVE_LZMA
/* The ELF image xz-compressed in e's .gnu_debugdata section (MiniDebugInfo,
 * as Fedora ships: a .symtab of the functions .dynsym lacks) into out.
 * 0, or -1 when there is none or it does not decompress to an ELF file. */
static int minidebug_open(const struct elf_file *e, struct elf_file *out)
{
	const Elf64_Shdr *s = find_section(e, ".gnu_debugdata");
	memset(out, 0, sizeof *out);
	if (!s || s->sh_type == SHT_NOBITS || !in_file(e, s->sh_offset, s->sh_size))
		return -1;
	lzma_stream z = LZMA_STREAM_INIT;
	if (lzma_stream_decoder(&z, 256u << 20, 0) != LZMA_OK)
		return -1;
	size_t cap = 4 * s->sh_size + 4096, max = 512u << 20;
	uint8_t *buf = malloc(cap);
	z.next_in = e->p + s->sh_offset;
	z.avail_in = s->sh_size;
	lzma_ret r = LZMA_OK;
	while (buf && r == LZMA_OK) {
		if (z.total_out == cap) {
			uint8_t *q = cap < max ? realloc(buf, cap * 2) : NULL;
			if (!q) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = q;
			cap *= 2;
		}
		z.next_out = buf + z.total_out;
		z.avail_out = cap - z.total_out;
		r = lzma_code(&z, LZMA_FINISH);
	}
	size_t n = z.total_out;
	lzma_end(&z);
	if (!buf || r != LZMA_STREAM_END || n < sizeof(Elf64_Ehdr)) {
		free(buf);
		return -1;
	}
	out->p = buf;
	out->size = n;
	out->heap = true;
	return elf_headers(out) ? -1 : 0;
}
#endif

/* Functions and objects from one symbol table section. */
static int load_syms(struct st_module *m, const struct elf_file *e, const Elf64_Shdr *s)
{
	if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= e->shnum ||
	    !in_file(e, s->sh_offset, s->sh_size))
		return -1;
	const Elf64_Shdr *strs = &e->sh[s->sh_link];
	if (!in_file(e, strs->sh_offset, strs->sh_size) || !strs->sh_size)
		return -1;
	const char *str = (const char *)e->p + strs->sh_offset;
	size_t n = s->sh_size / sizeof(Elf64_Sym);
	const Elf64_Sym *sym = (const Elf64_Sym *)(e->p + s->sh_offset);
	for (size_t i = 0; i < n; i++) {
		Elf64_Sym y;
		memcpy(&y, &sym[i], sizeof y);
		int type = ELF64_ST_TYPE(y.st_info);
		if (y.st_shndx == SHN_UNDEF || !y.st_value || y.st_name >= strs->sh_size)
			continue;
		const char *name = str + y.st_name;
		if (!memchr(name, 0, strs->sh_size - y.st_name) || !*name)
			continue;
		int rc = 0;
		if (type == STT_FUNC || type == STT_GNU_IFUNC)
			rc = st_add_func(m, y.st_value, y.st_size, name);
		else if (type == STT_OBJECT && y.st_size)
			rc = st_add_var(m, y.st_value, y.st_size, name, ST_NONE);
		if (rc)
			return -1;
	}
	return 0;
}

static bool has_debug_info(const struct elf_file *e)
{
	const Elf64_Shdr *s = find_section(e, ".debug_info");
	return s && s->sh_type != SHT_NOBITS && s->sh_size;
}

static void add_note(char *note, size_t cap, const char *what)
{
	if (!note || !cap)
		return;
	size_t l = strlen(note);
	snprintf(note + l, cap - l, "%s%s", l ? "; " : "", what);
}

/* A stripped file's MiniDebugInfo: its .symtab (the functions .dynsym
 * lacks) and the .dynsym dy (may be NULL) into m.  false when it has none
 * (or commtrace was built without liblzma). */
static bool minidebug_syms(struct st_module *m, const struct elf_file *e, const Elf64_Shdr *dy)
{
#ifdef HAVE_LZMA
	struct elf_file mi;
	if (minidebug_open(e, &mi))
		return false;
	const Elf64_Shdr *sy = NULL;
	for (size_t i = 0; i < mi.shnum; i++)
		if (mi.sh[i].sh_type == SHT_SYMTAB)
			sy = &mi.sh[i];
	bool ok = sy && load_syms(m, &mi, sy) == 0 && (!dy || load_syms(m, e, dy) == 0);
	elf_close(&mi);
	return ok;
#else
	(void)m, (void)e, (void)dy;
	return false;
#endif
}

/* Whether a recording's addresses (code or data) fall in [lo, hi); true
 * when no recorded data set is given (everything is wanted). */
static bool recorded_in(const struct st_addrs *ips, uint64_t lo, uint64_t hi)
{
	if (!ips || !ips->data)
		return true;
	return (ips->v && symtab_addrs_in(ips, lo, hi)) ||
	       (ips->data->v && symtab_addrs_in(ips->data, lo, hi));
}

struct st_module *symtab_add_elf(struct symtab *s, const char *path, uint64_t lo,
                                 uint64_t hi, uint64_t bias, const struct st_addrs *ips,
                                 char *note, size_t notecap)
{
	if (note && notecap)
		note[0] = 0;
	struct st_module *m = symtab_add_module(s, path);
	if (!m)
		return NULL;
	m->lo = lo;
	m->hi = hi;
	m->bias = bias;
	struct elf_file e;
	int rc = elf_open(&e, path);
	if (rc) {
		m->flags |= ST_MOD_MISSING;
		add_note(note, notecap, rc == -1 ? "cannot open the file" : "not a 64-bit little-endian ELF file");
		return m;
	}
	/* the module's range covers its whole image (.bss past the file mapping) */
	for (size_t i = 0; i < e.phnum; i++)
		if (e.ph[i].p_type == PT_LOAD && e.ph[i].p_vaddr + e.ph[i].p_memsz + bias > m->hi &&
		    e.ph[i].p_vaddr + e.ph[i].p_memsz - e.ph[i].p_vaddr < (1ull << 40))
			m->hi = e.ph[i].p_vaddr + e.ph[i].p_memsz + bias;
	int bl = buildid_read(path, m->buildid);
	m->buildid_len = bl > 0 ? (uint8_t)bl : 0;
	if (!recorded_in(ips, m->lo, m->hi)) {
		m->flags |= ST_MOD_NOT_READ;
		elf_close(&e);
		return m;
	}
	const Elf64_Shdr *sy = NULL, *dy = NULL;
	for (size_t i = 0; i < e.shnum; i++) {
		if (e.sh[i].sh_type == SHT_SYMTAB)
			sy = &e.sh[i];
		else if (e.sh[i].sh_type == SHT_DYNSYM)
			dy = &e.sh[i];
	}
	/* A separate debug file (/usr/lib/debug/.build-id/xx/yyyy.debug) has the
	 * full symbol table and the DWARF of a stripped file. */
	char dbgpath[512] = "";
	struct elf_file d = { 0 };
	bool have_d = false;
	if ((!sy || !has_debug_info(&e)) && m->buildid_len > 1) {
		char hex[2 * BUILDID_MAX + 1];
		buildid_hex(m->buildid, m->buildid_len, hex);
		snprintf(dbgpath, sizeof dbgpath, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
		have_d = elf_open(&d, dbgpath) == 0;
	}
	const Elf64_Shdr *dsy = NULL;
	if (have_d)
		for (size_t i = 0; i < d.shnum; i++)
			if (d.sh[i].sh_type == SHT_SYMTAB)
				dsy = &d.sh[i];
	if (sy && load_syms(m, &e, sy) == 0)
		m->flags |= ST_MOD_ELF_SYMS;
	else if (dsy && load_syms(m, &d, dsy) == 0)
		m->flags |= ST_MOD_ELF_SYMS;
	else if (minidebug_syms(m, &e, dy)) {
		m->flags |= ST_MOD_ELF_SYMS;
		add_note(note, notecap, "stripped, function symbols from .gnu_debugdata");
	} else if (dy && load_syms(m, &e, dy) == 0) {
		m->flags |= ST_MOD_DYNSYM;
		add_note(note, notecap, "stripped (dynamic symbols only)");
	} else {
		add_note(note, notecap, "no symbol table");
	}
	const char *dwarf_path = has_debug_info(&e) ? path
	                       : have_d && has_debug_info(&d) ? dbgpath : NULL;
	elf_close(&e);
	if (have_d)
		elf_close(&d);
	if (!dwarf_path) {
		add_note(note, notecap, "no DWARF (no variables, types or line numbers)");
	} else {
#ifdef HAVE_LIBDWARF
		char dn[200] = "";
		if (symtab_dwarf_load(m, dwarf_path, ips, dn, sizeof dn) == 0)
			m->flags |= ST_MOD_DWARF | (ips && ips->v ? ST_MOD_LINES_SUBSET : 0);
		else
			add_note(note, notecap, dn[0] ? dn : "DWARF unreadable");
#else
		(void)ips;
		add_note(note, notecap, "built without libdwarf (no variables, types or line numbers)");
#endif
	}
	symtab_finish(&(struct symtab){ .mods = &m, .n = 1, .cap = 1 });
	return m;
}

/* ---- memory maps ------------------------------------------------------------ */

/* The distinct files with an executable mapping: their lowest mapping
 * gives the bias, all their mappings the range. */
struct maps_file { struct st_mapping first; uint64_t lo, hi; bool exec; };
struct maps_files { struct maps_file *v; size_t n, cap; };

static int gather_file(void *arg, const struct st_mapping *mp)
{
	struct maps_files *f = arg;
	if (!symtab_mapping_is_file(mp))
		return 0;
	size_t i;
	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].first.path, mp->path))
			break;
	if (i == f->n) {
		if (f->n == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 32;
			struct maps_file *q = realloc(f->v, cap * sizeof *q);
			if (!q)
				return -1;
			f->v = q;
			f->cap = cap;
		}
		f->v[f->n++] = (struct maps_file){ *mp, mp->start, mp->end, mp->exec };
		return 0;
	}
	if (mp->start < f->v[i].lo) {
		f->v[i].lo = mp->start;
		f->v[i].first = *mp;
	}
	if (mp->end > f->v[i].hi)
		f->v[i].hi = mp->end;
	f->v[i].exec |= mp->exec;
	return 0;
}

int symtab_from_maps(struct symtab *s, const char *text, size_t len, const struct st_addrs *ips,
                     void (*note)(void *arg, const char *path, const char *what), void *arg)
{
	struct maps_files files = { 0 };
	if (symtab_each_mapping(text, len, gather_file, &files)) {
		free(files.v);
		return -1;
	}
	struct maps_file *v = files.v;
	size_t nv = files.n;
	int rc = 0;
	for (size_t i = 0; i < nv; i++) {
		if (!v[i].exec)
			continue;
		const struct st_mapping *f = &v[i].first;
		uint64_t bias = 0;
		char why[256] = "";
		if (symtab_elf_bias(f->path, f->start, f->offset, &bias))
			bias = f->start - f->offset;
		struct st_module *m = symtab_add_elf(s, f->path, v[i].lo, v[i].hi, bias, ips, why,
		                                     sizeof why);
		if (!m) {
			rc = -1;
			break;
		}
		/* a file that changed since the recording is not the one that ran */
		if (!(m->flags & ST_MOD_MISSING) && f->buildid[0] && strcmp(f->buildid, "-")) {
			char hex[2 * BUILDID_MAX + 1];
			buildid_hex(m->buildid, m->buildid_len, hex);
			if (strcmp(hex, f->buildid)) {
				snprintf(why, sizeof why, "build-id differs from the recorded one: symbols ignored");
				symtab_clear_module(m);
				m->flags |= ST_MOD_MISSING;
			}
		}
		if (why[0] && note)
			note(arg, f->path, why);
	}
	free(v);
	symtab_finish(s);
	return rc;
}
