#!/usr/bin/env bash
# Scale of one beamlab generator VM (issue 13): memory per channel and CPU
# per message at 1, 10 and 100 queues against RabbitMQ PerfTest 2.22.1, and
# the NUMA reference's full load (4,500 closed-loop channels, each with its
# own queue) from beamlab alone, on one private broker, tools alternating
# in every round:
#   q1:     -x 1   -y 1   -u q1 -f mandatory -q 300 -c 100           (2 channels)
#   q10:    -x 10  -y 10  -f mandatory -q 300 -c 100 over 10 queues  (20 channels)
#   q100:   -x 150 -y 300 -f mandatory -q 300 -c 100 over 100 queues (450 channels;
#           the multi-queue scenario of the NUMA reference)
#   loop4500: beamlab amqp --closed-loop 4500                        (4,500 channels)
#
# Steady state only (as bench/amqp_vs_perftest.sh): at each of the tool's
# per-second lines the script samples the tool's process (the Erlang VM or
# the JVM): CPU ticks (utime+stime, /proc/<pid>/stat) and resident memory
# (/proc/<pid>/statm), and the broker's CPU ticks. From the first line at
# >= WARMUP s to the last:
#   received msg/s, CPU us per received message (the tool's and the broker's),
#   RSS at the last line, and memory per channel = (RSS - RSS of the same
#   tool at q1) / (channels - 2), the marginal cost of a channel (the VM's
#   or JVM's fixed footprint cancels out).
# Ratios are beamlab/PerfTest of the medians over the rounds.
#
# The broker is started in this script's session, so that it and the tool
# under test are one CPU scheduling group (Linux autogroup, when the kernel
# has it on): the broker gets the CPU the tool leaves, as on a machine of
# their own. With the broker in a session of its own (BROKER_SESSION=own),
# the kernel gives the broker a fair share against every other busy session
# on the machine whatever the tool uses, and on a shared machine the
# received rate then says more about the other sessions than about the tool.
#
#   bench/amqp_scale.sh [SECONDS] [ROUNDS] [WARMUP]   (defaults: 20 s, 3 rounds, 8 s)
#
# CASES="q100" (default "q1 q10 q100 loop4500") runs only some scenarios
# (memory per channel needs q1);
# BEAMLAB=path picks another beamlab escript (A/B comparisons).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$ROOT/bench/_work
SECS=${1:-20}
ROUNDS=${2:-3}
WARMUP=${3:-8}
PORT=${BEAMLAB_RABBIT_PORT:-5688}
export BEAMLAB_RABBIT_PORT=$PORT
export BEAMLAB_RABBIT_SESSION=${BROKER_SESSION:-caller}
URI="amqp://guest:guest@127.0.0.1:$PORT/%2F"
CLK_TCK=$(getconf CLK_TCK)
PAGE=$(getconf PAGESIZE)
mkdir -p "$WORK"
BEAMLAB_AMQP_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none ${ERL_FLAGS:-}"

. "$ROOT/bench/amqp-measure.sh"

# window SAMPLES: "<msg/s> <us CPU/msg> <RSS MiB at the last line> <broker us CPU/msg>"
window() {
    awk -v w="$WARMUP" -v hz="$CLK_TCK" -v page="$PAGE" '
        { t[NR] = $1; r[NR] = $2; k[NR] = $3; m[NR] = $4; b[NR] = $5 }
        END {
            for (i = 1; i <= NR && t[i] < w; i++) ;
            s = i; if (s >= NR) exit
            for (i = s + 1; i <= NR; i++) msgs += r[i] * (t[i] - t[i-1])
            d = t[NR] - t[s]; cpu = (k[NR] - k[s]) / hz
            if (msgs <= 0 || d <= 0) exit
            bcpu = (b[NR] - b[s]) / hz
            printf "%.0f %.2f %.1f %.2f\n", msgs / d, cpu * 1e6 / msgs, m[NR] * page / 1048576, bcpu * 1e6 / msgs
        }' "$1"
}

declare -A RATE CPU RSS BCPU CHANNELS
run() {   # tool scenario channels args...
    local tool=$1 name=$2 ch=$3; shift 3
    local out="$WORK/scale-$tool-$name-$round.log" res rate cpu_us rss bcpu_us
    CHANNELS[$name]=$ch
    wanted "$name" || return 0
    load "$tool" "$out" "$BEAMLAB" "$@"
    res=$(window "$out.samples")
    if [ -z "$res" ]; then
        echo "$tool $name: fewer than two interval lines after ${WARMUP} s; log follows" >&2
        tail -n 20 "$out" >&2; exit 1
    fi
    read -r rate cpu_us rss bcpu_us <<<"$res"
    printf "%-9s %-8s round %d: received %7s msg/s, %7s us CPU/msg, broker %7s us CPU/msg, RSS %7s MiB (%d channels)\n" \
        "$tool" "$name" "$round" "$rate" "$cpu_us" "$bcpu_us" "$rss" "$ch"
    BCPU[$tool-$name]="${BCPU[$tool-$name]:-} $bcpu_us"
    RATE[$tool-$name]="${RATE[$tool-$name]:-} $rate"
    CPU[$tool-$name]="${CPU[$tool-$name]:-} $cpu_us"
    RSS[$tool-$name]="${RSS[$tool-$name]:-} $rss"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "-" || b == "-" || b == 0) printf "-"; else printf "%.2f", a/b }'; }
