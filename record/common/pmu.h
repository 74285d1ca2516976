/* Hardware samplers' shared pieces: probing which samplers work here (for
 * commrec --list-samplers and --sampler auto) and building perf_event_attr
 * for the PMU samplers (pebs with libpfm4, ibs from sysfs). */
#ifndef CT_PMU_H
#define CT_PMU_H

#include <stdbool.h>
#include <stddef.h>

/* Can sampler `name` ("pebs", "ibs", "soft", "inst") record on this machine?
 * Returns true, or false with a one-line reason and what to do about it in
 * why (for example "no CPU PMU exposed by this kernel (a VM?): use
 * --sampler soft").  Never prints. */
bool pmu_probe_sampler(const char *name, char *why, size_t cap);

#endif
