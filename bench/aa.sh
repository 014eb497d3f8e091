#!/bin/sh
# bench/aa.sh: A/A and power of beamlab's verdicts (issue #35, docs/statistics.md)
#
# Identical code goes through every way beamlab compares runs, N times
# each, and the false "faster"/"slower" verdicts are counted; then known
# slowdowns (+5% and +20% more work per iteration) are planted and the
# runs that catch them are counted:
#   compare  pairs of runs, each with 3 fresh-VM repetitions (matrix -n 3
#            of one configuration), `beamlab compare A.json B.json'
#   history  10 single runs (6 with SHORT=1; `run', samples within each run) in a
#            directory, `beamlab compare DIR': every change between
#            consecutive runs is a verdict (the later ones are judged by
#            the spread of the earlier runs)
#   matrix   two identical configurations (+S 2 and +S 2:2), -n 3
#   check    `beamlab check --against HEAD~1' on a sample project whose
#            last commit changes nothing measurable (or plants a slowdown)
#
# Environment: N (runs per cell, default 100), LOAD=1 (CPU-bound
# competitors at twice the cores for the whole harness), SHORT=1 (the CI
# version: one run per cell, A/A and +20% only, no check cell; about a
# minute on a quiet 2-core machine),
# SCENARIOS (default "compare history matrix check"), BEAMLAB (the escript,
# default ./beamlab). Prints one line per cell and a summary; exits 0
# whatever the counts (numbers are recorded, not asserted: docs/statistics.md
# says under which conditions they were measured), non-zero only when the
# harness itself fails. Run from the repository root after `make'.
set -eu
ROOT=$(pwd)
BEAMLAB=$(realpath "${BEAMLAB:-./beamlab}" 2>/dev/null || echo ./beamlab)
[ -x "$BEAMLAB" ] || { echo "aa: $BEAMLAB is not built: run make first (from the repository root)" >&2; exit 2; }
SHORT=${SHORT:-0}
LOAD=${LOAD:-0}
if [ "$SHORT" = 1 ]; then N=${N:-1}; SCENARIOS=${SCENARIOS:-"compare history matrix"}
else N=${N:-100}; SCENARIOS=${SCENARIOS:-"compare history matrix check"}; fi
case $N in ''|*[!0-9]*|0) echo "aa: N must be a positive integer" >&2; exit 2;; esac
DIR=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-aa.XXXXXX")
COMPETITORS=""
cleanup() {
    for p in $COMPETITORS; do kill "$p" 2>/dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The code under test: the planted slowdowns do 5% and 20% more work.
code() { echo "lists:sum(lists:seq(1, $1))."; }
BASE=2000
SLOW5=2100
SLOW20=2400
SIZES="$BASE $SLOW5 $SLOW20"
HISTORY=10
# --label: the benchmark keeps its name whatever the code, so runs pair.
RUN_OPTS="-s 5 -d 50 --label work"
if [ "$SHORT" = 1 ]; then
    RUN_OPTS="-s 3 -d 30 --label work"; SIZES="$BASE $SLOW20"; HISTORY=6
fi

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
echo "beamlab A/A and power: N=$N per cell, $condition"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The verdict column (the last) of a CSV row, rows after the header.
verdicts() { tail -n +2 "$1" | tr -d '\r' | awk -F, '{print $NF}'; }

# cell NAME EXPECTED: reads verdicts on stdin, one a line; EXPECTED is
# "none" (A/A: faster/slower are false) or "slower" (a planted slowdown).
report() {
    name=$1; expected=$2; file=$3
    total=$(grep -c . "$file" || true)
    if [ "$expected" = none ]; then
        bad=$(grep -c -E '^(faster|slower)$' "$file" || true)
        echo "$name: $bad false verdict(s) in $total; others: $(sort "$file" | uniq -c | tr -s ' ' | tr '\n' ';')"
    else
        hit=$(grep -c -E "^$expected\$" "$file" || true)
        echo "$name: caught in $hit of $total; verdicts: $(sort "$file" | uniq -c | tr -s ' ' | tr '\n' ';')"
    fi
}

matrix_run() { # OUT.json SIZE
    "$BEAMLAB" matrix --vm '+S 2' -n 3 --save "$1" -- "$(code "$2")" $RUN_OPTS >/dev/null 2>&1
}

scenario_compare() {
    for size in $SIZES; do
        : > "$DIR/v"
        i=1
        while [ "$i" -le "$N" ]; do
            matrix_run "$DIR/a.json" "$BASE"
            matrix_run "$DIR/b.json" "$size"
            "$BEAMLAB" compare "$DIR/a.json" "$DIR/b.json" --format csv > "$DIR/c.csv"
            verdicts "$DIR/c.csv" >> "$DIR/v"
            i=$((i + 1))
        done
        case $size in
            "$BASE") report "compare A/A" none "$DIR/v";;
            "$SLOW5") report "compare +5%" slower "$DIR/v";;
            *) report "compare +20%" slower "$DIR/v";;
        esac
    done
}

