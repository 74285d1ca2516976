# Shared helpers for end-to-end tests (tests/e2e/*.sh); source it.
# Output follows tests/run.sh: PASS/FAIL/SKIP lines, one per case.
set -u
CT_ROOT=${CT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
CT_BUILD=${CT_BUILD:-$CT_ROOT/build}
COMMREC="$CT_BUILD/commrec"
COMMANALYZE="$CT_BUILD/commanalyze"
UBENCH="$CT_BUILD/ubench"          # the microbenchmarks (make build/ubench/NAME)
UBENCH_SRC="$CT_ROOT/tests/ubench"  # their sources and helpers (ubrec.sh, ubtrace.py)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ct-e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ct_failed=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: ${2:-}"; ct_failed=1; }
skip() { echo "SKIP $1: $2"; }
# check NAME CONDITION-COMMAND...: PASS if the command succeeds.
check() { local n=$1; shift; if "$@"; then pass "$n"; else fail "$n" "$*"; fi; }
done_tests() { exit "$ct_failed"; }
# require NAME FILE-OR-COMMAND...: SKIP NAME and end the script unless every
# path exists (names with a slash) and every command is installed
require() {
	local n=$1 x; shift
	for x; do
		case $x in
		*/*) [ -e "$x" ] || { skip "$n" "build $x first (make)"; exit 0; } ;;
		*) command -v "$x" >/dev/null || { skip "$n" "needs $x"; exit 0; } ;;
		esac
	done
}

# tsv_val FILE ID METRIC: the value of the line "ID<TAB>METRIC<TAB>VALUE"
tsv_val() { awk -F'\t' -v i="$2" -v m="$3" '$1 == i && $2 == m { print $3 }' "$1"; }
# tsv_within FILE NAME ID METRIC LO HI: PASS NAME if LO <= value <= HI
tsv_within() {
	local f=$1 n=$2 v
	v=$(tsv_val "$f" "$3" "$4")
	if [ -z "$v" ]; then
		fail "$n" "no metric $3 $4 in the table"
	elif python3 -c "import sys; v=float('$v'); sys.exit(0 if $5 <= v <= $6 else 1)"; then
		pass "$n"
	else
		fail "$n" "$3 $4 = $v, want [$5, $6]"
	fi
}
