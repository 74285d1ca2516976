/* Dataflow between functions (Sigil's producer/consumer view): which
 * function's writes are read by which function.
 *
 *   event consumer    every communication event of the model: the function
 *                     of the publishing (src) access produced, the function
 *                     of the detecting (dst) access consumed, weighted like
 *                     the matrices (estimated line transfers; true/false).
 *   record consumer   full traces only (inst --full): every byte read is
 *                     credited to the function and thread that last wrote
 *                     it: total bytes, unique bytes (the first read of a
 *                     byte by a function since the byte was written; a read
 *                     by another function in between makes the next one
 *                     unique again), local (producer = consumer) versus
 *                     cross-function, cross-thread versus same-thread; and
 *                     per producing function the reuse of its bytes: how
 *                     many times a written byte is read before it is
 *                     overwritten (or the trace ends), and how long it
 *                     lives (write to last read); the same reuse per
 *                     object (the attribution's object of the access when
 *                     it writes the byte).  Shadow memory: 40 bytes per
 *                     byte touched.
 * Functions are named through the attribution's symbols (demangled unless
 * --no-demangle); code without a symbol is "module+0xoffset" or the
 * address.  Put the record consumer after the attribution's. */
#ifndef CT_FUNCTIONS_H
#define CT_FUNCTIONS_H

#include "attrib.h"

struct fnflow;
/* full: the trace records every access (byte flows and reuse). */
struct fnflow *fnflow_create(struct attrib *a, struct ct_trace *t, bool full);
void fnflow_free(struct fnflow *f);
struct record_consumer fnflow_record_consumer(struct fnflow *f);
struct event_consumer fnflow_event_consumer(struct fnflow *f);

/* The flows, producer -> consumer, heaviest first (by bytes on a full
 * trace, else by weight; --kind true|false: by those events' weight, edges
 * without them left out); top 0: all; by_threads: one row per thread pair,
 * else merged; by_object (full traces): the text's second table and the CSV
 * are the reuse of each object's bytes (the objects touching most bytes
 * first, top of them) instead of the functions'; the JSON always has both.  Formats: text, csv, json, dot (Graphviz: nodes are
 * functions sized by the data they produce and consume, edges labelled).
 * 0, or -1 on a write error. */
int fnflow_write(struct fnflow *f, FILE *out, enum attrib_format fmt, size_t top,
                 enum mx_kind kind, bool by_threads, bool by_object);

int cmd_functions(int argc, char **argv);

#endif
