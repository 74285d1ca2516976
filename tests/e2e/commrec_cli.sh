#!/usr/bin/env bash
# commrec's command line: help, version, --list-samplers, option errors and
# their exit statuses, refusing to overwrite, a sampler that does not work
# here, a missing program; and, when the runtime is built, the exit status of
# the program passed through and the spool cleaned up.
. "$(dirname "$0")/../lib.sh"

if [ ! -x "$COMMREC" ]; then
	skip commrec_cli "$COMMREC not built"
	done_tests
fi

cd "$WORK"
# run NAME ARGS...: run commrec, keep status in rc, output in NAME.out/.err
run() {
	local n=$1; shift
	rc=0
	"$COMMREC" "$@" >"$n.out" 2>"$n.err" </dev/null || rc=$?
}
has() { grep -q -- "$2" "$1"; }
lacks() { ! grep -q -- "$2" "$1"; }
absent() { local f; for f; do [ ! -e "$f" ] || return 1; done; }

# ---- help and version -------------------------------------------------------
run help --help
check help_status [ "$rc" -eq 0 ]
ok=1
for opt in --output --force --sampler --period --event --watchpoints --board-size \
           --line-size --no-alloc --full --keep-spool --quiet --verbose --list-samplers \
           --force-watchpoints --throttle --help --version; do
	has help.out "$opt" || { ok=0; echo "--help does not mention $opt"; }
done
check help_mentions_every_option [ "$ok" -eq 1 ]
check help_usage_line has help.out '^Usage: commrec \[options\] \[--\] PROGRAM'
check help_exit_statuses has help.out '125'

run version -V
check version_status [ "$rc" -eq 0 ]
check version_text has version.out "commrec (commtrace) $(cat "$CT_ROOT/VERSION")"
run version_long --version
check version_long_same cmp -s version.out version_long.out

# ---- --list-samplers ----------------------------------------------------------
run list --list-samplers
check list_status [ "$rc" -eq 0 ]
check list_header has list.out '^SAMPLER *WORKS'
ok=1
for s in pebs ibs soft inst auto; do
	grep -Eq "^$s +(yes|no) +[^ ]" list.out || { ok=0; echo "no row for $s"; }
done
check list_rows [ "$ok" -eq 1 ]
check list_watchpoints has list.out '^watchpoints: '
# the probe's verdict in words: registers that fire, or why not and what it means
check list_watchpoints_verdict grep -Eq '^watchpoints: ([1-4] debug registers? per thread \(probe: |do not fire here \(probe: .*: the debug registers do not work on this machine|none here)' list.out
# every "no" row says what to do or why
check list_reasons awk '$2 == "no" && NF < 4 { bad = 1 } END { exit bad }' list.out
# the soft lines say what a soft recording does here, one way: the path at
# the default period and with -c, as the recording's CONFIG soft_path says
# (COMMTRACE_SOFT_TIMER fixes the choice, which the probes make otherwise)
if grep -q '^soft  *yes' list.out && [ -x "$COMMANALYZE" ] && [ -e "$CT_BUILD/libcommrec.so" ]; then
	check list_soft_one_way sh -c "[ \$(grep -c '^soft at the default period: [a-zA-Z]' list.out) -eq 1 ] &&
		[ \$(grep -c '^soft at -c [0-9]*: [a-zA-Z]' list.out) -eq 1 ] && ! grep -q '^soft path' list.out"
	for t in 1 0; do
		want=$([ $t = 1 ] && echo 'POSIX CPU-time timers' || echo 'perf [a-z]*-clock events')
		path=$([ $t = 1 ] && echo timer || echo perf)
		COMMTRACE_SOFT_TIMER=$t "$COMMREC" --list-samplers >list$t.out 2>&1
		COMMTRACE_SOFT_TIMER=$t "$COMMREC" -q -o soft$t.zst -s soft -- /bin/true >/dev/null 2>&1
		"$COMMANALYZE" info soft$t.zst >info$t.out 2>&1
		check "list_soft_timer${t}_says" has list$t.out "^soft at the default period: $want"
		check "list_soft_timer${t}_records" has info$t.out "soft_path=$path\$"
	done
	rm -f soft1.zst soft0.zst
else
	skip list_soft_one_way "the soft sampler does not work here, or the runtime is not built"
fi

# ---- -v: the machine line counts in words ("1 socket", "2 sockets") ---------------
if [ -e "$CT_BUILD/libcommrec.so" ]; then
	run machine -v -f -o machine.zst -- /bin/true
	check machine_line_plurals python3 -c '
import re, sys
m = re.search(r"machine: .*, (\d+) cpus?, (\d+) cores?, (\d+) sockets?, (\d+) numa nodes?, ", open(sys.argv[1]).read())
assert m, "no machine line"
for n, word in zip(m.groups(), ("cpu", "core", "socket", "numa node")):
    want = "%s %s%s" % (n, word, "" if n == "1" else "s")
    assert want + "," in m.group(0), (want, m.group(0))
