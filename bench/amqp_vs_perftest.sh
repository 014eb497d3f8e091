#!/usr/bin/env bash
# beamlab amqp vs RabbitMQ PerfTest 2.22.1 on the same private broker, in one
# run, the clients in an order rotated from round to round, on the same scenarios (issues #6, #26, #33):
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
# TOGETHER=1 (with FLOOR=1, #33) runs beamlab and the floor at the same
# time in each scenario, on queues of their own, instead of one after the
# other, and leaves PerfTest out: a round's ratio then pairs two clients
# that shared the same seconds of the machine and the broker (each also
# carries the other's load). Rates add up on the broker: two clients at
# 30000 msg/s ask it for 60000. TOGETHER=aa is the mode's A/A check: the
# floor against a second copy of itself (floor2), judged floor2/floor,
# which must come out "no change".
# RATES="2000 10000 30000 60000" runs `fixed' once per rate (scenarios
# fixed-2000 ...; default: FIXED_RATE alone). BEFORE=path/to/beamlab also
# runs another build of the escript (tool `before', e.g. the one before a
# change) next to this one in every scenario. With FLOOR=1 the end is the
# table docs/amqp.md records: per rate, µs of CPU per message of each
# client and the ratios, each with an interval and a verdict on #33's bars
# (below).
#
# Rounds (#33, #35: the round is the unit of replication): each round runs
# every client once per scenario, one after the other, in an order rotated
# from round to round and from scenario to scenario (each client takes
# each place equally often), so a ratio pairs figures measured in the same
# minute. Per scenario the verdict takes each round's ratio (beamlab/floor,
# beamlab/PerfTest, beamlab/before), and over the rounds: the median, and a
# 95% t-interval on the mean of the ratios' logarithms, exponentiated (a
# geometric mean and its interval: ratios are judged on a log scale, so 0.9
# and 1.11 are the same distance from 1). Verdicts: beamlab/floor "met" if
# the interval's upper bound is at most 1.10, beamlab/PerfTest "met" if it is
# below 1.00; "not met" if the lower bound is above the bar; otherwise
# "undecided: about N more rounds" (N from this run's spread, for a mean that
# stays where it is). beamlab/before says "no change" when its interval holds
# 1. One round gives no verdict. A round in which either client of a ratio
# received less than 95% of the scenario's rate is "rate not held" (with the
# rates reached) instead of a ratio: a client behind its rate sends larger
# bursts, other traffic. In varrate the window is cut to whole cycles of the
# rate steps (6 s), so every client's window holds the same mix of rates.
# The table's command (about 25 min on a quiet 2-core machine, see
# docs/amqp.md "How to read the floor table"):
#   CASES="fixed varrate" RATES="2000 10000 30000" FLOOR=1 bench/amqp_vs_perftest.sh 11 8 5
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
# are beamlab/PerfTest (with FLOOR=1, the verdicts above pair the rounds).
# PerfTest is the one scripts/install-perftest.sh
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
# TOGETHER=1: beamlab and the floor run at the same time (see run_together),
# the floor on queues of its own; no PerfTest, no BEFORE. TOGETHER=aa: two
# floors (floor, floor2).
PAIR=(beamlab floor)
if [ -n "${TOGETHER:-}" ]; then
    if [ -z "${FLOOR:-}" ] || [ -n "$BEFORE" ] || { [ "$TOGETHER" != 1 ] && [ "$TOGETHER" != aa ]; }; then
        echo "usage: TOGETHER=1 (or TOGETHER=aa) needs FLOOR=1 and no BEFORE" >&2
        exit 2
    fi
    [ "$TOGETHER" = aa ] && PAIR=(floor floor2)
fi

if [ "$WARMUP" -ge $((SECS - 2)) ]; then
    echo "usage: $0 [SECONDS] [ROUNDS] [WARMUP]: WARMUP must be at least 3 s shorter than SECONDS" >&2
    exit 2
fi

. "$ROOT/bench/amqp-measure.sh"

