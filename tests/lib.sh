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
