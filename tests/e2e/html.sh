#!/usr/bin/env bash
# commanalyze html: one self-contained page, loaded in headless Chromium.
# A probe page frames it and writes what the browser laid out (the heatmap
# pictures with their size and cells, the report's headline, the objects
# and lines tables) into its own DOM, which --dump-dom prints.  Also: no
# reference to anything outside the file, and a screenshot.
. "$(dirname "$0")/../lib.sh"

A="$COMMANALYZE"
MK="$CT_BUILD/tests/ana_mktrace"
P2P="$CT_ROOT/datasets/p2p-4t.zst"
require html "$A" "$MK" "$P2P"
BROWSER=$(command -v chromium || command -v chromium-browser || true)

# ---- the page --------------------------------------------------------------
"$A" html "$P2P" -o "$WORK/p.html" 2>"$WORK/err"
check html_exit test $? -eq 0
check html_doctype grep -q '^<!DOCTYPE html>' "$WORK/p.html"
# nothing from elsewhere: no scripts, stylesheets, images, fonts or links out
# (the SVG namespace name is not a reference)
check html_self_contained bash -c "! grep -Eiq '<script|<link|<img|<iframe|@import|src=|url\\((https?:|//)|href=\"(https?:|//)' '$WORK/p.html'"
check html_only_svg_ns bash -c "test \"\$(grep -Eo 'https?://[^\"]*' '$WORK/p.html' | sort -u)\" = 'http://www.w3.org/2000/svg'"
check html_six_svgs test "$(grep -c '^<svg ' "$WORK/p.html")" -eq 6
# each picture's gradient has its own id
check html_unique_ids test "$(grep -o 'id="ramp-[0-9]*"' "$WORK/p.html" | sort -u | wc -l)" -eq 6
"$A" html "$P2P" --color-scale log -o "$WORK/log.html" 2>/dev/null &&
	check html_log_scale grep -q 'one log colour scale' "$WORK/log.html"
"$A" html "$P2P" --color-scale cubic -o "$WORK/x.html" 2>/dev/null
check html_usage test $? -eq 1

# a trace with a phase marker (ana_mktrace basic: "phase 2"): the timeline
# by phase, a series per communicating pair (T0-T1 before it, T0-T2 after);
# none without phase markers
"$MK" "$WORK/b.zst" basic && "$A" html "$WORK/b.zst" -o "$WORK/b.html" 2>/dev/null
check html_timeline_exit test $? -eq 0
check html_timeline grep -q '<section class="timeline" id="timeline">' "$WORK/b.html"
check html_timeline_series test "$(grep -c '<g class="series"' "$WORK/b.html")" -eq 2
check html_timeline_phase grep -q 'class="phase-name"[^>]*>phase 2<' "$WORK/b.html"
check html_no_timeline_without_phases bash -c "! grep -q 'id=\"timeline\"' '$WORK/p.html'"
# ---- in the browser ----------------------------------------------------------
if [ -z "$BROWSER" ]; then
	skip html_browser "chromium is not installed (scripts/deps.sh installs it as root)"
	done_tests
