#!/bin/sh
# bench/aa.sh: A/A and power of beamlab's verdicts (issue #35, docs/statistics.md)
#
# Identical code goes through every way beamlab compares runs, N times
# each, and the false "faster"/"slower" verdicts are counted; then known
# slowdowns (+5% and +20% more work per iteration) are planted and the
# runs that catch them are counted:
#   compare  pairs of runs, each with 3 fresh-VM repetitions (matrix -n 3
#            of one configuration), `beamlab compare A.json B.json'; the
#            A/A run B of one iteration is the base A of the next (every
#            pair is still two independent runs; one matrix less per
#            iteration), and serves the planted pairs too
#   history  HISTORY single runs (default 10, 6 with SHORT=1; `run',
#            samples within each run) in a directory, `beamlab compare
#            DIR': the verdict of the newest run, which with the one
#            before it is judged by the spread of the HISTORY - 2 before
#            them (a verdict needs both outside it); the runs are a
#            sliding window of the A/A runs (each iteration's A/A run
#            joins it, the oldest leaves); a planted cell's 9th run is the
#            planted run of the previous iteration, so an iteration runs 3
#            runs (A/A, +5%, +20%) instead of 12 once the window is full
#   matrix   two identical configurations (+S 2 and +S 2:2), -n 3
#   check    `beamlab check --against HEAD~1' on a sample project whose
#            last commit changes nothing measurable (or plants a slowdown);
#            each project's head is built once (--no-build afterwards)
#
# The planted slowdowns are more loop iterations of the same
# allocation-free loop (2000, 2100, 2400): 1.05x and 1.20x the work,
# checked at the start by the reductions per iteration (`--reductions')
# and printed with their ratios; the harness stops if a ratio is off.
# (lists:seq/lists:sum of 2100 and 2400 elements, the earlier workload,
# took ~25% and ~50% longer: garbage collection grows by steps.)
#
# One iteration runs every cell once, so stopping early (UNTIL, Ctrl-C)
# leaves every cell with the same N. Environment:
#   N          iterations (default 100)
#   LOAD=1     CPU-bound competitors at twice the cores for the whole harness
#   SHORT=1    the CI version: one iteration, A/A and +20% only, no check
#              cell (about a minute on a quiet 2-core machine)
#   UNTIL      HH:MM (UTC): start no iteration after this time (the next
#              such time: one already past today is tomorrow's)
#   SCENARIOS  default "compare history matrix check"
#   SIZES      the planted cells (default "5 20"; the A/A cell always runs)
#   CHECK_SIZES the planted cells of check (default: SIZES)
#   CHECK_ROUNDS the rounds of every check (default: check's own default)
#   HISTORY    the runs of a history cell (default 10; 6 with SHORT=1)
#   REPEAT     fresh VMs per run of the compare and matrix cells (default 3,
#              matrix's default; docs/statistics.md: a matrix needs about 9
#              to catch +20% nearly always)
#   METRIC     the measures, each cell run once per iteration for each
#              (default time): `time' (wall clock), `cpu' (`--metric cpu':
#              CPU time per iteration of the measuring VM's scheduler
#              threads, which the machine's load does not inflate), or
#              "time cpu" (both, interleaved in every iteration: the same
#              load for both). Cells of cpu are named SCENARIO-cpu-Z.
#   KEEP=DIR   keep the verdict files (one verdict a line per cell) in DIR,
#              and under DIR/runs every document they were computed from
#   BEAMLAB    the escript (default ./beamlab)
# Prints after every iteration its time and, per cell, the counts so far
# (false faster/slower of the A/A cells, catches of the planted ones),
# and a summary at the end; a stop signal (INT, TERM) stops the running
# command at once (beamlab stops its fresh VMs) and prints the summary of
# the completed iterations (the interrupted one's verdicts are left out, so
# every cell keeps the same N; with KEEP they go to DIR/interrupted), then
# exits 130. Otherwise exits 0 whatever the counts (numbers are
# recorded, not asserted: docs/statistics.md says under which conditions
# they were measured), non-zero only when the harness itself fails. Run
# from the repository root after `make'.
set -eu
# the summary's stdout, whatever a measuring command's redirection is when
# a stop signal's trap runs inside it
exec 8>&1
ROOT=$(pwd)
BEAMLAB=$(realpath "${BEAMLAB:-./beamlab}" 2>/dev/null || echo ./beamlab)
[ -x "$BEAMLAB" ] || { echo "aa: $BEAMLAB is not built: run make first (from the repository root)" >&2; exit 2; }
SHORT=${SHORT:-0}
LOAD=${LOAD:-0}
if [ "$SHORT" = 1 ]; then
    N=${N:-1}; SCENARIOS=${SCENARIOS:-"compare history matrix"}; SIZES=${SIZES:-20}
