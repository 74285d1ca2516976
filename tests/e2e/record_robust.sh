#!/usr/bin/env bash
# End-to-end: recording must not change what a program computes or how it
# ends (DESIGN.md, Reliability).  Uses the programs of tests/ubench
# (README.md there):
#   exitcode        exit() from a non-main thread: status and stdout unchanged,
#                   trace complete
#   exitcode-long   the same, long enough for samples: the worker still
#                   running at exit has its skipped-sample counts in the trace
#                   (every thread with >= 50 samples has SKIPPED records: the
#                   workers' loops skip about a third of their samples, so
#                   none in 50 has probability below 1e-8)
#   write_volume    per-thread counts with a fixed seed unchanged
#   tiny period     -c 1 (raised to the floor, with a message) of 4 threads:
#                   status and counts unchanged, trace complete; again with
#                   two busy loops beside it, and with no room at all in the
#                   real-time signal queue (ulimit -i 0: every signal of the
#                   runtime becomes a SIGIO, whose default action would kill)
#   sigprog         the program's SIGTRAP/SIGIO/SIGRTMIN+k handlers still work
#   forkexec        fork + exec and a child's exit(3): statuses and stdout
#                   unchanged; the trace is readable and complete
#   manythreads     1000 short threads: counter right, every thread recorded
#                   (>= 1001 thread_start records: main + 1000), trace complete
#   crash           SIGSEGV / abort(): commrec exits 128+11 / 128+6, the trace
#                   is readable, says complete: no, and holds records
#   no-alloc        --no-alloc: no alloc records (but samples)
#   unwritable      an output path that cannot be written: status 125
. "$(dirname "$0")/../lib.sh"
. "$UBENCH_SRC/ubrec.sh"
ulimit -c 0

if ! ub_have_recorder; then
	skip record_robust "no recorder: $COMMREC and $CT_BUILD/libcommrec.so needed"
	done_tests
fi
if ! ub_build exitcode write_volume sigprog forkexec manythreads crash objects; then
	fail record_robust/build "cannot build the test programs (make build/ubench/...)"
	done_tests
fi
have_ana=1
if ! ub_have_analyzer; then
	have_ana=0
	skip record_robust/analysis "no analyzer at $COMMANALYZE: trace contents not checked"
fi

# same_output NAME PLAIN_ID REC_ID [FILTER-REGEX]: the two stdouts (filtered
# lines only, if given) are identical.
same_output() {
	local name=$1 a=$2 b=$3 re=${4:-}
	local fa=$WORK/$a.out fb=$WORK/$b.out
	if [ -n "$re" ]; then
		grep -E "$re" "$WORK/$a.out" >"$WORK/$a.cmp" || true
		grep -E "$re" "$WORK/$b.out" >"$WORK/$b.cmp" || true
		fa=$WORK/$a.cmp fb=$WORK/$b.cmp
	fi
	if [ ! -s "$fa" ]; then
		fail "$name" "the plain run printed nothing to compare"
	elif cmp -s "$fa" "$fb"; then
		pass "$name"
	else
		fail "$name" "stdout differs from the plain run: $(diff "$fa" "$fb" | head -n 8 | tr '\n' '|')"
	fi
}

# count_threads ID: distinct thread indices with a thread_start record.
count_threads() {
	ub_dump "$1" --type thread_start 2>/dev/null | awk '{print $2}' | sort -u | wc -l
}

# ---- exitcode ------------------------------------------------------------------
ub_plain exitcode-plain exitcode -x 7
plain_rc=$UB_RC
ub_record exitcode -- exitcode -x 7
if [ "$plain_rc" -ne 7 ]; then
	skip robust/exitcode "the plain program exited $plain_rc, not 7"
else
	ub_status_ok robust/exitcode-status exitcode 7
	same_output robust/exitcode-stdout exitcode-plain exitcode
	[ "$have_ana" = 1 ] && ub_complete robust/exitcode-complete exitcode yes
fi

# ---- exitcode, long: counts of a thread still running at exit -------------------
ub_record exitlong -- exitcode -x 7 -n 50000000
ub_status_ok robust/exitcode-long-status exitlong 7
if [ "$have_ana" = 1 ]; then
	ub_dump_to "$WORK/exitlong.dump" exitlong --type sample --type skipped
	if awk '$3 == "sample" { n[$2]++ } $3 == "skipped" { s[$2]++ }
	        END { bad = 0; for (t in n) if (n[t] >= 50 && !s[t]) { print t; bad = 1 }; exit bad }' \
	        "$WORK/exitlong.dump" >"$WORK/exitlong.bad"; then
		pass robust/exitcode-long-skips
	else
		fail robust/exitcode-long-skips "threads with >= 50 samples but no skipped record: $(tr '\n' ' ' <"$WORK/exitlong.bad")"
	fi
fi

# ---- write_volume counts -------------------------------------------------------
wv=(write_volume -t 2 -n 20000000 -s 0.3 -S 42)
ub_plain wv-plain "${wv[@]}"
ub_record wv -- "${wv[@]}"
ub_status_ok robust/write_volume-status wv 0
same_output robust/write_volume-counts wv-plain wv '^(bench|thread) '

# ---- tiny period: the runtime must not hurt the program -------------------------
wv4=(write_volume -t 4 -n 20000000 -s 0.5 -S 7)
ub_plain wv4-plain "${wv4[@]}"
# tiny ID NAME: status 0, counts as without commrec, trace complete
tiny() {
	ub_status_ok "robust/$2-status" "$1" 0
	same_output "robust/$2-counts" wv4-plain "$1" '^(bench|thread) '
	[ "$have_ana" = 1 ] && ub_complete "robust/$2-complete" "$1" yes
}
ub_record tiny -c 1 -- "${wv4[@]}"
tiny tiny tiny-period
if [ "$have_ana" = 1 ]; then
	ub_info tiny
	check robust/tiny-period-config grep -Eq '^ *period=100$' "$WORK/tiny.info"
	check robust/tiny-period-requested grep -Eq '^ *period_requested=1$' "$WORK/tiny.info"
