/* Hardware samplers' shared pieces: probing which samplers work here (for
 * commrec --list-samplers and --sampler auto) and building perf_event_attr
 * for the PMU samplers (pebs with libpfm4, ibs from sysfs).
 *
 * Two files: pmu_pfm.c holds what needs libpfm4 (the PEBS event encoding,
 * pmu_pebs_attrs*) and the sampler probes (the pebs probe encodes); only the
 * launcher and the unit tests link it.  pmu.c holds the rest, which the
 * preloaded runtime links without libpfm4: the launcher passes the encoded
 * PEBS attrs in COMMTRACE_PMU_ATTRS (pmu_pebs_attrs_format ->
 * pmu_pebs_attrs_parse). */
#ifndef CT_PMU_H
#define CT_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct perf_event_attr;

/* Can sampler `name` ("pebs", "ibs", "soft", "inst") record on this machine?
 * Returns true, or false with a one-line reason and what to do about it in
 * why (for example "no CPU PMU exposed by this kernel (a VM?): use
 * --sampler soft").  Never prints. */
bool pmu_probe_sampler(const char *name, char *why, size_t cap);

/* ---- added: attribute builders for the PMU samplers ------------------------
 * Every builder fills complete attrs (size set, disabled = 1: enable with
 * PERF_EVENT_IOC_ENABLE once the ring is mapped; sample_id_all = 1;
 * use_clockid with CLOCK_MONOTONIC so times match ct_record.time;
 * exclude_kernel and exclude_hv).  Derive the ring parser's format with
 * perf_sample_fmt_from_attr() (perf_ring.h).  Not async-signal-safe. */

/* Access kind of each pebs event (kinds[] of pmu_pebs_attrs_kinds). */
#define PMU_KIND_LOAD 0     /* == CT_ACCESS_LOAD */
#define PMU_KIND_STORE 1    /* == CT_ACCESS_STORE */
#define PMU_KIND_UNKNOWN 0xff /* expert event: use data_src.mem_op */

/* PEBS events (libpfm4) for Intel precise memory sampling.
 *
 * spec NULL or "": the loads and stores events of every Intel core PMU
 * libpfm4 finds active here (MEM_INST_RETIRED:ALL_LOADS / ALL_STORES; on
 * Haswell, Broadwell and Goldmont MEM_UOPS_RETIRED:ALL_LOADS / ALL_STORES; on
 * Sandy and Ivy Bridge, whose PEBS has no data address for those, the load
 * latency event with ldlat=3 and MEM_TRANS_RETIRED:PRECISE_STORE), each with
 * sample_period = period (commrec(1), "pebs events", has the table).
 * spec otherwise: a comma-separated list of libpfm4 event strings, each with
 * an optional "@period" (as hpcrun: "MEM_INST_RETIRED:ALL_LOADS@100000");
 * events without "@" use period.
 *
 * Each attr (pmu_pebs_attr_init): type/config/config1/config2 from libpfm4
 * (its other fields are not used: flags like :u/:k are fixed), sample_type
 * IDENTIFIER|IP|TID|TIME|ADDR|CPU|PERIOD|DATA_SRC plus WEIGHT_STRUCT when the
 * kernel knows it, else WEIGHT (pmu_weight_sample_type()); IDENTIFIER lets
 * the loads and stores events share one ring (PERF_EVENT_IOC_SET_OUTPUT,
 * told apart by PERF_EVENT_IOC_ID).  precise_ip is 3 unless the event string
 * gave ":precise=N": open with pmu_open_precise(), which steps it down to
 * what the PMU accepts.
 *
 * Returns the number of attrs written (1..max), or -1 with why filled (no
 * libpfm4, unknown event, no Intel PMU with these events, too many events,
 * bad @period). */
int pmu_pebs_attrs(const char *spec, uint64_t period, struct perf_event_attr *out,
                   size_t max, char *why, size_t cap);
/* The same, also giving each event's access kind (PMU_KIND_*) in kinds[]. */
int pmu_pebs_attrs_kinds(const char *spec, uint64_t period, struct perf_event_attr *out,
                         uint8_t *kinds, size_t max, char *why, size_t cap);