else
    N=${N:-100}; SCENARIOS=${SCENARIOS:-"compare history matrix check"}; SIZES=${SIZES:-"5 20"}
fi
CHECK_SIZES=${CHECK_SIZES:-$SIZES}
METRIC=${METRIC:-time}
for m in $METRIC; do
    case $m in time|cpu) ;; *) echo "aa: METRIC is time, cpu or \"time cpu\", not $m" >&2; exit 2;; esac
done
case $N in ''|*[!0-9]*|0) echo "aa: N must be a positive integer" >&2; exit 2;; esac
REPEAT=${REPEAT:-3}
case $REPEAT in ''|*[!0-9]*|0|1|2) echo "aa: REPEAT must be an integer of at least 3" >&2; exit 2;; esac
DEADLINE=""
if [ -n "${UNTIL:-}" ]; then
    DEADLINE=$(date -u -d "$UNTIL" +%s 2>/dev/null) ||
        { echo "aa: UNTIL must be a time such as 19:20" >&2; exit 2; }
    # A time already past today means tomorrow's (a run across midnight).
    [ "$DEADLINE" -gt "$(date -u +%s)" ] || DEADLINE=$((DEADLINE + 86400))
fi
DIR=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-aa.XXXXXX")
V=${KEEP:-$DIR/v}
mkdir -p "$V"
COMPETITORS=""
DONE=0
CHILD=""
cleanup() {
    for p in $COMPETITORS; do kill "$p" 2>/dev/null || true; done
    rm -rf "$DIR"
}

# The code under test: a loop that allocates nothing (no garbage
# collection), so its cost is its iteration count; the planted slowdowns
# run 5% and 20% more iterations.
BASE=2000
size_of() { case $1 in 0) echo $BASE;; 5) echo 2100;; 20) echo 2400;;
    *) echo "aa: planted slowdowns are 5 and 20 (%), not $1" >&2; exit 2;; esac; }
code() { echo "(fun L(0, A) -> A; L(I, A) -> L(I - 1, A + I) end)($(size_of "$1"), 0)."; }
for s in $SIZES $CHECK_SIZES; do size_of "$s" >/dev/null; done
# HISTORY: the runs of a history cell's directory (the judged run included)
if [ "$SHORT" = 1 ]; then HISTORY=${HISTORY:-6}; else HISTORY=${HISTORY:-10}; fi
case $HISTORY in ''|*[!0-9]*|0|1|2|3|4) echo "aa: HISTORY must be an integer of at least 5" >&2; exit 2;; esac
# --label: the benchmark keeps its name whatever the code, so runs pair.
RUN_OPTS="-s 5 -d 50 --label work"
# check's default 14 rounds: fewer cannot reach the 0.001 (over the
# family of entries) a time verdict needs under load
# (docs/statistics.md); each round is two fresh VMs.
CHECK_OPTS="-s 3 -d 30 -w 1${CHECK_ROUNDS:+ --rounds $CHECK_ROUNDS}"
if [ "$SHORT" = 1 ]; then RUN_OPTS="-s 3 -d 30 --label work"; fi

if [ "$LOAD" = 1 ]; then
    cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
    i=0
    while [ "$i" -lt $((2 * cores)) ]; do
        sh -c 'while :; do :; done' &
        COMPETITORS="$COMPETITORS $!"
        i=$((i + 1))
    done
    condition="under load ($((2 * cores)) CPU-bound competitors on $cores cores)"
