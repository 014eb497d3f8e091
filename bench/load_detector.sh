#!/bin/sh
# bench/load_detector.sh: what beamlab's load detectors see of a competitor,
# and how much the competitor slows the measurement (issue #35,
# docs/statistics.md "What a load finding measures").
#
# Conditions, interleaved round by round (none, one, half, none, ...), so
# that the other work on a shared machine hits every condition alike:
#   none  beamlab alone
#   one   one CPU-bound process (`sh -c 'while :; do :; done'`): one core
#   half  the same loop held to half a core: a cgroup v1 cpu quota
#         (cpu.cfs_quota_us 50000 of 100000) when this user may make one,
#         else an erl duty cycle (busy 10 ms, asleep 10 ms)
# The competitors are started in this script's own session (autogroup
# puts every session in a scheduling group of its own: a competitor in
# another session would get another share of the CPUs) and stopped by
# their process id.
# Measured in every condition and round (documents kept in DIR):
#   run1  `run CODE -s 5 -d 200 -v`: one busy scheduler
#   run2  the same with -c 2: two busy schedulers (of 2 on a 2-core machine)
#   mat1  `matrix --vm '+S 2' -n 3 -- run CODE -s 5 -d 50` (bench/aa.sh's
#         compare cell): three fresh VMs, one busy scheduler each
#   mat2  the same with -c 2
# Then bench/load_detector.escript DIR prints, per condition and command,
# the medians of the measured rate and of the others' and own cores each
# detector reported (the run's `extra.competition', every fresh VM's in a
# matrix's `extra.competition', `machine_overloaded's others from the
# run's telemetry), the rate's ratio to `none', and how often the
# findings fired. Environment: ROUNDS (default 6), KEEP=DIR (default a
# temporary directory, printed), BEAMLAB (default ./beamlab), PRIORITY=1
# (a shared machine: this script and everything it starts run in a
# cgroup v1 cpu group of the highest weight, cpu.shares 262144, so other
# users' work takes only what this group leaves idle; the half-core
# competitor's quota group sits inside it). Run from the repository root
# after `make'. Prints figures; asserts nothing.
set -eu
BEAMLAB=$(realpath "${BEAMLAB:-./beamlab}" 2>/dev/null || echo ./beamlab)
[ -x "$BEAMLAB" ] || { echo "load_detector: $BEAMLAB is not built: run make first" >&2; exit 2; }
ROUNDS=${ROUNDS:-6}
case $ROUNDS in ''|*[!0-9]*|0) echo "load_detector: ROUNDS must be a positive integer" >&2; exit 2;; esac
DIR=${KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/beamlab-load.XXXXXX")}
mkdir -p "$DIR"
CODE='(fun L(0, A) -> A; L(I, A) -> L(I - 1, A + I) end)(2000, 0).'
CG=""
PRIO=""
COMP=""

stop_competitor() {
    if [ -n "$COMP" ]; then kill "$COMP" 2>/dev/null || true; wait "$COMP" 2>/dev/null || true; COMP=""; fi
}
cleanup() {
    stop_competitor
    [ -z "$CG" ] || rmdir "$CG" 2>/dev/null || true
    if [ -n "$PRIO" ]; then
        # back to the root group, so that the priority group can go
        echo $$ > /sys/fs/cgroup/cpu/cgroup.procs 2>/dev/null || true
        rmdir "$PRIO" 2>/dev/null || true
    fi
}
trap 'cleanup; exit 130' INT TERM
trap cleanup EXIT

PARENT=/sys/fs/cgroup/cpu
if [ "${PRIORITY:-0}" = 1 ]; then
    PRIO=$PARENT/beamlab-load-prio-$$
    if [ -w "$PARENT" ] && mkdir "$PRIO" 2>/dev/null && echo 262144 > "$PRIO/cpu.shares" && echo $$ > "$PRIO/cgroup.procs"; then
        PARENT=$PRIO
    else
        echo "load_detector: PRIORITY=1 needs a writable cgroup v1 cpu controller" >&2
        rmdir "$PRIO" 2>/dev/null || true; PRIO=""; exit 2
    fi
fi
# a cgroup v1 cpu controller this user may write: half a core by quota
if [ -w "$PARENT" ] && [ -f "$PARENT/cpu.cfs_quota_us" ]; then
    CG=$PARENT/beamlab-load-$$
    if mkdir "$CG" 2>/dev/null && echo 100000 > "$CG/cpu.cfs_period_us" && echo 50000 > "$CG/cpu.cfs_quota_us"; then
        HALF="cgroup v1 quota 50000/100000 us"
    else
        rmdir "$CG" 2>/dev/null || true; CG=""
    fi
fi
[ -n "$CG" ] || HALF="erl duty cycle 10 ms busy / 10 ms asleep"

start_competitor() { # none | one | half
    case $1 in
        none) ;;
        one) sh -c 'while :; do :; done' & COMP=$! ;;
        half)
            if [ -n "$CG" ]; then
                # the loop joins the cgroup before it starts spinning
                sh -c 'echo $$ > "$0/cgroup.procs" && exec sh -c "while :; do :; done"' "$CG" & COMP=$!
            else
                erl -noshell +S 1 +sbwt none -eval '
                    Spin = fun S(T) -> case erlang:monotonic_time(millisecond) < T of true -> S(T); false -> ok end end,
                    Loop = fun L() -> Spin(erlang:monotonic_time(millisecond) + 10), timer:sleep(10), L() end,
                    Loop().' & COMP=$!
            fi ;;
    esac
}

echo "load detector: $ROUNDS rounds of none/one/half ($HALF${PRIO:+; in the priority group $PRIO}), documents in $DIR"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
    for c in none one half; do
        start_competitor "$c"
        "$BEAMLAB" "$CODE" -s 5 -d 200 -v --label work --save "$DIR/run1-$c-$r.json" >/dev/null 2>&1
        "$BEAMLAB" "$CODE" -c 2 -s 5 -d 200 -v --label work --save "$DIR/run2-$c-$r.json" >/dev/null 2>&1
        "$BEAMLAB" matrix --vm '+S 2' -n 3 --save "$DIR/mat1-$c-$r.json" -- "$CODE" -s 5 -d 50 --label work >/dev/null 2>&1
        "$BEAMLAB" matrix --vm '+S 2' -n 3 --save "$DIR/mat2-$c-$r.json" -- "$CODE" -c 2 -s 5 -d 50 --label work >/dev/null 2>&1
        stop_competitor
    done
    echo "round $r done at $(date -u +%H:%M:%S), load average $(cut -d' ' -f1 /proc/loadavg)"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$(dirname "$0")/load_detector.escript" "$DIR"
