# Sourced by the AMQP bench scripts (amqp_scale.sh, amqp_vs_perftest.sh):
# running a load tool while sampling it, and medians. The caller sets WORK,
# URI, SECS, BEAMLAB_AMQP_FLAGS and, to sample the broker too, BROKER_PID.

# PerfTest as scripts/install-perftest.sh installs it (the launcher execs
# the JVM, so the sampled process is the JVM itself).
PERFTEST=${BEAMLAB_PERFTEST_PREFIX:-/opt/beamlab-perftest/2.22.1}/bin/perftest

# install_perftest ROOT: installs PerfTest unless it is there already.
install_perftest() {
    "$1/scripts/install-perftest.sh" >&2
}

# measure LOG CMD...: runs CMD, copies every line it prints to LOG and, for
# each interval line, appends "T R TICKS RSS_PAGES BROKER_TICKS" to
# LOG.samples: tool time, received rate, the process's CPU ticks
# (utime+stime, fields 14 and 15 of /proc/PID/stat; comm has no spaces for
# beam.smp and java), its resident pages, and the broker's CPU ticks (0
# without BROKER_PID) when the line arrived. Only bash builtins run per line
# (no fork), so the sampling costs the machine next to nothing. escript and
# the java launcher exec in place, so $! is the VM itself.
measure() {
    local out=$1; shift
    # (BASHPID: two runs measured at once from one script need two fifos)
    local fifo="$WORK/fifo.$BASHPID"
    rm -f "$fifo"; mkfifo "$fifo"
    "$@" >"$fifo" 2>&1 &
    local pid=$! line stat statm bstat t r
    local -a f m b
    : >"$out"; : >"$out.samples"
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$out"
        if [[ $line =~ time:?\ ([0-9.]+)\ ?s,.*received:\ ([0-9.]+)\ msg/s ]]; then
            t=${BASH_REMATCH[1]} r=${BASH_REMATCH[2]}
            stat="" statm="" bstat="x - - - - - - - - - - - - 0 0"
            read -r stat <"/proc/$pid/stat" 2>/dev/null || true
            read -r statm <"/proc/$pid/statm" 2>/dev/null || true
            if [ -n "${BROKER_PID:-}" ]; then
                bstat=""; read -r bstat <"/proc/$BROKER_PID/stat" 2>/dev/null || true
            fi
            [ -n "$stat" ] && [ -n "$statm" ] && [ -n "$bstat" ] || continue
            f=($stat); m=($statm); b=($bstat)
            printf '%s %s %d %d %d\n' "$t" "$r" $((f[13] + f[14])) "${m[1]}" $((b[13] + b[14])) >>"$out.samples"
        fi
    done <"$fifo"
    wait "$pid" || true
    rm -f "$fifo"
}

# load TOOL LOG BEAMLAB ARGS...: one measured run of beamlab (the escript at
# BEAMLAB, run directly so that $! is the VM, with the emulator flags the
# ./beamlab launcher gives `amqp', see rebar.config) or PerfTest, for SECS
# seconds against URI.
load() {
    local tool=$1 out=$2 beamlab=$3; shift 3
    case $tool in
        beamlab)  ERL_FLAGS="$BEAMLAB_AMQP_FLAGS" measure "$out" escript "$beamlab" amqp -h "$URI" -z "$SECS" "$@" ;;
        perftest) measure "$out" "$PERFTEST" -h "$URI" -z "$SECS" "$@" ;;
    esac
}

# median "V1 V2 ...": the median of the numbers ("-" for none).
median() { tr ' ' '\n' <<<"$1" | { grep . || true; } | sort -g |
           awk '{v[NR] = $1} END {if (NR == 0) {printf "-"; exit}
                                  printf "%.2f", NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

# window SAMPLES [CYCLE] (WARMUP, CLK_TCK set by the caller): "<msg/s> <us CPU/msg> <window s> <CPU s>" over the
# steady-state window, or nothing if there are fewer than two lines in it.
# With CYCLE (s, > 0) the window ends after the most whole cycles it holds
# (nothing if none): rate steps then weigh the same in every tool's window.
window() {
    awk -v w="$WARMUP" -v hz="$CLK_TCK" -v c="${2:-0}" '
        { t[NR] = $1; r[NR] = $2; k[NR] = $3 }
        END {
            # (the "5 s" line of a tool can read 4.999: a tenth of a second early counts)
            for (i = 1; i <= NR && t[i] < w - 0.1; i++) ;
            s = i; if (s >= NR) exit
            e = NR
            if (c > 0) {
                n = int((t[NR] - t[s] + 0.5) / c); if (n < 1) exit
                while (e > s && t[e] - t[s] > n * c + 0.5) e--
            }
            for (i = s + 1; i <= e; i++) msgs += r[i] * (t[i] - t[i-1])
            d = t[e] - t[s]; cpu = (k[e] - k[s]) / hz
            if (msgs <= 0 || d <= 0) exit
            printf "%.0f %.2f %.1f %.2f\n", msgs / d, cpu * 1e6 / msgs, d, cpu
        }' "$1"
}