' machine.err
	rm -f machine.zst
else
	skip machine_line_plurals "the runtime is not built"
fi

# ---- option errors: status 125 and a message ------------------------------------
opt_error() {  # NAME EXPECTED-MESSAGE ARGS...
	local n=$1 msg=$2; shift 2
	run "$n" "$@"
	if [ "$rc" -ne 125 ]; then
		fail "$n" "status $rc, expected 125"
	elif ! has "$n.err" "$msg"; then
		fail "$n" "message: $(head -c 300 "$n.err")"
	elif ! absent trace.zst trace.zst.spool; then
		fail "$n" "left a trace or a spool behind"
	else
		pass "$n"
	fi
}
opt_error bad_option "unknown option '--no-such-option'" --no-such-option /bin/true
opt_error bad_short_option "unknown option '-Z'" -Z /bin/true
opt_error bad_option_hint "Try 'commrec --help'" --no-such-option /bin/true
opt_error missing_value "needs a value" -c
opt_error no_program "no program to record" -v
opt_error bad_sampler "unknown sampler 'magic'" -s magic /bin/true
opt_error bad_period "invalid period" -c 0 /bin/true
opt_error bad_period_text "invalid period" --period 12x /bin/true
opt_error bad_watchpoints "invalid number of watchpoints" -w 5 /bin/true
opt_error bad_throttle "invalid --throttle" --throttle 101 /bin/true
opt_error bad_board "invalid board size" -b 0 /bin/true
opt_error bad_line_size "invalid line size" --line-size 48 /bin/true
opt_error full_needs_inst "needs --sampler inst" --full /bin/true
opt_error event_needs_pebs "pebs sampler" -s soft -e MEM_INST_RETIRED.ALL_LOADS /bin/true
opt_error bad_event "invalid event" -s pebs -e 'a,b' /bin/true
opt_error owner_line_size "lines of at most 128 bytes" -s inst --owner-window 16 --line-size 256 /bin/true

# options after the program name belong to the program
run after_program -o after.zst /bin/true --no-such-option
check options_after_program_not_parsed lacks after_program.err "unknown option"
rm -rf after.zst after.zst.spool

# ---- refusing to overwrite -------------------------------------------------------
echo precious >existing.zst
run overwrite -o existing.zst -- /bin/true
check overwrite_refused_status [ "$rc" -eq 125 ]
check overwrite_refused_message has overwrite.err "existing.zst exists: use -f"
check overwrite_file_kept grep -qx precious existing.zst

mkdir -p leftover.zst.spool
run leftover_spool -o leftover.zst -- /bin/true
check leftover_spool_refused [ "$rc" -eq 125 ]
check leftover_spool_message has leftover_spool.err "leftover.zst.spool exists"
rmdir leftover.zst.spool

mkdir adir
run output_dir -o adir -- /bin/true
check output_is_directory [ "$rc" -eq 125 ]

# ---- a sampler that does not work here --------------------------------------------
pebs_here=0
if grep -q '^pebs *yes' list.out; then
	pebs_here=1
elif [ -d /sys/bus/event_source/devices/cpu ] && grep -q GenuineIntel /proc/cpuinfo; then
	pebs_here=1
fi
if [ "$pebs_here" -eq 1 ]; then
	skip pebs_refused "this machine has an Intel core PMU (/sys/bus/event_source/devices/cpu): pebs may work"
else
	run pebs -o pebs.zst -s pebs -- sh -c 'touch ran'
	check pebs_refused_status [ "$rc" -eq 125 ]
	check pebs_refused_names_soft has pebs.err "sampler pebs does not work here:.*--sampler soft"
	check pebs_refused_did_not_run [ ! -e ran ]
	check pebs_refused_no_output absent pebs.zst pebs.zst.spool
fi
if grep -q '^ibs *yes' list.out; then
	skip ibs_refused "ibs works on this machine"
else
	run ibs -o ibs.zst -s ibs -- sh -c 'touch ran'
	check ibs_refused_status [ "$rc" -eq 125 ]
	check ibs_refused_names_soft has ibs.err "--sampler soft"
	check ibs_refused_did_not_run [ ! -e ran ]
fi

# ---- the program: not found, not executable ------------------------------------------
run notfound -o nf.zst -- ./no-such-program
check missing_program_status [ "$rc" -eq 127 ]
check missing_program_message has notfound.err "no-such-program"
run notfound_path -o nf.zst -- no-such-program-in-path-xyz
check missing_program_in_path_status [ "$rc" -eq 127 ]
check missing_program_in_path_message has notfound_path.err "command not found"
check missing_program_no_spool absent nf.zst nf.zst.spool
printf 'not a program\n' >plain.txt
run noexec -o ne.zst -- ./plain.txt
check not_executable_status [ "$rc" -eq 126 ]

# ---- with the runtime: status passthrough, spool removed ---------------------------------
if [ ! -f "$CT_BUILD/libcommrec.so" ]; then
	skip runs "$CT_BUILD/libcommrec.so not built"
	done_tests
