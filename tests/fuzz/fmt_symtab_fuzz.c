/* Fuzz target for the SYMBOLS section parser (formats/symtab.c): any bytes
 * are parsed; whatever parses is looked up, serialized and parsed again
 * (the same bytes must come back).
 *
 * `make fuzz` builds it with clang (libFuzzer) and runs it from
 * tests/fuzz/corpus/fmt_symtab/ (a SYMBOLS payload cut out of a recorded
 * trace); `make check` replays that corpus through the same entry point
 * built with -DCT_FUZZ_MAIN (replay_main.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab s;
	symtab_init(&s);
	char err[256];
	int rc = symtab_parse(&s, data, size, err, sizeof err);
	for (size_t i = 0; i < s.n; i++) {
		const struct st_module *m = s.mods[i];
		uint64_t probe[4] = { m->lo, m->hi - 1, m->lo + (m->hi - m->lo) / 2, m->bias + 0x1000 };
		for (int k = 0; k < 4; k++) {
			struct st_data d;
			struct st_code c;
			char b[128];
			symtab_data(&s, probe[k], &d);
			symtab_code(&s, probe[k], &c);
			symtab_code_str(&s, probe[k], true, b, sizeof b);
		}
		for (size_t v = 0; v < m->nvars && v < 64; v++) {
			struct st_data d;
			symtab_data(&s, m->vars[v].addr + m->bias + m->vars[v].size / 2, &d);
		}
	}
	if (rc == 0) {
		void *out;
		size_t len;
		if (symtab_serialize(&s, &out, &len) == 0) {
			struct symtab r;
			symtab_init(&r);
			if (symtab_parse(&r, out, len, err, sizeof err))
				abort();   /* what we write, we read */
			symtab_free(&r);
			free(out);
		}
	}
	symtab_free(&s);
	return 0;
}

void fuzz_replay_done(void) {}

#include "replay_main.h"
