/* Fuzz target for the trace reader and the record decoder.
 *
 * libFuzzer:
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Iformats tests/fuzz/fmt_reader_fuzz.c formats/codec.c formats/names.c \
 *       formats/reader.c formats/writer.c -lzstd -o fmt_reader_fuzz
 *   ./fmt_reader_fuzz -max_len=65536 corpus/
 * Replay files without a fuzzer (regression runs, any compiler):
 *   cc -std=c11 -D_GNU_SOURCE -g -DCT_FUZZ_MAIN -fsanitize=address,undefined \
 *       -Iformats tests/fuzz/fmt_reader_fuzz.c formats/codec.c formats/names.c \
 *       formats/reader.c formats/writer.c -lzstd -o fmt_reader_replay
 *   ./fmt_reader_replay tests/malformed/[a-z]*.zst corpus/[0-9a-z]*
 * A seed corpus: CT_MALFORMED_DUMP=corpus build/tests/fmt_malformed.
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

#ifdef CT_FUZZ_MAIN
int main(int argc, char **argv)
{
	int bad = 0;
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			bad = 1;
			continue;
		}
		size_t cap = 1 << 16, n = 0, got;
		uint8_t *b = malloc(cap);
		while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
			n += got;
			if (n == cap) {
				uint8_t *nb = realloc(b, cap *= 2);
				if (!nb) {
					free(b);
					b = NULL;
				}
				b = nb;
			}
		}
		fclose(f);
		if (!b) {
			fprintf(stderr, "%s: out of memory\n", argv[i]);
			bad = 1;
			continue;
		}
		/* an exact-size copy so that ASAN catches any read past the end */
		uint8_t *exact = malloc(n ? n : 1);
		memcpy(exact, b, n);
		free(b);
		LLVMFuzzerTestOneInput(exact, n);
		free(exact);
		printf("ok %s (%zu bytes)\n", argv[i], n);
	}
	return bad;
}
#endif
