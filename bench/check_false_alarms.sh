#!/bin/sh
# bench/check_false_alarms.sh [RUNS] [CHECK OPTIONS...]
#
# The false-alarm rate of `beamlab check --against': a sample rebar3
# project (two benchmarks, as test/project/project_SUITE's) gets a second commit
# that changes nothing measurable (a comment and a README), and
# `beamlab check --against HEAD~1' runs RUNS times (default 20) with the
# default gate (time, beyond +5% at p < 0.01) unless CHECK OPTIONS say
# otherwise. Prints each run's exit code and, per benchmark, the time
# change, its interval and p; then the number of runs that passed and the
# load average before and after. Run from the repository root after
# `make', under the lock (flock /tmp/beamlab-ct.lock ...); it takes about
# a minute a run. docs/ci.md records its output. BEAMLAB names another
# escript (a copy, so that the tree can be rebuilt meanwhile).
set -eu
RUNS=${1:-20}
case $RUNS in ''|*[!0-9]*) bad=1;; esac
if [ -n "${bad:-}" ] || [ "$RUNS" -eq 0 ]; then
    echo "check_false_alarms: usage: bench/check_false_alarms.sh [RUNS>0] [CHECK OPTIONS...]" >&2
    exit 2
fi
[ $# -gt 0 ] && shift
ROOT=$(pwd)
BEAMLAB=$(realpath "${BEAMLAB:-./beamlab}" 2>/dev/null || echo ./beamlab)
[ -x "$BEAMLAB" ] ||
    { echo "check_false_alarms: $BEAMLAB not built: run make first (from the repository root)" >&2; exit 2; }
DIR=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-false-alarms.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
P=$DIR/sample
. "$(dirname "$0")/check_sample.sh"
sample_project "$P"
sed -i 's/^work(N)/%% nothing measurable changes here\nwork(N)/' "$P/src/sample.erl"
echo "A sample project." > "$P/README.md"
git -C "$P" add -A && git_commit "nothing measurable"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "run exit  benchmark: time change [99% CI] p verdict"
passed=0
r=1
while [ "$r" -le "$RUNS" ]; do
    set +e
    (cd "$P" && "$BEAMLAB" check --against HEAD~1 --save "$DIR/run.json" "$@" >/dev/null 2>"$DIR/err")
    code=$?
    set -e
    [ "$code" = 0 ] && passed=$((passed + 1))
    if [ -s "$DIR/run.json" ]; then
        erl -noshell -pa "$ROOT/_build/default/lib/beamlab/ebin" -eval '
            {ok, #{benchmarks := Bs}} = beamlab_result:load(hd(init:get_plain_arguments())),
            Pct = fun(X) -> beamlab_format_units:signed_percent(X) end,
            io:put_chars(lists:join("  ", [io_lib:format("~ts: ~ts [~ts, ~ts] p=~.3f ~ts",
                                          [G, Pct(C), Pct(Lo), Pct(Hi), float(P), V])
                                      || #{group := G, metric := <<"time">>,
                                           extra := #{<<"paired">> := #{<<"change">> := C, <<"ci">> := [Lo, Hi],
                                                                         <<"p_value">> := P, <<"verdict">> := V}}} <- Bs])),
            halt().' -extra "$DIR/run.json" | sed "s/^/$(printf '%3d %4d  ' "$r" "$code")/"
        echo
        rm -f "$DIR/run.json"
    else
        printf '%3d %4d  %s\n' "$r" "$code" "$(tail -1 "$DIR/err")"
    fi
    r=$((r + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "passed (exit 0): $passed of $RUNS; false alarms: $((RUNS - passed))"
