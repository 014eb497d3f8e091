#!/bin/sh
# bench/check_vm_start.sh OLD NEW [CHECKS] [ROUNDS]
#
# What a side's VM costs in `beamlab check --against': two beamlab
# escripts (OLD, NEW: copies, so that the tree can be rebuilt meanwhile)
# check the same sample rebar3 project (two benchmarks, as
# bench/check_false_alarms.sh's; a second commit that changes nothing
# measurable) against HEAD~1, in turn, CHECKS times each (default 3),
# ROUNDS rounds a check (default 6), with the fewest samples (-d 20 -s 1
# -w 0) so that a side is mostly its VM: started, given its code,
# running the two benchmarks, stopped. A side's time is read from the
# check's progress lines (`round I/N: SIDE', on stderr when it goes to a
# file too), from one to the next: every side but the last of a check.
# Prints the median time of a side per escript, the ratio NEW/OLD, the
# count of sides and the load average before and after. Run from the
# repository root after `make'. docs/ci.md records its output.
set -eu
[ $# -ge 2 ] || { echo "check_vm_start: usage: bench/check_vm_start.sh OLD NEW [CHECKS] [ROUNDS]" >&2; exit 2; }
OLD=$(realpath "$1"); NEW=$(realpath "$2")
CHECKS=${3:-3}; ROUNDS=${4:-6}
for B in "$OLD" "$NEW"; do
    [ -x "$B" ] || { echo "check_vm_start: $B is not an executable escript" >&2; exit 2; }
done
DIR=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-vm-start.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
P=$DIR/sample
. "$(dirname "$0")/check_sample.sh"
sample_project "$P"
echo "A sample project." > "$P/README.md"
git -C "$P" add -A && git_commit "nothing measurable"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
i=1
while [ "$i" -le "$CHECKS" ]; do
    for which in old new; do
        if [ $which = old ]; then B=$OLD; else B=$NEW; fi
        # each progress line stamped with the time it was read (ms)
        (cd "$P" && "$B" check --against HEAD~1 --rounds "$ROUNDS" -d 20 -s 1 -w 0 --alpha 0.5 \
            2>&1 >/dev/null | while IFS= read -r line; do
                echo "$(date +%s%3N) $line"
            done) > "$DIR/log"
        grep -q ' round [0-9]*/[0-9]*: ' "$DIR/log" ||
            { echo "check_vm_start: the check with $B ran no rounds:" >&2; cat "$DIR/log" >&2; exit 1; }
        awk -v w=$which '/ round [0-9]+\/[0-9]+: (base|head)/ { if (prev) print w, $1 - prev; prev = $1 }' \
            "$DIR/log" >> "$DIR/sides"
    done
    i=$((i + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
sort -k1,1 -k2,2n "$DIR/sides" | awk '
    { v[$1, ++n[$1]] = $2 }
    END {
        for (w in n) { k = n[w]; m[w] = (k % 2) ? v[w, (k + 1) / 2] : (v[w, k / 2] + v[w, k / 2 + 1]) / 2
                       printf "%s: median %d ms a side (%d sides, %d..%d ms)\n", w, m[w], k, v[w, 1], v[w, k] }
        if (m["old"] > 0) printf "new/old: %.2f\n", m["new"] / m["old"] }'
