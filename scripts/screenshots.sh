#!/bin/sh
# scripts/screenshots.sh [OUTDIR]
# SHOTS="sweep trend" scripts/screenshots.sh   (only those: sweep categorical
#   scaling latency per-second timeseries distributions matrix trend
#   ci-trend watch)
# KEEP=DIR scripts/screenshots.sh   (also keeps the documents in DIR, to
#   read the numbers the text quotes)
#
# Regenerates docs/results.md's screenshots (docs/images/report-*.png,
# or into OUTDIR), docs/ci.md's (ci-history-trend.png) and docs/target.md's
# Processes section (watch-processes.png) from real runs of the built ./beamlab, rendered by
# headless Chromium: the commands are the ones results.md names under
# each picture. Each picture is one element of a `beamlab report' page
# (a chart's card or a whole section), cut out in two passes: Chromium
# lays the page out with every other element hidden and says the
# element's size (--dump-dom), then takes a screenshot of a window of
# exactly that size. Look at the pictures before committing them.
#
# Takes a few minutes (the matrix starts 6 fresh VMs, the trend runs six
# commits); the runs are the machine's: on a loaded machine the numbers
# are noisy, the shapes are the point. Needs chromium and git.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${1:-docs/images}
case $OUT in /*) ;; *) OUT=$ROOT/$OUT ;; esac
[ -x ./beamlab ] || { echo "screenshots: ./beamlab is not built: run make first" >&2; exit 2; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "screenshots: chromium is not installed" >&2; exit 2; }
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-shots.XXXXXX")
keep() { if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -r "$WORK"/*.json "$WORK"/history "$KEEP"/ 2>/dev/null || true; fi; }
trap 'keep; rm -rf "$WORK"' EXIT INT TERM
B="$ROOT/beamlab"

chromium() {
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$WORK/chromium" --hide-scrollbars --force-device-scale-factor=1 \
        --virtual-time-budget=5000 "$@" 2>/dev/null
}

# shot HTML SELECTOR NAME: the first element SELECTOR matches, alone, as
# $OUT/NAME.png. The page is laid out 1345 px wide, as a desktop window.
shot() {
    page=$WORK/$3.html
    # (a script after </html> still runs: the parser puts it in the body)
    { cat "$1"; cat <<EOF
<script>
window.addEventListener("load", function () { setTimeout(function () {
  var el = document.querySelector("$2");
  if (!el) { document.body.setAttribute("data-shot", "none"); return; }
  document.documentElement.style.width = "1345px";
  for (var n = el; n && n !== document.body; n = n.parentNode) {
    var sibs = n.parentNode ? n.parentNode.children : [];
    for (var i = 0; i < sibs.length; i++) if (sibs[i] !== n) sibs[i].style.display = "none";
  }
  var r = el.getBoundingClientRect();
  document.body.setAttribute("data-shot", Math.ceil(r.right + r.left) + "," + Math.ceil(r.bottom + r.top));
}, 0); });
</script>
EOF
    } >"$page"
    size=$(chromium --window-size=1345,3000 --dump-dom "file://$page" |
           sed -n 's/.*<body[^>]*data-shot="\([^"]*\)".*/\1/p' | head -1)
    case $size in
        [0-9]*,[0-9]*) ;;
        *) echo "screenshots: $3: no element '$2' in the report" >&2; exit 1 ;;
    esac
    chromium --window-size="$size" --screenshot="$OUT/$3.png" "file://$page" >/dev/null
    echo "screenshots: $OUT/$3.png ($size)"
}

report() { # report NAME FILES...: $WORK/NAME-report.html
    name=$1; shift
    "$B" report "$@" -o "$WORK/$name-report.html" >/dev/null
}

want() { case " ${SHOTS:-all} " in *" all "* | *" $1 "*) return 0 ;; esac; return 1; }

cd "$WORK"
echo "screenshots: running (a few minutes)"
if want sweep; then
"$B" suite ping_pong --param ping_pong.size=0,10,100,1000,10000 -n 5 --save sweep.json >/dev/null
report sweep sweep.json
shot "$WORK/sweep-report.html" '#sweeps figure.card' report-sweep
fi

if want categorical; then
"$B" suite serialization --param serialization.compressed=0,6 -n 5 --save categorical.json >/dev/null
report categorical categorical.json
shot "$WORK/categorical-report.html" '#sweeps figure.card' report-categorical
fi

if want scaling; then
"$B" 'lists:seq(1,1000).' -q --max 4 -d 300 -s 5 --save scaling.json >/dev/null
report scaling scaling.json
shot "$WORK/scaling-report.html" '#scaling figure.card' report-scaling
fi

if want latency; then
"$B" suite message_load -n 3 --save latency.json >/dev/null
report latency latency.json
shot "$WORK/latency-report.html" '#latency figure.card' report-latency
fi

