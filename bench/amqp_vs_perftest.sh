#!/usr/bin/env bash
# beamlab amqp vs RabbitMQ PerfTest 2.22.1 on the same private broker, in one
# run, alternating the two tools on the same scenarios (issues #6, #26):
#   single:  -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100 (unlimited rate)
#   fixed:   -x 1 -y 1 -u qf -r 10000 -f mandatory -q 300 -c 100 (a fixed rate;
#            FIXED_RATE=N sets another)
#   multi:   -x 10 -y 20 -f mandatory -q 300 -c 100 over perf-test-1..10
#   varrate: -x 2 -y 2 -u qv -q 300 -c 100, 2000 then 12000 msg/s per producer,
#            3 s each (--variable-rate 2000:3 --variable-rate 12000:3)
#   quorum:  -x 1 -y 1 -qq -u qq1 -f mandatory -q 300 -c 100 (a quorum queue)
#   stream:  -x 1 -y 1 -sq -u sq1 -c 100 (a stream over AMQP 0-9-1, prefetch 200)
#   tls:     the single scenario over amqps:// (no certificate check on either
#            side: PerfTest's amqps:// default, beamlab's --tls-insecure)
# CASES="single quorum" selects scenarios (default: all).
# FLOOR=1 also runs, in the rate-limited scenarios (fixed, varrate), the
# floor client bench/amqp_floor.erl: the same traffic from one process per
# socket doing nothing but send, count and ack, i.e. the least CPU per
# message any client on this VM spends on it (the platform's share).
# RATES="2000 10000 30000 60000" runs `fixed' once per rate (scenarios
# fixed-2000 ...; default: FIXED_RATE alone). BEFORE=path/to/beamlab also
# runs another build of the escript (tool `before', e.g. the one before a
# change) next to this one in every scenario. With FLOOR=1 the end is the
# table docs/amqp.md records: per rate, µs of CPU per message of each
# client and the ratios (#33). A full run of the table (RATES of four,
# varrate, FLOOR=1, BEFORE, 15 s, 3 rounds) takes about 25 minutes.
#
# Steady state only: both tools print one line per second ("time T s, ...,
# received: R msg/s"). The script reads each line the moment the tool writes
# it and, at that moment, samples utime+stime of the tool's OS process from
# /proc/<pid>/stat (the Erlang VM or the JVM, all threads). The measurement
# window runs from the first line with T >= WARMUP to the last line, so
# process start, connection set-up, JVM class loading and JIT warm-up, and
# the stop/drain at the end are outside it. In that window:
#   received msg/s = sum of R * (T - previous T) over the window's lines / (T_last - T_start)
#   CPU us/msg     = CPU ticks between the two lines' samples / messages received
# Per scenario and tool the medians over the rounds are compared; both ratios
# are beamlab/PerfTest. PerfTest is the one scripts/install-perftest.sh
# installs (run here if missing; BEAMLAB_PERFTEST_PREFIX as there).
#
#   bench/amqp_vs_perftest.sh [SECONDS] [ROUNDS] [WARMUP]   (defaults: 20 s, 3 rounds, 5 s)
# BEAMLAB=path/to/beamlab measures another build of the escript.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$ROOT/bench/_work
SECS=${1:-20}
ROUNDS=${2:-3}
WARMUP=${3:-5}
PORT=${BEAMLAB_RABBIT_PORT:-5682}
TLS_PORT=$((PORT + 1))
export BEAMLAB_RABBIT_PORT=$PORT
URI="amqp://guest:guest@127.0.0.1:$PORT/%2F"
TLS_URI="amqps://guest:guest@127.0.0.1:$TLS_PORT/%2F"
CASES=${CASES:-single fixed multi varrate quorum stream tls}
FIXED_RATE=${FIXED_RATE:-10000}
RATES=${RATES:-$FIXED_RATE}
BEFORE=${BEFORE:-}
T_START=$(date +%s)
CLK_TCK=$(getconf CLK_TCK)
BEAMLAB=${BEAMLAB:-$ROOT/beamlab}
mkdir -p "$WORK"
BEAMLAB_AMQP_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none ${ERL_FLAGS:-}"

