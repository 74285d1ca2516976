#!/usr/bin/env bash
# Every model's outputs on the bundled datasets and on traces of the test
# generator (ana_mktrace) are the ones the replay gave before it was made
# faster (tests/e2e/replay_models.sha256: report, matrix CSV and directed
# matrix CSV, exit status, per trace and model, made by the replay of
# commit 09f6b96), and the same with 1 and 2 decoding threads (-j).
# REPLAY_MODELS_WRITE=1 prints the sums instead (to regenerate the file
# when a model's output changes on purpose, with the reason in the commit).
. "$(dirname "$0")/../lib.sh"

MK="$CT_BUILD/tests/ana_mktrace"
SUMS="$(dirname "$0")/replay_models.sha256"
if [ ! -x "$COMMANALYZE" ] || [ ! -x "$MK" ]; then
	skip replay_models "build first ($COMMANALYZE, $MK)"
	exit 0
fi
MODELS="comdetective window exact signature emulate"

# name:generator arguments (the datasets are copied as they are)
gen=(basic:basic cpus:cpus nofire:nofire armsnohit:armsnohit fullwp0:fullwp0
     big:"big 200000" threads:"threads 300")
mkdir -p "$WORK/t"
for g in "${gen[@]}"; do
	# shellcheck disable=SC2086
	"$MK" "$WORK/t/${g%%:*}.zst" ${g#*:} >/dev/null 2>&1 || fail "mktrace/${g%%:*}" "ana_mktrace ${g#*:}"
done
cp "$CT_ROOT"/datasets/*.zst "$WORK/t/"

# outputs J TRACE MODEL: report, matrix, directed matrix, each one's status
# (run from the trace's directory: the outputs name it as given)
outputs() {
	(
		cd "$WORK/t" || exit 1
		"$COMMANALYZE" report "$2" --model "$3" -j "$1" 2>&1; echo "status $?"
		"$COMMANALYZE" matrix "$2" --model "$3" --format csv -j "$1" 2>&1; echo "status $?"
		"$COMMANALYZE" matrix "$2" --model "$3" --format csv --directed -j "$1" 2>&1; echo "status $?"
	)
}

for t in "$WORK"/t/*.zst; do
	n=$(basename "$t")
	for m in $MODELS; do
		outputs 1 "$n" "$m" >"$WORK/o1"
		sum=$(sha256sum <"$WORK/o1" | cut -d' ' -f1)
		if [ -n "${REPLAY_MODELS_WRITE:-}" ]; then
			echo "$n $m $sum"
			continue
		fi
		want=$(awk -v n="$n" -v m="$m" '$1 == n && $2 == m { print $3 }' "$SUMS")
		check "$n/$m/as_before" test "$sum" = "$want"
		outputs 2 "$n" "$m" >"$WORK/o2"
		check "$n/$m/j1_j2" cmp -s "$WORK/o1" "$WORK/o2"
	done
done
done_tests
