/* PMU samples (pebs, ibs) into commtrace samples.  See pmu_sample.h and
 * commrec(1), "Hardware samplers (pebs, ibs)". */
#include "pmu_sample.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "ibs.h"
#include "pmu.h"

#define PAGE 4096u
#define INSN_MAX 15u                       /* longest x86 instruction */
#define KERNEL_HALF 0xffff800000000000ull   /* x86-64 canonical kernel half */
#define USER_TOP 0x0000800000000000ull

/* ---- converter set-up ------------------------------------------------------ */

void pmu_conv_init(struct pmu_conv *c, int mode)
{
	memset(c, 0, sizeof *c);
	c->mode = mode;
}

int pmu_conv_add_event(struct pmu_conv *c, uint64_t id, uint8_t kind, uint64_t period)
{
	if (c->nev >= PMU_CONV_MAX_EVENTS)
		return -1;
	c->ids[c->nev] = id;
	c->kinds[c->nev] = kind;
	c->periods[c->nev] = period;
	c->nev++;
	return 0;
}

static int find_event(const struct pmu_conv *c, uint64_t id)
{
	for (size_t i = 0; i < c->nev; i++)
		if (c->ids[i] == id)
			return (int)i;
	return -1;
}

/* ---- reading our own code ------------------------------------------------------ */

size_t pmu_read_self(void *dst, uint64_t addr, size_t n)
{
	int saved = errno;
	size_t done = 0;
	pid_t self = getpid();   /* no cache: right after fork too */
	while (done < n) {
		uint64_t a = addr + done;
		size_t chunk = (size_t)(PAGE - (a & (PAGE - 1)));
		if (chunk > n - done)
			chunk = n - done;
		struct iovec loc = { (uint8_t *)dst + done, chunk };
		struct iovec rem = { (void *)(uintptr_t)a, chunk };
		if (process_vm_readv(self, &loc, 1, &rem, 1, 0) != (ssize_t)chunk)
			break;
		done += chunk;
	}
	errno = saved;
	return done;
}

/* ---- decoding ------------------------------------------------------------------ */

static bool kind_fits(uint8_t want, uint8_t got)
{
	if (want == PMU_KIND_LOAD)
		return got == CT_ACCESS_LOAD || got == CT_ACCESS_ATOMIC;
	if (want == PMU_KIND_STORE)
		return got == CT_ACCESS_STORE || got == CT_ACCESS_ATOMIC;
	return true;
}

int pmu_decode_at(uint64_t ip, bool exact, uint8_t want_kind, struct dec_access *a, int *prev)
{
	struct dec_regs regs;
	memset(&regs, 0, sizeof regs);
	memset(a, 0, sizeof *a);
	if (prev)
		*prev = 0;
	if (ip >= USER_TOP)
		return CT_SKIP_KERNEL;
	if (ip < PAGE)
		return CT_SKIP_UNREADABLE_IP;

	if (exact) {
		uint8_t b[INSN_MAX];
		size_t n = pmu_read_self(b, ip, sizeof b);
		if (!n)
			return CT_SKIP_UNREADABLE_IP;
		int rc = dec_access_at(b, n, ip, &regs, a, NULL);
		a->addr = 0;           /* computed from zero registers: meaningless */
		a->flags &= CT_SAMPLE_FS_BASED;
		return rc;
	}

	/* ip is the instruction after the access (skid of one): find the
	 * instructions that end exactly at ip.  The bytes nearest ip first
	 * (same page as ip - 1), then the rest if that page is readable too. */
	uint8_t b[INSN_MAX];
	uint64_t lo = ip - INSN_MAX;
	uint64_t pg = (ip - 1) & ~(uint64_t)(PAGE - 1);
	uint64_t near = lo > pg ? lo : pg;
	if (pmu_read_self(b + (near - lo), near, (size_t)(ip - near)) != (size_t)(ip - near))
		return CT_SKIP_UNREADABLE_IP;
	size_t from = (size_t)(near - lo);     /* first valid byte of b */
	if (near > lo && pmu_read_self(b, lo, (size_t)(near - lo)) == (size_t)(near - lo))
		from = 0;

	int best_rc = CT_SKIP_DECODE_FAILED;
	struct dec_access best;
	int best_k = 0, best_fit = 0;
	for (size_t k = 1; k <= INSN_MAX - from; k++) {
		struct dec_access d;
		size_t len = 0;
		int rc = dec_access_at(b + (INSN_MAX - k), k, ip - k, &regs, &d, &len);
		if (len != k)
			continue;          /* does not end exactly at ip */
		if (rc) {
			if (!best_k)
				best_rc = rc;  /* remember why, when nothing better turns up */
			continue;
		}
		/* prefer the event's kind, then the longest candidate: a
		 * shorter one is usually the tail of the real instruction */
		int fit = kind_fits(want_kind, d.kind) ? 1 : 0;
		if (!best_k || fit > best_fit || (fit == best_fit && (int)k > best_k)) {
			best = d;
			best_k = (int)k;
			best_fit = fit;
		}
	}
	if (!best_k)
		return best_rc;
	*a = best;
	a->addr = 0;
	a->flags &= CT_SAMPLE_FS_BASED;
	if (prev)
		*prev = 1;
	return 0;
}

