/* commrec.h: markers for programs recorded with commrec(1).
 *
 *   commrec_region_begin("solve");   a named code region on this thread
 *   ...                              (nestable: every begin has its end)
 *   commrec_region_end();
 *   commrec_phase("output");         a program-wide phase from here on
 *
 * Nothing to link.  Under commrec, the preloaded runtime (libcommrec.so, or
 * libcommrec-inst for programs built with commrec-cc) defines
 * commrec_marker() and each call writes one MARKER record into the calling
 * thread's trace: no lock, no allocation, safe in signal handlers.  Without
 * commrec the symbol is undefined (weak) and every call is a test and a
 * branch.  Names longer than 63 bytes are cut.  `commanalyze regions` and
 * `commanalyze timeline` show the communication per region and per phase.
 *
 * Include it from C or C++. */
#ifndef COMMREC_MARKERS_H
#define COMMREC_MARKERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds are those of the trace format's MARKER record. */
enum { COMMREC_REGION_BEGIN = 0, COMMREC_REGION_END = 1, COMMREC_PHASE = 2 };

/* Defined by the commrec runtime only; do not call it directly. */
extern void commrec_marker(int kind, const char *name) __attribute__((weak));

static inline void commrec_region_begin(const char *name)
{
	if (commrec_marker)
		commrec_marker(COMMREC_REGION_BEGIN, name);
}

static inline void commrec_region_end(void)
{
	if (commrec_marker)
		commrec_marker(COMMREC_REGION_END, "");
}

static inline void commrec_phase(const char *name)
{
	if (commrec_marker)
		commrec_marker(COMMREC_PHASE, name);
}

#ifdef __cplusplus
}
#endif

#endif