scenario_history() {
    for size in $SIZES; do
        : > "$DIR/v"
        i=1
        while [ "$i" -le "$N" ]; do
            rm -rf "$DIR/h" && mkdir "$DIR/h"
            r=1
            while [ "$r" -le "$HISTORY" ]; do
                s=$BASE
                [ "$r" = "$HISTORY" ] && s=$size
                "$BEAMLAB" "$(code "$s")" $RUN_OPTS --save "$DIR/h/r$r.json" >/dev/null 2>&1
                r=$((r + 1))
            done
            "$BEAMLAB" compare "$DIR/h" --format csv > "$DIR/c.csv"
            if [ "$size" = "$BASE" ]; then
                verdicts "$DIR/c.csv" | grep . >> "$DIR/v" || true
            else
                verdicts "$DIR/c.csv" | tail -n 1 >> "$DIR/v"
            fi
            i=$((i + 1))
        done
        case $size in
            "$BASE") report "history A/A (every change of $HISTORY runs)" none "$DIR/v";;
            "$SLOW5") report "history +5% (run $HISTORY)" slower "$DIR/v";;
            *) report "history +20% (run $HISTORY)" slower "$DIR/v";;
        esac
    done
}

scenario_matrix() {
    : > "$DIR/v"
    i=1
    while [ "$i" -le "$N" ]; do
        "$BEAMLAB" matrix --vm '+S 2' --vm '+S 2:2' -n 3 --format csv -- "$(code $BASE)" $RUN_OPTS \
            > "$DIR/m.csv" 2>/dev/null
        # the second configuration's row: the first is the baseline
        # (names hold commas; the verdict is third from the end: partial, started_at follow)
        tail -n +3 "$DIR/m.csv" | tr -d '\r' | awk -F, '{print $(NF-2)}' >> "$DIR/v"
        i=$((i + 1))
    done
    report "matrix A/A (two identical configurations)" none "$DIR/v"
}

# A sample rebar3 project (bench/check_false_alarms.sh's); its second
# commit changes nothing measurable, or plants a slowdown.
check_project() { # DIR SIZE
    P=$1
    rm -rf "$P" && mkdir -p "$P/src" "$P/bench"
    echo '{erl_opts, [debug_info]}.' > "$P/rebar.config"
    printf '%s\n' '{application, sample, [{description, "sample"}, {vsn, "0.1.0"},' \
        '  {applications, [kernel, stdlib]}, {modules, []}]}.' > "$P/src/sample.app.src"
    printf '%s\n' '-module(sample).' '-export([work/0]).' "work() -> $(code $BASE | tr -d .)." \
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

scenario_check() {
    for size in $SIZES; do
        check_project "$DIR/p" "$size"
        : > "$DIR/v"
        i=1
        while [ "$i" -le "$N" ]; do
            rm -f "$DIR/run.json"
            (cd "$DIR/p" && "$BEAMLAB" check --against HEAD~1 --save "$DIR/run.json" >/dev/null 2>&1) || true
            if [ -s "$DIR/run.json" ]; then
                erl -noshell -pa "$ROOT/_build/default/lib/beamlab/ebin" -eval '
                    {ok, #{benchmarks := Bs}} = beamlab_result:load(hd(init:get_plain_arguments())),
                    [io:format("~s~n", [V]) || #{metric := <<"time">>,
                                                  extra := #{<<"paired">> := #{<<"verdict">> := V}}} <- Bs],
                    halt().' -extra "$DIR/run.json" |
                    sed 's/^regressed$/slower/; s/^improved$/faster/' >> "$DIR/v"
            else
                echo failed >> "$DIR/v"
            fi
            i=$((i + 1))
        done
        case $size in
            "$BASE") report "check A/A (same code)" none "$DIR/v";;
            "$SLOW5") report "check +5%" slower "$DIR/v";;
            *) report "check +20%" slower "$DIR/v";;
        esac
    done
}

for s in $SCENARIOS; do
    case $s in
        compare|history|matrix|check) "scenario_$s";;
        *) echo "aa: unknown scenario $s" >&2; exit 2;;
    esac
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
