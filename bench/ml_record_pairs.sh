#!/bin/sh
# bench/ml_record_pairs.sh [ROUNDS] [WARMUP_MS] [DURATION_MS]
#
# message_load's recording cost driven from a shell loop (bench/fidelity
# drives ./beamlab from an escript VM instead; docs/suite.md compares the
# two): each round one ./beamlab run with record=false and record=true as
# two points of the same VM, the order swapped every round. Prints each
# round's figures, then per figure the median over rounds of
# record=true / record=false. Defaults: 20 rounds, 5000 ms + 20000 ms.
# Run from the repository root after `make'; nothing else should run.
set -eu
ROUNDS=${1:-20}; WARMUP=${2:-5000}; DURATION=${3:-20000}
for n in "$ROUNDS" "$WARMUP" "$DURATION"; do
    case $n in ''|*[!0-9]*) bad=1;; esac
done
if [ -n "${bad:-}" ] || [ "$ROUNDS" -eq 0 ] || [ "$DURATION" -eq 0 ]; then
    echo "ml_record_pairs: usage: bench/ml_record_pairs.sh [ROUNDS>0] [WARMUP_MS] [DURATION_MS>0]" >&2
    exit 2
fi
[ -x ./beamlab ] || { echo "ml_record_pairs: ./beamlab not found: run make first" >&2; exit 2; }
RATIOS=$(mktemp)
trap 'rm -f "$RATIOS"' EXIT
echo "round order        setting goodput flushput latency_us"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    if [ $((r % 2)) = 1 ]; then order=false,true; else order=true,false; fi
    ./beamlab suite message_load -n 1 --param message_load.record=$order \
        --param message_load.warmup="$WARMUP" --param message_load.duration="$DURATION" \
        --format csv 2>/dev/null |
    awk -F, -v r="$r" -v o="$order" -v out="$RATIOS" '
        $1 == "suite" { split($2, a, "[][=/]"); v[a[3] "," $4] = $13 }
        END {
            for (i = 0; i < 2; i++) {
                s = i ? "true" : "false"
                printf "%5d %-12s %-7s %7.0f %8.0f %10.3f\n", r, o, s,
                       v[s ",goodput"], v[s ",flushput"], v[s ",latency_mean"]
            }
            printf "%f %f %f\n", v["true,goodput"] / v["false,goodput"],
                   v["true,flushput"] / v["false,flushput"],
                   v["true,latency_mean"] / v["false,latency_mean"] >> out
        }'
    r=$((r + 1))
done
median() { sort -g | awk '{ x[NR] = $1 } END { print (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2 }'; }
echo "record=true / record=false, median over $ROUNDS rounds (target 0.95..1.05):"
printf "  goodput  %.3f\n  flushput %.3f\n  latency  %.3f\n" \
    "$(cut -d' ' -f1 "$RATIOS" | median)" "$(cut -d' ' -f2 "$RATIOS" | median)" \
    "$(cut -d' ' -f3 "$RATIOS" | median)"
