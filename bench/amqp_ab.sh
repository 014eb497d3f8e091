#!/usr/bin/env bash
# CPU and context switches per message of two beamlab builds at a fixed
# rate, side by side (#33). On a loaded machine CPU time per message moves
# by a half between rounds; the number of times the VM's threads go to
# sleep and are woken for the same traffic (context switches: its wake-ups
# per burst) moves less. Each round runs A then B (B then A in even
# rounds) with the `fixed' scenario of bench/amqp_vs_perftest.sh and
# counts with `perf stat' (software events: this VM has no hardware
# counters) over a window of the steady state; prints per round µs of CPU
# and context switches per message, the ratios B/A and their medians.
#
#   A=bench/_work/beamlab-before B=./beamlab bench/amqp_ab.sh [RATE] [ROUNDS] [WINDOW]
#
# A_FLAGS / B_FLAGS add emulator flags to one side (after the launcher's),
# e.g. A=./beamlab B=./beamlab B_FLAGS="+S 1" compares VM flags on one build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RATE=${1:-10000}
ROUNDS=${2:-5}
WINDOW=${3:-8}
A=${A:?A=path/to/beamlab (the build before)}
B=${B:-$ROOT/beamlab}
PORT=${BEAMLAB_RABBIT_PORT:-5851}
export BEAMLAB_RABBIT_PORT=$PORT
URI="amqp://guest:guest@127.0.0.1:$PORT/%2F"
WORK=$ROOT/bench/_work/ab
mkdir -p "$WORK"
command -v perf >/dev/null || { echo "amqp_instr.sh: perf is not installed" >&2; exit 2; }
# The broker and its epmd are the bench's own (bench/amqp-epmd.sh).
. "$ROOT/bench/amqp-epmd.sh"
private_broker
EVENTS=task-clock,context-switches
echo "broker: RabbitMQ on 127.0.0.1:$PORT; $RATE msg/s, $ROUNDS rounds, $WINDOW s counted after 4 s; events $EVENTS"
echo "A: $A ${A_FLAGS:+(flags $A_FLAGS)}; B: $B ${B_FLAGS:+(flags $B_FLAGS)}"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# one BUILD LABEL FLAGS: "µs of CPU per message, context switches per message" in the window.
one() {
    local build=$1 label=$2 flags=$3 out="$WORK/$2.log" pid ms cs recv
    ERL_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none $flags" escript "$build" amqp -h "$URI" \
        -x 1 -y 1 -u qf -r "$RATE" -f mandatory -q 300 -c 100 -z $((WINDOW + 6)) >"$out" 2>&1 &
    pid=$!
    sleep 4
    # The escript's VM is the process started (escript execs beam.smp).
    read -r ms cs < <(perf stat -x, -e "$EVENTS" -p "$pid" -- sleep "$WINDOW" 2>&1 >/dev/null |
                      awk -F, '/task-clock/ {m = $1} /context-switches/ {c = $1} END {print m, c}')
    wait "$pid" || true
    recv=$(awk -F'received: ' '/ time [0-9.]+ s, sent/ {split($2, a, " "); n++; if (n > 4 && n <= 4 + w) s += a[1]} END {print s}' \
           w="$WINDOW" "$out")
    awk -v m="$ms" -v c="$cs" -v r="$recv" 'BEGIN {printf "%.2f %.3f\n", m * 1000 / r, c / r}'
}

declare -a CA CB SA SB RC RS
for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then
        a=$(one "$A" A "${A_FLAGS:-}"); b=$(one "$B" B "${B_FLAGS:-}")
    else
        b=$(one "$B" B "${B_FLAGS:-}"); a=$(one "$A" A "${A_FLAGS:-}")
    fi
    read -r ca sa <<<"$a"; read -r cb sb <<<"$b"
    CA+=("$ca"); CB+=("$cb"); SA+=("$sa"); SB+=("$sb")
    RC+=("$(awk -v a="$ca" -v b="$cb" 'BEGIN {printf "%.2f", b / a}')")
    RS+=("$(awk -v a="$sa" -v b="$sb" 'BEGIN {printf "%.2f", b / a}')")
    echo "round $round: us CPU/msg A $ca B $cb (B/A ${RC[-1]}); context switches/msg A $sa B $sb (B/A ${RS[-1]}) (load $(cut -d' ' -f1 /proc/loadavg))"
done
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "medians: us CPU/msg A $(med "${CA[@]}") B $(med "${CB[@]}"), B/A $(med "${RC[@]}"); context switches/msg A $(med "${SA[@]}") B $(med "${SB[@]}"), B/A $(med "${RS[@]}")"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