declare -A RATE CPU
# launch TOOL SCENARIO ARGS...: one measured run of TOOL (its log and
# samples in WORK); returns when the run ends.
launch() {
    local tool=$1 name=$2; shift 2
    local out="$WORK/$tool-$name-$round.log"
    local uri=$URI
    [ "$name" = tls ] && uri=$TLS_URI
    [ "$name" = tls ] && [ "$tool" = beamlab ] && set -- "$@" --tls-insecure
    if [ "$tool" = before ]; then
        URI=$uri load beamlab "$out" "$BEFORE" "$@"
    elif [ "$tool" = floor ] || [ "$tool" = floor2 ]; then
        # Run together, each client has a queue of its own (qf-floor, ...).
        local p c q steps
        read -r p c q steps <<<"${FLOOR_ARGS[$name]}"
        [ -n "${TOGETHER:-}" ] && q=$q-$tool
        # shellcheck disable=SC2086  # the flags are words
        measure "$out" erl $BEAMLAB_AMQP_FLAGS -noshell -pa "$ROOT/_build/default/lib/beamlab/ebin" \
            -pa "$WORK" -run amqp_floor main "$PORT" "$p" "$c" "$q" "$steps" "$SECS"
    else
        URI=$uri load "$tool" "$out" "$BEAMLAB" "$@"
    fi
}

# collect TOOL SCENARIO LOAD: the run's steady-state rate and CPU per
# message, printed and kept for the tables (LOAD: the load average when
# it started).
collect() {
    local tool=$1 name=$2 la=$3
    local out="$WORK/$tool-$name-$round.log" res rate cpu_us secs cpu
    res=$(window "$out.samples" "${CYCLE[$name]:-0}")
    if [ -z "$res" ]; then
        echo "$tool $name: fewer than two interval lines after ${WARMUP} s (or no whole rate cycle); log follows" >&2
        tail -n 20 "$out" >&2; exit 1
    fi
    read -r rate cpu_us secs cpu <<<"$res"
    printf "%-9s %-7s round %d: received %7s msg/s, CPU %6s s over %4s s, %7s us CPU/msg (load %s)\n" \
        "$tool" "$name" "$round" "$rate" "$cpu" "$secs" "$cpu_us" "$la"
    RATE[$tool-$name]="${RATE[$tool-$name]:-} $rate"
    CPU[$tool-$name]="${CPU[$tool-$name]:-} $cpu_us"
}

# Queues outlive a run here (not auto-delete): every run starts from an
# empty one. (Only there: the CLI is a VM of its own, a second of CPU
# beside the next run.)
clean_queues() {
    case $1 in
        quorum) "$ROOT/scripts/rabbitmq.sh" ctl -q delete_queue qq1 >/dev/null 2>&1 || true ;;
        stream) "$ROOT/scripts/rabbitmq.sh" ctl -q delete_queue sq1 >/dev/null 2>&1 || true ;;
    esac
}

run() {   # tool scenario args...: one run alone
    local tool=$1 name=$2 la
    la=$(cut -d' ' -f1 /proc/loadavg)
    launch "$@"
    clean_queues "$name"
    collect "$tool" "$name" "$la"
}

# run_together SCENARIO ARGS... (TOGETHER): the pair's two clients (beamlab
# and the floor, or two floors) at the same time, each on a queue of its
# own, so that whatever the machine and the broker do during the minute
# weighs on both alike.
run_together() {
    local name=$1 la a b; shift
    la=$(cut -d' ' -f1 /proc/loadavg)
    # Which one starts first alternates from round to round.
    if [ $((round % 2)) = 1 ]; then
        launch "${PAIR[0]}" "$name" "$@" & a=$!
        launch "${PAIR[1]}" "$name" "$@" & b=$!
    else
        launch "${PAIR[1]}" "$name" "$@" & b=$!
        launch "${PAIR[0]}" "$name" "$@" & a=$!
    fi
    wait "$a" "$b"
    clean_queues "$name"
    collect "${PAIR[0]}" "$name" "$la"
    collect "${PAIR[1]}" "$name" "$la"
}