if want per-second; then
"$B" suite message_load -n 3 --param message_load.duration=3000 --save persecond.json >/dev/null
report persecond persecond.json
shot "$WORK/persecond-report.html" '#timeline figure.card' report-per-second
fi

if want timeseries || want distributions; then
"$B" 'lists:seq(1,100).' -d 300 -s 25 -v --save timeseries.json >/dev/null 2>&1
report timeseries timeseries.json
shot "$WORK/timeseries-report.html" '#timeline figure.card' report-timeseries
"$B" 'rand:uniform().' -d 300 -s 8 --save uniform.json >/dev/null
report distributions timeseries.json uniform.json
shot "$WORK/distributions-report.html" '#distributions' report-distributions
fi

if want matrix; then
"$B" matrix --vm '+S 1' --vm '+S 2' -n 3 --save matrix.json -- suite fib ring >/dev/null 2>&1
report matrix matrix.json
shot "$WORK/matrix-report.html" '#matrix' report-matrix
fi

# Six commits in a git work tree, a run saved after each: four of the
# same code, a fifth doing a thousand times more work, a sixth reverting it.
if want trend; then
mkdir trend history && cd trend
git init -q . && git config user.email shots@example.invalid && git config user.name shots
i=0
for n in 1000 1000 1000 1000 1000000 1000; do
    i=$((i + 1))
    echo "run $i: lists:seq(1, $n)" >work.txt && git add work.txt && git commit -qm "work $i: lists:seq(1, $n)"
    "$B" "lists:seq(1,$n)." --label work -d 200 -s 5 --save "../history/run$i.json" >/dev/null
done
cd ..
report trend history
shot "$WORK/trend-report.html" '#trend figure.card' report-trend
fi

# docs/ci.md's history trend: three commits of test/project/project_SUITE's
# sample project (`work' twice as slow in the second, back in the third),
# each run saved to the project's history with `run --bench bench -d 30
# -s 8 --save', then `report .beamlab/history/'.
if want ci-trend; then
mkdir ci-trend && cd ci-trend
mkdir src bench
printf '{erl_opts, [debug_info]}.\n' >rebar.config
printf '{application, sample, [{description, "sample"}, {vsn, "0.1.0"},\n  {applications, [kernel, stdlib]}, {modules, []}]}.\n' >src/sample.app.src
printf '%s\n' '-module(sample_bench).' '-export([benchmarks/0]).' 'benchmarks() ->' \
    '    [#{name => "work", runner => fun() -> sample:work(1000) end},' \
    '     #{name => "other", runner => {sample, other, [1000]}}].' >bench/sample_bench.erl
printf '_build\n.beamlab\n' >.gitignore
git init -q . && git config user.email shots@example.invalid && git config user.name shots
for k in 1 2 1; do
    printf '%s\n' '-module(sample).' '-export([work/1, other/1]).' "work(N) -> sum(N * $k, 0)." \
        'other(N) -> sum(N, 0).' 'sum(0, Acc) -> Acc;' 'sum(I, Acc) -> sum(I - 1, Acc + I * I).' >src/sample.erl
    git add -A && git commit -qm "work x$k"
    "$B" run --bench bench -d 30 -s 8 --save >/dev/null
done
"$B" report .beamlab/history/ -o "$WORK/ci-trend-report.html" >/dev/null
cd ..
shot "$WORK/ci-trend-report.html" '#trend' ci-history-trend
fi

# docs/target.md's Processes section: the triage faults (a spinning
# process, a mailbox nobody reads, a growing state) compiled into a module
# on a node of 2 schedulers, watched for 4.5 s.
if want watch; then
mkdir watch && cd watch
cat >shop_faults.erl <<'EOF'
-module(shop_faults).
-export([start/0]).
start() ->
    spawn(fun() -> register(spinner, self()), spin() end),
    Backlog = spawn(fun() -> register(backlog, self()), receive never -> ok end end),
    spawn(fun() -> register(feeder, self()), feed(Backlog) end),
    spawn(fun() -> register(cache, self()), grow([]) end),
    ok.
spin() -> spin().
feed(To) -> [To ! {order, I} || I <- lists:seq(1, 300)], receive after 10 -> feed(To) end.
grow(State) -> receive after 10 -> grow([lists:seq(1, 40) || _ <- lists:seq(1, 25)] ++ State) end.
EOF
erlc shop_faults.erl
NODE=shots_shop_$$@127.0.0.1
erl -noshell -name "$NODE" -setcookie shots -kernel inet_dist_use_interface '{127,0,0,1}' +S 2 -pa . \
    -eval 'shop_faults:start()' -eval 'receive after 60000 -> halt() end' &
SHOP=$!
"$B" watch --node "$NODE" --cookie shots --duration 4.5 --top 3 --save watch.json >/dev/null 2>&1 || true
kill "$SHOP" 2>/dev/null || true
cd ..
report watch watch/watch.json
shot "$WORK/watch-report.html" '#processes' watch-processes
fi
