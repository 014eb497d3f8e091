#!/bin/sh
# bench/aa_recompute.sh KEEP_DIR [OUT_DIR]: re-judge the documents that
# `KEEP=DIR bench/aa.sh' kept with the current build, and print aa.sh's
# summary (false verdicts of the A/A cells, catches of the planted ones).
# Re-measures nothing: after a change of the statistics, old measurements
# give the new rule's false and catch rates (docs/statistics.md).
#
#   compare-Z-I/{a.json,b-Z.json}  `beamlab compare a.json b-Z.json'
#   history-Z-I/*.json             `beamlab compare DIR': the newest run's verdict
#   matrix-0-I.json                `beamlab compare M.json': one matrix document's
#                                  configurations against its baseline
# and the same cells of CPU time (compare-cpu-Z-I, history-cpu-Z-I,
# matrix-cpu-0-I.json: METRIC=cpu or "time cpu").
#
# Environment:
#   HALF=odd|even  only the iterations I of that parity (design on one half,
#                  validate on the other)
#   BEAMLAB        the escript (default ./beamlab)
#   COMPARE_OPTS   extra options for every `beamlab compare' (e.g.
#                  "--confidence 95", to judge with another level)
# The new verdict files go to OUT_DIR (default: a temporary directory,
# removed at the end), one verdict a line per cell, as aa.sh writes them.
# Exits 0 whatever the counts; 2 on bad arguments.
set -eu
ROOT=$(pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/aa_recompute.sh KEEP_DIR [OUT_DIR]" >&2; exit 2; }
KEPT=$1
[ -d "$KEPT/runs" ] || { echo "aa_recompute: $KEPT/runs: no kept documents (run bench/aa.sh with KEEP=$KEPT)" >&2; exit 2; }
BEAMLAB=$(realpath "${BEAMLAB:-./beamlab}" 2>/dev/null || echo ./beamlab)
[ -x "$BEAMLAB" ] || { echo "aa_recompute: $BEAMLAB is not built: run make first (from the repository root)" >&2; exit 2; }
HALF=${HALF:-all}
case $HALF in all|odd|even) ;; *) echo "aa_recompute: HALF is odd or even" >&2; exit 2;; esac
COMPARE_OPTS=${COMPARE_OPTS:-}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-aa-recompute.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
if [ $# -eq 2 ]; then V=$2; mkdir -p "$V"; else V=$TMP/v; mkdir -p "$V"; fi
. "$ROOT/bench/aa_lib.sh"

# The iteration numbers of a cell's kept documents, in order, of the
# chosen parity.
iterations() { # PREFIX (e.g. compare-0-) [SUFFIX]
    for p in "$KEPT/runs/$1"*; do
        [ -e "$p" ] || continue
        n=${p##*/$1}; n=${n%"${2:-}"}
        case $n in ''|*[!0-9]*) continue;; esac
        case $HALF in odd) [ $((n % 2)) -eq 1 ] || continue;; even) [ $((n % 2)) -eq 0 ] || continue;; esac
        echo "$n"
    done | sort -n
}

scenarios=""
# t: the cells' tag, "" for wall-clock time, -cpu for CPU time (METRIC=cpu)
for t in "" -cpu; do
    for z in 0 5 20; do
        cell=compare$t-$z
        rm -f "$V/$cell" "$V/history$t-$z" "$V/matrix$t-$z"
        for i in $(iterations "compare$t-$z-"); do
            d=$KEPT/runs/compare$t-$z-$i
            # shellcheck disable=SC2086
            "$BEAMLAB" compare "$d/a.json" "$d/b-$z.json" --format csv $COMPARE_OPTS > "$TMP/c.csv"
            verdicts "$TMP/c.csv" >> "$V/$cell"
        done
        for i in $(iterations "history$t-$z-"); do
            # shellcheck disable=SC2086
            "$BEAMLAB" compare "$KEPT/runs/history$t-$z-$i" --format csv $COMPARE_OPTS > "$TMP/c.csv"
            verdicts "$TMP/c.csv" | tail -n 1 >> "$V/history$t-$z"
        done
    done
    for i in $(iterations "matrix$t-0-" .json); do
        # shellcheck disable=SC2086
        "$BEAMLAB" compare "$KEPT/runs/matrix$t-0-$i.json" --format csv $COMPARE_OPTS > "$TMP/c.csv"
        verdicts "$TMP/c.csv" | tail -n 1 >> "$V/matrix$t-0"
    done
done
for s in compare history matrix; do
    ls "$V/$s"-* >/dev/null 2>&1 && scenarios="$scenarios $s"
done
echo "== beamlab A/A and power, recomputed from $KEPT ($HALF iterations) with $("$BEAMLAB" --version 2>/dev/null | head -n 1)${COMPARE_OPTS:+, compare $COMPARE_OPTS}"
cells "$scenarios" "time cpu"
