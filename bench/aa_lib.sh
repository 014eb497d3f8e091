# bench/aa_lib.sh: the counting shared by bench/aa.sh (which measures) and
# bench/aa_recompute.sh (which re-judges kept documents): sourced, not run.
# Both write one verdict a line per cell into files $V/CELL (CELL is
# SCENARIO-Z: Z = 0 is A/A, 5 and 20 the planted slowdowns).

# The verdict column (the last) of a CSV row, rows after the header.
verdicts() { tail -n +2 "$1" | tr -d '\r' | awk -F, '{print $NF}'; }

# report CELL: "0" is A/A (faster/slower are false), otherwise a planted
# slowdown (slower is a catch). With the count of false verdicts, the
# binomial 95% upper bound of the false rate (Clopper-Pearson, one-sided).
report() {
    file=$V/$1
    [ -f "$file" ] || return 0
    total=$(grep -c . "$file" || true)
    all=$(sort "$file" | uniq -c | awk '{printf "%s %s; ", $1, $2}')
    case $1 in
        *-0) fast=$(grep -c -x faster "$file" || true)
             slow=$(grep -c -x slower "$file" || true)
             echo "$1 (A/A): $((fast + slow)) false verdict(s) in $total ($fast faster, $slow slower; rate at most $(upper95 $((fast + slow)) "$total")% at 95%); verdicts: $all";;
        *) hit=$(grep -c -x slower "$file" || true)
           echo "$1 (+${1##*-}%): caught in $hit of $total; verdicts: $all";;
    esac
}

# upper95 K N: the one-sided 95% Clopper-Pearson upper bound of a rate
# seen K times in N, in percent (bisection on the binomial tail).
upper95() {
    awk -v k="$1" -v n="$2" 'function tail(p,   i, s, t) { # P(X <= k) for Bin(n, p)
        s = 0; t = (1 - p) ^ n
        for (i = 0; i <= k; i++) { s += t; t = t * (n - i) / (i + 1) * p / (1 - p) }
        return s }
    BEGIN { if (n == 0) { print "100"; exit } if (k >= n) { print "100"; exit }
        lo = 0; hi = 1
        for (j = 0; j < 60; j++) { mid = (lo + hi) / 2; if (tail(mid) > 0.05) lo = mid; else hi = mid }
        printf "%.1f", 100 * hi }'
}

# cells SCENARIOS [METRICS]: the report of every cell that has verdicts
# (time cells are SCENARIO-Z, the others SCENARIO-METRIC-Z).
cells() {
    for s in $1; do for m in ${2:-time}; do
        case $m in time) t="";; *) t="-$m";; esac
        for z in 0 5 20; do report "$s$t-$z"; done
    done; done
}