if [ "$WARMUP" -ge $((SECS - 2)) ]; then
    echo "usage: $0 [SECONDS] [ROUNDS] [WARMUP]: WARMUP must be at least 3 s shorter than SECONDS" >&2
    exit 2
fi

. "$ROOT/bench/amqp-measure.sh"

declare -A RATE CPU
run() {   # tool scenario args...
    local tool=$1 name=$2; shift 2
    local out="$WORK/$tool-$name-$round.log" res rate cpu_us secs cpu la
    local uri=$URI
    [ "$name" = tls ] && uri=$TLS_URI
    [ "$name" = tls ] && [ "$tool" = beamlab ] && set -- "$@" --tls-insecure
    la=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$tool" = before ]; then
        URI=$uri load beamlab "$out" "$BEFORE" "$@"
    elif [ "$tool" = floor ]; then
        # shellcheck disable=SC2086  # flags and FLOOR_ARGS are words
        measure "$out" erl $BEAMLAB_AMQP_FLAGS -noshell -pa "$ROOT/_build/default/lib/beamlab/ebin" \
            -pa "$WORK" -run amqp_floor main "$PORT" ${FLOOR_ARGS[$name]} "$SECS"
    else
        URI=$uri load "$tool" "$out" "$BEAMLAB" "$@"
    fi
    # Quorum queues and streams outlive a PerfTest run (not auto-delete):
    # every run starts from an empty queue.
    "$ROOT/scripts/rabbitmq.sh" ctl -q delete_queue qq1 >/dev/null 2>&1 || true
    "$ROOT/scripts/rabbitmq.sh" ctl -q delete_queue sq1 >/dev/null 2>&1 || true
    res=$(window "$out.samples")
    if [ -z "$res" ]; then
        echo "$tool $name: fewer than two interval lines after ${WARMUP} s; log follows" >&2
        tail -n 20 "$out" >&2; exit 1
    fi
    read -r rate cpu_us secs cpu <<<"$res"
    printf "%-9s %-7s round %d: received %7s msg/s, CPU %6s s over %4s s, %7s us CPU/msg (load %s)\n" \
        "$tool" "$name" "$round" "$rate" "$cpu" "$secs" "$cpu_us" "$la"
    RATE[$tool-$name]="${RATE[$tool-$name]:-} $rate"
    CPU[$tool-$name]="${CPU[$tool-$name]:-} $cpu_us"
}

install_perftest "$ROOT"
[ -x "$BEAMLAB" ] || make -C "$ROOT" escript >/dev/null
# Certificates for the TLS listener, made with OTP's public_key.
TLS_DIR="$WORK/tls"
if [ ! -s "$TLS_DIR/server.key" ]; then
    mkdir -p "$TLS_DIR"
    erlc -o "$WORK" "$ROOT/test/beamlab_test_tls.erl"
    erl -noshell -pa "$WORK" -eval "ok = beamlab_test_tls:make(\"$TLS_DIR\"), halt()."
fi
# The broker and its epmd are the bench's own (bench/amqp-epmd.sh): a run
# leaves nothing running that it started, and stops no other job's epmd.
. "$ROOT/bench/amqp-epmd.sh"
BEAMLAB_RABBIT_TLS_PORT=$TLS_PORT BEAMLAB_RABBIT_TLS_DIR=$TLS_DIR private_broker

declare -A ARGS FLOOR_ARGS
ARGS[single]="-x 1 -y 1 -u q1 -f mandatory -q 300 -c 100"
# `fixed' stands for one scenario per rate of RATES.
EXPANDED=""
for name in $CASES; do
    if [ "$name" = fixed ]; then
        for r in $RATES; do
            ARGS[fixed-$r]="-x 1 -y 1 -u qf -r $r -f mandatory -q 300 -c 100"
            # The floor client's arguments for the same traffic: producers,
            # consumers, queue, rate steps (msg/s per producer[:seconds,...]).
            FLOOR_ARGS[fixed-$r]="1 1 qf $r"
            EXPANDED="$EXPANDED fixed-$r"
        done
    else
        EXPANDED="$EXPANDED $name"
    fi
