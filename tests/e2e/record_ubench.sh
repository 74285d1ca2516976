#!/usr/bin/env bash
# End-to-end: record every microbenchmark (tests/ubench, README.md there) with
# the soft sampler at the default period, 2 and 4 threads, and compare the
# trace with what the benchmark printed:
#   ID/status       commrec exits 0 (the benchmark's status)
#   ID/zstd         the trace is a valid zstd stream (zstd -t)
#   ID/complete     commanalyze info: complete: yes
#   ID/threads      a thread_start for the main thread and every benchmark thread
#   ID/samples      sample records for every benchmark thread
#   ID/own-objects  every benchmark thread has >= 1 sample whose data address
#                   lies in its private object and >= 1 in the shared object(s)
#                   it uses (p2p: its pair's line)
#   ID/attribution  >= 80% of the samples that land in any printed object land
#                   in an object of the sampling thread (a sample of thread 1
#                   in thread 0's private line is a wrong address)
#   ID/kinds        >= 80% of those have the access kind the program does there
#   write_volume-t2/wp-arm, wp-hit: watchpoints armed, >= 1 hit on the shared line.
#                   Where commrec's probe finds that watchpoints do not fire
#                   (some VMs): wp-off (the recording armed none and says
#                   watchpoint_probe=no-fire), wp-arm on a recording with
#                   --force-watchpoints, and wp-hit is skipped with the probe's
#                   reason.  What the analysis does with hits is covered
#                   without them: unit/ana_comdetective (hand-built traces
#                   with WP_HIT records), unit/ana_fullmodels (emulate).
#   objects-KIND/alloc, free: the shared block's alloc record (address, size,
#                   kind, old= for realloc) and its free/munmap record
# Why these bounds: samples also land on the stack, libc and the runtime, so
# nothing is asserted about samples outside the printed objects.  Inside
# them the benchmark's own accesses are the only ones, so a wrong address
# shows up as a sample on another thread's object.  Per-thread presence needs
# sampling luck: each thread runs ~0.3 s of CPU (~300 samples taken; on this
# VM about half decode to an address, 30-90 per object per thread), and a
# case whose only failures are luck (samples, own-objects, wp-hit) is
# recorded once more, twice as long, before it fails.  The write_volume-t2
# run saw 8-11 watchpoint hits on the shared line.
# Thread mapping: by tid (commanalyze info), since the recorder numbers
# threads in the order they start running, not the order of pthread_create.
. "$(dirname "$0")/../lib.sh"
. "$UBENCH_SRC/ubrec.sh"

if ! ub_have_recorder; then
	skip record_ubench "no recorder: $COMMREC and $CT_BUILD/libcommrec.so needed"
	done_tests
fi
if ! ub_build write_volume false_sharing read_write p2p objects; then
	fail record_ubench/build "cannot build the microbenchmarks (make build/ubench/...)"
	done_tests
fi
have_ana=1
ub_have_analyzer || have_ana=0
ub_wp_probe
[ "$have_ana" = 1 ] || skip record_ubench/analysis "no analyzer at $COMMANALYZE: trace contents not checked"

# run_case ID EXTRA_CHECK PROG ARGS...: record, then check (see above).
# EXTRA_CHECK: none | wp | alloc.  -n in ARGS is doubled on the retry.
run_case() {
	local id=$1 extra=$2; shift 2
	local attempt res
	for attempt in 1 2; do
		res=$WORK/$id.res
		check_once "$id" "$extra" "$@" >"$res"
		if [ "$attempt" = 1 ] && grep -q '^FAIL ' "$res" &&
		   ! grep '^FAIL ' "$res" | grep -qvE '/(samples|own-objects|wp-hit):'; then
			echo "# $id: sampling-dependent failure, recording again twice as long:"
			grep '^FAIL ' "$res" | sed 's/^/#   first attempt: /'
			local args=() prev='' a
			for a in "$@"; do
				if [ "$prev" = "-n" ]; then a=$((a * 2)); fi
				args+=("$a"); prev=$a
			done
			set -- "${args[@]}"
			continue
		fi
		break
	done
	cat "$res"
	grep -q '^FAIL ' "$res" && ct_failed=1
	return 0
}