else
    condition="no added load"
fi

# The measure of the cell being run: M (time or cpu), its option MOPT,
# its state directory D (each measure keeps its own runs: a cpu run is
# never the base of a time one) and the cell name's tag (time cells keep
# their names: bench/aa_recompute.escript reads them).
use_metric() {
    M=$1
    D=$DIR/$M
    mkdir -p "$D"
    case $M in time) MOPT=""; TAG="";; *) MOPT="--metric $M"; TAG="-$M";; esac
}

# measure [-C DIR] COMMAND...: every command that measures runs in the
# background and is waited for: sh runs a trap only once the foreground
# command has ended (a whole matrix), but interrupts `wait' at once.
measure() {
    if [ "$1" = -C ]; then (cd "$2" && shift 2 && exec "$@" 8>&-) & else "$@" 8>&- & fi
    CHILD=$!
    st=0
    wait "$CHILD" || st=$?
    CHILD=""
    return "$st"
}

# The stop: beamlab ends on SIGTERM (its launcher forwards it, the VM
# stops its fresh VMs and saves what it measured); SIGINT would not reach
# it, as sh starts background commands with SIGINT ignored.
stop_child() {
    [ -n "$CHILD" ] || return 0
    kill -TERM "$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
}

# Each cell's verdict count when the running iteration began (mark), and
# the cells cut back to it (unmark) when a stop interrupts that iteration.
mark() {
    for f in "$V"/*; do
        [ -f "$f" ] && [ "${f##*/}" != load ] && [ "${f##*/}" != interrupted ] && echo "${f##*/} $(grep -c '' "$f")"
    done > "$DIR/marks" || true
}
unmark() {
    [ -f "$DIR/marks" ] || return 0
    for f in "$V"/*; do
        c=${f##*/}
        [ -f "$f" ] && [ "$c" != load ] && [ "$c" != interrupted ] || continue
        n=$(awk -v c="$c" '$1 == c {print $2}' "$DIR/marks")
        [ -z "${KEEP:-}" ] || tail -n +$((${n:-0} + 1)) "$f" | sed "s/^/$c /" >> "$V/interrupted"
        if [ -n "$n" ]; then head -n "$n" "$f" > "$DIR/cut" && cat "$DIR/cut" > "$f"; else rm -f "$f"; fi
    done
}

# verdicts, report, cells (the counting, shared with bench/aa_recompute.sh)
. "$ROOT/bench/aa_lib.sh"

# The planted work, proven: reductions per iteration of each size (one
# reduction a loop step) and their ratios to the base.
verify_work() {
    base=""
    for z in 0 $SIZES $CHECK_SIZES; do
        case " $seen " in *" $z "*) continue;; esac
        seen="$seen $z"
        measure "$BEAMLAB" "$(code "$z")" -s 1 -d 10 -w 0 --reductions > "$DIR/work" 2>/dev/null || true
        r=$(sed -n 's/^ *reductions: \([0-9.]*\) per iteration.*/\1/p' "$DIR/work")
        [ -n "$r" ] || { echo "aa: could not measure the reductions of the +$z% code" >&2; exit 1; }
        [ -n "$base" ] || base=$r
        ratio=$(awk -v a="$r" -v b="$base" 'BEGIN {printf "%.4f", a / b}')
        echo "planted work +$z%: $r reductions per iteration, ${ratio}x the base"
        awk -v x="$ratio" -v z="$z" 'BEGIN {exit !(x > 1 + z / 100 - 0.01 && x < 1 + z / 100 + 0.01)}' ||
            { echo "aa: the +$z% code does ${ratio}x the work, not $((100 + z))%" >&2; exit 1; }
    done
}
seen=
summary() {
    echo "== beamlab A/A and power: $DONE iteration(s), $condition, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "== load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
    [ ! -s "$V/load" ] || awk '{s += $1; if (NR == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1}
        END {printf "== load average after each iteration: mean %.2f (%.2f..%.2f, %d iterations)\n", s / NR, lo, hi, NR}' "$V/load"
    cells "$SCENARIOS" "$METRIC"
}
trap 'stop_child; unmark; summary >&8; cleanup; exit 130' INT TERM
trap cleanup EXIT