fi
if ! grep -q '^auto *yes' list.out; then
	skip runs "no sampler works on this machine"
	done_tests
fi
run exit3 -q -o exit3.zst -- sh -c 'exit 3'
check exit_status_passed_through [ "$rc" -eq 3 ]
check exit_trace_written [ -s exit3.zst ]
check spool_removed [ ! -e exit3.zst.spool ]
check quiet_is_quiet [ ! -s exit3.err ]

run ok -o ok.zst -- /bin/true
check ok_status [ "$rc" -eq 0 ]
check ok_last_line has ok.err '^commrec: wrote ok.zst ([0-9]* threads*, [0-9]* samples, [0-9]* watchpoint hits.*, [0-9]* KiB)$'
if command -v zstd >/dev/null; then
	check ok_trace_is_zstd zstd -q -t ok.zst
else
	skip ok_trace_is_zstd "zstd not installed"
fi

run force -f -o ok.zst -- /bin/true
check force_overwrites [ "$rc" -eq 0 ]

# a period below the floor is raised to it, with a message; the probe's
# verdict is in the trace and, where watchpoints do not fire, said once
run floor -f -o floor.zst -c 1 -- /bin/true
check floor_status [ "$rc" -eq 0 ]
if grep -aq '^sampler=soft$' floor.zst; then
	check floor_message has floor.err "-c 1 is below the soft sampler's shortest period, 100 us"
	check floor_config grep -aq '^period=100$' floor.zst
	check floor_requested grep -aq '^period_requested=1$' floor.zst
fi
check config_probe grep -aEq '^watchpoint_probe=(fires|no-fire|no-open)$' floor.zst
if grep -q '^watchpoints: do not fire' list.out; then
	check nofire_said_once [ "$(grep -c 'watchpoints do not fire on this machine' floor.err)" -eq 1 ]
	check nofire_not_armed grep -aq '^watchpoints=0$' floor.zst
	run forced -f -o forced.zst --force-watchpoints -- /bin/true
	check forced_armed grep -aEq '^watchpoints=[1-4]$' forced.zst
	check forced_recorded grep -aq '^watchpoints_forced=1$' forced.zst
fi

run keep --keep-spool -o keep.zst -- /bin/true
check keep_spool_kept [ -f keep.zst.spool/meta.zst ]

check exit_summary grep -aq 'exit_status=3$' exit3.zst
check exit_summary_complete grep -aq '^recording=complete$' exit3.zst
# metadata commrec writes (sections are uncompressed skippable frames)
check meta_config_sampler grep -aEq '[^_]sampler=(pebs|ibs|soft)$' ok.zst
check meta_config_period_unit grep -aEq '^period_unit=(us-cpu|events)$' ok.zst
check meta_machine_cpu0 grep -aEq '^cpu\.0=core -?[0-9]+ socket -?[0-9]+$' ok.zst
check meta_maps_build_id grep -aEq '^[0-9a-f]+-[0-9a-f]+ r-xp [0-9a-f]+ [0-9a-f]{16,} /' ok.zst

run killed -o killed.zst -- sh -c 'kill -TERM $$'
check killed_status_128_plus_n [ "$rc" -eq 143 ]
check killed_message has killed.err "killed by signal 15"
check killed_trace_written [ -s killed.zst ]
check killed_trace_incomplete grep -aq '^recording=incomplete$' killed.zst
check killed_trace_signal grep -aq '^exit_signal=15$' killed.zst

run crash -o crash.zst -- sh -c 'kill -SEGV $$'
check crash_status [ "$rc" -eq 139 ]
check crash_trace_incomplete grep -aq '^recording=incomplete$' crash.zst

# a text file without #! runs with /bin/sh, as in a shell
printf 'exit 4\n' >script.sh
chmod +x script.sh
run script -o script.zst -- ./script.sh
check script_without_shebang [ "$rc" -eq 4 ]

# a signal sent to commrec alone is passed on to the program
rc=0
"$COMMREC" -o fwd.zst -- sleep 30 >fwd.out 2>fwd.err </dev/null &
pid=$!
for _ in $(seq 100); do
	ls fwd.zst.spool/thread-* >/dev/null 2>&1 && break
	sleep 0.1
done
kill -TERM "$pid"
wait "$pid" || rc=$?
check forward_sigterm_status [ "$rc" -eq 143 ]
check forward_sigterm_trace grep -aq '^exit_signal=15$' fwd.zst

# the runtime cannot load into a static program: 125, no trace, a reason
if printf 'int main(void) { return 0; }\n' >static.c &&
   ${CC:-cc} -static -o static static.c 2>/dev/null; then
	run static -o static.zst -- ./static
	check static_status [ "$rc" -eq 125 ]
	check static_message has static.err "statically linked"
	check static_no_trace absent static.zst static.zst.spool
else
	skip static "cannot link a static program here (no static libc)"
fi

done_tests