[ -n "${TOGETHER:-}" ] || install_perftest "$ROOT"
[ -x "$BEAMLAB" ] || make -C "$ROOT" escript >/dev/null
# Certificates for the TLS listener, made with OTP's public_key.
TLS_DIR="$WORK/tls"
if [ ! -s "$TLS_DIR/server.key" ]; then
    mkdir -p "$TLS_DIR"
    erlc -o "$WORK" "$ROOT/test/beamlab_test_tls.erl"
    erl -noshell -pa "$WORK" -eval "ok = beamlab_test_tls:make(\"$TLS_DIR\"), halt()."
fi

declare -A ARGS FLOOR_ARGS WANT CYCLE
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
# The rate each floor scenario asks for (msg/s, all producers) and, for
# rate steps, their cycle (s): producers times the steps' mean rate.
for name in $CASES; do
    [ -n "${FLOOR_ARGS[$name]:-}" ] || continue
    read -r "WANT[$name]" "CYCLE[$name]" < <(awk -v a="${FLOOR_ARGS[$name]}" 'BEGIN {
        split(a, w, " "); n = split(w[4], st, ",")
        for (i = 1; i <= n; i++) { if (split(st[i], rd, ":") < 2) rd[2] = 1; r += rd[1] * rd[2]; d += rd[2] }
        printf "%d %d\n", w[1] * r / d, (n > 1 ? d : 0) }')
    if [ "${CYCLE[$name]}" -gt 0 ] && [ $((SECS - WARMUP)) -lt "${CYCLE[$name]}" ]; then
        echo "usage: $0 [SECONDS] [ROUNDS] [WARMUP]: $name needs SECONDS - WARMUP of at least its rate cycle, ${CYCLE[$name]} s" >&2
        exit 2
    fi
done
if [ -n "${FLOOR:-}" ]; then
    [ -d "$ROOT/_build/default/lib/beamlab/ebin" ] || make -C "$ROOT" escript >/dev/null
    erlc -I "$ROOT/include" -o "$WORK" "$ROOT/bench/amqp_floor.erl"
fi

