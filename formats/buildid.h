/* A small ELF reader for what commtrace needs to know about files: the GNU
 * build-id note (NT_GNU_BUILD_ID) of a mapped file (the launcher records
 * it, the symbol loader compares it with the file it finds: one reader, so
 * that both read the same id), and whether a program is dynamically linked
 * (has PT_INTERP), so that commrec can explain why the preloaded runtime did
 * not load.
 *
 * Plain pread()s, no libelf; ELF32 and ELF64, either byte order.  Never
 * prints, never trusts the file: every offset and size is checked. */
#ifndef CT_BUILDID_H
#define CT_BUILDID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUILDID_MAX 64           /* bytes; GNU ld writes 20 (sha1) or 16 (md5) */

/* Build-id of the ELF file at path: its length in bytes (1..BUILDID_MAX) with
 * the bytes in id, 0 if the file is ELF but has no build-id note, -1 if the
 * file cannot be opened or is not ELF. */
int buildid_read(const char *path, uint8_t id[BUILDID_MAX]);

/* Lower-case hex of id[0..len) into out (at least 2*len+1 bytes). */
void buildid_hex(const uint8_t *id, int len, char *out);

struct elf_kind {
	bool is_elf;
	bool has_interp;         /* dynamically linked program (PT_INTERP) */
	bool is_dyn;             /* ET_DYN (PIE or shared object) */
	int elf_class;           /* 32 or 64 */
	int machine;             /* e_machine */
};
/* 0 with k filled (k->is_elf false for non-ELF files, e.g. scripts), -1 if
 * the file cannot be opened. */
int elf_kind_read(const char *path, struct elf_kind *k);

#endif
