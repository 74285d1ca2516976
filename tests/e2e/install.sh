#!/usr/bin/env bash
# make install into a staging root: the programs, the reader library with
# its header and pkg-config file, LICENSE; then a program built only with
# `pkg-config --cflags --libs commtrace` reads a trace as commanalyze does.
. "$(dirname "$0")/../lib.sh"
require install "$COMMANALYZE" pkg-config cc make
R="$WORK/root"
if ! make -s -C "$CT_ROOT" B="$CT_BUILD" install DESTDIR="$R" PREFIX=/usr >"$WORK/make.log" 2>&1; then
	fail install "make install: $(tail -5 "$WORK/make.log" | tr '\n' '|')"
	done_tests
fi
for f in bin/commanalyze bin/commrec include/commtrace/commtrace.h lib/commtrace/libctformat.a \
	lib/pkgconfig/commtrace.pc share/doc/commtrace/LICENSE share/man/man1/commanalyze.1; do
	check "installed_$(basename "$f")" test -s "$R/usr/$f"
done
export PKG_CONFIG_PATH="$R/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$R"
check pc_version test "$(pkg-config --modversion commtrace)" = "$(cat "$CT_ROOT/VERSION")"
cat >"$WORK/reader.c" <<'C'
#include <stdio.h>
#include <commtrace/commtrace.h>
int main(int argc, char **argv)
{
	struct ct_error err = {{0}};
	struct ct_trace *t = argc > 1 ? ct_trace_open(argv[1], &err) : NULL;
	if (!t) {
		fprintf(stderr, "%s\n", err.msg);
		return 2;
	}
	printf("%zu\n", ct_trace_nthreads(t));
	ct_trace_close(t);
	return 0;
}
C
# shellcheck disable=SC2046
# make check ASAN=1 installs sanitized libraries: their users link the runtime too
san=()
[ "${ASAN:-0}" = 1 ] && san=(-fsanitize=address,undefined)
if cc -std=c11 "${san[@]}" -o "$WORK/reader" "$WORK/reader.c" $(pkg-config --cflags --libs commtrace) 2>"$WORK/cc.err"; then
	pass pc_build
	want=$("$COMMANALYZE" info "$CT_ROOT/datasets/p2p-4t.zst" | awk '/^threads:/ { print $2 }')
	check pc_reader_reads test "$("$WORK/reader" "$CT_ROOT/datasets/p2p-4t.zst")" = "$want"
else
	fail pc_build "$(head -c 300 "$WORK/cc.err")"
fi
done_tests
