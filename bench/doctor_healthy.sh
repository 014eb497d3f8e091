#!/bin/sh
# bench/doctor_healthy.sh: the doctor's false-alarm rate on a healthy
# machine (issue #32: "the healthy case raises no critical finding in 10
# of 10 runs", docs/doctor.md)
#
# Runs `beamlab doctor --quick` N times (default 10) one after the other
# on this machine, unchanged (no --vm, --wrap or --cgroup), and counts the
# runs with a critical finding. Prints, per run, the load average before
# it, its exit status, its first line (the recommendation) and its
# findings; then the count. A critical finding on a quiet machine is a
# false alarm; on a machine other work keeps busy, `competing` is no false
# alarm (the load averages printed say which it was).
#
# Environment: N (runs, default 10), BEAMLAB (the escript, default
# ./beamlab), KEEP=DIR (keep each run's document and output there; default
# a temporary directory removed at the end). Exits 0 whatever the count
# (the numbers are recorded in docs/doctor.md, not asserted), 2 on bad
# input, 1 when a doctor run itself fails, 130 when interrupted.
# Takes about N x 1-2 minutes on a 2-core machine. Run from the repository
# root after `make`.
set -eu
BEAMLAB=$(realpath "${BEAMLAB:-./beamlab}" 2>/dev/null || echo ./beamlab)
[ -x "$BEAMLAB" ] || { echo "doctor_healthy: $BEAMLAB is not built: run make first (from the repository root)" >&2; exit 2; }
N=${N:-10}
case $N in ''|*[!0-9]*|0) echo "doctor_healthy: N must be a positive integer (got '$N')" >&2; exit 2;; esac
if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP" || { echo "doctor_healthy: cannot create KEEP=$KEEP" >&2; exit 2; }
    DIR=$KEEP
    cleanup() { :; }
else
    DIR=$(mktemp -d "${TMPDIR:-/tmp}/beamlab-doctor-healthy.XXXXXX")
    cleanup() { rm -rf "$DIR"; }
fi
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "doctor_healthy: $N run(s) of beamlab doctor --quick on $(nproc) CPUs ($(uname -r)), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
CRITICAL=0
FAILED=0
I=1
while [ "$I" -le "$N" ]; do
    LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
    START=$(date +%s)
    set +e
    "$BEAMLAB" doctor --quick --save "$DIR/run-$I.json" >"$DIR/run-$I.txt" 2>"$DIR/run-$I.err"
    CODE=$?
    set -e
    [ "$CODE" -eq 130 ] && exit 130
    SECS=$(( $(date +%s) - START ))
    echo
    echo "run $I/$N: exit $CODE, ${SECS} s, load average before: $LOAD"
    if [ "$CODE" -ne 0 ]; then
        FAILED=$((FAILED + 1))
        sed 's/^/  stderr: /' "$DIR/run-$I.err" | tail -3
    fi
    # The text view: the recommendation first, then one line per finding
    # ("  [severity] title (confidence: ...)").
    sed -n '1s/^/  /p' "$DIR/run-$I.txt"
    grep -E '^ *\[(critical|warning|info)\] ' "$DIR/run-$I.txt" | sed 's/^ */  /' || echo "  (no findings printed)"
    if grep -qE '^ *\[critical\] ' "$DIR/run-$I.txt"; then
        CRITICAL=$((CRITICAL + 1))
    fi
    I=$((I + 1))
done
echo
echo "doctor_healthy: $CRITICAL of $N run(s) raised a critical finding; $FAILED run(s) failed"
[ "$FAILED" -eq 0 ] || exit 1
