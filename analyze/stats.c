/* Per-thread record counts, time spans, lost and skipped totals: a record
 * consumer used by info and report. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "out_util.h"

int trace_stats_init(struct trace_stats *s, size_t nthreads)
{
	memset(s, 0, sizeof *s);
	s->nthreads = nthreads;
	s->th = calloc(nthreads ? nthreads : 1, sizeof *s->th);
	if (!s->th)
		return -1;
	for (size_t i = 0; i < nthreads; i++)
		s->th[i].first_time = UINT64_MAX;
	s->first_time = UINT64_MAX;
	return 0;
}

void trace_stats_free(struct trace_stats *s)
{
	free(s->th);
	s->th = NULL;
}

/* Every type but SAMPLE into t and s. */
static void stats_other(struct trace_stats *s, struct thread_stats *t, const struct ct_record *r)
{
	switch (r->type) {
	case CT_REC_WP_ARM: t->wp_arm++; break;
	case CT_REC_WP_HIT: t->wp_hit++; break;
	case CT_REC_ALLOC: t->alloc++; break;
	case CT_REC_FREE: t->free++; break;
	case CT_REC_THREAD_END:
		t->ended = true;
		t->end_status = r->u.end.status;
		break;
	case CT_REC_LOST:
		t->lost += r->u.lost.count;
		s->lost_total += r->u.lost.count;
		s->lost_by_reason[r->u.lost.reason < LOST_REASONS ? r->u.lost.reason : 0] += r->u.lost.count;
		break;
	case CT_REC_SKIPPED:
		t->skipped += r->u.skipped.count;
		s->skipped_total += r->u.skipped.count;
		s->skipped_by_reason[r->u.skipped.reason <= CT_SKIP_REASON_MAX ? r->u.skipped.reason : 0] +=
			r->u.skipped.count;
		break;
	case CT_REC_OWNER_WIN:
		if (r->u.owin.status <= CT_OWNER_OPEN_MAX)
			s->owner_windows[r->u.owin.status]++;
		break;
	case CT_REC_OWNER_XFER:
		s->owner_held += r->u.oxfer.windows;
		break;
	default:
		break;
	}
}

/* The trace's totals in locals for the block (the stores into the
 * threads' counts could alias them). */
void trace_stats_records(void *self, const struct ct_record *r, size_t n)
{
	struct trace_stats *s = self;
	uint64_t first = s->first_time, last = s->last_time, samples = 0;
	for (const struct ct_record *e = r + n; r < e; r++) {
		if (r->time < first)
			first = r->time;
		if (r->time > last)
			last = r->time;
		if (r->thread >= s->nthreads) {
			s->bad_thread++;
			continue;
		}
		struct thread_stats *t = &s->th[r->thread];
		t->records++;
		if (r->time < t->first_time)
			t->first_time = r->time;
		if (r->time > t->last_time)
			t->last_time = r->time;
		if (r->type != CT_REC_SAMPLE) {
			stats_other(s, t, r);
			continue;
		}
		samples++;
		t->samples++;
		t->period_sum += r->u.sample.period;
		if (r->u.sample.kind == CT_ACCESS_STORE)
			t->stores++;
		else if (r->u.sample.kind == CT_ACCESS_ATOMIC)
			t->atomics++;
		else
			t->loads++;
	}
	s->records += n;
	s->samples += samples;
	s->first_time = first;
	s->last_time = last;
}

static void stats_record(void *self, const struct ct_record *r)
{
	trace_stats_records(self, r, 1);
}

struct record_consumer trace_stats_consumer(struct trace_stats *s)
{
	return (struct record_consumer){ .self = s, .record = stats_record, .finish = NULL };
}

/* "name":{"total":N,"by_reason":{"reason":N,...}} */
static void reasons_json(FILE *f, const char *name, uint64_t total, const uint64_t *by,
                         unsigned n, bool lost)
{
	fprintf(f, "\"%s\":{\"total\":%" PRIu64 ",\"by_reason\":{", name, total);
	bool first = true;
	for (unsigned k = 0; k < n; k++)
		if (by[k]) {
			const char *rn = !k ? NULL : lost ? ct_lost_reason_name(k) : ct_skip_reason_name(k);
			fputs(first ? "" : ",", f);
			out_json_string(f, rn ? rn : "unknown");
			fprintf(f, ":%" PRIu64, by[k]);
			first = false;
		}
	fprintf(f, "}}");
}

void trace_stats_json(FILE *f, const struct trace_stats *s)
{
	reasons_json(f, "lost_records", s->lost_total, s->lost_by_reason, LOST_REASONS, true);
	fputc(',', f);
	reasons_json(f, "skipped_samples", s->skipped_total, s->skipped_by_reason,
	             CT_SKIP_REASON_MAX + 1, false);
}