fi
busy=()
for _ in 1 2; do
	sh -c 'while :; do :; done' &
	busy+=($!)
done
ub_record tinyload -c 1 -- "${wv4[@]}"
kill "${busy[@]}"
wait "${busy[@]}" 2>/dev/null
tiny tinyload tiny-period-loaded
( ulimit -i 0 && ub_record tinyq -c 1 -- "${wv4[@]}" && echo "$UB_RC" >"$WORK/tinyq.rc" )
UB_RC=$(cat "$WORK/tinyq.rc" 2>/dev/null || echo 255)
tiny tinyq tiny-period-queue-full

# ---- sigprog -------------------------------------------------------------------
ub_plain sig-plain sigprog
if [ "$UB_RC" -ne 0 ]; then
	skip robust/sigprog "sigprog fails without commrec too: $(grep FAILED "$WORK/sig-plain.out" | head -n 2 | tr '\n' '|')"
else
	ub_record sig -- sigprog
	if [ "$UB_RC" -eq 0 ] && cmp -s "$WORK/sig-plain.out" "$WORK/sig.out"; then
		pass robust/sigprog
	else
		fail robust/sigprog "status $UB_RC (want 0); $(grep -h FAILED "$WORK/sig.out" | head -n 3 | tr '\n' '|') stderr: $(tail -n 3 "$WORK/sig.err" | tr '\n' '|')"
	fi
fi

# ---- forkexec ------------------------------------------------------------------
ub_plain fe-plain forkexec
ub_record fe -- forkexec
ub_status_ok robust/forkexec-status fe 0
same_output robust/forkexec-stdout fe-plain fe
[ "$have_ana" = 1 ] && ub_complete robust/forkexec-complete fe yes

# ---- manythreads ---------------------------------------------------------------
ub_plain mt-plain manythreads -t 1000
ub_record mt -- manythreads -t 1000
ub_status_ok robust/manythreads-status mt 0
same_output robust/manythreads-stdout mt-plain mt
if [ "$have_ana" = 1 ]; then
	ub_complete robust/manythreads-complete mt yes
	n=$(count_threads mt)
	if [ "$n" -ge 1001 ]; then
		pass robust/manythreads-threads
	else
		fail robust/manythreads-threads "want >= 1001 recorded threads (main + 1000), the trace has $n thread_start records"
	fi
fi

# ---- crash ---------------------------------------------------------------------
for mode in segv abort; do
	if [ "$mode" = segv ]; then flag=(); want=$((128 + 11)); else flag=(-a); want=$((128 + 6)); fi
	id=crash-$mode
	ub_record "$id" -- crash -t 3 -n 60000000 "${flag[@]}"
	ub_status_ok "robust/$id-status" "$id" "$want"
	if ! grep -q "crash: thread 0 crashing" "$WORK/$id.out"; then
		fail "robust/$id-stdout" "the program's last line is missing from its stdout"
	fi
	[ "$have_ana" = 1 ] || continue
	if [ ! -s "$WORK/$id.zst" ]; then
		fail "robust/$id-trace" "no trace left at $WORK/$id.zst"
		continue
	fi
	ub_complete "robust/$id-incomplete" "$id" no
	ub_dump_to "$WORK/$id.dump" "$id"
	nrec=$(wc -l <"$WORK/$id.dump")
	nsamp=$(grep -c ' sample ' "$WORK/$id.dump" || true)
	if [ "$UB_RC" -ne 0 ] && [ "$UB_RC" -ne 2 ]; then
		fail "robust/$id-records" "commanalyze dump exited $UB_RC: $(head -c 200 "$WORK/$id.dump.err")"
	elif [ "$nrec" -gt 0 ] && [ "$nsamp" -gt 0 ]; then
		pass "robust/$id-records"
	else
		fail "robust/$id-records" "want records (samples among them) in the incomplete trace: $nrec records, $nsamp samples; dump status $UB_RC"
	fi
done

# ---- --no-alloc ----------------------------------------------------------------
ub_record noalloc --no-alloc -- objects -t 2 -n 20000000 -k malloc
ub_status_ok robust/no-alloc-status noalloc 0
if [ "$have_ana" = 1 ]; then
	ub_dump_to "$WORK/noalloc.dump" noalloc
	na=$(grep -c ' alloc ' "$WORK/noalloc.dump" || true)
	ns=$(grep -c ' sample ' "$WORK/noalloc.dump" || true)
	if [ "$UB_RC" -ne 0 ]; then
		fail robust/no-alloc "commanalyze dump exited $UB_RC"
	elif [ "$na" -ne 0 ]; then
		fail robust/no-alloc "want no alloc records with --no-alloc, found $na: $(grep -m 2 ' alloc ' "$WORK/noalloc.dump" | tr '\n' '|')"
	elif [ "$ns" -eq 0 ]; then
		fail robust/no-alloc "no alloc records, but no samples either: nothing was recorded"
	else
		pass robust/no-alloc
	fi
fi

# ---- output that cannot be written ---------------------------------------------
UB_RC=0
"$COMMREC" -q -o "$WORK/no/such/dir/trace.zst" -- /bin/true >"$WORK/unw.out" 2>"$WORK/unw.err" || UB_RC=$?
ub_status_ok robust/unwritable-output unw 125

done_tests