per_channel() {  # tool scenario: marginal KiB per channel against q1
    local tool=$1 name=$2
    local r=$(median "${RSS[$tool-$name]:-}") r1=$(median "${RSS[$tool-q1]:-}")
    awk -v r="$r" -v r1="$r1" -v c="${CHANNELS[$name]}" \
        'BEGIN{ if (r == "-" || r1 == "-") printf "-"; else printf "%.1f", (r - r1) * 1024 / (c - 2) }'
}

CASES=${CASES:-q1 q10 q100 loop4500}
wanted() { case " $CASES " in *" $1 "*) return 0 ;; esac; return 1; }
BEAMLAB=${BEAMLAB:-$ROOT/beamlab}

install_perftest "$ROOT"
[ -x "$BEAMLAB" ] || make -C "$ROOT" escript >/dev/null
# The broker and its epmd are the bench's own (bench/amqp-epmd.sh).
. "$ROOT/bench/amqp-epmd.sh"
private_broker
BROKER_PID=$(cat "${BEAMLAB_RABBIT_DIR:-$ROOT/_build/rabbitmq/$PORT}/rabbit.pid")

Q1=(-x 1 -y 1 -u q1 -f mandatory -q 300 -c 100)
Q10=(-x 10 -y 10 -f mandatory -q 300 -c 100 --queue-pattern scale-%d --queue-pattern-from 1 --queue-pattern-to 10)
Q100=(-x 150 -y 300 -f mandatory -q 300 -c 100 --queue-pattern scale-%d --queue-pattern-from 1 --queue-pattern-to 100)

echo "broker: RabbitMQ on 127.0.0.1:$PORT (same machine); $SECS s per run, $ROUNDS rounds, tools alternating"
echo "machine: $(nproc) CPUs, $(uname -r); Erlang $(erl -noshell -eval 'io:put_chars(erlang:system_info(otp_release)), halt().'); $(java -version 2>&1 | head -1)"
echo "broker session: $BEAMLAB_RABBIT_SESSION (autogroup $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo -)); broker pid $BROKER_PID"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
    run beamlab q1 2 "${Q1[@]}"
    run perftest q1 2 "${Q1[@]}"
    run perftest q10 20 "${Q10[@]}"
    run beamlab q10 20 "${Q10[@]}"
    run beamlab q100 450 "${Q100[@]}"
    run perftest q100 450 "${Q100[@]}"
    run beamlab loop4500 4500 --closed-loop 4500
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "medians over $ROUNDS rounds (ratios beamlab/PerfTest):"
printf "%-9s %8s %10s %10s %6s %10s %10s %6s %10s %10s %10s %10s %6s\n" scenario channels \
    "bl msg/s" "pt msg/s" ratio "bl us/msg" "pt us/msg" ratio "bl brk us" "pt brk us" "bl KiB/ch" "pt KiB/ch" ratio
for name in q1 q10 q100 loop4500; do
    wanted "$name" || continue
    br=$(median "${RATE[beamlab-$name]:-}"); pr=$(median "${RATE[perftest-$name]:-}")
    bc=$(median "${CPU[beamlab-$name]:-}"); pc=$(median "${CPU[perftest-$name]:-}")
    bb=$(median "${BCPU[beamlab-$name]:-}"); pb=$(median "${BCPU[perftest-$name]:-}")
    if [ "$name" = q1 ]; then bm="-"; pm="-"; else bm=$(per_channel beamlab $name); pm=$(per_channel perftest $name); fi
    printf "%-9s %8s %10s %10s %6s %10s %10s %6s %10s %10s %10s %10s %6s\n" "$name" "${CHANNELS[$name]}" \
        "$br" "$pr" "$(ratio "$br" "$pr")" "$bc" "$pc" "$(ratio "$bc" "$pc")" "$bb" "$pb" "$bm" "$pm" "$(ratio "$bm" "$pm")"
done
for name in q1 q10 q100; do
    wanted "$name" || continue
    read -ra b <<<"${RATE[beamlab-$name]:-}"; read -ra p <<<"${RATE[perftest-$name]:-}"
    printf "%s throughput ratio per round:" "$name"
    for i in "${!b[@]}"; do printf " %s" "$(ratio "${b[$i]}" "${p[$i]:--}")"; done
    echo
done
echo "RSS at the last steady-state line (MiB): $(for n in q1 q10 q100 loop4500; do printf '%s beamlab %s / PerfTest %s; ' $n "$(median "${RSS[beamlab-$n]:-}")" "$(median "${RSS[perftest-$n]:-}")"; done)"
echo "brk us = the broker's CPU (its OS process, all threads) per received message, same window."
echo "KiB/ch = marginal resident memory per channel against q1; loop4500 has no PerfTest equivalent (PerfTest has no closed loop)."
echo "The broker runs on the same cores: a lighter generator leaves it more CPU, which shows as throughput."
