#!/usr/bin/env bash
# StragglAR in the simulator against the paper's closed forms (section 3.2,
# Appendix B), on dgx-h100 (n = 8) and switch:256.  Prints:
#   1. dgx-h100 at 4 GiB: ideal case (delay longer than phase 0) and worst
#      case (no delay), every algorithm, speedups over ring;
#   2. switch:256 at 1 GiB and 4 GiB: the same;
#   3. the critical delay (Appendix B) per size: closed forms against the
#      crossover found by bisection on the simulated times;
#   4. how long the commands take (medians of RUNS wall times).
# Every figure comes with the command that produced it.  Definitions and
# the derivation: docs/stragglar-sim.md.
#   usage: BUILD=build scripts/bench-stragglar-sim.sh [RUNS]
# Sourced (scripts/plot-stragglar.sh, tests/e2e/stragglar_sim.sh), it only
# defines the helpers below; they use $C (the ccsynth binary) and $tmp (a
# scratch directory), which the caller sets.
ALGOS=ring,rhd,dbtree,stragglar
IDEAL_D=50ms     # longer than phase 0 for every case below (checked)
IDEAL_D_S=0.05   # the same in seconds

median() { sort -g | awk '{ v[NR] = $1 } END {
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Route alpha (s), beta (s/B) and n of a uniform switch topology, from the
# `ccsynth topo` summary: every GPU-GPU route is GPU -> switch -> GPU, so the
# route alpha is twice the link alpha and beta is 1 / link bandwidth.
topo_params() { # topo_params SPEC -> "alpha beta n"
    "$C" topo --topo "$1" | awk '
        function sec(v, u) {
            if (u == "ns") return v * 1e-9
            if (u == "us") return v * 1e-6
            if (u == "ms") return v * 1e-3
            return v
        }
        function bps(v, u) {
            if (u == "GB/s") return v * 1e9
            if (u == "MB/s") return v * 1e6
            return v
        }
        $1 == "nodes" { n = $3 }
        $1 == "bandwidth" { if ($2 != $5) bad = "bandwidths differ"; bw = bps($2, $3) }
        $1 == "alpha" { if ($2 != $5) bad = "alphas differ"; a = sec($2, $3) }
        $1 == "uniform" && $3 != "yes" { bad = "not a uniform switch" }
        $1 == "gpu" && $2 == "routes" && $4 != 2 { bad = "routes are not 2 hops" }
        END { if (bad != "") { print "topo_params: " bad > "/dev/stderr"; exit 1 }
              printf "%.12g %.12g %d\n", 2 * a, 1 / bw, n }'
}

# Closed forms (alpha-beta, s bytes, n ranks, L = log2 n), in seconds:
#   ring   T_ring = 2(n-1) a + 2(n-1)/n s b
#   rs     T_RS   = (n-2) a + (n-2)/(n-1) s b       (phase 0, ideal delay)
#   sar    T_SAR+ = (n+L-2) a + (n+L-2)/(n-1) s b   (time after arrival)
#   crit   D*     = T_RS + T_SAR+ - T_ring          (App. B before the "~")
#   paper  D*~    = (L-2) a + L/n s b               (App. B, simplified)
closed() { # closed WHAT a b n s
    awk -v w="$1" -v a="$2" -v b="$3" -v n="$4" -v s="$5" 'BEGIN {
        L = log(n) / log(2)
        ring = 2 * (n - 1) * a + 2 * (n - 1) / n * s * b
        rs = (n - 2) * a + (n - 2) / (n - 1) * s * b
        sar = (n + L - 2) * a + (n + L - 2) / (n - 1) * s * b
        v["ring"] = ring; v["rs"] = rs; v["sar"] = sar; v["worst"] = rs + sar
        v["crit"] = rs + sar - ring; v["paper"] = (L - 2) * a + L / n * s * b
        printf "%.12g\n", v[w] }'
}

bytes() { # bytes 4G -> 4294967296
    awk -v x="$1" 'BEGIN { u = substr(x, length(x)); m = 1
        if (u == "K") m = 2^10; else if (u == "M") m = 2^20; else if (u == "G") m = 2^30
        printf "%.0f\n", (x + 0) * m }'
}

# Column ALGO_time_us of a `compare --csv` output (one size) -> microseconds.
col() { # col FILE ALGO
    awk -F, -v k="$2_time_us" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i; next }
        c { print $c }' "$1"
}

