#!/bin/sh
# scripts/bench-check.sh [BASE]
#
# beamlab checks itself (docs/ci.md, "beamlab checks itself"): its hot
# paths (bench/*_bench.erl) in the working tree against BASE (default
# HEAD~1, the previous commit), gated on reductions per iteration, which
# the load of a shared CI runner does not move (a time gate would flake
# there); time and memory are reported, not gated. A hot path doing more
# than 2% more work fails (exit 1). .ci/run runs it after the tests; run
# it from a clone after `make', e.g. `scripts/bench-check.sh main'
# before a merge. 14 rounds: its 10 benchmarks x 3 metrics are judged
# together at 1% (Bonferroni), which 8 rounds could not reach.
#
# A base that is not in the clone (a shallow clone, the first commit) is
# said in one line and passes: there is nothing to compare with. A
# regression that is the price of a change is accepted by a line
# `Bench-accepted: WHY' in the message of a commit of BASE..HEAD: the
# check still runs and prints its verdict, and passes.
set -eu
cd "$(dirname "$0")/.."
BASE=${1:-HEAD~1}
printf '\n==> beamlab check --against %s (reductions gate, 2%%)\n' "$BASE"
if ! git rev-parse -q --verify "$BASE^{commit}" >/dev/null; then
    if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
        echo "bench-check: skipped: $BASE is not in this shallow clone (git fetch --deepen=1 brings the previous commit)"
    else
        echo "bench-check: skipped: no commit $BASE in this repository"
    fi
    exit 0
fi
[ -x ./beamlab ] || { echo "bench-check: ./beamlab is not built: run make first" >&2; exit 2; }
set +e
./beamlab check --against "$BASE" --metric reductions --threshold 2% --rounds 14 -d 20 -s 1 -w 0
code=$?
set -e
[ "$code" = 1 ] || exit "$code"
accepted=$(git log --format=%B "$BASE..HEAD" | sed -n 's/^Bench-accepted: *//p' | head -1)
if [ -n "$accepted" ]; then
    echo "bench-check: passed: the regression is accepted (Bench-accepted: $accepted)"
    exit 0
fi
echo "bench-check: FAILED: a hot path does more work per iteration than in $BASE (the lines above name it)." >&2
echo "bench-check: if that is the price of the change, say so in its commit message: Bench-accepted: WHY" >&2
exit 1