/* ---- samples ------------------------------------------------------------------- */

static void common_fields(const struct perf_rec *r, struct pmu_sample *out)
{
	memset(out, 0, sizeof *out);
	out->time = r->time;
	out->ip = r->ip;
	out->cpu = r->cpu;
	if (r->data_src) {
		out->data_src = r->data_src;
		out->extra_flags |= CT_SAMPLE_HAS_DATA_SRC;
	}
	if (r->weight) {
		out->weight = r->weight > UINT32_MAX ? UINT32_MAX : (uint32_t)r->weight;
		out->extra_flags |= CT_SAMPLE_HAS_WEIGHT;
	}
}

static bool kernel_sample(const struct perf_rec *r)
{
	uint16_t mode = r->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	return r->ip >= USER_TOP || mode == PERF_RECORD_MISC_KERNEL ||
	       mode == PERF_RECORD_MISC_GUEST_KERNEL;
}

/* mem_op of a perf data_src (bits 0-4): PMU_KIND_* */
static uint8_t kind_from_data_src(uint64_t ds)
{
	unsigned op = (unsigned)(ds & 0x1f);
	bool ld = op & PERF_MEM_OP_LOAD, st = op & PERF_MEM_OP_STORE;
	if (ld && !st)
		return PMU_KIND_LOAD;
	if (st && !ld)
		return PMU_KIND_STORE;
	return PMU_KIND_UNKNOWN;
}

int pmu_pebs_sample(struct pmu_conv *c, const struct perf_rec *r, struct pmu_sample *out)
{
	common_fields(r, out);
	int ev = find_event(c, r->id);
	if (ev < 0 && c->nev)
		c->st.unknown_id++;
	uint8_t kind = ev >= 0 ? c->kinds[ev] : PMU_KIND_UNKNOWN;
	if (kind == PMU_KIND_UNKNOWN)
		kind = kind_from_data_src(r->data_src);
	out->period = r->period ? r->period : ev >= 0 ? c->periods[ev] : 0;

	if (kernel_sample(r))
		return out->skip = CT_SKIP_KERNEL;
	if (r->addr == 0) {
		/* PEBS could not capture the address (or the event has none) */
		c->st.zero_addr++;
		return out->skip = CT_SKIP_NOT_LOAD_STORE;
	}
	if (r->addr >= USER_TOP)
		return out->skip = CT_SKIP_KERNEL;

	bool exact = (r->misc & PERF_RECORD_MISC_EXACT_IP) != 0;
	if (!exact)
		c->st.not_exact_ip++;
	struct dec_access d;
	int prev = 0;
	int rc = pmu_decode_at(r->ip, exact, kind, &d, &prev);
	out->acc.addr = r->addr;
	out->acc.flags = CT_SAMPLE_EXACT;
	if (rc == 0) {
		out->acc.len = d.len;
		out->acc.flags |= d.flags & CT_SAMPLE_FS_BASED;
		if (prev)
			out->acc.flags |= CT_SAMPLE_PREV_INSN;
		if (kind == PMU_KIND_UNKNOWN || d.kind == CT_ACCESS_ATOMIC) {
			out->acc.kind = d.kind;        /* a locked RMW counts in both events */
		} else {
			out->acc.kind = kind == PMU_KIND_STORE ? CT_ACCESS_STORE : CT_ACCESS_LOAD;
			/* a store event on an instruction that only reads: the
			 * decoder and the PMU disagree (the PMU wins); a load
			 * event on a writing instruction is an ordinary RMW */
			if (kind == PMU_KIND_STORE && d.kind == CT_ACCESS_LOAD)
				c->st.kind_mismatch++;
		}
	} else {
		if (kind == PMU_KIND_UNKNOWN)
			return out->skip = rc;         /* neither the event nor the decoder says */
		c->st.len_unknown++;
		out->acc.len = 0;                  /* unknown: the runtime records 1 */
		out->acc.kind = kind == PMU_KIND_STORE ? CT_ACCESS_STORE : CT_ACCESS_LOAD;
	}
	return 0;
}