# The broker and its epmd are the bench's own (bench/amqp-epmd.sh): a run
# leaves nothing running that it started, and stops no other job's epmd.
. "$ROOT/bench/amqp-epmd.sh"
BEAMLAB_RABBIT_TLS_PORT=$TLS_PORT BEAMLAB_RABBIT_TLS_DIR=$TLS_DIR private_broker
echo "broker: RabbitMQ on 127.0.0.1:$PORT; $SECS s per run, $ROUNDS rounds, the clients' order rotated per round"
echo "machine: $(nproc) CPUs, $(uname -r); Erlang $(erl -noshell -eval 'io:put_chars(erlang:system_info(otp_release)), halt().'); $(java -version 2>&1 | head -1)"
echo "measured: steady state only, from the tool's first interval line at >= ${WARMUP} s to its last one;"
echo "  received msg/s from the tool's own per-second lines, CPU = utime+stime of the tool's process"
echo "  (/proc/<pid>/stat, all threads) between the same two lines"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average at start: $LOAD_START"
for round in $(seq 1 "$ROUNDS"); do
    # Every client once per scenario, the order rotated by one place per
    # round and per scenario.
    i=0
    for name in $CASES; do
        if [ -n "${TOGETHER:-}" ]; then
            # shellcheck disable=SC2086  # ARGS are words
            run_together "$name" ${ARGS[$name]}
            continue
        fi
        tools=(beamlab perftest)
        [ -n "$BEFORE" ] && tools+=(before)
        [ -n "${FLOOR:-}" ] && [ -n "${FLOOR_ARGS[$name]:-}" ] && tools+=(floor)
        for j in $(seq 0 $((${#tools[@]} - 1))); do
            # shellcheck disable=SC2086  # ARGS are words
            run "${tools[$(( (round - 1 + i + j) % ${#tools[@]} ))]}" "$name" ${ARGS[$name]}
        done
        i=$((i + 1))
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ -z "${TOGETHER:-}" ]; then
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
fi
if [ -n "${FLOOR:-}" ] && [ -z "${TOGETHER:-}" ]; then
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
# paired A B SCENARIO BAR KIND FORM: A's CPU per message over B's, round
# by round (round k's figures were measured in the same minute), judged
# over the rounds (see the header): the geometric mean of the rounds'
# ratios with its 95% t-interval (on their logarithms) and a verdict. KIND:
# "le" (met: at most BAR), "lt" (met: below BAR), "aa" (no change: the
# interval holds 1). FORM "cell" prints "G [LO, HI] verdict" for the
# table, "ratio" the same without the verdict, "detail" the rounds' ratios, their median, the standard deviation
# of their logarithms (what sizes a run) and the verdict.
paired() {
    local a=$1 b=$2 name=$3 bar=$4 kind=$5 form=$6
    awk -v ca="${CPU[$a-$name]:-}" -v cb="${CPU[$b-$name]:-}" -v ra="${RATE[$a-$name]:-}" \
        -v rb="${RATE[$b-$name]:-}" -v want="${WANT[$name]:-0}" -v bar="$bar" -v kind="$kind" \
        -v form="$form" -v na="$a" -v nb="$b" '
    # Student t, 97.5% quantile (two-sided 95%), df degrees of freedom.
    function tq(df,  T) {
        split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 " \
              "2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", T, " ")
        return df <= 30 ? T[df] : 1.960 + 2.37 / df
    }
    function med(str,  v, k, i, j, t) {
        k = split(str, v, " ")
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
        return k % 2 ? v[(k+1)/2] : (v[k/2] + v[k/2+1]) / 2
    }
    BEGIN {
        n = split(ca, x, " "); split(cb, y, " "); split(ra, p, " "); split(rb, q, " ")
        if (n == 0) { printf "-"; exit }
        for (i = 1; i <= n; i++) if (want > 0 && (p[i] < 0.95 * want || q[i] < 0.95 * want)) short++
        if (short) {
            if (form == "detail")
                printf "rate not held in %d of %d rounds (%s %d, %s %d msg/s received, medians; asked %d)", \
                    short, n, na, med(ra), nb, med(rb), want
            else printf "rate not held (%d, %d of %d msg/s)", med(ra), med(rb), want
            exit
        }
        for (i = 1; i <= n; i++) { l[i] = log(x[i] / y[i]); m += l[i]; rs = rs sprintf(" %.2f", x[i] / y[i]) }
        m /= n
        if (n < 2) { printf "%.2f (one round: no interval, no verdict)", exp(m); exit }
        for (i = 1; i <= n; i++) ss += (l[i] - m) ^ 2
        sd = sqrt(ss / (n - 1)); hw = tq(n - 1) * sd / sqrt(n)
        lo = exp(m - hw); hi = exp(m + hw)
        if (kind == "aa") verdict = lo > 1 ? "higher" : hi < 1 ? "lower" : "no change"
        else if ((kind == "le" && hi <= bar) || (kind == "lt" && hi < bar)) verdict = "met"
        else if ((kind == "le" && lo > bar) || (kind == "lt" && lo >= bar)) verdict = "not met"
        else {
            # Rounds for the interval to leave the bar if the mean and the
            # spread stay as they are.
            d = m - log(bar); if (d < 0) d = -d
            for (k = n + 1; k <= n + 1000 && tq(k - 1) * sd / sqrt(k) >= d; k++) ;
            verdict = k > n + 1000 ? "undecided: more than 1000 more rounds" \
                                   : sprintf("undecided: about %d more round%s", k - n, k - n > 1 ? "s" : "")
        }
        if (form == "ratio") printf "%.2f [%.2f, %.2f]", exp(m), lo, hi
        else if (form == "cell") printf "%.2f [%.2f, %.2f] %s", exp(m), lo, hi, verdict
        else printf "per round%s; median %.2f; geometric mean %.2f, 95%% interval [%.2f, %.2f]; sd of log %.3f: %s", \
                    rs, med(rs), exp(m), lo, hi, sd, verdict
    }'
}

if [ -n "$BEFORE" ]; then
    echo
    echo "this build against BEFORE=$BEFORE (same scenarios, same rounds):"
    echo "scenario  before us/msg  beamlab us/msg  beamlab/before CPU/msg"
    for name in $CASES; do
        oc=$(median "${CPU[before-$name]}"); bc=$(median "${CPU[beamlab-$name]}")
        printf "%-8s  %13s  %14s  %s\n" "$name" "$oc" "$bc" "$(paired beamlab before "$name" 1 aa cell)"
    done
fi
if [ -n "${FLOOR:-}" ]; then
    # #33 item 1's bars, judged over the rounds.
    echo
    if [ "${TOGETHER:-}" = aa ]; then
        echo "verdicts over $ROUNDS rounds (A/A: floor2/floor, which must come out \"no change\"):"
    else
        echo "verdicts over $ROUNDS rounds (#33: beamlab/floor at most 1.10, beamlab/PerfTest below 1.00):"
    fi
    for name in $CASES; do
        [ -n "${FLOOR_ARGS[$name]:-}" ] || continue
        if [ "${TOGETHER:-}" = aa ]; then
            echo "$name floor2/floor (A/A): $(paired floor2 floor "$name" 1 aa detail)"
            continue
        fi
        echo "$name beamlab/floor: $(paired beamlab floor "$name" 1.10 le detail)"
        [ -n "${TOGETHER:-}" ] && continue
        echo "$name beamlab/PerfTest: $(paired beamlab perftest "$name" 1.00 lt detail)"
        [ -n "$BEFORE" ] && echo "$name beamlab/before: $(paired beamlab before "$name" 1 aa detail)"
    done
    # The table of docs/amqp.md: medians of µs of CPU per received
    # message, and the paired ratios with their intervals and verdicts.
    echo
    echo "for docs/amqp.md ($ROUNDS rounds of $SECS s, window from $WARMUP s; us of CPU per received message, medians;"
    echo "ratios: geometric mean of the rounds' ratios [95% interval]; load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end):"
    echo
    if [ "${TOGETHER:-}" = aa ]; then
        echo "| scenario | floor | floor2 | floor2/floor (together, A/A) |"
        echo "|---|---|---|---|"
    elif [ -n "${TOGETHER:-}" ]; then
        echo "| scenario | beamlab | floor | beamlab/floor (together) |"
        echo "|---|---|---|---|"
    elif [ -n "$BEFORE" ]; then
        echo "| scenario | beamlab | before | PerfTest | floor | beamlab/floor | beamlab/PerfTest | beamlab/before | floor/PerfTest |"
        echo "|---|---|---|---|---|---|---|---|---|"
    else
        echo "| scenario | beamlab | PerfTest | floor | beamlab/floor | beamlab/PerfTest | floor/PerfTest |"
        echo "|---|---|---|---|---|---|---|"
    fi
    for name in $CASES; do
        [ -n "${FLOOR_ARGS[$name]:-}" ] || continue
        if [ "${TOGETHER:-}" = aa ]; then
            printf "| %s | %.1f | %.1f | %s |\n" "$name" "$(median "${CPU[floor-$name]}")" \
                "$(median "${CPU[floor2-$name]}")" "$(paired floor2 floor "$name" 1 aa cell)"
            continue
        fi
        bc=$(median "${CPU[beamlab-$name]}"); fc=$(median "${CPU[floor-$name]}")
        bf=$(paired beamlab floor "$name" 1.10 le cell)
        if [ -n "${TOGETHER:-}" ]; then
            printf "| %s | %.1f | %.1f | %s |\n" "$name" "$bc" "$fc" "$bf"
            continue
        fi
        pc=$(median "${CPU[perftest-$name]}")
        bp=$(paired beamlab perftest "$name" 1.00 lt cell)
        fp=$(paired floor perftest "$name" 1 aa ratio)
        if [ -n "$BEFORE" ]; then
            printf "| %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s |\n" "$name" "$bc" "$(median "${CPU[before-$name]}")" \
                "$pc" "$fc" "$bf" "$bp" "$(paired beamlab before "$name" 1 aa cell)" "$fp"
        else
            printf "| %s | %.1f | %.1f | %.1f | %s | %s | %s |\n" "$name" "$bc" "$pc" "$fc" "$bf" "$bp" "$fp"
        fi
    done
fi
echo
echo "the run took $(( ($(date +%s) - T_START) / 60 )) min $(( ($(date +%s) - T_START) % 60 )) s"
