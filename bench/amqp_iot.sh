#!/usr/bin/env bash
# The IoT scenario (issue #33 items 3-4): N producers, each on its own
# connection, publishing one message every 5 s after a random start delay
# of up to 5 s, no consumers (PerfTest's documented IoT test):
#   beamlab amqp -x N -y 0 -P 5 -prsd 5 --connection-rate R -z SECS
#   perftest     -x N -y 0 -P 5 -prsd 5 -niot T -niotp 2T -pst T -z SECS
# against one private broker, for N = 1000 5000 10000 15000 (NS="..."),
# beamlab first, then PerfTest with its NIO settings (PT=0 skips it).
#
# For each run it prints:
#   up s        wall time from the tool's start to its first interval line
#               (connection set-up: paced at R/s for beamlab)
#   sent        messages the run sent, and the expected count N * SECS / 5
#               (SECS a multiple of 5: each producer publishes SECS/5 times
#               whatever its start delay)
#   late        (beamlab) publishes more than one interval after they were due
#   KiB/conn    (beamlab) the VM's growth from before its connections to the
#               stop, per connection (beamlab's own line: erlang:memory(total))
#   RSS MiB     the tool's peak resident memory (VmHWM); at the end, per
#               connection: RSS's growth from the smallest N to this one
#               over the connections added (the VM's or JVM's fixed part
#               cancels out)
#   CPU us/msg  the tool's CPU (utime+stime, whole run, set-up included) per sent message
#   broker      its resident memory and open files per connection (growth
#               from before the run to its last interval line, over N)
# plus the broker's resident memory per connection (its RSS with the
# connections open, minus before, over N).
#
# File descriptors: one per connection in the client and one in the broker;
# the script raises its own soft limit (inherited by the broker it starts
# and by the tools) to the hard limit, and refuses an N that does not fit.
#
#   bench/amqp_iot.sh [SECONDS]         (default 30)
# NS="1000 5000" selects the sizes, RATE=500 the connections per second,
# NIOT=8 PerfTest's NIO threads, BEAMLAB=path another escript.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$ROOT/bench/_work
SECS=${1:-30}
NS=${NS:-1000 5000 10000 15000}
RATE=${RATE:-500}
NIOT=${NIOT:-8}
PT=${PT:-1}
PORT=${BEAMLAB_RABBIT_PORT:-5795}
export BEAMLAB_RABBIT_PORT=$PORT
# The broker and the generator share one scheduling group (see
# amqp_scale.sh): the broker gets the CPU the tool leaves.
export BEAMLAB_RABBIT_SESSION=caller
URI="amqp://guest:guest@127.0.0.1:$PORT/%2F"
BEAMLAB=${BEAMLAB:-$ROOT/beamlab}
PERFTEST=${BEAMLAB_PERFTEST_PREFIX:-/opt/beamlab-perftest/2.22.1}/bin/perftest
CLK_TCK=$(getconf CLK_TCK)
PAGE_KB=$(( $(getconf PAGESIZE) / 1024 ))
mkdir -p "$WORK"

ulimit -n "$(ulimit -Hn)"
FDS=$(ulimit -n)
for n in $NS; do
    if [ $((n + 1000)) -gt "$FDS" ]; then
        echo "amqp_iot.sh: N=$n does not fit in $FDS open files per process (one per connection, plus ~1000)" >&2
        exit 2
    fi
done
[ -x "$BEAMLAB" ] || make -C "$ROOT" escript >/dev/null
[ "$PT" = 0 ] || "$ROOT/scripts/install-perftest.sh" >&2

# The broker and its epmd are the bench's own (bench/amqp-epmd.sh).
. "$ROOT/bench/amqp-epmd.sh"
private_broker
BROKER_PID=$(cat "${BEAMLAB_RABBIT_DIR:-$ROOT/_build/rabbitmq/$PORT}/rabbit.pid")

BROKER_FDS=$(ls "/proc/$BROKER_PID/fd" 2>/dev/null | wc -l)

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
ticks() { local s; read -r s <"/proc/$1/stat" 2>/dev/null || { echo 0; return; }
          local -a f=($s); echo $((f[13] + f[14])); }

echo "broker: RabbitMQ on 127.0.0.1:$PORT (pid ${BROKER_PID:-?}); $SECS s per run; open files per process: $FDS"
echo "machine: $(nproc) CPUs, $(free -m | awk '/^Mem/ {print $2}') MiB; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "scenario: -x N -y 0 -P 5 -prsd 5 (beamlab: --connection-rate $RATE; PerfTest: -niot $NIOT -niotp $((2 * NIOT)) -pst $NIOT)"
printf "%-8s %6s %6s %9s %9s %6s %9s %8s %10s %11s %12s %s\n" tool N up_s sent expected late KiB/conn RSS_MiB CPU_us/msg broker_KiB/c broker_fds/c result