fi
browse() {  # browse PAGE OUT ARGS...: headless Chromium on a local page
	local page=$1 out=$2; shift 2
	(cd "$WORK" && timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$WORK/chrome" --allow-file-access-from-files "$@" "file://$WORK/$page") \
		>"$out" 2>"$WORK/browser.err"
}
cat >"$WORK/probe.html" <<'HTML'
<!DOCTYPE html><html><body>
<iframe id="f" src="p.html" style="width:1400px;height:3000px"></iframe><pre id="out"></pre>
<script>
document.getElementById('f').onload = function () {
	var d = this.contentDocument, out = [''];  // the lines after <pre>'s own
	d.querySelectorAll('figure.heatmap').forEach(function (fg) {
		var s = fg.querySelector('svg'), r = s.getBoundingClientRect(), col = 0;
		var cells = s.querySelectorAll('g.cells rect');
		cells.forEach(function (c) { if (c.getAttribute('fill') !== '#ebebeb') col++; });
		out.push('heatmap ' + fg.dataset.index + ' ' + fg.dataset.kind + ' ' + Math.round(r.width) +
		         ' ' + Math.round(r.height) + ' ' + cells.length + ' ' + col);
	});
	var tl = d.querySelector('figure.timeline svg');
	out.push('timeline ' + (tl ? Math.round(tl.getBoundingClientRect().width) + ' ' +
	                             tl.querySelectorAll('g.series').length : '-'));
	var h = d.querySelector('h1.headline');
	out.push('headline ' + (h ? h.textContent : '-'));
	d.querySelectorAll('section.report-part h2').forEach(function (e) { out.push('part ' + e.textContent); });
	['objects', 'lines'].forEach(function (t) {
		var tb = d.querySelector('table.' + t);
		out.push('table ' + t + ' ' + (tb ? tb.querySelectorAll('tbody tr').length : -1) + ' ' +
		         (tb ? tb.querySelector('tbody tr').textContent : '-'));
	});
	document.getElementById('out').textContent = out.join('\n');
};
</script></body></html>
HTML
if ! browse probe.html "$WORK/dom.html" --virtual-time-budget=10000 --dump-dom ||
	! grep -q '^headline ' "$WORK/dom.html"; then
	fail html_browser "chromium did not load the page: $(tail -3 "$WORK/browser.err" | tr '\n' '|')"
	done_tests
fi
pass html_browser
# p2p-4t: T1<->T2 and T3<->T4 communicate (true sharing): 5 threads, 25 cells
# per picture, 4 of them coloured (both directions of two pairs) in all and
# true, none in false; 2 cores: 4 cells
hm() { grep "^heatmap $1 $2 " "$WORK/dom.html"; }
for k in all true false; do
	line=$(hm thread $k)
	check "html_heatmap_thread_$k" test -n "$line"
	set -- $line
	check "html_heatmap_thread_${k}_drawn" test "${4:-0}" -ge 300 -a "${5:-0}" -ge 200 -a "${6:-0}" -eq 25
	check "html_heatmap_core_$k" test "$(hm core $k | cut -d' ' -f6)" = 4
done
check html_cells_coloured test "$(hm thread all | cut -d' ' -f7) $(hm thread true | cut -d' ' -f7) $(hm thread false | cut -d' ' -f7)" = "4 4 0"
check html_headline grep -qx 'headline commtrace report: .*datasets/p2p-4t.zst' "$WORK/dom.html"
check html_report_parts bash -c "grep -qx 'part Totals' '$WORK/dom.html' && grep -qx 'part Top thread pairs' '$WORK/dom.html'"
check html_objects_table grep -Eq '^table objects [1-9][0-9]* 1pair_line' "$WORK/dom.html"
check html_lines_table grep -Eq '^table lines [1-9][0-9]* 10x' "$WORK/dom.html"
check html_no_timeline_drawn grep -qx 'timeline -' "$WORK/dom.html"
sed 's/src="p.html"/src="b.html"/' "$WORK/probe.html" >"$WORK/probe_b.html"
browse probe_b.html "$WORK/dom_b.html" --virtual-time-budget=10000 --dump-dom
check html_timeline_drawn bash -c "grep -Eq '^timeline [0-9]+ 2$' '$WORK/dom_b.html' && test \$(sed -n 's/^timeline \([0-9]*\) 2$/\1/p' '$WORK/dom_b.html') -ge 300"
# a screenshot: a PNG of the window's size
browse p.html /dev/null --window-size=1400,2400 --screenshot="$WORK/p.png"
check html_screenshot python3 -c "
import struct, sys
b = open('$WORK/p.png', 'rb').read(24)
sys.exit(0 if b[:8] == b'\x89PNG\r\n\x1a\n' and struct.unpack('>II', b[16:24]) == (1400, 2400) else 1)"
done_tests
