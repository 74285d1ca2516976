/* Portable traces: after the program ended and before the join, the
 * launcher builds the symbol tables the analysis needs (functions, line
 * tables for the instruction addresses seen, static objects with their type
 * layouts, build-ids) and the join writes them as a CT_SEC_SYMBOLS section
 * (formats/symtab.h, formats/FORMAT.md SYMBOLS). */
#ifndef COMMREC_SYMBOLS_H
#define COMMREC_SYMBOLS_H

#include <stddef.h>

/* Reads SPOOL/maps-*.txt and the instruction addresses of the spool's
 * records (samples, watchpoint hits, allocation call sites), loads the ELF
 * and DWARF of every file with an executable mapping, and serializes the
 * tables into *payload (malloc'ed; the caller frees it) of *len bytes.
 * note (may be NULL) is told, per file, what could not be found ("stripped",
 * "no DWARF", "cannot open").  Returns 0, or -1 with err filled (no maps
 * file, unreadable spool, out of memory); the recording is still usable
 * without the section. */
int embed_symbols(const char *spool_dir, void **payload, size_t *len,
                  void (*note)(void *arg, const char *path, const char *what),
                  void *arg, char *err, size_t cap);

#endif
