#!/usr/bin/env bash
# Per received message, what beamlab and the floor client
# (bench/amqp_floor.erl) cost in COUNTS rather than time (#33): at a fixed
# rate on one private broker, the same traffic as the `fixed' scenario of
# bench/amqp_vs_perftest.sh (-x 1 -y 1 -r RATE -f mandatory -q 300 -c 100).
# CPU time per message moves by half between rounds on a loaded machine;
# these counts move much less, so an excess over the floor is a target
# that a loaded machine can still see:
#   - from `perf stat -p' on the VM over the window (software events and
#     syscall tracepoints): context switches, CPU migrations, task-clock
#     (the one time, for reference) and system calls by kind, each summed
#     over the VM's threads; CPU and context switches also per kind of
#     thread (thr_1_scheduler_cpu_us, thr_0_poller_context-switches, a
#     dirty pool's threads summed: thr_dirty_io_cpu_us, ...);
#   - from inside the VM (bench/amqp_counts_probe.erl, started first by
#     ERL_AFLAGS): the VM's own context switches (process schedulings),
#     reductions and garbage collections (their number and the words they
#     reclaimed), the TCP ports' reads and writes (inet:getstat/2 recv_cnt,
#     send_cnt), scheduler time by state (msacc, µs per message), and who
#     controls each socket (a worker that took its socket's reads shows).
# Each round runs every tool once, alternating the order; the table holds
# the medians over the rounds, per message received in the window.
#
#   bench/amqp_counts.sh ["RATE ..."] [ROUNDS] [WINDOW]   (defaults: "2000 10000", 3, 6)
# BEAMLAB=path/to/beamlab (default ./beamlab); BEFORE=path/to/beamlab adds
# another build (tool `before'); B_FLAGS="..." adds ./beamlab again with
# these emulator flags after the launcher's (tool `flags'), e.g.
# B_FLAGS="-beamlab amqp_direct_reads true" or B_FLAGS="+S 1". ONLY="flags"
# runs only the tools named (the ratios need `floor' among them).
# PERF_EVENTS="task-clock,context-switches,cpu-migrations" leaves out the
# syscall tracepoints: they make every system call dearer (the VMs' CPU per
# message about doubles), which weighs most on the tool that makes most
# calls; without them the CPU per thread is close to a run's own.
# The broker, and the epmd it needs, are this script's own (a private epmd
# on its own port, stopped at the end: other jobs' epmd is left alone).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RATES=${1:-2000 10000}
ROUNDS=${2:-3}
WINDOW=${3:-6}
DELAY=4
SECS=$((DELAY + WINDOW + 3))
BEAMLAB=${BEAMLAB:-$ROOT/beamlab}
BEFORE=${BEFORE:-}
B_FLAGS=${B_FLAGS:-}
PERF_EVENTS=${PERF_EVENTS:-task-clock,context-switches,cpu-migrations,syscalls:sys_enter_*}
PORT=${BEAMLAB_RABBIT_PORT:-5871}
export BEAMLAB_RABBIT_PORT=$PORT
URI="amqp://guest:guest@127.0.0.1:$PORT/%2F"
WORK=$ROOT/bench/_work/counts
FLAGS="+sbwt none +sbwtdcpu none +sbwtdio none"
mkdir -p "$WORK"
rm -f "$WORK"/*.counts
command -v perf >/dev/null || { echo "amqp_counts.sh: perf is not installed" >&2; exit 2; }
[ -x "$BEAMLAB" ] || make -C "$ROOT" escript >/dev/null
erlc -o "$WORK" "$ROOT/bench/amqp_counts_probe.erl"
erlc -I "$ROOT/include" -o "$WORK" "$ROOT/bench/amqp_floor.erl"

# The broker and its epmd are the bench's own (bench/amqp-epmd.sh).
. "$ROOT/bench/amqp-epmd.sh"
private_broker

TOOLS="beamlab floor"
[ -n "$BEFORE" ] && TOOLS="$TOOLS before"
[ -n "$B_FLAGS" ] && TOOLS="$TOOLS flags"
TOOLS=${ONLY:-$TOOLS}
echo "broker: RabbitMQ on 127.0.0.1:$PORT; rates $RATES msg/s, $ROUNDS rounds, counted for $WINDOW s after $DELAY s"
echo "tools: $TOOLS${BEFORE:+ (before: $BEFORE)}${B_FLAGS:+ (flags: $B_FLAGS)}"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# one TOOL RATE ROUND: runs it, writes $WORK/TOOL-RATE-ROUND.counts ("key value" per line, per message).
one() {
    local tool=$1 rate=$2 round=$3 base="$WORK/$1-$2-$3" pid recv probe_flags
    probe_flags="-pa $WORK -s amqp_counts_probe start $((DELAY * 1000)) $((WINDOW * 1000)) $base.probe"
    rm -f "$base.probe"
    case $tool in
        floor)
            # shellcheck disable=SC2086
            ERL_AFLAGS="$probe_flags" erl $FLAGS -noshell -pa "$ROOT/_build/default/lib/beamlab/ebin" -pa "$WORK" \
                -run amqp_floor main "$PORT" 1 1 qf "$rate" "$SECS" >"$base.log" 2>&1 & ;;
        *)
            local build=$BEAMLAB extra=""
            [ "$tool" = before ] && build=$BEFORE
            [ "$tool" = flags ] && extra=$B_FLAGS
            ERL_AFLAGS="$probe_flags" ERL_FLAGS="$FLAGS $extra" escript "$build" amqp -h "$URI" \
                -x 1 -y 1 -u qf -r "$rate" -f mandatory -q 300 -c 100 -z "$SECS" >"$base.log" 2>&1 & ;;
    esac
    pid=$!   # escript and erl exec the VM: $! is beam.smp
    sleep "$DELAY"
    # Per thread: where the VM's CPU goes (its scheduler threads, the poll
    # thread, ...); the process's figure is the threads' sum.
    perf stat -x, --per-thread -e "$PERF_EVENTS" -p "$pid" -- sleep "$WINDOW" \
        2>"$base.perf" >/dev/null || true
    wait "$pid" || true
    # Messages received in the window: the per-second lines after DELAY s,
    # each at its nearest whole second (a line printed at 10.002 s is the
    # window's last one: counted at face value it was left out, and one
    # second of six went missing from the count, 5/6 of the rate).
    recv=$(awk -v d="$DELAY" -v w="$WINDOW" '
        match($0, /time:? ?[0-9.]+ ?s,/) {
            t = substr($0, RSTART, RLENGTH); gsub(/[^0-9.]/, "", t); t = int(t + 0.5)
            if (t > d && t <= d + w && match($0, /received: [0-9.]+/)) s += substr($0, RSTART + 10, RLENGTH - 10)
        }
        END {print s + 0}' "$base.log")
    if [ "$recv" = 0 ] || [ ! -s "$base.probe" ]; then
        echo "$tool at $rate msg/s: no messages or no probe output; log follows" >&2
        tail -n 20 "$base.log" >&2; exit 1
    fi
    {
        echo "received_msg_s $(awk -v r="$recv" -v w="$WINDOW" 'BEGIN {printf "%.0f", r / w}')"
        # "thread-tid,value,unit,event,...": per event the sum over the
        # threads, and CPU and switches per kind of thread (its name
        # without the tid: 1_scheduler, 0_poller, ...). A dirty pool's
        # threads are one row (dirty_io, dirty_cpu): any of them takes the
        # next job, so a numbered row would be a different thread's work
        # from round to round.
        awk -F, -v r="$recv" '$2 ~ /^[0-9.]+$/ && $2 > 0 {
                e = $4; sub(/^syscalls:sys_enter_/, "sys_", e)
                k = (e == "task-clock" ? "cpu_us" : e); v = (e == "task-clock" ? $2 * 1000 : $2)
                sum[k] += v
                if (k == "cpu_us" || k == "context-switches") {
                    t = $1; sub(/-[0-9]+$/, "", t)
                    if (t ~ /_dirty_io/) t = "dirty_io"; else if (t ~ /_dirty_cp/) t = "dirty_cpu"
                    sum["thr_" t "_" k] += v } }
            END { for (k in sum) printf "%s %.4f\n", k, sum[k] / r }' "$base.perf"
        awk -v r="$recv" '{gsub(/\047/, "", $1)} $1 ~ /^(context_switches|reductions|gcs|gc_words|reds_|tcp_|sched_us_[^s])/ {
                printf "vm_%s %.4f\n", $1, $2 / r }' "$base.probe"
        grep -E '^(owner|direct_reads_env)' "$base.probe" | sort | uniq -c | awk '{printf "%s:%s %d\n", $2, $3, $1}'
    } >"$base.counts"
    echo "round $round, $rate msg/s, $tool: $(grep -E '^(received_msg_s|cpu_us|context-switches|vm_context_switches) ' "$base.counts" | tr '\n' ' ')(load $(cut -d' ' -f1 /proc/loadavg))"
}

for round in $(seq 1 "$ROUNDS"); do
    for rate in $RATES; do
        order=$TOOLS
        [ $((round % 2)) = 0 ] && order=$(tr ' ' '\n' <<<"$TOOLS" | tac | tr '\n' ' ')
        for tool in $order; do one "$tool" "$rate" "$round"; done
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

# The table: one row per count, one column per tool and rate (medians over
# the rounds), and each tool's ratio to the floor.
echo
echo "medians over $ROUNDS rounds, per message received (cpu_us: CPU µs; vm_sched_us_*: the schedulers' wall µs by state (msacc; under load it includes time preempted); owner: sockets by controlling process; tcp_pub_*, tcp_con_*: the publishing and the consuming socket):"
for rate in $RATES; do
    echo
    printf "| %s msg/s | %s |" "$rate" "$(tr ' ' '\n' <<<"$TOOLS" | paste -sd'|' | sed 's/|/ | /g')"
    for t in $TOOLS; do [ "$t" = floor ] || printf " %s/floor |" "$t"; done
    echo
    printf "|---|"; for t in $TOOLS; do printf -- "---|"; [ "$t" = floor ] || printf -- "---|"; done; echo
    keys=$(cat "$WORK"/*-"$rate"-*.counts | awk '{print $1}' | sort -u)
    for k in $keys; do
        printf "| %s |" "$k"
        declare -A M=()
        for t in $TOOLS; do
            M[$t]=$(for r in $(seq 1 "$ROUNDS"); do awk -v k="$k" '$1 == k {print $2}' "$WORK/$t-$rate-$r.counts"; done |
                    sort -g | awk '{v[NR] = $1} END {if (NR == 0) print 0; else printf "%.3f", NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')
            printf " %s |" "${M[$t]}"
        done
        for t in $TOOLS; do
            [ "$t" = floor ] && continue
            printf " %s |" "$(awk -v a="${M[$t]}" -v b="${M[floor]:-0}" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}')"
        done
        echo
    done
done
