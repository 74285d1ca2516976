#!/usr/bin/env bash
# End-to-end: the faults of issue 17, each as a case that fails without the
# fix (checked against the build before it) and passes with it.
#   symlink-tmp     a symbolic link planted at OUT.tmp: the file it points to
#                   is not written; OUT is a trace
#   spool-links     links planted at a manual run's spool files (thread file,
#                   maps-PID.txt.tmp): the files they point to are not written
#   fifo-output     -f -o FIFO: refused (status 125), the FIFO stays
#   device-output   -f -o DEVICE (a character device made with mknod, root
#                   only): refused, the device stays
#   ulimit-f        a file size limit between the largest spool file and the
#                   trace: commrec exits 125 with a message (not killed by
#                   SIGXFSZ), the program ran to its end, the spool is kept,
#                   no temporary file is left
#   fifo-input      commanalyze info FIFO (no writer): status 2 at once with
#                   a message naming the FIFO, no hang
. "$(dirname "$0")/../lib.sh"
. "$UBENCH/ubrec.sh"
ulimit -c 0

if ! ub_have_recorder; then
	skip record_faults "no recorder: $COMMREC and $CT_BUILD/libcommrec.so needed"
	# ---- ulimit-f: the trace does not fit the file size limit ---------------------------
if ub_build write_volume; then
	wv=(write_volume -t 2 -n 20000000 -S 7)
	mkdir "$WORK/fs"
	"$COMMREC" -q --keep-spool -o "$WORK/fs/probe.zst" -s soft -- "$UBENCH/${wv[@]}" >/dev/null 2>&1
	biggest=$(find "$WORK/fs/probe.zst.spool" -type f -printf '%s\n' | sort -n | tail -n 1)
	total=$(stat -c %s "$WORK/fs/probe.zst" 2>/dev/null || echo 0)
	# KiB units (ulimit -f): 1 KiB above the largest spool file, if the trace is larger still
	limit=$(( (${biggest:-0} + 1023) / 1024 + 1 ))
	if [ -z "$biggest" ] || [ $((limit * 1024)) -ge "$total" ]; then
		skip faults/ulimit-f "no file size limit fits between the spool files (largest $biggest bytes) and the trace ($total bytes)"
	else
		rc=0
		(ulimit -f "$limit"; exec "$COMMREC" -q -o "$WORK/fs/t.zst" -s soft -- "$UBENCH/${wv[@]}") \
			>"$WORK/fs.out" 2>"$WORK/fs.err" || rc=$?
		if [ "$rc" -eq 125 ] && grep -q "File too large" "$WORK/fs.err"; then
			pass faults/ulimit-f-status
		else
			fail faults/ulimit-f-status "status $rc (want 125, and a message; 153 = killed by SIGXFSZ): $(tail -n 2 "$WORK/fs.err" | tr '\n' '|')"
		fi
		check faults/ulimit-f-program grep -q '^done ' "$WORK/fs.out"
		check faults/ulimit-f-spool-kept test -s "$WORK/fs/t.zst.spool/meta.zst"
		if ls "$WORK/fs" | grep -q '\.tmp$'; then
			fail faults/ulimit-f-no-tmp "temporary files left: $(ls "$WORK/fs" | tr '\n' ' ')"
		else
			pass faults/ulimit-f-no-tmp
		fi
	fi
else
	fail faults/ulimit-f "cannot build tests/ubench/write_volume"
fi

# ---- fifo-input: commanalyze on a FIFO nobody writes to ------------------------
if [ -x "$COMMANALYZE" ]; then
	mkfifo "$WORK/in.fifo"
	rc=0
	timeout -k 5 20 "$COMMANALYZE" info "$WORK/in.fifo" >"$WORK/fifo-in.out" 2>"$WORK/fifo-in.err" || rc=$?
	if [ "$rc" -eq 2 ] && grep -q "in.fifo: a FIFO" "$WORK/fifo-in.err"; then
		pass faults/fifo-input
	else
		fail faults/fifo-input "status $rc (want 2; 124: it hung), stderr: $(head -c 200 "$WORK/fifo-in.err")"
	fi
else
	skip faults/fifo-input "no analyzer at $COMMANALYZE"
fi

done_tests
fi

# same_text NAME FILE WANT: FILE still holds exactly WANT (and one line).
same_text() {
	local name=$1 file=$2 want=$3
	if [ "$(tr -d '\0' <"$file" 2>/dev/null)" = "$want" ]; then
		pass "$name"
	else
		fail "$name" "$file was written: now '$(head -c 80 "$file" 2>/dev/null | tr -c '[:print:]' '?')'"
	fi
}

# is_trace FILE: a regular file that commanalyze (or at least its magic) accepts.
is_trace() {
	[ -f "$1" ] && [ ! -L "$1" ] || return 1
	if [ -x "$COMMANALYZE" ]; then
		"$COMMANALYZE" info "$1" >/dev/null 2>&1
	else
		[ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' ')" = "502a4d18" ]
	fi
}

# ---- symlink-tmp: OUT.tmp -> victim ---------------------------------------------
victim=$WORK/victim
echo precious >"$victim"
chmod 600 "$victim"
out=$WORK/sym.zst
ln -s "$victim" "$out.tmp"
rc=0
"$COMMREC" -q -o "$out" -s soft -- /bin/true >"$WORK/sym.err" 2>&1 || rc=$?
same_text faults/symlink-tmp "$victim" precious
if [ "$rc" -eq 0 ] && is_trace "$out"; then
	pass faults/symlink-tmp-trace
else
	fail faults/symlink-tmp-trace "status $rc, want 0 and a trace at $out: $(tail -n 3 "$WORK/sym.err" | tr '\n' '|')"