# Section 1/2: ideal and worst case of every algorithm at one size.
cases() { # cases TOPO SIZE STRAGGLER
    local topo=$1 size=$2 r=$3 a b n s d
    read -r a b n < <(topo_params "$topo")
    s=$(bytes "$size")
    d=$IDEAL_D_S
    awk -v t="$topo" -v n="$n" -v z="$size" -v r="$r" -v a="$a" -v b="$b" 'BEGIN {
        printf "## %s (n = %d), %s, straggler rank %d; route alpha %g us, %g GB/s\n",
            t, n, z, r, a * 1e6, 1e-9 / b }'
    local base="$C compare --proto ideal --topo $topo --coll allreduce --algos $ALGOS"
    base="$base --sizes $size --straggler $r --csv"
    echo "\$ $base --straggler-delay $IDEAL_D"
    $base --straggler-delay "$IDEAL_D" > "$tmp/ideal.csv"
    echo "\$ $base --straggler-delay 0"
    $base --straggler-delay 0 > "$tmp/worst.csv"
    # The ideal case needs phase 0 over before the straggler arrives.
    "$C" synth --algo stragglar --topo "$topo" --straggler "$r" -q -o "$tmp/sar.ccs"
    local p0
    p0=$("$C" sim "$tmp/sar.ccs" --sizes "$size" --straggler "$r" \
         --straggler-delay "$IDEAL_D" --json |
         sed -nE 's/.*"phase_end_us": \[([0-9.e+-]+),.*/\1/p')
    awk -v p="$p0" -v d="$d" 'BEGIN { if (p * 1e-6 >= d) {
        print "ERROR: phase 0 (" p " us) not over at the delay" > "/dev/stderr"; exit 1 } }'
    printf '%-10s %14s %14s %14s %9s %14s %14s %9s\n' algo "ideal tot(us)" \
        "after D (us)" "closed (us)" "x ring" "worst (us)" "closed (us)" "x ring"
    local rid rw
    rid=$(col "$tmp/ideal.csv" ring); rw=$(col "$tmp/worst.csv" ring)
    for al in ${ALGOS//,/ }; do
        local ti tw ci cw
        ti=$(col "$tmp/ideal.csv" "$al"); tw=$(col "$tmp/worst.csv" "$al")
        case $al in
        ring) ci=$(closed ring "$a" "$b" "$n" "$s"); cw=$ci ;;
        stragglar) ci=$(closed sar "$a" "$b" "$n" "$s")
                   cw=$(closed worst "$a" "$b" "$n" "$s") ;;
        *) ci=; cw= ;;
        esac
        awk -v al="$al" -v ti="$ti" -v tw="$tw" -v d="$d" -v ci="$ci" -v cw="$cw" \
            -v rid="$rid" -v rw="$rw" 'BEGIN {
            after = ti - d * 1e6
            c1 = ci == "" ? "-" : sprintf("%.2f", ci * 1e6)
            c2 = cw == "" ? "-" : sprintf("%.2f", cw * 1e6)
            printf "%-10s %14.2f %14.2f %14s %9.4f %14.2f %14s %9.4f\n", al,
                ti, after, c1, (rid - d * 1e6) / after, tw, c2, rw / tw }'
    done
    awk -v a="$a" -v b="$b" -v n="$n" -v s="$s" \
        -v ring="$(closed ring "$a" "$b" "$n" "$s")" \
        -v sar="$(closed sar "$a" "$b" "$n" "$s")" \
        -v worst="$(closed worst "$a" "$b" "$n" "$s")" \
        -v p0="$p0" -v rs="$(closed rs "$a" "$b" "$n" "$s")" 'BEGIN {
        printf "closed-form speedup over ring: ideal %.4f, worst %.4f\n",
            ring / sar, ring / worst
        printf "phase 0 (the ideal delay): simulated %.2f us, closed form %.2f us\n",
            p0, rs * 1e6 }'
    echo
}

# Total time (us, from 0) of a schedule file at one size and delay.
simt() { # simt FILE SIZE R DELAY_S
    "$C" sim "$1" --sizes "$2" --straggler "$3" --straggler-delay "${4}s" --csv |
        tail -n 1 | cut -d, -f4
}

# Smallest delay at which StragglAR is no slower than OTHER: bisection on
# f(D) = t_stragglar(D) - t_other(D), which the simulator gives; nothing
# about its shape is assumed except one sign change in [0, HI].  0 when
# StragglAR is never slower, nan when it is still slower at HI.
crossover() { # crossover SARFILE OTHERFILE SIZE R HI_S -> seconds
    local sf=$1 of=$2 size=$3 r=$4 hi=$5 lo=0 mid
    # ahead D: exit 0 when StragglAR's total is no more than OTHER's at D.
    ahead() {
        awk -v x="$(simt "$sf" "$size" "$r" "$1")" \
            -v y="$(simt "$of" "$size" "$r" "$1")" \
            'BEGIN { exit !(x != "" && y != "" && x + 0 <= y + 0) }'
    }
    if ahead 0; then echo 0; return; fi
    if ! ahead "$hi"; then echo nan; return; fi
    # Until the bracket is below a relative 1e-6 of the crossover.
    while awk -v l="$lo" -v h="$hi" 'BEGIN { exit !(h - l > 1e-6 * h) }'; do
        mid=$(awk -v l="$lo" -v h="$hi" 'BEGIN { printf "%.15g", (l + h) / 2 }')
        if ahead "$mid"; then hi=$mid; else lo=$mid; fi
    done
    awk -v l="$lo" -v h="$hi" 'BEGIN { printf "%.12g\n", (l + h) / 2 }'
}

