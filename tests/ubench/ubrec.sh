# Shell helpers for the end-to-end tests that record tests/ubench programs
# (tests/e2e/record_ubench.sh, record_robust.sh, pattern_ubench.sh).
# Source it after tests/lib.sh.
#
#   ub_have_recorder / ub_have_analyzer   true if the binaries exist
#   ub_build NAME...                      make $CT_BUILD/ubench/NAME if missing
#   ub_record ID [COMMREC-OPTIONS...] -- PROG [ARGS...]
#       runs `commrec -q -f -o $WORK/ID.zst OPTIONS -- $UBENCH/PROG ARGS`
#       (soft sampler unless OPTIONS choose one) under a time limit; leaves
#       $WORK/ID.out (program stdout), $WORK/ID.err (stderr of both) and sets
#       UB_RC to commrec's exit status (124: the time limit hit).  Every
#       trace written is checked: its per-thread counts add up (test
#       ID/counts, ub_counts).
#   ub_counts NAME TRACE            records written + lost = produced, per
#       thread (build/tests/fmt_counts TRACE NAME --all-counted)
#   ub_plain ID PROG [ARGS...]      the same without commrec (UB_RC too)
#   ub_dump ID [DUMP-OPTIONS...]    commanalyze dump --raw of $WORK/ID.zst to
#       stdout; UB_RC is its status (call it directly, not in $(...), or use
#       ub_dump_to)
#   ub_dump_to FILE ID [OPTIONS]    the same into FILE
#   ub_info ID                      `commanalyze info` into $WORK/ID.info
#   ub_check ARGS...                python3 tests/ubench/ubtrace.py ARGS;
#       its PASS/FAIL lines go to stdout; a FAIL marks the script failed
#   ub_wp_probe                     what commrec's watchpoint probe says here
#       (commrec --list-samplers): UB_WP is fires, no-fire or none, UB_WP_WHY
#       the probe's line

UBTRACE="$UBENCH_SRC/ubtrace.py"
UB_TIMEOUT=${UB_TIMEOUT:-30}   # seconds per program run; a normal run takes < 3 s
UB_RC=0

ub_wp_probe() {
	UB_WP_WHY=$("$COMMREC" --list-samplers 2>&1 | grep '^watchpoints:' | head -n 1 | sed 's/): .*/)/')
	case $UB_WP_WHY in
	*"do not fire"*) UB_WP=no-fire ;;
	*"debug register"*" per thread"*) UB_WP=fires ;;
	*) UB_WP=none ;;
	esac
}

ub_have_recorder() { [ -x "$COMMREC" ] && [ -f "$CT_BUILD/libcommrec.so" ]; }
ub_have_analyzer() { [ -x "$COMMANALYZE" ]; }

ub_build() {
	local n
	for n in "$@"; do
		make -s -C "$CT_ROOT" B="$CT_BUILD" "$UBENCH/$n" >/dev/null 2>&1 || true
		[ -x "$UBENCH/$n" ] || return 1
	done
}

ub_record() {
	local id=$1; shift
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	local prog=$1; shift
	local sampler=(-s soft)
	local o
	for o in "${opts[@]}"; do
		case $o in -s|--sampler|--sampler=*) sampler=() ;; esac
	done
	UB_RC=0
	timeout -k 5 "$UB_TIMEOUT" "$COMMREC" -q -f -o "$WORK/$id.zst" "${sampler[@]}" "${opts[@]}" \
		-- "$UBENCH/$prog" "$@" >"$WORK/$id.out" 2>"$WORK/$id.err" || UB_RC=$?
	local rc=$UB_RC
	[ -s "$WORK/$id.zst" ] && ub_counts "$id/counts" "$WORK/$id.zst"
	UB_RC=$rc
}

ub_counts() {
	local out
	out=$("$CT_BUILD/tests/fmt_counts" "$2" "$1" --all-counted 2>&1)
	if [ $? -ne 0 ]; then
		echo "FAIL $1: ${out##*FAIL $1: }"
		ct_failed=1
	else
		echo "PASS $1"
	fi
}

ub_plain() {
	local id=$1 prog=$2; shift 2
	UB_RC=0
	timeout -k 5 "$UB_TIMEOUT" "$UBENCH/$prog" "$@" >"$WORK/$id.out" 2>"$WORK/$id.err" || UB_RC=$?
}

ub_dump() {
	local id=$1; shift
	UB_RC=0
	"$COMMANALYZE" dump --raw "$WORK/$id.zst" "$@" || UB_RC=$?
}

ub_dump_to() {
	local file=$1 id=$2; shift 2
	UB_RC=0
	"$COMMANALYZE" dump --raw "$WORK/$id.zst" "$@" >"$file" 2>"$file.err" || UB_RC=$?
}

ub_info() {
	UB_RC=0
	"$COMMANALYZE" info "$WORK/$1.zst" >"$WORK/$1.info" 2>&1 || UB_RC=$?
}

ub_check() {
	python3 "$UBTRACE" "$@" || ct_failed=1
}

# ub_status_ok NAME ID WANT: PASS if UB_RC == WANT, else FAIL with stderr.
ub_status_ok() {
	local name=$1 id=$2 want=$3
	if [ "$UB_RC" -eq "$want" ]; then
		pass "$name"
	else
		fail "$name" "exit status $UB_RC, want $want; stderr: $(tail -n 5 "$WORK/$id.err" | tr '\n' '|')"
	fi
}

# ub_complete NAME ID WANT(yes|no): `commanalyze info` works and says complete: WANT.
ub_complete() {
	local name=$1 id=$2 want=$3
	ub_info "$id"
	local got
	got=$(sed -n 's/^[[:space:]]*complete:[[:space:]]*\([a-z]*\).*/\1/p' "$WORK/$id.info" | head -n 1)
	if [ "$UB_RC" -ne 0 ]; then
		fail "$name" "commanalyze info exited $UB_RC: $(head -n 3 "$WORK/$id.info" | tr '\n' '|')"
	elif [ "$got" != "$want" ]; then
		fail "$name" "commanalyze info says 'complete: ${got:-<no such line>}', want '$want'"
	else
		pass "$name"
	fi
}
