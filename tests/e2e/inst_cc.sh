#!/usr/bin/env bash
# record/commrec-cc on the commands users give it:
#   - -flto (one step and two steps): gcc instruments at the link then, so
#     the link gets -fsanitize=thread; the program references __tsan_* (from
#     libcommrec-inst, not libtsan), runs, and a full inst recording of it
#     has samples
#   - sources by suffix, as gcc knows them: a .cxx (g++) and a Fortran .f90
#     (gfortran) compiled and linked in one step are instrumented (-g and
#     -fsanitize=thread in the compile step, __tsan_* references)
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
INSTLIB=${COMMREC_INST_LIBDIR:-$CT_BUILD}
export COMMREC_INST_LIBDIR="$INSTLIB"
require inst_cc "$COMMREC" "$COMMANALYZE" "$INSTLIB/libcommrec-inst.so" gcc nm
unset COMMTRACE_SPOOL COMMTRACE_PID

# instrumented PROG: it calls the instrumentation's entry points, and they
# come from libcommrec-inst (no libtsan)
instrumented() {
	nm -D "$1" 2>/dev/null | grep -q ' U __tsan_func_entry' &&
		! readelf -d "$1" | grep -q 'NEEDED.*libtsan'
}

# full_samples PROG: the SAMPLE records of a full inst recording of PROG
full_samples() {
	local t
	t="$WORK/$(basename "$1").zst"
	"$COMMREC" -q -f -o "$t" --sampler inst --full -- "$1" >/dev/null 2>"$t.err" &&
		"$COMMANALYZE" dump --raw "$t" 2>/dev/null | grep -c ' sample '
}

# ---- -flto -------------------------------------------------------------------
cat >"$WORK/lto_main.c" <<'C'
int lto_counter;
int lto_bump(int v);
int main(void)
{
	for (int i = 0; i < 1000; i++)
		lto_counter = lto_bump(lto_counter);
	return lto_counter == 1000 ? 0 : 1;
}
C
printf 'int lto_bump(int v) { return v + 1; }\n' >"$WORK/lto_bump.c"
cd "$WORK" || exit 1
if CC=gcc "$CC_WRAP" -O3 -flto lto_main.c lto_bump.c -o lto1 2>cc.err; then
	check inst_cc_lto_one_step instrumented lto1
	check inst_cc_lto_runs ./lto1
	n=$(full_samples "$WORK/lto1")
	check inst_cc_lto_recorded test "${n:-0}" -gt 0
else
	fail inst_cc_lto_one_step "$(head -c 300 cc.err)"
fi
if CC=gcc "$CC_WRAP" -O2 -flto=auto -c lto_main.c lto_bump.c 2>cc.err &&
   CC=gcc "$CC_WRAP" -O2 -flto=auto lto_main.o lto_bump.o -o lto2 2>>cc.err; then
	check inst_cc_lto_two_steps instrumented lto2
else
	fail inst_cc_lto_two_steps "$(head -c 300 cc.err)"
fi

# ---- sources by suffix ---------------------------------------------------------
# compiled_with_tsan FILE: the compile step of commrec-cc --show had
# -fsanitize=thread and -g
compiled_with_tsan() { grep -- ' -c ' "$1" | grep -q -- '-fsanitize=thread.* -g'; }
if command -v g++ >/dev/null; then
	printf 'int cxx_x;\nint main() { cxx_x++; return cxx_x - 1; }\n' >"$WORK/prog.cxx"
	if CC=g++ "$CC_WRAP" --show -O2 prog.cxx -o cxx 2>cxx.show; then
		check inst_cc_cxx_source sh -c "grep -q -- '-fsanitize=thread' cxx.show && nm -D cxx | grep -q ' U __tsan_func_entry' && ./cxx"
	else
		fail inst_cc_cxx_source "$(head -c 300 cxx.show)"
	fi
else
	skip inst_cc_cxx_source "needs g++"
fi
if command -v gfortran >/dev/null; then
	cat >"$WORK/heat.f90" <<'F'
program heat
  implicit none
  integer, parameter :: n = 64
  real(8) :: a(n), b(n)
  integer :: i, it
  a = 0; b = 0; a(n/2) = 1
  do it = 1, 10
    do i = 2, n-1
      b(i) = 0.5d0*a(i) + 0.25d0*(a(i-1)+a(i+1))
    end do
    a(2:n-1) = b(2:n-1)
  end do
  print *, sum(a)
end program
F
	# gcc drives gfortran's compiler for .f90, as the tester's command did
	if CC=gcc "$CC_WRAP" --show -O2 heat.f90 -o heat -lgfortran 2>f90.show; then
		check inst_cc_fortran_compile compiled_with_tsan f90.show
		check inst_cc_fortran_instrumented sh -c "nm -D heat | grep -q ' U __tsan_func_entry' && ./heat >/dev/null"
	else
		fail inst_cc_fortran_compile "$(head -c 300 f90.show)"
	fi
else
	skip inst_cc_fortran_compile "needs gfortran (not installed)"
fi

done_tests