/* The complete PEBS attr for one encoded event: what pmu_pebs_attrs builds
 * around libpfm4's type/config/config1/config2 (the sample_type, flags and
 * clock above), with sample_period = period and precise_ip = precise (3 if
 * 0).  Both sides of COMMTRACE_PMU_ATTRS build their attrs with it. */
void pmu_pebs_attr_init(struct perf_event_attr *a, uint32_t type, uint64_t config,
                        uint64_t config1, uint64_t config2, uint64_t period, unsigned precise);

/* COMMTRACE_PMU_ATTRS (rtconfig.h): n attrs from pmu_pebs_attrs_kinds as a
 * comma list of kind:type:config:config1:config2:period:precise items, kind
 * load|store|any (PMU_KIND_*), type, period and precise (the highest
 * precise_ip to try) in decimal, the configs in hex, e.g.
 *     load:4:0x81d0:0:0:500000:3,store:4:0x82d0:0:0:500000:3
 * Writes the string into out; returns its length, or -1 if cap is too small
 * (PMU_ATTRS_ITEM_MAX bytes per event always suffice). */
#define PMU_ATTRS_ITEM_MAX 112
int pmu_pebs_attrs_format(const struct perf_event_attr *a, const uint8_t *kinds, size_t n,
                          char *out, size_t cap);
/* The runtime's side: the attrs (pmu_pebs_attr_init) and kinds of such a
 * string; precise may be left out (then 3).  Returns the number of attrs
 * (1..max), or -1 with why filled.  Not async-signal-safe (it may probe
 * pmu_weight_sample_type). */
int pmu_pebs_attrs_parse(const char *s, struct perf_event_attr *out, uint8_t *kinds,
                         size_t max, char *why, size_t cap);

/* PERF_SAMPLE_WEIGHT_STRUCT if this kernel accepts it (5.12+), else
 * PERF_SAMPLE_WEIGHT.  Probed once with a software dummy event. */
uint64_t pmu_weight_sample_type(void);

/* perf_event_open(a, tid, cpu, group_fd, flags), retrying with a lower
 * precise_ip (down to 1) while the kernel refuses the precision (EINVAL,
 * EOPNOTSUPP).  On success a->precise_ip is the level that opened.  Returns
 * the fd, or -1 with errno from the last attempt. */
int pmu_open_precise(struct perf_event_attr *a, pid_t tid, int cpu, int group_fd,
                     unsigned long flags);

/* AMD IBS op sampling (the ibs_op PMU; decode samples with ibs_decode_raw()).
 * type from /sys/bus/event_source/devices/ibs_op/type; config: IbsOpCntCtl
 * (bit 19, counting dispatched ops) when the PMU offers cnt_ctl, else cycles
 * (why says so); sample_period = period_ops rounded down to a multiple of 16
 * (the kernel refuses the low 4 bits; minimum 16); sample_type
 * IP|TID|TIME|CPU|RAW|PERIOD; exclude_kernel with the kernel's software
 * filter (config2 bit 0, "swfilt") when the PMU offers it.  Returns 0, or -1
 * with why filled (no IBS PMU).  why may also hold a note on success. */
int pmu_ibs_attr(uint64_t period_ops, struct perf_event_attr *out, char *why, size_t cap);

/* Open an IBS attr from pmu_ibs_attr(): kernels before the software filter
 * refuse exclude_kernel on IBS (EINVAL); then retry without it (needs
 * perf_event_paranoid <= 1 or CAP_PERFMON; kernel samples must then be
 * dropped, which ibs_decode_raw flags as CT_SKIP_KERNEL).  fd or -1/errno. */
int pmu_open_ibs(struct perf_event_attr *a, pid_t tid, int cpu, int group_fd,
                 unsigned long flags);

/* Tests only: read sysfs PMU files under root instead of "/" (NULL resets). */
void pmu_set_sysfs_root(const char *root);

/* Internal: pmu.c's helpers that pmu_pfm.c shares. */
void pmu_say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool pmu_sysfs_exists(const char *rel);      /* under the sysfs root above */
bool pmu_read_line(const char *path, char *out, size_t cap);
int pmu_sys_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group,
                            unsigned long flags);

#endif
