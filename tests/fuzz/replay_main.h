/* The replay driver of a fuzz target, built without libFuzzer
 * (-DCT_FUZZ_MAIN; `make check` runs it over the target's corpus,
 * tests/e2e/fuzz_corpus.sh): each file named on the command line goes
 * through LLVMFuzzerTestOneInput once, from an exact-size copy so that
 * AddressSanitizer catches any read past its end.  Exit status 1 if a file
 * could not be read; a failed check in the target aborts. */
#ifndef CT_FUZZ_REPLAY_MAIN_H
#define CT_FUZZ_REPLAY_MAIN_H
#ifdef CT_FUZZ_MAIN
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_replay_done(void);   /* defined by targets that keep files around */

int main(int argc, char **argv)
{
	int bad = 0;
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *b = NULL;
		size_t n = 0;
		long len = -1;
		if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
		    (b = malloc(len ? (size_t)len : 1)) != NULL)
			n = fread(b, 1, (size_t)len, f);
		if (f)
			fclose(f);
		if (!b || n != (size_t)len) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			free(b);
			bad = 1;
			continue;
		}
		LLVMFuzzerTestOneInput(b, n);
		free(b);
	}
	fuzz_replay_done();
	printf("%d inputs replayed\n", argc - 1);
	return bad;
}
#endif
#endif