check_once() {
	local id=$1 extra=$2; shift 2
	ub_record "$id" -- "$@"
	ub_status_ok "$id/status" "$id" 0
	if [ ! -s "$WORK/$id.zst" ]; then
		fail "$id/zstd" "no trace file $WORK/$id.zst"
		return
	fi
	if zstd -q -t "$WORK/$id.zst" 2>"$WORK/$id.zerr"; then
		pass "$id/zstd"
	else
		fail "$id/zstd" "zstd -t: $(head -c 300 "$WORK/$id.zerr")"
	fi
	[ "$have_ana" = 1 ] || return
	ub_complete "$id/complete" "$id" yes
	ub_dump_to "$WORK/$id.threads" "$id" --type thread_start
	ub_dump_to "$WORK/$id.samples" "$id" --type sample
	if [ "$UB_RC" -ne 0 ]; then
		fail "$id/dump" "commanalyze dump --type sample exited $UB_RC: $(head -c 300 "$WORK/$id.samples.err")"
		return
	fi
	python3 "$UBTRACE" --info "$WORK/$id.info" threads "$id" "$WORK/$id.out" "$WORK/$id.threads"
	python3 "$UBTRACE" --info "$WORK/$id.info" samples "$id" "$WORK/$id.out" "$WORK/$id.samples"
	case $extra in
	wp)
		check_watchpoints "$id" "$@" ;;
	alloc)
		{ ub_dump "$id" --type alloc; ub_dump "$id" --type free; } >"$WORK/$id.alloc" 2>&1
		python3 "$UBTRACE" alloc "$id" "$WORK/$id.out" "$WORK/$id.alloc" ;;
	esac
}

# check_watchpoints ID PROG ARGS: arms and hits (see the head of this file)
check_watchpoints() {
	local id=$1; shift
	if [ "$UB_WP" = fires ]; then
		{ ub_dump "$id" --type wp_arm; ub_dump "$id" --type wp_hit; } >"$WORK/$id.wp" 2>&1
		python3 "$UBTRACE" wphit "$id" "$WORK/$id.out" "$WORK/$id.wp"
		return
	fi
	local arms
	arms=$(ub_dump "$id" --type wp_arm | wc -l)
	if [ "$UB_WP" = no-fire ] && [ "$arms" -eq 0 ] &&
	   grep -q '^ *watchpoint_probe=no-fire$' "$WORK/$id.info" &&
	   grep -q '^ *watchpoints=0$' "$WORK/$id.info"; then
		pass "$id/wp-off"
	elif [ "$UB_WP" = no-fire ]; then
		fail "$id/wp-off" "watchpoints do not fire here, yet $arms wp_arm records, or CONFIG says otherwise: $(grep -E 'watchpoint' "$WORK/$id.info" | tr '\n' ' ')"
	fi
	if [ "$UB_WP" = none ]; then
		skip "$id/wp-arm" "perf breakpoints cannot be opened here ($UB_WP_WHY)"
	else
		ub_record "$id-forced" --force-watchpoints -- "$@"
		{ ub_dump "$id-forced" --type wp_arm; ub_dump "$id-forced" --type wp_hit; } >"$WORK/$id.wp" 2>&1
		python3 "$UBTRACE" wphit "$id" "$WORK/$id-forced.out" "$WORK/$id.wp" | grep -v '/wp-hit'
	fi
	skip "$id/wp-hit" "no watchpoint can fire on this machine, commrec's probe says: $UB_WP_WHY"
}

# About 0.3 s of CPU per thread (tests/ubench/README.md); 4 threads share
# the 2 cores, so they take twice the wall time.
for t in 2 4; do
	extra=none
	[ "$t" = 2 ] && extra=wp
	run_case "write_volume-t$t" "$extra" write_volume -t "$t" -n 120000000 -s 0.5 -S 1
	run_case "false_sharing-t$t" none false_sharing -t "$t" -n 80000000 -f 0.5 -S 1
	run_case "read_write-t$t" none read_write -t "$t" -n 60000000 -r 0.5 -S 1
	run_case "p2p-t$t" none p2p -t "$t" -n 120000000 -s 0.5 -S 1
	run_case "objects-malloc-t$t" alloc objects -t "$t" -n 120000000 -k malloc -S 1
done
for k in global stack calloc realloc memalign aligned_alloc mmap; do
	extra=alloc
	case $k in global|stack) extra=none ;; esac
	run_case "objects-$k-t2" "$extra" objects -t 2 -n 120000000 -k "$k" -S 1
done
done_tests