# run TOOL N CMD...: runs CMD with its output in a log, samples its
# memory and CPU (the tool's own OS process: escript and the java launcher
# exec in place) and the broker's memory while the connections are open.
run() {
    local tool=$1 n=$2; shift 2
    local log="$WORK/iot-$tool-$n.log" fifo="$WORK/iot-fifo.$$"
    local t0 up="-" line pid broker0 broker1=0 bfds=0 hwm=0 cpu=0 sent=0 late="-" kib="-" result=ok
    broker0=$(rss_kb "${BROKER_PID:-0}")
    rm -f "$fifo"; mkfifo "$fifo"
    t0=$(date +%s.%N)
    "$@" >"$fifo" 2>&1 &
    pid=$!
    : >"$log"
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$log"
        if [[ $up = - && $line =~ time:?\ [0-9.]+\ ?s, ]]; then
            up=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
        fi
        # The last interval line: every connection is open; sample then.
        if [[ $line =~ time:?\ ([0-9.]+)\ ?s, ]] && [ "${BASH_REMATCH[1]%.*}" -ge $((SECS - 2)) ]; then
            hwm=$(hwm_kb "$pid"); cpu=$(ticks "$pid"); broker1=$(rss_kb "${BROKER_PID:-0}")
            bfds=$(ls "/proc/$BROKER_PID/fd" 2>/dev/null | wc -l)
        fi
    done <"$fifo"
    wait "$pid" || result="exit $?"
    rm -f "$fifo"
    if [[ $(cat "$log") =~ sending\ rate\ avg:\ ([0-9.]+) ]]; then
        sent=$(awk -v r="${BASH_REMATCH[1]}" -v s="$SECS" 'BEGIN {printf "%.0f", r * s}')
    fi
    if [[ $(cat "$log") =~ accounting:\ sent\ ([0-9]+) ]]; then sent=${BASH_REMATCH[1]}; fi
    if [[ $(cat "$log") =~ late:\ ([0-9]+)\ of ]]; then late=${BASH_REMATCH[1]}; fi
    if [[ $(cat "$log") =~ ([0-9]+)\ KiB\ per\ connection ]]; then kib=${BASH_REMATCH[1]}; fi
    # PerfTest logs warnings while closing sockets at the end: only what
    # stops connections or producers counts as a failure.
    grep -qiE "OutOfMemory|Too many open files|TimeoutException|Connection refused|unable to create|^beamlab: " "$log" \
        && result="failed (see $log)"
    printf "%-8s %6d %6s %9d %9.0f %6s %9s %8.0f %10.1f %11.1f %12.2f %s\n" "$tool" "$n" "$up" "$sent" \
        "$(awk -v n="$n" -v s="$SECS" 'BEGIN {print n * int(s / 5)}')" "$late" "$kib" \
        "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')" \
        "$(awk -v t="$cpu" -v hz="$CLK_TCK" -v m="$sent" 'BEGIN {print (m > 0 ? t / hz * 1e6 / m : 0)}')" \
        "$(awk -v a="$broker0" -v b="$broker1" -v n="$n" 'BEGIN {print (b - a) / n}')" \
        "$(awk -v a="$BROKER_FDS" -v b="$bfds" -v n="$n" 'BEGIN {print (b - a) / n}')" "$result"
    RSS[$tool-$n]=$hwm
    # The broker must have closed this run's connections before the next
    # opens its own (one file each, 20,000 at most): wait for its open
    # files to come back to where they were (at most a minute).
    local i
    for i in $(seq 60); do
        [ "$(ls "/proc/$BROKER_PID/fd" 2>/dev/null | wc -l)" -le $((BROKER_FDS + 50)) ] && break
        sleep 1
    done
}

declare -A RSS
for n in $NS; do
    run beamlab "$n" escript "$BEAMLAB" amqp -h "$URI" -x "$n" -y 0 -P 5 -prsd 5 \
        --connection-rate "$RATE" -z "$SECS" -st 30
    if [ "$PT" != 0 ]; then
        run perftest "$n" "$PERFTEST" -h "$URI" -x "$n" -y 0 -P 5 -prsd 5 \
            -niot "$NIOT" -niotp $((2 * NIOT)) -pst "$NIOT" -z "$SECS"
    fi
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "resident memory per connection, marginal from the smallest N:"
read -r n0 _ <<<"$NS"
for tool in beamlab perftest; do
    [ -n "${RSS[$tool-$n0]:-}" ] || continue
    for n in $NS; do
        [ "$n" = "$n0" ] && continue
        [ -n "${RSS[$tool-$n]:-}" ] || continue
        printf "%-8s N=%-6d (RSS %d - %d KiB) / %d = %.1f KiB per connection\n" "$tool" "$n" \
            "${RSS[$tool-$n]}" "${RSS[$tool-$n0]}" $((n - n0)) \
            "$(awk -v a="${RSS[$tool-$n]}" -v b="${RSS[$tool-$n0]}" -v d=$((n - n0)) 'BEGIN {print (a - b) / d}')"
    done
done
echo "up_s: start to first interval line; expected: N x (SECS - 2.5) / 5; late: publishes > one interval late;"
echo "KiB/conn: beamlab's VM growth per connection; RSS: peak resident (VmHWM); CPU: whole run per sent message."
