#!/bin/sh
# scripts/screenshots.sh [OUTDIR]
# SHOTS="sweep trend" scripts/screenshots.sh   (only those: sweep categorical
#   scaling latency per-second timeseries distributions matrix trend
#   ci-trend watch report flame-diff; with RabbitMQ: amqp-watch numa
#   profile-rabbitmq, which also needs perf; with scripts/install-otp.sh's
#   OTP 27 and scripts/install-rabbitmq.sh's RabbitMQ 4.0: jit-study)
# KEEP=DIR scripts/screenshots.sh   (also keeps the documents in DIR, to
#   read the numbers the text quotes)
#
# Regenerates docs/results.md's screenshots (docs/images/report-*.png,
# or into OUTDIR), README's report.png, docs/ci.md's (ci-history-trend.png)
# and docs/target.md's (watch-processes.png; with Debian's rabbitmq-server,
# target-amqp-watch.png and target-matrix-heatmaps.png, and docs/profile.md's
# profile-flame-rabbitmq.png and profile-flame-diff-rabbitmq.png; with OTP
# 27 and RabbitMQ 4.0, docs/jit-study.md's jit-study-*.png) from real runs of
# the built ./beamlab, rendered by
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

# shot HTML SELECTOR NAME [KEEP]: the first element SELECTOR matches, alone,
# as $OUT/NAME.png (with KEEP, only the figures in it that KEEP matches).
# The page is laid out 1345 px wide, as a desktop window.
shot() {
    page=$WORK/$3.html
    # (a script after </html> still runs: the parser puts it in the body)
    { cat "$1"; cat <<EOF
<script>
window.addEventListener("load", function () { setTimeout(function () {
  var el = document.querySelector("$2");
  if (!el) { document.body.setAttribute("data-shot", "none"); return; }
  var keep = "${4:-}";
  if (keep) el.querySelectorAll("figure, details, .tablebox").forEach(function (f) { if (!f.matches(keep)) f.style.display = "none"; });
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

# page HTML NAME WIDTH HEIGHT: the top of the whole page, as a window of
# that size shows it.
page() {
    chromium --window-size="$3,$4" --screenshot="$OUT/$2.png" "file://$1" >/dev/null
    echo "screenshots: $OUT/$2.png ($3,$4)"
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

# README's picture: the top of the report of results.md's three runs of
# the same code (the third with two workers), compared.
if want report; then
"$B" 'lists:seq(1,100).' -d 1000 -s 8 -v --save seq-a.json >/dev/null 2>&1
"$B" 'lists:seq(1,100).' -d 1000 -s 8 -v --save seq-b.json >/dev/null 2>&1
"$B" 'lists:seq(1,100).' -d 1000 -s 8 -c 2 -v --save seq-c2.json >/dev/null 2>&1
"$B" report seq-a.json seq-b.json seq-c2.json --title 'lists:seq(1,100): three runs on a shared 2-core VM' \
    -o "$WORK/three-report.html" >/dev/null
page "$WORK/three-report.html" report 1280 2300
fi

# results.md's differential flame graph (needs perf): profile_SUITE's
# differential_hot_to_cold, hot_loop/2 made colder (80% of the loop's
# iterations, then 20%).
if want flame-diff; then
mkdir -p flame
for side in before:8000:2000 after:2000:8000; do
    name=${side%%:*}; rest=${side#*:}; hot=${rest%%:*}; other=${rest#*:}
    mkdir -p "flame/$name"
    printf '%s\n' '-module(hotmod).' '-export([work/0]).' "work() -> hot_loop($hot, 0), other_loop($other, 0)." \
        'hot_loop(0, A) -> A;' 'hot_loop(N, A) -> hot_loop(N - 1, (A * 31 + N) band 16#ffff).' \
        'other_loop(0, A) -> A;' 'other_loop(N, A) -> other_loop(N - 1, (A * 31 + N) band 16#ffff).' >"flame/$name/hotmod.erl"
    erlc -o "flame/$name" "flame/$name/hotmod.erl"
    "$B" profile --save="$WORK/flame/$name.json" -- run 'hotmod:work().' -pa "$WORK/flame/$name" -s 2 >/dev/null 2>&1
done
report flame flame/before.json flame/after.json
shot "$WORK/flame-report.html" 'figure[data-kind=flame-diff]' report-flame-diff
fi

# docs/target.md's amqp --watch and NUMA walk-through pictures, against a
# private broker (Debian's rabbitmq-server, scripts/rabbitmq.sh) on port
# SHOTS_RABBIT_PORT (default 5797).
if want amqp-watch || want numa || want profile-rabbitmq; then
if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    PORT=${SHOTS_RABBIT_PORT:-5797}
    if want amqp-watch; then
        BEAMLAB_RABBIT_PORT=$PORT "$ROOT/scripts/rabbitmq.sh" start >/dev/null
        NODE=beamlab-rabbit-$PORT@localhost
        "$B" amqp -h "amqp://guest:guest@127.0.0.1:$PORT/%2F" --closed-loop 20 -z 8 --watch "$NODE" \
            --cookie "$(cat "$ROOT/_build/rabbitmq/$PORT/.erlang.cookie")" --save amqp-watch.json >/dev/null 2>&1 || true
        BEAMLAB_RABBIT_PORT=$PORT "$ROOT/scripts/rabbitmq.sh" stop >/dev/null || true
        report amqp-watch amqp-watch.json
        shot "$WORK/amqp-watch-report.html" '#timeline' target-amqp-watch
    fi
    if want numa; then
        # (6 minutes: 15 brokers, one after the other)
        "$B" matrix --target rabbitmq --vm '+sbt u' --vm '+sbt db' --vm '+S 1' --wrap 'taskset -c 1' -n 5 \
            --save numa.json -- amqp --closed-loop 50 -z 8 >/dev/null 2>&1
        report numa numa.json
        shot "$WORK/numa-report.html" '#timeline' target-matrix-heatmaps 'figure[data-kind=heatmap]'
    fi
    # profile.md's walk-through: the broker (the JIT's perf support on)
    # profiled for 10 s under the reference's single-queue load, transient
    # then persistent messages, the two profiles with the same label.
    if want profile-rabbitmq; then
        ERL_FLAGS='+JPperf true' BEAMLAB_RABBIT_PORT=$PORT "$ROOT/scripts/rabbitmq.sh" start >/dev/null
        PID=$(cat "$ROOT/_build/rabbitmq/$PORT/rabbit.pid")
        for kind in transient persistent; do
            flags="-f mandatory"; [ $kind = persistent ] && flags="-f mandatory -f persistent"
            # shellcheck disable=SC2086
            "$B" amqp -h "amqp://guest:guest@127.0.0.1:$PORT/%2F" -x 1 -y 1 -u q1 $flags -q 300 -c 100 -z 22 \
                >/dev/null 2>&1 &
            LOAD=$!
            sleep 5
            save=rabbit-1q.json; [ $kind = persistent ] && save=rabbit-1q-persistent.json
            "$B" profile --pid "$PID" --duration 10 --label 'rabbitmq single queue' --save="$WORK/$save" \
                >/dev/null 2>&1 || true
            wait "$LOAD" || true
        done
        BEAMLAB_RABBIT_PORT=$PORT "$ROOT/scripts/rabbitmq.sh" stop >/dev/null || true
        report rabbit-one rabbit-1q.json
        shot "$WORK/rabbit-one-report.html" 'figure[data-kind=flame]' profile-flame-rabbitmq
        report rabbit-diff rabbit-1q.json rabbit-1q-persistent.json
        shot "$WORK/rabbit-diff-report.html" 'figure[data-kind=flame-diff]' profile-flame-diff-rabbitmq
    fi
else
    echo "screenshots: amqp-watch, numa: Debian's rabbitmq-server is not installed; skipped" >&2
fi
fi

# docs/jit-study.md's pictures: the preset's recorded run (5 repetitions of
# 30 s per flavour and scenario: about 12 minutes) and the single-queue
# scenario profiled under each flavour (one repetition and a profiled one).
if want jit-study; then
OTP27=${BEAMLAB_OTP27_PREFIX:-/opt/beamlab-otp/27}
if [ -x "$OTP27/bin/erl" ] && [ -x "${BEAMLAB_RABBITMQ40_PREFIX:-/opt/beamlab-rabbitmq/4.0}/bin/rabbitmq-server" ]; then
    "$B" matrix --preset jit-study -n 5 --duration 30 --save jit-study.json >/dev/null 2>&1 || true
    report jit-study jit-study.json
    # (the broker's CPU per message, the consumer latency's p99 and the
    # sending rate: the 1st, 11th and 17th of the preset's benchmarks)
    shot "$WORK/jit-study-report.html" '#matrix' jit-study-matrix \
        'figure[data-kind=matrix]:is(:nth-of-type(1), :nth-of-type(2), :nth-of-type(11), :nth-of-type(12), :nth-of-type(17), :nth-of-type(18))'
    "$B" matrix --target rabbitmq --otp "$OTP27" --flavor emu --flavor jit -n 1 --profile --save prof.json \
        -- amqp -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100 -z 20 >/dev/null 2>&1 || true
    report prof prof.json
    shot "$WORK/prof-report.html" '#profiles > figure:nth-of-type(1)' jit-study-flame-emu
    shot "$WORK/prof-report.html" '#profiles > figure:nth-of-type(2)' jit-study-flame-jit
    shot "$WORK/prof-report.html" 'figure[data-kind=flame-diff]' jit-study-flame-diff
else
    echo "screenshots: jit-study: needs scripts/install-otp.sh and scripts/install-rabbitmq.sh; skipped" >&2
fi
fi