done
CASES=$EXPANDED
ARGS[multi]="-x 10 -y 20 -f mandatory -q 300 -c 100 --queue-pattern perf-test-%d --queue-pattern-from 1 --queue-pattern-to 10"
ARGS[varrate]="-x 2 -y 2 -u qv -q 300 -c 100 --variable-rate 2000:3 --variable-rate 12000:3"
ARGS[quorum]="-x 1 -y 1 -qq -u qq1 -f mandatory -q 300 -c 100"
ARGS[stream]="-x 1 -y 1 -sq -u sq1 -c 100"
ARGS[tls]="${ARGS[single]}"
FLOOR_ARGS[varrate]="2 2 qv 2000:3,12000:3"
if [ -n "${FLOOR:-}" ]; then
    [ -d "$ROOT/_build/default/lib/beamlab/ebin" ] || make -C "$ROOT" escript >/dev/null
    erlc -I "$ROOT/include" -o "$WORK" "$ROOT/bench/amqp_floor.erl"
fi

echo "broker: RabbitMQ on 127.0.0.1:$PORT; $SECS s per run, $ROUNDS rounds, tools alternating"
echo "machine: $(nproc) CPUs, $(uname -r); Erlang $(erl -noshell -eval 'io:put_chars(erlang:system_info(otp_release)), halt().'); $(java -version 2>&1 | head -1)"
echo "measured: steady state only, from the tool's first interval line at >= ${WARMUP} s to its last one;"
echo "  received msg/s from the tool's own per-second lines, CPU = utime+stime of the tool's process"
echo "  (/proc/<pid>/stat, all threads) between the same two lines"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average at start: $LOAD_START"
for round in $(seq 1 "$ROUNDS"); do
    # beamlab first in odd scenarios, PerfTest first in even ones.
    i=0
    for name in $CASES; do
        # shellcheck disable=SC2086  # ARGS are words
        if [ $((i % 2)) -eq 0 ]; then
            run beamlab "$name" ${ARGS[$name]}; run perftest "$name" ${ARGS[$name]}
        else
            run perftest "$name" ${ARGS[$name]}; run beamlab "$name" ${ARGS[$name]}
        fi
        if [ -n "$BEFORE" ]; then
            run before "$name" ${ARGS[$name]}
        fi
        if [ -n "${FLOOR:-}" ] && [ -n "${FLOOR_ARGS[$name]:-}" ]; then
            run floor "$name"
        fi
        i=$((i + 1))
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "medians over $ROUNDS rounds:"
echo "scenario  beamlab msg/s  PerfTest msg/s  throughput ratio  beamlab us/msg  PerfTest us/msg  CPU/msg ratio"
for name in $CASES; do
    br=$(median "${RATE[beamlab-$name]}"); pr=$(median "${RATE[perftest-$name]}")
    bc=$(median "${CPU[beamlab-$name]}"); pc=$(median "${CPU[perftest-$name]}")
    printf "%-8s  %13s  %14s  %16s  %14s  %15s  %13s\n" "$name" "$br" "$pr" \
        "$(awk -v a="$br" -v b="$pr" 'BEGIN{printf "%.2f", a/b}')" "$bc" "$pc" \
        "$(awk -v a="$bc" -v b="$pc" 'BEGIN{printf "%.2f", a/b}')"
