#!/usr/bin/env bash
# make demo: record a bundled microbenchmark with known communication (four
# threads in pairs 0-1 and 2-3, plus a false-sharing run), then analyze it.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
out="$B/demo"
mkdir -p "$out"
rec="$B/commrec"
ana="$B/commanalyze"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "What can record here"
"$rec" --list-samplers

say "Recording: tests/ubench/p2p -t 4 (threads 0-1 and 2-3 share one line per pair)"
"$rec" -f -o "$out/p2p.zst" -- tests/ubench/p2p -t 4 -n 4000000 -s 0.5 >/dev/null

say "Report"
"$ana" "$out/p2p.zst"

say "Thread matrix (all sharing)"
"$ana" matrix "$out/p2p.zst"
"$ana" matrix "$out/p2p.zst" --format svg -o "$out/p2p.svg"

say "Recording: tests/ubench/false_sharing -t 2 -f 0.9 (mostly false sharing)"
"$rec" -f -o "$out/fs.zst" -- tests/ubench/false_sharing -t 2 -n 4000000 -f 0.9 >/dev/null
"$ana" "$out/fs.zst"
"$ana" matrix "$out/fs.zst" --kind false --format svg -o "$out/fs-false.svg"

if ls datasets/*.zst >/dev/null 2>&1; then
	for t in datasets/*.zst; do
		say "Bundled trace $t (recorded elsewhere, analyzed here)"
		"$ana" info "$t" | head -n 20
	done
fi

say "Files"
ls -l "$out"
echo "Open $out/p2p.svg and $out/fs-false.svg in a browser to see the heatmaps."
