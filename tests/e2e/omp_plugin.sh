#!/usr/bin/env bash
# An OpenMP plugin opened with RTLD_LOCAL: its libgomp is not in the global
# scope, yet its GOMP_* calls bind to the runtime's global wrappers, which
# must find libgomp all the same (record/runtime/rt_real.c).  Before that,
# the wrapper called address 0.
#   omp_plugin/soft   a plain program that dlopens the plugin, under commrec
#                     (the preloaded runtime): its own exit status and result
#   omp_plugin/inst   the program built with commrec-cc, recorded with
#                     --sampler inst --full (the inst runtime, libgomp's
#                     synchronization wrapped too), and run without commrec
. "$(dirname "$0")/../lib.sh"

export COMMREC_INST_LIBDIR=${COMMREC_INST_LIBDIR:-$CT_BUILD}
require omp_plugin "$COMMREC" "$COMMREC_INST_LIBDIR/libcommrec-inst.so" gcc
cat >"$WORK/plugin.c" <<'C'
#include <omp.h>
int plugin_run(int n)
{
	int sum = 0;
#pragma omp parallel num_threads(n) reduction(+:sum)
	{
		sum += omp_get_thread_num();
#pragma omp barrier
	}
	return sum;
}
C
cat >"$WORK/main.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 2;
	}
	int (*run)(int) = (int (*)(int))dlsym(h, "plugin_run");
	int s = run(4);
	printf("plugin sum=%d\n", s);
	return s != 6;
}
C
if ! gcc -O1 -g -fPIC -shared -fopenmp "$WORK/plugin.c" -o "$WORK/plugin.so" 2>"$WORK/cc.err" ||
   ! gcc -O1 "$WORK/main.c" -o "$WORK/main" -ldl 2>>"$WORK/cc.err" ||
   ! CC=gcc "$CT_ROOT/record/commrec-cc" -O1 "$WORK/main.c" -o "$WORK/main-inst" -ldl 2>>"$WORK/cc.err"; then
	fail omp_plugin/build "$(head -c 300 "$WORK/cc.err")"
	done_tests
fi

# ran NAME COMMAND...: exit status 0 and the plugin's right sum
ran() {
	local n=$1 rc=0; shift
	"$@" >"$WORK/$n.out" 2>"$WORK/$n.err" || rc=$?
	if [ "$rc" -eq 0 ] && grep -q '^plugin sum=6$' "$WORK/$n.out"; then
		pass "omp_plugin/$n"
	else
		fail "omp_plugin/$n" "status $rc: $(head -c 200 "$WORK/$n.out") $(tail -c 300 "$WORK/$n.err")"
	fi
}
ran soft "$COMMREC" -q -f -o "$WORK/s.zst" -- "$WORK/main" "$WORK/plugin.so"
ran inst "$COMMREC" -q -f -o "$WORK/i.zst" --sampler inst --full -- "$WORK/main-inst" "$WORK/plugin.so"
ran inst_unrecorded "$WORK/main-inst" "$WORK/plugin.so"
done_tests
