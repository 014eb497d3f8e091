#!/usr/bin/env bash
# Socket options and VM settings against CPU per message at a fixed rate
# (issue #33 item 2): the floor client (bench/amqp_floor.erl) and beamlab
# run `-x 1 -y 1 -u qf -r RATE -f mandatory -q 300 -c 100' under each
# variant, variants alternating within each round, on one private broker.
# A variant is a name for what changes:
#   base         the launcher's flags as they are
#   delay_send   {delay_send, true} on every connection (kernel's
#                inet_default_connect_options): writes queued in the port
#                and flushed together
#   buf16k       sndbuf and recbuf 16 KiB
#   buf1m        sndbuf and recbuf 1 MiB
#   active1      the floor reads with {active, 1} instead of 64 (beamlab
#                is not run: its {active, N} is fixed)
#   active512    the floor reads with {active, 512}
# VARIANTS="base delay_send" selects (default: all); TOOLS="floor" runs the
# floor only (default: "floor beamlab"). Prints per variant and tool the
# median µs of CPU per received message and msg/s, and the ratio to base.
#
#   bench/amqp_tcp_opts.sh [SECONDS] [ROUNDS] [WARMUP]   (defaults: 12 s, 3 rounds, 4 s)
# RATE=N msg/s (default 10000), BEAMLAB=path/to/beamlab.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$ROOT/bench/_work
SECS=${1:-12}
ROUNDS=${2:-3}
WARMUP=${3:-4}
PORT=${BEAMLAB_RABBIT_PORT:-5682}
export BEAMLAB_RABBIT_PORT=$PORT
URI="amqp://guest:guest@127.0.0.1:$PORT/%2F"
RATE_N=${RATE:-10000}
VARIANTS=${VARIANTS:-base delay_send buf16k buf1m active1 active512}
TOOLS=${TOOLS:-floor beamlab}
BEAMLAB=${BEAMLAB:-$ROOT/beamlab}
CLK_TCK=$(getconf CLK_TCK)
BASE_FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none"
mkdir -p "$WORK"

if [ "$WARMUP" -ge $((SECS - 2)) ]; then
    echo "usage: $0 [SECONDS] [ROUNDS] [WARMUP]: WARMUP must be at least 3 s shorter than SECONDS" >&2
    exit 2
fi

. "$ROOT/bench/amqp-measure.sh"

# The emulator flags and the floor's environment of a variant.
flags() {
    case $1 in
        delay_send) echo "$BASE_FLAGS -kernel inet_default_connect_options [{delay_send,true}]" ;;
        buf16k) echo "$BASE_FLAGS -kernel inet_default_connect_options [{sndbuf,16384},{recbuf,16384}]" ;;
        buf1m) echo "$BASE_FLAGS -kernel inet_default_connect_options [{sndbuf,1048576},{recbuf,1048576}]" ;;
        *) echo "$BASE_FLAGS" ;;
    esac
}
active_n() { case $1 in active1) echo 1 ;; active512) echo 512 ;; *) echo 64 ;; esac; }
floor_only() { case $1 in active*) return 0 ;; *) return 1 ;; esac; }

declare -A RATES CPUS
run() {   # tool variant
    local tool=$1 v=$2 out="$WORK/opts-$1-$2-$round.log" res rate cpu la
    la=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$tool" = floor ]; then
        # shellcheck disable=SC2046  # flags are words
        FLOOR_ACTIVE_N=$(active_n "$v") measure "$out" erl $(flags "$v") -noshell \
            -pa "$ROOT/_build/default/lib/beamlab/ebin" -pa "$WORK" \
            -run amqp_floor main "$PORT" 1 1 qf "$RATE_N" "$SECS"
    else
        BEAMLAB_AMQP_FLAGS=$(flags "$v") load beamlab "$out" "$BEAMLAB" \
            -x 1 -y 1 -u qf -r "$RATE_N" -f mandatory -q 300 -c 100
    fi
    res=$(window "$out.samples")
    if [ -z "$res" ]; then
        echo "$tool $v: fewer than two interval lines after ${WARMUP} s; log follows" >&2
        tail -n 20 "$out" >&2; exit 1
    fi
    read -r rate cpu _ <<<"$res"
    printf "%-8s %-11s round %d: received %7s msg/s, %7s us CPU/msg (load %s)\n" "$tool" "$v" "$round" "$rate" "$cpu" "$la"
    RATES[$tool-$v]="${RATES[$tool-$v]:-} $rate"
    CPUS[$tool-$v]="${CPUS[$tool-$v]:-} $cpu"
}

[ -x "$BEAMLAB" ] || make -C "$ROOT" escript >/dev/null
[ -d "$ROOT/_build/default/lib/beamlab/ebin" ] || make -C "$ROOT" escript >/dev/null
erlc -I "$ROOT/include" -o "$WORK" "$ROOT/bench/amqp_floor.erl"
# The broker and its epmd are the bench's own (bench/amqp-epmd.sh).
. "$ROOT/bench/amqp-epmd.sh"
private_broker

T_START=$(date +%s)
echo "broker: RabbitMQ on 127.0.0.1:$PORT; $RATE_N msg/s, $SECS s per run, $ROUNDS rounds, variants alternating"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
    for v in $VARIANTS; do
        for tool in $TOOLS; do
            [ "$tool" = beamlab ] && floor_only "$v" && continue
            run "$tool" "$v"
        done
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "medians over $ROUNDS rounds (us of CPU per received message; ratio to base of the same tool):"
echo "| variant | tool | msg/s | us/msg | /base |"
echo "|---|---|---|---|---|"
for tool in $TOOLS; do
    base=$(median "${CPUS[$tool-base]:-}")
    for v in $VARIANTS; do
        [ -n "${CPUS[$tool-$v]:-}" ] || continue
        c=$(median "${CPUS[$tool-$v]}")
        printf "| %s | %s | %s | %s | %s |\n" "$v" "$tool" "$(median "${RATES[$tool-$v]}")" "$c" \
            "$(awk -v a="$c" -v b="$base" 'BEGIN{if (b == "-" || b == 0) printf "-"; else printf "%.2f", a/b}')"
    done
done
echo
echo "the run took $(( ($(date +%s) - T_START) / 60 )) min $(( ($(date +%s) - T_START) % 60 )) s"