fi
if [ -L "$out.tmp" ] && ! ls "$WORK" | grep -v '^sym\.zst\.tmp$' | grep -q '\.tmp$'; then
	pass faults/symlink-tmp-leftover
else
	fail faults/symlink-tmp-leftover "want the planted link left alone and no other .tmp file: $(ls "$WORK" | tr '\n' ' ')"
fi

# ---- spool-links: a manual run, links at the files the runtime creates -------
# exec keeps the shell's pid: the program's maps file is maps-$$.txt.
spool=$WORK/manual.spool
mkdir -m 700 "$spool"
echo precious >"$WORK/victim-maps"
echo precious >"$WORK/victim-thread"
sh -c 'ln -s "$1/victim-maps" "$2/maps-$$.txt.tmp"; ln -s "$1/victim-thread" "$2/thread-000000.zst";
       exec env LD_PRELOAD="$3" COMMTRACE_SPOOL="$2" COMMTRACE_SAMPLER=soft COMMTRACE_VERBOSE=0 /bin/true' \
	sh "$WORK" "$spool" "$CT_BUILD/libcommrec.so" >"$WORK/manual.err" 2>&1
same_text faults/spool-link-maps "$WORK/victim-maps" precious
same_text faults/spool-link-thread "$WORK/victim-thread" precious

# ---- fifo-output: -f -o FIFO ------------------------------------------------------
mkfifo "$WORK/fifo.zst"
rc=0
timeout -k 5 30 "$COMMREC" -q -f -o "$WORK/fifo.zst" -s soft -- /bin/true >"$WORK/fifo.err" 2>&1 || rc=$?
if [ "$rc" -eq 125 ] && [ -p "$WORK/fifo.zst" ]; then
	pass faults/fifo-output
else
	fail faults/fifo-output "status $rc (want 125), $(stat -c %F "$WORK/fifo.zst" 2>&1) (want fifo): $(tail -n 2 "$WORK/fifo.err" | tr '\n' '|')"
fi

# ---- device-output: -f -o DEVICE (a null device of our own) ------------------------
if [ "$(id -u)" -ne 0 ]; then
	skip faults/device-output "mknod needs root (the FIFO case covers the same check)"
elif ! mknod "$WORK/null" c 1 3 2>/dev/null; then
	skip faults/device-output "mknod is not allowed here (the FIFO case covers the same check)"
else
	rc=0
	"$COMMREC" -q -f -o "$WORK/null" -s soft -- /bin/true >"$WORK/dev.err" 2>&1 || rc=$?
	if [ "$rc" -eq 125 ] && [ -c "$WORK/null" ]; then
		pass faults/device-output
	else
		fail faults/device-output "status $rc (want 125), $(stat -c %F "$WORK/null" 2>&1) (want character special file)"
	fi
fi

# ---- ulimit-f: the trace does not fit the file size limit ---------------------------
if ub_build write_volume; then
	wv=(write_volume -t 2 -n 20000000 -S 7)
	mkdir "$WORK/fs"
	"$COMMREC" -q --keep-spool -o "$WORK/fs/probe.zst" -s soft -- "$UBENCH/${wv[@]}" >/dev/null 2>&1
	biggest=$(find "$WORK/fs/probe.zst.spool" -type f -printf '%s\n' | sort -n | tail -n 1)
	total=$(stat -c %s "$WORK/fs/probe.zst" 2>/dev/null || echo 0)
	# KiB units (ulimit -f): 1 KiB above the largest spool file, if the trace is larger still
	limit=$(( (${biggest:-0} + 1023) / 1024 + 1 ))
	if [ -z "$biggest" ] || [ $((limit * 1024)) -ge "$total" ]; then
		skip faults/ulimit-f "no file size limit fits between the spool files (largest $biggest bytes) and the trace ($total bytes)"
	else
		rc=0
		(ulimit -f "$limit"; exec "$COMMREC" -q -o "$WORK/fs/t.zst" -s soft -- "$UBENCH/${wv[@]}") \
			>"$WORK/fs.out" 2>"$WORK/fs.err" || rc=$?
		if [ "$rc" -eq 125 ] && grep -q "File too large" "$WORK/fs.err"; then
			pass faults/ulimit-f-status
		else
			fail faults/ulimit-f-status "status $rc (want 125, and a message; 153 = killed by SIGXFSZ): $(tail -n 2 "$WORK/fs.err" | tr '\n' '|')"
		fi
		check faults/ulimit-f-program grep -q '^done ' "$WORK/fs.out"
		check faults/ulimit-f-spool-kept test -s "$WORK/fs/t.zst.spool/meta.zst"
		if ls "$WORK/fs" | grep -q '\.tmp$'; then
			fail faults/ulimit-f-no-tmp "temporary files left: $(ls "$WORK/fs" | tr '\n' ' ')"
		else
			pass faults/ulimit-f-no-tmp
		fi
	fi
else
	fail faults/ulimit-f "cannot build tests/ubench/write_volume"
fi

# ---- fifo-input: commanalyze on a FIFO nobody writes to ------------------------
if [ -x "$COMMANALYZE" ]; then
	mkfifo "$WORK/in.fifo"
	rc=0
	timeout -k 5 20 "$COMMANALYZE" info "$WORK/in.fifo" >"$WORK/fifo-in.out" 2>"$WORK/fifo-in.err" || rc=$?
	if [ "$rc" -eq 2 ] && grep -q "in.fifo: a FIFO" "$WORK/fifo-in.err"; then
		pass faults/fifo-input
	else
		fail faults/fifo-input "status $rc (want 2; 124: it hung), stderr: $(head -c 200 "$WORK/fifo-in.err")"
	fi
else
	skip faults/fifo-input "no analyzer at $COMMANALYZE"
fi

done_tests