echo "beamlab A/A and power: N=$N per cell, $condition, $REPEAT fresh VMs per run (compare, matrix), metric(s): $METRIC"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
verify_work

matrix_run() { # OUT.json SIZE
    measure "$BEAMLAB" matrix --vm '+S 2' -n "$REPEAT" $MOPT --save "$1" -- "$(code "$2")" $RUN_OPTS >/dev/null 2>&1
}

iteration_compare() {
    # the previous iteration's A/A run is this one's base
    [ -f "$D/a.json" ] || matrix_run "$D/a.json" 0
    for z in $SIZES 0; do
        matrix_run "$D/b-$z.json" "$z"
        measure "$BEAMLAB" compare "$D/a.json" "$D/b-$z.json" --format csv > "$D/c.csv"
        verdicts "$D/c.csv" >> "$V/compare$TAG-$z"
        # with KEEP, the pair stays (the verdicts can be recomputed later)
        [ -z "${KEEP:-}" ] || { mkdir -p "$V/runs/compare$TAG-$z-$i" && cp "$D/a.json" "$D/b-$z.json" "$V/runs/compare$TAG-$z-$i/"; }
    done
    mv "$D/b-0.json" "$D/a.json"
}

# The history's window: runs w1..w(HISTORY-1), oldest first (names sort
# by time: compare DIR orders runs by their start).
hist_run() { # OUT SIZE
    measure "$BEAMLAB" "$(code "$2")" $RUN_OPTS $MOPT --save "$1" >/dev/null 2>&1
}
iteration_history() {
    mkdir -p "$D/w"
    while [ "$(ls "$D/w" | wc -l)" -lt $((HISTORY - 1)) ]; do
        hist_run "$D/w/$(date +%s%N).json" 0
    done
    for z in $SIZES 0; do
        rm -rf "$D/h" && mkdir "$D/h"
        if [ "$z" = 0 ]; then
            cp "$D"/w/*.json "$D/h/"
        else
            # A verdict against a history needs two runs outside its
            # spread (docs/statistics.md): the planted run of the previous
            # iteration (one more on the first) and this one, after the
            # oldest runs of the window, all measured before both.
            [ -f "$D/p-$z.json" ] || hist_run "$D/p-$z.json" "$z"
            for f in $(ls "$D/w" | head -n $((HISTORY - 2))); do cp "$D/w/$f" "$D/h/"; done
            cp "$D/p-$z.json" "$D/h/$(date +%s%N).json"
        fi
        last=$D/h/$(date +%s%N).json
        hist_run "$last" "$z"
        [ "$z" = 0 ] || cp "$last" "$D/p-$z.json"
        measure "$BEAMLAB" compare "$D/h" --format csv > "$D/c.csv"
        verdicts "$D/c.csv" | tail -n 1 >> "$V/history$TAG-$z"
        # with KEEP, the runs stay (the verdicts can be recomputed later)
        [ -z "${KEEP:-}" ] || { mkdir -p "$V/runs/history$TAG-$z-$i" && cp "$D"/h/*.json "$V/runs/history$TAG-$z-$i/"; }
    done
    # the A/A run joins the window, the oldest leaves
    mv "$last" "$D/w/"
    rm -f "$D/w/$(ls "$D/w" | head -n 1)"
}

iteration_matrix() {
    "$BEAMLAB" matrix --vm '+S 2' --vm '+S 2:2' -n "$REPEAT" $MOPT --format csv --save "$D/m.json" \
        -- "$(code 0)" $RUN_OPTS > "$D/m.csv" 2>/dev/null
    [ -z "${KEEP:-}" ] || { mkdir -p "$V/runs" && cp "$D/m.json" "$V/runs/matrix$TAG-0-$i.json"; }
    # the second configuration's row: the first is the baseline
    # (names hold commas; the verdict is fourth from the end: partial, started_at, vm_value follow)
    tail -n +3 "$D/m.csv" | tr -d '\r' | awk -F, '{print $(NF-3)}' >> "$V/matrix$TAG-0"
}

# A sample rebar3 project (bench/check_false_alarms.sh's); its second
# commit changes nothing measurable, or plants a slowdown.
check_project() { # DIR PLANTED
    P=$1
    rm -rf "$P" && mkdir -p "$P/src" "$P/bench"
    echo '{erl_opts, [debug_info]}.' > "$P/rebar.config"
    printf '%s\n' '{application, sample, [{description, "sample"}, {vsn, "0.1.0"},' \
        '  {applications, [kernel, stdlib]}, {modules, []}]}.' > "$P/src/sample.app.src"
    printf '%s\n' '-module(sample).' '-export([work/0]).' "work() -> $(code 0 | tr -d .)." \
        > "$P/src/sample.erl"
    printf '%s\n' '-module(sample_bench).' '-export([benchmarks/0]).' \
        'benchmarks() -> [#{name => "work", runner => fun() -> sample:work() end}].' \
        > "$P/bench/sample_bench.erl"
    echo _build > "$P/.gitignore"
    g() { git -C "$P" -c user.name=beamlab -c user.email=beamlab@localhost "$@"; }
    g init -q && g add -A && g commit -q -m first
    printf '%s\n' '-module(sample).' '-export([work/0]).' '%% second commit' \
        "work() -> $(code "$2" | tr -d .)." > "$P/src/sample.erl"
    g add -A && g commit -q -m second
}

iteration_check() {
    for z in 0 $CHECK_SIZES; do
        P=$D/p$z
        build=""
        if [ -f "$P/.built" ]; then build=--no-build; else check_project "$P" "$z"; fi
        rm -f "$D/run.json"
        measure -C "$P" "$BEAMLAB" check --against HEAD~1 $CHECK_OPTS $MOPT $build --save "$D/run.json" >/dev/null 2>&1 || true
        if [ -s "$D/run.json" ]; then
            touch "$P/.built"
            [ -z "${KEEP:-}" ] || { mkdir -p "$V/runs" && cp "$D/run.json" "$V/runs/check$TAG-$z-$i.json"; }
            erl -noshell -pa "$ROOT/_build/default/lib/beamlab/ebin" -eval '
                {ok, #{benchmarks := Bs}} = beamlab_result:load(hd(init:get_plain_arguments())),
                [M] = tl(init:get_plain_arguments()),
                [io:format("~s~n", [V]) || #{metric := Metric,
                                              extra := #{<<"paired">> := #{<<"verdict">> := V}}} <- Bs,
                                           Metric =:= list_to_binary(M)],
                halt().' -extra "$D/run.json" "$M" |
                sed 's/^regressed$/slower/; s/^improved$/faster/' >> "$V/check$TAG-$z"
        else
            echo failed >> "$V/check$TAG-$z"
        fi
    done
}

for s in $SCENARIOS; do
    case $s in compare|history|matrix|check) ;;
        *) echo "aa: unknown scenario $s" >&2; exit 2;; esac
done
i=1
while [ "$i" -le "$N" ]; do
    if [ -n "$DEADLINE" ] && [ "$(date -u +%s)" -ge "$DEADLINE" ]; then
        echo "aa: UNTIL $UNTIL reached after $DONE iteration(s)"; break
    fi
    t0=$(date +%s)
    mark
    took=""
    for s in $SCENARIOS; do
        for m in $METRIC; do
            use_metric "$m"
            ts=$(date +%s)
            "iteration_$s"
            took="$took${took:+, }$s${TAG} $(($(date +%s) - ts)) s"
        done
    done
    DONE=$i
    # the 1-minute load average after every iteration: the run's load is
    # their mean (summary)
    cut -d' ' -f1 /proc/loadavg >> "$V/load"
    echo "-- iteration $i done $(date -u +%H:%M:%S) in $(($(date +%s) - t0)) s ($took), load average $(cut -d' ' -f1 /proc/loadavg)"
    cells "$SCENARIOS" "$METRIC" | sed 's/; verdicts:.*//; s/^/   /'
    i=$((i + 1))
done
summary