critical() { # critical TOPO STRAGGLER SIZE...
    local topo=$1 r=$2 a b n
    shift 2
    read -r a b n < <(topo_params "$topo")
    for al in ring rhd stragglar; do
        "$C" synth --algo "$al" --topo "$topo" --straggler "$r" -q -o "$tmp/$al.ccs"
    done
    echo "## critical delay on $topo (n = $n), straggler rank $r"
    echo "\$ $C synth --algo {ring,rhd,stragglar} --topo $topo --straggler $r -o X.ccs"
    echo "\$ $C sim X.ccs --sizes SIZE --straggler $r --straggler-delay D --csv   (bisection on D to 1e-6)"
    printf '%-6s %12s %14s %14s %14s %10s %10s %14s\n' size "T_RS (us)" "D* exact(us)" \
        "D* paper(us)" "D* sim (us)" "sim/exact" "sim/paper" "D* vs rhd(us)"
    for size in "$@"; do
        local s rs ex pp sim simr
        s=$(bytes "$size")
        rs=$(closed rs "$a" "$b" "$n" "$s"); ex=$(closed crit "$a" "$b" "$n" "$s")
        pp=$(closed paper "$a" "$b" "$n" "$s")
        hi=$(awk -v x="$rs" 'BEGIN { printf "%.12g", 2 * x + 1e-3 }')
        sim=$(crossover "$tmp/stragglar.ccs" "$tmp/ring.ccs" "$size" "$r" "$hi")
        simr=$(crossover "$tmp/stragglar.ccs" "$tmp/rhd.ccs" "$size" "$r" "$hi")
        awk -v size="$size" -v rs="$rs" -v ex="$ex" -v pp="$pp" -v sim="$sim" -v simr="$simr" 'BEGIN {
            printf "%-6s %12.3f %14.3f %14.3f %14.3f %10.6f %10.4f %14.3f\n", size, rs * 1e6,
                ex * 1e6, pp * 1e6, sim * 1e6, sim / ex, sim / pp, simr * 1e6 }'
    done
    echo
}

main() {
    set -eu
    BUILD=${BUILD:-build}
    C=${CCSYNTH:-$BUILD/bin/ccsynth}
    RUNS=${1:-5}
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT

    echo "# 1. dgx-h100, 4 GiB: ideal (delay $IDEAL_D > phase 0) and worst (no delay)"
    echo "#    'after D' = total - delay: the time from the straggler's arrival;"
    echo "#    ideal 'x ring' = ring's after-D / this one's; worst 'x ring' = totals."
    cases dgx-h100 4G 7
    echo "# 2. switch:256 (power of 2)"
    cases switch:256 1G 255
    cases switch:256 4G 255
    echo "# 3. critical delay: StragglAR's total time (from 0) equals ring's"
    critical dgx-h100 7 64M 256M 1G 4G
    critical switch:256 255 1G 4G

    echo "# 4. cost of the commands (median of $RUNS wall times, ms)"
    for spec in "synth --algo stragglar --topo switch:256 -q -o $tmp/x.ccs" \
                "sim $tmp/stragglar.ccs --sizes 4G --straggler 255 --straggler-delay 50ms" \
                "compare --proto ideal --topo switch:256 --algos $ALGOS --sizes 4G --straggler 255 --straggler-delay 50ms" \
                "compare --proto ideal --topo dgx-h100 --algos $ALGOS --sizes 4G --straggler 7 --straggler-delay 50ms"; do
        : > "$tmp/wall"
        for _ in $(seq "$RUNS"); do
            t0=$(date +%s%N)
            # shellcheck disable=SC2086
            "$C" $spec > /dev/null
            t1=$(date +%s%N)
            echo $(( (t1 - t0) / 1000 )) | awk '{ print $1 / 1000 }' >> "$tmp/wall"
        done
        printf '%10.2f  ccsynth %s\n' "$(median < "$tmp/wall")" "$spec"
    done
}

# Run only when executed, not when sourced.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
