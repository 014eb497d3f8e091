#!/usr/bin/env bash
# beamlab amqp vs RabbitMQ PerfTest 2.22.1 on the same private broker, in one
# run, alternating the two tools on the same scenarios:
#   single: -x 1 -y 1 -u q1 -f mandatory -q 300 -c 100
#   multi:  -x 10 -y 20 -f mandatory -q 300 -c 100 over perf-test-1..10
# Measures throughput (received msg/s, from the tool's own summary line) and
# CPU per message (utime+stime of the generator's OS process, read from
# /proc/<pid>/stat just before it exits, divided by messages received), and
# prints beamlab/PerfTest ratios. PerfTest and its dependencies are fetched
# from Maven Central into bench/_work/ (git-ignored).
#
#   bench/amqp_vs_perftest.sh [SECONDS] [ROUNDS]     (defaults: 20 s, 2 rounds)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$ROOT/bench/_work
SECS=${1:-20}
ROUNDS=${2:-2}
PORT=${BEAMLAB_RABBIT_PORT:-5682}
export BEAMLAB_RABBIT_PORT=$PORT
URI="amqp://guest:guest@127.0.0.1:$PORT/%2F"
PT_VERSION=2.22.1
mkdir -p "$WORK"

fetch_perftest() {
    if ls "$WORK"/lib/perf-test-$PT_VERSION.jar >/dev/null 2>&1; then return; fi
    echo "fetching PerfTest $PT_VERSION and its dependencies from Maven Central..." >&2
    cat > "$WORK/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>beamlab</groupId><artifactId>perftest-fetch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>com.rabbitmq</groupId><artifactId>perf-test</artifactId><version>$PT_VERSION</version></dependency>
  </dependencies>
</project>
POM
    mvn -q -f "$WORK/pom.xml" dependency:copy-dependencies -DoutputDirectory="$WORK/lib" >&2
}

# Runs "$@" in the background, samples its /proc/PID/stat while it runs,
# and prints "<cpu seconds> <output file>" at the end. The last sample is
# taken within 0.1 s of exit, so CPU is undercounted by at most that.
CLK_TCK=$(getconf CLK_TCK)
measure() {
    local out=$1; shift
    "$@" >"$out" 2>&1 &
    local pid=$! ticks=0 t
    while kill -0 "$pid" 2>/dev/null; do
        t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo "")
        [ -n "$t" ] && ticks=$t
        sleep 0.1
    done
    wait "$pid" || true
    echo "$ticks"
}

# The received rate and message count from a PerfTest-format summary.
recv_rate() { sed -n 's/.*receiving rate avg: \([0-9.]*\) msg\/s.*/\1/p' "$1" | tail -1; }

run_beamlab() {   # scenario-name args...
    local name=$1; shift
    local out="$WORK/beamlab-$name-$round.log"
    # exec: /proc/<pid> is the Erlang VM itself, not a wrapper shell.
    local ticks
    ticks=$(measure "$out" escript "$ROOT/beamlab" amqp -h "$URI" -z "$SECS" "$@")
    report beamlab "$name" "$out" "$ticks"
}

run_perftest() {
    local name=$1; shift
    local out="$WORK/perftest-$name-$round.log"
    local ticks
    ticks=$(measure "$out" java -cp "$WORK/lib/*" com.rabbitmq.perf.PerfTest -h "$URI" -z "$SECS" "$@")
    report perftest "$name" "$out" "$ticks"
}

declare -A RATE CPU
report() {   # tool scenario logfile ticks
    local tool=$1 name=$2 out=$3 ticks=$4 rate msgs cpu_us
    rate=$(recv_rate "$out")
    if [ -z "$rate" ]; then
        echo "$tool $name: no summary line; log follows" >&2; tail -n 20 "$out" >&2; exit 1
    fi
    msgs=$(awk -v r="$rate" -v s="$SECS" 'BEGIN{printf "%d", r*s}')
    cpu_us=$(awk -v t="$ticks" -v h="$CLK_TCK" -v m="$msgs" 'BEGIN{ if (m>0) printf "%.2f", t/h*1e6/m; else print "nan" }')
    printf "%-9s %-7s round %d: received %8s msg/s, CPU %6.2f s, %7s us CPU/msg\n" \
        "$tool" "$name" "$round" "$rate" "$(awk -v t="$ticks" -v h="$CLK_TCK" 'BEGIN{print t/h}')" "$cpu_us"
    RATE[$tool-$name]="${RATE[$tool-$name]:-} $rate"
    CPU[$tool-$name]="${CPU[$tool-$name]:-} $cpu_us"
}

mean() { awk '{s=0; for(i=1;i<=NF;i++) s+=$i; printf "%.2f", s/NF}' <<<"$1"; }

fetch_perftest
[ -x "$ROOT/beamlab" ] || make -C "$ROOT" escript >/dev/null
"$ROOT/scripts/rabbitmq.sh" start >&2
trap '"$ROOT/scripts/rabbitmq.sh" stop >&2' EXIT

SINGLE=(-x 1 -y 1 -u q1 -f mandatory -q 300 -c 100)
MULTI=(-x 10 -y 20 -f mandatory -q 300 -c 100 --queue-pattern perf-test-%d --queue-pattern-from 1 --queue-pattern-to 10)

echo "broker: RabbitMQ on 127.0.0.1:$PORT; $SECS s per run, $ROUNDS rounds, tools alternating"
echo "machine: $(nproc) CPUs, $(uname -r); Erlang $(erl -noshell -eval 'io:put_chars(erlang:system_info(otp_release)), halt().'); $(java -version 2>&1 | head -1)"
for round in $(seq 1 "$ROUNDS"); do
    run_beamlab single "${SINGLE[@]}"
    run_perftest single "${SINGLE[@]}"
    run_perftest multi "${MULTI[@]}"
    run_beamlab multi "${MULTI[@]}"
done

echo
echo "scenario  beamlab msg/s  PerfTest msg/s  throughput ratio  beamlab us/msg  PerfTest us/msg  CPU/msg ratio"
for name in single multi; do
    br=$(mean "${RATE[beamlab-$name]}"); pr=$(mean "${RATE[perftest-$name]}")
    bc=$(mean "${CPU[beamlab-$name]}"); pc=$(mean "${CPU[perftest-$name]}")
    printf "%-8s  %13s  %14s  %16s  %14s  %15s  %13s\n" "$name" "$br" "$pr" \
        "$(awk -v a="$br" -v b="$pr" 'BEGIN{printf "%.2f", a/b}')" "$bc" "$pc" \
        "$(awk -v a="$bc" -v b="$pc" 'BEGIN{printf "%.2f", a/b}')"
done
echo "throughput ratio = beamlab/PerfTest received msg/s (>= 1: beamlab at least matches);"
echo "CPU/msg ratio = beamlab/PerfTest generator CPU per received message (< 1: beamlab lighter)."
