#!/usr/bin/env bash
# The exact model on real full traces of the microbenchmarks: properties
# that hold for every schedule, so on any machine, loaded or not (the
# accuracy of the estimators against it is `make accuracy`, tests/accuracy.sh).
# Runs scripts/accuracy.sh --full-only (the benchmarks built with commrec-cc,
# recorded with --sampler inst --full, threads pinned to cpu i mod ncpus,
# analyzed with exact) at NFULL iterations per thread, on the configurations
# where each property says something (objects and false_sharing at f=0.9
# have the same structure as write_volume and false_sharing):
#   unexpected_cells     no transfer between threads the benchmark never lets
#                        communicate (p2p: between pairs; read_write: into the
#                        writer; elsewhere there are no such cells) beyond the
#                        startup ones on the runner's per-thread structs, a
#                        few whatever the length: <= 8
#   in_le_accesses       a transfer into a thread needs an access of that
#                        thread: transfers into a thread <= its shared
#                        accesses + those startup ones (<= 8)
#   directions_alternate lines only written (every access a store or an
#                        atomic): a transfer into a thread makes it the last
#                        writer and the next transfer on that line takes the
#                        line from it, so with two threads per line the two
#                        directions of a pair differ by at most one per line
#                        (the shared line and a runner struct line): <= 4
. "$(dirname "$0")/../lib.sh"

require exact_invariants "$COMMREC" "$COMMANALYZE" "$CT_BUILD/libcommrec-inst.so" python3 gcc
unset COMMTRACE_SPOOL COMMTRACE_PID COMMTRACE_RUNTIME

T=$WORK/acc.tsv
if ! NFULL=${NFULL:-300000} B=$CT_BUILD "$CT_ROOT/scripts/accuracy.sh" --full-only --tsv "$T" \
	--configs write_volume,false_sharing,read_write,p2p \
	>"$WORK/acc.out" 2>"$WORK/acc.err"; then
	fail exact_invariants/run "scripts/accuracy.sh --full-only failed: $(tail -c 600 "$WORK/acc.err" | tr '\n' '|')"
	done_tests
fi
pass exact_invariants/run
cat "$WORK/acc.out"
sed 's/^/INFO /' "$T"

for b in write_volume false_sharing read_write p2p; do
	tsv_within "$T" "exact/$b/unexpected_cells" "$b" exact_unexpected 0 8
	tsv_within "$T" "exact/$b/in_le_accesses" "$b" exact_in_over_accesses -1e12 8
done
for b in write_volume false_sharing p2p; do
	tsv_within "$T" "exact/$b/directions_alternate" "$b" exact_direction_asym 0 4
done
done_tests
