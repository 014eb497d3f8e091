#!/usr/bin/env bash
# The JIT against the interpreter on decoding a map of long lists (the
# suite's serialization[term=map_of_lists], 0.75 in docs/jit-study.md):
# time per binary_to_term/1 and where the garbage collections ran, both
# flavours of the OTP 27 that scripts/install-otp.sh builds, alternating,
# ROUNDS rounds (default 5); prints the medians and the JIT/interpreter
# speed ratio (< 1: the JIT is slower).
#   bench/jit_decode_gc.sh [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-5}
PREFIX=${BEAMLAB_OTP27_PREFIX:-/opt/beamlab-otp/27}
WORK=$ROOT/bench/_work
mkdir -p "$WORK"
[ -x "$PREFIX/bin/erl" ] || "$ROOT/scripts/install-otp.sh" >&2
"$PREFIX/bin/erlc" -o "$WORK" "$ROOT/bench/jit_decode_gc.erl"
declare -A US
for r in $(seq 1 "$ROUNDS"); do
    for f in jit emu; do
        line=$("$PREFIX/bin/erl" -emu_flavor "$f" -noshell -pa "$WORK" -run jit_decode_gc main)
        echo "round $r $line"
        US[$f]="${US[$f]:-} $(sed -E 's/^[a-z]+: ([0-9.]+) us per decode.*/\1/' <<<"$line")"
    done
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
j=$(med "${US[jit]}"); e=$(med "${US[emu]}")
echo "median us per decode: jit $j, emu $e; JIT/interpreter speed ratio $(awk -v j="$j" -v e="$e" 'BEGIN{printf "%.2f", e/j}')"
