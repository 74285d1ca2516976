/* The replay engine: one pass over the time-merged record stream of a
 * trace, every record to every consumer, like perf's struct perf_tool. */
#include <stdlib.h>
#include <string.h>

#include "ana.h"

#define PROGRESS_EVERY 65536  /* records between progress checks */

int replay(struct ct_trace *t, struct record_consumer *consumers, size_t n,
           bool show_progress, struct ct_error *err)
{
	struct ct_cursor *c = ct_cursor_merged(t);
	if (!c) {
		snprintf(err->msg, sizeof err->msg, "%s: cannot create a cursor (out of memory)",
		         ct_trace_path(t));
		for (size_t i = 0; i < n; i++)
			if (consumers[i].finish)
				consumers[i].finish(consumers[i].self);
		return -1;
	}
	struct progress p;
	progress_start(&p, t, show_progress);
	struct ct_record r;
	uint64_t done = 0, next = PROGRESS_EVERY;
	int rc;
	/* The common case (one or two consumers) without the inner loop's
	 * overhead is not worth it: the call through the pointer dominates. */
	while ((rc = ct_cursor_next(c, &r, err)) == 1) {
		for (size_t i = 0; i < n; i++)
			consumers[i].record(consumers[i].self, &r);
		if (++done == next) {
			next += PROGRESS_EVERY;
			progress_update(&p, done);
		}
	}
	progress_end(&p);
	ct_cursor_free(c);
	for (size_t i = 0; i < n; i++)
		if (consumers[i].finish)
			consumers[i].finish(consumers[i].self);
	if (rc < 0) {
		if (!err->msg[0])
			snprintf(err->msg, sizeof err->msg, "%s: damaged data", ct_trace_path(t));
		return -1;
	}
	return 0;
}