done
echo "throughput ratio = beamlab/PerfTest steady-state received msg/s (>= 1: beamlab at least matches);"
echo "CPU/msg ratio = beamlab/PerfTest steady-state generator CPU per received message (< 1: beamlab lighter)."
if [ -n "${FLOOR:-}" ]; then
    echo
    echo "the floor (bench/amqp_floor.erl: the same traffic, one process per socket, nothing but send, count, ack):"
    echo "scenario  floor msg/s  floor us/msg  floor/PerfTest CPU/msg  beamlab/floor CPU/msg"
    for name in $CASES; do
        [ -n "${FLOOR_ARGS[$name]:-}" ] || continue
        fr=$(median "${RATE[floor-$name]}"); fc=$(median "${CPU[floor-$name]}")
        bc=$(median "${CPU[beamlab-$name]}"); pc=$(median "${CPU[perftest-$name]}")
        printf "%-8s  %11s  %12s  %22s  %21s\n" "$name" "$fr" "$fc" \
            "$(awk -v a="$fc" -v b="$pc" 'BEGIN{printf "%.2f", a/b}')" \
            "$(awk -v a="$bc" -v b="$fc" 'BEGIN{printf "%.2f", a/b}')"
    done
fi
if [ -n "$BEFORE" ]; then
    echo
    echo "this build against BEFORE=$BEFORE (same scenarios, same rounds):"
    echo "scenario  before us/msg  beamlab us/msg  beamlab/before CPU/msg"
    for name in $CASES; do
        oc=$(median "${CPU[before-$name]}"); bc=$(median "${CPU[beamlab-$name]}")
        printf "%-8s  %13s  %14s  %22s\n" "$name" "$oc" "$bc" \
            "$(awk -v a="$bc" -v b="$oc" 'BEGIN{printf "%.2f", a/b}')"
    done
fi
if [ -n "${FLOOR:-}" ]; then
    # The table of docs/amqp.md: medians of µs of CPU per received message.
    echo
    echo "for docs/amqp.md (medians over $ROUNDS rounds, us of CPU per received message; load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end):"
    echo
    if [ -n "$BEFORE" ]; then
        echo "| scenario | beamlab | before | PerfTest | floor | beamlab/PerfTest | beamlab/floor | before/floor | floor/PerfTest |"
        echo "|---|---|---|---|---|---|---|---|---|"
    else
        echo "| scenario | beamlab | PerfTest | floor | beamlab/PerfTest | beamlab/floor | floor/PerfTest |"
        echo "|---|---|---|---|---|---|---|"
    fi
    for name in $CASES; do
        [ -n "${FLOOR_ARGS[$name]:-}" ] || continue
        bc=$(median "${CPU[beamlab-$name]}"); pc=$(median "${CPU[perftest-$name]}")
        fc=$(median "${CPU[floor-$name]}")
        r() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
        if [ -n "$BEFORE" ]; then
            oc=$(median "${CPU[before-$name]}")
            printf "| %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s |\n" "$name" "$bc" "$oc" "$pc" "$fc" \
                "$(r "$bc" "$pc")" "$(r "$bc" "$fc")" "$(r "$oc" "$fc")" "$(r "$fc" "$pc")"
        else
            printf "| %s | %.1f | %.1f | %.1f | %s | %s | %s |\n" "$name" "$bc" "$pc" "$fc" \
                "$(r "$bc" "$pc")" "$(r "$bc" "$fc")" "$(r "$fc" "$pc")"
        fi
    done
fi
if [ -n "${FLOOR:-}" ]; then
    # A client that did not reach a fixed rate sent bigger bursts (less CPU
    # per message): its figure is not comparable with the others'.
    for name in $CASES; do
        case $name in fixed-*) want=${name#fixed-} ;; *) continue ;; esac
        for tool in beamlab before perftest floor; do
            got=$(median "${RATE[$tool-$name]:-}")
            [ "$got" = - ] && continue
            if awk -v g="$got" -v w="$want" 'BEGIN{exit !(g < 0.95 * w)}'; then
                echo "note: at $want msg/s $tool received only $got msg/s (median): its CPU per message is not comparable"
            fi
        done
    done
fi
echo
echo "the run took $(( ($(date +%s) - T_START) / 60 )) min $(( ($(date +%s) - T_START) % 60 )) s"