int pmu_ibs_sample(struct pmu_conv *c, const struct perf_rec *r, struct pmu_sample *out)
{
	common_fields(r, out);
	int ev = find_event(c, r->id);
	out->period = r->period ? r->period : ev >= 0 ? c->periods[ev] : c->nev ? c->periods[0] : 0;

	struct ibs_op_sample o;
	int rc = ibs_decode_raw(r->raw, r->raw_size, &o);
	if (rc < 0)
		return out->skip = CT_SKIP_DECODE_FAILED;
	bool exact = (r->misc & PERF_RECORD_MISC_EXACT_IP) != 0;
	if (o.ip_valid && o.ip) {
		out->ip = o.ip;
		exact = true;
	}
	if (rc == 0)
		return out->skip = o.skip_reason ? o.skip_reason : CT_SKIP_NOT_LOAD_STORE;
	if (out->ip >= USER_TOP || (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
		return out->skip = CT_SKIP_KERNEL;

	uint8_t kind = o.locked ? CT_ACCESS_ATOMIC : o.store ? CT_ACCESS_STORE : CT_ACCESS_LOAD;
	out->acc.addr = o.addr;
	out->acc.kind = kind;
	out->acc.flags = CT_SAMPLE_EXACT;
	if (!exact)
		c->st.not_exact_ip++;
	if (o.width) {
		out->acc.len = o.width;
	} else {
		struct dec_access d;
		int prev = 0;
		uint8_t want = o.store ? PMU_KIND_STORE : PMU_KIND_LOAD;
		if (pmu_decode_at(out->ip, exact, want, &d, &prev) == 0) {
			out->acc.len = d.len;
			out->acc.flags |= d.flags & CT_SAMPLE_FS_BASED;
			if (prev)
				out->acc.flags |= CT_SAMPLE_PREV_INSN;
			if ((o.store && d.kind == CT_ACCESS_LOAD) || (!o.store && d.kind != CT_ACCESS_LOAD))
				c->st.kind_mismatch++;
		} else {
			c->st.len_unknown++;
		}
	}
	/* load latency of a data cache miss: the weight PEBS gives for loads */
	if (!out->weight && o.dc_miss && o.load && o.dc_miss_lat) {
		out->weight = o.dc_miss_lat;
		out->extra_flags |= CT_SAMPLE_HAS_WEIGHT;
	}
	return 0;
}

/* ---- other records -------------------------------------------------------------- */

int pmu_lost_record(const struct perf_rec *r, uint64_t now, struct ct_record *out)
{
	if (r->kind != PERF_REC_LOST && r->kind != PERF_REC_THROTTLE)
		return 0;
	memset(out, 0, sizeof *out);
	out->type = CT_REC_LOST;
	out->time = r->time ? r->time : now;
	if (r->kind == PERF_REC_LOST) {
		out->u.lost.reason = CT_LOST_PMU;
		out->u.lost.count = r->lost;
	} else {
		out->u.lost.reason = CT_LOST_THROTTLE;
		out->u.lost.count = 1;
	}
	return 1;
}

static uint64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pmu_conv_on_rec(void *ctx, const struct perf_rec *r)
{
	struct pmu_conv *c = ctx;
	switch (r->kind) {
	case PERF_REC_SAMPLE: {
		c->st.samples++;
		if (c->pre && c->pre(c->ctx, r)) {
			c->st.dropped++;
			return;
		}
		struct pmu_sample s;
		if (c->mode == PMU_CONV_IBS)
			pmu_ibs_sample(c, r, &s);
		else
			pmu_pebs_sample(c, r, &s);
		if (!s.skip)
			c->st.usable++;
		if (c->on_sample)
			c->on_sample(c->ctx, &s);
		break;
	}
	case PERF_REC_LOST:
	case PERF_REC_THROTTLE: {
		struct ct_record l;
		pmu_lost_record(r, r->time ? r->time : mono_now(), &l);
		if (r->kind == PERF_REC_LOST)
			c->st.lost += r->lost;
		else
			c->st.throttled++;
		if (c->on_lost)
			c->on_lost(c->ctx, &l);
		break;
	}
	default:
		break;           /* UNTHROTTLE, other record types */
	}
}
