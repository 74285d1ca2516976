/* Fuzz target for the trace reader and the record decoder.
 *
 * `make fuzz` builds it with clang (libFuzzer) and runs it from
 * tests/fuzz/corpus/fmt_reader/; `make check` replays that corpus through
 * the same entry point built with -DCT_FUZZ_MAIN (replay_main.h).  More
 * seeds: CT_MALFORMED_DUMP=DIR build/tests/fmt_malformed.
 *
 * Each input is read twice: as a whole trace (ct_trace_open_mem, then every
 * record through the per-thread and the merged cursors), and as a raw
 * record stream (ct_decode_record until it refuses), which reaches the
 * codec directly since data frames carry checksums a fuzzer rarely fixes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ct_error err;
	struct ct_record r;
	struct ct_trace *t = ct_trace_open_mem(data, size, "fuzz", &err);
	if (t) {
		char v[64];
		(void)ct_trace_meta(t, CT_SEC_SUMMARY, "records", v, sizeof v);
		(void)ct_trace_damage(t);
		for (size_t i = 0; i < ct_trace_nthreads(t); i++) {
			struct ct_cursor *c = ct_cursor_thread(t, i);
			while (c && ct_cursor_next(c, &r, &err) == 1)
				;
			ct_cursor_free(c);
		}
		struct ct_cursor *c = ct_cursor_merged(t);
		while (c && ct_cursor_next(c, &r, &err) == 1)
			;
		ct_cursor_free(c);
		ct_trace_close(t);
	}

	struct ct_codec codec;
	ct_codec_reset(&codec);
	const uint8_t *p = data, *end = data + size;
	while (p < end) {
		size_t n = ct_decode_record(&codec, p, end, &r);
		if (n == 0 || n > (size_t)(end - p))
			break;
		/* what decodes must encode back to the same record */
		uint8_t out[CT_RECORD_MAX_BYTES];
		struct ct_codec c2;
		ct_codec_reset(&c2);
		struct ct_record back;
		size_t m = ct_encode_record(&c2, &r, out);
		ct_codec_reset(&c2);
		if (m == 0 || m > CT_RECORD_MAX_BYTES || ct_decode_record(&c2, out, out + m, &back) != m)
			abort();
		p += n;
	}
	return 0;
}

void fuzz_replay_done(void) {}

#include "replay_main.h"
